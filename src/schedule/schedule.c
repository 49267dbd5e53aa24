/* schedule.c — the scheduler's entry points (tinygrad schedule/__init__.py): create_schedule orders the kernel
 * graph's CALLs by the RAW/WAR edges of its AFTER chains (Kahn, FIFO); the schedule cache maps a callified body's
 * key to its LINEAR, so a repeated realize skips rangeify; resolution puts the caller's buffers in place of the
 * PARAMs and fresh buffers in place of the schedule's intermediates. */
#include "schedule/sched_internal.h"

#include <stdio.h>
#include <time.h>

#include "uop/spec.h"

/* ---------------------------------------------------------------------------------------------------------------
 * create_schedule */

static UOp *unwrap_src(UOp *s) {
  while (s->nsrc && s->op != TG_OP_AFTER && s->op != TG_OP_BUFFER && s->op != TG_OP_PARAM && s->op != TG_OP_MSELECT &&
         s->op != TG_OP_MSTACK)
    s = s->src[0];
  return s;
}

static bool is_kernel(const UOp *s) { return s->op == TG_OP_CALL || s->op == TG_OP_END; }

/* the kernels that write an AFTER state */
static void after_kernels(const UOp *a, UOpVec *out) {
  for (uint32_t i = 1; i < a->nsrc; i++)
    if (is_kernel(a->src[i])) tg_vec_push(out, a->src[i]);
}

static bool vec_has(const UOpVec *v, const UOp *x) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == x) return true;
  return false;
}

static bool not_kernel_body(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return !(u->op == TG_OP_SINK && u->arg.kind == ARG_KERNEL);
}

typedef struct Write { UOp *buf, *after, *prev; UOpVec kernels; } Write;
typedef struct Read { UOp *after, *kernel, *state; } Read;

typedef struct SchedGraph {
  UOpVec kernels;     /* insertion order (tinygrad's in_degree dict) */
  UOpMap index;       /* kernel -> position + 1 */
  TG_VEC(UOpVec) children;
  TG_VEC(int64_t) in_degree;
} SchedGraph;

static size_t kernel_slot(SchedGraph *g, UOp *k) {
  void **p = uopmap_get(&g->index, k);
  if (p) return (size_t)(uintptr_t)*p - 1;
  tg_vec_push(&g->kernels, k);
  UOpVec empty = {0};
  tg_vec_push(&g->children, empty);
  tg_vec_push(&g->in_degree, 0);
  uopmap_put(&g->index, k, (void *)(uintptr_t)g->kernels.len);
  return g->kernels.len - 1;
}

static void add_edge(SchedGraph *g, UOp *from, UOp *to) {
  size_t f = kernel_slot(g, from), t = kernel_slot(g, to);
  tg_vec_push(&g->children.data[f], to);
  g->in_degree.data[t]++;
}

static bool states_of(UOp *s, UOpVec *out) {
  s = unwrap_src(s);
  if (s->op != TG_OP_AFTER && s->op != TG_OP_BUFFER && s->op != TG_OP_PARAM) {
    tg_set_error(TG_ERR_RUNTIME, "schedule: input to kernel must resolve to a buffer state, not %s", uop_op_name(uop_op(s)));
    return false;
  }
  tg_vec_push(out, s);
  return true;
}

