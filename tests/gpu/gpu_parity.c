/* test_gpu_parity.c — the GPU-vs-CPU parity suite (ggml's test-backend-ops idea): every case builds one small graph
 * from random host inputs, realizes it on the CPU and on CUDA, and compares the outputs by normalized mean squared
 * error, NMSE = sum (gpu - cpu)^2 / sum cpu^2, against a per-case tolerance (NaN never passes; integer and bool
 * outputs must match exactly). The cases cover the elementwise ops in every dtype the GPU computes, casts, reductions
 * over each axis, movement ops, matmul, conv2d, pooling, softmax and cumsum, so each GPU lowering (gpudims, locals,
 * group reduces, vector loads) meets the CPU's answer. Runs only where a CUDA device exists (tests/gpu_suites.def). */
#include <stdlib.h>

#include "gpu_test.h"
#include "tinygrad.h"

typedef tg_tensor *(*Build)(tg_tensor *const *in);

typedef struct Case {
  const char *name;
  Build build;
  int nin;
  tg_dtype dtype;        /* of the inputs */
  int64_t shape[4][4];   /* per input, up to 4 dims; 0 ends a shape */
  double tol;            /* NMSE bound for float outputs */
} Case;

/* deterministic inputs: floats in [-1, 1], ints in [-8, 8) (unsigned: [0, 16)), bools half true */
static void fill_input(void *buf, tg_dtype dt, int64_t n, unsigned seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    double u = (double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0;
    int iv = (int)((seed >> 12) % 16) - 8;
    switch (dt) {
    case TG_FLOAT32: ((float *)buf)[i] = (float)u; break;
    case TG_FLOAT64: ((double *)buf)[i] = u; break;
    case TG_INT32: ((int32_t *)buf)[i] = iv; break;
    case TG_INT8: ((int8_t *)buf)[i] = (int8_t)iv; break;
    case TG_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(iv + 8); break;
    case TG_INT64: ((int64_t *)buf)[i] = iv; break;
    case TG_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(iv >= 0); break;
    default: ((uint8_t *)buf)[i] = 0; break;
    }
  }
}

static size_t shape_len(const int64_t *s) {
  size_t n = 0;
  while (n < 4 && s[n]) n++;
  return n;
}

/* the output as float64, or NULL with a message (the tensors made here belong to run_case's scope) */
static double *read_back(tg_tensor *t, int64_t *numel) {
  tg_tensor *d = tg_cast(t, TG_FLOAT64);
  tg_tensor *h = d ? tg_to(d, "CPU") : NULL;
  *numel = tg_numel(t);
  double *out = *numel >= 0 ? malloc(((size_t)*numel + 1) * sizeof(double)) : NULL;
  tg_status st = h && out ? tg_to_host(h, out, (size_t)*numel * sizeof(double)) : TG_ERR_RUNTIME;
  if (st != TG_OK) {
    free(out);
    return NULL;
  }
  return out;
}

static bool is_exact_dtype(tg_dtype d) { return d != TG_FLOAT16 && d != TG_BFLOAT16 && d != TG_FLOAT32 && d != TG_FLOAT64; }

