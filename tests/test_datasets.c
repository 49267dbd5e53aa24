/* test_datasets.c — the IDX loader and the MNIST loader (src/nn/datasets.c): every element type round-trips with its
 * byte order fixed, plain, gzip and zlib files load the same, and malformed files (bad magic, unknown type, bad
 * dimension counts, zero or huge dimensions, truncated or over-long payloads, corrupt or truncated or trailing
 * compressed streams, decompression past the limit) are rejected with TG_ERR_IO and a message. The shipped
 * Fashion-MNIST subset (data/fashion-mnist) loads with the documented counts, and the full Debian dataset too where
 * it is installed. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "test.h"
#include "tinygrad.h"

/* An IDX image in memory: header for `dims` plus `payload` bytes (already big-endian). */
static size_t make_idx(uint8_t *buf, uint8_t code, const uint32_t *dims, int ndim, const void *payload,
                       size_t payload_n) {
  buf[0] = 0;
  buf[1] = 0;
  buf[2] = code;
  buf[3] = (uint8_t)ndim;
  size_t off = 4;
  for (int i = 0; i < ndim; i++) {
    buf[off++] = (uint8_t)(dims[i] >> 24);
    buf[off++] = (uint8_t)(dims[i] >> 16);
    buf[off++] = (uint8_t)(dims[i] >> 8);
    buf[off++] = (uint8_t)dims[i];
  }
  if (payload_n) memcpy(buf + off, payload, payload_n);
  return off + payload_n;
}

/* gzip (window_bits 31) or zlib (15) compression of src into dst; returns the compressed size. */
static size_t compress_to(uint8_t *dst, size_t cap, const uint8_t *src, size_t n, int window_bits) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
  zs.next_in = (Bytef *)(uintptr_t)src;
  zs.avail_in = (uInt)n;
  zs.next_out = dst;
  zs.avail_out = (uInt)cap;
  int r = deflate(&zs, Z_FINISH);
  size_t out = cap - zs.avail_out;
  deflateEnd(&zs);
  return r == Z_STREAM_END ? out : 0;
}

static void reverse(uint8_t *p, size_t n) {
  for (size_t a = 0, b = n - 1; a < b; a++, b--) {
    uint8_t t = p[a];
    p[a] = p[b];
    p[b] = t;
  }
}

/* Expects a parse of buf to fail with TG_ERR_IO, a message containing `needle`, and a cleared output. */
static void expect_io_error(const uint8_t *buf, size_t n, size_t max_bytes, const char *needle, int line) {
  tg_idx idx;
  tg_status st = tg_idx_parse(buf, n, max_bytes, &idx);
  CHECK_MSG(st == TG_ERR_IO, "line %d: status %d, expected TG_ERR_IO", line, (int)st);
  CHECK_MSG(strstr(tg_last_error(), needle) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, tg_last_error(),
            needle);
  CHECK_MSG(idx.data == NULL && idx.ndim == 0, "line %d: output not cleared on error", line);
  tg_idx_free(&idx);
}
#define EXPECT_IO_ERROR(buf, n, max, needle) expect_io_error((buf), (n), (max), (needle), __LINE__)

