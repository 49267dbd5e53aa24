/* engine.c — realize (tinygrad engine/realize.py): schedule the tensor graph, lower + linearize + render every new
 * kernel with its device's renderer, compile them per device in one batch (the CPU: one compiler process; CUDA:
 * NVRTC on threads), allocate the buffers on their devices and run the CALLs in order through the device
 * interface: kernels as launches (grid/block from the kernel's SPECIAL indices; the CPU's core_id pieces as
 * grid[0]), COPY calls as device copies (host to device, device to host, device to device). A plain matmul on an
 * sm_90a device takes the GEMM template route instead of opts/lower/render (codegen gemm_route.c, GEMM_TEMPLATE=0
 * off): its kernel's source is the template's, the rest of the path is the same.
 *
 * Device memory: every global BUFFER node owns at most one runtime buffer, kept in a side table keyed by the node and
 * released by uop.c's buffer free hook when the node dies. Compiled kernels are cached by their (interned) kernel
 * AST and the knobs that change its program: the scheduler renumbers PARAMs and RANGEs, so the same kernel on other
 * buffers is the same node. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codegen/beam.h"
#include "codegen/codegen.h"
#include "codegen/linearize.h"
#include "render/render.h"
#include "runtime/runtime.h"
#include "schedule/schedule.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* buffer table: BUFFER node -> runtime buffer (chained hash; entries leave when the node dies)                   */

typedef struct BufEntry {
  const UOp *node;
  RtBuffer *buf;
  struct BufEntry *next;
} BufEntry;

static struct {
  BufEntry **slots;
  size_t cap, len;
  int64_t next_slot;
  bool hook_set;
} bufs;

static size_t buf_slot(const UOp *u) { return (size_t)(tg_hash_mix(0, (uint64_t)(uintptr_t)u) & (bufs.cap - 1)); }

static BufEntry *buf_find(const UOp *u) {
  if (!bufs.cap) return NULL;
  for (BufEntry *e = bufs.slots[buf_slot(u)]; e; e = e->next)
    if (e->node == u) return e;
  return NULL;
}

static void buffer_died(UOp *u) {
  if (!bufs.cap) return;
  for (BufEntry **p = &bufs.slots[buf_slot(u)]; *p; p = &(*p)->next) {
    if ((*p)->node != u) continue;
    BufEntry *e = *p;
    *p = e->next;
    rt_buffer_free(e->buf);
    tg_free(e);
    bufs.len--;
    return;
  }
}

static void buf_insert(const UOp *u, RtBuffer *b) {
  if (!bufs.hook_set) {
    uop_set_buffer_free_hook(buffer_died);
    bufs.hook_set = true;
  }
  if (bufs.len + 1 > bufs.cap) {
    size_t ncap = bufs.cap ? bufs.cap * 2 : 256;
    BufEntry **ns = tg_calloc(ncap, sizeof *ns);
    for (size_t i = 0; i < bufs.cap; i++)
      for (BufEntry *e = bufs.slots[i], *next; e; e = next) {
        next = e->next;
        size_t j = (size_t)(tg_hash_mix(0, (uint64_t)(uintptr_t)e->node) & (ncap - 1));
        e->next = ns[j];
        ns[j] = e;
      }
    tg_free(bufs.slots);
    bufs.slots = ns;
    bufs.cap = ncap;
  }
  BufEntry *e = tg_malloc(sizeof *e);
  e->node = u;
  e->buf = b;
  size_t j = buf_slot(u);
  e->next = bufs.slots[j];
  bufs.slots[j] = e;
  bufs.len++;
}

static int64_t buffer_numel(const UOp *u) {
  if (u->nsrc >= 1 && u->src[0]->op == TG_OP_CONST && u->src[0]->arg.c.kind == CK_INT) return u->src[0]->arg.c.i;
  return -1;
}

static bool is_global_buffer(const UOp *u) {
  return u->op == TG_OP_BUFFER && u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_GLOBAL;
}

/* The runtime buffer of a global BUFFER node, allocated on first use. */
static tg_status ensure_allocated(const UOp *u, RtBuffer **out) {
  BufEntry *e = buf_find(u);
  if (e) {
    *out = e->buf;
    return TG_OK;
  }
  int64_t numel = buffer_numel(u);
  if (!is_global_buffer(u) || numel < 0)
    return tg_set_error(TG_ERR_RUNTIME, "realize: cannot allocate %s %s (not a sized global BUFFER)", uop_op_name(uop_op(u)),
                        u->dtype->name);
  RtBuffer *b;
  tg_status st = rt_buffer_new(u->arg.param->device[0] ? u->arg.param->device : tg_default_device(),
                               (size_t)numel * (size_t)dt_itemsize(u->dtype), &b);
  if (st != TG_OK) return st;
  buf_insert(u, b);
  *out = b;
  return TG_OK;
}

UOp *engine_new_buffer(const char *device, const DType *dtype, int64_t numel) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = ++bufs.next_slot;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = dtype;
  p.addrspace = ADDR_GLOBAL;
  if (!device) device = tg_default_device();
  if (!rt_device_canonical(device, p.device, sizeof p.device)) return NULL;
  UOp *n = uop_const_int(DT_WEAKINT, numel);
  return uop_new(TG_OP_BUFFER, dtype, &n, 1, arg_param(&p));
}

static UOp *new_buffer_cb(const char *device, const DType *dtype, int64_t numel, void *ctx) {
  TG_UNUSED(ctx);
  return engine_new_buffer(device, dtype, numel);
}

UOp *engine_buffer_from_host(const char *device, const DType *dtype, int64_t numel, const void *data) {
  UOp *u = engine_new_buffer(device, dtype, numel);
  RtBuffer *b;
  if (ensure_allocated(u, &b) != TG_OK) return NULL;
  size_t nbytes = (size_t)numel * (size_t)dt_itemsize(dtype);
  if (nbytes && rt_copyin(b, 0, data, nbytes) != TG_OK) return NULL;
  return u;
}

UOp *engine_buffer_wrap_host(const char *device, const DType *dtype, int64_t numel, void *host,
                             void (*release)(void *ctx), void *ctx) {
  RtDevice *d;
  if (rt_device_open(device ? device : tg_default_device(), &d) != TG_OK) return NULL;
  UOp *u = engine_new_buffer(device, dtype, numel);
  if (!u) return NULL;
  RtBuffer *b;
  if (rt_buffer_wrap_host(d, host, (size_t)numel * (size_t)dt_itemsize(dtype), release, ctx, &b) != TG_OK) return NULL;
  buf_insert(u, b);
  return u;
}

static bool engine_capture_active(void);

tg_status engine_copyout(UOp *buffer, void *out, size_t nbytes) {
  if (engine_capture_active())
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "reading a value during JIT capture is not allowed (it would be baked in)");
  BufEntry *e = buf_find(buffer);
  if (!e)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "copyout: %s %s has no device memory (not realized)",
                        uop_op_name(uop_op(buffer)), buffer->dtype->name);
  if (nbytes != rt_buffer_nbytes(e->buf))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "copyout: %zu bytes requested from a buffer of %zu bytes", nbytes,
                        rt_buffer_nbytes(e->buf));
  return rt_copyout(e->buf, 0, out, nbytes);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* compiled kernels, cached by kernel AST and the knobs that change its program                                   */

