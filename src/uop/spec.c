/* spec.c — per-stage validators (tinygrad's uop/spec.py): which node forms are legal in tensor graphs, kernel graphs,
 * programs, and during codegen, written as rule tables over the pattern syntax of pattern.h.
 *
 * A rule's callback answers like tinygrad's spec lambdas: ALLOW (the form is legal), reject() (illegal, with the
 * reason) or NULL (no opinion: the next rule is tried). A node no rule answers for is illegal. The stage's table is
 * the concatenation tinygrad uses (stage rules, then the shared rules).
 *
 * Two checks run before the tables, as plain C over a per-op table: the source count of fixed-arity ops and the kind
 * of arg an op must carry. They are one fact per op (70 rows); written as patterns they would be 70 near-identical
 * rules, and the table gives precise messages ("ADD takes 2 sources, got 3") instead of "no rule allows this".
 * tinygrad leaves arities unchecked (an ADD with three sources passes its ALU rule); we are stricter there. */
#include "spec.h"

#include <stdio.h>

#include "pattern.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* verdicts                                                                                                       */

typedef struct SpecCtx {
  char why[320]; /* the reason of the last reject() */
} SpecCtx;

/* Distinct addresses that are never nodes of a checked graph: what an answering callback returns. */
static UOp g_allow_marker, g_reject_marker;
#define ALLOW (&g_allow_marker)

TG_PRINTF(2, 3) static UOp *reject(RwCtx *rw, const char *fmt, ...) {
  SpecCtx *sc = rw->ctx;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sc->why, sizeof sc->why, fmt, ap);
  va_end(ap);
  return &g_reject_marker;
}
static UOp *judge(RwCtx *rw, bool ok, const char *why) { return ok ? ALLOW : reject(rw, "%s", why); }

/* ------------------------------------------------------------------------------------------------------------ */
/* small predicates (tinygrad's helpers of the same meaning)                                                      */

/* The node under movement ops (tinygrad's .base). */
static const UOp *base_of(const UOp *u) {
  for (int guard = 0; guard < 4096 && op_has(uop_op(u), OPP_MOVEMENT) && u->nsrc > 0; guard++) u = u->src[0];
  return u;
}
static bool is_invalid_base(const UOp *u) { return uop_is_invalid(base_of(u)); }
/* x has dtype d, or is Invalid (which stands in for any dtype) */
static bool matches_dtype(const UOp *x, const DType *d) { return x->dtype == d || is_invalid_base(x); }
static bool is_weak(const DType *d) { return d == DT_WEAKINT || d == DT_WEAKFLOAT; }
static bool is_int_dtype(const DType *d) { return !d->is_ptr && d->count == 1 && dt_is_int(d); }
static bool is_float_dtype(const DType *d) { return !d->is_ptr && dt_is_float(d); }
static const ParamArg *param_of(const UOp *u) { return u->arg.kind == ARG_PARAM ? u->arg.param : NULL; }
static bool is_device_str(const UOp *u) { return u->arg.kind == ARG_STR && u->arg.str && u->arg.str[0]; }

/* What is wrong with a Variable (a BUFFER in the ALU address space), or NULL when it is well-formed. */
static const char *variable_problem(const UOp *u) {
  const ParamArg *p = param_of(u);
  if (!p) return "a Variable needs a ParamArg";
  if (p->addrspace != ADDR_ALU) return "a Variable lives in the ALU address space";
  if (!p->name[0]) return "a Variable needs a name";
  if (p->slot != -1) return "a Variable has slot -1";
  if (p->dtype != u->dtype) return "the Variable's ParamArg dtype differs from its node dtype";
  if (!is_int_dtype(u->dtype)) return "a Variable must have an int dtype";
  if (p->vmin > p->vmax) return "the Variable's range is empty (vmin > vmax)";
  if (p->device[0]) return "a Variable has no device";
  if (p->multiple_of < 1) return "a Variable's multiple_of must be at least 1";
  return NULL;
}

/* A bound Variable: AFTER(var, STORE(var, CONST)). */
static bool is_bound_var(const UOp *u) {
  UOp *var;
  return uop_unbind(u, &var, NULL);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* callbacks of the shared rules                                                                                  */

static UOp *rule_allow(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw); TG_UNUSED(root); TG_UNUSED(m);
  return ALLOW;
}

/* CONST: Invalid is a bool const; otherwise the value's kind follows the dtype (float / int / bool). */
static UOp *check_const(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  const DType *d = x->dtype;
  Const c = x->arg.c;
  if (c.kind == CK_INVALID) return judge(rw, d == DT_BOOL, "Invalid is a bool CONST");
  if (d->is_ptr || d->count != 1) return reject(rw, "a CONST is a scalar (vector constants are a STACK of CONSTs)");
  switch (d->kind) {
  case DTK_VOID: return reject(rw, "a CONST cannot be void");
  case DTK_BOOL: return judge(rw, c.kind == CK_BOOL, "a bool CONST needs a bool value");
  case DTK_SINT: case DTK_UINT: case DTK_WEAKINT: return judge(rw, c.kind == CK_INT, "an int CONST needs an int value");
  case DTK_FLOAT: case DTK_WEAKFLOAT: return judge(rw, c.kind == CK_FLOAT, "a float CONST needs a float value");
  }
  return reject(rw, "unknown dtype kind");
}

