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
  uint16_t bits = tg_float_to_bf16_bits((float)dt_const_as_double(root->arg.c, root->dtype));
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

/* A two-sided range check on an int, (c1<x)&(x<c2), becomes one unsigned compare, (unsigned)x-(c1+1) < c2-c1-1 (the
 * subtraction wraps, so a value below the range lands far above it). Same truth value; the point is the compiler:
 * clang turns the two compares of a pad kernel's gate into a switch, which its loop vectorizer refuses, and the one
 * compare vectorizes into masked loads (the pad kernel of bench_matmul's conv2d, E_1024_30_30_2: 505-520 -> 315-353 us). The AND chain is
 * flattened so a pair finds itself anywhere in a gate. */
#define RANGE_TERMS_MAX 16
/* an int literal: CONST, or CAST(CONST) as the lowered graph spells it after cg_casted_consts (the parity test) */
static bool int_literal(const UOp *u, int64_t *v) {
  if (uop_is(u, TG_OP_CAST) && u->src[0]->dtype == DT_WEAKINT) u = u->src[0];
  if (!uop_is_const(u) || uop_const_val(u).kind != CK_INT) return false;
  *v = uop_const_val(u).i;
  return true;
}
static bool range_bound(UOp *t, UOp **x, int64_t *c, bool *lower) {
  if (!uop_is(t, TG_OP_CMPLT) || t->dtype->count != 1) return false;
  int64_t va, vb;
  bool ca = int_literal(t->src[0], &va), cb = int_literal(t->src[1], &vb);
  if (ca == cb) return false;
  *x = ca ? t->src[1] : t->src[0], *c = ca ? va : vb, *lower = ca; /* c < x, or x < c */
  return (*x)->dtype == DT_INT32 || (*x)->dtype == DT_INT64;
}
static void and_terms(UOp *u, UOp **terms, size_t *n, bool *overflow) {
  if (uop_is(u, TG_OP_AND) && u->dtype == DT_BOOL) {
    and_terms(u->src[0], terms, n, overflow);
    and_terms(u->src[1], terms, n, overflow);
  } else if (*n < RANGE_TERMS_MAX) {
    terms[(*n)++] = u;
  } else {
    *overflow = true;
  }
}
static UOp *range_check_unsigned(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOp *terms[RANGE_TERMS_MAX];
  size_t n = 0;
  bool overflow = false, changed = false;
  and_terms(root, terms, &n, &overflow);
  if (overflow) return NULL;
  for (size_t i = 0; i < n; i++) {
    UOp *xi, *xj;
    int64_t ci, cj;
    bool li, lj;
    if (!terms[i] || !range_bound(terms[i], &xi, &ci, &li)) continue;
    for (size_t j = i + 1; j < n; j++) {
      if (!terms[j] || !range_bound(terms[j], &xj, &cj, &lj) || xj != xi || lj == li) continue;
      int64_t lo = li ? ci : cj, hi = li ? cj : ci; /* lo < x < hi */
      int64_t type_max = xi->dtype == DT_INT32 ? INT32_MAX : INT64_MAX;
      if (lo >= hi - 1 || lo == type_max) break; /* empty range or lo+1 out of the type: left alone */
      const DType *ut = xi->dtype == DT_INT32 ? DT_UINT32 : DT_UINT64;
      uint64_t first = (uint64_t)lo + 1, width = (uint64_t)hi - (uint64_t)lo - 1;
      /* literals spelled as cg_casted_consts spells them, so the parity test can rewrite tinygrad's lowered graph */
      UOp *shifted = uop_alu2(TG_OP_SUB, uop_cast(xi, ut), uop_cast(uop_const_int(DT_WEAKINT, (int64_t)first), ut));
      terms[i] = uop_lt(shifted, uop_cast(uop_const_int(DT_WEAKINT, (int64_t)width), ut));
      terms[j] = NULL;
      changed = true;
      break;
    }
  }
  if (!changed) return NULL;
  UOp *acc = NULL;
  for (size_t i = 0; i < n; i++)
    if (terms[i]) acc = acc ? uop_and(acc, terms[i]) : terms[i];
  return acc;
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

static const Rule range_check_rules[] = {
    RULE("(AND.bool a b)", range_check_unsigned, NULL),
};

/* Not tinygrad's: the codegen parity test applies it to tinygrad's lowered graphs before comparing. */
const RuleSet *render_pm_range_checks(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("unsigned range checks", range_check_rules);
  return pm;
}

static const RuleSet *clang_extra_matcher(void) {
  static RuleSet *pm;
  static RuleSet *tinygrads;
  if (!tinygrads) tinygrads = PM_NEW("clang_extra_matcher", clang_extra_rules);
  if (!pm) pm = pm_concat(tinygrads, render_pm_range_checks());
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
  r.gated_loads_expensive = true;
  r.channel_inner_vectors = true;
  r.pointer_plus_terms = true;
  r.float_right_parens = true;
#if defined(__x86_64__)
  /* kernels are compiled with -march=native: VNNI there means the compiler has the vpdpbusd builtins (DOT_U8I8=0: off) */
  r.dot_u8i8 = (__builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni")) &&
               tg_getenv_int("DOT_U8I8", 1) != 0;
  r.dot_u8i8_lanes = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") ? 16 : 8;
#endif
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
  r.render = render_c;
  built = true;
  return &r;
}
