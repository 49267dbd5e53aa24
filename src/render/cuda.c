/* cuda.c — the CUDA renderer (tinygrad renderer/cstyle.py CUDARenderer): its capability table and its CStyleLang
 * (cstyle.h) for the C-style walk in c.c.
 *
 * The source is CUDA C++ for NVRTC and needs no CUDA header: the runtime passes no include path. tinygrad includes
 * cuda_fp16.h / cuda_bf16.h for half and bfloat16; here both are 16-bit structs defined in the source itself, with
 * conversions through PTX cvt (round to nearest even) and arithmetic done in float32 then rounded back. For
 * + - * / the result is the correctly rounded half / bfloat16 one (float32 has more than 2p+2 bits for p = 11 and 8,
 * so rounding twice is innocuous). Everything else is tinygrad's text: the test compares it (tests/test_render.c). */
#include "cstyle.h"

#include <stdio.h>
#include <string.h>

/* ---- the language ---- */

static const char *cuda_type_name(const DType *d) {
  const DType *s = d->scalar;
  if (s == DT_UINT32) return "uint"; /* CUDARenderer.type_map */
  if (s == DT_BFLOAT16) return "nv_bfloat16";
  return s->cname;
}

static bool is_half_like(const DType *d) { return d == DT_FLOAT16 || d == DT_BFLOAT16; }

/* code_for_op's CUDA spellings: half/bf16 get the h-prefixed functions (hexp2, hsqrt, hrcp...) */
static bool cuda_put_unary(StrBuf *b, TgOp op, const DType *d, const char *x) {
  bool h = is_half_like(d);
  switch (op) {
  case TG_OP_SQRT: sb_printf(b, "%s(%s)", h ? "hsqrt" : "sqrt", x); return true;
  case TG_OP_TRUNC: sb_printf(b, "%s(%s)", h ? "htrunc" : "trunc", x); return true;
  case TG_OP_EXP2: sb_printf(b, "%s(%s)", h ? "hexp2" : "exp2", x); return true;
  case TG_OP_LOG2: sb_printf(b, "%s(%s)", h ? "hlog2" : "log2", x); return true;
  case TG_OP_SIN: sb_printf(b, "%s(%s)", h ? "hsin" : "sin", x); return true;
  case TG_OP_RECIPROCAL:
    if (h) sb_printf(b, "hrcp(%s)", x);
    else sb_printf(b, "(1/%s)", x);
    return true;
  default: return false;
  }
}

/* code_for_workitem: g -> blockIdx, l -> threadIdx, i -> the flat global id */
static void cuda_put_workitem(StrBuf *b, char kind, int axis) {
  char c = (char)('x' + axis);
  if (kind == 'g') sb_printf(b, "blockIdx.%c", c);
  else if (kind == 'l') sb_printf(b, "threadIdx.%c", c);
  else sb_printf(b, "(blockIdx.%c*blockDim.%c+threadIdx.%c)", c, c, c);
}

/* The header-free half and bfloat16 (replacing tinygrad's #include <cuda_fp16.h> / <cuda_bf16.h>): a struct of the
 * 16 bits, float conversions in PTX, and the operators and functions the renderer writes for them. half2 /
 * nv_bfloat162 come with them, as the headers define them; the 4- and 8-lane structs follow tinygrad's prefix. */
static const char half_type[] =
    "struct __align__(2) half { unsigned short bits; half() = default; "
    "__device__ half(float f) { asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f)); } "
    "__device__ operator float() const { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(bits)); return f; } };";
static const char bf16_type[] =
    "struct __align__(2) nv_bfloat16 { unsigned short bits; nv_bfloat16() = default; "
    "__device__ nv_bfloat16(float f) { asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f)); } "
    "__device__ operator float() const { return __uint_as_float((unsigned int)bits << 16); } };";
