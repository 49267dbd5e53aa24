/* mixin.h — the graph builders: tinygrad's mixin methods (mixin/: ElementwiseMixin, MovementMixin, ReduceMixin and
 * the helpers around them) that Tensor and UOp share. They take and return UOp*, build exactly the UOps tinygrad's
 * methods build, and NULL in means NULL out (the first error stays in tg_last_error), so composites read like the
 * Python. The Tensor API (src/tensor) wraps them in handles; the scheduler and the gradient rules call them directly
 * (tinygrad writes those rewrites with the same methods on UOp), so no lower stage needs src/tensor.
 *
 * Builders run inside a build context (mix_ctx_begin / mix_ctx_end; nested begins join the outer one): a UOp scope
 * that frees every intermediate node at the end, the op name used in error messages, and memos of shapes and devices
 * (seeded with the inputs' known shapes, so a query never walks the whole input graph). */
#ifndef TG_UOP_MIXIN_H
#define TG_UOP_MIXIN_H

#include "uop/shape.h"

/* ---- build context ---- */
void mix_ctx_begin(const char *op);
void mix_ctx_end(void);
const char *mix_ctx_op(void);
/* Records an input's known shape and device (NULL: none) in the context's memos (the Tensor API's handles). */
void mix_ctx_seed(UOp *u, const SymShape *s, const char *device);
/* Error with the op name prefixed; returns NULL. */
UOp *mix_err(const char *fmt, ...) TG_PRINTF(1, 2);
UOp *mix_err_unsupported(const char *what);

/* ---- queries on built nodes (within a context) ---- */
/* The shape; a symbolic shape is an error naming the op ("... not supported by this op yet"): code that reads sizes
 * as numbers calls this one. */
bool mix_shape(UOp *u, Shape *out);
/* The shape with symbolic sizes allowed (code written for them). */
bool mix_shape_sym(UOp *u, SymShape *out);
const SymShape *mix_shape_peek(UOp *u); /* mix_shape_sym's answer in place (no copy), NULL on error */
int mix_ndim(UOp *u);
bool mix_has_device(UOp *u);                 /* has a device (some BUFFER below) */
/* tinygrad's UOp.device: a BUFFER's own, a COPY's target, else the first source's that has one; NULL for none.
 * Interned (lives for the process). */
const char *mix_device_name(UOp *u);
/* The process-lifetime copy of a canonical device name. */
const char *mix_device_intern(const char *canonical);
bool mix_resolve_dim(UOp *u, int dim, bool extra, int *out); /* tinygrad _resolve_dim, errors on out of range */
const char *mix_fmt_shape(const Shape *s); /* rotating static buffers, for messages */
const char *mix_fmt_dims(const int64_t *d, int n);

/* ---- constants and dtype ---- */
UOp *mix_const(Const v, const DType *d);       /* tinygrad UOp.const: 0-d CONST (d NULL: from the value's kind) */
UOp *mix_const_like(UOp *like, Const v, const DType *d); /* CONST expanded to like's shape (d NULL: like's dtype) */
UOp *mix_cast(UOp *x, const DType *d);
UOp *mix_bitcast(UOp *x, const DType *d);
/* A Python number: an int when v is integral (and exact in a double), else a float; as a weak CONST. */
Const mix_py_const(double v);
UOp *mix_py_scalar(double v);
/* tinygrad full without a buffer: const(fill, dt).reshape((1,)*n).expand(shape) (dt NULL: fill's own weak kind). */
UOp *mix_full(const Shape *s, Const fill, const DType *dt);

