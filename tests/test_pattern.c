/* test_pattern.c — the rule engine: pattern syntax (valid forms in-process, syntax errors in a forked child),
 * matching (commutative orders, repeated names, alternatives, "...", "*p", args, dtypes, literals, backtracking),
 * templates, early reject, pm_graph_rewrite modes (fixed point, bottom-up, walk, enter_calls), loop detection,
 * substitution, memory, deep graphs, and a throughput micro-benchmark (printed, not asserted). */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "uop/pattern.h"

/* an opaque leaf: NOOP of a dtype, told apart by its arg */
static UOp *leaf(const DType *d, int64_t k) { return uop_new(TG_OP_NOOP, d, NULL, 0, arg_int(k)); }
static UOp *ci(int64_t v) { return uop_const_int(DT_INT32, v); }

/* ---- callbacks ---- */
static UOp *seen_caps[8];
static int calls;
static UOp *record_caps(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  calls++;
  for (int i = 0; i < 3; i++) seen_caps[i] = m[i];
  return leaf(root->dtype, 999);
}
static UOp *record_two(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  calls++;
  seen_caps[0] = m[0];
  seen_caps[1] = m[1];
  return leaf(root->dtype, 999);
}
/* succeeds only when the first capture is leaf 2: needs the second source order */
static UOp *want_leaf2_first(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  calls++;
  return m[0]->op == TG_OP_NOOP && m[0]->arg.i == 2 ? leaf(root->dtype, 999) : NULL;
}
static UOp *return_root(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  calls++;
  return root;
}
/* (ADD (ADD x c1) c2) -> x + (c1+c2) */
static UOp *fold_add_consts(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_add(m[0], uop_const_like_int(m[1], m[1]->arg.c.i + m[2]->arg.c.i));
}
static UOp *noop_1_to_2(RwCtx *rw, UOp *root, UOp **m) { TG_UNUSED(rw), TG_UNUSED(m); return leaf(root->dtype, 2); }
static UOp *noop_2_to_3(RwCtx *rw, UOp *root, UOp **m) { TG_UNUSED(rw), TG_UNUSED(m); return leaf(root->dtype, 3); }
static UOp *noop_3_to_1(RwCtx *rw, UOp *root, UOp **m) { TG_UNUSED(rw), TG_UNUSED(m); return leaf(root->dtype, 1); }
static UOp *const_plus_one(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_const_like_int(m[0], m[0]->arg.c.i + 1);
}
static UOp *count_ctx(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(root), TG_UNUSED(m);
  (*(int *)rw->ctx)++;
  return NULL;
}
static UOp *to_float_leaf(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root), TG_UNUSED(m);
  return leaf(DT_FLOAT32, 70);
}

static RuleSet *nested_set;
/* a callback that runs a whole rewrite of its capture (as symbolic rules call simplify) */
static UOp *simplify_inside_cast(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  UOp *inner = pm_graph_rewrite(m[0], nested_set, NULL, 0, NULL, "nested");
  return inner && inner != m[0] ? uop_cast(inner, root->dtype) : NULL;
}

/* ---- parser: every syntax form compiles; errors panic naming the rule and position (checked in a child) ---- */

static const Rule syntax_rules[] = {
    RULE("x", record_caps, NULL),
    RULE("_", record_caps, NULL),
    RULE("c:CONST", record_caps, NULL),
    RULE("CONST|RANGE", record_caps, NULL),
    RULE("(ADD x y)", record_caps, NULL),
    RULE("(=ADD x y)", record_caps, NULL),
    RULE("(Binary x y)", record_caps, NULL),
    RULE("(ALU|CAST x ...)", record_caps, NULL),
    RULE("(SINK *x)", record_caps, NULL),
    RULE("(SINK *CONST)", record_caps, NULL),
    RULE("(SINK ...)", record_caps, NULL),
    RULE("(GETTUPLE=1 x)", record_caps, NULL),
    RULE("(GETTUPLE=-2 x)", record_caps, NULL),
    RULE("(REDUCE=ADD x ...)", record_caps, NULL),
    RULE("(SPECIAL=\"gidx0\" _)", record_caps, NULL),
    RULE("(ADD x 0)", NULL, "x"),
    RULE("(MUL x -1)", NULL, "(NEG x)"),
    RULE("(MUL x 2.5)", record_caps, NULL),
    RULE("(MUL x 1e3)", record_caps, NULL),
    RULE("{inf|-inf|nan|invalid|true|false}", record_caps, NULL),
    RULE("{(ADD x 0)|(MUL x 1)}", NULL, "x"),
    RULE("x.float", record_caps, NULL),
    RULE("x.ints|bool", record_caps, NULL),
    RULE("x.uints|sints|floats|weaks|index", record_caps, NULL),
    RULE("(ADD.int x y).int", record_caps, NULL),
    RULE("(CAST.float x:CONST.half)", record_caps, NULL),
    RULE("  ( ADD  x:( MUL a b )  c:CONST )  ", record_caps, NULL),
    RULE("(WHERE c {x|(CAST x)} 0)", record_caps, NULL),
    RULE("(ADD x x)", NULL, "(MUL x 2)"),
    RULE("(CAST x)", NULL, "(CAST.float (ADD x 1))"),
    RULE("(SPECIAL x)", NULL, "(SPECIAL=\"lidx1\" x)"),
    RULE("(GETTUPLE x)", NULL, "(GETTUPLE=3 x)"),
    RULE("(CMPNE x x)", NULL, "false"),
};

