/* moe.c — the mixture-of-experts pieces as tensor functions: tg_topk (tinygrad's topk: the k largest or smallest
 * along an axis, ties in index order), the router (tinygrad llm/model.py's gating functions: softmax over the top-k
 * logits as gpt-oss, softmax then top-k, sigmoid, sqrt-softplus; selection bias, renormalization, scaling) and
 * tg_moe_ffn, the expert feed-forward that gathers only the selected experts' weights per token (tinygrad's
 * ExpertWeights: weight[sel]) with SwiGLU or gpt-oss's clamped SwiGLU and expert biases.
 *
 * topk ranks every element by comparisons (element i's rank is the number of elements before it in the order), then
 * places each in its slot: an n x n comparison per row. A long row (a vocabulary) is first cut into chunks whose k
 * best are kept, repeatedly, so the comparisons grow as n times the chunk. The weight gather is a one-hot sum over the experts that the scheduler collapses
 * into an indexed load, so a token reads only its k experts' rows. */
#include "nn/nn.h"
#include "tensor/tensor.h"

#include <math.h>

static tg_tensor *ci(int64_t v) { return tg_const_int(v); }
static tg_tensor *cf(double v) { return tg_const_float(v); }

static bool is_float_dtype(tg_dtype d) { return d >= TG_FP8E4M3 && d <= TG_FLOAT64; }

/* The k best of vals (..., n) along the last axis, in order, and their keys idx (..., n) int32 (the original
 * positions): element i ranks by how many elements come before it (a better value, or an equal value with a smaller
 * key), and the element of rank r fills slot r. An n x n comparison per row. */
static void select_top(tg_tensor *vals, tg_tensor *idx, int64_t k, bool largest, tg_tensor **out_vals,
                       tg_tensor **out_idx) {
  tg_tensor *vi = tg_unsqueeze(vals, -1), *vj = tg_unsqueeze(vals, -2);  /* (..., n, 1), (..., 1, n) */
  tg_tensor *ii = tg_unsqueeze(idx, -1), *ij = tg_unsqueeze(idx, -2);
  tg_tensor *ahead = largest ? tg_gt(vj, vi) : tg_lt(vj, vi);
  tg_tensor *before = tg_bitwise_or(ahead, tg_bitwise_and(tg_eq(vj, vi), tg_lt(ij, ii)));
  tg_tensor *rank = tg_sum(tg_cast(before, TG_INT32), TG_AXES(-1), true);          /* (..., n, 1) */
  rank = tg_cast(rank, TG_INT32);
  int64_t n = tg_shape(vals)[tg_ndim(vals) - 1];
  tg_tensor *slot = tg_reshape(tg_arange(0, (double)k, 1, TG_INT32), TG_SHAPE(1, k));
  tg_tensor *pos = tg_reshape(tg_arange(0, (double)n, 1, TG_INT32), TG_SHAPE(n, 1));
  tg_tensor *at = tg_cast(tg_sum(tg_where(tg_eq(rank, slot), pos, ci(0)), TG_AXES(-2), false), TG_INT32);
  *out_vals = tg_gather(vals, -1, at);
  *out_idx = tg_gather(idx, -1, at);
}

/* rows longer than this are reduced by chunks first: n x n comparisons per row stay under a million */
#define TOPK_DIRECT_MAX 1024
#define TOPK_CHUNK 256

