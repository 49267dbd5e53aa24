/* bench_tokenizer.c — tokenizer encode throughput: a fixed pseudo-text (English words, punctuation, numbers, code,
 * some Cyrillic, CJK and emoji; the same bytes every run) encoded by each GGUF vocabulary given, best of 3.
 * Prints per vocabulary:  tokenize <name> <MB/s> MB/s tokens=<count> bytes=<size>
 * Usage: bench_tokenizer [--corpus PATH] NAME=FILE.gguf...   (--corpus also writes the text there, for the peer:
 * bench/peer_tokenizer.py) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

static const char *words[] = {
  "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
  "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their",
  "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
  "tokenizer", "kernel", "compiler", "tensor", "gradient", "Transformer", "attention", "quantized", "llama",
  "don't", "it's", "we'll", "HTTP", "JSON", "OpenAI", "GPU", "McDonald", "iPhone", "XMLHttpRequest",
  "2024", "3.14159", "1,000,000", "42", "x86_64", "foo_bar", "printf(\"%d\\n\", x);", "a->b", "i++", "{ }", "[0]",
  "привет", "мир", "日本語", "中文", "한국어", "🦙", "🚀", "naïve", "café", "Straße",
};

static size_t make_corpus(char *buf, size_t cap) {
  uint64_t x = 0x243F6A8885A308D3ull;
  size_t n = 0, nw = sizeof words / sizeof words[0];
  while (n + 64 < cap) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const char *w = words[(x >> 8) % nw];
    size_t l = strlen(w);
    memcpy(buf + n, w, l);
    n += l;
    unsigned r = (unsigned)(x >> 40) % 100;
    const char *sep = r < 70 ? " " : r < 80 ? ", " : r < 88 ? ". " : r < 93 ? "\n" : r < 96 ? "  " : r < 98 ? "\n\n"
                                                                                                      : "\t";
    l = strlen(sep);
    memcpy(buf + n, sep, l);
    n += l;
  }
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  size_t cap = (size_t)4 << 20;
  char *text = malloc(cap);
  size_t len = make_corpus(text, cap);
  int a = 1;
  if (a + 1 < argc && strcmp(argv[a], "--corpus") == 0) {
    FILE *f = fopen(argv[a + 1], "wb");
    if (!f || fwrite(text, 1, len, f) != len) {
      if (f) fclose(f);
      fprintf(stderr, "bench_tokenizer: cannot write %s\n", argv[a + 1]);
      return 1;
    }
    fclose(f);
    a += 2;
  }
  int status = 0;
  for (; a < argc; a++) {
    char name[64];
    const char *eq = strchr(argv[a], '=');
    if (!eq || (size_t)(eq - argv[a]) >= sizeof name) {
      fprintf(stderr, "bench_tokenizer: want NAME=FILE, got %s\n", argv[a]);
      return 2;
    }
    memcpy(name, argv[a], (size_t)(eq - argv[a]));
    name[eq - argv[a]] = 0;
    tg_gguf *g = NULL;
    tg_tokenizer *t = NULL;
    if (tg_gguf_open(eq + 1, &g) != TG_OK || tg_tokenizer_from_gguf(g, &t) != TG_OK) {
      fprintf(stderr, "bench_tokenizer: %s: %s\n", eq + 1, tg_last_error());
      tg_gguf_close(g);
      status = 1;
      continue;
    }
    tg_gguf_close(g);
    double best = 1e30;
    size_t ntok = 0;
    for (int rep = 0; rep < 3; rep++) {
      int32_t *ids = NULL;
      double t0 = now_s();
      tg_status st = tg_tokenizer_encode(t, text, len, 0, &ids, &ntok);
      double dt = now_s() - t0;
      tg_buffer_free(ids);
      if (st != TG_OK) { fprintf(stderr, "bench_tokenizer: %s: %s\n", name, tg_last_error()); status = 1; break; }
      if (dt < best) best = dt;
    }
    printf("tokenize %s %.2f MB/s tokens=%zu bytes=%zu\n", name, (double)len / best / 1e6, ntok, len);
    tg_tokenizer_free(t);
  }
  free(text);
  return status;
}
