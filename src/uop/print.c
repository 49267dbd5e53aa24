/* print.c — turning UOps into text, with tinygrad's spellings so strings can be compared across implementations:
 *
 *   uop_render      tinygrad's render(): infix index math ("((a*4)+r0)" with its paren stripping); the graph is
 *                   rendered as it is (no simplification first — callers simplify when they want that)
 *   uop_str         tinygrad's pretty_print (repr of a UOp): nested UOp(Ops.X, dtypes.y, arg=..., src=(...)) with
 *                   shared nodes written once as xN:= and referred to as xN afterwards
 *   uop_print_list  tinygrad's print_uops: one line per node of the toposort
 *   uop_arg_print       the repr of a node's arg
 *
 * Everything here is used in error messages and debug output, so it never trusts the node: odd arities, args of the
 * wrong kind and NULL payloads print as something readable instead of crashing. Deep graphs are walked with explicit
 * stacks. */
#include "uop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------------------------------------------ */
/* Python spellings of scalars                                                                                    */

/* repr(float) of Python: the shortest digit string that reads back to the same double; fixed notation for decimal
 * exponents -4..15, scientific ("1e+16", "1.5e-05") outside; integral values keep ".0". */
static void put_py_float(StrBuf *b, double v) {
  if (isnan(v)) { sb_puts(b, "nan"); return; }
  if (isinf(v)) { sb_puts(b, v < 0 ? "-inf" : "inf"); return; }
  char tmp[40];
  for (int prec = 0; prec < 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec, v);
    if (strtod(tmp, NULL) == v) break;
  }
  /* tmp is "[-]d[.ddd]e[+-]XX": split into sign, digits and exponent */
  const char *p = tmp;
  bool neg = *p == '-';
  if (neg) p++;
  char digits[24];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9' && nd < 23) digits[nd++] = *p;
  int exp10 = *p == 'e' ? atoi(p + 1) : 0;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  if (neg) sb_putc(b, '-');
  if (exp10 < -4 || exp10 >= 16) {
    sb_putc(b, digits[0]);
    if (nd > 1) {
      sb_putc(b, '.');
      sb_puts(b, digits + 1);
    }
    sb_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  } else if (exp10 < 0) {
    sb_puts(b, "0.");
    for (int i = 0; i < -exp10 - 1; i++) sb_putc(b, '0');
    sb_puts(b, digits);
  } else {
    for (int i = 0; i <= exp10; i++) sb_putc(b, i < nd ? digits[i] : '0');
    sb_putc(b, '.');
    if (nd > exp10 + 1) sb_puts(b, digits + exp10 + 1);
    else sb_putc(b, '0');
  }
}

/* repr(str) of Python: single quotes unless the text has a ' and no ". */
static void put_py_str(StrBuf *b, const char *s, size_t n) {
  if (!s) { sb_puts(b, "None"); return; }
  bool has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
  char q = has_single && !has_double ? '"' : '\'';
  sb_putc(b, q);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\\' || c == (unsigned char)q) { sb_putc(b, '\\'); sb_putc(b, (char)c); }
    else if (c == '\n') sb_puts(b, "\\n");
    else if (c == '\t') sb_puts(b, "\\t");
    else if (c == '\r') sb_puts(b, "\\r");
    else if (c < 0x20 || c == 0x7f) sb_printf(b, "\\x%02x", c);
    else sb_putc(b, (char)c);
  }
  sb_putc(b, q);
}

static void put_i128(StrBuf *b, i128 v) {
  char tmp[48];
  int n = 0;
  bool neg = v < 0;
  u128 m = neg ? (u128)0 - (u128)v : (u128)v;
  do {
    tmp[n++] = (char)('0' + (int)(m % 10));
    m /= 10;
  } while (m && n < 47);
  if (neg) sb_putc(b, '-');
  while (n) sb_putc(b, tmp[--n]);
}

static void put_dtype_repr(StrBuf *b, const DType *d) {
  if (!d) { sb_puts(b, "None"); return; }
  sb_puts(b, "dtypes.");
  sb_puts(b, d->name ? d->name : "?");
}

