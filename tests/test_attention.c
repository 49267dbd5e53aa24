/* test_attention.c — tg_attention and tg_flash_attention (src/nn/attention.c).
 *
 * 1. Every case of tests/fixtures/attention.tgf (tools/gen_attention_fixtures.py, PyTorch in float64): the plain and
 *    the flash forms (several block sizes: one block, blocks that divide S, a partial last block) against torch's
 *    output, and the gradients w.r.t. q, k, v and the sinks of sum(out * dout).
 * 2. flash == plain on random shapes and options (GQA, causal offsets, windows, sinks, masks, block sizes); float16
 *    inputs give a float16 result close to float32.
 * 3. A symbolic key length (a KV cache viewed at start_pos + T, start_pos a bound Variable) against the concrete
 *    program, with one compile for every value; a JIT'd decode step (store k/v at start_pos, flash attention over
 *    cache[:start_pos+1]) replayed for 12 positions against the plain form on host-kept caches.
 * 4. Errors on bad shapes and options, naming the op. TG_ATTN_ONLY=<substring> runs only the matching fixtures. */
#include <math.h>
#include <stdlib.h>

#include "base/base.h"
#include "fixture.h"
#include "runtime/runtime.h"
#include "test.h"
#include "tinygrad.h"

static tg_tensor *from_tf(const tf_tensor *t) {
  return tg_from_data(t->data, t->dtype == TF_BOOL ? TG_BOOL : TG_FLOAT32, t->shape, (size_t)t->ndim);
}

static int64_t iparam(const tf_case *c, const char *key) {
  int64_t v;
  return tf_param_int(c, key, &v) ? v : 0;
}

typedef tg_tensor *(*attn_fn)(const tg_tensor *, const tg_tensor *, const tg_tensor *, const tg_attention_opts *);

static bool run_case(const tf_case *c) {
  tg_tensor *in[TF_MAX_TENSORS] = {0};
  for (int i = 0; i < c->ninputs; i++) in[i] = from_tf(&c->inputs[i]);
  tg_attention_opts o = {0};
  o.causal = iparam(c, "causal") != 0;
  o.start = TG_SI(iparam(c, "start"));
  o.window = iparam(c, "window");
  double scale = 0;
  if (tf_param_double(c, "scale", &scale)) o.scale = scale;
  int next = 3;
  bool has_sinks = iparam(c, "sinks") != 0, grad = iparam(c, "grad") != 0;
  if (has_sinks) o.sinks = in[next++];
  if (iparam(c, "mask")) o.mask = in[next++];
  tg_tensor *dout = grad ? in[next++] : NULL;
  bool ok = true;
  const int64_t blocks[] = {0, 4, 3, 1000};
  for (int form = 0; form < 5; form++) {
    attn_fn fn = form == 0 ? tg_attention : tg_flash_attention;
    o.block = form == 0 ? 0 : blocks[form - 1];
    char what[128];
    snprintf(what, sizeof what, "%s %s block %lld", c->name, form ? "flash" : "plain", (long long)o.block);
    tg_tensor *out = fn(in[0], in[1], in[2], &o);
    const tg_tensor *wrt[4] = {in[0], in[1], in[2], o.sinks};
    tg_tensor *g[4] = {0};
    size_t nw = has_sinks ? 4 : 3;
    /* the gradients are built before out is realized (realizing cuts its graph off the inputs) */
    bool with_grad = grad && out && !(tg_test_light() && form > 1);
    if (with_grad && tg_gradient(tg_sum(tg_mul(out, dout), NULL, 0, false), wrt, nw, g) != TG_OK) {
      fprintf(stderr, "  %s: gradient failed: %s\n", what, tg_last_error());
      ok = false;
      with_grad = false;
    }
    ok &= tf_matches(what, out, &c->outputs[0], c->atol, c->rtol);
    static const char *names[] = {"dq", "dk", "dv", "dsinks"};
    for (size_t i = 0; with_grad && i < nw; i++) {
      char w2[160];
      snprintf(w2, sizeof w2, "%s %s", what, names[i]);
      ok &= tf_matches(w2, g[i], &c->outputs[1 + i], c->atol, c->rtol);
    }
  }
  return ok;
}

static void fixture_cases(void) { tf_run_file("attention.tgf", "TG_ATTN_ONLY", 25, run_case); }

