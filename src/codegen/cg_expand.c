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
#define EXPAND_TAG_LANE 0x6c61      /* a REDUCE that is one upcast lane of a REDUCE */

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
  UOp *sv = graph_rewrite(v, sym_symbolic(), NULL, 0, NULL, "expander lane");
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
  /* the REDUCEs that read an upcast range become one REDUCE per lane, each marked as a lane (see cg_reduce_is_lane) */
  UOpVec topo = {0}, reds = {0};
  uop_toposort(e->src[0], NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_REDUCE) continue;
    bool reads = false;
    for (size_t k = 0; k < up.len && !reads; k++) reads = uop_in_backward_slice(u, up.data[k]);
    if (reads) tg_vec_push(&reds, u);
  }
  for (int64_t l = 0; l < n; l++) {
    UOp *body = at_lane(e->src[0], &up, l);
    if (reds.len) {
      UOpVec from = {0}, to = {0};
      for (size_t k = 0; k < reds.len; k++) {
        UOp *rl = at_lane(reds.data[k], &up, l);
        tg_vec_push(&from, rl);
        tg_vec_push(&to, uop_with_tag(rl, EXPAND_TAG_LANE));
      }
      body = uop_substitute(body, from.data, to.data, from.len);
      tg_vec_free(&from); tg_vec_free(&to);
    }
    tg_vec_push(&lanes, body);
  }
  tg_vec_free(&topo); tg_vec_free(&reds);
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

/* A lane whose value no longer depends on any of its REDUCE's ranges (a gate that is false for this lane, a padding
 * lane): the REDUCE folds away whole (x * n for ADD, x for MAX, x ** n for MUL). Only whole REDUCEs go: dropping some
 * ranges of one lane would split the lanes' loop (see merge_reduce_ends). */
static UOp *fold_constant_lane(RwCtx *rw, UOp *r, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (r->arg.kind != ARG_REDUCE || r->nsrc < 2) return NULL;
  TgOp op = (TgOp)r->arg.red.op;
  if (op != TG_OP_ADD && op != TG_OP_MAX && op != TG_OP_MUL) return NULL;
  CgRanges rr;
  cg_ranges_init(&rr);
  const UOpVec *inner = cg_ranges_of(&rr, r->src[0]);
  bool any = false;
  for (uint32_t i = 1; i < r->nsrc && !any; i++) any = cg_vec_has(inner, r->src[i]);
  cg_ranges_free(&rr);
  if (any) return NULL;
  UOp *ret = r->src[0];
  for (uint32_t i = 1; i < r->nsrc; i++) {
    if (op == TG_OP_ADD) ret = uop_mul(ret, uop_cast(r->src[i]->src[0], ret->dtype));
    if (op == TG_OP_MUL) ret = uop_alu2(TG_OP_POW, ret, uop_cast(r->src[i]->src[0], ret->dtype));
  }
  return uop_cast(ret, r->dtype);
}

static const Rule lane_fold_rules[] = {
    RULE("r:REDUCE", fold_constant_lane, NULL),
};

