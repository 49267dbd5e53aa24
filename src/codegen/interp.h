/* interp.h — a plain-C interpreter of linearized kernels (the LINEAR from cg_linearize): the oracle the tests
 * compare compiled kernels against. It runs the list as the rendered C would: loops from RANGE/END, IF/ENDIF,
 * loads and stores into host memory, every ALU op at every scalar dtype (float16/bfloat16 through dtype.h's
 * conversions, computed as the C renderer's code would compute them), register accumulators (BUFFER in REG space).
 *
 * Arguments follow the kernel's parameter slots (render_params): bufs[slot] is the host memory of a buffer PARAM,
 * vals[slot] the value of a Variable PARAM (core_id, user Variables). */
#ifndef TG_INTERP_H
#define TG_INTERP_H

#include "../uop/uop.h"

/* Run the kernel once (one core_id: pass it in vals like any Variable). nparams must cover every slot.
 * TG_OK, or an error status with tg_last_error() set for a kernel it cannot run (an op it does not know, an
 * out-of-bounds access on a buffer of known size, integer division by zero). */
tg_status interp_run(UOp *linear, void *const *bufs, const int64_t *vals, size_t nparams);
/* The same with an explicit launch shape: grid blocks of block threads (a flat-id kernel regrouped, render.h
 * render_flat_ids). */
tg_status interp_run_launch(UOp *linear, void *const *bufs, const int64_t *vals, size_t nparams, const int64_t grid[3],
                            const int64_t block[3]);

#endif
