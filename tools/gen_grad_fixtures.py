#!/usr/bin/python3
"""gen_grad_fixtures.py — writes the PyTorch golden fixtures of the gradient-parity and optimizer-parity suites
(tests/test_grad_parity.c, tests/test_optim_parity.c) to tests/fixtures/grad_*.tgf and tests/fixtures/optim_mlp.tgf.

Run with Debian's python (python3-torch 1.13, numpy):   /usr/bin/python3 tools/gen_grad_fixtures.py [--check] [--list]
  --check   also runs every gradient case through tinygrad (/work/tgref, DEV=CPU: Tensor.backward) and fails unless
            tinygrad's forward result and gradients agree with the fixture within the case's tolerance, and runs the
            optimizer cases through tinygrad's nn.optim the same way.
  --list    prints one line per case.     --only S   only the cases whose name contains S.
The output is deterministic (fixed seeds): regenerating gives identical bytes.

The files use the format of tools/gen_fixtures.py (see its header; this script imports its packing and its op table),
with these additive conventions:

Gradient cases (grad_<group>.tgf). params hold the op's own parameters plus
  wrt=i,j,...  the inputs whose gradients are checked (indices into the op's inputs; every other input, e.g. an int
               index tensor, takes no gradient);
  nout=K       the op's number of outputs (default 1).
  inputs  := the op's inputs (float inputs may carry a view: the gradient is taken w.r.t. the STORED tensor, before
             the view), then K upstream gradients, one per output (same shape as that output, the op's dtype).
  outputs := the op's K forward outputs, then the gradient of  loss = sum_k sum(out_k * upstream_k)  w.r.t. each input
             listed in wrt, in that order (the stored input's shape and dtype).
  Expected values are computed by torch autograd in float64 from the stored inputs and rounded to the stored dtype.
  Ops are those of gen_fixtures.py (same names and params) plus the nn layers and losses defined below (LAYER_OPS).

Optimizer cases (optim_mlp.tgf), op "optim": one case per optimizer step. params: optim=sgd|adam|adamw|lamb, lr, the
  optimizer's hyper-parameters (momentum, nesterov, weight_decay, b1, b2, eps), step=k (1..10), model=mlp, and
  optionally lr2: the learning rate from step 6 on (set on the existing optimizer: the lr is a tensor).
  inputs  := x (8,4) float32, target (8,3) float32, then the initial parameters w1 (4,6), b1 (6), w2 (6,3), b2 (3).
  outputs := the parameters w1, b1, w2, b2 after step k.
  The model: out = relu(x @ w1 + b1) @ w2 + b2; loss = mean((out - target)^2); each step is zero_grad, backward,
  step. A harness builds the model and optimizer at step=1 and runs one more step per case. torch has no LAMB: it is
  written here in torch ops following tinygrad's nn/optim.py. SGD/Adam/AdamW are torch.optim's (they equal tinygrad's
  formulas; the --check run confirms it).

Where tinygrad's gradient differs from torch's the torch expression is adapted to tinygrad's answer and the case has
flag bit 0 set (TINYGRAD_GRAD below says which and why).
"""
import math, os, struct, sys
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402  (format, inputs, op table)

F = torch.nn.functional
In, uni, ints = gf.In, gf.uni, gf.ints
OUT_DIR = gf.OUT_DIR
TINYGRAD = gf.TINYGRAD
TOL32 = (1e-5, 1e-3)    # float32 gradients, compared with float64 truth
TOL64 = (1e-10, 1e-7)

# ------------------------------------------------------------------------------------------------ layer and loss ops
# name -> (torch fn(p, *tensors), tinygrad fn(p, *tensors)); tinygrad's definitions (nn/__init__.py, mixin/op.py).
def _t_batchnorm(p, x, w, b):
  axes = [a for a in range(x.dim()) if a != 1]
  shape = [1, -1] + [1] * (x.dim() - 2)
  mean = x.mean(axes)
  var = ((x - mean.reshape(shape)) ** 2).mean(axes)
  return (x - mean.reshape(shape)) * w.reshape(shape) * (var + p.get("eps", 1e-5)).rsqrt().reshape(shape) + b.reshape(shape)
def _g_batchnorm(p, x, w, b):
  from tinygrad import nn
  from tinygrad.helpers import Context
  bn = nn.BatchNorm(x.shape[1], eps=p.get("eps", 1e-5), track_running_stats=bool(p.get("track_running_stats", 1)))
  bn.weight, bn.bias = w, b
  with Context(TRAINING=1): return bn(x)
def _t_layernorm(p, x, w, b):
  nd = p.get("ndims", 1)
  return F.layer_norm(x, x.shape[-nd:], w, b, p.get("eps", 1e-5))
def _g_layernorm(p, x, w, b):
  from tinygrad import nn
  ln = nn.LayerNorm(x.shape[-p.get("ndims", 1):], eps=p.get("eps", 1e-5))
  ln.weight, ln.bias = w, b
  return ln(x)
def _t_rmsnorm(p, x, w):
  return x * (x.square().mean(-1, keepdim=True) + p.get("eps", 1e-6)).rsqrt() * w
def _g_rmsnorm(p, x, w):
  from tinygrad import nn
  n = nn.RMSNorm(x.shape[-1], eps=p.get("eps", 1e-6))
  n.weight = w
  return n(x)
def _t_groupnorm(p, x, w, b):
  return F.group_norm(x, p["num_groups"], w, b, p.get("eps", 1e-5))
def _g_groupnorm(p, x, w, b):
  from tinygrad import nn
  n = nn.GroupNorm(p["num_groups"], x.shape[1], eps=p.get("eps", 1e-5))
  n.weight, n.bias = w, b
  return n(x)
def _t_embedding(p, idx, w): return F.embedding(idx.to(torch.int64), w)
def _g_embedding(p, idx, w):
  from tinygrad import nn
  e = nn.Embedding(w.shape[0], w.shape[1])
  e.weight = w
  return e(idx)
