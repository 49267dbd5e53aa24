/* test_uop.c — the UOp node: op tables, interning (structural equality is pointer equality), typed args, dtype
 * derivation, scopes and reference counts, Variables and bind/unbind, toposort and the stable key. */
#include "uop/uop.h"
#include "test.h"

static void test_op_tables(void) {
  CHECK_EQ_STR(uop_op_name(TG_OP_ADD), "ADD");
  CHECK_EQ_INT(uop_op_by_name("FLOORMOD"), TG_OP_FLOORMOD);
  CHECK_EQ_INT(uop_op_by_name("NOPE"), -1);
  CHECK(op_has(TG_OP_ADD, OPP_COMMUTATIVE) && op_has(TG_OP_ADD, OPP_ASSOCIATIVE));
  CHECK(!op_has(TG_OP_SUB, OPP_COMMUTATIVE));
  CHECK(op_has(TG_OP_MAX, OPP_IDEMPOTENT) && op_has(TG_OP_MAX, OPP_REDUCE));
  CHECK(op_has(TG_OP_CMPLT, OPP_COMPARISON) && !op_has(TG_OP_CMPLT, OPP_COMMUTATIVE));
  CHECK(op_is_alu(TG_OP_WHERE) && op_is_alu(TG_OP_SIN) && !op_is_alu(TG_OP_CAST));
  CHECK(op_is_elementwise(TG_OP_CAST) && op_is_elementwise(TG_OP_BITCAST));
  CHECK(op_has(TG_OP_SHRINK, OPP_MOVEMENT) && op_has(TG_OP_PERMUTE, OPP_MOVEMENT));
  OpSet s;
  CHECK(uop_opset_by_group("Commutative", &s));
  int n = 0;
  for (int i = 0; i < TG_OP_COUNT; i++) n += opset_has(&s, (TgOp)i);
  CHECK_EQ_INT(n, 8); /* ADD MUL MAX CMPNE CMPEQ XOR AND OR */
  CHECK(uop_opset_by_group("Unary", &s));
  n = 0;
  for (int i = 0; i < TG_OP_COUNT; i++) n += opset_has(&s, (TgOp)i);
  CHECK_EQ_INT(n, 7);
  CHECK(uop_opset_by_group("Binary", &s));
  n = 0;
  for (int i = 0; i < TG_OP_COUNT; i++) n += opset_has(&s, (TgOp)i);
  CHECK_EQ_INT(n, 19);
  CHECK(!uop_opset_by_group("Nope", &s));
  CHECK(uop_opset_by_group("All", &s) && opset_has(&s, TG_OP_ALLREDUCE) && opset_has(&s, TG_OP_SPECIAL));
  CHECK(uop_axis_type_letter(AXIS_REDUCE) == 'R' && uop_axis_type_letter(AXIS_UPCAST) == 'u');
}

static void test_interning(void) {
  UOpScope sc = uop_scope_begin();
  size_t base = uop_live_count();
  UOp *x = uop_variable("x", 0, 10, NULL);
  UOp *a = uop_add(x, uop_const_int(DT_WEAKINT, 3));
  UOp *b = uop_add(x, uop_const_int(DT_WEAKINT, 3));
  CHECK(a == b);
  CHECK(uop_add(x, uop_const_int(DT_WEAKINT, 4)) != a);
  CHECK(uop_variable("x", 0, 10, NULL) == x);
  CHECK(uop_variable("x", 0, 11, NULL) != x); /* the range is part of identity */
  CHECK(uop_variable("y", 0, 10, NULL) != x);
  /* constants: -0.0 and 0.0 differ, nan equals nan, int 1 and float 1.0 differ by dtype */
  CHECK(uop_const_float(DT_FLOAT32, 0.0) != uop_const_float(DT_FLOAT32, -0.0));
  CHECK(uop_const_float(DT_FLOAT32, NAN) == uop_const_float(DT_FLOAT32, -NAN));
  CHECK(uop_const_int(DT_WEAKINT, 1) != uop_const_float(DT_WEAKFLOAT, 1.0));
  /* tags are identity */
  CHECK(uop_with_tag(a, 7) != a && uop_with_tag(uop_with_tag(a, 7), 0) == a);
  /* struct args compare by value, not by the caller's pointer */
  RangeArg r1 = {.axis_id = 3, .axis_type = AXIS_LOOP};
  RangeArg r2 = r1;
  UOp *end = uop_const_int(DT_WEAKINT, 16);
  CHECK(uop_new(TG_OP_RANGE, NULL, &end, 1, arg_range(&r1)) == uop_new(TG_OP_RANGE, NULL, &end, 1, arg_range(&r2)));
  r2.axis_id = 4;
  CHECK(uop_new(TG_OP_RANGE, NULL, &end, 1, arg_range(&r1)) != uop_new(TG_OP_RANGE, NULL, &end, 1, arg_range(&r2)));
  int64_t p1[3] = {2, 0, 1}, p2[3] = {2, 0, 1};
  CHECK(uop_new(TG_OP_PERMUTE, NULL, &x, 1, arg_ints(ARG_PERM, p1, 3)) ==
        uop_new(TG_OP_PERMUTE, NULL, &x, 1, arg_ints(ARG_PERM, p2, 3)));
  CHECK(uop_new(TG_OP_PERMUTE, NULL, &x, 1, arg_ints(ARG_PERM, p1, 3)) !=
        uop_new(TG_OP_FLIP, NULL, &x, 1, arg_ints(ARG_FLIP, p1, 3)));
  char name[8] = "gidx0";
  UOp *s1 = uop_special(end, name);
  name[4] = '1';
  CHECK(uop_special(end, "gidx0") == s1 && uop_special(end, name) != s1);
  CHECK_EQ_STR(s1->arg.str, "gidx0");
  uop_scope_end(sc);
  CHECK_EQ_INT(uop_live_count(), base);
}

