/* cg_expand.c — the expander (tinygrad codegen/__init__.py expander2 followed by devectorizer2): UPCAST and UNROLL
 * ranges become lanes. tinygrad first turns such a range into a shaped constant vector (0..k-1), lets every op
 * broadcast over those shapes, and later splits each shaped op back into per-lane scalars; the result is one
 * scalar graph per lane, which memory_coalescing regroups into vector loads and stores. This pass builds that
 * per-lane form directly, in the same lane order (the first expanded range varies slowest):
 *
 *   REDUCE(x, unroll ranges U, other ranges K) -> REDUCE(x[U=u0] op x[U=u1] op ..., K)   (horizontal reduce,
 *                                                  folded left to right as expand_horizontal_reduce; no K: no REDUCE)
 *   END(STORE(...), ranges R with upcast ranges P) -> END(GROUP(STORE[P=p0], STORE[P=p1], ...), R - P)
 *
 * and, after reduce lowering, tinygrad's merge_reduce_ends: the per-lane accumulators of one reduce loop share a
 * single END (otherwise every lane would run its own loop). */
#include "cg_internal.h"

#include <math.h>
#include <stdlib.h>

#define EXPAND_TAG_MERGEABLE 0x6d65 /* END made by reduce lowering, may merge with its siblings */

typedef struct ExpandCtx {
  UOpVec order; /* expanded ranges in the order of their first appearance (tinygrad build_range_map) */
} ExpandCtx;

static bool is_expand_range(const UOp *u) {
  return u->op == TG_OP_RANGE && (cg_axis_type(u) == AXIS_UPCAST || cg_axis_type(u) == AXIS_UNROLL);
}

static int order_of(const ExpandCtx *c, const UOp *r) {
  for (size_t i = 0; i < c->order.len; i++)
    if (c->order.data[i] == r) return (int)i;
  return -1;
}

static int cmp_by_order_ctx(const ExpandCtx *c, UOp *a, UOp *b) { return order_of(c, a) - order_of(c, b); }

/* sort rs (few entries) by their order of appearance */
static void sort_ranges(const ExpandCtx *c, UOpVec *rs) {
  for (size_t i = 1; i < rs->len; i++)
    for (size_t k = i; k > 0 && cmp_by_order_ctx(c, rs->data[k - 1], rs->data[k]) > 0; k--) {
      UOp *t = rs->data[k];
      rs->data[k] = rs->data[k - 1];
      rs->data[k - 1] = t;
    }
}

static int64_t lane_count(const UOpVec *rs) {
  int64_t n = 1;
  for (size_t i = 0; i < rs->len; i++) n *= (int64_t)(uop_vmax(rs->data[i]) + 1);
  return n;
}

/* x with the ranges rs replaced by the digits of lane (first range slowest) */
static UOp *at_lane(UOp *x, const UOpVec *rs, int64_t lane) {
  UOp *to[16];
  for (size_t i = rs->len; i-- > 0;) {
    int64_t n = (int64_t)(uop_vmax(rs->data[i]) + 1);
    to[i] = uop_const_int(rs->data[i]->dtype, lane % n);
    lane /= n;
  }
  return uop_substitute(x, rs->data, to, rs->len);
}

#define MAX_LANES 4096

/* the value a lane adds when it is padding: the reduce's identity */
static UOp *identity_of(TgOp op, const DType *d) {
  bool f = dt_is_float(d), b = dt_is_bool(d);
  if (op == TG_OP_ADD) return uop_const(d, f ? const_float(0.0) : b ? const_bool(false) : const_int(0));
  if (op == TG_OP_MUL) return uop_const(d, f ? const_float(1.0) : b ? const_bool(true) : const_int(1));
  return uop_const(d, f ? const_float(-INFINITY) : b ? const_bool(false) : const_int((int64_t)dt_min_int(d)));
}

