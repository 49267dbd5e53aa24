/* eval.h — a plain-C interpreter for integer and bool UOp graphs: the brute-force oracle for the symbolic simplifier
 * (and the seed of the kernel interpreter that will check codegen).
 *
 * Values are exact numbers held in i128 and put on their node's dtype after every op: weakint is mathematical (an
 * i128 overflow makes the result undefined), fixed-width ints wrap like C's two's complement (tinygrad truncates
 * Python ints the same way), bools are 0/1. Division or modulo by zero, a negative shift and a weakint overflow do not
 * abort: they make the value undefined (EVAL_UNDEFINED) and the program remembers why. Undefined and Invalid values
 * propagate through ALU ops; WHERE only takes the state of the branch it picks.
 *
 * Leaves get their values from an EvalEnv: Variables (0-d ALU BUFFERs, or ALU PARAMs inside kernels) by name, RANGE
 * and SPECIAL by node pointer; a bound Variable (AFTER(var, STORE(var, CONST))) evaluates to its
 * bound value. A leaf's value is put on its dtype's grid but not checked against a Variable's declared range.
 * Float dtypes, vectors and memory ops are not supported: eval_compile refuses them with a message.
 *
 *   EvalProgram *p = eval_compile(root);            // NULL + tg_last_error() when the graph has unsupported parts
 *   EvalEnv env; eval_env_init(&env);
 *   eval_env_bind_var(&env, "x", 3);
 *   EvalValue r = eval_run(p, &env);                // r.state == EVAL_OK: r.v is the value
 *   eval_program_free(p); eval_env_free(&env);
 */
#ifndef TG_EVAL_H
#define TG_EVAL_H

#include "uop.h"

typedef enum EvalState {
  EVAL_OK = 0,
  EVAL_INVALID,     /* the value is tinygrad's Invalid (a masked-out index) */
  EVAL_UNDEFINED,   /* division/modulo by zero, negative shift, weakint overflow */
  EVAL_UNBOUND      /* a Variable / RANGE / SPECIAL without a value in the environment */
} EvalState;
const char *eval_state_name(EvalState s);

typedef struct EvalValue {
  i128 v;
  EvalState state;
} EvalValue;

/* Leaf values. A later binding of the same name / node replaces the earlier one. */
typedef struct EvalBinding {
  const UOp *node;          /* NULL for a binding by Variable name */
  char name[TG_NAME_MAX];   /* "" for a binding by node */
  i128 value;
} EvalBinding;
typedef struct EvalEnv {
  TG_VEC(EvalBinding) b;
} EvalEnv;
void eval_env_init(EvalEnv *env);
void eval_env_free(EvalEnv *env);
void eval_env_clear(EvalEnv *env);
void eval_env_bind_var(EvalEnv *env, const char *name, i128 value);
void eval_env_bind_node(EvalEnv *env, const UOp *node, i128 value);

/* A graph flattened into straight-line code (toposort order, each node once). */
typedef struct EvalProgram EvalProgram;
EvalProgram *eval_compile(UOp *root);
void eval_program_free(EvalProgram *p);
size_t eval_program_len(const EvalProgram *p); /* instructions (distinct nodes evaluated) */
/* The leaves the program reads from the environment, in toposort order. */
size_t eval_program_leaf_count(const EvalProgram *p);
const UOp *eval_program_leaf(const EvalProgram *p, size_t i);

/* Evaluate the root. Not thread-safe per program (it owns its scratch values). */
EvalValue eval_run(EvalProgram *p, const EvalEnv *env);
/* Why the last eval_run was not EVAL_OK: "FLOORDIV by zero (x // 0)" and similar; "" after an EVAL_OK run. */
const char *eval_last_message(const EvalProgram *p);

/* One-shot: compile, run, free. A graph eval_compile refuses gives EVAL_UNDEFINED with tg_last_error() set. */
EvalValue uop_eval(UOp *root, const EvalEnv *env);

/* Put an exact number on dtype d's grid: wrap fixed-width ints, bool -> 0/1, weakint unchanged. d must be an int or
 * bool scalar dtype. */
i128 eval_wrap(const DType *d, i128 v);

#endif
