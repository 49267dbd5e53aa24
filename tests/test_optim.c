/* test_optim.c — the optimizers (src/nn/optim.c): each optimizer's parameters and state after several steps against
 * the same formulas computed in plain C (tinygrad's nn/optim.py, float32), and against tinygrad's own numbers for
 * three steps; the learning rate changed between steps (set, and assigned lazily); weight decay; buffers realized with
 * the step; groups; bad input; kernels per step (no worse than tinygrad, incl. a 784-128-10 MLP + Adam: 30); and no
 * growth of live handles, nodes or RSS over many steps. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "nn/optim.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"
#include "test.h"

/* ------------------------------------------------------------------------------------------ the C reference */

typedef enum { REF_LARS, REF_LAMB } RefKind;

typedef struct RefCfg {
  const char *name;
  RefKind kind;
  double lr, momentum, wd, tcoef, b1, b2, eps;
  bool nesterov, classic, adam;
} RefCfg;

#define NPARAM 2
static const int64_t param_numel[NPARAM] = {12, 5};

typedef struct RefState {
  float t[NPARAM][12], b[NPARAM][12], m[NPARAM][12], v[NPARAM][12];
  float b1_t, b2_t;
} RefState;

static float norm_f(const float *x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
  return sqrtf(s);
}

/* One step of tinygrad's formulas in float32, constants rounded to float32 as a weak Python float is. */
static void ref_step(const RefCfg *c, RefState *s, float g_in[NPARAM][12], float lr) {
  if (c->kind == REF_LAMB) {
    s->b1_t *= (float)c->b1;
    s->b2_t *= (float)c->b2;
  }
  for (int p = 0; p < NPARAM; p++) {
    int64_t n = param_numel[p];
    float *t = s->t[p], up[12], g[12];
    memcpy(g, g_in[p], sizeof g);
    if (c->kind == REF_LAMB) {
      for (int64_t i = 0; i < n; i++) {
        s->m[p][i] = (float)c->b1 * s->m[p][i] + (float)(1.0 - c->b1) * g[i];
        s->v[p][i] = (float)c->b2 * s->v[p][i] + (float)(1.0 - c->b2) * (g[i] * g[i]);
        float m_hat = s->m[p][i] / (1.0f - s->b1_t), v_hat = s->v[p][i] / (1.0f - s->b2_t);
        up[i] = m_hat / (sqrtf(v_hat) + (float)c->eps) + (float)c->wd * t[i];
      }
      float r = 1.0f;
      if (!c->adam) {
        float r1 = norm_f(t, n), r2 = norm_f(up, n);
        r = r1 > 0 ? (r2 > 0 ? r1 / r2 : 1.0f) : 1.0f;
      }
      for (int64_t i = 0; i < n; i++) t[i] = t[i] - lr * r * up[i];
      continue;
    }
    float r = 1.0f;
    if (c->tcoef != 0) {
      float r1 = norm_f(t, n), r2 = norm_f(g, n);
      r = r1 > 0 ? (r2 > 0 ? (float)c->tcoef * r1 / (r2 + (float)c->wd * r1) : 1.0f) : 1.0f;
    }
    for (int64_t i = 0; i < n; i++) {
      float gi = g[i];
      if (c->wd > 0) gi = gi + (float)c->wd * t[i];
      if (c->classic) gi = gi * r * lr;
      if (c->momentum != 0) {
        s->b[p][i] = (float)c->momentum * s->b[p][i] + gi;
        gi = c->nesterov ? gi + (float)c->momentum * s->b[p][i] : s->b[p][i];
      }
      if (!c->classic) gi = gi * r * lr;
      up[i] = gi;
    }
    for (int64_t i = 0; i < n; i++) t[i] = t[i] - up[i];
  }
}

/* the deterministic data of every test: initial params (k = 100, 200) and the gradient of step k */
static void fill_wave(float *out, int64_t n, int k) {
  for (int64_t j = 0; j < n; j++) out[j] = (float)sin(1.3 * (double)j + 0.7 * k);
}

static tg_optim *make_optim(const RefCfg *c, tg_tensor *const *params, size_t n) {
  if (c->kind == REF_LAMB) {
    if (!c->adam) return tg_optim_lamb(params, n, c->lr, c->b1, c->b2, c->eps, c->wd);
    if (c->wd != 0) return tg_optim_adamw(params, n, c->lr, c->b1, c->b2, c->eps, c->wd);
    return tg_optim_adam(params, n, c->lr, c->b1, c->b2, c->eps);
  }
  if (c->tcoef != 0) return tg_optim_lars(params, n, c->lr, c->momentum, c->wd, c->nesterov, c->classic, c->tcoef);
  return tg_optim_sgd(params, n, c->lr, c->momentum, c->wd, c->nesterov, c->classic);
}

/* the params of the tests: (3, 4) and (5), requiring grad, realized */
static void make_params(tg_tensor *params[NPARAM], RefState *ref) {
  memset(ref, 0, sizeof *ref);
  ref->b1_t = ref->b2_t = 1.0f;
  fill_wave(ref->t[0], 12, 100);
  fill_wave(ref->t[1], 5, 200);
  params[0] = tg_from_floats(ref->t[0], TG_SHAPE(3, 4));
  params[1] = tg_from_floats(ref->t[1], TG_SHAPE(5));
  for (int p = 0; p < NPARAM; p++) CHECK(tg_requires_grad(params[p], true) == TG_OK);
}

/* sum(p[0]*g0) + sum(p[1]*g1) */
static tg_tensor *dot_loss(tg_tensor *const *p, const tg_tensor *g0, const tg_tensor *g1) {
  return tg_add(tg_sum(tg_mul(p[0], g0), NULL, 0, false), tg_sum(tg_mul(p[1], g1), NULL, 0, false));
}

/* backward of sum(p0*G0) + sum(p1*G1): each grad is exactly G (the gradients of step k) */
static bool set_grads(tg_tensor *params[NPARAM], float g[NPARAM][12], int k) {
  tg_scope s = tg_scope_begin();
  fill_wave(g[0], 12, k);
  fill_wave(g[1], 5, k + 10);
  tg_tensor *g0 = tg_from_floats(g[0], TG_SHAPE(3, 4)), *g1 = tg_from_floats(g[1], TG_SHAPE(5));
  tg_tensor *loss = dot_loss(params, g0, g1);
  tg_status st = tg_backward(loss);
  tg_scope_end(s);
  return st == TG_OK;
}