tg_tensor *tg_topk(const tg_tensor *x, int64_t k, int axis, bool largest, tg_tensor **indices) {
  if (indices) *indices = NULL;
  if (!x) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_topk: NULL tensor");
    return NULL;
  }
  int nd = tg_ndim(x);
  if (nd == 0 || axis < -nd || axis >= nd) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_topk: axis %d out of range for shape %s", axis,
                 mix_fmt_shape(&x->shape));
    return NULL;
  }
  int ax = axis < 0 ? axis + nd : axis;
  if (x->symbolic) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tg_topk: symbolic shape %s not supported by this op yet",
                 mix_fmt_shape(&x->shape));
    return NULL;
  }
  int64_t n = x->shape.d[ax];
  if (k < 0 || k > n) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_topk: selected index k=%lld is out of range for axis %d of %s",
                 (long long)k, axis, mix_fmt_shape(&x->shape));
    return NULL;
  }
  if (tg_get_dtype(x) == TG_BOOL) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_topk: bool tensor %s has no order here (cast it first)",
                 mix_fmt_shape(&x->shape));
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *vals = tg_transpose(x, ax, -1);
  int64_t lead[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) lead[i] = tg_shape(vals)[i];
  tg_tensor *idx = tg_expand(tg_arange(0, (double)n, 1, TG_INT32), lead, (size_t)nd);
  /* long rows: keep the k best of each chunk (the k best of the row are among them), until the row is short. Padding
   * takes the worst value and keys after every real one, so it is never chosen over a real element (and k <= n real
   * elements always fill the k slots). */
  int64_t chunk = k * 4 > TOPK_CHUNK ? k * 4 : TOPK_CHUNK, next_key = n;
  while (n > TOPK_DIRECT_MAX && chunk < n) {
    int64_t nc = (n + chunk - 1) / chunk, pad = nc * chunk - n;
    int64_t pads[2 * TG_MAX_DIMS] = {0};
    pads[2 * nd - 1] = pad;
    double worst = largest ? -INFINITY : INFINITY;
    if (!is_float_dtype(tg_get_dtype(x))) {
      tg_dtype d = tg_get_dtype(x);
      bool is_signed = d == TG_INT8 || d == TG_INT16 || d == TG_INT32 || d == TG_INT64;
      int bits = (int)tg_dtype_itemsize(d) * 8;
      double lo = is_signed ? -ldexp(1.0, bits - 1) : 0, hi = is_signed ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
      worst = largest ? lo : hi;
    }
    tg_tensor *pv = tg_pad(vals, pads, (size_t)nd, TG_PAD_CONSTANT, worst);
    /* padding keys: distinct (equal keys would share a rank and leave a slot empty) and after every real key */
    tg_tensor *pk = tg_pad(idx, pads, (size_t)nd, TG_PAD_CONSTANT, -1);
    tg_tensor *fresh = tg_add(tg_arange(0, (double)(nc * chunk), 1, TG_INT32), ci(next_key));
    pk = tg_where(tg_lt(pk, ci(0)), fresh, pk);
    next_key += nc * chunk;
    int64_t shp[TG_MAX_DIMS + 1];
    for (int i = 0; i < nd - 1; i++) shp[i] = lead[i];
    shp[nd - 1] = nc, shp[nd] = chunk;
    tg_tensor *cv = NULL, *ck = NULL;
    select_top(tg_reshape(pv, shp, (size_t)nd + 1), tg_reshape(pk, shp, (size_t)nd + 1), k, largest, &cv, &ck);
    n = nc * k;
    lead[nd - 1] = n;
    vals = tg_contiguous(tg_reshape(cv, lead, (size_t)nd));
    idx = tg_contiguous(tg_reshape(ck, lead, (size_t)nd));
  }
  tg_tensor *tv = NULL, *ti = NULL;
  select_top(vals, idx, k, largest, &tv, &ti);
  tv = tg_transpose(tv, ax, -1), ti = tg_transpose(ti, ax, -1);
  if (indices) *indices = tg_scope_keep(tg_contiguous(ti));
  return nn_finish(s, tv);
}

/* ---------------------------------------------------------------------------------------------------- router */

static bool vec_ok(const char *op, const char *what, const tg_tensor *t, int64_t n) {
  if (!t) return true;
  if (tg_ndim(t) == 1 && tg_shape(t)[0] == n && !t->symbolic && is_float_dtype(tg_get_dtype(t))) return true;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %s %s %s must be a float (%lld,) tensor", op, what,
               mix_fmt_shape(&t->shape), tg_dtype_name(tg_get_dtype(t)), (long long)n);
  return false;
}

static bool router_args(const char *op, const tg_tensor *logits, const tg_moe_opts *o) {
  if (!logits) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL tensor", op);
    return false;
  }
  if (tg_ndim(logits) < 1 || logits->symbolic || !is_float_dtype(tg_get_dtype(logits))) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: logits %s %s must be a concrete float (..., E) tensor", op,
                 mix_fmt_shape(&logits->shape), tg_dtype_name(tg_get_dtype(logits)));
    return false;
  }
  int64_t e = tg_shape(logits)[tg_ndim(logits) - 1];
  if (o->k < 1 || o->k > e) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: k=%lld experts per token must be in [1, E=%lld]", op, (long long)o->k,
                 (long long)e);
    return false;
  }
  if ((int)o->gating < 0 || o->gating > TG_MOE_SQRT_SOFTPLUS) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: unknown gating %d", op, (int)o->gating);
    return false;
  }
  if (!(o->scale >= 0) || isinf(o->scale)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: scale %g must be finite and >= 0 (0: 1)", op, o->scale);
    return false;
  }
  return vec_ok(op, "select_bias", o->select_bias, e);
}

