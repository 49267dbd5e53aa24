/* llm_mkmodel.c — random-weight GGUF models of the real llama-family architectures (tinygrad.h "LLM"): the tensors
 * and keys llama.cpp's converter writes for llama / qwen2 / qwen3 / gpt-oss, weights from a seeded generator quantized
 * with ggml's reference quantizers (quantize_row_q8_0_ref, _q4_0_ref, _q4_1_ref, _mxfp4_ref as ggml-quants.c
 * describes them), and a
 * byte-level BPE vocabulary with merges, so a GGUF tokenizer and llama.cpp can load the file. Rows are produced while
 * the file is written (tg_gguf_writer_add_tensor_fill): a 1B model never sits in memory. */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------- numbers */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* approximately N(0, 1): the sum of four uniforms (Irwin-Hall), centred and scaled */
static float gauss(uint64_t *s) {
  uint64_t a = mix64(*s += 0x9E3779B97F4A7C15ull), b = mix64(*s += 0x9E3779B97F4A7C15ull);
  double u = (double)(a >> 32) + (double)(a & 0xffffffffu) + (double)(b >> 32) + (double)(b & 0xffffffffu);
  return (float)((u / 4294967296.0 - 2.0) * 1.7320508075688772);
}

/* float -> IEEE half, round to nearest even (overflow to inf) */
static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, man = x & 0x7fffffu;
  if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  int32_t he = (int32_t)e - 127 + 15;
  if (he >= 31) return (uint16_t)(sign | 0x7c00u);
  if (he <= 0) {
    if (he < -10) return (uint16_t)sign;
    man |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - he), half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = sign | ((uint32_t)he << 10) | (man >> 13), rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* a carry into the exponent is still right */
  return (uint16_t)h;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

/* one block of 32 values in ggml's layouts */
static void q8_0_block(const float *x, uint8_t *o) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
  float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
  put16(o, f32_to_f16(d));
  for (int j = 0; j < 32; j++) o[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

static void q4_0_block(const float *x, uint8_t *o) {
  float amax = 0, mx = 0;
  for (int j = 0; j < 32; j++)
    if (fabsf(x[j]) > amax) amax = fabsf(x[j]), mx = x[j];
  float d = mx / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
  put16(o, f32_to_f16(d));
  for (int j = 0; j < 16; j++) {
    int a = (int)(int8_t)(x[j] * id + 8.5f), b = (int)(int8_t)(x[j + 16] * id + 8.5f);
    a = a > 15 ? 15 : a, b = b > 15 ? 15 : b;
    o[2 + j] = (uint8_t)(a | (b << 4));
  }
}

static void q4_1_block(const float *x, uint8_t *o) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; j++) mn = fminf(mn, x[j]), mx = fmaxf(mx, x[j]);
  float d = (mx - mn) / 15.0f, id = d != 0 ? 1.0f / d : 0.0f;
  put16(o, f32_to_f16(d)), put16(o + 2, f32_to_f16(mn));
  for (int j = 0; j < 16; j++) {
    int a = (int)(int8_t)((x[j] - mn) * id + 0.5f), b = (int)(int8_t)((x[j + 16] - mn) * id + 0.5f);
    a = a > 15 ? 15 : a, b = b > 15 ? 15 : b;
    o[4 + j] = (uint8_t)(a | (b << 4));
  }
}

/* MXFP4 (quantize_row_mxfp4_ref): the shared exponent e = floor(log2(amax)) - 2 + 127 (E8M0; 0 for a zero block), the
 * scale d = 2^(e - 128) (the half of 2^(e - 127) that ggml keeps with its doubled value table), each value the nearest
 * of kvalues * d, the first on ties */
