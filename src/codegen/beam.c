/* beam.c — BEAM search (tinygrad codegen/opt/search.py): expand every beam entry by every action, lower, render and
 * dedupe the candidates, compile a round in one compiler process, time them on scratch buffers, keep the fastest.
 *
 * The candidates are lowered the way the engine lowers the winner (the original kernel AST carrying the opts as
 * opts_to_apply, through cg_lower), so the timed code is the code that runs later, and the engine's final compile of
 * the winner is an in-process hit. The opt axes of an entry are read from a scheduler over cg_optimize's output with
 * no opts: the same ranges, in the same order, as the scheduler cg_lower builds. */
#include "beam.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/linearize.h"
#include "runtime/runtime.h"

#define BEAM_CACHE_FORMAT "beam7" /* bump when the opt axis numbering or the search changes: old entries stop matching
                                    * (beam2: the first round also times the heuristic, UPCAST 8/16 actions;
                                    * beam3: SWAP applies to LOOP axes on the CPU, LOOP actions, the heuristic's matmul
                                    * tiles changed; beam4: vector accumulators change what a list of opts compiles
                                    * to, so winners searched before are stale; beam5: the heuristic the search starts
                                    * from tiles matmuls 2 vectors x 8 rows and unrolls conv windows; beam6: the key
                                    * holds the heuristic's opts for the kernel, see beam_cache_key; beam7: the key
                                    * holds the device's arch, CUDA candidates are timed on the GPU) */

static BeamStats stats;
BeamStats beam_stats(void) { return stats; }

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double getenv_double(const char *name, double dflt) {
  const char *v = tg_getenv_str(name);
  if (!v || !*v) return dflt;
  char *end;
  double x = strtod(v, &end);
  return *end ? dflt : x;
}

/* tinygrad time_to_str: seconds above 10 s, milliseconds above 10 ms, else microseconds */
static void time_to_str(double t, int w, char *out, size_t cap) {
  if (t > 10) snprintf(out, cap, "%*.2fs ", w, t);
  else if (t > 10e-3) snprintf(out, cap, "%*.2fms", w, t * 1e3);
  else snprintf(out, cap, "%*.2fus", w, t * 1e6);
}

/* ================================================================================================================
 * the actions
 * ================================================================================================================ */

typedef TG_VEC(Opt) OptVec;

static void push_action(OptVec *v, OptOp op, int axis, int arg) {
  Opt o = {(int32_t)op, axis, arg};
  tg_vec_push(v, o);
}

/* tinygrad's action list, in its order (TC's tuple arg packed by opt_tc_arg; TC=0 turns its actions off). On a CPU with
 * vector registers wider than 4 floats the UPCAST amounts also take 8 and 16 (a register of float32 in one step:
 * the heuristic's 16-wide tiles are otherwise two actions away, and the beam rarely gets there). */
static void build_actions(OptVec *a, const Renderer *ren) {
  static const int upcast_amts[] = {0, 2, 3, 4, 5, 7}, unroll_amts[] = {0, 4, 7};
  static const int local_amts[] = {2, 3, 4, 8, 13, 16, 29};
  static const int grouptop_amts[] = {13, 16, 28, 29, 32, 49, 64, 256}, group_amts[] = {0, 4, 8, 16};
  static const int thread_amts[] = {2, 3, 4, 5, 8, 12, 16, 24, 32, 64};
  for (size_t i = 0; i < TG_ARRAY_LEN(upcast_amts); i++)
    for (int ax = 0; ax < 8; ax++) push_action(a, OPT_UPCAST, ax, upcast_amts[i]);
  if (!ren->has_local && ren->vector_bytes >= 32)
    for (int amt = 8; amt <= 16; amt *= 2)
      for (int ax = 0; ax < 8; ax++) push_action(a, OPT_UPCAST, ax, amt);
  for (size_t i = 0; i < TG_ARRAY_LEN(unroll_amts); i++)
    for (int ax = 0; ax < 5; ax++) push_action(a, OPT_UNROLL, ax, unroll_amts[i]);
  for (size_t i = 0; i < TG_ARRAY_LEN(local_amts); i++)
    for (int ax = 0; ax < 6; ax++) push_action(a, OPT_LOCAL, ax, local_amts[i]);
  for (size_t i = 0; i < TG_ARRAY_LEN(grouptop_amts); i++)
    for (int ax = 0; ax < 3; ax++) push_action(a, OPT_GROUPTOP, ax, grouptop_amts[i]);
  for (size_t i = 0; i < TG_ARRAY_LEN(group_amts); i++)
    for (int ax = 0; ax < 3; ax++) push_action(a, OPT_GROUP, ax, group_amts[i]);
  if (tg_getenv_int("BEAM_PADTO", 0))
    for (int ax = 0; ax < 7; ax++) push_action(a, OPT_PADTO, ax, 32);
  push_action(a, OPT_LOCAL, 0, 32);
  push_action(a, OPT_LOCAL, 6, 2);
  int use_tc = (int)tg_getenv_int("TC", 1);
  if (ren->n_tensor_cores && use_tc > 0) { /* axis 9 choices: resnet's 3 global x 3 reduce */
    push_action(a, OPT_TC, 0, opt_tc_arg(-1, 0, use_tc));
    for (int ax = 0; ax < 9; ax++) push_action(a, OPT_TC, ax, opt_tc_arg(-1, (int)tg_getenv_int("TC_OPT", 2), use_tc));
  }
  for (int a0 = 0; a0 < 5; a0++)
    for (int a1 = a0 + 1; a1 < 5; a1++) push_action(a, OPT_SWAP, a0, a1);
  if (!ren->has_local) /* not tinygrad's: blocked loop orders on the CPU (opt.h OPT_LOOP) */
    for (int amt = 2; amt <= 8; amt *= 2)
      for (int ax = 0; ax < 3; ax++) push_action(a, OPT_LOOP, ax, amt);
  for (size_t i = 0; i < TG_ARRAY_LEN(thread_amts); i++)
    for (int ax = 0; ax < 3; ax++) push_action(a, OPT_THREAD, ax, thread_amts[i]);
  if (tg_getenv_int("NOLOCALS", 0)) push_action(a, OPT_NOLOCALS, -1, 0);
}

static bool action_listed(const OptVec *a, int32_t op, int32_t axis, int32_t arg) {
  for (size_t i = 0; i < a->len; i++)
    if (a->data[i].op == op && a->data[i].axis == axis && a->data[i].arg == arg) return true;
  return false;
}

/* tinygrad real_axis: UNROLL counts the (GROUP_)REDUCE axes, GROUP/GROUPTOP the REDUCE ones, the rest every axis.
 * -1 when out of range. */
static int action_real_axis(const AxisType *types, int n, Opt o) {
  if (o.axis < 0) return -1;
  int k = 0;
  for (int i = 0; i < n; i++) {
    AxisType t = types[i];
    bool pick = o.op == OPT_UNROLL                              ? t == AXIS_GROUP_REDUCE || t == AXIS_REDUCE
                : (o.op == OPT_GROUP || o.op == OPT_GROUPTOP) ? t == AXIS_REDUCE
                                                              : true;
    if (pick && k++ == o.axis) return i;
  }
  return -1;
}

typedef struct SchedShape {
  int n;
  int64_t *sizes;
  AxisType *types;
} SchedShape;

static void sched_shape(const OptScheduler *s, SchedShape *out) {
  out->n = opt_sched_len(s);
  out->sizes = tg_malloc((size_t)(out->n + 1) * sizeof *out->sizes);
  out->types = tg_malloc((size_t)(out->n + 1) * sizeof *out->types);
  opt_sched_shape(s, out->sizes, out->types);
}

static void sched_shape_free(SchedShape *s) {
  tg_free(s->sizes);
  tg_free(s->types);
}

typedef TG_VEC(OptScheduler) SchedVec;

/* tinygrad get_kernel_actions(include_0=False): every action that applies to s and keeps the upcast product (UPCAST
 * and UNROLL sizes) within max_up and the local product (WARP, LOCAL, GROUP_REDUCE) within max_lcl. */
static void kernel_actions(const OptScheduler *s, const OptVec *actions, int64_t max_up, int64_t max_lcl,
                           SchedVec *out) {
  SchedShape sh;
  sched_shape(s, &sh);
  for (size_t i = 0; i < actions->len; i++) {
    Opt a = actions->data[i];
    /* without locals these raise KernelOptError in opt_apply: skip the work of trying */
    if (!s->ren->has_local && (a.op == OPT_LOCAL || a.op == OPT_GROUP || a.op == OPT_GROUPTOP)) continue;
    if (a.axis >= 0) {
      int ax = action_real_axis(sh.types, sh.n, a);
      if (ax < 0) continue;
      if (sh.sizes[ax] == a.arg && action_listed(actions, a.op, a.axis, 0)) continue;
    }
    OptScheduler s2;
    opt_sched_copy(&s2, s);
    if (opt_apply(&s2, a) != TG_OK) {
      opt_sched_free(&s2);
      continue;
    }
    SchedShape sh2;
    sched_shape(&s2, &sh2);
    int64_t up = 1, lcl = 1;
    for (int k = 0; k < sh2.n; k++) {
      AxisType t = sh2.types[k];
      if (t == AXIS_UPCAST || t == AXIS_UNROLL) up *= sh2.sizes[k];
      else if (t == AXIS_WARP || t == AXIS_LOCAL || t == AXIS_GROUP_REDUCE) lcl *= sh2.sizes[k];
    }
    sched_shape_free(&sh2);
    if (s2.tc_index >= 0) { /* a tensor core's own upcasts count per thread of its warp */
      const TensorCore *tc = &s2.ren->tensor_cores[s2.tc_index];
      up /= (int64_t)tc->dims[0] * tc->dims[1] * tc->dims[2] / tc->threads;
    }
    if (up > max_up || lcl > max_lcl) {
      if (tg_getenv_int("BEAM_LOG_SURPASS_MAX", 0))
        printf("too many upcast/local. up=%lld, max_up=%lld, lcl=%lld, max_lcl=%lld\n", (long long)up,
               (long long)max_up, (long long)lcl, (long long)max_lcl);
      opt_sched_free(&s2);
      continue;
    }
    tg_vec_push(out, s2);
  }
  tg_clear_error();
  sched_shape_free(&sh);
}

/* tinygrad colored_shape without colors: each axis size followed by its axis letter (heap string) */
static char *shape_str(const OptScheduler *s) {
  SchedShape sh;
  sched_shape(s, &sh);
  StrBuf out;
  sb_init(&out);
  for (int i = 0; i < sh.n; i++) {
    char sz[24];
    snprintf(sz, sizeof sz, "%lld", (long long)sh.sizes[i]);
    sb_printf(&out, "%s%4s%c", i ? " " : "", sz, uop_axis_type_letter(sh.types[i]));
  }
  sched_shape_free(&sh);
  return sb_take(&out);
}

static void opts_str(const Opt *opts, int n, StrBuf *out) {
  sb_putc(out, '(');
  for (int i = 0; i < n; i++) {
    char buf[96];
    opt_format(opts[i], buf, sizeof buf);
    sb_printf(out, "%s%s", i ? ", " : "", buf);
  }
  sb_puts(out, n == 1 ? ",)" : ")");
}

/* ================================================================================================================
 * candidates: lowering, compiling, timing
 * ================================================================================================================ */

typedef struct Candidate {
  OptScheduler s;
  char *src;                     /* what is compiled (NULL: dropped): the kernel, on a host device + its fixed-ABI entry */
  char name[TG_NAME_MAX];
  char entry[TG_NAME_MAX + 8];   /* "" on devices called by signature (CUDA) */
  RenderParamVec params;
  int core_param, ncores;        /* the CPU's core_id parameter (-1: none) and its pieces */
  int64_t global[3], local[3];   /* the launch: blocks and threads per block (CPU: {ncores,1,1}, {1,1,1}) */
  int nuops;
  double flops;
  double lower_s;
  bool compiled_ok;
  RtProgram *prog;
  double tm;
} Candidate;

static void candidate_free(Candidate *c) {
  opt_sched_free(&c->s);
  tg_free(c->src);
  tg_vec_free(&c->params);
}

/* Lower one candidate as the engine will: the original AST carrying the candidate's opts, through cg_lower, rendered
 * by the device's renderer, with the launch dims the engine computes. False when it does not lower, render, or has
 * uops_max linear uops or more (tinygrad BEAM_UOPS_MAX). */
static bool lower_candidate(UOp *ast, const Renderer *ren, bool host, Candidate *c, int64_t uops_max) {
  double t0 = now_seconds();
  UOpScope sc = uop_scope_begin();
  bool ok = false;
  UOp *lowered = cg_lower(opt_ast_with_opts(ast, c->s.applied, c->s.napplied), ren);
  UOp *linear = lowered ? cg_linearize(lowered) : NULL;
  if (linear) {
    c->nuops = (int)linear->nsrc;
    if (uops_max > 0 && c->nuops >= uops_max) {
      if (tg_getenv_int("BEAM_LOG_SURPASS_MAX", 0))
        printf("too many uops. len(uops)=%d, uops_max=%lld\n", c->nuops, (long long)uops_max);
    } else {
      char *src = ren->render(ren, linear);
      if (src && !render_launch_dims(linear, c->global, c->local)) {
        tg_free(src);
        src = NULL;
      }
      if (src) {
        snprintf(c->name, sizeof c->name, "%s", render_kernel_name(linear));
        c->entry[0] = 0;
        if (host) {
          snprintf(c->entry, sizeof c->entry, "%s_entry", c->name);
          char *entry = render_c_entry(linear, c->entry);
          StrBuf b;
          sb_init(&b);
          sb_printf(&b, "%s\n%s", src, entry);
          c->src = sb_take(&b);
          tg_free(src);
          tg_free(entry);
        } else {
          c->src = src;
        }
        render_params(linear, &c->params);
        c->core_param = -1;
        c->ncores = 1;
        for (size_t i = 0; i < c->params.len; i++)
          if (c->params.data[i].is_value && strcmp(c->params.data[i].var_name, "core_id") == 0) {
            c->core_param = (int)i;
            c->ncores = (int)(c->params.data[i].vmax + 1);
          }
        if (c->core_param >= 0) c->global[0] *= c->ncores; /* the CPU launch's pieces, as the engine's */
        c->flops = render_estimate_flops(linear);
        ok = c->params.len <= RT_MAX_PARAMS;
      }
    }
  }
  if (!ok && tg_getenv_int("BEAM_DEBUG", 0) && tg_last_error()[0]) {
    StrBuf o;
    sb_init(&o);
    opts_str(c->s.applied, c->s.napplied, &o);
    printf("BEAM failed for opts: %s\n%s\n", o.s, tg_last_error());
    sb_free(&o);
  }
  uop_scope_end(sc);
  tg_clear_error();
  c->lower_s = now_seconds() - t0;
  return ok;
}

/* Compile the candidates in one compiler process. A kernel the compiler rejects (its source shows in the compile
 * log, which quotes the sources of the kernels the compiler's messages name) is dropped and the rest compiled again
 * in one more process; a failure that names no kernel, or every kernel, is the compiler's own and is returned. */
static tg_status compile_candidates(RtDevice *dev, Candidate **cands, size_t n) {
  TG_VEC(Candidate *) todo = {0};
  for (size_t i = 0; i < n; i++) tg_vec_push(&todo, cands[i]);
  tg_status st = TG_OK;
  while (todo.len) {
    RtKernelSource *srcs = tg_calloc(todo.len, sizeof *srcs);
    RtProgram **progs = tg_calloc(todo.len, sizeof *progs);
    for (size_t i = 0; i < todo.len; i++) {
      srcs[i].name = todo.data[i]->name;
      srcs[i].src = todo.data[i]->src;
      srcs[i].entry = todo.data[i]->entry[0] ? todo.data[i]->entry : NULL;
      srcs[i].core_param = todo.data[i]->core_param >= 0 ? todo.data[i]->params.data[todo.data[i]->core_param].name : NULL;
    }
    st = rt_device_compile_many(dev, srcs, todo.len, progs);
    stats.candidates_compiled += (long)todo.len;
    if (st == TG_OK)
      for (size_t i = 0; i < todo.len; i++) todo.data[i]->prog = progs[i], todo.data[i]->compiled_ok = true;
    tg_free(srcs);
    tg_free(progs);
    if (st == TG_OK || st != TG_ERR_RUNTIME) break;
    const char *log = rt_compile_log();
    size_t kept = 0, rejected = 0;
    for (size_t i = 0; i < todo.len; i++) {
      if (log && strstr(log, todo.data[i]->src)) rejected++;
      else todo.data[kept++] = todo.data[i];
    }
    if (rejected == 0 || kept == 0) break; /* not one kernel's fault: the compiler's error stands */
    if (tg_debug_level() >= 2 || tg_getenv_int("BEAM_DEBUG", 0))
      printf("BEAM: the compiler rejected %zu candidate(s); compiling the other %zu again\n", rejected, kept);
    todo.len = kept;
    st = TG_OK;
  }
  tg_vec_free(&todo);
  return st;
}

/* scratch buffers, one per buffer slot, filled with small finite values and shared by every candidate */
typedef struct Scratch {
  TG_VEC(int64_t) slots;
  TG_VEC(RtBuffer *) bufs;
} Scratch;

static void write_small_value(unsigned char *p, const DType *d, int64_t i) {
  double f = 0.5 + 0.125 * (double)(i % 5);
  int64_t k = 1 + i % 3;
  switch (d->id) {
  case TG_FLOAT32: { float x = (float)f; memcpy(p, &x, sizeof x); return; }
  case TG_FLOAT64: memcpy(p, &f, sizeof f); return;
  case TG_FLOAT16: { uint16_t h = tg_float_to_half_bits((float)f); memcpy(p, &h, sizeof h); return; }
  case TG_BFLOAT16: { uint16_t h = tg_float_to_bf16_bits((float)f); memcpy(p, &h, sizeof h); return; }
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ:
    *p = tg_float_to_fp8_bits(f, d->id);
    return;
  case TG_BOOL: *p = (unsigned char)(i & 1); return;
  default: break;
  }
  switch (dt_itemsize(d)) { /* integers: small, positive, never zero (a divisor must not be) */
  case 1: { int8_t x = (int8_t)k; memcpy(p, &x, 1); return; }
  case 2: { int16_t x = (int16_t)k; memcpy(p, &x, 2); return; }
  case 4: { int32_t x = (int32_t)k; memcpy(p, &x, 4); return; }
  case 8: memcpy(p, &k, 8); return;
  default: memset(p, 0, (size_t)dt_itemsize(d)); return;
  }
}

static tg_status scratch_get(Scratch *sc, RtDevice *dev, const char *kernel, const RenderParam *p, uint64_t *out) {
  if (p->numel < 0)
    return tg_set_error(TG_ERR_UNSUPPORTED,
                        "tinygrad.c: BEAM: kernel %s: buffer %s has no known size: not supported yet", kernel, p->name);
  const DType *d = p->dtype->scalar;
  size_t nbytes = (size_t)p->numel * (size_t)dt_itemsize(d);
  size_t idx = sc->slots.len;
  for (size_t i = 0; i < sc->slots.len; i++)
    if (sc->slots.data[i] == p->slot) idx = i;
  if (idx < sc->slots.len && rt_buffer_nbytes(sc->bufs.data[idx]) >= nbytes) {
    *out = rt_buffer_addr(sc->bufs.data[idx]);
    return TG_OK;
  }
  RtBuffer *b;
  tg_status st = rt_buffer_new_on(dev, nbytes, &b);
  if (st != TG_OK) return st;
  /* filled on the host and copied in: the same bytes on every device */
  size_t item = (size_t)dt_itemsize(d);
  unsigned char *mem = tg_malloc(nbytes ? nbytes : 1);
  for (int64_t i = 0; i < p->numel; i++) write_small_value(mem + (size_t)i * item, d, i);
  st = rt_copyin(b, 0, mem, nbytes);
  tg_free(mem);
  if (st != TG_OK) {
    rt_buffer_free(b);
    return st;
  }
  if (idx < sc->slots.len) {
    rt_buffer_free(sc->bufs.data[idx]);
    sc->bufs.data[idx] = b;
  } else {
    tg_vec_push(&sc->slots, p->slot);
    tg_vec_push(&sc->bufs, b);
  }
  *out = rt_buffer_addr(b);
  return TG_OK;
}

static void scratch_free(Scratch *sc) {
  for (size_t i = 0; i < sc->bufs.len; i++) rt_buffer_free(sc->bufs.data[i]);
  tg_vec_free(&sc->slots);
  tg_vec_free(&sc->bufs);
}

/* tinygrad get_test_global_size: on a device with blocks, a grid of more than max_blocks blocks is halved (the last
 * dimension above 16 first) until it fits, and the time is scaled back by the blocks left out (a 4096 matmul's naive
 * candidates then run in milliseconds, not seconds). Returns the factor. */
static double test_global_size(const int64_t global[3], int64_t max_blocks, int64_t out[3]) {
  for (int k = 0; k < 3; k++) out[k] = global[k];
  double full = (double)global[0] * (double)global[1] * (double)global[2];
  while (out[0] * out[1] * out[2] > max_blocks) {
    int k = 2;
    while (k >= 0 && out[k] <= 16) k--;
    if (k < 0) break;
    out[k] /= 2;
  }
  return full / ((double)out[0] * (double)out[1] * (double)out[2]);
}

/* tinygrad _time_program: up to 3 launches on the kernel's device (CUDA: event timing around each launch), stopping
 * early once the best is slower than early_stop. A launch that fails leaves c->tm INFINITY (the candidate is
 * dropped). Errors only for buffers that cannot be made. */
static tg_status time_candidate(Candidate *c, Scratch *sc, RtDevice *dev, bool test_size, double early_stop) {
  uint64_t bufs[RT_MAX_PARAMS];
  long long vals[RT_MAX_PARAMS];
  for (size_t i = 0; i < c->params.len; i++) {
    const RenderParam *p = &c->params.data[i];
    bufs[i] = 0;
    vals[i] = 0;
    if (p->is_value) vals[i] = (long long)p->vmax;
    else {
      tg_status st = scratch_get(sc, dev, c->name, p, &bufs[i]);
      if (st != TG_OK) return st;
    }
  }
  int64_t grid[3];
  double factor = 1;
  if (test_size) factor = test_global_size(c->global, tg_getenv_int("BEAM_MAX_GLOBAL_SIZE", 65536), grid);
  else memcpy(grid, c->global, sizeof grid);
  stats.candidates_timed++;
  c->tm = INFINITY;
  for (int run = 0; run < 3; run++) {
    double sec = 0;
    if (rt_device_launch(dev, c->prog, bufs, vals, (int)c->params.len, grid, c->local, &sec) != TG_OK) {
      if (tg_getenv_int("BEAM_DEBUG", 0)) printf("BEAM: launch of %s failed: %s\n", c->name, tg_last_error());
      tg_clear_error();
      c->tm = INFINITY;
      return TG_OK;
    }
    sec *= factor;
    if (sec < c->tm) c->tm = sec;
    if (early_stop < c->tm) break;
  }
  return TG_OK;
}

/* ---- optimize_local_size ---- */

size_t beam_local_size_candidates(const int64_t global[3], int64_t (*out)[3], size_t cap) {
  static const int64_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, RENDER_MAX_WORKGROUP};
  int64_t dims[3][TG_ARRAY_LEN(sizes) + 1];
  size_t nd[3];
  for (int k = 0; k < 3; k++) {
    nd[k] = 0;
    for (size_t s = 0; s < TG_ARRAY_LEN(sizes); s++)
      if (sizes[s] <= global[k] && global[k] % sizes[s] == 0) dims[k][nd[k]++] = sizes[s];
    bool listed = false;
    for (size_t s = 0; s < nd[k]; s++) listed |= dims[k][s] == global[k];
    if (!listed && global[k] <= RENDER_MAX_WORKGROUP) dims[k][nd[k]++] = global[k];
  }
  size_t n = 0;
  for (size_t a = 0; a < nd[0]; a++)
    for (size_t b = 0; b < nd[1]; b++)
      for (size_t c = 0; c < nd[2]; c++) {
        if (dims[0][a] * dims[1][b] * dims[2][c] > RENDER_MAX_WORKGROUP) continue;
        if (n < cap) out[n][0] = dims[0][a], out[n][1] = dims[1][b], out[n][2] = dims[2][c];
        n++;
      }
  return n < cap ? n : cap;
}

