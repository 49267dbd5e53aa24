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

/* The same check over a list of nodes in order (tinygrad's type_verify of a list): a linearized program's
 * instructions, each checked once whatever the list's order. */
tg_status uop_spec_check_list(UOp *const *nodes, size_t n, SpecStage stage);

/* The SPEC env knob (tinygrad's; default 0 here, the test runner sets 1): non-zero runs the stage-boundary checks. */
bool spec_enabled(void);

/* One stage boundary of the pipeline: TG_OK without checking when SPEC is 0; otherwise uop_spec_check (or, for a
 * LINEAR at SPEC_PROGRAM, uop_spec_check_list of its instructions), the error prefixed with "SPEC: <where>: " so it
 * names the boundary ("schedule: the tensor graph", "codegen: after expansion", ...) before the stage and node. */
tg_status spec_verify(UOp *root, SpecStage stage, const char *where);

const char *spec_stage_name(SpecStage stage); /* "spec_tensor", ... */

#endif
