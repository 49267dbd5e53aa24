/* gemm.c — the GEMM kernel templates (gemm.h): CUDA C for C = A @ B printed from a GemmConfig.
 *
 * wgmma template (fp16/bf16 -> f32 accumulators -> out). Block tile BM x BN, K steps of 64 (one 128-byte swizzle
 * span of 16-bit elements). Shared memory holds `stages` (A, B) tile pairs, 1024-byte aligned. Layouts (16-byte
 * chunks, swizzled: chunk c of row r lands at chunk c ^ (r % 8), what the descriptor's 128B swizzle mode expects):
 *   K-major operand (R rows of 64 k): row r at r*128 bytes. Descriptor: start + 32 bytes per k16 step, stride byte
 *     offset 1024 (8 rows), leading byte offset unused (16).
 *   MN-major operand (64 k rows of R mn): R/64 panels of 64 rows x 128 bytes (8 KiB each), row k of panel p at
 *     p*8192 + k*128. Descriptor: start + 16 rows (2048 bytes) per k16 step, leading byte offset 8192 (the next 64
 *     mn), stride byte offset 1024 (the next 8 k); transpose bit set in the wgmma.
 * Each of the `warpgroups` warpgroups computes MT = BM/(64*warpgroups) row blocks of 64 x BN with
 * wgmma.mma_async.m64nBNk16 (BN/2 f32 accumulators per thread per row block). The K loop, with S stages and a
 * prefetch distance of S-2 tiles:
 *     wait for tile kt (cp.async.wait_group S-3); fence.proxy.async (cp.async wrote through the generic proxy, wgmma
 *     reads through the async one); __syncthreads (the tile is visible, and every warpgroup's wgmma batch kt-2 is
 *     done: each waited for all but its newest batch in step kt-1); cp.async tile kt+S-2 into the stage of kt-2;
 *     wgmma batch kt; wait for all but that batch.
 * The epilogue converts the accumulators and stores them from registers (two elements per store).
 *
 * simt template (fp32): 256-ish threads, each TM x TN accumulators in groups of 4 x 4 spread over the tile (rows ty*4
 * + i + h*(BM/(TM/4)), likewise columns) so that the 16-byte shared loads of a warp do not conflict; A is kept as
 * As[k][m] and B as Bs[k][n] in two buffers; the next K tile is loaded into registers (16-byte global loads along
 * the contiguous axis of each operand) while the current one is computed, then stored into the other buffer; one
 * __syncthreads per K tile. */
#include "render/gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define GEMM_SMEM_MAX (227 * 1024) /* dynamic shared memory a block can have on sm_90 */

GemmKind render_gemm_kind(const GemmConfig *c) { return c->in == GEMM_ELEM_F32 ? GEMM_KIND_SIMT : GEMM_KIND_WGMMA; }

static const char *elem_tag(GemmElem e) { return e == GEMM_ELEM_F16 ? "h" : e == GEMM_ELEM_BF16 ? "b" : "f"; }

static int wg_threads(const GemmConfig *c) { return 128 * c->warpgroups; }
static int simt_threads(const GemmConfig *c) { return (c->bm / TG_MAX(c->tm, 1)) * (c->bn / TG_MAX(c->tn, 1)); }
static int wg_stage_bytes(const GemmConfig *c) { return (c->bm + c->bn) * c->bk * 2; }

static int smem_bytes(const GemmConfig *c) {
  if (render_gemm_kind(c) == GEMM_KIND_WGMMA) return c->stages * wg_stage_bytes(c) + 1024; /* + alignment slack */
  return 2 * (c->bm + c->bn) * c->bk * 4;
}

