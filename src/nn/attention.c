/* attention.c — attention as tensor functions: tg_attention, the plain form that materializes the (T, S) scores (the
 * oracle), and tg_flash_attention, the same result by blocks of keys: per block a running max, a sum of exponentials
 * and a partial output, merged with the log-sum-exp rescale (flash-decoding). Both take q (B, H, T, D) and
 * k, v (B, KVH, S, D|Dv) like torch's SDPA and share the options: causal with a query offset (KV-cache decode),
 * a sliding window, attention sinks (gpt-oss: one logit per head that only enlarges the softmax denominator), GQA
 * (q heads grouped over the kv heads by a reshape, no repeated k/v), an additive or bool mask and the scale.
 * Everything is built from public tensor ops, so the scheduler fuses it, gradients flow through it and a symbolic
 * key or query length (a KV-cache view of length start_pos + T) goes through. */
#include "nn/nn.h"
#include "tensor/tensor.h"

#include <math.h>

/* the number of keys per flash block when the options give none */
#define ATTN_DEFAULT_BLOCK 128
/* queries from which the scores read a transposed copy of k (keys_t) */
#define ATTN_COPY_KT_MIN_T 16
/* the floor of a block's running max: a block whose keys are all masked gives exp(-inf - floor) = 0, not NaN */
#define ATTN_MAX_FLOOR (-1e30)

static tg_tensor *ci(int64_t v) { return tg_const_int(v); }

/* The validated shapes of one call. */
typedef struct attn_shape {
  int64_t b, h, kvh, g, d, dv;
  tg_sint t, s;                /* query and key lengths (symbolic or not) */
  int64_t tmax, smax;          /* their maxima */
  tg_dtype out_dtype, acc;     /* q's dtype, the score dtype (float32, or float64 for float64 inputs) */
} attn_shape;

static bool is_float_dtype(tg_dtype d) { return d >= TG_FP8E4M3 && d <= TG_FLOAT64; }

/* size `axis` of t as a tg_sint (the dim's expression when symbolic); the handle is owned by the current scope */
static tg_sint sint_of(const tg_tensor *t, int axis) {
  if (!t->sym[axis]) return TG_SI(t->shape.d[axis]);
  return TG_SV(tg_dim(t, axis), 0);
}

static bool same_size(const tg_tensor *a, int ia, const tg_tensor *b, int ib) {
  return a->shape.d[ia] == b->shape.d[ib] && a->sym[ia] == b->sym[ib];
}

