/* test_variables.c — bound Variables in kernels (tinygrad's Variable after the seed's "remove Ops.BIND"): creation,
 * binding and reading, dtype behaviour as a weak int scalar, values reaching kernels as scalar arguments, a new value
 * reusing the schedule and the compiled kernel, and the errors (out of range, bind mismatch, unbound Variable).
 * tinygrad's twins: test/unit/test_schedule_cache.py, test/null/test_schedule_cache.py, test_tensor_variable.py. */
#include <stdlib.h>

#include "tinygrad.h"
#include "runtime/runtime.h"
#include "schedule/schedule.h"
#include "test.h"

static void test_first(void) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *v = tg_variable("i", 1, 10);
  tg_tensor *x = tg_ones(TG_SHAPE(3), TG_INT32);
  tg_tensor *y = tg_mul(x, tg_bind(v, 2));
  int32_t out[3] = {0};
  tg_status st = tg_to_host(y, out, sizeof out);
  CHECK_MSG(st == TG_OK, "%s", tg_last_error());
  CHECK_EQ_INT(out[0], 2);
  tg_scope_end(sc);
}

void suite_variables(void) {
  test_first();
}
