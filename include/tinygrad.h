/* tinygrad.h — the public C API of tinygrad.c.
 *
 * Everything a user calls is declared here with a tg_ prefix. Calls that can fail on bad input return a tg_status
 * (or NULL) and leave a message in tg_last_error() naming the op, the shapes and the dtypes; the library never
 * aborts or exits on user error. */
#ifndef TINYGRAD_H
#define TINYGRAD_H

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 1

typedef enum tg_status {
  TG_OK = 0,
  TG_ERR_INVALID_ARGUMENT, /* a bad shape, axis, dtype or value */
  TG_ERR_UNSUPPORTED,      /* a valid request this build cannot do (says what is missing) */
  TG_ERR_IO,               /* a file could not be read or is malformed */
  TG_ERR_RUNTIME,          /* compiler or device failure */
  TG_ERR_OUT_OF_MEMORY
} tg_status;

/* Data types (the order of src/uop/dtype.def, which holds their properties). The weak dtypes are tinygrad's width-less
 * Python scalars: a tensor made from a C scalar is weak and adopts its partner's dtype in binary ops. */
typedef enum tg_dtype {
  TG_VOID, TG_WEAKINT, TG_BOOL, TG_INT8, TG_UINT8, TG_INT16, TG_UINT16, TG_INT32, TG_UINT32, TG_INT64, TG_UINT64,
  TG_WEAKFLOAT, TG_FP8E4M3, TG_FP8E5M2, TG_FP8E4M3FNUZ, TG_FP8E5M2FNUZ, TG_FLOAT16, TG_BFLOAT16, TG_FLOAT32, TG_FLOAT64,
  TG_DTYPE_COUNT
} tg_dtype;

/* The message of the last error on this thread ("" when none). Valid until the next failing call. */
const char *tg_last_error(void);
/* The last status set on this thread. */
tg_status tg_last_status(void);
/* "0.1" */
const char *tg_version(void);

#ifdef __cplusplus
}
#endif
#endif
