"""peer_matmul.py — the peers of bench/bench_matmul.c: float32 matmul through numpy (OpenBLAS) and PyTorch, and conv2d
forward through PyTorch, each on 2 threads, measured like ours: warm-up, then the best of several runs.

Run with Debian's python3 (python3-numpy, python3-torch) and OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 in the
environment, OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (they pin a slower OpenBLAS kernel). Prints one line per
figure, "<name> <peer> <GFLOPS> GFLOPS", and "info <peer> <text>" lines saying which BLAS / core / threads ran.
A peer that cannot run (module missing, numpy not on OpenBLAS) prints "skip <peer> <reason>" and is left out: it is
never compared when handicapped. Arguments: seconds of timed runs per figure (default 1.0), then which peers
run, comma-separated (default "numpy,torch")."""
import os, sys, time, ctypes

BUDGET = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
SQUARE = [256, 512, 1024, 2048]
BATCH = (16, 256)  # 16 x 256x256 @ 16 x 256x256
CONV = dict(n=64, cin=32, cout=64, hw=28, k=3, pad=1)

def best_seconds(fn):
  """Warm-up (two calls), then timed calls until BUDGET seconds have passed (at least 3, at most 1000, as ours);
  the best time."""
  fn(); fn()
  best, spent, runs = float("inf"), 0.0, 0
  while runs < 3 or spent < BUDGET:
    t0 = time.perf_counter(); fn(); dt = time.perf_counter() - t0
    best, spent, runs = min(best, dt), spent + dt, runs + 1
    if runs >= 1000: break
  return best

def loaded_openblas():
  """Path of the OpenBLAS library this process has mapped (numpy's and torch's libblas.so.3), or None. Debian's
  openblas-pthread/ holds libblas.so.3 and liblapack.so.3, each a whole OpenBLAS: the BLAS one is named."""
  paths = set()
  with open("/proc/self/maps") as f:
    for line in f:
      fields = line.split()
      if len(fields) >= 6 and "openblas" in fields[-1].lower(): paths.add(fields[-1])
  for want in ("libopenblas", "libblas", ""):
    for path in sorted(paths):
      if os.path.basename(path).startswith(want): return path
  return None

def openblas_info():
  path = loaded_openblas()
  if path is None: return None
  lib = ctypes.CDLL(path)
  lib.openblas_get_corename.restype = ctypes.c_char_p
  lib.openblas_get_config.restype = ctypes.c_char_p
  return dict(path=path, core=lib.openblas_get_corename().decode(), config=lib.openblas_get_config().decode(),
              threads=lib.openblas_get_num_threads())

def matmul_flops(n): return 2.0 * n ** 3

def run_numpy():
  try: import numpy as np
  except ImportError as e: print(f"skip openblas numpy not importable: {e}"); return
  info = openblas_info()
  if info is None:
    print("skip openblas numpy does not run on OpenBLAS here (reference BLAS is a handicapped peer)"); return
  pins = " ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ)
  print(f"info openblas core={info['core']} threads={info['threads']} lib={info['path']} config=\"{info['config']}\""
        + (f" WARNING: {pins} pins a slower kernel" if pins else ""))
  rng = np.random.default_rng(0)
  for n in SQUARE:
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    t = best_seconds(lambda: np.matmul(a, b, out=c))
    print(f"matmul_{n} openblas {matmul_flops(n) / t / 1e9:.2f} GFLOPS", flush=True)
  bs, n = BATCH
  a, b = rng.random((bs, n, n), dtype=np.float32), rng.random((bs, n, n), dtype=np.float32)
  c = np.empty((bs, n, n), dtype=np.float32)
  t = best_seconds(lambda: np.matmul(a, b, out=c))
  print(f"matmul_b{bs}_{n} openblas {bs * matmul_flops(n) / t / 1e9:.2f} GFLOPS", flush=True)

def run_torch():
  try: import torch
  except ImportError as e: print(f"skip torch torch not importable: {e}"); return
  torch.set_num_threads(2)
  torch.manual_seed(0)
  info = openblas_info()
  blas = f"openblas core={info['core']}" if info else "blas=not OpenBLAS"
  print(f"info torch {torch.__version__} threads={torch.get_num_threads()} {blas} "
        f"mkldnn={torch.backends.mkldnn.is_available()}")
  with torch.no_grad():
    for n in SQUARE:
      a, b = torch.rand(n, n), torch.rand(n, n)
      c = torch.empty(n, n)
      t = best_seconds(lambda: torch.matmul(a, b, out=c))
      print(f"matmul_{n} torch {matmul_flops(n) / t / 1e9:.2f} GFLOPS", flush=True)
    bs, n = BATCH
    a, b = torch.rand(bs, n, n), torch.rand(bs, n, n)
    c = torch.empty(bs, n, n)
    t = best_seconds(lambda: torch.matmul(a, b, out=c))
    print(f"matmul_b{bs}_{n} torch {bs * matmul_flops(n) / t / 1e9:.2f} GFLOPS", flush=True)
    p = CONV
    x, w = torch.rand(p["n"], p["cin"], p["hw"], p["hw"]), torch.rand(p["cout"], p["cin"], p["k"], p["k"])
    t = best_seconds(lambda: torch.nn.functional.conv2d(x, w, None, 1, p["pad"]))
    flops = 2.0 * p["n"] * p["cout"] * p["hw"] * p["hw"] * p["cin"] * p["k"] * p["k"]
    print(f"conv2d_64x32x28x28_k3 torch {flops / t / 1e9:.2f} GFLOPS", flush=True)

which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["numpy", "torch"]
if "numpy" in which: run_numpy()
if "torch" in which: run_torch()
