/* gemm_probe.c — the GEMM templates (src/render/gemm.c) on a real GPU, many variants in one run: every variant is
 * compiled in one NVRTC batch, checked exactly against a plain reference kernel on small integer-valued inputs
 * (every product and partial sum is an integer below 2^24, so the f32 sums are exact and the output rounding is the
 * same), then timed on uniform random inputs (median of 10 launches after 2 warm-ups, CUDA events). Prints
 *   probe <dtype> <M>x<N>x<K> <layout> <variant> ok|BAD(<wrong>/<total>) <TFLOPS>
 * Arguments: the square sizes to time (default 4096 8192); GEMM_PROBE_DTYPES="f16 bf16 f32" picks dtypes,
 * GEMM_PROBE_LAYOUTS=1 also checks the other operand layouts on 512x768x256; GEMM_PROBE_DUMP=<folder> only writes
 * every variant's source there (no device needed: for nvcc -Xptxas -v). Needs a CUDA device otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/gemm.h"
#include "runtime/runtime.h"
#include "uop/dtype.h"

typedef struct Variant {
  GemmConfig c;
  char name[160];
  RtProgram *prog;
} Variant;

static Variant variants[256];
static int nvariants;

static void add(GemmConfig c) {
  if (nvariants >= 256 || render_gemm_unsupported(&c)) {
    if (render_gemm_unsupported(&c)) fprintf(stderr, "probe: skipped a variant: %s\n", render_gemm_unsupported(&c));
    return;
  }
  Variant *v = &variants[nvariants++];
  v->c = c;
  render_gemm_kernel_name(&c, v->name, sizeof v->name);
}

/* the variants timed at m = n = k = s */
static void add_tuning(GemmElem in, int64_t s) {
  GemmElem out = in;
  GemmConfig base = {.in = in, .out = out, .m = s, .n = s, .k = s, .a_k_major = true, .b_k_major = false, .group_m = 8};
  if (in == GEMM_ELEM_F32) {
    static const int t[][5] = {{128, 128, 8, 8, 8},   {128, 128, 16, 8, 8}, {128, 256, 16, 8, 8},
                               {256, 128, 16, 8, 8},  {128, 64, 16, 8, 4},  {64, 128, 16, 4, 8}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
      GemmConfig c = base;
      c.bm = t[i][0], c.bn = t[i][1], c.bk = t[i][2], c.tm = t[i][3], c.tn = t[i][4];
      add(c);
    }
    return;
  }
  static const int t[][4] = {{128, 256, 4, 2}, {128, 256, 3, 2}, {128, 128, 4, 2}, {128, 128, 6, 2},
                             {256, 128, 4, 2}, {128, 192, 4, 2}, {64, 256, 4, 1},  {192, 128, 4, 3}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    GemmConfig c = base;
    c.bm = t[i][0], c.bn = t[i][1], c.bk = 64, c.stages = t[i][2], c.warpgroups = t[i][3];
    add(c);
  }
  GemmConfig c = base;
  c.bm = 128, c.bn = 256, c.bk = 64, c.stages = 4, c.warpgroups = 2, c.group_m = 16;
  add(c);
}

/* ---- host data ---- */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static size_t elem_size(GemmElem e) { return e == GEMM_ELEM_F32 ? 4 : 2; }

/* n elements of e: integers in [-2, 2] (exact) or uniform in [-1, 1) */
static void fill(void *dst, GemmElem e, size_t n, bool integers) {
  for (size_t i = 0; i < n; i++) {
    float x = integers ? (float)((int)(next_u32() % 5) - 2) : (float)(next_u32() & 0xFFFFFF) / 8388608.0f - 1.0f;
    if (e == GEMM_ELEM_F32) ((float *)dst)[i] = x;
    else if (e == GEMM_ELEM_F16) ((uint16_t *)dst)[i] = tg_float_to_half_bits(x);
    else ((uint16_t *)dst)[i] = tg_float_to_bf16_bits(x);
  }
}

