/* cg_decomp.c — decompositions driven by the renderer's capability table (tinygrad codegen/decomp/op.py):
 *   early: FLOORDIV/FLOORMOD -> shifts / masks, or CDIV/CMOD with sign fixups; THREEFRY -> ARX rounds; MAX -> WHERE;
 *   late:  MUL/CDIV by 2^k -> SHL/SHR, CDIV by a constant -> multiply-shift (Hacker's Delight magic numbers), NEG/SUB,
 *          comparison canonical forms, CMPEQ, RECIPROCAL -> FDIV; plus the transcendentals (transcendental.c).
 * Every rule checks the renderer (the rewrite's ctx) for the ops it needs and the op it removes. */
#include "cg_internal.h"

static const Renderer *ren_of(RwCtx *rw) { return rw->ctx; }
static bool has(RwCtx *rw, TgOp op) { return renderer_has_op(ren_of(rw), op); }

/* log2(c) when c is a power of two >= 2 (tinygrad's powers_of_two.get(c, 0) is falsy for c == 1) */
static int pow2_shift(const UOp *c) {
  if (c->op != TG_OP_CONST || c->arg.c.kind != CK_INT) return 0;
  uint64_t v = (uint64_t)c->arg.c.i;
  if (v < 2 || (v & (v - 1)) != 0) return 0;
  return __builtin_ctzll(v);
}
static bool is_pow2_incl_1(const UOp *c) {
  if (c->op != TG_OP_CONST || c->arg.c.kind != CK_INT) return false;
  uint64_t v = (uint64_t)c->arg.c.i;
  return v >= 1 && (v & (v - 1)) == 0;
}

static UOp *cl(UOp *like, int64_t v) { return uop_const_like_int(like, v); }
static UOp *lt0(UOp *x) { return uop_lt(x, cl(x, 0)); }
static UOp *ne(UOp *a, UOp *b) { return uop_alu2(TG_OP_CMPNE, a, b); }
static UOp *lnot(UOp *a) { return ne(a, uop_const_bool(true)); }
static UOp *neg(UOp *a) { return uop_mul(a, cl(a, -1)); }
static UOp *sub(UOp *a, UOp *b) { return uop_add(a, neg(b)); }

/* ================================================================================================================
 * early (simplifying) patterns
 * ================================================================================================================ */

static UOp *floordiv_pow2(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  int v = pow2_shift(m[1]);
  if (!has(rw, TG_OP_SHR) || !v) return NULL;
  return uop_alu2(TG_OP_SHR, m[0], cl(m[0], v));
}

/* trunc division with the floor fixup where the signs differ */
static UOp *floordiv_to_idiv(RwCtx *rw, UOp *root, UOp **m) { /* a b */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *a = m[0], *b = m[1];
  UOp *q = uop_alu2(TG_OP_CDIV, a, b);
  if ((uop_vmin(a) >= 0 && uop_vmin(b) > 0) || (uop_vmax(a) <= 0 && uop_vmax(b) < 0)) return q;
  UOp *fix = uop_and(ne(uop_alu2(TG_OP_CMOD, a, b), cl(a, 0)), ne(lt0(a), lt0(b)));
  return uop_alu2(TG_OP_SUB, q, uop_cast(fix, q->dtype));
}

static UOp *floormod_pow2(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_AND) || !is_pow2_incl_1(m[1])) return NULL;
  return uop_and(m[0], cl(m[0], m[1]->arg.c.i - 1));
}

static UOp *floormod_to_mod(RwCtx *rw, UOp *root, UOp **m) { /* a b */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *a = m[0], *b = m[1];
  UOp *r = uop_alu2(TG_OP_CMOD, a, b);
  if ((uop_vmin(a) >= 0 && uop_vmin(b) > 0) || (uop_vmax(a) <= 0 && uop_vmax(b) < 0)) return r;
  UOp *fix = uop_and(ne(r, cl(r, 0)), ne(lt0(a), lt0(b)));
  return uop_add(r, uop_where(fix, b, cl(b, 0)));
}

