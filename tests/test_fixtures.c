/* test_fixtures.c — the golden-fixture reader (fixture.h) and SUITE(fixtures), its self-check: every fixture file
 * parses, names are unique, every op is one the parity harness knows with a sensible arity, views and shapes agree
 * (elementwise outputs have the broadcast shape of their inputs, casts the requested dtype), and corrupted images are
 * rejected with an error instead of crashing. */
#include <errno.h>
#include <stdlib.h>

#include "fixture.h"
#include "test.h"

const char *const tf_groups[] = {"unary", "binary", "cast", "reduce", "movement", "nn", "creation"};
const size_t tf_ngroups = sizeof tf_groups / sizeof tf_groups[0];

static const char *const dtype_names[TF_DTYPE_COUNT] = {"bool",   "int8",   "uint8",   "int16",    "uint16",
                                                        "int32",  "uint32", "int64",   "uint64",   "float16",
                                                        "bfloat16", "float32", "float64"};
static const size_t dtype_sizes[TF_DTYPE_COUNT] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};

size_t tf_itemsize(tf_dtype d) { return (unsigned)d < TF_DTYPE_COUNT ? dtype_sizes[d] : 0; }
const char *tf_dtype_name(tf_dtype d) { return (unsigned)d < TF_DTYPE_COUNT ? dtype_names[d] : "?"; }
bool tf_is_float(tf_dtype d) { return d == TF_FLOAT16 || d == TF_BFLOAT16 || d == TF_FLOAT32 || d == TF_FLOAT64; }
bool tf_dtype_from_name(const char *name, tf_dtype *out) {
  for (int i = 0; i < TF_DTYPE_COUNT; i++)
    if (strcmp(name, dtype_names[i]) == 0) {
      *out = (tf_dtype)i;
      return true;
    }
  return false;
}

/* ------------------------------------------------------------------------------------------------ parsing */
typedef struct reader {
  const uint8_t *p, *end;
  char *arena, *arena_end;
  char *err;
  size_t errlen;
  bool failed;
} reader;

static bool fail(reader *r, const char *what) {
  if (!r->failed) snprintf(r->err, r->errlen, "malformed fixture: %s", what);
  r->failed = true;
  return false;
}
static bool take(reader *r, void *out, size_t n, const char *what) {
  if (r->failed) return false;
  if ((size_t)(r->end - r->p) < n) return fail(r, what);
  memcpy(out, r->p, n); /* the files are little-endian, like every machine this runs on */
  r->p += n;
  return true;
}
static const char *take_str(reader *r, const char *what) {
  uint16_t len = 0;
  if (!take(r, &len, 2, what)) return "";
  if ((size_t)(r->end - r->p) < len || (size_t)(r->arena_end - r->arena) < (size_t)len + 1) {
    fail(r, what);
    return "";
  }
  for (uint16_t i = 0; i < len; i++)
    if (r->p[i] < 0x20 || r->p[i] > 0x7e) {
      fail(r, what);
      return "";
    }
  char *s = r->arena;
  memcpy(s, r->p, len);
  s[len] = 0;
  r->arena += len + 1;
  r->p += len;
  return s;
}
static bool take_tensor(reader *r, tf_tensor *t, const char *what) {
  uint8_t dt = 0, ndim = 0;
  t->view = take_str(r, what);
  if (!take(r, &dt, 1, what) || !take(r, &ndim, 1, what)) return false;
  if (dt >= TF_DTYPE_COUNT) return fail(r, "unknown dtype code");
  if (ndim > TF_MAX_DIMS) return fail(r, "too many dims");
  t->dtype = (tf_dtype)dt;
  t->ndim = ndim;
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    if (!take(r, &t->shape[i], 8, what)) return false;
    if (t->shape[i] < 0 || t->shape[i] > (int64_t)1 << 32) return fail(r, "bad dim size");
    if (t->shape[i] && numel > INT64_MAX / 8 / t->shape[i]) return fail(r, "shape too large");
    numel *= t->shape[i];
  }
  t->numel = numel;
  if (!take(r, &t->nbytes, 8, what)) return false;
  if (t->nbytes != (uint64_t)numel * dtype_sizes[dt]) return fail(r, "data size does not match shape and dtype");
  if ((uint64_t)(r->end - r->p) < t->nbytes) return fail(r, "data past the end");
  t->data = r->p;
  r->p += t->nbytes;
  return true;
}

