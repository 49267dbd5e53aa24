/* ggml_quants.c — ggml's tensor types: the table of ids, names and block sizes, and dequantization written as
 * tensor ops on the raw bytes (tinygrad's llm/gguf.py ggml_data_to_tensor), so that it fuses into its consumer.
 *
 * Every format reads only uint8 elements: a field of several bytes is assembled with casts, shifts and ORs, then
 * reinterpreted by a same-size bitcast (uint16 -> half, uint32 -> float), which is elementwise. Nibbles and bit
 * fields are picked by broadcasting the byte against a small shift pattern (an arange) and masking. No step
 * needs a contiguous copy, so the whole expression is index math plus ALU inside the kernel that reads the weight
 * (a matmul with a Q8_0 weight is one kernel). The formulas follow ggml's reference dequantize_row_* (ggml-quants.c;
 * the block layouts of ggml-common.h); the products are exact in float32 before the last add, so the results are
 * ggml's bit for bit. */
#include "nn/nn.h"

/* ------------------------------------------------------------------------------------------------- the table */

typedef struct GgmlType { int id; const char *name; int64_t block, bytes; } GgmlType;

/* every current ggml type (ids 4, 5 and 31-33, 36-38 were removed from ggml) */
static const GgmlType ggml_types[] = {
  {0, "f32", 1, 4},          {1, "f16", 1, 2},         {2, "q4_0", 32, 18},     {3, "q4_1", 32, 20},
  {6, "q5_0", 32, 22},       {7, "q5_1", 32, 24},      {8, "q8_0", 32, 34},     {9, "q8_1", 32, 36},
  {10, "q2_K", 256, 84},     {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},  {13, "q5_K", 256, 176},
  {14, "q6_K", 256, 210},    {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
  {18, "iq3_xxs", 256, 98},  {19, "iq1_s", 256, 50},   {20, "iq4_nl", 32, 18},  {21, "iq3_s", 256, 110},
  {22, "iq2_s", 256, 82},    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},        {25, "i16", 1, 2},
  {26, "i32", 1, 4},         {27, "i64", 1, 8},        {28, "f64", 1, 8},       {29, "iq1_m", 256, 56},
  {30, "bf16", 1, 2},        {34, "tq1_0", 256, 54},   {35, "tq2_0", 256, 66},  {39, "mxfp4", 32, 17},
};

static const GgmlType *ggml_type(int id) {
  for (size_t i = 0; i < TG_ARRAY_LEN(ggml_types); i++)
    if (ggml_types[i].id == id) return &ggml_types[i];
  return NULL;
}

const char *tg_ggml_type_name(int type) {
  const GgmlType *t = ggml_type(type);
  return t ? t->name : NULL;
}

bool tg_ggml_type_block(int type, int64_t *block_elems, int64_t *block_bytes) {
  const GgmlType *t = ggml_type(type);
  if (!t) return false;
  if (block_elems) *block_elems = t->block;
  if (block_bytes) *block_bytes = t->bytes;
  return true;
}

/* ------------------------------------------------------------------------------------------------- helpers */

/* bytes [a, b) of every block: (nblocks, b - a) uint8 */
static tg_tensor *cols(const tg_tensor *blocks, int64_t a, int64_t b) {
  int64_t bounds[4] = {0, tg_size(blocks, 0), a, b};
  return tg_shrink(blocks, bounds, 2);
}

static tg_tensor *ci(int64_t v) { return tg_const_int(v); }
static tg_tensor *shr(const tg_tensor *x, int64_t n) { return tg_rshift(x, ci(n)); }
static tg_tensor *mask(const tg_tensor *x, int64_t m) { return tg_bitwise_and(x, ci(m)); }
static tg_tensor *to_f32(const tg_tensor *x) { return tg_cast(x, TG_FLOAT32); }

/* the little-endian f16 at byte c of every block, as float32: (nblocks, 1) */
static tg_tensor *f16_at(const tg_tensor *blocks, int64_t c) {
  tg_tensor *lo = tg_cast(cols(blocks, c, c + 1), TG_UINT16), *hi = tg_cast(cols(blocks, c + 1, c + 2), TG_UINT16);
  return to_f32(tg_bitcast(tg_bitwise_or(lo, tg_lshift(hi, ci(8))), TG_FLOAT16));
}