/* str(value) of a CONST: 5, 1.0, inf, True, Invalid. uint64 values are held as their bit pattern. */
static void put_const_str(StrBuf *b, Const c, const DType *d) {
  switch (c.kind) {
  case CK_NONE: sb_puts(b, "None"); return;
  case CK_BOOL: sb_puts(b, c.b ? "True" : "False"); return;
  case CK_INVALID: sb_puts(b, "Invalid"); return;
  case CK_FLOAT: put_py_float(b, c.f); return;
  case CK_INT:
    if (d && d->scalar && d->scalar->id == TG_UINT64) sb_printf(b, "%llu", (unsigned long long)(uint64_t)c.i);
    else sb_printf(b, "%lld", (long long)c.i);
    return;
  }
  sb_printf(b, "<const kind %d>", (int)c.kind);
}

/* repr(value): floats are ConstFloat in tinygrad's args. */
static void put_const_repr(StrBuf *b, Const c, const DType *d) {
  if (c.kind == CK_FLOAT) {
    sb_puts(b, "ConstFloat(");
    put_py_float(b, c.f);
    sb_putc(b, ')');
  } else {
    put_const_str(b, c, d);
  }
}

static const char *addrspace_name(int32_t as) {
  switch (as) {
  case ADDR_GLOBAL: return "AddrSpace.GLOBAL";
  case ADDR_LOCAL: return "AddrSpace.LOCAL";
  case ADDR_REG: return "AddrSpace.REG";
  case ADDR_ALU: return "AddrSpace.ALU";
  default: return "None";
  }
}

static const char *safe_op_name(int64_t op) { return op >= 0 && op < TG_OP_COUNT ? tg_op_names[op] : "?"; }

/* "0", "1_2", "m3": the ids of a RANGE arg (negative ids are written m<abs>) */
static void put_range_ids(StrBuf *b, const RangeArg *r) {
  int n = r->nsub < 0 ? 0 : r->nsub > 4 ? 4 : r->nsub;
  for (int i = -1; i < n; i++) {
    int64_t v = i < 0 ? r->axis_id : r->sub[i];
    if (i >= 0) sb_putc(b, '_');
    if (v >= 0) sb_printf(b, "%lld", (long long)v);
    else sb_printf(b, "m%llu", (unsigned long long)(0 - (uint64_t)v));
  }
}

/* The node's arg as repr() (str_form false) or str() (str_form true) would print it. The two differ only for
 * strings (quoted or not) and float consts (ConstFloat(1.0) or 1.0). CAST/BITCAST print their target dtype, which
 * is what tinygrad stores as their arg. */