static const char half_ops[] =
    "#define TG_HALF_OPS(T) \\\n"
    "__device__ __forceinline__ T operator+(T a, T b) { return T((float)a + (float)b); } \\\n"
    "__device__ __forceinline__ T operator-(T a, T b) { return T((float)a - (float)b); } \\\n"
    "__device__ __forceinline__ T operator*(T a, T b) { return T((float)a * (float)b); } \\\n"
    "__device__ __forceinline__ T operator/(T a, T b) { return T((float)a / (float)b); } \\\n"
    "__device__ __forceinline__ T operator-(T a) { T r = a; r.bits ^= 0x8000u; return r; } \\\n"
    "__device__ __forceinline__ bool operator<(T a, T b) { return (float)a < (float)b; } \\\n"
    "__device__ __forceinline__ bool operator==(T a, T b) { return (float)a == (float)b; } \\\n"
    "__device__ __forceinline__ bool operator!=(T a, T b) { return (float)a != (float)b; } \\\n"
    "__device__ __forceinline__ T hexp2(T x) { return T(exp2f((float)x)); } \\\n"
    "__device__ __forceinline__ T hlog2(T x) { return T(log2f((float)x)); } \\\n"
    "__device__ __forceinline__ T hsin(T x) { return T(sinf((float)x)); } \\\n"
    "__device__ __forceinline__ T hsqrt(T x) { return T(sqrtf((float)x)); } \\\n"
    "__device__ __forceinline__ T hrcp(T x) { return T(1.0f / (float)x); } \\\n"
    "__device__ __forceinline__ T htrunc(T x) { return T(truncf((float)x)); }";

static const char vector_names[] = "xyzwabcdefghijkl";

/* tinygrad render_vector_prefix: struct __align__(n) half4 { half x, y, z, w; }; plus its make_half4 */
static void put_vector_struct(StrBuf *out, const DType *d, int count) {
  const char *scal = cuda_type_name(d);
  StrBuf vec;
  sb_init(&vec);
  sb_printf(&vec, "%s%d", scal, count);
  sb_printf(out, "struct __align__(%d) %s { %s ", dt_itemsize(d) * count, vec.s, scal);
  for (int i = 0; i < count; i++) sb_printf(out, "%s%c", i ? ", " : "", vector_names[i]);
  sb_printf(out, "; }; __device__ %s make_%s(", vec.s, vec.s);
  for (int i = 0; i < count; i++) sb_printf(out, "%s%s %c", i ? ", " : "", scal, vector_names[i]);
  sb_printf(out, ") { %s r={", vec.s);
  for (int i = 0; i < count; i++) sb_printf(out, "%s%c", i ? ", " : "", vector_names[i]);
  sb_puts(out, "}; return r; }");
  sb_free(&vec);
}

/* tinygrad uops_to_dtypes: (dtype, lanes) of every value with a shape, in first-use order */
typedef struct UsedDType { const DType *dt; int64_t n; } UsedDType;
static size_t used_dtypes(const CStyleProgram *p, UsedDType *out, size_t cap) {
  size_t n = 0;
  for (uint32_t i = 0; i < p->linear->nsrc; i++) {
    const UOp *u = p->linear->src[i];
    AddrSpace as = uop_addrspace(p->shapes, u);
    SymShape sh;
    if ((as != ADDR_ALU && as != ADDR_NONE) || u->dtype == DT_VOID || uop_shape_sym_cached((UOp *)u, p->shapes, &sh) != SHAPE_OK)
      continue;
    UsedDType e = {u->dtype->scalar, uop_max_numel((UOp *)u, p->shapes)};
    bool dup = false;
    for (size_t k = 0; k < n && !dup; k++) dup = out[k].dt == e.dt && out[k].n == e.n;
    if (!dup && n < cap) out[n++] = e;
  }
  return n;
}

/* tinygrad's WMMA helper: the fragments reinterpreted as 32-bit registers for mma.sync (m16n8k16 half: A 4 regs,
 * B 2, C/D 4 floats), once per distinct WMMA of the kernel */