/* every element of params against the reference; returns the largest error */
static double compare_params(tg_tensor *params[NPARAM], const RefState *ref, const char *what, int step) {
  double worst = 0;
  for (int p = 0; p < NPARAM; p++) {
    float got[12];
    if (tg_to_host(params[p], got, (size_t)param_numel[p] * sizeof(float)) != TG_OK) {
      CHECK_MSG(false, "%s step %d: copy-out failed: %s", what, step, tg_last_error());
      return INFINITY;
    }
    for (int64_t i = 0; i < param_numel[p]; i++) {
      double err = fabs((double)got[i] - (double)ref->t[p][i]);
      if (err > worst) worst = err;
      CHECK_MSG(err <= 2e-6 + 2e-6 * fabs(ref->t[p][i]), "%s step %d param %d[%lld]: %.9g, reference %.9g", what,
                step, p, (long long)i, got[i], ref->t[p][i]);
    }
  }
  return worst;
}

static const RefCfg configs[] = {
    {"sgd", REF_LARS, 0.1, 0, 0, 0, 0, 0, 0, false, false, false},
    {"sgd_mom", REF_LARS, 0.1, 0.9, 0, 0, 0, 0, 0, false, false, false},
    {"sgd_nesterov_wd", REF_LARS, 0.1, 0.9, 0.1, 0, 0, 0, 0, true, false, false},
    {"sgd_classic", REF_LARS, 0.1, 0.9, 0.1, 0, 0, 0, 0, false, true, false},
    {"sgd_wd_only", REF_LARS, 0.05, 0, 0.3, 0, 0, 0, 0, false, false, false},
    {"sgd_classic_nesterov", REF_LARS, 0.05, 0.5, 0.02, 0, 0, 0, 0, true, true, false},
    {"lars", REF_LARS, 0.1, 0.9, 1e-4, 0.001, 0, 0, 0, false, true, false},
    {"lars_popular_nesterov", REF_LARS, 0.2, 0.8, 0.01, 0.02, 0, 0, 0, true, false, false},
    {"adam", REF_LAMB, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, false, false, true},
    {"adam_odd_betas", REF_LAMB, 0.05, 0, 0, 0, 0.5, 0.8, 1e-3, false, false, true},
    {"adamw", REF_LAMB, 0.1, 0, 0.1, 0, 0.9, 0.999, 1e-8, false, false, true},
    {"lamb", REF_LAMB, 0.1, 0, 0.01, 0, 0.9, 0.999, 1e-6, false, false, false},
    {"lamb_no_wd", REF_LAMB, 0.3, 0, 0, 0, 0.8, 0.99, 1e-6, false, false, false},
};

/* tinygrad's params (w1 then w2, flattened) after three steps of the same data, from its nn/optim.py on DEV=CPU:
 *   w1, w2 = sin(1.3j + 0.7*100) (3,4), sin(1.3j + 0.7*200) (5); step k: loss = (w1*G(k)).sum() + (w2*G(k+10)).sum(),
 *   backward, opt.step(), with the optimizers of the first rows of `configs` */
static const struct {
  const char *name;
  float want[17];
} tinygrad_three_steps[] = {
    {"sgd", {0.610923946f, 0.587231278f, -0.296756625f, -0.745995283f, -0.10234911f, 0.691238761f, 0.47216022f,
             -0.438634127f, -0.706828535f, 0.0604825728f, 0.739186525f, 0.334980488f, 0.730264246f, -0.0326448977f,
             -0.747729242f, -0.367388487f, 0.551177263f}},
    {"sgd_mom", {0.552944362f, 0.340626031f, -0.370710254f, -0.538955092f, 0.0823705271f, 0.58302319f, 0.229545459f,
                 -0.46021679f, -0.47576049f, 0.205686122f, 0.585802078f, 0.107716575f, 0.528984368f, -0.224006951f,
                 -0.648827612f, -0.12311434f, 0.582961738f}},
    {"sgd_nesterov_wd", {0.353178412f, 0.106754757f, -0.296064913f, -0.265148729f, 0.154210955f, 0.347651273f,
                         0.0317816511f, -0.330648124f, -0.208677605f, 0.219006091f, 0.325845391f, -0.0446795858f,
                         0.256879598f, -0.293646604f, -0.413979769f, 0.0721683651f, 0.45258975f}},
    {"sgd_classic", {0.510544002f, 0.299730659f, -0.350188822f, -0.487080783f, 0.089601703f, 0.53501749f,
                     0.196631387f, -0.42982018f, -0.426584184f, 0.201598614f, 0.534439027f, 0.0843249857f,
                     0.477940619f, -0.224158496f, -0.597864985f, -0.0956978649f, 0.546666801f}},
    {"lars", {0.773669422f, 0.81677717f, -0.336695611f, -0.996908426f, -0.196648091f, 0.891702235f, 0.67370671f,
              -0.531270683f, -0.957935274f, 0.0187775753f, 0.967981219f, 0.499090105f, 0.979779422f, 0.0713017508f,
              -0.941633165f, -0.575073302f, 0.633970261f}},
    {"adam", {0.614537358f, 0.524405062f, -0.44585228f, -0.698587298f, 0.0407279246f, 0.609458208f, 0.389123172f,
              -0.558733582f, -0.660008311f, 0.217561826f, 0.67509371f, 0.227248445f, 0.681707323f, -0.171859592f,
              -0.662553191f, -0.288685113f, 0.677315056f}},
    {"adamw", {0.592296183f, 0.503119826f, -0.433440268f, -0.671947718f, 0.0436797403f, 0.585848033f, 0.37207824f,
               -0.541083694f, -0.634532869f, 0.214206845f, 0.649279177f, 0.215372339f, 0.655573845f, -0.171077698f,
               -0.63744086f, -0.274571627f, 0.656501949f}},
    {"lamb", {0.648782015f, 0.592437625f, -0.416588366f, -0.767537057f, -0.01630795f, 0.67497319f, 0.455724716f,
              -0.547568738f, -0.728966594f, 0.168745145f, 0.742860854f, 0.291372031f, 0.748625338f, -0.114444546f,
              -0.725663781f, -0.354053199f, 0.659427226f}},
};

