#!/usr/bin/env python3
"""gen_c_render_cases.py — ask tinygrad how it linearizes and renders a set of lowered CPU kernels, for
tests/test_render.c.

For each kernel: tinygrad's full_rewrite_to_sink output (the linearizer's input), its linearized list (one line per
UOp: "OP.dtype src-positions", after the IF/ENDIF line rewrite) and ClangRenderer's C source. Graph syntax:
src/uop/parse.h (nodes used more than once are written "(@k ...)" once and "@k" afterwards). A kernel listed with a
THREAD count is lowered with opts_to_apply=(Opt(THREAD, 0, n),), the split tinygrad's heuristic makes on big kernels.
Run with tinygrad importable:
  cd /work/tgref && NO_COLOR=1 NOOPT=1 DEV=CPU PYTHONPATH=. python3 /work/main/tools/gen_c_render_cases.py \
     > /work/main/tests/c_render_cases.h
"""
from dataclasses import replace
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import Ops
from tinygrad.codegen import full_rewrite_to_sink, line_rewrite, pm_linearize_cleanups
from tinygrad.codegen.late.linearizer import linearize
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.device import Device
from tinygrad.helpers import ansistrip
from tg_sexp import sexp, linear_lines, cstr, dtrepr

ren = Device["CPU"].renderer

