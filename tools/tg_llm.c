/* tg_llm.c — tg-llm, the command-line LLM runner (tinygrad's python -m tinygrad.llm): loads a GGUF model, prefills
 * the prompt, streams the generated tokens and reports prefill and decode tokens/s on stderr.
 *
 *   tg-llm --model F.gguf --prompt-ids "1 2 3" [--n 32] [--temp 0] [--top-k 0] [--top-p 1] [--seed 0]
 *          [--threads N] [--ctx N] [--ignore-eos]
 *
 * Text prompts and token text wait for the tokenizer (src/nn/tokenizer.c): prompt_to_ids and print_token are the two
 * places it plugs in; until then the prompt is a list of token ids and tokens print as ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

static void usage(FILE *f) {
  fprintf(f, "usage: tg-llm --model F.gguf --prompt-ids \"1 2 3\" [--n 32] [--temp 0] [--top-k 0] [--top-p 1]\n"
             "              [--seed 0] [--threads N] [--ctx N] [--ignore-eos]\n");
}

/* The prompt as token ids. Hook: with a tokenizer, a text prompt is encoded here (tokens from tg_llm_gguf(m)). Returns
 * the count, or -1 with a message. */
static int prompt_to_ids(const tg_llm *m, const char *prompt_ids, int32_t *ids, int max) {
  int vocab = tg_llm_get_config(m)->vocab, n = 0;
  const char *p = prompt_ids;
  while (*p) {
    while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < 0 || v >= vocab) {
      fprintf(stderr, "tg-llm: --prompt-ids: \"%.20s\" is not a token id in [0, %d)\n", p, vocab);
      return -1;
    }
    if (n == max) {
      fprintf(stderr, "tg-llm: the prompt has more than %d tokens (the context)\n", max);
      return -1;
    }
    ids[n++] = (int32_t)v;
    p = end;
  }
  if (n == 0) fprintf(stderr, "tg-llm: empty prompt\n");
  return n ? n : -1;
}

/* One generated token. Hook: with a tokenizer, its text is printed here (UTF-8 pieces held until complete). */
static void print_token(const tg_llm *m, int32_t tok) {
  (void)m;
  printf("%d ", (int)tok);
  fflush(stdout);
}

static bool on_token(void *user, int32_t tok) {
  print_token(user, tok);
  return true;
}

static bool parse_num(const char *flag, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = s ? strtod(s, &end) : 0;
  if (!s || end == s || *end || errno || !(v >= lo && v <= hi)) {
    fprintf(stderr, "tg-llm: %s needs a number in [%g, %g], got \"%s\"\n", flag, lo, hi, s ? s : "");
    return false;
  }
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  const char *model = NULL, *prompt = NULL;
  double n = 32, temp = 0, top_k = 0, top_p = 1, seed = 0, threads = 0, ctx = 0;
  bool ignore_eos = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool ok = true;
    if (!strcmp(a, "--model")) model = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--prompt-ids")) prompt = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--n")) ok = parse_num(a, v, 1, 1 << 20, &n), i++;
    else if (!strcmp(a, "--temp")) ok = parse_num(a, v, 0, 100, &temp), i++;
    else if (!strcmp(a, "--top-k")) ok = parse_num(a, v, 0, 1 << 30, &top_k), i++;
    else if (!strcmp(a, "--top-p")) ok = parse_num(a, v, 1e-9, 1, &top_p), i++;
    else if (!strcmp(a, "--seed")) ok = parse_num(a, v, 0, 9007199254740992.0, &seed), i++;
    else if (!strcmp(a, "--threads")) ok = parse_num(a, v, 1, 1024, &threads), i++;
    else if (!strcmp(a, "--ctx")) ok = parse_num(a, v, 1, 1 << 24, &ctx), i++;
    else if (!strcmp(a, "--ignore-eos")) ignore_eos = true;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else { fprintf(stderr, "tg-llm: unknown option %s\n", a); ok = false; }
    if (!ok) { usage(stderr); return 2; }
  }
  if (!model || !prompt) { usage(stderr); return 2; }
  if (threads > 0) {
    char t[32];
    snprintf(t, sizeof t, "%d", (int)threads);
    setenv("NUM_CPU_THREADS", t, 1);
    tg_knobs_reload();
  }
  tg_llm *m = NULL;
  if (tg_llm_load(model, &(tg_llm_options){.n_ctx = (int64_t)ctx}, &m) != TG_OK) {
    fprintf(stderr, "tg-llm: %s\n", tg_last_error());
    return 1;
  }
  const tg_llm_config *c = tg_llm_get_config(m);
  fprintf(stderr, "tg-llm: %s, %d layers, dim %d, %d/%d heads, vocab %d, %s weights, context %lld\n", c->arch,
          c->n_layer, c->dim, c->n_head, c->n_kv_head, c->vocab, tg_ggml_type_name(c->weight_type),
          (long long)tg_llm_n_ctx(m));
  int max = (int)tg_llm_n_ctx(m);
  int32_t *ids = malloc((size_t)max * sizeof *ids);
  int np = ids ? prompt_to_ids(m, prompt, ids, max - 1) : -1;
  int rc = 1;
  if (np > 0) {
    tg_llm_gen_params p = {{temp, (int)top_k, top_p, (uint64_t)seed}, (int)n, ignore_eos};
    tg_llm_stats st;
    if (tg_llm_generate(m, ids, (size_t)np, &p, on_token, m, &st) != TG_OK) {
      fprintf(stderr, "\ntg-llm: %s\n", tg_last_error());
    } else {
      printf("\n");
      fprintf(stderr, "tg-llm: prefill %d tokens in %.3f s (%.2f tok/s), decode %d steps in %.3f s (%.2f tok/s)\n",
              st.prompt_tokens, st.prefill_seconds, st.prompt_tokens / st.prefill_seconds, st.decode_steps,
              st.decode_seconds, st.decode_steps ? st.decode_steps / st.decode_seconds : 0.0);
      rc = 0;
    }
  }
  free(ids);
  tg_llm_free(m);
  return rc;
}
