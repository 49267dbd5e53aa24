/* test_variables.c — bound Variables in kernels (tinygrad's Variable after the seed's "remove Ops.BIND"): creation,
 * binding and reading, dtype behaviour as a weak int scalar, values reaching kernels as scalar arguments, a new value
 * reusing the schedule and the compiled kernel, and the errors (out of range, bind mismatch, unbound Variable).
 * tinygrad's twins: test/unit/test_schedule_cache.py, test/null/test_schedule_cache.py,
 * test/backend/test_tensor_variable.py. */
#include <stdlib.h>

#include "engine/engine.h"
#include "runtime/runtime.h"
#include "schedule/sched_internal.h"
#include "tensor/tensor.h"
#include "test.h"
#include "uop/spec.h"

static bool has(const char *msg, const char *part) { return msg && strstr(msg, part) != NULL; }

/* kernels handed to the device to build or load (compiled, from the disk cache, or already loaded): any device, so
 * the checks hold on DEV=CUDA too */
static long programs_requested(void) { return rt_stats().programs_requested; }

static int64_t item_int(tg_tensor *t) {
  int64_t v = -12345;
  tg_status st = tg_item_int64(t, &v);
  CHECK_MSG(st == TG_OK, "item: %s", tg_last_error());
  return v;
}

static double item_double(tg_tensor *t) {
  double v = -12345;
  tg_status st = tg_item_double(t, &v);
  CHECK_MSG(st == TG_OK, "item: %s", tg_last_error());
  return v;
}

/* ---- creation, binding, reading ---- */

static void test_api(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *v = tg_variable("i", 1, 10);
  CHECK(v != NULL);
  CHECK(tg_is_variable(v));
  CHECK_EQ_INT(tg_ndim(v), 0);
  CHECK_EQ_INT(tg_get_dtype(v), TG_WEAKINT);
  CHECK(tg_device(v) == NULL);
  CHECK_EQ_STR(tg_variable_name(v), "i");
  int64_t val = 0;
  CHECK(tg_variable_value(v, &val) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "Variable i is not bound"));

  tg_tensor *b = tg_bind(v, 7);
  CHECK(b != NULL && tg_is_variable(b));
  CHECK_EQ_INT(tg_get_dtype(b), TG_WEAKINT);
  CHECK(tg_device(b) == NULL);
  CHECK_EQ_STR(tg_variable_name(b), "i");
  CHECK(tg_variable_value(b, &val) == TG_OK && val == 7);
  CHECK(tg_bind(v, 1) != NULL && tg_bind(v, 10) != NULL); /* the range is inclusive */

  /* errors: out of range, not a Variable, already bound, bad creation */
  CHECK(tg_bind(v, 11) == NULL && has(tg_last_error(), "bind 11 not in range [1, 10] of Variable i"));
  CHECK(tg_last_status() == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_bind(v, 0) == NULL && has(tg_last_error(), "not in range"));
  tg_tensor *x = tg_ones(TG_SHAPE(3), TG_INT32);
  CHECK(!tg_is_variable(x) && !tg_is_variable(tg_const_int(3)) && !tg_is_variable(NULL));
  CHECK(tg_variable_name(x) == NULL);
  CHECK(tg_bind(x, 1) == NULL && has(tg_last_error(), "tg_bind: a tensor of dtype int is not a Variable"));
  CHECK(tg_bind(b, 3) == NULL && has(tg_last_error(), "Variable i is already bound"));
  CHECK(tg_variable_value(x, &val) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "not a Variable"));
  CHECK(tg_variable("j", 5, 4) == NULL && has(tg_last_error(), "empty range [5, 4]"));
  CHECK(tg_variable("", 0, 4) == NULL && has(tg_last_error(), "needs a name"));
  CHECK(tg_variable(NULL, 0, 4) == NULL && has(tg_last_error(), "needs a name"));
  char longname[200];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK(tg_variable(longname, 0, 4) == NULL && has(tg_last_error(), "longer than"));
  CHECK(tg_bind(NULL, 1) == NULL);
  tg_scope_end(sc);
}

/* ---- values in kernels ---- */

