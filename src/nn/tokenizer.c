/* tokenizer.c — tokenizers built from GGUF metadata: byte-level BPE (tokenizer.ggml.model "gpt2") and
 * SentencePiece-style (model "llama"), with special tokens, encode and decode (include/tinygrad.h, "tokenizer").
 *
 * The vocabulary is copied out of the GGUF handle: every token's text, type, score, and the bytes it decodes to (its
 * "piece"). A string -> id hash finds tokens; a (left id, right id) -> (rank, merged id) hash holds the merges (BPE:
 * tokenizer.ggml.merges; SentencePiece: every piece that is two pieces side by side), so merging happens in id space.
 * BPE merges the lowest rank first (leftmost on ties): words up to 64 bytes by scanning an array of pair ranks,
 * longer ones through a binary heap (O(n log n)); SentencePiece pops the highest score (leftmost on ties) from a heap
 * — llama.cpp's llm_tokenizer_bpe_session and llm_tokenizer_spm_session, whose outputs tests/test_tokenizer.c checks. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/tokenizer.h"

#define TOK_MAX_TEXT ((size_t)1 << 28)
typedef enum TokKind { TOK_BPE, TOK_SPM } TokKind;

struct tg_tokenizer {
  TokKind kind;
  tok_pre pre;
  bool ignore_merges, add_bos, add_eos, add_space_prefix, harmony;
  bool bytes_missing;          /* BPE: some byte has no token: it becomes the unknown token, or encoding fails */
  size_t n;
  char **text, **piece;        /* NUL-terminated copies (they may hold NULs: lengths below), in two blobs: a piece
                                  is never longer than its text, so piece i sits at text i's offset */
  char *text_blob, *piece_blob;
  uint32_t *text_len, *piece_len;
  uint8_t *type;
  float *score;
  struct MapSlot { uint32_t hash; int32_t id1; } *map; size_t map_cap;  /* text -> id: open addressing; id1 is
                                                                        id + 1 (0 empty), hash the text's top bits */
  struct MergeSlot { uint64_t key; uint32_t rank; int32_t out; } *merge; size_t mcap;  /* (left, right) -> rank,
                                                                                          merged; key 0 empty */
  bool spm_split;  /* no token holds U+2581 after another character: text splits before such a U+2581 */
  int32_t spm_char[128], spm_mark;  /* SentencePiece: the token of each ASCII character and of U+2581, or -1 */
  int32_t byte_tok[256];                   /* the token of each byte (BPE: its GPT-2 character; SPM: <0xXX>) */
  char byte_ch[256][2]; uint8_t byte_chlen[256];  /* BPE: each byte's GPT-2 character in UTF-8 */
  int32_t bos, eos, eot, eom, unk;
  int32_t *special; size_t nspecial;        /* control/user-defined/unknown tokens, longest text first */
  size_t special_first[257];                /* special[special_first[b]..special_first[b+1]) start with byte b */
  char model[8], pre_name[64];
  char *chat_template;
};

/* ---- hashing ---- */
static uint64_t hash_text(const char *s, size_t n) { return tg_hash_bytes(s, n, 0x7f4a7c15u); }

static int32_t map_find(const tg_tokenizer *t, const char *s, size_t n) {
  if (!t->map_cap) return -1;
  size_t mask = t->map_cap - 1;
  uint64_t hv = hash_text(s, n);
  uint32_t top = (uint32_t)(hv >> 32);
  for (size_t h = (size_t)hv & mask;; h = (h + 1) & mask) {
    const struct MapSlot *m = &t->map[h];
    if (!m->id1) return -1;
    int32_t id = m->id1 - 1;
    if (m->hash == top && t->text_len[id] == n && memcmp(t->text[id], s, n) == 0) return id;
  }
}

/* Inserts id; a text already there is given to the later id (llama.cpp's token_to_id keeps the last). */
static void map_insert(tg_tokenizer *t, int32_t id) {
  size_t mask = t->map_cap - 1;
  const char *s = t->text[id];
  size_t n = t->text_len[id];
  uint64_t hv = hash_text(s, n);
  for (size_t h = (size_t)hv & mask;; h = (h + 1) & mask) {
    struct MapSlot *m = &t->map[h];
    if (!m->id1) { *m = (struct MapSlot){(uint32_t)(hv >> 32), id + 1}; return; }
    int32_t v = m->id1;
    if (t->text_len[v - 1] == n && memcmp(t->text[v - 1], s, n) == 0) { m->id1 = id + 1; return; }
  }
}

static inline uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }
static inline size_t pair_slot(uint64_t k, size_t mask) { return (size_t)tg_hash_mix(0, k) & mask; }

static bool merge_find(const tg_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *out) {
  if (!t->mcap) return false;
  uint64_t k = pair_key(a, b);
  size_t mask = t->mcap - 1;
  for (size_t h = pair_slot(k, mask);; h = (h + 1) & mask) {
    const struct MergeSlot *m = &t->merge[h];
    if (m->key == k) { *rank = m->rank; *out = m->out; return true; }
    if (!m->key) return false;
  }
}

static void merge_insert(tg_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t out) {
  uint64_t k = pair_key(a, b);
  size_t mask = t->mcap - 1;
  for (size_t h = pair_slot(k, mask);; h = (h + 1) & mask) {
    struct MergeSlot *m = &t->merge[h];
    if (m->key == k) return;  /* a repeated merge keeps its first rank */
    if (!m->key) { *m = (struct MergeSlot){k, rank, out}; return; }
  }
}

static size_t pow2_above(size_t n) {
  size_t c = 16;
  while (c < n * 2) c *= 2;
  return c;
}

/* ---- GPT-2's byte alphabet: bytes 33-126, 161-172, 174-255 are their own code point; the others, in order, are
 * U+0100 onwards. ---- */