static void run_case(const Case *c) {
  tg_scope sc = tg_scope_begin();
  tg_tensor *cpu_in[4], *gpu_in[4];
  bool ok = true;
  for (int i = 0; i < c->nin; i++) {
    size_t nd = shape_len(c->shape[i]);
    int64_t n = 1;
    for (size_t k = 0; k < nd; k++) n *= c->shape[i][k];
    tg_dtype host_dt = c->dtype == TG_FLOAT16 || c->dtype == TG_BFLOAT16 ? TG_FLOAT32 : c->dtype;
    void *buf = malloc((size_t)n * 8 + 8);
    fill_input(buf, host_dt, n, 1234u + 77u * (unsigned)i);
    tg_tensor *h = tg_from_data(buf, host_dt, c->shape[i], nd);
    free(buf);
    if (host_dt != c->dtype) h = h ? tg_cast(h, c->dtype) : NULL;
    cpu_in[i] = h ? tg_contiguous(tg_to(h, "CPU")) : NULL;
    gpu_in[i] = h ? tg_contiguous(tg_to(h, "CUDA")) : NULL;
    ok &= cpu_in[i] && gpu_in[i];
  }
  tg_tensor *cpu_out = ok ? c->build(cpu_in) : NULL, *gpu_out = ok ? c->build(gpu_in) : NULL;
  CHECK_MSG(cpu_out && gpu_out, "%s: build failed: %s", c->name, tg_last_error());
  if (!cpu_out || !gpu_out) goto done;
  CHECK_MSG(tg_device(gpu_out) && strncmp(tg_device(gpu_out), "CUDA", 4) == 0, "%s: output on %s, not CUDA", c->name,
            tg_device(gpu_out) ? tg_device(gpu_out) : "(none)");
  int64_t n_cpu = 0, n_gpu = 0;
  char why[256] = "";
  double *a = read_back(cpu_out, &n_cpu);
  if (!a) snprintf(why, sizeof why, "on the CPU: %s", tg_last_error());
  double *b = read_back(gpu_out, &n_gpu);
  if (a && !b) snprintf(why, sizeof why, "on CUDA: %s", tg_last_error());
  CHECK_MSG(a && b && n_cpu == n_gpu, "%s: realize failed %s", c->name, why);
  if (a && b && n_cpu == n_gpu) {
    bool exact = is_exact_dtype(tg_get_dtype(cpu_out));
    double num = 0, den = 0;
    int64_t mismatches = 0, first = -1;
    for (int64_t i = 0; i < n_cpu; i++) {
      bool same_nan = isnan(a[i]) && isnan(b[i]), same_inf = isinf(a[i]) && a[i] == b[i];
      if (same_nan || same_inf) continue;
      double d = b[i] - a[i];
      if (exact ? d != 0 : isnan(d)) {
        if (first < 0) first = i;
        mismatches++;
      }
      num += d * d;
      den += a[i] * a[i];
    }
    double nmse = den > 0 ? num / den : num;
    if (exact)
      CHECK_MSG(mismatches == 0, "%s: %lld of %lld elements differ (first at %lld: cpu %g gpu %g)", c->name,
                (long long)mismatches, (long long)n_cpu, (long long)first, a[first < 0 ? 0 : first],
                b[first < 0 ? 0 : first]);
    else
      CHECK_MSG(mismatches == 0 && nmse <= c->tol, "%s: NMSE %.3g > %.3g (%lld NaN mismatches)", c->name, nmse,
                c->tol, (long long)mismatches);
  }
  free(a);
  free(b);
done:
  tg_scope_end(sc);
}

/* ---- builders ---- */
#define UNARY(fn) static tg_tensor *b_##fn(tg_tensor *const *in) { return tg_##fn(in[0]); }
#define POSITIVE(fn) \
  static tg_tensor *b_##fn(tg_tensor *const *in) { return tg_##fn(tg_add(tg_abs(in[0]), tg_const_float(0.25))); }
