/* cg_gpu.c — the codegen passes for devices with workgroups (tinygrad codegen/gpudims.py and the GPU parts of
 * codegen/__init__.py):
 *   group reduce   a REDUCE over GROUP_REDUCE ranges (GROUP/GROUPTOP opts) reduces its other ranges per thread, writes
 *                  the partials to a LOCAL (shared) buffer indexed by (LOCAL ranges, group ranges, upcast lane), and
 *                  reduces the buffer again over new REDUCE ranges (id + 100) — tinygrad fix_group_for_reduce +
 *                  add_local_buffer; the lanes of one upcast reduce share the buffer (and its barrier);
 *   gpudims        GLOBAL ranges -> gidx<n> (block index; reversed: the innermost range is x), LOCAL / GROUP_REDUCE
 *                  -> lidx<n> (thread index), or flat idx<n> under NOLOCALS, merged or split to fit the device's
 *                  global_max / local_max (get_grouped_dims); a global STORE whose index misses a local range is done
 *                  by the thread where that range is 0; the CPU's THREAD range -> the core_id Variable;
 *   barriers       a load from LOCAL memory ordered (AFTER) behind a LOCAL store waits at a BARRIER; a loop that
 *                  stores and loads the same LOCAL buffer ends its body with one (pm_implicit_barriers). */
#include "cg_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================================================================================
 * group reduce (runs inside remove reduces: the REDUCEs it makes become accumulators there)
 * ================================================================================================================ */

static int64_t range_extent(UOp *r) { return uop_vmax(r) + 1; }

/* the flat index of a row-major buffer of dims (extents of the first ranges) at idx (tinygrad pm_mops on INDEX of a
 * RESHAPE: sum of idx[k] * prod(dims[k+1:])) */
static UOp *flat_index(UOp *const *idx, const int64_t *dims, size_t n) {
  UOp *acc = NULL;
  for (size_t k = 0; k < n; k++) {
    int64_t stride = 1;
    for (size_t j = k + 1; j < n; j++) stride *= dims[j];
    UOp *term = stride == 1 ? idx[k] : uop_mul(idx[k], uop_const_int(idx[k]->dtype, stride));
    acc = acc ? uop_add(acc, term) : term;
  }
  return acc ? acc : uop_const_int(DT_WEAKINT, 0);
}

/* the reduce's identity: what a lane outside a padded range contributes */
static UOp *reduce_identity(TgOp op, const DType *d) { return cg_weak_const(d, uop_identity_element(op, d)); }

/* The group reduce of `n` sibling REDUCEs xs (the upcast lanes of one reduce: same ranges, same op and dtype) through
 * ONE LOCAL buffer indexed (LOCAL ranges, group ranges, lane), as tinygrad's buffer of a shaped reduce: one barrier for
 * all lanes, and the lanes of a thread side by side (vector stores and loads). out[k] replaces xs[k]. */
