/* fuzz_symbolic.c — brute-force fuzzer of the symbolic simplifier (tinygrad's test/external/fuzz_symbolic*.py, with
 * exhaustive evaluation in place of z3).
 *
 * Usage: fuzz_symbolic N SEED
 *   Builds N random integer (sometimes bool) expressions over 1-3 small bounded leaves (Variables and RANGEs), using
 *   ADD, MUL, SUB, negation, FLOORDIV/FLOORMOD by positive constants and by positive-ranged leaves, MAX, min (both as
 *   -max(-a,-b) and as ~max(~a,~b)), comparisons, WHERE, AND/OR/NOT of bools; one in ten is a sum of leaf*factor
 *   terms divided by a factor with FLOORDIV/FLOORMOD/CDIV/CMOD (fuzz_symbolic_div). Each is simplified with uop_simplify,
 *   and both graphs are evaluated (src/uop/eval.h) at every point of the leaves' ranges: the values must agree, and
 *   each graph's vmin/vmax must contain its values. Points where the original is undefined (division by zero) are
 *   skipped. Prints "fuzz_symbolic: N expressions, M mismatches" (after details of the first few mismatches, with a
 *   tinygrad reproduction) and exits 1 when M > 0.
 * Env: FUZZ_ONLY=i runs only expression i (the index printed with a mismatch) and prints it; FUZZ_NEG_DIV=1 also
 *   divides by negative constants (as tinygrad's fuzzer does); FUZZ_VERBOSE=1 prints every expression. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "uop/eval.h"
#include "uop/symbolic.h"

enum { MAX_LEAVES = 3, MAX_POINTS = 400, MAX_REPORTED = 5 };

/* ---- deterministic random numbers (splitmix64) ---- */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static int rng_int(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); } /* inclusive */
static bool rng_chance(int percent) { return (int)(rng_next() % 100) < percent; }
static int rng_weighted(const int *w, int n) {
  int total = 0;
  for (int i = 0; i < n; i++) total += w[i];
  int r = rng_int(0, total - 1);
  for (int i = 0; i < n; i++) {
    if (r < w[i]) return i;
    r -= w[i];
  }
  return n - 1;
}

/* ---- one fuzz case ---- */
typedef struct Leaf {
  UOp *node;      /* Variable or RANGE */
  bool is_range;
  char name[16];
  int lo, hi;     /* the values it takes */
} Leaf;

typedef struct Case {
  const DType *dt; /* weakint or int32 */
  Leaf leaf[MAX_LEAVES];
  int nleaves;
  bool neg_div;
} Case;

static UOp *cint(const Case *c, int64_t v) { return uop_const_int(c->dt, v); }

static UOp *random_leaf(const Case *c) { return c->leaf[rng_int(0, c->nleaves - 1)].node; }

/* A strictly positive divisor built from a leaf: the leaf itself when its range is positive, else leaf + shift. */
static UOp *positive_leaf_expr(const Case *c) {
  const Leaf *l = &c->leaf[rng_int(0, c->nleaves - 1)];
  if (l->lo >= 1) return l->node;
  return uop_add(l->node, cint(c, 1 - l->lo + rng_int(0, 2)));
}

static UOp *random_int_expr(const Case *c, int depth);
static UOp *random_bool_expr(const Case *c, int depth, UOp *lhs);

/* Either a fresh expression or a subexpression of e (tinygrad's random_or_sub_expression_int). */
static UOp *int_or_subexpr(const Case *c, int depth, UOp *e) {
  if (rng_chance(50)) return random_int_expr(c, depth);
  UOpVec topo = {0};
  uop_toposort(e, NULL, NULL, &topo);
  size_t n = 0;
  for (size_t i = 0; i < topo.len; i++)
    if (!dt_is_bool(topo.data[i]->dtype) && topo.data[i]->dtype != DT_VOID && topo.data[i]->op != TG_OP_CONST)
      topo.data[n++] = topo.data[i];
  UOp *r = n ? topo.data[rng_next() % n] : e;
  tg_vec_free(&topo);
  return r;
}

static UOp *min_of(const Case *c, UOp *a, UOp *b) {
  if (rng_chance(50)) return uop_min(a, b);
  UOp *k = cint(c, -1); /* ~max(~a, ~b) */
  return uop_xor(uop_max(uop_xor(a, k), uop_xor(b, k)), k);
}

