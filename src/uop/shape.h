/* shape.h — tinygrad's UOp._shape (with marg, as_shape, shape_to_shape_arg, max_numel) and UOp.addrspace: the one
 * shape module, for the tensor graph and for lowered kernels alike.
 *
 * A shape is not stored on the node: it is derived from the sources. Movement ops carry their shape arguments as UOp
 * sources (a CONST for one dimension, a STACK of CONSTs otherwise, an empty STACK for ()):
 *   RESHAPE(x, shape)   EXPAND(x, prepended sizes)   PAD(x, begins, new sizes)   SHRINK(x, offsets, sizes)
 *   PERMUTE(x) arg=order   FLIP(x) arg=flags   REDUCE(x) arg=(op, n): reduces the first n axes
 * Elementwise ops broadcast their sources' shapes (right-aligned, size-1 axes stretch); a CONST is 0-d. In a lowered
 * kernel a vector is a shaped value ((2,) for a LOAD of a 2-wide SHRINK, a STACK of lanes): the renderers and the
 * kernel interpreter read its width from the same rules (uop_max_numel).
 * A size may be symbolic (tinygrad's sint): a weak-int expression of Variables (bound in the tensor graph, value
 * PARAMs in a callified body) in place of the CONST. SymShape carries such sizes: sym[i] is the expression (NULL for
 * a concrete size) and max.d[i] its vmax, the size buffers are allocated for. The plain Shape queries refuse a
 * symbolic shape with an error that says so, so code written for concrete sizes never sees a maximum as a size. */
#ifndef TG_UOP_SHAPE_H
#define TG_UOP_SHAPE_H

#include "uop/uop.h"

typedef struct Shape {
  int ndim;
  int64_t d[TG_MAX_DIMS];
} Shape;

typedef enum ShapeResult {
  SHAPE_ERROR = -1, /* invalid graph (bad reshape, mismatched broadcast, ...): tg_last_error says why */
  SHAPE_NONE = 0,   /* the op has no shape (SINK, LINEAR, a void CALL, ...) */
  SHAPE_OK = 1
} ShapeResult;

typedef struct SymShape {
  Shape max;                 /* ndim, and each size (a symbolic one: its maximum) */
  UOp *sym[TG_MAX_DIMS];     /* the expression of a symbolic size, NULL for a concrete one */
} SymShape;

/* The shape of u as tinygrad computes it. Walks u's sources once (cost: the size of the graph). */
ShapeResult uop_shape(UOp *u, Shape *out);

/* Repeated queries over one graph: a cache keyed by node (nodes must outlive the cache); it also memoizes addrspace. */
/* map: node -> its memoized slot; the slots live in blocks: `first`, then the `owned` ones (block_used: slots taken
 * in the last block) */
typedef struct ShapeCache { UOpMap map; void *first; TG_VEC(void *) owned; int block_used; UOpMap aspace; } ShapeCache;
void shape_cache_init(ShapeCache *c);
void shape_cache_free(ShapeCache *c);
ShapeResult uop_shape_cached(UOp *u, ShapeCache *c, Shape *out);
/* The same, symbolic sizes allowed. */
ShapeResult uop_shape_sym_cached(UOp *u, ShapeCache *c, SymShape *out);
ShapeResult uop_shape_sym_peek(UOp *u, ShapeCache *c, const SymShape **out); /* no copy: the cached slot */
ShapeResult uop_shape_sym(UOp *u, SymShape *out);
/* tinygrad max_numel: the product of the sizes (symbolic ones at their maximum); 1 without a shape or on error. */
int64_t uop_max_numel(UOp *u, ShapeCache *c);
/* tinygrad UOp.addrspace: where a value lives (a PARAM's space, ALU for computed scalars, the sources' common space
 * through INDEX/CAST/AFTER/movement/elementwise ops); ADDR_NONE for tinygrad's None. Memoized in c. */
AddrSpace uop_addrspace(ShapeCache *c, const UOp *u);
/* Record a known shape for u (walks stop there). */
void shape_cache_seed(ShapeCache *c, UOp *u, const Shape *s);
void shape_cache_seed_sym(ShapeCache *c, UOp *u, const SymShape *s);

/* A shape-argument UOp (CONST or STACK of CONSTs) as sizes (tinygrad as_shape). False if a size is not constant. */
bool uop_as_shape(const UOp *arg, Shape *out);
/* Sizes -> shape-argument UOp (tinygrad shape_to_shape_arg): one size -> CONST weakint, else STACK of them. */
UOp *shape_to_uop(const int64_t *dims, int ndim);
/* The movement arg of a RESHAPE/EXPAND (sizes), PAD/SHRINK (first/second: begins and sizes), PERMUTE/FLIP (ints). */
bool uop_marg_pair(const UOp *mop, Shape *first, Shape *second);

/* The same, a size may be an int expression (a SymShape sym entry). */
bool uop_as_symshape(const UOp *arg, SymShape *out);
UOp *shape_sym_to_uop(const SymShape *s);
bool uop_marg_pair_sym(const UOp *mop, SymShape *first, SymShape *second);

/* Helpers on symbolic shapes: a concrete copy, whether any size is symbolic, size i as a weak-int UOp (CONST when
 * concrete), equality (expressions by node: hash-consing makes equal expressions one node), "(3, i+1)". */
SymShape shape_sym_from(const Shape *s);
bool shape_sym_is_symbolic(const SymShape *s);
UOp *shape_sym_dim(const SymShape *s, int i);
bool shape_sym_dim_eq(const SymShape *a, int i, const SymShape *b, int j);
bool shape_sym_eq(const SymShape *a, const SymShape *b);
const char *shape_sym_fmt(const SymShape *s, char *buf, size_t n);
bool shape_sym_broadcast(const SymShape *a, const SymShape *b, SymShape *out);
/* A size expression as a SymShape entry: CONST int -> concrete; an int expression -> symbolic with its vmax (false:
 * not an int, or a negative minimum). */
bool shape_sym_set_dim(SymShape *s, int i, UOp *size);

/* Helpers on plain shapes. */
int64_t shape_numel(const Shape *s);
bool shape_eq(const Shape *a, const Shape *b);
/* "(4, 3)" into buf (always NUL-terminated). */
const char *shape_fmt(const Shape *s, char *buf, size_t n);
/* Right-aligned broadcast of two shapes (tinygrad _broadcast_shape); false if incompatible. */
bool shape_broadcast(const Shape *a, const Shape *b, Shape *out);

#endif
