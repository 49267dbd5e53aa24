/* bench_gpu.c — the GPU issue's figures for tinygrad.c on the default device (run with DEV=CUDA): copy kernel,
 * fused relu(a*b+c) and sum over 2^28 float32, softmax 4096x4096, matmul fp16/bf16 at 4096 and 8192 and fp32 at 4096,
 * conv2d (64x32x28x28, 64 3x3 filters, padding 1). Each figure: one warm-up realize (compiles), then realizes
 * repeated for BENCH_SECONDS (default 1) or at most 200 runs, the device synchronized after each; the median run,
 * timed as bench/peer_torch_gpu.py times torch: the device's time between marks (CUDA events) queued before and
 * after the call. Inputs random (never zeros). Prints "<name> <value> <unit>" lines (bench/run_gpu.sh pairs them with
 * torch's). realize_1_kernel: a 16-element kernel's realize (the fixed cost of an eager call), with its host part
 * (tg_realize's return: schedule lookup, buffers, launch) and the wall until the sync returns; the conv prints the
 * same with the graph's build (tg_conv2d, outside the timed region); conv2d_64x32x28x28_k3_call is the whole eager
 * call, the build inside the marks (torch's timed call holds its dispatch too), and conv2d_64x32x28x28_k3_jit the conv
 * replayed by the JIT (tinygrad's speed_v_torch method: no build, the frozen kernels launched as a CUDA graph).
 * Arguments: figure names to run (default all). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int nwant;
static char **wanted;
static bool want(const char *name) {
  if (!nwant) return true;
  for (int i = 0; i < nwant; i++)
    if (strcmp(wanted[i], name) == 0) return true;
  return false;
}

static void fail(const char *name) { printf("%s failed: %s\n", name, tg_last_error()); }

/* a random tensor of `dtype` on the default device: uniform [-1, 1) drawn on the device, cast */
static tg_tensor *random_tensor(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  tg_tensor *r = tg_uniform(shape, ndim, -1.0, 1.0, TG_FLOAT32);
  tg_tensor *t = r && dtype != TG_FLOAT32 ? tg_cast(r, dtype) : r;
  tg_tensor *c = t ? tg_contiguous(t) : NULL;
  if (c && tg_realize(c) != TG_OK) c = NULL;
  return c;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { MAX_RUNS = 100000 };
/* the timed runs' limits: BENCH_SECONDS (default 1) of runs, at most BENCH_RUNS (default 200; more for a profiler's
 * samples), at least 5 */
static int max_runs(double *budget) {
  *budget = getenv("BENCH_SECONDS") ? atof(getenv("BENCH_SECONDS")) : 1.0;
  int n = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 200;
  return n < 5 ? 5 : n > MAX_RUNS ? MAX_RUNS : n;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return v[n / 2];
}

typedef tg_tensor *(*Graph)(tg_tensor *const *in);

/* time_graph's medians: tg_realize's return (the launches queued), the wall from before tg_realize until
 * tg_synchronize returns, and the graph's build (the tensor calls, before the first mark) */
static double last_host, last_wall, last_build;

/* median seconds of realizing graph(in) (a new graph each run: the schedule and kernel caches hit after run 0), timed
 * as the peer times torch: marks on the device's stream before tg_realize and after it (torch.cuda.Event around the
 * call), the device's time between them. The graph is built before the first mark, as torch's timed region holds
 * only the call. */
static bool mark_before_build; /* time_graph's first mark before g(in): the whole eager call, as torch's */
static double time_graph(const char *name, Graph g, tg_tensor *const *in) {
  static double runs[MAX_RUNS], host[MAX_RUNS], wall[MAX_RUNS], build[MAX_RUNS];
  double budget, start = now();
  int limit = max_runs(&budget), n = 0;
  for (int r = 0; r <= limit; r++) {
    tg_scope sc = tg_scope_begin();
    tg_mark *m0 = mark_before_build ? tg_mark_record(tg_device(in[0])) : NULL, *m1 = NULL;
    double tb = now();
    tg_tensor *out = g(in);
    tb = now() - tb;
    const char *dev = out ? tg_device(out) : NULL;
    if (!mark_before_build) m0 = dev ? tg_mark_record(dev) : NULL;
    double t0 = now();
    tg_status st = m0 ? tg_realize(out) : TG_ERR_RUNTIME;
    double th = now() - t0, dt = 0;
    if (st == TG_OK) st = (m1 = tg_mark_record(dev)) ? tg_mark_elapsed(m0, m1, &dt) : TG_ERR_RUNTIME;
    if (st == TG_OK) st = tg_synchronize(dev);
    double tw = now() - t0;
    tg_mark_free(m0);
    tg_mark_free(m1);
    tg_scope_end(sc);
    if (st != TG_OK) {
      fail(name);
      return -1;
    }
    if (r > 0) host[n] = th, wall[n] = tw, build[n] = tb, runs[n++] = dt;
    if (n >= limit || (n >= 5 && now() - start > budget)) break;
  }
  last_build = median(build, n);
  last_host = median(host, n);
  last_wall = median(wall, n);
  return median(runs, n);
}

/* The same through the JIT (tinygrad's speed_v_torch times TinyJit(lambda: f(...).realize()) against torch eager):
 * fn builds the graph, the replays after the capture launch the frozen kernels (a CUDA graph); marks around
 * tg_jit_call. */
typedef struct JitGraph { Graph g; } JitGraph;
static tg_status jit_graph_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                                tg_tensor **out, size_t nout) {
  (void)nin, (void)vars, (void)nvars, (void)nout;
  out[0] = ((JitGraph *)user)->g(in);
  return out[0] ? TG_OK : tg_last_status();
}

