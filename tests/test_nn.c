/* test_nn.c — the nn layers, functional ops and losses (src/nn/layers.c, losses.c, state.c).
 *
 * Forward values against PyTorch: every case of tests/fixtures/nn_layers.tgf (tools/gen_nn_fixtures.py) builds the
 * layer, loads the case's parameters into it through tg_load_state_dict (so the state-dict path is exercised too),
 * runs it and compares with torch within the case's tolerance. Then: initializers and dropout against tinygrad's own
 * numbers (same seed, same threefry stream), the training flag, BatchNorm's buffers, state dicts (names, parameter
 * lists, load errors), and argument errors. TG_NN_ONLY=<substring> runs only the fixture cases whose name has it. */
#include <math.h>
#include <stdlib.h>

#include "fixture.h"
#include "test.h"
#include "tinygrad.h"

static tg_tensor *from_tf(const tf_tensor *t) {
  return tg_from_data(t->data, t->dtype == TF_FLOAT32 ? TG_FLOAT32 : TG_INT64, t->shape, (size_t)t->ndim);
}

static int64_t iparam(const tf_case *c, const char *key, int64_t dflt) {
  int64_t v;
  return tf_param_int(c, key, &v) ? v : dflt;
}
static double dparam(const tf_case *c, const char *key, double dflt) {
  double v;
  return tf_param_double(c, key, &v) ? v : dflt;
}
static void pair(const tf_case *c, const char *key, int64_t out[2]) {
  size_t n = 0;
  out[0] = out[1] = 0;
  if (tf_param_ints(c, key, out, 2, &n) && n == 1) out[1] = out[0];
}

/* loads name/tensor pairs into a model state dict (strict unless told otherwise) */
static bool load_into(tg_state_dict *model, const char *const *names, tg_tensor *const *ts, size_t n, bool strict) {
  tg_state_dict *src = tg_state_dict_new();
  for (size_t i = 0; i < n; i++) tg_state_dict_add(src, names[i], ts[i], true);
  tg_status st = tg_load_state_dict(model, src, strict);
  if (st != TG_OK) fprintf(stderr, "  load_state_dict: %s\n", tg_last_error());
  tg_state_dict_free(src);
  return st == TG_OK;
}