static void test_syntax_valid(void) {
  RuleSet *rs = PM_NEW("syntax", syntax_rules);
  CHECK_EQ_INT(pm_rule_count(rs), TG_ARRAY_LEN(syntax_rules));
  CHECK_EQ_STR(pm_name(rs), "syntax");
  pm_free(rs);
}

/* Runs pm_new on one bad rule in a child; true when it aborted with a message naming the rule and a position. */
static bool bad_rule_panics(const char *pattern, const char *tmpl, const char *expect) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    signal(SIGABRT, SIG_DFL);
    Rule r[1] = {{pattern, tmpl ? NULL : record_caps, tmpl, "bad"}};
    pm_new("bad_set", r, 1);
    _exit(0); /* no panic: the check fails */
  }
  close(fd[1]);
  char buf[4096];
  size_t n = 0;
  ssize_t k;
  while ((k = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)k;
  buf[n] = 0;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  bool aborted = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
  return aborted && strstr(buf, "bad_set") && strstr(buf, "position") && strstr(buf, expect);
}

static void test_syntax_errors(void) {
  CHECK(bad_rule_panics("(ADD x", NULL, "missing ')'"));
  CHECK(bad_rule_panics("(FOO x)", NULL, "unknown op"));
  CHECK(bad_rule_panics("x.floaty", NULL, "unknown dtype"));
  CHECK(bad_rule_panics("(ADD x y) z", NULL, "unexpected"));
  CHECK(bad_rule_panics("(SINK x *y)", NULL, "only source"));
  CHECK(bad_rule_panics("(SINK ... x)", NULL, "last source"));
  CHECK(bad_rule_panics("(ADD x y)", "(ADD x z)", "not a capture"));
  CHECK(bad_rule_panics("(ADD x y)", "(ADD x _)", "cannot be built"));
  CHECK(bad_rule_panics("{x|y", NULL, "expected '|' or '}'"));
  CHECK(bad_rule_panics("(GETTUPLE=1.5 x)", NULL, "arg must be"));
}

/* ---- matching ---- */

static void test_commutative_and_order(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule rules[] = {RULE("(ADD x c:CONST)", record_two, NULL)};
  static const Rule strict[] = {RULE("(=ADD x c:CONST)", record_two, NULL)};
  static const Rule noncomm[] = {RULE("(CMPLT x c:CONST)", record_two, NULL)};
  static const Rule order[] = {RULE("(ADD (MUL b a) c)", record_caps, NULL)};
  RuleSet *rs = PM_NEW("comm", rules), *st = PM_NEW("strict", strict), *nc = PM_NEW("noncomm", noncomm);
  RuleSet *ord = PM_NEW("order", order);
  UOp *x = leaf(DT_INT32, 1), *c = ci(5);
  calls = 0;
  CHECK(pm_rewrite(rs, uop_add(x, c), NULL) != NULL);
  CHECK(seen_caps[0] == x && seen_caps[1] == c);
  CHECK(pm_rewrite(rs, uop_add(c, x), NULL) != NULL); /* c+x matches x+c */
  CHECK(seen_caps[0] == x && seen_caps[1] == c);
  CHECK(pm_rewrite(st, uop_add(x, c), NULL) != NULL);
  CHECK(pm_rewrite(st, uop_add(c, x), NULL) == NULL);  /* strict order */
  CHECK(pm_rewrite(nc, uop_lt(x, c), NULL) != NULL);
  CHECK(pm_rewrite(nc, uop_lt(c, x), NULL) == NULL);   /* CMPLT is not commutative */
  /* captures arrive in order of first appearance: b, a, c */
  UOp *a = leaf(DT_INT32, 2), *b = leaf(DT_INT32, 3);
  CHECK(pm_rewrite(ord, uop_add(uop_mul(b, a), x), NULL) != NULL);
  CHECK(seen_caps[0] == b && seen_caps[1] == a && seen_caps[2] == x);
  CHECK(pm_rewrite(ord, uop_add(x, uop_mul(b, a)), NULL) != NULL);
  CHECK(seen_caps[0] == b && seen_caps[1] == a && seen_caps[2] == x);
  pm_free(rs), pm_free(st), pm_free(nc), pm_free(ord);
  uop_scope_end(sc);
}

static void test_repeated_names_and_backtracking(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule sq[] = {RULE("(MUL x x)", record_two, NULL)};
  static const Rule both[] = {RULE("(ADD x y)", want_leaf2_first, NULL)};
  static const Rule first_root[] = {RULE("(ADD x y)", return_root, NULL), RULE("(ADD x y)", record_two, NULL)};
  static const Rule nested[] = {RULE("(ADD (MUL x y) (MUL y x))", record_two, NULL)};
  RuleSet *s = PM_NEW("sq", sq), *b = PM_NEW("both", both), *fr = PM_NEW("first_root", first_root);
  RuleSet *ne = PM_NEW("nested", nested);
  UOp *x = leaf(DT_INT32, 1), *y = leaf(DT_INT32, 2);
  CHECK(pm_rewrite(s, uop_mul(x, x), NULL) != NULL);
  CHECK(pm_rewrite(s, uop_mul(x, y), NULL) == NULL); /* only squares */
  /* the callback is tried on each complete match: first order fails, the swapped order succeeds */
  calls = 0;
  CHECK(pm_rewrite(b, uop_add(x, y), NULL) != NULL);
  CHECK_EQ_INT(calls, 2);
  calls = 0;
  CHECK(pm_rewrite(b, uop_add(x, x), NULL) == NULL);
  CHECK_EQ_INT(calls, 2);
  /* a callback answering root ends that rule (tinygrad) and the next rule is tried */
  calls = 0;
  CHECK(pm_rewrite(fr, uop_add(x, y), NULL) != NULL);
  CHECK_EQ_INT(calls, 2);
  /* nested commutative patterns backtrack across both levels: x*y + x*y (the two MULs are one node) */
  UOp *xy = uop_mul(x, y), *yx = uop_mul(y, x);
  CHECK(pm_rewrite(ne, uop_add(xy, yx), NULL) != NULL);
  CHECK(pm_rewrite(ne, uop_add(xy, xy), NULL) != NULL);
  CHECK(pm_rewrite(ne, uop_add(xy, uop_mul(x, x)), NULL) == NULL);
  pm_free(s), pm_free(b), pm_free(fr), pm_free(ne);
  uop_scope_end(sc);
}

