/* c.c — the C-style renderer (tinygrad renderer/cstyle.py: CStyleLanguage._render), and its C language table for the
 * CPU (ClangRenderer) in two dialects: clang's (tinygrad's text) and gcc's (render.h RenderCDialect, picked by the
 * runtime's compiler). The CUDA table is in cuda.c; what differs between the languages is cstyle.h's CStyleLang.
 *
 * Walks the linearized list once. Every UOp gets a name (alu0, val0, cast0, bidx0, buf0, Lidx0 ...) or, when it is
 * used once and cheap to repeat, its expression text is inlined into its user; everything else becomes one line
 * `type name = expr;` at the current loop depth. Numbering, inlining rules, constant spelling and parenthesisation
 * follow tinygrad's text exactly, so the output is byte-for-byte tinygrad's for the same list. */
#include "cstyle.h"

#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- names and types ---- */

static const char *c_type_name(const DType *d) {
  const DType *s = d->scalar;
  if (s == DT_BOOL) return "_Bool"; /* ClangRenderer.type_map */
  if (s == DT_FLOAT16) return "__fp16";
  return s->cname;
}

/* gcc has no __fp16 on x86; its _Float16 (gcc >= 12) is IEEE half too */
static const char *gcc_type_name(const DType *d) {
  return d->scalar == DT_FLOAT16 ? "_Float16" : c_type_name(d);
}

static bool is_mem_space(AddrSpace a) { return a == ADDR_GLOBAL || a == ADDR_LOCAL; }

typedef struct CRender CRender;
static int64_t numel_of(CRender *cr, const UOp *u);
static AddrSpace aspace(CRender *cr, const UOp *u);

void render_cstyle_put_dtype(StrBuf *b, const CStyleLang *lang, const DType *d, int64_t sz, AddrSpace as, bool want_ptr) {
  const char *name = lang->type_name(d);
  if (sz > 1) {
    for (const char *p = name; *p; p++) sb_putc(b, *p == ' ' ? '_' : *p);
    sb_printf(b, "%lld", (long long)sz);
  } else {
    sb_puts(b, name);
  }
  if (is_mem_space(as) || want_ptr) sb_putc(b, '*');
}

static const CStyleLang *lang_of(const CRender *cr);
#define put_dtype(b, d, sz, as, ptr) render_cstyle_put_dtype((b), lang_of(cr), (d), (sz), (as), (ptr))
#define scalar_name(d) (lang_of(cr)->type_name(d))

/* tinygrad render_type(u) */
static void put_type(CRender *cr, StrBuf *b, const UOp *u) {
  put_dtype(b, u->dtype, numel_of(cr, u), aspace(cr, u), false);
}

/* The element count of a PARAM/BUFFER from its shape source; -1 when not a constant. */
static int64_t const_of(const UOp *u) {
  while (uop_is(u, TG_OP_CAST) && u->nsrc == 1) u = u->src[0];
  if (!uop_is_const(u)) return -1;
  Const c = uop_const_val(u);
  if (c.kind == CK_INT) return c.i;
  if (c.kind == CK_BOOL) return c.b;
  return -1;
}

/* The shape dims of a PARAM/BUFFER (tinygrad as_shape of src[0]); false when a dim is symbolic. */
static bool param_shape(const UOp *u, int64_t *dims, int *ndims) {
  *ndims = 0;
  if (u->nsrc == 0) return true;
  const UOp *s = u->src[0];
  if (uop_is(s, TG_OP_STACK)) {
    for (uint32_t i = 0; i < s->nsrc && i < 16; i++)
      if ((dims[(*ndims)++] = const_of(s->src[i])) < 0) return false;
    return true;
  }
  dims[(*ndims)++] = const_of(s);
  return dims[0] >= 0;
}

/* ---- Python's float repr (shortest round-trip digits; exponent form outside 1e-4 <= |x| < 1e16) ---- */

static void put_py_float(StrBuf *b, double x) {
  if (isnan(x)) { sb_puts(b, "nan"); return; }
  if (isinf(x)) { sb_puts(b, x > 0 ? "inf" : "-inf"); return; }
  char buf[64];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    if (strtod(buf, NULL) == x) break;
  }
  /* buf: [-]d[.ddd]e[+-]XX */
  char digits[32];
  int nd = 0;
  const char *p = buf;
  bool neg = *p == '-';
  if (neg) p++;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  int exp10 = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  int decpt = exp10 + 1; /* digits d1 d2 ... mean 0.d1d2... * 10^decpt */
  if (neg) sb_putc(b, '-');
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      sb_puts(b, "0.");
      for (int i = 0; i < -decpt; i++) sb_putc(b, '0');
      for (int i = 0; i < nd; i++) sb_putc(b, digits[i]);
    } else {
      for (int i = 0; i < decpt; i++) sb_putc(b, i < nd ? digits[i] : '0');
      sb_putc(b, '.');
      if (nd > decpt) for (int i = decpt; i < nd; i++) sb_putc(b, digits[i]);
      else sb_putc(b, '0');
    }
  } else {
    sb_putc(b, digits[0]);
    if (nd > 1) {
      sb_putc(b, '.');
      for (int i = 1; i < nd; i++) sb_putc(b, digits[i]);
    }
    sb_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
}

/* str(c.val) as Python prints the CONST's value */
static void put_py_value(StrBuf *b, const UOp *c) {
  Const v = uop_const_val(c);
  switch (v.kind) {
  case CK_FLOAT: put_py_float(b, v.f); break;
  case CK_BOOL: sb_puts(b, v.b ? "True" : "False"); break;
  case CK_INT: {
    i128 x = dt_const_as_i128(v, c->dtype);
    if (x > (i128)INT64_MAX) sb_printf(b, "%llu", (unsigned long long)(u128)x);
    else sb_printf(b, "%lld", (long long)x);
    break;
  }
  default: sb_puts(b, "Invalid"); break;
  }
}

/* ---- the render state ---- */

enum { PFX_ALU, PFX_CAST, PFX_BIDX, PFX_VAL, PFX_BUF, PFX_WMMA, PFX_COUNT };
static const char *const prefix_names[PFX_COUNT] = {"alu", "cast", "bidx", "val", "buf", "wmma"};

struct CRender {
  const Renderer *ren;
  const CStyleLang *lang;
  ShapeCache shapes;
  UOpMap expr;        /* node -> heap string: its name or its inlined expression */
  UOpMap uses;        /* node -> number of uses in the list */
  int counters[PFX_COUNT];
  bool failed;
};

