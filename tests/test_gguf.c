/* test_gguf.c — the GGUF reader and writer (src/nn/gguf.c, gguf_write.c) and ggml dequantization (ggml_quants.c).
 *
 * tests/fixtures/gguf/quants.gguf is written by an independent Python writer (tools/gen_gguf_fixtures.py): its
 * metadata of every value type must read back, and every format's tensor must equal the script's reference
 * dequantization bit for bit (that reference also agrees with tinygrad's gguf.py on the same file). Then: a matmul
 * with a quantized weight is one kernel for every format (the dequantization fuses; nothing dequantized is stored),
 * the mapped path does not copy, tensors outlive the handle, the writer round-trips every value type and tensor, and
 * a long list of malformed files is each rejected with a clear status and message (truncation at every byte too). */
#include <unistd.h>

#include "fixture.h"
#include "nn/nn.h"
#include "runtime/runtime.h"
#include "uop/dtype.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"
#include "test.h"

static tg_gguf *open_fixture(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/gguf/quants.gguf", tf_dir());
  tg_gguf *g = NULL;
  tg_status st = tg_gguf_open(path, &g);
  CHECK_MSG(st == TG_OK && g, "%s: %s", path, tg_last_error());
  return g;
}

static int kernels_of(tg_tensor *t) {
  UOpScope sc = uop_scope_begin();
  UOp *root = t->uop;
  UOp *lin = sched_kernels(uop_sink(&root, 1));
  int k = lin ? (int)lin->nsrc : -1;
  uop_scope_end(sc);
  return k;
}

/* t as float32 on the host (numel floats, malloc'ed); call inside a scope (it owns the cast) */
static float *host_f32(tg_tensor *t) {
  int64_t n = tg_numel(t);
  float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  tg_tensor *c = tg_get_dtype(t) == TG_FLOAT32 ? t : tg_cast(t, TG_FLOAT32);
  tg_status st = tg_to_host(c, v, (size_t)n * sizeof *v);
  if (st != TG_OK) {
    free(v);
    return NULL;
  }
  return v;
}

/* ------------------------------------------------------------------------------------------------- the fixture */

static void fixture_metadata(void) {
  tg_gguf *g = open_fixture();
  if (!g) return;
  CHECK_EQ_INT(tg_gguf_version(g), 3);
  CHECK_EQ_INT(tg_gguf_alignment(g), 32);
  CHECK_EQ_INT(tg_gguf_kv_count(g), 22);
  CHECK_EQ_STR(tg_gguf_kv_key(g, 0), "general.architecture");
  const char *s;
  size_t len;
  CHECK(tg_gguf_get_string(g, "general.name", &s, &len) == TG_OK && strcmp(s, "fixture \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80") == 0);
  int64_t i;
  double f;
  bool b;
  CHECK(tg_gguf_get_int(g, "t.u8", &i) == TG_OK && i == 255);
  CHECK(tg_gguf_get_int(g, "t.i8", &i) == TG_OK && i == -128);
  CHECK(tg_gguf_get_int(g, "t.u16", &i) == TG_OK && i == 65535);
  CHECK(tg_gguf_get_int(g, "t.i16", &i) == TG_OK && i == -32768);
  CHECK(tg_gguf_get_int(g, "t.u32", &i) == TG_OK && i == 4294967295LL);
  CHECK(tg_gguf_get_int(g, "t.i32", &i) == TG_OK && i == INT32_MIN);
  CHECK(tg_gguf_get_int(g, "t.i64", &i) == TG_OK && i == INT64_MIN);
  CHECK(tg_gguf_get_int(g, "t.u64", &i) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "does not fit"));
  const tg_gguf_value *u64 = tg_gguf_get(g, "t.u64");
  CHECK(u64 && u64->type == TG_GGUF_UINT64 && u64->v.u == UINT64_MAX);
  CHECK(tg_gguf_get_float(g, "t.f32", &f) == TG_OK && f == 0.5);
  CHECK(tg_gguf_get_float(g, "t.f64", &f) == TG_OK && f == -1.25e300);
  CHECK(tg_gguf_get_bool(g, "t.bool", &b) == TG_OK && b);
  CHECK(tg_gguf_get_string(g, "t.empty_string", &s, &len) == TG_OK && len == 0 && s[0] == 0);
  CHECK(tg_gguf_get_string(g, "t.bytes_string", &s, &len) == TG_OK && len == 4 && memcmp(s, "a\0b\xff", 4) == 0);
  /* wrong types and absent keys are errors naming the key */
  CHECK(tg_gguf_get_int(g, "t.f32", &i) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "t.f32"));
  CHECK(tg_gguf_get_string(g, "t.u8", &s, NULL) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "not a string"));
  CHECK(tg_gguf_get_float(g, "nope", &f) == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), "nope"));
  CHECK(tg_gguf_get(g, "nope") == NULL);
  const tg_gguf_value *v = tg_gguf_get(g, "t.arr_i32");
  CHECK(v && v->type == TG_GGUF_ARRAY && v->v.arr.type == TG_GGUF_INT32 && v->v.arr.len == 3);
  if (v) CHECK(((const int32_t *)v->v.arr.data)[1] == -2);
  v = tg_gguf_get(g, "t.arr_f32");
  CHECK(v && v->v.arr.type == TG_GGUF_FLOAT32 && v->v.arr.len == 2 && ((const float *)v->v.arr.data)[1] == -1.5f);
  v = tg_gguf_get(g, "t.arr_bool");
  CHECK(v && v->v.arr.type == TG_GGUF_BOOL && ((const bool *)v->v.arr.data)[2]);
  v = tg_gguf_get(g, "t.arr_str");
  CHECK(v && v->v.arr.type == TG_GGUF_STRING && v->v.arr.len == 4 && v->v.arr.items);
  if (v && v->v.arr.items) {
    CHECK_EQ_STR(v->v.arr.items[2].v.str.s, "\xc4\xa0the");
    CHECK(v->v.arr.items[3].v.str.len == 0);
  }
  v = tg_gguf_get(g, "t.arr_empty");
  CHECK(v && v->v.arr.len == 0 && v->v.arr.type == TG_GGUF_UINT32);
  v = tg_gguf_get(g, "t.arr_nested");
  CHECK(v && v->v.arr.type == TG_GGUF_ARRAY && v->v.arr.len == 2);
  if (v && v->v.arr.items) {
    const tg_gguf_value *a = &v->v.arr.items[0], *c = &v->v.arr.items[1];
    CHECK(a->v.arr.type == TG_GGUF_UINT16 && a->v.arr.len == 2 && ((const uint16_t *)a->v.arr.data)[1] == 2);
    CHECK(c->v.arr.type == TG_GGUF_STRING && c->v.arr.len == 1 && strcmp(c->v.arr.items[0].v.str.s, "x") == 0);
  }
  v = tg_gguf_get(g, "t.arr_u64");
  CHECK(v && ((const uint64_t *)v->v.arr.data)[1] == UINT64_MAX);
  /* tensor infos */
  CHECK_EQ_INT(tg_gguf_tensor_count(g), 23);
  const tg_gguf_tensor_info *ti = tg_gguf_find_tensor(g, "q4_k");
  CHECK(ti && ti->type == TG_GGML_Q4_K && ti->ndim == 2 && ti->ne[0] == 512 && ti->ne[1] == 3 && ti->nbytes == 6 * 144);
  CHECK(tg_gguf_find_tensor(g, "nope") == NULL);
  CHECK(tg_gguf_tensor_info_at(g, 0) && strcmp(tg_gguf_tensor_info_at(g, 0)->name, "f32") == 0);
  CHECK(tg_gguf_tensor_info_at(g, 23) == NULL);
  tg_gguf_close(g);
}

