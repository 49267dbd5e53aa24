/* gguf_write.c — the GGUF writer (include/tinygrad.h "GGUF"): metadata and tensors collected in order, then written
 * as version 3 in the layout ggml's reader accepts: the data section aligned, every tensor at the running offset
 * padded to the alignment, zero padding between. Keys and names are checked by the reader's rules when added, so a
 * written file always reads back. */
#include "nn/nn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A key and a deep copy of its value: the caller's value (and its arrays) may be freed right after the add. */
typedef struct WKv { char *key; tg_gguf_value value; } WKv;
/* data holds the bytes, or fill produces them row by row (ne[0] elements a row) when the file is written */
typedef struct WTensor {
  char *name;
  int type, ndim;
  int64_t ne[4];
  uint8_t *data;
  size_t nbytes;
  tg_gguf_fill_fn fill;
  void *user;
} WTensor;

/* Everything is kept in memory until the write, in the order added: the file lists metadata and tensors in that
 * order, and offsets are only known once all sizes are. */
struct tg_gguf_writer {
  uint32_t alignment;
  TG_VEC(WKv) kvs;
  TG_VEC(WTensor) tensors;
};

/* The size of one scalar element of a value type (0 for strings and arrays), as in the reader. */
static size_t elem_size(tg_gguf_type t) {
  switch (t) {
    case TG_GGUF_UINT8: case TG_GGUF_INT8: case TG_GGUF_BOOL: return 1;
    case TG_GGUF_UINT16: case TG_GGUF_INT16: return 2;
    case TG_GGUF_UINT32: case TG_GGUF_INT32: case TG_GGUF_FLOAT32: return 4;
    case TG_GGUF_UINT64: case TG_GGUF_INT64: case TG_GGUF_FLOAT64: return 8;
    default: return 0;
  }
}

static void wvalue_free(tg_gguf_value *v) {
  if (v->type == TG_GGUF_STRING) tg_free((void *)v->v.str.s);
  else if (v->type == TG_GGUF_ARRAY) {
    tg_free((void *)v->v.arr.data);
    tg_gguf_value *items = (tg_gguf_value *)v->v.arr.items;
    if (items)
      for (uint64_t i = 0; i < v->v.arr.len; i++) wvalue_free(&items[i]);
    tg_free(items);
  }
}

/* A deep copy of v into *out (checked: known types, bools 0/1, nesting); false with the error set. */
static bool wvalue_copy(const tg_gguf_value *v, int depth, tg_gguf_value *out) {
  memset(out, 0, sizeof *out);
  out->type = TG_GGUF_UINT8;
  if ((unsigned)v->type > TG_GGUF_FLOAT64) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: unknown value type %d", (int)v->type);
    return false;
  }
  if (v->type == TG_GGUF_BOOL && (v->v.i != 0 && v->v.i != 1)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: a bool must be 0 or 1");
    return false;
  }
  if (v->type == TG_GGUF_STRING) {
    if (!v->v.str.s && v->v.str.len) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: NULL string");
      return false;
    }
    char *s = tg_malloc((size_t)v->v.str.len + 1);
    if (v->v.str.len) memcpy(s, v->v.str.s, (size_t)v->v.str.len);
    s[v->v.str.len] = 0;
    out->type = TG_GGUF_STRING;
    out->v.str.s = s;
    out->v.str.len = v->v.str.len;
    return true;
  }
  if (v->type != TG_GGUF_ARRAY) {
    *out = *v;
    return true;
  }
  tg_gguf_type et = v->v.arr.type;
  uint64_t n = v->v.arr.len;
  if ((unsigned)et > TG_GGUF_FLOAT64 || (et == TG_GGUF_ARRAY && depth + 1 >= TG_GGUF_MAX_DEPTH)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: bad array element type %d or arrays nested deeper "
                 "than %d", (int)et, TG_GGUF_MAX_DEPTH);
    return false;
  }
  out->type = TG_GGUF_ARRAY;
  out->v.arr.type = et;
  size_t es = elem_size(et);
  if (es) {
    if (n && !v->v.arr.data) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: array without data");
      return false;
    }
    uint8_t *d = tg_malloc(n ? (size_t)n * es : 1);
    if (n) memcpy(d, v->v.arr.data, (size_t)n * es);
    out->v.arr.data = d;
    out->v.arr.len = n;
    if (et == TG_GGUF_BOOL)
      for (uint64_t i = 0; i < n; i++)
        if (d[i] > 1) {
          tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: bool array element %llu is %u",
                       (unsigned long long)i, d[i]);
          return false;
        }
    return true;
  }
  if (n && !v->v.arr.items) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: array without items");
    return false;
  }
  tg_gguf_value *items = tg_calloc(n ? (size_t)n : 1, sizeof *items);
  out->v.arr.items = items;
  for (uint64_t i = 0; i < n; i++) {
    out->v.arr.len = i;
    if (v->v.arr.items[i].type != et) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: array item %llu is not of the array's type",
                   (unsigned long long)i);
      return false;
    }
    if (!wvalue_copy(&v->v.arr.items[i], depth + 1, &items[i])) return false;
  }
  out->v.arr.len = n;
  return true;
}

