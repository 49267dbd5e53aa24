/* test_spec.c — the stage validators: well-formed graphs of each stage pass, and every malformed form is rejected
 * with a message naming the op and what is wrong (never a crash). */
#include "test.h"
#include "codegen/codegen.h"
#include "uop/spec.h"

#define WANT_SPEC_CASES
#include "render_cases.h"

static void check_ok_at(UOp *u, SpecStage st, int line) {
  tg_clear_error();
  tg_status s = uop_spec_check(u, st);
  CHECK_MSG(s == TG_OK, "line %d: %s rejected a well-formed graph: %s", line, spec_stage_name(st), tg_last_error());
}
#define OK(u, st) check_ok_at((u), (st), __LINE__)

static void check_rejected_at(UOp *u, SpecStage st, const char *op, const char *why, int line) {
  tg_clear_error();
  tg_status s = uop_spec_check(u, st);
  const char *msg = tg_last_error();
  CHECK_MSG(s == TG_ERR_INVALID_ARGUMENT, "line %d: %s accepted a malformed %s", line, spec_stage_name(st), op);
  if (s != TG_ERR_INVALID_ARGUMENT) return;
  /* "<stage>: UOp verification failed at node N: OP (...): why" — the op follows the second ": " */
  const char *at = strstr(msg, ": ");
  at = at ? strstr(at + 2, ": ") : NULL;
  CHECK_MSG(at && strncmp(at + 2, op, strlen(op)) == 0, "line %d: message does not name %s first: %s", line, op, msg);
  CHECK_MSG(strstr(msg, why) != NULL, "line %d: message lacks \"%s\": %s", line, why, msg);
}
#define REJECT(u, st, op, why) check_rejected_at((u), (st), (op), (why), __LINE__)

static UOp *n1(TgOp op, const DType *d, UOp *a) { return uop_new(op, d, &a, 1, arg_none()); }
static UOp *n2(TgOp op, const DType *d, UOp *a, UOp *b) {
  UOp *s[2] = {a, b};
  return uop_new(op, d, s, 2, arg_none());
}
static UOp *n3(TgOp op, const DType *d, UOp *a, UOp *b, UOp *c) {
  UOp *s[3] = {a, b, c};
  return uop_new(op, d, s, 3, arg_none());
}
static UOp *ci(const DType *d, int64_t v) { return uop_new(TG_OP_CONST, d, NULL, 0, arg_const(const_int(v))); }
static UOp *cf(const DType *d, double v) { return uop_new(TG_OP_CONST, d, NULL, 0, arg_const(const_float(v))); }

static ParamArg param(int64_t slot, const DType *d, AddrSpace as, const char *device) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = slot;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = d;
  p.addrspace = (int32_t)as;
  snprintf(p.device, sizeof p.device, "%s", device);
  return p;
}
/* a tensor BUFFER: (size) with a device */
static UOp *global_buffer(int64_t slot, const DType *d, int64_t size) {
  ParamArg p = param(slot, d, ADDR_GLOBAL, "CPU");
  UOp *sz = ci(DT_WEAKINT, size);
  return uop_new(TG_OP_BUFFER, d, &sz, 1, arg_param(&p));
}
static UOp *kernel_param(int64_t slot, const DType *d) {
  ParamArg p = param(slot, d, ADDR_GLOBAL, "");
  return uop_new(TG_OP_PARAM, d, NULL, 0, arg_param(&p));
}

/* ---------------------------------------------------------------------------------------------------------- */