static void mxfp4_block(const float *x, uint8_t *o) {
  static const float kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
  int e = amax > 0 ? (int)floorf(log2f(amax)) - 2 + 127 : 0;
  e = e < 0 ? 0 : e > 255 ? 255 : e;
  float d = ldexpf(1.0f, e - 128);
  o[0] = (uint8_t)e;
  uint8_t q[32];
  for (int j = 0; j < 32; j++) {
    int best = 0;
    float err = fabsf(kv[0] * d - x[j]);
    for (int i = 1; i < 16; i++)
      if (fabsf(kv[i] * d - x[j]) < err) best = i, err = fabsf(kv[i] * d - x[j]);
    q[j] = (uint8_t)best;
  }
  for (int j = 0; j < 16; j++) o[1 + j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}

static uint64_t str_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

/* ------------------------------------------------------------------------------------------------- tensors */

typedef struct Fill {
  int type;
  int64_t ne0;
  float scale, base;   /* value = base + scale * N(0, 1) */
  uint64_t seed;
  float *row;          /* ne0 floats of scratch */
} Fill;

static tg_status fill_row(void *user, uint64_t r, void *dst, size_t rb) {
  Fill *f = user;
  uint64_t s = mix64(f->seed ^ mix64(r + 1));
  for (int64_t i = 0; i < f->ne0; i++) f->row[i] = f->base + f->scale * gauss(&s);
  uint8_t *o = dst;
  switch (f->type) {
    case TG_GGML_F32: memcpy(o, f->row, rb); break;
    case TG_GGML_F16:
      for (int64_t i = 0; i < f->ne0; i++) put16(o + 2 * i, f32_to_f16(f->row[i]));
      break;
    case TG_GGML_Q8_0: for (int64_t b = 0; b < f->ne0 / 32; b++) q8_0_block(f->row + 32 * b, o + 34 * b); break;
    case TG_GGML_Q4_0: for (int64_t b = 0; b < f->ne0 / 32; b++) q4_0_block(f->row + 32 * b, o + 18 * b); break;
    case TG_GGML_Q4_1: for (int64_t b = 0; b < f->ne0 / 32; b++) q4_1_block(f->row + 32 * b, o + 20 * b); break;
    case TG_GGML_MXFP4: for (int64_t b = 0; b < f->ne0 / 32; b++) mxfp4_block(f->row + 32 * b, o + 17 * b); break;
    default: return tg_set_error(TG_ERR_UNSUPPORTED, "tg_llm_write_random_model: no quantizer for %s", tg_ggml_type_name(f->type));
  }
  return TG_OK;
}

typedef struct Maker {
  tg_gguf_writer *w;
  TG_VEC(Fill *) fills;
  uint64_t seed;
} Maker;

/* a tensor of ggml shape (ne0, ne1, ne2) (ne1 0: 1-d; ne2 0: 2-d) */
static tg_status add_weight3(Maker *mk, const char *name, int type, int64_t ne0, int64_t ne1, int64_t ne2, float scale,
                             float base) {
  Fill *f = tg_calloc(1, sizeof *f);
  /* seeded by the name: the same tensor gets the same values whatever else the architecture has */
  f->type = type, f->ne0 = ne0, f->scale = scale, f->base = base, f->seed = mix64(mk->seed ^ str_hash(name, strlen(name)));
  f->row = tg_malloc((size_t)ne0 * sizeof(float));
  tg_vec_push(&mk->fills, f);
  int64_t ne[3] = {ne0, ne1, ne2};
  return tg_gguf_writer_add_tensor_fill(mk->w, name, type, ne, ne2 ? 3 : ne1 ? 2 : 1, fill_row, f);
}

static tg_status add_weight(Maker *mk, const char *name, int type, int64_t ne0, int64_t ne1, float scale, float base) {
  return add_weight3(mk, name, type, ne0, ne1, 0, scale, base);
}

/* ------------------------------------------------------------------------------------------------- vocabulary */

/* the GPT-2 byte-level alphabet: byte b as a code point (printable bytes themselves, the others 256 + n) */
static int byte_cp(int b) {
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return b;
  int n = 0;
  for (int c = 0; c < b; c++)
    if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) n++;
  return 256 + n;
}

static size_t utf8(int cp, char *o) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  o[0] = (char)(0xc0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 63));
  return 2;
}

/* tokens[0..vocab): 256 byte tokens, merges of earlier pairs (unique, at most 16 bytes), the control tokens last (the
 * first is bos, the last eos) */
