/* earliest.c — tinygrad's earliest_rewrites (schedule/rangeify.py), run bottom-up on the callified graph before
 * rangeify: movement-op cleanup (merge/remove reshapes and permutes), movement ops out of AFTER/END, DETACH removal, the
 * SINK of bases, split_reduceop (large reductions become two kernels), the write-after-read fix for stores that read
 * their destination through a reordering view, dedup of repeated assigns, shape-changing BITCASTs as shifts, size-0
 * values as constants. */
#include "schedule/sched_internal.h"

#include "uop/mixin.h" /* the builders: tinygrad writes these rewrites with the same methods on UOp */
#include "uop/symbolic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static ShapeCache *g_shapes; /* the shape cache of the running pass (set around each pm_graph_rewrite) */

static bool shape_of(UOp *u, Shape *s) { return uop_shape_cached(u, g_shapes, s) == SHAPE_OK; }

static UOp *merge_reshapes(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  UOp *inner = m[0];
  UOp *src[2] = {inner->src[0], x->src[1]};
  return uop_replace_src(x, src, 2);
}

static UOp *noop_reshape(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  Shape a, b;
  if (!shape_of(m[0], &a) || !shape_of(x, &b) || !shape_eq(&a, &b)) return NULL;
  return m[0];
}

static UOp *merge_permutes(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  UOp *x2 = m[0];
  int64_t perm[TG_MAX_DIMS];
  for (uint32_t i = 0; i < x->arg.len; i++) perm[i] = x2->arg.ints[x->arg.ints[i]];
  UOp *s = x2->src[0];
  return uop_new(TG_OP_PERMUTE, x->dtype, &s, 1, arg_ints(ARG_PERM, perm, x->arg.len));
}

static UOp *noop_permute(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  for (uint32_t i = 0; i < x->arg.len; i++)
    if (x->arg.ints[i] != (int64_t)i) return NULL;
  return x->src[0];
}

/* AFTER(mop(x), deps...) -> mop(AFTER(x, deps...)): the AFTER always sits on the buffer itself */
static UOp *mop_out_of_after(RwCtx *rw, UOp *a, UOp **m) {
  TG_UNUSED(rw);
  UOp *r = m[0];
  UOp *na = sched_rebuild(a, TG_OP_AFTER, r->src[0]->dtype, 0, r->src[0]);
  return sched_rebuild(r, uop_op(r), r->op == TG_OP_INDEX ? na->dtype : r->dtype, 0, na);
}

static UOp *mop_out_of_end(RwCtx *rw, UOp *e, UOp **m) {
  TG_UNUSED(rw);
  return sched_rebuild(e, TG_OP_END, e->dtype, 0, m[0]->src[0]);
}

static UOp *drop_src0(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  return x->src[0];
}

static UOp *sink_of_bases(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOpVec src = {0};
  bool changed = false;
  for (uint32_t i = 0; i < x->nsrc; i++) {
    tg_vec_push(&src, sched_base(x->src[i]));
    changed |= src.data[i] != x->src[i];
  }
  UOp *r = changed ? uop_replace_src(x, src.data, src.len) : NULL;
  tg_vec_free(&src);
  return r;
}

/* STORE(RESHAPE(dst), RESHAPE(src)) with equal shapes: the reshapes cancel */
static UOp *store_reshapes(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(x);
  Shape a, b;
  UOp *dst = m[0], *src = m[1];
  if (!shape_of(dst, &a) || !shape_of(src, &b) || !shape_eq(&a, &b)) return NULL;
  UOp *s[2] = {dst, src};
  return uop_new(TG_OP_STORE, DT_VOID, s, 2, arg_none());
}

static bool stop_at_contiguous(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return u->op != TG_OP_CONTIGUOUS;
}

/* fix_store_hazard: the destination is read through a PERMUTE/FLIP (or an overlapping SHRINK) in the value */
static UOp *fix_store_hazard(RwCtx *rw, UOp *st, UOp **m) {
  TG_UNUSED(rw);
  UOp *target = m[0], *src = m[1];
  UOp *base = sched_base(target);
  if (!uop_in_backward_slice(src, base) && src != base) return NULL;
  bool shrink_unsafe = uop_op_in_backward_slice_with_self(target, TG_OP_SHRINK);
  UOpVec topo = {0};
  uop_toposort(src, stop_at_contiguous, NULL, &topo);
  UOpMap reaches;
  uopmap_init(&reaches);
  UOp *ret = NULL;
  for (size_t i = 0; i < topo.len && !ret; i++) {
    UOp *s = topo.data[i];
    bool r = s == base;
    for (uint32_t k = 0; k < s->nsrc && !r; k++) r = uopmap_get(&reaches, s->src[k]) != NULL;
    if (r) uopmap_put(&reaches, s, s);
    bool unsafe = s->op == TG_OP_PERMUTE || s->op == TG_OP_FLIP || (shrink_unsafe && s->op == TG_OP_SHRINK);
    if (r && unsafe && !(s == target && s->op == TG_OP_SHRINK)) {
      UOp *c = uop_new(TG_OP_CONTIGUOUS, src->dtype, &src, 1, arg_none());
      UOp *ss[2] = {target, c};
      ret = uop_new(TG_OP_STORE, DT_VOID, ss, 2, arg_none());
    }
  }
  uopmap_free(&reaches);
  tg_vec_free(&topo);
  TG_UNUSED(st);
  return ret;
}

