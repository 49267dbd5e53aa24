/* ggml_qdot.c — a Linear over Q4_0 / Q8_0 weights with 8-bit activations, as ggml computes it on the CPU
 * (ggml_vec_dot_q4_0_q8_0, ggml_vec_dot_q8_0_q8_0), written as tensor ops:
 *
 *   1. the activation row is quantized once per call to blocks of 32 int8 (quantize_row_q8_0): d = max|x| / 127 per
 *      block, q = round(x / d) (half to even, as ggml's SIMD path rounds), and d kept as float16, as Q8_0 stores it;
 *   2. per block and weight row an int32 dot product of the weight's unsigned bytes with q, plus a per-lane
 *      correction (Q4_0: the nibbles are n + 8, so -8 * sum(q); Q8_0: the signed bytes are read as w + 128 (w ^ 0x80),
 *      so -128 * sum(q)), then one float multiply by d_w * d_x and a float sum over the blocks.
 *
 * The 32 elements of a block are laid out (2, 4, 4): half h, lane l, byte k, element 16h + 4l + k (for Q4_0 byte 4l + k
 * of the block's 16, low nibble for h = 0, high for h = 1). The int reduce is over (h, k) and leaves 4 lanes per block,
 * each the dot of 4 consecutive bytes twice: the shape of one 128-bit vpdpbusd step (unsigned x signed bytes, four
 * products into each int32 lane), which codegen renders where the CPU has AVX-VNNI (cg_vectorize.c). The lanes are
 * summed in float with the blocks, as ggml's vector accumulators do. Results differ from the float path by the
 * activation rounding, like ggml's. */
#include "nn/nn.h"

static tg_tensor *ci(int64_t v) { return tg_const_int(v); }

bool nn_qdot_supported(int type) { return type == TG_GGML_Q4_0 || type == TG_GGML_Q8_0; }

/* The int8 activation is stored in groups of QX_GROUP blocks, half-major: (M, nb / 4, half, block of the group, 16
 * bytes), so the 16 bytes of one half of 4 consecutive blocks are 64 contiguous bytes. The CPU heuristic's
 * cpu_int8_dot steps over 4 blocks at a time with the half unrolled, so each 512-bit vpdpbusd operand is then one
 * load; in ggml's (M, nb, 32) order it is 4 loads of 16 bytes at a stride of 32 and 3 inserts, 18 of the step's ~37
 * instructions (1B llama Q4_0 2048->8192, clang 14 -O2). QDOT_GROUP=0 keeps ggml's order; rows of a block count
 * that 4 does not divide keep it too. The layout is visible to nn_qdot_linear by xq's last size (16 grouped, 4 not). */
#define QX_GROUP 4

static bool qx_grouped(int64_t nb) { return nb % QX_GROUP == 0 && tg_getenv_int("QDOT_GROUP", 1) != 0; }

/* rows of nb 32-byte blocks (rows, nb, 32), stored half-major: (rows, nb / 4, half, block of the group, 16) */
static tg_tensor *half_major(const tg_tensor *blocks, int64_t rows, int64_t nb) {
  tg_tensor *g = tg_reshape(blocks, TG_SHAPE(rows, nb / QX_GROUP, QX_GROUP, 2, 16));
  return tg_contiguous(tg_permute(g, (const int[]){0, 1, 3, 2, 4}, 5));
}

/* xq as (M, nb, 2, 4, 4) blocks, whatever its stored order */
static tg_tensor *qx_blocks(const tg_tensor *xq, int64_t M, int64_t nb) {
  if (tg_ndim(xq) != 5 || tg_size(xq, 4) != 16) return tg_reshape(xq, TG_SHAPE(M, nb, 2, 4, 4));
  tg_tensor *g = tg_reshape(xq, TG_SHAPE(M, nb / QX_GROUP, 2, QX_GROUP, 4, 4));
  return tg_reshape(tg_permute(g, (const int[]){0, 1, 3, 2, 4, 5}, 6), TG_SHAPE(M, nb, 2, 4, 4));
}

