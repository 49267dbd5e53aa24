/* uop.h — the UOp: one immutable, hash-consed IR node (reference section 2).
 *
 * UOp(op, dtype, src[], arg, tag). Structurally equal nodes are the same pointer: uop_new looks the node up in an
 * intern table first. The table does not keep nodes alive. Lifetime is reference counting plus scopes:
 *
 *   - every edge parent->src is a reference, and uop_keep()/uop_drop() add and remove external references;
 *   - a node whose count reaches zero (or that was just created) is parked in the innermost open scope; the scope's
 *     end frees every parked node that is still unreferenced, cascading to its sources.
 *
 * So code that builds and rewrites graphs (rule callbacks included) never counts references: it opens a scope, works,
 * keeps what it returns (uop_scope_end_keep) and everything else is freed at once. Holders outside any scope
 * (tensors, caches) use uop_keep/uop_drop. Not thread-safe: graphs are built on one thread. */
#ifndef TG_UOP_H
#define TG_UOP_H

#include "dtype.h"

typedef enum TgOp {
#define OP(name, props) TG_OP_##name,
#include "ops.def"
#undef OP
  TG_OP_COUNT
} TgOp;

/* ---- op properties (GroupOp); ops.def writes them with one-letter abbreviations ---- */
enum {
  OPP_UNARY = 1 << 0,
  OPP_BINARY = 1 << 1,
  OPP_TERNARY = 1 << 2,
  OPP_COMMUTATIVE = 1 << 3,
  OPP_ASSOCIATIVE = 1 << 4,
  OPP_IDEMPOTENT = 1 << 5,
  OPP_REDUCE = 1 << 6,     /* valid as the op of a reduce */
  OPP_COMPARISON = 1 << 7,
  OPP_MOVEMENT = 1 << 8,
  OPP_DEFINES = 1 << 9,
  OPP_IRREDUCIBLE = 1 << 10,
  OPP_ALU = OPP_UNARY | OPP_BINARY | OPP_TERNARY
};
extern const uint16_t tg_op_props[TG_OP_COUNT];
extern const char *const tg_op_names[TG_OP_COUNT]; /* "ADD" */
static inline bool op_has(TgOp op, unsigned props) { return (tg_op_props[op] & props) != 0; }
static inline bool op_is_alu(TgOp op) { return op_has(op, OPP_ALU); }
static inline bool op_is_elementwise(TgOp op) { return op_is_alu(op) || op == TG_OP_CAST || op == TG_OP_BITCAST; }
const char *uop_op_name(TgOp op);
int uop_op_by_name(const char *name); /* -1 if unknown */

/* A set of ops (tinygrad's GroupOp sets and UPat op sets). */
typedef struct OpSet { uint64_t w[2]; } OpSet;
static inline bool opset_has(const OpSet *s, TgOp op) { return (s->w[op >> 6] >> (op & 63)) & 1; }
static inline void opset_add(OpSet *s, TgOp op) { s->w[op >> 6] |= (uint64_t)1 << (op & 63); }
OpSet uop_opset_of_props(unsigned props); /* all ops with any of these properties */
/* Named groups: "ALU", "Unary", "Binary", "Ternary", "Broadcastable", "Elementwise", "Commutative", "Associative",
 * "Idempotent", "Reduce", "Comparison", "Movement", "Defines", "Irreducible", "All". False if unknown. */
bool uop_opset_by_group(const char *name, OpSet *out);
_Static_assert(TG_OP_COUNT <= 128, "OpSet holds 128 ops");

/* ---- axis types of RANGE (tinygrad AxisType), with their kernel-name letters ---- */
typedef enum AxisType {
  AXIS_DEVICE, AXIS_GLOBAL, AXIS_WARP, AXIS_LOCAL, AXIS_WEAK, AXIS_GROUP_REDUCE, AXIS_REDUCE, AXIS_UPCAST, AXIS_UNROLL,
  AXIS_THREAD, AXIS_PLACEHOLDER, AXIS_LOOP
} AxisType;
const char *uop_axis_type_name(AxisType t);
char uop_axis_type_letter(AxisType t);