const char *render_gemm_unsupported(const GemmConfig *c) {
  if (c->m <= 0 || c->n <= 0 || c->k <= 0) return "empty shape";
  if (c->bm <= 0 || c->bn <= 0 || c->bk <= 0 || c->m % c->bm || c->n % c->bn || c->k % c->bk)
    return "shape not a multiple of the tile";
  if (c->m > (1 << 20) || c->n > (1 << 20) || c->k > (1 << 20)) return "dimension over 2^20";
  if (c->group_m < 1) return "group_m < 1";
  if (render_gemm_kind(c) == GEMM_KIND_WGMMA) {
    if (c->out != GEMM_ELEM_F16 && c->out != GEMM_ELEM_BF16 && c->out != GEMM_ELEM_F32) return "output dtype";
    if (c->bk != 64) return "wgmma template: BK must be 64 (one 128-byte swizzle span)";
    if (c->warpgroups < 1 || c->warpgroups > 3) return "wgmma template: 1 to 3 warpgroups";
    if (c->bm % (64 * c->warpgroups)) return "wgmma template: BM must be 64 * warpgroups * row blocks";
    int mt = c->bm / (64 * c->warpgroups);
    if (c->bn < 64 || c->bn > 256 || c->bn % 64) return "wgmma template: BN must be 64, 128, 192 or 256";
    if (mt * c->bn / 2 > 128) return "wgmma template: over 128 accumulators per thread";
    if (c->stages < 3) return "wgmma template: at least 3 stages";
    int nt = wg_threads(c);
    if ((c->bm * 8) % nt || (c->bn * 8) % nt) return "wgmma template: tile loads do not split over the threads";
  } else {
    if (c->out != GEMM_ELEM_F32) return "simt template: fp32 output only";
    if (c->tm % 4 || c->tn % 4 || c->tm <= 0 || c->tn <= 0 || c->bm % c->tm || c->bn % c->tn)
      return "simt template: TM, TN multiples of 4 dividing the tile";
    int nt = simt_threads(c);
    if (nt < 32 || nt > 1024 || nt % 32) return "simt template: 32 to 1024 threads";
    if ((c->bm * c->bk) % (4 * nt) || (c->bn * c->bk) % (4 * nt) || c->bk % 4)
      return "simt template: tile loads do not split over the threads";
  }
  if (smem_bytes(c) > GEMM_SMEM_MAX) return "shared memory over 227 KiB";
  return NULL;
}

/* The tiles tried in order, the first that divides the shape wins. The first of each is the best of
 * tools/gemm_probe.c on the H200 (2026-12-02, TFLOPS at 4096 / 8192, cuBLAS in the same run 661 / 721 fp16, 670 / 748
 * bf16, 48.8 fp32 at 4096): fp16 128x256x64 4 stages 2 warpgroups 571 / 610, bf16 585 / 634 (3 stages 464 / 480;
 * 128x128 486 / 483; 256x128 555 / 520); fp32 256x128x16 8x8 per thread 46.3 / 46.4 (128x128x8 37.6). */
static const int wg_tiles[][4] = {{128, 256, 4, 2}, {256, 128, 4, 2}, {128, 128, 6, 2}, {128, 64, 6, 2}, {64, 64, 6, 1}};
static const int simt_tiles[][5] = {{256, 128, 16, 8, 8}, {128, 128, 16, 8, 8}, {128, 64, 16, 8, 4}, {64, 64, 16, 4, 4}};

bool render_gemm_default_config(GemmElem in, GemmElem out, int64_t m, int64_t n, int64_t k, bool a_k_major, bool b_k_major,
                         GemmConfig *cfg) {
  GemmConfig c = {.in = in, .out = out, .m = m, .n = n, .k = k, .a_k_major = a_k_major, .b_k_major = b_k_major,
                  .group_m = 8};
  const char *tile = tg_getenv_str("GEMM_TILE");
  int bm, bn, bk, st = 4;
  bool forced = tile && sscanf(tile, "%dx%dx%d:%d", &bm, &bn, &bk, &st) >= 3;
  size_t n_tiles = in == GEMM_ELEM_F32 ? TG_ARRAY_LEN(simt_tiles) : TG_ARRAY_LEN(wg_tiles);
  for (size_t i = 0; i < n_tiles; i++) {
    if (in == GEMM_ELEM_F32) {
      const int *t = simt_tiles[i];
      c.bm = t[0], c.bn = t[1], c.bk = t[2], c.tm = t[3], c.tn = t[4];
    } else {
      const int *t = wg_tiles[i];
      c.bm = t[0], c.bn = t[1], c.bk = 64, c.stages = t[2], c.warpgroups = t[3];
    }
    if (forced) {
      c.bm = bm, c.bn = bn, c.bk = bk, c.stages = st;
      if (in == GEMM_ELEM_F32) c.tm = bm >= 128 ? 8 : 4, c.tn = bn >= 128 ? 8 : 4;
      else c.warpgroups = bm >= 128 ? 2 : 1;
    }
    if (!render_gemm_unsupported(&c) || forced) break;
  }
  *cfg = c;
  return render_gemm_unsupported(&c) == NULL;
}