/* kernels tinygrad runs for one step of these two params (steps 2 and 3, DEV=CPU; the same script) */
static const struct {
  const char *name;
  int kernels;
} tinygrad_step_kernels[] = {{"sgd", 2},         {"sgd_mom", 4}, {"sgd_nesterov_wd", 6}, {"sgd_classic", 6},
                             {"lars", 6},        {"adam", 10},   {"adamw", 10},          {"lamb", 12}};

static int count_kernels(tg_tensor *const *ts, size_t n) {
  UOpScope sc = uop_scope_begin();
  UOp **roots = tg_calloc(n ? n : 1, sizeof *roots);
  for (size_t i = 0; i < n; i++) roots[i] = ts[i]->uop;
  UOp *lin = sched_kernels(uop_sink(roots, n));
  int k = lin ? (int)lin->nsrc : -1;
  tg_free(roots);
  uop_scope_end(sc);
  return k;
}

/* one step through the internal schedule_step, counting its kernels before realizing them */
static int step_counting(tg_optim *o, tg_tensor *const *also, size_t nalso) {
  tg_tensor **list;
  size_t n;
  if (optim_schedule_step(o, also, nalso, &list, &n) != TG_OK) return -1;
  int k = count_kernels(list, n);
  if (tg_realize_many(list, n) != TG_OK) k = -1;
  tg_free(list);
  return k;
}

static void test_update_math(void) {
  for (size_t c = 0; c < TG_ARRAY_LEN(configs); c++) {
    const RefCfg *cfg = &configs[c];
    tg_scope s = tg_scope_begin();
    tg_tensor *params[NPARAM];
    RefState ref;
    make_params(params, &ref);
    tg_optim *o = make_optim(cfg, params, NPARAM);
    CHECK_MSG(o != NULL, "%s: %s", cfg->name, tg_last_error());
    if (!o) {
      tg_scope_end(s);
      continue;
    }
    CHECK_EQ_INT(tg_optim_nparams(o), NPARAM);
    double worst = 0;
    for (int step = 0; step < 6; step++) {
      float g[NPARAM][12];
      tg_optim_zero_grad(o);
      CHECK_MSG(set_grads(params, g, step), "%s: backward: %s", cfg->name, tg_last_error());
      int kernels = step_counting(o, NULL, 0);
      CHECK_MSG(kernels > 0, "%s: step %d: %s", cfg->name, step, tg_last_error());
      ref_step(cfg, &ref, g, (float)cfg->lr);
      double w = compare_params(params, &ref, cfg->name, step);
      if (w > worst) worst = w;
      for (size_t t = 0; step >= 1 && t < TG_ARRAY_LEN(tinygrad_step_kernels); t++)
        if (strcmp(tinygrad_step_kernels[t].name, cfg->name) == 0)
          CHECK_MSG(kernels <= tinygrad_step_kernels[t].kernels, "%s: %d kernels per step, tinygrad %d", cfg->name,
                    kernels, tinygrad_step_kernels[t].kernels);
      if (step == 2)
        for (size_t t = 0; t < TG_ARRAY_LEN(tinygrad_three_steps); t++) {
          if (strcmp(tinygrad_three_steps[t].name, cfg->name) != 0) continue;
          float got[17];
          CHECK(tg_to_host(params[0], got, 12 * sizeof(float)) == TG_OK);
          CHECK(tg_to_host(params[1], got + 12, 5 * sizeof(float)) == TG_OK);
          for (int i = 0; i < 17; i++)
            CHECK_MSG(fabsf(got[i] - tinygrad_three_steps[t].want[i]) <= 3e-6f, "%s vs tinygrad [%d]: %.9g != %.9g",
                      cfg->name, i, got[i], tinygrad_three_steps[t].want[i]);
        }
    }
    /* the state matches too */
    for (size_t i = 0; i < tg_optim_state_count(o); i++) {
      char name[32];
      tg_tensor *st = tg_optim_state(o, i, name, sizeof name);
      CHECK(st != NULL);
      int p = -1;
      const float *want = NULL;
      if (name[0] == 'm' || name[0] == 'v' || name[0] == 'b') p = name[strlen(name) - 1] - '0';
      if (strcmp(name, "b1_t") == 0) want = &ref.b1_t;
      else if (strcmp(name, "b2_t") == 0) want = &ref.b2_t;
      else if (name[0] == 'm' && name[1] == '.') want = ref.m[p];
      else if (name[0] == 'v' && name[1] == '.') want = ref.v[p];
      else if (name[0] == 'b' && name[1] == '.') want = ref.b[p];
      if (!want) continue;
      float got[12];
      int64_t n = tg_numel(st);
      CHECK(tg_to_host(st, got, (size_t)n * sizeof(float)) == TG_OK);
      for (int64_t j = 0; j < n; j++)
        CHECK_MSG(fabsf(got[j] - want[j]) <= 2e-6f + 2e-6f * fabsf(want[j]), "%s state %s[%lld]: %.9g != %.9g",
                  cfg->name, name, (long long)j, got[j], want[j]);
    }
    if (tg_debug_level() >= 1) printf("  optim %-22s 6 steps, worst error %.3g\n", cfg->name, worst);
    tg_optim_free(o);
    tg_scope_end(s);
  }
}