static void group_reduce_lanes(UOp *const *xs, size_t n, int64_t *local_num, UOp **out) {
  UOp *x = xs[0];
  UOpVec gfr = {0}, rest = {0}, topo = {0}, locals = {0}, loops = {0};
  for (uint32_t i = 1; i < x->nsrc; i++) {
    UOp *r = x->src[i];
    if (r->op == TG_OP_RANGE && cg_axis_type(r) == AXIS_GROUP_REDUCE) tg_vec_push(&gfr, r);
    else tg_vec_push(&rest, r);
  }
  /* the LOCAL ranges the values live in are axes of the buffer too (each thread of the group its own row) */
  for (size_t k = 0; k < n; k++) {
    topo.len = 0;
    uop_toposort(xs[k], NULL, NULL, &topo);
    for (size_t i = 0; i < topo.len; i++)
      if (topo.data[i]->op == TG_OP_RANGE && cg_axis_type(topo.data[i]) == AXIS_LOCAL && !cg_vec_has(&locals, topo.data[i]))
        tg_vec_push(&locals, topo.data[i]);
  }
  /* the second reduce's ranges: the group ranges again, as REDUCE ranges with id + 100. A single group of 64 or more
   * threads (a small output's wide GROUPTOP, a fused row's block: opt_heuristic.c) is read 8 partials an iteration,
   * combined as a tree, not one: the loop every thread runs over the partials is a chain of dependent shared-memory
   * loads, and 8 independent ones per step (two float4 shared loads) make it an eighth as long. Measured on the H200
   * (softmax 4096x4096 in one kernel, 256 threads a row, DEBUG=2): 59.0 us with the plain loop, 55.5 us with 8. Not
   * tinygrad's (its loop reads one partial a step). GROUP_READ8=0 turns it off. */
  int64_t step = 1;
  if (n == 1 && gfr.len == 1 && range_extent(gfr.data[0]) >= 64 && range_extent(gfr.data[0]) % 8 == 0 &&
      gfr.data[0]->src[0]->op == TG_OP_CONST && tg_getenv_int("GROUP_READ8", 1))
    step = 8;
  for (size_t i = 0; i < gfr.len; i++) {
    RangeArg a = *gfr.data[i]->arg.range;
    a.axis_id += 100;
    a.axis_type = AXIS_REDUCE;
    UOp *end = step > 1 ? uop_const_int(gfr.data[i]->src[0]->dtype, range_extent(gfr.data[i]) / step) : gfr.data[i]->src[0];
    tg_vec_push(&loops, uop_new(TG_OP_RANGE, gfr.data[i]->dtype, &end, 1, arg_range(&a)));
  }
  size_t nd = locals.len + gfr.len;
  UOp **store_idx = tg_malloc(nd * sizeof(UOp *)), **load_idx = tg_malloc(nd * sizeof(UOp *));
  int64_t *dims = tg_malloc(nd * sizeof(int64_t)), numel = (int64_t)n;
  for (size_t i = 0; i < nd; i++) {
    UOp *r = i < locals.len ? locals.data[i] : gfr.data[i - locals.len];
    store_idx[i] = r;
    load_idx[i] = i < locals.len ? r : loops.data[i - locals.len];
    dims[i] = range_extent(r);
    numel *= dims[i];
  }
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = (*local_num)++;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = x->dtype;
  p.addrspace = ADDR_LOCAL;
  UOp *size = uop_const_int(DT_WEAKINT, numel);
  UOp *buf = uop_new(TG_OP_BUFFER, x->dtype, &size, 1, arg_param(&p));
  UOp *sbase = flat_index(store_idx, dims, nd), *lbase = flat_index(load_idx, dims, nd);
  if (n > 1) {
    sbase = uop_mul(sbase, uop_const_int(sbase->dtype, (int64_t)n));
    lbase = uop_mul(lbase, uop_const_int(lbase->dtype, (int64_t)n));
  }
  /* buf[locals, group, k] = partial_k for every (locals, group); then read buf[locals, loop, k] */
  UOpVec stores = {0};
  for (size_t k = 0; k < n; k++) {
    UOp *partial = xs[k]->src[0];
    if (rest.len) { /* the partial reduce over the other ranges */
      UOpVec src = {0};
      tg_vec_push(&src, xs[k]->src[0]);
      for (size_t i = 0; i < rest.len; i++) tg_vec_push(&src, rest.data[i]);
      partial = uop_new_tagged(TG_OP_REDUCE, x->dtype, src.data, src.len, xs[k]->arg, xs[k]->tag);
      tg_vec_free(&src);
    } else if (partial->op == TG_OP_WHERE && uop_is_invalid(partial->src[2])) {
      /* a padded lane (PADTO) still writes its slot, with the identity: an Invalid value would gate the store away and
       * the second reduce would read the slot unwritten (not tinygrad's: it loses those lanes) */
      partial = uop_where(partial->src[0], partial->src[1], reduce_identity((TgOp)x->arg.red.op, x->dtype));
    }
    UOp *at = n > 1 ? uop_add(sbase, uop_const_int(sbase->dtype, (int64_t)k)) : sbase;
    UOp *si[2] = {buf, at};
    UOp *st[2] = {uop_new(TG_OP_INDEX, x->dtype, si, 2, arg_none()), partial};
    tg_vec_push(&stores, uop_new(TG_OP_STORE, DT_VOID, st, 2, arg_none()));
  }
  UOpVec end_src = {0};
  tg_vec_push(&end_src, stores.len == 1 ? stores.data[0] : uop_new(TG_OP_GROUP, DT_VOID, stores.data, stores.len, arg_none()));
  for (size_t i = 0; i < nd; i++) tg_vec_push(&end_src, store_idx[i]);
  UOp *end = uop_new(TG_OP_END, DT_VOID, end_src.data, end_src.len, arg_none());
  UOp *af[2] = {buf, end};
  UOp *written = uop_new(TG_OP_AFTER, buf->dtype, af, 2, arg_none());
  Arg ra = x->arg;
  ra.red.naxes = 0; /* horizontal reduces stay in the first reduce */
  for (size_t k = 0; k < n; k++) {
    UOp *at = n > 1 ? uop_add(lbase, uop_const_int(lbase->dtype, (int64_t)k)) : lbase;
    UOp *li[2] = {written, at};
    UOpVec red = {0};
    UOp *val = uop_new(TG_OP_INDEX, x->dtype, li, 2, arg_none());
    for (int64_t j = 0; j < step && step > 1; j++) { /* partials loop*8 + j, a tree of the reduce's op */
      UOp *g = loops.data[0];
      load_idx[nd - 1] = uop_add(uop_mul(g, uop_const_int(g->dtype, step)), uop_const_int(g->dtype, j));
      UOp *lj[2] = {written, flat_index(load_idx, dims, nd)};
      UOp *v = uop_new(TG_OP_INDEX, x->dtype, lj, 2, arg_none());
      val = j == 0 ? v : uop_alu2((TgOp)x->arg.red.op, val, v);
    }
    tg_vec_push(&red, val);
    for (size_t i = 0; i < loops.len; i++) tg_vec_push(&red, loops.data[i]);
    out[k] = uop_new_tagged(TG_OP_REDUCE, x->dtype, red.data, red.len, ra, xs[k]->tag);
    tg_vec_free(&red);
  }
  tg_free(store_idx); tg_free(load_idx); tg_free(dims);
  tg_vec_free(&stores); tg_vec_free(&end_src);
  tg_vec_free(&gfr); tg_vec_free(&rest); tg_vec_free(&topo); tg_vec_free(&locals); tg_vec_free(&loops);
}