static double time_jit(const char *name, Graph g, tg_tensor *const *in, size_t nin) {
  static double runs[MAX_RUNS];
  JitGraph jg = {g};
  tg_jit *j = tg_jit_new(jit_graph_step, &jg, 1, NULL);
  const char *dev = tg_device(in[0]);
  double budget, start = now();
  int limit = max_runs(&budget), n = 0;
  tg_status st = j ? TG_OK : TG_ERR_RUNTIME;
  for (int r = 0; st == TG_OK && r <= limit + 2; r++) { /* calls 0-2: run, capture, first replay */
    tg_scope sc = tg_scope_begin();
    tg_tensor *out = NULL;
    tg_mark *m0 = tg_mark_record(dev), *m1 = NULL;
    double dt = 0;
    st = m0 ? tg_jit_call(j, in, nin, NULL, 0, &out) : TG_ERR_RUNTIME;
    if (st == TG_OK) st = (m1 = tg_mark_record(dev)) ? tg_mark_elapsed(m0, m1, &dt) : TG_ERR_RUNTIME;
    tg_mark_free(m0);
    tg_mark_free(m1);
    tg_scope_end(sc);
    if (st == TG_OK && r > 2) runs[n++] = dt;
    if (n >= limit || (n >= 5 && now() - start > budget)) break;
  }
  tg_jit_free(j);
  if (st != TG_OK || n == 0) {
    fail(name);
    return -1;
  }
  return median(runs, n);
}

static tg_tensor *g_copy(tg_tensor *const *in) { return tg_neg(in[0]); }
static tg_tensor *g_relu_fma(tg_tensor *const *in) { return tg_relu(tg_add(tg_mul(in[0], in[1]), in[2])); }
static tg_tensor *g_sum(tg_tensor *const *in) { return tg_sum(in[0], NULL, 0, false); }
static tg_tensor *g_softmax(tg_tensor *const *in) { return tg_softmax(in[0], -1); }
static tg_tensor *g_matmul(tg_tensor *const *in) { return tg_matmul(in[0], in[1]); }
static tg_tensor *g_conv(tg_tensor *const *in) {
  return tg_conv2d(in[0], in[1], NULL, 1, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, (const int64_t[]){1, 1});
}