/* tinygrad test_variable_mul_tensor / test_variable_defers_like_a_literal: a weak int scalar */
static void test_dtypes(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *vv = tg_bind(tg_variable("a", 1, 10), 2);
  tg_tensor *i32 = tg_mul(tg_ones(TG_SHAPE(3), TG_INT32), vv);
  CHECK_EQ_INT(tg_get_dtype(i32), TG_INT32);
  int32_t o32[3] = {0};
  CHECK_MSG(tg_to_host(i32, o32, sizeof o32) == TG_OK, "%s", tg_last_error());
  CHECK(o32[0] == 2 && o32[1] == 2 && o32[2] == 2);

  tg_tensor *i8 = tg_mul(tg_ones(TG_SHAPE(3), TG_INT8), vv), *i8r = tg_mul(vv, tg_ones(TG_SHAPE(3), TG_INT8));
  CHECK_EQ_INT(tg_get_dtype(i8), TG_INT8);
  CHECK_EQ_INT(tg_get_dtype(i8r), TG_INT8);
  int8_t o8[3] = {0}, o8r[3] = {0};
  CHECK_MSG(tg_to_host(i8, o8, sizeof o8) == TG_OK, "%s", tg_last_error());
  CHECK_MSG(tg_to_host(i8r, o8r, sizeof o8r) == TG_OK, "%s", tg_last_error());
  CHECK(o8[0] == 2 && o8[2] == 2 && o8r[0] == 2 && o8r[2] == 2);
  /* takes the concrete side, no widening */
  int8_t one = 1;
  CHECK_EQ_INT(tg_get_dtype(tg_add(vv, tg_from_data(&one, TG_INT8, TG_SHAPE(1)))), TG_INT8);

  tg_tensor *f = tg_add(tg_full(TG_SHAPE(2), 0.5, TG_FLOAT32), vv);
  CHECK_EQ_INT(tg_get_dtype(f), TG_FLOAT32);
  float of[2] = {0};
  CHECK_MSG(tg_to_host(f, of, sizeof of) == TG_OK, "%s", tg_last_error());
  CHECK(of[0] == 2.5f && of[1] == 2.5f);

  /* a read commits at default_int (test_add_tvar, test_inner_tvar_*); a cast gives another dtype */
  CHECK_EQ_INT(item_int(vv), 2);
  int32_t raw = 0;
  CHECK_MSG(tg_to_host(vv, &raw, sizeof raw) == TG_OK && raw == 2, "a weak int reads as 4-byte int: %s", tg_last_error());
  CHECK_EQ_INT(item_int(tg_add(tg_bind(tg_variable("a", 0, 10), 1), tg_const_int(3))), 4);
  tg_tensor *w = tg_bind(tg_variable("w", 0, 10), 2);
  CHECK_EQ_INT(item_int(tg_mul(w, tg_const_int(4))), 8);
  CHECK_EQ_INT(item_int(tg_mul(tg_const_int(3), w)), 6);
  CHECK_EQ_INT(item_int(tg_mul(tg_const_int(3), tg_mul(w, tg_const_int(4)))), 24);
  tg_tensor *fc = tg_cast(vv, TG_FLOAT32);
  CHECK_EQ_INT(tg_get_dtype(fc), TG_FLOAT32);
  CHECK(item_double(fc) == 2.0);
  tg_scope_end(sc);
}

/* a range beyond int32 commits the value to long in the kernel (test_large_range_variable) */
static void test_large_range(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *b = tg_bind(tg_variable("b", 0, (int64_t)1 << 40), (int64_t)1 << 35);
  int64_t one = 1;
  tg_tensor *y = tg_add(tg_from_data(&one, TG_INT64, TG_SHAPE(1)), b);
  CHECK_EQ_INT(tg_get_dtype(y), TG_INT64);
  CHECK_EQ_INT(item_int(y), ((int64_t)1 << 35) + 1);
  tg_scope_end(sc);
}

static const float XS[16] = {1, -2, 3, 4, 0.5f, 6, -7, 8, 9, 10, 11, -12, 13, 14, 15.5f, 16};

