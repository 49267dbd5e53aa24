/* llm.c — llama-family transformers from GGUF files (tinygrad's llm/model.py): the loader that reads the
 * hyper-parameters and binds the mapped weights, the forward pass as tensor ops, the KV cache and the JIT'd decode step.
 *
 * One forward serves prefill and decode: tokens at positions [sp, sp+T) attend over the cache's [0, sp+T). Decode
 * (T = 1) runs it with sp and the token as bound Variables inside a tg_jit, so the captured kernels replay for every
 * position; prefill runs it with concrete ints. Weights are the GGUF's tensors (tg_gguf_tensor: quantized ones are lazy
 * dequantizations that fuse into the matmul reading them); the token embedding is looked up on its raw rows (a
 * symbolic row slice of the bytes, then dequantized), so a lookup reads one row, never the table. gpt-oss shares all of
 * this; its extra keys, its tensors and its blocks are llm_gptoss.c's (m->oss). */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct LlmLayer {
  tg_tensor *attn_norm, *wq, *wk, *wv, *bq, *bk, *bv, *q_norm, *k_norm, *wo, *ffn_norm, *wg, *wu, *wd;
  tg_tensor *kc, *vc; /* (n_kv_head, n_ctx, head_dim) float32 */
} LlmLayer;

struct tg_llm {
  tg_gguf *g;
  tg_llm_config cfg;
  int64_t n_ctx, n_past;
  LlmLayer *layers;
  tg_tensor *embd_rows;  /* (vocab, row bytes) uint8 */
  int embd_type;
  tg_tensor *out_norm, *out;
  tg_tensor *rope_cos, *rope_sin; /* (n_ctx, rope_dim / 2) float32 */
  tg_tensor *v_pos, *v_tok;       /* the decode step's Variables */
  tg_jit *jit;
  nn_oss *oss;                    /* gpt-oss's blocks (llm_gptoss.c), NULL for the llama family */
  /* QDOT: the Q4_0 / Q8_0 Linears with 8-bit activations (ggml_qdot.c): each such weight's raw bytes, and the
   * quantized activation of the last x a forward quantized (q/k/v and gate/up share theirs) */
  bool qdot;
  struct QLin { const tg_tensor *w; tg_tensor *qs, *d; int type; int64_t n_out; } *ql; /* packed: nn_qdot_pack */
  size_t nql, capql;
  const tg_tensor *qx_src;
  int qx_type;
  tg_tensor *qx[3];
};

/* ------------------------------------------------------------------------------------------------- loading */

static tg_status load_err(tg_status st, const char *path, const char *what) {
  return tg_set_error(st, "tg_llm_load: %s: %s", path, what);
}

/* {arch}.key as an int; required unless def >= 0 */
static bool key_int(const tg_gguf *g, const char *arch, const char *key, int64_t def, int64_t lo, int64_t hi,
                    int64_t *out, const char *path) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (!tg_gguf_get(g, full)) {
    if (def >= 0) { *out = def; return true; }
    char msg[200];
    snprintf(msg, sizeof msg, "missing key %s", full);
    load_err(TG_ERR_IO, path, msg);
    return false;
  }
  int64_t v;
  if (tg_gguf_get_int(g, full, &v) != TG_OK || v < lo || v > hi) {
    char msg[240];
    snprintf(msg, sizeof msg, "key %s must be an integer in [%lld, %lld]", full, (long long)lo, (long long)hi);
    load_err(TG_ERR_IO, path, msg);
    return false;
  }
  *out = v;
  return true;
}

static bool key_float(const tg_gguf *g, const char *arch, const char *key, double def, double *out, const char *path) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (!tg_gguf_get(g, full)) { *out = def; return true; }
  double v;
  if (tg_gguf_get_float(g, full, &v) != TG_OK || !isfinite(v) || v <= 0) {
    char msg[200];
    snprintf(msg, sizeof msg, "key %s must be a positive float", full);
    load_err(TG_ERR_IO, path, msg);
    return false;
  }
  *out = v;
  return true;
}

/* a tensor of the mapped file on the device the model runs on (tg_default_device: DEV=CUDA): copied there once, at
 * load, so a forward never copies weights; the file's own (CPU) tensor when that is the device. NULL on error. */
static tg_tensor *on_model_device(tg_tensor *t) {
  const char *dev = tg_default_device(), *have = t ? tg_device(t) : NULL;
  if (!t || !dev || !have || !strcmp(dev, have) || (!strncmp(dev, "CPU", 3) && !strncmp(have, "CPU", 3))) return t;
  tg_tensor *d = tg_contiguous(tg_to(t, dev));
  return d && tg_realize(d) == TG_OK ? d : NULL;
}

