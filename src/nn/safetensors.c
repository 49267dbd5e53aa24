/* safetensors.c — reading and writing safetensors files (tinygrad's nn/state.py safe_load / safe_save).
 *
 * Layout: u64 little-endian header length N, N bytes of JSON, then the data buffer. The header is parsed by a strict
 * hand-written JSON parser (RFC 8259: strings with every escape and surrogate pairs, UTF-8 validated, numbers by the
 * grammar, nesting depth bounded) into a small tree, then checked against the file: known dtypes, shapes of at most
 * TG_MAX_DIMS whose byte size cannot overflow, and data_offsets that match each tensor's byte size, stay inside the
 * data and cover it exactly with no overlap or gap (the rules of the reference Rust implementation). Only then are
 * tensors created. Any violation is TG_ERR_IO with a message saying what and where; nothing here may crash on input. */
#include "nn/nn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define ST_MAX_HEADER ((uint64_t)100000000) /* the reference implementation's limit on the header length */
#define ST_MAX_DEPTH 32                     /* deepest JSON nesting accepted (real headers use 3) */
#define ST_MAX_NODES 2000000                /* most JSON values in one header (bounds the parser's memory) */

/* ------------------------------------------------------------------------------------------------- dtype names */

/* The safetensors dtype names (the format's spelling) and ours; a dtype missing here (weak scalars, fp8 FNUZ
 * variants) cannot be stored and is refused on save with a message naming the tensor. */
static const struct { const char *name; tg_dtype dtype; } safe_dtypes[] = {
  {"BOOL", TG_BOOL},       {"I8", TG_INT8},   {"U8", TG_UINT8},       {"I16", TG_INT16},     {"U16", TG_UINT16},
  {"I32", TG_INT32},       {"U32", TG_UINT32}, {"I64", TG_INT64},     {"U64", TG_UINT64},    {"F16", TG_FLOAT16},
  {"BF16", TG_BFLOAT16},   {"F32", TG_FLOAT32}, {"F64", TG_FLOAT64}, {"F8_E4M3", TG_FP8E4M3}, {"F8_E5M2", TG_FP8E5M2},
};

const char *nn_safe_dtype_name(tg_dtype d) {
  for (size_t i = 0; i < TG_ARRAY_LEN(safe_dtypes); i++)
    if (safe_dtypes[i].dtype == d) return safe_dtypes[i].name;
  return NULL;
}

tg_dtype nn_safe_dtype_from_name(const char *name, size_t len) {
  for (size_t i = 0; i < TG_ARRAY_LEN(safe_dtypes); i++)
    if (strlen(safe_dtypes[i].name) == len && memcmp(safe_dtypes[i].name, name, len) == 0) return safe_dtypes[i].dtype;
  return TG_VOID;
}

/* ------------------------------------------------------------------------------------------------- JSON tree */

/* The header is parsed into a tree first and checked afterwards: the checks (dtype, shape, offsets, duplicates)
 * then read like the format's rules, and no tensor is created from a header that fails any of them. */
typedef enum jkind { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jkind;

typedef struct jnode {
  jkind kind;
  size_t pos;              /* byte offset in the header, for messages */
  const char *raw;         /* J_NUMBER: its text in the header */
  size_t raw_len;
  char *str;               /* J_STRING: decoded, NUL-terminated (may also contain NULs: see str_len) */
  size_t str_len;
  struct jnode **kids;     /* J_ARRAY items / J_OBJECT values */
  char **keys;             /* J_OBJECT keys, decoded */
  size_t *key_lens;
  size_t n, cap;
} jnode;

/* Parser state over the header bytes (not NUL-terminated: every read checks pos against len). The first error wins:
 * jfail keeps the earliest message, the one nearest the real fault. */
typedef struct jparser {
  const char *s;
  size_t len, pos;
  size_t nodes;
  char err[200];
} jparser;

static void jnode_free(jnode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) {
    jnode_free(n->kids[i]);
    if (n->keys) tg_free(n->keys[i]);
  }
  tg_free(n->kids);
  tg_free(n->keys);
  tg_free(n->key_lens);
  tg_free(n->str);
  tg_free(n);
}

static bool jfail(jparser *p, const char *what) {
  if (!p->err[0]) snprintf(p->err, sizeof p->err, "bad JSON at header byte %zu: %s", p->pos, what);
  return false;
}

