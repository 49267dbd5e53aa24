/* opt.h — kernel optimization actions (tinygrad codegen/opt: OptOps, Opt, the Scheduler of postrange.py, the
 * hand-coded heuristic and BEAM search; reference section 7.2).
 *
 * An opt splits one loop range of the kernel AST: range r of size n becomes r'*amt + r_new (r' of size n/amt) and
 * the new range gets an axis type — UPCAST/UNROLL (register tiles, expanded into lanes by the expander), THREAD
 * (a top split over cores). PADTO rounds a range up to a multiple behind validity masks; SWAP exchanges two
 * GLOBAL axes; LOCAL/GROUP/GROUPTOP/NOLOCALS need a device with locals (a clear KernelOptError on the CPU); TC needs
 * the renderer's tensor cores (opt_tc.c).
 *
 * Axis numbers count the opt axes (RANGEs that are not void, size > 1 and not DEVICE) sorted by axis type position
 * (GLOBAL, WARP, LOCAL, WEAK/LOOP, GROUP_REDUCE, REDUCE, UPCAST, UNROLL, THREAD) then by id, as tinygrad's
 * Scheduler.rngs. UNROLL's axis counts only the unrollable (reduce) axes, GROUP's only the REDUCE ones. arg 0 means
 * "the whole axis". */
#ifndef TG_CODEGEN_OPT_H
#define TG_CODEGEN_OPT_H

#include "../render/render.h"

/* OPT_LOOP is not tinygrad's: on a device without locals it splits a LOOP axis, the inner part a LOOP of its own that
 * runs inside the other loops (a blocked loop order; tinygrad's LOCAL plays that part on GPUs). */
typedef enum OptOp {
  OPT_TC, OPT_UPCAST, OPT_UNROLL, OPT_LOCAL, OPT_THREAD, OPT_GROUP, OPT_GROUPTOP, OPT_NOLOCALS, OPT_PADTO, OPT_SWAP,
  OPT_LOOP, OPT_OP_COUNT
} OptOp;

/* tinygrad Opt(op, axis, arg): axis -1 is None (NOLOCALS). TC's tuple arg (tc_select, tc_opt, use_tensor_cores) is
 * packed into the int arg: opt_tc_arg / opt_tc_arg_split (tc_select -1..254, the others 0..255). */
typedef KernelOpt Opt; /* { op (an OptOp), axis, arg } */
int32_t opt_tc_arg(int tc_select, int tc_opt, int use_tc);
void opt_tc_arg_split(int32_t arg, int *tc_select, int *tc_opt, int *use_tc);

#define OPT_LIST_MAX KERNEL_OPTS_MAX /* opts one kernel can carry */

const char *opt_op_name(OptOp op);  /* "UPCAST" */
/* "UPCAST:0:4,LOCAL:1:8" (TC as TC:axis:select:opt:use) into at most cap opts, as DEBUG=3 and the opts tests
 * write them; the count read (parsing stops at the first item it cannot read) */
int opt_parse_list(const char *text, Opt *out, int cap);
/* The kernel's first REDUCE (its main one), NULL without. */
UOp *opt_first_reduce(UOp *ast);
bool opt_row_kernel(UOp *ast); /* reductions used across a range they do not depend on (a fused row) */
/* "Opt(op=OptOps.UPCAST, axis=0, arg=4)" as tinygrad prints it, into out. */
void opt_format(Opt o, char *out, size_t cap);

/* tinygrad's Scheduler over one kernel AST (a SINK as the scheduler makes it, after cg_optimize's range passes).
 * Holds a reference to its ast. */
typedef struct OptScheduler {
  UOp *ast;
  const Renderer *ren;
  bool dont_use_locals;
  int napplied;
  Opt applied[OPT_LIST_MAX];
  int64_t next_range_id; /* tinygrad opt_range: ids for ranges the opts create */
  int tc_index;          /* the TensorCore applied (ren->tensor_cores index), -1 none (tinygrad Scheduler.tensor_core) */
  int64_t tc_axis_ids[3];/* its N, M, K axes (range ids) */
} OptScheduler;

/* ast: the kernel SINK (kept). Also applies convert_loop_to_global (a no-op on a device without locals). */
void opt_sched_init(OptScheduler *s, UOp *ast, const Renderer *ren);
void opt_sched_copy(OptScheduler *dst, const OptScheduler *src);
void opt_sched_free(OptScheduler *s);
/* all or nothing for opts tried on a copy (opt_sched_copy): with ok, s takes the copy's state; else the copy is
 * dropped. Returns ok. */
bool opt_sched_take(OptScheduler *s, OptScheduler *copy, bool ok);

/* The opt axes in order (tinygrad Scheduler.rngs); the caller frees the vector. */
void opt_sched_rngs(const OptScheduler *s, UOpVec *out);
/* Number of opt axes; full_shape / axis_types of each (arrays of at least opt_sched_len entries). A symbolic size
 * is given as its vmax. */
int opt_sched_len(const OptScheduler *s);
void opt_sched_shape(const OptScheduler *s, int64_t *full_shape, AxisType *types);

/* Apply one opt (tinygrad apply_opt, append_opt=True). TG_OK, or TG_ERR_INVALID_ARGUMENT with tg_last_error()
 * "KernelOptError: <reason>" and the scheduler unchanged. */
tg_status opt_apply(OptScheduler *s, Opt o);

/* tinygrad Scheduler._apply_tc_opt (opt_tc.c), called by opt_apply for OPT_TC; internal helpers it shares. */
tg_status opt_apply_tc(OptScheduler *s, Opt o);
void opt_set_ast(OptScheduler *s, UOp *ast);
bool opt_shift_to(OptScheduler *s, UOp *rng, int64_t amount, AxisType new_type, bool top, UOp *input_new,
                  UOp **replaced, UOp **made);

/* tinygrad hand_coded_optimizations: applies the heuristic's opts to s. */
void opt_hand_coded(OptScheduler *s);

/* tinygrad get_optimized_ast: ranges flattened, SINK arg = KernelInfo (name from the ranges, or name_override when
 * not NULL; the applied opts list). Returns a node of the current scope. */
UOp *opt_get_optimized_ast(OptScheduler *s, const char *name_override);

/* A kernel AST that carries `opts` to apply (tinygrad KernelInfo.opts_to_apply): cg_optimize / cg_lower apply
 * exactly these (an invalid one is an error) instead of the heuristic or BEAM. n = 0 gives "no opts" (the naive
 * kernel, as NOOPT=1). */
UOp *opt_ast_with_opts(UOp *ast, const Opt *opts, int n);

#endif
