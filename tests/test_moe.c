/* test_moe.c — tg_topk, tg_moe_router and tg_moe_ffn (src/nn/moe.c).
 *
 * 1. Every case of tests/fixtures/moe.tgf (tools/gen_attention_fixtures.py, PyTorch in float64): topk values and
 *    indices exactly (ties in index order, largest and smallest, any axis), the router's weights and experts for each
 *    gating function, the MoE feed-forward against a per-token, per-expert loop (SwiGLU; gpt-oss's clamped SwiGLU with
 *    expert biases).
 * 2. topk against a brute-force selection on random rows with many ties, short rows and vocabulary-length ones
 *    (the chunked reduction), float and int dtypes.
 * 3. tg_moe_ffn with Q8_0 and MXFP4 expert weights (lazy dequantization of raw bytes, tg_ggml_dequantize) equals the
 *    same call on the realized dequantized weights, and a decode step is a small, fixed number of kernels whatever E.
 * 4. Errors on bad arguments. */
#include <math.h>
#include <stdlib.h>

#include "base/base.h"
#include "fixture.h"
#include "runtime/runtime.h"
#include "test.h"
#include "tinygrad.h"

static tg_tensor *from_tf(const tf_tensor *t) {
  return tg_from_data(t->data, t->dtype == TF_FLOAT32 ? TG_FLOAT32 : TG_INT64, t->shape, (size_t)t->ndim);
}

static int64_t iparam(const tf_case *c, const char *key) {
  int64_t v;
  return tf_param_int(c, key, &v) ? v : 0;
}

static bool run_case(const tf_case *c) {
  tg_tensor *in[TF_MAX_TENSORS] = {0};
  for (int i = 0; i < c->ninputs; i++) in[i] = from_tf(&c->inputs[i]);
  char what[128];
  if (!strcmp(c->op, "topk")) {
    tg_tensor *idx = NULL;
    tg_tensor *vals = tg_topk(in[0], iparam(c, "k"), (int)iparam(c, "axis"), iparam(c, "largest") != 0, &idx);
    snprintf(what, sizeof what, "%s values", c->name);
    bool ok = tf_matches(what, vals, &c->outputs[0], 0, 0);
    snprintf(what, sizeof what, "%s indices", c->name);
    ok &= idx && tg_get_dtype(idx) == TG_INT32 && tf_matches(what, idx, &c->outputs[1], 0, 0);
    return ok;
  }
  tg_moe_opts o = {0};
  o.k = iparam(c, "k");
  o.gating = (tg_moe_gating)iparam(c, "gating");
  o.normalize = iparam(c, "normalize") != 0;
  double scale = 0;
  if (tf_param_double(c, "scale", &scale)) o.scale = scale;
  if (!strcmp(c->op, "router")) {
    if (iparam(c, "select_bias")) o.select_bias = in[1];
    tg_tensor *sel = NULL, *probs = tg_moe_router(in[0], &o, &sel);
    snprintf(what, sizeof what, "%s probs", c->name);
    bool ok = tf_matches(what, probs, &c->outputs[0], c->atol, c->rtol);
    snprintf(what, sizeof what, "%s sel", c->name);
    return ok & tf_matches(what, sel, &c->outputs[1], 0, 0);
  }
  if (!strcmp(c->op, "moe_ffn")) {
    o.act = (tg_moe_act)iparam(c, "act");
    if (iparam(c, "biases")) { /* the gate and up biases come stacked (E, 2, H) */
      o.router_bias = in[5], o.down_bias = in[7];
      o.gate_bias = tg_squeeze(tg_shrink(in[6], (int64_t[]){0, c->inputs[6].shape[0], 0, 1, 0, c->inputs[6].shape[2]}, 3), 1);
      o.up_bias = tg_squeeze(tg_shrink(in[6], (int64_t[]){0, c->inputs[6].shape[0], 1, 2, 0, c->inputs[6].shape[2]}, 3), 1);
    }
    return tf_matches(c->name, tg_moe_ffn(in[0], in[1], in[2], in[3], in[4], &o), &c->outputs[0], c->atol, c->rtol);
  }
  fprintf(stderr, "  %s: unknown op %s\n", c->name, c->op);
  return false;
}