static bool has_group_range(const UOp *x) {
  for (uint32_t i = 1; i < x->nsrc; i++)
    if (x->src[i]->op == TG_OP_RANGE && cg_axis_type(x->src[i]) == AXIS_GROUP_REDUCE) return true;
  return false;
}

static bool siblings(const UOp *a, const UOp *b) {
  if (a->nsrc != b->nsrc || a->dtype != b->dtype || a->arg.red.op != b->arg.red.op || a->arg.red.naxes != b->arg.red.naxes)
    return false;
  for (uint32_t i = 1; i < a->nsrc; i++)
    if (a->src[i] != b->src[i]) return false;
  return cg_reduce_is_lane(a) && cg_reduce_is_lane(b);
}

/* one group at a time, the first in topological order: a later group reduce may read an earlier one's result, so it
 * is built from the graph where that one is already lowered */
UOp *cg_group_reduces(UOp *sink) {
  int64_t local_num = 0;
  for (;;) {
    UOpVec topo = {0}, group = {0};
    uop_toposort(sink, NULL, NULL, &topo);
    size_t first = topo.len;
    for (size_t i = 0; i < topo.len && first == topo.len; i++) {
      UOp *x = topo.data[i];
      if (x->op == TG_OP_REDUCE && x->nsrc >= 2 && x->arg.kind == ARG_REDUCE && has_group_range(x)) first = i;
    }
    if (first == topo.len) {
      tg_vec_free(&topo);
      return sink;
    }
    tg_vec_push(&group, topo.data[first]);
    /* the lanes of one reduce: siblings that never read one another's result */
    for (size_t k = first + 1; k < topo.len; k++) {
      UOp *y = topo.data[k];
      if (y->op != TG_OP_REDUCE || !siblings(topo.data[first], y)) continue;
      bool independent = true;
      for (size_t g = 0; g < group.len && independent; g++)
        independent = !uop_in_backward_slice(y, group.data[g]) && !uop_in_backward_slice(group.data[g], y);
      if (independent) tg_vec_push(&group, y);
    }
    UOp **to = tg_malloc(group.len * sizeof(UOp *));
    group_reduce_lanes(group.data, group.len, &local_num, to);
    sink = uop_substitute(sink, group.data, to, group.len);
    tg_free(to);
    tg_vec_free(&topo);
    tg_vec_free(&group);
  }
}

