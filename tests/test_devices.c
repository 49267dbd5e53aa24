/* test_devices.c — the device interface without a GPU: names and the registry, a pool per device, transfers,
 * compile and launch through the device table (with its launch overhead printed), the clean "no CUDA device"
 * error on a machine without a driver, and NVRTC (when it loads here: a hand-written kernel to cubin, a cache hit,
 * a failing compile that shows the NVRTC log). The GPU itself is tested by tests/gpu_cuda_runtime.c. */
#include <stdlib.h>
#include <time.h>

#include "runtime/runtime.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"
#include "test.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_names(void) {
  char out[32];
  CHECK(rt_device_canonical("cpu", out, sizeof out) && strcmp(out, "CPU") == 0);
  CHECK(rt_device_canonical("CPU:0", out, sizeof out) && strcmp(out, "CPU") == 0);
  CHECK(rt_device_canonical("cuda:1", out, sizeof out) && strcmp(out, "CUDA:1") == 0);
  CHECK(!rt_device_canonical("METAL", out, sizeof out) && tg_last_status() == TG_ERR_UNSUPPORTED);
  CHECK(!rt_device_canonical("CPU:x", out, sizeof out) && strstr(tg_last_error(), "CPU:x") != NULL);
  CHECK(!rt_device_canonical("CPUX", out, sizeof out));
  RtDevice *a = NULL, *b = NULL, *c = NULL;
  CHECK(rt_device_open("CPU", &a) == TG_OK && a);
  CHECK(rt_device_open("cpu:0", &b) == TG_OK && b == a);
  CHECK(rt_device_open("CPU:1", &c) == TG_OK && c && c != a);
  CHECK_EQ_STR(rt_device_name(c), "CPU:1");
  CHECK(rt_device_is_host(a));
  CHECK_EQ_STR(rt_device_arch(a), "");
}

/* each device has its own pool: a block freed on CPU:1 is reused there, not on CPU */
static void test_pools_and_transfer(void) {
  RtDevice *cpu, *cpu1;
  CHECK(rt_device_open("CPU", &cpu) == TG_OK && rt_device_open("CPU:1", &cpu1) == TG_OK);
  rt_free_cache();
  size_t cached0 = rt_device_mem_cached(cpu);
  RtBuffer *x = NULL, *y = NULL;
  CHECK(rt_buffer_new("CPU:1", 4000, &x) == TG_OK && x && rt_buffer_device(x) == cpu1);
  CHECK(rt_device_mem_used(cpu1) >= 4000);
  rt_buffer_free(x);
  CHECK(rt_device_mem_cached(cpu1) == 4000 && rt_device_mem_cached(cpu) == cached0);
  CHECK(rt_buffer_new_on(cpu1, 4000, &y) == TG_OK && rt_device_mem_cached(cpu1) == 0);
  /* CPU -> CPU:1 transfer, exact, at offsets */
  float src[1000], back[1000];
  for (int i = 0; i < 1000; i++) src[i] = (float)i * 0.25f - 3.0f;
  RtBuffer *s = NULL;
  CHECK(rt_buffer_new("CPU", sizeof src, &s) == TG_OK);
  CHECK(rt_copyin(s, 0, src, sizeof src) == TG_OK);
  CHECK(rt_transfer(y, 0, s, 0, sizeof src) == TG_OK);
  CHECK(rt_copyout(y, 0, back, sizeof back) == TG_OK && memcmp(src, back, sizeof src) == 0);
  CHECK(rt_transfer(y, 4, s, 8, 16) == TG_OK);
  CHECK(rt_copyout(y, 4, back, 16) == TG_OK && memcmp(back, src + 2, 16) == 0);
  CHECK(rt_transfer(y, 3990, s, 0, 16) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "destination"));
  CHECK(rt_buffer_addr(y) == (uint64_t)(uintptr_t)rt_buffer_ptr(y));
  rt_buffer_free(s);
  rt_buffer_free(y);
}

