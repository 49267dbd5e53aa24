/* bench_matmul.c — issue 5's kernel figures through the public API: float32 C = A@B for square N (256 ... 2048),
 * a batched 16 x 256x256 matmul, and a conv2d forward (batch 64, 32->64 channels, 28x28, 3x3, padding 1), in GFLOPS.
 * bench/run.sh runs it next to its peers (bench/peer_matmul.py: OpenBLAS through numpy, PyTorch), once as the library
 * chooses kernels (the heuristic) and once with BEAM=2 in the environment.
 *
 * Per figure: the inputs are created from host data and realized first; the first realize of the graph is timed
 * alone (it compiles, or searches with BEAM); then the same graph is rebuilt and realized again and again (schedule
 * and kernel caches hit) until BENCH_SECONDS have passed (at least once, at most 1000 times, like the peers: 50
 * runs of a 1 ms figure sampled 50 ms, too short on a shared machine); the best time counts. Only tg_realize is in
 * the timed region (building the lazy graph is outside). Each result is checked against sampled dot products in
 * double precision, so a wrong kernel never gives a number.
 *
 * usage: bench_matmul [-t seconds] [name ...]   (no name: all figures)
 * prints "<name> <GFLOPS> GFLOPS first_s=<first realize> best_ms=<best> runs=<timed runs>" or, when the library
 * fails, "<name> error <tg_last_error()>" (exit status 1).
 *
 * bench_matmul --clock measures the core clock for run.sh's peak FLOP/s (a VM's /proc/cpuinfo shows the nominal
 * clock, not the turbo one the cores run at): one thread per online CPU, all at once, times a chain of dependent
 * 64-bit integer multiplies (3 cycles each on x86-64 cores since Nehalem and Zen) and a chain of dependent register
 * adds (1 cycle each), in short slices (the fastest counts); prints "clock_mhz <slowest thread, multiply chain>
 * add_chain_mhz <same, add chain> threads <n>".
 * (Adds of an immediate are no clock: recent Intel cores fold them at rename, measured here as 20+ GHz.) */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tinygrad.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static float *random_floats(size_t n, unsigned seed) {
  float *x = malloc(n * sizeof(float));
  if (!x) {
    fprintf(stderr, "bench_matmul: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 8) / (float)(1u << 24); /* [0, 1) like torch.rand / numpy random */
  }
  return x;
}

/* One figure: a graph over realized inputs, its FLOP count and a host check of its result. */
typedef enum figure_kind { FIG_MATMUL, FIG_CONV2D } figure_kind;
typedef struct figure {
  const char *name;
  figure_kind kind;
  int64_t batch, n;                   /* matmul: batch (0: plain 2-d) of n x n @ n x n */
  int64_t cin, cout, hw, k, pad;      /* conv2d: x (batch, cin, hw, hw), w (cout, cin, k, k), stride 1 */
} figure;

static const figure FIGURES[] = {
    {"matmul_256", FIG_MATMUL, 0, 256, 0, 0, 0, 0, 0},
    {"matmul_512", FIG_MATMUL, 0, 512, 0, 0, 0, 0, 0},
    {"matmul_1024", FIG_MATMUL, 0, 1024, 0, 0, 0, 0, 0},
    {"matmul_2048", FIG_MATMUL, 0, 2048, 0, 0, 0, 0, 0},
    {"matmul_b16_256", FIG_MATMUL, 16, 256, 0, 0, 0, 0, 0},
    {"conv2d_64x32x28x28_k3", FIG_CONV2D, 64, 0, 32, 64, 28, 3, 1},
};
#define NFIGURES (sizeof FIGURES / sizeof FIGURES[0])

static double figure_flops(const figure *f) {
  if (f->kind == FIG_MATMUL) return (double)(f->batch ? f->batch : 1) * 2.0 * (double)f->n * (double)f->n * (double)f->n;
  return 2.0 * (double)f->batch * (double)f->cout * (double)(f->hw * f->hw) * (double)f->cin * (double)(f->k * f->k);
}

typedef struct operands {
  float *ha, *hb;       /* host copies: matmul A, B; conv2d x, w */
  tg_tensor *a, *b;     /* realized inputs */
  int64_t out_numel;
} operands;

static tg_tensor *realized_input(const float *data, const int64_t *shape, size_t ndim) {
  tg_tensor *t = tg_from_floats(data, shape, ndim);
  if (t && tg_realize(t) != TG_OK) {
    tg_release(t);
    return NULL;
  }
  return t;
}

static bool make_operands(const figure *f, operands *op) {
  memset(op, 0, sizeof *op);
  if (f->kind == FIG_MATMUL) {
    int64_t bs = f->batch ? f->batch : 1, n = f->n;
    int64_t shape[3] = {bs, n, n};
    const int64_t *sh = f->batch ? shape : shape + 1;
    size_t ndim = f->batch ? 3 : 2, numel = (size_t)(bs * n * n);
    op->ha = random_floats(numel, 1);
    op->hb = random_floats(numel, 2);
    op->a = realized_input(op->ha, sh, ndim);
    op->b = realized_input(op->hb, sh, ndim);
    op->out_numel = bs * n * n;
  } else {
    int64_t xs[4] = {f->batch, f->cin, f->hw, f->hw}, ws[4] = {f->cout, f->cin, f->k, f->k};
    op->ha = random_floats((size_t)(xs[0] * xs[1] * xs[2] * xs[3]), 3);
    op->hb = random_floats((size_t)(ws[0] * ws[1] * ws[2] * ws[3]), 4);
    op->a = realized_input(op->ha, xs, 4);
    op->b = realized_input(op->hb, ws, 4);
    op->out_numel = f->batch * f->cout * f->hw * f->hw;
  }
  return op->a && op->b;
}

static void free_operands(operands *op) {
  tg_release(op->a);
  tg_release(op->b);
  free(op->ha);
  free(op->hb);
}

/* The lazy graph of the figure (owned by the open scope). */
static tg_tensor *build_graph(const figure *f, const operands *op) {
  if (f->kind == FIG_MATMUL) return tg_matmul(op->a, op->b);
  const int64_t stride[2] = {1, 1}, padding[2] = {f->pad, f->pad}, dilation[2] = {1, 1};
  return tg_conv2d(op->a, op->b, NULL, 1, stride, padding, dilation);
}

/* The exact value of output element `idx` (C order), in double precision. */
static double reference_value(const figure *f, const operands *op, int64_t idx) {
  double acc = 0;
  if (f->kind == FIG_MATMUL) {
    int64_t n = f->n, bi = idx / (n * n), i = idx / n % n, j = idx % n;
    const float *a = op->ha + bi * n * n, *b = op->hb + bi * n * n;
    for (int64_t k = 0; k < n; k++) acc += (double)a[i * n + k] * (double)b[k * n + j];
    return acc;
  }
  int64_t hw = f->hw, x = idx % hw, y = idx / hw % hw, co = idx / (hw * hw) % f->cout, ni = idx / (hw * hw * f->cout);
  for (int64_t ci = 0; ci < f->cin; ci++)
    for (int64_t ky = 0; ky < f->k; ky++)
      for (int64_t kx = 0; kx < f->k; kx++) {
        int64_t iy = y + ky - f->pad, ix = x + kx - f->pad;
        if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
        acc += (double)op->ha[((ni * f->cin + ci) * hw + iy) * hw + ix] *
               (double)op->hb[((co * f->cin + ci) * f->k + ky) * f->k + kx];
      }
  return acc;
}

/* 64 sampled elements (and the first and last) against the reference; inputs are in [0, 1), so every term is
 * non-negative and a relative tolerance on the value itself holds for float32 accumulation (n * eps < 1e-3). */
static bool check_result(const figure *f, const operands *op, tg_tensor *out, char *why, size_t cap) {
  float *host = malloc((size_t)op->out_numel * sizeof(float));
  if (!host) {
    snprintf(why, cap, "out of memory");
    return false;
  }
  if (tg_to_host(out, host, (size_t)op->out_numel * sizeof(float)) != TG_OK) {
    snprintf(why, cap, "%s", tg_last_error());
    free(host);
    return false;
  }
  bool ok = true;
  unsigned seed = 7;
  for (int s = 0; s < 66 && ok; s++) {
    int64_t idx = s == 0 ? 0 : op->out_numel - 1;
    if (s >= 2) {
      seed = seed * 1664525u + 1013904223u;
      idx = (int64_t)(seed % (unsigned)op->out_numel);
    }
    double want = reference_value(f, op, idx), got = host[idx];
    if (!(fabs(got - want) <= 1e-3 * fabs(want) + 1e-4)) {
      snprintf(why, cap, "wrong result: element %lld is %.6g, expected %.6g", (long long)idx, got, want);
      ok = false;
    }
  }
  free(host);
  return ok;
}

/* Runs one figure; prints its line. Returns false when the library failed or the result was wrong. */
static bool run_figure(const figure *f, double budget) {
  operands op;
  if (!make_operands(f, &op)) {
    printf("%s error creating inputs: %s\n", f->name, tg_last_error());
    free_operands(&op);
    return false;
  }
  char why[512] = "";
  bool ok = true;
  /* first realize: compile (or BEAM search), then one run; its result is checked */
  tg_scope sc = tg_scope_begin();
  tg_tensor *out = build_graph(f, &op);
  double t0 = now();
  tg_status st = out ? tg_realize(out) : tg_last_status();
  double first = now() - t0;
  if (!out || st != TG_OK) snprintf(why, sizeof why, "%s", tg_last_error()), ok = false;
  if (ok) ok = check_result(f, &op, out, why, sizeof why);
  tg_scope_end(sc);

  double best = INFINITY, spent = 0;
  int runs = 0;
  while (ok && (runs < 1 || (spent < budget && runs < 1000))) {
    sc = tg_scope_begin();
    out = build_graph(f, &op);
    t0 = now();
    st = out ? tg_realize(out) : tg_last_status();
    double dt = now() - t0;
    if (!out || st != TG_OK) snprintf(why, sizeof why, "%s", tg_last_error()), ok = false;
    if (ok && runs == 0) ok = check_result(f, &op, out, why, sizeof why); /* the cached kernel too */
    tg_scope_end(sc);
    spent += dt, runs++;
    if (dt < best) best = dt;
  }
  if (ok)
    printf("%s %.2f GFLOPS first_s=%.3f best_ms=%.3f runs=%d\n", f->name, figure_flops(f) / best / 1e9, first,
           best * 1e3, runs);
  else
    printf("%s error %s\n", f->name, why);
  fflush(stdout);
  free_operands(&op);
  return ok;
}

/* ---- clock measurement ---- */
typedef struct clock_sample { double mul_mhz, add_mhz; uint64_t sink; } clock_sample;

/* One register-carried step the compiler cannot fold or reorder: the empty asm claims to change x. */
#define MUL_STEP do { x *= y; __asm__ volatile("" : "+r"(x)); } while (0)
#define ADD_STEP do { x += y; __asm__ volatile("" : "+r"(x)); } while (0)

/* Many short slices (~2 ms) of each chain; the fastest slice counts: another process that takes the core for a while
 * (this machine is shared) only spoils the slices it lands in, and no slice can run faster than the clock. */
static void *clock_thread(void *arg) {
  clock_sample *c = arg;
  const long iters = 100000; /* 8 steps each: 2.4M cycles of multiplies, 0.8M of adds */
  uint64_t x = 1, y = 3;
  __asm__ volatile("" : "+r"(y)); /* y is opaque: no immediate operand */
  for (int slice = 0; slice < 150; slice++) {
    double t0 = now();
    for (long i = 0; i < iters; i++) {
      MUL_STEP; MUL_STEP; MUL_STEP; MUL_STEP; MUL_STEP; MUL_STEP; MUL_STEP; MUL_STEP;
    }
    double t1 = now();
    for (long i = 0; i < iters; i++) {
      ADD_STEP; ADD_STEP; ADD_STEP; ADD_STEP; ADD_STEP; ADD_STEP; ADD_STEP; ADD_STEP;
    }
    double t2 = now();
    double mul = (double)iters * 8 * 3 / (t1 - t0) / 1e6, add = (double)iters * 8 / (t2 - t1) / 1e6;
    if (mul > c->mul_mhz) c->mul_mhz = mul;
    if (add > c->add_mhz) c->add_mhz = add;
  }
  c->sink = x;
  return NULL;
}

/* --clock: every online CPU busy at once (as in a 2-thread matmul); the slowest thread counts. */
static int measure_clock(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > 256) n = 256;
  pthread_t th[256];
  clock_sample cs[256];
  memset(cs, 0, sizeof cs);
  long started = 0;
  for (long i = 0; i < n; i++)
    if (pthread_create(&th[i], NULL, clock_thread, &cs[i]) == 0) started++;
    else break;
  double mul = INFINITY, add = INFINITY;
  for (long i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    if (cs[i].mul_mhz < mul) mul = cs[i].mul_mhz;
    if (cs[i].add_mhz < add) add = cs[i].add_mhz;
  }
  if (started == 0) {
    fprintf(stderr, "bench_matmul: --clock: no thread could start\n");
    return 1;
  }
  printf("clock_mhz %.0f add_chain_mhz %.0f threads %ld\n", mul, add, started);
  return 0;
}