/* Runs one fixture case; returns false (with a message) on any mismatch. */
static bool run_case(const tf_case *c) {
  tg_tensor *in[TF_MAX_TENSORS] = {0};
  for (int i = 0; i < c->ninputs; i++) in[i] = from_tf(&c->inputs[i]);
  const char *op = c->op;
  double atol = c->atol, rtol = c->rtol;
  bool ok = false;
  tg_state_dict *sd = tg_state_dict_new();
  tg_reduction red = (tg_reduction)iparam(c, "reduction", 0);
  if (!strcmp(op, "linear")) {
    bool bias = iparam(c, "bias", 1) != 0;
    tg_linear_layer *l = tg_linear_new(iparam(c, "in", 0), iparam(c, "out", 0), bias);
    static const char *const names[] = {"weight", "bias"};
    ok = l && tg_linear_state(l, NULL, sd) == TG_OK && load_into(sd, names, in + 1, bias ? 2 : 1, true) &&
         tf_matches(c->name, tg_linear_forward(l, in[0]), &c->outputs[0], atol, rtol);
    tg_linear_free(l);
  } else if (!strcmp(op, "conv2d") || !strcmp(op, "conv_transpose2d")) {
    tg_conv2d_options o = {0};
    int64_t k[2];
    pair(c, "kernel", k);
    pair(c, "stride", o.stride);
    pair(c, "padding", o.padding);
    pair(c, "dilation", o.dilation);
    pair(c, "output_padding", o.output_padding);
    o.groups = (int)iparam(c, "groups", 1);
    o.padding_same = iparam(c, "same", 0) != 0;
    bool transposed = !strcmp(op, "conv_transpose2d");
    tg_conv2d_layer *l = transposed ? tg_conv_transpose2d_new(iparam(c, "cin", 0), iparam(c, "cout", 0), k, &o)
                                    : tg_conv2d_new(iparam(c, "cin", 0), iparam(c, "cout", 0), k, &o);
    ok = l && tg_conv2d_state(l, "conv", sd) == TG_OK;
    if (ok) {
      /* the layer's names carry the prefix: load through a dict with the same names */
      static const char *const prefixed[] = {"conv.weight", "conv.bias"};
      ok = load_into(sd, prefixed, in + 1, 2, true) &&
           tf_matches(c->name, tg_conv2d_forward(l, in[0]), &c->outputs[0], atol, rtol);
      /* the functional form agrees with the layer */
      if (ok && transposed)
        ok = tf_matches(c->name, tg_conv_transpose2d(in[0], in[1], in[2], o.groups, o.stride, o.padding, o.dilation,
                                                  o.output_padding), &c->outputs[0], atol, rtol);
    }
    tg_conv2d_free(l);
  } else if (!strcmp(op, "batchnorm_train") || !strcmp(op, "batchnorm_eval")) {
    bool train = !strcmp(op, "batchnorm_train");
    tg_batchnorm_layer *l = tg_batchnorm_new(iparam(c, "size", 0), dparam(c, "eps", 1e-5), dparam(c, "momentum", 0.1),
                                             true, true);
    static const char *const names[] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    ok = l && tg_batchnorm_state(l, "bn", sd) == TG_OK && load_into(sd, names, in + 1, 4, false);
    bool prev = tg_set_training(train);
    tg_tensor *y = ok ? tg_batchnorm_forward(l, in[0]) : NULL;
    tg_set_training(prev);
    ok = ok && tf_matches(c->name, y, &c->outputs[0], atol, rtol);
    if (ok && train) {
      ok = tg_state_dict_realize(sd) == TG_OK && tf_matches(c->name, l->running_mean, &c->outputs[1], atol, rtol) &&
           tf_matches(c->name, l->running_var, &c->outputs[2], atol, rtol);
      int64_t nb = -1;
      ok = ok && tg_item_int64(l->num_batches_tracked, &nb) == TG_OK && nb == 1;
    }
    tg_batchnorm_free(l);
  } else if (!strcmp(op, "layernorm")) {
    int64_t shape[TF_MAX_DIMS];
    size_t n = 0;
    tf_param_ints(c, "shape", shape, TF_MAX_DIMS, &n);
    tg_layernorm_layer *l = tg_layernorm_new(shape, n, dparam(c, "eps", 1e-5), true);
    static const char *const names[] = {"weight", "bias"};
    ok = l && tg_layernorm_state(l, "", sd) == TG_OK && load_into(sd, names, in + 1, 2, true) &&
         tf_matches(c->name, tg_layernorm_forward(l, in[0]), &c->outputs[0], atol, rtol);
    tg_layernorm_free(l);
  } else if (!strcmp(op, "rmsnorm")) {
    tg_rmsnorm_layer *l = tg_rmsnorm_new(iparam(c, "dim", 0), dparam(c, "eps", 1e-6), true);
    static const char *const names[] = {"weight"};
    ok = l && tg_rmsnorm_state(l, NULL, sd) == TG_OK && load_into(sd, names, in + 1, 1, true) &&
         tf_matches(c->name, tg_rmsnorm_forward(l, in[0]), &c->outputs[0], atol, rtol);
    tg_rmsnorm_free(l);
  } else if (!strcmp(op, "groupnorm")) {
    tg_groupnorm_layer *l = tg_groupnorm_new(iparam(c, "groups", 0), iparam(c, "channels", 0), dparam(c, "eps", 1e-5),
                                             true);
    static const char *const names[] = {"weight", "bias"};
    ok = l && tg_groupnorm_state(l, NULL, sd) == TG_OK && load_into(sd, names, in + 1, 2, true) &&
         tf_matches(c->name, tg_groupnorm_forward(l, in[0]), &c->outputs[0], atol, rtol);
    tg_groupnorm_free(l);
  } else if (!strcmp(op, "embedding")) {
    tg_embedding_layer *l = tg_embedding_new(iparam(c, "vocab", 0), iparam(c, "embed", 0));
    static const char *const names[] = {"weight"};
    ok = l && tg_embedding_state(l, NULL, sd) == TG_OK && load_into(sd, names, in + 1, 1, true) &&
         tf_matches(c->name, tg_embedding_forward(l, in[0]), &c->outputs[0], atol, rtol);
    tg_embedding_free(l);
  } else if (!strcmp(op, "cross_entropy")) {
    ok = tf_matches(c->name, tg_cross_entropy(in[0], in[1], red, dparam(c, "smoothing", 0)), &c->outputs[0], atol,
                    rtol);
  } else if (!strcmp(op, "sparse_categorical_crossentropy")) {
    ok = tf_matches(c->name, tg_sparse_categorical_crossentropy(in[0], in[1], iparam(c, "ignore_index", -1),
                                                             dparam(c, "smoothing", 0), red),
                 &c->outputs[0], atol, rtol);
  } else if (!strcmp(op, "binary_crossentropy")) {
    ok = tf_matches(c->name, tg_binary_crossentropy(in[0], in[1], red), &c->outputs[0], atol, rtol);
  } else if (!strcmp(op, "binary_crossentropy_logits")) {
    ok = tf_matches(c->name,
                    tg_binary_crossentropy_logits(in[0], in[1], red, iparam(c, "pos_weight", 0) ? in[2] : NULL),
                    &c->outputs[0], atol, rtol);
  } else if (!strcmp(op, "nll_loss")) {
    int64_t ignore = 0;
    bool has_ignore = tf_param_int(c, "ignore_index", &ignore);
    ok = tf_matches(c->name, tg_nll_loss(in[0], in[1], iparam(c, "weight", 0) ? in[2] : NULL, has_ignore, ignore, red),
                    &c->outputs[0], atol, rtol);
  } else if (!strcmp(op, "sdpa")) {
    int64_t kind = iparam(c, "mask", 0);
    tg_tensor *mask = kind == 2 ? tg_cast(in[3], TG_BOOL) : kind == 3 ? in[3] : NULL;
    ok = tf_matches(c->name, tg_scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, kind == 1), &c->outputs[0],
                    atol, rtol);
  } else {
    fprintf(stderr, "  %s: unknown op %s\n", c->name, op);
  }
  tg_state_dict_free(sd);
  return ok; /* the inputs and results belong to the case's scope */
}