/* the reader's rule for keys and names: non-empty UTF-8 without NUL (a C string has none inside) */
static bool good_identifier(const char *s) { return s && *s && tg_utf8_valid(s, strlen(s)); }

/* alignment 0 means ggml's default of 32; any other value is written as general.alignment (a power of two). */
tg_gguf_writer *tg_gguf_writer_new(uint32_t alignment) {
  if (alignment == 0) alignment = 32;
  if (alignment & (alignment - 1)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_new: alignment %u is not a power of two", alignment);
    return NULL;
  }
  tg_gguf_writer *w = tg_calloc(1, sizeof *w);
  w->alignment = alignment;
  return w;
}

void tg_gguf_writer_free(tg_gguf_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->kvs.len; i++) {
    tg_free(w->kvs.data[i].key);
    wvalue_free(&w->kvs.data[i].value);
  }
  for (size_t i = 0; i < w->tensors.len; i++) {
    tg_free(w->tensors.data[i].name);
    tg_free(w->tensors.data[i].data);
  }
  tg_vec_free(&w->kvs);
  tg_vec_free(&w->tensors);
  tg_free(w);
}

/* A metadata pair, checked as the reader checks it (identifier rules, unique key, valid value); general.alignment is
 * the writer's own, set by tg_gguf_writer_new, so the two can never disagree. */
tg_status tg_gguf_writer_add(tg_gguf_writer *w, const char *key, const tg_gguf_value *value) {
  if (!w || !key || !value) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: NULL argument");
  if (!good_identifier(key))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: key \"%s\" is empty or not UTF-8", key);
  if (strcmp(key, "general.alignment") == 0)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: general.alignment is the writer's own "
                        "(tg_gguf_writer_new)");
  for (size_t i = 0; i < w->kvs.len; i++)
    if (strcmp(w->kvs.data[i].key, key) == 0)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add: duplicate key \"%s\"", key);
  WKv kv = {NULL, {TG_GGUF_UINT8, {0}}};
  if (!wvalue_copy(value, 0, &kv.value)) {
    wvalue_free(&kv.value);
    return tg_last_status();
  }
  kv.key = tg_strdup(key);
  tg_vec_push(&w->kvs, kv);
  return TG_OK;
}

/* Shorthands for the common scalar and string values. */
tg_status tg_gguf_writer_add_uint32(tg_gguf_writer *w, const char *key, uint32_t v) {
  tg_gguf_value x = {TG_GGUF_UINT32, {.u = v}};
  return tg_gguf_writer_add(w, key, &x);
}
tg_status tg_gguf_writer_add_float32(tg_gguf_writer *w, const char *key, float v) {
  tg_gguf_value x = {TG_GGUF_FLOAT32, {.f = v}};
  return tg_gguf_writer_add(w, key, &x);
}
tg_status tg_gguf_writer_add_string(tg_gguf_writer *w, const char *key, const char *s) {
  if (!s) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_string: NULL string");
  tg_gguf_value x = {TG_GGUF_STRING, {.str = {s, strlen(s)}}};
  return tg_gguf_writer_add(w, key, &x);
}

