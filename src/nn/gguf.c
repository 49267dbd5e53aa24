/* gguf.c — reading and writing GGUF files (ggml's model format; tinygrad's llm/gguf.py gguf_load), the public calls
 * of include/tinygrad.h "GGUF".
 *
 * The reader is a cursor over the file image that checks every read against the bytes left: counts are bounded by
 * what the rest of the file could hold before anything is allocated, strings and arrays by their lengths, nesting by
 * TG_GGUF_MAX_DEPTH. After the header, the tensor infos are checked against ggml's rules (known type, ne[0] a
 * multiple of the block, no overflow, offsets in declaration order each padded to the alignment) and against the
 * file size. Only then is the handle returned. The file is mapped private copy-on-write; the mapping is reference
 * counted, so tensors on it (engine_buffer_wrap_host) outlive tg_gguf_close. Dequantization lives in
 * ggml_quants.c; this file only hands it the raw bytes. */
#include "nn/nn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "runtime/runtime.h"
#include "tensor/tensor.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_NAME 63 /* ggml's GGML_MAX_NAME (64) less its NUL */
#define GGUF_MAX_DIMS 4

/* ------------------------------------------------------------------------------------------------- the mapping */

/* The file image: mapped (tg_gguf_open) or a heap copy (tg_gguf_open_buffer); freed with the last reference (the
 * handle's and one per tensor buffer on it). */
typedef struct GgufMap {
  uint8_t *base;
  size_t size;
  size_t map_len; /* bytes mapped, 0 for a heap copy */
  atomic_int refs;
} GgufMap;

static void map_unref(void *ctx) {
  GgufMap *m = ctx;
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  if (m->map_len) munmap(m->base, m->map_len);
  else free(m->base);
  free(m);
}

/* ------------------------------------------------------------------------------------------------- the handle */

/* The parsed header. Keys, values and tensor infos are heap copies made while parsing (lookups never touch the
 * mapping); the index arrays sorted by name make each lookup a binary search over models with thousands of tensors. */
struct tg_gguf {
  GgufMap *map;
  uint32_t version, alignment;
  uint64_t data_offset;
  size_t nkv;
  char **keys;
  tg_gguf_value *values;
  size_t *key_order;     /* indices sorted by key, for lookups */
  size_t ntensors;
  tg_gguf_tensor_info *tensors;
  size_t *tensor_order;  /* indices sorted by name */
};

/* The size of one element of a scalar value type in the file (and in memory), 0 for strings and arrays. */
static size_t scalar_size(uint32_t t) {
  switch (t) {
    case TG_GGUF_UINT8: case TG_GGUF_INT8: case TG_GGUF_BOOL: return 1;
    case TG_GGUF_UINT16: case TG_GGUF_INT16: return 2;
    case TG_GGUF_UINT32: case TG_GGUF_INT32: case TG_GGUF_FLOAT32: return 4;
    case TG_GGUF_UINT64: case TG_GGUF_INT64: case TG_GGUF_FLOAT64: return 8;
    default: return 0;
  }
}
static bool valid_type(uint32_t t) { return t <= TG_GGUF_FLOAT64; }
/* the fewest bytes a value of type t takes in the file (a string: its length; an array: type and count) */
static size_t min_size(uint32_t t) { return t == TG_GGUF_STRING ? 8 : t == TG_GGUF_ARRAY ? 12 : scalar_size(t); }

static const char *type_name(uint32_t t) {
  static const char *names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
                                "array", "uint64", "int64", "float64"};
  return valid_type(t) ? names[t] : "?";
}

static void value_free(tg_gguf_value *v) {
  if (v->type == TG_GGUF_STRING) free((void *)v->v.str.s);
  else if (v->type == TG_GGUF_ARRAY) {
    free((void *)v->v.arr.data);
    tg_gguf_value *items = (tg_gguf_value *)v->v.arr.items;
    if (items)
      for (uint64_t i = 0; i < v->v.arr.len; i++) value_free(&items[i]);
    free(items);
  }
  v->type = TG_GGUF_UINT8;
}

static void gguf_free_contents(tg_gguf *g) {
  for (size_t i = 0; i < g->nkv; i++) {
    free(g->keys[i]);
    value_free(&g->values[i]);
  }
  for (size_t i = 0; i < g->ntensors; i++) free((void *)g->tensors[i].name);
  free(g->keys);
  free(g->values);
  free(g->key_order);
  free(g->tensors);
  free(g->tensor_order);
}

