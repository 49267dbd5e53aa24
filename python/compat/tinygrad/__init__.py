"""`import tinygrad` answered by tinygrad.c's Python package (python/tinygrad_c): put python/compat (and python/) on
PYTHONPATH. The submodules tinygrad programs import (tinygrad.tensor, .dtype, .device, .helpers, .renderer.nir, .nn,
.nn.optim, .nn.state) are the package's modules registered under tinygrad's names."""
import importlib, sys
import tinygrad_c
from tinygrad_c import Tensor, dtypes, Device, Context, getenv  # noqa: F401

_ALIASES = {"tensor": "tensor", "dtype": "dtype", "device": "device", "helpers": "helpers", "renderer": "renderer",
            "renderer.nir": "renderer", "renderer.cstyle": "renderer", "nn": "nn", "nn.optim": "nn.optim",
            "nn.state": "nn.state", "engine": "engine", "engine.jit": "engine"}
for _ours, _theirs in list(_ALIASES.items()):
  try: _mod = importlib.import_module(f"tinygrad_c.{_theirs}")
  except ImportError: continue
  sys.modules[f"{__name__}.{_ours}"] = _mod
  if "." not in _ours: globals()[_ours] = _mod
