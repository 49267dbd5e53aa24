"""tinygrad_c — tinygrad's Python API (Tensor, dtypes, Device, nn, nn.optim) over the tinygrad.c library
(build/libtinygrad.so, loaded with ctypes). `import tinygrad` programs run on it with python/compat on PYTHONPATH
(see README.md)."""
from .dtype import dtypes, DType
from .device import Device
from .tensor import Tensor
from .helpers import Context, getenv
from . import nn  # noqa: F401

__all__ = ["Tensor", "dtypes", "DType", "Device", "Context", "getenv", "nn"]
