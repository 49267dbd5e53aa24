"""tinygrad_c.device — tinygrad's Device registry: Device.DEFAULT (the C library's default device, settable),
Device.canonicalize, and Device["CPU"] objects with the renderer's dtypes and synchronize()."""
from __future__ import annotations
from ._lib import lib as L
from .dtype import dtypes
from .renderer import Renderer

class Compiled:
  """One device of the C library (tinygrad's Compiled): the name, its renderer's capabilities, synchronize()."""
  def __init__(self, name:str):
    self.device = name
    self.renderer = Renderer(name)
  def synchronize(self):
    if L.tg_synchronize(self.device.encode()) != 0: raise RuntimeError(L.tg_last_error().decode())
  def __repr__(self): return f"<Device {self.device} (tinygrad.c)>"

class _Device:
  def __init__(self): self._opened: dict[str, Compiled] = {}
  @staticmethod
  def canonicalize(device:str|None) -> str:
    if device is None: return L.tg_default_device().decode()
    d = device.upper().split(":")
    if d[0] not in ("CPU", "CUDA", "CLANG", "LLVM", "NV", "GPU"): raise RuntimeError(f"tinygrad.c: device {device!r} not supported")
    if d[0] in ("CLANG", "LLVM"): d[0] = "CPU"
    if d[0] == "NV": d[0] = "CUDA"
    if len(d) > 1 and d[1].isdigit() and int(d[1]) != 0: return f"{d[0]}:{d[1]}"
    return d[0]
  @property
  def DEFAULT(self) -> str: return L.tg_default_device().decode()
  @DEFAULT.setter
  def DEFAULT(self, name:str):
    if L.tg_set_default_device(name.encode()) != 0: raise RuntimeError(L.tg_last_error().decode())
  def __getitem__(self, name:str) -> Compiled:
    name = self.canonicalize(name)
    if name not in self._opened: self._opened[name] = Compiled(name)
    return self._opened[name]
  def get_available_devices(self):
    yield "CPU"
    if L.tg_cuda_available(None): yield "CUDA"
Device = _Device()