static bool check_args(const char *op, const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                       const tg_attention_opts *o, attn_shape *sh) {
  if (!q || !k || !v) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL q, k or v", op);
    return false;
  }
  if (tg_ndim(q) != 4 || tg_ndim(k) != 4 || tg_ndim(v) != 4) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: q %s, k %s, v %s must be 4-d: q (B, H, T, D), k/v (B, KVH, S, D)", op,
                 mix_fmt_shape(&q->shape), mix_fmt_shape(&k->shape), mix_fmt_shape(&v->shape));
    return false;
  }
  tg_dtype qd = tg_get_dtype(q), kd = tg_get_dtype(k), vd = tg_get_dtype(v);
  if (!is_float_dtype(qd) || !is_float_dtype(kd) || !is_float_dtype(vd)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: q, k, v must be float tensors (got %s, %s, %s)", op, tg_dtype_name(qd),
                 tg_dtype_name(kd), tg_dtype_name(vd));
    return false;
  }
  const char *bad = NULL;
  if (q->sym[0] || q->sym[1] || q->sym[3] || k->sym[0] || k->sym[1] || k->sym[3] || v->sym[0] || v->sym[1] ||
      v->sym[3])
    bad = "only the sequence axes (2) may be symbolic";
  else if (q->shape.d[0] != k->shape.d[0] || q->shape.d[0] != v->shape.d[0]) bad = "batch sizes differ";
  else if (k->shape.d[1] != v->shape.d[1]) bad = "k and v have different head counts";
  else if (k->shape.d[1] == 0 || q->shape.d[1] % k->shape.d[1] != 0) bad = "n_kv_heads must divide n_heads";
  else if (q->shape.d[3] != k->shape.d[3]) bad = "q and k head dims differ";
  else if (!same_size(k, 2, v, 2)) bad = "k and v have different lengths";
  if (bad) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: q %s, k %s, v %s: %s", op, mix_fmt_shape(&q->shape),
                 mix_fmt_shape(&k->shape), mix_fmt_shape(&v->shape), bad);
    return false;
  }
  if (o->window < 0 || (o->window > 0 && !o->causal)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: window %lld must be >= 0 and needs causal (query p sees keys "
                 "[p-window+1, p])", op, (long long)o->window);
    return false;
  }
  if (o->block < 0) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: block %lld must be >= 0 (0: the default)", op, (long long)o->block);
    return false;
  }
  if (!(o->scale >= 0) || isinf(o->scale)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: scale %g must be finite and >= 0 (0: 1/sqrt(D))", op, o->scale);
    return false;
  }
  if (o->start.n < 0 && !o->start.v) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: query offset start %lld must be >= 0", op, (long long)o->start.n);
    return false;
  }
  sh->b = q->shape.d[0], sh->h = q->shape.d[1], sh->kvh = k->shape.d[1], sh->g = sh->h / sh->kvh;
  sh->d = q->shape.d[3], sh->dv = v->shape.d[3];
  sh->tmax = q->shape.d[2], sh->smax = k->shape.d[2];
  sh->out_dtype = qd;
  sh->acc = (qd == TG_FLOAT64 || kd == TG_FLOAT64 || vd == TG_FLOAT64) ? TG_FLOAT64 : TG_FLOAT32;
  if (o->sinks) {
    const tg_tensor *sk = o->sinks;
    if (tg_ndim(sk) != 1 || sk->symbolic || sk->shape.d[0] != sh->h || !is_float_dtype(tg_get_dtype(sk))) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: sinks %s %s must be a float (H,) = (%lld,) tensor", op,
                   mix_fmt_shape(&sk->shape), tg_dtype_name(tg_get_dtype(sk)), (long long)sh->h);
      return false;
    }
  }
  if (o->mask) {
    const tg_tensor *m = o->mask;
    int nd = tg_ndim(m);
    bool ok = nd >= 0 && nd <= 4 && !m->symbolic;
    /* right-aligned against (B, H, T, S): each size 1 or equal (T and S concrete here: a symbolic length takes a
     * broadcast mask only) */
    const int64_t full[4] = {sh->b, sh->h, q->sym[2] ? -1 : sh->tmax, k->sym[2] ? -1 : sh->smax};
    for (int i = 0; ok && i < nd; i++) {
      int64_t ms = m->shape.d[nd - 1 - i], fs = full[3 - i];
      ok = ms == 1 || ms == fs;
    }
    if (!ok) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: mask %s does not broadcast to (B, H, T, S) = (%lld, %lld, %lld, "
                   "%lld)%s", op, mix_fmt_shape(&m->shape), (long long)sh->b, (long long)sh->h,
                   (long long)sh->tmax, (long long)sh->smax,
                   (q->symbolic || k->symbolic) ? " (a symbolic length needs size 1 there)" : "");
      return false;
    }
  }
  return true;
}

/* int32 positions 0..n-1 along a length (a symbolic length: the arange of its maximum, shrunk to it) */
static tg_tensor *positions(tg_sint len, int64_t max) {
  tg_tensor *a = tg_arange(0, (double)max, 1, TG_INT32);
  if (!len.v) return a;
  return tg_shrink_sym(a, (tg_sint[]){TG_SI(0), len}, 1);
}

static tg_tensor *sint_tensor(tg_sint s) { return s.v ? tg_add(s.v, ci(s.n)) : ci(s.n); }

/* The keys query t may see as a bool tensor of the broadcast shape (T, S) in query-key positions qpos (T, 1) and kpos
 * (1, S) (or their blocked forms), NULL when no causal/window rule applies: kpos <= start + t and, with a window,
 * kpos > start + t - window. */
static tg_tensor *allowed(const tg_tensor *qpos, const tg_tensor *kpos, const tg_attention_opts *o) {
  if (!o->causal) return NULL;
  tg_tensor *p = tg_add(qpos, sint_tensor(o->start));
  tg_tensor *ok = tg_le(kpos, p);
  if (o->window > 0) ok = tg_bitwise_and(ok, tg_gt(kpos, tg_sub(p, ci(o->window))));
  return ok;
}

