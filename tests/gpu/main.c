/* main.c — the GPU runner (build/run_tests_gpu): every suite of tests/gpu_suites.def (or those named on the command
 * line), one line per suite as tests/main.c prints them. A suite without a usable GPU prints
 * "<suite>: SKIPPED (no CUDA device: <why>)"; any skip makes the exit status non-zero unless TG_GPU_OPTIONAL=1, so
 * "no GPU" is never mistaken for green. */
#include <stdarg.h>
#include <stdlib.h>

#include "gpu_test.h"
#include "runtime/runtime.h"

long tg_test_passed, tg_test_failed;
int tg_test_sanitized;
static const char *skip_reason;

void tg_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  tg_test_failed++;
  if (tg_test_failed > 50) return;
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

bool gpu_require_cuda(void) {
  const char *why = NULL;
  if (rt_cuda_available(&why)) return true;
  skip_reason = why && *why ? why : "unknown reason";
  return false;
}

static const struct { const char *name; void (*fn)(void); } suites[] = {
#define GPU_SUITE(name) {#name, gpu_suite_##name},
#include "../gpu_suites.def"
#undef GPU_SUITE
};

int main(int argc, char **argv) {
  const char *tag = getenv("TG_TEST_TAG");
  tg_test_sanitized = tag && *tag;
  bool optional = getenv("TG_GPU_OPTIONAL") && atoi(getenv("TG_GPU_OPTIONAL")) != 0;
  long total_pass = 0, total_fail = 0, skipped = 0;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], suites[i].name) == 0;
    if (!selected) continue;
    tg_test_passed = tg_test_failed = 0;
    skip_reason = NULL;
    suites[i].fn();
    if (skip_reason && tg_test_failed == 0) {
      printf("%s: SKIPPED (no CUDA device: %s)\n", suites[i].name, skip_reason);
      fflush(stdout);
      skipped++;
      continue;
    }
    if (tg_test_passed + tg_test_failed == 0) {
      fprintf(stderr, "  FAIL suite %s ran zero checks\n", suites[i].name);
      tg_test_failed = 1;
    }
    printf("%s: %ld passed, %ld failed\n", suites[i].name, tg_test_passed, tg_test_failed);
    fflush(stdout);
    total_pass += tg_test_passed;
    total_fail += tg_test_failed;
  }
  printf("%ld passed, %ld failed, %ld skipped\n", total_pass, total_fail, skipped);
  return total_fail || (skipped && !optional) ? 1 : 0;
}
