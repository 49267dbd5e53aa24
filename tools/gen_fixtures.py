#!/usr/bin/python3
"""gen_fixtures.py — writes the PyTorch golden fixtures of the op-parity test (tests/test_ops.c) to tests/fixtures/.

Run with Debian's python (python3-torch 1.13, numpy):   /usr/bin/python3 tools/gen_fixtures.py [--check] [--list]
  --check   also runs every case through tinygrad (/work/tgref, DEV=CPU) and fails unless tinygrad agrees with the
            fixture within the case's tolerance (same shape, dtype and values): the fixtures hold tinygrad's
            semantics, computed by torch.
  --list    prints one line per case.
  --stats   prints the number of cases per op and per dtype.
  --only S  only the cases whose name contains S (for debugging; the fixture files then hold only those).
The output is deterministic (fixed seeds, no timestamps): regenerating gives identical bytes.

Golden values come from PyTorch 1.13 on the CPU. Where tinygrad's semantics differ from torch, the torch expression is
written to produce tinygrad's answer (e.g. tinygrad's sum of int8 is int32, gelu is the tanh approximation) and the
difference is noted on the op. torch 1.13 has no uint16/uint32/uint64: ops on those dtypes are computed by numpy (or,
for ops that only move data, by torch on the signed type of the same width).

File format (all integers little-endian), one file per op group, tests/fixtures/<group>.tgf:
  file   := "TGFX" u32:version(=1) u32:ncases case*ncases
  case   := u32:nbytes (bytes of the rest of this case, for validation)
            str:name str:op str:params f64:atol f64:rtol u32:flags
            u8:ninputs tensor*ninputs u8:noutputs tensor*noutputs
  str    := u16:len bytes[len]                      (ASCII, no terminator)
  tensor := str:view u8:dtype u8:ndim i64:shape[ndim] u64:nbytes bytes[nbytes]
            data is the row-major contents of `shape` in `dtype` (bool one byte 0/1, float16/bfloat16 their raw bits).
            nbytes == prod(shape) * itemsize(dtype) always.
  dtype codes: 0 bool, 1 int8, 2 uint8, 3 int16, 4 uint16, 5 int32, 6 uint32, 7 int64, 8 uint64,
               9 float16, 10 bfloat16, 11 float32, 12 float64
  view   (inputs only, "" for outputs): movement ops applied to the stored input before the op, making it a
            non-contiguous view: ops separated by ';', each "name:args": "permute:1,0,2", "flip:0,2",
            "shrink:0:2,1:3" (start:end per dim), "expand:3,4".
  params: "key=value" pairs separated by ';'. Values: integers, floats as Python repr ("inf", "-inf", "nan", "-0.0"
            parse with strtod), comma-separated int lists ("0,2"), or words. A missing key means the op's default.
            Keys are the tinygrad keyword names (axis, keepdim, correction, dim, ...); "scalar" (with "reverse=1" when
            the scalar is the left operand) makes the second operand a weak Python scalar, a weak float when written
            as a float ("2.0", "inf") and a weak int otherwise ("3"); "pad" and "shrink" are flat lists of
            (before,after) / (start,end) pairs per dim; "slice" is "start:stop:step" per dim joined by ','
            (empty start/stop = None); "dtype" names a dtype (float32, int8, ...).
  flags: bit 0 TINYGRAD: tinygrad's semantics differ from torch here; the torch expression was adapted to give
            tinygrad's answer: result dtypes (tinygrad_differs), special values (OVERRIDES, each with its reason),
            or a `post` conversion on the case.
  Comparison: floats |got-expected| <= atol + rtol*|expected| (nan matches nan, inf must match exactly), integers and
  bools exact.
"""
import math, os, struct, subprocess, sys
import numpy as np
import torch

FORMAT_VERSION = 1
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64"]
CODE = {n: i for i, n in enumerate(DTYPES)}
ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
            "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
FLOATS = ["float32", "float16", "bfloat16", "float64"]
SINTS = ["int8", "int16", "int32", "int64"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ALL = FLOATS + INTS + ["bool"]
WIDE_UINT = {"uint16", "uint32", "uint64"}  # missing in torch 1.13
TORCH = {"bool": torch.bool, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16, "int32": torch.int32,
         "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
         "float64": torch.float64}
NUMPY = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
         "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float16": np.float16,
         "float32": np.float32, "float64": np.float64}
SIGNED_TWIN = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}
TORCH_NAME = {v: k for k, v in TORCH.items()}

# Tolerances: tinygrad test_ops' defaults for float32/float64, looser for the 16-bit floats.
TOL = {"float32": (1e-6, 1e-3), "float64": (1e-6, 1e-3), "float16": (1e-3, 1e-2), "bfloat16": (1e-2, 2e-2)}
TINYGRAD = 1

def dtype_of(x):
  """fixture dtype name of a torch tensor or numpy array"""
  if isinstance(x, torch.Tensor): return TORCH_NAME[x.dtype]
  for n, t in NUMPY.items():
    if x.dtype == t: return n
  raise ValueError(f"no fixture dtype for {x.dtype}")

def raw_bytes(x):
  if isinstance(x, torch.Tensor):
    x = x.detach().contiguous()
    if x.dtype == torch.bfloat16: return x.view(torch.int16).numpy().tobytes()
    return x.numpy().tobytes()
  return np.ascontiguousarray(x).tobytes()

# ------------------------------------------------------------------------------------------------ inputs and views
class In:
  """one input: values (a list or numpy array of Python numbers), a fixture dtype, an optional view string"""
  def __init__(self, values, dtype, view=""):
    self.dtype, self.view = dtype, view
    arr = np.asarray(values) if dtype != "uint64" or isinstance(values, np.ndarray) else np.array(values, dtype=np.uint64)
    if dtype in WIDE_UINT or dtype not in TORCH:
      self.data = arr.astype(NUMPY[dtype])
    elif dtype == "bool":
      self.data = torch.tensor(arr.astype(np.bool_))
    else:
      # through float64 / int64 so that the rounding to the 16-bit floats is torch's
      src = torch.tensor(arr.astype(np.float64)) if arr.dtype.kind == "f" else torch.tensor(arr.astype(np.int64))
      self.data = src.to(TORCH[dtype])
    self.shape = tuple(arr.shape)

def parse_view(view):
  ops = []
  for part in filter(None, view.split(";")):
    name, _, args = part.partition(":")
    if name == "shrink": ops.append((name, [tuple(int(v) for v in a.split(":")) for a in args.split(",")]))
    else: ops.append((name, [int(v) for v in args.split(",")]))
  return ops

def view_torch(t, view):
  for name, args in parse_view(view):
    if name == "permute": t = t.permute(*args)
    elif name == "flip": t = t.flip(args)
    elif name == "shrink": t = t[tuple(slice(a, b) for a, b in args)]
    elif name == "expand": t = t.expand(*args)
    else: raise ValueError(name)
  return t

def view_numpy(a, view):
  for name, args in parse_view(view):
    if name == "permute": a = a.transpose(args)
    elif name == "flip": a = np.flip(a, args)
    elif name == "shrink": a = a[tuple(slice(x, y) for x, y in args)]
    elif name == "expand": a = np.broadcast_to(a, args)
    else: raise ValueError(name)
  return a

def rng(seed): return np.random.RandomState(seed)
def uni(shape, seed, lo=-2.0, hi=2.0): return rng(seed).uniform(lo, hi, size=shape)
def ints(shape, seed, lo, hi): return rng(seed).randint(lo, hi, size=shape).astype(np.int64)

INT_RANGE = {"int8": (-128, 128), "uint8": (0, 256), "int16": (-300, 300), "uint16": (0, 65536),
             "int32": (-100000, 100000), "uint32": (0, 4000000000), "int64": (-10**12, 10**12),
             "uint64": (0, 2**63), "bool": (0, 2)}

def rand_of(dtype, shape, seed, lo=-2.0, hi=2.0, ilo=None, ihi=None):
  """random values suited to dtype: uniform floats, or integers over (a part of) the type's range"""
  if dtype in FLOATS: return uni(shape, seed, lo, hi)
  a, b = INT_RANGE[dtype]
  if ilo is not None: a, b = ilo, ihi
  if dtype == "uint64" and ilo is None:
    r = rng(seed)
    return (r.randint(0, 2**31, size=shape).astype(np.uint64) << np.uint64(32)) | r.randint(0, 2**31, size=shape).astype(np.uint64)
  return ints(shape, seed, a, b)

SPECIAL = [math.inf, -math.inf, math.nan, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -1e30, 100.0, -100.0]

# ------------------------------------------------------------------------------------------------ cases
class Case:
  def __init__(self, group, name, op, params, inputs, flags=0, note="", tol=None, outputs=None, post=None):
    self.post = post  # adapts torch's result to tinygrad's (e.g. its result dtype)
    self.group, self.name, self.op, self.inputs = group, name, op, inputs
    self.params = {k: v for k, v in params.items() if v is not None}
    self.flags, self.note, self.tol, self.outputs = flags, note, tol, outputs

def params_text(params):
  def val(v):
    if isinstance(v, bool): return "1" if v else "0"
    if isinstance(v, (list, tuple)): return ",".join(str(int(x)) for x in v)
    if isinstance(v, float): return repr(v)
    return str(v)
  return ";".join(f"{k}={val(v)}" for k, v in params.items() if v is not None)

def tinygrad_differs(op, inputs):
  """where tinygrad's answer is not torch's default one (the torch expressions below produce tinygrad's):
  sum/cumsum of small ints and bools accumulate in int32/uint32 (torch: int64); prod keeps the dtype (torch: int64);
  mean of ints is float32 (torch refuses); argmax/argmin are int32 (torch: int64); gelu is the tanh approximation;
  selu uses tinygrad's rounded constants 1.67326 and 1.0507."""
  is_int = bool(inputs) and not inputs[0].dtype.startswith(("float", "bfloat"))
  return op in ("argmax", "argmin", "gelu", "selu") or (op in ("sum", "cumsum", "prod", "mean") and is_int)

# Elements where tinygrad's formulas give another answer than torch on special values; tinygrad wins.
# case name -> (why, {flat index of output 0: tinygrad's value})
# (inputs of the *_special cases: SPECIAL = inf, -inf, nan, -0.0, 0.0, 1, -1, 0.5, -2.5, 3, 1e-30, -1e30, 100, -100)
OVERRIDES = {
  "sign_f32_special": ("sign is ne(0).where(lt(0).where(-1, 1), 0): nan != 0, so 1", {2: 1.0}),
  "cos_f32_special": ("tinygrad's cos (sin(pi/2 - x)) at x = -1e30 loses the argument", {11: -0.79116344}),
  "tan_f32_special": ("tinygrad's tan (sin/cos) at x = -1e30", {11: -1.0}),
  "atan_f32_special": ("atan's formula gives nan at +-inf and 0 at -1e30", {0: math.nan, 1: math.nan, 11: 0.0}),
  "asinh_f32_special": ("asinh = log(x + sqrt(x*x + 1)): nan at -inf, x*x overflows at -1e30", {1: math.nan, 11: math.inf}),
  "acosh_f32_special": ("acosh = log(x + sqrt(x*x - 1)): x*x overflows at -1e30", {11: math.inf}),
  "relu_f32_special": ("relu = (x > 0).where(x, 0): nan -> 0", {2: 0.0}),
  "relu6_f32_special": ("relu6 = relu(x) - relu(x - 6): inf - inf = nan, nan -> 0", {0: math.nan, 2: 0.0}),
  "logsigmoid_f32_special": ("logsigmoid = -softplus(-x): nan at -inf", {1: math.nan}),
  "hardsigmoid_f32_special": ("hardsigmoid = relu(a*x+b) - relu(a*x+b-1): inf - inf, nan -> 0", {0: math.nan, 2: 0.0}),
  "hardswish_f32_special": ("hardswish = x * relu6(x + 3) / 6: nan at inf", {0: math.nan}),
  "mish_f32_special": ("mish = x * tanh(softplus(x)): nan at inf", {0: math.nan}),
  "elu_f32_special": ("elu = relu(x) - alpha * relu(1 - exp(x)): nan -> 0", {2: 0.0}),
  "softplus_f32_special": ("softplus = logaddexp(x*beta, 0)/beta: inf - inf at inf", {0: math.nan}),
  "pow_f32_special": ("pow(1, nan) and pow(1, inf) are nan in tinygrad (exp2(y*log2(x)) based)", {5: math.nan, 9: math.nan}),
  "le_f32_nan": ("le is (x > y).logical_not(): true when a side is nan", {0: True, 1: True, 2: True}),
  "ge_f32_nan": ("ge is (x < y).logical_not(): true when a side is nan", {0: True, 1: True, 2: True}),
  "maximum_f32_nan": ("MAX is (a < b ? b : a): a nan right operand is dropped, a nan left one kept", {1: 1.0}),
  "minimum_f32_nan": ("minimum is -max(-x, -y), same nan rule as maximum", {1: 1.0}),
  "logsumexp_f32_special": ("logsumexp subtracts the max: -inf - -inf = nan for an all -inf row", {2: math.nan}),
}

