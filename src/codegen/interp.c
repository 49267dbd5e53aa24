/* interp.c — the kernel interpreter (interp.h): runs a LINEAR list the way the rendered C runs it.
 *
 * Each list position holds one value slot (a Const on its dtype's grid, or a pointer for PARAM/BUFFER/INDEX), written
 * when the walk reaches it, as the C variable of that UOp would be. RANGE/END jump back to the loop head, IF skips
 * to its ENDIF. Integer and bool ALU ops use dt_const_exec_alu (tinygrad's wrap-around semantics); float ops are computed
 * in double and rounded to the result dtype (exact for float32 +-*÷ and sqrt, as C computes them); float->int casts
 * follow C truncation, with x86's "integer indefinite" for values C leaves undefined (a dead WHERE branch may compute
 * them). Accesses are bounds-checked against the buffer sizes the PARAMs declare.
 *
 * A kernel with SPECIAL indices (a GPU kernel) runs as the device would run it, block after block (gidx), each block
 * with all its threads (lidx): every thread has its own value slots and REG buffers, the block's LOCAL buffers are
 * shared and start poisoned (all bits set: NaN, -1), and a BARRIER is a sync point. The threads of a block run one
 * after another, each up to its next BARRIER (a schedule a GPU may choose), so a load from LOCAL memory that a missing
 * barrier leaves unordered reads another thread's stale or poisoned data instead of passing by luck; every thread
 * must reach the same BARRIER (divergence is an error). A WMMA (tensor core) is such a sync point too: once every
 * thread holds its fragments, the warp's product is computed with tinygrad's fragment maps (block_wmma). */
#include "interp.h"

#include <math.h>
#include <stdlib.h>

#include "../render/render.h"
#include "../uop/shape.h"

typedef struct Slot {
  Const v;          /* scalar value (lane 0 of a vector) */
  Const *lanes;     /* a vector value (a LOAD of a SHRINK, a STACK ...): nlanes values; NULL for scalars */
  uint32_t nlanes;
  char *ptr;        /* PARAM/BUFFER/AFTER/INDEX/SHRINK: the buffer's base */
  int64_t numel;    /* elements behind base (-1 unknown); RANGE: its end */
  int64_t index;    /* INDEX/SHRINK: the first element accessed */
} Slot;

/* lane k of a value; a scalar broadcasts */
static Const lane(const Slot *s, uint32_t k) { return s->lanes ? s->lanes[k < s->nlanes ? k : 0] : s->v; }

typedef struct Interp {
  UOp *lin;
  uint32_t n;
  UOpMap pos;          /* node -> 1 + position */
  uint32_t *srcpos;    /* per position: offset into srcidx */
  uint32_t *srcidx;    /* positions of the sources (UINT32_MAX: not in the list, e.g. a CONST under a CAST) */
  uint32_t *jump;      /* RANGE -> its END, IF -> its ENDIF, END -> its RANGE */
  Slot *slot;          /* the running thread's slots */
  uint32_t *width;     /* per position: the value's lane count (tinygrad max_numel) */
  TG_VEC(char *) owned; /* register buffers (of every thread) */
  char **local;        /* per position: the block's LOCAL buffer (shared by its threads), NULL elsewhere */
  int64_t gid[3], lid[3], ldim[3]; /* the running thread's block and thread index, the block's size */
} Interp;

/* Make the slot a vector of n lanes (n > 1) or a scalar (n <= 1). */
static void set_width(Slot *s, uint32_t n) {
  if (n <= 1) {
    tg_free(s->lanes);
    s->lanes = NULL;
    s->nlanes = 0;
    return;
  }
  if (s->nlanes != n) {
    s->lanes = tg_realloc(s->lanes, n * sizeof(Const));
    s->nlanes = n;
  }
}

static tg_status fail(const UOp *u, const char *what) {
  return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: interp: %s %s: %s", uop_op_name(uop_op(u)), u->dtype->name, what);
}

/* ---- values in memory ---- */

static Const read_elem(const char *p, const DType *d) {
  switch (d->scalar->id) {
  case TG_BOOL: return const_bool(*(const uint8_t *)p != 0);
  case TG_INT8: return const_int(*(const int8_t *)p);
  case TG_UINT8: return const_int(*(const uint8_t *)p);
  case TG_INT16: { int16_t x; memcpy(&x, p, 2); return const_int(x); }
  case TG_UINT16: { uint16_t x; memcpy(&x, p, 2); return const_int(x); }
  case TG_INT32: { int32_t x; memcpy(&x, p, 4); return const_int(x); }
  case TG_UINT32: { uint32_t x; memcpy(&x, p, 4); return const_int(x); }
  case TG_INT64: case TG_UINT64: { int64_t x; memcpy(&x, p, 8); return const_int(x); }
  case TG_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return const_float(tg_half_bits_to_float(h)); }
  case TG_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return const_float(tg_bf16_bits_to_float(h)); }
  case TG_FLOAT32: { float x; memcpy(&x, p, 4); return const_float(x); }
  case TG_FLOAT64: { double x; memcpy(&x, p, 8); return const_float(x); }
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ:
    return const_float(tg_fp8_bits_to_float(*(const uint8_t *)p, d->scalar->id));
  default: return const_invalid();
  }
}

