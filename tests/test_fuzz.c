/* test_fuzz.c — the integer/bool interpreter (src/uop/eval.h), the oracle of the symbolic fuzzer: exact dtype
 * semantics (weakint exact, fixed widths wrap, floor vs truncating division), undefined values that are reported and
 * never UB, WHERE/Invalid/unbound handling, leaves, deep graphs; agreement with the constant folder (dt_const_exec_alu)
 * on every int dtype and op; and a few simplifications checked against it on a grid (tools/fuzz_symbolic does this at
 * scale). */
#include "test.h"
#include "uop/eval.h"
#include "uop/symbolic.h"

/* Evaluate a closed graph (no leaves) and return its value; *state gets the state. */
static i128 eval_closed(UOp *u, EvalState *state) {
  EvalEnv env;
  eval_env_init(&env);
  EvalValue r = uop_eval(u, &env);
  eval_env_free(&env);
  if (state) *state = r.state;
  return r.v;
}

static bool eval_is(UOp *u, long long expect) {
  EvalState st;
  i128 v = eval_closed(u, &st);
  return st == EVAL_OK && v == (i128)expect;
}

static UOp *w(int64_t v) { return uop_const_int(DT_WEAKINT, v); }

static void test_division_semantics(void) {
  /* weakint: Python's // and %, and C's truncating CDIV/CMOD */
  CHECK(eval_is(uop_idiv(w(7), w(2)), 3));
  CHECK(eval_is(uop_idiv(w(-7), w(2)), -4));
  CHECK(eval_is(uop_idiv(w(7), w(-2)), -4));
  CHECK(eval_is(uop_idiv(w(-7), w(-2)), 3));
  CHECK(eval_is(uop_mod(w(-7), w(2)), 1));
  CHECK(eval_is(uop_mod(w(7), w(-2)), -1));
  CHECK(eval_is(uop_mod(w(-6), w(3)), 0));
  CHECK(eval_is(uop_alu2(TG_OP_CDIV, w(-7), w(2)), -3));
  CHECK(eval_is(uop_alu2(TG_OP_CMOD, w(-7), w(2)), -1));
  CHECK(eval_is(uop_alu2(TG_OP_CMOD, w(7), w(-2)), 1));
  /* int8: -128 // -1 wraps back to -128 (tinygrad truncates Python's 128) */
  UOp *m = uop_const_int(DT_INT8, -128);
  CHECK(eval_is(uop_idiv(m, uop_const_int(DT_INT8, -1)), -128));
  CHECK(eval_is(uop_mod(m, uop_const_int(DT_INT8, -1)), 0));
}

static void test_wrapping(void) {
  CHECK(eval_is(uop_add(uop_const_int(DT_INT8, 100), uop_const_int(DT_INT8, 100)), -56));
  CHECK(eval_is(uop_add(uop_const_int(DT_UINT8, 200), uop_const_int(DT_UINT8, 100)), 44));
  CHECK(eval_is(uop_mul(uop_const_int(DT_INT32, 65536), uop_const_int(DT_INT32, 65536)), 0));
  CHECK(eval_is(uop_mul(uop_const_int(DT_INT32, 65536), uop_const_int(DT_INT32, 32768)), INT32_MIN));
  /* uint64: the largest value squared is 1 modulo 2^64; the constant keeps its bit pattern */
  UOp *umax = uop_const(DT_UINT64, const_int(-1));
  EvalState st;
  CHECK(eval_closed(umax, &st) == (i128)UINT64_MAX && st == EVAL_OK);
  CHECK(eval_is(uop_mul(umax, umax), 1));
  CHECK(eval_is(uop_add(umax, uop_const_int(DT_UINT64, 2)), 1));
  /* weakint is mathematical */
  CHECK(eval_closed(uop_mul(w(INT64_MAX), w(2)), &st) == (i128)INT64_MAX * 2 && st == EVAL_OK);
  /* ... until i128 overflows: undefined, not UB */
  UOp *big = uop_mul(w(INT64_MAX), w(INT64_MAX));
  eval_closed(uop_mul(big, w(4)), &st);
  CHECK(st == EVAL_UNDEFINED);
  CHECK(eval_wrap(DT_INT16, 40000) == -25536);
  CHECK(eval_wrap(DT_UINT32, -1) == (i128)UINT32_MAX);
  CHECK(eval_wrap(DT_BOOL, 7) == 1);
  CHECK(eval_wrap(DT_WEAKINT, (i128)1 << 100) == (i128)1 << 100);
}

