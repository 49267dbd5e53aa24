/* sched_internal.h — what the scheduler's files share: node properties tinygrad computes on the fly (device, base,
 * buf_uop, open ranges), the STAGE arg encoding, the stage entry points. Not part of the public API. */
#ifndef TG_SCHED_INTERNAL_H
#define TG_SCHED_INTERNAL_H

#include "schedule/schedule.h"
#include "schedule/sched_device.h"
#include "uop/shape.h"
#include "uop/pattern.h"

#define SCHED_MAX_IDX 32 /* most index sources of one INDEX/STAGE (tensor dims + 1) */

/* STAGE arg (tinygrad BufferizeOpts): an ARG_PARAM whose device/addrspace are the STAGE's, and whose slot is 1 when
 * the buffer may be removed by the fusion cost rule, 0 when it must stay. */
UOp *sched_stage(UOp *src, UOp *const *ranges, size_t n, const char *device, AddrSpace as, bool removable);
bool sched_stage_removable(const UOp *stage);
UOp *sched_stage_set_row(UOp *stage, bool row); /* mark a removable stage as a row stage (rangeify.c's row rule) */
bool sched_stage_row(const UOp *stage);
AddrSpace sched_stage_addrspace(const UOp *stage);

/* Node properties (tinygrad UOp.device, .base, .buf_uop, has_buffer_identity, is_virtual). */
const char *sched_device(UOp *u); /* NULL when the value has no device (a constant, index math) */
UOp *sched_base(UOp *u);          /* strip movement ops, DETACH, CONTIGUOUS_BACKWARD, CUSTOM_GRAD */
UOp *sched_buf_uop(UOp *u);
bool sched_is_global_buffer(const UOp *u); /* BUFFER with a ParamArg in GLOBAL memory (not a Variable) */

/* Open ranges of u (tinygrad UOp.ranges): RANGE nodes in first-seen order, minus the ones END/REDUCE/STAGE close. */
void sched_ranges(UOp *u, UOpVec *out);
bool sched_in_ranges(UOp *u, const UOp *range);

/* Small constructors in tinygrad's forms. */
UOp *sched_index(UOp *buf, UOp *const *idx, size_t n);  /* INDEX(buf, idx...) of buf's dtype */
UOp *sched_end(UOp *x, UOp *const *ranges, size_t n);   /* END(x, ranges) or x when there are none */
UOp *sched_weak_int(int64_t v);                          /* CONST weakint */
/* A node of `op`/`dt` with u's arg and sources, source i replaced by s (any number of sources). */
UOp *sched_rebuild(const UOp *u, TgOp op, const DType *dt, uint32_t i, UOp *s);
int sched_range_cmp(const UOp *a, const UOp *b);        /* order of RANGE args (axis id, subs, type) */

/* Stages (each returns the new graph in the caller's scope, or NULL with tg_last_error set). */
typedef struct CallifyResult {
  UOp *body;         /* SINK of AFTERs over PARAMs */
  UOpVec args;       /* the buffers the PARAM slots stand for */
  UOpVec map_from, map_to;
  UOpVec new_buffers;
} CallifyResult;
tg_status sched_callify(UOp *sink, SchedNewBuffer nb, void *nbctx, CallifyResult *out);
void sched_callify_free(CallifyResult *r);

/* The memory planner's layout (memory.c) of a LINEAR's intermediates (`inter`, or NULL: every global BUFFER among the
 * CALL arguments, as in a schedule before resolution): per buffer its lane (device), byte offset and size; per lane
 * the arena's size. false when there is nothing to plan (or too many devices). */
#define SCHED_PLAN_LANES 16
typedef struct SchedPlan {
  size_t n;
  UOp **bufs;
  int32_t *lane;
  int64_t *off, *nbytes;
  int nlanes;
  const char *device[SCHED_PLAN_LANES]; /* the buffers' own device names (in `lin`, which must outlive the plan) */
  int64_t size[SCHED_PLAN_LANES];
  int64_t before; /* bytes the buffers would take unplanned (for DEBUG's line) */
} SchedPlan;
bool sched_plan_layout(UOp *lin, const UOpMap *inter, SchedPlan *p);
void sched_plan_free(SchedPlan *p);
UOp *sched_plan_view(UOp *arena, const SchedPlan *p, size_t i); /* BITCAST(SHRINK(arena, off, nbytes)) of buffer i */
void sched_plan_print(const SchedPlan *p, UOp *const *arenas); /* DEBUG>=1: "memory reduced from ..." */

/* The schedule memo (memo.c): the tensor graph's key from one walk (buffers and bound values abstracted), and per key
 * what callify made of it and the LINEAR, so a repeated realize skips callify and the body's key. */
typedef struct SchedMemoWalk {
  UOpKey key;
  UOpVec nodes;  /* post-order */
  UOpVec leaves; /* global BUFFERs and binds, in walk order */
} SchedMemoWalk;
void sched_memo_walk(UOp *sink, SchedMemoWalk *w);
void sched_memo_walk_free(SchedMemoWalk *w);
/* A hit: cr filled as callify would (body NULL; fresh buffers from nb) and the LINEAR returned (kept by the memo),
 * with the memory planner's layout of its intermediates (NULL: none) and the body's key it was recorded with. NULL on
 * a miss (st TG_OK) or an error (st set). */
UOp *sched_memo_get(const SchedMemoWalk *w, UOpKey key, SchedNewBuffer nb, void *ctx, CallifyResult *cr,
                    const SchedPlan **plan, UOpKey *body_key, tg_status *st);
/* Record callify's result cr, the LINEAR and the body's key for the graph of walk w (w must be the latest walk). */
void sched_memo_put(const SchedMemoWalk *w, UOpKey key, const CallifyResult *cr, UOp *lin, UOpKey body_key);
void sched_memo_clear(void);

UOp *sched_earliest_rewrites(UOp *sink);
UOp *sched_run_rangeify(UOp *sink);
/* The movement op of x applied to index expressions (tinygrad apply_movement_op): in[...] of x's input from the
 * output ranges rngs. Returns false on an unsupported op. */
bool sched_apply_movement(UOp *x, const SymShape *in_shape, UOp *const *rngs, size_t nr, UOp **out, size_t *nout);
UOp *sched_apply_reshape(const Shape *in_shape, const Shape *out_shape, UOp *const *rngs, size_t nr, UOp **out);
const RuleSet *sched_pm_reduce_simplify(void); /* reduce_unparented + reduce_collapse (reduce_collapse.c) */
UOp *sched_cleanup(UOp *sink);          /* symbolic + reduce simplify + const buffer folding + remove_bufferize */
UOp *sched_limit_bufs(UOp *sink);       /* materialize inputs where a kernel would read too many buffers */
UOp *sched_add_buffers(UOp *sink);      /* STAGE -> BUFFER + STORE + END, wrapped in AFTER */
UOp *sched_split_kernels(UOp *sink);    /* STORE/END without open ranges -> CALL(SINK(KernelInfo), buffers) */
UOp *sched_create_schedule(UOp *sink);  /* RAW/WAR toposort of the kernel graph -> LINEAR */
UOp *sched_kernel_graph(UOp *sink);     /* earliest .. split_kernels */

#endif
