/* memo.c — the schedule memo: a repeated realize of the same tensor graph over other buffers skips callify.
 *
 * The schedule cache (schedule.c) is keyed by the callified body, so every realize used to pay for callify (a rebuild
 * of the whole tensor graph with fresh output buffers, then every buffer replaced by a PARAM) and for hashing the
 * body: 40-50 us of a 66 us cache-hit realize of a small conv2d on this machine. The memo keys the tensor graph
 * itself in one walk instead: a post-order DFS over the DAG hashing each node's label (op, dtype, arg, tag: the
 * `lhash` every UOp gets when it is interned) and the walk positions of its sources. The global BUFFERs and the
 * bound Variables are the walk's leaves: a buffer is hashed without its identity (dtype, size, device and the rest of
 * its ParamArg), a bind without its value, so the key is the same whichever buffers and values the graph runs on,
 * and, since the sources are hashed by position, it still tells x+x from x+y. What callify made of a graph is a
 * function of exactly that (its structure, and its leaves' dtype, size and device), so an entry records it in terms
 * of the walk: which leaf or which fresh buffer each call argument is, the fresh buffers to make (device, dtype,
 * size), which walked node each map entry is and its new value as a template over the arguments; plus the LINEAR the
 * schedule cache gave. A hit rebuilds callify's result from that with new buffers, no rewrite and no graph copy.
 * An entry is stored only after it reproduced the callify result it was made from (every argument and map value the
 * same node), so a graph the record cannot describe keeps taking the callify path. An entry also keeps the memory
 * planner's layout of its LINEAR's intermediates (memory.c sched_plan_layout, made at its first hit): a hit's
 * intermediates are views of fresh arenas at once, with no buffer each and no second LINEAR (schedule.c).
 * SCACHE=0 turns it off with the schedule cache; SCHED_MEMO=0 turns off the memo alone; SCHED_MEMO=2 checks every
 * hit against callify and the schedule cache (schedule.c memo_verify; the quick tier passed under it). */
#include "schedule/sched_internal.h"

#include <stdio.h>

/* ---------------------------------------------------------------------------------------------------------------
 * the walk */

static uint32_t g_epoch;

static bool is_leaf(const UOp *u) { return sched_is_global_buffer(u) || uop_unbind(u, NULL, NULL); }

static uint64_t leaf_label(const UOp *u) {
  UOp *var;
  if (uop_unbind(u, &var, NULL)) return tg_hash_mix(0x62696e64, var->lhash); /* the Variable, not its value */
  ParamArg p = *u->arg.param;
  p.slot = 0; /* the buffer's identity */
  uint64_t h = tg_hash_mix(0x627566, (uint64_t)(uintptr_t)u->dtype);
  for (uint32_t i = 0; i < u->nsrc; i++) h = tg_hash_mix(h, u->src[i]->lhash); /* its size */
  return tg_hash_bytes(&p, sizeof p, h);
}

typedef struct Frame { UOp *u; uint32_t next; } Frame;

void sched_memo_walk(UOp *sink, SchedMemoWalk *w) {
  memset(w, 0, sizeof *w);
  if (++g_epoch == 0) g_epoch = 1; /* a stale mark equal to a wrapped epoch needs 2^32 walks in one process */
  uint32_t ep = g_epoch;
  UOpKey k = {0x736368656d656d6fULL, 0x6b65792e77616c6bULL};
  TG_VEC(Frame) stack = {0};
  Frame f0 = {sink, 0};
  sink->walk = ep;
  tg_vec_push(&stack, f0);
  while (stack.len) {
    Frame *t = &stack.data[stack.len - 1];
    UOp *u = t->u;
    bool leaf = is_leaf(u);
    if (!leaf && t->next < u->nsrc) {
      UOp *s = u->src[t->next++];
      if (s->walk != ep) {
        s->walk = ep;
        Frame f = {s, 0};
        tg_vec_push(&stack, f);
      }
      continue;
    }
    stack.len--;
    u->walk_idx = (uint32_t)w->nodes.len;
    tg_vec_push(&w->nodes, u);
    if (leaf) {
      tg_vec_push(&w->leaves, u);
      k.lo = tg_hash_mix(k.lo, leaf_label(u));
      k.hi = tg_hash_mix(k.hi, ~k.lo);
      continue;
    }
    k.lo = tg_hash_mix(k.lo, u->lhash);
    k.hi = tg_hash_mix(k.hi, u->lhash ^ u->nsrc);
    for (uint32_t i = 0; i < u->nsrc; i++) {
      k.lo = tg_hash_mix(k.lo, u->src[i]->walk_idx);
      k.hi = tg_hash_mix(k.hi, ~(uint64_t)u->src[i]->walk_idx);
    }
  }
  tg_vec_free(&stack);
  w->key = k;
}