static bool write_elem(char *p, const DType *d, Const v) {
  v = dt_const(d, v);
  switch (d->scalar->id) {
  case TG_BOOL: *(uint8_t *)p = (uint8_t)(dt_const_as_i128(v, d) != 0); return true;
  case TG_INT8: case TG_UINT8: *(uint8_t *)p = (uint8_t)v.i; return true;
  case TG_INT16: case TG_UINT16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); return true; }
  case TG_INT32: case TG_UINT32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); return true; }
  case TG_INT64: case TG_UINT64: memcpy(p, &v.i, 8); return true;
  case TG_FLOAT16: { uint16_t h = tg_float_to_half_bits((float)v.f); memcpy(p, &h, 2); return true; }
  case TG_BFLOAT16: { uint16_t h = tg_float_to_bf16_bits((float)v.f); memcpy(p, &h, 2); return true; }
  case TG_FLOAT32: { float x = (float)v.f; memcpy(p, &x, 4); return true; }
  case TG_FLOAT64: memcpy(p, &v.f, 8); return true;
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ:
    *(uint8_t *)p = tg_float_to_fp8_bits(v.f, d->scalar->id);
    return true;
  default: return false;
  }
}

/* ---- arithmetic ---- */

/* A double rounded to a float dtype's grid (float32 as C rounds; half/bf16 to nearest even). */
static Const round_float(const DType *d, double r) {
  if (d->scalar == DT_FLOAT32) return const_float((float)r);
  if (d->scalar == DT_FLOAT64 || d->scalar == DT_WEAKFLOAT) return const_float(r);
  return dt_const(d->scalar, const_float(r));
}

static bool float_alu(TgOp op, const double *x, double *r) {
  switch (op) {
  case TG_OP_EXP2: *r = exp2(x[0]); return true;
  case TG_OP_LOG2: *r = log2(x[0]); return true;
  case TG_OP_SIN: *r = sin(x[0]); return true;
  case TG_OP_SQRT: *r = sqrt(x[0]); return true;
  case TG_OP_RECIPROCAL: *r = 1.0 / x[0]; return true;
  case TG_OP_NEG: *r = -x[0]; return true;
  case TG_OP_TRUNC: *r = trunc(x[0]); return true;
  case TG_OP_ADD: *r = x[0] + x[1]; return true;
  case TG_OP_SUB: *r = x[0] - x[1]; return true;
  case TG_OP_MUL: *r = x[0] * x[1]; return true;
  case TG_OP_FDIV: case TG_OP_CDIV: *r = x[0] / x[1]; return true;
  case TG_OP_CMOD: *r = fmod(x[0], x[1]); return true;
  case TG_OP_MAX: *r = x[0] < x[1] ? x[1] : x[0]; return true; /* as tinygrad decomposes it: a<b?b:a (nan order) */
  case TG_OP_POW: *r = pow(x[0], x[1]); return true;
  case TG_OP_MULACC: *r = x[0] * x[1] + x[2]; return true;
  default: return false;
  }
}

static Const exec_alu(const UOp *u, const Const *src, bool *ok) {
  TgOp op = uop_op(u);
  *ok = true;
  if (op == TG_OP_WHERE) return dt_const_as_i128(src[0], u->src[0]->dtype) != 0 ? src[1] : src[2];
  if (op_has(op, OPP_COMPARISON)) {
    const DType *od = u->src[0]->dtype;
    if (dt_is_float(od)) {
      double a = dt_const_as_double(src[0], od), b = dt_const_as_double(src[1], od);
      return const_bool(op == TG_OP_CMPLT ? a < b : op == TG_OP_CMPNE ? a != b : a == b);
    }
    Const r = dt_const_exec_alu(op, od, src, (int)u->nsrc);
    *ok = r.kind == CK_BOOL;
    return r;
  }
  if (dt_is_float(u->dtype)) {
    double x[3], r;
    for (uint32_t k = 0; k < u->nsrc && k < 3; k++) x[k] = dt_const_as_double(src[k], u->src[k]->dtype);
    if (!float_alu(op, x, &r)) { *ok = false; return const_invalid(); }
    return round_float(u->dtype, r);
  }
  Const r = dt_const_exec_alu(op, u->dtype, src, (int)u->nsrc);
  *ok = r.kind != CK_NONE && r.kind != CK_INVALID;
  return r;
}

/* C's float -> integer conversion as clang emits it on x86-64: truncation; where C leaves it undefined (nan, out of
 * range) the hardware's "integer indefinite" (the lowest value of the 32- or 64-bit conversion it uses). */
