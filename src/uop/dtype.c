/* dtype.c — dtypes (the scalar table of dtype.def, interned vectors and pointers, names), tinygrad's promotion
 * lattice and env knobs, and constants: putting a value on a dtype's grid (dtype.const + truncate), bitcasts, the
 * float16 / bfloat16 / fp8 conversions, and constant evaluation of every ALU op (tinygrad's exec_alu).
 *
 * Names of derived dtypes (tinygrad's old repr without "dtypes."):
 *   vector   "float.vec(4)"
 *   pointer  "float.ptr(16)" (GLOBAL), "float.ptr(-1)" (size unknown), "float.vec(4).ptr(8, AddrSpace.LOCAL)"
 * dt_by_name parses these back, so dt_by_name(d->name) == d for every dtype.
 *
 * Constant arithmetic follows Python: a value is an exact integer or a double, each op computes what Python's
 * operator computes on it, and the result is then put on the dtype's grid. Where tinygrad's Python raises (int(nan),
 * 2**-1 at an int dtype, float overflow in pow, shifts by negative amounts) we answer CK_NONE: "cannot fold". */
#include "uop.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================================================================================
 * The scalar table
 * ================================================================================================================ */

const DType tg_dtype_table[TG_DTYPE_COUNT] = {
#define DT(ident, nm, prio, bits, cnm, knd)                                                                    \
  [TG_##ident] = {.id = TG_##ident, .kind = DTK_##knd, .priority = prio, .bitsize = bits, .count = 1,          \
                  .is_ptr = false, .addrspace = ADDR_NONE, .ptr_size = 0, .scalar = &tg_dtype_table[TG_##ident], \
                  .base = &tg_dtype_table[TG_##ident], .name = nm, .cname = cnm},
#include "dtype.def"
#undef DT
};

/* every dtype.def row names a tg_dtype (else the table above does not compile) and every tg_dtype has a row */
enum { DTYPE_DEF_COUNT = 0
#define DT(ident, nm, prio, bits, cnm, knd) +1
#include "dtype.def"
#undef DT
};
_Static_assert((int)DTYPE_DEF_COUNT == (int)TG_DTYPE_COUNT, "dtype.def and tg_dtype disagree on the number of dtypes");

static bool id_is_fp8(TgDTypeId id) {
  return id == TG_FP8E4M3 || id == TG_FP8E5M2 || id == TG_FP8E4M3FNUZ || id == TG_FP8E5M2FNUZ;
}

/* ================================================================================================================
 * Interned vectors and pointers: a chained hash table guarded by a mutex; entries are never freed.
 * ================================================================================================================ */

typedef struct DerivedDType {
  DType dt;
  struct DerivedDType *next;
} DerivedDType;

static struct {
  pthread_mutex_t lock;
  DerivedDType **buckets;
  size_t nbuckets, len;
} derived = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static uint64_t derived_hash(const DType *base, bool is_ptr, int count, AddrSpace as, int64_t size) {
  uint64_t h = tg_hash_mix((uint64_t)(uintptr_t)base, is_ptr);
  h = tg_hash_mix(h, (uint64_t)count);
  h = tg_hash_mix(h, (uint64_t)as);
  return tg_hash_mix(h, (uint64_t)size);
}

static void derived_grow(void) {
  size_t nb = derived.nbuckets ? derived.nbuckets * 2 : 64;
  DerivedDType **nbk = tg_calloc(nb, sizeof *nbk);
  for (size_t i = 0; i < derived.nbuckets; i++) {
    DerivedDType *e = derived.buckets[i];
    while (e) {
      DerivedDType *next = e->next;
      const DType *d = &e->dt;
      size_t slot = derived_hash(d->base, d->is_ptr, d->is_ptr ? 1 : d->count, d->addrspace, d->ptr_size) % nb;
      e->next = nbk[slot];
      nbk[slot] = e;
      e = next;
    }
  }
  tg_free(derived.buckets);
  derived.buckets = nbk;
  derived.nbuckets = nb;
}

static const char *addrspace_name(AddrSpace as) {
  switch (as) {
  case ADDR_NONE: return "NONE";
  case ADDR_GLOBAL: return "GLOBAL";
  case ADDR_LOCAL: return "LOCAL";
  case ADDR_REG: return "REG";
  case ADDR_ALU: return "ALU";
  }
  return "?";
}

/* Finds or creates the vector (is_ptr false) or pointer dtype over `base`. */
static const DType *derived_get(const DType *base, bool is_ptr, int count, AddrSpace as, int64_t size) {
  pthread_mutex_lock(&derived.lock);
  if (derived.len >= derived.nbuckets) derived_grow();
  size_t slot = derived_hash(base, is_ptr, count, as, size) % derived.nbuckets;
  for (DerivedDType *e = derived.buckets[slot]; e; e = e->next) {
    const DType *d = &e->dt;
    if (d->base == base && d->is_ptr == is_ptr && (is_ptr || d->count == count) && d->addrspace == as &&
        d->ptr_size == size) {
      pthread_mutex_unlock(&derived.lock);
      return d;
    }
  }
  DerivedDType *e = tg_calloc(1, sizeof *e);
  DType *d = &e->dt;
  const DType *scalar = base->scalar;
  d->id = scalar->id;
  d->kind = scalar->kind;
  d->priority = scalar->priority;
  d->bitsize = scalar->bitsize;
  d->cname = scalar->cname;
  d->scalar = scalar;
  d->base = base;
  d->is_ptr = is_ptr;
  StrBuf name;
  sb_init(&name);
  if (is_ptr) {
    d->count = 1;
    d->addrspace = as;
    d->ptr_size = size;
    sb_printf(&name, "%s.ptr(%lld", base->name, (long long)size);
    if (as != ADDR_GLOBAL) sb_printf(&name, ", AddrSpace.%s", addrspace_name(as));
    sb_putc(&name, ')');
  } else {
    d->count = count;
    d->addrspace = ADDR_NONE;
    d->ptr_size = 0;
    sb_printf(&name, "%s.vec(%d)", base->name, count);
  }
  d->name = sb_take(&name);
  e->next = derived.buckets[slot];
  derived.buckets[slot] = e;
  derived.len++;
  pthread_mutex_unlock(&derived.lock);
  return d;
}

const DType *dt_vec(const DType *scalar, int count) {
  TG_ASSERT(count >= 1, "vector count %d", count);
  TG_ASSERT(!scalar->is_ptr && scalar->count == 1, "dt_vec of %s: not a scalar", scalar->name);
  if (count == 1 || scalar->id == TG_VOID) return scalar;
  return derived_get(scalar, false, count, ADDR_NONE, 0);
}

const DType *dt_ptr(const DType *base, AddrSpace as, int64_t size) {
  TG_ASSERT(!base->is_ptr, "dt_ptr of pointer %s", base->name);
  return derived_get(base, true, 1, as, size < 0 ? -1 : size);
}

/* ---- names ---- */

/* tinygrad's attribute names (dtypes.float32, dtypes.uchar ...) besides the dtype.def names. */
static const struct { const char *name; TgDTypeId id; } dtype_aliases[] = {
    {"int8", TG_INT8},       {"uint8", TG_UINT8},     {"int16", TG_INT16},         {"uint16", TG_UINT16},
    {"int32", TG_INT32},     {"uint32", TG_UINT32},   {"int64", TG_INT64},         {"uint64", TG_UINT64},
    {"float16", TG_FLOAT16}, {"float32", TG_FLOAT32}, {"float64", TG_FLOAT64},     {"bfloat16", TG_BFLOAT16},
    {"half", TG_FLOAT16},    {"float", TG_FLOAT32},   {"double", TG_FLOAT64},      {"char", TG_INT8},
    {"uchar", TG_UINT8},     {"short", TG_INT16},     {"ushort", TG_UINT16},       {"int", TG_INT32},
    {"uint", TG_UINT32},     {"long", TG_INT64},      {"ulong", TG_UINT64},        {"bool", TG_BOOL},
    {"void", TG_VOID},       {"weakint", TG_WEAKINT}, {"weakfloat", TG_WEAKFLOAT}, {"fp8e4m3", TG_FP8E4M3},
    {"fp8e5m2", TG_FP8E5M2}, {"fp8e4m3fnuz", TG_FP8E4M3FNUZ}, {"fp8e5m2fnuz", TG_FP8E5M2FNUZ},
};

static bool name_eq_n(const char *a, size_t alen, const char *b) {
  if (strlen(b) != alen) return false;
  for (size_t i = 0; i < alen; i++)
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
  return true;
}

static const DType *scalar_by_name_n(const char *s, size_t n) {
  for (int i = 0; i < TG_DTYPE_COUNT; i++)
    if (name_eq_n(s, n, tg_dtype_table[i].name)) return &tg_dtype_table[i];
  for (size_t i = 0; i < TG_ARRAY_LEN(dtype_aliases); i++)
    if (name_eq_n(s, n, dtype_aliases[i].name)) return &tg_dtype_table[dtype_aliases[i].id];
  return NULL;
}

/* Parses a decimal integer at *p (optional '-'), advancing *p. */
static bool parse_int(const char **p, int64_t *out) {
  const char *s = *p;
  bool neg = *s == '-';
  if (neg) s++;
  if (!isdigit((unsigned char)*s)) return false;
  int64_t v = 0;
  while (isdigit((unsigned char)*s)) {
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*s++ - '0');
  }
  *out = neg ? -v : v;
  *p = s;
  return true;
}

const DType *dt_by_name(const char *name) {
  if (!name) return NULL;
  if (strncmp(name, "dtypes.", 7) == 0) name += 7;
  size_t n = strcspn(name, ".");
  const DType *d = scalar_by_name_n(name, n);
  const char *p = name + n;
  while (d && *p) {
    int64_t v;
    if (strncmp(p, ".vec(", 5) == 0) {
      p += 5;
      if (d->is_ptr || d->count != 1 || !parse_int(&p, &v) || v < 1 || v > INT32_MAX || *p++ != ')') return NULL;
      d = dt_vec(d, (int)v);
    } else if (strncmp(p, ".ptr(", 5) == 0) {
      p += 5;
      if (d->is_ptr || !parse_int(&p, &v)) return NULL;
      AddrSpace as = ADDR_GLOBAL;
      if (strncmp(p, ", AddrSpace.", 12) == 0) {
        p += 12;
        size_t an = strcspn(p, ")");
        bool found = false;
        for (int a = ADDR_NONE; a <= ADDR_ALU; a++)
          if (name_eq_n(p, an, addrspace_name((AddrSpace)a))) as = (AddrSpace)a, found = true;
        if (!found) return NULL;
        p += an;
      }
      if (*p++ != ')') return NULL;
      d = dt_ptr(d, as, v);
    } else {
      return NULL;
    }
  }
  return d;
}

/* ================================================================================================================
 * Promotion lattice (tinygrad dtype.py promo_lattice): each dtype's direct parents.
 * ================================================================================================================ */

typedef uint32_t DTypeSet; /* bit per TgDTypeId */
_Static_assert(TG_DTYPE_COUNT <= 32, "DTypeSet holds 32 dtypes");
#define DSET(id) ((DTypeSet)1 << TG_##id)

static DTypeSet lattice_parents(TgDTypeId id) {
  switch (id) {
  case TG_BOOL: return DSET(WEAKINT);
  case TG_WEAKINT: return DSET(INT8) | DSET(UINT8);
  case TG_INT8: return DSET(INT16);
  case TG_INT16: return DSET(INT32);
  case TG_INT32: return DSET(INT64);
  case TG_INT64: return DSET(WEAKFLOAT);
  case TG_UINT8: return DSET(INT16) | DSET(UINT16);
  case TG_UINT16: return DSET(INT32) | DSET(UINT32);
  case TG_UINT32: return DSET(INT64) | DSET(UINT64);
  case TG_UINT64: return DSET(WEAKFLOAT);
  case TG_WEAKFLOAT: return DSET(FP8E4M3) | DSET(FP8E5M2) | DSET(FP8E4M3FNUZ) | DSET(FP8E5M2FNUZ);
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ: return DSET(FLOAT16) | DSET(BFLOAT16);
  case TG_FLOAT16: case TG_BFLOAT16: return DSET(FLOAT32);
  case TG_FLOAT32: return DSET(FLOAT64);
  case TG_FLOAT64: case TG_VOID: case TG_DTYPE_COUNT: return 0;
  }
  return 0;
}

/* The dtype and every dtype above it (tinygrad _get_recursive_parents). Empty for void (not in the lattice). */
static DTypeSet recursive_parents(TgDTypeId id) {
  if (id == TG_VOID) return 0;
  DTypeSet out = (DTypeSet)1 << id, todo = lattice_parents(id);
  while (todo) {
    int p = __builtin_ctz(todo);
    todo &= todo - 1;
    if (out & ((DTypeSet)1 << p)) continue;
    out |= (DTypeSet)1 << p;
    todo |= lattice_parents((TgDTypeId)p);
  }
  return out;
}

/* tinygrad's DType.name (the C spelling; weak dtypes are named "weakint"/"weakfloat"), used for the ordering. */
static const char *tinygrad_name(const DType *d) { return d->cname[0] ? d->cname : d->name; }

/* DType ordering of tinygrad: (priority, bitsize, name). */
static bool dtype_less(const DType *a, const DType *b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->bitsize != b->bitsize) return a->bitsize < b->bitsize;
  return strcmp(tinygrad_name(a), tinygrad_name(b)) < 0;
}

/* tinygrad least_upper_dtype: the smallest dtype above both, NULL when there is none (void). */
static const DType *lattice_least_upper(TgDTypeId a, TgDTypeId b) {
  DTypeSet common = recursive_parents(a) & recursive_parents(b);
  const DType *best = NULL;
  while (common) {
    int p = __builtin_ctz(common);
    common &= common - 1;
    if (!best || dtype_less(&tg_dtype_table[p], best)) best = &tg_dtype_table[p];
  }
  return best;
}

/* Every pair, computed once: promotion runs on every binary node built. */
static struct {
  pthread_once_t once;
  const DType *table[TG_DTYPE_COUNT][TG_DTYPE_COUNT];
} lub_cache = {PTHREAD_ONCE_INIT, {{NULL}}};

static void lub_cache_init(void) {
  for (int a = 0; a < TG_DTYPE_COUNT; a++)
    for (int b = 0; b < TG_DTYPE_COUNT; b++) lub_cache.table[a][b] = lattice_least_upper((TgDTypeId)a, (TgDTypeId)b);
}

static const DType *scalar_least_upper(const DType *a, const DType *b) {
  pthread_once(&lub_cache.once, lub_cache_init);
  return lub_cache.table[a->id][b->id];
}

/* Scalars promote in the lattice; vectors of equal width promote lane-wise. Void, pointers and vectors of
 * different widths have no upper bound: NULL. */
const DType *dt_least_upper(const DType *a, const DType *b) {
  if (a == b) return a;
  if (a->is_ptr || b->is_ptr || a->count != b->count) return NULL;
  const DType *s = scalar_least_upper(a->scalar, b->scalar);
  return s ? dt_vec(s, a->count) : NULL;
}

const DType *dt_least_upper_float(const DType *d) {
  if (d->scalar == DT_WEAKINT) return dt_vec(DT_WEAKFLOAT, d->count);
  if (dt_is_float(d)) return d;
  return dt_least_upper(d, dt_vec(dt_default_float(), d->count));
}

/* ---- env knobs: DEFAULT_FLOAT, DEFAULT_INT, SUM_DTYPE (read once) ---- */

static struct {
  pthread_once_t once;
  const DType *default_float, *default_int, *sum_float;
} knobs = {PTHREAD_ONCE_INIT, NULL, NULL, NULL};

/* A strong float (want_float) or int dtype named by env var `var`, else `dflt` (with a warning when set but bad). */
static const DType *knob_dtype(const char *var, bool want_float, const DType *dflt) {
  const char *v = tg_getenv_str(var);
  if (!v || !*v) return dflt;
  const DType *d = dt_by_name(v);
  if (d && !d->is_ptr && d->count == 1 && !dt_is_weak(d) && (want_float ? dt_is_float(d) : dt_is_int(d))) return d;
  fprintf(stderr, "tinygrad.c: %s=%s is not a%s dtype; using %s\n", var, v, want_float ? " float" : "n int",
          dflt->name);
  return dflt;
}

static void knobs_init(void) {
  knobs.default_float = knob_dtype("DEFAULT_FLOAT", true, DT_FLOAT32);
  knobs.default_int = knob_dtype("DEFAULT_INT", false, DT_INT32);
  knobs.sum_float = knob_dtype("SUM_DTYPE", true, DT_FLOAT32);
}

const DType *dt_default_float(void) {
  pthread_once(&knobs.once, knobs_init);
  return knobs.default_float;
}
const DType *dt_default_int(void) {
  pthread_once(&knobs.once, knobs_init);
  return knobs.default_int;
}

const DType *dt_sum_acc(const DType *d) {
  pthread_once(&knobs.once, knobs_init);
  const DType *acc;
  if (dt_is_unsigned(d)) acc = DT_UINT32;
  else if (dt_is_int(d) || dt_is_bool(d)) acc = DT_INT32;
  else acc = knobs.sum_float;
  return dt_least_upper(d, dt_vec(acc, d->count));
}

const DType *dt_strong(const DType *d) {
  if (d->scalar == DT_WEAKINT) return dt_vec(dt_default_int(), d->count);
  if (d->scalar == DT_WEAKFLOAT) return dt_vec(dt_default_float(), d->count);
  return d;
}

const DType *dt_weak(const DType *d) {
  if (d->is_ptr) return d;
  if (dt_is_float(d)) return dt_vec(DT_WEAKFLOAT, d->count);
  if (dt_is_int(d)) return dt_vec(DT_WEAKINT, d->count);
  return d;
}

/* tinygrad can_lossless_cast: does `to` keep every value of `from`? (on scalars) */
bool dt_can_lossless_cast(const DType *from, const DType *to) {
  TgDTypeId f = from->scalar->id, t = to->scalar->id;
  if (f == t || f == TG_BOOL) return true;
  bool small_uint = f == TG_UINT8 || f == TG_UINT16, small_sint = f == TG_INT8 || f == TG_INT16;
  bool low_float = id_is_fp8(f) || f == TG_FLOAT16 || f == TG_BFLOAT16;
  switch (t) {
  case TG_WEAKINT: return from->kind == DTK_SINT || from->kind == DTK_UINT;
  case TG_FLOAT64: return low_float || f == TG_FLOAT32 || small_uint || small_sint || f == TG_UINT32 || f == TG_INT32;
  case TG_FLOAT32: return low_float || small_uint || small_sint;
  case TG_FLOAT16: return id_is_fp8(f) || f == TG_UINT8 || f == TG_INT8;
  case TG_UINT64: return small_uint || f == TG_UINT32;
  case TG_UINT32: return small_uint;
  case TG_UINT16: return f == TG_UINT8;
  case TG_INT64: return small_uint || small_sint || f == TG_UINT32 || f == TG_INT32;
  case TG_INT32: return small_uint || small_sint;
  case TG_INT16: return f == TG_UINT8 || f == TG_INT8;
  default: return false;
  }
}

/* ================================================================================================================
 * Float formats: float32 / float16 / bfloat16 / fp8 rounding and decoding (tinygrad truncate, float_to_fp16,
 * float_to_bf16, float_to_fp8, fp8_to_float). Everything rounds from double exactly once, as Python does.
 * ================================================================================================================ */

static uint64_t double_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static double bits_double(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float bits_float(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* ctypes c_float(x).value: round to nearest even; beyond the float range (from the midpoint between FLT_MAX and
 * 2^128 up) the result is +-inf. */
static double round_to_float32(double x) {
  if (isfinite(x) && fabs(x) >= 0x1.ffffffp127) return copysign(INFINITY, x);
  return (double)(float)x;
}

/* struct.pack('e', x) with tinygrad's overflow -> inf: IEEE binary16, round to nearest even. */
static uint16_t double_to_half_bits(double x) {
  uint16_t sign = (double_bits(x) >> 63) ? 0x8000 : 0;
  if (isnan(x)) return sign | 0x7e00;
  double a = fabs(x);
  if (isinf(a) || a >= 65520.0) return sign | 0x7c00; /* 65520 = max half + half an ulp: ties go up to inf */
  if (a < 0x1p-14) return sign | (uint16_t)rint(a * 0x1p24); /* subnormal; 1024 rounds into the first normal */
  int e;
  frexp(a, &e);                           /* a = m * 2^e, m in [0.5, 1) */
  double q = rint(ldexp(a, 11 - e));      /* 11 significant bits, in [1024, 2048] */
  int exp = e - 1;
  if (q >= 2048.0) q = 1024.0, exp++;
  if (exp > 15) return sign | 0x7c00;
  return sign | (uint16_t)((exp + 15) << 10) | (uint16_t)((int)q - 1024);
}

static double half_bits_to_double(uint16_t h) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? copysign(NAN, sign) : sign * INFINITY;
  if (exp == 0) return sign * ldexp(mant, -24);
  return sign * ldexp(mant + 1024, exp - 25);
}

/* tinygrad float_to_bf16 on a value already rounded to float32: round to nearest even on the upper 16 bits. */
static uint16_t float32_to_bf16_bits(float f) {
  uint32_t u = float_bits(f);
  if (!isfinite(f)) return (uint16_t)(u >> 16);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return (uint16_t)(u >> 16);
}

static double round_to_bf16(double x) {
  if (!isfinite(x)) return x;
  return (double)bits_float((uint32_t)float32_to_bf16_bits((float)round_to_float32(x)) << 16);
}

/* fp8 formats (after NVIDIA's cuda_fp8.hpp, as tinygrad): exponent bias, significand bits (with the implicit one),
 * and, as double bit patterns, the magnitudes below which we round to zero, above which we saturate, and the
 * smallest normal. */
typedef struct Fp8Format {
  int bias, sig_bits;
  uint64_t mant_mask, min_denorm_half, ovf_threshold, max_norm, min_norm;
  bool fnuz;
} Fp8Format;

static const Fp8Format *fp8_format(TgDTypeId id) {
  static const Fp8Format e4m3 = {7, 4, 0x7, 0x3F50000000000000ull, 0x407D000000000000ull, 0x7E,
                                 0x3F90000000000000ull, false};
  static const Fp8Format e5m2 = {15, 3, 0x3, 0x3EE0000000000000ull, 0x40EE000000000000ull - 1, 0x7B,
                                 0x3F10000000000000ull, false};
  static const Fp8Format e4m3fnuz = {8, 4, 0x7, 0x3F40000000000000ull, 0x406F000000000000ull - 1, 0x7F,
                                     0x3F80000000000000ull, true};
  static const Fp8Format e5m2fnuz = {16, 3, 0x3, 0x3ED0000000000000ull, 0x40EE000000000000ull - 1, 0x7F,
                                     0x3F00000000000000ull, true};
  switch (id) {
  case TG_FP8E4M3: return &e4m3;
  case TG_FP8E5M2: return &e5m2;
  case TG_FP8E4M3FNUZ: return &e4m3fnuz;
  case TG_FP8E5M2FNUZ: return &e5m2fnuz;
  default: TG_PANIC("%s is not an fp8 dtype", tg_dtype_table[id].name);
  }
}

uint8_t tg_float_to_fp8_bits(double x, TgDTypeId fp8) {
  const Fp8Format *f = fp8_format(fp8);
  bool negative = signbit(x);
  if (f->fnuz && !isfinite(x)) return 0x80;
  if (f->fnuz && x == 0.0) return 0x00;
  if (fp8 == TG_FP8E4M3 && !isfinite(x)) return negative ? 0xff : 0x7f; /* no inf: NaN of the sign */
  if (fp8 == TG_FP8E5M2 && !isfinite(x)) return (uint8_t)((negative ? 0x80 : 0) | (isinf(x) ? 0x7c : 0x7f));
  uint64_t xbits = double_bits(x);
  uint64_t half_ulp = (uint64_t)1 << (52 - f->sig_bits);
  uint64_t sign = ((xbits >> 63) & 1) << 7;
  int64_t exp = (int64_t)((xbits >> 52) & 0x7ff) - 1023 + f->bias;
  uint64_t mantissa = (xbits >> (53 - f->sig_bits)) & f->mant_mask;
  uint64_t absx = xbits & 0x7fffffffffffffffull;
  uint64_t res;
  if (absx <= f->min_denorm_half) {
    res = 0;
  } else if (absx > f->ovf_threshold) {
    res = f->max_norm; /* saturate */
  } else if (absx >= f->min_norm) {
    res = ((uint64_t)exp << (f->sig_bits - 1)) | mantissa;
    uint64_t round_bits = xbits & ((half_ulp << 1) - 1);
    if (round_bits > half_ulp || (round_bits == half_ulp && (mantissa & 1))) res++;
  } else { /* subnormal */
    int shift = (int)(1 - exp);
    mantissa |= (uint64_t)1 << (f->sig_bits - 1);
    res = mantissa >> shift;
    uint64_t half = half_ulp << shift;
    uint64_t round_bits = (xbits | ((uint64_t)1 << 52)) & ((half << 1) - 1);
    if (round_bits > half || (round_bits == half && (res & 1))) res++;
  }
  if (f->fnuz && res == 0) return 0; /* fnuz has no negative zero */
  return (uint8_t)(res | sign);
}

double tg_fp8_bits_to_float(uint8_t x, TgDTypeId fp8) {
  const Fp8Format *f = fp8_format(fp8);
  if (f->fnuz && x == 0x80) return NAN;
  if ((x & 0x7f) == 0) return (x & 0x80) ? -0.0 : 0.0;
  int mant_bits = f->sig_bits - 1, exp_bits = 8 - f->sig_bits;
  int exp_max = (1 << exp_bits) - 1, mant_max = (1 << mant_bits) - 1;
  int sign = (x >> 7) & 1, exp = (x >> mant_bits) & exp_max, mantissa = x & mant_max;
  if (!f->fnuz && exp == exp_max) {
    if (fp8 == TG_FP8E5M2) return copysign(mantissa ? NAN : INFINITY, sign ? -1.0 : 1.0);
    if (mantissa == mant_max) return NAN;
  }
  double val = exp == 0 ? ldexp((double)mantissa / (mant_max + 1), 1 - f->bias)
                        : ldexp(1.0 + (double)mantissa / (mant_max + 1), exp - f->bias);
  return sign ? -val : val;
}

uint16_t tg_float_to_half_bits(float x) { return double_to_half_bits((double)x); }
float tg_half_bits_to_float(uint16_t h) { return (float)half_bits_to_double(h); }
uint16_t tg_float_to_bf16_bits(float x) { return float32_to_bf16_bits(x); }
float tg_bf16_bits_to_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

/* The value x rounded to float dtype id's format (tinygrad truncate), NaN canonical. */
static double round_to_format(TgDTypeId id, double x) {
  double r;
  switch (id) {
  case TG_FLOAT16: r = half_bits_to_double(double_to_half_bits(x)); break;
  case TG_BFLOAT16: r = round_to_bf16(x); break;
  case TG_FLOAT32: r = round_to_float32(x); break;
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ:
    r = tg_fp8_bits_to_float(tg_float_to_fp8_bits(x, id), id);
    break;
  default: r = x; break; /* float64, weakfloat */
  }
  return isnan(r) ? NAN : r;
}

/* ================================================================================================================
 * Constants
 * ================================================================================================================ */

static const Const const_none = {CK_NONE, {.i = 0}};

bool dt_const_eq(Const a, Const b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
  case CK_BOOL: return a.b == b.b;
  case CK_INT: return a.i == b.i;
  case CK_FLOAT: return double_bits(a.f) == double_bits(b.f);
  case CK_NONE: case CK_INVALID: return true;
  }
  return false;
}

static int64_t u64_to_i64(uint64_t v) { return v <= INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1; }
static i128 u128_to_i128(u128 v) { return v <= (u128)I128_MAX ? (i128)v : -(i128)(~v) - 1; }
static bool is_uint64(const DType *d) { return d && d->scalar->id == TG_UINT64; }

/* Floats: truncated toward zero and saturated to the i128 range, NaN -> 0. Invalid/none -> 0. */
i128 dt_const_as_i128(Const c, const DType *d) {
  switch (c.kind) {
  case CK_BOOL: return c.b;
  case CK_INT: return is_uint64(d) ? (i128)(uint64_t)c.i : c.i;
  case CK_FLOAT:
    if (isnan(c.f)) return 0;
    if (c.f >= 0x1p127) return I128_MAX;
    if (c.f <= -0x1p127) return I128_MIN;
    return (i128)trunc(c.f);
  case CK_NONE: case CK_INVALID: return 0;
  }
  return 0;
}

/* Invalid/none -> NaN. */
double dt_const_as_double(Const c, const DType *d) {
  switch (c.kind) {
  case CK_BOOL: return c.b ? 1.0 : 0.0;
  case CK_INT: return is_uint64(d) ? (double)(uint64_t)c.i : (double)c.i;
  case CK_FLOAT: return c.f;
  case CK_NONE: case CK_INVALID: return NAN;
  }
  return NAN;
}

i128 dt_min_int(const DType *d) {
  const DType *s = d->scalar;
  switch (s->kind) {
  case DTK_SINT: return -((i128)1 << (s->bitsize - 1));
  case DTK_WEAKINT: case DTK_FLOAT: case DTK_WEAKFLOAT: return I128_MIN;
  case DTK_UINT: case DTK_BOOL: case DTK_VOID: return 0;
  }
  return 0;
}

i128 dt_max_int(const DType *d) {
  const DType *s = d->scalar;
  switch (s->kind) {
  case DTK_SINT: return ((i128)1 << (s->bitsize - 1)) - 1;
  case DTK_UINT: return ((i128)1 << s->bitsize) - 1;
  case DTK_WEAKINT: case DTK_FLOAT: case DTK_WEAKFLOAT: return I128_MAX;
  case DTK_BOOL: return 1;
  case DTK_VOID: return 0;
  }
  return 0;
}

/* A Python number: an exact integer or a double. */
typedef struct Num {
  bool is_float;
  i128 i;
  double f;
} Num;
static Num num_int(i128 v) { Num n = {false, v, 0.0}; return n; }
static Num num_float(double v) { Num n = {true, 0, v}; return n; }
static double num_to_double(Num n) { return n.is_float ? n.f : (double)n.i; }
static bool num_truthy(Num n) { return n.is_float ? n.f != 0.0 : n.i != 0; }

/* The Python value of a constant of dtype `od` (NULL: judged by the constant's kind alone). */
static Num const_to_num(Const c, const DType *od) {
  switch (c.kind) {
  case CK_BOOL: return num_int(c.b);
  case CK_INT:
    if (od && dt_is_float(od)) return num_float(dt_const_as_double(c, od));
    return num_int(is_uint64(od) ? (i128)(uint64_t)c.i : c.i);
  case CK_FLOAT: return num_float(c.f);
  case CK_NONE: case CK_INVALID: break;
  }
  return num_float(NAN);
}

/* Wraps an integer to a fixed-width int dtype (two's complement); uint64 keeps its bit pattern in int64. */
static int64_t wrap_to_width(i128 v, const DType *s) {
  uint64_t u = (uint64_t)((u128)v & 0xffffffffffffffffull);
  int bits = s->bitsize;
  if (bits < 64) {
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    u &= mask;
    if (s->kind == DTK_SINT && (u >> (bits - 1)) & 1) u |= ~mask;
  }
  return u64_to_i64(u);
}

/* Python int(x) of a finite double, reduced modulo 2^64 (exact: fmod is exact). */
static i128 float_to_int_mod64(double x) {
  double r = fmod(trunc(x), 0x1p64);
  i128 m = (i128)(uint64_t)fabs(r);
  return r < 0 ? -m : m;
}

/* Put a number on the grid of scalar dtype s (tinygrad dtype.const + truncate). CK_NONE where Python raises. */
static Const num_to_grid(Num n, const DType *s) {
  switch (s->kind) {
  case DTK_FLOAT: case DTK_WEAKFLOAT: return const_float(round_to_format(s->id, num_to_double(n)));
  case DTK_BOOL: return const_bool(num_truthy(n));
  case DTK_SINT: case DTK_UINT:
    if (n.is_float) {
      if (!isfinite(n.f)) return const_none; /* int(nan), int(inf) raise */
      return const_int(wrap_to_width(float_to_int_mod64(n.f), s));
    }
    return const_int(wrap_to_width(n.i, s));
  case DTK_WEAKINT: {
    i128 v;
    if (n.is_float) {
      if (!isfinite(n.f) || fabs(n.f) >= 0x1p64) return const_none;
      v = (i128)trunc(n.f);
    } else {
      v = n.i;
    }
    /* weak ints are exact; a value beyond int64 has no Const: not representable, so not foldable */
    if (v < INT64_MIN || v > INT64_MAX) return const_none;
    return const_int((int64_t)v);
  }
  case DTK_VOID: break;
  }
  return const_none;
}

Const dt_const(const DType *d, Const v) { return dt_const_from(d, v, NULL); }

Const dt_const_from(const DType *d, Const v, const DType *from) {
  if (v.kind == CK_INVALID || v.kind == CK_NONE) return v;
  if (d->is_ptr) return const_none;
  return num_to_grid(const_to_num(v, from ? from->scalar : NULL), d->scalar);
}

/* ---- bitcast ---- */

/* The storage bits of a value of scalar dtype s (tinygrad to_storage_scalar + struct.pack). */
static uint64_t const_to_bits(Const v, const DType *s) {
  double f = dt_const_as_double(v, s);
  switch (s->id) {
  case TG_BOOL: return dt_const_as_i128(v, s) != 0;
  case TG_FLOAT16: return double_to_half_bits(f);
  case TG_BFLOAT16: return float32_to_bf16_bits((float)round_to_float32(f));
  case TG_FLOAT32: return float_bits((float)round_to_float32(f));
  case TG_FLOAT64: return double_bits(f);
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ: return tg_float_to_fp8_bits(f, s->id);
  default: {
    uint64_t u = (uint64_t)v.i;
    if (v.kind != CK_INT) u = (uint64_t)dt_const_as_i128(v, s);
    return s->bitsize < 64 ? u & (((uint64_t)1 << s->bitsize) - 1) : u;
  }
  }
}

static Const bits_to_const(uint64_t u, const DType *s) {
  switch (s->id) {
  case TG_BOOL: return const_bool(u != 0);
  case TG_FLOAT16: return const_float(round_to_format(TG_FLOAT64, half_bits_to_double((uint16_t)u)));
  case TG_BFLOAT16: return const_float(round_to_format(TG_FLOAT64, (double)bits_float((uint32_t)u << 16)));
  case TG_FLOAT32: return const_float(round_to_format(TG_FLOAT64, (double)bits_float((uint32_t)u)));
  case TG_FLOAT64: return const_float(round_to_format(TG_FLOAT64, bits_double(u)));
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ:
    return const_float(round_to_format(TG_FLOAT64, tg_fp8_bits_to_float((uint8_t)u, s->id)));
  default: return const_int(wrap_to_width((i128)u, s));
  }
}

/* Reinterpret the bits. Both dtypes scalar (or vectors of one lane), not weak, of equal itemsize; else CK_NONE. */
Const dt_const_bitcast(Const v, const DType *from, const DType *to) {
  if (v.kind == CK_INVALID || v.kind == CK_NONE) return v;
  if (from->is_ptr || to->is_ptr || from->count != 1 || to->count != 1) return const_none;
  if (dt_is_weak(from) || dt_is_weak(to) || from->id == TG_VOID || to->id == TG_VOID) return const_none;
  if (dt_itemsize(from) != dt_itemsize(to)) return const_none;
  return bits_to_const(const_to_bits(v, from->scalar), to->scalar);
}

/* ================================================================================================================
 * Constant evaluation of ALU ops (tinygrad python_alu + exec_alu + truncate)
 * ================================================================================================================ */

/* CPython's float floor division (float_floor_div): floor of x/y snapped from fmod, with signed zeros. y != 0. */
static double py_float_floordiv(double x, double y) {
  double mod = fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) div -= 1.0;
  }
  if (div != 0.0) {
    double fl = floor(div);
    if (div - fl > 0.5) fl += 1.0;
    return fl;
  }
  return copysign(0.0, x / y);
}