static void put_wmma_helpers(StrBuf *out, const CStyleLang *lang, const CStyleProgram *p) {
  static const char *const ptx_in[] = {[TG_FLOAT16] = "f16", [TG_BFLOAT16] = "bf16", [TG_FLOAT32] = "tf32"};
  for (uint32_t i = 0; i < p->linear->nsrc; i++) {
    const UOp *w = p->linear->src[i];
    if (!uop_is(w, TG_OP_WMMA) || w->arg.kind != ARG_WMMA || w->arg.len != 9) continue;
    StrBuf name; /* one helper per name, as tinygrad's prefix list holds each helper once */
    sb_init(&name);
    sb_puts(&name, " __");
    render_cstyle_put_wmma_name(&name, w);
    sb_putc(&name, '(');
    bool dup = out->s && strstr(out->s, name.s) != NULL;
    sb_free(&name);
    if (dup) continue;
    const int64_t *a = w->arg.ints;
    const DType *din = &tg_dtype_table[a[3]], *dout = &tg_dtype_table[a[4]];
    int64_t sizes[3], regs[3];
    for (int k = 0; k < 3; k++) {
      sizes[k] = uop_max_numel(w->src[k], p->shapes);
      regs[k] = sizes[k] * dt_itemsize(k < 2 ? din : dout) / 4;
    }
    StrBuf ty[3];
    for (int k = 0; k < 3; k++) {
      sb_init(&ty[k]);
      render_cstyle_put_dtype(&ty[k], lang, k < 2 ? din : dout, sizes[k], ADDR_REG, false);
    }
    sb_printf(out, "__device__ %s __", ty[2].s);
    render_cstyle_put_wmma_name(out, w);
    sb_printf(out, "(%s a, %s b, %s c){\n  int *a_pk = (int *)(&a), *b_pk = (int *)(&b), *c_pk = (int *)(&c);\n", ty[0].s,
              ty[1].s, ty[2].s);
    const char *o = dout == DT_FLOAT16 ? "f16" : "f32", *in = ptx_in[din->id];
    sb_printf(out, "  asm(\"mma.sync.aligned.m%lldn%lldk%lld.row.col.%s.%s.%s.%s\"", (long long)a[1], (long long)a[0],
              (long long)a[2], o, in, in, o);
    int64_t r = 0;
    sb_puts(out, "\n      \"{");
    for (int64_t k = 0; k < regs[2]; k++) sb_printf(out, "%s%%%lld", k ? ", " : "", (long long)(r + k));
    sb_puts(out, "}, {");
    for (int64_t k = 0; k < regs[0]; k++) sb_printf(out, "%s%%%lld", k ? ", " : "", (long long)(regs[2] + k));
    sb_puts(out, "},\"\n      \"{");
    for (int64_t k = 0; k < regs[1]; k++) sb_printf(out, "%s%%%lld", k ? ", " : "", (long long)(regs[2] + regs[0] + k));
    sb_puts(out, "}, {");
    for (int64_t k = 0; k < regs[2]; k++) sb_printf(out, "%s%%%lld", k ? ", " : "", (long long)k);
    sb_puts(out, "};\"\n    : ");
    for (int64_t k = 0; k < regs[2]; k++) sb_printf(out, "%s\"+r\"(c_pk[%lld])", k ? ", " : "", (long long)k);
    sb_puts(out, "\n    : ");
    for (int64_t k = 0; k < regs[0]; k++) sb_printf(out, "%s\"r\"(a_pk[%lld])", k ? ", " : "", (long long)k);
    for (int64_t k = 0; k < regs[1]; k++) sb_printf(out, ", \"r\"(b_pk[%lld])", (long long)k);
    sb_puts(out, ");\n  return c;\n}\n");
    for (int k = 0; k < 3; k++) sb_free(&ty[k]);
  }
}