/* The user mask as a tensor of the grouped score layout: (B, H, T, S) sizes -> (B, KVH|1, G|1, T, S) */
static tg_tensor *grouped_mask(const tg_tensor *m, const attn_shape *sh) {
  int nd = tg_ndim(m);
  int64_t s4[4] = {1, 1, 1, 1};
  for (int i = 0; i < nd; i++) s4[4 - nd + i] = m->shape.d[i];
  bool per_head = s4[1] != 1;
  return tg_reshape(m, TG_SHAPE(s4[0], per_head ? sh->kvh : 1, per_head ? sh->g : 1, s4[2], s4[3]));
}

/* q (B, H, T, D) -> (B, KVH, G, T, D) [or with a size-1 axis before T when blocked] in the score dtype */
static tg_tensor *grouped_q(const tg_tensor *q, const attn_shape *sh, bool blocked) {
  tg_tensor *qf = tg_cast(q, sh->acc);
  if (blocked)
    return tg_reshape_sym(qf, (tg_sint[]){TG_SI(sh->b), TG_SI(sh->kvh), TG_SI(sh->g), TG_SI(1), sh->t, TG_SI(sh->d)},
                          6);
  return tg_reshape_sym(qf, (tg_sint[]){TG_SI(sh->b), TG_SI(sh->kvh), TG_SI(sh->g), sh->t, TG_SI(sh->d)}, 5);
}

/* k^T for the scores q k^T: with many queries a contiguous copy (the scores become a plain (T, D) @ (D, S) matmul,
 * which the CPU kernels run several times faster than the dot-product layout), with few (decode) the view: the copy
 * would double the bytes a decode step reads */
static tg_tensor *keys_t(const tg_tensor *k, const attn_shape *sh) {
  tg_tensor *kt = tg_transpose(k, -2, -1);
  return sh->tmax >= ATTN_COPY_KT_MIN_T ? tg_contiguous(kt) : kt;
}

static double scale_of(const tg_attention_opts *o, const attn_shape *sh) {
  return o->scale > 0 ? o->scale : 1.0 / sqrt((double)sh->d);
}

/* the grouped output (B, KVH, G, [1,] T, Dv) back to (B, H, T, Dv) in q's dtype */
static tg_tensor *ungroup(const tg_tensor *o, const attn_shape *sh) {
  tg_tensor *r = tg_reshape_sym(o, (tg_sint[]){TG_SI(sh->b), TG_SI(sh->h), sh->t, TG_SI(sh->dv)}, 4);
  return tg_cast(r, sh->out_dtype);
}

static const tg_attention_opts *opts_or_default(const tg_attention_opts *o) {
  static const tg_attention_opts none;
  return o ? o : &none;
}

/* softmax over the last axis of the grouped scores sc (B, KVH, G, ..., L) of rank nd, with the sinks: the sink is one
 * more logit in the denominator, its column dropped */
static tg_tensor *weights(const tg_tensor *sc, const tg_attention_opts *o, const attn_shape *sh, int nd) {
  if (!o->sinks) return tg_softmax(sc, -1);
  int64_t shp[8] = {1, sh->kvh, sh->g, 1, 1, 1, 1, 1};
  tg_tensor *sk = tg_reshape(tg_cast(o->sinks, sh->acc), shp, (size_t)nd);
  tg_tensor *m = tg_maximum(tg_max(sc, TG_AXES(-1), true), sk);
  tg_tensor *e = tg_exp(tg_sub(sc, m));
  tg_tensor *den = tg_add(tg_sum(e, TG_AXES(-1), true), tg_exp(tg_sub(sk, m)));
  return tg_div(e, den);
}