static void test_casts_shifts_bits(void) {
  UOp *v300 = uop_const_int(DT_INT32, 300);
  CHECK(eval_is(uop_cast(v300, DT_UINT8), 44));
  CHECK(eval_is(uop_cast(v300, DT_INT8), 44));
  CHECK(eval_is(uop_cast(uop_const_int(DT_INT32, -1), DT_UINT16), 65535));
  CHECK(eval_is(uop_cast(uop_const_int(DT_INT32, 5), DT_BOOL), 1));
  CHECK(eval_is(uop_cast(uop_const_bool(true), DT_INT32), 1));
  CHECK(eval_is(uop_bitcast(uop_const_int(DT_INT32, -2), DT_UINT32), 4294967294LL));
  CHECK(eval_is(uop_alu2(TG_OP_SHL, uop_const_int(DT_INT8, 1), uop_const_int(DT_INT8, 7)), -128));
  CHECK(eval_is(uop_alu2(TG_OP_SHL, uop_const_int(DT_UINT8, 1), uop_const_int(DT_UINT8, 8)), 0));
  CHECK(eval_is(uop_alu2(TG_OP_SHR, w(-8), w(1)), -4));
  CHECK(eval_is(uop_alu2(TG_OP_SHR, uop_const_int(DT_UINT8, 200), uop_const_int(DT_UINT8, 3)), 25));
  CHECK(eval_is(uop_lt(uop_const(DT_UINT64, const_int(-1)), uop_const_int(DT_UINT64, 1)), 0)); /* 2^64-1 < 1 */
  EvalState st;
  CHECK(eval_closed(uop_alu2(TG_OP_SHL, w(3), w(70)), &st) == (i128)3 << 70 && st == EVAL_OK);
  eval_closed(uop_alu2(TG_OP_SHL, w(3), w(-1)), &st);
  CHECK(st == EVAL_UNDEFINED);
  CHECK(eval_is(uop_xor(w(5), w(-1)), -6));
  CHECK(eval_is(uop_and(w(-4), w(7)), 4));
  CHECK(eval_is(uop_or(w(8), w(3)), 11));
  CHECK(eval_is(uop_max(w(-3), w(2)), 2));
  CHECK(eval_is(uop_min(w(-3), w(2)), -3));
  CHECK(eval_is(uop_lt(w(-3), w(2)), 1));
  CHECK(eval_is(uop_ne(w(2), w(2)), 0));
  CHECK(eval_is(uop_eq(w(2), w(2)), 1));
  CHECK(eval_is(uop_alu2(TG_OP_CMPEQ, w(2), w(3)), 0));
  CHECK(eval_is(uop_not(uop_const_bool(false)), 1));
  CHECK(eval_is(uop_neg(w(5)), -5));
  CHECK(eval_is(uop_alu1(TG_OP_NEG, uop_const_int(DT_INT8, -128)), -128));
  CHECK(eval_is(uop_alu3(TG_OP_MULACC, w(3), w(4), w(5)), 17));
  CHECK(eval_is(uop_sub(w(3), w(10)), -7));
  /* bools: ADD is OR, MUL is AND once truncated */
  CHECK(eval_is(uop_add(uop_const_bool(true), uop_const_bool(true)), 1));
  CHECK(eval_is(uop_mul(uop_const_bool(true), uop_const_bool(false)), 0));
}

