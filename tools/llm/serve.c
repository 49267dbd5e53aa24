/* serve.c — the OpenAI-compatible HTTP server of tg-llm (serve.h says what it offers).
 *
 * libmicrohttpd runs a thread per connection; the access handler collects the body (bounded: HTTP 413 beyond
 * max_body_bytes), parses it with cJSON, validates every field it uses (HTTP 400 naming the field), and queues a Job
 * for the one worker thread that owns the model (HTTP 503 when the queue is full). The connection thread then waits
 * until the job has started or failed: a failure before start() is an HTTP error; after it, a non-streaming request
 * waits for the whole text and answers one JSON object, a streaming one answers `text/event-stream` whose reader
 * callback blocks on the job's buffer and sends each chunk as the worker appends it (`data: {json}\n\n`, closed by
 * `data: [DONE]`). Stop strings are matched in the worker, holding back the text that could still begin one. A job is
 * shared by its connection and the worker and freed by whichever lets go last; a client that disconnects marks it
 * cancelled and the next text() returns false, so the model stops early. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "serve.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_STOPS = 4, MAX_STOP_LEN = 64 };

/* ---- a growable byte buffer ---- */
typedef struct Buf { char *p; size_t len, cap; } Buf;

static bool buf_add(Buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p; b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return true;
}

/* ---- jobs: one request on its way through the worker ---- */
typedef struct Job {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;                    /* the connection and the worker */
  struct Job *next;            /* queue link */
  /* the request (owned copies) */
  bool chat, stream, include_usage;
  LlmMessage *msgs; size_t n_msgs;
  char *prompt;
  LlmRequest rq;
  char *stops[MAX_STOPS]; int n_stops; size_t max_stop;
  char id[40]; long long created;
  const char *model;
  /* the worker's side */
  bool started, done, cancelled, stopped_by_string;
  int prompt_tokens;
  Buf held;                    /* text not yet released (may begin a stop string) */
  Buf text;                    /* non-streaming: the whole completion */
  Buf out;                     /* streaming: SSE bytes not yet read by the connection */
  size_t out_pos;
  LlmResult res;
} Job;

struct LlmServer {
  struct MHD_Daemon *daemon;
  LlmEngine engine;
  LlmServeOptions opt;
  pthread_t worker;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  Job *head, *tail;
  int queued;
  bool stopping;
  uint64_t id_counter;
};

static void job_release(Job *j) {
  pthread_mutex_lock(&j->mu);
  int left = --j->refs;
  pthread_mutex_unlock(&j->mu);
  if (left > 0) return;
  for (size_t i = 0; i < j->n_msgs; i++) { free((char *)j->msgs[i].role); free((char *)j->msgs[i].content); }
  free(j->msgs);
  free(j->prompt);
  for (int i = 0; i < j->n_stops; i++) free(j->stops[i]);
  free(j->held.p); free(j->text.p); free(j->out.p);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

/* ---- JSON output ---- */
static char *json_print_free(cJSON *o) {
  char *s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}

static cJSON *error_object(const char *message, const char *type, const char *code) {
  cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
  cJSON_AddStringToObject(e, "message", message);
  cJSON_AddStringToObject(e, "type", type);
  if (code) cJSON_AddStringToObject(e, "code", code); else cJSON_AddNullToObject(e, "code");
  return root;
}

static void add_usage(cJSON *root, int prompt, int completion) {
  cJSON *u = cJSON_AddObjectToObject(root, "usage");
  cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
  cJSON_AddNumberToObject(u, "completion_tokens", completion);
  cJSON_AddNumberToObject(u, "total_tokens", prompt + completion);
}

static const char *finish_name(const Job *j) {
  return j->stopped_by_string || j->res.finish == LLM_FINISH_STOP ? "stop" : "length";
}

/* the common head of every response object */
static cJSON *response_head(const Job *j, const char *object) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "id", j->id);
  cJSON_AddStringToObject(root, "object", object);
  cJSON_AddNumberToObject(root, "created", (double)j->created);
  cJSON_AddStringToObject(root, "model", j->model);
  return root;
}