tg_tensor *tg_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, const tg_attention_opts *opts) {
  const tg_attention_opts *o = opts_or_default(opts);
  attn_shape sh;
  tg_scope s = tg_scope_begin();
  if (!check_args("tg_attention", q, k, v, o, &sh)) return nn_finish(s, NULL);
  sh.t = sint_of(q, 2), sh.s = sint_of(k, 2);
  tg_tensor *qg = grouped_q(q, &sh, false);
  tg_tensor *kg = tg_reshape_sym(tg_cast(k, sh.acc), (tg_sint[]){TG_SI(sh.b), TG_SI(sh.kvh), TG_SI(1), sh.s, TG_SI(sh.d)}, 5);
  tg_tensor *vg = tg_reshape_sym(tg_cast(v, sh.acc), (tg_sint[]){TG_SI(sh.b), TG_SI(sh.kvh), TG_SI(1), sh.s, TG_SI(sh.dv)}, 5);
  /* scores (B, KVH, G, T, S) */
  tg_tensor *sc = tg_mul(tg_matmul(qg, keys_t(kg, &sh)), tg_const_float(scale_of(o, &sh)));
  tg_tensor *qpos = tg_reshape_sym(positions(sh.t, sh.tmax), (tg_sint[]){sh.t, TG_SI(1)}, 2);
  tg_tensor *kpos = tg_reshape_sym(positions(sh.s, sh.smax), (tg_sint[]){TG_SI(1), sh.s}, 2);
  tg_tensor *ok = allowed(qpos, kpos, o);
  if (ok) sc = tg_where(ok, sc, tg_const_float(-INFINITY));
  if (o->mask) {
    tg_tensor *m = grouped_mask(o->mask, &sh);
    sc = tg_get_dtype(m) == TG_BOOL ? tg_where(m, sc, tg_const_float(-INFINITY)) : tg_add(sc, tg_cast(m, sh.acc));
  }
  /* the scores are stored once: left lazy, every output column of p v would recompute its q k dot products */
  sc = tg_contiguous(sc);
  tg_tensor *p = weights(sc, o, &sh, 5);
  /* the weights are stored too (each exp once, not once per output column of p v) */
  return nn_finish(s, ungroup(tg_matmul(tg_contiguous(p), vg), &sh));
}

/* A sliding window with concrete T: query block qb (bq queries) sees only the keys [start + qb*bq - W + 1,
 * start + (qb+1)*bq - 1], L = bq + W - 1 of them, so each block attends to its own band of keys instead of all S (a
 * decode step of a sliding layer reads W keys, whatever the cache length). The keys are padded by W - 1 in front, the
 * span of all bands, [start, start + nqb*bq + W - 1) in padded positions, is cut out (start may be symbolic: the span
 * is concrete), and cut into the overlapping bands by a pool view. In band coordinates query i of a block sees band
 * key j iff i <= j <= i + W - 1 (causal and window at once), and the key must exist: 0 <= start - W + 1 + qb*bq + j
 * < S. The band fits one block, so it is a plain softmax. */