static bool is_odd_integer(double x) { return fmod(fabs(x), 2.0) == 1.0; }

/* CPython float ** float, with tinygrad safe_pow's answers for its exceptions: 0 ** negative -> inf, a complex
 * result -> nan. false where Python raises OverflowError (not caught by safe_pow). */
static bool py_float_pow(double v, double w, double *out) {
  if (w == 0.0) return *out = 1.0, true;
  if (isnan(v)) return *out = v, true;
  if (isnan(w)) return *out = v == 1.0 ? 1.0 : w, true;
  if (isinf(w)) {
    double a = fabs(v);
    *out = a == 1.0 ? 1.0 : (w > 0) == (a > 1.0) ? fabs(w) : 0.0;
    return true;
  }
  if (isinf(v)) {
    bool odd = is_odd_integer(w);
    if (w > 0) *out = odd ? v : fabs(v);
    else *out = odd ? copysign(0.0, v) : 0.0;
    return true;
  }
  if (v == 0.0) {
    if (w < 0.0) return *out = INFINITY, true; /* ZeroDivisionError -> safe_pow's inf */
    return *out = is_odd_integer(w) ? v : 0.0, true;
  }
  bool negate = false;
  if (v < 0.0) {
    if (w != floor(w)) return *out = NAN, true; /* complex result */
    v = -v;
    negate = is_odd_integer(w);
  }
  if (v == 1.0) return *out = negate ? -1.0 : 1.0, true;
  double r = pow(v, w);
  if (isinf(r)) return false; /* OverflowError */
  *out = negate ? -r : r;
  return true;
}