static void put_arg(StrBuf *b, const UOp *u, bool str_form) {
  const Arg *a = &u->arg;
  switch (a->kind) {
  case ARG_NONE:
    if (u->op == TG_OP_CAST || u->op == TG_OP_BITCAST) put_dtype_repr(b, u->dtype);
    else sb_puts(b, "None");
    return;
  case ARG_CONST:
    if (str_form) put_const_str(b, a->c, u->dtype);
    else put_const_repr(b, a->c, u->dtype);
    return;
  case ARG_INT: sb_printf(b, "%lld", (long long)a->i); return;
  case ARG_OP: sb_printf(b, "Ops.%s", safe_op_name(a->op)); return;
  case ARG_REDUCE: sb_printf(b, "(Ops.%s, %d)", safe_op_name(a->red.op), (int)a->red.naxes); return;
  case ARG_STR:
    if (!a->str) sb_puts(b, "None");
    else if (str_form) sb_puts(b, a->str);
    else put_py_str(b, a->str, a->len);
    return;
  case ARG_PERM: case ARG_FLIP: case ARG_WMMA:
    sb_putc(b, '(');
    for (uint32_t i = 0; a->ints && i < a->len; i++) {
      if (i) sb_puts(b, ", ");
      if (a->kind == ARG_FLIP) sb_puts(b, a->ints[i] ? "True" : "False");
      else sb_printf(b, "%lld", (long long)a->ints[i]);
    }
    sb_puts(b, a->len == 1 ? ",)" : ")");
    return;
  case ARG_RANGE: {
    const RangeArg *r = a->range;
    if (!r) { sb_puts(b, "None"); return; }
    sb_printf(b, "(%lld, ", (long long)r->axis_id);
    for (int i = 0; i < r->nsub && i < 4; i++) sb_printf(b, "%lld, ", (long long)r->sub[i]);
    sb_printf(b, "AxisType.%s)", uop_axis_type_name((AxisType)r->axis_type));
    return;
  }
  case ARG_PARAM: {
    const ParamArg *p = a->param;
    if (!p) { sb_puts(b, "None"); return; }
    sb_printf(b, "ParamArg(%lld, ", (long long)p->slot);
    put_dtype_repr(b, p->dtype);
    /* a Variable (ALU address space) always carries its range and multiple; the other fields print when they differ
     * from tinygrad's defaults */
    if (p->addrspace == ADDR_ALU) {
      sb_puts(b, ", vmin_vmax=(");
      put_i128(b, p->vmin);
      sb_puts(b, ", ");
      put_i128(b, p->vmax);
      sb_printf(b, "), multiple_of=%lld", (long long)p->multiple_of);
    } else if (p->multiple_of != 1 && p->multiple_of != 0) {
      sb_printf(b, ", multiple_of=%lld", (long long)p->multiple_of);
    }
    if (p->name[0]) {
      sb_puts(b, ", name=");
      put_py_str(b, p->name, strnlen(p->name, TG_NAME_MAX));
    }
    if (p->addrspace != ADDR_GLOBAL) sb_printf(b, ", addrspace=%s", addrspace_name(p->addrspace));
    if (p->axis >= 0) sb_printf(b, ", axis=%lld", (long long)p->axis);
    if (p->device[0]) {
      sb_puts(b, ", device=");
      put_py_str(b, p->device, strnlen(p->device, TG_NAME_MAX));
    }
    if (p->is_volatile) sb_puts(b, ", volatile=True");
    sb_putc(b, ')');
    return;
  }
  case ARG_KERNEL: {
    const KernelInfo *k = a->kernel;
    if (!k) { sb_puts(b, "None"); return; }
    sb_puts(b, "KernelInfo(name=");
    put_py_str(b, k->name, strnlen(k->name, TG_NAME_MAX));
    sb_printf(b, ", dont_use_locals=%s, applied_opts=%d)", k->dont_use_locals ? "True" : "False",
              (int)k->applied_opts);
    return;
  }
  case ARG_KIND_COUNT: break;
  }
  sb_printf(b, "<arg kind %d>", (int)a->kind);
}

