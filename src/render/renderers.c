/* renderers.c — which renderer a device's kernels use (tinygrad Compiled.renderer), and the launch dimensions a
 * lowered kernel asks for (tinygrad ProgramInfo.global_size / local_size, read off its SPECIAL indices). */
#include <stdio.h>
#include <string.h>

#include "render.h"

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

bool render_launch_dims(UOp *linear, int64_t global[3], int64_t local[3]) {
  for (int i = 0; i < 3; i++) global[i] = local[i] = 1;
  for (uint32_t i = 0; linear && i < linear->nsrc; i++) {
    const UOp *u = linear->src[i];
    if (u->op != TG_OP_SPECIAL) continue;
    const char *name = u->arg.kind == ARG_STR ? u->arg.str : "";
    /* idx<n> (NOLOCALS) is blockIdx*blockDim+threadIdx: blocks of one thread until a block shape is chosen */
    int64_t *dims = name[0] == 'g' || name[0] == 'i' ? global : name[0] == 'l' ? local : NULL;
    size_t len = strlen(name);
    int axis = len ? name[len - 1] - '0' : -1;
    if (!dims || axis < 0 || axis > 2 || u->nsrc < 1) {
      tg_set_error(TG_ERR_RUNTIME, "render: SPECIAL %s is not a gidx/lidx/idx index", name);
      return false;
    }
    const UOp *bound = u->src[0];
    while (bound->op == TG_OP_CAST && bound->nsrc == 1) bound = bound->src[0]; /* lowered: CAST(int, CONST) */
    if (bound->op != TG_OP_CONST || bound->arg.c.kind != CK_INT) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: render: SPECIAL %s with a symbolic bound: not supported yet", name);
      return false;
    }
    dims[axis] = bound->arg.c.i;
  }
  return true;
}
