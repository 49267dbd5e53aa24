#!/usr/bin/env python3
"""gen_constalu_cases.py — writes tests/constalu_cases.h: expected results of constant folding, computed by tinygrad.

Tables (all consumed by tests/test_constalu.c, which needs no Python):
  constalu_cases  dt_const_exec_alu(op, dtype, srcs): tinygrad's exec_alu (python_alu + truncate) run on the operands.
  dtconst_cases   dt_const(dtype, v): tinygrad's dtype.const(v) followed by truncate[dtype].
  bitcast_cases   dt_const_bitcast(v, from, to): tinygrad's dtype.bitcast.
  half_cases / bf16_cases / fp8_cases / fp8_decode_cases: float_to_fp16 / float_to_bf16 / float_to_fp8 / fp8_to_float.

Where tinygrad.c deliberately differs from running exec_alu, this script computes the expectation itself, marked
"deviation" below:
  - python raises (TypeError, ValueError, OverflowError, KeyError...) -> CK_NONE ("cannot fold");
  - division or modulo by zero (CDIV CMOD FLOORDIV FLOORMOD; tinygrad returns 0) -> CK_NONE;
  - FDIV (not in python_alu) -> IEEE division of the operands, truncated to the dtype; CK_NONE for non-floats;
  - THREEFRY (not in python_alu) -> tinygrad's threefry2x32 decomposition evaluated node by node with exec_alu and
    truncation (as the PYTHON backend runs it);
  - weakint results that are not ints or do not fit in int64 -> CK_NONE (a Const holds int64);
  - an Invalid operand of a unary op or MULACC -> Invalid (Python would raise); an Invalid WHERE condition -> CK_NONE;
  - operands are plain Python floats, so comparisons are IEEE (nan != nan), unlike tinygrad's ConstFloat.

usage: python3 tools/gen_constalu_cases.py /path/to/tinygrad > tests/constalu_cases.h
"""
import math, os, random, struct, sys, ctypes

for knob in ("SUM_DTYPE", "DEFAULT_FLOAT", "DEFAULT_INT"): os.environ.pop(knob, None)
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/work/tgref")
from tinygrad.dtype import dtypes, truncate, Invalid, bitcast, float_to_fp16, float_to_bf16, float_to_fp8, fp8_to_float  # noqa: E402
from tinygrad.uop.ops import Ops, UOp, GroupOp, exec_alu  # noqa: E402
from tinygrad.codegen.decomp.op import threefry2x32  # noqa: E402

NAMES = ["weakint", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "weakfloat",
         "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz", "float16", "bfloat16", "float32", "float64"]
DT = {n: getattr(dtypes, n) for n in NAMES}
NAME_OF = {v: k for k, v in DT.items()}
def cdt(dt): return "TG_" + NAME_OF[dt].upper()

class NoneResult: pass
NONE = NoneResult()

# ---------------------------------------------------------------------------------------------------------- emission
def lit_int(v:int) -> str:
  assert -2**63 <= v < 2**63, v
  return "INT64_MIN" if v == -2**63 else f"{v}LL"
def lit_float(x:float) -> str:
  if math.isnan(x): return "NAN"
  if math.isinf(x): return "INFINITY" if x > 0 else "-INFINITY"
  return float.hex(x)
def cval(v, dt) -> str:
  """a value of dtype dt as a CaseVal initializer"""
  if v is NONE: return "CNONE"
  if v is Invalid: return "CINV"
  if isinstance(v, bool): return f"CB({int(v)})"
  if dt is not None and dtypes.is_float(dt): return f"CF({lit_float(float(v))})"
  if isinstance(v, float): return f"CF({lit_float(v)})"
  if dt is dtypes.uint64 and v >= 2**63: v -= 2**64  # uint64 is stored as its bit pattern
  return f"CI({lit_int(v)})"

# ------------------------------------------------------------------------------------------------------ on-grid values
def on_grid(dt, v):
  """what a CONST of dtype dt holds for value v (dtype.const + truncate)"""
  c = dt.const(v)
  if dt in truncate and not dtypes.is_float(dt): c = truncate[dt](c)
  return float(c) if dtypes.is_float(dt) else c

INT_VALUES = {
  "weakint": [0, 1, -1, 2, 3, -7, 100, 2**31, 2**40, 2**62, 2**63 - 1, -2**63],
  "bool": [False, True],
}
for n in ("int8", "int16", "int32", "int64"):
  bits = DT[n].bitsize
  INT_VALUES[n] = [0, 1, -1, 2, 3, -7, 100, 2**(bits-1) - 1, -2**(bits-1), 2**(bits-2)]
