"""Per-op Python overhead of `from tinygrad import Tensor` code: the same script runs on tinygrad.c's package
(python/compat on PYTHONPATH) and on tinygrad itself (its checkout on PYTHONPATH). It times building lazy ops only
(no realize: no kernel is compiled or run), so the figure is what one op costs the Python program: argument handling,
dtype promotion, shape checks and graph construction. Prints one line per case: microseconds per op, the best of 30
timed chunks of about 2 ms each (both sides the same length of chunk, so a shared machine's preemptions, which
hit long chunks more often, do not favour the faster side)."""
import sys, time
from tinygrad import Tensor
import tinygrad

def per_op(fn, chunk_s=0.002, chunks=30):
  n = 10
  while True:  # calibrate: n ops take about chunk_s (a multiple of 10: chain5 does 5 ops per iteration)
    st = time.perf_counter()
    fn(n)
    t = time.perf_counter() - st
    if t >= chunk_s / 2 or n >= 100000: break
    n *= 2
  n = max(10, int(n * chunk_s / max(t, 1e-9)) // 10 * 10)
  best = float("inf")
  for _ in range(chunks):
    st = time.perf_counter()
    fn(n)
    best = min(best, time.perf_counter() - st)
  return best / n * 1e6

a = Tensor.ones(16, 16).contiguous().realize()
b = Tensor.ones(16, 16).contiguous().realize()
def add_scalar(n):
  for _ in range(n): a + 1.0
def add_tensor(n):
  for _ in range(n): a + b
def unary(n):
  for _ in range(n): a.exp()
def reduce(n):
  for _ in range(n): a.sum(axis=1)
def reshape(n):
  for _ in range(n): a.reshape(256)
def chain(n):  # 5 ops per iteration
  for _ in range(n // 5): ((a * 2 + b).relu() - 1).sum()
def getitem(n):
  for _ in range(n): a[1:3, 2]
cases = [("add_scalar", add_scalar), ("add_tensor", add_tensor), ("exp", unary), ("sum_axis", reduce), ("reshape", reshape),
         ("chain5", chain), ("getitem", getitem)]
which = "tinygrad.c" if "tinygrad_c" in repr(tinygrad.Tensor) or hasattr(tinygrad, "tinygrad_c") else "tinygrad"
for name, fn in cases:
  print(f"overhead {which} {name} {per_op(fn):.2f} us/op", flush=True)