/* the state's names follow tinygrad's attributes */
static void test_state_names(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref;
  make_params(params, &ref);
  tg_optim *adam = tg_optim_adam(params, NPARAM, 0.001, 0.9, 0.999, 1e-8);
  tg_optim *sgd = tg_optim_sgd(params, NPARAM, 0.001, 0.9, 0, false, false);
  tg_optim *plain = tg_optim_sgd(params, NPARAM, 0.001, 0, 0, false, false);
  CHECK(adam && sgd && plain);
  if (adam && sgd && plain) {
    static const char *adam_names[] = {"lr", "b1_t", "b2_t", "m.0", "m.1", "v.0", "v.1"};
    CHECK_EQ_INT(tg_optim_state_count(adam), 7);
    for (size_t i = 0; i < 7; i++) {
      char name[16];
      CHECK(tg_optim_state(adam, i, name, sizeof name) != NULL);
      CHECK_EQ_STR(name, adam_names[i]);
    }
    CHECK(tg_optim_state(adam, 7, NULL, 0) == NULL);
    CHECK_EQ_INT(tg_optim_state_count(sgd), 3);
    char name[16];
    CHECK(tg_optim_state(sgd, 2, name, sizeof name) != NULL);
    CHECK_EQ_STR(name, "b.1");
    CHECK_EQ_INT(tg_optim_state_count(plain), 1);
    int64_t m_shape = tg_numel(tg_optim_state(adam, 3, NULL, 0));
    CHECK_EQ_INT(m_shape, 12);
    CHECK(tg_get_dtype(tg_optim_state(adam, 0, NULL, 0)) == TG_FLOAT32);
    CHECK_EQ_INT(tg_numel(tg_optim_state(adam, 0, NULL, 0)), 1);
    tg_optim *members[2] = {adam, sgd};
    tg_optim *group = tg_optim_group(members, 2);
    CHECK(group != NULL);
    CHECK_EQ_INT(tg_optim_state_count(group), 10);
    CHECK(tg_optim_state(group, 8, name, sizeof name) != NULL);
    CHECK_EQ_STR(name, "1.b.0");
    CHECK_EQ_INT(tg_optim_nparams(group), 4);
    tg_optim_free(group); /* frees adam and sgd */
  } else {
    tg_optim_free(adam);
    tg_optim_free(sgd);
  }
  tg_optim_free(plain);
  tg_scope_end(s);
}

/* the learning rate changes between steps: set from C, and assigned as a lazy tensor realized with the step; changing
 * it adds no schedule (the kernels read it) */
static void test_lr_tensor(void) {
  const RefCfg cfg = {"adam", REF_LAMB, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, false, false, true};
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref;
  make_params(params, &ref);
  tg_optim *o = make_optim(&cfg, params, NPARAM);
  CHECK(o != NULL);
  if (!o) {
    tg_scope_end(s);
    return;
  }
  double lr_now;
  CHECK(tg_optim_get_lr(o, &lr_now) == TG_OK);
  CHECK_NEAR(lr_now, 0.1, 1e-8);
  float lr = (float)0.1;
  size_t cache_after_first_change = 0;
  for (int step = 0; step < 9; step++) {
    if (step == 3) {
      CHECK(tg_optim_set_lr(o, 0.01) == TG_OK);
      lr = (float)0.01;
      CHECK(tg_optim_get_lr(o, &lr_now) == TG_OK);
      CHECK_NEAR(lr_now, 0.01, 1e-9);
    }
    if (step == 5) {
      /* lr := lr * 4, lazily: realized in the next step's schedule, before the updates read it */
      tg_tensor *lrt = tg_optim_lr(o);
      tg_scope inner = tg_scope_begin();
      CHECK(tg_assign(lrt, tg_mul(lrt, tg_const_float(4.0))) == TG_OK);
      tg_scope_end(inner);
      lr = lr * 4.0f;
    }
    if (step == 6) cache_after_first_change = sched_cache_size();
    if (step == 7) {
      CHECK(tg_optim_set_lr(o, 0.2) == TG_OK);
      lr = (float)0.2;
    }
    float g[NPARAM][12];
    tg_optim_zero_grad(o);
    CHECK(set_grads(params, g, step));
    CHECK_MSG(tg_optim_step(o) == TG_OK, "step %d: %s", step, tg_last_error());
    ref_step(&cfg, &ref, g, lr);
    compare_params(params, &ref, "lr schedule", step);
  }
  if (getenv("SCACHE") == NULL || atoi(getenv("SCACHE")) != 0)
    CHECK_MSG(sched_cache_size() == cache_after_first_change, "a new learning rate made new schedules: %zu -> %zu",
              cache_after_first_change, sched_cache_size());
  CHECK(tg_optim_get_lr(o, &lr_now) == TG_OK);
  CHECK_NEAR(lr_now, 0.2, 1e-8);
  /* an lr of 0 leaves the params where they are (the state still advances) */
  CHECK(tg_optim_set_lr(o, 0.0) == TG_OK);
  float before[12], after[12];
  CHECK(tg_to_host(params[0], before, sizeof before) == TG_OK);
  float g[NPARAM][12];
  tg_optim_zero_grad(o);
  CHECK(set_grads(params, g, 42));
  CHECK(tg_optim_step(o) == TG_OK);
  CHECK(tg_to_host(params[0], after, sizeof after) == TG_OK);
  CHECK(memcmp(before, after, sizeof before) == 0);
  tg_optim_free(o);
  tg_scope_end(s);
}

/* gradients are not cleared by a step: without zero_grad a second backward accumulates, and the step uses the sum */
static void test_grad_accumulation(void) {
  const RefCfg cfg = {"sgd", REF_LARS, 0.5, 0, 0, 0, 0, 0, 0, false, false, false};
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref;
  make_params(params, &ref);
  tg_optim *o = make_optim(&cfg, params, NPARAM);
  CHECK(o != NULL);
  float g1[NPARAM][12], g2[NPARAM][12];
  CHECK(set_grads(params, g1, 1));
  CHECK(set_grads(params, g2, 2));
  CHECK(tg_optim_step(o) == TG_OK);
  for (int p = 0; p < NPARAM; p++)
    for (int i = 0; i < 12; i++) g1[p][i] += g2[p][i];
  ref_step(&cfg, &ref, g1, 0.5f);
  compare_params(params, &ref, "accumulated grads", 0);
  tg_optim_zero_grad(o);
  CHECK(tg_grad(params[0]) == NULL && tg_grad(params[1]) == NULL);
  tg_optim_free(o);
  tg_scope_end(s);
}

/* tensors that do not require grad are buffers: realized with the step (their pending assigns run), never updated;
 * step_with realizes the loss in the same schedule */