void tf_free(tf_file *f) {
  if (!f) return;
  free(f->buf);
  free(f->strings);
  free(f->cases);
  memset(f, 0, sizeof *f);
}

bool tf_parse(uint8_t *buf, size_t size, tf_file *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->buf = buf;
  out->size = size;
  /* every string costs at least its 2-byte length in the file, so the arena never needs more than the file size
   * plus one terminator per 2 bytes */
  out->strings = malloc(size + size / 2 + 1);
  reader r = {buf, buf + size, out->strings, out->strings ? out->strings + size + size / 2 + 1 : NULL, err, errlen,
              false};
  if (!out->strings) return fail(&r, "out of memory");
  char magic[4];
  uint32_t version = 0, ncases = 0;
  if (!take(&r, magic, 4, "header") || memcmp(magic, "TGFX", 4) != 0) return fail(&r, "bad magic");
  if (!take(&r, &version, 4, "header") || version != 1) return fail(&r, "unsupported version");
  if (!take(&r, &ncases, 4, "header")) return false;
  if ((size_t)ncases > size / 16) return fail(&r, "case count larger than the file can hold");
  out->cases = calloc(ncases ? ncases : 1, sizeof *out->cases);
  if (!out->cases) return fail(&r, "out of memory");
  for (uint32_t ci = 0; ci < ncases; ci++) {
    tf_case *c = &out->cases[ci];
    uint32_t nbytes = 0;
    if (!take(&r, &nbytes, 4, "case size")) return false;
    if ((size_t)(r.end - r.p) < nbytes) return fail(&r, "case past the end");
    const uint8_t *case_end = r.p + nbytes, *file_end = r.end;
    r.end = case_end; /* nothing of a case may read past its declared size */
    c->name = take_str(&r, "case name");
    c->op = take_str(&r, "op name");
    c->params = take_str(&r, "params");
    uint8_t nin = 0, nout = 0;
    take(&r, &c->atol, 8, "atol");
    take(&r, &c->rtol, 8, "rtol");
    take(&r, &c->flags, 4, "flags");
    if (!take(&r, &nin, 1, "input count")) return false;
    if (nin > TF_MAX_TENSORS) return fail(&r, "too many inputs");
    c->ninputs = nin;
    for (int i = 0; i < nin; i++)
      if (!take_tensor(&r, &c->inputs[i], "input")) return false;
    if (!take(&r, &nout, 1, "output count")) return false;
    if (nout == 0 || nout > TF_MAX_TENSORS) return fail(&r, "bad output count");
    c->noutputs = nout;
    for (int i = 0; i < nout; i++) {
      if (!take_tensor(&r, &c->outputs[i], "output")) return false;
      if (c->outputs[i].view[0]) return fail(&r, "an output has a view");
    }
    if (r.p != case_end) return fail(&r, "case size does not match its contents");
    if (!*c->name || !*c->op) return fail(&r, "empty case or op name");
    if (!(c->atol >= 0 && c->atol < 1 && c->rtol >= 0 && c->rtol < 1)) return fail(&r, "bad tolerance");
    r.end = file_end;
    out->ncases++;
  }
  if (r.p != r.end) return fail(&r, "trailing bytes after the last case");
  return true;
}

bool tf_load(const char *path, tf_file *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return false;
  }
  uint8_t *buf = NULL;
  size_t size = 0, cap = 0, n;
  do {
    if (size == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        snprintf(err, errlen, "out of memory reading %s", path);
        return false;
      }
      buf = nb;
    }
    n = fread(buf + size, 1, cap - size, f);
    size += n;
  } while (n > 0);
  fclose(f);
  return tf_parse(buf, size, out, err, errlen);
}