/* ================================================================================================================
 * gpudims
 * ================================================================================================================ */

#define GPU_DIMS_MAX 16

/* tinygrad _group_dims: merge neighbours until the dims fit max_sizes; false when that is impossible */
static bool group_dims(int64_t *dims, size_t *n, const int64_t *max, size_t nmax) {
  for (;;) {
    bool fits = *n <= nmax;
    for (size_t i = 0; i < *n && i < nmax && fits; i++) fits = dims[i] <= max[i];
    if (fits) return true;
    size_t i = 0;
    for (; i < nmax; i++)
      if (i + 1 < *n && dims[i] * dims[i + 1] <= max[i]) break;
    if (i == nmax) return false;
    dims[i] *= dims[i + 1];
    memmove(dims + i + 1, dims + i + 2, (*n - i - 2) * sizeof *dims);
    (*n)--;
  }
}

/* tinygrad _split_dims: a dim too large moves its smallest factor into the next dim (3 dims) */
static bool split_dims(int64_t *dims, size_t *n, const int64_t *max) {
  bool fits = true;
  for (size_t i = 0; i < *n && i < 3; i++) fits &= dims[i] <= max[i];
  if (fits) return true;
  int64_t d[3] = {1, 1, 1};
  for (size_t i = 0; i < *n && i < 3; i++) d[i] = dims[i];
  for (int i = 0; i < 3; i++) {
    while (d[i] > max[i]) {
      int64_t div = 1;
      for (int64_t k = 2; k * k <= d[i] || k == 2; k++)
        if (d[i] % k == 0) { div = k; break; }
      if (div == 1 || d[i] % div) return false;
      d[i] /= div;
      d[(i + 1) % 3] *= div;
    }
  }
  *n = d[2] == 1 ? 2 : 3;
  for (size_t i = 0; i < *n; i++) dims[i] = d[i];
  return true;
}

static UOp *special(const char *prefix, size_t i, int64_t size) {
  char name[32];
  snprintf(name, sizeof name, "%s%u", prefix, (unsigned)(i % 100));
  UOp *end = uop_const_int(DT_WEAKINT, size);
  return uop_new(TG_OP_SPECIAL, DT_WEAKINT, &end, 1, arg_str(name));
}

/* tinygrad get_grouped_dims: one index expression per original dim (out[n]) over SPECIALs that fit max_sizes */
static bool grouped_dims(const char *prefix, const int64_t *dims_in, size_t n, const int64_t *max, bool reverse,
                         UOp **out) {
  int64_t dims[GPU_DIMS_MAX], limited[GPU_DIMS_MAX];
  for (size_t i = 0; i < n; i++) dims[i] = dims_in[reverse ? n - 1 - i : i];
  size_t nl = n;
  memcpy(limited, dims, n * sizeof *dims);
  bool grouped = group_dims(limited, &nl, max, 3);
  if (!grouped) nl = n, memcpy(limited, dims, n * sizeof *dims);
  if (nl > 3 || (nl == n && memcmp(limited, dims, n * sizeof *dims) == 0 && !split_dims(limited, &nl, max))) {
    StrBuf b;
    sb_init(&b);
    for (size_t i = 0; i < n; i++) sb_printf(&b, "%s%lld", i ? ", " : "", (long long)dims_in[i]);
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: cannot fit the %s dims (%s) into the device's limits (%lld, "
                 "%lld, %lld)", prefix, b.s, (long long)max[0], (long long)max[1], (long long)max[2]);
    sb_free(&b);
    return false;
  }
  UOp *flat = NULL;
  for (size_t i = 0; i < nl; i++) {
    int64_t later = 1;
    for (size_t j = i + 1; j < nl; j++) later *= limited[j];
    UOp *t = uop_mul(special(prefix, i, limited[i]), uop_const_int(DT_WEAKINT, later));
    flat = flat ? uop_add(flat, t) : uop_add(uop_const_int(DT_WEAKINT, 0), t);
  }
  for (size_t i = 0; i < n; i++) {
    int64_t later = 1;
    for (size_t j = i + 1; j < n; j++) later *= dims[j];
    UOp *e = uop_idiv(flat, uop_const_int(DT_WEAKINT, later));
    if (i) e = uop_mod(e, uop_const_int(DT_WEAKINT, dims[i]));
    out[reverse ? n - 1 - i : i] = uop_simplify(e);
  }
  return true;
}