static void test_element_types(void) {
  /* one value per type, stored big-endian in the file, read back in host order */
  int16_t s16[3] = {-2, 300, 32767};
  int32_t s32[3] = {-70000, 1, 2147483647};
  float f32[3] = {1.5f, -0.25f, 3e38f};
  double f64[3] = {1e-300, -2.5, 3.0};
  int8_t s8[3] = {-128, 0, 127};
  uint8_t u8[3] = {0, 128, 255};
  struct { uint8_t code; tg_dtype dt; const void *vals; size_t size; } cases[] = {
      {0x08, TG_UINT8, u8, 1},    {0x09, TG_INT8, s8, 1},       {0x0B, TG_INT16, s16, 2},
      {0x0C, TG_INT32, s32, 4},   {0x0D, TG_FLOAT32, f32, 4},   {0x0E, TG_FLOAT64, f64, 8},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint8_t payload[24], file[64], packed[256];
    memcpy(payload, cases[c].vals, 3 * cases[c].size);
    for (int i = 0; i < 3; i++) reverse(payload + i * cases[c].size, cases[c].size);
    uint32_t dims[1] = {3};
    size_t n = make_idx(file, cases[c].code, dims, 1, payload, 3 * cases[c].size);
    for (int form = 0; form < 3; form++) { /* plain, gzip, zlib */
      const uint8_t *src = file;
      size_t src_n = n;
      if (form) {
        src_n = compress_to(packed, sizeof packed, file, n, form == 1 ? 31 : 15);
        src = packed;
        CHECK(src_n > 0);
      }
      tg_idx idx;
      CHECK_EQ_INT(tg_idx_parse(src, src_n, 0, &idx), TG_OK);
      CHECK_EQ_INT(idx.dtype, cases[c].dt);
      CHECK_EQ_INT(idx.ndim, 1);
      CHECK_EQ_INT(idx.shape[0], 3);
      CHECK_EQ_INT(idx.nbytes, 3 * cases[c].size);
      CHECK(idx.data && memcmp(idx.data, cases[c].vals, 3 * cases[c].size) == 0);
      tg_idx_free(&idx);
      CHECK(idx.data == NULL);
    }
  }
  /* a tensor from IDX data holds the same values */
  uint8_t payload[12], file[64];
  memcpy(payload, s32, sizeof s32);
  for (int i = 0; i < 3; i++) reverse(payload + 4 * i, 4);
  uint32_t dims[2] = {1, 3};
  tg_idx idx;
  CHECK_EQ_INT(tg_idx_parse(file, make_idx(file, 0x0C, dims, 2, payload, 12), 0, &idx), TG_OK);
  tg_tensor *t = tg_idx_tensor(&idx);
  CHECK(t && tg_ndim(t) == 2 && tg_shape(t)[0] == 1 && tg_shape(t)[1] == 3 && tg_get_dtype(t) == TG_INT32);
  int32_t back[3] = {0, 0, 0};
  CHECK_EQ_INT(tg_to_host(t, back, sizeof back), TG_OK);
  CHECK(memcmp(back, s32, sizeof s32) == 0);
  tg_release(t);
  tg_idx_free(&idx);
  CHECK(tg_idx_tensor(&idx) == NULL);
  CHECK(tg_idx_tensor(NULL) == NULL);
}