UOp *sched_create_schedule(UOp *sink) {
  SchedGraph g;
  memset(&g, 0, sizeof g);
  uopmap_init(&g.index);
  TG_VEC(Write) writes = {0};
  TG_VEC(Read) reads = {0};
  UOpVec topo = {0}, tmp = {0}, states = {0}, linear = {0};
  UOp *result = NULL;
  bool ok = true;
  uop_toposort(sink, not_kernel_body, NULL, &topo);
  for (size_t i = 0; i < topo.len && ok; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_AFTER) continue;
    UOpVec deps = {0}, kernels = {0};
    for (uint32_t k = 1; k < u->nsrc; k++) {
      UOp *s = u->src[k];
      if (is_kernel(s)) tg_vec_push(&kernels, s);
      else if (s->op == TG_OP_AFTER) tg_vec_push(&deps, s);
      else if (s->op != TG_OP_STORE) {
        tg_set_error(TG_ERR_RUNTIME, "schedule: AFTER source should be CALL, END, STORE, or AFTER, not %s", uop_op_name(uop_op(s)));
        ok = false;
      }
    }
    UOp *prev = unwrap_src(u->src[0]);
    tmp.len = 0;
    if (prev->op == TG_OP_AFTER) after_kernels(prev, &tmp);
    Write w = {sched_buf_uop(u), u, prev, {0}};
    for (size_t k = 0; k < kernels.len; k++)
      if (!vec_has(&tmp, kernels.data[k])) tg_vec_push(&w.kernels, kernels.data[k]);
    tg_vec_push(&writes, w);
    for (size_t k = 0; k < kernels.len && ok; k++) {
      UOp *kern = kernels.data[k], *call = kern->op == TG_OP_END ? kern->src[0] : kern;
      kernel_slot(&g, kern);
      states.len = 0;
      for (uint32_t j = 1; j < call->nsrc && ok; j++) ok = states_of(call->src[j], &states);
      for (size_t j = 0; j < states.len; j++) {
        Read r = {u, kern, states.data[j]};
        tg_vec_push(&reads, r);
      }
      for (size_t j = 0; j < deps.len && ok; j++) ok = states_of(deps.data[j], &states);
      for (size_t j = 0; j < states.len; j++) {
        if (states.data[j]->op != TG_OP_AFTER) continue;
        tmp.len = 0;
        after_kernels(states.data[j], &tmp);
        for (size_t t = 0; t < tmp.len; t++) add_edge(&g, tmp.data[t], kern);
      }
    }
    tg_vec_free(&deps);
    tg_vec_free(&kernels);
  }
  /* WAR: a kernel reading state S runs before a later write that supersedes S */
  for (size_t i = 0; i < reads.len && ok; i++) {
    Read *r = &reads.data[i];
    UOp *buf = sched_buf_uop(r->state);
    for (size_t j = 0; j < writes.len; j++) {
      Write *w = &writes.data[j];
      if (w->buf != buf || w->after == r->after || w->prev != r->state) continue;
      for (size_t t = 0; t < w->kernels.len; t++) {
        UOp *wk = w->kernels.data[t];
        if (wk != r->kernel && !uop_in_backward_slice(r->kernel, wk)) add_edge(&g, r->kernel, wk);
      }
    }
  }
  if (ok) {
    /* Kahn, FIFO */
    UOpVec queue = {0};
    size_t head = 0;
    for (size_t i = 0; i < g.kernels.len; i++)
      if (g.in_degree.data[i] == 0) tg_vec_push(&queue, g.kernels.data[i]);
    while (head < queue.len) {
      UOp *rk = queue.data[head++];
      UOp *k = rk->op == TG_OP_END ? rk->src[0] : rk;
      UOpVec src = {0};
      tg_vec_push(&src, k->src[0]);
      for (uint32_t j = 1; j < k->nsrc; j++) tg_vec_push(&src, sched_buf_uop(unwrap_src(k->src[j])));
      tg_vec_push(&linear, uop_new(TG_OP_CALL, DT_VOID, src.data, src.len, arg_none()));
      tg_vec_free(&src);
      UOpVec *ch = &g.children.data[kernel_slot(&g, rk)];
      for (size_t j = 0; j < ch->len; j++) {
        size_t x = kernel_slot(&g, ch->data[j]);
        if (--g.in_degree.data[x] == 0) tg_vec_push(&queue, ch->data[j]);
      }
    }
    for (size_t i = 0; i < g.kernels.len; i++)
      if (g.in_degree.data[i] != 0) ok = false;
    if (!ok) tg_set_error(TG_ERR_INVALID_ARGUMENT, "schedule: cycle detected in assign graph");
    tg_vec_free(&queue);
  }
  if (ok) result = uop_new(TG_OP_LINEAR, DT_VOID, linear.data, linear.len, arg_none());
  for (size_t i = 0; i < writes.len; i++) tg_vec_free(&writes.data[i].kernels);
  tg_vec_free(&writes);
  tg_vec_free(&reads);
  for (size_t i = 0; i < g.children.len; i++) tg_vec_free(&g.children.data[i]);
  tg_vec_free(&g.children);
  tg_vec_free(&g.in_degree);
  tg_vec_free(&g.kernels);
  uopmap_free(&g.index);
  tg_vec_free(&topo);
  tg_vec_free(&tmp);
  tg_vec_free(&states);
  tg_vec_free(&linear);
  return result;
}

/* ---------------------------------------------------------------------------------------------------------------
 * the schedule cache: callified body key -> LINEAR (PARAMs and intermediate BUFFERs unresolved) */