static bool byte_printable(unsigned b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }
static uint32_t byte_to_cp(unsigned b) {
  if (byte_printable(b)) return b;
  uint32_t k = 0;
  for (unsigned x = 0; x < b; x++) k += !byte_printable(x);
  return 256 + k;
}
#define ALPHABET_END (256 + 68)  /* code points of the alphabet are below this */
/* rev[cp]: the byte of alphabet character cp, -1 for code points outside the alphabet */
static void alphabet_reverse(int16_t rev[ALPHABET_END]) {
  for (unsigned c = 0; c < ALPHABET_END; c++) rev[c] = -1;
  for (unsigned b = 0; b < 256; b++) rev[byte_to_cp(b)] = (int16_t)b;
}

/* ---- loading ---- */
static tg_status fail(tg_tokenizer *t, tg_status st, const char *fmt, const char *a, long long b) {
  tg_tokenizer_free(t);
  char msg[256];
  snprintf(msg, sizeof msg, fmt, a, b);
  return tg_set_error(st, "tg_tokenizer_from_gguf: %s", msg);
}

static const tg_gguf_value *get_array(const tg_gguf *g, const char *key, tg_gguf_type elem, size_t n, bool *bad) {
  const tg_gguf_value *v = tg_gguf_get(g, key);
  *bad = false;
  if (!v) return NULL;
  if (v->type != TG_GGUF_ARRAY || v->v.arr.type != elem || (n && v->v.arr.len != n)) *bad = true;
  return v;
}

/* An optional token id key: -1 when absent; *bad when present but not an integer id in range. */
static int32_t get_id(const tg_gguf *g, const char *key, size_t n, bool *bad) {
  *bad = false;
  if (!tg_gguf_get(g, key)) return -1;
  int64_t v;
  if (tg_gguf_get_int(g, key, &v) != TG_OK || v < 0 || (uint64_t)v >= n) { *bad = true; return -1; }
  return (int32_t)v;
}

static bool get_flag(const tg_gguf *g, const char *key, bool dflt) {
  bool b;
  return tg_gguf_get(g, key) && tg_gguf_get_bool(g, key, &b) == TG_OK ? b : dflt;
}

/* The bytes a token stands for. */
static void make_piece(tg_tokenizer *t, int32_t id, const int16_t rev[ALPHABET_END]) {
  const char *s = t->text[id];
  size_t n = t->text_len[id];
  char *out = t->piece_blob + (t->text[id] - t->text_blob);
  size_t o = 0;
  int ty = t->type[id];
  if (ty == TG_TOKEN_CONTROL || ty == TG_TOKEN_USER_DEFINED || ty == TG_TOKEN_UNKNOWN) {
    memcpy(out, s, n);
    o = n;
  } else if (t->kind == TOK_SPM && ty == TG_TOKEN_BYTE && n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' &&
             isxdigit((unsigned char)s[3]) && isxdigit((unsigned char)s[4])) {
    out[o++] = (char)strtol((char[3]){s[3], s[4], 0}, NULL, 16);
  } else if (t->kind == TOK_SPM) {
    for (size_t i = 0; i < n;) {
      if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) { out[o++] = ' '; i += 3; }
      else out[o++] = s[i++];
    }
  } else {  /* GPT-2 alphabet back to bytes; characters outside it stay as they are */
    for (size_t i = 0; i < n;) {
      size_t l;
      uint32_t cp = nn_toku_decode((const unsigned char *)s + i, n - i, &l);
      int b = cp < ALPHABET_END ? rev[cp] : -1;
      if (b >= 0) out[o++] = (char)b;
      else { memcpy(out + o, s + i, l); o += l; }
      i += l;
    }
  }
  out[o] = 0;
  t->piece[id] = out;
  t->piece_len[id] = (uint32_t)o;
}