static void fixture_cases(void) { tf_run_file("nn_layers.tgf", "TG_NN_ONLY", 55, run_case); }

/* ------------------------------------------------------------------------------------------ non-fixture checks */

static void host_floats(tg_tensor *t, float *out, size_t n) {
  tg_status st = tg_to_host(t, out, n * sizeof *out);
  CHECK_MSG(st == TG_OK, "to_host: %s", tg_last_error());
}

static bool close_to(tg_tensor *t, const float *want, size_t n) {
  float got[16];
  if (!t || n > 16 || tg_to_host(t, got, n * sizeof *got) != TG_OK) return false;
  for (size_t i = 0; i < n; i++)
    if (fabsf(got[i] - want[i]) > 1e-6f) {
      fprintf(stderr, "  element %zu: %.9g, tinygrad %.9g\n", i, got[i], want[i]);
      return false;
    }
  return true;
}

/* Seeded initializations and dropout give tinygrad's numbers: the values below were printed by tinygrad (/work/tgref,
 * DEV=CPU) for the same calls after the same Tensor.manual_seed. */
static void tinygrad_numbers(void) {
  tg_scope s = tg_scope_begin();
  tg_manual_seed(42);
  CHECK(close_to(tg_glorot_uniform(TG_SHAPE(2, 3), TG_VOID),
                 (const float[]){-0.26062288880348206f, -1.0740283727645874f, -0.848311185836792f,
                                 -0.8375784754753113f, 0.011747105978429317f, -0.28019240498542786f}, 6));
  tg_manual_seed(42);
  tg_linear_layer *l = tg_linear_new(3, 2, true);
  CHECK(l && close_to(l->weight, (const float[]){-0.13736030459403992f, -0.5660625696182251f, -0.4470992088317871f,
                                                 -0.4414425790309906f, 0.0061912680976092815f, -0.14767436683177948f}, 6));
  CHECK(l && close_to(l->bias, (const float[]){0.03888297453522682f, -0.14336960017681122f}, 2));
  tg_linear_free(l);
  /* ConvTranspose2d draws Conv2d's weight and bias first, then its own weight. (tinygrad's lazy RNG counter makes a
   * tensor's numbers depend on realize order; these are tinygrad's with bias realized before weight, the creation
   * order, which is what a host-side counter gives.) */
  tg_manual_seed(7);
  tg_conv2d_layer *c = tg_conv_transpose2d_new(2, 1, (const int64_t[2]){2, 2}, NULL);
  CHECK(c && close_to(tg_flatten(c->weight, 0, -1), (const float[]){0.030129265040159225f, 0.18122133612632751f,
                  -0.2882212996482849f, -0.30321842432022095f, -0.08956778049468994f, 0.3529624044895172f,
                  0.26419076323509216f, 0.20264777541160583f}, 8));
  CHECK(c && close_to(c->bias, (const float[]){-0.06542514264583588f}, 1));
  tg_conv2d_free(c);
  tg_manual_seed(3);
  tg_embedding_layer *e = tg_embedding_new(4, 2);
  CHECK(e && close_to(e->weight, (const float[]){-0.34783363342285156f, 0.5241343975067139f, -0.8590679168701172f,
                                                 0.8349990844726562f, -0.5633955001831055f, -0.9858746528625488f,
                                                 -0.03520512580871582f, -0.753054141998291f}, 8));
  tg_embedding_free(e);
  tg_manual_seed(5);
  tg_tensor *x = tg_contiguous(tg_ones(TG_SHAPE(8), TG_VOID));
  CHECK(tg_realize(x) == TG_OK);
  tg_set_training(true);
  CHECK(close_to(tg_dropout(x, 0.5), (const float[]){2, 2, 2, 2, 2, 0, 0, 2}, 8));
  tg_set_training(false);
  tg_manual_seed(9);
  CHECK(close_to(tg_kaiming_uniform(TG_SHAPE(2, 2), 0.01, TG_VOID),
                 (const float[]){1.4497591257095337f, 1.4720302820205688f, 1.0353926420211792f, 1.5239123106002808f}, 4));
  CHECK(close_to(tg_kaiming_normal(TG_SHAPE(2, 2), 0.01, TG_VOID),
                 (const float[]){1.1865417957305908f, -0.6891995072364807f, 0.9264129996299744f, 0.15905143320560455f}, 4));
  CHECK(close_to(tg_scaled_uniform(TG_SHAPE(2, 2), TG_VOID),
                 (const float[]){0.09414374828338623f, 0.37504100799560547f, -0.1747286319732666f, 0.06838393211364746f}, 4));
  tg_scope_end(s);
}