static void check_well_formed(void) {
  UOpScope sc = uop_scope_begin();
  UOp *a = uop_variable("a", 0, 10, NULL), *b = uop_variable("b", 0, 10, NULL);
  UOp *r0 = uop_range(ci(DT_WEAKINT, 16), 0, AXIS_LOOP);
  UOp *idx = uop_add(uop_idiv_int(uop_add(uop_mul_int(a, 4), b), 3), r0);

  /* tensor graphs: index math, Variables and binds, movement, reduce, buffers and stores */
  OK(idx, SPEC_TENSOR);
  OK(a, SPEC_TENSOR);
  OK(uop_bind(a, 3), SPEC_TENSOR);
  OK(uop_add(uop_bind(a, 3), ci(DT_WEAKINT, 1)), SPEC_TENSOR);
  OK(uop_where(uop_lt_int(a, 3), a, b), SPEC_TENSOR);
  OK(uop_where(uop_lt_int(r0, 8), uop_add_int(r0, 1), uop_invalid()), SPEC_TENSOR);
  OK(uop_cast(uop_add(a, b), DT_INT32), SPEC_TENSOR);
  OK(uop_new(TG_OP_SHL, DT_INT32, (UOp *[]){uop_cast(a, DT_INT32), ci(DT_UINT32, 2)}, 2, arg_none()), SPEC_TENSOR);
  OK(uop_alu1(TG_OP_SQRT, cf(DT_FLOAT32, 2.0)), SPEC_TENSOR);
  OK(uop_max(cf(DT_FLOAT32, 2.0), cf(DT_WEAKFLOAT, 0.5)), SPEC_TENSOR);
  OK(uop_const(dt_vec(DT_FLOAT32, 4), const_float(1.0)), SPEC_TENSOR);
  UOp *buf = global_buffer(0, DT_FLOAT32, 16);
  UOp *val = uop_new(TG_OP_REDUCE, DT_FLOAT32, (UOp *[]){cf(DT_FLOAT32, 1.0), r0}, 2, arg_reduce(TG_OP_ADD, 1));
  UOp *st = n2(TG_OP_STORE, DT_VOID, buf, val);
  UOp *after = n2(TG_OP_AFTER, DT_FLOAT32, buf, st);
  UOp *shape = uop_new(TG_OP_STACK, DT_WEAKINT, (UOp *[]){ci(DT_WEAKINT, 4), ci(DT_WEAKINT, 4)}, 2, arg_none());
  UOp *resh = n2(TG_OP_RESHAPE, DT_FLOAT32, n1(TG_OP_CONTIGUOUS, DT_FLOAT32, after), shape);
  int64_t perm[2] = {1, 0};
  UOp *permuted = uop_new(TG_OP_PERMUTE, DT_FLOAT32, &resh, 1, arg_ints(ARG_PERM, perm, 2));
  UOp *copied = uop_new(TG_OP_COPY, DT_FLOAT32, &permuted, 1, arg_str("CUDA"));
  OK(uop_sink((UOp *[]){copied, n1(TG_OP_DETACH, DT_FLOAT32, resh)}, 2), SPEC_TENSOR);
  OK(uop_sink((UOp *[]){copied}, 1), SPEC_FULL);

  /* the kernel graph: CALLs of kernel SINKs on PARAMs (the body is not entered), buffers, binds */
  KernelInfo ki;
  memset(&ki, 0, sizeof ki);
  strcpy(ki.name, "E_16");
  UOp *body = uop_new(TG_OP_SINK, DT_VOID, (UOp *[]){n2(TG_OP_ADD, DT_FLOAT32, cf(DT_FLOAT32, 1), cf(DT_FLOAT32, 2))},
                      1, arg_kernel(&ki));
  UOp *kbuf = global_buffer(1, DT_FLOAT32, 16);
  UOp *call = uop_new(TG_OP_CALL, DT_VOID, (UOp *[]){body, kbuf, uop_bind(a, 4)}, 3, arg_none());
  UOp *kafter = n2(TG_OP_AFTER, DT_FLOAT32, kbuf, call);
  OK(uop_sink(&kafter, 1), SPEC_KERNEL);
  OK(uop_new(TG_OP_STACK, DT_WEAKINT, (UOp *[]){ci(DT_WEAKINT, 2), a, uop_bind(b, 1)}, 3, arg_none()), SPEC_KERNEL);

  /* a program: int32 index math over a RANGE and a SPECIAL, LOAD/STORE through INDEX, a literal CAST(weak CONST) */
  UOp *p0 = kernel_param(0, DT_FLOAT32), *p1 = kernel_param(1, DT_FLOAT32);
  UOp *r = uop_range(ci(DT_INT32, 16), 0, AXIS_LOOP);
  UOp *g = uop_special(ci(DT_INT32, 4), "gidx0");
  UOp *i32 = n2(TG_OP_ADD, DT_INT32, n2(TG_OP_MUL, DT_INT32, g, ci(DT_INT32, 16)), r);
  UOp *ld = n1(TG_OP_LOAD, DT_FLOAT32, n2(TG_OP_INDEX, DT_FLOAT32, p1, i32));
  UOp *one = n1(TG_OP_CAST, DT_FLOAT32, cf(DT_WEAKFLOAT, 1.0));
  UOp *gate = n2(TG_OP_CMPLT, DT_BOOL, r, ci(DT_INT32, 8));
  UOp *gated = n3(TG_OP_LOAD, DT_FLOAT32, n2(TG_OP_INDEX, DT_FLOAT32, p1, r), cf(DT_FLOAT32, 0.0), gate);
  UOp *store = n2(TG_OP_STORE, DT_VOID, n2(TG_OP_INDEX, DT_FLOAT32, p0, i32),
                  n2(TG_OP_ADD, DT_FLOAT32, n2(TG_OP_ADD, DT_FLOAT32, ld, one), gated));
  UOp *prog = uop_sink((UOp *[]){n2(TG_OP_END, DT_VOID, store, r)}, 1);
  OK(prog, SPEC_PROGRAM);
  OK(prog, SPEC_FULL);
  OK(uop_new(TG_OP_IF, DT_VOID, (UOp *[]){gate, n2(TG_OP_INDEX, DT_FLOAT32, p0, r)}, 2, arg_none()), SPEC_PROGRAM);
  uop_scope_end(sc);
}