typedef struct Kernel {
  UOp *ast;            /* kept */
  RtDevice *dev;       /* where its buffers live */
  RtProgram *prog;
  char name[TG_NAME_MAX];
  int nparams;
  int64_t *param_slot; /* per parameter position: the PARAM slot of a buffer, or -1 for a value */
  char (*value_name)[TG_NAME_MAX]; /* per parameter position: the Variable a value parameter reads ("" for buffers) */
  int core_param;      /* position of core_id, or -1 */
  int ncores;
  int64_t global[3], local[3]; /* launch dims: blocks and threads per block (CPU: {ncores,1,1}, {1,1,1}) */
  UOp *gbound[3];      /* kept: a grid dim whose bound is an expression of Variables (NULL: global[d] is it) */
  bool sym_grid;       /* some gbound: the grid is computed per launch (kernel_grid) */
  bool sym_grid_graph; /* every gbound is at least 1 (vmin): a graph node whose grid is set with its values */
  double flops;        /* estimated per launch (ALU ops times enclosing loop trips) */
  char *src;           /* for DEBUG=4 */
  char core_name[TG_NAME_MAX]; /* the core_id parameter's name in src ("" without one) */
  bool flat_ids;       /* a GPU kernel with flat ids: its block shape is chosen after compile (pick_local_size) */
  RenderParamVec params; /* kept until then: what the timing runs need */
  bool from_template;  /* the GEMM template route's program (engine_stats) */
  uint64_t knobs;      /* kernel_knobs() when it was made */
  struct Kernel *other_knobs; /* the same AST made under other knobs (a chain from the map's entry; not owned) */
} Kernel;

static TG_VEC(Kernel *) kernels;
static UOpMap kernel_by_ast;
static EngineStats stats;

EngineStats engine_stats(void) { return stats; }

/* The knobs that change the program one AST becomes (the opts, the lowering, the renderers, the template route):
 * part of the kernel cache's key, so a kernel made under GEMM_TEMPLATE=0 or NOOPT=1 is not reused without it
 * (tinygrad keys its method cache with BEAM and NOOPT). Read per schedule, not per kernel. */
static uint64_t kernel_knobs(void) {
  static const char *const knobs[] = {"GEMM_TEMPLATE", "BEAM", "NOOPT", "NOLOCALS", "TC", "USE_TC", "TC_OPT",
                                      "TC_SELECT", "MV", "MV_BLOCKSIZE", "MV_THREADS_PER_ROW", "MV_ROWS_PER_THREAD",
                                      "ALLOW_TF32", "TRANSCENDENTAL", "DISABLE_FAST_IDIV", "VECTOR_ACC", "DMC",
                                      "EXPAND_SSA", "THREADS", "NUM_CPU_THREADS", "BEAM_UPCAST_MAX", "BEAM_LOCAL_MAX",
                                      "BEAM_PADTO", "GPU_ROW_REDUCE", "GPU_LATE_GROUP", "GPU_WIDE_GROUPTOP",
                                      "GPU_EW_FLAT", "GPU_GROUP_FIRST", "GPU_MATVEC_ROWS", "GPU_ROW_UPCAST", "GPU_CONV",
                                      "GPU_CONV_TC", "GPU_CONV_ROWS", "GPU_CONV_BLOCK", "GPU_CONV_BCAST",
                                      "GPU_ROW_KERNEL", "GPU_ROW_THREADS", "INT8_ROWS_OUTER", "DOT_ROWS_OUTER",
                                      "INT8_ROW_UPCAST", "INT8_TOKEN_UPCAST", "INT8_TOKEN_LOOP", "CPU_BYTE_VEC",
                                      "CHAIN_ACC_MIN"};
  static uint64_t cached, generation; /* 30 lookups per realize otherwise */
  if (generation == tg_knobs_generation()) return cached;
  uint64_t h = 0x6b65726e656cULL;
  for (size_t i = 0; i < TG_ARRAY_LEN(knobs); i++) h = tg_hash_mix(h, (uint64_t)tg_getenv_int(knobs[i], INT64_MIN));
  generation = tg_knobs_generation();
  return cached = h;
}

static Kernel *cached_kernel(UOp *ast, uint64_t knobs) {
  void **hit = uopmap_get(&kernel_by_ast, ast);
  for (Kernel *k = hit ? *hit : NULL; k; k = k->other_knobs)
    if (k->knobs == knobs) return k;
  return NULL;
}

static void cache_kernel(Kernel *k) {
  void **hit = uopmap_get(&kernel_by_ast, k->ast);
  if (hit) {
    Kernel *head = *hit;
    k->other_knobs = head->other_knobs;
    head->other_knobs = k;
  } else {
    uopmap_put(&kernel_by_ast, k->ast, k);
  }
  tg_vec_push(&kernels, k);
}

/* The core_id Variable of a THREAD-split kernel: its number of values (1 when there is none) and its slot. */
static int core_count(UOp *linear, int64_t *slot) {
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if ((u->op == TG_OP_PARAM || u->op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
        u->arg.param->addrspace == ADDR_ALU && strcmp(u->arg.param->name, "core_id") == 0) {
      *slot = u->arg.param->slot;
      return (int)(u->arg.param->vmax + 1);
    }
  }
  *slot = -1;
  return 1;
}