tg_status beam_optimize_local_size(RtDevice *dev, const RtProgram *prog, const char *name, const RenderParam *params,
                                   size_t nparams, const int64_t global[3], int64_t local[3]) {
  enum { MAX_CANDIDATES = 1024 };
  if (nparams > RT_MAX_PARAMS)
    return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: kernel %s takes %zu parameters (at most %d)", name, nparams,
                        RT_MAX_PARAMS);
  int64_t (*cands)[3] = tg_calloc(MAX_CANDIDATES, sizeof *cands);
  size_t n = beam_local_size_candidates(global, cands, MAX_CANDIDATES);
  Scratch sc = {0};
  uint64_t bufs[RT_MAX_PARAMS + 1];
  long long vals[RT_MAX_PARAMS + 1];
  tg_status st = TG_OK;
  for (size_t i = 0; i < nparams && st == TG_OK; i++) {
    bufs[i] = 0;
    vals[i] = params[i].is_value ? (long long)params[i].vmax : 0;
    if (!params[i].is_value) st = scratch_get(&sc, dev, name, &params[i], &bufs[i]);
  }
  double best = INFINITY;
  size_t best_i = 0;
  for (int pass = 0; pass < 2 && st == TG_OK; pass++) /* each size twice, as tinygrad */
    for (size_t c = 0; c < n; c++) {
      int64_t grid[3] = {global[0] / cands[c][0], global[1] / cands[c][1], global[2] / cands[c][2]};
      double sec = 0;
      if (rt_device_launch(dev, prog, bufs, vals, (int)nparams, grid, cands[c], &sec) != TG_OK) {
        tg_clear_error();
        continue;
      }
      if (sec < best) best = sec, best_i = c;
    }
  if (st == TG_OK && best == INFINITY)
    st = tg_set_error(TG_ERR_RUNTIME, "optimize_local_size: every launch of %s failed", name);
  if (st == TG_OK) {
    memcpy(local, cands[best_i], 3 * sizeof *local);
    if (tg_debug_level() >= 3)
      printf("optimize_local_size %s: {%lld,%lld,%lld} of %zu shapes, %.2f us\n", name, (long long)local[0],
             (long long)local[1], (long long)local[2], n, best * 1e6);
  }
  scratch_free(&sc);
  tg_free(cands);
  return st;
}

