/* datasets.c — the IDX file format (the MNIST family's container) and the MNIST / Fashion-MNIST loaders.
 *
 * An IDX file is: two zero bytes, a type code, the number of dimensions, one big-endian uint32 per dimension, then
 * the elements in C order, big-endian. Files usually come gzip-compressed; zlib inflates them (gzip and zlib streams
 * are detected by their magic). Everything read from a file is validated before it is trusted: the magic, the type
 * code, the dimension count, every dimension (non-zero, the product without overflow, under a byte limit) and the
 * payload length, which must equal what the header promises (a short or over-long file is an error). A malformed
 * file gives TG_ERR_IO with a message; nothing here aborts on bad input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "base/base.h"

/* The longest header we accept: magic, type, ndim and TG_MAX_DIMS sizes (the inflate limit allows for it). */
#define IDX_MAX_HEADER (4 + 4 * TG_MAX_DIMS)

/* An empty result (dtype TG_VOID): what every failure leaves behind, so tg_idx_free is always safe. */
static void idx_reset(tg_idx *out) {
  memset(out, 0, sizeof *out);
  out->dtype = TG_VOID;
}

void tg_idx_free(tg_idx *idx) {
  if (!idx) return;
  free(idx->data);
  idx_reset(idx);
}

/* gzip by its magic; zlib by its header check (CMF/FLG: deflate, a window of at most 32 KiB, a multiple of 31). An
 * IDX file starts with 00 00, which neither matches, so plain files are never mistaken for compressed ones. */
static bool is_compressed(const uint8_t *p, size_t n) {
  if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return true;                                 /* gzip */
  if (n >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && ((p[0] << 8) | p[1]) % 31 == 0) return true; /* zlib */
  return false;
}

/* Inflates a whole gzip or zlib stream into a malloc'd buffer. Output past `limit` bytes stops it with an error (the
 * caller's limit already allows for the header), so a decompression bomb cannot exhaust memory; the buffer grows with
 * what was actually decompressed, never with what a header claims. */
static tg_status inflate_all(const uint8_t *src, size_t n, size_t limit, const char *what, uint8_t **out,
                             size_t *out_n) {
  *out = NULL;
  *out_n = 0;
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 32) != Z_OK) /* 15-bit window, gzip or zlib header detected */
    return tg_set_error(TG_ERR_RUNTIME, "idx: %s: zlib could not start: %s", what, zs.msg ? zs.msg : "?");
  size_t cap = 0, len = 0;
  uint8_t *buf = NULL;
  const uint8_t *in = src;
  size_t in_left = n;
  tg_status st = TG_OK;
  int zr = Z_OK;
  while (zr != Z_STREAM_END) {
    if (len == cap) {
      if (cap > limit) {
        st = tg_set_error(TG_ERR_IO, "idx: %s: decompresses to more than %zu bytes (the limit)", what, limit);
        break;
      }
      size_t ncap = cap ? cap * 2 : 1 << 16;
      if (ncap > limit + 1) ncap = limit + 1;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "idx: %s: out of memory inflating %zu bytes", what, ncap);
        break;
      }
      buf = nb;
      cap = ncap;
    }
    /* zlib counts in uInt: feed and drain at most 1 GiB per call */
    uInt in_chunk = (uInt)(in_left < (1u << 30) ? in_left : (1u << 30));
    uInt out_chunk = (uInt)(cap - len < (1u << 30) ? cap - len : (1u << 30));
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = in_chunk;
    zs.next_out = buf + len;
    zs.avail_out = out_chunk;
    zr = inflate(&zs, Z_NO_FLUSH);
    size_t consumed = in_chunk - zs.avail_in, produced = out_chunk - zs.avail_out;
    in += consumed;
    in_left -= consumed;
    len += produced;
    if (zr == Z_STREAM_END) break;
    if (zr == Z_BUF_ERROR && in_left == 0 && produced == 0) {
      st = tg_set_error(TG_ERR_IO, "idx: %s: truncated compressed stream (ends after %zu bytes of output)", what, len);
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      st = tg_set_error(TG_ERR_IO, "idx: %s: corrupt compressed stream: %s", what, zs.msg ? zs.msg : "inflate failed");
      break;
    }
  }
  inflateEnd(&zs);
  if (st == TG_OK && in_left != 0)
    st = tg_set_error(TG_ERR_IO, "idx: %s: %zu bytes of trailing data after the compressed stream", what, in_left);
  if (st != TG_OK) {
    free(buf);
    return st;
  }
  *out = buf;
  *out_n = len;
  return TG_OK;
}

