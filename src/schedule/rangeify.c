/* rangeify.c — movement ops become index math (tinygrad schedule/indexing.py run_rangeify and apply_movement_op).
 *
 * Walk the graph consumers-first. Each node gets (input ranges, output ranges): RANGE UOps or index expressions of
 * them, possibly gated as WHERE(valid, idx, Invalid). A node in the realize map gets fresh output ranges (a kernel
 * boundary); one consumer: it inherits the consumer's; several: they merge when every consumer indexes it the same
 * way, else the node is realized. "Ending ranges" realize elementwise/reduce nodes whose consumers iterate ranges
 * they do not (a REDUCE consumed under a broadcast: softmax's 3 kernels in tinygrad), unless the row rule below keeps
 * them in their consumer's kernel. Then pm_apply_rangeify rewrites: buffers get INDEX(buf, ranges), REDUCE gets its
 * RANGE sources, PAD becomes WHERE(valid, x, 0), realized nodes become STAGE(x, closed ranges).INDEX(consumer
 * ranges), movement ops disappear. */
#include "schedule/sched_internal.h"

#include "uop/symbolic.h"

#include <stdio.h>
/* ---------------------------------------------------------------------------------------------------------------
 * apply_movement_op: the index expressions of a movement op's input, given its output's. */

static UOp *simplify_with(UOp *u, const RuleSet *pm, const char *name) {
  UOp *r = pm_graph_rewrite(u, pm, NULL, 0, NULL, name);
  return r ? r : u;
}

static const RuleSet *pad_pm(void) {
  static const RuleSet *pm;
  if (!pm) pm = pm_concat(sym_symbolic(), sym_simplify_valid());
  return pm;
}

static void split_and(UOp *u, UOpVec *out) {
  if (u->op == TG_OP_AND) {
    for (uint32_t i = 0; i < u->nsrc; i++) split_and(u->src[i], out);
  } else {
    tg_vec_push(out, u);
  }
}

/* pm_drop_and_clauses: in cond.where(x, Invalid), clauses about ranges x does not use say nothing about x: drop them */
static UOp *drop_and_clauses(RwCtx *rw, UOp *w, UOp **m) {
  TG_UNUSED(rw);
  UOp *cond = m[0], *x = m[1];
  UOpVec clauses = {0}, xr = {0}, cr = {0};
  split_and(cond, &clauses);
  sched_ranges(x, &xr);
  UOp *keep = uop_const_bool(true);
  bool dropped = false;
  for (size_t i = 0; i < clauses.len; i++) {
    sched_ranges(clauses.data[i], &cr);
    bool used = false;
    for (size_t j = 0; j < cr.len && !used; j++)
      for (size_t k = 0; k < xr.len && !used; k++) used = cr.data[j] == xr.data[k];
    if (used) keep = uop_and(keep, clauses.data[i]);
    else dropped = true;
  }
  tg_vec_free(&clauses);
  tg_vec_free(&xr);
  tg_vec_free(&cr);
  return dropped ? uop_where(keep, x, w->src[2]) : NULL;
}

static const Rule drop_and_rules[] = {RULE("(WHERE cond x invalid)", drop_and_clauses, NULL)};

static const RuleSet *reshape_pm(void) {
  static const RuleSet *pm;
  static RuleSet *drop; /* kept in a static: the concatenation does not own its parts */
  if (!drop) drop = PM_NEW("drop and clauses", drop_and_rules);
  if (!pm) pm = pm_concat(pad_pm(), drop);
  return pm;
}

UOp *sched_apply_reshape(const Shape *in_shape, const Shape *out_shape, UOp *const *rngs, size_t nr, UOp **out) {
  TG_ASSERT((int)nr == out_shape->ndim, "");
  UOp *combined = sched_weak_int(0);
  int64_t acc = 1;
  for (size_t k = nr; k-- > 0;) {
    combined = uop_add(combined, uop_mul(sched_weak_int(acc), rngs[k]));
    acc *= out_shape->d[k];
  }
  UOp *axes[TG_MAX_DIMS];
  for (int k = in_shape->ndim; k-- > 0;) {
    axes[k] = uop_mod(combined, sched_weak_int(in_shape->d[k]));
    combined = uop_idiv(combined, sched_weak_int(in_shape->d[k]));
  }
  UOp *sink = simplify_with(uop_sink(axes, (size_t)in_shape->ndim), reshape_pm(), "reshape");
  for (uint32_t k = 0; k < sink->nsrc; k++) out[k] = sink->src[k];
  return sink;
}


/* A reshape with symbolic sizes keeps each one as an axis, in order, with the same product of concrete sizes between
 * them (the shape rule): each concrete segment reshapes on its own, the symbolic axes map one to one. */
