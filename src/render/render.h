/* render.h — the renderer: its capability table (tinygrad renderer/__init__.py Renderer) that drives the codegen
 * decompositions, and the C-style source renderer for the CPU (tinygrad renderer/cstyle.py ClangRenderer).
 *
 * The pipeline end: cg_lower (codegen.h) -> cg_linearize (codegen/linearize.h) -> render_c (here) -> cc.
 * interp_run (codegen/interp.h) executes the same linear list directly and is the oracle for the rendered C. */
#ifndef TG_RENDER_H
#define TG_RENDER_H

#include "../uop/pattern.h"
#include "../uop/uop.h"

/* What a device's code generator can express (tinygrad's Renderer class attributes). Static, lives for the
 * process. The codegen reads it to choose decompositions: an ALU op not in code_for_op is rewritten into ops that
 * are (e.g. EXP2/LOG2/SIN into polynomials, MAX into a WHERE, RECIPROCAL into FDIV). */
/* tinygrad TensorCore (codegen/opt/tc.py): D = A*B + C for one warp, A M x K, B K x N, C and D M x N. opts are the
 * 2-way splits that build the warp ("l0": one lane bit from axis N, "u1": one upcast bit of axis M); K gets log2(K)
 * UNROLL bits. swizzle[operand] maps (local bits, upcast bits, reduce bits) to the hardware fragment layout, each
 * part a space-separated list of names ("r1 r2 l2 l3 l4"). */
typedef struct TensorCore {
  int dims[3];             /* N, M, K */
  int threads;             /* lanes that make the warp */
  int elements[3];         /* per-thread elements of A, B, C */
  const DType *dtype_in, *dtype_out;
  const char *opts[8];     /* "u0", "l0", ...; NULL ends */
  const char *swizzle[2][3];
} TensorCore;
/* Which C the CPU renderer writes (render_c). CLANG is tinygrad's ClangRenderer text (ext_vector_type vectors, __fp16,
 * __builtin_bit_cast); GCC is what gcc accepts in C (vector_size vectors, _Float16, bit casts through a union). AUTO,
 * renderer_clang's setting, follows the compiler the runtime will use (rt_compiler_family: gcc -> GCC, else CLANG). */
typedef enum RenderCDialect { RENDER_C_DIALECT_AUTO, RENDER_C_DIALECT_CLANG, RENDER_C_DIALECT_GCC } RenderCDialect;

typedef struct Renderer Renderer;
struct Renderer {
  const char *device;          /* "CPU", "CUDA" */
  const char *suffix;          /* tinygrad Renderer.suffix: "" for C */
  bool has_local;              /* workgroup-local indices (SPECIAL lidx): false on the CPU */
  bool has_threads;            /* the THREAD axis runs over cores (core_id Variable): CPU, unless THREADS=0 */
  bool has_shared;             /* LOCAL (shared) memory buffers */
  bool supports_float4;        /* vector loads/stores */
  bool has_global_max, has_local_max; /* false: tinygrad's None (no limit known) */
  int64_t global_max[3];       /* CPU: {NUM_CPU_THREADS, 0, 0} */
  int64_t local_max[3];
  int64_t shared_max;          /* bytes of LOCAL memory */
  int vector_bytes;            /* the SIMD register width the compiler targets (CPU: 64 with AVX-512, 32 with AVX2,
                                  else 16); the CPU heuristic tiles matmul-like kernels to it */
  bool reduce_vectorize_hint;  /* mark contiguous scalar reduce loops for the compiler's loop vectorizer (c.c) */
  bool pointer_plus_terms;     /* write an access at x + c as buf+x+c, not buf+(x+c) (c.c put_index_terms) */
  bool float_right_parens;     /* keep a float a + (b + c) parenthesized (tinygrad's text writes a+b+c: C's (a+b)+c) */
  bool inline_narrow_ints;     /* tinygrad's text: inline 8/16-bit integer ALU results (C then computes them in int,
                                  unwrapped: c.c inline_it); false (every renderer) gives them a wrapping line */
  RenderCDialect c_dialect;     /* the C renderer's dialect (CPU only) */
  /* Which hinted copies (uop.h ContigHint) the scheduler makes for this device's kernels (schedule/callify.c); a hint
   * the renderer does not ask for is dropped, the copy's reader reading the value where it is. */
  bool gated_loads_expensive;  /* a masked load costs far more than a plain one (CONTIG_HINT_UNMASKED): the C compiler
                                  turns a masked vector load into per-lane gated scalar loads; a GPU predicates it */
  bool channel_inner_vectors;  /* the codegen keeps a conv's output channels in one vector accumulator when they are
                                  innermost in the weight and the output gradient (CONTIG_HINT_LAYOUT; cg_expand) */
  bool dot_u8i8;               /* 4-wide unsigned x signed 8-bit dot products into int32 lanes (x86 AVX-VNNI
                                  vpdpbusd): cg_vectorize renders a vector accumulator's int8 dot lanes with it */
  int dot_u8i8_lanes;          /* the widest such vector: 16 int32 lanes with avx512vnni, else 8 (avxvnni) */
  OpSet code_for_op;           /* ALU ops rendered natively (the keys of tinygrad's code_for_op) */
  uint32_t supported_dtypes;   /* bit (1u << TgDTypeId) per scalar dtype the device computes in */
  const TensorCore *tensor_cores; /* tinygrad Renderer.tensor_cores, in choice order (tc_select indexes it) */
  int n_tensor_cores;
  /* Renderer-specific rewrites applied in the codegen's final rewrite (tinygrad Renderer.extra_matcher), or NULL
   * for none. For the CPU: float64->half/bf16 and bf16->half go through float32; bfloat16 ALU is done in float32;
   * bf16<->float casts are integer bit manipulation (no compiler intrinsics). */
  const RuleSet *(*extra_matcher)(void);
  /* Render a linearized kernel to the device's source language (render_c for the CPU). Heap string or NULL with
   * tg_last_error() set. */
  char *(*render)(const Renderer *ren, UOp *linear);
};