/* The device of a kernel: its buffers' (tinygrad: a kernel's buffers are on one device; the scheduler checked it). */
static const char *kernel_device(UOp *ast) {
  UOpVec topo = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  const char *dev = NULL;
  for (size_t i = 0; i < topo.len && !dev; i++) {
    const UOp *u = topo.data[i];
    if ((u->op == TG_OP_PARAM || u->op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
        u->arg.param->addrspace == ADDR_GLOBAL && u->arg.param->device[0])
      dev = u->arg.param->device;
  }
  tg_vec_free(&topo);
  return dev ? dev : tg_default_device();
}

/* the kernel's launch dims (render_launch_bounds): constant ones into global/local; a GLOBAL dim of a Variable's
 * extent keeps its bound for kernel_grid (locals are never symbolic: gpudims refuses that) */
static bool launch_bounds(Kernel *k, UOp *linear) {
  UOp *gb[3], *lb[3];
  if (!render_launch_bounds(linear, gb, lb)) return false;
  for (int d = 0; d < 3; d++) {
    k->global[d] = k->local[d] = 1;
    if (lb[d] && render_launch_eval(lb[d], NULL, NULL, 0, &k->local[d]) != TG_OK) return false;
    if (gb[d] && render_launch_eval(gb[d], NULL, NULL, 0, &k->global[d]) != TG_OK) {
      tg_clear_error();
      k->gbound[d] = uop_keep(gb[d]);
      k->sym_grid_graph = (k->sym_grid ? k->sym_grid_graph : true) && uop_vmin(gb[d]) >= 1;
      k->sym_grid = true;
    }
  }
  return true;
}

/* the grid of one launch: a symbolic dim evaluated with the values the kernel gets (vals[i] for its Variable
 * parameters, by name); false (nothing to launch) when a dim is 0 */
static tg_status kernel_grid(const Kernel *k, const long long *vals, int64_t grid[3], bool *empty) {
  *empty = false;
  for (int d = 0; d < 3; d++) grid[d] = k->global[d];
  if (!k->sym_grid) return TG_OK;
  const char *names[RT_MAX_PARAMS];
  int64_t v[RT_MAX_PARAMS];
  for (int i = 0; i < k->nparams; i++) {
    bool var = k->param_slot[i] < 0 && i != k->core_param;
    names[i] = var ? k->value_name[i] : NULL;
    v[i] = var ? (int64_t)vals[i] : 0;
  }
  for (int d = 0; d < 3; d++) {
    if (!k->gbound[d]) continue;
    tg_status st = render_launch_eval(k->gbound[d], names, v, (size_t)k->nparams, &grid[d]);
    if (st != TG_OK) return st;
    if (grid[d] < 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "launch: kernel %s gets a grid of %lld", k->name, (long long)grid[d]);
    *empty |= grid[d] == 0;
  }
  return TG_OK;
}

/* Lower, linearize and render one kernel AST with its device's renderer; the program is compiled later with the
 * rest of the batch. Host devices (the CPU) call kernels through a fixed-ABI entry compiled with them. */
/* A matmul the GEMM templates take (codegen gemm_route.c): the template's source, launch dims and (C, A, B) params. */
static Kernel *template_kernel(UOp *ast, RtDevice *dev) {
  CgGemmMatch gm;
  if (rt_device_is_host(dev) || cg_gemm_match(ast, rt_device_arch(dev), &gm) != NULL) return NULL;
  Kernel *k = tg_calloc(1, sizeof *k);
  render_gemm_kernel_name(&gm.cfg, k->name, sizeof k->name);
  k->src = render_gemm_render(&gm.cfg, k->name);
  if (!k->src) {
    tg_free(k);
    return NULL;
  }
  int smem;
  render_gemm_launch_dims(&gm.cfg, k->global, k->local, &smem);
  k->ast = uop_keep(ast);
  k->dev = dev;
  k->nparams = 3;
  k->param_slot = tg_malloc(4 * sizeof(int64_t));
  k->value_name = tg_calloc(4, sizeof *k->value_name);
  for (int i = 0; i < 3; i++) k->param_slot[i] = gm.slot[i];
  k->core_param = -1;
  k->ncores = 1;
  k->flops = render_gemm_flops(&gm.cfg);
  k->from_template = true;
  return k;
}

static tg_status prepare_kernel(UOp *ast, Kernel **out, char **entry_src) {
  RtDevice *dev;
  tg_status st = rt_device_open(kernel_device(ast), &dev);
  if (st != TG_OK) return st;
  if ((*out = template_kernel(ast, dev))) {
    *entry_src = NULL;
    return TG_OK;
  }
  const Renderer *ren = renderer_for_device(rt_device_name(dev));
  if (!ren) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_UNSUPPORTED;
  UOpScope sc = uop_scope_begin();
  UOp *to_lower = beam_kernel_ast(ast, ren); /* BEAM>=1: the AST carrying the searched opts */
  UOp *lowered = to_lower ? cg_lower(to_lower, ren) : NULL;
  UOp *linear = lowered ? cg_linearize(lowered) : NULL;
  char *src = linear ? ren->render(ren, linear) : NULL;
  Kernel *k = src ? tg_calloc(1, sizeof *k) : NULL;
  if (k && !launch_bounds(k, linear)) {
    tg_free(k);
    tg_free(src);
    k = NULL, src = NULL;
  }
  if (!src) {
    st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
    uop_scope_end(sc);
    return st;
  }
  k->ast = uop_keep(ast);
  k->dev = dev;
  snprintf(k->name, sizeof k->name, "%s", render_kernel_name(linear));
  beam_print_applied_opts(k->name, lowered);
  RenderParamVec params = {0};
  render_params(linear, &params);
  int64_t core_slot;
  k->ncores = core_count(linear, &core_slot);
  k->nparams = (int)params.len;
  k->param_slot = tg_malloc((params.len + 1) * sizeof(int64_t));
  k->value_name = tg_calloc(params.len + 1, sizeof *k->value_name);
  k->core_param = -1;
  for (size_t i = 0; i < params.len; i++) {
    k->param_slot[i] = params.data[i].is_value ? -1 : params.data[i].slot;
    if (params.data[i].is_value) snprintf(k->value_name[i], sizeof k->value_name[i], "%s", params.data[i].var_name);
    if (params.data[i].is_value && params.data[i].slot == core_slot) {
      k->core_param = (int)i;
      snprintf(k->core_name, sizeof k->core_name, "%s", params.data[i].name);
    }
  }
  /* flat ids over a symbolic grid: blocks of one thread (a block shape must divide every grid the Variables give) */
  k->flat_ids = !rt_device_is_host(dev) && render_flat_ids(linear) && !k->sym_grid;
  if (k->flat_ids) k->params = params;
  else tg_vec_free(&params);
  if (k->core_param >= 0) k->global[0] *= k->ncores; /* the CPU's THREAD pieces (tinygrad: global_size[0]) */
  k->flops = render_estimate_flops(linear);
  *entry_src = NULL;
  if (rt_device_is_host(dev)) {
    char entry_name[TG_NAME_MAX + 8];
    snprintf(entry_name, sizeof entry_name, "%s_entry", k->name);
    char *entry = render_c_entry(linear, entry_name);
    StrBuf b;
    sb_init(&b);
    sb_puts(&b, src);
    sb_puts(&b, "\n");
    sb_puts(&b, entry);
    tg_free(src);
    tg_free(entry);
    k->src = sb_take(&b);
    *entry_src = tg_strdup(entry_name);
  } else {
    k->src = src;
  }
  uop_scope_end(sc);
  *out = k;
  return st;
}

static void kernel_free(Kernel *k) {
  uop_drop(k->ast);
  for (int d = 0; d < 3; d++)
    if (k->gbound[d]) uop_drop(k->gbound[d]);
  tg_vec_free(&k->params);
  tg_free(k->param_slot);
  tg_free(k->value_name);
  tg_free(k->src);
  tg_free(k);
}

/* tinygrad optimize_local_size: a flat-id kernel's block shape, the fastest of the shapes that divide its grid (timed
 * on scratch buffers, beam.c), remembered per program for the process as tinygrad's local_size_cache. */
typedef struct LocalSizeEntry { const RtProgram *prog; int64_t local[3]; } LocalSizeEntry;
static TG_VEC(LocalSizeEntry) local_size_cache;

static tg_status pick_local_size(Kernel *k) {
  int64_t local[3] = {1, 1, 1};
  bool found = false;
  for (size_t i = 0; i < local_size_cache.len && !found; i++)
    if (local_size_cache.data[i].prog == k->prog) memcpy(local, local_size_cache.data[i].local, sizeof local), found = true;
  if (!found) {
    tg_status st = beam_optimize_local_size(k->dev, k->prog, k->name, k->params.data, k->params.len, k->global, local);
    if (st != TG_OK) return st;
    LocalSizeEntry e = {k->prog, {local[0], local[1], local[2]}};
    tg_vec_push(&local_size_cache, e);
  }
  for (int d = 0; d < 3; d++) k->local[d] = local[d], k->global[d] /= local[d];
  k->flat_ids = false;
  tg_vec_free(&k->params);
  return TG_OK;
}

/* Kernels for every CALL of the schedule; new ones compiled in one batch. */
static tg_status get_kernels(UOp *const *calls, size_t ncalls, Kernel **out) {
  TG_VEC(Kernel *) fresh = {0};
  TG_VEC(char *) entries = {0};
  tg_status st = TG_OK;
  uint64_t knobs = kernel_knobs();
  for (size_t i = 0; i < ncalls && st == TG_OK; i++) {
    UOp *ast = calls[i]->src[0];
    if (ast->op == TG_OP_COPY) { /* a device copy: nothing to compile */
      out[i] = NULL;
      continue;
    }
    Kernel *hit = cached_kernel(ast, knobs);
    if (hit) {
      out[i] = hit;
      continue;
    }
    bool pending = false;
    for (size_t j = 0; j < fresh.len && !pending; j++)
      if (fresh.data[j]->ast == ast) out[i] = fresh.data[j], pending = true;
    if (pending) continue;
    Kernel *k = NULL;
    char *entry = NULL;
    st = prepare_kernel(ast, &k, &entry);
    if (st != TG_OK) break;
    k->knobs = knobs;
    tg_vec_push(&fresh, k);
    tg_vec_push(&entries, entry);
    out[i] = k;
  }
  if (st == TG_OK && fresh.len) {
    /* one batch per device, in order of first appearance */
    RtKernelSource *srcs = tg_calloc(fresh.len, sizeof *srcs);
    RtProgram **progs = tg_calloc(fresh.len, sizeof *progs);
    size_t *idx = tg_calloc(fresh.len, sizeof *idx);
    bool *done = tg_calloc(fresh.len, sizeof *done);
    for (size_t j = 0; j < fresh.len && st == TG_OK; j++) {
      if (done[j]) continue;
      RtDevice *dev = fresh.data[j]->dev;
      size_t m = 0;
      for (size_t q = j; q < fresh.len; q++) {
        if (done[q] || fresh.data[q]->dev != dev) continue;
        done[q] = true;
        idx[m] = q;
        srcs[m].name = fresh.data[q]->name;
        srcs[m].src = fresh.data[q]->src;
        srcs[m].entry = entries.data[q];
        srcs[m].core_param = fresh.data[q]->core_name[0] ? fresh.data[q]->core_name : NULL;
        if (tg_debug_level() >= 4) printf("%s\n", fresh.data[q]->src);
        m++;
      }
      st = rt_device_compile_many(dev, srcs, m, progs);
      for (size_t q = 0; q < m && st == TG_OK; q++) fresh.data[idx[q]]->prog = progs[q];
    }
    for (size_t j = 0; j < fresh.len && st == TG_OK; j++)
      if (fresh.data[j]->flat_ids) st = pick_local_size(fresh.data[j]);
    for (size_t j = 0; j < fresh.len && st == TG_OK; j++) {
      cache_kernel(fresh.data[j]);
      stats.kernels_made++;
      stats.template_made += fresh.data[j]->from_template;
    }
    tg_free(srcs);
    tg_free(progs);
    tg_free(idx);
    tg_free(done);
  }
  if (st != TG_OK)
    for (size_t j = 0; j < fresh.len; j++) kernel_free(fresh.data[j]);
  for (size_t j = 0; j < entries.len; j++) tg_free(entries.data[j]);
  tg_vec_free(&entries);
  tg_vec_free(&fresh);
  return st;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* running                                                                                                        */

static long kernel_count;

/* A CALL argument as a device buffer and a byte range of it: a global BUFFER, or a planned view of an arena,
 * BITCAST(SHRINK(arena, offset, n)) (on every device an address plus an offset). */
static tg_status resolve_arg(const UOp *a, RtBuffer **buf, size_t *offset, size_t *nbytes) {
  RtBuffer *b;
  if (a->op == TG_OP_BITCAST && a->nsrc == 1 && a->src[0]->op == TG_OP_SHRINK && a->src[0]->nsrc == 3) {
    const UOp *sh = a->src[0];
    if (sh->src[1]->op != TG_OP_CONST || sh->src[2]->op != TG_OP_CONST)
      return tg_set_error(TG_ERR_RUNTIME, "realize: arena view with a symbolic offset");
    int64_t off = sh->src[1]->arg.c.i, n = sh->src[2]->arg.c.i;
    tg_status st = ensure_allocated(sh->src[0], &b);
    if (st != TG_OK) return st;
    if (off < 0 || n < 0 || (size_t)(off + n) > rt_buffer_nbytes(b))
      return tg_set_error(TG_ERR_RUNTIME, "realize: arena view [%lld, +%lld) outside its arena of %zu bytes",
                          (long long)off, (long long)n, rt_buffer_nbytes(b));
    *buf = b;
    *offset = (size_t)off;
    *nbytes = (size_t)n;
    return TG_OK;
  }
  tg_status st = ensure_allocated(a, &b);
  if (st != TG_OK) return st;
  *buf = b;
  *offset = 0;
  *nbytes = rt_buffer_nbytes(b);
  return TG_OK;
}

static void print_debug_line(const char *device, const char *name, int nargs, double sec, double flops, size_t bytes) {
  double us = sec * 1e6;
  printf("*** %-7.7s %4ld %-28s arg %3d mem %7.2f GB tm %9.2fus/%9.2fms (%9.2f GFLOPS %7.2f GB/s)\n", device,
         kernel_count, name, nargs, (double)rt_mem_used() / 1e9, us, sec * 1e3, sec > 0 ? flops / sec / 1e9 : 0.0,
         sec > 0 ? (double)bytes / sec / 1e9 : 0.0);
}

/* Every value parameter of every kernel has a value (core_id is the launch's own): checked before the first launch,
 * so an unbound Variable runs nothing (tinygrad's "unbound Variable" at launch). */
static tg_status check_values(const SchedResult *res, Kernel *const *ks, size_t n) {
  for (size_t c = 0; c < n; c++)
    for (int i = 0; ks[c] && i < ks[c]->nparams; i++) { /* NULL: a COPY call */
      int64_t v;
      if (ks[c]->param_slot[i] >= 0 || i == ks[c]->core_param || sched_var_value(res, ks[c]->value_name[i], &v)) continue;
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "realize: unbound Variable %s used by kernel %s (bind it: tg_bind)",
                          ks[c]->value_name[i], ks[c]->name);
    }
  return TG_OK;
}

static tg_status run_call(UOp *call, Kernel *k, const SchedResult *res) {
  uint64_t argbufs[RT_MAX_PARAMS];
  long long vals[RT_MAX_PARAMS];
  if (k->nparams > RT_MAX_PARAMS)
    return tg_set_error(TG_ERR_UNSUPPORTED, "realize: kernel %s takes %d parameters (at most %d)", k->name, k->nparams,
                        RT_MAX_PARAMS);
  size_t bytes = 0;
  for (int i = 0; i < k->nparams; i++) {
    argbufs[i] = 0;
    vals[i] = 0;
    int64_t slot = k->param_slot[i];
    if (slot < 0) { /* a value: core_id (filled by the launch) or a bound Variable's */
      int64_t v = 0;
      if (i != k->core_param && !sched_var_value(res, k->value_name[i], &v))
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "realize: unbound Variable %s used by kernel %s", k->value_name[i],
                            k->name);
      vals[i] = (long long)v;
      continue;
    }
    if (slot + 1 >= (int64_t)call->nsrc)
      return tg_set_error(TG_ERR_RUNTIME, "realize: kernel %s reads PARAM %lld but its CALL has %u buffers", k->name,
                          (long long)slot, call->nsrc - 1);
    RtBuffer *b;
    size_t off = 0, nb = 0;
    tg_status st = resolve_arg(call->src[1 + slot], &b, &off, &nb);
    if (st != TG_OK) return st;
    if (rt_buffer_device(b) != k->dev)
      return tg_set_error(TG_ERR_RUNTIME, "realize: kernel %s runs on %s but its buffer %d is on %s", k->name,
                          rt_device_name(k->dev), i, rt_device_name(rt_buffer_device(b)));
    argbufs[i] = rt_buffer_addr(b) + off;
    bytes += nb;
  }
  double sec = 0;
  bool timed = tg_debug_level() >= 2, empty;
  int64_t grid[3];
  tg_status st = kernel_grid(k, vals, grid, &empty);
  if (st != TG_OK || empty) return st;
  st = rt_device_launch(k->dev, k->prog, argbufs, vals, k->nparams, grid, k->local, timed ? &sec : NULL);
  if (st != TG_OK) return st;
  kernel_count++;
  stats.launches++;
  stats.template_launches += k->from_template;
  if (timed) print_debug_line(rt_device_name(k->dev), k->name, k->nparams, sec, k->flops, bytes);
  return TG_OK;
}