for n in ("uint8", "uint16", "uint32", "uint64"):
  bits = DT[n].bitsize
  INT_VALUES[n] = [0, 1, 2, 3, 7, 100, 2**bits - 1, 2**(bits-1), 2**(bits-1) - 1]
FLOAT_BASE = [0.0, -0.0, 1.0, 1.5, -2.5, 3.0, 0.1, 1/3, 7.0, -7.0, 100.0, 1e-3, math.inf, -math.inf, math.nan]
FLOAT_EXTRA = {
  "float16": [65504.0, 2049.0, 6e-8, 1024.5, 0.5],
  "bfloat16": [3.0e38, 257.0, 1e-39, 0.5],
  "float32": [3.4e38, 1e-40, 16777217.0, 1e30, 0.5],
  "float64": [1e308, 5e-324, 2.0**53 + 2, 1e300, 0.5],
  "weakfloat": [1e308, 5e-324, 2.0**53 + 2, 1e300, 0.5],
  "fp8e4m3": [448.0, 0.015625, 0.5], "fp8e5m2": [57344.0, 0.5, 1.5e-5],
  "fp8e4m3fnuz": [240.0, 0.5, 0.0078125], "fp8e5m2fnuz": [57344.0, 0.5, 1.5e-5],
}
def values(n):
  dt = DT[n]
  raw = INT_VALUES[n] if n in INT_VALUES else FLOAT_BASE + FLOAT_EXTRA.get(n, [])
  out = []
  for v in raw:
    g = on_grid(dt, v)
    if not any(type(g) is type(o) and (g == o or (isinstance(g, float) and math.isnan(g) and math.isnan(o)))
               and struct.pack("<d", float(g)) == struct.pack("<d", float(o)) for o in out): out.append(g)
  return out

# --------------------------------------------------------------------------------------------------- the expectation
def eval_graph(root):
  """run a UOp graph of CONST/CAST/ALU nodes as tinygrad's PYTHON backend does: exec_alu with truncation"""
  vals = {}
  for u in root.toposort():
    if u.op is Ops.CONST: vals[u] = truncate.get(u.dtype, lambda v: v)(u.dtype.const(u.arg))
    elif u.op is Ops.CAST: vals[u] = truncate.get(u.dtype, lambda v: v)(u.dtype.const(vals[u.src[0]]))
    elif u.op in GroupOp.ALU: vals[u] = exec_alu(u.op, u.dtype, [vals[s] for s in u.src])
    else: raise RuntimeError(f"cannot evaluate {u.op}")
  return vals[root]

def ieee_div(a:float, b:float) -> float:
  if b != 0 or math.isnan(b): return a / b if not math.isnan(b) else math.nan
  if a == 0 or math.isnan(a): return math.nan
  return math.copysign(math.inf, a) * math.copysign(1.0, b)

BIG_EXP = 4096
def expect(op, dt, srcs):
  comparison = op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
  if op is Ops.WHERE:
    if srcs[0] is Invalid: return NONE                                        # deviation
    pick = srcs[1] if srcs[0] else srcs[2]
    return pick if pick is Invalid else on_grid(dt, pick)
  if any(s is Invalid for s in srcs): return Invalid                           # binary: tinygrad; others: deviation
  if op in (Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD) and srcs[1] == 0: return NONE  # deviation
  if op is Ops.FDIV:                                                           # deviation
    return on_grid(dt, ieee_div(srcs[0], srcs[1])) if dtypes.is_float(dt) else NONE
  if op is Ops.THREEFRY:                                                       # deviation
    if dt is not dtypes.uint64: return NONE
    return eval_graph(threefry2x32(UOp.const(srcs[0], dt), UOp.const(srcs[1], dt)))
  if op in (Ops.SHL, Ops.POW, Ops.EXP2) and not dtypes.is_float(dt):
    # Python would build an astronomically large int; the result mod 2^width is what truncation keeps
    x, y = (1, srcs[0]) if op is Ops.EXP2 else (srcs[0], srcs[1])
    if y > BIG_EXP:
      if dt is dtypes.weakint:
        if op is not Ops.POW: return 0 if x == 0 else NONE
        return x if x in (0, 1) else (-1) ** (y % 2) if x == -1 else NONE
      return truncate[dt](0 if op is not Ops.POW else pow(x, y, 2**64))
  try:
    r = exec_alu(op, dtypes.bool if comparison else dt, list(srcs))
  except Exception:
    return NONE                                                                # python raised: cannot fold
  if comparison: return bool(r)
  if dt is dtypes.weakint and (not isinstance(r, int) or not -2**63 <= r < 2**63): return NONE  # deviation
  if dtypes.is_float(dt): return float(dt.const(r))                            # nan canonical, ints -> floats
  return r

