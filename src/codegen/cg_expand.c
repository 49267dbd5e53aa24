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
  UOpVec order;      /* expanded ranges in the order of their first appearance (tinygrad build_range_map) */
  int vector_lanes;  /* float32 lanes of the target's vector register; 0: no vector accumulators */
  bool dot_u8i8;     /* the renderer has 4-byte dot products (render.h): byte loads may step by 4 along a lane axis */
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
static UOp *identity_of(TgOp op, const DType *d) { return uop_const(d, uop_identity_element(op, d)); }

/* One lane of a value that is summed up (a horizontal reduce's input, a tensor core's operand). A lane that is only
 * valid under a condition (a PADTO'd reduce axis: WHERE(valid, x, Invalid)) becomes the reduce's identity where it is
 * not valid, so a group of lanes that is partly padding still counts its valid lanes; left Invalid, the combined value
 * would gate the whole group away, and a lane that is all padding would leave a bare Invalid in the program. */
static UOp *padded_lane(UOp *x, TgOp op, const UOpVec *rs, int64_t lane) {
  UOp *v = at_lane(x, rs, lane);
  UOp *sv = pm_graph_rewrite(v, sym_symbolic(), NULL, 0, NULL, "expander lane");
  if (sv && uop_is_invalid(sv)) return identity_of(op, x->dtype); /* a lane that is all padding */
  if (sv && sv->op == TG_OP_WHERE && uop_is_invalid(sv->src[2]) && !dt_is_weak(sv->dtype))
    return uop_where(sv->src[0], sv->src[1], identity_of(op, sv->dtype));
  return v;
}

static UOp *expand_reduce_vector(const ExpandCtx *c, UOp *r, const UOpVec *un, const UOpVec *keep);

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
  if (keep.len > 1 && (ret = expand_reduce_vector(c, r, &un, &keep))) goto out;
  TgOp op = (TgOp)r->arg.red.op;
  int64_t n = lane_count(&un);
  UOp *acc = NULL;
  for (int64_t l = 0; l < n; l++) {
    UOp *v = padded_lane(r->src[0], op, &un, l);
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

/* ---- vector accumulators (not tinygrad's: tinygrad devectorizes accumulators and leaves the regrouping to the C
 * compiler, whose SLP vectorizer only finds it when the lanes are stored contiguously) ----
 *
 * The lanes of a REDUCE along a vector axis become one REDUCE of a lane STACK (a vector accumulator, in chunks of at
 * most one vector register), read back lane by lane through INDEX(reduce, lane). The vector axis is one upcast range,
 * or several that together count elements in mixed radix (UPCAST 2 then UPCAST 14 of one 28-wide axis: the inner
 * range steps by 1, the outer by 2), picked by how the reduce body reads memory along it: every load either does not
 * depend on it (a broadcast) or steps through consecutive elements (a vector load), and at least one does. A load that
 * steps otherwise (a gather) or whose gate depends on it rules it out. cg_vectorize later turns the lane STACKs into
 * vector ALU ops and vector loads. VECTOR_ACC=0 turns it off. */

#define VEC_AXIS_MAX 8
typedef struct VecAxis {
  size_t n;                       /* 0: no vector axis */
  size_t pos[VEC_AXIS_MAX];       /* the ranges' positions in `up`, the one that steps by 1 first */
  int64_t extent[VEC_AXIS_MAX];
  int64_t total;                  /* lanes along the axis */
} VecAxis;

/* the coefficient of v in idx when idx is a sum of terms linear in v; false when v sits inside another term */
static bool linear_coef_of(UOp *idx, const UOp *v, int64_t *coef) {
  UOpVec terms = {0};
  uop_split(idx, TG_OP_ADD, &terms);
  bool ok = true;
  *coef = 0;
  for (size_t i = 0; i < terms.len && ok; i++) {
    UOp *t = terms.data[i];
    if (t == v) { *coef += 1; continue; }
    if (t->op == TG_OP_MUL && t->nsrc == 2) {
      UOp *a = t->src[0], *b = t->src[1];
      if (b == v) { UOp *x = a; a = b; b = x; }
      if (a == v && b->op == TG_OP_CONST && b->arg.c.kind == CK_INT) { *coef += b->arg.c.i; continue; }
    }
    ok = !uop_in_backward_slice(t, v);
  }
  tg_vec_free(&terms);
  return ok;
}

/* The loads of a reduce body with their coefficients along each upcast range (INT64_MIN: not linear, or gated by it) */
typedef struct BodyLoads {
  size_t n, nup;
  int64_t *coef; /* load i, range k at [i * nup + k] */
  bool *byte;    /* load i reads 8-bit integers */
} BodyLoads;

static void body_loads(UOp *body, const UOpVec *up, BodyLoads *bl) {
  UOpVec topo = {0};
  uop_toposort(body, NULL, NULL, &topo);
  bl->n = 0, bl->nup = up->len;
  bl->coef = tg_malloc((topo.len * up->len + 1) * sizeof(int64_t));
  bl->byte = tg_malloc((topo.len + 1) * sizeof(bool));
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2) continue;
    const DType *bd = u->src[0]->dtype->base;
    bl->byte[bl->n] = bd->bitsize == 8 && (bd->kind == DTK_UINT || bd->kind == DTK_SINT);
    int64_t *c = bl->coef + bl->n++ * up->len;
    UOp *idx = u->src[1], *valid = NULL;
    if (idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2])) valid = idx->src[0], idx = idx->src[1];
    for (size_t k = 0; k < up->len; k++)
      if (u->nsrc != 2 || (valid && uop_in_backward_slice(valid, up->data[k])) || !linear_coef_of(idx, up->data[k], &c[k]))
        c[k] = INT64_MIN;
  }
  tg_vec_free(&topo);
}