/* checks a tensor's name, type and sizes; nbytes is what they give (when *nbytes is SIZE_MAX) or must give */
static tg_status check_tensor(const tg_gguf_writer *w, const char *name, int type, const int64_t *ne, size_t ndim,
                              size_t *nbytes) {
  if (!good_identifier(name) || strlen(name) > 63)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: name \"%s\" is empty, longer than 63 "
                        "bytes or not UTF-8", name);
  for (size_t i = 0; i < w->tensors.len; i++)
    if (strcmp(w->tensors.data[i].name, name) == 0)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: duplicate name \"%s\"", name);
  int64_t be, bb;
  if (!tg_ggml_type_block(type, &be, &bb))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": %d is not a ggml type", name, type);
  if (ndim < 1 || ndim > 4)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": %zu dims (1 to 4)", name, ndim);
  uint64_t numel = 1;
  bool zero = false;
  for (size_t d = 0; d < ndim; d++) {
    if (ne[d] < 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": ne[%zu] < 0", name, d);
    if (ne[d] == 0) zero = true;
    else if (numel > (uint64_t)INT64_MAX / (uint64_t)ne[d])
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": too many elements", name);
    else numel *= (uint64_t)ne[d];
  }
  if (ne[0] % be)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": ne[0] = %lld is not a multiple "
                        "of %s's block of %lld", name, (long long)ne[0], tg_ggml_type_name(type), (long long)be);
  uint64_t need = zero ? 0 : numel / (uint64_t)be * (uint64_t)bb;
  if (*nbytes == SIZE_MAX) {
    if (need > SIZE_MAX / 2)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": too many bytes", name);
    *nbytes = (size_t)need;
  } else if (need != *nbytes) {
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: \"%s\": %s with these sizes is %llu "
                        "bytes, given %zu", name, tg_ggml_type_name(type), (unsigned long long)need, *nbytes);
  }
  return TG_OK;
}

/* A checked tensor appended (unused dims are 1, as ggml stores them). */
static void push_tensor(tg_gguf_writer *w, const char *name, int type, const int64_t *ne, size_t ndim, uint8_t *data,
                        size_t nbytes, tg_gguf_fill_fn fill, void *user) {
  WTensor t = {tg_strdup(name), type, (int)ndim, {1, 1, 1, 1}, data, nbytes, fill, user};
  for (size_t d = 0; d < ndim; d++) t.ne[d] = ne[d];
  tg_vec_push(&w->tensors, t);
}

/* A tensor from bytes already in the file's encoding (a quantized type's blocks as ggml lays them out), copied. */
tg_status tg_gguf_writer_add_tensor(tg_gguf_writer *w, const char *name, int type, const int64_t *ne, size_t ndim,
                                    const void *data, size_t nbytes) {
  if (!w || !name || (ndim && !ne) || (!data && nbytes))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: NULL argument");
  if (nbytes == SIZE_MAX) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor: bad size");
  tg_status st = check_tensor(w, name, type, ne, ndim, &nbytes);
  if (st != TG_OK) return st;
  uint8_t *copy = tg_malloc(nbytes ? nbytes : 1);
  if (nbytes) memcpy(copy, data, nbytes);
  push_tensor(w, name, type, ne, ndim, copy, nbytes, NULL, NULL);
  return TG_OK;
}

/* A tensor whose bytes a callback produces row by row at write time: a converter can quantize a large model without
 * holding every converted tensor in memory. */
