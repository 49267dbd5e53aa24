/* cg_coalesce.c — memory coalescing (tinygrad codegen/late/coalesce.py memory_coalescing, without images): loads
 * (stores) of one buffer at base+0, base+1, ... become one vector load LOAD(SHRINK(buf, base, n)) picked apart by
 * INDEX(load, lane) (one STORE(SHRINK(...), STACK(values))), n in 4, 2 where the renderer has vectors and n divides
 * the offset; DMC=1 turns it off as in tinygrad. */
#include "cg_internal.h"

#include <stdlib.h>

typedef struct MemAccess {
  int64_t offset;
  UOp *u; /* the LOAD or STORE */
} MemAccess;

typedef struct MemGroup {
  TgOp op;
  UOp *buf;
  UOp *base;        /* the index without its constant offset; NULL for a constant index */
  UOp *valid;
  TG_VEC(MemAccess) acc;
} MemGroup;

static int offset_cmp(const void *pa, const void *pb) {
  const MemAccess *a = pa, *b = pb;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

bool cg_split_offset(UOp *idx, UOp **base, int64_t *off) {
  *base = idx, *off = 0;
  if (idx->op == TG_OP_ADD && idx->src[1]->op == TG_OP_CONST && idx->src[1]->arg.c.kind == CK_INT) {
    *base = idx->src[0], *off = idx->src[1]->arg.c.i;
  } else if (idx->op == TG_OP_ADD && idx->src[0]->op == TG_OP_CONST && idx->src[0]->arg.c.kind == CK_INT) {
    *base = idx->src[1], *off = idx->src[0]->arg.c.i;
  } else if (idx->op == TG_OP_CONST && idx->arg.c.kind == CK_INT) {
    *base = NULL, *off = idx->arg.c.i;
  } else if (idx->op == TG_OP_CONST) {
    return false; /* an Invalid index */
  }
  return true;
}

UOp *cg_index_at(UOp *base, int64_t off) {
  return base ? uop_add(base, uop_const_like_int(base, off)) : uop_const_int(DT_WEAKINT, off);
}

UOp *cg_gated_index(UOp *valid, UOp *idx) {
  if (!valid) return idx;
  UOp *w[3] = {valid, idx, uop_invalid()};
  return uop_new(TG_OP_WHERE, idx->dtype, w, 3, arg_none());
}

static bool buf_is_reg(UOp *buf) {
  while (buf->op == TG_OP_AFTER) buf = buf->src[0];
  return buf->arg.kind == ARG_PARAM && buf->arg.param->addrspace == ADDR_REG;
}

static bool dtype_coalesces(const DType *d) {
  switch (d->id) {
  case TG_FLOAT32: case TG_FLOAT16: case TG_INT32: case TG_UINT32: return true;
  default: return false;
  }
}

static void push_sub(UOpVec *from, UOpVec *to, UOp *a, UOp *b) {
  tg_vec_push(from, a);
  tg_vec_push(to, b);
}

/* from -> to everywhere, inside the replacements too: a load's replacement reads its buffer through an AFTER whose
 * stores hold other loads of this round (a LOCAL buffer filled from global loads), and those must become the same
 * new loads as everywhere else — uop_substitute leaves a replacement as it is, which kept two copies of one loop (two
 * ENDs of one RANGE: "the loop order has a cycle") */
typedef struct DeepSub { UOpMap map, done; } DeepSub;

static UOp *deep_sub(DeepSub *ds, UOp *u) {
  void **hit = uopmap_get(&ds->done, u);
  if (hit) return *hit;
  void **rep = uopmap_get(&ds->map, u);
  UOp *base = rep ? *rep : u; /* a replacement is made of old nodes and new ones; never of u itself */
  UOp **src = tg_malloc((base->nsrc + 1) * sizeof(UOp *));
  bool changed = false;
  for (uint32_t i = 0; i < base->nsrc; i++) {
    src[i] = deep_sub(ds, base->src[i]);
    changed |= src[i] != base->src[i];
  }
  UOp *r = changed ? uop_new_tagged(uop_op(base), base->dtype, src, base->nsrc, base->arg, base->tag) : base;
  tg_free(src);
  uopmap_put(&ds->done, u, r);
  return r;
}

static UOp *substitute_deep(UOp *root, UOp *const *from, UOp *const *to, size_t n) {
  DeepSub ds;
  uopmap_init(&ds.map);
  uopmap_init(&ds.done);
  for (size_t i = 0; i < n; i++) uopmap_put(&ds.map, from[i], to[i]);
  UOp *r = deep_sub(&ds, root);
  uopmap_free(&ds.map);
  uopmap_free(&ds.done);
  return r;
}

/* one kind of access (LOAD or STORE) at a time: the stores are grouped after the loads were replaced, so the values
 * they store already read the coalesced loads */
static UOp *coalesce(UOp *sink, const Renderer *ren, TgOp which) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  TG_VEC(MemGroup) groups = {0};
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != which || !((u->op == TG_OP_LOAD && u->nsrc == 1) || (u->op == TG_OP_STORE && u->nsrc == 2))) continue;
    UOp *ind = u->src[0];
    if (ind->op != TG_OP_INDEX || ind->nsrc != 2) continue;
    UOp *buf = ind->src[0], *idx_u = ind->src[1];
    if (buf_is_reg(buf)) continue;
    bool gated = idx_u->op == TG_OP_WHERE && uop_is_invalid(idx_u->src[2]);
    UOp *idx = gated ? idx_u->src[1] : idx_u, *valid = gated ? idx_u->src[0] : NULL;
    UOp *base;
    int64_t off;
    if (!cg_split_offset(idx, &base, &off)) continue; /* an Invalid index: nothing to merge */
    MemGroup *g = NULL;
    for (size_t k = 0; k < groups.len && !g; k++)
      if (groups.data[k].op == uop_op(u) && groups.data[k].buf == buf && groups.data[k].base == base &&
          groups.data[k].valid == valid)
        g = &groups.data[k];
    if (!g) {
      MemGroup ng = {uop_op(u), buf, base, valid, {0}};
      tg_vec_push(&groups, ng);
      g = &groups.data[groups.len - 1];
    }
    MemAccess a = {off, u};
    tg_vec_push(&g->acc, a);
  }
  UOpVec from = {0}, to = {0};
  for (size_t gi = 0; gi < groups.len; gi++) {
    MemGroup *g = &groups.data[gi];
    int lengths[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    size_t nl = 0;
    int item = TG_MAX(1, g->buf->dtype->scalar->bitsize / 8);
    /* (not tinygrad's, which leaves 8-bit accesses scalar) on a CPU, bytes coalesce too, up to one 64-byte register:
     * the int8 dot kernels' vpdpbusd operands (ggml_qdot.c) are then one load each, where clang assembled each from
     * 64 byte loads with permutes and inserts (12.5 instructions a vpdpbusd, clang 14 -O2). The 1B llama's Q8_0
     * prefill 56-68 -> 84-94 tok/s (2 threads, alternating runs; Q4_0's nibble operands are built lane by lane
     * either way). CPU_BYTE_VEC=0: off. */
    int id = g->buf->dtype->scalar->id; /* int8 and uint8 only: C has no vectors of bool */
    bool bytes = (id == TG_INT8 || id == TG_UINT8) && !ren->has_local && tg_getenv_int("CPU_BYTE_VEC", 1);
    if ((dtype_coalesces(g->buf->dtype->scalar) || bytes) && ren->supports_float4) {
      /* tinygrad's CPU lengths are 4, 2; a CPU whose vector registers are wider (AVX2, AVX-512) also gets accesses
       * as wide as one register, so the compiler sees whole-register loads and stores (measured: with float4 only,
       * clang's SLP vectorizer keeps 4-wide FMAs on an AVX-512 core) */
      int widest = ren->has_local ? 4 : TG_MAX(4, ren->vector_bytes / item);
      for (int w = TG_MIN(widest, bytes ? 64 : 16); w >= 2; w /= 2) lengths[nl++] = w;
    }
    lengths[nl++] = 1;
    qsort(g->acc.data, g->acc.len, sizeof(MemAccess), offset_cmp); /* (qsort is not stable: equal offsets stay grouped) */
    size_t i = 0;
    while (i < g->acc.len) {
      /* the distinct offsets of this run of consecutive offsets, from position i */
      int64_t first = g->acc.data[i].offset;
      size_t ndistinct = 0, j = i;
      while (j < g->acc.len && g->acc.data[j].offset == first + (int64_t)ndistinct) {
        int64_t o = g->acc.data[j].offset;
        while (j < g->acc.len && g->acc.data[j].offset == o) j++;
        ndistinct++;
      }
      UOp *offset = cg_index_at(g->base, first);
      /* GPUs need a vector access aligned to its size; a CPU takes any address (the renderer gives such an access an
       * element-aligned vector type), so the offsets of a convolution window (x + kx) still coalesce */
      bool any_alignment = !ren->has_local;
      int len = 1;
      for (size_t k = 0; k < nl; k++)
        if ((size_t)lengths[k] <= ndistinct && (lengths[k] == 1 || any_alignment || uop_divides(offset, lengths[k]))) {
          len = lengths[k];
          break;
        }
      offset = cg_gated_index(g->valid, offset);
      const DType *dt = g->buf->dtype->scalar;
      UOp *access;
      if (len > 1) {
        UOp *s[3] = {g->buf, offset, uop_const_int(DT_WEAKINT, len)};
        /* arg 1 marks an access whose offset is not a multiple of its length (CPU only; see render_c) */
        bool aligned = uop_divides(uop_is(offset, TG_OP_WHERE) ? offset->src[1] : offset, len) != NULL;
        access = uop_new(TG_OP_SHRINK, dt, s, 3, aligned ? arg_none() : arg_int(1));
      } else {
        UOp *s[2] = {g->buf, offset};
        access = uop_new(TG_OP_INDEX, dt, s, 2, arg_none());
      }
      /* the accesses of the first `len` distinct offsets */
      size_t end = i;
      for (int lane = 0; lane < len; lane++) {
        int64_t o = first + lane;
        while (end < g->acc.len && g->acc.data[end].offset == o) end++;
      }
      if (g->op == TG_OP_STORE) {
        UOp *datas[64];
        bool single = end - i == (size_t)len; /* one store per offset, as tinygrad asserts */
        if (single) {
          for (size_t k = i; k < end; k++) datas[k - i] = g->acc.data[k].u->src[1];
          UOp *val = len > 1 ? uop_new(TG_OP_STACK, dt, datas, (size_t)len, arg_none()) : datas[0];
          UOp *s[2] = {access, val};
          UOp *store = uop_new(TG_OP_STORE, DT_VOID, s, 2, arg_none());
          for (size_t k = i; k < end; k++)
            if (g->acc.data[k].u != store) push_sub(&from, &to, g->acc.data[k].u, store);
        }
      } else {
        UOp *ld = uop_new(TG_OP_LOAD, dt, &access, 1, arg_none());
        for (size_t k = i; k < end; k++) {
          UOp *rep = ld;
          if (len > 1) {
            UOp *s[2] = {ld, uop_const_int(DT_WEAKINT, g->acc.data[k].offset - first)};
            rep = uop_new(TG_OP_INDEX, dt, s, 2, arg_none());
          }
          if (g->acc.data[k].u != rep) push_sub(&from, &to, g->acc.data[k].u, rep);
        }
      }
      i = end;
    }
    tg_vec_free(&g->acc);
  }
  UOp *ret = from.len ? substitute_deep(sink, from.data, to.data, from.len) : sink;
  tg_vec_free(&groups);
  tg_vec_free(&topo);
  tg_vec_free(&from);
  tg_vec_free(&to);
  return ret;
}

UOp *cg_memory_coalescing(UOp *sink, const Renderer *ren) {
  if (tg_getenv_int("DMC", 0)) return sink;
  sink = coalesce(sink, ren, TG_OP_LOAD);
  /* a store's replacement keeps the stores under it as they were (a LOCAL buffer's stores under the global store that
   * reads it back): again until nothing changes */
  for (int round = 0; round < 8; round++) {
    UOp *next = coalesce(sink, ren, TG_OP_STORE);
    if (next == sink) break;
    sink = next;
  }
  return sink;
}
