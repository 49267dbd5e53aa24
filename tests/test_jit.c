/* test_jit.c — the JIT (tinygrad's TinyJit, src/engine/jit.c): call 0 runs, call 1 captures, later calls replay with
 * new inputs and Variable values, results equal to eager; the input checks (shape, dtype, view, duplicates, buffers
 * only) fail cleanly and leave the capture usable; outputs reuse their buffers; an output fed back in is copied;
 * random numbers advance per replay in the non-JIT sequence; nested/empty captures and reads during capture fail;
 * JIT=0 runs the step every call; JITBEAM makes the captured kernels with BEAM; prune runs weight-only kernels once;
 * a replay schedules and compiles nothing; an MLP train step trains as the eager one; memory stays flat over 10,000
 * replays. tinygrad's twins: test/unit/test_jit*.py, test/backend/test_jit.py, test/backend/test_symbolic_jit.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine.h"
#include "runtime/runtime.h"
#include "schedule/schedule.h"
#include "test.h"
#include "tinygrad.h"

static bool has(const char *msg, const char *part) { return msg && strstr(msg, part) != NULL; }

static void host(tg_tensor *t, float *out, size_t n) {
  tg_status st = tg_to_host(t, out, n * sizeof(float));
  CHECK_MSG(st == TG_OK, "to_host: %s", tg_last_error());
}

static void fill(float *x, size_t n, float base) {
  for (size_t i = 0; i < n; i++) x[i] = base + (float)i * 0.5f;
}

static int fn_calls;

/* (a + b) * 2 */
static tg_status step_add(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                          tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  fn_calls++;
  out[0] = tg_mul(tg_add(in[0], in[1]), tg_const_float(2.0));
  return out[0] ? TG_OK : tg_last_status();
}

static long programs_requested(void) { return rt_stats().programs_requested; }

static void test_simple(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_add, NULL, 1, NULL);
  CHECK(j != NULL);
  fn_calls = 0;
  long sched0 = 0, prog0 = 0, launch0 = 0;
  for (int call = 0; call < 6; call++) {
    float a[12], b[12], got[12];
    fill(a, 12, (float)call), fill(b, 12, 10.0f * (float)call);
    tg_tensor *in[2] = {tg_from_floats(a, TG_SHAPE(4, 3)), tg_from_floats(b, TG_SHAPE(4, 3))}, *out = NULL;
    CHECK_MSG(tg_jit_call(j, in, 2, NULL, 0, &out) == TG_OK, "call %d: %s", call, tg_last_error());
    if (!out) break;
    host(out, got, 12);
    int bad = 0;
    for (int i = 0; i < 12; i++) bad += got[i] != (a[i] + b[i]) * 2;
    CHECK_MSG(bad == 0, "call %d: %d wrong values", call, bad);
    CHECK_EQ_INT(tg_jit_kernel_count(j), call == 0 ? 0 : 1); /* captured on the 2nd call */
    if (call == 2) {
      SchedCacheStats s = sched_cache_stats();
      sched0 = s.hits + s.misses, prog0 = programs_requested(), launch0 = rt_stats().launches;
    }
  }
  /* replays 3..5: no schedule, no compile, one launch each */
  SchedCacheStats s = sched_cache_stats();
  CHECK_EQ_INT(s.hits + s.misses, sched0);
  CHECK_EQ_INT(programs_requested(), prog0);
  CHECK_EQ_INT(rt_stats().launches - launch0, 3);
  CHECK_EQ_INT(fn_calls, 2); /* run and capture only */
  tg_jit_free(j);
  tg_scope_end(sc);
}

