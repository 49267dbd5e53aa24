/* test_opts.c — kernel opt actions (src/codegen/opt.h) against the naive kernel:
 *   - random legal opt lists, drawn from tinygrad's BEAM action list (UPCAST, UNROLL, THREAD, PADTO, SWAP, NOLOCALS;
 *     LOCAL, GROUP, GROUPTOP, TC must be refused on the CPU), plus the hand-coded heuristic's list, applied to
 *     matmuls, convolutions, reductions, softmax, broadcasting elementwise kernels, cat/stack and pooling (our
 *     scheduler's kernels and tinygrad's own ASTs): each optimized kernel, run by the interpreter (codegen/interp.h)
 *     over every core_id, computes what the naive kernel (no opts) computes on the same random inputs (ints and bools
 *     bit-exact, floats within a tolerance for reordered sums); a subset also goes through the real C path (render_c,
 *     ONE rt_compile_many batch, rt_launch) and is compared the same way;
 *   - invalid opts fail with TG_ERR_INVALID_ARGUMENT and "KernelOptError: <reason>", the scheduler unchanged, and the
 *     same opt in opts_to_apply makes cg_lower fail with that reason;
 *   - the hand-coded heuristic picks tinygrad's opts (tests/opt_heuristic_cases.h from tools/gen_opt_heuristic_cases.py,
 *     both with 8 threads), except the deliberate CPU deviations listed in heuristic_deviations.
 * A padded reduce axis that is later unrolled is checked too (tinygrad drops partly valid lane groups there; our
 * expander adds the reduce's identity for padding lanes): padded_reduce_unrolled names such lists in a failure.
 * Knobs: OPTS_SEED=n (other random lists), OPTS_LISTS=n (lists per kernel; 30, 12 under ASan), OPTS_CASE=substring
 * (only those kernels), OPTS_LIST="PADTO:2:32,UNROLL:0:4" (that list instead of random ones; TC:axis:select:opt:use), OPTS_VERBOSE=1 (print
 * every list, and the C of both kernels when one differs), OPTS_C=n (random lists per kernel also run as compiled C; 2). */
#include <stdlib.h>

#include "tensor/tensor.h" /* first: render.h renames its own ShapeCache after it */
#include "codegen/codegen.h"
#include "codegen/interp.h"
#include "codegen/linearize.h"
#include "codegen/opt.h"
#include "render/render.h"
#include "runtime/runtime.h"
#include "schedule/schedule.h"
#include "test.h"
#include "tinygrad.h"
#include "uop/eval.h"
#include "uop/parse.h"

#include "opt_heuristic_cases.h"
#include "nvrtc_check.h"

/* THREAD counts up to 8 are legal whatever the machine (tinygrad's heuristic cases were made with the same value) */
#define TEST_THREADS 8
_Static_assert(TEST_THREADS == HEURISTIC_THREADS, "the heuristic cases pin another thread count");

static Renderer test_renderer(void) {
  Renderer r = *renderer_clang();
  r.has_threads = true;
  r.has_global_max = true;
  r.global_max[0] = TEST_THREADS;
  return r;
}

/* ================================================================================================================
 * deterministic random numbers
 * ================================================================================================================ */

static bool verbose_opts(void) { return getenv("OPTS_VERBOSE") != NULL; }

static uint64_t rng_state;

static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int rnd_below(int n) { return (int)(rnd() % (uint64_t)n); }

/* ================================================================================================================
 * the kernels under test
 * ================================================================================================================ */

typedef struct OptCase {
  char name[64];
  UOp *ast; /* kept */
} OptCase;

static TG_VEC(OptCase) cases;

static void add_case(const char *name, int k, UOp *ast) {
  OptCase c;
  snprintf(c.name, sizeof c.name, "%.56s/%d", name, k);
  c.ast = uop_keep(ast);
  tg_vec_push(&cases, c);
}

/* every kernel the scheduler makes for the tensor */
static void add1(const char *name, tg_tensor *out) {
  UOpScope sc = uop_scope_begin();
  UOp *lin = out ? sched_kernels(uop_sink(&out->uop, 1)) : NULL;
  CHECK_MSG(lin != NULL, "%s: could not build or schedule it: %s", name, tg_last_error());
  for (uint32_t i = 0; lin && i < lin->nsrc; i++) add_case(name, (int)i, lin->src[i]->src[0]);
  uop_scope_end(sc);
}

static tg_tensor *mk(tg_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t shape[4] = {a, b, c, d};
  size_t n = d ? 4 : c ? 3 : b ? 2 : 1;
  return tg_empty(shape, n, dt);
}
static tg_tensor *fl(int64_t a, int64_t b) { return mk(TG_FLOAT32, a, b, 0, 0); } /* b 0: 1-d */

#define SMALL_KERNEL_WORK 70000 /* loop iterations of the naive kernel the interpreter runs quickly enough */

static char *joined(const char *const *pieces);
static bool sched_of(OptScheduler *s, UOp *ast, const Renderer *ren);

static size_t late_cases = SIZE_MAX; /* cases from here on: the CPU pass only, after the GPU pass */

static void build_cases(void) {
  tg_scope sc = tg_scope_begin();
  /* matmuls: multiples of the upcast amounts, odd sizes (33x17x45), a matvec, a batched one */
  add1("matmul_16x32x8", tg_matmul(fl(16, 32), fl(32, 8)));
  add1("matmul_33x17x45", tg_matmul(fl(33, 17), fl(17, 45)));
  add1("matmul_24x48x12", tg_matmul(fl(24, 48), fl(48, 12)));
  add1("matvec_1x64x20", tg_matmul(fl(1, 64), fl(64, 20)));
  add1("bmm_3x8x12x10", tg_matmul(mk(TG_FLOAT32, 3, 8, 12, 0), mk(TG_FLOAT32, 3, 12, 10, 0)));
  add1("matmul_int_12x20x8", tg_matmul(mk(TG_INT32, 12, 20, 0, 0), mk(TG_INT32, 20, 8, 0, 0)));
  /* tensor-core shapes (half/bf16 in, float accumulators; one not a multiple of the TC's 16x8x16) */
  add1("matmul_half_32x64x48", tg_matmul(mk(TG_FLOAT16, 32, 64, 0, 0), mk(TG_FLOAT16, 64, 48, 0, 0)));
  add1("matmul_bf16_16x32x16", tg_matmul(mk(TG_BFLOAT16, 16, 32, 0, 0), mk(TG_BFLOAT16, 32, 16, 0, 0)));
  add1("matmul_half_20x24x12", tg_matmul(mk(TG_FLOAT16, 20, 24, 0, 0), mk(TG_FLOAT16, 24, 12, 0, 0)));
  /* convolutions */
  int64_t one[2] = {1, 1}, two[2] = {2, 2}, zero[2] = {0, 0};
  add1("conv_2x3x9x9_k3_p1", tg_conv2d(mk(TG_FLOAT32, 2, 3, 9, 9), mk(TG_FLOAT32, 4, 3, 3, 3), mk(TG_FLOAT32, 4, 0, 0, 0),
                                       1, one, one, one));
  add1("conv_1x4x10x10_k3_s2", tg_conv2d(mk(TG_FLOAT32, 1, 4, 10, 10), mk(TG_FLOAT32, 6, 4, 3, 3), NULL, 1, two, zero, one));
  /* a conv whose padded input and weight are copied first by default (32 x 3 x 3 reads of each input element: uop.h
   * ContigHint), built on CUDA with CONTIG_HINTS=0: one kernel, its loads masked by the padding (schedule/callify.c) */
  test_setenv("CONTIG_HINTS", "0");
  tg_tensor *cuda_conv = tg_conv2d(tg_empty_on(TG_SHAPE(1, 2, 6, 6), TG_FLOAT32, "CUDA"),
                                   tg_empty_on(TG_SHAPE(32, 2, 3, 3), TG_FLOAT32, "CUDA"), NULL, 1, one, one, one);
  UOpScope csc = uop_scope_begin();
  UOp *clin = cuda_conv ? sched_kernels(uop_sink(&cuda_conv->uop, 1)) : NULL;
  CHECK_MSG(clin && clin->nsrc == 1, "a padded conv on CUDA: %d kernels, expected 1", clin ? (int)clin->nsrc : -1);
  uop_scope_end(csc);
  add1("conv_cuda_1x2x6x6_k3_p1", cuda_conv);
  test_unsetenv("CONTIG_HINTS");
  /* reductions */
  int ax0 = 0, ax1 = 1;
  tg_tensor *r = fl(24, 40);
  add1("sum_axis0_24x40", tg_sum(r, &ax0, 1, false));
  add1("sum_axis1_24x40", tg_sum(r, &ax1, 1, false));
  add1("sum_all_1000", tg_sum(mk(TG_FLOAT32, 1000, 0, 0, 0), NULL, 0, false));
  add1("max_axis1_24x40", tg_max(r, &ax1, 1, true));
  add1("mean_axis1_24x40", tg_mean(r, &ax1, 1, false));
  add1("argmax_axis1_8x30", tg_argmax(fl(8, 30), 1, false));
  add1("sum_int_axis0_16x28", tg_sum(mk(TG_INT32, 16, 28, 0, 0), &ax0, 1, false));
  add1("any_axis1_12x9", tg_any(tg_gt(fl(12, 9), tg_const_float(0.5)), &ax1, 1, false));
  add1("softmax_6x20", tg_softmax(fl(6, 20), 1));
  add1("sum_half_axis1_16x32", tg_sum(mk(TG_FLOAT16, 16, 32, 0, 0), &ax1, 1, false));
  add1("cumsum_40", tg_cumsum(mk(TG_FLOAT32, 40, 0, 0, 0), 0));
  /* elementwise with broadcasts */
  add1("bcast_add_12x1_1x20", tg_relu(tg_add(fl(12, 1), fl(1, 20))));
  add1("where_bcast_16x24", tg_where(tg_lt(fl(16, 24), fl(1, 24)), fl(16, 1), tg_const_float(2.0)));
  add1("uint8_ew_16x12", tg_add(mk(TG_UINT8, 16, 12, 0, 0), mk(TG_UINT8, 1, 12, 0, 0)));
  add1("half_ew_8x16", tg_mul(mk(TG_FLOAT16, 8, 16, 0, 0), mk(TG_FLOAT16, 8, 1, 0, 0)));
  add1("int_ew_30x7", tg_mul(tg_add(mk(TG_INT32, 30, 7, 0, 0), tg_const_int(3)), mk(TG_INT32, 1, 7, 0, 0)));
  /* masked axes: cat and stack */
  const tg_tensor *cat_in[2] = {fl(4, 5), fl(4, 3)};
  add1("cat_4x5_4x3", tg_cat(cat_in, 2, 1));
  const tg_tensor *stack_in[3] = {fl(6, 0), fl(6, 0), fl(6, 0)};
  add1("stack_3x6", tg_stack(stack_in, 3, 0));
  /* pooling */
  int64_t k2[2] = {2, 2}, k3[2] = {3, 3};
  add1("maxpool_1x2x8x8", tg_max_pool2d(mk(TG_FLOAT32, 1, 2, 8, 8), k2, NULL, NULL, NULL));
  add1("avgpool_2x2x9x9_k3_s2_p1", tg_avg_pool2d(mk(TG_FLOAT32, 2, 2, 9, 9), k3, two, one, true));
  /* backward of pooling with a window that is not the stride (nested reduces, gated lanes) */
  {
    int64_t k32[2] = {3, 2}, s21[2] = {2, 1};
    tg_tensor *px = mk(TG_FLOAT32, 1, 2, 6, 6), *g = NULL;
    const tg_tensor *wrt[1] = {px};
    if (tg_gradient(tg_sum(tg_max_pool2d(px, k32, s21, NULL, NULL), NULL, 0, false), wrt, 1, &g) == TG_OK)
      add1("maxpool_bwd_1x2x6x6_k3x2_s2x1", g);
    tg_tensor *ax = mk(TG_FLOAT32, 2, 1, 6, 5), *ga = NULL;
    const tg_tensor *awrt[1] = {ax};
    if (tg_gradient(tg_sum(tg_avg_pool2d(ax, k32, s21, NULL, true), NULL, 0, false), awrt, 1, &ga) == TG_OK)
      add1("avgpool_bwd_2x1x6x5_k3x2_s2x1", ga);
    /* eval mode: conv, a per-channel epilogue (BatchNorm's shape: subtract, multiply, divide by a square root), relu
     * and the 2x2 max-pool in one kernel (a sum nested in a max) */
    int64_t none2[2] = {0, 0};
    tg_tensor *ex = mk(TG_FLOAT32, 2, 3, 8, 8), *ew = mk(TG_FLOAT32, 32, 3, 3, 3), *es = mk(TG_FLOAT32, 1, 32, 1, 1);
    tg_tensor *ec = tg_conv2d(ex, ew, NULL, 1, NULL, none2, NULL);
    tg_tensor *epi = tg_div(tg_mul(tg_sub(ec, es), es), tg_sqrt(tg_add(es, tg_const_float(1e-5))));
    add1("conv_bn_relu_pool_2x3x8x8_k3", tg_max_pool2d(tg_relu(epi), k2, NULL, NULL, NULL));
    /* a small CNN's backward: conv -> relu -> conv -> relu -> maxpool (the input gradient has nested reduces whose
     * lanes once ended one loop twice) */
    tg_tensor *cx = mk(TG_FLOAT32, 1, 3, 7, 7), *cw = mk(TG_FLOAT32, 4, 3, 3, 3), *cw2 = mk(TG_FLOAT32, 4, 4, 3, 3);
    int64_t z2[2] = {0, 0}, o2[2] = {1, 1}, kk[2] = {2, 2};
    tg_tensor *h = tg_relu(tg_conv2d(cx, cw, NULL, 1, o2, z2, o2));
    h = tg_max_pool2d(tg_relu(tg_conv2d(h, cw2, NULL, 1, o2, z2, o2)), kk, NULL, NULL, NULL);
    const tg_tensor *cwrt[3] = {cx, cw, cw2};
    tg_tensor *cg[3] = {NULL, NULL, NULL};
    if (tg_gradient(tg_sum(h, NULL, 0, false), cwrt, 3, cg) == TG_OK) {
      add1("cnn_bwd_dx", cg[0]);
      add1("cnn_bwd_dw", cg[1]);
      add1("cnn_bwd_dw2", cg[2]);
    }
  }
  tg_scope_end(sc);
  /* tinygrad's own kernel ASTs (tests/opt_heuristic_cases.h) small enough for the interpreter */
  Renderer ren = test_renderer();
  for (size_t i = 0; i < TG_ARRAY_LEN(heuristic_cases); i++) {
    UOpScope usc = uop_scope_begin();
    char *text = joined(heuristic_cases[i].ast);
    UOp *ast = uop_parse(text);
    tg_free(text);
    CHECK_MSG(ast != NULL, "%s: parse: %s", heuristic_cases[i].name, tg_last_error());
    OptScheduler s;
    if (ast && sched_of(&s, ast, &ren)) {
      int64_t shape[64], work = 1;
      int n = opt_sched_len(&s);
      if (n <= 64) {
        opt_sched_shape(&s, shape, NULL);
        for (int k = 0; k < n; k++) work *= shape[k];
        if (work <= SMALL_KERNEL_WORK) {
          char name[64];
          snprintf(name, sizeof name, "tg:%s", heuristic_cases[i].name);
          add_case(name, 0, ast);
        }
      }
      opt_sched_free(&s);
    }
    uop_scope_end(usc);
  }
  /* weight-gradient shapes A^T @ B (both operands contiguous along their own output axis: the wide tile with
   * contiguous rows, 8 and 5 of them) and a transposing copy (cpu_transpose_tile): CPU cases checked after the GPU
   * pass (late_cases), so that the random opt lists drawn for the kernels above stay as they were */
  late_cases = cases.len;
  tg_scope sc2 = tg_scope_begin();
  add1("matmul_tn_32x16x48", tg_matmul(tg_transpose(fl(16, 32), 0, 1), fl(16, 48)));
  add1("matmul_tn_10x16x32", tg_matmul(tg_transpose(fl(16, 10), 0, 1), fl(16, 32)));
  add1("transpose_24x40", tg_contiguous(tg_transpose(fl(24, 40), 0, 1)));
  tg_scope_end(sc2);
}

