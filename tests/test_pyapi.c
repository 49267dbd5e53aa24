/* test_pyapi.c — the C calls added for the Python package (python/tinygrad_c): the cumulative ops beyond cumsum
 * (tg_cumprod, tg_cummax, tg_cummin with their indices, tg_logcumsumexp), each against a plain C loop over the same
 * data along every axis of a 3x5 (and a 600-long axis: the two-stage split), with the error paths; and
 * tg_backward_all (tinygrad's backward rule: every live float tensor in the graph gets a grad); tg_pool (windows);
 * tg_pow refusing an int result with a negative or fractional Python-scalar operand; tg_pad's integral fill keeping an
 * int dtype. */
#include <math.h>

#include "test.h"

enum { ROWS = 3, COLS = 5 };
static const float DATA[ROWS * COLS] = {0.5f, -1.25f, 2.0f, 1.5f, -0.75f, 1.0f, 3.0f, -2.0f, 0.25f, 2.5f,
                                        -0.5f, 0.75f, 1.25f, -3.0f, 2.25f};

typedef enum { SCAN_PROD, SCAN_MAX, SCAN_MIN, SCAN_LOGSUMEXP } ScanKind;

/* the reference: scan along axis of a ROWS x COLS matrix; idx gets the first index reaching the running extreme */
static void scan_ref(ScanKind k, int axis, float *out, int *idx) {
  int n = axis == 0 ? ROWS : COLS, lines = axis == 0 ? COLS : ROWS;
  for (int l = 0; l < lines; l++) {
    double acc = 0, best = 0;
    int at = 0;
    for (int i = 0; i < n; i++) {
      int p = axis == 0 ? i * COLS + l : l * COLS + i;
      double v = DATA[p];
      if (i == 0) acc = v, best = v, at = 0;
      else if (k == SCAN_PROD) acc *= v;
      else if (k == SCAN_LOGSUMEXP) acc = fmax(acc, v) + log(exp(acc - fmax(acc, v)) + exp(v - fmax(acc, v)));
      else if (k == SCAN_MAX ? v > best : v < best) best = v, at = i;
      out[p] = (float)(k == SCAN_MAX || k == SCAN_MIN ? best : acc);
      if (idx) idx[p] = at;
    }
  }
}

static tg_tensor *scan_ours(ScanKind k, tg_tensor *x, int axis, tg_tensor **idx) {
  switch (k) {
  case SCAN_PROD: return tg_cumprod(x, axis);
  case SCAN_MAX: return tg_cummax(x, axis, idx);
  case SCAN_MIN: return tg_cummin(x, axis, idx);
  default: return tg_logcumsumexp(x, axis);
  }
}

static void check_small(void) {
  static const char *names[] = {"cumprod", "cummax", "cummin", "logcumsumexp"};
  for (int k = 0; k < 4; k++) {
    for (int axis = -2; axis < 2; axis++) {
      tg_tensor *x = tg_from_floats(DATA, TG_SHAPE(ROWS, COLS));
      tg_tensor *idx = NULL;
      tg_tensor *r = scan_ours((ScanKind)k, x, axis, k == SCAN_MAX || k == SCAN_MIN ? &idx : NULL);
      float want[ROWS * COLS], got[ROWS * COLS];
      int want_idx[ROWS * COLS], got_idx[ROWS * COLS];
      scan_ref((ScanKind)k, axis < 0 ? axis + 2 : axis, want, want_idx);
      CHECK_MSG(r && tg_to_host(r, got, sizeof got) == TG_OK, "%s axis %d: %s", names[k], axis, tg_last_error());
      for (int i = 0; r && i < ROWS * COLS; i++)
        CHECK_MSG(fabsf(got[i] - want[i]) <= 1e-5f * (1 + fabsf(want[i])), "%s axis %d [%d]: %g != %g", names[k], axis, i,
                  got[i], want[i]);
      if (k == SCAN_MAX || k == SCAN_MIN) {
        CHECK(idx && tg_get_dtype(idx) == TG_INT32 && tg_ndim(idx) == 2);
        CHECK(idx && tg_to_host(idx, got_idx, sizeof got_idx) == TG_OK);
        for (int i = 0; idx && i < ROWS * COLS; i++)
          CHECK_MSG(got_idx[i] == want_idx[i], "%s axis %d index [%d]: %d != %d", names[k], axis, i, got_idx[i], want_idx[i]);
      }
      tg_release(idx);
      tg_release(r);
      tg_release(x);
    }
  }
}

