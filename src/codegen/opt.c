/* opt.c — tinygrad's Scheduler (codegen/opt/postrange.py): the opt axes of a kernel AST, apply_opt with its checks
 * (each failure is a KernelOptError with tinygrad's reason), shift_to (a range split into two), PADTO, SWAP, the
 * kernel name, and apply_opts, the codegen step that picks opts_to_apply, the heuristic or nothing (NOOPT). */
#include "cg_internal.h"
#include "opt.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const opt_names[OPT_OP_COUNT] = {"TC", "UPCAST", "UNROLL", "LOCAL", "THREAD",
                                                    "GROUP", "GROUPTOP", "NOLOCALS", "PADTO", "SWAP", "LOOP"};

const char *opt_op_name(OptOp op) { return (unsigned)op < OPT_OP_COUNT ? opt_names[op] : "?"; }

int opt_parse_list(const char *text, Opt *out, int cap) {
  int n = 0;
  const char *p = text;
  while (*p && n < cap) {
    char name[16];
    int axis, arg, used = 0, lvl, use, used_tc = 0;
    if (sscanf(p, "%15[A-Z]:%d:%d%n", name, &axis, &arg, &used) != 3) break;
    if (strcmp(name, "TC") == 0 && sscanf(p, "%15[A-Z]:%d:%d:%d:%d%n", name, &axis, &arg, &lvl, &use, &used_tc) == 5) {
      arg = opt_tc_arg(arg, lvl, use);
      used = used_tc;
    }
    for (int op = 0; op < OPT_OP_COUNT; op++)
      if (strcmp(opt_op_name((OptOp)op), name) == 0) out[n++] = (Opt){op, axis, arg};
    p += used;
    if (*p == ',') p++;
  }
  return n;
}

void opt_format(Opt o, char *out, size_t cap) {
  char axis[24], arg[24];
  if (o.axis < 0) snprintf(axis, sizeof axis, "None");
  else snprintf(axis, sizeof axis, "%d", (int)o.axis);
  if (o.op == OPT_NOLOCALS) snprintf(arg, sizeof arg, "None");
  else if (o.op == OPT_TC) {
    int sel, lvl, use;
    opt_tc_arg_split(o.arg, &sel, &lvl, &use);
    snprintf(arg, sizeof arg, "(%d, %d, %d)", sel, lvl, use);
  }
  else snprintf(arg, sizeof arg, "%d", (int)o.arg);
  snprintf(out, cap, "Opt(op=OptOps.%s, axis=%s, arg=%s)", opt_op_name((OptOp)o.op), axis, arg);
}

/* ================================================================================================================
 * the opt axes
 * ================================================================================================================ */

/* tinygrad axis_to_pos: the order of axis types in the shape (LOCAL and GROUP_REDUCE share a place) */
static int axis_pos(AxisType t) {
  switch (t) {
  case AXIS_DEVICE: return -2;
  case AXIS_WEAK: case AXIS_LOOP: return -1;
  case AXIS_THREAD: case AXIS_GLOBAL: return 0;
  case AXIS_WARP: return 1;
  case AXIS_LOCAL: case AXIS_GROUP_REDUCE: return 2;
  case AXIS_UPCAST: return 3;
  case AXIS_REDUCE: return 4;
  case AXIS_UNROLL: return 5;
  case AXIS_PLACEHOLDER: return 6;
  }
  return 6;
}

static int rng_sort_cmp(const void *pa, const void *pb) {
  const UOp *a = *(UOp *const *)pa, *b = *(UOp *const *)pb;
  int ka = axis_pos(cg_axis_type(a)), kb = axis_pos(cg_axis_type(b));
  if (ka != kb) return ka < kb ? -1 : 1;
  RangeArg x = *a->arg.range, y = *b->arg.range;
  x.axis_type = y.axis_type = 0; /* the type is the key's first part already */
  return cg_range_arg_cmp(&x, &y);
}