/* ================================================================================================================
 * running a kernel: host buffers by PARAM slot, the interpreter over every core_id
 * ================================================================================================================ */

#define MAX_SLOTS 32

typedef struct HostBufs {
  int nslots;
  void *mem[MAX_SLOTS];      /* 64-byte aligned */
  size_t nbytes[MAX_SLOTS];
  const DType *dtype[MAX_SLOTS];
  bool written[MAX_SLOTS];
  int64_t vals[MAX_SLOTS];   /* user Variables */
} HostBufs;

static void host_free(HostBufs *h) {
  for (int i = 0; i < MAX_SLOTS; i++) free(h->mem[i]);
  memset(h, 0, sizeof *h);
}

static void *alloc64(size_t n) {
  size_t r = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, r ? r : 64);
  memset(p, 0, r ? r : 64);
  return p;
}

static void fill_random(void *mem, const DType *d, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double f = (double)(rnd() % 2001) / 1000.0 - 1.0;
    int64_t v = (int64_t)(rnd() % 17) - 8;
    switch (d->scalar->id) {
    case TG_FLOAT32: ((float *)mem)[i] = (float)f; break;
    case TG_FLOAT64: ((double *)mem)[i] = f; break;
    case TG_FLOAT16: ((uint16_t *)mem)[i] = tg_float_to_half_bits((float)f); break;
    case TG_INT32: ((int32_t *)mem)[i] = (int32_t)v; break;
    case TG_INT64: ((int64_t *)mem)[i] = v; break;
    case TG_INT8: ((int8_t *)mem)[i] = (int8_t)v; break;
    case TG_UINT8: ((uint8_t *)mem)[i] = (uint8_t)(v + 8); break;
    case TG_BOOL: ((uint8_t *)mem)[i] = (uint8_t)(v & 1); break;
    default: memset(mem, 0x3c, (size_t)n * (size_t)dt_itemsize(d)); return;
    }
  }
}

/* The buffers of a kernel from the naive kernel's parameters: inputs random, outputs a fixed pattern. */
static bool host_init(HostBufs *h, UOp *linear, const char *name) {
  memset(h, 0, sizeof *h);
  RenderParamVec ps = {0};
  render_params(linear, &ps);
  bool ok = true;
  for (size_t i = 0; i < ps.len && ok; i++) {
    RenderParam *p = &ps.data[i];
    if (p->slot < 0 || p->slot >= MAX_SLOTS) {
      CHECK_MSG(false, "%s: parameter slot %lld", name, (long long)p->slot);
      ok = false;
      break;
    }
    h->nslots = TG_MAX(h->nslots, (int)p->slot + 1);
    if (p->is_value) {
      h->vals[p->slot] = (p->vmin + p->vmax + 1) / 2;
      continue;
    }
    if (p->numel < 0) {
      CHECK_MSG(false, "%s: buffer %lld of unknown size", name, (long long)p->slot);
      ok = false;
      break;
    }
    h->nbytes[p->slot] = (size_t)p->numel * (size_t)dt_itemsize(p->dtype);
    h->dtype[p->slot] = p->dtype;
    h->written[p->slot] = p->is_written;
    h->mem[p->slot] = alloc64(h->nbytes[p->slot]);
    if (p->is_written) memset(h->mem[p->slot], 0x5a, h->nbytes[p->slot]);
    else fill_random(h->mem[p->slot], p->dtype, p->numel);
  }
  tg_vec_free(&ps);
  return ok;
}

static void host_copy(HostBufs *dst, const HostBufs *src) {
  *dst = *src;
  for (int i = 0; i < MAX_SLOTS; i++)
    if (src->mem[i]) {
      dst->mem[i] = alloc64(src->nbytes[i]);
      memcpy(dst->mem[i], src->mem[i], src->nbytes[i]);
    }
}

/* The core_id parameter of a THREAD-split kernel: its slot and count (1, slot -1 without one). */
static int64_t core_count(UOp *linear, int64_t *slot) {
  RenderParamVec ps = {0};
  render_params(linear, &ps);
  int64_t n = 1;
  *slot = -1;
  for (size_t i = 0; i < ps.len; i++)
    if (ps.data[i].is_value && strcmp(ps.data[i].var_name, "core_id") == 0) *slot = ps.data[i].slot, n = ps.data[i].vmax + 1;
  tg_vec_free(&ps);
  return n;
}

/* Run the lowered kernel on a copy of `in` (every core_id in turn); the result in *out. */
static tg_status interp_all(UOp *linear, const HostBufs *in, HostBufs *out) {
  host_copy(out, in);
  int64_t core_slot;
  int64_t ncores = core_count(linear, &core_slot);
  if (core_slot >= MAX_SLOTS) return tg_set_error(TG_ERR_RUNTIME, "core_id slot %lld", (long long)core_slot);
  size_t nslots = (size_t)TG_MAX(out->nslots, (int)core_slot + 1);
  for (int64_t c = 0; c < ncores; c++) {
    if (core_slot >= 0) out->vals[core_slot] = c;
    tg_status st = interp_run(linear, out->mem, out->vals, nslots);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

/* ================================================================================================================
 * comparing results
 * ================================================================================================================ */

static double read_num(const void *mem, const DType *d, size_t i, bool *is_float) {
  *is_float = true;
  switch (d->scalar->id) {
  case TG_FLOAT32: return ((const float *)mem)[i];
  case TG_FLOAT64: return ((const double *)mem)[i];
  case TG_FLOAT16: return tg_half_bits_to_float(((const uint16_t *)mem)[i]);
  default: break;
  }
  *is_float = false;
  return 0;
}

/* false (and a message in why) when a written buffer differs: bit-exact for ints/bools, floats within a tolerance
 * for reordered sums */
static bool same_results(const HostBufs *want, const HostBufs *got, char *why, size_t cap) {
  for (int s = 0; s < MAX_SLOTS; s++) {
    if (!want->written[s]) continue;
    const DType *d = want->dtype[s];
    size_t isz = (size_t)dt_itemsize(d), n = want->nbytes[s] / isz;
    for (size_t i = 0; i < n; i++) {
      bool is_float;
      double a = read_num(want->mem[s], d, i, &is_float), b = read_num(got->mem[s], d, i, &is_float);
      bool same;
      double tol = d->scalar->id == TG_FLOAT16 ? 4e-3 : 1e-4; /* half: a few units in the last place */
      if (is_float) same = a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= tol * (1 + fabs(a));
      else same = memcmp((const char *)want->mem[s] + i * isz, (const char *)got->mem[s] + i * isz, isz) == 0;
      if (!same) {
        if (is_float) snprintf(why, cap, "buffer %d element %zu: %.9g, naive %.9g", s, i, b, a);
        else {
          long long x = 0, y = 0;
          memcpy(&x, (const char *)want->mem[s] + i * isz, isz);
          memcpy(&y, (const char *)got->mem[s] + i * isz, isz);
          snprintf(why, cap, "buffer %d element %zu: %lld, naive %lld (%s)", s, i, y, x, d->name);
        }
        return false;
      }
    }
  }
  return true;
}

/* ================================================================================================================
 * random opt lists
 * ================================================================================================================ */

static TG_VEC(Opt) actions;

static void push_action(OptOp op, int axis, int arg) {
  Opt o = {(int32_t)op, axis, arg};
  tg_vec_push(&actions, o);
}

/* tinygrad's BEAM actions (codegen/opt/search.py), PADTO included (BEAM_PADTO) with smaller multiples too */
static void build_actions(void) {
  static const int up[] = {0, 2, 3, 4, 5, 7}, unr[] = {0, 4, 7}, loc[] = {2, 3, 4, 8, 13, 16, 29},
                   gtop[] = {13, 16, 28, 29, 32, 49, 64, 256}, grp[] = {0, 4, 8, 16},
                   thr[] = {2, 3, 4, 5, 8, 12, 16, 24, 32, 64}, pad[] = {32, 16, 8, 4};
  for (size_t a = 0; a < TG_ARRAY_LEN(up); a++)
    for (int ax = 0; ax < 8; ax++) push_action(OPT_UPCAST, ax, up[a]);
  for (size_t a = 0; a < TG_ARRAY_LEN(unr); a++)
    for (int ax = 0; ax < 5; ax++) push_action(OPT_UNROLL, ax, unr[a]);
  for (size_t a = 0; a < TG_ARRAY_LEN(loc); a++)
    for (int ax = 0; ax < 6; ax++) push_action(OPT_LOCAL, ax, loc[a]);
  for (size_t a = 0; a < TG_ARRAY_LEN(gtop); a++)
    for (int ax = 0; ax < 3; ax++) push_action(OPT_GROUPTOP, ax, gtop[a]);
  for (size_t a = 0; a < TG_ARRAY_LEN(grp); a++)
    for (int ax = 0; ax < 3; ax++) push_action(OPT_GROUP, ax, grp[a]);
  for (size_t a = 0; a < TG_ARRAY_LEN(pad); a++)
    for (int ax = 0; ax < 7; ax++) push_action(OPT_PADTO, ax, pad[a]);
  push_action(OPT_LOCAL, 0, 32);
  push_action(OPT_LOCAL, 6, 2);
  push_action(OPT_TC, 0, opt_tc_arg(-1, 0, 1));
  for (int ax = 0; ax < 9; ax++) push_action(OPT_TC, ax, opt_tc_arg(-1, 2, 1));
  for (int a0 = 0; a0 < 5; a0++)
    for (int a1 = a0 + 1; a1 < 5; a1++) push_action(OPT_SWAP, a0, a1);
  for (int ax = 0; ax < 3; ax++) /* not tinygrad's: the CPU's loop split (opt.h) */
    for (int amt = 2; amt <= 4; amt *= 2) push_action(OPT_LOOP, ax, amt);
  for (size_t a = 0; a < TG_ARRAY_LEN(thr); a++)
    for (int ax = 0; ax < 3; ax++) push_action(OPT_THREAD, ax, thr[a]);
  push_action(OPT_NOLOCALS, -1, 0);
}

/* An action: the kind first (weights keep the many LOCAL/GROUP/PADTO entries from crowding out the opts that apply
 * on the CPU), then uniformly among that kind's entries. */
static Opt pick_action(void) {
  static const struct { OptOp op; int weight; } kinds[] = {
      {OPT_UPCAST, 32}, {OPT_UNROLL, 26}, {OPT_THREAD, 12}, {OPT_PADTO, 8}, {OPT_SWAP, 4}, {OPT_LOOP, 4}, {OPT_LOCAL, 5},
      {OPT_GROUP, 4}, {OPT_GROUPTOP, 4}, {OPT_TC, 3}, {OPT_NOLOCALS, 1}};
  int total = 0;
  for (size_t i = 0; i < TG_ARRAY_LEN(kinds); i++) total += kinds[i].weight;
  int w = rnd_below(total);
  size_t k = 0;
  while (w >= kinds[k].weight) w -= kinds[k++].weight;
  int count = 0;
  for (size_t i = 0; i < actions.len; i++) count += actions.data[i].op == (int32_t)kinds[k].op;
  int pick = rnd_below(count);
  for (size_t i = 0; i < actions.len; i++)
    if (actions.data[i].op == (int32_t)kinds[k].op && pick-- == 0) return actions.data[i];
  return actions.data[0];
}

static int64_t upcast_product(const OptScheduler *s) {
  int n = opt_sched_len(s);
  int64_t shape[64];
  AxisType types[64];
  if (n > 64) return 1 << 30;
  opt_sched_shape(s, shape, types);
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (types[i] == AXIS_UPCAST || types[i] == AXIS_UNROLL) p *= shape[i];
  return p;
}

typedef struct Stats {
  long lists, opts, by_op[OPT_OP_COUNT], refused, refused_locals, c_checked,  lower_failed, heuristic_lists, vector_lists, vector_acc_lists;
} Stats;

#define UPCAST_MAX 256 /* tinygrad BEAM_UPCAST_MAX */

/* One random opt list of `depth` accepted opts on a copy of base; opts refused on the CPU are checked as refused. */
static int random_opts(const OptScheduler *base, int depth, Opt *out, Stats *st, const char *name) {
  OptScheduler s;
  opt_sched_copy(&s, base);
  int n = 0;
  for (int tries = 0; tries < 60 && n < depth; tries++) {
    Opt o = pick_action();
    if (o.op == OPT_NOLOCALS && s.dont_use_locals) continue; /* once is enough */
    OptScheduler t;
    opt_sched_copy(&t, &s);
    UOp *before = t.ast;
    tg_status rc = opt_apply(&t, o);
    bool cpu_never = o.op == OPT_LOCAL || o.op == OPT_GROUP || o.op == OPT_GROUPTOP || o.op == OPT_TC;
    if (cpu_never) {
      char buf[96];
      opt_format(o, buf, sizeof buf);
      CHECK_MSG(rc == TG_ERR_INVALID_ARGUMENT && strncmp(tg_last_error(), "KernelOptError: ", 16) == 0,
                "%s: %s accepted on the CPU", name, buf);
      st->refused_locals++;
    }
    if (rc != TG_OK) {
      CHECK_MSG(t.ast == before && t.napplied == s.napplied, "%s: a refused opt changed the scheduler", name);
      st->refused++;
    } else if (upcast_product(&t) <= UPCAST_MAX) {
      opt_sched_free(&s);
      s = t;
      out[n++] = o;
      continue;
    }
    opt_sched_free(&t);
  }
  opt_sched_free(&s);
  return n;
}

/* Known gap (tinygrad has it too): PADTO on a reduce axis whose size the pad changes, then an UNROLL of that range.
 * The padded loads are WHERE(valid, x, Invalid); the horizontal reduce of the unrolled lanes moves every lane's
 * validity onto the one accumulator store, so a partly valid group of lanes is dropped whole (K = 17 padded to 32,
 * unrolled by 4: the store is gated by (r<5)&(r<4) and element 16 is never added). tinygrad renders the same code;
 * its BEAM only tries PADTO with BEAM_PADTO=1. True when the list pads a reduce range and later unrolls that range
 * (followed by its axis id, which the remainder of a split keeps). */
static AxisType axis_type_of(const UOp *rng) { return (AxisType)rng->arg.range->axis_type; }

static bool padded_reduce_unrolled(const OptScheduler *base, const Opt *opts, int n) {
  OptScheduler s;
  opt_sched_copy(&s, base);
  int64_t padded[OPT_LIST_MAX];
  int npadded = 0;
  bool hit = false;
  for (int i = 0; i < n && !hit; i++) {
    UOpVec rngs = {0};
    opt_sched_rngs(&s, &rngs);
    UOp *target = NULL;
    if (opts[i].op == OPT_PADTO && opts[i].axis >= 0 && (size_t)opts[i].axis < rngs.len) target = rngs.data[opts[i].axis];
    if (opts[i].op == OPT_UNROLL) /* UNROLL's axis counts the reduce ranges of constant size > 1 */
      for (size_t k = 0, seen = 0; k < rngs.len && !target; k++) {
        AxisType t = axis_type_of(rngs.data[k]);
        UOp *end = rngs.data[k]->src[0];
        bool unrollable = (t == AXIS_REDUCE || t == AXIS_GROUP_REDUCE) && end->op == TG_OP_CONST && end->arg.c.i > 1;
        if (unrollable && (int)seen++ == opts[i].axis) target = rngs.data[k];
      }
    if (target && opts[i].op == OPT_PADTO && axis_type_of(target) == AXIS_REDUCE && opts[i].arg > 0 &&
        target->src[0]->op == TG_OP_CONST && target->src[0]->arg.c.i % opts[i].arg != 0)
      padded[npadded++] = target->arg.range->axis_id;
    if (target && opts[i].op == OPT_UNROLL)
      for (int k = 0; k < npadded; k++) hit |= padded[k] == target->arg.range->axis_id;
    tg_vec_free(&rngs);
    if (opt_apply(&s, opts[i]) != TG_OK) break;
  }
  opt_sched_free(&s);
  return hit;
}

static void format_opts(const Opt *o, int n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < n && len + 2 < cap; i++) {
    char b[96];
    opt_format(o[i], b, sizeof b);
    len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", b);
    if (len >= cap) break;
  }
}

/* ================================================================================================================
 * the C path for a subset: every kernel rendered, compiled in one batch, launched, compared with the naive result
 * ================================================================================================================ */

typedef struct CJob {
  int case_index;
  char label[96];
  char *src, *entry;
  char name[TG_NAME_MAX];
  int nparams;
  int64_t param_slot[MAX_SLOTS]; /* per position: the slot of a buffer or Variable */
  bool param_is_value[MAX_SLOTS];
  int core_param;
  int64_t ncores;
  char opts_text[1024];
} CJob;

static TG_VEC(CJob) cjobs;

static void add_cjob(int case_index, UOp *linear, const Renderer *ren, const char *opts_text) {
  CJob j;
  memset(&j, 0, sizeof j);
  j.case_index = case_index;
  char *src = render_c(ren, linear);
  CHECK_MSG(src != NULL, "%s [%s]: render_c: %s", cases.data[case_index].name, opts_text, tg_last_error());
  if (!src) return;
  snprintf(j.name, sizeof j.name, "%s", render_kernel_name(linear));
  char entry_name[TG_NAME_MAX + 16];
  snprintf(entry_name, sizeof entry_name, "%s_entry", j.name);
  char *entry = render_c_entry(linear, entry_name);
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, src);
  sb_puts(&b, "\n");
  sb_puts(&b, entry);
  tg_free(src);
  tg_free(entry);
  j.src = sb_take(&b);
  j.entry = tg_strdup(entry_name);
  RenderParamVec ps = {0};
  render_params(linear, &ps);
  j.nparams = (int)TG_MIN(ps.len, MAX_SLOTS);
  j.core_param = -1;
  j.ncores = 1;
  for (int i = 0; i < j.nparams; i++) {
    j.param_slot[i] = ps.data[i].slot;
    j.param_is_value[i] = ps.data[i].is_value;
    if (ps.data[i].is_value && strcmp(ps.data[i].var_name, "core_id") == 0) j.core_param = i, j.ncores = ps.data[i].vmax + 1;
  }
  tg_vec_free(&ps);
  snprintf(j.opts_text, sizeof j.opts_text, "%s", opts_text);
  tg_vec_push(&cjobs, j);
}