/* every format against the Python reference, bit for bit, mapped and copied */
static void fixture_formats(void) {
  tg_gguf *g = open_fixture();
  if (!g) return;
  static const char *const names[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k", "mxfp4"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    for (int how = 0; how < 2; how++) {
      tg_scope s = tg_scope_begin();
      char ref_name[32];
      snprintf(ref_name, sizeof ref_name, "%s.ref", names[k]);
      tg_tensor *t = tg_gguf_tensor(g, names[k], (tg_gguf_load)how), *r = tg_gguf_tensor(g, ref_name, TG_GGUF_MAP);
      CHECK_MSG(t && r, "%s: %s", names[k], tg_last_error());
      if (t && r) {
        CHECK(tg_ndim(t) == 2 && tg_shape(t)[0] == 3 && tg_shape(t)[1] == 512);
        tg_dtype want = k == 1 ? TG_FLOAT16 : k == 2 ? TG_BFLOAT16 : TG_FLOAT32;
        CHECK_MSG(tg_get_dtype(t) == want, "%s: dtype %s", names[k], tg_dtype_name(tg_get_dtype(t)));
        float *a = host_f32(t), *b = host_f32(r);
        CHECK_MSG(a && b, "%s: %s", names[k], tg_last_error());
        int bad = 0, first = -1;
        for (int i = 0; a && b && i < 3 * 512; i++)
          if (memcmp(&a[i], &b[i], 4) != 0 && !(isnan(a[i]) && isnan(b[i]))) {
            if (first < 0) first = i;
            bad++;
          }
        CHECK_MSG(bad == 0, "%s (%s): %d values differ from the reference, first at %d: %.9g != %.9g", names[k],
                  how ? "copy" : "map", bad, first, first >= 0 ? a[first] : 0.0, first >= 0 ? b[first] : 0.0);
        free(a);
        free(b);
      }
      tg_scope_end(s);
    }
  }
  tg_gguf_close(g);
}

/* dequant(quant(x)) of the reference quantizers stays within the formats' rounding error */
static void fixture_quantized_data(void) {
  tg_gguf *g = open_fixture();
  if (!g) return;
  tg_scope s = tg_scope_begin();
  float *x = host_f32(tg_gguf_tensor(g, "x", TG_GGUF_MAP));
  float *q8 = host_f32(tg_gguf_tensor(g, "x.q8_0", TG_GGUF_MAP)), *q4 = host_f32(tg_gguf_tensor(g, "x.q4_0", TG_GGUF_MAP));
  CHECK_MSG(x && q8 && q4, "%s", tg_last_error());
  int bad8 = 0, bad4 = 0;
  for (int blk = 0; x && q8 && q4 && blk < 3 * 512 / 32; blk++) {
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[blk * 32 + j]));
    for (int j = 0; j < 32; j++) {
      int i = blk * 32 + j;
      if (fabsf(q8[i] - x[i]) > amax / 127.0f * 0.57f) bad8++; /* half a step + 127 times d's f16 rounding */
      if (fabsf(q4[i] - x[i]) > amax / 8.0f * 1.01f) bad4++;
    }
  }
  CHECK_MSG(bad8 == 0, "q8_0: %d values beyond half a step", bad8);
  CHECK_MSG(bad4 == 0, "q4_0: %d values beyond a step", bad4);
  free(x);
  free(q8);
  free(q4);
  tg_scope_end(s);
  tg_gguf_close(g);
}

/* y = x @ W^T with a quantized W is ONE kernel for every format (the dequantization fuses into the matmul, nothing
 * dequantized is materialized) and equals the matmul with the reference f32 weight */