static void sched_rngs(UOp *ast, UOpVec *out) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op == TG_OP_RANGE && u->dtype != DT_VOID && uop_vmax(u) > 0 && cg_axis_type(u) != AXIS_DEVICE)
      tg_vec_push(out, u);
  }
  tg_vec_free(&topo);
  if (out->len) qsort(out->data, out->len, sizeof(UOp *), rng_sort_cmp);
}

void opt_sched_rngs(const OptScheduler *s, UOpVec *out) { sched_rngs(s->ast, out); }

/* the size of a range when it is a constant */
static bool range_size(UOp *r, int64_t *sz) {
  UOp *e = uop_simplify(r->src[0]);
  return uop_ssimplify_int(e, sz);
}

static int64_t range_size_or_max(UOp *r) {
  int64_t s;
  return range_size(r, &s) ? s : (int64_t)(uop_vmax(r) + 1);
}

int opt_sched_len(const OptScheduler *s) {
  UOpVec r = {0};
  sched_rngs(s->ast, &r);
  int n = (int)r.len;
  tg_vec_free(&r);
  return n;
}

void opt_sched_shape(const OptScheduler *s, int64_t *full_shape, AxisType *types) {
  UOpVec r = {0};
  sched_rngs(s->ast, &r);
  for (size_t i = 0; i < r.len; i++) {
    if (full_shape) full_shape[i] = range_size_or_max(r.data[i]);
    if (types) types[i] = cg_axis_type(r.data[i]);
  }
  tg_vec_free(&r);
}

/* the ranges of the kernel's outputs (END sources) that are not reduces (tinygrad _output_rngs) */
static void output_rngs(UOp *ast, UOpVec *out) {
  CgRanges rr;
  cg_ranges_init(&rr);
  for (uint32_t i = 0; i < ast->nsrc; i++) {
    UOp *s = ast->src[i];
    if (s->op != TG_OP_END) continue;
    for (uint32_t k = 1; k < s->nsrc; k++) {
      const UOpVec *v = cg_ranges_of(&rr, s->src[k]);
      for (size_t j = 0; j < v->len; j++)
        if (cg_axis_type(v->data[j]) != AXIS_REDUCE && !cg_vec_has(out, v->data[j])) tg_vec_push(out, v->data[j]);
    }
  }
  cg_ranges_free(&rr);
}

/* WEAK output ranges that every STAGE holds (tinygrad _globalizable_rngs) */
static void globalizable_rngs(UOp *ast, UOpVec *out) {
  UOpVec outs = {0}, topo = {0};
  output_rngs(ast, &outs);
  uop_toposort(ast, NULL, NULL, &topo);
  CgRanges rr;
  cg_ranges_init(&rr);
  for (size_t i = 0; i < outs.len; i++) {
    UOp *r = outs.data[i];
    if (cg_axis_type(r) != AXIS_WEAK) continue;
    bool in_all = true;
    for (size_t k = 0; k < topo.len && in_all; k++)
      if (topo.data[k]->op == TG_OP_STAGE) in_all = cg_vec_has(cg_ranges_of(&rr, topo.data[k]), r);
    if (in_all) tg_vec_push(out, r);
  }
  cg_ranges_free(&rr);
  tg_vec_free(&outs); tg_vec_free(&topo);
}

/* ================================================================================================================
 * the scheduler
 * ================================================================================================================ */

static int64_t max_range_id(UOp *ast) {
  UOpVec r = {0};
  sched_rngs(ast, &r);
  int64_t m = 0;
  for (size_t i = 0; i < r.len; i++) m = TG_MAX(m, r.data[i]->arg.range->axis_id);
  tg_vec_free(&r);
  return m;
}

void opt_set_ast(OptScheduler *s, UOp *ast) {
  UOp *old = s->ast;
  s->ast = uop_keep(ast);
  uop_drop(old);
}

/* tinygrad convert_loop_to_global: WEAK output ranges become GLOBAL on a device with locals */
static void convert_loop_to_global(OptScheduler *s) {
  if (!s->ren->has_local) return;
  UOpVec g = {0}, to = {0};
  globalizable_rngs(s->ast, &g);
  for (size_t i = 0; i < g.len; i++) tg_vec_push(&to, cg_range_retype(g.data[i], AXIS_GLOBAL));
  if (g.len) opt_set_ast(s, uop_substitute(s->ast, g.data, to.data, g.len));
  tg_vec_free(&g); tg_vec_free(&to);
}