/* ---- typed args ---- */
typedef enum ArgKind {
  ARG_NONE = 0,
  ARG_CONST,   /* CONST value (Const) */
  ARG_INT,     /* a plain integer: GETTUPLE index, SPECIAL/BUFFER slot numbers, tags for ops that take one */
  ARG_OP,      /* an op: the ALU op of a reduce (REDUCE after rangeify, ALLREDUCE, ...) */
  ARG_STR,     /* a name or code string: SPECIAL name, CUSTOM code, device name of COPY */
  ARG_PERM,    /* PERMUTE order: a permutation of 0..n-1 */
  ARG_FLIP,    /* FLIP: per-axis flags */
  ARG_REDUCE,  /* tensor-graph REDUCE: (op, number of leading axes) */
  ARG_RANGE,   /* RANGE: (axis id, sub ids, axis type) */
  ARG_PARAM,   /* BUFFER/PARAM: ParamArg */
  ARG_KERNEL,  /* kernel SINK: KernelInfo */
  ARG_WMMA,    /* WMMA: the tensor core and its operand axes (codegen/opt_tc.c: WmmaArg layout), ints like ARG_PERM */
  ARG_KIND_COUNT
} ArgKind;

#define TG_NAME_MAX 64

typedef struct RangeArg {
  int64_t axis_id;
  int64_t sub[4];   /* sub ids after splitting (opts), nsub of them */
  int32_t nsub;
  int32_t axis_type; /* AxisType */
} RangeArg;

typedef struct ParamArg {
  int64_t slot;        /* -1 for a Variable */
  int64_t multiple_of; /* the value is a multiple of this (1 = no claim) */
  int64_t axis;        /* multi-device shard axis, -1 none */
  i128 vmin, vmax;     /* value range (Variables) */
  const DType *dtype;  /* element dtype of the storage / value */
  int32_t addrspace;   /* AddrSpace */
  int32_t is_volatile;
  char name[TG_NAME_MAX];   /* Variable name, or "" */
  char device[TG_NAME_MAX]; /* "CPU", "CUDA:1", or "" */
} ParamArg;

/* One optimization action (codegen/opt.h Opt): op is an OptOp, axis -1 is None. */
typedef struct KernelOpt { int32_t op, axis, arg; } KernelOpt;
#define KERNEL_OPTS_MAX 24

typedef struct KernelInfo {
  char name[TG_NAME_MAX];
  int32_t dont_use_locals;
  int32_t applied_opts;                 /* count of opts applied; the first KERNEL_OPTS_MAX are in applied[] */
  KernelOpt applied[KERNEL_OPTS_MAX];
  int32_t has_opts_to_apply;            /* tinygrad opts_to_apply is not None */
  int32_t nopts_to_apply;
  KernelOpt opts_to_apply[KERNEL_OPTS_MAX];
} KernelInfo;

typedef struct ReduceArg { int32_t op; int32_t naxes; } ReduceArg;

/* The arg stored in a node. Small kinds are inline; the others point at an immutable copy owned by the node. */
typedef struct Arg {
  ArgKind kind;
  uint32_t len; /* element count for ARG_PERM/ARG_FLIP/ARG_WMMA, byte length for ARG_STR (without NUL) */
  union {
    Const c;                 /* ARG_CONST */
    int64_t i;               /* ARG_INT */
    int32_t op;              /* ARG_OP */
    ReduceArg red;           /* ARG_REDUCE */
    const char *str;         /* ARG_STR */
    const int64_t *ints;     /* ARG_PERM, ARG_FLIP, ARG_WMMA */
    const RangeArg *range;   /* ARG_RANGE */
    const ParamArg *param;   /* ARG_PARAM */
    const KernelInfo *kernel;/* ARG_KERNEL */
  };
} Arg;

