"""tinygrad_c.nn.optim — tinygrad's optimizers (SGD, LARS, Adam, AdamW, LAMB, OptimizerGroup) as the C library's
(tg_optim_*): the C optimizer builds the update graph, assigns and realizes params, state and buffers in one
schedule. Params are the tensors with is_param (marked requires_grad for the C library); the others (BatchNorm
running statistics) are buffers, realized with each step. step() needs TRAINING (Context(TRAINING=1))."""
from __future__ import annotations
import ctypes
from .._lib import lib as L
from ..tensor import Tensor, _w, _raise, _handles
from ..helpers import dedup, TRAINING

class Optimizer:
  def __init__(self, params:list[Tensor], make):
    self.params = dedup([x for x in params if x.is_param])
    if not self.params: raise AssertionError("optimizer must have at least one param")
    self.buffers = dedup([x for x in params if not x.is_param])
    for p in self.params: p.requires_grad_(True)
    allt = self.params + self.buffers
    self._o = make(_handles(allt), len(allt))
    if not self._o: _raise()
  def __del__(self):
    if getattr(self, "_o", None):
      try: L.tg_optim_free(self._o)
      except Exception: pass
      self._o = None
  def zero_grad(self): L.tg_optim_zero_grad(self._o)
  def step(self, *also:Tensor):
    if not TRAINING: raise RuntimeError(f"TRAINING={TRAINING.value}, TRAINING must be enabled to use the optimizer.")
    st = L.tg_optim_step_with(self._o, _handles(also), len(also)) if also else L.tg_optim_step(self._o)
    if st != 0: _raise()
  @property
  def lr(self) -> Tensor: return _w(L.tg_retain(L.tg_optim_lr(self._o)))
  @lr.setter
  def lr(self, v):
    if isinstance(v, Tensor): self.lr.assign(v.reshape(1).cast(self.lr.dtype)); return
    if L.tg_optim_set_lr(self._o, float(v)) != 0: _raise()

def _check_lr(lr):
  if lr < 0: raise ValueError(f"Invalid learning rate: {lr}")

class SGD(Optimizer):
  def __init__(self, params, lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False, classic=False, device=None, fused=False):
    _check_lr(lr)
    super().__init__(params, lambda h, n: L.tg_optim_sgd(h, n, lr, momentum, weight_decay, nesterov, classic))
class LARS(Optimizer):
  def __init__(self, params, lr=0.001, momentum=0.9, weight_decay=1e-4, nesterov=False, classic=True, tcoef=0.001, device=None,
               fused=False):
    _check_lr(lr)
    super().__init__(params, lambda h, n: L.tg_optim_lars(h, n, lr, momentum, weight_decay, nesterov, classic, tcoef))
class Adam(Optimizer):
  def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, device=None, fused=False):
    _check_lr(lr)
    super().__init__(params, lambda h, n: L.tg_optim_adam(h, n, lr, b1, b2, eps))
class AdamW(Optimizer):
  def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, device=None, fused=False):
    _check_lr(lr)
    super().__init__(params, lambda h, n: L.tg_optim_adamw(h, n, lr, b1, b2, eps, weight_decay))
class LAMB(Optimizer):
  def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False, device=None, fused=False):
    _check_lr(lr)
    if adam: raise NotImplementedError("tinygrad.c: LAMB(adam=True) not supported yet")
    super().__init__(params, lambda h, n: L.tg_optim_lamb(h, n, lr, b1, b2, eps, weight_decay))

class OptimizerGroup(Optimizer):
  def __init__(self, *optimizers:Optimizer):  # pylint: disable=super-init-not-called
    self.optimizers = optimizers
    self.params = [p for o in optimizers for p in o.params]
    self.buffers = [b for o in optimizers for b in o.buffers]
    arr = (ctypes.c_void_p * len(optimizers))(*[o._o for o in optimizers])
    self._o = L.tg_optim_group(arr, len(optimizers))
    if not self._o: _raise()
    for o in optimizers: o._o = None  # the group owns them now
  def __getitem__(self, i): return self.optimizers[i]