void opt_sched_init(OptScheduler *s, UOp *ast, const Renderer *ren) {
  memset(s, 0, sizeof *s);
  s->ren = ren;
  s->ast = uop_keep(ast);
  if (ast->arg.kind == ARG_KERNEL) {
    const KernelInfo *ki = ast->arg.kernel;
    s->dont_use_locals = ki->dont_use_locals != 0;
    s->napplied = TG_MIN(ki->applied_opts, OPT_LIST_MAX);
    memcpy(s->applied, ki->applied, (size_t)s->napplied * sizeof(Opt));
  }
  s->next_range_id = max_range_id(ast) + 1;
  s->tc_index = -1;
  UOpScope sc = uop_scope_begin();
  convert_loop_to_global(s);
  uop_scope_end(sc);
}

void opt_sched_copy(OptScheduler *dst, const OptScheduler *src) {
  *dst = *src;
  uop_keep(dst->ast);
}

void opt_sched_free(OptScheduler *s) {
  uop_drop(s->ast);
  s->ast = NULL;
}

bool opt_sched_take(OptScheduler *s, OptScheduler *copy, bool ok) {
  opt_sched_free(ok ? s : copy);
  if (ok) *s = *copy;
  return ok;
}

static tg_status opt_error(const OptScheduler *s, Opt o, const char *why) {
  char buf[96];
  opt_format(o, buf, sizeof buf);
  UOpVec r = {0};
  sched_rngs(s->ast, &r);
  StrBuf shape;
  sb_init(&shape);
  for (size_t i = 0; i < r.len; i++) {
    char *e = uop_render(r.data[i]->src[0]);
    sb_printf(&shape, "%s%s%c", i ? " " : "", e, uop_axis_type_letter(cg_axis_type(r.data[i])));
    tg_free(e);
  }
  tg_status st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: %s: %s (shape %s)", buf, why, shape.s);
  sb_free(&shape);
  tg_vec_free(&r);
  return st;
}

/* tinygrad shift_to: rng (size n) -> rng'(n/amount)*amount + new (or new*(n/amount) + rng' for a top split); new is
 * a fresh range of new_type, or input_new (a TC lane bit) when given. *replaced / *made get rng' and new (may be NULL). */
bool opt_shift_to(OptScheduler *s, UOp *rng, int64_t amount, AxisType new_type, bool top, UOp *input_new,
                  UOp **replaced_out, UOp **made) {
  UOp *old_sz = uop_divides(rng->src[0], amount);
  if (!old_sz) return false;
  UOp *new_rng = input_new;
  if (!new_rng) {
    RangeArg a;
    memset(&a, 0, sizeof a);
    a.axis_id = s->next_range_id++;
    a.axis_type = (int32_t)new_type;
    new_rng = cg_range_new(uop_const_int(rng->dtype, amount), &a);
  }
  UOp *replaced = cg_range_resize(rng, old_sz);
  UOp *sub = top ? uop_add(uop_mul(new_rng, old_sz), replaced)
                 : uop_add(uop_mul(replaced, uop_const_int(rng->dtype, amount)), new_rng);
  opt_set_ast(s, uop_substitute(s->ast, &rng, &sub, 1));
  if (replaced_out) *replaced_out = replaced;
  if (made) *made = new_rng;
  return true;
}

static bool axis_has(const UOpVec *r, AxisType t) {
  for (size_t i = 0; i < r->len; i++)
    if (cg_axis_type(r->data[i]) == t) return true;
  return false;
}