/* the vector axis grown from range `seed`: the ranges that continue seed's run of elements in load `at`, checked
 * against every load; the number of loads that step through it (0 with a->n = 0 when a load rules it out) */
static int grow_vector_axis(const BodyLoads *bl, const UOpVec *up, AxisType t, size_t at, size_t seed, bool dot4,
                            VecAxis *a) {
  const int64_t *c = bl->coef + at * bl->nup;
  a->n = 0, a->total = 1;
  size_t k = seed;
  for (;;) {
    a->pos[a->n] = k;
    a->extent[a->n] = (int64_t)uop_vmax(up->data[k]) + 1;
    a->total *= a->extent[a->n++];
    if (a->n == VEC_AXIS_MAX) break;
    size_t next = bl->nup;
    for (size_t j = 0; j < bl->nup && next == bl->nup; j++)
      if (c[j] == a->total && cg_axis_type(up->data[j]) == t) next = j;
    if (next == bl->nup) break;
    k = next;
  }
  int contiguous = 0;
  for (size_t i = 0; i < bl->n; i++) {
    const int64_t *ci = bl->coef + i * bl->nup;
    bool zero = true, run = true;
    int64_t step = 1;
    for (size_t m = 0; m < a->n; m++) {
      zero &= ci[a->pos[m]] == 0;
      run &= ci[a->pos[m]] == step;
      step *= a->extent[m];
    }
    /* with dot4 the byte loads are the operands of int8 dot lanes, which cg_vectorize packs into vectors itself
     * (each lane reads 4 consecutive bytes per step), so they need not step by one along the axis; nor a per-block
     * value (a scale) that is the same for the lanes of one block (the axis' first range) */
    bool quad = dot4 && (bl->byte[i] || ci[a->pos[0]] == 0);
    if (!zero && !run && !quad) { a->n = 0; return 0; }
    contiguous += run;
  }
  return contiguous;
}

/* The vector axis of r's lanes over ranges of type t among up (a->n = 0: none). Of the axes that qualify, the one most
 * loads step through, then the longest. A REDUCE that already sums a vector (its UNROLL lanes) has none. */