static inline Arg arg_none(void) { Arg a; memset(&a, 0, sizeof a); return a; }
static inline Arg arg_const(Const c) { Arg a = arg_none(); a.kind = ARG_CONST; a.c = c; return a; }
static inline Arg arg_int(int64_t i) { Arg a = arg_none(); a.kind = ARG_INT; a.i = i; return a; }
static inline Arg arg_op(TgOp op) { Arg a = arg_none(); a.kind = ARG_OP; a.op = (int32_t)op; return a; }
static inline Arg arg_str(const char *s) { Arg a = arg_none(); a.kind = ARG_STR; a.str = s; a.len = (uint32_t)strlen(s); return a; }
static inline Arg arg_reduce(TgOp op, int naxes) {
  Arg a = arg_none(); a.kind = ARG_REDUCE; a.red.op = (int32_t)op; a.red.naxes = naxes; return a;
}
/* The pointed-to data is copied into the node by uop_new; the caller's copy may be temporary. */
static inline Arg arg_ints(ArgKind kind, const int64_t *v, size_t n) {
  Arg a = arg_none(); a.kind = kind; a.ints = v; a.len = (uint32_t)n; return a;
}
static inline Arg arg_range(const RangeArg *r) { Arg a = arg_none(); a.kind = ARG_RANGE; a.range = r; return a; }
static inline Arg arg_param(const ParamArg *p) { Arg a = arg_none(); a.kind = ARG_PARAM; a.param = p; return a; }
static inline Arg arg_kernel(const KernelInfo *k) { Arg a = arg_none(); a.kind = ARG_KERNEL; a.kernel = k; return a; }
bool uop_arg_eq(const Arg *a, const Arg *b);
uint64_t uop_arg_hash(const Arg *a);

/* ---- the node ---- */
typedef struct UOp UOp;
struct UOp {
  uint32_t rc;        /* parents + external holders */
  uint16_t op;        /* TgOp */
  uint16_t flags;     /* UOP_F_* (internal) */
  uint32_t nsrc;
  uint32_t tag;       /* scratch state of a pass (0 = none); part of identity */
  const DType *dtype;
  Arg arg;
  uint64_t hash;      /* intern hash (in-process) */
  uint64_t lhash;     /* hash of op, dtype, arg and tag without the sources (in-process): the schedule memo's label */
  uint32_t walk, walk_idx; /* scratch of the schedule memo's walk (epoch, post-order index); not identity */
  uint64_t serial;    /* creation number, for deterministic tie-breaks within one run */
  UOp *next;          /* intern chain */
  i128 vmin, vmax;    /* cached bounds, valid when UOP_F_BOUNDS */
  UOp *src[];
};
enum { UOP_F_POOLED = 1, UOP_F_BOUNDS = 2, UOP_F_KEY = 4 };

static inline TgOp uop_op(const UOp *u) { return (TgOp)u->op; }
static inline bool uop_is(const UOp *u, TgOp op) { return u->op == op; }
static inline bool uop_is_const(const UOp *u) { return u->op == TG_OP_CONST; }
static inline Const uop_const_val(const UOp *u) { return u->arg.c; } /* CONST only */
static inline bool uop_is_invalid(const UOp *u) { return u->op == TG_OP_CONST && u->arg.c.kind == CK_INVALID; }

/* Create (or find) a node. dtype NULL derives it as tinygrad's dtype_from_uop does (comparisons -> bool, binary ->
 * promoted dtype of the sources, CAST needs an explicit dtype, ...). The result is owned by the current scope. */
UOp *uop_new(TgOp op, const DType *dtype, UOp *const *src, size_t nsrc, Arg arg);
UOp *uop_new_tagged(TgOp op, const DType *dtype, UOp *const *src, size_t nsrc, Arg arg, uint32_t tag);
/* The dtype uop_new would derive, or NULL when the op needs an explicit one. */
const DType *uop_derive_dtype(TgOp op, UOp *const *src, size_t nsrc, const Arg *arg);
/* A copy of u with other sources (same op/dtype/arg/tag; dtype re-derived when the sources' dtypes changed). */
UOp *uop_replace_src(const UOp *u, UOp *const *src, size_t nsrc);
UOp *uop_with_tag(const UOp *u, uint32_t tag);

/* ---- constructors that read like tinygrad ---- */
UOp *uop_const(const DType *d, Const v);            /* value put on d's grid; vector d -> STACK of consts */
UOp *uop_const_int(const DType *d, int64_t v);
UOp *uop_const_float(const DType *d, double v);
UOp *uop_const_bool(bool v);
UOp *uop_invalid(void);
/* The value a reduce starts from (tinygrad identity_element): 0 for ADD, 1 for MUL, the dtype's minimum for MAX
 * (-inf for floats, false for bool), in the kind the dtype's constants have. */
