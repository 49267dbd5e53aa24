/* main.c — runs every suite of suites.def (or those named on the command line) and prints one line per suite. */
#include <stdarg.h>
#include <stdlib.h>

#include "test.h"

long tg_test_passed, tg_test_failed;
int tg_test_sanitized;

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

int main(int argc, char **argv) {
  const char *tag = getenv("TG_TEST_TAG"); /* e.g. "asan+ubsan", appended to suite names */
  tg_test_sanitized = tag && *tag;
  long total_pass = 0, total_fail = 0;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], suites[i].name) == 0;
    if (!selected) continue;
    tg_test_passed = tg_test_failed = 0;
    suites[i].fn();
    if (tg_test_passed + tg_test_failed == 0) {
      fprintf(stderr, "  FAIL suite %s ran zero checks\n", suites[i].name);
      tg_test_failed = 1;
    }
    printf("%s%s%s%s: %ld passed, %ld failed\n", suites[i].name, tag ? " [" : "", tag ? tag : "", tag ? "]" : "",
           tg_test_passed, tg_test_failed);
    fflush(stdout);
    total_pass += tg_test_passed;
    total_fail += tg_test_failed;
  }
  printf("%ld passed, %ld failed\n", total_pass, total_fail);
  return total_fail ? 1 : 0;
}