static void vector_axis_of(const ExpandCtx *c, UOp *r, const UOpVec *up, AxisType t, VecAxis *best) {
  best->n = 0;
  if (c->vector_lanes < 2 || r->dtype != DT_FLOAT32 || r->arg.kind != ARG_REDUCE || r->arg.red.op != TG_OP_ADD ||
      r->arg.red.naxes != 0 || r->nsrc < 2 || (r->src[0]->op == TG_OP_STACK && r->src[0]->tag == CG_TAG_VECTOR_LANES))
    return;
  BodyLoads bl;
  body_loads(r->src[0], up, &bl);
  bool dot4 = c->dot_u8i8 && cg_has_int8_dot(r->src[0]);
  int best_contiguous = 0;
  for (size_t i = 0; i < bl.n; i++)
    for (size_t k = 0; k < up->len; k++) {
      if (bl.coef[i * bl.nup + k] != 1 || cg_axis_type(up->data[k]) != t) continue;
      VecAxis a;
      int contiguous = grow_vector_axis(&bl, up, t, i, k, dot4, &a);
      if (a.n && a.total >= 2 && (contiguous > best_contiguous || (contiguous == best_contiguous && a.total > best->total)))
        *best = a, best_contiguous = contiguous;
    }
  tg_free(bl.coef);
  tg_free(bl.byte);
}

/* the chunk of [0, n) that d falls in: the largest power of two <= lanes first, then smaller ones */
static void lane_chunk(int64_t n, int lanes, int64_t d, int64_t *start, int64_t *len) {
  int64_t s = 0;
  for (;;) {
    int64_t w = lanes;
    while (w > n - s) w /= 2;
    if (d < s + w) { *start = s, *len = w; return; }
    s += w;
  }
}

/* the stride of range k's digit in a lane number over rs (first range slowest) */
static int64_t digit_stride(const UOpVec *rs, size_t k) {
  int64_t stride = 1;
  for (size_t i = rs->len; i-- > k + 1;) stride *= (int64_t)(uop_vmax(rs->data[i]) + 1);
  return stride;
}

/* the position of lane `lane` along the vector axis */
static int64_t axis_digit(const UOpVec *up, const VecAxis *a, int64_t lane) {
  int64_t d = 0, step = 1;
  for (size_t m = 0; m < a->n; m++) {
    d += (lane / digit_stride(up, a->pos[m])) % a->extent[m] * step;
    step *= a->extent[m];
  }
  return d;
}

/* lane with its position along the vector axis set to d */
static int64_t lane_at_axis(const UOpVec *up, const VecAxis *a, int64_t lane, int64_t d) {
  for (size_t m = 0; m < a->n; m++) {
    int64_t st = digit_stride(up, a->pos[m]), old = (lane / st) % a->extent[m];
    lane += (d % a->extent[m] - old) * st;
    d /= a->extent[m];
  }
  return lane;
}

/* The value of lane `lane` of REDUCE r: a REDUCE of its own (tagged as a lane), or a lane of the vector REDUCE over
 * the chunk of the vector axis it falls in. */
static UOp *reduce_at_lane(const ExpandCtx *c, UOp *r, const UOpVec *up, const VecAxis *a, int64_t lane) {
  UOp *rl = at_lane(r, up, lane);
  if (rl->op != TG_OP_REDUCE) return rl;
  int64_t d = 0, start = 0, len = 1;
  if (a->n) {
    d = axis_digit(up, a, lane);
    lane_chunk(a->total, c->vector_lanes, d, &start, &len);
  }
  if (len < 2) return uop_with_tag(rl, EXPAND_TAG_LANE);
  UOp *xs[64];
  for (int64_t j = 0; j < len; j++) {
    UOp *lj = at_lane(r, up, lane_at_axis(up, a, lane, start + j));
    if (lj->op != TG_OP_REDUCE || lj->nsrc != rl->nsrc) return uop_with_tag(rl, EXPAND_TAG_LANE);
    for (uint32_t s = 1; s < rl->nsrc; s++)
      if (lj->src[s] != rl->src[s]) return uop_with_tag(rl, EXPAND_TAG_LANE); /* lanes loop over other ranges */
    xs[j] = lj->src[0];
  }
  UOp **src = tg_malloc(rl->nsrc * sizeof(UOp *));
  memcpy(src, rl->src, rl->nsrc * sizeof(UOp *));
  src[0] = uop_new_tagged(TG_OP_STACK, rl->dtype, xs, (size_t)len, arg_none(), CG_TAG_VECTOR_LANES);
  UOp *vred = uop_new_tagged(TG_OP_REDUCE, rl->dtype, src, rl->nsrc, rl->arg, EXPAND_TAG_LANE);
  tg_free(src);
  UOp *ix[2] = {vred, uop_const_int(DT_WEAKINT, d - start)};
  return uop_new(TG_OP_INDEX, rl->dtype, ix, 2, arg_none());
}

