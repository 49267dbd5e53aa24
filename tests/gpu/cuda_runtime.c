/* cuda_runtime.c — the CUDA backend on a real GPU: open (name, arch), a hand-written kernel compiled by NVRTC and
 * launched, H2D/D2H round trips exact (with bandwidth), D2D copies (bandwidth), the LRU pool reusing a freed block,
 * out of memory as a clean TG_ERR_OUT_OF_MEMORY with nothing lost, the NVRTC error log, event timing (and tg_mark), launch
 * overhead, and tensors moved to the GPU and back with tg_to (COPY calls in the schedule). */
#include <stdlib.h>
#include <time.h>

#include "gpu_test.h"
#include "render/render.h"
#include "runtime/runtime.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const saxpy_src =
    "extern \"C\" __global__ void __launch_bounds__(256) E_saxpy(float* data0, const float* data1, const float* data2,"
    " const int n) {\n"
    "  int i = blockIdx.x * 256 + threadIdx.x;\n"
    "  if (i < n) data0[i] = 2.0f * data1[i] + data2[i];\n"
    "}\n";
static const char *const spin_src =
    "extern \"C\" __global__ void E_spin(float* data0, const int iters) {\n"
    "  float x = data0[threadIdx.x];\n"
    "  for (int i = 0; i < iters; i++) x = x * 0.999f + 0.001f;\n"
    "  data0[threadIdx.x] = x;\n"
    "}\n";
static const char *const empty_src = "extern \"C\" __global__ void E_empty(float* data0) { }\n";

