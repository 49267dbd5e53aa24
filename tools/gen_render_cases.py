#!/usr/bin/env python3
"""gen_render_cases.py — ask tinygrad itself how it prints a set of UOp graphs, for tests/test_print.c.

Builds each graph with tinygrad's UOp, then writes tests/render_cases.h with
  render_cases  graph, tinygrad's UOp.render(simplify=False), tinygrad's repr (pretty_print)
  print_cases   graph, tinygrad's print_uops lines
  spec_cases    stage, graph, tinygrad's type_verify verdict and tinygrad.c's (equal unless a note says otherwise)
where a graph is an explicit s-expression (every node with its dtype and arg) that tests/test_print.c parses.

Node syntax: (OP.dtype[=arg] src...) with args i:<int> f:<python float repr> b:<0|1> inv (CONST), var:<name>:<lo>:<hi>
(a Variable: BUFFER in the ALU address space), param:<slot>:<name or ->:<addrspace> (PARAM/BUFFER), rng:<ids joined
by _>:<AxisType>, s:<string>, red:<OP>:<n>, perm:<ints,>, flip:<0/1,>.

tinygrad.c keeps a Variable without tinygrad's empty-STACK shape source, so the graphs here are built without it; a
CAST/BITCAST keeps its target dtype only as its dtype (tinygrad also stores it as the arg; print.c prints it there).
Run with tinygrad importable:
  cd /work/tgref && NO_COLOR=1 PYTHONPATH=. python3 /work/main/tools/gen_render_cases.py > /work/main/tests/render_cases.h
"""
from tinygrad.uop.ops import UOp, Ops, AxisType, ParamArg
from tinygrad.dtype import dtypes, Invalid, AddrSpace

def N(op, *src, dtype=None, arg=None): return UOp(op, dtype, tuple(src), arg)
def C(v, dt=None): return UOp.const(v, dt if dt is not None else dtypes.from_py(v))
def V(name, lo, hi, dt=dtypes.weakint): return UOp(Ops.BUFFER, dt, (), ParamArg(-1, dt, vmin_vmax=(lo, hi), multiple_of=1, name=name, addrspace=AddrSpace.ALU))
def R(end, axis, at=AxisType.LOOP, *sub, dt=dtypes.weakint): return UOp(Ops.RANGE, dt, (C(end, dt) if isinstance(end, int) else end,), (axis, *sub, at))
def P(slot, dt=dtypes.float, name=None): return UOp(Ops.PARAM, dt, (), ParamArg(slot, dt, name=name))
def CAST(x, dt): return UOp(Ops.CAST, dt, (x,), dt)

a, b, c = V("a", 0, 10), V("b", 0, 10), V("c", 1, 8)
x = V("x", -5, 5)
n = V("n", 1, 64, dtypes.int)
r0, r1, r2 = R(16, 0), R(8, 1, AxisType.REDUCE), R(4, 2, AxisType.UPCAST, 3)
g = UOp(Ops.SPECIAL, dtypes.weakint, (C(16),), "gidx0")
fa = V("fa", 0, 1, dtypes.int)  # an int Variable, cast to float below
ADD, MUL, FDIV, FMOD, LT, NE = Ops.ADD, Ops.MUL, Ops.FLOORDIV, Ops.FLOORMOD, Ops.CMPLT, Ops.CMPNE

