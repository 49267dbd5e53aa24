/* transcendental.c — EXP2, LOG2, SIN and POW as float polynomials and bit manipulation, for devices whose
 * renderer has no native op (tinygrad codegen/decomp/transcendental.py: the SLEEF-derived 1.0 ULP algorithms with
 * the same coefficients, reductions and special values: inf, -inf, nan, -0.0, denormals).
 *
 * The graphs are built the way tinygrad's operators build them (a - b is a + b*-1, x >= c is !(x < c), x / y is
 * x * (1/y), shr/shl are FLOORDIV/MUL by a power of two); the decomposition rule set then lowers those to SHR/SHL,
 * FDIV, SUB, NEG. */
#include "cg_internal.h"

#include <math.h>

/* ---- building blocks that read like tinygrad's operators ---- */
static UOp *cf(UOp *like, double v) { return uop_const_float(like->dtype, v); }
static UOp *ci(UOp *like, int64_t v) { return uop_const_int(like->dtype, v); }
static UOp *add(UOp *a, UOp *b) { return uop_alu2(TG_OP_ADD, a, b); }
static UOp *mul(UOp *a, UOp *b) { return uop_alu2(TG_OP_MUL, a, b); }
static UOp *neg(UOp *a) { return mul(a, ci(a, -1)); }
static UOp *sub(UOp *a, UOp *b) { return add(a, neg(b)); }
static UOp *lt(UOp *a, UOp *b) { return uop_alu2(TG_OP_CMPLT, a, b); }
static UOp *ne(UOp *a, UOp *b) { return uop_alu2(TG_OP_CMPNE, a, b); }
static UOp *lnot(UOp *a) { return ne(a, uop_const_bool(true)); }
static UOp *where(UOp *c, UOp *t, UOp *f) { return uop_alu3(TG_OP_WHERE, c, t, f); }
static UOp *band(UOp *a, UOp *b) { return uop_alu2(TG_OP_AND, a, b); }
static UOp *bor(UOp *a, UOp *b) { return uop_alu2(TG_OP_OR, a, b); }
static UOp *div_(UOp *a, UOp *b) { return mul(a, uop_alu1(TG_OP_RECIPROCAL, b)); }
static UOp *shr(UOp *x, int y) { return uop_alu2(TG_OP_FLOORDIV, x, ci(x, (int64_t)1 << y)); }
static UOp *shl(UOp *x, int y) { return mul(x, ci(x, (int64_t)1 << y)); }
/* tinygrad polyN: ((c0*x + c1)*x + c2)... (the leading 0.0*x + c0 folds to c0) */
static UOp *poly(UOp *x, const double *c, size_t n) {
  UOp *acc = cf(x, c[0]);
  for (size_t i = 1; i < n; i++) acc = add(mul(acc, x), cf(x, c[i]));
  return acc;
}

static int mantissa_bits(const DType *d) { return d->id == TG_FLOAT64 ? 52 : d->id == TG_FLOAT32 ? 23 : 10; }
static int exponent_bits(const DType *d) { return d->id == TG_FLOAT64 ? 11 : d->id == TG_FLOAT32 ? 8 : 5; }
static int64_t exponent_bias(const DType *d) { return ((int64_t)1 << (exponent_bits(d) - 1)) - 1; }
static int64_t exponent_mask(const DType *d) { return ((int64_t)1 << exponent_bits(d)) - 1; }
static const DType *int_of(const DType *d) { return d->id == TG_FLOAT64 ? DT_INT64 : d->id == TG_FLOAT32 ? DT_INT32 : DT_INT16; }
static const DType *uint_of(const DType *d) { return d->id == TG_FLOAT64 ? DT_UINT64 : d->id == TG_FLOAT32 ? DT_UINT32 : DT_UINT16; }

static bool is_transcendental_dtype(const DType *d) {
  return d->id == TG_FLOAT16 || d->id == TG_FLOAT32 || d->id == TG_FLOAT64;
}

