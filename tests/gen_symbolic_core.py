# gen_symbolic_core.py — the oracle for the sym_cases table of tests/test_symbolic_core.c: builds each s-expression
# below with tinygrad, rewrites it with `sym` and prints the C rows (render, vmin, vmax).
# Run with tinygrad's source on the path:  python3 tests/gen_symbolic_core.py [/path/to/tinygrad-checkout]
# (cases whose result tinygrad prints as a UOp repr, or that rely on tinygrad keeping out-of-range int constants
# unwrapped, e.g. (cast uchar 300), are left out of the C table: dtype.c truncates constants at their dtype.)
import sys
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/work/tgref")
from tinygrad.uop.ops import UOp, Ops, graph_rewrite
from tinygrad.uop.symbolic import sym
from tinygrad.dtype import dtypes

DT = {"int": dtypes.int32, "long": dtypes.int64, "uint": dtypes.uint32, "uchar": dtypes.uint8, "char": dtypes.int8,
      "float": dtypes.float32, "half": dtypes.half, "double": dtypes.float64, "bool": dtypes.bool, "weakint": dtypes.weakint,
      "short": dtypes.int16, "ulong": dtypes.uint64}
LEAVES = {"a": UOp.variable("a", 0, 8), "b": UOp.variable("b", 0, 8), "c": UOp.variable("c", -5, 5),
          "n": UOp.variable("n", -20, 20, dtypes.int32), "m": UOp.variable("m", 0, 300, dtypes.int64),
          "r": UOp.range(10, 0), "s": UOp.range(4, 1)}

def tok(s):
  return s.replace("(", " ( ").replace(")", " ) ").split()
def parse(ts):
  t = ts.pop(0)
  if t == "(":
    op = ts.pop(0); args = []
    if op == "cast": args.append(DT[ts.pop(0)])
    while ts[0] != ")": args.append(parse(ts))
    ts.pop(0)
    return build(op, args)
  if t in LEAVES: return LEAVES[t]
  if t in ("true", "false"): return UOp.const(t == "true")
  if t == "invalid": return UOp.invalid()
  if "." in t or t in ("inf", "-inf", "nan"): return UOp.const(float(t))
  return UOp.const(int(t))
def build(op, a):
  if op == "add": return a[0] + a[1]
  if op == "sub": return a[0] - a[1]
  if op == "mul": return a[0] * a[1]
  if op == "neg": return -a[0]
  if op == "idiv": return a[0] // a[1]
  if op == "mod": return a[0] % a[1]
  if op == "lt": return a[0] < a[1]
  if op == "gt": return a[0] > a[1]
  if op == "ne": return a[0].ne(a[1])
  if op == "eq": return a[0].eq(a[1])
  if op == "max": return a[0].maximum(a[1])
  if op == "min": return a[0].minimum(a[1])
  if op == "and": return a[0] & a[1]
  if op == "or": return a[0] | a[1]
  if op == "xor": return a[0] ^ a[1]
  if op == "shl": return a[0].alu(Ops.SHL, a[1])
  if op == "shr": return a[0].alu(Ops.SHR, a[1])
  if op == "where": return a[0].where(a[1], a[2])
  if op == "not": return a[0].logical_not()
  if op == "cast": return a[1].cast(a[0])
  if op == "recip": return a[0].reciprocal()
  if op == "sqrt": return a[0].sqrt()
  if op == "pow": return a[0].pow(a[1])
  if op == "trunc": return a[0].trunc()
  raise ValueError(op)