def _t_linear(p, x, w, b=None): return F.linear(x, w, b)
def _g_linear(p, x, w, b=None): return x.linear(w.transpose(), b)
def _t_conv_t(p, x, w, b=None):
  return F.conv_transpose2d(x, w, b, stride=p.get("stride", 1), padding=p.get("padding", 0),
                            output_padding=p.get("output_padding", 0), groups=p.get("groups", 1),
                            dilation=p.get("dilation", 1))
def _g_conv_t(p, x, w, b=None):
  return x.conv_transpose2d(w, b, groups=p.get("groups", 1), stride=p.get("stride", 1), dilation=p.get("dilation", 1),
                            padding=p.get("padding", 0), output_padding=p.get("output_padding", 0))
def _t_sdpa(p, q, k, v):
  qk = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
  if p.get("is_causal"):
    mask = torch.ones(qk.shape[-2:], dtype=torch.bool).tril()
    qk = qk + torch.where(mask, 0.0, -math.inf).to(qk.dtype)
  return qk.softmax(-1) @ v
def _g_sdpa(p, q, k, v): return q.scaled_dot_product_attention(k, v, is_causal=bool(p.get("is_causal")))

def _red(p): return p.get("reduction", "mean")
def _t_ce(p, x, y):
  if y.dtype.is_floating_point: return F.cross_entropy(x, y, reduction=_red(p), label_smoothing=p.get("label_smoothing", 0.0))
  return F.cross_entropy(x, y.to(torch.int64), reduction=_red(p), label_smoothing=p.get("label_smoothing", 0.0))
def _g_ce(p, x, y): return x.cross_entropy(y, reduction=_red(p), label_smoothing=p.get("label_smoothing", 0.0))
def _t_scce(p, x, y):
  # tinygrad: classes on the last axis; ignore_index -1 means none
  ii = p.get("ignore_index", -1)
  xx = x.reshape(-1, x.shape[-1])
  yy = y.reshape(-1).to(torch.int64)
  r = F.cross_entropy(xx, yy, reduction=_red(p), label_smoothing=p.get("label_smoothing", 0.0),
                      ignore_index=ii if ii != -1 else -100)
  return r.reshape(y.shape) if _red(p) == "none" else r
def _g_scce(p, x, y):
  return x.sparse_categorical_crossentropy(y, ignore_index=p.get("ignore_index", -1),
                                           label_smoothing=p.get("label_smoothing", 0.0), reduction=_red(p))
def _t_bce(p, x, y): return F.binary_cross_entropy(x, y, reduction=_red(p))
def _g_bce(p, x, y): return x.binary_crossentropy(y, reduction=_red(p))
def _t_bcel(p, x, y, pw=None): return F.binary_cross_entropy_with_logits(x, y, reduction=_red(p), pos_weight=pw)
def _g_bcel(p, x, y, pw=None): return x.binary_crossentropy_logits(y, reduction=_red(p), pos_weight=pw)
def _t_nll(p, x, y, w=None):
  ii = p.get("ignore_index")
  return F.nll_loss(x, y.to(torch.int64), weight=w, reduction=_red(p), ignore_index=-100 if ii is None else ii)
def _g_nll(p, x, y, w=None): return x.nll_loss(y, weight=w, ignore_index=p.get("ignore_index"), reduction=_red(p))

LAYER_OPS = {
  "batchnorm_train": (_t_batchnorm, _g_batchnorm), "layernorm": (_t_layernorm, _g_layernorm),
  "rmsnorm": (_t_rmsnorm, _g_rmsnorm), "groupnorm": (_t_groupnorm, _g_groupnorm),
  "embedding": (_t_embedding, _g_embedding), "linear": (_t_linear, _g_linear),
  "conv_transpose2d": (_t_conv_t, _g_conv_t), "sdpa": (_t_sdpa, _g_sdpa),
  "cross_entropy": (_t_ce, _g_ce), "sparse_categorical_crossentropy": (_t_scce, _g_scce),
  "binary_crossentropy": (_t_bce, _g_bce), "binary_crossentropy_logits": (_t_bcel, _g_bcel),
  "nll_loss": (_t_nll, _g_nll),
}

# Where tinygrad's forward formula (and so its gradient) is not torch's: op -> (why, torch fn of tinygrad's formula).
def _erf_as(p, a):
  t = 1.0 / (1.0 + 0.3275911 * a.abs())
  poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592)
  return torch.sign(a) * (1.0 - t * poly * torch.exp(-a * a))
TINYGRAD_GRAD = {
  "erf": ("tinygrad's erf is Abramowitz-Stegun 7.1.26 (error 1.5e-7, its derivative off by up to 1e-5 relative); "
          "the gradient is that formula's", _erf_as),
}

def torch_fn(op):
  if op in TINYGRAD_GRAD: return TINYGRAD_GRAD[op][1]
  if op in LAYER_OPS: return LAYER_OPS[op][0]
  return gf.OPS[op][0]
def tiny_fn(op):
  if op in LAYER_OPS: return LAYER_OPS[op][1]
  return gf.OPS[op][2]

# ------------------------------------------------------------------------------------------------ cases
class GCase:
  def __init__(self, group, name, op, params, inputs, wrt, tol, flags):
    self.group, self.name, self.op, self.inputs, self.wrt, self.tol, self.flags = group, name, op, inputs, wrt, tol, flags
    self.params = {k: v for k, v in params.items() if v is not None}

CASES, _names = [], set()
def add(group, name, op, params, inputs, wrt=None, tol=None, flags=0):
  assert name not in _names, name
  _names.add(name)
  if wrt is None: wrt = [i for i, t in enumerate(inputs) if t.dtype in gf.FLOATS]
  if tol is None: tol = TOL64 if all(inputs[i].dtype == "float64" for i in wrt) else TOL32
  if op in TINYGRAD_GRAD: flags |= TINYGRAD
  CASES.append(GCase(group, name, op, params, inputs, wrt, tol, flags))

def f32(shape, seed, lo=-2.0, hi=2.0, view="", dt="float32"): return In(uni(shape, seed, lo, hi), dt, view)
def away_from(vals, points, gap):
  """moves values within gap of any of points (kinks of the op) away by 2*gap"""
  for pt in points: vals = np.where(np.abs(vals - pt) < gap, vals + np.where(vals >= pt, 2 * gap, -2 * gap), vals)
  return vals

