"""tinygrad_c.helpers — the parts of tinygrad/helpers.py that programs and tests import: getenv, the env knobs as
ContextVars (DEBUG, BEAM, NOOPT, IMAGE, DEV, ...), Context (which hands the changed knobs to the C library through the
environment and tg_knobs_reload, and TRAINING to tg_set_training), and small list helpers."""
from __future__ import annotations
import contextlib, functools, math, operator, os, re, sys, time
from dataclasses import dataclass, replace
from ._lib import lib

OSX, WIN = sys.platform == "darwin", sys.platform == "win32"

def getenv(key:str, default=0): return type(default)(os.getenv(key, default))
def prod(x, start=1): return functools.reduce(operator.mul, x, start)
def dedup(x): return list(dict.fromkeys(x))
def argfix(*x):
  if x and x[0].__class__ in (tuple, list):
    if len(x) != 1: raise ValueError(f"bad arg {x}")
    return tuple(x[0])
  return x
def all_int(t) -> bool: return all(isinstance(s, int) for s in t)
def flatten(l): return [item for sublist in l for item in sublist]
def fully_flatten(l):
  if isinstance(l, (list, tuple)): return [x for y in l for x in fully_flatten(y)]
  return [l]
def make_tuple(x, cnt:int) -> tuple: return (x,)*cnt if isinstance(x, int) else tuple(x)
def round_up(num:int, amt:int) -> int: return (num+amt-1)//amt*amt
def ceildiv(num, amt): return -(-num // amt)
def colored(st, color=None, background=False): return st
def ansilen(s:str) -> int: return len(re.sub('\x1b\\[(K|.*?m)', '', s))
def to_function_name(s:str) -> str: return re.sub(r"[^a-zA-Z0-9_]", "_", s)
def polyN(x, p): return functools.reduce(lambda acc, c: acc*x+c, p, 0.0)

class ContextVar:
  _cache: dict[str, "ContextVar"] = {}
  def __init__(self, key:str, default_value):
    if key in ContextVar._cache: raise RuntimeError(f"attempt to recreate ContextVar {key}")
    ContextVar._cache[key] = self
    self.value, self.key = getenv(key, default_value), key
  def __bool__(self): return bool(self.value)
  def __eq__(self, x): return self.value == x
  def __ne__(self, x): return self.value != x
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __le__(self, x): return self.value <= x
  def __lt__(self, x): return self.value < x
  def __hash__(self): return hash(self.key)
  def __int__(self): return int(self.value)
  def __repr__(self): return f"ContextVar({self.key}={self.value!r})"

@dataclass(frozen=True)
class Target:
  device: str = ""
  renderer: str = ""
  arch: str = ""
  interface: str = ""
  indices: str = ""
  @staticmethod
  def parse(s:str) -> "Target":
    iface = indices = ""
    if len(split := s.split('+')) == 2:
      head, s = split
      iface, indices = head.rsplit(":", 1) if ":" in head else (head, "")
    elif len(split) > 2: raise RuntimeError(f"too many '+' in target string: {s!r}")
    parts = [x.upper() if i < 2 else x for i, x in enumerate(s.split(':'))] if s else [""]
    if len(parts) > 3: raise RuntimeError(f"too many ':' in target string: {s!r}")
    return Target(*(parts + [""]*(3-len(parts))), interface=iface, indices=indices)

class _DEV(ContextVar):
  """tinygrad's DEV: `DEV=CUDA`, `DEV=CPU:LLVM`; attributes (device, renderer, interface) from the first target."""
  @property
  def value(self): return self._value
  @value.setter
  def value(self, v):
    self._value = v if isinstance(v, list) else [v] if isinstance(v, Target) else [Target.parse(t) for t in str(v).split(';')]
  def __getattr__(self, k):
    if k.startswith("_"): raise AttributeError(k)
    return getattr(self._value[0], k)

DEV = _DEV("DEV", "")
DEBUG, BEAM, NOOPT, IMAGE = ContextVar("DEBUG", 0), ContextVar("BEAM", 0), ContextVar("NOOPT", 0), ContextVar("IMAGE", 0)
JIT, TRAINING, FLOAT16 = ContextVar("JIT", 1), ContextVar("TRAINING", 0), ContextVar("FLOAT16", 0)
CI = os.getenv("CI", "") != ""
CACHELEVEL, SPLIT_REDUCEOP = ContextVar("CACHELEVEL", 2), ContextVar("SPLIT_REDUCEOP", 1)
TRANSCENDENTAL, USE_TC = ContextVar("TRANSCENDENTAL", 1), ContextVar("TC", 1)

class Context(contextlib.ContextDecorator):
  """Sets knobs for a block. The C library reads them from the environment (tg_knobs_reload), TRAINING goes to
  tg_set_training. A knob without a ContextVar here gets one, so any of tinygrad's names can be set."""
  def __init__(self, **kwargs): self.kwargs = kwargs
  def __enter__(self):
    self.old = {k: (ContextVar._cache[k].value if k in ContextVar._cache else ContextVar(k, 0).value, os.environ.get(k))
                for k in self.kwargs}
    for k, v in self.kwargs.items(): _apply(k, v)
    lib.tg_knobs_reload()
    return self
  def __exit__(self, *args):
    for k, (v, env) in self.old.items():
      ContextVar._cache[k].value = v
      if env is None: os.environ.pop(k, None)
      else: os.environ[k] = env
      if k == "TRAINING": lib.tg_set_training(bool(v))
    lib.tg_knobs_reload()

def _apply(k, v):
  ContextVar._cache[k].value = v
  os.environ[k] = str(int(v) if isinstance(v, bool) else v)
  if k == "TRAINING": lib.tg_set_training(bool(v))

class Timing(contextlib.ContextDecorator):
  def __init__(self, prefix="", on_exit=None, enabled=True): self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
  def __enter__(self): self.st = time.perf_counter_ns()
  def __exit__(self, *exc):
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et*1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))