/* CALL(COPY, dst, src): tinygrad exec_copy (the device's transfer, or through the host). */
static tg_status run_copy(UOp *call) {
  if (call->nsrc != 3) return tg_set_error(TG_ERR_RUNTIME, "realize: a COPY call takes 2 buffers, got %u", call->nsrc - 1);
  RtBuffer *dst, *src;
  size_t doff, dn, soff, sn;
  tg_status st = resolve_arg(call->src[1], &dst, &doff, &dn);
  if (st == TG_OK) st = resolve_arg(call->src[2], &src, &soff, &sn);
  if (st != TG_OK) return st;
  if (dn != sn)
    return tg_set_error(TG_ERR_RUNTIME, "realize: COPY of %zu bytes into a buffer of %zu bytes", sn, dn);
  bool timed = tg_debug_level() >= 2;
  struct timespec t0, t1;
  if (timed) clock_gettime(CLOCK_MONOTONIC, &t0);
  st = rt_transfer(dst, doff, src, soff, sn);
  if (st == TG_OK && timed) st = rt_device_synchronize(rt_buffer_device(dst));
  if (st != TG_OK) return st;
  kernel_count++;
  if (timed) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    char name[96];
    snprintf(name, sizeof name, "copy %10zu, %7s <- %-7s", sn, rt_device_name(rt_buffer_device(dst)),
             rt_device_name(rt_buffer_device(src)));
    print_debug_line(rt_device_name(rt_buffer_device(dst)), name, 2, sec, 0, sn);
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* JIT capture and replay (tinygrad engine/jit.py CapturedJit): while a capture is open every realize records its
 * resolved CALLs and var_vals instead of running them; freezing turns the recording into a flat array of launches
 * with every argument resolved to a device address once, plus the patch lists for the explicit inputs and the
 * Variables; a replay patches and launches, with no schedule, no rewrite and no compile. The memory planner ran per
 * realize during the capture (its arenas only hold values that live inside one realize), so no buffer a live handle
 * holds (weights, grads, optimizer state, outputs) is ever aliased.
 * On a device with graphs (CUDA) runs of consecutive kernels become graphs at freeze (tinygrad graph_split_rewrite:
 * batches of at most JIT_BATCH_SIZE=32 kernels, the limit doubling after each, a batch of one left plain unless
 * GRAPH_ONE_KERNEL=1; copies and kernels of other devices split them; JIT=2 makes none); a replay updates only the
 * nodes whose patched arguments changed and launches each graph as one unit. */

typedef struct JitVarRec { size_t first, n; } JitVarRec; /* one realize's var_vals in EngineJit.var_* */

typedef struct JitLaunch {
  Kernel *k;             /* NULL: a copy */
  uint64_t *bufs;        /* per parameter (kernels) */
  long long *vals;
  RtBuffer *dst, *src;   /* copies */
  size_t doff, soff, nbytes;
  size_t bytes;          /* DEBUG=2 */
  RtGraphAccess *access; /* kernels: the ranges its buffers cover (graph dependencies) */
  int naccess;
  int32_t graph;         /* the graph (EngineJit.graphs) this launch is a node of, or -1 */
  uint32_t node;         /* its node index there */
  bool dirty;            /* patched to new arguments since the graph last saw them */
} JitLaunch;

typedef struct JitGraph { RtGraph *g; uint32_t first, n; } JitGraph; /* launches first .. first+n-1 */

typedef struct JitPatch { uint32_t launch, input; int32_t arg; } JitPatch; /* arg -1: copy src, -2: copy dst */
typedef struct JitVarPatch { uint32_t launch, arg, var; } JitVarPatch;

struct EngineJit {
  TG_VEC(UOp *) calls;           /* kept CALLs in execution order */
  TG_VEC(uint32_t) call_realize; /* per call: which realize recorded it */
  TG_VEC(JitVarRec) realizes;
  TG_VEC(int64_t) var_vals;
  TG_VEC(char *) var_names;      /* owned */
  /* frozen */
  JitLaunch *launches;
  size_t nlaunch, nkernels, nin;
  TG_VEC(JitPatch) patches;
  TG_VEC(JitVarPatch) var_patches;
  TG_VEC(JitGraph) graphs;
  TG_VEC(RtBuffer *) written;    /* buffers the list writes (not the inputs): an input aliasing one is copied first */
  RtBuffer **scratch;            /* per input: where an aliasing input is copied (allocated on first need) */
  RtBuffer **cur;                /* per input: this replay's buffer */
  UOp **inputs;                  /* kept: the capture's input BUFFERs */
};

static EngineJit *capturing;

static void capture_record(EngineJit *j, const SchedResult *res) {
  JitVarRec r = {j->var_vals.len, res->nvars};
  for (size_t i = 0; i < res->nvars; i++) {
    tg_vec_push(&j->var_vals, res->var_vals[i]);
    tg_vec_push(&j->var_names, tg_strdup(res->var_names[i]));
  }
  for (uint32_t i = 0; i < res->linear->nsrc; i++) {
    tg_vec_push(&j->calls, uop_keep(res->linear->src[i]));
    tg_vec_push(&j->call_realize, (uint32_t)j->realizes.len);
  }
  tg_vec_push(&j->realizes, r);
}

bool engine_capturing(void) { return capturing != NULL; }
static bool engine_capture_active(void) { return capturing != NULL; }

tg_status engine_capture_begin(void) {
  if (capturing) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: nested JIT capture is not supported (a JIT is capturing)");
  capturing = tg_calloc(1, sizeof *capturing);
  return TG_OK;
}

EngineJit *engine_capture_end(void) {
  EngineJit *j = capturing;
  capturing = NULL;
  return j;
}

size_t engine_jit_kernels(const EngineJit *j) { return j ? j->nkernels : 0; }
size_t engine_jit_calls(const EngineJit *j) { return j ? j->calls.len : 0; }
size_t engine_jit_graphs(const EngineJit *j) { return j ? j->graphs.len : 0; }

void engine_jit_free(EngineJit *j) {
  if (!j) return;
  UOpScope sc = uop_scope_begin();
  for (size_t i = 0; i < j->calls.len; i++) uop_drop(j->calls.data[i]);
  for (size_t i = 0; i < j->var_names.len; i++) tg_free(j->var_names.data[i]);
  for (size_t i = 0; i < j->graphs.len; i++) rt_graph_free(j->graphs.data[i].g);
  for (size_t i = 0; i < j->nlaunch; i++)
    tg_free(j->launches[i].bufs), tg_free(j->launches[i].vals), tg_free(j->launches[i].access);
  for (size_t i = 0; i < j->nin; i++) {
    if (j->scratch[i]) rt_buffer_free(j->scratch[i]);
    uop_drop(j->inputs[i]);
  }
  uop_scope_end(sc);
  tg_vec_free(&j->calls);
  tg_vec_free(&j->call_realize);
  tg_vec_free(&j->realizes);
  tg_vec_free(&j->var_vals);
  tg_vec_free(&j->var_names);
  tg_vec_free(&j->patches);
  tg_vec_free(&j->var_patches);
  tg_vec_free(&j->graphs);
  tg_vec_free(&j->written);
  tg_free(j->launches);
  tg_free(j->scratch);
  tg_free(j->cur);
  tg_free(j->inputs);
  tg_free(j);
}

/* The PARAM slots a kernel stores into (the buffers it writes). */
static void written_slots(const UOp *ast, bool *written, int nslots) {
  UOpVec topo = {0};
  uop_toposort((UOp *)ast, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    const UOp *u = topo.data[i];
    if (u->op != TG_OP_STORE || !u->nsrc) continue;
    const UOp *x = u->src[0];
    while (x->op != TG_OP_PARAM && x->op != TG_OP_BUFFER && x->nsrc) x = x->src[0];
    if (x->arg.kind == ARG_PARAM && x->arg.param->slot >= 0 && x->arg.param->slot < nslots) written[x->arg.param->slot] = true;
  }
  tg_vec_free(&topo);
}

static void add_written(EngineJit *j, RtBuffer *b) {
  for (size_t i = 0; i < j->written.len; i++)
    if (j->written.data[i] == b) return;
  tg_vec_push(&j->written, b);
}

static int input_index(const EngineJit *j, const UOp *arg) {
  for (size_t i = 0; i < j->nin; i++)
    if (j->inputs[i] == arg) return (int)i;
  return -1;
}

static bool captured_value(const EngineJit *j, uint32_t realize, const char *name, int64_t *v) {
  JitVarRec r = j->realizes.data[realize];
  for (size_t i = r.first; i < r.first + r.n; i++)
    if (strcmp(j->var_names.data[i], name) == 0) return *v = j->var_vals.data[i], true;
  return false;
}

static tg_status freeze_kernel(EngineJit *j, uint32_t li, UOp *call, Kernel *k, const char *const *var_names,
                               size_t nvars) {
  JitLaunch *l = &j->launches[li];
  if (k->nparams > RT_MAX_PARAMS)
    return tg_set_error(TG_ERR_UNSUPPORTED, "JIT: kernel %s takes %d parameters (at most %d)", k->name, k->nparams,
                        RT_MAX_PARAMS);
  l->k = k;
  l->bufs = tg_calloc((size_t)k->nparams + 1, sizeof *l->bufs);
  l->vals = tg_calloc((size_t)k->nparams + 1, sizeof *l->vals);
  l->access = tg_calloc((size_t)k->nparams + 1, sizeof *l->access);
  bool written[RT_MAX_PARAMS + 1] = {false};
  written_slots(k->ast, written, RT_MAX_PARAMS);
  for (int i = 0; i < k->nparams; i++) {
    int64_t slot = k->param_slot[i];
    if (slot < 0) { /* a value: core_id (the launch's), a Variable of the JIT call (patched), or one fixed at capture */
      if (i == k->core_param) continue;
      size_t v = 0;
      while (v < nvars && strcmp(var_names[v], k->value_name[i]) != 0) v++;
      if (v < nvars) {
        JitVarPatch p = {li, (uint32_t)i, (uint32_t)v};
        tg_vec_push(&j->var_patches, p);
        continue;
      }
      int64_t val;
      if (!captured_value(j, j->call_realize.data[li], k->value_name[i], &val))
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: unbound Variable %s used by kernel %s", k->value_name[i], k->name);
      l->vals[i] = (long long)val;
      continue;
    }
    if (slot + 1 >= (int64_t)call->nsrc)
      return tg_set_error(TG_ERR_RUNTIME, "JIT: kernel %s reads PARAM %lld but its CALL has %u buffers", k->name,
                          (long long)slot, call->nsrc - 1);
    RtBuffer *b;
    size_t off = 0, nb = 0;
    tg_status st = resolve_arg(call->src[1 + slot], &b, &off, &nb);
    if (st != TG_OK) return st;
    if (rt_buffer_device(b) != k->dev)
      return tg_set_error(TG_ERR_RUNTIME, "JIT: kernel %s runs on %s but its buffer %d is on %s", k->name,
                          rt_device_name(k->dev), i, rt_device_name(rt_buffer_device(b)));
    l->bufs[i] = rt_buffer_addr(b) + off;
    l->bytes += nb;
    int in = input_index(j, call->src[1 + slot]);
    l->access[l->naccess++] = (RtGraphAccess){l->bufs[i], nb, written[slot], in >= 0};
    if (in >= 0) {
      JitPatch p = {li, (uint32_t)in, i};
      tg_vec_push(&j->patches, p);
    } else if (written[slot]) {
      add_written(j, b);
    }
  }
  return TG_OK;
}

static tg_status freeze_copy(EngineJit *j, uint32_t li, UOp *call) {
  JitLaunch *l = &j->launches[li];
  if (call->nsrc != 3) return tg_set_error(TG_ERR_RUNTIME, "JIT: a COPY call takes 2 buffers, got %u", call->nsrc - 1);
  size_t dn, sn;
  tg_status st = resolve_arg(call->src[1], &l->dst, &l->doff, &dn);
  if (st == TG_OK) st = resolve_arg(call->src[2], &l->src, &l->soff, &sn);
  if (st != TG_OK) return st;
  if (dn != sn) return tg_set_error(TG_ERR_RUNTIME, "JIT: COPY of %zu bytes into a buffer of %zu bytes", sn, dn);
  l->nbytes = l->bytes = sn;
  int in = input_index(j, call->src[2]), out = input_index(j, call->src[1]);
  if (in >= 0) {
    JitPatch p = {li, (uint32_t)in, -1};
    tg_vec_push(&j->patches, p);
  }
  if (out >= 0) {
    JitPatch p = {li, (uint32_t)out, -2};
    tg_vec_push(&j->patches, p);
  } else {
    add_written(j, l->dst);
  }
  return TG_OK;
}

/* Launches first .. first+n-1 (kernels of one device with graphs) as one graph; a batch of one stays plain unless
 * GRAPH_ONE_KERNEL=1. */
static tg_status flush_batch(EngineJit *j, size_t first, size_t n, bool *made) {
  *made = false;
  if (!n || (n == 1 && !tg_getenv_int("GRAPH_ONE_KERNEL", 0))) return TG_OK;
  RtGraphNode *nodes = tg_calloc(n, sizeof *nodes);
  for (size_t i = 0; i < n; i++) {
    const JitLaunch *l = &j->launches[first + i];
    nodes[i] = (RtGraphNode){l->k->prog, l->bufs, l->vals, l->k->nparams, {0}, {0}, l->access, l->naccess};
    memcpy(nodes[i].grid, l->k->global, sizeof nodes[i].grid);
    if (l->k->sym_grid) { /* a placeholder grid: the first run sets the node with its Variables' values */
      for (int d = 0; d < 3; d++)
        if (l->k->gbound[d]) nodes[i].grid[d] = 1;
      j->launches[first + i].dirty = true;
    }
    memcpy(nodes[i].block, l->k->local, sizeof nodes[i].block);
  }
  RtGraph *g = NULL;
  tg_status st = rt_graph_new(j->launches[first].k->dev, nodes, n, &g);
  tg_free(nodes);
  if (st != TG_OK) return st;
  JitGraph jg = {g, (uint32_t)first, (uint32_t)n};
  for (size_t i = 0; i < n; i++) j->launches[first + i].graph = (int32_t)j->graphs.len, j->launches[first + i].node = (uint32_t)i;
  tg_vec_push(&j->graphs, jg);
  *made = true;
  if (tg_debug_level() >= 2) printf("JIT GRAPHing batch with %zu kernels\n", n);
  return TG_OK;
}

/* tinygrad graph_split_rewrite over the frozen list. */
static tg_status make_graphs(EngineJit *j) {
  int64_t max_batch = tg_getenv_int("JIT_BATCH_SIZE", 32);
  size_t first = 0, n = 0;
  tg_status st = TG_OK;
  for (size_t i = 0; i <= j->nlaunch && st == TG_OK; i++) {
    const JitLaunch *l = i < j->nlaunch ? &j->launches[i] : NULL;
    bool can_graph = l && l->k && l->k->core_param < 0 && (!l->k->sym_grid || l->k->sym_grid_graph) &&
                     rt_device_has_graph(l->k->dev);
    bool can_extend = can_graph && (!n || j->launches[first].k->dev == l->k->dev) && (max_batch <= 0 || (int64_t)n < max_batch);
    if (!can_extend && n) {
      bool made;
      st = flush_batch(j, first, n, &made);
      if (made && max_batch > 0) max_batch *= 2;
      n = 0;
    }
    if (can_graph) {
      if (!n) first = i;
      n++;
    }
  }
  return st;
}

/* ---- prune (tinygrad prune_linear, TinyJit(prune=True)) ----
 * In program order a call is kept when it touches memory a kept call or an input touches (all its buffers, read or
 * written); the others do not depend on the inputs (a weight-only kernel) and run once now, at capture. One more rule
 * here, because the captured calls are already memory-planned (tinygrad prunes before planning): a call that writes
 * bytes another call writes too (an arena range reused after its value died) is kept, or the replays would read the
 * other value there. */

static bool spans_overlap(const JitSpan *a, const JitSpan *b) {
  return a->mem == b->mem && a->off < b->off + b->n && b->off < a->off + a->n;
}

static bool touches(const JitSpan *s, size_t n, const JitSpan *set, size_t nset, bool written_only) {
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < nset; k++)
      if ((!written_only || (s[i].written && set[k].written)) && spans_overlap(&s[i], &set[k])) return true;
  return false;
}

