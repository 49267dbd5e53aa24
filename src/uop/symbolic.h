/* symbolic.h — the symbolic simplifier (reference section 5): three rule tiers, each a superset of the one before,
 * plus the entry points tinygrad code calls on UOps (simplify, ssimplify, resolve, valid simplification). */
#ifndef TG_SYMBOLIC_H
#define TG_SYMBOLIC_H

#include "pattern.h"

/* The rule sets (built on first use, live for the process). */
const RuleSet *sym_symbolic_simple(void); /* generic folding: Invalid propagation, identities, constant folding */
const RuleSet *sym_symbolic(void);        /* + canonical order, like terms, re-association, div/mod, comparisons */
const RuleSet *sym_sym(void);             /* + valid simplification, load/store folding, reduce rules */
const RuleSet *sym_div_and_mod(void);     /* div/mod folding (divmod.c), part of sym_symbolic */
const RuleSet *sym_commutative(void);     /* canonical operand order only */

/* tinygrad UOp.simplify: pm_graph_rewrite(u, symbolic); a failed rewrite returns u unchanged (error set). */
UOp *uop_simplify(UOp *u);
/* Simplify and, if the result is an integer constant, put it in *out and return true. */
bool uop_ssimplify_int(UOp *u, int64_t *out);
/* Decide a bool UOp by simplification and bounds; `dflt` when undecidable. */
bool uop_resolve(UOp *u, bool dflt);

/* Valid simplification: simplify `u` assuming the bool `valid` holds (tinygrad uop_given_valid); NULL if nothing
 * could be learned. simplify_valid: drop clauses of an AND chain implied by the others. */
UOp *uop_given_valid(UOp *valid, UOp *u);
UOp *uop_simplify_valid(UOp *valid);

/* The general div/mod fold (divmod.c): x // c or x % c with the bounds of x, or NULL. */
UOp *sym_fold_divmod_general(UOp *root);

/* divmod.c: exact division of index expressions (tinygrad UOp.divide_exact: u/v, or NULL when v does not divide u
 * term by term), the common factor of a list of terms (tinygrad UOp.gcd: shared MUL factors times the gcd of the
 * constant factors), and dropping the sym_fold_divmod_general memo (it holds references to the nodes it caches). */
UOp *uop_divide_exact(UOp *u, UOp *v);
UOp *uop_gcd(UOp *const *uops, size_t n);
void sym_divmod_cache_clear(void);

/* valid.c: the valid-simplification rules of sym (simplify AND-chains of valids, simplify x under its gate in
 * cond.where(x, Invalid)). */
const RuleSet *sym_simplify_valid(void);

/* Weak dtypes (weak.c, tinygrad uop/weak.py): commit a weak value at dtype dt (a CONST directly, anything else by a
 * CAST), and pm_cast_weak (a concrete CAST over weak math computes at least at the default width). */
UOp *uop_commit_weak(UOp *s, const DType *dt);
const RuleSet *sym_cast_weak(void);
/* pm_lower_weak's rule for two stacked weak casts: CAST(weak2, CAST(weak1, x)) with x concrete converts at each kind's
 * default dtype (weakint truncates, then weakfloat re-lifts). */
const RuleSet *sym_lower_weak_casts(void);

#endif
