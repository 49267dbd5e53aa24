/* opt_conv.c — the CUDA heuristic's steps for direct convolutions (not tinygrad's; hand_coded_optimizations calls
 * them from opt_heuristic.c): opt_gpu_conv picks the upcasts, unroll and block of a conv's forward, input-gradient
 * and weight-gradient kernels in fp32 from their sliding window, opt_gpu_conv_tc puts a forward conv or input
 * gradient on tensor cores (half inputs, or fp32 under ALLOW_TF32=1) with the output row as M. Each was measured on
 * the H200 against tinygrad's choices (the figures are at each step). */
#include "opt_heuristic.h"

/* GPU direct convolutions (not tinygrad's). A conv kernel (a REDUCE-ADD of a product of two loads) reads its input
 * through a sliding window: the input's index holds an output range and a reduce range with the same coefficient
 * (x + kx). In the forward conv and the input gradient the window is reduced ((ox, kx): ox an output axis of 8-24,
 * kx a reduce of 3-5); in the weight gradient it is an output axis ((kx, x): kx an output of 3-5, x a reduce over
 * the pixels). tinygrad's upcasts never take a window of 5 (only 3 or 4 divide), and its locals skip an axis of 5 or
 * 6, so a block spans the batch, whose lanes share nothing. Measured on the H200 (gpu_opts GPU_OPTS_TRY: each list
 * timed as BEAM times its candidates; the CNN step's kernels at batch 512; us, tinygrad's heuristic in brackets):
 * - weight gradient (window output <= 8, its pixel reduce >= 8): kx upcast whole (each input row load serves kx
 *   outputs), ci (the channel only the input reads) by 2 and co (only the output gradient's) by 4, or co by 8 when
 *   there is no ci (about 40 accumulators either way), x unrolled by 4, a block of co's rest x 8 of ci's (or the
 *   other window axis ky, whole), and GROUP 4 on the largest reduce axis when under 16384 threads.
 *   [co 32, ci 32, ky 5, kx 5, 128 | r4, y 20, x 20] (the batch split 128 x 4) 307 (979; kx5 ci4 co4 347, kx5 co4
 *   594, BEAM=2's 303); conv1's [co 32, ky 5, kx 5, 256 | r2, y 24, x 24] 44 (346; co by 4: 62, no GROUP 93);
 *   conv3's [64, 32, 3, 3, 128 | r4, r8, r8] 74 (73).
 * - forward conv and input gradient (window reduce <= 8, its output >= 8 and a multiple of 4): ox upcast by 4, the
 *   channel only the weights read by 4, kx unrolled whole, a block of the channel's rest x ox's rest x 4 rows of oy
 *   (the input's window rows shared in L1, the weights broadcast). [512, 32, 20, 20 | r32, r5, r5] 314 (452; BEAM=2:
 *   264 with swapped grid axes), [512, 32, 24, 24 | r32, r5, r5] 438 (604), conv1's [512, 32, 24, 24 | r5, r5] 32
 *   (55), [512, 64, 8, 8 | r32, r3, r3] 42 (46), with r64 80 (87). A row of 10 upcast by 2 ran 130 against 95: ox
 *   must take 4. A 3-tap window also upcasts oy by 2 (GPU_CONV_ROWS=0: off): each window row loaded serves two output
 *   rows. bench_gpu's [64, 64, 28, 28 | r32, r3, r3] 62.7 us against 69.3 (2026-12-05, gpu_opts GPU_OPTS_TRY; with
 *   ky unrolled too, every window row loaded once a channel, 75.6: the registers; co by 8 instead 74.5-87.1; oy by 4
 *   85.4; BEAM=4 found nothing better than the heuristic); in bench_gpu (DEBUG=2) 65.2 us against 69.1, the CNN train
 *   step 357.5-363.8 steps/s against 341.2 (JIT, the same call). Before the rows, the CNN train step (bench_train
 *   on DEV=CUDA, JIT): 386-393 steps/s against 247-257 with GPU_CONV=0 (same run; torch eager 241-330 across runs).
 * Applied on a copy, all or nothing; GPU_CONV=0 turns it off (tinygrad's choice is back). */