void sched_memo_walk_free(SchedMemoWalk *w) {
  tg_vec_free(&w->nodes);
  tg_vec_free(&w->leaves);
}

/* ---------------------------------------------------------------------------------------------------------------
 * entries */

/* A map value as a template over the graph's inputs (the walk's leaves, then the fresh buffers): its nodes in
 * post-order, each input `arg` (>= 0), or a node rebuilt from the template's earlier nodes (src indices), or kept as
 * it is when no input is under it. A zero-copy view (CONTIGUOUS of a buffer's range) reads a leaf no kernel takes. */
typedef struct TNode { UOp *u; int32_t arg; bool varies; uint32_t nsrc; uint32_t *src; } TNode;
typedef struct Template { uint32_t n; TNode *nodes; } Template;

typedef struct NewBuf { char device[TG_NAME_MAX]; const DType *dtype; int64_t numel; } NewBuf;

typedef struct MemoEntry {
  UOpKey key, body_key; /* the walk's; the callified body's (the schedule cache's, for DEBUG's line) */
  UOp *lin;
  size_t nargs, nnew, nmap;
  int64_t *arg_src;  /* >= 0: that leaf of the walk; -1-j: fresh buffer j */
  NewBuf *newbufs;
  uint32_t *map_from; /* walk positions */
  Template *map_to;
  int plan_state;     /* the memory planner's layout of lin's intermediates: 0 not made yet, 1 made, -1 none */
  SchedPlan plan;
} MemoEntry;

#define MEMO_MAX 512
#define TEMPLATE_MAX_NODES 256
static TG_VEC(MemoEntry *) g_memo;

static void template_free(Template *t) {
  for (uint32_t i = 0; i < t->n; i++) {
    uop_drop(t->nodes[i].u);
    tg_free(t->nodes[i].src);
  }
  tg_free(t->nodes);
}

static void entry_free(MemoEntry *e) {
  if (!e) return;
  if (e->plan_state == 1) sched_plan_free(&e->plan);
  uop_drop(e->lin);
  for (size_t i = 0; i < e->nmap; i++) template_free(&e->map_to[i]);
  tg_free(e->arg_src);
  tg_free(e->newbufs);
  tg_free(e->map_from);
  tg_free(e->map_to);
  tg_free(e);
}

void sched_memo_clear(void) {
  for (size_t i = 0; i < g_memo.len; i++) entry_free(g_memo.data[i]);
  tg_vec_free(&g_memo);
}

/* The template keeps no input: a node over one is kept rebuilt over a placeholder PARAM (so an entry pins no buffer,
 * and so no device memory, of the call it was made from). */
static UOp *placeholder(const UOp *in, size_t i) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = (int64_t)i;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = in->dtype;
  snprintf(p.name, sizeof p.name, "memo.in");
  return uop_new(TG_OP_PARAM, in->dtype, NULL, 0, arg_param(&p));
}

static bool template_make(UOp *v, UOp *const *ins, size_t nins, Template *t) {
  memset(t, 0, sizeof *t);
  UOpMap idx, argi;
  uopmap_init(&idx);
  uopmap_init(&argi);
  for (size_t i = 0; i < nins; i++) uopmap_put(&argi, ins[i], (void *)(uintptr_t)(i + 1));
  UOpVec topo = {0};
  uop_toposort(v, NULL, NULL, &topo);
  bool ok = topo.len <= TEMPLATE_MAX_NODES;
  if (ok) {
    UOpScope sc = uop_scope_begin();
    UOp **ph = tg_calloc(topo.len, sizeof *ph); /* each node over placeholders */
    t->nodes = tg_calloc(topo.len, sizeof *t->nodes);
    for (size_t i = 0; i < topo.len && ok; i++) {
      UOp *u = topo.data[i];
      TNode *n = &t->nodes[t->n++];
      void **a = uopmap_get(&argi, u);
      n->arg = a ? (int32_t)((uintptr_t)*a - 1) : -1;
      n->varies = a != NULL;
      if (!a && is_leaf(u)) ok = false; /* a buffer that is not an input of the graph: not describable */
      if (!a && u->nsrc) {
        n->nsrc = u->nsrc;
        n->src = tg_malloc(u->nsrc * sizeof *n->src);
        for (uint32_t s = 0; s < u->nsrc; s++) {
          n->src[s] = (uint32_t)(uintptr_t)*uopmap_get(&idx, u->src[s]) - 1;
          n->varies |= t->nodes[n->src[s]].varies;
        }
      }
      if (a) ph[i] = placeholder(u, (size_t)n->arg);
      else if (!n->varies) ph[i] = u;
      else {
        UOp *ss[16], **src = n->nsrc <= 16 ? ss : tg_malloc(n->nsrc * sizeof *src);
        for (uint32_t s = 0; s < n->nsrc; s++) src[s] = ph[n->src[s]];
        ph[i] = uop_replace_src(u, src, n->nsrc);
        if (src != ss) tg_free(src);
      }
      n->u = a ? NULL : uop_keep(ph[i]);
      uopmap_put(&idx, u, (void *)(uintptr_t)(i + 1));
    }
    tg_free(ph);
    uop_scope_end(sc);
  }
  tg_vec_free(&topo);
  uopmap_free(&idx);
  uopmap_free(&argi);
  return ok;
}