const char *tf_dir(void) {
  static char dir[1024];
  const char *env = getenv("TG_FIXTURES_DIR");
  if (env && *env) return env;
  FILE *probe = fopen("tests/fixtures/unary.tgf", "rb");
  if (probe) {
    fclose(probe);
    return "tests/fixtures";
  }
  /* __FILE__ is tests/test_fixtures.c relative to the build's working directory, or absolute */
  snprintf(dir, sizeof dir, "%s", __FILE__);
  char *slash = strrchr(dir, '/');
  if (!slash) return "tests/fixtures";
  snprintf(slash + 1, sizeof dir - (size_t)(slash + 1 - dir), "fixtures");
  return dir;
}

/* ------------------------------------------------------------------------------------------------ parameters */
static bool find_param(const char *params, const char *key, const char **val, size_t *len) {
  size_t klen = strlen(key);
  const char *p = params;
  while (*p) {
    const char *end = strchr(p, ';');
    if (!end) end = p + strlen(p);
    if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
      *val = p + klen + 1;
      *len = (size_t)(end - *val);
      return true;
    }
    p = *end ? end + 1 : end;
  }
  return false;
}

bool tf_param_str(const tf_case *c, const char *key, char *out, size_t outlen) {
  const char *v;
  size_t len;
  if (!find_param(c->params, key, &v, &len) || len + 1 > outlen) return false;
  memcpy(out, v, len);
  out[len] = 0;
  return true;
}
bool tf_param_double(const tf_case *c, const char *key, double *out) {
  char buf[64], *end;
  if (!tf_param_str(c, key, buf, sizeof buf) || !buf[0]) return false;
  *out = strtod(buf, &end);
  return *end == 0;
}
bool tf_param_int(const tf_case *c, const char *key, int64_t *out) {
  size_t n = 0;
  return tf_param_ints(c, key, out, 1, &n) && n == 1;
}
bool tf_param_ints(const tf_case *c, const char *key, int64_t *out, size_t max, size_t *n) {
  char buf[256];
  *n = 0;
  if (!tf_param_str(c, key, buf, sizeof buf) || !buf[0]) return false;
  char *p = buf;
  for (;;) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || *n >= max) return false;
    out[(*n)++] = v;
    if (*end == 0) return true;
    if (*end != ',') return false;
    p = end + 1;
  }
}
bool tf_param_is_float(const tf_case *c, const char *key) {
  char buf[64];
  if (!tf_param_str(c, key, buf, sizeof buf)) return false;
  return strpbrk(buf, ".eEn") != NULL; /* "2.5", "1e-05", "inf", "nan" */
}

int tf_parse_view(const char *view, tf_view_op *ops, int max_ops) {
  int n = 0;
  const char *p = view;
  while (*p) {
    if (n >= max_ops) return -1;
    tf_view_op *op = &ops[n++];
    const char *colon = strchr(p, ':');
    if (!colon || (size_t)(colon - p) >= sizeof op->name) return -1;
    memcpy(op->name, p, (size_t)(colon - p));
    op->name[colon - p] = 0;
    op->nargs = 0;
    const char *q = colon + 1;
    for (;;) {
      char *end;
      long long v = strtoll(q, &end, 10);
      if (end == q || op->nargs >= 2 * TF_MAX_DIMS) return -1;
      op->args[op->nargs++] = v;
      q = end;
      if (*q == ',' || (*q == ':' && strcmp(op->name, "shrink") == 0)) {
        q++;
        continue;
      }
      break;
    }
    if (*q == ';') q++;
    else if (*q) return -1;
    p = q;
  }
  return n;
}