static void fused_matmul(void) {
  tg_gguf *g = open_fixture();
  if (!g) return;
  static const char *const names[] = {"q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k", "mxfp4", "f16", "bf16"};
  size_t nn = tg_test_light() ? 3 : sizeof names / sizeof *names;
  for (size_t k = 0; k < nn; k++) {
    tg_scope s = tg_scope_begin();
    char ref_name[32];
    snprintf(ref_name, sizeof ref_name, "%s.ref", names[k]);
    tg_manual_seed(7);
    tg_tensor *x = tg_randn(TG_SHAPE(2, 512), TG_FLOAT32);
    tg_realize(x);
    /* rows 1 and 2: row 0 holds the edge blocks (MXFP4 scales up to 2^127, whose products overflow) */
    const int64_t rows[4] = {1, 3, 0, 512};
    tg_tensor *w = tg_shrink(tg_gguf_tensor(g, names[k], TG_GGUF_MAP), rows, 2);
    tg_tensor *wr = tg_shrink(tg_gguf_tensor(g, ref_name, TG_GGUF_MAP), rows, 2);
    tg_tensor *y = tg_matmul(x, tg_transpose(tg_cast(w, TG_FLOAT32), 0, 1));
    tg_tensor *yr = tg_matmul(x, tg_transpose(wr, 0, 1));
    CHECK_MSG(y && yr, "%s: %s", names[k], tg_last_error());
    if (y && yr) {
      CHECK_MSG(kernels_of(y) == 1, "%s: x @ W^T is %d kernels (want 1: the dequantization fused)", names[k],
                kernels_of(y));
      size_t before = rt_mem_used();
      CHECK(tg_realize(y) == TG_OK);
      /* only the (2, 2) output may have been added: no dequantized weight copy */
      CHECK_MSG(rt_mem_used() - before <= 2 * 2 * 4, "%s: %zu bytes more in use", names[k], rt_mem_used() - before);
      float a[4], b[4];
      CHECK(tg_to_host(y, a, sizeof a) == TG_OK && tg_to_host(yr, b, sizeof b) == TG_OK);
      for (int i = 0; i < 4; i++)
        CHECK_MSG(fabsf(a[i] - b[i]) <= 1e-4f * (1 + fabsf(b[i])) || (isinf(a[i]) && a[i] == b[i]) ||
                  (isnan(a[i]) && isnan(b[i])), "%s: y[%d] %.9g != %.9g", names[k], i, a[i], b[i]);
    }
    tg_scope_end(s);
  }
  tg_gguf_close(g);
}

/* ------------------------------------------------------------------------------------------------- the writer */

static uint8_t *sample_file(uint32_t alignment, size_t *size) {
  tg_gguf_writer *w = tg_gguf_writer_new(alignment);
  CHECK(w != NULL);
  CHECK(tg_gguf_writer_add_string(w, "general.architecture", "llama") == TG_OK);
  CHECK(tg_gguf_writer_add_uint32(w, "llama.block_count", 2) == TG_OK);
  CHECK(tg_gguf_writer_add_float32(w, "llama.rope.freq_base", 500000.0f) == TG_OK);
  tg_gguf_value vals[] = {{TG_GGUF_UINT8, {.u = 200}},  {TG_GGUF_INT8, {.i = -5}},     {TG_GGUF_UINT16, {.u = 999}},
                          {TG_GGUF_INT16, {.i = -999}}, {TG_GGUF_INT32, {.i = -70000}}, {TG_GGUF_BOOL, {.i = 1}},
                          {TG_GGUF_UINT64, {.u = UINT64_MAX}}, {TG_GGUF_INT64, {.i = INT64_MIN}},
                          {TG_GGUF_FLOAT64, {.f = 3.5e-300}}};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
    char key[32];
    snprintf(key, sizeof key, "v.%zu", i);
    CHECK(tg_gguf_writer_add(w, key, &vals[i]) == TG_OK);
  }
  static const int32_t ints[] = {3, -1, 4};
  tg_gguf_value arr = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_INT32, 3, ints, NULL}}};
  CHECK(tg_gguf_writer_add(w, "tokenizer.ggml.token_type", &arr) == TG_OK);
  tg_gguf_value strs[3] = {{TG_GGUF_STRING, {.str = {"a", 1}}}, {TG_GGUF_STRING, {.str = {"", 0}}},
                           {TG_GGUF_STRING, {.str = {"\xe2\x96\x81hi", 5}}}};
  tg_gguf_value sarr = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_STRING, 3, NULL, strs}}};
  CHECK(tg_gguf_writer_add(w, "tokenizer.ggml.tokens", &sarr) == TG_OK);
  tg_gguf_value nested = {TG_GGUF_ARRAY, {.arr = {TG_GGUF_ARRAY, 1, NULL, &arr}}};
  CHECK(tg_gguf_writer_add(w, "x.nested", &nested) == TG_OK);
  /* the writer's own checks */
  CHECK(tg_gguf_writer_add_uint32(w, "llama.block_count", 3) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_writer_add_uint32(w, "general.alignment", 64) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_writer_add_uint32(w, "", 1) == TG_ERR_INVALID_ARGUMENT);
  tg_gguf_value badbool = {TG_GGUF_BOOL, {.i = 2}};
  CHECK(tg_gguf_writer_add(w, "b", &badbool) == TG_ERR_INVALID_ARGUMENT);
  float data[12];
  for (int i = 0; i < 12; i++) data[i] = (float)i - 5.5f;
  CHECK(tg_gguf_writer_add_tensor(w, "a", TG_GGML_F32, TG_SHAPE(4, 3), data, sizeof data) == TG_OK);
  uint8_t q8[2 * 34];
  for (int i = 0; i < (int)sizeof q8; i++) q8[i] = (uint8_t)(i * 37 + 11);
  q8[1] = 0x3c; q8[0] = 0; q8[35] = 0xbc; q8[34] = 0; /* d = 1.0 and -1.0 */
  CHECK(tg_gguf_writer_add_tensor(w, "b", TG_GGML_Q8_0, TG_SHAPE(64), q8, sizeof q8) == TG_OK);
  CHECK(tg_gguf_writer_add_tensor(w, "empty", TG_GGML_F16, TG_SHAPE(0, 5), NULL, 0) == TG_OK);
  uint16_t h[3] = {0x3c00, 0xc000, 0x7bff};
  CHECK(tg_gguf_writer_add_tensor(w, "c", TG_GGML_F16, TG_SHAPE(3, 1, 1, 1), h, sizeof h) == TG_OK);
  CHECK(tg_gguf_writer_add_tensor(w, "a", TG_GGML_F32, TG_SHAPE(1), data, 4) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_writer_add_tensor(w, "d", TG_GGML_Q8_0, TG_SHAPE(33), q8, 34) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_writer_add_tensor(w, "d", TG_GGML_F32, TG_SHAPE(2), data, 4) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_writer_add_tensor(w, "d", 4, TG_SHAPE(2), data, 8) == TG_ERR_INVALID_ARGUMENT);
  uint8_t *buf = NULL;
  *size = 0;
  CHECK(tg_gguf_writer_write_buffer(w, &buf, size) == TG_OK);
  tg_gguf_writer_free(w);
  return buf;
}