/* ---------------------------------------------------------------------------------------------------------- */

static void check_source_counts(void) {
  UOpScope sc = uop_scope_begin();
  UOp *x = cf(DT_FLOAT32, 1.0), *i = ci(DT_INT32, 3), *t = uop_const_bool(true);
  UOp *three[3] = {x, x, x}, *four[4] = {x, x, x, x};
  REJECT(n1(TG_OP_ADD, DT_FLOAT32, x), SPEC_TENSOR, "ADD", "takes 2 sources, got 1");
  REJECT(uop_new(TG_OP_ADD, DT_FLOAT32, three, 3, arg_none()), SPEC_TENSOR, "ADD", "takes 2 sources, got 3");
  REJECT(uop_new(TG_OP_CMPLT, DT_BOOL, three, 3, arg_none()), SPEC_PROGRAM, "CMPLT", "takes 2 sources");
  REJECT(n2(TG_OP_SIN, DT_FLOAT32, x, x), SPEC_TENSOR, "SIN", "takes 1 source, got 2");
  REJECT(uop_new(TG_OP_NEG, DT_FLOAT32, NULL, 0, arg_none()), SPEC_FULL, "NEG", "takes 1 source, got 0");
  REJECT(uop_new(TG_OP_CAST, DT_INT32, NULL, 0, arg_none()), SPEC_TENSOR, "CAST", "takes 1 source, got 0");
  REJECT(n2(TG_OP_CAST, DT_INT32, x, x), SPEC_TENSOR, "CAST", "takes 1 source, got 2");
  REJECT(n2(TG_OP_BITCAST, DT_INT32, x, x), SPEC_PROGRAM, "BITCAST", "takes 1 source");
  REJECT(n2(TG_OP_WHERE, DT_FLOAT32, t, x), SPEC_TENSOR, "WHERE", "takes 3 sources, got 2");
  REJECT(uop_new(TG_OP_WHERE, DT_FLOAT32, four, 4, arg_none()), SPEC_TENSOR, "WHERE", "takes 3 sources, got 4");
  REJECT(n2(TG_OP_MULACC, DT_FLOAT32, x, x), SPEC_PROGRAM, "MULACC", "takes 3 sources");
  REJECT(uop_new(TG_OP_LOAD, DT_FLOAT32, NULL, 0, arg_none()), SPEC_PROGRAM, "LOAD", "takes 1 to 3 sources, got 0");
  REJECT(uop_new(TG_OP_LOAD, DT_FLOAT32, four, 4, arg_none()), SPEC_PROGRAM, "LOAD", "got 4");
  REJECT(n1(TG_OP_STORE, DT_VOID, x), SPEC_PROGRAM, "STORE", "takes 2 to 3 sources, got 1");
  REJECT(uop_new(TG_OP_STORE, DT_VOID, four, 4, arg_none()), SPEC_TENSOR, "STORE", "got 4");
  REJECT(uop_new(TG_OP_INDEX, DT_FLOAT32, NULL, 0, arg_none()), SPEC_PROGRAM, "INDEX", "at least 1 source, got 0");
  RangeArg ra = {.axis_id = 0, .axis_type = AXIS_LOOP};
  REJECT(uop_new(TG_OP_RANGE, DT_INT32, NULL, 0, arg_range(&ra)), SPEC_PROGRAM, "RANGE", "at least 1 source, got 0");
  REJECT(uop_new(TG_OP_END, DT_VOID, NULL, 0, arg_none()), SPEC_PROGRAM, "END", "at least 1 source");
  REJECT(uop_new(TG_OP_AFTER, DT_FLOAT32, NULL, 0, arg_none()), SPEC_TENSOR, "AFTER", "at least 1 source");
  REJECT(uop_new(TG_OP_SPECIAL, DT_INT32, NULL, 0, arg_str("gidx0")), SPEC_PROGRAM, "SPECIAL", "takes 1 source, got 0");
  REJECT(uop_new(TG_OP_CONST, DT_INT32, &i, 1, arg_const(const_int(1))), SPEC_TENSOR, "CONST", "takes 0 sources, got 1");
  int64_t perm[1] = {0};
  REJECT(uop_new(TG_OP_PERMUTE, DT_FLOAT32, three, 2, arg_ints(ARG_PERM, perm, 1)), SPEC_TENSOR, "PERMUTE", "takes 1 source");
  REJECT(n1(TG_OP_RESHAPE, DT_FLOAT32, x), SPEC_TENSOR, "RESHAPE", "takes 2 sources, got 1");
  REJECT(n2(TG_OP_PAD, DT_FLOAT32, x, i), SPEC_TENSOR, "PAD", "takes 3 sources, got 2");
  REJECT(uop_new(TG_OP_GETTUPLE, DT_FLOAT32, NULL, 0, arg_int(0)), SPEC_TENSOR, "GETTUPLE", "takes 1 source");
  REJECT(n1(TG_OP_IF, DT_VOID, t), SPEC_PROGRAM, "IF", "takes 2 sources, got 1");
  REJECT(uop_new(TG_OP_REDUCE, DT_FLOAT32, NULL, 0, arg_reduce(TG_OP_ADD, 1)), SPEC_TENSOR, "REDUCE", "at least 1 source");
  REJECT(uop_new(TG_OP_CONTIGUOUS, DT_FLOAT32, three, 2, arg_none()), SPEC_TENSOR, "CONTIGUOUS", "takes 1 source, got 2");
  /* the failing node is found below a well-formed root too */
  REJECT(uop_sink((UOp *[]){uop_add(x, x), n1(TG_OP_MUL, DT_FLOAT32, x)}, 2), SPEC_TENSOR, "MUL", "takes 2 sources");
  uop_scope_end(sc);
}