static void test_input_checks(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_add, NULL, 1, NULL);
  float a[12], b[12], got[12];
  fill(a, 12, 1), fill(b, 12, 2);
  tg_tensor *x = tg_from_floats(a, TG_SHAPE(4, 3)), *y = tg_from_floats(b, TG_SHAPE(4, 3)), *out = NULL;
  tg_tensor *in[2] = {x, y};
  for (int i = 0; i < 3; i++) CHECK(tg_jit_call(j, in, 2, NULL, 0, &out) == TG_OK);
  /* shape */
  tg_tensor *bad_shape[2] = {tg_from_floats(a, TG_SHAPE(3, 4)), y};
  CHECK(tg_jit_call(j, bad_shape, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "args mismatch in JIT"));
  /* dtype */
  tg_tensor *bad_dtype[2] = {tg_contiguous(tg_cast(x, TG_FLOAT16)), y};
  CHECK(tg_jit_call(j, bad_dtype, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "args mismatch in JIT"));
  /* the same shape as another view of a buffer (tinygrad test_jit_shape_views_mismatch) */
  tg_tensor *t34 = tg_from_floats(a, TG_SHAPE(3, 4));
  CHECK(tg_realize(t34) == TG_OK);
  tg_tensor *bad_view[2] = {tg_permute(t34, (const int[]){1, 0}, 2), y};
  CHECK(tg_jit_call(j, bad_view, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT &&
        has(tg_last_error(), "args mismatch in JIT: input 0 is another view"));
  /* count */
  CHECK(tg_jit_call(j, in, 1, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "args mismatch in JIT"));
  /* duplicates, constants */
  tg_tensor *dup[2] = {x, x};
  CHECK(tg_jit_call(j, dup, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "duplicate inputs to JIT"));
  tg_tensor *cst[2] = {tg_const_float(1), y};
  CHECK(tg_jit_call(j, cst, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT &&
        has(tg_last_error(), "JIT inputs must be real buffers"));
  /* nothing was corrupted: a good call still gives the right numbers, and an unrealized input is realized first */
  float c[12];
  fill(c, 12, 7);
  tg_tensor *lazy[2] = {tg_add(tg_from_floats(c, TG_SHAPE(4, 3)), tg_const_float(1)), y};
  CHECK_MSG(tg_jit_call(j, lazy, 2, NULL, 0, &out) == TG_OK, "%s", tg_last_error());
  host(out, got, 12);
  int bad = 0;
  for (int i = 0; i < 12; i++) bad += got[i] != (c[i] + 1 + b[i]) * 2;
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(tg_jit_kernel_count(j), 1);
  tg_jit_free(j);
  tg_scope_end(sc);
}

/* the returned tensors are the captured output buffers: the next replay overwrites them (test_output_buffer_reuse) */
static void test_output_reuse(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_add, NULL, 1, NULL);
  float a[12], b[12], got[12];
  tg_tensor *outs[5] = {NULL};
  for (int call = 0; call < 5; call++) {
    fill(a, 12, (float)call), fill(b, 12, 0);
    tg_tensor *in[2] = {tg_from_floats(a, TG_SHAPE(4, 3)), tg_from_floats(b, TG_SHAPE(4, 3))};
    CHECK(tg_jit_call(j, in, 2, NULL, 0, &outs[call]) == TG_OK);
  }
  host(outs[3], got, 12); /* replay 3's handle now shows replay 4's numbers */
  CHECK_EQ_INT(got[0], 8);
  host(outs[1], got, 12); /* the capture's output is the same buffer */
  CHECK_EQ_INT(got[0], 8);
  tg_jit_free(j);
  tg_scope_end(sc);
}

/* flip(a) + 1: an output fed back as the input must be copied first, or the kernel would read what it writes */
static tg_status step_flip(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                           tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_add(tg_flip(in[0], (const int[]){0}, 1), tg_const_float(1));
  return out[0] ? TG_OK : tg_last_status();
}

static void test_aliasing(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_flip, NULL, 1, NULL);
  float ref[8], got[8];
  fill(ref, 8, 0);
  tg_tensor *x = tg_from_floats(ref, TG_SHAPE(8));
  for (int call = 0; call < 6; call++) {
    tg_tensor *out = NULL;
    CHECK_MSG(tg_jit_call(j, &x, 1, NULL, 0, &out) == TG_OK, "%s", tg_last_error());
    x = out;
    float nx[8];
    for (int i = 0; i < 8; i++) nx[i] = ref[7 - i] + 1;
    memcpy(ref, nx, sizeof nx);
  }
  host(x, got, 8);
  int bad = 0;
  for (int i = 0; i < 8; i++) bad += got[i] != ref[i];
  CHECK_MSG(bad == 0, "%d wrong values after feeding outputs back", bad);
  tg_jit_free(j);
  tg_scope_end(sc);
}

/* a + v with a bound Variable: one capture serves every value (test_symbolic_jit plus1) */
static tg_status step_var(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                          tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_add(tg_mul(in[0], vars[0]), vars[1]);
  return out[0] ? TG_OK : tg_last_status();
}

static void test_variables(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_var, NULL, 1, NULL);
  tg_tensor *vi = tg_variable("i", 1, 10), *vk = tg_variable("k", 0, 100);
  float a[6], got[6];
  fill(a, 6, 1);
  tg_tensor *x = tg_from_floats(a, TG_SHAPE(6));
  for (int i = 1; i <= 6; i++) {
    tg_tensor *vars[2] = {tg_bind(vi, i), tg_bind(vk, 3 * i)}, *out = NULL;
    CHECK_MSG(tg_jit_call(j, &x, 1, vars, 2, &out) == TG_OK, "i=%d: %s", i, tg_last_error());
    host(out, got, 6);
    int bad = 0;
    for (int e = 0; e < 6; e++) bad += got[e] != a[e] * (float)i + (float)(3 * i);
    CHECK_MSG(bad == 0, "i=%d: %d wrong values", i, bad);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(j), 1);
  tg_tensor *swapped[2] = {tg_bind(vk, 1), tg_bind(vi, 1)}, *out = NULL;
  CHECK(tg_jit_call(j, &x, 1, swapped, 2, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "args mismatch in JIT"));
  tg_tensor *unbound[2] = {vi, vk};
  CHECK(tg_jit_call(j, &x, 1, unbound, 2, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "not a bound Variable"));
  tg_jit_free(j);
  tg_scope_end(sc);
}

