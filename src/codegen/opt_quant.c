/* opt_quant.c — the CPU heuristic's steps for products over quantized weights (src/nn/ggml_quants.c dequantizes
 * them with tensor ops in the kernel that reads them; src/nn/ggml_qdot.c takes int8 dot products with quantized
 * activations): one weight stream per matvec row (cpu_quant_gemv), each packed byte loaded once for both nibbles
 * (cpu_quant_select_unroll), the vpdpbusd-shaped unrolls of an int8 dot (cpu_int8_dot) and a prefill's order and
 * tiles over its weight rows and tokens (int8_rows_outer, int8_prefill_tiles). Called from opt_heuristic.c. */
#include "opt_heuristic.h"

/* ---- CPU adaptation: matrix-vector products over quantized weights ----
 * The INDEX nodes of the reduce that read 8-bit integer buffers: the packed blocks of a ggml quant type
 * (src/nn/ggml_quants.c dequantizes them with tensor ops inside the kernel that reads them). */
static void byte_indexes(UOp *ast, UOpVec *out) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2) continue;
    const DType *d = u->src[0]->dtype->base;
    if (d->bitsize == 8 && (d->kind == DTK_UINT || d->kind == DTK_SINT)) tg_vec_push(out, u);
  }
  tg_vec_free(&topo);
}

/* the weight of a quantized product: the biggest byte buffer's INDEX (a fused embedding row gather may read a small
 * one; the int8 activation is smaller) */
static UOp *biggest_byte_index(UOp *ast, int64_t *nbytes) {
  UOpVec bytes = {0};
  byte_indexes(ast, &bytes);
  UOp *w = NULL;
  int64_t max_bytes = 0;
  for (size_t k = 0; k < bytes.len; k++) {
    UOp *buf = bytes.data[k]->src[0];
    int64_t n;
    if (buf->nsrc >= 1 && uop_ssimplify_int(buf->src[0], &n) && n > max_bytes) max_bytes = n, w = bytes.data[k];
  }
  tg_vec_free(&bytes);
  if (nbytes) *nbytes = max_bytes;
  return w;
}

/* A quantized matrix-vector product (a decode step's Linear): a reduce reading packed bytes where every output axis
 * indexes the bytes, so no output lane reuses a loaded weight. With short rows (under a 4 KiB page of bytes each),
 * upcasting output rows only splits the weight stream into short interleaved ones; with long rows the upcast rows'
 * independent accumulators win (one row's unrolled terms are added to its accumulator one after another). Measured
 * (2 cores, AVX-512, one thread, the 1B model's generated Q4_0 decode kernels over 48 slices of the mapped file,
 * CPU time): 2048->8192 (1152-byte rows) 4 rows at once 5.0-5.4 GB/s, one row 7.8-8.2; 8192->2048 (4608-byte rows)
 * 4 rows 8.8-9.0, one row 6.8-7.0. Short-row kernels get no output upcast (the rows are shared out as THREAD). */
bool opt_cpu_quant_gemv(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !opt_first_reduce(s->ast)) return false;
  int64_t max_bytes = 0, rows = 1;
  UOp *w = biggest_byte_index(s->ast, &max_bytes);
  bool all = w != NULL;
  for (int i = 0; i < sh->n && all; i++) {
    if (!is_upcastable(sh, i) || is_reduce_type(sh->type[i])) continue;
    rows *= sh->size[i];
    all = in_slice(w->src[1], sh->rngs.data[i]);
  }
  return all && rows > 1 && max_bytes / rows < 4096;
}

/* A reduce that reads packed bytes and picks one of two expressions by a reduce loop (the low or high nibbles of a
 * 4-bit block: tg_cat of the two halves, whose axis merges with the block axis into one loop of 2 x blocks)
 * evaluates a select per element. Unrolling that loop by 2 makes every select constant: each byte is loaded once
 * for both its nibbles. Measured (2 cores, AVX-512, one thread, the 1B model's Q4_0 decode kernels over 48 slices of
 * the mapped file, CPU time): 2048->8192 with fused RMSNorm 4.3-4.5 -> 4.8-5.1 GB/s, 8192->2048 6.7-6.9 -> 8.1-8.7. */
