/* opt_tc.c — the tensor-core opt (tinygrad Scheduler._apply_tc_opt, codegen/opt/postrange.py): a matmul-like first
 * REDUCE(ADD, MUL(a, b)) whose dtypes match one of the renderer's TensorCores is rebuilt around one WMMA per warp.
 *
 *   the N, M and K axes are picked among (ranges only in b) x (ranges only in a) x (reduce ranges), PADTO'd to the
 *   TC's dims when TC_OPT >= 2; one WARP range of `threads` lanes is made and the TC's opts peel bits off N and M:
 *   "lX" takes the next lane bit (warp % 2, then warp // 2 % 2, ...), "uX" an UPCAST range of 2; K gets log2(K)
 *   UNROLL ranges of 2. The operands are then rewired by the swizzle (which bit of which axis each fragment element
 *   reads) and the REDUCE becomes WMMA(a', b', 0) — kept in a REDUCE over the K ranges that remain.
 *
 * The WMMA's arg (ARG_WMMA ints): N, M, K, dtype_in id, dtype_out id, threads, then the counts n_a, n_b, n_c and the
 * (range id, size) pairs of the axes along which the expander contracts A and B into fragments and unrolls C's lanes
 * (tinygrad's tc_upcast_axes; a size of 1 is an axis that operand does not read). */
#include "cg_internal.h"
#include "opt.h"

#include <stdio.h>
#include <stdlib.h>

#define TC_TAG 0x7463 /* the REDUCE being rebuilt (tinygrad's tag "TC") */
#define TC_BITS_MAX 16
#define TC_NAME 16 /* "u0", "r3": a bit name */

int32_t opt_tc_arg(int tc_select, int tc_opt, int use_tc) {
  return (int32_t)(((use_tc & 0xff) << 16) | ((tc_opt & 0xff) << 8) | ((tc_select + 1) & 0xff));
}
void opt_tc_arg_split(int32_t arg, int *tc_select, int *tc_opt, int *use_tc) {
  *tc_select = (arg & 0xff) - 1;
  *tc_opt = (arg >> 8) & 0xff;
  *use_tc = (arg >> 16) & 0xff;
}

static int ilog2(int64_t v) {
  int n = 0;
  while ((int64_t)1 << n < v) n++;
  return n;
}

/* the ranges of u that are not in other, highest axis id first (tinygrad: sorted by arg[0], reverse) */
static int cmp_id_desc(const void *pa, const void *pb) {
  int64_t a = (*(UOp *const *)pa)->arg.range->axis_id, b = (*(UOp *const *)pb)->arg.range->axis_id;
  return a < b ? 1 : a > b ? -1 : 0;
}
static void only_in(CgRanges *rr, UOp *u, UOp *other, UOpVec *out) {
  const UOpVec *mine = cg_ranges_of(rr, u), *theirs = cg_ranges_of(rr, other);
  for (size_t i = 0; i < mine->len; i++)
    if (!cg_vec_has(theirs, mine->data[i])) tg_vec_push(out, mine->data[i]);
  if (out->len) qsort(out->data, out->len, sizeof(UOp *), cmp_id_desc);
}

static UOp *find_tagged_reduce(UOp *ast) {
  UOpVec topo = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  UOp *r = NULL;
  for (size_t i = 0; i < topo.len && !r; i++)
    if (topo.data[i]->op == TG_OP_REDUCE && topo.data[i]->tag == TC_TAG) r = topo.data[i];
  tg_vec_free(&topo);
  return r;
}

static int axis_index(const OptScheduler *s, UOp *rng) {
  UOpVec r = {0};
  opt_sched_rngs(s, &r);
  int k = -1;
  for (size_t i = 0; i < r.len; i++)
    if (r.data[i] == rng) k = (int)i;
  tg_vec_free(&r);
  return k;
}

static UOp *range_by_id(const OptScheduler *s, int64_t id) {
  UOpVec r = {0};
  opt_sched_rngs(s, &r);
  UOp *f = NULL;
  for (size_t i = 0; i < r.len; i++)
    if (r.data[i]->arg.range->axis_id == id) f = r.data[i];
  tg_vec_free(&r);
  return f;
}

/* tinygrad permutes_for_shape_str(base_shape_str()) for one operand, as the inverse used by the substitution:
 * names[i] is the i-th bit of the TC in base order (u0 l0 l1 l2 l3 l4 u1 r0 ...), and bit i is rewired to bit
 * perm[i]. */