/* a 600-long axis takes the two-stage path (chunks of 256 and their carried totals) */
static void check_long(void) {
  enum { N = 600 };
  static float v[N], got[N];
  for (int i = 0; i < N; i++) v[i] = (float)((i * 37) % 101) - 50.0f;
  tg_tensor *x = tg_from_floats(v, TG_SHAPE(N));
  tg_tensor *r = tg_cummax(x, 0, NULL);
  CHECK(r && tg_to_host(r, got, sizeof got) == TG_OK);
  float best = v[0];
  int bad = 0;
  for (int i = 0; r && i < N; i++) best = fmaxf(best, v[i]), bad += got[i] != best;
  CHECK_EQ_INT(bad, 0);
  tg_release(r);
  tg_release(x);
}

static void check_edges(void) {
  tg_tensor *x = tg_from_floats(DATA, TG_SHAPE(ROWS, COLS));
  tg_tensor *idx = (tg_tensor *)&idx;  /* must be set to NULL on failure */
  CHECK(tg_cummax(x, 2, &idx) == NULL && idx == NULL);
  CHECK(strstr(tg_last_error(), "tg_cummax") != NULL);
  CHECK(tg_cumprod(x, -3) == NULL && strstr(tg_last_error(), "out of range") != NULL);
  CHECK(tg_logcumsumexp(NULL, 0) == NULL);
  tg_tensor *s = tg_scalar(2.5, TG_FLOAT32), *i0 = NULL;
  tg_tensor *m = tg_cummin(s, 0, &i0);
  double dv = 0;
  int64_t iv = -1;
  CHECK(m && tg_ndim(m) == 0 && tg_item_double(m, &dv) == TG_OK && dv == 2.5);
  CHECK(i0 && tg_get_dtype(i0) == TG_INT32 && tg_item_int64(i0, &iv) == TG_OK && iv == 0);
  tg_release(i0);
  tg_release(m);
  tg_release(s);
  tg_release(x);
  CHECK_EQ_INT(tg_live_tensors(), 0);
}

/* tg_backward_all: grads for the tensors in the graph without requires_grad, none for those outside it or not float */
static void check_backward_all(void) {
  const float xv[3] = {1, -2, 3};
  tg_tensor *x = tg_from_floats(xv, TG_SHAPE(3)), *other = tg_from_floats(xv, TG_SHAPE(3));
  const int32_t iv[3] = {1, 2, 3};
  tg_tensor *ints = tg_from_data(iv, TG_INT32, TG_SHAPE(3));
  tg_tensor *fints = tg_cast(ints, TG_FLOAT32), *sq = tg_mul(x, fints), *sqx = tg_mul(sq, x);
  tg_tensor *loss = tg_sum(sqx, NULL, 0, false);
  CHECK(tg_backward(loss) == TG_OK && tg_grad(x) == NULL);  /* the opt-in rule: nothing requires grad */
  CHECK(tg_backward_all(loss, NULL) == TG_OK);
  float g[3] = {0}, gs[3] = {0};
  CHECK(tg_grad(x) && tg_to_host(tg_grad(x), g, sizeof g) == TG_OK);
  for (int i = 0; i < 3; i++) CHECK_NEAR(g[i], 2.0 * iv[i] * xv[i], 1e-5);  /* d/dx sum(i*x*x) */
  CHECK(tg_grad(sq) && tg_to_host(tg_grad(sq), gs, sizeof gs) == TG_OK);   /* an intermediate is in the graph too */
  for (int i = 0; i < 3; i++) CHECK_NEAR(gs[i], xv[i], 1e-5);
  CHECK(tg_grad(other) == NULL && tg_grad(ints) == NULL);
  const float seed[3] = {1, 1, 1};
  tg_tensor *sd = tg_from_floats(seed, TG_SHAPE(3));
  CHECK(tg_backward_all(sq, sd) == TG_OK);  /* an explicit seed; grads accumulate */
  CHECK(tg_grad(x) && tg_to_host(tg_grad(x), g, sizeof g) == TG_OK);
  for (int i = 0; i < 3; i++) CHECK_NEAR(g[i], 2.0 * iv[i] * xv[i] + iv[i], 1e-5);
  CHECK(tg_backward_all(sq, NULL) != TG_OK && strstr(tg_last_error(), "tg_backward_all") != NULL);
  tg_release(sd);
  tg_release(loss);
  tg_release(sqx);
  tg_release(fints);
  tg_release(sq);
  tg_release(ints);
  tg_release(other);
  tg_release(x);
  CHECK_EQ_INT(tg_live_tensors(), 0);
}