/* a + rand: new numbers per replay, the sequence of the same calls without the JIT (test_jit_v_nojit_random_regen) */
static tg_status step_rand(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                           tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_add(in[0], tg_rand(TG_SHAPE(5), TG_VOID));
  return out[0] ? TG_OK : tg_last_status();
}

static void test_random(void) {
  enum { CALLS = 5 };
  float seq[2][CALLS][5], zero[5] = {0};
  for (int use_jit = 0; use_jit < 2; use_jit++) {
    tg_scope sc = tg_scope_begin();
    tg_manual_seed(42);
    tg_jit *j = tg_jit_new(step_rand, NULL, 1, NULL);
    tg_tensor *x = tg_from_floats(zero, TG_SHAPE(5));
    for (int c = 0; c < CALLS; c++) {
      tg_tensor *out = NULL;
      tg_status st = use_jit ? tg_jit_call(j, &x, 1, NULL, 0, &out) : step_rand(NULL, &x, 1, NULL, 0, &out, 1);
      CHECK_MSG(st == TG_OK, "%s", tg_last_error());
      if (out) host(out, seq[use_jit][c], 5);
    }
    tg_jit_free(j);
    tg_scope_end(sc);
  }
  int same = 0, repeated = 0;
  for (int c = 0; c < CALLS; c++)
    for (int e = 0; e < 5; e++) same += seq[0][c][e] == seq[1][c][e], repeated += c && seq[1][c][e] == seq[1][c - 1][e];
  CHECK_EQ_INT(same, CALLS * 5);
  CHECK_EQ_INT(repeated, 0);
  CHECK_NEAR(seq[0][0][0], 0.0, 1.0); /* in [0, 1) */
}

/* errors: nothing captured, a nested capture, a read during capture; JIT=0 */
static tg_status step_identity(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                               tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_retain(in[0]);
  return TG_OK;
}

static tg_status step_nested(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                             tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  tg_tensor *both[2] = {in[0], in[1]};
  return tg_jit_call((tg_jit *)user, both, 2, NULL, 0, out);
}

static tg_status step_item(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                           tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  double v = 0;
  tg_status st = tg_item_double(tg_sum(in[0], NULL, 0, false), &v);
  if (st != TG_OK) return st;
  out[0] = tg_add(in[0], tg_const_float(v));
  return TG_OK;
}

/* w += 1 realized, then a read: the capture fails at the read, and the assign recorded before it still ran */
static tg_status step_assign_then_read(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars,
                                       size_t nvars, tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  tg_tensor *w = user;
  tg_status st = tg_assign(w, tg_add(w, tg_const_float(1)));
  if (st == TG_OK) st = tg_realize(w);
  double v = 0;
  if (st == TG_OK) st = tg_item_double(tg_sum(in[0], NULL, 0, false), &v);
  out[0] = tg_retain(w);
  return st;
}

static void test_failed_capture_keeps_state(void) {
  tg_scope sc = tg_scope_begin();
  float zero[2] = {0, 0}, got[2];
  tg_tensor *w = tg_from_floats(zero, TG_SHAPE(2)), *x = tg_from_floats(zero, TG_SHAPE(2)), *out = NULL;
  tg_jit *j = tg_jit_new(step_assign_then_read, w, 1, NULL);
  CHECK(tg_jit_call(j, &x, 1, NULL, 0, &out) == TG_OK);
  CHECK(tg_jit_call(j, &x, 1, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "during JIT capture"));
  host(w, got, 2);
  CHECK_EQ_INT(got[0], 2); /* both calls' assigns ran */
  CHECK_EQ_INT(got[1], 2);
  tg_jit_free(j);
  tg_scope_end(sc);
}

