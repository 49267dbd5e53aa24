/* realize_host.c — the host time of a schedule-cache-hit realize: a small conv2d and a softmax are built and realized
 * N times (the same graph each time, so every realize after the first hits the schedule and kernel caches); prints
 * the mean build and realize wall per call over the last N-10. The kernels are tiny (~0.1 us of work on the CPU), so
 * the realize figure is the engine's per-call host work (callify, cache lookup, buffer resolution, launch handoff).
 *   build/realize_host [conv|softmax|all] [N]      (default: all 2000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* best of 5 rounds of n realizes each: the machine is shared, the minimum is the figure least disturbed */
static int measure(const char *which, int n, double *build_us, double *realize_us) {
  bool conv = strcmp(which, "conv") == 0;
  tg_tensor *x, *w = NULL;
  if (conv) {
    x = tg_uniform((int64_t[]){1, 2, 4, 4}, 4, -1, 1, TG_FLOAT32);
    w = tg_uniform((int64_t[]){2, 2, 3, 3}, 4, -1, 1, TG_FLOAT32);
    if (tg_realize(w) != TG_OK) return 1;
  } else {
    x = tg_uniform((int64_t[]){4, 16}, 2, -1, 1, TG_FLOAT32);
  }
  if (tg_realize(x) != TG_OK) return 1;
  *build_us = *realize_us = 1e30;
  for (int round = 0; round < 5; round++) {
    double tb = 0, tr = 0;
    int timed = 0;
    for (int i = 0; i < n + 10; i++) {
      tg_scope sc = tg_scope_begin();
      double t0 = now();
      tg_tensor *o = conv ? tg_conv2d(x, w, NULL, 1, (const int64_t[]){1, 1}, (const int64_t[]){1, 1},
                                      (const int64_t[]){1, 1})
                          : tg_softmax(x, -1);
      double t1 = now();
      if (tg_realize(o) != TG_OK) {
        fprintf(stderr, "realize_host: %s\n", tg_last_error());
        return 1;
      }
      double t2 = now();
      tg_scope_end(sc);
      if (i >= 10) tb += t1 - t0, tr += t2 - t1, timed++;
    }
    if (tr / timed * 1e6 < *realize_us) *realize_us = tr / timed * 1e6, *build_us = tb / timed * 1e6;
  }
  tg_release(x);
  tg_release(w);
  return 0;
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "all";
  int n = argc > 2 ? atoi(argv[2]) : 2000;
  if (n < 1) n = 1;
  const char *names[] = {"conv", "softmax"};
  for (int i = 0; i < 2; i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, names[i]) != 0) continue;
    double b, r;
    if (measure(names[i], n, &b, &r) != 0) return 1;
    printf("realize_host_%s %.2f us build %.2f us\n", names[i], r, b);
  }
  return 0;
}
