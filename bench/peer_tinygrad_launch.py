# peer_tinygrad_launch.py — tinygrad's cost of realizing a cached 1-element kernel (a+1 on a realized 1-element
# tensor), the peer of bench_tensor's launch_1elem. Run with tinygrad importable; prints "launch_1elem <us> us".
import time
from tinygrad import Tensor
a = Tensor([1.0]).realize()
for _ in range(20): (a + 1).realize()  # compile, fill the caches
best = 1e9
for _ in range(5):
  t0 = time.perf_counter()
  for _ in range(200): (a + 1).realize()
  best = min(best, (time.perf_counter() - t0) / 200)
print(f"launch_1elem {best * 1e6:.2f} us")