static bool reshape_segments(const SymShape *in, const SymShape *to, UOp *const *rngs, UOp **out) {
  int i = 0, k = 0;
  for (;;) {
    int i0 = i, k0 = k;
    while (i < in->max.ndim && !in->sym[i]) i++;
    while (k < to->max.ndim && !to->sym[k]) k++;
    Shape si = {i - i0, {0}}, sk = {k - k0, {0}};
    for (int x = i0; x < i; x++) si.d[x - i0] = in->max.d[x];
    for (int x = k0; x < k; x++) sk.d[x - k0] = to->max.d[x];
    if (shape_numel(&si) != shape_numel(&sk)) return false;
    if (si.ndim) sched_apply_reshape(&si, &sk, rngs + k0, (size_t)sk.ndim, out + i0);
    if (i == in->max.ndim || k == to->max.ndim) return i == in->max.ndim && k == to->max.ndim;
    if (in->sym[i] != to->sym[k]) return false;
    out[i++] = rngs[k++];
  }
}

bool sched_apply_movement(UOp *x, const SymShape *in_sym, UOp *const *rngs, size_t nr, UOp **out, size_t *nout) {
  SymShape as, bs;
  if (!uop_marg_pair_sym(x, &as, &bs)) return false;
  const Shape *in_shape = &in_sym->max;
  Shape a = as.max;
  switch (uop_op(x)) {
  case TG_OP_SHRINK:
    for (size_t i = 0; i < nr; i++)
      out[i] = as.sym[i] ? uop_add(rngs[i], as.sym[i]) : a.d[i] == 0 ? rngs[i] : uop_add(rngs[i], sched_weak_int(a.d[i]));
    *nout = nr;
    return true;
  case TG_OP_PERMUTE:
    for (size_t i = 0; i < nr; i++)
      for (size_t j = 0; j < nr; j++)
        if (a.d[j] == (int64_t)i) out[i] = rngs[j];
    *nout = nr;
    return true;
  case TG_OP_FLIP:
    for (size_t i = 0; i < nr; i++) {
      UOp *last = in_sym->sym[i] ? uop_add(in_sym->sym[i], sched_weak_int(-1)) : sched_weak_int(in_shape->d[i] - 1);
      out[i] = a.d[i] ? uop_add(last, uop_neg(rngs[i])) : rngs[i];
    }
    *nout = nr;
    return true;
  case TG_OP_EXPAND:
    for (size_t i = (size_t)a.ndim; i < nr; i++) out[i - (size_t)a.ndim] = rngs[i];
    *nout = nr - (size_t)a.ndim;
    return true;
  case TG_OP_PAD:
    for (size_t i = 0; i < nr; i++) {
      UOp *off = shape_sym_dim(&as, (int)i), *sh = shape_sym_dim(in_sym, (int)i), *sz = shape_sym_dim(&bs, (int)i);
      if (sz == sh && off->op == TG_OP_CONST && off->arg.c.i == 0) { out[i] = rngs[i]; continue; }
      UOp *cond = uop_and(uop_not(uop_lt(rngs[i], off)), uop_lt(rngs[i], uop_add(sh, off)));
      cond = simplify_with(cond, pad_pm(), "pad");
      out[i] = uop_where(cond, uop_sub(rngs[i], off), uop_invalid());
    }
    *nout = nr;
    return true;
  case TG_OP_RESHAPE:
    if (shape_sym_is_symbolic(in_sym) || shape_sym_is_symbolic(&as)) {
      if (!reshape_segments(in_sym, &as, rngs, out)) return false;
      *nout = (size_t)in_sym->max.ndim;
      return true;
    }
    break;
  default: return false;
  }
  { /* a concrete reshape: the flat index of the output ranges, split by the input sizes */
    UOp *sink = uop_simplify(uop_sink(rngs, nr));
    UOpVec rs = {0};
    sched_ranges(sink, &rs);
    UOpVec ph = {0};
    for (size_t i = 0; i < rs.len; i++) {
      RangeArg ra;
      memset(&ra, 0, sizeof ra);
      ra.axis_id = (int64_t)i;
      ra.axis_type = AXIS_PLACEHOLDER;
      UOp *end = rs.data[i]->src[0];
      tg_vec_push(&ph, uop_new(TG_OP_RANGE, rs.data[i]->dtype, &end, 1, arg_range(&ra)));
    }
    UOp *sub = uop_substitute(sink, rs.data, ph.data, rs.len);
    UOp *tmp[TG_MAX_DIMS];
    UOp *res = sched_apply_reshape(in_shape, &a, sub->src, sub->nsrc, tmp);
    res = uop_substitute(res, ph.data, rs.data, rs.len);
    for (uint32_t k = 0; k < res->nsrc; k++) out[k] = res->src[k];
    *nout = res->nsrc;
    tg_vec_free(&rs);
    tg_vec_free(&ph);
    return true;
  }
}

