#!/usr/bin/env python3
"""gen_codegen_cases.py — ask tinygrad for kernel ASTs (schedule_linear, NOOPT) and their lowered form
(codegen.full_rewrite_to_sink with the CPU renderer), for tests/test_codegen.c.

Writes tests/codegen_cases.h: {case name, AST s-expression, lowered s-expression, kernel name, thread opt}, each graph as
a NULL-terminated list of string pieces (ISO C caps a string literal at 4095 characters).
Graph syntax: src/uop/parse.h. A kernel the CPU heuristic would split over `threads` cores is lowered by tinygrad with
opts_to_apply=(Opt(THREAD, axis, threads),) — the one opt tinygrad.c applies without opt search.
Run with tinygrad importable:
  cd /work/tgref && NO_COLOR=1 NOOPT=1 NUM_CPU_THREADS=8 DEV=CPU PYTHONPATH=. python3 /work/main/tools/gen_codegen_cases.py \
     > /work/main/tests/codegen_cases.h
"""
from dataclasses import replace
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import Ops, AxisType
from tinygrad.codegen import full_rewrite_to_sink
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.device import Device
from tinygrad.helpers import ansistrip, prod
from tg_sexp import sexp, chunks

ren = Device["CPU"].renderer
THREADS = ren.global_max[0]