/* ------------------------------------------------------------------------------------------------ values */
static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = ldexp(mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}
double tf_get_double(tf_dtype d, const void *data, int64_t i) {
  const uint8_t *p = (const uint8_t *)data + (size_t)i * dtype_sizes[d];
  union {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
    float f32; double f64;
  } v;
  memcpy(&v, p, dtype_sizes[d]);
  switch (d) {
  case TF_BOOL: return v.u8 != 0;
  case TF_INT8: return v.i8;
  case TF_UINT8: return v.u8;
  case TF_INT16: return v.i16;
  case TF_UINT16: return v.u16;
  case TF_INT32: return v.i32;
  case TF_UINT32: return v.u32;
  case TF_INT64: return (double)v.i64;
  case TF_UINT64: return (double)v.u64;
  case TF_FLOAT16: return half_to_double(v.u16);
  case TF_BFLOAT16: return bits_to_float((uint32_t)v.u16 << 16);
  case TF_FLOAT32: return v.f32;
  case TF_FLOAT64: return v.f64;
  }
  return NAN;
}

/* ------------------------------------------------------------------------------------------------ the suite */
/* Every op of the fixtures, with its input count range (creation ops take none). */
static const struct { const char *op; int min_in, max_in; } known_ops[] = {
    {"neg", 1, 1}, {"abs", 1, 1}, {"sign", 1, 1}, {"exp", 1, 1}, {"exp2", 1, 1}, {"log", 1, 1}, {"log2", 1, 1},
    {"log10", 1, 1}, {"sqrt", 1, 1}, {"rsqrt", 1, 1}, {"reciprocal", 1, 1}, {"sin", 1, 1}, {"cos", 1, 1},
    {"tan", 1, 1}, {"asin", 1, 1}, {"acos", 1, 1}, {"atan", 1, 1}, {"sinh", 1, 1}, {"cosh", 1, 1}, {"tanh", 1, 1},
    {"asinh", 1, 1}, {"acosh", 1, 1}, {"atanh", 1, 1}, {"trunc", 1, 1}, {"floor", 1, 1}, {"ceil", 1, 1},
    {"round", 1, 1}, {"isnan", 1, 1}, {"isinf", 1, 1}, {"isfinite", 1, 1}, {"square", 1, 1}, {"logical_not", 1, 1},
    {"bitwise_not", 1, 1}, {"relu", 1, 1}, {"relu6", 1, 1}, {"sigmoid", 1, 1}, {"logsigmoid", 1, 1},
    {"hardsigmoid", 1, 1}, {"hardswish", 1, 1}, {"hardtanh", 1, 1}, {"gelu", 1, 1}, {"quick_gelu", 1, 1},
    {"silu", 1, 1}, {"swish", 1, 1}, {"mish", 1, 1}, {"softsign", 1, 1}, {"erf", 1, 1}, {"celu", 1, 1},
    {"selu", 1, 1}, {"elu", 1, 1}, {"leaky_relu", 1, 1}, {"softplus", 1, 1},
    {"add", 1, 2}, {"sub", 1, 2}, {"mul", 1, 2}, {"div", 1, 2}, {"div_round", 2, 2}, {"mod", 1, 2}, {"fmod", 2, 2},
    {"pow", 1, 2}, {"maximum", 1, 2}, {"minimum", 1, 2}, {"lt", 1, 2}, {"le", 1, 2}, {"gt", 1, 2}, {"ge", 1, 2},
    {"eq", 1, 2}, {"ne", 1, 2}, {"bitwise_and", 1, 2}, {"bitwise_or", 1, 2}, {"bitwise_xor", 1, 2},
    {"lshift", 1, 2}, {"rshift", 1, 2}, {"copysign", 2, 2}, {"logaddexp", 2, 2}, {"where", 3, 3}, {"lerp", 3, 3},
    {"masked_fill", 2, 2}, {"clamp", 1, 1}, {"cast", 1, 1}, {"bitcast", 1, 1}, {"contiguous", 1, 1},
    {"sum", 1, 1}, {"prod", 1, 1}, {"max", 1, 1}, {"min", 1, 1}, {"mean", 1, 1}, {"var", 1, 1}, {"std", 1, 1},
    {"any", 1, 1}, {"all", 1, 1}, {"argmax", 1, 1}, {"argmin", 1, 1}, {"cumsum", 1, 1}, {"logsumexp", 1, 1},
    {"softmax", 1, 1}, {"log_softmax", 1, 1},
    {"reshape", 1, 1}, {"permute", 1, 1}, {"transpose", 1, 1}, {"expand", 1, 1}, {"pad", 1, 1}, {"shrink", 1, 1},
    {"flip", 1, 1}, {"squeeze", 1, 1}, {"unsqueeze", 1, 1}, {"flatten", 1, 1}, {"slice", 1, 1}, {"cat", 1, 8},
    {"stack", 1, 8}, {"repeat", 1, 1}, {"split", 1, 1}, {"chunk", 1, 1}, {"gather", 2, 2}, {"index", 2, 2}, {"assign", 2, 2}, {"one_hot", 1, 1},
    {"matmul", 2, 2}, {"dot", 2, 2}, {"conv2d", 2, 3}, {"max_pool2d", 1, 1}, {"avg_pool2d", 1, 1},
    {"zeros", 0, 0}, {"ones", 0, 0}, {"full", 0, 0}, {"full_like", 1, 1}, {"zeros_like", 1, 1},
    {"ones_like", 1, 1}, {"arange", 0, 0}, {"linspace", 0, 0}, {"eye", 0, 0},
};
#define NKNOWN (sizeof known_ops / sizeof known_ops[0])

