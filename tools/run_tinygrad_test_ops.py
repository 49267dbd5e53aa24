"""Runs tinygrad's test/backend/test_ops.py (from a tinygrad checkout, TINYGRAD_PATH, default /work/tgref) against
tinygrad.c's Python package (python/tinygrad_c answering `import tinygrad` through python/compat) and prints one line
per test (PASS / FAIL / ERROR / SKIP with the cause), then the totals. Arguments: test name filters (substrings).
Needs numpy and torch (Debian's python3-torch): run with /usr/bin/python3 (tools/run_tinygrad_test_ops.sh does)."""
import importlib.util, os, sys, time, traceback, unittest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python", "compat"), os.path.join(ROOT, "python")]
TG = os.environ.get("TINYGRAD_PATH", "/work/tgref")
path = os.path.join(TG, "test", "backend", "test_ops.py")
spec = importlib.util.spec_from_file_location("test_ops", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
import tinygrad
assert tinygrad.__file__.startswith(os.path.join(ROOT, "python")), f"imported the wrong tinygrad: {tinygrad.__file__}"

def cause(err) -> str:
  et, ev, tb = err
  msg = str(ev).strip().replace("\n", " ")
  frames = [f for f in traceback.extract_tb(tb)]
  where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames) if "tinygrad_c" in f.filename), "")
  # the reference side failed: torch raised (or did not raise where the test expects it to): Debian's torch is older
  # than the one the pinned test was written against
  torch_side = any("/torch/" in f.filename for f in frames) or any(
    f.filename.endswith("test_ops.py") and f.line and ("torch_cm" in f.line or "torch_fxn(*ts)" in f.line) for f in frames)
  return ("[torch] " if torch_side and not where else "") + f"{et.__name__}: {msg[:300]}" + (f" [{where}]" if where else "")

class Result(unittest.TextTestResult):
  def __init__(self, *a, **k):
    super().__init__(*a, **k)
    self.rows, self.t0 = [], {}
  def startTest(self, test):
    self.t0[test.id()] = time.perf_counter()
    super().startTest(test)
  def _row(self, test, status, why=""):
    dt = time.perf_counter() - self.t0.get(test.id(), time.perf_counter())
    name = test.id().split(".")[-1]
    self.rows.append((name, status, why))
    print(f"{status:5s} {name} ({dt:.2f}s){' -- ' + why if why else ''}", flush=True)
  def addFailure(self, test, err): self._row(test, "FAIL", cause(err))
  def addError(self, test, err): self._row(test, "ERROR", cause(err))
  def addSkip(self, test, reason): self._row(test, "SKIP", reason)
  def addExpectedFailure(self, test, err): self._row(test, "XFAIL")
  def addUnexpectedSuccess(self, test): self._row(test, "PASS")
  def addSubTest(self, test, subtest, err):  # a failing subtest fails its test: reported once, with the first cause
    if err is None or any(r[0] == test.id().split(".")[-1] for r in self.rows): return
    self._row(test, "FAIL" if issubclass(err[0], AssertionError) else "ERROR", f"{subtest._subDescription()}: {cause(err)}")
  def addSuccess(self, test):
    if not any(r[0] == test.id().split(".")[-1] for r in self.rows): self._row(test, "PASS")

suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
filters = sys.argv[1:]
def flat(s):
  for t in s:
    if isinstance(t, unittest.TestSuite): yield from flat(t)
    else: yield t
tests = [t for t in flat(suite) if not filters or any(f in t.id() for f in filters)]
runner = unittest.TextTestRunner(resultclass=Result, verbosity=0, stream=open(os.devnull, "w"))
st = time.perf_counter()
res = runner.run(unittest.TestSuite(tests))
n = len(tests)
counts = {k: sum(1 for r in res.rows if r[1] == k) for k in ("PASS", "FAIL", "ERROR", "SKIP", "XFAIL")}
torch_side = sum(1 for r in res.rows if r[1] in ("FAIL", "ERROR") and r[2].startswith("[torch]"))
print(f"test_ops: {n} tests, {counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors, "
      f"{counts['SKIP']} skipped ({100*counts['PASS']/max(1,n):.1f}% passed) in {time.perf_counter()-st:.0f}s; "
      f"{torch_side} of the failures are on the torch side ([torch]: Debian's torch {torch.__version__} differs)")