#define BINARY(fn) static tg_tensor *b_##fn(tg_tensor *const *in) { return tg_##fn(in[0], in[1]); }
UNARY(neg) UNARY(abs) UNARY(exp) UNARY(exp2) UNARY(sin) UNARY(cos) UNARY(tanh) UNARY(sigmoid) UNARY(relu) UNARY(gelu)
UNARY(silu) UNARY(erf) UNARY(trunc) UNARY(floor) UNARY(ceil) UNARY(round) UNARY(square) UNARY(sign) UNARY(atan)
UNARY(bitwise_not) UNARY(logical_not)
POSITIVE(log) POSITIVE(log2) POSITIVE(sqrt) POSITIVE(rsqrt) POSITIVE(reciprocal)
BINARY(add) BINARY(sub) BINARY(mul) BINARY(div) BINARY(maximum) BINARY(minimum) BINARY(lt) BINARY(eq) BINARY(ne)
BINARY(bitwise_and) BINARY(bitwise_xor) BINARY(matmul)
static tg_tensor *b_idiv(tg_tensor *const *in) {
  return tg_idiv(in[0], tg_add(tg_abs(in[1]), tg_const_int(1))); /* no division by zero */
}
static tg_tensor *b_mod(tg_tensor *const *in) { return tg_mod(in[0], tg_add(tg_abs(in[1]), tg_const_int(1))); }
static tg_tensor *b_where(tg_tensor *const *in) { return tg_where(tg_lt(in[0], in[1]), in[0], in[1]); }
static tg_tensor *b_pow(tg_tensor *const *in) { return tg_pow(tg_add(tg_abs(in[0]), tg_const_float(0.5)), in[1]); }
static tg_tensor *b_relu_fma(tg_tensor *const *in) { return tg_relu(tg_add(tg_mul(in[0], in[1]), in[2])); }
static tg_tensor *b_cast_half(tg_tensor *const *in) { return tg_cast(tg_cast(in[0], TG_FLOAT16), TG_FLOAT32); }
static tg_tensor *b_cast_bf16(tg_tensor *const *in) { return tg_cast(tg_cast(in[0], TG_BFLOAT16), TG_FLOAT32); }
static tg_tensor *b_cast_int(tg_tensor *const *in) { return tg_cast(tg_mul(in[0], tg_const_float(100)), TG_INT32); }
static tg_tensor *b_cast_u8(tg_tensor *const *in) { return tg_cast(in[0], TG_UINT8); }
static tg_tensor *b_cast_float(tg_tensor *const *in) { return tg_cast(in[0], TG_FLOAT32); }
static tg_tensor *b_sum_all(tg_tensor *const *in) { return tg_sum(in[0], NULL, 0, false); }
static tg_tensor *b_sum_0(tg_tensor *const *in) { return tg_sum(in[0], TG_AXES(0), false); }
static tg_tensor *b_sum_1(tg_tensor *const *in) { return tg_sum(in[0], TG_AXES(1), false); }
static tg_tensor *b_max_1(tg_tensor *const *in) { return tg_max(in[0], TG_AXES(1), true); }
static tg_tensor *b_min_0(tg_tensor *const *in) { return tg_min(in[0], TG_AXES(0), false); }
static tg_tensor *b_prod_1(tg_tensor *const *in) { return tg_prod(tg_add(in[0], tg_const_float(1.0)), TG_AXES(1), false); }
static tg_tensor *b_mean_all(tg_tensor *const *in) { return tg_mean(in[0], NULL, 0, false); }
static tg_tensor *b_var_1(tg_tensor *const *in) { return tg_var(in[0], TG_AXES(1), false, 1.0); }
static tg_tensor *b_argmax_1(tg_tensor *const *in) { return tg_argmax(in[0], 1, false); }
static tg_tensor *b_softmax(tg_tensor *const *in) { return tg_softmax(in[0], -1); }
static tg_tensor *b_log_softmax(tg_tensor *const *in) { return tg_log_softmax(in[0], -1); }
static tg_tensor *b_logsumexp(tg_tensor *const *in) { return tg_logsumexp(in[0], 0, false); }
static tg_tensor *b_cumsum(tg_tensor *const *in) { return tg_cumsum(in[0], 1); }
static tg_tensor *b_permute(tg_tensor *const *in) { return tg_contiguous(tg_permute(in[0], TG_AXES(2, 0, 1))); }
static tg_tensor *b_flip(tg_tensor *const *in) { return tg_contiguous(tg_flip(in[0], TG_AXES(0, 2))); }
static tg_tensor *b_pad(tg_tensor *const *in) {
  return tg_pad(in[0], (const int64_t[]){1, 2, 0, 3}, 2, TG_PAD_CONSTANT, 0.5);
}
static tg_tensor *b_shrink(tg_tensor *const *in) {
  return tg_contiguous(tg_shrink(in[0], (const int64_t[]){1, 5, 2, 9}, 2));
}
static tg_tensor *b_expand_add(tg_tensor *const *in) { return tg_add(in[0], tg_reshape(in[1], TG_SHAPE(1, 37))); }
static tg_tensor *b_cat(tg_tensor *const *in) { return tg_cat((const tg_tensor *const[]){in[0], in[1]}, 2, 0); }
static tg_tensor *b_gather(tg_tensor *const *in) {
  tg_tensor *idx = tg_cast(tg_mul(tg_add(tg_abs(in[1]), tg_const_float(0)), tg_const_float(7.99)), TG_INT32);
  return tg_gather(in[0], 1, idx);
}
/* an unpadded conv (the CNN's), and its weight and input gradients of sum(y^2) */
static tg_tensor *conv_valid(tg_tensor *x, tg_tensor *w) {
  return tg_conv2d(x, w, NULL, 1, NULL, (const int64_t[]){0, 0}, NULL);
}
static tg_tensor *conv_grad(tg_tensor *const *in, int which) {
  tg_tensor *y = conv_valid(in[0], in[1]);
  tg_tensor *loss = y ? tg_sum(tg_mul(y, y), NULL, 0, false) : NULL;
  const tg_tensor *wrt[1] = {in[which]};
  tg_tensor *g = NULL;
  return loss && tg_gradient(loss, wrt, 1, &g) == TG_OK ? g : NULL;
}
static tg_tensor *b_conv2d_valid(tg_tensor *const *in) { return conv_valid(in[0], in[1]); }
static tg_tensor *b_conv2d_wgrad(tg_tensor *const *in) { return conv_grad(in, 1); }
static tg_tensor *b_conv2d_dgrad(tg_tensor *const *in) { return conv_grad(in, 0); }