/* tinygrad real_axis: the opt's axis as an index into rngs (UNROLL counts unrollable dims, GROUP the REDUCE ones) */
static int real_axis(const UOpVec *rngs, Opt o) {
  if (o.axis < 0) return -1;
  int n = 0;
  for (size_t i = 0; i < rngs->len; i++) {
    AxisType t = cg_axis_type(rngs->data[i]);
    int64_t sz;
    bool pick = o.op == OPT_UNROLL   ? (t == AXIS_GROUP_REDUCE || t == AXIS_REDUCE) && range_size(rngs->data[i], &sz) && sz > 1
                : (o.op == OPT_GROUP || o.op == OPT_GROUPTOP) ? t == AXIS_REDUCE
                                                              : true;
    if (pick && n++ == o.axis) return (int)i;
  }
  return -1;
}

/* the INDEX of an access: its index expression and its validity (WHERE(valid, idx, Invalid)) */
static UOp *index_expr(UOp *i) { return i->op == TG_OP_WHERE && uop_is_invalid(i->src[2]) ? i->src[1] : i; }
static UOp *index_valid(UOp *i) {
  return i->op == TG_OP_WHERE && uop_is_invalid(i->src[2]) ? i->src[0] : uop_const_bool(true);
}

/* PADTO: the axis runs to a multiple of arg, the new iterations masked (loads read nothing, stores are dropped, a
 * reduce sees its identity). An axis of a Variable's length (decode attention over start_pos + 1 keys) is padded
 * from its largest value: the loop gets a constant length, the mask keeps the symbolic bound (the GPU row kernel over
 * such a row: opt_heuristic.c gpu_row_kernel). */
static tg_status apply_padto(OptScheduler *s, Opt o, UOp *rng) {
  int64_t sz;
  bool symbolic = !range_size(rng, &sz);
  if (symbolic) sz = (int64_t)uop_vmax(rng) + 1;
  if (sz <= 0 || (symbolic && uop_vmin(rng->src[0]) < 0)) return opt_error(s, o, "only pad axes of a known bound");
  AxisType t = cg_axis_type(rng);
  if (t == AXIS_UPCAST || t == AXIS_UNROLL) return opt_error(s, o, "cannot pad upcasted");
  if (t == AXIS_THREAD) return opt_error(s, o, "cannot pad thread");
  if (o.arg <= 0) return opt_error(s, o, "pad needs a positive multiple");
  int64_t new_sz = (sz + o.arg - 1) / o.arg * o.arg;
  if (!(sz > new_sz / 4)) return opt_error(s, o, "pad adds more than quadruple the work");
  UOp *replaced = cg_range_resize(rng, uop_const_int(rng->src[0]->dtype, new_sz));
  /* in terms of the old range: the second substitution renames it */
  UOp *valid_old = symbolic ? uop_lt(rng, rng->src[0]) : uop_lt_int(rng, sz);
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(s->ast, NULL, NULL, &topo);
  UOpMap stores;
  uopmap_init(&stores);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_STORE) uopmap_put(&stores, topo.data[i]->src[0], topo.data[i]);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *b = topo.data[i];
    if (b->op != TG_OP_INDEX || b->nsrc != 2) continue;
    UOp *idx = index_expr(b->src[1]);
    if (idx != rng && !uop_in_backward_slice(idx, rng)) continue;
    UOp *nidx = uop_where(uop_and(valid_old, index_valid(b->src[1])), idx, uop_invalid());
    UOp *src[2] = {b->src[0], nidx};
    UOp *nb = uop_new(TG_OP_INDEX, b->dtype, src, 2, b->arg);
    tg_vec_push(&from, b);
    if (uopmap_get(&stores, b)) tg_vec_push(&to, nb);
    else tg_vec_push(&to, uop_where(valid_old, nb, uop_const(b->dtype, const_invalid())));
  }
  UOp *ast = from.len ? uop_substitute(s->ast, from.data, to.data, from.len) : s->ast;
  ast = uop_substitute(ast, &rng, &replaced, 1);
  opt_set_ast(s, ast);
  uopmap_free(&stores);
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return TG_OK;
}

