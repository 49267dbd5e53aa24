"""tinygrad_c.composite — tinygrad Tensor methods that the C API has no single call for, each composed from C-library
tensor ops exactly as tinygrad composes them (tinygrad/mixin/*.py): argument shapes and pads are worked out here, every
value is computed by the C library. Methods not here and not in tensor.py raise NotImplementedError by name (see the
end of this file)."""
from __future__ import annotations
import math
from .dtype import dtypes, to_dtype
from .helpers import make_tuple, argfix, ceildiv

def _tensor():
  from .tensor import Tensor
  return Tensor

# ---------------------------------------------------------------- pads shared by convs and pools
def _pool_pads(padding, dims:int) -> list[int]:
  """tinygrad's resolve_pool_pads: flat (left, right) pads, last spatial axis first."""
  if not isinstance(padding, int) and not (len(padding) == 2*dims or len(padding) == dims):
    raise ValueError(f"Padding must be an int or a sequence of length {dims} or {2*dims}, but got {padding=} for shape")
  if isinstance(padding, int): return [padding]*2*dims
  if len(padding) == 2*dims: return list(padding)
  return [p for p in reversed(padding) for _ in range(2)]
def _grouped(flat:list[int]) -> list[tuple[int, int]]:
  """flat torch-order pads -> (before, after) per axis, first axis first"""
  return [(flat[i], flat[i+1]) for i in range(0, len(flat), 2)][::-1]
def _symmetric(flat:list[int]) -> tuple[int, ...]|None:
  g = _grouped(flat)
  return tuple(b for b, _ in g) if all(b == a and b >= 0 for b, a in g) else None

def _spatial_pad(x, flat:list[int], value=0.0):
  g = _grouped(flat)
  return x.pad(((0, 0),)*(x.ndim - len(g)) + tuple(g), value=value)

# ---------------------------------------------------------------- convolutions
def conv_nd(x, weight, bias, groups, stride, dilation, padding, dtype):
  from .tensor import _w, _i64
  from ._lib import lib as L
  if dtype is not None: x, weight = x.cast(dtype), weight.cast(dtype)
  dims = weight.ndim - 2
  if dims < 1: raise RuntimeError(f"conv weight needs at least 3 dims, got {weight.shape}")
  if isinstance(padding, str): raise NotImplementedError(f"tinygrad.c: conv2d padding={padding!r} not supported yet")
  flat = _pool_pads(padding, dims)
  if dims == 1:  # as a 2-d conv with a height of 1
    x1, w1 = x.unsqueeze(-2), weight.unsqueeze(-2)
    s, d = make_tuple(stride, 1), make_tuple(dilation, 1)
    return conv_nd(x1, w1, bias, groups, (1, s[0]), (1, d[0]), flat + [0, 0], None).squeeze(-2)
  if dims != 2: return _conv_generic(x, weight, bias, groups, stride, dilation, flat)
  if x.ndim != 4: raise RuntimeError(f"conv2d input must be 4-d, got {x.shape}")
  sym = _symmetric(flat)
  if sym is None: x, sym = _spatial_pad(x, flat), (0, 0)
  s, d = make_tuple(stride, 2), make_tuple(dilation, 2)
  return _w(L.tg_conv2d(x._h, weight._h, bias._h if bias is not None else None, groups, _i64(s), _i64(sym), _i64(d)))

def _conv_generic(x, weight, bias, groups, stride, dilation, flat):
  """tinygrad's conv2d formula for any rank: windows of the padded input times the weight, summed over cin and k"""
  (bs, cin_), (cout, cin), HW = x.shape[:2], weight.shape[:2], weight.shape[2:]
  if groups*cin != cin_: raise RuntimeError(f"Input Tensor shape {x.shape} does not match the shape of the weights {weight.shape}")
  x = _spatial_pad(x, flat)._pool(HW, stride, dilation)
  rcout, oyx = cout // groups, x.shape[2:-len(HW)]
  x = x.reshape(bs, groups, cin, 1, *oyx, *HW).expand(bs, groups, cin, rcout, *oyx, *HW)
  x = x.permute(0, 1, 3, *[4+i for i in range(len(oyx))], 2, *[4+len(oyx)+i for i in range(len(HW))])
  ret = (x * weight.reshape(1, groups, rcout, *[1]*len(oyx), cin, *HW)).sum([-1-i for i in range(1+len(oyx))], keepdim=True)
  ret = ret.reshape(bs, cout, *oyx)
  return ret if bias is None else ret.add(bias.reshape(1, -1, *[1]*len(HW)))