static Const float_to_int(double x, const DType *to) {
  const DType *d = to->scalar;
  bool wide = d->bitsize == 64 || d == DT_UINT32;
  if (d == DT_UINT64 && x >= 9223372036854775808.0 && x < 18446744073709551616.0)
    return const_int((int64_t)((uint64_t)(x - 9223372036854775808.0) ^ ((uint64_t)1 << 63)));
  i128 t;
  if (isnan(x)) t = wide ? (i128)INT64_MIN : (i128)INT32_MIN;
  else if (wide) t = (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (i128)trunc(x) : (i128)INT64_MIN;
  else t = (x > -2147483649.0 && x < 2147483648.0) ? (i128)trunc(x) : (i128)INT32_MIN;
  return dt_const(d, const_int((int64_t)t));
}

static Const cast_value(Const v, const DType *from, const DType *to) {
  const DType *f = from->scalar, *t = to->scalar;
  if (t == DT_BOOL) return const_bool(dt_is_float(f) ? dt_const_as_double(v, f) != 0 || isnan(dt_const_as_double(v, f))
                                                      : dt_const_as_i128(v, f) != 0);
  if (dt_is_float(f) && dt_is_float(t)) return round_float(t, dt_const_as_double(v, f));
  if (dt_is_float(f)) return float_to_int(dt_const_as_double(v, f), t);
  if (t == DT_FLOAT32) { /* one rounding from the integer, as C converts */
    i128 x = dt_const_as_i128(v, f);
    return const_float(x < 0 ? (float)(int64_t)x : (float)(uint64_t)x);
  }
  if (t == DT_FLOAT64) {
    i128 x = dt_const_as_i128(v, f);
    return const_float(x < 0 ? (double)(int64_t)x : (double)(uint64_t)x);
  }
  return dt_const_from(t, v, f);
}

/* ---- setup ---- */

static uint32_t pos_of(const Interp *in, const UOp *u) {
  void **v = uopmap_get(&in->pos, u);
  return v ? (uint32_t)(uintptr_t)*v - 1 : UINT32_MAX;
}

/* the element count of a PARAM/BUFFER from its concrete size argument (uop/shape.h); -1 when it is not concrete */
static int64_t buffer_numel(const UOp *u) {
  if (u->nsrc == 0) return 1;
  Shape s;
  return uop_as_shape(u->src[0], &s) ? shape_numel(&s) : -1;
}

static tg_status interp_setup(Interp *in, UOp *lin) {
  memset(in, 0, sizeof *in);
  in->lin = lin;
  in->n = lin->nsrc;
  uopmap_init(&in->pos);
  for (uint32_t i = 0; i < in->n; i++) uopmap_put(&in->pos, lin->src[i], (void *)(uintptr_t)(i + 1));
  size_t total = 0;
  for (uint32_t i = 0; i < in->n; i++) total += lin->src[i]->nsrc;
  in->srcpos = tg_calloc(in->n + 1, sizeof(uint32_t));
  in->srcidx = tg_calloc(total ? total : 1, sizeof(uint32_t));
  in->jump = tg_calloc(in->n ? in->n : 1, sizeof(uint32_t));
  in->local = tg_calloc(in->n ? in->n : 1, sizeof(char *));
  in->width = tg_calloc(in->n ? in->n : 1, sizeof(uint32_t));
  ShapeCache shapes;
  shape_cache_init(&shapes);
  bool shapes_ok = true;
  for (uint32_t i = 0; i < in->n; i++) { /* program order: each shape from its sources' memoized ones */
    SymShape sh;
    shapes_ok &= uop_shape_sym_cached(lin->src[i], &shapes, &sh) != SHAPE_ERROR;
    int64_t w = uop_max_numel(lin->src[i], &shapes);
    in->width[i] = (uint32_t)(w > 0 && w <= 4096 ? w : 1);
    bool storage = uop_is(lin->src[i], TG_OP_PARAM) || uop_is(lin->src[i], TG_OP_BUFFER) || uop_is(lin->src[i], TG_OP_AFTER);
    if (w > 4096 && !storage && shapes_ok) {
      shapes_ok = false;
      fail(lin->src[i], "a vector value wider than 4096 lanes");
    }
  }
  shape_cache_free(&shapes);
  if (!shapes_ok) return TG_ERR_UNSUPPORTED;
  for (uint32_t i = 0, k = 0; i < in->n; i++) {
    UOp *u = lin->src[i];
    in->srcpos[i] = k;
    for (uint32_t s = 0; s < u->nsrc; s++) in->srcidx[k++] = pos_of(in, u->src[s]);
    in->srcpos[i + 1] = k;
    in->jump[i] = UINT32_MAX;
  }
  for (uint32_t i = 0; i < in->n; i++) {
    UOp *u = lin->src[i];
    if (u->dtype->count > 1) return fail(u, "vector dtypes not supported yet");
    if (uop_is(u, TG_OP_END) && (u->nsrc < 2 || u->nsrc > 3 || (u->nsrc == 3 && u->src[2]->dtype != DT_BOOL)))
      return fail(u, "an END must close one RANGE (split multi-range ENDs first)");
    if (uop_is(u, TG_OP_END) || uop_is(u, TG_OP_ENDIF)) {
      uint32_t open = u->nsrc >= (uop_is(u, TG_OP_END) ? 2u : 1u) ? in->srcidx[in->srcpos[i] + (uop_is(u, TG_OP_END) ? 1 : 0)]
                                                                   : UINT32_MAX;
      TgOp want = uop_is(u, TG_OP_END) ? TG_OP_RANGE : TG_OP_IF;
      if (open == UINT32_MAX || open >= i || !uop_is(lin->src[open], want)) return fail(u, "does not close a block before it");
      if (in->jump[open] != UINT32_MAX) return fail(u, "a block closed twice");
      in->jump[open] = i;
      in->jump[i] = open;
    }
  }
  for (uint32_t i = 0; i < in->n; i++)
    if ((uop_is(lin->src[i], TG_OP_RANGE) || uop_is(lin->src[i], TG_OP_IF)) && in->jump[i] == UINT32_MAX)
      return fail(lin->src[i], "block never closed");
  return TG_OK;
}

/* a block's memory: its LOCAL buffers and its threads' REG buffers */
static void free_locals(Interp *in) {
  for (uint32_t i = 0; in->local && i < in->n; i++) {
    tg_free(in->local[i]);
    in->local[i] = NULL;
  }
  for (size_t i = 0; i < in->owned.len; i++) tg_free(in->owned.data[i]);
  in->owned.len = 0;
}

static void interp_free(Interp *in) {
  free_locals(in);
  tg_free(in->local);
  tg_free(in->width);
  for (size_t i = 0; i < in->owned.len; i++) tg_free(in->owned.data[i]);
  tg_vec_free(&in->owned);
  uopmap_free(&in->pos);
  tg_free(in->srcpos);
  tg_free(in->srcidx);
  tg_free(in->jump);
}

/* ---- the walk ---- */

static Slot *src_slot(Interp *in, uint32_t i, uint32_t k) {
  uint32_t p = in->srcidx[in->srcpos[i] + k];
  return p == UINT32_MAX ? NULL : &in->slot[p];
}

/* The address of element idx->index + k of the buffer behind an INDEX/SHRINK, bounds-checked. */
static tg_status elem_address(uint32_t i, const UOp *u, const Slot *idx, uint32_t k, const DType *elem, char **addr) {
  if (!idx || !idx->ptr) return fail(u, "access through something that is not an INDEX into a buffer");
  int64_t e = idx->index + (int64_t)k;
  if (e < 0 || (idx->numel >= 0 && e >= idx->numel))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tinygrad.c: interp: %s out of bounds: element %lld of %lld (list position %u)",
                        uop_op_name(uop_op(u)), (long long)e, (long long)idx->numel, i);
  *addr = idx->ptr + e * (int64_t)dt_itemsize(elem);
  return TG_OK;
}