static UOp *template_apply(const Template *t, UOp *const *args) {
  UOp *stack_tmp[32], **tmp = t->n <= 32 ? stack_tmp : tg_malloc(t->n * sizeof *tmp);
  for (uint32_t i = 0; i < t->n; i++) {
    const TNode *n = &t->nodes[i];
    if (n->arg >= 0) tmp[i] = args[n->arg];
    else if (!n->varies) tmp[i] = n->u;
    else {
      UOp *ss[16], **src = n->nsrc <= 16 ? ss : tg_malloc(n->nsrc * sizeof *src);
      for (uint32_t s = 0; s < n->nsrc; s++) src[s] = tmp[n->src[s]];
      tmp[i] = uop_replace_src(n->u, src, n->nsrc);
      if (src != ss) tg_free(src);
    }
  }
  UOp *r = tmp[t->n - 1];
  if (tmp != stack_tmp) tg_free(tmp);
  return r;
}

/* The graph's inputs, as templates index them: the walk's leaves, then the fresh buffers. Caller frees. */
static UOp **inputs(const SchedMemoWalk *w, const UOpVec *fresh) {
  UOp **ins = tg_malloc((w->leaves.len + fresh->len + 1) * sizeof *ins);
  for (size_t i = 0; i < w->leaves.len; i++) ins[i] = w->leaves.data[i];
  for (size_t i = 0; i < fresh->len; i++) ins[w->leaves.len + i] = fresh->data[i];
  return ins;
}

static MemoEntry *find(UOpKey key) {
  for (size_t i = g_memo.len; i-- > 0;)
    if (g_memo.data[i]->key.lo == key.lo && g_memo.data[i]->key.hi == key.hi) return g_memo.data[i];
  return NULL;
}

static int64_t numel_of(const UOp *b) {
  return b->nsrc && b->src[0]->op == TG_OP_CONST && b->src[0]->arg.c.kind == CK_INT ? b->src[0]->arg.c.i : -1;
}

/* Fill cr from the entry: fresh buffers from nb (or `given` ones: the self-check), arguments, map. */
static tg_status instantiate(const MemoEntry *e, const SchedMemoWalk *w, SchedNewBuffer nb, void *ctx,
                             UOp *const *given, CallifyResult *cr) {
  memset(cr, 0, sizeof *cr);
  for (size_t j = 0; j < e->nnew; j++) {
    UOp *b = given ? given[j] : nb(e->newbufs[j].device, e->newbufs[j].dtype, e->newbufs[j].numel, ctx);
    if (!b) {
      sched_callify_free(cr);
      return tg_set_error(TG_ERR_OUT_OF_MEMORY, "schedule: could not create a buffer of %lld elements",
                          (long long)e->newbufs[j].numel);
    }
    tg_vec_push(&cr->new_buffers, uop_keep(b));
  }
  for (size_t i = 0; i < e->nargs; i++) {
    int64_t s = e->arg_src[i];
    tg_vec_push(&cr->args, uop_keep(s >= 0 ? w->leaves.data[s] : cr->new_buffers.data[-1 - s]));
  }
  UOp **ins = inputs(w, &cr->new_buffers);
  for (size_t i = 0; i < e->nmap; i++) {
    tg_vec_push(&cr->map_from, uop_keep(w->nodes.data[e->map_from[i]]));
    tg_vec_push(&cr->map_to, uop_keep(template_apply(&e->map_to[i], ins)));
  }
  tg_free(ins);
  return TG_OK;
}