/* ------------------------------------------------------------------------------------------- flash == plain */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static tg_tensor *rnd_tensor(const int64_t *shape, size_t ndim, float lo, float hi) {
  int64_t n = 1;
  for (size_t i = 0; i < ndim; i++) n *= shape[i];
  float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(rnd() % 100000) / 100000.0f;
  tg_tensor *t = tg_from_floats(v, shape, ndim);
  free(v);
  return t;
}

/* max |a - b| / (1 + |b|) over two concrete float tensors of the same shape, or INFINITY */
static double rel_diff(tg_tensor *a, tg_tensor *b) {
  if (!a || !b || tg_numel(a) != tg_numel(b)) return INFINITY;
  size_t n = (size_t)tg_numel(a);
  float *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
  double worst = 0;
  if (tg_to_host(a, x, n * sizeof *x) != TG_OK || tg_to_host(b, y, n * sizeof *y) != TG_OK) worst = INFINITY;
  for (size_t i = 0; i < n && worst < INFINITY; i++) {
    double d = fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
    if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
  }
  free(x);
  free(y);
  return worst;
}

static void flash_equals_plain(void) {
  int n = tg_test_light() ? 6 : 20;
  for (int it = 0; it < n; it++) {
    tg_scope s = tg_scope_begin();
    int64_t kvh = rnd_in(1, 2), g = rnd_in(1, 3), b = rnd_in(1, 2), d = rnd_in(1, 3) * 4, dv = rnd_in(1, 2) * 3;
    int64_t h = kvh * g, sl = rnd_in(1, 70), tmax = it % 3 == 2 ? 24 : 9, t = rnd_in(1, sl < tmax ? sl : tmax);
    tg_attention_opts o = {0};
    o.causal = rnd() % 3 != 0;
    if (o.causal) o.start = TG_SI(sl - t - (int64_t)(rnd() % 2) * (sl - t) / 2);
    if (o.causal && rnd() % 2) o.window = rnd_in(1, 12);
    if (rnd() % 2) o.sinks = rnd_tensor(TG_SHAPE(h), -1, 2);
    if (!o.causal && rnd() % 2) o.mask = rnd_tensor(TG_SHAPE(1, h, t, sl), -2, 1);
    o.block = (int64_t[]){0, 1, 5, 16, 32}[rnd() % 5];
    tg_tensor *q = rnd_tensor(TG_SHAPE(b, h, t, d), -2, 2), *k = rnd_tensor(TG_SHAPE(b, kvh, sl, d), -2, 2),
              *v = rnd_tensor(TG_SHAPE(b, kvh, sl, dv), -2, 2);
    double e = rel_diff(tg_flash_attention(q, k, v, &o), tg_attention(q, k, v, &o));
    CHECK_MSG(e < 1e-5, "flash vs plain it %d: B %lld H %lld KVH %lld T %lld S %lld D %lld causal %d start %lld "
              "window %lld sinks %d mask %d block %lld: rel diff %g (%s)", it, (long long)b, (long long)h,
              (long long)kvh, (long long)t, (long long)sl, (long long)d, o.causal, (long long)o.start.n,
              (long long)o.window, o.sinks != NULL, o.mask != NULL, (long long)o.block, e, tg_last_error());
    tg_scope_end(s);
  }
  /* causal, T longer than a block: the query blocks attend to their keys only (3 blocks of 16, the last partial), with
   * and without sinks, against the plain form and against the flash form without the chunks */
  for (int sinks = 0; sinks <= 1; sinks++) {
    tg_scope s = tg_scope_begin();
    tg_attention_opts o = {.causal = true, .start = TG_SI(10), .block = 16};
    if (sinks) o.sinks = rnd_tensor(TG_SHAPE(4), -1, 2);
    tg_tensor *q = rnd_tensor(TG_SHAPE(1, 4, 40, 8), -2, 2), *k = rnd_tensor(TG_SHAPE(1, 2, 50, 8), -2, 2),
              *v = rnd_tensor(TG_SHAPE(1, 2, 50, 8), -2, 2);
    tg_tensor *chunked = tg_flash_attention(q, k, v, &o);
    test_setenv("ATTN_CAUSAL_CHUNKS", "0");
    tg_tensor *whole = tg_flash_attention(q, k, v, &o);
    test_unsetenv("ATTN_CAUSAL_CHUNKS");
    double e1 = rel_diff(chunked, tg_attention(q, k, v, &o)), e2 = rel_diff(chunked, whole);
    CHECK_MSG(e1 < 1e-5 && e2 < 1e-5, "causal chunks sinks %d: rel diff %g vs plain, %g vs unchunked (%s)", sinks, e1,
              e2, tg_last_error());
    tg_scope_end(s);
  }
}