/* an (output axis, reduce axis) pair the index reads with one coefficient, the smallest such; false when none.
 * skip_out: an output axis not to pair (-1: none) */
static bool window_pair(const Shape *sh, UOp *idx, int skip_out, int *out_ax, int *red_ax, int64_t *coef) {
  bool found = false;
  for (int i = 0; i < sh->n; i++) {
    if (i == skip_out || !is_upcastable(sh, i) || sh->type[i] != AXIS_GLOBAL) continue;
    int64_t ci = term_coef(idx, sh->rngs.data[i]);
    if (ci <= 0) continue;
    for (int j = 0; j < sh->n; j++) {
      if (sh->type[j] != AXIS_REDUCE || !sh->known[j] || term_coef(idx, sh->rngs.data[j]) != ci) continue;
      if (!found || ci < *coef) *out_ax = i, *red_ax = j, *coef = ci, found = true;
    }
  }
  return found;
}

/* which of a product's two operand indexes is the sliding window (the one whose window pair has the smaller
 * coefficient): *win, the other *other, with its pair; false when neither is */
static bool pick_window(const Shape *sh, UOp *ia, UOp *ib, UOp **win, UOp **other, int *out_ax, int *red_ax) {
  int o2 = -1, r2 = -1;
  int64_t c = 0, c2 = 0;
  *win = *other = NULL;
  if (window_pair(sh, ia, -1, out_ax, red_ax, &c)) *win = ia, *other = ib;
  if (window_pair(sh, ib, -1, &o2, &r2, &c2) && (!*win || c2 < c)) *win = ib, *other = ia, *out_ax = o2, *red_ax = r2;
  return *win != NULL;
}

/* the first output axis (constant size, a multiple of mult) that `in` reads and `notin` does not, not in a window
 * of `in`'s (a conv's channel axis); -1 when none */
static int channel_axis(const Shape *sh, UOp *in, UOp *notin, int64_t mult) {
  for (int i = 0; i < sh->n; i++) {
    if (!is_upcastable(sh, i) || sh->type[i] != AXIS_GLOBAL || sh->size[i] % mult) continue;
    UOp *rng = sh->rngs.data[i];
    if (!in_slice(in, rng) || in_slice(notin, rng)) continue;
    int64_t c = term_coef(in, rng);
    bool windowed = false;
    for (int j = 0; j < sh->n && !windowed && c > 0; j++)
      windowed = sh->type[j] == AXIS_REDUCE && term_coef(in, sh->rngs.data[j]) == c;
    if (!windowed) return i;
  }
  return -1;
}

/* the index among the unrollable axes (UNROLL's axis) / the REDUCE axes (GROUP's) of the range with this id */
static int reduce_axis_index(const OptScheduler *s, int64_t id, bool unrollable) {
  Shape t;
  memset(&t, 0, sizeof t);
  shape_load(s, &t);
  int k = 0, at = -1;
  for (int i = 0; i < t.n && at < 0; i++) {
    bool counts = unrollable ? is_unrollable(&t, i) : t.type[i] == AXIS_REDUCE;
    if (counts && t.rngs.data[i]->arg.range->axis_id == id) at = k;
    k += counts;
  }
  tg_vec_free(&t.rngs);
  return at;
}

static int64_t largest_dividing(int64_t n, int64_t cap) {
  for (int64_t d = cap; d > 1; d /= 2)
    if (n % d == 0) return d;
  return 1;
}

/* threads of the launch: GLOBAL x LOCAL sizes */
static int64_t launch_threads(const OptScheduler *s) {
  Shape t;
  memset(&t, 0, sizeof t);
  shape_load(s, &t);
  int64_t n = 1;
  for (int i = 0; i < t.n; i++)
    if (t.type[i] == AXIS_GLOBAL || t.type[i] == AXIS_LOCAL || t.type[i] == AXIS_GROUP_REDUCE) n *= t.size[i];
  tg_vec_free(&t.rngs);
  return n;
}

