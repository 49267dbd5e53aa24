/* bounds.c — interval analysis of integer/bool UOps (tinygrad's _min_max, reference section 3) and the small
 * index-algebra helpers symbolic rules lean on: const_factor, divides, split_uop and usum.
 *
 * Bounds are exact i128 intervals. Arithmetic saturates at I128_MIN / I128_MAX, which then stand for "unbounded"
 * (weakint's range is the whole i128 line); saturation keeps every interval sound. Floats are not analyzed: a float
 * node gets its dtype's range, except float constants, which get [floor(v), ceil(v)] (inf maps to the limits).
 * Results are cached in the node (UOP_F_BOUNDS); a node whose sources are not analyzed yet is handled by one
 * iterative pass over its toposort, so deep graphs never recurse on the C stack. */
#include <math.h>

#include "uop.h"

/* ---- saturating i128 arithmetic ---- */

static i128 sat_add(i128 a, i128 b) {
  i128 r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? I128_MAX : I128_MIN;
  return r;
}
static i128 sat_sub(i128 a, i128 b) {
  i128 r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? I128_MAX : I128_MIN;
  return r;
}
static i128 sat_mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? I128_MIN : I128_MAX;
  return r;
}
static i128 min4(i128 a, i128 b, i128 c, i128 d) { return TG_MIN(TG_MIN(a, b), TG_MIN(c, d)); }
static i128 max4(i128 a, i128 b, i128 c, i128 d) { return TG_MAX(TG_MAX(a, b), TG_MAX(c, d)); }