def conv_transpose_nd(x, weight, bias, groups, stride, dilation, padding, output_padding):
  from .tensor import _w, _i64
  from ._lib import lib as L
  dims = weight.ndim - 2
  if dims == 1:
    r = conv_transpose_nd(x.unsqueeze(-2), weight.unsqueeze(-2), bias, groups, (1,)+make_tuple(stride, 1),
                          (1,)+make_tuple(dilation, 1), (0,)+make_tuple(padding, 1), (0,)+make_tuple(output_padding, 1))
    return r.squeeze(-2)
  if dims != 2: return _conv_transpose_generic(x, weight, bias, groups, stride, dilation, padding, output_padding)
  s, d, p, op = (make_tuple(v, 2) for v in (stride, dilation, padding, output_padding))
  return _w(L.tg_conv_transpose2d(x._h, weight._h, bias._h if bias is not None else None, groups, _i64(s), _i64(p),
                                  _i64(d), _i64(op)))

def _conv_transpose_generic(x, weight, bias, groups, stride, dilation, padding, output_padding):
  """tinygrad's conv_transpose2d for any rank: a conv of the stride-dilated input with the flipped, transposed weight"""
  w = weight.unflatten(0, (groups, -1)).transpose(1, 2).flip(*range(3, weight.ndim+1))
  HW = weight.shape[2:]
  pads = _grouped(_pool_pads(padding, len(HW)))
  stride, dilation, output_padding = [make_tuple(v, len(HW)) for v in (stride, dilation, output_padding)]
  if any(s > 1 for s in stride):
    x = x.reshape(None, None, *[v for k in x.shape[2:] for v in (k, 1)])
    x = x.pad((None, None, *[p for s in stride for p in (None, (0, s-1))]))
    x = x.reshape(None, None, *[k*s for k, s in zip(x.shape[2::2], stride)])
    x = x.shrink_to(None, None, *[k-(s-1) for k, s in zip(x.shape[2:], stride)])
  flat = [v for k, d, (pB, pA), op in reversed(list(zip(HW, dilation, pads, output_padding))) for v in ((k-1)*d-pB, (k-1)*d-pA+op)]
  return x.conv2d(w.flatten(end_dim=1), groups=groups, bias=bias, dilation=dilation, padding=flat)

# ---------------------------------------------------------------- pools
def _ceil_pads(shape, pads:list[int], k_, s_, d_) -> list[int]:
  """tinygrad's _apply_ceil_mode: extra end padding so the last partial window is kept."""
  d_, s_ = make_tuple(d_, len(k_)), make_tuple(s_, len(k_))
  i_ = shape[-len(k_):]
  g = _grouped(pads)
  o_ = [ceildiv(i+pB+pA - (d*(k-1)+1), s) + 1 for i, d, k, s, (pB, pA) in zip(i_, d_, k_, s_, g)]
  for dim, (o, i, s, k, d, (pB, pA)) in enumerate(zip(o_, i_, s_, k_, d_, g)):
    g[dim] = (pB, pA + s*(o-1) + (d*(k-1)+1) - (i+pB+pA) - max(s*(o-1) - (pB+i-1), 0))
  return [v for pr in reversed(g) for v in pr]

def _pool2d_args(x, kernel_size, stride):
  k_ = make_tuple(kernel_size, 2)
  s_ = stride if stride is not None else k_
  return k_, make_tuple(s_, len(k_))