void tg_gguf_close(tg_gguf *g) {
  if (!g) return;
  gguf_free_contents(g);
  if (g->map) map_unref(g->map);
  free(g);
}

/* ------------------------------------------------------------------------------------------------- the cursor */

/* A read position over the image with the first error kept (cfail): every read goes through need(), so no path reads
 * past the end whatever the counts in the file say. */
typedef struct Cursor {
  const uint8_t *p;
  size_t size, pos;
  tg_status st;
  char err[320];
} Cursor;

static bool cfail(Cursor *c, tg_status st, const char *fmt, ...) TG_PRINTF(3, 4);
static bool cfail(Cursor *c, tg_status st, const char *fmt, ...) {
  if (c->st != TG_OK) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  c->st = st;
  return false;
}

static size_t left(const Cursor *c) { return c->size - c->pos; }

static bool need(Cursor *c, size_t n, const char *what) {
  if (left(c) >= n) return true;
  return cfail(c, TG_ERR_IO, "%s at byte %zu: needs %zu bytes, %zu left (truncated?)", what, c->pos, n, left(c));
}

/* Little-endian load of n bytes (GGUF is little-endian; a big-endian file is recognized by its version and refused). */
static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static bool read_u32(Cursor *c, const char *what, uint32_t *out) {
  if (!need(c, 4, what)) return false;
  *out = (uint32_t)le(c->p + c->pos, 4);
  c->pos += 4;
  return true;
}
static bool read_u64(Cursor *c, const char *what, uint64_t *out) {
  if (!need(c, 8, what)) return false;
  *out = le(c->p + c->pos, 8);
  c->pos += 8;
  return true;
}

/* A string: u64 length + bytes; *out is a heap copy with a NUL after the bytes. */
static bool read_string(Cursor *c, const char *what, char **out, uint64_t *len) {
  size_t at = c->pos;
  uint64_t n;
  if (!read_u64(c, what, &n)) return false;
  if (n > left(c))
    return cfail(c, TG_ERR_IO, "%s at byte %zu: length %llu but %zu bytes left (truncated?)", what, at,
                 (unsigned long long)n, left(c));
  char *s = malloc((size_t)n + 1);
  if (!s) return cfail(c, TG_ERR_OUT_OF_MEMORY, "%s at byte %zu: no memory for %llu bytes", what, at,
                       (unsigned long long)n);
  memcpy(s, c->p + c->pos, (size_t)n);
  s[n] = 0;
  c->pos += (size_t)n;
  *out = s;
  *len = n;
  return true;
}