/* (x + v.bind(i)).sum() for i in 1..50: one schedule-cache miss, one kernel built, the constant program's values */
static void test_new_value_reuses_schedule_and_kernel(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *x = tg_from_floats(XS, TG_SHAPE(16));
  CHECK(tg_realize(x) == TG_OK);
  double base = 0;
  for (int k = 0; k < 16; k++) base += XS[k];
  tg_tensor *v = tg_variable("i", 1, 50);
  SchedCacheStats c0 = sched_cache_stats();
  long p0 = programs_requested();
  bool values_ok = true;
  for (int i = 1; i <= 50; i++) {
    tg_scope inner = tg_scope_begin();
    double got = item_double(tg_sum(tg_add(x, tg_bind(v, i)), NULL, 0, false));
    if (got != base + 16.0 * i) {
      values_ok = false;
      fprintf(stderr, "  i=%d: %g != %g\n", i, got, base + 16.0 * i);
    }
    if (i == 1) CHECK_EQ_INT(programs_requested() - p0, 1);
    tg_scope_end(inner);
  }
  SchedCacheStats c1 = sched_cache_stats();
  CHECK(values_ok);
  CHECK_EQ_INT(c1.misses - c0.misses, 1);
  CHECK_EQ_INT(c1.hits - c0.hits, 49);
  CHECK_EQ_INT(programs_requested() - p0, 1);
  /* the constant program (a new kernel per constant) agrees */
  for (int i = 1; i <= 50; i += 49) {
    tg_scope inner = tg_scope_begin();
    double var = item_double(tg_sum(tg_add(x, tg_bind(v, i)), NULL, 0, false));
    double cst = item_double(tg_sum(tg_add(x, tg_const_int(i)), NULL, 0, false));
    CHECK_MSG(var == cst, "i=%d: Variable %g, constant %g", i, var, cst);
    tg_scope_end(inner);
  }
  /* another Variable of the same range is the same schedule (the body holds p<slot>, not the name) */
  SchedCacheStats c2 = sched_cache_stats();
  CHECK_EQ_INT(item_double(tg_sum(tg_add(x, tg_bind(tg_variable("other", 1, 50), 3)), NULL, 0, false)), base + 48);
  CHECK_EQ_INT(sched_cache_stats().hits - c2.hits, 1);
  tg_scope_end(sc);
}

/* bound values in elementwise, in a reduce, as a multiplier of a range index, two Variables, one used twice */
static void test_kernels(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *x = tg_reshape(tg_from_floats(XS, TG_SHAPE(16)), TG_SHAPE(4, 4));
  tg_tensor *a = tg_variable("a", 0, 100), *b = tg_variable("b", -5, 5);
  for (int round = 0; round < 3; round++) {
    int av = 3 + 20 * round, bv = round - 2;
    tg_tensor *ba = tg_bind(a, av), *bb = tg_bind(b, bv);
    /* elementwise: (x * a - b) * a */
    float o[16];
    CHECK_MSG(tg_to_host(tg_mul(tg_sub(tg_mul(x, ba), bb), ba), o, sizeof o) == TG_OK, "%s", tg_last_error());
    bool ok = true;
    for (int k = 0; k < 16; k++) ok &= o[k] == ((float)XS[k] * (float)av - (float)bv) * (float)av;
    CHECK_MSG(ok, "elementwise, a=%d b=%d", av, bv);
    /* in a reduce: sum over axis 1 of x * b, plus a after the reduce */
    float r[4];
    CHECK_MSG(tg_to_host(tg_add(tg_sum(tg_mul(x, bb), TG_AXES(1), false), ba), r, sizeof r) == TG_OK, "%s",
              tg_last_error());
    ok = true;
    for (int row = 0; row < 4; row++) {
      float s = 0;
      for (int k = 0; k < 4; k++) s += XS[row * 4 + k] * (float)bv;
      ok &= r[row] == s + (float)av;
    }
    CHECK_MSG(ok, "reduce, a=%d b=%d", av, bv);
    /* a multiplier of a range index: arange(8) * a + b, and a gather by (arange(4) * a) % 4 */
    int32_t ar[8];
    CHECK_MSG(tg_to_host(tg_add(tg_mul(tg_arange(0, 8, 1, TG_INT32), ba), bb), ar, sizeof ar) == TG_OK, "%s",
              tg_last_error());
    ok = true;
    for (int k = 0; k < 8; k++) ok &= ar[k] == k * av + bv;
    CHECK_MSG(ok, "arange * a + b, a=%d b=%d", av, bv);
    tg_tensor *idx = tg_reshape(tg_mod(tg_mul(tg_arange(0, 4, 1, TG_INT32), ba), tg_const_int(4)), TG_SHAPE(1, 4));
    float g[4];
    CHECK_MSG(tg_to_host(tg_gather(x, 1, idx), g, sizeof g) == TG_OK, "%s", tg_last_error());
    ok = true;
    for (int k = 0; k < 4; k++) ok &= g[k] == XS[(k * av) % 4];
    CHECK_MSG(ok, "gather by arange * a, a=%d", av);
  }
  tg_scope_end(sc);
}