int main(int argc, char **argv) {
  nwant = argc - 1;
  wanted = argv + 1;
  tg_manual_seed(1);
  const int64_t n = (int64_t)1 << 28;
  if (want("copy_kernel_2^28") || want("relu_fma_2^28") || want("sum_2^28")) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[3] = {random_tensor(&n, 1, TG_FLOAT32), random_tensor(&n, 1, TG_FLOAT32),
                        random_tensor(&n, 1, TG_FLOAT32)};
    if (!in[0] || !in[1] || !in[2]) fail("inputs 2^28");
    double t;
    if (in[2] && want("copy_kernel_2^28") && (t = time_graph("copy_kernel_2^28", g_copy, in)) > 0)
      printf("copy_kernel_2^28 %.4g GB/s\n", 2.0 * 4 * (double)n / t / 1e9);
    if (in[2] && want("relu_fma_2^28") && (t = time_graph("relu_fma_2^28", g_relu_fma, in)) > 0)
      printf("relu_fma_2^28 %.4g GB/s\n", 4.0 * 4 * (double)n / t / 1e9);
    if (in[2] && want("sum_2^28") && (t = time_graph("sum_2^28", g_sum, in)) > 0)
      printf("sum_2^28 %.4g GB/s\n", 4.0 * (double)n / t / 1e9);
    tg_scope_end(sc);
  }
  if (want("realize_1_kernel")) { /* the fixed cost of one eager realize: a 16-element kernel, launched and waited for */
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[1] = {random_tensor(TG_SHAPE(16), TG_FLOAT32)};
    double t = in[0] ? time_graph("realize_1_kernel", g_copy, in) : -1;
    if (t > 0) printf("realize_1_kernel %.1f us (host %.1f, wall with the sync %.1f)\n", t * 1e6, last_host * 1e6,
                      last_wall * 1e6);
    tg_scope_end(sc);
  }
  if (want("softmax_4096x4096")) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[1] = {random_tensor(TG_SHAPE(4096, 4096), TG_FLOAT32)};
    double t = in[0] ? time_graph("softmax_4096x4096", g_softmax, in) : -1;
    if (t > 0) printf("softmax_4096x4096 %.4g GB/s\n", 2.0 * 4 * 4096 * 4096 / t / 1e9);
    tg_scope_end(sc);
  }
  static const struct { const char *dt; tg_dtype dtype; int64_t n; } mms[] = {
      {"fp16", TG_FLOAT16, 4096}, {"fp16", TG_FLOAT16, 8192}, {"bf16", TG_BFLOAT16, 4096},
      {"bf16", TG_BFLOAT16, 8192}, {"fp32", TG_FLOAT32, 4096}};
  for (size_t i = 0; i < sizeof mms / sizeof mms[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "matmul_%s_%lld", mms[i].dt, (long long)mms[i].n);
    if (!want(name)) continue;
    tg_scope sc = tg_scope_begin();
    int64_t sh[2] = {mms[i].n, mms[i].n};
    tg_tensor *in[2] = {random_tensor(sh, 2, mms[i].dtype), random_tensor(sh, 2, mms[i].dtype)};
    double t = in[0] && in[1] ? time_graph(name, g_matmul, in) : -1;
    if (t > 0) printf("%s %.4g TFLOPS\n", name, 2.0 * (double)mms[i].n * mms[i].n * mms[i].n / t / 1e12);
    tg_scope_end(sc);
  }
  if (want("conv2d_64x32x28x28_k3")) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[2] = {random_tensor(TG_SHAPE(64, 32, 28, 28), TG_FLOAT32),
                        random_tensor(TG_SHAPE(64, 32, 3, 3), TG_FLOAT32)};
    double t = in[0] && in[1] ? time_graph("conv2d_64x32x28x28_k3", g_conv, in) : -1;
    const double flops = 2.0 * 64 * 64 * 28 * 28 * 32 * 9;
    if (t > 0)
      printf("conv2d_64x32x28x28_k3 %.4g GFLOPS\nconv2d_64x32x28x28_k3_us %.1f us (host %.1f, wall with the sync %.1f; "
             "the graph's build before it %.1f)\n", flops / t / 1e9, t * 1e6, last_host * 1e6, last_wall * 1e6,
             last_build * 1e6);
    mark_before_build = true; /* the eager call with its graph's build inside the marks */
    double tc = t > 0 ? time_graph("conv2d_64x32x28x28_k3_call", g_conv, in) : -1;
    mark_before_build = false;
    if (tc > 0) printf("conv2d_64x32x28x28_k3_call %.4g GFLOPS\n", flops / tc / 1e9);
    double tj = t > 0 ? time_jit("conv2d_64x32x28x28_k3_jit", g_conv, in, 2) : -1;
    if (tj > 0) printf("conv2d_64x32x28x28_k3_jit %.4g GFLOPS\n", flops / tj / 1e9);
    tg_scope_end(sc);
  }
  return 0;
}
