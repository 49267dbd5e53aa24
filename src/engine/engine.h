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
/* Copy a realized BUFFER's bytes out (nbytes must equal its size). */
tg_status engine_copyout(UOp *buffer, void *out, size_t nbytes);

/* Realize the roots (tensor-graph UOps). out[i] receives the UOp each root is now represented by: its BUFFER, or a
 * view of one (tinygrad applies the same map to every live tensor). Errors: a message naming the stage and op. */
tg_status engine_realize(UOp *const *roots, size_t n, UOp **out);
/* The same, and also what every assign in the graph became: AFTER(target, STORE) -> its target's BUFFER (or view),
 * put into *assigned (keys and values stay valid until the caller's scope ends). A handle whose graph still holds
 * one of those AFTERs must be pointed at the buffer, or the store would run again at its next realize (tinygrad
 * applies the whole map to every live tensor). */
tg_status engine_realize_assigns(UOp *const *roots, size_t n, UOp **out, UOpMap *assigned);

#endif