# unary ops: (op, lo, hi, params, kinks) — kinks are points where the derivative jumps (kept away from)
UNARY = [("neg", -2, 2, {}, []), ("abs", -2, 2, {}, [0]), ("exp", -2, 2, {}, []), ("exp2", -2, 2, {}, []),
         ("log", 0.1, 4, {}, []), ("log2", 0.1, 4, {}, []), ("log10", 0.1, 4, {}, []), ("sqrt", 0.1, 4, {}, []),
         ("rsqrt", 0.2, 4, {}, []), ("reciprocal", 0.2, 2, {}, []), ("square", -2, 2, {}, []),
         ("sin", -4, 4, {}, []), ("cos", -4, 4, {}, []), ("tan", -1.2, 1.2, {}, []), ("asin", -0.9, 0.9, {}, []),
         ("acos", -0.9, 0.9, {}, []), ("atan", -3, 3, {}, []), ("sinh", -2, 2, {}, []), ("cosh", -2, 2, {}, []),
         ("tanh", -3, 3, {}, []), ("asinh", -3, 3, {}, []), ("acosh", 1.1, 4, {}, []), ("atanh", -0.9, 0.9, {}, []),
         ("relu", -2, 2, {}, [0]), ("relu6", -8, 8, {}, [0, 6]), ("sigmoid", -4, 4, {}, []),
         ("logsigmoid", -4, 4, {}, []), ("hardsigmoid", -4, 4, {}, [-3, 3]), ("hardswish", -4, 4, {}, [-3, 3]),
         ("hardtanh", -2, 2, {}, [-1, 1]), ("gelu", -3, 3, {}, []), ("quick_gelu", -3, 3, {}, []),
         ("silu", -3, 3, {}, []), ("swish", -3, 3, {}, []), ("mish", -3, 3, {}, []), ("softsign", -3, 3, {}, [0]),
         ("erf", -2, 2, {}, []), ("celu", -2, 2, {}, [0]), ("selu", -2, 2, {}, [0]), ("elu", -2, 2, {"alpha": 0.7}, [0]),
         ("leaky_relu", -2, 2, {"neg_slope": 0.2}, [0]), ("softplus", -3, 3, {"beta": 1.5}, []),
         ("sign", -2, 2, {}, [0]), ("trunc", -3, 3, {}, [-2, -1, 0, 1, 2]), ("floor", -3, 3, {}, [-2, -1, 0, 1, 2]),
         ("ceil", -3, 3, {}, [-2, -1, 0, 1, 2]), ("round", -3, 3, {}, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]),
         ("contiguous", -2, 2, {}, [])]

def build_elementwise():
  s = 5000
  for name, lo, hi, p, kinks in UNARY:
    s += 3
    v = away_from(uni((3, 4), s, lo, hi), kinks, 0.05)
    add("elementwise", f"{name}_f32", name, p, [In(v, "float32")])
    if name in ("exp", "log", "sin", "tanh", "sigmoid", "gelu", "sqrt", "softplus", "mish", "erf"):
      add("elementwise", f"{name}_f64", name, p, [In(away_from(uni((2, 5), s + 1, lo, hi), kinks, 0.05), "float64")])
    if name in ("relu", "exp", "tanh", "square"):
      add("elementwise", f"{name}_f32_view", name, p, [In(away_from(uni((4, 3), s + 2, lo, hi), kinks, 0.05), "float32", "permute:1,0")])
  # binary ops with broadcasting
  s = 6000
  shapes = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1))]
  for name in ("add", "sub", "mul", "div", "maximum", "minimum"):
    for i, (sa, sb) in enumerate(shapes):
      s += 2
      a, b = uni(sa, s), uni(sb, s + 1)
      if name == "div": b = np.where(np.abs(b) < 0.3, 0.7, b)
      add("elementwise", f"{name}_f32_{i}", name, {}, [In(a, "float32"), In(b, "float32")])
  add("elementwise", "pow_f32", "pow", {}, [f32((3, 4), 6100, 0.3, 2.0), f32((3, 4), 6101, -2, 2)])
  add("elementwise", "pow_f32_bcast", "pow", {}, [f32((3, 4), 6102, 0.3, 2.0), f32((4,), 6103, -2, 2)])
  add("elementwise", "logaddexp_f32", "logaddexp", {}, [f32((3, 4), 6104), f32((3, 4), 6105)])
  add("elementwise", "mul_f64", "mul", {}, [f32((3, 4), 6106, dt="float64"), f32((4,), 6107, dt="float64")])
  add("elementwise", "div_f64", "div", {}, [f32((3, 4), 6108, dt="float64"), f32((3, 4), 6109, 0.5, 2, dt="float64")])
  add("elementwise", "add_f32_views", "add", {}, [f32((4, 3), 6110, view="permute:1,0"), f32((5, 6), 6111, view="shrink:1:4,2:6")])
  add("elementwise", "mul_f32_flip_expand", "mul", {}, [f32((3, 4), 6112, view="flip:0,1"), f32((3, 1), 6113, view="expand:3,4")])
  # weak scalar operands (the gradient goes to the tensor only)
  for i, (name, sc, rev, lo, hi) in enumerate([("mul", 2.5, 0, -2, 2), ("add", 1.5, 0, -2, 2), ("sub", 2.0, 1, -2, 2),
                                               ("div", 3.0, 0, -2, 2), ("div", 1.0, 1, 0.3, 2), ("pow", 2, 0, -2, 2),
                                               ("pow", 3, 0, -2, 2), ("pow", 0.5, 0, 0.2, 3), ("pow", 2.0, 1, -2, 2),
                                               ("maximum", 0.5, 0, -2, 2)]):
    v = away_from(uni((3, 4), 6200 + i, lo, hi), [0.5] if name == "maximum" else [0], 0.05)
    add("elementwise", f"{name}_f32_scalar{i}", name, {"scalar": sc, "reverse": rev or None}, [In(v, "float32")])
  # where / lerp / masked_fill / clamp
  cond = In(uni((3, 4), 6300) > 0, "bool")
  add("elementwise", "where_f32", "where", {}, [cond, f32((3, 4), 6301), f32((3, 4), 6302)])
  add("elementwise", "where_f32_bcast", "where", {}, [cond, f32((4,), 6303), f32((3, 1), 6304)])
  add("elementwise", "lerp_f32", "lerp", {}, [f32((3, 4), 6305), f32((3, 4), 6306), f32((3, 4), 6307, 0, 1)])
  add("elementwise", "masked_fill_f32", "masked_fill", {"value": 0.5}, [f32((3, 4), 6308), cond])
  add("elementwise", "clamp_f32", "clamp", {"min": -0.5, "max": 0.7}, [In(away_from(uni((3, 4), 6309), [-0.5, 0.7], 0.05), "float32")])
  add("elementwise", "clamp_f32_min", "clamp", {"min": 0.1}, [In(away_from(uni((3, 4), 6310), [0.1], 0.05), "float32")])
  add("elementwise", "cast_f32_f64", "cast", {"dtype": "float64"}, [f32((3, 4), 6311)])
  add("elementwise", "cast_f64_f32", "cast", {"dtype": "float32"}, [f32((3, 4), 6312, dt="float64")], tol=TOL32)