static int known_index(const char *op) {
  for (size_t i = 0; i < NKNOWN; i++)
    if (strcmp(known_ops[i].op, op) == 0) return (int)i;
  return -1;
}

/* The shape an input has after its view ops; false when a view op does not fit the shape. */
static bool view_shape(const tf_tensor *t, int64_t *shape, int *ndim) {
  tf_view_op ops[8];
  int n = tf_parse_view(t->view, ops, 8);
  if (n < 0) return false;
  *ndim = t->ndim;
  memcpy(shape, t->shape, sizeof t->shape);
  for (int i = 0; i < n; i++) {
    const tf_view_op *op = &ops[i];
    int64_t tmp[TF_MAX_DIMS];
    if (strcmp(op->name, "permute") == 0) {
      if ((int)op->nargs != *ndim) return false;
      bool seen[TF_MAX_DIMS] = {false};
      for (int d = 0; d < *ndim; d++) {
        if (op->args[d] < 0 || op->args[d] >= *ndim || seen[op->args[d]]) return false;
        seen[op->args[d]] = true;
        tmp[d] = shape[op->args[d]];
      }
      memcpy(shape, tmp, sizeof(int64_t) * (size_t)*ndim);
    } else if (strcmp(op->name, "flip") == 0) {
      for (size_t k = 0; k < op->nargs; k++)
        if (op->args[k] < 0 || op->args[k] >= *ndim) return false;
    } else if (strcmp(op->name, "shrink") == 0) {
      if ((int)op->nargs != 2 * *ndim) return false;
      for (int d = 0; d < *ndim; d++) {
        int64_t b = op->args[2 * d], e = op->args[2 * d + 1];
        if (b < 0 || e < b || e > shape[d]) return false;
        shape[d] = e - b;
      }
    } else if (strcmp(op->name, "expand") == 0) {
      if ((int)op->nargs != *ndim) return false;
      for (int d = 0; d < *ndim; d++) {
        if (shape[d] != 1 && shape[d] != op->args[d]) return false;
        shape[d] = op->args[d];
      }
    } else {
      return false;
    }
  }
  return true;
}

/* numpy broadcasting of the inputs' (viewed) shapes */
static bool broadcast_shape(const tf_case *c, int64_t *shape, int *ndim) {
  *ndim = 0;
  for (int i = 0; i < c->ninputs; i++) {
    int64_t s[TF_MAX_DIMS];
    int nd;
    if (!view_shape(&c->inputs[i], s, &nd)) return false;
    int out_nd = nd > *ndim ? nd : *ndim;
    int64_t res[TF_MAX_DIMS];
    for (int d = 0; d < out_nd; d++) {
      int da = d - (out_nd - *ndim), db = d - (out_nd - nd);
      int64_t a = da >= 0 ? shape[da] : 1, b = db >= 0 ? s[db] : 1;
      if (a != b && a != 1 && b != 1) return false;
      res[d] = a == 1 ? b : a;
    }
    memcpy(shape, res, sizeof(int64_t) * (size_t)out_nd);
    *ndim = out_nd;
  }
  return true;
}