static void skip_ws(jparser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The four hex digits of a \u escape. */
static bool read_hex4(jparser *p, uint32_t *out) {
  if (p->len - p->pos < 4) return jfail(p, "truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hex_value(p->s[p->pos + (size_t)i]);
    if (h < 0) return jfail(p, "bad hex digit in \\u escape");
    v = v * 16 + (uint32_t)h;
  }
  p->pos += 4;
  *out = v;
  return true;
}

/* A code point as UTF-8 (cp is a valid scalar value here: surrogates were paired or refused before). */
static void put_utf8(StrBuf *b, uint32_t cp) {
  if (cp < 0x80) sb_putc(b, (char)cp);
  else if (cp < 0x800) {
    sb_putc(b, (char)(0xC0 | (cp >> 6)));
    sb_putc(b, (char)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    sb_putc(b, (char)(0xE0 | (cp >> 12)));
    sb_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
    sb_putc(b, (char)(0x80 | (cp & 0x3F)));
  } else {
    sb_putc(b, (char)(0xF0 | (cp >> 18)));
    sb_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
    sb_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
    sb_putc(b, (char)(0x80 | (cp & 0x3F)));
  }
}

/* A string starting at the opening quote; the decoded bytes go to *out (heap, NUL-terminated) and *out_len. */
static bool parse_string(jparser *p, char **out, size_t *out_len) {
  p->pos++; /* opening quote */
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, ""); /* a valid empty string even for "" */
  for (;;) {
    if (p->pos >= p->len) { sb_free(&b); return jfail(p, "unterminated string"); }
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') { p->pos++; break; }
    if (c < 0x20) { sb_free(&b); return jfail(p, "control character in string"); }
    if (c == '\\') {
      p->pos++;
      if (p->pos >= p->len) { sb_free(&b); return jfail(p, "unterminated escape"); }
      char e = p->s[p->pos++];
      switch (e) {
        case '"': sb_putc(&b, '"'); break;
        case '\\': sb_putc(&b, '\\'); break;
        case '/': sb_putc(&b, '/'); break;
        case 'b': sb_putc(&b, '\b'); break;
        case 'f': sb_putc(&b, '\f'); break;
        case 'n': sb_putc(&b, '\n'); break;
        case 'r': sb_putc(&b, '\r'); break;
        case 't': sb_putc(&b, '\t'); break;
        case 'u': {
          uint32_t cp;
          if (!read_hex4(p, &cp)) { sb_free(&b); return false; }
          if (cp >= 0xDC00 && cp <= 0xDFFF) { sb_free(&b); return jfail(p, "lone low surrogate in \\u escape"); }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
              sb_free(&b);
              return jfail(p, "high surrogate without its low half");
            }
            p->pos += 2;
            if (!read_hex4(p, &lo)) { sb_free(&b); return false; }
            if (lo < 0xDC00 || lo > 0xDFFF) { sb_free(&b); return jfail(p, "high surrogate without its low half"); }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(&b, cp);
          break;
        }
        default: sb_free(&b); p->pos--; return jfail(p, "unknown escape");
      }
      continue;
    }
    size_t k = tg_utf8_seq_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
    if (!k) { sb_free(&b); return jfail(p, "invalid UTF-8 in string"); }
    for (size_t i = 0; i < k; i++) sb_putc(&b, p->s[p->pos + i]);
    p->pos += k;
  }
  *out_len = b.len;
  *out = sb_take(&b);
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* A number by the JSON grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
/* Numbers are only scanned, not converted: the tree keeps their text, and the header checks convert the few they
 * need (shapes, offsets) with exact integer rules (json_u64), never through a double. */
static bool scan_number(jparser *p) {
  size_t i = p->pos;
  if (i < p->len && p->s[i] == '-') i++;
  if (i >= p->len || !is_digit(p->s[i])) { p->pos = i; return jfail(p, "bad number"); }
  if (p->s[i] == '0') i++;
  else while (i < p->len && is_digit(p->s[i])) i++;
  if (i < p->len && p->s[i] == '.') {
    i++;
    if (i >= p->len || !is_digit(p->s[i])) { p->pos = i; return jfail(p, "bad number fraction"); }
    while (i < p->len && is_digit(p->s[i])) i++;
  }
  if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
    i++;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) i++;
    if (i >= p->len || !is_digit(p->s[i])) { p->pos = i; return jfail(p, "bad number exponent"); }
    while (i < p->len && is_digit(p->s[i])) i++;
  }
  p->pos = i;
  return true;
}

