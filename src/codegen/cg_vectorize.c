/* cg_vectorize.c — vector ALU ops from lane STACKs (not tinygrad's: it devectorizes ALU ops and leaves regrouping to
 * the C compiler; see cg_expand's vector accumulators). A STACK of the lanes of a vector accumulator's addend, each
 * lane the same ALU op, becomes that op over the lanes of its operands:
 *   - operand lanes that are all one value: that scalar (an ALU op broadcasts a scalar over a vector),
 *   - lanes 0..n-1 of one n-lane value, in order: that value,
 *   - loads of n consecutive elements of one buffer: one vector load (what memory coalescing would group, without
 *     depending on where its groups start),
 *   - anything else: a STACK of the lanes, rewritten the same way.
 * Ops outside ADD/SUB/MUL/NEG on float32 stay per lane. Runs after memory coalescing, whose loads it reads lanes of.
 *
 * Where the renderer has dot_u8i8 (x86 AVX-VNNI), 4, 8 or 16 float lanes that each convert an int32 sum of 4m products of an
 * unsigned and a signed byte (plus other int terms) become one CUSTOM: m vpdpbusd steps over 16/32/64-byte vectors (byte
 * 4l + k of step j is lane l's product 4j + k), started from the other terms, converted to float — the
 * int8 dot of ggml's quantized GEMVs (src/nn/ggml_qdot.c). The C compiler's SLP vectorizer turns the 16 bytes of
 * consecutive loads into one vector load. The sums are exact, so the lanes' values are the scalar code's. */
#include "cg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the lanes of a value after coalescing: a LOAD of a SHRINK, a STACK, an ALU op over those; 1 for a scalar */
static int64_t lanes_of(const UOp *u) {
  if (u->op == TG_OP_LOAD && u->nsrc == 1 && u->src[0]->op == TG_OP_SHRINK && u->src[0]->nsrc == 3) {
    const UOp *n = u->src[0]->src[2];
    return n->op == TG_OP_CONST && n->arg.c.kind == CK_INT ? n->arg.c.i : -1;
  }
  if (u->op == TG_OP_STACK) return u->nsrc;
  if (op_is_alu(uop_op(u))) {
    int64_t n = 1;
    for (uint32_t i = 0; i < u->nsrc; i++) n = TG_MAX(n, lanes_of(u->src[i]));
    return n;
  }
  return 1;
}

/* where a scalar lane is read from memory: buffer, index without its constant (NULL: a constant index), the constant,
 * and the gate */
typedef struct LaneAddr {
  UOp *buf, *base, *valid;
  int64_t off;
} LaneAddr;

static bool lane_addr(UOp *u, LaneAddr *a) {
  UOp *idx;
  int64_t k = 0;
  if (u->op == TG_OP_LOAD && u->nsrc == 1 && u->src[0]->op == TG_OP_INDEX && u->src[0]->nsrc == 2) {
    a->buf = u->src[0]->src[0];
    idx = u->src[0]->src[1];
  } else if (u->op == TG_OP_INDEX && u->nsrc == 2 && u->src[0]->op == TG_OP_LOAD && u->src[0]->nsrc == 1 &&
             u->src[0]->src[0]->op == TG_OP_SHRINK && u->src[1]->op == TG_OP_CONST && u->src[1]->arg.c.kind == CK_INT) {
    a->buf = u->src[0]->src[0]->src[0];
    idx = u->src[0]->src[0]->src[1];
    k = u->src[1]->arg.c.i;
  } else {
    return false;
  }
  a->valid = NULL;
  if (idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2])) a->valid = idx->src[0], idx = idx->src[1];
  if (!cg_split_offset(idx, &a->base, &a->off)) return false;
  a->off += k;
  return true;
}