static void test_buffers_and_step_with(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref;
  make_params(params, &ref);
  tg_tensor *running = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
  CHECK(tg_realize(running) == TG_OK);
  tg_tensor *list[3] = {params[0], running, params[1]};
  tg_optim *o = tg_optim_sgd(list, 3, 0.1, 0, 0, false, false);
  CHECK(o != NULL);
  if (!o) {
    tg_scope_end(s);
    return;
  }
  CHECK_EQ_INT(tg_optim_nparams(o), 2);
  CHECK(tg_assign(running, tg_add(running, tg_const_float(1.5))) == TG_OK); /* pending until the step */
  float g[NPARAM][12];
  fill_wave(g[0], 12, 7);
  fill_wave(g[1], 5, 17);
  tg_tensor *g0 = tg_from_floats(g[0], TG_SHAPE(3, 4)), *g1 = tg_from_floats(g[1], TG_SHAPE(5));
  tg_tensor *loss = dot_loss(params, g0, g1);
  CHECK(tg_backward(loss) == TG_OK);
  double want_loss = 0;
  for (int i = 0; i < 12; i++) want_loss += (double)ref.t[0][i] * g[0][i];
  for (int i = 0; i < 5; i++) want_loss += (double)ref.t[1][i] * g[1][i];
  CHECK(tg_optim_step_with(o, &loss, 1) == TG_OK);
  double got_loss;
  CHECK(tg_item_double(loss, &got_loss) == TG_OK); /* the loss of the params before the update */
  CHECK_NEAR(got_loss, want_loss, 1e-5);
  const RefCfg cfg = {"sgd", REF_LARS, 0.1, 0, 0, 0, 0, 0, 0, false, false, false};
  ref_step(&cfg, &ref, g, 0.1f);
  compare_params(params, &ref, "with a buffer", 0);
  float r[4];
  CHECK(tg_to_host(running, r, sizeof r) == TG_OK);
  CHECK(r[0] == 1.5f && r[3] == 1.5f);
  CHECK(tg_grad(running) == NULL);
  tg_optim_free(o);
  tg_scope_end(s);
}

/* a group steps every optimizer in one schedule */
static void test_group(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref_a, ref_b;
  make_params(params, &ref_a);
  ref_b = ref_a;
  const RefCfg adam = {"adam", REF_LAMB, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, false, false, true};
  const RefCfg sgd = {"sgd_mom", REF_LARS, 0.1, 0.9, 0, 0, 0, 0, 0, false, false, false};
  tg_optim *members[2] = {make_optim(&adam, &params[0], 1), make_optim(&sgd, &params[1], 1)};
  CHECK(members[0] && members[1]);
  tg_optim *group = tg_optim_group(members, 2);
  CHECK(group != NULL);
  if (!group) {
    tg_optim_free(members[0]);
    tg_optim_free(members[1]);
    tg_scope_end(s);
    return;
  }
  CHECK(tg_optim_lr(group) == NULL); /* one lr per member */
  for (int step = 0; step < 3; step++) {
    float g[NPARAM][12];
    tg_optim_zero_grad(group);
    CHECK(tg_grad(params[0]) == NULL);
    CHECK(set_grads(params, g, step));
    CHECK(tg_optim_step(group) == TG_OK);
    ref_step(&adam, &ref_a, g, 0.1f);
    ref_step(&sgd, &ref_b, g, 0.1f);
    memcpy(ref_a.t[1], ref_b.t[1], sizeof ref_a.t[1]);
    compare_params(params, &ref_a, "group", step);
    memcpy(ref_b.t[0], ref_a.t[0], sizeof ref_b.t[0]);
  }
  CHECK(tg_optim_set_lr(group, 0.05) == TG_OK);
  double lr;
  CHECK(tg_optim_get_lr(members[1], &lr) == TG_OK);
  CHECK_NEAR(lr, 0.05, 1e-8);
  tg_optim_free(group);
  tg_scope_end(s);
}

/* x rounded to the nearest float16 (ties to even; subnormal spacing 2^-24) */
static float round_to_half(float x) {
  if (x == 0 || !isfinite(x)) return x;
  int e;
  frexpf(x, &e);
  int q = e - 11 < -24 ? -24 : e - 11;
  return ldexpf(nearbyintf(ldexpf(x, -q)), q);
}

