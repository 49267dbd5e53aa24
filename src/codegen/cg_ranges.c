/* cg_ranges.c — the range passes of codegen before the opts (tinygrad codegen/simplify.py and opt/postrange.py):
 * UOp.ranges, pm_flatten_range, pm_split_ranges (a range used modulo c becomes two), pm_simplify_ranges (merge
 * adjacent ranges when that does not add div/mod; shrink ranges only used under a `r < c` gate) and
 * pm_reduce_unparented. The opts themselves are in opt.c. */
#include "cg_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ================================================================================================================
 * ranges
 * ================================================================================================================ */

void cg_ranges_init(CgRanges *r) { uopmap_init(&r->memo); }

void cg_ranges_free(CgRanges *r) {
  for (size_t i = 0; i < r->memo.cap; i++)
    if (r->memo.keys[i]) {
      UOpVec *v = r->memo.vals[i];
      tg_vec_free(v);
      tg_free(v);
    }
  uopmap_free(&r->memo);
}

bool cg_vec_has(const UOpVec *v, const UOp *u) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == u) return true;
  return false;
}

static void vec_remove(UOpVec *v, const UOp *u) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == u) {
      memmove(&v->data[i], &v->data[i + 1], (v->len - i - 1) * sizeof(UOp *));
      v->len--;
      return;
    }
}

static void vec_add_unique(UOpVec *v, UOp *u) {
  if (!cg_vec_has(v, u)) tg_vec_push(v, u);
}