/* Keys and tensor names: non-empty UTF-8 without NUL (NULL when fine, else what is wrong). */
static const char *bad_identifier(const char *s, uint64_t len) {
  if (len == 0) return "is empty";
  for (uint64_t i = 0; i < len;) {
    if (s[i] == 0) return "holds a NUL byte";
    size_t k = tg_utf8_seq_len((const unsigned char *)s + i, (size_t)(len - i));
    if (!k) return "is not valid UTF-8";
    i += k;
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------------- values */

static bool read_value(Cursor *c, uint32_t type, int depth, tg_gguf_value *out);

/* An array value: element type, count, elements. The count is bounded by the bytes left before any allocation (an
 * element takes at least min_size bytes), so a forged count cannot ask for terabytes. Scalar arrays are one memcpy;
 * string and nested arrays are read element by element. */
static bool read_array(Cursor *c, int depth, tg_gguf_value *out) {
  size_t at = c->pos;
  uint32_t et;
  uint64_t n;
  if (!read_u32(c, "array element type", &et) || !read_u64(c, "array length", &n)) return false;
  if (!valid_type(et)) return cfail(c, TG_ERR_IO, "array at byte %zu: unknown element type %u", at, et);
  if (et == TG_GGUF_ARRAY && depth + 1 >= TG_GGUF_MAX_DEPTH)
    return cfail(c, TG_ERR_IO, "array at byte %zu: arrays nested deeper than %d", at, TG_GGUF_MAX_DEPTH);
  if (n > left(c) / min_size(et))
    return cfail(c, TG_ERR_IO, "array at byte %zu: %llu %s elements cannot fit in the %zu bytes left", at,
                 (unsigned long long)n, type_name(et), left(c));
  out->v.arr.type = (tg_gguf_type)et;
  out->v.arr.len = n;
  out->v.arr.data = NULL;
  out->v.arr.items = NULL;
  size_t es = scalar_size(et);
  if (es) { /* scalars: one copy of the little-endian elements (the host is little-endian) */
    uint8_t *data = malloc(n ? (size_t)n * es : 1);
    if (!data) return cfail(c, TG_ERR_OUT_OF_MEMORY, "array at byte %zu: no memory for %llu elements", at,
                            (unsigned long long)n);
    memcpy(data, c->p + c->pos, (size_t)n * es);
    out->v.arr.data = data;
    if (et == TG_GGUF_BOOL)
      for (uint64_t i = 0; i < n; i++)
        if (data[i] > 1)
          return cfail(c, TG_ERR_IO, "bool array element %llu at byte %zu is %u (must be 0 or 1)",
                       (unsigned long long)i, c->pos + (size_t)i, data[i]);
    c->pos += (size_t)n * es;
    return true;
  }
  tg_gguf_value *items = calloc(n ? (size_t)n : 1, sizeof *items);
  if (!items) return cfail(c, TG_ERR_OUT_OF_MEMORY, "array at byte %zu: no memory for %llu elements", at,
                           (unsigned long long)n);
  out->v.arr.items = items;
  for (uint64_t i = 0; i < n; i++) {
    out->v.arr.len = i; /* on failure value_free frees items[0, i); the partial item i is freed here */
    if (!read_value(c, et, depth + 1, &items[i])) {
      value_free(&items[i]);
      return false;
    }
  }
  out->v.arr.len = n;
  return true;
}

/* One metadata value of a known type. A bool must be 0 or 1 (anything else is a corrupt file, not true). */
static bool read_value(Cursor *c, uint32_t type, int depth, tg_gguf_value *out) {
  out->type = TG_GGUF_UINT8; /* nothing to free until the value is complete */
  out->v.u = 0;
  if (type == TG_GGUF_STRING) {
    char *s;
    uint64_t len;
    if (!read_string(c, "string value", &s, &len)) return false;
    out->type = TG_GGUF_STRING;
    out->v.str.s = s;
    out->v.str.len = len;
    return true;
  }
  if (type == TG_GGUF_ARRAY) {
    out->type = TG_GGUF_ARRAY;
    out->v.arr.len = 0;
    out->v.arr.data = NULL;
    out->v.arr.items = NULL;
    return read_array(c, depth, out);
  }
  size_t n = scalar_size(type);
  if (!need(c, n, "value")) return false;
  const uint8_t *p = c->p + c->pos;
  uint64_t raw = le(p, (int)n);
  switch (type) {
    case TG_GGUF_UINT8: case TG_GGUF_UINT16: case TG_GGUF_UINT32: case TG_GGUF_UINT64: out->v.u = raw; break;
    case TG_GGUF_INT8: out->v.i = (int8_t)raw; break;
    case TG_GGUF_INT16: out->v.i = (int16_t)raw; break;
    case TG_GGUF_INT32: out->v.i = (int32_t)raw; break;
    case TG_GGUF_INT64: memcpy(&out->v.i, &raw, 8); break;
    case TG_GGUF_BOOL:
      if (raw > 1) return cfail(c, TG_ERR_IO, "bool value at byte %zu is %u (must be 0 or 1)", c->pos, (unsigned)raw);
      out->v.i = (int64_t)raw;
      break;
    case TG_GGUF_FLOAT32: {
      uint32_t b = (uint32_t)raw;
      float f;
      memcpy(&f, &b, 4);
      out->v.f = f;
      break;
    }
    case TG_GGUF_FLOAT64: memcpy(&out->v.f, &raw, 8); break;
    default: return cfail(c, TG_ERR_IO, "value at byte %zu: unknown type %u", c->pos, type);
  }
  out->type = (tg_gguf_type)type;
  c->pos += n;
  return true;
}

/* ------------------------------------------------------------------------------------------------- lookups */

static const char *const *sort_names; /* qsort has no context argument; the sorts below run on one thread */
static int name_cmp(const void *a, const void *b) {
  return strcmp(sort_names[*(const size_t *)a], sort_names[*(const size_t *)b]);
}

/* Indices 0..n-1 sorted by name; the first duplicate (or -1) in *dup. */
static size_t *sorted_index(const char *const *names, size_t n, long *dup) {
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  if (!idx) return NULL;
  for (size_t i = 0; i < n; i++) idx[i] = i;
  sort_names = names;
  qsort(idx, n, sizeof *idx, name_cmp);
  sort_names = NULL;
  *dup = -1;
  for (size_t i = 1; i < n && *dup < 0; i++)
    if (strcmp(names[idx[i - 1]], names[idx[i]]) == 0) *dup = (long)idx[i];
  return idx;
}

static long find_sorted(const size_t *order, size_t n, const char *name, const char *(*name_of)(const tg_gguf *, size_t),
                        const tg_gguf *g) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(name_of(g, order[mid]), name);
    if (c == 0) return (long)order[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}
static const char *key_of(const tg_gguf *g, size_t i) { return g->keys[i]; }
static const char *tensor_name_of(const tg_gguf *g, size_t i) { return g->tensors[i].name; }

/* ------------------------------------------------------------------------------------------------- parsing */

/* The header in file order: magic, version (2 or 3), counts, the key-value pairs (keys unique, general.alignment a
 * power of two), the tensor infos (ggml's rules: at most 4 dims, a known type, ne[0] a multiple of its block, no
 * overflow), then the data section: tensors at increasing offsets, each padded to the alignment, all inside the file. */
static bool parse_header(Cursor *c, tg_gguf *g) {
  if (!need(c, 24, "header")) return false;
  if (memcmp(c->p, GGUF_MAGIC, 4) != 0)
    return cfail(c, TG_ERR_IO, "bad magic %02x %02x %02x %02x (not a GGUF file)", c->p[0], c->p[1], c->p[2], c->p[3]);
  c->pos = 4;
  uint32_t version;
  uint64_t ntensors, nkv;
  read_u32(c, "version", &version);
  if (version == 0x02000000u || version == 0x03000000u)
    return cfail(c, TG_ERR_UNSUPPORTED, "a big-endian GGUF file (version bytes %08x) is not supported yet", version);
  if (version == 1) return cfail(c, TG_ERR_UNSUPPORTED, "GGUF version 1 (obsolete) is not supported");
  if (version < 2 || version > 3)
    return cfail(c, TG_ERR_UNSUPPORTED, "GGUF version %u is not supported (versions 2 and 3 are)", version);
  g->version = version;
  read_u64(c, "tensor count", &ntensors);
  read_u64(c, "metadata count", &nkv);
  /* bound the counts by the bytes left before allocating: a key takes at least 13 bytes, a tensor info 24 */
  if (nkv > left(c) / 13)
    return cfail(c, TG_ERR_IO, "metadata count %llu cannot fit in the %zu bytes left", (unsigned long long)nkv, left(c));
  if (ntensors > left(c) / 24)
    return cfail(c, TG_ERR_IO, "tensor count %llu cannot fit in the %zu bytes left", (unsigned long long)ntensors,
                 left(c));
  g->keys = calloc(nkv ? (size_t)nkv : 1, sizeof *g->keys);
  g->values = calloc(nkv ? (size_t)nkv : 1, sizeof *g->values);
  g->tensors = calloc(ntensors ? (size_t)ntensors : 1, sizeof *g->tensors);
  if (!g->keys || !g->values || !g->tensors) return cfail(c, TG_ERR_OUT_OF_MEMORY, "no memory for the header");

  for (uint64_t i = 0; i < nkv; i++) {
    size_t at = c->pos;
    uint64_t klen;
    uint32_t type;
    char *key;
    if (!read_string(c, "metadata key", &key, &klen)) return false;
    g->keys[g->nkv] = key;
    g->values[g->nkv].type = TG_GGUF_UINT8;
    g->nkv++;
    const char *bad = bad_identifier(key, klen);
    if (bad) return cfail(c, TG_ERR_IO, "metadata key %llu at byte %zu %s", (unsigned long long)i, at, bad);
    if (!read_u32(c, "metadata value type", &type)) return false;
    if (!valid_type(type)) return cfail(c, TG_ERR_IO, "metadata \"%s\": unknown value type %u", key, type);
    if (!read_value(c, type, 0, &g->values[g->nkv - 1])) {
      char inner[sizeof c->err];
      memcpy(inner, c->err, sizeof inner);
      c->st = TG_OK;
      return cfail(c, TG_ERR_IO, "metadata \"%s\": %s", key, inner);
    }
  }
  long dup;
  if (!(g->key_order = sorted_index((const char *const *)g->keys, g->nkv, &dup)))
    return cfail(c, TG_ERR_OUT_OF_MEMORY, "no memory for the header");
  if (dup >= 0) return cfail(c, TG_ERR_IO, "duplicate metadata key \"%s\"", g->keys[dup]);

  g->alignment = GGUF_DEFAULT_ALIGNMENT;
  long ai = find_sorted(g->key_order, g->nkv, "general.alignment", key_of, g);
  if (ai >= 0) {
    const tg_gguf_value *v = &g->values[ai];
    if (v->type != TG_GGUF_UINT32)
      return cfail(c, TG_ERR_IO, "general.alignment is a %s (must be uint32)", type_name(v->type));
    if (v->v.u == 0 || (v->v.u & (v->v.u - 1)))
      return cfail(c, TG_ERR_IO, "general.alignment %llu is not a power of two", (unsigned long long)v->v.u);
    g->alignment = (uint32_t)v->v.u;
  }

  for (uint64_t i = 0; i < ntensors; i++) {
    size_t at = c->pos;
    tg_gguf_tensor_info *t = &g->tensors[g->ntensors];
    char *name;
    uint64_t nlen;
    if (!read_string(c, "tensor name", &name, &nlen)) return false;
    t->name = name;
    g->ntensors++;
    const char *bad = bad_identifier(name, nlen);
    if (bad) return cfail(c, TG_ERR_IO, "tensor %llu name at byte %zu %s", (unsigned long long)i, at, bad);
    if (nlen > GGUF_MAX_NAME)
      return cfail(c, TG_ERR_IO, "tensor \"%.40s...\": name of %llu bytes (at most %d)", name, (unsigned long long)nlen,
                   GGUF_MAX_NAME);
    uint32_t ndim, type;
    if (!read_u32(c, "tensor n_dims", &ndim)) return false;
    if (ndim > GGUF_MAX_DIMS) return cfail(c, TG_ERR_IO, "tensor \"%s\": %u dimensions (at most 4)", name, ndim);
    t->ndim = (int)ndim;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < ndim; d++) {
      uint64_t ne;
      if (!read_u64(c, "tensor size", &ne)) return false;
      if (ne > (uint64_t)INT64_MAX)
        return cfail(c, TG_ERR_IO, "tensor \"%s\": ne[%u] = %llu is negative as int64", name, d, (unsigned long long)ne);
      t->ne[d] = (int64_t)ne;
    }
    if (!read_u32(c, "tensor type", &type) || !read_u64(c, "tensor offset", &t->offset)) return false;
    int64_t be, bb;
    if (!tg_ggml_type_block((int)type, &be, &bb))
      return cfail(c, TG_ERR_IO, "tensor \"%s\": type %u is not a ggml type", name, type);
    t->type = (int)type;
    if (t->ne[0] % be)
      return cfail(c, TG_ERR_IO, "tensor \"%s\": ne[0] = %lld is not a multiple of %s's block of %lld", name,
                   (long long)t->ne[0], tg_ggml_type_name((int)type), (long long)be);
    /* numel must fit int64 (ggml's check) and so must the byte size */
    uint64_t numel = 1, zero = 0;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
      if (t->ne[d] == 0) zero = 1;
      else if (numel > (uint64_t)INT64_MAX / (uint64_t)t->ne[d])
        return cfail(c, TG_ERR_IO, "tensor \"%s\": element count overflows", name);
      else numel *= (uint64_t)t->ne[d];
    }
    uint64_t blocks = numel / (uint64_t)be;
    if (blocks > (uint64_t)INT64_MAX / (uint64_t)bb) return cfail(c, TG_ERR_IO, "tensor \"%s\": byte size overflows", name);
    t->nbytes = zero ? 0 : blocks * (uint64_t)bb;
  }
  {
    const char **names = malloc((g->ntensors ? g->ntensors : 1) * sizeof *names);
    if (!names) return cfail(c, TG_ERR_OUT_OF_MEMORY, "no memory for the header");
    for (size_t i = 0; i < g->ntensors; i++) names[i] = g->tensors[i].name;
    g->tensor_order = sorted_index(names, g->ntensors, &dup);
    free(names);
    if (!g->tensor_order) return cfail(c, TG_ERR_OUT_OF_MEMORY, "no memory for the header");
  }
  if (dup >= 0) return cfail(c, TG_ERR_IO, "duplicate tensor name \"%s\"", g->tensors[dup].name);

  /* the data section: aligned after the header; tensors in order, each padded to the alignment (ggml's rule) */
  uint64_t a = g->alignment, start = ((uint64_t)c->pos + a - 1) / a * a;
  if (start > c->size && g->ntensors > 0)  /* a file without tensors (vocab only) may end before the padding */
    return cfail(c, TG_ERR_IO, "the data section would start at byte %llu, past the end of the %zu-byte file",
                 (unsigned long long)start, c->size);
  g->data_offset = start;
  uint64_t expect = 0, room = start <= c->size ? (uint64_t)c->size - start : 0;
  for (size_t i = 0; i < g->ntensors; i++) {
    const tg_gguf_tensor_info *t = &g->tensors[i];
    if (t->offset != expect)
      return cfail(c, TG_ERR_IO, "tensor \"%s\": data offset %llu, expected %llu (tensors must follow each other in "
                   "order, each padded to the alignment of %u)", t->name, (unsigned long long)t->offset,
                   (unsigned long long)expect, g->alignment);
    if (t->nbytes > room || t->offset > room - t->nbytes)
      return cfail(c, TG_ERR_IO, "tensor \"%s\": %llu bytes at data offset %llu run past the end of the file (%llu "
                   "bytes of data; truncated?)", t->name, (unsigned long long)t->nbytes,
                   (unsigned long long)t->offset, (unsigned long long)room);
    uint64_t end = t->offset + t->nbytes;
    expect = end + (a - end % a) % a;
  }
  return true;
}

