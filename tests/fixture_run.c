/* fixture_run.c — the two steps every fixture-driven suite shares (attention, moe, nn): comparing a result tensor
 * with a fixture's expected tensor, and running each case of one fixture file in its own tensor scope. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "test.h"
#include "tinygrad.h"

bool tf_matches(const char *what, tg_tensor *got, const tf_tensor *exp, double atol, double rtol) {
  if (!got) {
    fprintf(stderr, "  %s: no result: %s\n", what, tg_last_error());
    return false;
  }
  if (tg_ndim(got) != exp->ndim) {
    fprintf(stderr, "  %s: %d dims, expected %d\n", what, tg_ndim(got), exp->ndim);
    return false;
  }
  for (int i = 0; i < exp->ndim; i++)
    if (tg_shape(got)[i] != exp->shape[i]) {
      fprintf(stderr, "  %s: dim %d is %lld, expected %lld\n", what, i, (long long)tg_shape(got)[i],
              (long long)exp->shape[i]);
      return false;
    }
  size_t n = (size_t)exp->numel;
  double *buf = malloc((n ? n : 1) * sizeof *buf);
  tg_tensor *f = tg_cast(got, TG_FLOAT64);
  bool ok = buf && f && tg_to_host(f, buf, n * sizeof *buf) == TG_OK;
  if (!ok) fprintf(stderr, "  %s: realize failed: %s\n", what, tg_last_error());
  for (size_t i = 0; ok && i < n; i++) {
    double e = tf_get_double(exp->dtype, exp->data, (int64_t)i), g = buf[i];
    if (fabs(g - e) <= atol + rtol * fabs(e) || (isinf(e) && g == e)) continue;
    fprintf(stderr, "  %s: element %zu is %.9g, expected %.9g\n", what, i, g, e);
    ok = false;
  }
  free(buf);
  return ok;
}

void tf_run_file(const char *file, const char *only_env, size_t min_cases, bool (*run)(const tf_case *)) {
  char path[1024], err[256];
  snprintf(path, sizeof path, "%s/%s", tf_dir(), file);
  tf_file f;
  bool loaded = tf_load(path, &f, err, sizeof err);
  CHECK_MSG(loaded, "cannot load %s: %s", path, err);
  if (!loaded) return;
  const char *only = only_env ? getenv(only_env) : NULL;
  size_t ran = 0;
  for (size_t i = 0; i < f.ncases; i++) {
    const tf_case *c = &f.cases[i];
    if (only && !strstr(c->name, only)) continue;
    tg_scope s = tg_scope_begin();
    bool ok = run(c);
    tg_scope_end(s);
    CHECK_MSG(ok, "%s case %s", file, c->name);
    ran++;
  }
  if (!only) CHECK_MSG(ran >= min_cases, "%s: %zu cases, expected at least %zu", file, ran, min_cases);
  tf_free(&f);
}