# ---------------------------------------------------------------------------------------------------------- the cases
rng = random.Random(1234)
UNARY = [Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC]
BINARY = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL,
          Ops.SHR, Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.FDIV, Ops.POW, Ops.THREEFRY]
TERNARY = [Ops.WHERE, Ops.MULACC]
PER_OP_DTYPE = 4

cases = []
def add(op, dt, srcs): cases.append((op, dt, tuple(srcs), expect(op, dt, srcs)))

for n in NAMES:
  dt, vals = DT[n], values(n)
  for op in UNARY:
    for v in (vals if len(vals) <= 6 else rng.sample(vals, 6)): add(op, dt, [v])
  for op in BINARY + TERNARY:
    k = 3 if op in TERNARY else 2
    combos = set()
    while len(combos) < min(PER_OP_DTYPE, len(vals) ** k):
      combos.add(tuple(rng.randrange(len(vals)) for _ in range(k)))
    for c in sorted(combos):
      srcs = [vals[i] for i in c]
      if op is Ops.WHERE: srcs[0] = bool(rng.randrange(2))
      add(op, dt, srcs)

# hand-picked edges: wraparound, signed zeros, nan, rounding of the narrow floats, shifts, division corners
I, U, B = dtypes, dtypes, dtypes
edges = [
  (Ops.ADD, I.int8, [100, 100]), (Ops.ADD, I.int8, [127, 1]), (Ops.SUB, I.uint8, [0, 1]), (Ops.MUL, I.int32, [65536, 65536]),
  (Ops.MUL, I.int32, [46341, 46341]), (Ops.NEG, I.int64, [-2**63]), (Ops.NEG, I.uint32, [1]), (Ops.NEG, I.uint64, [1]),
  (Ops.ADD, I.uint64, [2**64 - 1, 2]), (Ops.MUL, I.uint64, [2**64 - 1, 2**64 - 1]), (Ops.MUL, I.int64, [-2**63, -1]),
  (Ops.CDIV, I.int64, [-2**63, -1]), (Ops.FLOORDIV, I.int64, [-2**63, -1]), (Ops.CMOD, I.int64, [-2**63, -1]),
  (Ops.CDIV, I.int32, [-7, 2]), (Ops.FLOORDIV, I.int32, [-7, 2]), (Ops.CMOD, I.int32, [-7, 2]),
  (Ops.FLOORMOD, I.int32, [-7, 2]), (Ops.CDIV, I.int32, [7, -2]), (Ops.FLOORDIV, I.int32, [7, -2]),
  (Ops.CMOD, I.int32, [7, -2]), (Ops.FLOORMOD, I.int32, [7, -2]), (Ops.FLOORMOD, I.weakint, [-7, 3]),
  (Ops.CDIV, I.int32, [5, 0]), (Ops.FLOORMOD, I.uint8, [5, 0]), (Ops.FLOORDIV, I.float32, [5.0, 0.0]),
  (Ops.CDIV, I.uint64, [2**64 - 1, 2]), (Ops.FLOORMOD, I.uint64, [2**64 - 1, 10]),
  (Ops.SHL, I.int32, [1, 31]), (Ops.SHL, I.int32, [1, 32]), (Ops.SHL, I.int32, [3, 200]), (Ops.SHL, I.int8, [-1, 7]),
  (Ops.SHL, I.uint64, [1, 63]), (Ops.SHL, I.uint64, [1, 64]), (Ops.SHL, I.int32, [1, -1]), (Ops.SHL, I.weakint, [1, 62]),
  (Ops.SHL, I.weakint, [1, 63]), (Ops.SHL, I.weakint, [-1, 63]), (Ops.SHL, I.weakint, [3, 70]), (Ops.SHL, I.weakint, [0, 500]),
  (Ops.SHR, I.int32, [-1, 5]), (Ops.SHR, I.int32, [-8, 1]), (Ops.SHR, I.int64, [-2**63, 63]), (Ops.SHR, I.int64, [-5, 200]),
  (Ops.SHR, I.uint64, [2**64 - 1, 63]), (Ops.SHR, I.uint64, [2**64 - 1, 64]), (Ops.SHR, I.int32, [8, -1]),
  (Ops.POW, I.int32, [3, 40]), (Ops.POW, I.int32, [2, -1]), (Ops.POW, I.int32, [0, 0]), (Ops.POW, I.weakint, [3, 39]),
  (Ops.POW, I.weakint, [3, 40]), (Ops.POW, I.weakint, [-2, 63]), (Ops.POW, I.weakint, [-1, 2**40]), (Ops.POW, I.uint64, [3, 2**40]),
  (Ops.POW, I.int64, [7, 2**62]), (Ops.EXP2, I.int32, [31]), (Ops.EXP2, I.int32, [40]), (Ops.EXP2, I.uint8, [-1 % 256]),
  (Ops.EXP2, I.weakint, [62]), (Ops.EXP2, I.weakint, [63]), (Ops.EXP2, I.int32, [-3]),
  (Ops.MAX, I.uint64, [2**63, 1]), (Ops.CMPLT, I.uint64, [2**63, 1]), (Ops.CMPLT, I.uint64, [1, 2**64 - 1]),
  (Ops.CMPLT, I.int64, [-1, 1]), (Ops.CMPNE, I.float32, [math.nan, math.nan]), (Ops.CMPEQ, I.float32, [math.nan, math.nan]),
  (Ops.CMPEQ, I.float32, [0.0, -0.0]), (Ops.CMPLT, I.float32, [-0.0, 0.0]), (Ops.CMPLT, I.float64, [1.0, math.nan]),
  (Ops.CMPLT, I.bool, [False, True]), (Ops.CMPNE, I.bool, [True, True]),
  (Ops.ADD, I.float32, [-0.0, -0.0]), (Ops.ADD, I.float32, [-0.0, 0.0]), (Ops.MUL, I.float32, [-1.0, 0.0]),
  (Ops.MAX, I.float32, [0.0, -0.0]), (Ops.MAX, I.float32, [-0.0, 0.0]), (Ops.MAX, I.float32, [math.nan, 1.0]),
  (Ops.MAX, I.float32, [1.0, math.nan]), (Ops.TRUNC, I.float32, [-0.5]), (Ops.TRUNC, I.float32, [-0.0]),
  (Ops.TRUNC, I.float64, [-2.5]), (Ops.TRUNC, I.float64, [1e300]), (Ops.NEG, I.float32, [0.0]), (Ops.NEG, I.float32, [math.nan]),
  (Ops.SQRT, I.float32, [-0.0]), (Ops.SQRT, I.float32, [-1.0]), (Ops.LOG2, I.float32, [-0.0]), (Ops.LOG2, I.float64, [8.0]),
  (Ops.RECIPROCAL, I.float32, [-0.0]), (Ops.RECIPROCAL, I.float16, [3.0]), (Ops.EXP2, I.float64, [1024.0]),
  (Ops.EXP2, I.float64, [-1075.0]), (Ops.EXP2, I.float32, [128.0]), (Ops.EXP2, I.float16, [15.5]), (Ops.EXP2, I.float16, [16.0]),
  (Ops.SIN, I.float32, [math.inf]), (Ops.SIN, I.float64, [1e22]),
  (Ops.ADD, I.float16, [2048.0, 1.0]), (Ops.ADD, I.float16, [2048.0, 3.0]), (Ops.ADD, I.float16, [65504.0, 16.0]),
  (Ops.ADD, I.float16, [65504.0, 15.0]), (Ops.MUL, I.float16, [300.0, 300.0]), (Ops.MUL, I.float16, [2.0**-14, 2.0**-11]),
  (Ops.MUL, I.float16, [2.0**-14, 2.0**-10 * 1.5]), (Ops.ADD, I.bfloat16, [256.0, 1.0]), (Ops.ADD, I.bfloat16, [256.0, 3.0]),
  (Ops.MUL, I.bfloat16, [3.0e38, 2.0]), (Ops.ADD, I.bfloat16, [1.0, 2.0**-8]), (Ops.ADD, I.bfloat16, [1.0, 2.0**-8 + 2.0**-20]),
  (Ops.ADD, I.float32, [16777216.0, 1.0]), (Ops.MUL, I.float32, [3.4e38, 10.0]), (Ops.MULACC, I.float32, [0.1, 3.0, 1.0]),
  (Ops.MULACC, I.float16, [1000.0, 1000.0, -1000.0]), (Ops.ADD, I.fp8e4m3, [448.0, 32.0]), (Ops.MUL, I.fp8e5m2, [57344.0, 2.0]),
  (Ops.ADD, I.fp8e4m3fnuz, [240.0, 16.0]), (Ops.SUB, I.fp8e5m2fnuz, [0.0, 0.0]), (Ops.NEG, I.fp8e4m3fnuz, [0.0]),
  (Ops.FDIV, I.float32, [1.0, 0.0]), (Ops.FDIV, I.float32, [-1.0, 0.0]), (Ops.FDIV, I.float32, [1.0, -0.0]),
  (Ops.FDIV, I.float32, [0.0, 0.0]), (Ops.FDIV, I.float32, [1.0, 3.0]), (Ops.FDIV, I.int32, [6, 3]),
  (Ops.POW, I.float64, [0.0, -1.0]), (Ops.POW, I.float64, [-0.0, -3.0]), (Ops.POW, I.float64, [-8.0, 1.0 / 3]),
  (Ops.POW, I.float64, [10.0, 400.0]), (Ops.POW, I.float64, [-2.0, 3.0]), (Ops.POW, I.float64, [math.nan, 0.0]),
  (Ops.POW, I.float64, [1.0, math.nan]), (Ops.POW, I.float64, [-1.0, math.inf]), (Ops.POW, I.float64, [-math.inf, 3.0]),
  (Ops.POW, I.float64, [-math.inf, -3.0]), (Ops.POW, I.float32, [2.0, 200.0]), (Ops.POW, I.weakfloat, [2.0, 0.5]),
  (Ops.CDIV, I.float32, [-7.5, 2.0]), (Ops.CMOD, I.float32, [-7.5, 2.0]), (Ops.FLOORDIV, I.float32, [-7.5, 2.0]),
  (Ops.FLOORMOD, I.float32, [-7.5, 2.0]), (Ops.CDIV, I.float64, [-0.5, 2.0]), (Ops.FLOORDIV, I.float64, [5.0, math.inf]),
  (Ops.FLOORDIV, I.float64, [-5.0, math.inf]), (Ops.FLOORDIV, I.float64, [math.inf, 2.0]), (Ops.FLOORMOD, I.float64, [0.1, 0.01]),
  (Ops.AND, I.float32, [1.0, 1.0]), (Ops.SHL, I.float32, [1.0, 1.0]),
  (Ops.ADD, I.bool, [True, True]), (Ops.SUB, I.bool, [False, True]), (Ops.MUL, I.bool, [True, False]),
  (Ops.SHL, I.bool, [True, True]), (Ops.SHR, I.bool, [True, True]), (Ops.CDIV, I.bool, [True, False]),
  (Ops.LOG2, I.bool, [False]), (Ops.LOG2, I.bool, [True]), (Ops.RECIPROCAL, I.bool, [False]), (Ops.SQRT, I.bool, [False]),
  (Ops.SIN, I.bool, [True]), (Ops.EXP2, I.bool, [False]), (Ops.NEG, I.bool, [True]), (Ops.POW, I.bool, [False, False]),
  (Ops.MAX, I.bool, [False, True]), (Ops.XOR, I.bool, [True, True]), (Ops.FDIV, I.bool, [True, True]),
  (Ops.LOG2, I.int32, [8]), (Ops.SQRT, I.int32, [9]), (Ops.RECIPROCAL, I.int32, [1]), (Ops.SIN, I.weakint, [0]),
  (Ops.TRUNC, I.int32, [-5]), (Ops.ADD, I.weakint, [2**63 - 1, 1]), (Ops.MUL, I.weakint, [2**62, 2]),
  (Ops.MUL, I.weakint, [2**62, -2]), (Ops.SUB, I.weakint, [-2**63, 1]), (Ops.NEG, I.weakint, [-2**63]),
  (Ops.MULACC, I.weakint, [2**31, 2**31, -1]), (Ops.MULACC, I.int8, [16, 16, 1]), (Ops.MULACC, I.uint64, [2**63, 2, 5]),
  (Ops.XOR, I.int8, [-1, 127]), (Ops.AND, I.uint64, [2**64 - 1, 2**63]), (Ops.OR, I.int16, [-32768, 1]),
  (Ops.THREEFRY, I.uint64, [0, 0]), (Ops.THREEFRY, I.uint64, [1, 2]), (Ops.THREEFRY, I.uint64, [2**64 - 1, 2**64 - 1]),
  (Ops.THREEFRY, I.uint64, [0x123456789abcdef0, 0xfedcba9876543210]), (Ops.THREEFRY, I.uint64, [5, 2**63]),
  (Ops.THREEFRY, I.uint32, [1, 2]),
  (Ops.ADD, I.int32, [Invalid, 1]), (Ops.CMPLT, I.int32, [1, Invalid]), (Ops.SHL, I.weakint, [Invalid, Invalid]),
  (Ops.NEG, I.weakint, [Invalid]), (Ops.MULACC, I.int32, [Invalid, 1, 2]),
  (Ops.WHERE, I.weakint, [True, 5, Invalid]), (Ops.WHERE, I.weakint, [False, 5, Invalid]),
  (Ops.WHERE, I.weakint, [True, Invalid, 5]), (Ops.WHERE, I.int32, [Invalid, 1, 2]), (Ops.WHERE, I.float32, [False, 1.0, -0.0]),
  (Ops.WHERE, I.uint64, [True, 2**64 - 1, 0]), (Ops.WHERE, I.bool, [True, False, True]),
]
for op, dt, srcs in edges: add(op, dt, [s if s is Invalid else on_grid(dt, s) for s in srcs])

