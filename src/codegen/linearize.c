/* linearize.c — tinygrad's linearizer: a priority toposort of the lowered kernel SINK (codegen/late/linearizer.py),
 * then the line rewrite that turns gated stores into IF/STORE/ENDIF (codegen/__init__.py pm_linearize_cleanups).
 *
 * Every node gets a key (run count, priority, extra, structure): the run count is the product of the trip counts of
 * the ranges the node sits in, so loop-invariant work lands outside loops; the priority puts PARAMs first (by slot),
 * then BUFFERs, loads early, RANGEs early, stores and ENDs late; the structure (tinygrad's tuplize: op order, arg,
 * dtype, then the sources' structures) breaks the remaining ties, and after that the toposort order. Nodes are
 * numbered in key order, and a heap walk from the SINK emits each node as soon as all its users are placed, picking
 * the highest number first; reversed, that is the program order. */
#include "linearize.h"

#include "../uop/spec.h"

#include <math.h>
#include <stdlib.h>

/* The trip count a RANGE weighs with in the run count: vmax + 1 (tinygrad), but at least 2 for a symbolic bound. A
 * symbolic range whose bound is at most 1 (ceil(start_pos / 128) blocks in a 64-position cache) would otherwise weigh
 * as much as the code around it, and a loop-invariant load used both inside and after it could be placed inside it,
 * out of scope for the later use (a compile error in the C render). */
static i128 range_trips(UOp *rng) {
  i128 t = uop_vmax(rng) + 1;
  return t < 2 && rng->nsrc && !uop_is(rng->src[0], TG_OP_CONST) ? 2 : t;
}

/* ---- the ranges a node runs in (tinygrad UOp.ranges), as bitsets over the kernel's RANGE nodes ---- */

typedef struct RangeSets {
  UOpMap index;     /* node -> 1 + its position in the toposort */
  UOpMap range_bit; /* RANGE -> 1 + its bit number */
  size_t words;     /* uint64 words per set */
  uint64_t *bits;   /* node i's set at bits[i * words] (without the node itself) */
} RangeSets;

static size_t node_index(const RangeSets *rs, const UOp *u) {
  void **v = uopmap_get(&rs->index, u);
  TG_ASSERT(v, "linearize: node outside the toposort");
  return (size_t)(uintptr_t)*v - 1;
}

static uint64_t *set_of(RangeSets *rs, const UOp *u) { return &rs->bits[node_index(rs, u) * rs->words]; }

static void set_bit(uint64_t *set, size_t bit, bool on) {
  if (on) set[bit / 64] |= (uint64_t)1 << (bit % 64);
  else set[bit / 64] &= ~((uint64_t)1 << (bit % 64));
}

static size_t range_bit(const RangeSets *rs, const UOp *r) { return (size_t)(uintptr_t)*uopmap_get(&rs->range_bit, r) - 1; }

/* number of sources before the ranges an op ends (tinygrad range_start) */
static int range_start(TgOp op) {
  switch (op) {
  case TG_OP_STAGE: case TG_OP_REDUCE: case TG_OP_END: case TG_OP_CALL: case TG_OP_FUNCTION: return 1;
  case TG_OP_WMMA: return 3;
  case TG_OP_LINEAR: return 0;
  default: return -1;
  }
}