/* Python's floor division and C's truncating division on i128 (divisor nonzero; I128_MIN / -1 saturates). */
static i128 floordiv128(i128 a, i128 b) {
  if (b == -1) return a == I128_MIN ? I128_MAX : -a;
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
static i128 floormod128(i128 a, i128 b) {
  if (b == -1) return 0;
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static i128 cdiv128(i128 a, i128 b) {
  if (b == -1) return a == I128_MIN ? I128_MAX : -a;
  return a / b;
}

/* shift by a constant amount; out of range shifts have no defined interval */
static bool shl128(i128 a, i128 k, i128 *out) {
  if (k < 0 || k > 126) return false;
  *out = sat_mul(a, (i128)1 << (int)k);
  return true;
}
static bool shr128(i128 a, i128 k, i128 *out) {
  if (k < 0) return false;
  *out = k > 126 ? (a < 0 ? -1 : 0) : a >> (int)k; /* arithmetic shift = floor division by 2^k */
  return true;
}

/* ---- per-node rule ---- */

static void dtype_range(const DType *d, i128 *lo, i128 *hi) {
  const DType *s = d->is_ptr ? d->base->scalar : d->scalar;
  if (s->kind == DTK_VOID) { *lo = I128_MIN; *hi = I128_MAX; return; }
  *lo = dt_min_int(s);
  *hi = dt_max_int(s);
}

static bool is_float_dt(const DType *d) { return !d->is_ptr && dt_is_float(d); }
static bool is_int_dt(const DType *d) { return !d->is_ptr && dt_is_int(d); }

/* a float value as an enclosing integer interval */
static void float_interval(double v, i128 *lo, i128 *hi) {
  const double lim = 85070591730234615865843651857942052864.0; /* 2^126 */
  if (isnan(v)) { *lo = I128_MIN; *hi = I128_MAX; return; }
  if (isinf(v)) { *lo = *hi = v > 0 ? I128_MAX : I128_MIN; return; }
  if (v >= lim) { *lo = (i128)1 << 126; *hi = I128_MAX; return; }
  if (v <= -lim) { *lo = I128_MIN; *hi = -((i128)1 << 126); return; }
  *lo = (i128)floor(v);
  *hi = (i128)ceil(v);
}

/* i128 -> double -> onto the grid of float dtype d, then enclosing integers (rounding is monotone) */
static void round_to_float_grid(const DType *d, i128 lo, i128 hi, i128 *olo, i128 *ohi) {
  i128 a, b;
  if (lo == I128_MIN) a = I128_MIN;
  else {
    Const c = dt_const(d->scalar, const_float((double)lo));
    i128 x, y;
    float_interval(c.f, &x, &y);
    a = x;
  }
  if (hi == I128_MAX) b = I128_MAX;
  else {
    Const c = dt_const(d->scalar, const_float((double)hi));
    i128 x, y;
    float_interval(c.f, &x, &y);
    b = y;
  }
  *olo = a;
  *ohi = b;
}

static bool bounds_of_binary(UOp *u, i128 *lo, i128 *hi) {
  UOp *a = u->src[0], *b = u->src[1];
  i128 al = a->vmin, ah = a->vmax, bl = b->vmin, bh = b->vmax;
  switch (uop_op(u)) {
  case TG_OP_ADD: *lo = sat_add(al, bl); *hi = sat_add(ah, bh); return true;
  case TG_OP_SUB: *lo = sat_sub(al, bh); *hi = sat_sub(ah, bl); return true;
  case TG_OP_AND:
    if (is_int_dt(u->dtype) && bl == bh && bl >= 0) {
      *lo = 0;
      *hi = al < 0 ? bh : TG_MIN(ah, bh);
      return true;
    }
    if (u->dtype == DT_BOOL) { *lo = al && bl; *hi = ah && bh; return true; }
    return false;
  case TG_OP_MUL: {
    i128 p0 = sat_mul(al, bl), p1 = sat_mul(al, bh), p2 = sat_mul(ah, bl), p3 = sat_mul(ah, bh);
    *lo = min4(p0, p1, p2, p3);
    *hi = max4(p0, p1, p2, p3);
    return true;
  }
  case TG_OP_SHL:
    if (bl != bh) return false;
    return shl128(al, bl, lo) && shl128(ah, bl, hi);
  case TG_OP_SHR:
    if (bl != bh) return false;
    return shr128(al, bl, lo) && shr128(ah, bl, hi);
  case TG_OP_CMOD: {
    i128 c = bl;
    if (bl == bh && c > 0) {
      *lo = al > 0 ? 0 : (al > -c ? al : -(bh - 1));
      *hi = ah < 0 ? 0 : (ah < c ? ah : c - 1);
      return true;
    }
    if (bl > 0) {
      if (al >= 0) { *lo = 0; *hi = bh - 1; }
      else if (ah <= 0) { *lo = -(bh - 1); *hi = 0; }
      else { *lo = -(bh - 1); *hi = bh - 1; }
      return true;
    }
    if (bh < 0) {
      i128 m = sat_sub(-bl, 1);
      if (al >= 0) { *lo = 0; *hi = m; }
      else if (ah <= 0) { *lo = -m; *hi = 0; }
      else { *lo = -m; *hi = m; }
      return true;
    }
    return false;
  }
  case TG_OP_CDIV:
    if ((bl > 0 && bh > 0) || (bl < 0 && bh < 0)) {
      i128 q0 = cdiv128(al, bl), q1 = cdiv128(al, bh), q2 = cdiv128(ah, bl), q3 = cdiv128(ah, bh);
      *lo = min4(q0, q1, q2, q3);
      *hi = max4(q0, q1, q2, q3);
      return true;
    }
    return false;
  case TG_OP_FLOORDIV:
    if (al > ah) { *lo = *hi = 0; return true; } /* empty numerator range (a RANGE with end 0) */
    if ((bl > 0 && bh > 0) || (bl < 0 && bh < 0)) {
      i128 q0 = floordiv128(al, bl), q1 = floordiv128(al, bh), q2 = floordiv128(ah, bl), q3 = floordiv128(ah, bh);
      *lo = min4(q0, q1, q2, q3);
      *hi = max4(q0, q1, q2, q3);
      return true;
    }
    return false;
  case TG_OP_FLOORMOD: {
    if (al > ah) { *lo = *hi = 0; return true; }
    i128 c = bl;
    if (bl == bh && c > 0) {
      if (floordiv128(al, c) == floordiv128(ah, c)) { *lo = floormod128(al, c); *hi = floormod128(ah, c); }
      else { *lo = 0; *hi = c - 1; }
      return true;
    }
    if (bl == bh && c < 0) {
      if (floordiv128(al, c) == floordiv128(ah, c)) { *lo = floormod128(al, c); *hi = floormod128(ah, c); }
      else { *lo = c + 1; *hi = 0; }
      return true;
    }
    if (bl > 0) { *lo = 0; *hi = bh - 1; return true; }
    if (bh < 0) { *lo = bl + 1; *hi = 0; return true; }
    return false;
  }
  case TG_OP_XOR:
    /* x ^ -1 is ~x, [~vmax, ~vmin], for signed/weakint x. On an unsigned dtype the -1 (a weakint -1, or a uint64
     * bitwise_not's 2^64-1, which a weakint CONST holds as -1) wraps to the all-ones mask and ~x is max - x, never
     * negative: keep the dtype range there, as tinygrad gets for its unsigned mask constant. */
    if (bl == -1 && bh == -1 && !dt_is_unsigned(u->dtype)) { *lo = ~ah; *hi = ~al; return true; }
    return false;
  case TG_OP_MAX: *lo = TG_MAX(al, bl); *hi = TG_MAX(ah, bh); return true;
  case TG_OP_CMPLT: *lo = ah < bl; *hi = al < bh; return true;
  case TG_OP_CMPNE:
    *lo = (ah < bl) || (bh < al);
    *hi = !(al == ah && ah == bl && bl == bh);
    return true;
  case TG_OP_OR:
    if (u->dtype == DT_BOOL) { *lo = al || bl; *hi = ah || bh; return true; }
    return false;
  default: return false;
  }
}

static void bounds_of_cast(UOp *u, i128 *lo, i128 *hi) {
  const DType *d = u->dtype;
  i128 sl = u->src[0]->vmin, sh = u->src[0]->vmax;
  if (is_float_dt(d)) round_to_float_grid(d, sl, sh, &sl, &sh); /* ints and integer-bounded floats truncate exactly */
  if (!d->is_ptr && dt_is_unsigned(d) && 0 <= sl && sh <= dt_max_int(d)) { *lo = sl; *hi = sh; return; }
  if (!d->is_ptr && (d->kind == DTK_FLOAT || d->kind == DTK_SINT || d->kind == DTK_WEAKINT)) {
    i128 dl, dh;
    dtype_range(d, &dl, &dh);
    *lo = TG_MAX(dl, sl);
    *hi = TG_MIN(sh, dh);
    return;
  }
  dtype_range(d, lo, hi);
}

static void compute_bounds(UOp *u) {
  i128 lo, hi;
  TgOp op = uop_op(u);
  bool done = false;
  if (op_has(op, OPP_BINARY) && u->nsrc == 2 && !is_float_dt(u->dtype)) done = bounds_of_binary(u, &lo, &hi);
  if (done) {
  } else if (op == TG_OP_WHERE && u->nsrc == 3 && is_int_dt(u->dtype)) {
    lo = TG_MIN(u->src[1]->vmin, u->src[2]->vmin);
    hi = TG_MAX(u->src[1]->vmax, u->src[2]->vmax);
  } else if ((op == TG_OP_PARAM || op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
             u->arg.param->addrspace == ADDR_ALU) {
    lo = u->arg.param->vmin;
    hi = u->arg.param->vmax;
  } else if ((op == TG_OP_RANGE || op == TG_OP_SPECIAL) && u->dtype != DT_VOID && u->nsrc >= 1) {
    lo = 0;
    hi = sat_sub(u->src[0]->vmax, 1);
  } else if ((op == TG_OP_AFTER || op == TG_OP_INDEX) && u->nsrc >= 1) {
    lo = u->src[0]->vmin;
    hi = u->src[0]->vmax;
  } else if (op == TG_OP_STACK && u->nsrc >= 1) {
    lo = I128_MAX;
    hi = I128_MIN;
    for (uint32_t i = 0; i < u->nsrc; i++) {
      lo = TG_MIN(lo, u->src[i]->vmin);
      hi = TG_MAX(hi, u->src[i]->vmax);
    }
  } else if (op == TG_OP_CONST && u->arg.kind == ARG_CONST && u->arg.c.kind != CK_INVALID && u->arg.c.kind != CK_NONE) {
    Const c = u->arg.c;
    if (c.kind == CK_FLOAT) float_interval(c.f, &lo, &hi);
    else lo = hi = c.kind == CK_BOOL ? (i128)c.b : dt_const_as_i128(c, u->dtype);
  } else if (op == TG_OP_CAST && u->nsrc == 1) {
    bounds_of_cast(u, &lo, &hi);
  } else {
    dtype_range(u->dtype, &lo, &hi);
  }
  u->vmin = lo;
  u->vmax = hi;
  u->flags |= UOP_F_BOUNDS;
}

static bool gate_unbounded(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return !(u->flags & UOP_F_BOUNDS);
}

static void ensure_bounds(UOp *u) {
  if (u->flags & UOP_F_BOUNDS) return;
  bool srcs_ready = true;
  for (uint32_t i = 0; i < u->nsrc && srcs_ready; i++) srcs_ready = (u->src[i]->flags & UOP_F_BOUNDS) != 0;
  if (srcs_ready) {
    compute_bounds(u);
    return;
  }
  UOpVec topo = {0};
  uop_toposort(u, gate_unbounded, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (!(topo.data[i]->flags & UOP_F_BOUNDS)) compute_bounds(topo.data[i]);
  tg_vec_free(&topo);
}

i128 uop_vmin(UOp *u) {
  ensure_bounds(u);
  return u->vmin;
}
i128 uop_vmax(UOp *u) {
  ensure_bounds(u);
  return u->vmax;
}

/* ---- index algebra ---- */


static bool const_int_value(const UOp *u, int64_t *v) {
  if (u->op != TG_OP_CONST) return false;
  if (u->arg.c.kind == CK_INT) { *v = u->arg.c.i; return true; }
  if (u->arg.c.kind == CK_BOOL) { *v = u->arg.c.b; return true; }
  return false;
}

static int64_t const_factor_leaf(UOp *u) {
  int64_t v;
  switch (uop_op(u)) {
  case TG_OP_CONST: return const_int_value(u, &v) ? v : 1;
  case TG_OP_STACK: {
    int64_t g = 0;
    for (uint32_t i = 0; i < u->nsrc; i++) g = tg_gcd64(g, uop_const_factor(u->src[i]));
    return g;
  }
  case TG_OP_MUL:
    if (const_int_value(u->src[0], &v)) return v;
    if (const_int_value(u->src[1], &v)) return v;
    return 1;
  case TG_OP_PARAM: case TG_OP_BUFFER:
    return u->arg.kind == ARG_PARAM && u->arg.param->multiple_of > 0 ? u->arg.param->multiple_of : 1;
  default: return 1;
  }
}

int64_t uop_const_factor(UOp *u) {
  if (u->op != TG_OP_ADD) return const_factor_leaf(u);
  /* gcd over the leaves of the ADD tree (gcd is associative) */
  UOpVec terms = {0};
  uop_split(u, TG_OP_ADD, &terms);
  int64_t g = 0;
  for (size_t i = 0; i < terms.len; i++) g = tg_gcd64(g, const_factor_leaf(terms.data[i]));
  tg_vec_free(&terms);
  return g;
}

static UOp *divides_leaf(UOp *u, int64_t v) {
  int64_t c;
  switch (uop_op(u)) {
  case TG_OP_CONST:
    if (!const_int_value(u, &c) || u->arg.c.kind != CK_INT) return NULL;
    if (c % v != 0) return NULL;
    return uop_const_like_int(u, c / v);
  case TG_OP_STACK: {
    UOp **lanes = tg_malloc(u->nsrc * sizeof(UOp *) + 1);
    for (uint32_t i = 0; i < u->nsrc; i++) {
      lanes[i] = uop_divides(u->src[i], v);
      if (!lanes[i]) { tg_free(lanes); return NULL; }
    }
    UOp *r = uop_new(TG_OP_STACK, NULL, lanes, u->nsrc, arg_none());
    tg_free(lanes);
    return r;
  }
  case TG_OP_MUL: {
    UOp *d0 = uop_divides(u->src[0], v);
    if (d0) return uop_mul(d0, u->src[1]);
    UOp *d1 = uop_divides(u->src[1], v);
    if (d1) return uop_mul(u->src[0], d1);
    return NULL;
  }
  case TG_OP_PARAM: case TG_OP_BUFFER:
    if (u->arg.kind != ARG_PARAM || u->arg.param->multiple_of <= 0 || u->arg.param->multiple_of % v != 0) return NULL;
    return uop_idiv(u, uop_const(DT_WEAKINT, const_int(v)));
  default: return NULL;
  }
}

UOp *uop_divides(UOp *u, int64_t v) {
  if (v == 1) return u;
  if (v == 0) return NULL;
  if (u->op != TG_OP_ADD) return divides_leaf(u, v);
  /* ADD: divide every operand, keeping the tree's shape; the left spine is walked iteratively */
  UOpVec spine = {0};
  UOp *cur = u;
  while (cur->op == TG_OP_ADD) {
    tg_vec_push(&spine, cur);
    cur = cur->src[0];
  }
  UOp *acc = divides_leaf(cur, v);
  for (size_t i = spine.len; acc && i-- > 0;) {
    UOp *r = uop_divides(spine.data[i]->src[1], v);
    acc = r ? uop_add(acc, r) : NULL;
  }
  tg_vec_free(&spine);
  return acc;
}

void uop_split(UOp *u, TgOp op, UOpVec *out) {
  if (u->op != op) {
    tg_vec_push(out, u);
    return;
  }
  UOpVec stack = {0};
  tg_vec_push(&stack, u);
  while (stack.len) {
    UOp *x = stack.data[--stack.len];
    if (x->op != op) {
      tg_vec_push(out, x);
      continue;
    }
    for (uint32_t i = x->nsrc; i-- > 0;) tg_vec_push(&stack, x->src[i]);
  }
  tg_vec_free(&stack);
}

UOp *uop_usum(UOp *const *terms, size_t n, const UOp *like) {
  if (n == 0) return uop_const_like_int(like, 0);
  UOp *acc = terms[0];
  for (size_t i = 1; i < n; i++) acc = acc->dtype == DT_BOOL ? uop_or(acc, terms[i]) : uop_add(acc, terms[i]);
  return acc;
}
