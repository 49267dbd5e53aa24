/* test_e2e.c — the whole pipeline from the public API: tensors built lazily, scheduled into kernels, lowered,
 * rendered to C, compiled, run on the CPU runtime, read back, and compared with values computed here in plain C. */
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "tinygrad.h"

static bool close_arrays(const float *got, const float *want, size_t n, double atol, double rtol) {
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= atol + rtol * fabs((double)want[i])) && !(isnan(got[i]) && isnan(want[i]))) {
      fprintf(stderr, "  element %zu: got %.9g want %.9g\n", i, got[i], want[i]);
      return false;
    }
  }
  return true;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
}

/* relu(a + b) with b broadcast over rows */
static void test_elementwise_broadcast(void) {
  tg_scope sc = tg_scope_begin();
  float a[12], b[4], want[12], got[12];
  fill(a, 12, 1);
  fill(b, 4, 2);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = fmaxf(a[i * 4 + j] + b[j], 0.0f);
  int64_t sa[2] = {3, 4}, sb[1] = {4};
  tg_tensor *c = tg_relu(tg_add(tg_from_floats(a, sa, 2), tg_from_floats(b, sb, 1)));
  tg_status st = tg_to_host(c, got, sizeof got);
  CHECK_MSG(st == TG_OK, "relu(a+b): %s", tg_last_error());
  if (st == TG_OK) CHECK(close_arrays(got, want, 12, 1e-6, 1e-6));
  tg_scope_end(sc);
}

/* sum over each axis and over everything */
static void test_reduce(void) {
  tg_scope sc = tg_scope_begin();
  float a[6 * 5];
  fill(a, 30, 3);
  int64_t sh[2] = {6, 5};
  tg_tensor *t = tg_from_floats(a, sh, 2);
  for (int axis = 0; axis < 2; axis++) {
    int n = axis == 0 ? 5 : 6;
    float want[6] = {0}, got[6];
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 5; j++) want[axis == 0 ? j : i] += a[i * 5 + j];
    tg_status st = tg_to_host(tg_sum(t, &axis, 1, false), got, (size_t)n * sizeof(float));
    CHECK_MSG(st == TG_OK, "sum(axis=%d): %s", axis, tg_last_error());
    if (st == TG_OK) CHECK(close_arrays(got, want, (size_t)n, 1e-5, 1e-5));
  }
  double total = 0, got = 0;
  for (int i = 0; i < 30; i++) total += a[i];
  tg_status st = tg_item_double(tg_sum(t, NULL, 0, false), &got);
  CHECK_MSG(st == TG_OK, "sum(): %s", tg_last_error());
  if (st == TG_OK) CHECK_NEAR(got, total, 1e-4);
  tg_scope_end(sc);
}

/* softmax over the last axis (3 kernels in tinygrad) */
static void test_softmax(void) {
  tg_scope sc = tg_scope_begin();
  float a[4 * 8], want[32], got[32];
  fill(a, 32, 4);
  for (int i = 0; i < 4; i++) {
    float m = -INFINITY, s = 0;
    for (int j = 0; j < 8; j++) m = fmaxf(m, a[i * 8 + j]);
    for (int j = 0; j < 8; j++) s += expf(a[i * 8 + j] - m);
    for (int j = 0; j < 8; j++) want[i * 8 + j] = expf(a[i * 8 + j] - m) / s;
  }
  int64_t sh[2] = {4, 8};
  tg_status st = tg_to_host(tg_softmax(tg_from_floats(a, sh, 2), -1), got, sizeof got);
  CHECK_MSG(st == TG_OK, "softmax: %s", tg_last_error());
  if (st == TG_OK) CHECK(close_arrays(got, want, 32, 1e-6, 1e-4));
  tg_scope_end(sc);
}

/* a @ b with a permuted (non-contiguous) operand */
static void test_matmul(void) {
  tg_scope sc = tg_scope_begin();
  float a[5 * 7], b[7 * 3], want[15], got[15];
  fill(a, 35, 5);
  fill(b, 21, 6);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 3; j++) {
      float s = 0;
      for (int k = 0; k < 7; k++) s += a[k * 5 + i] * b[k * 3 + j]; /* a is stored transposed (7x5) */
      want[i * 3 + j] = s;
    }
  int64_t sa[2] = {7, 5}, sb[2] = {7, 3};
  tg_tensor *at = tg_transpose(tg_from_floats(a, sa, 2), 0, 1);
  tg_status st = tg_to_host(tg_matmul(at, tg_from_floats(b, sb, 2)), got, sizeof got);
  CHECK_MSG(st == TG_OK, "matmul: %s", tg_last_error());
  if (st == TG_OK) CHECK(close_arrays(got, want, 15, 1e-5, 1e-4));
  tg_scope_end(sc);
}