#define SCHED_CACHE_MAX 512
typedef struct CacheEntry { UOpKey key; UOp *linear; } CacheEntry;
static TG_VEC(CacheEntry) g_cache;
static SchedCacheStats g_cache_stats;

static UOp *cache_get(UOpKey k) {
  for (size_t i = 0; i < g_cache.len; i++)
    if (g_cache.data[i].key.lo == k.lo && g_cache.data[i].key.hi == k.hi) return g_cache.data[i].linear;
  return NULL;
}

size_t sched_cache_size(void) { return g_cache.len; }
SchedCacheStats sched_cache_stats(void) { return g_cache_stats; }

static void resolved_clear(void);

void sched_cache_clear(void) {
  for (size_t i = 0; i < g_cache.len; i++) uop_drop(g_cache.data[i].linear);
  tg_vec_free(&g_cache);
  resolved_clear();
  sched_memo_clear();
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The knobs that change which kernels a body becomes are part of its key: a later realize under other settings must
 * not reuse a schedule made under these (tests flip them within one process). */
static UOpKey with_schedule_knobs(UOpKey key) {
  static const char *const knobs[] = {"SPLIT_REDUCEOP", "REDUCEOP_SPLIT_THRESHOLD", "REDUCEOP_SPLIT_SIZE",
                                      "CPU_SPLIT_MIN_OUTPUT", "MATMUL_PACK", "MATMUL_TRANSPOSE", "MAX_KERNEL_BUFFERS",
                                      "CONTIG_HINTS", "FUSE_ROWS", "CPU_SPLIT_SMALL_FACTOR"};
  static uint64_t h, generation; /* per knob reload, not per realize */
  if (generation != tg_knobs_generation()) {
    h = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < TG_ARRAY_LEN(knobs); i++) h = tg_hash_mix(h, (uint64_t)tg_getenv_int(knobs[i], INT64_MIN));
    generation = tg_knobs_generation();
  }
  key.lo = tg_hash_mix(key.lo, h);
  key.hi = tg_hash_mix(key.hi, ~h);
  return key;
}

/* ---------------------------------------------------------------------------------------------------------------
 * tinygrad pm_copy_from_store: a kernel whose buffers are on two devices must be a plain copy,
 *   SINK(END(STORE(INDEX(dst, r), INDEX(src, r)), r))   (or INDEX(., 0) without END for one element),
 * which becomes CALL(COPY(src, arg=dst's device), dst, src): the engine runs it as a device copy. Any other kernel
 * over buffers on several devices is tinygrad's error. */