static void fixture_cases(void) { tf_run_file("moe.tgf", NULL, 17, run_case); }

/* ------------------------------------------------------------------------------------------ topk brute force */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}

/* tg_topk of rows x (rows, n) (as dtype) against picking the best unused element k times (earliest among equals) */
static void check_topk(const float *x, int rows, int n, int64_t k, bool largest, tg_dtype dtype) {
  tg_scope s = tg_scope_begin();
  tg_tensor *idx = NULL, *t = tg_cast(tg_from_floats(x, TG_SHAPE(rows, n)), dtype);
  tg_tensor *vals = tg_cast(tg_topk(t, k, 1, largest, &idx), TG_FLOAT32);
  float *v = malloc(sizeof(float) * (size_t)(rows * k + 1));
  int32_t *ix = malloc(sizeof(int32_t) * (size_t)(rows * k + 1));
  bool *used = malloc((size_t)n);
  bool ok = vals && tg_to_host(vals, v, sizeof(float) * (size_t)(rows * k)) == TG_OK &&
            tg_to_host(idx, ix, sizeof(int32_t) * (size_t)(rows * k)) == TG_OK;
  CHECK_MSG(ok, "topk n %d k %lld: %s", n, (long long)k, tg_last_error());
  int bad = 0;
  for (int r = 0; ok && r < rows; r++) {
    memset(used, 0, (size_t)n);
    for (int64_t slot = 0; slot < k; slot++) {
      int best = -1;
      for (int j = 0; j < n; j++) {
        if (used[j]) continue;
        float a = x[r * n + j];
        if (best < 0 || (largest ? a > x[r * n + best] : a < x[r * n + best])) best = j;
      }
      used[best] = true;
      if (ix[r * k + slot] != best || v[r * k + slot] != x[r * n + best]) {
        if (!bad++)
          fprintf(stderr, "  topk %s n %d largest %d k %lld row %d slot %lld: got index %d value %g, want %d %g\n",
                  tg_dtype_name(dtype), n, largest, (long long)k, r, (long long)slot, ix[r * k + slot],
                  v[r * k + slot], best, x[r * n + best]);
      }
    }
  }
  CHECK_MSG(bad == 0, "topk %s n %d k %lld largest %d: %d wrong slots", tg_dtype_name(dtype), n, (long long)k,
            largest, bad);
  free(v);
  free(ix);
  free(used);
  tg_scope_end(s);
}

static void topk_brute_force(void) {
  enum { ROWS = 6, N = 37, LONG = 5000 };
  float x[ROWS * N];
  for (int i = 0; i < ROWS * N; i++) x[i] = (float)(rnd() % 9) - 4.0f;  /* many ties */
  for (int largest = 0; largest < 2; largest++)
    for (int64_t k = 1; k <= N; k += 9) check_topk(x, ROWS, N, k, largest, TG_FLOAT32);
  /* long rows go through the chunked reduction (a vocabulary-sized top-k); ties, ints, padding of a partial chunk */
  float *y = malloc(sizeof(float) * 2 * LONG);
  for (int i = 0; i < 2 * LONG; i++) y[i] = (float)(rnd() % 2000) - 1000.0f;
  check_topk(y, 2, LONG, 40, true, TG_FLOAT32);
  check_topk(y, 2, LONG, 1, false, TG_FLOAT32);
  if (!tg_test_light()) {
    check_topk(y, 2, LONG, 300, true, TG_FLOAT32);
    check_topk(y, 2, LONG, 7, false, TG_INT32);
    check_topk(y, 1, LONG - 3, 64, true, TG_INT16);
  }
  free(y);
}

/* ------------------------------------------------------------------------------ quantized experts, kernels */

/* random ggml blocks for an (e, out, in) weight: Q8_0 (per 32 values: f16 scale in [2^-7, 2^-6), 32 int8) or MXFP4
 * (per 32 values: an E8M0 scale 2^-7..2^0, 16 bytes of FP4 E2M1 pairs) */
