/* test_optim_parity.c — optimizer parity with PyTorch: the cases of tests/fixtures/optim_mlp.tgf (written by
 * tools/gen_grad_fixtures.py, whose header documents them) hold the parameters of a small MLP after each of 10 steps
 * of SGD (plain, momentum, nesterov, weight decay), Adam, AdamW and LAMB (tinygrad's, in torch ops) on fixed data.
 * Here the same model is built with the public API (out = relu(x@w1 + b1)@w2 + b2, loss = mean((out - target)^2)),
 * each step runs zero_grad, tg_backward and tg_optim_step, and the parameters after every step are compared with the
 * fixture's within its tolerance. Two runs change the learning rate at step 6 (tg_optim_set_lr: the lr is a tensor).
 * A run starts at each case with step=1; TG_OPTIM_ONLY=<substring> runs only the optimizers whose case names contain
 * it. */
#include <stdlib.h>

#include "fixture.h"
#include "test.h"
#include "tinygrad.h"

#define NPARAMS 4
#define LR2_STEP 6 /* cases with lr2 switch the optimizer's learning rate (a tensor) to it from this step on */

typedef struct optim_run {
  tg_tensor *x, *target, *params[NPARAMS];
  tg_optim *opt;
} optim_run;

static void run_free(optim_run *r) {
  tg_optim_free(r->opt);
  tg_release(r->x);
  tg_release(r->target);
  for (int i = 0; i < NPARAMS; i++) tg_release(r->params[i]);
  memset(r, 0, sizeof *r);
}

static double param_or(const tf_case *c, const char *key, double dflt) {
  double v;
  return tf_param_double(c, key, &v) ? v : dflt;
}

static tg_tensor *from_fixture(const tf_tensor *t) {
  tg_tensor *r = tg_from_data(t->data, TG_FLOAT32, t->shape, (size_t)t->ndim);
  if (r && tg_realize(r) != TG_OK) {
    tg_release(r);
    return NULL;
  }
  return r;
}

/* builds the data, the parameters and the optimizer of a case with step=1 */
static bool run_start(optim_run *r, const tf_case *c, char *why, size_t whylen) {
  if (c->ninputs != 2 + NPARAMS || c->noutputs != NPARAMS)
    return snprintf(why, whylen, "malformed optimizer case"), false;
  for (int i = 0; i < c->ninputs; i++)
    if (c->inputs[i].dtype != TF_FLOAT32) return snprintf(why, whylen, "input %d is not float32", i), false;
  r->x = from_fixture(&c->inputs[0]);
  r->target = from_fixture(&c->inputs[1]);
  for (int i = 0; i < NPARAMS; i++) {
    r->params[i] = from_fixture(&c->inputs[2 + i]);
    if (!r->params[i] || tg_requires_grad(r->params[i], true) != TG_OK)
      return snprintf(why, whylen, "param %d: %s", i, tg_last_error()), false;
  }
  if (!r->x || !r->target) return snprintf(why, whylen, "data: %s", tg_last_error()), false;
  char kind[16] = "";
  tf_param_str(c, "optim", kind, sizeof kind);
  double lr = param_or(c, "lr", 0.001), wd = param_or(c, "weight_decay", 0.0);
  if (strcmp(kind, "sgd") == 0)
    r->opt = tg_optim_sgd(r->params, NPARAMS, lr, param_or(c, "momentum", 0.0), wd, param_or(c, "nesterov", 0) != 0,
                          false);
  else if (strcmp(kind, "adam") == 0)
    r->opt = tg_optim_adam(r->params, NPARAMS, lr, param_or(c, "b1", 0.9), param_or(c, "b2", 0.999),
                           param_or(c, "eps", 1e-8));
  else if (strcmp(kind, "adamw") == 0)
    r->opt = tg_optim_adamw(r->params, NPARAMS, lr, param_or(c, "b1", 0.9), param_or(c, "b2", 0.999),
                            param_or(c, "eps", 1e-8), wd);
  else if (strcmp(kind, "lamb") == 0)
    r->opt = tg_optim_lamb(r->params, NPARAMS, lr, param_or(c, "b1", 0.9), param_or(c, "b2", 0.999),
                           param_or(c, "eps", 1e-6), wd);
  else return snprintf(why, whylen, "unknown optimizer '%s'", kind), false;
  if (!r->opt) return snprintf(why, whylen, "optimizer: %s", tg_last_error()), false;
  return true;
}

