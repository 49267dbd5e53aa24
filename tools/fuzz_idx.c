/* fuzz_idx.c — libFuzzer target for the IDX parser (src/nn/datasets.c), built with clang -fsanitize=fuzzer plus ASan
 * and UBSan (`make B=... fuzz-idx`, FUZZ_SECONDS=600 by default).
 *
 * The first input byte picks what the parser sees, so the fuzzer reaches the compressed paths without having to
 * invent a valid deflate stream: 0 — the rest of the input as the file; 1 — the rest gzip-compressed; 2 — the rest
 * zlib-compressed; 3 — the rest gzip-compressed, then cut short at a position taken from the input; 4 — gzip-
 * compressed, then one byte flipped. A parse must either fail with an error message and a cleared output, or return
 * data whose size matches its shape; anything else (or a sanitizer report, or a crash) is a finding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tinygrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The byte limit given to the parser: large enough for real-looking headers, small enough that a lying header cannot
 * make the fuzzer allocate gigabytes. */
#define FUZZ_MAX_BYTES ((size_t)1 << 24)

static size_t compress_into(uint8_t *dst, size_t cap, const uint8_t *src, size_t n, int window_bits) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
  zs.next_in = (Bytef *)(uintptr_t)src;
  zs.avail_in = (uInt)n;
  zs.next_out = dst;
  zs.avail_out = (uInt)cap;
  int r = deflate(&zs, Z_FINISH);
  size_t out = cap - zs.avail_out;
  deflateEnd(&zs);
  return r == Z_STREAM_END ? out : 0;
}

static void check_result(tg_status st, const tg_idx *idx) {
  if (st != TG_OK) {
    if (idx->data || idx->ndim || tg_last_error()[0] == '\0') {
      fprintf(stderr, "fuzz_idx: failed parse left output or no message (status %d)\n", (int)st);
      abort();
    }
    return;
  }
  size_t expect = tg_dtype_itemsize(idx->dtype);
  if (idx->ndim < 1 || idx->ndim > TG_MAX_DIMS || expect == 0 || !idx->data) abort();
  for (int i = 0; i < idx->ndim; i++) {
    if (idx->shape[i] <= 0) abort();
    expect *= (size_t)idx->shape[i];
  }
  if (expect != idx->nbytes || idx->nbytes > FUZZ_MAX_BYTES) abort();
  /* touch every byte so ASan sees any short allocation */
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < idx->nbytes; i++) sink ^= ((const uint8_t *)idx->data)[i];
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0] % 5;
  const uint8_t *body = data + 1;
  size_t n = size - 1;
  tg_idx idx;
  tg_status st;
  if (mode == 0) {
    st = tg_idx_parse(body, n, FUZZ_MAX_BYTES, &idx);
  } else {
    size_t cap = n + n / 100 + 64;
    uint8_t *packed = malloc(cap);
    if (!packed) return 0;
    size_t z = compress_into(packed, cap, body, n, mode == 2 ? 15 : 31);
    if (z == 0) {
      free(packed);
      return 0;
    }
    if (mode == 3 && n >= 2) z = (size_t)(body[n - 1] | body[n - 2] << 8) % z; /* cut short */
    if (mode == 4 && n >= 2) packed[(size_t)(body[n - 1] | body[n - 2] << 8) % z] ^= (uint8_t)(body[0] | 1);
    st = tg_idx_parse(packed, z, FUZZ_MAX_BYTES, &idx);
    free(packed);
  }
  check_result(st, &idx);
  tg_idx_free(&idx);
  return 0;
}
