"""tinygrad_c.nn — tinygrad's nn layers (tinygrad/nn/__init__.py): classes holding their parameter Tensors with
tinygrad's default initializations; every forward is Tensor ops, i.e. C-library calls. nn.optim wraps the C
optimizers, nn.state walks objects for their tensors."""
from __future__ import annotations
import math
from ..tensor import Tensor
from ..dtype import dtypes
from ..helpers import make_tuple, TRAINING
from . import optim, state  # noqa: F401

class BatchNorm:
  def __init__(self, sz:int, eps=1e-5, affine=True, track_running_stats=True, momentum=0.1):
    self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
    self.weight = Tensor.ones(sz) if affine else None
    self.bias = Tensor.zeros(sz) if affine else None
    self.num_batches_tracked = Tensor.zeros(dtype='long').is_param_(False)
    if track_running_stats: self.running_mean, self.running_var = Tensor.zeros(sz).is_param_(False), Tensor.ones(sz).is_param_(False)
  def calc_stats(self, x:Tensor):
    shape_mask = [1, -1, *([1]*(x.ndim-2))]
    if self.track_running_stats and not TRAINING: return self.running_mean, self.running_var.reshape(shape_mask)
    reduce_axes = tuple(i for i in range(x.ndim) if i != 1)
    batch_mean = x.mean(axis=reduce_axes)
    y = x - batch_mean.detach().reshape(shape_mask)
    return batch_mean, (y*y).mean(axis=reduce_axes)
  def __call__(self, x:Tensor) -> Tensor:
    batch_mean, batch_var = self.calc_stats(x)
    if self.track_running_stats and TRAINING:
      self.running_mean.assign((1-self.momentum) * self.running_mean + self.momentum * batch_mean.detach())
      self.running_var.assign((1-self.momentum) * self.running_var + self.momentum * x.numel()/(x.numel()-x.shape[1]) * batch_var.detach())
      self.num_batches_tracked.assign(self.num_batches_tracked + 1)
    return x.batchnorm(self.weight, self.bias, batch_mean, batch_var.add(self.eps).rsqrt())
BatchNorm2d = BatchNorm3d = BatchNorm

class Conv2d:
  def __init__(self, in_channels:int, out_channels:int, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
    self.kernel_size = make_tuple(kernel_size, 2)
    self.stride, self.dilation, self.groups, self.padding = stride, dilation, groups, padding
    scale = 1 / math.sqrt(in_channels * math.prod(self.kernel_size))
    self.weight = Tensor.uniform(out_channels, in_channels//groups, *self.kernel_size, low=-scale, high=scale)
    self.bias = Tensor.uniform(out_channels, low=-scale, high=scale) if bias else None
  def __call__(self, x:Tensor) -> Tensor: return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)
def Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True) -> Conv2d:
  return Conv2d(in_channels, out_channels, (kernel_size,), stride, padding, dilation, groups, bias)

class ConvTranspose2d(Conv2d):
  def __init__(self, in_channels:int, out_channels:int, kernel_size, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
               bias=True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    scale = 1 / math.sqrt(in_channels * math.prod(self.kernel_size))
    self.weight = Tensor.uniform(in_channels, out_channels//groups, *self.kernel_size, low=-scale, high=scale)
    self.output_padding = output_padding
  def __call__(self, x:Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding, self.output_padding)

class Linear:
  def __init__(self, in_features:int, out_features:int, bias=True):
    bound = 1 / math.sqrt(in_features)
    self.weight = Tensor.uniform(out_features, in_features, low=-bound, high=bound)
    self.bias = Tensor.uniform(out_features, low=-bound, high=bound) if bias else None
  def __call__(self, x:Tensor) -> Tensor: return x.linear(self.weight.transpose(), self.bias)

class LayerNorm:
  def __init__(self, normalized_shape, eps:float=1e-5, elementwise_affine:bool=True):
    self.normalized_shape = make_tuple(normalized_shape, 1)
    self.axis, self.eps = tuple(-1-i for i in range(len(self.normalized_shape))), eps
    self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
    self.bias = Tensor.zeros(*self.normalized_shape) if elementwise_affine else None
  def __call__(self, x:Tensor) -> Tensor:
    if self.normalized_shape != x.shape[-len(self.normalized_shape):]:
      raise AssertionError(f"last dimensions of {x.shape} must match {self.normalized_shape}")
    x = x.layernorm(eps=self.eps, axis=self.axis)
    if self.weight is None or self.bias is None: return x
    return x * self.weight + self.bias

class LayerNorm2d(LayerNorm):
  def __call__(self, x:Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

class RMSNorm:
  def __init__(self, dim:int, eps=1e-6, elementwise_affine=True):
    self.eps = eps
    self.weight = Tensor.ones(dim) if elementwise_affine else None
  def _norm(self, x:Tensor) -> Tensor: return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt()
  def __call__(self, x:Tensor) -> Tensor:
    x = self._norm(x.float()).cast(x.dtype)
    return x if self.weight is None else x * self.weight

class GroupNorm:
  def __init__(self, num_groups:int, num_channels:int, eps=1e-5, affine=True):
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight = Tensor.ones(num_channels) if affine else None
    self.bias = Tensor.zeros(num_channels) if affine else None
  def __call__(self, x:Tensor) -> Tensor:
    x = x.reshape(x.shape[0], self.num_groups, -1).layernorm(eps=self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return x
    return x * self.weight.reshape(1, -1, *[1] * (x.ndim-2)) + self.bias.reshape(1, -1, *[1] * (x.ndim-2))

class Embedding:
  def __init__(self, vocab_size:int, embed_size:int):
    self.vocab_sz, self.embed_sz = vocab_size, embed_size
    self.weight = Tensor.glorot_uniform(vocab_size, embed_size)
  def __call__(self, idx:Tensor) -> Tensor:
    if not dtypes.is_int(idx.dtype): raise TypeError(f"Embedding needs an int index tensor, got {idx.dtype}")
    return self.weight[idx]
