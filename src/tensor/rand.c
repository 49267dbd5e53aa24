/* rand.c — random tensors as tinygrad makes them (mixin/rand.py): threefry2x32 over a per-device key
 * [sha256(device index) low word, seed] (the index counts devices in the order they first draw numbers) and a
 * per-device 64-bit counter that every call advances by the number of 32-bit words it draws; both live on the
 * tensor's device: the counter is a 2-word uint32 tensor advanced by assign (so a JIT replay advances it too); the bits fill a float's mantissa ((bits >> (bitsize - nmant)) | bits(1.0), minus 1), randn is Box-Muller
 * over two uniforms, uniform/randint/normal scale them. The same seed gives tinygrad's numbers.
 *
 * The key buffer is made once per device; the counter is a library-owned handle (tensor_handle_internal), so realize
 * points it at its buffer like any live tensor. */
#include "tensor/tensor.h"

#include <math.h>

#include "engine/engine.h"
#include "runtime/runtime.h"

static uint64_t g_seed;      /* Tensor._seed (tinygrad starts from the time; we start from 0 until seeded) */

/* low 32 bits of int.from_bytes(sha256((i).to_bytes(4, "big")), "big"): the key word of the i-th device */
static const uint32_t device_key_words[8] = {0x14b81119u, 0x764f528du, 0xdb12cf1au, 0x0f79f7d3u,
                                             0x900b0937u, 0x3eaa7569u, 0x7c0172cbu, 0x28a3a23bu};

/* Tensor._device_seeds / _device_rng_counters: per device, in order of first use (forgotten by tg_manual_seed) */
typedef struct RngState { const char *device; UOp *key; tg_tensor *counter; } RngState;
static RngState rng_states[TG_ARRAY_LEN(device_key_words)];
static size_t rng_count;
static const char *rand_device; /* the device the next t_rand draws on (NULL: the default device) */

void tg_manual_seed(uint64_t seed) {
  g_seed = seed;
  UOpScope sc = uop_scope_begin();
  for (size_t i = 0; i < rng_count; i++) {
    uop_drop(rng_states[i].key);
    tg_release(rng_states[i].counter);
  }
  uop_scope_end(sc);
  rng_count = 0;
}

/* A 2-word uint32 buffer on device holding (a, b): a device's key and its counter start. */
static UOp *u32_buffer(const char *device, uint32_t a, uint32_t b) {
  uint32_t data[2] = {a, b};
  return engine_buffer_from_host(device, DT_UINT32, 2, data);
}

/* x[i] and x[a:b] through the getitem builder, so the views are the ones tinygrad's indexing makes. */
static UOp *idx_int(UOp *x, int64_t i) {
  tg_index ix = {TG_IDX_INT, i, 0, 1, true, false, NULL};
  return mix_getitem(x, &ix, NULL, 1);
}

static UOp *idx_slice(UOp *x, int64_t a, int64_t b) {
  tg_index ix = {TG_IDX_SLICE, a, b, 1, true, true, NULL};
  return mix_getitem(x, &ix, NULL, 1);
}

/* RandMixin._threefry_random_bits */
static UOp *threefry_bits(UOp *key, UOp *c0, UOp *c1) {
  UOp *x = mix_alu(TG_OP_OR, mix_alu(TG_OP_SHL, mix_cast(c1, DT_UINT64), mix_weak_int(32)), mix_cast(c0, DT_UINT64));
  UOp *k = mix_alu(TG_OP_OR, mix_alu(TG_OP_SHL, mix_cast(idx_int(key, 1), DT_UINT64), mix_weak_int(32)), mix_cast(idx_int(key, 0), DT_UINT64));
  x = mix_alu(TG_OP_THREEFRY, x, k);
  UOp *parts[2] = {mix_cast(x, DT_UINT32), mix_cast(mix_alu(TG_OP_SHR, x, mix_weak_int(32)), DT_UINT32)};
  return mix_cat(parts, 2, 0);
}

/* RandMixin.random_bits for num < 2^32 - 1 words (one chunk) */
static UOp *random_bits(UOp *key, UOp *counter, int64_t num) {
  if (num >= (int64_t)UINT32_MAX) return mix_err_unsupported("more than 2^32-1 random words in one call");
  UOp *low = idx_slice(counter, 0, 1), *high = idx_slice(counter, 1, 2);
  UOp *c_low = mix_add(low, mix_weak_int(0));
  UOp *c_high = mix_add(mix_add(high, mix_weak_int(0)), mix_lt(c_low, low));
  UOp *new_key = threefry_bits(key, c_low, c_high);
  int64_t half = (num + 1) / 2;
  UOp *counts0 = mix_arange(0, (double)half, 1, DT_UINT32);
  UOp *counts1 = mix_add(counts0, mix_weak_int(half));
  UOp *bits = idx_slice(threefry_bits(new_key, counts0, counts1), 0, num);
  return mix_cat(&bits, 1, 0); /* bits[0].cat(*bits[1:]): a STACK of one, flattened */
}

