/* opt_heuristic.c — tinygrad's hand_coded_optimizations (codegen/opt/heuristic.py): the opts a kernel gets without
 * search. In order: GROUPTOP for small outputs (needs locals), upcast small masked axes (from stack/cat), greedy
 * upcasts of axes some buffer broadcasts over, unroll of the last reduce, a default upcast of 4, locals (devices with
 * locals), and the THREAD split over cores. Tensor cores, images and the matvec template need a GPU renderer.
 * CPU adaptations (each measured; see the comments where they act): register tiles for matmul-like kernels and
 * convs (cpu_matmul_tiles), no upcast for elementwise kernels (the compiler's loop vectorizer does better), and a
 * THREAD split that counts a tiled kernel's work in vectors and takes the axis leaving each piece the fewest input
 * bytes (cpu_threads).
 * GPU adaptations (measured on the H200, bench/bench_gpu): 256-thread blocks for elementwise kernels (gpu_locals: a
 * neg over 2^28 1.7 -> 4.1 TB/s, relu(a*b+c) 3.3 -> 4.4), a warp per row for contiguous row reduces
 * (gpu_row_reduce: sum over 2^28 2.1 -> 4.1 TB/s, softmax 4096x4096 0.17 -> 1.2 TB/s), enough threads to fill the
 * GPU for reduces with few outputs (a wider small-output GROUPTOP, gpu_group_first, gpu_late_group), flat ids for elementwise
 * kernels with a narrow inner axis. beautiful_mnist's CNN train step (bench_train on DEV=CUDA, JIT): with the
 * multi-axis row reduce, the two group steps and the flat ids 197 steps/s against 151 with all four off (same run),
 * the step's kernel time (JIT=2 DEBUG=2) 8.32 -> 5.06 ms. The direct-convolution steps live in opt_conv.c (GPU_CONV:
 * the CNN step 386-393 steps/s against 247-257 without; GPU_CONV_TC: convs on tensor cores); the CPU steps over
 * quantized weights and int8 activations in opt_quant.c. */
#include "opt_heuristic.h"

#include <stdio.h>

void opt_shape_load(const OptScheduler *s, Shape *sh) {
  sh->rngs.len = 0;
  opt_sched_rngs(s, &sh->rngs);
  sh->n = (int)TG_MIN(sh->rngs.len, 64);
  for (int i = 0; i < sh->n; i++) {
    UOp *r = sh->rngs.data[i];
    int64_t v;
    sh->known[i] = uop_ssimplify_int(uop_simplify(r->src[0]), &v);
    sh->size[i] = sh->known[i] ? v : (int64_t)(uop_vmax(r) + 1);
    sh->type[i] = cg_axis_type(r);
  }
}


static int64_t upcastable_output_prod(const Shape *sh) {
  int64_t p = 1;
  for (int i = 0; i < sh->n; i++)
    if (is_upcastable(sh, i) && !is_reduce_type(sh->type[i])) p *= sh->size[i];
  return p;
}
static int unrollable_count(const Shape *sh) {
  int c = 0;
  for (int i = 0; i < sh->n; i++) c += is_unrollable(sh, i);
  return c;
}
static int last_unrollable(const Shape *sh) {
  int last = -1;
  for (int i = 0; i < sh->n; i++)
    if (is_unrollable(sh, i)) last = i;
  return last;
}


/* the INDEX nodes of the kernel (tinygrad Scheduler.bufs) and their index expressions */
static void buffer_indexes(UOp *ast, UOpVec *out) {
  UOpVec topo = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  for (size_t i = topo.len; i-- > 0;) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2) continue;
    UOp *idx = u->src[1];
    if (idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2])) idx = idx->src[1];
    tg_vec_push(out, idx);
  }
  tg_vec_free(&topo);
}

/* some access (idx: buffer_indexes) does not vary along rng: the output lanes rng would give share its loads */
static bool some_index_skips(const UOpVec *idx, UOp *rng) {
  for (size_t i = 0; i < idx->len; i++)
    if (!in_slice(idx->data[i], rng)) return true;
  return false;
}

/* ranges used in WHERE conditions (gates from stack/cat/pad) */
void opt_where_gate_ranges(UOp *ast, UOpVec *out) {
  UOpVec topo = {0};
  uop_backward_slice(ast, &topo);
  CgRanges rr;
  cg_ranges_init(&rr);
  for (size_t i = 0; i < topo.len; i++) {
    if (topo.data[i]->op != TG_OP_WHERE) continue;
    const UOpVec *v = cg_ranges_of(&rr, topo.data[i]->src[0]);
    for (size_t k = 0; k < v->len; k++)
      if (!cg_vec_has(out, v->data[k])) tg_vec_push(out, v->data[k]);
  }
  cg_ranges_free(&rr);
  tg_vec_free(&topo);
}

/* The greedy upcast choice (num_strides, sum_strides, axis, amount), smallest first. */
typedef struct UpChoice { int64_t num, sum; int axis, amt; } UpChoice;

static bool choice_less(const UpChoice *a, const UpChoice *b) {
  if (a->num != b->num) return a->num < b->num;
  if (a->sum != b->sum) return a->sum < b->sum;
  if (a->axis != b->axis) return a->axis < b->axis;
  return a->amt < b->amt;
}

static bool greedy_upcast_step(OptScheduler *s, Shape *sh, bool *upcasted) {
  UOpVec idxs = {0}, terms = {0};
  buffer_indexes(s->ast, &idxs);
  UpChoice best = {0, 0, 0, 0};
  bool have = false;
  static const int amounts[] = {3, 4};
  for (int axis = 0; axis < sh->n; axis++) {
    if (!is_upcastable(sh, axis) || upcasted[axis]) continue;
    for (int ai = 0; ai < 2; ai++) {
      int amt = amounts[ai];
      if (sh->size[axis] % amt != 0) continue;
      UOp *rng = sh->rngs.data[axis];
      /* some buffer does not use this axis while using every axis upcast so far */
      bool broadcast = false;
      for (size_t b = 0; b < idxs.len && !broadcast; b++) {
        if (in_slice(idxs.data[b], rng)) continue;
        bool all_up = true;
        for (int k = 0; k < sh->n && all_up; k++)
          if (sh->type[k] == AXIS_UPCAST || sh->type[k] == AXIS_UNROLL) all_up = in_slice(idxs.data[b], sh->rngs.data[k]);
        broadcast = all_up;
      }
      if (!broadcast) continue;
      UpChoice c = {0, 0, axis, amt};
      for (size_t b = 0; b < idxs.len; b++) {
        UOp *idx = idxs.data[b];
        if (in_slice(idx, rng)) c.num++;
        terms.len = 0;
        uop_split(idx, TG_OP_ADD, &terms);
        for (size_t t = 0; t < terms.len; t++) {
          UOp *x = terms.data[t];
          if (x == rng) c.sum += 1;
          if (x->op == TG_OP_MUL && x->src[0] == rng && x->src[1]->op == TG_OP_CONST) c.sum += x->src[1]->arg.c.i;
          if (x->op == TG_OP_MUL && x->src[1] == rng && x->src[0]->op == TG_OP_CONST) c.sum += x->src[0]->arg.c.i;
        }
      }
      if (!have || choice_less(&c, &best)) best = c, have = true;
    }
  }
  tg_vec_free(&idxs); tg_vec_free(&terms);
  if (!have) return false;
  if (tg_debug_level() >= 4) printf("more upcast axis : %d by %d\n", best.axis, best.amt);
  if (!try_opt(s, OPT_UPCAST, best.axis, best.amt)) return false;
  upcasted[best.axis] = true;
  return true;
}

/* ---- CPU adaptation: register tiles for matmul-like kernels ----
 * tinygrad's greedy upcast (3 or 4 per axis, at most 32 lanes) suits GPUs; on a CPU the accumulator tile should fill
 * SIMD registers. Measured here (2 cores, AVX-512, 512x512 float32 matmul, best of 15 on a busy machine): tinygrad's
 * choice (UPCAST 4 x 4, UNROLL 4) 53 GFLOPS; with register-wide loads (cg_coalesce) a 4 x 16 tile 107-175, 8 x 16
 * with UNROLL 4 238 (8 x 16 without unroll 122-229, UNROLL 2 178). A kernel qualifies when its first REDUCE adds a
 * product of two loads (through a CAST or not), and an output axis is contiguous (stride 1) in one load while the other
 * load does not use it (a row of B reused for every row of A). That axis is upcast to a full vector register, an axis
 * the first load broadcasts over by 8 (or 4, 3, 2), and the last reduce unrolled by 4. */

static UOp *strip_cast(UOp *u) { return u->op == TG_OP_CAST ? u->src[0] : u; }

/* The index of the one load a value is computed from: through casts and elementwise ops whose other operands are
 * constants or do not read memory per element (a padded load WHERE(valid, load, 0), a fused relu max(load, 0), a
 * scale...). NULL when the value mixes two loads. */
static bool reads_memory(UOp *u) { return uop_op_in_backward_slice_with_self(u, TG_OP_INDEX); }

/* the INDEX node itself */
static UOp *load_of(UOp *u) {
  for (int depth = 0; depth < 16; depth++) {
    if (u->op == TG_OP_INDEX) return u->nsrc >= 2 ? u : NULL;
    if (!op_is_alu(uop_op(u)) && u->op != TG_OP_CAST) return NULL;
    UOp *next = NULL;
    for (uint32_t i = 0; i < u->nsrc; i++) {
      if (!reads_memory(u->src[i])) continue;
      if (next) return NULL; /* two loads */
      next = u->src[i];
    }
    if (!next) return NULL;
    u = next;
  }
  return NULL;
}

/* an INDEX's index without its validity gate WHERE(valid, idx, Invalid) */
static UOp *ungated_index(UOp *index) {
  UOp *idx = index->src[1];
  return idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2]) ? idx->src[1] : idx;
}

static UOp *index_of_load(UOp *u) {
  UOp *ld = load_of(u);
  return ld ? ungated_index(ld) : NULL;
}

/* bytes of the buffer an INDEX expression belongs to: found from the load (cont is its index) */
static int64_t buffer_bytes_of_load(UOp *value) {
  UOp *load = load_of(value);
  if (!load) return 0;
  UOp *buf = load->src[0];
  int64_t n;
  if (buf->nsrc < 1 || !uop_ssimplify_int(buf->src[0], &n)) return 0;
  return n * TG_MAX(1, buf->dtype->bitsize / 8);
}

static bool has_unit_term(UOp *idx, UOp *rng) {
  UOpVec terms = {0};
  uop_split(idx, TG_OP_ADD, &terms);
  bool found = false;
  for (size_t i = 0; i < terms.len && !found; i++) found = terms.data[i] == rng;
  tg_vec_free(&terms);
  return found;
}

static int largest_divisor(int64_t n, const int *cands, int ncands) {
  for (int i = 0; i < ncands; i++)
    if (cands[i] > 1 && n % cands[i] == 0) return cands[i];
  return 0;
}

/* a matmul-like kernel: its first REDUCE adds a product of two loads (through a CAST or not); the indexes of the two
 * loads (ia, ib) in mul's source order */
bool opt_sum_of_product(const OptScheduler *s, UOp **red, UOp **mul, UOp **ia, UOp **ib) {
  *red = opt_first_reduce(s->ast);
  if (!*red || (*red)->arg.red.op != TG_OP_ADD) return false;
  *mul = strip_cast((*red)->src[0]);
  if ((*mul)->op != TG_OP_MUL) return false;
  *ia = index_of_load((*mul)->src[0]), *ib = index_of_load((*mul)->src[1]);
  return *ia && *ib;
}