static UOp *random_int_expr(const Case *c, int depth) {
  if (depth <= 0) return rng_chance(95) ? random_leaf(c) : cint(c, rng_int(-10, 10));
  UOp *a = random_int_expr(c, depth - 1);
  static const int kind_w[] = {6, 4, 1, 1};
  switch (rng_weighted(kind_w, 4)) {
  case 0: { /* a op const */
    static const int w[] = {4, 4, 4, 4, 1, 1};
    switch (rng_weighted(w, 6)) {
    case 0: return uop_add(a, cint(c, rng_int(-4, 4)));
    case 1: return uop_mul(a, cint(c, rng_int(-4, 4)));
    case 2: {
      int d = rng_int(1, 9);
      if (c->neg_div && rng_chance(30)) d = -d;
      return uop_idiv(a, cint(c, d));
    }
    case 3: {
      int d = rng_int(1, 9);
      if (c->neg_div && rng_chance(30)) d = -d;
      return uop_mod(a, cint(c, d));
    }
    case 4: return uop_max(a, cint(c, rng_int(-10, 10)));
    default: return min_of(c, a, cint(c, rng_int(-10, 10)));
    }
  }
  case 1: { /* a op b */
    static const int w[] = {8, 2, 1, 1, 1, 1, 1};
    int k = rng_weighted(w, 7);
    if (k == 5) return uop_idiv(a, positive_leaf_expr(c));
    if (k == 6) return uop_mod(a, positive_leaf_expr(c));
    UOp *b = int_or_subexpr(c, depth - 1, a);
    switch (k) {
    case 0: return uop_add(a, b);
    case 1: return uop_sub(a, b);
    case 2: return uop_mul(a, b);
    case 3: return uop_max(a, b);
    default: return min_of(c, a, b);
    }
  }
  case 2: { /* where */
    UOp *cond = random_bool_expr(c, 2, int_or_subexpr(c, depth - 1, a));
    return uop_where(cond, a, int_or_subexpr(c, depth - 1, a));
  }
  default: return uop_neg(a);
  }
}

/* A comparison of lhs (or a fresh expression) with another expression or a constant; sometimes AND/OR/NOT. */
static UOp *random_bool_expr(const Case *c, int depth, UOp *lhs) {
  if (depth > 0 && rng_chance(20)) {
    UOp *x = random_bool_expr(c, depth - 1, lhs);
    switch (rng_int(0, 2)) {
    case 0: return uop_and(x, random_bool_expr(c, depth - 1, NULL));
    case 1: return uop_or(x, random_bool_expr(c, depth - 1, NULL));
    default: return uop_not(x);
    }
  }
  UOp *a = lhs ? lhs : random_int_expr(c, 2);
  UOp *b = rng_chance(50) ? cint(c, rng_int(-10, 10)) : int_or_subexpr(c, 1, a);
  switch (rng_int(0, 5)) {
  case 0: return uop_lt(a, b);
  case 1: return uop_not(uop_lt(b, a)); /* a <= b */
  case 2: return uop_lt(b, a);           /* a > b */
  case 3: return uop_not(uop_lt(a, b)); /* a >= b */
  case 4: return uop_ne(a, b);
  default: return uop_eq(a, b);
  }
}

/* tinygrad's fuzz_symbolic_div: a sum of 2-4 terms leaf*factor*(+-1) (sometimes a nested one), divided by a factor
 * with FLOORDIV/FLOORMOD or the truncating CDIV/CMOD (which also get negative divisors). */
static UOp *random_factor(const Case *c) {
  static const int consts[] = {1, 2, 3, 4, 5, 7, 16};
  if (rng_chance(60)) return cint(c, consts[rng_int(0, (int)TG_ARRAY_LEN(consts) - 1)]);
  if (rng_chance(20)) return uop_mul(positive_leaf_expr(c), positive_leaf_expr(c));
  return positive_leaf_expr(c);
}