static bool conv_weight_grad(OptScheduler *t, const Shape *sh, UOp *win, UOp *grad, int kx, int x) {
  int co = channel_axis(sh, grad, win, 4), ci = channel_axis(sh, win, grad, 2);
  int ky = -1, yr = -1;
  int64_t c2;
  window_pair(sh, win, kx, &ky, &yr, &c2);
  if (co < 0 || (ci < 0 && (ky < 0 || sh->size[ky] > 8))) return false;
  int64_t kx_id = range_id(sh, kx), x_id = range_id(sh, x), co_id = range_id(sh, co);
  int64_t ci_id = ci >= 0 ? range_id(sh, ci) : -1, ky_id = ky >= 0 ? range_id(sh, ky) : -1;
  int co_up = ci < 0 && sh->size[co] % 8 == 0 ? 8 : 4; /* about 40 accumulators: kx x ci 2 x co 4, or kx x co 8 */
  if (!opt_on_id(t, OPT_UPCAST, kx_id, 0) || (ci >= 0 && !opt_on_id(t, OPT_UPCAST, ci_id, 2)) ||
      !opt_on_id(t, OPT_UPCAST, co_id, co_up))
    return false;
  int64_t xs = size_of_id(t, x_id);
  int xu = reduce_axis_index(t, x_id, true);
  if (xu < 0 || !try_opt(t, OPT_UNROLL, xu, xs % 4 == 0 ? 4 : xs <= 8 ? (int)xs : 1)) return false;
  if (!opt_on_id(t, OPT_LOCAL, co_id, largest_dividing(size_of_id(t, co_id), 32))) return false;
  if (ci >= 0 ? !opt_on_id(t, OPT_LOCAL, ci_id, largest_dividing(size_of_id(t, ci_id), 8))
              : !opt_on_id(t, OPT_LOCAL, ky_id, 0))
    return false;
  if (launch_threads(t) < 16384) { /* too few threads to fill the GPU: 4 lanes share the largest reduce */
    Shape ts;
    memset(&ts, 0, sizeof ts);
    shape_load(t, &ts);
    int best = -1;
    for (int i = 0; i < ts.n; i++)
      if (ts.type[i] == AXIS_REDUCE && ts.known[i] && ts.size[i] % 4 == 0 && (best < 0 || ts.size[i] > ts.size[best]))
        best = i;
    int g = best >= 0 ? reduce_axis_index(t, range_id(&ts, best), false) : -1;
    tg_vec_free(&ts.rngs);
    if (g >= 0) try_opt(t, OPT_GROUP, g, 4);
  }
  return true;
}