/* the axis whose range has ra's id and sub-ids (its size may have changed since: opts resize ranges in place), or -1 */
static int axis_of(const Shape *sh, const RangeArg *ra) {
  RangeArg want = *ra;
  want.axis_type = 0;
  for (int i = 0; i < sh->n; i++) {
    RangeArg x = *sh->rngs.data[i]->arg.range;
    x.axis_type = 0;
    if (cg_range_arg_cmp(&x, &want) == 0) return i;
  }
  return -1;
}

/* the coefficient of rng in an index that is a sum of (constant) multiples of ranges, 0 when absent or not linear */
int64_t opt_term_coef(UOp *idx, UOp *rng) {
  UOpVec terms = {0};
  uop_split(idx, TG_OP_ADD, &terms);
  int64_t c = 0;
  for (size_t i = 0; i < terms.len; i++) {
    UOp *t = terms.data[i];
    if (t == rng) c += 1;
    else if (t->op == TG_OP_MUL && t->src[0] == rng && t->src[1]->op == TG_OP_CONST) c += t->src[1]->arg.c.i;
  }
  tg_vec_free(&terms);
  return c;
}

/* When the contiguous load reads panels (a reduce step moves it by exactly the vector axis' length, and another output
 * axis, the panel, jumps over whole panels), that panel axis; else -1. */
static int panel_axis(const Shape *sh, UOp *cont, UOp *bcast, int v, int r) {
  int last = last_unrollable(sh);
  if (last < 0 || unrollable_count(sh) != 1) return -1;
  int64_t kc = term_coef(cont, sh->rngs.data[last]);
  if (kc != sh->size[v]) return -1;
  for (int p = 0; p < sh->n; p++) {
    if (p == v || p == r || !is_upcastable(sh, p) || in_slice(bcast, sh->rngs.data[p])) continue;
    if (term_coef(cont, sh->rngs.data[p]) == kc * sh->size[last]) return p;
  }
  return -1;
}

/* The vector axis of a register tile whose vector load is cont (the last output axis cont reads with unit stride and
 * bcast does not read), its upcast (vamt: a divisor of it that fills a register, or half, or a quarter; 0 with
 * whole: an axis that is not a multiple of the register but at most two registers long, a conv row of 28, 24, 20,
 * 12..., upcast whole, in two splits of at most 16 when needed: a 64x32x28x28 3x3 conv went from 29 GFLOPS, 4 lanes x
 * 8 rows, kx unrolled, to 66-70, 28 lanes x 4 rows, no unroll). -1 when there is none. */
static int tile_vector_axis(const Shape *sh, UOp *cont, UOp *bcast, int w, const int *vec_cands, int *vamt,
                            bool *whole, int *split) {
  for (int v = sh->n - 1; v >= 0; v--) {
    if (!is_upcastable(sh, v)) continue;
    UOp *rv = sh->rngs.data[v];
    if (!has_unit_term(cont, rv) || in_slice(bcast, rv) || bcast == rv) continue;
    int64_t vs = sh->size[v];
    *whole = vs % w != 0 && vs <= 2 * w;
    *vamt = *whole ? 0 : largest_divisor(vs, vec_cands, 3);
    *split = 0;
    if (*whole && vs > 16) {
      for (int d = 2; d <= 16 && !*split; d++)
        if (vs % d == 0 && vs / d <= 16) *split = d;
      if (!*split) continue;
    }
    if (!*whole && !*vamt) continue;
    return v;
  }
  return -1;
}