static int64_t numel_of(CRender *cr, const UOp *u) { return uop_max_numel((UOp *)u, &cr->shapes); }
static const CStyleLang *lang_of(const CRender *cr) { return cr->lang; }
static AddrSpace aspace(CRender *cr, const UOp *u) { return uop_addrspace(&cr->shapes, u); }

static size_t use_count(const CRender *cr, const UOp *u) {
  void **v = uopmap_get(&cr->uses, u);
  return v ? (size_t)(uintptr_t)*v : 0;
}

static void set_expr(CRender *cr, const UOp *u, char *s) {
  void **old = uopmap_get(&cr->expr, u);
  if (old) tg_free(*old);
  uopmap_put(&cr->expr, u, s);
}

static void put_const_cast(CRender *cr, StrBuf *b, const UOp *x, const UOp *c);

/* ctx[u]: the text a user writes for u. A bare CONST (tinygrad always casts them) is spelled as CAST(its dtype). */
static void put_ref(CRender *cr, StrBuf *b, const UOp *u) {
  void **v = uopmap_get(&cr->expr, u);
  if (v) { sb_puts(b, (const char *)*v); return; }
  if (uop_is_const(u)) { put_const_cast(cr, b, u, u); return; }
  cr->failed = true;
  tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: render: %s used before it was rendered", uop_op_name(uop_op(u)));
}

/* tinygrad strip_parens: drop one pair of outer parentheses when what is inside is balanced */
static void put_stripped(StrBuf *b, const char *s) {
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '(' && s[n - 1] == ')') {
    int depth = 0;
    bool ok = true;
    for (size_t i = 1; i + 1 < n && ok; i++) {
      depth += (s[i] == '(') - (s[i] == ')');
      ok = depth >= 0;
    }
    if (ok && depth == 0) {
      for (size_t i = 1; i + 1 < n; i++) sb_putc(b, s[i]);
      return;
    }
  }
  sb_puts(b, s);
}

/* "(T)(val)" — tinygrad render_cast */
static void put_cast_open(CRender *cr, StrBuf *b, const UOp *x) {
  sb_putc(b, '(');
  put_type(cr, b, x);
  sb_puts(b, ")(");
}

/* A constant cast to x's dtype, spelled as tinygrad's base_rewrite const rules do. */
static void put_const_cast(CRender *cr, StrBuf *b, const UOp *x, const UOp *c) {
  const DType *d = x->dtype->scalar;
  Const v = uop_const_val(c);
  if (dt_is_float(d) && v.kind == CK_FLOAT && !isfinite(v.f)) {
    sb_putc(b, '(');
    put_cast_open(cr, b, x);
    if (!isnan(v.f) && v.f < 0) sb_putc(b, '-');
    sb_puts(b, isnan(v.f) ? cr->lang->nan : cr->lang->inf);
    sb_puts(b, "))");
    return;
  }
  if (d == DT_FLOAT32) { put_py_value(b, c); sb_putc(b, 'f'); return; }
  if (d == DT_INT64) { put_py_value(b, c); sb_putc(b, 'l'); return; }
  if (d == DT_UINT64 || d == DT_UINT32) { /* truncated to the width, unsigned */
    i128 iv = v.kind == CK_FLOAT ? (i128)v.f : dt_const_as_i128(v, c->dtype);
    uint64_t u = d == DT_UINT32 ? (uint64_t)(uint32_t)iv : (uint64_t)iv;
    sb_printf(b, "%llu%s", (unsigned long long)u, d == DT_UINT32 ? "u" : "ul");
    return;
  }
  if (d == DT_BOOL) { sb_puts(b, dt_const_as_double(v, c->dtype) != 0 ? "1" : "0"); return; }
  bool small_float = d == DT_FLOAT16 || d == DT_BFLOAT16 || d->id == TG_FP8E4M3 || d->id == TG_FP8E5M2 ||
                     d->id == TG_FP8E4M3FNUZ || d->id == TG_FP8E5M2FNUZ;
  bool small_uint = d == DT_UINT8 || d == DT_UINT16, small_int = d == DT_INT8 || d == DT_INT16;
  if (small_float || small_uint || small_int) {
    sb_putc(b, '(');
    put_cast_open(cr, b, x);
    put_py_value(b, c);
    sb_puts(b, small_float ? "f" : small_uint ? "u" : "");
    sb_puts(b, "))");
    return;
  }
  if (v.kind == CK_BOOL) { sb_puts(b, v.b ? "1" : "0"); return; }
  put_py_value(b, c);
}

/* tinygrad render_access: "*name", or "*((float4*)(name))" for a vector or a reinterpreting access */
/* A vector access SHRINK(buf, offset, n) whose offset is not a multiple of n (the CPU coalescer marks it with arg 1;
 * x86 loads and stores need no alignment), rendered through a vector type aligned like one element ("float4_u"). */
static bool access_unaligned(const UOp *bidx, int64_t n) {
  return n > 1 && uop_is(bidx, TG_OP_SHRINK) && bidx->arg.kind == ARG_INT && bidx->arg.i == 1;
}

static void put_access(CRender *cr, StrBuf *b, const UOp *bidx) {
  int64_t n = numel_of(cr, bidx);
  if (n > 1 || (bidx->nsrc && bidx->dtype != bidx->src[0]->dtype)) {
    sb_puts(b, "*((");
    if (access_unaligned(bidx, n)) {
      put_dtype(b, bidx->dtype, n, ADDR_REG, false);
      sb_puts(b, "_u*");
    } else {
      put_dtype(b, bidx->dtype, n, aspace(cr, bidx), true);
    }
    sb_puts(b, ")(");
    put_ref(cr, b, bidx);
    sb_puts(b, "))");
    return;
  }
  sb_putc(b, '*');
  put_ref(cr, b, bidx);
}

static bool fail_unsupported(CRender *cr, const UOp *u, const char *why) {
  cr->failed = true;
  tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: render: %s %s %s not supported yet", uop_op_name(uop_op(u)), u->dtype->name,
               why);
  return false;
}