static bool truthy(const Slot *s, const UOp *src) { return s && dt_const_as_i128(s->v, src->dtype) != 0; }

static tg_status step_memory(Interp *in, uint32_t i, UOp *u, void *const *bufs, const int64_t *vals, size_t nparams) {
  Slot *me = &in->slot[i];
  switch (uop_op(u)) {
  case TG_OP_PARAM: {
    if (u->arg.kind != ARG_PARAM) return fail(u, "PARAM without a ParamArg");
    int64_t slot = u->arg.param->slot;
    if (slot < 0 || (size_t)slot >= nparams) return fail(u, "parameter slot outside the arguments given");
    if (u->arg.param->addrspace == ADDR_ALU) {
      if (!vals) return fail(u, "no values given for the Variables");
      me->v = dt_const(u->dtype, const_int(vals[slot]));
      return TG_OK;
    }
    if (!bufs) return fail(u, "no buffers given");
    me->ptr = bufs[slot];
    me->numel = buffer_numel(u);
    if (!me->ptr) return fail(u, "no buffer given for this slot");
    return TG_OK;
  }
  case TG_OP_BUFFER: {
    if (u->arg.kind != ARG_PARAM || u->arg.param->addrspace == ADDR_ALU) return fail(u, "an unbound Variable");
    if (me->ptr) return TG_OK; /* declared once, like the C array */
    int64_t numel = buffer_numel(u);
    if (numel < 0) return fail(u, "register buffer of symbolic size");
    if (u->arg.param->addrspace == ADDR_LOCAL) { /* one per block, poisoned at the block's start */
      if (!in->local[i]) {
        size_t bytes = (size_t)(numel ? numel : 1) * (size_t)dt_itemsize(u->dtype);
        in->local[i] = tg_malloc(bytes);
        memset(in->local[i], 0xff, bytes);
      }
      me->ptr = in->local[i];
      me->numel = numel;
      return TG_OK;
    }
    me->ptr = tg_calloc((size_t)(numel ? numel : 1), (size_t)dt_itemsize(u->dtype));
    me->numel = numel;
    tg_vec_push(&in->owned, me->ptr);
    return TG_OK;
  }
  case TG_OP_AFTER: {
    Slot *s = src_slot(in, i, 0);
    if (!s) return fail(u, "source not in the list");
    me->v = s->v;
    me->ptr = s->ptr;
    me->numel = s->numel;
    me->index = s->index;
    set_width(me, s->lanes ? s->nlanes : 1);
    if (me->lanes) memcpy(me->lanes, s->lanes, s->nlanes * sizeof(Const));
    return TG_OK;
  }
  case TG_OP_INDEX: case TG_OP_SHRINK: {
    Slot *b = src_slot(in, i, 0), *x = u->nsrc >= 2 ? src_slot(in, i, 1) : NULL;
    if (!b || !x || (uop_is(u, TG_OP_INDEX) && u->nsrc != 2) || (uop_is(u, TG_OP_SHRINK) && u->nsrc != 3))
      return fail(u, "only INDEX(buffer, index) and SHRINK(buffer, offset, size) are supported");
    int64_t at = (int64_t)dt_const_as_i128(x->v, u->src[1]->dtype);
    if (!b->ptr) { /* a lane of a vector value */
      if (uop_is(u, TG_OP_SHRINK)) return fail(u, "SHRINK of a value");
      uint32_t n = b->lanes ? b->nlanes : 1;
      if (at < 0 || at >= (int64_t)n) return fail(u, "lane index out of range");
      set_width(me, 1);
      me->v = lane(b, (uint32_t)at);
      return TG_OK;
    }
    me->ptr = b->ptr;
    me->numel = b->numel;
    me->index = at;
    return TG_OK;
  }
  case TG_OP_LOAD: {
    uint32_t w = in->width[i];
    set_width(me, w);
    if (u->nsrc == 3 && !truthy(src_slot(in, i, 2), u->src[2])) {
      Slot *alt = src_slot(in, i, 1);
      if (!alt) return fail(u, "source not in the list");
      me->v = lane(alt, 0);
      for (uint32_t k = 0; me->lanes && k < w; k++) me->lanes[k] = lane(alt, k);
      return TG_OK;
    }
    if (u->nsrc != 1 && u->nsrc != 3) return fail(u, "LOAD with this many sources");
    if (u->dtype != u->src[0]->dtype) return fail(u, "a LOAD that reinterprets its INDEX dtype");
    for (uint32_t k = 0; k < w; k++) {
      char *addr;
      tg_status st = elem_address(i, u, src_slot(in, i, 0), k, u->src[0]->dtype, &addr);
      if (st != TG_OK) return st;
      Const v = read_elem(addr, u->src[0]->dtype);
      if (v.kind == CK_INVALID) return fail(u, "load of this dtype not supported yet");
      if (k == 0) me->v = v;
      if (me->lanes) me->lanes[k] = v;
    }
    return TG_OK;
  }
  case TG_OP_STORE: {
    if (u->nsrc == 3 && !truthy(src_slot(in, i, 2), u->src[2])) return TG_OK;
    if (u->nsrc != 2 && u->nsrc != 3) return fail(u, "STORE with this many sources");
    Slot *val = src_slot(in, i, 1);
    if (!val) return fail(u, "source not in the list");
    uint32_t w = val->lanes ? val->nlanes : 1;
    for (uint32_t k = 0; k < w; k++) {
      char *addr;
      tg_status st = elem_address(i, u, src_slot(in, i, 0), k, u->src[0]->dtype, &addr);
      if (st != TG_OK) return st;
      if (!write_elem(addr, u->src[0]->dtype, lane(val, k))) return fail(u, "store of this dtype not supported yet");
    }
    return TG_OK;
  }
  default: return fail(u, "not a memory op");
  }
}