/* inf -> inf, -inf -> _inf, nan -> nan, otherwise -> ratio */
static UOp *lazy_map_numbers(UOp *x, UOp *inf, UOp *ninf, UOp *nan, UOp *ratio) {
  return where(ne(x, cf(x, INFINITY)), where(ne(x, x), nan, where(ne(x, cf(x, -INFINITY)), ratio, ninf)), inf);
}

/* round d to an int away from 0 */
static UOp *rintk(UOp *d) {
  return uop_cast(add(d, where(lt(d, cf(d, 0.0)), cf(d, -0.5), cf(d, 0.5))), int_of(d->dtype));
}

/* cast(2^q, float_dtype) for an integer q in [-126, 127] */
static UOp *pow2if(UOp *q, const DType *float_dtype) {
  const DType *out = q->dtype == DT_INT64 ? DT_FLOAT64 : q->dtype == DT_INT32 ? DT_FLOAT32 : float_dtype;
  return uop_bitcast(shl(add(q, ci(q, exponent_bias(out))), mantissa_bits(out)), out);
}

/* the integer part of log2(d) for a normalized d >= 0 */
static UOp *ilogb2k(UOp *d) {
  UOp *dint = uop_bitcast(d, int_of(d->dtype));
  return sub(band(shr(dint, mantissa_bits(d->dtype)), ci(dint, exponent_mask(d->dtype))), ci(dint, exponent_bias(d->dtype)));
}

/* d * 2^e, e a float holding an integer in [-127, 127] */
static UOp *ldexp3k(UOp *d, UOp *e) {
  const DType *it = int_of(d->dtype);
  UOp *m1 = uop_bitcast(d, it), *m2 = shl(uop_cast(e, it), mantissa_bits(d->dtype));
  return uop_bitcast(add(m1, m2), d->dtype);
}

/* d * 2^e for d > 0 not denormal, e an int */
static UOp *ldexp2k(UOp *d, UOp *e) {
  return mul(mul(d, pow2if(shr(e, 1), d->dtype)), pow2if(sub(e, shr(e, 1)), d->dtype));
}

/* frexp(v) for v != 0: mantissa in [0.5, 1) and exponent */
static void frexp_(UOp *v, UOp **mant, UOp **expo) {
  int64_t m1 = v->dtype->id == TG_FLOAT64 ? 0x000FFFFFFFFFFFFFLL : v->dtype->id == TG_FLOAT32 ? 0x807FFFFFLL : 0x83FFLL;
  int64_t m2 = v->dtype->id == TG_FLOAT64 ? 0x3FE0000000000000LL : v->dtype->id == TG_FLOAT32 ? 0x3F000000LL : 0x3800LL;
  UOp *bits = uop_bitcast(v, uint_of(v->dtype));
  UOp *exponent = band(shr(bits, mantissa_bits(v->dtype)), ci(bits, exponent_mask(v->dtype)));
  *mant = uop_bitcast(bor(band(bits, ci(bits, m1)), ci(bits, m2)), v->dtype);
  *expo = add(sub(exponent, ci(exponent, exponent_bias(v->dtype))), ci(exponent, 1));
}

/* ---- sine argument reduction ---- */

static const int64_t two_over_pi_f[] = {0x00000000, 0x28be60db, 0x9391054a, 0x7f09d5f4, 0x7d4d3770, 0x36d8a566,
                                        0x4f10e410};

static UOp *take(UOp *an, UOp *i, int offset, int count) {
  if (count + offset < (int)TG_ARRAY_LEN(two_over_pi_f) - 1)
    an = where(ne(i, ci(i, count)), take(an, i, offset, count + 1), ci(an, two_over_pi_f[count + offset]));
  return an;
}