/* tinygrad ended_ranges: the ranges this node closes (AFTER: those its dependencies close). */
static void collect_ended(const UOp *u, UOpVec *out) {
  int start = range_start(uop_op(u));
  if (start >= 0) {
    for (uint32_t i = (uint32_t)start; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
  } else if (uop_is(u, TG_OP_AFTER)) {
    for (uint32_t i = 1; i < u->nsrc; i++) collect_ended(u->src[i], out);
  } else if (uop_is(u, TG_OP_UNSHARD)) {
    for (uint32_t i = 1; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
  }
}

/* `into |= ranges(s)` where ranges(s) includes s itself when s is a RANGE. */
static void add_ranges_of(RangeSets *rs, uint64_t *into, const UOp *s) {
  const uint64_t *ss = set_of(rs, s);
  for (size_t w = 0; w < rs->words; w++) into[w] |= ss[w];
  if (uop_is(s, TG_OP_RANGE)) set_bit(into, range_bit(rs, s), true);
}

static void range_sets_build(RangeSets *rs, const UOpVec *topo) {
  uopmap_init(&rs->index);
  uopmap_init(&rs->range_bit);
  size_t nranges = 0;
  for (size_t i = 0; i < topo->len; i++) {
    uopmap_put(&rs->index, topo->data[i], (void *)(uintptr_t)(i + 1));
    if (uop_is(topo->data[i], TG_OP_RANGE)) uopmap_put(&rs->range_bit, topo->data[i], (void *)(uintptr_t)(++nranges));
  }
  rs->words = nranges ? (nranges + 63) / 64 : 1;
  rs->bits = tg_calloc(topo->len * rs->words, sizeof(uint64_t));
  UOpVec ended = {0};
  uint64_t *tmp = tg_calloc(rs->words, sizeof(uint64_t));
  for (size_t i = 0; i < topo->len; i++) {
    UOp *u = topo->data[i];
    uint64_t *set = &rs->bits[i * rs->words];
    for (uint32_t k = 0; k < u->nsrc; k++) add_ranges_of(rs, set, u->src[k]);
    ended.len = 0;
    collect_ended(u, &ended);
    for (size_t e = 0; e < ended.len; e++) {
      UOp *er = ended.data[e];
      if (uop_is(er, TG_OP_RANGE)) {
        set_bit(set, range_bit(rs, er), false);
      } else { /* not a single RANGE: drop every range it runs in */
        memset(tmp, 0, rs->words * sizeof(uint64_t));
        add_ranges_of(rs, tmp, er);
        for (size_t w = 0; w < rs->words; w++) set[w] &= ~tmp[w];
      }
    }
  }
  tg_free(tmp);
  tg_vec_free(&ended);
}

static void range_sets_free(RangeSets *rs) {
  uopmap_free(&rs->index);
  uopmap_free(&rs->range_bit);
  tg_free(rs->bits);
}

/* ---- tinygrad's sort key ---- */

typedef struct LinKey {
  UOp *u;
  u128 run_count;   /* saturates at 2^126: only compared */
  int priority;
  bool has_extra;   /* PARAM: extra = slot */
  int64_t extra;
  size_t topo;      /* position in the toposort: the stable sort's last word */
} LinKey;

/* Comparisons answer -1 / 0 / 1, or UNORDERED: the values differ but neither is less (a nan in Python). */
enum { UNORDERED = 2 };

static int cmp_num(i128 a, i128 b) { return a < b ? -1 : a > b; }
static int cmp_double(double a, double b) { return a < b ? -1 : a > b; }

/* Python's DType.__lt__: (priority, bitsize, name). */
static int cmp_dtype(const DType *a, const DType *b) {
  if (a == b) return 0;
  if (a->priority != b->priority) return cmp_num(a->priority, b->priority);
  if (a->bitsize != b->bitsize) return cmp_num(a->bitsize, b->bitsize);
  int c = strcmp(a->name, b->name);
  return c < 0 ? -1 : c > 0;
}

static int cmp_const(const UOp *a, const UOp *b) {
  Const x = uop_const_val(a), y = uop_const_val(b);
  if (x.kind == CK_INVALID || y.kind == CK_INVALID) return cmp_num(x.kind == CK_INVALID, y.kind == CK_INVALID);
  if (x.kind != CK_FLOAT && y.kind != CK_FLOAT) return cmp_num(dt_const_as_i128(x, a->dtype), dt_const_as_i128(y, b->dtype));
  double dx = dt_const_as_double(x, a->dtype), dy = dt_const_as_double(y, b->dtype);
  if (isnan(dx) || isnan(dy)) return UNORDERED; /* Python: nan is neither equal to, less nor greater than anything */
  return cmp_double(dx, dy);
}

/* The arg of two nodes of the same op, ordered as Python orders tinygrad's args. */
static int cmp_arg(const UOp *a, const UOp *b) {
  const Arg *x = &a->arg, *y = &b->arg;
  if (uop_is(a, TG_OP_CAST) || uop_is(a, TG_OP_BITCAST)) return cmp_dtype(a->dtype, b->dtype); /* arg = dtype */
  if (x->kind != y->kind) return cmp_num(x->kind, y->kind);
  switch (x->kind) {
  case ARG_NONE: return 0;
  case ARG_CONST: return cmp_const(a, b);
  case ARG_INT: return cmp_num(x->i, y->i);
  case ARG_OP: return cmp_num(x->op, y->op);
  case ARG_STR: { int c = strcmp(x->str, y->str); return c < 0 ? -1 : c > 0; }
  case ARG_RANGE: {
    const RangeArg *p = x->range, *q = y->range;
    if (p->axis_id != q->axis_id) return cmp_num(p->axis_id, q->axis_id);
    for (int i = 0; i < p->nsub && i < q->nsub; i++)
      if (p->sub[i] != q->sub[i]) return cmp_num(p->sub[i], q->sub[i]);
    if (p->nsub != q->nsub) return cmp_num(p->nsub, q->nsub);
    return cmp_num(p->axis_type, q->axis_type);
  }
  case ARG_PARAM: { /* dataclass(order=True): slot, dtype, vmin_vmax, multiple_of, name, addrspace */
    const ParamArg *p = x->param, *q = y->param;
    if (p->slot != q->slot) return cmp_num(p->slot, q->slot);
    int c = cmp_dtype(p->dtype, q->dtype);
    if (c) return c;
    if (p->vmin != q->vmin) return cmp_num(p->vmin, q->vmin);
    if (p->vmax != q->vmax) return cmp_num(p->vmax, q->vmax);
    if (p->multiple_of != q->multiple_of) return cmp_num(p->multiple_of, q->multiple_of);
    c = strcmp(p->name, q->name);
    if (c) return c < 0 ? -1 : 1;
    return cmp_num(p->addrspace, q->addrspace);
  }
  default: return 0;
  }
}

/* tinygrad tuplize: (op, arg, dtype, *src tuplize), compared as Python compares tuples. Interning makes equal
 * structures the same pointer, so the walk follows one differing path. */
static int cmp_structure(const UOp *a, const UOp *b) {
  if (a == b) return 0;
  if (a->op != b->op) return cmp_num(a->op, b->op);
  int c = cmp_arg(a, b);
  if (c) return c;
  c = cmp_dtype(a->dtype, b->dtype);
  if (c) return c;
  for (uint32_t i = 0; i < a->nsrc && i < b->nsrc; i++)
    if ((c = cmp_structure(a->src[i], b->src[i])) != 0) return c;
  return cmp_num(a->nsrc, b->nsrc);
}

/* Python's `key(a) < key(b)` for key = (run_count, priority, extra, *tuplize). */
static bool key_lt(const LinKey *a, const LinKey *b) {
  if (a->run_count != b->run_count) return a->run_count < b->run_count;
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->has_extra && b->has_extra && a->extra != b->extra) return a->extra < b->extra;
  return cmp_structure(a->u, b->u) == -1;
}

/* ---- CPython 3.11's list.sort (timsort with the powersort merge policy), step for step: with a comparison that is
 * not a total order (nan constants), only the same algorithm gives the same order as tinygrad. Stable. ---- */

typedef const LinKey *KeyP;
enum { MIN_GALLOP = 7 };

typedef struct SortRun { KeyP *base; ptrdiff_t len; int power; } SortRun;
typedef struct MergeState {
  ptrdiff_t min_gallop, listlen;
  KeyP *basekeys, *tmp;
  int n;
  SortRun pending[128];
} MergeState;

static void binary_insertion_sort(KeyP *lo, KeyP *hi, KeyP *start) {
  if (lo == start) ++start;
  for (; start < hi; ++start) {
    KeyP *l = lo, *r = start, pivot = *r;
    do {
      KeyP *p = l + ((r - l) >> 1);
      if (key_lt(pivot, *p)) r = p;
      else l = p + 1;
    } while (l < r);
    for (KeyP *p = start; p > l; --p) *p = *(p - 1);
    *l = pivot;
  }
}

/* length of the run at lo: non-descending, or strictly descending (*descending) */
static ptrdiff_t count_run(KeyP *lo, KeyP *hi, bool *descending) {
  *descending = false;
  if (++lo == hi) return 1;
  ptrdiff_t n = 2;
  if (key_lt(*lo, *(lo - 1))) {
    *descending = true;
    for (lo = lo + 1; lo < hi && key_lt(*lo, *(lo - 1)); ++lo, ++n) {}
  } else {
    for (lo = lo + 1; lo < hi && !key_lt(*lo, *(lo - 1)); ++lo, ++n) {}
  }
  return n;
}

/* k such that a[k-1] < key <= a[k] (gallop from hint, then binary search) */
static ptrdiff_t gallop_left(KeyP key, KeyP *a, ptrdiff_t n, ptrdiff_t hint) {
  ptrdiff_t lastofs = 0, ofs = 1;
  a += hint;
  if (key_lt(*a, key)) {
    const ptrdiff_t maxofs = n - hint;
    while (ofs < maxofs && key_lt(a[ofs], key)) { lastofs = ofs; ofs = (ofs << 1) + 1; }
    if (ofs > maxofs) ofs = maxofs;
    lastofs += hint;
    ofs += hint;
  } else {
    const ptrdiff_t maxofs = hint + 1;
    while (ofs < maxofs && !key_lt(*(a - ofs), key)) { lastofs = ofs; ofs = (ofs << 1) + 1; }
    if (ofs > maxofs) ofs = maxofs;
    ptrdiff_t k = lastofs;
    lastofs = hint - ofs;
    ofs = hint - k;
  }
  a -= hint;
  ++lastofs;
  while (lastofs < ofs) {
    ptrdiff_t m = lastofs + ((ofs - lastofs) >> 1);
    if (key_lt(a[m], key)) lastofs = m + 1;
    else ofs = m;
  }
  return ofs;
}

/* k such that a[k-1] <= key < a[k] */
static ptrdiff_t gallop_right(KeyP key, KeyP *a, ptrdiff_t n, ptrdiff_t hint) {
  ptrdiff_t lastofs = 0, ofs = 1;
  a += hint;
  if (key_lt(key, *a)) {
    const ptrdiff_t maxofs = hint + 1;
    while (ofs < maxofs && key_lt(key, *(a - ofs))) { lastofs = ofs; ofs = (ofs << 1) + 1; }
    if (ofs > maxofs) ofs = maxofs;
    ptrdiff_t k = lastofs;
    lastofs = hint - ofs;
    ofs = hint - k;
  } else {
    const ptrdiff_t maxofs = n - hint;
    while (ofs < maxofs && !key_lt(key, a[ofs])) { lastofs = ofs; ofs = (ofs << 1) + 1; }
    if (ofs > maxofs) ofs = maxofs;
    lastofs += hint;
    ofs += hint;
  }
  a -= hint;
  ++lastofs;
  while (lastofs < ofs) {
    ptrdiff_t m = lastofs + ((ofs - lastofs) >> 1);
    if (key_lt(key, a[m])) ofs = m;
    else lastofs = m + 1;
  }
  return ofs;
}

#define COPY(dst, src, k) memcpy((dst), (src), (size_t)(k) * sizeof(KeyP))
#define MOVE(dst, src, k) memmove((dst), (src), (size_t)(k) * sizeof(KeyP))

/* merge the run a[0..na) with the following b[0..nb), na <= nb, through a copy of a */
static void merge_lo(MergeState *ms, KeyP *a, ptrdiff_t na, KeyP *b, ptrdiff_t nb) {
  KeyP *dest = a;
  COPY(ms->tmp, a, na);
  a = ms->tmp;
  *dest++ = *b++;
  if (--nb == 0) goto succeed;
  if (na == 1) goto copy_b;
  ptrdiff_t min_gallop = ms->min_gallop;
  for (;;) {
    ptrdiff_t acount = 0, bcount = 0;
    for (;;) { /* one element at a time until a run wins consistently */
      if (key_lt(*b, *a)) {
        *dest++ = *b++;
        ++bcount;
        acount = 0;
        if (--nb == 0) goto succeed;
        if (bcount >= min_gallop) break;
      } else {
        *dest++ = *a++;
        ++acount;
        bcount = 0;
        if (--na == 1) goto copy_b;
        if (acount >= min_gallop) break;
      }
    }
    ++min_gallop;
    do { /* galloping */
      min_gallop -= min_gallop > 1;
      ms->min_gallop = min_gallop;
      ptrdiff_t k = gallop_right(*b, a, na, 0);
      acount = k;
      if (k) {
        COPY(dest, a, k);
        dest += k;
        a += k;
        na -= k;
        if (na == 1) goto copy_b;
        if (na == 0) goto succeed;
      }
      *dest++ = *b++;
      if (--nb == 0) goto succeed;
      k = gallop_left(*a, b, nb, 0);
      bcount = k;
      if (k) {
        MOVE(dest, b, k);
        dest += k;
        b += k;
        nb -= k;
        if (nb == 0) goto succeed;
      }
      *dest++ = *a++;
      if (--na == 1) goto copy_b;
    } while (acount >= MIN_GALLOP || bcount >= MIN_GALLOP);
    ++min_gallop;
    ms->min_gallop = min_gallop;
  }
succeed:
  if (na) COPY(dest, a, na);
  return;
copy_b:
  MOVE(dest, b, nb);
  dest[nb] = *a;
}

/* merge from the right end, na >= nb, through a copy of b */
static void merge_hi(MergeState *ms, KeyP *a, ptrdiff_t na, KeyP *b, ptrdiff_t nb) {
  KeyP *dest = b + nb - 1, *basea = a, *baseb = ms->tmp;
  COPY(ms->tmp, b, nb);
  b = ms->tmp + nb - 1;
  a += na - 1;
  *dest-- = *a--;
  if (--na == 0) goto succeed;
  if (nb == 1) goto copy_a;
  ptrdiff_t min_gallop = ms->min_gallop;
  for (;;) {
    ptrdiff_t acount = 0, bcount = 0;
    for (;;) {
      if (key_lt(*b, *a)) {
        *dest-- = *a--;
        ++acount;
        bcount = 0;
        if (--na == 0) goto succeed;
        if (acount >= min_gallop) break;
      } else {
        *dest-- = *b--;
        ++bcount;
        acount = 0;
        if (--nb == 1) goto copy_a;
        if (bcount >= min_gallop) break;
      }
    }
    ++min_gallop;
    do {
      min_gallop -= min_gallop > 1;
      ms->min_gallop = min_gallop;
      ptrdiff_t k = na - gallop_right(*b, basea, na, na - 1);
      acount = k;
      if (k) {
        dest -= k;
        a -= k;
        MOVE(dest + 1, a + 1, k);
        na -= k;
        if (na == 0) goto succeed;
      }
      *dest-- = *b--;
      if (--nb == 1) goto copy_a;
      k = nb - gallop_left(*a, baseb, nb, nb - 1);
      bcount = k;
      if (k) {
        dest -= k;
        b -= k;
        COPY(dest + 1, b + 1, k);
        nb -= k;
        if (nb == 1) goto copy_a;
        if (nb == 0) goto succeed;
      }
      *dest-- = *a--;
      if (--na == 0) goto succeed;
    } while (acount >= MIN_GALLOP || bcount >= MIN_GALLOP);
    ++min_gallop;
    ms->min_gallop = min_gallop;
  }
succeed:
  if (nb) COPY(dest - (nb - 1), baseb, nb);
  return;
copy_a:
  MOVE(dest + 1 - na, a + 1 - na, na);
  dest -= na;
  *dest = *b;
}

static void merge_at(MergeState *ms, int i) {
  KeyP *a = ms->pending[i].base, *b = ms->pending[i + 1].base;
  ptrdiff_t na = ms->pending[i].len, nb = ms->pending[i + 1].len;
  ms->pending[i].len = na + nb;
  if (i == ms->n - 3) ms->pending[i + 1] = ms->pending[i + 2];
  --ms->n;
  ptrdiff_t k = gallop_right(*b, a, na, 0); /* elements of a already in place */
  a += k;
  na -= k;
  if (na == 0) return;
  nb = gallop_left(a[na - 1], b, nb, nb - 1); /* elements of b already in place */
  if (nb <= 0) return;
  if (na <= nb) merge_lo(ms, a, na, b, nb);
  else merge_hi(ms, a, na, b, nb);
}

/* powersort: the depth of the boundary between two adjacent runs in the conceptual merge tree */
static int powerloop(ptrdiff_t s1, ptrdiff_t n1, ptrdiff_t n2, ptrdiff_t n) {
  int result = 0;
  ptrdiff_t a = 2 * s1 + n1, b = a + n1 + n2;
  for (;;) {
    ++result;
    if (a >= n) {
      a -= n;
      b -= n;
    } else if (b >= n) {
      break;
    }
    a <<= 1;
    b <<= 1;
  }
  return result;
}

static void found_new_run(MergeState *ms, ptrdiff_t n2) {
  if (!ms->n) return;
  SortRun *p = ms->pending;
  int power = powerloop(p[ms->n - 1].base - ms->basekeys, p[ms->n - 1].len, n2, ms->listlen);
  while (ms->n > 1 && p[ms->n - 2].power > power) merge_at(ms, ms->n - 2);
  p[ms->n - 1].power = power;
}

static void python_sort(KeyP *keys, ptrdiff_t n) {
  if (n < 2) return;
  MergeState *ms = tg_calloc(1, sizeof *ms);
  ms->min_gallop = MIN_GALLOP;
  ms->listlen = n;
  ms->basekeys = keys;
  ms->tmp = tg_malloc((size_t)n * sizeof(KeyP));
  ptrdiff_t minrun = n, r = 0;
  while (minrun >= 64) {
    r |= minrun & 1;
    minrun >>= 1;
  }
  minrun += r;
  KeyP *lo = keys;
  ptrdiff_t remaining = n;
  do {
    bool descending;
    ptrdiff_t run = count_run(lo, lo + remaining, &descending);
    if (descending)
      for (KeyP *x = lo, *y = lo + run - 1; x < y; x++, y--) {
        KeyP t = *x;
        *x = *y;
        *y = t;
      }
    if (run < minrun) {
      ptrdiff_t force = remaining <= minrun ? remaining : minrun;
      binary_insertion_sort(lo, lo + force, lo + run);
      run = force;
    }
    found_new_run(ms, run);
    TG_ASSERT(ms->n < (int)TG_ARRAY_LEN(ms->pending), "run stack overflow");
    ms->pending[ms->n++] = (SortRun){lo, run, 0};
    lo += run;
    remaining -= run;
  } while (remaining);
  while (ms->n > 1) {
    int i = ms->n - 2;
    if (i > 0 && ms->pending[i - 1].len < ms->pending[i + 1].len) --i;
    merge_at(ms, i);
  }
  tg_free(ms->tmp);
  tg_free(ms);
}
#undef COPY
#undef MOVE

static int node_priority(const UOp *u) {
  switch (uop_op(u)) {
  case TG_OP_PARAM: return -20;
  case TG_OP_BUFFER: return u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_LOCAL ? -17 : -18;
  case TG_OP_LOAD: return -1;
  case TG_OP_STORE: return 1;
  case TG_OP_RANGE: return 5;
  case TG_OP_END: return -5;
  default: return 0;
  }
}

static u128 saturating_mul(u128 a, i128 b) {
  const u128 cap = (u128)1 << 126;
  if (b <= 0) return 0;
  if (a > cap / (u128)b) return cap;
  return a * (u128)b;
}

/* ---- the max-heap of the placement walk, on the key numbers ---- */

typedef struct Heap { size_t *v; size_t len; } Heap;

static void heap_push(Heap *h, size_t x) {
  size_t i = h->len++;
  h->v[i] = x;
  while (i > 0 && h->v[(i - 1) / 2] < h->v[i]) {
    size_t p = (i - 1) / 2, t = h->v[p];
    h->v[p] = h->v[i];
    h->v[i] = t;
    i = p;
  }
}

static size_t heap_pop(Heap *h) {
  size_t top = h->v[0];
  h->v[0] = h->v[--h->len];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->len && h->v[l] > h->v[m]) m = l;
    if (r < h->len && h->v[r] > h->v[m]) m = r;
    if (m == i) break;
    size_t t = h->v[m];
    h->v[m] = h->v[i];
    h->v[i] = t;
    i = m;
  }
  return top;
}

