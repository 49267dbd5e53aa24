/* test_serve.c — the HTTP layer of tg-llm's server (tools/llm/serve.c) driven over loopback by a raw-socket HTTP/1.1
 * client: routes, JSON and SSE response shapes (every chunk parsed by cJSON), usage counts, stop strings across
 * chunk boundaries, the errors (bad JSON, bad fields, 404, 405, 413, context overflow), concurrent clients and a client
 * that goes away mid-stream. The engine here is a deterministic text generator (its output is a function of the
 * request), so every response can be checked exactly; the end-to-end run with a real model is tools/llm/serve_e2e.sh.
 * Built as its own program (build/test_llm_serve) because only tg-llm links libmicrohttpd and cJSON. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../tools/llm/serve.h"

static long passed, failed;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static void check_at(bool ok, int line, const char *fmt, ...) {
  pthread_mutex_lock(&count_mu);
  if (ok) passed++;
  else {
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  FAIL tests/llm/test_serve.c:%d: ", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
  }
  pthread_mutex_unlock(&count_mu);
}
#define CHECK(c) check_at((c), __LINE__, "%s", #c)
#define CHECK_STR(a, b) check_at((a) && strcmp((a), (b)) == 0, __LINE__, "%s == \"%s\" (got \"%s\")", #a, (b), (a) ? (a) : "(null)")

/* ---- the test engine: "words" of the last message (or the prompt), numbered, one text() per word ---- */
enum { CONTEXT = 64 };
static int engine_calls;
static void echo_generate(void *ctx, const LlmRequest *rq, const LlmOutput *out, LlmResult *res) {
  (void)ctx;
  engine_calls++;
  const char *src = rq->prompt ? rq->prompt : rq->messages[rq->n_messages - 1].content;
  int prompt_tokens = (int)strlen(src);
  for (size_t i = 0; rq->messages && i + 1 < rq->n_messages; i++) prompt_tokens += (int)strlen(rq->messages[i].content);
  if (prompt_tokens > CONTEXT) {
    res->error = LLM_ERR_CONTEXT;
    snprintf(res->message, sizeof res->message, "the prompt has %d tokens; the context holds %d", prompt_tokens, CONTEXT);
    return;
  }
  if (strcmp(src, "fail") == 0) {
    res->error = LLM_ERR_INTERNAL;
    snprintf(res->message, sizeof res->message, "the model failed");
    return;
  }
  out->start(out->user, prompt_tokens);
  res->prompt_tokens = prompt_tokens;
  int limit = rq->max_tokens > 0 ? rq->max_tokens : CONTEXT - prompt_tokens;
  int n = 0;
  bool slow = strncmp(src, "slow", 4) == 0;
  const char *p = src;
  res->finish = LLM_FINISH_STOP;
  while (*p) {
    if (n == limit) { res->finish = LLM_FINISH_LENGTH; break; }
    const char *e = strchr(p, ' ');
    size_t len = e ? (size_t)(e - p + 1) : strlen(p);
    n++;
    if (slow) usleep(20000);
    if (!out->text(out->user, p, len)) break;
    p += len;
  }
  res->completion_tokens = n;
}

/* ---- a raw HTTP/1.1 client ---- */
static int port;
typedef struct Reply { int status; char *headers; char *body; size_t body_len; } Reply;

static void reply_free(Reply *r) { free(r->headers); free(r->body); }

static int connect_server(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); return -1; }
  return fd;
}

static bool send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w; n -= (size_t)w;
  }
  return true;
}

/* sends raw bytes, reads to EOF (the request says Connection: close), splits status / headers / body, undoes
 * chunked transfer encoding */
