/* bench_tensor.c — the Tensor issue's figures: fused relu(a*b+c) and sum over 16M float32, a column sum of (4096, 4096) and softmax (4096, 1024)
 * against hand-written 2-thread C loops (bench/peer_loops.c, -O3 -march=native), and the cost of realizing a cached
 * 1-element kernel (the tinygrad peer is measured by bench/peer_tinygrad_launch.py in bench/run.sh).
 * Prints "<name> <ours> <unit> <peer>" lines that run.sh turns into bench lines. Best of several runs each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "peer_loops.h"
#include "tinygrad.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what) {
  fprintf(stderr, "bench_tensor: %s: %s\n", what, tg_last_error());
  exit(1);
}

static float *random_floats(size_t n, unsigned seed) {
  float *x = malloc(n * sizeof(float));
  if (!x) exit(1);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 9) / (float)(1u << 23) * 2.0f - 1.0f;
  }
  return x;
}

#define RUNS 7

int main(void) {
  const size_t n = (size_t)16 << 20;
  int64_t shape[1] = {(int64_t)n};
  float *ha = random_floats(n, 1), *hb = random_floats(n, 2), *hc = random_floats(n, 3), *hout = malloc(n * sizeof(float));
  tg_tensor *a = tg_from_floats(ha, shape, 1), *b = tg_from_floats(hb, shape, 1), *c = tg_from_floats(hc, shape, 1);
  if (!a || !b || !c || !hout) die("inputs");

  /* relu(a*b+c): one fused kernel, 3 reads + 1 write of 64 MiB each */
  double best = 1e9, best_peer = 1e9;
  for (int r = 0; r < RUNS; r++) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *t = tg_relu(tg_add(tg_mul(a, b), c));
    double t0 = now();
    if (tg_realize(t) != TG_OK) die("relu(a*b+c)");
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt; /* run 0 compiles */
    tg_scope_end(sc);
    t0 = now();
    peer_relu_fma(ha, hb, hc, hout, n);
    dt = now() - t0;
    if (dt < best_peer) best_peer = dt;
  }
  double bytes = 4.0 * (double)n * sizeof(float);
  printf("elementwise_relu_fma_16M %.2f GB/s c_loop %.2f\n", bytes / best / 1e9, bytes / best_peer / 1e9);

  /* sum of 16M */
  best = best_peer = 1e9;
  double ours_sum = 0, peer_total = 0;
  for (int r = 0; r < RUNS; r++) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *s = tg_sum(a, NULL, 0, false);
    double t0 = now();
    if (tg_realize(s) != TG_OK) die("sum");
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt;
    if (tg_item_double(s, &ours_sum) != TG_OK) die("sum item");
    tg_scope_end(sc);
    t0 = now();
    peer_total = peer_sum(ha, n);
    dt = now() - t0;
    if (dt < best_peer) best_peer = dt;
  }
  bytes = (double)n * sizeof(float);
  printf("sum_16M %.2f GB/s c_loop %.2f\n", bytes / best / 1e9, bytes / best_peer / 1e9);
  if (fabs(ours_sum - peer_total) > 1e-2 * fabs(peer_total) + 10)
    fprintf(stderr, "bench_tensor: note: sum differs: ours %.6g, loop %.6g\n", ours_sum, peer_total);

  /* sum over the rows of a (4096, 4096) matrix (a column sum: bias gradients, batch statistics) */
  {
    int64_t cs_shape[2] = {4096, 4096};
    tg_tensor *m = tg_from_floats(ha, cs_shape, 2);
    float *got = malloc(4096 * sizeof(float));
    if (!m || !got) die("column sum inputs");
    best = best_peer = 1e9;
    for (int r = 0; r < RUNS; r++) {
      tg_scope sc = tg_scope_begin();
      tg_tensor *s = tg_sum(m, TG_AXES(0), false);
      double t0 = now();
      if (tg_realize(s) != TG_OK) die("column sum");
      double dt = now() - t0;
      if (r > 0 && dt < best) best = dt;
      if (r == RUNS - 1 && tg_to_host(s, got, 4096 * sizeof(float)) != TG_OK) die("column sum copy-out");
      tg_scope_end(sc);
      t0 = now();
      peer_sum_axis0(ha, hout, 4096, 4096);
      dt = now() - t0;
      if (dt < best_peer) best_peer = dt;
    }
    for (int col = 0; col < 4096; col += 97)
      if (fabs((double)got[col] - hout[col]) > 1e-3 * fabs((double)hout[col]) + 1e-2) die("column sum differs from the loop");
    free(got);
    bytes = 4096.0 * 4096.0 * sizeof(float);
    printf("sum_axis0_4096x4096 %.2f GB/s c_loop %.2f\n", bytes / best / 1e9, bytes / best_peer / 1e9);
  }

  /* softmax over the last axis of (4096, 1024) and (4096, 4096) (one kernel each: the row rule, FUSE_ROWS) */
  for (int cols = 1024; cols <= 4096; cols *= 4) {
    int64_t sm_shape[2] = {4096, cols};
    tg_tensor *x = tg_from_floats(ha, sm_shape, 2);
    best = best_peer = 1e9;
    for (int r = 0; r < RUNS; r++) {
      tg_scope sc = tg_scope_begin();
      tg_tensor *y = tg_softmax(x, -1);
      double t0 = now();
      if (tg_realize(y) != TG_OK) die("softmax");
      double dt = now() - t0;
      if (r > 0 && dt < best) best = dt;
      tg_scope_end(sc);
      t0 = now();
      peer_softmax(ha, hout, 4096, cols);
      dt = now() - t0;
      if (dt < best_peer) best_peer = dt;
    }
    printf("softmax_4096x%d %.3f ms c_loop %.3f\n", cols, best * 1e3, best_peer * 1e3);
    tg_release(x);
  }

  /* realize of a cached 1-element kernel: graph built, schedule cache hit, kernel cache hit, launch */
  int64_t one[1] = {1};
  float v = 1.0f;
  tg_tensor *e = tg_from_floats(&v, one, 1);
  const int iters = 2000;
  best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      tg_scope sc = tg_scope_begin();
      if (tg_realize(tg_add(e, tg_const_float(1.0))) != TG_OK) die("launch");
      tg_scope_end(sc);
    }
    double dt = (now() - t0) / iters;
    if (r > 0 && dt < best) best = dt;
  }
  printf("launch_1elem %.2f us\n", best * 1e6);
  free(ha), free(hb), free(hc), free(hout);
  return 0;
}