static int base_names(const TensorCore *tc, char names[][TC_NAME]) {
  int n = 0, cu = 0, cl = 0;
  for (int i = 0; tc->opts[i]; i++) snprintf(names[n++], TC_NAME, "%c%d", tc->opts[i][0], tc->opts[i][0] == 'u' ? cu++ : cl++);
  for (int i = 0; i < ilog2(tc->dims[2]); i++) snprintf(names[n++], TC_NAME, "r%d", i);
  return n;
}

static int name_index(char names[][TC_NAME], int n, const char *nm) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], nm) == 0) return i;
  return -1;
}

static bool operand_perm(const TensorCore *tc, int operand, int perm[TC_BITS_MAX]) {
  char base[TC_BITS_MAX][TC_NAME], fwd[TC_BITS_MAX][TC_NAME], to[TC_BITS_MAX][TC_NAME];
  int n = base_names(tc, base), nl = 0, nu = 0, nf = 0, nt = 0;
  for (int i = 0; tc->opts[i]; i++) tc->opts[i][0] == 'l' ? nl++ : nu++;
  for (int i = 0; i < nl; i++) snprintf(fwd[nf++], TC_NAME, "l%d", i);
  for (int i = 0; i < nu; i++) snprintf(fwd[nf++], TC_NAME, "u%d", i);
  for (int i = 0; i < ilog2(tc->dims[2]); i++) snprintf(fwd[nf++], TC_NAME, "r%d", i);
  for (int part = 0; part < 3; part++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", tc->swizzle[operand][part]);
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) snprintf(to[nt++], TC_NAME, "%s", t);
  }
  if (nf != n || nt != n) return false;
  int p[TC_BITS_MAX];
  for (int i = 0; i < n; i++) {
    int f = name_index(fwd, nf, base[i]);
    p[i] = f < 0 ? i : name_index(base, n, to[f]);
    if (p[i] < 0) return false;
  }
  for (int i = 0; i < n; i++) perm[p[i]] = i; /* argsort of a permutation: its inverse */
  return true;
}

/* the opt axes (N, M, K) of choice `axis` among (only in b) x (only in a) x (reduce ranges) */
static bool pick_axes(const UOpVec *in1, const UOpVec *in0, const UOpVec *red, int axis, UOp *axes[3]) {
  size_t n = in1->len * in0->len * red->len;
  if (axis < 0 || (size_t)axis >= n) return false;
  size_t i = (size_t)axis;
  axes[2] = red->data[i % red->len];
  i /= red->len;
  axes[1] = in0->data[i % in0->len];
  axes[0] = in1->data[i / in0->len];
  return true;
}

typedef struct TcTry {
  UOp *axes[3];
  tg_status st; /* TG_OK, or the KernelOptError that ends the whole opt */
  bool applied;
} TcTry;

static UOp *strip_cast(UOp *u) { return u->op == TG_OP_CAST ? u->src[0] : u; }