/* sources already timed in this search (tinygrad seen_libs) */
typedef struct SeenSet {
  TG_VEC(uint64_t) hashes;
  TG_VEC(char *) srcs;
} SeenSet;

static bool seen_has(const SeenSet *s, const char *src, uint64_t h) {
  for (size_t i = 0; i < s->hashes.len; i++)
    if (s->hashes.data[i] == h && strcmp(s->srcs.data[i], src) == 0) return true;
  return false;
}

static void seen_add(SeenSet *s, const char *src, uint64_t h) {
  tg_vec_push(&s->hashes, h);
  tg_vec_push(&s->srcs, tg_strdup(src));
}

static void seen_free(SeenSet *s) {
  for (size_t i = 0; i < s->srcs.len; i++) tg_free(s->srcs.data[i]);
  tg_vec_free(&s->srcs);
  tg_vec_free(&s->hashes);
}

static int by_time(const void *pa, const void *pb) {
  const Candidate *a = *(Candidate *const *)pa, *b = *(Candidate *const *)pb;
  if (a->tm != b->tm) return a->tm < b->tm ? -1 : 1;
  return a < b ? -1 : a > b; /* stable: the candidates' order */
}

/* ================================================================================================================
 * the cache entry: "UPCAST,0,4;UNROLL,0,4" (empty: no opts)
 * ================================================================================================================ */

