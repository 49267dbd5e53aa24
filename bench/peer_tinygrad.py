# peer_tinygrad.py — the tinygrad side of bench/bench_rewrite.c: the same graphs, the same measurements, the same
# output lines ("<name> <value> <unit>"). Run with tinygrad importable (PYTHONPATH=<checkout>); bench/run.sh does that.
import gc, os, sys, time

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, Ops, AxisType, graph_rewrite
from tinygrad.uop.symbolic import sym
from tinygrad.uop import divandmod

N_RANGES, TERMS, GROUP, INTERN_STEPS = 8, 14000, 16, 200000
RUNS = int(os.environ.get("BENCH_PEER_RUNS", "2"))  # tinygrad needs ~15 s per rewrite run here

def w(v): return UOp.const(v, dtypes.weakint)

def build_index_graph():
  ends = [16, 32, 8, 64, 4, 128, 3, 256]
  r = [UOp.range(w(ends[k]), k, AxisType.LOOP) for k in range(N_RANGES)]
  sums, acc = [], None
  for t in range(TERMS):
    i, j = t % N_RANGES, (t * 3 + 1) % N_RANGES
    if j == i: j = (j + 1) % N_RANGES
    c1, c2, c3, c4, c5 = t % 7 + 1, (t * 5) % 11 + 1, t % 13, t % 6 + 2, t % 9 + 2
    idx = r[i].alu(Ops.MUL, w(c1)).alu(Ops.ADD, r[j].alu(Ops.MUL, w(c2))).alu(Ops.ADD, w(c3))
    term = idx.alu(Ops.FLOORDIV, w(c4)).alu(Ops.FLOORMOD, w(c5))
    acc = term if acc is None else acc.alu(Ops.ADD, term)
    if t % GROUP == GROUP - 1: sums.append(acc); acc = None
  return UOp.sink(*sums)

def bench_rewrite():
  best, nodes_in, nodes_out = float("inf"), 0, 0
  for _ in range(RUNS):
    # cold like the C side: no cached div/mod folds or bounds from an earlier run
    divandmod.fold_divmod_general.cache_clear()
    gc.collect()
    g = build_index_graph()
    nodes_in = len(g.toposort())
    t0 = time.perf_counter()
    out = graph_rewrite(g, sym, name="bench")
    best = min(best, time.perf_counter() - t0)
    nodes_out = len(out.toposort())
    del g, out
  print(f"rewrite_sym {nodes_in / best:.0f} nodes/s")
  print(f"rewrite_sym_nodes_in {nodes_in}")
  print(f"rewrite_sym_nodes_out {nodes_out}")

def bench_intern():
  best_fresh, best_hit = float("inf"), float("inf")
  for _ in range(RUNS):
    gc.collect()
    x = UOp.variable("x", 0, 1000)
    keep = []
    t0 = time.perf_counter()
    for k in range(INTERN_STEPS):
      c = UOp(Ops.CONST, dtypes.weakint, (), k + 1000000)
      keep.append(UOp(Ops.ADD, dtypes.weakint, (x, c)))
    t1 = time.perf_counter()
    for k in range(INTERN_STEPS):
      c = UOp(Ops.CONST, dtypes.weakint, (), k + 1000000)
      UOp(Ops.ADD, dtypes.weakint, (x, c))
    t2 = time.perf_counter()
    del keep
    best_fresh, best_hit = min(best_fresh, t1 - t0), min(best_hit, t2 - t1)
  print(f"intern_fresh {2 * INTERN_STEPS / best_fresh:.0f} calls/s")
  print(f"intern_hit {2 * INTERN_STEPS / best_hit:.0f} calls/s")

if __name__ == "__main__":
  sys.setrecursionlimit(100000)
  bench_rewrite()
  bench_intern()
