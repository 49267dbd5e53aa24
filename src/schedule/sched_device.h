/* sched_device.h — what the scheduler asks about a device (kept apart from sched_internal.h: its source includes
 * the renderer's header, whose names clash with the tensor shape helpers). */
#ifndef TG_SCHED_DEVICE_H
#define TG_SCHED_DEVICE_H

#include <stdbool.h>

/* The device's kernels are C for the host compiler (the CPU renderer): the CPU-only schedule adaptations
 * (earliest.c, the kernel buffer limit) apply there only. NULL or "" (no device) is not. */
bool sched_device_is_cpu(const char *device);
/* The device's renderer asks for the hinted copy `hint` (uop.h ContigHint): callify realizes a CONTIGUOUS with that
 * hint there, and drops it elsewhere. NULL or "" (no device) does not. */
bool sched_device_wants_copy(const char *device, int hint);

/* How the device runs a row fused with its row reductions (rangeify's row rule, FUSE_ROWS): 0 not well (keep
 * tinygrad's kernels), 1 any such row (the CPU renderer: a core per row, the loops one after another), 2 a row of one
 * axis whose reductions each reduce that axis only (a GPU with shared memory: the row on one block's threads,
 * codegen's gpu_row_kernel). */
int sched_device_row_fuse(const char *device);

#endif