/* The priority toposort (tinygrad linearize()). */
static void priority_toposort(UOp *sink, UOpVec *out) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  RangeSets rs;
  range_sets_build(&rs, &topo);
  size_t n = topo.len;
  LinKey *keys = tg_calloc(n, sizeof *keys);
  size_t *out_degree = tg_calloc(n, sizeof *out_degree);
  UOpVec range_nodes = {0};
  for (size_t i = 0; i < n; i++)
    if (uop_is(topo.data[i], TG_OP_RANGE)) tg_vec_push(&range_nodes, topo.data[i]);
  for (size_t i = 0; i < n; i++) {
    UOp *u = topo.data[i];
    for (uint32_t k = 0; k < u->nsrc; k++) out_degree[node_index(&rs, u->src[k])]++;
    u128 run = 1;
    const uint64_t *set = &rs.bits[i * rs.words];
    for (size_t r = 0; r < range_nodes.len; r++) {
      UOp *rng = range_nodes.data[r];
      size_t bit = range_bit(&rs, rng);
      if (rng == u || ((set[bit / 64] >> (bit % 64)) & 1)) run = saturating_mul(run, range_trips(rng));
    }
    keys[i] = (LinKey){.u = u, .run_count = run, .priority = node_priority(u), .topo = i};
    if (uop_is(u, TG_OP_PARAM) && u->arg.kind == ARG_PARAM) {
      keys[i].has_extra = true;
      keys[i].extra = u->arg.param->slot;
    }
  }
  KeyP *order = tg_malloc((n ? n : 1) * sizeof *order);
  for (size_t k = 0; k < n; k++) order[k] = &keys[k];
  python_sort(order, (ptrdiff_t)n);
  size_t *number = tg_calloc(n, sizeof *number); /* toposort position -> key number */
  for (size_t k = 0; k < n; k++) number[order[k]->topo] = k;
  /* place from the SINK upwards: a node is ready once every user is placed; the highest number goes first */
  Heap heap = {tg_calloc(n, sizeof(size_t)), 0};
  UOpVec rev = {0};
  heap_push(&heap, number[node_index(&rs, sink)]);
  while (heap.len) {
    UOp *u = order[heap_pop(&heap)]->u;
    tg_vec_push(&rev, u);
    for (uint32_t k = 0; k < u->nsrc; k++) {
      size_t si = node_index(&rs, u->src[k]);
      if (--out_degree[si] == 0) heap_push(&heap, number[si]);
    }
  }
  for (size_t i = rev.len; i-- > 0;) tg_vec_push(out, rev.data[i]);
  tg_vec_free(&rev);
  tg_free(heap.v);
  tg_free(number);
  tg_free(order);
  tg_vec_free(&range_nodes);
  tg_free(out_degree);
  tg_free(keys);
  range_sets_free(&rs);
  tg_vec_free(&topo);
}