void uop_arg_print(StrBuf *b, const UOp *u) {
  if (!u) { sb_puts(b, "None"); return; }
  put_arg(b, u, false);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* uop_str: pretty_print                                                                                          */

/* Per-node state of pretty_print: the number (order of first discovery), how many source slots point at the node,
 * and whether it was printed already. */
typedef struct PPInfo { size_t num, uses; bool printed; } PPInfo;

static void put_uop_header(StrBuf *b, const UOp *u) {
  sb_printf(b, "UOp(Ops.%s, ", safe_op_name(u->op));
  put_dtype_repr(b, u->dtype);
  sb_puts(b, ", arg=");
  if (u->op == TG_OP_REDUCE && u->arg.kind == ARG_REDUCE) /* tinygrad's argstr spells the reduce op with str() */
    sb_printf(b, "(Ops.%s, %d)", safe_op_name(u->arg.red.op), (int)u->arg.red.naxes);
  else put_arg(b, u, false);
  if (u->tag) sb_printf(b, ", tag=%u", (unsigned)u->tag);
  sb_puts(b, ", src=(");
}

static void put_indent(StrBuf *b, size_t d) {
  for (size_t i = 0; i < d; i++) sb_putc(b, ' ');
}

typedef struct PPFrame { UOp *u; uint32_t next; } PPFrame;

static void pretty_print_into(StrBuf *b, UOp *root) {
  /* pass 1: number nodes in order of discovery (a source is numbered when first seen, then explored at once) and
   * count the source slots referring to each */
  TG_VEC(PPInfo) info = {0};
  UOpMap idx;
  uopmap_init(&idx);
  TG_VEC(PPFrame) st = {0};
  PPFrame f0 = {root, 0};
  tg_vec_push(&st, f0);
  while (st.len) {
    PPFrame *f = &st.data[st.len - 1];
    if (f->next >= f->u->nsrc) { st.len--; continue; }
    UOp *s = f->u->src[f->next++];
    if (!s) continue;
    void **slot = uopmap_get(&idx, s);
    if (slot) {
      info.data[(size_t)(uintptr_t)*slot].uses++;
      continue;
    }
    PPInfo pi = {info.len, 1, false};
    uopmap_put(&idx, s, (void *)(uintptr_t)info.len);
    tg_vec_push(&info, pi);
    PPFrame fs = {s, 0};
    tg_vec_push(&st, fs);
  }
  if (!uopmap_get(&idx, root)) { /* the root is numbered 0 and used 0 times unless it is its own descendant */
    PPInfo pi = {0, 0, false};
    uopmap_put(&idx, root, (void *)(uintptr_t)info.len);
    tg_vec_push(&info, pi);
  }
  /* pass 2: print, in the same depth-first order */
  st.len = 0;
  PPInfo *ri = &info.data[(size_t)(uintptr_t)*uopmap_get(&idx, root)];
  ri->printed = true;
  if (ri->uses > 1) sb_printf(b, "x%zu:=", ri->num);
  put_uop_header(b, root);
  tg_vec_push(&st, f0);
  while (st.len) {
    PPFrame *f = &st.data[st.len - 1];
    if (f->next >= f->u->nsrc) {
      sb_puts(b, "))");
      st.len--;
      if (st.len) sb_putc(b, ',');
      continue;
    }
    UOp *s = f->u->src[f->next++];
    size_t depth = 2 * st.len;
    sb_putc(b, '\n');
    put_indent(b, depth);
    if (!s) { sb_puts(b, "None,"); continue; }
    PPInfo *si = &info.data[(size_t)(uintptr_t)*uopmap_get(&idx, s)];
    if (si->printed) {
      sb_printf(b, "x%zu,", si->num);
      continue;
    }
    si->printed = true;
    if (si->uses > 1) sb_printf(b, "x%zu:=", si->num);
    put_uop_header(b, s);
    PPFrame fs = {s, 0};
    tg_vec_push(&st, fs);
  }
  tg_vec_free(&st);
  tg_vec_free(&info);
  uopmap_free(&idx);
}

char *uop_str(UOp *u) {
  StrBuf b;
  sb_init(&b);
  if (!u) sb_puts(&b, "None");
  else pretty_print_into(&b, u);
  return sb_take(&b);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* uop_render: tinygrad's renderer table, one case per rule in its order                                          */

/* Binding strength of the infix ops that may lose their parentheses (lower binds tighter). Comparisons are absent:
 * Python chains them, so they always keep their parentheses. */
static int render_precedence(TgOp op) {
  switch (op) {
  case TG_OP_MUL: case TG_OP_FLOORDIV: case TG_OP_FLOORMOD: return 1;
  case TG_OP_ADD: case TG_OP_SUB: return 2;
  case TG_OP_SHL: case TG_OP_SHR: return 3;
  case TG_OP_AND: return 4;
  case TG_OP_XOR: return 5;
  case TG_OP_OR: return 6;
  default: return 99;
  }
}

static const char *infix_symbol(TgOp op) {
  switch (op) {
  case TG_OP_ADD: return "+";
  case TG_OP_SUB: return "-";
  case TG_OP_FLOORDIV: return "//";
  case TG_OP_FLOORMOD: return "%";
  case TG_OP_SHL: return "<<";
  case TG_OP_SHR: return ">>";
  case TG_OP_MUL: return "*";
  case TG_OP_CMPLT: return "<";
  case TG_OP_CMPNE: return "!=";
  case TG_OP_AND: return "&";
  case TG_OP_OR: return "|";
  case TG_OP_XOR: return "^";
  default: return NULL;
  }
}

/* s without its outer parentheses when they enclose the whole text as one balanced group. */
static void put_strip_parens(StrBuf *b, const char *s) {
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '(' && s[n - 1] == ')') {
    long depth = 0;
    bool balanced = true;
    for (size_t i = 1; i + 1 < n && balanced; i++) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth < 0) balanced = false;
    }
    if (balanced && depth == 0) {
      for (size_t i = 1; i + 1 < n; i++) sb_putc(b, s[i]);
      return;
    }
  }
  sb_puts(b, s);
}