/* STACK: every element has the STACK's (element) dtype, or is weak. */
static UOp *check_stack(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(m);
  for (uint32_t i = 0; i < s->nsrc; i++)
    if (!matches_dtype(s->src[i], s->dtype) && !is_weak(s->src[i]->dtype))
      return reject(rw, "STACK element %u has dtype %s, not the STACK's %s", (unsigned)i, s->src[i]->dtype->name,
                    s->dtype->name);
  return ALLOW;
}

/* WHERE(bool, a, b): the branches have the result dtype (or are weak). */
static UOp *check_where(RwCtx *rw, UOp *w, UOp **m) {
  TG_UNUSED(m);
  for (uint32_t i = 1; i < 3; i++)
    if (!matches_dtype(w->src[i], w->dtype) && !is_weak(w->src[i]->dtype))
      return reject(rw, "WHERE branch %u has dtype %s, not the result's %s", (unsigned)i, w->src[i]->dtype->name,
                    w->dtype->name);
  return ALLOW;
}
static UOp *reject_where_cond(RwCtx *rw, UOp *w, UOp **m) {
  TG_UNUSED(m);
  return reject(rw, "the WHERE condition must be bool, got %s", w->nsrc ? w->src[0]->dtype->name : "nothing");
}

/* Comparisons: both sides share a dtype (a weak or Invalid side adapts). */
static UOp *check_comparison(RwCtx *rw, UOp *root, UOp **m) {
  UOp *x = m[0], *y = m[1];
  TG_UNUSED(root);
  bool ok = matches_dtype(x, y->dtype) || matches_dtype(y, x->dtype) || is_weak(x->dtype) || is_weak(y->dtype);
  if (ok) return ALLOW;
  return reject(rw, "compared values have different dtypes %s and %s", x->dtype->name, y->dtype->name);
}
static UOp *reject_comparison_dtype(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  return reject(rw, "a comparison produces bool, not %s", root->dtype->name);
}

static UOp *check_bitwise_not_float(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  for (uint32_t i = 0; i < x->nsrc; i++)
    if (is_float_dtype(x->src[i]->dtype)) return reject(rw, "bitwise op on float source %u", (unsigned)i);
  return NULL;
}

/* Shifts: the value has the result dtype (or is weakint); the count too, or is uint32/weakint. */
static UOp *check_shift(RwCtx *rw, UOp *a, UOp **m) {
  UOp *x = m[0], *c = m[1];
  if (!matches_dtype(x, a->dtype) && x->dtype != DT_WEAKINT)
    return reject(rw, "shifted value has dtype %s, not the result's %s", x->dtype->name, a->dtype->name);
  if (!matches_dtype(c, a->dtype) && c->dtype != DT_UINT32 && c->dtype != DT_WEAKINT && !is_invalid_base(x))
    return reject(rw, "shift count has dtype %s (must be %s, uint or weakint)", c->dtype->name, a->dtype->name);
  return ALLOW;
}

static UOp *check_int_division(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (is_int_dtype(x->dtype)) return NULL;
  for (uint32_t i = 0; i < x->nsrc; i++)
    if (is_invalid_base(x->src[i])) return NULL;
  return reject(rw, "integer division/modulo on non-int dtype %s", x->dtype->name);
}

/* Every other ALU op: sources have the result dtype, or are weak. */
static UOp *check_alu(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  for (uint32_t i = 0; i < x->nsrc; i++)
    if (!matches_dtype(x->src[i], x->dtype) && !is_weak(x->src[i]->dtype))
      return reject(rw, "source %u has dtype %s, but %s's sources must have its dtype %s (or be weak)", (unsigned)i,
                    x->src[i]->dtype->name, uop_op_name(uop_op(x)), x->dtype->name);
  return ALLOW;
}

static UOp *check_cast(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return judge(rw, x->dtype != DT_VOID, "cannot cast to void");
}

/* RANGE(end, ...): the end has the RANGE's dtype; the arg is a RangeArg with a known axis type. */
static UOp *check_range(RwCtx *rw, UOp *rng, UOp **m) {
  UOp *x = m[0];
  if (!matches_dtype(x, rng->dtype))
    return reject(rw, "the RANGE end has dtype %s, not the RANGE's %s", x->dtype->name, rng->dtype->name);
  const RangeArg *r = rng->arg.kind == ARG_RANGE ? rng->arg.range : NULL;
  if (!r) return reject(rw, "a RANGE needs a RangeArg");
  if (r->axis_type < 0 || r->axis_type > AXIS_LOOP) return reject(rw, "unknown axis type %d", (int)r->axis_type);
  if (r->nsub < 0 || r->nsub > 4) return reject(rw, "bad sub id count %d", (int)r->nsub);
  return ALLOW;
}

static UOp *check_index(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw); TG_UNUSED(m);
  if (x->nsrc == 0) return NULL;
  for (uint32_t i = 1; i < x->nsrc; i++)
    if (!is_int_dtype(x->src[i]->dtype) && !is_invalid_base(x->src[i])) return NULL;
  return ALLOW;
}

static UOp *check_end(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw); TG_UNUSED(m);
  for (uint32_t i = 1; i < x->nsrc; i++)
    if (x->src[i]->op != TG_OP_RANGE) return NULL;
  return ALLOW;
}

static UOp *check_param(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return judge(rw, param_of(x) != NULL, "PARAM needs a ParamArg");
}