/* CUDARenderer.render_kernel: prefixes, then extern "C" __global__ void __launch_bounds__(threads) name(...) */
static void cuda_put_program(StrBuf *out, const CStyleLang *lang, const CStyleProgram *p) {
  sb_puts(out, "typedef unsigned int uint;\n"
               "#define INFINITY (__int_as_float(0x7f800000))\n"
               "#define NAN (__int_as_float(0x7fffffff))\n"
               "template <class T, class F> __device__ __forceinline__ T tg_bitcast(F v) { union U { F f; T t; }; U u; "
               "u.f = v; return u.t; }\n");
  UsedDType used[64];
  size_t nused = used_dtypes(p, used, TG_ARRAY_LEN(used));
  bool has_half = false, has_bf16 = false;
  for (size_t i = 0; i < nused; i++) has_half |= used[i].dt == DT_FLOAT16, has_bf16 |= used[i].dt == DT_BFLOAT16;
  for (size_t i = 0; i < p->params->len; i++) { /* a buffer's element type counts too (a half buffer read as float) */
    has_half |= p->params->data[i].dtype->scalar == DT_FLOAT16;
    has_bf16 |= p->params->data[i].dtype->scalar == DT_BFLOAT16;
  }
  if (has_half || has_bf16) sb_printf(out, "%s\n", half_ops);
  if (has_half) sb_printf(out, "%s\nTG_HALF_OPS(half)\n", half_type);
  if (has_bf16) sb_printf(out, "%s\nTG_HALF_OPS(nv_bfloat16)\n", bf16_type);
  if (has_half) { put_vector_struct(out, DT_FLOAT16, 2); sb_putc(out, '\n'); }
  if (has_bf16) { put_vector_struct(out, DT_BFLOAT16, 2); sb_putc(out, '\n'); }
  for (size_t i = 0; i < nused; i++)
    if ((used[i].n == 4 || used[i].n == 8) && is_half_like(used[i].dt)) {
      put_vector_struct(out, used[i].dt, (int)used[i].n);
      sb_putc(out, '\n');
    }
  put_wmma_helpers(out, lang, p);
  int64_t threads = 1; /* launch bounds: the product of the lidx bounds; flat ids: any block (render.h) */
  for (uint32_t i = 0; i < p->linear->nsrc; i++) {
    const UOp *u = p->linear->src[i];
    if (uop_is(u, TG_OP_SPECIAL) && u->arg.kind == ARG_STR && u->arg.str[0] == 'l') threads *= uop_vmax(u->src[0]);
  }
  if (render_flat_ids(p->linear)) threads = RENDER_MAX_WORKGROUP;
  sb_printf(out, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(", (long long)threads, p->name);
  for (size_t k = 0; k < p->params->len; k++) {
    const RenderParam *rp = &p->params->data[k];
    if (k) sb_puts(out, ", ");
    if (rp->is_value) sb_printf(out, "const %s %s", cuda_type_name(rp->dtype), rp->name);
    else sb_printf(out, "%s* %s", cuda_type_name(rp->dtype), rp->name);
  }
  sb_printf(out, ") {\n%s\n}", p->body);
}

static const CStyleLang cuda_lang = {
    .type_name = cuda_type_name,
    .inf = "INFINITY",
    .nan = "NAN",
    .barrier = "__syncthreads();",
    .smem_prefix = "__shared__ __align__(16) ",
    .align_reg_vectors = false,
    .vector_ctor = "make_",
    .gep_arr_threshold = 8,
    .bitcast = CSTYLE_BITCAST_TEMPLATE,
    .put_unary = cuda_put_unary,
    .put_workitem = cuda_put_workitem,
    .put_program = cuda_put_program,
};

static bool has_fp8(UOp *linear) {
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    TgDTypeId d = linear->src[i]->dtype->scalar->id;
    if (d == TG_FP8E4M3 || d == TG_FP8E5M2 || d == TG_FP8E4M3FNUZ || d == TG_FP8E5M2FNUZ) return true;
  }
  return false;
}

char *render_cuda(const Renderer *ren, UOp *linear) {
  if (linear && uop_is(linear, TG_OP_LINEAR) && has_fp8(linear)) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: render: fp8 dtypes on CUDA not supported yet");
    return NULL;
  }
  return render_cstyle(ren ? ren : renderer_cuda(), &cuda_lang, linear);
}

/* ---- the table ---- */

/* tinygrad tc.cuda_sm80 (sm_90 has no list of its own; fp8's sm_89 entries need fp8, not supported here yet):
 * m16n8k16 for half/bf16 in, m16n8k8 for half and tf32 (tf32 only with ALLOW_TF32) */
#define CUDA_TC_OPTS {"u0", "l0", "l0", "l1", "l1", "l1", "u1", NULL}
#define CUDA_81616(din, dout) \
  {{8, 16, 16}, 32, {8, 4, 4}, din, dout, CUDA_TC_OPTS, \
   {{"r1 r2 l2 l3 l4", "u1 r3", "l0 l1 u0 r0"}, {"r1 r2 u0 l0 l1", "r0 r3", "l2 l3 l4 u1"}}}
#define CUDA_8168_F16(din, dout) \
  {{8, 16, 8}, 32, {4, 2, 4}, din, dout, CUDA_TC_OPTS, \
   {{"r1 r2 l2 l3 l4", "r0 u1", "l0 l1 u0"}, {"r1 r2 u0 l0 l1", "u1 r0", "l2 l3 l4"}}}