typedef struct RenderCtx {
  UOpMap idx;      /* node -> index into text */
  char **text;     /* rendered text per toposort position */
} RenderCtx;

static const char *rendered(const RenderCtx *rc, const UOp *s) {
  void **slot = s ? uopmap_get(&rc->idx, s) : NULL;
  return slot ? rc->text[(size_t)(uintptr_t)*slot] : "None";
}

/* The elements of a movement op's shape source: a STACK's sources, or the node itself. */
static void put_shape_pieces(StrBuf *b, const RenderCtx *rc, const UOp *shape, const UOp *shape2) {
  size_t n = shape->op == TG_OP_STACK ? shape->nsrc : 1;
  if (shape2) {
    size_t n2 = shape2->op == TG_OP_STACK ? shape2->nsrc : 1;
    if (n2 < n) n = n2;
  }
  sb_putc(b, '(');
  for (size_t i = 0; i < n; i++) {
    if (i) sb_putc(b, ',');
    const UOp *e = shape->op == TG_OP_STACK ? shape->src[i] : shape;
    if (shape2) {
      const UOp *e2 = shape2->op == TG_OP_STACK ? shape2->src[i] : shape2;
      sb_printf(b, "(%s, %s)", rendered(rc, e), rendered(rc, e2));
    } else {
      sb_puts(b, rendered(rc, e));
    }
  }
  if (n == 1) sb_putc(b, ',');
  sb_putc(b, ')');
}

static void render_movement(StrBuf *b, const RenderCtx *rc, const UOp *u) {
  char lower[32];
  const char *name = safe_op_name(u->op);
  size_t i = 0;
  for (; name[i] && i < sizeof lower - 1; i++)
    lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
  lower[i] = 0;
  sb_printf(b, "%s.%s(", rendered(rc, u->src[0]), lower);
  if (u->op == TG_OP_PERMUTE) {
    put_arg(b, u, true);
  } else if (u->op == TG_OP_FLIP) {
    /* the flipped axes, as a tuple */
    uint32_t nflip = 0;
    sb_putc(b, '(');
    for (uint32_t a = 0; u->arg.kind == ARG_FLIP && u->arg.ints && a < u->arg.len; a++) {
      if (!u->arg.ints[a]) continue;
      sb_printf(b, "%s%u", nflip ? ", " : "", (unsigned)a);
      nflip++;
    }
    sb_puts(b, nflip == 1 ? ",)" : ")");
  } else if ((u->op == TG_OP_RESHAPE || u->op == TG_OP_EXPAND) && u->nsrc >= 2) {
    put_shape_pieces(b, rc, u->src[1], NULL);
  } else if ((u->op == TG_OP_PAD || u->op == TG_OP_SHRINK) && u->nsrc >= 3) {
    put_shape_pieces(b, rc, u->src[1], u->src[2]);
  } else {
    sb_puts(b, "()");
  }
  sb_putc(b, ')');
}

/* Render one node given its sources' text. Falls back to the full repr for ops the renderer has no rule for (as
 * tinygrad does) and for malformed nodes. */