/* threefry2x32 (Salmon et al.): 20 rounds of add-rotate-xor on the two 32-bit halves */
static UOp *threefry(RwCtx *rw, UOp *root, UOp **m) { /* x key */
  TG_UNUSED(root);
  if (has(rw, TG_OP_THREEFRY)) return NULL;
  const DType *u32 = DT_UINT32, *u64 = DT_UINT64;
  UOp *x = m[0], *key = m[1];
  UOp *c32 = uop_const_int(u64, 32);
  UOp *x0 = uop_cast(x, u32), *x1 = uop_cast(uop_alu2(TG_OP_SHR, x, c32), u32);
  UOp *key0 = uop_cast(key, u32), *key1 = uop_cast(uop_alu2(TG_OP_SHR, key, c32), u32);
  static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  UOp *ks[3] = {key1, uop_xor(uop_xor(key0, key1), uop_const_int(u32, 0x1BD11BDA)), key0};
  UOp *xr0 = uop_add(x0, ks[2]), *xr1 = uop_add(x1, ks[0]);
  for (int i = 0; i < 5; i++) {
    for (int k = 0; k < 4; k++) {
      int r = rotations[i % 2][k];
      UOp *n0 = uop_add(xr0, xr1);
      UOp *rot = uop_add(uop_alu2(TG_OP_SHL, xr1, uop_const_int(u32, r)), uop_alu2(TG_OP_SHR, xr1, uop_const_int(u32, 32 - r)));
      xr1 = uop_xor(n0, rot);
      xr0 = n0;
    }
    xr0 = uop_add(xr0, ks[i % 3]);
    /* tinygrad writes xr1 + ks + i + 1: two constant additions, left to right */
    xr1 = uop_add(uop_add(uop_add(xr1, ks[(i + 1) % 3]), uop_const_int(u32, i)), uop_const_int(u32, 1));
  }
  return uop_or(uop_alu2(TG_OP_SHL, uop_cast(xr1, u64), c32), uop_cast(xr0, u64));
}

static UOp *max_to_where(RwCtx *rw, UOp *mx, UOp **m) {
  TG_UNUSED(m);
  if (has(rw, TG_OP_MAX) || !has(rw, TG_OP_CMPLT)) return NULL;
  return uop_where(uop_lt(mx->src[0], mx->src[1]), mx->src[1], mx->src[0]);
}

static const Rule early_rules[] = {
    /* FLOORDIV by 2^y is an arithmetic shift (exact floor for any sign); before the general rule */
    RULE("(FLOORDIV x.ints c:CONST)", floordiv_pow2, NULL),
    RULE("(FLOORDIV a b)", floordiv_to_idiv, NULL),
    /* FLOORMOD by 2^y is a mask (exact floor mod in two's complement) */
    RULE("(FLOORMOD x.ints c:CONST)", floormod_pow2, NULL),
    RULE("(FLOORMOD a b)", floormod_to_mod, NULL),
    /* no real device has THREEFRY */
    RULE("(THREEFRY.uint64 x key)", threefry, NULL),
    /* MAX as CMPLT + WHERE where the renderer has no max */
    RULE("mx:MAX", max_to_where, NULL),
};

const RuleSet *cg_pm_early_decomp(const Renderer *ren) {
  TG_UNUSED(ren);
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("simplifying decompositions", early_rules);
    pm = pm_concat(sym_symbolic_simple(), set);
  }
  return pm;
}

/* ================================================================================================================
 * fast integer division by a constant (Hacker's Delight, chapter 10)
 * ================================================================================================================ */

static int bit_length_u(u128 v) {
  int n = 0;
  while (v) { n++; v >>= 1; }
  return n;
}