static bool cpu_matmul_tiles(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || s->ren->vector_bytes <= 0) return false;
  UOp *red, *mul, *ia, *ib;
  if (!sum_of_product(s, &red, &mul, &ia, &ib)) return false;
  int64_t bytes_a = buffer_bytes_of_load(mul->src[0]), bytes_b = buffer_bytes_of_load(mul->src[1]);
  int itemsize = TG_MAX(1, red->dtype->bitsize / 8);
  int w = s->ren->vector_bytes / itemsize;
  int vec_cands[3] = {w, w / 2, w / 4}, row_cands[4] = {8, 4, 3, 2};
  /* Both loads may be contiguous along an output axis of their own (A^T @ B: a weight gradient dH^T @ x). Each pass
   * takes one of them as the vector load; the pass whose vector axis takes full registers, and then pairs of them
   * (the wide tile below), goes first. Measured (2 cores, AVX-512, one thread, the MLP's first weight gradient
   * (512x128)^T @ (512x784), whose 784 = 49 x 16 takes no pair): vector along 784, 16 rows 505-518 us; along 128,
   * 2 vectors x 8 rows 440-461; its second, (512x10)^T @ (512x128): 10 lanes whole x 4 rows 30 us (two threads),
   * 2 vectors along 128 x 5 rows (BEAM's pick) 6 */
  int vaxis[2], vamts[2], splits[2], quality[2];
  bool wholes[2];
  for (int pass = 0; pass < 2; pass++) {
    vaxis[pass] = tile_vector_axis(sh, pass ? ia : ib, pass ? ib : ia, w, vec_cands, &vamts[pass], &wholes[pass],
                                   &splits[pass]);
    quality[pass] = vaxis[pass] < 0 ? -1 : vamts[pass] != w ? 0 : (sh->size[vaxis[pass]] / w) % 2 == 0 ? 2 : 1;
  }
  for (int turn = 0; turn < 2; turn++) {
    int pass = quality[1] > quality[0] ? 1 - turn : turn;
    UOp *cont = pass ? ia : ib, *bcast = pass ? ib : ia; /* cont: the load contiguous along the vector axis */
    int64_t cont_bytes = pass ? bytes_a : bytes_b;
    int v = vaxis[pass];
    if (v < 0) continue;
    int64_t vs = sh->size[v];
    bool whole = wholes[pass];
    int vamt = vamts[pass], split = splits[pass];
    const int *rows = whole ? row_cands + 1 : row_cands;
    int nrows = whole ? 3 : 4;
    int r = -1;
    /* a convolution vectorized over output channels (weights channel-inner, tensor/reduce.c t_conv2d): the rows are
     * output pixels along a row, which the input reads through a sliding window (a reduce axis with unit stride
     * next to them); each row's input is one broadcast load. Measured (2 cores, AVX-512, 64x32x28x28 3x3, GFLOPS
     * with the pad and weight copies): 2 vectors x 7 pixels 213-220, 2 x 4 pixels 202-210, 4 x 4 188-199, 2
     * vectors x 4 batch rows (what the matmul rule below picks) 138-151. A row of more than 8 pixels takes one
     * vector and up to 16 pixels (same accumulator count, half the weights per tile: 18 KiB stay in L1): later,
     * the same conv's best times, interleaved A/B, 2 vectors x 7 pixels 5.72 ms (median 6.33), 1 vector x 14
     * pixels 5.40 (5.88); the CNN step's 24- and 20-pixel convs (12 and 10 pixels) unchanged */
    int window_rows = 0;
    bool window = false;
    RangeArg window_ra = {0};
    for (int j = 0; j < sh->n && !window; j++)
      if ((window = is_reduce_type(sh->type[j]) && has_unit_term(bcast, sh->rngs.data[j]))) window_ra = *sh->rngs.data[j]->arg.range;
    static const int window_cands[] = {16, 14, 12, 10, 8, 7, 6, 5, 4};
    /* the rows may step by 2 input pixels (a conv with stride 2, or one fused with the 2x2 max-pool after it in
     * eval mode, where the BatchNorm folds into it): the window still shares most loads between rows. Measured (2
     * cores, AVX-512, beautiful_mnist's eval conv2 + relu + BatchNorm + pool, 500 images, vector accumulators):
     * 2 vectors x 4 batch rows 42.3-42.7 ms, one vector x 10 pooled pixels 32.9-33.5 */
    for (int k = 0; k < sh->n && window && r < 0; k++) {
      int64_t step = term_coef(bcast, sh->rngs.data[k]);
      if (k != v && is_upcastable(sh, k) && !in_slice(cont, sh->rngs.data[k]) && (step == 1 || step == 2) &&
          (window_rows = largest_divisor(sh->size[k], window_cands, (int)TG_ARRAY_LEN(window_cands))))
        r = k;
    }
    for (int k = 0; k < sh->n && r < 0; k++)
      if (k != v && is_upcastable(sh, k) && !in_slice(cont, sh->rngs.data[k]) && cont != sh->rngs.data[k] &&
          largest_divisor(sh->size[k], rows, nrows))
        r = k;
    RangeArg vec_ra = *sh->rngs.data[v]->arg.range;
    if (split && !try_opt(s, OPT_UPCAST, v, split)) return false;
    if (!try_opt(s, OPT_UPCAST, v, vamt)) return false;
    int unroll = 4;
    /* A reduce both loads read with unit stride (a conv weight gradient: the output rows x) is unrolled whole (up to
     * two registers) or by one register: its lanes are vector accumulators (cg_expand), one per register-sized
     * chunk, added up after the loop. The rows are then cut so the accumulators fit the registers (24).
     * Measured (2 cores, AVX-512, beautiful_mnist's conv2 weight gradient split into 128 partials, 20 output
     * columns): kx 5 x 4 rows with x unrolled by 4 (4-lane accumulators) 106-113 ms, kx 5 x 2 rows x 20 (16 + 4
     * lanes) 76-81 ms. */
    int last_red = last_unrollable(sh), red_chunks = 0;
    if (last_red >= 0 && has_unit_term(cont, sh->rngs.data[last_red]) && has_unit_term(bcast, sh->rngs.data[last_red])) {
      int64_t rs = sh->size[last_red];
      if (rs <= 2 * w)
        for (int64_t left = rs, c = w; left > 0; c /= 2)
          while (c <= left && c >= 1) left -= c, red_chunks++;
      else if (rs % w == 0)
        red_chunks = 1;
    }
    if (r >= 0) {
      int ramt = window_rows ? window_rows : largest_divisor(sh->size[r], rows, nrows);
      if (red_chunks) {
        int64_t lanes = whole ? vs : vamt;
        ramt = 1;
        for (int k = 0; k < nrows; k++)
          if (rows[k] > 1 && sh->size[r] % rows[k] == 0 && lanes * rows[k] * red_chunks <= 24) {
            ramt = rows[k];
            break;
          }
      }
      /* rows the other load reads contiguously (A^T @ B: a weight gradient dH^T @ x) come in as one vector load,
       * not a scalar broadcast each, so 16 of them cost no more loads than 8: measured (2 cores, AVX-512) on
       * (512x128)^T @ (512x784), the MLP's first weight gradient, 8 rows 109-136 GFLOPS, 16 rows 147-159; a plain
       * 512 matmul (rows strided in A) stays best at 8 (257 vs 225 GFLOPS) */
      bool contiguous_rows = has_unit_term(bcast, sh->rngs.data[r]);
      int p = panel_axis(sh, cont, bcast, v, r);
      RangeArg row_ra = *sh->rngs.data[r]->arg.range, second_ra = p >= 0 ? *sh->rngs.data[p]->arg.range : vec_ra;
      /* rows broadcast from A one scalar at a time: two vectors x 4 rows (8 accumulators, 6 loads per 8 FMAs)
       * beat one vector x 8 rows (9 loads per 8 FMAs), with the reduce unrolled by 8. Measured (2 cores, AVX-512,
       * float32, GFLOPS, 8x16 unroll 4 -> 4x32 unroll 8): 512^3 214-246 -> 262-279, 1024^3 (B in panels)
       * 253-263 -> 296-313, 2048^3 247-263 -> 302-309; 256^3 about even (146-175 / 141-183).
       * With vector accumulators (cg_expand: each a register the compiler keeps) two vectors x 8 rows go further:
       * 16 accumulators cover the FMA latency on both units with room to spare (8 only just do), 10 loads per 16
       * FMAs. Measured (same machine, GFLOPS, 4 -> 8 rows, unroll 8): 256^3 156-210 -> 208-210, 512^3 233-267 ->
       * 287-317, 1024^3 283-303 -> 338-348, 2048^3 308-314 -> 332-339, 16 x 256^3 291-301 -> 322-347.
       * The wide tile's reduce is no longer unrolled: on a Zen 4 (2 cores, one 512-bit FMA a cycle, 32 vector
       * registers) its 8 products per accumulator came out as acc + (p0 + ... + p7), a multiply and an add on top of
       * 7 FMAs and 38 spilled registers in the loop; accumulating term by term (cg_lower's chained accumulation) made
       * that 8 FMAs, and without the unroll clang keeps the loop at 16 FMAs, 2 vector loads and 8 broadcasts a step,
       * nothing spilled. Measured (bench_matmul, GFLOPS, the panel copy included; OpenBLAS 204-210 in the same hour):
       * 2048^3 184 (unroll 8) -> 207 (unroll 8, chained) -> 221-222 (no unroll), 1024^3 211-213 -> 227, 512^3
       * 207 -> 227-231, 256^3 215 -> 231, 16 x 256^3 215 -> 233; the CNN step's conv2d kernels unchanged. */
      /* The wide tile takes contiguous rows as well (they are then broadcast one by one too; not a conv's: those
       * read through a window, tiled above), and 8 down to 4 rows, the largest that divides (10 classes: 5).
       * Measured (one thread, (512x128)^T @ (512x784), vector along 128): 2 vectors x 8 rows 440-461 us, 1 vector
       * x 16 rows 505-518, 2 x 7 466-470, 4 x 4 455-466. */
      static const int wide_cands[] = {8, 7, 6, 5, 4};
      int wide_rows = largest_divisor(sh->size[r], wide_cands, (int)TG_ARRAY_LEN(wide_cands));
      int64_t b_bytes = (last_red >= 0 ? sh->size[last_red] : 1) * vs * itemsize; /* one K x N matrix of B */
      bool wide = !whole && vamt == w && wide_rows && (!contiguous_rows || !window) &&
                  (p >= 0 ? sh->size[p] % 2 == 0 : b_bytes <= ((int64_t)2 << 20) && (vs / w) % 2 == 0);
      bool window_wide = window_rows && window_rows <= 8 && !whole && vamt == w && (vs / w) % 2 == 0;
      shape_load(s, sh);
      if (window_wide) {
        int si = axis_of(sh, &vec_ra);
        if (si >= 0) try_opt(s, OPT_UPCAST, si, 2);
        shape_load(s, sh);
      }
      if (wide) {
        int si = axis_of(sh, &second_ra);
        wide = si >= 0 && try_opt(s, OPT_UPCAST, si, 2);
        if (wide) ramt = wide_rows, unroll = 1, shape_load(s, sh);
      }
      int ri = axis_of(sh, &row_ra);
      if (ri >= 0 && ramt > 1) try_opt(s, OPT_UPCAST, ri, ramt);
      if (p >= 0) {
        /* B in panels (schedule/earliest.c pack_matmul_operand): the panel loop outside the row loop, so one panel
         * (K cache lines, in L1/L2) serves every row tile before the next one is read. Measured (2 cores,
         * 1024^3 float32, 8x16 tiles, packing kernel included): rows outside 142-156 GFLOPS, panels outside 202 */
        shape_load(s, sh);
        int pi = axis_of(sh, &second_ra);
        ri = axis_of(sh, &row_ra);
        if (ri >= 0 && pi >= 0 && ri < pi && try_opt(s, OPT_SWAP, ri, pi)) {
          /* and the panels in blocks of 4 (LOOP: outer blocks, rows, the 4 panels inside): a row tile of A is read
           * once from L2 for 4 panels, not for each. Measured (2 cores, 1024^3, the 4x32 kernel edited by hand):
           * 269-294 GFLOPS as is, blocks of 2 277-295, 4 303-315, 8 292-311. After the swap the panel axis
           * carries the rows' range id. */
          shape_load(s, sh);
          int pb = axis_of(sh, &row_ra);
          if (pb >= 0 && sh->size[pb] % 4 == 0 && sh->size[pb] >= 8) try_opt(s, OPT_LOOP, pb, 4);
        }
      } else if (!wide && ramt == 8 && sh->size[r] % 16 == 0 && (cont_bytes > ((int64_t)2 << 20) || contiguous_rows)) {
        /* a big B (the contiguous load) no longer stays in L2 between row tiles (its rows are a power-of-two
         * stride apart, so the tile's lines alias in the cache): twice the rows halves how often it is streamed.
         * Measured (2 cores, float32, before B went into panels): N=1024 8 rows 50 GFLOPS, 16 rows 81-92; N=2048
         * 49 -> 58; N=512 (1 MiB B) 8 rows stays best (228 vs 133). */
        shape_load(s, sh);
        ri = axis_of(sh, &row_ra);
        if (ri >= 0) try_opt(s, OPT_UPCAST, ri, 2);
        if (contiguous_rows) {
          /* A^T @ B, rows read as vectors: the loop over the bigger operand's blocks goes outermost, so each block
           * of it is read once per thread (and serves every tile of the other, which stays in L2). The MLP's first
           * weight gradient (512x128)^T @ (512x784) reads the input batch the host just wrote: measured (2 cores,
           * AVX-512, a new input each run) 0.65-0.71 ms with the 128-side loop outside, 0.53-0.58 with the
           * 784-side one (the THREAD split then takes the other axis, the first one it divides) */
          int64_t row_bytes = pass ? bytes_b : bytes_a;
          shape_load(s, sh);
          ri = axis_of(sh, &row_ra);
          int vi = axis_of(sh, &vec_ra);
          int outer = row_bytes > cont_bytes ? ri : vi, inner = row_bytes > cont_bytes ? vi : ri;
          if (outer >= 0 && inner >= 0 && inner < outer) try_opt(s, OPT_SWAP, inner, outer);
        }
      }
    }
    shape_load(s, sh);
    /* the window (kx) of a conv tiled by window rows is unrolled whole: each input pixel loaded serves every kx
     * that reads it, not one. Measured (2 cores, AVX-512, 64x32x28x28 3x3, the conv kernel alone, 2 vectors x 7
     * pixels): kx as a loop 5.8-6.2 ms, unrolled 5.3-5.8 (ky unrolled as well 7.9-9.3) */
    int wi = window_rows ? axis_of(sh, &window_ra) : -1;
    if (wi >= 0 && is_unrollable(sh, wi) && sh->size[wi] <= 8) {
      int nth = 0;
      for (int i = 0; i < wi; i++) nth += is_unrollable(sh, i);
      try_opt(s, OPT_UNROLL, nth, 0);
      return true;
    }
    /* a long window (a conv weight gradient: the window is the reduced output row, the rows are kx) leaves few
     * accumulators: an output axis the vector load does not read (input channels) is upcast by 2 as well, so each
     * vector loaded serves twice the FMAs. Measured (2 cores, AVX-512, beautiful_mnist's conv2 weight gradient,
     * 2 vectors x 5 kx): 42.9-50.1 -> 39.0-47.6 ms alone, 49.9-54.5 -> 47.0-50.6 ms in the training step */
    if (wi >= 0) {
      int64_t lanes = upcast_size(sh); /* nothing is unrolled yet: the upcast lanes */
      for (int k = 0; k < sh->n && 2 * lanes <= 24 * (int64_t)w; k++)
        if (is_upcastable(sh, k) && !is_reduce_type(sh->type[k]) && sh->size[k] % 2 == 0 && sh->size[k] >= 4 &&
            !in_slice(cont, sh->rngs.data[k]) && cont != sh->rngs.data[k]) {
          try_opt(s, OPT_UPCAST, k, 2);
          shape_load(s, sh);
          break;
        }
    }
    int last = last_unrollable(sh);
    /* unroll a long reduce by 4 (not the wide tile's, above); a small one (a conv window) is left as a loop: unrolling
     * kx = 3 measured slower */
    if (red_chunks && last >= 0) {
      try_opt(s, OPT_UNROLL, unrollable_count(sh) - 1, sh->size[last] <= 2 * w ? 0 : w);
      return true;
    }
    if (unroll > 1 && last >= 0 && sh->size[last] > 4 && sh->size[last] % unroll == 0)
      try_opt(s, OPT_UNROLL, unrollable_count(sh) - 1, unroll);
    return true;
  }
  return false;
}

/* ---- CPU adaptation: the loop order of a copy that reads rows far apart ----
 * A copy into panels (schedule/earliest.c pack_matmul_operand) writes panel p, row k, lane j from row k of B: in its
 * natural loop order (p, k, j) consecutive k read lines a multiple of 4 KiB apart, which the prefetchers do not follow
 * and the caches alias. With the row loop outermost the reads are sequential. When every access reads the innermost
 * loop with unit stride and a load's largest stride (at least 4 KiB) is on a loop other than the outermost, those two
 * loops are swapped. Measured (2 cores, the 4 MiB panel copy of a 1024x1024 float B): 0.54 -> 0.26 ms (plain C). */
static bool cpu_copy_order(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || sh->n < 3) return false;
  for (int i = 0; i < sh->n; i++)
    if (sh->type[i] != AXIS_WEAK || !sh->known[i]) return false;
  UOpVec topo = {0}, stored = {0};
  uop_toposort(s->ast, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_STORE) tg_vec_push(&stored, topo.data[i]->src[0]);
  UOp *inner = sh->rngs.data[sh->n - 1];
  int far = -1;
  int64_t far_coef = 0, first_coef = 0, itemsize = 1;
  bool ok = true;
  for (size_t i = 0; i < topo.len && ok; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2) continue;
    UOp *idx = ungated_index(u);
    ok = has_unit_term(idx, inner);
    if (!ok || cg_vec_has(&stored, u)) continue;
    itemsize = TG_MAX(1, u->dtype->bitsize / 8);
    for (int a = 0; a < sh->n - 1; a++) {
      int64_t c = term_coef(idx, sh->rngs.data[a]);
      if (a == 0) first_coef = TG_MAX(first_coef, c);
      if (c > far_coef) far_coef = c, far = a;
    }
  }
  tg_vec_free(&topo);
  tg_vec_free(&stored);
  if (!(ok && far > 0 && far_coef > first_coef && far_coef * itemsize >= 4096) || !try_opt(s, OPT_SWAP, 0, far))
    return false;
  /* and 16 of those rows per step (upcast): each panel then gets 16 consecutive rows, one contiguous run of lines,
   * where one row's step writes a line into every panel (pages apart). Measured (2 cores, AVX-512, the panel copies
   * of matmul_1024 / matmul_2048, min-median us): swapped 190-310 / 1650-2250, 16 rows 137-230 / 1260-1470 (8 rows
   * 1350-1610 on 2048) */
  shape_load(s, sh);
  if (sh->size[0] % 16 == 0 && sh->size[0] >= 32) try_opt(s, OPT_UPCAST, 0, 16);
  return true;
}

/* ---- CPU adaptation: a transposing copy in small tiles ----
 * An elementwise kernel whose store is contiguous along one axis while a load reads that axis a cache line or more
 * apart and is contiguous along another (a transpose: W^T of a Linear layer made contiguous for the matmul tiles)
 * walks one of the two with a stride of a line per element. A tile of 4 store lanes x 8 load lanes reads 4 rows of
 * 8 and writes 8 rows of 4, each a vector. Measured (2 cores, AVX-512, the MLP's 128x784 float32 W1 -> 784x128,
 * us min of 150): plain loops 24, tiles 4x4 9.0-9.9, 4x8 9.5-10.5, 8x8 12.0-12.3, 8x16 9.4-11.9, 16x16 16.7-22. */