/* an assign fed by a bound Variable (a step counter): one schedule and one kernel for every step */
static void test_assign(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *acc = tg_contiguous(tg_zeros(TG_SHAPE(4), TG_FLOAT32));
  CHECK(tg_realize(acc) == TG_OK);
  tg_tensor *step = tg_variable("step", 0, 99);
  long p0 = 0;
  SchedCacheStats c0 = {0, 0};
  for (int i = 0; i < 10; i++) {
    tg_scope inner = tg_scope_begin();
    CHECK(tg_assign(acc, tg_add(acc, tg_mul(tg_bind(step, i), tg_const_float(0.5)))) == TG_OK);
    CHECK_MSG(tg_realize(acc) == TG_OK, "%s", tg_last_error());
    if (i == 0) p0 = programs_requested(), c0 = sched_cache_stats();
    tg_scope_end(inner);
  }
  CHECK_EQ_INT(programs_requested() - p0, 0);
  CHECK_EQ_INT(sched_cache_stats().misses - c0.misses, 0);
  float o[4];
  CHECK(tg_to_host(acc, o, sizeof o) == TG_OK);
  CHECK(o[0] == 22.5f && o[3] == 22.5f); /* 0.5 * (0 + 1 + ... + 9) */
  tg_scope_end(sc);
}

/* ---- the scheduler's side ---- */

static UOp *new_buffer(const char *device, const DType *dtype, int64_t numel, void *ctx) {
  TG_UNUSED(ctx);
  return engine_new_buffer(device, dtype, numel);
}

static UOp *find_value_param(UOp *ast, const char *name) {
  UOpVec topo = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  UOp *found = NULL;
  for (size_t i = 0; i < topo.len && !found; i++) {
    UOp *u = topo.data[i];
    if (u->op == TG_OP_PARAM && u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_ALU &&
        strcmp(u->arg.param->name, name) == 0)
      found = u;
  }
  tg_vec_free(&topo);
  return found;
}

/* callify: the body does not hold the value (tinygrad's callify of bind(5) and bind(77): one body), the args do;
 * sched_linear: var_vals {pos: 42} (test_bound_variable_var_vals), kernel CALL args are buffers only, the kernel
 * reads PARAM "pos" (slot -1) */
static void test_schedule_side(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *x = tg_contiguous(tg_ones(TG_SHAPE(10), TG_FLOAT32));
  CHECK(tg_realize(x) == TG_OK);
  tg_tensor *v = tg_variable("pos", 1, 100);
  tg_tensor *t5 = tg_add(x, tg_bind(v, 5)), *t77 = tg_add(x, tg_bind(v, 77));
  UOpScope us = uop_scope_begin();
  CallifyResult c5, c77;
  UOp *s5 = uop_sink(&t5->uop, 1), *s77 = uop_sink(&t77->uop, 1);
  CHECK(sched_callify(s5, new_buffer, NULL, &c5) == TG_OK);
  CHECK(sched_callify(s77, new_buffer, NULL, &c77) == TG_OK);
  CHECK_EQ_INT(c5.args.len, 3); /* output, x, the bound Variable */
  CHECK_EQ_INT(c77.args.len, 3);
  int64_t val = 0;
  UOp *var = NULL;
  CHECK(uop_unbind(c5.args.data[2], &var, &val) && val == 5 && var == tg_bind(v, 5)->uop->src[0]);
  CHECK(uop_unbind(c77.args.data[2], NULL, &val) && val == 77);
  /* buffers are PARAM slots and the value is not in the body: one node, one schedule-cache key */
  CHECK(c5.body == c77.body);
  UOp *p2 = find_value_param(c5.body, "p2");
  CHECK(p2 && p2->arg.param->slot == 2 && p2->arg.param->vmin == 1 && p2->arg.param->vmax == 100);
  CHECK(find_value_param(c5.body, "pos") == NULL);
  sched_callify_free(&c5);
  sched_callify_free(&c77);

  tg_tensor *t42 = tg_add(x, tg_bind(v, 42));
  /* the stage validators accept the bound Variable in the tensor graph and the value PARAM in the kernels */
  CHECK_MSG(uop_spec_check(t42->uop, SPEC_TENSOR) == TG_OK, "%s", tg_last_error());
  UOp *kernels = sched_kernels(uop_sink(&t42->uop, 1));
  CHECK(kernels && kernels->nsrc == 1);
  for (uint32_t i = 0; kernels && i < kernels->nsrc; i++)
    CHECK_MSG(uop_spec_check(kernels->src[i], SPEC_KERNEL) == TG_OK, "%s", tg_last_error());
  SchedResult r;
  CHECK(sched_linear(uop_sink(&t42->uop, 1), new_buffer, NULL, &r) == TG_OK);
  CHECK_EQ_INT(r.nvars, 1);
  CHECK(r.nvars == 1 && strcmp(r.var_names[0], "pos") == 0 && r.var_vals[0] == 42);
  CHECK(sched_var_value(&r, "pos", &val) && val == 42);
  CHECK(!sched_var_value(&r, "p2", &val));
  CHECK_EQ_INT(r.linear->nsrc, 1);
  UOp *call = r.linear->src[0];
  bool all_buffers = true;
  for (uint32_t i = 1; i < call->nsrc; i++) all_buffers &= call->src[i]->op == TG_OP_BUFFER;
  CHECK(all_buffers && call->nsrc == 3);
  UOp *pos = find_value_param(call->src[0], "pos");
  CHECK(pos && pos->arg.param->slot == -1 && find_value_param(call->src[0], "p2") == NULL);
  sched_result_free(&r);

  /* a Variable the kernels do not read is not in var_vals, and its second value is no mismatch (tinygrad used_vars) */
  tg_tensor *unused = tg_add(x, tg_mul(tg_bind(tg_variable("q", 0, 9), 4), tg_const_int(0)));
  CHECK(sched_linear(uop_sink(&unused->uop, 1), new_buffer, NULL, &r) == TG_OK);
  CHECK_EQ_INT(r.nvars, 0);
  sched_result_free(&r);
  /* ... but when a kernel reads the name, every bind of it counts (tinygrad checks by name) */
  tg_tensor *q = tg_variable("q", 0, 9);
  tg_tensor *both = tg_add(tg_add(x, tg_mul(tg_bind(q, 4), tg_const_int(0))), tg_bind(q, 5));
  CHECK(sched_linear(uop_sink(&both->uop, 1), new_buffer, NULL, &r) == TG_ERR_INVALID_ARGUMENT);
  CHECK_MSG(has(tg_last_error(), "bind mismatch on q"), "%s", tg_last_error());
  uop_scope_end(us);
  tg_scope_end(sc);
}