/* bytes [a, b) of every block (N, nb, bytes) */
static tg_tensor *block_cols(const tg_tensor *b, int64_t a, int64_t e) {
  int64_t bounds[6] = {0, tg_size(b, 0), 0, tg_size(b, 1), a, e};
  return tg_shrink(b, bounds, 3);
}

/* The weight repacked once at load: ggml's blocks are 18 (Q4_0) or 34 (Q8_0) bytes, a float16 scale then the quants,
 * so the quants of 4 consecutive blocks are 4 loads at a stride of 18 and each scale two byte loads joined by a shift
 * and an or (14 of the 28 instructions of a Q4_0 step of 4 blocks, clang 14 -O2). Split into the quants (N, nb * 16 or
 * 32) and the scales (N, nb) float16, 4 blocks' quants are one 64-byte load and their scales one 8-byte load; the bytes
 * are the same (no dequantized copy). Q8_0's quants are stored half-major in groups of 4 blocks as the activation is
 * ((N, nb / 4, half, block, 16), where 4 divides the row's blocks and QDOT_GROUP is on), so the weight operand of each
 * 512-bit vpdpbusd is one 64-byte load too, not 4 of 16 bytes at a stride of 32 and 3 inserts (Q4_0's nibble bytes
 * already are: byte k of a block holds elements k and 16 + k).
 *
 * Long rows are stored in column chunks of QDOT_CHUNK (2048) elements, chunk-major: quants (C, N, K / C bytes-per-
 * element) and scales (C, N, nb / C). A matvec then runs chunk by chunk over all its rows, so the part of the int8
 * activation a row reads (2 KB, and its 0.25 KB of corrections) stays in L1 while the weight streams past it; over a
 * whole 8192-long row (8 + 4 KB) the stream evicted it: the 1B llama's 2048 x 8192 down projection read 21-25 GB/s in
 * the decode where the 8192 x 2048 gate read 31-34 (DEBUG=2, 2 threads; an isolated kernel with the same 8192-long row
 * but a 2 KB activation: 42-46 GB/s against 35-38). nn_qdot_linear sums the C partial products in a second kernel. */
static int64_t qdot_chunks(int64_t K) {
  int64_t chunk = tg_getenv_int("QDOT_CHUNK", 2048);
  if (chunk <= 0 || K <= chunk || K % chunk || chunk % (32 * QX_GROUP)) return 1;
  return K / chunk;
}

tg_status nn_qdot_pack(const tg_tensor *raw, int type, int64_t n_out, tg_tensor **qs, tg_tensor **d) {
  int64_t bytes = type == TG_GGML_Q4_0 ? 18 : 34, n = raw ? tg_numel(raw) : 0;
  *qs = *d = NULL;
  if (!nn_qdot_supported(type) || !raw || tg_get_dtype(raw) != TG_UINT8 || n_out <= 0 || n % (n_out * bytes)) {
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "nn_qdot_pack: %s weight of %lld %s does not split into %lld rows of "
                        "%lld-byte blocks", tg_ggml_type_name(type) ? tg_ggml_type_name(type) : "?", (long long)n,
                        raw ? tg_dtype_name(tg_get_dtype(raw)) : "(null)", (long long)n_out, (long long)bytes);
  }
  int64_t nb = n / (n_out * bytes), C = qdot_chunks(nb * 32), nbc = nb / C;
  tg_scope s = tg_scope_begin();
  tg_tensor *b = tg_reshape(raw, TG_SHAPE(n_out, C, nbc, bytes));
  b = tg_reshape(tg_permute(b, (const int[]){1, 0, 2, 3}, 4), TG_SHAPE(C * n_out, nbc, bytes)); /* chunk-major */
  bool grouped = type == TG_GGML_Q8_0 && qx_grouped(nbc); /* Q8_0 quants half-major, as the activation's */
  tg_tensor *q = block_cols(b, 2, bytes);
  q = grouped ? tg_reshape(half_major(q, C * n_out, nbc), TG_SHAPE(C, n_out, nbc / QX_GROUP, QX_GROUP * 32))
              : tg_contiguous(tg_reshape(q, TG_SHAPE(C, n_out, nbc * (bytes - 2))));
  tg_tensor *lo = tg_cast(block_cols(b, 0, 1), TG_UINT16), *hi = tg_cast(block_cols(b, 1, 2), TG_UINT16);
  tg_tensor *sc = tg_contiguous(tg_reshape(tg_bitcast(tg_bitwise_or(lo, tg_lshift(hi, ci(8))), TG_FLOAT16),
                                           TG_SHAPE(C, n_out, nbc)));
  if (C == 1 && !grouped && q && sc)
    q = tg_reshape(q, TG_SHAPE(n_out, nbc * (bytes - 2))), sc = tg_reshape(sc, TG_SHAPE(n_out, nbc));
  tg_tensor *both[2] = {q, sc};
  if (!q || !sc || tg_realize_many(both, 2) != TG_OK) {
    tg_scope_end(s);
    return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
  }
  *qs = tg_scope_keep(q), *d = tg_scope_keep(sc);
  tg_scope_end(s);
  return TG_OK;
}

