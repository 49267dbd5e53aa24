/* demo_symbolic.c — the `make demo` of the foundation stage: shows the UOp IR and the symbolic simplifier at work on
 * the index math a convolution kernel produces, with bounds, then proves the result by exhaustive evaluation.
 * (The training demo replaces this when the Tensor and training issues land.) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "uop/eval.h"
#include "uop/symbolic.h"

static void show(const char *title, UOp *u) {
  char *r = uop_render(u);
  printf("  %-28s %s\n", title, r);
  printf("  %-28s vmin=%lld vmax=%lld\n", "", (long long)uop_vmin(u), (long long)uop_vmax(u));
  free(r);
}

int main(void) {
  UOpScope sc = uop_scope_begin();
  printf("tinygrad.c foundation demo: UOp IR + rule engine + symbolic simplifier\n\n");
  /* a 3x3 conv over a 28x28 image, output pixel (oy, ox) from gidx = oy*28+ox and kernel tap k in [0, 9) */
  UOp *gidx = uop_variable("gidx", 0, 28 * 28 - 1, NULL);
  UOp *k = uop_variable("k", 0, 8, NULL);
  UOp *oy = uop_idiv_int(gidx, 28), *ox = uop_mod_int(gidx, 28);
  UOp *iy = uop_add(oy, uop_idiv_int(k, 3)), *ix = uop_add(ox, uop_mod_int(k, 3));
  /* the flat index, as movement ops build it: recombine then split again */
  UOp *flat = uop_add(uop_mul_int(iy, 30), ix);
  UOp *row = uop_idiv_int(flat, 30), *col = uop_mod_int(flat, 30);
  UOp *idx = uop_add(uop_mul_int(row, 30), col);
  UOp *valid = uop_and(uop_lt_int(row, 30), uop_lt_int(col, 30));
  UOp *gated = uop_where(valid, idx, uop_invalid());
  show("index (as built):", idx);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  UOp *s = uop_simplify(idx);
  UOp *g = uop_simplify(gated);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  show("index (simplified):", s);
  show("gated index (simplified):", g);
  double us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
  printf("  simplified in %.1f us\n\n", us);
  /* prove it: evaluate both over every (gidx, k) */
  long points = 0, mismatches = 0;
  EvalProgram *p0 = eval_compile(idx), *p1 = eval_compile(s);
  if (!p0 || !p1) {
    fprintf(stderr, "demo: cannot evaluate: %s\n", tg_last_error());
    return 1;
  }
  EvalEnv env;
  eval_env_init(&env);
  for (int64_t a = 0; a < 28 * 28; a++)
    for (int64_t b = 0; b < 9; b++) {
      eval_env_clear(&env);
      eval_env_bind_var(&env, "gidx", a);
      eval_env_bind_var(&env, "k", b);
      EvalValue x0 = eval_run(p0, &env), x1 = eval_run(p1, &env);
      if (x0.state != EVAL_OK || x1.state != EVAL_OK || x0.v != x1.v) mismatches++;
      points++;
    }
  eval_env_free(&env);
  eval_program_free(p0);
  eval_program_free(p1);
  printf("  exhaustive check: %ld points, %ld mismatches\n", points, mismatches);
  uop_scope_end(sc);
  return mismatches ? 1 : 0;
}