typedef enum FoldStatus { FOLD_OK, FOLD_NONE } FoldStatus;

/* The float-valued unary ops on a double (python_alu). */
static FoldStatus float_unary(TgOp op, double x, double *r) {
  switch (op) {
  case TG_OP_NEG: *r = -x; return FOLD_OK;
  case TG_OP_EXP2: if (!py_float_pow(2.0, x, r)) *r = INFINITY; return FOLD_OK; /* safe_exp2: overflow -> inf */
  case TG_OP_LOG2: *r = x > 0 ? log2(x) : x == 0 ? -INFINITY : NAN; return FOLD_OK;
  case TG_OP_SQRT: *r = x >= 0 ? sqrt(x) : NAN; return FOLD_OK;
  case TG_OP_RECIPROCAL: *r = x != 0 ? 1.0 / x : copysign(INFINITY, x); return FOLD_OK;
  case TG_OP_SIN: *r = isinf(x) ? NAN : sin(x); return FOLD_OK;
  case TG_OP_TRUNC: /* math.trunc returns an int, so -0.5 and -0.0 give +0.0 */
    *r = isfinite(x) ? trunc(x) : x;
    if (*r == 0.0) *r = 0.0;
    return FOLD_OK;
  default: return FOLD_NONE;
  }
}

/* python_alu on doubles (the operands of a float dtype). Division by zero is not folded. */
static FoldStatus float_alu(TgOp op, const double *x, double *r) {
  if (op_has(op, OPP_UNARY)) return float_unary(op, x[0], r);
  double a = x[0], b = x[1];
  switch (op) {
  case TG_OP_ADD: *r = a + b; return FOLD_OK;
  case TG_OP_SUB: *r = a - b; return FOLD_OK;
  case TG_OP_MUL: *r = a * b; return FOLD_OK;
  case TG_OP_MAX: *r = b > a ? b : a; return FOLD_OK; /* Python max keeps the first unless the second is greater */
  case TG_OP_FDIV: *r = a / b; return FOLD_OK;       /* IEEE division (python_alu has no FDIV) */
  case TG_OP_POW: return py_float_pow(a, b, r) ? FOLD_OK : FOLD_NONE;
  case TG_OP_MULACC: {
    double p = a * b;
    *r = p + x[2];
    return FOLD_OK;
  }
  case TG_OP_CDIV: case TG_OP_CMOD: case TG_OP_FLOORDIV: case TG_OP_FLOORMOD: {
    if (b == 0.0) return FOLD_NONE;
    double q = op == TG_OP_CDIV || op == TG_OP_CMOD ? py_float_floordiv(fabs(a), fabs(b)) * (a * b < 0 ? -1.0 : 1.0)
                                                    : py_float_floordiv(a, b);
    *r = op == TG_OP_CDIV || op == TG_OP_FLOORDIV ? q : a - q * b;
    return FOLD_OK;
  }
  default: return FOLD_NONE; /* bitwise ops and shifts on floats raise TypeError; THREEFRY is integer only */
  }
}