static void test_errors(void) {
  tg_scope sc = tg_scope_begin();
  float a[4] = {1, 2, 3, 4};
  tg_tensor *x = tg_from_floats(a, TG_SHAPE(4)), *y = tg_from_floats(a, TG_SHAPE(4)), *out = NULL;
  tg_jit *empty = tg_jit_new(step_identity, NULL, 1, NULL);
  CHECK(tg_jit_call(empty, &x, 1, NULL, 0, &out) == TG_OK);
  CHECK(tg_jit_call(empty, &x, 1, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "didn't JIT anything!"));
  tg_jit *inner = tg_jit_new(step_add, NULL, 1, NULL), *outer = tg_jit_new(step_nested, inner, 1, NULL);
  tg_tensor *in[2] = {x, y};
  CHECK(tg_jit_call(outer, in, 2, NULL, 0, &out) == TG_OK);
  CHECK(tg_jit_call(outer, in, 2, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "nested JIT"));
  tg_jit *reads = tg_jit_new(step_item, NULL, 1, NULL);
  CHECK(tg_jit_call(reads, &x, 1, NULL, 0, &out) == TG_OK);
  CHECK(tg_jit_call(reads, &x, 1, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "during JIT capture"));
  /* after the failed captures, eager work runs again */
  float got[4];
  host(tg_add(x, y), got, 4);
  CHECK_EQ_INT(got[3], 8);
  tg_jit_free(empty), tg_jit_free(inner), tg_jit_free(outer), tg_jit_free(reads);
  /* JIT=0: the step runs on every call and nothing is captured */
  test_setenv("JIT", "0");
  tg_jit *off = tg_jit_new(step_add, NULL, 1, NULL);
  fn_calls = 0;
  for (int i = 0; i < 4; i++) CHECK(tg_jit_call(off, in, 2, NULL, 0, &out) == TG_OK);
  CHECK_EQ_INT(fn_calls, 4);
  CHECK_EQ_INT(tg_jit_kernel_count(off), 0);
  tg_jit_free(off);
  test_unsetenv("JIT");
  tg_scope_end(sc);
}

/* a COPY inside the step: in (CPU) -> CPU:1, doubled there; the input is patched into the copy */
static tg_status step_copy(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                           tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_mul(tg_to(in[0], "CPU:1"), tg_const_float(2));
  return out[0] ? TG_OK : tg_last_status();
}

static void test_copy_calls(void) {
  tg_scope sc = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_copy, NULL, 1, NULL);
  for (int call = 0; call < 5; call++) {
    float a[6], got[6];
    fill(a, 6, (float)call);
    tg_tensor *x = tg_from_floats(a, TG_SHAPE(6)), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &x, 1, NULL, 0, &out) == TG_OK, "call %d: %s", call, tg_last_error());
    if (!out) break;
    CHECK_EQ_STR(tg_device(out), "CPU:1");
    host(out, got, 6);
    int bad = 0;
    for (int i = 0; i < 6; i++) bad += got[i] != a[i] * 2;
    CHECK_MSG(bad == 0, "call %d: %d wrong values", call, bad);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(j), 1); /* the copy is a call, not a kernel */
  float a[6] = {0};
  tg_tensor *other = tg_from_data_on(a, TG_FLOAT32, TG_SHAPE(6), "CPU:1"), *out = NULL;
  CHECK(tg_jit_call(j, &other, 1, NULL, 0, &out) == TG_ERR_INVALID_ARGUMENT && has(tg_last_error(), "args mismatch in JIT"));
  tg_jit_free(j);
  tg_scope_end(sc);
}

/* ---- a train step: MLP 16-32-4 with Adam, JIT'd vs eager from the same seed ---- */

typedef struct Mlp { tg_linear_layer *l1, *l2; tg_optim *opt; } Mlp;

static bool mlp_new(Mlp *m, uint64_t seed) {
  tg_manual_seed(seed);
  m->l1 = tg_linear_new(16, 32, true), m->l2 = tg_linear_new(32, 4, true);
  if (!m->l1 || !m->l2) return false;
  tg_tensor *params[4] = {m->l1->weight, m->l1->bias, m->l2->weight, m->l2->bias};
  m->opt = tg_optim_adam(params, 4, 0.01, 0.9, 0.999, 1e-8);
  return m->opt != NULL;
}

static void mlp_free(Mlp *m) {
  tg_optim_free(m->opt);
  tg_linear_free(m->l1);
  tg_linear_free(m->l2);
}

static tg_status step_train(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                            tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  Mlp *m = user;
  tg_tensor *logits = tg_linear_forward(m->l2, tg_relu(tg_linear_forward(m->l1, in[0])));
  tg_tensor *l = tg_sparse_categorical_crossentropy(logits, in[1], -1, 0.0, TG_REDUCTION_MEAN);
  tg_optim_zero_grad(m->opt);
  if (!l) return tg_last_status();
  tg_status st = tg_backward(l);
  if (st == TG_OK) st = tg_optim_step_with(m->opt, &l, 1);
  out[0] = l;
  return st;
}