UOp *sched_memo_get(const SchedMemoWalk *w, UOpKey key, SchedNewBuffer nb, void *ctx, CallifyResult *cr,
                    const SchedPlan **plan, UOpKey *body_key, tg_status *st) {
  MemoEntry *e = find(key);
  *st = TG_OK;
  *plan = NULL;
  if (!e) return NULL;
  *body_key = e->body_key;
  /* the layout depends on the LINEAR alone: made at the first hit, then every hit's intermediates are arena views */
  if (e->plan_state == 0) e->plan_state = sched_plan_layout(e->lin, NULL, &e->plan) ? 1 : -1;
  if (e->plan_state == 1) *plan = &e->plan;
  *st = instantiate(e, w, nb, ctx, NULL, cr);
  return *st == TG_OK ? e->lin : NULL;
}

static bool same_result(const CallifyResult *a, const CallifyResult *b) {
  if (a->args.len != b->args.len || a->map_from.len != b->map_from.len || a->new_buffers.len != b->new_buffers.len)
    return false;
  for (size_t i = 0; i < a->args.len; i++)
    if (a->args.data[i] != b->args.data[i]) return false;
  for (size_t i = 0; i < a->map_from.len; i++)
    if (a->map_from.data[i] != b->map_from.data[i] || a->map_to.data[i] != b->map_to.data[i]) return false;
  return true;
}

void sched_memo_put(const SchedMemoWalk *w, UOpKey key, const CallifyResult *cr, UOp *lin, UOpKey body_key) {
  if (find(key)) return;
  MemoEntry *e = tg_calloc(1, sizeof *e);
  e->key = key;
  e->body_key = body_key;
  e->nargs = cr->args.len;
  e->nnew = cr->new_buffers.len;
  e->nmap = cr->map_from.len;
  e->arg_src = tg_calloc(e->nargs + 1, sizeof *e->arg_src);
  e->newbufs = tg_calloc(e->nnew + 1, sizeof *e->newbufs);
  e->map_from = tg_calloc(e->nmap + 1, sizeof *e->map_from);
  e->map_to = tg_calloc(e->nmap + 1, sizeof *e->map_to);
  bool ok = true;
  for (size_t j = 0; j < e->nnew && ok; j++) {
    UOp *b = cr->new_buffers.data[j];
    ok = sched_is_global_buffer(b) && (e->newbufs[j].numel = numel_of(b)) >= 0;
    if (!ok) break;
    snprintf(e->newbufs[j].device, sizeof e->newbufs[j].device, "%s", b->arg.param->device);
    e->newbufs[j].dtype = b->dtype;
  }
  for (size_t i = 0; i < e->nargs && ok; i++) {
    UOp *a = cr->args.data[i];
    int64_t s = INT64_MIN;
    if (a->walk == g_epoch && a->walk_idx < w->nodes.len && w->nodes.data[a->walk_idx] == a && is_leaf(a))
      for (size_t l = 0; l < w->leaves.len && s == INT64_MIN; l++)
        if (w->leaves.data[l] == a) s = (int64_t)l;
    for (size_t j = 0; j < e->nnew && s == INT64_MIN; j++)
      if (cr->new_buffers.data[j] == a) s = -1 - (int64_t)j;
    ok = s != INT64_MIN;
    e->arg_src[i] = s;
  }
  UOp **ins = inputs(w, &cr->new_buffers);
  for (size_t i = 0; i < e->nmap && ok; i++) {
    UOp *m = cr->map_from.data[i];
    ok = m->walk == g_epoch && m->walk_idx < w->nodes.len && w->nodes.data[m->walk_idx] == m;
    e->map_from[i] = ok ? m->walk_idx : 0;
    ok = ok && template_make(cr->map_to.data[i], ins, w->leaves.len + e->nnew, &e->map_to[i]);
  }
  tg_free(ins);
  if (ok) { /* the self-check: the record gives back what callify gave */
    CallifyResult again;
    UOpScope sc = uop_scope_begin();
    ok = instantiate(e, w, NULL, NULL, cr->new_buffers.data, &again) == TG_OK && same_result(&again, cr);
    sched_callify_free(&again);
    uop_scope_end(sc);
  }
  if (!ok) {
    entry_free(e);
    return;
  }
  e->lin = uop_keep(lin);
  if (g_memo.len >= MEMO_MAX) { /* bounded like the schedule cache: the oldest goes */
    entry_free(g_memo.data[0]);
    memmove(g_memo.data, g_memo.data + 1, (g_memo.len - 1) * sizeof *g_memo.data);
    g_memo.len--;
  }
  tg_vec_push(&g_memo, e);
}

size_t sched_memo_size(void) { return g_memo.len; }
