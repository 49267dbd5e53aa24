/* test_gemm.c — the GEMM template route without a GPU: which kernel ASTs the matcher (codegen/gemm_route.c) takes and
 * which it leaves to the normal path (with the config it picks: shape, layouts, dtypes, PARAM slots), that the
 * schedule is untouched (kernel counts), that GEMM_TEMPLATE=0 and a non-sm_90a arch turn it off, and that the
 * templates (render/gemm.c) render for every kind and layout and compile with NVRTC for sm_90a where NVRTC is
 * present. The results on a GPU: tests/gpu/gemm_gpu.c. */
#include <string.h>

#include "tensor/tensor.h" /* first: render.h renames ShapeCache for the headers after it */
#include "codegen/codegen.h"
#include "nvrtc_check.h"
#include "schedule/schedule.h"
#include "test.h"

/* The kernel ASTs of t's graph, their count into *n; the match of the last one. */
static const char *match_last(tg_tensor *t, const char *arch, CgGemmMatch *m, uint32_t *n) {
  UOpScope sc = uop_scope_begin();
  UOp *root = t->uop;
  UOp *lin = sched_kernels(uop_sink(&root, 1));
  *n = lin ? lin->nsrc : 0;
  const char *why = lin && lin->nsrc ? cg_gemm_match(lin->src[lin->nsrc - 1]->src[0], arch, m) : "no kernel";
  uop_scope_end(sc);
  return why;
}

static tg_tensor *cuda_empty(int64_t a, int64_t b, tg_dtype dt) { return tg_empty_on(TG_SHAPE(a, b), dt, "CUDA"); }

static void test_match_takes(void) {
  tg_scope sc = tg_scope_begin();
  CgGemmMatch m;
  uint32_t n = 0;
  /* row-major A @ B, fp16: C[256x512], K 128 */
  tg_tensor *a = cuda_empty(256, 128, TG_FLOAT16), *b = cuda_empty(128, 512, TG_FLOAT16);
  const char *why = match_last(tg_matmul(a, b), "sm_90a", &m, &n);
  CHECK_MSG(why == NULL, "%s", why ? why : "");
  CHECK(n == 1);
  CHECK(m.cfg.m == 256 && m.cfg.n == 512 && m.cfg.k == 128 && m.cfg.a_k_major && !m.cfg.b_k_major);
  CHECK(m.cfg.in == GEMM_ELEM_F16 && m.cfg.out == GEMM_ELEM_F16 && render_gemm_kind(&m.cfg) == GEMM_KIND_WGMMA);
  CHECK(m.slot[0] == 0 && m.slot[1] != m.slot[2] && m.slot[1] >= 1 && m.slot[2] >= 1);
  CHECK(m.cfg.bm == 128 && m.cfg.bn == 256);
  /* A @ B^T (every Linear): B read K-major */
  tg_tensor *w = cuda_empty(512, 128, TG_BFLOAT16), *x = cuda_empty(256, 128, TG_BFLOAT16);
  why = match_last(tg_matmul(x, tg_transpose(w, 0, 1)), "sm_90a", &m, &n);
  CHECK_MSG(why == NULL, "%s", why ? why : "");
  CHECK(m.cfg.in == GEMM_ELEM_BF16 && m.cfg.a_k_major && m.cfg.b_k_major && m.cfg.n == 512);
  /* A^T @ B (a weight gradient): A read M-major */
  tg_tensor *at = cuda_empty(128, 256, TG_FLOAT16);
  why = match_last(tg_matmul(tg_transpose(at, 0, 1), b), "sm_90a", &m, &n);
  CHECK_MSG(why == NULL, "%s", why ? why : "");
  CHECK(!m.cfg.a_k_major && !m.cfg.b_k_major && m.cfg.m == 256 && m.cfg.k == 128);
  /* fp32: the SIMT template */
  tg_tensor *fa = cuda_empty(256, 64, TG_FLOAT32), *fb = cuda_empty(64, 128, TG_FLOAT32);
  why = match_last(tg_matmul(fa, fb), "sm_90a", &m, &n);
  CHECK_MSG(why == NULL, "%s", why ? why : "");
  CHECK(render_gemm_kind(&m.cfg) == GEMM_KIND_SIMT && m.cfg.out == GEMM_ELEM_F32 && m.cfg.m == 256 && m.cfg.n == 128);
  /* fp16 inputs summed into a float32 output */
  tg_tensor *acc = tg_cast(tg_sum(tg_mul(tg_cast(tg_unsqueeze(a, 2), TG_FLOAT32),
                                         tg_cast(tg_unsqueeze(b, 0), TG_FLOAT32)), (const int[]){1}, 1, false),
                           TG_FLOAT32);
  why = match_last(acc, "sm_90a", &m, &n);
  CHECK_MSG(why == NULL, "%s", why ? why : "");
  CHECK(m.cfg.in == GEMM_ELEM_F16 && m.cfg.out == GEMM_ELEM_F32);
  tg_scope_end(sc);
}