/* special tokens sorted by (first byte, longer first, id) */
typedef struct SpecialKey { unsigned char first; uint32_t len; int32_t id; } SpecialKey;
static int special_order(const void *a, const void *b) {
  const SpecialKey *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static tg_status load_vocab(tg_tokenizer *t, const tg_gguf *g) {
  const char *model;
  size_t mlen;
  if (!tg_gguf_get(g, "tokenizer.ggml.model") || tg_gguf_get_string(g, "tokenizer.ggml.model", &model, &mlen) != TG_OK)
    return fail(t, TG_ERR_IO, "%s is missing or not a string%.0lld", "tokenizer.ggml.model", 0);
  if (strcmp(model, "gpt2") == 0) t->kind = TOK_BPE;
  else if (strcmp(model, "llama") == 0) t->kind = TOK_SPM;
  else return fail(t, TG_ERR_UNSUPPORTED, "tokenizer.ggml.model \"%.64s\" is not supported (gpt2 and llama are)%.0lld",
                   model, 0);
  snprintf(t->model, sizeof t->model, "%s", model);
  const char *pre = "default";
  if (tg_gguf_get(g, "tokenizer.ggml.pre") && tg_gguf_get_string(g, "tokenizer.ggml.pre", &pre, NULL) != TG_OK)
    return fail(t, TG_ERR_IO, "%s is not a string%.0lld", "tokenizer.ggml.pre", 0);
  snprintf(t->pre_name, sizeof t->pre_name, "%s", pre);
  if (t->kind == TOK_BPE) {
    /* llama.cpp's names for each split (llama_vocab::impl::load); llama-3's own names also take whole words */
    static const struct { const char *name; tok_pre pre; bool llama3; } pres[] = {
      {"gpt-2", TOK_PRE_GPT2, 0}, {"phi-2", TOK_PRE_GPT2, 0}, {"roberta-bpe", TOK_PRE_GPT2, 0},
      {"jina-es", TOK_PRE_GPT2, 0}, {"jina-de", TOK_PRE_GPT2, 0}, {"gigachat", TOK_PRE_GPT2, 0},
      {"jina-v1-en", TOK_PRE_GPT2, 0}, {"jina-v2-es", TOK_PRE_GPT2, 0}, {"jina-v2-de", TOK_PRE_GPT2, 0},
      {"jina-v2-code", TOK_PRE_GPT2, 0}, {"mpt", TOK_PRE_GPT2, 0}, {"olmo", TOK_PRE_GPT2, 0}, {"jais", TOK_PRE_GPT2, 0},
      {"llama3", TOK_PRE_LLAMA3, 1}, {"llama-v3", TOK_PRE_LLAMA3, 1}, {"llama-bpe", TOK_PRE_LLAMA3, 1},
      {"falcon3", TOK_PRE_LLAMA3, 1}, {"dbrx", TOK_PRE_LLAMA3, 0}, {"smaug-bpe", TOK_PRE_LLAMA3, 0},
      {"qwen2", TOK_PRE_QWEN2, 0}, {"deepseek-r1-qwen", TOK_PRE_QWEN2, 0}, {"stablelm2", TOK_PRE_QWEN2, 0},
      {"megrez", TOK_PRE_QWEN2, 0}, {"gpt-4o", TOK_PRE_O200K, 0}, {"o200k", TOK_PRE_O200K, 0},
      {"gpt-oss", TOK_PRE_O200K, 0}, {"starcoder", TOK_PRE_DIGITS_GPT2, 0}, {"refact", TOK_PRE_DIGITS_GPT2, 0},
      {"command-r", TOK_PRE_DIGITS_GPT2, 0}, {"smollm", TOK_PRE_DIGITS_GPT2, 0}, {"codeshell", TOK_PRE_DIGITS_GPT2, 0},
      {"exaone", TOK_PRE_DIGITS_GPT2, 0}, {"minerva-7b", TOK_PRE_DIGITS_GPT2, 0}};
    bool found = false;
    for (size_t i = 0; i < TG_ARRAY_LEN(pres) && !found; i++)
      if (strcmp(pre, pres[i].name) == 0) {
        t->pre = pres[i].pre;
        t->ignore_merges = t->add_bos = pres[i].llama3;
        found = true;
      }
    if (!found)
      return fail(t, TG_ERR_UNSUPPORTED, "pre-tokenizer \"%.64s\" (tokenizer.ggml.pre) is not supported: the gpt-2, "
                  "llama-3, qwen2, o200k and starcoder splits are (llama.cpp's names for them)%.0lld", pre, 0);
  } else {
    t->add_bos = t->add_space_prefix = true;
  }
  bool bad;
  const tg_gguf_value *tokens = get_array(g, "tokenizer.ggml.tokens", TG_GGUF_STRING, 0, &bad);
  if (!tokens || bad || tokens->v.arr.len == 0 || tokens->v.arr.len > INT32_MAX / 2)
    return fail(t, TG_ERR_IO, "%s must be a non-empty array of strings (%lld tokens)", "tokenizer.ggml.tokens",
                tokens && !bad ? (long long)tokens->v.arr.len : -1LL);
  size_t n = t->n = (size_t)tokens->v.arr.len;
  const tg_gguf_value *types = get_array(g, "tokenizer.ggml.token_type", TG_GGUF_INT32, n, &bad);
  if (bad) return fail(t, TG_ERR_IO, "%s must be an int32 array of one entry per token (%lld tokens)",
                       "tokenizer.ggml.token_type", (long long)n);
  const tg_gguf_value *scores = get_array(g, "tokenizer.ggml.scores", TG_GGUF_FLOAT32, n, &bad);
  if (bad) return fail(t, TG_ERR_IO, "%s must be a float32 array of one entry per token (%lld tokens)",
                       "tokenizer.ggml.scores", (long long)n);
  t->text = tg_calloc(n, sizeof *t->text);
  t->piece = tg_calloc(n, sizeof *t->piece);
  t->text_len = tg_calloc(n, sizeof *t->text_len);
  t->piece_len = tg_calloc(n, sizeof *t->piece_len);
  t->type = tg_calloc(n, 1);
  t->score = tg_calloc(n, sizeof *t->score);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t l = tokens->v.arr.items[i].v.str.len;
    if (l > UINT32_MAX / 4)
      return fail(t, TG_ERR_IO, "%s: token %lld is too long", "tokenizer.ggml.tokens", (long long)i);
    total += (size_t)l + 1;  /* no overflow: the strings are in memory */
  }
  t->text_blob = tg_malloc(total);
  t->piece_blob = tg_malloc(total);
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const tg_gguf_value *s = &tokens->v.arr.items[i];
    size_t l = (size_t)s->v.str.len;
    t->text[i] = t->text_blob + at;
    if (l) memcpy(t->text[i], s->v.str.s, l);
    t->text[i][l] = 0;
    at += l + 1;
    t->text_len[i] = (uint32_t)l;
    int32_t ty = types ? ((const int32_t *)types->v.arr.data)[i] : TG_TOKEN_NORMAL;
    if (ty < 0 || ty > TG_TOKEN_BYTE)
      return fail(t, TG_ERR_IO, "%s: token type %lld is not one of 0..6", "tokenizer.ggml.token_type", (long long)ty);
    t->type[i] = (uint8_t)(ty == TG_TOKEN_UNDEFINED ? TG_TOKEN_NORMAL : ty);
    t->score[i] = scores ? ((const float *)scores->v.arr.data)[i] : 0.0f;
  }
  t->map_cap = pow2_above(n);
  t->map = tg_calloc(t->map_cap, sizeof *t->map);
  for (size_t i = 0; i < n; i++) map_insert(t, (int32_t)i);
  int16_t rev[ALPHABET_END];
  alphabet_reverse(rev);
  for (size_t i = 0; i < n; i++) make_piece(t, (int32_t)i, rev);
  return TG_OK;
}