/* ---- movement (tinygrad MovementMixin and UOp._mop) ---- */
UOp *mix_mop(UOp *x, TgOp op, const int64_t *a, const int64_t *b, int n); /* raw: a/b per op as the UOp takes them */
UOp *mix_reshape(UOp *x, const int64_t *shape, int n);                      /* -1 inferred */
UOp *mix_broadcast_to(UOp *x, const Shape *s);
UOp *mix_expand(UOp *x, const int64_t *shape, int n);                       /* -1 keeps */
UOp *mix_permute(UOp *x, const int *order, int n);
UOp *mix_transpose(UOp *x, int d0, int d1);
UOp *mix_flip(UOp *x, const int *axes, int n);
UOp *mix_pad_raw(UOp *x, const int64_t *pads, int n);     /* MovementMixin.pad: (before, after) per axis, >= 0 */
UOp *mix_shrink(UOp *x, const int64_t *bounds, int n);    /* (start, end) per axis */
UOp *mix_shrink_to(UOp *x, const int64_t *shape, int n);  /* -1 keeps */
UOp *mix_pad_to(UOp *x, const int64_t *shape, int n);
UOp *mix_squeeze(UOp *x, int dim);
UOp *mix_unsqueeze(UOp *x, int dim);
UOp *mix_flatten(UOp *x, int start, int end);
UOp *mix_repeat(UOp *x, const int64_t *repeats, int n);
UOp *mix_stack(UOp *const *xs, int n, int dim);
UOp *mix_cat(UOp *const *xs, int n, int dim);
UOp *mix_pool(UOp *x, const int64_t *k, int nk, const int64_t *stride, const int64_t *dilation);
/* conv2d without bias: x (B, groups*cin, H, W) padded by pad4 (y before, y after, x before, x after), w (cout, cin, KH, KW) */
UOp *mix_conv2d(UOp *x, UOp *w, int groups, const int64_t stride[2], const int64_t dilation[2], const int64_t pad4[4]);
/* tinygrad's WINO=1 conv2d (3x3, stride and dilation 1) as Winograd F(4x4, 3x3), without bias: 4 kernels (the two
 * transforms, the per-position channel sums, the output transform) */
UOp *mix_conv2d_winograd(UOp *x, UOp *w, int groups, const int64_t pad4[4]);
/* the input gradient of a stride-1 conv2d with padding (py, px): g convolved with w transposed and flipped */
UOp *mix_conv2d_input_grad(UOp *g, UOp *w, int groups, int64_t py, int64_t px);
/* the graph tinygrad builds: every CUSTOM_GRAD replaced by its value, without the DETACH the marker put in it */
UOp *mix_strip_custom_grad(UOp *root);
UOp *mix_pad_constant(UOp *x, const int64_t *pads, int n, Const value); /* pads may be negative */
UOp *mix_pad_mode(UOp *x, const int64_t *pads, int n, tg_pad_mode mode, Const value);
/* tinygrad _getitem over the index entries as the public API describes them; the node of a TG_IDX_TENSOR entry i is
 * tensors[i] (the entry's handle is not read; tensors may be NULL when there is no tensor entry). */
UOp *mix_getitem(UOp *x, const tg_index *idx, UOp *const *tensors, size_t n);

/* ---- symbolic sizes (symshape.c): sizes are weak-int UOps (CONST or an expression of bound Variables) ---- */
/* The size expression checked: an int, or an int expression whose leaves are bound Variables and CONSTs. */
UOp *mix_sint(UOp *e);
/* Its value with every bound Variable at its bound value (false: not evaluable). */
bool mix_sint_value(UOp *e, int64_t *out);
UOp *mix_reshape_sym(UOp *x, const SymShape *to);
UOp *mix_broadcast_to_sym(UOp *x, const SymShape *ns);
UOp *mix_shrink_sym(UOp *x, UOp *const *bounds, int n); /* (start, end) per axis */
UOp *mix_pad_sym(UOp *x, UOp *const *pads, int n);      /* (before, after) per axis, zero fill */
/* The product of the sizes of s on the axes red[i] (NULL: all), a weak-int UOp. */
UOp *mix_sym_numel(const SymShape *s, const bool *red);