CASES = []
_names = set()
def add(group, name, op, params, inputs, **kw):
  assert name not in _names, name
  _names.add(name)
  if tinygrad_differs(op, inputs) or name in OVERRIDES or kw.get("post"): kw["flags"] = kw.get("flags", 0) | TINYGRAD
  CASES.append(Case(group, name, op, params, inputs, **kw))

# ------------------------------------------------------------------------------------------------ op semantics
# Each op: torch(params, *tensors) -> tensor or tuple, the numpy fallback for torch-less dtypes (or None), and the
# tinygrad expression used by --check. `moves` marks ops that only move data (computed on the signed twin dtype).
def _ax(p, key="axis"):
  v = p.get(key)
  if v is None: return None
  return tuple(v) if isinstance(v, (list, tuple)) else v

def _tiny_dtype(name):
  from tinygrad import dtypes
  return {"bool": dtypes.bool, "int8": dtypes.int8, "uint8": dtypes.uint8, "int16": dtypes.int16,
          "uint16": dtypes.uint16, "int32": dtypes.int32, "uint32": dtypes.uint32, "int64": dtypes.int64,
          "uint64": dtypes.uint64, "float16": dtypes.float16, "bfloat16": dtypes.bfloat16, "float32": dtypes.float32,
          "float64": dtypes.float64}[name]

def sum_dtype(dt):
  """tinygrad's sum_acc_dtype: ints sum in at least int32/uint32, bool in int32, floats keep 16-bit outputs"""
  if dt == "bool": return "int32"
  if dt in ("int8", "int16"): return "int32"
  if dt in ("uint8", "uint16"): return "uint32"
  return dt

OPS = {}
def op(name, torch_fn, np_fn=None, tiny_fn=None, moves=False):
  OPS[name] = (torch_fn, np_fn, tiny_fn or (lambda p, *t: getattr(t[0], name)(*t[1:])), moves)

def binary(name, tfn, nfn, tiny=None):
  def t_(p, a, b=None):
    if "scalar" in p:
      # a 0-d tensor promotes like a Python scalar in torch (it adopts the other operand's dtype in its category)
      sc = torch.tensor(p["scalar"])
      return tfn(sc, a) if p.get("reverse") else tfn(a, sc)
    return tfn(a, b)
  def n_(p, a, b=None):
    if "scalar" in p:
      s = np.array(p["scalar"]).astype(a.dtype)
      return nfn(s, a) if p.get("reverse") else nfn(a, s)
    return nfn(a, b)
  def g_(p, a, b=None):
    f = tiny or (lambda x, y: getattr(x, name)(y))
    if "scalar" in p: return f(p["scalar"], a) if p.get("reverse") else f(a, p["scalar"])
    return f(a, b)
  op(name, t_, nfn and n_, g_)

binary("add", lambda a, b: a + b, lambda a, b: a + b, lambda a, b: a + b)
binary("sub", lambda a, b: a - b, lambda a, b: a - b, lambda a, b: a - b)
binary("mul", lambda a, b: a * b, lambda a, b: a * b, lambda a, b: a * b)
binary("div", lambda a, b: a / b, lambda a, b: (a / b).astype(np.float32), lambda a, b: a / b)
binary("maximum", torch.maximum if hasattr(torch, "maximum") else None, np.maximum,
       lambda a, b: a.maximum(b) if hasattr(a, "maximum") else b.maximum(a))
binary("minimum", torch.minimum, np.minimum, lambda a, b: a.minimum(b) if hasattr(a, "minimum") else b.minimum(a))
binary("lt", lambda a, b: a < b, lambda a, b: a < b, lambda a, b: a < b)
binary("le", lambda a, b: a <= b, lambda a, b: a <= b, lambda a, b: a <= b)
binary("gt", lambda a, b: a > b, lambda a, b: a > b, lambda a, b: a > b)
binary("ge", lambda a, b: a >= b, lambda a, b: a >= b, lambda a, b: a >= b)
binary("eq", lambda a, b: a == b, lambda a, b: a == b, lambda a, b: a.eq(b) if hasattr(a, "eq") else b.eq(a))
binary("ne", lambda a, b: a != b, lambda a, b: a != b, lambda a, b: a.ne(b) if hasattr(a, "ne") else b.ne(a))
binary("bitwise_and", lambda a, b: a & b, lambda a, b: a & b, lambda a, b: a & b)
binary("bitwise_or", lambda a, b: a | b, lambda a, b: a | b, lambda a, b: a | b)
binary("bitwise_xor", lambda a, b: a ^ b, lambda a, b: a ^ b, lambda a, b: a ^ b)
binary("lshift", lambda a, b: a << b, lambda a, b: a << b, lambda a, b: a << b)
binary("rshift", lambda a, b: a >> b, lambda a, b: a >> b, lambda a, b: a >> b)
binary("pow", lambda a, b: a ** b, None, lambda a, b: a ** b)
binary("mod", lambda a, b: torch.remainder(a, b) if isinstance(a, torch.Tensor) else torch.remainder(torch.tensor(a), b),
       lambda a, b: np.mod(a, b), lambda a, b: a % b)
binary("fmod", lambda a, b: torch.fmod(a, b), lambda a, b: np.fmod(a, b), lambda a, b: a.fmod(b))
binary("copysign", torch.copysign, None, lambda a, b: a.copysign(b))
binary("logaddexp", torch.logaddexp, None, lambda a, b: a.logaddexp(b))

def _div_round(p, a, b):
  return torch.div(a, b, rounding_mode=p["rounding_mode"])
def _div_round_np(p, a, b):
  if p["rounding_mode"] == "floor": return np.floor_divide(a, b)
  q = np.floor_divide(a, b)
  return q
op("div_round", _div_round, _div_round_np, lambda p, a, b: a.div(b, rounding_mode=p["rounding_mode"]))

op("where", lambda p, c, x, y: torch.where(c, x, y), lambda p, c, x, y: np.where(c, x, y),
   lambda p, c, x, y: c.where(x, y))
op("lerp", lambda p, a, b, w: torch.lerp(a, b, w), None, lambda p, a, b, w: a.lerp(b, w))
op("masked_fill", lambda p, a, m: a.masked_fill(m, p["value"]), None, lambda p, a, m: a.masked_fill(m, p["value"]))
op("clamp", lambda p, a: torch.clamp(a, p.get("min"), p.get("max")), None, lambda p, a: a.clamp(p.get("min"), p.get("max")))

def unary(name, tfn, tiny=None, np_fn=None):
  op(name, lambda p, a: tfn(a), np_fn and (lambda p, a: np_fn(a)), (lambda p, a: tiny(a)) if tiny else (lambda p, a: getattr(a, name)()))

F = torch.nn.functional
unary("neg", torch.neg, lambda a: -a)
unary("abs", torch.abs)
unary("sign", torch.sign)
unary("exp", torch.exp)
unary("exp2", torch.exp2)
unary("log", torch.log)
unary("log2", torch.log2)
unary("log10", torch.log10)
unary("sqrt", torch.sqrt)
unary("rsqrt", torch.rsqrt)
unary("reciprocal", torch.reciprocal)
unary("sin", torch.sin)
unary("cos", torch.cos)
unary("tan", torch.tan)
unary("asin", torch.asin)
unary("acos", torch.acos)
unary("atan", torch.atan)
unary("sinh", torch.sinh)
unary("cosh", torch.cosh)
unary("tanh", torch.tanh)
unary("asinh", torch.asinh)
unary("acosh", torch.acosh)
unary("atanh", torch.atanh)
unary("trunc", torch.trunc)
unary("floor", torch.floor)
unary("ceil", torch.ceil)
unary("round", torch.round)
unary("isnan", torch.isnan)
unary("isinf", torch.isinf)
unary("isfinite", torch.isfinite)
unary("square", torch.square)
unary("logical_not", torch.logical_not)
unary("bitwise_not", torch.bitwise_not, lambda a: ~a, np_fn=np.invert)
unary("relu", torch.relu)
unary("relu6", F.relu6)
unary("sigmoid", torch.sigmoid)
unary("logsigmoid", F.logsigmoid)
unary("hardsigmoid", F.hardsigmoid)
unary("hardswish", F.hardswish)
unary("hardtanh", F.hardtanh)
unary("gelu", lambda a: F.gelu(a, approximate="tanh"))  # tinygrad's gelu is the tanh approximation
unary("quick_gelu", lambda a: a * torch.sigmoid(a * 1.702))
unary("silu", F.silu)
unary("swish", F.silu)
unary("mish", F.mish)
unary("softsign", F.softsign)
unary("erf", torch.erf)
unary("celu", F.celu)
unary("selu", lambda a: 1.0507 * torch.where(a >= 0, a, 1.67326 * (torch.exp(a) - 1)))  # tinygrad's rounded constants
op("elu", lambda p, a: F.elu(a, p.get("alpha", 1.0)), None, lambda p, a: a.elu(p.get("alpha", 1.0)))
op("leaky_relu", lambda p, a: F.leaky_relu(a, p.get("neg_slope", 0.01)), None,
   lambda p, a: a.leaky_relu(p.get("neg_slope", 0.01)))
op("softplus", lambda p, a: F.softplus(a, p.get("beta", 1.0)), None, lambda p, a: a.softplus(p.get("beta", 1.0)))

def _cast_torch(p, a):
  return a.to(TORCH[p["dtype"]])
def _cast_np(p, a):
  if p["dtype"] == "bfloat16": return torch.from_numpy(a.astype(np.float64)).to(torch.bfloat16)
  return a.astype(NUMPY[p["dtype"]])
op("cast", _cast_torch, _cast_np, lambda p, a: a.cast(_tiny_dtype(p["dtype"])))
op("bitcast", None, None, lambda p, a: a.bitcast(_tiny_dtype(p["dtype"])))
op("contiguous", lambda p, a: a.contiguous(), lambda p, a: a.copy(), lambda p, a: a.contiguous(), moves=True)

# reductions: tinygrad's result dtypes (sum/prod of small ints widen to int32/uint32, mean of ints is float32,
# argmax/argmin are int32)
def _sum(p, a):
  dt = sum_dtype(dtype_of(a))
  if a.dtype == torch.bool: a = a.to(torch.int32)
  ax = _ax(p)
  return (a.sum(dim=ax, keepdim=p.get("keepdim", False)) if ax is not None else a.sum()).to(TORCH[dt])
def _sum_np(p, a):
  return np.sum(a, axis=_ax(p), keepdims=p.get("keepdim", False)).astype(NUMPY[sum_dtype(dtype_of(a))])
op("sum", _sum, _sum_np, lambda p, a: a.sum(_ax(p), keepdim=p.get("keepdim", False)))
def _one_axis_at_a_time(fn, a, ax, keep):
  """reduce over several axes with a torch function that takes one dim"""
  if ax is None: ax = tuple(range(a.dim()))
  axes = sorted({d % a.dim() for d in ([ax] if isinstance(ax, int) else ax)}, reverse=True)
  for d in axes: a = fn(a, dim=d, keepdim=keep)
  return a