static tg_status load_bytes_and_merges(tg_tokenizer *t, const tg_gguf *g) {
  for (unsigned b = 0; b < 256; b++) {
    char s[8];
    size_t l;
    if (t->kind == TOK_BPE) {
      char u[4];
      l = nn_toku_encode(byte_to_cp(b), u);  /* 1 or 2 bytes: code points below U+0144 */
      memcpy(s, u, l);
      memcpy(t->byte_ch[b], u, l);
      t->byte_chlen[b] = (uint8_t)l;
    }
    else l = (size_t)snprintf(s, sizeof s, "<0x%02X>", b);
    t->byte_tok[b] = map_find(t, s, l);
    if (t->byte_tok[b] < 0 && t->kind == TOK_BPE) t->bytes_missing = true;  /* (StarCoder's lacks 0xC0 and 0xC1) */
  }
  if (t->kind != TOK_BPE) {
    t->spm_split = true;
    for (size_t i = 0; i < t->n && t->spm_split; i++)
      for (uint32_t k = 1; k + 3 <= t->text_len[i]; k++)
        if (memcmp(t->text[i] + k, "\xE2\x96\x81", 3) == 0 &&
            (k < 3 || memcmp(t->text[i] + k - 3, "\xE2\x96\x81", 3) != 0)) {
          t->spm_split = false;
          break;
        }
    /* the pair table: every token that is two tokens side by side, split at each character boundary, so merging
     * two pieces is an integer lookup; the string lookup is left for characters that are no piece */
    for (unsigned c = 0; c < 128; c++) t->spm_char[c] = map_find(t, (const char[1]){(char)c}, 1);
    t->spm_mark = map_find(t, "\xE2\x96\x81", 3);
    t->mcap = pow2_above(2 * t->n);
    t->merge = tg_calloc(t->mcap, sizeof *t->merge);
    for (size_t i = 0; i < t->n; i++) {
      const char *s = t->text[i];
      size_t n = t->text_len[i], l;
      int32_t whole = -1;
      for (size_t k = 0; k < n; k += l) {
        nn_toku_decode((const unsigned char *)s + k, n - k, &l);
        if (k == 0 || k + l > n) continue;
        int32_t a = map_find(t, s, k), b = a >= 0 ? map_find(t, s + k, n - k) : -1;
        if (b < 0) continue;
        if (whole < 0) whole = map_find(t, s, n);
        merge_insert(t, a, b, 0, whole);
      }
    }
    return TG_OK;
  }
  bool bad;
  const tg_gguf_value *merges = get_array(g, "tokenizer.ggml.merges", TG_GGUF_STRING, 0, &bad);
  if (!merges || bad) return fail(t, TG_ERR_IO, "%s (an array of strings) is needed by a gpt2 tokenizer%.0lld",
                                  "tokenizer.ggml.merges", 0);
  size_t nm = (size_t)merges->v.arr.len;
  if (nm > UINT32_MAX / 4)
    return fail(t, TG_ERR_IO, "%s: %lld merges are too many", "tokenizer.ggml.merges", (long long)nm);
  t->mcap = pow2_above(nm);
  t->merge = tg_calloc(t->mcap, sizeof *t->merge);
  char *buf = NULL;
  size_t bcap = 0;
  for (size_t i = 0; i < nm; i++) {
    const char *s = merges->v.arr.items[i].v.str.s;
    size_t l = (size_t)merges->v.arr.items[i].v.str.len;
    /* "left right": the first space splits (neither side holds a space: spaces are U+0120 in this alphabet) */
    const char *sp = l > 2 ? memchr(s + 1, ' ', l - 2) : NULL;
    if (!sp) { tg_free(buf); return fail(t, TG_ERR_IO, "%s: entry %lld is not \"left right\"", "tokenizer.ggml.merges",
                                         (long long)i); }
    size_t la = (size_t)(sp - s), lb = l - la - 1;
    int32_t a = map_find(t, s, la), b = map_find(t, sp + 1, lb);
    if (la + lb > bcap) { bcap = la + lb; buf = tg_realloc(buf, bcap); }
    memcpy(buf, s, la);
    memcpy(buf + la, sp + 1, lb);
    int32_t m = map_find(t, buf, la + lb);
    if (a >= 0 && b >= 0 && m >= 0) merge_insert(t, a, b, (uint32_t)i, m);  /* merges into no token never apply */
  }
  tg_free(buf);
  return TG_OK;
}