static tg_status apply_swap(OptScheduler *s, Opt o, UOp *rng, const UOpVec *rngs) {
  if (o.arg < 0 || (size_t)o.arg >= rngs->len) return opt_error(s, o, "swap axis out of range");
  UOp *alt = rngs->data[o.arg];
  /* tinygrad swaps GLOBAL axes only; on a device without locals the output axes stay LOOP (WEAK) and are swapped
   * too, to order loops (a matmul over packed panels: opt_heuristic.c cpu_matmul_tiles) */
  AxisType ta = cg_axis_type(rng), tb = cg_axis_type(alt), want = s->ren->has_local ? AXIS_GLOBAL : AXIS_WEAK;
  if (ta != want || tb != want) return opt_error(s, o, s->ren->has_local ? "swap only for globals" : "swap only for loops");
  RangeArg a = *alt->arg.range, b = *rng->arg.range;
  a.axis_type = rng->arg.range->axis_type;
  b.axis_type = alt->arg.range->axis_type;
  UOp *from[2] = {rng, alt};
  UOp *to[2] = {uop_new(TG_OP_RANGE, rng->dtype, rng->src, rng->nsrc, arg_range(&a)),
                uop_new(TG_OP_RANGE, alt->dtype, alt->src, alt->nsrc, arg_range(&b))};
  opt_set_ast(s, uop_substitute(s->ast, from, to, 2));
  return TG_OK;
}

static int64_t prod_of(const UOpVec *rngs, const AxisType *types, int ntypes) {
  int64_t p = 1;
  for (size_t i = 0; i < rngs->len; i++)
    for (int k = 0; k < ntypes; k++)
      if (cg_axis_type(rngs->data[i]) == types[k]) p *= range_size_or_max(rngs->data[i]);
  return p;
}

UOp *opt_first_reduce(UOp *ast) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  UOp *r = NULL;
  for (size_t i = 0; i < topo.len && !r; i++)
    if (topo.data[i]->op == TG_OP_REDUCE) r = topo.data[i];
  tg_vec_free(&topo);
  return r;
}

/* A row kernel (schedule/rangeify.c's row rule, FUSE_ROWS): some REDUCE is used across an output range it does not
 * depend on — per row, the reductions run before the loop over the row (softmax in one kernel). */
bool opt_row_kernel(UOp *ast) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  bool row = false;
  for (size_t i = 0; i < topo.len && !row; i++) {
    UOp *x = topo.data[i];
    if (x->op != TG_OP_REDUCE) continue;
    for (size_t j = 0; j < topo.len && !row; j++) {
      UOp *r = topo.data[j];
      if (r->op != TG_OP_RANGE || r->arg.kind != ARG_RANGE) continue;
      AxisType t = cg_axis_type(r);
      if (t == AXIS_REDUCE || t == AXIS_UNROLL || t == AXIS_GROUP_REDUCE) continue;
      row = !uop_in_backward_slice(x, r);
    }
  }
  tg_vec_free(&topo);
  return row;
}

static bool uop_in_backward_slice_shallow(const UOp *x, const UOp *r) { /* r is one of x's own ranges */
  for (uint32_t k = 1; k < x->nsrc; k++)
    if (x->src[k] == r) return true;
  return false;
}

/* the largest LOCAL buffer a group reduce of a row kernel gets after splitting rng by amt: per REDUCE with a group
 * range (or rng among its ranges), the local-like ranges in its source times the split */