/* The ALU op's C text (ClangRenderer.code_for_op). */
static bool put_alu(CRender *cr, StrBuf *b, const UOp *x) {
  TgOp op = uop_op(x);
  if (!renderer_has_op(cr->ren, op)) return fail_unsupported(cr, x, "(no C spelling: decompose it first)");
  char *s[3] = {NULL, NULL, NULL};
  for (uint32_t i = 0; i < x->nsrc && i < 3; i++) {
    StrBuf t;
    sb_init(&t);
    StrBuf r;
    sb_init(&r);
    put_ref(cr, &r, x->src[i]);
    /* C groups a+b+c as (a+b)+c: a right operand keeps its parentheses when it is float math (a + (b + c) is not
     * (a + b) + c in floating point; an accumulator's acc + (x + y) would become a chain of dependent adds) */
    bool strip = x->src[i]->op == x->op &&
                 (op == TG_OP_ADD || op == TG_OP_MUL || op == TG_OP_XOR || op == TG_OP_OR || op == TG_OP_AND) &&
                 (i == 0 || !cr->ren->float_right_parens || !dt_is_float(x->dtype->scalar));
    if (strip) put_stripped(&t, r.s ? r.s : "");
    else sb_puts(&t, r.s ? r.s : "");
    sb_free(&r);
    s[i] = sb_take(&t);
  }
  bool dbl = x->dtype->scalar == DT_FLOAT64;
  const char *bin = NULL;
  if (x->nsrc == 1 && cr->lang->put_unary && cr->lang->put_unary(b, op, x->dtype->scalar, s[0])) op = TG_OP_NOOP;
  switch (op) {
  case TG_OP_NOOP: break;
  case TG_OP_SQRT: sb_printf(b, "%s(%s)", dbl ? "__builtin_sqrt" : "__builtin_sqrtf", s[0]); break; /* C's */
  case TG_OP_TRUNC: sb_printf(b, "%s(%s)", dbl ? "__builtin_trunc" : "__builtin_truncf", s[0]); break;
  case TG_OP_NEG: sb_printf(b, "-%s", s[0]); break;
  case TG_OP_RECIPROCAL: sb_printf(b, "(1/%s)", s[0]); break;
  case TG_OP_EXP2: sb_printf(b, "exp2(%s)", s[0]); break;
  case TG_OP_LOG2: sb_printf(b, "log2(%s)", s[0]); break;
  case TG_OP_SIN: sb_printf(b, "sin(%s)", s[0]); break;
  case TG_OP_WHERE: sb_printf(b, "(%s?%s:%s)", s[0], s[1], s[2]); break;
  case TG_OP_AND: bin = "&"; break;
  case TG_OP_XOR: bin = "^"; break;
  case TG_OP_OR: bin = "|"; break;
  case TG_OP_ADD: bin = "+"; break;
  case TG_OP_SUB: bin = "-"; break;
  case TG_OP_MUL: bin = "*"; break;
  case TG_OP_CMOD: bin = "%"; break;
  case TG_OP_CDIV: case TG_OP_FDIV: bin = "/"; break;
  case TG_OP_CMPNE: bin = "!="; break;
  case TG_OP_CMPEQ: bin = "=="; break;
  case TG_OP_CMPLT: bin = "<"; break;
  case TG_OP_SHR: bin = ">>"; break;
  case TG_OP_SHL: bin = "<<"; break;
  default:
    for (int i = 0; i < 3; i++) tg_free(s[i]);
    return fail_unsupported(cr, x, "(no C spelling)");
  }
  if (bin) sb_printf(b, "(%s%s%s)", s[0], bin, s[1]);
  for (int i = 0; i < 3; i++) tg_free(s[i]);
  return true;
}

/* CUSTOM/CUSTOMI: Python str.format with the sources ("{0}" or "{}" placeholders, "{{" "}}" escapes). */
static bool put_custom(CRender *cr, StrBuf *b, const UOp *x) {
  if (x->arg.kind != ARG_STR) return fail_unsupported(cr, x, "(arg is not a format string)");
  uint32_t next = 0;
  for (const char *p = x->arg.str; *p; p++) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) { sb_putc(b, *p++); continue; }
    if (*p != '{') { sb_putc(b, *p); continue; }
    char *end;
    long k = strtol(p + 1, &end, 10);
    if (end == p + 1) k = (long)next++;
    if (*end != '}' || k < 0 || (uint32_t)k >= x->nsrc) return fail_unsupported(cr, x, "(bad format string)");
    put_ref(cr, b, x->src[k]);
    p = end;
  }
  return true;
}

/* The index of a memory access. An inlined sum (x+16) is written without its parentheses, so the C compiler adds each
 * term to the pointer on its own (buf+x+16): the constant folds into the address and one pointer serves every
 * access at x + c. With the int sum first, clang recomputed and sign-extended x + c for each access: a conv weight
 * gradient's inner loop (20 FMAs, 16 loads) went from 98 to 46 instructions. */
static void put_index_terms(CRender *cr, StrBuf *b, const UOp *idx) {
  StrBuf t;
  sb_init(&t);
  put_ref(cr, &t, idx);
  const char *x = t.s ? t.s : "";
  size_t n = strlen(x);
  bool sum = cr->ren->pointer_plus_terms && uop_is(idx, TG_OP_ADD) && n >= 2 && x[0] == '(' && x[n - 1] == ')';
  for (size_t i = 1, depth = 0; sum && i + 1 < n; i++) { /* the outer parentheses enclose the whole text */
    if (x[i] == '(') depth++;
    if (x[i] == ')' && depth-- == 0) sum = false;
  }
  if (sum) sb_printf(b, "%.*s", (int)(n - 2), x + 1);
  else sb_puts(b, x);
  sb_free(&t);
}