static Reply http_raw(const char *req, size_t len) {
  Reply r = {0};
  int fd = connect_server();
  if (fd < 0) return r;
  send_all(fd, req, len);
  char *all = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 > cap) { cap = cap ? cap * 2 : 8192; all = realloc(all, cap); }
    ssize_t got = recv(fd, all + n, cap - n - 1, 0);
    if (got <= 0) break;
    n += (size_t)got;
  }
  close(fd);
  if (!all) return r;
  all[n] = 0;
  char *sep = strstr(all, "\r\n\r\n");
  if (!sep || sscanf(all, "HTTP/1.%*d %d", &r.status) != 1) { free(all); return r; }
  *sep = 0;
  r.headers = strdup(all);
  char *body = sep + 4;
  size_t blen = n - (size_t)(body - all);
  if (strcasestr(r.headers, "transfer-encoding: chunked")) {
    char *outp = malloc(blen + 1), *p = body, *end = body + blen;
    size_t o = 0;
    while (p < end) {
      char *nl = strstr(p, "\r\n");
      if (!nl) break;
      size_t sz = strtoul(p, NULL, 16);
      p = nl + 2;
      if (sz == 0 || p + sz > end) break;
      memcpy(outp + o, p, sz);
      o += sz;
      p += sz + 2;
    }
    outp[o] = 0;
    r.body = outp;
    r.body_len = o;
  } else {
    r.body = malloc(blen + 1);
    memcpy(r.body, body, blen);
    r.body[blen] = 0;
    r.body_len = blen;
  }
  free(all);
  return r;
}