/* one TensorCore tried on the scheduler; on a soft failure (tinygrad's `continue`) the scheduler is unchanged */
static TcTry try_tc(OptScheduler *s, const TensorCore *tc, int tc_index, int axis, int tc_opt, int use_tc) {
  TcTry res = {{NULL, NULL, NULL}, TG_OK, false};
  UOp *red = opt_first_reduce(s->ast), *mul = strip_cast(red->src[0]);
  UOp *in0 = mul->src[0], *in1 = mul->src[1];
  if (tc->dtype_in != in0->dtype || tc->dtype_in != in1->dtype || tc->dtype_out != red->dtype) return res;
  CgRanges rr;
  cg_ranges_init(&rr);
  UOpVec r0 = {0}, r1 = {0}, rr_red = {0};
  only_in(&rr, in0, in1, &r0);
  only_in(&rr, in1, in0, &r1);
  for (uint32_t i = 1; i < red->nsrc; i++) tg_vec_push(&rr_red, red->src[i]);
  if (rr_red.len) qsort(rr_red.data, rr_red.len, sizeof(UOp *), cmp_id_desc);
  UOp *axes[3];
  bool picked = r0.len && r1.len && rr_red.len && pick_axes(&r1, &r0, &rr_red, axis, axes);
  cg_ranges_free(&rr);
  tg_vec_free(&r0); tg_vec_free(&r1); tg_vec_free(&rr_red);
  if (!picked) return res;
  if (cg_axis_type(axes[0]) == AXIS_REDUCE || cg_axis_type(axes[1]) == AXIS_REDUCE) {
    res.st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: tensor core X/Y axes can't be REDUCE");
    return res;
  }
  if (tg_getenv_int("DEBUG", 0) >= 3)
    printf("TC(%d): N axis %lld, M axis %lld, K axis %lld\n", axis, (long long)axes[0]->arg.range->axis_id,
           (long long)axes[1]->arg.range->axis_id, (long long)axes[2]->arg.range->axis_id);

  OptScheduler saved;
  opt_sched_copy(&saved, s);
  UOp *tagged = uop_with_tag(red, TC_TAG);
  opt_set_ast(s, uop_substitute(s->ast, &red, &tagged, 1));
  /* pad N, M, K up to the TC's dims (TC_OPT >= 2); an axis that cannot be padded is a soft failure */
  int64_t ids[3];
  for (int i = 0; i < 3; i++) ids[i] = axes[i]->arg.range->axis_id;
  for (int i = 0; i < 3; i++) {
    int64_t sz;
    if (uop_ssimplify_int(uop_simplify(axes[i]->src[0]), &sz) && sz % tc->dims[i] == 0) continue;
    int napplied = s->napplied;
    Opt pad = {OPT_PADTO, axis_index(s, axes[i]), tc->dims[i]};
    if (tc_opt < 2 || opt_apply(s, pad) != TG_OK) goto soft_fail;
    s->napplied = napplied; /* tinygrad append_opt=False */
    axes[i] = range_by_id(s, ids[i]);
  }
  /* the warp, then the TC's splits: lane bits are digits of the warp range, upcast and reduce bits new ranges */
  RangeArg wa;
  memset(&wa, 0, sizeof wa);
  wa.axis_id = -1;
  wa.axis_type = AXIS_WARP;
  UOp *warp = cg_range_new(uop_const_int(axes[0]->dtype, tc->threads), &wa);
  UOp *ne[TC_BITS_MAX];
  int nne = 0;
  for (int i = 0; tc->opts[i]; i++) {
    int d = tc->opts[i][1] - '0';
    UOp *bit = tc->opts[i][0] == 'l' ? uop_mod_int(warp, 2) : NULL;
    if (!opt_shift_to(s, axes[d], 2, tc->opts[i][0] == 'l' ? AXIS_LOCAL : AXIS_UPCAST, false, bit, &axes[d], &ne[nne]))
      goto soft_fail;
    nne++;
    if (bit) warp = uop_idiv_int(warp, 2);
  }
  int nred = ilog2(tc->dims[2]);
  for (int i = 0; i < nred; i++) {
    if (!opt_shift_to(s, axes[2], 2, AXIS_UNROLL, false, NULL, &axes[2], &ne[nne])) goto soft_fail;
    nne++;
  }
  if (use_tc != 2) {
    UOp *rop = find_tagged_reduce(s->ast);
    TG_ASSERT(rop != NULL, "the tensor core REDUCE is gone");
    UOp *m = strip_cast(rop->src[0]);
    UOp *srcs[2];
    for (int k = 0; k < 2; k++) {
      int perm[TC_BITS_MAX];
      if (!operand_perm(tc, k, perm)) goto soft_fail;
      UOp *to[TC_BITS_MAX];
      for (int i = 0; i < nne; i++) to[i] = ne[perm[i]];
      srcs[k] = uop_substitute(m->src[k], ne, to, (size_t)nne);
    }
    /* tinygrad base_upcast_axes: (r0.., u0..) reversed; the first log2(elements) of them per operand */
    UOp *up[TC_BITS_MAX], *ups[TC_BITS_MAX];
    int nup = 0, nu = 0;
    for (int i = 0; tc->opts[i]; i++)
      if (tc->opts[i][0] == 'u') ups[nu++] = ne[i];
    for (int i = 0; i < nred; i++) up[nup++] = ne[nne - nred + i];
    for (int i = 0; i < nu; i++) up[nup++] = ups[i];
    int64_t arg[6 + 3 + 3 * 2 * TC_BITS_MAX];
    int na = 0;
    arg[na++] = tc->dims[0], arg[na++] = tc->dims[1], arg[na++] = tc->dims[2];
    arg[na++] = tc->dtype_in->id, arg[na++] = tc->dtype_out->id, arg[na++] = tc->threads;
    int counts_at = na;
    na += 3;
    /* the union of A's and B's axes; each operand lists its own with size 2, the others with size 1 */
    int take[3];
    for (int k = 0; k < 3; k++) take[k] = ilog2(tc->elements[k]);
    int nunion = TG_MAX(take[0], take[1]);
    for (int k = 0; k < 3; k++) {
      int cnt = 0;
      for (int i = 0; i < TG_MAX(nunion, take[k]); i++) {
        arg[na++] = up[nup - 1 - i]->arg.range->axis_id;
        arg[na++] = i < take[k] ? 2 : 1;
        cnt++;
      }
      arg[counts_at + k] = cnt;
    }
    UOp *wsrc[3] = {srcs[0], srcs[1], uop_const(tc->dtype_out, const_float(0.0))};
    UOp *wmma = uop_new(TG_OP_WMMA, tc->dtype_out, wsrc, 3, arg_ints(ARG_WMMA, arg, (size_t)na));
    /* the reduce ranges that are not the TC's own stay as a REDUCE around the WMMA */
    UOpVec keep = {0};
    tg_vec_push(&keep, wmma);
    UOpVec rtopo = {0};
    uop_toposort_many(rop->src + 1, rop->nsrc - 1, NULL, NULL, &rtopo);
    for (size_t i = 0; i < rtopo.len; i++) {
      UOp *x = rtopo.data[i];
      bool tc_bit = false;
      for (int k = 0; k < nred; k++) tc_bit |= x == ne[nne - nred + k];
      if (!tc_bit && x->op == TG_OP_RANGE && !cg_vec_has(&keep, x)) tg_vec_push(&keep, x);
    }
    tg_vec_free(&rtopo);
    UOp *tc_uop = keep.len > 1 ? uop_new(TG_OP_REDUCE, tc->dtype_out, keep.data, keep.len, arg_reduce(TG_OP_ADD, 0))
                               : wmma;
    tg_vec_free(&keep);
    opt_set_ast(s, uop_substitute(s->ast, &rop, &tc_uop, 1));
  }
  s->tc_index = tc_index;
  for (int i = 0; i < 3; i++) s->tc_axis_ids[i] = axes[i]->arg.range->axis_id;
  for (int i = 0; i < 3; i++) res.axes[i] = axes[i];
  res.applied = true;
  opt_sched_free(&saved);
  return res;
soft_fail:
  opt_sched_free(s);
  *s = saved;
  return res;
}