static void check_dtypes(void) {
  UOpScope sc = uop_scope_begin();
  UOp *f = cf(DT_FLOAT32, 1.0), *h = cf(DT_FLOAT16, 1.0), *i = ci(DT_INT32, 3), *l = ci(DT_INT64, 3);
  UOp *t = uop_const_bool(true);
  REJECT(n2(TG_OP_ADD, DT_FLOAT32, f, i), SPEC_TENSOR, "ADD", "source 1 has dtype int");
  REJECT(n2(TG_OP_MUL, DT_FLOAT32, h, f), SPEC_PROGRAM, "MUL", "source 0 has dtype half");
  REJECT(n2(TG_OP_ADD, DT_INT32, i, l), SPEC_FULL, "ADD", "dtype long");
  OK(n2(TG_OP_ADD, DT_INT64, l, ci(DT_WEAKINT, 1)), SPEC_TENSOR); /* a weak source adapts */
  REJECT(n2(TG_OP_CMPLT, DT_INT32, i, i), SPEC_TENSOR, "CMPLT", "produces bool");
  REJECT(n2(TG_OP_CMPNE, DT_BOOL, f, i), SPEC_TENSOR, "CMPNE", "different dtypes float and int");
  REJECT(n3(TG_OP_WHERE, DT_FLOAT32, i, f, f), SPEC_TENSOR, "WHERE", "condition must be bool");
  REJECT(n3(TG_OP_WHERE, DT_FLOAT32, t, f, h), SPEC_TENSOR, "WHERE", "branch 2 has dtype half");
  REJECT(n2(TG_OP_SHL, DT_FLOAT32, f, i), SPEC_TENSOR, "SHL", "float");
  REJECT(n2(TG_OP_SHR, DT_INT32, i, ci(DT_INT16, 1)), SPEC_TENSOR, "SHR", "shift count has dtype short");
  REJECT(n2(TG_OP_AND, DT_FLOAT32, f, f), SPEC_PROGRAM, "AND", "bitwise op on float");
  REJECT(n2(TG_OP_FLOORDIV, DT_FLOAT32, f, f), SPEC_TENSOR, "FLOORDIV", "non-int dtype float");
  REJECT(n2(TG_OP_CMOD, DT_FLOAT16, h, h), SPEC_PROGRAM, "CMOD", "non-int");
  REJECT(n1(TG_OP_EXP2, DT_INT32, i), SPEC_TENSOR, "EXP2", "produce floats");
  REJECT(n1(TG_OP_CAST, DT_VOID, i), SPEC_TENSOR, "CAST", "void");
  REJECT(uop_new(TG_OP_STACK, DT_FLOAT32, (UOp *[]){f, i}, 2, arg_none()), SPEC_TENSOR, "STACK", "element 1 has dtype int");
  REJECT(uop_new(TG_OP_RANGE, DT_INT32, &l, 1, arg_range(&(RangeArg){.axis_id = 1, .axis_type = AXIS_LOOP})), SPEC_PROGRAM,
         "RANGE", "end has dtype long");
  UOp *buf = global_buffer(0, DT_FLOAT32, 4);
  REJECT(n2(TG_OP_AFTER, DT_INT32, buf, n2(TG_OP_STORE, DT_VOID, buf, f)), SPEC_TENSOR, "AFTER", "has dtype int");
  UOp *p = kernel_param(0, DT_FLOAT32);
  UOp *r = uop_range(ci(DT_INT32, 4), 0, AXIS_LOOP);
  UOp *gate = n2(TG_OP_CMPLT, DT_BOOL, r, ci(DT_INT32, 2));
  REJECT(n3(TG_OP_LOAD, DT_FLOAT32, n2(TG_OP_INDEX, DT_FLOAT32, p, r), i, gate), SPEC_PROGRAM, "LOAD", "alternative value");
  REJECT(n2(TG_OP_INDEX, DT_FLOAT32, p, f), SPEC_PROGRAM, "INDEX", "no spec_program rule allows");
  /* programs: no weak dtypes, no movement ops, no Invalid */
  REJECT(n2(TG_OP_ADD, DT_WEAKINT, ci(DT_WEAKINT, 1), ci(DT_WEAKINT, 2)), SPEC_PROGRAM, "ADD", "weak dtype weakint");
  REJECT(n2(TG_OP_RESHAPE, DT_FLOAT32, f, i), SPEC_PROGRAM, "RESHAPE", "movement op RESHAPE");
  REJECT(uop_invalid(), SPEC_PROGRAM, "CONST", "Invalid is not allowed");
  REJECT(uop_special(ci(DT_WEAKINT, 4), "gidx0"), SPEC_PROGRAM, "SPECIAL", "weak dtype weakint");
  REJECT(uop_special(ci(DT_INT64, 4), "gidx0"), SPEC_PROGRAM, "SPECIAL", "no spec_program rule");
  OK(uop_special(ci(DT_INT32, 4), "gidx0"), SPEC_PROGRAM);
  REJECT(n2(TG_OP_CMPEQ, DT_INT32, i, i), SPEC_PROGRAM, "CMPEQ", "bool");
  /* structure: SINK is void, END closes RANGEs, AFTER orders storage (not values) */
  REJECT(uop_new(TG_OP_SINK, DT_FLOAT32, &f, 1, arg_none()), SPEC_TENSOR, "SINK", "no spec_tensor rule allows");
  REJECT(n2(TG_OP_END, DT_VOID, n2(TG_OP_STORE, DT_VOID, n2(TG_OP_INDEX, DT_FLOAT32, p, r), f), i), SPEC_PROGRAM, "END",
         "no spec_program rule allows");
  REJECT(n2(TG_OP_AFTER, DT_FLOAT32, n2(TG_OP_ADD, DT_FLOAT32, f, f), n2(TG_OP_STORE, DT_VOID, buf, f)), SPEC_TENSOR,
         "AFTER", "no spec_tensor rule allows");
  REJECT(n2(TG_OP_GROUP, DT_VOID, f, f), SPEC_PROGRAM, "GROUP", "no spec_program rule allows");
  OK(n2(TG_OP_GROUP, DT_VOID, n2(TG_OP_STORE, DT_VOID, n2(TG_OP_INDEX, DT_FLOAT32, p, r), f), uop_new(TG_OP_NOOP, DT_VOID,
         NULL, 0, arg_none())), SPEC_PROGRAM);
  uop_scope_end(sc);
}

