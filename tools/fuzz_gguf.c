/* fuzz_gguf.c — fuzz target for the GGUF reader (src/nn/gguf.c) and writer (gguf_write.c).
 *
 * Every input goes to tg_gguf_open_buffer: it must either fail with TG_ERR_IO / TG_ERR_UNSUPPORTED and a message, or
 * open; a file that opens is written again from its metadata and tensor bytes, and the rewrite must open with the same
 * keys, value types, tensor names, types, sizes and bytes. Small tensors of a supported type are also built as tensors
 * (the dequantization graph must build; realizing it would compile kernels, too slow per input). The file's
 * tokenizer metadata goes to tg_tokenizer_from_gguf: it builds or fails with a message, and a built tokenizer must
 * encode, decode and stream any text and render its chat template. Crashes, sanitizer reports and leaks are the
 * failures.
 *
 * With libFuzzer (clang): `make fuzz-gguf` (FUZZ_SECONDS, seeds from tests/fixtures/gguf).
 * Without it (`make build/fuzz_gguf_smoke`): `fuzz_gguf_smoke FILE...` replays files, and `-n N` runs N random
 * mutations of built-in seeds written by the library's writer — the short fixed-seed pass `make test` runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what) {
  fprintf(stderr, "fuzz_gguf: %s (%s)\n", what, tg_last_error());
  abort();
}

static size_t own_keys(const tg_gguf *g) { /* keys other than general.alignment (the writer's own) */
  return tg_gguf_kv_count(g) - (tg_gguf_get(g, "general.alignment") ? 1 : 0);
}

static void check_same(const tg_gguf *a, const tg_gguf *b, const uint8_t *da, const uint8_t *db) {
  if (tg_gguf_tensor_count(a) != tg_gguf_tensor_count(b)) fail("rewrite changed the tensor count");
  if (own_keys(a) != own_keys(b) || tg_gguf_alignment(a) != tg_gguf_alignment(b)) fail("rewrite changed the keys");
  for (size_t i = 0; i < tg_gguf_kv_count(a); i++) {
    const tg_gguf_value *va = tg_gguf_kv_value(a, i), *vb = tg_gguf_get(b, tg_gguf_kv_key(a, i));
    if (strcmp(tg_gguf_kv_key(a, i), "general.alignment") == 0) continue;
    if (!vb || va->type != vb->type) fail("rewrite lost a key or changed its type");
  }
  for (size_t i = 0; i < tg_gguf_tensor_count(a); i++) {
    const tg_gguf_tensor_info *x = tg_gguf_tensor_info_at(a, i), *y = tg_gguf_tensor_info_at(b, i);
    if (strcmp(x->name, y->name) != 0 || x->type != y->type || x->nbytes != y->nbytes || x->ndim != y->ndim)
      fail("rewrite changed a tensor info");
    if (memcmp(da + tg_gguf_data_offset(a) + x->offset, db + tg_gguf_data_offset(b) + y->offset, (size_t)x->nbytes))
      fail("rewrite changed tensor bytes");
  }
}