/* a BUFFER with a shape source inside kernels: local or register memory */
static UOp *check_local_buffer(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  const ParamArg *p = param_of(x);
  return judge(rw, p && (p->addrspace == ADDR_REG || p->addrspace == ADDR_LOCAL),
               "BUFFER here must be a ParamArg in the LOCAL or REG address space");
}

static UOp *check_after(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (matches_dtype(x->src[0], x->dtype)) return ALLOW;
  return reject(rw, "AFTER has dtype %s, but what it orders (%s) has %s", x->dtype->name, uop_op_name(uop_op(x->src[0])),
                x->src[0]->dtype->name);
}

static UOp *check_call_address(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (x->src[0]->dtype == DT_VOID) return NULL;
  return judge(rw, matches_dtype(x->src[0], DT_UINT64), "a CALL of an address needs a uint64 address");
}

static UOp *check_gated_load(RwCtx *rw, UOp *load, UOp **m) {
  UOp *alt = m[0];
  if (matches_dtype(alt, load->dtype)) return ALLOW;
  return reject(rw, "the LOAD's alternative value has dtype %s, not the LOAD's %s", alt->dtype->name,
                load->dtype->name);
}

/* WMMA(a, b, acc): the tensor core's arg (codegen/opt_tc.c), the value has the accumulator's dtype */
static UOp *check_wmma(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (x->arg.kind != ARG_WMMA || x->arg.len < 9) return reject(rw, "WMMA needs a WMMA arg");
  return judge(rw, x->dtype == x->src[2]->dtype, "WMMA's dtype is its accumulator's");
}

static const Rule shared_rules[] = {
    RULE("SINK.void", rule_allow, NULL),
    RULE("NOOP", rule_allow, NULL),
    RULE("(CONST)", check_const, NULL),
    RULE("(STACK.void)", rule_allow, NULL),
    RULE("(STACK _ ...)", check_stack, NULL),
    /* ALU: sources match the result dtype, except where comparisons / WHERE conditions / shift counts differ */
    RULE("(WHERE _.bool _ _)", check_where, NULL),
    RULE("WHERE", reject_where_cond, NULL),
    RULE("(Comparison.bool x y)", check_comparison, NULL),
    RULE("Comparison", reject_comparison_dtype, NULL),
    RULE("AND|OR|XOR|SHL|SHR", check_bitwise_not_float, NULL),
    RULE("(SHL|SHR x c)", check_shift, NULL),
    RULE("CDIV|CMOD|FLOORDIV|FLOORMOD", check_int_division, NULL),
    RULE("ALU", check_alu, NULL),
    RULE("(CAST|BITCAST _)", check_cast, NULL),
    /* RANGE may be in the big graph; a void RANGE is a bound-less loop header */
    RULE("(RANGE x ...)", check_range, NULL),
    RULE("INDEX", check_index, NULL),
    /* END closes RANGEs; a loop END carries a trailing bool for the back edge */
    RULE("(END _ ...)", check_end, NULL),
    RULE("(END _ RANGE.void _.bool)", rule_allow, NULL),
    RULE("PARAM", check_param, NULL),
    RULE("(BUFFER _)", check_local_buffer, NULL),
    RULE("(GROUP.void *GROUP|STORE|NOOP|INS|END)", rule_allow, NULL),
    RULE("(AFTER Movement|PARAM|BUFFER|CONTIGUOUS|INDEX|AFTER|UNSHARD|BITCAST|INS ...)", check_after, NULL),
    RULE("CUSTOMI|CUSTOM", rule_allow, NULL),
    RULE("(CALL _ ...)", check_call_address, NULL),
    RULE("BARRIER.void", rule_allow, NULL),
    RULE("INS", rule_allow, NULL),
    /* LOAD(idx) / STORE(idx, val) through an INDEX (or a cast of one), optionally gated */
    RULE("(LOAD {INDEX|SHRINK|(CAST INDEX|SHRINK)})", rule_allow, NULL),
    RULE("(LOAD {INDEX|SHRINK|(CAST INDEX|SHRINK)} alt _.bool)", check_gated_load, NULL),
    RULE("(STORE {INDEX|SHRINK|(CAST INDEX|SHRINK)} _)", rule_allow, NULL),
    RULE("(STORE {INDEX|SHRINK|(CAST INDEX|SHRINK)} _ _.bool)", rule_allow, NULL),
    /* the tensor graph's STORE: a value into a target */
    RULE("(STORE.void _ _)", rule_allow, NULL),
    RULE("WMMA", check_wmma, NULL),
};

/* ------------------------------------------------------------------------------------------------------------ */
/* tensor graphs                                                                                                  */

static UOp *check_transcendental(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(m);
  return judge(rw, is_float_dtype(u->dtype) || is_invalid_base(u->src[0]), "transcendental ops produce floats");
}

/* a tensor BUFFER: (shape) with a ParamArg in GLOBAL memory on a device */
static UOp *check_global_buffer(RwCtx *rw, UOp *buf, UOp **m) {
  TG_UNUSED(m);
  const ParamArg *p = param_of(buf);
  if (!p || p->addrspace != ADDR_GLOBAL) return NULL;
  if (!matches_dtype(buf->src[0], DT_WEAKINT)) return reject(rw, "a BUFFER's size source must be weakint");
  return judge(rw, p->device[0] != 0, "a BUFFER needs a device");
}

