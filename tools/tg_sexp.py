"""tg_sexp.py — the one writer of tinygrad UOp graphs in tinygrad.c's s-expression syntax (src/uop/parse.h), shared by
the case generators that ask tinygrad itself for kernels (gen_codegen_cases.py, gen_opt_heuristic_cases.py,
gen_cuda_cases.py, gen_c_render_cases.py), so every generated header spells a graph the same way; and canon(), the
one-line tensor-graph form of gen_tensor_graph_cases.py and gen_grad_graph_cases.py.

A node is "(OP.dtype=arg src...)"; a node used more than once is written "(@k ...)" the first time and "@k" after.
tinygrad.c keeps a Variable (an ALU PARAM/BUFFER) without tinygrad's empty-STACK shape source, so that source is left
out. Import with tinygrad importable (the generators run with PYTHONPATH=/work/tgref)."""
import math
from tinygrad.uop.ops import Ops, KernelInfo
from tinygrad.dtype import AddrSpace, ConstFloat, Invalid
from tinygrad.helpers import ansistrip

def fmt_float(v):
  v = float(v)
  if math.isnan(v): return "nan"
  if math.isinf(v): return "inf" if v > 0 else "-inf"
  return repr(v)

# tinygrad's C type names for some dtypes hold a space: the syntax wants the dtype's own name
SPACED = {'signed char': 'int8', 'unsigned char': 'uint8', 'unsigned short': 'uint16', 'unsigned int': 'uint32',
          'unsigned long': 'uint64', '__bf16': 'bfloat16'}
def dtname(dt): return SPACED.get(dt.name, dt.name)
def dtrepr(dt): return repr(dt)[len("dtypes."):]  # float, half, ... as the linearized lists spell them

def srcs(u):
  if u.op in (Ops.PARAM, Ops.BUFFER) and u.arg.addrspace == AddrSpace.ALU: return ()
  return u.src

def kernel_name(name, mangle):
  # the syntax cannot hold parentheses or spaces in a name: a symbolic kernel name "E_(k*256)" is written E_[k*256]
  # (the tests compare names through a separate field)
  name = ansistrip(name)
  return name.replace("(", "[").replace(")", "]").replace(" ", "_") if mangle else name

def arg_text(u, var_form=False, mangle_names=True, strict=False):
  """The "=arg" part of a node, or None. var_form: a bound-range ALU BUFFER is written var:name:min:max (the lowered
  graphs' Variables). strict: an arg this syntax has no spelling for is an error instead of being left out."""
  a = u.arg
  if u.op is Ops.CONST:
    if a is Invalid: return "inv"
    if isinstance(a, bool): return f"b:{int(a)}"
    if isinstance(a, (float, ConstFloat)): return "f:" + fmt_float(float(a))
    return f"i:{int(a)}"
  if u.op in (Ops.PARAM, Ops.BUFFER) and a is not None:
    if var_form and u.op is Ops.BUFFER and a.addrspace == AddrSpace.ALU and a.vmin_vmax is not None:
      return f"var:{a.name}:{int(a.vmin_vmax[0])}:{int(a.vmin_vmax[1])}"
    s = f"param:{a.slot}:{a.name or '-'}:{int(a.addrspace) if a.addrspace is not None else 0}"
    if a.device is not None or a.vmin_vmax is not None: s += f":{a.device or ''}"
    if a.vmin_vmax is not None: s += f":{int(a.vmin_vmax[0])}:{int(a.vmin_vmax[1])}"
    return s
  if u.op is Ops.RANGE: return "rng:" + "_".join(str(x) for x in a[:-1]) + ":" + a[-1].name
  if u.op is Ops.REDUCE: return f"red:{a[0].name}:{a[1]}"
  if u.op is Ops.SINK and isinstance(a, KernelInfo): return "kern:" + kernel_name(a.name, mangle_names)
  if u.op in (Ops.SPECIAL, Ops.CUSTOM, Ops.CUSTOMI): return "s:" + a
  if u.op is Ops.WMMA:  # lowered (contracted): (dims, dtype_in, device, threads, ...) -> "wmma:N,M,K,in,out,threads"
    dims, din, _dev, threads = a[0], a[1], a[2], a[3]
    return "wmma:" + ",".join(str(x) for x in dims) + f",{dtname(din)},{dtname(u.dtype)},{threads}"
  if strict and not (a is None or u.op in (Ops.CAST, Ops.BITCAST)): raise RuntimeError(f"no arg syntax for {u.op} {a!r}")
  return None

