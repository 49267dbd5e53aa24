/* cstyle.h — the C-style walk shared by the C (CPU) and CUDA renderers (tinygrad renderer/cstyle.py CStyleLanguage):
 * c.c walks the linearized list once (naming, inlining, constants, parenthesisation as tinygrad's _render); what
 * differs between languages is this table (tinygrad's class attributes: type_map, infinity/nan, barrier,
 * smem_prefix, float4 constructor, gep_arr_threshold, code_for_workitem, code_for_op spellings, render_kernel).
 * Internal to src/render. */
#ifndef TG_RENDER_CSTYLE_H
#define TG_RENDER_CSTYLE_H

#include "render.h"
#include "uop/shape.h"

/* What the walk hands to a language's program assembly (tinygrad render_kernel's arguments). */
typedef struct CStyleProgram {
  const char *name;              /* the kernel's function name (render_kernel_name) */
  const RenderParamVec *params;  /* in slot order */
  const char *body;              /* the kernel's lines, indented one level, without the braces */
  UOp *linear;                   /* the list (for prefixes that depend on what it uses) */
  ShapeCache *shapes;            /* shapes and address spaces of the list's nodes */
} CStyleProgram;

/* A value BITCAST: __builtin_bit_cast(T, (S)(x)) (clang's C), tg_bitcast<T>((S)(x)) (CUDA C++, defined in the
 * source), or ((union { S s; T t; }){.s = x}).t (gcc's C, which has no __builtin_bit_cast; the union folds away). */
typedef enum CStyleBitcast { CSTYLE_BITCAST_BUILTIN, CSTYLE_BITCAST_TEMPLATE, CSTYLE_BITCAST_UNION } CStyleBitcast;

typedef struct CStyleLang CStyleLang;
struct CStyleLang {
  const char *(*type_name)(const DType *scalar); /* the scalar's spelling (type_map, else the dtype's C name) */
  const char *inf, *nan;          /* non-finite float constants, written inside a cast: ((float)(INFINITY)) */
  const char *barrier;            /* BARRIER's statement */
  const char *smem_prefix;        /* in front of a LOCAL buffer's declaration */
  bool align_reg_vectors;         /* aligned(...) attribute on a vector register buffer (the CPU's accumulators) */
  const char *vector_ctor;        /* STACK: "make_" gives make_float4(a,b,c,d); NULL gives (float4){a,b,c,d} */
  int gep_arr_threshold;          /* a constant lane of a vector of at most this many lanes is .x/.y/...; else [i] */
  CStyleBitcast bitcast;          /* how a value BITCAST is written */
  bool vector_size_attr;          /* vector typedefs with gcc's vector_size(bytes), not clang's ext_vector_type(n) */
  const char *loop_vectorize_hint; /* the line before a reduce loop render.h reduce_vectorize_hint picks; NULL: none */
  /* a unary op's spelling where the language has its own (CUDA hexp2 for half...); false: the default one */
  bool (*put_unary)(StrBuf *b, TgOp op, const DType *d, const char *x);
  /* SPECIAL: kind 'g' (block), 'l' (thread in block), 'i' (flat global id) of axis 0..2; NULL: not expressible */
  void (*put_workitem)(StrBuf *b, char kind, int axis);
  /* the whole source: prefixes, the kernel's header, its body (tinygrad render_kernel) */
  void (*put_program)(StrBuf *out, const CStyleLang *lang, const CStyleProgram *p);
};

/* Render a linearized kernel in the given language; heap string, or NULL with tg_last_error() set. */
char *render_cstyle(const Renderer *ren, const CStyleLang *lang, UOp *linear);

/* tinygrad _render_dtype: "float", a vector "float4" / "unsigned_int2" (spaces become '_'), with '*' for memory in
 * GLOBAL/LOCAL space or when a pointer is asked for. */
void render_cstyle_put_dtype(StrBuf *b, const CStyleLang *lang, const DType *d, int64_t sz, AddrSpace as, bool want_ptr);

/* tinygrad _wmma_name of a contracted WMMA: "WMMA_8_16_16_half_float" (the helper is "__" + it) */
void render_cstyle_put_wmma_name(StrBuf *b, const UOp *wmma);

#endif
