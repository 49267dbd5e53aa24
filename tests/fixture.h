/* fixture.h — reader of the PyTorch golden fixtures (the .tgf files of tests/fixtures, written by tools/gen_fixtures.py, whose
 * header documents the format). Used by the fixture self-checks (test_fixtures.c) and the op-parity suite
 * (test_ops.c). Parsing validates every length against the buffer: a malformed file is an error, never a crash. */
#ifndef TG_TEST_FIXTURE_H
#define TG_TEST_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_MAX_DIMS 16
#define TF_MAX_TENSORS 8
#define TF_DTYPE_COUNT 13

/* The fixture dtype codes (gen_fixtures.py's DTYPES order). */
typedef enum tf_dtype {
  TF_BOOL, TF_INT8, TF_UINT8, TF_INT16, TF_UINT16, TF_INT32, TF_UINT32, TF_INT64, TF_UINT64, TF_FLOAT16, TF_BFLOAT16,
  TF_FLOAT32, TF_FLOAT64
} tf_dtype;

typedef struct tf_tensor {
  const char *view;      /* movement ops applied to an input before the op ("" for none and for outputs) */
  tf_dtype dtype;
  int ndim;
  int64_t shape[TF_MAX_DIMS];
  int64_t numel;
  uint64_t nbytes;
  const uint8_t *data;   /* points into the file buffer */
} tf_tensor;

typedef struct tf_case {
  const char *name, *op, *params; /* NUL-terminated copies */
  double atol, rtol;
  uint32_t flags;
  int ninputs, noutputs;
  tf_tensor inputs[TF_MAX_TENSORS], outputs[TF_MAX_TENSORS];
} tf_case;

#define TF_FLAG_TINYGRAD 1u /* tinygrad differs from torch here; the torch expression was adapted to tinygrad */

typedef struct tf_file {
  uint8_t *buf;
  size_t size;
  char *strings; /* arena of the NUL-terminated strings */
  tf_case *cases;
  size_t ncases;
} tf_file;

/* Parses a fixture image. Takes ownership of buf (malloc'ed) in every case. Returns false with a message in err on
 * any malformed content; tf_free is safe on the result either way. */
bool tf_parse(uint8_t *buf, size_t size, tf_file *out, char *err, size_t errlen);
/* Reads and parses a file. */
bool tf_load(const char *path, tf_file *out, char *err, size_t errlen);
void tf_free(tf_file *f);

/* The fixture directory: $TG_FIXTURES_DIR, else tests/fixtures relative to the working directory or to this source. */
const char *tf_dir(void);
/* The group files, in order, and their count. */
extern const char *const tf_groups[];
extern const size_t tf_ngroups;

size_t tf_itemsize(tf_dtype d);
const char *tf_dtype_name(tf_dtype d);
bool tf_is_float(tf_dtype d);
/* Parses a dtype name ("float32", "int8", ...). */
bool tf_dtype_from_name(const char *name, tf_dtype *out);

/* Parameters ("key=value;key=value"). Each returns false when the key is absent or its value malformed. */
bool tf_param_str(const tf_case *c, const char *key, char *out, size_t outlen);
bool tf_param_double(const tf_case *c, const char *key, double *out);
bool tf_param_int(const tf_case *c, const char *key, int64_t *out);
bool tf_param_ints(const tf_case *c, const char *key, int64_t *out, size_t max, size_t *n);
/* True when the value is written as a float (has '.', 'e', "inf" or "nan"): a weak float scalar, else a weak int. */
bool tf_param_is_float(const tf_case *c, const char *key);

/* One movement op of a view string: "permute:1,0", "flip:0", "shrink:0:2,1:3", "expand:3,4". */
typedef struct tf_view_op {
  char name[16];
  int64_t args[2 * TF_MAX_DIMS];
  size_t nargs;
} tf_view_op;
/* Splits a view string into ops; returns the count or -1 when malformed. */
int tf_parse_view(const char *view, tf_view_op *ops, int max_ops);

/* Element i of a tensor as double (bfloat16/float16 widened exactly; 64-bit integers as double). */
double tf_get_double(tf_dtype d, const void *data, int64_t i);

/* ---- running fixtures through the library (tests/fixture_run.c) ---- */
struct tg_tensor;
/* got (realized here) matches exp: the same shape, then |g - e| <= atol + rtol*|e| everywhere (read as float64; equal
 * infinities match); a mismatch is described on stderr under `what` */
bool tf_matches(const char *what, struct tg_tensor *got, const tf_tensor *exp, double atol, double rtol);
/* Each case of tf_dir()/file through run, in its own tensor scope, one CHECK per case; $only_env (may be NULL)
 * filters by case name; unfiltered, at least min_cases must run. */
void tf_run_file(const char *file, const char *only_env, size_t min_cases, bool (*run)(const tf_case *));

#endif