/* tinygrad UOp._rop: REDUCE over `axes` (sorted) of x, size-1 axes dropped by a reshape */
static UOp *rop(UOp *x, TgOp op, const int *axes, int naxes) {
  Shape xs;
  if (!shape_of(x, &xs)) return NULL;
  int red[TG_MAX_DIMS], nr = 0;
  for (int k = 0; k < naxes; k++)
    if (xs.d[axes[k]] != 1) red[nr++] = axes[k];
  Shape out = {0, {0}};
  for (int i = 0; i < xs.ndim; i++) {
    bool in = false;
    for (int k = 0; k < naxes; k++) in |= axes[k] == i;
    if (!in) out.d[out.ndim++] = xs.d[i];
  }
  UOp *ret;
  if (nr == 0) {
    ret = x;
  } else {
    int64_t perm[TG_MAX_DIMS];
    int np = 0;
    bool ident = true;
    for (int k = 0; k < nr; k++) perm[np++] = red[k];
    for (int i = 0; i < xs.ndim; i++) {
      bool in = false;
      for (int k = 0; k < nr; k++) in |= red[k] == i;
      if (!in) perm[np++] = i;
    }
    for (int i = 0; i < np; i++) ident &= perm[i] == i;
    UOp *p = ident ? x : uop_new(TG_OP_PERMUTE, x->dtype, &x, 1, arg_ints(ARG_PERM, perm, (size_t)np));
    ret = uop_new(TG_OP_REDUCE, x->dtype, &p, 1, arg_reduce(op, nr));
    if (nr == naxes) return ret;
  }
  UOp *src[2] = {ret, shape_to_uop(out.d, out.ndim)};
  return uop_new(TG_OP_RESHAPE, x->dtype, src, 2, arg_none());
}

/* the value lives on the CPU device ("CPU", "CPU:n"); the CPU adaptations below apply there only */
static bool on_cpu(UOp *u) { return sched_device_is_cpu(sched_device(u)); }

/* Follows x down through its movement ops (and DETACH/CUSTOM_GRAD, which pass their value through), turning idx (one
 * expression per dimension of x) into an index of the node below them: that node, or NULL when a movement op cannot
 * be followed. */
static UOp *trace_movement(UOp *x, UOp **idx, size_t *n) {
  UOp *tmp[SCHED_MAX_IDX];
  UOp *cur = x;
  while (op_has(uop_op(cur), OPP_MOVEMENT) || cur->op == TG_OP_DETACH || cur->op == TG_OP_CUSTOM_GRAD) {
    Shape ps;
    size_t nn = 0;
    if (cur->op == TG_OP_DETACH || cur->op == TG_OP_CUSTOM_GRAD) { cur = cur->src[0]; continue; }
    SymShape pss;
    if (!shape_of(cur->src[0], &ps) || (pss = shape_sym_from(&ps), !sched_apply_movement(cur, &pss, idx, *n, tmp, &nn))) return NULL;
    for (size_t k = 0; k < nn; k++) idx[k] = tmp[k];
    *n = nn;
    cur = cur->src[0];
  }
  return cur;
}

/* x's element at loop ranges (axis i of x is a RANGE with axis id i, size-1 axes are 0) as an index into the node
 * under x's movement ops (trace_movement) */
static UOp *index_at_base(UOp *x, const Shape *xs, UOp **idx, size_t *n) {
  *n = (size_t)xs->ndim;
  for (int i = 0; i < xs->ndim; i++)
    idx[i] = xs->d[i] > 1 ? uop_range(sched_weak_int(xs->d[i]), i, AXIS_LOOP) : sched_weak_int(0);
  return trace_movement(x, idx, n);
}

/* (not in tinygrad) is a factor of the product under x (through movement ops and casts) read once whatever the loop
 * order: broadcast over every output (no output axis, axes naxes.. of x: the vector of a matrix-vector product), or
 * at most limit elements below its movement ops (a prefill's tokens, 32 x 8192 floats = 1 MiB, against its weight)? */
