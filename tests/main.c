/* main.c — runs every suite of suites.def (or those named on the command line) and prints one line per suite with
 * its wall time, then a line with the total time and, last, the total "N passed, N failed" (the line CI reads).
 *
 * TG_TEST_QUICK=1 asks suites for their quick mode (tg_test_quick): a subset of cases that catches most regressions,
 * what `make test-fast` runs; `make test` leaves it unset and every suite runs all its cases.
 *
 * The pipeline's stage-boundary validators (SPEC, uop/spec.h) are off by default in the library and on in every
 * suite: the runner sets SPEC=1 unless the environment already says otherwise (SPEC=0 measures what they cost). */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

long tg_test_passed, tg_test_failed;
int tg_test_sanitized, tg_test_quick;

void tg_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  tg_test_failed++;
  if (tg_test_failed > 50) return; /* the count still says how many */
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static const struct { const char *name; void (*fn)(void); } suites[] = {
#define SUITE(name) {#name, suite_##name},
#include "suites.def"
#undef SUITE
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *tag = getenv("TG_TEST_TAG"); /* e.g. "asan+ubsan", appended to suite names */
  const char *quick = getenv("TG_TEST_QUICK");
  setenv("SPEC", "1", 0);
  tg_test_sanitized = tag && *tag;
  tg_test_quick = quick && *quick && strcmp(quick, "0") != 0;
  for (int a = 1; a < argc; a++) {
    int known = 0;
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) known |= strcmp(argv[a], suites[i].name) == 0;
    if (!known) {
      fprintf(stderr, "run_tests: no suite named '%s' (the names are in tests/suites.def)\n", argv[a]);
      return 2;
    }
  }
  long total_pass = 0, total_fail = 0, nsuites = 0;
  double t_all = now_seconds();
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], suites[i].name) == 0;
    if (!selected) continue;
    tg_test_passed = tg_test_failed = 0;
    double t0 = now_seconds();
    suites[i].fn();
    double dt = now_seconds() - t0;
    if (tg_test_passed + tg_test_failed == 0) {
      fprintf(stderr, "  FAIL suite %s ran zero checks\n", suites[i].name);
      tg_test_failed = 1;
    }
    printf("%s%s%s%s: %ld passed, %ld failed (%.2f s)\n", suites[i].name, tag ? " [" : "", tag ? tag : "",
           tag ? "]" : "", tg_test_passed, tg_test_failed, dt);
    fflush(stdout);
    total_pass += tg_test_passed;
    total_fail += tg_test_failed;
    nsuites++;
  }
  printf("%ld suites%s%s%s%s in %.1f s\n", nsuites, tg_test_quick ? " (quick)" : "", tag ? " [" : "", tag ? tag : "",
         tag ? "]" : "", now_seconds() - t_all);
  printf("%ld passed, %ld failed\n", total_pass, total_fail);
  return total_fail ? 1 : 0;
}
