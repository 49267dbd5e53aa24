/* llm_sample.c — choosing the next token from a logits row on the host (greedy, temperature, top-k, top-p with a
 * seeded generator: extra/models/llama.py's sample()) and the generation loop over tg_llm_forward (tinygrad's
 * Transformer.generate: prefill the prompt, then one JIT'd decode step per token). */
#include "nn/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tg_llm_sampler {
  tg_llm_sampling p;
  uint64_t state;         /* splitmix64 */
  int32_t *idx;           /* candidate ids, sorted by logit */
  double *prob;
  size_t cap;
};

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

static bool params_ok(const tg_llm_sampling *p, const char *op) {
  if (!(p->temperature >= 0) || !isfinite(p->temperature)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: temperature %g must be finite and >= 0", op, p->temperature);
    return false;
  }
  if (p->top_k < 0) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: top_k %d < 0", op, p->top_k); return false; }
  if (!(p->top_p > 0 && p->top_p <= 1)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: top_p %g outside (0, 1]", op, p->top_p);
    return false;
  }
  return true;
}

tg_llm_sampler *tg_llm_sampler_new(const tg_llm_sampling *p) {
  if (!p) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_sampler_new: NULL params"); return NULL; }
  if (!params_ok(p, "tg_llm_sampler_new")) return NULL;
  tg_llm_sampler *s = calloc(1, sizeof *s);
  if (!s) { tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_sampler_new: out of memory"); return NULL; }
  s->p = *p;
  s->state = p->seed;
  return s;
}

void tg_llm_sampler_free(tg_llm_sampler *s) {
  if (!s) return;
  free(s->idx), free(s->prob), free(s);
}

static const float *sort_logits;
/* descending logit, then ascending id (deterministic order) */
static int by_logit(const void *a, const void *b) {
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  float x = sort_logits[i], y = sort_logits[j];
  if (x != y) return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* the k largest ids of logits (k <= n) into idx, sorted: a bounded insertion for small k, else a full sort */
static void top_ids(const float *logits, size_t n, size_t k, int32_t *idx) {
  sort_logits = logits;
  if (k > 64) {
    for (size_t i = 0; i < n; i++) idx[i] = (int32_t)i;
    qsort(idx, n, sizeof *idx, by_logit);
    return;
  }
  size_t have = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = (int32_t)i;
    if (have == k && by_logit(&id, &idx[k - 1]) >= 0) continue;
    size_t j = have < k ? have++ : k - 1;
    while (j > 0 && by_logit(&id, &idx[j - 1]) < 0) idx[j] = idx[j - 1], j--;
    idx[j] = id;
  }
}

int32_t tg_llm_sample(tg_llm_sampler *s, const float *logits, size_t n) {
  if (!s || !logits) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_sample: NULL argument"); return -1; }
  if (n == 0 || n > INT32_MAX) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_sample: %zu logits", n); return -1; }
  for (size_t i = 0; i < n; i++)
    if (isnan(logits[i])) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_sample: logit %zu is NaN", i); return -1; }
  size_t k = s->p.top_k > 0 && (size_t)s->p.top_k < n ? (size_t)s->p.top_k : n;
  if (s->p.temperature == 0 || k == 1) {
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
      if (logits[i] > logits[b]) b = i;
    return (int32_t)b;
  }
  size_t need = k == n ? n : k;
  if (s->cap < n) {
    int32_t *ni = realloc(s->idx, n * sizeof *ni);
    if (ni) s->idx = ni;
    double *np = realloc(s->prob, n * sizeof *np);
    if (np) s->prob = np;
    if (!ni || !np) { tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_sample: out of memory"); return -1; }
    s->cap = n;
  }
  top_ids(logits, n, need, s->idx);
  /* softmax over the candidates at the temperature (the best logit is idx[0]) */
  double mx = logits[s->idx[0]], sum = 0;
  if (isinf(mx) && mx < 0) return s->idx[0]; /* every logit -inf: the lowest id */
  for (size_t i = 0; i < need; i++) sum += s->prob[i] = exp(((double)logits[s->idx[i]] - mx) / s->p.temperature);
  /* top-p: the smallest prefix whose mass reaches top_p */
  size_t keep = need;
  if (s->p.top_p < 1) {
    double c = 0;
    for (size_t i = 0; i < need; i++) {
      c += s->prob[i] / sum;
      if (c >= s->p.top_p) { keep = i + 1; break; }
    }
  }
  double tot = 0;
  for (size_t i = 0; i < keep; i++) tot += s->prob[i];
  double u = uniform01(&s->state) * tot, c = 0;
  for (size_t i = 0; i < keep; i++) {
    c += s->prob[i];
    if (u < c) return s->idx[i];
  }
  return s->idx[keep - 1];
}

/* ------------------------------------------------------------------------------------------------- generation */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

tg_status tg_llm_generate(tg_llm *m, const int32_t *ids, size_t n, const tg_llm_gen_params *p, tg_llm_token_cb cb,
                          void *user, tg_llm_stats *stats) {
  if (stats) memset(stats, 0, sizeof *stats);
  if (!m || !ids || !p || !cb) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_generate: NULL argument");
  if (n == 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_generate: empty prompt");
  if ((int64_t)n >= tg_llm_n_ctx(m))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_llm_generate: a prompt of %zu tokens leaves no room in the context of %lld",
                        n, (long long)tg_llm_n_ctx(m));
  if (!params_ok(&p->sampling, "tg_llm_generate")) return tg_last_status();
  const tg_llm_config *c = tg_llm_get_config(m);
  tg_llm_sampler *s = tg_llm_sampler_new(&p->sampling);
  float *logits = malloc((size_t)c->vocab * sizeof *logits);
  if (!s || !logits) {
    tg_llm_sampler_free(s), free(logits);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_llm_generate: out of memory");
  }
  double t0 = now_s();
  tg_status st = tg_llm_forward(m, ids, n, 0, false, logits);
  double t1 = now_s(), tdec = 0;
  int gen = 0, steps = 0;
  while (st == TG_OK) {
    int32_t tok = tg_llm_sample(s, logits, (size_t)c->vocab);
    if (tok < 0) { st = tg_last_status(); break; }
    gen++;
    bool go = cb(user, tok);
    if (!go || (tok == c->eos && !p->ignore_eos) || (p->max_tokens > 0 && gen >= p->max_tokens) ||
        tg_llm_n_past(m) >= tg_llm_n_ctx(m))
      break;
    double a = now_s();
    st = tg_llm_forward(m, &tok, 1, tg_llm_n_past(m), false, logits);
    tdec += now_s() - a;
    steps++;
  }
  if (stats) {
    stats->prompt_tokens = (int)n, stats->gen_tokens = gen, stats->decode_steps = steps;
    stats->prefill_seconds = t1 - t0, stats->decode_seconds = tdec;
  }
  tg_llm_sampler_free(s), free(logits);
  return st;
}