static tg_status load_specials(tg_tokenizer *t, const tg_gguf *g) {
  struct { const char *key; int32_t *dst; } ids[] = {
    {"tokenizer.ggml.bos_token_id", &t->bos}, {"tokenizer.ggml.eos_token_id", &t->eos},
    {"tokenizer.ggml.eot_token_id", &t->eot}, {"tokenizer.ggml.eom_token_id", &t->eom},
    {"tokenizer.ggml.unknown_token_id", &t->unk}};
  for (size_t i = 0; i < TG_ARRAY_LEN(ids); i++) {
    bool bad;
    *ids[i].dst = get_id(g, ids[i].key, t->n, &bad);
    if (bad) return fail(t, TG_ERR_IO, "%s is not a token id below the vocabulary size %lld", ids[i].key,
                         (long long)t->n);
  }
  t->harmony = map_find(t, "<|return|>", 10) >= 0 && map_find(t, "<|channel|>", 11) >= 0;
  if (t->eot < 0) {
    static const char *eot[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"};
    for (size_t i = 0; i < TG_ARRAY_LEN(eot) && t->eot < 0; i++)
      if (!(t->harmony && strcmp(eot[i], "<|end|>") == 0)) t->eot = map_find(t, eot[i], strlen(eot[i]));
    if (t->eot < 0 && t->harmony) t->eot = map_find(t, "<|return|>", 10);
  }
  if (t->unk < 0)
    for (size_t i = 0; i < t->n && t->unk < 0; i++)
      if (t->type[i] == TG_TOKEN_UNKNOWN) t->unk = (int32_t)i;
  if (t->kind == TOK_BPE)
    for (unsigned b = 0; b < 256; b++)
      if (t->byte_tok[b] < 0) t->byte_tok[b] = t->unk;
  t->add_bos = get_flag(g, "tokenizer.ggml.add_bos_token", t->add_bos);
  t->add_eos = get_flag(g, "tokenizer.ggml.add_eos_token", false);
  t->add_space_prefix = get_flag(g, "tokenizer.ggml.add_space_prefix", t->add_space_prefix);
  if (get_flag(g, "tokenizer.ggml.remove_extra_whitespaces", false))
    return fail(t, TG_ERR_UNSUPPORTED, "%s = true is not supported (SentencePiece's whitespace normalization)%.0lld",
                "tokenizer.ggml.remove_extra_whitespaces", 0);
  if ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0))
    return fail(t, TG_ERR_IO, "the vocabulary adds a %s token (add_*_token) but names no such token id%.0lld",
                t->add_bos && t->bos < 0 ? "bos" : "eos", 0);
  /* special tokens, grouped by first byte, longest first */
  t->special = tg_malloc(t->n * sizeof *t->special);
  for (size_t i = 0; i < t->n; i++) {
    int ty = t->type[i];
    if ((ty == TG_TOKEN_CONTROL || ty == TG_TOKEN_USER_DEFINED || ty == TG_TOKEN_UNKNOWN) && t->text_len[i] > 0)
      t->special[t->nspecial++] = (int32_t)i;
  }
  SpecialKey *keys = tg_malloc((t->nspecial ? t->nspecial : 1) * sizeof *keys);
  for (size_t i = 0; i < t->nspecial; i++) {
    int32_t id = t->special[i];
    keys[i] = (SpecialKey){(unsigned char)t->text[id][0], t->text_len[id], id};
  }
  qsort(keys, t->nspecial, sizeof *keys, special_order);
  for (size_t i = 0; i < t->nspecial; i++) t->special[i] = keys[i].id;
  size_t k = 0;
  for (unsigned b = 0; b <= 256; b++) {
    while (k < t->nspecial && keys[k].first < b) k++;
    t->special_first[b] = k;
  }
  tg_free(keys);
  const char *tmpl;
  if (tg_gguf_get(g, "tokenizer.chat_template") &&
      tg_gguf_get_string(g, "tokenizer.chat_template", &tmpl, NULL) == TG_OK)
    t->chat_template = tg_strdup(tmpl);
  return TG_OK;
}

tg_status tg_tokenizer_from_gguf(const tg_gguf *g, tg_tokenizer **out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_from_gguf: out is NULL");
  *out = NULL;
  if (!g) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_from_gguf: the gguf handle is NULL");
  tg_tokenizer *t = tg_calloc(1, sizeof *t);
  t->bos = t->eos = t->eot = t->eom = t->unk = -1;
  tg_status st = load_vocab(t, g);
  if (st == TG_OK) st = load_bytes_and_merges(t, g);
  if (st == TG_OK) st = load_specials(t, g);
  if (st != TG_OK) return st;  /* t was freed by fail() */
  *out = t;
  return TG_OK;
}

void tg_tokenizer_free(tg_tokenizer *t) {
  if (!t) return;
  tg_free(t->text_blob); tg_free(t->piece_blob);
  tg_free(t->text); tg_free(t->piece); tg_free(t->text_len); tg_free(t->piece_len); tg_free(t->type);
  tg_free(t->score); tg_free(t->map); tg_free(t->merge);
  tg_free(t->special); tg_free(t->chat_template);
  tg_free(t);
}

/* ---- encoding ---- */
typedef struct IdVec { int32_t *d; size_t n, cap; } IdVec;
static void ids_push(IdVec *v, int32_t id) {
  if (v->n == v->cap) { v->cap = v->cap ? v->cap * 2 : 64; v->d = tg_realloc(v->d, v->cap * sizeof *v->d); }
  v->d[v->n++] = id;
}

/* A candidate merge: BPE orders by (rank, pos) ascending, SentencePiece by score descending then pos ascending. */
typedef struct Cand { float score; uint32_t rank, pos, size; int32_t a, b; } Cand;
typedef struct Heap { Cand *d; size_t n, cap; bool by_score; } Heap;
static bool cand_before(const Heap *h, const Cand *x, const Cand *y) {
  if (h->by_score) return x->score > y->score || (x->score == y->score && x->pos < y->pos);
  return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}
static void heap_push(Heap *h, Cand c) {
  if (h->n == h->cap) { h->cap = h->cap ? h->cap * 2 : 64; h->d = tg_realloc(h->d, h->cap * sizeof *h->d); }
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!cand_before(h, &c, &h->d[p])) break;
    h->d[i] = h->d[p];
    i = p;
  }
  h->d[i] = c;
}
static Cand heap_pop(Heap *h) {
  Cand top = h->d[0], last = h->d[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const Cand *best = &last;
    if (l < h->n && cand_before(h, &h->d[l], best)) { m = l; best = &h->d[l]; }
    if (r < h->n && cand_before(h, &h->d[r], best)) m = r;
    if (m == i) break;
    h->d[i] = h->d[m];
    i = m;
  }
  if (h->n) h->d[i] = last;
  return top;
}

/* Scratch space reused across the words of one call. */
typedef struct Work {
  int32_t *id, *prv, *nxt;
  uint32_t *start, *len;
  size_t scap;
  char *buf;
  size_t bcap;
  Heap heap;
} Work;
static void work_symbols(Work *w, size_t m) {
  if (m <= w->scap) return;
  w->scap = m * 2;
  w->id = tg_realloc(w->id, w->scap * sizeof *w->id);
  w->prv = tg_realloc(w->prv, w->scap * sizeof *w->prv);
  w->nxt = tg_realloc(w->nxt, w->scap * sizeof *w->nxt);
  w->start = tg_realloc(w->start, w->scap * sizeof *w->start);
  w->len = tg_realloc(w->len, w->scap * sizeof *w->len);
}
static void work_buf(Work *w, size_t n) {
  if (n > w->bcap) { w->bcap = n * 2; w->buf = tg_realloc(w->buf, w->bcap); }
}
static void work_free(Work *w) {
  tg_free(w->id); tg_free(w->prv); tg_free(w->nxt); tg_free(w->start); tg_free(w->len);
  tg_free(w->buf); tg_free(w->heap.d);
}

