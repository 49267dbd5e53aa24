#!/usr/bin/env python3
"""gen_opt_heuristic_cases.py — ask tinygrad which opts its hand-coded heuristic (codegen/opt/heuristic.py
hand_coded_optimizations, through postrange.apply_opts) picks for a set of kernels on the CPU renderer, for
tests/test_opts.c.

Writes tests/opt_heuristic_cases.h: {case name, kernel AST s-expression (syntax: src/uop/parse.h), the opts tinygrad
applied}. The thread count is pinned (NUM_CPU_THREADS=8) because the heuristic's THREAD split depends on it; the test
uses a renderer with the same global_max. Run with tinygrad importable:
  cd /work/tgref && NO_COLOR=1 NUM_CPU_THREADS=8 DEV=CPU PYTHONPATH=. python3 /work/main/tools/gen_opt_heuristic_cases.py \
     > /work/main/tests/opt_heuristic_cases.h
"""
import math, os, sys
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import Ops, KernelInfo
from tinygrad.dtype import AddrSpace, ConstFloat, Invalid
from tinygrad.codegen import graph_rewrite
from tinygrad.codegen.opt.postrange import apply_opts
from tinygrad.codegen.simplify import pm_flatten_range, pm_simplify_ranges, pm_split_ranges, pm_load_collapse
from tinygrad.schedule.rangeify import pm_mops
from tinygrad.uop.symbolic import sym
from tinygrad.device import Device
from tinygrad.helpers import ansistrip

assert os.environ.get("NUM_CPU_THREADS") == "8", "run with NUM_CPU_THREADS=8 (the test pins the same thread count)"
assert not os.environ.get("NOOPT"), "the heuristic does not run under NOOPT"
ren = Device["CPU"].renderer

# ---- the AST as an s-expression (the same writer as tools/gen_codegen_cases.py) ----
def fmt_float(v):
  v = float(v)
  if math.isnan(v): return "nan"
  if math.isinf(v): return "inf" if v > 0 else "-inf"
  return repr(v)

def arg_text(u):
  a = u.arg
  if u.op is Ops.CONST:
    if a is Invalid: return "inv"
    if isinstance(a, bool): return f"b:{int(a)}"
    if isinstance(a, (float, ConstFloat)): return "f:" + fmt_float(float(a))
    return f"i:{int(a)}"
  if u.op in (Ops.PARAM, Ops.BUFFER) and a is not None:
    s = f"param:{a.slot}:{a.name or '-'}:{int(a.addrspace) if a.addrspace is not None else 0}"
    if a.device is not None or a.vmin_vmax is not None: s += f":{a.device or ''}"
    if a.vmin_vmax is not None: s += f":{int(a.vmin_vmax[0])}:{int(a.vmin_vmax[1])}"
    return s
  if u.op is Ops.RANGE: return "rng:" + "_".join(str(x) for x in a[:-1]) + ":" + a[-1].name
  if u.op is Ops.REDUCE: return f"red:{a[0].name}:{a[1]}"
  if u.op is Ops.SINK and isinstance(a, KernelInfo):
    return "kern:" + ansistrip(a.name).replace("(", "[").replace(")", "]").replace(" ", "_")
  return None

SPACED = {'signed char': 'int8', 'unsigned char': 'uint8', 'unsigned short': 'uint16', 'unsigned int': 'uint32',
          'unsigned long': 'uint64', '__bf16': 'bfloat16'}
def dtname(dt): return SPACED.get(dt.name, dt.name)

def sexp(root):
  uses = {}
  for u in root.toposort():
    for x in u.src: uses[x] = uses.get(x, 0) + 1
  refs = {}
  def go(u):
    if u in refs: return f"@{refs[u]}"
    src = u.src
    if u.op in (Ops.PARAM, Ops.BUFFER) and u.arg.addrspace == AddrSpace.ALU: src = ()
    at = arg_text(u)
    head = f"{u.op.name}.{dtname(u.dtype)}" + (f"={at}" if at else "")
    inner = " ".join([head] + [go(x) for x in src])
    if uses.get(u, 0) > 1 and u.op is not Ops.CONST:
      refs[u] = len(refs)
      return f"(@{refs[u]} {inner})"
    return f"({inner})"
  return go(root)

def chunks(text, n=2000):
  return "(const char *const[]){" + ", ".join(f'"{text[i:i+n]}"' for i in range(0, len(text), n)) + ", NULL}"