/* a Variable: BUFFER in the ALU address space (tinygrad.c keeps it without the empty shape source) */
static UOp *check_variable(RwCtx *rw, UOp *buf, UOp **m) {
  TG_UNUSED(m);
  const ParamArg *p = param_of(buf);
  if (!p || p->addrspace != ADDR_ALU) return NULL;
  const char *why = variable_problem(buf);
  return why ? reject(rw, "%s", why) : ALLOW;
}

/* a bind: STORE(var, CONST value) with the value inside the Variable's range */
static UOp *check_bind_store(RwCtx *rw, UOp *st, UOp **m) {
  UOp *var = m[0], *val = m[1];
  TG_UNUSED(st);
  const ParamArg *p = param_of(var);
  if (!p || p->addrspace != ADDR_ALU) return NULL;
  if (val->arg.kind != ARG_CONST || val->arg.c.kind != CK_INT) return reject(rw, "a Variable is bound to an int CONST");
  i128 v = val->arg.c.i;
  if (v < p->vmin || v > p->vmax)
    return reject(rw, "bind value %lld is outside [%lld, %lld] of Variable %s", (long long)val->arg.c.i,
                  (long long)p->vmin, (long long)p->vmax, p->name);
  return ALLOW;
}

static UOp *check_str_arg(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return judge(rw, x->arg.kind == ARG_STR && x->arg.str, "the arg must be a string");
}

/* GETTUPLE(t) picks element `arg` of a TUPLE (directly or as a FUNCTION's result) */
static UOp *check_gettuple(RwCtx *rw, UOp *g, UOp **m) {
  UOp *t = m[0];
  if (g->arg.kind != ARG_INT || g->arg.i < 0 || (uint64_t)g->arg.i >= t->nsrc)
    return reject(rw, "GETTUPLE index out of the TUPLE's %u elements", (unsigned)t->nsrc);
  return judge(rw, matches_dtype(t->src[g->arg.i], g->dtype), "GETTUPLE dtype differs from the element's");
}

static UOp *check_special(RwCtx *rw, UOp *s, UOp **m) {
  UOp *x = m[0];
  if (!matches_dtype(x, s->dtype))
    return reject(rw, "SPECIAL's bound has dtype %s, not %s", x->dtype->name, s->dtype->name);
  return judge(rw, s->arg.kind == ARG_STR && s->arg.str && s->arg.str[0], "SPECIAL needs a name");
}

/* same number of elements in the two bound sources of PAD/SHRINK */
static UOp *check_pad_shrink(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  UOp *lo = x->src[1], *hi = x->src[2];
  size_t nlo = lo->op == TG_OP_STACK ? lo->nsrc : 1, nhi = hi->op == TG_OP_STACK ? hi->nsrc : 1;
  return judge(rw, nlo == nhi, "the two bound sources have different lengths");
}

static UOp *check_permute_flip(RwCtx *rw, UOp *mv, UOp **m) {
  TG_UNUSED(m);
  if (mv->op == TG_OP_FLIP) return judge(rw, mv->arg.kind == ARG_FLIP, "FLIP needs per-axis flags");
  if (mv->arg.kind != ARG_PERM) return reject(rw, "PERMUTE needs a permutation");
  uint64_t seen[2] = {0, 0};
  for (uint32_t i = 0; i < mv->arg.len; i++) {
    int64_t a = mv->arg.ints[i];
    if (a < 0 || a >= (int64_t)mv->arg.len || a >= 128 || (seen[a >> 6] >> (a & 63) & 1))
      return reject(rw, "PERMUTE order is not a permutation of 0..%u", (unsigned)mv->arg.len - 1);
    seen[a >> 6] |= (uint64_t)1 << (a & 63);
  }
  return ALLOW;
}

/* REDUCE(x, ranges...) with arg (reduce op, number of axes) */
static UOp *check_reduce(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (x->arg.kind != ARG_REDUCE) return reject(rw, "REDUCE needs a (op, axes) arg");
  if (x->arg.red.op < 0 || x->arg.red.op >= TG_OP_COUNT || !op_has((TgOp)x->arg.red.op, OPP_REDUCE))
    return reject(rw, "%s is not a reduce op", uop_op_name((TgOp)x->arg.red.op));
  if (x->arg.red.naxes < 0) return reject(rw, "negative axis count");
  for (uint32_t i = 1; i < x->nsrc; i++)
    if (x->src[i]->dtype != DT_WEAKINT && x->src[i]->dtype != DT_INT32)
      return reject(rw, "REDUCE range %u has dtype %s (must be weakint or int)", (unsigned)i, x->src[i]->dtype->name);
  return ALLOW;
}

static UOp *check_copy(RwCtx *rw, UOp *copy, UOp **m) {
  UOp *x = m[0];
  if (!matches_dtype(x, copy->dtype)) return reject(rw, "COPY changes the dtype");
  return judge(rw, is_device_str(copy), "COPY needs a target device");
}

/* tinygrad's ALLREDUCE arg is (op, device); tinygrad.c's ARG_OP holds the op, the device is the source's */
static UOp *check_allreduce(RwCtx *rw, UOp *red, UOp **m) {
  UOp *x = m[0];
  if (!matches_dtype(x, red->dtype)) return reject(rw, "ALLREDUCE changes the dtype");
  return judge(rw, red->arg.kind == ARG_OP && red->arg.op >= 0 && red->arg.op < TG_OP_COUNT &&
                       op_has((TgOp)red->arg.op, OPP_REDUCE), "ALLREDUCE needs a reduce op");
}