/* probs (..., k) of the experts sel (..., k) chosen from logits (..., E); no argument checks */
static tg_tensor *route(const tg_tensor *logits, const tg_moe_opts *o, tg_tensor **sel) {
  tg_tensor *scores = NULL;
  switch (o->gating) {
  case TG_MOE_SOFTMAX_TOPK: scores = tg_cast(logits, TG_FLOAT32); break;
  case TG_MOE_SOFTMAX: scores = tg_softmax(tg_cast(logits, TG_FLOAT32), -1); break;
  case TG_MOE_SIGMOID: scores = tg_sigmoid(tg_cast(logits, TG_FLOAT32)); break;
  case TG_MOE_SQRT_SOFTPLUS: scores = tg_sqrt(tg_softplus(tg_cast(logits, TG_FLOAT32), 1.0)); break;
  }
  tg_tensor *pick = o->select_bias ? tg_add(scores, tg_cast(o->select_bias, TG_FLOAT32)) : scores;
  tg_tensor *idx = NULL;
  tg_topk(pick, o->k, -1, true, &idx); /* the values (scope-owned) are not needed */
  tg_tensor *probs = tg_gather(scores, -1, idx);
  if (o->gating == TG_MOE_SOFTMAX_TOPK) probs = tg_softmax(probs, -1);
  if (o->normalize) probs = tg_div(probs, tg_sum(probs, TG_AXES(-1), true));
  if (o->scale > 0 && o->scale != 1) probs = tg_mul(probs, cf(o->scale));
  *sel = idx;
  return probs;
}

tg_tensor *tg_moe_router(const tg_tensor *logits, const tg_moe_opts *opts, tg_tensor **sel) {
  if (sel) *sel = NULL;
  if (!opts || !sel) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_moe_router: NULL %s", opts ? "sel" : "opts");
    return NULL;
  }
  if (!router_args("tg_moe_router", logits, opts)) return NULL;
  tg_scope s = tg_scope_begin();
  tg_tensor *idx = NULL, *probs = route(logits, opts, &idx);
  if (!probs || !idx) return nn_finish(s, NULL);
  *sel = tg_scope_keep(idx);
  return nn_finish(s, probs);
}

/* ------------------------------------------------------------------------------------------------- experts */

/* the experts' (out, in) weights of each selected expert: w (E, out, in)[sel] -> (..., k, out, in) */
static tg_tensor *gather_experts(const tg_tensor *w, const tg_tensor *sel) {
  tg_index ix = TG_IT(sel);
  return tg_getitem(w, &ix, 1);
}

/* x (..., 1|k, in) through the selected experts' weights (..., k, out, in) [+ bias (E, out)[sel]] -> (..., k, out) */
static tg_tensor *experts_linear(const tg_tensor *x, const tg_tensor *w, const tg_tensor *bias, const tg_tensor *sel) {
  tg_tensor *ws = gather_experts(w, sel);
  tg_tensor *y = tg_sum(tg_mul(tg_unsqueeze(x, -2), tg_cast(ws, TG_FLOAT32)), TG_AXES(-1), false);
  if (bias) {
    tg_index ix = TG_IT(sel);
    y = tg_add(y, tg_cast(tg_getitem(bias, &ix, 1), TG_FLOAT32));
  }
  return y;
}

static bool weight_ok(const char *op, const char *what, const tg_tensor *w, int64_t e, int64_t out, int64_t in) {
  if (w && tg_ndim(w) == 3 && !w->symbolic && is_float_dtype(tg_get_dtype(w)) && tg_shape(w)[0] == e &&
      tg_shape(w)[1] == out && tg_shape(w)[2] == in)
    return true;
  if (!w) tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL %s", op, what);
  else
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %s %s %s must be a float (E, out, in) = (%lld, %lld, %lld) tensor", op,
                 what, mix_fmt_shape(&w->shape), tg_dtype_name(tg_get_dtype(w)), (long long)e, (long long)out,
                 (long long)in);
  return false;
}