static void writer_round_trip(void) {
  uint32_t aligns[] = {0, 1, 64, 4096};
  for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++) {
    size_t n;
    uint8_t *buf = sample_file(aligns[ai], &n);
    tg_gguf *g = NULL;
    CHECK_MSG(buf && tg_gguf_open_buffer(buf, n, &g) == TG_OK, "alignment %u: %s", aligns[ai], tg_last_error());
    if (!g) { tg_buffer_free(buf); continue; }
    uint32_t want_align = aligns[ai] ? aligns[ai] : 32;
    CHECK_EQ_INT(tg_gguf_alignment(g), want_align);
    CHECK(tg_gguf_data_offset(g) % want_align == 0);
    CHECK_EQ_INT(tg_gguf_kv_count(g), 15 + (want_align != 32));
    int64_t i;
    double f;
    CHECK(tg_gguf_get_int(g, "llama.block_count", &i) == TG_OK && i == 2);
    CHECK(tg_gguf_get_float(g, "llama.rope.freq_base", &f) == TG_OK && f == 500000.0);
    CHECK(tg_gguf_get_int(g, "v.0", &i) == TG_OK && i == 200);
    CHECK(tg_gguf_get_int(g, "v.1", &i) == TG_OK && i == -5);
    CHECK(tg_gguf_get_int(g, "v.4", &i) == TG_OK && i == -70000);
    const tg_gguf_value *u64 = tg_gguf_get(g, "v.6");
    CHECK(u64 && u64->v.u == UINT64_MAX);
    CHECK(tg_gguf_get_int(g, "v.7", &i) == TG_OK && i == INT64_MIN);
    CHECK(tg_gguf_get_float(g, "v.8", &f) == TG_OK && f == 3.5e-300);
    const tg_gguf_value *v = tg_gguf_get(g, "tokenizer.ggml.tokens");
    CHECK(v && v->v.arr.len == 3 && strcmp(v->v.arr.items[2].v.str.s, "\xe2\x96\x81hi") == 0);
    v = tg_gguf_get(g, "x.nested");
    CHECK(v && v->v.arr.len == 1 && ((const int32_t *)v->v.arr.items[0].v.arr.data)[2] == 4);
    CHECK_EQ_INT(tg_gguf_tensor_count(g), 4);
    tg_scope s = tg_scope_begin();
    float a[12];
    tg_tensor *ta = tg_gguf_tensor(g, "a", TG_GGUF_MAP);
    CHECK(ta && tg_ndim(ta) == 2 && tg_shape(ta)[0] == 3 && tg_shape(ta)[1] == 4);
    CHECK(tg_to_host(ta, a, sizeof a) == TG_OK && a[0] == -5.5f && a[11] == 5.5f);
    float b[64];
    CHECK(tg_to_host(tg_gguf_tensor(g, "b", TG_GGUF_COPY), b, sizeof b) == TG_OK);
    CHECK(b[0] == 85.0f && b[32] == -(float)(int8_t)(uint8_t)(36 * 37 + 11));
    tg_tensor *e = tg_gguf_tensor(g, "empty", TG_GGUF_MAP);
    CHECK(e && tg_numel(e) == 0 && tg_shape(e)[0] == 5 && tg_shape(e)[1] == 0);
    tg_tensor *c = tg_gguf_tensor(g, "c", TG_GGUF_MAP);
    CHECK(c && tg_ndim(c) == 4 && tg_shape(c)[3] == 3);
    float cf[3];
    CHECK(tg_to_host(tg_cast(c, TG_FLOAT32), cf, sizeof cf) == TG_OK && cf[0] == 1 && cf[1] == -2 && cf[2] == 65504);
    uint8_t raw[68];
    tg_tensor *rb = tg_gguf_tensor_bytes(g, "b", TG_GGUF_MAP);
    CHECK(rb && tg_get_dtype(rb) == TG_UINT8 && tg_numel(rb) == 68 && tg_to_host(rb, raw, sizeof raw) == TG_OK);
    CHECK(memcmp(raw + 2, buf + tg_gguf_data_offset(g) + tg_gguf_find_tensor(g, "b")->offset + 2, 66) == 0);
    CHECK(tg_gguf_tensor(g, "zz", TG_GGUF_MAP) == NULL && tg_last_status() == TG_ERR_INVALID_ARGUMENT);
    tg_scope_end(s);
    /* writing what was read gives the same bytes */
    tg_gguf_writer *w = tg_gguf_writer_new(want_align);
    for (size_t k = 0; k < tg_gguf_kv_count(g); k++)
      if (strcmp(tg_gguf_kv_key(g, k), "general.alignment") != 0)
        CHECK(tg_gguf_writer_add(w, tg_gguf_kv_key(g, k), tg_gguf_kv_value(g, k)) == TG_OK);
    for (size_t k = 0; k < tg_gguf_tensor_count(g); k++) {
      const tg_gguf_tensor_info *t = tg_gguf_tensor_info_at(g, k);
      CHECK(tg_gguf_writer_add_tensor(w, t->name, t->type, t->ne, (size_t)t->ndim, buf + tg_gguf_data_offset(g) + t->offset,
                                      (size_t)t->nbytes) == TG_OK);
    }
    uint8_t *again = NULL;
    size_t n2 = 0;
    CHECK(tg_gguf_writer_write_buffer(w, &again, &n2) == TG_OK);
    CHECK_MSG(n2 == n && again && memcmp(again, buf, n) == 0, "alignment %u: rewrite differs (%zu vs %zu bytes)",
              want_align, n2, n);
    tg_buffer_free(again);
    tg_gguf_writer_free(w);
    tg_gguf_close(g);
    tg_buffer_free(buf);
  }
  CHECK(tg_gguf_writer_new(48) == NULL && tg_last_status() == TG_ERR_INVALID_ARGUMENT);
}