static void test_match_refuses(void) {
  tg_scope sc = tg_scope_begin();
  CgGemmMatch m;
  uint32_t n = 0, n_on = 0;
  tg_tensor *a = cuda_empty(256, 128, TG_FLOAT16), *b = cuda_empty(128, 512, TG_FLOAT16);
  /* not on Hopper, or turned off: the normal path, and the same kernels */
  CHECK(match_last(tg_matmul(a, b), "sm_80", &m, &n) != NULL && n == 1);
  CHECK(match_last(tg_matmul(a, b), "", &m, &n) != NULL);
  test_setenv("GEMM_TEMPLATE", "0");
  CHECK(match_last(tg_matmul(a, b), "sm_90a", &m, &n) != NULL);
  test_unsetenv("GEMM_TEMPLATE");
  /* a shape no tile divides */
  tg_tensor *odd = cuda_empty(100, 128, TG_FLOAT16);
  CHECK(match_last(tg_matmul(odd, b), "sm_90a", &m, &n) != NULL);
  /* an epilogue fused into the kernel (relu) */
  CHECK(match_last(tg_relu(tg_matmul(a, b)), "sm_90a", &m, &n_on) != NULL);
  test_setenv("GEMM_TEMPLATE", "0");
  match_last(tg_relu(tg_matmul(a, b)), "sm_90a", &m, &n);
  test_unsetenv("GEMM_TEMPLATE");
  CHECK(n == n_on);
  /* batched */
  tg_tensor *ba = tg_empty_on(TG_SHAPE(4, 128, 128), TG_FLOAT16, "CUDA"),
            *bb = tg_empty_on(TG_SHAPE(4, 128, 128), TG_FLOAT16, "CUDA");
  CHECK(match_last(tg_matmul(ba, bb), "sm_90a", &m, &n) != NULL);
  /* mixed dtypes, int dtypes, a plain sum, an elementwise product */
  CHECK(match_last(tg_matmul(a, cuda_empty(128, 512, TG_BFLOAT16)), "sm_90a", &m, &n) != NULL);
  CHECK(match_last(tg_matmul(cuda_empty(256, 128, TG_INT32), cuda_empty(128, 512, TG_INT32)), "sm_90a", &m, &n) != NULL);
  CHECK(match_last(tg_sum(a, (const int[]){1}, 1, false), "sm_90a", &m, &n) != NULL);
  CHECK(match_last(tg_mul(a, a), "sm_90a", &m, &n) != NULL);
  /* a shifted read (a view with an offset) */
  tg_tensor *big = cuda_empty(384, 128, TG_FLOAT16);
  tg_tensor *shifted = tg_shrink(big, (const int64_t[]){128, 384, 0, 128}, 2);
  CHECK(shifted && match_last(tg_matmul(shifted, b), "sm_90a", &m, &n) != NULL);
  tg_scope_end(sc);
}

/* every kind and layout renders; unsupported configs say why; NVRTC (when present) compiles them for sm_90a */
static void test_render(void) {
  const char *why_absent = NULL;
  const NvrtcApi *api = nvrtc_api(&why_absent);
  int compiled = 0;
  GemmElem ins[3] = {GEMM_ELEM_F16, GEMM_ELEM_BF16, GEMM_ELEM_F32};
  for (int e = 0; e < 3; e++)
    for (int lay = 0; lay < 4; lay++) {
      GemmConfig c;
      CHECK(render_gemm_default_config(ins[e], ins[e], 512, 768, 256, lay & 1, lay & 2, &c));
      char name[160];
      render_gemm_kernel_name(&c, name, sizeof name);
      char *src = render_gemm_render(&c, name);
      CHECK(src && strstr(src, name) && strstr(src, "#define TG_DYNAMIC_SMEM_BYTES "));
      if (src && ins[e] != GEMM_ELEM_F32) CHECK(strstr(src, "wgmma.mma_async.sync.aligned.m64n") != NULL);
      if (src && api && (lay == 0 || lay == 3 || !tg_test_light())) {
        char *log = NULL;
        bool ok = nvrtc_compiles(api, src, &log);
        CHECK_MSG(ok, "%s: %s", name, log ? log : "");
        free(log);
        compiled++;
      }
      tg_free(src);
      int64_t grid[3], block[3];
      int smem;
      render_gemm_launch_dims(&c, grid, block, &smem);
      CHECK(grid[0] == (512 / c.bm) * (768 / c.bn) && block[0] >= 128 && smem > 0 && smem <= 227 * 1024);
    }
  if (!api) printf("  gemm: NVRTC compile checks skipped: %s\n", why_absent);
  else printf("  gemm: %d template sources compiled by NVRTC for sm_90a\n", compiled);
  GemmConfig c;
  CHECK(!render_gemm_default_config(GEMM_ELEM_F16, GEMM_ELEM_F16, 100, 512, 128, true, false, &c));
  CHECK(render_gemm_render(&c, "gemm_bad") == NULL && strstr(tg_last_error(), "not a multiple of the tile"));
  c = (GemmConfig){.in = GEMM_ELEM_F16, .out = GEMM_ELEM_F16, .m = 256, .n = 256, .k = 256, .bm = 128, .bn = 256,
                   .bk = 32, .stages = 4, .warpgroups = 2, .group_m = 8};
  CHECK(render_gemm_unsupported(&c) && strstr(render_gemm_unsupported(&c), "BK must be 64"));
  c.bk = 64, c.stages = 8;
  CHECK(render_gemm_unsupported(&c) && strstr(render_gemm_unsupported(&c), "227 KiB"));
  c.stages = 4, c.bm = 64;
  CHECK(render_gemm_unsupported(&c) != NULL); /* 64 rows over 2 warpgroups */
  c.bm = 128;
  CHECK(render_gemm_unsupported(&c) == NULL);
  c.in = GEMM_ELEM_F32, c.out = GEMM_ELEM_F16, c.tm = 8, c.tn = 8, c.bk = 16;
  CHECK(render_gemm_unsupported(&c) && strstr(render_gemm_unsupported(&c), "fp32 output"));
}

void suite_gemm(void) {
  test_render();
  test_match_takes();
  test_match_refuses();
}
