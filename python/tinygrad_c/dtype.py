"""tinygrad_c.dtype — tinygrad's DType objects (tinygrad/dtype.py): names, sizes, priorities and the helpers programs
use (dtypes.is_float, from_py, least_upper_dtype, ...). Each DType carries its tg_dtype enum value (`_tg`), the value
the C library takes; the promotion itself is done by the C library on every op (this lattice copy only answers
Python-side questions such as `least_upper_dtype` and `Tensor(list)`'s inferred dtype)."""
from __future__ import annotations
import functools, math, os

class DType:
  __slots__ = ("priority", "bitsize", "name", "fmt", "_tg", "_key")
  def __init__(self, priority:int, bitsize:int, name:str, fmt, tg:int, key:str):
    self.priority, self.bitsize, self.name, self.fmt, self._tg, self._key = priority, bitsize, name, fmt, tg, key
  @property
  def itemsize(self) -> int: return (self.bitsize + 7) // 8
  @property
  def count(self) -> int: return 1
  @property
  def base(self) -> DType: return self
  @property
  def scalar(self): return self
  def __repr__(self): return f"dtypes.{_REPR.get(self._key, self._key)}"
  def __lt__(self, o:DType): return (self.priority, self.bitsize, self.name) < (o.priority, o.bitsize, o.name)
  def __reduce__(self): return (getattr, (dtypes, self._key))
  @property
  def min(self):
    if dtypes.is_int(self): return 0 if dtypes.is_unsigned(self) else -2**(self.bitsize-1)
    return -math.inf if dtypes.is_float(self) else False
  @property
  def max(self):
    if dtypes.is_int(self): return 2**self.bitsize-1+self.min
    return math.inf if dtypes.is_float(self) else True
  def vec(self, sz:int): raise NotImplementedError("tinygrad.c: vector dtypes are not part of the Python package")
  def ptr(self, *a, **k): raise NotImplementedError("tinygrad.c: pointer dtypes are not part of the Python package")

# (key, tg_dtype enum value in include/tinygrad.h, priority, bits, tinygrad's name, struct format)
_TABLE = [("void", 0, -1, 0, "void", None), ("weakint", 1, 0, 800, "weakint", None), ("bool", 2, 0, 1, "bool", "?"),
  ("int8", 3, 1, 8, "signed char", "b"), ("uint8", 4, 2, 8, "unsigned char", "B"), ("int16", 5, 3, 16, "short", "h"),
  ("uint16", 6, 4, 16, "unsigned short", "H"), ("int32", 7, 5, 32, "int", "i"), ("uint32", 8, 6, 32, "unsigned int", "I"),
  ("int64", 9, 7, 64, "long", "q"), ("uint64", 10, 8, 64, "unsigned long", "Q"), ("weakfloat", 11, 9, 800, "weakfloat", None),
  ("fp8e4m3", 12, 10, 8, "float8_e4m3", None), ("fp8e5m2", 13, 11, 8, "float8_e5m2", None),
  ("fp8e4m3fnuz", 14, 10, 8, "float8_e4m3fnuz", None), ("fp8e5m2fnuz", 15, 11, 8, "float8_e5m2fnuz", None),
  ("float16", 16, 12, 16, "half", "e"), ("bfloat16", 17, 13, 16, "__bf16", None), ("float32", 18, 14, 32, "float", "f"),
  ("float64", 19, 15, 64, "double", "d")]
_BY_TG: list[DType] = []
_REPR = {"float16": "half", "float32": "float", "float64": "double", "uint8": "uchar", "uint16": "ushort", "uint32": "uint",
         "uint64": "ulong", "int8": "char", "int16": "short", "int32": "int", "int64": "long"}  # tinygrad prints aliases