CASES = [
  # constants, as Python prints them
  C(0), C(-7), C(123456789012), C(True), C(False), C(Invalid),
  C(1.0), C(0.5), C(-0.0), C(1e16), C(1e15), C(1e-5), C(0.0001), C(1.5e300), C(float("inf")), C(float("-inf")),
  C(float("nan")), C(0.1, dtypes.float), C(1e20, dtypes.float), C(3, dtypes.int), C(2**64-1, dtypes.uint64),
  C(-1, dtypes.int64), C(2.5, dtypes.half), C(7, dtypes.uint8), C(1.0, dtypes.double),
  # leaves
  a, n, r0, r1, r2, R(5, 3, AxisType.LOOP, dt=dtypes.int), R(9, -2, AxisType.GLOBAL), UOp(Ops.RANGE, dtypes.void, (C(4),), (7, AxisType.LOOP)),
  g, P(0), P(3, dtypes.int, "data"),
  # infix and paren stripping
  N(ADD, a, b), N(ADD, N(MUL, a, C(4)), b), N(MUL, N(ADD, a, b), C(4)), N(ADD, a, N(ADD, b, c)), N(ADD, N(ADD, a, b), c),
  N(FDIV, N(ADD, N(MUL, a, C(4)), b), C(3)), N(ADD, N(FDIV, N(ADD, N(MUL, a, C(4)), b), C(3)), r0),
  N(FMOD, N(ADD, a, r0), C(4)), N(MUL, N(FDIV, a, C(2)), C(2)), N(FDIV, a, N(MUL, b, C(2))), N(FMOD, a, N(FMOD, b, C(3))),
  N(MUL, N(MUL, a, b), c), N(MUL, a, N(MUL, b, c)), N(ADD, N(MUL, a, C(-1)), b),
  N(LT, a, C(5)), N(LT, N(ADD, a, b), C(5)), N(NE, a, b), N(NE, N(LT, a, b), C(True)),
  N(Ops.SUB, a, b), N(Ops.SUB, N(ADD, a, b), N(ADD, b, c)), N(ADD, a, N(Ops.SUB, b, c)),
  N(Ops.SHL, a, C(2)), N(Ops.SHR, N(ADD, a, b), C(1)), N(Ops.SHL, N(Ops.SHR, a, C(1)), C(3)),
  N(Ops.AND, N(LT, a, C(3)), N(LT, b, C(4))), N(Ops.OR, N(Ops.AND, N(LT, a, C(3)), N(LT, b, C(4))), N(LT, c, C(2))),
  N(Ops.XOR, a, b), N(Ops.AND, N(Ops.XOR, a, b), N(Ops.OR, a, c)), N(Ops.OR, a, N(Ops.AND, b, c)),
  N(Ops.AND, N(ADD, a, C(1)), C(7)), N(ADD, N(Ops.SHL, a, C(1)), C(1)),
  # functions and ternaries
  N(Ops.MAX, a, b), N(Ops.MAX, N(ADD, a, C(1)), C(0)), N(ADD, N(Ops.MAX, a, b), c),
  N(Ops.WHERE, N(LT, a, C(3)), a, b), N(Ops.WHERE, N(LT, a, C(3)), N(ADD, a, C(1)), C(0)),
  N(Ops.WHERE, N(LT, r0, C(8)), N(ADD, r0, C(1)), C(Invalid)),
  N(Ops.NEG, a), N(ADD, N(Ops.NEG, a), b), N(Ops.RECIPROCAL, CAST(a, dtypes.float)),
  N(Ops.MULACC, a, b, c), N(Ops.CDIV, a, C(3)), N(Ops.CMOD, N(ADD, a, b), C(3)), N(ADD, N(Ops.CDIV, a, C(3)), C(1)),
  # casts
  CAST(a, dtypes.int), CAST(N(ADD, a, b), dtypes.long), CAST(C(3), dtypes.int), CAST(C(2.5), dtypes.float),
  CAST(C(True), dtypes.int), CAST(C(3, dtypes.int), dtypes.long), N(ADD, CAST(n, dtypes.long), CAST(C(1), dtypes.long)),
  CAST(C(Invalid), dtypes.int), N(MUL, CAST(fa, dtypes.float), C(0.5, dtypes.float)),
  # ranges and specials in index math
  N(ADD, N(MUL, r0, C(8)), r1), N(ADD, N(MUL, g, C(16)), N(MUL, r2, C(4))), N(LT, N(ADD, r0, r1), n),
  # indexing, stacks, after
  N(Ops.INDEX, P(0), N(ADD, N(MUL, r0, C(4)), r1), dtype=dtypes.float),
  N(Ops.INDEX, P(1, name="buf"), N(ADD, a, C(1)), N(LT, a, C(5)), dtype=dtypes.float),
  N(Ops.STACK, a, b, C(3)), N(Ops.STACK, N(ADD, a, C(1)), N(MUL, b, C(2))),
  N(Ops.AFTER, a, N(Ops.STORE, a, C(4))), N(ADD, N(Ops.AFTER, a, N(Ops.STORE, a, C(4))), C(1)),
  # ops without a render rule print their full repr
  N(Ops.SQRT, CAST(a, dtypes.float)), N(Ops.CMPEQ, a, b), N(ADD, N(Ops.EXP2, C(1.0, dtypes.float)), C(2.0, dtypes.float)),
  N(Ops.REDUCE, C(1.0, dtypes.float), r1, arg=(Ops.ADD, 1)), N(Ops.SINK, N(ADD, a, b), N(ADD, a, b)),
  N(Ops.PERMUTE, C(1.0, dtypes.float), arg=(1, 0)), N(Ops.FLIP, C(1.0, dtypes.float), arg=(True, False, True)),
  N(Ops.RESHAPE, C(1.0, dtypes.float), N(Ops.STACK, C(2), C(3))), N(Ops.EXPAND, C(1.0, dtypes.float), C(4)),
  N(Ops.PAD, C(1.0, dtypes.float), N(Ops.STACK, C(0), C(1)), N(Ops.STACK, C(2), C(3))),
  N(Ops.SHRINK, C(1.0, dtypes.float), a, N(ADD, a, C(1))),
  N(Ops.BITCAST, C(1.0, dtypes.float), dtype=dtypes.int, arg=dtypes.int),
]

