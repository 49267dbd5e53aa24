"""Per-op Python overhead of `from tinygrad import Tensor` code: the same script runs on tinygrad.c's package
(python/compat on PYTHONPATH) and on tinygrad itself (its checkout on PYTHONPATH). It times building lazy ops only
(no realize: no kernel is compiled or run), so the figure is what one op costs the Python program: argument handling,
dtype promotion, shape checks and graph construction. Prints one line per case: microseconds per op (best of 5)."""
import sys, time
from tinygrad import Tensor
import tinygrad

def per_op(fn, n):
  best = float("inf")
  for _ in range(5):
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
  n = 2000
  print(f"overhead {which} {name} {per_op(fn, n):.2f} us/op", flush=True)