/* The handle takes the mapping's reference; on failure the message gets the "gguf: " prefix and everything is freed. */
static tg_status parse_image(GgufMap *map, tg_gguf **out) {
  tg_gguf *g = calloc(1, sizeof *g);
  if (!g) { map_unref(map); return tg_set_error(TG_ERR_OUT_OF_MEMORY, "gguf: no memory"); }
  g->map = map;
  Cursor c = {map->base, map->size, 0, TG_OK, {0}};
  if (!parse_header(&c, g)) {
    tg_status st = c.st != TG_OK ? c.st : TG_ERR_IO;
    tg_set_error(st, "gguf: %s", c.err);
    tg_gguf_close(g);
    return st;
  }
  *out = g;
  return TG_OK;
}

/* From memory: a copy with the host-wrap alignment, so tensors can live on it exactly as on a mapped file. */
tg_status tg_gguf_open_buffer(const void *data, size_t size, tg_gguf **out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_open_buffer: NULL out");
  *out = NULL;
  if (!data && size) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_open_buffer: NULL data");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return tg_set_error(TG_ERR_UNSUPPORTED, "gguf: big-endian hosts are not supported");
#endif
  GgufMap *m = calloc(1, sizeof *m);
  size_t cap = (size + RT_HOST_WRAP_ALIGN - 1) / RT_HOST_WRAP_ALIGN * RT_HOST_WRAP_ALIGN;
  uint8_t *copy = m && cap >= size ? aligned_alloc(RT_HOST_WRAP_ALIGN, cap ? cap : RT_HOST_WRAP_ALIGN) : NULL;
  if (!copy) {
    free(m);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_gguf_open_buffer: no memory for %zu bytes", size);
  }
  if (size) memcpy(copy, data, size);
  m->base = copy;
  m->size = size;
  atomic_init(&m->refs, 1);
  return parse_image(m, out);
}