void engine_prune_plan(const JitSpan *spans, const size_t *first, size_t n, const JitSpan *inputs, size_t nin,
                       bool *keep) {
  bool *forced = tg_calloc(n + 1, sizeof *forced);
  TG_VEC(JitSpan) needed = {0};
  for (bool changed = true; changed;) {
    needed.len = 0;
    for (size_t i = 0; i < nin; i++) tg_vec_push(&needed, inputs[i]);
    for (size_t i = 0; i < n; i++) {
      const JitSpan *s = spans + first[i];
      size_t ns = first[i + 1] - first[i];
      keep[i] = forced[i] || touches(s, ns, needed.data, needed.len, false);
      for (size_t k = 0; keep[i] && k < ns; k++) tg_vec_push(&needed, s[k]);
    }
    changed = false;
    for (size_t i = 0; i < n; i++) {
      if (keep[i]) continue;
      for (size_t k = 0; k < n && !forced[i]; k++)
        if (k != i && touches(spans + first[i], first[i + 1] - first[i], spans + first[k], first[k + 1] - first[k], true))
          forced[i] = changed = true;
    }
  }
  tg_vec_free(&needed);
  tg_free(forced);
}

/* the bytes a CALL argument (or an input) covers */
static tg_status span_of(const UOp *arg, bool written, JitSpan *sp) {
  RtBuffer *b = NULL;
  tg_status st = resolve_arg(arg, &b, &sp->off, &sp->n);
  sp->mem = b;
  sp->written = written;
  return st;
}

