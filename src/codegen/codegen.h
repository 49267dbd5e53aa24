/* codegen.h — the codegen stage: a kernel AST (a SINK as the scheduler makes it, tinygrad's form: STORE/END over
 * RANGEs, INDEX into PARAMs, REDUCE over ranges) lowered to the SINK the linearizer takes, as tinygrad's
 * full_rewrite_to_sink does for the CPU (Clang) renderer (reference section 7.1):
 *
 *   load collapse -> split ranges -> initial symbolic -> simplify ranges -> opts (opt.c: the AST's opts_to_apply,
 *   else the hand-coded heuristic, nothing under NOOPT; BEAM hands its result in as opts_to_apply) -> postopt
 *   symbolic (where-on-load, POW) -> expander (UPCAST/UNROLL ranges -> lanes; the lanes of a float32 sum along a
 *   vector axis become one vector accumulator, not tinygrad's) -> reduce lowering (REG accumulators, lanes of one reduce
 *   in one loop) -> gpudims (THREAD -> core_id) -> add loads -> indexing simplify -> memory coalescing (vector
 *   loads/stores via SHRINK, up to the CPU's register width) -> vectorize lanes (a vector accumulator's addend as
 *   vector ALU ops and loads, cg_vectorize.c) -> index dtype lowering -> early /
 *   late decompositions (transcendentals included) driven by the renderer's code_for_op -> gates to LOAD/STORE ->
 *   final rewrite -> casted consts -> control flow -> number params.
 *
 * Not there (a clear error): movement ops left in the AST (tinygrad's pm_mops), LOCAL/GROUP/DEVICE axes and tensor
 * cores (no GPU renderer yet), STAGE (local buffers), vector-typed RANGEs, emulated dtypes.
 * The kernel name (tinygrad's E_../r_.. without colors) is written into the lowered SINK's KernelInfo. */
#ifndef TG_CODEGEN_H
#define TG_CODEGEN_H

#include "../render/gemm.h"
#include "../render/render.h"

/* Lower one kernel. Returns the lowered SINK (owned by the caller's scope), or NULL with tg_last_error() set
 * ("tinygrad.c: <what> not supported yet" for features that are not there). `ren` is the device's capability
 * table (renderer_clang() for the CPU); its has_threads / global_max[0] decide the THREAD split. */
UOp *cg_lower(UOp *kernel_sink, const Renderer *ren);

/* The first half alone (movement ops, split / simplify ranges, symbolic, opts): the kernel AST the opts produce,
 * its SINK carrying tinygrad's kernel name ("E_256", "r_256_4_512"; colors stripped). For tests and DEBUG. */
UOp *cg_optimize(UOp *kernel_sink, const Renderer *ren);

/* The GEMM template route (gemm_route.c): when `kernel_sink` is one plain matmul the templates take on a device of
 * `arch` ("sm_90a"), NULL and *out = the template config and the PARAM slots of (C, A, B), the kernel's parameters in
 * that order; else why not (a static string) and the normal path stays. GEMM_TEMPLATE=0: always refused. */
typedef struct CgGemmMatch {
  GemmConfig cfg;
  int64_t slot[3];
} CgGemmMatch;
const char *cg_gemm_match(UOp *kernel_sink, const char *arch, CgGemmMatch *out);

/* The transcendental decompositions (tinygrad codegen/decomp/transcendental.py): d is float16/32/64 x. */
UOp *cg_xexp2(UOp *d);
UOp *cg_xlog2(UOp *d);
UOp *cg_xsin(UOp *d);
UOp *cg_xpow(UOp *base, UOp *exponent);

#endif
