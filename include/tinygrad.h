/* tinygrad.h — the public C API of tinygrad.c.
 *
 * Everything a user calls is declared here with a tg_ prefix. Calls that can fail on bad input return a tg_status
 * (or NULL) and leave a message in tg_last_error() naming the op, the shapes and the dtypes; the library never
 * aborts or exits on user error. */
#ifndef TINYGRAD_H
#define TINYGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 1

typedef enum tg_status {
  TG_OK = 0,
  TG_ERR_INVALID_ARGUMENT, /* a bad shape, axis, dtype or value */
  TG_ERR_UNSUPPORTED,      /* a valid request this build cannot do (says what is missing) */
  TG_ERR_IO,               /* a file could not be read or is malformed */
  TG_ERR_RUNTIME,          /* compiler or device failure */
  TG_ERR_OUT_OF_MEMORY
} tg_status;

/* Data types (the order of src/uop/dtype.def, which holds their properties). The weak dtypes are tinygrad's width-less
 * Python scalars: a tensor made from a C scalar is weak and adopts its partner's dtype in binary ops. */
typedef enum tg_dtype {
  TG_VOID, TG_WEAKINT, TG_BOOL, TG_INT8, TG_UINT8, TG_INT16, TG_UINT16, TG_INT32, TG_UINT32, TG_INT64, TG_UINT64,
  TG_WEAKFLOAT, TG_FP8E4M3, TG_FP8E5M2, TG_FP8E4M3FNUZ, TG_FP8E5M2FNUZ, TG_FLOAT16, TG_BFLOAT16, TG_FLOAT32, TG_FLOAT64,
  TG_DTYPE_COUNT
} tg_dtype;

/* The message of the last error on this thread ("" when none). Valid until the next failing call. */
const char *tg_last_error(void);
/* The last status set on this thread. */
tg_status tg_last_status(void);
/* "0.1" */
const char *tg_version(void);
/* The env knobs (DEBUG, BEAM, NOOPT, ...: tinygrad's names and meanings) are read from the environment once, at first
 * use, and kept. After changing them with setenv/unsetenv, call tg_knobs_reload() to make the library read them
 * again (not while another thread is inside the library); text knobs (OPTIM_DTYPE, BEAM_MIN_PROGRESS, GEMM_TILE,
 * CACHEDB at the cache's next open) are kept the same way. Knobs read once per process or device (SPEC,
 * TRACK_MATCH_STATS, REWRITE_STACK_LIMIT, the dtype knobs DEFAULT_FLOAT/DEFAULT_INT/SUM_DTYPE, DEV; LRU and
 * CACHELEVEL until rt_shutdown) are not changed by it. */
void tg_knobs_reload(void);


/* ======================================================================================================== tensors
 *
 * A tg_tensor is an opaque, reference-counted handle on a lazy tensor graph (tinygrad's Tensor). Nothing is computed
 * until tg_realize() or a copy to the host. Every function that returns a tg_tensor* returns a NEW reference:
 *   - with no scope open, the caller owns it and gives it back with tg_release();
 *   - inside a scope (tg_scope_begin), the scope owns it: tg_scope_end releases every tensor created in the scope
 *     except those passed to tg_scope_keep (which move to the enclosing scope, or to the caller when outermost).
 * tg_retain adds a reference the caller owns (release it with tg_release), independent of scopes. Never release a
 * scope-owned tensor you did not retain: the scope's end gives its reference back.
 *
 * Realize (tg_realize, tg_to_host, tg_item_*) runs the whole pipeline and points every handle on the realized graph
 * at the resulting buffer, so a second read costs nothing.
 *
 * Errors (DESIGN.md decision 7): a call given a bad shape, axis, dtype or argument returns NULL (or a tg_status) and
 * sets tg_last_error() to a message naming the op, the shapes and the dtypes. A call given a NULL tensor returns NULL
 * and keeps the first error message, so a chain of calls reports the error where it happened. Nothing aborts.
 *
 * Shapes are arrays of int64_t with a count (ndim). Axes are ints; negative axes count from the end. TG_SHAPE(...) and
 * TG_AXES(...) expand to "array, count" for literal lists: tg_reshape(t, TG_SHAPE(2, 3)). A 0-d shape is NULL, 0.
 * Dtype arguments use TG_VOID for "the default" (tinygrad's dtype=None).
 * Devices: every tensor with storage lives on a device ("CPU", "CPU:1", "CUDA", "CUDA:1"); creation puts it on the
 * default device (DEV as in tinygrad, e.g. DEV=CUDA; else CPU), the *_on creation calls on a named one, and tg_to
 * copies (a COPY in the schedule). An op whose inputs live on different devices fails when it is realized, as in
 * tinygrad ("all buffers must be on the same device").
 * Not thread-safe: build and realize tensors from one thread. */


typedef struct tg_tensor tg_tensor;

#define TG_SHAPE(...) ((const int64_t[]){__VA_ARGS__}), (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define TG_AXES(...) ((const int[]){__VA_ARGS__}), (sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
#define TG_MAX_DIMS 16 /* the most dimensions a tensor may have */

/* ---- lifetime ---- */
tg_tensor *tg_retain(tg_tensor *t);  /* +1 reference owned by the caller; returns t (NULL ok) */
void tg_release(tg_tensor *t);       /* -1 reference (NULL ok) */
void tg_release_many(tg_tensor *const *ts, size_t n); /* tg_release of each (bindings batch releases) */
typedef size_t tg_scope;
tg_scope tg_scope_begin(void);
void tg_scope_end(tg_scope s);       /* releases the scope's tensors (and any inner scope left open) */
tg_tensor *tg_scope_keep(tg_tensor *t); /* t (created in the innermost scope) survives its end; returns t */
size_t tg_live_tensors(void);        /* handles currently alive (for leak checks) */

/* ---- inspection ---- */
int tg_ndim(const tg_tensor *t);                   /* -1 for NULL */
const int64_t *tg_shape(const tg_tensor *t);       /* ndim sizes, valid while t lives */
int64_t tg_size(const tg_tensor *t, int axis);     /* one size (negative axis ok); -1 on error */
int64_t tg_numel(const tg_tensor *t);              /* -1 for NULL */
tg_dtype tg_get_dtype(const tg_tensor *t);         /* TG_VOID for NULL */
const char *tg_dtype_name(tg_dtype d);             /* "float", "int", ... (tinygrad's names) */
size_t tg_dtype_itemsize(tg_dtype d);              /* 0 for void and the weak dtypes */
const char *tg_device(const tg_tensor *t);         /* "CPU", "CUDA:1", or NULL for a device-less (weak scalar) tensor */
char *tg_graph_str(const tg_tensor *t);            /* the UOp graph as text (src/uop/print.c); free with tg_str_free */
void tg_str_free(char *s);

/* ---- devices ---- */
/* The device creation uses: tg_set_default_device's choice, else DEV's device part (DEV=CUDA, DEV=cuda:PTX ->
 * "CUDA"), else "CPU". Never NULL; the string stays valid (and unchanged) for the process. */
const char *tg_default_device(void);
/* Names are canonicalized ("cuda:1" -> "CUDA:1", "CUDA:0" -> "CUDA"); an unknown name is an error (nothing changes).
 * The device is not opened here: a missing GPU shows when memory is first needed there. */
tg_status tg_set_default_device(const char *device);
/* t on `device` (tinygrad Tensor.to): the same tensor when it is there already (or has no device), else a COPY that
 * realizes as a device copy (host to device, device to host, device to device). NULL with an error for a bad name. */
tg_tensor *tg_to(const tg_tensor *t, const char *device);
/* Wait until every kernel and copy queued on `device` (NULL: the default device) has finished (tinygrad
 * Device[...].synchronize()). Realize may return before a GPU is done; reading a tensor back waits by itself. */
tg_status tg_synchronize(const char *device);
/* Device-side timing (torch.cuda.Event(enable_timing=True)): tg_mark_record queues a mark on `device`'s stream now
 * (NULL: the default device); tg_mark_elapsed waits until `end` is reached and gives the seconds the device spent
 * from `start` to `end` (marks of one device). On the CPU, whose kernels and copies are done when their calls
 * return, a mark is the host clock. tg_mark_record gives NULL with an error (a bad or missing device). */
typedef struct tg_mark tg_mark;
tg_mark *tg_mark_record(const char *device);
tg_status tg_mark_elapsed(const tg_mark *start, const tg_mark *end, double *seconds);
void tg_mark_free(tg_mark *m); /* NULL is a no-op */
/* Can CUDA be used (driver loaded, a GPU present)? false with the reason in *why (a static string) when not. */
bool tg_cuda_available(const char **why);

/* ---- creation ---- */
/* Copies numel*itemsize bytes of host data in the given dtype (any strong dtype; half/bfloat16/fp8 as their bits). */
tg_tensor *tg_from_data(const void *data, tg_dtype dtype, const int64_t *shape, size_t ndim);
tg_tensor *tg_from_floats(const float *data, const int64_t *shape, size_t ndim);
/* The same on a named device (tinygrad's device=); NULL device: the default. */
tg_tensor *tg_from_data_on(const void *data, tg_dtype dtype, const int64_t *shape, size_t ndim, const char *device);
tg_tensor *tg_empty_on(const int64_t *shape, size_t ndim, tg_dtype dtype, const char *device);
tg_tensor *tg_empty(const int64_t *shape, size_t ndim, tg_dtype dtype);  /* uninitialized buffer */
tg_tensor *tg_zeros(const int64_t *shape, size_t ndim, tg_dtype dtype);
tg_tensor *tg_ones(const int64_t *shape, size_t ndim, tg_dtype dtype);
tg_tensor *tg_full(const int64_t *shape, size_t ndim, double value, tg_dtype dtype);       /* default: float32 */
tg_tensor *tg_full_int(const int64_t *shape, size_t ndim, int64_t value, tg_dtype dtype);  /* default: int32 */
tg_tensor *tg_full_like(const tg_tensor *t, double value, tg_dtype dtype);  /* TG_VOID: t's dtype */
tg_tensor *tg_zeros_like(const tg_tensor *t, tg_dtype dtype);
tg_tensor *tg_ones_like(const tg_tensor *t, tg_dtype dtype);
tg_tensor *tg_empty_like(const tg_tensor *t, tg_dtype dtype);
tg_tensor *tg_arange(double start, double stop, double step, tg_dtype dtype); /* default: int32 if all integral */
tg_tensor *tg_linspace(double start, double stop, int64_t steps, tg_dtype dtype);
tg_tensor *tg_eye(int64_t n, int64_t m, tg_dtype dtype);    /* m < 0: square */
/* Weak scalars (tinygrad's Tensor(3), Tensor(2.5), Tensor(True)): 0-d, no device, adopt the partner's dtype. */
tg_tensor *tg_const_float(double v);
tg_tensor *tg_const_int(int64_t v);
tg_tensor *tg_const_bool(bool v);
/* A 0-d tensor of a given strong dtype holding v (tinygrad's Tensor(v, dtype=...)). */
tg_tensor *tg_scalar(double v, tg_dtype dtype);