/* the reference: one thread per output, f32 sums, f32 out */
static char *ref_source(const GemmConfig *c, const char *name) {
  static char buf[4096];
  const char *ty = c->in == GEMM_ELEM_F32 ? "float" : "unsigned short";
  const char *cvt = c->in == GEMM_ELEM_F32 ? "x" : c->in == GEMM_ELEM_F16 ? "h2f(x)" : "__uint_as_float((unsigned)x << 16)";
  snprintf(buf, sizeof buf,
           "__device__ float h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
           "__device__ float ld(%s x) { return %s; }\n"
           "extern \"C\" __global__ void __launch_bounds__(256) %s(float *C, const %s *A, const %s *B) {\n"
           "  const long long m = blockIdx.y * 16 + threadIdx.x / 16, n = blockIdx.x * 16 + threadIdx.x %% 16;\n"
           "  float s = 0.0f;\n"
           "  for (long long k = 0; k < %lld; k++) s += ld(A[%s]) * ld(B[%s]);\n"
           "  C[m * %lld + n] = s;\n}\n",
           ty, cvt, name, ty, ty, (long long)c->k, c->a_k_major ? "m * K_ + k" : "k * M_ + m",
           c->b_k_major ? "n * K_ + k" : "k * N_ + n", (long long)c->n);
  /* substitute the sizes */
  static char out[4096];
  char *o = out;
  for (const char *p = buf; *p && o < out + sizeof out - 32; p++) {
    if (p[0] == 'K' && p[1] == '_') o += sprintf(o, "%lldll", (long long)c->k), p++;
    else if (p[0] == 'M' && p[1] == '_') o += sprintf(o, "%lldll", (long long)c->m), p++;
    else if (p[0] == 'N' && p[1] == '_') o += sprintf(o, "%lldll", (long long)c->n), p++;
    else *o++ = *p;
  }
  *o = 0;
  return out;
}