static UOp *reject_multi_device(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return reject(rw, "%s: multi-device graphs are not supported yet", uop_op_name(uop_op(x)));
}

static UOp *check_passthrough(RwCtx *rw, UOp *root, UOp **m) {
  UOp *x = m[0];
  bool hint = root->op != TG_OP_DETACH && root->arg.kind == ARG_INT &&
              (root->arg.i == CONTIG_HINT_UNMASKED || root->arg.i == CONTIG_HINT_LAYOUT);
  if (root->arg.kind != ARG_NONE && !hint)
    return reject(rw, "%s takes no arg%s", uop_op_name(uop_op(root)), root->op == TG_OP_DETACH ? "" : " but a ContigHint");
  return judge(rw, matches_dtype(x, root->dtype), "it must keep its source's dtype");
}

/* CUSTOM_GRAD(value, inputs...): the value of src[0]; the gradient of the inputs comes from the named rule */
static UOp *check_custom_grad(RwCtx *rw, UOp *root, UOp **m) {
  UOp *x = m[0];
  if (root->arg.kind != ARG_STR) return reject(rw, "CUSTOM_GRAD needs the name of its gradient rule");
  return judge(rw, matches_dtype(x, root->dtype), "it must keep its source's dtype");
}

static const Rule tensor_rules[] = {
    RULE("(SIN|LOG2|EXP2|SQRT|RECIPROCAL _)", check_transcendental, NULL),
    RULE("(BUFFER _)", check_global_buffer, NULL),
    RULE("(BUFFER _)", check_variable, NULL),
    RULE("(BUFFER)", check_variable, NULL),
    RULE("(STORE.void var:BUFFER val:CONST)", check_bind_store, NULL),
    RULE("CUSTOM_FUNCTION", check_str_arg, NULL),
    RULE("(CALL.void SINK|LINEAR|PROGRAM|COPY|CUSTOM_FUNCTION ...)", rule_allow, NULL),
    /* FUNCTION and TUPLE are void; GETTUPLE reads a TUPLE or a FUNCTION's TUPLE */
    RULE("(FUNCTION.void TUPLE ...)", rule_allow, NULL),
    RULE("TUPLE.void", rule_allow, NULL),
    RULE("(GETTUPLE (FUNCTION t:TUPLE ...))", check_gettuple, NULL),
    RULE("(GETTUPLE t:TUPLE)", check_gettuple, NULL),
    /* SPECIAL before index lowering */
    RULE("(SPECIAL x.weakint)", check_special, NULL),
    /* movement ops: shapes are sources, PERMUTE/FLIP carry their tuple */
    RULE("(RESHAPE|EXPAND _ _)", rule_allow, NULL),
    RULE("(PAD|SHRINK _ _ _)", check_pad_shrink, NULL),
    RULE("(PERMUTE|FLIP _)", check_permute_flip, NULL),
    RULE("(REDUCE _ ...)", check_reduce, NULL),
    RULE("(COPY x)", check_copy, NULL),
    RULE("(ALLREDUCE x)", check_allreduce, NULL),
    RULE("UNSHARD|MSELECT|MSTACK", reject_multi_device, NULL),
    RULE("(DETACH|CONTIGUOUS|CONTIGUOUS_BACKWARD x)", check_passthrough, NULL),
    RULE("(CUSTOM_GRAD x ...)", check_custom_grad, NULL),
    RULE("(STAGE _ ...)", rule_allow, NULL),
    /* codegen: PROGRAM gains sources through the pipeline (SINK, LINEAR, SOURCE, BINARY) */
    RULE("LINEAR.void", rule_allow, NULL),
    RULE("(SOURCE.void)", rule_allow, NULL),
    RULE("(BINARY.uint8)", check_str_arg, NULL),
    RULE("(PROGRAM.void SINK)", rule_allow, NULL),
    RULE("(PROGRAM.void SINK LINEAR)", rule_allow, NULL),
    RULE("(PROGRAM.void SINK LINEAR SOURCE)", rule_allow, NULL),
    RULE("(PROGRAM.void SINK LINEAR SOURCE BINARY)", rule_allow, NULL),
};

/* ------------------------------------------------------------------------------------------------------------ */
/* programs (lowered kernels)                                                                                     */

/* the one weak node a program may hold: the CONST inside a literal CAST, with its Python-like kind */
static UOp *check_weak_const(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  bool ok = (x->dtype == DT_WEAKINT && x->arg.c.kind == CK_INT) ||
            (x->dtype == DT_WEAKFLOAT && x->arg.c.kind == CK_FLOAT);
  return judge(rw, ok, "a weak CONST's value kind must match its dtype");
}

static UOp *reject_weak(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return reject(rw, "weak dtype %s is not allowed in a program", x->dtype->name);
}
static UOp *reject_movement(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return reject(rw, "movement op %s is not allowed in a program", uop_op_name(uop_op(x)));
}
static UOp *reject_invalid(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(x); TG_UNUSED(m);
  return reject(rw, "Invalid is not allowed in a program");
}

static UOp *check_program_special(RwCtx *rw, UOp *s, UOp **m) { return check_special(rw, s, m); }