static const TensorCore cuda_sm80_tc[] = {
    CUDA_81616(DT_FLOAT16, DT_FLOAT32), CUDA_81616(DT_BFLOAT16, DT_FLOAT32), CUDA_81616(DT_FLOAT16, DT_FLOAT16),
    CUDA_8168_F16(DT_FLOAT16, DT_FLOAT32), CUDA_8168_F16(DT_FLOAT16, DT_FLOAT16),
    {{8, 16, 8}, 32, {4, 2, 4}, DT_FLOAT32, DT_FLOAT32, CUDA_TC_OPTS,
     {{"r0 r1 l2 l3 l4", "u1 r2", "l0 l1 u0"}, {"r0 r1 u0 l0 l1", "u1 r2", "l2 l3 l4"}}},
};

const Renderer *renderer_cuda(void) {
  static Renderer r;
  static bool built;
  if (built) return &r;
  memset(&r, 0, sizeof r);
  r.device = "CUDA";
  r.suffix = "";
  r.has_local = true;
  r.has_threads = false;
  r.has_shared = true;
  r.supports_float4 = true;
  r.has_global_max = r.has_local_max = true;
  const int64_t gmax[3] = {2147483647, 65535, 65535}, lmax[3] = {1024, 1024, 64};
  memcpy(r.global_max, gmax, sizeof gmax);
  memcpy(r.local_max, lmax, sizeof lmax);
  r.shared_max = 49152;
  r.vector_bytes = 16;
  r.reduce_vectorize_hint = false;
  /* The conv's hinted copies are made on CUDA too. Measured on the H200 (2026-12-04, main 663ef85, `DEV=CUDA
   * build/bench_gpu conv2d_64x32x28x28_k3` and `build/bench_train 5 0 0`): without them (the conv's loads masked by
   * the padding, 1 kernel) conv2d 3.6 TFLOPS and the CNN step 184-186 steps/s through the JIT; with them (3 kernels)
   * 20.9 TFLOPS and 397.5 steps/s: the GPU conv heuristic (opt_conv.c) was tuned on the unmasked, channel-inner
   * operands. Most of it is the weight's layout: with that copy alone (CONTIG_HINTS=3, the input's loads masked)
   * the conv ran 20.0-23.3 TFLOPS against 20.6-22.7 with both (2026-12-05), 5.8-6.0 with the pad copy alone
   * (CONTIG_HINTS=2). CONTIG_HINTS=0 drops them (tinygrad's single kernel). */
  r.gated_loads_expensive = true;
  r.channel_inner_vectors = true;
  r.pointer_plus_terms = false;
  /* CStyleLanguage.code_for_op with CUDA's transcendentals; no MAX (a WHERE), no MULACC, no FDIV */
  static const TgOp ops[] = {TG_OP_SQRT, TG_OP_RECIPROCAL, TG_OP_NEG, TG_OP_EXP2, TG_OP_LOG2, TG_OP_SIN, TG_OP_TRUNC,
                             TG_OP_AND, TG_OP_XOR, TG_OP_OR, TG_OP_ADD, TG_OP_SUB, TG_OP_MUL, TG_OP_CMOD,
                             TG_OP_CDIV, TG_OP_CMPNE, TG_OP_SHR, TG_OP_SHL, TG_OP_CMPLT, TG_OP_WHERE, TG_OP_CMPEQ};
  for (size_t i = 0; i < TG_ARRAY_LEN(ops); i++) opset_add(&r.code_for_op, ops[i]);
  /* supported_dtypes for sm_90: half (sm >= 53) and bfloat16 (sm >= 80) yes; fp8 not yet (no header-free fp8) */
  for (int d = 0; d < TG_DTYPE_COUNT; d++) {
    const DType *dt = &tg_dtype_table[d];
    bool fp8 = d == TG_FP8E4M3 || d == TG_FP8E5M2 || d == TG_FP8E4M3FNUZ || d == TG_FP8E5M2FNUZ;
    if (!fp8 && !dt_is_weak(dt) && d != TG_VOID) r.supported_dtypes |= 1u << d;
  }
  r.tensor_cores = cuda_sm80_tc;
  r.n_tensor_cores = (int)TG_ARRAY_LEN(cuda_sm80_tc);
  r.extra_matcher = NULL;
  r.render = render_cuda;
  built = true;
  return &r;
}