/* IDX is big-endian throughout (sizes and elements). */
static uint32_t read_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The IDX type codes and the dtypes they become. */
static tg_dtype idx_dtype(uint8_t code) {
  switch (code) {
  case 0x08: return TG_UINT8;
  case 0x09: return TG_INT8;
  case 0x0B: return TG_INT16;
  case 0x0C: return TG_INT32;
  case 0x0D: return TG_FLOAT32;
  case 0x0E: return TG_FLOAT64;
  default: return TG_VOID;
  }
}

/* Validates the header at p (n bytes available) and fills out's dtype, ndim, shape and nbytes. */
static tg_status parse_header(const uint8_t *p, size_t n, size_t max_bytes, const char *what, tg_idx *out,
                              size_t *header_len) {
  if (n < 4) return tg_set_error(TG_ERR_IO, "idx: %s: %zu bytes is too short for an IDX header", what, n);
  if (p[0] != 0 || p[1] != 0)
    return tg_set_error(TG_ERR_IO, "idx: %s: bad magic %02x %02x (an IDX file starts with two zero bytes)", what, p[0],
                        p[1]);
  tg_dtype dt = idx_dtype(p[2]);
  if (dt == TG_VOID) return tg_set_error(TG_ERR_IO, "idx: %s: unknown element type code 0x%02x", what, p[2]);
  int ndim = p[3];
  if (ndim < 1 || ndim > TG_MAX_DIMS)
    return tg_set_error(TG_ERR_IO, "idx: %s: %d dimensions (1 to %d supported)", what, ndim, TG_MAX_DIMS);
  size_t hl = 4 + 4 * (size_t)ndim;
  if (n < hl)
    return tg_set_error(TG_ERR_IO, "idx: %s: truncated header (%d dimensions need %zu bytes, file has %zu)", what, ndim,
                        hl, n);
  size_t itemsize = tg_dtype_itemsize(dt);
  size_t bytes = itemsize;
  for (int i = 0; i < ndim; i++) {
    uint32_t d = read_be32(p + 4 + 4 * (size_t)i);
    if (d == 0) return tg_set_error(TG_ERR_IO, "idx: %s: dimension %d has size 0", what, i);
    if (bytes > max_bytes / d)
      return tg_set_error(TG_ERR_IO, "idx: %s: dimension %d of size %u makes the data larger than %zu bytes (the limit)",
                          what, i, d, max_bytes);
    bytes *= d;
    out->shape[i] = d;
  }
  out->dtype = dt;
  out->ndim = ndim;
  out->nbytes = bytes;
  *header_len = hl;
  return TG_OK;
}

/* Parses decompressed IDX bytes; on success out->data holds a copy in host byte order. */
static tg_status parse_plain(const uint8_t *p, size_t n, size_t max_bytes, const char *what, tg_idx *out) {
  size_t hl = 0;
  tg_status st = parse_header(p, n, max_bytes, what, out, &hl);
  if (st != TG_OK) return st;
  if (n - hl != out->nbytes) {
    tg_status e = tg_set_error(TG_ERR_IO, "idx: %s: the header promises %zu data bytes but the file has %zu (%s)", what,
                               out->nbytes, n - hl, n - hl < out->nbytes ? "truncated" : "trailing bytes");
    idx_reset(out);
    return e;
  }
  uint8_t *data = malloc(out->nbytes);
  if (!data) {
    size_t nb = out->nbytes;
    idx_reset(out);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "idx: %s: out of memory for %zu bytes", what, nb);
  }
  memcpy(data, p + hl, out->nbytes);
  size_t itemsize = tg_dtype_itemsize(out->dtype);
  if (itemsize > 1) /* big-endian on disk: reverse each element's bytes (the machines we run on are little-endian) */
    for (size_t off = 0; off < out->nbytes; off += itemsize)
      for (size_t a = 0, b = itemsize - 1; a < b; a++, b--) {
        uint8_t t = data[off + a];
        data[off + a] = data[off + b];
        data[off + b] = t;
      }
  out->data = data;
  return TG_OK;
}

