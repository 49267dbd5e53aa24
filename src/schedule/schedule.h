/* schedule.h — the scheduler: a tensor graph becomes an ordered list of kernel CALLs (reference sections 1 and 6;
 * tinygrad tensor.py transform_to_call and schedule/{__init__,rangeify,indexing}.py).
 *
 *   sched_linear(sink of tensor-graph roots)
 *     1. callify: every node that needs storage gets a fresh global BUFFER (CONTIGUOUS x -> AFTER(buf, STORE(buf, x))),
 *        user BUFFERs become PARAM(slot) in visit order, so the graph's key does not depend on which buffers it runs on;
 *     2. schedule cache lookup by that key (a hit skips 3-4);
 *     3. rangeify: movement ops become index math over RANGEs, the realize map decides the kernel boundaries, the
 *        fusion cost rule (remove_bufferize) recomputes cheap producers inline, STAGEs become BUFFER+STORE+END, and
 *        every STORE/END with no open ranges is cut out as a kernel: SINK(KernelInfo) over END(STORE(INDEX(PARAM, idx),
 *        value), ranges), with PARAMs and RANGEs renumbered from 0 so identical kernels are identical nodes;
 *     4. create_schedule: kernels ordered by the RAW/WAR edges of the AFTER chains (Kahn, FIFO);
 *     5. PARAMs are resolved back to the caller's BUFFERs; the intermediate BUFFERs of the schedule get fresh ones.
 *
 * The kernel ASTs are exactly tinygrad's (KernelInfo name "test": the kernel name E_/r_... is computed by codegen
 * from the lowered ranges, as tinygrad's get_program does). tests/test_schedule.c compares them node for node.
 *
 * A COPY between devices becomes a buffer on the target written by a plain copy kernel (callify), which sched_linear
 * turns into a COPY call (sched_copy_calls); the engine runs it as a device copy.
 *
 * Bound Variables are call inputs: the body (and so the cache key) holds a value-less PARAM for each, the kernels read
 * the Variable as a scalar PARAM (slot -1, its own name) and SchedResult.var_vals carries the values.
 *
 * Not supported yet (each a TG_ERR_UNSUPPORTED "not supported yet" error, never a wrong schedule): symbolic shapes,
 * multi-device (sharded) tensors, precompiled FUNCTIONs and custom kernels, partial
 * (LOCAL, PCONTIG) realization. */
#ifndef TG_SCHEDULE_H
#define TG_SCHEDULE_H

#include "uop/uop.h"

/* Makes a new global BUFFER UOp of numel elements (the engine's engine_new_buffer, or a test's). */
typedef UOp *(*SchedNewBuffer)(const char *device, const DType *dtype, int64_t numel, void *ctx);

typedef struct SchedResult {
  /* LINEAR(CALL(kernel SINK, BUFFER...), ...) in execution order. Each CALL's sources after the SINK are the global
   * BUFFERs (real ones: user inputs, outputs, intermediates) in the order of the kernel's PARAM slots. */
  UOp *linear;
  /* What the tensor graph's nodes became: map_from[i] (a root, or a CONTIGUOUS/AFTER inside the graph) is now
   * represented by map_to[i], a BUFFER or a movement-op view of one. Apply it to every live tensor. */
  size_t nmap;
  UOp **map_from, **map_to;
  /* All global BUFFERs the schedule writes that did not exist before (outputs and intermediates). */
  size_t nnew;
  UOp **new_buffers;
  /* The subset of new_buffers that only live inside this schedule (kernel outputs no tensor holds): what the memory
   * planner may pack. After sched_memory_plan: the arenas. */
  size_t nintermediate;
  UOp **intermediates;
  /* The bound Variables' values for this realize (tinygrad's var_vals): one entry per name a kernel reads. Kernels
   * take them as scalar arguments, matched by the name of their value PARAMs. */
  size_t nvars;
  char (*var_names)[TG_NAME_MAX];
  int64_t *var_vals;
  bool cache_hit; /* the kernel graph came from the schedule cache */
  bool planned;   /* sched_memory_plan replaced the intermediates by views of arenas */
} SchedResult;

/* Schedule the roots (sources of `sink`, a SINK of tensor-graph UOps). Roots that are already buffers (or views of
 * buffers, or constants) need no kernel. Every UOp in the result is kept (uop_keep) until sched_result_free.
 * Errors (an op the scheduler does not support yet, a shape it cannot infer, "bind mismatch on <name>" for two values
 * of one Variable): TG_ERR_* with tg_last_error(). */
tg_status sched_linear(UOp *sink, SchedNewBuffer new_buffer, void *ctx, SchedResult *out);
/* The value of the bound Variable `name` in this schedule; false when it has none (unbound, or not read). */
bool sched_var_value(const SchedResult *r, const char *name, int64_t *value);
void sched_result_free(SchedResult *r);

/* The memory planner (tinygrad schedule/memory.py), opt-in for the engine: the intermediates become views of one
 * int8 arena per device, BITCAST.dtype(SHRINK(arena BUFFER, CONST byte offset, CONST nbytes)), in the CALL arguments;
 * the arena (from nb) replaces them in new_buffers/intermediates. NO_MEMORY_PLANNER=1 makes it a no-op. */
tg_status sched_memory_plan(SchedResult *r, SchedNewBuffer nb, void *ctx);

/* u with the becomes map applied (tinygrad _apply_map_to_tensors for one tensor): a root that is a view of a realized
 * base (x.sum(1, keepdim=True) is RESHAPE(REDUCE)) becomes the same view of the new buffer. In the caller's scope. */
UOp *sched_apply_map(const SchedResult *r, UOp *u);

/* The kernel CALLs only (for tests and tools): the tensor-graph sink -> LINEAR of CALL(kernel SINK, PARAM-slot
 * BUFFERs) before resolution, i.e. tinygrad's create_schedule(get_kernel_graph(callified sink)). Owned by the
 * caller's scope; NULL with tg_last_error() on error. */
UOp *sched_kernels(UOp *sink);

/* tinygrad pm_copy_from_store (sched_linear applies it): every kernel over buffers on two devices that is a plain
 * copy becomes CALL(COPY(src PARAM, arg=destination device), dst, src); any other kernel over several devices is
 * tinygrad's error ("all buffers must be on the same device: [...]"), NULL with tg_last_error(). */
UOp *sched_copy_calls(UOp *lin);

/* The schedule cache (SCACHE=0 disables it): number of entries, lookups that hit / missed since start (not counted
 * with SCACHE=0), and drop them all (tests, exit). */
size_t sched_cache_size(void);
typedef struct SchedCacheStats { long hits, misses; } SchedCacheStats;
SchedCacheStats sched_cache_stats(void);
void sched_cache_clear(void);
/* Entries of the schedule memo (memo.c: a repeated graph over other buffers skips callify; SCHED_MEMO=0 turns it off;
 * sched_cache_clear drops it too). */
size_t sched_memo_size(void);

#endif