static UOp *random_divmod_expr(const Case *c, int depth) {
  int nterms = rng_int(2, 4);
  UOp *sum = NULL;
  for (int i = 0; i < nterms; i++) {
    UOp *t = depth > 0 && rng_chance(10) ? random_divmod_expr(c, depth - 1)
                                         : uop_mul(random_leaf(c), random_factor(c));
    if (rng_chance(25)) t = uop_neg(t);
    sum = sum ? uop_add(sum, t) : t;
  }
  static const TgOp ops[] = {TG_OP_FLOORDIV, TG_OP_FLOORMOD, TG_OP_CDIV, TG_OP_CMOD};
  TgOp op = ops[rng_int(0, 3)];
  UOp *d = random_factor(c);
  bool truncating = op == TG_OP_CDIV || op == TG_OP_CMOD;
  if ((truncating || c->neg_div) && rng_chance(25)) d = uop_neg(d);
  return uop_alu2(op, sum, d);
}

/* Leaves with small ranges; the grid of all their values stays under MAX_POINTS. */
static void make_leaves(Case *c) {
  c->dt = rng_chance(85) ? DT_WEAKINT : DT_INT32;
  c->nleaves = rng_int(1, MAX_LEAVES);
  int width[MAX_LEAVES];
  for (int i = 0; i < c->nleaves; i++) width[i] = rng_int(0, 28);
  for (;;) { /* shrink the widest range until the grid is small enough */
    long points = 1;
    int widest = 0;
    for (int i = 0; i < c->nleaves; i++) {
      points *= width[i] + 1;
      if (width[i] > width[widest]) widest = i;
    }
    if (points <= MAX_POINTS) break;
    width[widest] /= 2;
  }
  for (int i = 0; i < c->nleaves; i++) {
    Leaf *l = &c->leaf[i];
    l->is_range = rng_chance(20);
    if (l->is_range) {
      l->lo = 0;
      l->hi = width[i];
      snprintf(l->name, sizeof l->name, "r%d", i);
      l->node = uop_range(cint(c, width[i] + 1), i, AXIS_LOOP);
    } else {
      int r = rng_int(0, 99);
      l->lo = r < 50 ? 0 : r < 70 ? 1 : rng_int(-8, 5);
      l->hi = TG_MIN(l->lo + width[i], 20);
      snprintf(l->name, sizeof l->name, "v%d", i + 1);
      l->node = uop_variable(l->name, l->lo, l->hi, c->dt);
    }
  }
}

/* ---- rendering as tinygrad Python (for reproduction) ---- */
/* as_uop: a CONST must be written as a UOp (it receives a method call, or its partner is a plain number too) */
static void render_py(StrBuf *b, const UOp *u, int depth, bool as_uop) {
  if (depth > 60) {
    sb_puts(b, "...");
    return;
  }
  const char *bin = NULL;
  switch (uop_op(u)) {
  case TG_OP_CONST:
    if (as_uop) sb_puts(b, "UOp.const(");
    if (u->arg.c.kind == CK_BOOL) sb_puts(b, u->arg.c.b ? "True" : "False");
    else if (u->arg.c.kind == CK_INT) sb_printf(b, "%" PRId64, u->arg.c.i);
    else sb_puts(b, "<const>");
    if (as_uop) sb_printf(b, ", dtypes.%s)", u->dtype->name);
    return;
  case TG_OP_BUFFER: case TG_OP_PARAM: sb_puts(b, u->arg.kind == ARG_PARAM ? u->arg.param->name : "?"); return;
  case TG_OP_RANGE: sb_printf(b, "r%lld", u->arg.kind == ARG_RANGE ? (long long)u->arg.range->axis_id : -1LL); return;
  case TG_OP_ADD: bin = "+"; break;
  case TG_OP_MUL: bin = "*"; break;
  case TG_OP_SUB: bin = "-"; break;
  case TG_OP_FLOORDIV: bin = "//"; break;
  case TG_OP_FLOORMOD: bin = "%"; break;
  case TG_OP_CMPLT: bin = "<"; break;
  case TG_OP_AND: bin = "&"; break;
  case TG_OP_OR: bin = "|"; break;
  case TG_OP_XOR: bin = "^"; break;
  case TG_OP_SHL: bin = "<<"; break;
  case TG_OP_SHR: bin = ">>"; break;
  default: break;
  }
  if (bin && u->nsrc == 2) {
    sb_putc(b, '(');
    render_py(b, u->src[0], depth + 1, u->src[1]->op == TG_OP_CONST);
    sb_puts(b, bin);
    render_py(b, u->src[1], depth + 1, false);
    sb_putc(b, ')');
    return;
  }
  const char *method = NULL;
  switch (uop_op(u)) {
  case TG_OP_MAX: method = "maximum"; break;
  case TG_OP_CMPNE: method = "ne"; break;
  case TG_OP_CMPEQ: method = "eq"; break;
  case TG_OP_WHERE: method = "where"; break;
  default: break;
  }
  if (method) {
    sb_putc(b, '(');
    render_py(b, u->src[0], depth + 1, true);
    sb_printf(b, ").%s(", method);
    for (uint32_t i = 1; i < u->nsrc; i++) {
      if (i > 1) sb_puts(b, ", ");
      render_py(b, u->src[i], depth + 1, false);
    }
    sb_putc(b, ')');
    return;
  }
  if (uop_op(u) == TG_OP_CAST && u->nsrc == 1) {
    render_py(b, u->src[0], depth + 1, true);
    sb_printf(b, ".cast(dtypes.%s)", u->dtype->name);
    return;
  }
  sb_printf(b, "UOp(Ops.%s, dtypes.%s, (", uop_op_name(uop_op(u)), u->dtype->name);
  for (uint32_t i = 0; i < u->nsrc; i++) {
    render_py(b, u->src[i], depth + 1, true);
    sb_puts(b, ",");
  }
  sb_puts(b, "))");
}