static int64_t row_kernel_smem(const OptScheduler *s, UOp *rng, int64_t amt, const UOpVec *rngs) {
  static const AxisType local_like[] = {AXIS_UPCAST, AXIS_WARP, AXIS_LOCAL, AXIS_GROUP_REDUCE};
  UOpVec topo = {0};
  uop_backward_slice(s->ast, &topo);
  CgRanges rr;
  cg_ranges_init(&rr);
  int64_t most = 0;
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i];
    if (x->op != TG_OP_REDUCE) continue;
    bool mine = false, grouped = false;
    for (uint32_t k = 1; k < x->nsrc; k++) {
      mine |= x->src[k] == rng;
      grouped |= x->src[k]->op == TG_OP_RANGE && cg_axis_type(x->src[k]) == AXIS_GROUP_REDUCE;
    }
    if (!mine && !grouped) continue;
    int64_t p = (int64_t)(x->dtype->bitsize / 8) * x->dtype->count;
    const UOpVec *live = cg_ranges_of(&rr, x->src[0]); /* the ranges its source lives in (inner reduces closed theirs) */
    for (size_t j = 0; j < rngs->len; j++) {
      bool ll = false;
      for (int k = 0; k < 4; k++) ll |= cg_axis_type(rngs->data[j]) == local_like[k];
      if (ll && (cg_vec_has(live, rngs->data[j]) || uop_in_backward_slice_shallow(x, rngs->data[j])))
        p *= range_size_or_max(rngs->data[j]);
    }
    if (mine || cg_vec_has(live, rng)) p *= amt;
    most = TG_MAX(most, p);
  }
  cg_ranges_free(&rr);
  tg_vec_free(&topo);
  return most;
}

static tg_status apply_split(OptScheduler *s, Opt o, UOp *rng, const UOpVec *rngs) {
  static const AxisType to_type[OPT_OP_COUNT] = {
      [OPT_LOCAL] = AXIS_LOCAL, [OPT_UPCAST] = AXIS_UPCAST, [OPT_UNROLL] = AXIS_UNROLL,
      [OPT_GROUP] = AXIS_GROUP_REDUCE, [OPT_GROUPTOP] = AXIS_GROUP_REDUCE, [OPT_THREAD] = AXIS_THREAD,
      [OPT_LOOP] = AXIS_WEAK};
  int64_t amt = o.arg;
  if (amt == 0) amt = range_size_or_max(rng);
  if (amt < 0) return opt_error(s, o, "negative amount");
  AxisType t = cg_axis_type(rng);
  UOp *red = opt_first_reduce(s->ast);
  bool group = o.op == OPT_GROUP || o.op == OPT_GROUPTOP;
  if (red && (group || axis_has(rngs, AXIS_GROUP_REDUCE))) {
    static const AxisType local_like[] = {AXIS_UPCAST, AXIS_WARP, AXIS_LOCAL, AXIS_GROUP_REDUCE};
    int64_t smem = amt * prod_of(rngs, local_like, 4) * (int64_t)(red->dtype->bitsize / 8) * red->dtype->count;
    /* a row kernel's reduces each have their own buffer, indexed by the local ranges their values live in only (the
     * store loop's LOCAL range is no axis of a reduce's buffer) */
    if (smem > s->ren->shared_max && opt_row_kernel(s->ast)) smem = row_kernel_smem(s, rng, amt, rngs);
    if (smem > s->ren->shared_max) return opt_error(s, o, "exceeds maximum shared memory size");
  }
  if (red && group) {
    CgRanges rr;
    cg_ranges_init(&rr);
    bool nested = false;
    const UOpVec *outer = cg_ranges_of(&rr, red);
    for (size_t i = 0; i < outer->len; i++) {
      AxisType ot = cg_axis_type(outer->data[i]);
      nested |= ot == AXIS_REDUCE || ot == AXIS_UNROLL || ot == AXIS_GROUP_REDUCE;
    }
    cg_ranges_free(&rr);
    if (nested) return opt_error(s, o, "cannot have a GROUP_REDUCE inside another reduce");
  }
  switch ((OptOp)o.op) {
  case OPT_UNROLL:
    if (amt > 32) return opt_error(s, o, "don't unroll more than 32");
    if (t != AXIS_GROUP_REDUCE && t != AXIS_REDUCE) return opt_error(s, o, "unroll is for GROUP_REDUCE/REDUCE");
    break;
  case OPT_UPCAST:
    if (amt > 16) return opt_error(s, o, "don't upcast more than 16");
    if (t != AXIS_GLOBAL && t != AXIS_LOCAL && t != AXIS_WEAK) return opt_error(s, o, "upcast is for GLOBAL/LOCAL/LOOP");
    break;
  case OPT_LOCAL:
    if (s->dont_use_locals) return opt_error(s, o, "can't use locals");
    if (t != AXIS_GLOBAL && t != AXIS_WEAK) return opt_error(s, o, "local is for globals");
    break;
  case OPT_THREAD: {
    if (!s->ren->has_threads) return opt_error(s, o, "target does not support threads");
    if (!s->ren->has_global_max || amt > s->ren->global_max[0]) return opt_error(s, o, "too many threads");
    if (axis_has(rngs, AXIS_THREAD)) return opt_error(s, o, "already threaded");
    UOpVec g = {0};
    globalizable_rngs(s->ast, &g);
    bool ok = cg_vec_has(&g, rng);
    tg_vec_free(&g);
    if (!ok) return opt_error(s, o, "can't apply range to this dim");
    break;
  }
  case OPT_GROUP: case OPT_GROUPTOP:
    if (s->dont_use_locals) return opt_error(s, o, "can't use locals");
    if (t != AXIS_REDUCE) return opt_error(s, o, "group is for reduce");
    break;
  case OPT_LOOP:
    /* the new inner loop gets the next range id, so it sorts after every other loop: (outer, other loops, inner) */
    if (s->ren->has_local) return opt_error(s, o, "loop split is for devices without locals");
    if (t != AXIS_WEAK) return opt_error(s, o, "loop split is for LOOP axes");
    if (amt < 2) return opt_error(s, o, "loop split needs an amount of at least 2");
    break;
  case OPT_TC: case OPT_NOLOCALS: case OPT_PADTO: case OPT_SWAP: case OPT_OP_COUNT: break;
  }
  if (amt <= 0) return opt_error(s, o, "amount must be positive");
  if (!opt_shift_to(s, rng, amt, to_type[o.op], o.op == OPT_GROUPTOP || o.op == OPT_THREAD, NULL, NULL, NULL)) {
    char *e = uop_render(rng->src[0]);
    char why[128];
    snprintf(why, sizeof why, "%lld can't divide %s", (long long)amt, e);
    tg_free(e);
    return opt_error(s, o, why);
  }
  return TG_OK;
}

