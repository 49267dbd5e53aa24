/* spec.h — the IR's contract, checked at stage boundaries (tinygrad's uop/spec.py and type_verify).
 *
 * Each stage has its own set of legal node forms:
 *   SPEC_TENSOR   tensor graphs: movement ops, REDUCE with its (op, axes) arg, BUFFERs, Variables and their binds, ...
 *   SPEC_KERNEL   the kernel graph after splitting: CALLs of kernel SINKs, PARAMs, BUFFERs, AFTER chains, binds
 *   SPEC_PROGRAM  lowered kernels: LOAD/STORE through INDEX, no weak dtypes, no movement ops, no Invalid
 *   SPEC_FULL     the union used while codegen runs (tensor + program + intermediate forms)
 * uop_spec_check walks the graph (sources first) and reports the first node no rule allows. */
#ifndef TG_SPEC_H
#define TG_SPEC_H

#include "uop.h"

typedef enum { SPEC_TENSOR, SPEC_KERNEL, SPEC_PROGRAM, SPEC_FULL } SpecStage;

/* TG_OK when every node of the graph under root is legal at `stage`. Otherwise TG_ERR_INVALID_ARGUMENT with
 * tg_last_error() naming the stage, the node's position in the toposort, its op, dtype, sources (op and dtype of each)
 * and arg, and what is wrong. Never aborts on a malformed graph. */
tg_status uop_spec_check(UOp *root, SpecStage stage);

/* The SPEC env knob (default 1): 0 turns the stage-boundary checks off. Read once. */
bool spec_enabled(void);

const char *spec_stage_name(SpecStage stage); /* "spec_tensor", ... */

#endif