static Reply http(const char *method, const char *path, const char *body) {
  char head[512];
  size_t blen = body ? strlen(body) : 0;
  int h = snprintf(head, sizeof head,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n", method, path, blen);
  char *req = malloc((size_t)h + blen + 1);
  memcpy(req, head, (size_t)h);
  if (body) memcpy(req + h, body, blen);
  Reply r = http_raw(req, (size_t)h + blen);
  free(req);
  return r;
}

static cJSON *body_json(const Reply *r) { return r->body ? cJSON_Parse(r->body) : NULL; }

static const char *jstr(const cJSON *o, const char *path) {   /* "a.b.0.c" */
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *cur = o;
  for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
    cur = (*tok >= '0' && *tok <= '9') ? cJSON_GetArrayItem(cur, atoi(tok)) : cJSON_GetObjectItemCaseSensitive(cur, tok);
  return cJSON_IsString(cur) ? cur->valuestring : NULL;
}
static double jnum(const cJSON *o, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *cur = o;
  for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
    cur = (*tok >= '0' && *tok <= '9') ? cJSON_GetArrayItem(cur, atoi(tok)) : cJSON_GetObjectItemCaseSensitive(cur, tok);
  return cJSON_IsNumber(cur) ? cur->valuedouble : -1;
}

/* an SSE body: every event parsed; the deltas joined; the finish reason; whether it ended with [DONE] */
typedef struct Stream { int events, bad_json; bool done, first_role; char text[4096]; char finish[32]; int usage_total; } Stream;
static Stream parse_stream(const Reply *r, bool chat) {
  Stream s = {0};
  s.usage_total = -1;
  const char *p = r->body ? r->body : "";
  while ((p = strstr(p, "data: "))) {
    p += 6;
    const char *e = strstr(p, "\n\n");
    if (!e) break;
    if (e - p == 6 && strncmp(p, "[DONE]", 6) == 0) { s.done = true; break; }
    cJSON *o = cJSON_ParseWithLength(p, (size_t)(e - p));
    if (!o) s.bad_json++;
    else {
      const char *piece = chat ? jstr(o, "choices.0.delta.content") : jstr(o, "choices.0.text");
      if (s.events == 0 && chat) s.first_role = jstr(o, "choices.0.delta.role") != NULL;
      if (piece) strncat(s.text, piece, sizeof s.text - strlen(s.text) - 1);
      const char *f = jstr(o, "choices.0.finish_reason");
      if (f) snprintf(s.finish, sizeof s.finish, "%s", f);
      if (jnum(o, "usage.total_tokens") >= 0) s.usage_total = (int)jnum(o, "usage.total_tokens");
      cJSON_Delete(o);
    }
    s.events++;
    p = e + 2;
  }
  return s;
}

static void test_models_and_routes(void) {
  Reply r = http("GET", "/v1/models", NULL);
  cJSON *o = body_json(&r);
  CHECK(r.status == 200);
  CHECK(r.headers && strcasestr(r.headers, "content-type: application/json"));
  CHECK_STR(jstr(o, "object"), "list");
  CHECK_STR(jstr(o, "data.0.id"), "echo-test");
  cJSON_Delete(o); reply_free(&r);

  r = http("GET", "/nope", NULL);
  o = body_json(&r);
  CHECK(r.status == 404);
  CHECK_STR(jstr(o, "error.type"), "invalid_request_error");
  cJSON_Delete(o); reply_free(&r);

  r = http("GET", "/v1/chat/completions", NULL);
  CHECK(r.status == 405);
  reply_free(&r);
  r = http("POST", "/v1/models", "{}");
  CHECK(r.status == 405);
  reply_free(&r);
}

static void test_chat(void) {
  Reply r = http("POST", "/v1/chat/completions",
                 "{\"model\":\"x\",\"messages\":[{\"role\":\"system\",\"content\":\"be kind\"},"
                 "{\"role\":\"user\",\"content\":\"hello big world\"}]}");
  cJSON *o = body_json(&r);
  CHECK(r.status == 200);
  CHECK_STR(jstr(o, "object"), "chat.completion");
  CHECK(jstr(o, "id") && strncmp(jstr(o, "id"), "chatcmpl-", 9) == 0);
  CHECK_STR(jstr(o, "choices.0.message.role"), "assistant");
  CHECK_STR(jstr(o, "choices.0.message.content"), "hello big world");
  CHECK_STR(jstr(o, "choices.0.finish_reason"), "stop");
  CHECK(jnum(o, "usage.prompt_tokens") == 22 && jnum(o, "usage.completion_tokens") == 3);
  CHECK(jnum(o, "usage.total_tokens") == 25);
  cJSON_Delete(o); reply_free(&r);

  /* content as text parts; max_tokens cuts with finish_reason length */
  r = http("POST", "/v1/chat/completions",
           "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a b \"},"
           "{\"type\":\"text\",\"text\":\"c d\"}]}],\"max_tokens\":2}");
  o = body_json(&r);
  CHECK(r.status == 200);
  CHECK_STR(jstr(o, "choices.0.message.content"), "a b ");
  CHECK_STR(jstr(o, "choices.0.finish_reason"), "length");
  cJSON_Delete(o); reply_free(&r);

  /* streaming: role first, deltas join to the same text, finish chunk, usage chunk, [DONE] */
  r = http("POST", "/v1/chat/completions",
           "{\"messages\":[{\"role\":\"user\",\"content\":\"one two three four\"}],\"stream\":true,"
           "\"stream_options\":{\"include_usage\":true}}");
  CHECK(r.status == 200);
  CHECK(r.headers && strcasestr(r.headers, "content-type: text/event-stream"));
  Stream s = parse_stream(&r, true);
  CHECK(s.bad_json == 0 && s.done && s.first_role);
  CHECK_STR(s.text, "one two three four");
  CHECK_STR(s.finish, "stop");
  CHECK(s.usage_total == 18 + 4);
  CHECK(s.events == 1 + 4 + 1 + 1);   /* role, 4 words, finish, usage */
  reply_free(&r);
}

static void test_completions_and_stop(void) {
  Reply r = http("POST", "/v1/completions", "{\"prompt\":\"x y z\",\"temperature\":0}");
  cJSON *o = body_json(&r);
  CHECK(r.status == 200);
  CHECK_STR(jstr(o, "object"), "text_completion");
  CHECK_STR(jstr(o, "choices.0.text"), "x y z");
  cJSON_Delete(o); reply_free(&r);

  r = http("POST", "/v1/completions", "{\"prompt\":[\"p q r\"],\"stream\":true}");
  Stream s = parse_stream(&r, false);
  CHECK(r.status == 200 && s.done && s.bad_json == 0);
  CHECK_STR(s.text, "p q r");
  reply_free(&r);

  /* a stop string spanning two text() pieces: the text before it, finish "stop", in both modes */
  r = http("POST", "/v1/completions", "{\"prompt\":\"alpha beta gamma delta\",\"stop\":[\"ta ga\",\"zzz\"]}");
  o = body_json(&r);
  CHECK_STR(jstr(o, "choices.0.text"), "alpha be");
  CHECK_STR(jstr(o, "choices.0.finish_reason"), "stop");
  cJSON_Delete(o); reply_free(&r);
  r = http("POST", "/v1/chat/completions",
           "{\"messages\":[{\"role\":\"user\",\"content\":\"alpha beta gamma delta\"}],\"stop\":\"ta ga\",\"stream\":true}");
  s = parse_stream(&r, true);
  CHECK(s.done);
  CHECK_STR(s.text, "alpha be");
  CHECK_STR(s.finish, "stop");
  reply_free(&r);
  /* UTF-8: the held-back tail never splits a character */
  r = http("POST", "/v1/chat/completions",
           "{\"messages\":[{\"role\":\"user\",\"content\":\"h\xc3\xa9llo w\xc3\xb6rld\"}],\"stop\":\"qqqq\",\"stream\":true}");
  s = parse_stream(&r, true);
  CHECK(s.done && s.bad_json == 0);
  CHECK_STR(s.text, "h\xc3\xa9llo w\xc3\xb6rld");
  reply_free(&r);
}

static void expect_400(const char *path, const char *body, const char *needle, int line) {
  Reply r = http("POST", path, body);
  cJSON *o = body_json(&r);
  const char *msg = jstr(o, "error.message");
  check_at(r.status == 400 && msg && strstr(msg, needle), line, "%s -> %d %s (want 400 with '%s')", body, r.status,
           msg ? msg : "(no message)", needle);
  check_at(jstr(o, "error.type") && strcmp(jstr(o, "error.type"), "invalid_request_error") == 0, line, "error type");
  cJSON_Delete(o); reply_free(&r);
}

static void test_errors(void) {
  const char *chat = "/v1/chat/completions";
  int calls = engine_calls;
  expect_400(chat, "{\"messages\": [", "not valid JSON", __LINE__);
  expect_400(chat, "", "not valid JSON", __LINE__);
  expect_400(chat, "[1,2]", "JSON object", __LINE__);
  expect_400(chat, "{}", "'messages'", __LINE__);
  expect_400(chat, "{\"messages\":[]}", "'messages'", __LINE__);
  expect_400(chat, "{\"messages\":\"hi\"}", "'messages'", __LINE__);
  expect_400(chat, "{\"messages\":[{\"content\":\"hi\"}]}", "role", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}", "wizard", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "content", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "text", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":\"hot\"}", "temperature", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":3}", "temperature", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":0}", "max_tokens", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":1.5}", "max_tokens", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_p\":0}", "top_p", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2}", "'n'", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":1}", "stream", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":[\"\"]}", "stop", __LINE__);
  expect_400(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":[1]}", "stop", __LINE__);
  expect_400("/v1/completions", "{\"prompt\":7}", "'prompt'", __LINE__);
  CHECK(engine_calls == calls);   /* none of them reached the model */

  /* the context: HTTP 400 context_length_exceeded, streaming or not */
  char big[256];
  snprintf(big, sizeof big, "{\"prompt\":\"%0100d\",\"stream\":true}", 7);
  Reply r = http("POST", "/v1/completions", big);
  cJSON *o = body_json(&r);
  CHECK(r.status == 400);
  CHECK_STR(jstr(o, "error.code"), "context_length_exceeded");
  cJSON_Delete(o); reply_free(&r);
  /* the model failing before its first token: 500 */
  r = http("POST", "/v1/completions", "{\"prompt\":\"fail\"}");
  o = body_json(&r);
  CHECK(r.status == 500);
  CHECK_STR(jstr(o, "error.message"), "the model failed");
  cJSON_Delete(o); reply_free(&r);

  /* a body over the limit (4 KiB in this test): 413, and the server still answers afterwards */
  size_t n = 10000;
  char *huge = malloc(n + 64);
  int h = snprintf(huge, 64, "{\"prompt\":\"");
  memset(huge + h, 'a', n);
  strcpy(huge + h + n, "\"}");
  r = http("POST", "/v1/completions", huge);
  CHECK(r.status == 413);
  reply_free(&r);
  free(huge);
  /* garbage that is not HTTP */
  const char junk[] = "\x01\x02 nonsense\r\n\r\n";
  r = http_raw(junk, sizeof junk - 1);
  CHECK(r.status == 0 || r.status == 400);
  reply_free(&r);
  r = http("GET", "/v1/models", NULL);
  CHECK(r.status == 200);
  reply_free(&r);
}

