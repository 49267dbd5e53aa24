/* test_safetensors.c — the safetensors reader and writer (src/nn/safetensors.c).
 *
 * Round trips (every dtype, 0-d and empty tensors, names with escapes and non-ASCII, metadata, buffer and file),
 * tinygrad's exact byte layout for a small file, hand-written headers the reader must accept (whitespace, escapes,
 * surrogate pairs, entries out of data order, extra fields), and a long list of malformed files that must each be
 * rejected with TG_ERR_IO and a message: truncation at every byte, lying header lengths, sizes and offsets, huge or
 * too many dims, bad JSON of many kinds, bad dtypes, duplicates, bool bytes other than 0/1. */
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "test.h"
#include "tinygrad.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* a file image: u64 header length, the header text, then data */
static uint8_t *image(const char *header, const void *data, size_t data_len, size_t *size) {
  size_t hl = strlen(header);
  *size = 8 + hl + data_len;
  uint8_t *b = malloc(*size);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  memcpy(b + 8, header, hl);
  if (data_len) memcpy(b + 8 + hl, data, data_len);
  return b;
}

static bool rejected(const uint8_t *b, size_t n, const char *needle) {
  tg_state_dict *sd = (tg_state_dict *)1;
  tg_status st = tg_safe_load_buffer(b, n, &sd);
  bool ok = st == TG_ERR_IO && sd == NULL && strstr(tg_last_error(), "safetensors") != NULL &&
            (!needle || strstr(tg_last_error(), needle) != NULL);
  if (!ok) fprintf(stderr, "  not rejected as expected (want \"%s\"): status %d, %s\n", needle ? needle : "",
                   (int)st, st == TG_OK ? "(loaded)" : tg_last_error());
  if (st == TG_OK) tg_state_dict_free(sd);
  return ok;
}

/* the header is rejected (with a zero-filled data section of data_len bytes) */
static bool bad_header(const char *header, size_t data_len, const char *needle) {
  uint8_t *zeros = calloc(1, data_len ? data_len : 1);
  size_t n;
  uint8_t *b = image(header, zeros, data_len, &n);
  bool ok = rejected(b, n, needle);
  if (!ok) fprintf(stderr, "  header: %s\n", header);
  free(b);
  free(zeros);
  return ok;
}

static tg_state_dict *load_ok(const uint8_t *b, size_t n) {
  tg_state_dict *sd = NULL;
  tg_status st = tg_safe_load_buffer(b, n, &sd);
  CHECK_MSG(st == TG_OK && sd, "load failed: %s", tg_last_error());
  return sd;
}

static bool same_tensor(tg_tensor *a, tg_tensor *b) {
  if (!a || !b || tg_get_dtype(a) != tg_get_dtype(b) || tg_ndim(a) != tg_ndim(b)) return false;
  for (int i = 0; i < tg_ndim(a); i++)
    if (tg_shape(a)[i] != tg_shape(b)[i]) return false;
  size_t n = (size_t)tg_numel(a) * tg_dtype_itemsize(tg_get_dtype(a));
  uint8_t *x = malloc(n + 1), *y = malloc(n + 1);
  bool ok = tg_to_host(a, x, n) == TG_OK && tg_to_host(b, y, n) == TG_OK && memcmp(x, y, n) == 0;
  free(x);
  free(y);
  return ok;
}