def build_reduce():
  s = 7000
  x = lambda shape, k, lo=-2, hi=2, dt="float32": f32(shape, s + k, lo, hi, dt=dt)
  for i, (ax, keep) in enumerate([(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)]):
    add("reduce", f"sum_f32_{i}", "sum", {"axis": ax, "keepdim": keep or None}, [x((2, 3, 4), i)])
    add("reduce", f"mean_f32_{i}", "mean", {"axis": ax, "keepdim": keep or None}, [x((2, 3, 4), 10 + i)])
    add("reduce", f"max_f32_{i}", "max", {"axis": ax, "keepdim": keep or None}, [x((2, 3, 4), 20 + i)])
    add("reduce", f"prod_f32_{i}", "prod", {"axis": ax, "keepdim": keep or None}, [x((2, 3, 4), 30 + i, 0.5, 1.5)])
  add("reduce", "sum_f32_view", "sum", {"axis": 0}, [f32((4, 3), s + 40, view="permute:1,0")])
  add("reduce", "sum_f64", "sum", {"axis": 1}, [x((3, 4), 41, dt="float64")])
  add("reduce", "min_f32_0", "min", {"axis": 1}, [x((3, 5), 42)])
  add("reduce", "min_f32_all", "min", {}, [x((3, 5), 43)])
  add("reduce", "max_f32_ties", "max", {"axis": 1}, [In([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0]], "float32")])
  add("reduce", "max_f64", "max", {"axis": 0}, [x((3, 4), 44, dt="float64")])
  for i, (ax, keep, corr) in enumerate([(None, False, 1), (1, False, 1), (0, True, 0), ((0, 2), False, 1)]):
    add("reduce", f"var_f32_{i}", "var", {"axis": ax, "keepdim": keep or None, "correction": corr}, [x((3, 4, 2), 50 + i)])
    add("reduce", f"std_f32_{i}", "std", {"axis": ax, "keepdim": keep or None, "correction": corr}, [x((3, 4, 2), 60 + i)])
  for i, (ax, keep) in enumerate([(1, False), (0, True), (-1, False)]):
    add("reduce", f"logsumexp_f32_{i}", "logsumexp", {"axis": ax, "keepdim": keep or None}, [x((3, 5), 70 + i)])
  for i, ax in enumerate([0, 1, -1]):
    add("reduce", f"cumsum_f32_{i}", "cumsum", {"axis": ax}, [x((3, 4, 2), 80 + i)])
  add("reduce", "cumsum_f32_long", "cumsum", {"axis": 0}, [x((70,), 83)])
  for i, ax in enumerate([-1, 0, 1]):
    add("reduce", f"softmax_f32_{i}", "softmax", {"axis": ax}, [x((3, 4, 5), 90 + i)])
    add("reduce", f"log_softmax_f32_{i}", "log_softmax", {"axis": ax}, [x((3, 4, 5), 95 + i)])
  add("reduce", "softmax_f64", "softmax", {"axis": -1}, [x((4, 6), 99, dt="float64")])

def build_movement():
  s = 8000
  x = lambda shape, k, view="": f32(shape, s + k, view=view)
  add("movement", "reshape_f32", "reshape", {"shape": (4, 6)}, [x((2, 3, 4), 0)])
  add("movement", "reshape_f32_view", "reshape", {"shape": (12,)}, [x((4, 3), 1, "permute:1,0")])
  add("movement", "permute_f32", "permute", {"order": (2, 0, 1)}, [x((2, 3, 4), 2)])
  add("movement", "transpose_f32", "transpose", {"dim0": -1, "dim1": 0}, [x((2, 3, 4), 3)])
  add("movement", "expand_f32", "expand", {"shape": (3, 4)}, [x((3, 1), 4)])
  add("movement", "expand_f32_newdim", "expand", {"shape": (2, 3, 4)}, [x((1, 4), 5)])
  add("movement", "pad_f32", "pad", {"pad": (1, 2, 0, 1)}, [x((2, 3), 6)])
  add("movement", "pad_f32_value", "pad", {"pad": (0, 0, 2, 1), "value": 1.5}, [x((2, 3), 7)])
  for i, mode in enumerate(("reflect", "replicate", "circular")):
    add("movement", f"pad_f32_{mode}", "pad", {"pad": (0, 0, 1, 2), "mode": mode}, [x((2, 4), 8 + i)])
  add("movement", "shrink_f32", "shrink", {"shrink": (1, 3, 0, 2)}, [x((4, 3), 11)])
  add("movement", "flip_f32", "flip", {"axis": (0, 2)}, [x((2, 3, 4), 12)])
  add("movement", "squeeze_f32", "squeeze", {"dim": 1}, [x((3, 1, 4), 13)])
  add("movement", "unsqueeze_f32", "unsqueeze", {"dim": -1}, [x((3, 4), 14)])
  add("movement", "flatten_f32", "flatten", {"start_dim": 1}, [x((2, 3, 4), 15)])
  add("movement", "slice_f32_step", "slice", {"slice": "1:4:2,::-1"}, [x((5, 3), 16)])
  add("movement", "slice_f32_neg", "slice", {"slice": "-3:,1:3"}, [x((4, 4), 17)])
  add("movement", "cat_f32", "cat", {"dim": 1}, [x((2, 3), 18), x((2, 2), 19), x((2, 1), 20)])
  add("movement", "cat_f32_dim0", "cat", {"dim": 0}, [x((1, 3), 21), x((2, 3), 22)])
  add("movement", "stack_f32", "stack", {"dim": 1}, [x((2, 3), 23), x((2, 3), 24)])
  add("movement", "repeat_f32", "repeat", {"repeats": (2, 1, 3)}, [x((3, 2), 25)])
  add("movement", "split_f32", "split", {"sizes": (2,), "dim": 0, "nout": 3}, [x((5, 3), 26)])
  add("movement", "chunk_f32", "chunk", {"chunks": 2, "dim": 1, "nout": 2}, [x((3, 4), 27)])
  idx = In(np.array([[0, 2, 1], [1, 0, 0], [2, 2, 1]]), "int32")
  add("movement", "gather_f32_dim1", "gather", {"dim": 1}, [x((3, 4), 28), idx])
  add("movement", "gather_f32_dim0", "gather", {"dim": 0}, [x((3, 3), 29), idx])
  add("movement", "index_f32", "index", {}, [x((5, 3), 30), In(np.array([4, 0, 2, 0]), "int32")])
  add("movement", "index_f32_2d", "index", {}, [x((4, 2), 31), In(np.array([[1, 3], [1, 0]]), "int32")])