static const Rule program_rules[] = {
    RULE("CONST.weaks", check_weak_const, NULL),
    RULE("_.weaks", reject_weak, NULL),
    RULE("(SHRINK PARAM|BUFFER|AFTER _ {CONST|(CAST CONST)})", rule_allow, NULL),
    RULE("Movement", reject_movement, NULL),
    RULE("BUFFER", check_local_buffer, NULL),
    RULE("invalid", reject_invalid, NULL),
    /* IF(gate, index for dedup) ... ENDIF(IF) */
    RULE("(IF.void _.bool CAST|INDEX|SHRINK)", rule_allow, NULL),
    RULE("(ENDIF.void IF)", rule_allow, NULL),
    /* SPECIAL is int32 after index lowering */
    RULE("(SPECIAL x.int32)", check_program_special, NULL),
};

/* ------------------------------------------------------------------------------------------------------------ */
/* hardware command queue programs, and the intermediate forms of codegen (spec_full)                             */

static UOp *check_getaddr(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  return judge(rw, is_device_str(x), "GETADDR needs a device");
}

static const Rule hcq_rules[] = {
    RULE("(GETADDR.uint64 {BUFFER|PARAM|(AFTER BUFFER|PARAM ...)})", check_getaddr, NULL),
    RULE("(PROGRAM.void {BUFFER|PARAM|(AFTER BUFFER|PARAM ...)})", rule_allow, NULL),
};

static const Rule full_rules[] = {
    RULE("REWRITE_ERROR.void", check_str_arg, NULL),
    /* codegen may end ranges after gpudims replaced RANGE with SPECIAL */
    RULE("(END _ _ ...)", rule_allow, NULL),
    RULE("(AFTER _ ...)", rule_allow, NULL),
    RULE("LOAD|STORE", rule_allow, NULL),
};

/* ------------------------------------------------------------------------------------------------------------ */
/* the kernel graph (after splitting into CALLs)                                                                  */

static UOp *check_kernel_bind_store(RwCtx *rw, UOp *st, UOp **m) {
  const ParamArg *p = param_of(m[0]);
  if (!p || p->addrspace != ADDR_ALU) return reject(rw, "only a Variable is stored into in the kernel graph");
  return check_bind_store(rw, st, m);
}

static UOp *check_kernel_stack(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw); TG_UNUSED(m);
  for (uint32_t i = 0; i < s->nsrc; i++) {
    const UOp *x = s->src[i];
    if (x->op != TG_OP_CONST && x->op != TG_OP_PARAM && !uop_is_variable(x) && !is_bound_var(x)) return NULL;
  }
  return ALLOW;
}

static UOp *check_kernel_buffer(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  const ParamArg *p = param_of(x);
  if (!p || (p->addrspace != ADDR_GLOBAL && p->addrspace != ADDR_ALU))
    return reject(rw, "a kernel-graph BUFFER is a ParamArg in GLOBAL memory or a Variable");
  if (p->addrspace == ADDR_ALU) {
    const char *why = variable_problem(x);
    if (why) return reject(rw, "%s", why);
  }
  return ALLOW;
}

static const Rule kernel_rules[] = {
    RULE("SINK.void", rule_allow, NULL),
    /* the store of a bound Variable binds it: AFTER(BUFFER, STORE(BUFFER, CONST)) */
    RULE("(STORE.void var:BUFFER val:CONST)", check_kernel_bind_store, NULL),
    RULE("(CONST)", check_const, NULL),
    /* vector consts and shape args */
    RULE("STACK", check_kernel_stack, NULL),
    RULE("PARAM", check_param, NULL),
    RULE("BUFFER", check_kernel_buffer, NULL),
    RULE("RESHAPE|BITCAST", rule_allow, NULL),
    RULE("MSTACK|MSELECT", reject_multi_device, NULL),
    RULE("(CALL SINK|LINEAR|PROGRAM|CUSTOM_FUNCTION ...)", rule_allow, NULL),
    RULE("(AFTER Movement|PARAM|AFTER|BUFFER|MSTACK|MSELECT|BITCAST|RESHAPE ...)", check_after, NULL),
};

/* ------------------------------------------------------------------------------------------------------------ */
/* the stage tables, built on first use (they live for the process)                                               */

static const RuleSet *stage_rules(SpecStage stage) {
  static const RuleSet *sets[4];
  if (!sets[0]) {
    /* the concatenations hold their own references to the rules: the parts are freed once combined */
    RuleSet *shared = PM_NEW("spec_shared", shared_rules);
    RuleSet *tensor_only = PM_NEW("spec_tensor_only", tensor_rules);
    RuleSet *program_only = PM_NEW("spec_program_only", program_rules);
    RuleSet *hcq_only = PM_NEW("spec_hcq_only", hcq_rules), *full_only = PM_NEW("spec_full_only", full_rules);
    const RuleSet *tensor = pm_concat(tensor_only, shared);
    const RuleSet *program = pm_concat(program_only, shared);
    const RuleSet *hcq = pm_concat(hcq_only, shared);
    sets[SPEC_TENSOR] = tensor;
    sets[SPEC_PROGRAM] = program;
    sets[SPEC_FULL] = pm_concat(pm_concat(pm_concat(full_only, tensor), program), hcq);
    sets[SPEC_KERNEL] = PM_NEW("spec_kernel_graph", kernel_rules);
    pm_free(shared);
    pm_free(tensor_only);
    pm_free(program_only);
    pm_free(hcq_only);
    pm_free(full_only);
  }
  return (unsigned)stage < 4 ? sets[stage] : NULL;
}