Const uop_identity_element(TgOp op, const DType *d);
UOp *uop_const_like(const UOp *like, Const v);      /* same dtype as `like` */
UOp *uop_const_like_int(const UOp *like, int64_t v);
UOp *uop_alu1(TgOp op, UOp *a);
UOp *uop_alu2(TgOp op, UOp *a, UOp *b);
UOp *uop_alu3(TgOp op, UOp *a, UOp *b, UOp *c);
UOp *uop_add(UOp *a, UOp *b);
UOp *uop_mul(UOp *a, UOp *b);
UOp *uop_sub(UOp *a, UOp *b);                         /* a + b*-1, as the frontend builds it */
UOp *uop_neg(UOp *a);                                 /* a * -1 */
UOp *uop_idiv(UOp *a, UOp *b);                        /* FLOORDIV */
UOp *uop_mod(UOp *a, UOp *b);                         /* FLOORMOD */
UOp *uop_lt(UOp *a, UOp *b);
UOp *uop_ne(UOp *a, UOp *b);
UOp *uop_eq(UOp *a, UOp *b);                          /* (a != b) != true */
UOp *uop_max(UOp *a, UOp *b);
UOp *uop_min(UOp *a, UOp *b);                         /* -max(-a, -b) */
UOp *uop_and(UOp *a, UOp *b);
UOp *uop_or(UOp *a, UOp *b);
UOp *uop_xor(UOp *a, UOp *b);
UOp *uop_not(UOp *a);                                 /* bool: a != true */
UOp *uop_where(UOp *c, UOp *t, UOp *f);
UOp *uop_cast(UOp *a, const DType *d);                /* a itself when d == a->dtype */
UOp *uop_bitcast(UOp *a, const DType *d);
UOp *uop_add_int(UOp *a, int64_t c);                  /* a + const_like(a, c) */
UOp *uop_mul_int(UOp *a, int64_t c);
UOp *uop_idiv_int(UOp *a, int64_t c);
UOp *uop_mod_int(UOp *a, int64_t c);
UOp *uop_lt_int(UOp *a, int64_t c);
UOp *uop_sink(UOp *const *src, size_t n);
UOp *uop_range(UOp *end, int64_t axis_id, AxisType type); /* RANGE(end) of end's dtype */
UOp *uop_special(UOp *end, const char *name);             /* SPECIAL(end), arg = name */

/* ---- Variables (seed): a 0-d BUFFER in the ALU address space with a value range ---- */
UOp *uop_variable(const char *name, i128 vmin, i128 vmax, const DType *d); /* d NULL = weakint */
/* bind: AFTER(var, STORE(var, CONST value)). NULL (and tg_last_error) when the value is outside the range. */
UOp *uop_bind(UOp *var, int64_t value);
/* unbind: the Variable and value of a bind, false if u is not one. */
bool uop_unbind(const UOp *u, UOp **var, int64_t *value);
bool uop_is_variable(const UOp *u);
const char *uop_variable_name(const UOp *u);
/* All Variables in the graph (bound or not), sorted by name; returns the count, fills out (caller frees). */
size_t uop_variables(UOp *root, UOp ***out);

/* tinygrad's has_buffer_identity: u is a BUFFER (or PARAM) seen through RESHAPE/UNSHARD/MSELECT (and AFTER when
 * after_ok), so writing u writes that buffer. */
bool uop_has_buffer_identity(const UOp *u, bool after_ok);
/* The arg of a CONTIGUOUS / CONTIGUOUS_BACKWARD (not in tinygrad): ARG_NONE is tinygrad's contiguous, realized on every
 * device; an ARG_INT ContigHint marks a copy only some code generators profit from. The graph builder says which copies
 * could help (mixin_reduce.c mix_conv2d); the scheduler realizes a hinted copy on a device whose renderer asks for it
 * (render.h Renderer.gated_loads_expensive / channel_inner_vectors) and drops it elsewhere (schedule/callify.c). */
typedef enum ContigHint {
  CONTIG_HINT_UNMASKED = 1, /* a padded value read many times: copied, the reads need no masks */
  CONTIG_HINT_LAYOUT = 2,   /* a conv operand with its output channels innermost, for vector accumulators over them */
} ContigHint;