/* transcendentals through the decompositions (the C backend has no exp2/log2/sin) */
static void test_unary_math(void) {
  tg_scope sc = tg_scope_begin();
  float a[16], got[16], want[16];
  for (int i = 0; i < 16; i++) a[i] = (float)i * 0.37f - 2.5f;
  int64_t sh[1] = {16};
  tg_tensor *t = tg_from_floats(a, sh, 1);
  struct { const char *name; tg_tensor *(*fn)(const tg_tensor *); double (*ref)(double); } ops[] = {
      {"exp", tg_exp, exp}, {"sin", tg_sin, sin}, {"cos", tg_cos, cos}, {"tanh", tg_tanh, tanh}, {"sqrt_abs", NULL, NULL}};
  for (size_t k = 0; k < 4; k++) {
    for (int i = 0; i < 16; i++) want[i] = (float)ops[k].ref(a[i]);
    tg_status st = tg_to_host(ops[k].fn(t), got, sizeof got);
    CHECK_MSG(st == TG_OK, "%s: %s", ops[k].name, tg_last_error());
    if (st == TG_OK) CHECK_MSG(close_arrays(got, want, 16, 1e-6, 1e-5), "%s values", ops[k].name);
  }
  for (int i = 0; i < 16; i++) want[i] = logf(fabsf(a[i]) + 1.0f);
  tg_status st = tg_to_host(tg_log(tg_add(tg_abs(t), tg_const_float(1.0))), got, sizeof got);
  CHECK_MSG(st == TG_OK, "log(|x|+1): %s", tg_last_error());
  if (st == TG_OK) CHECK(close_arrays(got, want, 16, 1e-6, 1e-5));
  tg_scope_end(sc);
}

/* an assign that ran as part of another tensor's realize never runs again (tinygrad applies the map to every tensor) */
static void test_assign_runs_once(void) {
  tg_scope sc = tg_scope_begin();
  float x[2] = {1, 2}, a_out[2], b_out[2];
  int64_t sh[1] = {2};
  tg_tensor *a = tg_from_floats(x, sh, 1);
  CHECK(tg_assign(a, tg_add(a, tg_const_float(1.0))) == TG_OK);
  tg_tensor *b = tg_mul(a, tg_const_float(2.0));
  CHECK(tg_to_host(b, b_out, sizeof b_out) == TG_OK && b_out[0] == 4 && b_out[1] == 6);
  CHECK(tg_to_host(a, a_out, sizeof a_out) == TG_OK && a_out[0] == 2 && a_out[1] == 3);
  tg_tensor *c = tg_add(a, tg_const_float(10.0));
  CHECK(tg_realize(c) == TG_OK);
  CHECK(tg_to_host(a, a_out, sizeof a_out) == TG_OK && a_out[0] == 2 && a_out[1] == 3);
  tg_scope_end(sc);
}

/* 8/16-bit integer arithmetic wraps before it is compared or divided, as in torch (uint8 0-1 is 255): C computes
 * these in int, so the renderer must not leave (a-b) unwrapped inside a comparison (render/c.c inline_it) */
static void test_narrow_int_wraps(void) {
  tg_scope sc = tg_scope_begin();
  int64_t sh[1] = {4};
  uint8_t u[4] = {0, 1, 5, 200}, one[4] = {1, 1, 1, 1}, ten[4] = {10, 10, 10, 10};
  tg_tensor *x = tg_from_data(u, TG_UINT8, sh, 1), *o = tg_from_data(one, TG_UINT8, sh, 1);
  tg_tensor *t = tg_from_data(ten, TG_UINT8, sh, 1);
  bool lt[4] = {true, true, true, true};
  CHECK(tg_to_host(tg_lt(tg_sub(x, o), t), lt, sizeof lt) == TG_OK);
  CHECK(!lt[0] && lt[1] && lt[2] && !lt[3]);            /* 255, 0, 4, 199 < 10 */
  bool sq[4] = {false};
  uint8_t sixteen[4] = {16, 15, 0, 17};
  tg_tensor *s16 = tg_from_data(sixteen, TG_UINT8, sh, 1);
  CHECK(tg_to_host(tg_lt(tg_mul(s16, s16), t), sq, sizeof sq) == TG_OK);
  CHECK(sq[0] && !sq[1] && sq[2] && !sq[3]);            /* 256 -> 0, 225, 0, 289 -> 33 */
  int8_t i8[4] = {127, 0, -128, 5}, i1[4] = {1, 1, 1, 1};
  tg_tensor *a = tg_from_data(i8, TG_INT8, sh, 1), *b = tg_from_data(i1, TG_INT8, sh, 1);
  tg_tensor *zero = tg_from_data((int8_t[4]){0, 0, 0, 0}, TG_INT8, sh, 1);
  bool neg[4] = {false};
  CHECK(tg_to_host(tg_lt(tg_add(a, b), zero), neg, sizeof neg) == TG_OK);
  CHECK(neg[0] && !neg[1] && neg[2] && !neg[3]);        /* 127+1 -> -128 < 0 */
  bool nz[4] = {false};
  CHECK(tg_to_host(tg_lt(tg_neg(a), zero), nz, sizeof nz) == TG_OK);
  CHECK(nz[0] && !nz[1] && nz[2] && nz[3]);             /* -127, 0, -(-128) -> -128, -5 */
  uint16_t w[2] = {0, 7}, w1[2] = {1, 1}, big[2] = {1000, 1000};
  int64_t sh2[1] = {2};
  bool gt[2] = {false};
  tg_tensor *ww = tg_from_data(w, TG_UINT16, sh2, 1), *one16 = tg_from_data(w1, TG_UINT16, sh2, 1);
  CHECK(tg_to_host(tg_lt(tg_from_data(big, TG_UINT16, sh2, 1), tg_sub(ww, one16)), gt, sizeof gt) == TG_OK);
  CHECK(gt[0] && !gt[1]);                                /* 1000 < 65535 */
  tg_scope_end(sc);
}

void suite_e2e(void) {
  test_narrow_int_wraps();
  test_assign_runs_once();
  test_elementwise_broadcast();
  test_reduce();
  test_softmax();
  test_matmul();
  test_unary_math();
}