void cg_ended_ranges(UOp *u, UOpVec *out) {
  switch (uop_op(u)) {
  case TG_OP_REDUCE: case TG_OP_END: case TG_OP_STAGE: case TG_OP_CALL: case TG_OP_FUNCTION:
    for (uint32_t i = 1; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
    break;
  case TG_OP_WMMA:
    for (uint32_t i = 3; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
    break;
  case TG_OP_AFTER:
    for (uint32_t i = 1; i < u->nsrc; i++) cg_ended_ranges(u->src[i], out);
    break;
  default: break;
  }
}

/* _ranges of one node from its sources' (already computed) ranges */
static UOpVec *compute_ranges(CgRanges *r, UOp *u) {
  UOpVec *v = tg_calloc(1, sizeof *v);
  if (u->op == TG_OP_RANGE) tg_vec_push(v, u);
  for (uint32_t i = 0; i < u->nsrc; i++) {
    const UOpVec *s = *(UOpVec **)uopmap_get(&r->memo, u->src[i]);
    for (size_t k = 0; k < s->len; k++) vec_add_unique(v, s->data[k]);
  }
  UOpVec ended = {0};
  cg_ended_ranges(u, &ended);
  for (size_t i = 0; i < ended.len; i++) {
    UOp *er = ended.data[i];
    if (er->op == TG_OP_RANGE) {
      vec_remove(v, er);
    } else {
      const UOpVec *s = cg_ranges_of(r, er);
      for (size_t k = 0; k < s->len; k++) vec_remove(v, s->data[k]);
    }
  }
  tg_vec_free(&ended);
  return v;
}

const UOpVec *cg_ranges_of(CgRanges *r, UOp *u) {
  void **hit = uopmap_get(&r->memo, u);
  if (hit) return *hit;
  UOpVec topo = {0};
  uop_toposort(u, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (!uopmap_get(&r->memo, topo.data[i])) uopmap_put(&r->memo, topo.data[i], compute_ranges(r, topo.data[i]));
  tg_vec_free(&topo);
  return *uopmap_get(&r->memo, u);
}

/* ================================================================================================================
 * range args
 * ================================================================================================================ */

UOp *cg_range_new(UOp *end, const RangeArg *a) { return uop_new(TG_OP_RANGE, end->dtype, &end, 1, arg_range(a)); }

UOp *cg_range_retype(UOp *r, AxisType t) {
  RangeArg a = *r->arg.range;
  a.axis_type = (int32_t)t;
  return uop_new(TG_OP_RANGE, r->dtype, r->src, r->nsrc, arg_range(&a));
}

UOp *cg_range_resize(UOp *r, UOp *end) {
  UOp **src = tg_malloc(r->nsrc * sizeof(UOp *));
  memcpy(src, r->src, r->nsrc * sizeof(UOp *));
  src[0] = end;
  UOp *n = uop_new(TG_OP_RANGE, r->dtype, src, r->nsrc, r->arg);
  tg_free(src);
  return n;
}

int cg_range_arg_cmp(const RangeArg *a, const RangeArg *b) {
  if (a->axis_id != b->axis_id) return a->axis_id < b->axis_id ? -1 : 1;
  for (int i = 0; i < a->nsub && i < b->nsub; i++)
    if (a->sub[i] != b->sub[i]) return a->sub[i] < b->sub[i] ? -1 : 1;
  if (a->nsub != b->nsub) return a->nsub < b->nsub ? -1 : 1;
  return a->axis_type - b->axis_type;
}

/* ================================================================================================================
 * pm_flatten_range: a REDUCE / END ends exactly the RANGEs its range expressions contain
 * ================================================================================================================ */

static UOp *flatten_range(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (root->nsrc < 2) return NULL;
  UOpVec srcs = {0}, backedge = {0};
  tg_vec_push(&srcs, root->src[0]);
  CgRanges rr;
  cg_ranges_init(&rr);
  for (uint32_t i = 1; i < root->nsrc; i++) {
    UOp *x = root->src[i];
    if (x->dtype == DT_VOID || x->dtype == DT_BOOL) { tg_vec_push(&backedge, x); continue; }
    const UOpVec *s = cg_ranges_of(&rr, x);
    for (size_t k = 0; k < s->len; k++)
      if (!cg_vec_has(&srcs, s->data[k])) tg_vec_push(&srcs, s->data[k]);
  }
  cg_ranges_free(&rr);
  for (size_t i = 0; i < backedge.len; i++) tg_vec_push(&srcs, backedge.data[i]);
  UOp *r = NULL;
  bool same = srcs.len == root->nsrc && memcmp(srcs.data, root->src, srcs.len * sizeof(UOp *)) == 0;
  if (!same) r = uop_new_tagged(uop_op(root), root->dtype, srcs.data, srcs.len, root->arg, root->tag);
  tg_vec_free(&srcs);
  tg_vec_free(&backedge);
  return r;
}

static const Rule flatten_rules[] = {
    /* real ranges only: an END / REDUCE ends the RANGEs inside its range expressions */
    RULE("root:REDUCE|END", flatten_range, NULL),
};

const RuleSet *cg_pm_flatten_range(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_flatten_range", flatten_rules);
  return pm;
}

/* ================================================================================================================
 * pm_split_ranges: a RANGE r used as r % c (c divides its size) becomes r1*c + r2
 * ================================================================================================================ */

static bool const_int_val(const UOp *u, int64_t *v) {
  if (u->op != TG_OP_CONST || u->arg.c.kind != CK_INT) return false;
  *v = u->arg.c.i;
  return true;
}

static UOp *sub_range(UOp *r, UOp *end, int64_t sub) {
  RangeArg a = *r->arg.range;
  TG_ASSERT(a.nsub < 4, "too many range sub ids");
  a.sub[a.nsub++] = sub;
  return cg_range_new(end, &a);
}

UOp *cg_split_ranges(UOp *sink) {
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    int64_t c, end;
    if (u->op != TG_OP_FLOORMOD || u->src[0]->op != TG_OP_RANGE || !const_int_val(u->src[1], &c) || c <= 0) continue;
    UOp *r = u->src[0];
    AxisType t = cg_axis_type(r);
    if (cg_vec_has(&from, r) || t == AXIS_WARP || t == AXIS_DEVICE) continue;
    if (!const_int_val(r->src[0], &end) || end % c != 0) continue;
    UOp *cu = uop_const_int(r->dtype, c);
    UOp *outer = sub_range(r, uop_const_int(r->dtype, end / c), 0), *inner = sub_range(r, cu, 1);
    tg_vec_push(&from, r);
    tg_vec_push(&to, uop_add(uop_mul(outer, cu), inner));
  }
  UOp *ret = sink;
  if (from.len) {
    ret = uop_substitute(sink, from.data, to.data, from.len);
    ret = pm_graph_rewrite(ret, sym_symbolic(), NULL, 0, NULL, "split ranges simplify");
    if (ret) ret = pm_graph_rewrite(ret, cg_pm_flatten_range(), NULL, 0, NULL, "split ranges flatten");
  }
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

/* ================================================================================================================
 * pm_simplify_ranges
 * ================================================================================================================ */

static size_t count_divmod(UOp *u) {
  UOpVec topo = {0};
  uop_backward_slice(u, &topo);
  size_t n = 0;
  for (size_t i = 0; i < topo.len; i++) n += topo.data[i]->op == TG_OP_FLOORDIV || topo.data[i]->op == TG_OP_FLOORMOD;
  tg_vec_free(&topo);
  return n;
}

static const RuleSet *merge_check_pm(void) {
  static const RuleSet *pm;
  if (!pm) pm = pm_concat(sym_symbolic(), cg_pm_flatten_range());
  return pm;
}

/* merge two ranges of the same type into one when the index math does not get more div/mod (END: adjacent pairs,
 * REDUCE: every ordered pair) */
static UOp *merge_adjacent(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  UOp *u = root;
  for (uint32_t i = 1; i < u->nsrc; i++)
    if (u->src[i]->op != TG_OP_RANGE) return NULL;
  size_t nr = root->nsrc - 1;
  if (nr < 2) return NULL;
  UOp **ended = tg_malloc(nr * sizeof(UOp *));
  memcpy(ended, root->src + 1, nr * sizeof(UOp *));
  /* the outer ranges of every REDUCE in the slice (a merged pair must be inside the same reduces) */
  CgRanges rr;
  cg_ranges_init(&rr);
  UOpVec topo = {0};
  uop_toposort(root, NULL, NULL, &topo);
  TG_VEC(const UOpVec *) reduce_ranges = {0};
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_REDUCE) tg_vec_push(&reduce_ranges, cg_ranges_of(&rr, topo.data[i]));
  bool is_end = root->op == TG_OP_END;
  for (size_t a = 0; a < nr; a++) {
    for (size_t b = 0; b < nr; b++) {
      if (is_end ? b != a + 1 : a == b) continue;
      UOp *r0 = ended[a], *r1 = ended[b];
      if (cg_axis_type(r0) != cg_axis_type(r1)) continue;
      bool same = true;
      for (size_t k = 0; k < reduce_ranges.len; k++)
        if (cg_vec_has(reduce_ranges.data[k], r0) != cg_vec_has(reduce_ranges.data[k], r1)) same = false;
      if (!same) continue;
      UOp *s0 = r0->src[0], *s1 = r1->src[0];
      UOp *nr0 = cg_range_resize(r0, uop_mul(s0, s1));
      UOp *from[2] = {r0, r1}, *to[2] = {uop_idiv(nr0, s1), uop_mod(nr0, s1)};
      UOp *nidx = uop_substitute(u, from, to, 2);
      nidx = pm_graph_rewrite(nidx, merge_check_pm(), NULL, 0, NULL, "check_merge");
      if (nidx && count_divmod(nidx) <= count_divmod(u)) u = nidx;
    }
  }
  tg_vec_free(&reduce_ranges);
  tg_vec_free(&topo);
  cg_ranges_free(&rr);
  tg_free(ended);
  return u == root ? NULL : u;
}

static const Rule merge_rules[] = {
    /* merge adjacent ranges of an END / any two ranges of a REDUCE when that adds no div/mod */
    RULE("root:END|REDUCE", merge_adjacent, NULL),
};

static const RuleSet *merge_pm(void) {
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("pm_simplify_ranges", merge_rules);
    pm = pm_concat(cg_pm_flatten_range(), set);
  }
  return pm;
}

/* the index expression and valid of an INDEX source (tinygrad get_idx / get_valid) */
static UOp *idx_expr(UOp *x) { return x->op == TG_OP_WHERE && uop_is_invalid(x->src[2]) ? x->src[1] : x; }
static UOp *idx_valid(UOp *x) { return x->op == TG_OP_WHERE && uop_is_invalid(x->src[2]) ? x->src[0] : NULL; }

typedef struct ShrinkEntry { UOp *range; UOp *end; } ShrinkEntry;
typedef TG_VEC(ShrinkEntry) ShrinkVec;

static ShrinkEntry *shrink_find(ShrinkVec *v, UOp *r) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i].range == r) return &v->data[i];
  return NULL;
}

