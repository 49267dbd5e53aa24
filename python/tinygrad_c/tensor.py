"""tinygrad_c.tensor — tinygrad's Tensor over the C library.

A Tensor owns one tg_tensor handle (released in __del__). Every op is one call into libtinygrad (broadcasting, dtype
promotion, the weak Python scalars, errors: all the C library's); Python only converts arguments (shapes, axes,
scalars, index lists) and results (handles, host data). The few tinygrad methods that the C API has no call for are
composed from C ops in tinygrad_c/composite.py (each says so), or raise NotImplementedError naming the method.

Errors: a failing C call raises by its tg_status: invalid arguments as InvalidArgumentError (a ValueError and a
RuntimeError: tinygrad raises either for a bad argument), an index or axis out of range as IndexError, "not
supported yet" as NotImplementedError, out of memory as MemoryError, anything else as RuntimeError; the message is
tg_last_error()."""
from __future__ import annotations
import ctypes, math, struct
from ._lib import lib as L, I64P
from . import _lib
from .dtype import DType, dtypes, to_dtype, from_tg, strong_dtype, _to_np_dtype, _from_np_dtype, least_upper_float
from .helpers import argfix, prod, all_int, fully_flatten, make_tuple

_vp = ctypes.c_void_p
_new = object.__new__

class InvalidArgumentError(ValueError, RuntimeError):
  """A bad shape, axis, dtype or value (TG_ERR_INVALID_ARGUMENT)."""
class OutOfRangeError(IndexError, RuntimeError):
  """An index or axis out of range (TG_ERR_INVALID_ARGUMENT naming a range or bounds)."""

_TG_ERR_INVALID_ARGUMENT, _TG_ERR_UNSUPPORTED, _TG_ERR_OOM = 1, 2, 5
def _raise(what:str|None=None):
  msg, st = (L.tg_last_error() or b"").decode(errors="replace"), L.tg_last_status()
  if what: msg = f"{what}: {msg}"
  if st == _TG_ERR_UNSUPPORTED: raise NotImplementedError(msg)
  if st == _TG_ERR_OOM: raise MemoryError(msg)
  if st == _TG_ERR_INVALID_ARGUMENT:
    if "out of range" in msg or "out of bounds" in msg: raise OutOfRangeError(msg)
    raise InvalidArgumentError(msg)
  raise RuntimeError(msg or "tinygrad.c: call failed")

def _w(h) -> Tensor:
  """Wraps a new handle returned by the C library (None: the call failed, raise its error)."""
  if not h: _raise()
  t = _new(Tensor)
  t._h = h
  return t
def _check(status:int):
  if status != 0: _raise()

def _i64(seq): return (ctypes.c_int64 * len(seq))(*seq)
_I64: dict = {}
_KEEP: list = []  # the cached arrays, alive for the process: _I64 and _AXES hold their addresses
def _i64_const(key:tuple):
  """_i64 for a shape tuple the C side only reads (const int64_t *): cached (its address), never written"""
  addr = _I64.get(key)
  if addr is None:
    arr = (ctypes.c_int64 * len(key))(*key)
    if len(_I64) >= 4096: return arr
    _KEEP.append(arr)
    addr = _I64[key] = ctypes.addressof(arr)
  return addr
def _ints(seq): return (ctypes.c_int * len(seq))(*seq)
_tg_reshape = L.tg_reshape
def _handles(ts): return (_vp * len(ts))(*[t._h for t in ts])

def _shape_of(shape) -> tuple:
  shape = argfix(*shape)
  for s in shape:
    if not isinstance(s, int): raise TypeError(f"shape must be ints, got {shape}")
    if s < 0: raise ValueError(f"invalid shape {shape}: negative dimension")
  return tuple(shape)

def _scalar_handle(x):
  """A weak scalar for a Python number (tinygrad's Tensor(3), Tensor(2.5), Tensor(True))."""
  if isinstance(x, bool): return L.tg_const_bool(x)
  if isinstance(x, int):
    if not -2**63 <= x < 2**64: raise OverflowError(f"Python int {x} too large for a tensor constant")
    return L.tg_const_int(x if x < 2**63 else x - 2**64)
  if isinstance(x, float): return L.tg_const_float(x)
  tn = type(x).__module__
  if tn == "numpy":  # numpy scalars
    import numpy as np
    if isinstance(x, np.bool_): return L.tg_const_bool(bool(x))
    if isinstance(x, np.integer): return L.tg_const_int(int(x))
    if isinstance(x, np.floating): return L.tg_const_float(float(x))
  return None

# Weak constants for the Python scalars ops meet (x + 1, x * 0.5): made once and kept (they are immutable and
# device-less), so an op with a scalar is one C call. Keyed by type and value (a float zero by its sign too).
_CONSTS: dict = {}
_CONSTS_MAX = 4096
# The same handles by value for the hot path of a binary op (_binop): nonzero floats (0.0 and -0.0 are equal keys),
# ints (a separate dict: 1 == 1.0 == True as keys). NaNs are never cached.
_CF: dict = {}
_CI: dict = {}

def _operand(x):
  """(handle, owned temporary or None) for an op argument: a Tensor, a Python scalar or a list."""
  if x.__class__ is Tensor: return x._h, None
  c = x.__class__
  if c is float or c is int or c is bool:
    k = (c, x) if x or c is not float else (c, x, math.copysign(1.0, x))
    h = _CONSTS.get(k)
    if h is not None: return h, None
    h = _scalar_handle(x)
    if not h: _raise()
    if len(_CONSTS) < _CONSTS_MAX and x == x:
      _CONSTS[k] = h
      if c is float and x: _CF[x] = h
      elif c is int: _CI[x] = h
      return h, None
    return h, h
  h = _scalar_handle(x)
  if h is None:
    if isinstance(x, (list, tuple)): t = Tensor(x); return t._h, t
    raise TypeError(f"unsupported operand type for a tensor op: {type(x).__name__}")
  if not h: _raise()
  return h, h

def _bin(fn, a:Tensor, b, reverse=False) -> Tensor:
  if b.__class__ is Tensor: return _w(fn(b._h, a._h) if reverse else fn(a._h, b._h))
  bh, tmp = _operand(b)
  r = fn(bh, a._h) if reverse else fn(a._h, bh)
  if tmp.__class__ is int: L.tg_release(tmp)
  return _w(r)

# The hot paths: one closure per C call, so an op is the C call, the result check and the wrapper object, with no
# further Python frames (each one is a tenth of a lazy op's cost). Anything unusual takes the general path.
def _binop(fn):
  """a binary method (x may be a Tensor, a Python number, a list); reverse=True swaps the operands"""
  def op(self, x, reverse=False):
    if x.__class__ is Tensor: xh = x._h
    else:
      c = x.__class__
      xh = _CF.get(x) if c is float else _CI.get(x) if c is int else None
      if xh is None: return _bin(fn, self, x, reverse)
    h = fn(xh, self._h) if reverse else fn(self._h, xh)
    if not h: _raise()
    t = _new(Tensor)
    t._h = h
    return t
  op.__name__ = fn.__name__[3:]
  return op