/* From a file: mapped, not read (a 4 GB model costs no copy until a tensor is used, and TG_GGUF_MAP tensors never
 * copy at all on the CPU). */
tg_status tg_gguf_open(const char *path, tg_gguf **out) {
  if (!out || !path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_open: NULL argument");
  *out = NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return tg_set_error(TG_ERR_UNSUPPORTED, "gguf: big-endian hosts are not supported");
#endif
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tg_set_error(TG_ERR_IO, "tg_gguf_open: cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return tg_set_error(TG_ERR_IO, "tg_gguf_open: %s is not a regular file", path);
  }
  size_t size = (size_t)sb.st_size;
  if (size < 24) {
    close(fd);
    return tg_set_error(TG_ERR_IO, "gguf: %s has %zu bytes, too short for the 24-byte header", path, size);
  }
  /* private and writable: pages stay shared with the page cache until a kernel writes one (never the file) */
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return tg_set_error(TG_ERR_IO, "tg_gguf_open: cannot map %s: %s", path, strerror(errno));
  GgufMap *m = calloc(1, sizeof *m);
  if (!m) {
    munmap(p, size);
    return tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_gguf_open: no memory");
  }
  m->base = p;
  m->size = m->map_len = size;
  atomic_init(&m->refs, 1);
  tg_status st = parse_image(m, out);
  if (st != TG_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s (%s)", tg_last_error(), path);
    tg_set_error(st, "%s", msg);
  }
  return st;
}

/* ------------------------------------------------------------------------------------------------- queries */

uint32_t tg_gguf_version(const tg_gguf *g) { return g ? g->version : 0; }
uint32_t tg_gguf_alignment(const tg_gguf *g) { return g ? g->alignment : 0; }
uint64_t tg_gguf_data_offset(const tg_gguf *g) { return g ? g->data_offset : 0; }
size_t tg_gguf_kv_count(const tg_gguf *g) { return g ? g->nkv : 0; }
const char *tg_gguf_kv_key(const tg_gguf *g, size_t i) { return g && i < g->nkv ? g->keys[i] : NULL; }
const tg_gguf_value *tg_gguf_kv_value(const tg_gguf *g, size_t i) { return g && i < g->nkv ? &g->values[i] : NULL; }
const tg_gguf_value *tg_gguf_get(const tg_gguf *g, const char *key) {
  if (!g || !key) return NULL;
  long i = find_sorted(g->key_order, g->nkv, key, key_of, g);
  return i >= 0 ? &g->values[i] : NULL;
}
size_t tg_gguf_tensor_count(const tg_gguf *g) { return g ? g->ntensors : 0; }
const tg_gguf_tensor_info *tg_gguf_tensor_info_at(const tg_gguf *g, size_t i) {
  return g && i < g->ntensors ? &g->tensors[i] : NULL;
}
const tg_gguf_tensor_info *tg_gguf_find_tensor(const tg_gguf *g, const char *name) {
  if (!g || !name) return NULL;
  long i = find_sorted(g->tensor_order, g->ntensors, name, tensor_name_of, g);
  return i >= 0 ? &g->tensors[i] : NULL;
}

static const tg_gguf_value *typed(const tg_gguf *g, const char *key, const char *fn) {
  if (!g || !key) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn); return NULL; }
  const tg_gguf_value *v = tg_gguf_get(g, key);
  if (!v) tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: no metadata key \"%s\"", fn, key);
  return v;
}