/* get_grouped_dims for dims of which some are symbolic (a Variable's extent: the KV cache's start_pos + 1): the grid
 * is then computed at launch from the Variable values (tinygrad ProgramInfo.launch_dims). Neighbours merge while
 * their largest values overflow max (as tinygrad's _group_dims with _dim_max); a symbolic dim too large for its slot
 * cannot be split (that needs its factors) and fails with the dims named. */
static bool grouped_dims_sym(const char *prefix, UOp *const *dims_in, size_t n, const int64_t *max, bool reverse,
                             UOp **out) {
  UOp *dims[GPU_DIMS_MAX], *limited[GPU_DIMS_MAX];
  for (size_t i = 0; i < n; i++) dims[i] = limited[i] = dims_in[reverse ? n - 1 - i : i];
  size_t nl = n;
  for (;;) {
    bool fits = nl <= 3;
    for (size_t i = 0; i < nl && i < 3 && fits; i++) fits = uop_vmax(limited[i]) <= max[i];
    if (fits) break;
    size_t i = 0;
    for (; i < 3; i++)
      if (i + 1 < nl && uop_vmax(limited[i]) * uop_vmax(limited[i + 1]) <= max[i]) break;
    if (i == 3) {
      StrBuf b;
      sb_init(&b);
      for (size_t k = 0; k < n; k++) {
        char *t = uop_render(dims_in[k]);
        sb_printf(&b, "%s%s", k ? ", " : "", t);
        tg_free(t);
      }
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: cannot fit the symbolic %s dims (%s) into the device's "
                   "limits (%lld, %lld, %lld)", prefix, b.s, (long long)max[0], (long long)max[1], (long long)max[2]);
      sb_free(&b);
      return false;
    }
    limited[i] = uop_simplify(uop_mul(limited[i], limited[i + 1]));
    memmove(limited + i + 1, limited + i + 2, (nl - i - 2) * sizeof *limited);
    nl--;
  }
  UOp *sp[GPU_DIMS_MAX];
  for (size_t i = 0; i < nl; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s%u", prefix, (unsigned)i);
    sp[i] = uop_new(TG_OP_SPECIAL, DT_WEAKINT, &limited[i], 1, arg_str(name));
  }
  if (nl == n) { /* nothing merged: one SPECIAL per dim */
    for (size_t i = 0; i < n; i++) out[reverse ? n - 1 - i : i] = sp[i];
    return true;
  }
  UOp *flat = NULL;
  for (size_t i = 0; i < nl; i++) {
    UOp *t = sp[i];
    for (size_t j = i + 1; j < nl; j++) t = uop_mul(t, limited[j]);
    flat = flat ? uop_add(flat, t) : t;
  }
  for (size_t i = 0; i < n; i++) {
    UOp *e = flat, *later = NULL;
    for (size_t j = i + 1; j < n; j++) later = later ? uop_mul(later, dims[j]) : dims[j];
    if (later) e = uop_idiv(e, later);
    if (i) e = uop_mod(e, dims[i]);
    out[reverse ? n - 1 - i : i] = uop_simplify(e);
  }
  return true;
}

static int range_key_cmp(const void *pa, const void *pb) {
  const UOp *a = *(const UOp *const *)pa, *b = *(const UOp *const *)pb;
  RangeArg x = *a->arg.range, y = *b->arg.range;
  x.axis_type = y.axis_type = 0; /* tinygrad sorts by arg[0:-1] */
  return cg_range_arg_cmp(&x, &y);
}

/* the buffer an INDEX/STORE reaches (through AFTER, CAST...) */
static const UOp *buf_of(const UOp *u) {
  while (u && u->op != TG_OP_PARAM && u->op != TG_OP_BUFFER && u->nsrc) u = u->src[0];
  return u;
}
static AddrSpace buf_addrspace(const UOp *u) {
  const UOp *b = buf_of(u);
  return b && b->arg.kind == ARG_PARAM ? (AddrSpace)b->arg.param->addrspace : ADDR_NONE;
}