tg_status engine_jit_prune(EngineJit *j, UOp *const *inputs, size_t nin, size_t *pruned) {
  *pruned = 0;
  size_t n = j->calls.len;
  Kernel **ks = tg_calloc(n + 1, sizeof *ks);
  size_t *first = tg_calloc(n + 1, sizeof *first);
  bool *keep = tg_calloc(n + 1, sizeof *keep);
  TG_VEC(JitSpan) spans = {0};
  tg_status st = get_kernels(j->calls.data, n, ks);
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    UOp *call = j->calls.data[i];
    bool written[RT_MAX_PARAMS + 1] = {false};
    if (ks[i]) written_slots(ks[i]->ast, written, RT_MAX_PARAMS);
    first[i] = spans.len;
    for (uint32_t a = 1; a < call->nsrc && st == TG_OK; a++) {
      JitSpan sp; /* a COPY writes its first buffer */
      st = span_of(call->src[a], ks[i] ? a - 1 <= RT_MAX_PARAMS && written[a - 1] : a == 1, &sp);
      if (st == TG_OK) tg_vec_push(&spans, sp);
    }
  }
  first[n] = spans.len;
  TG_VEC(JitSpan) ins = {0};
  for (size_t i = 0; i < nin && st == TG_OK; i++) {
    JitSpan sp;
    st = span_of(inputs[i], false, &sp);
    if (st == TG_OK) tg_vec_push(&ins, sp);
  }
  if (st == TG_OK) engine_prune_plan(spans.data, first, n, ins.data, ins.len, keep);
  tg_vec_free(&ins);
  size_t nkeep = 0;
  for (size_t i = 0; i < n; i++) nkeep += keep[i];
  if (st == TG_OK && nkeep < n) {
    /* the pruned calls, with the whole record of Variable values, run once now; j keeps the rest in order */
    EngineJit *once = tg_calloc(1, sizeof *once);
    for (size_t r = 0; r < j->realizes.len; r++) tg_vec_push(&once->realizes, j->realizes.data[r]);
    for (size_t v = 0; v < j->var_vals.len; v++) {
      tg_vec_push(&once->var_vals, j->var_vals.data[v]);
      tg_vec_push(&once->var_names, tg_strdup(j->var_names.data[v]));
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
      if (keep[i]) {
        j->calls.data[w] = j->calls.data[i], j->call_realize.data[w++] = j->call_realize.data[i];
        continue;
      }
      tg_vec_push(&once->calls, j->calls.data[i]); /* the reference moves with it */
      tg_vec_push(&once->call_realize, j->call_realize.data[i]);
    }
    j->calls.len = j->call_realize.len = w;
    *pruned = n - w;
    st = engine_jit_freeze(once, NULL, 0, NULL, 0);
    if (st == TG_OK) st = engine_jit_run(once, NULL, NULL, NULL);
    engine_jit_free(once);
  }
  tg_vec_free(&spans);
  tg_free(ks), tg_free(first), tg_free(keep);
  return st;
}