/* one vector load of the n lanes when they read consecutive elements of one buffer under one gate, else NULL */
static UOp *vector_load_of(UOp *const *lane, size_t n) {
  LaneAddr first, a;
  if (!lane_addr(lane[0], &first)) return NULL;
  for (size_t i = 1; i < n; i++)
    if (lane[i]->dtype != lane[0]->dtype || !lane_addr(lane[i], &a) || a.buf != first.buf || a.base != first.base ||
        a.valid != first.valid || a.off != first.off + (int64_t)i)
      return NULL;
  UOp *offset = cg_index_at(first.base, first.off);
  bool aligned = uop_divides(offset, (int64_t)n) != NULL;
  UOp *s[3] = {first.buf, cg_gated_index(first.valid, offset), uop_const_int(DT_WEAKINT, (int64_t)n)};
  UOp *access = uop_new(TG_OP_SHRINK, lane[0]->dtype, s, 3, aligned ? arg_none() : arg_int(1));
  return uop_new(TG_OP_LOAD, lane[0]->dtype, &access, 1, arg_none());
}

/* lanes 0..n-1 of one n-lane value, in order: that value, else NULL */
static UOp *whole_value_of(UOp *const *lane, size_t n) {
  UOp *v = lane[0]->op == TG_OP_INDEX && lane[0]->nsrc == 2 ? lane[0]->src[0] : NULL;
  if (!v || lanes_of(v) != (int64_t)n) return NULL;
  for (size_t i = 0; i < n; i++)
    if (lane[i]->op != TG_OP_INDEX || lane[i]->nsrc != 2 || lane[i]->src[0] != v || lane[i]->src[1]->op != TG_OP_CONST ||
        lane[i]->src[1]->arg.c.kind != CK_INT || lane[i]->src[1]->arg.c.i != (int64_t)i)
      return NULL;
  return v;
}

static bool all_same(UOp *const *lane, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (lane[i] != lane[0]) return false;
  return true;
}

/* A lane of a vector load read on its own: a load of that one element. A scalar broadcast over a vector op is then a
 * broadcast load from memory (a load port) instead of a lane shuffle of a loaded register, which on AVX-512 cores
 * competes with the FMAs for a port. Measured (2 cores, AVX-512, a 64x32x28x28 3x3 conv vectorized over output
 * channels, 2 vectors x 7 pixels): 194-203 -> 213-220 GFLOPS; a 1 vector x 14 pixels tile, where every broadcast
 * feeds one FMA and the loads become the limit, went 202-211 -> 151-154 (the heuristic does not pick it). */
static UOp *scalar_load_of(UOp *lane) {
  LaneAddr a;
  if (lane->op != TG_OP_INDEX || !lane_addr(lane, &a)) return lane;
  UOp *s[2] = {a.buf, cg_gated_index(a.valid, cg_index_at(a.base, a.off))};
  UOp *access = uop_new(TG_OP_INDEX, lane->dtype, s, 2, arg_none());
  return uop_new(TG_OP_LOAD, lane->dtype, &access, 1, arg_none());
}

/* an operand of a vector op, from its lanes */
static UOp *operand_of(UOp *const *lane, size_t n) {
  if (all_same(lane, n)) return scalar_load_of(lane[0]);
  UOp *v = whole_value_of(lane, n);
  if (!v) v = vector_load_of(lane, n);
  return v ? v : uop_new_tagged(TG_OP_STACK, lane[0]->dtype, lane, n, arg_none(), CG_TAG_VECTOR_LANES);
}

/* ---- int8 dot lanes (dot_u8i8) ---- */

/* the 8-bit value an int32 operand widens: CAST.int(x) with x 8-bit, or a WHERE of two such (the cast pushed into a
 * select) rebuilt as a WHERE of the bytes; NULL otherwise */
static UOp *widened_byte(UOp *t) {
  if (t->dtype != DT_INT32) return NULL;
  if (t->op == TG_OP_CAST && t->nsrc == 1) {
    const DType *d = t->src[0]->dtype;
    return d == DT_UINT8 || d == DT_INT8 ? t->src[0] : NULL;
  }
  if (t->op == TG_OP_WHERE && t->nsrc == 3) {
    UOp *a = widened_byte(t->src[1]), *b = widened_byte(t->src[2]);
    if (!a || !b || a->dtype != b->dtype) return NULL;
    return uop_where(t->src[0], a, b);
  }
  return NULL;
}

