"""tinygrad_c.nn.state — tinygrad's get_state_dict / get_parameters / load_state_dict over objects holding Tensors."""
from __future__ import annotations
from ..tensor import Tensor

def get_state_dict(obj, prefix:str="") -> dict[str, Tensor]:
  if isinstance(obj, Tensor): return {prefix.strip('.'): obj}
  if hasattr(obj, '_asdict'): return get_state_dict(obj._asdict(), prefix)
  if isinstance(obj, (list, tuple)): return {k: v for i, x in enumerate(obj) for k, v in get_state_dict(x, f"{prefix}{i}.").items()}
  if isinstance(obj, dict): return {k: v for kk, vv in obj.items() for k, v in get_state_dict(vv, f"{prefix}{kk}.").items()}
  if hasattr(obj, '__dict__'): return get_state_dict(obj.__dict__, prefix)
  return {}

def get_parameters(obj) -> list[Tensor]: return list(get_state_dict(obj).values())

def load_state_dict(model, state_dict:dict[str, Tensor], strict=True, verbose=False, consume=False, realize=True) -> list[Tensor]:
  model_state = get_state_dict(model)
  if strict and (missing := [k for k in model_state if k not in state_dict]): raise KeyError(f"missing keys in state_dict: {missing}")
  ret = []
  for k, v in model_state.items():
    if k not in state_dict: continue
    src = state_dict[k]
    if v.shape != src.shape and not (v.numel() == src.numel() == 1):
      raise ValueError(f"shape mismatch in layer `{k}`: Expected shape {v.shape}, but found {src.shape} in state dict.")
    v.replace(src.cast(v.dtype).reshape(v.shape).contiguous() if v.shape != src.shape or v.dtype is not src.dtype else src)
    if realize: v.realize()
    ret.append(v)
  return ret