tg_status engine_jit_freeze(EngineJit *j, UOp *const *inputs, size_t nin, const char *const *var_names, size_t nvars) {
  j->nin = nin;
  j->inputs = tg_calloc(nin + 1, sizeof *j->inputs);
  j->scratch = tg_calloc(nin + 1, sizeof *j->scratch);
  j->cur = tg_calloc(nin + 1, sizeof *j->cur);
  for (size_t i = 0; i < nin; i++) j->inputs[i] = uop_keep(inputs[i]);
  size_t n = j->calls.len;
  Kernel **ks = tg_calloc(n + 1, sizeof *ks);
  tg_status st = get_kernels(j->calls.data, n, ks);
  j->launches = tg_calloc(n + 1, sizeof *j->launches);
  j->nlaunch = n;
  for (size_t i = 0; i < n; i++) j->launches[i].graph = -1;
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    st = ks[i] ? freeze_kernel(j, (uint32_t)i, j->calls.data[i], ks[i], var_names, nvars)
               : freeze_copy(j, (uint32_t)i, j->calls.data[i]);
    if (ks[i]) j->nkernels++;
  }
  tg_free(ks);
  if (st == TG_OK && tg_getenv_int("JIT", 1) < 2) st = make_graphs(j);
  return st;
}

tg_status engine_jit_run(EngineJit *j, UOp *const *inputs, const int64_t *vals, double *kernel_seconds) {
  for (size_t i = 0; i < j->nin; i++) {
    BufEntry *e = buf_find(inputs[i]);
    if (!e) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: input %zu has no device memory (not realized)", i);
    RtBuffer *b = e->buf;
    BufEntry *c = buf_find(j->inputs[i]);
    if (c && rt_buffer_nbytes(b) != rt_buffer_nbytes(c->buf))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "args mismatch in JIT: input %zu has %zu bytes, the capture's %zu", i,
                          rt_buffer_nbytes(b), rt_buffer_nbytes(c->buf));
    for (size_t w = 0; w < j->written.len; w++) {
      if (j->written.data[w] != b) continue;
      /* the input is a buffer the list writes (an output fed back in): run on a copy (tinygrad _copy_input) */
      tg_status st = j->scratch[i] ? TG_OK : rt_buffer_new_on(rt_buffer_device(b), rt_buffer_nbytes(b), &j->scratch[i]);
      if (st == TG_OK) st = rt_transfer(j->scratch[i], 0, b, 0, rt_buffer_nbytes(b));
      if (st != TG_OK) return st;
      b = j->scratch[i];
      break;
    }
    j->cur[i] = b;
  }
  for (size_t p = 0; p < j->patches.len; p++) {
    const JitPatch *q = &j->patches.data[p];
    JitLaunch *l = &j->launches[q->launch];
    if (q->arg >= 0) {
      uint64_t addr = rt_buffer_addr(j->cur[q->input]);
      l->dirty |= l->bufs[q->arg] != addr;
      l->bufs[q->arg] = addr;
    } else if (q->arg == -1) {
      l->src = j->cur[q->input];
    } else {
      l->dst = j->cur[q->input];
    }
  }
  for (size_t p = 0; p < j->var_patches.len; p++) {
    const JitVarPatch *q = &j->var_patches.data[p];
    JitLaunch *l = &j->launches[q->launch];
    l->dirty |= l->vals[q->arg] != (long long)vals[q->var];
    l->vals[q->arg] = (long long)vals[q->var];
  }
  bool timed = tg_debug_level() >= 2 || kernel_seconds;
  for (size_t i = 0; i < j->nlaunch; i++) {
    JitLaunch *l = &j->launches[i];
    double sec = 0;
    tg_status st = TG_OK;
    if (l->graph >= 0) { /* a graph: its changed nodes updated, then launched whole */
      const JitGraph *g = &j->graphs.data[l->graph];
      long from_template = 0;
      for (uint32_t k = 0; k < g->n && st == TG_OK; k++) {
        JitLaunch *m = &j->launches[g->first + k];
        if (m->dirty) {
          int64_t grid[3];
          bool empty = false;
          st = m->k->sym_grid ? kernel_grid(m->k, m->vals, grid, &empty) : TG_OK;
          if (st == TG_OK) st = rt_graph_set(g->g, k, m->bufs, m->vals, m->k->sym_grid ? grid : NULL);
        }
        if (st == TG_OK) m->dirty = false;
        from_template += m->k->from_template;
      }
      if (st == TG_OK) st = rt_graph_launch(g->g, timed ? &sec : NULL);
      if (st != TG_OK) return st;
      kernel_count += g->n;
      stats.launches += g->n;
      stats.template_launches += from_template;
      if (kernel_seconds) *kernel_seconds += sec;
      if (tg_debug_level() >= 2) {
        char name[64];
        snprintf(name, sizeof name, "<batched %u>", g->n);
        double flops = 0;
        size_t bytes = 0;
        for (uint32_t k = 0; k < g->n; k++) flops += j->launches[g->first + k].k->flops, bytes += j->launches[g->first + k].bytes;
        printf("\033[35m");
        print_debug_line(rt_device_name(l->k->dev), name, 0, sec, flops, bytes);
        printf("\033[0m");
      }
      i += g->n - 1;
      continue;
    }
    if (l->k) {
      int64_t grid[3];
      bool empty;
      st = kernel_grid(l->k, l->vals, grid, &empty);
      if (st == TG_OK && !empty)
        st = rt_device_launch(l->k->dev, l->k->prog, l->bufs, l->vals, l->k->nparams, grid, l->k->local,
                              timed ? &sec : NULL);
    } else {
      struct timespec t0, t1;
      if (timed) clock_gettime(CLOCK_MONOTONIC, &t0);
      st = rt_transfer(l->dst, l->doff, l->src, l->soff, l->nbytes);
      if (st == TG_OK && timed) st = rt_device_synchronize(rt_buffer_device(l->dst));
      if (timed) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
      }
    }
    if (st != TG_OK) return st;
    kernel_count++;
    if (l->k) stats.launches++, stats.template_launches += l->k->from_template;
    if (kernel_seconds) *kernel_seconds += sec;
    if (tg_debug_level() >= 2) {
      /* tinygrad prints replayed kernels in magenta */
      printf("\033[35m");
      print_debug_line(l->k ? rt_device_name(l->k->dev) : rt_device_name(rt_buffer_device(l->dst)),
                       l->k ? l->k->name : "copy (JIT)", l->k ? l->k->nparams : 2, sec, l->k ? l->k->flops : 0, l->bytes);
      printf("\033[0m");
    }
  }
  return TG_OK;
}

