"""The Python package's own tests (run by `make test`: python/run_tests.sh): tinygrad's API and semantics over the C
library — creation and dtype inference, weak Python scalars, promotion, broadcasting, reductions, indexing, errors
(their Python types), autograd with tinygrad's backward rule, an optimizer step, numpy round trips (skipped without
numpy), handle lifetimes (no leaked tg_tensor), the `import tinygrad` shim. Small shapes: few kernels."""
import gc, math, os, sys, unittest
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "compat"), os.path.join(HERE, "..")]
from tinygrad_c import Tensor, dtypes, Device, Context, nn  # noqa: E402
from tinygrad_c._lib import lib  # noqa: E402
try:
  import numpy as np
except ImportError: np = None

class TestCreation(unittest.TestCase):
  def test_lists(self):
    t = Tensor([[1, 2, 3], [4, 5, 6]])
    self.assertEqual((t.shape, t.dtype, t.ndim, t.numel()), ((2, 3), dtypes.int32, 2, 6))
    self.assertEqual(t.tolist(), [[1, 2, 3], [4, 5, 6]])
    self.assertIs(Tensor([1.0, 2]).dtype, dtypes.float32)
    self.assertIs(Tensor([True, False]).dtype, dtypes.bool)
    self.assertEqual(Tensor([1, 2], dtype=dtypes.float16).tolist(), [1.0, 2.0])
    self.assertEqual(Tensor([], dtype=dtypes.float32).shape, (0,))
    with self.assertRaises(ValueError): Tensor([[1, 2], [3]])
  def test_scalars_are_weak(self):
    self.assertIs(Tensor(3).dtype, dtypes.weakint)
    self.assertIs(Tensor(2.5).dtype, dtypes.weakfloat)
    self.assertIs(Tensor(3, dtype=dtypes.int8).dtype, dtypes.int8)
    self.assertEqual(Tensor(7, dtype="int16").item(), 7)
  def test_factories(self):
    self.assertEqual(Tensor.arange(5).tolist(), [0, 1, 2, 3, 4])
    self.assertEqual(Tensor.full((2, 2), 7).dtype, dtypes.int32)
    self.assertEqual(Tensor.eye(2).tolist(), [[1.0, 0.0], [0.0, 1.0]])
    self.assertEqual(Tensor.zeros(2, 3).shape, (2, 3))
    with self.assertRaises(ValueError): Tensor.zeros(2, -3)
    with self.assertRaises(OverflowError): Tensor.arange(129, dtype=dtypes.int8)
    Tensor.manual_seed(0)
    a = Tensor.rand(4).tolist()
    Tensor.manual_seed(0)
    self.assertEqual(a, Tensor.rand(4).tolist())
    self.assertTrue(all(0 <= x < 1 for x in a))