tg_status tg_gguf_get_int(const tg_gguf *g, const char *key, int64_t *out) {
  const tg_gguf_value *v = typed(g, key, "tg_gguf_get_int");
  if (!v || !out) return v ? tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_int: NULL out") : tg_last_status();
  switch (v->type) {
    case TG_GGUF_UINT8: case TG_GGUF_UINT16: case TG_GGUF_UINT32: case TG_GGUF_UINT64:
      if (v->v.u > (uint64_t)INT64_MAX)
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_int: \"%s\" = %llu does not fit int64", key,
                            (unsigned long long)v->v.u);
      *out = (int64_t)v->v.u;
      return TG_OK;
    case TG_GGUF_INT8: case TG_GGUF_INT16: case TG_GGUF_INT32: case TG_GGUF_INT64: *out = v->v.i; return TG_OK;
    default:
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_int: \"%s\" is a %s, not an integer", key,
                          type_name(v->type));
  }
}

tg_status tg_gguf_get_float(const tg_gguf *g, const char *key, double *out) {
  const tg_gguf_value *v = typed(g, key, "tg_gguf_get_float");
  if (!v || !out) return v ? tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_float: NULL out") : tg_last_status();
  if (v->type != TG_GGUF_FLOAT32 && v->type != TG_GGUF_FLOAT64)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_float: \"%s\" is a %s, not a float", key,
                        type_name(v->type));
  *out = v->v.f;
  return TG_OK;
}