static void test_undefined_and_leaves(void) {
  UOp *x = uop_variable("x", -5, 5, NULL);
  UOp *y = uop_variable("y", 0, 3, DT_INT32);
  EvalEnv env;
  eval_env_init(&env);
  /* division by zero is reported with its operands */
  EvalProgram *p = eval_compile(uop_idiv(w(10), x));
  CHECK(p != NULL);
  eval_env_bind_var(&env, "x", 0);
  EvalValue r = eval_run(p, &env);
  CHECK(r.state == EVAL_UNDEFINED);
  CHECK_MSG(strstr(eval_last_message(p), "FLOORDIV(10, 0) divides by zero") != NULL, "message: %s",
            eval_last_message(p));
  eval_env_bind_var(&env, "x", -3); /* rebinding replaces */
  r = eval_run(p, &env);
  CHECK(r.state == EVAL_OK && r.v == -4);
  CHECK_EQ_STR(eval_last_message(p), "");
  CHECK(eval_program_leaf_count(p) == 1 && eval_program_leaf(p, 0) == x);
  eval_program_free(p);
  /* WHERE takes only the picked branch's state */
  UOp *guarded = uop_where(uop_ne(x, w(0)), uop_idiv(w(10), x), w(-1));
  eval_env_bind_var(&env, "x", 0);
  r = uop_eval(guarded, &env);
  CHECK(r.state == EVAL_OK && r.v == -1);
  eval_env_bind_var(&env, "x", 2);
  r = uop_eval(guarded, &env);
  CHECK(r.state == EVAL_OK && r.v == 5);
  /* undefined propagates through ALU ops, also into the condition of a WHERE */
  r = uop_eval(uop_where(uop_lt(uop_mod(w(1), uop_mul(x, w(0))), w(3)), w(1), w(2)), &env);
  CHECK(r.state == EVAL_UNDEFINED);
  /* Invalid */
  UOp *masked = uop_where(uop_lt(x, w(0)), x, uop_invalid());
  r = uop_eval(masked, &env);
  CHECK(r.state == EVAL_INVALID);
  eval_env_bind_var(&env, "x", -2);
  r = uop_eval(masked, &env);
  CHECK(r.state == EVAL_OK && r.v == -2);
  /* unbound Variable, RANGE and SPECIAL */
  p = eval_compile(uop_add(x, y));
  r = eval_run(p, &env);
  CHECK(r.state == EVAL_UNBOUND);
  CHECK_MSG(strstr(eval_last_message(p), "Variable y") != NULL, "message: %s", eval_last_message(p));
  eval_env_bind_var(&env, "y", 3);
  r = eval_run(p, &env);
  CHECK(r.state == EVAL_OK && r.v == 1);
  eval_program_free(p);
  UOp *rng = uop_range(w(8), 3, AXIS_LOOP);
  UOp *sp = uop_special(w(4), "gidx0");
  UOp *e = uop_add(uop_mul(rng, w(4)), sp);
  r = uop_eval(e, &env);
  CHECK(r.state == EVAL_UNBOUND);
  eval_env_bind_node(&env, rng, 5);
  eval_env_bind_node(&env, sp, 2);
  r = uop_eval(e, &env);
  CHECK(r.state == EVAL_OK && r.v == 22);
  /* inside kernels a Variable is an ALU PARAM: bound by name too */
  ParamArg pa;
  memset(&pa, 0, sizeof pa);
  pa.slot = 0;
  pa.multiple_of = 1;
  pa.axis = -1;
  pa.vmin = 0;
  pa.vmax = 100;
  pa.dtype = DT_INT32;
  pa.addrspace = ADDR_ALU;
  strcpy(pa.name, "n");
  UOp *param = uop_new(TG_OP_PARAM, DT_INT32, NULL, 0, arg_param(&pa));
  eval_env_bind_var(&env, "n", 9);
  r = uop_eval(uop_mul(param, uop_const_int(DT_INT32, 3)), &env);
  CHECK(r.state == EVAL_OK && r.v == 27);
  /* a bound Variable evaluates to its value without an environment entry */
  UOp *z = uop_variable("z", 0, 100, NULL);
  UOp *bound = uop_bind(z, 42);
  CHECK(bound != NULL);
  if (bound) CHECK(eval_is(uop_add(bound, w(1)), 43));
  eval_env_free(&env);
}