def max_pool(x, kernel_size, stride, dilation, padding, ceil_mode, return_indices):
  from .tensor import _w, _i64
  from ._lib import lib as L
  k_, s_ = _pool2d_args(x, kernel_size, stride)
  d_ = make_tuple(dilation, len(k_))
  pads = _pool_pads(padding, len(k_))
  if ceil_mode: pads = _ceil_pads(x.shape, pads, k_, s_, d_)
  if return_indices or len(k_) > 2:  # tinygrad's formula over the windows: the max and where it is (flat spatial index)
    axis = tuple(range(-len(k_), 0))
    lo = -math.inf if dtypes.is_float(x.dtype) else x.dtype.min
    pooled = _spatial_pad(x, pads, lo)._pool(k_, s_, d_)
    if not return_indices: return pooled.max(axis)
    spatial = x.shape[-len(k_):]
    n = math.prod(spatial)
    T = _tensor()
    idx = T.arange(n, 0, -1).reshape(spatial)
    m = pooled.eq(pooled.max(axis, keepdim=True))
    idx = m * _spatial_pad(idx, pads, dtypes.int32.min)._pool(k_, s_, d_)
    return pooled.max(axis), n - idx.max(axis)
  if len(k_) == 1:
    return max_pool(x.unsqueeze(-2), (1, k_[0]), (1, s_[0]), (1, d_[0]), pads + [0, 0], False, False).squeeze(-2)
  sym = _symmetric(pads)
  if sym is None: x, sym = _spatial_pad(x, pads, value=-math.inf if dtypes.is_float(x.dtype) else x.dtype.min), (0, 0)
  return _w(L.tg_max_pool2d(x._h, _i64(k_), _i64(s_), _i64(sym), _i64(d_)))

def avg_pool(x, kernel_size, stride, dilation, padding, ceil_mode, count_include_pad):
  from .tensor import _w, _i64
  from ._lib import lib as L
  k_, s_ = _pool2d_args(x, kernel_size, stride)
  if make_tuple(dilation, len(k_)) != (1,)*len(k_): raise NotImplementedError("tinygrad.c: avg_pool2d dilation not supported yet")
  reg = _pool_pads(padding, len(k_))
  pads = _ceil_pads(x.shape, reg, k_, s_, 1) if ceil_mode else reg
  if len(k_) == 1:
    return avg_pool(x.unsqueeze(-2), (1, k_[0]), (1, s_[0]), 1, pads + [0, 0], False, count_include_pad).squeeze(-2) \
      if not ceil_mode or not count_include_pad else \
      _avg_ceil(x.unsqueeze(-2), (1, k_[0]), (1, s_[0]), pads + [0, 0], reg + [0, 0]).squeeze(-2)
  if len(k_) > 2:  # tinygrad's formula over the windows
    axis = tuple(range(-len(k_), 0))
    def pool(t, p): return _spatial_pad(t, p)._pool(k_, s_, 1)
    if not count_include_pad: return pool(x, pads).sum(axis) / pool(x.full_like(1), pads).sum(axis)
    if not ceil_mode: return pool(x, pads).mean(axis)
    return pool(x, pads).sum(axis) / pool(_spatial_pad(x, reg).full_like(1), [c - r for c, r in zip(pads, reg)]).sum(axis)
  if not count_include_pad:
    win = _sum_pool(x, k_, s_, pads)
    return win / _sum_pool(x.full_like(1), k_, s_, pads)
  if not ceil_mode:
    sym = _symmetric(pads)
    if sym is None: x, sym = _spatial_pad(x, pads), (0, 0)
    return _w(L.tg_avg_pool2d(x._h, _i64(k_), _i64(s_), _i64(sym), True))
  return _avg_ceil(x, k_, s_, pads, reg)

def max_unpool2d(self, indices, kernel_size=(2,2), stride=None, dilation=1, padding=0, output_size=None):
  """tinygrad's: each value goes to the flat spatial index it came from (a one-hot over the output positions)"""
  bs, c, *spatial = self.shape
  if output_size is None:
    k_, d_, s_ = (make_tuple(v, len(spatial)) for v in (kernel_size, dilation, stride if stride is not None else kernel_size))
    p_ = _grouped(_pool_pads(padding, len(spatial)))
    output_size = tuple((i-1)*s - (pB+pA) + (d*(k-1)+1) for i, k, d, s, (pA, pB) in zip(spatial, k_, d_, s_, p_))
  else: output_size = tuple(output_size[-len(spatial):])
  T = _tensor()
  hot = indices.reshape(bs, c, 1, -1).eq(T.arange(math.prod(output_size)).reshape(math.prod(output_size), 1))
  return hot.where(self.reshape(bs, c, 1, -1), 0).sum(3).reshape(bs, c, *output_size)