static void test_sources_alts_args(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule rules[] = {
      RULE("(SINK x ...)", record_caps, NULL),
  };
  static const Rule exact[] = {RULE("(SINK x)", record_caps, NULL)};
  static const Rule every[] = {RULE("(SINK *CONST)", record_caps, NULL)};
  static const Rule every_same[] = {RULE("(SINK *x)", record_caps, NULL)};
  static const Rule alts[] = {RULE("(CAST {c:CONST|(NEG c:CONST)})", record_caps, NULL)};
  static const Rule args[] = {
      RULE("(GETTUPLE=1 x)", record_caps, NULL),
      RULE("(SPECIAL=\"gidx0\" x)", record_caps, NULL),
      RULE("(REDUCE=MAX x ...)", record_caps, NULL),
  };
  RuleSet *any = PM_NEW("anylen", rules), *ex = PM_NEW("exact", exact), *ev = PM_NEW("every", every);
  RuleSet *es = PM_NEW("every_same", every_same), *al = PM_NEW("alts", alts), *ar = PM_NEW("args", args);
  UOp *a = leaf(DT_INT32, 1), *b = leaf(DT_INT32, 2), *c1 = ci(1), *c2 = ci(2);
  UOp *s1[] = {a}, *s3[] = {a, b, c1}, *sc2[] = {c1, c2}, *sa[] = {a, a};
  CHECK(pm_rewrite(any, uop_sink(s1, 1), NULL) != NULL && seen_caps[0] == a);
  CHECK(pm_rewrite(any, uop_sink(s3, 3), NULL) != NULL && seen_caps[0] == a);
  CHECK(pm_rewrite(any, uop_sink(NULL, 0), NULL) == NULL);
  CHECK(pm_rewrite(ex, uop_sink(s1, 1), NULL) != NULL);
  CHECK(pm_rewrite(ex, uop_sink(s3, 3), NULL) == NULL);
  CHECK(pm_rewrite(ev, uop_sink(sc2, 2), NULL) != NULL);
  CHECK(pm_rewrite(ev, uop_sink(s3, 3), NULL) == NULL);
  CHECK(pm_rewrite(es, uop_sink(sa, 2), NULL) != NULL);  /* one name: every source is the same node */
  CHECK(pm_rewrite(es, uop_sink(sc2, 2), NULL) == NULL);
  UOp *cast_c = uop_cast(c1, DT_FLOAT32), *cast_neg = uop_cast(uop_alu1(TG_OP_NEG, c2), DT_FLOAT32);
  CHECK(pm_rewrite(al, cast_c, NULL) != NULL && seen_caps[0] == c1);
  CHECK(pm_rewrite(al, cast_neg, NULL) != NULL && seen_caps[0] == c2);
  CHECK(pm_rewrite(al, uop_cast(a, DT_FLOAT32), NULL) == NULL);
  UOp *tup[] = {a, b};
  UOp *tuple = uop_new(TG_OP_TUPLE, NULL, tup, 2, arg_none());
  CHECK(pm_rewrite(ar, uop_new(TG_OP_GETTUPLE, NULL, &tuple, 1, arg_int(1)), NULL) != NULL);
  CHECK(pm_rewrite(ar, uop_new(TG_OP_GETTUPLE, NULL, &tuple, 1, arg_int(0)), NULL) == NULL);
  CHECK(pm_rewrite(ar, uop_special(c1, "gidx0"), NULL) != NULL);
  CHECK(pm_rewrite(ar, uop_special(c1, "gidx1"), NULL) == NULL);
  CHECK(pm_rewrite(ar, uop_new(TG_OP_REDUCE, NULL, &a, 1, arg_reduce(TG_OP_MAX, 1)), NULL) != NULL);
  CHECK(pm_rewrite(ar, uop_new(TG_OP_REDUCE, NULL, &a, 1, arg_reduce(TG_OP_ADD, 1)), NULL) == NULL);
  CHECK(pm_rewrite(ar, uop_new(TG_OP_REDUCE, NULL, &a, 1, arg_op(TG_OP_MAX)), NULL) != NULL);
  pm_free(any), pm_free(ex), pm_free(ev), pm_free(es), pm_free(al), pm_free(ar);
  uop_scope_end(sc);
}