static bool is_elementwise(const char *group, const char *op) {
  if (strcmp(group, "unary") == 0) return true;
  return strcmp(group, "binary") == 0 && strcmp(op, "clamp") != 0;
}

/* Checks one case's internal consistency; returns a reason or NULL. */
static const char *case_problem(const char *group, const tf_case *c) {
  int k = known_index(c->op);
  if (k < 0) return "unknown op";
  if (c->ninputs < known_ops[k].min_in || c->ninputs > known_ops[k].max_in) return "wrong number of inputs";
  bool scalar = strstr(c->params, "scalar=") != NULL;
  if (known_ops[k].min_in == 1 && known_ops[k].max_in == 2 && (c->ninputs == 1) != scalar)
    return "a binary op needs two inputs or a scalar";
  for (int i = 0; i < c->ninputs; i++) {
    int64_t s[TF_MAX_DIMS];
    int nd;
    if (!view_shape(&c->inputs[i], s, &nd)) return "a view does not fit its input";
  }
  bool multi = strcmp(c->op, "split") == 0 || strcmp(c->op, "chunk") == 0;
  if (!multi && c->noutputs != 1) return "more than one output";
  if (is_elementwise(group, c->op)) {
    int64_t s[TF_MAX_DIMS];
    int nd;
    if (!broadcast_shape(c, s, &nd)) return "inputs do not broadcast";
    const tf_tensor *o = &c->outputs[0];
    if (nd != o->ndim || memcmp(s, o->shape, sizeof(int64_t) * (size_t)nd) != 0)
      return "output shape is not the broadcast shape";
  }
  if (strcmp(c->op, "cast") == 0 || strcmp(c->op, "bitcast") == 0) {
    char name[32];
    tf_dtype want;
    if (!tf_param_str(c, "dtype", name, sizeof name) || !tf_dtype_from_name(name, &want)) return "cast without dtype";
    if (c->outputs[0].dtype != want) return "cast output has the wrong dtype";
    if (c->op[0] == 'c' ? c->outputs[0].numel != c->inputs[0].numel : c->outputs[0].nbytes != c->inputs[0].nbytes)
      return "a cast changes the element count, or a bitcast the byte count";
  }
  if (strcmp(c->op, "contiguous") == 0 &&
      (c->outputs[0].dtype != c->inputs[0].dtype || c->outputs[0].numel > c->inputs[0].numel * 64))
    return "contiguous changes the dtype";
  bool any_float = false;
  for (int i = 0; i < c->noutputs; i++) any_float |= tf_is_float(c->outputs[i].dtype);
  if (any_float && !(c->rtol > 0)) return "a float output without a relative tolerance";
  return NULL;
}

/* a corrupted copy of a good image must be rejected (or, for changes inside data bytes, still parse) without a crash */
static void check_corruptions(const uint8_t *good, size_t size) {
  char err[256];
  uint8_t *copy;
  tf_file f;
  /* truncations: every prefix up to 300 bytes, then a spread of longer ones */
  size_t step = size / 97 + 1;
  int truncated_ok = 1;
  for (size_t len = 0; len < size; len += len < 300 ? 1 : step) {
    copy = malloc(len ? len : 1);
    memcpy(copy, good, len);
    if (tf_parse(copy, len, &f, err, sizeof err)) truncated_ok = 0;
    tf_free(&f);
  }
  CHECK_MSG(truncated_ok, "a truncated fixture parsed");
  /* trailing garbage */
  copy = malloc(size + 3);
  memcpy(copy, good, size);
  memcpy(copy + size, "xyz", 3);
  CHECK(!tf_parse(copy, size + 3, &f, err, sizeof err) && strstr(err, "trailing"));
  tf_free(&f);
  /* bad magic, bad version, a huge case count, a case size past the end */
  const struct { size_t off; uint32_t val; const char *msg; } pokes[] = {
      {0, 0x58464754u ^ 1u, "magic"}, {4, 2, "version"}, {8, 0xffffffffu, "case count"}, {12, 0x7fffffffu, "past"}};
  for (size_t i = 0; i < sizeof pokes / sizeof pokes[0]; i++) {
    copy = malloc(size);
    memcpy(copy, good, size);
    memcpy(copy + pokes[i].off, &pokes[i].val, 4);
    bool ok = tf_parse(copy, size, &f, err, sizeof err);
    CHECK_MSG(!ok && strstr(err, pokes[i].msg), "poke %s: %s", pokes[i].msg, ok ? "parsed" : err);
    tf_free(&f);
  }
  /* every single byte of the first 400 set to 0xff: parse or reject, never crash (ASan watches) */
  size_t limit = size < 400 ? size : 400;
  int rejected = 0;
  for (size_t i = 0; i < limit; i++) {
    copy = malloc(size);
    memcpy(copy, good, size);
    copy[i] = 0xff;
    rejected += !tf_parse(copy, size, &f, err, sizeof err);
    tf_free(&f);
  }
  CHECK_MSG(rejected > 0, "no single-byte corruption was caught");
}

