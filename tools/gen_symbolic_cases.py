#!/usr/bin/env python3
"""gen_symbolic_cases.py — writes tests/symbolic_cases.h, the expectation table of the symbolic suite.

Every helper_test_variable(expr, vmin, vmax, string) call of tinygrad's test/null/test_uop_symbolic.py becomes one
case. The expression is kept as Python source (in a small subset that tests/test_symbolic.c parses and builds with
the C constructors); tinygrad itself evaluates it and supplies the ground truth:
  graph   the unsimplified graph as an s-expression, so the C side can prove it built the identical graph
  render  v_simplified.render() where v_simplified = graph_rewrite(v, sym+pm_cast_weak), as the test does
  vmin / vmax of v_simplified
Before a case is written, tinygrad's own assertions of that test are re-checked (bounds and the expected string), so
the table only holds expectations tinygrad passes.

Run from the repository root:  python3 tools/gen_symbolic_cases.py [/path/to/tinygrad]   (default /work/tgref)
"""
import ast, functools, math, os, sys

TG = sys.argv[1] if len(sys.argv) > 1 else "/work/tgref"
sys.path.insert(0, TG)
from tinygrad.dtype import dtypes, Invalid  # noqa: E402
from tinygrad.uop.ops import UOp, Ops, graph_rewrite  # noqa: E402
from tinygrad.uop.symbolic import sym, commutative  # noqa: E402
from tinygrad.uop.weak import pm_cast_weak  # noqa: E402

TEST_FILE = os.path.join(TG, "test/null/test_uop_symbolic.py")
OUT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "symbolic_cases.h")

def Variable(name, min_val, max_val, dtype=dtypes.weakint): return UOp.variable(name, min_val, max_val, dtype, param=True)
def uconst(val): return UOp.const(val)
def usum(ops): return functools.reduce(lambda x, y: x+y, ops)
def uand(ops): return functools.reduce(lambda x, y: x*y, ops)
ENV = {"Variable": Variable, "uconst": uconst, "usum": usum, "uand": uand, "UOp": UOp, "dtypes": dtypes, "math": math}

# ---- the Python subset the C parser understands ----
FUNCS = {"Variable", "uconst", "usum", "uand"}
UOP_STATICS = {"const", "invalid", "range", "variable", "gcd"}
METHODS = {"maximum", "ne", "eq", "where", "cast", "logical_not", "ufix", "reciprocal", "trunc", "valid", "bitcast", "divide_exact"}
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)

def unsupported(node:ast.AST) -> str|None:
  """Why the C parser cannot take this expression, or None."""
  for n in ast.walk(node):
    if isinstance(n, (ast.Expression, ast.Load, ast.Name, ast.List, ast.keyword, ast.USub, ast.Lt, ast.Gt, ast.LtE, ast.GtE)): continue
    if isinstance(n, BINOPS): continue
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool)): continue
    if isinstance(n, ast.BinOp) and isinstance(n.op, BINOPS): continue
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub): continue
    if isinstance(n, ast.Compare) and len(n.ops) == 1: continue
    if isinstance(n, ast.Attribute):
      if isinstance(n.value, ast.Name) and n.value.id == "dtypes": continue
      if isinstance(n.value, ast.Name) and n.value.id == "UOp" and n.attr in UOP_STATICS: continue
      if n.attr in METHODS or n.attr == "dtype": continue
      return f"attribute .{n.attr}"
    if isinstance(n, ast.Call):
      f = n.func
      if isinstance(f, ast.Name) and f.id in FUNCS: continue
      if isinstance(f, ast.Attribute) and (f.attr in METHODS or (isinstance(f.value, ast.Name) and f.value.id == "UOp")): continue
      return f"call {ast.unparse(f)}"
    return f"node {type(n).__name__}"
  return None

class Inline(ast.NodeTransformer):
  """Replace names bound to plain numbers by their value (c0, c1 = 2, 2**54+1)."""
  def __init__(self, consts): self.consts = consts
  def visit_Name(self, n):
    if n.id in self.consts: return ast.copy_location(ast.Constant(self.consts[n.id]), n)
    return n

def names_in(node): return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]

def rewrite_call(node:ast.expr) -> tuple[ast.expr, str]|None:
  """graph_rewrite(X, sym) -> (X, "sym"); X.simplify() -> (X, "symbolic") (UOp.simplify rewrites with symbolic)."""
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "graph_rewrite" and len(node.args) == 2 \
     and isinstance(node.args[1], ast.Name) and node.args[1].id == "sym" and not node.keywords:
    return node.args[0], "sym"
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "simplify" and not node.args:
    return node.func.value, "symbolic"
  return None