/* The mantissa width of each float dtype: _bits_to_rand keeps that many random bits under exponent 0. */
static int mantissa_bits(const DType *d) {
  switch (d->id) {
  case TG_FLOAT16: return 10;
  case TG_BFLOAT16: return 7;
  case TG_FLOAT32: return 23;
  case TG_FLOAT64: return 52;
  case TG_FP8E4M3: case TG_FP8E4M3FNUZ: return 3;
  case TG_FP8E5M2: case TG_FP8E5M2FNUZ: return 2;
  default: return -1;
  }
}

static const DType *uint_of_size(int bytes) {
  return bytes == 1 ? DT_UINT8 : bytes == 2 ? DT_UINT16 : bytes == 4 ? DT_UINT32 : DT_UINT64;
}

/* RandMixin._bits_to_rand */
/* Random bits -> uniform [0, 1): the top mantissa bits OR'd under the bit pattern of 1.0 give a float in [1, 2);
 * minus 1. Extra words (the last 32-bit word of an odd half count) are sliced off before the reshape. */
static UOp *bits_to_rand(UOp *bits, const Shape *s, const DType *dt) {
  const DType *ud = uint_of_size(dt_itemsize(dt));
  Const one = dt_const_bitcast(dt_const(dt, const_float(1.0)), dt, ud);
  UOp *u = mix_bitcast(bits, ud);
  u = mix_alu(TG_OP_OR, mix_alu(TG_OP_SHR, u, mix_weak_int(dt->bitsize - mantissa_bits(dt))), mix_weak_int(one.i));
  UOp *f = idx_slice(mix_bitcast(u, dt), 0, shape_numel(s));
  return mix_reshape(mix_sub(f, mix_weak_int(1)), s->d, s->ndim);
}

/* RandMixin.rand with Tensor._next_counter's key and counter */
/* Each device has its own key (device_key_words, seeded) and a 64-bit counter kept in a buffer: a draw of num words
 * uses the current counter and advances it by num with an assign, so consecutive draws (and a JIT replay of a step
 * that draws) get fresh numbers without the host reading the counter. */
static UOp *t_rand(const Shape *s, const DType *dt) {
  if (!dt_is_float(dt) || dt_is_weak(dt) || mantissa_bits(dt) < 0) return mix_err("rand only supports concrete float dtypes, got %s", dt->name);
  int64_t num = (shape_numel(s) * dt_itemsize(dt) + 3) / 4;
  char canon[TG_NAME_MAX];
  if (!rt_device_canonical(rand_device ? rand_device : tg_default_device(), canon, sizeof canon)) return NULL;
  const char *dev = mix_device_intern(canon);
  size_t i = 0;
  while (i < rng_count && rng_states[i].device != dev) i++;
  if (i == rng_count) {
    if (rng_count == TG_ARRAY_LEN(rng_states))
      return mix_err_unsupported("random numbers on more than 8 devices");
    UOp *key = u32_buffer(dev, device_key_words[i], (uint32_t)g_seed), *zero = u32_buffer(dev, 0, 0);
    tg_tensor *counter = zero ? tensor_handle_internal(zero) : NULL;
    if (!key || !counter) return NULL;
    rng_states[rng_count++] = (RngState){dev, uop_keep(key), counter};
  }
  RngState *r = &rng_states[i];
  /* Tensor._next_counter: the counter advances by num (a 64-bit add over two words), the draw uses its old value */
  UOp *num_lo = mix_weak_int((int64_t)((uint64_t)num & 0xffffffffu)), *num_hi = mix_weak_int(num >> 32);
  UOp *c = r->counter->uop;
  UOp *new_low = mix_add(idx_slice(c, 0, 1), num_lo);
  UOp *new_high = mix_add(mix_add(idx_slice(c, 1, 2), num_hi), mix_lt(new_low, idx_int(c, 0)));
  UOp *parts[2] = {new_low, new_high};
  UOp *advanced = mix_cat(parts, 2, 0);
  if (!advanced) return NULL;
  tensor_assign_node(r->counter, advanced);
  c = r->counter->uop;
  UOp *low = mix_sub(idx_slice(c, 0, 1), num_lo);
  UOp *high = mix_sub(mix_sub(idx_slice(c, 1, 2), num_hi), mix_lt(idx_int(c, 0), num_lo));
  UOp *old[2] = {low, high};
  UOp *counter = mix_cat(old, 2, 0);
  return mix_contiguous(bits_to_rand(random_bits(r->key, counter, num), s, dt));
}

/* randn_like's Box-Muller over a stacked pair of uniforms */
static UOp *t_randn(const Shape *s, const DType *dt) {
  if (s->ndim + 1 > TG_MAX_DIMS) return mix_err("too many dims");
  Shape s2 = {s->ndim + 1, {2}};
  for (int i = 0; i < s->ndim; i++) s2.d[i + 1] = s->d[i];
  UOp *src = t_rand(&s2, DT_FLOAT32);
  UOp *a = idx_int(src, 0), *b = idx_int(src, 1);
  UOp *r = mix_mul(mix_cos(mix_mul(a, mix_weak_float(2 * M_PI))), mix_sqrt(mix_mul(mix_log(mix_sub(mix_weak_int(1), b)), mix_weak_int(-2))));
  return mix_cast(r, dt);
}