CASES = """
(add a 0)
(mul a 1)
(add 3 4)
(add a a)
(add (mul a 2) (mul a 3))
(add b a)
(add (add a 1) b)
(idiv a 1)
(idiv a -1)
(mod a a)
(idiv a a)
(idiv (add (mul a 4) b) 4)
(lt a 9)
(lt (mul a 4) 8)
(max a 10)
(max a -3)
(sub a a)
(lt (add a 3) 5)
(add (mod a 4) (mul (idiv a 4) 4))
(where (lt a 2) a a)
(cast int 3.7)
(neg (add a 2))
(mod r 10)
(idiv r 10)
(min a b)
(xor (xor a b) b)
(mod (mod a 3) 3)
(lt a a)
(ne a a)
(xor a a)
(and n 0)
(or n 0)
(shl n 0)
(and (lt a 3) true)
(and (lt a 3) false)
(or (lt a 3) true)
(or (lt a 3) false)
(ne (lt a 3) false)
(not (not (lt a 3)))
(where (lt a 3) true false)
(where (lt a 3) false true)
(ne (cast int (lt a 3)) 0)
(ne (cast int (lt a 3)) 1)
(ne (cast int (lt a 3)) 2)
(cast bool n)
(add (mul 3 4) (mul 5 -2))
(idiv -7 2)
(mod -7 2)
(lt (cast int 3) 4)
(cast uchar 300)
(cast char 200)
(mul (add a 2) 3)
(mul 3 (add a 2))
(add (add (mul a 2) b) (mul a 3))
(add (add b a) a)
(lt (add a b) 1)
(lt (mul a -1) (mul b -1))
(not (lt (add (mul a 3) (mul b 2)) 1))
(lt (add (mul a 4) (mod b 4)) 8)
(lt (idiv a 3) 2)
(lt (mul a 3) 7)
(lt (mul a -3) 7)
(idiv (idiv a 2) 3)
(add (add a 3) 4)
(mul (mul a 3) 4)
(max (max a 3) 5)
(where (lt 3 a) a 3)
(where (lt a 3) 3 a)
(where (not (lt a 3)) b c)
(where (lt a 3) (where (lt a 3) b c) c)
(where (lt a 3) (where (lt b 3) c 1) 1)
(where (lt a 3) c (where (lt b 3) c 1))
(add (where (lt a 3) b 0) (where (lt a 3) 0 c))
(add (where (lt a 3) 1 2) (where (lt a 3) 3 4))
(where true a b)
(where false a b)
(where (lt a 3) b invalid)
(add (where (lt a 3) b invalid) 1)
(cast long (cast int a))
(cast int (cast long n))
(cast short (cast long n))
(add (cast long n) (cast long n))
(add (cast long n) 3)
(mul (cast long n) (cast long n))
(cast long (add a 3))
(and (shr (and n -4) 2) 255)
(shr (and n -4) 2)
(idiv (and n -4) 4)
(pow 2.0 3.0)
(mul (cast float n) 0)
(mul (cast float n) 1)
(pow (cast float n) 2)
(pow (cast float n) 0)
(pow (cast float n) -1)
(pow (cast float n) 0.5)
(pow (cast float n) 3)
(recip (mul (cast float n) (cast float n)))
(recip (mul (cast float n) 2.0))
(sqrt 4.0)
(mul (mod a 4) (mod b 2))
(lt c 0)
(lt (add c 5) 1)
(mod (add (mul r 4) s) 4)
(idiv (add (mul r 4) s) 4)
(lt (add r s) 13)
(and (lt a 3) (lt a 3))
(or (lt a 3) (not (lt a 3)))
(trunc n)
(max (add a 1) a)
(eq a 3)
(mul (add a b) 4)
(mul -1 (add a b))
(add (add (mod r 3) (mul (idiv r 3) 3)) s)
(where (lt a 3) (add a 1) (add a 2))
"""

for line in CASES.splitlines():
  line = line.strip()
  if not line or line.startswith("#"): continue
  e = parse(tok(line))
  r = graph_rewrite(e, sym)
  txt = r.render(simplify=False)
  if dtypes.is_float(r.dtype): lo, hi = "0", "0"; fl = 1
  else:
    lo, hi = int(r.vmin), int(r.vmax); fl = 0
    lo = str(lo) if abs(lo) < 2**62 else ("TGI_MIN" if lo < 0 else "TGI_MAX")
    hi = str(hi) if abs(hi) < 2**62 else ("TGI_MIN" if hi < 0 else "TGI_MAX")
  print(f'  {{"{line}", "{txt}", {lo}, {hi}, {fl}}},')