static void check_args(void) {
  UOpScope sc = uop_scope_begin();
  UOp *f = cf(DT_FLOAT32, 1.0), *i = ci(DT_INT32, 3), *w = ci(DT_WEAKINT, 4);
  REJECT(uop_new(TG_OP_RANGE, DT_WEAKINT, &w, 1, arg_none()), SPEC_TENSOR, "RANGE", "needs a RangeArg as its arg, got None");
  REJECT(uop_new(TG_OP_RANGE, DT_WEAKINT, &w, 1, arg_range(&(RangeArg){.axis_type = 42})), SPEC_TENSOR, "RANGE",
         "unknown axis type 42");
  REJECT(uop_new(TG_OP_BUFFER, DT_FLOAT32, &w, 1, arg_int(3)), SPEC_TENSOR, "BUFFER", "needs a ParamArg as its arg, got an int");
  REJECT(uop_new(TG_OP_PARAM, DT_FLOAT32, NULL, 0, arg_none()), SPEC_PROGRAM, "PARAM", "needs a ParamArg");
  REJECT(uop_new(TG_OP_CONST, DT_INT32, NULL, 0, arg_none()), SPEC_TENSOR, "CONST", "needs a Const as its arg");
  REJECT(uop_new(TG_OP_CONST, DT_FLOAT32, NULL, 0, arg_const(const_int(1))), SPEC_TENSOR, "CONST", "float CONST needs a float");
  REJECT(uop_new(TG_OP_CONST, DT_INT32, NULL, 0, arg_const(const_float(1.5))), SPEC_PROGRAM, "CONST", "int CONST needs an int");
  REJECT(uop_new(TG_OP_CONST, DT_BOOL, NULL, 0, arg_const(const_int(1))), SPEC_KERNEL, "CONST", "bool CONST needs a bool");
  REJECT(uop_new(TG_OP_CONST, DT_INT32, NULL, 0, arg_const(const_invalid())), SPEC_TENSOR, "CONST", "Invalid is a bool");
  REJECT(uop_new(TG_OP_CONST, DT_WEAKINT, NULL, 0, arg_const(const_float(1.0))), SPEC_PROGRAM, "CONST", "weak CONST");
  REJECT(uop_new(TG_OP_CONST, DT_VOID, NULL, 0, arg_const(const_int(0))), SPEC_TENSOR, "CONST", "void");
  REJECT(uop_new(TG_OP_CONST, dt_vec(DT_FLOAT32, 4), NULL, 0, arg_const(const_float(0))), SPEC_TENSOR, "CONST", "scalar");
  REJECT(uop_new(TG_OP_REDUCE, DT_FLOAT32, &f, 1, arg_op(TG_OP_ADD)), SPEC_TENSOR, "REDUCE", "needs (op, axes)");
  REJECT(uop_new(TG_OP_REDUCE, DT_FLOAT32, &f, 1, arg_reduce(TG_OP_SUB, 1)), SPEC_TENSOR, "REDUCE", "SUB is not a reduce op");
  REJECT(uop_new(TG_OP_REDUCE, DT_FLOAT32, (UOp *[]){f, ci(DT_INT64, 0)}, 2, arg_reduce(TG_OP_MAX, 1)), SPEC_TENSOR,
         "REDUCE", "range 1 has dtype long");
  int64_t bad_perm[3] = {0, 2, 2};
  REJECT(uop_new(TG_OP_PERMUTE, DT_FLOAT32, &f, 1, arg_ints(ARG_PERM, bad_perm, 3)), SPEC_TENSOR, "PERMUTE", "not a permutation");
  REJECT(uop_new(TG_OP_SPECIAL, DT_INT32, &i, 1, arg_int(0)), SPEC_PROGRAM, "SPECIAL", "needs a string");
  REJECT(uop_new(TG_OP_COPY, DT_FLOAT32, &f, 1, arg_str("")), SPEC_TENSOR, "COPY", "target device");
  REJECT(uop_new(TG_OP_ADD, DT_FLOAT32, (UOp *[]){f, f}, 2, arg_int(1)), SPEC_TENSOR, "ADD", "needs None as its arg");
  REJECT(uop_new(TG_OP_GETTUPLE, DT_FLOAT32, &f, 1, arg_none()), SPEC_TENSOR, "GETTUPLE", "needs an int");
  UOp *tuple = uop_new(TG_OP_TUPLE, DT_VOID, &f, 1, arg_none());
  OK(uop_new(TG_OP_GETTUPLE, DT_FLOAT32, &tuple, 1, arg_int(0)), SPEC_TENSOR);
  REJECT(uop_new(TG_OP_GETTUPLE, DT_FLOAT32, &tuple, 1, arg_int(1)), SPEC_TENSOR, "GETTUPLE", "out of the TUPLE");
  REJECT(uop_new(TG_OP_WMMA, DT_FLOAT32, (UOp *[]){f, f, f}, 3, arg_none()), SPEC_FULL, "WMMA", "needs a WMMA arg"); /* its arg: codegen/opt_tc.c */
  REJECT(uop_new(TG_OP_MSELECT, DT_FLOAT32, &f, 1, arg_int(0)), SPEC_TENSOR, "MSELECT", "multi-device");
  uop_scope_end(sc);
}