static bool factor_read_once(UOp *x, const Shape *xs, int naxes, int64_t limit) {
  UOp *idx[SCHED_MAX_IDX];
  size_t n;
  UOp *m = index_at_base(x, xs, idx, &n);
  while (m && m->op == TG_OP_CAST) m = trace_movement(m->src[0], idx, &n);
  if (!m || m->op != TG_OP_MUL) return false;
  for (uint32_t s = 0; s < m->nsrc; s++) {
    UOp *j[SCHED_MAX_IDX];
    size_t nj = n;
    memcpy(j, idx, n * sizeof *idx);
    UOp *base = trace_movement(m->src[s], j, &nj);
    if (!base) continue;
    Shape bs;
    if (shape_of(base, &bs) && shape_numel(&bs) <= limit) return true;
    UOpVec live = {0};
    if (nj) sched_ranges(uop_sink(j, nj), &live);
    bool out_axis = false;
    for (size_t k = 0; k < live.len; k++) out_axis |= live.data[k]->arg.range->axis_id >= naxes;
    tg_vec_free(&live);
    if (!out_axis) return true;
  }
  return false;
}

/* split_reduceop: a reduce with a large input/output ratio becomes two kernels (a partial reduce into 8..256 slots,
 * made contiguous, then the final reduce), so the first one has outputs to spread over cores */