static char *opts_serialize(const Opt *opts, int n) {
  StrBuf b;
  sb_init(&b);
  for (int i = 0; i < n; i++)
    sb_printf(&b, "%s%s,%d,%d", i ? ";" : "", opt_op_name((OptOp)opts[i].op), (int)opts[i].axis, (int)opts[i].arg);
  return sb_take(&b);
}

/* The device's architecture ("sm_90a"; "" for the CPU or a device that cannot be opened): a winner timed on one GPU
 * generation is not the winner on another. */
static const char *renderer_arch(const Renderer *ren) {
  RtDevice *d;
  if (rt_device_open(ren->device ? ren->device : "CPU", &d) != TG_OK) {
    tg_clear_error();
    return "";
  }
  return rt_device_arch(d) ? rt_device_arch(d) : "";
}

/* The key holds the heuristic's opts for the kernel ("hc="): every search times the heuristic's kernel as a rival
 * and keeps it unless something beats it, so a winner found against an older heuristic can be slower than what the
 * kernel now gets without BEAM (seen: matmul_2048's panel copy kept a 1.7-2.3 ms winner after the heuristic's copy
 * went to 1.3-1.5 ms). A changed heuristic then searches that kernel again; other kernels keep their entries. */
static char *key_with_heuristic(UOp *ast, const Renderer *ren, int amt, const OptScheduler *heuristic) {
  char hex[33];
  uop_key_hex(uop_key(ast), hex);
  char *hc = heuristic ? opts_serialize(heuristic->applied, heuristic->napplied) : NULL;
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s|ast=%s|amt=%d|hc=%s|allow_test_size=1|device=%s|arch=%s|suffix=%s", BEAM_CACHE_FORMAT, hex, amt,
            hc ? hc : "?", ren->device ? ren->device : "", renderer_arch(ren), ren->suffix ? ren->suffix : "");
  tg_free(hc);
  return sb_take(&b);
}