/* ---- line rewrite: gated STORE -> IF / STORE / ENDIF ---- */

static bool is_index_or_casted(const UOp *u) {
  if (uop_is(u, TG_OP_CAST)) u = u->src[0];
  return uop_is(u, TG_OP_INDEX) || uop_is(u, TG_OP_SHRINK);
}

UOp *cg_linearize(UOp *sink) {
  if (!sink || !uop_is(sink, TG_OP_SINK)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "linearize: the root must be a SINK, got %s", sink ? uop_op_name(uop_op(sink)) : "NULL");
    return NULL;
  }
  UOpVec order = {0};
  priority_toposort(sink, &order);
  UOpVec lines = {0};
  UOpMap replaced;
  uopmap_init(&replaced);
  UOp *result = NULL;
  UOp *srcbuf[64];
  for (size_t i = 0; i < order.len; i++) {
    UOp *u = order.data[i];
    if (uop_is(u, TG_OP_IF) || uop_is(u, TG_OP_ENDIF)) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "linearize: %s is not allowed in the graph", uop_op_name(uop_op(u)));
      goto done;
    }
    UOp **src = u->nsrc <= TG_ARRAY_LEN(srcbuf) ? srcbuf : tg_malloc(u->nsrc * sizeof(UOp *));
    bool changed = false;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      void **r = uopmap_get(&replaced, u->src[k]);
      src[k] = r ? (UOp *)*r : u->src[k];
      changed |= src[k] != u->src[k];
    }
    UOp *nu = changed ? uop_replace_src(u, src, u->nsrc) : u;
    if (src != srcbuf) tg_free(src);
    if (uop_is(nu, TG_OP_STORE) && nu->nsrc == 3 && is_index_or_casted(nu->src[0]) && dt_is_bool(nu->src[2]->dtype) &&
        nu->src[2]->dtype->count == 1) {
      UOp *store = uop_new(TG_OP_STORE, DT_VOID, nu->src, 2, nu->arg);
      UOp *if_src[2] = {nu->src[2], nu->src[0]};
      UOp *mif = uop_new(TG_OP_IF, DT_VOID, if_src, 2, arg_none());
      UOp *endif = uop_new(TG_OP_ENDIF, DT_VOID, &mif, 1, arg_none());
      tg_vec_push(&lines, mif);
      tg_vec_push(&lines, store);
      tg_vec_push(&lines, endif);
      nu = store;
    } else {
      tg_vec_push(&lines, nu);
    }
    if (nu != u) uopmap_put(&replaced, u, nu);
  }
  result = uop_new(TG_OP_LINEAR, DT_VOID, lines.data, lines.len, arg_none());
  if (spec_verify(result, SPEC_PROGRAM, "codegen: the linearized program") != TG_OK) result = NULL;
done:
  uopmap_free(&replaced);
  tg_vec_free(&lines);
  tg_vec_free(&order);
  return result;
}