static void test_refusals(void) {
  tg_clear_error();
  EvalProgram *p = eval_compile(uop_add(uop_const_float(DT_FLOAT32, 1.5), uop_const_float(DT_FLOAT32, 1.0)));
  CHECK(p == NULL);
  CHECK_MSG(strstr(tg_last_error(), "not supported") != NULL, "error: %s", tg_last_error());
  UOp *buf = uop_variable("q", 0, 3, NULL);
  p = eval_compile(uop_alu1(TG_OP_SQRT, uop_cast(buf, DT_FLOAT32)));
  CHECK(p == NULL);
  EvalEnv env;
  eval_env_init(&env);
  EvalValue r = uop_eval(uop_alu1(TG_OP_EXP2, uop_const_float(DT_FLOAT32, 1.0)), &env);
  CHECK(r.state != EVAL_OK);
  eval_env_free(&env);
}

static void test_deep_graph(void) {
  /* a chain far deeper than the C stack would allow for a recursive evaluator */
  int depth = tg_test_sanitized ? 20000 : 200000;
  UOp *x = uop_variable("x", 0, 10, NULL);
  UOp *acc = x;
  for (int i = 0; i < depth; i++) acc = uop_add(acc, (i & 1) ? w(1) : x);
  EvalEnv env;
  eval_env_init(&env);
  eval_env_bind_var(&env, "x", 3);
  EvalProgram *p = eval_compile(acc);
  CHECK(p != NULL);
  if (p) {
    EvalValue r = eval_run(p, &env);
    CHECK(r.state == EVAL_OK && r.v == 3 + (i128)(depth / 2) * 3 + depth / 2);
    CHECK_EQ_INT(eval_program_len(p), depth + 2); /* x, the const 1 and depth ADDs */
    eval_program_free(p);
  }
  eval_env_free(&env);
}

/* Two independent implementations of the same semantics: eval and the constant folder (dtype.c dt_const_exec_alu,
 * tinygrad's exec_alu + truncation) agree on every int dtype, op and a table of edge values. */
static void test_agrees_with_const_folding(void) {
  static const TgOp ops[] = {TG_OP_ADD, TG_OP_MUL, TG_OP_SUB, TG_OP_SHL, TG_OP_SHR, TG_OP_CDIV, TG_OP_CMOD,
                             TG_OP_FLOORDIV, TG_OP_FLOORMOD, TG_OP_MAX, TG_OP_CMPLT, TG_OP_CMPNE, TG_OP_CMPEQ,
                             TG_OP_XOR, TG_OP_OR, TG_OP_AND, TG_OP_NEG};
  static const int64_t vals[] = {0, 1, -1, 2, -3, 7, -7, 8, 31, 32, 63, 64, 100, -128, 127, 255, 300, 65535, -32768,
                                 INT32_MAX, INT32_MIN, 4294967295LL, INT64_MAX, INT64_MIN};
  const DType *dts[] = {DT_WEAKINT, DT_BOOL, DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32, DT_UINT32, DT_INT64,
                        DT_UINT64};
  long compared = 0, disagree = 0;
  EvalEnv env;
  eval_env_init(&env);
  for (size_t d = 0; d < TG_ARRAY_LEN(dts); d++) {
    const DType *dt = dts[d];
    for (size_t o = 0; o < TG_ARRAY_LEN(ops); o++) {
      if (dt == DT_BOOL && (ops[o] == TG_OP_SHL || ops[o] == TG_OP_SHR)) continue; /* no shifts of bools */
      int ns = ops[o] == TG_OP_NEG ? 1 : 2;
      const DType *rdt = op_has(ops[o], OPP_COMPARISON) ? DT_BOOL : dt;
      for (size_t i = 0; i < TG_ARRAY_LEN(vals); i++)
        for (size_t j = 0; j < (ns == 2 ? TG_ARRAY_LEN(vals) : 1); j++) {
          UOpScope s = uop_scope_begin();
          Const src[2] = {dt_const(dt, dt == DT_BOOL ? const_bool(vals[i] & 1) : const_int(vals[i])),
                          dt_const(dt, dt == DT_BOOL ? const_bool(vals[j] & 1) : const_int(vals[j]))};
          Const folded = dt_const_exec_alu(ops[o], dt, src, ns);
          UOp *a = uop_const(dt, src[0]), *b = uop_const(dt, src[1]);
          EvalValue r = uop_eval(ns == 1 ? uop_alu1(ops[o], a) : uop_alu2(ops[o], a, b), &env);
          uop_scope_end(s);
          if (folded.kind == CK_NONE) continue; /* not foldable (division by zero, weakint beyond int64) */
          compared++;
          if (r.state != EVAL_OK || r.v != dt_const_as_i128(folded, rdt)) {
            if (disagree++ < 5)
              fprintf(stderr, "  eval and const_exec_alu disagree: %s %s (%lld, %lld)\n", uop_op_name(ops[o]), dt->name,
                      (long long)vals[i], (long long)vals[j]);
          }
        }
    }
  }
  eval_env_free(&env);
  CHECK(compared > 50000);
  CHECK_EQ_INT(disagree, 0);
}

