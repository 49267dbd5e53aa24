/* divmod.c — folding of integer floor division and modulo (tinygrad uop/divandmod.py).
 *
 * Two cheap rules run first: nested divisions by constants merge, and multiples of the divisor are split out of a
 * constant addend. Then sym_fold_divmod_general works on the numerator as a sum of terms with constant factors and uses
 * their bounds: a constant quotient, nested div/mod removal, congruence folding, gcd factoring, nesting by a factor
 * of the divisor, and, for any denominator, division by a common (symbolic) gcd and factoring (d*x+y)//d into
 * x + y//d. Every fold keeps tinygrad's floor semantics (the quotient rounds toward -inf, the remainder takes the
 * divisor's sign). The general fold is memoized per node, as tinygrad's functools.cache does. */
#include "symbolic.h"

/* ---- exact integer helpers (Python semantics on i128) ---- */

static i128 floordiv_i(i128 a, i128 b) {
  if (b == -1 && a == I128_MIN) return I128_MAX;
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}
static i128 floormod_i(i128 a, i128 b) {
  if (b == -1) return 0;
  return a - floordiv_i(a, b) * b;
}
static i128 abs_i(i128 a) { return a < 0 ? -a : a; }
/* Values far from the i128 limits: sums and products of a few of them cannot overflow. Bounds at the limits stand
 * for "unbounded" and make a rule give up. */
static bool small_i(i128 v) { return v > -((i128)1 << 62) && v < ((i128)1 << 62); }

static bool const_value(const UOp *u, i128 *out) {
  if (u->op != TG_OP_CONST) return false;
  if (u->arg.c.kind == CK_INT) { *out = u->arg.c.i; return true; }
  if (u->arg.c.kind == CK_BOOL) { *out = u->arg.c.b; return true; }
  return false;
}

/* A constant with the dtype of `like`; values beyond int64 clear *ok (the caller then gives up). */
static UOp *int_like(const UOp *like, i128 v, bool *ok) {
  if (v < INT64_MIN || v > INT64_MAX) {
    *ok = false;
    v = 0;
  }
  return uop_const_int(like->dtype, (int64_t)v);
}
/* The shapes below follow tinygrad's Python expressions node for node (k*u is MUL(k, u), u*k is MUL(u, k), Python's
 * sum() starts from 0), because nest-by-factor picks among candidates by the size of what the fold built. */
static UOp *mul_int(UOp *u, i128 v, bool *ok) { return uop_mul(u, int_like(u, v, ok)); }
static UOp *int_mul(i128 v, UOp *u, bool *ok) { return uop_mul(int_like(u, v, ok), u); }
/* Python's sum(terms): 0 + t0 + t1 + ... */
static UOp *py_sum(UOp *const *terms, size_t n, const UOp *like, bool *ok) {
  UOp *acc = int_like(like, 0, ok);
  for (size_t i = 0; i < n; i++) acc = uop_add(acc, terms[i]);
  return acc;
}

/* tinygrad's simplify(): the `symbolic` tier. A failed rewrite leaves the node as it is (still correct). */
static UOp *simplify_symbolic(UOp *u) {
  if (u->op == TG_OP_CONST) return u;
  UOp *r = pm_graph_rewrite(u, sym_symbolic(), NULL, 0, NULL, "simplify");
  return r ? r : u;
}

/* ---- the UOp helpers of the general fold (tinygrad UOp.pop_const / gcd / divide_exact) ---- */

/* x == peeled + c when x is ADD(peeled, CONST c); else (x, identity of op). */
static UOp *pop_const(UOp *x, TgOp op, i128 *c) {
  i128 v;
  if (x->op == op && const_value(x->src[1], &v)) {
    *c = v;
    return x->src[0];
  }
  *c = op == TG_OP_MUL ? 1 : 0;
  return x;
}

/* A multiset of factors (a MUL chain split into its operands), in order of first appearance. */
typedef struct FactorBag {
  TG_VEC(UOp *) keys;
  TG_VEC(i128) counts;
} FactorBag;