/* half inputs (a float16 KV cache): the result is float16, computed in float32, close to the float32 result */
static void half_inputs(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *q = rnd_tensor(TG_SHAPE(1, 4, 3, 8), -2, 2), *k = rnd_tensor(TG_SHAPE(1, 2, 50, 8), -2, 2);
  tg_tensor *v = rnd_tensor(TG_SHAPE(1, 2, 50, 8), -2, 2);
  tg_tensor *qh = tg_cast(q, TG_FLOAT16), *kh = tg_cast(k, TG_FLOAT16), *vh = tg_cast(v, TG_FLOAT16);
  tg_attention_opts o = {.causal = true, .start = TG_SI(47), .sinks = rnd_tensor(TG_SHAPE(4), -1, 1), .block = 16};
  for (int form = 0; form < 2; form++) {
    for (int w = 0; w <= 8; w += 8) {
      o.window = w;
      attn_fn fn = form ? tg_flash_attention : tg_attention;
      tg_tensor *h = fn(qh, kh, vh, &o);
      CHECK_MSG(h && tg_get_dtype(h) == TG_FLOAT16, "half %s: %s", form ? "flash" : "plain", tg_last_error());
      /* the reference: float32 on the same (rounded) inputs */
      tg_tensor *want = tg_attention(tg_cast(qh, TG_FLOAT32), tg_cast(kh, TG_FLOAT32), tg_cast(vh, TG_FLOAT32), &o);
      double e = rel_diff(tg_cast(h, TG_FLOAT32), want);
      CHECK_MSG(e < 2e-3, "half %s window %d: rel diff %g", form ? "flash" : "plain", w, e);
    }
  }
  tg_scope_end(s);
}

/* ------------------------------------------------------------------------------------------ symbolic length */

static long programs_requested(void) {
  RtStats st = rt_stats();
  return st.kernels_compiled + st.disk_hits + st.memory_hits;
}

/* decode / chunked prefill against a KV cache (1, KVH, 40, D) viewed at sp + T keys, sp a bound Variable */
static void symbolic_length(void) {
  tg_scope s = tg_scope_begin();
  const int64_t kvh = 2, h = 4, d = 8, smax = 40;
  tg_tensor *kc = rnd_tensor(TG_SHAPE(1, kvh, smax, d), -2, 2), *vc = rnd_tensor(TG_SHAPE(1, kvh, smax, d), -2, 2);
  tg_tensor *sinks = rnd_tensor(TG_SHAPE(h), 0, 2);
  CHECK(tg_realize(kc) == TG_OK && tg_realize(vc) == TG_OK && tg_realize(sinks) == TG_OK);
  tg_tensor *var = tg_variable("start_pos", 0, smax - 4);
  for (int t = 1; t <= 3; t += 2) {
    tg_tensor *q = rnd_tensor(TG_SHAPE(1, h, t, d), -2, 2);
    CHECK(tg_realize(q) == TG_OK);
    for (int form = 0; form < 2; form++) {
      const int sps[] = {0, 5, 17, 30, 36};
      for (size_t i = 0; i < sizeof sps / sizeof sps[0]; i++) {
        int sp = sps[i];
        if (sp + t > smax) continue;
        tg_scope in = tg_scope_begin();
        tg_tensor *vb = tg_bind(var, sp);
        tg_sint kb[8] = {TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(kvh), TG_SI(0), TG_SV(vb, t), TG_SI(0), TG_SI(d)};
        tg_attention_opts o = {.causal = true, .start = TG_SV(vb, 0), .window = 6, .sinks = sinks, .block = 8};
        attn_fn fn = form ? tg_flash_attention : tg_attention;
        tg_tensor *got = fn(q, tg_shrink_sym(kc, kb, 4), tg_shrink_sym(vc, kb, 4), &o);
        CHECK_MSG(got && !tg_is_symbolic(got), "symbolic %s sp %d: %s", form ? "flash" : "plain", sp, tg_last_error());
        long before = programs_requested();
        CHECK_MSG(got && tg_realize(got) == TG_OK, "realize: %s", tg_last_error());
        long fresh = programs_requested() - before;
        /* every value after the first reuses the compiled kernels and the schedule (no program is requested) */
        if (i > 0) CHECK_MSG(fresh == 0, "symbolic %s t %d sp %d: %ld programs requested", form ? "flash" : "plain",
                             t, sp, fresh);
        int64_t cb[8] = {0, 1, 0, kvh, 0, sp + t, 0, d};
        tg_attention_opts oc = o;
        oc.start = TG_SI(sp);
        tg_tensor *want = tg_attention(q, tg_shrink(kc, cb, 4), tg_shrink(vc, cb, 4), &oc);
        double e = rel_diff(got, want);
        CHECK_MSG(e < 1e-5, "symbolic %s t %d sp %d: rel diff %g (%s)", form ? "flash" : "plain", t, sp, e,
                  tg_last_error());
        tg_scope_end(in);
      }
    }
  }
  tg_scope_end(s);
}

