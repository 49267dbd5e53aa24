/* base.c — allocation, panic, string builder, hashing, env knobs and the per-thread error slot. */
#include "base.h"

#include <pthread.h>
#include <stdatomic.h>
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

size_t tg_utf8_seq_len(const unsigned char *s, size_t avail) {
  if (avail == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp, min; /* min: the smallest code point that needs n bytes (smaller ones are overlong) */
  if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1Fu; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0Fu; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07u; min = 0x10000; }
  else return 0;
  if (avail < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool tg_utf8_valid(const char *s, size_t len) {
  for (size_t i = 0; i < len;) {
    size_t k = tg_utf8_seq_len((const unsigned char *)s + i, len - i);
    if (!k) return false;
    i += k;
  }
  return true;
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

/* ---- env knobs, read once ----
 * Every knob name seen by tg_getenv_int or tg_getenv_str gets one slot in a fixed open-addressing table: the
 * environment is read the first time the name is asked for and the parsed value is kept (tinygrad's getenv is cached
 * the same way), so the hot paths (the schedule cache key reads seven knobs per realize) pay a hash and a compare,
 * not a scan of environ. A slot holds whether the variable was set to an integer and its value, and its text; the
 * caller's default is applied on each call, so two call sites with different defaults still see what they did
 * before. Readers take no lock: a slot is
 * published once with release order and never moves. tg_knobs_reload() (public, tinygrad.h) re-reads every knob in
 * place; it is for a program (or a test) that changed its environment between calls, not while other threads run
 * library code. */
#define KNOB_SLOTS 256 /* the library has ~50 knobs; a full table is an internal error */
typedef struct Knob {
  char *name;
  uint64_t hash;
  _Atomic int64_t value;
  _Atomic bool set; /* the variable holds an integer (else the caller's default is returned) */
  _Atomic(char *) str; /* its text (tg_getenv_str), NULL when unset or empty */
} Knob;
static _Atomic(Knob *) knob_table[KNOB_SLOTS];
static pthread_mutex_t knob_lock = PTHREAD_MUTEX_INITIALIZER;

static void knob_read_env(Knob *k) {
  const char *v = getenv(k->name);
  char *end = NULL;
  long long x = v && *v ? strtoll(v, &end, 10) : 0;
  bool ok = v && *v && !*end;
  atomic_store_explicit(&k->value, ok ? (int64_t)x : 0, memory_order_relaxed);
  atomic_store_explicit(&k->set, ok, memory_order_relaxed);
  /* the text is replaced only when it changed, so a string read before a reload of an unchanged knob stays valid */
  char *old = atomic_load_explicit(&k->str, memory_order_relaxed);
  if (v && *v && old && strcmp(old, v) == 0) return;
  atomic_store_explicit(&k->str, v && *v ? tg_strdup(v) : NULL, memory_order_release);
  tg_free(old);
}

static Knob *knob_find(const char *name) {
  uint64_t h = tg_hash_bytes(name, strlen(name), 0x6b6e6f62u);
  for (size_t i = 0, at = (size_t)h % KNOB_SLOTS; i < KNOB_SLOTS; i++, at = (at + 1) % KNOB_SLOTS) {
    Knob *k = atomic_load_explicit(&knob_table[at], memory_order_acquire);
    if (!k) {
      pthread_mutex_lock(&knob_lock); /* first sight of a name: read it, publish it (another thread may have) */
      k = atomic_load_explicit(&knob_table[at], memory_order_acquire);
      if (!k) {
        k = tg_calloc(1, sizeof *k);
        k->name = tg_strdup(name);
        k->hash = h;
        knob_read_env(k);
        atomic_store_explicit(&knob_table[at], k, memory_order_release);
      }
      pthread_mutex_unlock(&knob_lock);
    }
    if (k->hash == h && strcmp(k->name, name) == 0) return k;
  }
  TG_PANIC("more than %d env knob names", KNOB_SLOTS);
}

/* The names the library passes are string literals: a small table keyed by the name's address finds its knob without
 * hashing the text (the compare still checks the text, so a reused buffer is never mistaken). A slot is filled once
 * and kept; a name whose slot is taken goes through knob_find each time. */
#define KNOB_ADDR_SLOTS 128
typedef struct KnobRef { const char *addr; Knob *knob; } KnobRef;
static _Atomic(KnobRef *) knob_by_addr[KNOB_ADDR_SLOTS];

static Knob *knob_of(const char *name) {
  size_t at = (size_t)(((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ULL) >> 57) % KNOB_ADDR_SLOTS;
  KnobRef *r = atomic_load_explicit(&knob_by_addr[at], memory_order_acquire);
  if (TG_LIKELY(r && r->addr == name && strcmp(r->knob->name, name) == 0)) return r->knob;
  Knob *k = knob_find(name);
  if (!r) {
    KnobRef *mine = tg_malloc(sizeof *mine), *expect = NULL;
    *mine = (KnobRef){name, k};
    if (!atomic_compare_exchange_strong_explicit(&knob_by_addr[at], &expect, mine, memory_order_acq_rel,
                                                 memory_order_acquire))
      tg_free(mine);
  }
  return k;
}

int64_t tg_getenv_int(const char *name, int64_t dflt) {
  Knob *k = knob_of(name);
  return atomic_load_explicit(&k->set, memory_order_relaxed) ? atomic_load_explicit(&k->value, memory_order_relaxed)
                                                              : dflt;
}
int tg_debug_level(void) { return (int)tg_getenv_int("DEBUG", 0); }

const char *tg_getenv_str(const char *name) { return atomic_load_explicit(&knob_of(name)->str, memory_order_acquire); }

static _Atomic uint64_t knob_generation = 1;
uint64_t tg_knobs_generation(void) { return atomic_load_explicit(&knob_generation, memory_order_acquire); }

void tg_knobs_reload(void) {
  pthread_mutex_lock(&knob_lock);
  atomic_fetch_add_explicit(&knob_generation, 1, memory_order_acq_rel);
  for (size_t i = 0; i < KNOB_SLOTS; i++) {
    Knob *k = atomic_load_explicit(&knob_table[i], memory_order_acquire);
    if (k) knob_read_env(k);
  }
  pthread_mutex_unlock(&knob_lock);
}

TgKnobSaved tg_knob_put(const char *name, TgKnobSaved v) {
  Knob *k = knob_of(name);
  pthread_mutex_lock(&knob_lock);
  TgKnobSaved old = {atomic_load_explicit(&k->value, memory_order_relaxed), atomic_load_explicit(&k->set, memory_order_relaxed)};
  atomic_store_explicit(&k->value, v.value, memory_order_relaxed);
  atomic_store_explicit(&k->set, v.set, memory_order_relaxed);
  atomic_fetch_add_explicit(&knob_generation, 1, memory_order_acq_rel);
  pthread_mutex_unlock(&knob_lock);
  return old;
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