/* m, s with x // d == (x*m) >> s for 0 <= x <= vmax */
static bool magicgu(u128 vmax, u128 d, u128 *m_out, int *s_out) {
  u128 nc = (vmax + 1) / d * d - 1;
  int nbits = bit_length_u(vmax);
  for (int s = 0; s <= 2 * nbits && s < 127; s++) {
    u128 p = (u128)1 << s;
    u128 rem = d - 1 - (p - 1) % d;
    /* p > nc * rem, without overflow */
    if (rem == 0 || nc <= (p - 1) / rem) {
      if (p > nc * rem) {
        *m_out = (p + rem) / d;
        *s_out = s;
        return true;
      }
    }
  }
  return false;
}

static bool mul_fits(i128 m, i128 lo, i128 hi, const DType *dt) {
  i128 a, b;
  if (__builtin_mul_overflow(m, lo, &a) || __builtin_mul_overflow(m, hi, &b)) return false;
  return a >= dt_min_int(dt) && b <= dt_max_int(dt);
}

static const DType *widen(const DType *d) {
  switch (d->id) {
  case TG_INT8: return DT_INT16;
  case TG_INT16: return DT_INT32;
  case TG_INT32: return DT_INT64;
  case TG_INT64: return DT_UINT64;
  case TG_UINT8: return DT_UINT16;
  case TG_UINT16: return DT_UINT32;
  case TG_UINT32: return DT_UINT64;
  default: return NULL;
  }
}

static UOp *fast_idiv(const Renderer *ren, UOp *x, int64_t d, bool dont_cast) {
  bool is_unsigned = uop_vmin(x) >= 0 || dt_is_unsigned(x->dtype);
  TG_ASSERT(d > 0, "fast_idiv needs a positive divisor");
  i128 vmin = TG_MAX(uop_vmin(x), dt_min_int(x->dtype)), vmax = TG_MIN(uop_vmax(x), dt_max_int(x->dtype));
  if (vmin > -d && vmax < d) return cl(x, 0);
  u128 m;
  int s;
  i128 amax = TG_MAX(vmax, -vmin);
  if (!magicgu((u128)amax, (u128)d, &m, &s) || m > (u128)I128_MAX / 4) return NULL;
  if (mul_fits((i128)m, vmin, vmax, x->dtype) && m <= (u128)INT64_MAX) {
    UOp *q = uop_alu2(TG_OP_SHR, uop_mul(x, cl(x, (int64_t)m)), cl(x, s));
    return is_unsigned ? q : uop_add(q, uop_where(lt0(x), cl(x, 1), cl(x, 0)));
  }
  /* powers of two in d shift x down first (trunc division, as the recursion assumes) */
  int64_t low = d & -d;
  if (low > 1) {
    UOp *r = fast_idiv(ren, uop_alu2(TG_OP_CDIV, x, cl(x, low)), d / low, true);
    if (r) return r;
  }
  if (dont_cast) return NULL;
  const DType *next = widen(x->dtype);
  if (next && renderer_supports_dtype(ren, next) && mul_fits((i128)m, vmin, vmax, next) && m <= (u128)INT64_MAX) {
    UOp *xc = uop_cast(x, next);
    UOp *q = uop_cast(uop_alu2(TG_OP_SHR, uop_mul(xc, cl(xc, (int64_t)m)), cl(xc, s)), x->dtype);
    return is_unsigned ? q : uop_add(q, uop_where(lt0(x), cl(x, 1), cl(x, 0)));
  }
  return NULL;
}

/* ================================================================================================================
 * late patterns
 * ================================================================================================================ */

static UOp *not_and_not(RwCtx *rw, UOp *root, UOp **m) { /* x y */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_OR)) return NULL;
  return lnot(uop_or(m[0], m[1]));
}

static UOp *mul_pow2(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  int v = pow2_shift(m[1]);
  if (!has(rw, TG_OP_SHL) || !v) return NULL;
  return uop_alu2(TG_OP_SHL, m[0], cl(m[0], v));
}

static UOp *cdiv_pow2_unsigned(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  int v = pow2_shift(m[1]);
  if (!has(rw, TG_OP_SHR) || !v) return NULL;
  return uop_alu2(TG_OP_SHR, m[0], cl(m[0], v));
}