/* the kernel with no opts (cg_optimize'd, as the search and the heuristic start from it); NULL on failure */
static UOp *base_ast_of(UOp *ast, const Renderer *ren) { return cg_optimize(opt_ast_with_opts(ast, NULL, 0), ren); }

char *beam_cache_key(UOp *ast, const Renderer *ren, int amt) {
  UOpScope sc = uop_scope_begin();
  UOp *base_ast = base_ast_of(ast, ren);
  OptScheduler h;
  if (base_ast) {
    opt_sched_init(&h, base_ast, ren);
    opt_hand_coded(&h);
  }
  tg_clear_error();
  char *key = key_with_heuristic(ast, ren, amt, base_ast ? &h : NULL);
  if (base_ast) opt_sched_free(&h);
  uop_scope_end(sc);
  return key;
}

static bool parse_int32(const char *s, const char *end, int32_t *out) {
  if (s == end || end - s > 11) return false;
  char buf[16];
  memcpy(buf, s, (size_t)(end - s));
  buf[end - s] = 0;
  char *e;
  long v = strtol(buf, &e, 10);
  if (*e || v < -2147483647L || v > 2147483647L) return false;
  *out = (int32_t)v;
  return true;
}

/* Strict: anything but a well-formed list of at most OPT_LIST_MAX known opts is rejected. */
static bool opts_parse(const char *s, Opt *opts, int *n) {
  *n = 0;
  if (!*s) return true;
  for (const char *p = s;;) {
    const char *end = strchr(p, ';');
    if (!end) end = p + strlen(p);
    const char *c1 = memchr(p, ',', (size_t)(end - p));
    const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(end - c1 - 1)) : NULL;
    if (!c1 || !c2 || *n >= OPT_LIST_MAX) return false;
    Opt o = {-1, 0, 0};
    for (int op = 0; op < OPT_OP_COUNT; op++) {
      const char *name = opt_op_name((OptOp)op);
      if (strlen(name) == (size_t)(c1 - p) && memcmp(name, p, (size_t)(c1 - p)) == 0) o.op = op;
    }
    if (o.op < 0 || !parse_int32(c1 + 1, c2, &o.axis) || !parse_int32(c2 + 1, end, &o.arg)) return false;
    opts[(*n)++] = o;
    if (!*end) return true;
    p = end + 1;
  }
}