static bool cpu_transpose_tile(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || s->ren->vector_bytes <= 0) return false;
  UOpVec topo = {0}, stored = {0};
  uop_toposort(s->ast, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_STORE) tg_vec_push(&stored, topo.data[i]->src[0]);
  int st = -1, ld = -1;
  UOp *store_idx = stored.len == 1 && stored.data[0]->op == TG_OP_INDEX && stored.data[0]->nsrc >= 2
                       ? ungated_index(stored.data[0]) : NULL;
  for (int a = sh->n - 1; a >= 0 && store_idx && st < 0; a--)
    if (is_upcastable(sh, a) && sh->size[a] % 4 == 0 && has_unit_term(store_idx, sh->rngs.data[a])) st = a;
  for (size_t i = 0; i < topo.len && st >= 0 && ld < 0; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2 || cg_vec_has(&stored, u)) continue;
    UOp *idx = ungated_index(u);
    if (term_coef(idx, sh->rngs.data[st]) < 16) continue;
    for (int a = sh->n - 1; a >= 0 && ld < 0; a--)
      if (a != st && is_upcastable(sh, a) && sh->size[a] % 4 == 0 && has_unit_term(idx, sh->rngs.data[a]) &&
          term_coef(store_idx, sh->rngs.data[a]) >= 16)
        ld = a;
  }
  tg_vec_free(&topo);
  tg_vec_free(&stored);
  if (ld < 0) return false;
  RangeArg ld_ra = *sh->rngs.data[ld]->arg.range;
  if (!try_opt(s, OPT_UPCAST, st, 4)) return false;
  shape_load(s, sh);
  int li = axis_of(sh, &ld_ra);
  if (li >= 0) try_opt(s, OPT_UPCAST, li, sh->size[li] % 8 == 0 ? 8 : 4);
  return true;
}

/* ---- CPU adaptation: reductions along a contiguous axis ----
 * tinygrad upcasts 4 outputs and unrolls the reduce by 4; the lanes are then added up in every iteration, a chain the
 * C compiler cannot vectorize (no reassociation), and the elementwise work before the reduce (softmax's exp) stays
 * scalar. When every load of the reduced value reads the last reduce axis with unit stride, the loop is left alone
 * instead: the renderer marks it for the compiler's loop vectorizer (render/c.c wants_vectorize_hint), which then
 * runs it on full SIMD registers with vector accumulators. Measured (2 cores, AVX-512, 4096x1024 float32): softmax's
 * exp-sum kernel 10.4 ms -> 0.86 ms (its max kernel keeps tinygrad's opts: 0.5 ms, 2.2 ms when
 * left to the vectorizer). */
/* ---- CPU adaptation: a sum down the columns ----
 * A float32 sum whose loads read every reduce axis with a stride (a sum over the rows of a matrix: a bias gradient,
 * batch statistics) and an output axis with unit stride: that axis is upcast by a vector and then by up to 16 more,
 * so each step of the reduce reads whole cache lines of up to 16 rows' worth of columns into 16 vector accumulators
 * (cg_expand). tinygrad's heuristic upcasts by 4 and unrolls the reduce: each step then reads 16 bytes of a cache
 * line that the next column tile reads again. Measured (2 cores, AVX-512, float32 32768x4096 summed over axis 0):
 * 258 ms (2.1 GB/s), 16 x 4 lanes 36 ms, 16 x 16 lanes 30 ms (18 GB/s). */
static bool cpu_column_reduce(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || s->ren->vector_bytes <= 0) return false;
  UOp *red = opt_first_reduce(s->ast);
  if (!red || red->arg.red.op != TG_OP_ADD || red->dtype != DT_FLOAT32 || !unrollable_count(sh)) return false;
  int w = s->ren->vector_bytes / 4;
  UOpVec slice = {0}, loads = {0};
  uop_toposort(red->src[0], NULL, NULL, &slice);
  for (size_t i = 0; i < slice.len; i++)
    if (slice.data[i]->op == TG_OP_INDEX && slice.data[i]->nsrc >= 2) tg_vec_push(&loads, ungated_index(slice.data[i]));
  tg_vec_free(&slice);
  bool strided = loads.len > 0;
  for (size_t i = 0; i < loads.len && strided; i++)
    for (int a = 0; a < sh->n && strided; a++)
      if (is_reduce_type(sh->type[a])) strided = !has_unit_term(loads.data[i], sh->rngs.data[a]);
  int v = -1;
  for (int a = sh->n - 1; a >= 0 && strided && v < 0; a--) {
    if (!is_upcastable(sh, a) || sh->size[a] % w) continue;
    bool unit = true, any = false;
    for (size_t i = 0; i < loads.len && unit; i++) {
      if (!in_slice(loads.data[i], sh->rngs.data[a])) continue;
      unit = has_unit_term(loads.data[i], sh->rngs.data[a]);
      any = true;
    }
    if (unit && any) v = a;
  }
  tg_vec_free(&loads);
  if (v < 0 || !try_opt(s, OPT_UPCAST, v, w)) return false;
  shape_load(s, sh);
  static const int more[4] = {16, 8, 4, 2};
  int amt = largest_divisor(sh->size[v], more, 4);
  if (amt) try_opt(s, OPT_UPCAST, v, amt);
  return true;
}

/* A long row reduce with a vector every row reads (a matrix-vector product: x @ W^T in a decode step, W's rows
 * 4096 or more long) takes 4 output rows per loop: each load of the vector then serves 4 rows, where with one row the
 * vector (16-32 KiB of float32) and the weight stream compete for the L1 cache. Measured (2 cores, AVX-512, 2
 * threads, the 1B llama's F16 decode, DEBUG=2, us per call, alternating runs): its 8192 -> 2048 down projection
 * 1258-1420 -> 845-1066; the 2048-long rows were not faster with 4 (gate/up 646-1014 -> 1006-1164), so they keep one. */
static void shared_vector_rows(OptScheduler *s, Shape *sh) {
  UOpVec idx = {0};
  buffer_indexes(s->ast, &idx);
  for (int a = 0; a < sh->n; a++)
    if (is_upcastable(sh, a) && !is_reduce_type(sh->type[a]) && sh->size[a] % 4 == 0 &&
        some_index_skips(&idx, sh->rngs.data[a])) {
      try_opt(s, OPT_UPCAST, a, 4);
      break;
    }
  tg_vec_free(&idx);
}

static bool cpu_row_reduce(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !s->ren->reduce_vectorize_hint) return false;
  UOp *red = opt_first_reduce(s->ast);
  int last = last_unrollable(sh);
  /* ADD only: a MAX reduce (tinygrad's select, NaN-propagating) is not a reduction the vectorizer recognizes */
  /* with more reduce axes (batch statistics over (N, H, W)) the loop is entered once per outer step, and its vector
   * lanes are added up each time: 128 elements at least. Measured (2 cores, AVX-512, the CNN step's BatchNorm
   * statistics, ms per step): a 400-element row (4 kernels) 9.35 -> 6.12 (tinygrad's greedy float4 tiles before),
   * 144 elements 2.15 -> 1.66, 64 elements 0.30 -> 0.44 (so 64 keeps the tiles) */
  int min_len = unrollable_count(sh) == 1 ? 64 : 128;
  if (!red || red->arg.red.op != TG_OP_ADD || last < 0 || sh->size[last] < min_len) return false;
  UOp *rng = sh->rngs.data[last];
  UOpVec slice = {0};
  uop_toposort(red->src[0], NULL, NULL, &slice);
  bool ok = true, any = false;
  for (size_t i = 0; i < slice.len && ok; i++) {
    UOp *u = slice.data[i];
    if (u->op != TG_OP_INDEX || u->nsrc < 2 || !in_slice(u->src[1], rng)) continue;
    ok = has_unit_term(ungated_index(u), rng);
    any = true;
  }
  tg_vec_free(&slice);
  if (ok && any && sh->size[last] >= 4096) shared_vector_rows(s, sh);
  return ok && any;
}

/* ---- CPU adaptation: a short reduce over transcendental math ----
 * A reduce of at most 32 elements whose body computes an exp/log/sin (softmax's exp-sum over 10 classes) keeps its
 * loop and gets no default upcast: unrolled (or upcast by 4) each lane is a separate scalar copy of the polynomial
 * the compiler does not vectorize, where the plain loop runs better. Measured (2 cores, AVX-512, the MLP training
 * step's 512x10 exp-sum, us min of 40 steps): unrolled 25.6-26.7, upcast 4 x loop 22.1-22.9, plain loop 19.6-20.0
 * (its max over the same rows has no transcendental and keeps the unroll: 0.7 vs 1.4 as a loop). */
static bool cpu_short_transcendental_reduce(const OptScheduler *s, const Shape *sh) {
  if (s->ren->has_local || !unrollable_count(sh) || count_type(sh, AXIS_UPCAST, AXIS_UNROLL)) return false;
  int last = last_unrollable(sh);
  UOp *red = opt_first_reduce(s->ast);
  if (last < 0 || sh->size[last] > 32 || !red) return false;
  return uop_op_in_backward_slice_with_self(red, TG_OP_EXP2) || uop_op_in_backward_slice_with_self(red, TG_OP_LOG2) ||
         uop_op_in_backward_slice_with_self(red, TG_OP_SIN);
}

/* ---- CPU adaptation: a fused row (opt_row_kernel: softmax, log_softmax, layernorm in one kernel) ----
 * Per row, the reduce loops and the store loop stay plain loops for the compiler's loop vectorizer (an ADD reduce
 * takes the renderer's hint, see cpu_row_reduce; the store loop vectorizes as an elementwise kernel's does), except
 * a MAX reduce, which the vectorizer does not take: unrolled by 4, as tinygrad's heuristic does for the max kernel of
 * the unfused softmax. The rows go to THREAD. Measured (2 cores, AVX-512, softmax 4096x4096 float32, best of 8):
 * the default heuristic's float4 upcast and unroll 76 ms, these opts ~6.5 ms, the unfused 3 kernels 9.8 ms. */
static bool cpu_row_kernel(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !opt_row_kernel(s->ast)) return false;
  UOpVec topo = {0};
  uop_backward_slice(s->ast, &topo);
  for (int a = sh->n - 1, k = unrollable_count(sh) - 1; a >= 0; a--) {
    if (!is_unrollable(sh, a)) continue;
    bool max = false;
    for (size_t i = 0; i < topo.len; i++)
      if (topo.data[i]->op == TG_OP_REDUCE && topo.data[i]->arg.red.op == TG_OP_MAX && topo.data[i]->nsrc > 1)
        for (uint32_t j = 1; j < topo.data[i]->nsrc; j++) max |= topo.data[i]->src[j] == sh->rngs.data[a];
    if (max && sh->size[a] % 4 == 0) try_opt(s, OPT_UNROLL, k, 4);
    k--;
  }
  tg_vec_free(&topo);
  return true;
}