bool cg_int8_dot_term(UOp *t, UOp **u, UOp **s) {
  if (t->op != TG_OP_MUL || t->nsrc != 2 || t->dtype != DT_INT32) return false;
  UOp *a = widened_byte(t->src[0]), *b = widened_byte(t->src[1]);
  if (!a || !b) return false;
  if (a->dtype == DT_INT8 && b->dtype == DT_UINT8) { UOp *x = a; a = b; b = x; }
  if (a->dtype != DT_UINT8 || b->dtype != DT_INT8) return false;
  if (u) *u = a;
  if (s) *s = b;
  return true;
}

bool cg_has_int8_dot(UOp *x) {
  UOpVec topo = {0};
  uop_toposort(x, NULL, NULL, &topo);
  bool any = false;
  for (size_t i = 0; i < topo.len && !any; i++) {
    any = cg_int8_dot_term(topo.data[i], NULL, NULL);
  }
  tg_vec_free(&topo);
  return any;
}

/* the element offset of the first memory read in x (a byte operand: a load, or a load masked / shifted), for putting
 * a lane's products in memory order; INT64_MAX when x reads none */
static int64_t read_offset(UOp *x) {
  LaneAddr a;
  if (lane_addr(x, &a)) return a.off;
  for (uint32_t i = 0; i < x->nsrc; i++) {
    if (x->op == TG_OP_INDEX || x->op == TG_OP_LOAD) break;
    int64_t o = read_offset(x->src[i]);
    if (o != INT64_MAX) return o;
  }
  return INT64_MAX;
}

typedef struct DotTerm { UOp *u, *s; int64_t key_s, key_u; } DotTerm;
static int dot_term_cmp(const void *pa, const void *pb) {
  const DotTerm *a = pa, *b = pb;
  if (a->key_s != b->key_s) return a->key_s < b->key_s ? -1 : 1;
  return a->key_u < b->key_u ? -1 : a->key_u > b->key_u;
}

#define DOT_LANES_MAX 16 /* one 512-bit vpdpbusd: 16 int32 lanes of 4 byte products (128/256-bit: 4, 8 lanes) */
#define DOT_STEPS_MAX 8

/* a STACK of n = 4, 8 or 16 lanes CAST.float(int32 sum with 4m int8 products, m equal across lanes) -> the CUSTOM */
static UOp *int8_dot_lanes(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(m);
  const Renderer *ren = rw->ctx;
  uint32_t n = s->nsrc;
  if (!ren || !ren->dot_u8i8 || s->tag != CG_TAG_VECTOR_LANES || (n != 4 && n != 8 && n != 16) ||
      (int)n > ren->dot_u8i8_lanes)
    return NULL;
  UOpVec terms[DOT_LANES_MAX] = {{0}};
  UOp *prod_u[DOT_LANES_MAX][4 * DOT_STEPS_MAX], *prod_s[DOT_LANES_MAX][4 * DOT_STEPS_MAX], *rest[DOT_LANES_MAX];
  DotTerm prod[4 * DOT_STEPS_MAX];
  size_t np = 0;
  bool ok = true;
  for (uint32_t l = 0; l < n && ok; l++) {
    UOp *c = s->src[l];
    ok = c->op == TG_OP_CAST && c->dtype == DT_FLOAT32 && c->nsrc == 1 && c->src[0]->dtype == DT_INT32;
    if (!ok) break;
    uop_split(c->src[0], TG_OP_ADD, &terms[l]);
    size_t k = 0;
    rest[l] = NULL;
    for (size_t i = 0; i < terms[l].len && ok; i++) {
      UOp *t = terms[l].data[i], *u, *v;
      if (cg_int8_dot_term(t, &u, &v) && k < 4 * DOT_STEPS_MAX) prod[k++] = (DotTerm){u, v, read_offset(v), read_offset(u)};
      else rest[l] = rest[l] ? uop_add(rest[l], t) : t;
    }
    /* memory order (the activation's bytes, then the weight's): each step's bytes are then runs of consecutive loads */
    qsort(prod, k, sizeof *prod, dot_term_cmp);
    for (size_t i = 0; i < k; i++) prod_u[l][i] = prod[i].u, prod_s[l][i] = prod[i].s;
    if (l == 0) np = k;
    ok = k == np && k > 0 && k % 4 == 0 && (l == 0 || (rest[l] == NULL) == (rest[0] == NULL));
  }
  for (uint32_t l = 0; l < n; l++) tg_vec_free(&terms[l]);
  if (!ok) return NULL;
  size_t steps = np / 4;
  unsigned bits = n * 32, bytes = n * 4;
  UOp *src[1 + 2 * 64 * DOT_STEPS_MAX];
  uint32_t ns = 0;
  StrBuf f;
  sb_init(&f);
  sb_puts(&f, "__builtin_convertvector(");
  for (size_t j = 0; j < steps; j++) sb_printf(&f, "tg_dpbusd%u(", bits);
  /* the start: the other terms' lanes (the CUSTOM's n-lane shape comes from this source) */
  UOp *zero = uop_const_int(DT_INT32, 0), *init_lanes[DOT_LANES_MAX];
  for (uint32_t l = 0; l < n; l++) init_lanes[l] = rest[l] ? rest[l] : zero;
  UOp *init = rest[0] ? operand_of(init_lanes, n) : NULL;
  if (!init || lanes_of(init) != (int64_t)n) init = uop_new(TG_OP_STACK, DT_INT32, init_lanes, n, arg_none());
  src[ns++] = init;
  sb_printf(&f, "(tg_i32x%u)({0})", n);
  for (size_t j = 0; j < steps; j++)
    for (int half = 0; half < 2; half++) {
      sb_printf(&f, half ? ", (tg_i8x%u){{" : ", (tg_u8x%u){{", bytes);
      for (uint32_t l = 0; l < n; l++)
        for (size_t k = 0; k < 4; k++) {
          src[ns] = half ? prod_s[l][4 * j + k] : prod_u[l][4 * j + k];
          sb_printf(&f, "%s{%u}", l || k ? ", " : "", ns++);
        }
      sb_puts(&f, half ? "}})" : "}}");
    }
  sb_printf(&f, ", float%u)", n);
  char *fmt = sb_take(&f);
  UOp *r = uop_new(TG_OP_CUSTOM, DT_FLOAT32, src, ns, arg_str(fmt));
  tg_free(fmt);
  return r;
}