static UOp *cdiv_pow2_signed(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  int v = pow2_shift(m[1]);
  if (!has(rw, TG_OP_SHR) || !v) return NULL;
  UOp *x = m[0], *l = lt0(x);
  if (uop_vmin(l) == uop_vmax(l)) l = uop_const_bool(uop_vmin(l) != 0);
  return uop_alu2(TG_OP_SHR, uop_add(x, uop_where(l, cl(x, m[1]->arg.c.i - 1), cl(x, 0))), cl(x, v));
}

/* DISABLE_FAST_IDIV (tinygrad's default 1): no magic-number division, CMOD stays */
static bool fast_idiv_disabled(void) { return tg_getenv_int("DISABLE_FAST_IDIV", 1) != 0; }

static UOp *cdiv_fast(RwCtx *rw, UOp *root, UOp **m) { /* x d */
  TG_UNUSED(root);
  UOp *x = m[0];
  if (fast_idiv_disabled() || !has(rw, TG_OP_SHR) || m[1]->arg.c.kind != CK_INT || m[1]->arg.c.i <= 0) return NULL;
  if (!(uop_vmin(x) >= 0 || dt_is_unsigned(x->dtype))) return NULL;
  return fast_idiv(ren_of(rw), x, m[1]->arg.c.i, false);
}

static UOp *cmod_to_cdiv(RwCtx *rw, UOp *root, UOp **m) { /* x d */
  TG_UNUSED(root);
  UOp *x = m[0], *d = m[1];
  if (fast_idiv_disabled() || !has(rw, TG_OP_SHR) || !(uop_vmin(x) >= 0 || dt_is_unsigned(x->dtype))) return NULL;
  return sub(x, uop_mul(d, uop_alu2(TG_OP_CDIV, x, d)));
}

/* x * -1 -> NEG x; an unsigned -1 is held wrapped here (UINT_MAX; tinygrad keeps the CONST's value -1) */
static UOp *mul_neg1(RwCtx *rw, UOp *root, UOp **m) { /* x c */
  TG_UNUSED(root);
  UOp *c = m[1];
  bool minus_one = c->arg.c.kind == CK_FLOAT ? c->arg.c.f == -1.0
                   : c->arg.c.kind == CK_INT
                       ? (dt_is_unsigned(c->dtype) ? (i128)(uint64_t)c->arg.c.i == dt_max_int(c->dtype) : c->arg.c.i == -1)
                       : false;
  if (!has(rw, TG_OP_NEG) || !minus_one) return NULL;
  return uop_alu1(TG_OP_NEG, m[0]);
}

static UOp *add_neg(RwCtx *rw, UOp *root, UOp **m) { /* x y */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_NEG) || !has(rw, TG_OP_SUB)) return NULL;
  return uop_alu2(TG_OP_SUB, m[0], m[1]);
}

static UOp *not_lt_c(RwCtx *rw, UOp *root, UOp **m) { /* x c: !(x < c) -> c-1 < x */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPLT) || m[1]->arg.c.kind != CK_INT) return NULL;
  return uop_lt(cl(m[1], m[1]->arg.c.i - 1), m[0]);
}

static UOp *not_c_lt(RwCtx *rw, UOp *root, UOp **m) { /* c x: !(c < x) -> x < c+1 */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPLT) || m[0]->arg.c.kind != CK_INT) return NULL;
  return uop_lt(m[1], cl(m[0], m[0]->arg.c.i + 1));
}

static UOp *negx_lt_yc(RwCtx *rw, UOp *root, UOp **m) { /* x y c: -x < y*c -> y*(-c) < x */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPLT) || m[2]->arg.c.kind != CK_INT) return NULL;
  return uop_lt(uop_mul(m[1], cl(m[2], -m[2]->arg.c.i)), m[0]);
}

