/* uop.c — the UOp node: op tables, typed args, the intern table (hash-consing), dtype derivation, scopes and
 * reference counts, constructors, Variables, graph walks and the stable structural key.
 *
 * Interning: uop_new hashes (op, dtype, tag, arg, source pointers) and returns the existing node when one is equal.
 * The table holds no reference; a node leaves it when it is freed. Freeing happens only at the end of a scope (see
 * uop.h), so a pointer obtained inside a scope stays valid until that scope ends. */
#include "uop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* ------------------------------------------------------------------------------------------------------------ */
/* op tables                                                                                                      */

#define U OPP_UNARY
#define B OPP_BINARY
#define T OPP_TERNARY
#define C OPP_COMMUTATIVE
#define A OPP_ASSOCIATIVE
#define I OPP_IDEMPOTENT
#define R OPP_REDUCE
#define Q OPP_COMPARISON
#define M OPP_MOVEMENT
#define D OPP_DEFINES
#define X OPP_IRREDUCIBLE
const uint16_t tg_op_props[TG_OP_COUNT] = {
#define OP(name, props) [TG_OP_##name] = (uint16_t)(props),
#include "ops.def"
#undef OP
};
#undef U
#undef B
#undef T
#undef C
#undef A
#undef I
#undef R
#undef Q
#undef M
#undef D
#undef X

const char *const tg_op_names[TG_OP_COUNT] = {
#define OP(name, props) [TG_OP_##name] = #name,
#include "ops.def"
#undef OP
};

const char *uop_op_name(TgOp op) { return (unsigned)op < TG_OP_COUNT ? tg_op_names[op] : "?"; }

int uop_op_by_name(const char *name) {
  for (int i = 0; i < TG_OP_COUNT; i++)
    if (strcmp(tg_op_names[i], name) == 0) return i;
  return -1;
}

OpSet uop_opset_of_props(unsigned props) {
  OpSet s = {{0, 0}};
  for (int i = 0; i < TG_OP_COUNT; i++)
    if (tg_op_props[i] & props) opset_add(&s, (TgOp)i);
  return s;
}

bool uop_opset_by_group(const char *name, OpSet *out) {
  static const struct { const char *name; unsigned props; } groups[] = {
      {"Unary", OPP_UNARY},           {"Binary", OPP_BINARY},         {"Ternary", OPP_TERNARY},
      {"ALU", OPP_ALU},               {"Broadcastable", OPP_BINARY | OPP_TERNARY},
      {"Commutative", OPP_COMMUTATIVE}, {"Associative", OPP_ASSOCIATIVE}, {"Idempotent", OPP_IDEMPOTENT},
      {"Reduce", OPP_REDUCE},         {"Comparison", OPP_COMPARISON}, {"Movement", OPP_MOVEMENT},
      {"Defines", OPP_DEFINES},       {"Irreducible", OPP_IRREDUCIBLE},
  };
  for (size_t i = 0; i < TG_ARRAY_LEN(groups); i++)
    if (strcmp(groups[i].name, name) == 0) {
      *out = uop_opset_of_props(groups[i].props);
      return true;
    }
  if (strcmp(name, "Elementwise") == 0) {
    *out = uop_opset_of_props(OPP_ALU);
    opset_add(out, TG_OP_CAST);
    opset_add(out, TG_OP_BITCAST);
    return true;
  }
  if (strcmp(name, "All") == 0) {
    out->w[0] = out->w[1] = 0;
    for (int i = 0; i < TG_OP_COUNT; i++) opset_add(out, (TgOp)i);
    return true;
  }
  return false;
}

static const char *const axis_names[] = {"DEVICE", "GLOBAL", "WARP", "LOCAL", "WEAK", "GROUP_REDUCE",
                                         "REDUCE", "UPCAST", "UNROLL", "THREAD", "PLACEHOLDER", "LOOP"};
static const char axis_letters[] = {'d', 'g', 'w', 'l', 'W', 'G', 'R', 'u', 'r', 't', 'P', 'L'};
_Static_assert(TG_ARRAY_LEN(axis_names) == AXIS_LOOP + 1, "one name per AxisType");
const char *uop_axis_type_name(AxisType t) { return (unsigned)t <= AXIS_LOOP ? axis_names[t] : "?"; }
char uop_axis_type_letter(AxisType t) { return (unsigned)t <= AXIS_LOOP ? axis_letters[t] : '?'; }

/* ------------------------------------------------------------------------------------------------------------ */
/* args: normalized so equal args have equal bytes (padding zeroed, NaN canonical, bools 0/1)                    */

static Const normalize_const(Const c) {
  Const n = {c.kind, {.i = 0}}; /* fields, not memset: a split store then a wide load stalled store forwarding */
  switch (c.kind) {
  case CK_NONE: case CK_INVALID: break;
  case CK_BOOL: n.i = c.b ? 1 : 0; break;
  case CK_INT: n.i = c.i; break;
  case CK_FLOAT: n.f = c.f != c.f ? (double)NAN : c.f; break;
  }
  return n;
}

/* size of the out-of-line payload of an arg kind (0 for inline kinds) */
static size_t arg_payload_size(const Arg *a) {
  switch (a->kind) {
  case ARG_STR: return (size_t)a->len + 1;
  case ARG_PERM: case ARG_FLIP: case ARG_WMMA: return (size_t)a->len * sizeof(int64_t);
  case ARG_RANGE: return sizeof(RangeArg);
  case ARG_PARAM: return sizeof(ParamArg);
  case ARG_KERNEL: return sizeof(KernelInfo);
  case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT: return 0;
  }
  return 0;
}
static const void *arg_payload(const Arg *a) {
  switch (a->kind) {
  case ARG_STR: return a->str;
  case ARG_PERM: case ARG_FLIP: case ARG_WMMA: return a->ints;
  case ARG_RANGE: return a->range;
  case ARG_PARAM: return a->param;
  case ARG_KERNEL: return a->kernel;
  case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT: return NULL;
  }
  return NULL;
}

