/* gemm.h — the GEMM kernel templates for CUDA (tinygrad's custom-kernel route, reference gpu-backend.md §3 route C):
 * C functions that print the CUDA C of a matrix product C = A @ B for one shape, layout and tile configuration, as
 * one `extern "C" __global__` kernel C(out*, A*, B*) compiled by the normal NVRTC path (sm_90a) like any rendered
 * kernel. Two templates:
 *   wgmma  fp16 / bf16 inputs, f32 accumulation (Hopper sm_90a): BM x BN x 64 block tiles, `warpgroups` consumer
 *          warpgroups of wgmma.m64nBNk16 with both operands in shared memory in the 128-byte-swizzled layout (K-major
 *          or MN-major, the descriptor's transpose bit), a `stages`-deep cp.async ring (the swizzle computed in the
 *          kernel), one __syncthreads per K step with one wgmma batch in flight.
 *   simt   fp32 (no tensor cores: tinygrad's fp32 is IEEE fp32, not tf32): BM x BN x BK block tiles, TM x TN
 *          accumulators per thread, double-buffered shared memory filled through registers with 16-byte loads.
 * Both walk the output tiles in groups of `group_m` tile rows (L2 reuse). Dynamic shared memory above 48 KiB is
 * declared in the source as `#define TG_DYNAMIC_SMEM_BYTES n` (the CUDA runtime reads it at load: cuda.c). */
#ifndef TG_RENDER_GEMM_H
#define TG_RENDER_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum GemmElem { GEMM_ELEM_F16, GEMM_ELEM_BF16, GEMM_ELEM_F32 } GemmElem;
typedef enum GemmKind { GEMM_KIND_WGMMA, GEMM_KIND_SIMT } GemmKind;

typedef struct GemmConfig {
  GemmElem in, out;     /* A and B share `in`; C is `out` (the f32 sum rounded to nearest even) */
  int64_t m, n, k;      /* C is m x n, row-major and contiguous */
  bool a_k_major;       /* A stored m x k (row-major, k contiguous); else k x m (m contiguous: A^T row-major) */
  bool b_k_major;       /* B stored n x k (k contiguous: B^T row-major); else k x n (row-major B, n contiguous) */
  int bm, bn, bk;       /* block tile */
  int stages;           /* wgmma: the cp.async ring depth (>= 3) */
  int warpgroups;       /* wgmma: consumer warpgroups (each 64 * bm/(64*warpgroups) rows of the tile) */
  int tm, tn;           /* simt: accumulators per thread (multiples of 4) */
  int group_m;          /* tile order: groups of group_m tile rows (1: row-major order) */
} GemmConfig;

/* The kind a config's input dtype takes (f32 -> SIMT, f16/bf16 -> WGMMA). */
GemmKind render_gemm_kind(const GemmConfig *c);
/* NULL when the template can render c, else why not (a static string): shape not a multiple of the tile, a tile the
 * template cannot split over its threads, shared memory over the 227 KiB a block can have... */
const char *render_gemm_unsupported(const GemmConfig *c);
/* The default configuration for (in, out, m, n, k, layouts) on an H200 (the probe's best: tools/gemm_probe.c);
 * false when none fits the shape. GEMM_TILE="BMxBNxBK:stages" overrides the tile (tests, tuning). */
bool render_gemm_default_config(GemmElem in, GemmElem out, int64_t m, int64_t n, int64_t k, bool a_k_major, bool b_k_major,
                         GemmConfig *out_cfg);
/* The kernel's name: "gemm_<in><out>_<m>x<n>x<k>_<layout>_<tile>" (a C identifier; distinct configs, distinct names). */
void render_gemm_kernel_name(const GemmConfig *c, char *buf, size_t n);
/* The CUDA C source of kernel `name` (heap; NULL with tg_last_error() when render_gemm_unsupported). Parameters
 * (out*, A*, B*) in that order. */
char *render_gemm_render(const GemmConfig *c, const char *name);
/* Launch dimensions (blocks, threads per block) and dynamic shared memory bytes. */
void render_gemm_launch_dims(const GemmConfig *c, int64_t grid[3], int64_t block[3], int *dyn_smem);
/* 2*m*n*k. */
double render_gemm_flops(const GemmConfig *c);

#endif