/* a shift pattern start, start+step, ... (n values) as a uint8 tensor of `shape` (broadcasts against the bytes) */
static tg_tensor *shifts(int64_t start, int64_t step, int64_t n, const int64_t *shape, size_t ndim) {
  return tg_reshape(tg_arange((double)start, (double)(start + step * n), (double)step, TG_UINT8), shape, ndim);
}

/* 32-element blocks of nibbles (Q4_0, Q4_1, MXFP4): the 16 bytes qs give y[j] = qs[j] & 15, y[j+16] = qs[j] >> 4.
 * Returns (nblocks, 32) uint8. */
static tg_tensor *nibbles32(const tg_tensor *qs) {
  const tg_tensor *halves[2] = {mask(qs, 15), shr(qs, 4)};
  return tg_cat(halves, 2, 1);
}

/* ------------------------------------------------------------------------------------------------- formats */

/* Q8_0: d f16 @0, qs int8[32] @2; y = qs * d */
static tg_tensor *deq_q8_0(const tg_tensor *b) {
  return tg_mul(to_f32(tg_bitcast(cols(b, 2, 34), TG_INT8)), f16_at(b, 0));
}

/* Q4_0: d f16 @0, qs[16] @2; y = (nibble - 8) * d */
static tg_tensor *deq_q4_0(const tg_tensor *b) {
  return tg_mul(tg_sub(to_f32(nibbles32(cols(b, 2, 18))), tg_const_float(8.0)), f16_at(b, 0));
}

/* Q4_1: d f16 @0, m f16 @2, qs[16] @4; y = nibble * d + m */
static tg_tensor *deq_q4_1(const tg_tensor *b) {
  return tg_add(tg_mul(to_f32(nibbles32(cols(b, 4, 20))), f16_at(b, 0)), f16_at(b, 2));
}

/* MXFP4: e (E8M0) @0, qs[16] @1; y = kvalues_mxfp4[nibble] * 2^(e-128) with kvalues the doubled E2M1 grid
 * {0,1,2,3,4,6,8,12} and the sign in bit 3. The scale's float bits: e < 2 gives the denormals 0x00200000 << e, else
 * (e - 1) << 23. The grid value of m = code & 7 with exponent field m >> 1 and mantissa bit m & 1: m itself for
 * m < 2, else (2 + (m & 1)) << ((m >> 1) - 1). */
static tg_tensor *deq_mxfp4(const tg_tensor *b) {
  tg_tensor *e = tg_cast(cols(b, 0, 1), TG_UINT32);
  tg_tensor *small = tg_lshift(ci(0x00200000), e);
  tg_tensor *bits = tg_where(tg_lt(e, ci(2)), small, tg_lshift(tg_sub(e, ci(1)), ci(23)));
  tg_tensor *d = tg_bitcast(bits, TG_FLOAT32);
  /* int32 arithmetic: the C renderer does not wrap uint8 sums that feed a shift (x - 1 becomes x + 255) */
  tg_tensor *code = nibbles32(cols(b, 1, 17)), *m = tg_cast(mask(code, 7), TG_INT32);
  tg_tensor *exp_m1 = tg_sub(tg_maximum(shr(m, 1), ci(1)), ci(1)); /* (m >> 1) - 1, kept >= 0 where m < 2 */
  tg_tensor *normal = tg_lshift(tg_bitwise_or(mask(m, 1), ci(2)), exp_m1);
  tg_tensor *mag = tg_where(tg_lt(m, ci(2)), m, normal);
  /* the sign in integer arithmetic: code 8 is ggml's integer 0, so +0.0 (not -0.0) times d */
  tg_tensor *val = to_f32(tg_where(tg_ge(code, ci(8)), tg_neg(mag), mag));
  return tg_mul(val, d);
}