/* a symbolic query count (a chunk of up to 20 tokens) over concrete keys, both forms */
static void symbolic_queries(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *q = rnd_tensor(TG_SHAPE(1, 2, 20, 8), -2, 2), *k = rnd_tensor(TG_SHAPE(1, 1, 30, 8), -2, 2);
  tg_tensor *v = rnd_tensor(TG_SHAPE(1, 1, 30, 8), -2, 2), *var = tg_variable("toks", 1, 20);
  CHECK(tg_realize(q) == TG_OK);
  for (int t = 3; t <= 20; t += 17) {
    tg_scope in = tg_scope_begin();
    tg_tensor *vb = tg_bind(var, t);
    tg_tensor *qs = tg_shrink_sym(q, (tg_sint[]){TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(2), TG_SI(0), TG_SV(vb, 0),
                                                 TG_SI(0), TG_SI(8)}, 4);
    tg_tensor *qc = tg_shrink(q, (int64_t[]){0, 1, 0, 2, 0, t, 0, 8}, 4);
    tg_attention_opts o = {.causal = true, .start = TG_SI(30 - 20), .block = 8};
    for (int form = 0; form < 2; form++) {
      attn_fn fn = form ? tg_flash_attention : tg_attention;
      tg_tensor *got = fn(qs, k, v, &o);
      CHECK_MSG(got && tg_is_symbolic(got) && tg_realize(got) == TG_OK, "symbolic T %d %s: %s", t,
                form ? "flash" : "plain", tg_last_error());
      tg_tensor *gc = got ? tg_shrink(got, (int64_t[]){0, 1, 0, 2, 0, t, 0, 8}, 4) : NULL;
      double e = rel_diff(gc, tg_attention(qc, k, v, &o));
      CHECK_MSG(e < 1e-5, "symbolic T %d %s: rel diff %g (%s)", t, form ? "flash" : "plain", e, tg_last_error());
    }
    tg_scope_end(in);
  }
  tg_scope_end(s);
}

/* ----------------------------------------------------------------------------------------- JIT'd decode step */

typedef struct decode_ctx { tg_tensor *kc, *vc, *sinks; } decode_ctx;
enum { DEC_KVH = 2, DEC_H = 4, DEC_D = 8, DEC_MAX = 24, DEC_WINDOW = 5 };

/* one decode step: the new k/v row stored into the caches at start_pos, then flash attention over cache[:sp+1] */
static tg_status decode_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                             tg_tensor **out, size_t nout) {
  (void)nin, (void)nvars, (void)nout;
  decode_ctx *c = user;
  tg_tensor *sp = vars[0];
  tg_sint row[8] = {TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(DEC_KVH), TG_SV(sp, 0), TG_SV(sp, 1), TG_SI(0), TG_SI(DEC_D)};
  tg_sint upto[8] = {TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(DEC_KVH), TG_SI(0), TG_SV(sp, 1), TG_SI(0), TG_SI(DEC_D)};
  if (tg_assign(tg_shrink_sym(c->kc, row, 4), in[1]) != TG_OK || tg_assign(tg_shrink_sym(c->vc, row, 4), in[2]) != TG_OK)
    return tg_last_status();
  tg_attention_opts o = {.causal = true, .start = TG_SV(sp, 0), .window = DEC_WINDOW, .sinks = c->sinks, .block = 4};
  out[0] = tg_flash_attention(in[0], tg_shrink_sym(c->kc, upto, 4), tg_shrink_sym(c->vc, upto, 4), &o);
  return out[0] ? TG_OK : tg_last_status();
}