static void bag_free(FactorBag *b) {
  tg_vec_free(&b->keys);
  tg_vec_free(&b->counts);
}
static i128 *bag_slot(FactorBag *b, UOp *k, bool add) {
  for (size_t i = 0; i < b->keys.len; i++)
    if (b->keys.data[i] == k) return &b->counts.data[i];
  if (!add) return NULL;
  tg_vec_push(&b->keys, k);
  tg_vec_push(&b->counts, 0);
  return &b->counts.data[b->counts.len - 1];
}
static void bag_add_mul_chain(FactorBag *b, UOp *u, i128 sign) {
  UOpVec parts = {0};
  uop_split(u, TG_OP_MUL, &parts);
  for (size_t i = 0; i < parts.len; i++) *bag_slot(b, parts.data[i], true) += sign;
  tg_vec_free(&parts);
}
/* start * e0 * e1 * ... over the positive counts, left to right. */
static UOp *bag_product(const FactorBag *b, UOp *start) {
  UOp *acc = start;
  for (size_t i = 0; i < b->keys.len; i++)
    for (i128 k = 0; k < b->counts.data[i]; k++) acc = acc ? uop_mul(acc, b->keys.data[i]) : b->keys.data[i];
  return acc;
}

UOp *uop_divide_exact(UOp *u, UOp *v) {
  if (u == v) return uop_const_like_int(u, 1);
  i128 cv;
  if (const_value(v, &cv)) return cv >= INT64_MIN && cv <= INT64_MAX ? uop_divides(u, (int64_t)cv) : NULL;
  if (u->op == TG_OP_ADD) {
    UOp *s0 = uop_divide_exact(u->src[0], v);
    UOp *s1 = s0 ? uop_divide_exact(u->src[1], v) : NULL;
    return s1 ? uop_add(s0, s1) : NULL;
  }
  if (u->op != TG_OP_MUL) return NULL;
  i128 c, dc;
  UOp *fac = pop_const(u, TG_OP_MUL, &c), *div_fac = pop_const(v, TG_OP_MUL, &dc);
  if (dc == 0 || floormod_i(c, dc) != 0) return NULL;
  FactorBag bag = {0};
  bag_add_mul_chain(&bag, fac, 1);
  bag_add_mul_chain(&bag, div_fac, -1);
  bool all_nonneg = true;
  for (size_t i = 0; i < bag.counts.len; i++) all_nonneg &= bag.counts.data[i] >= 0;
  UOp *r = NULL;
  bool ok = true;
  if (all_nonneg) r = bag_product(&bag, int_like(u, floordiv_i(c, dc), &ok));
  bag_free(&bag);
  return ok ? r : NULL;
}

UOp *uop_gcd(UOp *const *uops, size_t n) {
  TG_ASSERT(n > 0, "gcd of nothing");
  FactorBag common = {0};
  i128 g = 0;
  UOp *first_term = NULL;
  for (size_t i = 0; i < n; i++) {
    int64_t f = uop_const_factor(uops[i]);
    UOp *term = uop_divides(uops[i], f);
    if (!term) { /* a zero factor: the term divides nothing but itself; keep it whole */
      term = uops[i];
      f = 1;
    }
    g = tg_gcd128(g, f);
    if (i == 0) {
      first_term = term;
      bag_add_mul_chain(&common, term, 1);
      continue;
    }
    FactorBag here = {0};
    bag_add_mul_chain(&here, term, 1);
    for (size_t k = 0; k < common.keys.len; k++) {
      i128 *other = bag_slot(&here, common.keys.data[k], false);
      i128 m = other ? *other : 0;
      if (m < common.counts.data[k]) common.counts.data[k] = m;
    }
    bag_free(&here);
  }
  bool ok = true;
  UOp *gc = int_like(first_term, g, &ok);
  UOp *prod = bag_product(&common, NULL);
  bag_free(&common);
  return prod ? uop_mul(prod, gc) : gc;
}

/* ---- the general fold ---- */

typedef struct Candidate { i128 cost; UOp *u; } Candidate;

/* Put distinct small positive ints in the order CPython iterates a set built by inserting them in this order
 * (hash(i) == i; open addressing with CPython's probe sequence; the table starts at 8 slots and grows 4x when 3/5
 * full). tinygrad collects nest-by-factor divisors in a set, and ties between candidates go to the first one. */
