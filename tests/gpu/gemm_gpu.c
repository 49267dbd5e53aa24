/* gemm_gpu.c — the GEMM template route (codegen/gemm_route.c) through tensors on CUDA: plain matmuls in fp16, bf16
 * with B transposed (every Linear), fp32, a large fp16 shape and A transposed each take the route (engine_stats counts
 * the template's launches) and match the same graph realized on the CPU; a shape no tile divides, an epilogue fused
 * into the kernel and GEMM_TEMPLATE=0 keep codegen (no template launch) and match too; the GPU launches as many
 * kernels as the CPU for each graph; a JIT replay of a Linear step launches the template from its CUDA graph.
 * The matcher without a GPU: tests/test_gemm.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "gpu_test.h"
#include "tinygrad.h"

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0);
  }
}

/* a realized (rows x cols) tensor of dtype dt on device, from deterministic floats */
static tg_tensor *input(int64_t rows, int64_t cols, tg_dtype dt, const char *device, unsigned seed) {
  float *x = malloc((size_t)(rows * cols) * sizeof *x);
  fill(x, (size_t)(rows * cols), seed);
  tg_tensor *h = tg_from_data(x, TG_FLOAT32, TG_SHAPE(rows, cols));
  free(x);
  if (h && dt != TG_FLOAT32) h = tg_cast(h, dt);
  tg_tensor *t = h ? tg_contiguous(tg_to(h, device)) : NULL;
  return t && tg_realize(t) == TG_OK ? t : NULL;
}

/* t's values as doubles on the host (NULL on failure) */
static double *values(tg_tensor *t, int64_t *n) {
  *n = tg_numel(t);
  tg_tensor *h = tg_to(tg_cast(t, TG_FLOAT64), "CPU");
  double *out = *n > 0 ? malloc((size_t)*n * sizeof *out) : NULL;
  if (!h || !out || tg_to_host(h, out, (size_t)*n * sizeof *out) != TG_OK) {
    free(out);
    return NULL;
  }
  return out;
}

typedef tg_tensor *(*Build)(tg_tensor *a, tg_tensor *b);
static tg_tensor *mm(tg_tensor *a, tg_tensor *b) { return tg_matmul(a, b); }
static tg_tensor *mm_bt(tg_tensor *a, tg_tensor *b) { return tg_matmul(a, tg_transpose(b, 0, 1)); }
static tg_tensor *mm_at(tg_tensor *a, tg_tensor *b) { return tg_matmul(tg_transpose(a, 0, 1), b); }
static tg_tensor *mm_relu(tg_tensor *a, tg_tensor *b) { return tg_relu(tg_matmul(a, b)); }

typedef struct Case {
  const char *name;
  Build build;
  int64_t a[2], b[2]; /* input shapes as stored */
  tg_dtype dt;
  bool route;         /* the template must run (else it must not) */
  double tol;         /* NMSE bound against the CPU */
} Case;

/* realize build(a, b) on dev; its kernel launches and template launches into *launches / *templates */
static tg_tensor *realize_counting(const Case *c, const char *dev, long *launches, long *templates) {
  tg_tensor *a = input(c->a[0], c->a[1], c->dt, dev, 17u), *b = input(c->b[0], c->b[1], c->dt, dev, 29u);
  if (!a || !b) return NULL;
  EngineStats s0 = engine_stats();
  tg_tensor *out = c->build(a, b);
  if (!out || tg_realize(out) != TG_OK) return NULL;
  EngineStats s1 = engine_stats();
  *launches = s1.launches - s0.launches;
  *templates = s1.template_launches - s0.template_launches;
  return out;
}

static void run_case(const Case *c) {
  tg_scope sc = tg_scope_begin();
  long gl = 0, gt = 0, cl = 0, ct = 0;
  tg_tensor *g = realize_counting(c, "CUDA", &gl, &gt);
  CHECK_MSG(g != NULL, "%s: on CUDA: %s", c->name, tg_last_error());
  tg_tensor *cpu = realize_counting(c, "CPU", &cl, &ct);
  CHECK_MSG(cpu != NULL, "%s: on the CPU: %s", c->name, tg_last_error());
  if (!g || !cpu) {
    tg_scope_end(sc);
    return;
  }
  if (c->route) CHECK_MSG(gt == 1, "%s: %ld template launches, expected 1 (the route was not taken)", c->name, gt);
  else CHECK_MSG(gt == 0, "%s: %ld template launches, expected codegen", c->name, gt);
  CHECK_MSG(ct == 0, "%s: the CPU launched %ld template kernels", c->name, ct);
  CHECK_MSG(gl == cl && gl >= 1, "%s: %ld kernels on CUDA, %ld on the CPU", c->name, gl, cl);
  CHECK_MSG(tg_get_dtype(g) == tg_get_dtype(cpu), "%s: dtypes differ", c->name);
  int64_t ng = 0, nc = 0;
  double *x = values(g, &ng), *y = values(cpu, &nc);
  CHECK_MSG(x && y && ng == nc, "%s: read back failed: %s", c->name, tg_last_error());
  if (x && y && ng == nc) {
    double num = 0, den = 0, worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < ng; i++) {
      double d = x[i] - y[i];
      bad += !isfinite(x[i]);
      num += d * d, den += y[i] * y[i];
      if (fabs(d) > worst) worst = fabs(d);
    }
    double nmse = den > 0 ? num / den : num;
    CHECK_MSG(bad == 0 && nmse <= c->tol, "%s: NMSE %.3g > %.3g (%lld not finite, worst |diff| %.3g)", c->name, nmse,
              c->tol, (long long)bad, worst);
    CHECK_MSG(den > 0, "%s: the CPU result is all zeros", c->name);
  }
  free(x);
  free(y);
  tg_scope_end(sc);
}