static void test_compile_launch(void) {
  RtDevice *cpu;
  CHECK(rt_device_open("CPU", &cpu) == TG_OK);
  RtKernelSource k = {"E_4_dev", "void E_4_dev(float* restrict data0_4, float* restrict data1_4, const int core_id) {\n"
                                  "  data0_4[core_id] = data1_4[core_id] * 2.0f;\n}\n", NULL, NULL};
  RtProgram *p = NULL;
  CHECK(rt_device_compile_many(cpu, &k, 1, &p) == TG_OK && p);
  if (!p) return;
  CHECK(rt_program_param(p, 2)->value_bytes == 4 && rt_program_param(p, 0)->value_bytes == 8);
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  uint64_t bufs[3] = {(uint64_t)(uintptr_t)out, (uint64_t)(uintptr_t)in, 0};
  long long vals[3] = {0, 0, 0};
  int64_t grid[3] = {4, 1, 1}, block[3] = {1, 1, 1};
  double sec = -1;
  CHECK(rt_device_launch(cpu, p, bufs, vals, 3, grid, block, &sec) == TG_OK && sec >= 0);
  CHECK(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8);
  int64_t bad_block[3] = {2, 1, 1};
  CHECK(rt_device_launch(cpu, p, bufs, vals, 3, grid, bad_block, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "block") != NULL);
  CHECK(rt_device_synchronize(cpu) == TG_OK);

  /* launch overhead through the device table, a cached 1-element kernel */
  RtKernelSource k1 = {"E_1_dev", "void E_1_dev(float* restrict data0_1, float* restrict data1_1) { *data0_1 = *data1_1 + 1.0f; }\n",
                       NULL, NULL};
  RtProgram *p1 = NULL;
  CHECK(rt_device_compile_many(cpu, &k1, 1, &p1) == TG_OK && p1);
  if (!p1) return;
  float a = 1, b = 0;
  uint64_t b1[2] = {(uint64_t)(uintptr_t)&b, (uint64_t)(uintptr_t)&a};
  int64_t one[3] = {1, 1, 1};
  int iters = tg_test_sanitized ? 2000 : 200000;
  double t0 = now_s();
  for (int i = 0; i < iters; i++) rt_device_launch(cpu, p1, b1, NULL, 2, one, one, NULL);
  double per = (now_s() - t0) / iters;
  CHECK(b == 2.0f);
  CHECK(per < 20e-6);
  if (!tg_test_sanitized) printf("  devices: launch overhead through the device table (CPU, cached 1-element kernel): %.3f us\n", per * 1e6);
}

/* without a driver: a clean error from every entry point, never an abort */
static void test_no_cuda(void) {
  const char *why = NULL;
  bool have = rt_cuda_available(&why);
  CHECK(why != NULL);
  if (have) {
    printf("  devices: CUDA is available here (the GPU suites test it)\n");
    return;
  }
  printf("  devices: no CUDA here: %s\n", why);
  RtDevice *d = (RtDevice *)1;
  CHECK(rt_device_open("CUDA", &d) == TG_ERR_RUNTIME && d == NULL);
  CHECK(strstr(tg_last_error(), "no CUDA device") != NULL);
  RtBuffer *b = (RtBuffer *)1;
  CHECK(rt_buffer_new("CUDA:1", 64, &b) == TG_ERR_RUNTIME && b == NULL);
  CHECK(strstr(tg_last_error(), "no CUDA device") != NULL);
  CHECK(!tg_cuda_available(&why) && why && *why);
  /* DEV=CUDA without a GPU: creation fails cleanly (tg_set_default_device is the in-process DEV) */
  char prev[32];
  snprintf(prev, sizeof prev, "%s", tg_default_device());
  CHECK(tg_set_default_device("cuda") == TG_OK && strcmp(tg_default_device(), "CUDA") == 0);
  float one = 1;
  CHECK(tg_from_floats(&one, TG_SHAPE(1)) == NULL && strstr(tg_last_error(), "no CUDA device") != NULL);
  CHECK(tg_set_default_device(prev) == TG_OK);
}

static const char *const good_kernel =
    "extern \"C\" __global__ void __launch_bounds__(32) E_dev_axpy(float* data0, const float* data1, const int n) {\n"
    "  int i = blockIdx.x * 32 + threadIdx.x;\n"
    "  if (i < n) data0[i] = data0[i] + 2.0f * data1[i];\n"
    "}\n";