/* a mapped file: the tensors are the file's pages (no copy), outlive the handle, and writes never reach the file */
static void mapped_file(void) {
  size_t n;
  uint8_t *buf = sample_file(64, &n);
  char path[] = "/tmp/tg_gguf_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0 && write(fd, buf, n) == (ssize_t)n);
  if (fd >= 0) close(fd);
  tg_gguf *g = NULL;
  CHECK_MSG(tg_gguf_open(path, &g) == TG_OK, "%s", tg_last_error());
  if (g) {
    tg_scope s = tg_scope_begin();
    size_t before = rt_mem_used();
    tg_tensor *a = tg_gguf_tensor(g, "a", TG_GGUF_MAP), *b = tg_gguf_tensor(g, "b", TG_GGUF_MAP);
    CHECK_MSG(rt_mem_used() == before, "mapping allocated %zu bytes", rt_mem_used() - before);
    tg_gguf_close(g); /* the tensors keep the mapping */
    float av[12], bv[64];
    CHECK(tg_to_host(a, av, sizeof av) == TG_OK && av[1] == -4.5f);
    CHECK(tg_to_host(b, bv, sizeof bv) == TG_OK && bv[0] == 85.0f);
    /* a write through the tensor is private (copy-on-write) */
    CHECK(tg_assign(a, tg_full_like(a, 7.0, TG_VOID)) == TG_OK && tg_realize(a) == TG_OK);
    CHECK(tg_to_host(a, av, sizeof av) == TG_OK && av[1] == 7.0f);
    tg_scope_end(s);
    tg_gguf *g2 = NULL;
    CHECK(tg_gguf_open(path, &g2) == TG_OK);
    tg_scope s2 = tg_scope_begin();
    CHECK(g2 && tg_to_host(tg_gguf_tensor(g2, "a", TG_GGUF_MAP), av, sizeof av) == TG_OK && av[1] == -4.5f);
    tg_scope_end(s2);
    tg_gguf_close(g2);
  }
  unlink(path);
  tg_buffer_free(buf);
  tg_gguf *none = (tg_gguf *)1;
  CHECK(tg_gguf_open("/nonexistent/x.gguf", &none) == TG_ERR_IO && none == NULL && strstr(tg_last_error(), "cannot open"));
}

/* ------------------------------------------------------------------------------------------------- malformed files */

typedef struct Img { uint8_t b[4096]; size_t n; } Img;
static void p32(Img *m, uint32_t v) { for (int i = 0; i < 4; i++) m->b[m->n++] = (uint8_t)(v >> (8 * i)); }
static void p64(Img *m, uint64_t v) { for (int i = 0; i < 8; i++) m->b[m->n++] = (uint8_t)(v >> (8 * i)); }
static void pstr(Img *m, const char *s, size_t len) { p64(m, len); memcpy(m->b + m->n, s, len); m->n += len; }
static void pstrz(Img *m, const char *s) { pstr(m, s, strlen(s)); }
static void head(Img *m, uint64_t nt, uint64_t nkv) { m->n = 0; memcpy(m->b, "GGUF", 4); m->n = 4; p32(m, 3); p64(m, nt); p64(m, nkv); }
/* one f32 tensor info (name, ne...) */
static void tinfo(Img *m, const char *name, int ndim, const uint64_t *ne, uint32_t type, uint64_t off) {
  pstrz(m, name);
  p32(m, (uint32_t)ndim);
  for (int i = 0; i < ndim; i++) p64(m, ne[i]);
  p32(m, type);
  p64(m, off);
}
static void pad_data(Img *m, size_t align, size_t data) {
  while (m->n % align) m->b[m->n++] = 0;
  memset(m->b + m->n, 0, data);
  m->n += data;
}

static bool rejects(const Img *m, tg_status want, const char *needle, const char *what) {
  tg_gguf *g = (tg_gguf *)1;
  tg_status st = tg_gguf_open_buffer(m->b, m->n, &g);
  bool ok = st == want && g == NULL && strstr(tg_last_error(), "gguf") && (!needle || strstr(tg_last_error(), needle));
  if (!ok) fprintf(stderr, "  %s: want status %d with \"%s\", got %d: %s\n", what, (int)want, needle ? needle : "",
                   (int)st, st == TG_OK ? "(accepted)" : tg_last_error());
  if (st == TG_OK) tg_gguf_close(g);
  return ok;
}
#define REJECT(m, st, needle) CHECK(rejects(m, st, needle, #needle))