tg_status tg_gguf_writer_add_tensor_fill(tg_gguf_writer *w, const char *name, int type, const int64_t *ne,
                                         size_t ndim, tg_gguf_fill_fn fill, void *user) {
  if (!w || !name || (ndim && !ne) || !fill)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_add_tensor_fill: NULL argument");
  size_t nbytes = SIZE_MAX;
  tg_status st = check_tensor(w, name, type, ne, ndim, &nbytes);
  if (st != TG_OK) return st;
  push_tensor(w, name, type, ne, ndim, NULL, nbytes, fill, user);
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------------- serializing */

/* A growing output buffer with little-endian writers for the header's integers, strings and values. */
typedef struct Out { uint8_t *p; size_t len, cap; } Out;

static void out_bytes(Out *o, const void *src, size_t n) {
  if (o->len + n > o->cap) {
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    o->p = tg_realloc(o->p, cap);
    o->cap = cap;
  }
  if (n && src) memcpy(o->p + o->len, src, n);
  o->len += n;
}
static void out_le(Out *o, uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
  out_bytes(o, b, (size_t)n);
}
static void out_str(Out *o, const char *s, uint64_t len) {
  out_le(o, len, 8);
  out_bytes(o, s, (size_t)len);
}

/* One value in the file's encoding (arrays: element type, count, then the elements; nested arrays recurse). */
static void out_value(Out *o, const tg_gguf_value *v) {
  switch (v->type) {
    case TG_GGUF_UINT8: case TG_GGUF_UINT16: case TG_GGUF_UINT32: case TG_GGUF_UINT64:
      out_le(o, v->v.u, (int)elem_size(v->type));
      break;
    case TG_GGUF_INT8: case TG_GGUF_INT16: case TG_GGUF_INT32: case TG_GGUF_INT64: case TG_GGUF_BOOL:
      out_le(o, (uint64_t)v->v.i, (int)elem_size(v->type));
      break;
    case TG_GGUF_FLOAT32: {
      float f = (float)v->v.f;
      uint32_t b;
      memcpy(&b, &f, 4);
      out_le(o, b, 4);
      break;
    }
    case TG_GGUF_FLOAT64: {
      uint64_t b;
      memcpy(&b, &v->v.f, 8);
      out_le(o, b, 8);
      break;
    }
    case TG_GGUF_STRING: out_str(o, v->v.str.s, v->v.str.len); break;
    case TG_GGUF_ARRAY: {
      out_le(o, (uint64_t)v->v.arr.type, 4);
      out_le(o, v->v.arr.len, 8);
      size_t es = elem_size(v->v.arr.type);
      if (es) out_bytes(o, v->v.arr.data, (size_t)v->v.arr.len * es); /* the host is little-endian */
      else
        for (uint64_t i = 0; i < v->v.arr.len; i++) out_value(o, &v->v.arr.items[i]);
      break;
    }
  }
}

/* Zero bytes up to the next multiple of the alignment (ggml pads with zeros). */
static void out_pad(Out *o, uint32_t alignment) {
  static const uint8_t zeros[64] = {0};
  while (o->len % alignment) out_bytes(o, zeros, TG_MIN(sizeof zeros, alignment - o->len % alignment));
}

/* the header, metadata, tensor infos and the padding before the data */
static void out_header(const tg_gguf_writer *w, Out *o) {
  bool own_alignment = w->alignment != 32;
  out_bytes(o, "GGUF", 4);
  out_le(o, 3, 4);
  out_le(o, w->tensors.len, 8);
  out_le(o, w->kvs.len + (own_alignment ? 1 : 0), 8);
  if (own_alignment) {
    out_str(o, "general.alignment", strlen("general.alignment"));
    out_le(o, TG_GGUF_UINT32, 4);
    out_le(o, w->alignment, 4);
  }
  for (size_t i = 0; i < w->kvs.len; i++) {
    out_str(o, w->kvs.data[i].key, strlen(w->kvs.data[i].key));
    out_le(o, (uint64_t)w->kvs.data[i].value.type, 4);
    out_value(o, &w->kvs.data[i].value);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < w->tensors.len; i++) {
    const WTensor *t = &w->tensors.data[i];
    out_str(o, t->name, strlen(t->name));
    out_le(o, (uint64_t)t->ndim, 4);
    for (int d = 0; d < t->ndim; d++) out_le(o, (uint64_t)t->ne[d], 8);
    out_le(o, (uint64_t)t->type, 4);
    out_le(o, offset, 8);
    offset += t->nbytes;
    offset += (w->alignment - offset % w->alignment) % w->alignment;
  }
  out_pad(o, w->alignment);
}

/* rows [r0, r1) of a filled tensor into dst */
static tg_status fill_rows(const WTensor *t, uint64_t r0, uint64_t r1, uint8_t *dst) {
  uint64_t rows = (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
  size_t rb = rows ? t->nbytes / (size_t)rows : 0;
  for (uint64_t r = r0; r < r1; r++) {
    tg_status st = t->fill(t->user, r, dst + (size_t)(r - r0) * rb, rb);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

/* The whole file in memory (tests, and callers that write it elsewhere); filled tensors are produced in place. */
tg_status tg_gguf_writer_write_buffer(const tg_gguf_writer *w, uint8_t **out, size_t *size) {
  if (!w || !out || !size) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_write: NULL argument");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return tg_set_error(TG_ERR_UNSUPPORTED, "gguf: big-endian hosts are not supported");
#endif
  Out o = {NULL, 0, 0};
  out_header(w, &o);
  for (size_t i = 0; i < w->tensors.len; i++) {
    const WTensor *t = &w->tensors.data[i];
    if (t->fill) {
      size_t at = o.len;
      out_bytes(&o, NULL, t->nbytes); /* room for the rows */
      tg_status st = t->nbytes ? fill_rows(t, 0, (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3],
                                           o.p + at) : TG_OK;
      if (st != TG_OK) { tg_free(o.p); return st; }
    } else {
      out_bytes(&o, t->data, t->nbytes);
    }
    out_pad(&o, w->alignment);
  }
  *out = o.p;
  *size = o.len;
  return TG_OK;
}

/* the file is written as it is produced: the header, then each tensor (filled ones in chunks of rows) */
tg_status tg_gguf_writer_write(const tg_gguf_writer *w, const char *path) {
  if (!w || !path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_gguf_writer_write: NULL argument");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return tg_set_error(TG_ERR_UNSUPPORTED, "gguf: big-endian hosts are not supported");
#endif
  FILE *f = fopen(path, "wb");
  if (!f) return tg_set_error(TG_ERR_IO, "tg_gguf_writer_write: cannot create %s: %s", path, strerror(errno));
  Out o = {NULL, 0, 0};
  out_header(w, &o);
  tg_status st = fwrite(o.p, 1, o.len, f) == o.len ? TG_OK : TG_ERR_IO;
  uint64_t pos = o.len;
  static const uint8_t zeros[64] = {0};
  uint8_t *chunk = NULL;
  for (size_t i = 0; i < w->tensors.len && st == TG_OK; i++) {
    const WTensor *t = &w->tensors.data[i];
    if (!t->fill) {
      if (fwrite(t->data, 1, t->nbytes, f) != t->nbytes) st = TG_ERR_IO;
    } else if (t->nbytes) {
      uint64_t rows = (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3], rb = t->nbytes / rows;
      uint64_t per = rb >= (4u << 20) ? 1 : (4u << 20) / rb;
      if (!chunk) chunk = tg_malloc((size_t)(per * rb > (4u << 20) ? per * rb : (4u << 20)));
      else chunk = tg_realloc(chunk, (size_t)(per * rb > (4u << 20) ? per * rb : (4u << 20)));
      for (uint64_t r = 0; r < rows && st == TG_OK; r += per) {
        uint64_t r1 = r + per < rows ? r + per : rows;
        st = fill_rows(t, r, r1, chunk);
        if (st == TG_OK && fwrite(chunk, 1, (size_t)((r1 - r) * rb), f) != (size_t)((r1 - r) * rb)) st = TG_ERR_IO;
      }
    }
    pos += t->nbytes;
    size_t pad = (size_t)((w->alignment - pos % w->alignment) % w->alignment);
    for (size_t p = pad; st == TG_OK && p > 0;) {
      size_t k = p < sizeof zeros ? p : sizeof zeros;
      if (fwrite(zeros, 1, k, f) != k) st = TG_ERR_IO;
      p -= k;
    }
    pos += pad;
  }
  tg_free(chunk);
  tg_free(o.p);
  bool io = st == TG_ERR_IO;
  if (fclose(f) != 0 && st == TG_OK) io = true, st = TG_ERR_IO;
  if (st != TG_OK) remove(path); /* no partial file */
  if (io) return tg_set_error(TG_ERR_IO, "tg_gguf_writer_write: write error on %s", path);
  return st;
}