class TestOps(unittest.TestCase):
  def test_promotion_and_broadcast(self):
    i8 = Tensor([1, 2], dtype=dtypes.int8)
    self.assertIs((i8 + 2).dtype, dtypes.int8)            # a weak int adopts the tensor's dtype
    self.assertIs((i8 + 2.5).dtype, dtypes.weakfloat)     # as tinygrad: int8 + weak float stays weak ...
    self.assertEqual((i8 + 2.5).tolist(), [3.5, 4.5])      # ... and reads as the default float
    self.assertIs((i8 / 2).dtype, dtypes.float32)         # true division of ints
    self.assertIs((i8 + Tensor([1], dtype=dtypes.uint8)).dtype, dtypes.int16)
    r = Tensor([[1.0], [2.0]]) * Tensor([1.0, 10.0, 100.0])
    self.assertEqual(r.tolist(), [[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]])
    self.assertEqual((2 - Tensor([1, 2])).tolist(), [1, 0])
    self.assertEqual((Tensor([7, -7]) // 2).tolist(), [3, -4])
    self.assertEqual((Tensor([7, -7]) % 3).tolist(), [1, 2])
    self.assertEqual(Tensor([1.0, 4.0]).sqrt().tolist(), [1.0, 2.0])
    self.assertEqual((Tensor([1, 2]) < Tensor([2, 2])).tolist(), [True, False])
  def test_cached_scalars_keep_kind_and_sign(self):
    # the binary ops' scalar cache is keyed by class and value: 1, 1.0 and True are three constants, 0.0 and -0.0 two
    i = Tensor([1, 2])
    for _ in range(2):  # the second round hits the cache
      self.assertIs((i + 1).dtype, dtypes.int32)
      self.assertIs((i + 1.0).dtype, dtypes.weakfloat)
      self.assertIs((i + True).dtype, dtypes.int32)
      self.assertIs((Tensor([True]) & True).dtype, dtypes.bool)
      self.assertEqual(Tensor([2.0]).copysign(-0.0).tolist(), [-2.0])
      self.assertEqual(Tensor([2.0]).copysign(0.0).tolist(), [2.0])
      self.assertEqual((3 - i).tolist(), [2, 1])
      self.assertTrue(math.isnan((Tensor([1.0]) + math.nan).item()))
    self.assertEqual(Tensor([[1.0, 2.0]]).sum(axis=1).tolist(), [3.0])
    self.assertEqual(Tensor([[1.0, 2.0]]).sum(axis=(1,)).tolist(), [3.0])
    self.assertEqual(Tensor([[1.0, 2.0]]).sum(axis=[0, 1]).item(), 3.0)
    self.assertEqual(Tensor([1.0, 2.0]).reshape(2, 1).reshape(None, 1).reshape((2,)).shape, (2,))
  def test_reductions(self):
    t = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    self.assertEqual(t.sum().item(), 21.0)
    self.assertEqual(t.sum(axis=1, keepdim=True).shape, (2, 1))
    self.assertEqual(t.max(0).tolist(), [4.0, 5.0, 6.0])
    self.assertEqual(t.mean(axis=(0, 1)).item(), 3.5)
    self.assertEqual(t.argmax(1).tolist(), [2, 2])
    self.assertEqual(Tensor([3.0, 1.0, 2.0]).cummax(0)[1].tolist(), [0, 0, 0])
    self.assertEqual(Tensor([1.0, 2.0, 3.0]).cumprod(0).tolist(), [1.0, 2.0, 6.0])
  def test_movement_and_indexing(self):
    t = Tensor.arange(12).reshape(3, 4)
    self.assertEqual(t[1].tolist(), [4, 5, 6, 7])
    self.assertEqual(t[:, 1:3].tolist(), [[1, 2], [5, 6], [9, 10]])
    self.assertEqual(t[None, ..., -1].shape, (1, 3))
    self.assertEqual(t[Tensor([2, 0])].tolist(), [[8, 9, 10, 11], [0, 1, 2, 3]])
    self.assertEqual(t.permute(1, 0).shape, (4, 3))
    self.assertEqual(t.pad(((1, 0), None)).shape, (4, 4))
    self.assertEqual(Tensor.cat(t, t, dim=1).shape, (3, 8))
    self.assertEqual([x.shape for x in t.split(2, dim=1)], [(3, 2), (3, 2)])
    self.assertEqual(t.triu().tolist(), [[0, 1, 2, 3], [0, 5, 6, 7], [0, 0, 10, 11]])
  def test_einsum_and_matmul(self):
    a, b = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1.0], [1.0]])
    self.assertEqual((a @ b).tolist(), [[3.0], [7.0]])
    self.assertEqual(Tensor.einsum("ij,jk->ik", a, b).tolist(), [[3.0], [7.0]])
    self.assertEqual(Tensor.einsum("ii", a).item(), 5.0)

class TestErrors(unittest.TestCase):
  def test_types_and_messages(self):
    t = Tensor.ones(2, 3)
    with self.assertRaises(RuntimeError) as cm: t.reshape(4, 2)
    self.assertIn("reshape", str(cm.exception))
    self.assertIsInstance(cm.exception, ValueError)           # an invalid argument is both
    with self.assertRaisesRegex(IndexError, "out of bounds"): t[2]
    with self.assertRaises(IndexError): t.sum(axis=5)
    with self.assertRaisesRegex(NotImplementedError, "qr"): t.qr()
    with self.assertRaises(TypeError): bool(t)
    with self.assertRaises(RuntimeError): Tensor([1, 2]) + Tensor([1, 2, 3])
  def test_error_does_not_poison(self):
    with self.assertRaises(RuntimeError): Tensor.ones(2).reshape(3)
    self.assertEqual((Tensor.ones(2) + 1).tolist(), [2.0, 2.0])

class TestAutograd(unittest.TestCase):
  def test_gradient(self):
    x = Tensor([1.0, -2.0, 3.0])
    (g,) = (x * x).sum().gradient(x)
    self.assertEqual(g.tolist(), [2.0, -4.0, 6.0])
  def test_backward_fills_every_float_tensor(self):
    x, w = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    (x * w).sum().backward()
    self.assertEqual(x.grad.tolist(), [3.0, 4.0])
    self.assertEqual(w.grad.tolist(), [1.0, 2.0])
    x.grad = None
    self.assertIsNone(x.grad)
  def test_optimizer(self):
    Tensor.manual_seed(1)
    layer = nn.Linear(3, 1)
    opt = nn.optim.SGD(nn.state.get_parameters(layer), lr=0.01)
    x, y = Tensor([[1.0, 2.0, 3.0]]), Tensor([[1.0]])
    losses = []
    with Context(TRAINING=1):
      for _ in range(5):
        opt.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        opt.step(loss)
        losses.append(loss.item())
    self.assertLess(losses[-1], losses[0] * 0.5)
    with self.assertRaisesRegex(RuntimeError, "TRAINING"): opt.step()

