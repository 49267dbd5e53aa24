/* tg_llm.c — tg-llm, the command-line LLM runner and server (tinygrad's python -m tinygrad.llm): loads a GGUF model
 * and the tokenizer from its metadata, then either runs one prompt, streaming the text as it is decoded and reporting
 * prefill and decode tokens/s on stderr, or serves the OpenAI-compatible API (tools/llm/serve.c) until SIGINT/SIGTERM.
 *
 *   tg-llm --model F.gguf (--prompt TEXT [--chat] | --prompt-ids "1 2 3" | --serve PORT [--host ADDR])
 *          [--n 32] [--temp 0] [--top-k 0] [--top-p 1] [--seed 0] [--threads N] [--ctx N] [--ignore-eos]
 *          [--chat-template llama3|chatml|gpt-oss] [--log]
 *
 * --chat wraps the prompt as one user message in the model's chat template (tokenizer.chat_template or the vocabulary
 * decides which; --chat-template overrides); the server always uses it for /v1/chat/completions. Generation stops at
 * the vocabulary's end-of-generation tokens (EOS, end of turn), which are not printed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tinygrad.h"
#include "llm/serve.h"

static void usage(FILE *f) {
  fprintf(f, "usage: tg-llm --model F.gguf (--prompt TEXT [--chat] | --prompt-ids \"1 2 3\" | --serve PORT [--host A])\n"
             "              [--n 32] [--temp 0] [--top-k 0] [--top-p 1] [--seed 0] [--threads N] [--ctx N]\n"
             "              [--ignore-eos] [--chat-template llama3|chatml|gpt-oss] [--log]\n");
}

typedef struct Runner {
  tg_llm *model;
  tg_tokenizer *tok;          /* NULL when the file has no usable tokenizer (then only --prompt-ids works) */
  const char *chat_template;  /* NULL: none known */
  bool ignore_eos;
} Runner;

/* ---- prompts -> token ids ---- */