/* ================================================================================================================
 * the search
 * ================================================================================================================ */

static void print_round(double t, double best, size_t ncands, size_t ntimed, const OptScheduler *s) {
  char tm[48];
  time_to_str(best, 12, tm, sizeof tm);
  char *shape = shape_str(s);
  printf("\r%7.2fs: %s from %3zu -> %3zu actions\033[K %s\n", t, tm, ncands, ntimed, shape);
  tg_free(shape);
  fflush(stdout);
}

/* The search's winner against the heuristic's kernel, timed again side by side (BEAM_VERIFY rounds, alternating,
 * the best run of each counts): each candidate of the search is timed by its best of 3 runs, so on a noisy machine
 * the fastest of a hundred candidates is often one that was lucky once. Measured (2 cores, shared): BEAM=2 ended at
 * 213 GFLOPS on a 1024 matmul, 242 on 512 and 231 on 16x256, where the heuristic's kernels run at 283, 267 and 274.
 * The winner stays only when it is faster again; else the heuristic's opts are the result. */
static tg_status verify_winner(UOp *ast, const OptScheduler *heuristic, OptScheduler *winner, Scratch *scratch,
                               RtDevice *dev, int64_t beam_debug) {
  int rounds = (int)tg_getenv_int("BEAM_VERIFY", 5);
  Candidate c[2];
  memset(c, 0, sizeof c);
  opt_sched_copy(&c[0].s, winner);
  opt_sched_copy(&c[1].s, heuristic);
  tg_status st = TG_OK;
  bool same = heuristic->napplied == winner->napplied &&
              memcmp(heuristic->applied, winner->applied, (size_t)winner->napplied * sizeof(Opt)) == 0;
  if (rounds > 0 && !same && heuristic->napplied && lower_candidate(ast, heuristic->ren, rt_device_is_host(dev), &c[0], 0) &&
      lower_candidate(ast, heuristic->ren, rt_device_is_host(dev), &c[1], 0)) {
    Candidate *both[2] = {&c[0], &c[1]};
    st = compile_candidates(dev, both, 2);
    double best[2] = {INFINITY, INFINITY};
    for (int r = 0; r < rounds && st == TG_OK && c[0].compiled_ok && c[1].compiled_ok; r++)
      for (int k = 0; k < 2 && st == TG_OK; k++) {
        st = time_candidate(&c[k], scratch, dev, heuristic->ren->has_local, INFINITY);
        if (c[k].tm < best[k]) best[k] = c[k].tm;
      }
    if (beam_debug) printf("BEAM_VERIFY: winner %.3f ms, heuristic %.3f ms\n", best[0] * 1e3, best[1] * 1e3);
    if (st == TG_OK && best[1] <= best[0]) {
      opt_sched_free(winner);
      opt_sched_copy(winner, &c[1].s);
    }
  }
  candidate_free(&c[0]);
  candidate_free(&c[1]);
  return st;
}