# rewrite cases whose test does not use assertIs: (name, source, rule set, the test's expected render)
EXTRA_REWRITES = [
  ("test_resnet_half[1]",
   "gidx0 = Variable('gidx0', 0, 3); gidx1 = Variable('gidx1', 0, 127); gidx2 = Variable('gidx2', 0, 7); "
   "lidx3 = Variable('lidx3', 0, 7); lidx4 = Variable('lidx4', 0, 1); lidx5 = Variable('lidx5', 0, 15); "
   "(1 + lidx5) % 16 * 49 + (262145 + lidx5) // 16 * 802816 + gidx0 * 3211264 + gidx1 * 784 + gidx2 * 8 + lidx4 * 100352 + "
   "-13151129600 + lidx3", "sym",
   "(lidx3+((lidx5+1)//16*802816+(lidx5+1)%16*49+gidx0*3211264+gidx1*784+gidx2*8+lidx4*100352)+2207744)"),
]

def extract_cases():
  tree = ast.parse(open(TEST_FILE).read())
  out, skipped, rewrites = [], [], []
  methods = [(c.name, fn) for c in tree.body if isinstance(c, ast.ClassDef) and c.name.startswith("Test") for fn in c.body]
  for clsname, fn in methods:
    if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"): continue
    if any("expectedFailure" in ast.unparse(d) for d in fn.decorator_list):
      skipped.append((fn.name, "marked expectedFailure in tinygrad")); continue
    assigns: list[tuple[str, ast.expr]] = []
    consts: dict[str, object] = {}
    ncase = 0
    for st in fn.body:
      if isinstance(st, ast.Assign) and len(st.targets) == 1:
        t, v = st.targets[0], st.value
        pairs = [(t, v)] if isinstance(t, ast.Name) else \
                list(zip(t.elts, v.elts)) if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts) else []
        for tn, tv in pairs:
          if not isinstance(tn, ast.Name): continue
          tv = Inline(consts).visit(tv)
          try: val = eval(compile(ast.Expression(tv), "<case>", "eval"), {})
          except Exception: val = None
          if isinstance(val, (int, float)) and not isinstance(val, bool): consts[tn.id] = val
          else: assigns.append((tn.id, tv))
        continue
      if not isinstance(st, ast.Expr) or not isinstance(st.value, ast.Call): continue
      fname = ast.unparse(st.value.func)
      args = st.value.args
      if fname in ("self.assertIs", "self.assertEqual") and len(args) >= 2 and (rc := rewrite_call(args[0])) is not None:
        kind, expr, extra = "rewrite", Inline(consts).visit(rc[0]), (rc[1], Inline(consts).visit(args[1]))
      elif fname == "self.assertEqual" and len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is None \
           and isinstance(args[0], ast.Call) and isinstance(args[0].func, ast.Attribute) and args[0].func.attr == "divide_exact":
        kind, expr, extra = "rewrite", Inline(consts).visit(args[0]), ("none", args[1])  # no simplify: the result is None
      elif fname == "self.helper_test_variable" and clsname == "TestSymbolic":
        kind, expr, extra = "helper", Inline(consts).visit(args[0]), None
      else: continue
      ncase += 1
      name = f"{fn.name}[{ncase}]"
      if kind == "rewrite": need_extra = names_in(extra[1])
      else: need_extra = []
      # the setup: the assignments this expression needs, transitively, in program order
      need, setup = set(names_in(expr)) | set(need_extra), []
      for an, av in reversed(assigns):
        if an in need:
          setup.insert(0, (an, av))
          need |= set(names_in(av))
      # the latest binding wins: drop shadowed earlier ones
      seen, dedup = set(), []
      for an, av in reversed(setup):
        if an not in seen: seen.add(an); dedup.insert(0, (an, av))
      why = unsupported(ast.Expression(expr)) or next((unsupported(ast.Expression(av)) for _, av in dedup if unsupported(ast.Expression(av))), None)
      src = "; ".join(f"{an} = {ast.unparse(av)}" for an, av in dedup) + ("; " if dedup else "") + ast.unparse(expr)
      if why: skipped.append((name, why)); continue
      if kind == "helper": out.append((name, src, args[1:4]))
      else: rewrites.append((name, src, extra[0], ast.unparse(extra[1])))
  for name, src, rules, _ in EXTRA_REWRITES: rewrites.append((name, src, rules, None))
  return out, skipped, rewrites

# ---- tinygrad's ground truth ----
def dt_name(d): return repr(d).removeprefix("dtypes.")

def fmt_val(v):
  if v is Invalid: return "invalid"
  if isinstance(v, bool): return "True" if v else "False"
  if isinstance(v, int): return str(v)
  return "f%.17g" % v  # the f keeps float 2.0 apart from int 2

def dump(u:UOp) -> str:
  """The graph as an s-expression: what the C side prints for its own graph and compares."""
  if u.op is Ops.CONST: return f"{dt_name(u.dtype)}:{fmt_val(u.arg)}"
  if u.op in (Ops.PARAM, Ops.BUFFER) and u.arg.vmin_vmax is not None:
    return f"var:{dt_name(u.dtype)}:{u.arg.name}:{u.arg.vmin_vmax[0]}:{u.arg.vmin_vmax[1]}"
  head = f"{u.op.name}:{dt_name(u.dtype)}" + (f":{u.arg[0]}" if u.op is Ops.RANGE else "")
  return "(" + " ".join([head] + [dump(s) for s in u.src]) + ")"