tg_status opt_apply_tc(OptScheduler *s, Opt o) {
  int tc_select, tc_opt, use_tc;
  opt_tc_arg_split(o.arg, &tc_select, &tc_opt, &use_tc);
  if (s->napplied != 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: tensor core opts must be first");
  if (o.axis < 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: tensor core opts must have an axis");
  if (tc_select < -1 || tc_select >= s->ren->n_tensor_cores)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: tensor core opts must have valid tc_select");
  if (tc_opt > 2) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: tensor core opts must have valid tc_opt");
  if (use_tc < 1 || use_tc > 2)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: use_tensor_cores value is not valid");
  UOp *red = opt_first_reduce(s->ast);
  if (!red) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: no reduce ops for TensorCore");
  if (red->arg.kind == ARG_REDUCE && red->arg.red.op == TG_OP_ADD && strip_cast(red->src[0])->op == TG_OP_MUL) {
    bool allow_tf32 = tg_getenv_int("ALLOW_TF32", 0) != 0;
    int from = tc_select < 0 ? 0 : tc_select, to = tc_select < 0 ? s->ren->n_tensor_cores : tc_select + 1;
    for (int i = from; i < to; i++) {
      const TensorCore *tc = &s->ren->tensor_cores[i];
      if (strcmp(s->ren->device, "CUDA") == 0 && tc->dtype_in == DT_FLOAT32 && !allow_tf32) continue;
      TcTry t = try_tc(s, tc, i, (int)o.axis, tc_opt, use_tc);
      if (t.st != TG_OK) return t.st;
      if (t.applied) return TG_OK;
    }
  }
  return tg_set_error(TG_ERR_INVALID_ARGUMENT, "KernelOptError: no tensor core available");
}
