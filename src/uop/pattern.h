/* pattern.h — rules as data: patterns written in a small s-expression syntax, parsed once, matched against UOps,
 * and pm_graph_rewrite, which applies a rule set to a whole graph (reference section 4; DESIGN.md decision 3).
 *
 * Pattern syntax (one string per rule):
 *
 *   pat     := [name ':'] atom [dtypes]
 *   atom    := name                       any node, captured as `name` ("_" matches anything, captures nothing)
 *            | OPSET                      a node whose op is in OPSET, any sources         e.g.  c:CONST   RANGE
 *            | '(' OPSET ['=' arg] src* [...] ')'
 *                                         a node with these sources, in order; "..." allows more sources after
 *                                         them; sources "*p" mean every source (any number) matches p
 *            | literal                    a CONST of that value: 0  -1  2.5  true  false  inf  -inf  nan  invalid
 *            | '{' pat ('|' pat)* '}'     alternatives, tried in order
 *   OPSET   := OPNAME ('|' OPNAME)*       op names (ADD) or GroupOp names (ALU Binary Unary Ternary Commutative
 *                                         Comparison Movement Elementwise Idempotent Associative Reduce ...)
 *   arg     := integer | OPNAME | "string"   the node's arg: ARG_INT / CONST value, ARG_OP or REDUCE op, ARG_STR
 *   dtypes  := '.' DT ('|' DT)*           dtype set: float float32 half int int32 ... weakint weakfloat bool void,
 *                                         groups: ints uints sints floats weaks index (= weakint and ints)
 *
 *   A name used twice must bind the same node: (ADD x x) matches only x+x.
 *   Two-source patterns on commutative ops (every op of the OPSET commutative) match either source order; write
 *   '=' right after '(' for strictly positional matching: (=ADD x y).
 *   Literals match a CONST whose value equals the literal numerically (0 matches 0, 0.0 and false; -0.0 is 0;
 *   nan matches a nan CONST). A dtype set may also follow the OPSET inside the parentheses: (ADD.int x y).
 *   Early reject: a rule is only tried on nodes whose sources include every op its pattern requires of a direct source.
 *
 * A rule is a pattern plus either a C callback or a replacement template:
 *
 *   RULE("(MUL x 1)", NULL, "x")                           template: built from the captures
 *   RULE("(FLOORDIV x c:CONST)", fold_div, NULL)          callback: UOp *fold_div(RwCtx *rw, UOp *root, UOp **m)
 *
 * Captures reach a callback as m[0], m[1], ... in order of first appearance in the pattern string; `root` is the
 * matched node. A callback returns the replacement, or NULL (or root itself) for "no match". It may build nodes
 * freely (they belong to the rewrite's scope and die with it); a node it stores somewhere that outlives the rewrite
 * (a ctx table, a cache) needs uop_keep, and its owner's uop_drop later. Each complete match (both
 * orders of a commutative pair, each alternative) is offered in turn until the callback returns non-NULL; as in
 * tinygrad, returning root itself ends that rule without a match and the next rule is tried.
 *
 * Templates use the pattern syntax: names are captures, (OP src...) builds a node with a derived dtype,
 * (CAST.dt x) casts, literals become constants with the dtype of a non-literal sibling (or of the root when alone;
 * a WHERE's literals take the dtype of its values), (OP=arg ...) sets an ARG_INT / ARG_OP / ARG_STR arg.
 */
#ifndef TG_PATTERN_H
#define TG_PATTERN_H

#include "uop.h"

typedef struct RwCtx RwCtx;
typedef UOp *(*RuleFn)(RwCtx *rw, UOp *root, UOp **m);

typedef struct Rule {
  const char *pattern;
  RuleFn fn;            /* NULL when the rule has a template */
  const char *tmpl;     /* NULL when the rule has a callback */
  const char *name;     /* for TRACK_MATCH_STATS: the callback's name or the pattern */
} Rule;
#define RULE(pat, fn, tmpl) {pat, fn, tmpl, #fn}

typedef struct RuleSet RuleSet;

/* Build a rule set from a table (parsed immediately; a syntax error is an internal error naming the rule).
 * The table must stay valid for the set's lifetime (static tables). */
RuleSet *pm_new(const char *name, const Rule *rules, size_t n);
#define PM_NEW(name, table) pm_new(name, table, TG_ARRAY_LEN(table))
/* Concatenation: the rules of a then b, tried in that order. Memoized: the same pair gives the same set, which
 * the memo owns (it lives for the process; pm_free ignores it). */
RuleSet *pm_concat(const RuleSet *a, const RuleSet *b);
void pm_free(RuleSet *pm);
const char *pm_name(const RuleSet *pm);
size_t pm_rule_count(const RuleSet *pm);

/* The context a callback sees. */
struct RwCtx {
  void *ctx;                 /* the user's ctx given to pm_graph_rewrite */
  const RuleSet *pm;
};

/* Try the rules on one node (no recursion into sources): the first rule whose callback succeeds wins.
 * Returns the replacement or NULL. */
UOp *pm_rewrite(const RuleSet *pm, UOp *u, void *ctx);

enum {
  RW_BOTTOM_UP = 1,   /* match a node before its sources (the rule set is used as the bottom-up matcher) */
  RW_WALK = 2,        /* one pass: replacements are not rewritten again */
  RW_ENTER_CALLS = 4  /* also rewrite the bodies of CALL/FUNCTION */
};

/* Rewrite the graph under root to a fixed point with tinygrad's semantics: sources first, then the node; a new node
 * produced by a rule is rewritten again; every distinct node is rewritten once per call. bpm (optional) is applied
 * to each node before its sources, repeatedly. Returns the new root (owned by the caller's scope), or NULL with
 * tg_last_error() set if a rule loops (the message names the rule). */
UOp *pm_graph_rewrite(UOp *root, const RuleSet *pm, void *ctx, int flags, const RuleSet *bpm, const char *name);
/* Replace nodes by the map (keys -> values, both UOp*), as tinygrad's substitute. */
UOp *uop_substitute(UOp *root, UOp *const *from, UOp *const *to, size_t n);

/* TRACK_MATCH_STATS=1: per-rule matches/attempts/time, printed at exit (or now). */
void pm_print_stats(void);
/* Turn recording on (level > 0) or off at run time, whatever TRACK_MATCH_STATS says (tests, tools). Returns the
 * previous level. */
int pm_track_stats(int level);
/* Counts recorded for rule i (insertion order) of pm; false if i is out of range. */
bool pm_rule_stats(const RuleSet *pm, size_t i, uint64_t *matches, uint64_t *attempts);

#endif