/* ---- GPU: a fused row on one block's threads (opt_row_kernel: softmax, log_softmax, layernorm in one kernel) ----
 * The row axis of length N (the output axis the reductions do not depend on, every reduce axis N long) is split the
 * same way in each of its loops: element u*T + t, thread t of T, lane u of U = N/T (U <= 32, T <= 128 where it can,
 * GPU_ROW_THREADS, else up to the device's local size). The store loop gets LOCAL T then UPCAST U (two UPCASTs past
 * 16 lanes); each reduce GROUP T then UNROLL U:
 * a partial per thread over its U lanes, the partials through shared memory, the result in every thread. Consecutive
 * threads read consecutive floats (coalesced). gpudims gives the LOCAL range and the reduces' GROUP ranges one thread
 * index (cg_gpu.c: ranges no value depends on together), so the block has T threads, and the three loops read the
 * same element at the same (thread, lane): one load, kept in registers across the loops. The other output axes (the
 * rows) stay GLOBAL: a block per row. A row no such split divides (a prime length) is padded to T*U first (PADTO on
 * the row and each reduce axis: the loads past its end are masked, read as each reduce's identity, and their stores
 * dropped), U = ceil(N/128) up to 32: a row of 10007 runs 313 threads x 32 lanes, one kernel as on the CPU (without
 * it 3, tinygrad's). Applied on a copy: all or nothing; GPU_ROW_KERNEL=0 turns it off (a GPU row
 * kernel then runs gpu_row_reduce on one reduce, the others looped by every thread: keep FUSE_ROWS=0 with it).
 * Each thread reduces all T partials from shared memory after the barrier (cg_gpu.c), T*T/8 reads a block: fewer
 * threads with more lanes each is faster. Measured on the H200 (DEBUG=2, softmax 4096x4096 float32, one kernel):
 * T=128 x 32 lanes 37.9 us (3.5 TB/s), T=256 x 16 56 us, T=512 x 8 189 us, T=1024 x 4 868 us; tinygrad's 3 kernels
 * (FUSE_ROWS=0) 25 + 22 + 35 = 82 us, torch's softmax ~65 us. bench_gpu's figure (with the host's time per realize)
 * 2074-2392 GB/s at T=128 against 1372 with FUSE_ROWS=0 and torch's 2052. */
/* every REDUCE of the kernel (topo: its backward slice) depends on rng: a row of the fused row kernel, not the row
 * axis its loops walk */
static bool every_reduce_reads(const UOpVec *topo, UOp *rng) {
  for (size_t i = 0; i < topo->len; i++)
    if (topo->data[i]->op == TG_OP_REDUCE && !uop_in_backward_slice(topo->data[i], rng)) return false;
  return true;
}

static int axis_of_id(const OptScheduler *s, int64_t id, int64_t *size);
static bool gpu_row_kernel(OptScheduler *s, Shape *sh) {
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("NOLOCALS", 0) || !tg_getenv_int("GPU_ROW_KERNEL", 1) ||
      !opt_row_kernel(s->ast))
    return false;
  shape_load(s, sh);
  if (count_type(sh, AXIS_UPCAST, AXIS_UNROLL) || count_type(sh, AXIS_LOCAL, AXIS_GROUP_REDUCE)) return false;
  /* the reduce axes: all of one length N; the row axis: the one output axis of length N some REDUCE does not read. A
   * row of a Variable's length (decode attention's softmax over start_pos + 1 keys): every axis ends at the same
   * expression; n is its largest value, and the row is padded to it below */
  int64_t n = -1;
  UOp *end = NULL;
  int row = -1, nrow = 0;
  int64_t red_ids[16], row_id = -1;
  int nred = 0;
  UOpVec topo = {0};
  uop_backward_slice(s->ast, &topo);
  bool ok = true;
  for (int a = 0; a < sh->n && ok; a++) {
    if (sh->type[a] != AXIS_REDUCE) continue;
    UOp *e = sh->rngs.data[a]->src[0];
    ok = (end == NULL || e == end) && nred < 16;
    end = e, n = sh->size[a];
    if (ok) red_ids[nred++] = sh->rngs.data[a]->arg.range->axis_id;
  }
  for (int a = 0; a < sh->n && ok && n > 0; a++) {
    if (sh->type[a] != AXIS_GLOBAL && sh->type[a] != AXIS_WEAK) continue;
    if (every_reduce_reads(&topo, sh->rngs.data[a])) continue;
    nrow++;
    row = a;
  }
  tg_vec_free(&topo);
  if (!ok || nred == 0 || nrow != 1 || sh->rngs.data[row]->src[0] != end || n <= 0) return false;
  bool symbolic = !sh->known[row];
  row_id = sh->rngs.data[row]->arg.range->axis_id;
  int64_t lmax = s->ren->local_max[0] > 0 ? s->ren->local_max[0] : 1024, t = 0, u = 0;
  int64_t want = tg_getenv_int("GPU_ROW_THREADS", 128); /* the most threads a row takes when 32 lanes or fewer do */
  for (int64_t cu = 1; cu <= 32 && !t && !symbolic; cu++)
    if (n % cu == 0 && n / cu <= want) t = n / cu, u = cu;
  for (int64_t cu = 1; cu <= 32 && !t && !symbolic; cu++)
    if (n % cu == 0 && n / cu <= lmax) t = n / cu, u = cu;
  int64_t padded = symbolic ? -1 : n;
  if (!t) { /* no split divides the row (a prime or a Variable's length): U lanes of T threads past its end, masked */
    u = TG_MIN((n + want - 1) / want, 32);
    t = (n + u - 1) / u;
    if (t > lmax) return false;
    padded = t * u;
  }
  OptScheduler c;
  opt_sched_copy(&c, s);
  int64_t sz;
  int ax;
  for (int k = -1; k < nred && ok && (padded != n || symbolic); k++) { /* the row, then each reduce axis */
    ax = axis_of_id(&c, k < 0 ? row_id : red_ids[k], &sz);
    ok = ax >= 0 && try_opt(&c, OPT_PADTO, ax, (int)padded);
  }
  ax = axis_of_id(&c, row_id, &sz);
  ok = ok && ax >= 0 && try_opt(&c, OPT_LOCAL, ax, (int)t);
  if (ok && u > 16) { /* an UPCAST takes 16 lanes at most: the rest in a second one */
    int first = 0;
    for (int d = 16; d > 1 && !first; d--)
      if (u % d == 0) first = d;
    ax = axis_of_id(&c, row_id, &sz);
    ok = first && ax >= 0 && try_opt(&c, OPT_UPCAST, ax, first);
  }
  if (ok && u > 1) {
    ax = axis_of_id(&c, row_id, &sz);
    ok = ax >= 0 && (sz == 1 || try_opt(&c, OPT_UPCAST, ax, 0));
  }
  for (int k = 0; k < nred && ok; k++) {
    /* GROUP counts the REDUCE axes, UNROLL the GROUP_REDUCE and REDUCE ones (of size > 1) */
    UOpVec r = {0};
    opt_sched_rngs(&c, &r);
    int gk = -1, nk = 0;
    for (size_t i = 0; i < r.len; i++)
      if (cg_axis_type(r.data[i]) == AXIS_REDUCE) {
        if (r.data[i]->arg.range->axis_id == red_ids[k]) gk = nk;
        nk++;
      }
    tg_vec_free(&r);
    ok = gk >= 0 && try_opt(&c, OPT_GROUP, gk, (int)t);
    if (ok && u > 1) {
      opt_sched_rngs(&c, &r);
      int uk = -1, nu = 0;
      for (size_t i = 0; i < r.len; i++) {
        AxisType ty = cg_axis_type(r.data[i]);
        int64_t rs = uop_vmax(r.data[i]) + 1;
        if ((ty == AXIS_GROUP_REDUCE || ty == AXIS_REDUCE) && rs > 1) {
          if (ty == AXIS_REDUCE && r.data[i]->arg.range->axis_id == red_ids[k]) uk = nu;
          nu++;
        }
      }
      tg_vec_free(&r);
      ok = uk >= 0 && try_opt(&c, OPT_UNROLL, uk, 0);
    }
  }
  opt_sched_take(s, &c, ok);
  tg_clear_error();
  return ok;
}

/* ---- CPU adaptation: register tiles for A @ B^T ----
 * When both loads of a matmul-like reduce read the last reduce axis with unit stride (x @ W^T of a Linear layer, a
 * matmul against a transposed matrix), no output axis is contiguous and cpu_matmul_tiles does not apply. A tile of
 * output lanes (8 along the axis of the bigger operand, 2 along the other) is upcast, and the reduce loop stays a
 * loop for the compiler's loop vectorizer (the renderer's hint, see cpu_row_reduce): 16 vector accumulators fed by
 * unit-stride vector loads, added up after the loop. Measured (2 cores, AVX-512, float32, 512x784 @ (128x784)^T, the
 * MLP's first layer): tinygrad's opts 55 GFLOPS, the plain loop vectorized 101, tiles 4x4 193-206, 8x2 194-198, 2x8
 * 166-181; 1024^3: plain 34, 4x4 109-128, 8x2 170-198, 2x8 75. */
static bool cpu_dot_tiles(OptScheduler *s, Shape *sh) {
  if (s->ren->has_local || !s->ren->reduce_vectorize_hint) return false;
  UOp *red, *mul, *ia, *ib;
  if (!sum_of_product(s, &red, &mul, &ia, &ib)) return false;
  TG_UNUSED(red);
  int last = last_unrollable(sh);
  if (last < 0 || unrollable_count(sh) != 1 || sh->size[last] < 64) return false;
  UOp *k = sh->rngs.data[last];
  if (!has_unit_term(ia, k) || !has_unit_term(ib, k)) return false;
  /* the 8-lane side reads the bigger operand: the other one is streamed once per tile row */
  UOp *big = mul->src[0];
  if (buffer_bytes_of_load(mul->src[1]) > buffer_bytes_of_load(mul->src[0])) {
    UOp *t = ia;
    ia = ib, ib = t;
    big = mul->src[1];
  }
  int m = -1, n = -1;
  for (int i = 0; i < sh->n; i++) {
    if (!is_upcastable(sh, i) || is_reduce_type(sh->type[i])) continue;
    UOp *r = sh->rngs.data[i];
    bool in_a = in_slice(ia, r), in_b = in_slice(ib, r);
    if (in_a && !in_b && m < 0) m = i;
    if (in_b && !in_a && n < 0) n = i;
  }
  /* a bigger operand of 16-bit floats (an F16 model's weights) is converted to float32 per vector loaded: 4 x 4
   * lanes convert half as many per product as 8 x 2. Measured (2 cores, AVX-512, 2 threads, the 1B llama's F16
   * prefill of 32 tokens, tok/s, alternating runs): 8 x 2 45.2, 44.8; 4 x 4 52.3, 49.6; 8 x 4 42.9, 43.2; 4 x 8 45.9 */
  bool converted = big->op == TG_OP_CAST && dt_is_float(big->src[0]->dtype->base) && big->src[0]->dtype->base->bitsize == 16;
  static const int mcands[] = {8, 4, 2}, ncands[] = {2}, mhalf[] = {4, 2}, nhalf[] = {4, 2};
  int um = m < 0 ? 0 : converted ? largest_divisor(sh->size[m], mhalf, 2) : largest_divisor(sh->size[m], mcands, 3);
  int un = n < 0 ? 0 : converted ? largest_divisor(sh->size[n], nhalf, 2) : largest_divisor(sh->size[n], ncands, 1);
  if (!um || !un) return false;
  /* n is upcast first: its axis index stays valid (upcasting m would not move it either way: both keep their slot) */
  if (!try_opt(s, OPT_UPCAST, n, un) || !try_opt(s, OPT_UPCAST, m, um)) return false;
  /* the bigger operand's rows outside the other's when it does not fit the cache and the other does (a prefill's
   * weight and its tokens): each weight tile is read from memory once and the tokens from L2 for it, where with the
   * tokens outside every tile row streamed the whole weight again (the 1B F16 gate, 33.5 MB, 8 times a prefill of 32
   * tokens). Measured (2 cores, 2 threads, that prefill, alternating runs): 52.0-55.7 -> 62.2-62.4 tok/s (gate 10.0 ->
   * 6.2 ms); with the down projection no longer split (schedule/earliest.c factor_read_once) 74.6-79.9.
   * DOT_ROWS_OUTER=0 keeps the order. */
  int64_t small = TG_MIN(buffer_bytes_of_load(mul->src[0]), buffer_bytes_of_load(mul->src[1]));
  if (m > n && tg_getenv_int("DOT_ROWS_OUTER", 1) && buffer_bytes_of_load(big) > (8 << 20) && small <= (512 << 10) &&
      sh->type[m] == AXIS_WEAK && sh->type[n] == AXIS_WEAK)
    try_opt(s, OPT_SWAP, n, m);
  return true;
}