# ------------------------------------------------------------------------------------------------------- dt_const
DTCONST_INPUTS = [0, 1, -1, 200, -200, 70000, -70000, 2**31, 2**40 + 3, 2**63 - 1, -2**63, 0.0, -0.0, 0.5, -0.5, 1.5,
                  2.5, -2.7, 0.1, 1/3, 1e10, -1e20, 1e30, 3.4e38, 3.4028235677973366e38, 1e39, 1e300, 65504.0, 65519.9,
                  65520.0, 2049.0, 2051.0, 5.960464477539063e-08, 2.0**-25, 2.0**-25 * 1.0001, 1e-8, 1e-40, 1e-310,
                  448.0, 464.0, 465.0, 240.0, 57344.0, 61440.0, 0.0078125, 2.0**-10, 2.0**-9 * 1.4, 2.0**63, -2.0**63,
                  2.0**64, 1.5 * 2.0**64, 2.0**70 + 2.0**20, -(2.0**70 + 2.0**20), math.inf, -math.inf, math.nan, True, False]
def dtconst_expect(dt, v):
  try:
    c = dt.const(v)
    if not dtypes.is_float(dt) and dt in truncate: c = truncate[dt](c)
  except Exception:
    return NONE
  if dt is dtypes.weakint and not -2**63 <= c < 2**63: return NONE
  return c