def thread_opt(ast):
  # tinygrad's heuristic THREAD split (opt/heuristic.py), computed on the AST after range simplification
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.uop.ops import resolve
  from tinygrad.codegen import graph_rewrite
  from tinygrad.uop.symbolic import sym
  from tinygrad.codegen.simplify import pm_flatten_range, pm_simplify_ranges, pm_split_ranges, pm_load_collapse
  from tinygrad.schedule.rangeify import pm_mops
  s = graph_rewrite(ast, pm_mops, bottom_up=True)
  s = graph_rewrite(s, pm_load_collapse)
  s = graph_rewrite(s, pm_split_ranges+pm_flatten_range, ctx={})
  s = graph_rewrite(s, sym+pm_flatten_range)
  s = graph_rewrite(s, pm_flatten_range+pm_simplify_ranges, ctx={})
  k = Scheduler(s, ren)
  for threads in [32,16,12,8,6,5,4,3,2]:
    if threads > THREADS or resolve(prod(k.full_shape) // (128 << 10) < threads): continue
    for axis in k.axes_of(AxisType.WEAK):
      if k.full_shape[axis] % threads == 0:
        try:
          k.apply_opt(Opt(OptOps.THREAD, axis, threads)); return Opt(OptOps.THREAD, axis, threads)
        except Exception: pass
        break
  return None

def cases():
  yield "ew_relu", lambda: (Tensor.empty(16,16)*Tensor.empty(16,16)+1).relu()
  yield "ew_big", lambda: Tensor.empty(1024,1024)+Tensor.empty(1024,1024)
  yield "sum_axis", lambda: Tensor.empty(1024,512).sum(1)
  yield "sum_all", lambda: Tensor.empty(4096).sum()
  yield "max_axis", lambda: Tensor.empty(32,64).max(0)
  yield "transpose", lambda: Tensor.empty(24,40).T.contiguous()
  yield "pad", lambda: (Tensor.empty(10,10)+1).pad(((1,1),(2,0)))
  yield "int_div", lambda: Tensor.empty(64, dtype=dtypes.int32)//3
  yield "int_mod", lambda: Tensor.empty(64, dtype=dtypes.int32)%5
  yield "int_div_pow2", lambda: Tensor.empty(64, dtype=dtypes.int32)//4
  yield "cast_half", lambda: Tensor.empty(64).cast(dtypes.half)
  yield "exp2", lambda: Tensor.empty(64).exp2()
  yield "sin", lambda: Tensor.empty(64).sin()
  yield "pow", lambda: Tensor.empty(64)**Tensor.empty(64)
  yield "max_int", lambda: Tensor.empty(64, dtype=dtypes.int32).max()
  yield "idx_gather", lambda: Tensor.empty(32,8)[Tensor.empty(4, dtype=dtypes.int32)]
  yield "softmax", lambda: Tensor.empty(16,32).softmax(1)
  yield "log2", lambda: Tensor.empty(64).log2()
  yield "sqrt", lambda: Tensor.empty(64).sqrt()
  yield "recip", lambda: Tensor.empty(64).reciprocal()
  yield "where_cmp", lambda: (Tensor.empty(64) < 0.5).where(Tensor.empty(64), 2.0)
  yield "matmul", lambda: Tensor.empty(16,32)@Tensor.empty(32,8)
  yield "sum_keep_big", lambda: Tensor.empty(512,1024).sum(0)
  yield "arange", lambda: Tensor.arange(100)+Tensor.empty(100)
  yield "long_idx", lambda: Tensor.empty(3, 2**30, dtype=dtypes.int8)[:, ::2**20].contiguous()
  yield "std", lambda: Tensor.empty(8, 16).std(1)
  yield "argmax", lambda: Tensor.empty(8, 16).argmax(1)
  yield "cumsum", lambda: Tensor.empty(32).cumsum(0)
  yield "conv2d", lambda: Tensor.empty(1,3,8,8).conv2d(Tensor.empty(4,3,3,3), padding=1).relu()
  yield "cat", lambda: Tensor.empty(4,5).cat(Tensor.empty(4,3), dim=1)
  yield "rand", lambda: Tensor.rand(64)
  yield "flip", lambda: Tensor.empty(6,7).flip(1).contiguous()
  yield "maxpool", lambda: Tensor.empty(1,2,8,8).max_pool2d()
  yield "int64_math", lambda: Tensor.empty(64, dtype=dtypes.int64)*3+Tensor.empty(64, dtype=dtypes.int64)//7
  yield "uint8_shift", lambda: Tensor.empty(64, dtype=dtypes.uint8) >> 2
  yield "bool_ops", lambda: (Tensor.empty(64) > 0.5) & (Tensor.empty(64) < 2.0)
  yield "half_exp", lambda: Tensor.empty(64, dtype=dtypes.half).exp()
  yield "double_sin", lambda: Tensor.empty(64, dtype=dtypes.double).sin()
  yield "bf16_add", lambda: Tensor.empty(64, dtype=dtypes.bfloat16)+1
  yield "f64_to_half", lambda: Tensor.empty(64, dtype=dtypes.double).cast(dtypes.half)
  yield "mean_big", lambda: Tensor.empty(2048, 512).mean(1)
  yield "sum_var", lambda: Tensor.empty(1024,1024).sum(0)
  yield "sigmoid", lambda: Tensor.empty(64).sigmoid()
  yield "trunc_floor", lambda: Tensor.empty(64).floor()
  yield "layernorm", lambda: Tensor.empty(4, 32).layernorm()
  yield "gelu", lambda: Tensor.empty(64).gelu()
  yield "erf", lambda: Tensor.empty(64).erf()
  yield "logsumexp", lambda: Tensor.empty(4, 16).logsumexp(1)
  yield "tanh", lambda: Tensor.empty(64).tanh()
  yield "avgpool", lambda: Tensor.empty(1,2,8,8).avg_pool2d()
  yield "prod", lambda: Tensor.empty(4, 8).prod(1)
  yield "any", lambda: (Tensor.empty(4, 8) > 0).any(1)
  yield "clamp_int", lambda: Tensor.empty(64, dtype=dtypes.int32).clamp(-3, 7)
  yield "eye", lambda: Tensor.eye(8) + Tensor.empty(8, 8)
  yield "randn", lambda: Tensor.randn(16)
  yield "randint", lambda: Tensor.randint(16, low=0, high=10)
  yield "one_hot", lambda: Tensor.empty(8, dtype=dtypes.int32).one_hot(10)
  yield "repeat", lambda: Tensor.empty(3, 4).repeat(2, 3).contiguous()
  yield "min_uint8", lambda: Tensor.empty(64, dtype=dtypes.uint8).min()
  yield "idiv_neg", lambda: Tensor.empty(64, dtype=dtypes.int32).div(Tensor.empty(64, dtype=dtypes.int32), rounding_mode="floor")
  yield "mod_tensor", lambda: Tensor.empty(64, dtype=dtypes.int32) % Tensor.empty(64, dtype=dtypes.int32)
  yield "shift_int", lambda: Tensor.empty(64, dtype=dtypes.int32) << 3
  yield "bitcast", lambda: Tensor.empty(64).bitcast(dtypes.int32) + 1
  yield "bench_ew", lambda: (Tensor.empty(4096, 4096)*Tensor.empty(4096, 4096)+Tensor.empty(4096, 4096)).relu()
  yield "bench_sum", lambda: Tensor.empty(4096*4096).sum()
  yield "bench_softmax", lambda: Tensor.empty(4096, 1024).softmax(1)
  yield "matmul_big", lambda: Tensor.empty(512, 512)@Tensor.empty(512, 512)
  yield "conv_stride", lambda: Tensor.empty(1,4,16,16).conv2d(Tensor.empty(8,4,3,3), stride=2, dilation=2, padding=2)
  yield "pad_reflect", lambda: Tensor.empty(1,1,6,6).pad((2,2,2,2), mode="reflect")
  yield "pad_replicate", lambda: Tensor.empty(1,1,6,6).pad((1,2,1,2), mode="replicate")
  yield "argmin", lambda: Tensor.empty(10, 7).argmin(0)
  yield "mixed_int8", lambda: Tensor.empty(64, dtype=dtypes.int8) + Tensor.empty(64)
  yield "uint64_ops", lambda: (Tensor.empty(64, dtype=dtypes.uint64) * 3) // 5
  yield "int64_mod", lambda: Tensor.empty(64, dtype=dtypes.int64) % -7
  yield "half_sum", lambda: Tensor.empty(256, dtype=dtypes.half).sum()
  yield "double_mm", lambda: Tensor.empty(8, 8, dtype=dtypes.double) @ Tensor.empty(8, 8, dtype=dtypes.double)
  yield "isnan", lambda: Tensor.empty(64).isnan()
  yield "isinf", lambda: Tensor.empty(64).isinf()
  yield "ceil_round", lambda: Tensor.empty(64).ceil() + Tensor.empty(64).round()
  yield "sign_abs", lambda: Tensor.empty(64).sign() * Tensor.empty(64).abs()
  yield "elu", lambda: Tensor.empty(64).elu()
  yield "softplus", lambda: Tensor.empty(64).softplus()
  yield "hardswish", lambda: Tensor.empty(64).hardswish()
  yield "sinh", lambda: Tensor.empty(64).sinh()
  yield "asin", lambda: Tensor.empty(64).asin()
  yield "atan", lambda: Tensor.empty(64).atan()
  yield "cos_tan", lambda: Tensor.empty(64).cos() + Tensor.empty(64).tan()
  yield "log_exp", lambda: Tensor.empty(64).log() + Tensor.empty(64).exp()
  yield "rsqrt", lambda: Tensor.empty(64).rsqrt()
  yield "pow_const", lambda: Tensor.empty(64) ** 3.5
  yield "pow_int", lambda: Tensor.empty(64, dtype=dtypes.int32) ** 3
  yield "int_div_trunc", lambda: Tensor.empty(64, dtype=dtypes.int32).div(Tensor.empty(64, dtype=dtypes.int32), rounding_mode="trunc")
  yield "float_floordiv", lambda: Tensor.empty(64).div(Tensor.empty(64), rounding_mode="floor")
  yield "where_nan", lambda: (Tensor.empty(64) > 0).where(Tensor.empty(64), float("nan"))
  yield "bool_to_float", lambda: (Tensor.empty(64) > 0).float() + 1
  yield "xor_not", lambda: ~(Tensor.empty(64, dtype=dtypes.int32) ^ 5)
  yield "cumsum_big", lambda: Tensor.empty(512).cumsum(0)
  yield "gather", lambda: Tensor.empty(8, 10).gather(1, Tensor.empty(8, 3, dtype=dtypes.int32))
  yield "masked_select_like", lambda: Tensor.empty(16, 16).triu() + Tensor.empty(16, 16).tril(-1)
  yield "linspace", lambda: Tensor.linspace(0, 1, 50) + Tensor.empty(50)
  def assign_case():
    a = Tensor.empty(64).realize()
    return a.assign(a + 1)
  yield "assign", assign_case
  def setitem_case():
    a = Tensor.empty(16).realize()
    a[2:9] = 3.0
    return a
  yield "setitem", setitem_case
  yield "multi_reduce", lambda: Tensor.empty(32, 32).sum(1).max()
  yield "permute_sum", lambda: Tensor.empty(4, 8, 16).permute(2, 0, 1).sum(2)
  yield "sum_times_max", lambda: Tensor.empty(8, 16).sum(1) * Tensor.empty(8, 16).max(1)
  from tinygrad import Variable
  yield "var_shrink", lambda: (Tensor.empty(64)[:Variable("n", 1, 64).bind(10)]+1).contiguous()
  yield "var_sum", lambda: Tensor.empty(64, 64)[:Variable("m", 1, 64).bind(7)].sum(0)
  yield "var_big", lambda: (Tensor.empty(8192, 256)[:Variable("k", 1, 8192).bind(100)]*2).contiguous()

print("/* codegen_cases.h — generated by tools/gen_codegen_cases.py from tinygrad itself: do not edit.")
print(" * {name, kernel AST, tinygrad's full_rewrite_to_sink output for the CPU renderer, kernel name, thread opt}. */")
print("static const struct { const char *name; const char *const *ast, *const *lowered; const char *kname; int thread_axis, threads; } codegen_cases[] = {")
for name, fn in cases():
  try: lin = fn().linear_with_vars()[0]
  except Exception as e:
    import sys; print(f"skip {name}: {e}", file=sys.stderr); continue
  for i, call in enumerate(lin.src):
    ast = call.src[0]
    if ast.op is not Ops.SINK: continue
    opt = thread_opt(ast)
    a2 = ast if opt is None else ast.replace(arg=replace(ast.arg, opts_to_apply=(opt,)))
    low = full_rewrite_to_sink(a2, ren)
    kname = ansistrip(low.arg.name)
    print(f'  {{"{name}_{i}",\n   {chunks(sexp(ast))},\n   {chunks(sexp(low))},\n   "{kname}", {opt.axis if opt else -1}, {opt.arg if opt else 0}}},')
print("};")
