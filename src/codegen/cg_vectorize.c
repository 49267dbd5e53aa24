/* cg_vectorize.c — vector ALU ops from lane STACKs (not tinygrad's: it devectorizes ALU ops and leaves regrouping to
 * the C compiler; see cg_expand's vector accumulators). A STACK of the lanes of a vector accumulator's addend, each
 * lane the same ALU op, becomes that op over the lanes of its operands:
 *   - operand lanes that are all one value: that scalar (an ALU op broadcasts a scalar over a vector),
 *   - lanes 0..n-1 of one n-lane value, in order: that value,
 *   - loads of n consecutive elements of one buffer: one vector load (what memory coalescing would group, without
 *     depending on where its groups start),
 *   - anything else: a STACK of the lanes, rewritten the same way.
 * Ops outside ADD/SUB/MUL/NEG on float32 stay per lane. Runs after memory coalescing, whose loads it reads lanes of. */
#include "cg_internal.h"

#include <string.h>

/* the lanes of a value after coalescing: a LOAD of a SHRINK, a STACK, an ALU op over those; 1 for a scalar */
static int64_t lanes_of(const UOp *u) {
  if (u->op == TG_OP_LOAD && u->nsrc == 1 && u->src[0]->op == TG_OP_SHRINK && u->src[0]->nsrc == 3) {
    const UOp *n = u->src[0]->src[2];
    return n->op == TG_OP_CONST && n->arg.c.kind == CK_INT ? n->arg.c.i : -1;
  }
  if (u->op == TG_OP_STACK) return u->nsrc;
  if (op_is_alu(uop_op(u))) {
    int64_t n = 1;
    for (uint32_t i = 0; i < u->nsrc; i++) n = TG_MAX(n, lanes_of(u->src[i]));
    return n;
  }
  return 1;
}

/* where a scalar lane is read from memory: buffer, index without its constant (NULL: a constant index), the constant,
 * and the gate */
typedef struct LaneAddr {
  UOp *buf, *base, *valid;
  int64_t off;
} LaneAddr;

static bool lane_addr(UOp *u, LaneAddr *a) {
  UOp *idx;
  int64_t k = 0;
  if (u->op == TG_OP_LOAD && u->nsrc == 1 && u->src[0]->op == TG_OP_INDEX && u->src[0]->nsrc == 2) {
    a->buf = u->src[0]->src[0];
    idx = u->src[0]->src[1];
  } else if (u->op == TG_OP_INDEX && u->nsrc == 2 && u->src[0]->op == TG_OP_LOAD && u->src[0]->nsrc == 1 &&
             u->src[0]->src[0]->op == TG_OP_SHRINK && u->src[1]->op == TG_OP_CONST && u->src[1]->arg.c.kind == CK_INT) {
    a->buf = u->src[0]->src[0]->src[0];
    idx = u->src[0]->src[0]->src[1];
    k = u->src[1]->arg.c.i;
  } else {
    return false;
  }
  a->valid = NULL;
  if (idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2])) a->valid = idx->src[0], idx = idx->src[1];
  if (!cg_split_offset(idx, &a->base, &a->off)) return false;
  a->off += k;
  return true;
}

/* one vector load of the n lanes when they read consecutive elements of one buffer under one gate, else NULL */
static UOp *vector_load_of(UOp *const *lane, size_t n) {
  LaneAddr first, a;
  if (!lane_addr(lane[0], &first)) return NULL;
  for (size_t i = 1; i < n; i++)
    if (lane[i]->dtype != lane[0]->dtype || !lane_addr(lane[i], &a) || a.buf != first.buf || a.base != first.base ||
        a.valid != first.valid || a.off != first.off + (int64_t)i)
      return NULL;
  UOp *offset = cg_index_at(first.base, first.off);
  bool aligned = uop_divides(offset, (int64_t)n) != NULL;
  UOp *s[3] = {first.buf, cg_gated_index(first.valid, offset), uop_const_int(DT_WEAKINT, (int64_t)n)};
  UOp *access = uop_new(TG_OP_SHRINK, lane[0]->dtype, s, 3, aligned ? arg_none() : arg_int(1));
  return uop_new(TG_OP_LOAD, lane[0]->dtype, &access, 1, arg_none());
}

