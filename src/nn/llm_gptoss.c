/* llm_gptoss.c — the gpt-oss architecture (general.architecture "gpt-oss", llama.cpp's naming) for llm.c: its keys,
 * its tensors and its transformer blocks. llm.c keeps what all architectures share (the common keys, the embedding,
 * the RoPE tables, the KV-cache positions, the output head, the JIT'd decode step) and calls in here for the rest.
 *
 * A block follows OpenAI's reference formulation (gpt_oss/torch/model.py): RMSNorm -> q/k/v with biases -> neox RoPE
 * with YaRN (cos and sin scaled by the concentration 0.1 ln(factor) + 1, so q.k carries its square) -> attention with
 * one sink logit per query head, scale 1/sqrt(head_dim), a sliding window of attention.sliding_window keys on the
 * even layers and full causal attention on the odd ones (llama.cpp: swa pattern 2, layer il is SWA when il % 2 == 0)
 * -> output projection with bias -> residual -> post_attention_norm -> the MoE: router logits (with bias), softmax over
 * the top-k, experts with the clamped SwiGLU (alpha 1.702, limit 7) and biases -> residual. The llama.cpp snapshot
 * here (Feb 2025) predates gpt-oss, so this follows OpenAI's reference; its YaRN ramp uses the unrounded correction
 * dims (HF's truncate = false), which ggml's rope_yarn_corr_dims would floor and ceil. */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct OssLayer {
  tg_tensor *attn_norm, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *sinks, *post_norm;
  tg_tensor *router, *router_b, *gate, *gate_b, *up, *up_b, *down, *down_b;
  tg_tensor *kc, *vc; /* (1, n_kv_head, n_ctx, head_dim) float32 */
} OssLayer;

struct nn_oss {
  const tg_llm_config *c; /* the model's (llm.c owns it) */
  int64_t n_ctx;
  OssLayer *layers;
};

/* ------------------------------------------------------------------------------------------------- keys */

static tg_status oss_err(tg_status st, const char *path, const char *what) {
  return tg_set_error(st, "tg_llm_load: %s: %s", path, what);
}

/* gpt-oss.key as an integer in [lo, hi]; absent: def, or an error when def < 0 */
static tg_status oss_int(const tg_gguf *g, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out,
                         const char *path) {
  char full[96], msg[200];
  snprintf(full, sizeof full, "gpt-oss.%s", key);
  if (!tg_gguf_get(g, full)) {
    if (def >= 0) { *out = def; return TG_OK; }
    snprintf(msg, sizeof msg, "missing key %s", full);
    return oss_err(TG_ERR_IO, path, msg);
  }
  int64_t v;
  if (tg_gguf_get_int(g, full, &v) != TG_OK || v < lo || v > hi) {
    snprintf(msg, sizeof msg, "key %s must be an integer in [%lld, %lld]", full, (long long)lo, (long long)hi);
    return oss_err(TG_ERR_IO, path, msg);
  }
  *out = v;
  return TG_OK;
}

tg_status nn_oss_config(const tg_gguf *g, const char *path, tg_llm_config *c) {
  int64_t ne, nu, win, ffn, octx;
  tg_status st = oss_int(g, "expert_count", -1, 1, 4096, &ne, path);
  if (st == TG_OK) st = oss_int(g, "expert_used_count", -1, 1, ne, &nu, path);
  if (st == TG_OK) st = oss_int(g, "attention.sliding_window", -1, 1, INT32_MAX, &win, path);
  /* llama.cpp reads the expert width from expert_feed_forward_length; feed_forward_length is the fallback */
  if (st == TG_OK) st = oss_int(g, "expert_feed_forward_length", c->ffn_dim, 1, 1 << 22, &ffn, path);
  if (st != TG_OK) return st;
  if (ffn < 1) return oss_err(TG_ERR_IO, path, "missing key gpt-oss.expert_feed_forward_length (or feed_forward_length)");
  c->n_expert = (int)ne, c->n_expert_used = (int)nu, c->sliding_window = win, c->ffn_dim = (int)ffn;
  c->qkv_bias = true;
  const char *stype = NULL;
  if (tg_gguf_get(g, "gpt-oss.rope.scaling.type")) tg_gguf_get_string(g, "gpt-oss.rope.scaling.type", &stype, NULL);
  if (stype && !strcmp(stype, "yarn")) {
    double f;
    if (tg_gguf_get_float(g, "gpt-oss.rope.scaling.factor", &f) != TG_OK || !isfinite(f) || f < 1)
      return oss_err(TG_ERR_IO, path, "rope.scaling.type yarn needs gpt-oss.rope.scaling.factor >= 1");
    if ((st = oss_int(g, "rope.scaling.original_context_length", -1, 1, INT32_MAX, &octx, path)) != TG_OK) return st;
    c->yarn_factor = f, c->yarn_ctx = octx;
    c->rope_mscale = f > 1 ? 0.1 * log(f) + 1.0 : 1.0;
  }
  return TG_OK;
}