/* One lane of a horizontal reduce. A lane that is only valid under a condition (a PADTO'd reduce axis:
 * WHERE(valid, x, Invalid)) adds the identity where it is not valid, so a group of lanes that is partly padding still
 * counts its valid lanes; left Invalid, the combined value would gate the whole group away. */
static UOp *reduce_lane(UOp *x, TgOp op, const UOpVec *rs, int64_t lane) {
  UOp *v = at_lane(x, rs, lane);
  UOp *sv = graph_rewrite(v, sym_sym(), NULL, 0, NULL, "expander lane");
  if (sv && uop_is_invalid(sv)) return identity_of(op, x->dtype); /* a lane that is all padding */
  if (sv && sv->op == TG_OP_WHERE && uop_is_invalid(sv->src[2]) && !dt_is_weak(sv->dtype))
    return uop_where(sv->src[0], sv->src[1], identity_of(op, sv->dtype));
  return v;
}

static UOp *expand_reduce(RwCtx *rw, UOp *r, UOp **m) {
  TG_UNUSED(m);
  ExpandCtx *c = rw->ctx;
  if (r->arg.kind != ARG_REDUCE) return NULL;
  UOpVec un = {0}, keep = {0};
  tg_vec_push(&keep, r->src[0]);
  for (uint32_t i = 1; i < r->nsrc; i++) tg_vec_push(is_expand_range(r->src[i]) ? &un : &keep, r->src[i]);
  UOp *ret = NULL;
  if (un.len == 0 || un.len > 16 || lane_count(&un) > MAX_LANES) goto out;
  sort_ranges(c, &un);
  TgOp op = (TgOp)r->arg.red.op;
  int64_t n = lane_count(&un);
  UOp *acc = NULL;
  for (int64_t l = 0; l < n; l++) {
    UOp *v = reduce_lane(r->src[0], op, &un, l);
    acc = acc ? uop_alu2(op, acc, v) : v;
  }
  if (keep.len == 1) ret = uop_cast(acc, r->dtype);
  else {
    keep.data[0] = acc;
    ret = uop_new(TG_OP_REDUCE, r->dtype, keep.data, keep.len, r->arg);
  }
out:
  tg_vec_free(&un); tg_vec_free(&keep);
  return ret;
}

static UOp *expand_end(RwCtx *rw, UOp *e, UOp **m) {
  TG_UNUSED(m);
  ExpandCtx *c = rw->ctx;
  UOpVec up = {0}, keep = {0}, lanes = {0};
  tg_vec_push(&keep, NULL);
  for (uint32_t i = 1; i < e->nsrc; i++) tg_vec_push(is_expand_range(e->src[i]) ? &up : &keep, e->src[i]);
  UOp *ret = NULL;
  if (up.len == 0 || up.len > 16 || lane_count(&up) > MAX_LANES) goto out;
  sort_ranges(c, &up);
  int64_t n = lane_count(&up);
  for (int64_t l = 0; l < n; l++) tg_vec_push(&lanes, at_lane(e->src[0], &up, l));
  UOp *body = lanes.len == 1 ? lanes.data[0] : uop_new(TG_OP_GROUP, DT_VOID, lanes.data, lanes.len, arg_none());
  if (keep.len == 1) ret = body;
  else {
    keep.data[0] = body;
    ret = uop_new(TG_OP_END, DT_VOID, keep.data, keep.len, e->arg);
  }
out:
  tg_vec_free(&up); tg_vec_free(&keep); tg_vec_free(&lanes);
  return ret;
}

static const Rule expand_rules[] = {
    /* a REDUCE over UNROLL ranges adds its lanes up first (horizontal reduce) */
    RULE("r:REDUCE", expand_reduce, NULL),
    /* an END over UPCAST ranges ends one copy of its body per lane */
    RULE("e:END", expand_end, NULL),
};