/* One lane of CAST/BITCAST/ALU on lane values. */
static tg_status scalar_value(UOp *u, uint32_t i, const Const *src, Const *out) {
  TgOp op = uop_op(u);
  if (op == TG_OP_CAST) {
    *out = cast_value(src[0], u->src[0]->dtype, u->dtype);
    return TG_OK;
  }
  if (op == TG_OP_BITCAST) {
    if (dt_itemsize(u->dtype) != dt_itemsize(u->src[0]->dtype)) return fail(u, "bitcast between sizes");
    *out = dt_const_bitcast(src[0], u->src[0]->dtype, u->dtype);
    return out->kind == CK_NONE ? fail(u, "bitcast not supported for these dtypes") : TG_OK;
  }
  if (!op_is_alu(op)) return fail(u, "op not supported by the interpreter yet");
  bool ok;
  *out = exec_alu(u, src, &ok);
  if (!ok)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tinygrad.c: interp: %s %s has no defined value (division by zero, "
                        "negative shift ...) at list position %u", uop_op_name(op), u->dtype->name, i);
  return TG_OK;
}

static tg_status step_value(Interp *in, uint32_t i, UOp *u) {
  Slot *me = &in->slot[i];
  TgOp op = uop_op(u);
  if (op == TG_OP_CONST) {
    if (uop_const_val(u).kind == CK_INVALID) return fail(u, "Invalid reached the kernel");
    me->v = dt_const(u->dtype, uop_const_val(u));
    return TG_OK;
  }
  uint32_t w = in->width[i];
  if (op == TG_OP_STACK) { /* lanes of the sources, in order */
    set_width(me, w);
    uint32_t k = 0;
    for (uint32_t s = 0; s < u->nsrc; s++) {
      Slot *src = src_slot(in, i, s);
      if (!src) return fail(u, "source not in the list");
      uint32_t n = src->lanes ? src->nlanes : 1;
      for (uint32_t j = 0; j < n && k < w; j++, k++) {
        if (k == 0) me->v = lane(src, j);
        if (me->lanes) me->lanes[k] = lane(src, j);
      }
    }
    return TG_OK;
  }
  if (u->nsrc > 3) return fail(u, "too many sources");
  Slot *srcs[3];
  for (uint32_t k = 0; k < u->nsrc; k++)
    if (!(srcs[k] = src_slot(in, i, k))) return fail(u, "source not in the list");
  set_width(me, w);
  for (uint32_t k = 0; k < (w > 1 ? w : 1); k++) {
    Const src[3], r;
    for (uint32_t s = 0; s < u->nsrc; s++) src[s] = lane(srcs[s], k);
    tg_status st = scalar_value(u, i, src, &r);
    if (st != TG_OK) return st;
    if (k == 0) me->v = r;
    if (me->lanes) me->lanes[k] = r;
  }
  return TG_OK;
}