/* Copy a fixed-size name, always NUL-terminated, the rest zero. */
static void copy_name(char *dst, const char *src) {
  size_t n = strnlen(src, TG_NAME_MAX - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}

/* Copy a struct payload field by field into zeroed storage, so hashing and comparing bytes is exact. */
static void normalize_payload(const Arg *a, void *out) {
  size_t n = arg_payload_size(a);
  memset(out, 0, n);
  switch (a->kind) {
  case ARG_RANGE: {
    RangeArg *r = out;
    r->axis_id = a->range->axis_id;
    r->nsub = a->range->nsub;
    for (int i = 0; i < a->range->nsub && i < 4; i++) r->sub[i] = a->range->sub[i];
    r->axis_type = a->range->axis_type;
    break;
  }
  case ARG_PARAM: {
    ParamArg *p = out;
    const ParamArg *s = a->param;
    p->slot = s->slot; p->multiple_of = s->multiple_of; p->axis = s->axis;
    p->vmin = s->vmin; p->vmax = s->vmax; p->dtype = s->dtype;
    p->addrspace = s->addrspace; p->is_volatile = s->is_volatile;
    copy_name(p->name, s->name);
    copy_name(p->device, s->device);
    break;
  }
  case ARG_KERNEL: {
    KernelInfo *k = out;
    copy_name(k->name, a->kernel->name);
    k->dont_use_locals = a->kernel->dont_use_locals;
    k->applied_opts = a->kernel->applied_opts;
    memcpy(k->applied, a->kernel->applied, sizeof k->applied);
    k->has_opts_to_apply = a->kernel->has_opts_to_apply;
    k->nopts_to_apply = a->kernel->nopts_to_apply;
    memcpy(k->opts_to_apply, a->kernel->opts_to_apply, sizeof k->opts_to_apply);
    break;
  }
  case ARG_STR: memcpy(out, a->str, a->len); ((char *)out)[a->len] = 0; break;
  case ARG_PERM: case ARG_FLIP: case ARG_WMMA: memcpy(out, a->ints, n); break;
  case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT: break;
  }
}

/* hash of a normalized arg; payload points at normalized bytes */
static uint64_t hash_arg_normalized(const Arg *a, const void *payload) {
  uint64_t h = tg_hash_mix(0x51ed27, (uint64_t)a->kind);
  switch (a->kind) {
  case ARG_CONST: return tg_hash_mix(tg_hash_mix(h, (uint64_t)a->c.kind), (uint64_t)a->c.i);
  case ARG_INT: return tg_hash_mix(h, (uint64_t)a->i);
  case ARG_OP: return tg_hash_mix(h, (uint64_t)a->op);
  case ARG_REDUCE: return tg_hash_mix(tg_hash_mix(h, (uint64_t)a->red.op), (uint64_t)a->red.naxes);
  case ARG_NONE: case ARG_KIND_COUNT: return h;
  case ARG_STR: case ARG_PERM: case ARG_FLIP: case ARG_WMMA: case ARG_RANGE: case ARG_PARAM: case ARG_KERNEL:
    return tg_hash_bytes(payload, arg_payload_size(a), h ^ a->len);
  }
  return h;
}

/* An arg ready for interning: inline part normalized, payload normalized into buf (or heap when large). */
typedef struct NormArg {
  Arg arg;
  _Alignas(16) unsigned char small[sizeof(ParamArg) + 16]; /* ParamArg holds i128: 16-byte aligned */
  void *payload; /* NULL when the kind has none */
} NormArg;

static void norm_arg_init(NormArg *n, const Arg *a) {
  n->arg = *a;
  n->payload = NULL;
  if (a->kind == ARG_CONST) n->arg.c = normalize_const(a->c);
  if (a->kind == ARG_OP || a->kind == ARG_REDUCE || a->kind == ARG_INT) {
    Arg clean = arg_none();
    clean.kind = a->kind;
    if (a->kind == ARG_INT) clean.i = a->i;
    else if (a->kind == ARG_OP) clean.op = a->op;
    else clean.red = a->red;
    n->arg = clean;
  }
  size_t sz = arg_payload_size(a);
  if (sz) {
    n->payload = sz <= sizeof n->small ? (void *)n->small : tg_malloc(sz);
    normalize_payload(a, n->payload);
  }
}
static void norm_arg_free(NormArg *n) {
  if (n->payload && n->payload != (void *)n->small) tg_free(n->payload);
}

static bool arg_eq_normalized(const Arg *stored, const NormArg *n) {
  const Arg *a = &n->arg;
  if (stored->kind != a->kind || stored->len != a->len) return false;
  switch (a->kind) {
  case ARG_NONE: case ARG_KIND_COUNT: return true;
  case ARG_CONST: return stored->c.kind == a->c.kind && stored->c.i == a->c.i;
  case ARG_INT: return stored->i == a->i;
  case ARG_OP: return stored->op == a->op;
  case ARG_REDUCE: return stored->red.op == a->red.op && stored->red.naxes == a->red.naxes;
  case ARG_STR: case ARG_PERM: case ARG_FLIP: case ARG_WMMA: case ARG_RANGE: case ARG_PARAM: case ARG_KERNEL:
    return memcmp(arg_payload(stored), n->payload, arg_payload_size(a)) == 0;
  }
  return false;
}

bool uop_arg_eq(const Arg *a, const Arg *b) {
  NormArg nb;
  norm_arg_init(&nb, b);
  NormArg na;
  norm_arg_init(&na, a);
  Arg sa = na.arg;
  /* compare a's normalized form against b's */
  bool eq;
  if (na.payload) {
    Arg tmp = sa;
    switch (tmp.kind) {
    case ARG_STR: tmp.str = na.payload; break;
    case ARG_PERM: case ARG_FLIP: case ARG_WMMA: tmp.ints = na.payload; break;
    case ARG_RANGE: tmp.range = na.payload; break;
    case ARG_PARAM: tmp.param = na.payload; break;
    case ARG_KERNEL: tmp.kernel = na.payload; break;
    case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT: break;
    }
    eq = arg_eq_normalized(&tmp, &nb);
  } else {
    eq = arg_eq_normalized(&sa, &nb);
  }
  norm_arg_free(&na);
  norm_arg_free(&nb);
  return eq;
}

uint64_t uop_arg_hash(const Arg *a) {
  NormArg n;
  norm_arg_init(&n, a);
  uint64_t h = hash_arg_normalized(&n.arg, n.payload);
  norm_arg_free(&n);
  return h;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* the intern table: chained buckets through UOp.next; grows and shrinks so RSS returns after big graphs die     */

static struct {
  UOp **buckets;
  size_t cap;   /* power of two, or 0 */
  size_t count; /* live nodes */
  uint64_t serial;
} itab;

static void itab_resize(size_t ncap) {
  UOp **nb = tg_calloc(ncap, sizeof(UOp *));
  for (size_t i = 0; i < itab.cap; i++) {
    UOp *u = itab.buckets[i];
    while (u) {
      UOp *next = u->next;
      size_t j = u->hash & (ncap - 1);
      u->next = nb[j];
      nb[j] = u;
      u = next;
    }
  }
  tg_free(itab.buckets);
  itab.buckets = nb;
  itab.cap = ncap;
}

static void itab_remove(UOp *u) {
  UOp **p = &itab.buckets[u->hash & (itab.cap - 1)];
  while (*p != u) {
    TG_ASSERT(*p, "node missing from the intern table");
    p = &(*p)->next;
  }
  *p = u->next;
  itab.count--;
  if (itab.cap > 1024 && itab.count < itab.cap / 8) itab_resize(itab.cap / 4);
}

size_t uop_live_count(void) { return itab.count; }
size_t uop_intern_capacity(void) { return itab.cap; }

/* ------------------------------------------------------------------------------------------------------------ */
/* scopes: a stack of parked nodes (new, or dropped to zero references); a scope is a mark into it               */

static TG_VEC(UOp *) parked;
static size_t open_scopes; /* scopes begun and not yet ended: is there an enclosing scope to hand a result to? */

static void park(UOp *u) {
  if (u->flags & UOP_F_POOLED) return;
  u->flags |= UOP_F_POOLED;
  tg_vec_push(&parked, u);
}

static UOpBufferFreeHook buffer_free_hook;
void uop_set_buffer_free_hook(UOpBufferFreeHook hook) { buffer_free_hook = hook; }

/* uop_const's lookaside: a direct-mapped table of CONST nodes (tag 0) by dtype and normalized value. A hit is the
 * node the intern table holds for that constant (nodes are immutable and unique), found without hashing an Arg;
 * free_node clears a slot whose node dies, so no entry dangles and no node is kept alive by it. */
enum { CONST_LOOKASIDE = 1024 };
static UOp *const_lookaside[CONST_LOOKASIDE];
static size_t const_slot(const DType *d, Const c) {
  uint64_t h = (uint64_t)(uintptr_t)d * 0x9e3779b97f4a7c15ULL;
  h ^= (uint64_t)c.i + (uint64_t)c.kind * 0x632be59bd9b4e019ULL;
  h *= 0xbf58476d1ce4e5b9ULL;
  return (size_t)(h >> 40) & (CONST_LOOKASIDE - 1);
}

static void free_node(UOp *u) {
  if (u->op == TG_OP_BUFFER && buffer_free_hook) buffer_free_hook(u);
  if (u->op == TG_OP_CONST && u->arg.kind == ARG_CONST) {
    size_t slot = const_slot(u->dtype, u->arg.c);
    if (const_lookaside[slot] == u) const_lookaside[slot] = NULL;
  }
  itab_remove(u);
  for (uint32_t i = 0; i < u->nsrc; i++) {
    UOp *s = u->src[i];
    TG_ASSERT(s->rc > 0, "source reference count underflow");
    if (--s->rc == 0) park(s);
  }
  tg_free(u);
}

UOpScope uop_scope_begin(void) {
  open_scopes++;
  return parked.len;
}

void uop_scope_end(UOpScope s) {
  TG_ASSERT(s <= parked.len, "scope ended twice or out of order");
  if (open_scopes) open_scopes--;
  while (parked.len > s) {
    UOp *u = parked.data[--parked.len];
    u->flags &= (uint16_t)~UOP_F_POOLED;
    if (u->rc == 0) free_node(u);
  }
  if (parked.len == 0 && parked.cap > 4096) tg_vec_free(&parked);
}

/* The kept node is parked in the enclosing scope even when something else still holds it: a memo (divmod.c) may be
 * its only holder, and a later clear of that memo inside some inner scope would otherwise free it there while the
 * receiver still uses it (a use after free in grouped_dims, cg_gpu.c, once the memo filled up). */
UOp *uop_scope_end_keep(UOpScope s, UOp *keep) {
  uop_keep(keep);
  uop_scope_end(s);
  uop_drop(keep);
  if (keep && open_scopes) park(keep);
  return keep;
}

UOp *uop_keep(UOp *u) {
  if (u) u->rc++;
  return u;
}

void uop_drop(UOp *u) {
  if (!u) return;
  TG_ASSERT(u->rc > 0, "uop_drop without a matching uop_keep");
  if (--u->rc == 0) park(u);
}

void uop_collect_all(void) {
  uop_scope_end(0);
  open_scopes = 0;
}

void uop_memory_trim(void) {
  if (itab.count == 0 && itab.cap) {
    tg_free(itab.buckets);
    itab.buckets = NULL;
    itab.cap = 0;
  }
  tg_vec_free(&parked);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

/* ------------------------------------------------------------------------------------------------------------ */
/* dtype derivation (tinygrad dtype_from_uop)                                                                     */

static const DType *promote_all(UOp *const *src, size_t n) {
  if (n == 0) return DT_VOID;
  const DType *d = src[0]->dtype;
  for (size_t i = 1; i < n; i++)
    if (src[i]->dtype != d) d = dt_least_upper(d, src[i]->dtype);
  return d;
}

const DType *uop_derive_dtype(TgOp op, UOp *const *src, size_t nsrc, const Arg *arg) {
  switch (op) {
  case TG_OP_STORE: case TG_OP_LINEAR: case TG_OP_SINK: case TG_OP_PROGRAM: case TG_OP_SOURCE: case TG_OP_END:
  case TG_OP_BARRIER: case TG_OP_GROUP: case TG_OP_IF: case TG_OP_ENDIF: case TG_OP_TUPLE: case TG_OP_FUNCTION:
  case TG_OP_CUSTOM_FUNCTION: case TG_OP_REWRITE_ERROR:
    return DT_VOID;
  case TG_OP_CALL: return nsrc && src[0]->dtype == DT_VOID ? DT_VOID : NULL;
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: case TG_OP_INS: case TG_OP_NOOP: case TG_OP_WAIT: return NULL;
  case TG_OP_INDEX: return nsrc ? src[0]->dtype : NULL;
  case TG_OP_LOAD: case TG_OP_UNSHARD: case TG_OP_REDUCE: case TG_OP_AFTER: case TG_OP_RANGE: case TG_OP_CONTIGUOUS:
  case TG_OP_CONTIGUOUS_BACKWARD: case TG_OP_COPY: case TG_OP_STAGE: case TG_OP_DETACH: case TG_OP_CUSTOM_GRAD: case TG_OP_MSTACK:
  case TG_OP_MSELECT: case TG_OP_ALLREDUCE: case TG_OP_SPECIAL:
    return nsrc ? src[0]->dtype : NULL;
  case TG_OP_CMPLT: case TG_OP_CMPNE: case TG_OP_CMPEQ: return DT_BOOL;
  case TG_OP_SIN: case TG_OP_LOG2: case TG_OP_EXP2: case TG_OP_SQRT: case TG_OP_RECIPROCAL:
    if (nsrc != 1) return NULL;
    return uop_is_invalid(src[0]) ? DT_BOOL : dt_least_upper_float(src[0]->dtype);
  case TG_OP_WHERE:
    if (nsrc != 3 || src[0]->dtype != DT_BOOL) return NULL;
    return promote_all(src + 1, 2);
  case TG_OP_STACK: return promote_all(src, nsrc);
  case TG_OP_WMMA: return nsrc >= 3 ? src[2]->dtype : NULL;
  case TG_OP_GETTUPLE: {
    if (nsrc < 1 || arg->kind != ARG_INT) return NULL;
    UOp *t = src[0]->op == TG_OP_FUNCTION && src[0]->nsrc ? src[0]->src[0] : src[0];
    return arg->i >= 0 && (uint32_t)arg->i < t->nsrc ? t->src[arg->i]->dtype : NULL;
  }
  case TG_OP_GETADDR: return DT_UINT64;
  case TG_OP_SHL: case TG_OP_SHR:
    if (nsrc != 2) return NULL;
    for (size_t i = 0; i < 2; i++)
      if (!dt_is_int(src[i]->dtype) && !uop_is_invalid(src[i])) return NULL;
    return src[0]->dtype;
  case TG_OP_BUFFER: case TG_OP_PARAM: return arg->kind == ARG_PARAM ? arg->param->dtype : NULL;
  case TG_OP_BINARY: return DT_UINT8;
  case TG_OP_CAST: case TG_OP_BITCAST: return NULL; /* the target dtype is explicit */
  case TG_OP_CONST:
    if (arg->kind != ARG_CONST) return NULL;
    switch (arg->c.kind) {
    case CK_INVALID: case CK_BOOL: return DT_BOOL;
    case CK_INT: return DT_WEAKINT;
    case CK_FLOAT: return DT_WEAKFLOAT;
    case CK_NONE: return NULL;
    }
    return NULL;
  case TG_OP_NEG: case TG_OP_TRUNC: return nsrc == 1 ? src[0]->dtype : NULL;
  case TG_OP_ADD: case TG_OP_MUL: case TG_OP_CDIV: case TG_OP_MAX: case TG_OP_CMOD: case TG_OP_XOR: case TG_OP_OR:
  case TG_OP_AND: case TG_OP_THREEFRY: case TG_OP_SUB: case TG_OP_FDIV: case TG_OP_POW: case TG_OP_FLOORDIV:
  case TG_OP_FLOORMOD: case TG_OP_MULACC:
    return nsrc ? promote_all(src, nsrc) : NULL;
  case TG_OP_RESHAPE: case TG_OP_PERMUTE: case TG_OP_EXPAND: case TG_OP_PAD: case TG_OP_FLIP: case TG_OP_SHRINK:
    return nsrc ? src[0]->dtype : NULL;
  case TG_OP_COUNT: break;
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* creation                                                                                                       */

static uint64_t label_hash(TgOp op, const DType *dt, uint64_t arg_h, uint32_t tag) {
  return tg_hash_mix(tg_hash_mix((uint64_t)op * 0x100000001b3ULL, (uint64_t)(uintptr_t)dt), arg_h ^ ((uint64_t)tag << 32));
}

static uint64_t node_hash(uint64_t label, UOp *const *src, size_t nsrc) {
  uint64_t h = label;
  for (size_t i = 0; i < nsrc; i++) h = tg_hash_mix(h, (uint64_t)(uintptr_t)src[i]);
  h = tg_hash_mix(h, nsrc);
  /* final avalanche (murmur3 fmix64): the table indexes by the low bits */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

UOp *uop_new_tagged(TgOp op, const DType *dtype, UOp *const *src, size_t nsrc, Arg arg, uint32_t tag) {
  TG_ASSERT((unsigned)op < TG_OP_COUNT, "bad op %d", (int)op);
  if (!dtype) dtype = uop_derive_dtype(op, src, nsrc, &arg);
  if (!dtype) dtype = DT_VOID;
  NormArg na;
  norm_arg_init(&na, &arg);
  uint64_t lh = label_hash(op, dtype, hash_arg_normalized(&na.arg, na.payload), tag);
  uint64_t h = node_hash(lh, src, nsrc);
  if (itab.cap) {
    for (UOp *u = itab.buckets[h & (itab.cap - 1)]; u; u = u->next) {
      if (u->hash != h || u->op != op || u->dtype != dtype || u->nsrc != nsrc || u->tag != tag) continue;
      if (nsrc && memcmp(u->src, src, nsrc * sizeof(UOp *)) != 0) continue;
      if (!arg_eq_normalized(&u->arg, &na)) continue;
      norm_arg_free(&na);
      park(u); /* a found node is owned by the current scope too (it may be held only by a cache that drops it) */
      return u;
    }
  }
  size_t payload = arg_payload_size(&na.arg);
  size_t head = align16(sizeof(UOp) + nsrc * sizeof(UOp *));
  UOp *u = tg_malloc(head + payload);
  memset(u, 0, sizeof(UOp));
  u->op = (uint16_t)op;
  u->nsrc = (uint32_t)nsrc;
  u->tag = tag;
  u->dtype = dtype;
  u->hash = h;
  u->lhash = lh;
  u->serial = ++itab.serial;
  u->arg = na.arg;
  if (payload) {
    void *dst = (char *)u + head;
    memcpy(dst, na.payload, payload);
    switch (u->arg.kind) {
    case ARG_STR: u->arg.str = dst; break;
    case ARG_PERM: case ARG_FLIP: case ARG_WMMA: u->arg.ints = dst; break;
    case ARG_RANGE: u->arg.range = dst; break;
    case ARG_PARAM: u->arg.param = dst; break;
    case ARG_KERNEL: u->arg.kernel = dst; break;
    case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT: break;
    }
  }
  norm_arg_free(&na);
  for (size_t i = 0; i < nsrc; i++) {
    TG_ASSERT(src[i], "NULL source %zu of %s", i, uop_op_name(op));
    u->src[i] = src[i];
    src[i]->rc++;
  }
  if (itab.count + 1 > itab.cap) itab_resize(itab.cap ? itab.cap * 2 : 1024);
  size_t b = h & (itab.cap - 1);
  u->next = itab.buckets[b];
  itab.buckets[b] = u;
  itab.count++;
  park(u);
  return u;
}

UOp *uop_new(TgOp op, const DType *dtype, UOp *const *src, size_t nsrc, Arg arg) {
  return uop_new_tagged(op, dtype, src, nsrc, arg, 0);
}

UOp *uop_replace_src(const UOp *u, UOp *const *src, size_t nsrc) {
  bool same = nsrc == u->nsrc;
  bool same_dtypes = same;
  for (size_t i = 0; same && i < nsrc; i++) {
    if (src[i] != u->src[i]) same = false;
    if (src[i]->dtype != u->src[i]->dtype) same_dtypes = false;
  }
  if (same) return (UOp *)u;
  const DType *dt = u->dtype;
  if (!same_dtypes) {
    const DType *d = uop_derive_dtype(uop_op(u), src, nsrc, &u->arg);
    if (d) dt = d;
  }
  return uop_new_tagged(uop_op(u), dt, src, nsrc, u->arg, u->tag);
}

UOp *uop_with_tag(const UOp *u, uint32_t tag) {
  if (u->tag == tag) return (UOp *)u;
  return uop_new_tagged(uop_op(u), u->dtype, u->src, u->nsrc, u->arg, tag);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* constructors                                                                                                   */

UOp *uop_const(const DType *d, Const v) {
  if (d->count > 1 && !d->is_ptr) {
    UOp *lane = uop_const(d->scalar, v);
    UOp *lanes[64];
    TG_ASSERT(d->count <= 64, "vector const of %d lanes", d->count);
    for (int i = 0; i < d->count; i++) lanes[i] = lane;
    return uop_new(TG_OP_STACK, d->scalar, lanes, (size_t)d->count, arg_none());
  }
  Const c = v.kind == CK_INVALID ? v : dt_const(d, v), n = normalize_const(c);
  const DType *dt = v.kind == CK_INVALID ? DT_BOOL : d;
  size_t slot = const_slot(dt, n);
  UOp *u = const_lookaside[slot];
  if (u && u->dtype == dt && u->tag == 0 && u->arg.c.kind == n.kind && u->arg.c.i == n.i) {
    park(u); /* as the intern table's hit: the current scope owns it too */
    return u;
  }
  u = uop_new(TG_OP_CONST, dt, NULL, 0, arg_const(c));
  const_lookaside[slot] = u; /* its stored arg is n, so free_node finds this slot */
  return u;
}
UOp *uop_const_int(const DType *d, int64_t v) { return uop_const(d, dt_is_float(d) ? const_float((double)v) : const_int(v)); }
UOp *uop_const_float(const DType *d, double v) { return uop_const(d, const_float(v)); }
UOp *uop_const_bool(bool v) { return uop_const(DT_BOOL, const_bool(v)); }
UOp *uop_invalid(void) { return uop_new(TG_OP_CONST, DT_BOOL, NULL, 0, arg_const(const_invalid())); }

Const uop_identity_element(TgOp op, const DType *d) {
  bool f = dt_is_float(d), b = dt_is_bool(d);
  if (op == TG_OP_ADD) return f ? const_float(0.0) : b ? const_bool(false) : const_int(0);
  if (op == TG_OP_MUL) return f ? const_float(1.0) : b ? const_bool(true) : const_int(1);
  return f ? const_float(-INFINITY) : b ? const_bool(false) : const_int((int64_t)dt_min_int(d));
}
UOp *uop_const_like(const UOp *like, Const v) { return uop_const(like->dtype, v); }
UOp *uop_const_like_int(const UOp *like, int64_t v) { return uop_const_int(like->dtype, v); }

UOp *uop_alu1(TgOp op, UOp *a) { return uop_new(op, NULL, &a, 1, arg_none()); }
UOp *uop_alu2(TgOp op, UOp *a, UOp *b) {
  UOp *s[2] = {a, b};
  return uop_new(op, NULL, s, 2, arg_none());
}
UOp *uop_alu3(TgOp op, UOp *a, UOp *b, UOp *c) {
  UOp *s[3] = {a, b, c};
  return uop_new(op, NULL, s, 3, arg_none());
}
UOp *uop_add(UOp *a, UOp *b) { return uop_alu2(TG_OP_ADD, a, b); }
UOp *uop_mul(UOp *a, UOp *b) { return uop_alu2(TG_OP_MUL, a, b); }
UOp *uop_neg(UOp *a) {
  if (a->dtype == DT_BOOL) return uop_not(a);
  return uop_mul(a, uop_const_like_int(a, -1));
}
UOp *uop_sub(UOp *a, UOp *b) { return uop_add(a, uop_neg(b)); }
UOp *uop_idiv(UOp *a, UOp *b) { return uop_alu2(TG_OP_FLOORDIV, a, b); }
UOp *uop_mod(UOp *a, UOp *b) { return uop_alu2(TG_OP_FLOORMOD, a, b); }
UOp *uop_lt(UOp *a, UOp *b) { return uop_alu2(TG_OP_CMPLT, a, b); }
UOp *uop_ne(UOp *a, UOp *b) { return uop_alu2(TG_OP_CMPNE, a, b); }
UOp *uop_eq(UOp *a, UOp *b) { return uop_not(uop_ne(a, b)); }
UOp *uop_max(UOp *a, UOp *b) { return uop_alu2(TG_OP_MAX, a, b); }
UOp *uop_min(UOp *a, UOp *b) { return uop_neg(uop_max(uop_neg(a), uop_neg(b))); }
UOp *uop_and(UOp *a, UOp *b) { return uop_alu2(TG_OP_AND, a, b); }
UOp *uop_or(UOp *a, UOp *b) { return uop_alu2(TG_OP_OR, a, b); }
UOp *uop_xor(UOp *a, UOp *b) { return uop_alu2(TG_OP_XOR, a, b); }
UOp *uop_not(UOp *a) { return uop_ne(a, uop_const_bool(true)); }
UOp *uop_where(UOp *c, UOp *t, UOp *f) { return uop_alu3(TG_OP_WHERE, c, t, f); }
UOp *uop_cast(UOp *a, const DType *d) { return a->dtype == d ? a : uop_new(TG_OP_CAST, d, &a, 1, arg_none()); }
UOp *uop_bitcast(UOp *a, const DType *d) { return a->dtype == d ? a : uop_new(TG_OP_BITCAST, d, &a, 1, arg_none()); }
UOp *uop_add_int(UOp *a, int64_t c) { return uop_add(a, uop_const_like_int(a, c)); }
UOp *uop_mul_int(UOp *a, int64_t c) { return uop_mul(a, uop_const_like_int(a, c)); }
UOp *uop_idiv_int(UOp *a, int64_t c) { return uop_idiv(a, uop_const_like_int(a, c)); }
UOp *uop_mod_int(UOp *a, int64_t c) { return uop_mod(a, uop_const_like_int(a, c)); }
UOp *uop_lt_int(UOp *a, int64_t c) { return uop_lt(a, uop_const_like_int(a, c)); }
UOp *uop_sink(UOp *const *src, size_t n) { return uop_new(TG_OP_SINK, DT_VOID, src, n, arg_none()); }

UOp *uop_range(UOp *end, int64_t axis_id, AxisType type) {
  RangeArg r;
  memset(&r, 0, sizeof r);
  r.axis_id = axis_id;
  r.axis_type = (int32_t)type;
  return uop_new(TG_OP_RANGE, end->dtype, &end, 1, arg_range(&r));
}

UOp *uop_special(UOp *end, const char *name) { return uop_new(TG_OP_SPECIAL, end->dtype, &end, 1, arg_str(name)); }

/* ------------------------------------------------------------------------------------------------------------ */
/* Variables: BUFFER in the ALU address space with a ParamArg carrying name and range (seed)                      */

UOp *uop_variable(const char *name, i128 vmin, i128 vmax, const DType *d) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  TG_ASSERT(strlen(name) < TG_NAME_MAX, "variable name too long: %s", name);
  p.slot = -1;
  p.multiple_of = 1;
  p.axis = -1;
  p.vmin = vmin;
  p.vmax = vmax;
  p.dtype = d ? d : DT_WEAKINT;
  p.addrspace = ADDR_ALU;
  strcpy(p.name, name);
  return uop_new(TG_OP_BUFFER, p.dtype, NULL, 0, arg_param(&p));
}

bool uop_is_variable(const UOp *u) {
  return u->op == TG_OP_BUFFER && u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_ALU && u->nsrc == 0;
}

const char *uop_variable_name(const UOp *u) { return uop_is_variable(u) ? u->arg.param->name : NULL; }

bool uop_has_buffer_identity(const UOp *u, bool after_ok) {
  while (u->op == TG_OP_RESHAPE || u->op == TG_OP_UNSHARD || u->op == TG_OP_MSELECT || (after_ok && u->op == TG_OP_AFTER))
    u = u->src[0];
  return u->op == TG_OP_BUFFER || u->op == TG_OP_PARAM;
}

UOp *uop_bind(UOp *var, int64_t value) {
  if (!uop_is_variable(var)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "bind: %s is not a Variable", uop_op_name(uop_op(var)));
    return NULL;
  }
  const ParamArg *p = var->arg.param;
  if ((i128)value < p->vmin || (i128)value > p->vmax) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "bind: value %lld out of range [%lld, %lld] of Variable %s",
                 (long long)value, (long long)p->vmin, (long long)p->vmax, p->name);
    return NULL;
  }
  UOp *st[2] = {var, uop_const_int(var->dtype, value)};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, st, 2, arg_none());
  UOp *af[2] = {var, store};
  return uop_new(TG_OP_AFTER, NULL, af, 2, arg_none());
}

bool uop_unbind(const UOp *u, UOp **var, int64_t *value) {
  if (u->op != TG_OP_AFTER || u->nsrc != 2 || !uop_is_variable(u->src[0])) return false;
  const UOp *st = u->src[1];
  if (st->op != TG_OP_STORE || st->nsrc != 2 || st->src[0] != u->src[0] || st->src[1]->op != TG_OP_CONST) return false;
  Const c = st->src[1]->arg.c;
  if (c.kind != CK_INT) return false;
  if (var) *var = u->src[0];
  if (value) *value = c.i;
  return true;
}

static int cmp_var_name(const void *a, const void *b) {
  return strcmp((*(UOp *const *)a)->arg.param->name, (*(UOp *const *)b)->arg.param->name);
}

size_t uop_variables(UOp *root, UOp ***out) {
  UOpVec topo = {0};
  uop_toposort(root, NULL, NULL, &topo);
  UOpVec vars = {0};
  for (size_t i = 0; i < topo.len; i++)
    if (uop_is_variable(topo.data[i])) tg_vec_push(&vars, topo.data[i]);
  tg_vec_free(&topo);
  if (vars.len) qsort(vars.data, vars.len, sizeof(UOp *), cmp_var_name);
  *out = vars.data;
  return vars.len;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* pointer map (open addressing, linear probing; keys never removed individually)                                 */

/* Freed first-size tables (64 slots) wait here for the next map: a tensor op builds and drops several small maps
 * (its shape and device memos, each toposort's seen set), and their calloc/free pairs were a fifth of its cost. Like
 * the interning table, maps belong to the one thread that drives the library. */
enum { UOPMAP_FIRST_CAP = 64, UOPMAP_SPARE = 16 };
static struct { const UOp **keys[UOPMAP_SPARE]; void **vals[UOPMAP_SPARE]; int n; } spare_tables;

void uopmap_init(UOpMap *m) { memset(m, 0, sizeof *m); }
void uopmap_free(UOpMap *m) {
  if (m->cap == UOPMAP_FIRST_CAP && spare_tables.n < UOPMAP_SPARE) {
    spare_tables.keys[spare_tables.n] = m->keys, spare_tables.vals[spare_tables.n++] = m->vals;
  } else {
    tg_free(m->keys);
    tg_free(m->vals);
  }
  uopmap_init(m);
}
static size_t ptr_slot(const UOp *k, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 20) & (cap - 1);
}
void **uopmap_get(const UOpMap *m, const UOp *k) {
  if (!m->cap) return NULL;
  for (size_t i = ptr_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == k) return &m->vals[i];
    if (!m->keys[i]) return NULL;
  }
}
void uopmap_put(UOpMap *m, const UOp *k, void *v) {
  if ((m->len + 1) * 4 > m->cap * 3) {
    UOpMap n;
    n.cap = m->cap ? m->cap * 2 : UOPMAP_FIRST_CAP;
    n.len = 0;
    if (n.cap == UOPMAP_FIRST_CAP && spare_tables.n) {  /* only keys need clearing: a value is written on insert */
      n.keys = spare_tables.keys[--spare_tables.n], n.vals = spare_tables.vals[spare_tables.n];
      memset(n.keys, 0, UOPMAP_FIRST_CAP * sizeof *n.keys);
    } else {
      n.keys = tg_calloc(n.cap, sizeof(UOp *));
      n.vals = tg_calloc(n.cap, sizeof(void *));
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) uopmap_put(&n, m->keys[i], m->vals[i]);
    uopmap_free(m);
    *m = n;
  }
  size_t i = ptr_slot(k, m->cap);
  while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) {
    m->keys[i] = k;
    m->len++;
  }
  m->vals[i] = v;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* walks: iterative post-order DFS (graphs can be far deeper than the C stack)                                    */

/* A node on the stack is never reached again before it is visited (that would be a cycle), so membership in memo
 * is the only visited mark needed. */
void uopmap_fill(UOpMap *memo, UOp *root, uint32_t (*walked)(const UOp *n), void (*visit)(UOp *n, void *ctx),
                 void *ctx) {
  if (uopmap_get(memo, root)) return;
  typedef struct { UOp *u; uint32_t next; } Frame;
  Frame local[64];
  Frame *stack = local;
  size_t len = 0, cap = 64;
  stack[len++] = (Frame){root, 0};
  while (len) {
    Frame *f = &stack[len - 1];
    UOp *u = f->u;
    uint32_t nsrc = walked ? walked(u) : u->nsrc;
    while (f->next < nsrc && uopmap_get(memo, u->src[f->next])) f->next++;
    if (f->next < nsrc) {
      UOp *s = u->src[f->next++];
      if (len == cap) {
        Frame *grown = tg_malloc(2 * cap * sizeof *grown);
        memcpy(grown, stack, len * sizeof *grown);
        if (stack != local) tg_free(stack);
        stack = grown, cap *= 2;
      }
      stack[len++] = (Frame){s, 0};
      continue;
    }
    visit(u, ctx);
    len--;
  }
  if (stack != local) tg_free(stack);
}

void uop_toposort_many(UOp *const *roots, size_t n, UOpGate gate, void *gate_ctx, UOpVec *out) {
  UOpMap seen;
  uopmap_init(&seen);
  typedef struct { UOp *u; uint32_t next; } Frame;
  TG_VEC(Frame) stack = {0};
  for (size_t r = 0; r < n; r++) {
    if (!roots[r] || uopmap_get(&seen, roots[r])) continue;
    uopmap_put(&seen, roots[r], NULL);
    Frame f0 = {roots[r], 0};
    tg_vec_push(&stack, f0);
    while (stack.len) {
      Frame *f = &stack.data[stack.len - 1];
      UOp *u = f->u;
      if (f->next == 0 && gate && !gate(u, gate_ctx)) f->next = u->nsrc;
      if (f->next < u->nsrc) {
        UOp *s = u->src[f->next++];
        if (!uopmap_get(&seen, s)) {
          uopmap_put(&seen, s, NULL);
          Frame fs = {s, 0};
          tg_vec_push(&stack, fs);
        }
        continue;
      }
      tg_vec_push(out, u);
      stack.len--;
    }
  }
  tg_vec_free(&stack);
  uopmap_free(&seen);
}

void uop_toposort(UOp *root, UOpGate gate, void *gate_ctx, UOpVec *out) { uop_toposort_many(&root, 1, gate, gate_ctx, out); }

void uop_backward_slice(UOp *root, UOpVec *out) {
  uop_toposort(root, NULL, NULL, out);
  if (out->len && out->data[out->len - 1] == root) out->len--;
}

bool uop_in_backward_slice(UOp *root, const UOp *target) {
  UOpVec v = {0};
  uop_backward_slice(root, &v);
  bool found = false;
  for (size_t i = 0; i < v.len && !found; i++) found = v.data[i] == target;
  tg_vec_free(&v);
  return found;
}

bool uop_op_in_backward_slice_with_self(UOp *root, TgOp op) {
  UOpVec v = {0};
  uop_toposort(root, NULL, NULL, &v);
  bool found = false;
  for (size_t i = 0; i < v.len && !found; i++) found = v.data[i]->op == op;
  tg_vec_free(&v);
  return found;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* stable structural key: a 128-bit hash over (op name, dtype name, arg, tag, source keys); no pointers enter it, so
 * the same graph has the same key in every process (disk caches use it). Memoized in a side map per call.         */

static void key_mix(UOpKey *k, uint64_t v) {
  k->lo = tg_hash_mix(k->lo, v);
  k->hi = tg_hash_mix(k->hi ^ 0x2545f4914f6cdd1dULL, v + k->lo);
}
static void key_mix_str(UOpKey *k, const char *s) { key_mix(k, tg_hash_bytes(s, strlen(s), 0x6b6579)); }

static void dtype_key(UOpKey *k, const DType *d) {
  key_mix_str(k, d->name);
  key_mix(k, (uint64_t)d->count);
  key_mix(k, (uint64_t)d->is_ptr | ((uint64_t)d->addrspace << 8));
  key_mix(k, (uint64_t)d->ptr_size);
  if (d->is_ptr) dtype_key(k, d->base);
}

static void arg_key(UOpKey *k, const UOp *u) {
  const Arg *a = &u->arg;
  key_mix(k, (uint64_t)a->kind);
  switch (a->kind) {
  case ARG_PARAM: {
    const ParamArg *p = a->param;
    key_mix(k, (uint64_t)p->slot);
    key_mix(k, (uint64_t)p->multiple_of);
    key_mix(k, (uint64_t)p->axis);
    key_mix(k, (uint64_t)(u128)p->vmin);
    key_mix(k, (uint64_t)((u128)p->vmin >> 64));
    key_mix(k, (uint64_t)(u128)p->vmax);
    key_mix(k, (uint64_t)((u128)p->vmax >> 64));
    dtype_key(k, p->dtype);
    key_mix(k, (uint64_t)p->addrspace | ((uint64_t)p->is_volatile << 8));
    key_mix_str(k, p->name);
    key_mix_str(k, p->device);
    break;
  }
  case ARG_KERNEL:
    key_mix_str(k, a->kernel->name);
    key_mix(k, (uint64_t)a->kernel->dont_use_locals);
    key_mix(k, (uint64_t)a->kernel->applied_opts);
    for (int i = 0; i < a->kernel->applied_opts && i < KERNEL_OPTS_MAX; i++) {
      const KernelOpt *o = &a->kernel->applied[i];
      key_mix(k, (uint64_t)(uint32_t)o->op | ((uint64_t)(uint32_t)o->axis << 32));
      key_mix(k, (uint64_t)(uint32_t)o->arg);
    }
    key_mix(k, (uint64_t)a->kernel->has_opts_to_apply | ((uint64_t)(uint32_t)a->kernel->nopts_to_apply << 8));
    for (int i = 0; i < a->kernel->nopts_to_apply && i < KERNEL_OPTS_MAX; i++) {
      const KernelOpt *o = &a->kernel->opts_to_apply[i];
      key_mix(k, (uint64_t)(uint32_t)o->op | ((uint64_t)(uint32_t)o->axis << 32));
      key_mix(k, (uint64_t)(uint32_t)o->arg);
    }
    break;
  case ARG_STR: case ARG_PERM: case ARG_FLIP: case ARG_WMMA: case ARG_RANGE:
    key_mix(k, tg_hash_bytes(arg_payload(a), arg_payload_size(a), a->len));
    break;
  case ARG_NONE: case ARG_CONST: case ARG_INT: case ARG_OP: case ARG_REDUCE: case ARG_KIND_COUNT:
    key_mix(k, hash_arg_normalized(a, NULL));
    break;
  }
}

UOpKey uop_key(UOp *root) {
  UOpVec topo = {0};
  uop_toposort(root, NULL, NULL, &topo);
  UOpKey *keys = tg_malloc(topo.len * sizeof(UOpKey));
  UOpMap idx;
  uopmap_init(&idx);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    UOpKey k = {0x74696e7967726164ULL, 0x632e6b6579ULL};
    key_mix_str(&k, uop_op_name(uop_op(u)));
    dtype_key(&k, u->dtype);
    arg_key(&k, u);
    key_mix(&k, u->tag);
    key_mix(&k, u->nsrc);
    for (uint32_t s = 0; s < u->nsrc; s++) {
      UOpKey sk = keys[(size_t)(uintptr_t)*uopmap_get(&idx, u->src[s])];
      key_mix(&k, sk.lo);
      key_mix(&k, sk.hi);
    }
    keys[i] = k;
    uopmap_put(&idx, u, (void *)(uintptr_t)i);
  }
  UOpKey out = keys[topo.len - 1];
  tg_free(keys);
  uopmap_free(&idx);
  tg_vec_free(&topo);
  return out;
}

void uop_key_hex(UOpKey k, char out[33]) { snprintf(out, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo); }