static tg_status add_vocab(Maker *mk, int vocab, const char *pre, const char *const *specials, int nspecial) {
  int nmerge = vocab - 256 - nspecial;
  char **tok = tg_calloc((size_t)vocab, sizeof *tok), **merges = tg_calloc((size_t)(nmerge > 0 ? nmerge : 1), sizeof *merges);
  size_t *len = tg_calloc((size_t)vocab, sizeof *len), cap = 1;
  while (cap < (size_t)vocab * 2) cap *= 2;
  int32_t *set = tg_malloc(cap * sizeof *set);
  for (size_t i = 0; i < cap; i++) set[i] = -1;
  for (int b = 0; b < 256; b++) {
    char buf[4];
    len[b] = utf8(byte_cp(b), buf);
    tok[b] = tg_malloc(len[b] + 1);
    memcpy(tok[b], buf, len[b]), tok[b][len[b]] = 0;
    uint64_t h = str_hash(tok[b], len[b]) & (cap - 1);
    while (set[h] >= 0) h = (h + 1) & (cap - 1);
    set[h] = b;
  }
  uint64_t s = mix64(mk->seed ^ 0x746f6b656e73ull);
  for (int i = 256; i < 256 + nmerge; i++) {
    for (;;) {
      int a = (int)(mix64(s += 0x9E3779B97F4A7C15ull) % (uint64_t)i), b = (int)(mix64(s += 0x9E3779B97F4A7C15ull) % (uint64_t)(i < 2048 ? i : 2048));
      if (len[a] + len[b] > 16) continue;
      char buf[40];
      memcpy(buf, tok[a], len[a]), memcpy(buf + len[a], tok[b], len[b]);
      size_t n = len[a] + len[b];
      uint64_t h = str_hash(buf, n) & (cap - 1);
      bool dup = false;
      for (; set[h] >= 0; h = (h + 1) & (cap - 1))
        if (len[set[h]] == n && !memcmp(tok[set[h]], buf, n)) { dup = true; break; }
      if (dup) continue;
      set[h] = i, len[i] = n;
      tok[i] = tg_malloc(n + 1);
      memcpy(tok[i], buf, n), tok[i][n] = 0;
      merges[i - 256] = tg_malloc(len[a] + len[b] + 2);
      memcpy(merges[i - 256], tok[a], len[a]), merges[i - 256][len[a]] = ' ';
      memcpy(merges[i - 256] + len[a] + 1, tok[b], len[b] + 1);
      break;
    }
  }
  for (int i = 0; i < nspecial; i++) tok[vocab - nspecial + i] = tg_strdup(specials[i]);
  tg_gguf_value *tv = tg_calloc((size_t)vocab, sizeof *tv), *mv = tg_calloc((size_t)(nmerge > 0 ? nmerge : 1), sizeof *mv);
  int32_t *types = tg_malloc((size_t)vocab * sizeof *types);
  for (int i = 0; i < vocab; i++) {
    tv[i] = (tg_gguf_value){TG_GGUF_STRING, {.str = {tok[i], strlen(tok[i])}}};
    types[i] = i >= vocab - nspecial ? 3 : 1;
  }
  for (int i = 0; i < nmerge; i++) mv[i] = (tg_gguf_value){TG_GGUF_STRING, {.str = {merges[i], strlen(merges[i])}}};
  tg_gguf_value arr_t = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_STRING, (uint64_t)vocab, NULL, tv}}};
  tg_gguf_value arr_m = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_STRING, (uint64_t)nmerge, NULL, mv}}};
  tg_gguf_value arr_y = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_INT32, (uint64_t)vocab, types, NULL}}};
  tg_status st = tg_gguf_writer_add_string(mk->w, "tokenizer.ggml.model", "gpt2");
  if (st == TG_OK) st = tg_gguf_writer_add_string(mk->w, "tokenizer.ggml.pre", pre);
  if (st == TG_OK) st = tg_gguf_writer_add(mk->w, "tokenizer.ggml.tokens", &arr_t);
  if (st == TG_OK) st = tg_gguf_writer_add(mk->w, "tokenizer.ggml.token_type", &arr_y);
  if (st == TG_OK) st = tg_gguf_writer_add(mk->w, "tokenizer.ggml.merges", &arr_m);
  if (st == TG_OK) st = tg_gguf_writer_add_uint32(mk->w, "tokenizer.ggml.bos_token_id", (uint32_t)(vocab - nspecial));
  if (st == TG_OK) st = tg_gguf_writer_add_uint32(mk->w, "tokenizer.ggml.eos_token_id", (uint32_t)(vocab - 1));
  for (int i = 0; i < vocab; i++) tg_free(tok[i]);
  for (int i = 0; i < nmerge; i++) tg_free(merges[i]);
  tg_free(tok), tg_free(merges), tg_free(len), tg_free(set), tg_free(tv), tg_free(mv), tg_free(types);
  return st;
}

/* ------------------------------------------------------------------------------------------------- the model */