static UOp *negx_lt_c(RwCtx *rw, UOp *root, UOp **m) { /* x c: -x < c -> -c < x */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPLT) || m[1]->arg.c.kind != CK_INT) return NULL;
  return uop_lt(cl(m[1], -m[1]->arg.c.i), m[0]);
}

static UOp *between_is_eq(RwCtx *rw, UOp *root, UOp **m) { /* c1 x c2: c1 < x & x < c2 with one value -> x == c */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPLT) || m[0]->arg.c.kind != CK_INT || m[2]->arg.c.kind != CK_INT) return NULL;
  if (m[0]->arg.c.i + 1 != m[2]->arg.c.i - 1) return NULL;
  return lnot(ne(m[1], cl(m[1], m[0]->arg.c.i + 1)));
}

static UOp *not_ne_is_eq(RwCtx *rw, UOp *root, UOp **m) { /* x y */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_CMPEQ)) return NULL;
  return uop_alu2(TG_OP_CMPEQ, m[0], m[1]);
}

static UOp *recip_to_fdiv(RwCtx *rw, UOp *root, UOp **m) {
  if (!has(rw, TG_OP_FDIV) || !dt_is_float(root->dtype)) return NULL;
  return uop_alu2(TG_OP_FDIV, uop_const_float(root->dtype, 1.0), m[0]);
}

static UOp *mul_by_fdiv1(RwCtx *rw, UOp *root, UOp **m) { /* a b */
  TG_UNUSED(root);
  if (!has(rw, TG_OP_FDIV)) return NULL;
  return uop_alu2(TG_OP_FDIV, m[0], m[1]);
}

static const Rule late_rules[] = {
    /* !x & !y -> !(x | y) */
    RULE("(AND (CMPNE x.bool true) (CMPNE y.bool true))", not_and_not, NULL),
    /* x * 2^y -> x << y */
    RULE("(MUL x.ints c:CONST)", mul_pow2, NULL),
    /* uint x / 2^y -> x >> y; int x / 2^y -> (x + (x<0 ? 2^y-1 : 0)) >> y */
    RULE("(CDIV x.uints c:CONST)", cdiv_pow2_unsigned, NULL),
    RULE("(CDIV x.ints c:CONST)", cdiv_pow2_signed, NULL),
    /* a non-negative x / constant is a multiply-shift */
    RULE("(CDIV x.ints d:CONST)", cdiv_fast, NULL),
    /* a non-negative x % d is x - d*(x/d), so the division above applies */
    RULE("(CMOD x.ints d)", cmod_to_cdiv, NULL),
    RULE("(MUL x c:CONST)", mul_neg1, NULL),
    RULE("(ADD x (NEG y))", add_neg, NULL),
    /* comparison canonical forms (late: the simplifier expects the other spelling) */
    RULE("(CMPNE (=CMPLT x.sints c:CONST) true)", not_lt_c, NULL),
    RULE("(CMPNE (=CMPLT c:CONST x.sints) true)", not_c_lt, NULL),
    RULE("(=CMPLT (MUL x.sints -1) (MUL y.sints c:CONST))", negx_lt_yc, NULL),
    RULE("(=CMPLT (MUL x.sints -1) c:CONST)", negx_lt_c, NULL),
    RULE("(AND (=CMPLT c1:CONST x.sints) (=CMPLT x.sints c2:CONST))", between_is_eq, NULL),
    RULE("(CMPNE (CMPNE x y) true)", not_ne_is_eq, NULL),
    /* RECIPROCAL is 1/x where the renderer divides; a * (1/b) -> a/b */
    RULE("(RECIPROCAL x)", recip_to_fdiv, NULL),
    RULE("(MUL a (=FDIV.floats 1 b))", mul_by_fdiv1, NULL),
};

const RuleSet *cg_pm_late_decomp(const Renderer *ren) {
  TG_UNUSED(ren);
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("late decompositions", late_rules);
    pm = pm_concat(pm_concat(cg_pm_early_decomp(ren), set), cg_pm_transcendental());
  }
  return pm;
}