/* Bytes in memory, plain or compressed; max_bytes bounds the element data (0: TG_IDX_DEFAULT_MAX_BYTES). */
tg_status tg_idx_parse(const void *bytes, size_t n, size_t max_bytes, tg_idx *out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_idx_parse: out is NULL");
  idx_reset(out);
  if (!bytes && n) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_idx_parse: bytes is NULL");
  if (max_bytes == 0) max_bytes = TG_IDX_DEFAULT_MAX_BYTES;
  const uint8_t *p = bytes;
  if (!is_compressed(p, n)) return parse_plain(p, n, max_bytes, "buffer", out);
  uint8_t *plain = NULL;
  size_t plain_n = 0;
  tg_status st = inflate_all(p, n, max_bytes + IDX_MAX_HEADER, "buffer", &plain, &plain_n);
  if (st != TG_OK) return st;
  st = parse_plain(plain, plain_n, max_bytes, "buffer", out);
  free(plain);
  return st;
}

/* Reads a whole file (at most `limit` bytes) into a malloc'd buffer. */
static tg_status read_file(const char *path, size_t limit, uint8_t **out, size_t *out_n) {
  *out = NULL;
  *out_n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return tg_set_error(TG_ERR_IO, "idx: cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return tg_set_error(TG_ERR_IO, "idx: %s is not a regular file", path);
  }
  if ((uint64_t)sb.st_size > (uint64_t)limit) {
    fclose(f);
    return tg_set_error(TG_ERR_IO, "idx: %s: %lld bytes is over the limit of %zu", path, (long long)sb.st_size, limit);
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    fclose(f);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "idx: out of memory reading %s (%zu bytes)", path, n);
  }
  size_t got = fread(buf, 1, n, f);
  int err = ferror(f);
  fclose(f);
  if (got != n || err) {
    free(buf);
    return tg_set_error(TG_ERR_IO, "idx: short read of %s (%zu of %zu bytes)", path, got, n);
  }
  *out = buf;
  *out_n = n;
  return TG_OK;
}

tg_status tg_idx_load(const char *path, size_t max_bytes, tg_idx *out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_idx_load: out is NULL");
  idx_reset(out);
  if (!path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_idx_load: path is NULL");
  if (max_bytes == 0) max_bytes = TG_IDX_DEFAULT_MAX_BYTES;
  uint8_t *raw = NULL;
  size_t raw_n = 0;
  tg_status st = read_file(path, max_bytes + IDX_MAX_HEADER, &raw, &raw_n);
  if (st != TG_OK) return st;
  if (!is_compressed(raw, raw_n)) {
    st = parse_plain(raw, raw_n, max_bytes, path, out);
    free(raw);
    return st;
  }
  uint8_t *plain = NULL;
  size_t plain_n = 0;
  st = inflate_all(raw, raw_n, max_bytes + IDX_MAX_HEADER, path, &plain, &plain_n);
  free(raw);
  if (st != TG_OK) return st;
  st = parse_plain(plain, plain_n, max_bytes, path, out);
  free(plain);
  return st;
}

/* The loaded elements as a tensor of the file's dtype and shape on the default device (a copy: idx may be freed). */
tg_tensor *tg_idx_tensor(const tg_idx *idx) {
  if (!idx || !idx->data || idx->dtype == TG_VOID) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_idx_tensor: no loaded IDX data");
    return NULL;
  }
  return tg_from_data(idx->data, idx->dtype, idx->shape, (size_t)idx->ndim);
}

/* ---------------------------------------------------------------------------------------------------- MNIST */