tg_status nn_qdot_quantize(const tg_tensor *x, int type, tg_tensor **xq, tg_tensor **dx, tg_tensor **xc) {
  int nd = tg_ndim(x);
  int64_t K = nd ? tg_size(x, nd - 1) : 0, M = K ? tg_numel(x) / K : 0, nb = K / 32;
  if (!nn_qdot_supported(type) || K % 32 || tg_get_dtype(x) != TG_FLOAT32) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "nn_qdot_quantize: needs float32 rows of a multiple of 32 (got %lld, %s) "
                 "and a Q4_0 or Q8_0 weight (%s)", (long long)K, tg_dtype_name(tg_get_dtype(x)),
                 tg_ggml_type_name(type) ? tg_ggml_type_name(type) : "?");
    return TG_ERR_INVALID_ARGUMENT;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *xb = tg_reshape(x, TG_SHAPE(M, nb, 2, 4, 4));
  tg_tensor *amax = tg_max(tg_abs(xb), TG_AXES(2, 3, 4), true); /* (M, nb, 1, 1, 1) */
  tg_tensor *d = tg_div(amax, tg_const_float(127.0));
  tg_tensor *id = tg_where(tg_gt(d, tg_const_float(0.0)), tg_div(tg_const_float(1.0), d), tg_const_float(0.0));
  tg_tensor *q = tg_cast(tg_round(tg_mul(xb, id)), TG_INT8), *qb;
  q = qx_grouped(nb) ? half_major(q, M, nb) : tg_contiguous(q); /* (M, nb / 4, 2, 4, 16) or (M, nb, 2, 4, 4) */
  qb = q ? qx_blocks(q, M, nb) : NULL;
  tg_tensor *dh = tg_contiguous(tg_cast(tg_cast(d, TG_FLOAT16), TG_FLOAT32));
  int64_t off = type == TG_GGML_Q4_0 ? -8 : -128;
  tg_tensor *c = tg_contiguous(tg_mul(tg_sum(tg_cast(qb, TG_INT32), TG_AXES(2, 4), true), ci(off))); /* (M,nb,1,4,1) */
  if (!q || !dh || !c) {
    tg_scope_end(s);
    return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
  }
  *xq = tg_scope_keep(q), *dx = tg_scope_keep(dh), *xc = tg_scope_keep(c); /* to the caller's scope */
  tg_scope_end(s);
  return TG_OK;
}