/* ================================================================================================================
 * the random opt test
 * ================================================================================================================ */

typedef struct CaseData {
  HostBufs input, naive;
  bool ok;
} CaseData;

static UOp *lower_linear(UOp *ast, const Opt *opts, int n, const Renderer *ren) {
  UOp *low = cg_lower(opt_ast_with_opts(ast, opts, n), ren);
  return low ? cg_linearize(low) : NULL;
}

/* OPTS_LIST="UPCAST:0:4,UNROLL:0:0" (opt_parse_list): one fixed list instead of random ones (to reproduce a report) */
static void check_case(int ci, CaseData *cd, int nlists, int nc, Stats *st, const Renderer *ren, bool verbose) {
  const char *fixed = getenv("OPTS_LIST");
  if (fixed) nlists = 1;
  OptCase *c = &cases.data[ci];
  UOpScope sc = uop_scope_begin();
  cd->ok = false;
  UOp *naive_lin = lower_linear(c->ast, NULL, 0, ren);
  CHECK_MSG(naive_lin != NULL, "%s: the naive kernel does not lower: %s", c->name, tg_last_error());
  if (!naive_lin || !host_init(&cd->input, naive_lin, c->name)) {
    uop_scope_end(sc);
    return;
  }
  tg_status rs = interp_all(naive_lin, &cd->input, &cd->naive);
  CHECK_MSG(rs == TG_OK, "%s: the naive kernel does not run: %s", c->name, tg_last_error());
  if (rs != TG_OK) {
    uop_scope_end(sc);
    return;
  }
  cd->ok = true;
  if (ci == 0) { /* the comparison itself: one changed output element is noticed */
    HostBufs bad;
    host_copy(&bad, &cd->naive);
    char why[256] = "";
    for (int k = 0; k < MAX_SLOTS; k++)
      if (bad.written[k]) {
        ((unsigned char *)bad.mem[k])[bad.nbytes[k] - 1] ^= 0x40;
        break;
      }
    CHECK_MSG(!same_results(&cd->naive, &bad, why, sizeof why), "a changed output element went unnoticed");
    host_free(&bad);
  }
  add_cjob(ci, naive_lin, ren, "no opts");
  /* the scheduler over the AST as opts see it (the range passes done, nothing applied) */
  UOp *pre = cg_optimize(opt_ast_with_opts(c->ast, NULL, 0), ren);
  CHECK_MSG(pre != NULL, "%s: cg_optimize: %s", c->name, tg_last_error());
  if (!pre) {
    uop_scope_end(sc);
    return;
  }
  OptScheduler base;
  opt_sched_init(&base, pre, ren);
  /* list -1: what the hand-coded heuristic picks (the default path of every kernel) */
  for (int l = fixed ? 0 : -1; l < nlists; l++) {
    UOpScope lsc = uop_scope_begin();
    Opt opts[OPT_LIST_MAX];
    int n;
    if (l < 0) {
      OptScheduler h;
      opt_sched_copy(&h, &base);
      opt_hand_coded(&h);
      n = h.napplied;
      memcpy(opts, h.applied, (size_t)n * sizeof(Opt));
      opt_sched_free(&h);
      st->heuristic_lists++;
    } else {
      n = fixed ? opt_parse_list(fixed, opts, 8) : random_opts(&base, 1 + rnd_below(5), opts, st, c->name);
    }
    char text[1024];
    format_opts(opts, n, text, sizeof text);
    if (verbose) fprintf(stderr, "  %s: [%s]\n", c->name, text);
    bool cpu_never = false; /* a fixed list for a GPU (LOCAL, GROUP, GROUPTOP, TC): the CUDA lists below run it */
    for (int i = 0; fixed && i < n; i++)
      cpu_never |= opts[i].op == OPT_LOCAL || opts[i].op == OPT_GROUP || opts[i].op == OPT_GROUPTOP || opts[i].op == OPT_TC;
    if (cpu_never) {
      fprintf(stderr, "opts: %s [%s]: skipped on the CPU (LOCAL/GROUP/GROUPTOP/TC are GPU-only), run by the CUDA lists\n",
              c->name, text);
      uop_scope_end(lsc);
      continue;
    }
    UOp *lin = lower_linear(c->ast, opts, n, ren);
    CHECK_MSG(lin != NULL, "%s [%s]: lowering failed: %s", c->name, text, tg_last_error());
    if (!lin) {
      st->lower_failed++;
      uop_scope_end(lsc);
      continue;
    }
    const KernelInfo *ki = NULL;
    for (uint32_t k = 0; k < lin->nsrc && !ki; k++)
      if (lin->src[k]->op == TG_OP_SINK && lin->src[k]->arg.kind == ARG_KERNEL) ki = lin->src[k]->arg.kernel;
    CHECK_MSG(ki && ki->applied_opts == n && (n == 0 || memcmp(ki->applied, opts, (size_t)n * sizeof(Opt)) == 0),
              "%s [%s]: the lowered kernel does not record the opts it applied", c->name, text);
    st->lists++;
    st->opts += n;
    bool vec = false;
    for (uint32_t k = 0; k < lin->nsrc && !vec; k++) vec = lin->src[k]->op == TG_OP_SHRINK;
    st->vector_lists += vec;
    bool vacc = false; /* a vector accumulator (cg_expand): a register buffer of more than one element */
    for (uint32_t k = 0; k < lin->nsrc && !vacc; k++) {
      UOp *u = lin->src[k];
      vacc = u->op == TG_OP_BUFFER && u->nsrc == 1 && u->src[0]->op == TG_OP_CAST && u->src[0]->src[0]->op == TG_OP_CONST &&
             u->src[0]->src[0]->arg.c.kind == CK_INT && u->src[0]->src[0]->arg.c.i > 1;
    }
    st->vector_acc_lists += vacc;
    for (int i = 0; i < n; i++) st->by_op[opts[i].op]++;
    HostBufs got;
    tg_status r = interp_all(lin, &cd->input, &got);
    char why[256] = "";
    bool same = r == TG_OK && same_results(&cd->naive, &got, why, sizeof why);
    CHECK_MSG(r == TG_OK, "%s [%s]: the interpreter fails: %s", c->name, text, tg_last_error());
    /* a padded reduce axis that is unrolled used to drop partly valid lane groups (tinygrad does); the expander now
     * adds the identity for padding lanes, so this must hold for those lists too */
    bool gap = r == TG_OK && !same && padded_reduce_unrolled(&base, opts, n);
    CHECK_MSG(r != TG_OK || same, "%s [%s]: differs from the naive kernel%s: %s", c->name, text,
              gap ? " (a padded reduce axis unrolled)" : "", why);
    if ((r != TG_OK || !same) && verbose) { /* the kernels for a report */
      char *a = render_c(ren, naive_lin), *b = render_c(ren, lin);
      fprintf(stderr, "--- naive:\n%s\n--- with opts:\n%s\n", a ? a : tg_last_error(), b ? b : tg_last_error());
      tg_free(a);
      tg_free(b);
    }
    host_free(&got);
    if (l < nc && !gap) add_cjob(ci, lin, ren, l < 0 ? "heuristic" : text);
    uop_scope_end(lsc);
  }
  opt_sched_free(&base);
  uop_scope_end(sc);
}

static void run_cjobs(CaseData *cds, Stats *st) {
  if (!cjobs.len) return;
  RtKernelSource *srcs = tg_calloc(cjobs.len, sizeof *srcs);
  RtProgram **progs = tg_calloc(cjobs.len, sizeof *progs);
  for (size_t i = 0; i < cjobs.len; i++) {
    srcs[i].name = cjobs.data[i].name;
    srcs[i].src = cjobs.data[i].src;
    srcs[i].entry = cjobs.data[i].entry;
  }
  RtStats before = rt_stats();
  tg_status rc = rt_compile_many(srcs, cjobs.len, progs);
  CHECK_MSG(rc == TG_OK, "compiling %zu kernels: %s", cjobs.len, tg_last_error());
  RtStats after = rt_stats();
  CHECK_MSG(after.compiler_processes - before.compiler_processes <= 1, "%ld compiler processes for one batch",
            after.compiler_processes - before.compiler_processes);
  for (size_t i = 0; rc == TG_OK && i < cjobs.len; i++) {
    CJob *j = &cjobs.data[i];
    CaseData *cd = &cds[j->case_index];
    HostBufs got;
    host_copy(&got, &cd->input);
    void *bufs[MAX_SLOTS];
    long long vals[MAX_SLOTS];
    for (int p = 0; p < j->nparams; p++) {
      bufs[p] = j->param_is_value[p] ? NULL : got.mem[j->param_slot[p]];
      vals[p] = j->param_is_value[p] ? got.vals[j->param_slot[p]] : 0;
    }
    tg_status lr = rt_launch(progs[i], bufs, vals, j->nparams, j->core_param, (int)j->ncores, NULL);
    char why[256] = "";
    CHECK_MSG(lr == TG_OK, "%s [%s]: launch: %s", cases.data[j->case_index].name, j->opts_text, tg_last_error());
    bool same = lr == TG_OK && same_results(&cd->naive, &got, why, sizeof why);
    CHECK_MSG(lr != TG_OK || same, "%s [%s]: compiled C differs from the naive kernel: %s",
              cases.data[j->case_index].name, j->opts_text, why);
    st->c_checked++;
    host_free(&got);
  }
  for (size_t i = 0; i < cjobs.len; i++) {
    tg_free(cjobs.data[i].src);
    tg_free(cjobs.data[i].entry);
  }
  tg_vec_free(&cjobs);
  tg_free(srcs);
  tg_free(progs);
}