/* one streaming chunk: a chat delta {role?, content?} or a completion's text; finish NULL = null */
static bool sse_chunk(Job *j, const char *role, const char *content, size_t len, const char *finish) {
  cJSON *root = response_head(j, j->chat ? "chat.completion.chunk" : "text_completion");
  cJSON *choices = cJSON_AddArrayToObject(root, "choices"), *c = cJSON_CreateObject();
  cJSON_AddItemToArray(choices, c);
  cJSON_AddNumberToObject(c, "index", 0);
  char *piece = NULL;
  if (content) {
    piece = malloc(len + 1);
    if (!piece) { cJSON_Delete(root); return false; }
    memcpy(piece, content, len); piece[len] = 0;
  }
  if (j->chat) {
    cJSON *d = cJSON_AddObjectToObject(c, "delta");
    if (role) cJSON_AddStringToObject(d, "role", role);
    if (piece) cJSON_AddStringToObject(d, "content", piece);
  } else {
    cJSON_AddStringToObject(c, "text", piece ? piece : "");
    cJSON_AddNullToObject(c, "logprobs");
  }
  if (finish) cJSON_AddStringToObject(c, "finish_reason", finish); else cJSON_AddNullToObject(c, "finish_reason");
  free(piece);
  char *s = json_print_free(root);
  if (!s) return false;
  bool ok = buf_add(&j->out, "data: ", 6) && buf_add(&j->out, s, strlen(s)) && buf_add(&j->out, "\n\n", 2);
  free(s);
  return ok;
}

/* ---- the worker's output callbacks (called with nothing locked, from the worker thread) ---- */
static void out_start(void *user, int prompt_tokens) {
  Job *j = user;
  pthread_mutex_lock(&j->mu);
  j->started = true;
  j->prompt_tokens = prompt_tokens;
  if (j->stream && j->chat) sse_chunk(j, "assistant", "", 0, NULL);
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

/* releases n bytes of held text to the client (called locked) */
static void release_text(Job *j, size_t n) {
  if (n == 0) return;
  if (j->stream) sse_chunk(j, NULL, j->held.p, n, NULL);
  else buf_add(&j->text, j->held.p, n);
  memmove(j->held.p, j->held.p + n, j->held.len - n);
  j->held.len -= n;
  j->held.p[j->held.len] = 0;
}

/* model text into b: cJSON's strings are C strings, so a NUL byte (a random model's token can be one) goes out as
 * U+FFFD instead of cutting the text short */
static bool buf_add_text(Buf *b, const char *text, size_t len) {
  for (const char *nul; len && (nul = memchr(text, 0, len)); len -= (size_t)(nul - text) + 1, text = nul + 1)
    if (!buf_add(b, text, (size_t)(nul - text)) || !buf_add(b, "\xEF\xBF\xBD", 3)) return false;
  return buf_add(b, text, len);
}

static bool out_text(void *user, const char *text, size_t len) {
  Job *j = user;
  pthread_mutex_lock(&j->mu);
  bool go = !j->cancelled && buf_add_text(&j->held, text, len);
  if (go) {
    size_t cut = j->held.len;        /* the earliest stop string, if any */
    for (int i = 0; i < j->n_stops; i++) {
      const char *hit = memmem(j->held.p, j->held.len, j->stops[i], strlen(j->stops[i]));
      if (hit && (size_t)(hit - j->held.p) < cut) cut = (size_t)(hit - j->held.p);
    }
    if (cut < j->held.len) {
      release_text(j, cut);
      j->held.len = 0;
      j->stopped_by_string = true;
      go = false;
    } else {
      /* keep the tail that could still start a stop string, cut at a UTF-8 character boundary */
      size_t keep = j->max_stop > 0 ? j->max_stop - 1 : 0, n = j->held.len > keep ? j->held.len - keep : 0;
      while (n > 0 && n < j->held.len && ((unsigned char)j->held.p[n] & 0xC0) == 0x80) n--;
      release_text(j, n);
    }
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
  return go;
}

/* after generate(): the rest of the held text, the closing chunks, done */
static void job_finish(Job *j) {
  pthread_mutex_lock(&j->mu);
  if (j->res.error == LLM_OK) release_text(j, j->held.len);
  if (j->stream && j->started) {
    if (j->res.error != LLM_OK) {
      char *s = json_print_free(error_object(j->res.message, "server_error", NULL));
      if (s) { buf_add(&j->out, "data: ", 6); buf_add(&j->out, s, strlen(s)); buf_add(&j->out, "\n\n", 2); free(s); }
    } else {
      sse_chunk(j, NULL, NULL, 0, finish_name(j));
      if (j->include_usage) {
        cJSON *root = response_head(j, j->chat ? "chat.completion.chunk" : "text_completion");
        cJSON_AddArrayToObject(root, "choices");
        add_usage(root, j->prompt_tokens, j->res.completion_tokens);
        char *s = json_print_free(root);
        if (s) { buf_add(&j->out, "data: ", 6); buf_add(&j->out, s, strlen(s)); buf_add(&j->out, "\n\n", 2); free(s); }
      }
    }
    buf_add(&j->out, "data: [DONE]\n\n", 14);
  }
  j->done = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

static void *worker_main(void *arg) {
  LlmServer *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (!s->head && !s->stopping) pthread_cond_wait(&s->cv, &s->mu);
    Job *j = s->head;
    if (!j) { pthread_mutex_unlock(&s->mu); break; }   /* stopping with an empty queue */
    s->head = j->next;
    if (!s->head) s->tail = NULL;
    s->queued--;
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);

    pthread_mutex_lock(&j->mu);
    bool cancelled = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    memset(&j->res, 0, sizeof j->res);
    if (stopping) {
      j->res.error = LLM_ERR_INTERNAL;
      snprintf(j->res.message, sizeof j->res.message, "the server is shutting down");
    } else if (!cancelled) {
      LlmOutput out = {j, out_start, out_text};
      s->engine.generate(s->engine.ctx, &j->rq, &out, &j->res);
      if (j->res.error == LLM_OK && !j->started) out_start(j, j->res.prompt_tokens);
    }
    job_finish(j);
    job_release(j);
  }
  return NULL;
}

/* ---- requests ---- */
typedef struct Request { Buf body; bool too_big; } Request;

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, cJSON *obj) {
  char *s = json_print_free(obj);
  if (!s) return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
  if (!r) { free(s); return MHD_NO; }
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *type, const char *code,
                                  const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return send_json(c, status, error_object(msg, type, code));
}