static void test_dtypes_and_literals(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule flt[] = {RULE("x.float", record_caps, NULL)};
  static const Rule idx[] = {RULE("(NOOP).index", record_caps, NULL)};
  static const Rule grp[] = {RULE("(NOOP).uints|bool", record_caps, NULL)};
  static const Rule inner[] = {RULE("(ADD.half x y)", record_caps, NULL)};
  static const Rule zero[] = {RULE("(ADD x 0)", record_caps, NULL)};
  static const Rule lits[] = {
      RULE("(MUL x -1)", record_caps, NULL), RULE("(MUL x 2.5)", record_caps, NULL),
      RULE("(MUL x inf)", record_caps, NULL), RULE("(MUL x -inf)", record_caps, NULL),
      RULE("(MUL x nan)", record_caps, NULL), RULE("(AND x true)", record_caps, NULL),
      RULE("(WHERE c x invalid)", record_caps, NULL),
  };
  RuleSet *f = PM_NEW("flt", flt), *ix = PM_NEW("idx", idx), *g = PM_NEW("grp", grp), *in = PM_NEW("inner", inner);
  RuleSet *z = PM_NEW("zero", zero), *l = PM_NEW("lits", lits);
  CHECK(pm_rewrite(f, leaf(DT_FLOAT32, 1), NULL) != NULL);
  CHECK(pm_rewrite(f, leaf(DT_FLOAT16, 1), NULL) == NULL);
  CHECK(pm_rewrite(f, leaf(dt_vec(DT_FLOAT32, 4), 1), NULL) == NULL); /* a vector is not its scalar */
  CHECK(pm_rewrite(ix, leaf(DT_WEAKINT, 1), NULL) != NULL);
  CHECK(pm_rewrite(ix, leaf(DT_UINT8, 1), NULL) != NULL);
  CHECK(pm_rewrite(ix, leaf(DT_BOOL, 1), NULL) == NULL);
  CHECK(pm_rewrite(g, leaf(DT_UINT64, 1), NULL) != NULL && pm_rewrite(g, leaf(DT_BOOL, 1), NULL) != NULL);
  CHECK(pm_rewrite(g, leaf(DT_INT64, 1), NULL) == NULL);
  UOp *h = leaf(DT_FLOAT16, 1), *fl = leaf(DT_FLOAT32, 1);
  CHECK(pm_rewrite(in, uop_add(h, h), NULL) != NULL);
  CHECK(pm_rewrite(in, uop_add(fl, fl), NULL) == NULL);
  /* 0 matches int 0, float 0.0 and -0.0, false; not 1 */
  UOp *xi = leaf(DT_INT32, 1), *xb = leaf(DT_BOOL, 1);
  CHECK(pm_rewrite(z, uop_add(xi, ci(0)), NULL) != NULL);
  CHECK(pm_rewrite(z, uop_add(fl, uop_const_float(DT_FLOAT32, 0.0)), NULL) != NULL);
  CHECK(pm_rewrite(z, uop_add(fl, uop_const_float(DT_FLOAT32, -0.0)), NULL) != NULL);
  CHECK(pm_rewrite(z, uop_add(xb, uop_const_bool(false)), NULL) != NULL);
  CHECK(pm_rewrite(z, uop_add(xi, ci(1)), NULL) == NULL);
  CHECK(pm_rewrite(l, uop_mul(xi, ci(-1)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_mul(xi, uop_const_int(DT_UINT64, -1)), NULL) == NULL); /* 2^64-1 is not -1 */
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, -1.0)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, 2.5)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, 2.0)), NULL) == NULL);
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, INFINITY)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, -INFINITY)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_mul(fl, uop_const_float(DT_FLOAT32, NAN)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_and(xb, uop_const_bool(true)), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_where(xb, xi, uop_invalid()), NULL) != NULL);
  CHECK(pm_rewrite(l, uop_where(xb, xi, ci(0)), NULL) == NULL);
  pm_free(f), pm_free(ix), pm_free(g), pm_free(in), pm_free(z), pm_free(l);
  uop_scope_end(sc);
}

static void test_early_reject(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule rules[] = {
      RULE("(ADD x c:CONST)", return_root, NULL), /* requires a CONST source */
      RULE("(ADD x y)", return_root, NULL),       /* requires nothing */
      RULE("(ADD (MUL a b) (RANGE))", return_root, NULL),
  };
  RuleSet *rs = PM_NEW("reject", rules);
  int prev_track = pm_track_stats(1);
  UOp *x = leaf(DT_INT32, 1), *y = leaf(DT_INT32, 2);
  uint64_t m0, a0, m1, a1, m2, a2;
  pm_rewrite(rs, uop_add(x, y), NULL);
  pm_rewrite(rs, uop_add(uop_mul(x, y), y), NULL);
  pm_rule_stats(rs, 0, &m0, &a0);
  pm_rule_stats(rs, 1, &m1, &a1);
  pm_rule_stats(rs, 2, &m2, &a2);
  CHECK_EQ_INT(a0, 0); /* no CONST among the sources: never attempted */
  CHECK_EQ_INT(a1, 2);
  CHECK_EQ_INT(a2, 0); /* MUL present but no RANGE */
  pm_rewrite(rs, uop_add(x, ci(3)), NULL);
  pm_rule_stats(rs, 0, &m0, &a0);
  CHECK_EQ_INT(a0, 1);
  CHECK_EQ_INT(m0, 0); /* the callback answered root: not a match */
  CHECK(!pm_rule_stats(rs, 3, &m0, &a0));
  pm_track_stats(prev_track);
  pm_free(rs);
  uop_scope_end(sc);
}

/* ---- templates ---- */