static void bpe_pair(const tg_tokenizer *t, Work *w, int32_t l) {
  if (l < 0 || w->nxt[l] < 0) return;
  uint32_t rank;
  int32_t m, a = w->id[l], b = w->id[w->nxt[l]];
  if (merge_find(t, a, b, &rank, &m)) heap_push(&w->heap, (Cand){0, rank, (uint32_t)l, 0, a, b});
}

/* Words up to BPE_SHORT bytes (nearly all): the pairs' ranks in an array, the lowest (leftmost) found by a scan —
 * the same order as the heap below, without its overhead. */
#define BPE_SHORT 64
#define NO_RANK UINT32_MAX
static void bpe_short(const tg_tokenizer *t, const unsigned char *s, size_t m, IdVec *out) {
  int32_t id[BPE_SHORT], mo[BPE_SHORT];
  uint32_t rk[BPE_SHORT];
  size_t cnt = m;
  for (size_t k = 0; k < cnt; k++) id[k] = t->byte_tok[s[k]];
  for (size_t k = 0; k + 1 < cnt; k++)
    if (!merge_find(t, id[k], id[k + 1], &rk[k], &mo[k])) rk[k] = NO_RANK;
  while (cnt > 1) {
    size_t best = 0;
    for (size_t k = 1; k + 1 < cnt; k++)
      if (rk[k] < rk[best]) best = k;
    if (rk[best] == NO_RANK) break;
    id[best] = mo[best];
    memmove(id + best + 1, id + best + 2, (cnt - best - 2) * sizeof *id);
    memmove(rk + best + 1, rk + best + 2, (cnt - best - 2) * sizeof *rk);
    memmove(mo + best + 1, mo + best + 2, (cnt - best - 2) * sizeof *mo);
    cnt--;
    if (best > 0 && !merge_find(t, id[best - 1], id[best], &rk[best - 1], &mo[best - 1])) rk[best - 1] = NO_RANK;
    if (best + 1 < cnt && !merge_find(t, id[best], id[best + 1], &rk[best], &mo[best])) rk[best] = NO_RANK;
  }
  for (size_t k = 0; k < cnt; k++) ids_push(out, id[k]);
}

/* One pre-tokenized word: its bytes as GPT-2-alphabet tokens, merged by rank (llama-3: the whole word when it is a
 * token). A merge is current when both symbols still hold the ids it was ranked for (a symbol's id only changes by
 * merging, which makes its text longer, so equal ids mean the same span). */
static void bpe_word(const tg_tokenizer *t, Work *w, const unsigned char *s, size_t m, IdVec *out) {
  if (m == 0) return;
  if (t->ignore_merges && m > 1) {
    work_buf(w, 2 * m);
    size_t l = 0;
    for (size_t k = 0; k < m; k++) {
      memcpy(w->buf + l, t->byte_ch[s[k]], 2);
      l += t->byte_chlen[s[k]];
    }
    int32_t id = map_find(t, w->buf, l);
    if (id >= 0) { ids_push(out, id); return; }
  }
  if (m <= BPE_SHORT) { bpe_short(t, s, m, out); return; }
  work_symbols(w, m);
  for (size_t k = 0; k < m; k++) {
    w->id[k] = t->byte_tok[s[k]];
    w->prv[k] = (int32_t)k - 1;
    w->nxt[k] = k + 1 < m ? (int32_t)k + 1 : -1;
  }
  w->heap.n = 0;
  w->heap.by_score = false;
  for (size_t k = 0; k + 1 < m; k++) bpe_pair(t, w, (int32_t)k);
  while (w->heap.n) {
    Cand c = heap_pop(&w->heap);
    int32_t l = (int32_t)c.pos, r = w->nxt[l];
    if (w->id[l] != c.a || r < 0 || w->id[r] != c.b) continue;  /* stale */
    uint32_t rank;
    int32_t merged;
    merge_find(t, c.a, c.b, &rank, &merged);
    w->id[l] = merged;
    w->id[r] = -1;
    w->nxt[l] = w->nxt[r];
    if (w->nxt[r] >= 0) w->prv[w->nxt[r]] = l;
    bpe_pair(t, w, w->prv[l]);
    bpe_pair(t, w, l);
  }
  for (int32_t k = 0; k >= 0; k = w->nxt[k]) ids_push(out, w->id[k]);
}

/* w->id[k]: the token of symbol k (-1: a character that is no piece) */
static void spm_pair(const tg_tokenizer *t, Work *w, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  uint32_t size = w->len[l] + w->len[r], rank;
  int32_t id;
  if (w->id[l] >= 0 && w->id[r] >= 0) {
    if (!merge_find(t, w->id[l], w->id[r], &rank, &id)) return;
  } else {
    id = map_find(t, w->buf + w->start[l], size);
  }
  if (id >= 0) heap_push(&w->heap, (Cand){t->score[id], 0, (uint32_t)l, size, id, 0});
}

/* SentencePiece: characters of the escaped text, adjacent pairs whose concatenation is a piece merged by score
 * (highest first); a symbol without a piece becomes its bytes' <0xXX> tokens (or the unknown token). */
/* SentencePiece on w->buf[off..off+len): characters, adjacent pairs whose concatenation is a piece merged by score
 * (highest first); a symbol without a piece becomes its bytes' <0xXX> tokens (or the unknown token). */
