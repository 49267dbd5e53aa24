/* eval.c — the integer/bool UOp interpreter (see eval.h): flattens a graph into straight-line code once, then runs
 * it as often as needed with different leaf values (the fuzzer runs one program at every point of a grid).
 *
 * Each instruction computes an exact i128 and then puts it on its dtype's grid. Fixed-width ADD/SUB/MUL/NEG/SHL/
 * MULACC are computed modulo 2^128 (the low bits are what wrapping keeps); weakint and bool results are computed
 * exactly with overflow checks. Division and modulo follow the op: FLOORDIV/FLOORMOD round toward -inf (Python's
 * // and %), CDIV/CMOD toward zero (C's / and %). */
#include "eval.h"

#include <stdio.h>

/* ------------------------------------------------------------------------------------------------------------ */
/* value classes and wrapping                                                                                      */

typedef enum ValueClass { VC_WEAK = 0, VC_BOOL, VC_FIXED } ValueClass;

/* Keep the low `bits` of x and read them as signed or unsigned. */
static inline i128 wrap_bits(u128 x, int bits, bool is_signed) {
  u128 mask = bits >= 128 ? ~(u128)0 : (((u128)1 << bits) - 1);
  x &= mask;
  if (is_signed && bits < 128 && ((x >> (bits - 1)) & 1)) return -(i128)((mask - x) + 1);
  return (i128)x;
}

i128 eval_wrap(const DType *d, i128 v) {
  if (dt_is_bool(d)) return v != 0;
  if (d->kind == DTK_WEAKINT) return v;
  TG_ASSERT(d->kind == DTK_SINT || d->kind == DTK_UINT, "eval_wrap on %s", d->name);
  return wrap_bits((u128)v, d->bitsize, d->kind == DTK_SINT);
}

static void i128_to_str(i128 v, char out[48]) {
  char tmp[48];
  int n = 0;
  u128 m = v < 0 ? (u128)0 - (u128)v : (u128)v;
  do {
    tmp[n++] = (char)('0' + (int)(m % 10));
    m /= 10;
  } while (m);
  int k = 0;
  if (v < 0) out[k++] = '-';
  while (n) out[k++] = tmp[--n];
  out[k] = 0;
}

const char *eval_state_name(EvalState s) {
  switch (s) {
  case EVAL_OK: return "ok";
  case EVAL_INVALID: return "invalid";
  case EVAL_UNDEFINED: return "undefined";
  case EVAL_UNBOUND: return "unbound";
  }
  return "?";
}

/* ------------------------------------------------------------------------------------------------------------ */
/* environment                                                                                                    */

void eval_env_init(EvalEnv *env) { memset(env, 0, sizeof *env); }
void eval_env_free(EvalEnv *env) { tg_vec_free(&env->b); }
void eval_env_clear(EvalEnv *env) { env->b.len = 0; }

void eval_env_bind_var(EvalEnv *env, const char *name, i128 value) {
  for (size_t i = 0; i < env->b.len; i++)
    if (!env->b.data[i].node && strcmp(env->b.data[i].name, name) == 0) {
      env->b.data[i].value = value;
      return;
    }
  EvalBinding b;
  memset(&b, 0, sizeof b);
  size_t n = strnlen(name, TG_NAME_MAX - 1);
  memcpy(b.name, name, n);
  b.value = value;
  tg_vec_push(&env->b, b);
}