static void test_templates(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule rules[] = {
      RULE("(ADD x x)", NULL, "(MUL x 2)"),
      RULE("(MUL x 0)", NULL, "0"),
      RULE("(CMPNE x x)", NULL, "false"),
      RULE("(NEG x.int)", NULL, "(CAST.float (ADD x 1))"),
      RULE("(SPECIAL x)", NULL, "(SPECIAL=\"lidx1\" x)"),
      RULE("(CMPLT x c:CONST)", NULL, "(WHERE (CMPLT x c) 1.5 x)"),
      RULE("(SQRT x)", NULL, "(CAST.int x)"),
  };
  RuleSet *rs = PM_NEW("tmpl", rules);
  UOp *x = leaf(DT_INT32, 1), *f = leaf(DT_FLOAT32, 1);
  UOp *r = pm_rewrite(rs, uop_add(x, x), NULL);
  CHECK(r && r == uop_mul(x, ci(2)));
  r = pm_rewrite(rs, uop_add(f, f), NULL);
  CHECK(r && r == uop_mul(f, uop_const_float(DT_FLOAT32, 2.0))); /* the literal takes its sibling's dtype */
  r = pm_rewrite(rs, uop_mul(f, uop_const_float(DT_FLOAT32, 0.0)), NULL);
  CHECK(r && r == uop_const_float(DT_FLOAT32, 0.0)); /* alone: the root's dtype */
  r = pm_rewrite(rs, uop_ne(x, x), NULL);
  CHECK(r && r == uop_const_bool(false));
  r = pm_rewrite(rs, uop_alu1(TG_OP_NEG, x), NULL);
  CHECK(r && r == uop_cast(uop_add(x, ci(1)), DT_FLOAT32));
  r = pm_rewrite(rs, uop_alu1(TG_OP_NEG, f), NULL);
  CHECK(r == NULL); /* x.int */
  r = pm_rewrite(rs, uop_special(ci(4), "gidx0"), NULL);
  CHECK(r && r == uop_special(ci(4), "lidx1"));
  r = pm_rewrite(rs, uop_lt(f, uop_const_float(DT_FLOAT32, 3.0)), NULL);
  CHECK(r && r->op == TG_OP_WHERE && r->dtype == DT_FLOAT32 && r->src[1] == uop_const_float(DT_FLOAT32, 1.5));
  r = pm_rewrite(rs, uop_alu1(TG_OP_SQRT, f), NULL);
  CHECK(r && r == uop_cast(f, DT_INT32));
  r = pm_rewrite(rs, uop_alu1(TG_OP_SQRT, x), NULL);
  CHECK(r == x); /* a CAST to the dtype x already has is x */
  pm_free(rs);
  uop_scope_end(sc);
}

/* ---- pm_graph_rewrite ---- */

static const Rule simple_rules[] = {
    RULE("(ADD x 0)", NULL, "x"),
    RULE("(MUL x 1)", NULL, "x"),
    RULE("(ADD (ADD x c1:CONST) c2:CONST)", fold_add_consts, NULL),
};

static void test_fixed_point(void) {
  UOpScope sc = uop_scope_begin();
  RuleSet *rs = PM_NEW("simple", simple_rules);
  UOp *x = leaf(DT_INT32, 1);
  UOp *e = uop_mul(uop_add(uop_mul(x, ci(1)), ci(0)), ci(1));
  CHECK(pm_graph_rewrite(e, rs, NULL, 0, NULL, "t") == x);
  /* x+1+1+1+1 folds step by step; the folded sums are rewritten again */
  UOp *chain = x;
  for (int i = 0; i < 4; i++) chain = uop_add(chain, ci(1));
  CHECK(pm_graph_rewrite(chain, rs, NULL, 0, NULL, "t") == uop_add(x, ci(4)));
  /* (x + 3) + -3 -> x + 0 -> x: a rule's result is rewritten again */
  CHECK(pm_graph_rewrite(uop_add(uop_add(x, ci(3)), ci(-3)), rs, NULL, 0, NULL, "t") == x);
  /* shared subtrees are rewritten once, parents see the new node */
  UOp *sh = uop_add(x, ci(0));
  UOp *srcs[] = {uop_mul(sh, sh), sh};
  UOp *sink = uop_sink(srcs, 2);
  UOp *xs[] = {uop_mul(x, x), x};
  CHECK(pm_graph_rewrite(sink, rs, NULL, 0, NULL, "t") == uop_sink(xs, 2));
  /* nothing matches: the same node comes back */
  UOp *y = uop_add(x, ci(7));
  CHECK(pm_graph_rewrite(y, rs, NULL, 0, NULL, "t") == y);
  /* ctx reaches the callbacks */
  static const Rule counting[] = {RULE("x", count_ctx, NULL)};
  RuleSet *cs = PM_NEW("count", counting);
  int count = 0;
  pm_graph_rewrite(uop_add(x, ci(7)), cs, &count, 0, NULL, "t");
  CHECK_EQ_INT(count, 3); /* each distinct node once */
  /* a source whose dtype changes re-derives the parent's dtype */
  static const Rule tofloat[] = {RULE("(NOOP=5)", to_float_leaf, NULL)};
  RuleSet *tf = PM_NEW("tofloat", tofloat);
  UOp *five = leaf(DT_INT32, 5);
  UOp *r = pm_graph_rewrite(uop_add(five, five), tf, NULL, 0, NULL, "t");
  CHECK(r && r->op == TG_OP_ADD && r->dtype == DT_FLOAT32);
  pm_free(rs), pm_free(cs), pm_free(tf);
  uop_scope_end(sc);
}