/* SPECIAL gidx<n> / lidx<n> / idx<n>: the running thread's block index, thread index, or flat global id */
static tg_status step_special(Interp *in, uint32_t i, UOp *u) {
  const char *nm = u->arg.kind == ARG_STR ? u->arg.str : "";
  size_t len = strlen(nm);
  int axis = len ? nm[len - 1] - '0' : -1;
  if (axis < 0 || axis > 2) return fail(u, "a SPECIAL that is not gidx/lidx/idx 0..2");
  int64_t v = nm[0] == 'g' ? in->gid[axis] : nm[0] == 'l' ? in->lid[axis] : in->gid[axis] * in->ldim[axis] + in->lid[axis];
  in->slot[i].v = dt_const(u->dtype, const_int(v));
  return TG_OK;
}

/* ---- WMMA: one warp-wide mma of the threads' fragments (tinygrad ops_python's CUDA models). Lane t of a warp holds
 * elements of A (M x K), B (K x N) and C (M x N); for m16n8kK C element e of lane t is row t/4 + (e/2)*8, column
 * e%2 + (t%4)*2, and a / b give the fragment element and the lane that hold A[row][k] and B[k][col]. ---- */

static double as_double(Const c) { return c.kind == CK_FLOAT ? c.f : c.kind == CK_INT ? (double)c.i : (double)c.b; }

typedef struct WmmaLayout { int k; void (*a)(int k, int row, int *elem, int *lane); void (*b)(int k, int col, int *elem, int *lane); } WmmaLayout;
static void a_81616(int k, int row, int *e, int *l) { *e = k % 2 + (row / 8) * 2 + (k / 8) * 4; *l = (k / 2) % 4 + (row % 8) * 4; }
static void b_81616(int k, int col, int *e, int *l) { *e = k % 2 + (k / 8) * 2; *l = (k / 2) % 4 + col * 4; }
static void a_8168(int k, int row, int *e, int *l) { *e = k % 2 + (row / 8) * 2; *l = k / 2 + (row % 8) * 4; }
static void b_8168(int k, int col, int *e, int *l) { *e = k % 2; *l = k / 2 + col * 4; }
static void a_8168_tf32(int k, int row, int *e, int *l) { *e = (k / 4) * 2 + row / 8; *l = k % 4 + (row % 8) * 4; }
static void b_8168_tf32(int k, int col, int *e, int *l) { *e = k / 4; *l = k % 4 + col * 4; }