/* a JSON number that is an integer in [lo, hi] */
static bool json_int(const cJSON *v, double lo, double hi, long long *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
      v->valuedouble < lo || v->valuedouble > hi) return false;
  *out = (long long)v->valuedouble;
  return true;
}

static char *dup_string(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

/* message content: a string, or an array of {"type":"text","text":...} parts joined */
static char *message_content(const cJSON *content, char *why, size_t whylen, size_t index) {
  if (cJSON_IsString(content)) return dup_string(content->valuestring);
  if (cJSON_IsNull(content)) return dup_string("");
  if (cJSON_IsArray(content)) {
    Buf b = {0};
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
      const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
      const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
      if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text)) {
        snprintf(why, whylen, "messages[%zu].content: only parts {\"type\": \"text\", \"text\": string} are supported",
                 index);
        free(b.p);
        return NULL;
      }
      if (!buf_add(&b, text->valuestring, strlen(text->valuestring))) { free(b.p); return NULL; }
    }
    return b.p ? b.p : dup_string("");
  }
  snprintf(why, whylen, "messages[%zu].content must be a string or an array of text parts", index);
  return NULL;
}

/* fills the job from the request body; false with the reason in why */
static bool parse_request(Job *j, const cJSON *root, char *why, size_t whylen) {
  if (!cJSON_IsObject(root)) { snprintf(why, whylen, "the request body must be a JSON object"); return false; }
  j->rq.temperature = 1.0;
  j->rq.top_p = 1.0;
  if (j->chat) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
      snprintf(why, whylen, "'messages' must be a non-empty array"); return false;
    }
    size_t n = (size_t)cJSON_GetArraySize(msgs);
    j->msgs = calloc(n, sizeof *j->msgs);
    if (!j->msgs) { snprintf(why, whylen, "out of memory"); return false; }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
      size_t i = j->n_msgs;
      const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
      if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
        snprintf(why, whylen, "messages[%zu] must be an object with a string 'role'", i); return false;
      }
      const char *r = role->valuestring;
      if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "developer") &&
          strcmp(r, "tool")) {
        snprintf(why, whylen, "messages[%zu].role '%.40s' is not one of system, developer, user, assistant, tool", i, r);
        return false;
      }
      char *content = message_content(cJSON_GetObjectItemCaseSensitive(m, "content"), why, whylen, i);
      if (!content) return false;
      j->msgs[i].role = dup_string(r);
      j->msgs[i].content = content;
      j->n_msgs++;
      if (!j->msgs[i].role) { snprintf(why, whylen, "out of memory"); return false; }
    }
    j->rq.messages = j->msgs;
    j->rq.n_messages = j->n_msgs;
  } else {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
      p = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsString(p)) { snprintf(why, whylen, "'prompt' must be a string"); return false; }
    if (!(j->prompt = dup_string(p->valuestring))) { snprintf(why, whylen, "out of memory"); return false; }
    j->rq.prompt = j->prompt;
  }
  const cJSON *v;
  long long iv;
  const char *mt = cJSON_GetObjectItemCaseSensitive(root, "max_completion_tokens") ? "max_completion_tokens"
                                                                                     : "max_tokens";
  if ((v = cJSON_GetObjectItemCaseSensitive(root, mt)) && !cJSON_IsNull(v)) {
    if (!json_int(v, 1, 1 << 30, &iv)) { snprintf(why, whylen, "'%s' must be an integer >= 1", mt); return false; }
    j->rq.max_tokens = (int)iv;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "temperature")) && !cJSON_IsNull(v)) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 2)) {
      snprintf(why, whylen, "'temperature' must be a number in [0, 2]"); return false;
    }
    j->rq.temperature = v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "top_p")) && !cJSON_IsNull(v)) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 1)) {
      snprintf(why, whylen, "'top_p' must be a number in (0, 1]"); return false;
    }
    j->rq.top_p = v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "top_k")) && !cJSON_IsNull(v)) {
    if (!json_int(v, 0, 1 << 30, &iv)) { snprintf(why, whylen, "'top_k' must be an integer >= 0"); return false; }
    j->rq.top_k = (int)iv;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "seed")) && !cJSON_IsNull(v)) {
    if (!json_int(v, -9007199254740991.0, 9007199254740991.0, &iv)) {
      snprintf(why, whylen, "'seed' must be an integer"); return false;
    }
    j->rq.has_seed = true;
    j->rq.seed = (uint64_t)iv;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "n")) && !cJSON_IsNull(v)) {
    if (!json_int(v, 1, 1, &iv)) { snprintf(why, whylen, "'n' other than 1 is not supported"); return false; }
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "stream")) && !cJSON_IsNull(v)) {
    if (!cJSON_IsBool(v)) { snprintf(why, whylen, "'stream' must be a boolean"); return false; }
    j->stream = cJSON_IsTrue(v);
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "stream_options")) && !cJSON_IsNull(v)) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(v, "include_usage");
    if (!cJSON_IsObject(v) || (u && !cJSON_IsBool(u))) {
      snprintf(why, whylen, "'stream_options' must be an object with a boolean 'include_usage'"); return false;
    }
    j->include_usage = cJSON_IsTrue(u);
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "stop")) && !cJSON_IsNull(v)) {
    const cJSON *one = v, *item;
    if (cJSON_IsString(v)) {
      one = NULL;
      j->stops[j->n_stops++] = dup_string(v->valuestring);
    } else if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MAX_STOPS) {
      snprintf(why, whylen, "'stop' must be a string or an array of at most %d strings", MAX_STOPS); return false;
    }
    if (one) cJSON_ArrayForEach(item, one) {
      if (!cJSON_IsString(item)) { snprintf(why, whylen, "'stop' must hold strings"); return false; }
      j->stops[j->n_stops++] = dup_string(item->valuestring);
    }
    for (int i = 0; i < j->n_stops; i++) {
      size_t n = j->stops[i] ? strlen(j->stops[i]) : 0;
      if (n == 0 || n > MAX_STOP_LEN) {
        snprintf(why, whylen, "each stop string must have 1 to %d bytes", MAX_STOP_LEN); return false;
      }
      if (n > j->max_stop) j->max_stop = n;
    }
  }
  return true;
}