static void py_set_insert(i128 *slot, bool *used, size_t mask, i128 v) {
  size_t i = (size_t)v & mask, perturb = (size_t)v;
  for (;;) {
    size_t probes = i + 9 <= mask ? 9 : 0;
    for (size_t j = 0; j <= probes; j++)
      if (!used[i + j]) {
        used[i + j] = true, slot[i + j] = v;
        return;
      }
    perturb >>= 5;
    i = (i * 5 + 1 + perturb) & mask;
  }
}
static void py_set_order(i128 *vals, size_t n) {
  size_t mask = 7, fill = 0;
  i128 *slot = tg_calloc(mask + 1, sizeof(i128));
  bool *used = tg_calloc(mask + 1, sizeof(bool));
  for (size_t k = 0; k < n; k++) {
    py_set_insert(slot, used, mask, vals[k]);
    if (++fill * 5 < mask * 3) continue;
    size_t size = 8;
    while (size <= fill * 4) size <<= 1;
    i128 *nslot = tg_calloc(size, sizeof(i128));
    bool *nused = tg_calloc(size, sizeof(bool));
    for (size_t i = 0; i <= mask; i++)
      if (used[i]) py_set_insert(nslot, nused, size - 1, slot[i]);
    tg_free(slot), tg_free(used);
    slot = nslot, used = nused, mask = size - 1;
  }
  size_t out = 0;
  for (size_t i = 0; i <= mask; i++)
    if (used[i]) vals[out++] = slot[i];
  tg_free(slot), tg_free(used);
}

static size_t slice_len(UOp *u) {
  UOpVec s = {0};
  uop_backward_slice(u, &s);
  size_t n = s.len;
  tg_vec_free(&s);
  return n;
}