class TestNN(unittest.TestCase):
  def test_layers(self):
    Tensor.manual_seed(2)
    x = Tensor.rand(2, 3, 6, 6)
    self.assertEqual(nn.Conv2d(3, 4, 3, padding=1)(x).shape, (2, 4, 6, 6))
    self.assertEqual(nn.Linear(6, 5)(x).shape, (2, 3, 6, 5))
    self.assertEqual(nn.LayerNorm(6)(x).shape, x.shape)
    self.assertEqual(nn.Embedding(10, 4)(Tensor([[1, 2, 3]])).shape, (1, 3, 4))
  def test_batchnorm_running_stats(self):
    bn = nn.BatchNorm(3)
    x = Tensor([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]])
    with Context(TRAINING=1): out = bn(x).realize()
    bn.running_mean.realize()
    self.assertEqual([round(v, 5) for v in bn.running_mean.tolist()], [0.2, 0.4, 0.6])  # 0.9*0 + 0.1*mean
    self.assertAlmostEqual(out.tolist()[0][0], -1.0, places=3)
    self.assertFalse(bn.running_mean.is_param)

@unittest.skipIf(np is None, "numpy is not installed: the numpy round trips are skipped")
class TestNumpy(unittest.TestCase):
  def test_roundtrip(self):
    for dt in (np.float32, np.float16, np.int8, np.uint16, np.int64, np.bool_, np.float64):
      a = (np.arange(6).reshape(2, 3) % 3).astype(dt)
      t = Tensor(a)
      self.assertEqual(t.dtype.name if dt is not np.bool_ else "bool", Tensor(a).dtype.name)
      np.testing.assert_equal(t.numpy(), a)
      self.assertEqual(t.numpy().dtype, a.dtype)
  def test_zero_d_array_is_strong(self):
    self.assertIs(Tensor(np.array(2.0, dtype=np.float32)).dtype, dtypes.float32)
  def test_bfloat16_reads_as_float(self):
    self.assertEqual(Tensor([1.5, 2.0], dtype=dtypes.bfloat16).numpy().dtype, np.float32)

class TestLifetimes(unittest.TestCase):
  def test_handles_released(self):
    def step():
      a = Tensor([1.0, 2.0]) * 2 + 1
      a.sum().gradient(a)
    step()  # the scalars 2 and 1 become cached weak constants (kept for the process)
    gc.collect()
    before = lib.tg_live_tensors()
    for _ in range(50):
      a = Tensor([1.0, 2.0]) * 2 + 1
      a.sum().gradient(a)
      del a
    gc.collect()
    self.assertEqual(lib.tg_live_tensors(), before)
  def test_release_is_batched(self):
    # a dead Tensor's handle waits in _lib.pending: at most 255 of them, none once a realize (or a count) begins
    from tinygrad_c import _lib
    a = Tensor.ones(4).contiguous().realize()
    a + 1.0, a * 3.0, a * 2  # the scalars become cached constants (live for the process)
    base = lib.tg_live_tensors()
    self.assertEqual(len(_lib.pending), 0)
    for _ in range(10): a + 1.0
    self.assertEqual(len(_lib.pending), 10)
    self.assertEqual(lib.tg_live_tensors(), base)
    for _ in range(1000):
      a * 3.0
      self.assertLess(len(_lib.pending), 256)
    b = (a * 2).realize()
    self.assertEqual(len(_lib.pending), 0)
    self.assertEqual(b.tolist(), [2.0] * 4)
    del b
    self.assertEqual(lib.tg_live_tensors(), base)
  def test_exit_releases(self):
    # at exit the queue is emptied, and a Tensor collected after that is released at once (an exit handler
    # registered before the package's runs after it)
    import subprocess
    code = ("import atexit, sys\n"
            "def late():\n"
            "  from tinygrad_c import _lib\n"
            "  global keep\n"
            "  n0 = _lib.lib.tg_live_tensors()\n"
            "  del keep\n"
            "  print(len(_lib.pending), n0 - _lib.lib.tg_live_tensors())\n"
            "atexit.register(late)\n"
            "from tinygrad_c import Tensor\n"
            "keep = Tensor.ones(3) + 1\n"
            "for i in range(300): keep * 2.0\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, ".."), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    self.assertEqual((r.returncode, r.stdout.strip(), r.stderr), (0, "0 1", ""))

class TestCompat(unittest.TestCase):
  def test_import_tinygrad(self):
    import tinygrad
    from tinygrad.helpers import getenv, Context as C2
    from tinygrad.tensor import _to_np_dtype  # noqa: F401
    from tinygrad.renderer.nir import NIRRenderer
    self.assertIs(tinygrad.Tensor, Tensor)
    self.assertIs(C2, Context)
    self.assertEqual(getenv("TINYGRAD_C_SURELY_UNSET", 3), 3)
    self.assertEqual(Device.DEFAULT, "CPU")
    self.assertFalse(isinstance(Device[Device.DEFAULT].renderer, NIRRenderer))
    self.assertIn(dtypes.half, Device[Device.DEFAULT].renderer.supported_dtypes())
  def test_context_restores(self):
    old = os.environ.get("NOOPT")
    with Context(NOOPT=1): self.assertEqual(os.environ["NOOPT"], "1")
    self.assertEqual(os.environ.get("NOOPT"), old)

if __name__ == "__main__":
  unittest.main()