/* One UOp's text (tinygrad base_rewrite); false when the op cannot be rendered. */
static bool render_one(CRender *cr, StrBuf *l, const UOp *u) {
  if (u->dtype->count > 1) return fail_unsupported(cr, u, "(vector dtypes)");
  switch (uop_op(u)) {
  case TG_OP_BUFFER: {
    int64_t dims[16];
    int nd;
    if (!param_shape(u, dims, &nd)) return fail_unsupported(cr, u, "(symbolic shape)");
    int64_t numel = 1;
    for (int i = 0; i < nd; i++) numel *= dims[i];
    if (aspace(cr, u) == ADDR_LOCAL) sb_puts(l, cr->lang->smem_prefix);
    sb_printf(l, "%s ", scalar_name(u->dtype));
    put_ref(cr, l, u);
    sb_printf(l, "[%lld]", (long long)numel);
    if (numel > 1 && cr->lang->align_reg_vectors && aspace(cr, u) == ADDR_REG) { /* a vector accumulator, read and written as one aligned vector */
      int64_t bytes = numel * dt_itemsize(u->dtype), align = 1;
      while (align * 2 <= bytes && align < 64) align *= 2;
      sb_printf(l, " __attribute__((aligned(%lld)))", (long long)align);
    }
    sb_putc(l, ';');
    return true;
  }
  case TG_OP_RANGE:
    if (u->dtype == DT_VOID) { sb_puts(l, "for (;;) {"); return true; }
    sb_printf(l, "for (%s ", scalar_name(u->dtype));
    put_ref(cr, l, u);
    sb_puts(l, " = 0; ");
    put_ref(cr, l, u);
    sb_puts(l, " < ");
    put_ref(cr, l, u->src[0]);
    sb_puts(l, "; ");
    put_ref(cr, l, u);
    sb_puts(l, "++) {");
    return true;
  case TG_OP_END:
    if (u->nsrc == 3 && uop_is(u->src[1], TG_OP_RANGE) && u->src[2]->dtype == DT_BOOL) {
      sb_puts(l, "  if (!(");
      put_ref(cr, l, u->src[2]);
      sb_puts(l, ")) { break; }\n}");
      return true;
    }
    sb_putc(l, '}');
    return true;
  case TG_OP_ENDIF: sb_putc(l, '}'); return true;
  case TG_OP_IF:
    sb_puts(l, "if (");
    put_ref(cr, l, u->src[0]);
    sb_puts(l, ") {");
    return true;
  case TG_OP_CAST:
    if (uop_is_const(u->src[0])) { put_const_cast(cr, l, u, u->src[0]); return true; }
    if (numel_of(cr, u) > 1 && aspace(cr, u) == ADDR_REG) {
      sb_puts(l, "__builtin_convertvector(");
      put_ref(cr, l, u->src[0]);
      sb_puts(l, ", ");
      put_type(cr, l, u);
      sb_putc(l, ')');
      return true;
    }
    sb_putc(l, '(');
    put_cast_open(cr, l, u);
    put_ref(cr, l, u->src[0]);
    sb_puts(l, "))");
    return true;
  case TG_OP_BITCAST:
    if (is_mem_space(aspace(cr, u))) {
      sb_puts(l, "((");
      put_type(cr, l, u);
      sb_puts(l, ")(");
      put_ref(cr, l, u->src[0]);
      sb_puts(l, "))");
      return true;
    }
    if (cr->lang->bitcast == CSTYLE_BITCAST_UNION) { /* gcc: ((union { S s; T t; }){.s = x}).t */
      sb_puts(l, "((union { ");
      put_type(cr, l, u->src[0]);
      sb_puts(l, " s; ");
      put_type(cr, l, u);
      sb_puts(l, " t; }){.s = ");
      put_ref(cr, l, u->src[0]);
      sb_puts(l, "}).t");
      return true;
    }
    if (cr->lang->bitcast == CSTYLE_BITCAST_TEMPLATE) { /* CUDA: tg_bitcast<T>((S)(x)) with the scalar types (render_dtype) */
      sb_printf(l, "tg_bitcast<%s>((%s)(", scalar_name(u->dtype), scalar_name(u->src[0]->dtype));
    } else {
      sb_printf(l, "__builtin_bit_cast(%s, (", scalar_name(u->dtype));
      put_type(cr, l, u->src[0]);
      sb_puts(l, ")(");
    }
    put_ref(cr, l, u->src[0]);
    sb_puts(l, "))");
    return true;
  case TG_OP_BARRIER: sb_puts(l, cr->lang->barrier); return true;
  case TG_OP_SPECIAL: { /* int gidx0 = blockIdx.x; (the bound in a comment) */
    const char *nm = u->arg.kind == ARG_STR ? u->arg.str : "";
    size_t len = strlen(nm);
    int axis = len ? nm[len - 1] - '0' : -1;
    char kind = nm[0] == 'g' || nm[0] == 'l' ? nm[0] : strncmp(nm, "idx", 3) == 0 ? 'i' : 0;
    if (!cr->lang->put_workitem || !kind || axis < 0 || axis > 2 || u->nsrc < 1)
      return fail_unsupported(cr, u, "(a SPECIAL index this language has no spelling for)");
    cr->lang->put_workitem(l, kind, axis);
    char *bound = uop_render(u->src[0]);
    sb_printf(l, "; /* %s */", bound);
    tg_free(bound);
    return true;
  }
  case TG_OP_STACK: /* a vector from lanes: (float4){a,b,c,d} in C, make_float4(a,b,c,d) in CUDA */
    if (cr->lang->vector_ctor) {
      sb_puts(l, cr->lang->vector_ctor);
      put_type(cr, l, u);
      sb_putc(l, '(');
    } else {
      sb_putc(l, '(');
      put_type(cr, l, u);
      sb_puts(l, "){");
    }
    for (uint32_t k = 0; k < u->nsrc; k++) {
      if (k) sb_putc(l, ',');
      put_ref(cr, l, u->src[k]);
    }
    sb_putc(l, cr->lang->vector_ctor ? ')' : '}');
    return true;
  case TG_OP_SHRINK:
    if (u->nsrc != 3 || !uop_is(u->src[2], TG_OP_CAST) || !uop_is_const(u->src[2]->src[0]))
      return fail_unsupported(cr, u, "(only SHRINK(buffer, offset, constant size))");
    /* rendered as INDEX is: the address of its first element */
    /* fall through */
  case TG_OP_INDEX:
    if (uop_is(u, TG_OP_INDEX) && u->nsrc != 2)
      return fail_unsupported(cr, u, "(gated INDEX: move the gate to the LOAD first)");
    if (aspace(cr, u->src[0]) == ADDR_ALU) { /* a lane of a vector value */
      const UOp *i = u->src[1];
      if (!(uop_is(i, TG_OP_CAST) && uop_is_const(i->src[0]))) {
        sb_puts(l, "(");
        put_ref(cr, l, u->src[0]);
        sb_puts(l, ")[");
        put_ref(cr, l, i);
        sb_putc(l, ']');
        return true;
      }
      put_ref(cr, l, u->src[0]);
      Const lane = uop_const_val(i->src[0]);
      if (numel_of(cr, u->src[0]) <= cr->lang->gep_arr_threshold && lane.kind == CK_INT && lane.i >= 0 && lane.i < 8) {
        sb_printf(l, ".%c", "xyzwabcd"[lane.i]);
        return true;
      }
      StrBuf v;
      sb_init(&v);
      put_py_value(&v, i->src[0]);
      sb_printf(l, "[%s]", v.s ? v.s : "");
      sb_free(&v);
      return true;
    }
    sb_putc(l, '(');
    put_ref(cr, l, u->src[0]);
    sb_putc(l, '+');
    put_index_terms(cr, l, u->src[1]);
    sb_putc(l, ')');
    return true;
  case TG_OP_LOAD:
    if (u->nsrc == 1) {
      sb_putc(l, '(');
      put_access(cr, l, u->src[0]);
      sb_putc(l, ')');
      return true;
    }
    if (u->nsrc == 3) {
      sb_putc(l, '(');
      put_ref(cr, l, u->src[2]);
      sb_putc(l, '?');
      put_access(cr, l, u->src[0]);
      sb_putc(l, ':');
      put_ref(cr, l, u->src[1]);
      sb_putc(l, ')');
      return true;
    }
    return fail_unsupported(cr, u, "(LOAD with this many sources)");
  case TG_OP_STORE:
    if (u->nsrc != 2) return fail_unsupported(cr, u, "(gated STORE outside IF)");
    put_access(cr, l, u->src[0]);
    sb_puts(l, " = ");
    put_ref(cr, l, u->src[1]);
    sb_putc(l, ';');
    return true;
  case TG_OP_WMMA: /* __WMMA_8_16_16_half_float(a, b, c): the language's helper around the warp-wide mma */
    if (u->arg.kind != ARG_WMMA || u->arg.len != 9 || u->nsrc != 3)
      return fail_unsupported(cr, u, "(a WMMA the expander did not contract)");
    sb_puts(l, "__");
    render_cstyle_put_wmma_name(l, u);
    sb_putc(l, '(');
    for (uint32_t k = 0; k < 3; k++) {
      if (k) sb_puts(l, ", ");
      put_ref(cr, l, u->src[k]);
    }
    sb_putc(l, ')');
    return true;
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: return put_custom(cr, l, u);
  default: break;
  }
  if (op_is_alu(uop_op(u))) return put_alu(cr, l, u);
  return fail_unsupported(cr, u, "(unknown to the C renderer)");
}