static void round_trips(void) {
  tg_scope s = tg_scope_begin();
  static const tg_dtype dts[] = {TG_BOOL,    TG_INT8,    TG_UINT8,   TG_INT16,  TG_UINT16,  TG_INT32,
                                 TG_UINT32,  TG_INT64,   TG_UINT64,  TG_FLOAT16, TG_BFLOAT16, TG_FLOAT32,
                                 TG_FLOAT64, TG_FP8E4M3, TG_FP8E5M2};
  tg_state_dict *sd = tg_state_dict_new();
  uint8_t bytes[64];
  for (size_t i = 0; i < COUNT_OF(dts); i++) {
    for (size_t j = 0; j < sizeof bytes; j++) bytes[j] = dts[i] == TG_BOOL ? (uint8_t)(j % 3 == 0) : (uint8_t)(j * 37 + i);
    size_t isz = tg_dtype_itemsize(dts[i]);
    char name[32];
    snprintf(name, sizeof name, "t%zu.%s", i, tg_dtype_name(dts[i]));
    CHECK(tg_state_dict_add(sd, name, tg_from_data(bytes, dts[i], TG_SHAPE(2, (int64_t)(8 / isz))), true) == TG_OK);
  }
  float f = 3.25f;
  CHECK(tg_state_dict_add(sd, "scalar", tg_from_data(&f, TG_FLOAT32, NULL, 0), false) == TG_OK);
  CHECK(tg_state_dict_add(sd, "empty", tg_zeros(TG_SHAPE(2, 0, 3), TG_FLOAT32), true) == TG_OK);
  CHECK(tg_state_dict_add(sd, "q\"uote\\back\nline\x01 \xc3\xbcml\xe2\x98\x83", tg_ones(TG_SHAPE(3), TG_INT32), true) == TG_OK);
  CHECK(tg_state_dict_add(sd, "lazy", tg_add(tg_arange(0, 6, 1, TG_FLOAT32), tg_const_float(0.5)), true) == TG_OK);
  CHECK(tg_state_dict_set_metadata(sd, "format", "pt") == TG_OK);
  CHECK(tg_state_dict_set_metadata(sd, "note \"x\"", "tab\there \xe2\x82\xac") == TG_OK);

  uint8_t *buf = NULL;
  size_t size = 0;
  CHECK(tg_safe_save_buffer(sd, &buf, &size) == TG_OK);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--) hl = (hl << 8) | buf[i];
  CHECK(hl % 8 == 0 && buf[8] == '{');
  tg_state_dict *back = load_ok(buf, size);
  CHECK_EQ_INT(tg_state_dict_len(back), tg_state_dict_len(sd));
  for (size_t i = 0; back && i < tg_state_dict_len(sd); i++) {
    const char *name = tg_state_dict_name(sd, i);
    CHECK_MSG(same_tensor(tg_state_dict_tensor(sd, i), tg_state_dict_get(back, name)), "round trip of %s", name);
  }
  CHECK_EQ_STR(tg_state_dict_metadata(back, "format"), "pt");
  CHECK_EQ_STR(tg_state_dict_metadata(back, "note \"x\""), "tab\there \xe2\x82\xac");
  float lazy[6] = {0};
  CHECK(tg_to_host(tg_state_dict_get(back, "lazy"), lazy, sizeof lazy) == TG_OK && lazy[0] == 0.5f && lazy[5] == 5.5f);
  /* through a file */
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_st_%d.safetensors", (int)getpid());
  CHECK(tg_safe_save(sd, path) == TG_OK);
  tg_state_dict *fromfile = NULL;
  CHECK(tg_safe_load(path, &fromfile) == TG_OK);
  CHECK_EQ_INT(tg_state_dict_len(fromfile), tg_state_dict_len(sd));
  CHECK(same_tensor(tg_state_dict_get(fromfile, "t11.float"), tg_state_dict_get(sd, "t11.float")));
  /* a truncated copy on disk is rejected */
  FILE *fp = fopen(path, "wb");
  fwrite(buf, 1, size - 1, fp);
  fclose(fp);
  tg_state_dict *trunc = NULL;
  CHECK(tg_safe_load(path, &trunc) == TG_ERR_IO && trunc == NULL);
  unlink(path);
  CHECK(tg_safe_load(path, &trunc) == TG_ERR_IO && strstr(tg_last_error(), "cannot open") != NULL);
  CHECK(tg_safe_save(sd, "/nonexistent-dir/x.safetensors") == TG_ERR_IO);

  /* every proper prefix of a valid file is rejected */
  bool all_rejected = true;
  for (size_t n = 0; n < size; n++) {
    tg_state_dict *p = NULL;
    if (tg_safe_load_buffer(buf, n, &p) != TG_ERR_IO || p) { all_rejected = false; tg_state_dict_free(p); }
  }
  CHECK(all_rejected);
  /* extra bytes after the data are rejected too */
  uint8_t *longer = malloc(size + 1);
  memcpy(longer, buf, size);
  longer[size] = 0;
  CHECK(rejected(longer, size + 1, "cover"));
  free(longer);

  /* a weak scalar has no safetensors dtype */
  tg_state_dict *weak = tg_state_dict_new();
  CHECK(tg_state_dict_add(weak, "w", tg_const_float(1.0), true) == TG_OK);
  uint8_t *wb = NULL;
  size_t wn = 0;
  CHECK(tg_safe_save_buffer(weak, &wb, &wn) == TG_ERR_INVALID_ARGUMENT && wb == NULL);
  tg_state_dict_free(weak);
  /* model state dicts survive save + load_state_dict */
  tg_linear_layer *a = tg_linear_new(4, 3, true), *b = tg_linear_new(4, 3, true);
  tg_state_dict *sa = tg_state_dict_new(), *sb = tg_state_dict_new(), *loaded = NULL;
  CHECK(tg_linear_state(a, "fc", sa) == TG_OK && tg_linear_state(b, "fc", sb) == TG_OK);
  uint8_t *mb = NULL;
  size_t mn = 0;
  CHECK(tg_safe_save_buffer(sa, &mb, &mn) == TG_OK && tg_safe_load_buffer(mb, mn, &loaded) == TG_OK);
  CHECK(tg_load_state_dict(sb, loaded, true) == TG_OK);
  CHECK(same_tensor(a->weight, b->weight) && same_tensor(a->bias, b->bias));
  tg_buffer_free(mb);
  tg_state_dict_free(loaded);
  tg_state_dict_free(sa);
  tg_state_dict_free(sb);
  tg_linear_free(a);
  tg_linear_free(b);

  tg_state_dict_free(fromfile);
  tg_state_dict_free(back);
  tg_buffer_free(buf);
  tg_state_dict_free(sd);
  tg_scope_end(s);
}