def dtname(dt): return repr(dt)[len("dtypes."):]

def argtxt(u):
  a = u.arg
  if u.op is Ops.CONST:
    if a is Invalid: return "inv"
    if isinstance(a, bool): return f"b:{int(a)}"
    if isinstance(a, float): return f"f:{float.__repr__(a)}"
    return f"i:{a}"
  if isinstance(a, ParamArg):
    if a.addrspace is AddrSpace.ALU: return f"var:{a.name}:{a.vmin_vmax[0]}:{a.vmin_vmax[1]}"
    return f"param:{a.slot}:{a.name or '-'}:{int(a.addrspace)}"
  if u.op is Ops.RANGE: return "rng:" + "_".join(str(i) for i in a[:-1]) + ":" + a[-1].name
  if u.op is Ops.REDUCE: return f"red:{a[0].name}:{a[1]}"
  if u.op is Ops.PERMUTE: return "perm:" + ",".join(str(i) for i in a)
  if u.op is Ops.FLIP: return "flip:" + ",".join(str(int(i)) for i in a)
  if isinstance(a, str): return f"s:{a}"
  if a is None or u.op in (Ops.CAST, Ops.BITCAST): return None
  raise RuntimeError(f"no arg syntax for {u.op} {a!r}")

def sexpr(u):
  at = argtxt(u)
  head = f"{u.op.name}.{dtname(u.dtype)}" + (f"={at}" if at is not None else "")
  return "(" + " ".join([head] + [sexpr(s) for s in u.src]) + ")"

def cstr(s): return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

print("/* render_cases.h — generated by tools/gen_render_cases.py from tinygrad itself: do not edit.")
print(" * render_cases: {graph s-expression, tinygrad render(simplify=False), tinygrad repr}; print_cases: print_uops;")
print(" * spec_cases: type_verify verdicts. tests/test_print.c reads the graphs (uop_parse). */")
print("#include \"uop/parse.h\" /* uop_parse reads the graphs */")
print("#ifdef WANT_PRINT_CASES")
print("static const struct { const char *graph, *render, *str; } render_cases[] = {")
for u in CASES:
  print(f"  {{{cstr(sexpr(u))},\n   {cstr(u.render(simplify=False))},\n   {cstr(repr(u))}}},")
print("};")

# print_uops lines (NO_COLOR=1 keeps the range column plain)
import io, contextlib, os
from tinygrad.uop.render import print_uops
PRINT_CASES = [
  N(ADD, N(MUL, r0, C(4)), r1),
  N(Ops.STORE, N(Ops.INDEX, P(0), N(ADD, N(MUL, r0, C(8)), r1), dtype=dtypes.float), N(ADD, CAST(N(ADD, r0, r1), dtypes.float), C(1.0, dtypes.float))),
  N(Ops.END, N(Ops.STORE, N(Ops.INDEX, P(0), r0, dtype=dtypes.float), C(2.0, dtypes.float)), r0),
  N(Ops.SINK, N(Ops.WHERE, N(LT, a, C(3)), a, b), N(Ops.SPECIAL, C(8), arg="lidx0"), arg=None),
]
print("static const struct { const char *graph, *list; } print_cases[] = {")
for u in PRINT_CASES:
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf): print_uops(list(u.toposort()))
  print(f"  {{{cstr(sexpr(u))},\n   {cstr(buf.getvalue())}}},")
print("};")
print("#endif")