/* Payne-Hanek reduction of d (39800 <= d <= inf) modulo pi/2: r and the quadrant q (int32) */
static void payne_hanek(UOp *d, UOp **r_out, UOp **q_out) {
  const DType *mid = d->dtype->id == TG_FLOAT16 ? DT_FLOAT32 : d->dtype;
  UOp *f, *e;
  frexp_(d, &f, &e);
  UOp *ia = uop_cast(mul(uop_cast(f, mid), uop_const_float(mid, 4.294967296e9)), DT_UINT64);
  UOp *i = shr(uop_cast(e, DT_UINT64), 5);
  e = band(uop_cast(e, DT_INT32), uop_const_int(DT_INT32, 31));
  UOp *offset = sub(uop_const_int(DT_INT32, 32), e);
  UOp *a[4];
  for (int k = 0; k < 4; k++) a[k] = take(uop_const_int(DT_UINT32, 0), i, k, 0);
#define SHL_LAZY(x, y) uop_cast(mul(uop_cast(x, DT_UINT64), uop_cast(pow2if(y, d->dtype), DT_UINT64)), DT_UINT32)
#define SHR_LAZY(x, y) \
  uop_cast(uop_alu2(TG_OP_FLOORDIV, uop_cast(x, DT_UINT64), uop_cast(pow2if(y, d->dtype), DT_UINT64)), DT_UINT32)
  UOp *hi = bor(SHL_LAZY(a[0], e), SHR_LAZY(a[1], offset));
  UOp *mi = bor(SHL_LAZY(a[1], e), SHR_LAZY(a[2], offset));
  UOp *lo = bor(SHL_LAZY(a[2], e), SHR_LAZY(a[3], offset));
#undef SHL_LAZY
#undef SHR_LAZY
#define HP_MUL(x, y) mul(uop_cast(x, DT_UINT64), uop_cast(y, DT_UINT64))
  UOp *p = add(add(shl(HP_MUL(ia, hi), 32), HP_MUL(ia, mi)), shr(HP_MUL(ia, lo), 32));
#undef HP_MUL
  UOp *q = uop_cast(shr(p, 62), DT_INT32);
  p = band(p, uop_const_int(DT_UINT64, 0x3fffffffffffffffLL));
  UOp *r = uop_cast(mul(uop_cast(p, mid), uop_const_float(mid, 3.4061215800865545e-19)), d->dtype);
  UOp *small = lt(f, cf(f, 0.5));
  *r_out = where(small, r, sub(r, cf(r, M_PI / 2)));
  *q_out = where(small, q, add(q, ci(q, 1)));
}

static UOp *cody_waite_reduce_d(UOp *x, UOp *q, UOp *qdh) {
  if (x->dtype->id == TG_FLOAT64) {
    const double PI_A = 3.1415926218032836914, PI_B = 3.1786509424591713469e-08, PI_C = 1.2246467864107188502e-16,
                 PI_D = 1.2736634327021899816e-24;
    UOp *d = add(mul(qdh, cf(x, -PI_A)), x);
    d = add(mul(q, cf(x, -PI_A)), d);
    d = add(mul(qdh, cf(x, -PI_B)), d);
    d = add(mul(q, cf(x, -PI_B)), d);
    d = add(mul(qdh, cf(x, -PI_C)), d);
    d = add(mul(q, cf(x, -PI_C)), d);
    return add(mul(add(qdh, q), cf(x, -PI_D)), d);
  }
  if (x->dtype->id == TG_FLOAT16) /* float16 reduces in float32 precision */
    return uop_cast(cody_waite_reduce_d(uop_cast(x, DT_FLOAT32), uop_cast(q, DT_FLOAT32), qdh), DT_FLOAT16);
  UOp *d = add(mul(q, cf(x, -3.1414794921875)), x);
  d = add(mul(q, cf(x, -0.00011315941810607910156)), d);
  d = add(mul(q, cf(x, -1.9841872589410058936e-09)), d);
  return add(mul(q, cf(x, -1.2154201256553420762e-10)), d);
}