/* one training step: zero_grad, loss, backward, optimizer step */
static bool run_step(optim_run *r, char *why, size_t whylen) {
  tg_scope s = tg_scope_begin();
  tg_optim_zero_grad(r->opt);
  tg_tensor *h = tg_relu(tg_add(tg_matmul(r->x, r->params[0]), r->params[1]));
  tg_tensor *out = tg_add(tg_matmul(h, r->params[2]), r->params[3]);
  tg_tensor *loss = tg_mean(tg_square(tg_sub(out, r->target)), NULL, 0, false);
  bool ok = loss && tg_backward(loss) == TG_OK;
  if (!ok) snprintf(why, whylen, "backward: %s", tg_last_error());
  else if (tg_optim_step(r->opt) != TG_OK) ok = false, snprintf(why, whylen, "step: %s", tg_last_error());
  tg_scope_end(s);
  return ok;
}

static bool params_match(optim_run *r, const tf_case *c, char *why, size_t whylen) {
  for (int p = 0; p < NPARAMS; p++) {
    const tf_tensor *want = &c->outputs[p];
    if (tg_numel(r->params[p]) != want->numel || want->dtype != TF_FLOAT32)
      return snprintf(why, whylen, "param %d: wrong size or dtype", p), false;
    float *got = malloc((size_t)want->nbytes);
    if (!got) return snprintf(why, whylen, "out of memory"), false;
    bool ok = tg_to_host(r->params[p], got, want->nbytes) == TG_OK;
    if (!ok) snprintf(why, whylen, "param %d: %s", p, tg_last_error());
    for (int64_t i = 0; ok && i < want->numel; i++) {
      double e = tf_get_double(want->dtype, want->data, i), g = got[i];
      if (!(fabs(g - e) <= c->atol + c->rtol * fabs(e))) {
        snprintf(why, whylen, "param %d element %" PRId64 ": got %.9g, expected %.9g (atol %g, rtol %g)", p, i, g, e,
                 c->atol, c->rtol);
        ok = false;
      }
    }
    free(got);
    if (!ok) return false;
  }
  return true;
}

void suite_optim_parity(void);
void suite_optim_parity(void) {
  char path[1200], err[256];
  tf_file f;
  const char *only = getenv("TG_OPTIM_ONLY");
  snprintf(path, sizeof path, "%s/optim_mlp.tgf", tf_dir());
  bool loaded = tf_load(path, &f, err, sizeof err);
  CHECK_MSG(loaded, "%s: %s", path, err);
  if (!loaded) return;
  size_t live_before = tg_live_tensors(), passed = 0, failed = 0, runs = 0;
  optim_run r;
  memset(&r, 0, sizeof r);
  bool broken = true; /* the current run failed: skip its remaining steps (they would all fail) */
  bool was_training = tg_set_training(true); /* an optimizer step needs training mode (tinygrad's TRAINING=1) */
  for (size_t i = 0; i < f.ncases; i++) {
    const tf_case *c = &f.cases[i];
    int64_t step = 0;
    tf_param_int(c, "step", &step);
    if (only && *only && !strstr(c->name, only)) continue;
    char why[1024] = "";
    bool ok;
    if (step == 1) {
      run_free(&r);
      runs++;
      broken = false;
      ok = run_start(&r, c, why, sizeof why);
      if (!ok) broken = true;
    } else {
      ok = !broken;
      if (!ok) snprintf(why, sizeof why, "an earlier step of this run failed");
    }
    double lr2;
    if (ok && step == LR2_STEP && tf_param_double(c, "lr2", &lr2) && tg_optim_set_lr(r.opt, lr2) != TG_OK) {
      snprintf(why, sizeof why, "set_lr: %s", tg_last_error());
      ok = false;
    }
    if (ok) ok = run_step(&r, why, sizeof why) && params_match(&r, c, why, sizeof why);
    if (ok) {
      passed++;
      tg_test_passed++;
    } else {
      failed++;
      tg_test_failed++;
      if (!broken) fprintf(stderr, "  FAIL optim_parity %s [%s]: %s\n", c->name, c->params, why);
      broken = true;
    }
  }
  run_free(&r);
  tg_set_training(was_training);
  tf_free(&f);
  CHECK_EQ_INT(tg_live_tensors(), live_before);
  printf("optim_parity: %zu optimizer runs, %zu steps matched, %zu failed\n", runs, passed, failed);
}