/* ---- CPU adaptation: a batch-like loop outermost ----
 * A reduce kernel's LOOP axis that every buffer access reads (a batch of independent products) goes outermost,
 * where it shares out the inputs: the output tiles inside then reuse one batch's inputs from cache, while with it
 * inside every output tile streams the whole input again. split_reduceop's partial axis of a conv weight gradient
 * is such an axis, already first since the partials are stored partial-major (schedule/earliest.c). */
static void cpu_batch_outer(OptScheduler *s, Shape *sh) {
  shape_load(s, sh);
  if (s->ren->has_local || !unrollable_count(sh) || sh->n < 2 || sh->type[0] != AXIS_WEAK) return;
  UOpVec idx = {0};
  buffer_indexes(s->ast, &idx);
  bool first_in_all = true;
  for (size_t i = 0; i < idx.len; i++) first_in_all &= in_slice(idx.data[i], sh->rngs.data[0]);
  for (int a = 1; a < sh->n && idx.len >= 3 && !first_in_all; a++) {
    if (sh->type[a] != AXIS_WEAK) continue;
    bool all = true;
    for (size_t i = 0; i < idx.len && all; i++) all = in_slice(idx.data[i], sh->rngs.data[a]);
    if (all) {
      try_opt(s, OPT_SWAP, 0, a);
      break;
    }
  }
  tg_vec_free(&idx);
  shape_load(s, sh);
}

/* tinygrad's matvec step (devices with locals and shared memory): a sum of products of two loads whose first reduce
 * range is a term of the first operand's index, every range of which the second operand's index holds, gets
 * GROUP 8 (threads per row), LOCAL 4 (block size), UPCAST 4 (rows per thread) on the first global axis that fits.
 * MV=0 turns it off; MV_BLOCKSIZE / MV_THREADS_PER_ROW / MV_ROWS_PER_THREAD change the sizes. */
static bool gpu_matvec(OptScheduler *s, Shape *sh) {
  int64_t bs = tg_getenv_int("MV_BLOCKSIZE", 4), tpr = tg_getenv_int("MV_THREADS_PER_ROW", 8),
          rpt = tg_getenv_int("MV_ROWS_PER_THREAD", 4);
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("MV", 1) == 0 || (bs <= 1 && tpr <= 1 && rpt <= 1))
    return false;
  UOp *red = opt_first_reduce(s->ast);
  if (!red || red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || sh->n < 2) return false;
  UOp *mul = red->src[0];
  if (mul->op != TG_OP_MUL || mul->src[0]->op != TG_OP_INDEX || mul->src[1]->op != TG_OP_INDEX ||
      mul->src[0]->nsrc < 2 || mul->src[1]->nsrc < 2)
    return false;
  UOp *first_reduce = NULL;
  for (int i = 0; i < sh->n && !first_reduce; i++)
    if (sh->type[i] == AXIS_REDUCE) first_reduce = sh->rngs.data[i];
  if (!first_reduce) return false;
  UOp *idx0 = mul->src[0]->src[1], *idx1 = mul->src[1]->src[1];
  if (idx0->op == TG_OP_WHERE && uop_is_invalid(idx0->src[2])) idx0 = idx0->src[1];
  if (idx1->op == TG_OP_WHERE && uop_is_invalid(idx1->src[2])) idx1 = idx1->src[1];
  UOpVec terms = {0};
  uop_split(idx0, TG_OP_ADD, &terms);
  bool term = cg_vec_has(&terms, first_reduce);
  tg_vec_free(&terms);
  CgRanges rr;
  cg_ranges_init(&rr);
  const UOpVec *r0 = cg_ranges_of(&rr, idx0), *r1 = cg_ranges_of(&rr, idx1);
  bool contained = true;
  for (size_t i = 0; i < r0->len && contained; i++) contained = cg_vec_has(r1, r0->data[i]);
  cg_ranges_free(&rr);
  if (!term || !contained) return false;
  for (int g = 0; g < sh->n; g++) {
    if (sh->type[g] != AXIS_GLOBAL) continue;
    if (!uop_divides(first_reduce->src[0], tpr) || sh->size[g] % (bs * rpt) != 0) continue;
    if (tpr > 1) try_opt(s, OPT_GROUP, 0, (int)tpr);
    if (bs > 1) try_opt(s, OPT_LOCAL, g, (int)bs);
    if (rpt > 1) try_opt(s, OPT_UPCAST, g, (int)rpt);
    return true;
  }
  return false;
}

/* GPU row reduce (not tinygrad's): a kernel whose last reduce axis every load it indexes reads contiguously (a row
 * sum, softmax's max and sum, the first stage of a split sum, BatchNorm's per-channel sums over (n, h*w)), with an
 * output too big for the small-output GROUPTOP. tinygrad upcasts 4 rows per thread and unrolls the row by 4: one
 * thread walks 4 rows alone, so softmax 4096x4096 runs on 1024 threads in all (0.085x torch here) and the split sum's
 * lanes read 16 KiB apart. Here a warp (or half of one) reduces a row: UNROLL u (a float4 per lane for u = 4), then
 * GROUP g on the rest of the row (lane l reads elements (k*g + l)*u .. +u-1: neighbouring lanes, neighbouring
 * bytes), the g partials summed through shared memory; and LOCAL 4 rows per block. (u, g) is the first of (4, 32),
 * (2, 32), (1, 32), (4, 16), (2, 16), (1, 16) whose product divides the row (a row of 400 = 20x20: GROUP 16; the
 * BatchNorm statistics of the CNN step, [32, 256, r2, r400], ran on 512 threads in all). Other reduce axes (r2 there)
 * stay loops of every lane. GPU_ROW_REDUCE=0 turns it off. Applied on a copy: all or nothing. */
static bool gpu_row_reduce(OptScheduler *s, Shape *sh, int64_t min_out, int64_t min_row) {
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("NOLOCALS", 0) || !tg_getenv_int("GPU_ROW_REDUCE", 1))
    return false;
  shape_load(s, sh);
  if (!unrollable_count(sh) || count_type(sh, AXIS_UPCAST, AXIS_UNROLL) || upcastable_output_prod(sh) <= min_out)
    return false;
  int r = last_unrollable(sh);
  if (r < 0 || sh->type[r] != AXIS_REDUCE || !sh->known[r] || sh->size[r] < min_row) return false;
  static const int splits[][2] = {{4, 32}, {2, 32}, {1, 32}, {4, 16}, {2, 16}, {1, 16}};
  int u = 0, g = 0;
  for (size_t i = 0; i < TG_ARRAY_LEN(splits) && !g; i++)
    if (sh->size[r] % (splits[i][0] * splits[i][1]) == 0) u = splits[i][0], g = splits[i][1];
  if (!g) return false;
  UOp *rng = sh->rngs.data[r];
  UOpVec idxs = {0};
  buffer_indexes(s->ast, &idxs);
  bool contiguous = true, any = false;
  for (size_t i = 0; i < idxs.len && contiguous; i++) {
    if (!in_slice(idxs.data[i], rng)) continue;
    any = true;
    contiguous = has_unit_term(idxs.data[i], rng);
  }
  tg_vec_free(&idxs);
  if (!any || !contiguous) return false;
  int nred = 0; /* the row's index among the REDUCE axes (GROUP's axis) */
  for (int i = 0; i < r; i++) nred += sh->type[i] == AXIS_REDUCE;
  OptScheduler t;
  opt_sched_copy(&t, s);
  bool ok = (u == 1 || try_opt(&t, OPT_UNROLL, unrollable_count(sh) - 1, u)) && try_opt(&t, OPT_GROUP, nred, g);
  if (ok) { /* 4 rows (or 2) per block, on the last output axis that takes it */
    Shape tsh;
    memset(&tsh, 0, sizeof tsh);
    shape_load(&t, &tsh);
    int last = -1;
    for (int i = 0; i < tsh.n; i++)
      if ((tsh.type[i] == AXIS_GLOBAL || tsh.type[i] == AXIS_WEAK) && tsh.known[i]) last = i;
    /* with rows of 1024-4096, an earlier output axis that some input does not vary along (a prefill matmul's tokens:
     * every token reads the same weight row) is upcast by 4: each weight a lane loads serves 4 outputs from registers,
     * not 4 loads from L2. Measured on the H200 (1B prefill, 32 tokens, DEBUG=2 kernel times): the 32 x 8192 x 2048
     * float16 projections 6.63 -> 4.87 ms in all, 32 x 2048 x 2048 0.83 -> 0.70; over rows of 8192 (the down
     * projection) 2.05 -> 3.67, hence the bound. GPU_ROW_UPCAST=0: off. */
    UOpVec ix = {0};
    buffer_indexes(t.ast, &ix);
    bool row_upcast = sh->size[r] >= 1024 && sh->size[r] <= 4096 && tg_getenv_int("GPU_ROW_UPCAST", 1);
    for (int i = 0; i < last && row_upcast; i++) {
      if ((tsh.type[i] != AXIS_GLOBAL && tsh.type[i] != AXIS_WEAK) || !tsh.known[i] || tsh.size[i] % 4) continue;
      bool bcast = some_index_skips(&ix, tsh.rngs.data[i]);
      if (bcast && try_opt(&t, OPT_UPCAST, i, 4)) {
        if (tsh.size[i] == 4) last--; /* the axis is gone: the later ones move down */
        break;
      }
    }
    tg_vec_free(&ix);
    if (last >= 0 && !try_opt(&t, OPT_LOCAL, last, 4)) try_opt(&t, OPT_LOCAL, last, 2);
    tg_vec_free(&tsh.rngs);
  }
  opt_sched_take(s, &t, ok);
  tg_clear_error();
  return ok;
}

/* GPU group first (not tinygrad's): an output of 2K-64K elements each summing 2048 or more (a conv's weight gradient,
 * [64, 64, 3, 3, r512, r6, r6] in the CNN step) is split over a group before any upcast: LOCAL 32 (or the largest of
 * 16 ... 2 that divides it) on the first output axis, GROUP 16 on the largest reduce axis, one greedy upcast of a
 * global axis (one some buffer broadcasts over, by 3 or 4), and nothing more. These are the opts BEAM=2 found for
 * that kernel on the H200 (LOCAL 32, GROUP 16, UPCAST kw): 88 us where upcasts then gpu_late_group took 803 us.
 * GPU_GROUP_FIRST=0 turns it off. Applied on a copy: all or nothing. */