/* concurrent clients: each gets its own complete answer */
typedef struct Client { int i; bool ok; } Client;
static void *client_main(void *arg) {
  Client *c = arg;
  char body[256], want[128];
  snprintf(want, sizeof want, "slow client %d says %d", c->i, c->i * 7);
  snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"stream\":%s}", want,
           c->i % 2 ? "true" : "false");
  Reply r = http("POST", "/v1/chat/completions", body);
  if (c->i % 2) {
    Stream s = parse_stream(&r, true);
    c->ok = r.status == 200 && s.done && strcmp(s.text, want) == 0;
  } else {
    cJSON *o = body_json(&r);
    c->ok = r.status == 200 && jstr(o, "choices.0.message.content") &&
            strcmp(jstr(o, "choices.0.message.content"), want) == 0;
    cJSON_Delete(o);
  }
  reply_free(&r);
  return NULL;
}

static void test_concurrent(void) {
  enum { N = 8 };
  pthread_t t[N];
  Client c[N];
  for (int i = 0; i < N; i++) { c[i] = (Client){i, false}; pthread_create(&t[i], NULL, client_main, &c[i]); }
  int ok = 0;
  for (int i = 0; i < N; i++) { pthread_join(t[i], NULL); ok += c[i].ok; }
  CHECK(ok == N);
}