const char *spec_stage_name(SpecStage stage) {
  switch (stage) {
  case SPEC_TENSOR: return "spec_tensor";
  case SPEC_KERNEL: return "spec_kernel_graph";
  case SPEC_PROGRAM: return "spec_program";
  case SPEC_FULL: return "spec_full";
  }
  return "spec_?";
}

/* Off by default, unlike tinygrad's SPEC=1: a check walks every node of every graph it is given and costs the
 * library user time on each cache miss; tests/main.c turns it on for every suite. */
bool spec_enabled(void) { return tg_getenv_int("SPEC", 0) != 0; }

/* ------------------------------------------------------------------------------------------------------------ */
/* per-op facts checked before the tables: source counts and arg kinds                                            */

typedef struct OpShape {
  int16_t min_src, max_src; /* max -1: unbounded */
  int16_t arg;              /* required ArgKind, or -1 when the op's arg is checked by the rules (or free) */
} OpShape;

static OpShape op_shape(TgOp op) {
  OpShape any = {0, -1, -1};
  if (op_has(op, OPP_UNARY)) return (OpShape){1, 1, ARG_NONE};
  if (op_has(op, OPP_BINARY)) return (OpShape){2, 2, ARG_NONE};
  if (op_has(op, OPP_TERNARY)) return (OpShape){3, 3, ARG_NONE};
  switch (op) {
  case TG_OP_CAST: case TG_OP_BITCAST: return (OpShape){1, 1, ARG_NONE};
  case TG_OP_CONST: return (OpShape){0, 0, ARG_CONST};
  case TG_OP_RANGE: return (OpShape){1, -1, ARG_RANGE};
  case TG_OP_SPECIAL: return (OpShape){1, 1, ARG_STR};
  case TG_OP_BUFFER: case TG_OP_PARAM: return (OpShape){0, 1, ARG_PARAM};
  case TG_OP_LOAD: return (OpShape){1, 3, ARG_NONE};
  case TG_OP_STORE: return (OpShape){2, 3, ARG_NONE};
  case TG_OP_INDEX: case TG_OP_END: case TG_OP_AFTER: case TG_OP_CALL: case TG_OP_FUNCTION:
    return (OpShape){1, -1, -1};
  case TG_OP_REDUCE: return (OpShape){1, -1, ARG_REDUCE};
  case TG_OP_RESHAPE: case TG_OP_EXPAND: return (OpShape){2, 2, -1};
  case TG_OP_PAD: case TG_OP_SHRINK: return (OpShape){3, 3, -1};
  case TG_OP_PERMUTE: return (OpShape){1, 1, ARG_PERM};
  case TG_OP_FLIP: return (OpShape){1, 1, ARG_FLIP};
  case TG_OP_DETACH: return (OpShape){1, 1, ARG_NONE};
  case TG_OP_CONTIGUOUS: case TG_OP_CONTIGUOUS_BACKWARD: return (OpShape){1, 1, -1}; /* none, or a ContigHint */
  case TG_OP_CUSTOM_GRAD: return (OpShape){2, -1, ARG_STR};
  case TG_OP_COPY: return (OpShape){1, 1, ARG_STR};
  case TG_OP_ALLREDUCE: return (OpShape){1, 1, ARG_OP};
  case TG_OP_GETTUPLE: return (OpShape){1, 1, ARG_INT};
  case TG_OP_GETADDR: case TG_OP_ENDIF: return (OpShape){1, 1, -1};
  case TG_OP_IF: return (OpShape){2, 2, -1};
  case TG_OP_WMMA: return (OpShape){3, 3, -1};
  case TG_OP_SOURCE: case TG_OP_BINARY: return (OpShape){0, 0, -1};
  case TG_OP_PROGRAM: return (OpShape){1, 4, -1};
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: case TG_OP_CUSTOM_FUNCTION: case TG_OP_REWRITE_ERROR:
    return (OpShape){0, -1, ARG_STR};
  default: return any;
  }
}

static const char *const arg_kind_names[ARG_KIND_COUNT] = {
    "None", "a Const", "an int", "an op", "a string", "a permutation", "flip flags", "(op, axes)", "a RangeArg",
    "a ParamArg", "a KernelInfo", "a WMMA arg"};

static const char *arg_kind_name(ArgKind k) {
  return (unsigned)k < ARG_KIND_COUNT ? arg_kind_names[k] : "an unknown arg";
}