static UOp *make_var(const char *name, i128 lo, i128 hi, const DType *d, const DType *param_dtype, const char *device) {
  ParamArg p = param(-1, param_dtype, ADDR_ALU, device);
  p.vmin = lo;
  p.vmax = hi;
  snprintf(p.name, sizeof p.name, "%s", name);
  return uop_new(TG_OP_BUFFER, d, NULL, 0, arg_param(&p));
}

static void check_variables(void) {
  UOpScope sc = uop_scope_begin();
  OK(make_var("n", 1, 8, DT_INT32, DT_INT32, ""), SPEC_TENSOR);
  OK(make_var("n", 1, 8, DT_INT32, DT_INT32, ""), SPEC_KERNEL);
  REJECT(make_var("", 1, 8, DT_WEAKINT, DT_WEAKINT, ""), SPEC_TENSOR, "BUFFER", "needs a name");
  REJECT(make_var("n", 9, 8, DT_WEAKINT, DT_WEAKINT, ""), SPEC_TENSOR, "BUFFER", "range is empty");
  REJECT(make_var("n", 0, 1, DT_FLOAT32, DT_FLOAT32, ""), SPEC_TENSOR, "BUFFER", "int dtype");
  REJECT(make_var("n", 0, 1, DT_INT32, DT_INT64, ""), SPEC_KERNEL, "BUFFER", "dtype differs");
  REJECT(make_var("n", 0, 1, DT_INT32, DT_INT32, "CPU"), SPEC_TENSOR, "BUFFER", "no device");
  REJECT(make_var("n", 0, 1, DT_INT32, DT_INT32, ""), SPEC_PROGRAM, "BUFFER", "LOCAL or REG");
  /* binds: AFTER(var, STORE(var, CONST)) with the value in range */
  UOp *v = uop_variable("i", 0, 10, NULL);
  OK(uop_bind(v, 10), SPEC_KERNEL);
  UOp *st = n2(TG_OP_STORE, DT_VOID, v, ci(DT_WEAKINT, 11));
  REJECT(n2(TG_OP_AFTER, DT_WEAKINT, v, st), SPEC_TENSOR, "STORE", "bind value 11 is outside [0, 10] of Variable i");
  REJECT(n2(TG_OP_AFTER, DT_WEAKINT, v, st), SPEC_KERNEL, "STORE", "outside");
  st = n2(TG_OP_STORE, DT_VOID, v, cf(DT_WEAKFLOAT, 1.0));
  REJECT(n2(TG_OP_AFTER, DT_WEAKINT, v, st), SPEC_TENSOR, "STORE", "bound to an int CONST");
  /* kernel graph: only Variables are stored into; computation belongs inside kernels */
  UOp *buf = global_buffer(0, DT_FLOAT32, 4);
  REJECT(n2(TG_OP_STORE, DT_VOID, buf, cf(DT_FLOAT32, 1)), SPEC_KERNEL, "STORE", "only a Variable");
  REJECT(uop_add(v, ci(DT_WEAKINT, 1)), SPEC_KERNEL, "ADD", "no spec_kernel_graph rule allows");
  uop_scope_end(sc);
}

