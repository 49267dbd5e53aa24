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