static char *render(const UOp *u) {
  StrBuf b;
  sb_init(&b);
  render_py(&b, u, 0, true);
  return sb_take(&b);
}

static void print_i128(const char *label, i128 v) {
  if (v > (i128)INT64_MAX) printf("%s=+huge", label);
  else if (v < (i128)INT64_MIN) printf("%s=-huge", label);
  else printf("%s=%" PRId64, label, (int64_t)v);
}

/* ---- checking ---- */
typedef struct Outcome {
  bool bad;
  bool at_point; /* the failure happened at `point` (else it is about the whole graph) */
  char why[200];
  int point[MAX_LEAVES];
  EvalValue orig, simp;
  char simp_msg[256];
} Outcome;

static void check_case(const Case *c, UOp *orig, UOp *simp, Outcome *o) {
  memset(o, 0, sizeof *o);
  if (!simp) {
    o->bad = true;
    snprintf(o->why, sizeof o->why, "uop_simplify failed: %s", tg_last_error());
    return;
  }
  if (simp->dtype != orig->dtype) {
    o->bad = true;
    snprintf(o->why, sizeof o->why, "dtype changed: %s -> %s", orig->dtype->name, simp->dtype->name);
    return;
  }
  EvalProgram *po = eval_compile(orig), *ps = eval_compile(simp);
  if (!po || !ps) {
    o->bad = true;
    snprintf(o->why, sizeof o->why, "cannot evaluate the %s graph: %s", po ? "simplified" : "original",
             tg_last_error());
    eval_program_free(po);
    eval_program_free(ps);
    return;
  }
  i128 omin = uop_vmin(orig), omax = uop_vmax(orig), smin = uop_vmin(simp), smax = uop_vmax(simp);
  EvalEnv env;
  eval_env_init(&env);
  int val[MAX_LEAVES];
  for (int i = 0; i < c->nleaves; i++) val[i] = c->leaf[i].lo;
  for (;;) {
    for (int i = 0; i < c->nleaves; i++) {
      if (c->leaf[i].is_range) eval_env_bind_node(&env, c->leaf[i].node, val[i]);
      else eval_env_bind_var(&env, c->leaf[i].name, val[i]);
    }
    EvalValue ro = eval_run(po, &env);
    if (ro.state == EVAL_OK) {
      EvalValue rs = eval_run(ps, &env);
      const char *why = NULL;
      if (rs.state != EVAL_OK) why = "the simplified graph has no value where the original has one";
      else if (rs.v != ro.v) why = "values differ";
      else if (ro.v < omin || ro.v > omax) why = "original value outside its vmin/vmax";
      else if (rs.v < smin || rs.v > smax) why = "simplified value outside its vmin/vmax";
      if (why) {
        o->bad = true;
        o->at_point = true;
        snprintf(o->why, sizeof o->why, "%s", why);
        memcpy(o->point, val, sizeof val);
        o->orig = ro;
        o->simp = rs;
        snprintf(o->simp_msg, sizeof o->simp_msg, "%s", eval_last_message(ps));
        break;
      }
    }
    int i = 0; /* next grid point (mixed radix) */
    while (i < c->nleaves && val[i] == c->leaf[i].hi) {
      val[i] = c->leaf[i].lo;
      i++;
    }
    if (i == c->nleaves) break;
    val[i]++;
  }
  eval_env_free(&env);
  eval_program_free(po);
  eval_program_free(ps);
}