/* streaming: the connection thread reads the job's SSE bytes as the worker appends them */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  Job *j = cls;
  pthread_mutex_lock(&j->mu);
  while (j->out_pos == j->out.len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
  if (j->out_pos == j->out.len) { pthread_mutex_unlock(&j->mu); return MHD_CONTENT_READER_END_OF_STREAM; }
  size_t n = j->out.len - j->out_pos;
  if (n > max) n = max;
  memcpy(buf, j->out.p + j->out_pos, n);
  j->out_pos += n;
  pthread_mutex_unlock(&j->mu);
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  Job *j = cls;
  pthread_mutex_lock(&j->mu);
  if (!j->done) j->cancelled = true;
  pthread_mutex_unlock(&j->mu);
  job_release(j);
}

static enum MHD_Result run_completion(LlmServer *s, struct MHD_Connection *c, bool chat, const Request *req) {
  cJSON *root = cJSON_ParseWithLength(req->body.p ? req->body.p : "", req->body.len);
  if (!root) return send_error(c, 400, "invalid_request_error", NULL, "the request body is not valid JSON");
  Job *j = calloc(1, sizeof *j);
  if (!j) { cJSON_Delete(root); return send_error(c, 500, "server_error", NULL, "out of memory"); }
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->refs = 1;
  j->chat = chat;
  j->model = s->engine.model_name;
  char why[256] = "";
  bool ok = parse_request(j, root, why, sizeof why);
  cJSON_Delete(root);
  if (!ok) { job_release(j); return send_error(c, 400, "invalid_request_error", NULL, "%s", why); }

