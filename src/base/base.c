/* base.c — allocation, panic, string builder, hashing, env knobs and the per-thread error slot. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>

void tg_panic(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "tinygrad.c internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

static void *check_alloc(void *p, size_t n) {
  if (TG_UNLIKELY(!p && n)) TG_PANIC("out of memory allocating %zu bytes", n);
  return p;
}
void *tg_malloc(size_t n) { return check_alloc(malloc(n ? n : 1), n); }
void *tg_calloc(size_t count, size_t size) { return check_alloc(calloc(count ? count : 1, size ? size : 1), count * size); }
void *tg_realloc(void *p, size_t n) { return check_alloc(realloc(p, n ? n : 1), n); }
void tg_free(void *p) { free(p); }
char *tg_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(tg_malloc(n), s, n);
}

void sb_init(StrBuf *b) { b->s = NULL; b->len = b->cap = 0; }
void sb_free(StrBuf *b) { tg_free(b->s); sb_init(b); }
static void sb_grow(StrBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t nc = b->cap ? b->cap : 64;
  while (nc < b->len + extra + 1) nc *= 2;
  b->s = tg_realloc(b->s, nc);
  b->cap = nc;
}
void sb_putc(StrBuf *b, char c) { sb_grow(b, 1); b->s[b->len++] = c; b->s[b->len] = 0; }
void sb_puts(StrBuf *b, const char *s) {
  size_t n = strlen(s);
  sb_grow(b, n);
  memcpy(b->s + b->len, s, n + 1);
  b->len += n;
}
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  sb_grow(b, (size_t)n);
  if ((size_t)n < sizeof small) memcpy(b->s + b->len, small, (size_t)n + 1);
  else vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}
void sb_printf(StrBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}
char *sb_take(StrBuf *b) {
  char *s = b->s ? b->s : tg_strdup("");
  sb_init(b);
  return s;
}

uint64_t tg_hash_bytes(const void *p, size_t n, uint64_t seed) {
  const unsigned char *c = p;
  uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, c, 8);
    h = tg_hash_mix(h, v);
    c += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  memcpy(&tail, c, n);
  return tg_hash_mix(h, tail);
}

int64_t tg_gcd64(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
  while (y) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  return x > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x;
}

i128 tg_gcd128(i128 a, i128 b) {
  u128 x = a < 0 ? (u128)0 - (u128)a : (u128)a, y = b < 0 ? (u128)0 - (u128)b : (u128)b;
  while (y) {
    u128 t = x % y;
    x = y;
    y = t;
  }
  return x > (u128)I128_MAX ? I128_MAX : (i128)x;
}

int64_t tg_getenv_int(const char *name, int64_t dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end;
  long long x = strtoll(v, &end, 10);
  return *end ? dflt : (int64_t)x;
}
int tg_debug_level(void) {
  static int level = -1;
  if (level < 0) level = (int)tg_getenv_int("DEBUG", 0);
  return level;
}

static _Thread_local char error_msg[1024];
static _Thread_local tg_status error_status;
tg_status tg_set_error(tg_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_msg, sizeof error_msg, fmt, ap);
  va_end(ap);
  error_status = st;
  return st;
}
void tg_clear_error(void) { error_msg[0] = 0; error_status = TG_OK; }
const char *tg_last_error(void) { return error_msg; }
tg_status tg_last_status(void) { return error_status; }
const char *tg_version(void) { return "0.1"; }