/* ---- Variables (tinygrad's Variable): a named int in [min, max], a 0-d weak-int tensor with no device. A bound
 * Variable carries a value for the realizes it takes part in; kernels read it as a scalar argument, so a new value
 * needs no new schedule and no new compile. In arithmetic it behaves as a weak int scalar (int8 tensor * v is int8,
 * float tensor + v is float); tg_item_int64 of a bound Variable gives its value (default int). Realizing a graph that
 * uses an unbound Variable fails ("unbound Variable <name>"); two values for one name in one realize fail
 * ("bind mismatch on <name>"). ---- */
tg_tensor *tg_variable(const char *name, int64_t min, int64_t max);  /* unbound; name non-empty, min <= max */
tg_tensor *tg_bind(const tg_tensor *var, int64_t value);  /* errors: not an unbound Variable, value out of range */
bool tg_is_variable(const tg_tensor *t);                  /* an unbound or a bound Variable (false for NULL) */
/* The bound value (no realize): TG_ERR_INVALID_ARGUMENT for an unbound Variable or anything else. */
tg_status tg_variable_value(const tg_tensor *t, int64_t *value);
/* The name, NULL when t is not a Variable (valid while t lives). */
const char *tg_variable_name(const tg_tensor *t);

/* ---- symbolic shapes (tinygrad's sint) ----
 * A size may be an expression of bound Variables (a KV-cache slice of length start_pos+1). tg_sint {n, v} stands for
 * n + v: v NULL is the int n; v is a 0-d int expression of bound Variables (tg_bind, tg_add/tg_mul/... of them and
 * ints). A tensor with a symbolic size is a view of storage sized for the maximum (every Variable at its max); its
 * kernels loop to the expression and read the bound values as scalar arguments, so a new value needs no new schedule
 * and no new compile. Bounds are checked at the bound values. tg_shape gives the maximum for a symbolic size, tg_dim
 * the size itself. Reading a symbolic-shaped tensor (tg_to_host, tg_item_*) is an error: shrink it to concrete sizes
 * first. Symbolic shapes go through elementwise ops and broadcasting, casts, same-size bitcasts, tg_contiguous,
 * tg_realize, tg_assign into a symbolic view (cache[sp:sp+1]), tg_permute/tg_transpose, tg_shrink (int bounds), tg_cat,
 * the *_sym calls, sum/max/min/mean/var/softmax over any axes, tg_matmul/tg_dot (symbolic M, N or K), attention,
 * gradients (tg_backward) and the JIT (a symbolic input view or output is re-bound to each call's vars); other ops fail
 * with "symbolic shape ... not supported by this op yet". A reshape keeps each symbolic size as one axis (adding or
 * removing size-1 axes around it). A symbolic offset or size must be >= 0 for every value in its Variables' ranges
 * (tinygrad checks only the bound value). */
typedef struct tg_sint { int64_t n; const tg_tensor *v; } tg_sint;
#define TG_SI(n) ((tg_sint){(n), NULL})   /* the int n */
#define TG_SV(v, n) ((tg_sint){(n), (v)}) /* v + n */
/* (start, end) per axis, each an int or an expression: t[..., start:end, ...] */
tg_tensor *tg_shrink_sym(const tg_tensor *t, const tg_sint *bounds, size_t ndim);
/* (before, after) per axis, zero fill: x.pad(((0, 10 - vi),)) */
tg_tensor *tg_pad_sym(const tg_tensor *t, const tg_sint *pads, size_t ndim);
tg_tensor *tg_reshape_sym(const tg_tensor *t, const tg_sint *shape, size_t ndim);
tg_tensor *tg_expand_sym(const tg_tensor *t, const tg_sint *shape, size_t ndim); /* TG_SI(-1) keeps a size */
/* storage for the maximum, viewed at the symbolic shape (tinygrad Tensor.empty(3, vi)); TG_VOID: default float */
tg_tensor *tg_empty_sym(const tg_sint *shape, size_t ndim, tg_dtype dtype);
bool tg_is_symbolic(const tg_tensor *t);          /* some size is symbolic (false for NULL) */
tg_tensor *tg_dim(const tg_tensor *t, int axis);  /* size `axis` as a 0-d weak int: an int or the expression */

/* ---- JIT (tinygrad's TinyJit) ----
 * fn computes one step from its explicit inputs `in` and the bound Variables `vars` and stores nout new handles in
 * `out` (lazy or realized; the JIT realizes them). It may read and assign any other realized tensor (weights,
 * optimizer state: implicit inputs and outputs, fixed at capture). Call 0 runs fn; call 1 captures it (fn runs, its
 * kernels are recorded, not launched, then compiled and frozen once and run for this call); later calls replay the
 * frozen list with the new inputs' buffers and Variable values: no schedule, no rewrite, no compile. JIT=0 runs fn on
 * every call. As in tinygrad, what fn computes on the host is frozen at capture (constants, branches, tensors made
 * from host data), and reading a value during the capture (tg_to_host, tg_item_*) is an error.
 * tg_jit_call: in are realized tensors with storage (views allowed; an unrealized one is realized first), no two on
 * one buffer, the same shapes/dtypes/devices/views as at capture; vars are bound Variables, the same names in the
 * same order on every call. out receives nout handles (owned like any op result); after the capture they point at the
 * captured output buffers, which the next replay overwrites (copy what you keep). Errors: "JIT inputs must be real
 * buffers", "duplicate inputs to JIT", "args mismatch in JIT: ...", "didn't JIT anything!", nested capture. */
typedef struct tg_jit tg_jit;
typedef tg_status (*tg_jit_fn)(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                               tg_tensor **out, size_t nout);
typedef struct tg_jit_options {
  bool prune; /* tinygrad's prune=True: captured calls that do not depend on the inputs run once, at capture */
  int beam;   /* BEAM width for the captured kernels (tinygrad's JITBEAM); 0: the JITBEAM knob, else BEAM as set */
} tg_jit_options;
tg_jit *tg_jit_new(tg_jit_fn fn, void *user, size_t nout, const tg_jit_options *opts); /* opts NULL: defaults */
tg_status tg_jit_call(tg_jit *j, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                      tg_tensor **out);
void tg_jit_reset(tg_jit *j);                /* back to call 0: the capture is dropped */
void tg_jit_free(tg_jit *j);                 /* NULL ok; releases the captured buffers and lists */
size_t tg_jit_kernel_count(const tg_jit *j); /* kernels in the capture (0 before it; tinygrad assert_jit_cache_len) */
/* Device graphs its replay launches (CUDA graphs: runs of 2+ kernels, batches of JIT_BATCH_SIZE doubling; JIT=2 or
 * the CPU: 0, every kernel launched on its own). */
size_t tg_jit_graph_count(const tg_jit *j);
/* Benchmarks: with timing on, every launch of a replay is timed and tg_jit_last_kernel_seconds gives the sum for the
 * last replay (the step's wall time minus it is the replay's host overhead). Off by default. */
void tg_jit_set_timing(tg_jit *j, bool on);
double tg_jit_last_kernel_seconds(const tg_jit *j);

/* ---- random (threefry, counter based: the same seed and call sequence give tinygrad's numbers) ----
 * The generator starts from seed 0 until tg_manual_seed (tinygrad starts from the time). */
void tg_manual_seed(uint64_t seed);
tg_tensor *tg_rand(const int64_t *shape, size_t ndim, tg_dtype dtype);   /* uniform [0, 1) */
tg_tensor *tg_randn(const int64_t *shape, size_t ndim, tg_dtype dtype);  /* standard normal */
tg_tensor *tg_randint(const int64_t *shape, size_t ndim, int64_t low, int64_t high, tg_dtype dtype); /* [low, high) */
tg_tensor *tg_uniform(const int64_t *shape, size_t ndim, double low, double high, tg_dtype dtype);
tg_tensor *tg_normal(const int64_t *shape, size_t ndim, double mean, double std, tg_dtype dtype);
tg_tensor *tg_rand_like(const tg_tensor *t);
tg_tensor *tg_randn_like(const tg_tensor *t);

