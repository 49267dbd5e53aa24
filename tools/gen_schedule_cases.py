#!/usr/bin/env python3
"""gen_schedule_cases.py — ask tinygrad how it schedules a table of tensor expressions, for tests/test_schedule.c.

For each expression (inputs are realized CPU buffers) it writes the tensor graph as tinygrad builds it (the SINK that
Tensor.schedule_linear would callify) and the kernel ASTs of the resulting schedule (the CALLs whose src[0] is a
SINK), in the s-expression format of src/uop/parse.h. Kernel ASTs are taken right after create_schedule (before the
PARAMs are resolved), so they are exactly what the scheduler emits.
Run with tinygrad importable:
  cd /work/tgref && NO_COLOR=1 DEV=CPU PYTHONPATH=. python3 /work/main/tools/gen_schedule_cases.py > /work/main/tests/schedule_cases.h
"""
import functools
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp, Ops, ParamArg, KernelInfo
from tinygrad.dtype import Invalid, AddrSpace
import tinygrad.schedule as sched

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
    if isinstance(a.device, tuple): raise RuntimeError("multi-device buffers have no syntax")
    return f"param:{a.slot}:{a.name or '-'}:{int(a.addrspace)}" + (f":{a.device}" if a.device is not None else "")
  if isinstance(a, KernelInfo): return f"kern:{a.name}"
  if u.op is Ops.RANGE: return "rng:" + "_".join(str(i) for i in a[:-1]) + ":" + a[-1].name
  if u.op is Ops.REDUCE: return f"red:{a[0].name}:{a[1]}"
  if u.op is Ops.PERMUTE: return "perm:" + ",".join(str(i) for i in a)
  if u.op is Ops.FLIP: return "flip:" + ",".join(str(int(i)) for i in a)
  if isinstance(a, str): return f"s:{a}"
  if a is None or u.op in (Ops.CAST, Ops.BITCAST): return None
  raise RuntimeError(f"no arg syntax for {u.op} {a!r}")

def sexpr(u, memo=None):
  # shared nodes are written once as (@k ...) definitions and referred to as @k afterwards (parse.h)
  if memo is None: memo = {}
  if u in memo: return f"@{memo[u]}"
  at = argtxt(u)
  head = f"{u.op.name}.{dtname(u.dtype)}" + (f"={at}" if at is not None else "")
  body = " ".join([head] + [sexpr(s, memo) for s in u.src])
  if len(u.src) and u.op not in (Ops.CONST,):
    memo[u] = len(memo)
    return f"(@{memo[u]} {body})"
  return f"({body})"

def chunks(txt, n=3000):
  # C compilers need only support 4095-character literals: long texts are arrays of pieces, joined by the test
  return "(const char *const[]){" + ", ".join(cstr(txt[i:i+n]) for i in range(0, max(len(txt), 1), n)) + ", NULL}"

def cstr(s): return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

# capture the kernel graph right after create_schedule
captured = []
orig_create = sched.create_schedule
def spy(s):
  ret = orig_create(s)
  captured.append(ret)
  return ret
sched.create_schedule = spy

def E(*shape, dtype=dtypes.float): return Tensor.empty(*shape, dtype=dtype).realize()

