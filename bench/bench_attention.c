/* bench_attention.c — the attention and MoE figures of issue 18 through the public API: tg_flash_attention against
 * tg_attention (the plain form with materialized scores) on a decode step and a prefill, and a gpt-oss-style MoE
 * decode step (tg_moe_ffn). bench/run.sh prints them next to PyTorch (bench/peer_torch_attention.py, same shapes,
 * 2 threads).
 *
 * Shapes (llama-3.2-1B-like attention: 32 query heads, 8 kv heads, head dim 64, float32):
 *   attn_decode_s4096   q (1, 32, 1, 64), k/v (1, 8, 4096, 64), causal at start 4095
 *   attn_prefill_t512   q (1, 32, 512, 64), k/v (1, 8, 512, 64), causal
 *   attn_decode_s4096_w128, attn_prefill_t2048_w128   the same with a sliding window of 128 (gpt-oss's sliding layers)
 *   moe_decode_e32      x (1, 1024), 32 experts of gate/up (1024, 1024), down (1024, 1024), top-4, gpt-oss gating
 *                       and clamped SwiGLU, float32 weights
 * Per figure the inputs are realized first; the first realize is timed apart (compile); then the graph is rebuilt
 * and realized until BENCH_SECONDS (default 2) have passed (at least 3 runs); the best run counts (this 2-core
 * machine is shared). Flash and plain are checked against each other before timing.
 * usage: bench_attention [-t seconds]; prints "<name> <form> <best ms> ms first_s=<s> runs=<n>" per form. */
#include <math.h>
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

static tg_tensor *rnd(const int64_t *shape, size_t ndim, unsigned seed, float amp) {
  int64_t n = 1;
  for (size_t i = 0; i < ndim; i++) n *= shape[i];
  float *x = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = amp * ((float)(seed >> 8) / (float)(1u << 24) * 2 - 1);
  }
  tg_tensor *t = tg_from_floats(x, shape, ndim);
  free(x);
  if (!t || tg_realize(t) != TG_OK) {
    fprintf(stderr, "bench_attention: input: %s\n", tg_last_error());
    exit(1);
  }
  return t;
}

typedef struct attn_fig {
  const char *name;
  int64_t h, kvh, t, s, d, window;
} attn_fig;

typedef tg_tensor *(*attn_fn)(const tg_tensor *, const tg_tensor *, const tg_tensor *, const tg_attention_opts *);

static double secs = 2.0;

/* times fn on the figure: best ms, first realize in *first_s, runs in *runs; negative on error */
static double time_attn(attn_fn fn, tg_tensor *q, tg_tensor *k, tg_tensor *v, const tg_attention_opts *o,
                        double *first_s, int *runs) {
  double best = INFINITY, start = now();
  *runs = 0;
  for (int i = 0; i < 1000; i++) {
    tg_tensor *r = fn(q, k, v, o);
    double t0 = now();
    tg_status st = r ? tg_realize(r) : TG_ERR_INVALID_ARGUMENT;
    double t1 = now();
    tg_release(r);
    if (st != TG_OK) return -1;
    if (i == 0) *first_s = t1 - t0;
    else {
      best = fmin(best, (t1 - t0) * 1e3);
      ++*runs;
    }
    if (i >= 3 && now() - start > secs) break;
  }
  return best;
}

static bool agree(tg_tensor *a, tg_tensor *b) {
  int64_t n = tg_numel(a);
  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
  bool ok = tg_to_host(a, x, sizeof(float) * (size_t)n) == TG_OK && tg_to_host(b, y, sizeof(float) * (size_t)n) == TG_OK;
  for (int64_t i = 0; ok && i < n; i++) ok = fabsf(x[i] - y[i]) <= 1e-4f * (1 + fabsf(y[i]));
  free(x);
  free(y);
  return ok;
}

static int run_attn(const attn_fig *f) {
  tg_tensor *q = rnd(TG_SHAPE(1, f->h, f->t, f->d), 11, 1), *k = rnd(TG_SHAPE(1, f->kvh, f->s, f->d), 12, 1);
  tg_tensor *v = rnd(TG_SHAPE(1, f->kvh, f->s, f->d), 13, 1);
  tg_attention_opts o = {.causal = true, .start = TG_SI(f->s - f->t), .window = f->window};
  tg_tensor *a = tg_flash_attention(q, k, v, &o), *b = tg_attention(q, k, v, &o);
  if (!a || !b || !agree(a, b)) {
    printf("%s error flash and plain differ or failed: %s\n", f->name, tg_last_error());
    return 1;
  }
  tg_release(a);
  tg_release(b);
  const char *forms[2] = {"flash", "plain"};
  attn_fn fns[2] = {tg_flash_attention, tg_attention};
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    double first = 0;
    int runs = 0;
    double ms = time_attn(fns[i], q, k, v, &o, &first, &runs);
    if (ms < 0) {
      printf("%s error %s: %s\n", f->name, forms[i], tg_last_error());
      rc = 1;
      continue;
    }
    printf("%s %s %.3f ms first_s=%.3f runs=%d\n", f->name, forms[i], ms, first, runs);
  }
  tg_release(q);
  tg_release(k);
  tg_release(v);
  return rc;
}

static int run_moe(void) {
  const int64_t e = 32, d = 1024, hd = 1024;
  tg_tensor *gw = rnd(TG_SHAPE(e, hd, d), 21, 0.05f), *uw = rnd(TG_SHAPE(e, hd, d), 22, 0.05f);
  tg_tensor *dw = rnd(TG_SHAPE(e, d, hd), 23, 0.05f), *rw = rnd(TG_SHAPE(e, d), 24, 0.1f);
  tg_tensor *x = rnd(TG_SHAPE(1, d), 25, 1);
  tg_moe_opts o = {.k = 4, .act = TG_MOE_SWIGLU_OAI};
  double best = INFINITY, first = 0, start = now();
  int runs = 0;
  for (int i = 0; i < 1000; i++) {
    tg_tensor *r = tg_moe_ffn(x, rw, gw, uw, dw, &o);
    double t0 = now();
    tg_status st = r ? tg_realize(r) : TG_ERR_INVALID_ARGUMENT;
    double t1 = now();
    tg_release(r);
    if (st != TG_OK) {
      printf("moe_decode_e32 error %s\n", tg_last_error());
      return 1;
    }
    if (i == 0) first = t1 - t0;
    else best = fmin(best, (t1 - t0) * 1e3), runs++;
    if (i >= 3 && now() - start > secs) break;
  }
  printf("moe_decode_e32 ours %.3f ms first_s=%.3f runs=%d\n", best, first, runs);
  tg_release(gw);
  tg_release(uw);
  tg_release(dw);
  tg_release(rw);
  tg_release(x);
  return 0;
}

int main(int argc, char **argv) {
  const char *env = getenv("BENCH_SECONDS");
  if (env) secs = atof(env);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-t") && i + 1 < argc) secs = atof(argv[++i]);
  const attn_fig figs[] = {{"attn_decode_s4096", 32, 8, 1, 4096, 64, 0}, {"attn_prefill_t512", 32, 8, 512, 512, 64, 0},
                           {"attn_decode_s4096_w128", 32, 8, 1, 4096, 64, 128},
                           {"attn_prefill_t2048_w128", 32, 8, 2048, 2048, 64, 128}};
  int rc = 0;
  for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) rc |= run_attn(&figs[i]);
  rc |= run_moe();
  return rc;
}