/* the 6-bit scales and mins of a K-quant block (get_scale_min_k4) from its 12 scale bytes s: j < 4: sc = s[j] & 63,
 * m = s[j+4] & 63; j >= 4: sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4, m = (s[j+4] >> 4) | (s[j] >> 6) << 4.
 * Both (nblocks, 8, 1) float32. */
static void k_scales(const tg_tensor *s, tg_tensor **sc, tg_tensor **mn) {
  int64_t nb = tg_size(s, 0);
  tg_tensor *s0 = cols(s, 0, 4), *s4 = cols(s, 4, 8), *s8 = cols(s, 8, 12);
  tg_tensor *sc_hi = tg_bitwise_or(mask(s8, 15), tg_lshift(shr(s0, 6), ci(4)));
  tg_tensor *mn_hi = tg_bitwise_or(shr(s8, 4), tg_lshift(shr(s4, 6), ci(4)));
  const tg_tensor *sc_parts[2] = {mask(s0, 63), sc_hi}, *mn_parts[2] = {mask(s4, 63), mn_hi};
  *sc = tg_reshape(to_f32(tg_cat(sc_parts, 2, 1)), TG_SHAPE(nb, 8, 1));
  *mn = tg_reshape(to_f32(tg_cat(mn_parts, 2, 1)), TG_SHAPE(nb, 8, 1));
}

/* the 4-bit values of Q4_K / Q5_K: 128 bytes in 4 chunks of 32; chunk c's low nibbles are sub-block 2c, its high
 * nibbles sub-block 2c+1. (nblocks, 8, 32) uint8. */
static tg_tensor *k_nibbles(const tg_tensor *qs) {
  int64_t nb = tg_size(qs, 0);
  tg_tensor *x = tg_expand(tg_reshape(qs, TG_SHAPE(nb, 4, 1, 32)), TG_SHAPE(nb, 4, 2, 32));
  return tg_reshape(mask(tg_rshift(x, shifts(0, 4, 2, TG_SHAPE(1, 1, 2, 1))), 15), TG_SHAPE(nb, 8, 32));
}

/* Q4_K: d @0, dmin @2, scales[12] @4, qs[128] @16; y = d * sc * q - dmin * m per sub-block of 32.
 * Q5_K: the same with qh[32] @16 and qs @48; sub-block k adds 16 when bit k of qh[l] is set. */
static tg_tensor *deq_k45(const tg_tensor *b, bool five) {
  int64_t nb = tg_size(b, 0);
  tg_tensor *d = tg_reshape(f16_at(b, 0), TG_SHAPE(nb, 1, 1)), *dmin = tg_reshape(f16_at(b, 2), TG_SHAPE(nb, 1, 1));
  tg_tensor *sc, *mn;
  k_scales(cols(b, 4, 16), &sc, &mn);
  tg_tensor *q = k_nibbles(cols(b, five ? 48 : 16, five ? 176 : 144));
  if (five) {
    tg_tensor *qh = tg_expand(tg_reshape(cols(b, 16, 48), TG_SHAPE(nb, 1, 32)), TG_SHAPE(nb, 8, 32));
    tg_tensor *bit = mask(tg_rshift(qh, shifts(0, 1, 8, TG_SHAPE(1, 8, 1))), 1);
    q = tg_bitwise_or(q, tg_lshift(bit, ci(4)));
  }
  tg_tensor *y = tg_sub(tg_mul(tg_mul(d, sc), to_f32(q)), tg_mul(dmin, mn));
  return tg_reshape(y, TG_SHAPE(nb, 256));
}

/* Q6_K: ql[128] @0, qh[64] @128, scales int8[16] @192, d f16 @208. Output 128*n + 32*g + l (half n, group g = 2*gh
 * + gl, l < 32) takes the low (gh = 0) or high (gh = 1) nibble of ql[64n + 32gl + l], bits 2g..2g+1 of qh[32n + l]
 * as bits 4-5, minus 32, times scale (128n + 32g + l) / 16 and d. */