static bool is_variable_like(const UOp *u) {
  return (u->op == TG_OP_PARAM || u->op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
         u->arg.param->addrspace == ADDR_ALU;
}

/* The rules for a constant denominator c > 0. Sets *ok false when a constant it needs does not fit int64. */
static UOp *fold_const_denominator(UOp *d, UOp *x, UOp *y, i128 c, bool *ok) {
  bool is_mod = d->op == TG_OP_FLOORMOD;
  i128 cst;
  UOp *x_peeled = pop_const(x, TG_OP_ADD, &cst);
  UOpVec terms_no_const = {0};
  uop_split(x_peeled, TG_OP_ADD, &terms_no_const);
  UOp *result = NULL;
  size_t n = terms_no_const.len;
  UOp **terms = tg_calloc(n + 1, sizeof(UOp *));
  i128 *factors = tg_calloc(n + 1, sizeof(i128));

  /* nested div: (x%(k*c))//c -> (x//c)%k, for k>0 (the mod case is the nested-mod removal below) */
  if (!is_mod && x->op == TG_OP_FLOORMOD) {
    UOp *k = uop_divides(x->src[1], (int64_t)c);
    if (k && uop_vmin(k) > 0) {
      result = uop_mod(uop_idiv(x->src[0], y), k);
      goto done;
    }
  }

  /* nested mod in a sum: (a%(k*c) + b)%c -> (a+b)%c */
  if (is_mod) {
    bool changed = false;
    UOp **stripped = tg_calloc(n + 1, sizeof(UOp *));
    for (size_t i = 0; i < n; i++) {
      UOp *u = terms_no_const.data[i];
      if (u->op == TG_OP_FLOORMOD && uop_divides(u->src[1], (int64_t)c)) {
        u = u->src[0];
        changed = true;
      }
      stripped[i] = u;
    }
    if (changed) result = uop_mod(uop_add(uop_usum(stripped, n, x), int_like(x, cst, ok)), y);
    tg_free(stripped);
    if (result) goto done;
  }

  /* every term as factor * term */
  for (size_t i = 0; i < n; i++) {
    UOp *u = terms_no_const.data[i];
    int64_t f = uop_const_factor(u);
    terms[i] = uop_divides(u, f);
    factors[i] = f;
    if (!terms[i]) goto done; /* a zero factor (a literal 0 term): leave it to the other rules */
  }

  /* congruence: replace each factor by a remainder mod c (try both signs for a lone term or a tie at c/2) and fold
   * when the remainder expression stays within one period. More than 1024 sign combinations are not tried. */
  {
    i128 *choice = tg_calloc(2 * n, sizeof(i128));
    size_t *nchoice = tg_calloc(n, sizeof(size_t)), *pick = tg_calloc(n, sizeof(size_t)), combos = 1;
    for (size_t i = 0; i < n; i++) {
      i128 r = floormod_i(factors[i], c);
      if (r * 2 == c || n == 1) {
        choice[2 * i] = r, choice[2 * i + 1] = r - c, nchoice[i] = 2;
        if (combos <= 1024) combos *= 2;
      } else {
        choice[2 * i] = abs_i(r - c) < abs_i(r) ? r - c : r, nchoice[i] = 1;
      }
    }
    UOp **parts = tg_calloc(n + 1, sizeof(UOp *));
    while (combos <= 1024) {
      for (size_t i = 0; i < n; i++) parts[i] = int_mul(choice[2 * i + pick[i]], terms[i], ok);
      UOp *rem = uop_add(py_sum(parts, n, x, ok), int_like(x, floormod_i(cst, c), ok));
      i128 lo = uop_vmin(rem), hi = uop_vmax(rem);
      if (small_i(lo) && small_i(hi) && floordiv_i(lo, c) == floordiv_i(hi, c)) {
        if (is_mod) {
          result = uop_sub(rem, int_like(x, floordiv_i(lo, c) * c, ok));
        } else {
          for (size_t i = 0; i < n; i++) parts[i] = int_mul(floordiv_i(factors[i] - choice[2 * i + pick[i]], c), terms[i], ok);
          result = uop_add(uop_add(py_sum(parts, n, x, ok), int_like(x, floordiv_i(cst, c), ok)),
                           int_like(x, floordiv_i(lo, c), ok));
        }
        break;
      }
      /* next combination (the last term varies fastest, as itertools.product) */
      size_t i = n;
      while (i > 0 && ++pick[i - 1] == nchoice[i - 1]) pick[--i] = 0;
      if (i == 0) break;
    }
    tg_free(parts);
    tg_free(choice);
    tg_free(nchoice);
    tg_free(pick);
    if (result) goto done;
  }

  /* gcd with remainder: factor the gcd of the factors and c out of the numerator */
  {
    i128 g = c;
    for (size_t i = 0; i < n; i++) g = tg_gcd128(g, factors[i]);
    if (g > 1) {
      UOp *div = uop_divides(x_peeled, (int64_t)g);
      if (div) {
        UOp *new_x = uop_add(simplify_symbolic(div), int_like(x, floormod_i(floordiv_i(cst, g), c / g), ok));
        if (uop_vmin(new_x) >= 0) {
          if (is_mod) result = uop_add(uop_mul(uop_mod(new_x, int_like(x, c / g, ok)), int_like(x, g, ok)),
                                       int_like(x, floormod_i(cst, g), ok));
          else result = uop_add(uop_idiv(new_x, int_like(x, c / g, ok)), int_like(x, floordiv_i(cst, c), ok));
          goto done;
        }
      }
    }
  }

  /* nest by factor: x//c -> (x//f)//(c//f); x%c -> ((x//f)%(c//f))*f + x%f when that remainder is exact */
  {
    i128 *divs = tg_calloc(n + 1, sizeof(i128));
    size_t ndiv = 0;
    for (size_t i = 0; i < n; i++) {
      i128 f = abs_i(factors[i]);
      if (terms_no_const.data[i]->op == TG_OP_CONST || f <= 1 || f >= c || c % f != 0) continue;
      bool seen = false;
      for (size_t j = 0; j < ndiv; j++) seen |= divs[j] == f;
      if (!seen) divs[ndiv++] = f;
    }
    py_set_order(divs, ndiv);
    Candidate best = {0, NULL};
    for (size_t j = 0; j < ndiv; j++) {
      i128 div = divs[j];
      UOp *newxs = sym_fold_divmod_general(uop_idiv(x, int_like(x, div, ok)));
      if (!newxs) continue;
      Candidate cand = {0, NULL};
      if (!is_mod) {
        cand.cost = (i128)slice_len(newxs);
        cand.u = uop_idiv(newxs, int_like(x, c / div, ok));
      } else if (uop_vmin(x) >= 0 && uop_vmin(newxs) >= 0) {
        UOp **bparts = tg_calloc(n + 2, sizeof(UOp *));
        size_t nb = 0;
        for (size_t i = 0; i < n; i++)
          if (floormod_i(factors[i], div)) bparts[nb++] = int_mul(floormod_i(factors[i], div), terms[i], ok);
        if (floormod_i(cst, div)) bparts[nb++] = int_like(x, floormod_i(cst, div), ok);
        UOp *b = uop_usum(bparts, nb, x);
        tg_free(bparts);
        if (uop_vmin(b) >= 0 && uop_vmax(b) < div) {
          cand.u = uop_add(uop_mul(uop_mod(newxs, int_like(x, c / div, ok)), int_like(x, div, ok)), b);
          cand.cost = (i128)slice_len(cand.u);
        }
      }
      if (cand.u && (!best.u || cand.cost < best.cost)) best = cand;
    }
    tg_free(divs);
    if (best.u) {
      result = best.u;
      goto done;
    }
  }

done:
  tg_free(terms);
  tg_free(factors);
  tg_vec_free(&terms_no_const);
  return result;
}

/* gcd division and remainder factoring: these hold for any denominator (including symbolic ones). */
static UOp *fold_any_denominator(UOp *d, UOp *x, UOp *y, bool *ok) {
  bool is_mod = d->op == TG_OP_FLOORMOD;
  UOpVec all = {0};
  uop_split(x, TG_OP_ADD, &all);
  UOp *result = NULL;

  /* divide by gcd: x//y -> (x/g)//(y/g), x%y -> ((x/g)%(y/g))*g */
  tg_vec_push(&all, y);
  UOp *g = simplify_symbolic(uop_gcd(all.data, all.len));
  all.len--;
  i128 gv;
  if (!(const_value(g, &gv) && gv == 1)) {
    UOp *xg = uop_divide_exact(x, g), *yg = xg ? uop_divide_exact(y, g) : NULL;
    if (yg) {
      result = uop_alu2(uop_op(d), xg, yg);
      if (is_mod) result = uop_mul(result, g);
    }
    goto done;
  }

  /* factor remainder: (d*x+y)//d -> x + y//d, (d*x+y)%d -> y%d, for nonnegative numerator and denominator */
  if (uop_vmin(y) < 0 || uop_vmin(x) < 0) goto done;
  {
    i128 yc = 0;
    bool y_const = const_value(y, &yc);
    UOp **quo = tg_calloc(all.len + 1, sizeof(UOp *)), **rem = tg_calloc(all.len + 1, sizeof(UOp *));
    size_t nq = 0, nr = 0;
    for (size_t i = 0; i < all.len; i++) {
      UOp *u = all.data[i], *q = uop_divide_exact(u, y);
      if (q) {
        quo[nq++] = q;
        continue;
      }
      int64_t f = y_const && yc > 0 ? uop_const_factor(u) : 0;
      UOp *t = f ? uop_divides(u, f) : NULL;
      if (t && floormod_i(f, yc) != f) {
        rem[nr++] = mul_int(t, floormod_i(f, yc), ok);
        quo[nq++] = is_mod ? int_like(u, 0, ok) : mul_int(t, floordiv_i(f, yc), ok);
      } else {
        rem[nr++] = u;
      }
    }
    if (nq) {
      UOp *new_x = uop_add(py_sum(rem, nr, x, ok), int_like(x, 0, ok));
      if (uop_vmin(new_x) >= 0)
        result = is_mod ? uop_mod(new_x, y) : uop_add(uop_idiv(new_x, y), py_sum(quo, nq, x, ok));
    }
    tg_free(quo);
    tg_free(rem);
  }

done:
  tg_vec_free(&all);
  return result;
}

static UOp *fold_divmod_uncached(UOp *d) {
  UOp *x = d->src[0], *y = d->src[1];
  bool is_mod = d->op == TG_OP_FLOORMOD, ok = true;
  /* the quotient is a constant */
  UOp *xdiv = uop_idiv(x, y);
  i128 qlo = uop_vmin(xdiv), qhi = uop_vmax(xdiv);
  if (qlo == qhi && small_i(qlo)) {
    UOp *r = is_mod ? uop_sub(x, uop_mul(int_like(x, qlo, &ok), y)) : int_like(d, qlo, &ok);
    return ok ? r : NULL;
  }
  /* a Variable that is a multiple of c divided by c is irreducible (and its remainder is 0) */
  i128 c;
  bool y_const = const_value(y, &c);
  if (is_variable_like(x) && y_const && c != 0 && (i128)x->arg.param->multiple_of % c == 0)
    return is_mod ? int_like(d, 0, &ok) : NULL;

  if (y_const && c > 0 && small_i(c)) {
    UOp *r = fold_const_denominator(d, x, y, c, &ok);
    if (r) return ok ? r : NULL;
    ok = true;
  }
  UOp *r = fold_any_denominator(d, x, y, &ok);
  return ok ? r : NULL;
}

/* The memo: node -> fold result (or "nothing"), both held by reference; dropped as a whole when it grows large. */
static UOpMap divmod_memo;
static char memo_nothing;
#define DIVMOD_MEMO_MAX 16384

void sym_divmod_cache_clear(void) {
  for (size_t i = 0; i < divmod_memo.cap; i++) {
    if (!divmod_memo.keys || !divmod_memo.keys[i]) continue;
    uop_drop((UOp *)divmod_memo.keys[i]);
    if (divmod_memo.vals[i] != &memo_nothing) uop_drop((UOp *)divmod_memo.vals[i]);
  }
  uopmap_free(&divmod_memo);
  uopmap_init(&divmod_memo);
}

/* A cached node given to a caller is also parked in the caller's scope when the memo is its only holder (drop to zero
 * parks it, keep restores the memo's reference). So when a later clear drops it, it is freed at the end of the scope
 * that received it, never earlier (the caller, e.g. a running pm_graph_rewrite, holds it without a reference). */
static UOp *hand_out(UOp *r) {
  uop_drop(r);
  return uop_keep(r);
}

UOp *sym_fold_divmod_general(UOp *root) {
  TG_ASSERT(root->op == TG_OP_FLOORDIV || root->op == TG_OP_FLOORMOD, "fold_divmod_general on %s",
            uop_op_name(uop_op(root)));
  if (uop_vmin(root->src[1]) == 0 && uop_vmax(root->src[1]) == 0) {
    /* tinygrad raises ZeroDivisionError here; the rewrite leaves the node and reports why */
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s by zero trying to rewrite a %s", root->op == TG_OP_FLOORMOD ? "Mod" : "Division",
                 uop_op_name(uop_op(root)));
    return NULL;
  }
  void **hit = uopmap_get(&divmod_memo, root);
  if (hit) return *hit == &memo_nothing ? NULL : hand_out((UOp *)*hit);
  UOpScope scope = uop_scope_begin();
  UOp *r = uop_scope_end_keep(scope, fold_divmod_uncached(root));
  if (divmod_memo.len >= DIVMOD_MEMO_MAX) sym_divmod_cache_clear();
  uopmap_put(&divmod_memo, uop_keep(root), r ? (void *)uop_keep(r) : (void *)&memo_nothing);
  return r ? hand_out(r) : NULL;
}