static const char *param_device(const UOp *u) {
  return (u->op == TG_OP_PARAM || u->op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
                 u->arg.param->addrspace == ADDR_GLOBAL && u->arg.param->device[0]
             ? u->arg.param->device
             : NULL;
}

/* The copy's (dst, src) PARAMs, or false when the kernel is not a plain copy. */
static bool match_copy(UOp *ast, UOp **dst, UOp **src) {
  if (ast->op != TG_OP_SINK || ast->nsrc != 1) return false;
  UOp *st = ast->src[0], *r = NULL;
  if (st->op == TG_OP_END) {
    if (st->nsrc != 2 || st->src[1]->op != TG_OP_RANGE) return false;
    r = st->src[1];
    st = st->src[0];
  }
  if (st->op != TG_OP_STORE || st->nsrc != 2) return false;
  UOp *a = st->src[0], *b = st->src[1];
  if (a->op != TG_OP_INDEX || b->op != TG_OP_INDEX || a->nsrc != 2 || b->nsrc != 2 || a->src[1] != b->src[1])
    return false;
  UOp *idx = a->src[1];
  if (r ? idx != r : !(idx->op == TG_OP_CONST && idx->arg.kind == ARG_CONST && idx->arg.c.kind == CK_INT && idx->arg.c.i == 0))
    return false;
  if (!param_device(a->src[0]) || !param_device(b->src[0]) || a->src[0]->dtype != b->src[0]->dtype) return false;
  *dst = a->src[0];
  *src = b->src[0];
  return true;
}

/* A kernel's buffers (its CALL's PARAM sources) on more than one device: the only kernels that need a look. */
static bool call_spans_devices(const UOp *call) {
  const char *first = NULL;
  for (uint32_t k = 1; k < call->nsrc; k++) {
    const char *d = param_device(call->src[k]);
    if (!d) continue;
    if (!first) first = d;
    else if (strcmp(first, d) != 0) return true;
  }
  return false;
}

UOp *sched_copy_calls(UOp *lin) {
  UOpVec calls = {0};
  bool changed = false, failed = false;
  for (uint32_t i = 0; i < lin->nsrc && !failed; i++) {
    UOp *call = lin->src[i];
    UOp *ast = call->src[0];
    if (ast->op != TG_OP_SINK || !call_spans_devices(call)) {
      tg_vec_push(&calls, call);
      continue;
    }
    const char *devs[8];
    int ndev = 0;
    UOpVec topo = {0};
    uop_toposort(ast, NULL, NULL, &topo);
    for (size_t k = 0; k < topo.len; k++) {
      const char *d = param_device(topo.data[k]);
      if (!d) continue;
      int j = 0;
      while (j < ndev && strcmp(devs[j], d) != 0) j++;
      if (j == ndev && ndev < 8) devs[ndev++] = d;
    }
    tg_vec_free(&topo);
    if (ndev < 2) {
      tg_vec_push(&calls, call);
      continue;
    }
    UOp *dst, *src;
    int64_t ds, ss;
    if (!match_copy(ast, &dst, &src) || (ds = dst->arg.param->slot) < 0 || (ss = src->arg.param->slot) < 0 ||
        ds + 1 >= (int64_t)call->nsrc || ss + 1 >= (int64_t)call->nsrc) {
      StrBuf m;
      sb_init(&m);
      for (int j = 0; j < ndev; j++) sb_printf(&m, "%s'%s'", j ? ", " : "", devs[j]);
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "all buffers must be on the same device: [%s] (move tensors with tg_to)",
                   m.s);
      sb_free(&m);
      failed = true;
      break;
    }
    UOp *copy = uop_new(TG_OP_COPY, dst->dtype, &src, 1, arg_str(dst->arg.param->device));
    UOp *cs[3] = {copy, call->src[1 + ds], call->src[1 + ss]};
    tg_vec_push(&calls, uop_new(TG_OP_CALL, DT_VOID, cs, 3, arg_none()));
    changed = true;
  }
  UOp *ret = failed ? NULL : changed ? uop_new(TG_OP_LINEAR, DT_VOID, calls.data, calls.len, arg_none()) : lin;
  tg_vec_free(&calls);
  return ret;
}

/* tinygrad's line: DEBUG>=1 when more than one kernel, DEBUG>=3 always */
static void print_scheduled(const UOp *lin, UOpKey key, double start, bool hit) {
  if (lin && ((tg_debug_level() >= 1 && lin->nsrc > 1) || tg_debug_level() >= 3)) {
    char hex[33];
    uop_key_hex(key, hex);
    hex[8] = 0;
    printf("scheduled %5u kernels in %8.2f ms | %s %s | %7zu uops in cache\n", lin->nsrc, now_ms() - start,
           hit ? " cache hit" : "CACHE MISS", hex, uop_live_count());
  }
}

static UOp *schedule_body(UOp *body, bool *hit, UOpKey *key_out) {
  double start = now_ms();
  UOpKey key = with_schedule_knobs(uop_key(body));
  if (key_out) *key_out = key;
  bool use_cache = tg_getenv_int("SCACHE", 1) != 0;
  UOp *lin = use_cache ? cache_get(key) : NULL;
  *hit = lin != NULL;
  if (use_cache) {
    if (*hit) g_cache_stats.hits++;
    else g_cache_stats.misses++;
  }
  if (!lin) {
    /* the stage boundaries tinygrad checks under SPEC: the tensor graph in, the kernel graph out of rangeify */
    UOp *kg = spec_verify(body, SPEC_TENSOR, "schedule: the tensor graph") == TG_OK ? sched_kernel_graph(body) : NULL;
    if (kg && spec_verify(kg, SPEC_KERNEL, "schedule: the kernel graph after rangeify") != TG_OK) kg = NULL;
    lin = kg ? sched_create_schedule(kg) : NULL;
  } else {
    use_cache = false; /* already there */
  }
  if (lin && use_cache) {
    /* bounded (tinygrad's is not): a loop whose graph changes every step must not grow memory; the oldest goes */
    if (g_cache.len >= SCHED_CACHE_MAX) {
      uop_drop(g_cache.data[0].linear);
      memmove(g_cache.data, g_cache.data + 1, (g_cache.len - 1) * sizeof *g_cache.data);
      g_cache.len--;
    }
    CacheEntry e = {key, uop_keep(lin)};
    tg_vec_push(&g_cache, e);
  }
  print_scheduled(lin, key, start, *hit);
  return lin;
}

