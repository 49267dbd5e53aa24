/* dtype.h — data types: the scalar dtypes of dtype.def, vector dtypes, pointer dtypes with address spaces,
 * tinygrad's promotion lattice and the constant value type shared by CONST folding.
 *
 * DTypes are interned: compare them with ==. Scalars live in a static table (DT_FLOAT32 ...); vectors and pointers
 * are created on demand by dt_vec/dt_ptr and live for the whole process (there are few of them). */
#ifndef TG_DTYPE_H
#define TG_DTYPE_H

#include "../base/base.h"

/* The scalar dtype ids are the public tg_dtype enum (include/tinygrad.h); dtype.def holds one row per id. */
typedef tg_dtype TgDTypeId;

typedef enum DTypeKind { DTK_VOID, DTK_BOOL, DTK_SINT, DTK_UINT, DTK_FLOAT, DTK_WEAKINT, DTK_WEAKFLOAT } DTypeKind;

/* Where a pointer points (tinygrad's AddrSpace). ALU is "a value, not memory": Variables live there. */
typedef enum AddrSpace { ADDR_NONE = 0, ADDR_GLOBAL, ADDR_LOCAL, ADDR_REG, ADDR_ALU } AddrSpace;

typedef struct DType {
  TgDTypeId id;              /* scalar id (of the element for vectors, of the pointee's scalar for pointers) */
  DTypeKind kind;            /* of the scalar */
  int priority;              /* promotion priority */
  int bitsize;               /* of one scalar element (800 for weak dtypes) */
  int count;                 /* vector lanes, 1 for scalars (and for pointers: see base) */
  bool is_ptr;
  AddrSpace addrspace;       /* pointers only */
  int64_t ptr_size;          /* pointers only: element count, -1 when unknown */
  const struct DType *scalar; /* the scalar dtype (self for scalars) */
  const struct DType *base;   /* pointer: the pointee (may be a vector); vector: the scalar; scalar: self */
  const char *name;          /* tinygrad's repr without "dtypes.": "float", "float.vec(4)", "float.ptr(16)" */
  const char *cname;         /* C spelling of the scalar ("float", "unsigned char"), "" for weak dtypes */
} DType;

extern const DType tg_dtype_table[TG_DTYPE_COUNT];
#define DT_OF(id) (&tg_dtype_table[TG_##id])
#define DT_VOID DT_OF(VOID)
#define DT_BOOL DT_OF(BOOL)
#define DT_WEAKINT DT_OF(WEAKINT)
#define DT_WEAKFLOAT DT_OF(WEAKFLOAT)
#define DT_INT8 DT_OF(INT8)
#define DT_UINT8 DT_OF(UINT8)
#define DT_INT16 DT_OF(INT16)
#define DT_UINT16 DT_OF(UINT16)
#define DT_INT32 DT_OF(INT32)
#define DT_UINT32 DT_OF(UINT32)
#define DT_INT64 DT_OF(INT64)
#define DT_UINT64 DT_OF(UINT64)
#define DT_FLOAT16 DT_OF(FLOAT16)
#define DT_BFLOAT16 DT_OF(BFLOAT16)
#define DT_FLOAT32 DT_OF(FLOAT32)
#define DT_FLOAT64 DT_OF(FLOAT64)

/* Constructors (interned). dt_vec(d, 1) == d. dt_ptr(d, ADDR_GLOBAL, -1) for an unsized pointer. */
const DType *dt_vec(const DType *scalar, int count);
const DType *dt_ptr(const DType *base, AddrSpace as, int64_t size);
const DType *dt_by_name(const char *name); /* "float32", "float", "half", "int", ... NULL if unknown */

/* Predicates on the scalar. */
static inline bool dt_is_float(const DType *d) { return d->kind == DTK_FLOAT || d->kind == DTK_WEAKFLOAT; }
static inline bool dt_is_int(const DType *d) {
  return d->kind == DTK_SINT || d->kind == DTK_UINT || d->kind == DTK_WEAKINT;
}
static inline bool dt_is_unsigned(const DType *d) { return d->kind == DTK_UINT; }
static inline bool dt_is_bool(const DType *d) { return d->kind == DTK_BOOL; }
static inline bool dt_is_weak(const DType *d) { return d->kind == DTK_WEAKINT || d->kind == DTK_WEAKFLOAT; }
static inline int dt_itemsize(const DType *d) { return (d->bitsize * d->count + 7) / 8; }

