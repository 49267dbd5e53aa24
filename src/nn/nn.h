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

/* gpt-oss (llm_gptoss.c), called by llm.c: nn_oss_config reads the keys beyond the common ones into c (experts,
 * sliding window, YaRN); nn_oss_yarn gives the rope_dim / 2 divisors of the RoPE frequencies; nn_oss_bind checks and
 * maps the blocks' tensors and makes their KV caches (*out is set even on failure: nn_oss_free it); nn_oss_blocks
 * runs the blocks on x (T, dim) float32 at positions [sp + pos, +T) (cs, sn: (T, 1, rope_dim / 2)). */
typedef struct nn_oss nn_oss;
tg_status nn_oss_config(const tg_gguf *g, const char *path, tg_llm_config *c);
void nn_oss_yarn(const tg_llm_config *c, double *ff);
tg_status nn_oss_bind(const tg_gguf *g, const tg_llm_config *c, int64_t n_ctx, const char *path, nn_oss **out);
tg_tensor *nn_oss_blocks(nn_oss *o, const tg_tensor *x, const tg_tensor *cs, const tg_tensor *sn, const tg_tensor *sp,
                         int64_t pos);
void nn_oss_free(nn_oss *o);

/* Linears over Q4_0 / Q8_0 weights with 8-bit activations (ggml_qdot.c, ggml's CPU formulation). nn_qdot_quantize
 * splits x (..., K) float32 into int8 blocks of 32 (xq), their float16-rounded scales (dx) and the per-lane sum
 * corrections of the weight type (xc), all in the caller's scope; nn_qdot_pack splits the raw blocks of a (n_out, K)
 * weight of that type once into realized quants (n_out, K / 2 or K bytes) and float16 scales (n_out, K / 32), in the
 * caller's scope; nn_qdot_linear is x @ W^T from the three and the packed weight. */
bool nn_qdot_supported(int type);
tg_status nn_qdot_quantize(const tg_tensor *x, int type, tg_tensor **xq, tg_tensor **dx, tg_tensor **xc);
tg_status nn_qdot_pack(const tg_tensor *raw, int type, int64_t n_out, tg_tensor **qs, tg_tensor **d);
tg_tensor *nn_qdot_linear(const tg_tensor *x, const tg_tensor *xq, const tg_tensor *dx, const tg_tensor *xc,
                          const tg_tensor *qs, const tg_tensor *d, int type, int64_t n_out);

#endif