/* ---- elementwise (tinygrad ElementwiseMixin) ---- */
UOp *mix_alu(TgOp op, UOp *a, UOp *b);          /* promote both (_broadcasted) then op */
UOp *mix_alu1(TgOp op, UOp *a);
UOp *mix_add(UOp *a, UOp *b);
UOp *mix_sub(UOp *a, UOp *b);
UOp *mix_mul(UOp *a, UOp *b);
UOp *mix_div(UOp *a, UOp *b, tg_rounding mode);
UOp *mix_mod(UOp *a, UOp *b);
UOp *mix_fmod(UOp *a, UOp *b);
UOp *mix_neg(UOp *a);
UOp *mix_lt(UOp *a, UOp *b);
UOp *mix_gt(UOp *a, UOp *b);
UOp *mix_ge(UOp *a, UOp *b);
UOp *mix_le(UOp *a, UOp *b);
UOp *mix_ne(UOp *a, UOp *b);
UOp *mix_eq(UOp *a, UOp *b);
UOp *mix_logical_not(UOp *a);
UOp *mix_bitwise_not(UOp *a);
UOp *mix_where(UOp *c, UOp *x, UOp *y);
UOp *mix_maximum(UOp *a, UOp *b);
UOp *mix_minimum(UOp *a, UOp *b);
UOp *mix_inverse(UOp *a);
UOp *mix_reciprocal(UOp *a);
UOp *mix_sqrt(UOp *a);
UOp *mix_exp(UOp *a);
UOp *mix_exp2(UOp *a);
UOp *mix_log(UOp *a);
UOp *mix_log2(UOp *a);
UOp *mix_sin(UOp *a);
UOp *mix_cos(UOp *a);
UOp *mix_trunc(UOp *a);
UOp *mix_floor(UOp *a);
UOp *mix_ceil(UOp *a);
UOp *mix_sign(UOp *a);
UOp *mix_abs(UOp *a);
UOp *mix_square(UOp *a);
UOp *mix_pow(UOp *a, UOp *b);
UOp *mix_relu(UOp *a);
UOp *mix_sigmoid(UOp *a);
UOp *mix_tanh(UOp *a);
UOp *mix_softplus(UOp *a, double beta);
UOp *mix_logaddexp(UOp *a, UOp *b);
UOp *mix_clamp(UOp *a, UOp *lo, UOp *hi);
UOp *mix_isinf(UOp *a);
UOp *mix_isnan(UOp *a);
UOp *mix_detach(UOp *a);
UOp *mix_contiguous(UOp *a);
UOp *mix_contiguous_backward(UOp *a);
UOp *mix_contiguous_hint(UOp *a, ContigHint hint);
/* tinygrad _broadcasted: both operands promoted to their least upper dtype (a bare weak CONST stays a CONST) */
bool mix_broadcasted(UOp **a, UOp **b);
UOp *mix_round(UOp *a);                                 /* half to even, as tinygrad's round */
UOp *mix_erf(UOp *a);                                   /* Abramowitz-Stegun 7.1.26, as tinygrad */
UOp *mix_relu6(UOp *a);
UOp *mix_poly(UOp *x, const double *p, int n);          /* Horner: p[0]*x^(n-1) + ... + p[n-1] (tinygrad polyN) */
/* shorthands with a weak scalar operand (tinygrad's `x + 2`, `2 * x`) */
UOp *mix_weak_float(double v);   /* weak float CONST */
UOp *mix_weak_int(int64_t v);  /* weak int CONST */

/* ---- reductions (ReduceMixin and friends) ---- */
/* axes NULL: all axes. */
UOp *mix_reduce(UOp *x, TgOp op, const int *axes, int naxes, bool keepdim);
UOp *mix_sum(UOp *x, const int *axes, int naxes, bool keepdim, const DType *dtype);
UOp *mix_prod(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *mix_max(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *mix_min(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *mix_mean(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *mix_var(UOp *x, const int *axes, int naxes, bool keepdim, double correction);
UOp *mix_softmax(UOp *x, int axis, bool log);
UOp *mix_logsumexp(UOp *x, int axis, bool keepdim);
UOp *mix_argmax(UOp *x, int axis, bool keepdim);
UOp *mix_cumalu(UOp *x, int axis, TgOp op);
UOp *mix_cumsum(UOp *x, int axis);
UOp *mix_split_cumalu(UOp *x, int axis, TgOp op);  /* tinygrad _split_cumalu: one pooled stage up to 512, two beyond */
/* cummax (tinygrad's): the running maximum along axis and, when idx is given, the int32 index where it was first
 * reached */
UOp *mix_cummax(UOp *x, int axis, UOp **idx);
UOp *mix_logcumsumexp(UOp *x, int axis);
UOp *mix_dot(UOp *a, UOp *b);
UOp *mix_arange(double start, double stop, double step, const DType *dtype);
UOp *mix_one_hot_along_dim(UOp *x, int64_t num_classes, int dim);
UOp *mix_gather(UOp *x, int dim, UOp *index);

#endif