static void malformed(void) {
  Img m;
  const uint64_t ne4[] = {4}, ne2x2[] = {2, 2};
  /* the header */
  head(&m, 0, 0); m.b[0] = 'g'; REJECT(&m, TG_ERR_IO, "magic");
  head(&m, 0, 0); m.n = 20; REJECT(&m, TG_ERR_IO, "truncated");
  head(&m, 0, 0); m.b[4] = 1; REJECT(&m, TG_ERR_UNSUPPORTED, "version 1");
  head(&m, 0, 0); m.b[4] = 4; REJECT(&m, TG_ERR_UNSUPPORTED, "version 4");
  head(&m, 0, 0); m.b[4] = 0; m.b[7] = 3; REJECT(&m, TG_ERR_UNSUPPORTED, "big-endian");
  head(&m, 0, UINT64_MAX); REJECT(&m, TG_ERR_IO, "metadata count");
  head(&m, (uint64_t)1 << 40, 0); REJECT(&m, TG_ERR_IO, "tensor count");
  /* keys and values */
  head(&m, 0, 1); p64(&m, 1000); p64(&m, 0); REJECT(&m, TG_ERR_IO, "metadata key");
  head(&m, 0, 1); pstrz(&m, ""); p32(&m, 0); m.b[m.n++] = 1; REJECT(&m, TG_ERR_IO, "is empty");
  head(&m, 0, 1); pstr(&m, "a\0b", 3); p32(&m, 0); m.b[m.n++] = 1; REJECT(&m, TG_ERR_IO, "NUL");
  head(&m, 0, 1); pstrz(&m, "k\xff"); p32(&m, 0); m.b[m.n++] = 1; REJECT(&m, TG_ERR_IO, "UTF-8");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 13); m.b[m.n++] = 1; REJECT(&m, TG_ERR_IO, "unknown value type 13");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 7); m.b[m.n++] = 2; REJECT(&m, TG_ERR_IO, "bool value");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 4); m.b[m.n++] = 1; REJECT(&m, TG_ERR_IO, "value at byte");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 8); p64(&m, 5); REJECT(&m, TG_ERR_IO, "string value");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 9); p32(&m, 14); p64(&m, 0); REJECT(&m, TG_ERR_IO, "unknown element type");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 9); p32(&m, 4); p64(&m, UINT64_MAX / 2); REJECT(&m, TG_ERR_IO, "cannot fit");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 9); p32(&m, 7); p64(&m, 2); m.b[m.n++] = 1; m.b[m.n++] = 3;
  REJECT(&m, TG_ERR_IO, "bool array element 1");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 9);
  for (int d = 0; d < TG_GGUF_MAX_DEPTH; d++) { p32(&m, 9); p64(&m, 1); }
  p32(&m, 0); p64(&m, 0);
  REJECT(&m, TG_ERR_IO, "nested deeper");
  head(&m, 0, 1); pstrz(&m, "k"); p32(&m, 9); p32(&m, 9); p64(&m, 1); p32(&m, 8); p64(&m, 1); p64(&m, 99);
  REJECT(&m, TG_ERR_IO, "metadata \"k\"");
  head(&m, 0, 2); pstrz(&m, "k"); p32(&m, 0); m.b[m.n++] = 1; pstrz(&m, "k"); p32(&m, 0); m.b[m.n++] = 1;
  REJECT(&m, TG_ERR_IO, "duplicate metadata key");
  head(&m, 0, 1); pstrz(&m, "general.alignment"); p32(&m, 10); p64(&m, 64); REJECT(&m, TG_ERR_IO, "must be uint32");
  head(&m, 0, 1); pstrz(&m, "general.alignment"); p32(&m, 4); p32(&m, 48); REJECT(&m, TG_ERR_IO, "power of two");
  head(&m, 0, 1); pstrz(&m, "general.alignment"); p32(&m, 4); p32(&m, 0); REJECT(&m, TG_ERR_IO, "power of two");
  /* tensor infos */
  head(&m, 1, 0); tinfo(&m, "", 1, ne4, 0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "is empty");
  head(&m, 1, 0); tinfo(&m, "0123456789012345678901234567890123456789012345678901234567890123", 1, ne4, 0, 0);
  pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "at most 63");
  head(&m, 2, 0); tinfo(&m, "t", 1, ne4, 0, 0); tinfo(&m, "t", 1, ne4, 0, 32); pad_data(&m, 32, 48);
  REJECT(&m, TG_ERR_IO, "duplicate tensor name");
  const uint64_t ne5[] = {1, 1, 1, 1, 4};
  head(&m, 1, 0); tinfo(&m, "t", 5, ne5, 0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "5 dimensions");
  const uint64_t neg[] = {(uint64_t)1 << 63};
  head(&m, 1, 0); tinfo(&m, "t", 1, neg, 0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "negative");
  head(&m, 1, 0); tinfo(&m, "t", 1, ne4, 4, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "not a ggml type");
  head(&m, 1, 0); tinfo(&m, "t", 1, ne4, 99, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "type 99");
  head(&m, 1, 0); tinfo(&m, "t", 1, ne4, TG_GGML_Q8_0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "multiple of");
  const uint64_t huge[] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
  head(&m, 1, 0); tinfo(&m, "t", 2, huge, 0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "overflows");
  const uint64_t big[] = {(uint64_t)1 << 61};
  head(&m, 1, 0); tinfo(&m, "t", 1, big, 0, 0); pad_data(&m, 32, 16); REJECT(&m, TG_ERR_IO, "byte size overflows");
  head(&m, 1, 0); tinfo(&m, "t", 1, ne4, 0, 32); pad_data(&m, 32, 64); REJECT(&m, TG_ERR_IO, "expected 0");
  head(&m, 2, 0); tinfo(&m, "t", 1, ne4, 0, 0); tinfo(&m, "u", 1, ne4, 0, 16); pad_data(&m, 32, 48);
  REJECT(&m, TG_ERR_IO, "expected 32");
  head(&m, 1, 0); tinfo(&m, "t", 2, ne2x2, 0, 0); pad_data(&m, 32, 15); REJECT(&m, TG_ERR_IO, "past the end");
  head(&m, 1, 0); tinfo(&m, "t", 1, ne4, 0, 0); REJECT(&m, TG_ERR_IO, "past the end");
  /* truncation at every byte of a valid file: rejected until the last tensor's data is complete */
  size_t n;
  uint8_t *buf = sample_file(64, &n);
  tg_gguf *g = NULL;
  CHECK(tg_gguf_open_buffer(buf, n, &g) == TG_OK);
  uint64_t data_end = 0;
  for (size_t i = 0; g && i < tg_gguf_tensor_count(g); i++) {
    const tg_gguf_tensor_info *t = tg_gguf_tensor_info_at(g, i);
    data_end = TG_MAX(data_end, tg_gguf_data_offset(g) + t->offset + t->nbytes);
  }
  tg_gguf_close(g);
  int wrong = 0;
  for (size_t len = 0; len < n; len++) {
    tg_gguf *h = NULL;
    tg_status st = tg_gguf_open_buffer(buf, len, &h);
    bool want_ok = len >= data_end;
    if ((st == TG_OK) != want_ok || (!want_ok && (st != TG_ERR_IO || !tg_last_error()[0]))) wrong++;
    tg_gguf_close(h);
  }
  CHECK_MSG(wrong == 0, "%d truncations handled wrongly", wrong);
  /* a valid file with a byte flipped anywhere never crashes (the fuzzer does more) */
  for (size_t i = 0; i < n; i++) {
    uint8_t save = buf[i];
    buf[i] ^= 0xA5;
    tg_gguf *h = NULL;
    if (tg_gguf_open_buffer(buf, n, &h) == TG_OK) tg_gguf_close(h);
    buf[i] = save;
  }
  tg_buffer_free(buf);
  /* the API's own arguments */
  CHECK(tg_gguf_open_buffer(NULL, 5, &g) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_open(NULL, &g) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_gguf_get(NULL, "k") == NULL && tg_gguf_kv_count(NULL) == 0 && tg_gguf_find_tensor(NULL, "t") == NULL);
}

/* ------------------------------------------------------------------------------------------------- dequantize */