/* Initializer bounds and distributions, and the default initializations of the layers. */
static void initializers(void) {
  tg_scope s = tg_scope_begin();
  float v[6];
  tg_manual_seed(42);
  tg_tensor *g = tg_glorot_uniform(TG_SHAPE(2, 3), TG_VOID);
  CHECK(g && tg_get_dtype(g) == TG_FLOAT32);
  host_floats(g, v, 6);
  double bound = sqrt(6.0 / 5.0);
  for (int i = 0; i < 6; i++) CHECK(v[i] >= -bound && v[i] < bound);
  tg_manual_seed(42);
  tg_tensor *u = tg_uniform(TG_SHAPE(2, 3), -bound, bound, TG_VOID);
  float w[6];
  host_floats(u, w, 6);
  for (int i = 0; i < 6; i++) CHECK_NEAR(v[i], w[i], 0);
  /* kaiming_uniform: bound sqrt(6 / (1 + a^2) / fan_in) */
  tg_tensor *k = tg_kaiming_uniform(TG_SHAPE(64, 8, 3, 3), 0.01, TG_VOID);
  float *kv = malloc(64 * 72 * sizeof *kv);
  host_floats(k, kv, 64 * 72);
  double kb = sqrt(6.0 / (1 + 0.0001) / 72), maxabs = 0;
  for (int i = 0; i < 64 * 72; i++) maxabs = fmax(maxabs, fabs(kv[i]));
  CHECK(maxabs <= kb && maxabs > 0.95 * kb);
  free(kv);
  /* kaiming_normal: std sqrt(2 / (1 + a^2) / fan_in), checked on the sample std */
  tg_tensor *kn = tg_kaiming_normal(TG_SHAPE(256, 50), 0.0, TG_VOID);
  double sd;
  CHECK(tg_item_double(tg_std(kn, NULL, 0, false, 1), &sd) == TG_OK);
  CHECK_NEAR(sd, sqrt(2.0 / 50), 0.01);
  tg_tensor *su = tg_scaled_uniform(TG_SHAPE(4, 25), TG_VOID);
  double mx;
  CHECK(tg_item_double(tg_max(tg_abs(su), NULL, 0, false), &mx) == TG_OK);
  CHECK(mx <= 0.1 && mx > 0.05);
  CHECK(tg_glorot_uniform(NULL, 0, TG_VOID) == NULL && tg_last_status() == TG_ERR_INVALID_ARGUMENT);
  /* default layer inits: Linear weight/bias in U(-1/sqrt(in), 1/sqrt(in)); norms start at ones/zeros */
  tg_linear_layer *l = tg_linear_new(16, 4, true);
  float lw[64];
  host_floats(l->weight, lw, 64);
  for (int i = 0; i < 64; i++) CHECK(fabsf(lw[i]) <= 0.25f);
  CHECK(tg_get_requires_grad(l->weight) && tg_get_requires_grad(l->bias));
  tg_linear_free(l);
  tg_batchnorm_layer *bn = tg_batchnorm_new(3, 1e-5, 0.1, true, true);
  float b3[3];
  host_floats(bn->weight, b3, 3);
  CHECK(b3[0] == 1 && b3[1] == 1 && b3[2] == 1);
  host_floats(bn->running_var, b3, 3);
  CHECK(b3[0] == 1 && b3[2] == 1);
  CHECK(!tg_get_requires_grad(bn->running_mean) && tg_get_dtype(bn->num_batches_tracked) == TG_INT64);
  tg_batchnorm_free(bn);
  tg_scope_end(s);
}