void eval_env_bind_node(EvalEnv *env, const UOp *node, i128 value) {
  for (size_t i = 0; i < env->b.len; i++)
    if (env->b.data[i].node == node) {
      env->b.data[i].value = value;
      return;
    }
  EvalBinding b;
  memset(&b, 0, sizeof b);
  b.node = node;
  b.value = value;
  tg_vec_push(&env->b, b);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* the program                                                                                                    */

/* Instructions are TgOp values plus these pseudo-ops (numbered past the real ops). */
enum { EI_IMM = TG_OP_COUNT, EI_INVALID, EI_VAR, EI_NODE_LEAF };

typedef struct Instr {
  uint16_t op;
  uint8_t cls;       /* ValueClass of the result */
  uint8_t bits;      /* VC_FIXED: width */
  uint8_t is_signed; /* VC_FIXED */
  uint32_t a, b, c;  /* source instruction indices */
  i128 imm;          /* EI_IMM: the value */
  const UOp *node;
} Instr;

struct EvalProgram {
  Instr *code;
  size_t n;
  i128 *val;
  uint8_t *state;
  uint32_t *origin;  /* for a non-OK value: the instruction where it went wrong */
  uint32_t *leaves;
  size_t nleaves;
  char msg[256];
};

size_t eval_program_len(const EvalProgram *p) { return p->n; }
size_t eval_program_leaf_count(const EvalProgram *p) { return p->nleaves; }
const UOp *eval_program_leaf(const EvalProgram *p, size_t i) { return i < p->nleaves ? p->code[p->leaves[i]].node : NULL; }
const char *eval_last_message(const EvalProgram *p) { return p->msg; }

void eval_program_free(EvalProgram *p) {
  if (!p) return;
  tg_free(p->code);
  tg_free(p->val);
  tg_free(p->state);
  tg_free(p->origin);
  tg_free(p->leaves);
  tg_free(p);
}

static bool is_var_leaf(const UOp *u) {
  return (u->op == TG_OP_BUFFER || u->op == TG_OP_PARAM) && u->nsrc == 0 && u->arg.kind == ARG_PARAM &&
         u->arg.param->addrspace == ADDR_ALU;
}

/* Leaves: do not look into their sources (a RANGE's end, a bind's STORE). */
static bool eval_gate(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  if (u->op == TG_OP_RANGE || u->op == TG_OP_SPECIAL) return false;
  if (u->op == TG_OP_AFTER && uop_unbind(u, NULL, NULL)) return false;
  return true;
}

static bool supported_dtype(const DType *d) {
  return !d->is_ptr && d->count == 1 && (dt_is_bool(d) || d->kind == DTK_WEAKINT || d->kind == DTK_SINT ||
                                         d->kind == DTK_UINT);
}

static int expected_srcs(TgOp op) {
  switch (op) {
  case TG_OP_NEG: case TG_OP_TRUNC: case TG_OP_CAST: case TG_OP_BITCAST: return 1;
  case TG_OP_ADD: case TG_OP_MUL: case TG_OP_SUB: case TG_OP_SHL: case TG_OP_SHR: case TG_OP_CDIV: case TG_OP_CMOD:
  case TG_OP_FLOORDIV: case TG_OP_FLOORMOD: case TG_OP_MAX: case TG_OP_CMPLT: case TG_OP_CMPNE: case TG_OP_CMPEQ:
  case TG_OP_XOR: case TG_OP_OR: case TG_OP_AND:
    return 2;
  case TG_OP_WHERE: case TG_OP_MULACC: return 3;
  default: return -1;
  }
}

static void set_class(Instr *in, const DType *d) {
  if (dt_is_bool(d)) in->cls = VC_BOOL;
  else if (d->kind == DTK_WEAKINT) in->cls = VC_WEAK;
  else {
    in->cls = VC_FIXED;
    in->bits = (uint8_t)d->bitsize;
    in->is_signed = d->kind == DTK_SINT;
  }
}

/* Fill one instruction from node u; false (with tg_last_error) when u cannot be evaluated. */
static bool compile_node(Instr *in, UOp *u, const UOpMap *index) {
  memset(in, 0, sizeof *in);
  in->node = u;
  TgOp op = uop_op(u);
  if (op == TG_OP_CONST && u->arg.kind == ARG_CONST && u->arg.c.kind == CK_INVALID) {
    in->op = EI_INVALID;
    set_class(in, DT_BOOL);
    return true;
  }
  if (!supported_dtype(u->dtype)) {
    tg_set_error(TG_ERR_UNSUPPORTED, "eval: %s of dtype %s is not supported (scalar integer and bool only)",
                 uop_op_name(op), u->dtype->name);
    return false;
  }
  set_class(in, u->dtype);
  int64_t bound;
  if (op == TG_OP_AFTER && uop_unbind(u, NULL, &bound)) {
    in->op = EI_IMM;
    in->imm = eval_wrap(u->dtype, (i128)bound);
    return true;
  }
  switch (op) {
  case TG_OP_CONST:
    if (u->arg.kind != ARG_CONST || (u->arg.c.kind != CK_INT && u->arg.c.kind != CK_BOOL)) {
      tg_set_error(TG_ERR_UNSUPPORTED, "eval: CONST of dtype %s holds a non-integer value", u->dtype->name);
      return false;
    }
    in->op = EI_IMM;
    in->imm = eval_wrap(u->dtype, u->arg.c.kind == CK_BOOL ? (i128)u->arg.c.b : (i128)u->arg.c.i);
    /* uint64 constants keep their bit pattern in the int64 slot */
    if (u->arg.c.kind == CK_INT && u->dtype->kind == DTK_UINT) in->imm = eval_wrap(u->dtype, (i128)(uint64_t)u->arg.c.i);
    return true;
  case TG_OP_BUFFER: case TG_OP_PARAM:
    if (!is_var_leaf(u)) {
      tg_set_error(TG_ERR_UNSUPPORTED, "eval: %s is memory, not a Variable", uop_op_name(op));
      return false;
    }
    in->op = EI_VAR;
    return true;
  case TG_OP_RANGE: case TG_OP_SPECIAL:
    in->op = EI_NODE_LEAF;
    return true;
  default: break;
  }
  int ns = expected_srcs(op);
  if (ns < 0) {
    tg_set_error(TG_ERR_UNSUPPORTED, "eval: op %s is not supported", uop_op_name(op));
    return false;
  }
  if ((int)u->nsrc != ns) {
    tg_set_error(TG_ERR_UNSUPPORTED, "eval: %s with %u sources (expected %d)", uop_op_name(op), u->nsrc, ns);
    return false;
  }
  uint32_t s[3] = {0, 0, 0};
  for (int i = 0; i < ns; i++) {
    void **slot = uopmap_get(index, u->src[i]);
    TG_ASSERT(slot, "eval: source not compiled before its user");
    s[i] = (uint32_t)(uintptr_t)*slot;
  }
  in->op = (uint16_t)op;
  in->a = s[0];
  in->b = s[1];
  in->c = s[2];
  return true;
}

EvalProgram *eval_compile(UOp *root) {
  UOpVec topo = {0};
  uop_toposort(root, eval_gate, NULL, &topo);
  EvalProgram *p = tg_calloc(1, sizeof *p);
  p->n = topo.len;
  p->code = tg_malloc(topo.len * sizeof(Instr));
  p->val = tg_calloc(topo.len, sizeof(i128));
  p->state = tg_calloc(topo.len, 1);
  p->origin = tg_calloc(topo.len, sizeof(uint32_t));
  p->leaves = tg_malloc(topo.len * sizeof(uint32_t));
  UOpMap index;
  uopmap_init(&index);
  bool ok = true;
  for (size_t i = 0; i < topo.len && ok; i++) {
    ok = compile_node(&p->code[i], topo.data[i], &index);
    if (ok && (p->code[i].op == EI_VAR || p->code[i].op == EI_NODE_LEAF)) p->leaves[p->nleaves++] = (uint32_t)i;
    uopmap_put(&index, topo.data[i], (void *)(uintptr_t)i);
  }
  uopmap_free(&index);
  tg_vec_free(&topo);
  if (!ok) {
    eval_program_free(p);
    return NULL;
  }
  return p;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* running                                                                                                        */

static bool lookup_leaf(const Instr *in, const EvalEnv *env, i128 *out) {
  const UOp *u = in->node;
  if (in->op == EI_VAR) {
    const char *name = u->arg.param->name;
    for (size_t i = 0; i < env->b.len; i++)
      if (!env->b.data[i].node && strcmp(env->b.data[i].name, name) == 0) {
        *out = env->b.data[i].value;
        return true;
      }
    return false;
  }
  for (size_t i = 0; i < env->b.len; i++)
    if (env->b.data[i].node == u) {
      *out = env->b.data[i].value;
      return true;
    }
  return false;
}

static inline i128 floordiv_i128(i128 x, i128 y) {
  i128 q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}
static inline i128 floormod_i128(i128 x, i128 y) {
  i128 r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

/* Compute one ALU instruction. Returns EVAL_OK or EVAL_UNDEFINED (the reason is rebuilt later for the message). */
static inline EvalState exec_instr(const Instr *in, i128 x, i128 y, i128 z, i128 *out) {
  bool exact = in->cls != VC_FIXED; /* weakint and bool: exact with overflow checks; fixed: modulo 2^128 */
  i128 r = 0;
  switch ((TgOp)in->op) {
  case TG_OP_ADD:
    if (exact) { if (__builtin_add_overflow(x, y, &r)) return EVAL_UNDEFINED; }
    else r = (i128)wrap_bits((u128)x + (u128)y, in->bits, in->is_signed);
    break;
  case TG_OP_SUB:
    if (exact) { if (__builtin_sub_overflow(x, y, &r)) return EVAL_UNDEFINED; }
    else r = (i128)wrap_bits((u128)x - (u128)y, in->bits, in->is_signed);
    break;
  case TG_OP_MUL:
    if (exact) { if (__builtin_mul_overflow(x, y, &r)) return EVAL_UNDEFINED; }
    else r = (i128)wrap_bits((u128)x * (u128)y, in->bits, in->is_signed);
    break;
  case TG_OP_MULACC:
    if (exact) {
      i128 t;
      if (__builtin_mul_overflow(x, y, &t) || __builtin_add_overflow(t, z, &r)) return EVAL_UNDEFINED;
    } else {
      r = (i128)wrap_bits((u128)x * (u128)y + (u128)z, in->bits, in->is_signed);
    }
    break;
  case TG_OP_NEG:
    if (exact) { if (__builtin_sub_overflow((i128)0, x, &r)) return EVAL_UNDEFINED; }
    else r = (i128)wrap_bits((u128)0 - (u128)x, in->bits, in->is_signed);
    break;
  case TG_OP_SHL:
    if (y < 0) return EVAL_UNDEFINED;
    if (exact) {
      if (x == 0) r = 0;
      else if (y >= 127) return EVAL_UNDEFINED;
      else {
        r = (i128)((u128)x << (int)y);
        if ((r >> (int)y) != x) return EVAL_UNDEFINED;
      }
    } else {
      r = y >= 128 ? 0 : (i128)wrap_bits((u128)x << (int)y, in->bits, in->is_signed);
    }
    break;
  case TG_OP_SHR:
    if (y < 0) return EVAL_UNDEFINED;
    r = y >= 127 ? (x < 0 ? -1 : 0) : x >> (int)y;
    break;
  case TG_OP_FLOORDIV: case TG_OP_CDIV:
    if (y == 0) return EVAL_UNDEFINED;
    if (x == I128_MIN && y == -1) return EVAL_UNDEFINED;
    r = in->op == TG_OP_FLOORDIV ? floordiv_i128(x, y) : x / y;
    break;
  case TG_OP_FLOORMOD: case TG_OP_CMOD:
    if (y == 0) return EVAL_UNDEFINED;
    if (y == -1) r = 0;
    else r = in->op == TG_OP_FLOORMOD ? floormod_i128(x, y) : x % y;
    break;
  case TG_OP_MAX: r = x > y ? x : y; break;
  case TG_OP_CMPLT: r = x < y; break;
  case TG_OP_CMPNE: r = x != y; break;
  case TG_OP_CMPEQ: r = x == y; break;
  case TG_OP_XOR: r = x ^ y; break;
  case TG_OP_OR: r = x | y; break;
  case TG_OP_AND: r = x & y; break;
  case TG_OP_TRUNC: case TG_OP_CAST: case TG_OP_BITCAST: r = x; break;
  case TG_OP_WHERE: r = x ? y : z; break;
  default: TG_PANIC("eval: instruction %u has no implementation", (unsigned)in->op);
  }
  /* on the result dtype's grid */
  if (in->cls == VC_BOOL) r = r != 0;
  else if (in->cls == VC_FIXED) r = wrap_bits((u128)r, in->bits, in->is_signed);
  *out = r;
  return EVAL_OK;
}

/* Describe why instruction i produced a non-OK value (operands are still in p->val). */
static void explain(EvalProgram *p, uint32_t i, EvalState st) {
  const Instr *in = &p->code[i];
  const UOp *u = in->node;
  if (st == EVAL_INVALID) {
    snprintf(p->msg, sizeof p->msg, "the value is Invalid");
    return;
  }
  if (st == EVAL_UNBOUND) {
    if (in->op == EI_VAR) snprintf(p->msg, sizeof p->msg, "Variable %s has no value", u->arg.param->name);
    else if (u->op == TG_OP_RANGE && u->arg.kind == ARG_RANGE)
      snprintf(p->msg, sizeof p->msg, "RANGE (axis %lld) has no value", (long long)u->arg.range->axis_id);
    else snprintf(p->msg, sizeof p->msg, "%s %s has no value", uop_op_name(uop_op(u)),
                  u->arg.kind == ARG_STR ? u->arg.str : "");
    return;
  }
  char xa[48], xb[48];
  i128_to_str(p->val[in->a], xa);
  i128_to_str(p->val[in->b], xb);
  TgOp op = (TgOp)in->op;
  const char *what = "overflows weakint (i128)";
  if ((op == TG_OP_FLOORDIV || op == TG_OP_FLOORMOD || op == TG_OP_CDIV || op == TG_OP_CMOD) && p->val[in->b] == 0)
    what = "divides by zero";
  else if ((op == TG_OP_SHL || op == TG_OP_SHR) && p->val[in->b] < 0) what = "shifts by a negative amount";
  if (op == TG_OP_NEG) snprintf(p->msg, sizeof p->msg, "NEG(%s) %s", xa, what);
  else snprintf(p->msg, sizeof p->msg, "%s(%s, %s) %s", uop_op_name(op), xa, xb, what);
}

EvalValue eval_run(EvalProgram *p, const EvalEnv *env) {
  i128 *val = p->val;
  uint8_t *st = p->state;
  uint32_t *origin = p->origin;
  for (size_t i = 0; i < p->n; i++) {
    const Instr *in = &p->code[i];
    switch (in->op) {
    case EI_IMM: val[i] = in->imm; st[i] = EVAL_OK; continue;
    case EI_INVALID: val[i] = 0; st[i] = EVAL_INVALID; origin[i] = (uint32_t)i; continue;
    case EI_VAR: case EI_NODE_LEAF: {
      i128 v;
      if (lookup_leaf(in, env, &v)) {
        val[i] = eval_wrap(in->node->dtype, v);
        st[i] = EVAL_OK;
      } else {
        val[i] = 0;
        st[i] = EVAL_UNBOUND;
        origin[i] = (uint32_t)i;
      }
      continue;
    }
    default: break;
    }
    if (in->op == TG_OP_WHERE) {
      /* only the picked branch's state matters */
      uint32_t pick = st[in->a] != EVAL_OK ? in->a : (val[in->a] ? in->b : in->c);
      st[i] = st[pick];
      origin[i] = origin[pick];
      val[i] = val[pick];
      continue;
    }
    int ns = in->op == TG_OP_MULACC ? 3 : (in->op == TG_OP_NEG || in->op == TG_OP_TRUNC || in->op == TG_OP_CAST ||
                                           in->op == TG_OP_BITCAST) ? 1 : 2;
    uint32_t srcs[3] = {in->a, in->b, in->c};
    EvalState bad = EVAL_OK;
    uint32_t bad_origin = 0;
    for (int k = 0; k < ns; k++)
      if (st[srcs[k]] != EVAL_OK && (bad == EVAL_OK || st[srcs[k]] == EVAL_UNDEFINED)) {
        bad = (EvalState)st[srcs[k]];
        bad_origin = origin[srcs[k]];
      }
    if (bad != EVAL_OK) {
      st[i] = (uint8_t)bad;
      origin[i] = bad_origin;
      val[i] = 0;
      continue;
    }
    EvalState s = exec_instr(in, val[in->a], ns > 1 ? val[in->b] : 0, ns > 2 ? val[in->c] : 0, &val[i]);
    st[i] = (uint8_t)s;
    if (s != EVAL_OK) {
      val[i] = 0;
      origin[i] = (uint32_t)i;
    }
  }
  EvalValue r = {0, EVAL_UNDEFINED};
  p->msg[0] = 0;
  if (p->n == 0) return r;
  r.v = val[p->n - 1];
  r.state = (EvalState)st[p->n - 1];
  if (r.state != EVAL_OK) explain(p, origin[p->n - 1], r.state);
  return r;
}

EvalValue uop_eval(UOp *root, const EvalEnv *env) {
  EvalProgram *p = eval_compile(root);
  if (!p) {
    EvalValue bad = {0, EVAL_UNDEFINED};
    return bad;
  }
  EvalValue r = eval_run(p, env);
  eval_program_free(p);
  return r;
}