/* ================================================================================================================
 * the same kernels on a device with locals: random lists of tinygrad's BEAM actions for a GPU (LOCAL, GROUP,
 * GROUPTOP, UPCAST, UNROLL, PADTO, SWAP, NOLOCALS) and the GPU heuristic's list, lowered for the CUDA renderer (gpudims,
 * shared-memory group reduces, barriers) and run by the interpreter's block/thread emulation against the CPU's naive
 * result; the heuristic's kernel of each case also compiles with NVRTC where it can be loaded
 * ================================================================================================================ */

typedef struct GpuStats { long lists, by_op[OPT_OP_COUNT], with_barrier, with_locals, with_wmma, nvrtc, dropped; } GpuStats;

static Opt pick_gpu_action(void) {
  static const struct { OptOp op; int weight; } kinds[] = {{OPT_UPCAST, 20}, {OPT_UNROLL, 14}, {OPT_LOCAL, 22},
                                                           {OPT_GROUP, 12}, {OPT_GROUPTOP, 12}, {OPT_PADTO, 6},
                                                           {OPT_SWAP, 4}, {OPT_NOLOCALS, 2}, {OPT_TC, 10}};
  int total = 0;
  for (size_t i = 0; i < TG_ARRAY_LEN(kinds); i++) total += kinds[i].weight;
  int w = rnd_below(total);
  size_t k = 0;
  while (w >= kinds[k].weight) w -= kinds[k++].weight;
  int count = 0;
  for (size_t i = 0; i < actions.len; i++) count += actions.data[i].op == (int32_t)kinds[k].op;
  int pick = rnd_below(count);
  for (size_t i = 0; i < actions.len; i++)
    if (actions.data[i].op == (int32_t)kinds[k].op && pick-- == 0) return actions.data[i];
  return actions.data[0];
}

/* threads per block: tinygrad BEAM_LOCAL_MAX (1024) bounds the WARP x LOCAL x GROUP_REDUCE product */
static int64_t local_product(const OptScheduler *s) {
  int n = opt_sched_len(s);
  int64_t shape[64];
  AxisType types[64];
  if (n > 64) return 1 << 30;
  opt_sched_shape(s, shape, types);
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (types[i] == AXIS_WARP || types[i] == AXIS_LOCAL || types[i] == AXIS_GROUP_REDUCE) p *= shape[i];
  return p;
}

static int random_gpu_opts(const OptScheduler *base, int depth, Opt *out, GpuStats *st) {
  OptScheduler s;
  opt_sched_copy(&s, base);
  int n = 0;
  for (int tries = 0; tries < 60 && n < depth; tries++) {
    Opt o = pick_gpu_action();
    if (o.op == OPT_NOLOCALS && s.dont_use_locals) continue;
    OptScheduler t;
    opt_sched_copy(&t, &s);
    if (opt_apply(&t, o) == TG_OK && upcast_product(&t) <= UPCAST_MAX && local_product(&t) <= 1024) {
      opt_sched_free(&s);
      s = t;
      out[n++] = o;
      continue;
    }
    st->dropped++;
    opt_sched_free(&t);
  }
  opt_sched_free(&s);
  return n;
}

/* lists that once failed on CUDA, run on every test: each (kernel, list) lowers and computes the naive kernel's result */
static const struct { const char *kernel, *opts; } gpu_pinned[] = {
    /* the LOCAL partials read global loads that coalescing replaced: two copies of the reduce loop ("the loop order
     * has a cycle"), fixed in cg_coalesce.c */
    {"cnn_bwd_dx/4", "UPCAST:2:0,UNROLL:0:0,GROUP:1:0"},
    {"cnn_bwd_dx/4", "UPCAST:2:0,UNROLL:0:0,GROUPTOP:1:0"},
    /* a PADTO'd reduce axis unrolled into the tensor core: the operand lanes that are all padding were left a bare
     * Invalid in the WMMA ("Invalid is not allowed in a program"); they read 0 now (cg_expand.c contract) */
    {"matmul_half_20x24x12/0", "TC:0:-1:2:1,PADTO:5:4,UNROLL:0:0,PADTO:2:8"},
};

static void check_gpu_case(int ci, const CaseData *cd, int nlists, GpuStats *st, bool verbose) {
  const OptCase *c = &cases.data[ci];
  const Renderer *ren = renderer_cuda();
  const char *fixed = getenv("OPTS_LIST");
  UOpScope sc = uop_scope_begin();
  UOp *pre = cg_optimize(opt_ast_with_opts(c->ast, NULL, 0), ren);
  CHECK_MSG(pre != NULL, "%s: cg_optimize for CUDA: %s", c->name, tg_last_error());
  if (!pre) {
    uop_scope_end(sc);
    return;
  }
  const char *why_no_nvrtc = NULL;
  const NvrtcApi *nvrtc = nvrtc_api(&why_no_nvrtc);
  OptScheduler base;
  opt_sched_init(&base, pre, ren);
  int npinned = (int)(sizeof gpu_pinned / sizeof gpu_pinned[0]);
  for (int l = fixed ? 0 : -1 - npinned; l < (fixed ? 1 : nlists); l++) {
    if (l < -1 && strcmp(gpu_pinned[-2 - l].kernel, c->name) != 0) continue;
    UOpScope lsc = uop_scope_begin();
    Opt opts[OPT_LIST_MAX];
    int n;
    if (l < -1) {
      n = opt_parse_list(gpu_pinned[-2 - l].opts, opts, 8);
    } else if (l < 0) {
      OptScheduler h;
      opt_sched_copy(&h, &base);
      opt_hand_coded(&h);
      n = h.napplied;
      memcpy(opts, h.applied, (size_t)n * sizeof(Opt));
      opt_sched_free(&h);
    } else {
      n = fixed ? opt_parse_list(fixed, opts, 8) : random_gpu_opts(&base, 1 + rnd_below(5), opts, st);
    }
    char text[1024];
    format_opts(opts, n, text, sizeof text);
    if (verbose) fprintf(stderr, "  gpu %s: [%s]\n", c->name, text);
    UOp *lin = lower_linear(c->ast, opts, n, ren);
    CHECK_MSG(lin != NULL, "%s [%s]: lowering for CUDA failed: %s", c->name, text, tg_last_error());
    if (!lin) {
      uop_scope_end(lsc);
      continue;
    }
    st->lists++;
    for (int i = 0; i < n; i++) st->by_op[opts[i].op]++;
    bool barrier = false, locals = false, wmma = false;
    for (uint32_t k = 0; k < lin->nsrc; k++) {
      barrier |= lin->src[k]->op == TG_OP_BARRIER;
      wmma |= lin->src[k]->op == TG_OP_WMMA;
      locals |= lin->src[k]->op == TG_OP_SPECIAL && lin->src[k]->arg.str[0] == 'l';
    }
    st->with_barrier += barrier;
    st->with_locals += locals;
    st->with_wmma += wmma;
    HostBufs got;
    tg_status r = interp_all(lin, &cd->input, &got);
    char why[256] = "";
    bool same = r == TG_OK && same_results(&cd->naive, &got, why, sizeof why);
    CHECK_MSG(r == TG_OK, "%s [%s]: the GPU emulation fails: %s", c->name, text, tg_last_error());
    CHECK_MSG(r != TG_OK || same, "%s [%s]: the CUDA-lowered kernel differs from the naive CPU kernel: %s", c->name,
              text, why);
    if ((r != TG_OK || !same) && verbose) {
      char *b = render_cuda(ren, lin);
      fprintf(stderr, "--- CUDA with opts:\n%s\n", b ? b : tg_last_error());
      tg_free(b);
    }
    host_free(&got);
    if ((l == -1 || wmma) && nvrtc) { /* the kernel the device gets by default compiles, and every tensor-core one */
      char *src = render_cuda(ren, lin), *log = NULL;
      CHECK_MSG(src != NULL, "%s: render_cuda: %s", c->name, tg_last_error());
      bool ok = src && nvrtc_compiles(nvrtc, src, &log);
      CHECK_MSG(ok, "%s [%s]: NVRTC rejects the CUDA source:\n%s\n%s", c->name, text, log ? log : "", src ? src : "");
      st->nvrtc += ok;
      free(log);
      tg_free(src);
    }
    uop_scope_end(lsc);
  }
  opt_sched_free(&base);
  uop_scope_end(sc);
}

static void test_random_gpu_opts(CaseData *cds, bool verbose) {
  int nlists = (int)tg_getenv_int("OPTS_GPU_LISTS", tg_test_sanitized ? 8 : 20);
  const char *only = getenv("OPTS_CASE");
  GpuStats st;
  memset(&st, 0, sizeof st);
  for (size_t i = 0; i < cases.len; i++)
    if (cds[i].ok && (!only || strstr(cases.data[i].name, only))) check_gpu_case((int)i, &cds[i], nlists, &st, verbose);
  const char *why = NULL;
  bool have_nvrtc = nvrtc_api(&why) != NULL;
  fprintf(stderr, "opts (CUDA): %ld opt lists (LOCAL %ld, GROUP %ld, GROUPTOP %ld, UPCAST %ld, UNROLL %ld, PADTO %ld, "
          "SWAP %ld, NOLOCALS %ld, TC %ld; %ld with thread indices, %ld with barriers, %ld with tensor cores) emulated "
          "against the naive CPU kernel; %ld heuristic kernels compiled with NVRTC%s%s\n",
          st.lists, st.by_op[OPT_LOCAL], st.by_op[OPT_GROUP], st.by_op[OPT_GROUPTOP], st.by_op[OPT_UPCAST],
          st.by_op[OPT_UNROLL], st.by_op[OPT_PADTO], st.by_op[OPT_SWAP], st.by_op[OPT_NOLOCALS], st.by_op[OPT_TC],
          st.with_locals, st.with_barrier, st.with_wmma, st.nvrtc, have_nvrtc ? "" : " (skipped: ", have_nvrtc ? "" : why);
  if (!have_nvrtc) fprintf(stderr, ")\n");
  CHECK(getenv("OPTS_LIST") || only ||
        (st.lists > 0 && st.by_op[OPT_LOCAL] > 0 && st.by_op[OPT_GROUP] > 0 && st.by_op[OPT_GROUPTOP] > 0 &&
         st.with_barrier > 0 && st.with_wmma > 0 && (!have_nvrtc || st.nvrtc > 0)));
}

static void test_random_opts(void) {
  const char *seed_env = getenv("OPTS_SEED");
  rng_state = seed_env ? strtoull(seed_env, NULL, 10) : 20240611u;
  int nlists = (int)tg_getenv_int("OPTS_LISTS", tg_test_quick ? 4 : tg_test_sanitized ? 12 : 30);
  bool verbose = getenv("OPTS_VERBOSE") != NULL;
  int nc = (int)tg_getenv_int("OPTS_C", 2); /* random lists per kernel that also go through compiled C */
  const char *only = getenv("OPTS_CASE"), *fixed = getenv("OPTS_LIST");
  Renderer ren = test_renderer();
  build_actions();
  build_cases();
  Stats st;
  memset(&st, 0, sizeof st);
  CaseData *cds = tg_calloc(cases.len + 1, sizeof *cds);
  for (size_t i = 0; i < cases.len && i < late_cases; i++)
    if (!only || strstr(cases.data[i].name, only)) check_case((int)i, &cds[i], nlists, nc, &st, &ren, verbose);
  run_cjobs(cds, &st);
  test_random_gpu_opts(cds, verbose);
  for (size_t i = late_cases; i < cases.len; i++)
    if (!only || strstr(cases.data[i].name, only)) check_case((int)i, &cds[i], nlists, nc, &st, &ren, verbose);
  run_cjobs(cds, &st);
  fprintf(stderr, "opts: %zu kernels, %ld opt lists (%ld the heuristic's, %ld with vector loads/stores, %ld with vector "
          "accumulators) with %ld opts "
          "(UPCAST %ld, UNROLL %ld, THREAD %ld, PADTO %ld, SWAP %ld, LOOP %ld, NOLOCALS %ld) checked against the naive "
          "kernel in the interpreter, %ld through compiled C; %ld opts refused (%ld LOCAL/GROUP/GROUPTOP/TC, never legal "
          "on the CPU)\n",
          cases.len, st.lists, st.heuristic_lists, st.vector_lists, st.vector_acc_lists, st.opts, st.by_op[OPT_UPCAST], st.by_op[OPT_UNROLL],
          st.by_op[OPT_THREAD], st.by_op[OPT_PADTO], st.by_op[OPT_SWAP], st.by_op[OPT_LOOP], st.by_op[OPT_NOLOCALS],
          st.c_checked, st.refused, st.refused_locals);
  CHECK(fixed || only || (st.lists > 0 && st.vector_acc_lists > 0 && st.by_op[OPT_UPCAST] > 0 && st.by_op[OPT_UNROLL] > 0 && st.by_op[OPT_THREAD] > 0 &&
                  st.by_op[OPT_SWAP] > 0 && st.by_op[OPT_LOOP] > 0));
  for (size_t i = 0; i < cases.len; i++) {
    host_free(&cds[i].input);
    host_free(&cds[i].naive);
    uop_drop(cases.data[i].ast);
  }
  tg_free(cds);
  tg_vec_free(&cases);
  tg_vec_free(&actions);
}

/* ================================================================================================================
 * invalid opts: TG_ERR_INVALID_ARGUMENT, "KernelOptError: <reason>", the scheduler unchanged
 * ================================================================================================================ */

/* The scheduler of a kernel's AST (range passes done, nothing applied); false if it cannot be had. */
static bool sched_of(OptScheduler *s, UOp *ast, const Renderer *ren) {
  UOp *pre = cg_optimize(opt_ast_with_opts(ast, NULL, 0), ren);
  CHECK_MSG(pre != NULL, "cg_optimize: %s", tg_last_error());
  if (!pre) return false;
  opt_sched_init(s, pre, ren);
  return true;
}

static bool same_sched(const OptScheduler *a, const OptScheduler *b) {
  return a->ast == b->ast && a->napplied == b->napplied && a->next_range_id == b->next_range_id &&
         a->dont_use_locals == b->dont_use_locals &&
         memcmp(a->applied, b->applied, (size_t)a->napplied * sizeof(Opt)) == 0;
}