/* "1 2 3" -> ids; returns the count, or -1 with a message */
static int parse_ids(const Runner *r, const char *text, int32_t *ids, int max) {
  int vocab = tg_llm_get_config(r->model)->vocab, n = 0;
  const char *p = text;
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

/* The text a request runs on: chat messages through the template, or the raw prompt (*out: tg_buffer_free). On
 * failure returns false with the reason in err. */
static bool render_prompt(const Runner *r, const tg_chat_message *msgs, size_t n, const char *prompt, char **out,
                          unsigned *flags, char *err, size_t errlen) {
  if (!msgs) {
    *flags = TG_TOKENIZE_ADD_SPECIAL;
    size_t len = strlen(prompt);
    if (!(*out = malloc(len + 1))) { snprintf(err, errlen, "out of memory"); return false; }
    memcpy(*out, prompt, len + 1);
    return true;
  }
  if (!r->chat_template) {
    snprintf(err, errlen, "the model names no chat template (tokenizer.chat_template or a known vocabulary): pass "
                          "--chat-template llama3|chatml|gpt-oss");
    return false;
  }
  *flags = TG_TOKENIZE_ADD_SPECIAL | TG_TOKENIZE_PARSE_SPECIAL;
  if (tg_chat_render(r->chat_template, msgs, n, true, out) != TG_OK) {
    snprintf(err, errlen, "%s", tg_last_error());
    return false;
  }
  return true;
}

/* ---- generation: tokens -> text ---- */

typedef struct Gen {
  const Runner *r;
  tg_token_stream *stream;
  bool (*emit)(void *user, const char *text, size_t len);  /* false: stop */
  void *user;
  int tokens;                 /* generated, the end-of-generation token excluded */
  bool stopped_eog, stopped_by_emit;
  tg_status err;
} Gen;

static bool on_token(void *user, int32_t tok) {
  Gen *g = user;
  if (!g->r->ignore_eos && g->r->tok && tg_tokenizer_is_eog(g->r->tok, tok)) {
    g->stopped_eog = true;
    return false;
  }
  g->tokens++;
  if (!g->stream) {  /* no tokenizer: ids */
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%d ", (int)tok);
    if (!g->emit(g->user, buf, (size_t)len)) g->stopped_by_emit = true;
    return !g->stopped_by_emit;
  }
  const char *text;
  size_t len;
  if ((g->err = tg_token_stream_feed(g->stream, tok, &text, &len)) != TG_OK) return false;
  if (len && !g->emit(g->user, text, len)) g->stopped_by_emit = true;
  return !g->stopped_by_emit;
}

/* runs ids through the model, sending the decoded text to emit; the stream's held-back bytes are flushed at the end */
static tg_status generate(const Runner *r, const int32_t *ids, size_t n, const tg_llm_gen_params *p,
                          bool (*emit)(void *, const char *, size_t), void *user, Gen *g, tg_llm_stats *st) {
  *g = (Gen){.r = r, .emit = emit, .user = user};
  if (r->tok && !(g->stream = tg_token_stream_new(r->tok, 0))) return TG_ERR_OUT_OF_MEMORY;
  tg_llm_gen_params q = *p;
  /* with a tokenizer, its end-of-generation set (on_token) replaces the config's one eos id: it is wider */
  if (r->tok) q.ignore_eos = true;
  tg_status s = tg_llm_generate(r->model, ids, n, &q, on_token, g, st);
  if (s == TG_OK && g->err != TG_OK) s = g->err;
  if (s == TG_OK && g->stream && !g->stopped_by_emit) {
    const char *text;
    size_t len;
    if ((s = tg_token_stream_flush(g->stream, &text, &len)) == TG_OK && len) emit(user, text, len);
  }
  tg_token_stream_free(g->stream);
  g->stream = NULL;
  return s;
}

/* ---- one prompt from the command line ---- */

static bool print_text(void *user, const char *text, size_t len) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

static int run_prompt(const Runner *r, const char *prompt, const char *prompt_ids, bool chat, const tg_llm_gen_params *p) {
  int max = (int)tg_llm_n_ctx(r->model) - 1;
  int32_t *ids = NULL;
  size_t n = 0;
  if (prompt_ids) {
    if (!(ids = malloc((size_t)(max > 0 ? max : 1) * sizeof *ids))) return 1;
    int k = parse_ids(r, prompt_ids, ids, max);
    if (k < 0) { free(ids); return 1; }
    n = (size_t)k;
  } else {
    if (!r->tok) { fprintf(stderr, "tg-llm: %s\n", tg_last_error()); return 1; }
    char *text = NULL, err[256];
    unsigned flags = 0;
    tg_chat_message msg = {"user", prompt};
    if (!render_prompt(r, chat ? &msg : NULL, 1, prompt, &text, &flags, err, sizeof err)) {
      fprintf(stderr, "tg-llm: %s\n", err);
      return 1;
    }
    if (tg_tokenizer_encode(r->tok, text, strlen(text), flags, &ids, &n) != TG_OK) {
      fprintf(stderr, "tg-llm: %s\n", tg_last_error());
      tg_buffer_free(text);
      return 1;
    }
    tg_buffer_free(text);
    if (n == 0 || (int64_t)n > max) {
      fprintf(stderr, "tg-llm: the prompt is %zu tokens; the context holds %d\n", n, max);
      tg_buffer_free(ids);
      return 1;
    }
  }
  Gen g;
  tg_llm_stats st;
  tg_status s = generate(r, ids, n, p, print_text, NULL, &g, &st);
  if (prompt_ids) free(ids);
  else tg_buffer_free(ids);
  if (s != TG_OK) {
    fprintf(stderr, "\ntg-llm: %s\n", tg_last_error());
    return 1;
  }
  printf("\n");
  fprintf(stderr, "tg-llm: prefill %d tokens in %.3f s (%.2f tok/s), decode %d steps in %.3f s (%.2f tok/s)%s\n",
          st.prompt_tokens, st.prefill_seconds, st.prompt_tokens / st.prefill_seconds, st.decode_steps,
          st.decode_seconds, st.decode_steps ? st.decode_steps / st.decode_seconds : 0.0,
          g.stopped_eog ? ", stopped at end of generation" : "");
  return 0;
}

/* ---- the server's engine: one request at a time, from the server's worker thread ---- */

typedef struct Emit { const LlmOutput *out; } Emit;
static bool emit_to_client(void *user, const char *text, size_t len) {
  const Emit *e = user;
  return e->out->text(e->out->user, text, len);
}

static void engine_generate(void *ctx, const LlmRequest *rq, const LlmOutput *out, LlmResult *res) {
  const Runner *r = ctx;
  char *text = NULL;
  int32_t *ids = NULL;
  size_t n = 0;
  unsigned flags = 0;
  tg_chat_message *msgs = NULL;
  if (rq->messages) {
    msgs = malloc((rq->n_messages ? rq->n_messages : 1) * sizeof *msgs);
    if (!msgs) { res->error = LLM_ERR_INTERNAL; snprintf(res->message, sizeof res->message, "out of memory"); return; }
    for (size_t i = 0; i < rq->n_messages; i++) msgs[i] = (tg_chat_message){rq->messages[i].role, rq->messages[i].content};
  }
  bool rendered = render_prompt(r, msgs, rq->n_messages, rq->prompt, &text, &flags, res->message, sizeof res->message);
  free(msgs);
  if (!rendered) { res->error = LLM_ERR_REQUEST; return; }
  tg_status s = tg_tokenizer_encode(r->tok, text, strlen(text), flags, &ids, &n);
  tg_buffer_free(text);
  if (s != TG_OK) {
    res->error = s == TG_ERR_OUT_OF_MEMORY ? LLM_ERR_INTERNAL : LLM_ERR_REQUEST;
    snprintf(res->message, sizeof res->message, "%s", tg_last_error());
    return;
  }
  int64_t ctx_len = tg_llm_n_ctx(r->model);
  if (n == 0 || (int64_t)n >= ctx_len) {
    tg_buffer_free(ids);
    res->error = n == 0 ? LLM_ERR_REQUEST : LLM_ERR_CONTEXT;
    snprintf(res->message, sizeof res->message, n == 0 ? "the prompt is empty" :
             "the prompt is %zu tokens; this model's context holds %lld", n, (long long)ctx_len - 1);
    return;
  }
  out->start(out->user, (int)n);
  tg_llm_gen_params p = {{rq->temperature, rq->top_k, rq->top_p, rq->has_seed ? rq->seed : (uint64_t)rand()},
                         rq->max_tokens, false};
  Emit e = {out};
  Gen g;
  tg_llm_stats st;
  s = generate(r, ids, n, &p, emit_to_client, &e, &g, &st);
  tg_buffer_free(ids);
  res->prompt_tokens = (int)n;
  res->completion_tokens = g.tokens;
  if (s != TG_OK) {
    res->error = LLM_ERR_INTERNAL;
    snprintf(res->message, sizeof res->message, "%s", tg_last_error());
    return;
  }
  res->finish = g.stopped_eog || g.stopped_by_emit ? LLM_FINISH_STOP : LLM_FINISH_LENGTH;
}

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static int run_server(Runner *r, const char *model_path, const char *host, int port, bool log) {
  if (!r->tok) { fprintf(stderr, "tg-llm: --serve needs the model's tokenizer: %s\n", tg_last_error()); return 1; }
  const char *name = strrchr(model_path, '/');
  LlmEngine engine = {r, name ? name + 1 : model_path, engine_generate};
  LlmServeOptions opt = {.host = host, .port = port, .log = log};
  LlmServer *srv = NULL;
  char err[256];
  if (!llm_serve_start(&opt, &engine, &srv, err, sizeof err)) {
    fprintf(stderr, "tg-llm: %s\n", err);
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  fprintf(stderr, "tg-llm: serving %s on http://%s:%d/v1 (chat template %s)\n", engine.model_name, host ? host : "127.0.0.1",
          llm_serve_port(srv), r->chat_template ? r->chat_template : "none");
  while (!stop_requested) pause();
  llm_serve_stop(srv);
  fprintf(stderr, "tg-llm: stopped\n");
  return 0;
}

/* ---- options ---- */

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
  const char *model = NULL, *prompt = NULL, *prompt_ids = NULL, *host = NULL, *template_name = NULL;
  double n = 32, temp = 0, top_k = 0, top_p = 1, seed = 0, threads = 0, ctx = 0, port = -1;
  bool ignore_eos = false, chat = false, log = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool ok = true;
    if (!strcmp(a, "--model")) model = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--prompt")) prompt = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--prompt-ids")) prompt_ids = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--chat-template")) template_name = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--host")) host = v, i++, ok = v != NULL;
    else if (!strcmp(a, "--serve")) ok = parse_num(a, v, 0, 65535, &port), i++;
    else if (!strcmp(a, "--n")) ok = parse_num(a, v, 1, 1 << 20, &n), i++;
    else if (!strcmp(a, "--temp")) ok = parse_num(a, v, 0, 100, &temp), i++;
    else if (!strcmp(a, "--top-k")) ok = parse_num(a, v, 0, 1 << 30, &top_k), i++;
    else if (!strcmp(a, "--top-p")) ok = parse_num(a, v, 1e-9, 1, &top_p), i++;
    else if (!strcmp(a, "--seed")) ok = parse_num(a, v, 0, 9007199254740992.0, &seed), i++;
    else if (!strcmp(a, "--threads")) ok = parse_num(a, v, 1, 1024, &threads), i++;
    else if (!strcmp(a, "--ctx")) ok = parse_num(a, v, 1, 1 << 24, &ctx), i++;
    else if (!strcmp(a, "--ignore-eos")) ignore_eos = true;
    else if (!strcmp(a, "--chat")) chat = true;
    else if (!strcmp(a, "--log")) log = true;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else { fprintf(stderr, "tg-llm: unknown option %s\n", a); ok = false; }
    if (!ok) { usage(stderr); return 2; }
  }
  int modes = (prompt != NULL) + (prompt_ids != NULL) + (port >= 0);
  if (!model || modes != 1 || (chat && !prompt)) { usage(stderr); return 2; }
  if (threads > 0) {
    char t[32];
    snprintf(t, sizeof t, "%d", (int)threads);
    setenv("NUM_CPU_THREADS", t, 1);
    tg_knobs_reload();
  }
  srand((unsigned)time(NULL));  /* the seed of a server request that names none */
  Runner r = {.ignore_eos = ignore_eos};
  if (tg_llm_load(model, &(tg_llm_options){.n_ctx = (int64_t)ctx}, &r.model) != TG_OK) {
    fprintf(stderr, "tg-llm: %s\n", tg_last_error());
    return 1;
  }
  const tg_llm_config *c = tg_llm_get_config(r.model);
  fprintf(stderr, "tg-llm: %s, %d layers, dim %d, %d/%d heads, vocab %d, %s weights, context %lld\n", c->arch,
          c->n_layer, c->dim, c->n_head, c->n_kv_head, c->vocab, tg_ggml_type_name(c->weight_type),
          (long long)tg_llm_n_ctx(r.model));
  if (tg_tokenizer_from_gguf(tg_llm_gguf(r.model), &r.tok) != TG_OK) r.tok = NULL;  /* tg_last_error says why */
  else r.chat_template = template_name ? template_name : tg_chat_template_name(r.tok);
  int rc = port >= 0 ? run_server(&r, model, host, (int)port, log)
                     : run_prompt(&r, prompt, prompt_ids, chat,
                                  &(tg_llm_gen_params){{temp, (int)top_k, top_p, (uint64_t)seed}, (int)n, ignore_eos});
  tg_tokenizer_free(r.tok);
  tg_llm_free(r.model);
  return rc;
}