def _sum_pool(x, k_, s_, pads):
  """window sums: the C library's average (pads counted) times the window size, over explicitly padded input"""
  from .tensor import _w, _i64
  from ._lib import lib as L
  xp = _spatial_pad(x, pads)
  return _w(L.tg_avg_pool2d(xp._h, _i64(k_), _i64(s_), _i64((0, 0)), True)) * (k_[0] * k_[1])

def _avg_ceil(x, k_, s_, pads, reg):
  """ceil_mode with count_include_pad: regular pads count, the extra ceil pads do not (tinygrad's formula)"""
  ones = _spatial_pad(x, reg).full_like(1)  # regular pads count as elements
  extra = [c - r for c, r in zip(pads, reg)]
  return _sum_pool(x, k_, s_, pads) / _sum_pool(ones, k_, s_, extra)

# ---------------------------------------------------------------- small compositions (tinygrad's formulas)
def _tri(r:int, c:int, diagonal:int = 0):
  T = _tensor()
  return T.arange(r).unsqueeze(-1) + diagonal <= T.arange(c)
def triu(self, diagonal:int=0): return _tri(self.shape[-2], self.shape[-1], diagonal).where(self, self.zeros_like())
def tril(self, diagonal:int=0): return _tri(self.shape[-2], self.shape[-1], diagonal+1).where(self.zeros_like(), self)

def roll(self, shifts, dims=None):
  if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
  dims, shifts = tuple(self._resolve_dim(d) for d in make_tuple(dims, 1)), make_tuple(shifts, 1)
  if len(dims) != len(shifts): raise RuntimeError(f"{len(dims)=} != {len(shifts)=}")
  if 0 in self.shape: return self
  arg = [None] * self.ndim
  for d, s in zip(dims, shifts): arg[d] = (self.shape[d] - s % self.shape[d], 2*self.shape[d] - s % self.shape[d])
  return self.repeat(*[2 if i in dims else 1 for i in range(self.ndim)]).shrink(tuple(arg))

def repeat_interleave(self, repeats:int, dim=None):
  x, dim = (self.flatten(), 0) if dim is None else (self, self._resolve_dim(dim))
  shp = x.shape
  x = x.reshape(*shp[:dim+1], 1, *shp[dim+1:]).expand(*shp[:dim+1], repeats, *shp[dim+1:])
  return x.reshape(*shp[:dim], shp[dim]*repeats, *shp[dim+1:])

def normalize(self, p:float=2.0, dim:int=1, eps:float=1e-12):
  den = self.ne(0).sum(dim, keepdim=True) if p == 0 else self.abs().pow(p).sum(dim, keepdim=True).pow(1/p)
  return self / den.maximum(eps)

def softmin(self, axis=-1, dtype=None): return (-self).softmax(axis, dtype)

def isclose(self, other, rtol:float=1e-05, atol:float=1e-08, equal_nan=False):
  T = _tensor()
  if not isinstance(other, T): other = T(other)
  finite = self.isfinite() & other.isfinite() & ((self - other).abs() <= atol + rtol * other.abs())
  inf = (self.isinf() | other.isinf()) & self.eq(other)
  out = finite | inf
  return out | (self.isnan() & other.isnan()) if equal_nan else out
def allclose(self, other, rtol:float=1e-05, atol:float=1e-08, equal_nan=False):
  return self.isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan).all()

def meshgrid(self, *args, indexing:str="ij"):
  if indexing not in ("ij", "xy"): raise RuntimeError(f'indexing must be in ("ij", "xy"), got {indexing}')
  ts = (self, *args)
  if len(ts) == 1: return ts
  basis = tuple(range(len(ts))) if indexing == "ij" else (1, 0) + tuple(range(2, len(ts)))
  ts = tuple(t.reshape((-1,) + (1,)*(len(args) - i)) for i, t in zip(basis, ts))
  out = [1] * max(t.ndim for t in ts)
  for t in ts:
    for i, s in enumerate((1,)*(len(out)-t.ndim) + t.shape): out[i] = s if out[i] == 1 else out[i]
  return tuple(t.expand(*out) for t in ts)