static u128 u128_of(i128 v) { return (u128)v; }
static i128 ring(u128 v) { return u128_to_i128(v); }

/* floor(x / 2^y) for y >= 0. */
static i128 shift_right_floor(i128 x, i128 y) {
  if (y >= 127) return x < 0 ? -1 : 0;
  return x >= 0 ? x >> (int)y : ~((~x) >> (int)y);
}

/* x ** y for y >= 0 and |x| <= 2^63, exactly; false when |result| > 2^63 (beyond any weakint Const). */
static bool exact_pow(i128 x, i128 y, i128 *r) {
  if (x == 0) return *r = y == 0 ? 1 : 0, true;
  if (x == 1) return *r = 1, true;
  if (x == -1) return *r = (y & 1) ? -1 : 1, true;
  if (y >= 64) return false;
  const i128 limit = (i128)1 << 63;
  i128 acc = 1;
  for (i128 k = 0; k < y; k++) {
    acc *= x; /* |acc| <= 2^63 and |x| <= 2^63 before: the product fits */
    if (acc > limit || acc < -limit) return false;
  }
  *r = acc;
  return true;
}

/* x ** y mod 2^128 for y >= 0 (enough for every fixed-width result). */
static i128 wrapping_pow(i128 x, i128 y) {
  u128 base = u128_of(x), acc = 1;
  for (u128 e = u128_of(y); e; e >>= 1) {
    if (e & 1) acc *= base;
    base *= base;
  }
  return ring(acc);
}