static void test_nvrtc(void) {
  const char *why = NULL;
  if (!rt_nvrtc_available(&why)) {
    printf("  devices: NVRTC absent, compile checks skipped: %s\n", why);
    CHECK(why && *why);
    unsigned char *bin = NULL;
    size_t len = 0;
    CHECK(rt_nvrtc_compile("E_dev_axpy", good_kernel, "sm_90a", &bin, &len) == TG_ERR_UNSUPPORTED && !bin);
    return;
  }
  unsigned char *bin = NULL;
  size_t len = 0;
  double t0 = now_s();
  tg_status st = rt_nvrtc_compile("E_dev_axpy", good_kernel, "sm_90a", &bin, &len);
  double t1 = now_s();
  CHECK_MSG(st == TG_OK && bin && len > 64, "nvrtc: %s", tg_last_error());
  if (bin) CHECK(memcmp(bin, "\177ELF", 4) == 0); /* a cubin is an ELF image */
  unsigned char *bin2 = NULL;
  size_t len2 = 0;
  double t2 = now_s();
  CHECK(rt_nvrtc_compile("E_dev_axpy", good_kernel, "sm_90a", &bin2, &len2) == TG_OK);
  double t3 = now_s();
  CHECK(bin && bin2 && len2 == len && memcmp(bin, bin2, len) == 0);
  printf("  devices: NVRTC sm_90a cubin %zu bytes in %.1f ms, again %.2f ms (disk cache)\n", len, (t1 - t0) * 1e3,
         (t3 - t2) * 1e3);
  tg_free(bin);
  tg_free(bin2);
  /* a failing compile: the NVRTC log (the undeclared name and the line) is in the error and in rt_compile_log */
  const char *bad = "extern \"C\" __global__ void E_dev_bad(float* data0) { data0[0] = undeclared_thing + 1.0f; }\n";
  bin = NULL;
  CHECK(rt_nvrtc_compile("E_dev_bad", bad, "sm_90a", &bin, &len) == TG_ERR_RUNTIME && bin == NULL);
  CHECK(strstr(tg_last_error(), "undeclared_thing") != NULL);
  CHECK(strstr(tg_last_error(), "E_dev_bad") != NULL);
  CHECK(strstr(rt_compile_log(), "--- source of E_dev_bad ---") != NULL);
  /* an arch NVRTC does not know is its error, not a crash */
  CHECK(rt_nvrtc_compile("E_dev_axpy", good_kernel, "sm_1", &bin, &len) == TG_ERR_RUNTIME && bin == NULL);
}

/* the kernels a tensor's realize would run (tinygrad's schedule), first op of call i */
static TgOp call_op(tg_tensor *t, uint32_t i, uint32_t *ncalls) {
  UOpScope sc = uop_scope_begin();
  UOp *root = t->uop;
  UOp *lin = sched_kernels(uop_sink(&root, 1));
  if (lin) lin = sched_copy_calls(lin);
  TgOp op = lin && i < lin->nsrc ? uop_op(lin->src[i]->src[0]) : TG_OP_NOOP;
  *ncalls = lin ? lin->nsrc : 0;
  uop_scope_end(sc);
  return op;
}

