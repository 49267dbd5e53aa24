/* bench_rewrite.c — throughput of the rule engine and of interning, measured on the same graphs that
 * bench/peer_tinygrad.py builds in tinygrad (bench/run.sh prints the comparison).
 *
 *   rewrite_sym   pm_graph_rewrite with sym_sym() over an index-expression graph: a SINK of sums of 16 terms
 *                 ((r_i*c1 + r_j*c2 + c3) // c4) % c5 over 8 RANGEs; node visits (toposort size of the input) per
 *                 second. Each run builds the graph fresh (no cached bounds or rewrites), only the rewrite is timed.
 *   intern_fresh  uop_new calls per second creating new nodes (a CONST and an ADD per step)
 *   intern_hit    uop_new calls per second re-creating those nodes while they are alive (intern table hits)
 *
 * Output, one line per benchmark: "<name> <value> <unit>", plus "rewrite_sym_nodes_in N" and
 * "rewrite_sym_nodes_out N" so run.sh can check both sides did the same work. Best of several runs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "uop/symbolic.h"

enum { N_RANGES = 8, TERMS = 14000, GROUP = 16, RUNS = 5, INTERN_STEPS = 200000 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static UOp *w(int64_t v) { return uop_const_int(DT_WEAKINT, v); }

/* The benchmark graph; peer_tinygrad.py builds exactly the same one. */
static UOp *build_index_graph(void) {
  static const int64_t ends[N_RANGES] = {16, 32, 8, 64, 4, 128, 3, 256};
  UOp *r[N_RANGES];
  for (int k = 0; k < N_RANGES; k++) r[k] = uop_range(w(ends[k]), k, AXIS_LOOP);
  UOp *sums[TERMS / GROUP];
  size_t nsums = 0;
  UOp *acc = NULL;
  for (int t = 0; t < TERMS; t++) {
    int i = t % N_RANGES, j = (t * 3 + 1) % N_RANGES;
    if (j == i) j = (j + 1) % N_RANGES;
    int64_t c1 = t % 7 + 1, c2 = (t * 5) % 11 + 1, c3 = t % 13, c4 = t % 6 + 2, c5 = t % 9 + 2;
    UOp *idx = uop_add(uop_add(uop_mul(r[i], w(c1)), uop_mul(r[j], w(c2))), w(c3));
    UOp *term = uop_mod(uop_idiv(idx, w(c4)), w(c5));
    acc = acc ? uop_add(acc, term) : term;
    if (t % GROUP == GROUP - 1) {
      sums[nsums++] = acc;
      acc = NULL;
    }
  }
  return uop_sink(sums, nsums);
}

static size_t graph_size(UOp *u) {
  UOpVec v = {0};
  uop_toposort(u, NULL, NULL, &v);
  size_t n = v.len;
  tg_vec_free(&v);
  return n;
}

static int bench_rewrite(void) {
  double best = 1e30;
  size_t nodes_in = 0, nodes_out = 0;
  const RuleSet *sym = sym_sym();
  for (int run = 0; run < RUNS; run++) {
    sym_divmod_cache_clear(); /* cold like tinygrad's side: no memoized div/mod folds from an earlier run */
    UOpScope s = uop_scope_begin();
    UOp *g = build_index_graph();
    nodes_in = graph_size(g);
    double t0 = now_s();
    UOp *out = pm_graph_rewrite(g, sym, NULL, 0, NULL, "bench");
    double dt = now_s() - t0;
    if (!out) {
      fprintf(stderr, "bench_rewrite: graph_rewrite failed: %s\n", tg_last_error());
      uop_scope_end(s);
      return 1;
    }
    nodes_out = graph_size(out);
    if (dt < best) best = dt;
    uop_scope_end(s);
  }
  printf("rewrite_sym %.0f nodes/s\n", (double)nodes_in / best);
  printf("rewrite_sym_nodes_in %zu\n", nodes_in);
  printf("rewrite_sym_nodes_out %zu\n", nodes_out);
  return 0;
}

static void bench_intern(void) {
  double best_fresh = 1e30, best_hit = 1e30;
  for (int run = 0; run < RUNS; run++) {
    UOpScope s = uop_scope_begin();
    UOp *x = uop_variable("x", 0, 1000, NULL);
    UOp *one_src[2] = {x, NULL};
    double t0 = now_s();
    for (int64_t k = 0; k < INTERN_STEPS; k++) {
      one_src[1] = uop_new(TG_OP_CONST, DT_WEAKINT, NULL, 0, arg_const(const_int(k + 1000000)));
      uop_new(TG_OP_ADD, DT_WEAKINT, one_src, 2, arg_none());
    }
    double t1 = now_s();
    for (int64_t k = 0; k < INTERN_STEPS; k++) {
      one_src[1] = uop_new(TG_OP_CONST, DT_WEAKINT, NULL, 0, arg_const(const_int(k + 1000000)));
      uop_new(TG_OP_ADD, DT_WEAKINT, one_src, 2, arg_none());
    }
    double t2 = now_s();
    uop_scope_end(s);
    if (t1 - t0 < best_fresh) best_fresh = t1 - t0;
    if (t2 - t1 < best_hit) best_hit = t2 - t1;
  }
  printf("intern_fresh %.0f calls/s\n", 2.0 * INTERN_STEPS / best_fresh);
  printf("intern_hit %.0f calls/s\n", 2.0 * INTERN_STEPS / best_hit);
}

int main(void) {
  int rc = bench_rewrite();
  bench_intern();
  uop_collect_all();
  return rc;
}