/* Apply `prefix` (must succeed), then `bad`: it must fail with `reason` in the message and change nothing. */
static void expect_refused(UOp *ast, const Renderer *ren, const char *what, const Opt *prefix, int nprefix, Opt bad,
                           const char *reason) {
  UOpScope sc = uop_scope_begin();
  OptScheduler s;
  if (!sched_of(&s, ast, ren)) {
    uop_scope_end(sc);
    return;
  }
  bool ok = true;
  for (int i = 0; i < nprefix && ok; i++) {
    ok = opt_apply(&s, prefix[i]) == TG_OK;
    CHECK_MSG(ok, "%s: setup opt %d refused: %s", what, i, tg_last_error());
  }
  if (ok) {
    OptScheduler before;
    opt_sched_copy(&before, &s);
    tg_status st = opt_apply(&s, bad);
    const char *msg = tg_last_error();
    CHECK_MSG(st == TG_ERR_INVALID_ARGUMENT, "%s: status %d (%s)", what, (int)st, st == TG_OK ? "accepted" : msg);
    CHECK_MSG(st == TG_OK || (strncmp(msg, "KernelOptError: ", 16) == 0 && strstr(msg, reason)),
              "%s: message \"%s\", want KernelOptError: ...%s...", what, msg, reason);
    CHECK_MSG(same_sched(&before, &s), "%s: the refused opt changed the scheduler", what);
    /* the same list handed to the codegen as opts_to_apply fails with the same reason, nothing lowered */
    Opt list[OPT_LIST_MAX];
    if (nprefix) memcpy(list, prefix, (size_t)nprefix * sizeof(Opt));
    list[nprefix] = bad;
    UOp *low = cg_lower(opt_ast_with_opts(ast, list, nprefix + 1), ren);
    CHECK_MSG(low == NULL && strstr(tg_last_error(), reason), "%s: cg_lower with it in opts_to_apply: %s", what,
              low ? "lowered" : tg_last_error());
    opt_sched_free(&before);
  }
  opt_sched_free(&s);
  uop_scope_end(sc);
}

static UOp *kernel_of(tg_tensor *t) {
  UOp *lin = t ? sched_kernels(uop_sink(&t->uop, 1)) : NULL;
  CHECK_MSG(lin && lin->nsrc == 1, "one kernel expected: %s", lin ? "several" : tg_last_error());
  return lin && lin->nsrc == 1 ? lin->src[0]->src[0] : NULL;
}

/* o applies to ast and leaves loops (LOOP axes only) of the sizes want */
static void check_loop_opt(UOp *ast, const Renderer *ren, Opt o, const int64_t *want, int n) {
  OptScheduler s;
  if (!sched_of(&s, ast, ren)) return;
  char name[96];
  opt_format(o, name, sizeof name);
  CHECK_MSG(opt_apply(&s, o) == TG_OK, "%s refused: %s", name, tg_last_error());
  int64_t shape[8];
  AxisType types[8];
  CHECK_EQ_INT(opt_sched_len(&s), n);
  if (opt_sched_len(&s) == n) {
    opt_sched_shape(&s, shape, types);
    for (int i = 0; i < n; i++) CHECK_MSG(shape[i] == want[i] && types[i] == AXIS_WEAK, "%s: axis %d", name, i);
  }
  opt_sched_free(&s);
}

static void test_opt_errors(void) {
  Renderer ren = test_renderer();
  tg_scope ts = tg_scope_begin();
  UOpScope sc = uop_scope_begin();
  /* matmul 64x64x64: axes (64 LOOP, 64 LOOP, 64 REDUCE); a broadcast add 64x1 + 1x48: (64 LOOP, 48 LOOP) */
  UOp *mm = kernel_of(tg_matmul(fl(64, 64), fl(64, 64)));
  UOp *ew = kernel_of(tg_add(fl(64, 1), fl(1, 48)));
  if (!mm || !ew) {
    uop_scope_end(sc);
    tg_scope_end(ts);
    return;
  }
#define O(op, axis, arg) ((Opt){OPT_##op, axis, arg})
  expect_refused(mm, &ren, "UPCAST 17", NULL, 0, O(UPCAST, 0, 17), "don't upcast more than 16");
  expect_refused(mm, &ren, "UPCAST whole 64", NULL, 0, O(UPCAST, 0, 0), "don't upcast more than 16");
  expect_refused(mm, &ren, "UNROLL 33", NULL, 0, O(UNROLL, 0, 33), "don't unroll more than 32");
  expect_refused(mm, &ren, "UNROLL whole 64", NULL, 0, O(UNROLL, 0, 0), "don't unroll more than 32");
  expect_refused(ew, &ren, "UNROLL without a reduce axis", NULL, 0, O(UNROLL, 0, 4), "invalid axis 0 for UNROLL");
  expect_refused(mm, &ren, "UNROLL past the reduce axes", NULL, 0, O(UNROLL, 1, 4), "invalid axis 1 for UNROLL");
  expect_refused(mm, &ren, "UPCAST of the reduce axis", NULL, 0, O(UPCAST, 2, 4), "upcast is for GLOBAL/LOCAL/LOOP");
  expect_refused(mm, &ren, "UPCAST 5 of 64", NULL, 0, O(UPCAST, 0, 5), "5 can't divide 64");
  expect_refused(mm, &ren, "UNROLL 3 of 64", NULL, 0, O(UNROLL, 0, 3), "3 can't divide 64");
  expect_refused(ew, &ren, "THREAD 5 of 64", NULL, 0, O(THREAD, 0, 5), "5 can't divide 64");
  expect_refused(ew, &ren, "THREAD twice", (Opt[]){O(THREAD, 0, 2)}, 1, O(THREAD, 1, 2), "already threaded");
  expect_refused(ew, &ren, "THREAD past global_max", NULL, 0, O(THREAD, 0, 16), "too many threads");
  expect_refused(mm, &ren, "THREAD on the reduce axis", NULL, 0, O(THREAD, 2, 2), "can't apply range to this dim");
  expect_refused(mm, &ren, "LOCAL on the CPU", NULL, 0, O(LOCAL, 0, 4), "locals needed for opt");
  expect_refused(mm, &ren, "GROUP on the CPU", NULL, 0, O(GROUP, 0, 4), "locals needed for opt");
  expect_refused(mm, &ren, "GROUPTOP on the CPU", NULL, 0, O(GROUPTOP, 0, 16), "locals needed for opt");
  expect_refused(mm, &ren, "UPCAST axis out of range", NULL, 0, O(UPCAST, 3, 4), "invalid axis 3 for UPCAST");
  expect_refused(ew, &ren, "PADTO axis out of range", NULL, 0, O(PADTO, 7, 32), "invalid axis 7 for PADTO");
  expect_refused(mm, &ren, "TC", NULL, 0, O(TC, 0, opt_tc_arg(-1, 0, 1)), "no tensor core available");
  expect_refused(mm, &ren, "PADTO of an upcast axis", (Opt[]){O(UPCAST, 0, 4)}, 1, O(PADTO, 2, 32),
                 "cannot pad upcasted");
  expect_refused(mm, &ren, "PADTO of an unrolled axis", (Opt[]){O(UNROLL, 0, 4)}, 1, O(PADTO, 3, 32),
                 "cannot pad upcasted");
  expect_refused(ew, &ren, "PADTO of the thread axis", (Opt[]){O(THREAD, 0, 2)}, 1, O(PADTO, 2, 8), "cannot pad thread");
  expect_refused(ew, &ren, "PADTO 48 to 256", NULL, 0, O(PADTO, 1, 256), "pad adds more than quadruple the work");
  expect_refused(mm, &ren, "SWAP of the reduce axis", NULL, 0, O(SWAP, 0, 2), "swap only for loops");
  expect_refused(mm, &ren, "LOOP of the reduce axis", NULL, 0, O(LOOP, 2, 4), "loop split is for LOOP axes");
  expect_refused(mm, &ren, "LOOP by 1", NULL, 0, O(LOOP, 0, 1), "loop split needs an amount of at least 2");
  expect_refused(mm, &ren, "LOOP 5 of 64", NULL, 0, O(LOOP, 0, 5), "5 can't divide 64");
  expect_refused(ew, &ren, "SWAP axis out of range", NULL, 0, O(SWAP, 0, 5), "swap axis out of range");
  expect_refused(ew, &ren, "unknown op", NULL, 0, ((Opt){OPT_OP_COUNT + 3, 0, 4}), "unknown opt op");
  /* LOOP 4 of (64, 48)'s first axis: (16, 48, 4), the inner part a loop inside the others */
  check_loop_opt(ew, &ren, O(LOOP, 0, 4), (const int64_t[]){16, 48, 4}, 3);
  /* SWAP exchanges two loops on the CPU (tinygrad: GLOBAL axes only; see opt.c apply_swap): (64, 48) -> (48, 64) */
  check_loop_opt(ew, &ren, O(SWAP, 0, 1), (const int64_t[]){48, 64}, 2);
  OptScheduler s;
  /* opts that do apply on the CPU; NOLOCALS only records itself */
  if (sched_of(&s, mm, &ren)) {
    const Opt good[] = {O(NOLOCALS, -1, 0), O(UPCAST, 0, 4), O(UNROLL, 0, 4), O(PADTO, 1, 48), O(THREAD, 1, 8)};
    for (size_t i = 0; i < TG_ARRAY_LEN(good); i++) {
      char b[96];
      opt_format(good[i], b, sizeof b);
      CHECK_MSG(opt_apply(&s, good[i]) == TG_OK, "%s refused: %s", b, tg_last_error());
    }
    CHECK_EQ_INT(s.napplied, 5);
    CHECK(s.dont_use_locals);
    int64_t shape[16];
    AxisType types[16];
    CHECK_EQ_INT(opt_sched_len(&s), 6);
    if (opt_sched_len(&s) == 6) {
      opt_sched_shape(&s, shape, types);
      /* UPCAST 4 of 64 -> 16 x 4; UNROLL 4 of 64 -> 16 x 4; 64 padded to 96, THREAD 8 of it -> 8 x 12; in tinygrad's
       * axis order (LOOP, THREAD, UPCAST, REDUCE, UNROLL) */
      static const int64_t want_shape[6] = {16, 12, 8, 4, 16, 4};
      static const AxisType want_types[6] = {AXIS_WEAK, AXIS_WEAK, AXIS_THREAD, AXIS_UPCAST, AXIS_REDUCE, AXIS_UNROLL};
      for (int i = 0; i < 6; i++) {
        CHECK_MSG(shape[i] == want_shape[i] && types[i] == want_types[i], "axis %d: %lld %s, want %lld %s", i,
                  (long long)shape[i], uop_axis_type_name(types[i]), (long long)want_shape[i], uop_axis_type_name(want_types[i]));
      }
    }
    opt_sched_free(&s);
  }
#undef O
  char b[96];
  opt_format((Opt){OPT_UPCAST, 0, 4}, b, sizeof b);
  CHECK_EQ_STR(b, "Opt(op=OptOps.UPCAST, axis=0, arg=4)");
  opt_format((Opt){OPT_NOLOCALS, -1, 0}, b, sizeof b);
  CHECK_EQ_STR(b, "Opt(op=OptOps.NOLOCALS, axis=None, arg=None)");
  uop_scope_end(sc);
  tg_scope_end(ts);
}

/* ================================================================================================================
 * the hand-coded heuristic picks tinygrad's opts (tests/opt_heuristic_cases.h)
 * ================================================================================================================ */

static char *joined(const char *const *pieces) {
  StrBuf b;
  sb_init(&b);
  for (size_t i = 0; pieces[i]; i++) sb_puts(&b, pieces[i]);
  return sb_take(&b);
}

/* Where tinygrad.c's heuristic deliberately picks other opts than tinygrad's (the picks are still checked to apply
 * and, for small kernels, to compute the naive result in test_random_opts). */
static const struct { const char *name, *why; } heuristic_deviations[] = {
    {"matmul_64_0", "CPU register tiles (opt_heuristic.c cpu_matmul_tiles): a vector-wide UPCAST, not 4x4"},
    {"matmul_256_0", "CPU register tiles (opt_heuristic.c cpu_matmul_tiles): a vector-wide UPCAST, not 4x4"},
    {"matvec_1x512x256_0", "CPU register tiles (opt_heuristic.c cpu_matmul_tiles): a vector-wide UPCAST of the output"},
    {"conv_1x3x32x32_k3_0", "CPU register tiles (opt_heuristic.c cpu_matmul_tiles): a padded conv is matmul-like too"},
    {"conv_2x3x9x9_k3_0", "CPU register tiles (opt_heuristic.c cpu_matmul_tiles): a short conv row is upcast whole"},
    {"add_1M_0", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"add_bcast_1024x1_1x1024_0", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"relu_64x64_0", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"softmax_64x128_2", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"cat_4x5_4x3_0", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"layernorm_32x256_2", "CPU elementwise kernels get no upcast (opt_heuristic.c): the loop vectorizer does better"},
    {"sum_all_1M_0", "CPU contiguous reduce left to the loop vectorizer (opt_heuristic.c cpu_row_reduce): no upcast/unroll"},
    {"sum_axis1_1024x512_0", "CPU contiguous reduce left to the loop vectorizer (opt_heuristic.c cpu_row_reduce): no upcast/unroll"},
    {"softmax_64x128_1", "CPU contiguous reduce left to the loop vectorizer (opt_heuristic.c cpu_row_reduce): no upcast/unroll"},
    {"layernorm_32x256_0", "CPU contiguous reduce left to the loop vectorizer (opt_heuristic.c cpu_row_reduce): no upcast/unroll"},
    {"layernorm_32x256_1", "CPU contiguous reduce left to the loop vectorizer (opt_heuristic.c cpu_row_reduce): no upcast/unroll"},
    {"sum_axis0_512x1024_0", "CPU sum down the columns (opt_heuristic.c cpu_column_reduce): 16 x 16 output lanes, no unroll"},
};

static const char *heuristic_deviation(const char *name) {
  for (size_t i = 0; i < TG_ARRAY_LEN(heuristic_deviations); i++)
    if (strcmp(heuristic_deviations[i].name, name) == 0) return heuristic_deviations[i].why;
  return NULL;
}