static UOp *core_id_for(UOp *r, const Renderer *ren) {
  TG_UNUSED(ren);
  int64_t n;
  if (!uop_ssimplify_int(r->src[0], &n)) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: a symbolic THREAD axis not supported yet");
    return NULL;
  }
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = -1;
  p.multiple_of = 1;
  p.axis = -1;
  p.vmin = 0;
  p.vmax = n - 1;
  p.dtype = DT_INT32;
  p.addrspace = ADDR_ALU;
  strcpy(p.name, "core_id");
  return uop_cast(uop_new(TG_OP_PARAM, DT_INT32, NULL, 0, arg_param(&p)), r->dtype);
}

/* Local ranges that no value lives in together can share one thread index: every value needs the threads of at most
 * one of them, and each of those threads exists once. A row kernel's store loop (LOCAL) and its reductions' GROUP
 * ranges (opt_heuristic.c gpu_row_kernel) are such ranges: merged, the block has T threads, not T^3, and the loops
 * read the same element in the same thread. Only when every local range has the same extent and no value lives in two
 * of them (all merge into one); cls[k] = 0 then. Returns the number of classes (locals->len when nothing merges). */
static size_t merge_independent_locals(const UOpVec *topo, const UOpVec *locals, int *cls) {
  for (size_t k = 0; k < locals->len; k++) cls[k] = (int)k;
  if (locals->len < 2 || !tg_getenv_int("GPU_ROW_KERNEL", 1)) return locals->len;
  int64_t n0;
  for (size_t k = 0; k < locals->len; k++) {
    int64_t n;
    if (!uop_ssimplify_int(locals->data[k]->src[0], &n) || (k && n != n0)) return locals->len;
    n0 = n;
  }
  bool independent = true, grouped = false;
  CgRanges rr;
  cg_ranges_init(&rr);
  for (size_t i = 0; i < topo->len && independent; i++) {
    const UOpVec *have = cg_ranges_of(&rr, topo->data[i]);
    int c = 0;
    for (size_t k = 0; k < locals->len; k++) c += cg_vec_has(have, locals->data[k]);
    independent = c < 2;
  }
  cg_ranges_free(&rr);
  for (size_t k = 0; k < locals->len; k++) grouped |= cg_axis_type(locals->data[k]) == AXIS_GROUP_REDUCE;
  if (!independent || !grouped) return locals->len;
  for (size_t k = 0; k < locals->len; k++) cls[k] = 0;
  return 1;
}