class DTypes:
  for _k, _tg, _p, _b, _n, _f in _TABLE:
    locals()[_k] = DType(_p, _b, _n, _f, _tg, _k)
  del _k, _tg, _p, _b, _n, _f
  half = float16; float = float32; double = float64  # noqa: E702,F821
  uchar = uint8; ushort = uint16; uint = uint32; ulong = uint64  # noqa: E702,F821
  char = int8; short = int16; int = int32; long = int64  # noqa: E702,F821
  fp8_ocp = (fp8e4m3, fp8e5m2)  # noqa: F821
  fp8_fnuz = (fp8e4m3fnuz, fp8e5m2fnuz)  # noqa: F821
  fp8s = fp8_ocp + fp8_fnuz
  floats = fp8s + (float16, bfloat16, float32, float64)  # noqa: F821
  uints = (uint8, uint16, uint32, uint64)  # noqa: F821
  sints = (int8, int16, int32, int64)  # noqa: F821
  ints = uints + sints
  weaks = (weakint, weakfloat)  # noqa: F821
  all = floats + ints + (bool,)  # noqa: A003,F821
  _default_float_key = os.environ.get("DEFAULT_FLOAT", "float32").lower()
  _default_int_key = os.environ.get("DEFAULT_INT", "int32").lower()
  @property
  def default_float(self) -> DType: return to_dtype(self._default_float_key)
  @default_float.setter
  def default_float(self, v): raise NotImplementedError("tinygrad.c: the default float is fixed at float32 in the C library")
  @property
  def default_int(self) -> DType: return to_dtype(self._default_int_key)
  @staticmethod
  def is_float(x:DType) -> bool: return x in dtypes.floats or x is dtypes.weakfloat
  @staticmethod
  def is_int(x:DType) -> bool: return x in dtypes.ints or x is dtypes.weakint
  @staticmethod
  def is_unsigned(x:DType) -> bool: return x in dtypes.uints
  @staticmethod
  def is_bool(x:DType) -> bool: return x is dtypes.bool
  @staticmethod
  def from_py(x) -> DType:
    if isinstance(x, bool): return dtypes.bool
    if isinstance(x, float): return dtypes.weakfloat
    if isinstance(x, int): return dtypes.weakint
    if isinstance(x, (list, tuple)): return strong_dtype(max(dtypes.from_py(xi) for xi in x)) if x else dtypes.default_float
    raise RuntimeError(f"Could not infer dtype of {x} with type {type(x)}")
  @staticmethod
  def as_const(val, dtype:DType):
    if dtypes.is_float(dtype): return float(val)
    if dtypes.is_bool(dtype): return bool(val)
    return int(val)
  @staticmethod
  def finfo(dtype:DType) -> tuple[int, int]:
    if not dtypes.is_float(dtype): raise ValueError(f"{dtype} is not a floating point type")
    return {dtypes.float16: (5, 10), dtypes.bfloat16: (8, 7), dtypes.float32: (8, 23), dtypes.float64: (11, 52),
            dtypes.fp8e4m3: (4, 3), dtypes.fp8e5m2: (5, 2), dtypes.fp8e4m3fnuz: (4, 3), dtypes.fp8e5m2fnuz: (5, 2)}[dtype]
  @staticmethod
  def fields() -> dict[str, DType]: return dict(DTYPES_DICT)

dtypes = DTypes()
for _k, _tg, *_ in _TABLE: _BY_TG.append(getattr(dtypes, _k))
DTYPES_DICT = {k: getattr(dtypes, k) for k, *_ in _TABLE if k not in ("void", "weakint", "weakfloat")}
INVERSE_DTYPES_DICT = {v.name: k for k, v in DTYPES_DICT.items()}
DTypeLike = "str|DType"
ConstType = (float, int, bool)

def to_dtype(dtype) -> DType:
  if isinstance(dtype, DType): return dtype
  if isinstance(dtype, str):
    d = getattr(dtypes, dtype.lower(), None)
    if isinstance(d, DType): return d
  raise AttributeError(f"unknown dtype {dtype!r}")
def from_tg(v:int) -> DType: return _BY_TG[v]
def strong_dtype(dtype:DType) -> DType:
  return dtypes.default_int if dtype is dtypes.weakint else dtypes.default_float if dtype is dtypes.weakfloat else dtype

_PROMO = {dtypes.bool: [dtypes.weakint], dtypes.weakint: [dtypes.int8, dtypes.uint8], dtypes.int8: [dtypes.int16],
  dtypes.int16: [dtypes.int32], dtypes.int32: [dtypes.int64], dtypes.int64: [dtypes.weakfloat],
  dtypes.uint8: [dtypes.int16, dtypes.uint16], dtypes.uint16: [dtypes.int32, dtypes.uint32],
  dtypes.uint32: [dtypes.int64, dtypes.uint64], dtypes.uint64: [dtypes.weakfloat], dtypes.weakfloat: list(dtypes.fp8s),
  **{d: [dtypes.float16, dtypes.bfloat16] for d in dtypes.fp8s}, dtypes.float16: [dtypes.float32],
  dtypes.bfloat16: [dtypes.float32], dtypes.float32: [dtypes.float64]}
@functools.lru_cache(None)
def _parents(d:DType) -> frozenset:
  return frozenset({d}).union(*[_parents(p) for p in _PROMO[d]]) if d is not dtypes.float64 else frozenset({d})
def least_upper_dtype(*ds:DType) -> DType: return min(frozenset.intersection(*[_parents(d) for d in ds]))
def least_upper_float(dt:DType) -> DType:
  return dtypes.weakfloat if dt is dtypes.weakint else dt if dtypes.is_float(dt) else least_upper_dtype(dt, dtypes.default_float)
def sum_acc_dtype(dt:DType) -> DType:
  if dtypes.is_unsigned(dt): return least_upper_dtype(dt, dtypes.uint)
  if dtypes.is_int(dt) or dt is dtypes.bool: return least_upper_dtype(dt, dtypes.int)
  return least_upper_dtype(dt, dtypes.float32)

# numpy interop (numpy is optional: only .numpy() and Tensor(ndarray) need it)
_NP_NAMES = {"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32",
             "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float16": "float16", "float32": "float32",
             "float64": "float64"}
def _to_np_dtype(dtype:DType):
  import numpy as np
  n = _NP_NAMES.get(strong_dtype(dtype)._key)
  return np.dtype(n).type if n is not None else None
def _from_np_dtype(npdtype) -> DType:
  import numpy as np
  return to_dtype(np.dtype(npdtype).name)