static bool conv_forward(OptScheduler *t, const Shape *sh, UOp *win, UOp *wts, int ox, int kx) {
  int ch = channel_axis(sh, wts, win, 4);
  int oy = -1, ky = -1;
  int64_t c2;
  window_pair(sh, win, ox, &oy, &ky, &c2);
  if (ch < 0) return false;
  int64_t ox_id = range_id(sh, ox), kx_id = range_id(sh, kx), ch_id = range_id(sh, ch);
  int64_t oy_id = oy >= 0 ? range_id(sh, oy) : -1;
  /* Lanes take neighbouring channels, each reading its own vector of weights (made for the layout copy's channel-
   * inner order). GPU_CONV_BCAST=n (4 or 8), where the weights' channel is not innermost (no layout copy:
   * CONTIG_HINTS=0 or 2): the channel is upcast by n and not spread over lanes, so every lane of a block reads the
   * same weights (one broadcast load each) and the lanes take the pixels. Off by default: on the H200 (bench_gpu's
   * 64x32x28x28 3x3 conv) its kernel ran 104.6 us against 84.2 (121 registers, 20% occupancy) and the CNN step's JIT
   * 208-248 steps/s against 368, the saved weight copy not making up for it. */
  int64_t bcast = tg_getenv_int("GPU_CONV_BCAST", 0);
  bool inner = term_coef(wts, sh->rngs.data[ch]) == 1 || (bcast != 4 && bcast != 8);
  int64_t chu = inner || sh->size[ch] % bcast ? 4 : bcast;
  if (sh->size[ox] % 4 || !opt_on_id(t, OPT_UPCAST, ox_id, 4) || !opt_on_id(t, OPT_UPCAST, ch_id, chu)) return false;
  /* a 3-tap window: two output rows a thread (each window row loaded serves both) */
  bool rows = oy >= 0 && ky >= 0 && sh->size[oy] % 2 == 0 && sh->size[ky] <= 3 && tg_getenv_int("GPU_CONV_ROWS", 1);
  if (rows && !opt_on_id(t, OPT_UPCAST, range_id(sh, oy), 2)) return false;
  int ku = reduce_axis_index(t, kx_id, true);
  if (ku < 0 || !try_opt(t, OPT_UNROLL, ku, 0)) return false;
  int64_t chs = size_of_id(t, ch_id), oxs = size_of_id(t, ox_id);
  int64_t block = inner ? largest_dividing(chs, 32) : 1;
  if (inner && !opt_on_id(t, OPT_LOCAL, ch_id, block)) return false;
  if (oxs > 1 && oxs <= 8 && opt_on_id(t, OPT_LOCAL, ox_id, 0)) block *= oxs;
  if (oy >= 0) {
    /* GPU_CONV_BLOCK: the most threads a block takes (256; 128 balances bench_gpu's conv's waves, 0.85 -> 0.97, but
     * its kernel ran no faster on the H200: 85.6 vs 84.2 us) */
    int64_t ys = size_of_id(t, oy_id), cap = tg_getenv_int("GPU_CONV_BLOCK", 256);
    int64_t r = !inner                                 ? (ys <= cap / block ? ys : largest_dividing(ys, cap / block))
                : ys % 4 == 0 && block * 4 <= cap ? 4
                : ys % 2 == 0 && block * 2 <= cap ? 2
                                                  : 1;
    if (r > 1) opt_on_id(t, OPT_LOCAL, oy_id, r);
  }
  return true;
}

bool opt_gpu_conv(OptScheduler *s) {
  if (!s->ren->has_local || !s->ren->has_shared || tg_getenv_int("NOLOCALS", 0) || !tg_getenv_int("GPU_CONV", 1))
    return false;
  Shape sh;
  memset(&sh, 0, sizeof sh);
  shape_load(s, &sh);
  UOp *red, *mul, *ia, *ib, *win = NULL, *other = NULL;
  int o = -1, r = -1;
  bool ok = !count_type(&sh, AXIS_UPCAST, AXIS_UNROLL) && !count_type(&sh, AXIS_GROUP_REDUCE, AXIS_LOCAL) &&
            sum_of_product(s, &red, &mul, &ia, &ib);
  if (ok) pick_window(&sh, ia, ib, &win, &other, &o, &r);
  ok = false;
  if (win) {
    OptScheduler t;
    opt_sched_copy(&t, s);
    ok = sh.size[o] <= 8 && sh.size[r] >= 8   ? conv_weight_grad(&t, &sh, win, other, o, r)
         : sh.size[r] <= 8 && sh.size[o] >= 8 ? conv_forward(&t, &sh, win, other, o, r)
                                              : false;
    opt_sched_take(s, &t, ok);
  }
  tg_vec_free(&sh.rngs);
  tg_clear_error();
  return ok;
}