/* ---- elementwise: binary ops broadcast and promote dtypes as tinygrad (weak scalars adopt the partner's dtype) ---- */
typedef enum tg_rounding { TG_ROUND_NONE = 0, TG_ROUND_TRUNC, TG_ROUND_FLOOR } tg_rounding;
tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b);  /* true division (ints -> default float) */
tg_tensor *tg_div_mode(const tg_tensor *a, const tg_tensor *b, tg_rounding mode);
tg_tensor *tg_idiv(const tg_tensor *a, const tg_tensor *b); /* integer division truncating toward zero (ints only) */
tg_tensor *tg_mod(const tg_tensor *a, const tg_tensor *b);  /* Python-style: sign of the divisor */
tg_tensor *tg_fmod(const tg_tensor *a, const tg_tensor *b); /* C-style: sign of the dividend */
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_lt(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_le(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_gt(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_ge(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_eq(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_ne(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *x, const tg_tensor *y);
tg_tensor *tg_bitwise_and(const tg_tensor *a, const tg_tensor *b);  /* ints and bools */
tg_tensor *tg_bitwise_or(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_bitwise_xor(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_bitwise_not(const tg_tensor *a);
tg_tensor *tg_logical_not(const tg_tensor *a);
tg_tensor *tg_lshift(const tg_tensor *a, const tg_tensor *b);       /* ints only */
tg_tensor *tg_rshift(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_neg(const tg_tensor *a);
tg_tensor *tg_abs(const tg_tensor *a);
tg_tensor *tg_sign(const tg_tensor *a);
tg_tensor *tg_exp(const tg_tensor *a);
tg_tensor *tg_exp2(const tg_tensor *a);
tg_tensor *tg_log(const tg_tensor *a);
tg_tensor *tg_log2(const tg_tensor *a);
tg_tensor *tg_sqrt(const tg_tensor *a);
tg_tensor *tg_rsqrt(const tg_tensor *a);
tg_tensor *tg_reciprocal(const tg_tensor *a);
tg_tensor *tg_square(const tg_tensor *a);
tg_tensor *tg_sin(const tg_tensor *a);
tg_tensor *tg_cos(const tg_tensor *a);
tg_tensor *tg_tan(const tg_tensor *a);
tg_tensor *tg_trunc(const tg_tensor *a);
tg_tensor *tg_floor(const tg_tensor *a);
tg_tensor *tg_ceil(const tg_tensor *a);
tg_tensor *tg_round(const tg_tensor *a);  /* half to even */
tg_tensor *tg_clamp(const tg_tensor *a, double min, double max); /* NAN for no bound on that side */
tg_tensor *tg_isnan(const tg_tensor *a);
tg_tensor *tg_isinf(const tg_tensor *a);
tg_tensor *tg_isfinite(const tg_tensor *a);
/* activations (tinygrad's formulas) */
tg_tensor *tg_relu(const tg_tensor *a);
tg_tensor *tg_relu6(const tg_tensor *a);
tg_tensor *tg_sigmoid(const tg_tensor *a);
tg_tensor *tg_hardsigmoid(const tg_tensor *a);
tg_tensor *tg_tanh(const tg_tensor *a);
tg_tensor *tg_gelu(const tg_tensor *a);
tg_tensor *tg_quick_gelu(const tg_tensor *a);
tg_tensor *tg_silu(const tg_tensor *a);
tg_tensor *tg_swish(const tg_tensor *a);
tg_tensor *tg_hardswish(const tg_tensor *a);
tg_tensor *tg_softplus(const tg_tensor *a, double beta);      /* tinygrad default beta 1 */
tg_tensor *tg_softsign(const tg_tensor *a);
tg_tensor *tg_mish(const tg_tensor *a);
tg_tensor *tg_leaky_relu(const tg_tensor *a, double neg_slope); /* tinygrad default 0.01 */
tg_tensor *tg_elu(const tg_tensor *a, double alpha);          /* default 1.0 */
tg_tensor *tg_celu(const tg_tensor *a, double alpha);         /* default 1.0 */
tg_tensor *tg_selu(const tg_tensor *a);
tg_tensor *tg_hardtanh(const tg_tensor *a, double min_val, double max_val); /* default -1, 1 */
tg_tensor *tg_logsigmoid(const tg_tensor *a);
tg_tensor *tg_erf(const tg_tensor *a);
tg_tensor *tg_sinh(const tg_tensor *a);
tg_tensor *tg_log10(const tg_tensor *a);
tg_tensor *tg_asin(const tg_tensor *a);
tg_tensor *tg_acos(const tg_tensor *a);
tg_tensor *tg_atan(const tg_tensor *a);
tg_tensor *tg_asinh(const tg_tensor *a);
tg_tensor *tg_acosh(const tg_tensor *a);
tg_tensor *tg_atanh(const tg_tensor *a);
tg_tensor *tg_copysign(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_logaddexp(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_lerp(const tg_tensor *a, const tg_tensor *end, const tg_tensor *weight); /* a + (end - a) * weight */
tg_tensor *tg_masked_fill(const tg_tensor *t, const tg_tensor *mask, const tg_tensor *value); /* mask ? value : t */
tg_tensor *tg_cosh(const tg_tensor *a);
/* ---- dtype ---- */
tg_tensor *tg_cast(const tg_tensor *a, tg_dtype dtype);
tg_tensor *tg_bitcast(const tg_tensor *a, tg_dtype dtype); /* last axis rescales when itemsizes differ */

/* ---- reductions: axes NULL = all axes; naxes 0 with non-NULL axes = none ---- */
tg_tensor *tg_sum(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_prod(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_max(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_min(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_mean(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_var(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction); /* default 1 */
tg_tensor *tg_std(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction);
tg_tensor *tg_any(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_all(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim);
tg_tensor *tg_logsumexp(const tg_tensor *t, int axis, bool keepdim);
tg_tensor *tg_argmax(const tg_tensor *t, int axis, bool keepdim);   /* int32 */
tg_tensor *tg_argmax_all(const tg_tensor *t);                        /* over the flattened tensor */
tg_tensor *tg_argmin(const tg_tensor *t, int axis, bool keepdim);
tg_tensor *tg_cumsum(const tg_tensor *t, int axis);
tg_tensor *tg_cumprod(const tg_tensor *t, int axis);
/* The running maximum / minimum along axis; *indices (when not NULL) receives a second new tensor: the int32 index
 * where each running extreme was first reached (tinygrad's cummax/cummin return both). */
tg_tensor *tg_cummax(const tg_tensor *t, int axis, tg_tensor **indices);
tg_tensor *tg_cummin(const tg_tensor *t, int axis, tg_tensor **indices);
tg_tensor *tg_logcumsumexp(const tg_tensor *t, int axis);  /* log(cumsum(exp(t))) computed stably */
tg_tensor *tg_softmax(const tg_tensor *t, int axis);
tg_tensor *tg_log_softmax(const tg_tensor *t, int axis);

/* ---- movement (views: no data moves until realized) ---- */
typedef enum tg_pad_mode { TG_PAD_CONSTANT = 0, TG_PAD_REFLECT, TG_PAD_REPLICATE, TG_PAD_CIRCULAR } tg_pad_mode;
tg_tensor *tg_reshape(const tg_tensor *t, const int64_t *shape, size_t ndim); /* one -1 size is inferred */
tg_tensor *tg_permute(const tg_tensor *t, const int *order, size_t ndim);
tg_tensor *tg_transpose(const tg_tensor *t, int dim0, int dim1);
tg_tensor *tg_expand(const tg_tensor *t, const int64_t *shape, size_t ndim);  /* -1 keeps a size */
/* pads: 2*ndim values, (before, after) for each axis in order (tinygrad's tuple-of-pairs form); ndim == t's ndim.
 * value: the fill of TG_PAD_CONSTANT (an integral value keeps an int or bool tensor's dtype; a fractional one promotes
 * like any float scalar). Reflect needs pads < size, circular pads <= size. */
tg_tensor *tg_pad(const tg_tensor *t, const int64_t *pads, size_t ndim, tg_pad_mode mode, double value);
tg_tensor *tg_shrink(const tg_tensor *t, const int64_t *bounds, size_t ndim); /* (start, end) per axis */
tg_tensor *tg_flip(const tg_tensor *t, const int *axes, size_t naxes);
tg_tensor *tg_squeeze(const tg_tensor *t, int axis);     /* one axis of size 1 */
tg_tensor *tg_squeeze_all(const tg_tensor *t);           /* every axis of size 1 */
tg_tensor *tg_unsqueeze(const tg_tensor *t, int axis);
tg_tensor *tg_flatten(const tg_tensor *t, int start_dim, int end_dim); /* default 0, -1 */
/* Basic indexing (tinygrad's __getitem__): one entry per indexed axis. */
typedef enum tg_index_kind { TG_IDX_INT, TG_IDX_SLICE, TG_IDX_NEWAXIS, TG_IDX_ELLIPSIS, TG_IDX_TENSOR } tg_index_kind;
typedef struct tg_index {
  tg_index_kind kind;
  int64_t start, stop, step;        /* TG_IDX_INT uses start; TG_IDX_SLICE uses all three */
  bool has_start, has_stop;         /* false: the slice's default (like Python's missing start/stop) */
  const tg_tensor *tensor;          /* TG_IDX_TENSOR: an int tensor of indices */
} tg_index;
#define TG_I(i) ((tg_index){TG_IDX_INT, (i), 0, 1, true, false, NULL})
#define TG_ALL ((tg_index){TG_IDX_SLICE, 0, 0, 1, false, false, NULL})
#define TG_SL(a, b) ((tg_index){TG_IDX_SLICE, (a), (b), 1, true, true, NULL})
#define TG_SLS(a, b, s) ((tg_index){TG_IDX_SLICE, (a), (b), (s), true, true, NULL})
#define TG_NEWAXIS ((tg_index){TG_IDX_NEWAXIS, 0, 0, 1, false, false, NULL})
#define TG_ELLIPSIS ((tg_index){TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL})
#define TG_IT(t) ((tg_index){TG_IDX_TENSOR, 0, 0, 1, false, false, (t)})
tg_tensor *tg_getitem(const tg_tensor *t, const tg_index *idx, size_t n);
tg_tensor *tg_cat(const tg_tensor *const *ts, size_t n, int axis);
tg_tensor *tg_stack(const tg_tensor *const *ts, size_t n, int axis);
tg_tensor *tg_repeat(const tg_tensor *t, const int64_t *repeats, size_t n);
/* split into pieces of `size` along axis (the last may be smaller); out receives up to max_out tensors.
 * Returns the number of pieces, or -1 on error. */
int tg_split(const tg_tensor *t, int64_t size, int axis, tg_tensor **out, size_t max_out);
int tg_chunk(const tg_tensor *t, int chunks, int axis, tg_tensor **out, size_t max_out);
/* split into n pieces of the given sizes (they must sum to the axis size); returns n, or -1 on error */
int tg_split_sizes(const tg_tensor *t, const int64_t *sizes, size_t n, int axis, tg_tensor **out, size_t max_out);
tg_tensor *tg_gather(const tg_tensor *t, int axis, const tg_tensor *index);
/* tinygrad's _pool: the sliding windows over the last nk axes as a view, shape (..., o_1..o_nk, k_1..k_nk) with
 * o = ceil((size - dilation*(k-1)) / stride); stride/dilation NULL = 1. Convolutions and pools of any rank are
 * reductions over it (the Python package's conv3d, avg_pool3d, max_pool indices). */
tg_tensor *tg_pool(const tg_tensor *t, const int64_t *kernel, size_t nk, const int64_t *stride, const int64_t *dilation);

/* ---- linear algebra and nn ---- */
tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b); /* batched, broadcasting; 1-d operands as numpy */
tg_tensor *tg_dot(const tg_tensor *a, const tg_tensor *b);
/* x (N, Cin, H, W), w (Cout, Cin/groups, kH, kW), bias (Cout) or NULL; stride/padding/dilation per spatial axis. */
tg_tensor *tg_conv2d(const tg_tensor *x, const tg_tensor *w, const tg_tensor *bias, int groups, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2]);
/* kernel, stride (NULL = kernel), padding (NULL = 0) per spatial axis; dilation only for max. */
tg_tensor *tg_max_pool2d(const tg_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2]);
tg_tensor *tg_avg_pool2d(const tg_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         bool count_include_pad);
tg_tensor *tg_one_hot(const tg_tensor *t, int64_t num_classes);

/* ---- realization and data ---- */
tg_tensor *tg_contiguous(const tg_tensor *t);
/* tinygrad's assign: t takes x's value when realized (x broadcast to t's shape, same dtype; t may be a view). */
tg_status tg_assign(tg_tensor *t, const tg_tensor *x);
tg_status tg_realize(tg_tensor *t);
tg_status tg_realize_many(tg_tensor *const *ts, size_t n);
/* Realize and copy numel*itemsize bytes out, C order, in the tensor's dtype (weak tensors: default dtype). */
tg_status tg_to_host(tg_tensor *t, void *out, size_t nbytes);
/* The single element as a double / int64 (numel must be 1). */
tg_status tg_item_double(tg_tensor *t, double *out);
tg_status tg_item_int64(tg_tensor *t, int64_t *out);

/* ======================================================================================================= autograd
 *
 * tinygrad's autograd (src/grad/): the gradient is built as an ordinary lazy graph over the same IR by a rule table
 * (one rule per op), walked from the root back to the wanted tensors; it is scheduled and fused like any other graph
 * and computed only when realized. Only float tensors with storage have gradients.
 *
 * Which tensors get a .grad: tinygrad fills the grad of every live float tensor in the graph; here a tensor opts in
 * with tg_requires_grad(t, true) (nn layers mark their parameters), and tg_backward fills the grad of every live
 * handle that requires it and whose node is in the root's graph. Tensors that require grad but are not in the graph
 * keep their grad. Gradients flow through everything except tg_detach. Realizing a tensor replaces its graph by its
 * buffer, so call tg_backward before realizing the loss (tinygrad behaves the same).
 *
 * Errors (tg_last_error says which): a NULL tensor; a non-scalar root without an explicit gradient; a non-float root
 * or wrt tensor; a wrt tensor of a weak dtype, i.e. a constant made from a C scalar (tg_const_float(2.0)): "cannot
 * take gradient wrt a weak tensor"; an op with no gradient rule on the path. A strong 0-d constant (tg_scalar) is a
 * valid wrt tensor of tg_gradient, as in tinygrad. A wrt tensor with no path from the root gets zeros (tinygrad). */

/* Marks t (float, with storage: not a constant) as needing a gradient in tg_backward; false unmarks (the grad stays
 * until zeroed). */
tg_status tg_requires_grad(tg_tensor *t, bool requires_grad);
bool tg_get_requires_grad(const tg_tensor *t);         /* false for NULL */
/* d(loss)/d(t) into the grad of every tensor that requires it (loss must be a 0-d float tensor; the seed is 1).
 * A second backward ADDS to existing grads (tinygrad's accumulation); tg_zero_grad clears them. */
tg_status tg_backward(tg_tensor *loss);
/* The same with an explicit seed gradient of root's shape (root may have any shape). */
tg_status tg_backward_with_grad(tg_tensor *root, const tg_tensor *gradient);
/* tinygrad's own rule (Tensor.backward, used by the Python package): fills the grad of EVERY live float tensor with
 * storage whose node is in root's graph, whether it requires grad or not; gradient NULL: root 0-d, seed 1. */
tg_status tg_backward_all(tg_tensor *root, const tg_tensor *gradient);
/* t's gradient, or NULL when it has none. A BORROWED handle owned by t: valid until t's grad is zeroed or t is
 * released (tg_retain it to keep it longer). Its value is lazy: realize it or copy it out like any tensor. */
tg_tensor *tg_grad(const tg_tensor *t);
/* Drops t's grad (tinygrad's optimizer zero_grad sets grad = None); the next backward starts from zero. NULL ok. */
void tg_zero_grad(tg_tensor *t);
/* tinygrad's target.gradient(*wrt): out[i] = d(target)/d(wrt[i]) as NEW tensors (scope-owned or caller-owned like
 * any result), target a 0-d float tensor. Independent of requires_grad and of the grads. On error out[] is all NULL. */
tg_status tg_gradient(const tg_tensor *target, const tg_tensor *const *wrt, size_t n, tg_tensor **out);
/* The same with an explicit seed gradient of target's shape. */
tg_status tg_gradient_with_grad(const tg_tensor *target, const tg_tensor *gradient, const tg_tensor *const *wrt,
                                size_t n, tg_tensor **out);
/* A new tensor with t's value that stops gradients (tinygrad's detach). */
tg_tensor *tg_detach(const tg_tensor *t);

/* ======================================================================================================= datasets
 *
 * IDX files (the MNIST family's format: big-endian header and elements), plain or gzip/zlib-compressed (detected by
 * their magic; zlib inflates them). Every header is validated against the file: the magic, the element type, 1 to
 * TG_MAX_DIMS dimensions, none zero, the data size under max_bytes (0: TG_IDX_DEFAULT_MAX_BYTES), and a payload of
 * exactly the promised length. A malformed, truncated or lying file gives TG_ERR_IO and a message; never a crash. */
#define TG_IDX_DEFAULT_MAX_BYTES ((size_t)1 << 31)
typedef struct tg_idx {
  tg_dtype dtype;                 /* TG_UINT8, TG_INT8, TG_INT16, TG_INT32, TG_FLOAT32 or TG_FLOAT64 */
  int ndim;
  int64_t shape[TG_MAX_DIMS];
  void *data;                     /* nbytes of elements, C order, host byte order; owned (tg_idx_free) */
  size_t nbytes;
} tg_idx;
tg_status tg_idx_load(const char *path, size_t max_bytes, tg_idx *out);
tg_status tg_idx_parse(const void *bytes, size_t n, size_t max_bytes, tg_idx *out); /* file contents in memory */
void tg_idx_free(tg_idx *idx);                     /* frees data and clears *idx (NULL ok) */
tg_tensor *tg_idx_tensor(const tg_idx *idx);       /* a new tensor holding a copy of the data */
/* MNIST or Fashion-MNIST from a directory with the four standard files (train-images-idx3-ubyte, train-labels-
 * idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; each NAME.gz or NAME): images uint8 (N, H, W), labels
 * uint8 (N) in 0..9, counts matching. Kept on the host: a training loop copies its batches into tensors. */
typedef struct tg_mnist { tg_idx train_images, train_labels, test_images, test_labels; } tg_mnist;
tg_status tg_mnist_load(const char *dir, tg_mnist *out);
void tg_mnist_free(tg_mnist *m);
bool tg_mnist_dir_complete(const char *dir);       /* all four files exist in dir (compressed or not) */

/* ===================================================================================================== optimizers
 *
 * tinygrad's nn/optim.py (src/nn/optim.c). An optimizer is created over a list of tensors: those marked with
 * tg_requires_grad are its params (updated by each step); the others are buffers (BatchNorm running statistics):
 * realized with each step, never updated. Duplicates count once. The optimizer keeps its own references (the caller
 * may release its handles) and owns its state: the learning rate, a (1,) float32 tensor, per-param state (momentum b;
 * Adam's m, v) in float32 or the env's OPTIM_DTYPE (float16, bfloat16, float64), and Adam's (1,) float32 step powers
 * b1_t, b2_t; all are zero-filled (b1_t, b2_t: one) buffers from the start.
 *
 * tg_optim_step builds every update as lazy tensor ops from the params' gradients (tg_grad), assigns them
 * (param := param - lr*update, tinygrad's formulas and order of operations) and realizes params, state and buffers
 * together in one schedule. It needs training mode (tg_set_training(true): tinygrad's TRAINING=1). A param without a
 * gradient is an error (nothing is changed). tg_optim_step_with also realizes extra tensors in that schedule (the
 * loss: tinygrad's Tensor.realize(loss, *opt.schedule_step())); a 784-128-10 MLP + Adam step is 30 kernels, as in
 * tinygrad.
 * Gradients are not cleared by a step: call tg_optim_zero_grad before the next backward (or grads accumulate).
 *
 * The learning rate is a tensor read by the kernels, so it can change between steps without new kernels:
 * tg_optim_set_lr, or assign any (1,) float32 expression into tg_optim_lr(o) (it is realized with the next step).
 * Errors (tg_last_error): NULL arguments, lr < 0, momentum < 0, weight_decay < 0, no param (no tensor requires grad),
 * a non-float param, an unknown OPTIM_DTYPE. Not here yet: tinygrad's Muon (Newton-Schulz) and FUSE_OPTIM. */
typedef struct tg_optim tg_optim;

/* SGD (tinygrad defaults: lr 0.001, momentum 0, weight_decay 0, nesterov false, classic false). classic: scale by lr
 * before the momentum buffer (b = momentum*b + lr*g) instead of after (b = momentum*b + g; update lr*b). */
tg_optim *tg_optim_sgd(tg_tensor *const *params, size_t n, double lr, double momentum, double weight_decay,
                       bool nesterov, bool classic);
/* LARS: SGD with a layer-wise trust ratio tcoef*|w|/(|g| + wd*|w|) (defaults: lr 0.001, momentum 0.9,
 * weight_decay 1e-4, nesterov false, classic true, tcoef 0.001). */
tg_optim *tg_optim_lars(tg_tensor *const *params, size_t n, double lr, double momentum, double weight_decay,
                        bool nesterov, bool classic, double tcoef);
/* Adam (defaults: lr 0.001, b1 0.9, b2 0.999, eps 1e-8); AdamW adds decoupled weight decay (default 0.01). */
tg_optim *tg_optim_adam(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps);
tg_optim *tg_optim_adamw(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps,
                         double weight_decay);
/* LAMB: AdamW with the trust ratio |w|/|update| (defaults: lr 0.001, b1 0.9, b2 0.999, eps 1e-6, weight_decay 0). */
tg_optim *tg_optim_lamb(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps,
                        double weight_decay);
/* tinygrad's OptimizerGroup: steps all of them in one schedule. Takes ownership of the optimizers on success. */
tg_optim *tg_optim_group(tg_optim *const *optims, size_t n);
void tg_optim_free(tg_optim *o);   /* NULL ok; releases the optimizer's references and its state */

tg_status tg_optim_step(tg_optim *o);
tg_status tg_optim_step_with(tg_optim *o, tg_tensor *const *also, size_t nalso);
void tg_optim_zero_grad(tg_optim *o);                 /* drops every param's grad (tg_zero_grad) */

tg_tensor *tg_optim_lr(tg_optim *o);                  /* BORROWED (1,) float32 lr (not for a group) */
tg_status tg_optim_set_lr(tg_optim *o, double lr);    /* assigns and realizes (a group: every optimizer) */
tg_status tg_optim_get_lr(tg_optim *o, double *out);  /* a group: its first optimizer's */
size_t tg_optim_nparams(const tg_optim *o);           /* params updated (0 for NULL) */
/* The state tensors (for saving and loading): "lr", "b1_t", "b2_t", "m.<i>", "v.<i>" or "b.<i>" (a group prefixes
 * "<optimizer index>."). BORROWED handles; name (may be NULL) receives the name. */
size_t tg_optim_state_count(const tg_optim *o);
tg_tensor *tg_optim_state(tg_optim *o, size_t i, char *name, size_t name_size);

/* ======================================================================================================== nn
 *
 * tinygrad's nn/ (layers, initializers, state dicts, safetensors) and the functional losses of its Tensor class.
 * All tensor-returning calls follow the tensor rules above (new reference, scope-owned inside a scope, NULL + error).
 *
 * Training mode is tinygrad's global Tensor.training (Context(TRAINING=1)): dropout is active and BatchNorm uses and
 * updates batch statistics only while it is on. It starts off. */
bool tg_set_training(bool on);   /* returns the previous value */
bool tg_is_training(void);

typedef enum tg_reduction { TG_REDUCTION_MEAN = 0, TG_REDUCTION_SUM, TG_REDUCTION_NONE } tg_reduction;

/* ---- initializers (tinygrad's Tensor classmethods; dtype TG_VOID = float32; they draw from tg_rand) ---- */
tg_tensor *tg_scaled_uniform(const int64_t *shape, size_t ndim, tg_dtype dtype);  /* U(-1,1) * numel^-0.5 */
tg_tensor *tg_glorot_uniform(const int64_t *shape, size_t ndim, tg_dtype dtype);  /* bound sqrt(6/(s0+prod(s1:))) */
tg_tensor *tg_kaiming_uniform(const int64_t *shape, size_t ndim, double a, tg_dtype dtype); /* tinygrad default a 0.01 */
tg_tensor *tg_kaiming_normal(const int64_t *shape, size_t ndim, double a, tg_dtype dtype);

/* ---- functional ---- */
tg_tensor *tg_linear(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias); /* x @ weight + bias
                                                             (weight (in, out) as tinygrad's Tensor.linear; bias NULL ok) */
tg_tensor *tg_layernorm(const tg_tensor *x, const int *axes, size_t naxes, double eps);  /* axes NULL: last axis */
/* (x - mean) * weight * invstd + bias, mean/weight/bias/invstd shaped like the axes (default axis 1); NULL weight/bias */
tg_tensor *tg_batchnorm(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias, const tg_tensor *mean,
                        const tg_tensor *invstd, const int *axes, size_t naxes);
tg_tensor *tg_rms_norm(const tg_tensor *x, double eps);   /* x * rsqrt(mean(x^2, -1) + eps), computed in float32 */
tg_tensor *tg_dropout(const tg_tensor *x, double p);      /* identity unless training; p in [0, 1] */
/* x (N, Cin, H, W), weight (Cin, Cout/groups, kH, kW); output_padding < max(stride, dilation) like PyTorch. NULL
 * stride/dilation = 1, NULL padding/output_padding = 0. */
tg_tensor *tg_conv_transpose2d(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias, int groups,
                               const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                               const int64_t output_padding[2]);
/* q (..., L, E), k (..., S, E), v (..., S, Ev); mask bool (false = masked out) or additive float, NULL for none;
 * is_causal builds the lower-triangular mask (then mask must be NULL); dropout_p only applies while training. */
tg_tensor *tg_scaled_dot_product_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                                           const tg_tensor *mask, double dropout_p, bool is_causal);

/* ---- losses (tinygrad's Tensor methods; x is the prediction, y the target) ---- */
/* y: class indices (shape of x without the class axis, which is axis 1, or 0 for 1-d x) or probabilities (x's shape) */
tg_tensor *tg_cross_entropy(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction, double label_smoothing);
/* class axis -1; targets equal to ignore_index (unless it is -1) count for nothing, also in the mean */
tg_tensor *tg_sparse_categorical_crossentropy(const tg_tensor *x, const tg_tensor *y, int64_t ignore_index,
                                              double label_smoothing, tg_reduction reduction);
tg_tensor *tg_binary_crossentropy(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction);
tg_tensor *tg_binary_crossentropy_logits(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction,
                                         const tg_tensor *pos_weight);  /* pos_weight NULL: 1 */
/* x: log-probabilities (N, C, ...); y: indices (N, ...); weight (C) or NULL; has_ignore_index selects ignore_index */
tg_tensor *tg_nll_loss(const tg_tensor *x, const tg_tensor *y, const tg_tensor *weight, bool has_ignore_index,
                       int64_t ignore_index, tg_reduction reduction);

/* ---- state dicts: ordered name -> tensor maps (tinygrad's get_state_dict / load_state_dict) ----
 * A state dict holds its own reference to each tensor (released by tg_state_dict_free) and marks which entries are
 * trainable parameters (is_param) and which are buffers (BatchNorm running statistics). It also carries the
 * string metadata of a safetensors file. */
typedef struct tg_state_dict tg_state_dict;
tg_state_dict *tg_state_dict_new(void);
void tg_state_dict_free(tg_state_dict *sd);  /* NULL ok */
tg_status tg_state_dict_add(tg_state_dict *sd, const char *name, tg_tensor *t, bool is_param); /* names unique */
size_t tg_state_dict_len(const tg_state_dict *sd);
const char *tg_state_dict_name(const tg_state_dict *sd, size_t i);
tg_tensor *tg_state_dict_tensor(const tg_state_dict *sd, size_t i);  /* borrowed */
bool tg_state_dict_is_param(const tg_state_dict *sd, size_t i);
tg_tensor *tg_state_dict_get(const tg_state_dict *sd, const char *name); /* borrowed; NULL (no error) if absent */
/* The trainable tensors (is_param) / the buffers (!is_param) in order, borrowed, up to max; returns the full count. */
size_t tg_state_dict_parameters(const tg_state_dict *sd, tg_tensor **out, size_t max);
size_t tg_state_dict_buffers(const tg_state_dict *sd, tg_tensor **out, size_t max);
tg_status tg_state_dict_realize(const tg_state_dict *sd);  /* realizes every tensor (e.g. after a training step) */
/* Copies src's values into model's tensors, matched by name (tinygrad's load_state_dict): shapes must match (except
 * () vs (1,)); a different dtype is cast to the model's dtype. strict: every model name must be in src. Nothing is
 * changed when it fails. */
tg_status tg_load_state_dict(tg_state_dict *model, const tg_state_dict *src, bool strict);
tg_status tg_state_dict_set_metadata(tg_state_dict *sd, const char *key, const char *value);
const char *tg_state_dict_metadata(const tg_state_dict *sd, const char *key);  /* NULL if absent */
size_t tg_state_dict_metadata_len(const tg_state_dict *sd);
const char *tg_state_dict_metadata_key(const tg_state_dict *sd, size_t i);

/* ---- safetensors (https://huggingface.co/docs/safetensors): u64 header length, JSON header, data ----
 * Loading validates everything before creating tensors: the header JSON (a strict hand-written parser), dtypes, shapes
 * (at most TG_MAX_DIMS, no overflow), and data_offsets (each tensor's byte size, in bounds, contiguous, covering the
 * data exactly). A malformed or truncated file is TG_ERR_IO with a message; the tensors are copies on the CPU. */
tg_status tg_safe_load(const char *path, tg_state_dict **out);
tg_status tg_safe_load_buffer(const void *data, size_t size, tg_state_dict **out);
tg_status tg_safe_save(const tg_state_dict *sd, const char *path);  /* realizes the tensors; keeps the metadata */
tg_status tg_safe_save_buffer(const tg_state_dict *sd, uint8_t **out, size_t *size); /* free *out with tg_buffer_free */
void tg_buffer_free(void *p);

/* ---- GGUF (ggml's model file: github.com/ggml-org/ggml docs/gguf.md; tinygrad's llm/gguf.py) ----
 * Layout (little-endian): "GGUF", u32 version (2 or 3), u64 tensor count, u64 metadata count, the metadata
 * (key string, u32 value type, value), the tensor infos (name string, u32 n_dims <= 4, u64 ne[n_dims] with ne[0]
 * the fastest axis, u32 ggml type, u64 offset into the data), zero padding to general.alignment (u32, a power of two,
 * default 32), the tensor data. Strings are a u64 length and that many bytes.
 *
 * Opening validates the whole header against the file before anything is returned: every count, length, value type,
 * bool byte, array element type and nesting (at most TG_GGUF_MAX_DEPTH), general.alignment, tensor name (unique,
 * 1-63 bytes of UTF-8 without NUL, like ggml's GGML_MAX_NAME), n_dims, sizes (no overflow, ne[0] a multiple of the
 * type's block), ggml type (a current ggml type id), and offset (tensor i starts where tensor i-1 ends, padded to
 * the alignment: what ggml's reader requires) and that the data lies inside the file. Keys must be unique, non-empty
 * UTF-8 without NUL. String values are kept as bytes (tokenizer vocabularies hold arbitrary bytes). A malformed or
 * truncated file is TG_ERR_IO with a message naming the field and its byte offset; a file of a newer or big-endian
 * version is TG_ERR_UNSUPPORTED. Nothing here may crash on input (tools/fuzz_gguf.c).
 *
 * tg_gguf_open maps the file (mmap, private copy-on-write: writes through a tensor never reach the file); metadata
 * strings and arrays are decoded into the handle. Tensors made from the file stay valid after tg_gguf_close: each
 * holds the mapping until it is released. */
typedef struct tg_gguf tg_gguf;
#define TG_GGUF_MAX_DEPTH 4   /* nested arrays accepted (real files use 1) */

typedef enum tg_gguf_type {   /* metadata value types, with their ids in the file */
  TG_GGUF_UINT8 = 0, TG_GGUF_INT8 = 1, TG_GGUF_UINT16 = 2, TG_GGUF_INT16 = 3, TG_GGUF_UINT32 = 4, TG_GGUF_INT32 = 5,
  TG_GGUF_FLOAT32 = 6, TG_GGUF_BOOL = 7, TG_GGUF_STRING = 8, TG_GGUF_ARRAY = 9, TG_GGUF_UINT64 = 10,
  TG_GGUF_INT64 = 11, TG_GGUF_FLOAT64 = 12
} tg_gguf_type;

/* A metadata value. Integers are in u (unsigned types) or i (signed types, bool 0/1), floats in f; a string is
 * str.len bytes at str.s (NUL-terminated after them; it may hold NULs itself); an array holds arr.len elements of
 * arr.type: for a scalar element type at arr.data as the C type (uint8_t, int8_t, uint16_t, int16_t, uint32_t,
 * int32_t, float, bool, uint64_t, int64_t, double), for strings and arrays at arr.items (values). Owned by the
 * tg_gguf handle (or, given to the writer, by its caller). */
typedef struct tg_gguf_value {
  tg_gguf_type type;
  union {
    uint64_t u;
    int64_t i;
    double f;
    struct { const char *s; uint64_t len; } str;
    struct { tg_gguf_type type; uint64_t len; const void *data; const struct tg_gguf_value *items; } arr;
  } v;
} tg_gguf_value;

/* ggml tensor types (ggml.h ids). Those marked * can be read as tensors here; the others are validated (sizes,
 * blocks) and their raw bytes are available, but tg_gguf_tensor says "not supported yet". */
typedef enum tg_ggml_type {
  TG_GGML_F32 = 0 /* * */, TG_GGML_F16 = 1 /* * */, TG_GGML_Q4_0 = 2 /* * */, TG_GGML_Q4_1 = 3 /* * */,
  TG_GGML_Q5_0 = 6, TG_GGML_Q5_1 = 7, TG_GGML_Q8_0 = 8 /* * */, TG_GGML_Q8_1 = 9, TG_GGML_Q2_K = 10,
  TG_GGML_Q3_K = 11, TG_GGML_Q4_K = 12 /* * */, TG_GGML_Q5_K = 13 /* * */, TG_GGML_Q6_K = 14 /* * */,
  TG_GGML_Q8_K = 15, TG_GGML_IQ2_XXS = 16, TG_GGML_IQ2_XS = 17, TG_GGML_IQ3_XXS = 18, TG_GGML_IQ1_S = 19,
  TG_GGML_IQ4_NL = 20, TG_GGML_IQ3_S = 21, TG_GGML_IQ2_S = 22, TG_GGML_IQ4_XS = 23, TG_GGML_I8 = 24,
  TG_GGML_I16 = 25, TG_GGML_I32 = 26, TG_GGML_I64 = 27, TG_GGML_F64 = 28, TG_GGML_IQ1_M = 29,
  TG_GGML_BF16 = 30 /* * */, TG_GGML_TQ1_0 = 34, TG_GGML_TQ2_0 = 35, TG_GGML_MXFP4 = 39 /* * */
} tg_ggml_type;
/* "q8_0", ... (ggml's names); NULL for an id that is no current ggml type. */
const char *tg_ggml_type_name(int type);
/* Elements per block and bytes per block (1 and the item size for plain types); false for an unknown id. */
bool tg_ggml_type_block(int type, int64_t *block_elems, int64_t *block_bytes);

typedef struct tg_gguf_tensor_info {
  const char *name;
  int type;                /* a tg_ggml_type id */
  int ndim;                /* 0..4 */
  int64_t ne[4];           /* ggml order: ne[0] fastest; unused dims are 1. The tensor's shape is ne reversed. */
  uint64_t offset;         /* from the start of the data section */
  uint64_t nbytes;
} tg_gguf_tensor_info;

tg_status tg_gguf_open(const char *path, tg_gguf **out);
/* The same on a file image in memory (copied: data need not outlive the call). */
tg_status tg_gguf_open_buffer(const void *data, size_t size, tg_gguf **out);
void tg_gguf_close(tg_gguf *g);  /* NULL ok */
uint32_t tg_gguf_version(const tg_gguf *g);
uint32_t tg_gguf_alignment(const tg_gguf *g);
uint64_t tg_gguf_data_offset(const tg_gguf *g);   /* where the data section starts in the file */
size_t tg_gguf_kv_count(const tg_gguf *g);
const char *tg_gguf_kv_key(const tg_gguf *g, size_t i);            /* in file order; NULL out of range */
const tg_gguf_value *tg_gguf_kv_value(const tg_gguf *g, size_t i);
const tg_gguf_value *tg_gguf_get(const tg_gguf *g, const char *key); /* NULL (no error) when absent */
/* Typed getters: TG_ERR_INVALID_ARGUMENT when absent or of another type (the message says which). get_int takes any
 * integer type whose value fits int64; get_float f32 or f64; get_string a string (NUL-terminated, *len may be NULL). */
tg_status tg_gguf_get_int(const tg_gguf *g, const char *key, int64_t *out);
tg_status tg_gguf_get_float(const tg_gguf *g, const char *key, double *out);
tg_status tg_gguf_get_bool(const tg_gguf *g, const char *key, bool *out);
tg_status tg_gguf_get_string(const tg_gguf *g, const char *key, const char **out, size_t *len);
size_t tg_gguf_tensor_count(const tg_gguf *g);
const tg_gguf_tensor_info *tg_gguf_tensor_info_at(const tg_gguf *g, size_t i);  /* NULL out of range */
const tg_gguf_tensor_info *tg_gguf_find_tensor(const tg_gguf *g, const char *name); /* NULL (no error) if absent */

/* How a tensor's bytes reach the tensor. TG_GGUF_MAP: a CPU buffer on the mapped file itself, no copy (when the
 * tensor's address is not 64-byte aligned, which happens for files with general.alignment < 64, its bytes are copied
 * into a CPU buffer instead: generated kernels use aligned vector accesses); TG_GGUF_COPY: copied into a buffer on
 * the default device. */
typedef enum tg_gguf_load { TG_GGUF_MAP = 0, TG_GGUF_COPY } tg_gguf_load;
/* The tensor `name` with shape ne reversed (tinygrad's reshape(*reversed(dims))). F32, F16 and BF16 tensors are the
 * file's values in that dtype; the quantized types (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4) are float32 tensors
 * whose dequantization (tg_ggml_dequantize) is a lazy expression on the raw bytes: it fuses into whatever consumes it
 * (a matmul with a Q8_0 weight is one kernel reading the bytes), and nothing dequantized is stored unless realized.
 * Errors: an unknown name (TG_ERR_INVALID_ARGUMENT), a type not supported yet (TG_ERR_UNSUPPORTED). */
tg_tensor *tg_gguf_tensor(const tg_gguf *g, const char *name, tg_gguf_load how);
/* The raw bytes of tensor `name`: a uint8 tensor of shape (nbytes,). */
tg_tensor *tg_gguf_tensor_bytes(const tg_gguf *g, const char *name, tg_gguf_load how);
/* ggml dequantization as tensor ops: raw is a uint8 tensor of exactly numel(shape)/block * block_bytes elements (any
 * shape: it is flattened), shape the result's shape (its last size a multiple of the block). F32/F16/BF16 bitcast
 * the bytes to their dtype; the quantized types give float32 (ggml's dequantize_row_* reference, bit for bit). */
tg_tensor *tg_ggml_dequantize(const tg_tensor *raw, int type, const int64_t *shape, size_t ndim);

/* A GGUF writer (for tests and tools): metadata and tensors in the order added, written as version 3 with every
 * tensor padded to the alignment (0: 32) and, when it is not 32, a general.alignment u32 entry first. Keys and names
 * follow the reader's rules (checked when added); values are deep-copied. */
typedef struct tg_gguf_writer tg_gguf_writer;
tg_gguf_writer *tg_gguf_writer_new(uint32_t alignment);   /* NULL for an alignment that is not a power of two */
void tg_gguf_writer_free(tg_gguf_writer *w);              /* NULL ok */
tg_status tg_gguf_writer_add(tg_gguf_writer *w, const char *key, const tg_gguf_value *value);
tg_status tg_gguf_writer_add_uint32(tg_gguf_writer *w, const char *key, uint32_t v);
tg_status tg_gguf_writer_add_float32(tg_gguf_writer *w, const char *key, float v);
tg_status tg_gguf_writer_add_string(tg_gguf_writer *w, const char *key, const char *s); /* NUL-terminated */
/* A tensor of ggml type `type`, ne in ggml order (ne[0] fastest, ndim 1..4), nbytes of its data (copied), which
 * must be the size the type and ne give. */
tg_status tg_gguf_writer_add_tensor(tg_gguf_writer *w, const char *name, int type, const int64_t *ne, size_t ndim,
                                    const void *data, size_t nbytes);
/* A tensor whose bytes are produced when the file is written (models larger than memory): fill(user, row, dst,
 * row_bytes) writes row `row` (ne[0] elements, row_bytes bytes of the type) into dst; a status other than TG_OK stops
 * the write with that error (fill sets it). tg_gguf_writer_write streams the file (one chunk of rows in memory). */
typedef tg_status (*tg_gguf_fill_fn)(void *user, uint64_t row, void *dst, size_t row_bytes);
tg_status tg_gguf_writer_add_tensor_fill(tg_gguf_writer *w, const char *name, int type, const int64_t *ne,
                                         size_t ndim, tg_gguf_fill_fn fill, void *user);
tg_status tg_gguf_writer_write(const tg_gguf_writer *w, const char *path);
tg_status tg_gguf_writer_write_buffer(const tg_gguf_writer *w, uint8_t **out, size_t *size); /* tg_buffer_free */

/* ---- LLM: llama-family models from GGUF files (tinygrad's llm/model.py; src/nn/llm.c, llm_sample.c) ----
 * tg_llm_load reads the architecture from general.architecture ("llama", "qwen2", "qwen3") and the hyper-parameters
 * from its keys ({arch}.block_count, embedding_length, feed_forward_length, attention.head_count(_kv),
 * attention.key_length, attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count,
 * rope.scaling.type/factor, context_length): grouped-query attention, RoPE (ggml's "normal" interleaved pairs for
 * llama, "neox" half-split for qwen; linear scaling, llama-3 frequency factors from rope_freqs.weight), RMSNorm in
 * float32, SwiGLU FFN, qwen2's q/k/v biases, qwen3's q/k RMSNorm, tied embeddings (output.weight missing: the
 * token embedding). Weights stay the file's bytes (mapped): quantized ones are dequantized inside the kernels that
 * read them. Every key, tensor name and tensor shape is checked at load: a missing or inconsistent one is TG_ERR_IO
 * naming it; another architecture or rope scaling (yarn outside gpt-oss) is TG_ERR_UNSUPPORTED.
 * "gpt-oss" (src/nn/llm_gptoss.c, OpenAI's reference formulation) adds {arch}.expert_count, expert_used_count,
 * expert_feed_forward_length (else feed_forward_length), attention.sliding_window, rope.scaling.type yarn with
 * rope.scaling.factor and original_context_length, and the tensors blk.N.{attn_q/k/v/output (+ .bias), attn_sinks,
 * post_attention_norm, ffn_gate_inp (+ .bias), ffn_gate/up/down_exps (+ .bias; MXFP4 or any type)}: neox RoPE with
 * YaRN, per-head sinks, a sliding window on the even layers, full causal attention on the odd ones, top-k router
 * logits then softmax over the k, experts with the clamped SwiGLU (alpha 1.702, limit 7).
 *
 * The model owns a KV cache of n_ctx positions (float32). tg_llm_forward(m, ids, n, pos, ...) runs n tokens at
 * positions pos..pos+n-1 over the cache's first pos positions (pos <= the positions filled so far: going back
 * rewinds) and writes them to the cache. A one-token step (decode) is a JIT (tg_jit) over the bound Variables
 * start_pos and the token: after its capture every step replays the same kernels (no schedule, no compile); n > 1
 * (prefill) is one eager realize. Set JIT=0 to run decode eagerly too. Not thread-safe (one model, one thread). */
typedef struct tg_llm tg_llm;
typedef struct tg_llm_config {
  char arch[16];                 /* "llama", "qwen2", "qwen3", "gpt-oss" */
  int n_layer, dim, n_head, n_kv_head, head_dim, ffn_dim, vocab, rope_dim;
  int64_t ctx_train;             /* {arch}.context_length */
  double rope_base, rope_scale;  /* rope_scale: positions are multiplied by it (linear scaling: 1/factor) */
  double norm_eps;
  bool rope_neox, qkv_bias, qk_norm, tied_output, rope_freq_factors;
  int weight_type;               /* the ggml type of blk.0.attn_q.weight */
  int32_t bos, eos;              /* tokenizer.ggml.bos/eos_token_id, -1 when absent */
  /* gpt-oss (zero for the others): experts, the even layers' window, YaRN (rope.scaling.type yarn) */
  int n_expert, n_expert_used;   /* {arch}.expert_count, expert_used_count */
  int64_t sliding_window;        /* {arch}.attention.sliding_window */
  double yarn_factor;            /* rope.scaling.factor (1: no YaRN) */
  int64_t yarn_ctx;              /* rope.scaling.original_context_length */
  double rope_mscale;            /* cos and sin are multiplied by it: YaRN's 0.1 ln(factor) + 1, else 1 */
} tg_llm_config;
typedef struct tg_llm_options {
  int64_t n_ctx;                 /* KV-cache positions; 0: min(context_length, 2048) */
} tg_llm_options;
tg_status tg_llm_load(const char *path, const tg_llm_options *opt, tg_llm **out);   /* opt NULL: defaults */
void tg_llm_free(tg_llm *m);     /* NULL ok */
const tg_llm_config *tg_llm_get_config(const tg_llm *m);
int64_t tg_llm_n_ctx(const tg_llm *m);
int64_t tg_llm_n_past(const tg_llm *m);   /* positions in the KV cache */
/* The model's GGUF file (metadata for a tokenizer); owned by the model. */
const tg_gguf *tg_llm_gguf(const tg_llm *m);
/* logits: vocab floats for the last token, or n*vocab (row i after ids[i]) when all_logits. Errors: an id outside
 * [0, vocab), n == 0, pos > n_past, pos + n > n_ctx. */
tg_status tg_llm_forward(tg_llm *m, const int32_t *ids, size_t n, int64_t pos, bool all_logits, float *logits);
/* Kernels of the captured decode step (0 before the second decode). */
size_t tg_llm_decode_kernels(const tg_llm *m);

/* Sampling over a logits row on the host: temperature 0 is greedy (argmax, the lowest id on ties); else the logits
 * are divided by temperature, cut to the top_k largest (0: all), then to the smallest set whose softmax mass reaches
 * top_p (1: all), renormalized and drawn with a generator seeded by seed (the same seed, logits and calls give the same
 * tokens). Errors: temperature < 0 or not finite, top_k < 0, top_p outside (0, 1]. */
typedef struct tg_llm_sampling { double temperature; int top_k; double top_p; uint64_t seed; } tg_llm_sampling;
typedef struct tg_llm_sampler tg_llm_sampler;
tg_llm_sampler *tg_llm_sampler_new(const tg_llm_sampling *p);
void tg_llm_sampler_free(tg_llm_sampler *s);  /* NULL ok */
/* the sampled id, or -1 with an error (NULL arguments, n == 0, a NaN logit) */
int32_t tg_llm_sample(tg_llm_sampler *s, const float *logits, size_t n);

/* Generation: prefill ids (the cache restarts at position 0), then up to max_tokens tokens, each passed to cb as it
 * is made; it stops at the end-of-generation token (config eos, unless ignore_eos; the eos itself is passed to cb),
 * when cb returns false, or when the context is full. stats (may be NULL) receives counts and timings. */
/* Random-weight models of the real architectures (src/nn/llm_mkmodel.c, the tool tg-mkmodel): every tensor and key
 * tg_llm_load reads, weights drawn from a seeded generator (N(0, 1/in) approximately; norms near 1) and written
 * in `type` (F32, F16, Q8_0, Q4_0, Q4_1: the matrices; norms and biases F32; the embedding too unless F32/F16/Q8_0/
 * Q4_0/Q4_1 as well), plus a byte-level BPE vocabulary (tokenizer.ggml.model gpt2: the 256 GPT-2 byte tokens, then
 * merges of earlier tokens, then <|begin_of_text|> / <|end_of_text|> as control tokens that are bos / eos). llama gets
 * llama-3 rope scaling (rope_freqs.weight) when llama3_rope. The file is streamed (never all in memory). */
typedef struct tg_llm_model_spec {
  const char *arch;              /* "llama", "qwen2", "qwen3", "gpt-oss" */
  int n_layer, dim, n_head, n_kv_head, head_dim, ffn_dim, vocab;  /* head_dim 0: dim / n_head */
  int64_t ctx;
  int type;                      /* tg_ggml_type of the matrices */
  bool tied, llama3_rope;
  double rope_base;              /* 0: 10000 (llama) / 1000000 (qwen) / 150000 (gpt-oss) */
  uint64_t seed;
  /* gpt-oss: n_expert experts (0: 8) of ffn_dim each, n_expert_used per token (0: 2), a window of sliding_window
   * (0: 128) on the even layers, the experts' matrices in expert_type (0: MXFP4, quantized with ggml's reference
   * rounding; or any type above), YaRN factor 32 over an original context of 4096, biases and sinks random, and an
   * o200k-style vocabulary (tokenizer.ggml.pre gpt-4o) whose control tokens are harmony's (<|start|>, <|message|>,
   * <|channel|>, <|end|>, <|return|> = eos) */
  int n_expert, n_expert_used;
  int64_t sliding_window;
  int expert_type;
} tg_llm_model_spec;
/* Presets by name: "tiny" (2 layers, dim 64, vocab 512), "small" (4 layers, dim 256, vocab 4096), "1b" (Llama-3.2-1B's
 * shape: 16 layers, dim 2048, 32/8 heads, ffn 8192, vocab 128256, tied, llama-3 rope), "gpt-oss-tiny" (gpt-oss:
 * 4 layers, dim 64, 4/2 heads of 16, 8 experts of 64 top-2, window 8, vocab 512, MXFP4 experts). false for another
 * name. */
bool tg_llm_model_preset(const char *name, tg_llm_model_spec *out);
tg_status tg_llm_write_random_model(const tg_llm_model_spec *spec, const char *path);

typedef bool (*tg_llm_token_cb)(void *user, int32_t token);
typedef struct tg_llm_gen_params {
  tg_llm_sampling sampling;
  int max_tokens;                /* <= 0: up to the context */
  bool ignore_eos;
} tg_llm_gen_params;
typedef struct tg_llm_stats {
  int prompt_tokens, gen_tokens, decode_steps;  /* decode_steps: one-token forwards (gen_tokens - 1 or gen_tokens) */
  double prefill_seconds, decode_seconds;       /* the prompt's forward; the sum of the decode steps */
} tg_llm_stats;
tg_status tg_llm_generate(tg_llm *m, const int32_t *ids, size_t n, const tg_llm_gen_params *p, tg_llm_token_cb cb,
                          void *user, tg_llm_stats *stats);

/* ---- tokenizer (from a GGUF file's tokenizer.ggml.* metadata; src/nn/tokenizer*.c) ----
 * tokenizer.ggml.model "gpt2" is byte-level BPE: the text is split by the pre-tokenizer of tokenizer.ggml.pre
 * (the gpt-2, llama-3, qwen2, o200k/gpt-oss and starcoder splits under llama.cpp's names for them: gpt-2, mpt, olmo;
 * llama3, llama-bpe, dbrx; qwen2, stablelm2; gpt-4o; starcoder, refact, command-r...), each word mapped to GPT-2's byte
 * alphabet and merged by the ranks of tokenizer.ggml.merges (llama-3's whole-word shortcut included). "llama" is
 * SentencePiece-style: spaces become U+2581, a space is prefixed (tokenizer.ggml.add_space_prefix, default true),
 * adjacent pieces merge by tokenizer.ggml.scores (highest first), characters without a piece fall back to <0xXX>
 * byte tokens. Special tokens are matched in the text before that: user-defined ones always, control ones with
 * TG_TOKENIZE_PARSE_SPECIAL (the longest at each position). This is llama.cpp's behaviour (src/llama-vocab.cpp),
 * except its per-model whitespace stripping around special tokens (phi-3's, jina's). A byte with no token in a
 * byte-level vocabulary becomes the unknown token; without one, encoding it is TG_ERR_UNSUPPORTED.
 * A tokenizer is read-only once built: several threads may encode and decode with it at once. */
typedef struct tg_tokenizer tg_tokenizer;
typedef enum tg_token_type {  /* tokenizer.ggml.token_type values */
  TG_TOKEN_UNDEFINED = 0, TG_TOKEN_NORMAL = 1, TG_TOKEN_UNKNOWN = 2, TG_TOKEN_CONTROL = 3, TG_TOKEN_USER_DEFINED = 4,
  TG_TOKEN_UNUSED = 5, TG_TOKEN_BYTE = 6
} tg_token_type;
enum {
  TG_TOKENIZE_ADD_SPECIAL = 1u,   /* encode: add BOS / EOS as the vocabulary asks (add_bos_token, add_eos_token) */
  TG_TOKENIZE_PARSE_SPECIAL = 2u, /* encode: control tokens written in the text become those tokens */
  TG_DETOKENIZE_SPECIAL = 4u      /* decode: write control and unknown tokens' text (else they give nothing) */
};
/* Errors: missing or inconsistent tokenizer metadata (TG_ERR_IO, naming the key), a model or pre-tokenizer not
 * supported (TG_ERR_UNSUPPORTED). The tokenizer copies what it needs: g may be closed afterwards. */
tg_status tg_tokenizer_from_gguf(const tg_gguf *g, tg_tokenizer **out);
void tg_tokenizer_free(tg_tokenizer *t);  /* NULL ok */
/* text[0..len) (any bytes: invalid UTF-8 is tokenized byte by byte) -> *ids (malloc'ed, free with tg_buffer_free;
 * NULL when *n is 0). Texts over 256 MiB are TG_ERR_INVALID_ARGUMENT. */
tg_status tg_tokenizer_encode(const tg_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                              size_t *n);
/* ids -> the bytes they stand for (*text malloc'ed and NUL-terminated, free with tg_buffer_free). A SentencePiece
 * vocabulary's prefixed space is removed from the first piece. An id out of range is TG_ERR_INVALID_ARGUMENT. */
tg_status tg_tokenizer_decode(const tg_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                              size_t *len);
/* The bytes token id stands for (owned by t; NULL for an id out of range); the token's text in the vocabulary. */
const char *tg_tokenizer_piece(const tg_tokenizer *t, int32_t id, size_t *len);
const char *tg_tokenizer_token_text(const tg_tokenizer *t, int32_t id, size_t *len);
tg_token_type tg_tokenizer_token_type(const tg_tokenizer *t, int32_t id);  /* TG_TOKEN_UNDEFINED out of range */
int32_t tg_tokenizer_find(const tg_tokenizer *t, const char *text, size_t len);  /* the id of that text, or -1 */
size_t tg_tokenizer_vocab_size(const tg_tokenizer *t);
int32_t tg_tokenizer_bos(const tg_tokenizer *t);  /* -1 when the vocabulary has none */
int32_t tg_tokenizer_eos(const tg_tokenizer *t);
int32_t tg_tokenizer_eot(const tg_tokenizer *t);  /* end of turn (<|eot_id|>, <|im_end|>...), else -1 */
/* Whether generation stops at id: EOS, EOT, EOM, and control tokens that end a turn (<|eot_id|>, <|eom_id|>,
 * <|im_end|>, <|endoftext|>, <|end|>, <end_of_turn>, and harmony's <|return|> and <|call|>, where <|end|> only ends
 * a message). */
bool tg_tokenizer_is_eog(const tg_tokenizer *t, int32_t id);
const char *tg_tokenizer_model(const tg_tokenizer *t);  /* "gpt2" or "llama" */
const char *tg_tokenizer_pre(const tg_tokenizer *t);    /* tokenizer.ggml.pre as given ("default" when absent) */
const char *tg_tokenizer_chat_template(const tg_tokenizer *t);  /* tokenizer.chat_template, or NULL */

/* Streaming decode: feed ids one at a time, get the text that is complete UTF-8 so far; an incomplete sequence at
 * the end is held back until the bytes completing it arrive (or flush writes what is left, bytes that can never
 * complete as U+FFFD). *text stays valid until the next call on s. */
typedef struct tg_token_stream tg_token_stream;
tg_token_stream *tg_token_stream_new(const tg_tokenizer *t, unsigned flags);  /* flags: TG_DETOKENIZE_SPECIAL */
void tg_token_stream_free(tg_token_stream *s);  /* NULL ok */
tg_status tg_token_stream_feed(tg_token_stream *s, int32_t id, const char **text, size_t *len);
tg_status tg_token_stream_flush(tg_token_stream *s, const char **text, size_t *len);

/* Chat templates, written in C (no Jinja): "llama3" (<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>,
 * as llama.cpp's built-in llama-3 template), "chatml" (<|im_start|>role\ncontent<|im_end|>\n) and "gpt-oss"
 * (OpenAI's harmony format: a system message with the model identity, date and reasoning effort; a "system" role
 * becomes the developer message; assistant turns on the final channel). The text starts without BOS: encode it with
 * TG_TOKENIZE_ADD_SPECIAL | TG_TOKENIZE_PARSE_SPECIAL. */
typedef struct tg_chat_message { const char *role, *content; } tg_chat_message;
/* The template a tokenizer's vocabulary or tokenizer.chat_template calls for, or NULL when none is known. */
const char *tg_chat_template_name(const tg_tokenizer *t);
/* Renders n messages (roles system, user, assistant; llama3 accepts any role) and, with add_generation_prompt, the
 * opening of the assistant's turn. *out is malloc'ed (tg_buffer_free). An unknown template name or role is
 * TG_ERR_INVALID_ARGUMENT. gpt-oss's "Current date:" is today's UTC date; its system (or developer) message must come
 * first. */
tg_status tg_chat_render(const char *template_name, const tg_chat_message *msgs, size_t n,
                         bool add_generation_prompt, char **out);

/* ---- layers: structs holding their parameters (realized at creation, default inits as tinygrad's) ----
 * Each has _new (NULL + error on bad arguments), _free, _forward, and _state (adds its tensors to a state dict under
 * prefix + "." + tinygrad's attribute name: "weight", "bias", "running_mean", ...; prefix NULL or "" for none). */
typedef struct tg_linear_layer { tg_tensor *weight, *bias; int64_t in_features, out_features; } tg_linear_layer;
tg_linear_layer *tg_linear_new(int64_t in_features, int64_t out_features, bool bias);  /* U(+-1/sqrt(in)) */
void tg_linear_free(tg_linear_layer *l);
tg_tensor *tg_linear_forward(const tg_linear_layer *l, const tg_tensor *x);
tg_status tg_linear_state(const tg_linear_layer *l, const char *prefix, tg_state_dict *sd);

/* Conv2d; padding_same: tinygrad's padding='same' (stride 1 only; the padding field is then ignored). Transposed
 * convolution (ConvTranspose2d) when transposed: weight (Cin, Cout/groups, kH, kW), output_padding used. */
typedef struct tg_conv2d_layer {
  tg_tensor *weight, *bias;
  int64_t kernel[2], stride[2], padding[2], dilation[2], output_padding[2];
  int groups;
  bool padding_same, transposed;
} tg_conv2d_layer;
typedef struct tg_conv2d_options {  /* zero-initialized = stride 1, padding 0, dilation 1, groups 1, with bias */
  int64_t stride[2], padding[2], dilation[2], output_padding[2];
  int groups;
  bool no_bias, padding_same;
} tg_conv2d_options;
tg_conv2d_layer *tg_conv2d_new(int64_t in_ch, int64_t out_ch, const int64_t kernel[2], const tg_conv2d_options *opt);
tg_conv2d_layer *tg_conv_transpose2d_new(int64_t in_ch, int64_t out_ch, const int64_t kernel[2],
                                         const tg_conv2d_options *opt);
void tg_conv2d_free(tg_conv2d_layer *l);
tg_tensor *tg_conv2d_forward(const tg_conv2d_layer *l, const tg_tensor *x);
tg_status tg_conv2d_state(const tg_conv2d_layer *l, const char *prefix, tg_state_dict *sd);

/* BatchNorm (1d/2d/3d: channels on axis 1). Training: normalizes with the batch statistics and updates running_mean,
 * running_var (unbiased) and num_batches_tracked by assign (realized with the next realize of those tensors: give
 * them to the optimizer with the parameters, which realizes buffers with each step, or call tg_state_dict_realize);
 * eval: uses the running statistics when tracked. */
typedef struct tg_batchnorm_layer {
  tg_tensor *weight, *bias, *running_mean, *running_var, *num_batches_tracked;
  int64_t size;
  double eps, momentum;
  bool affine, track_running_stats;
} tg_batchnorm_layer;
tg_batchnorm_layer *tg_batchnorm_new(int64_t size, double eps, double momentum, bool affine, bool track_running_stats);
void tg_batchnorm_free(tg_batchnorm_layer *l);
tg_tensor *tg_batchnorm_forward(tg_batchnorm_layer *l, const tg_tensor *x);
tg_status tg_batchnorm_state(const tg_batchnorm_layer *l, const char *prefix, tg_state_dict *sd);

/* LayerNorm over the last ndim axes (normalized_shape); RMSNorm over the last axis; GroupNorm over channel groups. */
typedef struct tg_layernorm_layer {
  tg_tensor *weight, *bias;
  int64_t normalized_shape[TG_MAX_DIMS];
  size_t ndim;
  double eps;
} tg_layernorm_layer;
tg_layernorm_layer *tg_layernorm_new(const int64_t *normalized_shape, size_t ndim, double eps, bool elementwise_affine);
void tg_layernorm_free(tg_layernorm_layer *l);
tg_tensor *tg_layernorm_forward(const tg_layernorm_layer *l, const tg_tensor *x);
tg_status tg_layernorm_state(const tg_layernorm_layer *l, const char *prefix, tg_state_dict *sd);

typedef struct tg_rmsnorm_layer { tg_tensor *weight; int64_t dim; double eps; } tg_rmsnorm_layer;
tg_rmsnorm_layer *tg_rmsnorm_new(int64_t dim, double eps, bool elementwise_affine);  /* tinygrad default eps 1e-6 */
void tg_rmsnorm_free(tg_rmsnorm_layer *l);
tg_tensor *tg_rmsnorm_forward(const tg_rmsnorm_layer *l, const tg_tensor *x);
tg_status tg_rmsnorm_state(const tg_rmsnorm_layer *l, const char *prefix, tg_state_dict *sd);

typedef struct tg_groupnorm_layer { tg_tensor *weight, *bias; int64_t num_groups, num_channels; double eps; }
    tg_groupnorm_layer;
tg_groupnorm_layer *tg_groupnorm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine);
void tg_groupnorm_free(tg_groupnorm_layer *l);
tg_tensor *tg_groupnorm_forward(const tg_groupnorm_layer *l, const tg_tensor *x);
tg_status tg_groupnorm_state(const tg_groupnorm_layer *l, const char *prefix, tg_state_dict *sd);

/* Embedding: weight (vocab, embed) glorot_uniform; forward takes an int index tensor of any shape. */
typedef struct tg_embedding_layer { tg_tensor *weight; int64_t vocab_size, embed_size; } tg_embedding_layer;
tg_embedding_layer *tg_embedding_new(int64_t vocab_size, int64_t embed_size);
void tg_embedding_free(tg_embedding_layer *l);
tg_tensor *tg_embedding_forward(const tg_embedding_layer *l, const tg_tensor *idx);
tg_status tg_embedding_state(const tg_embedding_layer *l, const char *prefix, tg_state_dict *sd);


/* ====================================================================================================== attention
 *
 * Attention as tensor functions (src/nn/attention.c), laid out like torch's SDPA: q (B, H, T, D), k (B, KVH, S, D),
 * v (B, KVH, S, Dv), result (B, H, T, Dv) in q's dtype; scores are computed in float32 (float64 for float64 inputs).
 * GQA: KVH must divide H and query head h uses kv head h / (H/KVH) (torch's enable_gqa, repeat_interleave), without
 * a repeated copy of k and v. T and S may be symbolic (a KV-cache view of length start_pos + T: tg_shrink_sym); the
 * other sizes must be concrete. Options (zero-initialized, or NULL: plain softmax(q k^T / sqrt(D)) v):
 *   scale   0: 1/sqrt(D)
 *   causal  query i, at position start + i, sees the keys at positions <= start + i (start 0: torch's is_causal)
 *   start   the position of query 0 (KV-cache decode and chunked prefill: start_pos, a tg_sint)
 *   window  > 0 (with causal): query p sees only the keys [p - window + 1, p] (gpt-oss sliding layers)
 *   sinks   (H,) float logits, one per head, added to the softmax denominator only (gpt-oss): the weights are
 *           exp(s_j - m) / (sum_j exp(s_j - m) + exp(sink - m)), no value row for the sink
 *   mask    bool (false = masked out) or additive float, broadcastable to (B, H, T, S); with a symbolic T or S its
 *           size there must be 1
 *   block   tg_flash_attention's keys per block, and queries per band with a window (0: 128); tg_attention ignores it
 * A query that sees no key (and has no sink) gives NaN, as in torch. Errors name the op and the shapes. */
typedef struct tg_attention_opts {
  double scale;
  bool causal;
  tg_sint start;
  int64_t window;
  const tg_tensor *sinks;
  const tg_tensor *mask;
  int64_t block;
} tg_attention_opts;
/* The plain attention: the (T, S) scores are materialized and softmaxed (the oracle of tg_flash_attention). */
tg_tensor *tg_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, const tg_attention_opts *opts);
/* The same result by blocks of `block` keys (flash-decoding): per block the running max m_b, l_b = sum exp(s - m_b)
 * and o_b = exp(s - m_b) v, merged as sum_b exp(m_b - M) o_b / (sum_b exp(m_b - M) l_b [+ exp(sink - M)]), M the
 * max over blocks (and the sink). With a window, a concrete T and no mask, each block of queries attends to its own
 * band of block + window - 1 keys instead (when that is well under T x S): a windowed decode step reads window keys,
 * whatever S. Causal without a window (concrete T and start, no mask), each block of queries attends to the keys up
 * to its last position only. Equal to tg_attention within float32 rounding; a symbolic S loops over the ceil(S/block) blocks it
 * needs. Made of tensor ops: gradients flow to q, k, v and sinks. */
tg_tensor *tg_flash_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                              const tg_attention_opts *opts);


/* ============================================================================================ mixture of experts
 *
 * The MoE pieces of tinygrad's llm/model.py and gpt-oss (src/nn/moe.c), as tensor functions.
 *
 * tg_topk: the k largest (largest) or smallest elements along axis, in order, as tinygrad's Tensor.topk (a stable
 * sort: equal elements keep their index order; torch.topk's order among equal values is unspecified, its stable
 * sort's is this one). Returns the values; *indices (when not NULL) receives a second new int32 tensor with their
 * positions. The ranking compares all pairs along the axis: meant for router widths, not vocabularies. */
tg_tensor *tg_topk(const tg_tensor *x, int64_t k, int axis, bool largest, tg_tensor **indices);

/* Gating (tinygrad's ExpertGating): how router logits (..., E) become the k experts' weights. */
typedef enum tg_moe_gating {
  TG_MOE_SOFTMAX_TOPK = 0, /* top-k of the logits, softmax over those k (gpt-oss; tinygrad SOFTMAX_WEIGHT) */
  TG_MOE_SOFTMAX,          /* softmax over all E, then top-k of the probabilities (qwen3-moe, mixtral) */
  TG_MOE_SIGMOID,          /* sigmoid scores, top-k (deepseek-v3 style) */
  TG_MOE_SQRT_SOFTPLUS     /* sqrt(softplus(logits)), top-k */
} tg_moe_gating;
typedef enum tg_moe_act {
  TG_MOE_SWIGLU = 0,       /* silu(gate) * up */
  TG_MOE_SWIGLU_OAI        /* gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit), g*sigmoid(alpha*g)*(u+1) */
} tg_moe_act;
/* Options (zero-initialized = gpt-oss routing with k to be set, plain SwiGLU, no biases):
 *   k            experts per token, 1..E
 *   gating       above; select_bias (E,) is added to the scores for choosing only (tinygrad's exp_probs_b)
 *   normalize    divide the k weights by their sum (norm_topk_prob); scale multiplies them (0: 1)
 *   router_bias  (E,) added to the router logits (gpt-oss's gate bias)
 *   act, alpha, limit   activation; alpha 0: 1.702, limit 0: 7.0 (gpt-oss's constants)
 *   gate_bias, up_bias (E, hidden), down_bias (E, D): per-expert biases (gpt-oss), gathered with the weights */
typedef struct tg_moe_opts {
  int64_t k;
  tg_moe_gating gating;
  bool normalize;
  double scale;
  const tg_tensor *select_bias, *router_bias;
  tg_moe_act act;
  double alpha, limit;
  const tg_tensor *gate_bias, *up_bias, *down_bias;
} tg_moe_opts;
/* The router: from logits (..., E) the k weights (..., k) float32 (the result) and the chosen experts *sel
 * (..., k) int32, best first. */
tg_tensor *tg_moe_router(const tg_tensor *logits, const tg_moe_opts *opts, tg_tensor **sel);
/* The MoE feed-forward of x (..., D): logits = x router_w^T (+ router_bias), router as above, then for each token
 * and chosen expert e: down_e(act(gate_e x, up_e x)) weighted and summed over the k. Expert weights are (E, out, in)
 * like GGUF's ffn_*_exps (gate_w, up_w (E, hidden, D); down_w (E, D, hidden)); any float tensors, GGUF quantized
 * ones included (their dequantization is lazy): each token's k experts are gathered (tinygrad's weight[sel]), and the
 * gather becomes an indexed load, so only the selected experts' weights are read. Result in x's dtype. */
tg_tensor *tg_moe_ffn(const tg_tensor *x, const tg_tensor *router_w, const tg_tensor *gate_w, const tg_tensor *up_w,
                      const tg_tensor *down_w, const tg_moe_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