static bool gpu_group_first(OptScheduler *s, Shape *sh) {
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("NOLOCALS", 0) || !tg_getenv_int("GPU_GROUP_FIRST", 1))
    return false;
  shape_load(s, sh);
  int64_t out = upcastable_output_prod(sh), red = 1;
  int best = -1, best_k = -1, k = 0, first_out = -1;
  for (int i = 0; i < sh->n; i++) {
    if (sh->type[i] == AXIS_REDUCE) {
      red *= sh->size[i];
      if (sh->known[i] && sh->size[i] % 16 == 0 && (best < 0 || sh->size[i] > sh->size[best])) best = i, best_k = k;
      k++;
    } else if (first_out < 0 && is_upcastable(sh, i) && (sh->type[i] == AXIS_GLOBAL || sh->type[i] == AXIS_WEAK)) {
      first_out = i;
    }
  }
  if (best < 0 || first_out < 0 || out <= 2048 || out > 65536 || red < 2048 || count_type(sh, AXIS_UPCAST, AXIS_UNROLL))
    return false;
  OptScheduler t;
  opt_sched_copy(&t, s);
  static const int locs[] = {32, 16, 8, 4, 2};
  for (size_t i = 0; i < TG_ARRAY_LEN(locs); i++)
    if (sh->size[first_out] % locs[i] == 0 && try_opt(&t, OPT_LOCAL, first_out, locs[i])) break;
  bool ok = try_opt(&t, OPT_GROUP, best_k, 16);
  if (ok) {
    Shape tsh;
    memset(&tsh, 0, sizeof tsh);
    shape_load(&t, &tsh);
    bool upcasted[64] = {0}; /* the block's own axes keep their threads (BEAM's 512-thread block) */
    for (int i = 0; i < tsh.n; i++) upcasted[i] = tsh.type[i] == AXIS_LOCAL;
    greedy_upcast_step(&t, &tsh, upcasted);
    tg_vec_free(&tsh.rngs);
  }
  opt_sched_take(s, &t, ok);
  tg_clear_error();
  return ok;
}

/* GPU late group (not tinygrad's): a reduce kernel whose threads after the upcasts and locals cannot fill the GPU
 * (fewer than 16384; the H200 keeps 2048 per SM on 132 SMs) splits its largest reduce axis over a group of threads
 * too: GROUP when every load reads that axis contiguously (neighbouring lanes, neighbouring bytes), else GROUPTOP,
 * by the largest of 32, 16, 8, 4, 2 that divides it, keeps the block within 1024 threads and the partials within
 * shared memory (opt_apply checks). The CNN step's conv weight gradient [64, 64, 3, 3, r512, r6, r6] ran on 3072
 * threads of 12 accumulators each. GPU_LATE_GROUP=0 turns it off. */
static void gpu_late_group(OptScheduler *s, Shape *sh) {
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("NOLOCALS", 0) || !tg_getenv_int("GPU_LATE_GROUP", 1))
    return;
  shape_load(s, sh);
  if (count_type(sh, AXIS_GROUP_REDUCE, AXIS_GROUP_REDUCE) || s->dont_use_locals) return;
  int64_t threads = 1, block = 1;
  int best = -1, best_k = -1, k = 0;
  for (int i = 0; i < sh->n; i++) {
    AxisType t = sh->type[i];
    if (t == AXIS_GLOBAL || t == AXIS_LOCAL || t == AXIS_WARP) threads *= sh->size[i];
    if (t == AXIS_LOCAL || t == AXIS_WARP) block *= sh->size[i];
    if (t == AXIS_REDUCE) {
      if (sh->known[i] && sh->size[i] > 1 && (best < 0 || sh->size[i] > sh->size[best])) best = i, best_k = k;
      k++;
    }
  }
  if (best < 0 || threads >= 16384) return;
  UOp *rng = sh->rngs.data[best];
  UOpVec idxs = {0};
  buffer_indexes(s->ast, &idxs);
  bool contiguous = true;
  for (size_t i = 0; i < idxs.len && contiguous; i++)
    if (in_slice(idxs.data[i], rng)) contiguous = has_unit_term(idxs.data[i], rng);
  tg_vec_free(&idxs);
  static const int amts[] = {32, 16, 8, 4, 2};
  for (size_t i = 0; i < TG_ARRAY_LEN(amts); i++)
    if (sh->size[best] % amts[i] == 0 && block * amts[i] <= 1024 &&
        try_opt(s, contiguous ? OPT_GROUP : OPT_GROUPTOP, best_k, amts[i]))
      break;
  tg_clear_error();
}

/* tinygrad's local groups (devices with locals): rank the GLOBAL/WEAK axes with a constant size, those some buffer
 * broadcasts over first, then the higher axis; each takes the first of 32 (axis 0 only), 16, 8, 4, 3, 2 that divides
 * it while the block stays within 128 threads; the first three chosen are applied in axis order. NOLOCALS=1 gives
 * the NOLOCALS opt instead. */
static void gpu_locals(OptScheduler *s, Shape *sh) {
  if (!s->ren->has_local) return;
  if (tg_getenv_int("NOLOCALS", 0)) {
    Opt o = {OPT_NOLOCALS, -1, 0};
    opt_apply(s, o);
    return;
  }
  shape_load(s, sh);
  UOpVec idxs = {0};
  buffer_indexes(s->ast, &idxs);
  int rank_axis[64], nrank = 0;
  bool rank_bcast[64];
  for (int a = 0; a < sh->n; a++) {
    if ((sh->type[a] != AXIS_GLOBAL && sh->type[a] != AXIS_WEAK) || sh->rngs.data[a]->src[0]->op != TG_OP_CONST)
      continue;
    bool bcast = some_index_skips(&idxs, sh->rngs.data[a]);
    rank_axis[nrank] = a, rank_bcast[nrank++] = bcast;
  }
  tg_vec_free(&idxs);
  /* sorted by (broadcast first, then higher axis first) */
  for (int i = 1; i < nrank; i++)
    for (int j = i; j > 0; j--) {
      bool before = rank_bcast[j] != rank_bcast[j - 1] ? rank_bcast[j] : rank_axis[j] > rank_axis[j - 1];
      if (!before) break;
      int ta = rank_axis[j]; rank_axis[j] = rank_axis[j - 1]; rank_axis[j - 1] = ta;
      bool tb = rank_bcast[j]; rank_bcast[j] = rank_bcast[j - 1]; rank_bcast[j - 1] = tb;
    }
  /* an elementwise kernel (no reduce) is bound by memory: 256 threads a block, the first ranked axis (the one a
   * broadcast skips, else the innermost) taking up to all of them (not tinygrad's: its 32-thread blocks of a neg over
   * 2^28 cap the SM at 32 resident blocks = half its threads, and read at 1.7 TB/s where a copy reads 4.1) */
  bool elementwise = !unrollable_count(sh) && !count_type(sh, AXIS_UNROLL, AXIS_GROUP_REDUCE);
  int64_t max_block = elementwise ? 256 : 128;
  int to_axis[64], to_sz[64], nto = 0;
  for (int i = 0; i < nrank; i++) {
    int a = rank_axis[i];
    int64_t block = 1;
    for (int k = 0; k < nto; k++) block *= to_sz[k];
    static const int sizes[] = {256, 128, 64, 32, 16, 8, 4, 3, 2};
    size_t first = elementwise ? 0 : a == 0 ? 3 : 4;
    for (size_t k = first; k < TG_ARRAY_LEN(sizes); k++)
      if (sh->size[a] % sizes[k] == 0 && block * sizes[k] <= max_block) {
        to_axis[nto] = a, to_sz[nto++] = sizes[k];
        break;
      }
  }
  /* an elementwise kernel whose first ranked axis takes fewer than 32 threads (a padded 30x30 image: 3) or none (a
   * size with no such factor: the 7x7 tiles of a Winograd transform, whose lanes then ran over 2048 planes) would
   * spread each warp over rows and planes, every lane on its own cache line (the conv's pad copy ran at 0.38 TB/s):
   * flat ids instead, consecutive lanes on consecutive elements, the block shape timed by the engine (GPU_EW_FLAT=0:
   * off) */
  if (elementwise && nto && nrank && (to_axis[0] != rank_axis[0] || to_sz[0] < 32) && tg_getenv_int("GPU_EW_FLAT", 1)) {
    try_opt(s, OPT_NOLOCALS, -1, 0);
    return;
  }
  if (nto > 3) nto = 3;
  for (int i = 1; i < nto; i++) /* in axis order */
    for (int j = i; j > 0 && to_axis[j] < to_axis[j - 1]; j--) {
      int ta = to_axis[j]; to_axis[j] = to_axis[j - 1]; to_axis[j - 1] = ta;
      int ts = to_sz[j]; to_sz[j] = to_sz[j - 1]; to_sz[j - 1] = ts;
    }
  int deleted = 0;
  for (int i = 0; i < nto; i++) {
    int axis = to_axis[i] - deleted;
    shape_load(s, sh);
    bool removes_axis = axis < sh->n && to_sz[i] == sh->size[axis];
    if (try_opt(s, OPT_LOCAL, axis, to_sz[i]) && removes_axis) deleted++;
  }
  /* no axis took a LOCAL (sizes with no small factor, symbolic ones): flat ids (NOLOCALS) rather than tinygrad's one
   * thread per block; the engine then times the block shapes that divide the grid (tinygrad optimize_local_size,
   * which tinygrad only reaches with NOLOCALS=1) */
  shape_load(s, sh);
  if (!count_type(sh, AXIS_LOCAL, AXIS_WARP) && !count_type(sh, AXIS_GROUP_REDUCE, AXIS_GROUP_REDUCE) &&
      count_type(sh, AXIS_GLOBAL, AXIS_WEAK))
    try_opt(s, OPT_NOLOCALS, -1, 0);
}

/* Bytes of input one piece reads when THREAD splits the axis n ways (axis -1: no split): a load whose index uses the
 * axis reads its share of the buffer, any other load all of it (a store target is no input). */
static int64_t thread_read_bytes(const OptScheduler *s, const Shape *sh, int axis, int n) {
  UOpVec topo = {0}, stored = {0};
  uop_toposort(s->ast, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_STORE) tg_vec_push(&stored, topo.data[i]->src[0]);
  int64_t total = 0;
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    int64_t elems;
    if (u->op != TG_OP_INDEX || u->nsrc < 2 || cg_vec_has(&stored, u)) continue;
    UOp *buf = u->src[0]; /* only an INDEX is known to have sources (ASan: a source-less node's src[0]) */
    if (buf->nsrc < 1 || !uop_ssimplify_int(buf->src[0], &elems)) continue;
    int64_t bytes = elems * TG_MAX(1, buf->dtype->bitsize / 8);
    total += axis >= 0 && in_slice(ungated_index(u), sh->rngs.data[axis]) ? bytes / n : bytes;
  }
  tg_vec_free(&topo);
  tg_vec_free(&stored);
  return total;
}

/* The THREAD split (tinygrad: the largest count that divides a WEAK axis, the first such, keeping ~128K ops per
 * thread). CPU adaptations:
 * - a kernel that took a CPU register tile or the loop vectorizer (tiled) does a vector's worth of lanes per op, so
 *   its ops are counted in vectors, or as the elements it reads when there are more of those (a sum down columns
 *   is bound by memory): each piece must be worth more than the pool handoff (the research measured 9.6-10.3 us per
 *   threaded launch here). Measured (2 cores, AVX-512, a busy machine, us min per kernel in the MLP training step,
 *   655K-lane kernels of its 10-class layer): dlogits^T @ h 2 threads 30, one 6; dlogits @ W2 16 vs 6; relu(h) @
 *   W2^T 28 vs 18.
 * - of the axes that take the count, the one whose split leaves each piece the fewest input bytes to read (ties: the
 *   first, tinygrad's): a weight gradient dH^T @ x split along dH's 128 outputs has each piece read all of x; along
 *   x's 784, half of it. */
/* The work of a fused row kernel (opt_row_kernel: softmax in one kernel): its loops over the row run one after
 * another, so the rows (the output axes every reduce reads) times the sum of the loops' lengths, not their product.
 * Counted as the product, the decode attention's softmax over start_pos + 1 <= 129 keys (32 rows) was split over 2
 * threads: 28 us a call against 3.8 us on one (1B llama Q4_0, DEBUG=2). */