/* ---- scopes and references ---- */
typedef size_t UOpScope;
UOpScope uop_scope_begin(void);
void uop_scope_end(UOpScope s);
/* Ends the scope but keeps `keep` alive: it moves to the enclosing scope. Returns keep. */
UOp *uop_scope_end_keep(UOpScope s, UOp *keep);
UOp *uop_keep(UOp *u);   /* +1 external reference (NULL ok) */
void uop_drop(UOp *u);   /* -1 external reference (NULL ok); freed at the end of the innermost scope if unused */
size_t uop_live_count(void);  /* nodes currently allocated */
/* Called with every BUFFER node just before it is freed (the engine releases the device memory it owns). */
typedef void (*UOpBufferFreeHook)(UOp *buffer);
void uop_set_buffer_free_hook(UOpBufferFreeHook hook);
size_t uop_intern_capacity(void);
void uop_collect_all(void);   /* end every open scope down to the base (for tests and at exit) */
void uop_memory_trim(void);   /* give freed memory back to the OS where the allocator allows */

/* ---- graph walks ---- */
typedef TG_VEC(UOp *) UOpVec;
/* Post-order DFS from root (sources before users, each node once). gate(u, ctx) false: do not descend into u's
 * sources (u itself is still listed). gate NULL: descend everywhere. The vector is the caller's to free. */
typedef bool (*UOpGate)(const UOp *u, void *ctx);
void uop_toposort(UOp *root, UOpGate gate, void *gate_ctx, UOpVec *out);
void uop_toposort_many(UOp *const *roots, size_t n, UOpGate gate, void *gate_ctx, UOpVec *out);
/* backward slice: every node root depends on, without root. */
void uop_backward_slice(UOp *root, UOpVec *out);
bool uop_in_backward_slice(UOp *root, const UOp *target);
bool uop_op_in_backward_slice_with_self(UOp *root, TgOp op);

/* A small open-addressing map UOp* -> void* (pointer identity), used by rewrites and analyses. */
typedef struct UOpMap { const UOp **keys; void **vals; size_t cap, len; } UOpMap;
void uopmap_init(UOpMap *m);
void uopmap_free(UOpMap *m);
void **uopmap_get(const UOpMap *m, const UOp *k); /* NULL if absent */
void uopmap_put(UOpMap *m, const UOp *k, void *v);
/* Memo filling: visit(n, ctx) for each node below root (root included) that memo lacks, sources before users in
 * source order (uop_toposort's order, stopping at nodes memo has); visit must put n into memo. No walk state beyond
 * a stack: memo itself marks what is done. walked(n) says how many of n's leading sources the walk enters (NULL: all;
 * uop_data_sources below for a value's shape or device). */
void uopmap_fill(UOpMap *memo, UOp *root, uint32_t (*walked)(const UOp *n), void (*visit)(UOp *n, void *ctx),
                 void *ctx);
/* The sources a node's shape and device come from: a movement op's first (its size arguments are int expressions of
 * constants and Variables, which its rule decodes itself and which never have a device), every other op's all. */
static inline uint32_t uop_data_sources(const UOp *n) { return op_has(uop_op(n), OPP_MOVEMENT) && n->nsrc ? 1 : n->nsrc; }

/* ---- stable structural hash (tinygrad's key): same graph -> same key in every process ---- */
typedef struct UOpKey { uint64_t lo, hi; } UOpKey;
UOpKey uop_key(UOp *u);
void uop_key_hex(UOpKey k, char out[33]);

/* ---- derived values ---- */
/* Interval bounds (reference section 3). Ints/bools exact over i128; floats: dtype limits. Cached per node. */
i128 uop_vmin(UOp *u);
i128 uop_vmax(UOp *u);
/* The constant factor of an index expression (tinygrad const_factor), and u/v when v divides it exactly (NULL). */
int64_t uop_const_factor(UOp *u);
UOp *uop_divides(UOp *u, int64_t v);
/* Split a chain of `op` (e.g. ADD terms) into its operands, left to right. */
void uop_split(UOp *u, TgOp op, UOpVec *out);
/* Sum of terms with weakint/int dtype of like; n == 0 gives const 0 like `like`. */
UOp *uop_usum(UOp *const *terms, size_t n, const UOp *like);

/* ---- printing (print.c) ---- */
/* tinygrad's render(): "((x*4)+r0)"-style infix for index math. Caller frees. */
char *uop_render(UOp *u);
/* Full tree dump, shared nodes named x0..; stable across runs. Caller frees. */
char *uop_str(UOp *u);
/* One line per node of the toposort: index, op, dtype, sources, arg. Caller frees. */
char *uop_print_list(UOp *u);
/* The arg as tinygrad would print it. Appends to b. */
void uop_arg_print(StrBuf *b, const UOp *u);

#endif