/* 12 decode steps through tg_jit against tg_attention on concrete copies of the caches kept beside it */
static void jit_decode(void) {
  tg_scope s = tg_scope_begin();
  decode_ctx c = {tg_contiguous(tg_zeros(TG_SHAPE(1, DEC_KVH, DEC_MAX, DEC_D), TG_FLOAT32)),
                  tg_contiguous(tg_zeros(TG_SHAPE(1, DEC_KVH, DEC_MAX, DEC_D), TG_FLOAT32)),
                  rnd_tensor(TG_SHAPE(DEC_H), -1, 1)};
  CHECK(tg_realize(c.kc) == TG_OK && tg_realize(c.vc) == TG_OK && tg_realize(c.sinks) == TG_OK);
  static float kref[DEC_KVH * DEC_MAX * DEC_D], vref[DEC_KVH * DEC_MAX * DEC_D];
  tg_jit *j = tg_jit_new(decode_step, &c, 1, NULL);
  tg_tensor *var = tg_variable("start_pos", 0, DEC_MAX - 1);
  for (int sp = 0; sp < 12; sp++) {
    tg_scope in = tg_scope_begin();
    tg_tensor *q = rnd_tensor(TG_SHAPE(1, DEC_H, 1, DEC_D), -2, 2);
    tg_tensor *kn = rnd_tensor(TG_SHAPE(1, DEC_KVH, 1, DEC_D), -2, 2), *vn = rnd_tensor(TG_SHAPE(1, DEC_KVH, 1, DEC_D), -2, 2);
    CHECK(tg_realize(q) == TG_OK && tg_realize(kn) == TG_OK && tg_realize(vn) == TG_OK);
    float row[DEC_KVH * DEC_D];
    CHECK(tg_to_host(kn, row, sizeof row) == TG_OK);
    for (int h = 0; h < DEC_KVH; h++) memcpy(&kref[(h * DEC_MAX + sp) * DEC_D], &row[h * DEC_D], DEC_D * sizeof(float));
    CHECK(tg_to_host(vn, row, sizeof row) == TG_OK);
    for (int h = 0; h < DEC_KVH; h++) memcpy(&vref[(h * DEC_MAX + sp) * DEC_D], &row[h * DEC_D], DEC_D * sizeof(float));
    tg_tensor *ins[3] = {q, kn, vn}, *vars[1] = {tg_bind(var, sp)}, *out = NULL;
    tg_status st = tg_jit_call(j, ins, 3, vars, 1, &out);
    CHECK_MSG(st == TG_OK, "jit decode sp %d: %s", sp, tg_last_error());
    int64_t cb[8] = {0, 1, 0, DEC_KVH, 0, sp + 1, 0, DEC_D};
    tg_tensor *kr = tg_shrink(tg_from_floats(kref, TG_SHAPE(1, DEC_KVH, DEC_MAX, DEC_D)), cb, 4);
    tg_tensor *vr = tg_shrink(tg_from_floats(vref, TG_SHAPE(1, DEC_KVH, DEC_MAX, DEC_D)), cb, 4);
    tg_attention_opts o = {.causal = true, .start = TG_SI(sp), .window = DEC_WINDOW, .sinks = c.sinks};
    double e = st == TG_OK ? rel_diff(out, tg_attention(q, kr, vr, &o)) : INFINITY;
    CHECK_MSG(e < 1e-5, "jit decode sp %d: rel diff %g (%s)", sp, e, tg_last_error());
    tg_scope_end(in);
  }
  CHECK(tg_jit_kernel_count(j) >= 3);
  tg_jit_free(j);
  tg_scope_end(s);
}

/* ----------------------------------------------------------------------------------------------------- errors */

static bool fails_with(tg_tensor *r, const char *part) {
  bool ok = r == NULL && strstr(tg_last_error(), part) != NULL;
  if (!ok) fprintf(stderr, "  expected an error with '%s', got %s: '%s'\n", part, r ? "a tensor" : "NULL",
                   tg_last_error());
  tg_release(r);
  return ok;
}