/* The four files of the MNIST layout (Fashion-MNIST uses the same names), each optionally gzip-compressed. */
static const char *const mnist_files[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

/* Loads dir/name.gz, else dir/name. */
static tg_status load_one(const char *dir, const char *name, tg_idx *out) {
  char path[4096];
  int len = snprintf(path, sizeof path, "%s/%s.gz", dir, name);
  if (len < 0 || (size_t)len >= sizeof path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "mnist: path too long");
  struct stat sb;
  if (stat(path, &sb) != 0) path[len - 3] = '\0';
  return tg_idx_load(path, 0, out);
}

void tg_mnist_free(tg_mnist *m) {
  if (!m) return;
  tg_idx_free(&m->train_images);
  tg_idx_free(&m->train_labels);
  tg_idx_free(&m->test_images);
  tg_idx_free(&m->test_labels);
}

/* Images: uint8 (N, rows, cols); labels: uint8 (N) with values below 10, N matching. */
static tg_status check_pair(const tg_idx *img, const tg_idx *lab, const char *dir, const char *split) {
  if (img->dtype != TG_UINT8 || img->ndim != 3)
    return tg_set_error(TG_ERR_IO, "mnist: %s/%s images: expected uint8 with 3 dimensions, got %s with %d", dir, split,
                        tg_dtype_name(img->dtype), img->ndim);
  if (lab->dtype != TG_UINT8 || lab->ndim != 1)
    return tg_set_error(TG_ERR_IO, "mnist: %s/%s labels: expected uint8 with 1 dimension, got %s with %d", dir, split,
                        tg_dtype_name(lab->dtype), lab->ndim);
  if (img->shape[0] != lab->shape[0])
    return tg_set_error(TG_ERR_IO, "mnist: %s/%s: %lld images but %lld labels", dir, split, (long long)img->shape[0],
                        (long long)lab->shape[0]);
  const uint8_t *l = lab->data;
  for (int64_t i = 0; i < lab->shape[0]; i++)
    if (l[i] >= 10) return tg_set_error(TG_ERR_IO, "mnist: %s/%s: label %lld is %u (not a class 0..9)", dir, split,
                                        (long long)i, l[i]);
  return TG_OK;
}

/* All four files, each pair checked (uint8 images (N, rows, cols) with N uint8 labels below 10) and both splits of
 * one image size; all or nothing. */
tg_status tg_mnist_load(const char *dir, tg_mnist *out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_mnist_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!dir) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_mnist_load: dir is NULL");
  tg_idx *parts[4] = {&out->train_images, &out->train_labels, &out->test_images, &out->test_labels};
  tg_status st = TG_OK;
  for (int i = 0; i < 4 && st == TG_OK; i++) st = load_one(dir, mnist_files[i], parts[i]);
  if (st == TG_OK) st = check_pair(&out->train_images, &out->train_labels, dir, "train");
  if (st == TG_OK) st = check_pair(&out->test_images, &out->test_labels, dir, "t10k");
  if (st == TG_OK && (out->train_images.shape[1] != out->test_images.shape[1] ||
                      out->train_images.shape[2] != out->test_images.shape[2]))
    st = tg_set_error(TG_ERR_IO, "mnist: %s: train images are %lldx%lld but test images %lldx%lld", dir,
                      (long long)out->train_images.shape[1], (long long)out->train_images.shape[2],
                      (long long)out->test_images.shape[1], (long long)out->test_images.shape[2]);
  if (st != TG_OK) tg_mnist_free(out);
  return st;
}

/* Whether every file is present (compressed or not), without reading them: lets a demo or a test skip cleanly. */
bool tg_mnist_dir_complete(const char *dir) {
  if (!dir) return false;
  for (int i = 0; i < 4; i++) {
    char path[4096];
    struct stat sb;
    int len = snprintf(path, sizeof path, "%s/%s.gz", dir, mnist_files[i]);
    if (len < 0 || (size_t)len >= sizeof path) return false;
    if (stat(path, &sb) == 0) continue;
    path[len - 3] = '\0';
    if (stat(path, &sb) != 0) return false;
  }
  return true;
}