/* tensors on devices: the default, tg_to as a COPY call, exact round trips, tinygrad's mixing error */
static void test_tensor_devices(void) {
  tg_scope sc = tg_scope_begin();
  const char *dflt = tg_default_device();
  CHECK(dflt && *dflt);
  float a[6] = {1.5f, -2, 3.25f, 4, 1e-30f, 6e20f}, o[6] = {0};
  tg_tensor *x = tg_from_floats(a, TG_SHAPE(2, 3));
  CHECK_EQ_STR(tg_device(x), dflt);
  CHECK(tg_device(tg_const_float(1)) == NULL);
  tg_tensor *y = tg_to(x, "cpu:1");
  CHECK_EQ_STR(tg_device(y), "CPU:1");
  uint32_t n = 0;
  CHECK(call_op(y, 0, &n) == TG_OP_COPY && n == 1);
  CHECK(tg_to_host(y, o, sizeof o) == TG_OK && memcmp(a, o, sizeof a) == 0);
  CHECK(tg_to(x, dflt) && tg_to(x, dflt)->uop == x->uop); /* already there: the same value */
  /* a permuted source is made contiguous on its device first, then copied */
  tg_tensor *p = tg_to(tg_permute(x, TG_AXES(1, 0)), "CPU:1");
  CHECK(call_op(p, 0, &n) == TG_OP_SINK && call_op(p, 1, &n) == TG_OP_COPY && n == 2);
  CHECK(tg_to_host(p, o, sizeof o) == TG_OK && o[0] == a[0] && o[1] == a[3] && o[2] == a[1] && o[5] == a[5]);
  /* compute on CPU:1, back to the default device, exact */
  tg_tensor *b = tg_from_data_on(a, TG_FLOAT32, TG_SHAPE(3, 2), "CPU:1");
  CHECK_EQ_STR(tg_device(b), "CPU:1");
  tg_tensor *w = tg_to(tg_add(p, b), dflt);
  CHECK_EQ_STR(tg_device(w), dflt);
  CHECK(tg_to_host(w, o, sizeof o) == TG_OK && o[0] == a[0] + a[0] && o[1] == a[3] + a[1] && o[5] == a[5] + a[5]);
  /* mixing devices without a copy: tinygrad's error at realize, nothing aborts */
  tg_tensor *bad = tg_add(x, tg_from_data_on(a, TG_FLOAT32, TG_SHAPE(2, 3), "CPU:1"));
  CHECK(bad && tg_to_host(bad, o, sizeof o) != TG_OK);
  CHECK(strstr(tg_last_error(), "all buffers must be on the same device") != NULL);
  CHECK(strstr(tg_last_error(), "CPU:1") != NULL);
  CHECK(tg_to(x, "METAL") == NULL && tg_last_status() == TG_ERR_UNSUPPORTED);
  CHECK(tg_empty_on(TG_SHAPE(2), TG_FLOAT32, "NOPE") == NULL);
  /* the default device: creation and random numbers follow it (the key buffer lives there too) */
  CHECK(tg_set_default_device("nope") != TG_OK && strcmp(tg_default_device(), dflt) == 0);
  float r0[8], r1[8];
  tg_manual_seed(7);
  CHECK(tg_to_host(tg_rand(TG_SHAPE(8), TG_VOID), r0, sizeof r0) == TG_OK);
  CHECK(tg_set_default_device("CPU:1") == TG_OK);
  CHECK_EQ_STR(tg_device(tg_zeros(TG_SHAPE(2), TG_VOID)), "CPU:1");
  tg_manual_seed(7);
  tg_tensor *r = tg_rand(TG_SHAPE(8), TG_VOID);
  CHECK_EQ_STR(tg_device(r), "CPU:1");
  CHECK(tg_to_host(r, r1, sizeof r1) == TG_OK && memcmp(r0, r1, sizeof r0) == 0); /* first device after a seed */
  CHECK(tg_set_default_device(dflt) == TG_OK);
  /* the gradient of a copy goes back to the source's device */
  tg_tensor *g = tg_from_floats(a, TG_SHAPE(6));
  CHECK(tg_requires_grad(g, true) == TG_OK);
  tg_tensor *loss = tg_sum(tg_mul(tg_to(g, "CPU:1"), tg_const_float(3)), NULL, 0, false);
  CHECK(tg_backward(loss) == TG_OK);
  tg_tensor *gg = tg_grad(g);
  CHECK(gg && strcmp(tg_device(gg), dflt) == 0);
  CHECK(gg && tg_to_host(gg, o, sizeof o) == TG_OK && o[0] == 3 && o[5] == 3);
  tg_scope_end(sc);
}

/* tg_mark on the CPU: the host clock (its work is done when calls return); errors for NULL and unknown devices */
static void test_marks(void) {
  tg_mark *a = tg_mark_record("CPU");
  volatile double sink = 0;
  for (int i = 0; i < 200000; i++) sink += i * 0.5;
  tg_mark *b = tg_mark_record(strcmp(tg_default_device(), "CPU") == 0 ? NULL : "cpu");
  double s = -1;
  CHECK(a && b && tg_mark_elapsed(a, b, &s) == TG_OK && s > 0 && s < 10);
  CHECK(tg_mark_elapsed(b, a, &s) == TG_OK && s < 0); /* the order is the caller's */
  CHECK(tg_mark_elapsed(a, NULL, &s) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "tg_mark_elapsed"));
  CHECK(tg_mark_record("NOPE") == NULL && tg_last_status() != TG_OK);
  tg_mark_free(a);
  tg_mark_free(b);
  tg_mark_free(NULL);
}

void suite_devices(void) {
  test_marks();
  test_names();
  test_pools_and_transfer();
  test_compile_launch();
  test_no_cuda();
  test_nvrtc();
  test_tensor_devices();
}
