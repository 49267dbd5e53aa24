/* fuzz_gguf.c — fuzz target for the GGUF reader (src/nn/gguf.c) and writer (gguf_write.c).
 *
 * Every input goes to tg_gguf_open_buffer: it must either fail with TG_ERR_IO / TG_ERR_UNSUPPORTED and a message, or
 * open; a file that opens is written again from its metadata and tensor bytes, and the rewrite must open with the same
 * keys, value types, tensor names, types, sizes and bytes. Small tensors of a supported type are also built as tensors
 * (the dequantization graph must build; realizing it would compile kernels, too slow per input). Crashes, sanitizer
 * reports and leaks are the failures.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_gguf *g = NULL;
  tg_status st = tg_gguf_open_buffer(data, size, &g);
  if (st != TG_OK) {
    if (g) fail("error with a result");
    if ((st != TG_ERR_IO && st != TG_ERR_UNSUPPORTED) || !tg_last_error()[0]) fail("a rejected file must give a message");
    return 0;
  }
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

static uint8_t *make_seed(int which, size_t *n) {
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
  size_t sn[3];
  uint8_t *seeds[3];
  for (int i = 0; i < 3; i++) seeds[i] = make_seed(i, &sn[i]);
  const uint8_t *const ptrs[3] = {seeds[0], seeds[1], seeds[2]};
  static const FuzzEdit edits[] = {FUZZ_BYTE, FUZZ_TRUNCATE, FUZZ_BIT, FUZZ_PLUS_MINUS, FUZZ_DELETE};
  FuzzTarget t = {"fuzz_gguf", ptrs, sn, 3, edits, 5, NULL, 5000};
  int rc = fuzz_driver_main(&t, argc, argv);
  for (int i = 0; i < 3; i++) tg_buffer_free(seeds[i]);
  return rc;
}
#endif