static void dropout_and_training(void) {
  tg_scope s = tg_scope_begin();
  CHECK(!tg_is_training());
  tg_tensor *x = tg_ones(TG_SHAPE(1000), TG_VOID);
  float v[1000];
  host_floats(tg_dropout(x, 0.5), v, 1000);
  bool all_one = true;
  for (int i = 0; i < 1000; i++) all_one = all_one && v[i] == 1.0f;
  CHECK(all_one); /* not training: identity */
  CHECK(!tg_set_training(true));
  host_floats(tg_dropout(x, 0.5), v, 1000);
  int zeros = 0, twos = 0;
  for (int i = 0; i < 1000; i++) zeros += v[i] == 0.0f, twos += v[i] == 2.0f;
  CHECK(zeros + twos == 1000);
  CHECK(zeros > 400 && zeros < 600);
  host_floats(tg_dropout(x, 1.0), v, 1000);
  CHECK(v[0] == 0 && v[999] == 0);
  host_floats(tg_dropout(x, 0.0), v, 1000);
  CHECK(v[0] == 1 && v[999] == 1);
  CHECK(tg_set_training(false));
  CHECK(tg_dropout(x, 1.5) == NULL && tg_last_status() == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_dropout(x, NAN) == NULL);
  tg_scope_end(s);
}

static void batchnorm_buffers(void) {
  tg_scope s = tg_scope_begin();
  tg_batchnorm_layer *bn = tg_batchnorm_new(2, 1e-5, 0.5, true, true);
  const float xs[8] = {1, 2, 3, 4, 10, 20, 30, 40}; /* (2, 2, 2): channel 0 {1,2,10,20}, channel 1 {3,4,30,40} */
  tg_tensor *x = tg_from_floats(xs, TG_SHAPE(2, 2, 2));
  tg_state_dict *sd = tg_state_dict_new();
  CHECK(tg_batchnorm_state(bn, "bn", sd) == TG_OK);
  CHECK_EQ_INT(tg_state_dict_len(sd), 5);
  CHECK_EQ_STR(tg_state_dict_name(sd, 2), "bn.num_batches_tracked");
  CHECK_EQ_INT(tg_state_dict_parameters(sd, NULL, 0), 2);
  tg_tensor *bufs[3];
  CHECK_EQ_INT(tg_state_dict_buffers(sd, bufs, 3), 3);
  CHECK(bufs[1] == bn->running_mean);
  tg_set_training(true);
  for (int step = 0; step < 2; step++) {
    tg_tensor *y = tg_batchnorm_forward(bn, x);
    CHECK(y && tg_realize(y) == TG_OK);
    CHECK(tg_state_dict_realize(sd) == TG_OK);
  }
  tg_set_training(false);
  float rm[2];
  host_floats(bn->running_mean, rm, 2);
  /* mean 8.25 and 19.25; momentum 0.5 twice from 0: 0.75 * mean */
  CHECK_NEAR(rm[0], 0.75 * 8.25, 1e-4);
  CHECK_NEAR(rm[1], 0.75 * 19.25, 1e-4);
  int64_t nb;
  CHECK(tg_item_int64(bn->num_batches_tracked, &nb) == TG_OK && nb == 2);
  /* eval mode uses the running statistics: (x - rm) / sqrt(rv + eps) */
  float rv[2], y8[8];
  host_floats(bn->running_var, rv, 2);
  host_floats(tg_batchnorm_forward(bn, x), y8, 8);
  CHECK_NEAR(y8[0], (1 - rm[0]) / sqrt(rv[0] + 1e-5), 1e-4);
  CHECK_NEAR(y8[7], (40 - rm[1]) / sqrt(rv[1] + 1e-5), 1e-4);
  /* one value per channel cannot give an unbiased variance */
  tg_set_training(true);
  CHECK(tg_batchnorm_forward(bn, tg_ones(TG_SHAPE(1, 2), TG_VOID)) == NULL);
  tg_set_training(false);
  CHECK(tg_batchnorm_forward(bn, tg_ones(TG_SHAPE(2, 3), TG_VOID)) == NULL); /* wrong channel count */
  tg_state_dict_free(sd);
  tg_batchnorm_free(bn);
  tg_scope_end(s);
}