/* ---------------------------------------------------------------------------------------------------------------
 * entry points */

typedef struct TestBufCtx { int64_t next; } TestBufCtx;

static UOp *placeholder_buffer(const char *device, const DType *dtype, int64_t numel, void *ctx) {
  TestBufCtx *c = ctx;
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = c->next++;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = dtype;
  p.addrspace = ADDR_GLOBAL;
  snprintf(p.device, sizeof p.device, "%s", device);
  UOp *n = sched_weak_int(numel);
  return uop_new(TG_OP_BUFFER, dtype, &n, 1, arg_param(&p));
}

UOp *sched_kernels(UOp *sink) {
  TestBufCtx bc = {1 << 20};
  CallifyResult cr;
  if (sched_callify(sink, placeholder_buffer, &bc, &cr) != TG_OK) return NULL;
  UOpScope sc = uop_scope_begin();
  bool hit;
  UOp *lin = schedule_body(cr.body, &hit, NULL);
  lin = uop_scope_end_keep(sc, lin);
  sched_callify_free(&cr);
  return lin;
}

/* The bound Variables among the call's args: the kernel-side PARAM callify gave each (p<slot>, slot -1 after kernel
 * split) and the Variable's own PARAM that replaces it in the kernel ASTs (tinygrad resolve_linear_call's binds). */
typedef struct Binds { UOpVec from, to; } Binds;

static void binds_init(Binds *b, const CallifyResult *cr) {
  memset(b, 0, sizeof *b);
  for (size_t i = 0; i < cr->args.len; i++) {
    UOp *var;
    if (!uop_unbind(cr->args.data[i], &var, NULL)) continue;
    ParamArg p = *var->arg.param;
    snprintf(p.name, sizeof p.name, "p%zu", i);
    tg_vec_push(&b->from, uop_new(TG_OP_PARAM, var->dtype, NULL, 0, arg_param(&p)));
    tg_vec_push(&b->to, uop_new(TG_OP_PARAM, var->dtype, NULL, 0, var->arg));
  }
}

static void binds_free(Binds *b) {
  tg_vec_free(&b->from);
  tg_vec_free(&b->to);
}

/* Kernel ASTs with the binds in place, memoized by SINK(ast, from0, to0, from1, to1, ...): a new value of the same
 * Variables (the common case: a loop re-binding them) costs one lookup instead of a rewrite of every kernel.
 * `used` has bit i set when binds.from[i] occurs in the AST (only the first 64 binds are tracked). */
#define RESOLVED_MAX 4096
typedef struct Resolved { UOp *sig, *ast; uint64_t used; } Resolved;
static TG_VEC(Resolved *) g_resolved;
static UOpMap g_resolved_index;

static void resolved_clear(void) {
  for (size_t i = 0; i < g_resolved.len; i++) {
    uop_drop(g_resolved.data[i]->sig);
    uop_drop(g_resolved.data[i]->ast);
    tg_free(g_resolved.data[i]);
  }
  tg_vec_free(&g_resolved);
  uopmap_free(&g_resolved_index);
}

static const Resolved *resolve_ast(UOp *ast, const Binds *b) {
  UOpVec sig = {0};
  tg_vec_push(&sig, ast);
  for (size_t i = 0; i < b->from.len; i++) {
    tg_vec_push(&sig, b->from.data[i]);
    tg_vec_push(&sig, b->to.data[i]);
  }
  UOp *key = uop_sink(sig.data, sig.len);
  tg_vec_free(&sig);
  void **hit = uopmap_get(&g_resolved_index, key);
  if (hit) return *hit;
  if (g_resolved.len >= RESOLVED_MAX) resolved_clear(); /* bounded: a loop over ever new Variables must not grow */
  Resolved *r = tg_calloc(1, sizeof *r);
  UOpVec topo = {0};
  uop_toposort(ast, NULL, NULL, &topo);
  for (size_t k = 0; k < topo.len; k++)
    for (size_t i = 0; i < b->from.len && i < 64; i++)
      if (topo.data[k] == b->from.data[i]) r->used |= (uint64_t)1 << i;
  tg_vec_free(&topo);
  r->sig = uop_keep(key);
  r->ast = uop_keep(uop_substitute(ast, b->from.data, b->to.data, b->from.len));
  tg_vec_push(&g_resolved, r);
  uopmap_put(&g_resolved_index, key, r);
  return r;
}