void render_gemm_kernel_name(const GemmConfig *c, char *buf, size_t n) {
  if (render_gemm_kind(c) == GEMM_KIND_WGMMA)
    snprintf(buf, n, "gemm_%s%s_%lldx%lldx%lld_%c%c_%dx%dx%d_s%dw%dg%d", elem_tag(c->in), elem_tag(c->out),
             (long long)c->m, (long long)c->n, (long long)c->k, c->a_k_major ? 'k' : 'm', c->b_k_major ? 'k' : 'n',
             c->bm, c->bn, c->bk, c->stages, c->warpgroups, c->group_m);
  else
    snprintf(buf, n, "gemm_%s%s_%lldx%lldx%lld_%c%c_%dx%dx%d_t%dx%dg%d", elem_tag(c->in), elem_tag(c->out),
             (long long)c->m, (long long)c->n, (long long)c->k, c->a_k_major ? 'k' : 'm', c->b_k_major ? 'k' : 'n',
             c->bm, c->bn, c->bk, c->tm, c->tn, c->group_m);
}

void render_gemm_launch_dims(const GemmConfig *c, int64_t grid[3], int64_t block[3], int *dyn_smem) {
  grid[0] = (c->m / c->bm) * (c->n / c->bn), grid[1] = 1, grid[2] = 1;
  block[0] = render_gemm_kind(c) == GEMM_KIND_WGMMA ? wg_threads(c) : simt_threads(c), block[1] = 1, block[2] = 1;
  *dyn_smem = smem_bytes(c);
}

double render_gemm_flops(const GemmConfig *c) { return 2.0 * (double)c->m * (double)c->n * (double)c->k; }

static const char *out_ctype(GemmElem e) { return e == GEMM_ELEM_F32 ? "float" : "unsigned short"; }

/* the tile order shared by both templates: (tile_m, tile_n) of this block */
static void put_tile_order(StrBuf *b, const GemmConfig *c) {
  sb_printf(b,
            "  const int tiles_m = %lld, tiles_n = %lld, group = %d;\n"
            "  const int bid = blockIdx.x, in_group = group * tiles_n;\n"
            "  const int first_m = (bid / in_group) * group;\n"
            "  const int group_rows = tiles_m - first_m < group ? tiles_m - first_m : group;\n"
            "  const int tile_m = first_m + (bid %% in_group) %% group_rows;\n"
            "  const int tile_n = (bid %% in_group) / group_rows;\n",
            (long long)(c->m / c->bm), (long long)(c->n / c->bn), c->group_m);
}

/* ---- wgmma ---- */

/* cp.async of one operand tile into the stage at shared address `dst` (a variable in the kernel), k0 the tile's first
 * k. rows: the tile's extent along m (A) or n (B); k_major: the operand's layout; ld: its global row length. */
static void put_wg_load(StrBuf *b, const char *ptr, const char *row0, int rows, bool k_major, int64_t ld, int nt) {
  if (k_major) {
    sb_printf(b,
              "    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, r = i >> 3, c = i & 7;\n"
              "      cp16(dst + r * 128 + ((c ^ (r & 7)) << 4), %s + (unsigned long long)(%s + r) * %lldull + k0 + c * 8); }\n",
              rows * 8 / nt, nt, ptr, row0, (long long)ld);
  } else {
    sb_printf(b,
              "    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, kk = i / %d, cm = i %% %d;\n"
              "      cp16(dst + (cm >> 3) * 8192 + kk * 128 + (((cm & 7) ^ (kk & 7)) << 4),\n"
              "           %s + (unsigned long long)(k0 + kk) * %lldull + %s + cm * 8); }\n",
              rows * 8 / nt, nt, rows / 8, rows / 8, ptr, (long long)ld, row0);
  }
}