static void make_batch(int step, float *x, int32_t *y, int n) {
  uint32_t s = 777u + (uint32_t)step * 31u;
  for (int i = 0; i < n * 16; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
  for (int b = 0; b < n; b++) {
    int best = 0;
    for (int k = 1; k < 4; k++) best = x[b * 16 + k] > x[b * 16 + best] ? k : best;
    y[b] = best;
  }
}

static void test_train_step(void) {
  enum { B = 32, STEPS = 8 };
  bool was = tg_set_training(true);
  Mlp eager, jitted;
  CHECK(mlp_new(&eager, 3) && mlp_new(&jitted, 3));
  tg_jit *j = tg_jit_new(step_train, &jitted, 1, NULL);
  double le[STEPS] = {0}, lj[STEPS] = {0};
  for (int step = 0; step < STEPS; step++) {
    static float x[B * 16];
    static int32_t y[B];
    make_batch(step, x, y, B);
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[2] = {tg_from_floats(x, TG_SHAPE(B, 16)), tg_from_data(y, TG_INT32, TG_SHAPE(B))}, *out = NULL;
    CHECK_MSG(step_train(&eager, in, 2, NULL, 0, &out, 1) == TG_OK && tg_item_double(out, &le[step]) == TG_OK, "%s", tg_last_error());
    tg_tensor *in2[2] = {tg_from_floats(x, TG_SHAPE(B, 16)), tg_from_data(y, TG_INT32, TG_SHAPE(B))};
    CHECK_MSG(tg_jit_call(j, in2, 2, NULL, 0, &out) == TG_OK && tg_item_double(out, &lj[step]) == TG_OK, "step %d: %s", step, tg_last_error());
    tg_scope_end(sc);
  }
  for (int s = 0; s < STEPS; s++) CHECK_NEAR(lj[s], le[s], 1e-5 * (1 + fabs(le[s])));
  CHECK(le[STEPS - 1] < le[0]);
  /* the weights and the lazy grads after a replay (test_jit_lazy_grad_after_replay) */
  float we[4 * 32], wj[4 * 32];
  host(jitted.l2->weight, wj, 4 * 32);
  host(eager.l2->weight, we, 4 * 32);
  double maxd = 0;
  for (int i = 0; i < 4 * 32; i++) maxd = fmax(maxd, fabs((double)we[i] - (double)wj[i]));
  CHECK_MSG(maxd < 1e-5, "weights differ by %g", maxd);
  CHECK(tg_jit_kernel_count(j) > 10);
  tg_jit_free(j);
  mlp_free(&eager);
  mlp_free(&jitted);
  tg_set_training(was);
}

/* ---- memory: 10,000 replays of a small step keep RSS and the handle count (train_memory's method) ---- */

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return n == 2 ? resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static void test_memory_flat(void) {
  int replays = tg_test_light() ? 300 : 10000, warm = tg_test_light() ? 50 : 500;
  tg_scope outer = tg_scope_begin();
  tg_jit *j = tg_jit_new(step_rand, NULL, 1, NULL);
  float z[5] = {0};
  tg_tensor *x = tg_from_floats(z, TG_SHAPE(5));
  size_t rss_warm = 0, live_warm = 0;
  int failed = 0, live_changes = 0;
  for (int i = 0; i < replays + 2 && !failed; i++) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *out = NULL;
    failed += tg_jit_call(j, &x, 1, NULL, 0, &out) != TG_OK;
    tg_scope_end(sc);
    if (i == warm) rss_warm = rss_bytes(), live_warm = tg_live_tensors();
    else if (i > warm && tg_live_tensors() != live_warm) live_changes++;
  }
  CHECK_MSG(failed == 0, "%s", tg_last_error());
  CHECK_EQ_INT(live_changes, 0);
  if (!tg_test_light()) {
    size_t rss_end = rss_bytes();
    double growth = rss_warm ? ((double)rss_end - (double)rss_warm) / (double)rss_warm : 1;
    CHECK_MSG(growth <= 0.02, "RSS grew %.2f%% over %d replays (%zu -> %zu KiB)", growth * 100, replays, rss_warm / 1024, rss_end / 1024);
  }
  tg_jit_free(j);
  tg_scope_end(outer);
}