def cases():
  f = lambda *s: Tensor.empty(*s)
  i32 = lambda *s: Tensor.empty(*s, dtype=dtypes.int32)
  yield "add_relu", lambda: (f(4, 8) + f(4, 8)).relu(), 0
  yield "sum_axis", lambda: f(4, 8).sum(1), 0
  yield "sum_all", lambda: f(64).sum(), 0
  yield "exp", lambda: f(32).exp(), 0
  yield "add_thread", lambda: f(16, 16) + f(16, 16), 2
  yield "max_thread", lambda: f(4, 8).max(1), 2
  yield "pad", lambda: f(10, 10).pad(((1, 1), (2, 0))), 0
  yield "int_ops", lambda: (i32(64) * 3 + i32(64)) // 2 % 5, 0
  yield "int_bits", lambda: ((i32(64) << 3) ^ (i32(64) >> 1)) | (i32(64) & 7), 0
  yield "cmp_bool", lambda: f(32) < f(32), 0
  yield "where_inf", lambda: (f(32) < 0).where(f(32), float("inf")), 0
  yield "cast_half", lambda: f(32).cast(dtypes.half), 0
  yield "half_math", lambda: Tensor.empty(32, dtype=dtypes.half) * 2 + 1, 0
  yield "half_exp", lambda: Tensor.empty(16, dtype=dtypes.half).exp(), 0
  yield "bf16_add", lambda: Tensor.empty(32, dtype=dtypes.bfloat16) + Tensor.empty(32, dtype=dtypes.bfloat16), 0
  yield "bf16_to_float", lambda: Tensor.empty(32, dtype=dtypes.bfloat16).cast(dtypes.float), 0
  yield "float_to_bf16", lambda: f(32).cast(dtypes.bfloat16), 0
  yield "int64_const", lambda: Tensor.empty(16, dtype=dtypes.int64) * 3 + 2**40, 0
  yield "uint64_const", lambda: Tensor.empty(16, dtype=dtypes.uint64) + (2**64 - 5), 0
  yield "uint32_ops", lambda: (Tensor.empty(16, dtype=dtypes.uint32) * 7 + 4000000000) // 3, 0
  yield "small_ints", lambda: Tensor.empty(16, dtype=dtypes.int8) * 3 + Tensor.empty(16, dtype=dtypes.uint8).cast(dtypes.int8), 0
  yield "int16_uint16", lambda: Tensor.empty(16, dtype=dtypes.int16) - Tensor.empty(16, dtype=dtypes.uint16).cast(dtypes.int16), 0
  yield "double_sqrt", lambda: Tensor.empty(16, dtype=dtypes.float64).sqrt() + 1.5, 0
  yield "double_to_half", lambda: Tensor.empty(16, dtype=dtypes.float64).cast(dtypes.half), 0
  yield "recip_trunc", lambda: f(32).reciprocal() + f(32).trunc(), 0
  yield "sin", lambda: f(16).sin(), 0
  yield "log2", lambda: f(16).log2(), 0
  yield "bitcast", lambda: f(16).bitcast(dtypes.int32) + 1, 0
  yield "bool_ops", lambda: (f(16) < 1) & (f(16) > 0), 0
  yield "matmul", lambda: f(4, 6) @ f(6, 5), 0
  yield "arange", lambda: Tensor.arange(20), 0
  yield "argmax", lambda: f(8, 8).argmax(1), 0
  yield "cumsum", lambda: f(16).cumsum(), 0
  yield "rand", lambda: Tensor.rand(16), 0
  yield "softmax", lambda: f(4, 16).softmax(1), 0
  yield "int_div_neg", lambda: i32(32) // i32(32) + i32(32) % i32(32), 0
  yield "pad", lambda: (f(10, 10) + 1).pad(((1, 1), (2, 0))), 0
  yield "flip", lambda: (f(8) + 1).flip(0), 0
  yield "cat", lambda: f(4).cat(f(6)), 0
  yield "gather", lambda: f(10)[Tensor.empty(4, dtype=dtypes.int32)], 0
  yield "pad_sum", lambda: f(10, 10).contiguous().pad(((0, 0), (0, 6))).reshape(10, 4, 4).sum(2), 0
  yield "conv2d", lambda: Tensor.empty(1, 2, 6, 6).conv2d(Tensor.empty(3, 2, 3, 3), padding=1), 0
  yield "max_pool", lambda: Tensor.empty(1, 1, 6, 6).max_pool2d(), 0
  yield "isinf", lambda: f(8).isinf(), 0
  yield "int64_idx", lambda: Tensor.empty(3, 2**30, dtype=dtypes.int8)[:, ::2**20].contiguous(), 0
  yield "long_mul", lambda: f(8).cast(dtypes.int64) * Tensor.empty(8, dtype=dtypes.int64) + 5, 0
  yield "rounding", lambda: f(8).ceil() + f(8).floor() + f(8).round(), 0
  yield "pow", lambda: f(8) ** f(8), 0
  yield "sigmoid", lambda: f(8).sigmoid(), 0
  yield "uint8_add", lambda: Tensor.empty(8, dtype=dtypes.uint8) + Tensor.empty(8, dtype=dtypes.uint8), 0
  yield "bool_where", lambda: Tensor.empty(8, dtype=dtypes.bool).where(Tensor.empty(8, dtype=dtypes.int8), 3), 0
  yield "half_sum", lambda: Tensor.empty(16, dtype=dtypes.half).sum(), 0
  yield "setitem", lambda: Tensor.zeros(10).contiguous()[2:8].assign(Tensor.ones(6)), 0
  yield "sum_thread", lambda: f(8, 16).sum(1), 2
  yield "transcendental_mix", lambda: (f(16).exp() + f(16).sin() * f(16).log2()).sqrt() + f(16).tan(), 0
  yield "gelu_erf", lambda: f(16).gelu() + f(16).erf() + f(16).softplus(), 0
  yield "half_sin_pow", lambda: Tensor.empty(8, dtype=dtypes.half).sin() ** Tensor.empty(8, dtype=dtypes.half), 0
  yield "double_exp_log", lambda: Tensor.empty(8, dtype=dtypes.float64).exp() + Tensor.empty(8, dtype=dtypes.float64).log(), 0
  yield "layernorm", lambda: f(4, 32).layernorm(), 0

print("/* c_render_cases.h — generated by tools/gen_c_render_cases.py from tinygrad itself: do not edit.")
print(" * {case, tinygrad's lowered SINK (linearizer input), its linearized list, ClangRenderer's C source}. */")
print("#pragma GCC diagnostic ignored \"-Woverlength-strings\" /* whole kernels as one literal each */")
print("static const struct { const char *name, *sink, *linear, *source; } c_render_cases[] = {")
for name, fn, threads in cases():
  calls = [c for c in fn().schedule_linear().src if c.src[0].op is Ops.SINK]
  for i, call in enumerate(calls):
    ast = call.src[0]
    if threads: ast = ast.replace(arg=replace(ast.arg, opts_to_apply=(Opt(OptOps.THREAD, 0, threads),)))
    sink = full_rewrite_to_sink(ast, ren)
    lst = line_rewrite(linearize(sink), pm_linearize_cleanups)
    src = ren.render(lst)
    print(f"  {{{cstr(f'{name}_{i}')},\n   {cstr(sexp(sink, dtype_name=dtrepr, preorder=True, var_form=True, mangle_names=False, strict=True))},\n   {cstr(linear_lines(lst))},\n   {cstr(src)}}},")
print("};")