/* ---- the rule set ---- */

/* (x//c + a)//d -> (x + a*c)//(c*d) for d > 0 (floor division nests for any nonzero c) */
static UOp *merge_nested_div(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 c, a, d;
  if (!const_value(m[1], &c) || !const_value(m[2], &a) || !const_value(m[3], &d) || d <= 0 || c == 0) return NULL;
  bool ok = true;
  UOp *r = uop_idiv(uop_add(m[0], int_like(m[2], a * c, &ok)), int_like(m[3], c * d, &ok));
  return ok ? r : NULL;
}

/* (x+c)//d -> (x+c%d)//d + c//d and (x+c)%d -> (x+c%d)%d: split the multiple of d out of the constant */
static UOp *split_const_multiple(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  i128 c, d;
  if (!const_value(m[1], &c) || !const_value(m[2], &d) || d == 0 || floormod_i(c, d) == c) return NULL;
  bool ok = true;
  UOp *shifted = uop_add(m[0], int_like(m[0], floormod_i(c, d), &ok));
  UOp *r = root->op == TG_OP_FLOORDIV ? uop_add(uop_idiv(shifted, m[2]), int_like(root, floordiv_i(c, d), &ok))
                                      : uop_mod(shifted, m[2]);
  return ok ? r : NULL;
}

static UOp *general_divmod(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  return sym_fold_divmod_general(root);
}

static const Rule div_and_mod_rules[] = {
  /* fast rules first */
  RULE("(FLOORDIV (ADD (FLOORDIV x c:CONST) a:CONST) d:CONST)", merge_nested_div, NULL),
  RULE("(FLOORDIV|FLOORMOD (ADD x.weakint c:CONST) d:CONST)", split_const_multiple, NULL),
  /* then the general fold, on index (weakint) math only */
  RULE("FLOORDIV|FLOORMOD.weakint", general_divmod, NULL),
};

const RuleSet *sym_div_and_mod(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("div_and_mod", div_and_mod_rules);
  return pm;
}
