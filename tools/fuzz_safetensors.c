/* fuzz_safetensors.c — fuzz target for the safetensors reader (src/nn/safetensors.c).
 *
 * Every input goes to tg_safe_load_buffer: it must either fail with TG_ERR_IO and a message, or load; a file that
 * loads is saved again and reloaded, and the reload must hold the same names, dtypes, shapes and bytes. Crashes,
 * sanitizer reports and leaks are the failures.
 *
 * With libFuzzer (clang):  tools/fuzz_safetensors.sh DIR SECONDS   (builds the library with
 *   -fsanitize=fuzzer-no-link,address and runs the target with seeds from tests/fixtures/safetensors when present)
 * Without it (`make B=... B/fuzz_safetensors`): `fuzz_safetensors FILE...` replays files, and with no arguments
 * runs N random mutations of built-in seeds (first argument "-n N", default 20000) — a quick deterministic smoke. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what) {
  fprintf(stderr, "fuzz_safetensors: %s (%s)\n", what, tg_last_error());
  abort();
}

static void check_same(const tg_state_dict *a, const tg_state_dict *b) {
  if (tg_state_dict_len(a) != tg_state_dict_len(b)) fail("round trip changed the tensor count");
  for (size_t i = 0; i < tg_state_dict_len(a); i++) {
    tg_tensor *x = tg_state_dict_tensor(a, i), *y = tg_state_dict_get(b, tg_state_dict_name(a, i));
    if (!y) fail("round trip lost a tensor");
    if (tg_get_dtype(x) != tg_get_dtype(y) || tg_ndim(x) != tg_ndim(y)) fail("round trip changed a dtype or rank");
    for (int d = 0; d < tg_ndim(x); d++)
      if (tg_shape(x)[d] != tg_shape(y)[d]) fail("round trip changed a shape");
    size_t n = (size_t)tg_numel(x) * tg_dtype_itemsize(tg_get_dtype(x));
    uint8_t *bx = malloc(n ? n : 1), *by = malloc(n ? n : 1);
    if (!bx || !by) fail("out of memory");
    if (tg_to_host(x, bx, n) != TG_OK || tg_to_host(y, by, n) != TG_OK) fail("copy out failed");
    if (memcmp(bx, by, n) != 0) fail("round trip changed the data");
    free(bx);
    free(by);
  }
  if (tg_state_dict_metadata_len(a) != tg_state_dict_metadata_len(b)) fail("round trip changed the metadata");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_state_dict *sd = NULL;
  tg_status st = tg_safe_load_buffer(data, size, &sd);
  if (st != TG_OK) {
    if (sd) fail("error with a result");
    if (st != TG_ERR_IO || !tg_last_error()[0]) fail("a rejected file must give TG_ERR_IO with a message");
    return 0;
  }
  /* keep the round trip cheap: very large tensors are only loaded */
  uint8_t *out = NULL;
  size_t out_size = 0;
  if (size <= (1u << 20)) {
    if (tg_safe_save_buffer(sd, &out, &out_size) != TG_OK) fail("saving a loaded file failed");
    tg_state_dict *again = NULL;
    if (tg_safe_load_buffer(out, out_size, &again) != TG_OK) fail("reloading a saved file failed");
    check_same(sd, again);
    tg_state_dict_free(again);
    tg_buffer_free(out);
  }
  tg_state_dict_free(sd);
  if (tg_live_tensors() != 0) fail("tensors leaked");
  return 0;
}

#ifndef TG_LIBFUZZER
/* ---- standalone driver (tools/fuzz_driver.h): replay files, or mutate built-in seeds ---- */
#include "fuzz_driver.h"

static size_t make_seed(int which, uint8_t *buf, size_t cap) {
  static const char *headers[] = {
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},\"__metadata__\":{\"k\":\"v\\u00e9\"}}",
    "{\"b\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[0,3]},\"c\":{\"dtype\":\"BOOL\",\"shape\":[],"
    "\"data_offsets\":[3,4]}}",
    "{\"x\\n\":{\"dtype\":\"BF16\",\"shape\":[1,0,4],\"data_offsets\":[0,0]}}",
  };
  static const size_t data_len[] = {16, 4, 0};
  const char *h = headers[which % 3];
  size_t hl = strlen(h), total = 8 + hl + data_len[which % 3];
  if (total > cap) return 0;
  for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, h, hl);
  memset(buf + 8 + hl, 0, data_len[which % 3]);
  if (which % 3 == 1) buf[8 + hl + 3] = 1;
  return total;
}

int main(int argc, char **argv) {
  static uint8_t seeds[3][512];
  size_t len[3];
  for (int i = 0; i < 3; i++) len[i] = make_seed(i, seeds[i], sizeof seeds[i]);
  const uint8_t *const ptrs[3] = {seeds[0], seeds[1], seeds[2]};
  static const FuzzEdit edits[] = {FUZZ_BYTE, FUZZ_TRUNCATE, FUZZ_ALPHABET, FUZZ_DELETE};
  FuzzTarget t = {"fuzz_safetensors", ptrs, len, 3, edits, 4, "{}[],:\"\\0123456789eE-+. ", 20000};
  return fuzz_driver_main(&t, argc, argv);
}
#endif