/* ---- graph dependencies (runtime.h rt_graph_deps, what a CUDA graph's nodes wait for) ---- */
static void test_graph_deps(void) {
  /* 0 writes A; 1 writes B; 2 reads A, writes C; 3 reads A and B, writes A (WAR on 2, RAW/WAW on 0, RAW on 1);
   * 4 reads the first half of A (the covering write 3 stops the walk); 5 reads D (nothing); 6 reads an input
   * (any memory: after every earlier write) */
  const uint64_t A = 0x1000, B = 0x2000, C = 0x3000, D = 0x4000;
  RtGraphAccess a0[] = {{A, 256, true, false}}, a1[] = {{B, 256, true, false}};
  RtGraphAccess a2[] = {{A, 256, false, false}, {C, 256, true, false}};
  RtGraphAccess a3[] = {{A, 256, false, false}, {B, 256, false, false}, {A, 256, true, false}};
  RtGraphAccess a4[] = {{A, 128, false, false}}, a5[] = {{D, 64, false, false}}, a6[] = {{0, 4, false, true}};
  RtGraphNode n[7] = {{.access = a0, .naccess = 1}, {.access = a1, .naccess = 1}, {.access = a2, .naccess = 2},
                      {.access = a3, .naccess = 3}, {.access = a4, .naccess = 1}, {.access = a5, .naccess = 1},
                      {.access = a6, .naccess = 1}};
  uint32_t *start, *deps;
  rt_graph_deps(n, 7, &start, &deps);
  char got[7][32];
  for (int i = 0; i < 7; i++) {
    got[i][0] = 0;
    for (uint32_t k = start[i]; k < start[i + 1]; k++) {
      size_t len = strlen(got[i]);
      snprintf(got[i] + len, sizeof got[i] - len, "%s%u", k > start[i] ? "," : "", deps[k]);
    }
  }
  CHECK_EQ_STR(got[0], "");
  CHECK_EQ_STR(got[1], "");
  CHECK_EQ_STR(got[2], "0");
  CHECK_EQ_STR(got[3], "0,1,2");
  CHECK_EQ_STR(got[4], "3");
  CHECK_EQ_STR(got[5], "");
  CHECK_EQ_STR(got[6], "3,2,1,0");
  tg_free(start);
  tg_free(deps);
  /* the CPU has no graphs: a JIT there launches one by one */
  RtDevice *cpu;
  CHECK(rt_device_open("CPU", &cpu) == TG_OK && !rt_device_has_graph(cpu));
  CHECK(rt_graph_new(cpu, n, 1, &(RtGraph *){NULL}) == TG_ERR_UNSUPPORTED);
}

/* a @ b */
static tg_status step_matmul(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                             tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_matmul(in[0], in[1]);
  return out[0] ? TG_OK : tg_last_status();
}

/* JITBEAM (tg_jit_options.beam or the knob): the capture makes its kernels with BEAM set to it (new programs: the
 * kernel cache is keyed with BEAM) and puts BEAM back; the replays compute what eager does. IGNORE_JIT_FIRST_BEAM:
 * the first call runs with BEAM=0 (no new program for a kernel made before without BEAM). */
static void test_jitbeam(void) {
  enum { NMAX = 48 };
  static float a[NMAX * NMAX], b[NMAX * NMAX], want[NMAX * NMAX], got[NMAX * NMAX];
  for (int variant = 0; variant < 3; variant++) {
    int n = NMAX - 8 * variant; /* each variant its own kernel: the kernel cache keeps the last one's BEAM kernels */
    for (int i = 0; i < n * n; i++) a[i] = (float)(i % 7) - 3.0f, b[i] = (float)(i % 5) * 0.5f;
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++) {
        float acc = 0;
        for (int k = 0; k < n; k++) acc += a[r * n + k] * b[k * n + c];
        want[r * n + c] = acc;
      }
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[2] = {tg_from_floats(a, TG_SHAPE(n, n)), tg_from_floats(b, TG_SHAPE(n, n))}, *out = NULL;
    CHECK(tg_realize(in[0]) == TG_OK && tg_realize(in[1]) == TG_OK);
    CHECK(tg_realize(tg_matmul(in[0], in[1])) == TG_OK); /* the BEAM=0 kernel exists */
    if (variant == 1) test_setenv("JITBEAM", "1");
    if (variant == 2) test_setenv("BEAM", "1"), test_setenv("IGNORE_JIT_FIRST_BEAM", "1");
    tg_jit *j = tg_jit_new(step_matmul, NULL, 1, variant == 0 ? &(tg_jit_options){.beam = 1} : NULL);
    long made[4];
    for (int call = 0; call < 4; call++) {
      long before = programs_requested();
      CHECK_MSG(tg_jit_call(j, in, 2, NULL, 0, &out) == TG_OK, "variant %d call %d: %s", variant, call, tg_last_error());
      made[call] = programs_requested() - before;
      if (out) host(out, got, (size_t)(n * n));
      int bad = 0;
      for (int i = 0; out && i < n * n; i++) bad += got[i] != want[i];
      CHECK_MSG(out && bad == 0, "variant %d call %d: %d wrong values", variant, call, bad);
      CHECK_EQ_INT(tg_getenv_int("BEAM", 0), variant == 2 ? 1 : 0); /* put back after each call */
    }
    CHECK_MSG(made[0] == 0 && made[1] >= 1 && made[2] == 0 && made[3] == 0,
              "variant %d: programs made per call %ld %ld %ld %ld", variant, made[0], made[1], made[2], made[3]);
    tg_jit_free(j);
    test_unsetenv("JITBEAM"), test_unsetenv("BEAM"), test_unsetenv("IGNORE_JIT_FIRST_BEAM");
    tg_scope_end(sc);
  }
  CHECK(tg_jit_new(step_add, NULL, 1, &(tg_jit_options){.beam = -1}) == NULL && has(tg_last_error(), "beam -1"));
}