static tg_tensor *banded(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, const tg_attention_opts *o,
                         const attn_shape *sh, int64_t bq) {
  int64_t t = sh->tmax, w = o->window, nqb = (t + bq - 1) / bq, l = bq + w - 1, span = nqb * bq + w - 1;
  /* padding after the keys: enough for any start <= S (a larger start fails the bound check of the shrink) */
  int64_t after = nqb * bq;
  if (!o->start.v && !sh->s.v && o->start.n + nqb * bq - sh->s.n > after) after = o->start.n + nqb * bq - sh->s.n;
  tg_sint pads[8] = {TG_SI(0), TG_SI(0), TG_SI(0), TG_SI(0), TG_SI(w - 1), TG_SI(after), TG_SI(0), TG_SI(0)};
  tg_sint cut[8] = {TG_SI(0), TG_SI(sh->b), TG_SI(0), TG_SI(sh->kvh), o->start, TG_SV(o->start.v, o->start.n + span),
                    TG_SI(0), TG_SI(sh->d)};
  tg_tensor *kb = tg_shrink_sym(tg_pad_sym(tg_cast(k, sh->acc), pads, 4), cut, 4);   /* (B, KVH, span, D) */
  cut[7] = TG_SI(sh->dv);
  tg_tensor *vb = tg_shrink_sym(tg_pad_sym(tg_cast(v, sh->acc), pads, 4), cut, 4);
  if (nqb > 1) { /* the overlapping bands: (B, KVH, D, span) pooled by L, stride bq -> (B, KVH, nqb, L, D) */
    kb = tg_permute(tg_pool(tg_transpose(kb, -1, -2), (int64_t[]){l}, 1, (int64_t[]){bq}, NULL), TG_AXES(0, 1, 3, 4, 2));
    vb = tg_permute(tg_pool(tg_transpose(vb, -1, -2), (int64_t[]){l}, 1, (int64_t[]){bq}, NULL), TG_AXES(0, 1, 3, 4, 2));
  }
  kb = tg_reshape(kb, TG_SHAPE(sh->b, sh->kvh, 1, nqb, l, sh->d));
  vb = tg_reshape(vb, TG_SHAPE(sh->b, sh->kvh, 1, nqb, l, sh->dv));
  /* queries padded to nqb*bq: (B, KVH, G, nqb, bq, D) */
  tg_tensor *qg = tg_reshape(tg_cast(q, sh->acc), TG_SHAPE(sh->b, sh->kvh, sh->g, t, sh->d));
  if (nqb * bq != t) qg = tg_pad(qg, (const int64_t[]){0, 0, 0, 0, 0, 0, 0, nqb * bq - t, 0, 0}, 5, TG_PAD_CONSTANT, 0);
  qg = tg_reshape(qg, TG_SHAPE(sh->b, sh->kvh, sh->g, nqb, bq, sh->d));
  tg_tensor *sc = tg_mul(tg_matmul(qg, tg_transpose(kb, -2, -1)), tg_const_float(scale_of(o, sh)));
  tg_tensor *qi = tg_reshape(tg_arange(0, (double)bq, 1, TG_INT32), TG_SHAPE(1, bq, 1));
  tg_tensor *kj = tg_reshape(tg_arange(0, (double)l, 1, TG_INT32), TG_SHAPE(1, 1, l));
  tg_tensor *qb = tg_reshape(tg_arange(0, (double)nqb, 1, TG_INT32), TG_SHAPE(nqb, 1, 1));
  tg_tensor *kpos = tg_add(tg_add(kj, tg_mul(qb, ci(bq))), tg_sub(sint_tensor(o->start), ci(w - 1)));
  tg_tensor *ok = tg_bitwise_and(tg_le(qi, kj), tg_le(kj, tg_add(qi, ci(w - 1))));
  ok = tg_bitwise_and(ok, tg_bitwise_and(tg_ge(kpos, ci(0)), tg_lt(kpos, sint_tensor(sh->s))));
  sc = tg_where(ok, sc, tg_const_float(-INFINITY));
  /* the padding queries get finite scores, so no NaN reaches the gradients of k and v through them */
  if (nqb * bq != t) sc = tg_where(tg_lt(tg_add(tg_mul(qb, ci(bq)), qi), ci(t)), sc, tg_const_float(0));
  tg_tensor *p = tg_contiguous(weights(tg_contiguous(sc), o, sh, 6));
  tg_tensor *out = tg_reshape(tg_matmul(p, vb), TG_SHAPE(sh->b, sh->kvh, sh->g, nqb * bq, sh->dv));
  if (nqb * bq != t)
    out = tg_shrink(out, (const int64_t[]){0, sh->b, 0, sh->kvh, 0, sh->g, 0, t, 0, sh->dv}, 5);
  return ungroup(out, sh);
}