static bool bias_ok(const char *op, const char *what, const tg_tensor *b, int64_t e, int64_t n) {
  if (!b) return true;
  if (tg_ndim(b) == 2 && !b->symbolic && is_float_dtype(tg_get_dtype(b)) && tg_shape(b)[0] == e &&
      tg_shape(b)[1] == n)
    return true;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %s %s must be a float (E, %lld) = (%lld, %lld) tensor", op, what,
               mix_fmt_shape(&b->shape), (long long)n, (long long)e, (long long)n);
  return false;
}

tg_tensor *tg_moe_ffn(const tg_tensor *x, const tg_tensor *router_w, const tg_tensor *gate_w, const tg_tensor *up_w,
                      const tg_tensor *down_w, const tg_moe_opts *opts) {
  const char *op = "tg_moe_ffn";
  if (!x || !router_w || !opts) {
    if (tg_last_status() == TG_OK || !opts)
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL %s", op, !opts ? "opts" : "x or router_w");
    return NULL;
  }
  if (tg_ndim(x) < 1 || x->symbolic || !is_float_dtype(tg_get_dtype(x))) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: x %s %s must be a concrete float (..., D) tensor", op,
                 mix_fmt_shape(&x->shape), tg_dtype_name(tg_get_dtype(x)));
    return NULL;
  }
  int64_t d = tg_shape(x)[tg_ndim(x) - 1];
  if (tg_ndim(router_w) != 2 || tg_shape(router_w)[1] != d || !is_float_dtype(tg_get_dtype(router_w))) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: router_w %s must be a float (E, D=%lld) tensor (x %s)", op,
                 mix_fmt_shape(&router_w->shape), (long long)d, mix_fmt_shape(&x->shape));
    return NULL;
  }
  int64_t e = tg_shape(router_w)[0];
  int64_t hd = gate_w && tg_ndim(gate_w) == 3 ? tg_shape(gate_w)[1] : -1;
  if (!weight_ok(op, "gate_w", gate_w, e, hd, d) || !weight_ok(op, "up_w", up_w, e, hd, d) ||
      !weight_ok(op, "down_w", down_w, e, d, hd) || !vec_ok(op, "router_bias", opts->router_bias, e) ||
      !bias_ok(op, "gate_bias", opts->gate_bias, e, hd) || !bias_ok(op, "up_bias", opts->up_bias, e, hd) ||
      !bias_ok(op, "down_bias", opts->down_bias, e, d))
    return NULL;
  if ((int)opts->act < 0 || opts->act > TG_MOE_SWIGLU_OAI) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: unknown activation %d", op, (int)opts->act);
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *xf = tg_cast(x, TG_FLOAT32);
  tg_tensor *logits = tg_matmul(xf, tg_transpose(tg_cast(router_w, TG_FLOAT32), 0, 1));
  if (opts->router_bias) logits = tg_add(logits, tg_cast(opts->router_bias, TG_FLOAT32));
  if (!router_args(op, logits, opts)) return nn_finish(s, NULL);
  tg_tensor *sel = NULL, *probs = route(logits, opts, &sel);      /* (..., k) */
  tg_tensor *h = tg_unsqueeze(xf, -2);                             /* (..., 1, D) */
  tg_tensor *g = experts_linear(h, gate_w, opts->gate_bias, sel);  /* (..., k, hd) */
  tg_tensor *u = experts_linear(h, up_w, opts->up_bias, sel);
  tg_tensor *a;
  if (opts->act == TG_MOE_SWIGLU_OAI) {
    double alpha = opts->alpha > 0 ? opts->alpha : 1.702, limit = opts->limit > 0 ? opts->limit : 7.0;
    tg_tensor *xg = tg_clamp(g, NAN, limit), *xl = tg_clamp(u, -limit, limit);
    a = tg_mul(tg_mul(xg, tg_sigmoid(tg_mul(xg, cf(alpha)))), tg_add(xl, cf(1.0)));
  } else {
    a = tg_mul(tg_silu(g), u);
  }
  tg_tensor *y = experts_linear(tg_contiguous(a), down_w, opts->down_bias, sel); /* (..., k, D) */
  tg_tensor *out = tg_sum(tg_mul(y, tg_unsqueeze(probs, -1)), TG_AXES(-2), false);
  return nn_finish(s, tg_cast(out, tg_get_dtype(x)));
}