def build_nn():
  s = 9000
  x = lambda shape, k, lo=-2, hi=2, dt="float32", view="": f32(shape, s + k, lo, hi, view, dt)
  for i, (sa, sb) in enumerate([((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                                ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2))]):
    add("nn", f"matmul_f32_{i}", "matmul", {}, [x(sa, i), x(sb, 10 + i)])
  add("nn", "matmul_f32_view", "matmul", {}, [x((4, 3), 20, view="permute:1,0"), x((4, 5), 21, view="flip:0")])
  add("nn", "matmul_f64", "matmul", {}, [x((3, 5), 22, dt="float64"), x((5, 2), 23, dt="float64")])
  add("nn", "dot_f32", "dot", {}, [x((3, 4), 24), x((4, 2), 25)])
  convs = [({}, (1, 2, 5, 5), (3, 2, 3, 3), False), ({"stride": 2}, (2, 3, 7, 7), (4, 3, 3, 3), True),
           ({"padding": 1}, (1, 2, 4, 4), (2, 2, 3, 3), True), ({"dilation": 2}, (1, 1, 7, 7), (2, 1, 3, 3), True),
           ({"groups": 2}, (1, 4, 5, 5), (6, 2, 3, 3), True), ({"padding": (1, 2), "stride": (2, 1)}, (1, 2, 5, 6), (3, 2, 2, 3), False),
           ({"groups": 3, "padding": 1, "stride": 2}, (2, 3, 6, 6), (3, 1, 3, 3), True), ({}, (2, 3, 4, 4), (5, 3, 1, 1), False)]
  for i, (p, sx, sw, bias) in enumerate(convs):
    ins = [x(sx, 30 + i), x(sw, 40 + i)] + ([x((sw[0],), 50 + i)] if bias else [])
    add("nn", f"conv2d_f32_{i}", "conv2d", p, ins)
  add("nn", "conv2d_f64", "conv2d", {"padding": 1}, [x((1, 2, 4, 4), 58, dt="float64"), x((2, 2, 3, 3), 59, dt="float64")])
  # tinygrad.c's layout copies (tensor/reduce.c t_conv2d, output channels x KH x KW >= 256): the forward conv (16 x 5 x
  # 5) and, in the second, the input gradient's transposed conv (32 x 3 x 3) read channel-inner weights; in the third
  # (16 input channels) the weight gradient also reads the output gradient channel-inner
  bigs = [({"padding": 2}, (2, 3, 6, 7), (16, 3, 5, 5), True), ({"padding": 1}, (1, 32, 5, 6), (16, 32, 3, 3), True),
          ({"padding": 2}, (2, 16, 6, 5), (32, 16, 5, 5), True)]
  for i, (p, sx, sw, bias) in enumerate(bigs):
    ins = [x(sx, 140 + 3 * i), x(sw, 141 + 3 * i)] + ([x((sw[0],), 142 + 3 * i)] if bias else [])
    add("nn", f"conv2d_f32_big_{i}", "conv2d", p, ins)
  pools = [{}, {"kernel_size": (3, 3), "stride": 1}, {"kernel_size": (2, 2), "stride": 1, "padding": 1},
           {"kernel_size": (3, 2), "stride": (2, 1)}, {"kernel_size": (2, 2), "dilation": 2, "stride": 1}]
  for i, p in enumerate(pools):
    add("nn", f"max_pool2d_f32_{i}", "max_pool2d", p, [x((1, 2, 6, 6), 60 + i)])
    if "dilation" not in p: add("nn", f"avg_pool2d_f32_{i}", "avg_pool2d", p, [x((2, 1, 6, 5), 70 + i)])