static void shrink_set(ShrinkVec *v, UOp *r, UOp *end) {
  ShrinkEntry *e = shrink_find(v, r);
  if (e) e->end = end;
  else { ShrinkEntry n = {r, end}; tg_vec_push(v, n); }
}

UOp *cg_simplify_ranges(UOp *sink) {
  sink = pm_graph_rewrite(sink, merge_pm(), NULL, 0, NULL, "simplify ranges");
  if (!sink) return NULL;
  /* mark_gated: a range only used under `r < c` gates runs to the largest c */
  ShrinkVec ctx = {0};
  CgRanges rr;
  cg_ranges_init(&rr);
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op == TG_OP_INDEX) {
      UOp *x = u, *cond = NULL;
      ShrinkVec guards = {0};
      if (u->nsrc > 1 && u->src[1]->op == TG_OP_WHERE) {
        x = idx_expr(u->src[1]);
        cond = idx_valid(u->src[1]);
        if (!cond) cond = u->src[1]->src[0];
        UOpVec clauses = {0};
        uop_split(cond, TG_OP_AND, &clauses);
        for (size_t k = 0; k < clauses.len; k++) {
          UOp *v = clauses.data[k];
          if (v->op == TG_OP_CMPLT && v->src[0]->op == TG_OP_RANGE && v->src[1]->op == TG_OP_CONST)
            shrink_set(&guards, v->src[0], v->src[1]);
        }
        tg_vec_free(&clauses);
      }
      for (size_t k = 0; k < guards.len; k++) {
        ShrinkEntry *e = shrink_find(&ctx, guards.data[k].range);
        int64_t have, want;
        if (!e || (const_int_val(e->end, &have) && const_int_val(guards.data[k].end, &want) && have < want))
          shrink_set(&ctx, guards.data[k].range, guards.data[k].end);
      }
      const UOpVec *xr = cg_ranges_of(&rr, x);
      for (size_t k = 0; k < xr->len; k++)
        if (!shrink_find(&guards, xr->data[k])) shrink_set(&ctx, xr->data[k], xr->data[k]->src[0]);
      tg_vec_free(&guards);
    } else if (u->op == TG_OP_REDUCE) {
      /* reduce ranges can't be shrunk */
      for (uint32_t k = 1; k < u->nsrc; k++) shrink_set(&ctx, u->src[k], u->src[k]->src[0]);
    }
  }
  UOpVec from = {0}, to = {0};
  for (size_t i = 0; i < ctx.len; i++) {
    if (ctx.data[i].range->op != TG_OP_RANGE || ctx.data[i].end == ctx.data[i].range->src[0]) continue;
    tg_vec_push(&from, ctx.data[i].range);
    tg_vec_push(&to, cg_range_resize(ctx.data[i].range, ctx.data[i].end));
  }
  if (from.len) {
    sink = uop_substitute(sink, from.data, to.data, from.len);
    sink = pm_graph_rewrite(sink, sym_symbolic(), NULL, 0, NULL, "shrink ranges simplify");
  }
  tg_vec_free(&from); tg_vec_free(&to); tg_vec_free(&topo); tg_vec_free(&ctx);
  cg_ranges_free(&rr);
  return sink;
}

