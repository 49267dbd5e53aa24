/* test_symshape.c — symbolic shapes (tinygrad's sint): sizes that are expressions of bound Variables, through the
 * frontend, the scheduler and the kernels, against the oracle of the same program with concrete sizes, plus one
 * schedule and one compile for every value. tinygrad's twins: test/backend/test_symbolic_ops.py,
 * test/unit/test_symbolic_tensor.py, test/backend/test_symbolic_jit.py. */
#include "engine/engine.h"
#include "runtime/runtime.h"
#include "schedule/sched_internal.h"
#include "tensor/tensor.h"
#include "test.h"

static inline bool has(const char *msg, const char *part) { return msg && strstr(msg, part) != NULL; }

static inline long programs_requested(void) {
  RtStats s = rt_stats();
  return s.kernels_compiled + s.disk_hits + s.memory_hits;
}

/* a deterministic (rows, cols) float tensor, realized */
static tg_tensor *data2(int64_t rows, int64_t cols, float seed) {
  float *v = malloc(sizeof(float) * (size_t)(rows * cols));
  for (int64_t k = 0; k < rows * cols; k++) v[k] = (float)((k * 37 + 11) % 23) * 0.125f - 1.0f + seed;
  tg_tensor *t = tg_from_floats(v, TG_SHAPE(rows, cols));
  free(v);
  CHECK(tg_realize(t) == TG_OK);
  return t;
}

/* read a concrete-shaped tensor */
static float *read_all(tg_tensor *t, size_t *n) {
  *n = (size_t)tg_numel(t);
  float *o = calloc(*n ? *n : 1, sizeof(float));
  tg_status st = tg_to_host(t, o, *n * sizeof(float));
  CHECK_MSG(st == TG_OK, "to_host: %s", tg_last_error());
  return o;
}

/* sym (shrunk to concrete by the caller) equals cst elementwise within tol */
static bool same(tg_tensor *sym, tg_tensor *cst, float tol, const char *what, int i) {
  if (!sym || !cst) {
    tg_test_fail(__FILE__, __LINE__, "%s i=%d: NULL (%s)", what, i, tg_last_error());
    return false;
  }
  size_t ns, nc;
  float *a = read_all(sym, &ns), *b = read_all(cst, &nc);
  bool ok = ns == nc;
  for (size_t k = 0; ok && k < ns; k++) ok = fabsf(a[k] - b[k]) <= tol * (1 + fabsf(b[k]));
  CHECK_MSG(ok, "%s i=%d: symbolic differs from concrete (n %zu vs %zu, first %g vs %g)", what, i, ns, nc,
            ns ? a[0] : 0.0, nc ? b[0] : 0.0);
  free(a);
  free(b);
  return ok;
}

#define SHRINK2(t, a0, b0, a1, b1) tg_shrink_sym((t), (tg_sint[]){a0, b0, a1, b1}, 2)

/* test_plus1: (a[:, :vi] + 1).realize()[:3, :i] == (a[:, :i] + 1) */
static void test_plus1(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *a = data2(3, 10, 0), *v = tg_variable("i", 1, 10);
  for (int i = 1; i < 5; i++) {
    tg_scope in = tg_scope_begin();
    tg_tensor *vi = tg_bind(v, i);
    tg_tensor *s = SHRINK2(a, TG_SI(0), TG_SI(3), TG_SI(0), TG_SV(vi, 0));
    CHECK(tg_is_symbolic(s) && tg_shape(s)[1] == 10);
    tg_tensor *r = tg_add(s, tg_const_float(1));
    CHECK_MSG(r && tg_realize(r) == TG_OK, "%s", tg_last_error());
    CHECK(tg_is_symbolic(r));
    tg_tensor *got = tg_shrink(r, (int64_t[]){0, 3, 0, i}, 2);
    tg_tensor *want = tg_add(tg_shrink(a, (int64_t[]){0, 3, 0, i}, 2), tg_const_float(1));
    same(got, want, 1e-6f, "plus1", i);
    tg_scope_end(in);
  }
  tg_scope_end(sc);
}

void suite_symshape(void) {
  size_t live = tg_live_tensors();
  test_plus1();
  CHECK_EQ_INT(tg_live_tensors(), live);
}
