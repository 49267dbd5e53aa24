/* bench_llm.c — LLM inference figures: `build/bench_llm FILE THREADS NTOK [PROMPT]`.
 *
 * Loads FILE (a GGUF llama-family model, e.g. from tg-mkmodel), measures
 *   - prefill: PROMPT tokens (default 32) in one forward, after a first untimed one (its compiles);
 *   - decode: NTOK one-token steps after two untimed ones (the JIT's run and capture), greedy on the model's output;
 *   - bytes per decode token: every weight the step reads (all block tensors, the output norm and output matrix, one
 *     embedding row) plus the KV cache it reads at the mean position;
 *   - the machine's read bandwidth: THREADS threads summing a 1 GiB buffer, best of 3;
 * and prints `<name> <value> <unit>` lines: decode_tok_s, prefill_tok_s, bytes_per_token, bandwidth_gb_s,
 * decode_gb_s (bytes/token x tok/s) and bw_fraction (decode_gb_s / bandwidth), and first_token (the greedy token after
 * the prompt, to compare with a peer on the same file). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct BwJob { const uint64_t *p; size_t n; uint64_t sum; } BwJob;

static void *bw_read(void *arg) {
  BwJob *j = arg;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= j->n; i += 4) s0 += j->p[i], s1 += j->p[i + 1], s2 += j->p[i + 2], s3 += j->p[i + 3];
  j->sum = s0 + s1 + s2 + s3;
  return NULL;
}

/* GB/s reading a 1 GiB buffer with nt threads, best of 3 */
static double bandwidth(int nt) {
  size_t bytes = (size_t)1 << 30, n = bytes / 8;
  uint64_t *buf = malloc(bytes);
  if (!buf) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = i;
  double best = 0;
  uint64_t keep = 0;
  for (int r = 0; r < 3; r++) {
    pthread_t th[64];
    BwJob jobs[64];
    int k = nt < 64 ? nt : 64;
    double t = now_s();
    for (int i = 0; i < k; i++) {
      jobs[i] = (BwJob){buf + n / (size_t)k * (size_t)i, n / (size_t)k, 0};
      pthread_create(&th[i], NULL, bw_read, &jobs[i]);
    }
    for (int i = 0; i < k; i++) pthread_join(th[i], NULL), keep += jobs[i].sum;
    double gbs = (double)bytes / (now_s() - t) / 1e9;
    if (gbs > best) best = gbs;
  }
  free(buf);
  if (keep == 42) printf("# %llu\n", (unsigned long long)keep); /* keeps the sums alive */
  return best;
}

static int argmax(const float *x, int n) {
  int b = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return b;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_llm FILE THREADS NTOK [PROMPT]\n");
    return 2;
  }
  int threads = atoi(argv[2]), ntok = atoi(argv[3]), prompt = argc > 4 ? atoi(argv[4]) : 32;
  if (threads < 1 || ntok < 1 || prompt < 2) {
    fprintf(stderr, "bench_llm: THREADS, NTOK >= 1, PROMPT >= 2\n");
    return 2;
  }
  char t[16];
  snprintf(t, sizeof t, "%d", threads);
  setenv("NUM_CPU_THREADS", t, 1);
  tg_knobs_reload();
  tg_llm *m = NULL;
  int64_t ctx = prompt + ntok + 8;
  if (tg_llm_load(argv[1], &(tg_llm_options){.n_ctx = ctx < 256 ? 256 : ctx}, &m) != TG_OK) {
    fprintf(stderr, "bench_llm: %s\n", tg_last_error());
    return 1;
  }
  const tg_llm_config *c = tg_llm_get_config(m);
  const tg_gguf *g = tg_llm_gguf(m);
  /* bytes one decode step reads */
  double wbytes = 0;
  for (size_t i = 0; i < tg_gguf_tensor_count(g); i++) {
    const tg_gguf_tensor_info *ti = tg_gguf_tensor_info_at(g, i);
    if (!strncmp(ti->name, "blk.", 4) || !strcmp(ti->name, "output_norm.weight") || !strcmp(ti->name, "output.weight"))
      wbytes += (double)ti->nbytes;
    if (!strcmp(ti->name, "token_embd.weight"))
      wbytes += c->tied_output ? (double)ti->nbytes : (double)ti->nbytes / c->vocab;
  }
  double kv = 2.0 * c->n_layer * c->n_kv_head * c->head_dim * 4.0 * (prompt + ntok / 2.0 + 2);
  double bpt = wbytes + kv;
  int32_t *ids = malloc((size_t)prompt * sizeof *ids);
  float *logits = malloc((size_t)c->vocab * sizeof *logits);
  for (int i = 0; i < prompt; i++) ids[i] = (int32_t)((i * 7919 + 1) % c->vocab);
  int rc = 0;
  if (tg_llm_forward(m, ids, (size_t)prompt, 0, false, logits) != TG_OK) goto fail; /* compiles */
  double t0 = now_s();
  if (tg_llm_forward(m, ids, (size_t)prompt, 0, false, logits) != TG_OK) goto fail;
  double prefill = prompt / (now_s() - t0);
  int32_t tok = argmax(logits, c->vocab), first = tok;
  double td = 0;
  for (int i = 0; i < ntok + 2; i++) {
    double a = now_s();
    if (tg_llm_forward(m, &tok, 1, tg_llm_n_past(m), false, logits) != TG_OK) goto fail;
    if (i >= 2) td += now_s() - a;
    tok = argmax(logits, c->vocab);
  }
  double decode = ntok / td, bw = bandwidth(threads);
  printf("model %s %s %d_layers dim_%d\n", c->arch, tg_ggml_type_name(c->weight_type), c->n_layer, c->dim);
  printf("decode_tok_s %.3f tok/s\n", decode);
  printf("prefill_tok_s %.3f tok/s\n", prefill);
  printf("bytes_per_token %.0f B\n", bpt);
  printf("bandwidth_gb_s %.2f GB/s\n", bw);
  printf("decode_gb_s %.2f GB/s\n", bpt * decode / 1e9);
  printf("bw_fraction %.3f of_bandwidth\n", bw > 0 ? bpt * decode / 1e9 / bw : 0.0);
  printf("decode_kernels %zu kernels\n", tg_llm_decode_kernels(m));
  printf("first_token %d\n", (int)first); /* the greedy token after the prompt (peer_torch_llm.py prints its own) */
  goto done;
fail:
  fprintf(stderr, "bench_llm: %s\n", tg_last_error());
  rc = 1;
done:
  free(ids), free(logits);
  tg_llm_free(m);
  return rc;
}
