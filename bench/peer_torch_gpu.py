"""peer_torch_gpu.py — the PyTorch (CUDA) side of bench/bench_gpu.c: the GPU issue's figures on the same shapes, timed
with CUDA events (warm-up first, median of the timed runs, inputs random, several input sets rotated where one would
fit in the 60 MB L2). Run on the GPU machine with its python3 (torch 2.11 + CUDA). Prints "<name> <value> <unit>".

  copy_d2d_2^28        device-to-device copy of 2^28 float32 (the bandwidth roofline), GB/s counting read + write
  relu_fma_2^28        relu(a*b+c) over 2^28 float32, GB/s (3 reads + 1 write)
  sum_2^28             sum of 2^28 float32, GB/s
  softmax_4096x4096    softmax over the last axis, GB/s (1 read + 1 write)
  matmul_<dt>_<N>      N x N x N matmul, TFLOPS (cuBLAS): fp16, bf16 at 4096 and 8192, fp32 at 4096
  conv2d_64x32x28x28_k3  64 filters 3x3, padding 1 (cuDNN), GFLOPS
  train_cnn            beautiful_mnist's CNN training step, batch 512, Adam (eager), steps/s
The conv figures run with torch's default, cuDNN on TF32 tensor cores (torch.backends.cudnn.allow_tf32 = True), and
again with _fp32 appended to the name with TF32 off (IEEE fp32, as tinygrad's default ALLOW_TF32=0)."""
import sys, statistics
import torch
import torch.nn as nn

dev = "cuda"
torch.manual_seed(0)
only = set(sys.argv[1:])

def want(name): return not only or name in only

def timed(fn, warm=3, runs=20):
  for _ in range(warm): fn()
  torch.cuda.synchronize()
  times = []
  for _ in range(runs):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); e.synchronize()
    times.append(s.elapsed_time(e) / 1e3)
  return statistics.median(times)

def emit(name, value, unit): print(f"{name} {value:.4g} {unit}", flush=True)

N = 1 << 28
if want("copy_d2d_2^28"):
  a = torch.rand(N, device=dev); b = torch.empty_like(a)
  emit("copy_d2d_2^28", 2 * 4 * N / timed(lambda: b.copy_(a)) / 1e9, "GB/s")
  del a, b
if want("relu_fma_2^28"):
  a, b, c = (torch.rand(N, device=dev) - 0.5 for _ in range(3))
  emit("relu_fma_2^28", 4 * 4 * N / timed(lambda: torch.relu(a * b + c)) / 1e9, "GB/s")
  del a, b, c
if want("sum_2^28"):
  a = torch.rand(N, device=dev)
  emit("sum_2^28", 4 * N / timed(lambda: a.sum()) / 1e9, "GB/s")
  del a
if want("softmax_4096x4096"):
  xs = [torch.randn(4096, 4096, device=dev) for _ in range(4)]
  i = [0]
  def sm():
    i[0] = (i[0] + 1) % 4
    return xs[i[0]].softmax(-1)
  emit("softmax_4096x4096", 2 * 4 * 4096 * 4096 / timed(sm) / 1e9, "GB/s")
  del xs
torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 (tinygrad's fp32 matmul does not use TF32)
for dt, n in (("fp16", 4096), ("fp16", 8192), ("bf16", 4096), ("bf16", 8192), ("fp32", 4096)):
  name = f"matmul_{dt}_{n}"
  if not want(name): continue
  tdt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dt]
  a, b = (torch.randn(n, n, device=dev, dtype=tdt) for _ in range(2))
  emit(name, 2 * n ** 3 / timed(lambda: a @ b, warm=5, runs=20) / 1e12, "TFLOPS")
  del a, b
def with_tf32(on, fn):
  old = torch.backends.cudnn.allow_tf32
  torch.backends.cudnn.allow_tf32 = on
  try: return fn()
  finally: torch.backends.cudnn.allow_tf32 = old
if want("conv2d_64x32x28x28_k3"):
  x = torch.randn(64, 32, 28, 28, device=dev); w = torch.randn(64, 32, 3, 3, device=dev)
  flops = 2 * 64 * 64 * 28 * 28 * 32 * 9
  for suffix, tf32 in (("", True), ("_fp32", False)):
    t = with_tf32(tf32, lambda: timed(lambda: torch.nn.functional.conv2d(x, w, padding=1)))
    emit("conv2d_64x32x28x28_k3" + suffix, flops / t / 1e9, "GFLOPS")
if want("train_cnn"):
  model = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32),
                        nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
                        nn.BatchNorm2d(64), nn.MaxPool2d(2), nn.Flatten(1), nn.Linear(576, 10)).to(dev)
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)
  x_all = torch.randint(0, 256, (4096, 1, 28, 28), dtype=torch.uint8, device=dev)
  y_all = torch.randint(0, 10, (4096,), device=dev)
  def step():
    idx = torch.randint(0, 4096, (512,), device=dev)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x_all[idx].float()), y_all[idx])
    loss.backward(); opt.step()
    return loss
  emit("train_cnn", 1 / timed(step, warm=5, runs=50), "steps/s")
  emit("train_cnn_fp32", 1 / with_tf32(False, lambda: timed(step, warm=5, runs=50)), "steps/s")