dtconst_cases = [(dt, v, dtconst_expect(dt, v)) for dt in DT.values() for v in DTCONST_INPUTS]

# ------------------------------------------------------------------------------------------------------- bitcast
BITCAST_DTYPES = [d for d in DT.values() if d not in dtypes.weaks]
bitcast_cases = []
for a in BITCAST_DTYPES:
  for b in BITCAST_DTYPES:
    if a.itemsize != b.itemsize or a is b: continue
    vals = values(NAME_OF[a])
    for v in rng.sample(vals, min(4, len(vals))):
      exp = b.const(bitcast(truncate[a](v), a, b))
      bitcast_cases.append((a, b, v, exp))

# ------------------------------------------------------------------------------------------------------- conversions
F32_INPUTS = [0.0, -0.0, 1.0, 1.5, -2.5, 0.1, 1/3, 65504.0, 65519.99, 65520.0, 1e5, 2049.0, 2051.0, 1025.5, 1e-7,
              5.960464477539063e-08, 2.0**-25, 3e-8, 6.1e-5, 2.0**-14, 257.0, 259.0, 3.0e38, 3.4028235e38, 1e-39,
              1e-45, math.inf, -math.inf, -1e-3, 12345.678, -0.3]
f32 = lambda x: ctypes.c_float(x).value
half_cases = [(f32(x), struct.unpack("<H", struct.pack("<e", float_to_fp16(f32(x))))[0]) for x in F32_INPUTS]
bf16_cases = [(f32(x), struct.unpack("<I", struct.pack("<f", float_to_bf16(f32(x))))[0] >> 16) for x in F32_INPUTS]
FP8S = [dtypes.fp8e4m3, dtypes.fp8e5m2, dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz]
FP8_INPUTS = F32_INPUTS + [448.0, 464.0, 464.1, 480.0, 240.0, 247.9, 248.0, 57344.0, 61439.0, 61440.0, 0.001953125,
                           0.0009765625, 0.00146484375, 2.0**-17, 1.5 * 2.0**-16, 2.0**-18, 0.1234, -7.77, math.nan]
