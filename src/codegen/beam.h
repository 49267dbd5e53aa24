/* beam.h — BEAM search over kernel opts (tinygrad codegen/opt/search.py; reference section 7.2 "BEAM").
 *
 * From the kernel's opt axes, every action of tinygrad's action list (UPCAST/UNROLL/THREAD/SWAP/PADTO..., TC left
 * out: its tuple arg is not representable) is tried on every entry of the beam; each surviving candidate is lowered
 * exactly as the engine will lower it (opt_ast_with_opts + cg_lower), linearized and rendered; all candidates of a
 * round are compiled in one batch through the kernel's device (the CPU: one compiler process; CUDA: NVRTC on several
 * threads), timed there on scratch buffers (CUDA: event timing; a grid of more than BEAM_MAX_GLOBAL_SIZE=65536 blocks
 * is halved and the time scaled back, tinygrad's allow_test_size), and the `amt` fastest form the next beam.
 * The search stops when the best time improves by less than BEAM_MIN_PROGRESS microseconds (default 0.01).
 *
 * The result (the opt list) is kept in the compile cache's database, keyed by the kernel AST's stable key, amt, the
 * device, its arch (sm_90a) and the renderer suffix; CACHELEVEL=0 turns that off, IGNORE_BEAM_CACHE=1 forces a search, and a cached list
 * that no longer applies (or does not parse) is searched again.
 *
 * Knobs (tinygrad's names): BEAM (engine: the beam width, 0 = off), BEAM_UPCAST_MAX (256), BEAM_LOCAL_MAX (1024),
 * BEAM_UOPS_MAX (3000), BEAM_MIN_PROGRESS (0.01 us), BEAM_PADTO (0), NOLOCALS, IGNORE_BEAM_CACHE, CACHELEVEL,
 * BEAM_DEBUG; DEBUG>=2 prints the progress lines, DEBUG>=3 the opts of every lowered kernel. */
#ifndef TG_CODEGEN_BEAM_H
#define TG_CODEGEN_BEAM_H

#include "opt.h"

/* Search opts for the kernel AST `ast` (a kernel SINK as the scheduler makes it) with beam width amt >= 1.
 * out_opts (OPT_LIST_MAX entries) receives the best opt list, *n_out its length (0: no action helped). Errors: a
 * compiler that cannot run at all, a kernel whose buffers have no known size (TG_ERR_UNSUPPORTED). */
tg_status beam_search(UOp *ast, const Renderer *ren, int amt, Opt *out_opts, int *n_out);

/* What the engine lowers for `ast`: ast itself when BEAM < 1 or the AST already carries opts_to_apply, else
 * opt_ast_with_opts(ast, beam result). A node of the current scope, or NULL with tg_last_error() set. */
UOp *beam_kernel_ast(UOp *ast, const Renderer *ren);

/* DEBUG>=3: "<name padded to 25> opts: (Opt(...), ...)" for a lowered kernel SINK that had opts applied (tinygrad's
 * print in do_linearize). */
void beam_print_applied_opts(const char *name, UOp *lowered);

/* tinygrad optimize_local_size (engine/realize.py), for a kernel with flat ids (render_flat_ids: NOLOCALS, which
 * tinygrad compiles with local_size None): the block shapes to try, per dim each of {dim, 1, 2, 4, ..., 256, 1024}
 * that divides the dim (tinygrad also tries non-divisors, whose fractional grid fails to launch), threads at most
 * RENDER_MAX_WORKGROUP; written to out (at most cap), the count returned. Always includes {1,1,1}. */
size_t beam_local_size_candidates(const int64_t global[3], int64_t (*out)[3], size_t cap);
typedef struct RtDevice RtDevice;
typedef struct RtProgram RtProgram;
/* Time every candidate twice on scratch buffers (the kernel's params, render_params) and return the fastest block in
 * local[3] (the grid is then global / local). Errors: buffers that cannot be made, every launch failing. */
tg_status beam_optimize_local_size(RtDevice *dev, const RtProgram *prog, const char *name, const RenderParam *params,
                                   size_t nparams, const int64_t global[3], int64_t local[3]);

/* Time given opt lists on the kernel's device as the search times its candidates (each lowered as the engine lowers
 * it, all compiled in one batch, then 3 rounds of the best of 3 launches on the same scratch buffers, grids over
 * BEAM_MAX_GLOBAL_SIZE blocks halved and the time scaled back): out_s[i] is list i's best time in seconds, INFINITY
 * where it does not apply, lower, compile or launch. For tools that compare hand-picked opts (gpu_opts). Errors: no
 * device, a kernel whose buffers have no known size. */
tg_status beam_time_opts(UOp *ast, const Renderer *ren, const Opt *const *lists, const int *ns, size_t nlists,
                         double *out_s);

/* Counters since the process started (tests and tools). */
typedef struct BeamStats {
  long searches;            /* searches run (not answered by the cache) */
  long cache_hits;          /* searches answered by the cache */
  long candidates_compiled; /* candidates sent to the compiler (after dedupe and filters) */
  long candidates_timed;    /* candidates launched for timing */
} BeamStats;
BeamStats beam_stats(void);

/* The cache key of a search (what beam_search stores under, in table BEAM_CACHE_TABLE); caller frees. */
#define BEAM_CACHE_TABLE "beam_search"
char *beam_cache_key(UOp *ast, const Renderer *ren, int amt);

#endif