/* Cody-Waite reduction of d (0 <= |d| <= 39800) modulo pi/2 */
static void cody_waite(UOp *d, UOp **r_out, UOp **q_out) {
  const double m_1_pi = 0.318309886183790671537767526745028724;
  UOp *qdh = mul(uop_cast(uop_cast(mul(d, cf(d, m_1_pi / 16777216.0)), DT_INT64), d->dtype), cf(d, 16777216.0));
  UOp *quadrant = d->dtype->id == TG_FLOAT64 ? rintk(sub(mul(d, cf(d, m_1_pi)), qdh)) : rintk(mul(d, cf(d, m_1_pi)));
  *r_out = cody_waite_reduce_d(d, uop_cast(quadrant, d->dtype), qdh);
  *q_out = uop_cast(quadrant, DT_INT32);
}

static UOp *sin_poly(UOp *d) {
  static const double c32[] = {2.6083159809786593541503e-06, -0.0001981069071916863322258, 0.00833307858556509017944336,
                               -0.166666597127914428710938, 1.0};
  static const double c64[] = {-7.97255955009037868891952e-18, 2.81009972710863200091251e-15,
                               -7.64712219118158833288484e-13, 1.60590430605664501629054e-10,
                               -2.50521083763502045810755e-08, 2.75573192239198747630416e-06,
                               -0.000198412698412696162806809, 0.00833333333333332974823815,
                               -0.166666666666666657414808, 1.0};
  UOp *d2 = mul(d, d);
  return mul(d, d->dtype->id == TG_FLOAT64 ? poly(d2, c64, TG_ARRAY_LEN(c64)) : poly(d2, c32, TG_ARRAY_LEN(c32)));
}

static UOp *ifand(UOp *q, int64_t n) { return ne(band(q, ci(q, n)), ci(q, 0)); }

static UOp *sin_poly_small(UOp *d, UOp *q) {
  UOp *r = sin_poly(d);
  return mul(r, where(ifand(q, 1), cf(r, -1), cf(r, 1)));
}

static UOp *sin_poly_large(UOp *d, UOp *q) {
  UOp *r = sin_poly(add(d, where(ifand(q, 1), cf(d, M_PI / 2), cf(d, 0))));
  return mul(r, where(ifand(q, 2), cf(r, -1), cf(r, 1)));
}

/* ---- the toplevel functions ---- */

UOp *cg_xsin(UOp *d) {
  TG_ASSERT(is_transcendental_dtype(d->dtype), "dtype %s", d->dtype->name);
  const double switch_over = 30.0;
  UOp *zero = cf(d, 0.0);
  UOp *x = lazy_map_numbers(d, zero, zero, zero, d);
  UOp *x_sign = where(ne(x, zero), where(lt(x, zero), cf(x, -1), cf(x, 1)), zero);
  UOp *x_abs = mul(x, x_sign);
  UOp *r, *q, *r_small, *q_small;
  payne_hanek(x_abs, &r, &q);
  cody_waite(x_abs, &r_small, &q_small);
  UOp *result = where(lt(x_abs, cf(x_abs, switch_over)), sin_poly_small(r_small, q_small), sin_poly_large(r, q));
  result = mul(result, x_sign);
  UOp *nan = cf(d, NAN);
  return lazy_map_numbers(d, nan, nan, nan, result);
}