/* a + (w * 2 + 1), the weight term its own kernel (user: w) */
static tg_status step_weight_term(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                                  tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  fn_calls++;
  tg_tensor *w2 = tg_contiguous(tg_add(tg_mul((tg_tensor *)user, tg_const_float(2.0)), tg_const_float(1.0)));
  out[0] = tg_add(in[0], w2);
  return out[0] ? TG_OK : tg_last_status();
}

/* ((a + (w * 2 + 1)) * 3) + 1, each step its own kernel: the weight term's memory is free after the second kernel,
 * where the memory planner may place the third one's output */
static tg_status step_weight_chain(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                                   tg_tensor **out, size_t nout) {
  TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  tg_tensor *w2 = tg_contiguous(tg_add(tg_mul((tg_tensor *)user, tg_const_float(2.0)), tg_const_float(1.0)));
  tg_tensor *u = tg_contiguous(tg_add(in[0], w2));
  tg_tensor *v = tg_contiguous(tg_mul(u, tg_const_float(3.0)));
  out[0] = tg_add(v, tg_const_float(1.0));
  return out[0] ? TG_OK : tg_last_status();
}

/* relu(a @ w1) @ w2 with w1, w2 1024 x 1024: each B copied into panels first (weight-only kernels), the second
 * panel copy placed by the memory planner in the first one's bytes */
static tg_tensor *prune_w[2];
static tg_status step_two_matmuls(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                                  tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_matmul(tg_relu(tg_matmul(in[0], prune_w[0])), prune_w[1]);
  return out[0] ? TG_OK : tg_last_status();
}

/* The pruning decision on made-up memory (engine_prune_plan): buffers A (the input), W, W2, O and an arena R. Calls:
 * 0 writes W2 from W alone, 1 packs W into R[0, 64), 2 reads A and R[0, 64) into R[64, 128), 3 packs W again into
 * R[0, 64) (its bytes reused after 2), 4 reads R[0, 64) and R[64, 128) into O. Kept: 2 (reads the input), 4 (reads
 * what 2 wrote), and 1 and 3, which do not depend on the input but write the same bytes (the replays of 2 would read
 * 3's value there); 0 is pruned. Without the reuse (3 writing R[128, 192)) 1 and 3 are pruned too. */
static void test_prune_plan(void) {
  static const char A, W, R, O, W2;
  for (int reuse = 1; reuse >= 0; reuse--) {
    size_t r3 = reuse ? 0 : 128;
    const JitSpan spans[] = {
        {&W, 0, 64, false}, {&W2, 0, 64, true},                       /* 0 */
        {&W, 0, 64, false}, {&R, 0, 64, true},                        /* 1 */
        {&A, 0, 64, false}, {&R, 0, 64, false}, {&R, 64, 64, true},   /* 2 */
        {&W, 0, 64, false}, {&R, r3, 64, true},                       /* 3 */
        {&R, r3, 64, false}, {&R, 64, 64, false}, {&O, 0, 64, true},  /* 4 */
    };
    const size_t first[] = {0, 2, 4, 7, 9, 12};
    const JitSpan in[] = {{&A, 0, 64, false}};
    bool keep[5];
    engine_prune_plan(spans, first, 5, in, 1, keep);
    bool want[5] = {false, reuse, true, reuse, true};
    for (int i = 0; i < 5; i++) CHECK_MSG(keep[i] == want[i], "reuse %d: call %d kept %d", reuse, i, keep[i]);
  }
}

/* prune (tinygrad test_simple_prune): the weight-only kernel runs once, at capture, and leaves the replay list; the
 * replays still see its result. A step whose every kernel reads the inputs keeps them all. */