/* The renderer of a device ("CPU", "CPU:1", "CUDA", "CUDA:1"): the kernels of a buffer on that device are lowered
 * with it. NULL with tg_last_error() for a device that has none (unknown name, or a backend not built yet). */
const Renderer *renderer_for_device(const char *device);

/* A linearized kernel's launch dimensions (tinygrad ProgramInfo global_size / local_size): the bounds of its SPECIAL
 * indices, gidx<n> -> global[n] (blocks), lidx<n> -> local[n] (threads per block); idx<n> (NOLOCALS: the flat id
 * blockIdx*blockDim+threadIdx) -> global[n] blocks of one thread (render_flat_ids: the engine may regroup); 1 where there
 * is none (every CPU kernel: {1,1,1} and {1,1,1}). False with tg_last_error() for a symbolic bound. */
bool render_launch_dims(UOp *linear, int64_t global[3], int64_t local[3]);
/* The same dims as the SPECIALs' bounds (NULL: 1): a GLOBAL axis of a Variable's extent has a bound that is an
 * expression of the kernel's Variable PARAMs (tinygrad's sint global_size); render_launch_eval evaluates one with the
 * Variables' values by name (names[i] NULL or "" skipped), as tinygrad's ProgramInfo.launch_dims(var_vals). */
bool render_launch_bounds(UOp *linear, UOp *global[3], UOp *local[3]);
tg_status render_launch_eval(UOp *bound, const char *const *names, const int64_t *vals, size_t n, int64_t *out);
/* The kernel indexes with flat ids (idx<n>, NOLOCALS: tinygrad's local_size None): any block shape that divides
 * its global dims computes the same, so the engine picks one by timing (tinygrad optimize_local_size), and the CUDA
 * renderer declares __launch_bounds__(RENDER_MAX_WORKGROUP) for it (tinygrad writes 1 there, the product of no
 * lidx bounds, which makes every larger block fail to launch). */
bool render_flat_ids(UOp *linear);
#define RENDER_MAX_WORKGROUP 1024

static inline bool renderer_supports_dtype(const Renderer *r, const DType *d) {
  return (r->supported_dtypes >> d->scalar->id) & 1u;
}
static inline bool renderer_has_op(const Renderer *r, TgOp op) { return opset_has(&r->code_for_op, op); }

/* tinygrad Estimates.ops (from_uops with ignore_indexing) for a linearized kernel: every ALU op's lanes (its
 * max_numel; MULACC twice) times the trips of its enclosing loops and the core_id count, leaving out the arithmetic
 * that only computes addresses (the sources of INDEX and SHRINK). DEBUG=2's GFLOPS and BEAM's compute filter. */