UOp *cg_xexp2(UOp *d) {
  TG_ASSERT(is_transcendental_dtype(d->dtype), "dtype %s", d->dtype->name);
  UOp *zero = cf(d, 0.0);
  UOp *x = lazy_map_numbers(d, zero, zero, zero, d);
  UOp *q = rintk(x);
  UOp *s = sub(x, uop_cast(q, x->dtype));
  static const double c64[] = {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6,
                               0.1321543872511327615e-5, 0.1525273353517584730e-4, 0.1540353045101147808e-3,
                               0.1333355814670499073e-2, 0.9618129107597600536e-2, 0.5550410866482046596e-1,
                               0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1};
  static const double c32[] = {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1,
                               0.2402264476e+0, 0.6931471825e+0, 1.0};
  UOp *u = d->dtype->id == TG_FLOAT64 ? poly(s, c64, TG_ARRAY_LEN(c64)) : poly(s, c32, TG_ARRAY_LEN(c32));
  u = ldexp2k(u, q);
  double upper = d->dtype->id == TG_FLOAT64 ? 1024 : d->dtype->id == TG_FLOAT32 ? 128 : 23;
  double lower = d->dtype->id == TG_FLOAT64 ? -2000 : d->dtype->id == TG_FLOAT32 ? -150 : -22;
  u = where(lnot(lt(d, cf(d, upper))), cf(d, INFINITY), u);
  u = where(lt(d, cf(d, lower)), cf(d, 0.0), u);
  return where(ne(d, d), cf(d, NAN), u);
}

UOp *cg_xlog2(UOp *d) {
  TG_ASSERT(is_transcendental_dtype(d->dtype), "dtype %s", d->dtype->name);
  int denormal_exp = d->dtype->id == TG_FLOAT16 ? 10 : 64;
  UOp *flt_min = cf(d, d->dtype->id == TG_FLOAT16 ? 6.1e-5 : 1e-4);
  UOp *is_denormal = lt(d, flt_min);
  UOp *a = where(is_denormal, mul(d, cf(d, ldexp(1.0, denormal_exp))), d);
  UOp *e = uop_cast(ilogb2k(mul(a, cf(a, 1.0 / 0.75))), a->dtype);
  UOp *m = ldexp3k(a, neg(e));
  e = where(is_denormal, sub(e, cf(e, denormal_exp)), e);
  UOp *x = div_(sub(m, cf(m, 1.0)), add(m, cf(m, 1.0)));
  UOp *x2 = mul(x, x);
  UOp *r;
  if (d->dtype->id == TG_FLOAT64) {
    static const double c[] = {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0,
                               0.3205977477944495502e+0, 0.4121985945485324709e+0, 0.5770780162997058982e+0,
                               0.96179669392608091449};
    UOp *t = poly(x2, c, TG_ARRAY_LEN(c));
    r = add(add(mul(t, mul(x, x2)), e), mul(x, cf(x, 2.885390081777926774)));
  } else {
    static const double c[] = {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120};
    UOp *t = poly(x2, c, TG_ARRAY_LEN(c));
    r = add(add(mul(t, mul(x, x2)), e), mul(x, cf(x, 2.8853900432586669922)));
    /* the s_lo term only for float32 (it underflows in float16) */
    r = add(r, d->dtype->id == TG_FLOAT32 ? mul(x, cf(x, 3.2734474483568488616e-08)) : cf(x, 0.0));
  }
  r = where(ne(d, cf(d, INFINITY)), r, cf(r, INFINITY));                 /* log2(inf) = inf */
  r = where(ne(d, cf(d, 0.0)), r, cf(r, -INFINITY));                     /* log2(+-0) = -inf */
  r = where(lt(d, cf(d, -0.0)), cf(r, NAN), r);                          /* log2(x<0) = nan */
  r = where(ne(d, d), cf(r, NAN), r);                                    /* log2(nan) = nan */
  /* log2(-0.0) = -inf, also where -0.0 == 0.0 does not hold */
  return where(ne(uop_alu1(TG_OP_RECIPROCAL, d), cf(d, -INFINITY)), r, cf(r, -INFINITY));
}