static void test_dtype_derivation(void) {
  UOpScope sc = uop_scope_begin();
  UOp *i8 = uop_variable("a", -5, 5, DT_INT8), *u8 = uop_variable("b", 0, 5, DT_UINT8);
  CHECK(uop_add(i8, u8)->dtype == DT_INT16);                          /* promotion lattice */
  CHECK(uop_lt(i8, u8)->dtype == DT_BOOL);                            /* comparisons are bool */
  CHECK(uop_const_int(DT_WEAKINT, 2)->dtype == DT_WEAKINT);
  UOp *h = uop_variable("h", 0, 1, DT_FLOAT16);
  CHECK(uop_add(h, uop_const_int(DT_WEAKINT, 1))->dtype == DT_FLOAT16); /* half + weak int = half */
  UOp *i32 = uop_variable("i", 0, 1, DT_INT32);
  CHECK(uop_add(i32, uop_const_float(DT_WEAKFLOAT, 1.5))->dtype == DT_WEAKFLOAT);
  CHECK(uop_alu1(TG_OP_SQRT, i32)->dtype == DT_FLOAT32);             /* least_upper_float */
  CHECK(uop_alu1(TG_OP_EXP2, uop_const_int(DT_WEAKINT, 1))->dtype == DT_WEAKFLOAT);
  CHECK(uop_where(uop_lt(i32, i32), h, h)->dtype == DT_FLOAT16);
  CHECK(uop_cast(i32, DT_FLOAT64)->dtype == DT_FLOAT64);
  CHECK(uop_cast(i32, DT_INT32) == i32);
  CHECK(uop_invalid()->dtype == DT_BOOL && uop_is_invalid(uop_invalid()));
  UOp *sink_src[2] = {i32, h};
  CHECK(uop_sink(sink_src, 2)->dtype == DT_VOID);
  /* uop_replace_src re-derives the dtype only when source dtypes changed */
  UOp *add = uop_add(i8, u8);
  UOp *nsrc[2] = {i32, i32};
  CHECK(uop_replace_src(add, nsrc, 2)->dtype == DT_INT32);
  UOp *same[2] = {i8, u8};
  CHECK(uop_replace_src(add, same, 2) == add);
  uop_scope_end(sc);
}

static void test_scopes(void) {
  size_t base = uop_live_count();
  UOpScope outer = uop_scope_begin();
  UOp *kept;
  {
    UOpScope inner = uop_scope_begin();
    UOp *x = uop_variable("x", 0, 100, NULL);
    UOp *e = x;
    for (int i = 0; i < 100; i++) e = uop_add(uop_mul_int(e, 3), uop_const_int(DT_WEAKINT, i));
    kept = uop_scope_end_keep(inner, e);
  }
  /* e and its whole source graph are alive in the outer scope */
  CHECK(kept->op == TG_OP_ADD && uop_live_count() > base + 200);
  uop_keep(kept);
  uop_scope_end(outer);
  CHECK(uop_live_count() > base + 200); /* an external reference keeps the graph */
  UOpScope again = uop_scope_begin();
  uop_drop(kept);
  uop_scope_end(again);
  CHECK_EQ_INT(uop_live_count(), base);
  /* a node referenced only as a source dies with its parent */
  UOpScope s2 = uop_scope_begin();
  UOp *v = uop_keep(uop_add_int(uop_variable("q", 0, 3, NULL), 1));
  uop_scope_end(s2);
  CHECK(uop_live_count() == base + 3);
  s2 = uop_scope_begin();
  uop_drop(v);
  uop_scope_end(s2);
  CHECK_EQ_INT(uop_live_count(), base);
}

