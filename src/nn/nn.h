/* nn.h — internals shared by the nn files (layers, losses, state dicts, safetensors): the scope helper that turns a
 * composite's result into the caller's reference, and the safetensors dtype table. */
#ifndef TG_NN_NN_H
#define TG_NN_NN_H

#include "base/base.h"

/* Ends the scope opened by a composite: r (created in it) moves to the caller (or the enclosing scope); everything
 * else built in between is released. NULL stays NULL (the error is already set). */
tg_tensor *nn_finish(tg_scope s, tg_tensor *r);

/* A fresh handle on the same value as t (for calls that return their input unchanged). */
tg_tensor *nn_same(const tg_tensor *t);

/* conv2d with explicit (before, after) padding per spatial axis, negative amounts cropping (losses.c). */
tg_tensor *nn_conv2d_padded(const tg_tensor *x, const tg_tensor *w, const tg_tensor *bias, int groups,
                            const int64_t stride[2], const int64_t dilation[2], const int64_t before[2],
                            const int64_t after[2]);

/* The safetensors dtype name of a tinygrad dtype ("F32", ...), NULL when safetensors has none. */
const char *nn_safe_dtype_name(tg_dtype d);
/* The dtype of a safetensors name (name of length len), TG_VOID when unknown. */
tg_dtype nn_safe_dtype_from_name(const char *name, size_t len);

#endif