static uint16_t round_out(float x, GemmElem e) {
  return e == GEMM_ELEM_F16 ? tg_float_to_half_bits(x) : tg_float_to_bf16_bits(x);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static bool same_problem(const GemmConfig *a, const GemmConfig *b) {
  return a->in == b->in && a->out == b->out && a->m == b->m && a->n == b->n && a->k == b->k &&
         a->a_k_major == b->a_k_major && a->b_k_major == b->b_k_major;
}

/* check and time every variant of the problem of variants[first] */
static void run_problem(RtDevice *d, int first, bool *done) {
  const GemmConfig *pc = &variants[first].c;
  size_t na = (size_t)(pc->m * pc->k), nb = (size_t)(pc->k * pc->n), nc = (size_t)(pc->m * pc->n);
  size_t ei = elem_size(pc->in), eo = elem_size(pc->out);
  void *ha = malloc(na * ei), *hb = malloc(nb * ei), *hc = malloc(nc * eo);
  float *href = malloc(nc * sizeof(float));
  RtBuffer *ba = NULL, *bb = NULL, *bc = NULL, *br = NULL;
  if (rt_buffer_new_on(d, na * ei, &ba) != TG_OK || rt_buffer_new_on(d, nb * ei, &bb) != TG_OK ||
      rt_buffer_new_on(d, nc * eo, &bc) != TG_OK || rt_buffer_new_on(d, nc * 4, &br) != TG_OK) {
    printf("probe: alloc failed: %s\n", tg_last_error());
    exit(1);
  }
  fill(ha, pc->in, na, true);
  fill(hb, pc->in, nb, true);
  rt_copyin(ba, 0, ha, na * ei);
  rt_copyin(bb, 0, hb, nb * ei);
  /* the reference */
  RtKernelSource ks = {"gemm_ref", ref_source(pc, "gemm_ref"), NULL, NULL};
  RtProgram *rp;
  if (rt_device_compile_many(d, &ks, 1, &rp) != TG_OK) {
    printf("probe: reference compile failed: %s\n", tg_last_error());
    exit(1);
  }
  uint64_t rbufs[3] = {rt_buffer_addr(br), rt_buffer_addr(ba), rt_buffer_addr(bb)};
  int64_t rgrid[3] = {pc->n / 16, pc->m / 16, 1}, rblock[3] = {256, 1, 1};
  double rsec = 0;
  if (rt_device_launch(d, rp, rbufs, NULL, 3, rgrid, rblock, &rsec) != TG_OK || rt_copyout(br, 0, href, nc * 4) != TG_OK) {
    printf("probe: reference failed: %s\n", tg_last_error());
    exit(1);
  }
  char lay[3] = {pc->a_k_major ? 'k' : 'm', pc->b_k_major ? 'k' : 'n', 0};
  const char *dt = pc->in == GEMM_ELEM_F16 ? "f16" : pc->in == GEMM_ELEM_BF16 ? "bf16" : "f32";
  long *wrong = calloc((size_t)nvariants, sizeof *wrong);
  for (int v = first; v < nvariants; v++) {
    if (!same_problem(&variants[v].c, pc) || !variants[v].prog) continue;
    Variant *var = &variants[v];
    memset(hc, 0xFF, nc * eo); /* poison: NaN in every dtype */
    rt_copyin(bc, 0, hc, nc * eo);
    int64_t grid[3], block[3];
    int smem;
    render_gemm_launch_dims(&var->c, grid, block, &smem);
    uint64_t bufs[3] = {rt_buffer_addr(bc), rt_buffer_addr(ba), rt_buffer_addr(bb)};
    double sec;
    if (rt_device_launch(d, var->prog, bufs, NULL, 3, grid, block, &sec) != TG_OK || rt_copyout(bc, 0, hc, nc * eo) != TG_OK) {
      printf("probe: %s failed: %s\n", var->name, tg_last_error());
      wrong[v] = -1;
      continue;
    }
    for (size_t i = 0; i < nc; i++) {
      bool ok = pc->out == GEMM_ELEM_F32 ? ((float *)hc)[i] == href[i] : ((uint16_t *)hc)[i] == round_out(href[i], pc->out);
      if (!ok && wrong[v] < 3)
        fprintf(stderr, "probe: %s [%zu,%zu] got %g want %g\n", var->name, i / (size_t)pc->n, i % (size_t)pc->n,
                pc->out == GEMM_ELEM_F32 ? ((float *)hc)[i]
                : pc->out == GEMM_ELEM_F16 ? tg_half_bits_to_float(((uint16_t *)hc)[i])
                                           : tg_bf16_bits_to_float(((uint16_t *)hc)[i]),
                href[i]);
      wrong[v] += !ok;
    }
  }
  /* timing on random data */
  fill(ha, pc->in, na, false);
  fill(hb, pc->in, nb, false);
  rt_copyin(ba, 0, ha, na * ei);
  rt_copyin(bb, 0, hb, nb * ei);
  for (int v = first; v < nvariants; v++) {
    if (!same_problem(&variants[v].c, pc) || !variants[v].prog) continue;
    done[v] = true;
    Variant *var = &variants[v];
    int64_t grid[3], block[3];
    int smem;
    render_gemm_launch_dims(&var->c, grid, block, &smem);
    uint64_t bufs[3] = {rt_buffer_addr(bc), rt_buffer_addr(ba), rt_buffer_addr(bb)};
    double t[12];
    bool ok = wrong[v] >= 0;
    for (int r = 0; r < 12 && ok; r++) ok = rt_device_launch(d, var->prog, bufs, NULL, 3, grid, block, &t[r]) == TG_OK;
    double tf = 0;
    if (ok) {
      qsort(t + 2, 10, sizeof(double), cmp_double);
      tf = render_gemm_flops(&var->c) / t[7] / 1e12;
    }
    char status[64];
    if (wrong[v] == 0) snprintf(status, sizeof status, "ok");
    else snprintf(status, sizeof status, "BAD(%ld/%zu)", wrong[v], nc);
    printf("probe %s %lldx%lldx%lld %s %s %s %.1f\n", dt, (long long)pc->m, (long long)pc->n, (long long)pc->k, lay,
           var->name, status, tf);
    fflush(stdout);
  }
  free(wrong);
  rt_buffer_free(ba), rt_buffer_free(bb), rt_buffer_free(bc), rt_buffer_free(br);
  free(ha), free(hb), free(hc), free(href);
}

static bool want_dtype(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return true;
  return false;
}

int main(int argc, char **argv) {
  const char *dts = getenv("GEMM_PROBE_DTYPES") ? getenv("GEMM_PROBE_DTYPES") : "f16 bf16 f32";
  GemmElem elems[3] = {GEMM_ELEM_F16, GEMM_ELEM_BF16, GEMM_ELEM_F32};
  const char *names[3] = {"f16", "bf16", "f32"};
  int64_t sizes[8] = {4096, 8192};
  int nsizes = 2;
  if (argc > 1) {
    nsizes = 0;
    for (int i = 1; i < argc && nsizes < 8; i++) sizes[nsizes++] = atoll(argv[i]);
  }
  if (getenv("GEMM_PROBE_LAYOUTS") && atoi(getenv("GEMM_PROBE_LAYOUTS")))
    for (int e = 0; e < 3; e++) {
      if (!want_dtype(dts, names[e])) continue;
      for (int lay = 0; lay < 4; lay++) {
        GemmConfig c;
        render_gemm_default_config(elems[e], elems[e], 512, 768, 256, lay & 1, (lay >> 1) & 1, &c);
        if (elems[e] != GEMM_ELEM_F32) c.bn = 128;
        add(c);
        if (elems[e] != GEMM_ELEM_F32) { /* f32 output from 16-bit inputs */
          c.out = GEMM_ELEM_F32;
          add(c);
        }
      }
    }
  for (int s = 0; s < nsizes; s++)
    for (int e = 0; e < 3; e++)
      if (want_dtype(dts, names[e])) add_tuning(elems[e], sizes[s]);
  /* one NVRTC batch */
  RtKernelSource *ks = calloc((size_t)nvariants, sizeof *ks);
  RtProgram **progs = calloc((size_t)nvariants, sizeof *progs);
  for (int v = 0; v < nvariants; v++) {
    ks[v].name = variants[v].name;
    ks[v].src = render_gemm_render(&variants[v].c, variants[v].name);
    const char *dump = getenv("GEMM_PROBE_DUMP"); /* a folder: write every variant's source there, run nothing */
    if (dump && *dump) {
      char path[512];
      snprintf(path, sizeof path, "%s/%s.cu", dump, variants[v].name);
      FILE *f = fopen(path, "w");
      if (f) fputs(ks[v].src, f), fclose(f);
    }
  }
  if (getenv("GEMM_PROBE_DUMP") && *getenv("GEMM_PROBE_DUMP")) return 0;
  RtDevice *d;
  if (rt_device_open("CUDA", &d) != TG_OK) {
    printf("probe: %s\n", tg_last_error());
    return 1;
  }
  bool *done = calloc((size_t)nvariants, sizeof *done);
  if (rt_device_compile_many(d, ks, (size_t)nvariants, progs) != TG_OK) /* then one by one, skipping failures */
    for (int v = 0; v < nvariants; v++)
      if (rt_device_compile_many(d, &ks[v], 1, &progs[v]) != TG_OK) {
        printf("probe: %s: compile failed: %.3000s\n", variants[v].name, rt_compile_log());
        progs[v] = NULL;
        done[v] = true;
      }
  for (int v = 0; v < nvariants; v++) variants[v].prog = progs[v];
  for (int v = 0; v < nvariants; v++)
    if (!done[v]) run_problem(d, v, done);
  for (int v = 0; v < nvariants; v++) free((void *)ks[v].src);
  free(ks), free(progs), free(done);
  return 0;
}
