/* estimate.c — tinygrad's Estimates.ops for a linearized kernel (render.h): the FLOPs DEBUG=2 prints as GFLOPS and BEAM
 * filters by. Lane counts come from the shape rules (uop/shape.h: a vector is a shaped value). */
#include "render.h"
#include "uop/shape.h"

#include <string.h>

/* marks the arithmetic under an address (not through END: a loop's value is not indexing) */
static void mark_indexing(UOp *u, UOpMap *seen) {
  if (uopmap_get(seen, u) || u->op == TG_OP_END) return;
  uopmap_put(seen, u, u);
  for (uint32_t i = 0; i < u->nsrc; i++) mark_indexing(u->src[i], seen);
}

double render_estimate_flops(UOp *linear) {
  UOpMap indexing;
  uopmap_init(&indexing);
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if (u->op == TG_OP_INDEX || u->op == TG_OP_SHRINK)
      for (uint32_t k = 1; k < u->nsrc; k++) mark_indexing(u->src[k], &indexing);
  }
  ShapeCache sc;
  shape_cache_init(&sc);
  double trips = 1, flops = 0;
  TG_VEC(double) stack = {0};
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    TgOp op = uop_op(u);
    if (op == TG_OP_RANGE) {
      tg_vec_push(&stack, trips);
      i128 n = uop_vmax(u) + 1;
      trips *= n > 0 ? (double)n : 1;
    } else if (op == TG_OP_END) {
      for (uint32_t k = 1; k < u->nsrc && stack.len; k++) trips = stack.data[--stack.len];
    } else if ((op == TG_OP_PARAM || op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
               u->arg.param->addrspace == ADDR_ALU && strcmp(u->arg.param->name, "core_id") == 0) {
      trips *= (double)(u->arg.param->vmax + 1);
    } else if (op_is_alu(op) && !uopmap_get(&indexing, u)) {
      flops += trips * (double)uop_max_numel(u, &sc) * (op == TG_OP_MULACC ? 2 : 1);
    }
  }
  tg_vec_free(&stack);
  shape_cache_free(&sc);
  uopmap_free(&indexing);
  return flops;
}
