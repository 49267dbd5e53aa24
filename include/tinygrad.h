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
 * Dtype arguments use TG_VOID for "the default" (tinygrad's dtype=None). The device is always "CPU" for now.
 * Not thread-safe: build and realize tensors from one thread. */


typedef struct tg_tensor tg_tensor;

#define TG_SHAPE(...) ((const int64_t[]){__VA_ARGS__}), (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define TG_AXES(...) ((const int[]){__VA_ARGS__}), (sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
#define TG_MAX_DIMS 16 /* the most dimensions a tensor may have */

/* ---- lifetime ---- */
tg_tensor *tg_retain(tg_tensor *t);  /* +1 reference owned by the caller; returns t (NULL ok) */
void tg_release(tg_tensor *t);       /* -1 reference (NULL ok) */
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
const char *tg_device(const tg_tensor *t);         /* "CPU", or NULL for a device-less (weak scalar) tensor */
char *tg_graph_str(const tg_tensor *t);            /* the UOp graph as text (src/uop/print.c); free with tg_str_free */
void tg_str_free(char *s);

/* ---- creation ---- */
/* Copies numel*itemsize bytes of host data in the given dtype (any strong dtype; half/bfloat16/fp8 as their bits). */
tg_tensor *tg_from_data(const void *data, tg_dtype dtype, const int64_t *shape, size_t ndim);
tg_tensor *tg_from_floats(const float *data, const int64_t *shape, size_t ndim);
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
tg_tensor *tg_softmax(const tg_tensor *t, int axis);
tg_tensor *tg_log_softmax(const tg_tensor *t, int axis);

/* ---- movement (views: no data moves until realized) ---- */
typedef enum tg_pad_mode { TG_PAD_CONSTANT = 0, TG_PAD_REFLECT, TG_PAD_REPLICATE, TG_PAD_CIRCULAR } tg_pad_mode;
tg_tensor *tg_reshape(const tg_tensor *t, const int64_t *shape, size_t ndim); /* one -1 size is inferred */
tg_tensor *tg_permute(const tg_tensor *t, const int *order, size_t ndim);
tg_tensor *tg_transpose(const tg_tensor *t, int dim0, int dim1);
tg_tensor *tg_expand(const tg_tensor *t, const int64_t *shape, size_t ndim);  /* -1 keeps a size */
/* pads: 2*ndim values, (before, after) for each axis in order (tinygrad's tuple-of-pairs form); ndim == t's ndim.
 * value: the fill of TG_PAD_CONSTANT. Reflect needs pads < size, circular pads <= size. */
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

#ifdef __cplusplus
}
#endif
#endif