  pthread_mutex_lock(&s->mu);
  uint64_t n = ++s->id_counter;
  pthread_mutex_unlock(&s->mu);
  uint64_t h = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ n * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31; h *= 0x94D049BB133111EBull; h ^= h >> 29;
  snprintf(j->id, sizeof j->id, "%s-%016" PRIx64 "%08" PRIx64, chat ? "chatcmpl" : "cmpl", h, n & 0xffffffffu);
  j->created = (long long)time(NULL);

  pthread_mutex_lock(&s->mu);
  bool full = s->queued >= s->opt.max_queued, stopping = s->stopping;
  if (!full && !stopping) {
    j->refs++;
    if (s->tail) s->tail->next = j; else s->head = j;
    s->tail = j;
    s->queued++;
    pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  if (full || stopping) {
    job_release(j);
    return send_error(c, 503, "server_error", NULL, stopping ? "the server is shutting down"
                                                             : "too many requests are waiting for the model");
  }
  pthread_mutex_lock(&j->mu);
  while (!j->started && !j->done) pthread_cond_wait(&j->cv, &j->mu);
  bool failed = !j->started;
  pthread_mutex_unlock(&j->mu);
  if (failed) {   /* refused before the first token: an HTTP error */
    enum MHD_Result r = j->res.error == LLM_ERR_CONTEXT
      ? send_error(c, 400, "invalid_request_error", "context_length_exceeded", "%s", j->res.message)
      : j->res.error == LLM_ERR_REQUEST ? send_error(c, 400, "invalid_request_error", NULL, "%s", j->res.message)
                                        : send_error(c, 500, "server_error", NULL, "%s", j->res.message);
    job_release(j);
    return r;
  }
  if (j->stream) {
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, j, stream_free);
    if (!r) { stream_free(j); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
  }
  pthread_mutex_lock(&j->mu);
  while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
  pthread_mutex_unlock(&j->mu);
  enum MHD_Result ret;
  if (j->res.error != LLM_OK) {
    ret = send_error(c, 500, "server_error", NULL, "%s", j->res.message);
  } else {
    cJSON *resp = response_head(j, chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(resp, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (chat) {
      cJSON *m = cJSON_AddObjectToObject(ch, "message");
      cJSON_AddStringToObject(m, "role", "assistant");
      cJSON_AddStringToObject(m, "content", j->text.p ? j->text.p : "");
    } else {
      cJSON_AddStringToObject(ch, "text", j->text.p ? j->text.p : "");
      cJSON_AddNullToObject(ch, "logprobs");
    }
    cJSON_AddStringToObject(ch, "finish_reason", finish_name(j));
    add_usage(resp, j->prompt_tokens, j->res.completion_tokens);
    ret = send_json(c, 200, resp);
  }
  job_release(j);
  return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
  (void)version;
  LlmServer *s = cls;
  Request *req = *con_cls;
  if (!req) {   /* the headers have arrived: start collecting the body */
    if (!(req = calloc(1, sizeof *req))) return MHD_NO;
    *con_cls = req;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (!req->too_big && req->body.len + *upload_size > s->opt.max_body_bytes) {
      req->too_big = true;
      free(req->body.p);
      req->body = (Buf){0};
    }
    if (!req->too_big && !buf_add(&req->body, upload_data, *upload_size)) return MHD_NO;
    *upload_size = 0;
    return MHD_YES;
  }
  if (s->opt.log) fprintf(stderr, "tg-llm serve: %s %s (%zu bytes)\n", method, url, req->body.len);
  bool chat = strcmp(url, "/v1/chat/completions") == 0, completion = strcmp(url, "/v1/completions") == 0;
  if (strcmp(url, "/v1/models") == 0) {
    if (strcmp(method, "GET") != 0) return send_error(c, 405, "invalid_request_error", NULL, "%s %s: use GET", method, url);
    cJSON *root = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(root, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON_AddItemToArray(data, m);
    cJSON_AddStringToObject(m, "id", s->engine.model_name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddStringToObject(m, "owned_by", "tinygrad.c");
    return send_json(c, 200, root);
  }
  if (strcmp(url, "/health") == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "status", "ok");
    return send_json(c, 200, root);
  }
  if (!chat && !completion) return send_error(c, 404, "invalid_request_error", "not_found", "no route %s %s", method, url);
  if (strcmp(method, "POST") != 0) return send_error(c, 405, "invalid_request_error", NULL, "%s %s: use POST", method, url);
  if (req->too_big)
    return send_error(c, 413, "invalid_request_error", NULL, "the request body is over the limit of %zu bytes",
                      s->opt.max_body_bytes);
  return run_completion(s, c, chat, req);
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)cls; (void)c; (void)toe;
  Request *req = *con_cls;
  if (req) { free(req->body.p); free(req); }
  *con_cls = NULL;
}

bool llm_serve_start(const LlmServeOptions *opt, const LlmEngine *engine, LlmServer **out, char *err, size_t errlen) {
  *out = NULL;
  if (!engine || !engine->generate || !engine->model_name) {
    snprintf(err, errlen, "llm_serve_start: no engine");
    return false;
  }
  LlmServer *s = calloc(1, sizeof *s);
  if (!s) { snprintf(err, errlen, "llm_serve_start: out of memory"); return false; }
  s->engine = *engine;
  s->opt = opt ? *opt : (LlmServeOptions){0};
  if (!s->opt.host) s->opt.host = "127.0.0.1";
  if (!s->opt.max_body_bytes) s->opt.max_body_bytes = 1u << 20;
  if (!s->opt.max_queued) s->opt.max_queued = 64;
  if (!s->opt.max_connections) s->opt.max_connections = 128;
  if (s->opt.port < 0 || s->opt.port > 65535) {
    snprintf(err, errlen, "serve: port %d is not in 0..65535", s->opt.port);
    free(s);
    return false;
  }
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)s->opt.port);
  if (inet_pton(AF_INET, s->opt.host, &addr.sin_addr) != 1) {
    snprintf(err, errlen, "serve: '%s' is not an IPv4 address", s->opt.host);
    free(s);
    return false;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
    snprintf(err, errlen, "serve: cannot start the worker thread");
    pthread_mutex_destroy(&s->mu); pthread_cond_destroy(&s->cv); free(s);
    return false;
  }
  s->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                               handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->opt.max_connections,
                               MHD_OPTION_CONNECTION_TIMEOUT, 600u,
                               MHD_OPTION_NOTIFY_COMPLETED, request_done, s, MHD_OPTION_END);
  if (!s->daemon) {
    snprintf(err, errlen, "serve: cannot listen on %s:%d (in use, or not allowed)", s->opt.host, s->opt.port);
    pthread_mutex_lock(&s->mu); s->stopping = true; pthread_cond_broadcast(&s->cv); pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    pthread_mutex_destroy(&s->mu); pthread_cond_destroy(&s->cv); free(s);
    return false;
  }
  *out = s;
  return true;
}

int llm_serve_port(const LlmServer *s) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info ? (int)info->port : -1;
}

void llm_serve_stop(LlmServer *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  /* the worker fails what is queued and ends; then the daemon's connections (waiting on their jobs) can finish */
  pthread_join(s->worker, NULL);
  MHD_stop_daemon(s->daemon);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