/* tinygrad _wmma_name: WMMA_<N>_<M>_<K>_<dtype_in>_<dtype_out> with tinygrad's dtype names */
static const char *wmma_dtype_name(int64_t id) {
  const DType *d = &tg_dtype_table[id];
  if (d == DT_FLOAT16) return "half";
  if (d == DT_FLOAT32) return "float";
  if (d == DT_BFLOAT16) return "__bf16";
  return d->name;
}

void render_cstyle_put_wmma_name(StrBuf *b, const UOp *w) {
  const int64_t *a = w->arg.ints;
  sb_printf(b, "WMMA_%lld_%lld_%lld_%s_%s", (long long)a[0], (long long)a[1], (long long)a[2], wmma_dtype_name(a[3]),
            wmma_dtype_name(a[4]));
}

/* ---- params ---- */

const char *render_kernel_name(UOp *linear) {
  static _Thread_local char buf[3 * TG_NAME_MAX + 1];
  const char *name = "test";
  for (uint32_t i = linear->nsrc; i-- > 0;) {
    const UOp *u = linear->src[i];
    if (uop_is(u, TG_OP_SINK)) {
      if (u->arg.kind == ARG_KERNEL && u->arg.kernel->name[0]) name = u->arg.kernel->name;
      break;
    }
  }
  /* tinygrad to_function_name: characters outside [A-Za-z0-9_] become their hex code */
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)name; *p && n + 3 < sizeof buf; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (plain) buf[n++] = (char)*p;
    else n += (size_t)snprintf(buf + n, sizeof buf - n, "%02X", *p);
  }
  buf[n] = 0;
  return buf;
}

static bool gate_not_end(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return !uop_is(u, TG_OP_END);
}

void render_params(UOp *linear, RenderParamVec *out) {
  /* the buffers the kernel writes: PARAMs under a STORE's target (not through END) */
  UOpVec targets = {0}, topo = {0};
  for (uint32_t i = 0; i < linear->nsrc; i++)
    if (uop_is(linear->src[i], TG_OP_STORE)) tg_vec_push(&targets, linear->src[i]->src[0]);
  uop_toposort_many(targets.data, targets.len, gate_not_end, NULL, &topo);
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if (!uop_is(u, TG_OP_PARAM) || u->arg.kind != ARG_PARAM) continue;
    RenderParam p;
    memset(&p, 0, sizeof p);
    p.slot = u->arg.param->slot;
    p.is_value = u->arg.param->addrspace == ADDR_ALU;
    if (p.is_value) snprintf(p.var_name, sizeof p.var_name, "%s", u->arg.param->name);
    p.vmin = (int64_t)u->arg.param->vmin;
    p.vmax = (int64_t)u->arg.param->vmax;
    p.dtype = u->dtype;
    int64_t dims[16];
    int nd;
    p.numel = -1;
    StrBuf name;
    sb_init(&name);
    sb_printf(&name, "data%lld_", (long long)p.slot);
    if (param_shape(u, dims, &nd)) {
      p.numel = 1;
      for (int k = 0; k < nd; k++) {
        sb_printf(&name, "%s%lld", k ? "_" : "", (long long)dims[k]);
        p.numel *= dims[k];
      }
    } else {
      sb_puts(&name, "sym");
    }
    snprintf(p.name, sizeof p.name, "%s", name.s);
    sb_free(&name);
    for (size_t k = 0; k < topo.len && !p.is_written; k++) p.is_written = topo.data[k] == u;
    tg_vec_push(out, p);
  }
  tg_vec_free(&targets);
  tg_vec_free(&topo);
}

/* ---- the walk (tinygrad CStyleLanguage._render) ---- */

/* tinygrad axis_letters: the loop variable's first letter (a WEAK axis loops like LOOP) */
static char range_letter(AxisType t) {
  switch (t) {
  case AXIS_DEVICE: return 'd';
  case AXIS_GLOBAL: return 'g';
  case AXIS_THREAD: return 't';
  case AXIS_LOCAL: return 'l';
  case AXIS_WARP: return 'w';
  case AXIS_WEAK: case AXIS_LOOP: return 'L';
  case AXIS_UPCAST: return 'u';
  case AXIS_GROUP_REDUCE: return 'G';
  case AXIS_REDUCE: return 'R';
  case AXIS_UNROLL: return 'r';
  default: return 'p';
  }
}