bool tg_llm_model_preset(const char *name, tg_llm_model_spec *out) {
  if (!name || !out) return false;
  tg_llm_model_spec s = {"llama", 2, 64, 4, 2, 0, 128, 512, 256, TG_GGML_F32, false, false, 0, 0, 0, 0, 0, 0};
  if (!strcmp(name, "tiny")) {
  } else if (!strcmp(name, "small")) {
    s.n_layer = 4, s.dim = 256, s.n_head = 8, s.n_kv_head = 4, s.ffn_dim = 768, s.vocab = 4096, s.ctx = 2048;
  } else if (!strcmp(name, "gpt-oss-tiny")) {
    s.arch = "gpt-oss", s.n_layer = 4, s.head_dim = 16, s.ffn_dim = 64, s.n_expert = 8, s.n_expert_used = 2;
    s.sliding_window = 8, s.expert_type = TG_GGML_MXFP4;
  } else if (!strcmp(name, "1b")) {
    s.n_layer = 16, s.dim = 2048, s.n_head = 32, s.n_kv_head = 8, s.ffn_dim = 8192, s.vocab = 128256;
    s.ctx = 131072, s.tied = true, s.llama3_rope = true, s.rope_base = 500000.0;
  } else {
    return false;
  }
  *out = s;
  return true;
}

static tg_status spec_err(const char *what) {
  return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_write_random_model: %s", what);
}