static void state_dicts(void) {
  tg_scope s = tg_scope_begin();
  tg_linear_layer *a = tg_linear_new(3, 2, true), *b = tg_linear_new(3, 2, true), *nob = tg_linear_new(3, 2, false);
  tg_conv2d_layer *c = tg_conv2d_new(1, 2, (const int64_t[2]){3, 3}, NULL);
  tg_state_dict *sa = tg_state_dict_new(), *sb = tg_state_dict_new();
  CHECK(tg_linear_state(a, "l1", sa) == TG_OK && tg_conv2d_state(c, "layers.0", sa) == TG_OK);
  CHECK_EQ_INT(tg_state_dict_len(sa), 4);
  CHECK_EQ_STR(tg_state_dict_name(sa, 0), "l1.weight");
  CHECK_EQ_STR(tg_state_dict_name(sa, 3), "layers.0.bias");
  CHECK(tg_state_dict_get(sa, "l1.bias") == a->bias && tg_state_dict_get(sa, "nope") == NULL);
  tg_tensor *ps[8];
  CHECK_EQ_INT(tg_state_dict_parameters(sa, ps, 8), 4);
  CHECK(ps[2] == c->weight);
  CHECK(tg_linear_state(a, "l1", sa) == TG_ERR_INVALID_ARGUMENT); /* duplicate names */
  /* load a's values into b: b's forward then equals a's */
  CHECK(tg_linear_state(b, "l1", sb) == TG_OK);
  CHECK(tg_load_state_dict(sb, sa, true) == TG_OK);
  float wa[6], wb[6];
  host_floats(a->weight, wa, 6);
  host_floats(b->weight, wb, 6);
  CHECK(memcmp(wa, wb, sizeof wa) == 0);
  tg_tensor *x = tg_ones(TG_SHAPE(1, 3), TG_VOID);
  float ya[2], yb[2];
  host_floats(tg_linear_forward(a, x), ya, 2);
  host_floats(tg_linear_forward(b, x), yb, 2);
  CHECK(ya[0] == yb[0] && ya[1] == yb[1]);
  /* a model with a name the source lacks: strict fails and changes nothing, non-strict loads the rest */
  tg_state_dict *sn = tg_state_dict_new();
  CHECK(tg_linear_state(nob, "l1", sn) == TG_OK && tg_linear_state(b, "extra", sn) == TG_OK);
  CHECK(tg_load_state_dict(sn, sa, true) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "extra.weight") != NULL);
  CHECK(tg_load_state_dict(sn, sa, false) == TG_OK);
  float wn[6];
  host_floats(nob->weight, wn, 6);
  CHECK(memcmp(wa, wn, sizeof wa) == 0);
  /* shape mismatch, a dtype that is cast, and () vs (1,) */
  tg_state_dict *bad = tg_state_dict_new();
  CHECK(tg_state_dict_add(bad, "l1.weight", tg_zeros(TG_SHAPE(3, 2), TG_VOID), true) == TG_OK);
  CHECK(tg_state_dict_add(bad, "l1.bias", tg_zeros(TG_SHAPE(2), TG_VOID), true) == TG_OK);
  CHECK(tg_load_state_dict(sb, bad, true) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "shape mismatch") != NULL);
  host_floats(b->weight, wb, 6);
  CHECK(memcmp(wa, wb, sizeof wa) == 0); /* unchanged */
  tg_state_dict *halfd = tg_state_dict_new();
  CHECK(tg_state_dict_add(halfd, "l1.weight", tg_full(TG_SHAPE(2, 3), 0.5, TG_FLOAT64), true) == TG_OK);
  CHECK(tg_state_dict_add(halfd, "l1.bias", tg_full(TG_SHAPE(2), -1, TG_INT32), true) == TG_OK);
  CHECK(tg_load_state_dict(sb, halfd, true) == TG_OK);
  host_floats(b->weight, wb, 6);
  CHECK(wb[0] == 0.5f && wb[5] == 0.5f && tg_get_dtype(b->weight) == TG_FLOAT32);
  host_floats(b->bias, wb, 2);
  CHECK(wb[0] == -1.0f);
  tg_state_dict *sc = tg_state_dict_new(), *one = tg_state_dict_new();
  tg_tensor *scalar = tg_zeros(NULL, 0, TG_FLOAT32);
  CHECK(tg_realize(scalar) == TG_OK);
  CHECK(tg_state_dict_add(sc, "s", scalar, false) == TG_OK);
  CHECK(tg_state_dict_add(one, "s", tg_full(TG_SHAPE(1), 7, TG_FLOAT32), true) == TG_OK);
  CHECK(tg_load_state_dict(sc, one, true) == TG_OK);
  double sv;
  CHECK(tg_item_double(scalar, &sv) == TG_OK && sv == 7);
  CHECK(tg_state_dict_add(sc, "n", NULL, true) != TG_OK);
  CHECK(tg_state_dict_metadata(sc, "k") == NULL && tg_state_dict_set_metadata(sc, "k", "v") == TG_OK);
  CHECK_EQ_STR(tg_state_dict_metadata(sc, "k"), "v");
  for (tg_state_dict **d = (tg_state_dict *[]){sa, sb, sn, bad, halfd, sc, one, NULL}; *d; d++) tg_state_dict_free(*d);
  tg_linear_free(a);
  tg_linear_free(b);
  tg_linear_free(nob);
  tg_conv2d_free(c);
  tg_scope_end(s);
}

