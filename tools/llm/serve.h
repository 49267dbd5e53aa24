/* serve.h — tg-llm's OpenAI-compatible HTTP server (serve.c): GET /v1/models, POST /v1/chat/completions and
 * POST /v1/completions, JSON or SSE streaming, as tinygrad's llm/serve.py and the OpenAI API shape them.
 *
 * The server knows nothing about models: it calls an LlmEngine, whose generate() renders and tokenizes the request,
 * runs the model and hands back text as it is decoded. generate() is only ever called from the server's one worker
 * thread (the library is used from one thread at a time), so concurrent clients queue for the model in arrival order
 * while each connection streams its own request's text. */
#ifndef TG_LLM_SERVE_H
#define TG_LLM_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct LlmMessage { const char *role; const char *content; } LlmMessage;

/* one request, validated by the server: sampling values are in range, max_tokens <= 0 means "up to the context" */
typedef struct LlmRequest {
  const LlmMessage *messages;  /* chat completions; NULL for /v1/completions */
  size_t n_messages;
  const char *prompt;          /* /v1/completions; NULL for chat */
  int max_tokens;
  double temperature;          /* 0: greedy */
  double top_p;                /* 1: off */
  int top_k;                   /* 0: off */
  bool has_seed;
  uint64_t seed;
} LlmRequest;

/* where generate() sends its output: start() once the prompt is accepted (before the first token; a request refused
 * before start() becomes an HTTP error instead of a stream), then text() per decoded piece (valid UTF-8). text()
 * returning false means stop now (the client went away or a stop string matched). */
typedef struct LlmOutput {
  void *user;
  void (*start)(void *user, int prompt_tokens);
  bool (*text)(void *user, const char *text, size_t len);
} LlmOutput;

typedef enum LlmError {
  LLM_OK = 0,
  LLM_ERR_CONTEXT,       /* the prompt does not fit the context: HTTP 400 context_length_exceeded */
  LLM_ERR_REQUEST,       /* the request cannot be served as asked (e.g. a role the template lacks): HTTP 400 */
  LLM_ERR_INTERNAL       /* the model failed: HTTP 500 (or an error event on a stream) */
} LlmError;

typedef enum LlmFinish { LLM_FINISH_STOP = 0, LLM_FINISH_LENGTH } LlmFinish;

typedef struct LlmResult {
  int prompt_tokens, completion_tokens;
  LlmFinish finish;      /* STOP: end-of-generation token (or text() said stop); LENGTH: max_tokens or context */
  LlmError error;
  char message[256];     /* for an error: what went wrong */
} LlmResult;

typedef struct LlmEngine {
  void *ctx;
  const char *model_name;
  /* fills *res (zeroed by the caller); never called from two threads at once */
  void (*generate)(void *ctx, const LlmRequest *rq, const LlmOutput *out, LlmResult *res);
} LlmEngine;

typedef struct LlmServeOptions {
  const char *host;        /* address to bind; NULL: 127.0.0.1 */
  int port;                /* 0: any free port (llm_serve_port tells which) */
  size_t max_body_bytes;   /* a larger request body is HTTP 413; 0: 1 MiB */
  int max_queued;          /* requests waiting for the model beyond this are HTTP 503; 0: 64 */
  int max_connections;     /* 0: 128 */
  bool log;                /* one line per request on stderr */
} LlmServeOptions;

typedef struct LlmServer LlmServer;

/* starts the HTTP daemon and the worker thread; on failure returns false with the reason in err */
bool llm_serve_start(const LlmServeOptions *opt, const LlmEngine *engine, LlmServer **out, char *err, size_t errlen);
int llm_serve_port(const LlmServer *s);
/* stops accepting, finishes the request the model is on, fails the queued ones, joins every thread, frees all */
void llm_serve_stop(LlmServer *s);

#endif