static bool vector_op(TgOp op) { return op == TG_OP_ADD || op == TG_OP_SUB || op == TG_OP_MUL || op == TG_OP_NEG; }

static UOp *vectorize_lanes(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (s->tag != CG_TAG_VECTOR_LANES || s->nsrc < 2 || all_same(s->src, s->nsrc)) return NULL;
  UOp *whole = whole_value_of(s->src, s->nsrc);
  if (!whole) whole = vector_load_of(s->src, s->nsrc);
  if (whole) return whole;
  UOp *e0 = s->src[0];
  if (!vector_op(uop_op(e0)) || e0->dtype != DT_FLOAT32) return NULL;
  for (uint32_t i = 1; i < s->nsrc; i++)
    if (s->src[i]->op != e0->op || s->src[i]->nsrc != e0->nsrc || s->src[i]->dtype != e0->dtype) return NULL;
  UOp *ops[3], *col[64];
  for (uint32_t k = 0; k < e0->nsrc; k++) {
    for (uint32_t i = 0; i < s->nsrc; i++) col[i] = s->src[i]->src[k];
    ops[k] = operand_of(col, s->nsrc);
  }
  return uop_new(uop_op(e0), e0->dtype, ops, e0->nsrc, e0->arg);
}

/* a STACK of lanes 0..n-1 of one n-lane value (a vector accumulator's lanes stored together) is that value */
static UOp *stack_of_whole(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  return s->nsrc >= 2 ? whole_value_of(s->src, s->nsrc) : NULL;
}

static const Rule vectorize_rules[] = {
    /* int8 dot lanes -> vpdpbusd (dot_u8i8 renderers) */
    RULE("s:STACK", int8_dot_lanes, NULL),
    /* a lane STACK of one ALU op becomes the vector op (see the file comment) */
    RULE("s:STACK", vectorize_lanes, NULL),
    /* a STACK of a value's lanes in order is the value */
    RULE("s:STACK", stack_of_whole, NULL),
};

UOp *cg_vectorize(UOp *sink, const Renderer *ren) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("vectorize lanes", vectorize_rules);
  return pm_graph_rewrite(sink, pm, (void *)ren, 0, NULL, "vectorize lanes");
}