static UOp *split_reduceop(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  UOp *x = m[0];
  Shape rs, xs;
  if (red->arg.kind != ARG_REDUCE || red->arg.red.naxes == 0 || !shape_of(red, &rs) || !shape_of(x, &xs)) return NULL;
  int64_t rn = shape_numel(&rs);
  if (rn == 0 || !tg_getenv_int("SPLIT_REDUCEOP", 1)) return NULL;
  UOp *summand = x;
  while (summand->op == TG_OP_CAST || summand->op == TG_OP_PERMUTE || summand->op == TG_OP_RESHAPE) summand = summand->src[0];
  bool cpu_product = on_cpu(red) && summand->op == TG_OP_MUL;
  /* (not in tinygrad) on the CPU a sum of products is split from a ratio of 8192 (see below): beautiful_mnist's conv4
   * weight gradient (36864 outputs, a 18432 reduce) 76 ms per step unsplit; train_cnn 1.69-1.92 -> 1.95-2.11 steps/s,
   * runs interleaved */
  int64_t threshold = tg_getenv_int("REDUCEOP_SPLIT_THRESHOLD", 32768);
  if (shape_numel(&xs) / rn < (cpu_product ? TG_MIN(threshold, 8192) : threshold)) return NULL;
  /* (not in tinygrad) On the CPU the split is there to give the reduce outputs to spread over a few cores; an output
   * of CPU_SPLIT_MIN_OUTPUT (4096) elements or more has them already, and for a plain sum the split only adds a pass
   * over the partials (a 32768x4096 column sum: 248 ms unsplit, 705 split). A sum of products (a conv weight
   * gradient: a matmul with a long reduce; movement ops and casts looked through) is still split: its kernel loops
   * over the partial axis outermost (codegen/opt_heuristic.c cpu_batch_outer), so each slice of the inputs is read
   * once for all output tiles instead of once per tile. Measured (2 cores, beautiful_mnist at batch 512, with the
   * vector accumulators): conv2's weight gradient 164 ms per step unsplit, 104-113 split; train_cnn 1.87-1.91 ->
   * 2.24 steps/s. */
  if (on_cpu(red) && rn >= tg_getenv_int("CPU_SPLIT_MIN_OUTPUT", 4096) && !cpu_product) return NULL;
  /* (not in tinygrad) nor is a matrix-vector product (one factor broadcast over every output: an LLM's decode step):
   * the matrix is read once either way, and the split reads it in partial-major order and adds a pass over the
   * partials. Measured (2 cores, loaded machine, best of 28): a 1B llama's Q4_0 ffn_down (2048 x 8192) @ x 10.3-10.6 ms
   * split, 1.29-1.36 ms not. */
  /* (not in tinygrad) nor a product with a factor that fits the core's L2 (CPU_SPLIT_SMALL_FACTOR elements, default
   * 256Ki = 1 MiB of float32): its kernel reads the big factor once, tile by tile, the small one from L2 for each
   * (opt_heuristic.c cpu_dot_tiles puts the big one's rows outside), where the split wrote and re-read partials of
   * the whole output. A conv weight gradient's factors (activations and gradients of a batch) are both bigger.
   * factor_read_once checks both exemptions in one walk.
   * Measured (2 cores, 2 threads, the 1B llama's F16 prefill of 32 tokens, its 2048 x 8192 down projection: a ratio
   * of 8192, split into 32 partials of a 16 MB buffer): 61.8-62.9 tok/s split, 75.6-79.6 not (SPLIT_REDUCEOP=0). */
  if (cpu_product && factor_read_once(x, &xs, red->arg.red.naxes, tg_getenv_int("CPU_SPLIT_SMALL_FACTOR", 1 << 18)))
    return NULL;
  /* which axes of x reach its base (an expanded axis does not: splitting it would not help) */
  UOp *idx[SCHED_MAX_IDX];
  size_t n;
  if (!index_at_base(x, &xs, idx, &n)) return NULL;
  UOpVec live = {0};
  if (n) sched_ranges(uop_sink(idx, n), &live);
  bool reaches[TG_MAX_DIMS] = {false};
  for (size_t k = 0; k < live.len; k++) {
    int64_t id = live.data[k]->arg.range->axis_id;
    if (id >= 0 && id < xs.ndim) reaches[id] = true;
  }
  tg_vec_free(&live);
  int64_t hi = TG_MIN((int64_t)256, ((int64_t)1 << tg_getenv_int("REDUCEOP_SPLIT_SIZE", 22)) / rn);
  int dim = -1;
  int64_t divisor = 0;
  for (int i = 0; i < red->arg.red.naxes && dim < 0; i++)
    for (int64_t d = hi; d >= 8 && dim < 0; d--)
      if (xs.d[i] % d == 0 && reaches[i]) { dim = i; divisor = d; }
  if (dim < 0) return NULL;
  Shape sp = {0, {0}};
  for (int i = 0; i < xs.ndim; i++) {
    if (i == dim) { sp.d[sp.ndim++] = divisor; sp.d[sp.ndim++] = xs.d[i] / divisor; }
    else sp.d[sp.ndim++] = xs.d[i];
  }
  UOp *rsrc[2] = {x, shape_to_uop(sp.d, sp.ndim)};
  UOp *splitted = uop_new(TG_OP_RESHAPE, x->dtype, rsrc, 2, arg_none());
  int64_t perm[TG_MAX_DIMS];
  int np = 0;
  for (int i = 0; i < sp.ndim; i++)
    if (i != dim) perm[np++] = i;
  perm[np++] = dim;
  splitted = uop_new(TG_OP_PERMUTE, x->dtype, &splitted, 1, arg_ints(ARG_PERM, perm, (size_t)np));
  int axes[TG_MAX_DIMS];
  for (int i = 0; i < red->arg.red.naxes; i++) axes[i] = i;
  UOp *first = rop(splitted, (TgOp)red->arg.red.op, axes, red->arg.red.naxes);
  if (!first) return NULL;
  int last = rs.ndim;
  if (cpu_product) {
    /* (not in tinygrad) the partials are stored partial-major: tinygrad's layout puts the partial axis innermost,
     * and the first kernel, which loops over the partials outermost (so each slice of the inputs is read once for
     * all output tiles), then writes one float per cache line per output, each line coming back from memory for
     * every partial (16 times). Partial-major, the partial axis is the output's first (outermost without a SWAP)
     * and an output tile's stores share lines. Measured (2 cores, AVX-512, beautiful_mnist's conv2 weight gradient at batch
     * 512, 128 partials): 49.6-50.1 -> 33.4-33.8 ms. */
    int64_t to_front[TG_MAX_DIMS], back[TG_MAX_DIMS];
    to_front[0] = last;
    for (int i = 0; i < last; i++) to_front[i + 1] = i, back[i] = i + 1;
    back[last] = 0;
    first = uop_new(TG_OP_PERMUTE, first->dtype, &first, 1, arg_ints(ARG_PERM, to_front, (size_t)last + 1));
    first = uop_new(TG_OP_CONTIGUOUS, first->dtype, &first, 1, arg_none());
    first = uop_new(TG_OP_PERMUTE, first->dtype, &first, 1, arg_ints(ARG_PERM, back, (size_t)last + 1));
  } else {
    first = uop_new(TG_OP_CONTIGUOUS, first->dtype, &first, 1, arg_none());
  }
  UOp *second = rop(first, (TgOp)red->arg.red.op, &last, 1);
  if (!second) return NULL;
  UOp *fsrc[2] = {second, shape_to_uop(rs.d, rs.ndim)};
  return uop_new(TG_OP_RESHAPE, second->dtype, fsrc, 2, arg_none());
}