static void test_bottom_up_and_walk(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule rules[] = {
      RULE("(ADD x 0)", NULL, "x"),
      RULE("(MUL (ADD x 0) y)", NULL, "(SUB x y)"),
  };
  RuleSet *rs = PM_NEW("order", rules);
  UOp *x = leaf(DT_INT32, 1), *y = leaf(DT_INT32, 2);
  UOp *e = uop_mul(uop_add(x, ci(0)), y);
  /* default: the source x+0 becomes x first, so the parent rule never sees it */
  CHECK(pm_graph_rewrite(e, rs, NULL, 0, NULL, "t") == uop_mul(x, y));
  /* bottom-up: the parent is matched before its sources */
  UOp *sub = uop_new(TG_OP_SUB, NULL, (UOp *[]){x, y}, 2, arg_none());
  CHECK(pm_graph_rewrite(e, rs, NULL, RW_BOTTOM_UP, NULL, "t") == sub);
  /* bpm next to a pm: bpm first on the way down, pm on the way up */
  static const Rule top[] = {RULE("(MUL (ADD x 0) y)", NULL, "(SUB x y)")};
  static const Rule bottom[] = {RULE("(ADD x 0)", NULL, "x")};
  RuleSet *t = PM_NEW("top", top), *b = PM_NEW("bottom", bottom);
  CHECK(pm_graph_rewrite(e, b, NULL, 0, t, "t") == sub);
  CHECK(pm_graph_rewrite(e, t, NULL, 0, b, "t") == uop_mul(x, y));
  /* bottom-up repeats to a fixed point on one node */
  static const Rule steps[] = {RULE("(NOOP=1)", noop_1_to_2, NULL), RULE("(NOOP=2)", noop_2_to_3, NULL)};
  RuleSet *st = PM_NEW("steps", steps);
  CHECK(pm_graph_rewrite(x, st, NULL, RW_BOTTOM_UP, NULL, "t") == leaf(DT_INT32, 3));
  /* walk: one pass, a replacement is not rewritten again */
  static const Rule wr[] = {RULE("(MUL x 1)", NULL, "(ADD x 0)"), RULE("(ADD x 0)", NULL, "x")};
  RuleSet *w = PM_NEW("walk", wr);
  UOp *m = uop_mul(x, ci(1));
  CHECK(pm_graph_rewrite(m, w, NULL, 0, NULL, "t") == x);
  CHECK(pm_graph_rewrite(m, w, NULL, RW_WALK, NULL, "t") == uop_add(x, ci(0)));
  CHECK(pm_graph_rewrite(x, st, NULL, RW_WALK | RW_BOTTOM_UP, NULL, "t") == leaf(DT_INT32, 2));
  /* walk still rebuilds parents whose sources changed */
  UOp *p = uop_add(uop_add(x, ci(0)), y);
  CHECK(pm_graph_rewrite(p, w, NULL, RW_WALK, NULL, "t") == uop_add(x, y));
  pm_free(rs), pm_free(t), pm_free(b), pm_free(st), pm_free(w);
  uop_scope_end(sc);
}

static void test_enter_calls(void) {
  UOpScope sc = uop_scope_begin();
  RuleSet *rs = PM_NEW("simple", simple_rules);
  UOp *x = leaf(DT_INT32, 1);
  UOp *body_src = uop_add(x, ci(0));
  UOp *body = uop_sink(&body_src, 1);
  UOp *arg = uop_add(x, ci(0));
  UOp *call = uop_new(TG_OP_CALL, DT_VOID, (UOp *[]){body, arg}, 2, arg_none());
  UOp *r = pm_graph_rewrite(call, rs, NULL, 0, NULL, "t");
  CHECK(r && r->src[0] == body && r->src[1] == x); /* the body is skipped, the other sources are not */
  r = pm_graph_rewrite(call, rs, NULL, RW_ENTER_CALLS, NULL, "t");
  CHECK(r && r->src[0] == uop_sink(&x, 1) && r->src[1] == x);
  r = pm_graph_rewrite(call, rs, NULL, RW_WALK, NULL, "t");
  CHECK(r && r->src[0] == body && r->src[1] == x);
  /* a CALL whose first source is not a body (not SINK/PROGRAM/LINEAR/COPY/CUSTOM_FUNCTION) is ordinary data */
  UOp *call2 = uop_new(TG_OP_CALL, DT_INT32, (UOp *[]){body_src, arg}, 2, arg_none());
  r = pm_graph_rewrite(call2, rs, NULL, 0, NULL, "t");
  CHECK(r && r->src[0] == x);
  /* FUNCTION: src[0] is always the body */
  UOp *arg2 = uop_mul(x, ci(1));
  UOp *fn = uop_new(TG_OP_FUNCTION, DT_VOID, (UOp *[]){body_src, arg2}, 2, arg_none());
  r = pm_graph_rewrite(fn, rs, NULL, 0, NULL, "t");
  CHECK(r && r->src[0] == body_src && r->src[1] == x);
  r = pm_graph_rewrite(fn, rs, NULL, RW_ENTER_CALLS, NULL, "t");
  CHECK(r && r->src[0] == x && r->src[1] == x);
  pm_free(rs);
  uop_scope_end(sc);
}