static int prefix_of(TgOp op) {
  switch (op) {
  case TG_OP_WMMA: return PFX_WMMA;
  case TG_OP_BUFFER: return PFX_BUF;
  case TG_OP_CAST: case TG_OP_BITCAST: case TG_OP_STACK: return PFX_CAST;
  case TG_OP_INDEX: return PFX_BIDX;
  case TG_OP_LOAD: return PFX_VAL;
  default: return PFX_ALU;
  }
}

/* tinygrad's rule for writing u's expression into its user instead of a line of its own */
static bool inline_it(CRender *cr, const UOp *u) {
  TgOp op = uop_op(u);
  size_t uses = use_count(cr, u);
  if (op == TG_OP_CAST && numel_of(cr, u) > 1) return false;
  if (op == TG_OP_CAST && uop_is_const(u->src[0])) return true;
  if (op == TG_OP_INDEX || op == TG_OP_SHRINK || op == TG_OP_CUSTOMI) return true;
  if (op == TG_OP_LOAD && aspace(cr, u->src[0]) == ADDR_REG && uses == 1) return true;
  if ((op == TG_OP_CAST || op == TG_OP_BITCAST) && is_mem_space(aspace(cr, u))) return true;
  bool cheap = op == TG_OP_STACK || op == TG_OP_CAST || op == TG_OP_BITCAST || (op_is_alu(op) && op != TG_OP_WHERE);
  /* Deviation from tinygrad (whose C inlines these too): C computes a scalar 8/16-bit integer ALU in int, so an
   * inlined (val0-val1) of two uint8 is -1, not 255, inside a comparison or a division. A result that can leave its
   * dtype's range gets its own line, whose typed assignment wraps it as the dtype does (torch: 0-1 -> 255 < 10 false). */
  if (!cr->ren->inline_narrow_ints && op_is_alu(op) && dt_is_int(u->dtype) && u->dtype->count == 1 && u->dtype->bitsize < 32 &&
      (op == TG_OP_ADD || op == TG_OP_SUB || op == TG_OP_MUL || op == TG_OP_NEG || op == TG_OP_SHL ||
       op == TG_OP_CDIV || op == TG_OP_MULACC))
    return false;
  return cheap && uses == 1 && !tg_getenv_int("EXPAND_SSA", 0); /* EXPAND_SSA=1: every value on its own line */
}

/* One vector typedef: clang's ext_vector_type(lanes) (ClangRenderer's), or gcc's vector_size(bytes); `suffix` names the
 * element-aligned twin ("_u"). */
static void put_vector_typedef(StrBuf *out, const CStyleLang *lang, const DType *d, int64_t n, int64_t align,
                               const char *suffix) {
  sb_printf(out, "typedef %s ", lang->type_name(d));
  render_cstyle_put_dtype(out, lang, d, n, ADDR_REG, false);
  if (lang->vector_size_attr)
    sb_printf(out, "%s __attribute__((vector_size(%lld),aligned(%lld)));", suffix, /* aligned(1st) would not lower */
              (long long)(n * (int64_t)dt_itemsize(d)), (long long)align);
  else
    sb_printf(out, "%s __attribute__((aligned(%lld),ext_vector_type(%lld)));", suffix, (long long)align, (long long)n);
}

/* ClangRenderer._render_defines: one vector typedef per (dtype, lanes) of a vector value, first-use order */
static void put_vector_typedefs(const CStyleLang *lang, ShapeCache *shapes, StrBuf *out, UOp *linear) {
  const DType *seen_dt[64];
  int64_t seen_n[64];
  size_t nseen = 0;
  bool first = true;
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    const UOp *u = linear->src[i];
    AddrSpace as = uop_addrspace(shapes, u);
    SymShape sh;
    if ((as != ADDR_ALU && as != ADDR_NONE) || u->dtype == DT_VOID || uop_shape_sym_cached((UOp *)u, shapes, &sh) != SHAPE_OK)
      continue;
    int64_t n = uop_max_numel((UOp *)u, shapes);
    if (n <= 1) continue;
    bool dup = false;
    for (size_t k = 0; k < nseen && !dup; k++) dup = seen_dt[k] == u->dtype && seen_n[k] == n;
    if (dup || nseen == TG_ARRAY_LEN(seen_dt)) continue;
    seen_dt[nseen] = u->dtype;
    seen_n[nseen++] = n;
    int64_t bytes = (int64_t)dt_itemsize(u->dtype) * n, align = 1;
    if (!dt_is_bool(u->dtype))
      while (align * 2 <= bytes) align *= 2;
    if (!first) sb_putc(out, '\n');
    first = false;
    put_vector_typedef(out, lang, u->dtype, n, align, "");
  }
  /* the element-aligned twins of the vector types unaligned accesses use */
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    const UOp *u = linear->src[i];
    const UOp *bidx = uop_is(u, TG_OP_LOAD) || uop_is(u, TG_OP_STORE) ? u->src[0] : NULL;
    if (!bidx) continue;
    int64_t n = uop_max_numel((UOp *)bidx, shapes);
    if (!access_unaligned(bidx, n)) continue;
    bool dup = false;
    for (size_t k = 0; k < nseen && !dup; k++) dup = seen_dt[k] == bidx->dtype && seen_n[k] == -n;
    if (dup || nseen == TG_ARRAY_LEN(seen_dt)) continue;
    seen_dt[nseen] = bidx->dtype;
    seen_n[nseen++] = -n;
    if (!first) sb_putc(out, '\n');
    first = false;
    put_vector_typedef(out, lang, bidx->dtype, n, dt_itemsize(bidx->dtype) > 0 ? dt_itemsize(bidx->dtype) : 1, "_u");
  }
}

static void put_indented(StrBuf *body, const char *text, int depth) {
  const char *p = text;
  for (;;) {
    const char *nl = strchr(p, '\n');
    for (int i = 0; i < depth; i++) sb_puts(body, "  ");
    if (!nl) { sb_puts(body, p); break; }
    sb_printf(body, "%.*s\n", (int)(nl - p), p);
    p = nl + 1;
  }
}