static void test_heuristic(void) {
  Renderer ren = test_renderer();
  int same = 0, deviating = 0;
  for (size_t i = 0; i < TG_ARRAY_LEN(heuristic_cases); i++) {
    UOpScope sc = uop_scope_begin();
    const char *name = heuristic_cases[i].name;
    char *text = joined(heuristic_cases[i].ast);
    UOp *ast = uop_parse(text);
    tg_free(text);
    CHECK_MSG(ast != NULL, "%s: parse: %s", name, tg_last_error());
    OptScheduler s;
    if (!ast || !sched_of(&s, ast, &ren)) {
      uop_scope_end(sc);
      continue;
    }
    opt_hand_coded(&s);
    Opt want[8];
    int nwant = heuristic_cases[i].nopts;
    for (int k = 0; k < nwant; k++)
      want[k] = (Opt){heuristic_cases[i].opts[k].op, heuristic_cases[i].opts[k].axis, heuristic_cases[i].opts[k].arg};
    char got_text[1024], want_text[1024];
    format_opts(s.applied, s.napplied, got_text, sizeof got_text);
    format_opts(want, nwant, want_text, sizeof want_text);
    bool ok = s.napplied == nwant && memcmp(s.applied, want, (size_t)nwant * sizeof(Opt)) == 0;
    const char *why = heuristic_deviation(name);
    CHECK_MSG(ok || why, "%s: the heuristic picks [%s], tinygrad [%s]", name, got_text, want_text);
    CHECK_MSG(!ok || !why, "%s: listed in heuristic_deviations but picks tinygrad's opts [%s]", name, got_text);
    UOp *opt_ast = opt_get_optimized_ast(&s, NULL);
    const char *kname = opt_ast ? opt_ast->arg.kernel->name : tg_last_error();
    CHECK_MSG(opt_ast && (why || strcmp(kname, heuristic_cases[i].kname) == 0), "%s: kernel %s, tinygrad %s", name,
              kname, heuristic_cases[i].kname);
    if (why && verbose_opts())
      fprintf(stderr, "  %s: [%s], tinygrad [%s] (%s)\n", name, got_text, want_text, ok ? "the same after all" : why);
    same += ok;
    deviating += why && !ok;
    /* and the codegen without opts_to_apply applies the same (unless NOOPT is set) */
    if (!tg_getenv_int("NOOPT", 0)) {
      UOp *low = cg_optimize(ast, &ren);
      CHECK_MSG(low && low->arg.kernel->applied_opts == s.napplied &&
                    memcmp(low->arg.kernel->applied, s.applied, (size_t)s.napplied * sizeof(Opt)) == 0,
                "%s: cg_optimize applies other opts than opt_hand_coded", name);
    }
    opt_sched_free(&s);
    uop_scope_end(sc);
  }
  fprintf(stderr, "opts: the heuristic picks tinygrad's opts for %d of %zu kernels (%d deliberate CPU deviations)\n",
          same, TG_ARRAY_LEN(heuristic_cases), deviating);
}

/* The heuristic's opts for the last kernel of t's schedule, in s (the caller frees it); false when there is none. */
static bool heuristic_of_last(tg_tensor *t, const Renderer *ren, OptScheduler *s, int *nkernels) {
  UOp *lin = t ? sched_kernels(uop_sink(&t->uop, 1)) : NULL;
  *nkernels = lin ? (int)lin->nsrc : 0;
  if (!lin || !lin->nsrc || !sched_of(s, lin->src[lin->nsrc - 1]->src[0], ren)) return false;
  opt_hand_coded(s);
  return true;
}

static bool applied_has(const OptScheduler *s, Opt o) {
  for (int i = 0; i < s->napplied; i++)
    if (s->applied[i].op == o.op && s->applied[i].axis == o.axis && s->applied[i].arg == o.arg) return true;
  return false;
}

/* Chained accumulation (cg_lower.c): the matmul tile's 16 vector accumulators with the reduce unrolled by 8 add
 * their products one by one, acc + p0 + p1 ... (C's left-to-right order: one FMA each), and with CHAIN_ACC_MIN=0 as
 * acc + (p0 + p1 + ...); a tile of fewer accumulators than CHAIN_ACC_MIN keeps the sum. */
static void check_chained_accumulation(tg_tensor *t, const OptScheduler *base) {
  UOp *lin = sched_kernels(uop_sink(&t->uop, 1));
  UOp *ast = lin->src[lin->nsrc - 1]->src[0];
  static const struct { const char *min; const char *want; } chain_cases[] = {
      {NULL, "))))+(val"},  /* the accumulator's load, then a product */
      {"0", "))))+((val"},  /* the accumulator's load, then the sum of the products */
      {"17", "))))+((val"}, /* 16 accumulators share the loop: fewer than asked for */
  };
  for (size_t c = 0; c < TG_ARRAY_LEN(chain_cases); c++) {
    if (chain_cases[c].min) test_setenv("CHAIN_ACC_MIN", chain_cases[c].min);
    OptScheduler o;
    opt_sched_copy(&o, base);
    bool ok = opt_apply(&o, (Opt){OPT_UNROLL, 0, 8}) == TG_OK;
    CHECK_MSG(ok, "matmul tile + UNROLL 8 refused: %s", tg_last_error());
    UOp *low = ok ? cg_lower(opt_ast_with_opts(ast, o.applied, o.napplied), o.ren) : NULL;
    UOp *code = low ? cg_linearize(low) : NULL;
    char *src = code ? o.ren->render(o.ren, code) : NULL;
    CHECK_MSG(src != NULL, "matmul tile + UNROLL 8: no source: %s", tg_last_error());
    const char *upd = src ? strstr(src, "*((float16*)((buf0+0))) = ((*((float16*)((buf0+0))))+") : NULL;
    CHECK_MSG(upd && strncmp(upd + strlen("*((float16*)((buf0+0))) = ((*((float16*)((buf0+0"), chain_cases[c].want,
                             strlen(chain_cases[c].want)) == 0,
              "CHAIN_ACC_MIN=%s: accumulator update %.120s", chain_cases[c].min ? chain_cases[c].min : "default",
              upd ? upd : "(none)");
    free(src);
    opt_sched_free(&o);
    test_unsetenv("CHAIN_ACC_MIN");
  }
}

/* CPU adaptations outside tinygrad's heuristic cases: the panel copy's loop order (opt_heuristic.c cpu_copy_order)
 * and the tile of a matmul over panels (cpu_matmul_tiles; schedule/earliest.c pack_matmul_operand) */
static void test_cpu_loop_order(void) {
  Renderer ren = test_renderer();
  tg_scope ts = tg_scope_begin();
  UOpScope sc = uop_scope_begin();
  static const int perm[3] = {1, 0, 2};
  OptScheduler s;
  int nk;
  /* rows 4 KiB apart, read in the middle loop: the row loop goes outside */
  tg_tensor *far = tg_contiguous(tg_permute(tg_reshape(fl(256, 1024), TG_SHAPE(256, 64, 16)), perm, 3));
  if (heuristic_of_last(far, &ren, &s, &nk)) {
    CHECK_MSG(s.napplied >= 1 && s.applied[0].op == OPT_SWAP && s.applied[0].axis == 0 && s.applied[0].arg == 1,
              "panel copy of 256x1024: the row loop is not swapped outside");
    CHECK_MSG(applied_has(&s, (Opt){OPT_UPCAST, 0, 16}), "panel copy of 256x1024: not 16 rows per step");
    opt_sched_free(&s);
  }
  /* rows 2 KiB apart: left alone */
  tg_tensor *near = tg_contiguous(tg_permute(tg_reshape(fl(256, 512), TG_SHAPE(256, 32, 16)), perm, 3));
  if (heuristic_of_last(near, &ren, &s, &nk)) {
    CHECK_MSG(!applied_has(&s, (Opt){OPT_SWAP, 0, 1}), "panel copy of 256x512: swapped");
    opt_sched_free(&s);
  }
  /* a sum of exps over 10 classes (softmax's exp-sum) stays a plain loop: no unroll, no upcast; a max over the same
   * rows keeps tinygrad's whole unroll */
  {
    int ax1 = 1;
    tg_tensor *logits = fl(512, 10);
    tg_tensor *es = tg_sum(tg_exp(logits), &ax1, 1, false), *mx = tg_max(logits, &ax1, 1, false);
    if (heuristic_of_last(es, &ren, &s, &nk)) {
      char got[512];
      format_opts(s.applied, s.napplied, got, sizeof got);
      CHECK_MSG(s.napplied == 0, "sum of exp over 512x10: [%s]", got);
      opt_sched_free(&s);
    }
    if (heuristic_of_last(mx, &ren, &s, &nk)) {
      char got[512];
      format_opts(s.applied, s.napplied, got, sizeof got);
      CHECK_MSG(applied_has(&s, (Opt){OPT_UNROLL, 0, 0}), "max over 512x10: [%s]", got);
      opt_sched_free(&s);
    }
  }
  /* a prefill over big float16 weights (32 tokens, the 1B llama's shapes, scheduled only): the gate projection (8192
   * x 2048, its tokens 256 KiB) has the weight's rows outside the tokens (cpu_dot_tiles); the down projection (2048 x
   * 8192) is one kernel, not split into partials (its tokens are a factor of 1 MiB: schedule/earliest.c
   * factor_read_once), and with CPU_SPLIT_SMALL_FACTOR=0 split as before */
  {
    tg_tensor *xg = tg_empty(TG_SHAPE(32, 2048), TG_FLOAT32), *wg = tg_empty(TG_SHAPE(8192, 2048), TG_FLOAT16);
    tg_tensor *gate = tg_matmul(xg, tg_transpose(tg_cast(wg, TG_FLOAT32), 0, 1));
    if (heuristic_of_last(gate, &ren, &s, &nk)) {
      char got[512];
      format_opts(s.applied, s.napplied, got, sizeof got);
      bool swapped = false;
      for (int i = 0; i < s.napplied; i++) swapped |= s.applied[i].op == OPT_SWAP;
      CHECK_MSG(nk == 1 && swapped, "prefill 32 x (8192 x 2048 f16)^T: %d kernels, the weight's rows not outside the "
                "tokens: [%s]", nk, got);
      opt_sched_free(&s);
    }
    tg_tensor *xd = tg_empty(TG_SHAPE(32, 8192), TG_FLOAT32), *wd = tg_empty(TG_SHAPE(2048, 8192), TG_FLOAT16);
    for (int small = 1; small >= 0; small--) {
      if (!small) test_setenv("CPU_SPLIT_SMALL_FACTOR", "0");
      tg_tensor *down = tg_matmul(xd, tg_transpose(tg_cast(wd, TG_FLOAT32), 0, 1));
      if (heuristic_of_last(down, &ren, &s, &nk)) {
        CHECK_MSG(nk == (small ? 1 : 2), "prefill 32 x (2048 x 8192 f16)^T, CPU_SPLIT_SMALL_FACTOR %s: %d kernels",
                  small ? "default" : "0", nk);
        opt_sched_free(&s);
      }
    }
    test_unsetenv("CPU_SPLIT_SMALL_FACTOR");
  }
  /* a transposing copy (W^T of a Linear layer made contiguous): a tile of 4 store lanes x 8 load lanes */
  tg_tensor *wt = tg_contiguous(tg_transpose(fl(128, 784), 0, 1));
  if (heuristic_of_last(wt, &ren, &s, &nk)) {
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    CHECK_MSG(s.napplied >= 2 && s.applied[0].op == OPT_UPCAST && s.applied[0].axis == 1 && s.applied[0].arg == 4 &&
                  s.applied[1].op == OPT_UPCAST && s.applied[1].axis == 0 && s.applied[1].arg == 8,
              "transpose 128x784: [%s]", got);
    opt_sched_free(&s);
  }
  /* A @ B, B in panels: 16 lanes x 2 panels x 8 rows, the panel loop outside the rows in blocks of 4, the reduce
   * not unrolled */
  tg_tensor *mm = tg_matmul(fl(64, 1024), fl(1024, 1024));
  if (heuristic_of_last(mm, &ren, &s, &nk)) {
    CHECK_EQ_INT(nk, 2);
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    bool unrolled = false;
    for (int i = 0; i < s.napplied; i++) unrolled |= s.applied[i].op == OPT_UNROLL;
    CHECK_MSG(applied_has(&s, (Opt){OPT_UPCAST, 2, 16}) && applied_has(&s, (Opt){OPT_UPCAST, 1, 2}) &&
                  applied_has(&s, (Opt){OPT_UPCAST, 0, 8}) && applied_has(&s, (Opt){OPT_SWAP, 0, 1}) &&
                  applied_has(&s, (Opt){OPT_LOOP, 0, 4}) && !unrolled,
              "matmul over panels: [%s]", got);
    check_chained_accumulation(mm, &s);
    opt_sched_free(&s);
  }
  /* A^T @ B, both operands contiguous along their own output axis (the MLP's first weight gradient, (512x128)^T @
   * (512x784)): the vector load is the one whose axis takes pairs of registers (128 = 8 x 16, not 784 = 49 x 16), two
   * vectors x 8 rows of the other; on two cores the THREAD split takes the 784 rows (each piece reads half of the
   * 784-wide operand), not the 128 vectors (each would read all of it). Its second weight gradient (512x10)^T @
   * (512x128): two vectors along 128 x 5 of the 10 rows, not the 10 lanes whole; too small for threads. */
  Renderer ren2 = ren;
  ren2.global_max[0] = 2;
  tg_tensor *atb = tg_matmul(tg_transpose(fl(512, 128), 0, 1), fl(512, 784));
  if (heuristic_of_last(atb, &ren2, &s, &nk)) {
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    CHECK_MSG(applied_has(&s, (Opt){OPT_UPCAST, 0, 16}) && applied_has(&s, (Opt){OPT_UPCAST, 0, 2}) &&
                  applied_has(&s, (Opt){OPT_UPCAST, 1, 8}) && applied_has(&s, (Opt){OPT_THREAD, 1, 2}),
              "A^T @ B tile: [%s]", got);
    opt_sched_free(&s);
  }
  tg_tensor *atb10 = tg_matmul(tg_transpose(fl(512, 10), 0, 1), fl(512, 128));
  if (heuristic_of_last(atb10, &ren2, &s, &nk)) {
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    bool threaded = false;
    for (int k = 0; k < s.napplied; k++) threaded |= s.applied[k].op == OPT_THREAD;
    CHECK_MSG(applied_has(&s, (Opt){OPT_UPCAST, 1, 16}) && applied_has(&s, (Opt){OPT_UPCAST, 1, 2}) &&
                  applied_has(&s, (Opt){OPT_UPCAST, 0, 5}) && !threaded,
              "(512x10)^T @ (512x128) tile: [%s]", got);
    opt_sched_free(&s);
  }
  /* a sum over (N, H*W) of (N, C, H*W), BatchNorm's statistics: with a row of 400 the two-axis reduce is left to the
   * loop vectorizer (no UPCAST/UNROLL); with a row of 64 it keeps the register tiles */
  for (int len = 400; len >= 64; len = len == 400 ? 64 : 0) {
    static const int axes02[2] = {0, 2};
    tg_tensor *bn = tg_sum(mk(TG_FLOAT32, 8, 32, len, 0), axes02, 2, false);
    if (!heuristic_of_last(bn, &ren, &s, &nk)) continue;
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    bool tiles = false;
    for (int k = 0; k < s.napplied; k++) tiles |= s.applied[k].op == OPT_UPCAST || s.applied[k].op == OPT_UNROLL;
    CHECK_MSG(tiles == (len == 64), "sum over (0, 2) of 8x32x%d: [%s]", len, got);
    opt_sched_free(&s);
  }
  /* a conv with a per-channel epilogue and the max-pool fused after it (a sum nested in a max, eval mode): its sums
   * keep vector accumulators (cg_expand substitutes the inner REDUCE's lanes inside the outer one's), and its tile
   * is the conv window's (opt_heuristic.c: rows that step by 2 pixels) */
  {
    int64_t none2[2] = {0, 0}, k22[2] = {2, 2};
    tg_tensor *es = mk(TG_FLOAT32, 1, 32, 1, 1);
    tg_tensor *ec = tg_conv2d(mk(TG_FLOAT32, 2, 32, 12, 12), mk(TG_FLOAT32, 32, 32, 5, 5), NULL, 1, NULL, none2, NULL);
    tg_tensor *epi = tg_div(tg_mul(tg_sub(ec, es), es), tg_sqrt(tg_add(es, tg_const_float(1e-5))));
    tg_tensor *pooled = tg_max_pool2d(tg_relu(epi), k22, NULL, NULL, NULL);
    CHECK_MSG(pooled != NULL, "conv + pool: %s", tg_last_error());
    if (pooled && heuristic_of_last(pooled, &ren, &s, &nk)) {
      char got[512];
      format_opts(s.applied, s.napplied, got, sizeof got);
      UOp *klin = sched_kernels(uop_sink(&pooled->uop, 1));
      UOp *lin = klin && klin->nsrc ? lower_linear(klin->src[klin->nsrc - 1]->src[0], s.applied, s.napplied, &ren) : NULL;
      int vector_accs = 0, scalar_accs = 0;
      for (uint32_t k = 0; lin && k < lin->nsrc; k++) {
        UOp *u = lin->src[k];
        if (u->op != TG_OP_BUFFER || u->nsrc != 1 || u->src[0]->op != TG_OP_CAST || u->src[0]->src[0]->op != TG_OP_CONST)
          continue;
        if (u->src[0]->src[0]->arg.c.i > 1) vector_accs++;
        else scalar_accs++;
      }
      CHECK_MSG(lin != NULL && vector_accs > 0, /* the max over the pool window keeps scalar lanes */
                "conv + pool [%s]: %d vector accumulators, %d scalar ones", got, vector_accs, scalar_accs);
      /* its pooled pixels step by 2 input pixels and still take the window tile (kx unrolled), not batch rows */
      CHECK_MSG(applied_has(&s, (Opt){OPT_UNROLL, 2, 0}), "conv + pool: no window tile: [%s]", got);
      opt_sched_free(&s);
    }
  }
  /* a 3x3 conv over 28-pixel rows: one vector of output channels x 14 pixels (not two vectors x 7), kx unrolled */
  static const int64_t pad1[2] = {1, 1};
  tg_tensor *conv = tg_conv2d(mk(TG_FLOAT32, 2, 32, 28, 28), mk(TG_FLOAT32, 64, 32, 3, 3), NULL, 1, NULL, pad1, NULL);
  CHECK_MSG(conv != NULL, "conv: %s", tg_last_error());
  if (conv && heuristic_of_last(conv, &ren, &s, &nk)) {
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    CHECK_MSG(applied_has(&s, (Opt){OPT_UPCAST, 1, 16}) && applied_has(&s, (Opt){OPT_UPCAST, 3, 14}) &&
                  applied_has(&s, (Opt){OPT_UNROLL, 2, 0}) && !applied_has(&s, (Opt){OPT_UPCAST, 1, 2}),
              "conv 2x32x28x28 3x3 tile: [%s]", got);
    opt_sched_free(&s);
  }
  /* a conv weight gradient split into partials: they are stored partial-major (schedule/earliest.c split_reduceop),
   * so the partial axis is the first kernel's outermost loop without a SWAP, shared out over the cores, and an
   * output tile's stores share cache lines (the store stride of the partial axis is the 36864 outputs, not 1) */
  tg_tensor *x = tg_randn(TG_SHAPE(512, 64, 8, 8), TG_FLOAT32), *w = tg_randn(TG_SHAPE(64, 64, 3, 3), TG_FLOAT32);
  tg_tensor *y = tg_conv2d(x, w, NULL, 1, NULL, NULL, NULL);
  tg_tensor *loss = y ? tg_sum(tg_mul(y, tg_randn_like(y)), NULL, 0, false) : NULL;
  const tg_tensor *wrt[1] = {w};
  tg_tensor *g[1] = {NULL};
  CHECK_MSG(loss && tg_gradient(loss, wrt, 1, g) == TG_OK, "conv weight gradient: %s", tg_last_error());
  UOp *root = g[0] ? g[0]->uop : NULL, *lin = root ? sched_kernels(uop_sink(&root, 1)) : NULL;
  int partial_major = 0;
  for (uint32_t i = 0; lin && i < lin->nsrc; i++) {
    if (!sched_of(&s, lin->src[i]->src[0], &ren)) continue;
    UOpVec rngs = {0}, topo = {0};
    opt_sched_rngs(&s, &rngs);
    uop_toposort(s.ast, NULL, NULL, &topo);
    UOp *store_idx = NULL;
    for (size_t k = 0; k < topo.len && !store_idx; k++)
      if (topo.data[k]->op == TG_OP_STORE && topo.data[k]->src[0]->op == TG_OP_INDEX) store_idx = topo.data[k]->src[0]->src[1];
    int64_t stride = -1;
    if (store_idx && rngs.len >= 2) {
      EvalEnv env;
      eval_env_init(&env);
      for (size_t k = 0; k < rngs.len; k++) eval_env_bind_node(&env, rngs.data[k], 0);
      EvalValue at0 = uop_eval(store_idx, &env);
      eval_env_bind_node(&env, rngs.data[0], 1);
      EvalValue at1 = uop_eval(store_idx, &env);
      if (at0.state == EVAL_OK && at1.state == EVAL_OK) stride = (int64_t)(at1.v - at0.v);
      eval_env_free(&env);
    }
    if (stride == 36864) {
      opt_hand_coded(&s);
      char got[512];
      format_opts(s.applied, s.napplied, got, sizeof got);
      bool swapped = false, threaded = false;
      for (int k = 0; k < s.napplied; k++) {
        swapped |= s.applied[k].op == OPT_SWAP;
        threaded |= s.applied[k].op == OPT_THREAD && s.applied[k].axis == 0;
      }
      CHECK_MSG(!swapped && threaded, "conv weight gradient, partials: [%s]", got);
      partial_major++;
    }
    tg_vec_free(&rngs);
    tg_vec_free(&topo);
    opt_sched_free(&s);
  }
  CHECK_MSG(partial_major == 1, "conv weight gradient: %d kernels store partials partial-major", partial_major);
  uop_scope_end(sc);
  tg_scope_end(ts);
}