static bool match_word(jparser *p, const char *w) {
  size_t n = strlen(w);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0) return jfail(p, "unexpected character");
  p->pos += n;
  return true;
}

/* Appends a child (and its key, for an object) with doubling arrays; the node owns both. */
static void jnode_push(jnode *n, jnode *kid, char *key, size_t key_len) {
  if (n->n == n->cap) {
    n->cap = n->cap ? n->cap * 2 : 4;
    n->kids = tg_realloc(n->kids, n->cap * sizeof *n->kids);
    if (n->kind == J_OBJECT) {
      n->keys = tg_realloc(n->keys, n->cap * sizeof *n->keys);
      n->key_lens = tg_realloc(n->key_lens, n->cap * sizeof *n->key_lens);
    }
  }
  n->kids[n->n] = kid;
  if (n->kind == J_OBJECT) {
    n->keys[n->n] = key;
    n->key_lens[n->n] = key_len;
  }
  n->n++;
}

static jnode *parse_value(jparser *p, int depth);

/* An array or object after its opening bracket: values separated by commas, no trailing comma (RFC 8259). On failure
 * the partial node is freed here, so callers only free what they got back. */
static jnode *parse_container(jparser *p, jnode *n, int depth) {
  bool object = n->kind == J_OBJECT;
  char close = object ? '}' : ']';
  p->pos++; /* the opening bracket */
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) { p->pos++; return n; }
  for (;;) {
    char *key = NULL;
    size_t key_len = 0;
    if (object) {
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != '"') { jfail(p, "expected a string key"); goto fail; }
      if (!parse_string(p, &key, &key_len)) goto fail;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') { tg_free(key); jfail(p, "expected ':'"); goto fail; }
      p->pos++;
    }
    jnode *kid = parse_value(p, depth + 1);
    if (!kid) { tg_free(key); goto fail; }
    jnode_push(n, kid, key, key_len);
    skip_ws(p);
    if (p->pos >= p->len) { jfail(p, object ? "unterminated object" : "unterminated array"); goto fail; }
    char c = p->s[p->pos];
    if (c == ',') { p->pos++; continue; }
    if (c == close) { p->pos++; return n; }
    jfail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    goto fail;
  }
fail:
  jnode_free(n);
  return NULL;
}

/* One JSON value. Depth and node count are bounded (ST_MAX_DEPTH, ST_MAX_NODES), so a hostile header costs bounded
 * stack and memory whatever its length. */
static jnode *parse_value(jparser *p, int depth) {
  if (depth > ST_MAX_DEPTH) { jfail(p, "nesting too deep"); return NULL; }
  skip_ws(p);
  if (p->pos >= p->len) { jfail(p, "unexpected end of header"); return NULL; }
  if (++p->nodes > ST_MAX_NODES) { jfail(p, "too many JSON values"); return NULL; }
  jnode *n = tg_calloc(1, sizeof *n);
  n->pos = p->pos;
  char c = p->s[p->pos];
  bool ok = true;
  switch (c) {
    case '{': n->kind = J_OBJECT; return parse_container(p, n, depth);
    case '[': n->kind = J_ARRAY; return parse_container(p, n, depth);
    case '"': n->kind = J_STRING; ok = parse_string(p, &n->str, &n->str_len); break;
    case 't': n->kind = J_BOOL; ok = match_word(p, "true"); break;
    case 'f': n->kind = J_BOOL; ok = match_word(p, "false"); break;
    case 'n': n->kind = J_NULL; ok = match_word(p, "null"); break;
    default:
      n->kind = J_NUMBER;
      n->raw = p->s + p->pos;
      ok = scan_number(p);
      n->raw_len = (size_t)(p->s + p->pos - n->raw);
  }
  if (!ok) { jnode_free(n); return NULL; }
  return n;
}

/* ------------------------------------------------------------------------------------------------- header checks */

/* One tensor of the header after its checks: where its bytes are in the data buffer and what they hold. */
typedef struct st_entry {
  const char *name;        /* points into the tree */
  tg_dtype dtype;
  int ndim;
  int64_t shape[TG_MAX_DIMS];
  uint64_t begin, end;
} st_entry;

/* Every format violation is TG_ERR_IO with a "safetensors: " prefix (the caller knows the file name). */
static tg_status st_error(const char *fmt, ...) TG_PRINTF(1, 2);
static tg_status st_error(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tg_set_error(TG_ERR_IO, "safetensors: %s", msg);
}