static void argument_errors(void) {
  tg_scope s = tg_scope_begin();
  CHECK(tg_linear_new(0, 3, true) == NULL && tg_last_status() == TG_ERR_INVALID_ARGUMENT);
  tg_conv2d_options o = {.groups = 3};
  CHECK(tg_conv2d_new(4, 6, (const int64_t[2]){3, 3}, &o) == NULL); /* 4 channels in 3 groups */
  tg_conv2d_options same_strided = {.stride = {2, 2}, .padding_same = true};
  CHECK(tg_conv2d_new(1, 1, (const int64_t[2]){3, 3}, &same_strided) == NULL);
  CHECK(tg_groupnorm_new(3, 4, 1e-5, true) == NULL);
  CHECK(tg_layernorm_new(NULL, 0, 1e-5, true) == NULL);
  tg_layernorm_layer *ln = tg_layernorm_new(TG_SHAPE(4), 1e-5, false);
  CHECK(ln && ln->weight == NULL);
  CHECK(tg_layernorm_forward(ln, tg_ones(TG_SHAPE(2, 3), TG_VOID)) == NULL);
  tg_layernorm_free(ln);
  tg_embedding_layer *e = tg_embedding_new(5, 2);
  CHECK(tg_embedding_forward(e, tg_ones(TG_SHAPE(3), TG_VOID)) == NULL); /* float indices */
  CHECK(strstr(tg_last_error(), "integer") != NULL);
  tg_embedding_free(e);
  tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_VOID), *yi = tg_zeros(TG_SHAPE(2), TG_INT32);
  CHECK(tg_cross_entropy(x, tg_zeros(TG_SHAPE(3), TG_INT32), TG_REDUCTION_MEAN, 0) == NULL);
  CHECK(tg_cross_entropy(x, yi, TG_REDUCTION_MEAN, 1.5) == NULL);
  CHECK(tg_cross_entropy(x, yi, (tg_reduction)7, 0) == NULL);
  CHECK(tg_sparse_categorical_crossentropy(x, tg_zeros(TG_SHAPE(2), TG_FLOAT32), -1, 0, TG_REDUCTION_MEAN) == NULL);
  CHECK(tg_nll_loss(x, x, NULL, false, 0, TG_REDUCTION_MEAN) == NULL);
  CHECK(tg_scaled_dot_product_attention(x, x, x, x, 0, true) == NULL); /* mask and causal */
  CHECK(tg_conv_transpose2d(x, x, NULL, 1, NULL, NULL, NULL, NULL) == NULL);
  tg_tensor *x4 = tg_ones(TG_SHAPE(1, 1, 3, 3), TG_VOID), *w4 = tg_ones(TG_SHAPE(1, 1, 2, 2), TG_VOID);
  CHECK(tg_conv_transpose2d(x4, w4, NULL, 1, NULL, NULL, NULL, (const int64_t[2]){1, 1}) == NULL); /* op >= stride */
  CHECK(tg_linear_forward(NULL, x) == NULL);
  CHECK(tg_batchnorm(x, NULL, NULL, NULL, NULL, NULL, 0) == NULL);
  /* a NULL input keeps the first error */
  CHECK(tg_linear(NULL, x, NULL) == NULL);
  tg_scope_end(s);
}