/* half-precision params (state stays float32, the update is cast to the param's dtype) and a 0-d param */
static void test_dtypes_and_scalars(void) {
  const RefCfg cfgs[2] = {{"adam", REF_LAMB, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, false, false, true},
                          {"sgd_mom", REF_LARS, 0.1, 0.9, 0.1, 0, 0, 0, 0, true, false, false}};
  for (int c = 0; c < 2; c++) {
    tg_scope s = tg_scope_begin();
    tg_tensor *params[NPARAM];
    RefState ref;
    make_params(params, &ref);
    tg_tensor *half[NPARAM];
    for (int p = 0; p < NPARAM; p++) {
      half[p] = tg_contiguous(tg_cast(params[p], TG_FLOAT16));
      CHECK(tg_realize(half[p]) == TG_OK);
      CHECK(tg_requires_grad(half[p], true) == TG_OK);
      for (int i = 0; i < param_numel[p]; i++) ref.t[p][i] = round_to_half(ref.t[p][i]);
    }
    tg_optim *o = make_optim(&cfgs[c], half, NPARAM);
    CHECK(o != NULL);
    for (int step = 0; step < 3 && o; step++) {
      float g[NPARAM][12];
      tg_optim_zero_grad(o);
      fill_wave(g[0], 12, step);
      fill_wave(g[1], 5, step + 10);
      tg_scope inner = tg_scope_begin();
      tg_tensor *g0 = tg_cast(tg_from_floats(g[0], TG_SHAPE(3, 4)), TG_FLOAT16);
      tg_tensor *g1 = tg_cast(tg_from_floats(g[1], TG_SHAPE(5)), TG_FLOAT16);
      tg_tensor *loss = dot_loss(half, g0, g1);
      CHECK(tg_backward(loss) == TG_OK);
      tg_scope_end(inner);
      for (int p = 0; p < NPARAM; p++)
        for (int i = 0; i < param_numel[p]; i++) g[p][i] = round_to_half(g[p][i]);
      CHECK_MSG(tg_optim_step(o) == TG_OK, "%s half: %s", cfgs[c].name, tg_last_error());
      ref_step(&cfgs[c], &ref, g, (float)cfgs[c].lr);
      for (int p = 0; p < NPARAM; p++) {
        CHECK(tg_get_dtype(half[p]) == TG_FLOAT16);
        float got[12];
        tg_tensor *f = tg_cast(half[p], TG_FLOAT32);
        CHECK(tg_to_host(f, got, (size_t)param_numel[p] * sizeof(float)) == TG_OK);
        for (int i = 0; i < param_numel[p]; i++) /* half rounding of each step's result */
          CHECK_MSG(fabsf(got[i] - ref.t[p][i]) <= 4e-3f, "%s half step %d param %d[%d]: %g != %g", cfgs[c].name,
                    step, p, i, got[i], ref.t[p][i]);
      }
    }
    char name[16];
    for (size_t i = 0; o && i < tg_optim_state_count(o); i++)
      CHECK(tg_get_dtype(tg_optim_state(o, i, name, sizeof name)) == TG_FLOAT32);
    tg_optim_free(o);
    tg_scope_end(s);
  }
  /* OPTIM_DTYPE picks the state dtype (tinygrad's env knob); an unknown name is an error */
  {
    tg_scope s = tg_scope_begin();
    tg_tensor *params[NPARAM];
    RefState ref;
    make_params(params, &ref);
    const RefCfg adam = {"adam", REF_LAMB, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, false, false, true};
    test_setenv("OPTIM_DTYPE", "float64");
    tg_optim *o = make_optim(&adam, params, NPARAM);
    test_setenv("OPTIM_DTYPE", "int32");
    CHECK(make_optim(&adam, params, NPARAM) == NULL);
    CHECK(strstr(tg_last_error(), "OPTIM_DTYPE") != NULL);
    test_unsetenv("OPTIM_DTYPE");
    CHECK(o != NULL);
    for (int step = 0; step < 3 && o; step++) {
      float g[NPARAM][12];
      tg_optim_zero_grad(o);
      CHECK(set_grads(params, g, step));
      CHECK_MSG(tg_optim_step(o) == TG_OK, "float64 state: %s", tg_last_error());
      ref_step(&adam, &ref, g, 0.1f);
      compare_params(params, &ref, "float64 state", step);
    }
    CHECK(o && tg_get_dtype(tg_optim_state(o, 3, NULL, 0)) == TG_FLOAT64);           /* m.0 */
    CHECK(o && tg_get_dtype(tg_optim_state(o, 1, NULL, 0)) == TG_FLOAT32);           /* b1_t */
    CHECK(o && tg_get_dtype(params[0]) == TG_FLOAT32);
    tg_optim_free(o);
    tg_scope_end(s);
  }
  /* a 0-d param keeps its shape (tinygrad fails here: its (1,) lr makes the update (1,)) */
  tg_scope s = tg_scope_begin();
  const float two = 2.0f;
  tg_tensor *w = tg_from_floats(&two, NULL, 0);
  CHECK_MSG(tg_requires_grad(w, true) == TG_OK, "%s", tg_last_error());
  tg_optim *o = tg_optim_adam(&w, 1, 0.1, 0.9, 0.999, 1e-8);
  CHECK(o != NULL);
  for (int step = 0; step < 3 && o; step++) {
    tg_optim_zero_grad(o);
    CHECK(tg_backward(tg_mul(w, w)) == TG_OK);
    CHECK_MSG(tg_optim_step(o) == TG_OK, "0-d param: %s", tg_last_error());
  }
  CHECK_EQ_INT(tg_ndim(w), 0);
  double wv;
  CHECK(tg_item_double(w, &wv) == TG_OK);
  float want = 2.0f, m = 0, v = 0, b1t = 1, b2t = 1; /* tinygrad's Adam on w*w in float32 */
  for (int step = 0; step < 3; step++) {
    float g = want + want;
    b1t *= 0.9f;
    b2t *= 0.999f;
    m = 0.9f * m + (float)(1.0 - 0.9) * g;
    v = 0.999f * v + (float)(1.0 - 0.999) * (g * g);
    want = want - 0.1f * ((m / (1.0f - b1t)) / (sqrtf(v / (1.0f - b2t)) + 1e-8f));
  }
  CHECK_NEAR(wv, want, 2e-6);
  tg_optim_free(o);
  tg_scope_end(s);
}

