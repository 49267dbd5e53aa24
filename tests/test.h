/* test.h — the tiny test harness: CHECK macros that count passes and failures per suite.
 *
 * A suite is a function `void suite_NAME(void)` listed in tests/suites.def; tests/main.c runs them and prints
 * "<suite>: N passed, N failed" per suite and a total. A suite that ran zero checks counts as a failure. */
#ifndef TG_TEST_H
#define TG_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

extern long tg_test_passed, tg_test_failed;
void tg_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (cond) tg_test_passed++;                                             \
    else tg_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);              \
  } while (0)
#define CHECK_MSG(cond, ...)                                                \
  do {                                                                      \
    if (cond) tg_test_passed++;                                             \
    else tg_test_fail(__FILE__, __LINE__, __VA_ARGS__);                     \
  } while (0)
#define CHECK_EQ_INT(a, b)                                                                              \
  do {                                                                                                  \
    long long a_ = (long long)(a), b_ = (long long)(b);                                                 \
    if (a_ == b_) tg_test_passed++;                                                                     \
    else tg_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);                    \
  } while (0)
#define CHECK_EQ_STR(a, b)                                                                              \
  do {                                                                                                  \
    const char *a_ = (a), *b_ = (b);                                                                    \
    if (a_ && b_ && strcmp(a_, b_) == 0) tg_test_passed++;                                              \
    else tg_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",     \
                      b_ ? b_ : "(null)");                                                              \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                                                           \
  do {                                                                                                  \
    double a_ = (double)(a), b_ = (double)(b);                                                          \
    if (fabs(a_ - b_) <= (tol) || (isnan(a_) && isnan(b_))) tg_test_passed++;                           \
    else tg_test_fail(__FILE__, __LINE__, "%s ~= %s: %.17g != %.17g", #a, #b, a_, b_);                  \
  } while (0)

/* Tests flip env knobs between calls: these change the variable and make the library re-read its knobs (they are
 * read once and kept, see tg_knobs_reload in tinygrad.h). Plain setenv/unsetenv in a test would not be seen. */
static inline void test_setenv(const char *name, const char *value) {
  setenv(name, value, 1);
  tg_knobs_reload();
}
static inline void test_unsetenv(const char *name) {
  unsetenv(name);
  tg_knobs_reload();
}

#define SUITE(name) void suite_##name(void);
#include "suites.def"
#undef SUITE

/* Set by the runner: true under ASan/UBSan, where memory figures mean nothing and big loops are slow. */
extern int tg_test_sanitized;
/* Set by the runner from TG_TEST_QUICK=1 (`make test-fast`): a suite may then run a subset of its cases. */
extern int tg_test_quick;
/* The smaller sizes (loop counts, graph sizes) the sanitizer pass uses, for the quick tier too; figures that need the
 * full size (RSS growth, throughput) are checked only when this is false. */
static inline int tg_test_light(void) { return tg_test_sanitized || tg_test_quick; }

#endif