/* A REDUCE over UNROLL ranges un (and the loop ranges keep[1:]) whose lanes sum along a vector axis: one vector REDUCE
 * per chunk of the axis, each lane of it the left fold of the other UNROLL lanes at that position, and after the loop
 * the lanes of every chunk added up in order. NULL when the lanes have no vector axis. The sum runs in another order
 * than tinygrad's (lanes of one step first); float results differ by rounding only. */
static UOp *expand_reduce_vector(const ExpandCtx *c, UOp *r, const UOpVec *un, const UOpVec *keep) {
  VecAxis a;
  vector_axis_of(c, r, un, AXIS_UNROLL, &a);
  if (!a.n) return NULL;
  TgOp op = (TgOp)r->arg.red.op;
  int64_t n = lane_count(un);
  UOp **xs = tg_calloc((size_t)a.total, sizeof(UOp *));
  for (int64_t l = 0; l < n; l++) {
    int64_t d = axis_digit(un, &a, l);
    UOp *v = padded_lane(r->src[0], op, un, l);
    xs[d] = xs[d] ? uop_alu2(op, xs[d], v) : v;
  }
  UOp **src = tg_malloc(keep->len * sizeof(UOp *)), *total = NULL;
  memcpy(src, keep->data, keep->len * sizeof(UOp *));
  for (int64_t start = 0; start < a.total;) {
    int64_t s0, len;
    lane_chunk(a.total, c->vector_lanes, start, &s0, &len);
    UOp *vred = NULL;
    if (len > 1) {
      src[0] = uop_new_tagged(TG_OP_STACK, r->dtype, xs + start, (size_t)len, arg_none(), CG_TAG_VECTOR_LANES);
      vred = uop_new(TG_OP_REDUCE, r->dtype, src, keep->len, r->arg);
    }
    for (int64_t j = 0; j < len; j++) {
      UOp *lane_sum;
      if (vred) {
        UOp *ix[2] = {vred, uop_const_int(DT_WEAKINT, j)};
        lane_sum = uop_new(TG_OP_INDEX, r->dtype, ix, 2, arg_none());
      } else {
        src[0] = xs[start];
        lane_sum = uop_new(TG_OP_REDUCE, r->dtype, src, keep->len, r->arg);
      }
      total = total ? uop_alu2(op, total, lane_sum) : lane_sum;
    }
    start += len;
  }
  tg_free(src);
  tg_free(xs);
  return uop_cast(total, r->dtype);
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
  VecAxis *vaxis = tg_malloc((reds.len + 1) * sizeof(VecAxis));
  bool *nests = tg_calloc(reds.len + 1, sizeof(bool)); /* holds an earlier (inner) REDUCE of reds */
  for (size_t k = 0; k < reds.len; k++) {
    vector_axis_of(c, reds.data[k], &up, AXIS_UPCAST, &vaxis[k]);
    for (size_t j = 0; j < k && !nests[k]; j++) nests[k] = uop_in_backward_slice(reds.data[k], reds.data[j]);
  }
  for (int64_t l = 0; l < n; l++) {
    UOp *body = at_lane(e->src[0], &up, l);
    if (reds.len) {
      UOpVec from = {0}, to = {0};
      /* reds is in topological order: a REDUCE nested in another (a conv's sum inside the max of the pool fused
       * after it) comes first, and the outer one's lane gets the inner one's lane value (a vector accumulator's
       * lane) too; substituted only at the top, the outer lane would keep the inner REDUCE as a scalar lane.
       * beautiful_mnist's eval conv2 + relu + BatchNorm + pool, 500 images: 99 -> 43 ms */
      for (size_t k = 0; k < reds.len; k++) {
        tg_vec_push(&from, at_lane(reds.data[k], &up, l));
        UOp *lane_red = reduce_at_lane(c, reds.data[k], &up, &vaxis[k], l);
        if (nests[k]) lane_red = uop_substitute(lane_red, from.data, to.data, k);
        tg_vec_push(&to, lane_red);
      }
      body = uop_substitute(body, from.data, to.data, from.len);
      tg_vec_free(&from); tg_vec_free(&to);
    }
    tg_vec_push(&lanes, body);
  }
  tg_vec_free(&topo); tg_vec_free(&reds); tg_free(vaxis); tg_free(nests);
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

static UOp *fold_wmma_add(RwCtx *rw, UOp *u, UOp **m);
static const Rule lane_fold_rules[] = {
    RULE("r:REDUCE", fold_constant_lane, NULL),
    RULE("x:ADD", fold_wmma_add, NULL),
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

/* ---- tensor cores (tinygrad expand_wmma) ----
 * A WMMA from opt_tc.c reads its operands in terms of the TC's UPCAST/UNROLL bits. Before the lanes are made, each
 * operand is contracted along its axes into one fragment (a STACK; the first axis varies slowest), the WMMA becomes
 * one warp-wide op over fragments, and what used to be the WMMA (or the REDUCE around it) is read back lane by lane:
 * INDEX(fragment-valued result, the C axes' digits), which the lanes of the END then fold to a constant lane. The
 * REDUCE around a WMMA gets a fragment-wide register accumulator (cg_lower.c feeds it back as the WMMA's C). */

static UOp *range_with_id(const UOpVec *topo, int64_t id) {
  for (size_t i = 0; i < topo->len; i++)
    if (is_expand_range(topo->data[i]) && topo->data[i]->arg.range->axis_id == id) return topo->data[i];
  return NULL;
}

/* the axes pairs (id, size) of operand k of an uncontracted WMMA arg */
static const int64_t *wmma_axes(const UOp *w, int k, int *n) {
  const int64_t *a = w->arg.ints;
  int off = 9;
  for (int i = 0; i < k; i++) off += 2 * (int)a[6 + i];
  *n = (int)a[6 + k];
  return a + off;
}

/* x along the axes (size 2 ones; size 1: an axis x does not read) as a STACK, first axis slowest; *index gets the
 * lane the current digits of those axes select. An A or B operand (`summed`) is multiplied and added up by the tensor
 * core, so its padding lanes (a PADTO'd reduce axis) read 0, as a reduce's do. */
static UOp *contract(UOp *x, const int64_t *axes, int n, const UOpVec *topo, bool summed, UOp **index) {
  UOpVec rs = {0};
  UOp *at[16];
  int64_t lanes = 1;
  for (int i = 0; i < n; i++)
    if (axes[2 * i + 1] > 1) lanes *= axes[2 * i + 1];
  UOp *idx = uop_const_int(DT_WEAKINT, 0);
  for (int i = 0; i < n; i++) {
    if (axes[2 * i + 1] <= 1) continue;
    UOp *r = range_with_id(topo, axes[2 * i]);
    UOp *digit = r ? uop_cast(r, DT_WEAKINT) : uop_const_int(DT_WEAKINT, 0);
    idx = uop_add(uop_mul(idx, uop_const_int(DT_WEAKINT, axes[2 * i + 1])), digit);
    if (r) tg_vec_push(&rs, r);
    else tg_vec_push(&rs, uop_range(uop_const_int(DT_WEAKINT, axes[2 * i + 1]), -2, AXIS_UPCAST)); /* read by no one */
  }
  for (int64_t l = 0; l < lanes && l < 16; l++) at[l] = summed ? padded_lane(x, TG_OP_ADD, &rs, l) : at_lane(x, &rs, l);
  tg_vec_free(&rs);
  if (index) *index = idx;
  return lanes == 1 ? at[0] : uop_new(TG_OP_STACK, x->dtype, at, (size_t)lanes, arg_none());
}

static UOp *wmma_contracted(UOp *w, const UOpVec *topo, UOp **lane_index) {
  int n[3];
  const int64_t *ax[3];
  for (int k = 0; k < 3; k++) ax[k] = wmma_axes(w, k, &n[k]);
  UOp *src[3];
  for (int k = 0; k < 3; k++) src[k] = contract(w->src[k], ax[k], n[k], topo, k < 2, k == 2 ? lane_index : NULL);
  int64_t arg[9];
  memcpy(arg, w->arg.ints, 6 * sizeof(int64_t));
  arg[6] = arg[7] = arg[8] = 0;
  return uop_new(TG_OP_WMMA, w->dtype, src, 3, arg_ints(ARG_WMMA, arg, 9));
}

static bool all_zero(const UOp *c) {
  if (c->op == TG_OP_CONST) return c->arg.c.kind == CK_FLOAT ? c->arg.c.f == 0.0 : c->arg.c.kind == CK_INT && c->arg.c.i == 0;
  if (c->op != TG_OP_STACK) return false;
  for (uint32_t i = 0; i < c->nsrc; i++)
    if (!all_zero(c->src[i])) return false;
  return true;
}

UOp *cg_wmma_fold_add(UOp *w, UOp *x) {
  if (w->op != TG_OP_WMMA || w->arg.kind != ARG_WMMA || w->arg.len != 9 || !all_zero(w->src[2])) return NULL;
  if (x->dtype != w->dtype) return NULL;
  UOp *src[3] = {w->src[0], w->src[1], x};
  return uop_new(TG_OP_WMMA, w->dtype, src, 3, w->arg);
}

/* WMMA(a, b, 0) + x -> WMMA(a, b, x), either order (x a fragment: a sum of unrolled WMMAs folds into a chain) */
static UOp *fold_wmma_add(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (u->nsrc != 2) return NULL;
  UOp *f = cg_wmma_fold_add(u->src[1], u->src[0]);
  return f ? f : cg_wmma_fold_add(u->src[0], u->src[1]);
}

static bool wmma_uncontracted(const UOp *u) {
  return u->op == TG_OP_WMMA && u->arg.kind == ARG_WMMA && u->arg.len > 9;
}

static UOp *expand_wmmas(UOp *sink) {
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    bool red = u->op == TG_OP_REDUCE && u->nsrc >= 1 && wmma_uncontracted(u->src[0]);
    if (!red && !wmma_uncontracted(u)) continue;
    UOp *idx = NULL, *w = wmma_contracted(red ? u->src[0] : u, &topo, &idx), *v = w;
    if (red) {
      UOp **rs = tg_malloc(u->nsrc * sizeof(UOp *));
      memcpy(rs, u->src, u->nsrc * sizeof(UOp *));
      rs[0] = w;
      v = uop_new(TG_OP_REDUCE, u->dtype, rs, u->nsrc, u->arg);
      tg_free(rs);
    }
    UOp *isrc[2] = {v, idx};
    tg_vec_push(&from, u);
    tg_vec_push(&to, uop_new(TG_OP_INDEX, u->dtype, isrc, 2, arg_none()));
  }
  UOp *ret = from.len ? uop_substitute(sink, from.data, to.data, from.len) : sink;
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

UOp *cg_expand(UOp *sink, const Renderer *ren) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("expander", expand_rules);
  ExpandCtx c = {0};
  if (ren->supports_float4 && !ren->has_local && tg_getenv_int("VECTOR_ACC", 1))
    c.vector_lanes = (int)TG_MIN(64, TG_MAX(4, ren->vector_bytes / 4));
  c.dot_u8i8 = ren->dot_u8i8;
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (is_expand_range(topo.data[i])) tg_vec_push(&c.order, topo.data[i]);
  tg_vec_free(&topo);
  sink = expand_wmmas(sink);
  UOp *ret = sink;
  if (c.order.len) {
    /* no symbolic pass here: it could drop a range from one lane's REDUCE and not another's, and the lanes of one
     * REDUCE must end their loops together (merge_reduce_ends); the passes after reduce lowering fold the lanes */
    ret = pm_graph_rewrite(sink, pm, &c, 0, NULL, "expander");
    static const RuleSet *lane_fold;
    if (!lane_fold) lane_fold = pm_concat(sym_symbolic(), pm_lane_fold());
    if (ret) ret = pm_graph_rewrite(ret, lane_fold, NULL, 0, NULL, "expander symbolic");
    if (ret) {
      /* every UPCAST/UNROLL range must be gone: one left means a shape this expander does not handle */
      UOpVec t2 = {0};
      uop_toposort(ret, NULL, NULL, &t2);
      for (size_t i = 0; i < t2.len && ret; i++)
        if (is_expand_range(t2.data[i])) {
          tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: an %s range outside END/REDUCE not supported yet",
                       uop_axis_type_name(cg_axis_type(t2.data[i])));
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