/* a client that leaves mid-stream: the model is told to stop, the server goes on */
static void test_disconnect(void) {
  const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"slow a b c d e f g h i j k l m n o p q r\"}],"
                     "\"stream\":true}";
  char req[512];
  int h = snprintf(req, sizeof req, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                   strlen(body), body);
  int fd = connect_server();
  CHECK(fd >= 0 && send_all(fd, req, (size_t)h));
  char buf[256];
  CHECK(recv(fd, buf, sizeof buf, 0) > 0);   /* the stream has begun */
  close(fd);
  Reply r = http("POST", "/v1/completions", "{\"prompt\":\"still here\"}");
  cJSON *o = body_json(&r);
  CHECK(r.status == 200);
  CHECK_STR(jstr(o, "choices.0.text"), "still here");
  cJSON_Delete(o); reply_free(&r);
}

int main(void) {
  LlmEngine engine = {NULL, "echo-test", echo_generate};
  LlmServeOptions opt = {.port = 0, .max_body_bytes = 4096};
  LlmServer *s;
  char err[256];
  if (!llm_serve_start(&opt, &engine, &s, err, sizeof err)) {
    fprintf(stderr, "serve: %s\n", err);
    printf("serve: 0 passed, 1 failed\n0 passed, 1 failed\n");
    return 1;
  }
  port = llm_serve_port(s);
  CHECK(port > 0);
  /* options the server refuses */
  LlmServer *bad;
  LlmServeOptions bad_host = {.host = "not-an-address"};
  CHECK(!llm_serve_start(&bad_host, &engine, &bad, err, sizeof err) && strstr(err, "not-an-address"));
  LlmServeOptions same_port = {.port = port};
  CHECK(!llm_serve_start(&same_port, &engine, &bad, err, sizeof err) && strstr(err, "cannot listen"));

  test_models_and_routes();
  test_chat();
  test_completions_and_stop();
  test_errors();
  test_concurrent();
  test_disconnect();
  llm_serve_stop(s);
  printf("serve: %ld passed, %ld failed (%s)\n", passed, failed, "tools/llm/serve.c over loopback");
  printf("%ld passed, %ld failed\n", passed, failed);
  return failed ? 1 : 0;
}