tg_status tg_gguf_get_bool(const tg_gguf *g, const char *key, bool *out) {
  const tg_gguf_value *v = typed(g, key, "tg_gguf_get_bool");
  if (!v || !out) return v ? tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_bool: NULL out") : tg_last_status();
  if (v->type != TG_GGUF_BOOL)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_bool: \"%s\" is a %s, not a bool", key, type_name(v->type));
  *out = v->v.i != 0;
  return TG_OK;
}

tg_status tg_gguf_get_string(const tg_gguf *g, const char *key, const char **out, size_t *len) {
  const tg_gguf_value *v = typed(g, key, "tg_gguf_get_string");
  if (!v || !out) return v ? tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_string: NULL out") : tg_last_status();
  if (v->type != TG_GGUF_STRING)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_get_string: \"%s\" is a %s, not a string", key,
                        type_name(v->type));
  *out = v->v.str.s;
  if (len) *len = (size_t)v->v.str.len;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------------- tensors */

/* A tensor of numel elements of dtype on tensor t's bytes: a buffer on the mapping itself when it may be (TG_GGUF_MAP
 * and aligned), else a copy (on the CPU for TG_GGUF_MAP, the default device for TG_GGUF_COPY). */
static tg_tensor *data_tensor(const tg_gguf *g, const tg_gguf_tensor_info *t, tg_dtype dtype, int64_t numel,
                              tg_gguf_load how, const char *op) {
  uint8_t *ptr = g->map->base + g->data_offset + t->offset;
  if (how == TG_GGUF_MAP && (uintptr_t)ptr % RT_HOST_WRAP_ALIGN == 0) {
    mix_ctx_begin(op);
    atomic_fetch_add(&g->map->refs, 1);
    UOp *buf = engine_buffer_wrap_host("CPU", &tg_dtype_table[dtype], numel, ptr, map_unref, g->map);
    if (!buf) atomic_fetch_sub(&g->map->refs, 1); /* the handle's own reference keeps it above 0 */
    return tensor_ctx_end(buf);
  }
  return tg_from_data_on(ptr, dtype, &numel, 1, how == TG_GGUF_MAP ? "CPU" : NULL);
}

