/* engine.h — realize: the glue from a tensor graph to numbers in memory (tinygrad engine/realize.py).
 *
 * engine_realize schedules the graph (src/schedule), lowers every kernel (src/codegen), renders it with its device's
 * renderer (src/render), compiles the new kernels of the schedule in one batch per device and runs the calls through
 * the device interface (src/runtime): kernel launches and COPY calls (device copies). Device memory belongs to BUFFER UOps: a global BUFFER (ParamArg with a device, a unique
 * slot number as its identity) owns one runtime buffer, allocated on first use and released when the node dies. */
#ifndef TG_ENGINE_H
#define TG_ENGINE_H

#include "uop/uop.h"

/* A new global BUFFER UOp of `numel` elements of `dtype` on `device` ("CPU", "CUDA:1"; NULL: the default
 * device; canonicalized), with a fresh identity. No memory yet. NULL with an error for an unknown device name. */
UOp *engine_new_buffer(const char *device, const DType *dtype, int64_t numel);
/* A BUFFER filled with host data (nbytes = numel * itemsize). */
UOp *engine_buffer_from_host(const char *device, const DType *dtype, int64_t numel, const void *data);
/* A BUFFER on memory the caller owns (rt_buffer_wrap_host: a host-memory device, RT_HOST_WRAP_ALIGN-aligned):
 * release(ctx) runs when the node and every view of its buffer are gone; not called when this fails (NULL). */
UOp *engine_buffer_wrap_host(const char *device, const DType *dtype, int64_t numel, void *host,
                             void (*release)(void *ctx), void *ctx);
/* Copy a realized BUFFER's bytes out (nbytes must equal its size). */
tg_status engine_copyout(UOp *buffer, void *out, size_t nbytes);

/* Realize the roots (tensor-graph UOps). out[i] receives the UOp each root is now represented by: its BUFFER, or a
 * view of one (tinygrad applies the same map to every live tensor). Errors: a message naming the stage and op. */
tg_status engine_realize(UOp *const *roots, size_t n, UOp **out);
/* The same, and also what every assign in the graph became: AFTER(target, STORE) -> its target's BUFFER (or view),
 * and every CONTIGUOUS inside the graph -> its new buffer, put into *assigned (keys and values stay valid until the caller's scope ends). A handle whose graph still holds
 * one of those AFTERs must be pointed at the buffer, or the store would run again at its next realize (tinygrad
 * applies the whole map to every live tensor). */
tg_status engine_realize_assigns(UOp *const *roots, size_t n, UOp **out, UOpMap *assigned);

/* What the engine did since the process started: kernels made (rendered and compiled, cache misses) and kernel
 * launches (realize and JIT replay, a graph's every node; copies not counted), and how many of each came from the GEMM
 * template route (codegen/gemm_route.c). Read by tests (a route taken, kernel counts); not thread-safe. */
typedef struct EngineStats {
  long kernels_made, template_made;
  long launches, template_launches;
} EngineStats;
EngineStats engine_stats(void);

/* ---- JIT capture and replay (the engine half of tinygrad's TinyJit; src/engine/jit.c is the API) ----
 * engine_capture_begin opens a capture (error when one is open: nested JITs): from then on every realize schedules,
 * plans and applies its map as usual but records its CALLs and var_vals instead of running them, and reading a value
 * (engine_copyout) fails. engine_capture_end closes it and returns the recording. engine_jit_freeze compiles every
 * kernel and resolves every argument once (inputs: the capture's input BUFFERs, patched per run; var_names: the
 * Variables patched per run, any other bound Variable keeps its captured value). engine_jit_run launches the frozen
 * list with new input BUFFERs (realized, same sizes) and Variable values; an input that is a buffer the list writes
 * is copied first. kernel_seconds (optional) accumulates the launches' own time. */
typedef struct EngineJit EngineJit;
bool engine_capturing(void);
tg_status engine_capture_begin(void);
EngineJit *engine_capture_end(void);
tg_status engine_jit_freeze(EngineJit *j, UOp *const *inputs, size_t nin, const char *const *var_names, size_t nvars);
tg_status engine_jit_run(EngineJit *j, UOp *const *inputs, const int64_t *vals, double *kernel_seconds);
/* The pruning decision over bytes: call i touches spans[first[i] .. first[i+1]) (mem: its buffer, [off, off+n), whether
 * it writes them); keep[i] says whether it stays in the replay list (engine.c engine_jit_prune says the rule). */
typedef struct JitSpan { const void *mem; size_t off, n; bool written; } JitSpan;
void engine_prune_plan(const JitSpan *spans, const size_t *first, size_t n, const JitSpan *inputs, size_t nin,
                       bool *keep);
/* tinygrad prune_linear (before engine_jit_freeze): the recorded calls that do not depend on the inputs run once now
 * and leave the list; *pruned says how many. */
tg_status engine_jit_prune(EngineJit *j, UOp *const *inputs, size_t nin, size_t *pruned);
size_t engine_jit_kernels(const EngineJit *j); /* kernel launches in the frozen list (copies not counted) */
size_t engine_jit_calls(const EngineJit *j);   /* CALLs recorded (kernels and copies) */
size_t engine_jit_graphs(const EngineJit *j);  /* device graphs the frozen list launches (0 on the CPU, or JIT=2) */
void engine_jit_free(EngineJit *j);

#endif