tg_status opt_apply(OptScheduler *s, Opt o) {
  if ((unsigned)o.op >= OPT_OP_COUNT) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: unknown opt op %d", (int)o.op);
  if (s->napplied >= OPT_LIST_MAX) return opt_error(s, o, "too many opts");
  UOpVec rngs = {0};
  sched_rngs(s->ast, &rngs);
  UOpScope sc = uop_scope_begin();
  UOp *before = uop_keep(s->ast);
  int64_t next_id = s->next_range_id;
  bool no_locals_before = s->dont_use_locals;
  tg_status st = TG_OK;
  if (o.op == OPT_NOLOCALS) {
    if (axis_has(&rngs, AXIS_WARP) || axis_has(&rngs, AXIS_LOCAL) || axis_has(&rngs, AXIS_GROUP_REDUCE))
      st = opt_error(s, o, "no locals can't have locals");
    else s->dont_use_locals = true;
  } else if ((o.op == OPT_LOCAL || o.op == OPT_GROUP || o.op == OPT_GROUPTOP) && !s->ren->has_local) {
    st = opt_error(s, o, "locals needed for opt");
  } else if (o.op == OPT_TC) {
    st = opt_apply_tc(s, o);
  } else {
    int ax = real_axis(&rngs, o);
    if (ax < 0) {
      char why[96];
      snprintf(why, sizeof why, "invalid axis %d for %s (%zu axes)", (int)o.axis, opt_op_name((OptOp)o.op), rngs.len);
      st = opt_error(s, o, why);
    } else if (o.op == OPT_PADTO) {
      st = apply_padto(s, o, rngs.data[ax]);
    } else if (o.op == OPT_SWAP) {
      st = apply_swap(s, o, rngs.data[ax], &rngs);
    } else {
      st = apply_split(s, o, rngs.data[ax], &rngs);
    }
  }
  if (st == TG_OK) {
    s->applied[s->napplied++] = o;
  } else {
    opt_set_ast(s, before);
    s->next_range_id = next_id;
    s->dont_use_locals = no_locals_before;
    if (o.op == OPT_TC) s->tc_index = -1;
  }
  uop_drop(before);
  uop_scope_end_keep(sc, s->ast);
  tg_vec_free(&rngs);
  return st;
}