/* The figure called name, or NULL (with the known names on stderr). */
static const figure *find_figure(const char *name) {
  for (size_t i = 0; i < NFIGURES; i++)
    if (strcmp(FIGURES[i].name, name) == 0) return &FIGURES[i];
  fprintf(stderr, "bench_matmul: unknown figure %s (known:", name);
  for (size_t i = 0; i < NFIGURES; i++) fprintf(stderr, " %s", FIGURES[i].name);
  fprintf(stderr, ")\n");
  return NULL;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--clock") == 0) return measure_clock();
  double budget = 2.0;
  const char *env = getenv("BENCH_SECONDS");
  if (env) budget = atof(env);
  int first_name = 1;
  if (argc > 2 && strcmp(argv[1], "-t") == 0) budget = atof(argv[2]), first_name = 3;
  bool all_ok = true;
  if (first_name >= argc) /* no name: every figure */
    for (size_t i = 0; i < NFIGURES; i++) all_ok &= run_figure(&FIGURES[i], budget);
  for (int a = first_name; a < argc; a++) {
    const figure *f = find_figure(argv[a]);
    if (!f) return 2;
    all_ok &= run_figure(f, budget);
  }
  if (tg_live_tensors() != 0) fprintf(stderr, "bench_matmul: %zu tensor handles leaked\n", tg_live_tensors());
  return all_ok ? 0 : 1;
}