static void check_robustness(void) {
  UOpScope sc = uop_scope_begin();
  CHECK_EQ_INT(uop_spec_check(NULL, SPEC_TENSOR), TG_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(uop_spec_check(uop_const_bool(true), (SpecStage)9), TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "unknown stage") != NULL);
  /* every op with no sources and no arg, at every stage: a verdict, never a crash */
  for (int op = 0; op < TG_OP_COUNT; op++) {
    UOp *u = uop_new((TgOp)op, DT_FLOAT32, NULL, 0, arg_none());
    for (int st = SPEC_TENSOR; st <= SPEC_FULL; st++) {
      tg_status s = uop_spec_check(u, (SpecStage)st);
      CHECK(s == TG_OK || (s == TG_ERR_INVALID_ARGUMENT && strstr(tg_last_error(), uop_op_name((TgOp)op))));
    }
  }
  /* a long chain is walked without recursion */
  UOp *x = uop_variable("a", 0, 10, NULL);
  for (int k = 0; k < 20000; k++) x = uop_add_int(x, 1);
  OK(x, SPEC_TENSOR);
  CHECK_EQ_INT(spec_enabled(), tg_getenv_int("SPEC", 0) != 0);
  CHECK_EQ_STR(spec_stage_name(SPEC_KERNEL), "spec_kernel_graph");
  uop_scope_end(sc);
}