/* ---------------------------------------------------------------------------------------------------------------
 * run_rangeify */

typedef struct RangeEntry { size_t nin, nout; UOp *in[SCHED_MAX_IDX], *out[SCHED_MAX_IDX]; } RangeEntry;
typedef struct RealizeEntry { bool listed, row; int n; int axes[SCHED_MAX_IDX]; } RealizeEntry;

typedef struct IndexingCtx {
  UOpMap realize;    /* node -> RealizeEntry* */
  UOpMap range_map;  /* node -> RangeEntry* */
  UOpMap ending;     /* node -> UOpVec* (ending ranges) */
  int64_t range_idx;
  TG_VEC(void *) allocs;
  TG_VEC(UOpVec *) vecs; /* ending-range lists, whose buffers are freed with the context */
  ShapeCache shapes;
  const char *sink_device;
  bool failed;
} IndexingCtx;

static void *ictx_alloc(IndexingCtx *c, size_t n) {
  void *p = tg_calloc(1, n);
  tg_vec_push(&c->allocs, p);
  return p;
}

static RealizeEntry *realize_get(IndexingCtx *c, const UOp *u) {
  void **p = uopmap_get(&c->realize, u);
  return p ? *p : NULL;
}

static void realize_add(IndexingCtx *c, UOp *u) {
  if (!realize_get(c, u)) uopmap_put(&c->realize, u, ictx_alloc(c, sizeof(RealizeEntry)));
}

static RangeEntry *range_get(IndexingCtx *c, const UOp *u) {
  void **p = uopmap_get(&c->range_map, u);
  return p ? *p : NULL;
}

/* a range over size i of s (a symbolic size: a range ending at its expression) */
static UOp *new_range(IndexingCtx *c, const SymShape *s, int i, AxisType t) {
  if (!s->sym[i] && s->max.d[i] == 1) return sched_weak_int(0);
  return uop_range(s->sym[i] ? s->sym[i] : sched_weak_int(s->max.d[i]), c->range_idx++, t);
}

static bool is_invalid_where(const UOp *r) { return r->op == TG_OP_WHERE && uop_is_invalid(r->src[2]); }
static UOp *get_idx(UOp *r) { return is_invalid_where(r) ? r->src[1] : r; }
static UOp *get_valid(UOp *r) { return is_invalid_where(r) ? r->src[0] : uop_const_bool(!uop_is_invalid(r)); }

/* tinygrad data_srcs: the sources that carry data (not shapes, not ranges) */
static size_t data_src_count(const UOp *u) {
  switch (uop_op(u)) {
  case TG_OP_PARAM: case TG_OP_BUFFER: case TG_OP_RANGE: case TG_OP_SPECIAL: return 0;
  case TG_OP_STORE: return uop_is_variable(u->src[0]) ? 0 : u->nsrc;
  case TG_OP_INDEX: case TG_OP_STAGE: case TG_OP_REDUCE: case TG_OP_AFTER: case TG_OP_END: return TG_MIN(u->nsrc, 1u);
  default: return op_has(uop_op(u), OPP_MOVEMENT) ? 1 : u->nsrc;
  }
}

static bool is_broadcastable(const UOp *u) { return op_has(uop_op(u), OPP_BINARY | OPP_TERNARY); }

/* out axes of out_shape that src_shape is broadcast along */
static bool size_one(const SymShape *s, int i) { return !s->sym[i] && s->max.d[i] == 1; }

static int broadcast_axes(const SymShape *src, const SymShape *out, int *axes) {
  int n = 0, nleft = out->max.ndim - src->max.ndim;
  for (int i = 0; i < nleft; i++) axes[n++] = i;
  for (int i = 0; i < src->max.ndim; i++)
    if (size_one(src, i) && !size_one(out, nleft + i)) axes[n++] = nleft + i;
  return n;
}

static bool shape_or_fail(IndexingCtx *c, UOp *u, SymShape *s) {
  if (uop_shape_sym_cached(u, &c->shapes, s) == SHAPE_OK) return true;
  c->failed = true;
  return false;
}

/* consumer c's input ranges as seen by its source x (broadcast axes become 0, missing leading axes dropped) */
static size_t broadcast_rngs(IndexingCtx *c, UOp *consumer, UOp *x, UOp *const *rngs, size_t n, UOp **out) {
  if (!is_broadcastable(consumer)) {
    for (size_t i = 0; i < n; i++) out[i] = rngs[i];
    return n;
  }
  SymShape xs, cs;
  if (!shape_or_fail(c, x, &xs) || !shape_or_fail(c, consumer, &cs)) return 0;
  int axes[SCHED_MAX_IDX];
  int na = broadcast_axes(&xs, &cs, axes), nleft = cs.max.ndim - xs.max.ndim;
  size_t k = 0;
  for (size_t j = (size_t)nleft; j < n; j++) {
    bool b = false;
    for (int a = 0; a < na; a++) b |= axes[a] == (int)j;
    out[k++] = b ? uop_const_like_int(rngs[j], 0) : rngs[j];
  }
  return k;
}