def pad_to(self, shape, *args, value=0):
  shape = argfix(shape, *args)
  return self.pad(tuple(None if s is None else (0, s - c) for s, c in zip(shape, self.shape)), value=value)
def shrink_to(self, shape, *args):
  shape = argfix(shape, *args)
  return self.shrink(tuple(None if s is None else (0, s) for s in shape))

def diag(self):
  if self.ndim != 1: raise ValueError(f"expect input to be 1-D, getting {self.ndim}-D")
  n = self.shape[0]
  return self.unsqueeze(-1).pad_to((None, 1+n)).flatten().shrink_to((n*n,)).reshape(n, n)

def diagonal(self, offset:int=0, dim1:int=0, dim2:int=1):
  if (dim1 := self._resolve_dim(dim1)) == (dim2 := self._resolve_dim(dim2)): raise RuntimeError("dim1 and dim2 cannot be the same dimension")
  x = self.permute(*[i for i in range(self.ndim) if i != dim1 and i != dim2], dim1, dim2)
  if offset >= 0: x = x.shrink(tuple(None for _ in x.shape[:-1]) + ((offset, x.shape[-1]),))
  else: x = x.shrink(tuple(None for _ in x.shape[:-2]) + ((-offset, x.shape[-2]), None))
  if (d := min(x.shape[-2], x.shape[-1])) <= 0: return x.reshape(*x.shape[:-2], 0)
  nones = tuple(None for _ in x.shape[:-2])
  x = x.shrink_to(nones + (d, d))
  return x.flatten(-2).pad_to(nones + (d*(d+1),)).unflatten(-1, (d, d+1)).shrink_to(nones + (None, 1)).squeeze(-1)