UOp *cg_xpow(UOp *base, UOp *exponent) {
  UOp *zero = cf(base, 0.0);
  UOp *absb = where(lt(base, zero), neg(base), base);
  UOp *ret = uop_alu1(TG_OP_EXP2, mul(uop_alu1(TG_OP_LOG2, absb), exponent));
  /* negative base: nan for a non-integer exponent, negated for an odd integer exponent; -inf is never nan */
  UOp *non_int = ne(exponent, uop_cast(uop_cast(exponent, DT_INT32), exponent->dtype));
  UOp *abs_e = where(lt(exponent, cf(exponent, 0.0)), neg(exponent), exponent);
  UOp *e_int = uop_cast(abs_e, DT_INT32);
  UOp *is_odd = uop_cast(uop_alu2(TG_OP_FLOORMOD, e_int, ci(e_int, 2)), DT_BOOL);
  UOp *neg_base = where(non_int, where(ne(base, cf(base, -INFINITY)), cf(ret, NAN), ret), where(is_odd, neg(ret), ret));
  /* x ** 0 = 1, 0 ** 0 and inf ** 0 included (tinygrad's !(e != 0).where(1, v), its not-swapped form) */
  return where(ne(exponent, cf(exponent, 0.0)), where(lt(base, zero), neg_base, ret), cf(ret, 1.0));
}

/* ---- the rule set: decompose what the renderer lacks ---- */

/* TRANSCENDENTAL=2 forces the decompositions even where the renderer has the op (tinygrad's knob) */
static bool native(const Renderer *ren, TgOp op) {
  return renderer_has_op(ren, op) && tg_getenv_int("TRANSCENDENTAL", 1) < 2;
}

static UOp *decomp_unary(RwCtx *rw, UOp *u, UOp **m) {
  const Renderer *ren = rw->ctx;
  TgOp op = uop_op(u);
  if (native(ren, op) || !dt_is_float(u->dtype) || u->dtype->count > 1) return NULL;
  UOp *d = m[1]; /* m[0] is u */
  if (!is_transcendental_dtype(u->dtype)) { /* bfloat16, fp8: compute in float32 */
    if (dt_is_weak(u->dtype)) return NULL;
    UOp *c = uop_cast(d, DT_FLOAT32);
    return uop_cast(uop_new(op, DT_FLOAT32, &c, 1, arg_none()), u->dtype);
  }
  if (d->dtype != u->dtype) return NULL; /* pm_cast_float_alu makes the operand's dtype explicit first */
  if (op == TG_OP_EXP2) return cg_xexp2(d);
  if (op == TG_OP_LOG2) return cg_xlog2(d);
  if (op == TG_OP_SIN) return cg_xsin(d);
  return NULL;
}

static UOp *decomp_sqrt(RwCtx *rw, UOp *u, UOp **m) {
  const Renderer *ren = rw->ctx;
  TG_UNUSED(u);
  if (native(ren, TG_OP_SQRT)) return NULL;
  return cg_xpow(m[1], cf(m[1], 0.5));
}

static UOp *decomp_pow(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw);
  if (!dt_is_float(u->dtype) || m[1]->dtype != u->dtype || m[2]->dtype != u->dtype) return NULL;
  return cg_xpow(m[1], m[2]);
}

static const Rule pow_rules[] = {
    /* POW is exp2(e * log2(|b|)) with tinygrad's sign and zero rules (part of tinygrad's sym) */
    RULE("u:(POW b e)", decomp_pow, NULL),
};

const RuleSet *cg_pm_pow(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pow", pow_rules);
  return pm;
}

static const Rule transcendental_rules[] = {
    /* EXP2 / LOG2 / SIN the renderer lacks become polynomials (other float dtypes go through float32) */
    RULE("u:(EXP2|LOG2|SIN d)", decomp_unary, NULL),
    /* SQRT the renderer lacks is pow(x, 0.5) */
    RULE("u:(SQRT d)", decomp_sqrt, NULL),
    /* a POW left over (normally lowered in the symbolic passes, cg_pm_pow) */
    RULE("u:(POW b e)", decomp_pow, NULL),
};

const RuleSet *cg_pm_transcendental(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("transcendental", transcendental_rules);
  return pm;
}