static void put_wgmma_fn(StrBuf *b, const GemmConfig *c) {
  int nacc = c->bn / 2;
  const char *ty = c->in == GEMM_ELEM_F16 ? "f16" : "bf16";
  sb_printf(b, "__device__ __forceinline__ void wgmma_step(float (&d)[%d], unsigned long long da, unsigned long long db) {\n",
            nacc);
  sb_printf(b, "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", nacc + 2);
  sb_printf(b, "    \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {\"\n    \"", c->bn, ty, ty);
  for (int i = 0; i < nacc; i++) sb_printf(b, "%%%d%s%s", i, i + 1 < nacc ? ", " : "", i % 16 == 15 && i + 1 < nacc ? "\"\n    \"" : "");
  sb_printf(b, "}, %%%d, %%%d, p, 1, 1, %d, %d;\\n}\\n\"\n    : ", nacc, nacc + 1, c->a_k_major ? 0 : 1, c->b_k_major ? 0 : 1);
  for (int i = 0; i < nacc; i++) sb_printf(b, "\"+f\"(d[%d])%s%s", i, i + 1 < nacc ? ", " : "", i % 8 == 7 ? "\n      " : "");
  sb_puts(b, "    : \"l\"(da), \"l\"(db), \"r\"(1));\n}\n");
}