/* YaRN's per-pair frequency divisors (the reference's "NTK by parts", beta 32 and alpha 1): pair i keeps its
 * frequency below the ramp (fast rotations), is interpolated by the factor above it, linearly in between. */
void nn_oss_yarn(const tg_llm_config *c, double *ff) {
  double half = c->rope_dim / 2.0, lb = log(c->rope_base), f = c->yarn_factor;
  double low = half * log((double)c->yarn_ctx / (32.0 * 2 * M_PI)) / lb;
  double high = half * log((double)c->yarn_ctx / (1.0 * 2 * M_PI)) / lb;
  for (int i = 0; i < c->rope_dim / 2; i++) {
    double ramp = ((double)i - low) / (high - low), keep = 1.0 - (ramp < 0 ? 0 : ramp > 1 ? 1 : ramp);
    ff[i] = 1.0 / ((1.0 - keep) / f + keep);
  }
}

/* ------------------------------------------------------------------------------------------------- weights */

/* a tensor of ggml shape ne[0..ndim) (float32 unless a matrix or the experts' matrices), or NULL setting *bad */
static tg_tensor *oss_weight(const tg_gguf *g, const char *name, int ndim, int64_t ne0, int64_t ne1, int64_t ne2,
                             const char *path, bool *bad) {
  const tg_gguf_tensor_info *ti = tg_gguf_find_tensor(g, name);
  char msg[256];
  const int64_t want[3] = {ne0, ne1, ne2};
  if (!ti) {
    snprintf(msg, sizeof msg, "missing tensor %s", name);
    oss_err(TG_ERR_IO, path, msg), *bad = true;
    return NULL;
  }
  bool ok = ti->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = ti->ne[i] == want[i];
  if (!ok) {
    snprintf(msg, sizeof msg, "tensor %s has ne (%lld, %lld, %lld) x%d, expected (%lld, %lld, %lld) x%d", name,
             (long long)ti->ne[0], (long long)ti->ne[1], (long long)ti->ne[2], ti->ndim, (long long)ne0,
             (long long)(ndim > 1 ? ne1 : 1), (long long)(ndim > 2 ? ne2 : 1), ndim);
    oss_err(TG_ERR_IO, path, msg), *bad = true;
    return NULL;
  }
  bool plain = ti->type == TG_GGML_F32 || ti->type == TG_GGML_F16 || ti->type == TG_GGML_BF16;
  bool small = ndim == 1 || strstr(name, ".bias"); /* norms, sinks, biases: read as float32 */
  if (small && !plain) {
    snprintf(msg, sizeof msg, "tensor %s must be f32, f16 or bf16, not %s", name, tg_ggml_type_name(ti->type));
    oss_err(TG_ERR_IO, path, msg), *bad = true;
    return NULL;
  }
  tg_tensor *t = tg_gguf_tensor(g, name, TG_GGUF_MAP);
  if (!t) { *bad = true; return NULL; }
  return tg_retain(small ? tg_cast(t, TG_FLOAT32) : t);
}