/* The shape and dtype arguments of every random creator (dflt: the dtype TG_VOID stands for). */
static bool rand_args(const int64_t *shape, size_t ndim, tg_dtype dtype, const DType *dflt, Shape *s, const DType **dt) {
  if (ndim > TG_MAX_DIMS) return mix_err("%zu dims, at most %d supported", ndim, TG_MAX_DIMS), false;
  if (ndim && !shape) return mix_err("shape is NULL"), false;
  s->ndim = (int)ndim;
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return mix_err("invalid input shape %s", mix_fmt_dims(shape, (int)ndim)), false;
    s->d[i] = shape[i];
  }
  if ((unsigned)dtype >= TG_DTYPE_COUNT) return mix_err("unknown dtype %d", (int)dtype), false;
  *dt = dtype == TG_VOID ? dflt : &tg_dtype_table[dtype];
  return true;
}

tg_tensor *tg_rand(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  mix_ctx_begin("tg_rand");
  Shape s;
  const DType *dt;
  return tensor_ctx_end(rand_args(shape, ndim, dtype, dt_default_float(), &s, &dt) ? t_rand(&s, dt) : NULL);
}

tg_tensor *tg_randn(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  mix_ctx_begin("tg_randn");
  Shape s;
  const DType *dt;
  return tensor_ctx_end(rand_args(shape, ndim, dtype, dt_default_float(), &s, &dt) ? t_randn(&s, dt) : NULL);
}

/* tinygrad uniform: rand in the default float, scaled to [low, high), then cast to dtype. */
tg_tensor *tg_uniform(const int64_t *shape, size_t ndim, double low, double high, tg_dtype dtype) {
  mix_ctx_begin("tg_uniform");
  Shape s;
  const DType *dt;
  UOp *r = NULL;
  if (rand_args(shape, ndim, dtype, dt_default_float(), &s, &dt)) {
    if (!(low < high)) r = mix_err("requires low < high, got low=%g, high=%g", low, high);
    else r = mix_add(mix_cast(mix_mul(mix_py_scalar(high - low), t_rand(&s, dt_default_float())), dt), mix_py_scalar(low));
  }
  return tensor_ctx_end(r);
}

/* tinygrad randint: uniform over [low, high) cast to an int dtype; high must exceed low. */
tg_tensor *tg_randint(const int64_t *shape, size_t ndim, int64_t low, int64_t high, tg_dtype dtype) {
  mix_ctx_begin("tg_randint");
  Shape s;
  const DType *dt;
  UOp *r = NULL;
  if (rand_args(shape, ndim, dtype, DT_INT32, &s, &dt)) {
    if (!dt_is_int(dt) || dt_is_weak(dt)) r = mix_err("dtype=%s must be int", dt->name);
    else if (low >= high) r = mix_err("requires low < high, got low=%lld, high=%lld", (long long)low, (long long)high);
    else r = mix_add(mix_cast(mix_mul(mix_weak_int(high - low), t_rand(&s, dt_default_float())), dt), mix_weak_int(low));
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_normal(const int64_t *shape, size_t ndim, double mean, double std, tg_dtype dtype) {
  mix_ctx_begin("tg_normal");
  Shape s;
  const DType *dt;
  UOp *r = NULL;
  if (rand_args(shape, ndim, dtype, dt_default_float(), &s, &dt)) {
    if (std < 0) r = mix_err("requires std >= 0, got std=%g", std);
    else r = mix_add(mix_mul(mix_py_scalar(std), t_randn(&s, dt)), mix_py_scalar(mean));
  }
  return tensor_ctx_end(r);
}

/* *_like draws on t's device with t's shape and dtype (rand_device points the draw there for the call). */
tg_tensor *tg_rand_like(const tg_tensor *t) {
  mix_ctx_begin("tg_rand_like");
  UOp *x = tensor_in(t, 1);
  rand_device = t ? t->device : NULL; /* tinygrad rand_like: on self.device */
  UOp *r = x ? t_rand(&t->shape, x->dtype) : NULL;
  rand_device = NULL;
  return tensor_ctx_end(r);
}

tg_tensor *tg_randn_like(const tg_tensor *t) {
  mix_ctx_begin("tg_randn_like");
  UOp *x = tensor_in(t, 1), *r = NULL;
  if (x && dt_is_weak(x->dtype)) r = mix_err("randn_like requires a concrete dtype, got %s", x->dtype->name);
  else if (x) {
    rand_device = t->device;
    r = t_randn(&t->shape, x->dtype);
    rand_device = NULL;
  }
  return tensor_ctx_end(r);
}