static void render_node(StrBuf *b, const RenderCtx *rc, UOp *u) {
  TgOp op = uop_op(u);
  const Arg *a = &u->arg;
  const char *s0 = u->nsrc > 0 ? rendered(rc, u->src[0]) : NULL;
  const char *s1 = u->nsrc > 1 ? rendered(rc, u->src[1]) : NULL;
  const char *s2 = u->nsrc > 2 ? rendered(rc, u->src[2]) : NULL;
  switch (op) {
  case TG_OP_PARAM:
    if (a->kind != ARG_PARAM || !a->param) break;
    if (a->param->name[0]) sb_puts(b, a->param->name);
    else sb_printf(b, "p%lld", (long long)a->param->slot);
    return;
  case TG_OP_BUFFER:
    if (a->kind != ARG_PARAM || !a->param) break;
    if (a->param->name[0]) sb_puts(b, a->param->name);
    else sb_printf(b, "b%lld", (long long)a->param->slot);
    return;
  case TG_OP_AFTER:
    if (!s0) break;
    sb_puts(b, s0);
    return;
  case TG_OP_SPECIAL:
    if (a->kind != ARG_STR || !a->str) break;
    sb_puts(b, a->str);
    return;
  case TG_OP_RANGE:
    if (a->kind != ARG_RANGE || !a->range) break;
    if (u->dtype == DT_VOID) sb_printf(b, "loop%lld", (long long)a->range->axis_id);
    else { sb_putc(b, 'r'); put_range_ids(b, a->range); }
    return;
  case TG_OP_CONST:
    if (a->kind != ARG_CONST) break;
    put_const_str(b, a->c, u->dtype);
    return;
  case TG_OP_CAST: {
    if (u->nsrc != 1) break;
    const UOp *c = u->src[0];
    /* the cast states the width, a weak (or bool) constant carries the value */
    if (c->op == TG_OP_CONST && c->arg.kind == ARG_CONST && (dt_is_weak(c->dtype) || c->dtype == DT_BOOL)) {
      put_const_str(b, c->arg.c, c->dtype);
      return;
    }
    sb_printf(b, "(%s)(%s)", u->dtype && u->dtype->name ? u->dtype->name : "?", s0);
    return;
  }
  case TG_OP_NEG: if (!s0) break; sb_printf(b, "(-%s)", s0); return;
  case TG_OP_RECIPROCAL: if (!s0) break; sb_printf(b, "(1/%s)", s0); return;
  case TG_OP_MAX: if (!s1) break; sb_printf(b, "max(%s, %s)", s0, s1); return;
  case TG_OP_MULACC: if (!s2) break; sb_printf(b, "(%s*%s+%s)", s0, s1, s2); return;
  case TG_OP_WHERE: if (!s2) break; sb_printf(b, "(%s if %s else %s)", s1, s0, s2); return;
  case TG_OP_CDIV: if (!s1) break; sb_printf(b, "cdiv(%s, %s)", s0, s1); return;
  case TG_OP_CMOD: if (!s1) break; sb_printf(b, "cmod(%s, %s)", s0, s1); return;
  case TG_OP_INDEX: case TG_OP_STAGE:
    for (uint32_t i = 1; i < u->nsrc; i++) {
      sb_putc(b, '[');
      put_strip_parens(b, rendered(rc, u->src[i]));
      sb_putc(b, ']');
    }
    return;
  case TG_OP_STACK:
    sb_putc(b, '{');
    for (uint32_t i = 0; i < u->nsrc; i++) {
      if (i) sb_putc(b, ',');
      sb_puts(b, rendered(rc, u->src[i]));
    }
    sb_putc(b, '}');
    return;
  default: break;
  }
  if (op_has(op, OPP_MOVEMENT) && s0) {
    render_movement(b, rc, u);
    return;
  }
  const char *sym = infix_symbol(op);
  if (sym && u->nsrc == 2) {
    /* a source that binds at least as tightly (left) or strictly tighter (right) needs no parentheses */
    int prec = render_precedence(op);
    sb_putc(b, '(');
    if (prec != 99 && render_precedence(uop_op(u->src[0])) <= prec) put_strip_parens(b, s0);
    else sb_puts(b, s0);
    sb_puts(b, sym);
    if (prec != 99 && render_precedence(uop_op(u->src[1])) < prec) put_strip_parens(b, s1);
    else sb_puts(b, s1);
    sb_putc(b, ')');
    return;
  }
  pretty_print_into(b, u);
}