tg_status nn_oss_bind(const tg_gguf *g, const tg_llm_config *c, int64_t n_ctx, const char *path, nn_oss **out) {
  nn_oss *o = calloc(1, sizeof *o);
  if (!o || !(o->layers = calloc((size_t)c->n_layer, sizeof *o->layers))) {
    free(o);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_load: gpt-oss layers");
  }
  o->c = c, o->n_ctx = n_ctx;
  *out = o;
  int64_t dim = c->dim, qd = (int64_t)c->n_head * c->head_dim, kvd = (int64_t)c->n_kv_head * c->head_dim;
  int64_t ffn = c->ffn_dim, ne = c->n_expert;
  bool bad = false;
  for (int l = 0; l < c->n_layer && !bad; l++) {
    OssLayer *L = &o->layers[l];
    char n[96];
#define W(field, nm, nd, a, b, e) (snprintf(n, sizeof n, "blk.%d." nm, l), L->field = oss_weight(g, n, nd, a, b, e, path, &bad))
    W(attn_norm, "attn_norm.weight", 1, dim, 1, 1);
    W(wq, "attn_q.weight", 2, dim, qd, 1);
    W(bq, "attn_q.bias", 1, qd, 1, 1);
    W(wk, "attn_k.weight", 2, dim, kvd, 1);
    W(bk, "attn_k.bias", 1, kvd, 1, 1);
    W(wv, "attn_v.weight", 2, dim, kvd, 1);
    W(bv, "attn_v.bias", 1, kvd, 1, 1);
    W(wo, "attn_output.weight", 2, qd, dim, 1);
    W(bo, "attn_output.bias", 1, dim, 1, 1);
    W(sinks, "attn_sinks.weight", 1, c->n_head, 1, 1);
    W(post_norm, "post_attention_norm.weight", 1, dim, 1, 1);
    W(router, "ffn_gate_inp.weight", 2, dim, ne, 1);
    W(router_b, "ffn_gate_inp.bias", 1, ne, 1, 1);
    W(gate, "ffn_gate_exps.weight", 3, dim, ffn, ne);
    W(gate_b, "ffn_gate_exps.bias", 2, ffn, ne, 1);
    W(up, "ffn_up_exps.weight", 3, dim, ffn, ne);
    W(up_b, "ffn_up_exps.bias", 2, ffn, ne, 1);
    W(down, "ffn_down_exps.weight", 3, ffn, dim, ne);
    W(down_b, "ffn_down_exps.bias", 2, dim, ne, 1);
#undef W
    if (bad) break;
    L->kc = tg_retain(tg_contiguous(tg_zeros(TG_SHAPE(1, c->n_kv_head, n_ctx, c->head_dim), TG_FLOAT32)));
    L->vc = tg_retain(tg_contiguous(tg_zeros(TG_SHAPE(1, c->n_kv_head, n_ctx, c->head_dim), TG_FLOAT32)));
    if (!L->kc || !L->vc || tg_realize(L->kc) != TG_OK || tg_realize(L->vc) != TG_OK) return tg_last_status();
  }
  return bad ? tg_last_status() : TG_OK;
}

void nn_oss_free(nn_oss *o) {
  if (!o) return;
  for (int l = 0; o->layers && l < o->c->n_layer; l++) {
    OssLayer *L = &o->layers[l];
    tg_tensor *ts[] = {L->attn_norm, L->wq, L->bq, L->wk, L->bk, L->wv, L->bv, L->wo, L->bo, L->sinks, L->post_norm,
                       L->router, L->router_b, L->gate, L->gate_b, L->up, L->up_b, L->down, L->down_b, L->kc, L->vc};
    for (size_t i = 0; i < TG_ARRAY_LEN(ts); i++) tg_release(ts[i]);
  }
  free(o->layers);
  free(o);
}

/* ------------------------------------------------------------------------------------------------- forward */

static tg_tensor *linear(const tg_tensor *x, const tg_tensor *w, const tg_tensor *b) {
  return tg_add(tg_matmul(x, tg_transpose(w, 0, 1)), b);
}

static tg_tensor *rms_norm(const tg_tensor *x, const tg_tensor *w, double eps) {
  return tg_mul(tg_rms_norm(x, eps), w);
}

/* [a, b) of the last axis */
static tg_tensor *last_axis(const tg_tensor *t, int64_t a, int64_t b) {
  int nd = tg_ndim(t);
  int64_t bounds[2 * TG_MAX_DIMS];
  for (int d = 0; d < nd; d++) bounds[2 * d] = 0, bounds[2 * d + 1] = tg_shape(t)[d];
  bounds[2 * nd - 2] = a, bounds[2 * nd - 1] = b;
  return tg_shrink(t, bounds, (size_t)nd);
}