/* DEBUG=2's GFLOPS (render_estimate_flops, tinygrad Estimates with ignore_indexing): a matmul is 2*M*N*K whatever
 * the tiling; vector lanes, THREAD's core_id and the unrolled reduce all count, address arithmetic does not */
static void test_flops_estimate(void) {
  Renderer ren = test_renderer();
  tg_scope ts = tg_scope_begin();
  UOpScope sc = uop_scope_begin();
  tg_tensor *mm = tg_matmul(fl(64, 96), fl(96, 128));
  UOp *ast = kernel_of(mm);
  OptScheduler s;
  if (ast && sched_of(&s, ast, &ren)) {
    opt_hand_coded(&s);
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    CHECK_MSG(applied_has(&s, (Opt){OPT_THREAD, 0, 2}) || s.napplied > 2, "matmul heuristic: [%s]", got);
    UOp *naive = lower_linear(ast, NULL, 0, &ren), *tiled = lower_linear(ast, s.applied, s.napplied, &ren);
    CHECK_MSG(naive && tiled, "lowering: %s", tg_last_error());
    if (naive && tiled) {
      CHECK_MSG(render_estimate_flops(naive) == 2.0 * 64 * 96 * 128, "naive: %.0f", render_estimate_flops(naive));
      CHECK_MSG(render_estimate_flops(tiled) == 2.0 * 64 * 96 * 128, "[%s]: %.0f", got, render_estimate_flops(tiled));
    }
    opt_sched_free(&s);
  }
  uop_scope_end(sc);
  tg_scope_end(ts);
}

/* tinygrad's TC-first heuristic on CUDA: a half matmul gets TC then UPCAST M, UPCAST N, LOCAL N (tinygrad's list for
 * 64x64x64: TC, UPCAST 4, UPCAST 4, LOCAL 2), the kernel emulated against the CPU; fp32 gets no tensor core (tf32 needs
 * ALLOW_TF32, as tinygrad); USE_TC=0 turns the step off */
static void test_tc_heuristic(void) {
  const Renderer *cuda = renderer_cuda();
  tg_scope ts = tg_scope_begin();
  UOpScope sc = uop_scope_begin();
  UOp *half_mm = kernel_of(tg_matmul(mk(TG_FLOAT16, 64, 64, 0, 0), mk(TG_FLOAT16, 64, 64, 0, 0)));
  UOp *float_mm = kernel_of(tg_matmul(fl(64, 64), fl(64, 64)));
  OptScheduler s;
  if (half_mm && sched_of(&s, half_mm, cuda)) {
    opt_hand_coded(&s);
    char got[512];
    format_opts(s.applied, s.napplied, got, sizeof got);
    static const int want_op[] = {OPT_TC, OPT_UPCAST, OPT_UPCAST, OPT_LOCAL}, want_arg[] = {0, 4, 4, 2};
    bool same = s.napplied == 4;
    for (int i = 0; same && i < 4; i++) same = s.applied[i].op == want_op[i] && (i == 0 || s.applied[i].arg == want_arg[i]);
    CHECK_MSG(same && s.applied[0].arg == opt_tc_arg(-1, 0, 1), "half matmul on CUDA: [%s]", got);
    CHECK_MSG(s.tc_index == 0, "the m16n8k16 half->float core: %d", s.tc_index);
    UOp *lin = lower_linear(half_mm, s.applied, s.napplied, cuda);
    bool wmma = false;
    for (uint32_t k = 0; lin && k < lin->nsrc; k++) wmma |= lin->src[k]->op == TG_OP_WMMA;
    CHECK_MSG(lin && wmma, "the lowered kernel has a WMMA: %s", lin ? "no" : tg_last_error());
    opt_sched_free(&s);
  }
  if (float_mm && sched_of(&s, float_mm, cuda)) {
    opt_hand_coded(&s);
    CHECK_MSG(s.napplied == 0 || s.applied[0].op != OPT_TC, "fp32 matmul took a tensor core without ALLOW_TF32");
    opt_sched_free(&s);
  }
  test_setenv("USE_TC", "0");
  if (half_mm && sched_of(&s, half_mm, cuda)) {
    opt_hand_coded(&s);
    CHECK_MSG(s.napplied == 0 || s.applied[0].op != OPT_TC, "USE_TC=0 still applied TC");
    opt_sched_free(&s);
  }
  test_unsetenv("USE_TC");
  uop_scope_end(sc);
  tg_scope_end(ts);
}

/* The GPU heuristic's own steps (opt_heuristic.c; not tinygrad's, so test_codegen turns them off for its parity
 * check): the opts chosen for a kernel of the shape each is for, and the CUDA-lowered kernel run by the interpreter's
 * block/thread emulation equal to the naive kernel. Each step's knob turns it off (then tinygrad's choice is back). */
static void compact_opts(const OptScheduler *s, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < s->napplied && len + 1 < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%s:%d:%d", i ? "," : "", opt_op_name((OptOp)s->applied[i].op),
                            (int)s->applied[i].axis, (int)s->applied[i].arg);
}

/* the last kernel of t's schedule (a conv after the copies that lay out its input and weights) */
static UOp *last_kernel_of(tg_tensor *t) {
  UOp *lin = t ? sched_kernels(uop_sink(&t->uop, 1)) : NULL;
  CHECK_MSG(lin && lin->nsrc >= 1, "no kernel: %s", tg_last_error());
  return lin && lin->nsrc >= 1 ? lin->src[lin->nsrc - 1]->src[0] : NULL;
}

static void gpu_step_ast(const char *name, UOp *ast, const char *want, const char *knob, const char *want_off);

static void gpu_step(const char *name, tg_tensor *t, const char *want, const char *knob, const char *want_off) {
  UOpScope sc = uop_scope_begin();
  gpu_step_ast(name, kernel_of(t), want, knob, want_off);
  uop_scope_end(sc);
}

static void gpu_step_ast(const char *name, UOp *ast, const char *want, const char *knob, const char *want_off) {
  const Renderer *cuda = renderer_cuda();
  UOpScope sc = uop_scope_begin();
  OptScheduler s;
  if (!ast || !sched_of(&s, ast, cuda)) {
    uop_scope_end(sc);
    return;
  }
  OptScheduler off;
  opt_sched_copy(&off, &s);
  opt_hand_coded(&s);
  char got[512], got_off[512];
  compact_opts(&s, got, sizeof got);
  CHECK_MSG(strcmp(got, want) == 0, "%s on CUDA: picked [%s], expected [%s]", name, got, want);
  test_setenv(knob, "0");
  opt_hand_coded(&off);
  test_unsetenv(knob);
  compact_opts(&off, got_off, sizeof got_off);
  CHECK_MSG(strcmp(got_off, want_off) == 0, "%s on CUDA with %s=0: picked [%s], expected [%s]", name, knob, got_off,
            want_off);
  UOp *naive = lower_linear(ast, NULL, 0, cuda), *lin = lower_linear(ast, s.applied, s.napplied, cuda);
  CHECK_MSG(naive && lin, "%s: lowering for CUDA: %s", name, tg_last_error());
  HostBufs in, want_out, got_out;
  if (naive && lin && host_init(&in, naive, name)) {
    tg_status a = interp_all(naive, &in, &want_out), b = a == TG_OK ? interp_all(lin, &in, &got_out) : a;
    char why[256] = "";
    CHECK_MSG(a == TG_OK && b == TG_OK, "%s: the emulation fails: %s", name, tg_last_error());
    if (a == TG_OK && b == TG_OK) {
      CHECK_MSG(same_results(&want_out, &got_out, why, sizeof why), "%s [%s]: differs from the naive kernel: %s", name,
                got, why);
      host_free(&got_out);
    }
    if (a == TG_OK) host_free(&want_out);
    host_free(&in);
  }
  opt_sched_free(&s);
  opt_sched_free(&off);
  uop_scope_end(sc);
}

/* the CUDA source of a fused row (gpu_row_kernel): the row on one block's threads, one thread index for the store loop
 * and both reductions, each element of the row loaded once (u loads a thread), two barriers, and NVRTC takes it */
static int count_of(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
  return n;
}