/* python_alu on integers. exact: the result must be the exact integer (weakint, bool); otherwise it only needs to
 * be right modulo 2^64 (fixed-width ints are wrapped afterwards). Operands fit in 65 bits, so products of two fit
 * in 128: ring ops are computed modulo 2^128, which is exact for exact dtypes. */
static FoldStatus int_alu(TgOp op, bool exact, const i128 *x, i128 *r) {
  i128 a = x[0], b = op_has(op, OPP_UNARY) ? 0 : x[1];
  switch (op) {
  case TG_OP_NEG: *r = ring(0 - u128_of(a)); return FOLD_OK;
  case TG_OP_TRUNC: *r = a; return FOLD_OK;
  case TG_OP_ADD: *r = ring(u128_of(a) + u128_of(b)); return FOLD_OK;
  case TG_OP_SUB: *r = ring(u128_of(a) - u128_of(b)); return FOLD_OK;
  case TG_OP_MUL: *r = ring(u128_of(a) * u128_of(b)); return FOLD_OK;
  case TG_OP_MULACC: *r = ring(u128_of(a) * u128_of(b) + u128_of(x[2])); return FOLD_OK;
  case TG_OP_MAX: *r = b > a ? b : a; return FOLD_OK;
  case TG_OP_AND: *r = ring(u128_of(a) & u128_of(b)); return FOLD_OK;
  case TG_OP_OR: *r = ring(u128_of(a) | u128_of(b)); return FOLD_OK;
  case TG_OP_XOR: *r = ring(u128_of(a) ^ u128_of(b)); return FOLD_OK;
  case TG_OP_EXP2: /* 2 ** x is an int for x >= 0 (and a float, which an int dtype cannot take, for x < 0) */
    b = a;
    a = 1;
    /* fall through */
  case TG_OP_SHL:
    if (b < 0) return FOLD_NONE; /* negative shift count: ValueError */
    if (a == 0) return *r = 0, FOLD_OK;
    if (exact && b >= 64) return FOLD_NONE; /* beyond any Const */
    *r = b >= 128 ? 0 : ring(u128_of(a) << (int)b);
    return FOLD_OK;
  case TG_OP_SHR:
    if (b < 0) return FOLD_NONE;
    *r = shift_right_floor(a, b);
    return FOLD_OK;
  case TG_OP_CDIV: case TG_OP_CMOD: case TG_OP_FLOORDIV: case TG_OP_FLOORMOD: {
    if (b == 0) return FOLD_NONE; /* tinygrad says 0; the device says anything: not folded */
    i128 q = a / b;               /* C division truncates: that is cdiv */
    if ((op == TG_OP_FLOORDIV || op == TG_OP_FLOORMOD) && a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
    *r = op == TG_OP_CDIV || op == TG_OP_FLOORDIV ? q : a - q * b;
    return FOLD_OK;
  }
  case TG_OP_POW:
    if (b < 0) return FOLD_NONE; /* int ** negative int is a float: an int dtype cannot take it */
    if (exact) return exact_pow(a, b, r) ? FOLD_OK : FOLD_NONE;
    *r = wrapping_pow(a, b);
    return FOLD_OK;
  default: return FOLD_NONE; /* LOG2 SIN SQRT RECIPROCAL FDIV give floats; THREEFRY is handled by the caller */
  }
}

/* threefry2x32 (tinygrad codegen/decomp/op.py): x and key are uint64, split into uint32 halves; 20 rounds. */
static uint64_t threefry2x32(uint64_t x, uint64_t key) {
  static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t key0 = (uint32_t)key, key1 = (uint32_t)(key >> 32);
  uint32_t ks[3] = {key1, key0 ^ key1 ^ 0x1BD11BDAu, key0};
  uint32_t x0 = (uint32_t)x + ks[2], x1 = (uint32_t)(x >> 32) + ks[0];
  for (uint32_t i = 0; i < 5; i++) {
    for (int j = 0; j < 4; j++) {
      int rot = rotations[i % 2][j];
      x0 = x0 + x1;
      x1 = x0 ^ (uint32_t)((x1 << rot) | (x1 >> (32 - rot)));
    }
    x0 = x0 + ks[i % 3];
    x1 = x1 + ks[(i + 1) % 3] + i + 1;
  }
  return ((uint64_t)x1 << 32) | x0;
}

/* Python comparison of two numbers, exact across int/float: -1, 0, 1, or 2 when unordered (NaN). */
static int num_compare(Num a, Num b) {
  if (a.is_float && b.is_float) return a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2;
  if (!a.is_float && !b.is_float) return a.i < b.i ? -1 : a.i > b.i;
  bool swapped = a.is_float;
  i128 i = swapped ? b.i : a.i;
  double f = swapped ? a.f : b.f;
  int c; /* compare i with f */
  if (isnan(f)) return 2;
  if (f >= 0x1p126) c = -1;
  else if (f <= -0x1p126) c = 1;
  else {
    double t = trunc(f);
    i128 ti = (i128)t;
    c = i < ti ? -1 : i > ti ? 1 : (f - t > 0) ? -1 : (f - t < 0) ? 1 : 0;
  }
  return swapped ? -c : c;
}

static Const compare_consts(TgOp op, const DType *od, const Const *src) {
  Num a = const_to_num(src[0], od), b = const_to_num(src[1], od);
  int c = num_compare(a, b);
  switch (op) {
  case TG_OP_CMPLT: return const_bool(c == -1);
  case TG_OP_CMPNE: return const_bool(c != 0);
  case TG_OP_CMPEQ: return const_bool(c == 0);
  default: return const_none;
  }
}

/* Semantics (tinygrad exec_alu on Python values, then truncate to d):
 *   - d is the result dtype, except for comparisons, where it may be the operands' dtype (so uint64 operands are
 *     read unsigned); d = bool reads CK_INT operands as signed. Comparisons return CK_BOOL. Scalars only: for a
 *     vector d the scalar is used (fold lane by lane).
 *   - an Invalid operand makes the result Invalid (WHERE: only the chosen branch matters; an Invalid condition is
 *     not folded). tinygrad poisons binary ops; we also poison unary ops and MULACC, where Python would raise.
 *   - not folded (CK_NONE): integer or float division/modulo by zero (tinygrad returns 0), float overflow in POW,
 *     negative shifts, int ** negative, float ops (LOG2 SIN SQRT RECIPROCAL FDIV) on int dtypes, bitwise ops on
 *     floats, weakint results beyond int64, and ops that are not ALU ops or have the wrong source count.
 *   - comparisons are IEEE on floats (nan != nan). tinygrad's CONST floats compare nan == nan, so its own folding of
 *     CMPNE(nan, nan) gives False; we follow exec_alu on floats and the device.
 *   - FDIV (absent from python_alu) is IEEE division; THREEFRY is threefry2x32 of tinygrad's decomposition. */
Const dt_const_exec_alu(int op_id, const DType *d, const Const *src, int nsrc) {
  if (op_id < 0 || op_id >= TG_OP_COUNT || !d || d->is_ptr) return const_none;
  TgOp op = (TgOp)op_id;
  int arity = op_has(op, OPP_UNARY) ? 1 : op_has(op, OPP_BINARY) ? 2 : op_has(op, OPP_TERNARY) ? 3 : 0;
  if (arity == 0 || nsrc != arity) return const_none;
  const DType *sd = d->scalar;
  if (sd->id == TG_VOID) return const_none;

  if (op == TG_OP_WHERE) {
    if (src[0].kind == CK_INVALID || src[0].kind == CK_NONE) return const_none;
    Const pick = num_truthy(const_to_num(src[0], NULL)) ? src[1] : src[2];
    return pick.kind == CK_INVALID || pick.kind == CK_NONE ? pick : dt_const(sd, pick);
  }
  bool invalid = false;
  for (int k = 0; k < nsrc; k++) {
    if (src[k].kind == CK_NONE) return const_none;
    invalid |= src[k].kind == CK_INVALID;
  }
  if (invalid) return const_invalid();
  if (op_has(op, OPP_COMPARISON)) return compare_consts(op, sd->id == TG_BOOL ? NULL : sd, src);

  if (dt_is_float(sd)) {
    double x[3], r;
    for (int k = 0; k < nsrc; k++) x[k] = dt_const_as_double(src[k], sd);
    if (float_alu(op, x, &r) != FOLD_OK) return const_none;
    return const_float(round_to_format(sd->id, r));
  }

  /* integer and bool dtypes: the operands as exact integers */
  i128 x[3];
  for (int k = 0; k < nsrc; k++) {
    Const c = src[k];
    if (c.kind == CK_FLOAT) c = dt_const(sd, c); /* a float at an int dtype: its int(), as dtype.const would */
    if (c.kind == CK_NONE) return const_none;
    x[k] = dt_const_as_i128(c, sd);
  }
  if (op == TG_OP_THREEFRY) {
    if (sd->id != TG_UINT64) return const_none;
    return const_int(u64_to_i64(threefry2x32((uint64_t)x[0], (uint64_t)x[1])));
  }
  if (sd->id == TG_BOOL && op_has(op, OPP_UNARY) && op != TG_OP_NEG && op != TG_OP_TRUNC && op != TG_OP_EXP2) {
    double r; /* math.sqrt(True) ... then bool() */
    if (float_unary(op, (double)x[0], &r) != FOLD_OK) return const_none;
    return const_bool(r != 0.0 || isnan(r));
  }
  i128 r;
  if (int_alu(op, sd->kind == DTK_WEAKINT || sd->kind == DTK_BOOL, x, &r) != FOLD_OK) return const_none;
  return num_to_grid(num_int(r), sd);
}