static void test_prune(void) {
  tg_scope sc = tg_scope_begin();
  float wv[8];
  fill(wv, 8, -1.0f);
  tg_tensor *w = tg_from_floats(wv, TG_SHAPE(8));
  CHECK(tg_realize(w) == TG_OK);
  for (int prune = 0; prune <= 1; prune++) {
    tg_jit *j = tg_jit_new(step_weight_term, w, 1, &(tg_jit_options){.prune = prune});
    CHECK(j != NULL);
    for (int call = 0; call < 5; call++) {
      float a[8], got[8];
      fill(a, 8, 3.0f * (float)call);
      tg_tensor *in = tg_from_floats(a, TG_SHAPE(8)), *out = NULL;
      CHECK_MSG(tg_jit_call(j, &in, 1, NULL, 0, &out) == TG_OK, "prune %d call %d: %s", prune, call, tg_last_error());
      if (!out) break;
      host(out, got, 8);
      int bad = 0;
      for (int i = 0; i < 8; i++) bad += got[i] != a[i] + wv[i] * 2 + 1;
      CHECK_MSG(bad == 0, "prune %d call %d: %d wrong values", prune, call, bad);
    }
    CHECK_EQ_INT(tg_jit_kernel_count(j), prune ? 1 : 2);
    tg_jit_free(j);
  }
  /* the weight term's bytes reused by a kept kernel: it stays in the list (the replays would overwrite it) */
  tg_jit *chain = tg_jit_new(step_weight_chain, w, 1, &(tg_jit_options){.prune = true});
  for (int call = 0; call < 5; call++) {
    float a[8], got[8];
    fill(a, 8, 2.0f * (float)call);
    tg_tensor *in = tg_from_floats(a, TG_SHAPE(8)), *out = NULL;
    CHECK_MSG(tg_jit_call(chain, &in, 1, NULL, 0, &out) == TG_OK, "chain call %d: %s", call, tg_last_error());
    if (!out) break;
    host(out, got, 8);
    int bad = 0;
    for (int i = 0; i < 8; i++) bad += got[i] != (a[i] + wv[i] * 2 + 1) * 3 + 1;
    CHECK_MSG(bad == 0, "chain call %d: %d wrong values", call, bad);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(chain), 3);
  tg_jit_free(chain);
  enum { M = 8, K = 1024 };
  static float wa[K * K], wb[K * K], x[M * K], h[M * K], want[M * K], got2[M * K];
  for (int i = 0; i < K * K; i++) wa[i] = (float)((i * 7) % 11 - 5) / 8.0f, wb[i] = (float)((i * 3) % 7 - 3) / 4.0f;
  prune_w[0] = tg_from_floats(wa, TG_SHAPE(K, K)), prune_w[1] = tg_from_floats(wb, TG_SHAPE(K, K));
  CHECK(tg_realize(prune_w[0]) == TG_OK && tg_realize(prune_w[1]) == TG_OK);
  tg_jit *two = tg_jit_new(step_two_matmuls, NULL, 1, &(tg_jit_options){.prune = true});
  for (int call = 0; call < 4; call++) {
    for (int i = 0; i < M * K; i++) x[i] = (float)((i + call * 5) % 9 - 4) / 2.0f;
    for (int r = 0; r < M; r++)
      for (int c = 0; c < K; c++) {
        double acc = 0;
        for (int k = 0; k < K; k++) acc += (double)x[r * K + k] * wa[k * K + c];
        h[r * K + c] = acc > 0 ? (float)acc : 0.0f;
      }
    for (int r = 0; r < M; r++)
      for (int c = 0; c < K; c++) {
        double acc = 0;
        for (int k = 0; k < K; k++) acc += (double)h[r * K + k] * wb[k * K + c];
        want[r * K + c] = (float)acc;
      }
    tg_tensor *in = tg_from_floats(x, TG_SHAPE(M, K)), *out = NULL;
    CHECK_MSG(tg_jit_call(two, &in, 1, NULL, 0, &out) == TG_OK, "two matmuls call %d: %s", call, tg_last_error());
    if (!out) break;
    host(out, got2, M * K);
    int bad = 0;
    for (int i = 0; i < M * K; i++) bad += fabsf(got2[i] - want[i]) > 1e-3f * (1.0f + fabsf(want[i]));
    CHECK_MSG(bad == 0, "two matmuls call %d: %d wrong values", call, bad);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(two), 2); /* both panel copies run once */
  tg_jit_free(two);
  tg_jit *all = tg_jit_new(step_add, NULL, 1, &(tg_jit_options){.prune = true});
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, got[4];
  for (int call = 0; call < 3; call++) {
    tg_tensor *in[2] = {tg_from_floats(a, TG_SHAPE(4)), tg_from_floats(b, TG_SHAPE(4))}, *out = NULL;
    CHECK(tg_jit_call(all, in, 2, NULL, 0, &out) == TG_OK);
    if (out) host(out, got, 4);
    CHECK_EQ_INT(got[3], 88);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(all), 1);
  tg_jit_free(all);
  tg_scope_end(sc);
}

void suite_jit(void) {
  test_graph_deps();
  test_jitbeam();
  test_prune_plan();
  test_prune();
  test_simple();
  test_input_checks();
  test_output_reuse();
  test_aliasing();
  test_variables();
  test_random();
  test_errors();
  test_failed_capture_keeps_state();
  test_copy_calls();
  test_train_step();
  test_memory_flat();
}