def interpolate(self, size, mode:str="linear", align_corners:bool=False):
  T = _tensor()
  if not (isinstance(size, (tuple, list)) and all(isinstance(s, int) for s in size) and 0 < len(size) <= self.ndim):
    raise AssertionError(f"invalid {size=}")
  if mode not in ("linear", "nearest", "nearest-exact"): raise AssertionError("only supports linear, nearest or nearest-exact interpolate")
  if align_corners and mode != "linear": raise AssertionError("align_corners option can only be set with the interpolating mode linear")
  x, expand = self, list(self.shape)
  for i in range(-1, -len(size)-1, -1):
    in_sz, reshape = self.shape[i], [1] * self.ndim
    reshape[i] = expand[i] = size[i]
    if mode == "linear":
      arr = T.arange(size[i])
      num, den = (arr*(in_sz-1), size[i]-1) if align_corners else ((arr*2+1)*in_sz - size[i], size[i]*2)
      num = num.clip(0, (in_sz-1)*den)
      low, high, perc = [y.reshape(reshape).expand(expand) for y in (num//den, (num+den-1)//den, (num % den).cast(dtypes.float32)/den)]
      x = x.gather(i, low).lerp(x.gather(i, high), perc)
    else:
      scale, arr = in_sz / size[i], T.arange(size[i], dtype=dtypes.float32)
      index = (scale*(arr+0.5) if mode == "nearest-exact" else scale*arr).cast(dtypes.int32).reshape(reshape).expand(expand)
      x = x.gather(i, index)
  return x.cast(self.dtype)

def einsum(formula:str, *operands, dtype=None):
  """tinygrad's einsum: align every operand to the sorted alphabet, multiply, sum the letters not in the output"""
  import string
  xs, formula = list(argfix(*operands)), formula.replace(" ", "")
  if "..." in formula:
    ell, lhs = "".join(c for c in string.ascii_letters if c not in formula), (formula.split("->") + [""])[0]
    ell_n = [max(0, x.ndim - len(s) + 3) if "..." in s else 0 for s, x in zip(lhs.split(","), xs)]
    inputs = lhs.split(",")
    for i, (s, x) in enumerate(zip(inputs, xs)): inputs[i] = s.replace("...", ell[max(ell_n)-ell_n[i]:max(ell_n)])
    lhs, auto = ",".join(inputs), "".join(sorted(c for c in lhs if lhs.count(c) == 1 and c.isalpha() and c not in ell))
    formula = f"{lhs}->{formula.split('->')[1].replace('...', ell[:max(ell_n)]) if '->' in formula else ell[:max(ell_n)] + auto}"
  lhs, rhs = formula.split("->") if "->" in formula else (formula, "".join(sorted(c for c in formula if formula.count(c) == 1 and c.isalpha())))
  inputs = lhs.split(",")
  if len(xs) != len(inputs): raise ValueError(f"number of operands doesn't match, expected {len(inputs)}, got {len(xs)}")
  for i, (s, x) in enumerate(zip(inputs, xs)):  # a letter repeated in one input: its diagonal
    for c in set(s):
      while s.count(c) > 1:
        j, k, n = s.index(c), s.index(c, s.index(c)+1), x.shape[s.index(c)]
        perm = [d for d in range(x.ndim) if d not in (j, k)] + [j, k]
        x = x.permute(perm).flatten(-2).pad(((0, 0),)*(x.ndim-2) + ((0, n),)).unflatten(-1, (n, n+1))[..., 0] if x.ndim > 2 else x.diagonal()
        s = s[:k] + s[k+1:]
    inputs[i], xs[i] = s, x
  sz: dict = {}
  for s, x in zip(inputs, xs):
    for c, n in zip(s, x.shape):
      if sz.setdefault(c, n) != n: raise RuntimeError(f"einsum: subscript {c} has sizes {sz[c]} and {n}")
  alpha = sorted(sz)
  xs = [x.permute(*[s.index(c) for c in sorted(s)]).reshape([sz[c] if c in s else 1 for c in alpha]) if s else x
        for s, x in zip(inputs, xs)]
  out = xs[0]
  for x in xs[1:]: out = out * x
  red = [i for i, c in enumerate(alpha) if c not in rhs]
  out = out.sum(red, dtype=dtype) if red else (out.cast(dtype) if dtype is not None else out)
  order = sorted(range(len(rhs)), key=lambda i: rhs[i])  # argsort(argsort(rhs))
  return out.permute(sorted(range(len(rhs)), key=lambda i: order[i]))

# ---------------------------------------------------------------- scatter (tinygrad's one-hot masks, reduced over the index axis)
def _pre_scatter(self, dim:int, index, src):
  dim = self._resolve_dim(dim)
  if not index.ndim == self.ndim == src.ndim:
    raise AssertionError(f"self.ndim, index.ndim and src.ndim must all equal, {self.ndim=} {index.ndim=} {src.ndim=}")
  if not all((d == dim or s >= i) and c >= i for d, (s, i, c) in enumerate(zip(self.shape, index.shape, src.shape))):
    raise AssertionError(f"All dimensions of {index.shape=} should be <= to all dimensions of {src.shape=} and all dimensions "
                         f"except dimension {dim} of {self.shape=}")
  if self.dtype is not src.dtype: raise RuntimeError(f"expect {self.dtype=} to be equal to {src.dtype=}")
  src = src.shrink_to(index.shape)
  src = src.unsqueeze(-1).expand(*src.shape, self.shape[dim]).transpose(-1, dim)
  T = _tensor()
  mask = index.unsqueeze(-1).eq(T.arange(self.shape[dim])).transpose(-1, dim)
  return src.pad_to(*self.shape, None), mask.pad_to(*self.shape, None)

def _masked_merge(self, values, mask, axes):
  import functools
  for dim in reversed(axes):
    mask, values = functools.reduce(lambda x, y: (x[0] | y[0], y[0].where(y[1], x[1])), zip(mask.split(1, dim), values.split(1, dim)))
  for dim in reversed(axes): mask, values = mask.squeeze(dim), values.squeeze(dim)
  return mask.where(values, self)

def scatter(self, dim:int, index, src, reduce=None, **kwargs):
  if kwargs: raise TypeError(f"scatter() got unexpected keyword arguments {tuple(kwargs)}")
  if reduce not in {None, "add", "multiply"}: raise TypeError(f"{reduce=} must be one of None, 'multiply', or 'add'")
  T = _tensor()
  if isinstance(src, (int, float, bool)): src = T.full(index.shape, src, dtype=self.dtype)
  elif reduce: raise TypeError("non-scalar src is not supported with reduce arg. use scatter_reduce")
  if reduce == "add": return self.scatter_reduce(dim, index, src, "sum", include_self=True)
  if reduce == "multiply": return self.scatter_reduce(dim, index, src, "prod", include_self=True)
  src, mask = _pre_scatter(self, dim, index, src)
  return _masked_merge(self, src, mask, (-1,))

def scatter_reduce(self, dim:int, index, src, reduce:str, include_self:bool=True):
  src, mask = _pre_scatter(self, dim, index, src)
  def inv(a, b): return mask.any(-1).logical_not().where(a, b)
  if reduce == "sum": return mask.where(src, 0).sum(-1).add(self if include_self else inv(self, 0))
  if reduce == "prod": return mask.where(src, 1).prod(-1).mul(self if include_self else inv(self, 1))
  if reduce == "amax": return mask.where(src, m := src.dtype.min).max(-1).maximum(self if include_self else inv(self, m))
  if reduce == "amin": return mask.where(src, m := src.dtype.max).min(-1).minimum(self if include_self else inv(self, m))
  if reduce == "mean":
    count = mask.where(1, 0).sum(-1).add(1 if include_self else inv(1, 0))
    return mask.where(src, 0).sum(-1).add(self if include_self else inv(self, 0)).div(count)
  raise RuntimeError(f"{reduce=} must be one of 'sum', 'prod', 'mean', 'amax', 'amin'")

# ---------------------------------------------------------------- data-dependent selections and sorting (tinygrad's)
def masked_select(self, mask, size=None, fill_value=0):
  T = _tensor()
  if not dtypes.is_bool(mask.dtype): raise RuntimeError(f"masked_select expects bool mask tensor, got {mask.dtype}")
  x, mask = self.flatten(), mask.expand(self.shape).flatten()
  mask_cumsum = mask.cumsum()
  if size is None:
    counts = T.zeros(mask_cumsum[-1].item() if mask.numel() else 0, dtype=dtypes.int32)
    return x[counts.scatter(0, mask_cumsum, 1, reduce='add').cumsum()]
  counts = T.zeros(size, dtype=dtypes.int32).scatter(0, mask_cumsum, 1, reduce='add')
  return (T.arange(size) < mask.sum()).where(x[counts.cumsum()], fill_value).cast(self.dtype)

def nonzero(self, size=None, fill_value=0):
  T = _tensor()
  if self.ndim == 0: return T.zeros(size if size is not None else int(self.ne(0).item()), 0, dtype=dtypes.int32)
  mask = self.ne(0).flatten()
  indices = T.stack(*[T.arange(s).reshape(*[1]*i, s, *[1]*(self.ndim-i-1)).expand(self.shape).flatten()
                      for i, s in enumerate(self.shape)], dim=-1)
  return indices.masked_select(mask.unsqueeze(-1).expand(*mask.shape, self.ndim),
                               size=size*self.ndim if size is not None else None, fill_value=fill_value).reshape(-1, self.ndim)

def sort(self, dim:int=-1, descending:bool=False):
  """tinygrad's bitonic sort network (pad to a power of two, compare-exchange stages), then the indices by matching
  each value's occurrence count"""
  T = _tensor()
  x, dim = self, self._resolve_dim(dim)
  if (orig_len := x.shape[dim]) <= 1: return x, x.full_like(0, dtype=dtypes.int32)
  n_stages = (orig_len-1).bit_length()
  pads = tuple((0, 2**n_stages - orig_len) if i == dim else None for i in range(x.ndim))
  x = x.pad(pads, value=x.dtype.min if descending else x.dtype.max).unflatten(dim, (2,)*n_stages)
  for stage in range(1, n_stages+1):
    if stage != n_stages:
      crossover_dim = dim + n_stages - stage - 1
      blue_box, green_box = x.split(1, crossover_dim)
      flip_dims = tuple(-i for i in range(1, stage+1+(self.ndim-dim)))
      x = blue_box.cat(green_box.flip(flip_dims), dim=crossover_dim).contiguous()
    for substage in range(stage-1, -1, -1):
      partner_dim = dim + n_stages - substage - 1
      x_top, x_bottom = x.split(1, partner_dim)
      x_larger, x_smaller = x_top.maximum(x_bottom), x_top.minimum(x_bottom)
      x = (x_larger.cat(x_smaller, dim=partner_dim) if descending else x_smaller.cat(x_larger, dim=partner_dim)).contiguous()
    if stage != n_stages:
      blue_box, flipped_green_box = x.split(1, crossover_dim)
      x = blue_box.cat(flipped_green_box.flip(flip_dims), dim=crossover_dim)
  x = x.flatten(dim, dim+n_stages-1).shrink_to(self.shape)
  mask = T.ones(orig_len, orig_len, dtype=dtypes.bool).tril().reshape((orig_len, orig_len) + (1,)*(self.ndim-dim-1))
  def counts(t): return (mask & t.unsqueeze(dim).eq(t.unsqueeze(dim+1))).sum(dim+1)
  count_orig, count_sorted = counts(self), counts(x)
  cond = self.unsqueeze(dim+1).eq(x.unsqueeze(dim)) & count_orig.unsqueeze(dim+1).eq(count_sorted.unsqueeze(dim))
  idx = T.arange(orig_len).reshape(tuple(orig_len if i == dim else 1 for i in range(x.ndim)))
  return x, (cond * idx.unsqueeze(dim+1)).sum(dim)
def argsort(self, dim:int=-1, descending:bool=False): return self.sort(dim, descending)[1]
def topk(self, k:int, dim:int=-1, largest:bool=True, sorted_:bool=True):
  if not sorted_: raise NotImplementedError("topk with sorted_=False is not supported")
  if k > self.shape[dim := self._resolve_dim(dim)]: raise ValueError(f"selected index {k=} is out of range")
  x, idx = self.sort(dim, descending=largest)
  shape = tuple(k if i == dim else None for i in range(self.ndim))
  return x.shrink_to(shape), idx.shrink_to(shape)

def unfold(self, dim:int, size:int, step:int):
  """windows of `size` every `step` along dim, appended as a last axis: an index tensor start*step + offset"""
  T = _tensor()
  if size < 0: raise RuntimeError(f'size must be >= 0 but got {size=}')
  if step <= 0: raise RuntimeError(f'step must be > 0 but got {step=}')
  if size > self.shape[dim]: raise RuntimeError(f'maximum size for tensor at dimension {dim} is {self.shape[dim]} but size is {size}')
  dim = self._resolve_dim(dim)
  nw = (self.shape[dim] - size) // step + 1
  perm = tuple(i for i in range(self.ndim) if i != dim) + (dim,)
  x = self.permute(perm)
  if size == 0: win = x.shrink_to(x.shape[:-1] + (0,)).unsqueeze(-2).expand(*x.shape[:-1], nw, 0)
  else: win = x[..., T.arange(nw).unsqueeze(-1) * step + T.arange(size)]
  inv = sorted(range(self.ndim), key=lambda i: perm[i])
  return win.permute(*inv, self.ndim)

def _install():
  T = _tensor()
  for f in (triu, tril, roll, repeat_interleave, normalize, softmin, isclose, allclose, meshgrid, pad_to, shrink_to, diag,
            diagonal, interpolate, scatter, scatter_reduce,
            masked_select, nonzero, sort, argsort, topk, unfold, max_unpool2d):
    setattr(T, f.__name__, f)
  T.einsum = staticmethod(einsum)
  def _missing(name):
    def f(self, *a, **k): raise NotImplementedError(f"tinygrad.c: Tensor.{name} not supported yet")
    f.__name__ = name
    return f
  for name in ("multinomial", "qr", "svd", "randperm", "keccak", "hash", "custom_kernel", "rearrange", "image_conv2d", "image_dot"):
    if not hasattr(T, name): setattr(T, name, _missing(name))
_install()