/* ---- CPU adaptation (not in tinygrad): column panels for a matmul operand whose rows alias in the cache ----
 * In C = A @ B the kernel reads B[k, n..n+15] for k = 0..K-1: one cache line per row of B. When B's rows are a
 * multiple of 4 KiB apart, all those lines map to the same few cache sets: a 16-column panel of a 1024x1024 float B
 * (1024 lines) gets 512 lines of L2 and 12 of L1, so B comes from L3 again for every tile of rows. BLAS libraries copy
 * B into panels first; so does this rule: such an operand is read through
 *   B.reshape(K, N/P, P).permute(1, 0, 2).contiguous().permute(1, 0, 2).reshape(K, N)
 * (P = one cache line of elements), equal values in a layout where a panel is K consecutive lines. It costs one copy
 * kernel (tinygrad has one kernel where this has two). Applied to a sum of a product on the CPU when the operand is a
 * whole buffer of more than 2 MiB read as (reduce index) * stride + (the output's last index), the stride a multiple
 * of 4 KiB, and the other factor reads the reduce index contiguously (A row-major; A^T @ B was measured no faster
 * with B in panels, its A aliases the same way). Measured (2 cores, AVX-512, 1024^3 float32, 8x16 tiles): 84-92
 * GFLOPS as is, 134 packed; with the panel loop outside the row loop (opt_heuristic.c cpu_matmul_tiles) 205-224; with
 * 4x32 tiles 275-313. MATMUL_PACK=0 turns it off (part of the schedule cache key). */
#define PACK_LINE_BYTES 64
#define PACK_MIN_BYTES ((int64_t)2 << 20)

/* idx (one expression per dimension of shape bs) as sum(coef[axis] * RANGE(axis)) + 0; false when it is not of that
 * form (a div/mod or an offset). */
static bool linear_coefs(UOp *const *idx, size_t n, const Shape *bs, int64_t *coef, int ncoef) {
  UOp *flat = sched_weak_int(0);
  for (size_t i = 0; i < n; i++) {
    int64_t st = 1;
    for (size_t j = i + 1; j < n; j++) st *= bs->d[j];
    flat = uop_add(flat, uop_mul(idx[i], sched_weak_int(st)));
  }
  flat = uop_simplify(flat);
  for (int i = 0; i < ncoef; i++) coef[i] = 0;
  UOpVec terms = {0};
  uop_split(flat, TG_OP_ADD, &terms);
  bool ok = true;
  for (size_t i = 0; i < terms.len && ok; i++) {
    UOp *t = terms.data[i], *r = t;
    int64_t c = 1;
    if (t->op == TG_OP_MUL && t->src[1]->op == TG_OP_CONST) r = t->src[0], c = t->src[1]->arg.c.i;
    else if (t->op == TG_OP_MUL && t->src[0]->op == TG_OP_CONST) r = t->src[1], c = t->src[0]->arg.c.i;
    if (r->op == TG_OP_CONST && r->arg.c.i == 0) continue;
    ok = r->op == TG_OP_RANGE && r->arg.range->axis_id >= 0 && r->arg.range->axis_id < ncoef;
    if (ok) coef[r->arg.range->axis_id] += c;
  }
  tg_vec_free(&terms);
  return ok;
}

/* the src[0] chain from top down to (not including) bottom, rebuilt over new_bottom; NULL when too long */
static UOp *rebuild_chain(UOp *top, UOp *bottom, UOp *new_bottom) {
  UOp *chain[64];
  int nchain = 0;
  for (UOp *c = top; c != bottom; c = c->src[0]) {
    if (nchain == 64) return NULL;
    chain[nchain++] = c;
  }
  UOp *v = new_bottom;
  for (int i = nchain - 1; i >= 0; i--) v = sched_rebuild(chain[i], uop_op(chain[i]), chain[i]->dtype, 0, v);
  return v;
}

/* A factor of the product as a read of a whole buffer: coef[i] is its stride along axis i of the reduce's input. */
typedef struct MatRead {
  UOp *base;
  Shape bs;
  int64_t coef[TG_MAX_DIMS];
} MatRead;

/* opnd, a factor of the product read at mul_idx (n index expressions over the ranges of the reduce's input, of shape
 * xs), as a linear read of a CPU buffer; false when it is not one */
static bool matrix_read(UOp *opnd, UOp *const *mul_idx, size_t mul_n, const Shape *xs, MatRead *out) {
  UOp *idx[SCHED_MAX_IDX];
  Shape os;
  /* an elementwise source broadcasts to the product's shape: fewer (leading) dimensions, or size 1 */
  if (!shape_of(opnd, &os) || (size_t)os.ndim > mul_n) return false;
  size_t n = (size_t)os.ndim, skip = mul_n - n;
  for (size_t i = 0; i < n; i++) idx[i] = os.d[i] == 1 ? sched_weak_int(0) : mul_idx[skip + i];
  out->base = trace_movement(opnd, idx, &n);
  if (!out->base || out->base == opnd || !uop_has_buffer_identity(out->base, true) || !shape_of(out->base, &out->bs) ||
      !on_cpu(out->base))
    return false;
  return linear_coefs(idx, n, &out->bs, out->coef, xs->ndim);
}

