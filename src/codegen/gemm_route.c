/* gemm_route.c — tinygrad's custom-kernel route for matrix products on CUDA (reference gpu-backend.md §3.2): a kernel
 * AST that is exactly one plain matmul gets its program from the GEMM templates (render/gemm.c) instead of the opt /
 * lower / render path. The schedule is not touched (same kernels, same buffers, same memory plan, same JIT capture):
 * only this kernel's source differs, so everything downstream (NVRTC batch, disk cache, launch, DEBUG=2/4) is the
 * normal path.
 *
 * What it takes (anything else keeps the normal path — never a wrong answer):
 *   SINK(END(STORE(INDEX(PARAM c, ic), [CAST] REDUCE(ADD, [CAST] MUL([CAST] INDEX(PARAM a, ia), [CAST] INDEX(PARAM b, ib)),
 *        r_k)), r_1, r_2))
 *   with exactly two output ranges and one reduce range of constant sizes; every index a sum of range * constant (no
 *   offset, no gate, no other range); ic = r_m * N + r_n (C row-major, contiguous); one factor reads (r_m, r_k) and the
 *   other (r_k, r_n), each with unit stride along one of its two ranges and the other range's extent as the other
 *   stride (row-major or transposed, both dense); the inputs both fp16, both bf16 (f32 sum, any of fp16/bf16/f32 out)
 *   or both fp32 (fp32 out); the device's arch sm_90a; M, N, K multiples of a template tile (render_gemm_default_config).
 * The templates form each product exactly in the f32 sum (the tensor cores' product), where the AST's MUL in half
 * would round it to half first: tinygrad's tensor-core path on CUDA makes the same substitution.
 *
 * GEMM_TEMPLATE=0 turns it off. */
#include "codegen/codegen.h"

#include <string.h>

#include "render/gemm.h"

static UOp *strip_cast(UOp *u) { return u->op == TG_OP_CAST ? u->src[0] : u; }

static bool int_const(const UOp *u, int64_t *v) {
  if (u->op != TG_OP_CONST || u->arg.c.kind != CK_INT) return false;
  *v = u->arg.c.i;
  return true;
}

/* idx as sum over ranges[i] * coef[i]; false for anything else (an offset, another range, a non-linear term) */
static bool linear_in(UOp *idx, UOp *const ranges[3], int64_t coef[3]) {
  coef[0] = coef[1] = coef[2] = 0;
  UOpVec terms = {0};
  uop_split(idx, TG_OP_ADD, &terms);
  bool ok = terms.len > 0;
  for (size_t i = 0; i < terms.len && ok; i++) {
    UOp *t = terms.data[i], *r = t;
    int64_t c = 1;
    if (t->op == TG_OP_MUL && int_const(t->src[1], &c)) r = t->src[0];
    else if (t->op == TG_OP_MUL && int_const(t->src[0], &c)) r = t->src[1];
    int k = -1;
    for (int j = 0; j < 3; j++)
      if (r == ranges[j]) k = j;
    ok = k >= 0 && coef[k] == 0;
    if (ok) coef[k] = c;
  }
  tg_vec_free(&terms);
  return ok;
}

/* a global PARAM read at INDEX(PARAM, idx) */
static bool param_read(UOp *u, UOp **param, UOp **idx) {
  if (u->op != TG_OP_INDEX || u->nsrc != 2) return false;
  UOp *p = u->src[0];
  if (p->op != TG_OP_PARAM || p->arg.kind != ARG_PARAM || p->arg.param->addrspace != ADDR_GLOBAL ||
      p->arg.param->slot < 0)
    return false;
  *param = p, *idx = u->src[1];
  return true;
}

static bool gemm_elem(const DType *d, GemmElem *e) {
  if (d == DT_FLOAT16) *e = GEMM_ELEM_F16;
  else if (d == DT_BFLOAT16) *e = GEMM_ELEM_BF16;
  else if (d == DT_FLOAT32) *e = GEMM_ELEM_F32;
  else return false;
  return true;
}

static bool range_size(const UOp *r, int64_t *n) {
  return r->op == TG_OP_RANGE && r->nsrc >= 1 && int_const(r->src[0], n) && *n > 0;
}