static UOp *resolve_call(UOp *call, const CallifyResult *cr, const Binds *binds, UOpMap *fresh, SchedNewBuffer nb,
                         void *ctx, SchedResult *out, uint64_t *used) {
  UOpVec src = {0};
  if (binds->from.len) {
    const Resolved *r = resolve_ast(call->src[0], binds);
    tg_vec_push(&src, r->ast);
    *used |= r->used;
  } else {
    tg_vec_push(&src, call->src[0]);
  }
  UOp *ret = NULL;
  for (uint32_t i = 1; i < call->nsrc; i++) {
    UOp *s = call->src[i];
    if (s->op == TG_OP_PARAM && s->arg.kind == ARG_PARAM && s->arg.param->slot >= 0) {
      TG_ASSERT((size_t)s->arg.param->slot < cr->args.len, "");
      s = cr->args.data[s->arg.param->slot];
    } else if (sched_is_global_buffer(s)) {
      void **p = uopmap_get(fresh, s);
      if (p) {
        s = *p;
      } else {
        Shape sh;
        int64_t numel = s->nsrc && uop_as_shape(s->src[0], &sh) ? shape_numel(&sh) : 1;
        UOp *nbuf = nb(s->arg.param->device[0] ? s->arg.param->device : tg_default_device(), s->dtype, numel, ctx);
        if (!nbuf) goto done;
        uopmap_put(fresh, s, nbuf);
        out->new_buffers = tg_realloc(out->new_buffers, (out->nnew + 1) * sizeof(UOp *));
        out->new_buffers[out->nnew++] = uop_keep(nbuf);
        out->intermediates = tg_realloc(out->intermediates, (out->nintermediate + 1) * sizeof(UOp *));
        out->intermediates[out->nintermediate++] = nbuf;
        s = nbuf;
      }
    }
    tg_vec_push(&src, s);
  }
  ret = uop_new(TG_OP_CALL, DT_VOID, src.data, src.len, arg_none());
done:
  tg_vec_free(&src);
  return ret;
}

/* A memo hit's intermediates as views of fresh arenas, laid out as the memory planner did at the entry's first hit
 * (sched_memory_plan then has nothing left to do): no buffer per intermediate, no second LINEAR. */
static tg_status planned_intermediates(const SchedPlan *p, UOpMap *fresh, SchedNewBuffer nb, void *ctx, SchedResult *out) {
  UOp *arenas[SCHED_PLAN_LANES];
  for (int d = 0; d < p->nlanes; d++) {
    arenas[d] = nb(p->device[d][0] ? p->device[d] : tg_default_device(), DT_INT8, p->size[d], ctx);
    if (!arenas[d])
      return tg_set_error(TG_ERR_OUT_OF_MEMORY, "memory planner: could not create an arena of %lld bytes", (long long)p->size[d]);
    out->new_buffers = tg_realloc(out->new_buffers, (out->nnew + 1) * sizeof(UOp *));
    out->new_buffers[out->nnew++] = uop_keep(arenas[d]);
    out->intermediates = tg_realloc(out->intermediates, (out->nintermediate + 1) * sizeof(UOp *));
    out->intermediates[out->nintermediate++] = arenas[d];
  }
  for (size_t i = 0; i < p->n; i++) uopmap_put(fresh, p->bufs[i], sched_plan_view(arenas[p->lane[i]], p, i));
  sched_plan_print(p, arenas);
  out->planned = true;
  return TG_OK;
}

/* Does a kernel of the schedule read the Variable PARAM `var`? (binds past the 64 that resolve_ast tracks) */
static bool var_used(UOp *const *calls, size_t n, UOp *var) {
  bool used = false;
  for (size_t i = 0; i < n && !used; i++) used = uop_in_backward_slice(calls[i]->src[0], var);
  return used;
}

/* tinygrad create_linear_with_vars: name -> value for every bound Variable in the call args whose name a kernel
 * reads; two values for such a name are an error. used: bit j set when bind j (in args order) occurs in a kernel. */