static void test_variables(void) {
  UOpScope sc = uop_scope_begin();
  UOp *v = uop_variable("start_pos", 1, 1024, NULL);
  CHECK(uop_is_variable(v));
  CHECK_EQ_STR(uop_variable_name(v), "start_pos");
  CHECK(v->op == TG_OP_BUFFER && v->arg.param->addrspace == ADDR_ALU && v->nsrc == 0);
  UOp *b = uop_bind(v, 17);
  CHECK(b && b->op == TG_OP_AFTER && b->src[1]->op == TG_OP_STORE);
  UOp *var = NULL;
  int64_t val = 0;
  CHECK(uop_unbind(b, &var, &val) && var == v && val == 17);
  CHECK(!uop_unbind(v, &var, &val));
  tg_clear_error();
  CHECK(uop_bind(v, 0) == NULL);
  CHECK(strstr(tg_last_error(), "start_pos") != NULL && strstr(tg_last_error(), "out of range") != NULL);
  CHECK(uop_bind(uop_const_int(DT_WEAKINT, 1), 1) == NULL);
  UOp *w = uop_variable("a_var", 0, 8, NULL);
  UOp *srcs[3] = {uop_add(w, b), v, uop_mul(w, w)};
  UOp **vars = NULL;
  size_t n = uop_variables(uop_sink(srcs, 3), &vars);
  CHECK_EQ_INT(n, 2);
  if (n == 2) CHECK(vars[0] == w && vars[1] == v); /* sorted by name */
  tg_free(vars);
  uop_scope_end(sc);
}

static void test_toposort_and_key(void) {
  UOpScope sc = uop_scope_begin();
  UOp *x = uop_variable("x", 0, 10, NULL);
  UOp *c = uop_const_int(DT_WEAKINT, 2);
  UOp *m = uop_mul(x, c);
  UOp *e = uop_add(m, m);
  UOpVec t = {0};
  uop_toposort(e, NULL, NULL, &t);
  CHECK_EQ_INT(t.len, 4);
  if (t.len == 4) CHECK(t.data[0] == x && t.data[1] == c && t.data[2] == m && t.data[3] == e);
  tg_vec_free(&t);
  CHECK(uop_in_backward_slice(e, x) && !uop_in_backward_slice(m, e));
  CHECK(uop_op_in_backward_slice_with_self(e, TG_OP_MUL) && !uop_op_in_backward_slice_with_self(e, TG_OP_MAX));
  /* a deep chain: no recursion limits */
  UOp *deep = x;
  for (int i = 0; i < 200000; i++) deep = uop_add_int(deep, 1);
  uop_toposort(deep, NULL, NULL, &t);
  CHECK_EQ_INT(t.len, 200002);
  tg_vec_free(&t);
  /* the key is structural: rebuild in a different order -> same key; different graph -> different key */
  UOpKey k1 = uop_key(e);
  UOp *c2 = uop_const_int(DT_WEAKINT, 2);
  UOpKey k2 = uop_key(uop_add(uop_mul(uop_variable("x", 0, 10, NULL), c2), uop_mul(x, c2)));
  CHECK(k1.lo == k2.lo && k1.hi == k2.hi);
  UOpKey k3 = uop_key(uop_add(m, x));
  CHECK(k1.lo != k3.lo || k1.hi != k3.hi);
  char hex[33];
  uop_key_hex(k1, hex);
  CHECK(strlen(hex) == 32);
  UOpKey kd = uop_key(deep);
  CHECK(kd.lo != 0 || kd.hi != 0);
  uop_scope_end(sc);
}

static void test_uopmap(void) {
  UOpScope sc = uop_scope_begin();
  UOpMap m;
  uopmap_init(&m);
  UOp *xs[1000];
  UOp *x = uop_variable("x", 0, 10, NULL);
  for (int i = 0; i < 1000; i++) {
    xs[i] = uop_add_int(x, i);
    uopmap_put(&m, xs[i], (void *)(intptr_t)(i + 1));
  }
  int ok = 1;
  for (int i = 0; i < 1000; i++) ok &= uopmap_get(&m, xs[i]) && *uopmap_get(&m, xs[i]) == (void *)(intptr_t)(i + 1);
  CHECK(ok);
  CHECK(uopmap_get(&m, x) == NULL);
  CHECK_EQ_INT(m.len, 1000);
  uopmap_free(&m);
  uop_scope_end(sc);
}

void suite_uop(void) {
  test_op_tables();
  test_interning();
  test_dtype_derivation();
  test_scopes();
  test_variables();
  test_toposort_and_key();
  test_uopmap();
}