static tg_tensor *quant_weight(int type, int64_t e, int64_t out, int64_t in) {
  int64_t blocks = e * out * in / 32, bb = type == TG_GGML_Q8_0 ? 34 : 17;
  size_t nb = (size_t)(blocks * bb);
  uint8_t *b = malloc(nb);
  for (int64_t i = 0; i < blocks; i++) {
    uint8_t *p = b + i * bb;
    if (type == TG_GGML_Q8_0) {
      uint16_t scale_bits = (uint16_t)(0x2000 + (rnd() % 0x400));
      p[0] = (uint8_t)(scale_bits & 0xff), p[1] = (uint8_t)(scale_bits >> 8);
      for (int j = 0; j < 32; j++) p[2 + j] = (uint8_t)(int8_t)((int)(rnd() % 255) - 127);
    } else {
      p[0] = (uint8_t)(120 + rnd() % 8);
      for (int j = 0; j < 16; j++) p[1 + j] = (uint8_t)(rnd() & 0xff);
    }
  }
  tg_tensor *raw = tg_from_data(b, TG_UINT8, (int64_t[]){(int64_t)nb}, 1);
  free(b);
  CHECK(tg_realize(raw) == TG_OK);
  return tg_ggml_dequantize(raw, type, (int64_t[]){e, out, in}, 3);
}

static tg_tensor *realized_copy(const tg_tensor *t) {
  tg_tensor *c = tg_contiguous(t);
  CHECK(tg_realize(c) == TG_OK);
  return c;
}

static double max_rel(tg_tensor *a, tg_tensor *b, size_t n) {
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  double worst = INFINITY;
  if (a && b && tg_to_host(a, x, n * sizeof *x) == TG_OK && tg_to_host(b, y, n * sizeof *y) == TG_OK) {
    worst = 0;
    for (size_t i = 0; i < n; i++) {
      double d = fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
      worst = d > worst || isnan(d) ? d : worst;
    }
  }
  free(x);
  free(y);
  return worst;
}

static void quantized_experts(void) {
  tg_scope s = tg_scope_begin();
  const int64_t d = 64, hd = 32, t = 3;
  for (int type = 0; type < 2; type++) {
    int qt = type ? TG_GGML_MXFP4 : TG_GGML_Q8_0;
    for (int64_t e = 8; e <= 32; e *= 4) {
      tg_tensor *gw = quant_weight(qt, e, hd, d), *uw = quant_weight(qt, e, hd, d), *dw = quant_weight(qt, e, d, hd);
      tg_tensor *rw = tg_mul(quant_weight(TG_GGML_Q8_0, 1, e, d), tg_const_float(4.0));
      rw = realized_copy(tg_reshape(rw, TG_SHAPE(e, d)));
      tg_tensor *x = realized_copy(tg_randn(TG_SHAPE(t, d), TG_FLOAT32));
      tg_moe_opts o = {.k = 4, .act = TG_MOE_SWIGLU_OAI};
      tg_tensor *want = tg_moe_ffn(x, rw, realized_copy(gw), realized_copy(uw), realized_copy(dw), &o);
      CHECK(tg_realize(want) == TG_OK);
      tg_tensor *got = tg_moe_ffn(x, rw, gw, uw, dw, &o);
      long launches = rt_stats().launches;
      CHECK_MSG(got && tg_realize(got) == TG_OK, "quantized moe: %s", tg_last_error());
      long kernels = rt_stats().launches - launches;
      /* the router, topk, gate/up, down and the weighted sum: a handful of kernels, not one per expert */
      CHECK_MSG(kernels >= 1 && kernels <= 12, "quantized moe %s E %lld: %ld kernels", tg_ggml_type_name(qt),
                (long long)e, kernels);
      double err = max_rel(got, want, (size_t)(t * d));
      CHECK_MSG(err < 1e-4, "quantized moe %s E %lld: rel diff %g", tg_ggml_type_name(qt), (long long)e, err);
    }
  }
  tg_scope_end(s);
}

/* ---------------------------------------------------------------------------------------------------- errors */

