#!/usr/bin/env python3
"""gen_cuda_cases.py — ask tinygrad how it optimizes, lowers, linearizes and renders a set of kernels for CUDA (no GPU
needed: DEV=NULL:CUDA:sm_90 renders with CUDARenderer), for tests/test_render.c and tests/test_codegen.c.

For each kernel: its AST (schedule_linear, before opts), the opts tinygrad's hand_coded_optimizations picked for it
(lowered again with exactly those as opts_to_apply, so the lowering check does not depend on the heuristic), tinygrad's
full_rewrite_to_sink output (the linearizer input), its linearized list ("OP.dtype src-positions" per line, after the
IF/ENDIF line rewrite) and CUDARenderer's source. Graph syntax: src/uop/parse.h.
Run with tinygrad importable (writes the header on stdout):
  NO_COLOR=1 DEV=NULL:CUDA:sm_90 PYTHONPATH=/work/tgref /usr/bin/python3 tools/gen_cuda_cases.py > tests/cuda_cases.h
"""
import os, sys
os.environ.setdefault("TC", "0")  # the heuristic without tensor cores, except in the tc_* cases (Context(TC=1) there)
from dataclasses import replace
from tinygrad import Tensor, dtypes, Device
from tinygrad.uop.ops import Ops
from tinygrad.codegen import full_rewrite_to_sink, line_rewrite, pm_linearize_cleanups
from tinygrad.codegen.late.linearizer import linearize
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.helpers import ansistrip, Context
from tg_sexp import sexp, linear_lines, cstr, chunks

ren = Device[Device.DEFAULT].renderer
assert type(ren).__name__ == "CUDARenderer", f"run with DEV=NULL:CUDA:sm_90 (got {type(ren).__name__})"

def opt_arg(o):
  if o.op is OptOps.TC:  # (tc_select, tc_opt, use_tc) packed as src/codegen/opt_tc.c opt_tc_arg
    sel, tco, use = o.arg
    return ((use & 0xff) << 16) | ((tco & 0xff) << 8) | ((sel + 1) & 0xff)
  return o.arg if o.arg is not None else 0
def opt_text(o): return f"{o.op.name}:{o.axis if o.axis is not None else -1}:{opt_arg(o)}"