def bound(v) -> str:
  if isinstance(v, bool): return "1" if v else "0"
  if isinstance(v, int): return str(v)
  return "%.17g" % v

def tinygrad_passes(v_simplified:UOp, n, m, s) -> str|None:
  """tinygrad's own helper_test_variable assertions (without z3); None when they hold."""
  sym_vars = {x.render(): x for x in v_simplified.toposort() if x.op in (Ops.RANGE, Ops.SPECIAL, Ops.PARAM)}
  s_eval = eval(s, sym_vars)
  if isinstance(s_eval, (bool, int, float)): s_eval = UOp.const(s_eval)
  s_eval = graph_rewrite(s_eval, commutative)
  if s_eval is not v_simplified: return f"string {s!r} does not match {v_simplified.render()}"
  if v_simplified.vmin != n or v_simplified.vmax != m: return f"bounds {v_simplified.vmin}..{v_simplified.vmax} != {n}..{m}"
  return None

def c_str(s:str) -> str: return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

def main():
  cases, skipped, rewrites = extract_cases()
  rows = []
  for name, src, exp in cases:
    *setup, expr = src.split("; ")
    env = dict(ENV)
    for st in setup:
      k, v = st.split(" = ", 1)
      env[k] = eval(v, env)
    v = eval(expr, env)
    v_simplified = graph_rewrite(v, sym+pm_cast_weak, name="simplify symbolic uop")
    n, m, s = (eval(ast.unparse(e), env) for e in exp)
    if (why := tinygrad_passes(v_simplified, n, m, s)) is not None:
      skipped.append((name, f"tinygrad fails its own test: {why}")); continue
    rows.append((name, src, dump(v), v_simplified.render(simplify=False), bound(v_simplified.vmin), bound(v_simplified.vmax)))
  rw_rows = []
  for name, src, rules, expected in rewrites:
    *setup, expr = src.split("; ")
    env = dict(ENV)
    for st in setup:
      k, v = st.split(" = ", 1)
      env[k] = eval(v, env)
    v = eval(expr, env)
    if rules == "none":  # X.divide_exact(Y) is None: nothing to simplify, the C side checks it gets NULL
      if v is not None: skipped.append((name, f"tinygrad fails its own test: {v} is not None")); continue
      rw_rows.append((name, src, "None", rules, "None", "None")); continue
    out = graph_rewrite(v, sym) if rules == "sym" else v.simplify()
    if expected is None:  # an EXTRA_REWRITES case: its test compares the render
      want = next(e[3] for e in EXTRA_REWRITES if e[0] == name)
      if out.render() != want: skipped.append((name, f"tinygrad fails its own test: {out.render()} != {want}")); continue
    elif out is not eval(expected, env):
      skipped.append((name, f"tinygrad fails its own test: {out.render(simplify=False)} is not {expected}")); continue
    # UOp.gcd / divide_exact build their raw result their own way: only the simplified result is compared
    raw = "" if any(k in expr for k in ("UOp.gcd(", ".divide_exact(")) else dump(v)
    rw_rows.append((name, src, raw, rules, dump(out), out.render(simplify=False)))
  with open(OUT_FILE, "w") as f:
    f.write("/* symbolic_cases.h — GENERATED by tools/gen_symbolic_cases.py from tinygrad's test/null/test_uop_symbolic.py; do not\n"
            " * edit. One row per helper_test_variable case: name, Python source of the expression, tinygrad's unsimplified\n"
            " * graph (s-expression), tinygrad's render of graph_rewrite(v, sym+pm_cast_weak), and its vmin / vmax. */\n")
    f.write(f"/* {len(rows)} cases; skipped {len(skipped)}:\n")
    for nm, why in skipped: f.write(f" *   {nm}: {why}\n".replace("*/", "* /"))
    f.write(" */\n")
    f.write("#ifdef SYM_CASE\n")
    for r in rows: f.write("SYM_CASE(" + ",\n         ".join(c_str(x) for x in r) + ")\n")
    f.write("#endif\n/* assertIs(graph_rewrite(v, sym), expected) and assertIs(v.simplify(), expected) of every test class:\n"
            " * name, source, graph (\"\" = not compared), rule set (sym / symbolic; none = the expression is None), tinygrad's\n"
            " * rewritten graph and its render */\n#ifdef SYM_REWRITE\n")
    for r in rw_rows: f.write("SYM_REWRITE(" + ",\n            ".join(c_str(x) for x in r) + ")\n")
    f.write("#endif\n")
  print(f"wrote {len(rows)} cases and {len(rw_rows)} rewrite cases to {os.path.normpath(OUT_FILE)}, skipped {len(skipped)}")
  for nm, why in skipped: print(f"  skipped {nm}: {why}")

if __name__ == "__main__":
  main()