void opt_cpu_quant_select_unroll(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local) return;
  UOpVec bytes = {0}, gates = {0};
  byte_indexes(s->ast, &bytes);
  bool any = bytes.len > 0;
  tg_vec_free(&bytes);
  if (!any) return;
  opt_where_gate_ranges(s->ast, &gates);
  shape_load(s, sh);
  int idx = 0, pick_idx = -1;
  for (int i = 0; i < sh->n; i++) {
    if (!is_unrollable(sh, i)) continue;
    if (sh->size[i] % 2 == 0 && cg_vec_has(&gates, sh->rngs.data[i])) pick_idx = idx;
    idx++;
  }
  tg_vec_free(&gates);
  if (pick_idx >= 0 && upcast_size(sh) * 2 <= 128) try_opt(s, OPT_UNROLL, pick_idx, 2);
}

/* A prefill's int8 dot (several tokens): the weight's rows loop outside the tokens, so a weight row (1-4.5 KiB) is
 * read from memory once and from L1 for every token, against the tokens' activations from L2 (64 KiB for 32 tokens
 * of 2048). With the tokens outside, each token streamed the whole weight again (the 1B model's 8192 x 2048 Q4_0
 * gate, 9.4 MB, 32 times from L3 per prefill of 32 tokens). Measured (2 cores, 2 threads, 1B llama prefill of 32
 * tokens, alternating runs): Q4_0 89.0-89.9 -> 91.7-94.4 tok/s (gate 5.8 -> 5.4 ms), Q8_0 61.9-62.0 -> 62.3-63.7.
 * The kernels stay at ~8.7 cycles a step of 128 products a core; 4 tokens upcast on top (~8 instructions a step and
 * token against ~13: the weight's unpack shared) ran no faster (92.7 against 92.1 tok/s), so the instruction count
 * is not what bounds them. BEAM=2 finds 102-104 tok/s (against 93): on top of these opts, 2 rows upcast after the
 * THREAD split and the tokens looped in blocks of 4 (int8_prefill_tiles; the down projection in column chunks 4.2
 * -> 3.7 ms there too, not taken yet); the same upcast before THREAD was slower (88 tok/s). INT8_ROWS_OUTER=0 keeps
 * the order. */
static void int8_rows_outer(OptScheduler *s, Shape *sh) {
  UOp *w = biggest_byte_index(s->ast, NULL);
  if (!w) return;
  shape_load(s, sh);
  int token = -1;
  for (int i = 0; i < sh->n; i++) {
    if (sh->type[i] != AXIS_WEAK || sh->size[i] <= 1) continue;
    bool reads = in_slice(w->src[1], sh->rngs.data[i]);
    if (!reads && token < 0) token = i;
    if (reads && token >= 0) {
      try_opt(s, OPT_SWAP, token, i);
      break;
    }
  }
  shape_load(s, sh);
}

/* After THREAD, a prefill's int8 dot (rows outside the tokens: int8_rows_outer) takes a register tile of 4 weight
 * rows x 2 tokens a step and loops its tokens in blocks of 4: each activation load serves 4 rows, each weight load
 * and nibble unpack 2 tokens, each row's scale conversion 2 tokens. A step of one row and one token spent ~15 vector
 * instructions (3 of them the nibble unpack, 4 the scales, the rest loads and the accumulator) around its 2
 * vpdpbusd, each a 512-bit op the core issues as two 256-bit halves: ~8.7 cycles a step. A weight stored in column
 * chunks (ggml_qdot.c; the down projection) has its rows moved outside its tokens first. Measured (2 cores, 2 threads,
 * 1B llama prefill of 32 tokens, alternating runs, build/bench_llm): 2 rows x 1 token 96.5-98.1 tok/s for Q4_0 (the
 * gate 4.8-4.9 ms), 2 x 2 111.2-112.6, 4 x 2 113.6-116.3 (the gate 3.6 ms; the chunked down projection 4.2 -> 3.3
 * ms), 4 x 4 107.0-107.6, 8 x 2 109.8-111.2, 2 x 8 unlooped 97.9-104.7; Q8_0 92.9-96.1 -> 100.8-111.2. Against
 * llama.cpp (bench/run_llm.sh, 3 rounds): Q4_0 prefill 0.83x -> 1.02x, Q8_0 0.93x -> 1.13x. INT8_ROW_UPCAST (4),
 * INT8_TOKEN_UPCAST (2) and INT8_TOKEN_LOOP (4) set the sizes, 1 / 0 turn them off. */