static UOpVec *ending_of(IndexingCtx *c, const UOp *u) {
  void **p = uopmap_get(&c->ending, u);
  return p ? *p : NULL;
}

static void ranges_of_exprs(UOp *const *e, size_t n, UOpVec *out) {
  out->len = 0;
  if (n == 0) return;
  sched_ranges(uop_sink(e, n), out);
}

static bool axis_in(const RealizeEntry *re, int i) {
  for (int k = 0; k < re->n; k++)
    if (re->axes[k] == i) return true;
  return false;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The row rule (FUSE_ROWS; tinygrad's PCONTIG>=2 idea, without its LOCAL buffers). A node below ended ranges (a
 * REDUCE consumed through a broadcast: softmax's max and sum, layernorm's mean and variance) is realized so that its
 * consumers do not recompute it for every element of the broadcast axes. That is needed only when the node's ranges
 * are nested inside the ended ones: when every range it depends on is older (an outer loop: a kernel's loops open in
 * range order) than every ended range, it is computed once per iteration of its own ranges, in front of the
 * consumer's loop over the ended ranges, in the same kernel. softmax(-1) over (rows, n) becomes one kernel: per row
 * the max loop, the sum-of-exp loop and the store loop, the row read from memory once and re-read from cache.
 * An elementwise node (log_softmax's log of the sum) passes the ended ranges on to the reduce below it, which decides.
 *
 * A row may have a Variable's length (decode attention over start_pos + 1 keys): its bound counts.
 * The cost rule, for the REDUCE: it reads at most FUSE_ROWS elements per output (default 16384 = 64 KiB of float32:
 * the row stays in the core's L2 between the loops), and its consumer iterates no more elements per row than that
 * (the broadcast is the row itself: attention's softmax, consumed by the matmul with v, iterates rows x head dim and
 * stays realized); the row is one axis that the reduce reduces whole; the device's renderer must run such a row
 * well (sched_device_row_fuse: the CPU, a core per row; a GPU with shared memory, the row on one block's threads,
 * codegen's gpu_row_kernel). FUSE_ROWS=0 turns the rule off (tinygrad's schedule: softmax is 3 kernels).
 * kernelize.c's remove_bufferize has the second half: a row stage (realized for its several consumers only) is
 * recomputed with its row reductions. */

static int64_t fuse_rows_max(void) { return tg_getenv_int("FUSE_ROWS", 16384); }

static int row_device(IndexingCtx *c, UOp *x) {
  const char *dev = sched_device(x);
  if (!dev) dev = c->sink_device;
  return sched_device_row_fuse(dev);
}
static bool row_device_ok(IndexingCtx *c, UOp *x) { return row_device(c, x) != 0; }

static bool row_fuse_keeps(IndexingCtx *c, UOp *x, const UOpVec *ending, UOp *const *outr, size_t nout) {
  int64_t lim = fuse_rows_max();
  if (lim <= 0) return false;
  int64_t min_end = INT64_MAX, row = 1;
  for (size_t j = 0; j < ending->len; j++) {
    UOp *e = ending->data[j];
    if (e->op != TG_OP_RANGE) return false;
    min_end = TG_MIN(min_end, e->arg.range->axis_id);
    bool dup = false;
    for (size_t k = 0; k < j; k++) dup |= ending->data[k] == e;
    /* a row of a Variable's length (decode attention over start_pos + 1 keys) counts its largest */
    if (!dup) row *= e->src[0]->op == TG_OP_CONST ? e->src[0]->arg.c.i : (int64_t)uop_vmax(e->src[0]);
    if (row > lim || row < 1) return false;
  }
  if (x->op != TG_OP_REDUCE || x->arg.kind != ARG_REDUCE) {
    UOpVec rs = {0};
    ranges_of_exprs(outr, nout, &rs);
    bool outer = true;
    for (size_t j = 0; j < rs.len && outer; j++) outer = rs.data[j]->arg.range->axis_id < min_end;
    tg_vec_free(&rs);
    return outer && row_device_ok(c, x);
  }
  SymShape ps;
  if (uop_shape_sym_cached(x->src[0], &c->shapes, &ps) != SHAPE_OK) return false;
  int64_t red = 1;
  for (int i = 0; i < x->arg.red.naxes; i++) red *= ps.max.d[i];
  if (red > lim || row > red) return false;
  int dev = row_device(c, x);
  /* rows of a Variable's length: the CPU loops to the bound; a GPU block pads the row to its largest length
   * (gpu_row_kernel) */
  if (dev == 0) return false;
  /* one row axis, reduced whole by this reduce: the row kernels (codegen's cpu_row_kernel, gpu_row_kernel) take such
   * a row; another shape of broadcast leaves the reduce to the general heuristic, which may put the consumer's axes
   * outside it and recompute it per element (the 1B llama's decode: RMSNorm's sum over 2048 fused into the 64 x 32
   * blocks of the int8 activation quantization ran 47 us a kernel, 2.4 us unfused; Q4_0 decode 26-31 tok/s) */
  size_t distinct = 0;
  for (size_t j = 0; j < ending->len; j++) {
    bool dup = false;
    for (size_t k = 0; k < j; k++) dup |= ending->data[k] == ending->data[j];
    distinct += !dup;
  }
  if (x->arg.red.naxes != 1 || distinct != 1 || row != red) return false;
  if (dev == 2) { /* a GPU */
    /* the block takes it: T threads (1024 at most) x U lanes (32 at most), padded past the row's end where no such
     * split divides it (gpu_row_kernel) */
    if ((red + 31) / 32 > 1024) return false;
  }
  UOpVec rs = {0};
  ranges_of_exprs(outr, nout, &rs);
  bool outer = true;
  for (size_t j = 0; j < rs.len && outer; j++) outer = rs.data[j]->arg.range->axis_id < min_end;
  tg_vec_free(&rs);
  return outer;
}

static void rangeify_node(IndexingCtx *c, UOp *x, const UOpVec *consumers) {
  TgOp op = uop_op(x);
  UOpVec *ending = ictx_alloc(c, sizeof(UOpVec));
  tg_vec_push(&c->vecs, ending);
  uopmap_put(&c->ending, x, ending);
  for (size_t i = 0; i < consumers->len; i++) {
    UOpVec *e = ending_of(c, consumers->data[i]);
    if (e)
      for (size_t j = 0; j < e->len; j++) tg_vec_push(ending, e->data[j]);
  }
  /* the consumers' input ranges as this node sees them, one row per consumer with ranges */
  typedef UOp *RangeRow[SCHED_MAX_IDX];
  RangeRow *crng = tg_malloc((consumers->len + 1) * sizeof(RangeRow));
  size_t *ncrng = tg_malloc((consumers->len + 1) * sizeof(size_t));
  /* ranges the consumers iterate that this node broadcasts over */
  UOpVec ended = {0}, bcast_ending = {0};
  SymShape xs;
  bool have_shape = false;
  for (size_t i = 0; i < consumers->len; i++) {
    UOp *cu = consumers->data[i];
    RangeEntry *ce = range_get(c, cu);
    if (!ce || !is_broadcastable(cu)) continue;
    SymShape cs;
    if (!have_shape && !shape_or_fail(c, x, &xs)) goto out;
    have_shape = true;
    if (!shape_or_fail(c, cu, &cs)) goto out;
    int axes[SCHED_MAX_IDX];
    int na = broadcast_axes(&xs, &cs, axes);
    for (int a = 0; a < na; a++) tg_vec_push(&ended, ce->in[axes[a]]);
  }
  ranges_of_exprs(ended.data, ended.len, &bcast_ending);
  if (op == TG_OP_REDUCE)
    for (size_t j = 0; j < bcast_ending.len; j++) tg_vec_push(ending, bcast_ending.data[j]);

  size_t nc = 0;
  for (size_t i = 0; i < consumers->len; i++) {
    RangeEntry *ce = range_get(c, consumers->data[i]);
    if (!ce) continue;
    ncrng[nc] = broadcast_rngs(c, consumers->data[i], x, ce->in, ce->nin, crng[nc]);
    if (c->failed) goto out;
    nc++;
  }
  UOp *outr[SCHED_MAX_IDX];
  size_t nout = 0;
  RealizeEntry *re = realize_get(c, x);
  if (re) {
    if (!have_shape && !shape_or_fail(c, x, &xs)) goto out;
    have_shape = true;
    for (int i = 0; i < xs.max.ndim; i++) outr[nout++] = new_range(c, &xs, i, AXIS_WEAK);
    ending->len = 0;
    re->listed = true;
    re->n = xs.max.ndim;
    for (int i = 0; i < xs.max.ndim; i++) re->axes[i] = i;
  } else if (nc == 0) {
    goto out;
  } else if (nc == 1) {
    nout = ncrng[0];
    for (size_t i = 0; i < nout; i++) outr[i] = crng[0][i];
  } else {
    nout = ncrng[0];
    bool all_same = true;
    for (size_t k = 1; k < nc; k++) all_same &= ncrng[k] == nout;
    for (size_t i = 0; i < nout && all_same; i++)
      for (size_t k = 1; k < nc; k++) all_same &= get_idx(crng[k][i]) == get_idx(crng[0][i]);
    if (all_same) {
      for (size_t i = 0; i < nout; i++) {
        UOp *valid = uop_const_bool(false);
        for (size_t k = 0; k < nc; k++) valid = uop_or(valid, get_valid(crng[k][i]));
        UOp *v = uop_where(valid, get_idx(crng[0][i]), uop_invalid());
        outr[i] = simplify_with(v, sym_symbolic(), "minimum_valid");
      }
    } else {
      if (!have_shape && !shape_or_fail(c, x, &xs)) goto out;
      have_shape = true;
      nout = (size_t)xs.max.ndim;
      realize_add(c, x);
      re = realize_get(c, x);
      re->listed = true;
      re->n = 0;
      /* consumers that iterate nothing beyond this node's ranges: a row stage (kernelize.c may recompute it with the
       * row reductions inside it) */
      re->row = ending->len == 0 && fuse_rows_max() > 0 && row_device_ok(c, x);
      for (size_t i = 0; i < nout; i++) {
        outr[i] = new_range(c, &xs, (int)i, AXIS_WEAK);
        re->axes[re->n++] = (int)i;
      }
    }
  }
  /* a reduce or elementwise node below ended ranges is realized on all its axes, unless the row rule keeps it in
   * its consumer's kernel */
  if (ending->len && (op_is_elementwise(op) || op == TG_OP_REDUCE) && row_fuse_keeps(c, x, ending, outr, nout)) {
    if (op == TG_OP_REDUCE) ending->len = 0; /* an elementwise node passes the ended ranges on to its reduces */
  } else if (ending->len && (op_is_elementwise(op) || op == TG_OP_REDUCE)) {
    RealizeEntry *cur = realize_get(c, x);
    int axes[SCHED_MAX_IDX], na = 0;
    if (cur && cur->listed)
      for (int k = 0; k < cur->n; k++) axes[na++] = cur->axes[k];
    for (size_t i = 0; i < nout; i++) {
      bool in = false;
      for (int k = 0; k < na; k++) in |= axes[k] == (int)i;
      if (!in) axes[na++] = (int)i;
    }
    ending->len = 0;
    if (na) {
      if (!have_shape && !shape_or_fail(c, x, &xs)) goto out;
      have_shape = true;
      realize_add(c, x);
      cur = realize_get(c, x);
      cur->listed = true;
      cur->n = na;
      for (int k = 0; k < na; k++) cur->axes[k] = axes[k];
      for (size_t i = 0; i < nout; i++)
        if (axis_in(cur, (int)i)) outr[i] = new_range(c, &xs, (int)i, AXIS_WEAK);
    }
  }
  for (size_t j = 0; j < bcast_ending.len; j++) tg_vec_push(ending, bcast_ending.data[j]);

  /* input ranges */
  UOp *inr[SCHED_MAX_IDX];
  size_t nin = nout;
  for (size_t i = 0; i < nout; i++) inr[i] = outr[i];
  if (op_has(op, OPP_MOVEMENT)) {
    SymShape ps;
    if (!shape_or_fail(c, x->src[0], &ps)) goto out;
    if (!sched_apply_movement(x, &ps, outr, nout, inr, &nin)) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: rangeify: movement op %s on these symbolic sizes not supported yet", uop_op_name(op));
      c->failed = true;
      goto out;
    }
    if (op == TG_OP_EXPAND) {
      SymShape ea;
      uop_marg_pair_sym(x, &ea, NULL);
      UOpVec rs = {0};
      ranges_of_exprs(outr, (size_t)ea.max.ndim, &rs);
      for (size_t j = 0; j < rs.len; j++) tg_vec_push(ending, rs.data[j]);
      tg_vec_free(&rs);
    }
  }
  if (op == TG_OP_STACK) { /* the leading range selects the source, the sources get the trailing ranges */
    nin = nout ? nout - 1 : 0;
    for (size_t i = 0; i < nin; i++) inr[i] = outr[i + 1];
  }
  if (op == TG_OP_REDUCE && x->arg.red.naxes) {
    SymShape ps;
    if (!shape_or_fail(c, x->src[0], &ps)) goto out;
    nin = 0;
    for (int i = 0; i < x->arg.red.naxes; i++) inr[nin++] = new_range(c, &ps, i, AXIS_REDUCE);
    for (size_t i = 0; i < nout; i++) inr[nin++] = outr[i];
  }
  RangeEntry *e = ictx_alloc(c, sizeof(RangeEntry));
  e->nin = nin;
  e->nout = nout;
  for (size_t i = 0; i < nin; i++) e->in[i] = inr[i];
  for (size_t i = 0; i < nout; i++) e->out[i] = outr[i];
  uopmap_put(&c->range_map, x, e);
out:
  tg_free(crng);
  tg_free(ncrng);
  tg_vec_free(&ended);
  tg_vec_free(&bcast_ending);
}

/* ---------------------------------------------------------------------------------------------------------------
 * pm_apply_rangeify */

static IndexingCtx *ictx(RwCtx *rw) { return rw->ctx; }

/* the sources of x with buffers indexed and realized sources staged (tinygrad create_bufferize_and_index_srcs) */
static bool bufferize_and_index_srcs(IndexingCtx *c, UOp *x, UOp **out) {
  RangeEntry *xe = range_get(c, x);
  size_t ndata = data_src_count(x);
  bool changed = false;
  for (uint32_t i = 0; i < x->nsrc; i++) {
    UOp *s = x->src[i], *ns = s;
    UOp *srng[SCHED_MAX_IDX];
    size_t nsr = 0;
    if (xe) {
      nsr = broadcast_rngs(c, x, s, xe->in, xe->nin, srng);
      if (c->failed) return false;
    }
    RealizeEntry *re;
    if (s->op == TG_OP_PARAM || s->op == TG_OP_BUFFER || s->op == TG_OP_MSTACK || s->op == TG_OP_MSELECT ||
        s->op == TG_OP_AFTER) {
      if (xe && i < ndata) ns = sched_index(s, srng, nsr);
    } else if ((re = realize_get(c, s)) != NULL) {
      RangeEntry *se = range_get(c, s);
      TG_ASSERT(re->listed && se, "realize map must contain a range list");
      UOp *closed[SCHED_MAX_IDX];
      size_t ncl = 0;
      for (size_t k = 0; k < se->nout; k++)
        if (axis_in(re, (int)k)) closed[ncl++] = se->out[k];
      if (s->op == TG_OP_STORE) {
        UOp *rr[SCHED_MAX_IDX];
        size_t nrr = 0;
        for (size_t k = 0; k < ncl; k++)
          if (closed[k]->op == TG_OP_RANGE) rr[nrr++] = closed[k];
        ns = sched_end(s, rr, nrr);
        uopmap_put(&c->realize, s, NULL); /* the store is ended once */
        void **p = uopmap_get(&c->realize, s);
        TG_ASSERT(p, "");
        *p = NULL;
      } else {
        bool removable = !(s->op == TG_OP_CONTIGUOUS || s->op == TG_OP_AFTER || s->op == TG_OP_BUFFER ||
                           s->op == TG_OP_CONST || s->op == TG_OP_PARAM || s->op == TG_OP_LOAD || s->op == TG_OP_CALL);
        const char *dev = sched_device(s);
        if (!dev) dev = c->sink_device;
        AddrSpace as = (size_t)re->n == se->nout ? ADDR_GLOBAL : ADDR_LOCAL;
        ns = sched_stage_set_row(sched_stage(ns, closed, ncl, dev, as, removable), re->row);
        if (xe) {
          UOp *ir[SCHED_MAX_IDX];
          size_t nir = 0;
          for (size_t k = 0; k < nsr; k++)
            if (axis_in(re, (int)k)) ir[nir++] = srng[k];
          ns = sched_index(ns, ir, nir);
        }
      }
    }
    out[i] = ns;
    changed |= ns != s;
  }
  return changed;
}

static UOp *apply_generic(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  IndexingCtx *c = ictx(rw);
  if (x->op == TG_OP_STAGE || x->op == TG_OP_INDEX) return NULL;
  UOp **src = tg_malloc((x->nsrc + 1) * sizeof(UOp *));
  UOp *r = bufferize_and_index_srcs(c, x, src) ? uop_replace_src(x, src, x->nsrc) : NULL;
  tg_free(src);
  return r;
}

static UOp *apply_reduce(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  IndexingCtx *c = ictx(rw);
  if (x->arg.kind != ARG_REDUCE || x->arg.red.naxes == 0) return NULL;
  RangeEntry *e = range_get(c, x);
  if (!e) { tg_set_error(TG_ERR_RUNTIME, "rangeify: REDUCE has no ranges"); c->failed = true; return NULL; }
  UOp *src[SCHED_MAX_IDX + 1];
  if (!bufferize_and_index_srcs(c, x, src)) src[0] = x->src[0];
  for (int i = 0; i < x->arg.red.naxes; i++) src[1 + i] = e->in[i];
  return uop_new(TG_OP_REDUCE, x->dtype, src, 1 + (size_t)x->arg.red.naxes, arg_reduce((TgOp)x->arg.red.op, 0));
}

static UOp *apply_pad(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  IndexingCtx *c = ictx(rw);
  RangeEntry *e = range_get(c, x);
  if (!e) return NULL;
  UOp *src[3];
  if (!bufferize_and_index_srcs(c, x, src)) src[0] = x->src[0];
  UOp *valid = uop_const_bool(true);
  for (size_t i = 0; i < e->nin; i++) valid = uop_and(valid, get_valid(e->in[i]));
  return uop_where(valid, src[0], uop_const_int(dt_weak(x->dtype), 0)); /* tinygrad: UOp.const(dtype.const(0)), a weak constant */
}

/* STACK -> WHERE chain selecting a source by the leading range (tinygrad convert_stack_to_where) */
static UOp *apply_stack(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  IndexingCtx *c = ictx(rw);
  RangeEntry *e = range_get(c, x);
  if (!e || x->dtype == DT_VOID || x->nsrc == 0 || e->nout == 0) return NULL;
  UOp **src = tg_malloc(x->nsrc * sizeof(UOp *));
  UOp *ret = NULL;
  if (bufferize_and_index_srcs(c, x, src) || !c->failed) {
    UOp *r0 = e->out[0];
    ret = src[x->nsrc - 1];
    for (size_t k = x->nsrc - 1; k-- > 0;) ret = uop_where(uop_eq(r0, sched_weak_int((int64_t)k)), src[k], ret);
  }
  tg_free(src);
  return ret;
}

static UOp *apply_movement_removal(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (range_get(ictx(rw), x) || x->src[0]->op == TG_OP_INDEX) return x->src[0];
  return NULL;
}

static const Rule apply_rules[] = {
  RULE("REDUCE", apply_reduce, NULL),
  RULE("PAD", apply_pad, NULL),
  RULE("STACK", apply_stack, NULL),
  RULE("x", apply_generic, NULL),
  RULE("Movement", apply_movement_removal, NULL),
};

static bool not_kernel_body(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return !(u->op == TG_OP_SINK && u->arg.kind == ARG_KERNEL);
}

UOp *sched_run_rangeify(UOp *tsink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("apply rangeify", apply_rules);
  IndexingCtx c;
  memset(&c, 0, sizeof c);
  uopmap_init(&c.realize);
  uopmap_init(&c.range_map);
  uopmap_init(&c.ending);
  shape_cache_init(&c.shapes);
  c.sink_device = sched_device(tsink);
  if (!c.sink_device) c.sink_device = tg_default_device();

  UOpVec topo = {0};
  uop_toposort(tsink, not_kernel_body, NULL, &topo);
  /* the realize map: CONTIGUOUS and STORE always; a STORE's value when it reads the destination */
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i];
    if (x->op == TG_OP_MSELECT || x->op == TG_OP_MSTACK) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: rangeify: multi-device ops are not supported yet");
      c.failed = true;
    }
    if (x->op == TG_OP_CONTIGUOUS || x->op == TG_OP_STORE) realize_add(&c, x);
    if (x->op == TG_OP_STORE && x->nsrc >= 2) {
      UOp *base = sched_base(x->src[0]);
      if (x->src[1] == base || uop_in_backward_slice(x->src[1], base)) realize_add(&c, x->src[1]);
    }
  }
  /* consumers of each node, in toposort order */
  UOpMap index;
  uopmap_init(&index);
  for (size_t i = 0; i < topo.len; i++) uopmap_put(&index, topo.data[i], (void *)(uintptr_t)i);
  UOpVec *consumers = tg_calloc(topo.len ? topo.len : 1, sizeof(UOpVec));
  for (size_t i = 0; i < topo.len; i++) {
    UOp *cu = topo.data[i];
    size_t nd = data_src_count(cu);
    for (size_t k = 0; k < nd; k++) {
      void **p = uopmap_get(&index, cu->src[k]);
      if (!p) continue;
      UOpVec *l = &consumers[(uintptr_t)*p];
      if (!l->len || l->data[l->len - 1] != cu) tg_vec_push(l, cu);
    }
  }
  for (size_t i = topo.len; i-- > 0 && !c.failed;) {
    UOp *x = topo.data[i];
    TgOp op = uop_op(x);
    if (op == TG_OP_CALL || op == TG_OP_FUNCTION || op == TG_OP_LINEAR || op == TG_OP_AFTER) continue;
    rangeify_node(&c, x, &consumers[i]);
  }
  UOp *ret = NULL;
  if (!c.failed) ret = pm_graph_rewrite(tsink, pm, &c, RW_BOTTOM_UP, NULL, "apply rangeify");
  if (c.failed) ret = NULL;
  for (size_t i = 0; i < topo.len; i++) tg_vec_free(&consumers[i]);
  tg_free(consumers);
  uopmap_free(&index);
  tg_vec_free(&topo);
  for (size_t i = 0; i < c.vecs.len; i++) tg_vec_free(c.vecs.data[i]);
  tg_vec_free(&c.vecs);
  for (size_t i = 0; i < c.allocs.len; i++) tg_free(c.allocs.data[i]);
  tg_vec_free(&c.allocs);
  uopmap_free(&c.realize);
  uopmap_free(&c.range_map);
  uopmap_free(&c.ending);
  shape_cache_free(&c.shapes);
  return ret;
}