/* tinygrad's safe_save({'t': Tensor([1, 2, 3])}) writes exactly these bytes */
static void tinygrad_layout(void) {
  tg_scope s = tg_scope_begin();
  const int32_t v[3] = {1, 2, 3};
  tg_state_dict *sd = tg_state_dict_new();
  CHECK(tg_state_dict_add(sd, "t", tg_from_data(v, TG_INT32, TG_SHAPE(3)), true) == TG_OK);
  uint8_t *buf = NULL;
  size_t n = 0;
  CHECK(tg_safe_save_buffer(sd, &buf, &n) == TG_OK);
  const char *header = "{\"t\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[0,12]}} "; /* 55 + 1 */
  size_t en;
  uint8_t *expect = image(header, v, sizeof v, &en);
  CHECK(n == en && buf && memcmp(buf, expect, en) == 0);
  free(expect);
  tg_buffer_free(buf);
  tg_state_dict_free(sd);
  tg_scope_end(s);
}

static void accepted_headers(void) {
  tg_scope s = tg_scope_begin();
  /* whitespace everywhere, escapes and a surrogate pair in names, entries not in data order, an extra field */
  const char *h = " \t\n{ \"b\\u00e9\\ud83d\\ude00\" : { \"shape\" : [ 2 ] , \"dtype\" : \"F32\" , \"data_offsets\" : "
                  "[ 8 , 16 ] , \"extra\" : [ null , true , false , -1.5e3 , { } ] } , \"a\\/\\\"\" :{\"dtype\":\"I64\","
                  "\"shape\":[],\"data_offsets\":[0,8]}, \"__metadata__\":{}}\r\n   ";
  uint8_t data[16];
  int64_t iv = -42;
  float fv[2] = {1.5f, -2.0f};
  memcpy(data, &iv, 8);
  memcpy(data + 8, fv, 8);
  size_t n;
  uint8_t *b = image(h, data, sizeof data, &n);
  tg_state_dict *sd = load_ok(b, n);
  if (sd) {
    CHECK_EQ_INT(tg_state_dict_len(sd), 2);
    tg_tensor *t = tg_state_dict_get(sd, "b\xc3\xa9\xf0\x9f\x98\x80"), *a = tg_state_dict_get(sd, "a/\"");
    float got[2] = {0};
    CHECK(t && tg_get_dtype(t) == TG_FLOAT32 && tg_to_host(t, got, sizeof got) == TG_OK);
    CHECK(got[0] == 1.5f && got[1] == -2.0f);
    int64_t gi = 0;
    CHECK(a && tg_ndim(a) == 0 && tg_item_int64(a, &gi) == TG_OK && gi == -42);
  }
  tg_state_dict_free(sd);
  free(b);
  /* an empty file body: no tensors */
  b = image("{}", NULL, 0, &n);
  sd = load_ok(b, n);
  CHECK(sd && tg_state_dict_len(sd) == 0);
  tg_state_dict_free(sd);
  free(b);
  tg_scope_end(s);
}

