/* clang.c — the CPU renderer's capability table (tinygrad ClangRenderer) and its extra matcher: the rewrites the
 * codegen applies in its final rewrite so that everything left is expressible in plain C with compiler builtins. */
#include "render.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- extra matcher (tinygrad ClangRenderer.extra_matcher) ---- */

/* LLVM lowers double->half/bf16 and bf16->half to compiler-rt calls on CPUs without native support: go via float. */
static UOp *cast_via_float(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  return uop_cast(uop_cast(m[0], DT_FLOAT32), root->dtype);
}

/* bfloat16 has no native arithmetic: compute in float32 and cast back (create_non_native_float_pats). */
static UOp *bf16_where_in_float(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  return uop_cast(uop_where(m[0], uop_cast(m[1], DT_FLOAT32), uop_cast(m[2], DT_FLOAT32)), root->dtype);
}
static UOp *bf16_alu_in_float(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOp *src[3];
  for (uint32_t i = 0; i < root->nsrc; i++) src[i] = uop_cast(root->src[i], DT_FLOAT32);
  return uop_cast(uop_new(uop_op(root), NULL, src, root->nsrc, root->arg), root->dtype);
}
static UOp *bf16_compare_in_float(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  UOp *src[2] = {uop_cast(m[0], DT_FLOAT32), uop_cast(m[1], DT_FLOAT32)};
  return uop_new(uop_op(root), NULL, src, 2, root->arg);
}
/* a cast to or from bfloat16 goes through float32, unless the other side already is float32 */
static UOp *bf16_cast_through_float(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  if (root->dtype == DT_FLOAT32 || m[0]->dtype == DT_FLOAT32) return NULL;
  return uop_cast(uop_cast(m[0], DT_FLOAT32), root->dtype);
}

/* A bfloat16 constant becomes its 16 bits: the compiler here has no __bf16 type (the runtime compiles it as an unsigned
 * short), so a value cast like (__bf16)3.0f would convert the number instead of its bits. */
static UOp *bf16_const_bits(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (root->arg.c.kind == CK_INVALID) return NULL;
  uint16_t bits = tg_float_to_bf16_bits((float)const_as_double(root->arg.c, root->dtype));
  return uop_bitcast(uop_const_int(DT_UINT16, bits), DT_BFLOAT16);
}

/* bf16 -> float: the 16 bits become the top half of a float32 (pm_manual_bf16_cast). */
static UOp *bf16_to_float_bits(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(root);
  UOp *bits = uop_cast(uop_bitcast(m[0], DT_UINT16), DT_UINT32);
  return uop_bitcast(uop_alu2(TG_OP_SHL, bits, uop_const_int(DT_WEAKINT, 16)), DT_FLOAT32);
}

/* float -> bf16 with round-to-nearest-even; nan stays a (quiet) nan; inf/denormals keep their top bits. */
static UOp *float_to_bf16_bits(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(root);
  UOp *x = uop_bitcast(m[0], DT_UINT32);
#define W(v) uop_const_int(DT_WEAKINT, (v))
  UOp *not_special = uop_ne(uop_and(uop_neg(x), W(0x7f800000)), W(0));
  UOp *rounded = uop_add(uop_add(x, uop_and(uop_alu2(TG_OP_SHR, x, W(16)), W(1))), W(0x7fff));
  UOp *keep_nan = uop_where(uop_ne(uop_and(x, W(0xffff)), W(0)), uop_or(x, W(0x10000)), x);
  UOp *y = uop_where(not_special, rounded, keep_nan);
  UOp *r = uop_bitcast(uop_cast(uop_alu2(TG_OP_SHR, y, W(16)), DT_UINT16), DT_BFLOAT16);
#undef W
  return r;
}

static const Rule clang_extra_rules[] = {
    RULE("CONST.bfloat16", bf16_const_bits, NULL),
    RULE("(CAST.half x.double)", cast_via_float, NULL),
    RULE("(CAST.bfloat16 x.double)", cast_via_float, NULL),
    RULE("(CAST.half x.bfloat16)", cast_via_float, NULL),
    /* create_non_native_float_pats((bfloat16,)) */
    RULE("(WHERE.bfloat16 b x y)", bf16_where_in_float, NULL),
    RULE("ALU.bfloat16", bf16_alu_in_float, NULL),
    RULE("(ALU.bool x.bfloat16 y.bfloat16)", bf16_compare_in_float, NULL),
    RULE("(CAST.bfloat16 x)", bf16_cast_through_float, NULL),
    RULE("(CAST x.bfloat16)", bf16_cast_through_float, NULL),
    /* pm_manual_bf16_cast */
    RULE("(CAST.float x.bfloat16)", bf16_to_float_bits, NULL),
    RULE("(CAST.bfloat16 x.float)", float_to_bf16_bits, NULL),
};

static const RuleSet *clang_extra_matcher(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("clang_extra_matcher", clang_extra_rules);
  return pm;
}

/* ---- the table ---- */

static int64_t cpu_thread_count(void) {
  int64_t n = tg_getenv_int("NUM_CPU_THREADS", 0);
  if (n > 0) return n;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (int64_t)cores : 1;
}

/* kernels are compiled with -march=native: the widest vector unit of this CPU */
static int cpu_vector_bytes(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
#endif
  return 16;
}

const Renderer *renderer_clang(void) {
  static Renderer r;
  static bool built;
  if (built) return &r;
  memset(&r, 0, sizeof r);
  r.device = "CPU";
  r.suffix = "";
  r.has_local = false;
  r.has_threads = tg_getenv_int("THREADS", 1) != 0;
  r.has_shared = true;
  r.supports_float4 = true;
  r.has_global_max = true;
  r.global_max[0] = cpu_thread_count();
  r.has_local_max = true;
  for (int i = 0; i < 3; i++) r.local_max[i] = 0x8FFFFFFF;
  r.shared_max = 32768;
  r.vector_bytes = cpu_vector_bytes();
  r.reduce_vectorize_hint = true;
  r.pointer_plus_terms = true;
  static const TgOp ops[] = {TG_OP_SQRT, TG_OP_NEG, TG_OP_TRUNC, TG_OP_AND, TG_OP_XOR, TG_OP_OR, TG_OP_ADD,
                             TG_OP_SUB, TG_OP_MUL, TG_OP_CMOD, TG_OP_CDIV, TG_OP_CMPNE, TG_OP_SHR, TG_OP_SHL,
                             TG_OP_CMPLT, TG_OP_WHERE, TG_OP_CMPEQ, TG_OP_FDIV};
  for (size_t i = 0; i < TG_ARRAY_LEN(ops); i++) opset_add(&r.code_for_op, ops[i]);
  for (int d = 0; d < TG_DTYPE_COUNT; d++) {
    const DType *dt = &tg_dtype_table[d];
    bool fp8 = d == TG_FP8E4M3 || d == TG_FP8E5M2 || d == TG_FP8E4M3FNUZ || d == TG_FP8E5M2FNUZ;
    if (!fp8 && !dt_is_weak(dt) && d != TG_VOID) r.supported_dtypes |= 1u << d;
  }
  r.extra_matcher = clang_extra_matcher;
  built = true;
  return &r;
}