static tg_status search(UOp *ast, RtDevice *dev, const OptScheduler *base, const OptScheduler *heuristic, int amt,
                        OptScheduler *best_out) {
  const Renderer *ren = base->ren;
  OptVec actions = {0};
  build_actions(&actions, ren);
  int64_t max_up = tg_getenv_int("BEAM_UPCAST_MAX", 256), max_lcl = tg_getenv_int("BEAM_LOCAL_MAX", 1024);
  int64_t uops_max = tg_getenv_int("BEAM_UOPS_MAX", 3000), beam_debug = tg_getenv_int("BEAM_DEBUG", 0);
  double min_progress = getenv_double("BEAM_MIN_PROGRESS", 0.01) / 1e6;
  bool host = rt_device_is_host(dev);
  bool live_lines = tg_debug_level() >= 2 && isatty(STDOUT_FILENO);

  /* the beam: schedulers and their times, best first */
  TG_VEC(OptScheduler) beam = {0};
  TG_VEC(double) beam_tm = {0};
  OptScheduler first;
  opt_sched_copy(&first, base);
  tg_vec_push(&beam, first);
  tg_vec_push(&beam_tm, INFINITY);
  SeenSet seen = {0};
  Scratch scratch = {0};
  tg_status st = TG_OK;
  double t_start = now_seconds();
  if (tg_debug_level() >= 2) {
    char *shape = shape_str(base);
    printf("   0.00s:                from   1 ->   1 actions %s\n", shape);
    tg_free(shape);
  }

  for (bool exiting = false, first_round = true; !exiting && st == TG_OK; first_round = false) {
    SchedVec scheds = {0};
    for (size_t i = 0; i < beam.len; i++) kernel_actions(&beam.data[i], &actions, max_up, max_lcl, &scheds);
    /* the first round also times the hand-coded heuristic's kernel, so the search starts no worse than what runs
     * without BEAM (tinygrad starts from the naive kernel only; measured here, BEAM=2 then ended at 57 GFLOPS on a
     * 256 matmul against the heuristic's 195) */
    size_t heuristic_at = SIZE_MAX;
    if (first_round && heuristic->napplied) {
      OptScheduler hc;
      opt_sched_copy(&hc, heuristic);
      heuristic_at = scheds.len;
      tg_vec_push(&scheds, hc);
    }
    size_t ncands = scheds.len;
    Candidate *cands = tg_calloc(ncands ? ncands : 1, sizeof *cands);
    TG_VEC(Candidate *) live = {0};
    double least_flops = INFINITY;
    SeenSet round_seen = {0};
    for (size_t i = 0; i < ncands; i++) {
      Candidate *c = &cands[i];
      c->s = scheds.data[i];
      c->tm = INFINITY;
      /* BEAM_UOPS_MAX does not apply to the heuristic's kernel: it is what runs without BEAM (its 4x32 matmul tile,
       * unrolled by 8, has more than 3000 uops) */
      if (!lower_candidate(ast, ren, host, c, i == heuristic_at ? 0 : uops_max)) continue;
      uint64_t h = tg_hash_bytes(c->src, strlen(c->src), 0xbea5);
      if (seen_has(&seen, c->src, h) || seen_has(&round_seen, c->src, h)) continue;
      seen_add(&round_seen, c->src, h);
      if (c->flops < least_flops) least_flops = c->flops;
      tg_vec_push(&live, c);
    }
    seen_free(&round_seen);
    tg_vec_free(&scheds);
    /* tinygrad: drop kernels that compute 1000x more than the least (PADTO gone wrong) */
    size_t kept = 0;
    for (size_t i = 0; i < live.len; i++) {
      if (least_flops * 1000 < live.data[i]->flops) {
        if (tg_getenv_int("BEAM_LOG_SURPASS_MAX", 0))
          printf("too much compute. %.0f when least is %.0f\n", live.data[i]->flops, least_flops);
        continue;
      }
      live.data[kept++] = live.data[i];
    }
    live.len = kept;
    /* the heuristic's kernel is timed first: in the first round there is no beam time yet to stop slow candidates
     * early, and each naive-ish candidate of a 2048 matmul then ran 3 times at seconds a run; with the heuristic's
     * time as the reference a candidate more than 3x slower than the best so far runs once */
    for (size_t i = 1; i < live.len; i++)
      if (heuristic_at != SIZE_MAX && live.data[i] == &cands[heuristic_at]) {
        Candidate *h = live.data[i];
        memmove(&live.data[1], &live.data[0], i * sizeof *live.data);
        live.data[0] = h;
      }
    if (live.len) st = compile_candidates(dev, live.data, live.len);
    TG_VEC(Candidate *) timed = {0};
    double round_best = INFINITY;
    for (size_t i = 0; i < live.len && st == TG_OK; i++) {
      Candidate *c = live.data[i];
      if (!c->compiled_ok) continue;
      seen_add(&seen, c->src, tg_hash_bytes(c->src, strlen(c->src), 0xbea5));
      st = time_candidate(c, &scratch, dev, ren->has_local, TG_MIN(beam_tm.data[0], round_best) * 3);
      if (st != TG_OK) break;
      if (isinf(c->tm)) continue; /* the launch failed (tinygrad: a RuntimeError skips the candidate) */
      if (c->tm < round_best) round_best = c->tm;
      tg_vec_push(&timed, c);
      double t = now_seconds() - t_start;
      char tm[48];
      time_to_str(c->tm, 12, tm, sizeof tm);
      if (beam_debug > 1 || live_lines) {
        char *shape = shape_str(&c->s);
        if (beam_debug > 1) {
          char lt[48];
          time_to_str(c->lower_s, 12, lt, sizeof lt);
          printf("%7.2fs: %5zu %5d uops %s compile/%s run      %4zu/%4zu         %s\n", t, (size_t)(c - cands),
                 c->nuops, lt, tm, timed.len, ncands, shape);
        } else {
          printf("\r%7.2fs: %s      %4zu/%4zu         %s\033[K", t, tm, timed.len, ncands, shape);
        }
        fflush(stdout);
        tg_free(shape);
      }
    }
    if (st == TG_OK) {
      if (timed.len) qsort(timed.data, timed.len, sizeof *timed.data, by_time);
      double best = timed.len ? timed.data[0]->tm : INFINITY;
      exiting = timed.len == 0 || best < min_progress || beam_tm.data[0] - best < min_progress;
      size_t take = !exiting ? TG_MIN((size_t)amt, timed.len) : (timed.len && best < beam_tm.data[0]) ? 1 : 0;
      if (take) {
        for (size_t i = 0; i < beam.len; i++) opt_sched_free(&beam.data[i]);
        beam.len = beam_tm.len = 0;
        for (size_t i = 0; i < take; i++) {
          OptScheduler keep;
          opt_sched_copy(&keep, &timed.data[i]->s);
          tg_vec_push(&beam, keep);
          tg_vec_push(&beam_tm, timed.data[i]->tm);
        }
      }
      if (tg_debug_level() >= 2)
        print_round(now_seconds() - t_start, beam_tm.data[0], ncands, timed.len, &beam.data[0]);
    }
    tg_vec_free(&timed);
    tg_vec_free(&live);
    for (size_t i = 0; i < ncands; i++) candidate_free(&cands[i]);
    tg_free(cands);
  }
  if (st == TG_OK) st = verify_winner(ast, heuristic, &beam.data[0], &scratch, dev, beam_debug);
  if (st == TG_OK) {
    opt_sched_copy(best_out, &beam.data[0]);
    if (beam_debug) {
      char tm[48];
      time_to_str(beam_tm.data[0], 0, tm, sizeof tm);
      StrBuf o;
      sb_init(&o);
      opts_str(beam.data[0].applied, beam.data[0].napplied, &o);
      printf("BEAM_SEARCH: final tm=%s, applied_opts=%s\n", tm, o.s);
      sb_free(&o);
    }
  }
  for (size_t i = 0; i < beam.len; i++) opt_sched_free(&beam.data[i]);
  tg_vec_free(&beam);
  tg_vec_free(&beam_tm);
  seen_free(&seen);
  scratch_free(&scratch);
  tg_vec_free(&actions);
  return st;
}