def _rbinop(fn):
  """a reflected operator (__radd__: the Python number is on the left)"""
  def op(self, x):
    c = x.__class__
    xh = _CF.get(x) if c is float else _CI.get(x) if c is int else None
    if xh is None: return _bin(fn, self, x, True)
    h = fn(xh, self._h)
    if not h: _raise()
    t = _new(Tensor)
    t._h = h
    return t
  op.__name__ = f"r{fn.__name__[3:]}"
  return op
def _unop(fn):
  """a unary method: one handle in, one out"""
  def op(self):
    h = fn(self._h)
    if not h: _raise()
    t = _new(Tensor)
    t._h = h
    return t
  op.__name__ = fn.__name__[3:]
  return op

_AXES: dict = {}
def _axes(axis):
  """(int array or None, count) for an axis argument: None = all axes. Cached by the argument (an int, or a tuple
  as a tuple): the arrays are never written."""
  if axis is None: return None, 0
  c = axis.__class__
  r = _AXES.get(axis) if c is int or c is tuple else None
  if r is None:
    key = (axis,) if isinstance(axis, int) else tuple(axis)
    arr = _ints(key)
    if len(_AXES) >= 4096 or not (c is int or c is tuple): return arr, len(key)
    _KEEP.append(arr)
    r = _AXES[axis] = (ctypes.addressof(arr), len(key))
  return r
_tg_sum = L.tg_sum

_PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
_REDUCTIONS = {"mean": 0, "sum": 1, "none": 2}

class _Index(ctypes.Structure):
  _fields_ = [("kind", ctypes.c_int), ("start", ctypes.c_int64), ("stop", ctypes.c_int64), ("step", ctypes.c_int64),
              ("has_start", ctypes.c_bool), ("has_stop", ctypes.c_bool), ("tensor", ctypes.c_void_p)]
_IDX_INT, _IDX_SLICE, _IDX_NEWAXIS, _IDX_ELLIPSIS, _IDX_TENSOR = range(5)

def _pack_host(flat:list, dt:DType) -> bytes:
  """Python values of a list as raw bytes of dtype dt (bool/int/float formats struct knows)."""
  fmt = dt.fmt
  if dt is dtypes.bool: vals = [bool(x) for x in flat]
  elif dtypes.is_int(dt):
    vals = [int(x) for x in flat]
    lo, hi = dt.min, dt.max
    vals = [((v - lo) % (hi - lo + 1)) + lo for v in vals]  # C-style wrap, as numpy's astype
  else: vals = [float(x) for x in flat]
  try: return struct.pack(f"<{len(vals)}{fmt}", *vals)
  except OverflowError:  # half overflow: inf as tinygrad's float_to_fp16
    return b"".join(struct.pack("<e", v) if abs(v) < 65520 or not math.isfinite(v) else struct.pack("<e", math.copysign(math.inf, v)) for v in vals)

def _list_shape(data) -> tuple:
  shape, x = [], data
  while isinstance(x, (list, tuple)):
    shape.append(len(x))
    if not x: break
    x = x[0]
  return tuple(shape)