/* bad input: an error with a message, nothing changed, no crash */
static void test_errors(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *params[NPARAM];
  RefState ref;
  make_params(params, &ref);
  tg_tensor *plain = tg_from_floats((const float[]){1, 2}, TG_SHAPE(2));
  tg_tensor *ints = tg_full_int(TG_SHAPE(3), 1, TG_INT32);
  CHECK(tg_optim_adam(params, NPARAM, -1.0, 0.9, 0.999, 1e-8) == NULL);
  CHECK(strstr(tg_last_error(), "learning rate") != NULL);
  CHECK(tg_optim_adam(params, NPARAM, NAN, 0.9, 0.999, 1e-8) == NULL);
  CHECK(tg_optim_sgd(params, NPARAM, 0.1, -0.5, 0, false, false) == NULL);
  CHECK(strstr(tg_last_error(), "momentum") != NULL);
  CHECK(tg_optim_adamw(params, NPARAM, 0.1, 0.9, 0.999, 1e-8, -0.1) == NULL);
  CHECK(strstr(tg_last_error(), "weight_decay") != NULL);
  CHECK(tg_optim_lamb(params, NPARAM, 0.1, 0.9, 0.999, INFINITY, 0) == NULL);
  CHECK(tg_optim_adam(NULL, 2, 0.1, 0.9, 0.999, 1e-8) == NULL);
  CHECK(tg_optim_adam(params, 0, 0.1, 0.9, 0.999, 1e-8) == NULL);
  CHECK(strstr(tg_last_error(), "at least one param") != NULL);
  CHECK(tg_optim_adam(&plain, 1, 0.1, 0.9, 0.999, 1e-8) == NULL); /* nothing requires grad */
  tg_tensor *with_null[2] = {params[0], NULL};
  CHECK(tg_optim_sgd(with_null, 2, 0.1, 0, 0, false, false) == NULL);
  CHECK(tg_optim_group(NULL, 0) == NULL);
  CHECK(tg_requires_grad(ints, true) != TG_OK); /* an int tensor cannot be a param in the first place */
  tg_tensor *with_ints[2] = {params[0], ints};  /* ... so here it is a buffer */
  tg_optim *o = tg_optim_sgd(with_ints, 2, 0.1, 0, 0, false, false);
  CHECK(o != NULL && tg_optim_nparams(o) == 1);
  tg_optim_free(o);
  /* a step needs training mode (tinygrad's TRAINING=1) */
  o = tg_optim_sgd(params, NPARAM, 0.1, 0, 0, false, false);
  CHECK(set_grads(params, (float[NPARAM][12]){{0}}, 3));
  bool was = tg_set_training(false);
  CHECK(tg_optim_step(o) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "tg_set_training") != NULL);
  tg_set_training(was);
  float same[12];
  CHECK(tg_to_host(params[0], same, sizeof same) == TG_OK);
  CHECK(memcmp(same, ref.t[0], sizeof same) == 0);
  tg_optim_zero_grad(o);
  tg_optim_free(o);
  /* a group with one optimizer lacking gradients changes nothing, not even the other optimizer's params */
  {
    tg_tensor *lone = tg_from_floats((const float[]){5, 6}, TG_SHAPE(2));
    CHECK(tg_requires_grad(lone, true) == TG_OK);
    tg_optim *members[2] = {tg_optim_sgd(params, NPARAM, 0.1, 0, 0, false, false), tg_optim_sgd(&lone, 1, 0.1, 0, 0,
                                                                                                 false, false)};
    tg_optim *group = tg_optim_group(members, 2);
    CHECK(group != NULL);
    CHECK(set_grads(params, (float[NPARAM][12]){{0}}, 4));
    CHECK(tg_optim_step(group) == TG_ERR_INVALID_ARGUMENT);
    float unchanged[12];
    CHECK(tg_to_host(params[0], unchanged, sizeof unchanged) == TG_OK);
    CHECK(memcmp(unchanged, ref.t[0], sizeof unchanged) == 0);
    tg_optim_zero_grad(group);
    tg_optim_free(group);
  }
  /* a step without gradients changes nothing */
  o = tg_optim_adam(params, NPARAM, 0.1, 0.9, 0.999, 1e-8);
  CHECK(o != NULL);
  CHECK(tg_optim_step(o) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "no gradient") != NULL);
  float got[12];
  CHECK(tg_to_host(params[0], got, sizeof got) == TG_OK);
  CHECK(memcmp(got, ref.t[0], sizeof got) == 0);
  char name[8];
  tg_tensor *b1_t = tg_optim_state(o, 1, name, sizeof name);
  double b1t;
  CHECK(b1_t && tg_item_double(b1_t, &b1t) == TG_OK && b1t == 1.0); /* the step counter did not advance */
  CHECK(tg_optim_set_lr(o, -0.5) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_optim_step(NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_optim_step_with(o, NULL, 3) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_optim_lr(NULL) == NULL);
  CHECK(tg_optim_get_lr(o, NULL) == TG_ERR_INVALID_ARGUMENT);
  tg_optim_zero_grad(NULL);
  tg_optim_free(NULL);
  CHECK_EQ_INT(tg_optim_nparams(NULL), 0);
  CHECK_EQ_INT(tg_optim_state_count(NULL), 0);
  tg_optim_free(o);
  tg_scope_end(s);
}

/* ------------------------------------------------------------------------------------------ an MLP trained */

typedef struct Mlp {
  tg_tensor *w1, *b1, *w2, *b2;
} Mlp;

/* Linear(in, out) weights uniform in +-1/sqrt(in) (tinygrad's default init's bound), realized, requiring grad */
static tg_tensor *make_weight(int64_t out, int64_t in, bool bias) {
  double bound = 1.0 / sqrt((double)in);
  tg_tensor *w = bias ? tg_uniform(TG_SHAPE(out), -bound, bound, TG_FLOAT32)
                      : tg_uniform(TG_SHAPE(out, in), -bound, bound, TG_FLOAT32);
  CHECK(tg_realize(w) == TG_OK);
  CHECK(tg_requires_grad(w, true) == TG_OK);
  return w;
}

static Mlp make_mlp(int64_t in, int64_t hidden, int64_t out) {
  Mlp m = {make_weight(hidden, in, false), make_weight(hidden, in, true), make_weight(out, hidden, false),
           make_weight(out, hidden, true)};
  return m;
}

/* tinygrad's x.linear(w.T, b) and sparse_categorical_crossentropy (label smoothing 0, no ignore index), op by op */
static tg_tensor *mlp_loss(const Mlp *m, const tg_tensor *x, const tg_tensor *y, int64_t classes) {
  tg_tensor *h = tg_relu(tg_add(tg_matmul(x, tg_transpose(m->w1, 0, 1)), m->b1));
  tg_tensor *logits = tg_add(tg_matmul(h, tg_transpose(m->w2, 0, 1)), m->b2);
  tg_tensor *log_probs = tg_log_softmax(logits, -1);
  /* Y.const_like(True, bool): a constant without storage (tg_full_like would make it a buffer: 2 more kernels) */
  tg_tensor *mask = tg_expand(tg_reshape(tg_const_bool(true), TG_SHAPE(1)), tg_shape(y), 1);
  tg_tensor *classes_row = tg_arange(0, (double)classes, 1, TG_VOID);
  tg_tensor *onehot = tg_mul(tg_eq(tg_unsqueeze(y, -1), classes_row), tg_unsqueeze(mask, -1));
  tg_tensor *smoothing = tg_mul(tg_const_float(0.0), tg_mul(tg_mean(log_probs, TG_AXES(-1), false), mask));
  tg_tensor *unreduced =
      tg_add(tg_mul(tg_const_float(1.0), tg_sum(tg_mul(log_probs, onehot), TG_AXES(-1), false)), smoothing);
  return tg_div(tg_neg(tg_sum(unreduced, NULL, 0, false)), tg_sum(mask, NULL, 0, false));
}

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int got = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return got == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* tinygrad: 30 kernels per MLP 784-128-10 + Adam step with the loss realized in the same schedule (41 on its first
 * step, which also fills m and v; ours start as buffers) — measured at /work/tgref with batch 32 */