char *uop_render(UOp *root) {
  if (!root) return tg_strdup("None");
  UOpVec topo = {0};
  uop_toposort(root, NULL, NULL, &topo);
  RenderCtx rc;
  uopmap_init(&rc.idx);
  rc.text = tg_calloc(topo.len ? topo.len : 1, sizeof(char *));
  for (size_t i = 0; i < topo.len; i++) {
    StrBuf b;
    sb_init(&b);
    render_node(&b, &rc, topo.data[i]);
    rc.text[i] = sb_take(&b);
    uopmap_put(&rc.idx, topo.data[i], (void *)(uintptr_t)i);
  }
  char *out = topo.len ? rc.text[topo.len - 1] : tg_strdup("");
  for (size_t i = 0; i + 1 < topo.len; i++) tg_free(rc.text[i]);
  tg_free(rc.text);
  uopmap_free(&rc.idx);
  tg_vec_free(&topo);
  return out;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* uop_print_list: print_uops                                                                                     */

/* How many leading sources of an op are not ended ranges (tinygrad's range_start); -1 for ops that end nothing. */
static int range_start(TgOp op) {
  switch (op) {
  case TG_OP_STAGE: case TG_OP_REDUCE: case TG_OP_END: case TG_OP_CALL: case TG_OP_FUNCTION: return 1;
  case TG_OP_WMMA: return 3;
  case TG_OP_LINEAR: return 0;
  default: return -1;
  }
}

typedef TG_VEC(UOp *) RangeList;

static void ranges_remove(RangeList *l, const UOp *r) {
  for (size_t i = 0; i < l->len; i++)
    if (l->data[i] == r) {
      memmove(&l->data[i], &l->data[i + 1], (l->len - i - 1) * sizeof(UOp *));
      l->len--;
      return;
    }
}
static void ranges_add(RangeList *l, UOp *r) {
  for (size_t i = 0; i < l->len; i++)
    if (l->data[i] == r) return;
  tg_vec_push(l, r);
}

/* The nodes a node ends: for AFTER, what its later sources end. Collected into `out`. */
static void collect_ended(const UOp *u, UOpVec *out, int depth) {
  int rs = range_start(uop_op(u));
  if (rs >= 0) {
    for (uint32_t i = (uint32_t)rs; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
  } else if (u->op == TG_OP_UNSHARD) {
    for (uint32_t i = 1; i < u->nsrc; i++) tg_vec_push(out, u->src[i]);
  } else if (u->op == TG_OP_AFTER && depth < 64) {
    for (uint32_t i = 1; i < u->nsrc; i++) collect_ended(u->src[i], out, depth + 1);
  }
}

static int cmp_range(const void *pa, const void *pb) {
  const UOp *a = *(UOp *const *)pa, *b = *(UOp *const *)pb;
  const RangeArg *ra = a->arg.kind == ARG_RANGE ? a->arg.range : NULL;
  const RangeArg *rb = b->arg.kind == ARG_RANGE ? b->arg.range : NULL;
  if (!ra || !rb) return (ra != NULL) - (rb != NULL);
  if (ra->axis_id != rb->axis_id) return ra->axis_id < rb->axis_id ? -1 : 1;
  for (int i = 0; i < ra->nsub && i < rb->nsub && i < 4; i++)
    if (ra->sub[i] != rb->sub[i]) return ra->sub[i] < rb->sub[i] ? -1 : 1;
  if (ra->nsub != rb->nsub) return ra->nsub < rb->nsub ? -1 : 1;
  return (ra->axis_type > rb->axis_type) - (ra->axis_type < rb->axis_type);
}

static void pad_to(StrBuf *b, size_t start, size_t width) {
  while (b->len - start < width) sb_putc(b, ' ');
}

char *uop_print_list(UOp *root) {
  StrBuf b;
  sb_init(&b);
  if (!root) return sb_take(&b);
  UOpVec topo = {0};
  uop_toposort(root, NULL, NULL, &topo);
  UOpMap idx;
  uopmap_init(&idx);
  RangeList *ranges = tg_calloc(topo.len ? topo.len : 1, sizeof(RangeList));
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    uopmap_put(&idx, u, (void *)(uintptr_t)i);
    /* the ranges this node is inside: those of its sources, less the ones it ends, plus itself for a RANGE */
    RangeList *mine = &ranges[i];
    for (uint32_t s = 0; s < u->nsrc; s++) {
      void **slot = uopmap_get(&idx, u->src[s]);
      if (!slot) continue;
      RangeList *theirs = &ranges[(size_t)(uintptr_t)*slot];
      for (size_t k = 0; k < theirs->len; k++) ranges_add(mine, theirs->data[k]);
    }
    UOpVec ended = {0};
    collect_ended(u, &ended, 0);
    for (size_t e = 0; e < ended.len; e++) {
      if (ended.data[e]->op == TG_OP_RANGE) {
        ranges_remove(mine, ended.data[e]);
      } else {
        void **slot = uopmap_get(&idx, ended.data[e]);
        if (!slot) continue;
        RangeList *theirs = &ranges[(size_t)(uintptr_t)*slot];
        for (size_t k = 0; k < theirs->len; k++) ranges_remove(mine, theirs->data[k]);
      }
    }
    tg_vec_free(&ended);
    if (u->op == TG_OP_RANGE) ranges_add(mine, u);

    sb_printf(&b, "%4zu ", i);
    size_t col = b.len;
    sb_printf(&b, "Ops.%s", safe_op_name(u->op));
    pad_to(&b, col, 20);
    sb_puts(&b, ": ");
    col = b.len;
    UOp **sorted = tg_malloc((mine->len ? mine->len : 1) * sizeof(UOp *));
    if (mine->len) memcpy(sorted, mine->data, mine->len * sizeof(UOp *));
    if (mine->len) qsort(sorted, mine->len, sizeof(UOp *), cmp_range);
    for (size_t k = 0; k < mine->len; k++) {
      if (k) sb_putc(&b, ',');
      if (sorted[k]->arg.kind == ARG_RANGE && sorted[k]->arg.range) put_range_ids(&b, sorted[k]->arg.range);
    }
    tg_free(sorted);
    pad_to(&b, col, 10);
    sb_putc(&b, ' ');
    col = b.len;
    put_dtype_repr(&b, u->dtype);
    pad_to(&b, col, 40);
    sb_putc(&b, ' ');
    col = b.len;
    sb_putc(&b, '[');
    for (uint32_t s = 0; s < u->nsrc; s++) {
      if (s) sb_puts(&b, ", ");
      UOp *src = u->src[s];
      void **slot = src ? uopmap_get(&idx, src) : NULL;
      if (!slot) sb_puts(&b, "'--'");
      else if (src->op == TG_OP_CONST && src->arg.kind == ARG_CONST) {
        sb_putc(&b, '\'');
        put_const_str(&b, src->arg.c, src->dtype);
        sb_putc(&b, '\'');
      } else sb_printf(&b, "%zu", (size_t)(uintptr_t)*slot);
    }
    sb_putc(&b, ']');
    pad_to(&b, col, 32);
    sb_putc(&b, ' ');
    put_arg(&b, u, true);
    sb_putc(&b, '\n');
  }
  for (size_t i = 0; i < topo.len; i++) tg_vec_free(&ranges[i]);
  tg_free(ranges);
  uopmap_free(&idx);
  tg_vec_free(&topo);
  return sb_take(&b);
}