/* Simplify e and compare it with the original at every x in [lo, hi] (and y in [ylo, yhi]). */
static bool simplify_agrees(UOp *e, int lo, int hi, int ylo, int yhi) {
  UOp *s = uop_simplify(e);
  if (!s) return false;
  EvalProgram *pe = eval_compile(e), *ps = eval_compile(s);
  bool ok = pe && ps;
  EvalEnv env;
  eval_env_init(&env);
  for (int x = lo; ok && x <= hi; x++)
    for (int y = ylo; ok && y <= yhi; y++) {
      eval_env_bind_var(&env, "x", x);
      eval_env_bind_var(&env, "y", y);
      EvalValue a = eval_run(pe, &env);
      if (a.state != EVAL_OK) continue;
      EvalValue b = eval_run(ps, &env);
      ok = b.state == EVAL_OK && a.v == b.v && a.v >= uop_vmin(e) && a.v <= uop_vmax(e) && b.v >= uop_vmin(s) &&
           b.v <= uop_vmax(s);
      if (!ok) {
        char *re = uop_render(e), *rs = uop_render(s);
        fprintf(stderr, "  simplify disagrees at x=%d y=%d: %s -> %s\n", x, y, re, rs);
        tg_free(re);
        tg_free(rs);
      }
    }
  eval_env_free(&env);
  eval_program_free(pe);
  eval_program_free(ps);
  return ok;
}

static void test_simplify_against_eval(void) {
  UOp *x = uop_variable("x", -6, 13, NULL);
  UOp *y = uop_variable("y", 1, 7, NULL);
  CHECK(simplify_agrees(uop_add(uop_mod(x, w(4)), uop_mul(uop_idiv(x, w(4)), w(4))), -6, 13, 1, 1));
  CHECK(simplify_agrees(uop_idiv(uop_add(uop_mul(x, w(6)), w(3)), w(4)), -6, 13, 1, 1));
  CHECK(simplify_agrees(uop_mod(uop_add(uop_mul(x, w(4)), y), w(4)), -6, 13, 1, 7));
  CHECK(simplify_agrees(uop_idiv(uop_mul(x, y), y), -6, 13, 1, 7));
  CHECK(simplify_agrees(uop_lt(uop_idiv(x, w(3)), w(2)), -6, 13, 1, 1));
  CHECK(simplify_agrees(uop_where(uop_lt(x, w(0)), uop_neg(x), x), -6, 13, 1, 1));
  CHECK(simplify_agrees(uop_max(uop_min(x, y), w(2)), -6, 13, 1, 7));
  UOp *x0 = uop_variable("x", 0, 13, NULL);
  CHECK(simplify_agrees(uop_idiv(uop_add(uop_mod(x0, w(3)), uop_mul(y, w(3))), w(3)), 0, 13, 1, 7));
}

void suite_fuzz(void) {
  UOpScope s = uop_scope_begin();
  test_division_semantics();
  test_wrapping();
  test_casts_shifts_bits();
  test_undefined_and_leaves();
  test_refusals();
  test_agrees_with_const_folding();
  test_deep_graph();
  test_simplify_against_eval();
  uop_scope_end(s);
}