fp8_cases = [(d, x, float_to_fp8(x, d)) for d in FP8S for x in FP8_INPUTS]
fp8_decode_cases = [(d, b, fp8_to_float(b, d)) for d in FP8S for b in range(256)]

# ------------------------------------------------------------------------------------------------------- write
out = ["/* constalu_cases.h — GENERATED by tools/gen_constalu_cases.py from tinygrad (exec_alu, truncate, dtype.const,",
       " * bitcast, float_to_fp16/bf16/fp8); do not edit. See the script for where tinygrad.c deliberately differs. */",
       "typedef struct CaseVal { ConstKind kind; int64_t i; double f; } CaseVal;",
       "#define CI(v) {CK_INT, (v), 0.0}", "#define CF(v) {CK_FLOAT, 0, (v)}", "#define CB(v) {CK_BOOL, (v), 0.0}",
       "#define CINV {CK_INVALID, 0, 0.0}", "#define CNONE {CK_NONE, 0, 0.0}", "",
       "/* {op, dtype (the operands' dtype for comparisons), nsrc, {srcs}, expected} */",
       "static const struct { TgOp op; TgDTypeId dt; int n; CaseVal src[3]; CaseVal out; } constalu_cases[] = {"]
for op, dt, srcs, res in cases:
  out.append(f"  {{TG_OP_{op.name}, {cdt(dt)}, {len(srcs)}, {{{', '.join(cval(s, dtypes.bool if op is Ops.WHERE and i == 0 else dt) for i, s in enumerate(srcs))}}}, "
             f"{cval(res, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt)}}},")