tg_status engine_realize(UOp *const *roots, size_t n, UOp **out) { return engine_realize_assigns(roots, n, out, NULL); }

tg_status engine_realize_assigns(UOp *const *roots, size_t n, UOp **out, UOpMap *assigned) {
  UOpScope sc = uop_scope_begin();
  UOp *sink = uop_sink(roots, n);
  SchedResult res;
  memset(&res, 0, sizeof res);
  tg_status st = sched_linear(sink, new_buffer_cb, NULL, &res);
  if (st != TG_OK) {
    uop_scope_end(sc);
    return st;
  }
  st = sched_memory_plan(&res, new_buffer_cb, NULL);
  if (st != TG_OK) {
    sched_result_free(&res);
    uop_scope_end(sc);
    return st;
  }
  UOp *linear = res.linear;
  if (capturing) {
    capture_record(capturing, &res); /* a JIT capture: recorded, run later as one frozen list (jit.c) */
  } else {
    Kernel **ks = tg_calloc(linear->nsrc + 1, sizeof *ks);
    st = get_kernels(linear->src, linear->nsrc, ks);
    if (st == TG_OK) st = check_values(&res, ks, linear->nsrc);
    for (uint32_t i = 0; i < linear->nsrc && st == TG_OK; i++)
      st = ks[i] ? run_call(linear->src[i], ks[i], &res) : run_copy(linear->src[i]);
    tg_free(ks);
  }
  UOpVec kept = {0};
  if (st == TG_OK) {
    for (size_t i = 0; i < n; i++) out[i] = uop_keep(sched_apply_map(&res, roots[i]));
    for (size_t j = 0; assigned && j < res.nmap; j++) {
      /* assigns, and CONTIGUOUS values realized inside the graph: a lazy handle that holds one (a rand tensor whose
       * counter assign just ran) must read the computed buffer, not recompute it (tinygrad applies the whole map) */
      if (res.map_from[j]->op != TG_OP_AFTER && res.map_from[j]->op != TG_OP_CONTIGUOUS) continue;
      uopmap_put(assigned, res.map_from[j], res.map_to[j]);
      tg_vec_push(&kept, uop_keep(res.map_from[j]));
      tg_vec_push(&kept, uop_keep(res.map_to[j]));
    }
  }
  sched_result_free(&res);
  uop_scope_end(sc);
  if (st == TG_OK)
    for (size_t i = 0; i < n; i++) uop_drop(out[i]); /* back to the caller's scope */
  for (size_t i = 0; i < kept.len; i++) uop_drop(kept.data[i]);
  tg_vec_free(&kept);
  return st;
}