/* A non-negative integer that fits in uint64 (no sign, fraction or exponent). */
static bool json_u64(const jnode *n, uint64_t *out) {
  if (n->kind != J_NUMBER) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n->raw_len; i++) {
    char c = n->raw[i];
    if (!is_digit(c)) return false;
    uint64_t d = (uint64_t)(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* A field of an object by exact key (keys may contain NULs, so lengths are compared, not C strings). */
static const jnode *object_field(const jnode *obj, const char *key) {
  for (size_t i = 0; i < obj->n; i++)
    if (obj->key_lens[i] == strlen(key) && memcmp(obj->keys[i], key, obj->key_lens[i]) == 0) return obj->kids[i];
  return NULL;
}

typedef struct key_ref { const char *s; size_t len; } key_ref;
static int key_ref_cmp(const void *a, const void *b) {
  const key_ref *x = a, *y = b;
  size_t n = TG_MIN(x->len, y->len);
  int c = memcmp(x->s, y->s, n);
  if (c) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

/* The first duplicated key of an object, NULL when all are distinct. JSON allows duplicates, the format does not:
 * a reader that kept the last one would disagree with one that kept the first. Sorting makes this n log n. */
static const char *duplicate_key(const jnode *obj) {
  if (obj->n < 2) return NULL;
  key_ref *refs = tg_malloc(obj->n * sizeof *refs);
  for (size_t i = 0; i < obj->n; i++) refs[i] = (key_ref){obj->keys[i], obj->key_lens[i]};
  qsort(refs, obj->n, sizeof *refs, key_ref_cmp);
  const char *dup = NULL;
  for (size_t i = 1; i < obj->n && !dup; i++)
    if (key_ref_cmp(&refs[i - 1], &refs[i]) == 0) dup = refs[i].s;
  tg_free(refs);
  return dup;
}

static bool has_nul(const char *s, size_t len) { return memchr(s, 0, len) != NULL; }

/* One tensor entry: {"dtype": name, "shape": [ints], "data_offsets": [begin, end]} with end - begin exactly the byte
 * size of dtype and shape. */
static tg_status check_entry(const char *name, const jnode *v, st_entry *e) {
  if (v->kind != J_OBJECT) return st_error("tensor \"%s\": its header entry is not an object", name);
  const char *dup = duplicate_key(v);
  if (dup) return st_error("tensor \"%s\": duplicate field \"%s\"", name, dup);
  const jnode *dt = object_field(v, "dtype"), *sh = object_field(v, "shape"), *off = object_field(v, "data_offsets");
  if (!dt || !sh || !off) return st_error("tensor \"%s\": needs dtype, shape and data_offsets", name);
  if (dt->kind != J_STRING) return st_error("tensor \"%s\": dtype is not a string", name);
  e->name = name;
  e->dtype = nn_safe_dtype_from_name(dt->str, dt->str_len);
  if (e->dtype == TG_VOID) {
    char shown[32];
    snprintf(shown, sizeof shown, "%.*s", (int)TG_MIN(dt->str_len, (size_t)20), dt->str);
    return st_error("tensor \"%s\": unknown or unsupported dtype \"%s\"", name, has_nul(dt->str, dt->str_len) ? "?" : shown);
  }
  if (sh->kind != J_ARRAY) return st_error("tensor \"%s\": shape is not an array", name);
  if (sh->n > TG_MAX_DIMS) return st_error("tensor \"%s\": %zu dimensions (at most %d)", name, sh->n, TG_MAX_DIMS);
  e->ndim = (int)sh->n;
  /* the byte size of the shape, with every nonzero dim counted, must fit in int64 so no later index overflows */
  uint64_t bound = tg_dtype_itemsize(e->dtype), nbytes = bound;
  for (size_t i = 0; i < sh->n; i++) {
    uint64_t d;
    if (!json_u64(sh->kids[i], &d) || d > (uint64_t)INT64_MAX)
      return st_error("tensor \"%s\": shape[%zu] is not a non-negative integer", name, i);
    if (d > 1 && bound > (uint64_t)INT64_MAX / d) return st_error("tensor \"%s\": shape too large", name);
    if (d > 1) bound *= d;
    nbytes *= d;
    e->shape[i] = (int64_t)d;
  }
  if (off->kind != J_ARRAY || off->n != 2) return st_error("tensor \"%s\": data_offsets is not [begin, end]", name);
  if (!json_u64(off->kids[0], &e->begin) || !json_u64(off->kids[1], &e->end))
    return st_error("tensor \"%s\": data_offsets are not non-negative integers", name);
  if (e->end < e->begin) return st_error("tensor \"%s\": data_offsets end %llu before begin %llu", name,
                                         (unsigned long long)e->end, (unsigned long long)e->begin);
  if (e->end - e->begin != nbytes)
    return st_error("tensor \"%s\": data_offsets span %llu bytes but dtype and shape need %llu", name,
                    (unsigned long long)(e->end - e->begin), (unsigned long long)nbytes);
  return TG_OK;
}

static int entry_begin_cmp(const void *a, const void *b) {
  const st_entry *const *x = a, *const *y = b;
  if ((*x)->begin != (*y)->begin) return (*x)->begin < (*y)->begin ? -1 : 1;
  return (*x)->end < (*y)->end ? -1 : (*x)->end > (*y)->end;
}

/* Offsets in order must tile [0, data_len) exactly: no overlap, no gap, nothing past the end. */
static tg_status check_layout(st_entry *entries, size_t n, uint64_t data_len) {
  st_entry **order = tg_malloc((n ? n : 1) * sizeof *order);
  for (size_t i = 0; i < n; i++) order[i] = &entries[i];
  qsort(order, n, sizeof *order, entry_begin_cmp);
  tg_status st = TG_OK;
  uint64_t at = 0;
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    const st_entry *e = order[i];
    if (e->end > data_len)
      st = st_error("tensor \"%s\": data_offsets [%llu, %llu] past the end of the data (%llu bytes)", e->name,
                    (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)data_len);
    else if (e->begin != at)
      st = st_error("tensor \"%s\": data_offsets begin at %llu, expected %llu (%s)", e->name,
                    (unsigned long long)e->begin, (unsigned long long)at, e->begin < at ? "overlap" : "gap");
    at = e->end;
  }
  if (st == TG_OK && at != data_len)
    st = st_error("the tensors cover %llu bytes of data but the file has %llu", (unsigned long long)at,
                  (unsigned long long)data_len);
  tg_free(order);
  return st;
}

/* A bool byte other than 0 or 1 is refused: it would be a value no bool kernel expects (C's bool is 0 or 1). */
static tg_status check_bools(const st_entry *e, const uint8_t *data) {
  if (e->dtype != TG_BOOL) return TG_OK;
  for (uint64_t i = e->begin; i < e->end; i++)
    if (data[i] > 1) return st_error("tensor \"%s\": bool byte %llu is %u (must be 0 or 1)", e->name,
                                     (unsigned long long)(i - e->begin), data[i]);
  return TG_OK;
}

/* __metadata__: an object of string values (nothing else is allowed there), copied into the dict. */
static tg_status load_metadata(const jnode *m, tg_state_dict *sd) {
  if (m->kind != J_OBJECT) return st_error("__metadata__ is not an object");
  const char *dup = duplicate_key(m);
  if (dup) return st_error("__metadata__: duplicate key \"%s\"", dup);
  for (size_t i = 0; i < m->n; i++) {
    const jnode *v = m->kids[i];
    if (has_nul(m->keys[i], m->key_lens[i])) return st_error("__metadata__: key with a NUL character");
    if (v->kind != J_STRING) return st_error("__metadata__ \"%s\": value is not a string", m->keys[i]);
    if (has_nul(v->str, v->str_len)) return st_error("__metadata__ \"%s\": value with a NUL character", m->keys[i]);
    tg_status st = tg_state_dict_set_metadata(sd, m->keys[i], v->str);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

/* tinygrad safe_load over bytes in memory: length, header, every check, then one device buffer per tensor copied
 * from the data (the input buffer may be freed after the call). Fails as a whole: no partial dict comes back. */
tg_status tg_safe_load_buffer(const void *data, size_t size, tg_state_dict **out) {
  if (!out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_load_buffer: NULL out");
  *out = NULL;
  if (!data && size) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_load_buffer: NULL data");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return tg_set_error(TG_ERR_UNSUPPORTED, "safetensors: big-endian hosts are not supported");
#endif
  const uint8_t *bytes = data;
  if (size < 8) return st_error("file of %zu bytes is too short for the 8-byte header length", size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | bytes[i];
  if (n > ST_MAX_HEADER) return st_error("header length %llu is over the limit of %llu bytes", (unsigned long long)n,
                                         (unsigned long long)ST_MAX_HEADER);
  if (n > size - 8) return st_error("header length %llu but only %zu bytes follow (truncated?)", (unsigned long long)n,
                                    size - 8);
  jparser p = {(const char *)bytes + 8, (size_t)n, 0, 0, {0}};
  jnode *root = parse_value(&p, 0);
  if (root) {
    skip_ws(&p);
    if (p.pos != p.len) { jfail(&p, "trailing characters after the header object"); jnode_free(root); root = NULL; }
  }
  if (!root) return st_error("%s", p.err);
  tg_status st = TG_OK;
  tg_state_dict *sd = NULL;
  st_entry *entries = NULL;
  size_t nentries = 0;
  const char *dup;
  if (root->kind != J_OBJECT) { st = st_error("the header is not a JSON object"); goto done; }
  if ((dup = duplicate_key(root))) { st = st_error("duplicate tensor name \"%s\"", dup); goto done; }
  sd = tg_state_dict_new();
  entries = tg_malloc((root->n ? root->n : 1) * sizeof *entries);
  for (size_t i = 0; i < root->n && st == TG_OK; i++) {
    const char *key = root->keys[i];
    if (strcmp(key, "__metadata__") == 0 && root->key_lens[i] == strlen("__metadata__")) {
      st = load_metadata(root->kids[i], sd);
      continue;
    }
    if (has_nul(key, root->key_lens[i])) { st = st_error("tensor name with a NUL character"); break; }
    st = check_entry(key, root->kids[i], &entries[nentries]);
    if (st == TG_OK) nentries++;
  }
  const uint8_t *payload = bytes + 8 + n;
  uint64_t data_len = (uint64_t)size - 8 - n;
  if (st == TG_OK) st = check_layout(entries, nentries, data_len);
  for (size_t i = 0; i < nentries && st == TG_OK; i++) st = check_bools(&entries[i], payload);
  /* the tensors are made in a scope of their own: the dict keeps its references, the scope drops the creators' */
  tg_scope s = tg_scope_begin();
  for (size_t i = 0; i < nentries && st == TG_OK; i++) {
    const st_entry *e = &entries[i];
    tg_tensor *t = tg_from_data(payload + e->begin, e->dtype, e->shape, (size_t)e->ndim);
    if (!t) { st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_IO; break; }
    st = tg_state_dict_add(sd, e->name, t, true);
  }
  tg_scope_end(s);
done:
  tg_free(entries);
  jnode_free(root);
  if (st != TG_OK) { tg_state_dict_free(sd); return st; }
  *out = sd;
  return TG_OK;
}

/* The file is read whole (fread with doubling, no stat: pipes and /proc files work too) and parsed from memory. */
tg_status tg_safe_load(const char *path, tg_state_dict **out) {
  if (!out || !path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_load: NULL argument");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return tg_set_error(TG_ERR_IO, "tg_safe_load: cannot open %s: %s", path, strerror(errno));
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  tg_status st = TG_OK;
  for (;;) {
    if (len == cap) {
      size_t nc = cap ? cap * 2 : 1 << 16;
      uint8_t *nb = nc > cap ? realloc(buf, nc) : NULL;
      if (!nb) { st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_safe_load: %s is too large to read", path); break; }
      buf = nb;
      cap = nc;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) st = tg_set_error(TG_ERR_IO, "tg_safe_load: read error on %s", path);
      break;
    }
  }
  fclose(f);
  if (st == TG_OK) st = tg_safe_load_buffer(buf, len, out);
  free(buf);
  return st;
}

/* ------------------------------------------------------------------------------------------------- writing */

/* JSON string escaping for names and metadata (validated as UTF-8 before): quotes, backslashes, control characters. */
static void put_json_string(StrBuf *b, const char *s) {
  sb_putc(b, '"');
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') { sb_putc(b, '\\'); sb_putc(b, (char)*c); }
    else if (*c < 0x20) sb_printf(b, "\\u%04x", *c);
    else sb_putc(b, (char)*c);
  }
  sb_putc(b, '"');
}

/* tinygrad safe_save: the header lists the tensors in the dict's order with contiguous offsets, padded with spaces to
 * a multiple of 8 (so the data is 8-byte aligned, as the reference writer does), then each tensor's bytes as
 * tg_to_host gives them (which realizes it). */
tg_status tg_safe_save_buffer(const tg_state_dict *sd, uint8_t **out, size_t *size) {
  if (!sd || !out || !size) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_save: NULL argument");
  *out = NULL;
  *size = 0;
  size_t n = tg_state_dict_len(sd);
  uint64_t *nbytes = tg_malloc((n ? n : 1) * sizeof *nbytes);
  tg_status st = TG_OK;
  StrBuf h;
  sb_init(&h);
  sb_putc(&h, '{');
  bool first = true;
  if (tg_state_dict_metadata_len(sd)) {
    sb_puts(&h, "\"__metadata__\":{");
    for (size_t i = 0; i < tg_state_dict_metadata_len(sd); i++) {
      const char *k = tg_state_dict_metadata_key(sd, i), *v = tg_state_dict_metadata(sd, k);
      if (!tg_utf8_valid(k, strlen(k)) || !tg_utf8_valid(v, strlen(v))) {
        st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_save: metadata \"%s\" is not valid UTF-8", k);
        break;
      }
      if (i) sb_putc(&h, ',');
      put_json_string(&h, k);
      sb_putc(&h, ':');
      put_json_string(&h, v);
    }
    sb_putc(&h, '}');
    first = false;
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    const char *name = tg_state_dict_name(sd, i);
    tg_tensor *t = tg_state_dict_tensor(sd, i);
    const char *dn = nn_safe_dtype_name(tg_get_dtype(t));
    if (!dn) {
      st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_save: \"%s\" has dtype %s, which safetensors cannot hold%s",
                        name, tg_dtype_name(tg_get_dtype(t)),
                        tg_get_dtype(t) == TG_WEAKINT || tg_get_dtype(t) == TG_WEAKFLOAT ? " (a weak scalar)" : "");
      break;
    }
    if (strcmp(name, "__metadata__") == 0 || !tg_utf8_valid(name, strlen(name))) {
      st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_save: \"%s\" is not a valid tensor name", name);
      break;
    }
    nbytes[i] = (uint64_t)tg_numel(t) * tg_dtype_itemsize(tg_get_dtype(t));
    if (!first) sb_putc(&h, ',');
    first = false;
    put_json_string(&h, name);
    sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dn);
    for (int d = 0; d < tg_ndim(t); d++) sb_printf(&h, "%s%lld", d ? "," : "", (long long)tg_shape(t)[d]);
    sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
              (unsigned long long)(offset + nbytes[i]));
    offset += nbytes[i];
  }
  sb_putc(&h, '}');
  while (h.len % 8) sb_putc(&h, ' ');
  if (st == TG_OK) {
    size_t total = 8 + h.len + (size_t)offset;
    uint8_t *buf = malloc(total ? total : 1);
    if (!buf) st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "tg_safe_save: cannot allocate %zu bytes", total);
    else {
      uint64_t hl = h.len;
      for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
      memcpy(buf + 8, h.s, h.len);
      uint8_t *at = buf + 8 + h.len;
      for (size_t i = 0; i < n && st == TG_OK; i++) {
        st = tg_to_host(tg_state_dict_tensor(sd, i), at, (size_t)nbytes[i]);
        at += nbytes[i];
      }
      if (st == TG_OK) {
        /* tg_buffer_free releases with tg_free; both are the C allocator */
        *out = buf;
        *size = total;
      } else free(buf);
    }
  }
  sb_free(&h);
  tg_free(nbytes);
  return st;
}

/* Written from one buffer: a failed build leaves no file; a short write or a failed close is an error. */
tg_status tg_safe_save(const tg_state_dict *sd, const char *path) {
  if (!path) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_safe_save: NULL path");
  uint8_t *buf;
  size_t size;
  tg_status st = tg_safe_save_buffer(sd, &buf, &size);
  if (st != TG_OK) return st;
  FILE *f = fopen(path, "wb");
  if (!f) st = tg_set_error(TG_ERR_IO, "tg_safe_save: cannot create %s: %s", path, strerror(errno));
  else {
    if (fwrite(buf, 1, size, f) != size) st = tg_set_error(TG_ERR_IO, "tg_safe_save: write error on %s", path);
    if (fclose(f) != 0 && st == TG_OK) st = tg_set_error(TG_ERR_IO, "tg_safe_save: write error on %s", path);
  }
  free(buf);
  return st;
}