double render_estimate_flops(UOp *linear);
/* tinygrad's ClangRenderer: the CPU. CStyleLanguage's ops without EXP2, LOG2, SIN, RECIPROCAL (and no MAX, no
 * THREEFRY, no MULACC), plus SQRT, TRUNC, FDIV as compiler builtins. All dtypes but fp8. global_max[0] is the
 * thread count of the THREAD split (NUM_CPU_THREADS env, else the machine's cores); THREADS=0 clears has_threads. */
const Renderer *renderer_clang(void);
/* Part of the CPU's extra matcher, not tinygrad's: a gate's (c1<x)&(x<c2) on an int becomes one unsigned compare
 * (clang vectorizes the pad kernels it gates only then). The codegen parity test applies it to tinygrad's graphs. */
const RuleSet *render_pm_range_checks(void);

/* tinygrad's CUDARenderer for sm_90 (cuda.c): CStyleLanguage's ops with native SQRT/EXP2/LOG2/SIN/TRUNC/RECIPROCAL
 * (no MAX, no FDIV), every dtype but fp8, has_local/has_shared, no THREAD axis, global_max (2^31-1, 65535, 65535),
 * local_max (1024, 1024, 64), shared_max 49152 bytes. */
const Renderer *renderer_cuda(void);

/* Render a linearized kernel to CUDA C++ for NVRTC, as tinygrad's CUDARenderer.render, but with no #include: half and
 * bfloat16 are defined in the source (cuda.c). The kernel is
 *   extern "C" __global__ void __launch_bounds__(<threads per block>) <name>(float* data0_16, ..., const int data3_)
 * with the parameters in render_params order (the launch passes kernelParams in that order); launch dimensions from
 * render_launch_dims. Heap string, or NULL with tg_last_error() set. */
char *render_cuda(const Renderer *ren, UOp *linear);

/* Render a linearized kernel (a LINEAR whose sources are the cg_linearize list) to C source for the CPU, as tinygrad's
 * ClangRenderer.render (in ren->c_dialect's C: tinygrad's clang text, or gcc's forms of it): vector typedefs, then
 *   void <name>(float* restrict data0_16, const int core_id, ...) { ... }
 * with PARAMs in slot order. The name is the SINK's KernelInfo name ("test" if it has none).
 * Returns a heap string (caller frees), or NULL with tg_last_error() set when the list holds something this
 * renderer cannot express ("tinygrad.c: render: <op> <dtype> not supported yet"). */
char *render_c(const Renderer *ren, UOp *linear);

/* The kernel's function name as render_c writes it: the KernelInfo name of the list's SINK (else "test"), characters
 * outside [A-Za-z0-9_] as hex (tinygrad to_function_name). Points into a per-thread buffer valid until the next call. */
const char *render_kernel_name(UOp *linear);

/* The kernel's parameters in slot order, as the rendered function takes them. A Variable (ALU address space, e.g.
 * core_id) is passed by value as `value_dtype`; a buffer as a pointer to `dtype`. */
typedef struct RenderParam {
  int64_t slot;
  bool is_value;               /* a Variable (core_id, user Variables) rather than a buffer */
  bool is_written;             /* a buffer the kernel stores to */
  const DType *dtype;          /* element dtype (buffers) or value dtype (Variables) */
  int64_t numel;               /* buffer elements when known, -1 otherwise */
  int64_t vmin, vmax;          /* a Variable's value range (core_id: 0 .. threads-1) */
  char name[TG_NAME_MAX];      /* the C parameter name, as tinygrad: "data0_16"; a Variable is "data3_" */
  char var_name[TG_NAME_MAX];  /* a Variable's own name ("core_id", "i"); "" for buffers */
} RenderParam;
/* Fills *out (caller frees with tg_vec_free). */
typedef TG_VEC(RenderParam) RenderParamVec;
void render_params(UOp *linear, RenderParamVec *out);

/* A fixed-ABI entry point for a rendered kernel, to be compiled together with render_c's output:
 *   void <entry>(void *const *bufs, const long long *vals) { <name>((float*)bufs[0], ..., (int)vals[k]); }
 * Argument i of the kernel is bufs[i] for a buffer and vals[i] for a Variable (both arrays indexed by slot).
 * Lets a caller dlsym one signature for every kernel. Heap string (caller frees). */
char *render_c_entry(UOp *linear, const char *entry_name);

#endif