def _prod(p, a):
  # tinygrad's prod keeps the input dtype (torch widens ints to int64)
  return _one_axis_at_a_time(torch.prod, a, _ax(p), bool(p.get("keepdim"))).to(a.dtype)
op("prod", _prod, None, lambda p, a: a.prod(_ax(p), keepdim=p.get("keepdim", False)))
def _amax(fn, nfn):
  def t_(p, a):
    ax = _ax(p)
    if ax is None: ax = tuple(range(a.dim()))
    if a.dim() == 0: return a.clone()
    return fn(a, dim=ax, keepdim=p.get("keepdim", False))
  def n_(p, a): return nfn(a, axis=_ax(p), keepdims=p.get("keepdim", False))
  return t_, n_
op("max", *_amax(torch.amax, np.max), lambda p, a: a.max(_ax(p), keepdim=p.get("keepdim", False)))
op("min", *_amax(torch.amin, np.min), lambda p, a: a.min(_ax(p), keepdim=p.get("keepdim", False)))
def _mean(p, a):
  if not a.is_floating_point(): a = a.to(torch.float32)
  ax = _ax(p)
  return a.mean(dim=ax, keepdim=p.get("keepdim", False)) if ax is not None else a.mean()
op("mean", _mean, None, lambda p, a: a.mean(_ax(p), keepdim=p.get("keepdim", False)))
def _var(fn):
  def t_(p, a):
    ax = _ax(p)
    if ax is None: ax = tuple(range(a.dim()))
    return fn(a, dim=ax, keepdim=p.get("keepdim", False), unbiased=bool(p.get("correction", 1)))
  return t_
op("var", _var(torch.var), None, lambda p, a: a.var(_ax(p), keepdim=p.get("keepdim", False), correction=p.get("correction", 1)))
op("std", _var(torch.std), None, lambda p, a: a.std(_ax(p), keepdim=p.get("keepdim", False), correction=p.get("correction", 1)))
def _anyall(fn):
  def t_(p, a):
    if _ax(p) is None: return fn(a)
    return _one_axis_at_a_time(fn, a, _ax(p), bool(p.get("keepdim")))
  return t_
op("any", _anyall(torch.any), None, lambda p, a: a.any(_ax(p), keepdim=p.get("keepdim", False)))
op("all", _anyall(torch.all), None, lambda p, a: a.all(_ax(p), keepdim=p.get("keepdim", False)))
def _arg(fn):
  def t_(p, a):
    ax = _ax(p)
    r = fn(a, dim=ax, keepdim=p.get("keepdim", False)) if ax is not None else fn(a)
    return r.to(torch.int32)
  return t_
op("argmax", _arg(torch.argmax), None, lambda p, a: a.argmax(_ax(p), keepdim=p.get("keepdim", False)))
op("argmin", _arg(torch.argmin), None, lambda p, a: a.argmin(_ax(p), keepdim=p.get("keepdim", False)))
def _cumsum(p, a):
  dt = sum_dtype(dtype_of(a))
  return torch.cumsum(a, dim=p.get("axis", 0)).to(TORCH[dt])
op("cumsum", _cumsum, None, lambda p, a: a.cumsum(p.get("axis", 0)))
def _lse(p, a):
  ax = _ax(p)
  if ax is None: ax = tuple(range(a.dim()))
  return torch.logsumexp(a, dim=ax, keepdim=p.get("keepdim", False))
op("logsumexp", _lse, None, lambda p, a: a.logsumexp(_ax(p), keepdim=p.get("keepdim", False)))
op("softmax", lambda p, a: torch.softmax(a, dim=p.get("axis", -1)), None, lambda p, a: a.softmax(p.get("axis", -1)))
op("log_softmax", lambda p, a: torch.log_softmax(a, dim=p.get("axis", -1)), None,
   lambda p, a: a.log_softmax(p.get("axis", -1)))

# movement
def _pairs(flat): return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
op("reshape", lambda p, a: a.reshape(p["shape"]), None, lambda p, a: a.reshape(p["shape"]), moves=True)
op("permute", lambda p, a: a.permute(p["order"]), None, lambda p, a: a.permute(p["order"]), moves=True)
op("transpose", lambda p, a: a.transpose(p["dim0"], p["dim1"]), None, lambda p, a: a.transpose(p["dim0"], p["dim1"]), moves=True)
op("expand", lambda p, a: a.expand(p["shape"]), None, lambda p, a: a.expand(p["shape"]), moves=True)
def _pad_torch(p, a):
  pairs = _pairs(p["pad"])
  flat = []
  for b, e in reversed(pairs): flat += [b, e]
  mode = p.get("mode", "constant")
  if mode == "constant": return F.pad(a, flat, mode="constant", value=p.get("value", 0.0))
  # torch's reflect/replicate/circular pad the trailing dims of a batched input only: add leading dims as needed
  lead = sum(1 for b, e in pairs if (b, e) == (0, 0) and True)
  x, squeezed = a, 0
  nd = a.dim()
  k = len(pairs) - next(i for i, pe in enumerate(pairs) if pe != (0, 0))
  while x.dim() < k + 2: x, squeezed = x.unsqueeze(0), squeezed + 1
  flat_k = []
  for b, e in reversed(pairs[len(pairs) - k:]): flat_k += [b, e]
  if x.is_floating_point(): r = F.pad(x, flat_k, mode=mode)
  else: r = F.pad(x.double(), flat_k, mode=mode).to(x.dtype)
  for _ in range(squeezed): r = r.squeeze(0)
  del lead, nd
  return r
op("pad", _pad_torch, None, lambda p, a: a.pad(_pairs(p["pad"]), mode=p.get("mode", "constant"), value=p.get("value", 0.0)), moves=True)
op("shrink", lambda p, a: a[tuple(slice(b, e) for b, e in _pairs(p["shrink"]))], None,
   lambda p, a: a.shrink(tuple(_pairs(p["shrink"]))), moves=True)
op("flip", lambda p, a: a.flip(p["axis"]), None, lambda p, a: a.flip(p["axis"]), moves=True)
op("squeeze", lambda p, a: a.squeeze(p["dim"]) if "dim" in p else a.squeeze(), None,
   lambda p, a: a.squeeze(p.get("dim")), moves=True)
op("unsqueeze", lambda p, a: a.unsqueeze(p["dim"]), None, lambda p, a: a.unsqueeze(p["dim"]), moves=True)
op("flatten", lambda p, a: a.flatten(p.get("start_dim", 0), p.get("end_dim", -1)), None,
   lambda p, a: a.flatten(p.get("start_dim", 0), p.get("end_dim", -1)), moves=True)
def _slices(p):
  # "slice" is start:stop:step per dim separated by ',' (empty start/stop = Python's None), e.g. "1:4:2,::-1"
  def num(x): return int(x) if x else None
  return tuple(slice(*[num(x) for x in d.split(":")]) for d in p["slice"].split(","))
def _slice_torch(p, a):
  # torch has no negative steps: select the indices Python's slicing gives
  res = a
  for d, s in enumerate(_slices(p)):
    idx = list(range(res.shape[d]))[s]
    res = res.index_select(d, torch.tensor(idx, dtype=torch.int64)) if idx else res.narrow(d, 0, 0)
  return res
op("slice", _slice_torch, None, lambda p, a: a[_slices(p)], moves=True)
op("cat", lambda p, *t: torch.cat(t, dim=p.get("dim", 0)), None, lambda p, a, *t: a.cat(*t, dim=p.get("dim", 0)), moves=True)
op("stack", lambda p, *t: torch.stack(t, dim=p.get("dim", 0)), None, lambda p, a, *t: a.stack(*t, dim=p.get("dim", 0)), moves=True)
op("repeat", lambda p, a: a.repeat(*p["repeats"]), None, lambda p, a: a.repeat(p["repeats"]), moves=True)
op("split", lambda p, a: a.split(p["sizes"] if len(p["sizes"]) > 1 else p["sizes"][0], dim=p.get("dim", 0)), None,
   lambda p, a: a.split(p["sizes"] if len(p["sizes"]) > 1 else p["sizes"][0], dim=p.get("dim", 0)), moves=True)
op("chunk", lambda p, a: a.chunk(p["chunks"], dim=p.get("dim", 0)), None,
   lambda p, a: a.chunk(p["chunks"], dim=p.get("dim", 0)), moves=True)
op("gather", lambda p, a, i: torch.gather(a, p["dim"], i.to(torch.int64)), None, lambda p, a, i: a.gather(p["dim"], i))
op("one_hot", lambda p, a: F.one_hot(a.to(torch.int64), p["num_classes"]), None, lambda p, a: a.one_hot(p["num_classes"]))
op("index", lambda p, a, i: a[i.to(torch.int64)], None, lambda p, a, i: a[i])  # x[idx_tensor] on dim 0

# assign: input 0 is the target buffer, input 1 the value; "shrink" assigns into that view of the target;
# "value=flip0_add" assigns target.flip(0) + value (reads the target it writes: tinygrad's write-after-read ordering).
# The output is the whole target after the assign is realized.
def _assign_torch(p, t, x):
  t = t.clone()
  if p.get("value") == "flip0_add": return t.flip(0) + x
  if "shrink" in p: t[tuple(slice(b, e) for b, e in _pairs(p["shrink"]))] = x
  else: t[...] = x
  return t
def _assign_tiny(p, t, x):
  t = t.contiguous().realize()
  if p.get("value") == "flip0_add": t.assign(t.flip(0) + x).realize()
  elif "shrink" in p: t.shrink(tuple(_pairs(p["shrink"]))).assign(x).realize()
  else: t.assign(x).realize()
  return t
op("assign", _assign_torch, None, _assign_tiny)

# matmul / conv / pool
op("matmul", lambda p, a, b: torch.matmul(a, b), None, lambda p, a, b: a.matmul(b))
op("dot", lambda p, a, b: torch.matmul(a, b), None, lambda p, a, b: a.dot(b))
def _conv(p, x, w, b=None):
  return F.conv2d(x, w, b, stride=p.get("stride", 1), padding=p.get("padding", 0), dilation=p.get("dilation", 1),
                  groups=p.get("groups", 1))
op("conv2d", _conv, None, lambda p, x, w, b=None: x.conv2d(w, b, groups=p.get("groups", 1), stride=p.get("stride", 1),
                                                          dilation=p.get("dilation", 1), padding=p.get("padding", 0)))
def _pool_args(p): return dict(kernel_size=tuple(p.get("kernel_size", (2, 2))), stride=p.get("stride"),
                               dilation=p.get("dilation", 1), padding=p.get("padding", 0))
op("max_pool2d", lambda p, x: F.max_pool2d(x, **{k: v for k, v in _pool_args(p).items() if v is not None}), None,
   lambda p, x: x.max_pool2d(**_pool_args(p)))
op("avg_pool2d", lambda p, x: F.avg_pool2d(x, **{k: v for k, v in _pool_args(p).items() if v is not None and k != "dilation"}),
   None, lambda p, x: x.avg_pool2d(**{k: v for k, v in _pool_args(p).items() if k != "dilation"}))

# creation (no inputs)
op("zeros", lambda p: torch.zeros(p["shape"], dtype=TORCH[p.get("dtype", "float32")]), None,
   lambda p: __import__("tinygrad").Tensor.zeros(*p["shape"], dtype=_tiny_dtype(p.get("dtype", "float32"))))
op("ones", lambda p: torch.ones(p["shape"], dtype=TORCH[p.get("dtype", "float32")]), None,
   lambda p: __import__("tinygrad").Tensor.ones(*p["shape"], dtype=_tiny_dtype(p.get("dtype", "float32"))))
op("full", lambda p: torch.full(p["shape"], p["value"], dtype=TORCH[p["dtype"]]), None,
   lambda p: __import__("tinygrad").Tensor.full(tuple(p["shape"]), p["value"], dtype=_tiny_dtype(p["dtype"])))