/* the WMMA at position i for every thread of the block (each thread's slots at slots + t * n) */
static tg_status block_wmma(Interp *in, uint32_t i, Slot *slots, size_t nthreads) {
  UOp *u = in->lin->src[i];
  const int64_t *a = u->arg.ints;
  const DType *din = &tg_dtype_table[a[3]], *dout = &tg_dtype_table[a[4]];
  WmmaLayout lay;
  if (a[0] == 8 && a[1] == 16 && a[2] == 16) lay = (WmmaLayout){16, a_81616, b_81616};
  else if (a[0] == 8 && a[1] == 16 && a[2] == 8 && din == DT_FLOAT32) lay = (WmmaLayout){8, a_8168_tf32, b_8168_tf32};
  else if (a[0] == 8 && a[1] == 16 && a[2] == 8) lay = (WmmaLayout){8, a_8168, b_8168};
  else return fail(u, "a tensor core shape the emulator has no model of");
  if (nthreads % 32) return fail(u, "a block that is not whole warps");
  Slot **src = tg_malloc(nthreads * 3 * sizeof(Slot *));
  for (size_t t = 0; t < nthreads; t++) {
    in->slot = slots + t * in->n;
    for (uint32_t k = 0; k < 3; k++) src[t * 3 + k] = src_slot(in, i, k);
    if (!src[t * 3] || !src[t * 3 + 1] || !src[t * 3 + 2]) {
      tg_free(src);
      return fail(u, "source not in the list");
    }
  }
  for (size_t t = 0; t < nthreads; t++) {
    size_t goff = t / 32 * 32;
    int lane_id = (int)(t % 32);
    Slot *me = &slots[t * in->n + i];
    set_width(me, 4);
    for (int e = 0; e < 4; e++) {
      int col = e % 2 + (lane_id % 4) * 2, row = lane_id / 4 + (e / 2) * 8;
      double acc = as_double(lane(src[t * 3 + 2], (uint32_t)e));
      for (int k = 0; k < lay.k; k++) {
        int ae, al, be, bl;
        lay.a(k, row, &ae, &al);
        lay.b(k, col, &be, &bl);
        acc += as_double(lane(src[(goff + (size_t)al) * 3], (uint32_t)ae)) *
               as_double(lane(src[(goff + (size_t)bl) * 3 + 1], (uint32_t)be));
      }
      me->lanes[e] = round_float(dout, acc);
      if (e == 0) me->v = me->lanes[0];
    }
  }
  tg_free(src);
  return TG_OK;
}

/* Run the current thread from *pc up to its next BARRIER (*pc left on it) or the end (*pc = n). */
static tg_status run_thread(Interp *in, uint32_t *pc, void *const *bufs, const int64_t *vals, size_t nparams) {
  tg_status st = TG_OK;
  UOp *linear = in->lin;
  for (uint32_t i = *pc; st == TG_OK && i < in->n;) {
    UOp *u = linear->src[i];
    Slot *me = &in->slot[i];
    switch (uop_op(u)) {
    case TG_OP_BARRIER: case TG_OP_WMMA: /* a WMMA is computed for the whole block once all threads are there */
      *pc = i; /* arrived: wait for the block, which steps every thread past it (two in a row are two stops) */
      return TG_OK;
    case TG_OP_SINK: case TG_OP_NOOP: case TG_OP_GROUP: case TG_OP_ENDIF: i++; break;
    case TG_OP_SPECIAL: st = step_special(in, i, u); i++; break;
    case TG_OP_PARAM: case TG_OP_BUFFER: case TG_OP_AFTER: case TG_OP_INDEX: case TG_OP_SHRINK: case TG_OP_LOAD:
    case TG_OP_STORE:
      st = step_memory(in, i, u, bufs, vals, nparams);
      i++;
      break;
    case TG_OP_RANGE: {
      me->v = dt_const(u->dtype == DT_VOID ? DT_INT64 : u->dtype, const_int(0));
      if (u->dtype != DT_VOID) {
        Slot *end = src_slot(in, i, 0);
        if (!end) { st = fail(u, "end not in the list"); break; }
        me->numel = (int64_t)dt_const_as_i128(end->v, u->src[0]->dtype);
        if (me->numel <= 0) { i = in->jump[i] + 1; break; }
      }
      i++;
      break;
    }
    case TG_OP_END: {
      uint32_t r = in->jump[i];
      Slot *rs = &in->slot[r];
      UOp *rng = linear->src[r];
      if (u->nsrc == 3 && !truthy(src_slot(in, i, 2), u->src[2])) { i++; break; }
      if (rng->dtype == DT_VOID) { i = r + 1; break; }
      int64_t next = (int64_t)dt_const_as_i128(rs->v, rng->dtype) + 1;
      rs->v = dt_const(rng->dtype, const_int(next));
      i = next < rs->numel ? r + 1 : i + 1;
      break;
    }
    case TG_OP_IF:
      i = truthy(src_slot(in, i, 0), u->src[0]) ? i + 1 : in->jump[i] + 1;
      break;
    default:
      st = step_value(in, i, u);
      i++;
      break;
    }
  }
  if (st == TG_OK) *pc = in->n;
  return st;
}

/* A kernel's grid (blocks) and block (threads): render_launch_bounds, an idx SPECIAL counting blocks of one thread; a
 * symbolic bound evaluated with the Variable PARAMs' values (vals[slot]) */