static void put_wgmma_kernel(StrBuf *b, const GemmConfig *c, const char *name) {
  int nt = wg_threads(c), mt = c->bm / (64 * c->warpgroups), nacc = c->bn / 2, S = c->stages;
  int a_bytes = c->bm * c->bk * 2, stage = wg_stage_bytes(c);
  int64_t kt_n = c->k / c->bk;
  sb_printf(b, "/* %s: C[%lld x %lld] = A @ B, K %lld; wgmma template (src/render/gemm.c) */\n", name, (long long)c->m,
            (long long)c->n, (long long)c->k);
  sb_printf(b, "#define TG_DYNAMIC_SMEM_BYTES %d\n", smem_bytes(c));
  if (c->out == GEMM_ELEM_F32) sb_puts(b, "struct __align__(8) gemm_f2 { float x, y; };\n");
  sb_puts(b,
          "__device__ __forceinline__ void cp16(unsigned dst, const void *src) {\n"
          "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(dst), \"l\"(src));\n}\n"
          "__device__ __forceinline__ unsigned long long sdesc(unsigned addr, unsigned lbo, unsigned sbo) {\n"
          "  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |\n"
          "         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);\n}\n");
  put_wgmma_fn(b, c);
  if (c->out != GEMM_ELEM_F32)
    sb_printf(b,
              "__device__ __forceinline__ unsigned pack2(float lo, float hi) {\n"
              "  unsigned r; asm(\"cvt.rn.%s.f32 %%0, %%1, %%2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo)); return r;\n}\n",
              c->out == GEMM_ELEM_F16 ? "f16x2" : "bf16x2");
  sb_printf(b,
            "extern \"C\" __global__ void __launch_bounds__(%d, 1) %s(%s *__restrict__ C, const unsigned short "
            "*__restrict__ A, const unsigned short *__restrict__ B) {\n",
            nt, name, out_ctype(c->out));
  sb_puts(b,
          "  extern __shared__ __align__(1024) unsigned char smem_raw[];\n"
          "  unsigned smem;\n"
          "  asm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(smem) : \"l\"(smem_raw));\n"
          "  smem = (smem + 1023u) & ~1023u;\n"
          "  const int tid = threadIdx.x, wg = tid >> 7;\n");
  put_tile_order(b, c);
  sb_printf(b, "  const int m0 = tile_m * %d, n0 = tile_n * %d;\n", c->bm, c->bn);
  sb_printf(b, "  float acc[%d][%d];\n", mt, nacc);
  sb_printf(b, "#pragma unroll\n  for (int t = 0; t < %d; t++)\n#pragma unroll\n    for (int i = 0; i < %d; i++) acc[t][i] = 0.0f;\n",
            mt, nacc);
  /* the tile loader */
  sb_printf(b, "  auto load_tile = [&](int s, int kt) {\n    const int k0 = kt * %d;\n    unsigned dst = smem + s * %d;\n",
            c->bk, stage);
  sb_puts(b, "#pragma unroll\n");
  put_wg_load(b, "A", "m0", c->bm, c->a_k_major, c->a_k_major ? c->k : c->m, nt);
  sb_printf(b, "    dst += %d;\n#pragma unroll\n", a_bytes);
  put_wg_load(b, "B", "n0", c->bn, c->b_k_major, c->b_k_major ? c->k : c->n, nt);
  sb_puts(b, "  };\n");
  /* prologue */
  sb_printf(b,
            "#pragma unroll\n  for (int s = 0; s < %d; s++) {\n    if (s < %lld) load_tile(s, s);\n"
            "    asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n  }\n",
            S - 2, (long long)kt_n);
  /* main loop */
  sb_printf(b, "  for (int kt = 0; kt < %lld; kt++) {\n", (long long)kt_n);
  sb_printf(b,
            "    asm volatile(\"cp.async.wait_group %d;\\n\" ::: \"memory\");\n"
            "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
            "    __syncthreads();\n"
            "    if (kt + %d < %lld) load_tile((kt + %d) %% %d, kt + %d);\n"
            "    asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
            "    const unsigned sa = smem + (kt %% %d) * %d, sb = sa + %d;\n",
            S - 3, S - 2, (long long)kt_n, S - 2, S, S - 2, S, stage, a_bytes);
  sb_puts(b, "    asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n");
  sb_printf(b, "#pragma unroll\n    for (int ks = 0; ks < %d; ks++) {\n", c->bk / 16);
  if (c->b_k_major) sb_puts(b, "      const unsigned long long db = sdesc(sb + ks * 32, 16, 1024);\n");
  else sb_puts(b, "      const unsigned long long db = sdesc(sb + ks * 2048, 8192, 1024);\n");
  sb_printf(b, "#pragma unroll\n      for (int t = 0; t < %d; t++) {\n        const int r0 = (wg * %d + t) * 64;\n", mt, mt);
  if (c->a_k_major) sb_puts(b, "        wgmma_step(acc[t], sdesc(sa + r0 * 128 + ks * 32, 16, 1024), db);\n");
  else sb_puts(b, "        wgmma_step(acc[t], sdesc(sa + (r0 >> 6) * 8192 + ks * 2048, 8192, 1024), db);\n");
  sb_puts(b, "      }\n    }\n");
  sb_puts(b,
          "    asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
          "    asm volatile(\"wgmma.wait_group.sync.aligned 1;\\n\" ::: \"memory\");\n  }\n"
          "  asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n");
  /* epilogue: accumulator (t, 4j + q) of lane l of warp w is row 16w + l/4 + 8*(q/2), column 8j + 2*(l%4) + q%2 */
  sb_printf(b,
            "  const int w = (tid >> 5) & 3, l = tid & 31;\n"
            "#pragma unroll\n  for (int t = 0; t < %d; t++) {\n"
            "    const int row = m0 + (wg * %d + t) * 64 + w * 16 + (l >> 2);\n"
            "#pragma unroll\n    for (int j = 0; j < %d; j++) {\n"
            "      const int col = n0 + j * 8 + (l & 3) * 2;\n",
            mt, mt, c->bn / 8);
  if (c->out == GEMM_ELEM_F32)
    sb_printf(b,
              "      *(gemm_f2 *)(C + (unsigned long long)row * %lldull + col) = gemm_f2{acc[t][4 * j], acc[t][4 * j + 1]};\n"
              "      *(gemm_f2 *)(C + (unsigned long long)(row + 8) * %lldull + col) = gemm_f2{acc[t][4 * j + 2], acc[t][4 * j + 3]};\n",
              (long long)c->n, (long long)c->n);
  else
    sb_printf(b,
              "      *(unsigned *)(C + (unsigned long long)row * %lldull + col) = pack2(acc[t][4 * j], acc[t][4 * j + 1]);\n"
              "      *(unsigned *)(C + (unsigned long long)(row + 8) * %lldull + col) = pack2(acc[t][4 * j + 2], acc[t][4 * j + 3]);\n",
              (long long)c->n, (long long)c->n);
  sb_puts(b, "    }\n  }\n}\n");
}