/* The tokenizer over whatever metadata the file has (src/nn/tokenizer*.c). */
static long tokenizers_built;
static void fuzz_tokenizer(const tg_gguf *g) {
  tg_tokenizer *t = NULL;
  tg_status st = tg_tokenizer_from_gguf(g, &t);
  if (st != TG_OK) {
    if (t) fail("tokenizer: error with a result");
    if ((st != TG_ERR_IO && st != TG_ERR_UNSUPPORTED) || !tg_last_error()[0]) fail("tokenizer: no message");
    return;
  }
  static const char *texts[] = {"", "hello world", " \n\n\t  x ", "<|eot_id|>a<s></s><|eot_id", "\xff\xfe\xc3 \xe2\x82",
                                "\xe6\x97\xa5 \xf0\x9f\xa6\x99 e\xcc\x81", "'re 'LL 123456 HeLLo"};
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
    for (unsigned flags = 0; flags < 4; flags++) {
      int32_t *ids = NULL;
      size_t n = 0;
      st = tg_tokenizer_encode(t, texts[k], strlen(texts[k]), flags, &ids, &n);
      if (st != TG_OK) {  /* only a SentencePiece vocabulary without byte pieces or <unk> cannot encode a byte */
        if (st != TG_ERR_UNSUPPORTED || ids || n) fail("tokenizer: encode failed");
        continue;
      }
      for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= tg_tokenizer_vocab_size(t)) fail("tokenizer: id out of range");
      char *text = NULL;
      size_t len = 0;
      if (tg_tokenizer_decode(t, ids, n, flags & 1 ? TG_DETOKENIZE_SPECIAL : 0, &text, &len) != TG_OK)
        fail("tokenizer: decode failed");
      tg_buffer_free(text);
      tg_token_stream *ts = tg_token_stream_new(t, 0);
      const char *p;
      size_t l;
      for (size_t i = 0; i < n; i++)
        if (tg_token_stream_feed(ts, ids[i], &p, &l) != TG_OK) fail("tokenizer: stream failed");
      if (tg_token_stream_flush(ts, &p, &l) != TG_OK) fail("tokenizer: flush failed");
      tg_token_stream_free(ts);
      tg_buffer_free(ids);
    }
  tokenizers_built++;
  const char *name = tg_chat_template_name(t);
  tg_chat_message msgs[] = {{"system", "s"}, {"user", "u"}};
  char *chat = NULL;
  if (name && tg_chat_render(name, msgs, 2, true, &chat) != TG_OK) fail("tokenizer: chat template failed");
  tg_buffer_free(chat);
  tg_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_gguf *g = NULL;
  tg_status st = tg_gguf_open_buffer(data, size, &g);
  if (st != TG_OK) {
    if (g) fail("error with a result");
    if ((st != TG_ERR_IO && st != TG_ERR_UNSUPPORTED) || !tg_last_error()[0]) fail("a rejected file must give a message");
    return 0;
  }
  fuzz_tokenizer(g);
  tg_gguf_writer *w = tg_gguf_writer_new(tg_gguf_alignment(g));
  if (!w) fail("writer for a valid alignment");
  for (size_t i = 0; i < tg_gguf_kv_count(g); i++)
    if (strcmp(tg_gguf_kv_key(g, i), "general.alignment") != 0 &&
        tg_gguf_writer_add(w, tg_gguf_kv_key(g, i), tg_gguf_kv_value(g, i)) != TG_OK)
      fail("the writer refused a value the reader accepted");
  bool zero_dims = false;
  for (size_t i = 0; i < tg_gguf_tensor_count(g); i++) {
    const tg_gguf_tensor_info *t = tg_gguf_tensor_info_at(g, i);
    if (t->ndim == 0) { zero_dims = true; continue; } /* the writer takes 1 to 4 dims */
    if (tg_gguf_writer_add_tensor(w, t->name, t->type, t->ne, (size_t)t->ndim,
                                  data + tg_gguf_data_offset(g) + t->offset, (size_t)t->nbytes) != TG_OK)
      fail("the writer refused a tensor the reader accepted");
    if (t->nbytes <= 4096) {
      tg_scope s = tg_scope_begin();
      tg_tensor *x = tg_gguf_tensor(g, t->name, TG_GGUF_COPY);
      if (!x && tg_last_status() != TG_ERR_UNSUPPORTED) fail("a valid tensor did not build");
      tg_scope_end(s);
    }
  }
  if (!zero_dims) {
    uint8_t *out = NULL;
    size_t n = 0;
    if (tg_gguf_writer_write_buffer(w, &out, &n) != TG_OK) fail("write failed");
    tg_gguf *again = NULL;
    if (tg_gguf_open_buffer(out, n, &again) != TG_OK) fail("the rewrite does not open");
    check_same(g, again, data, out);
    tg_gguf_close(again);
    tg_buffer_free(out);
  }
  tg_gguf_writer_free(w);
  tg_gguf_close(g);
  if (tg_live_tensors() != 0) fail("tensors leaked");
  return 0;
}

#ifndef TG_LIBFUZZER
/* ---- standalone driver (tools/fuzz_driver.h): replay files, or mutate seeds made by the writer ---- */
#include "fuzz_driver.h"

static void add_strings(tg_gguf_writer *w, const char *key, const char *const *v, size_t n) {
  tg_gguf_value items[300], arr = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_STRING, n, NULL, items}}};
  for (size_t i = 0; i < n && i < 300; i++) items[i] = (tg_gguf_value){TG_GGUF_STRING, {.str = {v[i], strlen(v[i])}}};
  tg_gguf_writer_add(w, key, &arr);
}

/* Seeds 3 and 4: vocabulary-only files, byte-level BPE (the GPT-2 byte alphabet, a few merges, a control token) and
 * SentencePiece (a few scored pieces, no byte pieces). */