UOp *cg_expand(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("expander", expand_rules);
  ExpandCtx c = {0};
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (is_expand_range(topo.data[i])) tg_vec_push(&c.order, topo.data[i]);
  tg_vec_free(&topo);
  UOp *ret = sink;
  if (c.order.len) {
    ret = graph_rewrite(sink, pm, &c, 0, NULL, "expander");
    if (ret) ret = graph_rewrite(ret, sym_sym(), NULL, 0, NULL, "expander symbolic");
    if (ret) {
      /* every UPCAST/UNROLL range must be gone: one left means a shape this expander does not handle */
      UOpVec t2 = {0};
      uop_toposort(ret, NULL, NULL, &t2);
      for (size_t i = 0; i < t2.len && ret; i++)
        if (is_expand_range(t2.data[i])) {
          tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: an %s range outside END/REDUCE not supported yet",
                       axis_type_name(cg_axis_type(t2.data[i])));
          ret = NULL;
        }
      tg_vec_free(&t2);
    }
  }
  tg_vec_free(&c.order);
  return ret;
}

/* ================================================================================================================
 * merge_reduce_ends: the ENDs of reduce lowering that close the same ranges in the same place become one
 * ================================================================================================================ */

typedef struct EndGroup {
  UOp *first;
  UOpVec ends;
} EndGroup;

static bool same_ranges(const UOp *a, const UOp *b) {
  if (a->nsrc != b->nsrc) return false;
  for (uint32_t i = 1; i < a->nsrc; i++)
    if (a->src[i] != b->src[i]) return false;
  return true;
}

static bool same_set(const UOpVec *a, const UOpVec *b) {
  if (a->len != b->len) return false;
  for (size_t i = 0; i < a->len; i++)
    if (!cg_vec_has(b, a->data[i])) return false;
  return true;
}

UOp *cg_merge_reduce_ends(UOp *sink) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  CgRanges rr;
  cg_ranges_init(&rr);
  TG_VEC(EndGroup) groups = {0};
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_END || u->tag != EXPAND_TAG_MERGEABLE) continue;
    EndGroup *g = NULL;
    for (size_t k = 0; k < groups.len && !g; k++)
      if (same_ranges(groups.data[k].first, u) &&
          same_set(cg_ranges_of(&rr, groups.data[k].first), cg_ranges_of(&rr, u)))
        g = &groups.data[k];
    if (!g) {
      EndGroup ng = {u, {0}};
      tg_vec_push(&groups, ng);
      g = &groups.data[groups.len - 1];
    }
    tg_vec_push(&g->ends, u);
  }
  UOpVec from = {0}, to = {0};
  for (size_t k = 0; k < groups.len; k++) {
    EndGroup *g = &groups.data[k];
    UOp *first = g->first;
    UOpVec body = {0};
    for (size_t i = 0; i < g->ends.len; i++) tg_vec_push(&body, g->ends.data[i]->src[0]);
    UOp **src = tg_malloc(first->nsrc * sizeof(UOp *));
    memcpy(src, first->src, first->nsrc * sizeof(UOp *));
    src[0] = body.len == 1 ? body.data[0] : uop_new(TG_OP_GROUP, DT_VOID, body.data, body.len, arg_none());
    UOp *merged = uop_new(TG_OP_END, DT_VOID, src, first->nsrc, first->arg);
    tg_free(src);
    for (size_t i = 0; i < g->ends.len; i++) {
      tg_vec_push(&from, g->ends.data[i]);
      tg_vec_push(&to, merged);
    }
    tg_vec_free(&body);
    tg_vec_free(&g->ends);
  }
  UOp *ret = from.len ? uop_substitute(sink, from.data, to.data, from.len) : sink;
  tg_vec_free(&from); tg_vec_free(&to); tg_vec_free(&groups); tg_vec_free(&topo);
  cg_ranges_free(&rr);
  return ret;
}

UOp *cg_end_mergeable(UOp *const *src, size_t n) {
  return uop_new_tagged(TG_OP_END, DT_VOID, src, n, arg_none(), EXPAND_TAG_MERGEABLE);
}