/* ---- errors ---- */

static void test_errors(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *x = tg_from_floats(XS, TG_SHAPE(16));
  tg_tensor *v = tg_variable("i", 1, 10);
  /* two values for one name in one realize (tinygrad "bind mismatch on i, 2 != 3") */
  tg_tensor *y = tg_add(tg_add(x, tg_bind(v, 2)), tg_bind(v, 3));
  float o[16];
  CHECK(tg_to_host(y, o, sizeof o) == TG_ERR_INVALID_ARGUMENT);
  CHECK_MSG(has(tg_last_error(), "bind mismatch on i, 2 != 3"), "%s", tg_last_error());
  /* the same value twice, and a second Variable object of the same name, are one binding */
  tg_tensor *z = tg_add(tg_add(x, tg_bind(v, 2)), tg_bind(tg_variable("i", 1, 10), 2));
  CHECK_MSG(tg_to_host(z, o, sizeof o) == TG_OK && o[0] == XS[0] + 4, "%s", tg_last_error());
  /* a Variable without a value: a clear error at realize, nothing runs (the kernel is built first with a value: on a
   * GPU, building a flat-id kernel times its block shapes, launches that are not the realize's) */
  CHECK(tg_to_host(tg_add(x, tg_bind(v, 4)), o, sizeof o) == TG_OK && o[0] == XS[0] + 4);
  long launches = rt_stats().launches;
  tg_tensor *u = tg_add(x, v);
  CHECK(tg_get_dtype(u) == TG_FLOAT32);
  CHECK(tg_to_host(u, o, sizeof o) == TG_ERR_INVALID_ARGUMENT);
  CHECK_MSG(has(tg_last_error(), "unbound Variable i"), "%s", tg_last_error());
  CHECK_EQ_INT(rt_stats().launches, launches);
  int64_t val;
  CHECK(tg_item_int64(tg_variable("u", 1, 10), &val) != TG_OK && has(tg_last_error(), "unbound Variable u"));
  CHECK(tg_item_int64(tg_add(tg_variable("u", 1, 10), tg_const_int(1)), &val) != TG_OK &&
        has(tg_last_error(), "unbound Variable u"));
  /* a bound Variable in an expression is fine */
  CHECK_EQ_INT(item_int(tg_add(tg_bind(tg_variable("u", 1, 10), 2), tg_const_int(1))), 3);
  tg_scope_end(sc);
}

void suite_variables(void) {
  size_t live = tg_live_tensors();
  test_api();
  test_dtypes();
  test_large_range();
  test_new_value_reuses_schedule_and_kernel();
  test_assign();
  test_schedule_side();
  test_kernels();
  test_errors();
  CHECK_EQ_INT(tg_live_tensors(), live);
}
