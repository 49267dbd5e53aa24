/* fuzz_driver.h — the standalone driver the file-format fuzz targets share (fuzz_safetensors.c, fuzz_gguf.c): without
 * libFuzzer, `TARGET FILE...` replays files through LLVMFuzzerTestOneInput, and `TARGET -n N` runs N random mutations
 * of the target's seeds — a quick deterministic smoke (`make test` runs the GGUF one under ASan+UBSan).
 *
 * The mutations are edits a damaged or hostile file shows: a random byte, a truncation, a byte from the format's own
 * alphabet (JSON punctuation for safetensors), a flipped bit, a byte off by one, a deleted byte. Each target picks
 * the kinds it uses; the random stream is one xorshift with a fixed seed, so a failure replays exactly. Included by
 * one file per program (static functions), compiled out under libFuzzer (TG_LIBFUZZER). */
#ifndef TG_TOOLS_FUZZ_DRIVER_H
#define TG_TOOLS_FUZZ_DRIVER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef enum FuzzEdit { FUZZ_BYTE, FUZZ_TRUNCATE, FUZZ_ALPHABET, FUZZ_BIT, FUZZ_PLUS_MINUS, FUZZ_DELETE } FuzzEdit;

typedef struct FuzzTarget {
  const char *name;             /* for the summary line */
  const uint8_t *const *seeds;  /* inputs to mutate, used in turn */
  const size_t *seed_len;
  int nseeds;
  const FuzzEdit *edits;        /* the kinds of mutation, picked uniformly */
  int nedits;
  const char *alphabet;         /* FUZZ_ALPHABET's bytes */
  long default_iters;           /* -n without a count */
} FuzzTarget;

static uint64_t fuzz_rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t fuzz_rng(void) {
  fuzz_rng_state ^= fuzz_rng_state << 13;
  fuzz_rng_state ^= fuzz_rng_state >> 7;
  fuzz_rng_state ^= fuzz_rng_state << 17;
  return fuzz_rng_state;
}

/* One edit of buf[0, n) in place; returns the new length. */
static size_t fuzz_edit(const FuzzTarget *t, uint8_t *buf, size_t n) {
  switch (t->edits[fuzz_rng() % (uint64_t)t->nedits]) {
  case FUZZ_BYTE: buf[fuzz_rng() % n] = (uint8_t)fuzz_rng(); return n;
  case FUZZ_TRUNCATE: return (size_t)(fuzz_rng() % (n + 1));
  case FUZZ_ALPHABET: buf[fuzz_rng() % n] = (uint8_t)t->alphabet[fuzz_rng() % strlen(t->alphabet)]; return n;
  case FUZZ_BIT: buf[fuzz_rng() % n] ^= (uint8_t)(1u << (fuzz_rng() % 8)); return n;
  case FUZZ_PLUS_MINUS: {
    size_t at = fuzz_rng() % n;
    buf[at] = (uint8_t)(buf[at] + 1 - 2 * (int)(fuzz_rng() % 2));
    return n;
  }
  case FUZZ_DELETE: {
    size_t at = fuzz_rng() % n;
    memmove(buf + at, buf + at + 1, n - at - 1);
    return n - 1;
  }
  }
  return n;
}

static int fuzz_driver_main(const FuzzTarget *t, int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-n") != 0) {
    static uint8_t file[1 << 22];
    for (int i = 1; i < argc; i++) {
      FILE *f = fopen(argv[i], "rb");
      if (!f) { perror(argv[i]); return 1; }
      size_t n = fread(file, 1, sizeof file, f);
      fclose(f);
      LLVMFuzzerTestOneInput(file, n);
    }
    printf("%s: %d files replayed, no failure\n", t->name, argc - 1);
    return 0;
  }
  long iters = argc > 2 ? strtol(argv[2], NULL, 10) : t->default_iters;
  size_t cap = 0;
  for (int i = 0; i < t->nseeds; i++) cap = t->seed_len[i] > cap ? t->seed_len[i] : cap;
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf) { fprintf(stderr, "%s: out of memory\n", t->name); return 1; }
  for (long it = 0; it < iters; it++) {
    int which = (int)(it % t->nseeds);
    size_t n = t->seed_len[which];
    memcpy(buf, t->seeds[which], n);
    int edits = 1 + (int)(fuzz_rng() % 4);
    for (int e = 0; e < edits && n; e++) n = fuzz_edit(t, buf, n);
    LLVMFuzzerTestOneInput(buf, n);
  }
  free(buf);
  printf("%s: %ld mutated inputs, no failure\n", t->name, iters);
  return 0;
}

#endif
