"""tinygrad_c.renderer — what tinygrad's tests ask of a device's renderer: its class (the C library renders C for the
CPU and CUDA C for NVIDIA; there is no NIR renderer, so nothing is a NIRRenderer) and supported_dtypes()."""
from .dtype import dtypes

class Renderer:
  def __init__(self, device:str): self.device = device
  def supported_dtypes(self):
    """dtypes the C library computes on this device (fp8 kernels are not rendered for the CPU)"""
    return [d for d in dtypes.all if self.device.startswith("CUDA") or d not in dtypes.fp8s]
  def __repr__(self): return f"<Renderer {self.device} (tinygrad.c: {'CUDA C' if self.device.startswith('CUDA') else 'C'})>"

class NIRRenderer(Renderer):
  """tinygrad's NIR (Mesa) renderer: not part of tinygrad.c; no device uses it."""
