/* beam_gpu.c — BEAM on CUDA: a small matmul realized on the GPU with BEAM=2 runs a search whose candidates are
 * compiled with NVRTC and timed on the GPU with events; the searched kernel's result must match a host matmul, and
 * the search must have timed candidates. A reduce over a long axis (GROUP/GROUPTOP actions) is searched too. */
#include <math.h>
#include <stdlib.h>

#include "codegen/beam.h"
#include "gpu_test.h"
#include "tinygrad.h"

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0);
  }
}

static void check_matmul(void) {
  enum { M = 64, K = 96, N = 80 };
  static float a[M * K], b[K * N], ref[M * N], got[M * N];
  fill(a, M * K, 7u);
  fill(b, K * N, 11u);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += (double)a[i * K + k] * (double)b[k * N + j];
      ref[i * N + j] = (float)acc;
    }
  tg_scope sc = tg_scope_begin();
  const int64_t sa[2] = {M, K}, sb[2] = {K, N};
  tg_tensor *ta = tg_to(tg_from_data(a, TG_FLOAT32, sa, 2), "CUDA");
  tg_tensor *tb = tg_to(tg_from_data(b, TG_FLOAT32, sb, 2), "CUDA");
  CHECK(ta && tb && tg_realize(ta) == TG_OK && tg_realize(tb) == TG_OK); /* the copies run before the search */
  BeamStats before = beam_stats();
  test_setenv("BEAM", "2");
  tg_tensor *c = ta && tb ? tg_matmul(ta, tb) : NULL;
  tg_status st = c ? tg_to_host(c, got, sizeof got) : TG_ERR_RUNTIME;
  test_unsetenv("BEAM");
  CHECK_MSG(st == TG_OK, "BEAM=2 matmul on CUDA: %s", tg_last_error());
  BeamStats after = beam_stats();
  CHECK_MSG(after.searches + after.cache_hits > before.searches + before.cache_hits, "no BEAM search ran");
  if (after.searches > before.searches)
    CHECK_MSG(after.candidates_timed > before.candidates_timed + 10, "the search timed %ld candidates",
              after.candidates_timed - before.candidates_timed);
  double err = 0;
  for (int i = 0; st == TG_OK && i < M * N; i++) err = fmax(err, fabs((double)got[i] - (double)ref[i]));
  CHECK_MSG(st == TG_OK && err < 1e-3, "BEAM matmul max error %g", err);
  tg_scope_end(sc);
}

static void check_sum(void) {
  enum { R = 8, C = 4096 };
  static float x[R * C], got[R];
  fill(x, R * C, 5u);
  tg_scope sc = tg_scope_begin();
  const int64_t sx[2] = {R, C};
  tg_tensor *t = tg_to(tg_from_data(x, TG_FLOAT32, sx, 2), "CUDA");
  CHECK(t && tg_realize(t) == TG_OK);
  test_setenv("BEAM", "2");
  int axis = 1;
  tg_tensor *s = t ? tg_sum(t, &axis, 1, false) : NULL;
  tg_status st = s ? tg_to_host(s, got, sizeof got) : TG_ERR_RUNTIME;
  test_unsetenv("BEAM");
  CHECK_MSG(st == TG_OK, "BEAM=2 row sum on CUDA: %s", tg_last_error());
  for (int r = 0; st == TG_OK && r < R; r++) {
    double acc = 0;
    for (int k = 0; k < C; k++) acc += x[r * C + k];
    CHECK_NEAR(got[r], acc, 1e-3);
  }
  tg_scope_end(sc);
}

/* without BEAM: the heuristic's warp-per-row reduce (opt_heuristic.c gpu_row_reduce) on rows long enough to get it */
static void check_row_reduce_heuristic(void) {
  enum { R = 4096, C = 1024 };
  float *x = malloc((size_t)R * C * sizeof *x), got[R];
  fill(x, (size_t)R * C, 3u);
  tg_scope sc = tg_scope_begin();
  const int64_t sx[2] = {R, C};
  int axis = 1;
  tg_tensor *t = tg_to(tg_from_data(x, TG_FLOAT32, sx, 2), "CUDA");
  tg_tensor *s = t ? tg_sum(t, &axis, 1, false) : NULL;
  tg_status st = s ? tg_to_host(s, got, sizeof got) : TG_ERR_RUNTIME;
  CHECK_MSG(st == TG_OK, "row sum 4096x1024 on CUDA: %s", tg_last_error());
  double err = 0;
  for (int r = 0; st == TG_OK && r < R; r++) {
    double acc = 0;
    for (int k = 0; k < C; k++) acc += x[(size_t)r * C + k];
    err = fmax(err, fabs(acc - (double)got[r]));
  }
  CHECK_MSG(st == TG_OK && err < 1e-3, "row sum 4096x1024 max error %g", err);
  tg_scope_end(sc);
  free(x);
}

void gpu_suite_beam_gpu(void) {
  if (!gpu_require_cuda()) return;
  check_row_reduce_heuristic();
  /* a fresh search: the candidates are timed here, not answered by a cache entry of an earlier run */
  test_setenv("IGNORE_BEAM_CACHE", "1");
  check_matmul();
  check_sum();
  test_unsetenv("IGNORE_BEAM_CACHE");
}