/* The cached opts, when they parse and apply to the kernel (false: absent, corrupt or stale). */
static bool cached_opts(const char *key, const OptScheduler *base, Opt *out, int *n) {
  char *val = rt_cache_get(BEAM_CACHE_TABLE, key);
  if (!val) return false;
  bool ok = opts_parse(val, out, n);
  if (ok) {
    OptScheduler s;
    opt_sched_copy(&s, base);
    for (int i = 0; i < *n && ok; i++) ok = opt_apply(&s, out[i]) == TG_OK;
    opt_sched_free(&s);
  }
  if (!ok && tg_debug_level() >= 1)
    fprintf(stderr, "tinygrad.c: BEAM cache entry ignored (%s): \"%.200s\"\n", *n ? "stale" : "corrupt", val);
  tg_clear_error();
  tg_free(val);
  return ok;
}

tg_status beam_search(UOp *ast, const Renderer *ren, int amt, Opt *out_opts, int *n_out) {
  *n_out = 0;
  if (!ast || !ren || ast->op != TG_OP_SINK)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "beam_search: a kernel SINK and a renderer are needed");
  if (amt < 1) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "beam_search: beam width %d (at least 1)", amt);
  /* candidates are compiled and timed through the device interface: the CPU compiles C in one compiler process and
   * times the wall time of a launch; CUDA compiles with NVRTC on several threads and times with events */
  RtDevice *dev;
  tg_status dst = rt_device_open(ren->device ? ren->device : "CPU", &dev);
  if (dst != TG_OK) return dst;
  UOpScope sc = uop_scope_begin();
  UOp *base_ast = base_ast_of(ast, ren);
  if (!base_ast) {
    tg_status st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
    uop_scope_end(sc);
    return st;
  }
  OptScheduler base, heuristic; /* the heuristic's kernel: part of the key, a first-round candidate, the final rival */
  opt_sched_init(&base, base_ast, ren);
  opt_sched_copy(&heuristic, &base);
  opt_hand_coded(&heuristic);
  char *key = key_with_heuristic(ast, ren, amt, &heuristic);
  bool use_cache = tg_getenv_int("CACHELEVEL", 2) >= 1;
  tg_status st = TG_OK;
  if (use_cache && !tg_getenv_int("IGNORE_BEAM_CACHE", 0) && cached_opts(key, &base, out_opts, n_out)) {
    stats.cache_hits++;
  } else {
    stats.searches++;
    OptScheduler best;
    st = search(ast, dev, &base, &heuristic, amt, &best);
    if (st == TG_OK) {
      *n_out = best.napplied;
      memcpy(out_opts, best.applied, (size_t)best.napplied * sizeof(Opt));
      opt_sched_free(&best);
      if (use_cache) {
        char *val = opts_serialize(out_opts, *n_out);
        rt_cache_put(BEAM_CACHE_TABLE, key, val);
        tg_free(val);
      }
    } else {
      *n_out = 0;
    }
  }
  tg_free(key);
  opt_sched_free(&heuristic);
  opt_sched_free(&base);
  uop_scope_end(sc);
  return st;
}

tg_status beam_time_opts(UOp *ast, const Renderer *ren, const Opt *const *lists, const int *ns, size_t nlists,
                         double *out_s) {
  for (size_t i = 0; i < nlists; i++) out_s[i] = INFINITY;
  if (!ast || !ren || ast->op != TG_OP_SINK)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "beam_time_opts: a kernel SINK and a renderer are needed");
  RtDevice *dev;
  tg_status st = rt_device_open(ren->device ? ren->device : "CPU", &dev);
  if (st != TG_OK) return st;
  UOpScope sc = uop_scope_begin();
  UOp *base_ast = base_ast_of(ast, ren);
  if (!base_ast) {
    st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
    uop_scope_end(sc);
    return st;
  }
  OptScheduler base;
  opt_sched_init(&base, base_ast, ren);
  bool host = rt_device_is_host(dev);
  Candidate *cands = tg_calloc(nlists ? nlists : 1, sizeof *cands);
  Candidate **live = tg_calloc(nlists ? nlists : 1, sizeof *live);
  size_t nlive = 0;
  for (size_t i = 0; i < nlists; i++) {
    opt_sched_copy(&cands[i].s, &base);
    cands[i].tm = INFINITY;
    bool ok = true;
    for (int k = 0; k < ns[i] && ok; k++) ok = opt_apply(&cands[i].s, lists[i][k]) == TG_OK;
    if (ok && lower_candidate(ast, ren, host, &cands[i], 0)) live[nlive++] = &cands[i];
    tg_clear_error();
  }
  if (nlive) st = compile_candidates(dev, live, nlive);
  Scratch scratch = {0};
  for (int round = 0; round < 3 && st == TG_OK; round++)
    for (size_t i = 0; i < nlive && st == TG_OK; i++) {
      if (!live[i]->compiled_ok) continue;
      st = time_candidate(live[i], &scratch, dev, ren->has_local, INFINITY);
      size_t at = (size_t)(live[i] - cands);
      if (st == TG_OK && live[i]->tm < out_s[at]) out_s[at] = live[i]->tm;
    }
  scratch_free(&scratch);
  for (size_t i = 0; i < nlists; i++) candidate_free(&cands[i]);
  tg_free(cands);
  tg_free(live);
  opt_sched_free(&base);
  uop_scope_end(sc);
  return st;
}

UOp *beam_kernel_ast(UOp *ast, const Renderer *ren) {
  int64_t amt = tg_getenv_int("BEAM", 0);
  if (amt < 1 || (ast->arg.kind == ARG_KERNEL && ast->arg.kernel->has_opts_to_apply)) return ast;
  Opt opts[OPT_LIST_MAX];
  int n = 0;
  if (beam_search(ast, ren, (int)TG_MIN(amt, 1 << 20), opts, &n) != TG_OK) return NULL;
  return opt_ast_with_opts(ast, opts, n);
}

void beam_print_applied_opts(const char *name, UOp *lowered) {
  if (tg_debug_level() < 3 || !lowered || lowered->arg.kind != ARG_KERNEL || lowered->arg.kernel->applied_opts == 0)
    return;
  const KernelInfo *ki = lowered->arg.kernel;
  StrBuf o;
  sb_init(&o);
  opts_str(ki->applied, TG_MIN(ki->applied_opts, KERNEL_OPTS_MAX), &o);
  printf("%-25s opts: %s\n", name, o.s);
  sb_free(&o);
}