tg_status tg_llm_write_random_model(const tg_llm_model_spec *p, const char *path) {
  if (!p || !path || !p->arch) return spec_err("NULL argument");
  bool llama = !strcmp(p->arch, "llama"), qwen2 = !strcmp(p->arch, "qwen2"), qwen3 = !strcmp(p->arch, "qwen3");
  bool oss = !strcmp(p->arch, "gpt-oss");
  if (!llama && !qwen2 && !qwen3 && !oss)
    return tg_set_error(TG_ERR_UNSUPPORTED, "tg_llm_write_random_model: architecture \"%s\" (llama, qwen2, qwen3, gpt-oss)",
                        p->arch);
  int hd = p->head_dim ? p->head_dim : p->n_head > 0 ? p->dim / p->n_head : 0;
  if (p->n_layer < 1 || p->dim < 32 || p->n_head < 1 || p->n_kv_head < 1 || p->n_head % p->n_kv_head || hd < 2 || hd % 2 ||
      p->ffn_dim < 32 || p->vocab < 258 || p->ctx < 1 || (!p->head_dim && p->dim % p->n_head))
    return spec_err("bad sizes (n_layer >= 1, dim >= 32, n_head a multiple of n_kv_head, an even head_dim, "
                    "ffn_dim >= 32, vocab >= 258)");
  int t = p->type;
  if (t != TG_GGML_F32 && t != TG_GGML_F16 && t != TG_GGML_Q8_0 && t != TG_GGML_Q4_0 && t != TG_GGML_Q4_1)
    return tg_set_error(TG_ERR_UNSUPPORTED, "tg_llm_write_random_model: type %s (f32, f16, q8_0, q4_0, q4_1)",
                        tg_ggml_type_name(t) ? tg_ggml_type_name(t) : "?");
  int64_t qd = (int64_t)p->n_head * hd, kvd = (int64_t)p->n_kv_head * hd;
  if (t >= TG_GGML_Q4_0 && (p->dim % 32 || p->ffn_dim % 32 || qd % 32))
    return spec_err("quantized types need dim, ffn_dim and n_head * head_dim to be multiples of 32");
  int ne = p->n_expert ? p->n_expert : 8, nu = p->n_expert_used ? p->n_expert_used : 2;
  int et_x = p->expert_type ? p->expert_type : TG_GGML_MXFP4;
  if (oss) {
    if (et_x != TG_GGML_MXFP4 && et_x != TG_GGML_F16 && et_x != TG_GGML_Q8_0 && et_x != TG_GGML_Q4_0 && et_x != TG_GGML_Q4_1)
      return tg_set_error(TG_ERR_UNSUPPORTED, "tg_llm_write_random_model: expert type %s (mxfp4, f16, q8_0, q4_0, q4_1)",
                          tg_ggml_type_name(et_x) ? tg_ggml_type_name(et_x) : "?");
    if (ne < 1 || nu < 1 || nu > ne || p->sliding_window < 0 || (et_x != TG_GGML_F16 && (p->dim % 32 || p->ffn_dim % 32)))
      return spec_err("gpt-oss needs 1 <= n_expert_used <= n_expert, sliding_window >= 0, and dim and ffn_dim multiples "
                      "of 32 for quantized experts");
  }
  Maker mk = {tg_gguf_writer_new(32), {0}, p->seed};
  tg_gguf_writer *w = mk.w;
  const char *a = p->arch;
  char k[96], nm[64];
  tg_status st = tg_gguf_writer_add_string(w, "general.architecture", a);
  snprintf(nm, sizeof nm, "random %s %dx%d %s", a, p->n_layer, p->dim, tg_ggml_type_name(t));
  if (st == TG_OK) st = tg_gguf_writer_add_string(w, "general.name", nm);
#define KU(key, v) if (st == TG_OK) snprintf(k, sizeof k, "%s." key, a), st = tg_gguf_writer_add_uint32(w, k, (uint32_t)(v))
#define KF(key, v) if (st == TG_OK) snprintf(k, sizeof k, "%s." key, a), st = tg_gguf_writer_add_float32(w, k, (float)(v))
  KU("block_count", p->n_layer);
  KU("context_length", p->ctx);
  KU("embedding_length", p->dim);
  KU("feed_forward_length", p->ffn_dim);
  KU("attention.head_count", p->n_head);
  KU("attention.head_count_kv", p->n_kv_head);
  KF("attention.layer_norm_rms_epsilon", qwen2 || qwen3 ? 1e-6 : 1e-5);
  KF("rope.freq_base", p->rope_base > 0 ? p->rope_base : llama ? 10000.0 : oss ? 150000.0 : 1000000.0);
  KU("rope.dimension_count", hd);
  if (hd != p->dim / p->n_head) {
    KU("attention.key_length", hd);
    KU("attention.value_length", hd);
  }
  if (oss) { /* gpt-oss-20b's rope scaling; the rest of its keys */
    KU("expert_feed_forward_length", p->ffn_dim);
    KU("expert_count", ne);
    KU("expert_used_count", nu);
    KU("attention.sliding_window", p->sliding_window ? p->sliding_window : 128);
    KF("rope.scaling.factor", 32.0);
    KU("rope.scaling.original_context_length", 4096);
    if (st == TG_OK) st = tg_gguf_writer_add_string(w, "gpt-oss.rope.scaling.type", "yarn");
  }
#undef KU
#undef KF
  static const char *const llama_sp[] = {"<|begin_of_text|>", "<|end_of_text|>"};
  static const char *const harmony_sp[] = {"<|startoftext|>", "<|start|>", "<|message|>", "<|channel|>", "<|end|>",
                                           "<|return|>"};
  if (st == TG_OK)
    st = oss ? add_vocab(&mk, p->vocab, "gpt-4o", harmony_sp, 6) : add_vocab(&mk, p->vocab, llama ? "llama-bpe" : "qwen2", llama_sp, 2);
  int et = t == TG_GGML_F32 ? TG_GGML_F32 : t; /* the embedding in the matrices' type */
  if (st == TG_OK) st = add_weight(&mk, "token_embd.weight", et, p->dim, p->vocab, 1.0f, 0.0f);
  if (st == TG_OK && llama && p->llama3_rope) {
    /* Llama 3.2's rope scaling (factor 32, low 1, high 4, original context 8192) as llama.cpp stores it */
    int half = hd / 2;
    float *ff = tg_malloc((size_t)half * sizeof *ff);
    double base = p->rope_base > 0 ? p->rope_base : 10000.0, lo = 8192.0 / 1.0, hi = 8192.0 / 4.0;
    for (int i = 0; i < half; i++) {
      double f = pow(base, -2.0 * i / hd), wl = 2 * M_PI / f, sm = (8192.0 / wl - 1.0) / (4.0 - 1.0);
      ff[i] = wl < hi ? 1.0f : wl > lo ? 32.0f : (float)(1.0 / ((1 - sm) / 32.0 + sm));
    }
    st = tg_gguf_writer_add_tensor(w, "rope_freqs.weight", TG_GGML_F32, (int64_t[]){half}, 1, ff, (size_t)half * 4);
    tg_free(ff);
  }
  for (int l = 0; l < p->n_layer && st == TG_OK; l++) {
    char n[64];
#define WT(suffix, type, ne0, ne1, scale, base) \
    if (st == TG_OK) snprintf(n, sizeof n, "blk.%d." suffix, l), st = add_weight(&mk, n, type, ne0, ne1, scale, base)
    float sd = 1.0f / sqrtf((float)p->dim), sf = 1.0f / sqrtf((float)p->ffn_dim), so = 1.0f / sqrtf((float)qd);
    if (oss) { /* llama.cpp's gpt-oss tensors: biases on q/k/v/output, sinks, the router and the experts */
#define WE(suffix, type, ne0, ne1, ne2, scale, base) \
      if (st == TG_OK) snprintf(n, sizeof n, "blk.%d." suffix, l), st = add_weight3(&mk, n, type, ne0, ne1, ne2, scale, base)
      WE("attn_norm.weight", TG_GGML_F32, p->dim, 0, 0, 0.1f, 1.0f);
      WE("attn_q.weight", t, p->dim, qd, 0, sd, 0.0f);
      WE("attn_q.bias", TG_GGML_F32, qd, 0, 0, 0.1f, 0.0f);
      WE("attn_k.weight", t, p->dim, kvd, 0, sd, 0.0f);
      WE("attn_k.bias", TG_GGML_F32, kvd, 0, 0, 0.1f, 0.0f);
      WE("attn_v.weight", t, p->dim, kvd, 0, sd, 0.0f);
      WE("attn_v.bias", TG_GGML_F32, kvd, 0, 0, 0.1f, 0.0f);
      WE("attn_output.weight", t, qd, p->dim, 0, so, 0.0f);
      WE("attn_output.bias", TG_GGML_F32, p->dim, 0, 0, 0.1f, 0.0f);
      WE("attn_sinks.weight", TG_GGML_F32, p->n_head, 0, 0, 1.0f, 0.0f);
      WE("post_attention_norm.weight", TG_GGML_F32, p->dim, 0, 0, 0.1f, 1.0f);
      WE("ffn_gate_inp.weight", t, p->dim, ne, 0, sd, 0.0f);
      WE("ffn_gate_inp.bias", TG_GGML_F32, ne, 0, 0, 0.1f, 0.0f);
      WE("ffn_gate_exps.weight", et_x, p->dim, p->ffn_dim, ne, sd, 0.0f);
      WE("ffn_gate_exps.bias", TG_GGML_F32, p->ffn_dim, ne, 0, 0.1f, 0.0f);
      WE("ffn_up_exps.weight", et_x, p->dim, p->ffn_dim, ne, sd, 0.0f);
      WE("ffn_up_exps.bias", TG_GGML_F32, p->ffn_dim, ne, 0, 0.1f, 0.0f);
      WE("ffn_down_exps.weight", et_x, p->ffn_dim, p->dim, ne, sf, 0.0f);
      WE("ffn_down_exps.bias", TG_GGML_F32, p->dim, ne, 0, 0.1f, 0.0f);
#undef WE
      continue;
    }
    WT("attn_norm.weight", TG_GGML_F32, p->dim, 0, 0.1f, 1.0f);
    WT("attn_q.weight", t, p->dim, qd, sd, 0.0f);
    WT("attn_k.weight", t, p->dim, kvd, sd, 0.0f);
    WT("attn_v.weight", t, p->dim, kvd, sd, 0.0f);
    if (qwen2) {
      WT("attn_q.bias", TG_GGML_F32, qd, 0, 0.1f, 0.0f);
      WT("attn_k.bias", TG_GGML_F32, kvd, 0, 0.1f, 0.0f);
      WT("attn_v.bias", TG_GGML_F32, kvd, 0, 0.1f, 0.0f);
    }
    if (qwen3) {
      WT("attn_q_norm.weight", TG_GGML_F32, hd, 0, 0.1f, 1.0f);
      WT("attn_k_norm.weight", TG_GGML_F32, hd, 0, 0.1f, 1.0f);
    }
    WT("attn_output.weight", t, qd, p->dim, so, 0.0f);
    WT("ffn_norm.weight", TG_GGML_F32, p->dim, 0, 0.1f, 1.0f);
    WT("ffn_gate.weight", t, p->dim, p->ffn_dim, sd, 0.0f);
    WT("ffn_up.weight", t, p->dim, p->ffn_dim, sd, 0.0f);
    WT("ffn_down.weight", t, p->ffn_dim, p->dim, sf, 0.0f);
#undef WT
  }
  if (st == TG_OK) st = add_weight(&mk, "output_norm.weight", TG_GGML_F32, p->dim, 0, 0.1f, 1.0f);
  if (st == TG_OK && !p->tied) st = add_weight(&mk, "output.weight", t, p->dim, p->vocab, 1.0f / sqrtf((float)p->dim), 0.0f);
  if (st == TG_OK) st = tg_gguf_writer_write(w, path);
  for (size_t i = 0; i < mk.fills.len; i++) tg_free(mk.fills.data[i]->row), tg_free(mk.fills.data[i]);
  tg_vec_free(&mk.fills);
  tg_gguf_writer_free(w);
  return st;
}