/* ---- simt (fp32) ---- */

/* registers <- global for one operand tile: `n4` gemm_f4 per thread; k_major: rows of k contiguous (ld = K) */
static void put_simt_gload(StrBuf *b, const char *reg, const char *ptr, const char *row0, int rows, int bk, bool k_major,
                           int64_t ld, int nt) {
  int n4 = rows * bk / 4 / nt;
  if (k_major)
    sb_printf(b,
              "#pragma unroll\n    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, r = i / %d, kc = (i %% %d) * 4;\n"
              "      %s[j] = *(const gemm_f4 *)(%s + (unsigned long long)(%s + r) * %lldull + k0 + kc); }\n",
              n4, nt, bk / 4, bk / 4, reg, ptr, row0, (long long)ld);
  else
    sb_printf(b,
              "#pragma unroll\n    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, kk = i / %d, c4 = (i %% %d) * 4;\n"
              "      %s[j] = *(const gemm_f4 *)(%s + (unsigned long long)(k0 + kk) * %lldull + %s + c4); }\n",
              n4, nt, rows / 4, rows / 4, reg, ptr, (long long)ld, row0);
}

/* registers -> shared buffer `buf` ([bk][rows]) */
static void put_simt_sstore(StrBuf *b, const char *reg, const char *buf, int rows, int bk, bool k_major, int nt) {
  int n4 = rows * bk / 4 / nt;
  if (k_major)
    sb_printf(b,
              "#pragma unroll\n    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, r = i / %d, kc = (i %% %d) * 4;\n"
              "      %s[(kc + 0) * %d + r] = %s[j].x; %s[(kc + 1) * %d + r] = %s[j].y;\n"
              "      %s[(kc + 2) * %d + r] = %s[j].z; %s[(kc + 3) * %d + r] = %s[j].w; }\n",
              n4, nt, bk / 4, bk / 4, buf, rows, reg, buf, rows, reg, buf, rows, reg, buf, rows, reg);
  else
    sb_printf(b,
              "#pragma unroll\n    for (int j = 0; j < %d; j++) { const int i = tid + j * %d, kk = i / %d, c4 = (i %% %d) * 4;\n"
              "      *(gemm_f4 *)&%s[kk * %d + c4] = %s[j]; }\n",
              n4, nt, rows / 4, rows / 4, buf, rows, reg);
}