UOp *cg_add_gpudims(UOp *sink, const Renderer *ren) {
  UOpVec topo = {0}, globals = {0}, locals = {0}, from = {0}, to = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  UOp *ret = sink;
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op == TG_OP_SPECIAL) goto done; /* already has gpudims */
    if (u->op != TG_OP_RANGE) continue;
    AxisType t = cg_axis_type(u);
    if (t == AXIS_DEVICE) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: DEVICE axis not supported yet");
      ret = NULL;
      goto done;
    }
    if (t == AXIS_GLOBAL || t == AXIS_THREAD) tg_vec_push(&globals, u);
    if (t == AXIS_WARP || t == AXIS_LOCAL || t == AXIS_GROUP_REDUCE) tg_vec_push(&locals, u);
  }
  if (globals.len == 0 && locals.len == 0) goto done;
  if (globals.len + locals.len > GPU_DIMS_MAX) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: more than %d GPU dims not supported yet", GPU_DIMS_MAX);
    ret = NULL;
    goto done;
  }
  if (globals.len) qsort(globals.data, globals.len, sizeof(UOp *), range_key_cmp);
  if (locals.len) qsort(locals.data, locals.len, sizeof(UOp *), range_key_cmp);
  const KernelInfo *ki = sink->arg.kind == ARG_KERNEL ? sink->arg.kernel : NULL;
  int cls[GPU_DIMS_MAX];
  size_t ncls = ren->has_local && !ren->has_threads ? merge_independent_locals(&topo, &locals, cls) : locals.len;
  if (ncls != locals.len) for (size_t k = 0; k < locals.len; k++) cls[k] = 0;
  else for (size_t k = 0; k < locals.len; k++) cls[k] = (int)k;
  UOp *idxs[2 * GPU_DIMS_MAX], *gsym[GPU_DIMS_MAX];
  int64_t gshape[GPU_DIMS_MAX], lshape[GPU_DIMS_MAX];
  bool symbolic = false; /* a GLOBAL extent that is an expression of Variables: grouped_dims_sym */
  for (size_t i = 0; i < globals.len + locals.len; i++) {
    UOp *r = i < globals.len ? globals.data[i] : locals.data[i - globals.len];
    int64_t n;
    if (!uop_ssimplify_int(r->src[0], &n)) {
      if (i < globals.len && cg_axis_type(r) == AXIS_GLOBAL && !ren->has_threads) {
        gsym[i] = uop_simplify(r->src[0]);
        gshape[i] = -1;
        symbolic = true;
        continue;
      }
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: a symbolic %s axis not supported yet",
                   uop_axis_type_name(cg_axis_type(r)));
      ret = NULL;
      goto done;
    }
    if (i < globals.len) gsym[i] = uop_const_int(DT_WEAKINT, n);
    (i < globals.len ? gshape : lshape)[i < globals.len ? i : i - globals.len] = n;
  }
  if (ren->has_threads) { /* the CPU: one THREAD range -> core_id */
    if (locals.len || globals.len != 1) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: %s axes on a device without locals not supported yet",
                   locals.len ? "LOCAL/GROUP" : "several GLOBAL");
      ret = NULL;
      goto done;
    }
    if (!(idxs[0] = core_id_for(globals.data[0], ren))) { ret = NULL; goto done; }
  } else if (!ren->has_local) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: GLOBAL dims without a thread device not supported yet");
    ret = NULL;
    goto done;
  } else if (ki && ki->dont_use_locals) {
    TG_ASSERT(locals.len == 0, "(opt_apply rejects NOLOCALS with local axes)");
    if (!(symbolic ? grouped_dims_sym("idx", gsym, globals.len, ren->global_max, true, idxs)
                   : grouped_dims("idx", gshape, globals.len, ren->global_max, true, idxs))) { ret = NULL; goto done; }
  } else {
    if (!grouped_dims("lidx", lshape, ncls, ren->local_max, false, idxs + globals.len) ||
        !(symbolic ? grouped_dims_sym("gidx", gsym, globals.len, ren->global_max, true, idxs)
                   : grouped_dims("gidx", gshape, globals.len, ren->global_max, true, idxs))) {
      ret = NULL;
      goto done;
    }
  }
  /* a global store whose index does not depend on a local range: only the thread where that range is 0 writes */
  CgRanges rr;
  cg_ranges_init(&rr);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_STORE || u->src[0]->op != TG_OP_INDEX || buf_addrspace(u->src[0]) != ADDR_GLOBAL) continue;
    UOp *idx = u->src[0];
    const UOpVec *have = cg_ranges_of(&rr, idx);
    UOp *mask = NULL;
    for (size_t k = 0; k < locals.len; k++) {
      bool in_class = false; /* a merged local range: the store has its thread index when it has any of the class */
      for (size_t j = 0; j < locals.len; j++) in_class |= cls[j] == cls[k] && cg_vec_has(have, locals.data[j]);
      if (in_class || (ncls != locals.len && k > 0)) continue;
      UOp *eq = uop_alu2(TG_OP_CMPEQ, locals.data[k], uop_const_int(locals.data[k]->dtype, 0));
      mask = mask ? uop_and(mask, eq) : eq;
    }
    if (!mask) continue;
    TG_ASSERT(idx->nsrc == 2, "(a global store index has 2 sources)");
    UOp *src[2] = {idx->src[0], uop_where(mask, idx->src[1], uop_invalid())};
    tg_vec_push(&from, idx);
    tg_vec_push(&to, uop_new(TG_OP_INDEX, idx->dtype, src, 2, idx->arg));
  }
  cg_ranges_free(&rr);
  if (from.len) ret = uop_substitute(ret, from.data, to.data, from.len);
  from.len = to.len = 0;
  /* then every GPU range by its index expression (the masks above included) */
  for (size_t k = 0; k < globals.len + locals.len; k++) {
    UOp *r = k < globals.len ? globals.data[k] : locals.data[k - globals.len];
    if (cg_axis_type(r) == AXIS_REDUCE) continue;
    tg_vec_push(&from, r);
    tg_vec_push(&to, k < globals.len ? idxs[k] : idxs[globals.len + (size_t)cls[k - globals.len]]);
  }
  if (from.len) ret = uop_substitute(ret, from.data, to.data, from.len);
done:
  tg_vec_free(&topo); tg_vec_free(&globals); tg_vec_free(&locals); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