/* u elements a thread, each loaded `loads` times (a masked row loads once per reduce identity) */
static void check_row_kernel_source(tg_tensor *t, int u, int loads) {
  const Renderer *cuda = renderer_cuda();
  UOpScope sc = uop_scope_begin();
  UOp *ast = kernel_of(t);
  OptScheduler s;
  if (!ast || !sched_of(&s, ast, cuda)) {
    uop_scope_end(sc);
    return;
  }
  opt_hand_coded(&s);
  UOp *lin = lower_linear(ast, s.applied, s.napplied, cuda);
  char *src = lin ? render_cuda(cuda, lin) : NULL;
  CHECK_MSG(src != NULL, "softmax row kernel: %s", tg_last_error());
  if (src) {
    bool ok = count_of(src, "threadIdx.") == 1 && count_of(src, "blockIdx.") == 1 && count_of(src, "__syncthreads()") == 2 &&
              count_of(src, "*(data1_") == loads && count_of(src, "*(data0_") == u && count_of(src, "__shared__") == 2;
    CHECK_MSG(ok, "softmax row kernel: not a block-cooperative row of %d elements a thread:\n%s", u, src);
    const char *why = NULL;
    const NvrtcApi *nvrtc = nvrtc_api(&why);
    char *log = NULL;
    if (nvrtc) CHECK_MSG(nvrtc_compiles(nvrtc, src, &log), "NVRTC rejects the row kernel:\n%s\n%s", log ? log : "", src);
    free(log);
    tg_free(src);
  }
  opt_sched_free(&s);
  uop_scope_end(sc);
}

static void test_gpu_heuristic_steps(void) {
  tg_scope ts = tg_scope_begin();
  int ax1 = 1;
  const int ax02[2] = {0, 2};
  /* gpu_row_reduce: a row of 512, a float4 per lane, a warp per row, 4 rows a block */
  gpu_step("row sum 2304x512", tg_sum(fl(2304, 512), &ax1, 1, false),
           "UNROLL:0:4,GROUP:0:32,LOCAL:0:4", "GPU_ROW_REDUCE", "UPCAST:0:3,UNROLL:0:4,LOCAL:0:32,GROUPTOP:0:32");
  /* ... two reduce axes, the last contiguous, a row of 144 (no float4 split of 32 lanes fits): GROUP 16 on it (and
   * without the step, gpu_late_group splits the outer one) */
  gpu_step("sum over (0, 2) of 2x2112x144", tg_sum(mk(TG_FLOAT32, 2, 2112, 144, 0), ax02, 2, false),
           "GROUP:1:16,LOCAL:0:4", "GPU_ROW_REDUCE", "UPCAST:0:3,UNROLL:1:4,LOCAL:0:32,GROUPTOP:1:4");
  /* the small-output GROUPTOP: 8 outputs get 256 threads each (tinygrad: 16) */
  gpu_step("row sum 8x4096", tg_sum(fl(8, 4096), &ax1, 1, false), "GROUPTOP:0:256", "GPU_WIDE_GROUPTOP",
           "GROUPTOP:0:16");
  /* gpu_group_first: 2304 outputs summing 2048 each are split over 16 threads before any upcast */
  gpu_step("matmul 48x2048x48", tg_matmul(fl(48, 2048), fl(2048, 48)), "LOCAL:0:16,GROUP:0:16,UPCAST:0:3",
           "GPU_GROUP_FIRST", "UPCAST:1:3,UNROLL:0:4,LOCAL:0:8,LOCAL:1:16,GROUPTOP:0:8");
  /* gpu_late_group: a 64x64x256 matmul upcast 4x4 and blocked 8x16 runs 256 threads; the reduce is split over a
   * group as well (GROUPTOP: B reads K with a stride), by 4: 8 would fill 64 KiB of shared memory */
  gpu_step("matmul 64x256x64", tg_matmul(fl(64, 256), fl(256, 64)),
           "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4,LOCAL:0:8,LOCAL:1:16,GROUPTOP:0:4", "GPU_LATE_GROUP",
           "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4,LOCAL:0:8,LOCAL:1:16");
  /* gpu_row_kernel: softmax, log_softmax, layernorm over rows of 1024 in one kernel (the row rule): the row on 128
   * threads of a block, 8 elements a thread, in the store loop and each reduce alike */
  int axm1 = -1;
#define ROW_OPTS "LOCAL:1:128,UPCAST:1:0,GROUP:0:128,UNROLL:1:0,GROUP:0:128,UNROLL:2:0"
#define ROW_OPTS_OFF "UNROLL:1:4,GROUP:1:32,LOCAL:1:4" /* gpu_row_reduce on one reduce, every thread loops the other */
  /* an elementwise kernel whose first ranked axis (the one y broadcasts over) has no local size (7): flat ids, lanes
   * on consecutive elements (GPU_EW_FLAT=0: LOCAL on the outer axis, lanes 49 elements apart) */
  gpu_step("x(16,7,7) + y(16,7,1)", tg_add(mk(TG_FLOAT32, 16, 7, 7, 0), mk(TG_FLOAT32, 16, 7, 1, 0)), "NOLOCALS:-1:0",
           "GPU_EW_FLAT", "LOCAL:0:16");
  gpu_step("softmax 8x1024", tg_softmax(fl(8, 1024), -1), ROW_OPTS, "GPU_ROW_KERNEL", ROW_OPTS_OFF);
  gpu_step("log_softmax 8x1024", tg_log_softmax(fl(8, 1024), -1), ROW_OPTS, "GPU_ROW_KERNEL", ROW_OPTS_OFF);
  gpu_step("layernorm 8x1024", tg_layernorm(fl(8, 1024), &axm1, 1, 1e-5), ROW_OPTS, "GPU_ROW_KERNEL", ROW_OPTS_OFF);
  check_row_kernel_source(tg_softmax(fl(8, 4096), -1), 32, 32); /* 128 threads, 32 lanes (two UPCASTs: 16 and 2) */
  /* rows no split divides (prime lengths): padded past the row's end, the loads there masked (emulated: a padded
   * lane that read memory or reached a reduce would change the result or fail the bounds check) */
  gpu_step("softmax 2x1031", tg_softmax(fl(2, 1031), -1), /* 115 threads x 9 lanes = 1035 */
           "PADTO:1:1035,PADTO:2:1035,PADTO:3:1035,LOCAL:1:115,UPCAST:1:0,GROUP:0:115,UNROLL:1:0,GROUP:0:115,UNROLL:2:0",
           "GPU_ROW_KERNEL", "LOCAL:0:2");
  gpu_step("layernorm 2x4099", tg_layernorm(fl(2, 4099), &axm1, 1, 1e-5), /* 129 threads x 32 lanes = 4128 */
           "PADTO:1:4128,PADTO:2:4128,PADTO:3:4128,LOCAL:1:129,UPCAST:1:16,UPCAST:1:0,GROUP:0:129,UNROLL:1:0,"
           "GROUP:0:129,UNROLL:2:0",
           "GPU_ROW_KERNEL", "LOCAL:0:2");
  /* a row of a Variable's length (decode attention's softmax over start_pos + 1 keys, start_pos <= 300): padded to the
   * bound, 101 threads x 3 lanes = 303, masked past start_pos + 1 (emulated at start_pos = 150) */
  tg_tensor *sp = tg_bind(tg_variable("start_pos", 0, 300), 150);
  tg_sint sb[4] = {TG_SI(0), TG_SI(2), TG_SI(0), TG_SV(sp, 1)};
  gpu_step("softmax 2x(start_pos+1)", tg_softmax(tg_shrink_sym(fl(2, 301), sb, 2), -1),
           "PADTO:1:303,PADTO:2:303,PADTO:3:303,LOCAL:1:101,UPCAST:1:0,GROUP:0:101,UNROLL:1:0,GROUP:0:101,UNROLL:2:0",
           "GPU_ROW_KERNEL", "NOLOCALS:-1:0");
  check_row_kernel_source(tg_softmax(tg_shrink_sym(fl(2, 301), sb, 2), -1), 3, 6);
  /* gpu_conv: a conv forward [2, 8, 8, 8 | r4, r3, r3] takes ox by 4, co by 4, kx unrolled, a block of co x ox x 4
   * rows; its weight gradient [8, 4, 3, 3 | r2, r8, r8] kx whole, ci by 2, co by 4, x unrolled by 4, a block of co x ci
   * and GROUP 4 on y (few threads) */
  int64_t nopad[2] = {0, 0};
  tg_tensor *cx = mk(TG_FLOAT32, 2, 4, 10, 10), *cw = mk(TG_FLOAT32, 8, 4, 3, 3), *cg = mk(TG_FLOAT32, 2, 8, 8, 8);
  gpu_step("conv 2x4x10x10 k3 (8 out)", tg_conv2d(cx, cw, NULL, 1, NULL, nopad, NULL),
           "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2,LOCAL:1:4", "GPU_CONV",
           "UPCAST:3:4,UNROLL:2:0,UNROLL:1:0,LOCAL:1:8,LOCAL:1:8,LOCAL:1:2,GROUPTOP:0:4");
  /* two output rows a thread (GPU_CONV_ROWS), one without */
  gpu_step("conv 2x4x10x10 k3 (8 out) rows", tg_conv2d(cx, cw, NULL, 1, NULL, nopad, NULL),
           "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2,LOCAL:1:4", "GPU_CONV_ROWS",
           "UPCAST:3:4,UPCAST:1:4,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2,LOCAL:1:4");
  /* GPU_CONV_BLOCK caps the block: at 8 threads two rows of oy (co 2 x ox 2 x 2), at 0 none */
  test_setenv("GPU_CONV_BLOCK", "8");
  gpu_step("conv 2x4x10x10 k3 (8 out) block of 8", tg_conv2d(cx, cw, NULL, 1, NULL, nopad, NULL),
           "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2,LOCAL:1:2", "GPU_CONV_BLOCK",
           "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2");
  test_unsetenv("GPU_CONV_BLOCK");
  /* GPU_CONV_BCAST=8 (opt-in): the weights here are not channel-inner (no layout copy on the CPU's schedule), so co is
   * upcast by 8 and stays off the lanes (every lane reads the same weights), the lanes take ox's rest and oy's */
  test_setenv("GPU_CONV_BCAST", "8");
  gpu_step("conv 2x4x10x10 k3 (8 out) broadcast weights", tg_conv2d(cx, cw, NULL, 1, NULL, nopad, NULL),
           "UPCAST:3:4,UPCAST:1:8,UPCAST:1:2,UNROLL:2:0,LOCAL:2:2,LOCAL:1:4", "GPU_CONV_BCAST",
           "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:2,LOCAL:2:2,LOCAL:1:4");
  test_unsetenv("GPU_CONV_BCAST");
  const tg_tensor *cwrt[1] = {cw};
  tg_tensor *dw = NULL;
  if (tg_gradient(tg_sum(tg_mul(tg_conv2d(cx, cw, NULL, 1, NULL, nopad, NULL), cg), NULL, 0, false), cwrt, 1, &dw) ==
      TG_OK)
    gpu_step("its weight gradient", dw, "UPCAST:3:3,UPCAST:1:2,UPCAST:0:4,UNROLL:2:4,LOCAL:0:2,LOCAL:0:2,GROUP:1:4",
             "GPU_CONV", "UNROLL:2:0,LOCAL:1:4,LOCAL:1:3,LOCAL:1:3,GROUPTOP:1:8");
  /* gpu_conv_tc under ALLOW_TF32=1: a forward conv [4, 32, 2, 20 | r8, r3, r3] (the last kernel, after the layout
   * copies) on tensor cores with N = co, M = ox padded 20 -> 32, K = ci (tinygrad's choices 0-1 pair ox with kx, ky;
   * choice 2, at TC_OPT 2, is the one taken), then the batch upcast by 4 (whole: the next UPCAST 0 is co's rest by 4);
   * emulated with the padding lanes masked */
  test_setenv("ALLOW_TF32", "1");
  UOpScope tsc = uop_scope_begin();
  gpu_step_ast("conv 4x8x4x22 k3 (32 out) tf32",
               last_kernel_of(
                   tg_conv2d(mk(TG_FLOAT32, 4, 8, 4, 22), mk(TG_FLOAT32, 32, 8, 3, 3), NULL, 1, NULL, nopad, NULL)),
               "TC:2:66048,UPCAST:0:4,UPCAST:0:4", "GPU_CONV_TC",
               "UPCAST:3:4,UPCAST:1:4,UPCAST:2:2,UNROLL:2:0,LOCAL:1:8,LOCAL:1:5");
  uop_scope_end(tsc);
  test_unsetenv("ALLOW_TF32");
  tg_scope_end(ts);
}

/* On the CPU, 64 consecutive bytes coalesce into one 64-byte access (cg_coalesce.c; not tinygrad's, which keeps
 * 8-bit accesses scalar): a cast of uint8 upcast by 16 x 4 loads each step's bytes as one vector; CPU_BYTE_VEC=0
 * gives 64 scalar loads again; bool stays scalar (C has no bool vectors) */
static void test_byte_vectors(void) {
  Renderer ren = test_renderer();
  tg_scope ts = tg_scope_begin();
  const tg_dtype types[3] = {TG_UINT8, TG_INT8, TG_BOOL};
  const char *const vec[3] = {"unsigned_char64", "signed_char64", "bool64"};
  for (int k = 0; k < 3; k++)
    for (int on = 1; on >= 0; on--) {
      UOpScope sc = uop_scope_begin();
      if (!on) test_setenv("CPU_BYTE_VEC", "0");
      UOp *ast = kernel_of(tg_cast(mk(types[k], 4, 256, 0, 0), TG_INT32));
      const Opt upcast[2] = {{OPT_UPCAST, 0, 16}, {OPT_UPCAST, 0, 4}}; /* 64 consecutive bytes a step */
      UOp *lin = ast ? lower_linear(ast, upcast, 2, &ren) : NULL;
      char *src = lin ? render_c(&ren, lin) : NULL;
      CHECK_MSG(src, "byte vectors %s: %s", tg_dtype_name(types[k]), tg_last_error());
      bool want = on && types[k] != TG_BOOL;
      if (src) CHECK_MSG((strstr(src, vec[k]) != NULL) == want, "%s with CPU_BYTE_VEC=%d: a 64-byte load %sexpected:\n%s",
                         tg_dtype_name(types[k]), on, want ? "" : "not ", src);
      tg_free(src);
      test_unsetenv("CPU_BYTE_VEC");
      uop_scope_end(sc);
    }
  tg_scope_end(ts);
}

void suite_opts(void) {
  test_byte_vectors();
  test_flops_estimate();
  test_heuristic();
  test_tc_heuristic();
  test_gpu_heuristic_steps();
  test_opt_errors();
  test_cpu_loop_order();
  test_random_opts();
}