static void test_loops(void) {
  UOpScope sc = uop_scope_begin();
  static const Rule cycle[] = {
      RULE("(NOOP=1)", noop_1_to_2, NULL), RULE("(NOOP=2)", noop_2_to_3, NULL), RULE("(NOOP=3)", noop_3_to_1, NULL)};
  RuleSet *cy = PM_NEW("cycle", cycle);
  UOp *a = leaf(DT_INT32, 1);
  tg_clear_error();
  CHECK(pm_graph_rewrite(uop_add(a, ci(1)), cy, NULL, 0, NULL, "loopy") == NULL);
  CHECK(strstr(tg_last_error(), "loopy") && strstr(tg_last_error(), "noop_") && strstr(tg_last_error(), "(NOOP="));
  tg_clear_error();
  CHECK(pm_graph_rewrite(a, cy, NULL, RW_BOTTOM_UP, NULL, "loopy_bu") == NULL);
  CHECK(strstr(tg_last_error(), "loopy_bu") && strstr(tg_last_error(), "noop_"));
  /* a node rewritten into a graph that contains it */
  static const Rule grow[] = {RULE("x:(NOOP=1)", NULL, "(ADD x 1)")};
  RuleSet *gr = PM_NEW("grow", grow);
  tg_clear_error();
  CHECK(pm_graph_rewrite(uop_mul(a, a), gr, NULL, 0, NULL, "grow") == NULL);
  CHECK(strstr(tg_last_error(), "grow") && strstr(tg_last_error(), "(ADD x 1)"));
  /* a rule that never stops making new nodes hits REWRITE_STACK_LIMIT */
  static const Rule inc[] = {RULE("c:CONST.int", const_plus_one, NULL)};
  RuleSet *in = PM_NEW("inc", inc);
  tg_clear_error();
  CHECK(pm_graph_rewrite(ci(0), in, NULL, 0, NULL, "inc") == NULL);
  CHECK(strstr(tg_last_error(), "REWRITE_STACK_LIMIT") && strstr(tg_last_error(), "const_plus_one"));
  /* walk mode does not loop: one application */
  CHECK(pm_graph_rewrite(a, cy, NULL, RW_WALK, NULL, "t") == leaf(DT_INT32, 2));
  pm_free(cy), pm_free(gr), pm_free(in);
  uop_scope_end(sc);
}

static void test_substitute_and_concat(void) {
  UOpScope sc = uop_scope_begin();
  UOp *x = leaf(DT_INT32, 1), *y = leaf(DT_INT32, 2);
  UOp *e = uop_mul(uop_add(x, ci(1)), x);
  CHECK(uop_substitute(e, &x, &y, 1) == uop_mul(uop_add(y, ci(1)), y));
  UOp *x1 = uop_add(x, ci(1));
  CHECK(uop_substitute(e, &x, &x1, 1) == uop_mul(uop_add(x1, ci(1)), x1)); /* no re-traversal into values */
  CHECK(uop_substitute(e, &x, &x, 1) == e);
  UOp *from[] = {x1, x}, *to[] = {y, y};
  CHECK(uop_substitute(e, from, to, 2) == uop_mul(y, y)); /* the outer match wins */
  static const Rule ra[] = {RULE("(ADD x 0)", NULL, "x")};
  static const Rule rb[] = {RULE("(MUL x 1)", NULL, "x"), RULE("(ADD x 0)", NULL, "(SUB x x)")};
  RuleSet *a = PM_NEW("a", ra), *b = PM_NEW("b", rb);
  RuleSet *ab = pm_concat(a, b);
  CHECK(ab == pm_concat(a, b));
  CHECK(ab != pm_concat(b, a));
  CHECK_EQ_INT(pm_rule_count(ab), 3);
  CHECK_EQ_STR(pm_name(ab), "a+b");
  CHECK(pm_graph_rewrite(uop_mul(uop_add(x, ci(0)), ci(1)), ab, NULL, 0, NULL, "t") == x); /* a's rule first */
  CHECK(pm_graph_rewrite(uop_add(x, ci(0)), pm_concat(b, a), NULL, 0, NULL, "t") ==
        uop_new(TG_OP_SUB, NULL, (UOp *[]){x, x}, 2, arg_none()));
  pm_free(ab); /* owned by the memo: ignored */
  pm_free(a), pm_free(b);
  CHECK_EQ_INT(pm_rule_count(ab), 3);
  uop_scope_end(sc);
}

static void test_nested_rewrites(void) {
  size_t base = uop_live_count();
  UOpScope sc = uop_scope_begin();
  nested_set = PM_NEW("simple", simple_rules);
  static const Rule outer[] = {RULE("(CAST x)", simplify_inside_cast, NULL)};
  RuleSet *rs = PM_NEW("outer", outer);
  UOp *x = leaf(DT_INT32, 1);
  UOp *e = uop_add(uop_cast(uop_add(uop_add(x, ci(2)), ci(3)), DT_FLOAT32), uop_cast(uop_mul(x, ci(1)), DT_FLOAT32));
  UOp *r = pm_graph_rewrite(e, rs, NULL, 0, NULL, "outer");
  CHECK(r == uop_add(uop_cast(uop_add(x, ci(5)), DT_FLOAT32), uop_cast(x, DT_FLOAT32)));
  pm_free(rs), pm_free(nested_set);
  uop_scope_end(sc);
  CHECK_EQ_INT(uop_live_count(), base);
}

static void test_memory(void) {
  size_t base = uop_live_count();
  UOpScope sc = uop_scope_begin();
  static const Rule wr[] = {RULE("(MUL x 1)", NULL, "(ADD x 0)"), RULE("(ADD x 0)", NULL, "(SUB x 0)"),
                            RULE("(SUB x 0)", NULL, "x")};
  RuleSet *rs = PM_NEW("mem", wr);
  UOp *x = leaf(DT_INT32, 1);
  UOp *e = uop_mul(x, ci(1));
  size_t before = uop_live_count();
  CHECK(pm_graph_rewrite(e, rs, NULL, 0, NULL, "t") == x);
  CHECK_EQ_INT(uop_live_count(), before); /* the intermediates (x+0, x-0, const 0) are gone */
  UOp *kept = pm_graph_rewrite(uop_add(uop_add(x, ci(2)), ci(0)), rs, NULL, 0, NULL, "t");
  CHECK(kept == uop_add(x, ci(2)));
  pm_free(rs);
  uop_scope_end(sc);
  CHECK_EQ_INT(uop_live_count(), base);
}