def sexp(root, dtype_name=dtname, preorder=False, **arg_opts):
  """root's graph as one s-expression; arg_opts go to arg_text. Two numberings of shared nodes are in use:
  the default labels a shared node once its sources are written (post-order) and repeats shared CONSTs;
  preorder=True (the render cases) labels every shared node, CONSTs too, before its sources."""
  uses = {}
  for u in root.toposort():
    for x in (srcs(u) if preorder else u.src): uses[x] = uses.get(x, 0) + 1
  refs = {}
  def go(u):
    if u in refs: return f"@{refs[u]}"
    at = arg_text(u, **arg_opts)
    head = f"{u.op.name}.{dtype_name(u.dtype)}" + (f"={at}" if at else "")
    if preorder:
      label = ""
      if uses.get(u, 0) > 1:
        refs[u] = len(refs)
        label = f"@{refs[u]} "
      return "(" + label + " ".join([head] + [go(x) for x in srcs(u)]) + ")"
    inner = " ".join([head] + [go(x) for x in srcs(u)])
    if uses.get(u, 0) > 1 and u.op is not Ops.CONST:
      refs[u] = len(refs)
      return f"(@{refs[u]} {inner})"
    return f"({inner})"
  return go(root)

def linear_lines(lst, dtype_name=dtrepr):
  """A linearized program, one line per UOp: "OP.dtype src-positions" (a Variable's empty STACK is not in tinygrad.c)."""
  lst = [u for u in lst if not (u.op is Ops.STACK and not u.src)]
  pos = {u: i for i, u in enumerate(lst)}
  return "\n".join(f"{u.op.name}.{dtype_name(u.dtype)}" + "".join(f" {pos[s]}" for s in srcs(u) if s in pos) for u in lst)

def cstr(s): return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

def chunks(text, n=2000):
  # ISO C caps a string literal at 4095 characters: a long text is a NULL-terminated list of pieces, joined in order
  return "(const char *const[]){" + ", ".join(cstr(text[i:i+n]) for i in range(0, len(text), n)) + ", NULL}"

# ---- the canonical one-line tensor-graph form (tests/test_tensor.c and tests/test_grad.c build it from our graphs):
# nodes in post-order DFS, each once, ';'-separated "OP dtype arg srcs"; BUFFER/PARAM slots renumbered p0, p1, ... in
# order of appearance; CONST args as ints, %.17g floats or True/False; REDUCE as "OP,n"; PERMUTE/FLIP as comma lists;
# srcs as indices of earlier entries ("-" when empty)
def canon_const(v):
  if isinstance(v, bool): return "True" if v else "False"
  if isinstance(v, int): return str(v)
  v = float(v)
  if math.isnan(v): return "nan"
  if math.isinf(v): return "inf" if v > 0 else "-inf"
  return "%.17g" % v

def canon(root):
  order, idx, slots = [], {}, {}
  def visit(u):
    if u in idx: return
    for s in u.src: visit(s)
    idx[u] = len(order); order.append(u)
  visit(root)
  out = []
  for u in order:
    a = "-"
    if u.op is Ops.CONST: a = canon_const(u.arg)
    elif u.op in (Ops.BUFFER, Ops.PARAM):
      if u.arg.slot not in slots: slots[u.arg.slot] = len(slots)
      a = "p%d:%s:%s" % (slots[u.arg.slot], dtrepr(u.arg.dtype), u.arg.device)
    elif u.op is Ops.REDUCE: a = "%s,%d" % (u.arg[0].name, u.arg[1])
    elif u.op is Ops.PERMUTE: a = ",".join(str(x) for x in u.arg)
    elif u.op is Ops.FLIP: a = ",".join(str(int(x)) for x in u.arg)
    out.append("%s %s %s %s" % (u.op.name, dtrepr(u.dtype), a, ",".join(str(idx[s]) for s in u.src) or "-"))
  return ";".join(out)