tg_tensor *tg_flash_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                              const tg_attention_opts *opts) {
  const tg_attention_opts *o = opts_or_default(opts);
  attn_shape sh;
  tg_scope s = tg_scope_begin();
  if (!check_args("tg_flash_attention", q, k, v, o, &sh)) return nn_finish(s, NULL);
  sh.t = sint_of(q, 2), sh.s = sint_of(k, 2);
  int64_t bk = o->block > 0 ? o->block : ATTN_DEFAULT_BLOCK;
  if (o->window > 0 && !sh.t.v && !o->mask && sh.tmax > 0) {
    /* a band of keys per block of queries, when the bands hold well under the T x S scores. Measured (window 128,
     * 32/8 heads of 64): a decode step over 4096 keys 0.15 ms banded vs 0.7; prefills, where the full scores take the
     * faster stored-k^T matmul: 1024 tokens (bands 1/4 of the scores) 276 ms vs 222, 2048 (1/8) 814 vs 1738 */
    int64_t bq = sh.tmax < bk ? sh.tmax : bk, nqb = (sh.tmax + bq - 1) / bq;
    int64_t factor = sh.tmax >= ATTN_COPY_KT_MIN_T ? 6 : 3;
    if (factor * (bq + o->window - 1) * nqb * bq < sh.smax * sh.tmax) return nn_finish(s, banded(q, k, v, o, &sh, bq));
  }
  if (o->causal && !o->window && !o->mask && !sh.t.v && !sh.s.v && !o->start.v && sh.tmax > bk &&
      tg_getenv_int("ATTN_CAUSAL_CHUNKS", 1)) {
    /* causal with a concrete T longer than a block: each block of queries attends only to the keys up to its last
     * position, so the keys past it (masked for the whole block) are not scored. */
    int64_t nqb = (sh.tmax + bk - 1) / bk;
    const tg_tensor **outs = tg_calloc((size_t)nqb, sizeof *outs);
    bool ok = true;
    for (int64_t c = 0; c < nqb && ok; c++) {
      int64_t t0 = c * bk, t1 = TG_MIN(sh.tmax, t0 + bk), keys = TG_MIN(sh.smax, o->start.n + t1);
      tg_attention_opts oc = *o;
      oc.start = TG_SI(o->start.n + t0);
      const int64_t qb[8] = {0, sh.b, 0, sh.h, t0, t1, 0, sh.d};
      const int64_t kb[8] = {0, sh.b, 0, sh.kvh, 0, keys, 0, sh.d}, vb[8] = {0, sh.b, 0, sh.kvh, 0, keys, 0, sh.dv};
      outs[c] = tg_flash_attention(tg_shrink(q, qb, 4), tg_shrink(k, kb, 4), tg_shrink(v, vb, 4), &oc);
      ok = outs[c] != NULL;
    }
    tg_tensor *out = ok ? tg_cat(outs, (size_t)nqb, 2) : NULL;
    tg_free(outs);
    return nn_finish(s, out);
  }
  if (bk > sh.smax && sh.smax > 0) bk = sh.smax;
  int64_t nb = sh.smax > 0 ? (sh.smax + bk - 1) / bk : 1, sp = nb * bk;
  if (sh.smax == 0) bk = 1;
  /* keys padded to nb*bk and split into blocks: (B, KVH, 1, nb, bk, D); a symbolic length is padded by the
   * expression sp - S, so the padded length is concrete, and only its first ceil(S/bk) blocks are kept */
  tg_sint pad_after = sh.s.v ? TG_SV(tg_sub(ci(sp - sh.s.n), sh.s.v), 0) : TG_SI(sp - sh.s.n);
  tg_sint pads[8] = {TG_SI(0), TG_SI(0), TG_SI(0), TG_SI(0), TG_SI(0), pad_after, TG_SI(0), TG_SI(0)};
  tg_tensor *kfull = tg_pad_sym(tg_cast(k, sh.acc), pads, 4), *vp = tg_pad_sym(tg_cast(v, sh.acc), pads, 4);
  tg_tensor *kp = tg_reshape(kfull, TG_SHAPE(sh.b, sh.kvh, 1, nb, bk, sh.d));
  vp = tg_reshape(vp, TG_SHAPE(sh.b, sh.kvh, 1, nb, bk, sh.dv));
  tg_tensor *kpos = tg_reshape(tg_arange(0, (double)sp, 1, TG_INT32), TG_SHAPE(nb, 1, bk));
  tg_sint nbs = TG_SI(nb);
  if (sh.s.v) {
    /* ceil(S / bk) blocks: the kernels loop over the blocks this length needs, not over the maximum */
    nbs = TG_SV(tg_idiv(tg_add(sh.s.v, ci(sh.s.n + bk - 1)), ci(bk)), 0);
    tg_sint kb[12] = {TG_SI(0), TG_SI(sh.b), TG_SI(0), TG_SI(sh.kvh), TG_SI(0), TG_SI(1), TG_SI(0), nbs,
                      TG_SI(0), TG_SI(bk), TG_SI(0), TG_SI(sh.d)};
    kp = tg_shrink_sym(kp, kb, 6);
    kb[11] = TG_SI(sh.dv);
    vp = tg_shrink_sym(vp, kb, 6);
    kpos = tg_shrink_sym(kpos, (tg_sint[]){TG_SI(0), nbs, TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(bk)}, 3);
  }
  /* scores per block: (B, KVH, G, nb, T, bk) */
  tg_tensor *sc;
  bool stored = !sh.s.v && !sh.t.v && sh.tmax >= ATTN_COPY_KT_MIN_T; /* (a symbolic axis cannot be split yet) */
  if (stored) {
    /* many queries: the scores as tg_attention computes them, (B, KVH, G, T, sp) from a stored k^T (measured: the
     * blocked (nb, T, bk) matmul ran about 4x slower), stored, then viewed as blocks */
    tg_tensor *kg = tg_unsqueeze(kfull, 2);
    sc = tg_mul(tg_matmul(grouped_q(q, &sh, false), keys_t(kg, &sh)), tg_const_float(scale_of(o, &sh)));
    sc = tg_reshape_sym(tg_contiguous(sc), (tg_sint[]){TG_SI(sh.b), TG_SI(sh.kvh), TG_SI(sh.g), sh.t, TG_SI(nb),
                                                       TG_SI(bk)}, 6);
    sc = tg_permute(sc, TG_AXES(0, 1, 2, 4, 3, 5));
  } else {
    sc = tg_mul(tg_matmul(grouped_q(q, &sh, true), tg_transpose(kp, -2, -1)), tg_const_float(scale_of(o, &sh)));
  }
  tg_tensor *qpos = tg_reshape_sym(positions(sh.t, sh.tmax), (tg_sint[]){TG_SI(1), sh.t, TG_SI(1)}, 3);
  tg_tensor *ok = allowed(qpos, kpos, o);
  if (sp != sh.smax || sh.s.v) {
    tg_tensor *in_range = tg_lt(kpos, sint_tensor(sh.s));
    ok = ok ? tg_bitwise_and(ok, in_range) : in_range;
  }
  if (ok) sc = tg_where(ok, sc, tg_const_float(-INFINITY));
  if (o->mask) {
    /* (B, KVH|1, G|1, T|1, S|1) -> blocked (B, KVH|1, G|1, nb|1, T|1, bk|1) */
    tg_tensor *m = grouped_mask(o->mask, &sh);
    const int64_t *ms = tg_shape(m);
    if (ms[4] != 1) {
      bool is_bool = tg_get_dtype(m) == TG_BOOL;
      m = tg_pad(m, (const int64_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0, sp - ms[4]}, 5, TG_PAD_CONSTANT, 0);
      m = tg_reshape(m, TG_SHAPE(ms[0], ms[1], ms[2], ms[3], nb, bk));
      m = tg_permute(m, TG_AXES(0, 1, 2, 4, 3, 5));
      if (sh.s.v)
        m = tg_shrink_sym(m, (tg_sint[]){TG_SI(0), TG_SI(ms[0]), TG_SI(0), TG_SI(ms[1]), TG_SI(0), TG_SI(ms[2]),
                                         TG_SI(0), nbs, TG_SI(0), TG_SI(ms[3]), TG_SI(0), TG_SI(bk)}, 6);
      if (is_bool) m = tg_cast(m, TG_BOOL);
    } else {
      m = tg_unsqueeze(m, 3);
    }
    sc = tg_get_dtype(m) == TG_BOOL ? tg_where(m, sc, tg_const_float(-INFINITY)) : tg_add(sc, tg_cast(m, sh.acc));
  }
  /* stored once (see tg_attention), unless stored above (the masks then recompute in the two readers below: cheap);
   * per block: running max (floored), sum of exponentials, partial output */
  if (!stored) sc = tg_contiguous(sc);
  tg_tensor *mb = tg_maximum(tg_max(sc, TG_AXES(-1), true), tg_const_float(ATTN_MAX_FLOOR));
  tg_tensor *e = tg_contiguous(tg_exp(tg_sub(sc, mb)));     /* stored: each exp once, not once per output column */
  tg_tensor *lb = tg_sum(e, TG_AXES(-1), true);            /* (B, KVH, G, nb, T, 1) */
  /* stored: merged lazily, the two reductions fuse into one long one over all keys, which runs serially */
  tg_tensor *ob = tg_contiguous(tg_matmul(e, vp));          /* (B, KVH, G, nb, T, Dv) */
  /* merge the blocks: rescale each by exp(m_b - M) */
  tg_tensor *mx = tg_max(mb, TG_AXES(3), true);             /* (B, KVH, G, 1, T, 1) */
  tg_tensor *sk = NULL;
  if (o->sinks) {
    sk = tg_reshape(tg_cast(o->sinks, sh.acc), TG_SHAPE(1, sh.kvh, sh.g, 1, 1, 1));
    mx = tg_maximum(mx, sk);
  }
  tg_tensor *w = tg_exp(tg_sub(mb, mx));
  tg_tensor *l = tg_sum(tg_mul(w, lb), TG_AXES(3), true);
  if (sk) l = tg_add(l, tg_exp(tg_sub(sk, mx)));
  tg_tensor *out = tg_div(tg_sum(tg_mul(w, ob), TG_AXES(3), true), l);
  return nn_finish(s, ungroup(out, &sh));
}