static tg_status collect_var_vals(const CallifyResult *cr, const Binds *binds, uint64_t used, UOp *const *calls,
                                  size_t ncalls, SchedResult *out) {
  const char **used_names = tg_calloc(binds->to.len + 1, sizeof *used_names);
  size_t nused = 0;
  for (size_t j = 0; j < binds->to.len; j++)
    if (j < 64 ? (used >> j & 1) != 0 : var_used(calls, ncalls, binds->to.data[j]))
      used_names[nused++] = binds->to.data[j]->arg.param->name;
  tg_status st = TG_OK;
  for (size_t i = 0; i < cr->args.len && st == TG_OK; i++) {
    UOp *var;
    int64_t val, old;
    if (!uop_unbind(cr->args.data[i], &var, &val)) continue;
    const char *name = var->arg.param->name;
    bool is_used = false;
    for (size_t k = 0; k < nused && !is_used; k++) is_used = strcmp(used_names[k], name) == 0;
    if (!is_used) continue;
    if (sched_var_value(out, name, &old)) {
      if (old != val)
        st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "bind mismatch on %s, %lld != %lld", name, (long long)old,
                          (long long)val);
      continue;
    }
    out->var_names = tg_realloc(out->var_names, (out->nvars + 1) * sizeof *out->var_names);
    out->var_vals = tg_realloc(out->var_vals, (out->nvars + 1) * sizeof *out->var_vals);
    snprintf(out->var_names[out->nvars], sizeof out->var_names[out->nvars], "%s", name);
    out->var_vals[out->nvars++] = val;
  }
  tg_free(used_names);
  return st;
}

/* SCHED_MEMO=2 (debugging): every memo hit is checked against callify (given the hit's fresh buffers, in order) and
 * the schedule cache; a difference is an error of the realize. */
typedef struct SameBuffers { const CallifyResult *hit; size_t next; } SameBuffers;
static UOp *same_buffer(const char *device, const DType *dtype, int64_t numel, void *ctx) {
  TG_UNUSED(device), TG_UNUSED(dtype), TG_UNUSED(numel);
  SameBuffers *sb = ctx;
  return sb->next < sb->hit->new_buffers.len ? sb->hit->new_buffers.data[sb->next++] : NULL;
}

static tg_status memo_verify(UOp *sink, const CallifyResult *hit, UOp *lin) {
  SameBuffers sb = {hit, 0};
  CallifyResult cr;
  tg_status st = sched_callify(sink, same_buffer, &sb, &cr);
  if (st != TG_OK) return st;
  bool same = cr.args.len == hit->args.len && cr.map_from.len == hit->map_from.len;
  for (size_t i = 0; same && i < cr.args.len; i++) same = cr.args.data[i] == hit->args.data[i];
  for (size_t i = 0; same && i < cr.map_from.len; i++)
    same = cr.map_from.data[i] == hit->map_from.data[i] && cr.map_to.data[i] == hit->map_to.data[i];
  bool h;
  UOp *l2 = same ? schedule_body(cr.body, &h, NULL) : NULL;
  if (l2) l2 = sched_copy_calls(l2);
  same = same && l2 == lin;
  sched_callify_free(&cr);
  return same ? TG_OK : tg_set_error(TG_ERR_RUNTIME, "schedule memo: a hit differs from callify (SCHED_MEMO=2)");
}