static void dequantize_api(void) {
  tg_scope s = tg_scope_begin();
  uint8_t blk[34] = {0x00, 0x38}; /* d = 0.5 */
  for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)(j - 16);
  tg_tensor *raw = tg_from_data(blk, TG_UINT8, TG_SHAPE(34));
  float y[32];
  CHECK(tg_to_host(tg_ggml_dequantize(raw, TG_GGML_Q8_0, TG_SHAPE(32)), y, sizeof y) == TG_OK);
  CHECK(y[0] == -8.0f && y[31] == 7.5f);
  /* MXFP4 values on the E2M1 grid are exact: e = 127 gives scale 1/2 on the doubled grid */
  uint8_t mx[17] = {127};
  for (int j = 0; j < 16; j++) mx[1 + j] = (uint8_t)(j | ((15 - j) << 4));
  CHECK(tg_to_host(tg_ggml_dequantize(tg_from_data(mx, TG_UINT8, TG_SHAPE(17)), TG_GGML_MXFP4, TG_SHAPE(32)),
                   y, sizeof y) == TG_OK);
  static const float grid[16] = {0, .5f, 1, 1.5f, 2, 3, 4, 6, 0, -.5f, -1, -1.5f, -2, -3, -4, -6};
  bool same = true;
  for (int j = 0; j < 16; j++) same = same && y[j] == grid[j] && y[16 + j] == grid[15 - j];
  CHECK(same && !signbit(y[8]));
  /* errors */
  CHECK(tg_ggml_dequantize(raw, TG_GGML_Q8_0, TG_SHAPE(16)) == NULL && strstr(tg_last_error(), "multiple of 32"));
  CHECK(tg_ggml_dequantize(raw, TG_GGML_Q8_0, TG_SHAPE(64)) == NULL && strstr(tg_last_error(), "need 68 bytes"));
  uint8_t q2k[84] = {0};
  CHECK(tg_ggml_dequantize(tg_from_data(q2k, TG_UINT8, TG_SHAPE(84)), TG_GGML_Q2_K, TG_SHAPE(256)) == NULL && tg_last_status() == TG_ERR_UNSUPPORTED &&
        strstr(tg_last_error(), "not supported yet"));
  CHECK(tg_ggml_dequantize(tg_cast(raw, TG_INT32), TG_GGML_Q8_0, TG_SHAPE(32)) == NULL &&
        strstr(tg_last_error(), "uint8"));
  CHECK(tg_ggml_dequantize(raw, 5, TG_SHAPE(32)) == NULL && strstr(tg_last_error(), "not a ggml type"));
  tg_scope_end(s);
  int64_t be, bb;
  CHECK(tg_ggml_type_block(TG_GGML_Q6_K, &be, &bb) && be == 256 && bb == 210);
  CHECK(tg_ggml_type_block(TG_GGML_MXFP4, &be, &bb) && be == 32 && bb == 17);
  CHECK(!tg_ggml_type_block(4, &be, &bb) && tg_ggml_type_name(31) == NULL);
  CHECK_EQ_STR(tg_ggml_type_name(TG_GGML_Q4_K), "q4_K");
}

/* nn_qdot_linear (src/nn/ggml_qdot.c) against a host model of ggml's Q8 activation path: quantize_row_q8_0 (scale
 * max|x| / 127, kept as float16; x / scale rounded half to even), integer block dots with the weight's values (Q4_0:
 * nibble - 8, Q8_0: the signed bytes), then scale_w * scale_x per block, summed in double. x has M rows (a prefill
 * of 3 or 4 tokens) and one all-zero block (scale 0). QDOT's int path and the host agree to float rounding of the block sums. */