out.append("};")
out.append("/* {dtype, input, dt_const(dtype, input)} */")
out.append("static const struct { TgDTypeId dt; CaseVal in, out; } dtconst_cases[] = {")
for dt, v, res in dtconst_cases: out.append(f"  {{{cdt(dt)}, {cval(v, None)}, {cval(res, dt)}}},")
out.append("};")
out.append("/* {from, to, value, dt_const_bitcast(value, from, to)} */")
out.append("static const struct { TgDTypeId from, to; CaseVal in, out; } bitcast_cases[] = {")
for a, b, v, res in bitcast_cases: out.append(f"  {{{cdt(a)}, {cdt(b)}, {cval(v, a)}, {cval(res, b)}}},")
out.append("};")
out.append("/* {float32 input, float16 bits} and {float32 input, bfloat16 bits} */")
out.append("static const struct { float in; uint16_t bits; } half_cases[] = {")
for x, b in half_cases: out.append(f"  {{{lit_float(x)}, 0x{b:04x}}},")
out.append("};")
out.append("static const struct { float in; uint16_t bits; } bf16_cases[] = {")
for x, b in bf16_cases: out.append(f"  {{{lit_float(x)}, 0x{b:04x}}},")
out.append("};")
out.append("/* {fp8 dtype, double input, fp8 bits} */")
out.append("static const struct { TgDTypeId dt; double in; uint8_t bits; } fp8_cases[] = {")
for d, x, b in fp8_cases: out.append(f"  {{{cdt(d)}, {lit_float(x)}, 0x{b:02x}}},")
out.append("};")
out.append("/* {fp8 dtype, bits, value} (every code) */")
out.append("static const struct { TgDTypeId dt; uint8_t bits; double value; } fp8_decode_cases[] = {")
for d, b, x in fp8_decode_cases:
  out.append(f"  {{{cdt(d)}, 0x{b:02x}, {'-NAN' if math.isnan(x) and math.copysign(1, x) < 0 else lit_float(x)}}},")
out.append("};")
print("\n".join(out))
print(f"/* {len(cases)} alu cases, {len(dtconst_cases)} dt_const cases, {len(bitcast_cases)} bitcasts */", file=sys.stderr)
