/* jit_gpu.c — the JIT on CUDA: replays go through CUDA graphs (engine.c make_graphs, runtime graphs in cuda.c).
 * A step of several kernels over two realizes (an assign into state the JIT does not see as an input, a Variable, a
 * new input buffer on most calls) replays with the values a host computation gives, with graphs (JIT=1) and
 * without (JIT=2) and bit for bit the same either way; a chain of 50 kernels becomes two graphs (JIT_BATCH_SIZE 32,
 * then the rest) and adds 50; 3,000 replays keep device memory, live handles and RSS flat. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_test.h"
#include "runtime/runtime.h"
#include "tinygrad.h"

enum { N = 4096 };

typedef struct StepState { tg_tensor *s; } StepState;

/* y = x*2 + i; s += exp(y/1000) (realized: its own schedule); out = sum(s * y) */
static tg_status step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                      tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(nvars), TG_UNUSED(nout);
  StepState *ss = user;
  tg_tensor *y = tg_contiguous(tg_add(tg_mul(in[0], tg_const_float(2.0)), vars[0]));
  tg_tensor *z = tg_contiguous(tg_exp(tg_mul(y, tg_const_float(0.001))));
  tg_status st = y && z ? tg_assign(ss->s, tg_add(ss->s, z)) : tg_last_status();
  if (st == TG_OK) st = tg_realize(ss->s);
  if (st != TG_OK) return st;
  out[0] = tg_sum(tg_mul(ss->s, y), NULL, 0, false);
  return out[0] ? TG_OK : tg_last_status();
}

static tg_tensor *on_cuda(const float *x, size_t n) {
  tg_tensor *t = tg_to(tg_from_data(x, TG_FLOAT32, (const int64_t[]){(int64_t)n}, 1), "CUDA");
  return t && tg_realize(t) == TG_OK ? t : NULL;
}

/* 8 calls (run, capture, 6 replays); out_vals receives each call's output. */
static void run_step(const char *jit_knob, float out_vals[8], size_t *graphs, size_t *kernels) {
  static float x[N], s_host[N];
  static const float zero[N];
  test_setenv("JIT", jit_knob);
  tg_scope sc = tg_scope_begin();
  StepState ss = {on_cuda(zero, N)};
  for (int e = 0; e < N; e++) s_host[e] = 0;
  tg_jit *j = tg_jit_new(step, &ss, 1, NULL);
  tg_tensor *vi = tg_variable("i", 0, 100);
  tg_tensor *xt = NULL;
  for (int call = 0; call < 8 && ss.s; call++) {
    if (call != 5) { /* call 5 replays with the buffer of call 4: nothing to update in the graph */
      for (int e = 0; e < N; e++) x[e] = (float)((e * 7 + call * 13) % 101) * 0.01f - 0.5f;
      xt = on_cuda(x, N);
    }
    tg_tensor *vars[1] = {tg_bind(vi, call * 3)}, *out = NULL;
    tg_status st = xt ? tg_jit_call(j, &xt, 1, vars, 1, &out) : TG_ERR_RUNTIME;
    CHECK_MSG(st == TG_OK, "JIT=%s call %d: %s", jit_knob, call, tg_last_error());
    if (st != TG_OK) break;
    st = tg_to_host(out, &out_vals[call], sizeof(float));
    CHECK_MSG(st == TG_OK, "JIT=%s call %d: read: %s", jit_knob, call, tg_last_error());
    double ref = 0;
    for (int e = 0; e < N; e++) {
      float y = x[e] * 2.0f + (float)(call * 3);
      s_host[e] += expf(y * 0.001f);
      ref += (double)s_host[e] * (double)y;
    }
    CHECK_MSG(fabs(out_vals[call] - ref) <= 1e-4 * fabs(ref) + 1e-3, "JIT=%s call %d: %.6g, expected %.6g", jit_knob,
              call, out_vals[call], ref);
  }
  *graphs = tg_jit_graph_count(j);
  *kernels = tg_jit_kernel_count(j);
  tg_jit_free(j);
  tg_scope_end(sc);
  test_unsetenv("JIT");
}

static void check_graph_vs_direct(void) {
  float with[8] = {0}, without[8] = {0};
  size_t g1, k1, g2, k2;
  run_step("1", with, &g1, &k1);
  run_step("2", without, &g2, &k2);
  CHECK_MSG(k1 >= 4 && k1 == k2, "kernels captured: %zu (JIT=1) and %zu (JIT=2)", k1, k2);
  CHECK_MSG(g1 >= 1, "JIT=1 on CUDA made %zu graphs", g1);
  CHECK_EQ_INT(g2, 0);
  int differ = 0;
  for (int i = 0; i < 8; i++) differ += with[i] != without[i];
  CHECK_MSG(differ == 0, "graph and direct replays differ in %d of 8 calls", differ);
}

static tg_status chain(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                       tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  tg_tensor *t = in[0];
  for (int i = 0; i < 50 && t; i++) {
    t = tg_add(t, tg_const_float(1.0));
    if (i + 1 < 50) t = tg_contiguous(t);
  }
  out[0] = t;
  return t ? TG_OK : tg_last_status();
}

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return (size_t)rss * 4096;
}

static void check_chain_and_memory(void) {
  tg_scope outer = tg_scope_begin();
  float x[64], got[64];
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  tg_tensor *xt = on_cuda(x, 64);
  tg_jit *j = tg_jit_new(chain, NULL, 1, NULL);
  RtDevice *dev = NULL;
  CHECK(rt_device_open("CUDA", &dev) == TG_OK);
  size_t mem_warm = 0, live_warm = 0, rss_warm = 0;
  int failed = 0, wrong = 0, live_changes = 0, mem_changes = 0;
  enum { REPLAYS = 3000, WARM = 20 };
  for (int call = 0; call < REPLAYS && xt && dev; call++) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *out = NULL;
    failed += tg_jit_call(j, &xt, 1, NULL, 0, &out) != TG_OK;
    if (call < 3 || call % 500 == 0) {
      failed += !out || tg_to_host(out, got, sizeof got) != TG_OK;
      for (int i = 0; out && i < 64; i++) wrong += got[i] != x[i] + 50;
    }
    tg_scope_end(sc);
    if (call == WARM) mem_warm = rt_device_mem_used(dev), live_warm = tg_live_tensors(), rss_warm = rss_bytes();
    else if (call > WARM) live_changes += tg_live_tensors() != live_warm, mem_changes += rt_device_mem_used(dev) != mem_warm;
  }
  CHECK_MSG(failed == 0, "chain replays: %s", tg_last_error());
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(tg_jit_kernel_count(j), 50);
  CHECK_EQ_INT(tg_jit_graph_count(j), 2); /* 32, then the 18 left */
  CHECK_EQ_INT(live_changes, 0);
  CHECK_EQ_INT(mem_changes, 0);
  double growth = rss_warm ? ((double)rss_bytes() - (double)rss_warm) / (double)rss_warm : 1;
  CHECK_MSG(growth <= 0.02, "RSS grew %.2f%% over %d replays", growth * 100, REPLAYS);
  tg_jit_free(j);
  tg_scope_end(outer);
}

void gpu_suite_jit_gpu(void) {
  if (!gpu_require_cuda()) return;
  check_graph_vs_direct();
  check_chain_and_memory();
}