tg_status sched_linear(UOp *sink, SchedNewBuffer nb, void *ctx, SchedResult *out) {
  memset(out, 0, sizeof *out);
  if (!sink || sink->op != TG_OP_SINK) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "sched_linear: expected a SINK");
  CallifyResult cr;
  tg_status st = TG_OK;
  /* the memo (memo.c): a graph scheduled before, over any buffers, skips callify and the body's key */
  bool memo = tg_getenv_int("SCACHE", 1) != 0 && tg_getenv_int("SCHED_MEMO", 1) != 0;
  double start = now_ms();
  SchedMemoWalk walk;
  UOpKey mkey = {0, 0};
  UOp *mlin = NULL;
  const SchedPlan *mplan = NULL;
  UOpKey bkey = mkey; /* the body's key (the schedule cache's), printed by DEBUG as on a miss */
  if (memo) {
    sched_memo_walk(sink, &walk);
    mkey = with_schedule_knobs(walk.key);
    /* a value without a device is stored on the default device: a record made under another default is not reused */
    const char *dflt = tg_default_device();
    mkey.hi = tg_hash_bytes(dflt, strlen(dflt), mkey.hi);
    mlin = sched_memo_get(&walk, mkey, nb, ctx, &cr, &mplan, &bkey, &st);
  }
  if (!mlin && st == TG_OK) st = sched_callify(sink, nb, ctx, &cr);
  if (st != TG_OK) {
    if (memo) sched_memo_walk_free(&walk);
    return st;
  }
  UOpScope sc = uop_scope_begin();
  bool hit = false;
  UOp *lin = mlin;
  if (mlin) {
    hit = true;
    g_cache_stats.hits++;
    print_scheduled(lin, bkey, start, true);
    if (tg_getenv_int("SCHED_MEMO", 1) == 2) st = memo_verify(sink, &cr, mlin);
  } else {
    lin = cr.args.len || cr.body->nsrc ? schedule_body(cr.body, &hit, &bkey)
                                       : uop_new(TG_OP_LINEAR, DT_VOID, NULL, 0, arg_none());
    if (lin) lin = sched_copy_calls(lin);
    if (lin && memo) sched_memo_put(&walk, mkey, &cr, lin, bkey);
  }
  if (memo) sched_memo_walk_free(&walk);
  if (!lin) {
    uop_scope_end(sc);
    sched_callify_free(&cr);
    return TG_ERR_RUNTIME;
  }
  out->new_buffers = tg_malloc(sizeof(UOp *) * (cr.new_buffers.len + 1));
  for (size_t i = 0; i < cr.new_buffers.len; i++) out->new_buffers[out->nnew++] = uop_keep(cr.new_buffers.data[i]);
  UOpMap fresh;
  uopmap_init(&fresh);
  if (mlin && mplan && !tg_getenv_int("NO_MEMORY_PLANNER", 0)) st = planned_intermediates(mplan, &fresh, nb, ctx, out);
  UOpVec calls = {0};
  Binds binds;
  binds_init(&binds, &cr);
  uint64_t used = 0;
  for (uint32_t i = 0; i < lin->nsrc && st == TG_OK; i++) {
    UOp *c = resolve_call(lin->src[i], &cr, &binds, &fresh, nb, ctx, out, &used);
    if (!c) st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "schedule: could not create an intermediate buffer");
    else tg_vec_push(&calls, c);
  }
  uopmap_free(&fresh);
  if (st == TG_OK && binds.from.len) st = collect_var_vals(&cr, &binds, used, calls.data, calls.len, out);
  binds_free(&binds);
  if (st == TG_OK) out->linear = uop_keep(uop_new(TG_OP_LINEAR, DT_VOID, calls.data, calls.len, arg_none()));
  tg_vec_free(&calls);
  uop_scope_end(sc);
  out->cache_hit = hit;
  out->nmap = cr.map_from.len;
  out->map_from = tg_malloc(sizeof(UOp *) * (out->nmap + 1));
  out->map_to = tg_malloc(sizeof(UOp *) * (out->nmap + 1));
  for (size_t i = 0; i < out->nmap; i++) {
    out->map_from[i] = uop_keep(cr.map_from.data[i]);
    out->map_to[i] = uop_keep(cr.map_to.data[i]);
  }
  sched_callify_free(&cr);
  if (st != TG_OK) sched_result_free(out);
  return st;
}

bool sched_var_value(const SchedResult *r, const char *name, int64_t *value) {
  for (size_t i = 0; i < r->nvars; i++)
    if (strcmp(r->var_names[i], name) == 0) {
      *value = r->var_vals[i];
      return true;
    }
  return false;
}

UOp *sched_apply_map(const SchedResult *r, UOp *u) {
  for (size_t i = r->nmap; i-- > 0;) /* a root the map has (the common case): no walk of its graph (the last wins, */
    if (r->map_from[i] == u) return r->map_to[i]; /* as in uop_substitute's map) */
  return r->nmap ? uop_substitute(u, r->map_from, r->map_to, r->nmap) : u;
}

void sched_result_free(SchedResult *r) {
  uop_drop(r->linear);
  for (size_t i = 0; i < r->nmap; i++) {
    uop_drop(r->map_from[i]);
    uop_drop(r->map_to[i]);
  }
  for (size_t i = 0; i < r->nnew; i++) uop_drop(r->new_buffers[i]);
  tg_free(r->map_from);
  tg_free(r->map_to);
  tg_free(r->new_buffers);
  tg_free(r->intermediates);
  tg_free(r->var_names);
  tg_free(r->var_vals);
  memset(r, 0, sizeof *r);
}
