/* base.h — the few things every file needs: allocation that cannot fail silently, internal assertions,
 * growable arrays, a string builder, hashing, env knobs and the library's error slot.
 *
 * TG_ASSERT is for internal invariants only (a bug in tinygrad.c). Bad user input never reaches it: public
 * calls validate and report through tg_set_error() (DESIGN.md decision 7). */
#ifndef TG_BASE_H
#define TG_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tinygrad.h"

/* 128-bit integers for exact interval arithmetic on 64-bit values (GCC and clang both have them). */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;
#define I128_MAX ((i128)(((u128)1 << 127) - 1))
#define I128_MIN (-I128_MAX - 1)

#define TG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TG_UNUSED(x) ((void)(x))
#define TG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TG_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define TG_NORETURN __attribute__((noreturn))
#define TG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TG_LIKELY(x) __builtin_expect(!!(x), 1)
#define TG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TG_NORETURN
#define TG_PRINTF(f, a)
#define TG_LIKELY(x) (x)
#define TG_UNLIKELY(x) (x)
#endif

/* Internal invariant violated: print file:line and abort. Never for user errors. */
TG_NORETURN void tg_panic(const char *file, int line, const char *fmt, ...) TG_PRINTF(3, 4);
#define TG_ASSERT(cond, ...) \
  do { if (TG_UNLIKELY(!(cond))) tg_panic(__FILE__, __LINE__, "assertion failed: " #cond " " __VA_ARGS__); } while (0)
#define TG_PANIC(...) tg_panic(__FILE__, __LINE__, __VA_ARGS__)

/* Allocation: out of memory is fatal (there is no sensible recovery inside a rewrite). */
void *tg_malloc(size_t n);
void *tg_calloc(size_t count, size_t size);
void *tg_realloc(void *p, size_t n);
char *tg_strdup(const char *s);
void tg_free(void *p);

/* Growable array of T: struct { T *data; size_t len, cap; }. */
#define TG_VEC(T) struct { T *data; size_t len, cap; }
#define tg_vec_reserve(v, n)                                                                    \
  do {                                                                                          \
    if ((n) > (v)->cap) {                                                                       \
      size_t nc_ = (v)->cap ? (v)->cap : 8;                                                     \
      while (nc_ < (size_t)(n)) nc_ *= 2;                                                       \
      (v)->data = tg_realloc((v)->data, nc_ * sizeof(*(v)->data));                              \
      (v)->cap = nc_;                                                                           \
    }                                                                                           \
  } while (0)
#define tg_vec_push(v, x)                  \
  do {                                     \
    tg_vec_reserve((v), (v)->len + 1);     \
    (v)->data[(v)->len++] = (x);           \
  } while (0)
#define tg_vec_free(v) do { tg_free((v)->data); (v)->data = NULL; (v)->len = (v)->cap = 0; } while (0)

/* String builder. */
typedef struct StrBuf { char *s; size_t len, cap; } StrBuf;
void sb_init(StrBuf *b);
void sb_free(StrBuf *b);
void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) TG_PRINTF(2, 3);
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
char *sb_take(StrBuf *b); /* returns the heap string, leaves b empty */

/* Hashing: fast 64-bit mixing for in-process tables. */
static inline uint64_t tg_hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 32);
}
uint64_t tg_hash_bytes(const void *p, size_t n, uint64_t seed);

/* UTF-8 as RFC 3629 defines it (the file readers' rule for names and strings): the length (1..4) of the well-formed
 * sequence at s[0..avail), 0 when it is malformed (a stray continuation byte, an overlong form, a surrogate, a code
 * point above U+10FFFF, or a sequence cut off by avail); and whether all of s[0..len) is well formed. */
size_t tg_utf8_seq_len(const unsigned char *s, size_t avail);
bool tg_utf8_valid(const char *s, size_t len);

/* Greatest common divisor of |a| and |b| (gcd(0, 0) = 0); the 64-bit one saturates at INT64_MAX for gcd(INT64_MIN, 0). */
int64_t tg_gcd64(int64_t a, int64_t b);
i128 tg_gcd128(i128 a, i128 b);

/* Env knobs with tinygrad's names: tg_getenv_int("DEBUG", 0) is the variable's integer value, or dflt when it is unset,
 * empty or not an integer. Each name is read from the environment once and kept; tg_knobs_reload() (tinygrad.h)
 * re-reads them all after the program changed its environment. */
int64_t tg_getenv_int(const char *name, int64_t dflt);
/* The same table for text knobs (OPTIM_DTYPE, DEFAULT_FLOAT, BEAM_MIN_PROGRESS, ...): the value read once, NULL when
 * unset or empty. The string stays valid until a tg_knobs_reload() that sees a different value. */
const char *tg_getenv_str(const char *name);
int tg_debug_level(void); /* DEBUG */
/* Changes at every tg_knobs_reload() and knob override: a value computed from knobs stays valid while it does not (a
 * knob's value only changes there). */
uint64_t tg_knobs_generation(void);
/* An integer knob set for a while (tinygrad's `with Context(BEAM=2)`): tg_knob_put makes name read v (set false: as
 * if unset, the callers' defaults apply) and returns what it read before, for putting back the same way. Like
 * tg_knobs_reload, not while other threads run library code. */
typedef struct TgKnobSaved { int64_t value; bool set; } TgKnobSaved;
TgKnobSaved tg_knob_put(const char *name, TgKnobSaved v);

/* The error slot behind tg_last_error(): set by validation code, read by the user. Returns `st`. */
tg_status tg_set_error(tg_status st, const char *fmt, ...) TG_PRINTF(2, 3);
void tg_clear_error(void);

#endif