static int64_t row_kernel_work(const OptScheduler *s, const Shape *sh) {
  UOpVec topo = {0};
  uop_backward_slice(s->ast, &topo);
  int64_t rows = 1, loops = 0;
  for (int a = 0; a < sh->n; a++) {
    bool out = sh->type[a] == AXIS_GLOBAL || sh->type[a] == AXIS_WEAK || sh->type[a] == AXIS_THREAD;
    if (out && every_reduce_reads(&topo, sh->rngs.data[a])) rows *= sh->size[a];
    else loops += sh->size[a];
  }
  tg_vec_free(&topo);
  return rows * TG_MAX(loops, 1);
}

static void cpu_threads(OptScheduler *s, Shape *sh, bool tiled) {
  if (!s->ren->has_threads || !s->ren->has_global_max) return;
  static const int counts[] = {32, 16, 12, 8, 6, 5, 4, 3, 2};
  shape_load(s, sh);
  int64_t total = 1;
  for (int i = 0; i < sh->n; i++) total *= sh->size[i];
  if (opt_row_kernel(s->ast)) total = row_kernel_work(s, sh);
  if (tiled && s->ren->vector_bytes > 0)
    total = TG_MAX(total / TG_MAX(1, s->ren->vector_bytes / 4), thread_read_bytes(s, sh, -1, 1) / 4);
  for (size_t ci = 0; ci < TG_ARRAY_LEN(counts); ci++) {
    int threads = counts[ci], best = -1;
    if (threads > s->ren->global_max[0] || total / (128 << 10) < threads) continue;
    int64_t best_bytes = 0;
    for (int axis = 0; axis < sh->n; axis++) {
      if (sh->type[axis] != AXIS_WEAK || sh->size[axis] % threads != 0) continue;
      int64_t bytes = thread_read_bytes(s, sh, axis, threads);
      if (best < 0 || bytes < best_bytes) best = axis, best_bytes = bytes;
    }
    if (best >= 0 && try_opt(s, OPT_THREAD, best, threads)) break;
  }
}

/* the opt axis of the range with this id, -1 when gone */
int opt_axis_of_id(const OptScheduler *s, int64_t id, int64_t *size) {
  UOpVec r = {0};
  opt_sched_rngs(s, &r);
  int k = -1;
  for (size_t i = 0; i < r.len && k < 0; i++)
    if (r.data[i]->arg.range->axis_id == id) {
      k = (int)i;
      int64_t shape[64];
      if (r.len <= 64) {
        opt_sched_shape(s, shape, NULL);
        *size = shape[i];
      } else k = -1;
    }
  tg_vec_free(&r);
  return k;
}

/* tinygrad's first step: tensor cores (USE_TC=1 by default, 0 off; TC_SELECT picks one, TC_OPT >= 1 also kernels
 * with several reduce axes or cast operands, 2 pads) on axis choice 0, 1 or 2; on success the M then the N axis is
 * upcast by the first of 5/4/3/2 that divides it, N gets LOCAL 4 or 2, and the heuristic stops there. */
static bool hand_coded_tc(OptScheduler *s) {
  int use_tc = (int)tg_getenv_int("USE_TC", 1), tc_opt = (int)tg_getenv_int("TC_OPT", 0);
  int tc_select = (int)tg_getenv_int("TC_SELECT", -1);
  if (use_tc <= 0 || !s->ren->n_tensor_cores) return false;
  int n = opt_sched_len(s);
  if (n > 64) return false;
  AxisType types[64];
  opt_sched_shape(s, NULL, types);
  int nred = 0;
  for (int i = 0; i < n; i++) nred += types[i] == AXIS_REDUCE || types[i] == AXIS_GROUP_REDUCE;
  if (nred > 1 && tc_opt < 1 && opt_gpu_conv_tc(s, tc_select, use_tc)) return true;
  if (nred != 1 && tc_opt < 1) return false;
  for (int axis = 0; axis < 3; axis++) {
    OptScheduler tk;
    opt_sched_copy(&tk, s);
    if (opt_apply(&tk, (Opt){OPT_TC, axis, opt_tc_arg(tc_select, tc_opt, use_tc)}) != TG_OK) {
      opt_sched_free(&tk);
      continue;
    }
    static const int ups[] = {5, 4, 3, 2}, locs[] = {4, 2};
    for (int dim = 1; dim >= 0; dim--) {
      int64_t sz = 0;
      int ax = axis_of_id(&tk, tk.tc_axis_ids[dim], &sz);
      for (size_t k = 0; ax >= 0 && k < TG_ARRAY_LEN(ups); k++)
        if (sz % ups[k] == 0) {
          try_opt(&tk, OPT_UPCAST, ax, ups[k]);
          break;
        }
    }
    int64_t sz = 0;
    int ax = axis_of_id(&tk, tk.tc_axis_ids[0], &sz);
    for (size_t k = 0; ax >= 0 && k < TG_ARRAY_LEN(locs); k++)
      if (sz % locs[k] == 0) {
        try_opt(&tk, OPT_LOCAL, ax, locs[k]);
        break;
      }
    opt_sched_free(s);
    *s = tk;
    return true;
  }
  return false;
}

void opt_hand_coded(OptScheduler *s) {
  bool tiled = false;
  Shape sh;
  memset(&sh, 0, sizeof sh);
  UOpScope sc = uop_scope_begin();
  shape_load(s, &sh);

  if (hand_coded_tc(s)) goto out;
  if (gpu_row_kernel(s, &sh)) goto out;
  if (gpu_matvec(s, &sh)) goto out;

  /* grouping a small output needs locals (GROUPTOP fails on devices without them, as in tinygrad). tinygrad groups
   * by 16; on a GPU with shared memory (not tinygrad's) a tiny output gets a wider group, the smallest of 16 ... 256
   * giving 16384 threads (BatchNorm's statistics over 64 channels of [512, 36]: 1024 threads -> 16384),
   * GPU_WIDE_GROUPTOP=0 keeps 16 */
  int64_t out_prod = upcastable_output_prod(&sh);
  /* a matrix-vector product of 256-2048 rows of 1024 or more (the LLM decode's Q/K/V/O and down projections, float16
   * weights: tinygrad's MV step never matches a load behind a CAST) reduces its rows as gpu_row_reduce does, a warp
   * per row on coalesced loads, not by GROUPTOP's 16 lanes each walking its own 1/16 of the row (measured on the
   * H200, 2048 x 8192 float16: 142 us, 236 GB/s with GROUPTOP). GPU_MATVEC_ROWS=0 turns it off. */
  if (out_prod > 128 && out_prod <= 2048 && tg_getenv_int("GPU_MATVEC_ROWS", 1) && gpu_row_reduce(s, &sh, 128, 1024))
    goto out;
  if (out_prod <= (tg_getenv_int("NOLOCALS", 0) ? 240 : 2048)) {
    int wide = 16;
    if (s->ren->has_shared && tg_getenv_int("GPU_WIDE_GROUPTOP", 1) && !tg_getenv_int("NOLOCALS", 0))
      while (wide < 256 && out_prod * wide < 16384) wide *= 2;
    bool grouped = false;
    for (int amt = wide; amt >= 16 && !grouped; amt /= 2)
      for (int axis = 0; axis < 3 && !grouped; axis++) grouped = try_opt(s, OPT_GROUPTOP, axis, amt);
    tg_clear_error();
  }
  shape_load(s, &sh);
  if (count_type(&sh, AXIS_GROUP_REDUCE, AXIS_GROUP_REDUCE)) goto out;

  /* small masked axes (stack/cat) are upcast whole */
  {
    UOpVec gates = {0};
    opt_where_gate_ranges(s->ast, &gates);
    int to_upcast[64], nup = 0;
    int64_t up_prod = 1;
    for (int axis = 0; axis < sh.n; axis++) {
      if (!is_upcastable(&sh, axis)) continue;
      bool masked = cg_vec_has(&gates, sh.rngs.data[axis]);
      if (sh.size[axis] <= 7 && masked && up_prod * sh.size[axis] <= 49) {
        to_upcast[nup++] = axis;
        up_prod *= sh.size[axis];
      }
    }
    tg_vec_free(&gates);
    for (int i = nup; i-- > 0;) try_opt(s, OPT_UPCAST, to_upcast[i], 0);
  }

  if (gpu_row_reduce(s, &sh, 2048, 128) || gpu_group_first(s, &sh) || opt_gpu_conv(s)) goto out;
  if (opt_cpu_int8_dot(s, &sh)) goto threads;
  if (cpu_row_kernel(s, &sh)) goto threads;
  tiled = cpu_matmul_tiles(s, &sh) || cpu_dot_tiles(s, &sh) || cpu_row_reduce(s, &sh) || cpu_column_reduce(s, &sh);
  if (tiled) goto threads;

  /* more upcasts of output axes that some buffer broadcasts over, while the output is big and the tile small. On a
   * CPU an elementwise kernel (no reduce) gets no upcast at all: the compiler's loop vectorizer turns the plain loop
   * into full-width SIMD, while lanes written out block it and the SLP vectorizer does worse (softmax's exp/div
   * kernel on 4096x1024 float32: no upcast 2.4 ms, 4 lanes 6.9 ms, 16 lanes 10.7 ms; relu(a*b+c) is memory bound
   * either way) */
  bool cpu_elementwise = !s->ren->has_local && !unrollable_count(&sh) && !count_type(&sh, AXIS_UNROLL, AXIS_UNROLL);
  if (cpu_elementwise && !cpu_copy_order(s, &sh)) cpu_transpose_tile(s, &sh);
  if (!cpu_elementwise && !opt_cpu_quant_gemv(s, &sh)) {
    bool upcasted[64] = {0};
    for (;;) {
      shape_load(s, &sh);
      if (!(upcastable_output_prod(&sh) >= 1024 && upcast_size(&sh) < 32)) break;
      if (!greedy_upcast_step(s, &sh, upcasted)) break;
    }
  }

  /* unroll the last reduce when it is small (or by 4) */
  shape_load(s, &sh);
  if (cpu_short_transcendental_reduce(s, &sh)) goto threads;
  if (unrollable_count(&sh) && (upcast_size(&sh) <= 4 || !count_type(&sh, AXIS_UNROLL, AXIS_UNROLL)) &&
      upcast_size(&sh) < 64) {
    int last = last_unrollable(&sh);
    int64_t sz = sh.size[last];
    if (sz <= 32) {
      if (try_opt(s, OPT_UNROLL, unrollable_count(&sh) - 1, 0)) {
        shape_load(s, &sh);
        int l2 = last_unrollable(&sh);
        if (l2 >= 0 && sz <= 3 && sh.size[l2] <= 3) try_opt(s, OPT_UNROLL, unrollable_count(&sh) - 1, 0);
      }
    } else if (sz % 4 == 0) {
      try_opt(s, OPT_UNROLL, unrollable_count(&sh) - 1, 4);
    }
  }

  /* if nothing is upcast yet and it is easy to, upcast by 4 (not a CPU elementwise kernel: see above) */
  shape_load(s, &sh);
  if (!cpu_elementwise && !count_type(&sh, AXIS_UPCAST, AXIS_UNROLL)) {
    int last = -1;
    for (int i = 0; i < sh.n; i++)
      if (is_upcastable(&sh, i)) last = i;
    int amt = 4;
    if (last >= 0 && sh.size[last] % amt == 0) try_opt(s, OPT_UPCAST, last, amt);
  }

  gpu_locals(s, &sh);
  gpu_late_group(s, &sh);
  opt_cpu_quant_select_unroll(s, &sh);

threads:
  cpu_batch_outer(s, &sh);
  cpu_threads(s, &sh, tiled);
  opt_int8_prefill_tiles(s, &sh);
out:
  tg_vec_free(&sh.rngs);
  uop_scope_end(sc);
  /* the opts tried and refused (GROUPTOP on each of three axes, ...) are no error of the caller's: a stale
   * "KernelOptError" left here was the message of later, unrelated failures (seen in gpu_parity on the H200) */
  tg_clear_error();
}