/* x*1 + i + 0 ... : a deep chain (no C recursion anywhere) */
static UOp *deep_chain(UOp *x, size_t n) {
  UOp *e = x;
  for (size_t i = 0; i < n; i++) e = (i % 3 == 0) ? uop_mul(e, ci(1)) : (i % 3 == 1) ? uop_add(e, ci(0)) : uop_add(e, ci((int64_t)(i % 7)));
  return e;
}

static void test_deep_graph(void) {
  UOpScope sc = uop_scope_begin();
  RuleSet *rs = PM_NEW("simple", simple_rules);
  size_t n = tg_test_light() ? 30000 : 100000;
  UOp *x = leaf(DT_INT32, 1);
  UOp *e = deep_chain(x, n);
  UOp *r = pm_graph_rewrite(e, rs, NULL, 0, NULL, "deep");
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) total += (i % 3 == 2) ? (int64_t)(i % 7) : 0;
  CHECK(r == uop_add(x, ci(total)));
  UOp *w = pm_graph_rewrite(e, rs, NULL, RW_WALK, NULL, "deep_walk");
  CHECK(w != NULL && w != e);
  UOp *x2 = leaf(DT_INT32, 2);
  UOp *s = uop_substitute(e, &x, &x2, 1);
  CHECK(s != NULL && s != e && pm_graph_rewrite(s, rs, NULL, 0, NULL, "deep2") == uop_add(x2, ci(total)));
  pm_free(rs);
  uop_scope_end(sc);
}

/* Throughput of pm_graph_rewrite on a 100k-node index expression (printed; not a pass/fail criterion). */
static double seconds(void) { /* CPU time of this process: other jobs on the machine do not count */
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static void bench_rewrite_throughput(void) {
  if (tg_test_light()) return;
  UOpScope sc = uop_scope_begin();
  RuleSet *rs = PM_NEW("bench", simple_rules);
  UOp *x = leaf(DT_INT32, 1);
  /* ~100k nodes: a long sum of index terms ((x+k)*1 + (r+0)) % m, with identities to fold on the way */
  UOp *r0 = uop_range(ci(64), 0, AXIS_LOOP);
  UOp *acc = NULL;
  for (int64_t k = 0; k < 25000; k++) {
    UOp *t = uop_mod(uop_add(uop_mul(uop_add(x, ci(k)), ci(1)), uop_add(r0, ci(0))), ci(17 + k % 5));
    acc = acc ? uop_add(uop_add(acc, t), ci(0)) : t;
  }
  UOpVec topo = {0};
  uop_toposort(acc, NULL, NULL, &topo);
  size_t nodes = topo.len;
  tg_vec_free(&topo);
  /* first: the graph changes (folds, rebuilt parents, new nodes); then: the result again (nothing matches, the
   * engine's own cost: every node visited, every rule of its op tried) */
  UOp *fixed = pm_graph_rewrite(acc, rs, NULL, 0, NULL, "bench");
  UOpVec topo2 = {0};
  uop_toposort(fixed, NULL, NULL, &topo2);
  size_t fixed_nodes = topo2.len;
  tg_vec_free(&topo2);
  double best[2] = {1e9, 1e9};
  for (int rep = 0; rep < 6; rep++) {
    UOpScope inner = uop_scope_begin();
    UOp *in = rep % 2 ? fixed : acc;
    double t0 = seconds();
    UOp *r = pm_graph_rewrite(in, rs, NULL, 0, NULL, "bench");
    double dt = seconds() - t0;
    CHECK(r == fixed);
    uop_scope_end(inner);
    if (dt < best[rep % 2]) best[rep % 2] = dt;
  }
  /* small graphs, the common case (an index expression of ~100 nodes), rewritten many times */
  UOp *small = NULL;
  for (int64_t k = 0; k < 12; k++) {
    UOp *t = uop_mod(uop_add(uop_mul(uop_add(x, ci(k)), ci(1)), uop_add(r0, ci(0))), ci(17 + k % 5));
    small = small ? uop_add(uop_add(small, t), ci(0)) : t;
  }
  UOpVec topo3 = {0};
  uop_toposort(small, NULL, NULL, &topo3);
  size_t small_nodes = topo3.len;
  tg_vec_free(&topo3);
  int reps = 3000;
  double t0 = seconds();
  for (int i = 0; i < reps; i++) {
    UOpScope inner = uop_scope_begin();
    pm_graph_rewrite(small, rs, NULL, 0, NULL, "bench_small");
    uop_scope_end(inner);
  }
  double small_dt = (seconds() - t0) / reps;
  printf("  pattern bench: graph_rewrite of %zu nodes (changing) in %.2f ms = %.2f M nodes/s; %zu nodes (fixed) in "
         "%.2f ms = %.2f M nodes/s\n", nodes, best[0] * 1e3, (double)nodes / best[0] * 1e-6, fixed_nodes,
         best[1] * 1e3, (double)fixed_nodes / best[1] * 1e-6);
  printf("  pattern bench: %zu-node graph (changing) in %.2f us = %.0f ns/node\n", small_nodes, small_dt * 1e6,
         small_dt / (double)small_nodes * 1e9);
  pm_free(rs);
  uop_scope_end(sc);
}

void suite_pattern(void) {
  test_syntax_valid();
  test_syntax_errors();
  test_commutative_and_order();
  test_repeated_names_and_backtracking();
  test_sources_alts_args();
  test_dtypes_and_literals();
  test_early_reject();
  test_templates();
  test_fixed_point();
  test_bottom_up_and_walk();
  test_enter_calls();
  test_loops();
  test_substitute_and_concat();
  test_nested_rewrites();
  test_memory();
  test_deep_graph();
  bench_rewrite_throughput();
}