static tg_status launch_dims(UOp *linear, const int64_t *vals, size_t nparams, int64_t global[3], int64_t local[3]) {
  UOp *gb[3], *lb[3];
  if (!render_launch_bounds(linear, gb, lb)) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
  const char *names[64];
  int64_t values[64];
  size_t n = 0;
  for (uint32_t i = 0; i < linear->nsrc && n < 64; i++) {
    const UOp *u = linear->src[i];
    if (!uop_is(u, TG_OP_PARAM) || u->arg.kind != ARG_PARAM || u->arg.param->addrspace != ADDR_ALU) continue;
    int64_t slot = u->arg.param->slot;
    if (!vals || slot < 0 || (size_t)slot >= nparams) continue;
    names[n] = u->arg.param->name, values[n++] = vals[slot];
  }
  for (int i = 0; i < 6; i++) {
    UOp *b = i < 3 ? gb[i] : lb[i - 3];
    int64_t *d = i < 3 ? &global[i] : &local[i - 3];
    *d = 1;
    tg_status st = b ? render_launch_eval(b, names, values, n, d) : TG_OK;
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

static tg_status check_block(const int64_t local[3]) {
  int64_t threads = local[0] * local[1] * local[2];
  if (threads > 1024 || threads <= 0)
    return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: interp: a block of %lld threads (at most 1024)", (long long)threads);
  return TG_OK;
}

tg_status interp_run(UOp *linear, void *const *bufs, const int64_t *vals, size_t nparams) {
  if (!linear || !uop_is(linear, TG_OP_LINEAR))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "interp_run: expected a LINEAR from cg_linearize");
  int64_t global[3], local[3];
  tg_status st = launch_dims(linear, vals, nparams, global, local);
  if (st == TG_OK && (global[0] == 0 || global[1] == 0 || global[2] == 0)) return TG_OK; /* a Variable's extent of 0 */
  return st == TG_OK ? interp_run_launch(linear, bufs, vals, nparams, global, local) : st;
}

tg_status interp_run_launch(UOp *linear, void *const *bufs, const int64_t *vals, size_t nparams, const int64_t global[3],
                            const int64_t local[3]) {
  if (!linear || !uop_is(linear, TG_OP_LINEAR))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "interp_run: expected a LINEAR from cg_linearize");
  for (int k = 0; k < 3; k++)
    if (global[k] < 1) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "interp_run: a grid of %lld blocks", (long long)global[k]);
  tg_status st = check_block(local);
  if (st != TG_OK) return st;
  Interp in;
  st = interp_setup(&in, linear);
  size_t nthreads = (size_t)(local[0] * local[1] * local[2]);
  Slot *slots = tg_calloc(nthreads * (in.n ? in.n : 1), sizeof(Slot));
  uint32_t *pcs = tg_calloc(nthreads, sizeof(uint32_t));
  for (int i = 0; i < 3; i++) in.ldim[i] = local[i];
  for (int64_t gz = 0; st == TG_OK && gz < global[2]; gz++)
    for (int64_t gy = 0; st == TG_OK && gy < global[1]; gy++)
      for (int64_t gx = 0; st == TG_OK && gx < global[0]; gx++) {
        in.gid[0] = gx, in.gid[1] = gy, in.gid[2] = gz;
        free_locals(&in);
        for (size_t t = 0; t < nthreads; t++) { /* fresh registers per block, as a new launch of its threads */
          pcs[t] = 0;
          for (uint32_t k = 0; k < in.n; k++) slots[t * in.n + k].ptr = NULL;
        }
        for (;;) { /* each thread up to the block's next BARRIER */
          for (size_t t = 0; st == TG_OK && t < nthreads; t++) {
            in.lid[0] = (int64_t)t % local[0], in.lid[1] = (int64_t)t / local[0] % local[1];
            in.lid[2] = (int64_t)t / (local[0] * local[1]);
            in.slot = slots + t * in.n;
            st = run_thread(&in, &pcs[t], bufs, vals, nparams);
          }
          if (st != TG_OK) break;
          bool diverged = false;
          for (size_t t = 1; t < nthreads; t++) diverged |= pcs[t] != pcs[0];
          if (diverged) {
            st = tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: interp: the threads of a block reach different BARRIERs "
                              "(positions %u and others)", pcs[0]);
            break;
          }
          if (pcs[0] >= in.n) break;
          if (uop_is(in.lin->src[pcs[0]], TG_OP_WMMA) && (st = block_wmma(&in, pcs[0], slots, nthreads)) != TG_OK) break;
          for (size_t t = 0; t < nthreads; t++) pcs[t]++; /* past the BARRIER (or the WMMA) */
        }
      }
  for (size_t k = 0; k < nthreads * in.n; k++) tg_free(slots[k].lanes);
  tg_free(slots);
  tg_free(pcs);
  in.slot = NULL;
  interp_free(&in);
  return st;
}