static void test_malformed(void) {
  uint8_t file[256], packed[512];
  uint8_t payload[64];
  for (int i = 0; i < 64; i++) payload[i] = (uint8_t)i;
  uint32_t dims2[2] = {4, 4};
  size_t good = make_idx(file, 0x08, dims2, 2, payload, 16);
  tg_idx idx;
  CHECK_EQ_INT(tg_idx_parse(file, good, 0, &idx), TG_OK);
  tg_idx_free(&idx);

  EXPECT_IO_ERROR(file, 0, 0, "too short");
  EXPECT_IO_ERROR(file, 3, 0, "too short");
  EXPECT_IO_ERROR(file, 10, 0, "truncated header");          /* 2 dims need 12 header bytes */
  EXPECT_IO_ERROR(file, good - 1, 0, "truncated");           /* one payload byte missing */
  file[good] = 7;
  EXPECT_IO_ERROR(file, good + 1, 0, "trailing bytes");      /* one byte too many */
  file[0] = 1;
  EXPECT_IO_ERROR(file, good, 0, "bad magic");
  file[0] = 0;
  file[1] = 0x08;
  EXPECT_IO_ERROR(file, good, 0, "bad magic");
  file[1] = 0;
  file[2] = 0x0A;
  EXPECT_IO_ERROR(file, good, 0, "unknown element type");
  file[2] = 0x08;
  file[3] = 0;
  EXPECT_IO_ERROR(file, good, 0, "0 dimensions");
  file[3] = 17;
  EXPECT_IO_ERROR(file, good, 0, "17 dimensions");
  file[3] = 2;
  file[7] = 0; /* first dimension 4 -> 0 */
  EXPECT_IO_ERROR(file, good, 0, "has size 0");
  file[7] = 4;
  /* huge dimensions: the product overflows 64 bits, or just exceeds the limit; never an allocation of that size */
  uint32_t huge[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  size_t n = make_idx(file, 0x0E, huge, 4, payload, 16);
  EXPECT_IO_ERROR(file, n, 0, "larger than");
  uint32_t big[1] = {100};
  n = make_idx(file, 0x08, big, 1, payload, 64);
  EXPECT_IO_ERROR(file, n, 64, "larger than");               /* 100 bytes > max_bytes 64 */
  /* lying header: claims 16 elements of int32 (64 bytes) over 16 bytes of payload */
  uint32_t lie[1] = {16};
  n = make_idx(file, 0x0C, lie, 1, payload, 16);
  EXPECT_IO_ERROR(file, n, 0, "promises 64 data bytes but the file has 16");

  /* compressed: truncated stream, corrupt stream, trailing garbage, output past the limit */
  n = make_idx(file, 0x08, dims2, 2, payload, 16);
  size_t z = compress_to(packed, sizeof packed, file, n, 31);
  CHECK(z > 10);
  CHECK_EQ_INT(tg_idx_parse(packed, z, 0, &idx), TG_OK);
  tg_idx_free(&idx);
  EXPECT_IO_ERROR(packed, z - 6, 0, "truncated compressed stream");
  packed[z] = 0x55;
  EXPECT_IO_ERROR(packed, z + 1, 0, "trailing data");
  uint8_t corrupt[512];
  memcpy(corrupt, packed, z);
  corrupt[12] ^= 0xFF;
  corrupt[13] ^= 0xA5;
  tg_status st = tg_idx_parse(corrupt, z, 0, &idx);
  CHECK(st == TG_ERR_IO); /* corrupt data, a failed CRC or a bad length: any of them, but an error */
  CHECK(idx.data == NULL);
  /* a small bomb: 1 MiB of zeros decompressed under a 4 KiB limit stops early */
  size_t zeros_n = 1 << 20;
  uint8_t *zeros = calloc(zeros_n, 1);
  uint8_t *bomb = malloc(zeros_n);
  CHECK(zeros && bomb);
  if (zeros && bomb) {
    uint32_t d[1] = {(uint32_t)(zeros_n - 8)};
    make_idx(zeros, 0x08, d, 1, NULL, 0);
    size_t bz = compress_to(bomb, zeros_n, zeros, zeros_n, 31);
    CHECK(bz > 0 && bz < 4096);
    EXPECT_IO_ERROR(bomb, bz, 4096, "more than");
    CHECK_EQ_INT(tg_idx_parse(bomb, bz, 0, &idx), TG_OK); /* the same file under the default limit is fine */
    CHECK_EQ_INT(idx.nbytes, zeros_n - 8);
    tg_idx_free(&idx);
  }
  free(zeros);
  free(bomb);
  /* argument errors */
  CHECK_EQ_INT(tg_idx_parse(NULL, 4, 0, &idx), TG_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(tg_idx_parse(file, 4, 0, NULL), TG_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(tg_idx_load(NULL, 0, &idx), TG_ERR_INVALID_ARGUMENT);
  tg_idx_free(NULL);
}

static bool write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static void test_files(void) {
  char dir[] = "/tmp/tg_test_datasets_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK_MSG(0, "mkdtemp failed");
    return;
  }
  char path[256];
  tg_idx idx;
  snprintf(path, sizeof path, "%s/missing", dir);
  CHECK_EQ_INT(tg_idx_load(path, 0, &idx), TG_ERR_IO);
  CHECK(strstr(tg_last_error(), "cannot open") != NULL);
  CHECK_EQ_INT(tg_idx_load(dir, 0, &idx), TG_ERR_IO); /* a directory */

  /* a tiny MNIST: 3 train and 2 test images of 2x2, plain and gzip files mixed */
  uint8_t file[128], packed[256], img[12], lab[3] = {1, 9, 0};
  for (int i = 0; i < 12; i++) img[i] = (uint8_t)(i * 20);
  uint32_t d3[3] = {3, 2, 2}, d1[1] = {3}, t3[3] = {2, 2, 2}, t1[1] = {2};
  size_t n = make_idx(file, 0x08, d3, 3, img, 12);
  size_t z = compress_to(packed, sizeof packed, file, n, 31);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  CHECK(write_bytes(path, packed, z));
  CHECK(!tg_mnist_dir_complete(dir));
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
  CHECK(write_bytes(path, file, make_idx(file, 0x08, d1, 1, lab, 3)));
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", dir);
  CHECK(write_bytes(path, file, make_idx(file, 0x08, t3, 3, img, 8)));
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", dir);
  CHECK(write_bytes(path, file, make_idx(file, 0x08, t1, 1, lab, 2)));
  CHECK(tg_mnist_dir_complete(dir));
  tg_mnist m;
  CHECK_EQ_INT(tg_mnist_load(dir, &m), TG_OK);
  CHECK_EQ_INT(m.train_images.shape[0], 3);
  CHECK_EQ_INT(m.test_images.shape[0], 2);
  CHECK(m.train_labels.data && ((uint8_t *)m.train_labels.data)[1] == 9);
  CHECK(m.train_images.data && ((uint8_t *)m.train_images.data)[11] == 220);
  tg_mnist_free(&m);
  /* label out of range, then a count mismatch: both errors, nothing left allocated */
  uint8_t bad_lab[2] = {3, 10};
  CHECK(write_bytes(path, file, make_idx(file, 0x08, t1, 1, bad_lab, 2)));
  CHECK_EQ_INT(tg_mnist_load(dir, &m), TG_ERR_IO);
  CHECK(strstr(tg_last_error(), "not a class") != NULL);
  CHECK(m.train_images.data == NULL && m.test_labels.data == NULL);
  CHECK(write_bytes(path, file, make_idx(file, 0x08, d1, 1, lab, 3)));
  CHECK_EQ_INT(tg_mnist_load(dir, &m), TG_ERR_IO);
  CHECK(strstr(tg_last_error(), "2 images but 3 labels") != NULL);
  /* labels stored as int32 are not MNIST labels */
  int32_t wide[2] = {0, 0};
  CHECK(write_bytes(path, file, make_idx(file, 0x0C, t1, 1, wide, 8)));
  CHECK_EQ_INT(tg_mnist_load(dir, &m), TG_ERR_IO);
  CHECK(strstr(tg_last_error(), "expected uint8") != NULL);
  CHECK_EQ_INT(tg_mnist_load(NULL, &m), TG_ERR_INVALID_ARGUMENT);
  const char *names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                          "t10k-labels-idx1-ubyte"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    CHECK(unlink(path) == 0);
  }
  CHECK(rmdir(dir) == 0);
}

/* Class counts of a label file. */
static void count_labels(const tg_idx *labels, int64_t counts[10]) {
  memset(counts, 0, 10 * sizeof(int64_t));
  const uint8_t *l = labels->data;
  for (int64_t i = 0; i < labels->shape[0]; i++) counts[l[i]]++;
}

static void test_fashion_mnist(void) {
  /* the shipped subset: 700 training and 200 test images per class (data/README.md) */
  tg_mnist m;
  char subset[4200] = "data/fashion-mnist", exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); /* run from elsewhere: the build dir's parent */
  if (!tg_mnist_dir_complete(subset) && n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(subset, sizeof subset, "%s/../data/fashion-mnist", exe);
  }
  CHECK_EQ_INT(tg_mnist_load(subset, &m), TG_OK);
  if (m.train_images.data) {
    CHECK_EQ_INT(m.train_images.shape[0], 7000);
    CHECK_EQ_INT(m.train_images.shape[1], 28);
    CHECK_EQ_INT(m.train_images.shape[2], 28);
    CHECK_EQ_INT(m.test_images.shape[0], 2000);
    int64_t counts[10];
    count_labels(&m.train_labels, counts);
    for (int c = 0; c < 10; c++) CHECK_EQ_INT(counts[c], 700);
    count_labels(&m.test_labels, counts);
    for (int c = 0; c < 10; c++) CHECK_EQ_INT(counts[c], 200);
    uint64_t sum = 0;
    for (size_t i = 0; i < m.train_images.nbytes; i++) sum += ((uint8_t *)m.train_images.data)[i];
    double mean = (double)sum / (double)m.train_images.nbytes;
    CHECK_MSG(mean > 60 && mean < 90, "mean pixel %.1f (Fashion-MNIST's is about 73)", mean);
  } else {
    fprintf(stderr, "datasets: shipped subset: %s\n", tg_last_error());
  }
  tg_mnist_free(&m);
  /* the full dataset from Debian's dataset-fashion-mnist, where installed */
  const char *full = "/usr/share/datasets/fashion-mnist";
  if (tg_mnist_dir_complete(full) && !tg_test_sanitized) {
    CHECK_EQ_INT(tg_mnist_load(full, &m), TG_OK);
    CHECK_EQ_INT(m.train_images.shape[0], 60000);
    CHECK_EQ_INT(m.test_images.shape[0], 10000);
    int64_t counts[10];
    count_labels(&m.train_labels, counts);
    for (int c = 0; c < 10; c++) CHECK_EQ_INT(counts[c], 6000);
    tg_mnist_free(&m);
  }
}

void suite_datasets(void) {
  test_element_types();
  test_malformed();
  test_files();
  test_fashion_mnist();
}