def build_layers():
  s = 10000
  x = lambda shape, k, lo=-2, hi=2, dt="float32": f32(shape, s + k, lo, hi, dt=dt)
  add("layers", "linear_f32", "linear", {}, [x((4, 5), 0), x((3, 5), 1), x((3,), 2)])
  add("layers", "linear_f32_nobias", "linear", {}, [x((2, 4, 5), 3), x((3, 5), 4)])
  add("layers", "linear_f64", "linear", {}, [x((4, 5), 5, dt="float64"), x((3, 5), 6, dt="float64"), x((3,), 7, dt="float64")])
  add("layers", "batchnorm_train_2d", "batchnorm_train", {"eps": 1e-5}, [x((4, 3, 3, 3), 10), x((3,), 11, 0.5, 1.5), x((3,), 12)])
  add("layers", "batchnorm_train_1d", "batchnorm_train", {"eps": 1e-5}, [x((6, 4), 13), x((4,), 14, 0.5, 1.5), x((4,), 15)])
  # float32 running statistics cannot take a float64 batch's (assign dtype mismatch, in tinygrad too): untracked
  add("layers", "batchnorm_train_f64", "batchnorm_train", {"eps": 1e-5, "track_running_stats": 0},
      [x((5, 2, 2, 2), 16, dt="float64"), x((2,), 17, 0.5, 1.5, dt="float64"), x((2,), 18, dt="float64")])
  add("layers", "layernorm_f32", "layernorm", {"eps": 1e-5, "ndims": 1}, [x((3, 6), 20), x((6,), 21, 0.5, 1.5), x((6,), 22)])
  add("layers", "layernorm_f32_2d", "layernorm", {"eps": 1e-5, "ndims": 2}, [x((2, 3, 4), 23), x((3, 4), 24, 0.5, 1.5), x((3, 4), 25)])
  add("layers", "rmsnorm_f32", "rmsnorm", {"eps": 1e-6}, [x((3, 6), 26), x((6,), 27, 0.5, 1.5)])
  add("layers", "groupnorm_f32", "groupnorm", {"num_groups": 2, "eps": 1e-5}, [x((2, 4, 3, 3), 28), x((4,), 29, 0.5, 1.5), x((4,), 30)])
  add("layers", "groupnorm_f32_1group", "groupnorm", {"num_groups": 1, "eps": 1e-5}, [x((2, 3, 5), 31), x((3,), 32, 0.5, 1.5), x((3,), 33)])
  add("layers", "embedding_f32", "embedding", {}, [In(np.array([[1, 4, 1], [0, 2, 4]]), "int32"), x((5, 3), 34)], wrt=[1])
  add("layers", "conv_transpose2d_f32", "conv_transpose2d", {}, [x((1, 2, 4, 4), 35), x((2, 3, 3, 3), 36), x((3,), 37)])
  add("layers", "conv_transpose2d_f32_stride", "conv_transpose2d", {"stride": 2, "padding": 1, "output_padding": 1},
      [x((2, 2, 3, 3), 38), x((2, 2, 3, 3), 39)])
  add("layers", "sdpa_f32", "sdpa", {}, [x((2, 4, 8), 40), x((2, 4, 8), 41), x((2, 4, 8), 42)])
  add("layers", "sdpa_f32_causal", "sdpa", {"is_causal": 1}, [x((2, 2, 5, 4), 43), x((2, 2, 5, 4), 44), x((2, 2, 5, 4), 45)])

def build_losses():
  s = 11000
  x = lambda shape, k, lo=-2, hi=2, dt="float32": f32(shape, s + k, lo, hi, dt=dt)
  lab = In(np.array([1, 0, 3, 2, 3]), "int32")
  for red in ("mean", "sum", "none"):
    add("losses", f"cross_entropy_{red}", "cross_entropy", {"reduction": red}, [x((5, 4), 0), lab])
    add("losses", f"scce_{red}", "sparse_categorical_crossentropy", {"reduction": red}, [x((5, 4), 1), lab])
    add("losses", f"nll_loss_{red}", "nll_loss", {"reduction": red}, [x((5, 4), 2, -3, -0.1), lab])
    add("losses", f"bce_{red}", "binary_crossentropy", {"reduction": red}, [x((3, 4), 3, 0.05, 0.95), x((3, 4), 4, 0, 1)])
    add("losses", f"bce_logits_{red}", "binary_crossentropy_logits", {"reduction": red}, [x((3, 4), 5), x((3, 4), 6, 0, 1)])
  add("losses", "cross_entropy_smoothing", "cross_entropy", {"label_smoothing": 0.2}, [x((5, 4), 10), lab])
  probs = np.abs(uni((5, 4), s + 11)) + 0.1
  add("losses", "cross_entropy_probs", "cross_entropy", {}, [x((5, 4), 12), In(probs / probs.sum(1, keepdims=True), "float32")])
  add("losses", "cross_entropy_f64", "cross_entropy", {}, [x((5, 4), 13, dt="float64"), lab])
  add("losses", "scce_smoothing", "sparse_categorical_crossentropy", {"label_smoothing": 0.1}, [x((5, 4), 14), lab])
  add("losses", "scce_ignore", "sparse_categorical_crossentropy", {"ignore_index": 3}, [x((5, 4), 15), lab])
  add("losses", "scce_3d", "sparse_categorical_crossentropy", {}, [x((2, 3, 4), 16), In(np.array([[0, 3, 1], [2, 2, 0]]), "int32")])
  add("losses", "nll_loss_weight", "nll_loss", {}, [x((5, 4), 17, -3, -0.1), lab, x((4,), 18, 0.5, 2)], wrt=[0])
  add("losses", "nll_loss_ignore", "nll_loss", {"ignore_index": 0}, [x((5, 4), 19, -3, -0.1), lab])
  add("losses", "bce_logits_pos_weight", "binary_crossentropy_logits", {}, [x((3, 4), 20), x((3, 4), 21, 0, 1), x((4,), 22, 0.5, 2)],
      wrt=[0])
  add("losses", "bce_logits_f64", "binary_crossentropy_logits", {}, [x((3, 4), 23, dt="float64"), x((3, 4), 24, 0, 1, dt="float64")], wrt=[0])

def build_grad_cases():
  build_elementwise()
  build_reduce()
  build_movement()
  build_nn()
  build_layers()
  build_losses()

# ------------------------------------------------------------------------------------------------ computing
def _upstream(shape, seed, dt):
  return In(uni(shape, seed, -1.0, 1.0), dt)