op("full_like", lambda p, a: torch.full_like(a, p["value"]), None, lambda p, a: a.full_like(p["value"]))
op("zeros_like", lambda p, a: torch.zeros_like(a), None, lambda p, a: a.zeros_like())
op("ones_like", lambda p, a: torch.ones_like(a), None, lambda p, a: a.ones_like())
op("arange", lambda p: torch.arange(p["start"], p["stop"], p.get("step", 1), dtype=TORCH[p["dtype"]]), None,
   lambda p: __import__("tinygrad").Tensor.arange(p["start"], p["stop"], p.get("step", 1), dtype=_tiny_dtype(p["dtype"])))
op("linspace", lambda p: torch.linspace(p["start"], p["stop"], p["steps"], dtype=TORCH[p["dtype"]]), None,
   lambda p: __import__("tinygrad").Tensor.linspace(p["start"], p["stop"], p["steps"], dtype=_tiny_dtype(p["dtype"])))
op("eye", lambda p: torch.eye(p["n"], p.get("m", p["n"]), dtype=TORCH[p.get("dtype", "float32")]), None,
   lambda p: __import__("tinygrad").Tensor.eye(p["n"], p.get("m"), dtype=_tiny_dtype(p.get("dtype", "float32"))))

# ------------------------------------------------------------------------------------------------ computing outputs
def _uses_numpy(case):
  if case.op in ("sum", "prod", "cumsum") and sum_dtype(case.inputs[0].dtype) in WIDE_UINT: return True
  return any(i.dtype in WIDE_UINT for i in case.inputs) or case.params.get("dtype") in WIDE_UINT

def compute(case):
  """the expected outputs as a list of (fixture dtype, shape, bytes), with the case's tinygrad overrides applied"""
  outs = compute_torch(case)
  if case.name not in OVERRIDES: return outs
  dt, shape, data = outs[0]
  vals = as_float64(dt, shape, data).astype(np.float64).ravel().copy()
  for i, v in OVERRIDES[case.name][1].items(): vals[i] = v
  if dt == "bfloat16": data = raw_bytes(torch.tensor(vals).to(torch.bfloat16))
  else: data = vals.astype(NUMPY[dt]).tobytes()
  return [(dt, shape, data)] + outs[1:]