#define TINYGRAD_MLP_ADAM_KERNELS 30

static void test_mlp_adam_kernels(void) {
  tg_scope s = tg_scope_begin();
  tg_manual_seed(1);
  Mlp m = make_mlp(784, 128, 10);
  tg_tensor *x = tg_rand(TG_SHAPE(32, 784), TG_FLOAT32), *y = tg_randint(TG_SHAPE(32), 0, 10, TG_INT32);
  CHECK(tg_realize(x) == TG_OK && tg_realize(y) == TG_OK);
  tg_tensor *params[4] = {m.w1, m.b1, m.w2, m.b2};
  tg_optim *o = tg_optim_adam(params, 4, 0.001, 0.9, 0.999, 1e-8);
  CHECK(o != NULL);
  double first_loss = 0, loss_now = 0;
  for (int step = 0; step < 4 && o; step++) {
    tg_scope st = tg_scope_begin();
    tg_optim_zero_grad(o);
    tg_tensor *loss = mlp_loss(&m, x, y, 10);
    CHECK_MSG(tg_backward(loss) == TG_OK, "backward: %s", tg_last_error());
    int k = step_counting(o, &loss, 1);
    CHECK_MSG(k > 0 && k <= TINYGRAD_MLP_ADAM_KERNELS, "MLP+Adam step %d: %d kernels (tinygrad %d): %s", step, k,
              TINYGRAD_MLP_ADAM_KERNELS, k < 0 ? tg_last_error() : "");
    if (step == 0 || tg_debug_level() >= 1)
      printf("  optim: MLP 784-128-10 + Adam step (loss realized with it): %d kernels (tinygrad %d)\n", k,
             TINYGRAD_MLP_ADAM_KERNELS);
    CHECK(tg_item_double(loss, &loss_now) == TG_OK);
    if (step == 0) first_loss = loss_now;
    tg_scope_end(st);
  }
  CHECK_MSG(loss_now < first_loss, "the loss did not fall: %g -> %g", first_loss, loss_now);
  CHECK(first_loss > 2.0 && first_loss < 2.6); /* about ln(10) at the start */
  tg_optim_free(o);
  tg_scope_end(s);
}

/* many steps of a small MLP: the live handles and nodes stay where they were after the first step, RSS stays flat
 * (within 5% between step 100 and the last), and the loss falls */
static void test_memory_over_steps(void) {
  int steps = tg_test_light() ? 150 : 2000;
  tg_scope s = tg_scope_begin();
  tg_manual_seed(3);
  Mlp m = make_mlp(16, 32, 4);
  tg_tensor *x = tg_randn(TG_SHAPE(8, 16), TG_FLOAT32), *y = tg_randint(TG_SHAPE(8), 0, 4, TG_INT32);
  CHECK(tg_realize(x) == TG_OK && tg_realize(y) == TG_OK);
  tg_tensor *params[4] = {m.w1, m.b1, m.w2, m.b2};
  tg_optim *o = tg_optim_adamw(params, 4, 0.01, 0.9, 0.999, 1e-8, 0.01);
  CHECK(o != NULL);
  size_t live_after_first = 0, nodes_after_first = 0, rss_at_100 = 0, rss_end = 0;
  bool live_ok = true, nodes_ok = true;
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < steps && o; step++) {
    tg_scope st = tg_scope_begin();
    tg_optim_zero_grad(o);
    tg_tensor *loss = mlp_loss(&m, x, y, 4);
    tg_status status = tg_backward(loss);
    if (status == TG_OK) status = tg_optim_step_with(o, &loss, 1);
    if (status != TG_OK) {
      CHECK_MSG(false, "step %d: %s", step, tg_last_error());
      tg_scope_end(st);
      break;
    }
    if (step == 0 || step == steps - 1) CHECK(tg_item_double(loss, step == 0 ? &first_loss : &last_loss) == TG_OK);
    tg_scope_end(st);
    if (step == 1) {
      live_after_first = tg_live_tensors();
      nodes_after_first = uop_live_count();
    } else if (step > 1) {
      live_ok &= tg_live_tensors() == live_after_first;
      nodes_ok &= uop_live_count() <= nodes_after_first;
    }
    if (step == 100) rss_at_100 = rss_bytes();
  }
  rss_end = rss_bytes();
  CHECK_MSG(live_ok, "live handles grew over %d steps: %zu -> %zu", steps, live_after_first, tg_live_tensors());
  CHECK_MSG(nodes_ok, "live nodes grew over %d steps: %zu -> %zu", steps, nodes_after_first, uop_live_count());
  CHECK_MSG(last_loss < first_loss * 0.5, "loss %g -> %g over %d steps", first_loss, last_loss, steps);
  if (!tg_test_light()) {
    CHECK_MSG(rss_end <= rss_at_100 + rss_at_100 / 20, "RSS grew from %.1f MiB (step 100) to %.1f MiB (step %d)",
              (double)rss_at_100 / 1048576.0, (double)rss_end / 1048576.0, steps);
    printf("  optim: %d AdamW steps of a 16-32-4 MLP: RSS %.1f MiB at step 100, %.1f MiB at the end; "
           "loss %.4f -> %.4f\n",
           steps, (double)rss_at_100 / 1048576.0, (double)rss_end / 1048576.0, first_loss, last_loss);
  }
  tg_optim_free(o);
  tg_scope_end(s);
}

void suite_optim(void);
void suite_optim(void) {
  size_t live = tg_live_tensors();
  bool was_training = tg_set_training(true);
  test_update_math();
  test_state_names();
  test_lr_tensor();
  test_grad_accumulation();
  test_buffers_and_step_with();
  test_group();
  test_dtypes_and_scalars();
  test_errors();
  test_mlp_adam_kernels();
  test_memory_over_steps();
  tg_set_training(was_training);
  CHECK_MSG(tg_live_tensors() == live, "the suite leaked %zu tensor handles", tg_live_tensors() - live);
}
