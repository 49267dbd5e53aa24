/* op_cost.c — the C side of one lazy tensor op (what tools/py_overhead.py's cases call): builds the op on two realized
 * 16x16 float tensors n times, releasing each result, and prints ns per op (best of REPS rounds). tools/op_cost.sh runs
 * it under callgrind for instruction counts per op, which repeat exactly on a noisy machine.
 *   op_cost CASE [N]   CASE: add (a + b), adds (a + 1.0), exp, sum (axis 1), reshape (to 256), getitem (a[1:3, 2])
 * NOREAL=1 uses unrealized empty tensors (callgrind cannot run the CPU kernels' AVX-512). */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
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

/* One op (not inlined: callgrind's --toggle-collect counts this and drop only). */
__attribute__((noinline)) tg_tensor *op_step(int which, tg_tensor *a, tg_tensor *b, tg_tensor *one);
__attribute__((noinline)) void op_drop(tg_tensor *r);

tg_tensor *op_step(int which, tg_tensor *a, tg_tensor *b, tg_tensor *one) {
  static const int axis[1] = {1};
  static const int64_t flat[1] = {256};
  switch (which) {
  case 0: return tg_add(a, b);
  case 1: return tg_add(a, one);
  case 2: return tg_exp(a);
  case 3: return tg_sum(a, axis, 1, false);
  case 4: return tg_reshape(a, flat, 1);
  default: {
    tg_index ix[2] = {TG_SL(1, 3), TG_I(2)};
    return tg_getitem(a, ix, 2);
  }
  }
}
void op_drop(tg_tensor *r) { tg_release(r); }

int main(int argc, char **argv) {
  static const char *names[] = {"add", "adds", "exp", "sum", "reshape", "getitem"};
  int which = -1, n = argc > 2 ? atoi(argv[2]) : 100000, reps = getenv("REPS") ? atoi(getenv("REPS")) : 5;
  for (int i = 0; i < 6 && argc > 1; i++)
    if (strcmp(argv[1], names[i]) == 0) which = i;
  if (which < 0 || n <= 0) {
    fprintf(stderr, "usage: op_cost add|adds|exp|sum|reshape|getitem [N]\n");
    return 2;
  }
  bool real = !getenv("NOREAL");
  tg_tensor *ones = tg_ones(TG_SHAPE(16, 16), TG_FLOAT32);
  tg_tensor *a = real ? tg_contiguous(ones) : tg_empty(TG_SHAPE(16, 16), TG_FLOAT32);
  tg_tensor *b = real ? tg_contiguous(ones) : tg_empty(TG_SHAPE(16, 16), TG_FLOAT32);
  tg_tensor *one = tg_const_float(1.0);
  if (!a || !b || !one || (real && (tg_realize(a) != TG_OK || tg_realize(b) != TG_OK))) {
    fprintf(stderr, "op_cost: setup failed: %s\n", tg_last_error());
    return 1;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (int i = 0; i < n; i++) {
      tg_tensor *t = op_step(which, a, b, one);
      if (!t) {
        fprintf(stderr, "op_cost: %s failed: %s\n", names[which], tg_last_error());
        return 1;
      }
      op_drop(t);
    }
    double t = (now() - t0) / n * 1e9;
    if (t < best) best = t;
  }
  printf("op_cost %s %.0f ns/op\n", names[which], best);
  tg_release_many((tg_tensor *[]){a, b, one, ones}, 4);
  return 0;
}