def compute_torch(case):
  if case.outputs is not None: return case.outputs
  if case.op == "bitcast":
    # the output holds the input's bytes (inputs of bitcast cases carry no view); the last axis rescales when the
    # item sizes differ
    i, dst = case.inputs[0], case.params["dtype"]
    assert not i.view
    shape = i.shape[:-1] + (i.shape[-1] * ITEMSIZE[i.dtype] // ITEMSIZE[dst],) if ITEMSIZE[i.dtype] != ITEMSIZE[dst] else i.shape
    return [(dst, shape, raw_bytes(i.data))]
  tfn, nfn, _, moves = OPS[case.op]
  if _uses_numpy(case) and moves:
    # data movement only: run torch on the signed twin dtype and reinterpret
    args = []
    for i in case.inputs:
      d = i.data if isinstance(i.data, torch.Tensor) else torch.from_numpy(i.data.view(NUMPY[SIGNED_TWIN[i.dtype]]).copy())
      args.append(view_torch(d, i.view))
    outs = tfn(case.params, *args)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    res = []
    for o, src in zip(outs, [case.inputs[0]] * len(outs)):
      dt = src.dtype if src.dtype in WIDE_UINT else dtype_of(o)
      res.append((dt, tuple(o.shape), raw_bytes(o)))
    return res
  if _uses_numpy(case):
    assert nfn is not None, f"{case.name}: no numpy fallback for {case.op}"
    def host(d):
      if not isinstance(d, torch.Tensor): return d
      return (d.float() if d.dtype == torch.bfloat16 else d).numpy()
    args = [view_numpy(host(i.data), i.view) for i in case.inputs]
    with np.errstate(all="ignore"):
      o = nfn(case.params, *args)
    if not isinstance(o, torch.Tensor): o = np.asarray(o)
    return [(dtype_of(o), tuple(o.shape), raw_bytes(o))]
  args = [view_torch(i.data, i.view) for i in case.inputs]
  try:
    outs = tfn(case.params, *args)
  except RuntimeError as e:
    # torch 1.13 lacks many half/bfloat16 (and some integer) CPU kernels: compute in float32 (float64 for ints, exact
    # for the small values used) and round the result back to the input dtype
    orig = [a.dtype for a in args if a.dtype in (torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8)]
    if not orig: raise RuntimeError(f"{case.name}: {e}") from e
    wide = lambda a: a.double() if not a.is_floating_point() and a.dtype != torch.bool else (a.float() if a.dtype in (torch.float16, torch.bfloat16) else a)
    outs = tfn(case.params, *[wide(a) for a in args])
    outs = tuple(o.to(orig[0]) if o.dtype in (torch.float32, torch.float64) else o
                 for o in (outs if isinstance(outs, (tuple, list)) else (outs,)))
  outs = outs if isinstance(outs, (tuple, list)) else (outs,)
  if case.post: outs = [case.post(o) for o in outs]
  return [(dtype_of(o), tuple(o.shape), raw_bytes(o)) for o in outs]

def tolerance(case, outs):
  if case.tol is not None: return case.tol
  dts = [d for d, _, _ in outs] + [i.dtype for i in case.inputs]
  for d in ("bfloat16", "float16"):
    if d in dts: return TOL[d]
  return TOL["float32"]

def as_float64(dt, shape, data):
  """fixture bytes -> numpy float64 (or int/bool) array for comparisons"""
  if dt == "bfloat16":
    u = np.frombuffer(data, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return u.view(np.float32).astype(np.float64).reshape(shape)
  return np.frombuffer(data, dtype=NUMPY[dt]).reshape(shape)

# ------------------------------------------------------------------------------------------------ tinygrad check
def tiny_outputs(case):
  from tinygrad import Tensor, dtypes
  tensors = []
  for i in case.inputs:
    if i.dtype == "bfloat16": t = Tensor(i.data.float().numpy()).cast(dtypes.bfloat16)
    elif isinstance(i.data, torch.Tensor): t = Tensor(i.data.numpy(), dtype=_tiny_dtype(i.dtype))
    else: t = Tensor(i.data, dtype=_tiny_dtype(i.dtype))
    for name, args in parse_view(i.view):
      if name == "permute": t = t.permute(*args)
      elif name == "flip": t = t.flip(args)
      elif name == "shrink": t = t.shrink(tuple(args))
      elif name == "expand": t = t.expand(*args)
    tensors.append(t)
  outs = OPS[case.op][2](case.params, *tensors)
  outs = outs if isinstance(outs, (tuple, list)) else (outs,)
  res = []
  for o in outs:
    # a result that is still a weak (Python-scalar) dtype realizes in the default dtype
    dt = {dtypes.weakfloat: dtypes.float32, dtypes.weakint: dtypes.int32}.get(o.dtype, o.dtype)
    name = next(n for n in DTYPES if _tiny_dtype(n) == dt)
    if name == "bfloat16": res.append((name, o.shape, o.cast(dtypes.float32).numpy().astype(np.float64)))
    else: res.append((name, o.shape, o.numpy()))
  return res

def agree(dt, exp, got, atol, rtol):
  if exp.shape != got.shape: return False
  if dt in FLOATS:
    e, g = exp.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore"):
      close = np.abs(g - e) <= atol + rtol * np.abs(e)
    return bool(np.all(np.where(np.isnan(e), np.isnan(g), np.where(np.isinf(e), g == e, close))))
  return bool(np.array_equal(exp, got))

def check_tinygrad(case, outs, atol, rtol):
  try:
    got = tiny_outputs(case)
  except subprocess.CalledProcessError:
    # tinygrad's clang on this machine cannot build the kernel (no __bf16 on the target; its int pow is not
    # implemented): the oracle is unavailable, the fixture stands on torch alone
    return "UNAVAILABLE"
  except Exception as e:  # noqa: BLE001 - report every failure of the oracle
    return f"tinygrad raised {type(e).__name__}: {e}"
  if len(got) != len(outs): return f"{len(got)} outputs, fixture has {len(outs)}"
  for (dt, shape, data), (gdt, gshape, gval) in zip(outs, got):
    if dt != gdt: return f"dtype {gdt} != {dt}"
    if tuple(gshape) != tuple(shape): return f"shape {gshape} != {shape}"
    exp = as_float64(dt, shape, data)
    g = np.asarray(gval).reshape(shape)
    if not agree(dt, exp, g, atol, rtol):
      bad = [i for i in range(exp.size) if not agree(dt, exp.ravel()[i:i + 1], g.ravel()[i:i + 1], atol, rtol)]
      return "values differ at " + ", ".join(f"{i}: torch {exp.ravel()[i]!r} tinygrad {g.ravel()[i]!r}" for i in bad[:16])
  return None

# ------------------------------------------------------------------------------------------------ the case lists
# unary float ops: (name, low, high) input range of the random cases; specials are fed to every op
UNARY_FLOAT = [("neg", -2, 2), ("abs", -2, 2), ("sign", -2, 2), ("exp", -2, 2), ("exp2", -2, 2), ("log", 0.01, 4),
               ("log2", 0.01, 4), ("log10", 0.01, 4), ("sqrt", 0, 4), ("rsqrt", 0.01, 4), ("reciprocal", 0.1, 2),
               ("sin", -4, 4), ("cos", -4, 4), ("tan", -1.4, 1.4), ("asin", -0.99, 0.99), ("acos", -0.99, 0.99),
               ("atan", -3, 3), ("sinh", -2, 2), ("cosh", -2, 2), ("tanh", -3, 3), ("asinh", -3, 3),
               ("acosh", 1.01, 4), ("atanh", -0.95, 0.95), ("trunc", -5, 5), ("floor", -5, 5), ("ceil", -5, 5),
               ("round", -5, 5), ("isnan", -2, 2), ("isinf", -2, 2), ("isfinite", -2, 2), ("square", -2, 2),
               ("logical_not", -1, 1), ("relu", -2, 2), ("relu6", -8, 8), ("sigmoid", -4, 4), ("logsigmoid", -4, 4),
               ("hardsigmoid", -4, 4), ("hardswish", -4, 4), ("hardtanh", -2, 2), ("gelu", -3, 3),
               ("quick_gelu", -3, 3), ("silu", -3, 3), ("swish", -3, 3), ("mish", -3, 3), ("softsign", -3, 3),
               ("erf", -2, 2), ("celu", -2, 2), ("selu", -2, 2), ("elu", -2, 2), ("leaky_relu", -2, 2),
               ("softplus", -3, 3)]
# ops whose torch result on special values is not tinygrad's (documented per op), and ops not defined on them
ROUND_HALF = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0]

def build_unary():
  seed = 100
  for name, lo, hi in UNARY_FLOAT:
    seed += 1
    add("unary", f"{name}_f32", name, {}, [In(uni((4, 5), seed, lo, hi), "float32")])
    add("unary", f"{name}_f32_view", name, {}, [In(uni((5, 4), seed + 500, lo, hi), "float32", "permute:1,0")])
    add("unary", f"{name}_f16", name, {}, [In(uni((3, 4), seed + 1000, lo, hi), "float16")])
    # tinygrad keeps bfloat16 intermediates in its composite formulas: asinh and mish drift a little more
    tol = (2e-2, 3e-2) if name in ("asinh", "mish") else None
    add("unary", f"{name}_bf16", name, {}, [In(uni((3, 4), seed + 2000, lo, hi), "bfloat16")], tol=tol)
    add("unary", f"{name}_f64", name, {}, [In(uni((3, 4), seed + 3000, lo, hi), "float64")])
    add("unary", f"{name}_f32_special", name, {}, [In(SPECIAL, "float32")])
  add("unary", "round_f32_halves", "round", {}, [In(ROUND_HALF, "float32")])
  add("unary", "exp_f32_overflow", "exp", {}, [In([88.0, 89.0, 100.0, -100.0, -104.0, 710.0], "float32")])
  add("unary", "exp_f16_overflow", "exp", {}, [In([11.0, 12.0, -20.0], "float16")])
  add("unary", "elu_f32_alpha", "elu", {"alpha": 0.5}, [In(uni((3, 4), 7), "float32")])
  add("unary", "leaky_relu_f32_slope", "leaky_relu", {"neg_slope": 0.2}, [In(uni((3, 4), 8), "float32")])
  add("unary", "softplus_f32_beta", "softplus", {"beta": 3.0}, [In(uni((3, 4), 9), "float32")])
  add("unary", "softplus_f32_large", "softplus", {}, [In([300.0, -300.0, 30.0, -30.0], "float32")])
  add("unary", "sigmoid_f32_large", "sigmoid", {}, [In([100.0, -100.0, 20.0, -20.0], "float32")])
  # integer and bool inputs of the ops defined on them
  for i, (name, dt) in enumerate([("neg", "int8"), ("neg", "int32"), ("neg", "int64"), ("abs", "int8"), ("abs", "int16"),
                                  ("abs", "int32"), ("sign", "int32"), ("sign", "int64"), ("square", "int32"),
                                  ("relu", "int32"), ("relu", "int64"), ("bitwise_not", "int8"), ("bitwise_not", "uint8"),
                                  ("bitwise_not", "int32"), ("bitwise_not", "uint32"), ("bitwise_not", "uint64"),
                                  ("bitwise_not", "int64"), ("logical_not", "bool"), ("logical_not", "int32"),
                                  ("isnan", "int32"), ("trunc", "int32"), ("floor", "int64"), ("ceil", "int8"),
                                  ("round", "int32"), ("abs", "uint8")]):
    lo, hi = {"int8": (-127, 128), "int32": (-1000, 1000), "square": (-1000, 1000)}.get(dt, (-100, 100))
    if dt.startswith("uint"): lo = 0
    vals = rand_of(dt, (3, 4), 200 + i, ilo=lo, ihi=hi) if dt not in ("uint32", "uint64", "bool") else rand_of(dt, (3, 4), 200 + i)
    post = (lambda o: o.to(torch.float32)) if name == "round" else None  # tinygrad's round of an int is float32
    add("unary", f"{name}_{dt}", name, {}, [In(vals, dt)], post=post)

def build_binary():
  s = 300
  def pair(dt, shape_a, shape_b, seed, lo=-2.0, hi=2.0, ilo=None, ihi=None, avoid_zero=False):
    a = rand_of(dt, shape_a, seed, lo, hi, ilo, ihi)
    b = rand_of(dt, shape_b, seed + 1, lo, hi, ilo, ihi)
    if avoid_zero:
      b = np.where(b == 0, 1, b)
      if dt in FLOATS: b = np.where(np.abs(b) < 0.1, 0.5, b)
    return a, b
  # add/sub/mul over every dtype
  for name in ("add", "sub", "mul", "maximum", "minimum"):
    for dt in ALL:
      if name == "sub" and dt == "bool": continue  # torch refuses; tinygrad's bool sub is not defined either
      s += 2
      lim = {"int32": (-30000, 30000), "int64": (-10**9, 10**9), "int16": (-150, 150), "int8": (-11, 11)}.get(dt, (None, None))
      a, b = pair(dt, (3, 4), (3, 4), s, ilo=lim[0], ihi=lim[1])
      add("binary", f"{name}_{dt}", name, {}, [In(a, dt), In(b, dt)])
  # broadcasting and views
  for i, (sa, sb) in enumerate([((3, 1), (1, 4)), ((4,), (3, 4)), ((), (2, 3)), ((2, 1, 4), (3, 1)), ((5, 1, 1), (1, 2, 3))]):
    for name in ("add", "mul", "sub"):
      a, b = pair("float32", sa, sb, 400 + 10 * i)
      add("binary", f"{name}_f32_bcast{i}", name, {}, [In(a, "float32"), In(b, "float32")])
  a, b = pair("float32", (4, 3), (3, 4), 420)
  add("binary", "add_f32_permuted", "add", {}, [In(a, "float32", "permute:1,0"), In(b, "float32")])
  a, b = pair("float32", (5, 6), (3, 4), 421)
  add("binary", "mul_f32_shrink_flip", "mul", {}, [In(a, "float32", "shrink:1:4,2:6"), In(b, "float32", "flip:0,1")])
  a, b = pair("int32", (4, 3), (1, 4), 422, ilo=-100, ihi=100)
  add("binary", "add_i32_permute_expand", "add", {}, [In(a, "int32", "permute:1,0"), In(b, "int32", "expand:3,4")])
  a, b = pair("float16", (2, 3, 4), (4, 3), 423)
  add("binary", "mul_f16_permute_bcast", "mul", {}, [In(a, "float16", "permute:0,2,1"), In(b, "float16")])
  # weak scalars (tinygrad's promotion: the scalar adopts the tensor's dtype; a float scalar makes an int tensor float)
  for i, (name, dt, sc, rev) in enumerate([("add", "int8", 3, 0), ("add", "int32", 2.5, 0), ("mul", "float16", 2.5, 0),
                                           ("sub", "float32", 2.0, 1), ("sub", "int32", 7, 1), ("mul", "uint8", 3, 0),
                                           ("div", "float32", 3.0, 0), ("div", "float32", 1.0, 1), ("div", "int32", 4, 0),
                                           ("maximum", "float32", 0.5, 0), ("minimum", "int32", 0, 0),
                                           ("add", "bool", 1, 0), ("mul", "bfloat16", 0.5, 0), ("add", "float64", 1e-3, 0),
                                           ("lt", "float32", 0.0, 0), ("eq", "int32", 5, 0), ("ne", "int8", 3, 0),
                                           ("ge", "uint8", 128, 0), ("mul", "int64", -3, 0), ("add", "uint32", 5, 0),
                                           ("pow", "float32", 2, 0), ("pow", "float32", 3, 0), ("pow", "float32", 0.5, 0),
                                           ("pow", "float32", 2.0, 1), ("mod", "int32", 3, 0), ("mod", "float32", 1.5, 0),
                                           ("bitwise_and", "int32", 6, 0), ("bitwise_xor", "uint8", 255, 0),
                                           ("lshift", "int32", 2, 0), ("rshift", "uint32", 3, 0), ("lshift", "uint8", 1, 0),
                                           ("rshift", "int64", 4, 0)]):
    lo, hi = (0.1, 3) if name == "pow" and sc == 0.5 else (-3, 3)
    ilo, ihi = (0, 10) if dt.startswith("u") else (-10, 10)
    if name in ("lshift",): ilo, ihi = 0, 100
    if dt == "bool": ilo, ihi = 0, 2
    if dt == "uint32": ilo, ihi = 0, 4000000000
    a = rand_of(dt, (3, 4), 500 + i, lo, hi, ilo, ihi)
    p = {"scalar": sc}
    if rev: p["reverse"] = 1
    post = (lambda o: o.to(torch.int32)) if dt == "bool" else None  # bool + int scalar is int32 in tinygrad
    add("binary", f"{name}_{dt}_scalar{'_rev' if rev else ''}_{i}", name, p, [In(a, dt)], post=post)
  # overflow and wrap-around (C's signed overflow is undefined behaviour for int/long, so only the small ints, which
  # compute in int and narrow on store, and the unsigned types)
  add("binary", "add_i8_wrap", "add", {}, [In([127, -128, 100, -100], "int8"), In([1, -1, 100, -100], "int8")])
  add("binary", "sub_u8_wrap", "sub", {}, [In([0, 1, 255, 10], "uint8"), In([1, 2, 255, 20], "uint8")])
  add("binary", "mul_i16_wrap", "mul", {}, [In([300, -300, 256, 181], "int16"), In([300, 200, 256, 181], "int16")])
  add("binary", "mul_u32_wrap", "mul", {}, [In([4000000000, 65536, 3, 2**31], "uint32"), In([3, 65536, 5, 2], "uint32")])
  add("binary", "add_u64_wrap", "add", {}, [In([2**64 - 1, 2**63, 5], "uint64"), In([1, 2**63, 7], "uint64")])
  add("binary", "mul_f32_overflow", "mul", {}, [In([3e38, -3e38, 1e-30, 1e20], "float32"), In([10.0, 10.0, 1e-30, 1e20], "float32")])
  add("binary", "add_f16_overflow", "add", {}, [In([60000.0, -60000.0, 1.0], "float16"), In([60000.0, -60000.0, 0.0005], "float16")])
  add("binary", "mul_bf16_overflow", "mul", {}, [In([3e38, 1e-38], "bfloat16"), In([10.0, 1e-5], "bfloat16")])
  # division: true division (ints become float32), special values, rounding modes
  for dt in FLOATS + ["int32", "int8", "uint8", "int64", "bool"]:
    s += 2
    if dt == "bool":
      a, b = np.array([[1, 0, 1], [1, 1, 0]]), np.array([[1, 1, 1], [1, 1, 1]])
    else:
      a, b = pair(dt, (3, 4), (3, 4), s, ilo=-50 if dt[0] == "i" else 0, ihi=50, avoid_zero=True)
    add("binary", f"div_{dt}", "div", {}, [In(a, dt), In(b, dt)])
  add("binary", "div_f32_special", "div", {}, [In([1.0, -1.0, 0.0, 0.0, math.inf, -math.inf, math.nan, 5.0, -0.0],
                                                  "float32"),
                                               In([0.0, 0.0, 0.0, -0.0, 2.0, math.inf, 1.0, -0.0, 3.0], "float32")])
  for mode in ("trunc", "floor"):
    for dt in ("int8", "int32", "int64", "uint8", "uint32", "int16", "float32", "float64"):
      s += 2
      signed = dt[0] != "u"
      a, b = pair(dt, (3, 4), (3, 4), s, -10, 10, -100 if signed else 0, 100, avoid_zero=True)
      add("binary", f"div_{mode}_{dt}", "div_round", {"rounding_mode": mode}, [In(a, dt), In(b, dt)])
  # mod (Python's floor remainder) and fmod (C's truncating remainder)
  for dt in ("int8", "int32", "int64", "uint8", "uint64", "int16", "float32", "float64", "float16"):
    s += 2
    signed = dt[0] != "u"
    a, b = pair(dt, (3, 4), (3, 4), s, -10, 10, -100 if signed else 0, 100, avoid_zero=True)
    add("binary", f"mod_{dt}", "mod", {}, [In(a, dt), In(b, dt)])
  for dt in ("int32", "int8", "float32"):
    s += 2
    a, b = pair(dt, (3, 4), (3, 4), s, -10, 10, -100, 100, avoid_zero=True)
    add("binary", f"fmod_{dt}", "fmod", {}, [In(a, dt), In(b, dt)])
  # pow
  add("binary", "pow_f32", "pow", {}, [In(uni((3, 4), 600, 0.1, 3), "float32"), In(uni((3, 4), 601, -2, 2), "float32")])
  add("binary", "pow_f32_neg_base_int_exp", "pow", {}, [In(uni((3, 4), 602, -3, 3), "float32"),
                                                         In(ints((3, 4), 603, -3, 4).astype(np.float64), "float32")])
  add("binary", "pow_f32_special", "pow", {}, [In([0.0, 0.0, -2.0, 2.0, -0.0, 1.0, math.inf, 2.0, math.nan, 1.0],
                                                  "float32"),
                                               In([0.0, 2.0, 0.5, -1.0, 3.0, math.nan, 0.5, math.inf, 0.0, math.inf],
                                                  "float32")])
  add("binary", "pow_f64", "pow", {}, [In(uni((3, 4), 604, 0.1, 3), "float64"), In(uni((3, 4), 605, -2, 2), "float64")])
  add("binary", "pow_f16", "pow", {}, [In(uni((3, 4), 606, 0.1, 3), "float16"), In(uni((3, 4), 607, -2, 2), "float16")])
  # no int32 ** int32 tensor case: tinygrad itself has no integer POW (its decomposition is float-only, "TODO: int
  # pow"), and tinygrad.c reports the same gap as an error at realize
  # comparisons (values from a small set so that ties happen), with nan
  for name in ("lt", "le", "gt", "ge", "eq", "ne"):
    for dt in ("float32", "int8", "uint8", "int64", "uint64", "float16", "bool", "bfloat16", "int32"):
      s += 2
      if dt == "bool": a, b = ints((3, 4), s, 0, 2), ints((3, 4), s + 1, 0, 2)
      elif dt == "uint64": a, b = ints((3, 4), s, 0, 4).astype(np.uint64) * np.uint64(2**62), ints((3, 4), s + 1, 0, 4).astype(np.uint64) * np.uint64(2**62)
      elif dt in FLOATS: a, b = ints((3, 4), s, -2, 3) * 0.5, ints((3, 4), s + 1, -2, 3) * 0.5
      else: a, b = ints((3, 4), s, 0 if dt[0] == "u" else -3, 3) * 40, ints((3, 4), s + 1, 0 if dt[0] == "u" else -3, 3) * 40
      add("binary", f"{name}_{dt}", name, {}, [In(a, dt), In(b, dt)])
    add("binary", f"{name}_f32_nan", name, {}, [In([math.nan, 1.0, math.nan, math.inf, -0.0, -math.inf], "float32"),
                                                In([1.0, math.nan, math.nan, math.inf, 0.0, 1.0], "float32")])
  # nan in maximum/minimum
  for name in ("maximum", "minimum"):
    add("binary", f"{name}_f32_nan", name, {}, [In([math.nan, 1.0, math.nan, math.inf, -0.0, -math.inf], "float32"),
                                                In([1.0, math.nan, math.nan, 2.0, 0.0, 1.0], "float32")])
  # bitwise ops and shifts
  for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    for dt in INTS + ["bool"]:
      s += 2
      a, b = pair(dt, (3, 4), (3, 4), s)
      add("binary", f"{name}_{dt}", name, {}, [In(a, dt), In(b, dt)])
  for name in ("lshift", "rshift"):
    for dt in ("int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"):
      s += 2
      bits = ITEMSIZE[dt] * 8
      a = rand_of(dt, (3, 4), s, ilo=0 if name == "lshift" or dt[0] == "u" else -1000, ihi=100)
      if dt in ("uint32", "uint64") and name == "rshift": a = rand_of(dt, (3, 4), s)
      b = ints((3, 4), s + 1, 0, min(bits - 8, 7) if bits > 8 else 7)
      add("binary", f"{name}_{dt}", name, {}, [In(a, dt), In(b, dt)])
  # where, lerp, clamp, masked_fill, copysign, logaddexp
  for i, dt in enumerate(["float32", "int32", "bool", "float16", "uint64", "int8", "bfloat16", "float64"]):
    c = ints((3, 4), 700 + i, 0, 2)
    x, y = rand_of(dt, (3, 4), 710 + i), rand_of(dt, (3, 4), 720 + i)
    add("binary", f"where_{dt}", "where", {}, [In(c, "bool"), In(x, dt), In(y, dt)])
  add("binary", "where_f32_bcast", "where", {}, [In(ints((3, 1), 730, 0, 2), "bool"), In(uni((1, 4), 731), "float32"),
                                                 In(uni((), 732), "float32")])
  add("binary", "where_f32_view", "where", {}, [In(ints((4, 3), 733, 0, 2), "bool", "permute:1,0"),
                                                In(uni((3, 4), 734), "float32", "flip:1"), In(uni((3, 4), 735), "float32")])
  add("binary", "lerp_f32", "lerp", {}, [In(uni((3, 4), 740), "float32"), In(uni((3, 4), 741), "float32"),
                                         In(uni((3, 4), 742, 0, 1), "float32")])
  add("binary", "lerp_f32_bcast", "lerp", {}, [In(uni((3, 4), 743), "float32"), In(uni((4,), 744), "float32"),
                                               In(uni((3, 1), 745, 0, 1), "float32")])
  for i, (dt, mn, mx) in enumerate([("float32", -0.5, 0.5), ("float32", None, 0.0), ("float32", 1.0, None),
                                    ("int32", -5, 5), ("float16", -1.0, 1.0), ("uint8", 10, 200)]):
    p = {}
    if mn is not None: p["min"] = mn
    if mx is not None: p["max"] = mx
    add("binary", f"clamp_{dt}_{i}", "clamp", p, [In(rand_of(dt, (3, 4), 750 + i, ilo=-20 if dt[0] == "i" else 0, ihi=255 if dt == "uint8" else 20), dt)])
  add("binary", "clamp_f32_nan", "clamp", {"min": -1.0, "max": 1.0}, [In(SPECIAL, "float32")])
  add("binary", "masked_fill_f32", "masked_fill", {"value": -math.inf}, [In(uni((3, 4), 760), "float32"),
                                                                         In(ints((3, 4), 761, 0, 2), "bool")])
  add("binary", "masked_fill_i32_bcast", "masked_fill", {"value": 7}, [In(ints((3, 4), 762, -9, 9), "int32"),
                                                                       In(ints((1, 4), 763, 0, 2), "bool")])
  add("binary", "copysign_f32", "copysign", {}, [In(uni((3, 4), 770), "float32"), In(uni((3, 4), 771), "float32")])
  add("binary", "copysign_f32_zero", "copysign", {}, [In([1.0, 2.0, 3.0, 0.0, 4.0], "float32"),
                                                      In([-0.0, 0.0, -1.0, -2.0, math.inf], "float32")])
  add("binary", "logaddexp_f32", "logaddexp", {}, [In(uni((3, 4), 772, -5, 5), "float32"), In(uni((3, 4), 773, -5, 5), "float32")])
  add("binary", "logaddexp_f32_large", "logaddexp", {}, [In([100.0, -100.0, -math.inf, 0.0], "float32"),
                                                         In([99.0, -101.0, 1.0, -math.inf], "float32")])

# values of a cast's source that are defined in the destination (C leaves out-of-range float->int undefined)
def cast_values(src, dst):
  if src == "bool": return [True, False, True, False]
  if src in FLOATS:
    if dst == "bool": return [0.0, -0.0, 0.5, -2.0, math.inf, math.nan, 1.0, 0.0]
    if dst in FLOATS:
      v = [0.1, -2.5, 1e-3, 65504.0, -0.0, math.inf, -math.inf, math.nan, 3.14159265358979, 1e5, 1e-8]
      if src in ("float32", "float64", "bfloat16"): v += [1e30, -1e38]
      if src == "float64": v += [1e300]
      return v
    hi = {"int8": 127, "uint8": 255, "int16": 1000, "uint16": 1000}.get(dst, 60000)
    if src == "bfloat16": hi = min(hi, 250)
    v = [0.0, 0.5, 1.9, 2.5, 126.7, hi * 0.99, 7.0, 99.5]
    if dst[0] == "i": v += [-0.5, -1.9, -126.7, -hi * 0.99]
    return v
  lo, hi = INT_RANGE[src]
  v = [0, 1, 2, 100, hi - 1, hi // 2 + 3]
  if src[0] == "i": v += [-1, -2, lo, lo + 5, -100]
  return v

def build_cast():
  for src in ALL:
    for dst in ALL:
      add("cast", f"cast_{src}_{dst}", "cast", {"dtype": dst}, [In(cast_values(src, dst), src)])
  add("cast", "cast_f32_i32_view", "cast", {"dtype": "int32"}, [In(uni((4, 3), 800, -50, 50), "float32", "permute:1,0")])
  add("cast", "cast_i64_f32_big", "cast", {"dtype": "float32"}, [In([2**40 + 1, -(2**53) - 1, 16777217], "int64")])
  add("cast", "cast_i32_f16_overflow", "cast", {"dtype": "float16"}, [In([70000, -70000, 65504, 2049], "int32")])
  groups = [["float32", "int32", "uint32"], ["float16", "bfloat16", "int16", "uint16"], ["float64", "int64", "uint64"],
            ["int8", "uint8"]]
  for g in groups:
    for src in g:
      for dst in g:
        if src == dst: continue
        vals = cast_values(src, "float32" if src in FLOATS else src)
        if src in FLOATS: vals = [v for v in vals if not math.isnan(v)]  # nan payload bits are not portable
        add("cast", f"bitcast_{src}_{dst}", "bitcast", {"dtype": dst}, [In(vals, src)])
  add("cast", "bitcast_float32_uint8_resize", "bitcast", {"dtype": "uint8"}, [In(uni((2, 4), 840), "float32")])
  add("cast", "bitcast_uint8_float32_resize", "bitcast", {"dtype": "float32"}, [In(np.arange(16).reshape(2, 8) + 60, "uint8")])
  add("cast", "bitcast_int32_int16_resize", "bitcast", {"dtype": "int16"}, [In(ints((3, 2), 841, -10**9, 10**9), "int32")])
  add("cast", "bitcast_float16_int64_resize", "bitcast", {"dtype": "int64"}, [In(uni((2, 4), 842), "float16")])
  for dt in ALL:
    add("cast", f"contiguous_{dt}", "contiguous", {}, [In(rand_of(dt, (2, 3), 810 + CODE[dt]), dt)])
    add("cast", f"contiguous_{dt}_view", "contiguous", {}, [In(rand_of(dt, (3, 4), 830 + CODE[dt]), dt, "permute:1,0;flip:1")])

def build_reduce():
  x = lambda seed, dt="float32", shape=(3, 4, 5): In(rand_of(dt, shape, seed), dt)
  axes = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]
  for name in ("sum", "max", "min", "mean", "prod"):
    for i, ax in enumerate(axes):
      for keep in (False, True):
        if keep and ax is None: continue
        add("reduce", f"{name}_f32_ax{i}{'_keep' if keep else ''}", name, {"axis": ax, "keepdim": keep or None},
            [x(900 + i)])
  for name in ("var", "std"):
    for i, ax in enumerate([None, 0, 1, (0, 2)]):
      for corr in (1, 0):
        add("reduce", f"{name}_f32_ax{i}_c{corr}", name, {"axis": ax, "correction": corr, "keepdim": corr == 0 or None}, [x(950 + i)])
  for i, dt in enumerate(["float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                          "uint64", "bool"]):
    add("reduce", f"sum_{dt}", "sum", {"axis": 1}, [In(rand_of(dt, (3, 4), 960 + i), dt)])
    add("reduce", f"sum_{dt}_all", "sum", {}, [In(rand_of(dt, (3, 4), 980 + i), dt)])
    add("reduce", f"max_{dt}", "max", {"axis": 0}, [In(rand_of(dt, (3, 4), 1000 + i), dt)])
    add("reduce", f"min_{dt}", "min", {"axis": (0, 1)}, [In(rand_of(dt, (3, 4), 1020 + i), dt)])
  for i, dt in enumerate(["int32", "float16", "int8"]):
    add("reduce", f"mean_{dt}", "mean", {"axis": 1}, [In(rand_of(dt, (3, 4), 1040 + i), dt)])
  add("reduce", "prod_int8", "prod", {"axis": 0}, [In(ints((3, 4), 1050, -4, 5), "int8")])
  add("reduce", "prod_int32_all", "prod", {}, [In(ints((2, 3), 1051, -4, 5), "int32")])
  add("reduce", "sum_f32_view", "sum", {"axis": 0}, [In(uni((4, 3, 5), 1052), "float32", "permute:2,0,1")])
  add("reduce", "max_f32_view", "max", {"axis": 1, "keepdim": True}, [In(uni((6, 5), 1053), "float32", "shrink:1:5,0:4;flip:1")])
  add("reduce", "sum_f32_scalar", "sum", {}, [In(uni((), 1054), "float32")])
  add("reduce", "sum_f32_special", "sum", {"axis": 1}, [In([[1.0, math.inf, 2.0], [math.inf, -math.inf, 0.0],
                                                            [math.nan, 1.0, 1.0], [1e38, 1e38, 1e38]], "float32")])
  add("reduce", "max_f32_special", "max", {"axis": 1}, [In([[1.0, math.inf, 2.0], [-math.inf, -math.inf, -math.inf],
                                                            [-0.0, -1.0, -2.0], [3.0, 1e38, -1e38]], "float32")])
  add("reduce", "sum_f32_long", "sum", {"axis": 1}, [In(uni((2, 3000), 1055), "float32")])
  add("reduce", "sum_f16_long", "sum", {}, [In(uni((300,), 1056, 0, 1), "float16")])
  for name in ("any", "all"):
    for i, (dt, ax) in enumerate([("bool", None), ("bool", 0), ("bool", 1), ("float32", 1), ("int32", 0), ("bool", (0, 1))]):
      vals = ints((3, 4), 1060 + i, 0, 2) if dt != "float32" else np.where(ints((3, 4), 1070 + i, 0, 3) == 0, 0.0, 1.5)
      if name == "all" and dt == "bool": vals = np.where(ints((3, 4), 1080 + i, 0, 5) == 0, 0, 1)
      add("reduce", f"{name}_{dt}_{i}", name, {"axis": ax, "keepdim": (i == 2) or None}, [In(vals, dt)])
  for name in ("argmax", "argmin"):
    for i, (ax, keep) in enumerate([(None, False), (0, False), (1, False), (1, True), (-1, False)]):
      add("reduce", f"{name}_f32_{i}", name, {"axis": ax, "keepdim": keep or None}, [x(1100 + i, shape=(4, 5))])
    add("reduce", f"{name}_f32_ties", name, {"axis": 1}, [In([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -5.0, -5.0, 7.0]], "float32")])
    add("reduce", f"{name}_i8", name, {"axis": 0}, [In(ints((4, 3), 1110, -128, 128), "int8")])
  for i, (dt, ax, shape) in enumerate([("float32", 0, (4, 5)), ("float32", 1, (4, 5)), ("float32", -1, (2, 3, 4)),
                                       ("int32", 0, (6,)), ("int8", 1, (3, 4)), ("float32", 0, (600,)),
                                       ("float16", 0, (8,)), ("bool", 0, (5,))]):
    vals = rand_of(dt, shape, 1120 + i, ilo=-10, ihi=10) if dt != "bool" else ints(shape, 1120 + i, 0, 2)
    add("reduce", f"cumsum_{dt}_{i}", "cumsum", {"axis": ax}, [In(vals, dt)])
  for i, (ax, keep) in enumerate([(None, False), (0, False), (1, True), (-1, False)]):  # one axis or all: tinygrad's API
    add("reduce", f"logsumexp_f32_{i}", "logsumexp", {"axis": ax, "keepdim": keep or None}, [x(1130 + i, shape=(4, 5))])
  add("reduce", "logsumexp_f32_special", "logsumexp", {"axis": 1}, [In([[-math.inf, 0.0], [100.0, 100.0], [-math.inf, -math.inf]], "float32")])
  for name in ("softmax", "log_softmax"):
    for i, ax in enumerate([-1, 0, 1]):
      add("reduce", f"{name}_f32_{i}", name, {"axis": ax}, [x(1140 + i, shape=(3, 4, 5))])
    add("reduce", f"{name}_f32_large", name, {"axis": -1}, [In([[1000.0, 1001.0, 999.0], [-1000.0, 0.0, 1000.0]], "float32")])
    add("reduce", f"{name}_f32_neginf", name, {"axis": -1}, [In([[-math.inf, 1.0, 2.0], [0.0, -math.inf, 0.0]], "float32")])
    add("reduce", f"{name}_f16", name, {"axis": -1}, [x(1150, "float16", (3, 6))])
    add("reduce", f"{name}_f32_view", name, {"axis": 0}, [In(uni((5, 4), 1151), "float32", "permute:1,0")])

def build_movement():
  mv_dtypes = ["float32", "int8", "bool", "float16", "uint64", "int64", "bfloat16", "uint16"]
  for i, dt in enumerate(mv_dtypes):
    a = lambda shape, k=0: In(rand_of(dt, shape, 1200 + 10 * i + k), dt)
    add("movement", f"reshape_{dt}", "reshape", {"shape": (4, 6)}, [a((2, 3, 4))])
    add("movement", f"permute_{dt}", "permute", {"order": (2, 0, 1)}, [a((2, 3, 4))])
    add("movement", f"pad_{dt}", "pad", {"pad": (1, 2, 0, 1)}, [a((2, 3))])
    add("movement", f"cat_{dt}", "cat", {"dim": 1}, [a((2, 3)), a((2, 2), 1)])
  a32 = lambda shape, seed, view="": In(uni(shape, seed), "float32", view)
  add("movement", "reshape_f32_view", "reshape", {"shape": (12,)}, [a32((4, 3), 1300, "permute:1,0")])
  add("movement", "reshape_f32_neg", "reshape", {"shape": (3, -1)}, [a32((2, 6), 1301)])
  add("movement", "reshape_f32_scalar", "reshape", {"shape": ()}, [a32((1, 1), 1302)])
  add("movement", "permute_f32_4d", "permute", {"order": (3, 1, 0, 2)}, [a32((2, 3, 4, 5), 1303)])
  add("movement", "transpose_f32", "transpose", {"dim0": 0, "dim1": 1}, [a32((3, 4), 1304)])
  add("movement", "transpose_f32_3d", "transpose", {"dim0": -1, "dim1": 0}, [a32((2, 3, 4), 1305)])
  add("movement", "expand_f32", "expand", {"shape": (3, 4)}, [a32((3, 1), 1306)])
  add("movement", "expand_f32_newdim", "expand", {"shape": (2, 3, 4)}, [a32((1, 4), 1307)])
  add("movement", "expand_f32_minus1", "expand", {"shape": (2, -1, 4)}, [a32((2, 3, 1), 1308)])
  add("movement", "pad_f32_value", "pad", {"pad": (1, 1, 2, 0), "value": -math.inf}, [a32((2, 3), 1309)])
  add("movement", "pad_f32_negative", "pad", {"pad": (-1, 1, 0, -2)}, [a32((3, 4), 1310)])
  for mode in ("reflect", "replicate", "circular"):
    add("movement", f"pad_{mode}_f32", "pad", {"pad": (0, 0, 1, 2), "mode": mode}, [a32((2, 4), 1311)])
    add("movement", f"pad_{mode}_f32_2d", "pad", {"pad": (0, 0, 2, 1, 1, 2), "mode": mode}, [a32((2, 3, 4), 1312)])
    add("movement", f"pad_{mode}_i32", "pad", {"pad": (2, 1), "mode": mode}, [In(ints((4,), 1313, -9, 9), "int32")])
  add("movement", "shrink_f32", "shrink", {"shrink": (1, 3, 0, 4, 2, 3)}, [a32((3, 4, 5), 1320)])
  add("movement", "shrink_f32_empty", "shrink", {"shrink": (1, 1, 0, 4)}, [a32((3, 4), 1321)])
  add("movement", "flip_f32", "flip", {"axis": (0,)}, [a32((3, 4), 1322)])
  add("movement", "flip_f32_multi", "flip", {"axis": (0, 2)}, [a32((2, 3, 4), 1323)])
  add("movement", "flip_i8_neg", "flip", {"axis": (-1,)}, [In(ints((2, 5), 1324, -50, 50), "int8")])
  add("movement", "squeeze_f32", "squeeze", {"dim": 1}, [a32((3, 1, 4), 1325)])
  add("movement", "squeeze_f32_all", "squeeze", {}, [a32((1, 3, 1, 4, 1), 1326)])
  add("movement", "squeeze_f32_noop", "squeeze", {"dim": 0}, [a32((3, 4), 1327)])
  add("movement", "unsqueeze_f32", "unsqueeze", {"dim": 0}, [a32((3, 4), 1328)])
  add("movement", "unsqueeze_f32_neg", "unsqueeze", {"dim": -1}, [a32((3, 4), 1329)])
  add("movement", "flatten_f32", "flatten", {}, [a32((2, 3, 4), 1330)])
  add("movement", "flatten_f32_range", "flatten", {"start_dim": 1, "end_dim": 2}, [a32((2, 3, 4, 2), 1331)])
  add("movement", "flatten_f32_view", "flatten", {}, [a32((3, 4), 1332, "permute:1,0")])
  for i, sl in enumerate(["0:5:2,1:4:1", "::-1,0:6:3", "1:5:3,5:0:-2", "4:0:-2,::2", "-3::,:-1:", "1:2:,::-4"]):
    add("movement", f"slice_f32_{i}", "slice", {"slice": sl}, [a32((5, 6), 1333 + i)])
  add("movement", "cat_f32_dim0_3", "cat", {"dim": 0}, [a32((1, 3), 1340), a32((2, 3), 1341), a32((3, 3), 1342)])
  add("movement", "cat_f32_neg", "cat", {"dim": -1}, [a32((2, 2, 1), 1343), a32((2, 2, 3), 1344)])
  add("movement", "cat_f32_view", "cat", {"dim": 0}, [a32((3, 2), 1345, "permute:1,0"), a32((2, 3), 1346, "flip:1")])
  add("movement", "stack_f32", "stack", {"dim": 0}, [a32((2, 3), 1347), a32((2, 3), 1348)])
  add("movement", "stack_f32_last", "stack", {"dim": -1}, [a32((2, 3), 1349), a32((2, 3), 1350), a32((2, 3), 1351)])
  add("movement", "stack_i32_mid", "stack", {"dim": 1}, [In(ints((2, 3), 1352, -9, 9), "int32"), In(ints((2, 3), 1353, -9, 9), "int32")])
  add("movement", "repeat_f32", "repeat", {"repeats": (2, 3)}, [a32((2, 2), 1354)])
  add("movement", "repeat_f32_newdim", "repeat", {"repeats": (2, 1, 2)}, [a32((3, 2), 1355)])
  add("movement", "split_f32", "split", {"sizes": (2,), "dim": 0}, [a32((5, 3), 1356)])
  add("movement", "split_f32_sizes", "split", {"sizes": (1, 3, 2), "dim": 1}, [a32((2, 6), 1357)])
  add("movement", "chunk_f32", "chunk", {"chunks": 3, "dim": 0}, [a32((7, 2), 1358)])
  add("movement", "chunk_f32_dim1", "chunk", {"chunks": 2, "dim": 1}, [a32((2, 4), 1359)])
  add("movement", "gather_f32_dim0", "gather", {"dim": 0}, [a32((4, 3), 1360), In(ints((2, 3), 1361, 0, 4), "int32")])
  add("movement", "gather_f32_dim1", "gather", {"dim": 1}, [a32((3, 5), 1362), In(ints((3, 4), 1363, 0, 5), "int32")])
  add("movement", "gather_i8", "gather", {"dim": 1}, [In(ints((2, 4), 1364, -100, 100), "int8"), In(ints((2, 2), 1365, 0, 4), "int32")])
  add("movement", "one_hot_i32", "one_hot", {"num_classes": 4}, [In([0, 2, 1, 3, 2], "int32")], post=lambda o: o.to(torch.int32))
  add("movement", "one_hot_i32_2d", "one_hot", {"num_classes": 3}, [In(ints((2, 3), 1371, 0, 3), "int32")],
      post=lambda o: o.to(torch.int32))
  e = lambda shape, seed: In(uni(shape, seed), "float32")
  add("movement", "reshape_f32_empty", "reshape", {"shape": (3, 0)}, [e((0, 3), 1380)])
  add("movement", "cat_f32_empty", "cat", {"dim": 0}, [e((0, 3), 1381), e((2, 3), 1382)])
  add("binary", "add_f32_empty", "add", {}, [e((0, 3), 1383), e((1, 3), 1384)])
  add("reduce", "sum_f32_empty", "sum", {"axis": 0}, [e((0, 3), 1385)])
  add("nn", "matmul_f32_empty_rows", "matmul", {}, [e((0, 8), 1386), e((8, 4), 1387)])
  add("nn", "matmul_f32_empty_inner", "matmul", {}, [e((3, 0), 1388), e((0, 4), 1389)])
  add("movement", "index_f32", "index", {}, [a32((5, 3), 1366), In([4, 0, 2, 2], "int32")])
  add("movement", "index_f32_2d", "index", {}, [a32((6,), 1367), In(ints((2, 3), 1368, 0, 6), "int32")])
  add("movement", "index_i64_neg", "index", {}, [In(ints((5, 2), 1369, -9, 9), "int64"), In([-1, 0, -5], "int32")])
  for i, (view, shape) in enumerate([("permute:1,0", (3, 4)), ("flip:0,1", (3, 4)), ("shrink:1:3,0:2", (4, 3)),
                                     ("expand:3,4", (1, 4)), ("permute:2,0,1;shrink:0:2,1:3,0:2", (3, 4, 5))]):
    add("movement", f"contiguous_f32_view{i}", "contiguous", {}, [a32(shape, 1370 + i, view)])

def build_assign():
  f = lambda shape, seed: In(uni(shape, seed), "float32")
  add("movement", "assign_f32", "assign", {}, [f((3, 4), 1600), f((3, 4), 1601)])
  add("movement", "assign_f32_bcast", "assign", {}, [f((3, 4), 1602), f((4,), 1603)])
  add("movement", "assign_f32_view", "assign", {"shrink": (1, 3, 0, 5)}, [f((4, 5), 1604), f((2, 5), 1605)])
  add("movement", "assign_i32_view_bcast", "assign", {"shrink": (0, 3, 1, 2)},
      [In(ints((3, 4), 1606, -9, 9), "int32"), In(ints((3, 1), 1607, -9, 9), "int32")])
  add("movement", "assign_f32_war", "assign", {"value": "flip0_add"}, [f((4, 3), 1608), f((4, 3), 1609)])
  add("movement", "assign_f16_war_bcast", "assign", {"value": "flip0_add"},
      [In(uni((3, 2), 1610), "float16"), In(uni((2,), 1611), "float16")])

def build_nn():
  a = lambda shape, seed, dt="float32", view="": In(uni(shape, seed), dt, view)
  for i, (sa, sb) in enumerate([((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                                ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((16, 32), (32, 8))]):
    add("nn", f"matmul_f32_{i}", "matmul", {}, [a(sa, 1400 + i), a(sb, 1410 + i)], tol=(1e-5, 1e-3))
  add("nn", "matmul_f32_view", "matmul", {}, [a((4, 3), 1420, view="permute:1,0"), a((4, 5), 1421, view="flip:0")], tol=(1e-5, 1e-3))
  add("nn", "matmul_f16", "matmul", {}, [a((4, 8), 1422, "float16"), a((8, 3), 1423, "float16")], tol=(5e-3, 5e-3))
  add("nn", "matmul_f64", "matmul", {}, [a((3, 5), 1424, "float64"), a((5, 2), 1425, "float64")])
  add("nn", "matmul_i32", "matmul", {}, [In(ints((3, 4), 1426, -9, 9), "int32"), In(ints((4, 2), 1427, -9, 9), "int32")])
  add("nn", "dot_f32", "dot", {}, [a((3, 4), 1428), a((4, 2), 1429)], tol=(1e-5, 1e-3))
  convs = [({}, (1, 2, 5, 5), (3, 2, 3, 3), False), ({"stride": 2}, (2, 3, 7, 7), (4, 3, 3, 3), True),
           ({"padding": 1}, (1, 2, 4, 4), (2, 2, 3, 3), False), ({"dilation": 2}, (1, 1, 7, 7), (2, 1, 3, 3), True),
           ({"groups": 2}, (1, 4, 5, 5), (6, 2, 3, 3), True), ({"padding": (1, 2), "stride": (2, 1)}, (1, 2, 5, 6), (3, 2, 2, 3), False),
           ({"groups": 3, "padding": 1, "stride": 2, "dilation": 1}, (2, 3, 6, 6), (3, 1, 3, 3), True),
           ({}, (1, 3, 4, 4), (5, 3, 1, 1), False)]
  for i, (p, sx, sw, bias) in enumerate(convs):
    ins = [a(sx, 1430 + i), a(sw, 1440 + i)] + ([a((sw[0],), 1450 + i)] if bias else [])
    add("nn", f"conv2d_f32_{i}", "conv2d", p, ins, tol=(1e-5, 1e-3))
  add("nn", "conv2d_f16", "conv2d", {"padding": 1}, [a((1, 2, 4, 4), 1460, "float16"), a((2, 2, 3, 3), 1461, "float16")], tol=(5e-3, 5e-3))
  # big enough for tinygrad.c's layout copies (tensor/reduce.c t_conv2d: output channels x KH x KW >= 256): the padded
  # input and the channel-inner weight are copied first, and the kernel keeps output channels in vector accumulators
  bigs = [({"padding": 2}, (2, 3, 6, 7), (16, 3, 5, 5), True), ({"padding": 1}, (1, 8, 9, 9), (32, 8, 3, 3), False),
          ({}, (2, 4, 8, 8), (48, 4, 3, 3), True)]
  for i, (p, sx, sw, bias) in enumerate(bigs):
    ins = [a(sx, 1462 + 3 * i), a(sw, 1463 + 3 * i)] + ([a((sw[0],), 1464 + 3 * i)] if bias else [])
    add("nn", f"conv2d_f32_big_{i}", "conv2d", p, ins, tol=(1e-5, 1e-3))
  pools = [{}, {"kernel_size": (3, 3), "stride": 1}, {"kernel_size": (2, 2), "stride": 1, "padding": 1},
           {"kernel_size": (3, 2), "stride": (2, 1)}, {"kernel_size": (2, 2), "dilation": 2, "stride": 1}]
  for i, p in enumerate(pools):
    add("nn", f"max_pool2d_f32_{i}", "max_pool2d", p, [a((1, 2, 6, 6), 1470 + i)])
    if "dilation" not in p: add("nn", f"avg_pool2d_f32_{i}", "avg_pool2d", p, [a((2, 1, 6, 5), 1480 + i)])
  add("nn", "max_pool2d_f32_view", "max_pool2d", {}, [a((1, 2, 4, 6), 1490, view="permute:0,1,3,2")])
  add("nn", "max_pool2d_i32", "max_pool2d", {}, [In(ints((1, 1, 4, 4), 1491, -50, 50), "int32")])

def build_creation():
  for dt in ("float32", "int32", "bool", "float16", "uint8", "int64"):
    add("creation", f"zeros_{dt}", "zeros", {"shape": (2, 3), "dtype": dt}, [])
    add("creation", f"ones_{dt}", "ones", {"shape": (3, 2), "dtype": dt}, [])
  for dt, v in (("float32", 2.5), ("int8", -7), ("bool", True), ("float16", -0.0), ("float64", math.inf), ("uint32", 7),
                ("bfloat16", 3.0), ("int32", 4)):
    p = {"shape": (2, 2), "value": v, "dtype": dt}
    if dt == "uint32": add("creation", f"full_{dt}", "full", p, [], outputs=[(dt, (2, 2), np.full((2, 2), 7, np.uint32).tobytes())])
    else: add("creation", f"full_{dt}", "full", p, [])
  add("creation", "full_like_f32", "full_like", {"value": 4.0}, [In(uni((2, 3), 1500), "float32")])
  add("creation", "full_like_i32", "full_like", {"value": 4}, [In(ints((2, 3), 1501, 0, 9), "int32")])
  add("creation", "zeros_like_f16", "zeros_like", {}, [In(uni((3,), 1502), "float16")])
  add("creation", "ones_like_i8", "ones_like", {}, [In(ints((2, 2), 1503, 0, 9), "int8")])
  for i, (st, sp, stp, dt) in enumerate([(0, 10, 1, "int32"), (2, 20, 3, "int32"), (10, 0, -2, "int32"), (0.5, 3.0, 0.25, "float32"),
                                         (-1, 1, 0.5, "float32"), (0, 5, 1, "float16"), (0, 7, 2, "int64"), (0, 4, 1, "uint8")]):
    add("creation", f"arange_{dt}_{i}", "arange", {"start": st, "stop": sp, "step": stp, "dtype": dt}, [])
  for i, (st, sp, n, dt) in enumerate([(0, 1, 5, "float32"), (-2.5, 2.5, 11, "float32"), (5, 1, 3, "float32"), (0, 10, 6, "int32"),
                                       (1, 1, 1, "float32")]):
    add("creation", f"linspace_{dt}_{i}", "linspace", {"start": st, "stop": sp, "steps": n, "dtype": dt}, [])
  add("creation", "eye_f32", "eye", {"n": 3}, [])
  add("creation", "eye_f32_rect", "eye", {"n": 3, "m": 5}, [])
  add("creation", "eye_i32", "eye", {"n": 2, "m": 4, "dtype": "int32"}, [])

def build_cases():
  build_unary()
  build_binary()
  build_cast()
  build_reduce()
  build_movement()
  build_assign()
  build_nn()
  build_creation()

# ------------------------------------------------------------------------------------------------ writing
def pack_str(s):
  b = s.encode("ascii")
  return struct.pack("<H", len(b)) + b

def pack_tensor(view, dt, shape, data):
  assert len(data) == int(np.prod(shape, dtype=np.int64)) * ITEMSIZE[dt], (dt, shape, len(data))
  return (pack_str(view) + struct.pack("<BB", CODE[dt], len(shape)) + b"".join(struct.pack("<q", s) for s in shape) +
          struct.pack("<Q", len(data)) + data)

def pack_case(case, outs, atol, rtol):
  body = pack_str(case.name) + pack_str(case.op) + pack_str(params_text(case.params))
  body += struct.pack("<ddI", atol, rtol, case.flags)
  body += struct.pack("<B", len(case.inputs))
  for i in case.inputs:
    body += pack_tensor(i.view, i.dtype, i.shape, raw_bytes(i.data))
  body += struct.pack("<B", len(outs))
  for dt, shape, data in outs: body += pack_tensor("", dt, shape, data)
  return struct.pack("<I", len(body)) + body

def main():
  check, listing = "--check" in sys.argv, "--list" in sys.argv
  if check:
    sys.path.insert(0, os.environ.get("TINYGRAD_PATH", "/work/tgref"))
    os.environ.setdefault("DEV", "CPU")
  build_cases()
  groups, failures, unavailable = {}, [], []
  only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
  for case in CASES:
    if only and only not in case.name: continue
    outs = compute(case)
    atol, rtol = tolerance(case, outs)
    if check:
      why = check_tinygrad(case, outs, atol, rtol)
      if why == "UNAVAILABLE": unavailable.append(case.name)
      elif why: failures.append(f"{case.group}/{case.name} [{case.op} {params_text(case.params)}]: {why}")
    if listing: print(f"{case.group:12s} {case.name:40s} {case.op:12s} {params_text(case.params)}")
    groups.setdefault(case.group, []).append(pack_case(case, outs, atol, rtol))
  os.makedirs(OUT_DIR, exist_ok=True)
  total = 0
  for g, packed in sorted(groups.items()):
    blob = b"TGFX" + struct.pack("<II", FORMAT_VERSION, len(packed)) + b"".join(packed)
    with open(os.path.join(OUT_DIR, f"{g}.tgf"), "wb") as f: f.write(blob)
    total += len(blob)
    print(f"{g}.tgf: {len(packed)} cases, {len(blob)} bytes")
  print(f"total: {sum(len(v) for v in groups.values())} cases, {total} bytes")
  if "--stats" in sys.argv:
    per_op, per_dt = {}, {}
    for case in CASES:
      per_op[case.op] = per_op.get(case.op, 0) + 1
      for d in {i.dtype for i in case.inputs} or {case.params.get("dtype", "float32")}:
        per_dt[d] = per_dt.get(d, 0) + 1
    print("cases per op: " + ", ".join(f"{k} {v}" for k, v in sorted(per_op.items())))
    print("cases per input dtype: " + ", ".join(f"{k} {per_dt.get(k, 0)}" for k in DTYPES))
  nrun = sum(len(v) for v in groups.values())
  if check: print(f"tinygrad agrees on {nrun - len(failures) - len(unavailable)} cases; could not run "
                 f"{len(unavailable)} here: {' '.join(unavailable)}")
  if failures:
    print(f"{len(failures)} cases where tinygrad disagrees:")
    for f in failures: print("  " + f)
    sys.exit(1)

if __name__ == "__main__":
  main()