static const RuleSet *pm_lane_fold(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("fold constant lanes", lane_fold_rules);
  return pm;
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
    /* no symbolic pass here: it could drop a range from one lane's REDUCE and not another's, and the lanes of one
     * REDUCE must end their loops together (merge_reduce_ends); the passes after reduce lowering fold the lanes */
    ret = graph_rewrite(sink, pm, &c, 0, NULL, "expander");
    static const RuleSet *lane_fold;
    if (!lane_fold) lane_fold = pm_concat(sym_symbolic(), pm_lane_fold());
    if (ret) ret = graph_rewrite(ret, lane_fold, NULL, 0, NULL, "expander symbolic");
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
 * merge_reduce_ends (tinygrad): the ENDs of reduce lowering that close the same ranges in the same enclosing ranges
 * become one END, so one loop updates every lane's accumulator. ENDs of the same ranges in different enclosing ranges
 * (a lane whose value folded away a range it reads) get their own copy of the ranges (new axis ids): a RANGE has one
 * END.
 * ================================================================================================================ */

typedef struct EndGroup {
  UOp *first;
  const UOpVec *context; /* the ranges the ENDs live in */
  int copy;              /* 0: the original ranges; k > 0: the k-th group of these ranges, which gets new ids */
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

typedef struct MergeCtx {
  TG_VEC(EndGroup) groups;
  UOpMap group_of; /* tagged END -> its group index + 1 */
  UOpMap done;     /* node -> rebuilt node */
  int64_t next_axis;
} MergeCtx;

static UOp *merge_rebuild(MergeCtx *mc, UOp *u);

/* the merged END of group g: END(GROUP(bodies), ranges), with new ranges for a copy */
static UOp *merged_end(MergeCtx *mc, EndGroup *g) {
  UOp *first = g->first;
  size_t nr = first->nsrc - 1;
  UOp **src = tg_malloc((nr + 1) * sizeof(UOp *));
  UOp **rfrom = first->src + 1;
  for (size_t j = 0; j < nr; j++) {
    src[j + 1] = merge_rebuild(mc, rfrom[j]);
    if (g->copy > 0 && rfrom[j]->op == TG_OP_RANGE) {
      RangeArg a = *rfrom[j]->arg.range;
      a.axis_id = mc->next_axis++;
      src[j + 1] = uop_new(TG_OP_RANGE, rfrom[j]->dtype, src[j + 1]->src, src[j + 1]->nsrc, arg_range(&a));
    }
  }
  UOpVec body = {0};
  for (size_t i = 0; i < g->ends.len; i++) {
    UOp *bd = merge_rebuild(mc, g->ends.data[i]->src[0]);
    if (g->copy > 0) {
      UOp **rnew = tg_malloc(nr * sizeof(UOp *)), **rold = tg_malloc(nr * sizeof(UOp *));
      for (size_t j = 0; j < nr; j++) rold[j] = merge_rebuild(mc, rfrom[j]), rnew[j] = src[j + 1];
      bd = uop_substitute(bd, rold, rnew, nr);
      tg_free(rnew);
      tg_free(rold);
    }
    tg_vec_push(&body, bd);
  }
  src[0] = body.len == 1 ? body.data[0] : uop_new(TG_OP_GROUP, DT_VOID, body.data, body.len, arg_none());
  UOp *merged = uop_new(TG_OP_END, DT_VOID, src, first->nsrc, first->arg);
  tg_free(src);
  tg_vec_free(&body);
  return merged;
}

/* every node rebuilt bottom-up, each tagged END replaced by its group's END (nested groups included) */
static UOp *merge_rebuild(MergeCtx *mc, UOp *u) {
  void **hit = uopmap_get(&mc->done, u);
  if (hit) return *hit;
  UOp *r;
  void **gi = uopmap_get(&mc->group_of, u);
  if (gi) {
    EndGroup *g = &mc->groups.data[(size_t)(uintptr_t)*gi - 1];
    void **m = uopmap_get(&mc->done, g->first);
    r = m ? *m : merged_end(mc, g);
    for (size_t i = 0; i < g->ends.len; i++) uopmap_put(&mc->done, g->ends.data[i], r);
    return r;
  }
  UOp **src = tg_malloc((u->nsrc + 1) * sizeof(UOp *));
  bool changed = false;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    src[i] = merge_rebuild(mc, u->src[i]);
    changed |= src[i] != u->src[i];
  }
  r = changed ? uop_new_tagged(uop_op(u), u->dtype, src, u->nsrc, u->arg, u->tag) : u;
  tg_free(src);
  uopmap_put(&mc->done, u, r);
  return r;
}

UOp *cg_merge_reduce_ends(UOp *sink) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  CgRanges rr;
  cg_ranges_init(&rr);
  MergeCtx mc;
  memset(&mc, 0, sizeof mc);
  uopmap_init(&mc.group_of);
  uopmap_init(&mc.done);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_RANGE) mc.next_axis = TG_MAX(mc.next_axis, topo.data[i]->arg.range->axis_id + 1);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_END || u->tag != EXPAND_TAG_MERGEABLE) continue;
    const UOpVec *ctx = cg_ranges_of(&rr, u);
    size_t gi = mc.groups.len;
    int copies = 0;
    for (size_t k = 0; k < mc.groups.len && gi == mc.groups.len; k++) {
      if (!same_ranges(mc.groups.data[k].first, u)) continue;
      if (same_set(mc.groups.data[k].context, ctx)) gi = k;
      else copies++;
    }
    if (gi == mc.groups.len) {
      EndGroup ng = {u, ctx, copies, {0}};
      tg_vec_push(&mc.groups, ng);
    }
    tg_vec_push(&mc.groups.data[gi].ends, u);
    uopmap_put(&mc.group_of, u, (void *)(uintptr_t)(gi + 1));
  }
  UOp *ret = mc.groups.len ? merge_rebuild(&mc, sink) : sink;
  for (size_t k = 0; k < mc.groups.len; k++) tg_vec_free(&mc.groups.data[k].ends);
  tg_vec_free(&mc.groups);
  uopmap_free(&mc.group_of);
  uopmap_free(&mc.done);
  tg_vec_free(&topo);
  cg_ranges_free(&rr);
  return ret;
}

bool cg_reduce_is_lane(const UOp *r) { return r->tag == EXPAND_TAG_LANE; }

UOp *cg_end_mergeable(UOp *const *src, size_t n) {
  return uop_new_tagged(TG_OP_END, DT_VOID, src, n, arg_none(), EXPAND_TAG_MERGEABLE);
}