static uint8_t *make_vocab_seed(int which, size_t *n) {
  tg_gguf_writer *w = tg_gguf_writer_new(32);
  static char alpha[256][3];
  const char *tok[300];
  int32_t type[300];
  float score[300];
  size_t nt = 0;
  if (which == 3) {
    tg_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2");
    tg_gguf_writer_add_string(w, "tokenizer.ggml.pre", "llama-bpe");
    for (unsigned b = 0, k = 0; b < 256; b++) {
      bool own = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      unsigned cp = own ? b : 256 + k++;
      if (cp < 0x80) alpha[b][0] = (char)cp;
      else { alpha[b][0] = (char)(0xC0 | (cp >> 6)); alpha[b][1] = (char)(0x80 | (cp & 0x3F)); }
      type[nt] = 1;
      tok[nt++] = alpha[b];
    }
    static const char *more[] = {"he", "ll", "hell", "hello", "\xc4\xa0w", "<|eot_id|>", "<|start_header_id|>"};
    for (size_t i = 0; i < 7; i++) { type[nt] = i >= 5 ? 3 : 1; tok[nt++] = more[i]; }
    static const char *merges[] = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 w"};
    add_strings(w, "tokenizer.ggml.merges", merges, 5);
    tg_gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", (uint32_t)nt - 2);
  } else {
    tg_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama");
    static const char *pieces[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "\xe2\x96\x81h", "e", "l", "o", "\xe2\x96\x81hello",
                                   "ll", "<0x41>"};
    static const int32_t ptype[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6};
    for (size_t i = 0; i < 11; i++) { type[nt] = ptype[i]; score[nt] = -(float)i; tok[nt++] = pieces[i]; }
    tg_gguf_value sc = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_FLOAT32, nt, score, NULL}}};
    tg_gguf_writer_add(w, "tokenizer.ggml.scores", &sc);
    tg_gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", 1);
    tg_gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", 2);
  }
  add_strings(w, "tokenizer.ggml.tokens", tok, nt);
  tg_gguf_value ty = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_INT32, nt, type, NULL}}};
  tg_gguf_writer_add(w, "tokenizer.ggml.token_type", &ty);
  uint8_t *out = NULL;
  tg_gguf_writer_write_buffer(w, &out, n);
  tg_gguf_writer_free(w);
  return out;
}

static uint8_t *make_seed(int which, size_t *n) {
  if (which >= 3) return make_vocab_seed(which, n);
  tg_gguf_writer *w = tg_gguf_writer_new(which == 1 ? 64 : 32);
  tg_gguf_writer_add_string(w, "general.architecture", "llama");
  tg_gguf_writer_add_uint32(w, "llama.block_count", 2);
  static const int32_t ints[] = {1, 2, 3};
  tg_gguf_value arr = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_INT32, 3, ints, NULL}}};
  tg_gguf_writer_add(w, "a", &arr);
  tg_gguf_value strs[2] = {{TG_GGUF_STRING, {.str = {"x", 1}}}, {TG_GGUF_STRING, {.str = {"yz", 2}}}};
  tg_gguf_value sarr = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_STRING, 2, NULL, strs}}};
  tg_gguf_writer_add(w, "s", &sarr);
  uint8_t bytes[210];
  for (int i = 0; i < 210; i++) bytes[i] = (uint8_t)(i * 13);
  const int types[] = {TG_GGML_Q8_0, TG_GGML_Q4_K, TG_GGML_MXFP4};
  int t = types[which % 3];
  int64_t be, bb;
  tg_ggml_type_block(t, &be, &bb);
  tg_gguf_writer_add_tensor(w, "w", t, TG_SHAPE(be), bytes, (size_t)bb);
  float f[4] = {1, 2, 3, 4};
  tg_gguf_writer_add_tensor(w, "f", TG_GGML_F32, TG_SHAPE(2, 2), f, sizeof f);
  uint8_t *out = NULL;
  tg_gguf_writer_write_buffer(w, &out, n);
  tg_gguf_writer_free(w);
  return out;
}

int main(int argc, char **argv) {
  size_t sn[5];
  uint8_t *seeds[5];
  for (int i = 0; i < 5; i++) seeds[i] = make_seed(i, &sn[i]);
  const uint8_t *const ptrs[5] = {seeds[0], seeds[1], seeds[2], seeds[3], seeds[4]};
  static const FuzzEdit edits[] = {FUZZ_BYTE, FUZZ_TRUNCATE, FUZZ_BIT, FUZZ_PLUS_MINUS, FUZZ_DELETE};
  FuzzTarget t = {"fuzz_gguf", ptrs, sn, 5, edits, 5, NULL, 5000};
  int rc = fuzz_driver_main(&t, argc, argv);
  for (int i = 0; i < 5; i++) tg_buffer_free(seeds[i]);
  if (rc == 0) printf("fuzz_gguf: %ld inputs built a tokenizer\n", tokenizers_built);
  return rc;
}
#endif