/* The pipeline's boundaries (spec_verify): off under SPEC=0, on under SPEC=1 (the runner's default) with the
 * boundary named first; a LINEAR at SPEC_PROGRAM is checked as its list of instructions. */
static UOp *sink_of(UOp *x) { return uop_sink(&x, 1); }

static void check_boundaries(void) {
  UOpScope sc = uop_scope_begin();
  const char *was = getenv("SPEC");
  char *saved = was ? tg_strdup(was) : NULL;
  UOp *bad = sink_of(n2(TG_OP_ADD, DT_FLOAT32, cf(DT_FLOAT32, 1), ci(DT_INT32, 2)));
  test_setenv("SPEC", "0");
  CHECK_EQ_INT(spec_verify(bad, SPEC_TENSOR, "here"), TG_OK);
  test_setenv("SPEC", "1");
  CHECK_EQ_INT(spec_verify(bad, SPEC_TENSOR, "here"), TG_ERR_INVALID_ARGUMENT);
  CHECK_MSG(strncmp(tg_last_error(), "SPEC: here: spec_tensor: UOp verification failed", 48) == 0, "%s",
            tg_last_error());
  CHECK_MSG(strstr(tg_last_error(), "ADD (dtype float,") != NULL, "%s", tg_last_error());
  CHECK_EQ_INT(spec_verify(sink_of(cf(DT_FLOAT32, 1)), SPEC_TENSOR, "here"), TG_OK);
  /* a program as a list: its lines in order; a weak ALU op (line 1) is not allowed in a program */
  UOp *good_line = ci(DT_INT32, 3), *weak_line = ci(DT_WEAKINT, 3);
  UOp *alu = n2(TG_OP_ADD, DT_WEAKINT, weak_line, weak_line);
  CHECK_EQ_INT(spec_verify(uop_new(TG_OP_LINEAR, DT_VOID, &good_line, 1, arg_none()), SPEC_PROGRAM, "list"), TG_OK);
  UOp *lines[2] = {weak_line, alu};
  CHECK_EQ_INT(spec_verify(uop_new(TG_OP_LINEAR, DT_VOID, lines, 2, arg_none()), SPEC_PROGRAM, "list"),
               TG_ERR_INVALID_ARGUMENT);
  CHECK_MSG(strstr(tg_last_error(), "SPEC: list: spec_program: UOp verification failed at node 1: ADD") != NULL, "%s",
            tg_last_error());
  /* codegen checks its input: a malformed kernel AST fails at the first boundary, naming it */
  CHECK(cg_lower(bad, renderer_clang()) == NULL);
  CHECK_MSG(strstr(tg_last_error(), "SPEC: codegen: the kernel AST: spec_tensor") != NULL, "%s", tg_last_error());
  if (saved) test_setenv("SPEC", saved);
  else test_unsetenv("SPEC");
  tg_free(saved);
  uop_scope_end(sc);
}

/* the same verdicts as tinygrad's type_verify on graphs both represent alike (tests/render_cases.h) */
static void check_against_tinygrad(void) {
  UOpScope sc = uop_scope_begin();
  for (size_t i = 0; i < TG_ARRAY_LEN(spec_cases); i++) {
    UOp *u = uop_parse(spec_cases[i].graph);
    CHECK_MSG(u != NULL, "could not parse %s", spec_cases[i].graph);
    if (!u) continue;
    SpecStage st = strcmp(spec_cases[i].stage, "tensor") == 0 ? SPEC_TENSOR : SPEC_PROGRAM;
    bool ok = uop_spec_check(u, st) == TG_OK;
    CHECK_MSG(ok == (spec_cases[i].ok != 0), "%s of %s: %s, tinygrad says %s (%s)", spec_stage_name(st),
              spec_cases[i].graph, ok ? "accepted" : "rejected", spec_cases[i].tinygrad_ok ? "ok" : "malformed",
              ok ? "" : tg_last_error());
  }
  uop_scope_end(sc);
}

void suite_spec(void) {
  check_against_tinygrad();
  check_well_formed();
  check_source_counts();
  check_dtypes();
  check_args();
  check_variables();
  check_robustness();
  check_boundaries();
}