/* A conv on tensor cores (not tinygrad's, which leaves kernels of several reduce axes off them unless TC_OPT >= 1,
 * and then tries axis choices 0-2 only). A forward conv or input gradient (the window's reduce axis kx <= 8, its output
 * axis ox of 16 or more) takes N = the weights' channel (co), M = ox padded to the TC's 16 (20 -> 32, 24 -> 32), K =
 * the input channel (the reduce axis outside the window), then the batch (the input's own output axis) upcast by 4
 * and N's rest by 4 (or 2). Measured on the H200 with ALLOW_TF32=1 (gpu_opts GPU_OPTS_TRY, the CNN step's conv2,
 * batch 512): the forward conv [512, 32, 20, 20, r32, r5, r5] 236 us against 314 in fp32 (gpu_conv), the input
 * gradient [512, 32, 24, 24, r32, r5, r5] 206 against 438. The other choices measured: M = batch (the first that fits
 * without padding) 1355 and 1587 (each lane's fragment reads 16 images); K = kx padded 5 -> 8: 212 and 289. The weight
 * gradients stay in fp32 (on tensor cores 417-964 us against 307). Not yet timed as a whole step: with ALLOW_TF32=1
 * and these two kernels in fp32 the step ran 382 steps/s; the kernel times say about 310 us a step less. The tensor
 * core kernels were emulated against the CPU (test_opts) but not yet checked on the GPU (gpu_parity's tf32 cases).
 * GPU_CONV_TC=0 turns it off. */
bool opt_gpu_conv_tc(OptScheduler *s, int tc_select, int use_tc) {
  if (!s->ren->has_local || !tg_getenv_int("GPU_CONV_TC", 1)) return false;
  Shape sh;
  memset(&sh, 0, sizeof sh);
  shape_load(s, &sh);
  UOp *red, *mul, *ia, *ib, *win = NULL, *wts = NULL;
  int o = -1, r = -1;
  if (sum_of_product(s, &red, &mul, &ia, &ib)) pick_window(&sh, ia, ib, &win, &wts, &o, &r);
  int n_ax = win ? channel_axis(&sh, wts, win, 8) : -1, batch = win ? channel_axis(&sh, win, wts, 4) : -1, k_ax = -1;
  for (int i = 0; win && i < sh.n && k_ax < 0; i++) { /* the reduce axis both read, outside any window */
    if (sh.type[i] != AXIS_REDUCE || !sh.known[i] || sh.size[i] % 8 || !in_slice(wts, sh.rngs.data[i])) continue;
    int64_t ci = term_coef(win, sh.rngs.data[i]);
    bool windowed = false;
    for (int j = 0; j < sh.n && !windowed; j++) windowed = j != i && term_coef(win, sh.rngs.data[j]) == ci && ci > 0;
    if (in_slice(win, sh.rngs.data[i]) && !windowed) k_ax = i;
  }
  bool found = false;
  if (win && sh.size[r] <= 8 && sh.size[o] >= 16 && n_ax >= 0 && batch >= 0 && k_ax >= 0) {
    int64_t want[3] = {range_id(&sh, n_ax), range_id(&sh, o), range_id(&sh, k_ax)}, batch_id = range_id(&sh, batch);
    for (int axis = 0; axis < 64 && !found; axis++) {
      OptScheduler tk;
      opt_sched_copy(&tk, s);
      found = opt_apply(&tk, (Opt){OPT_TC, axis, opt_tc_arg(tc_select, 2, use_tc)}) == TG_OK &&
              tk.tc_axis_ids[0] == want[0] && tk.tc_axis_ids[1] == want[1] && tk.tc_axis_ids[2] == want[2];
      if (found) {
        opt_on_id(&tk, OPT_UPCAST, batch_id, 4);
        int64_t nrest = size_of_id(&tk, want[0]);
        if (nrest % 4 == 0 || nrest % 2 == 0) opt_on_id(&tk, OPT_UPCAST, want[0], nrest % 4 == 0 ? 4 : 2);
      }
      opt_sched_take(s, &tk, found);
    }
  }
  tg_vec_free(&sh.rngs);
  tg_clear_error();
  return found;
}