void opt_int8_prefill_tiles(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !s->ren->dot_u8i8 || !cg_has_int8_dot(s->ast)) return;
  UOp *w = biggest_byte_index(s->ast, NULL);
  if (!w) return;
  shape_load(s, sh);
  /* the rows: the largest output axis that reads the weight (a weight in column chunks, ggml_qdot.c, has its chunk
   * axis too, outermost); the tokens: the first that does not */
  int row = -1, token = -1;
  for (int i = 0; i < sh->n; i++) {
    if (sh->type[i] != AXIS_WEAK || sh->size[i] <= 1) continue;
    if (!in_slice(w->src[1], sh->rngs.data[i])) token = token < 0 ? i : token;
    else if (row < 0 || sh->size[i] > sh->size[row]) row = i;
  }
  if (row < 0 || token < 0) return;
  if (token < row) { /* the chunked weight's order (chunk, tokens, rows): the rows go outside the tokens too */
    if (!try_opt(s, OPT_SWAP, token, row)) return;
    int t = token; /* SWAP exchanges the two ranges' places (and ids) */
    token = row, row = t;
    shape_load(s, sh);
  }
  int64_t row_id = range_id(sh, row), token_id = range_id(sh, token), sz;
  int64_t up = tg_getenv_int("INT8_ROW_UPCAST", 4), tu = tg_getenv_int("INT8_TOKEN_UPCAST", 2),
          lp = tg_getenv_int("INT8_TOKEN_LOOP", 4);
  if (up > 1 && (sz = size_of_id(s, row_id)) && sz % up == 0) opt_on_id(s, OPT_UPCAST, row_id, up);
  if (tu > 1 && (sz = size_of_id(s, token_id)) && sz % tu == 0) opt_on_id(s, OPT_UPCAST, token_id, tu);
  if (lp > 1 && (sz = size_of_id(s, token_id)) && sz % lp == 0 && sz > lp) opt_on_id(s, OPT_LOOP, token_id, lp);
  shape_load(s, sh);
}

/* An int8 dot reduce (src/nn/ggml_qdot.c: a float sum over blocks and 4 lanes of int32 sums of u8 x i8 products) on
 * a dot_u8i8 renderer: every reduce axis of 4 or fewer (the lanes, the halves, the bytes of a lane) is unrolled, so
 * each block is one vector accumulator step of vpdpbusd shape (cg_expand, cg_vectorize), one weight row per step. */
bool opt_cpu_int8_dot(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !s->ren->dot_u8i8 || !cg_has_int8_dot(s->ast)) return false;
  for (;;) {
    shape_load(s, sh);
    int idx = 0, pick = -1;
    for (int i = 0; i < sh->n; i++) {
      if (!is_unrollable(sh, i)) continue;
      if (sh->size[i] <= 4 && pick < 0) pick = idx;
      idx++;
    }
    if (pick < 0 || !try_opt(s, OPT_UNROLL, pick, 0)) break;
  }
  /* 4 blocks per step: the float accumulator's add then waits once per 4 blocks, not once per block (a 4-cycle FMA
   * chain bounded the 1B model's Q4_0 2048->8192 kernel at 0.68 ms = 14 GB/s on one thread). An activation stored in
   * groups of 4 blocks (ggml_qdot.c) brings its group axis of 4 into the unrolls above: a step of 128 products, the
   * 4 blocks already. */
  shape_load(s, sh);
  int64_t rows_outer = tg_getenv_int("INT8_ROWS_OUTER", 1);
  if (upcast_size(sh) >= 128) {
    if (rows_outer) int8_rows_outer(s, sh);
    return true;
  }
  int idx = 0, blocks = -1;
  for (int i = 0; i < sh->n; i++)
    if (is_unrollable(sh, i)) {
      if (sh->size[i] % 4 == 0) blocks = idx;
      idx++;
    }
  if (blocks >= 0) try_opt(s, OPT_UNROLL, blocks, 4);
  if (rows_outer) int8_rows_outer(s, sh);
  return true;
}