/* opnd with its base buffer read through a copy in another layout: the base viewed as `view` (n dims), permuted by
 * `perm` (its own inverse), made contiguous, permuted back and viewed as the base again; equal values, and the
 * operand's own movement ops are rebuilt over it */
static UOp *through_copy(UOp *opnd, const MatRead *b, const int64_t *view, const int64_t *perm, int n) {
  UOp *base = b->base;
  UOp *src[2] = {base, shape_to_uop(view, n)};
  UOp *v = uop_new(TG_OP_RESHAPE, base->dtype, src, 2, arg_none());
  v = uop_new(TG_OP_PERMUTE, base->dtype, &v, 1, arg_ints(ARG_PERM, perm, (size_t)n));
  v = uop_new(TG_OP_CONTIGUOUS, base->dtype, &v, 1, arg_none());
  v = uop_new(TG_OP_PERMUTE, base->dtype, &v, 1, arg_ints(ARG_PERM, perm, (size_t)n));
  src[0] = v, src[1] = shape_to_uop(b->bs.d, b->bs.ndim);
  v = uop_new(TG_OP_RESHAPE, base->dtype, src, 2, arg_none());
  return rebuild_chain(opnd, base, v);
}

/* opnd (read as b) through panels when it is B of the rule above and the other factor (read as a) reads the reduce
 * axis contiguously (A row-major); NULL otherwise */
static UOp *packed_operand(UOp *opnd, const MatRead *b, const MatRead *a, const Shape *xs, int nred) {
  int k = -1, u = -1;
  for (int i = 0; i < xs->ndim; i++) {
    if (b->coef[i] == 0) continue;
    if (i < nred && k < 0) k = i;
    else if (i == xs->ndim - 1 && i >= nred && b->coef[i] == 1) u = i; /* the output's last axis: the kernel's vectors */
    else return NULL; /* a second reduce or output axis: not a plain matrix */
  }
  int64_t isz = dt_itemsize(opnd->dtype), panel = PACK_LINE_BYTES / TG_MAX(isz, 1);
  if (k < 0 || u < 0 || a->coef[k] != 1 || isz <= 0 || PACK_LINE_BYTES % isz != 0) return NULL;
  int64_t rows = xs->d[k], cols = b->coef[k];
  if (xs->d[u] != cols || cols % panel != 0 || (cols * isz) % 4096 != 0 || shape_numel(&b->bs) != rows * cols ||
      rows * cols * isz <= PACK_MIN_BYTES)
    return NULL;
  int64_t split[3] = {rows, cols / panel, panel}, perm[3] = {1, 0, 2};
  return through_copy(opnd, b, split, perm, 3);
}

/* ---- CPU adaptation (not in tinygrad): A @ B^T with a small B reads B through a transposed copy ----
 * x @ W.T (every Linear's forward) reads both factors along the reduce axis: the kernel then keeps one accumulator per
 * output in the reduce's lanes and adds each one's lanes up after the loop, for every output of a short reduce. With
 * W.T copied to rows of N contiguous outputs it is a plain A @ B, tiled with output vectors (opt_heuristic.c
 * cpu_matmul_tiles). Applied on the CPU to a whole buffer B of at most PACK_MIN_BYTES read as (reduce index) +
 * (the output's last index) * K, N a multiple of one vector (64 bytes), 64+ rows of A reading the reduce axis
 * contiguously, K >= 64. One more kernel (the copy of B). Measured (2 cores, AVX-512, the MLP's first layer:
 * (512x784) @ (128x784)^T): 513-517 us as is, 346-369 us + 50-58 us for the copy; in the training step 623 -> 408 +
 * 36 us; train_mlp 313-342 -> 346-374 steps/s, 4 interleaved pairs. MATMUL_TRANSPOSE=0 turns it off (part of the
 * schedule cache key). */