/* tg_pool: windows of a 1x5 row (k 2, stride 2, dilation 1 and 2) against the index arithmetic; pow's int rule */
static void check_pool_and_pow(void) {
  const float v[5] = {0, 1, 2, 3, 4};
  tg_tensor *x = tg_from_floats(v, TG_SHAPE(1, 5));
  const int64_t k[1] = {2}, s2[1] = {2}, d2[1] = {2};
  tg_tensor *w = tg_pool(x, k, 1, s2, NULL), *wd = tg_pool(x, k, 1, NULL, d2);
  float got[8];
  CHECK(w && tg_ndim(w) == 3 && tg_shape(w)[1] == 2 && tg_shape(w)[2] == 2);
  CHECK(w && tg_to_host(w, got, 4 * sizeof(float)) == TG_OK);
  for (int o = 0; w && o < 2; o++)
    for (int j = 0; j < 2; j++) CHECK_NEAR(got[o * 2 + j], v[o * 2 + j], 0);
  CHECK(wd && tg_shape(wd)[1] == 3 && tg_to_host(wd, got, 6 * sizeof(float)) == TG_OK);
  for (int o = 0; wd && o < 3; o++)
    for (int j = 0; j < 2; j++) CHECK_NEAR(got[o * 2 + j], v[o + 2 * j], 0);
  const int64_t big[1] = {6};
  CHECK(tg_pool(x, big, 1, NULL, NULL) == NULL && strstr(tg_last_error(), "tg_pool") != NULL);
  CHECK(tg_pool(x, k, 0, NULL, NULL) == NULL);
  const int32_t iv[2] = {2, 3};
  tg_tensor *xi = tg_from_data(iv, TG_INT32, TG_SHAPE(2)), *neg = tg_const_int(-2), *half = tg_const_float(0.5);
  tg_tensor *two = tg_const_int(2), *sq = tg_pow(xi, two), *fl = tg_pow(xi, half);
  int32_t si[2] = {0};
  CHECK(sq && tg_to_host(sq, si, sizeof si) == TG_OK && si[0] == 4 && si[1] == 9);
  CHECK(fl != NULL);  /* int ** 0.5 promotes to a float: allowed */
  CHECK(tg_pow(xi, neg) == NULL && strstr(tg_last_error(), "base needs to be float") != NULL);
  CHECK(tg_pow(neg, xi) == NULL);
  const int64_t pads[2] = {1, 1};
  tg_tensor *pi = tg_pad(xi, pads, 1, TG_PAD_CONSTANT, 2147483647.0), *pf = tg_pad(xi, pads, 1, TG_PAD_CONSTANT, 0.5);
  int32_t pv[4] = {0};
  CHECK(pi && tg_get_dtype(pi) == TG_INT32 && tg_to_host(pi, pv, sizeof pv) == TG_OK);
  CHECK(pv[0] == 2147483647 && pv[1] == 2 && pv[2] == 3 && pv[3] == 2147483647);
  CHECK(pf && tg_get_dtype(pf) != TG_INT32);  /* a fractional fill promotes */
  tg_release(pf);
  tg_release(pi);
  tg_release(fl);
  tg_release(sq);
  tg_release(two);
  tg_release(half);
  tg_release(neg);
  tg_release(xi);
  tg_release(wd);
  tg_release(w);
  tg_release(x);
  CHECK_EQ_INT(tg_live_tensors(), 0);
}

void suite_pyapi(void) {
  check_small();
  check_long();
  check_edges();
  check_backward_all();
  check_pool_and_pow();
}