static tg_status spm_span(const tg_tokenizer *t, Work *w, size_t off, size_t len, IdVec *out) {
  work_symbols(w, len);
  size_t m = 0;
  for (size_t p = off; p < off + len; m++) {
    size_t l;
    uint32_t cp = nn_toku_decode((const unsigned char *)w->buf + p, off + len - p, &l);
    w->id[m] = cp < 128 ? t->spm_char[cp] : cp == 0x2581 ? t->spm_mark : map_find(t, w->buf + p, l);
    w->start[m] = (uint32_t)p;
    w->len[m] = (uint32_t)l;
    w->prv[m] = (int32_t)m - 1;
    w->nxt[m] = (int32_t)m + 1;
    p += l;
  }
  if (m == 0) return TG_OK;
  w->nxt[m - 1] = -1;
  w->heap.n = 0;
  w->heap.by_score = true;
  for (size_t k = 0; k + 1 < m; k++) spm_pair(t, w, (int32_t)k, (int32_t)k + 1);
  while (w->heap.n) {
    Cand c = heap_pop(&w->heap);
    int32_t l = (int32_t)c.pos, r = w->nxt[l];
    if (w->len[l] == 0 || r < 0 || w->len[l] + w->len[r] != c.size) continue;  /* stale */
    w->len[l] += w->len[r];
    w->len[r] = 0;
    w->id[l] = c.a;
    w->nxt[l] = w->nxt[r];
    if (w->nxt[r] >= 0) w->prv[w->nxt[r]] = l;
    spm_pair(t, w, w->prv[l], l);
    spm_pair(t, w, l, w->nxt[l]);
  }
  for (int32_t k = 0; k >= 0; k = w->nxt[k]) {
    if (w->id[k] >= 0) { ids_push(out, w->id[k]); continue; }
    for (uint32_t j = 0; j < w->len[k]; j++) {
      int32_t bt = t->byte_tok[(unsigned char)w->buf[w->start[k] + j]];
      if (bt < 0) bt = t->unk;
      if (bt < 0)
        return tg_set_error(TG_ERR_UNSUPPORTED, "tg_tokenizer_encode: byte 0x%02x has no piece, no <0x%02X> token "
                            "and the vocabulary has no unknown token", (unsigned char)w->buf[w->start[k] + j],
                            (unsigned char)w->buf[w->start[k] + j]);
      ids_push(out, bt);
    }
  }
  return TG_OK;
}

#define SPACE_MARK "\xE2\x96\x81"  /* U+2581, SentencePiece's space */
/* The text with spaces as U+2581 (and one prefixed), encoded in one span or, when no piece can hold a U+2581 after
 * another character (t->spm_split), in spans cut before each such U+2581: no merge can cross those cuts, so the
 * result is the same and the heaps stay small. */
static tg_status spm_text(const tg_tokenizer *t, Work *w, const char *text, size_t len, bool prefix, IdVec *out) {
  work_buf(w, 3 * len + 3);
  size_t b = 0;
  if (prefix) { memcpy(w->buf, SPACE_MARK, 3); b = 3; }
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') { memcpy(w->buf + b, SPACE_MARK, 3); b += 3; }
    else w->buf[b++] = text[i];
  }
  if (!t->spm_split) return spm_span(t, w, 0, b, out);
  size_t from = 0;
  for (size_t p = 3; p + 3 <= b; p++) {
    if (memcmp(w->buf + p, SPACE_MARK, 3) != 0 || memcmp(w->buf + p - 3, SPACE_MARK, 3) == 0) continue;
    tg_status st = spm_span(t, w, from, p - from, out);
    if (st != TG_OK) return st;
    from = p;
  }
  return spm_span(t, w, from, b - from, out);
}

typedef struct BpeCtx { const tg_tokenizer *t; Work *w; IdVec *out; tg_status st; } BpeCtx;
static void bpe_word_cb(void *ctx, const char *word, size_t len) {
  BpeCtx *c = ctx;
  if (c->st != TG_OK) return;
  if (c->t->bytes_missing)
    for (size_t i = 0; i < len; i++)
      if (c->t->byte_tok[(unsigned char)word[i]] < 0) {
        c->st = tg_set_error(TG_ERR_UNSUPPORTED, "tg_tokenizer_encode: byte 0x%02x has no token in this vocabulary "
                             "and it names no unknown token", (unsigned char)word[i]);
        return;
      }
  bpe_word(c->t, c->w, (const unsigned char *)word, len, c->out);
}

static tg_status encode_raw(const tg_tokenizer *t, Work *w, const char *text, size_t len, bool prev_special,
                            IdVec *out) {
  if (t->kind == TOK_SPM) return spm_text(t, w, text, len, t->add_space_prefix && prev_special, out);
  BpeCtx c = {t, w, out, TG_OK};
  nn_tok_pretokenize(t->pre, text, len, bpe_word_cb, &c);
  return c.st;
}

/* The special token written at s[0..n), longest first: user-defined always, control/unknown when parsing them. */
static int32_t special_at(const tg_tokenizer *t, const char *s, size_t n, bool parse) {
  unsigned char b = (unsigned char)s[0];
  for (size_t k = t->special_first[b]; k < t->special_first[b + 1]; k++) {
    int32_t id = t->special[k];
    if (!parse && t->type[id] != TG_TOKEN_USER_DEFINED) continue;
    if (t->text_len[id] <= n && memcmp(t->text[id], s, t->text_len[id]) == 0) return id;
  }
  return -1;
}