static UOp *transposed_operand(UOp *opnd, const MatRead *b, const MatRead *a, const Shape *xs, int nred) {
  int k = -1, u = -1;
  int64_t rows = 1;
  for (int i = 0; i < xs->ndim; i++) {
    if (b->coef[i] == 0) {
      if (i >= nred && a->coef[i] != 0) rows *= xs->d[i];
      continue;
    }
    if (i < nred && k < 0 && b->coef[i] == 1) k = i;
    else if (i == xs->ndim - 1 && i >= nred) u = i;
    else return NULL; /* a second reduce or output axis: not a plain matrix */
  }
  int64_t isz = dt_itemsize(opnd->dtype);
  if (k < 0 || u < 0 || a->coef[k] != 1 || a->coef[u] != 0 || isz <= 0) return NULL;
  int64_t depth = xs->d[k], cols = xs->d[u];
  if (b->coef[u] != depth || shape_numel(&b->bs) != depth * cols || (cols * isz) % PACK_LINE_BYTES != 0 ||
      depth < 64 || rows < 64 || depth * cols * isz > PACK_MIN_BYTES)
    return NULL;
  int64_t mat[2] = {cols, depth}, perm[2] = {1, 0};
  return through_copy(opnd, b, mat, perm, 2);
}

/* the rule: a sum of a product of two matrix reads gets its B in panels (packed_operand) or its small B^T as B
 * (transposed_operand) */
static UOp *pack_matmul_operand(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  UOp *x = m[0];
  Shape xs;
  bool pack = tg_getenv_int("MATMUL_PACK", 1), transpose = tg_getenv_int("MATMUL_TRANSPOSE", 1);
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || red->arg.red.naxes == 0 || (!pack && !transpose) ||
      !shape_of(x, &xs))
    return NULL;
  UOp *idx[SCHED_MAX_IDX];
  size_t n;
  UOp *mul = index_at_base(x, &xs, idx, &n);
  MatRead r[2];
  if (!mul || mul->op != TG_OP_MUL || !matrix_read(mul->src[0], idx, n, &xs, &r[0]) ||
      !matrix_read(mul->src[1], idx, n, &xs, &r[1]))
    return NULL;
  for (uint32_t side = 0; side < 2; side++) {
    UOp *p = pack ? packed_operand(mul->src[side], &r[side], &r[1 - side], &xs, red->arg.red.naxes) : NULL;
    if (!p && transpose) p = transposed_operand(mul->src[side], &r[side], &r[1 - side], &xs, red->arg.red.naxes);
    if (!p) continue;
    UOp *nx = rebuild_chain(x, mul, sched_rebuild(mul, TG_OP_MUL, mul->dtype, side, p));
    return nx ? sched_rebuild(red, TG_OP_REDUCE, red->dtype, 0, nx) : NULL;
  }
  return NULL;
}

/* a constant shaped like `shape` (tinygrad const_like: CONST, EXPANDed when the shape is not ()) */
static UOp *const_shaped(const DType *dt, Const v, const Shape *shape) {
  UOp *c = uop_const(dt, v);
  if (shape->ndim == 0) return c;
  UOp *src[2] = {c, shape_to_uop(shape->d, shape->ndim)};
  return uop_new(TG_OP_EXPAND, dt, src, 2, arg_none());
}

static bool has_zero(const Shape *s) {
  for (int i = 0; i < s->ndim; i++)
    if (s->d[i] == 0) return true;
  return false;
}

/* size 0: a reduce of nothing is the identity element; any other size-0 value is a constant */
static UOp *size_zero(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (x->op == TG_OP_SINK || x->dtype == DT_VOID) return NULL;
  Shape s;
  if (uop_shape_cached(x, g_shapes, &s) != SHAPE_OK) return NULL;
  if (x->op == TG_OP_REDUCE && x->arg.kind == ARG_REDUCE && !has_zero(&s)) {
    Shape in;
    if (!shape_of(x->src[0], &in) || !has_zero(&in)) return NULL;
    TgOp op = (TgOp)x->arg.red.op;
    if (op != TG_OP_ADD && op != TG_OP_MUL && op != TG_OP_MAX) return NULL;
    return const_shaped(x->dtype, uop_identity_element(op, x->dtype), &s);
  }
  if (!has_zero(&s) || (x->op == TG_OP_EXPAND && x->src[0]->op == TG_OP_CONST)) return NULL;
  return const_shaped(x->dtype, const_int(0), &s);
}

/* buf.after(buf.store(src)) stored again with the same value: the second store is the first (test_dedup_assign) */
static UOp *dedup_assign(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(x);
  UOp *a1 = m[0], *st1 = m[1], *src2 = m[2];
  if (st1->src[0] != a1->src[0] || st1->src[1] != src2) return NULL;
  return a1;
}

/* buf.after(buf.store(buf.after(buf.store(src)))): storing a buffer's own current contents into itself */
static UOp *self_store_of_state(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  UOp *buf = m[0], *a1 = m[1];
  if (x->src[0] != buf || a1->src[0] != buf || a1->src[1]->src[0] != buf) return NULL;
  return a1;
}