static void errors(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *q = tg_zeros(TG_SHAPE(1, 4, 3, 8), TG_FLOAT32), *k = tg_zeros(TG_SHAPE(1, 2, 5, 8), TG_FLOAT32);
  tg_tensor *v = tg_zeros(TG_SHAPE(1, 2, 5, 6), TG_FLOAT32);
  attn_fn fns[2] = {tg_attention, tg_flash_attention};
  const char *names[2] = {"tg_attention", "tg_flash_attention"};
  for (int f = 0; f < 2; f++) {
    attn_fn fn = fns[f];
    tg_clear_error();
    CHECK(fails_with(fn(NULL, k, v, NULL), names[f]));
    CHECK(fails_with(fn(tg_zeros(TG_SHAPE(4, 3, 8), TG_FLOAT32), k, v, NULL), "must be 4-d"));
    CHECK(fails_with(fn(tg_zeros(TG_SHAPE(1, 3, 3, 8), TG_FLOAT32), k, v, NULL), "n_kv_heads must divide n_heads"));
    CHECK(fails_with(fn(tg_zeros(TG_SHAPE(1, 4, 3, 7), TG_FLOAT32), k, v, NULL), "head dims differ"));
    CHECK(fails_with(fn(q, k, tg_zeros(TG_SHAPE(1, 2, 4, 6), TG_FLOAT32), NULL), "different lengths"));
    CHECK(fails_with(fn(q, k, tg_zeros(TG_SHAPE(1, 1, 5, 6), TG_FLOAT32), NULL), "different head counts"));
    CHECK(fails_with(fn(tg_zeros(TG_SHAPE(2, 4, 3, 8), TG_FLOAT32), k, v, NULL), "batch sizes differ"));
    CHECK(fails_with(fn(tg_zeros(TG_SHAPE(1, 4, 3, 8), TG_INT32), k, v, NULL), "float tensors"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.window = 3}), "needs causal"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.causal = true, .window = -1}), "window"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.block = -2}), "block"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.scale = -1}), "scale"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.causal = true, .start = TG_SI(-1)}), "start"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.sinks = tg_zeros(TG_SHAPE(2), TG_FLOAT32)}), "sinks"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.mask = tg_zeros(TG_SHAPE(3, 4), TG_FLOAT32)}),
                     "does not broadcast"));
    CHECK(fails_with(fn(q, k, v, &(tg_attention_opts){.mask = tg_zeros(TG_SHAPE(1, 3, 3, 5), TG_FLOAT32)}),
                     "does not broadcast"));
  }
  /* a symbolic key length takes only a mask of size 1 along S */
  tg_tensor *var = tg_variable("n", 1, 5), *vb = tg_bind(var, 3);
  tg_sint kb[8] = {TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(2), TG_SI(0), TG_SV(vb, 0), TG_SI(0), TG_SI(8)};
  tg_tensor *ks = tg_shrink_sym(k, kb, 4);
  kb[7] = TG_SI(6);
  tg_tensor *vs = tg_shrink_sym(v, kb, 4);
  for (int f = 0; f < 2; f++) {
    CHECK(fails_with(fns[f](q, ks, vs, &(tg_attention_opts){.mask = tg_zeros(TG_SHAPE(3, 5), TG_FLOAT32)}),
                     "a symbolic length needs size 1"));
    CHECK(fails_with(fns[f](q, ks, v, NULL), "different lengths"));
    tg_tensor *ok = fns[f](q, ks, vs, &(tg_attention_opts){.mask = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32)});
    CHECK_MSG(ok && tg_realize(ok) == TG_OK, "symbolic S with a (T, 1) mask: %s", tg_last_error());
  }
  /* a good call still works after the errors: (1, 4, 3, 6) */
  tg_tensor *r = tg_flash_attention(q, k, v, NULL);
  CHECK(r && tg_ndim(r) == 4 && tg_shape(r)[1] == 4 && tg_shape(r)[3] == 6 && tg_realize(r) == TG_OK);
  tg_scope_end(s);
}

void suite_attention(void);
void suite_attention(void) {
  fixture_cases();
  flash_equals_plain();
  half_inputs();
  symbolic_length();
  symbolic_queries();
  jit_decode();
  errors();
}