/* ================================================================================================================
 * implicit barriers (tinygrad pm_implicit_barriers)
 * ================================================================================================================ */

static bool is_local_store(const UOp *x) { return x->op == TG_OP_STORE && buf_addrspace(x->src[0]) == ADDR_LOCAL; }

static bool gate_not_barrier(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return u->op != TG_OP_BARRIER;
}

/* AFTER(local buf, deps) whose deps hold a LOCAL store -> AFTER(buf, BARRIER(deps)) */
static UOp *add_raw_barrier(RwCtx *rw, UOp *after, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (after->nsrc < 2 || buf_addrspace(after) != ADDR_LOCAL) return NULL;
  UOpVec deps = {0};
  uop_toposort_many(after->src + 1, after->nsrc - 1, gate_not_barrier, NULL, &deps);
  bool stores = false;
  for (size_t i = 0; i < deps.len && !stores; i++) stores = is_local_store(deps.data[i]);
  tg_vec_free(&deps);
  if (!stores) return NULL;
  UOp *bar = uop_new(TG_OP_BARRIER, DT_VOID, after->src + 1, after->nsrc - 1, arg_none());
  UOp *src[2] = {after->src[0], bar};
  return uop_new(TG_OP_AFTER, after->dtype, src, 2, after->arg);
}

/* END of a loop whose body stores and loads the same LOCAL buffer -> END(BARRIER(body, loads), ranges) */
static UOp *add_war_barrier(RwCtx *rw, UOp *end, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (end->nsrc < 2 || end->src[0]->op == TG_OP_BARRIER) return NULL;
  UOpVec rngs = {0}, sl = {0}, bufs = {0}, loads = {0};
  UOp *ret = NULL;
  for (uint32_t i = 1; i < end->nsrc; i++) {
    UOp *r = end->src[i];
    AxisType t = r->op == TG_OP_RANGE ? cg_axis_type(r) : AXIS_GLOBAL;
    if (r->op == TG_OP_RANGE && (t == AXIS_REDUCE || t == AXIS_WEAK || t == AXIS_LOOP) && uop_vmax(r) > 0)
      tg_vec_push(&rngs, r);
  }
  if (!rngs.len) goto done;
  uop_toposort(end->src[0], NULL, NULL, &sl);
  CgRanges rr;
  cg_ranges_init(&rr);
  for (size_t i = 0; i < sl.len; i++) {
    UOp *x = sl.data[i];
    if (!is_local_store(x)) continue;
    const UOpVec *xr = cg_ranges_of(&rr, x);
    bool inside = false;
    for (size_t k = 0; k < rngs.len && !inside; k++) inside = cg_vec_has(xr, rngs.data[k]);
    if (inside && !cg_vec_has(&bufs, buf_of(x->src[0]))) tg_vec_push(&bufs, (UOp *)buf_of(x->src[0]));
  }
  cg_ranges_free(&rr);
  for (size_t i = 0; i < sl.len; i++)
    if (sl.data[i]->op == TG_OP_LOAD && cg_vec_has(&bufs, buf_of(sl.data[i]->src[0]))) tg_vec_push(&loads, sl.data[i]);
  if (!loads.len) goto done;
  UOpVec bsrc = {0}, esrc = {0};
  tg_vec_push(&bsrc, end->src[0]);
  for (size_t i = 0; i < loads.len; i++) tg_vec_push(&bsrc, loads.data[i]);
  tg_vec_push(&esrc, uop_new(TG_OP_BARRIER, DT_VOID, bsrc.data, bsrc.len, arg_none()));
  for (uint32_t i = 1; i < end->nsrc; i++) tg_vec_push(&esrc, end->src[i]);
  ret = uop_new(TG_OP_END, end->dtype, esrc.data, esrc.len, end->arg);
  tg_vec_free(&bsrc); tg_vec_free(&esrc);
done:
  tg_vec_free(&rngs); tg_vec_free(&sl); tg_vec_free(&bufs); tg_vec_free(&loads);
  return ret;
}

static const Rule barrier_rules[] = {
    RULE("(AFTER _ ...)", add_raw_barrier, NULL),
    RULE("(END _ ...)", add_war_barrier, NULL),
};

UOp *cg_add_implicit_barriers(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("implicit barriers", barrier_rules);
  return pm_graph_rewrite(sink, pm, NULL, 0, NULL, "add implicit barriers");
}