static const DType *uint_of_size(int bytes) {
  switch (bytes) {
  case 1: return DT_UINT8;
  case 2: return DT_UINT16;
  case 4: return DT_UINT32;
  default: return DT_UINT64;
  }
}

/* the body of expand_bitcast, built with the tensor layer's builders (tinygrad writes it with Tensor methods) */
static UOp *bitcast_by_shifts(UOp *x, const DType *to) {
  int ns = dt_itemsize(to), os = dt_itemsize(x->dtype);
  const DType *new_uint = uint_of_size(ns);
  UOp *tmp = mix_bitcast(x, uint_of_size(os));
  Shape xs;
  if (!tmp || !mix_shape(x, &xs) || xs.ndim == 0 || xs.ndim >= TG_MAX_DIMS) return NULL;
  if (ns > os) {
    int rate = ns / os;
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < xs.ndim - 1; i++) shape[i] = xs.d[i];
    shape[xs.ndim - 1] = xs.d[xs.ndim - 1] / rate;
    shape[xs.ndim] = rate;
    tmp = mix_reshape(tmp, shape, xs.ndim + 1);
    UOp *sum = NULL;
    for (int i = 0; i < rate && tmp; i++) {
      int64_t bounds[2 * TG_MAX_DIMS];
      for (int k = 0; k < xs.ndim; k++) { bounds[2 * k] = 0; bounds[2 * k + 1] = shape[k]; }
      bounds[2 * xs.ndim] = i;
      bounds[2 * xs.ndim + 1] = i + 1;
      UOp *part = mix_alu(TG_OP_SHL, mix_cast(mix_shrink(tmp, bounds, xs.ndim + 1), new_uint), mix_weak_int(8 * i * os));
      sum = sum ? mix_add(sum, part) : part;
    }
    return mix_bitcast(mix_squeeze(sum, -1), to);
  }
  UOp *parts[8];
  int n = os / ns;
  for (int i = 0; i < n; i++) parts[i] = mix_alu(TG_OP_SHR, tmp, mix_weak_int(8 * i * ns));
  return mix_bitcast(mix_cast(mix_flatten(mix_stack(parts, n, -1), -2, -1), new_uint), to);
}

/* a BITCAST that changes the element size becomes shifts over an unsigned view (tinygrad expand_bitcast) */
static UOp *expand_bitcast(RwCtx *rw, UOp *bc, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOp *x = bc->src[0];
  if (dt_itemsize(bc->dtype) == dt_itemsize(x->dtype)) return NULL;
  const char *dev = sched_device(x);
  if (dev && (strncmp(dev, "DISK", 4) == 0 || strncmp(dev, "TINYFS", 6) == 0)) return NULL;
  mix_ctx_begin("bitcast");
  UOp *r = uop_keep(bitcast_by_shifts(x, bc->dtype));
  mix_ctx_end();
  uop_drop(r); /* back in the rewrite's scope */
  return r;
}

static const Rule earliest_rules[] = {
  RULE("(RESHAPE i:(RESHAPE _ _) _)", merge_reshapes, NULL),
  RULE("(RESHAPE x2 _)", noop_reshape, NULL),
  RULE("(PERMUTE x2:PERMUTE)", merge_permutes, NULL),
  RULE("PERMUTE", noop_permute, NULL),
  RULE("(AFTER r:Movement|INDEX ...)", mop_out_of_after, NULL),
  RULE("(END r:Movement ...)", mop_out_of_end, NULL),
  RULE("DETACH|CONTIGUOUS_BACKWARD|CUSTOM_GRAD", drop_src0, NULL),
  RULE("SINK", sink_of_bases, NULL),
  RULE("(REDUCE x)", split_reduceop, NULL),
  RULE("(REDUCE x)", pack_matmul_operand, NULL),
  RULE("(STORE (RESHAPE dst _) (RESHAPE src _))", store_reshapes, NULL),
  RULE("(STORE target src)", fix_store_hazard, NULL),
  RULE("(AFTER a1:(AFTER _ st1:STORE) (STORE a1 src))", dedup_assign, NULL),
  RULE("(AFTER _ (STORE buf a1:(AFTER buf STORE)))", self_store_of_state, NULL),
  RULE("BITCAST", expand_bitcast, NULL),
  RULE("x", size_zero, NULL),
};

UOp *sched_earliest_rewrites(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("earliest rewrites", earliest_rules);
  ShapeCache sc;
  shape_cache_init(&sc);
  ShapeCache *prev = g_shapes;
  g_shapes = &sc;
  UOp *r = pm_graph_rewrite(sink, pm, NULL, RW_BOTTOM_UP, NULL, "earliest rewrites");
  g_shapes = prev;
  shape_cache_free(&sc);
  return r;
}