static tg_tensor *b_conv2d(tg_tensor *const *in) {
  return tg_conv2d(in[0], in[1], NULL, 1, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, (const int64_t[]){1, 1});
}
static tg_tensor *b_max_pool(tg_tensor *const *in) {
  return tg_max_pool2d(in[0], (const int64_t[]){2, 2}, (const int64_t[]){2, 2}, (const int64_t[]){0, 0},
                       (const int64_t[]){1, 1});
}

#define F32 TG_FLOAT32
static const Case cases[] = {
    {"neg", b_neg, 1, F32, {{1000}}, 0}, {"abs", b_abs, 1, F32, {{1000}}, 0},
    {"exp", b_exp, 1, F32, {{1000}}, 1e-10}, {"exp2", b_exp2, 1, F32, {{1000}}, 1e-10},
    {"sin", b_sin, 1, F32, {{1000}}, 1e-10}, {"cos", b_cos, 1, F32, {{1000}}, 1e-10},
    {"tanh", b_tanh, 1, F32, {{1000}}, 1e-10}, {"sigmoid", b_sigmoid, 1, F32, {{1000}}, 1e-10},
    {"relu", b_relu, 1, F32, {{1000}}, 0}, {"gelu", b_gelu, 1, F32, {{1000}}, 1e-10},
    {"silu", b_silu, 1, F32, {{1000}}, 1e-10}, {"erf", b_erf, 1, F32, {{1000}}, 1e-10},
    {"trunc", b_trunc, 1, F32, {{1000}}, 0}, {"floor", b_floor, 1, F32, {{1000}}, 0},
    {"ceil", b_ceil, 1, F32, {{1000}}, 0}, {"round", b_round, 1, F32, {{1000}}, 0},
    {"square", b_square, 1, F32, {{1000}}, 0}, {"sign", b_sign, 1, F32, {{1000}}, 0},
    {"atan", b_atan, 1, F32, {{1000}}, 1e-10}, {"log", b_log, 1, F32, {{1000}}, 1e-10},
    {"log2", b_log2, 1, F32, {{1000}}, 1e-10}, {"sqrt", b_sqrt, 1, F32, {{1000}}, 1e-12},
    {"rsqrt", b_rsqrt, 1, F32, {{1000}}, 1e-10}, {"reciprocal", b_reciprocal, 1, F32, {{1000}}, 1e-12},
    {"exp_f16", b_exp, 1, TG_FLOAT16, {{1000}}, 1e-5}, {"sqrt_f16", b_sqrt, 1, TG_FLOAT16, {{1000}}, 1e-5},
    {"exp_bf16", b_exp, 1, TG_BFLOAT16, {{1000}}, 1e-4}, {"sin_f64", b_sin, 1, TG_FLOAT64, {{1000}}, 1e-20},
    {"log_f64", b_log, 1, TG_FLOAT64, {{1000}}, 1e-20},
    {"add", b_add, 2, F32, {{257, 3}, {257, 3}}, 0}, {"sub", b_sub, 2, F32, {{257, 3}, {257, 3}}, 0},
    {"mul", b_mul, 2, F32, {{257, 3}, {257, 3}}, 0}, {"div", b_div, 2, F32, {{257, 3}, {257, 3}}, 1e-12},
    {"maximum", b_maximum, 2, F32, {{1000}, {1000}}, 0}, {"minimum", b_minimum, 2, F32, {{1000}, {1000}}, 0},
    {"lt", b_lt, 2, F32, {{1000}, {1000}}, 0}, {"eq", b_eq, 2, TG_INT32, {{1000}, {1000}}, 0},
    {"ne", b_ne, 2, TG_INT8, {{1000}, {1000}}, 0}, {"where", b_where, 2, F32, {{1000}, {1000}}, 0},
    {"pow", b_pow, 2, F32, {{1000}, {1000}}, 1e-10}, {"relu_fma", b_relu_fma, 3, F32, {{4096}, {4096}, {4096}}, 1e-14},
    {"add_f16", b_add, 2, TG_FLOAT16, {{1000}, {1000}}, 1e-6}, {"mul_bf16", b_mul, 2, TG_BFLOAT16, {{1000}, {1000}}, 1e-5},
    {"add_f64", b_add, 2, TG_FLOAT64, {{1000}, {1000}}, 0}, {"add_i32", b_add, 2, TG_INT32, {{1000}, {1000}}, 0},
    {"mul_i8", b_mul, 2, TG_INT8, {{1000}, {1000}}, 0}, {"add_u8", b_add, 2, TG_UINT8, {{1000}, {1000}}, 0},
    {"add_i64", b_add, 2, TG_INT64, {{1000}, {1000}}, 0}, {"idiv_i32", b_idiv, 2, TG_INT32, {{1000}, {1000}}, 0},
    {"mod_i32", b_mod, 2, TG_INT32, {{1000}, {1000}}, 0},
    {"and_i32", b_bitwise_and, 2, TG_INT32, {{1000}, {1000}}, 0},
    {"xor_u8", b_bitwise_xor, 2, TG_UINT8, {{1000}, {1000}}, 0},
    {"not_i32", b_bitwise_not, 1, TG_INT32, {{1000}}, 0}, {"not_bool", b_logical_not, 1, TG_BOOL, {{1000}}, 0},
    {"and_bool", b_bitwise_and, 2, TG_BOOL, {{1000}, {1000}}, 0},
    {"cast_half", b_cast_half, 1, F32, {{1000}}, 0}, {"cast_bf16", b_cast_bf16, 1, F32, {{1000}}, 0},
    {"cast_int", b_cast_int, 1, F32, {{1000}}, 0}, {"cast_u8", b_cast_u8, 1, TG_INT32, {{1000}}, 0},
    {"cast_bool_float", b_cast_float, 1, TG_BOOL, {{1000}}, 0},
    {"cast_i8_float", b_cast_float, 1, TG_INT8, {{1000}}, 0},
    {"sum_all", b_sum_all, 1, F32, {{1 << 20}}, 1e-10}, {"sum_axis0", b_sum_0, 1, F32, {{513, 129}}, 1e-10},
    {"sum_axis1", b_sum_1, 1, F32, {{129, 513}}, 1e-10},
    /* many long contiguous rows: the heuristic's warp-per-row reduce (opt_heuristic.c gpu_row_reduce) */
    {"sum_rows_wide", b_sum_1, 1, F32, {{4096, 1024}}, 1e-10}, {"softmax_wide", b_softmax, 1, F32, {{4096, 512}}, 1e-10},
    {"sum_all_2^24", b_sum_all, 1, F32, {{1 << 24}}, 1e-10}, {"sum_i32", b_sum_all, 1, TG_INT32, {{100000}}, 0},
    {"sum_f16", b_sum_1, 1, TG_FLOAT16, {{64, 256}}, 1e-4}, {"max_axis1", b_max_1, 1, F32, {{129, 513}}, 0},
    {"min_axis0", b_min_0, 1, F32, {{513, 129}}, 0}, {"prod_axis1", b_prod_1, 1, F32, {{64, 8}}, 1e-10},
    {"mean_all", b_mean_all, 1, F32, {{300, 300}}, 1e-10}, {"var_axis1", b_var_1, 1, F32, {{64, 1000}}, 1e-10},
    {"argmax", b_argmax_1, 1, F32, {{64, 1000}}, 0}, {"softmax", b_softmax, 1, F32, {{64, 1000}}, 1e-10},
    {"log_softmax", b_log_softmax, 1, F32, {{64, 1000}}, 1e-10}, {"logsumexp", b_logsumexp, 1, F32, {{1000, 64}}, 1e-10},
    /* rows of prime length: the row kernel padded past the row's end (opt_heuristic.c gpu_row_kernel) */
    {"softmax_prime", b_softmax, 1, F32, {{4, 10007}}, 1e-10}, {"log_softmax_prime", b_log_softmax, 1, F32, {{33, 1031}}, 1e-10},
    {"cumsum", b_cumsum, 1, F32, {{16, 300}}, 1e-10}, {"permute", b_permute, 1, F32, {{7, 11, 13}}, 0},
    {"flip", b_flip, 1, F32, {{7, 11, 13}}, 0}, {"pad", b_pad, 1, F32, {{9, 10}}, 0},
    {"shrink", b_shrink, 1, F32, {{9, 10}}, 0}, {"expand_add", b_expand_add, 2, F32, {{29, 37}, {37}}, 0},
    {"cat", b_cat, 2, F32, {{5, 7}, {9, 7}}, 0}, {"gather", b_gather, 2, F32, {{16, 8}, {16, 5}}, 0},
    {"matmul_64", b_matmul, 2, F32, {{64, 64}, {64, 64}}, 1e-10},
    {"matmul_odd", b_matmul, 2, F32, {{37, 129}, {129, 53}}, 1e-10},
    {"matmul_256", b_matmul, 2, F32, {{256, 256}, {256, 256}}, 1e-10},
    {"matvec", b_matmul, 2, F32, {{1, 4096}, {4096, 512}}, 1e-10},
    {"matmul_f16", b_matmul, 2, TG_FLOAT16, {{128, 256}, {256, 128}}, 1e-5},
    {"matmul_bf16", b_matmul, 2, TG_BFLOAT16, {{128, 256}, {256, 128}}, 1e-4},
    {"batched_matmul", b_matmul, 2, F32, {{4, 32, 48}, {4, 48, 40}}, 1e-10},
    {"conv2d", b_conv2d, 2, F32, {{4, 8, 14, 14}, {16, 8, 3, 3}}, 1e-10},
    {"max_pool2d", b_max_pool, 1, F32, {{4, 8, 14, 14}}, 0},
};

void gpu_suite_gpu_parity(void) {
  if (!gpu_require_cuda()) return;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  /* convs under ALLOW_TF32=1: the forward conv and the input gradient on tensor cores (opt_heuristic.c gpu_conv_tc:
   * M = the output row padded 20 -> 32 / 22 -> 32), the weight gradient in fp32. TF32 keeps 10 mantissa bits, so NMSE
   * within 1e-5 (fp32: 1e-10). The kernel cache is keyed by ALLOW_TF32. */
  static const Case tf32[] = {
      {"conv2d_tf32", b_conv2d_valid, 2, F32, {{8, 16, 6, 22}, {32, 16, 3, 3}}, 1e-5},
      {"conv2d_wgrad_tf32", b_conv2d_wgrad, 2, F32, {{8, 16, 6, 22}, {32, 16, 3, 3}}, 1e-5},
      {"conv2d_dgrad_tf32", b_conv2d_dgrad, 2, F32, {{8, 16, 6, 22}, {32, 16, 3, 3}}, 1e-5},
  };
  test_setenv("ALLOW_TF32", "1");
  for (size_t i = 0; i < sizeof tf32 / sizeof tf32[0]; i++) run_case(&tf32[i]);
  test_unsetenv("ALLOW_TF32");
}