/* What is wrong with u's source count or arg kind, written into why; false when nothing is. */
static bool shape_problem(const UOp *u, char *why, size_t n) {
  OpShape s = op_shape(uop_op(u));
  if ((int64_t)u->nsrc < s.min_src || (s.max_src >= 0 && (int64_t)u->nsrc > s.max_src)) {
    if (s.min_src == s.max_src)
      snprintf(why, n, "%s takes %d source%s, got %u", uop_op_name(uop_op(u)), s.min_src, s.min_src == 1 ? "" : "s",
               (unsigned)u->nsrc);
    else if (s.max_src < 0)
      snprintf(why, n, "%s takes at least %d source%s, got %u", uop_op_name(uop_op(u)), s.min_src,
               s.min_src == 1 ? "" : "s", (unsigned)u->nsrc);
    else
      snprintf(why, n, "%s takes %d to %d sources, got %u", uop_op_name(uop_op(u)), s.min_src, s.max_src,
               (unsigned)u->nsrc);
    return true;
  }
  if (s.arg >= 0 && u->arg.kind != (ArgKind)s.arg) {
    snprintf(why, n, "%s needs %s as its arg, got %s", uop_op_name(uop_op(u)), arg_kind_name((ArgKind)s.arg),
             arg_kind_name(u->arg.kind));
    return true;
  }
  bool payload_missing = (u->arg.kind == ARG_RANGE && !u->arg.range) || (u->arg.kind == ARG_PARAM && !u->arg.param) ||
                         (u->arg.kind == ARG_KERNEL && !u->arg.kernel) || (u->arg.kind == ARG_STR && !u->arg.str) ||
                         ((u->arg.kind == ARG_PERM || u->arg.kind == ARG_FLIP || u->arg.kind == ARG_WMMA) && u->arg.len && !u->arg.ints);
  if (payload_missing || (unsigned)u->arg.kind >= ARG_KIND_COUNT) {
    snprintf(why, n, "malformed arg");
    return true;
  }
  if (u->arg.kind == ARG_PARAM && !u->arg.param->dtype) {
    snprintf(why, n, "the ParamArg has no dtype");
    return true;
  }
  return false;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* the walk                                                                                                       */

/* Sources first, each node once. Without enter_calls the body (source 0) of a CALL/FUNCTION is not visited. */
static void spec_toposort(UOp *root, bool enter_calls, UOpVec *out) {
  UOpMap seen;
  uopmap_init(&seen);
  typedef struct { UOp *u; uint32_t next; } Frame;
  TG_VEC(Frame) st = {0};
  Frame f0 = {root, 0};
  uopmap_put(&seen, root, NULL);
  tg_vec_push(&st, f0);
  while (st.len) {
    Frame *f = &st.data[st.len - 1];
    UOp *u = f->u;
    if (f->next == 0 && !enter_calls && (u->op == TG_OP_CALL || u->op == TG_OP_FUNCTION)) f->next = 1;
    if (f->next < u->nsrc) {
      UOp *s = u->src[f->next++];
      if (s && !uopmap_get(&seen, s)) {
        uopmap_put(&seen, s, NULL);
        Frame fs = {s, 0};
        tg_vec_push(&st, fs);
      }
      continue;
    }
    tg_vec_push(out, u);
    st.len--;
  }
  tg_vec_free(&st);
  uopmap_free(&seen);
}

static void describe_node(StrBuf *b, const UOp *u) {
  sb_printf(b, "%s (dtype %s, %u src%s", uop_op_name(uop_op(u)), u->dtype ? u->dtype->name : "NULL", (unsigned)u->nsrc,
            u->nsrc == 1 ? "" : "s");
  for (uint32_t i = 0; i < u->nsrc && i < 8; i++)
    sb_printf(b, "%s%s %s", i ? ", " : ": ", uop_op_name(uop_op(u->src[i])), u->src[i]->dtype->name);
  if (u->nsrc > 8) sb_puts(b, ", ...");
  sb_puts(b, "; arg ");
  size_t start = b->len;
  uop_arg_print(b, u);
  if (b->len - start > 120) {
    b->len = start + 117;
    sb_puts(b, "...");
  }
  sb_putc(b, ')');
}

/* Check the nodes of `topo` in order; the first bad one sets the error. */
static tg_status check_nodes(UOp *const *topo, size_t n, SpecStage stage) {
  const RuleSet *rules = stage_rules(stage);
  if (!rules) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "spec check: unknown stage %d", (int)stage);
  SpecCtx ctx;
  tg_status st = TG_OK;
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    UOp *u = topo[i];
    if (!u) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: node %zu is NULL", spec_stage_name(stage), i);
    ctx.why[0] = 0;
    bool bad = shape_problem(u, ctx.why, sizeof ctx.why);
    if (!bad) {
      UOp *verdict = pm_rewrite(rules, u, &ctx);
      if (verdict != ALLOW) {
        bad = true;
        if (verdict != &g_reject_marker || !ctx.why[0])
          snprintf(ctx.why, sizeof ctx.why, "no %s rule allows this form", spec_stage_name(stage));
      }
    }
    if (bad) {
      StrBuf b;
      sb_init(&b);
      sb_printf(&b, "%s: UOp verification failed at node %zu: ", spec_stage_name(stage), i);
      describe_node(&b, u);
      sb_printf(&b, ": %s", ctx.why);
      st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s", b.s);
      sb_free(&b);
    }
  }
  return st;
}

tg_status uop_spec_check(UOp *root, SpecStage stage) {
  if (!root) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "spec check of a NULL graph");
  UOpVec topo = {0};
  spec_toposort(root, stage != SPEC_KERNEL, &topo);
  tg_status st = check_nodes(topo.data, topo.len, stage);
  tg_vec_free(&topo);
  return st;
}

tg_status uop_spec_check_list(UOp *const *nodes, size_t n, SpecStage stage) {
  if (!nodes && n) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "spec check of a NULL list");
  return check_nodes(nodes, n, stage);
}

tg_status spec_verify(UOp *root, SpecStage stage, const char *where) {
  if (!spec_enabled()) return TG_OK;
  bool program_list = root && root->op == TG_OP_LINEAR && stage == SPEC_PROGRAM;
  tg_status st = program_list ? uop_spec_check_list(root->src, root->nsrc, stage) : uop_spec_check(root, stage);
  if (st == TG_OK) return TG_OK;
  char *msg = tg_strdup(tg_last_error());
  st = tg_set_error(st, "SPEC: %s: %s", where, msg);
  tg_free(msg);
  return st;
}