/* ================================================================================================================
 * the optimized AST
 * ================================================================================================================ */

static void kernel_name(UOp *ast, char out[TG_NAME_MAX]) {
  UOpVec topo = {0}, rngs = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  bool has_reduce = false;
  for (size_t i = 0; i < topo.len; i++) has_reduce |= topo.data[i]->op == TG_OP_REDUCE;
  tg_vec_free(&topo);
  sched_rngs(ast, &rngs);
  StrBuf b;
  sb_init(&b);
  sb_putc(&b, has_reduce ? 'r' : 'E');
  for (size_t i = 0; i < rngs.len; i++) {
    char *e = uop_render(uop_simplify(rngs.data[i]->src[0]));
    sb_printf(&b, "_%s", e);
    tg_free(e);
  }
  snprintf(out, TG_NAME_MAX, "%s", b.s);
  sb_free(&b);
  tg_vec_free(&rngs);
}

UOp *opt_get_optimized_ast(OptScheduler *s, const char *name_override) {
  KernelInfo ki;
  memset(&ki, 0, sizeof ki);
  if (name_override) snprintf(ki.name, sizeof ki.name, "%s", name_override);
  else kernel_name(s->ast, ki.name);
  ki.dont_use_locals = s->dont_use_locals;
  ki.applied_opts = s->napplied;
  memcpy(ki.applied, s->applied, (size_t)s->napplied * sizeof(Opt));
  UOp *ast = pm_graph_rewrite(s->ast, cg_pm_flatten_range(), NULL, 0, NULL, "flatten range");
  if (!ast) return NULL;
  return uop_new(TG_OP_SINK, DT_VOID, ast->src, ast->nsrc, arg_kernel(&ki));
}

UOp *opt_ast_with_opts(UOp *ast, const Opt *opts, int n) {
  KernelInfo ki;
  memset(&ki, 0, sizeof ki);
  if (ast->arg.kind == ARG_KERNEL) ki = *ast->arg.kernel;
  n = TG_MIN(TG_MAX(n, 0), KERNEL_OPTS_MAX);
  ki.has_opts_to_apply = 1;
  ki.nopts_to_apply = n;
  memset(ki.opts_to_apply, 0, sizeof ki.opts_to_apply);
  if (n) memcpy(ki.opts_to_apply, opts, (size_t)n * sizeof(Opt));
  return uop_new(TG_OP_SINK, DT_VOID, ast->src, ast->nsrc, arg_kernel(&ki));
}

static bool has_stage(UOp *ast) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  bool found = false;
  for (size_t i = 0; i < topo.len && !found; i++) found = topo.data[i]->op == TG_OP_STAGE;
  tg_vec_free(&topo);
  return found;
}

/* tinygrad apply_opts: opts_to_apply when the AST carries them, else the heuristic unless NOOPT (BEAM is chosen by
 * the engine, which hands its result over as opts_to_apply). DEBUG>=3 prints what was applied. */
UOp *cg_apply_opts(UOp *sink, const Renderer *ren) {
  OptScheduler s;
  opt_sched_init(&s, sink, ren);
  const KernelInfo *ki = sink->arg.kind == ARG_KERNEL ? sink->arg.kernel : NULL;
  UOp *ret = NULL;
  if (ki && ki->has_opts_to_apply) {
    for (int i = 0; i < ki->nopts_to_apply; i++)
      if (opt_apply(&s, ki->opts_to_apply[i]) != TG_OK) goto done;
  } else if (!tg_getenv_int("NOOPT", 0) && (!ki || ki->applied_opts == 0) && !has_stage(sink)) {
    opt_hand_coded(&s);
  }
  const char *name = ki && ki->name[0] && strcmp(ki->name, "test") != 0 ? ki->name : NULL;
  ret = opt_get_optimized_ast(&s, name);
done:
  opt_sched_free(&s);
  return ret;
}