class Tensor:
  """tinygrad's Tensor: a lazy computation, realized by the C library (see the module docstring)."""
  __slots__ = ("_h", "_shape", "_not_param", "__weakref__")
  __array_priority__ = 1000  # numpy scalars on the left defer to our reflected operators

  def __init__(self, data, device:str|None=None, dtype=None, requires_grad:bool|None=None):
    self._h, self._shape = None, None
    dt = to_dtype(dtype) if dtype is not None else None
    dev = Device.canonicalize(device) if isinstance(device, str) else None
    if isinstance(device, (tuple, list)): raise NotImplementedError("tinygrad.c: multi-device (sharded) tensors not supported yet")
    if dt is not None and dt in dtypes.weaks: raise RuntimeError(f"cannot create storage for weak dtype {dt}")
    h = None
    if data is None: data = 0.0
    if isinstance(data, Tensor):
      h = L.tg_retain(data._h)
      if dt is not None: h = self._swap(h, L.tg_cast(h, dt._tg))
    elif isinstance(data, (bool, int, float)) or (type(data).__module__ == "numpy" and getattr(data, "shape", ()) == ()):
      if type(data).__module__ == "numpy":  # a 0-d array or numpy scalar: a strong constant of its dtype (tinygrad)
        dt = dt or _from_np_dtype(data.dtype)
        data = data.item()
      if isinstance(data, int) and not isinstance(data, bool) and not -2**63 <= data < 2**64:
        raise OverflowError(f"Python int {data} too large to convert to {dt or 'a tensor'}")
      if dt is None: h = _scalar_handle(data)
      elif isinstance(data, float) or abs(data) < 2**53: h = L.tg_scalar(float(data), dt._tg)
      else:
        h = _scalar_handle(data)
        if h: h = self._swap(h, L.tg_cast(h, dt._tg))
      if h and dev is not None: h = self._swap(h, L.tg_to(h, dev.encode()))
    elif isinstance(data, (list, tuple, bytes)):
      if isinstance(data, bytes): shape, flat, src = (len(data),), None, dt or dtypes.uint8
      else:
        shape = _list_shape(data)
        flat = fully_flatten(data)
        if len(flat) != prod(shape): raise ValueError(f"inhomogeneous list shape: {data!r}")
        src = dt or dtypes.from_py(data)
      host = src if src.fmt is not None else dtypes.float32  # bfloat16/fp8: made as float32 and cast in C
      raw = data if isinstance(data, bytes) else _pack_host(flat, host)
      h = L.tg_from_data_on(raw, host._tg, _i64(shape), len(shape), dev.encode() if dev else None)
      if h and host is not src: h = self._swap(h, L.tg_cast(h, src._tg))
    elif hasattr(data, "__array_interface__") and type(data).__module__ == "numpy":
      import numpy as np
      npdt = _to_np_dtype(dt) if dt is not None else None
      arr = np.ascontiguousarray(data.astype(npdt) if npdt is not None else data)
      if arr.dtype == np.float64 or arr.dtype.name in ("float64", "float32", "float16", "int8", "uint8", "int16", "uint16",
                                                      "int32", "uint32", "int64", "uint64", "bool"):
        src = _from_np_dtype(arr.dtype)
      else: raise TypeError(f"can't create Tensor from a numpy array of {arr.dtype}")
      h = L.tg_from_data_on(arr.ctypes.data, src._tg, _i64(arr.shape), arr.ndim, dev.encode() if dev else None)
      if h and dt is not None and dt is not src: h = self._swap(h, L.tg_cast(h, dt._tg))
    else: raise RuntimeError(f"can't create Tensor from {data!r} with type {type(data)}")
    if not h: _raise("Tensor")
    self._h = h
    if requires_grad: self.requires_grad_(True)

  @staticmethod
  def _swap(old, new):
    L.tg_release(old)
    return new

  def __del__(self):
    """Queues the handle (_lib.pending): released with up to 255 others in one C call, or before any call that runs
    kernels (_lib._SLOW), so a dead tensor never costs a realize anything."""
    h = self._h
    if h:
      try:
        q = _lib.pending
        q.append(h)
        if len(q) >= 256: _lib.release_pending()
      except Exception: pass  # interpreter shutdown

  # ------------------------------------------------------------------ properties
  @property
  def shape(self) -> tuple[int, ...]:
    s = getattr(self, "_shape", None)
    if s is None:
      n = L.tg_ndim(self._h)
      p = ctypes.cast(L.tg_shape(self._h), I64P)
      s = self._shape = tuple(p[i] for i in range(n))
    return s
  @property
  def dtype(self) -> DType: return from_tg(L.tg_get_dtype(self._h))
  @property
  def device(self) -> str:
    d = L.tg_device(self._h)
    return d.decode() if d is not None else Device.DEFAULT
  @property
  def ndim(self) -> int: return L.tg_ndim(self._h)
  def numel(self) -> int: return L.tg_numel(self._h)
  def size(self, dim:int|None=None):
    if dim is None: return self.shape
    return self.shape[self._resolve_dim(dim)]
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> int: return self.numel() * self.element_size()
  def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)
  @property
  def T(self) -> Tensor: return self.transpose()
  def __len__(self):
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __hash__(self): return id(self)
  def __bool__(self): raise TypeError("__bool__ on Tensor is not defined")
  def __repr__(self): return f"<Tensor shape={self.shape} dtype={self.dtype} device={self.device!r} (tinygrad.c)>"
  def __iter__(self):
    for i in range(self.shape[0] if self.shape else 0): yield self[i]
  def _resolve_dim(self, dim:int, *, extra:bool=False) -> int:
    total = self.ndim + int(extra)
    if not -max(1, total) <= dim <= max(1, total) - 1:
      raise IndexError(f"{dim=} out of range {[-max(1, total), max(1, total)-1]}")
    return dim + total if dim < 0 else dim

  # ------------------------------------------------------------------ gradients
  @property
  def requires_grad(self) -> bool|None: return True if L.tg_get_requires_grad(self._h) else None
  @requires_grad.setter
  def requires_grad(self, v): self.requires_grad_(bool(v))
  def requires_grad_(self, requires_grad:bool=True) -> Tensor:
    _check(L.tg_requires_grad(self._h, bool(requires_grad)))
    return self
  @property
  def grad(self) -> Tensor|None:
    g = L.tg_grad(self._h)
    return _w(L.tg_retain(g)) if g else None
  @grad.setter
  def grad(self, v):
    if v is not None: raise NotImplementedError("tinygrad.c: setting .grad to a tensor not supported yet (only None)")
    L.tg_zero_grad(self._h)
  def backward(self, gradient:Tensor|None=None) -> Tensor:
    """tinygrad's rule: fills .grad of every live float tensor with storage in this graph (tg_backward_all)"""
    _check(L.tg_backward_all(self._h, gradient._h if gradient is not None else None))
    return self
  def gradient(self, *targets:Tensor, gradient:Tensor|None=None, materialize_grads=False) -> list[Tensor]:
    n = len(targets)
    out = (_vp * n)()
    st = L.tg_gradient(self._h, _handles(targets), n, out) if gradient is None else \
         L.tg_gradient_with_grad(self._h, gradient._h, _handles(targets), n, out)
    _check(st)
    return [_w(out[i]) for i in range(n)]
  def detach(self) -> Tensor: return _w(L.tg_detach(self._h))
  @property
  def is_param(self) -> bool: return not getattr(self, "_not_param", False)
  def is_param_(self, is_param:bool=True) -> Tensor:
    """tinygrad's is_param: optimizers update params and only realize the others (buffers)"""
    self._not_param = not is_param
    return self

  # ------------------------------------------------------------------ realization and data
  def realize(self, *lst:Tensor, do_update_stats=True) -> Tensor:
    if lst: _check(L.tg_realize_many(_handles((self,)+lst), len(lst)+1))
    else: _check(L.tg_realize(self._h))
    return self
  def contiguous(self, **kwargs) -> Tensor: return _w(L.tg_contiguous(self._h))
  def contiguous_backward(self) -> Tensor: return self
  def assign(self, x) -> Tensor:
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.dtype is not self.dtype and x.dtype not in dtypes.weaks:
      raise RuntimeError(f"assign dtype mismatch {self.dtype} != {x.dtype}")
    _check(L.tg_assign(self._h, x._h))
    return self
  def replace(self, x:Tensor) -> Tensor:
    if self.shape != x.shape: raise RuntimeError(f"replace shape mismatch {self.shape} != {x.shape}")
    old, self._h, self._shape = self._h, L.tg_retain(x._h), None
    L.tg_release(old)
    return self
  def _host_bytes(self) -> tuple[bytes, DType]:
    dt = strong_dtype(self.dtype)
    n = self.numel()
    buf = ctypes.create_string_buffer(max(1, n * dt.itemsize))
    _check(L.tg_to_host(self._h, buf, n * dt.itemsize))
    return buf.raw[:n * dt.itemsize], dt
  def data(self) -> memoryview:
    raw, dt = self._host_bytes()
    if dt.fmt is None: raise NotImplementedError(f"tinygrad.c: data() of {dt} (no struct format)")
    return memoryview(raw).cast(dt.fmt, self.shape) if self.shape and 0 not in self.shape else memoryview(raw).cast(dt.fmt)
  def numpy(self):
    import numpy as np
    dt = strong_dtype(self.dtype)
    if dt.fmt is None: return self.float().numpy()
    out = np.empty(self.shape, dtype=_to_np_dtype(dt))
    if out.size: _check(L.tg_to_host(self._h, out.ctypes.data, out.nbytes))
    else: _check(L.tg_realize(self._h))
    return out
  def tolist(self):
    dt = strong_dtype(self.dtype)
    if dt.fmt is None: return self.float().tolist()
    raw, _ = self._host_bytes()
    flat = list(struct.unpack(f"<{self.numel()}{dt.fmt}", raw))
    def build(sh, off):
      if not sh: return flat[off], off + 1
      res = []
      for _ in range(sh[0]):
        v, off = build(sh[1:], off)
        res.append(v)
      return res, off
    return build(self.shape, 0)[0]
  def item(self):
    if self.numel() != 1: raise ValueError("must have one element for item")
    dt = strong_dtype(self.dtype)
    if dt.fmt is None: return self.float().item()
    raw, _ = self._host_bytes()
    return struct.unpack(f"<{dt.fmt}", raw)[0]
  def __float__(self): return float(self.item())
  def __int__(self): return int(self.item())
  def clone(self, device=None) -> Tensor:
    ret = self.contiguous()
    return ret if device is None else ret.to(device)
  def to(self, device) -> Tensor:
    if device is None: return self
    if isinstance(device, (tuple, list)): raise NotImplementedError("tinygrad.c: multi-device (sharded) tensors not supported yet")
    return _w(L.tg_to(self._h, Device.canonicalize(device).encode()))
  def to_(self, device) -> Tensor:
    new = self.to(device)
    self._h, new._h = new._h, self._h
    self._shape = None
    return self
  def cpu(self) -> Tensor: return self.to("CPU")
  def shard(self, *a, **k): raise NotImplementedError("tinygrad.c: multi-device (sharded) tensors not supported yet")
  shard_ = shard

  # ------------------------------------------------------------------ creation
  @staticmethod
  def _dev(device): return Device.canonicalize(device).encode() if device is not None else None
  @staticmethod
  def empty(*shape, device=None, dtype=None, **kwargs) -> Tensor:
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    s = _shape_of(shape)
    return _w(L.tg_empty_on(_i64(s), len(s), dt._tg, Tensor._dev(device)))
  @staticmethod
  def full(shape, fill_value, dtype=None, device=None, **kwargs) -> Tensor:
    s = _shape_of((shape,) if isinstance(shape, int) else (tuple(shape),))
    dt = to_dtype(dtype) if dtype is not None else None
    if isinstance(fill_value, Tensor): raise NotImplementedError("tinygrad.c: full with a tensor fill value not supported yet")
    if isinstance(fill_value, bool) and dt is None: dt = dtypes.bool
    if isinstance(fill_value, (int, bool)) and (dt is None or not dtypes.is_float(dt)):
      r = _w(L.tg_full_int(_i64(s), len(s), int(fill_value), dt._tg if dt else 0))
    else: r = _w(L.tg_full(_i64(s), len(s), float(fill_value), dt._tg if dt else 0))
    return r.to(device) if device is not None else r
  @staticmethod
  def zeros(*shape, **kwargs) -> Tensor: return Tensor.full(_shape_of(shape), 0.0 if kwargs.get("dtype") is None else 0, **kwargs)
  @staticmethod
  def ones(*shape, **kwargs) -> Tensor: return Tensor.full(_shape_of(shape), 1.0 if kwargs.get("dtype") is None else 1, **kwargs)
  def full_like(self, fill_value, dtype=None, device=None, **kwargs) -> Tensor:
    dt = to_dtype(dtype) if dtype is not None else self.dtype
    return Tensor.full(self.shape, fill_value, dtype=dt, device=device or self.device)
  def zeros_like(self, **kwargs) -> Tensor: return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs) -> Tensor: return self.full_like(1, **kwargs)
  def empty_like(self, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor.empty(*self.shape, dtype=dtype or self.dtype, device=device or self.device)
  def const_like(self, b, dtype=None) -> Tensor: return self.full_like(b, dtype=dtype)
  @staticmethod
  def arange(start, stop=None, step=1, dtype=None, device=None, **kwargs) -> Tensor:
    if stop is None: start, stop = 0, start
    dt = to_dtype(dtype) if dtype is not None else None
    if dt is not None and dtypes.is_int(dt) and all(isinstance(x, int) for x in (start, stop, step)) and step != 0:
      n = max(0, -(-(stop - start) // step))
      if n and not (dt.min <= start <= dt.max and dt.min <= start + (n-1)*step <= dt.max):
        raise OverflowError(f"arange [{start}, {stop}) step {step} overflows {dt}")
    r = _w(L.tg_arange(float(start), float(stop), float(step), dt._tg if dt else 0))
    return r.to(device) if device is not None else r
  @staticmethod
  def linspace(start, stop, steps:int, dtype=None, device=None, **kwargs) -> Tensor:
    dt = to_dtype(dtype) if dtype is not None else None
    r = _w(L.tg_linspace(float(start), float(stop), int(steps), dt._tg if dt else 0))
    return r.to(device) if device is not None else r
  @staticmethod
  def eye(n:int, m:int|None=None, dtype=None, device=None, **kwargs) -> Tensor:
    dt = to_dtype(dtype) if dtype is not None else None
    if n < 0 or (m is not None and m < 0): raise ValueError(f"cannot have negative {n=}, {m=}")
    r = _w(L.tg_eye(n, -1 if m is None else m, dt._tg if dt else 0))
    return r.to(device) if device is not None else r
  @staticmethod
  def manual_seed(seed=0): L.tg_manual_seed(seed)
  @staticmethod
  def _randfn(fn, shape, dtype, *args, device=None):
    s = _shape_of(shape)
    dt = to_dtype(dtype) if dtype is not None else None
    r = _w(fn(_i64(s), len(s), *args, dt._tg if dt else 0))
    return r.to(device) if device is not None else r
  @staticmethod
  def rand(*shape, device=None, dtype=None, contiguous=True, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_rand, shape, dtype, device=device)
  @staticmethod
  def randn(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_randn, shape, dtype, device=device)
  @staticmethod
  def randint(*shape, low=0, high=10, dtype=dtypes.int32, device=None, **kwargs) -> Tensor:
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"{low=} and {high=} must be integers")
    return Tensor._randfn(L.tg_randint, shape, dtype, int(low), int(high), device=device)
  @staticmethod
  def uniform(*shape, low=0.0, high=1.0, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_uniform, shape, dtype, float(low), float(high), device=device)
  @staticmethod
  def normal(*shape, mean=0.0, std=1.0, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_normal, shape, dtype, float(mean), float(std), device=device)
  @staticmethod
  def scaled_uniform(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_scaled_uniform, shape, dtype, device=device)
  @staticmethod
  def glorot_uniform(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_glorot_uniform, shape, dtype, device=device)
  @staticmethod
  def kaiming_uniform(*shape, a:float=0.01, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_kaiming_uniform, shape, dtype, float(a), device=device)
  @staticmethod
  def kaiming_normal(*shape, a:float=0.01, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor._randfn(L.tg_kaiming_normal, shape, dtype, float(a), device=device)
  def rand_like(self, **kwargs) -> Tensor:
    if kwargs.get("dtype") is not None: return Tensor.rand(*self.shape, **kwargs)
    return _w(L.tg_rand_like(self._h))
  def randn_like(self, dtype=None, **kwargs) -> Tensor:
    if dtype is not None: return Tensor.randn(*self.shape, dtype=dtype, **kwargs)
    return _w(L.tg_randn_like(self._h))

  # ------------------------------------------------------------------ elementwise
  add = _binop(L.tg_add)
  sub = _binop(L.tg_sub)
  mul = _binop(L.tg_mul)
  def div(self, x, reverse=False, rounding_mode=None):
    if rounding_mode is None: return _bin(L.tg_div, self, x, reverse)
    mode = {"trunc": 1, "floor": 2}.get(rounding_mode)
    if mode is None: raise RuntimeError(f"{rounding_mode=} is not supported")
    bh, tmp = _operand(x)
    r = L.tg_div_mode(bh, self._h, mode) if reverse else L.tg_div_mode(self._h, bh, mode)
    if tmp.__class__ is int: L.tg_release(tmp)
    return _w(r)
  idiv = _binop(L.tg_idiv)
  mod = _binop(L.tg_mod)
  fmod = _binop(L.tg_fmod)
  pow = _binop(L.tg_pow)
  maximum = _binop(L.tg_maximum)
  minimum = _binop(L.tg_minimum)
  bitwise_and = _binop(L.tg_bitwise_and)
  bitwise_or = _binop(L.tg_bitwise_or)
  bitwise_xor = _binop(L.tg_bitwise_xor)
  lshift = _binop(L.tg_lshift)
  rshift = _binop(L.tg_rshift)
  bitwise_left_shift, bitwise_right_shift = lshift, rshift
  copysign = _binop(L.tg_copysign)
  logaddexp = _binop(L.tg_logaddexp)
  eq = _binop(L.tg_eq)
  ne = _binop(L.tg_ne)
  __add__ = _binop(L.tg_add)
  __radd__ = _rbinop(L.tg_add)
  __sub__ = _binop(L.tg_sub)
  __rsub__ = _rbinop(L.tg_sub)
  __mul__ = _binop(L.tg_mul)
  __rmul__ = _rbinop(L.tg_mul)
  __truediv__ = _binop(L.tg_div)
  __rtruediv__ = _rbinop(L.tg_div)
  def __floordiv__(self, x): return self.div(x, rounding_mode="floor")
  def __rfloordiv__(self, x): return self.div(x, True, rounding_mode="floor")
  __mod__ = _binop(L.tg_mod)
  __rmod__ = _rbinop(L.tg_mod)
  __pow__ = _binop(L.tg_pow)
  __rpow__ = _rbinop(L.tg_pow)
  __and__ = _binop(L.tg_bitwise_and)
  __rand__ = _rbinop(L.tg_bitwise_and)
  __or__ = _binop(L.tg_bitwise_or)
  __ror__ = _rbinop(L.tg_bitwise_or)
  __xor__ = _binop(L.tg_bitwise_xor)
  __rxor__ = _rbinop(L.tg_bitwise_xor)
  __lshift__ = _binop(L.tg_lshift)
  __rlshift__ = _rbinop(L.tg_lshift)
  __rshift__ = _binop(L.tg_rshift)
  __rrshift__ = _rbinop(L.tg_rshift)
  __lt__ = _binop(L.tg_lt)
  __le__ = _binop(L.tg_le)
  __gt__ = _binop(L.tg_gt)
  __ge__ = _binop(L.tg_ge)
  def __eq__(self, x): return _bin(L.tg_eq, self, x)  # type: ignore[override]
  def __ne__(self, x): return _bin(L.tg_ne, self, x)  # type: ignore[override]
  __neg__ = _unop(L.tg_neg)
  __invert__ = _unop(L.tg_bitwise_not)
  def __matmul__(self, x): return self.matmul(x)
  def __rmatmul__(self, x): return self.matmul(x, reverse=True)
  def __iadd__(self, x): return self.assign(self.add(x))
  def __isub__(self, x): return self.assign(self.sub(x))
  def __imul__(self, x): return self.assign(self.mul(x))
  def __itruediv__(self, x): return self.assign(self.div(x))
  def __ifloordiv__(self, x): return self.assign(self.__floordiv__(x))
  def __ipow__(self, x): return self.assign(self.pow(x))
  def __iand__(self, x): return self.assign(self.bitwise_and(x))
  def __ior__(self, x): return self.assign(self.bitwise_or(x))
  def __ixor__(self, x): return self.assign(self.bitwise_xor(x))
  def __ilshift__(self, x): return self.assign(self.lshift(x))
  def __irshift__(self, x): return self.assign(self.rshift(x))
  def __imatmul__(self, x): return self.assign(self.matmul(x))

  def where(self, x, y) -> Tensor:
    xh, xt = _operand(x)
    yh, yt = _operand(y)
    r = L.tg_where(self._h, xh, yh)
    for t in (xt, yt):
      if t.__class__ is int: L.tg_release(t)
    return _w(r)
  def masked_fill(self, mask:Tensor, value) -> Tensor:
    vh, vt = _operand(value)
    r = L.tg_masked_fill(self._h, mask._h, vh)
    if vt.__class__ is int: L.tg_release(vt)
    return _w(r)
  def lerp(self, end:Tensor, weight) -> Tensor:
    wh, wt = _operand(weight)
    r = L.tg_lerp(self._h, end._h, wh)
    if wt.__class__ is int: L.tg_release(wt)
    return _w(r)
  def clamp(self, min_=None, max_=None) -> Tensor:
    if min_ is None and max_ is None: raise RuntimeError("at least one of 'min_' or 'max_' must not be None")
    if isinstance(min_, Tensor) or isinstance(max_, Tensor):
      ret = self.maximum(min_) if min_ is not None else self
      return ret.minimum(max_) if max_ is not None else ret
    return _w(L.tg_clamp(self._h, math.nan if min_ is None else float(min_), math.nan if max_ is None else float(max_)))
  clip = clamp
  neg = _unop(L.tg_neg)
  abs = _unop(L.tg_abs)
  sign = _unop(L.tg_sign)
  exp = _unop(L.tg_exp)
  exp2 = _unop(L.tg_exp2)
  log = _unop(L.tg_log)
  log2 = _unop(L.tg_log2)
  log10 = _unop(L.tg_log10)
  sqrt = _unop(L.tg_sqrt)
  rsqrt = _unop(L.tg_rsqrt)
  reciprocal = _unop(L.tg_reciprocal)
  square = _unop(L.tg_square)
  sin = _unop(L.tg_sin)
  cos = _unop(L.tg_cos)
  tan = _unop(L.tg_tan)
  asin = _unop(L.tg_asin)
  acos = _unop(L.tg_acos)
  atan = _unop(L.tg_atan)
  sinh = _unop(L.tg_sinh)
  cosh = _unop(L.tg_cosh)
  tanh = _unop(L.tg_tanh)
  asinh = _unop(L.tg_asinh)
  acosh = _unop(L.tg_acosh)
  atanh = _unop(L.tg_atanh)
  trunc = _unop(L.tg_trunc)
  floor = _unop(L.tg_floor)
  ceil = _unop(L.tg_ceil)
  round = _unop(L.tg_round)
  isnan = _unop(L.tg_isnan)
  isfinite = _unop(L.tg_isfinite)
  def isinf(self, detect_positive=True, detect_negative=True):
    if detect_positive and detect_negative: return _w(L.tg_isinf(self._h))
    if not detect_positive and not detect_negative: return self.full_like(False, dtype=dtypes.bool)
    inf = _w(L.tg_isinf(self._h))
    return inf.bitwise_and(self > 0 if detect_positive else self < 0)
  erf = _unop(L.tg_erf)
  logical_not = _unop(L.tg_logical_not)
  bitwise_not = _unop(L.tg_bitwise_not)
  relu = _unop(L.tg_relu)
  relu6 = _unop(L.tg_relu6)
  sigmoid = _unop(L.tg_sigmoid)
  def hardsigmoid(self, alpha:float=1/6, beta:float=0.5):
    if alpha != 1/6 or beta != 0.5: return (alpha * self + beta).relu() - (alpha * self + beta - 1).relu()
    return _w(L.tg_hardsigmoid(self._h))
  def gelu(self, approximate:str="tanh"):
    if approximate != "tanh": return 0.5 * self * (1 + (self / math.sqrt(2)).erf())
    return _w(L.tg_gelu(self._h))
  quick_gelu = _unop(L.tg_quick_gelu)
  silu = _unop(L.tg_silu)
  swish = _unop(L.tg_swish)
  hardswish = _unop(L.tg_hardswish)
  def softplus(self, beta=1.0): return _w(L.tg_softplus(self._h, float(beta)))
  softsign = _unop(L.tg_softsign)
  mish = _unop(L.tg_mish)
  def leaky_relu(self, neg_slope=0.01): return _w(L.tg_leaky_relu(self._h, float(neg_slope)))
  def elu(self, alpha=1.0): return _w(L.tg_elu(self._h, float(alpha)))
  def celu(self, alpha=1.0): return _w(L.tg_celu(self._h, float(alpha)))
  def selu(self, alpha=1.67326, gamma=1.0507):
    if alpha != 1.67326 or gamma != 1.0507: return gamma * (self >= 0).detach().where(self, alpha * (self.exp() - 1))
    return _w(L.tg_selu(self._h))
  def hardtanh(self, min_val=-1, max_val=1): return _w(L.tg_hardtanh(self._h, float(min_val), float(max_val)))
  logsigmoid = _unop(L.tg_logsigmoid)

  # ------------------------------------------------------------------ dtype
  def cast(self, dtype) -> Tensor:
    dt = to_dtype(dtype)
    return self if dt is self.dtype else _w(L.tg_cast(self._h, dt._tg))
  def bitcast(self, dtype) -> Tensor: return _w(L.tg_bitcast(self._h, to_dtype(dtype)._tg))
  def float(self): return self.cast(dtypes.float32)
  def half(self): return self.cast(dtypes.float16)
  def int(self): return self.cast(dtypes.int32)
  def bool(self): return self.cast(dtypes.bool)
  def bfloat16(self): return self.cast(dtypes.bfloat16)
  def double(self): return self.cast(dtypes.float64)
  def long(self): return self.cast(dtypes.int64)
  def short(self): return self.cast(dtypes.int16)

  # ------------------------------------------------------------------ reductions
  def _reduce(self, fn, axis, keepdim, *extra):
    ax, n = _axes(axis)
    return _w(fn(self._h, ax, n, keepdim is True or bool(keepdim), *extra))
  def sum(self, axis=None, keepdim=False, dtype=None):
    if dtype is not None: return self.cast(dtype)._reduce(_tg_sum, axis, keepdim)
    ax, n = _AXES.get(axis) or _axes(axis) if axis.__class__ is int else _axes(axis)
    h = _tg_sum(self._h, ax, n, keepdim if keepdim.__class__ is bool else bool(keepdim))
    if not h: _raise()
    t = _new(Tensor)
    t._h = h
    return t
  def prod(self, axis=None, keepdim=False, dtype=None):
    x = self.cast(dtype) if dtype is not None else self
    return x._reduce(L.tg_prod, axis, keepdim)
  def max(self, axis=None, keepdim=False): return self._reduce(L.tg_max, axis, keepdim)
  def min(self, axis=None, keepdim=False): return self._reduce(L.tg_min, axis, keepdim)
  def mean(self, axis=None, keepdim=False): return self._reduce(L.tg_mean, axis, keepdim)
  def var(self, axis=None, keepdim=False, correction=1): return self._reduce(L.tg_var, axis, keepdim, float(correction))
  def std(self, axis=None, keepdim=False, correction=1): return self._reduce(L.tg_std, axis, keepdim, float(correction))
  def var_mean(self, axis=None, keepdim=False, correction=1):
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self, axis=None, keepdim=False, correction=1):
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  def any(self, axis=None, keepdim=False): return self._reduce(L.tg_any, axis, keepdim)
  def all(self, axis=None, keepdim=False): return self._reduce(L.tg_all, axis, keepdim)
  def logsumexp(self, axis=None, keepdim=False):
    if axis is None:
      flat = self.flatten()  # held: a temporary's handle would be released before the call
      r = _w(L.tg_logsumexp(flat._h, 0, False))
      return r.reshape((1,)*self.ndim) if keepdim else r
    if isinstance(axis, (tuple, list)):
      if len(axis) != 1: raise NotImplementedError("tinygrad.c: logsumexp over several axes not supported yet")
      axis = axis[0]
    return _w(L.tg_logsumexp(self._h, axis, bool(keepdim)))
  def argmax(self, axis=None, keepdim=False):
    if axis is None: return _w(L.tg_argmax_all(self._h))
    return _w(L.tg_argmax(self._h, axis, bool(keepdim)))
  def argmin(self, axis=None, keepdim=False):
    if axis is None:
      flat = self.flatten()
      return _w(L.tg_argmin(flat._h, 0, False))
    return _w(L.tg_argmin(self._h, axis, bool(keepdim)))
  def cumsum(self, axis:int=0): return _w(L.tg_cumsum(self._h, axis))
  def cumprod(self, axis:int): return _w(L.tg_cumprod(self._h, axis))
  def _cum_extreme(self, fn, axis):
    idx = _vp()
    v = fn(self._h, axis, ctypes.byref(idx))
    return _w(v), _w(idx.value)
  def cummax(self, axis:int=0): return self._cum_extreme(L.tg_cummax, axis)
  def cummin(self, axis:int=0): return self._cum_extreme(L.tg_cummin, axis)
  def logcumsumexp(self, axis=0): return _w(L.tg_logcumsumexp(self._h, axis))
  def softmax(self, axis=-1, dtype=None):
    x = self.cast(dtype) if dtype is not None else self
    return _w(L.tg_softmax(x._h, axis))
  def log_softmax(self, axis=-1, dtype=None):
    x = self.cast(dtype) if dtype is not None else self
    return _w(L.tg_log_softmax(x._h, axis))

  # ------------------------------------------------------------------ movement
  def reshape(self, shape, *args) -> Tensor:
    c = shape.__class__
    s = (shape,) + args if c is int else shape if c is tuple and not args else argfix(shape, *args)
    arr = _I64.get(s)
    if arr is None:
      if None in s: s = tuple(self.shape[i] if x is None else x for i, x in enumerate(s))
      arr = _i64_const(s)
    h = _tg_reshape(self._h, arr, len(s))
    if not h: _raise()
    t = _new(Tensor)
    t._h = h
    return t
  view = reshape
  def expand(self, shape, *args) -> Tensor:
    s = argfix(shape, *args)
    return _w(L.tg_expand(self._h, _i64(s), len(s)))
  def permute(self, order, *args) -> Tensor:
    o = argfix(order, *args)
    return _w(L.tg_permute(self._h, _ints(o), len(o)))
  def transpose(self, dim0=1, dim1=0) -> Tensor: return _w(L.tg_transpose(self._h, dim0, dim1))
  def flip(self, axis, *args) -> Tensor:
    a = argfix(axis, *args)
    return _w(L.tg_flip(self._h, _ints(a), len(a)))
  def shrink(self, arg) -> Tensor:
    if len(arg) != self.ndim: raise ValueError(f"{self.ndim=} != {len(arg)=}")
    b = [v for x, s in zip(arg, self.shape) for v in ((0, s) if x is None else x)]
    return _w(L.tg_shrink(self._h, _i64(b), self.ndim))
  def pad(self, padding, mode:str="constant", value=0.0) -> Tensor:
    if mode not in _PAD_MODES: raise NotImplementedError(f"{mode=} is not supported")
    if not any(isinstance(p, (tuple, list, type(None))) for p in padding):
      if len(padding) % 2 != 0: raise ValueError("Flat padding must have even number of pads")
      pairs = [tuple(padding[i:i+2]) for i in range(0, len(padding), 2)][::-1]
      pX = [(0, 0)] * (self.ndim - len(pairs)) + pairs
    else: pX = [(0, 0) if p is None else tuple(p) for p in padding]
    if len(pX) != self.ndim: raise ValueError(f"padding length is improper, {padding=} {self.ndim=}")
    if mode != "constant" and value != 0.0: pass
    flat = [v for p in pX for v in p]
    return _w(L.tg_pad(self._h, _i64(flat), self.ndim, _PAD_MODES[mode], float(value)))
  def squeeze(self, dim=None) -> Tensor:
    if dim is None: return _w(L.tg_squeeze_all(self._h))
    return _w(L.tg_squeeze(self._h, dim))
  def unsqueeze(self, dim:int) -> Tensor: return _w(L.tg_unsqueeze(self._h, dim))
  def flatten(self, start_dim=0, end_dim=-1) -> Tensor: return _w(L.tg_flatten(self._h, start_dim, end_dim))
  def unflatten(self, dim:int, sizes) -> Tensor:
    dim = self._resolve_dim(dim)
    return self.reshape(self.shape[:dim] + tuple(sizes) + self.shape[dim+1:])
  @staticmethod
  def _seq(first, args) -> tuple:
    """Tensor.cat(a, b) / a.cat(b) / Tensor.cat((a, b)): the tensors (tinygrad's argfix: a tuple and more is an error)"""
    if isinstance(first, (tuple, list)):
      if args: raise ValueError(f"bad arg {(first,) + args}")
      return tuple(first)
    return (first,) + args
  def cat(self, *args:Tensor, dim:int=0) -> Tensor:
    ts = Tensor._seq(self, args)
    return _w(L.tg_cat(_handles(ts), len(ts), dim))
  def stack(self, *args:Tensor, dim:int=0) -> Tensor:
    ts = Tensor._seq(self, args)
    return _w(L.tg_stack(_handles(ts), len(ts), dim))
  def repeat(self, repeats, *args) -> Tensor:
    r = argfix(repeats, *args)
    return _w(L.tg_repeat(self._h, _i64(r), len(r)))
  def split(self, sizes, dim:int=0) -> tuple[Tensor, ...]:
    dim = self._resolve_dim(dim)
    if isinstance(sizes, int):
      n = max(1, -(-self.shape[dim] // sizes)) if sizes > 0 else 1
      out = (_vp * n)()
      cnt = L.tg_split(self._h, sizes, dim, out, n)
    else:
      sizes = list(sizes)
      n = len(sizes)
      out = (_vp * max(1, n))()
      cnt = L.tg_split_sizes(self._h, _i64(sizes), n, dim, out, n)
    if cnt < 0: _raise()
    return tuple(_w(out[i]) for i in range(cnt))
  def chunk(self, chunks:int, dim:int=0) -> list[Tensor]:
    out = (_vp * max(1, chunks))()
    cnt = L.tg_chunk(self._h, chunks, dim, out, max(1, chunks))
    if cnt < 0: _raise()
    return [_w(out[i]) for i in range(cnt)]
  def gather(self, dim:int, index:Tensor) -> Tensor: return _w(L.tg_gather(self._h, dim, index._h))
  def _pool(self, k_, stride=1, dilation=1) -> Tensor:
    """tinygrad's _pool: sliding windows over the last len(k_) axes (tg_pool)"""
    k_ = tuple(k_)
    s_, d_ = make_tuple(stride, len(k_)), make_tuple(dilation, len(k_))
    return _w(L.tg_pool(self._h, _i64(k_), len(k_), _i64(s_), _i64(d_)))

  def __getitem__(self, indices) -> Tensor:
    if not isinstance(indices, tuple): indices = (indices,)
    arr = (_Index * max(1, len(indices)))()
    keep = []
    for i, ix in enumerate(indices):
      e = arr[i]
      e.step = 1
      if isinstance(ix, bool) or ix is True or ix is False:
        raise NotImplementedError("tinygrad.c: boolean indices not supported yet")
      if isinstance(ix, int) or (type(ix).__module__ == "numpy" and hasattr(ix, "dtype") and ix.ndim == 0 if hasattr(ix, "ndim") else False):
        e.kind, e.start = _IDX_INT, int(ix)
      elif isinstance(ix, slice):
        for v in (ix.start, ix.stop, ix.step):
          if v is not None and not isinstance(v, int): raise TypeError(f"slice parameters must be int or None, got {type(v).__name__}")
        e.kind = _IDX_SLICE
        e.step = 1 if ix.step is None else ix.step
        if ix.start is not None: e.start, e.has_start = ix.start, True
        if ix.stop is not None: e.stop, e.has_stop = ix.stop, True
      elif ix is None: e.kind = _IDX_NEWAXIS
      elif ix is Ellipsis: e.kind = _IDX_ELLIPSIS
      elif isinstance(ix, (Tensor, list, tuple)) or hasattr(ix, "__array_interface__"):
        t = ix if isinstance(ix, Tensor) else Tensor(ix)
        if not dtypes.is_int(t.dtype): raise IndexError(f"tensors used as indices must be int tensors, got {t.dtype}")
        keep.append(t)
        e.kind, e.tensor = _IDX_TENSOR, t._h
      else: raise IndexError(f"{type(ix).__name__} indexing is not supported")
    r = L.tg_getitem(self._h, arr, len(indices))
    if not r:  # tinygrad raises IndexError for a bad index, ValueError for a zero step
      msg = (L.tg_last_error() or b"").decode()
      if L.tg_last_status() == _TG_ERR_INVALID_ARGUMENT and "step" not in msg: raise OutOfRangeError(msg)
      _raise()
    return _w(r)
  def __setitem__(self, indices, v) -> None:
    view = self[indices]
    if not isinstance(v, Tensor): v = Tensor(v, dtype=self.dtype)
    if v.dtype is not self.dtype: v = v.cast(self.dtype)
    _check(L.tg_assign(view._h, v._h))
    _check(L.tg_realize(view._h))

  # ------------------------------------------------------------------ linear algebra and nn functions
  def matmul(self, x, reverse=False, dtype=None) -> Tensor:
    if not isinstance(x, Tensor): x = Tensor(x)
    a, b = (x, self) if reverse else (self, x)
    if dtype is not None: a, b = a.cast(dtype), b.cast(dtype)
    return _w(L.tg_matmul(a._h, b._h))
  def dot(self, w:Tensor, dtype=None) -> Tensor:
    a, b = (self.cast(dtype), w.cast(dtype)) if dtype is not None else (self, w)
    return _w(L.tg_dot(a._h, b._h))
  def linear(self, weight:Tensor, bias:Tensor|None=None, dtype=None) -> Tensor:
    x = self.cast(dtype) if dtype is not None else self
    return _w(L.tg_linear(x._h, weight._h, bias._h if bias is not None else None))
  def sequential(self, ll) -> Tensor:
    x = self
    for f in ll: x = f(x)
    return x
  def one_hot(self, num_classes:int) -> Tensor:
    if not dtypes.is_int(self.dtype): raise RuntimeError(f"expect integer dtype, getting {self.dtype=}")
    if num_classes < 0: raise ValueError(f"num_classes must be non-negative, got {num_classes}")
    return _w(L.tg_one_hot(self._h, num_classes))
  def conv2d(self, weight:Tensor, bias:Tensor|None=None, groups=1, stride=1, dilation=1, padding=0, dtype=None) -> Tensor:
    from .composite import conv_nd
    return conv_nd(self, weight, bias, groups, stride, dilation, padding, dtype)
  def conv_transpose2d(self, weight:Tensor, bias:Tensor|None=None, groups=1, stride=1, dilation=1, padding=0,
                       output_padding=0) -> Tensor:
    from .composite import conv_transpose_nd
    return conv_transpose_nd(self, weight, bias, groups, stride, dilation, padding, output_padding)
  def max_pool2d(self, kernel_size=(2,2), stride=None, dilation=1, padding=0, ceil_mode=False, return_indices=False):
    from .composite import max_pool
    return max_pool(self, kernel_size, stride, dilation, padding, ceil_mode, return_indices)
  def avg_pool2d(self, kernel_size=(2,2), stride=None, dilation=1, padding=0, ceil_mode=False, count_include_pad=True):
    from .composite import avg_pool
    return avg_pool(self, kernel_size, stride, dilation, padding, ceil_mode, count_include_pad)
  def layernorm(self, axis=-1, eps:float=1e-5) -> Tensor:
    ax, n = _axes(axis)
    return _w(L.tg_layernorm(self._h, ax, n, float(eps)))
  def batchnorm(self, weight, bias, mean:Tensor, invstd:Tensor, axis=1) -> Tensor:
    ax, n = _axes(axis)
    return _w(L.tg_batchnorm(self._h, weight._h if weight is not None else None, bias._h if bias is not None else None,
                             mean._h, invstd._h, ax, n))
  def rms_norm(self, eps:float=1e-6) -> Tensor: return _w(L.tg_rms_norm(self._h, float(eps)))
  def dropout(self, p=0.5) -> Tensor:
    if not 0 <= p <= 1: raise ValueError(f"{p=} is out of range [0, 1]")
    return _w(L.tg_dropout(self._h, float(p)))
  def scaled_dot_product_attention(self, key:Tensor, value:Tensor, attn_mask:Tensor|None=None, dropout_p:float=0.0,
                                   is_causal:bool=False, enable_gqa:bool=False) -> Tensor:
    if enable_gqa: raise NotImplementedError("tinygrad.c: scaled_dot_product_attention enable_gqa not supported yet")
    return _w(L.tg_scaled_dot_product_attention(self._h, key._h, value._h, attn_mask._h if attn_mask is not None else None,
                                                float(dropout_p), bool(is_causal)))
  def _reduction(self, reduction:str) -> int:
    if reduction not in _REDUCTIONS: raise ValueError(f"{reduction=} must be one of {tuple(_REDUCTIONS)}")
    return _REDUCTIONS[reduction]
  def binary_crossentropy(self, Y:Tensor, reduction:str="mean") -> Tensor:
    return _w(L.tg_binary_crossentropy(self._h, Y._h, self._reduction(reduction)))
  def binary_crossentropy_logits(self, Y:Tensor, reduction:str="mean", pos_weight:Tensor|None=None) -> Tensor:
    return _w(L.tg_binary_crossentropy_logits(self._h, Y._h, self._reduction(reduction),
                                              pos_weight._h if pos_weight is not None else None))
  def sparse_categorical_crossentropy(self, Y:Tensor, ignore_index:int=-1, label_smoothing=0.0, reduction:str="mean"):
    return _w(L.tg_sparse_categorical_crossentropy(self._h, Y._h, ignore_index, float(label_smoothing),
                                                   self._reduction(reduction)))
  def cross_entropy(self, Y:Tensor, reduction:str="mean", label_smoothing:float=0.0) -> Tensor:
    return _w(L.tg_cross_entropy(self._h, Y._h, self._reduction(reduction), float(label_smoothing)))
  def nll_loss(self, Y:Tensor, weight:Tensor|None=None, ignore_index:int|None=None, reduction:str="mean") -> Tensor:
    return _w(L.tg_nll_loss(self._h, Y._h, weight._h if weight is not None else None, ignore_index is not None,
                            ignore_index if ignore_index is not None else 0, self._reduction(reduction)))

from .device import Device  # noqa: E402
from . import composite  # noqa: E402,F401  (adds the composed methods to Tensor)