/* Promotion (tinygrad dtype.py): least upper bound in the lattice, for scalars. */
const DType *dt_least_upper(const DType *a, const DType *b);
const DType *dt_least_upper_float(const DType *d);
const DType *dt_sum_acc(const DType *d);       /* SUM_DTYPE env knob for floats, default float32 */
bool dt_can_lossless_cast(const DType *from, const DType *to);
const DType *dt_default_float(void);           /* DEFAULT_FLOAT, float32 */
const DType *dt_default_int(void);             /* DEFAULT_INT, int32 */
const DType *dt_strong(const DType *d);        /* weakint -> default int, weakfloat -> default float */
const DType *dt_weak(const DType *d);          /* float -> weakfloat, int -> weakint, else itself */

/* A constant value. Ints of every width are held in i (uint64 as its bit pattern); floats in f. */
typedef enum ConstKind { CK_NONE = 0, CK_BOOL, CK_INT, CK_FLOAT, CK_INVALID } ConstKind;
typedef struct Const {
  ConstKind kind;
  union { int64_t i; double f; bool b; };
} Const;
static inline Const const_int(int64_t v) { Const c = {CK_INT, {.i = v}}; return c; }
static inline Const const_float(double v) { Const c = {CK_FLOAT, {.f = v}}; return c; }
static inline Const const_bool(bool v) { Const c = {CK_BOOL, {.b = v}}; return c; }
static inline Const const_invalid(void) { Const c = {CK_INVALID, {.i = 0}}; return c; }
/* Bitwise equality (so -0.0 != 0.0 and nan == nan, as tinygrad's ConstFloat). */
bool dt_const_eq(Const a, Const b);
/* The value as a number (bools 0/1, uint64 above 2^63 stay exact in i128). */
i128 dt_const_as_i128(Const c, const DType *d);
double dt_const_as_double(Const c, const DType *d);

/* Put a value on dtype d's grid (tinygrad dtype.const + truncate): ints wrap to the width, floats round to the
 * format (float16/bfloat16/fp8 too), bools become 0/1; weak dtypes keep the value exact. */
Const dt_const(const DType *d, Const v);
/* dt_const of a value of dtype `from` (a CAST): a uint64 CK_INT is read unsigned. NULL from = dt_const. CK_NONE where
 * the value has no place on d's grid (nan/inf to an int dtype, a weakint beyond int64). */
Const dt_const_from(const DType *d, Const v, const DType *from);
/* Smallest / largest value of d as a number (ints exact; floats -inf/inf; bool 0/1; weakint: i128 limits). */
i128 dt_min_int(const DType *d);
i128 dt_max_int(const DType *d);

/* Evaluate an ALU op on constants at dtype d (tinygrad exec_alu + truncation), for constant folding. The op is a
 * TgOp value (ops.def). Returns CK_NONE when the op cannot be folded (e.g. integer division by zero: not defined).
 * Comparisons take the operands' dtype as d (so uint64 reads unsigned) and return CK_BOOL. dtype.c lists the rest. */
Const dt_const_exec_alu(int op, const DType *d, const Const *src, int nsrc);
/* Bit-reinterpret a constant between dtypes of equal itemsize. */
Const dt_const_bitcast(Const v, const DType *from, const DType *to);

/* float conversions used by truncation and by host data. */
uint16_t tg_float_to_half_bits(float x);
float tg_half_bits_to_float(uint16_t h);
uint16_t tg_float_to_bf16_bits(float x);
float tg_bf16_bits_to_float(uint16_t h);
uint8_t tg_float_to_fp8_bits(double x, TgDTypeId fp8);
double tg_fp8_bits_to_float(uint8_t x, TgDTypeId fp8);

#endif