def cases():
  x, y = E(4, 8), E(8)
  yield "elementwise_chain", lambda: [((x+1)*2).exp().sqrt()]
  yield "broadcast_add", lambda: [x+y]
  yield "sum_all", lambda: [x.sum()]
  yield "sum_axis_plus1", lambda: [x.sum(1)+1]
  yield "exp_sum", lambda: [x.exp().sum()]
  yield "max_axis0", lambda: [x.max(0)]
  yield "softmax", lambda: [x.softmax(-1)]
  yield "log_softmax", lambda: [x.log_softmax(-1)]
  yield "sub_mean", lambda: [x - x.mean(1, keepdim=True)]
  yield "layernorm", lambda: [x.layernorm()]
  yield "argmax", lambda: [x.argmax(-1)]
  yield "pad", lambda: [x.pad(((1, 2), (0, 3)))]
  yield "shrink", lambda: [x[1:3, 2:7]+1]
  yield "permute", lambda: [x.permute(1, 0)+1]
  yield "flip", lambda: [x.flip(1)+1]
  yield "reshape", lambda: [x.reshape(2, 16)*2]
  yield "reshape_permute", lambda: [x.reshape(2, 2, 8).permute(2, 0, 1)+1]
  yield "expand", lambda: [y.reshape(1, 8).expand(4, 8)+x]
  yield "cat", lambda: [x.cat(x)]
  yield "cumsum", lambda: [x.cumsum(-1)]
  a, b = E(8, 16), E(16, 4)
  yield "matmul", lambda: [a@b]
  yield "matmul_relu", lambda: [(a@b).relu()]
  yield "matmul_ew_inputs", lambda: [a.exp()@(b*2)]
  img, w = E(1, 3, 8, 8), E(4, 3, 3, 3)
  yield "conv2d", lambda: [img.conv2d(w)]
  yield "conv2d_relu", lambda: [img.conv2d(w).relu()]
  yield "max_pool2d", lambda: [img.max_pool2d()]
  idx = E(5, dtype=dtypes.int32)
  yield "gather", lambda: [y[idx]]
  yield "two_outputs", lambda: [x+1, x*2]
  z = E(4, 8)
  yield "assign", lambda: [z.assign(z+1)]
  yield "contiguous_mid", lambda: [((x+1).contiguous()*2)]
  yield "where_cmp", lambda: [(x > 0).where(x, x*0.1)]
  yield "cast_int", lambda: [(x*3).cast(dtypes.int32)]
  yield "pad_add", lambda: [x.pad(((1, 2), (0, 3)))+1]
  yield "pad_value", lambda: [x.pad(((1, 1), (2, 2)), value=-1.0)*2]
  yield "shrink_pad", lambda: [x[1:3].pad(((1, 1), (0, 0)))+x[0:4]]
  yield "flip_both", lambda: [x.flip((0, 1))*x]
  yield "stack", lambda: [x.stack(x*2, dim=1)]
  yield "repeat", lambda: [y.repeat(3, 2)+1]
  yield "transpose_sum", lambda: [x.T.sum(1)]
  yield "sum_keepdim_div", lambda: [x / x.sum(1, keepdim=True)]
  yield "mean_all", lambda: [x.mean()]
  yield "var", lambda: [x.var(1)]
  yield "std", lambda: [x.std()]
  yield "logsumexp", lambda: [x.logsumexp(1)]
  yield "min_axis", lambda: [x.min(1)]
  yield "prod", lambda: [x.prod(0)]
  yield "any", lambda: [(x > 0).any(1)]
  yield "argmin", lambda: [x.argmin(0)]
  yield "reduce_then_ew", lambda: [x.sum(0).exp()*y]
  yield "two_reduces_same_input", lambda: [x.sum(1) + x.max(1)]
  yield "expand_reduce", lambda: [y.reshape(1, 8).expand(4, 8).sum(0)]
  c2, d2 = E(8, 16), E(16, 4)
  yield "two_matmuls_add", lambda: [a@b + c2@d2]
  yield "batched_matmul", lambda: [E(2, 3, 4)@E(2, 4, 5)]
  yield "matmul_bias", lambda: [(a@b) + E(4)]
  w2, img2 = E(8, 3, 3, 3), E(2, 3, 9, 9)
  yield "conv2d_stride_pad", lambda: [img2.conv2d(w2, stride=2, padding=1)]
  yield "conv2d_groups", lambda: [E(1, 4, 6, 6).conv2d(E(4, 2, 3, 3), groups=2)]
  yield "conv2d_dilation", lambda: [img2.conv2d(w2, dilation=2)]
  yield "avg_pool2d", lambda: [img.avg_pool2d()]
  yield "img_plus_conv", lambda: [(img+1).conv2d(w)]
  yield "sparse_xent", lambda: [E(4, 10).sparse_categorical_crossentropy(E(4, dtype=dtypes.int32))]
  q, k, v = E(1, 2, 4, 8), E(1, 2, 4, 8), E(1, 2, 4, 8)
  yield "sdpa", lambda: [q.scaled_dot_product_attention(k, v)]
  yield "one_hot", lambda: [idx.one_hot(10).cast(dtypes.float32)]
  yield "gather_2d", lambda: [x.gather(1, E(4, 3, dtype=dtypes.int32))]
  yield "where_broadcast", lambda: [(y > 0).where(x, 0.0)]
  yield "relu_sigmoid", lambda: [x.relu().sigmoid()]
  yield "half_cast", lambda: [x.cast(dtypes.half)+1]
  yield "int_math", lambda: [E(8, dtype=dtypes.int32) * 3 + 1]
  yield "bool_and", lambda: [(x > 0) & (x < 1)]
  yield "realize_three", lambda: [x+1, x*2, x-3]
  yield "shared_input_outputs", lambda: [x.sum(1), x.exp()]
  u1 = E(4, 8)
  yield "assign_add", lambda: [u1.assign(u1 + x)]
  u2 = E(4, 8)
  yield "assign_transpose", lambda: [E(8, 8).realize().assign(E(8, 8).realize().T)] if False else [u2.assign(u2 * 2).sum()]
  u3 = E(8, 8)
  yield "assign_self_T", lambda: [u3.assign(u3.T)]
  u4 = E(4, 8)
  yield "assign_view", lambda: [u4[1:3].assign(x[0:2])]
  big = E(1 << 16)
  yield "big_sum_split", lambda: [big.sum()]
  big2 = E(256, 1024)
  yield "big_sum_axis", lambda: [big2.sum(0)]
  yield "softmax_big", lambda: [big2.softmax(-1)]
  many = [E(2, 3) for _ in range(40)]
  yield "cat_40", lambda: [many[0].cat(*many[1:])]
  yield "sum_of_40", lambda: [functools.reduce(lambda p, q: p + q, many)]
  z0 = E(0, 4)
  yield "zero_size_add", lambda: [z0 + 1]
  yield "zero_size_sum", lambda: [z0.sum(0)]
  yield "zero_size_max", lambda: [z0.max(0)]
  yield "bitcast_shrink", lambda: [x.bitcast(dtypes.uint8)+1]
  yield "bitcast_grow", lambda: [E(4, 8, dtype=dtypes.uint8).bitcast(dtypes.float32)*2]
  yield "bitcast_same", lambda: [x.bitcast(dtypes.int32)+1]
  yield "min_uint64", lambda: [E(3, 4, dtype=dtypes.uint64).min()]
  many100 = [E(2) for _ in range(100)]
  yield "cat_100", lambda: [many100[0].cat(*many100[1:])]
  yield "one_input_70_uses", lambda: [functools.reduce(lambda p, q: p + q, [x * float(i) for i in range(70)])]

if __name__ == "__main__":
  print("/* schedule_cases.h — generated by tools/gen_schedule_cases.py from tinygrad itself (DEV=CPU): do not edit.")
  print(" * {name, tensor graph SINK, kernel count, kernel ASTs joined by newlines} in src/uop/parse.h's format; long texts are\n * split into pieces of at most 3000 characters (NULL-terminated arrays) that the test joins. */")
  print("static const struct { const char *name; const char *const *graph; int nkernels; const char *const *kernels; } schedule_cases[] = {")
  for name, fn in cases():
    outs = fn()
    sink = UOp.sink(*[t.uop for t in outs])
    graph = sexpr(sink)
    captured.clear()
    Tensor.schedule_linear(*outs)
    kernels = [k.src[0] for lin in captured for k in lin.src if k.op is Ops.CALL and k.src[0].op is Ops.SINK]
    print(f"  {{{cstr(name)},\n   {chunks(graph)},\n   {len(kernels)},\n   {chunks(chr(10).join(sexpr(k) for k in kernels))}}},")
  print("};")