static void check_cases(void) {
  /* fp16 products are rounded to half on the CPU (the AST's MUL), exact on the tensor cores: NMSE ~1e-7 */
  static const Case cases[] = {
      {"fp16 512x768 @ 768x256", mm, {512, 768}, {768, 256}, TG_FLOAT16, true, 2e-6},
      {"bf16 512x256 @ (512x256)^T", mm_bt, {512, 256}, {512, 256}, TG_BFLOAT16, true, 1e-4},
      {"fp16 (256x512)^T @ 256x256", mm_at, {256, 512}, {256, 256}, TG_FLOAT16, true, 2e-6},
      {"fp32 1024x512 @ 512x1024", mm, {1024, 512}, {512, 1024}, TG_FLOAT32, true, 1e-10},
      {"fp16 2048x1024 @ 1024x2048", mm, {2048, 1024}, {1024, 2048}, TG_FLOAT16, true, 2e-6},
      {"bf16 1024x512 @ (1024x512)^T", mm_bt, {1024, 512}, {1024, 512}, TG_BFLOAT16, true, 1e-4},
      {"fp16 100x128 @ 128x256 (no tile divides)", mm, {100, 128}, {128, 256}, TG_FLOAT16, false, 2e-6},
      {"fp32 96x64 @ 64x200 (no tile divides)", mm, {96, 64}, {64, 200}, TG_FLOAT32, false, 1e-10},
      /* (fp32: the H200 image's gcc -march=native emits AVX512-FP16 masked vmovsh for an fp16 relu kernel of the CPU
       * side, which its assembler refuses: a CPU compile problem of that machine, not of the route) */
      {"fp32 relu(256x128 @ 128x512) (epilogue)", mm_relu, {256, 128}, {128, 512}, TG_FLOAT32, false, 1e-10},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  /* GEMM_TEMPLATE=0 after the route ran on the same AST: the kernel cache must not hand back the template's program,
   * and turning it on again must */
  static const Case off = {"fp16 512x768 @ 768x256, GEMM_TEMPLATE=0", mm, {512, 768}, {768, 256}, TG_FLOAT16, false, 2e-6};
  test_setenv("GEMM_TEMPLATE", "0");
  run_case(&off);
  test_unsetenv("GEMM_TEMPLATE");
  run_case(&cases[0]);
}

/* y = x @ W^T on CUDA through the JIT: the replay (a graph, or one direct launch) runs the template */
static tg_tensor *weight;
static tg_status linear_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                             tg_tensor **out, size_t nout) {
  TG_UNUSED(user), TG_UNUSED(nin), TG_UNUSED(vars), TG_UNUSED(nvars), TG_UNUSED(nout);
  out[0] = tg_matmul(in[0], tg_transpose(weight, 0, 1));
  return out[0] ? TG_OK : tg_last_status();
}

static void check_jit(void) {
  tg_scope sc = tg_scope_begin();
  weight = input(256, 512, TG_FLOAT16, "CUDA", 5u);
  tg_tensor *wcpu = input(256, 512, TG_FLOAT16, "CPU", 5u);
  tg_jit *j = tg_jit_new(linear_step, NULL, 1, NULL);
  CHECK(weight && wcpu && j);
  for (int call = 0; call < 5 && weight && wcpu && j; call++) {
    tg_tensor *x = input(128, 512, TG_FLOAT16, "CUDA", 100u + (unsigned)call), *out = NULL;
    EngineStats s0 = engine_stats();
    tg_status st = x ? tg_jit_call(j, &x, 1, NULL, 0, &out) : TG_ERR_RUNTIME;
    CHECK_MSG(st == TG_OK, "JIT call %d: %s", call, tg_last_error());
    if (st != TG_OK) break;
    EngineStats s1 = engine_stats();
    if (call >= 2) /* replays */
      CHECK_MSG(s1.template_launches - s0.template_launches == 1 && s1.launches - s0.launches == 1,
                "JIT replay %d: %ld launches, %ld of the template", call, s1.launches - s0.launches,
                s1.template_launches - s0.template_launches);
    tg_tensor *ref = tg_matmul(input(128, 512, TG_FLOAT16, "CPU", 100u + (unsigned)call), tg_transpose(wcpu, 0, 1));
    int64_t n1 = 0, n2 = 0;
    double *a = values(out, &n1), *b = ref ? values(ref, &n2) : NULL;
    CHECK_MSG(a && b && n1 == n2 && n1 == 128 * 256, "JIT call %d: read back: %s", call, tg_last_error());
    if (a && b && n1 == n2) {
      double num = 0, den = 0;
      for (int64_t i = 0; i < n1; i++) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
      CHECK_MSG(den > 0 && num / den <= 2e-6, "JIT call %d: NMSE %.3g", call, den > 0 ? num / den : num);
    }
    free(a);
    free(b);
  }
  CHECK_EQ_INT(tg_jit_kernel_count(j), 1);
  tg_jit_free(j);
  weight = NULL;
  tg_scope_end(sc);
}

void gpu_suite_gemm_gpu(void) {
  if (!gpu_require_cuda()) return;
  check_cases();
  check_jit();
}