tg_tensor *nn_qdot_linear(const tg_tensor *x, const tg_tensor *xq, const tg_tensor *dx, const tg_tensor *xc,
                          const tg_tensor *qs, const tg_tensor *d, int type, int64_t n_out) {
  int nd = tg_ndim(x);
  int64_t K = nd ? tg_size(x, nd - 1) : 0, M = K ? tg_numel(x) / K : 0, nb = K / 32, qb = type == TG_GGML_Q4_0 ? 16 : 32;
  int64_t C = qs && tg_ndim(qs) >= 3 ? tg_size(qs, 0) : 1; /* column chunks (nn_qdot_pack) */
  bool grouped = qs && tg_ndim(qs) == 4;                    /* Q8_0 quants half-major (nn_qdot_pack) */
  if (!nn_qdot_supported(type) || K % 32 || !qs || !d || tg_numel(qs) != n_out * nb * qb || tg_numel(d) != n_out * nb ||
      tg_get_dtype(qs) != TG_UINT8 || tg_get_dtype(d) != TG_FLOAT16 || C <= 0 || nb % C ||
      (tg_ndim(qs) >= 3 && (tg_size(qs, 1) != n_out || tg_ndim(d) != 3 || tg_size(d, 0) != C)) ||
      (grouped && (type != TG_GGML_Q8_0 || tg_size(qs, 3) != QX_GROUP * 32))) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "nn_qdot_linear: packed %s weight (%lld quant bytes in %lld chunks, %lld "
                 "scales) does not match (%lld, %lld)", tg_ggml_type_name(type) ? tg_ggml_type_name(type) : "?",
                 qs ? (long long)tg_numel(qs) : 0LL, (long long)C, d ? (long long)tg_numel(d) : 0LL, (long long)n_out,
                 (long long)K);
    return NULL;
  }
  int64_t nbc = nb / C;
  tg_scope s = tg_scope_begin();
  tg_tensor *w; /* (C, N, nbc, 2, 4, 4) uint8 */
  if (type == TG_GGML_Q4_0) {
    /* the halves by tg_cat, not a shift pattern: each half's shift is a constant in the kernel */
    tg_tensor *q4 = tg_reshape(qs, TG_SHAPE(C, n_out, nbc, 1, 4, 4));
    const tg_tensor *halves[2] = {tg_bitwise_and(q4, ci(15)), tg_rshift(q4, ci(4))};
    w = tg_cat(halves, 2, 3);
  } else if (grouped) { /* half-major as the activation: read through the same view */
    tg_tensor *g = qx_blocks(tg_reshape(qs, TG_SHAPE(C * n_out, nbc / QX_GROUP, 2, QX_GROUP, 16)), C * n_out, nbc);
    w = tg_bitwise_xor(tg_reshape(g, TG_SHAPE(C, n_out, nbc, 2, 4, 4)), ci(0x80));
  } else {
    w = tg_bitwise_xor(tg_reshape(qs, TG_SHAPE(C, n_out, nbc, 2, 4, 4)), ci(0x80));
  }
  tg_tensor *w7 = tg_reshape(w, TG_SHAPE(1, C, n_out, nbc, 2, 4, 4));
  tg_tensor *x7 = tg_reshape(qx_blocks(xq, M, nb), TG_SHAPE(M, C, 1, nbc, 2, 4, 4));
  tg_tensor *dot = tg_sum(tg_mul(tg_cast(w7, TG_INT32), tg_cast(x7, TG_INT32)), TG_AXES(4, 6), true);
  dot = tg_add(dot, tg_reshape(xc, TG_SHAPE(M, C, 1, nbc, 1, 4, 1))); /* (M, C, N, nbc, 1, 4, 1) */
  tg_tensor *scale = tg_mul(tg_reshape(tg_cast(d, TG_FLOAT32), TG_SHAPE(1, C, n_out, nbc, 1, 1, 1)),
                            tg_reshape(dx, TG_SHAPE(M, C, 1, nbc, 1, 1, 1)));
  tg_tensor *y = tg_sum(tg_mul(tg_cast(dot, TG_FLOAT32), scale), TG_AXES(3, 4, 5, 6), false); /* (M, C, N) */
  /* chunks: each a kernel's output of its own, then their sum (one reduce over all would loop the chunks per row) */
  y = C > 1 ? tg_sum(tg_contiguous(y), TG_AXES(1), false) : tg_reshape(y, TG_SHAPE(M, n_out));
  int64_t shape[TG_MAX_DIMS];
  for (int i = 0; i + 1 < nd; i++) shape[i] = tg_size(x, i);
  shape[nd - 1] = n_out;
  return nn_finish(s, tg_reshape(y, shape, (size_t)nd));
}