def cases():
  f = lambda *s: Tensor.empty(*s)
  h = lambda *s: Tensor.empty(*s, dtype=dtypes.half)
  bf = lambda *s: Tensor.empty(*s, dtype=dtypes.bfloat16)
  i32 = lambda *s: Tensor.empty(*s, dtype=dtypes.int32)
  yield "relu_fma", lambda: (f(1 << 20) * f(1 << 20) + f(1 << 20)).relu(), None
  yield "add_small", lambda: f(4, 8) + f(4, 8), None
  yield "sum_all", lambda: f(4096).sum(), None
  yield "sum_axis", lambda: f(64, 1024).sum(1), None
  yield "max_axis", lambda: f(32, 256).max(1), None
  yield "sum_cols", lambda: f(256, 64).sum(0), None
  yield "matmul", lambda: f(64, 64) @ f(64, 64), None
  yield "matmul_big", lambda: f(256, 512) @ f(512, 128), None
  yield "matvec", lambda: f(1, 512) @ f(512, 1024), None
  yield "softmax", lambda: f(32, 128).softmax(1), None
  yield "where_inf", lambda: (f(256) < 0).where(f(256), float("inf")), None
  yield "exp_log", lambda: f(256).exp() + f(256).log2() + f(256).sqrt(), None
  yield "sin_recip", lambda: f(256).sin() + f(256).reciprocal() + f(256).trunc(), None
  yield "bitcast", lambda: f(256).bitcast(dtypes.int32) + 1, None
  yield "int_ops", lambda: (i32(1024) * 3 + i32(1024)) // 2 % 5, None
  yield "uint_long", lambda: Tensor.empty(256, dtype=dtypes.uint32) * 7 + Tensor.empty(256, dtype=dtypes.int64).cast(dtypes.uint32), None
  yield "half_math", lambda: h(1024) * 2 + h(1024), None
  yield "half_exp", lambda: h(256).exp(), None
  yield "half_sum", lambda: h(64, 64).sum(1), None
  yield "half_cast", lambda: f(1024).cast(dtypes.half), None
  yield "bf16_add", lambda: bf(1024) + bf(1024), None
  yield "bf16_cast", lambda: bf(1024).cast(dtypes.float) * 2, None
  yield "bool_ops", lambda: (f(256) < 1) & (f(256) > 0), None
  yield "big_dims", lambda: f(70000, 3, 5) + 1, [Opt(OptOps.NOLOCALS, None, None)]
  yield "noopt_3d", lambda: f(4, 100000, 3) * 2, []
  yield "nolocals", lambda: f(4096) + 1, [Opt(OptOps.NOLOCALS, None, None)]
  yield "group_sum", lambda: f(64, 1024).sum(1), [Opt(OptOps.GROUP, 0, 16)]
  yield "grouptop_local", lambda: f(64, 1024).sum(1), [Opt(OptOps.LOCAL, 0, 4), Opt(OptOps.GROUPTOP, 0, 16)]
  yield "grouptop_upcast", lambda: f(64, 1024).sum(1), [Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.GROUPTOP, 0, 8)]
  yield "local2", lambda: f(64, 64) + f(64, 64).T, [Opt(OptOps.LOCAL, 0, 8), Opt(OptOps.LOCAL, 1, 4)]
  yield "transpose_2d", lambda: f(64, 48).T.contiguous(), []
  yield "grid_merge", lambda: f(5, 3, 70000).permute(2, 1, 0).contiguous(), []
  yield "grid_locals", lambda: f(8, 16, 32).permute(2, 1, 0).contiguous(), [Opt(OptOps.LOCAL, 0, 4), Opt(OptOps.LOCAL, 1, 4), Opt(OptOps.LOCAL, 2, 8)]
  yield "cumsum", lambda: f(256).cumsum(), None
  yield "argmax", lambda: f(16, 64).argmax(1), None
  yield "conv2d", lambda: Tensor.empty(1, 4, 16, 16).conv2d(Tensor.empty(8, 4, 3, 3), padding=1), None
  yield "pad", lambda: (f(30, 30) + 1).pad(((1, 1), (2, 0))), None
  # tensor cores (mma.sync m16n8k16): the heuristic with TC=1, and fixed lists around a TC opt
  yield "tc_half", lambda: h(64, 64) @ h(64, 64), None
  yield "tc_half_big", lambda: h(256, 256) @ h(256, 512), None
  yield "tc_bf16", lambda: bf(64, 128) @ bf(128, 64), None
  yield "tc_half_float_out", lambda: (h(128, 64) @ h(64, 128)).cast(dtypes.float), None
  yield "tc_fixed_upcast", lambda: h(128, 128) @ h(128, 128), [Opt(OptOps.TC, 0, (-1, 0, 1)), Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.UPCAST, 1, 2)]
  yield "tc_fixed_local", lambda: h(128, 128) @ h(128, 128), [Opt(OptOps.TC, 0, (-1, 0, 1)), Opt(OptOps.LOCAL, 0, 2), Opt(OptOps.UNROLL, 0, 2)]

print("/* cuda_cases.h — generated by tools/gen_cuda_cases.py from tinygrad itself (DEV=NULL:CUDA:sm_90): do not edit.")
print(" * {case, kernel AST, opts (tinygrad's heuristic picks, or the case's own list), kernel name, tinygrad's lowered")
print(" * SINK for CUDARenderer, its linearized list, CUDARenderer's source}. Graphs are NULL-terminated string pieces. */")
print("#pragma GCC diagnostic ignored \"-Woverlength-strings\" /* whole kernels as one literal each */")
print("static const struct { const char *name; const char *const *ast; const char *opts; int heuristic; const char *kname;")
print("                      const char *const *lowered; const char *const *linear, *const *source; } cuda_cases[] = {")
def tc_context(name): return Context(TC=1 if name.startswith("tc_") else 0)
for name, fn, opts in cases():
 with tc_context(name):
  calls = [c for c in fn().schedule_linear().src if c.src[0].op is Ops.SINK]
  for i, call in enumerate(calls):
    ast = call.src[0]
    heuristic = opts is None
    if heuristic: use = full_rewrite_to_sink(ast, ren).arg.applied_opts
    else: use = tuple(opts)
    a2 = ast.replace(arg=replace(ast.arg, opts_to_apply=use))
    try:
      sink = full_rewrite_to_sink(a2, ren)
    except Exception as e:
      print(f"skip {name}_{i}: {e}", file=sys.stderr); continue
    lst = line_rewrite(linearize(sink), pm_linearize_cleanups)
    src = ren.render(lst)
    kname = ansistrip(sink.arg.name)
    print(f"  {{{cstr(f'{name}_{i}')}, {chunks(sexp(ast))},\n   {cstr(','.join(opt_text(o) for o in use))}, {int(heuristic)}, {cstr(kname)},\n"
          f"   {chunks(sexp(sink))},\n   {chunks(linear_lines(lst))},\n   {chunks(src)}}},")
print("};")