def compute(case, seed):
  """(upstream In list, forward outputs, gradients) as lists of (dtype, shape, bytes)"""
  leaves, args = [], []
  for i, t in enumerate(case.inputs):
    d = t.data if isinstance(t.data, torch.Tensor) else torch.from_numpy(np.asarray(t.data))
    if t.dtype in gf.FLOATS:
      d = d.double().detach().clone().requires_grad_(i in case.wrt)
    leaves.append(d)
    args.append(gf.view_torch(d, t.view))
  outs = torch_fn(case.op)(case.params, *args)
  outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
  assert len(outs) == case.params.get("nout", 1), case.name
  # the forward result's dtype is the differentiated input's (a cast's is its target dtype)
  out_dt = case.params["dtype"] if case.op == "cast" else case.inputs[case.wrt[0]].dtype
  ups = [_upstream(tuple(o.shape), seed + k, out_dt) for k, o in enumerate(outs)]
  loss = sum((o * u.data.double()).sum() for o, u in zip(outs, ups))
  grads = torch.autograd.grad(loss, [leaves[i] for i in case.wrt], allow_unused=True)
  res_out = [(out_dt, tuple(o.shape), gf.raw_bytes(o.detach().to(gf.TORCH[out_dt]))) for o in outs]
  res_grad = []
  for i, g in zip(case.wrt, grads):
    if g is None: g = torch.zeros_like(leaves[i])
    dt = case.inputs[i].dtype
    res_grad.append((dt, tuple(leaves[i].shape), gf.raw_bytes(g.to(gf.TORCH[dt]))))
  return ups, res_out, res_grad

def tiny_compute(case, ups):
  from tinygrad import Tensor
  leaves, args = [], []
  for i, t in enumerate(case.inputs):
    d = t.data.numpy() if isinstance(t.data, torch.Tensor) else t.data
    v = Tensor(d, dtype=gf._tiny_dtype(t.dtype))
    leaves.append(v)
    for name, a in gf.parse_view(t.view):
      if name == "permute": v = v.permute(*a)
      elif name == "flip": v = v.flip(a)
      elif name == "shrink": v = v.shrink(tuple(a))
      elif name == "expand": v = v.expand(*a)
    args.append(v)
  outs = tiny_fn(case.op)(case.params, *args)
  outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
  loss = None
  for o, u in zip(outs, ups):
    term = (o * Tensor(u.data.numpy(), dtype=gf._tiny_dtype(u.dtype))).sum()
    loss = term if loss is None else loss + term
  loss.backward()
  return [o.numpy() for o in outs], [leaves[i].grad.numpy() if leaves[i].grad is not None else None for i in case.wrt]

def check_tiny(case, ups, outs, grads):
  try:
    tout, tgrad = tiny_compute(case, ups)
  except Exception as e:  # noqa: BLE001 - report every failure of the oracle
    return f"tinygrad raised {type(e).__name__}: {e}"
  atol, rtol = case.tol
  for k, ((dt, shape, data), got) in enumerate(list(zip(outs, tout)) + list(zip(grads, tgrad))):
    what = f"output {k}" if k < len(outs) else f"grad of input {case.wrt[k - len(outs)]}"
    if got is None: return f"{what}: tinygrad gives no gradient"
    exp = gf.as_float64(dt, shape, data)
    if tuple(np.shape(got)) != tuple(shape): return f"{what}: shape {np.shape(got)} != {shape}"
    if not gf.agree(dt, exp, np.asarray(got), max(atol, 1e-5), max(rtol, 1e-3)):
      bad = np.argmax(np.abs(exp.astype(np.float64) - got.astype(np.float64)).ravel())
      return f"{what}: element {bad}: torch {exp.ravel()[bad]!r} tinygrad {got.ravel()[bad]!r}"
  return None

# ------------------------------------------------------------------------------------------------ optimizers
OPTIMS = [("sgd", {"lr": 0.05}), ("sgd_momentum", {"lr": 0.05, "momentum": 0.9}),
          ("sgd_nesterov", {"lr": 0.05, "momentum": 0.9, "nesterov": 1}),
          ("sgd_wd", {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.1}),
          ("adam", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8}),
          ("adamw", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.1}),
          ("lamb", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-6, "weight_decay": 0.01}),
          ("lamb_nowd", {"lr": 0.02, "b1": 0.8, "b2": 0.99, "eps": 1e-6, "weight_decay": 0.0}),
          # the learning rate is a tensor: lr2 replaces it from step LR2_STEP on (no new optimizer)
          ("sgd_lr_change", {"lr": 0.05, "momentum": 0.9, "lr2": 0.01}),
          ("adam_lr_change", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "lr2": 0.03})]
NSTEPS, LR2_STEP = 10, 6

def optim_data():
  x = uni((8, 4), 12000)
  target = uni((8, 3), 12001, -1, 1)
  params = [uni((4, 6), 12002, -0.7, 0.7), uni((6,), 12003, -0.3, 0.3), uni((6, 3), 12004, -0.7, 0.7), uni((3,), 12005, -0.3, 0.3)]
  # rounded to float32: torch and the C side start from the same numbers
  return [np.asarray(a, np.float32) for a in [x, target] + params]

def mlp_loss(x, target, w1, b1, w2, b2):
  out = (x @ w1 + b1).relu() @ w2 + b2
  return ((out - target) ** 2).mean()

class TorchLAMB:
  """tinygrad's LAMB (nn/optim.py) in torch ops: Adam moments with bias correction, decoupled weight decay in the
  update, and the trust ratio |w| / |update| per parameter (1 when either norm is 0)"""
  def __init__(self, params, lr, b1, b2, eps, weight_decay):
    self.params, self.lr, self.b1, self.b2, self.eps, self.wd = params, lr, b1, b2, eps, weight_decay
    self.m = [torch.zeros_like(p) for p in params]
    self.v = [torch.zeros_like(p) for p in params]
    self.b1_t, self.b2_t = 1.0, 1.0
  def zero_grad(self):
    for p in self.params: p.grad = None
  @torch.no_grad()
  def step(self):
    self.b1_t *= self.b1
    self.b2_t *= self.b2
    for i, p in enumerate(self.params):
      g = p.grad
      self.m[i] = self.b1 * self.m[i] + (1.0 - self.b1) * g
      self.v[i] = self.b2 * self.v[i] + (1.0 - self.b2) * (g * g)
      up = (self.m[i] / (1.0 - self.b1_t)) / ((self.v[i] / (1.0 - self.b2_t)).sqrt() + self.eps) + self.wd * p
      r1, r2 = p.square().sum().sqrt(), up.square().sum().sqrt()
      r = torch.where(r1 > 0, torch.where(r2 > 0, r1 / r2, torch.ones_like(r1)), torch.ones_like(r1))
      p -= self.lr * r * up