/* lanes 0..n-1 of one n-lane value, in order: that value, else NULL */
static UOp *whole_value_of(UOp *const *lane, size_t n) {
  UOp *v = lane[0]->op == TG_OP_INDEX && lane[0]->nsrc == 2 ? lane[0]->src[0] : NULL;
  if (!v || lanes_of(v) != (int64_t)n) return NULL;
  for (size_t i = 0; i < n; i++)
    if (lane[i]->op != TG_OP_INDEX || lane[i]->nsrc != 2 || lane[i]->src[0] != v || lane[i]->src[1]->op != TG_OP_CONST ||
        lane[i]->src[1]->arg.c.kind != CK_INT || lane[i]->src[1]->arg.c.i != (int64_t)i)
      return NULL;
  return v;
}

static bool all_same(UOp *const *lane, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (lane[i] != lane[0]) return false;
  return true;
}

/* A lane of a vector load read on its own: a load of that one element. A scalar broadcast over a vector op is then a
 * broadcast load from memory (a load port) instead of a lane shuffle of a loaded register, which on AVX-512 cores
 * competes with the FMAs for a port. Measured (2 cores, AVX-512, a 64x32x28x28 3x3 conv vectorized over output
 * channels, 2 vectors x 7 pixels): 194-203 -> 213-220 GFLOPS; a 1 vector x 14 pixels tile, where every broadcast
 * feeds one FMA and the loads become the limit, went 202-211 -> 151-154 (the heuristic does not pick it). */
static UOp *scalar_load_of(UOp *lane) {
  LaneAddr a;
  if (lane->op != TG_OP_INDEX || !lane_addr(lane, &a)) return lane;
  UOp *s[2] = {a.buf, cg_gated_index(a.valid, cg_index_at(a.base, a.off))};
  UOp *access = uop_new(TG_OP_INDEX, lane->dtype, s, 2, arg_none());
  return uop_new(TG_OP_LOAD, lane->dtype, &access, 1, arg_none());
}

/* an operand of a vector op, from its lanes */
static UOp *operand_of(UOp *const *lane, size_t n) {
  if (all_same(lane, n)) return scalar_load_of(lane[0]);
  UOp *v = whole_value_of(lane, n);
  if (!v) v = vector_load_of(lane, n);
  return v ? v : uop_new_tagged(TG_OP_STACK, lane[0]->dtype, lane, n, arg_none(), CG_TAG_VECTOR_LANES);
}

static bool vector_op(TgOp op) { return op == TG_OP_ADD || op == TG_OP_SUB || op == TG_OP_MUL || op == TG_OP_NEG; }

static UOp *vectorize_lanes(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (s->tag != CG_TAG_VECTOR_LANES || s->nsrc < 2 || all_same(s->src, s->nsrc)) return NULL;
  UOp *whole = whole_value_of(s->src, s->nsrc);
  if (!whole) whole = vector_load_of(s->src, s->nsrc);
  if (whole) return whole;
  UOp *e0 = s->src[0];
  if (!vector_op(uop_op(e0)) || e0->dtype != DT_FLOAT32) return NULL;
  for (uint32_t i = 1; i < s->nsrc; i++)
    if (s->src[i]->op != e0->op || s->src[i]->nsrc != e0->nsrc || s->src[i]->dtype != e0->dtype) return NULL;
  UOp *ops[3], *col[64];
  for (uint32_t k = 0; k < e0->nsrc; k++) {
    for (uint32_t i = 0; i < s->nsrc; i++) col[i] = s->src[i]->src[k];
    ops[k] = operand_of(col, s->nsrc);
  }
  return uop_new(uop_op(e0), e0->dtype, ops, e0->nsrc, e0->arg);
}

/* a STACK of lanes 0..n-1 of one n-lane value (a vector accumulator's lanes stored together) is that value */
static UOp *stack_of_whole(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  return s->nsrc >= 2 ? whole_value_of(s->src, s->nsrc) : NULL;
}

static const Rule vectorize_rules[] = {
    /* a lane STACK of one ALU op becomes the vector op (see the file comment) */
    RULE("s:STACK", vectorize_lanes, NULL),
    /* a STACK of a value's lanes in order is the value */
    RULE("s:STACK", stack_of_whole, NULL),
};

UOp *cg_vectorize(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("vectorize lanes", vectorize_rules);
  return pm_graph_rewrite(sink, pm, NULL, 0, NULL, "vectorize lanes");
}