/* neox RoPE of x (T, H, hd) on its first rope_dim dims: the pairs (i, i + rope_dim/2); cs, sn (T, 1, rope_dim/2) */
static tg_tensor *rope_neox(const tg_llm_config *c, const tg_tensor *x, const tg_tensor *cs, const tg_tensor *sn) {
  int64_t hd = c->head_dim, rd = c->rope_dim, half = rd / 2;
  const tg_tensor *r = rd == hd ? x : last_axis(x, 0, rd);
  tg_tensor *x0 = last_axis(r, 0, half), *x1 = last_axis(r, half, rd);
  tg_tensor *y0 = tg_sub(tg_mul(x0, cs), tg_mul(x1, sn)), *y1 = tg_add(tg_mul(x0, sn), tg_mul(x1, cs));
  tg_tensor *y = tg_cat((const tg_tensor *[]){y0, y1}, 2, 2);
  return rd == hd ? y : tg_cat((const tg_tensor *[]){y, last_axis(x, rd, hd)}, 2, 2);
}

/* the positions [a, b) of axis 2 of a cache (1, H, n_ctx, hd) */
static tg_tensor *cache_rows(const tg_tensor *cache, tg_sint a, tg_sint b) {
  const int64_t *s = tg_shape(cache);
  tg_sint bd[8] = {TG_SI(0), TG_SI(1), TG_SI(0), TG_SI(s[1]), a, b, TG_SI(0), TG_SI(s[3])};
  return tg_shrink_sym(cache, bd, 4);
}

tg_tensor *nn_oss_blocks(nn_oss *o, const tg_tensor *x0, const tg_tensor *cs, const tg_tensor *sn,
                         const tg_tensor *sp, int64_t pos) {
  const tg_llm_config *c = o->c;
  int64_t T = tg_size(x0, 0), nh = c->n_head, nkv = c->n_kv_head, hd = c->head_dim;
  tg_tensor *x = (tg_tensor *)x0;
  for (int l = 0; l < c->n_layer; l++) {
    OssLayer *L = &o->layers[l];
    tg_tensor *h = rms_norm(x, L->attn_norm, c->norm_eps);
    tg_tensor *q = tg_reshape(linear(h, L->wq, L->bq), TG_SHAPE(T, nh, hd));
    tg_tensor *k = tg_reshape(linear(h, L->wk, L->bk), TG_SHAPE(T, nkv, hd));
    tg_tensor *v = tg_reshape(linear(h, L->wv, L->bv), TG_SHAPE(T, nkv, hd));
    q = rope_neox(c, q, cs, sn), k = rope_neox(c, k, cs, sn);
    /* (T, H, hd) -> (1, H, T, hd): the cache takes positions [sp + pos, +T), attention reads [0, sp + pos + T) */
    q = tg_unsqueeze(tg_permute(q, TG_AXES(1, 0, 2)), 0);
    tg_sint at = TG_SV(sp, pos), end = TG_SV(sp, pos + T);
    if (tg_assign(cache_rows(L->kc, at, end), tg_unsqueeze(tg_permute(k, TG_AXES(1, 0, 2)), 0)) != TG_OK ||
        tg_assign(cache_rows(L->vc, at, end), tg_unsqueeze(tg_permute(v, TG_AXES(1, 0, 2)), 0)) != TG_OK)
      return NULL;
    /* flash attention over the cache's [0, sp + pos + T): the windowed layers' prefill takes only the band's blocks */
    tg_attention_opts ao = {.causal = true, .start = at, .sinks = L->sinks, .window = l % 2 == 0 ? c->sliding_window : 0};
    tg_tensor *att = tg_flash_attention(q, cache_rows(L->kc, TG_SI(0), end), cache_rows(L->vc, TG_SI(0), end), &ao);
    /* (1, nh, T, hd) -> (T, nh * hd) */
    att = tg_reshape(tg_permute(tg_reshape(att, TG_SHAPE(nh, T, hd)), TG_AXES(1, 0, 2)), TG_SHAPE(T, nh * hd));
    x = tg_add(x, linear(att, L->wo, L->bo));
    h = rms_norm(x, L->post_norm, c->norm_eps);
    tg_moe_opts mo = {.k = c->n_expert_used, .gating = TG_MOE_SOFTMAX_TOPK, .router_bias = L->router_b,
                      .act = TG_MOE_SWIGLU_OAI, .gate_bias = L->gate_b, .up_bias = L->up_b, .down_bias = L->down_b};
    x = tg_add(x, tg_moe_ffn(h, L->router, L->gate, L->up, L->down, &mo));
    if (!x) return NULL;
  }
  return x;
}