# ---- tinygrad's choice: the range passes of full_rewrite_to_sink, then apply_opts (heuristic, no opts_to_apply) ----
def heuristic_opts(ast):
  s = graph_rewrite(ast, pm_mops, bottom_up=True)
  s = graph_rewrite(s, pm_load_collapse)
  s = graph_rewrite(s, pm_split_ranges+pm_flatten_range, ctx={})
  s = graph_rewrite(s, sym+pm_flatten_range)
  s = graph_rewrite(s, pm_flatten_range+pm_simplify_ranges, ctx={})
  out = apply_opts(s, ren)
  return out.arg.applied_opts, ansistrip(out.arg.name)

def cases():
  yield "matmul_64", lambda: Tensor.empty(64, 64) @ Tensor.empty(64, 64)
  yield "matmul_256", lambda: Tensor.empty(256, 256) @ Tensor.empty(256, 256)
  yield "matmul_33x17x45", lambda: Tensor.empty(33, 17) @ Tensor.empty(17, 45)
  yield "matvec_1x512x256", lambda: Tensor.empty(1, 512) @ Tensor.empty(512, 256)
  yield "sum_4096", lambda: Tensor.empty(4096).sum()
  yield "sum_all_1M", lambda: Tensor.empty(1024 * 1024).sum()
  yield "sum_axis1_1024x512", lambda: Tensor.empty(1024, 512).sum(1)
  yield "sum_axis0_512x1024", lambda: Tensor.empty(512, 1024).sum(0)
  yield "add_1M", lambda: Tensor.empty(1024 * 1024) + Tensor.empty(1024 * 1024)
  yield "add_bcast_1024x1_1x1024", lambda: Tensor.empty(1024, 1) + Tensor.empty(1, 1024)
  yield "relu_64x64", lambda: (Tensor.empty(64, 64) * 2).relu()
  yield "conv_1x3x32x32_k3", lambda: Tensor.empty(1, 3, 32, 32).conv2d(Tensor.empty(8, 3, 3, 3), padding=1)
  yield "conv_2x3x9x9_k3", lambda: Tensor.empty(2, 3, 9, 9).conv2d(Tensor.empty(4, 3, 3, 3), padding=1).relu()
  yield "conv_1x16x16x16_s2", lambda: Tensor.empty(1, 16, 16, 16).conv2d(Tensor.empty(32, 16, 3, 3), stride=2)
  yield "softmax_64x128", lambda: Tensor.empty(64, 128).softmax(1)
  yield "cat_4x5_4x3", lambda: Tensor.empty(4, 5).cat(Tensor.empty(4, 3), dim=1)
  yield "stack_3x256", lambda: Tensor.stack(Tensor.empty(256), Tensor.empty(256), Tensor.empty(256), dim=1)
  yield "maxpool_1x8x32x32", lambda: Tensor.empty(1, 8, 32, 32).max_pool2d()
  yield "argmax_64x100", lambda: Tensor.empty(64, 100).argmax(1)
  yield "layernorm_32x256", lambda: Tensor.empty(32, 256).layernorm()
  yield "int_sum_axis0_256x64", lambda: Tensor.empty(256, 64, dtype=dtypes.int32).sum(0)

OPS = {"TC": "OPT_TC", "UPCAST": "OPT_UPCAST", "UNROLL": "OPT_UNROLL", "LOCAL": "OPT_LOCAL", "THREAD": "OPT_THREAD",
       "GROUP": "OPT_GROUP", "GROUPTOP": "OPT_GROUPTOP", "NOLOCALS": "OPT_NOLOCALS", "PADTO": "OPT_PADTO", "SWAP": "OPT_SWAP"}

print("/* opt_heuristic_cases.h — generated by tools/gen_opt_heuristic_cases.py from tinygrad itself (NUM_CPU_THREADS=8,")
print(" * DEV=CPU): do not edit. {case name, kernel AST, tinygrad's kernel name, the opts hand_coded_optimizations picked}. */")
print("#define HEURISTIC_THREADS 8")
print("static const struct { const char *name; const char *const *ast; const char *kname; int nopts; "
      "struct { int op, axis, arg; } opts[8]; } heuristic_cases[] = {")
for name, fn in cases():
  lin = fn().schedule_linear()
  for i, call in enumerate(lin.src):
    ast = call.src[0]
    if ast.op is not Ops.SINK: continue
    opts, kname = heuristic_opts(ast)
    assert len(opts) <= 8, f"{name}: {len(opts)} opts"
    ol = ", ".join(f"{{{OPS[o.op.name]}, {-1 if o.axis is None else o.axis}, {0 if o.arg is None else o.arg}}}" for o in opts)
    print(f'  {{"{name}_{i}",\n   {chunks(sexp(ast))},\n   "{kname}", {len(opts)}, {{{ol}}}}},')
print("};")