const char *cg_gemm_match(UOp *ast, const char *arch, CgGemmMatch *out) {
  memset(out, 0, sizeof *out);
  if (!tg_getenv_int("GEMM_TEMPLATE", 1)) return "GEMM_TEMPLATE=0";
  if (!arch || strcmp(arch, "sm_90a") != 0) return "not an sm_90a device";
  if (ast->op != TG_OP_SINK || ast->nsrc != 1 || ast->src[0]->op != TG_OP_END || ast->src[0]->nsrc != 3)
    return "not one store over two output ranges";
  UOp *end = ast->src[0], *store = end->src[0];
  if (store->op != TG_OP_STORE || store->nsrc != 2) return "not one store";
  UOp *cpar, *cidx;
  if (!param_read(store->src[0], &cpar, &cidx)) return "the store is not into a global buffer";
  UOp *red = strip_cast(store->src[1]);
  if (red->op != TG_OP_REDUCE || red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || red->nsrc != 2 ||
      red->dtype != DT_FLOAT32)
    return "not a float32 sum";
  if (store->src[1] != red && (store->src[1]->op != TG_OP_CAST || store->src[1]->dtype != cpar->arg.param->dtype))
    return "the stored value is not the sum cast to the output dtype";
  UOp *mul = strip_cast(red->src[0]);
  if (mul->op != TG_OP_MUL || mul->nsrc != 2) return "the sum is not over a product";
  if (red->src[0] != mul && red->src[0]->dtype != DT_FLOAT32) return "the product is not cast to float32";
  UOp *ranges[3] = {end->src[1], end->src[2], red->src[1]}; /* two output ranges, the reduce range */
  int64_t size[3];
  for (int i = 0; i < 3; i++)
    if (!range_size(ranges[i], &size[i])) return "a range of no constant size";
  UOp *fpar[2], *fidx[2];
  for (int s = 0; s < 2; s++) {
    UOp *f = strip_cast(mul->src[s]);
    if (!param_read(f, &fpar[s], &fidx[s])) return "a factor is not a buffer read";
    if (mul->src[s] != f && mul->src[s]->dtype != DT_FLOAT32) return "a factor is cast to something else than float32";
  }
  GemmElem in0, in1, outd;
  if (!gemm_elem(fpar[0]->arg.param->dtype, &in0) || !gemm_elem(fpar[1]->arg.param->dtype, &in1) || in0 != in1 ||
      !gemm_elem(cpar->arg.param->dtype, &outd))
    return "dtypes the templates do not take";
  if (in0 == GEMM_ELEM_F32 && outd != GEMM_ELEM_F32) return "fp32 inputs with a 16-bit output";
  /* the output: C[r_m * N + r_n] */
  int64_t cc[3];
  if (!linear_in(cidx, ranges, cc) || cc[2] != 0) return "the output index is not linear in the output ranges";
  int rm, rn;
  if (cc[1] == 1 && cc[0] == size[1]) rm = 0, rn = 1;
  else if (cc[0] == 1 && cc[1] == size[0]) rm = 1, rn = 0;
  else return "the output is not a dense row-major matrix";
  int64_t m = size[rm], n = size[rn], k = size[2];
  /* the factors: one reads (r_m, r_k), the other (r_k, r_n) */
  int64_t fc[2][3];
  for (int s = 0; s < 2; s++)
    if (!linear_in(fidx[s], ranges, fc[s])) return "a factor's index is not linear in the ranges";
  int sa = fc[0][rn] == 0 ? 0 : 1, sb = 1 - sa;
  if (fc[sa][rn] != 0 || fc[sb][rm] != 0) return "a factor reads both output axes";
  bool a_k, b_k;
  if (fc[sa][2] == 1 && fc[sa][rm] == k) a_k = true;
  else if (fc[sa][rm] == 1 && fc[sa][2] == m) a_k = false;
  else return "A is not a dense matrix";
  if (fc[sb][2] == 1 && fc[sb][rn] == k) b_k = true;
  else if (fc[sb][rn] == 1 && fc[sb][2] == n) b_k = false;
  else return "B is not a dense matrix";
  if (!render_gemm_default_config(in0, outd, m, n, k, a_k, b_k, &out->cfg)) return "the shape is not a multiple of a tile";
  out->slot[0] = cpar->arg.param->slot;
  out->slot[1] = fpar[sa]->arg.param->slot;
  out->slot[2] = fpar[sb]->arg.param->slot;
  return NULL;
}