static void report(uint64_t index, const Case *c, UOp *orig, UOp *simp, const Outcome *o) {
  char *ro = render(orig);
  char *rs = simp ? render(simp) : NULL;
  printf("mismatch in expression %" PRIu64 " (rerun with FUZZ_ONLY=%" PRIu64 "): %s\n", index, index, o->why);
  for (int i = 0; i < c->nleaves; i++) {
    const Leaf *l = &c->leaf[i];
    if (l->is_range) printf("  %s = UOp.range(%d, %d%s)\n", l->name, l->hi + 1, i,
                            c->dt == DT_WEAKINT ? "" : ", dtype=dtypes.int");
    else printf("  %s = UOp.variable(\"%s\", %d, %d%s)\n", l->name, l->name, l->lo, l->hi,
                c->dt == DT_WEAKINT ? "" : ", dtypes.int");
  }
  printf("  expr       = %s\n", ro);
  if (rs) printf("  simplified = %s\n", rs);
  if (o->at_point) {
    printf("  at");
    for (int i = 0; i < c->nleaves; i++) printf(" %s=%d", c->leaf[i].name, o->point[i]);
    print_i128(": original", o->orig.v);
    if (o->simp.state == EVAL_OK) print_i128(", simplified", o->simp.v);
    else printf(", simplified is %s (%s)", eval_state_name(o->simp.state), o->simp_msg);
    printf("\n  bounds:");
    print_i128(" original vmin", uop_vmin(orig));
    print_i128(" vmax", uop_vmax(orig));
    if (simp) {
      print_i128(", simplified vmin", uop_vmin(simp));
      print_i128(" vmax", uop_vmax(simp));
    }
    printf("\n");
  }
  tg_free(ro);
  tg_free(rs);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s N SEED\n", argv[0]);
    return 2;
  }
  char *end;
  uint64_t n = strtoull(argv[1], &end, 10);
  if (*end) return fprintf(stderr, "fuzz_symbolic: N must be a number\n"), 2;
  uint64_t seed = strtoull(argv[2], &end, 10);
  if (*end) return fprintf(stderr, "fuzz_symbolic: SEED must be a number\n"), 2;
  int64_t only = tg_getenv_int("FUZZ_ONLY", -1);
  bool neg_div = tg_getenv_int("FUZZ_NEG_DIV", 0) != 0;
  bool verbose = tg_getenv_int("FUZZ_VERBOSE", 0) != 0 || only >= 0;
  uint64_t mismatches = 0, done = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (only >= 0 && i != (uint64_t)only) continue;
    rng_state = tg_hash_mix(seed * 0x2545f4914f6cdd1dULL + 1, i); /* each expression reproducible on its own */
    UOpScope scope = uop_scope_begin();
    Case c;
    memset(&c, 0, sizeof c);
    c.neg_div = neg_div;
    make_leaves(&c);
    int kind = rng_int(0, 99);
    UOp *orig = kind < 75 ? random_int_expr(&c, rng_int(2, 6))
                : kind < 90 ? random_bool_expr(&c, 2, NULL) : random_divmod_expr(&c, 2);
    UOp *simp = uop_simplify(orig);
    Outcome o;
    check_case(&c, orig, simp, &o);
    if (verbose) {
      char *ro = render(orig), *rs = simp ? render(simp) : NULL;
      printf("%" PRIu64 ": %s  -->  %s\n", i, ro, rs ? rs : "(failed)");
      tg_free(ro);
      tg_free(rs);
    }
    if (o.bad) {
      if (mismatches < MAX_REPORTED || only >= 0) report(i, &c, orig, simp, &o);
      mismatches++;
    }
    uop_scope_end(scope);
    done++;
  }
  if (verbose) printf("live UOps at the end: %zu\n", uop_live_count());
  printf("fuzz_symbolic: %" PRIu64 " expressions, %" PRIu64 " mismatches\n", done, mismatches);
  return mismatches ? 1 : 0;
}