# spec verdicts of tinygrad's type_verify on graphs whose form tinygrad.c shares (no Variables: tinygrad.c keeps
# them without a shape source, which tinygrad's own spec would reject)
from tinygrad.uop.spec import type_verify, spec_tensor, spec_program
f1, i3 = C(1.0, dtypes.float), C(3, dtypes.int)
p0, ri = P(0), R(16, 0, dt=dtypes.int)
sp = UOp(Ops.SPECIAL, dtypes.int, (C(4, dtypes.int),), "gidx0")
idx = N(ADD, N(MUL, sp, C(16, dtypes.int)), ri)
ld = N(Ops.LOAD, N(Ops.INDEX, p0, idx, dtype=dtypes.float))
gate = N(LT, ri, C(8, dtypes.int))
SPEC_CASES = [
  ("tensor", N(ADD, N(MUL, r0, C(4)), r1)), ("tensor", N(LT, r0, C(3))), ("tensor", N(Ops.WHERE, N(LT, r0, C(3)), f1, f1)),
  ("tensor", N(ADD, f1, i3, dtype=dtypes.float)), ("tensor", N(LT, f1, i3)), ("tensor", N(LT, i3, i3, dtype=dtypes.int), "tinygrad.c: comparisons produce bool"),
  ("tensor", N(Ops.SHL, f1, i3, dtype=dtypes.float)), ("tensor", N(Ops.FLOORDIV, f1, f1)), ("tensor", N(Ops.SIN, i3, dtype=dtypes.int)),
  ("tensor", N(Ops.SQRT, f1)), ("tensor", N(Ops.REDUCE, f1, r1, arg=(Ops.ADD, 1))), ("tensor", N(Ops.REDUCE, f1, r1, arg=(Ops.SUB, 1))),
  ("tensor", N(Ops.PERMUTE, f1, arg=(1, 0))), ("tensor", UOp(Ops.RANGE, dtypes.int, (C(4, dtypes.long),), (0, AxisType.LOOP))),
  ("tensor", UOp(Ops.CONST, dtypes.float, (), 1)), ("tensor", UOp(Ops.CONST, dtypes.int, (), 1.5)),
  ("tensor", N(Ops.STACK, f1, i3, dtype=dtypes.float)), ("tensor", N(Ops.INDEX, p0, f1, dtype=dtypes.float)),
  ("tensor", N(Ops.WHERE, N(LT, r0, C(3)), f1, C(1.0, dtypes.half), dtype=dtypes.float)), ("tensor", N(ADD, C(1, dtypes.long), C(2))),
  ("tensor", N(Ops.CMPNE, C(1.0, dtypes.half), f1)), ("tensor", N(Ops.SHR, i3, C(1, dtypes.short), dtype=dtypes.int)),
  ("program", N(Ops.SINK, N(Ops.END, N(Ops.STORE, N(Ops.INDEX, p0, idx, dtype=dtypes.float), N(ADD, ld, CAST(C(1.0), dtypes.float))), ri))),
  ("program", N(ADD, C(1), C(2))), ("program", C(Invalid)), ("program", sp), ("program", UOp(Ops.SPECIAL, dtypes.long, (C(4, dtypes.long),), "g")),
  ("program", N(Ops.LOAD, N(Ops.INDEX, p0, ri, dtype=dtypes.float), C(0.0, dtypes.float), gate)),
  ("program", N(Ops.LOAD, N(Ops.INDEX, p0, ri, dtype=dtypes.float), i3, gate, dtype=dtypes.float)),
  ("program", N(Ops.RESHAPE, f1, i3)), ("program", N(Ops.IF, gate, N(Ops.INDEX, p0, ri, dtype=dtypes.float))),
  ("program", N(Ops.AND, f1, f1)), ("program", N(Ops.CMPLT, ri, C(2, dtypes.long))),
]
# tinygrad_ok: tinygrad's verdict; ok: tinygrad.c's, which differs only where a note says tinygrad.c is stricter
print("#ifdef WANT_SPEC_CASES")
print("static const struct { const char *stage, *graph; int tinygrad_ok, ok; } spec_cases[] = {")
for stage, u, *stricter in SPEC_CASES:
  try: type_verify(u, spec_tensor if stage == "tensor" else spec_program); ok = 1
  except RuntimeError: ok = 0
  note = f" /* {stricter[0]} */" if stricter else ""
  print(f"  {{\"{stage}\", {cstr(sexpr(u))}, {ok}, {0 if stricter else ok}}},{note}")
print("};")
print("#endif")