/* A reduce loop the C compiler may vectorize by reordering its floating-point reduction (clang's loop hint
 * vectorize(enable) permits that; without it the loop vectorizer keeps the sequential order and gives up). Only an
 * innermost loop of scalar code, at least 64 iterations, whose loads read the loop index with unit stride (a plain
 * addend of the index) or not at all: vector loads, not gathers. The sum order differs from the scalar loop, as it
 * does under any UNROLL. Measured (1 core, AVX-512): softmax's exp-sum over 4096x1024 float32 18.1 ms -> 2.5 ms. */
static bool wants_vectorize_hint(CRender *cr, UOp *linear, uint32_t at) {
  UOp *r = linear->src[at];
  if (r->arg.kind != ARG_RANGE || r->arg.range->axis_type != AXIS_REDUCE) return false;
  if (uop_vmax(r) + 1 < 64) return false;
  for (uint32_t i = at + 1; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if (uop_is(u, TG_OP_END) && u->nsrc > 1 && u->src[1] == r) return true;
    if (uop_is(u, TG_OP_RANGE) || uop_is(u, TG_OP_IF) || numel_of(cr, u) > 1) return false;
    if (!uop_is(u, TG_OP_INDEX) || u->nsrc < 2 || !uop_in_backward_slice(u->src[1], r)) continue;
    UOpVec terms = {0};
    uop_split(u->src[1], TG_OP_ADD, &terms);
    bool unit = false;
    for (size_t k = 0; k < terms.len && !unit; k++) unit = terms.data[k] == r;
    for (size_t k = 0; k < terms.len && unit; k++) unit = terms.data[k] == r || !uop_in_backward_slice(terms.data[k], r);
    tg_vec_free(&terms);
    if (!unit) return false;
  }
  return false;
}

char *render_cstyle(const Renderer *ren, const CStyleLang *lang, UOp *linear) {
  if (!linear || !uop_is(linear, TG_OP_LINEAR)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "render_c: expected a LINEAR from cg_linearize");
    return NULL;
  }
  CRender cr;
  memset(&cr, 0, sizeof cr);
  cr.ren = ren ? ren : renderer_clang();
  cr.lang = lang;
  uopmap_init(&cr.expr);
  uopmap_init(&cr.uses);
  shape_cache_init(&cr.shapes);
  for (uint32_t i = 0; i < linear->nsrc; i++) { /* in program order: each shape from its sources' memoized ones */
    SymShape sh;
    uop_addrspace(&cr.shapes, linear->src[i]);
    if (uop_shape_sym_cached(linear->src[i], &cr.shapes, &sh) == SHAPE_ERROR) cr.failed = true;
  }
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    const UOp *u = linear->src[i];
    for (uint32_t k = 0; k < u->nsrc; k++) {
      void **v = uopmap_get(&cr.uses, u->src[k]);
      uopmap_put(&cr.uses, u->src[k], (void *)(uintptr_t)((v ? (uintptr_t)*v : 0) + 1));
    }
  }
  RenderParamVec params = {0};
  render_params(linear, &params);
  StrBuf body;
  sb_init(&body);
  bool first_line = true;
  int depth = 1;
  for (uint32_t i = 0; i < linear->nsrc && !cr.failed; i++) {
    UOp *u = linear->src[i];
    TgOp op = uop_op(u);
    if (op == TG_OP_NOOP || op == TG_OP_GROUP || op == TG_OP_CONST || op == TG_OP_SINK) continue;
    if (op == TG_OP_STACK && u->nsrc == 0) continue;
    if (op == TG_OP_AFTER) {
      StrBuf t;
      sb_init(&t);
      put_ref(&cr, &t, u->src[0]);
      set_expr(&cr, u, sb_take(&t));
      continue;
    }
    if (op == TG_OP_PARAM) {
      for (size_t k = 0; k < params.len; k++)
        if (params.data[k].slot == u->arg.param->slot) set_expr(&cr, u, tg_strdup(params.data[k].name));
      continue;
    }
    int prefix = -1;
    StrBuf name;
    sb_init(&name);
    if (op == TG_OP_SPECIAL) {
      sb_puts(&name, u->arg.kind == ARG_STR ? u->arg.str : "special");
    } else if (op == TG_OP_RANGE) {
      const RangeArg *ra = u->arg.range;
      sb_printf(&name, "%cidx", range_letter((AxisType)ra->axis_type));
      int64_t ids[5] = {ra->axis_id, ra->sub[0], ra->sub[1], ra->sub[2], ra->sub[3]};
      for (int k = 0; k <= ra->nsub && k < 5; k++)
        sb_printf(&name, "%s%s%lld", k ? "_" : "", ids[k] < 0 ? "m" : "", (long long)(ids[k] < 0 ? -ids[k] : ids[k]));
    } else {
      prefix = prefix_of(op);
      sb_printf(&name, "%s%d", prefix_names[prefix], cr.counters[prefix]);
    }
    set_expr(&cr, u, sb_take(&name));
    StrBuf l;
    sb_init(&l);
    if (!render_one(&cr, &l, u)) { sb_free(&l); break; }
    if (op == TG_OP_ENDIF || op == TG_OP_END) depth--;
    if (inline_it(&cr, u)) {
      set_expr(&cr, u, sb_take(&l));
    } else {
      StrBuf line;
      sb_init(&line);
      if (op != TG_OP_RANGE && op != TG_OP_STORE && op != TG_OP_BUFFER && u->dtype != DT_VOID) {
        put_type(&cr, &line, u);
        sb_putc(&line, ' ');
        put_ref(&cr, &line, u);
        sb_printf(&line, " = %s%s", l.s ? l.s : "", op == TG_OP_SPECIAL ? "" : ";");
      } else {
        sb_puts(&line, l.s ? l.s : "");
      }
      if (!first_line) sb_putc(&body, '\n');
      first_line = false;
      if (op == TG_OP_RANGE && cr.ren->reduce_vectorize_hint && lang->loop_vectorize_hint &&
          wants_vectorize_hint(&cr, linear, i)) {
        put_indented(&body, lang->loop_vectorize_hint, depth);
        sb_putc(&body, '\n');
      }
      put_indented(&body, line.s ? line.s : "", depth);
      sb_free(&line);
      sb_free(&l);
      if (prefix >= 0) cr.counters[prefix]++;
    }
    if (op == TG_OP_IF || op == TG_OP_RANGE) depth++;
  }
  char *result = NULL;
  if (!cr.failed) {
    char fname[3 * TG_NAME_MAX + 1];
    snprintf(fname, sizeof fname, "%s", render_kernel_name(linear));
    StrBuf out;
    sb_init(&out);
    CStyleProgram prg = {fname, &params, body.s ? body.s : "", linear, &cr.shapes};
    lang->put_program(&out, lang, &prg);
    result = sb_take(&out);
  }
  sb_free(&body);
  tg_vec_free(&params);
  for (size_t k = 0; k < cr.expr.cap; k++)
    if (cr.expr.keys[k]) tg_free(cr.expr.vals[k]);
  uopmap_free(&cr.expr);
  uopmap_free(&cr.uses);
  shape_cache_free(&cr.shapes);
  return result;
}