static bool fails_with(tg_tensor *r, const char *part) {
  bool ok = r == NULL && strstr(tg_last_error(), part) != NULL;
  if (!ok) fprintf(stderr, "  expected an error with '%s', got %s: '%s'\n", part, r ? "a tensor" : "NULL",
                   tg_last_error());
  return ok;
}

static void errors(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *x = tg_zeros(TG_SHAPE(2, 5), TG_FLOAT32), *idx = NULL;
  CHECK(fails_with(tg_topk(x, 6, 1, true, &idx), "out of range") && idx == NULL);
  CHECK(fails_with(tg_topk(x, -1, 1, true, NULL), "out of range"));
  CHECK(fails_with(tg_topk(x, 1, 2, true, NULL), "axis 2"));
  CHECK(fails_with(tg_topk(tg_zeros(NULL, 0, TG_FLOAT32), 1, 0, true, NULL), "axis"));
  CHECK(fails_with(tg_topk(tg_zeros(TG_SHAPE(3), TG_BOOL), 1, 0, true, NULL), "bool"));
  tg_tensor *var = tg_variable("n", 1, 5);
  tg_tensor *xs = tg_shrink_sym(x, (tg_sint[]){TG_SI(0), TG_SI(2), TG_SI(0), TG_SV(tg_bind(var, 3), 0)}, 2);
  CHECK(fails_with(tg_topk(xs, 1, 1, true, NULL), "not supported by this op yet"));
  tg_clear_error();
  CHECK(fails_with(tg_topk(NULL, 1, 0, true, NULL), "tg_topk"));
  tg_tensor *sel = NULL;
  CHECK(fails_with(tg_moe_router(x, &(tg_moe_opts){.k = 0}, &sel), "k=0") && sel == NULL);
  CHECK(fails_with(tg_moe_router(x, &(tg_moe_opts){.k = 6}, &sel), "k=6"));
  CHECK(fails_with(tg_moe_router(x, &(tg_moe_opts){.k = 2, .gating = (tg_moe_gating)9}, &sel), "gating"));
  CHECK(fails_with(tg_moe_router(x, &(tg_moe_opts){.k = 2, .select_bias = tg_zeros(TG_SHAPE(4), TG_FLOAT32)}, &sel),
                   "select_bias"));
  CHECK(fails_with(tg_moe_router(x, NULL, &sel), "opts"));
  const int64_t e = 4, d = 5, hd = 3;
  tg_tensor *rw = tg_zeros(TG_SHAPE(e, d), TG_FLOAT32), *gw = tg_zeros(TG_SHAPE(e, hd, d), TG_FLOAT32);
  tg_tensor *dw = tg_zeros(TG_SHAPE(e, d, hd), TG_FLOAT32);
  tg_moe_opts o = {.k = 2};
  CHECK(fails_with(tg_moe_ffn(x, tg_zeros(TG_SHAPE(e, 4), TG_FLOAT32), gw, gw, dw, &o), "router_w"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, tg_zeros(TG_SHAPE(e, hd + 1, d), TG_FLOAT32), dw, &o), "up_w"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, gw, gw, &o), "down_w"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, gw, NULL, &o), "NULL down_w"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, gw, dw, &(tg_moe_opts){.k = 5}), "k=5"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, gw, dw, &(tg_moe_opts){.k = 2, .gate_bias = tg_zeros(TG_SHAPE(e, d),
                                                                                             TG_FLOAT32)}),
                   "gate_bias"));
  CHECK(fails_with(tg_moe_ffn(x, rw, gw, gw, dw, &(tg_moe_opts){.k = 2, .act = (tg_moe_act)7}), "activation"));
  CHECK(fails_with(tg_moe_ffn(tg_zeros(TG_SHAPE(2, 5), TG_INT32), rw, gw, gw, dw, &o), "float"));
  tg_tensor *ok = tg_moe_ffn(x, rw, gw, gw, dw, &o);
  CHECK(ok && tg_ndim(ok) == 2 && tg_shape(ok)[1] == d && tg_realize(ok) == TG_OK);
  tg_scope_end(s);
}

void suite_moe(void);
void suite_moe(void) {
  fixture_cases();
  topk_brute_force();
  quantized_experts();
  errors();
}