static void malformed(void) {
  const char *ok1 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  uint8_t tiny[7] = {0};
  CHECK(rejected(tiny, 0, "too short"));
  CHECK(rejected(tiny, 7, "too short"));
  /* header length lies */
  size_t n;
  uint8_t *b = image(ok1, "\0\0\0\0\0\0\0\0", 8, &n);
  b[0] = (uint8_t)(strlen(ok1) + 9); /* longer than the rest of the file */
  CHECK(rejected(b, n, "truncated"));
  for (int i = 0; i < 8; i++) b[i] = 0xff;
  CHECK(rejected(b, n, "limit"));
  memset(b, 0, 8);
  b[3] = 0x10; /* 256 MiB: over the 100 MB limit */
  CHECK(rejected(b, n, "limit"));
  memset(b, 0, 8);
  b[0] = (uint8_t)(strlen(ok1) - 3); /* shorter: the JSON is cut */
  CHECK(rejected(b, n, "JSON"));
  free(b);

  /* sizes and offsets that lie */
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 12, "need"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "past the end"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "before begin"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "gap"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 9, "cover"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[18446744073709551615,0]}}", 0, NULL));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", 1,
                   "non-negative integers"));
  /* huge dims */
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,0]}}", 0, "too large"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
                   "too large"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808],\"data_offsets\":[0,0]}}", 0, "shape[0]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
                   "dimensions"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, "shape[0]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", 1, "shape[0]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":[0,1]}}", 1, "shape[0]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,1]}}", 1, "shape[0]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1, "not an array"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, "[begin, end]"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0.0,1]}}", 1, "non-negative"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-0,1]}}", 1, "non-negative"));
  /* dtypes */
  CHECK(bad_header("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "dtype"));
  CHECK(bad_header("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"F32\\u0000\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"));
  /* structure */
  CHECK(bad_header("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "needs"));
  CHECK(bad_header("{\"a\":[1,2]}", 0, "not an object"));
  CHECK(bad_header("[]", 0, "not a JSON object"));
  CHECK(bad_header("\"x\"", 0, "not a JSON object"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                   "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate"));
  CHECK(bad_header("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "duplicate"));
  CHECK(bad_header("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "NUL"));
  CHECK(bad_header("{\"__metadata__\":[]}", 0, "__metadata__"));
  CHECK(bad_header("{\"__metadata__\":{\"k\":1}}", 0, "not a string"));
  CHECK(bad_header("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "duplicate"));
  /* bad JSON */
  static const char *const bad_json[] = {
    "", " ", "{", "{\"a\"", "{\"a\":", "{\"a\":}", "{,}", "{\"a\":1,}", "{\"a\" 1}", "{'a':1}", "{a:1}",
    "{\"a\":NaN}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":.5}", "{\"a\":1e}", "{\"a\":+1}", "{\"a\":tru}",
    "{\"a\":nul}", "{\"a\":[1,]}", "{\"a\":[1 2]}", "{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
    "{\"a\":\"\\u12g4\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\ud800\\u0041\"}",
    "{\"a\":\"\t\"}", "{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}",
    "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}", "{} x", "{}{}", "{\"a\":1}\x00", "\xef\xbb\xbf{}",
  };
  for (size_t i = 0; i < COUNT_OF(bad_json); i++) CHECK_MSG(bad_header(bad_json[i], 0, NULL), "bad json %zu", i);
  /* deep nesting is bounded (no stack overflow), and the message says so */
  char deep[400];
  size_t k = 0;
  deep[k++] = '{';
  deep[k++] = '"';
  deep[k++] = 'a';
  deep[k++] = '"';
  deep[k++] = ':';
  for (int i = 0; i < 100; i++) deep[k++] = '[';
  for (int i = 0; i < 100; i++) deep[k++] = ']';
  deep[k++] = '}';
  deep[k] = 0;
  CHECK(bad_header(deep, 0, "too deep"));
  /* bool bytes must be 0 or 1 */
  size_t bn;
  uint8_t *bb = image("{\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", "\x01\x00\x02", 3, &bn);
  CHECK(rejected(bb, bn, "bool"));
  bb[bn - 1] = 1;
  tg_state_dict *sd = load_ok(bb, bn);
  tg_state_dict_free(sd);
  free(bb);
  /* argument errors are not IO errors */
  tg_state_dict *out = NULL;
  CHECK(tg_safe_load_buffer(NULL, 5, &out) == TG_ERR_INVALID_ARGUMENT);
  CHECK(tg_safe_load_buffer(tiny, 7, NULL) == TG_ERR_INVALID_ARGUMENT);
}

/* files written by Python's json (tools/gen_nn_fixtures.py, tests/fixtures/safetensors; also the fuzzer's seeds) */
static void python_files(void) {
  tg_scope s = tg_scope_begin();
  char path[1024];
  tg_state_dict *sd = NULL;
  snprintf(path, sizeof path, "%s/safetensors/floats.safetensors", tf_dir());
  CHECK_MSG(tg_safe_load(path, &sd) == TG_OK, "%s: %s", path, tg_last_error());
  if (sd) {
    float w[6] = {0};
    CHECK(tg_to_host(tg_cast(tg_state_dict_get(sd, "w"), TG_FLOAT32), w, sizeof w) == TG_OK && w[0] == 0 && w[5] == 5);
    float h[3] = {0};
    tg_tensor *ht = tg_state_dict_get(sd, "h");
    CHECK(ht && tg_get_dtype(ht) == TG_FLOAT16 && tg_to_host(tg_cast(ht, TG_FLOAT32), h, sizeof h) == TG_OK);
    CHECK(h[0] == 1.5f && h[1] == -2.0f && h[2] == 65504.0f);
    CHECK_EQ_STR(tg_state_dict_metadata(sd, "format"), "pt");
    tg_state_dict_free(sd);
  }
  sd = NULL;
  snprintf(path, sizeof path, "%s/safetensors/ints.safetensors", tf_dir());
  CHECK_MSG(tg_safe_load(path, &sd) == TG_OK, "%s: %s", path, tg_last_error());
  if (sd) {
    int64_t i[2] = {0};
    uint8_t u[4] = {0}, q[2] = {9, 9};
    CHECK(tg_to_host(tg_state_dict_get(sd, "i"), i, sizeof i) == TG_OK && i[0] == -5 && i[1] == ((int64_t)1 << 40));
    CHECK(tg_to_host(tg_state_dict_get(sd, "u"), u, sizeof u) == TG_OK && u[3] == 255);
    CHECK(tg_to_host(tg_state_dict_get(sd, "q"), q, sizeof q) == TG_OK && q[0] == 0 && q[1] == 1);
    tg_state_dict_free(sd);
  }
  sd = NULL;
  snprintf(path, sizeof path, "%s/safetensors/names.safetensors", tf_dir());
  CHECK_MSG(tg_safe_load(path, &sd) == TG_OK, "%s: %s", path, tg_last_error());
  if (sd) {
    tg_tensor *b = tg_state_dict_get(sd, "na\xc3\xafve \"q\"");
    double v = 0;
    CHECK(b && tg_get_dtype(b) == TG_BFLOAT16 && tg_ndim(b) == 3 && tg_item_double(b, &v) == TG_OK && v == 1.0);
    tg_tensor *e = tg_state_dict_get(sd, "e");
    CHECK(e && tg_numel(e) == 0 && tg_get_dtype(e) == TG_FLOAT64);
    CHECK(tg_state_dict_get(sd, "f8") && tg_get_dtype(tg_state_dict_get(sd, "f8")) == TG_FP8E4M3);
    CHECK_EQ_STR(tg_state_dict_metadata(sd, "a\\b"), "\xe2\x98\x83");
    tg_state_dict_free(sd);
  }
  tg_scope_end(s);
}

void suite_safetensors(void) {
  size_t live = tg_live_tensors();
  round_trips();
  tinygrad_layout();
  python_files();
  accepted_headers();
  malformed();
  CHECK_EQ_INT(tg_live_tensors(), live);
}