static void put_simt_kernel(StrBuf *b, const GemmConfig *c, const char *name) {
  int nt = simt_threads(c), tx_n = c->bn / c->tn, ty_n = c->bm / c->tm, bk = c->bk;
  int na4 = c->bm * bk / 4 / nt, nb4 = c->bn * bk / 4 / nt;
  int64_t kt_n = c->k / bk;
  sb_printf(b, "/* %s: C[%lld x %lld] = A @ B, K %lld; simt template (src/render/gemm.c) */\n", name, (long long)c->m,
            (long long)c->n, (long long)c->k);
  sb_printf(b, "#define TG_DYNAMIC_SMEM_BYTES %d\n", smem_bytes(c));
  sb_puts(b, "struct __align__(16) gemm_f4 { float x, y, z, w; };\n");
  sb_printf(b,
            "extern \"C\" __global__ void __launch_bounds__(%d) %s(float *__restrict__ C, const float *__restrict__ A, "
            "const float *__restrict__ B) {\n",
            nt, name);
  sb_printf(b,
            "  extern __shared__ __align__(16) float smem_f[];\n"
            "  float *const As = smem_f, *const Bs = smem_f + 2 * %d;\n"
            "  const int tid = threadIdx.x, tx = tid %% %d, ty = tid / %d;\n",
            c->bm * bk, tx_n, tx_n);
  put_tile_order(b, c);
  sb_printf(b, "  const int m0 = tile_m * %d, n0 = tile_n * %d;\n", c->bm, c->bn);
  sb_printf(b, "  float acc[%d][%d];\n#pragma unroll\n  for (int i = 0; i < %d; i++)\n#pragma unroll\n"
               "    for (int j = 0; j < %d; j++) acc[i][j] = 0.0f;\n",
            c->tm, c->tn, c->tm, c->tn);
  sb_printf(b, "  gemm_f4 ra[%d], rb[%d];\n", na4, nb4);
  sb_puts(b, "  auto gload = [&](int kt) {\n    const int k0 = kt * ");
  sb_printf(b, "%d;\n", bk);
  put_simt_gload(b, "ra", "A", "m0", c->bm, bk, c->a_k_major, c->a_k_major ? c->k : c->m, nt);
  put_simt_gload(b, "rb", "B", "n0", c->bn, bk, c->b_k_major, c->b_k_major ? c->k : c->n, nt);
  sb_puts(b, "  };\n  auto sstore = [&](int s) {\n");
  sb_printf(b, "    float *const as = As + s * %d, *const bs = Bs + s * %d;\n", c->bm * bk, c->bn * bk);
  put_simt_sstore(b, "ra", "as", c->bm, bk, c->a_k_major, nt);
  put_simt_sstore(b, "rb", "bs", c->bn, bk, c->b_k_major, nt);
  sb_puts(b, "  };\n  gload(0);\n  sstore(0);\n  __syncthreads();\n");
  sb_printf(b, "  for (int kt = 0; kt < %lld; kt++) {\n    const int s = kt & 1;\n", (long long)kt_n);
  sb_printf(b, "    if (kt + 1 < %lld) gload(kt + 1);\n", (long long)kt_n);
  sb_printf(b, "    const float *const as = As + s * %d, *const bs = Bs + s * %d;\n", c->bm * bk, c->bn * bk);
  sb_printf(b, "#pragma unroll\n    for (int kk = 0; kk < %d; kk++) {\n      float a[%d], bv[%d];\n", bk, c->tm, c->tn);
  sb_printf(b,
            "#pragma unroll\n      for (int h = 0; h < %d; h++) { const gemm_f4 v = *(const gemm_f4 *)&as[kk * %d + h * %d + ty * 4];\n"
            "        a[4 * h] = v.x; a[4 * h + 1] = v.y; a[4 * h + 2] = v.z; a[4 * h + 3] = v.w; }\n",
            c->tm / 4, c->bm, ty_n * 4);
  sb_printf(b,
            "#pragma unroll\n      for (int h = 0; h < %d; h++) { const gemm_f4 v = *(const gemm_f4 *)&bs[kk * %d + h * %d + tx * 4];\n"
            "        bv[4 * h] = v.x; bv[4 * h + 1] = v.y; bv[4 * h + 2] = v.z; bv[4 * h + 3] = v.w; }\n",
            c->tn / 4, c->bn, tx_n * 4);
  sb_printf(b, "#pragma unroll\n      for (int i = 0; i < %d; i++)\n#pragma unroll\n        for (int j = 0; j < %d; j++) "
               "acc[i][j] = fmaf(a[i], bv[j], acc[i][j]);\n    }\n",
            c->tm, c->tn);
  sb_printf(b, "    if (kt + 1 < %lld) sstore(s ^ 1);\n    __syncthreads();\n  }\n", (long long)kt_n);
  sb_printf(b,
            "#pragma unroll\n  for (int i = 0; i < %d; i++) {\n"
            "    const int row = m0 + (i / 4) * %d + ty * 4 + (i %% 4);\n"
            "#pragma unroll\n    for (int h = 0; h < %d; h++)\n"
            "      *(gemm_f4 *)(C + (unsigned long long)row * %lldull + n0 + h * %d + tx * 4) =\n"
            "          gemm_f4{acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]};\n  }\n}\n",
            c->tm, ty_n * 4, c->tn / 4, (long long)c->n, tx_n * 4);
}

char *render_gemm_render(const GemmConfig *c, const char *name) {
  const char *why = render_gemm_unsupported(c);
  if (why) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: GEMM template %s: %s", name, why);
    return NULL;
  }
  StrBuf b;
  sb_init(&b);
  if (render_gemm_kind(c) == GEMM_KIND_WGMMA) put_wgmma_kernel(&b, c, name);
  else put_simt_kernel(&b, c, name);
  return sb_take(&b);
}