void suite_fixtures(void);
void suite_fixtures(void) {
  const char *dir = tf_dir();
  size_t total = 0, flagged = 0, per_group[16] = {0};
  int op_counts[NKNOWN];
  memset(op_counts, 0, sizeof op_counts);
  /* names must be unique over all files: keep them all */
  const char **names = NULL;
  size_t nnames = 0, cap = 0;
  tf_file files[16];
  for (size_t g = 0; g < tf_ngroups; g++) {
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/%s.tgf", dir, tf_groups[g]);
    bool ok = tf_load(path, &files[g], err, sizeof err);
    CHECK_MSG(ok, "%s: %s", path, err);
    if (!ok) continue;
    per_group[g] = files[g].ncases;
    CHECK_MSG(files[g].ncases > 0, "%s has no cases", path);
    for (size_t i = 0; i < files[g].ncases; i++) {
      const tf_case *c = &files[g].cases[i];
      const char *why = case_problem(tf_groups[g], c);
      CHECK_MSG(!why, "%s/%s (%s %s): %s", tf_groups[g], c->name, c->op, c->params, why);
      int k = known_index(c->op);
      if (k >= 0) op_counts[k]++;
      flagged += (c->flags & TF_FLAG_TINYGRAD) != 0;
      if (nnames == cap) {
        cap = cap ? 2 * cap : 1024;
        const char **nn = realloc(names, cap * sizeof *names);
        if (!nn) break;
        names = nn;
      }
      names[nnames++] = c->name;
    }
    total += files[g].ncases;
  }
  /* uniqueness (quadratic is fine for ~1,200 names) */
  size_t dups = 0;
  for (size_t i = 0; i < nnames; i++)
    for (size_t j = i + 1; j < nnames; j++) dups += strcmp(names[i], names[j]) == 0;
  CHECK_EQ_INT(dups, 0);
  CHECK_MSG(total >= 400, "only %zu fixture cases (the issue asks for at least 400)", total);
  size_t missing = 0;
  for (size_t k = 0; k < NKNOWN; k++)
    if (!op_counts[k]) {
      missing++;
      fprintf(stderr, "  fixtures: no case for op %s\n", known_ops[k].op);
    }
  CHECK_EQ_INT(missing, 0);
  /* the reader must reject damage to a real file */
  for (size_t g = 0; g < tf_ngroups; g++) {
    if (strcmp(tf_groups[g], "creation") != 0 || !files[g].buf) continue;
    check_corruptions(files[g].buf, files[g].size);
  }
  printf("fixtures: %zu cases in %zu files (", total, tf_ngroups);
  for (size_t g = 0; g < tf_ngroups; g++) printf("%s%s %zu", g ? ", " : "", tf_groups[g], per_group[g]);
  printf("), %zu ops, %zu with tinygrad-specific semantics\n", NKNOWN, flagged);
  free(names);
  for (size_t g = 0; g < tf_ngroups; g++) tf_free(&files[g]);
}