/* The common argument checks of the tensor getters: a handle, a known load mode, a tensor of that name. */
static const tg_gguf_tensor_info *tensor_arg(const tg_gguf *g, const char *name, tg_gguf_load how, const char *op) {
  if (!g || !name) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL argument", op); return NULL; }
  if (how != TG_GGUF_MAP && how != TG_GGUF_COPY) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: bad load mode %d", op, (int)how);
    return NULL;
  }
  const tg_gguf_tensor_info *t = tg_gguf_find_tensor(g, name);
  if (!t) tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: no tensor \"%s\" in the file", op, name);
  return t;
}

tg_tensor *tg_gguf_tensor_bytes(const tg_gguf *g, const char *name, tg_gguf_load how) {
  const tg_gguf_tensor_info *t = tensor_arg(g, name, how, "tg_gguf_tensor_bytes");
  return t ? data_tensor(g, t, TG_UINT8, (int64_t)t->nbytes, how, "tg_gguf_tensor_bytes") : NULL;
}

/* A tensor by name with its values: GGUF lists dims innermost first (ne[0] is the row length), so the shape is
 * reversed to torch's order; F32/F16/BF16 are read in place, quantized types go through tg_ggml_dequantize as tensor
 * ops on the raw bytes (the dequantization fuses into whatever reads the weight). */
tg_tensor *tg_gguf_tensor(const tg_gguf *g, const char *name, tg_gguf_load how) {
  const tg_gguf_tensor_info *t = tensor_arg(g, name, how, "tg_gguf_tensor");
  if (!t) return NULL;
  int64_t shape[GGUF_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) shape[d] = t->ne[t->ndim - 1 - d];
  tg_dtype native = t->type == TG_GGML_F32 ? TG_FLOAT32 : t->type == TG_GGML_F16 ? TG_FLOAT16
                  : t->type == TG_GGML_BF16 ? TG_BFLOAT16 : TG_VOID;
  tg_scope s = tg_scope_begin();
  tg_tensor *r;
  if (native != TG_VOID) { /* the file's values in their own dtype: no bitcast needed */
    int64_t numel = (int64_t)(t->nbytes / tg_dtype_itemsize(native));
    r = tg_reshape(data_tensor(g, t, native, numel, how, "tg_gguf_tensor"), shape, (size_t)t->ndim);
  } else {
    r = tg_ggml_dequantize(data_tensor(g, t, TG_UINT8, (int64_t)t->nbytes, how, "tg_gguf_tensor"), t->type, shape,
                           (size_t)t->ndim);
    if (!r && tg_last_status() == TG_ERR_UNSUPPORTED) {
      char msg[400];
      snprintf(msg, sizeof msg, "%s (tensor \"%s\")", tg_last_error(), name);
      tg_set_error(TG_ERR_UNSUPPORTED, "%s", msg);
    }
  }
  return nn_finish(s, r);
}
