/* tg_mkmodel.c — tg-mkmodel, writes a random-weight GGUF model of a real architecture (tg_llm_write_random_model):
 *
 *   tg-mkmodel -o F.gguf [--preset tiny|small|1b|gpt-oss-tiny] [--arch llama|qwen2|qwen3|gpt-oss]
 *              [--type f32|f16|q8_0|q4_0|q4_1] [--layers N] [--dim N] [--heads N] [--kv-heads N] [--head-dim N]
 *              [--ffn N] [--vocab N] [--ctx N] [--tied 0|1] [--seed N]
 *              [--experts N] [--experts-used N] [--window N] [--expert-type mxfp4|f16|q8_0|q4_0|q4_1]   (gpt-oss)
 *
 * The preset (default tiny) gives the shape; the other flags override it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

static void usage(FILE *f) {
  fprintf(f, "usage: tg-mkmodel -o F.gguf [--preset tiny|small|1b|gpt-oss-tiny] [--arch llama|qwen2|qwen3|gpt-oss]\n"
             "                  [--type f32|f16|q8_0|q4_0|q4_1] [--layers N] [--dim N] [--heads N] [--kv-heads N]\n"
             "                  [--head-dim N] [--ffn N] [--vocab N] [--ctx N] [--tied 0|1] [--seed N]\n"
             "                  gpt-oss: [--experts N] [--experts-used N] [--window N]\n"
             "                           [--expert-type mxfp4|f16|q8_0|q4_0|q4_1]\n");
}

static bool num(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  const char *out = NULL, *preset = "tiny";
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--preset")) preset = argv[i + 1];
  tg_llm_model_spec s;
  if (!tg_llm_model_preset(preset, &s)) {
    fprintf(stderr, "tg-mkmodel: unknown preset \"%s\" (tiny, small, 1b, gpt-oss-tiny)\n", preset);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long x = 0;
    bool ok = v != NULL;
    if (!strcmp(a, "-o")) out = v;
    else if (!strcmp(a, "--preset")) {}
    else if (!strcmp(a, "--arch")) s.arch = v;
    else if (!strcmp(a, "--type") || !strcmp(a, "--expert-type")) {
      int ty = -1;
      for (int t = 0; v && t < 40; t++)
        if (tg_ggml_type_name(t) && !strcmp(tg_ggml_type_name(t), v)) ty = t;
      ok = ty >= 0;
      if (!strcmp(a, "--type")) s.type = ty;
      else s.expert_type = ty;
    }
    else if (!strcmp(a, "--experts")) ok = num(v, 1, 4096, &x), s.n_expert = (int)x;
    else if (!strcmp(a, "--experts-used")) ok = num(v, 1, 4096, &x), s.n_expert_used = (int)x;
    else if (!strcmp(a, "--window")) ok = num(v, 1, 1 << 24, &x), s.sliding_window = x;
    else if (!strcmp(a, "--layers")) ok = num(v, 1, 4096, &x), s.n_layer = (int)x;
    else if (!strcmp(a, "--dim")) ok = num(v, 1, 1 << 20, &x), s.dim = (int)x;
    else if (!strcmp(a, "--heads")) ok = num(v, 1, 4096, &x), s.n_head = (int)x;
    else if (!strcmp(a, "--kv-heads")) ok = num(v, 1, 4096, &x), s.n_kv_head = (int)x;
    else if (!strcmp(a, "--head-dim")) ok = num(v, 0, 1 << 16, &x), s.head_dim = (int)x;
    else if (!strcmp(a, "--ffn")) ok = num(v, 1, 1 << 22, &x), s.ffn_dim = (int)x;
    else if (!strcmp(a, "--vocab")) ok = num(v, 1, 1 << 30, &x), s.vocab = (int)x;
    else if (!strcmp(a, "--ctx")) ok = num(v, 1, 1 << 24, &x), s.ctx = x;
    else if (!strcmp(a, "--tied")) ok = num(v, 0, 1, &x), s.tied = x != 0;
    else if (!strcmp(a, "--seed")) ok = num(v, 0, 0x7fffffffL, &x), s.seed = (uint64_t)x;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else { fprintf(stderr, "tg-mkmodel: unknown option %s\n", a); ok = false; }
    if (!ok) {
      fprintf(stderr, "tg-mkmodel: bad value for %s\n", a);
      usage(stderr);
      return 2;
    }
    i++;
  }
  if (!out) { usage(stderr); return 2; }
  if (strcmp(s.arch, "llama")) s.llama3_rope = false;
  if (tg_llm_write_random_model(&s, out) != TG_OK) {
    fprintf(stderr, "tg-mkmodel: %s\n", tg_last_error());
    return 1;
  }
  fprintf(stderr, "tg-mkmodel: wrote %s (%s, %d layers, dim %d, %s)\n", out, s.arch, s.n_layer, s.dim,
          tg_ggml_type_name(s.type));
  return 0;
}