/* ================================================================================================================
 * pm_reduce_unparented: ranges a REDUCE's value does not depend on become a multiplication (ADD) or power (MUL)
 * ================================================================================================================ */

static UOp *reduce_unparented(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (red->arg.kind != ARG_REDUCE) return NULL;
  TgOp op = (TgOp)red->arg.red.op;
  if (op != TG_OP_ADD && op != TG_OP_MAX && op != TG_OP_MUL) return NULL;
  CgRanges rr;
  cg_ranges_init(&rr);
  const UOpVec *inner = cg_ranges_of(&rr, red->src[0]);
  UOpVec parented = {0}, unparented = {0};
  tg_vec_push(&parented, red->src[0]);
  for (uint32_t i = 1; i < red->nsrc; i++) {
    if (cg_vec_has(inner, red->src[i])) tg_vec_push(&parented, red->src[i]);
    else tg_vec_push(&unparented, red->src[i]);
  }
  cg_ranges_free(&rr);
  UOp *ret = NULL;
  if (unparented.len) {
    ret = parented.len > 1 || red->dtype != red->src[0]->dtype
              ? uop_new(TG_OP_REDUCE, red->dtype, parented.data, parented.len, red->arg)
              : red->src[0];
    for (size_t i = 0; i < unparented.len; i++) {
      UOp *n = unparented.data[i]->src[0];
      if (op == TG_OP_ADD) ret = uop_mul(ret, n);
      if (op == TG_OP_MUL) ret = uop_alu2(TG_OP_POW, ret, n);
    }
  }
  tg_vec_free(&parented); tg_vec_free(&unparented);
  return ret;
}

static const Rule reduce_unparented_rules[] = {
    /* remove any ranges from a REDUCE that aren't referenced in the reduce source */
    RULE("red:REDUCE", reduce_unparented, NULL),
};

const RuleSet *cg_pm_reduce_unparented(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_reduce_unparented", reduce_unparented_rules);
  return pm;
}