static void qdot_case(int K, int M) {
  const int N = 24, nb = K / 32;
  const int types[2] = {TG_GGML_Q4_0, TG_GGML_Q8_0};
  uint32_t seed = 12345;
#define RND() (seed = seed * 1664525u + 1013904223u, seed >> 8)
  float x[4 * 256];
  for (int i = 0; i < M * K; i++) x[i] = ((float)(RND() % 20001) - 10000.0f) / 3000.0f;
  for (int i = 32; i < 64; i++) x[i] = 0.0f; /* row 0, block 1 */
  /* the host's quantized activation */
  int8_t q[4 * 256];
  float dx[4 * 8];
  for (int r = 0; r < M; r++)
    for (int b = 0; b < nb; b++) {
      const float *xb = x + r * K + b * 32;
      float amax = 0;
      for (int j = 0; j < 32; j++) amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
      float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
      for (int j = 0; j < 32; j++) q[r * K + b * 32 + j] = (int8_t)nearbyintf(xb[j] * id);
      dx[r * nb + b] = tg_half_bits_to_float(tg_float_to_half_bits(d));
    }
  for (int ti = 0; ti < 2; ti++) {
    int ty = types[ti], bytes = ty == TG_GGML_Q4_0 ? 18 : 34;
    uint8_t *w = malloc((size_t)(N * nb * bytes));
    for (int i = 0; i < N * nb * bytes; i++) w[i] = (uint8_t)RND();
    for (int i = 0; i < N * nb; i++) {
      uint16_t h = tg_float_to_half_bits(((float)(RND() % 1000) + 1.0f) * 1e-4f);
      w[i * bytes] = (uint8_t)(h & 0xff), w[i * bytes + 1] = (uint8_t)(h >> 8);
    }
    double ref[4 * 24], mx = 0;
    for (int r = 0; r < M; r++)
      for (int n = 0; n < N; n++) {
        double acc = 0;
        for (int b = 0; b < nb; b++) {
          const uint8_t *blk = w + (n * nb + b) * bytes;
          float dw = tg_half_bits_to_float((uint16_t)(blk[0] | blk[1] << 8));
          int32_t sumi = 0;
          for (int j = 0; j < 32; j++) {
            int wv = ty == TG_GGML_Q4_0 ? (j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4) - 8 : (int8_t)blk[2 + j];
            sumi += wv * q[r * K + b * 32 + j];
          }
          acc += (double)sumi * dw * dx[r * nb + b];
        }
        ref[r * N + n] = acc;
        mx = fabs(acc) > mx ? fabs(acc) : mx;
      }
    tg_scope sc = tg_scope_begin();
    tg_tensor *xt = tg_from_floats(x, TG_SHAPE(M, K));
    tg_tensor *raw = tg_from_data(w, TG_UINT8, TG_SHAPE(N * nb * bytes));
    tg_tensor *xq = NULL, *sx = NULL, *cx = NULL, *y = NULL, *wq = NULL, *wd = NULL;
    CHECK_MSG(nn_qdot_quantize(xt, ty, &xq, &sx, &cx) == TG_OK, "qdot quantize: %s", tg_last_error());
    CHECK_MSG(nn_qdot_pack(raw, ty, N, &wq, &wd) == TG_OK, "qdot pack: %s", tg_last_error());
    /* the column chunks nn_qdot_pack makes (ggml_qdot.c qdot_chunks): K split when the knob divides it in multiples
     * of 128 elements */
    int64_t qc = tg_getenv_int("QDOT_CHUNK", 2048);
    int64_t chunks = qc > 0 && K > qc && K % qc == 0 && qc % 128 == 0 ? K / qc : 1;
    /* Q8_0 quants half-major in groups of 4 blocks, as the activation: (C, N, nb / C / 4, 2, 4, 16) */
    int64_t nbc = nb / chunks;
    bool wgrouped = ty == TG_GGML_Q8_0 && nbc % 4 == 0;
    CHECK(wq && tg_ndim(wq) == (wgrouped ? 4 : chunks > 1 ? 3 : 2) && (chunks == 1 || tg_size(wq, 0) == chunks));
    if (wgrouped && wq) {
      uint8_t *packed = malloc((size_t)(N * nb * 32)), *want_w = malloc((size_t)(N * nb * 32));
      for (int64_t n = 0; n < N; n++)
        for (int64_t b = 0; b < nb; b++)
          for (int j = 0; j < 32; j++) {
            int64_t c = b / nbc, bb = b % nbc;
            int64_t at = ((c * N + n) * (nbc / 4) + bb / 4) * 128 + (j / 16) * 64 + (bb % 4) * 16 + j % 16;
            want_w[at] = w[(n * nb + b) * bytes + 2 + j];
          }
      CHECK(tg_to_host(wq, packed, (size_t)(N * nb * 32)) == TG_OK && memcmp(packed, want_w, (size_t)(N * nb * 32)) == 0);
      free(packed);
      free(want_w);
    }
    if (xq && wq) y = nn_qdot_linear(xt, xq, sx, cx, wq, wd, ty, N);
    float got[4 * 24];
    CHECK_MSG(y && tg_to_host(y, got, (size_t)(M * N) * sizeof(float)) == TG_OK, "qdot %s: %s", tg_ggml_type_name(ty), tg_last_error());
    double e = 0;
    for (int i = 0; i < M * N && y; i++) e = fabs(got[i] - ref[i]) > e ? fabs(got[i] - ref[i]) : e;
    CHECK_MSG(y && mx > 0 && e <= 1e-5 * mx, "qdot %s vs host model: max err %g of %g", tg_ggml_type_name(ty), e, mx);
    /* the quantized activation itself is the host's */
    /* stored in groups of 4 blocks, half-major (M, nb / 4, 2, 4, 16), where 4 divides the block count */
    int8_t gq[4 * 256], want[4 * 256];
    bool grouped = nb % 4 == 0;
    for (int r = 0; r < M; r++)
      for (int b = 0; b < nb; b++)
        for (int j = 0; j < 32; j++) {
          int at = grouped ? r * K + (b / 4) * 128 + (j / 16) * 64 + (b % 4) * 16 + j % 16 : r * K + b * 32 + j;
          want[at] = q[r * K + b * 32 + j];
        }
    CHECK(xq && tg_ndim(xq) == 5 && tg_size(xq, 4) == (grouped ? 16 : 4));
    CHECK(xq && tg_to_host(xq, gq, (size_t)(M * K)) == TG_OK && memcmp(gq, want, (size_t)(M * K)) == 0);
    /* bad arguments are errors, not crashes */
    CHECK(nn_qdot_linear(xt, xq, sx, cx, wq, wd, ty, N + 1) == NULL && strstr(tg_last_error(), "does not match"));
    tg_clear_error();
    tg_tensor *q2 = NULL, *d2 = NULL;
    CHECK(nn_qdot_pack(raw, ty, 7, &q2, &d2) == TG_ERR_INVALID_ARGUMENT && !q2 && !d2 &&
          strstr(tg_last_error(), "does not split"));
    tg_clear_error();
    tg_scope_end(sc);
    free(w);
  }
}

static void qdot_reference(void) {
  qdot_case(256, 3); /* 8 blocks a row: the activation in groups of 4 blocks */
  qdot_case(96, 3);  /* 3: ggml's order */
  qdot_case(256, 4); /* 4 tokens: the CPU's prefill tile takes them 2 at a time (opt_quant.c opt_int8_prefill_tiles) */
  test_setenv("QDOT_CHUNK", "128"); /* the weight in 2 column chunks of 4 blocks, chunk-major, summed by a 2nd kernel */
  qdot_case(256, 3);
  qdot_case(256, 4); /* and its rows moved outside the tokens first */
  test_unsetenv("QDOT_CHUNK");
  tg_scope sc = tg_scope_begin();
  tg_tensor *xq = NULL, *sx = NULL, *cx = NULL;
  CHECK(nn_qdot_quantize(tg_zeros(TG_SHAPE(2, 40), TG_FLOAT32), TG_GGML_Q4_0, &xq, &sx, &cx) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "multiple of 32") != NULL);
  CHECK(nn_qdot_quantize(tg_zeros(TG_SHAPE(2, 64), TG_FLOAT32), TG_GGML_Q4_K, &xq, &sx, &cx) == TG_ERR_INVALID_ARGUMENT);
  tg_clear_error();
  tg_scope_end(sc);
#undef RND
}

void suite_gguf(void) {
  fixture_metadata();
  fixture_formats();
  fixture_quantized_data();
  fused_matmul();
  writer_round_trip();
  mapped_file();
  malformed();
  dequantize_api();
  qdot_reference();
  CHECK_EQ_INT(tg_live_tensors(), 0);
}