/* a weight of ggml shape ne (ndim 1 or 2), or NULL: required tensors fail the load, optional ones give NULL */
static tg_tensor *weight(tg_llm *m, const char *name, int64_t ne0, int64_t ne1, bool required, const char *path,
                         bool *failed) {
  const tg_gguf_tensor_info *ti = tg_gguf_find_tensor(m->g, name);
  char msg[256];
  if (!ti) {
    if (required) {
      snprintf(msg, sizeof msg, "missing tensor %s", name);
      load_err(TG_ERR_IO, path, msg);
      *failed = true;
    }
    return NULL;
  }
  int want = ne1 ? 2 : 1;
  bool ok = ti->ndim == want && ti->ne[0] == ne0 && (want == 1 || ti->ne[1] == ne1);
  if (!ok) {
    snprintf(msg, sizeof msg, "tensor %s has ne (%lld, %lld) x%d, expected (%lld, %lld)", name, (long long)ti->ne[0],
             (long long)ti->ne[1], ti->ndim, (long long)ne0, (long long)ne1);
    load_err(TG_ERR_IO, path, msg);
    *failed = true;
    return NULL;
  }
  if (want == 1 && ti->type != TG_GGML_F32 && ti->type != TG_GGML_F16) {
    snprintf(msg, sizeof msg, "1-d tensor %s must be f32 or f16, not %s", name, tg_ggml_type_name(ti->type));
    load_err(TG_ERR_IO, path, msg);
    *failed = true;
    return NULL;
  }
  tg_tensor *t = on_model_device(tg_gguf_tensor(m->g, name, TG_GGUF_MAP));
  if (!t) { *failed = true; return NULL; }
  if (want == 1) t = tg_cast(t, TG_FLOAT32);
  if (want == 2 && m->qdot && nn_qdot_supported(ti->type)) {
    tg_tensor *raw = tg_gguf_tensor_bytes(m->g, name, TG_GGUF_MAP), *qs = NULL, *d = NULL;
    if (!raw || nn_qdot_pack(raw, ti->type, ne1, &qs, &d) != TG_OK) { *failed = true; return NULL; }
    if (m->nql == m->capql) {
      size_t cap = m->capql ? 2 * m->capql : 64;
      struct QLin *q = realloc(m->ql, cap * sizeof *q);
      if (!q) { tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_load: %s", name); *failed = true; return NULL; }
      m->ql = q, m->capql = cap;
    }
    m->ql[m->nql++] = (struct QLin){t, tg_retain(qs), tg_retain(d), ti->type, ne1}; /* past the load's scope */
  }
  return tg_retain(t);
}

/* QDOT (default: on for the CPU device where the CPU has AVX-VNNI, the int8 dot products it is fast with) */
static bool qdot_default(void) {
#if defined(__x86_64__)
  const char *dev = tg_default_device();
  if (!dev || strncmp(dev, "CPU", 3) != 0) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}

static tg_status parse_config(tg_llm *m, const char *path) {
  tg_llm_config *c = &m->cfg;
  const char *arch;
  size_t alen;
  if (tg_gguf_get_string(m->g, "general.architecture", &arch, &alen) != TG_OK)
    return load_err(TG_ERR_IO, path, "missing string key general.architecture");
  bool oss = !strcmp(arch, "gpt-oss");
  if (strcmp(arch, "llama") && strcmp(arch, "qwen2") && strcmp(arch, "qwen3") && !oss) {
    char msg[120];
    snprintf(msg, sizeof msg, "architecture \"%.40s\" is not supported (llama, qwen2, qwen3, gpt-oss)", arch);
    return load_err(TG_ERR_UNSUPPORTED, path, msg);
  }
  snprintf(c->arch, sizeof c->arch, "%s", arch);
  int64_t nl, dim, nh, nkv, ffn, hd, rd, ctx;
  if (!key_int(m->g, arch, "block_count", -1, 1, 4096, &nl, path) ||
      !key_int(m->g, arch, "embedding_length", -1, 1, 1 << 20, &dim, path) ||
      !key_int(m->g, arch, "feed_forward_length", oss ? 0 : -1, 1, 1 << 22, &ffn, path) ||
      !key_int(m->g, arch, "attention.head_count", -1, 1, 4096, &nh, path) ||
      !key_int(m->g, arch, "attention.head_count_kv", nh, 1, nh, &nkv, path) ||
      !key_int(m->g, arch, "context_length", 2048, 1, 1 << 24, &ctx, path))
    return tg_last_status();
  if (dim % nh) return load_err(TG_ERR_IO, path, "embedding_length is not a multiple of attention.head_count");
  if (!key_int(m->g, arch, "attention.key_length", dim / nh, 2, 1 << 16, &hd, path)) return tg_last_status();
  int64_t vl;
  if (!key_int(m->g, arch, "attention.value_length", hd, 1, 1 << 16, &vl, path)) return tg_last_status();
  if (vl != hd) return load_err(TG_ERR_UNSUPPORTED, path, "attention.value_length != key_length is not supported");
  if (!key_int(m->g, arch, "rope.dimension_count", hd, 2, hd, &rd, path)) return tg_last_status();
  if (rd % 2) return load_err(TG_ERR_IO, path, "rope.dimension_count must be even");
  if (nh % nkv) return load_err(TG_ERR_IO, path, "attention.head_count is not a multiple of head_count_kv");
  if (hd % 2) return load_err(TG_ERR_IO, path, "the head dimension must be even");
  if (!key_float(m->g, arch, "rope.freq_base", 10000.0, &c->rope_base, path) ||
      !key_float(m->g, arch, "attention.layer_norm_rms_epsilon", 1e-5, &c->norm_eps, path))
    return tg_last_status();
  c->rope_scale = 1.0;
  char key[96];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  const char *stype = NULL;
  if (tg_gguf_get(m->g, key) && tg_gguf_get_string(m->g, key, &stype, NULL) != TG_OK)
    return load_err(TG_ERR_IO, path, "rope.scaling.type must be a string");
  if (stype && strcmp(stype, "none") && strcmp(stype, "linear") && !(oss && !strcmp(stype, "yarn"))) {
    char msg[120];
    snprintf(msg, sizeof msg, "rope scaling \"%.32s\" is not supported (none, linear, llama-3 rope_freqs)", stype);
    return load_err(TG_ERR_UNSUPPORTED, path, msg);
  }
  if (stype && !strcmp(stype, "linear")) {
    double f;
    if (!key_float(m->g, arch, "rope.scaling.factor", 1.0, &f, path)) return tg_last_status();
    c->rope_scale = 1.0 / f;
  }
  c->n_layer = (int)nl, c->dim = (int)dim, c->n_head = (int)nh, c->n_kv_head = (int)nkv, c->head_dim = (int)hd;
  c->ffn_dim = (int)ffn, c->rope_dim = (int)rd, c->ctx_train = ctx;
  c->rope_neox = strcmp(arch, "llama") != 0;
  c->qkv_bias = !strcmp(arch, "qwen2");
  c->qk_norm = !strcmp(arch, "qwen3");
  const tg_gguf_tensor_info *emb = tg_gguf_find_tensor(m->g, "token_embd.weight");
  if (!emb) return load_err(TG_ERR_IO, path, "missing tensor token_embd.weight");
  if (emb->ndim != 2 || emb->ne[0] != dim || emb->ne[1] < 1 || emb->ne[1] > INT32_MAX)
    return load_err(TG_ERR_IO, path, "token_embd.weight must be (embedding_length, vocab)");
  c->vocab = (int)emb->ne[1];
  c->bos = c->eos = -1;
  int64_t v;
  if (tg_gguf_get(m->g, "tokenizer.ggml.bos_token_id") && tg_gguf_get_int(m->g, "tokenizer.ggml.bos_token_id", &v) == TG_OK &&
      v >= 0 && v < c->vocab)
    c->bos = (int32_t)v;
  if (tg_gguf_get(m->g, "tokenizer.ggml.eos_token_id") && tg_gguf_get_int(m->g, "tokenizer.ggml.eos_token_id", &v) == TG_OK &&
      v >= 0 && v < c->vocab)
    c->eos = (int32_t)v;
  const tg_gguf_tensor_info *q = tg_gguf_find_tensor(m->g, "blk.0.attn_q.weight");
  c->weight_type = q ? q->type : emb->type;
  c->yarn_factor = c->rope_mscale = 1.0;
  return oss ? nn_oss_config(m->g, path, c) : TG_OK;
}

/* cos/sin of pos * scale * base^(-2i/rope_dim) / factor[i] for every cache position, in double, stored as float */
static tg_status rope_tables(tg_llm *m, const char *path) {
  const tg_llm_config *c = &m->cfg;
  int64_t half = c->rope_dim / 2, n = m->n_ctx * half;
  double *ff = calloc((size_t)half, sizeof *ff);
  float *cs = malloc((size_t)n * sizeof *cs), *sn = malloc((size_t)n * sizeof *sn);
  tg_status st = TG_OK;
  if (!ff || !cs || !sn) { st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_load: rope tables"); goto done; }
  for (int64_t i = 0; i < half; i++) ff[i] = 1.0;
  const tg_gguf_tensor_info *fi = tg_gguf_find_tensor(m->g, "rope_freqs.weight");
  if (fi) {
    if (fi->type != TG_GGML_F32 || fi->ndim != 1 || fi->ne[0] != half) {
      st = load_err(TG_ERR_IO, path, "rope_freqs.weight must be f32 of rope.dimension_count / 2 values");
      goto done;
    }
    float *tmp = malloc((size_t)half * sizeof *tmp);
    tg_tensor *t = tg_gguf_tensor(m->g, "rope_freqs.weight", TG_GGUF_COPY);
    st = tmp && t ? tg_to_host(t, tmp, (size_t)half * sizeof *tmp) : TG_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; st == TG_OK && i < half; i++) {
      if (!(tmp[i] > 0) || !isfinite(tmp[i])) st = load_err(TG_ERR_IO, path, "rope_freqs.weight must be positive");
      ff[i] = tmp[i];
    }
    free(tmp); /* t is owned by tg_llm_load's scope */
    if (st != TG_OK) goto done;
    m->cfg.rope_freq_factors = true;
  }
  if (c->yarn_factor > 1) nn_oss_yarn(c, ff);
  for (int64_t p = 0; p < m->n_ctx; p++)
    for (int64_t i = 0; i < half; i++) {
      double th = (double)p * c->rope_scale * pow(c->rope_base, -2.0 * (double)i / c->rope_dim) / ff[i];
      cs[p * half + i] = (float)(cos(th) * c->rope_mscale), sn[p * half + i] = (float)(sin(th) * c->rope_mscale);
    }
  m->rope_cos = tg_retain(tg_from_floats(cs, TG_SHAPE(m->n_ctx, half)));
  m->rope_sin = tg_retain(tg_from_floats(sn, TG_SHAPE(m->n_ctx, half)));
  if (!m->rope_cos || !m->rope_sin) st = tg_last_status();
done:
  free(ff), free(cs), free(sn);
  return st;
}

static tg_status bind_weights(tg_llm *m, const char *path) {
  const tg_llm_config *c = &m->cfg;
  bool bad = false;
  int64_t dim = c->dim, qd = (int64_t)c->n_head * c->head_dim, kvd = (int64_t)c->n_kv_head * c->head_dim;
  bool oss = !strcmp(c->arch, "gpt-oss");
  if (oss && nn_oss_bind(m->g, c, m->n_ctx, path, &m->oss) != TG_OK) return tg_last_status();
  m->layers = calloc((size_t)c->n_layer, sizeof *m->layers);
  if (!m->layers) return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_load: layers");
  for (int l = 0; l < c->n_layer && !bad && !oss; l++) {
    LlmLayer *L = &m->layers[l];
    char n[96];
    /* after the first bad tensor nothing more is looked up, so the message names that one */
#define W(field, nm, a, b, req) \
  do if (!bad) snprintf(n, sizeof n, "blk.%d." nm, l), L->field = weight(m, n, a, b, req, path, &bad); while (0)
    W(attn_norm, "attn_norm.weight", dim, 0, true);
    W(wq, "attn_q.weight", dim, qd, true);
    W(wk, "attn_k.weight", dim, kvd, true);
    W(wv, "attn_v.weight", dim, kvd, true);
    W(wo, "attn_output.weight", qd, dim, true);
    W(ffn_norm, "ffn_norm.weight", dim, 0, true);
    W(wg, "ffn_gate.weight", dim, c->ffn_dim, true);
    W(wu, "ffn_up.weight", dim, c->ffn_dim, true);
    W(wd, "ffn_down.weight", c->ffn_dim, dim, true);
    if (c->qkv_bias) {
      W(bq, "attn_q.bias", qd, 0, true);
      W(bk, "attn_k.bias", kvd, 0, true);
      W(bv, "attn_v.bias", kvd, 0, true);
    }
    if (c->qk_norm) {
      W(q_norm, "attn_q_norm.weight", c->head_dim, 0, true);
      W(k_norm, "attn_k_norm.weight", c->head_dim, 0, true);
    }
#undef W
    if (bad) break;
    L->kc = tg_retain(tg_contiguous(tg_zeros(TG_SHAPE(c->n_kv_head, m->n_ctx, c->head_dim), TG_FLOAT32)));
    L->vc = tg_retain(tg_contiguous(tg_zeros(TG_SHAPE(c->n_kv_head, m->n_ctx, c->head_dim), TG_FLOAT32)));
    if (!L->kc || !L->vc || tg_realize(L->kc) != TG_OK || tg_realize(L->vc) != TG_OK) return tg_last_status();
  }
  if (bad) return tg_last_status();
  m->out_norm = weight(m, "output_norm.weight", dim, 0, true, path, &bad);
  m->out = weight(m, "output.weight", dim, c->vocab, false, path, &bad);
  if (bad) return tg_last_status();
  if (!m->out) {
    m->cfg.tied_output = true;
    m->out = weight(m, "token_embd.weight", dim, c->vocab, true, path, &bad);
    if (bad) return tg_last_status();
  }
  const tg_gguf_tensor_info *ei = tg_gguf_find_tensor(m->g, "token_embd.weight");
  m->embd_type = ei->type;
  m->embd_rows = tg_retain(tg_reshape(on_model_device(tg_gguf_tensor_bytes(m->g, "token_embd.weight", TG_GGUF_MAP)),
                                      TG_SHAPE(c->vocab, (int64_t)(ei->nbytes / (uint64_t)c->vocab))));
  m->v_pos = tg_retain(tg_variable("start_pos", 0, m->n_ctx - 1));
  m->v_tok = tg_retain(tg_variable("token", 0, c->vocab - 1));
  return m->embd_rows && m->v_pos && m->v_tok ? TG_OK : tg_last_status();
}

tg_status tg_llm_load(const char *path, const tg_llm_options *opt, tg_llm **out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_load: NULL out");
  *out = NULL;
  if (!path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_load: NULL path");
  if (opt && opt->n_ctx < 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_load: n_ctx %lld < 0", (long long)opt->n_ctx);
  tg_llm *m = calloc(1, sizeof *m);
  if (!m) return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_load: out of memory");
  m->qdot = tg_getenv_int("QDOT", qdot_default()) != 0;
  tg_scope s = tg_scope_begin();
  tg_status st = tg_gguf_open(path, &m->g);
  if (st == TG_OK) st = parse_config(m, path);
  if (st == TG_OK) {
    int64_t want = opt && opt->n_ctx ? opt->n_ctx : m->cfg.ctx_train < 2048 ? m->cfg.ctx_train : 2048;
    if (want > m->cfg.ctx_train) {
      char msg[160];
      snprintf(msg, sizeof msg, "n_ctx %lld exceeds the model's context_length %lld", (long long)want,
               (long long)m->cfg.ctx_train);
      st = load_err(TG_ERR_INVALID_ARGUMENT, path, msg);
    }
    m->n_ctx = want;
  }
  if (st == TG_OK) st = rope_tables(m, path);
  if (st == TG_OK) st = bind_weights(m, path);
  tg_scope_end(s);
  if (st != TG_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    tg_llm_free(m);
    return tg_set_error(st, "%s", msg);
  }
  *out = m;
  return TG_OK;
}

void tg_llm_free(tg_llm *m) {
  if (!m) return;
  tg_jit_free(m->jit);
  nn_oss_free(m->oss);
  if (m->layers)
    for (int l = 0; l < m->cfg.n_layer; l++) {
      LlmLayer *L = &m->layers[l];
      tg_tensor *ts[] = {L->attn_norm, L->wq, L->wk, L->wv, L->bq, L->bk, L->bv, L->q_norm, L->k_norm,
                         L->wo, L->ffn_norm, L->wg, L->wu, L->wd, L->kc, L->vc};
      for (size_t i = 0; i < TG_ARRAY_LEN(ts); i++) tg_release(ts[i]);
    }
  free(m->layers);
  for (size_t i = 0; i < m->nql; i++) tg_release(m->ql[i].qs), tg_release(m->ql[i].d);
  free(m->ql);
  tg_tensor *ts[] = {m->embd_rows, m->out_norm, m->out, m->rope_cos, m->rope_sin, m->v_pos, m->v_tok};
  for (size_t i = 0; i < TG_ARRAY_LEN(ts); i++) tg_release(ts[i]);
  tg_gguf_close(m->g);
  free(m);
}

const tg_llm_config *tg_llm_get_config(const tg_llm *m) { return m ? &m->cfg : NULL; }
int64_t tg_llm_n_ctx(const tg_llm *m) { return m ? m->n_ctx : 0; }
int64_t tg_llm_n_past(const tg_llm *m) { return m ? m->n_past : 0; }
const tg_gguf *tg_llm_gguf(const tg_llm *m) { return m ? m->g : NULL; }
size_t tg_llm_decode_kernels(const tg_llm *m) { return m && m->jit ? tg_jit_kernel_count(m->jit) : 0; }

/* ------------------------------------------------------------------------------------------------- forward */

/* x @ w^T (+ b): w is (out, in) as GGUF stores a linear weight; a Q4_0 / Q8_0 one with QDOT through ggml_qdot.c */
static tg_tensor *linear(tg_llm *m, const tg_tensor *x, const tg_tensor *w, const tg_tensor *b) {
  const struct QLin *q = NULL;
  for (size_t i = 0; i < m->nql && !q; i++)
    if (m->ql[i].w == w) q = &m->ql[i];
  tg_tensor *y = NULL;
  if (q) {
    if (m->qx_src != x || m->qx_type != q->type) {
      m->qx_src = NULL;
      if (nn_qdot_quantize(tg_cast(x, TG_FLOAT32), q->type, &m->qx[0], &m->qx[1], &m->qx[2]) != TG_OK) return NULL;
      m->qx_src = x, m->qx_type = q->type;
    }
    y = nn_qdot_linear(x, m->qx[0], m->qx[1], m->qx[2], q->qs, q->d, q->type, q->n_out);
  } else {
    y = tg_matmul(x, tg_transpose(w, 0, 1));
  }
  return b ? tg_add(y, b) : y;
}

static tg_tensor *rms_norm(const tg_tensor *x, const tg_tensor *w, double eps) {
  return tg_mul(tg_rms_norm(tg_cast(x, TG_FLOAT32), eps), w);
}

/* a range [a, a+len) on one axis of t (the others whole): a is sp + off with sp a bound Variable or NULL */
static tg_tensor *slice_axis(const tg_tensor *t, int axis, const tg_tensor *sp, int64_t off, int64_t len) {
  tg_sint b[2 * TG_MAX_DIMS];
  int nd = tg_ndim(t);
  for (int d = 0; d < nd; d++) b[2 * d] = TG_SI(0), b[2 * d + 1] = TG_SI(tg_shape(t)[d]);
  b[2 * axis] = TG_SV(sp, off), b[2 * axis + 1] = TG_SV(sp, off + len);
  return tg_shrink_sym(t, b, (size_t)nd);
}

static tg_tensor *last_axis(const tg_tensor *t, int64_t a, int64_t b) {
  int nd = tg_ndim(t);
  return slice_axis(t, nd - 1, NULL, a, b - a);
}

/* RoPE on x (T, H, hd) over its first rope_dim dims, cos/sin (T, 1, rope_dim / 2). ggml's "normal" mode rotates the
 * pairs (2i, 2i+1), "neox" the pairs (i, i + rope_dim/2). */
static tg_tensor *rope(const tg_llm_config *c, const tg_tensor *x, const tg_tensor *cs, const tg_tensor *sn) {
  int64_t T = tg_size(x, 0), H = tg_size(x, 1), hd = c->head_dim, rd = c->rope_dim, half = rd / 2;
  tg_tensor *r = rd == hd ? (tg_tensor *)x : last_axis(x, 0, rd), *x0, *x1, *y;
  if (c->rope_neox) {
    x0 = last_axis(r, 0, half), x1 = last_axis(r, half, rd);
  } else {
    tg_tensor *p = tg_reshape(r, TG_SHAPE(T, H, half, 2));
    x0 = tg_reshape(last_axis(p, 0, 1), TG_SHAPE(T, H, half));
    x1 = tg_reshape(last_axis(p, 1, 2), TG_SHAPE(T, H, half));
  }
  tg_tensor *y0 = tg_sub(tg_mul(x0, cs), tg_mul(x1, sn)), *y1 = tg_add(tg_mul(x0, sn), tg_mul(x1, cs));
  if (c->rope_neox) y = tg_cat((const tg_tensor *[]){y0, y1}, 2, 2);
  else y = tg_reshape(tg_stack((const tg_tensor *[]){y0, y1}, 2, 3), TG_SHAPE(T, H, rd));
  return rd == hd ? y : tg_cat((const tg_tensor *[]){y, last_axis(x, rd, hd)}, 2, 2);
}

/* The hidden states (T, dim) of tokens at [sp + pos, sp + pos + T) -> logits of the last (or every) position.
 * sp is a bound Variable (decode) or NULL (pos concrete). x0 (T, dim) float32 is the embedded input. */
static tg_tensor *transformer(tg_llm *m, const tg_tensor *x0, const tg_tensor *sp, int64_t pos, bool all) {
  const tg_llm_config *c = &m->cfg;
  m->qx_src = NULL; /* the quantized-activation cache holds tensors of the caller's scope only */
  int64_t T = tg_size(x0, 0), nh = c->n_head, nkv = c->n_kv_head, hd = c->head_dim, rep = nh / nkv;
  int64_t half = c->rope_dim / 2;
  tg_tensor *cs = tg_reshape(slice_axis(m->rope_cos, 0, sp, pos, T), TG_SHAPE(T, 1, half));
  tg_tensor *sn = tg_reshape(slice_axis(m->rope_sin, 0, sp, pos, T), TG_SHAPE(T, 1, half));
  /* causal mask for prefill (T > 1): query t sees keys [0, pos + t]; decode sees the whole cache slice */
  tg_tensor *mask = NULL;
  if (T > 1 && !m->oss) {
    int64_t S = pos + T;
    float *mk = malloc((size_t)(T * S) * sizeof *mk);
    if (!mk) { tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_forward: mask"); return NULL; }
    for (int64_t t = 0; t < T; t++)
      for (int64_t j = 0; j < S; j++) mk[t * S + j] = j <= pos + t ? 0.0f : -INFINITY;
    mask = tg_from_floats(mk, TG_SHAPE(1, 1, T, S));
    free(mk);
  }
  tg_tensor *x = (tg_tensor *)x0;
  if (m->oss && !(x = nn_oss_blocks(m->oss, x, cs, sn, sp, pos))) return NULL;
  double scale = 1.0 / sqrt((double)hd);
  for (int l = 0; l < c->n_layer && !m->oss; l++) {
    LlmLayer *L = &m->layers[l];
    tg_tensor *h = rms_norm(x, L->attn_norm, c->norm_eps);
    tg_tensor *q = tg_reshape(linear(m, h, L->wq, L->bq), TG_SHAPE(T, nh, hd));
    tg_tensor *k = tg_reshape(linear(m, h, L->wk, L->bk), TG_SHAPE(T, nkv, hd));
    tg_tensor *v = tg_reshape(linear(m, h, L->wv, L->bv), TG_SHAPE(T, nkv, hd));
    if (c->qk_norm) q = rms_norm(q, L->q_norm, c->norm_eps), k = rms_norm(k, L->k_norm, c->norm_eps);
    /* q realized whole after RoPE: the scores' reduce over the head dim then reads it contiguously (one loop the
     * compiler vectorizes) instead of its rotated halves as two buffers with the cache's pairs at a stride of 2 (1B
     * llama Q4_0 decode, DEBUG=2: the scores kernel 30 -> 16.5 us, a layer one kernel fewer: 535 -> 519 a token) */
    q = tg_contiguous(rope(c, q, cs, sn)), k = rope(c, k, cs, sn);
    /* the cache takes positions [sp + pos, +T), attention reads [0, sp + pos + T) */
    if (tg_assign(slice_axis(L->kc, 1, sp, pos, T), tg_permute(k, TG_AXES(1, 0, 2))) != TG_OK ||
        tg_assign(slice_axis(L->vc, 1, sp, pos, T), tg_permute(v, TG_AXES(1, 0, 2))) != TG_OK)
      return NULL;
    tg_sint kb[6] = {TG_SI(0), TG_SI(nkv), TG_SI(0), TG_SV(sp, pos + T), TG_SI(0), TG_SI(hd)};
    tg_tensor *ka = tg_shrink_sym(L->kc, kb, 3), *va = tg_shrink_sym(L->vc, kb, 3);
    /* GQA: query head g*rep + r reads KV head g; (nkv, rep*T, hd) @ (nkv, hd, S) */
    tg_tensor *qg = tg_reshape(tg_permute(q, TG_AXES(1, 0, 2)), TG_SHAPE(nkv, rep * T, hd));
    tg_tensor *sc = tg_mul(tg_matmul(qg, tg_transpose(ka, 1, 2)), tg_const_float(scale));
    if (mask) /* prefill: concrete sizes */
      sc = tg_reshape(tg_add(tg_reshape(sc, TG_SHAPE(nkv, rep, T, pos + T)), mask), TG_SHAPE(nkv, rep * T, pos + T));
    tg_tensor *att = tg_matmul(tg_softmax(sc, -1), va); /* (nkv, rep*T, hd) */
    /* stored token-major: the output projection's reduce over (head, dim) is then one contiguous axis of its input
     * (the CPU's dot tiles take it; over two axes the prefill's 32 x 2048 x 2048 F16 projection ran at 5 GFLOPS) */
    att = tg_reshape(tg_contiguous(tg_permute(tg_reshape(att, TG_SHAPE(nh, T, hd)), TG_AXES(1, 0, 2))), TG_SHAPE(T, nh * hd));
    x = tg_add(x, linear(m, att, L->wo, NULL));
    h = rms_norm(x, L->ffn_norm, c->norm_eps);
    /* silu(gate) realized on its own, as tinygrad's model does: fused, gate and up become one kernel with two
     * reductions (measured 3x slower per byte than two GEMVs at decode) */
    tg_tensor *f = tg_mul(tg_contiguous(tg_silu(linear(m, h, L->wg, NULL))), linear(m, h, L->wu, NULL));
    x = tg_add(x, linear(m, f, L->wd, NULL));
  }
  if (!all && T > 1) x = slice_axis(x, 0, NULL, T - 1, 1);
  return linear(m, rms_norm(x, m->out_norm, c->norm_eps), m->out, NULL);
}

/* the embedding row of one token: tok a bound Variable (sp-style offset) or NULL with id concrete */
static tg_tensor *embed_row(tg_llm *m, const tg_tensor *tok, int64_t id) {
  tg_tensor *raw = slice_axis(m->embd_rows, 0, tok, id, 1);
  return tg_cast(tg_ggml_dequantize(raw, m->embd_type, TG_SHAPE(1, m->cfg.dim)), TG_FLOAT32);
}

/* the JIT'd decode step: vars = (start_pos, token) */
static tg_status decode_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                             tg_tensor **out, size_t nout) {
  TG_UNUSED(in), TG_UNUSED(nin), TG_UNUSED(nvars), TG_UNUSED(nout);
  tg_llm *m = user;
  out[0] = transformer(m, embed_row(m, vars[1], 0), vars[0], 0, false);
  return out[0] ? TG_OK : tg_last_status();
}

tg_status tg_llm_forward(tg_llm *m, const int32_t *ids, size_t n, int64_t pos, bool all_logits, float *logits) {
  if (!m || !ids || !logits) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_forward: NULL argument");
  if (n == 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_forward: no tokens");
  if (pos < 0 || pos > m->n_past)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_forward: pos %lld outside [0, %lld] (positions filled)",
                        (long long)pos, (long long)m->n_past);
  if ((int64_t)n > m->n_ctx - pos)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_forward: %zu tokens at pos %lld exceed the context of %lld",
                        n, (long long)pos, (long long)m->n_ctx);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= m->cfg.vocab)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_forward: token id %d (index %zu) outside [0, %d)",
                          (int)ids[i], i, m->cfg.vocab);
  size_t rows = all_logits ? n : 1;
  tg_scope s = tg_scope_begin();
  tg_status st;
  tg_tensor *lg = NULL;
  if (n == 1) {
    if (!m->jit && !(m->jit = tg_jit_new(decode_step, m, 1, NULL))) {
      tg_scope_end(s);
      return tg_last_status();
    }
    tg_tensor *vars[2] = {tg_bind(m->v_pos, pos), tg_bind(m->v_tok, ids[0])};
    st = vars[0] && vars[1] ? tg_jit_call(m->jit, NULL, 0, vars, 2, &lg) : tg_last_status();
  } else {
    /* the rows of the prompt's tokens: an indexed load of the raw rows (the gather's one-hot sum collapses) */
    tg_tensor *idt = tg_from_data(ids, TG_INT32, (int64_t[]){(int64_t)n}, 1);
    tg_tensor *raw = tg_getitem(m->embd_rows, (tg_index[]){TG_IT(idt)}, 1);
    tg_tensor *x = tg_cast(tg_ggml_dequantize(raw, m->embd_type, (int64_t[]){(int64_t)n, m->cfg.dim}, 2), TG_FLOAT32);
    lg = transformer(m, x, NULL, pos, all_logits);
    st = lg ? tg_realize(lg) : tg_last_status();
  }
  if (st == TG_OK) st = tg_to_host(lg, logits, rows * (size_t)m->cfg.vocab * sizeof(float));
  tg_scope_end(s);
  if (st == TG_OK) m->n_past = pos + (int64_t)n;
  return st;
}