def make_torch_optim(kind, hp, params):
  if kind.startswith("sgd"):
    return torch.optim.SGD(params, lr=hp["lr"], momentum=hp.get("momentum", 0.0), nesterov=bool(hp.get("nesterov")),
                           weight_decay=hp.get("weight_decay", 0.0))
  if kind == "adam": return torch.optim.Adam(params, lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"])
  if kind == "adamw":
    return torch.optim.AdamW(params, lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"], weight_decay=hp["weight_decay"])
  return TorchLAMB(params, hp["lr"], hp["b1"], hp["b2"], hp["eps"], hp["weight_decay"])

def optim_kind(name): return name.split("_")[0]

def torch_optim_steps(name, hp, dtype=torch.float64):
  data = [torch.from_numpy(a).to(dtype) for a in optim_data()]
  x, target, params = data[0], data[1], [p.clone().requires_grad_(True) for p in data[2:]]
  opt = make_torch_optim(optim_kind(name), hp, params)
  res = []
  for k in range(NSTEPS):
    if "lr2" in hp and k + 1 == LR2_STEP:
      if isinstance(opt, TorchLAMB): opt.lr = hp["lr2"]
      else:
        for group in opt.param_groups: group["lr"] = hp["lr2"]
    opt.zero_grad()
    mlp_loss(x, target, *params).backward()
    opt.step()
    res.append([p.detach().clone() for p in params])
  return res

def tiny_optim_steps(name, hp):
  from tinygrad import Tensor, nn
  from tinygrad.helpers import Context
  data = optim_data()
  x, target = Tensor(data[0]), Tensor(data[1])
  params = [Tensor(a) for a in data[2:]]
  kind = optim_kind(name)
  if kind == "sgd": opt = nn.optim.SGD(params, lr=hp["lr"], momentum=hp.get("momentum", 0.0),
                                        weight_decay=hp.get("weight_decay", 0.0), nesterov=bool(hp.get("nesterov")))
  elif kind == "adam": opt = nn.optim.Adam(params, lr=hp["lr"], b1=hp["b1"], b2=hp["b2"], eps=hp["eps"])
  elif kind == "adamw": opt = nn.optim.AdamW(params, lr=hp["lr"], b1=hp["b1"], b2=hp["b2"], eps=hp["eps"], weight_decay=hp["weight_decay"])
  else: opt = nn.optim.LAMB(params, lr=hp["lr"], b1=hp["b1"], b2=hp["b2"], eps=hp["eps"], weight_decay=hp["weight_decay"])
  res = []
  with Context(TRAINING=1):
    for k in range(NSTEPS):
      if "lr2" in hp and k + 1 == LR2_STEP: opt.lr.assign(Tensor([hp["lr2"]], dtype=opt.lr.dtype)).realize()
      opt.zero_grad()
      mlp_loss(x, target, *params).backward()
      opt.step()
      res.append([p.numpy().copy() for p in params])
  return res

OPTIM_TOL = (1e-5, 1e-4)

def optim_cases(check):
  packed, failures = [], []
  data = optim_data()
  for name, hp in OPTIMS:
    steps = torch_optim_steps(name, hp)
    tsteps = tiny_optim_steps(name, hp) if check else None
    for k in range(NSTEPS):
      params = {"optim": optim_kind(name), **hp, "step": k + 1, "model": "mlp"}
      case = gf.Case("optim", f"{name}_step{k + 1}", "optim", params, [In(a, "float32") for a in data])
      outs = [("float32", tuple(p.shape), gf.raw_bytes(p.to(torch.float32))) for p in steps[k]]
      if check:
        for j, (o, t) in enumerate(zip(outs, tsteps[k])):
          if not gf.agree("float32", gf.as_float64(*o), t, *OPTIM_TOL):
            failures.append(f"optim/{case.name}: param {j}: max diff {np.max(np.abs(gf.as_float64(*o) - t))}")
      packed.append(gf.pack_case(case, outs, *OPTIM_TOL))
  return packed, failures

# ------------------------------------------------------------------------------------------------ writing
def main():
  check, listing = "--check" in sys.argv, "--list" in sys.argv
  only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
  if check:
    sys.path.insert(0, os.environ.get("TINYGRAD_PATH", "/work/tgref"))
    os.environ.setdefault("DEV", "CPU")
  build_grad_cases()
  groups, failures = {}, []
  for n, case in enumerate(CASES):
    if only and only not in case.name: continue
    ups, outs, grads = compute(case, 20000 + 10 * n)
    case.params["wrt"] = case.wrt
    if case.params.get("nout", 1) == 1: case.params.pop("nout", None)
    if check:
      why = check_tiny(case, ups, outs, grads)
      if why: failures.append(f"{case.group}/{case.name} [{case.op} {gf.params_text(case.params)}]: {why}")
    if listing: print(f"{case.group:12s} {case.name:36s} {case.op:16s} {gf.params_text(case.params)}")
    gc = gf.Case(case.group, case.name, case.op, case.params, case.inputs + ups, flags=case.flags)
    groups.setdefault(f"grad_{case.group}", []).append(gf.pack_case(gc, outs + grads, *case.tol))
  if not only or "optim" in only or "step" in only:
    packed, ofail = optim_cases(check)
    groups["optim_mlp"] = packed
    failures += ofail
  os.makedirs(OUT_DIR, exist_ok=True)
  for g, packed in sorted(groups.items()):
    blob = b"TGFX" + struct.pack("<II", gf.FORMAT_VERSION, len(packed)) + b"".join(packed)
    with open(os.path.join(OUT_DIR, f"{g}.tgf"), "wb") as f: f.write(blob)
    print(f"{g}.tgf: {len(packed)} cases, {len(blob)} bytes")
  ngrad = sum(len(v) for k, v in groups.items() if k.startswith("grad_"))
  print(f"total: {ngrad} gradient cases, {len(groups.get('optim_mlp', []))} optimizer cases")
  if check: print(f"tinygrad disagrees on {len(failures)} cases")
  for f in failures: print("  " + f)
  if failures: sys.exit(1)

if __name__ == "__main__":
  main()