static void test_kernel(RtDevice *d) {
  enum { N = 1000003 };
  RtKernelSource ks[3] = {{"E_saxpy", saxpy_src, NULL, NULL}, {"E_spin", spin_src, NULL, NULL},
                          {"E_empty", empty_src, NULL, NULL}};
  RtProgram *p[3] = {NULL, NULL, NULL};
  double t0 = now_s();
  tg_status st = rt_device_compile_many(d, ks, 3, p);
  printf("  cuda_runtime: compile 3 kernels (NVRTC, threads, cache) %.1f ms\n", (now_s() - t0) * 1e3);
  CHECK_MSG(st == TG_OK && p[0] && p[1] && p[2], "compile: %s", tg_last_error());
  if (st != TG_OK) return;
  RtProgram *again = NULL;
  CHECK(rt_device_compile_many(d, ks, 1, &again) == TG_OK && again == p[0]); /* interned */
  CHECK(rt_program_nparams(p[0]) == 4 && rt_program_param(p[0], 3)->value_bytes == 4);
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  for (int i = 0; i < N; i++) x[i] = (float)(i % 977) * 0.5f, y[i] = (float)(i % 13) - 6.0f;
  RtBuffer *bx = NULL, *by = NULL, *bo = NULL;
  CHECK(rt_buffer_new("CUDA", N * sizeof(float), &bx) == TG_OK && rt_buffer_new("CUDA", N * sizeof(float), &by) == TG_OK &&
        rt_buffer_new("CUDA", N * sizeof(float), &bo) == TG_OK);
  CHECK(rt_buffer_ptr(bx) == NULL && rt_buffer_addr(bx) != 0); /* a device address is not a host pointer */
  CHECK(rt_copyin(bx, 0, x, N * sizeof(float)) == TG_OK && rt_copyin(by, 0, y, N * sizeof(float)) == TG_OK);
  uint64_t bufs[4] = {rt_buffer_addr(bo), rt_buffer_addr(bx), rt_buffer_addr(by), 0};
  long long vals[4] = {0, 0, 0, N};
  int64_t grid[3] = {(N + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
  double sec = -1;
  CHECK_MSG(rt_device_launch(d, p[0], bufs, vals, 4, grid, block, &sec) == TG_OK, "launch: %s", tg_last_error());
  CHECK(sec > 0 && sec < 1);
  CHECK(rt_copyout(bo, 0, out, N * sizeof(float)) == TG_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != 2.0f * x[i] + y[i];
  CHECK_MSG(bad == 0, "saxpy: %d of %d wrong", bad, N);
  printf("  cuda_runtime: saxpy on %d floats %.2f us (event timing)\n", N, sec * 1e6);
  int64_t too_big[3] = {256, 1, 1}, big_block[3] = {2048, 1, 1};
  CHECK(rt_device_launch(d, p[0], bufs, vals, 4, too_big, big_block, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(rt_device_launch(d, p[0], bufs, vals, 3, grid, block, NULL) == TG_ERR_INVALID_ARGUMENT);

  /* event timing grows with the work */
  uint64_t sb[2] = {rt_buffer_addr(bo), 0};
  long long short_v[2] = {0, 1000}, long_v[2] = {0, 1000000};
  int64_t one[3] = {1, 1, 1}, b32[3] = {32, 1, 1};
  double ts = 0, tl = 0;
  CHECK(rt_device_launch(d, p[1], sb, short_v, 2, one, b32, &ts) == TG_OK);
  CHECK(rt_device_launch(d, p[1], sb, long_v, 2, one, b32, &tl) == TG_OK);
  CHECK_MSG(tl > ts * 10 && tl > 1e-4, "event timing: 1e3 iterations %.1f us, 1e6 %.1f us", ts * 1e6, tl * 1e6);
  printf("  cuda_runtime: event timing: 1e3 iterations %.2f us, 1e6 iterations %.2f us\n", ts * 1e6, tl * 1e6);
  /* tg_mark_record / tg_mark_elapsed: the device's time between two marks holds the long spin queued between them,
   * and the first mark is reached before the work (elapsed from the first to the second >= the spin's own time) */
  tg_mark *m0 = tg_mark_record("CUDA");
  CHECK(m0 && rt_device_launch(d, p[1], sb, long_v, 2, one, b32, NULL) == TG_OK);
  tg_mark *m1 = tg_mark_record("cuda");
  double tm = -1, tz = -1;
  CHECK_MSG(m1 && tg_mark_elapsed(m0, m1, &tm) == TG_OK && tm > tl * 0.8 && tm < 1, "marks: %.1f us, spin %.1f us",
            tm * 1e6, tl * 1e6);
  CHECK(tg_mark_elapsed(m1, m1, &tz) == TG_OK && tz == 0);
  tg_mark *mc = tg_mark_record("CPU");
  CHECK(mc && tg_mark_elapsed(m0, mc, &tz) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "different devices"));
  printf("  cuda_runtime: marks around a 1e6-iteration spin: %.2f us\n", tm * 1e6);
  tg_mark_free(m0);
  tg_mark_free(m1);
  tg_mark_free(mc);

  /* launch overhead: back-to-back async launches of an empty kernel, then one synchronize */
  int iters = 20000;
  uint64_t eb[1] = {rt_buffer_addr(bo)};
  CHECK(rt_device_launch(d, p[2], eb, NULL, 1, one, b32, NULL) == TG_OK);
  CHECK(rt_device_synchronize(d) == TG_OK);
  t0 = now_s();
  for (int i = 0; i < iters; i++) rt_device_launch(d, p[2], eb, NULL, 1, one, b32, NULL);
  double t_async = now_s() - t0;
  CHECK(rt_device_synchronize(d) == TG_OK);
  double t_all = now_s() - t0;
  printf("  cuda_runtime: launch overhead (empty kernel): %.2f us per launch issued, %.2f us with the GPU done\n",
         t_async / iters * 1e6, t_all / iters * 1e6);
  CHECK(t_all / iters < 20e-6);
  rt_buffer_free(bx);
  rt_buffer_free(by);
  rt_buffer_free(bo);
  free(x);
  free(y);
  free(out);
}

static void test_copies(RtDevice *d) {
  size_t n = (size_t)256 << 20;
  unsigned char *h = malloc(n), *back = malloc(n);
  if (!h || !back) {
    CHECK(!"host memory");
    return;
  }
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < n; i += 8) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    memcpy(h + i, &s, 8);
  }
  RtBuffer *a = NULL, *b = NULL;
  CHECK(rt_buffer_new_on(d, n, &a) == TG_OK && rt_buffer_new_on(d, n, &b) == TG_OK);
  if (!a || !b) return;
  /* warm: the staging blocks and the pages */
  CHECK(rt_copyin(a, 0, h, n) == TG_OK && rt_device_synchronize(d) == TG_OK);
  double t0 = now_s();
  CHECK(rt_copyin(a, 0, h, n) == TG_OK && rt_device_synchronize(d) == TG_OK);
  double h2d = now_s() - t0;
  memset(back, 0, n);
  t0 = now_s();
  CHECK(rt_copyout(a, 0, back, n) == TG_OK);
  double d2h = now_s() - t0;
  CHECK(memcmp(h, back, n) == 0);
  CHECK(rt_transfer(b, 0, a, 0, n) == TG_OK && rt_device_synchronize(d) == TG_OK);
  int reps = 10;
  t0 = now_s();
  for (int i = 0; i < reps; i++) rt_transfer(b, 0, a, 0, n);
  CHECK(rt_device_synchronize(d) == TG_OK);
  double d2d = (now_s() - t0) / reps;
  memset(back, 0, n);
  CHECK(rt_copyout(b, 0, back, n) == TG_OK && memcmp(h, back, n) == 0);
  /* offsets and a transfer through the host (CUDA -> CPU -> CUDA) */
  CHECK(rt_transfer(b, 12, a, 1000, 4096) == TG_OK);
  CHECK(rt_copyout(b, 12, back, 4096) == TG_OK && memcmp(back, h + 1000, 4096) == 0);
  RtBuffer *c = NULL;
  CHECK(rt_buffer_new("CPU", 1 << 20, &c) == TG_OK);
  CHECK(rt_transfer(c, 0, a, 0, 1 << 20) == TG_OK && memcmp(rt_buffer_ptr(c), h, 1 << 20) == 0);
  CHECK(rt_transfer(b, 0, c, 0, 1 << 20) == TG_OK);
  memset(back, 0, 1 << 20);
  CHECK(rt_copyout(b, 0, back, 1 << 20) == TG_OK && memcmp(back, h, 1 << 20) == 0);
  rt_buffer_free(c);
  printf("  cuda_runtime: 256 MiB H2D %.1f GB/s (pageable source, pinned staging), D2H %.1f GB/s, D2D %.1f GB/s "
         "(%.1f GB/s read+write)\n", n / h2d / 1e9, n / d2h / 1e9, n / d2d / 1e9, 2.0 * n / d2d / 1e9);

  /* the LRU pool: a freed block comes back for the next request of its size */
  uint64_t addr = rt_buffer_addr(b);
  rt_buffer_free(b);
  CHECK(rt_device_mem_cached(d) >= n);
  RtBuffer *b2 = NULL;
  CHECK(rt_buffer_new_on(d, n, &b2) == TG_OK && b2 && rt_buffer_addr(b2) == addr);

  /* out of memory: a clean error after flushing the pool; the live buffers keep their contents */
  RtBuffer *huge = (RtBuffer *)1;
  t0 = now_s();
  CHECK(rt_buffer_new_on(d, (size_t)1 << 40, &huge) == TG_ERR_OUT_OF_MEMORY && huge == NULL);
  CHECK(strstr(tg_last_error(), "CUDA") != NULL);
  printf("  cuda_runtime: 1 TiB request: %s (%.1f ms)\n", tg_last_error(), (now_s() - t0) * 1e3);
  memset(back, 0, n);
  CHECK(rt_copyout(a, 0, back, n) == TG_OK && memcmp(h, back, n) == 0);
  RtBuffer *after = NULL;
  CHECK(rt_buffer_new_on(d, 1 << 20, &after) == TG_OK);
  rt_buffer_free(after);
  rt_buffer_free(b2);
  rt_buffer_free(a);
  free(h);
  free(back);
}

static void test_nvrtc_errors(RtDevice *d) {
  RtKernelSource bad = {"E_broken", "extern \"C\" __global__ void E_broken(float* data0) { data0[0] = missing_name; }\n",
                        NULL, NULL};
  RtProgram *p = NULL;
  CHECK(rt_device_compile_many(d, &bad, 1, &p) == TG_ERR_RUNTIME && p == NULL);
  CHECK(strstr(tg_last_error(), "missing_name") != NULL && strstr(tg_last_error(), "E_broken") != NULL);
  CHECK(strstr(rt_compile_log(), "--- source of E_broken ---") != NULL);
  RtKernelSource nofn = {"E_absent", "extern \"C\" __global__ void E_other(float* data0) { }\n", NULL, NULL};
  CHECK(rt_device_compile_many(d, &nofn, 1, &p) != TG_OK);
}

/* tensors: to the GPU and back through COPY calls, exact; compute there once the CUDA renderer exists */
static void test_tensors(void) {
  tg_scope sc = tg_scope_begin();
  float a[1000], o[1000];
  for (int i = 0; i < 1000; i++) a[i] = (float)i * 0.37f - 100.0f;
  tg_tensor *x = tg_from_floats(a, TG_SHAPE(10, 100));
  tg_tensor *g = tg_to(x, "cuda");
  CHECK(g && strcmp(tg_device(g), "CUDA") == 0);
  memset(o, 0, sizeof o);
  CHECK_MSG(tg_to_host(g, o, sizeof o) == TG_OK && memcmp(a, o, sizeof a) == 0, "to CUDA: %s", tg_last_error());
  tg_tensor *back = tg_to(g, "CPU");
  memset(o, 0, sizeof o);
  CHECK(tg_to_host(back, o, sizeof o) == TG_OK && memcmp(a, o, sizeof a) == 0);
  tg_tensor *y = tg_add(tg_mul(g, tg_const_float(2)), tg_const_float(1));
  tg_status st = tg_to_host(y, o, sizeof o);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", tg_last_error());
  if (!renderer_for_device("CUDA")) {
    CHECK(st != TG_OK && strstr(msg, "CUDA renderer") != NULL);
    printf("  cuda_runtime: kernels on CUDA wait for the CUDA renderer (%s)\n", msg);
  } else {
    int bad = 0;
    for (int i = 0; i < 1000; i++) bad += o[i] != a[i] * 2 + 1;
    CHECK_MSG(st == TG_OK && bad == 0, "x*2+1 on CUDA: %s, %d wrong", tg_last_error(), bad);
  }
  RtDevice *d1;
  if (rt_device_open("CUDA:1", &d1) != TG_OK) CHECK(strstr(tg_last_error(), "no CUDA device CUDA:1") != NULL);
  else CHECK(d1 != NULL);
  tg_scope_end(sc);
}

void gpu_suite_cuda_runtime(void) {
  if (!gpu_require_cuda()) return;
  RtDevice *d = NULL;
  CHECK(rt_device_open("CUDA", &d) == TG_OK && d);
  if (!d) return;
  printf("  cuda_runtime: opened %s, arch %s\n", rt_device_name(d), rt_device_arch(d));
  CHECK(strncmp(rt_device_arch(d), "sm_", 3) == 0);
  CHECK(!rt_device_is_host(d));
  test_kernel(d);
  test_copies(d);
  test_nvrtc_errors(d);
  test_tensors();
}