static tg_tensor *deq_q6_k(const tg_tensor *b) {
  int64_t nb = tg_size(b, 0);
  tg_tensor *ql = tg_expand(tg_reshape(cols(b, 0, 128), TG_SHAPE(nb, 2, 1, 2, 32)), TG_SHAPE(nb, 2, 2, 2, 32));
  tg_tensor *lo = mask(tg_rshift(ql, shifts(0, 4, 2, TG_SHAPE(1, 1, 2, 1, 1))), 15);
  tg_tensor *qh = tg_expand(tg_reshape(cols(b, 128, 192), TG_SHAPE(nb, 2, 1, 1, 32)), TG_SHAPE(nb, 2, 2, 2, 32));
  tg_tensor *hi = tg_lshift(mask(tg_rshift(qh, shifts(0, 2, 4, TG_SHAPE(1, 1, 2, 2, 1))), 3), ci(4));
  tg_tensor *q = tg_sub(to_f32(tg_reshape(tg_bitwise_or(lo, hi), TG_SHAPE(nb, 16, 16))), tg_const_float(32.0));
  tg_tensor *sc = to_f32(tg_reshape(tg_bitcast(cols(b, 192, 208), TG_INT8), TG_SHAPE(nb, 16, 1)));
  tg_tensor *d = tg_reshape(f16_at(b, 208), TG_SHAPE(nb, 1, 1));
  return tg_reshape(tg_mul(tg_mul(d, sc), q), TG_SHAPE(nb, 256));
}

/* ------------------------------------------------------------------------------------------------- entry */

tg_tensor *tg_ggml_dequantize(const tg_tensor *raw, int type, const int64_t *shape, size_t ndim) {
  if (!raw) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: NULL tensor");
    return NULL;
  }
  const GgmlType *t = ggml_type(type);
  if (!t) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: %d is not a ggml type", type); return NULL; }
  if (tg_get_dtype(raw) != TG_UINT8) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: raw bytes must be uint8, not %s",
                 tg_dtype_name(tg_get_dtype(raw)));
    return NULL;
  }
  if (ndim > TG_MAX_DIMS || (ndim && !shape)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: bad shape (%zu dims)", ndim);
    return NULL;
  }
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 0 || (shape[i] && numel > INT64_MAX / shape[i])) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: bad shape size %lld", (long long)shape[i]);
      return NULL;
    }
    numel *= shape[i];
  }
  int64_t last = ndim ? shape[ndim - 1] : 1;
  if (last % t->block) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: %s needs the last size (%lld) to be a multiple of %lld",
                 t->name, (long long)last, (long long)t->block);
    return NULL;
  }
  int64_t nb = numel / t->block;
  if (tg_numel(raw) != nb * t->bytes) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_ggml_dequantize: %lld %s elements need %lld bytes, raw has %lld",
                 (long long)numel, t->name, (long long)(nb * t->bytes), (long long)tg_numel(raw));
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *r = NULL;
  tg_tensor *blocks = tg_reshape(raw, TG_SHAPE(nb, t->bytes));
  switch (type) {
    case TG_GGML_F32: r = tg_bitcast(tg_contiguous(blocks), TG_FLOAT32); break;
    case TG_GGML_F16: r = tg_bitcast(tg_contiguous(blocks), TG_FLOAT16); break;
    case TG_GGML_BF16: r = tg_bitcast(tg_contiguous(blocks), TG_BFLOAT16); break;
    case TG_GGML_Q8_0: r = deq_q8_0(blocks); break;
    case TG_GGML_Q4_0: r = deq_q4_0(blocks); break;
    case TG_GGML_Q4_1: r = deq_q4_1(blocks); break;
    case TG_GGML_Q4_K: r = deq_k45(blocks, false); break;
    case TG_GGML_Q5_K: r = deq_k45(blocks, true); break;
    case TG_GGML_Q6_K: r = deq_q6_k(blocks); break;
    case TG_GGML_MXFP4: r = deq_mxfp4(blocks); break;
    default:
      tg_scope_end(s);
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: dequantizing ggml type %s is not supported yet", t->name);
      return NULL;
  }
  return nn_finish(s, tg_reshape(r, shape, ndim));
}