/* ClangRenderer.render_kernel: the vector typedefs, then void <name>(float* restrict data0_16, const int data1_) */
static void c_put_program(StrBuf *out, const CStyleLang *lang, const CStyleProgram *p) {
  put_vector_typedefs(lang, p->shapes, out, p->linear);
  sb_printf(out, "\nvoid %s(", p->name);
  for (size_t k = 0; k < p->params->len; k++) {
    const RenderParam *rp = &p->params->data[k];
    if (k) sb_puts(out, ", ");
    if (rp->is_value) sb_printf(out, "const %s %s", lang->type_name(rp->dtype), rp->name);
    else sb_printf(out, "%s* restrict %s", lang->type_name(rp->dtype), rp->name);
  }
  sb_printf(out, ") {\n%s\n}\n", p->body);
}

static const CStyleLang c_lang = {
    .type_name = c_type_name,
    .inf = "__builtin_inff()",
    .nan = "__builtin_nanf(\"\")",
    .barrier = "__atomic_thread_fence(__ATOMIC_SEQ_CST);",
    .smem_prefix = "",
    .align_reg_vectors = true,
    .vector_ctor = NULL,
    .gep_arr_threshold = 0,
    .bitcast = CSTYLE_BITCAST_BUILTIN,
    .vector_size_attr = false,
    .loop_vectorize_hint = "_Pragma(\"clang loop vectorize(enable)\")",
    .put_unary = NULL,
    .put_workitem = NULL,
    .put_program = c_put_program,
};

/* The same C for gcc (>= 12 on x86-64 for _Float16): what clang's extensions say, in gcc's. Lanes are read as v[i]
 * and built as (float4){a,b,c,d} in both; __builtin_convertvector is in gcc since 9. gcc's loop vectorizer has no
 * hint that permits reordering a reduction, so none is written. */
static const CStyleLang gcc_lang = {
    .type_name = gcc_type_name,
    .inf = "__builtin_inff()",
    .nan = "__builtin_nanf(\"\")",
    .barrier = "__atomic_thread_fence(__ATOMIC_SEQ_CST);",
    .smem_prefix = "",
    .align_reg_vectors = true,
    .vector_ctor = NULL,
    .gep_arr_threshold = 0,
    .bitcast = CSTYLE_BITCAST_UNION,
    .vector_size_attr = true,
    .loop_vectorize_hint = NULL,
    .put_unary = NULL,
    .put_workitem = NULL,
    .put_program = c_put_program,
};

static RenderCDialect c_dialect(const Renderer *ren) {
  RenderCDialect d = ren ? ren->c_dialect : RENDER_C_DIALECT_AUTO;
  if (d != RENDER_C_DIALECT_AUTO) return d;
  return rt_compiler_family() == RT_COMPILER_GCC ? RENDER_C_DIALECT_GCC : RENDER_C_DIALECT_CLANG;
}

/* the vector types and the builtin behind the int8 dot CUSTOMs of cg_vectorize (dot_u8i8): gcc and clang spell the
 * 128-bit vpdpbusd builtin differently */
static char *with_dot_defines(RenderCDialect d, char *src) {
  if (!src || !strstr(src, "tg_dpbusd")) return src;
  StrBuf b;
  sb_init(&b);
  static const int bits[3] = {128, 256, 512};
  for (int k = 0; k < 3; k++) {
    char name[24];
    snprintf(name, sizeof name, "tg_dpbusd%d(", bits[k]);
    if (!strstr(src, name)) continue;
    int n = bits[k] / 32, nb = bits[k] / 8;
    sb_printf(&b, "typedef int tg_i32x%d __attribute__((vector_size(%d)));\n", n, nb);
    sb_printf(&b, "typedef unsigned char tg_u8x%d __attribute__((vector_size(%d)));\n", nb, nb);
    sb_printf(&b, "typedef signed char tg_i8x%d __attribute__((vector_size(%d)));\n", nb, nb);
    if (d == RENDER_C_DIALECT_GCC)
      sb_printf(&b, "#define TG_DPBUSD%d __builtin_ia32_vpdpbusd_v%dsi\n", bits[k], n);
    else
      sb_printf(&b, "#define TG_DPBUSD%d __builtin_ia32_vpdpbusd%d\n", bits[k], bits[k]);
    sb_printf(&b, "static inline tg_i32x%d tg_dpbusd%d(tg_i32x%d c, tg_u8x%d a, tg_i8x%d b) { return TG_DPBUSD%d(c, "
                  "(tg_i32x%d)a, (tg_i32x%d)b); }\n", n, bits[k], n, nb, nb, bits[k], n, n);
  }
  sb_puts(&b, src);
  tg_free(src);
  return sb_take(&b);
}

char *render_c(const Renderer *ren, UOp *linear) {
  RenderCDialect d = c_dialect(ren);
  return with_dot_defines(d, render_cstyle(ren, d == RENDER_C_DIALECT_GCC ? &gcc_lang : &c_lang, linear));
}

char *render_c_entry(UOp *linear, const char *entry_name) {
  RenderParamVec params = {0};
  render_params(linear, &params);
  StrBuf b;
  sb_init(&b);
  char fname[3 * TG_NAME_MAX + 1];
  snprintf(fname, sizeof fname, "%s", render_kernel_name(linear));
  sb_printf(&b, "void %s(void *const *bufs, const long long *vals) {\n  %s(", entry_name, fname);
  for (size_t k = 0; k < params.len; k++) {
    const RenderParam *p = &params.data[k];
    if (k) sb_puts(&b, ", ");
    if (p->is_value) sb_printf(&b, "(%s)vals[%lld]", c_type_name(p->dtype), (long long)p->slot);
    else sb_printf(&b, "bufs[%lld]", (long long)p->slot); /* void * converts: no element type to spell per dialect */
  }
  sb_puts(&b, ");\n}\n");
  tg_vec_free(&params);
  return sb_take(&b);
}