tg_status tg_tokenizer_encode(const tg_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                              size_t *n) {
  if (ids) *ids = NULL;
  if (n) *n = 0;
  if (!t || !ids || !n || (!text && len))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_encode: NULL %s", !t ? "tokenizer" : !ids ? "ids" :
                        !n ? "n" : "text with a non-zero length");
  if (len > TOK_MAX_TEXT)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_encode: %zu bytes of text (at most %zu)", len,
                        TOK_MAX_TEXT);
  if (flags & ~(unsigned)(TG_TOKENIZE_ADD_SPECIAL | TG_TOKENIZE_PARSE_SPECIAL))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_encode: unknown flags 0x%x", flags);
  IdVec out = {0};
  Work w = {0};
  tg_status st = TG_OK;
  bool add = flags & TG_TOKENIZE_ADD_SPECIAL, parse = flags & TG_TOKENIZE_PARSE_SPECIAL, prev_special = true;
  if (add && t->add_bos) ids_push(&out, t->bos);
  size_t seg = 0;
  for (size_t p = 0; p < len && st == TG_OK;) {
    int32_t id = t->nspecial ? special_at(t, text + p, len - p, parse) : -1;
    if (id < 0) { p++; continue; }
    if (p > seg) st = encode_raw(t, &w, text + seg, p - seg, prev_special, &out);
    ids_push(&out, id);
    prev_special = true;
    p += t->text_len[id];
    seg = p;
  }
  if (st == TG_OK && len > seg) st = encode_raw(t, &w, text + seg, len - seg, prev_special, &out);
  if (st == TG_OK && add && t->add_eos) ids_push(&out, t->eos);
  work_free(&w);
  if (st != TG_OK) { tg_free(out.d); return st; }
  if (out.n == 0) { tg_free(out.d); out.d = NULL; }
  *ids = out.d;
  *n = out.n;
  return TG_OK;
}

/* ---- decoding and accessors ---- */
static bool hidden(const tg_tokenizer *t, int32_t id, unsigned flags) {
  return !(flags & TG_DETOKENIZE_SPECIAL) && (t->type[id] == TG_TOKEN_CONTROL || t->type[id] == TG_TOKEN_UNKNOWN);
}

/* The piece of id as decode writes it after *started pieces (NULL when hidden). */
const char *nn_tok_piece_for_decode(const tg_tokenizer *t, int32_t id, unsigned flags, bool *started, size_t *len);
const char *nn_tok_piece_for_decode(const tg_tokenizer *t, int32_t id, unsigned flags, bool *started, size_t *len) {
  if (hidden(t, id, flags)) return NULL;
  const char *p = t->piece[id];
  size_t l = t->piece_len[id];
  if (!*started && t->kind == TOK_SPM && t->add_space_prefix && l && p[0] == ' ' && t->type[id] == TG_TOKEN_NORMAL) {
    p++;
    l--;
  }
  *started = true;
  *len = l;
  return p;
}

tg_status tg_tokenizer_decode(const tg_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                              size_t *len) {
  if (text) *text = NULL;
  if (len) *len = 0;
  if (!t || !text || (!ids && n))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_decode: NULL %s", !t ? "tokenizer" : !text ? "text" :
                        "ids with a non-zero count");
  if (flags & ~(unsigned)TG_DETOKENIZE_SPECIAL)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_decode: unknown flags 0x%x", flags);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= t->n)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_tokenizer_decode: id %d at %zu is outside the vocabulary "
                          "(%zu tokens)", ids[i], i, t->n);
    total += t->piece_len[ids[i]];
  }
  char *out = tg_malloc(total + 1);
  size_t o = 0;
  bool started = false;
  for (size_t i = 0; i < n; i++) {
    size_t l;
    const char *p = nn_tok_piece_for_decode(t, ids[i], flags, &started, &l);
    if (p && l) { memcpy(out + o, p, l); o += l; }
  }
  out[o] = 0;
  *text = out;
  if (len) *len = o;
  return TG_OK;
}

static bool valid_id(const tg_tokenizer *t, int32_t id) { return t && id >= 0 && (size_t)id < t->n; }

const char *tg_tokenizer_piece(const tg_tokenizer *t, int32_t id, size_t *len) {
  if (!valid_id(t, id)) { if (len) *len = 0; return NULL; }
  if (len) *len = t->piece_len[id];
  return t->piece[id];
}
const char *tg_tokenizer_token_text(const tg_tokenizer *t, int32_t id, size_t *len) {
  if (!valid_id(t, id)) { if (len) *len = 0; return NULL; }
  if (len) *len = t->text_len[id];
  return t->text[id];
}
tg_token_type tg_tokenizer_token_type(const tg_tokenizer *t, int32_t id) {
  return valid_id(t, id) ? (tg_token_type)t->type[id] : TG_TOKEN_UNDEFINED;
}
int32_t tg_tokenizer_find(const tg_tokenizer *t, const char *text, size_t len) {
  return t && (text || !len) ? map_find(t, text ? text : "", len) : -1;
}
size_t tg_tokenizer_vocab_size(const tg_tokenizer *t) { return t ? t->n : 0; }
int32_t tg_tokenizer_bos(const tg_tokenizer *t) { return t ? t->bos : -1; }
int32_t tg_tokenizer_eos(const tg_tokenizer *t) { return t ? t->eos : -1; }
int32_t tg_tokenizer_eot(const tg_tokenizer *t) { return t ? t->eot : -1; }
bool tg_tokenizer_is_eog(const tg_tokenizer *t, int32_t id) {
  if (!valid_id(t, id)) return false;
  if (id == t->eos || id == t->eot || id == t->eom) return true;
  if (t->type[id] != TG_TOKEN_CONTROL) return false;
  static const char *ends[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|endoftext|>", "<|end|>",
                               "<end_of_turn>", "<|return|>", "<|call|>"};
  for (size_t i = 0; i < TG_ARRAY_LEN(ends); i++)
    if (strcmp(t->text[id], ends[i]) == 0) return !(t->harmony && strcmp(ends[i], "<|end|>") == 0);
  return false;
}
const char *tg_tokenizer_model(const tg_tokenizer *t) { return t ? t->model : NULL; }
const char *tg_tokenizer_pre(const tg_tokenizer *t) { return t ? t->pre_name : NULL; }
const char *tg_tokenizer_chat_template(const tg_tokenizer *t) { return t ? t->chat_template : NULL; }
bool nn_tok_is_harmony(const tg_tokenizer *t);
bool nn_tok_is_harmony(const tg_tokenizer *t) { return t && t->harmony; }