/* The layers train: a small conv + BatchNorm + Linear net gets gradients for every parameter through tg_backward,
 * and Adam (given parameters and buffers, as tinygrad's get_parameters) lowers the loss on a fixed batch. */
static void trains(void) {
  tg_manual_seed(1);
  tg_conv2d_layer *conv = tg_conv2d_new(1, 4, (const int64_t[2]){3, 3}, NULL);
  tg_batchnorm_layer *bn = tg_batchnorm_new(4, 1e-5, 0.1, true, true);
  tg_linear_layer *fc = tg_linear_new(4 * 4 * 4, 3, true);
  tg_state_dict *sd = tg_state_dict_new();
  CHECK(tg_conv2d_state(conv, "layers.0", sd) == TG_OK && tg_batchnorm_state(bn, "layers.1", sd) == TG_OK &&
        tg_linear_state(fc, "layers.3", sd) == TG_OK);
  tg_tensor *all[16];
  size_t n = tg_state_dict_len(sd);
  for (size_t i = 0; i < n; i++) all[i] = tg_state_dict_tensor(sd, i);
  tg_optim *opt = tg_optim_adam(all, n, 0.01, 0.9, 0.999, 1e-8);
  CHECK(opt && tg_optim_nparams(opt) == 6);
  tg_scope s0 = tg_scope_begin();
  tg_tensor *x = tg_scope_keep(tg_randn(TG_SHAPE(8, 1, 6, 6), TG_VOID));
  const int32_t labels[8] = {0, 1, 2, 0, 1, 2, 0, 1};
  tg_tensor *y = tg_scope_keep(tg_from_data(labels, TG_INT32, TG_SHAPE(8)));
  tg_scope_end(s0);
  bool prev = tg_set_training(true);
  double first = 0, last = 0;
  for (int step = 0; step < 8; step++) {
    tg_scope s = tg_scope_begin();
    tg_tensor *h = tg_relu(tg_batchnorm_forward(bn, tg_conv2d_forward(conv, x)));
    tg_tensor *loss = tg_sparse_categorical_crossentropy(tg_linear_forward(fc, tg_flatten(h, 1, -1)), y, -1, 0,
                                                         TG_REDUCTION_MEAN);
    tg_optim_zero_grad(opt);
    CHECK(loss && tg_backward(loss) == TG_OK);
    if (step == 0) {
      tg_tensor *gw = tg_grad(conv->weight), *gb = tg_grad(fc->bias);
      CHECK(gw && tg_ndim(gw) == 4 && tg_shape(gw)[0] == 4 && gb && tg_numel(gb) == 3);
      CHECK(tg_grad(bn->weight) != NULL && tg_grad(bn->running_mean) == NULL);
    }
    CHECK(tg_optim_step_with(opt, &loss, 1) == TG_OK);
    double v = NAN;
    CHECK(tg_item_double(loss, &v) == TG_OK && isfinite(v));
    if (step == 0) first = v;
    last = v;
    tg_scope_end(s);
  }
  tg_set_training(prev);
  CHECK_MSG(last < first * 0.8, "loss %g -> %g", first, last);
  int64_t nb = 0;
  CHECK(tg_item_int64(bn->num_batches_tracked, &nb) == TG_OK && nb == 8);
  tg_optim_free(opt);
  tg_release(x);
  tg_release(y);
  tg_state_dict_free(sd);
  tg_conv2d_free(conv);
  tg_batchnorm_free(bn);
  tg_linear_free(fc);
}

void suite_nn(void) {
  size_t live = tg_live_tensors();
  fixture_cases();
  tinygrad_numbers();
  initializers();
  dropout_and_training();
  batchnorm_buffers();
  state_dicts();
  argument_errors();
  trains();
  CHECK_EQ_INT(tg_live_tensors(), live);
}
