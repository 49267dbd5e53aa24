/* renderers.c — which renderer a device's kernels use (tinygrad Compiled.renderer), and the launch dimensions a
 * lowered kernel asks for (tinygrad ProgramInfo.global_size / local_size, read off its SPECIAL indices). */
#include <stdio.h>
#include <string.h>

#include "render.h"
#include "../uop/eval.h"

/* "CPU" or "CPU:<n>": the base name must match up to the end or a ':' */
static bool device_is(const char *device, const char *base) {
  size_t n = strlen(base);
  return strncmp(device, base, n) == 0 && (device[n] == '\0' || device[n] == ':');
}

const Renderer *renderer_for_device(const char *device) {
  if (!device || !*device || device_is(device, "CPU")) return renderer_clang();
  if (device_is(device, "CUDA")) return renderer_cuda();
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "render: unknown device %s (known: CPU, CUDA)", device);
  return NULL;
}

bool render_flat_ids(UOp *linear) {
  for (uint32_t i = 0; linear && i < linear->nsrc; i++) {
    const UOp *u = linear->src[i];
    if (u->op == TG_OP_SPECIAL && u->arg.kind == ARG_STR && u->arg.str[0] == 'i') return true;
  }
  return false;
}

bool render_launch_bounds(UOp *linear, UOp *global[3], UOp *local[3]) {
  for (int i = 0; i < 3; i++) global[i] = local[i] = NULL;
  for (uint32_t i = 0; linear && i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if (u->op != TG_OP_SPECIAL) continue;
    const char *name = u->arg.kind == ARG_STR ? u->arg.str : "";
    /* idx<n> (NOLOCALS) is blockIdx*blockDim+threadIdx: blocks of one thread until a block shape is chosen */
    UOp **dims = name[0] == 'g' || name[0] == 'i' ? global : name[0] == 'l' ? local : NULL;
    size_t len = strlen(name);
    int axis = len ? name[len - 1] - '0' : -1;
    if (!dims || axis < 0 || axis > 2 || u->nsrc < 1) {
      tg_set_error(TG_ERR_RUNTIME, "render: SPECIAL %s is not a gidx/lidx/idx index", name);
      return false;
    }
    dims[axis] = u->src[0];
  }
  return true;
}

/* a bound that is a constant (lowered: CAST(int, CONST)) */
static bool const_bound(const UOp *bound, int64_t *v) {
  while (bound->op == TG_OP_CAST && bound->nsrc == 1) bound = bound->src[0];
  if (bound->op != TG_OP_CONST || bound->arg.c.kind != CK_INT) return false;
  *v = bound->arg.c.i;
  return true;
}

bool render_launch_dims(UOp *linear, int64_t global[3], int64_t local[3]) {
  UOp *gb[3], *lb[3];
  if (!render_launch_bounds(linear, gb, lb)) return false;
  for (int i = 0; i < 6; i++) {
    UOp *b = i < 3 ? gb[i] : lb[i - 3];
    int64_t *d = i < 3 ? &global[i] : &local[i - 3];
    *d = 1;
    if (b && !const_bound(b, d)) {
      tg_set_error(TG_ERR_UNSUPPORTED, "render: the %s dim %d has a symbolic bound (render_launch_eval gives it)",
                   i < 3 ? "global" : "local", i % 3);
      return false;
    }
  }
  return true;
}

tg_status render_launch_eval(UOp *bound, const char *const *names, const int64_t *vals, size_t n, int64_t *out) {
  if (const_bound(bound, out)) return TG_OK;
  EvalProgram *p = eval_compile(bound);
  if (!p) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_UNSUPPORTED;
  EvalEnv env;
  eval_env_init(&env);
  for (size_t i = 0; i < n; i++)
    if (names[i] && names[i][0]) eval_env_bind_var(&env, names[i], vals[i]);
  EvalValue r = eval_run(p, &env);
  eval_env_free(&env);
  eval_program_free(p);
  if (r.state != EVAL_OK) {
    char *t = uop_render(bound);
    tg_status st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "launch: the grid bound %s is %s (Variables bound: %zu)", t,
                                eval_state_name(r.state), n);
    tg_free(t);
    return st;
  }
  *out = (int64_t)r.v;
  return TG_OK;
}
