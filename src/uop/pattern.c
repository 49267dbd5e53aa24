/* pattern.c — the rule engine (reference section 4): the s-expression pattern language of pattern.h compiled once
 * into arrays of pattern nodes, a backtracking matcher over them, replacement templates, rule sets indexed by op,
 * pm_graph_rewrite with tinygrad's unified_rewrite / walk semantics, substitution, and TRACK_MATCH_STATS.
 *
 * Hot path: pm_graph_rewrite -> rs_apply (per-op rule list, early reject on source ops) -> solve (goal-list
 * backtracking; leaves are checked inline, only alternatives and commutative pairs branch). */
#include "pattern.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PM_MAX_CAPS 32      /* captures per rule */
#define PM_MAX_TMPL_SRC 16  /* sources of one template node */

/* ================================================================================================================
 * Compiled forms
 * ================================================================================================================ */

enum { PK_NODE, PK_ALT };
enum {
  PF_OPS = 1 << 0,    /* op must be in `ops` */
  PF_DTYPE = 1 << 1,  /* dtype must be a scalar in `dtmask` */
  PF_ARG = 1 << 2,    /* arg test */
  PF_LIT = 1 << 3,    /* CONST with a literal value */
  PF_SRC = 1 << 4,    /* sources are matched */
  PF_ANYLEN = 1 << 5, /* "...": more sources may follow */
  PF_EVERY = 1 << 6,  /* "*p": every source matches src[0] */
  PF_COMM = 1 << 7    /* two sources, either order */
};
enum { AT_INT = 1, AT_OP, AT_STR };
enum { LIT_NUM = 1, LIT_NAN, LIT_INVALID };

typedef struct PNode {
  uint8_t kind;       /* PK_NODE, PK_ALT */
  uint8_t arg_test;   /* AT_* */
  uint8_t lit_kind;   /* LIT_* */
  bool lit_integral;  /* the literal is an integer (lit_i valid) */
  uint16_t flags;     /* PF_* */
  int16_t slot;       /* capture slot, -1 for none */
  uint32_t nsrc;      /* source patterns (PK_NODE) or alternatives (PK_ALT) */
  uint32_t src_off;   /* parse time: offset of the children in the kid array */
  uint32_t dtmask;    /* bit per scalar TgDTypeId */
  OpSet ops;
  int64_t arg_i;      /* AT_INT value, AT_OP op */
  const char *arg_s;  /* AT_STR */
  double lit;
  int64_t lit_i;
  struct PNode **src;
} PNode;
_Static_assert(TG_DTYPE_COUNT <= 32, "dtype masks hold 32 scalar dtypes");

enum { TK_CAPTURE, TK_NODE, TK_LIT };
typedef struct TNode {
  uint8_t kind;       /* TK_* */
  bool invalid;       /* TK_LIT: the Invalid constant */
  int16_t slot;       /* TK_CAPTURE */
  uint16_t op;        /* TK_NODE */
  uint32_t nsrc, src_off;
  const DType *dtype; /* TK_NODE: explicit dtype or NULL (derived) */
  Arg arg;            /* TK_NODE */
  Const lit;          /* TK_LIT */
  struct TNode **src;
} TNode;

/* Per-rule match statistics (TRACK_MATCH_STATS). Records outlive their rules so the exit table sees everything. */
typedef struct RuleStats {
  char *name;           /* "callback  pattern" or "pattern -> template" */
  uint64_t matches, attempts, ns_match, ns_total;
} RuleStats;

/* A compiled rule, shared (refcounted) between a set and the concatenations that include it. */
typedef struct CRule {
  uint32_t refs;
  int ncap;
  const Rule *rule;
  char *display;      /* callback name, or "pattern -> template" */
  PNode *pnodes;      /* every pattern node of the rule */
  PNode **pkids;      /* their children, one block */
  const PNode *proot;
  TNode *tnodes;      /* the template's nodes; NULL for callback rules */
  TNode **tkids;
  const TNode *troot;
  char **strs;        /* string args owned by the rule */
  size_t nstrs;
  OpSet root_ops;     /* ops this rule is indexed under */
  OpSet req;          /* early reject: ops that must appear among the direct sources */
  bool has_req;
  RuleStats *stats;
} CRule;

struct RuleSet {
  char *name;
  uint64_t id;        /* never reused: keys the concat memo */
  bool memo_owned;    /* a pm_concat result: lives for the process */
  int max_caps;
  size_t n;
  CRule **rules;      /* insertion order */
  CRule **by_op;      /* per op, rules[off[op] .. off[op+1]) in insertion order */
  uint32_t off[TG_OP_COUNT + 1];
};

/* ================================================================================================================
 * Parser (patterns and templates share the lexer)
 * ================================================================================================================ */

typedef TG_VEC(PNode) PNodeVec;
typedef TG_VEC(TNode) TNodeVec;
typedef TG_VEC(uint32_t) IdxVec;
typedef TG_VEC(char *) StrVec;

typedef struct Parser {
  const char *text;     /* the string being parsed */
  size_t pos;
  const char *set_name;
  const char *rule_name;
  const char *what;     /* "pattern" or "template" */
  PNodeVec pn;
  TNodeVec tn;
  IdxVec kids;
  StrVec strs;
  char *names[PM_MAX_CAPS];
  int nnames;
} Parser;

TG_NORETURN TG_PRINTF(2, 3) static void parse_fail(const Parser *p, const char *fmt, ...) {
  StrBuf b;
  sb_init(&b);
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  TG_PANIC("rule set '%s', rule %s: %s syntax error at position %zu: %s\n  %s\n  %*s^", p->set_name, p->rule_name,
           p->what, p->pos, b.s, p->text, (int)p->pos, "");
}

static void skip_ws(Parser *p) {
  while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n') p->pos++;
}
static char peek(Parser *p) {
  skip_ws(p);
  return p->text[p->pos];
}
static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Reads an identifier at the current position into buf (without consuming when peek_only). Returns its length. */
static size_t read_ident(Parser *p, char *buf, size_t cap, bool peek_only) {
  skip_ws(p);
  size_t s = p->pos, n = 0;
  if (!is_ident_start(p->text[s])) return 0;
  while (is_ident_char(p->text[s + n])) n++;
  if (n >= cap) parse_fail(p, "identifier too long");
  memcpy(buf, p->text + s, n);
  buf[n] = 0;
  if (!peek_only) p->pos += n;
  return n;
}
/* a '.' that starts a dtype list (not "...") */
static bool at_dtypes(Parser *p) { return peek(p) == '.' && strncmp(p->text + p->pos, "...", 3) != 0; }
static void expect(Parser *p, char c) {
  if (peek(p) != c) parse_fail(p, "expected '%c'", c);
  p->pos++;
}

/* an op name or a GroupOp name, added to the OpSet at acc */
static bool lookup_opset(const char *name, void *acc) {
  OpSet *out = acc, g;
  int op = uop_op_by_name(name);
  if (op >= 0) opset_add(out, (TgOp)op);
  else if (uop_opset_by_group(name, &g)) out->w[0] |= g.w[0], out->w[1] |= g.w[1];
  else return false;
  return true;
}

/* a scalar dtype name or a dtype group, added to the mask (one bit per scalar id) at acc */
static bool lookup_dtypes(const char *name, void *acc) {
  static const struct { const char *name; unsigned kinds; } groups[] = {
      {"ints", 1u << DTK_SINT | 1u << DTK_UINT}, {"uints", 1u << DTK_UINT},   {"sints", 1u << DTK_SINT},
      {"floats", 1u << DTK_FLOAT},               {"weaks", 1u << DTK_WEAKINT | 1u << DTK_WEAKFLOAT},
      {"index", 1u << DTK_SINT | 1u << DTK_UINT | 1u << DTK_WEAKINT},
  };
  uint32_t *mask = acc;
  for (size_t g = 0; g < TG_ARRAY_LEN(groups); g++) {
    if (strcmp(name, groups[g].name) != 0) continue;
    for (int i = 0; i < TG_DTYPE_COUNT; i++)
      if (groups[g].kinds >> tg_dtype_table[i].kind & 1) *mask |= 1u << i;
    return true;
  }
  const DType *d = dt_by_name(name);
  if (!d || d->scalar != d) return false;
  *mask |= 1u << d->id;
  return true;
}

/* NAME ('|' NAME)* with `first` already read: every name goes through lookup into acc. A '|' followed by a name
 * that lookup rejects ends the list (it separates alternatives). */
static void parse_name_list(Parser *p, const char *first, bool (*lookup)(const char *, void *), void *acc,
                            const char *what) {
  if (!lookup(first, acc)) parse_fail(p, "unknown %s '%s'", what, first);
  char id[64];
  for (;;) {
    size_t save = p->pos;
    if (peek(p) != '|') break;
    p->pos++;
    if (!read_ident(p, id, sizeof id, false) || !lookup(id, acc)) {
      p->pos = save;
      break;
    }
  }
}

/* '.' DT ('|' DT)* */
static uint32_t parse_dtypes(Parser *p) {
  expect(p, '.');
  char id[64] = "";
  uint32_t mask = 0;
  read_ident(p, id, sizeof id, false);
  parse_name_list(p, id, lookup_dtypes, &mask, "dtype");
  return mask;
}

/* OPNAME ('|' OPNAME)* with the first name already read */
static OpSet parse_opset_rest(Parser *p, const char *first) {
  OpSet s = {{0, 0}};
  parse_name_list(p, first, lookup_opset, &s, "op or group");
  return s;
}

typedef struct Literal {
  uint8_t kind;      /* LIT_* */
  bool integral;     /* the value is a whole number (i valid) */
  bool is_bool;      /* true / false */
  bool is_float;     /* written as a float: 2.5, 1e3, inf, nan */
  int64_t i;
  double f;
} Literal;

static bool is_literal_word(const char *w) {
  return !strcmp(w, "true") || !strcmp(w, "false") || !strcmp(w, "inf") || !strcmp(w, "nan") || !strcmp(w, "invalid");
}

/* number | true | false | inf | -inf | nan | invalid */
static Literal parse_literal(Parser *p) {
  Literal l = {LIT_NUM, false, false, false, 0, 0.0};
  skip_ws(p);
  bool neg = p->text[p->pos] == '-';
  if (neg) p->pos++;
  char id[16];
  if (is_ident_start(p->text[p->pos])) {
    read_ident(p, id, sizeof id, false);
    l.is_float = true;
    if (!strcmp(id, "inf")) l.f = neg ? -INFINITY : INFINITY;
    else if (neg) parse_fail(p, "'-' must precede a number or inf");
    else if (!strcmp(id, "nan")) l.kind = LIT_NAN, l.f = NAN;
    else if (!strcmp(id, "invalid")) l.kind = LIT_INVALID;
    else if (!strcmp(id, "true") || !strcmp(id, "false")) {
      l.is_float = false;
      l.is_bool = l.integral = true;
      l.i = id[0] == 't';
      l.f = (double)l.i;
    } else parse_fail(p, "unknown literal '%s'", id);
    return l;
  }
  size_t start = p->pos - neg, n = 0;
  const char *s = p->text + p->pos;
  if (!is_digit(s[0])) parse_fail(p, "expected a number");
  while (is_digit(s[n])) n++;
  bool frac = s[n] == '.' && is_digit(s[n + 1]);
  if (frac)
    for (n++; is_digit(s[n]); n++) {}
  if (s[n] == 'e' || s[n] == 'E') {
    size_t e = n + 1 + (s[n + 1] == '-' || s[n + 1] == '+');
    if (!is_digit(s[e])) parse_fail(p, "bad exponent");
    for (n = e; is_digit(s[n]); n++) {}
    frac = true;
  }
  char buf[64];
  size_t len = p->pos + n - start;
  if (len >= sizeof buf) parse_fail(p, "number too long");
  memcpy(buf, p->text + start, len);
  buf[len] = 0;
  p->pos += n;
  errno = 0;
  if (!frac) {
    l.i = strtoll(buf, NULL, 10);
    if (errno) parse_fail(p, "integer out of range");
    l.integral = true;
    l.f = (double)l.i;
  } else {
    l.is_float = true;
    l.f = strtod(buf, NULL);
    if (l.f == floor(l.f) && fabs(l.f) < 9.2e18) l.integral = true, l.i = (int64_t)l.f;
  }
  return l;
}

static bool at_literal(Parser *p) {
  char c = peek(p), id[16];
  if (is_digit(c) || c == '-') return true;
  return read_ident(p, id, sizeof id, true) && is_literal_word(id);
}

/* '=' arg: integer | OPNAME | "string"; fills kind/int/str */
static void parse_arg(Parser *p, uint8_t *kind, int64_t *iv, const char **sv) {
  expect(p, '=');
  char c = peek(p);
  if (c == '"') {
    size_t s = ++p->pos;
    while (p->text[p->pos] && p->text[p->pos] != '"') p->pos++;
    if (!p->text[p->pos]) parse_fail(p, "unterminated string");
    char *str = tg_malloc(p->pos - s + 1);
    memcpy(str, p->text + s, p->pos - s);
    str[p->pos - s] = 0;
    p->pos++;
    tg_vec_push(&p->strs, str);
    *kind = AT_STR;
    *sv = str;
  } else if (is_digit(c) || c == '-') {
    Literal l = parse_literal(p);
    if (!l.integral || l.is_bool) parse_fail(p, "arg must be an integer, an op name or a string");
    *kind = AT_INT;
    *iv = l.i;
  } else {
    char id[64];
    int op;
    if (!read_ident(p, id, sizeof id, false) || (op = uop_op_by_name(id)) < 0) parse_fail(p, "arg: unknown op '%s'", id);
    *kind = AT_OP;
    *iv = op;
  }
}

static int capture_slot(Parser *p, const char *name, bool create) {
  for (int i = 0; i < p->nnames; i++)
    if (!strcmp(p->names[i], name)) return i;
  if (!create) parse_fail(p, "'%s' is not a capture of the pattern", name);
  if (p->nnames == PM_MAX_CAPS) parse_fail(p, "more than %d captures", PM_MAX_CAPS);
  p->names[p->nnames] = tg_strdup(name);
  return p->nnames++;
}

/* ---- patterns ---- */

static uint32_t new_pnode(Parser *p) {
  PNode z;
  memset(&z, 0, sizeof z);
  z.slot = -1;
  tg_vec_push(&p->pn, z);
  return (uint32_t)p->pn.len - 1;
}
static void set_kids(Parser *p, uint32_t node, const IdxVec *kids) {
  p->pn.data[node].src_off = (uint32_t)p->kids.len;
  p->pn.data[node].nsrc = (uint32_t)kids->len;
  for (size_t i = 0; i < kids->len; i++) tg_vec_push(&p->kids, kids->data[i]);
}

/* structural equality of two parsed patterns (commutative pairs of identical patterns need no second order) */
static bool pnode_same(const Parser *p, uint32_t a, uint32_t b) {
  const PNode *x = &p->pn.data[a], *y = &p->pn.data[b];
  if (x->kind != y->kind || x->flags != y->flags || x->slot != y->slot || x->nsrc != y->nsrc ||
      x->dtmask != y->dtmask || x->arg_test != y->arg_test || x->lit_kind != y->lit_kind)
    return false;
  if ((x->flags & PF_OPS) && memcmp(&x->ops, &y->ops, sizeof x->ops) != 0) return false;
  if (x->arg_test && (x->arg_i != y->arg_i || (x->arg_test == AT_STR && strcmp(x->arg_s, y->arg_s) != 0))) return false;
  if (x->lit_kind == LIT_NUM && x->lit != y->lit) return false;
  for (uint32_t i = 0; i < x->nsrc; i++)
    if (!pnode_same(p, p->kids.data[x->src_off + i], p->kids.data[y->src_off + i])) return false;
  return true;
}

static uint32_t parse_pat(Parser *p);

/* '(' ['='] OPSET ['.' dtypes] ['=' arg] (pat | '*' pat | '...')* ')' */
static uint32_t parse_paren(Parser *p) {
  expect(p, '(');
  bool strict = peek(p) == '=';
  if (strict) p->pos++;
  char id[64];
  if (!read_ident(p, id, sizeof id, false)) parse_fail(p, "expected an op name after '('");
  OpSet ops = parse_opset_rest(p, id);
  uint32_t node = new_pnode(p);
  p->pn.data[node].ops = ops;
  p->pn.data[node].flags = PF_OPS | PF_SRC;
  if (at_dtypes(p)) {
    uint32_t m = parse_dtypes(p);
    p->pn.data[node].dtmask = m;
    p->pn.data[node].flags |= PF_DTYPE;
  }
  if (peek(p) == '=') {
    uint8_t k;
    int64_t iv = 0;
    const char *sv = NULL;
    parse_arg(p, &k, &iv, &sv);
    p->pn.data[node].arg_test = k;
    p->pn.data[node].arg_i = iv;
    p->pn.data[node].arg_s = sv;
    p->pn.data[node].flags |= PF_ARG;
  }
  IdxVec kids = {0};
  uint16_t extra = 0;
  for (;;) {
    char c = peek(p);
    if (c == ')') break;
    if (!c) parse_fail(p, "missing ')'");
    if (extra & PF_ANYLEN) parse_fail(p, "'...' must be the last source");
    if (c == '.' && !strncmp(p->text + p->pos, "...", 3)) {
      p->pos += 3;
      extra |= PF_ANYLEN;
    } else if (c == '*') {
      if (kids.len) parse_fail(p, "'*p' must be the only source pattern");
      p->pos++;
      uint32_t k = parse_pat(p);
      tg_vec_push(&kids, k);
      extra |= PF_EVERY;
      if (peek(p) != ')') parse_fail(p, "'*p' must be the only source pattern");
    } else {
      uint32_t k = parse_pat(p);
      tg_vec_push(&kids, k);
    }
  }
  p->pos++;
  set_kids(p, node, &kids);
  tg_vec_free(&kids);
  PNode *n = &p->pn.data[node];
  n->flags |= extra;
  if ((n->flags & PF_ANYLEN) && n->nsrc == 0) n->flags &= (uint16_t)~(PF_SRC | PF_ANYLEN); /* (OP ...) */
  if (!strict && n->nsrc == 2 && !(n->flags & (PF_ANYLEN | PF_EVERY))) {
    bool all_comm = true;
    for (int op = 0; op < TG_OP_COUNT; op++)
      if (opset_has(&n->ops, (TgOp)op) && !op_has((TgOp)op, OPP_COMMUTATIVE)) all_comm = false;
    if (all_comm && !pnode_same(p, p->kids.data[n->src_off], p->kids.data[n->src_off + 1])) n->flags |= PF_COMM;
  }
  return node;
}

/* '{' pat ('|' pat)* '}' */
static uint32_t parse_alts(Parser *p) {
  expect(p, '{');
  IdxVec kids = {0};
  for (;;) {
    uint32_t k = parse_pat(p);
    tg_vec_push(&kids, k);
    char c = peek(p);
    if (c == '}') break;
    if (c != '|') parse_fail(p, "expected '|' or '}'");
    p->pos++;
  }
  p->pos++;
  uint32_t node = new_pnode(p);
  p->pn.data[node].kind = PK_ALT;
  set_kids(p, node, &kids);
  tg_vec_free(&kids);
  return node;
}

static uint32_t parse_atom(Parser *p) {
  char c = peek(p);
  if (c == '(') return parse_paren(p);
  if (c == '{') return parse_alts(p);
  if (at_literal(p)) {
    Literal l = parse_literal(p);
    uint32_t node = new_pnode(p);
    PNode *n = &p->pn.data[node];
    n->flags = PF_OPS | PF_LIT;
    opset_add(&n->ops, TG_OP_CONST);
    n->lit_kind = l.kind;
    n->lit_integral = l.integral;
    n->lit_i = l.i;
    n->lit = l.f;
    return node;
  }
  char id[64];
  if (!read_ident(p, id, sizeof id, false)) parse_fail(p, "expected a pattern");
  uint32_t node = new_pnode(p);
  OpSet ops = {{0, 0}};
  if (strcmp(id, "_") == 0) return node;
  if (lookup_opset(id, &ops)) {
    p->pn.data[node].ops = parse_opset_rest(p, id);
    p->pn.data[node].flags = PF_OPS;
    return node;
  }
  p->pn.data[node].slot = (int16_t)capture_slot(p, id, true);
  return node;
}

/* [name ':'] atom [dtypes] */
static uint32_t parse_pat(Parser *p) {
  char id[64];
  int slot = -1;
  size_t save = p->pos;
  OpSet dummy = {{0, 0}};
  if (read_ident(p, id, sizeof id, false) && peek(p) == ':') {
    if (!strcmp(id, "_") || is_literal_word(id) || lookup_opset(id, &dummy)) parse_fail(p, "bad capture name '%s'", id);
    p->pos++;
    slot = capture_slot(p, id, true);
  } else {
    p->pos = save;
  }
  uint32_t node = parse_atom(p);
  if (slot >= 0) {
    if (p->pn.data[node].slot >= 0) parse_fail(p, "a capture cannot be named twice");
    p->pn.data[node].slot = (int16_t)slot;
  }
  if (at_dtypes(p)) {
    uint32_t m = parse_dtypes(p);
    PNode *n = &p->pn.data[node];
    n->dtmask = (n->flags & PF_DTYPE) ? (n->dtmask & m) : m;
    n->flags |= PF_DTYPE;
  }
  return node;
}

/* ---- templates ---- */

static uint32_t new_tnode(Parser *p, uint8_t kind) {
  TNode z;
  memset(&z, 0, sizeof z);
  z.kind = kind;
  z.slot = -1;
  tg_vec_push(&p->tn, z);
  return (uint32_t)p->tn.len - 1;
}

/* name | literal | '(' OP ['.' dtype] ['=' arg] tmpl* ')' */
static uint32_t parse_tmpl(Parser *p) {
  char c = peek(p), id[64];
  if (c == '(') {
    p->pos++;
    if (!read_ident(p, id, sizeof id, false)) parse_fail(p, "expected an op name after '('");
    int op = uop_op_by_name(id);
    if (op < 0) parse_fail(p, "unknown op '%s' (templates build one op)", id);
    uint32_t node = new_tnode(p, TK_NODE);
    p->tn.data[node].op = (uint16_t)op;
    if (peek(p) == '.') {
      uint32_t m = parse_dtypes(p);
      if (__builtin_popcount(m) != 1) parse_fail(p, "a template dtype must be a single dtype");
      p->tn.data[node].dtype = &tg_dtype_table[__builtin_ctz(m)];
    }
    if (peek(p) == '=') {
      uint8_t k;
      int64_t iv = 0;
      const char *sv = NULL;
      parse_arg(p, &k, &iv, &sv);
      p->tn.data[node].arg = k == AT_INT ? arg_int(iv) : k == AT_OP ? arg_op((TgOp)iv) : arg_str(sv);
    }
    IdxVec kids = {0};
    while (peek(p) != ')') {
      if (!peek(p)) parse_fail(p, "missing ')'");
      uint32_t k = parse_tmpl(p);
      tg_vec_push(&kids, k);
    }
    p->pos++;
    if (kids.len > PM_MAX_TMPL_SRC) parse_fail(p, "more than %d sources", PM_MAX_TMPL_SRC);
    p->tn.data[node].src_off = (uint32_t)p->kids.len;
    p->tn.data[node].nsrc = (uint32_t)kids.len;
    for (size_t i = 0; i < kids.len; i++) tg_vec_push(&p->kids, kids.data[i]);
    tg_vec_free(&kids);
    return node;
  }
  if (at_literal(p)) {
    Literal l = parse_literal(p);
    uint32_t node = new_tnode(p, TK_LIT);
    TNode *t = &p->tn.data[node];
    if (l.kind == LIT_INVALID) t->invalid = true;
    else if (l.is_bool) t->lit = const_bool(l.i != 0);
    else if (l.is_float) t->lit = const_float(l.f);
    else t->lit = const_int(l.i);
    return node;
  }
  if (!read_ident(p, id, sizeof id, false)) parse_fail(p, "expected a template");
  if (!strcmp(id, "_")) parse_fail(p, "'_' cannot be built");
  uint32_t node = new_tnode(p, TK_CAPTURE);
  p->tn.data[node].slot = (int16_t)capture_slot(p, id, false);
  if (peek(p) == '.') parse_fail(p, "a capture in a template takes no dtype (use (CAST.dt x))");
  return node;
}

/* ================================================================================================================
 * Rule compilation
 * ================================================================================================================ */

static TG_VEC(RuleStats *) g_stats;
static int g_track = -1;
static bool g_atexit_done;

static void finish_parse(Parser *p, const char *what) {
  skip_ws(p);
  if (p->text[p->pos]) parse_fail(p, "unexpected '%c' after the %s", p->text[p->pos], what);
}

/* Turns the parser's index links into pointers: the node vector's storage becomes the rule's block. */
static PNode *freeze_pattern(Parser *p, PNode ***kids_out) {
  PNode **kids = tg_malloc((p->kids.len ? p->kids.len : 1) * sizeof(PNode *));
  for (size_t i = 0; i < p->kids.len; i++) kids[i] = &p->pn.data[p->kids.data[i]];
  for (size_t i = 0; i < p->pn.len; i++) p->pn.data[i].src = kids + p->pn.data[i].src_off;
  *kids_out = kids;
  return p->pn.data;
}
static TNode *freeze_template(Parser *p, TNode ***kids_out) {
  TNode **kids = tg_malloc((p->kids.len ? p->kids.len : 1) * sizeof(TNode *));
  for (size_t i = 0; i < p->kids.len; i++) kids[i] = &p->tn.data[p->kids.data[i]];
  for (size_t i = 0; i < p->tn.len; i++) p->tn.data[i].src = kids + p->tn.data[i].src_off;
  *kids_out = kids;
  return p->tn.data;
}

static CRule *compile_rule(const char *set_name, const Rule *rule) {
  Parser p;
  memset(&p, 0, sizeof p);
  p.set_name = set_name;
  p.rule_name = rule->pattern ? rule->pattern : "?";
  if (!rule->pattern) TG_PANIC("rule set '%s': rule without a pattern", set_name);
  if (!rule->fn == !rule->tmpl) TG_PANIC("rule set '%s', rule %s: give a callback or a template", set_name, p.rule_name);
  p.what = "pattern";
  p.text = rule->pattern;
  uint32_t proot = parse_pat(&p);
  finish_parse(&p, "pattern");
  CRule *r = tg_calloc(1, sizeof *r);
  r->refs = 1;
  r->rule = rule;
  r->ncap = p.nnames;
  r->pnodes = freeze_pattern(&p, &r->pkids);
  r->proot = &r->pnodes[proot];

  /* the ops the rule is indexed under: the root's op set (alternatives: the union of theirs; no op test: all) */
  const PNode *root = r->proot;
  const PNode *const *alts = root->kind == PK_ALT ? (const PNode *const *)root->src : &r->proot;
  uint32_t nalts = root->kind == PK_ALT ? root->nsrc : 1;
  for (uint32_t i = 0; i < nalts; i++) {
    OpSet o;
    if (alts[i]->kind == PK_NODE && (alts[i]->flags & PF_OPS)) o = alts[i]->ops;
    else uop_opset_by_group("All", &o);
    r->root_ops.w[0] |= o.w[0];
    r->root_ops.w[1] |= o.w[1];
  }
  /* early reject: every direct source pattern with a single-op set names an op the node's sources must contain */
  if (root->kind == PK_NODE && (root->flags & PF_SRC)) {
    for (uint32_t i = 0; i < root->nsrc; i++) {
      const PNode *s = root->src[i];
      if (s->kind != PK_NODE || !(s->flags & PF_OPS)) continue;
      if (__builtin_popcountll(s->ops.w[0]) + __builtin_popcountll(s->ops.w[1]) != 1) continue;
      r->req.w[0] |= s->ops.w[0];
      r->req.w[1] |= s->ops.w[1];
      r->has_req = true;
    }
  }

  if (rule->tmpl) {
    p.text = rule->tmpl;
    p.pos = 0;
    p.what = "template";
    p.kids.len = 0;
    uint32_t troot = parse_tmpl(&p);
    finish_parse(&p, "template");
    r->tnodes = freeze_template(&p, &r->tkids);
    r->troot = &r->tnodes[troot];
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%s -> %s", rule->pattern, rule->tmpl);
    r->display = sb_take(&b);
  } else {
    r->display = tg_strdup(rule->name && strcmp(rule->name, "NULL") != 0 ? rule->name : rule->pattern);
  }
  for (int i = 0; i < p.nnames; i++) tg_free(p.names[i]);
  tg_free(p.kids.data);
  r->strs = p.strs.data;
  r->nstrs = p.strs.len;
  return r;
}

static void crule_release(CRule *r) {
  if (--r->refs) return;
  tg_free(r->pnodes);
  tg_free(r->pkids);
  tg_free(r->tnodes);
  tg_free(r->tkids);
  for (size_t i = 0; i < r->nstrs; i++) tg_free(r->strs[i]);
  tg_free(r->strs);
  tg_free(r->display);
  tg_free(r);
}

/* ================================================================================================================
 * Rule sets
 * ================================================================================================================ */

static uint64_t g_next_set_id = 1;

static RuleSet *set_from_rules(const char *name, CRule **rules, size_t n) {
  RuleSet *rs = tg_calloc(1, sizeof *rs);
  rs->name = tg_strdup(name ? name : "");
  rs->id = g_next_set_id++;
  rs->n = n;
  rs->rules = rules;
  size_t total = 0;
  uint32_t count[TG_OP_COUNT] = {0};
  for (size_t i = 0; i < n; i++) {
    if (rules[i]->ncap > rs->max_caps) rs->max_caps = rules[i]->ncap;
    for (int op = 0; op < TG_OP_COUNT; op++)
      if (opset_has(&rules[i]->root_ops, (TgOp)op)) count[op]++, total++;
  }
  rs->by_op = tg_malloc((total ? total : 1) * sizeof(CRule *));
  rs->off[0] = 0;
  for (int op = 0; op < TG_OP_COUNT; op++) rs->off[op + 1] = rs->off[op] + count[op];
  uint32_t fill[TG_OP_COUNT];
  memcpy(fill, rs->off, sizeof fill);
  for (size_t i = 0; i < n; i++)
    for (int op = 0; op < TG_OP_COUNT; op++)
      if (opset_has(&rules[i]->root_ops, (TgOp)op)) rs->by_op[fill[op]++] = rules[i];
  return rs;
}

RuleSet *pm_new(const char *name, const Rule *rules, size_t n) {
  CRule **cr = tg_malloc((n ? n : 1) * sizeof(CRule *));
  for (size_t i = 0; i < n; i++) cr[i] = compile_rule(name ? name : "", &rules[i]);
  return set_from_rules(name, cr, n);
}

typedef struct ConcatMemo { uint64_t a, b; RuleSet *res; } ConcatMemo;
static TG_VEC(ConcatMemo) g_concat;

RuleSet *pm_concat(const RuleSet *a, const RuleSet *b) {
  for (size_t i = 0; i < g_concat.len; i++)
    if (g_concat.data[i].a == a->id && g_concat.data[i].b == b->id) return g_concat.data[i].res;
  size_t n = a->n + b->n;
  CRule **cr = tg_malloc((n ? n : 1) * sizeof(CRule *));
  for (size_t i = 0; i < a->n; i++) (cr[i] = a->rules[i])->refs++;
  for (size_t i = 0; i < b->n; i++) (cr[a->n + i] = b->rules[i])->refs++;
  StrBuf nm;
  sb_init(&nm);
  sb_printf(&nm, "%s+%s", a->name, b->name);
  RuleSet *rs = set_from_rules(nm.s, cr, n);
  sb_free(&nm);
  rs->memo_owned = true;
  ConcatMemo m = {a->id, b->id, rs};
  tg_vec_push(&g_concat, m);
  return rs;
}

void pm_free(RuleSet *pm) {
  if (!pm || pm->memo_owned) return;
  for (size_t i = 0; i < pm->n; i++) crule_release(pm->rules[i]);
  tg_free(pm->rules);
  tg_free(pm->by_op);
  tg_free(pm->name);
  tg_free(pm);
}

const char *pm_name(const RuleSet *pm) { return pm->name; }
size_t pm_rule_count(const RuleSet *pm) { return pm->n; }

/* ================================================================================================================
 * Matching
 * ================================================================================================================ */

typedef struct Goal { const PNode *p; UOp *u; int32_t next; } Goal;

typedef struct Matcher {
  Goal *g;
  uint32_t len, cap;
  uint32_t ntrail;
  int8_t trail[PM_MAX_CAPS];   /* slots bound, in binding order, for undo on backtrack */
  UOp *caps[PM_MAX_CAPS];
  const CRule *rule;
  RwCtx *rw;
  UOp *root;
  UOp *result;
  Goal local[32];
} Matcher;

static int32_t push_goal(Matcher *m, const PNode *p, UOp *u, int32_t next) {
  if (m->len == m->cap) {
    uint32_t nc = m->cap * 2;
    Goal *ng = tg_malloc(nc * sizeof(Goal));
    memcpy(ng, m->g, m->len * sizeof(Goal));
    if (m->g != m->local) tg_free(m->g);
    m->g = ng;
    m->cap = nc;
  }
  m->g[m->len].p = p;
  m->g[m->len].u = u;
  m->g[m->len].next = next;
  return (int32_t)m->len++;
}

static bool literal_matches(const PNode *p, const UOp *u) {
  Const c = u->arg.c;
  switch (p->lit_kind) {
  case LIT_INVALID: return c.kind == CK_INVALID;
  case LIT_NAN: return c.kind == CK_FLOAT && isnan(c.f);
  default: break;
  }
  switch (c.kind) {
  case CK_INT: return p->lit_integral && c.i == p->lit_i && !(c.i < 0 && dt_is_unsigned(u->dtype));
  case CK_FLOAT: return c.f == p->lit;
  case CK_BOOL: return (c.b ? 1.0 : 0.0) == p->lit;
  case CK_NONE: case CK_INVALID: return false;
  }
  return false;
}

static bool arg_matches(const PNode *p, const UOp *u) {
  const Arg *a = &u->arg;
  switch (p->arg_test) {
  case AT_INT:
    if (a->kind == ARG_INT) return a->i == p->arg_i;
    if (a->kind != ARG_CONST) return false;
    switch (a->c.kind) {
    case CK_INT: return a->c.i == p->arg_i && !(a->c.i < 0 && dt_is_unsigned(u->dtype));
    case CK_FLOAT: return a->c.f == (double)p->arg_i;
    case CK_BOOL: return (int64_t)a->c.b == p->arg_i;
    case CK_NONE: case CK_INVALID: return false;
    }
    return false;
  case AT_OP: return (a->kind == ARG_OP && a->op == p->arg_i) || (a->kind == ARG_REDUCE && a->red.op == p->arg_i);
  case AT_STR: return a->kind == ARG_STR && strcmp(a->str, p->arg_s) == 0;
  default: return false;
  }
}

/* The tests of one pattern node that need no sources; binds its capture (recorded on the trail). */
static inline bool check_node(Matcher *m, const PNode *p, UOp *u) {
  uint16_t f = p->flags;
  if ((f & PF_OPS) && !opset_has(&p->ops, uop_op(u))) return false;
  if ((f & PF_DTYPE) && !(u->dtype->scalar == u->dtype && (p->dtmask >> u->dtype->id & 1))) return false;
  if ((f & PF_ARG) && !arg_matches(p, u)) return false;
  if ((f & PF_LIT) && !literal_matches(p, u)) return false;
  if (p->slot >= 0) {
    UOp *b = m->caps[p->slot];
    if (!b) {
      m->caps[p->slot] = u;
      m->trail[m->ntrail++] = (int8_t)p->slot;
    } else if (b != u) {
      return false;
    }
  }
  return true;
}

/* Adds goal (p, u) in front of *goals; leaves (no sources, no alternatives) are checked at once. */
static inline bool add_goal(Matcher *m, const PNode *p, UOp *u, int32_t *goals) {
  if (p->kind == PK_NODE && !(p->flags & PF_SRC)) return check_node(m, p, u);
  *goals = push_goal(m, p, u, *goals);
  return true;
}

static UOp *tmpl_build(const CRule *r, const TNode *t, UOp **caps, const UOp *like);

/* A complete match: run the callback / build the template. True stops the search (tinygrad: the first non-None
 * callback result ends this rule, even when it is the matched node itself). */
static bool match_complete(Matcher *m) {
  const CRule *r = m->rule;
  UOp *res = r->rule->fn ? r->rule->fn(m->rw, m->root, m->caps) : tmpl_build(r, r->troot, m->caps, m->root);
  if (!res) return false;
  /* A template that answers with a weak constant capture ((ADD x 0) -> x, x the weak -1) states the value of a node
   * of strong dtype: the constant takes the node's dtype, so a rewrite never turns an int32 into a weakint. */
  if (!r->rule->fn && res->op == TG_OP_CONST && res->dtype != m->root->dtype && dt_is_weak(res->dtype) &&
      !uop_is_invalid(res) && (dt_is_int(m->root->dtype) || dt_is_float(m->root->dtype)) &&
      !dt_is_weak(m->root->dtype))
    res = uop_const_like(m->root, res->arg.c);
  m->result = res;
  return true;
}

static bool solve(Matcher *m, int32_t goals);

/* Try one branch; on failure undo its bindings and goals. */
static bool solve_branch(Matcher *m, int32_t goals) {
  uint32_t gmark = m->len, tmark = m->ntrail;
  if (solve(m, goals)) return true;
  while (m->ntrail > tmark) m->caps[m->trail[--m->ntrail]] = NULL;
  m->len = gmark;
  return false;
}

/* Depth-first over the goal list; branches (alternatives, both orders of a commutative pair) recurse. */
static bool solve(Matcher *m, int32_t goals) {
  while (goals >= 0) {
    const PNode *p = m->g[goals].p;
    UOp *u = m->g[goals].u;
    goals = m->g[goals].next;
    if (p->kind == PK_ALT) {
      for (uint32_t i = 0; i < p->nsrc; i++) {
        uint32_t gmark = m->len, tmark = m->ntrail;
        int32_t g = goals;
        if (add_goal(m, p->src[i], u, &g) && solve_branch(m, g)) return true;
        while (m->ntrail > tmark) m->caps[m->trail[--m->ntrail]] = NULL;
        m->len = gmark;
      }
      return false;
    }
    if (!check_node(m, p, u)) return false;
    if (!(p->flags & PF_SRC)) continue;
    uint32_t n = u->nsrc;
    if (p->flags & PF_EVERY) {
      for (uint32_t i = n; i-- > 0;)
        if (!add_goal(m, p->src[0], u->src[i], &goals)) return false;
      continue;
    }
    if (n < p->nsrc || (n != p->nsrc && !(p->flags & PF_ANYLEN))) return false;
    if (p->flags & PF_COMM) {
      uint32_t gmark = m->len, tmark = m->ntrail;
      int32_t g = goals;
      if (add_goal(m, p->src[1], u->src[1], &g) && add_goal(m, p->src[0], u->src[0], &g) && solve_branch(m, g))
        return true;
      while (m->ntrail > tmark) m->caps[m->trail[--m->ntrail]] = NULL;
      m->len = gmark;
      g = goals;
      return add_goal(m, p->src[1], u->src[0], &g) && add_goal(m, p->src[0], u->src[1], &g) && solve_branch(m, g);
    }
    for (uint32_t i = p->nsrc; i-- > 0;)
      if (!add_goal(m, p->src[i], u->src[i], &goals)) return false;
  }
  return match_complete(m);
}

/* ================================================================================================================
 * Templates
 * ================================================================================================================ */

static UOp *tmpl_build(const CRule *r, const TNode *t, UOp **caps, const UOp *like) {
  switch (t->kind) {
  case TK_CAPTURE:
    if (!caps[t->slot]) TG_PANIC("rule %s: template uses a capture that this match did not bind", r->display);
    return caps[t->slot];
  case TK_LIT: return t->invalid ? uop_invalid() : uop_const_like(like, t->lit);
  default: break;
  }
  UOp *src[PM_MAX_TMPL_SRC];
  const UOp *sibling = NULL;
  uint32_t first_value = t->op == TG_OP_WHERE ? 1 : 0; /* a WHERE's literals take the dtype of its values */
  for (uint32_t i = 0; i < t->nsrc; i++) {
    if (t->src[i]->kind == TK_LIT) continue;
    src[i] = tmpl_build(r, t->src[i], caps, like);
    if (!sibling && i >= first_value) sibling = src[i];
  }
  for (uint32_t i = 0; i < t->nsrc; i++)
    if (t->src[i]->kind == TK_LIT) src[i] = tmpl_build(r, t->src[i], caps, sibling ? sibling : like);
  TgOp op = (TgOp)t->op;
  if (t->dtype) return op == TG_OP_CAST && t->nsrc == 1 ? uop_cast(src[0], t->dtype) : uop_new(op, t->dtype, src, t->nsrc, t->arg);
  if (!uop_derive_dtype(op, src, t->nsrc, &t->arg))
    TG_PANIC("rule %s: template %s needs an explicit dtype (%s.dt)", r->display, uop_op_name(op), uop_op_name(op));
  return uop_new(op, NULL, src, t->nsrc, t->arg);
}

/* ================================================================================================================
 * Applying a rule set to one node, with optional stats
 * ================================================================================================================ */

static void print_stats_at_exit(void);

static int track_level(void) {
  if (g_track < 0) {
    g_track = (int)tg_getenv_int("TRACK_MATCH_STATS", 0);
    if (g_track > 0 && !g_atexit_done) {
      g_atexit_done = true;
      atexit(print_stats_at_exit);
    }
  }
  return g_track;
}

int pm_track_stats(int level) {
  int prev = track_level();
  g_track = level;
  return prev;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static RuleStats *rule_stats(CRule *r) {
  if (!r->stats) {
    RuleStats *s = tg_calloc(1, sizeof *s);
    StrBuf b;
    sb_init(&b);
    if (r->rule->fn) sb_printf(&b, "%-24s %s", r->display, r->rule->pattern);
    else sb_puts(&b, r->display);
    s->name = sb_take(&b);
    tg_vec_push(&g_stats, s);
    r->stats = s;
  }
  return r->stats;
}

/* Try the rules for u's op in order; the first that produces a node other than u wins. */
static UOp *rs_apply(const RuleSet *rs, UOp *u, RwCtx *rw, bool track, const CRule **fired) {
  uint32_t b = rs->off[u->op], e = rs->off[u->op + 1];
  if (b == e) return NULL;
  OpSet have = {{0, 0}};
  bool have_ok = false;
  Matcher m;
  m.g = m.local;
  m.cap = TG_ARRAY_LEN(m.local);
  m.rw = rw;
  m.root = u;
  memset(m.caps, 0, (size_t)rs->max_caps * sizeof(UOp *));
  UOp *res = NULL;
  for (uint32_t i = b; i < e; i++) {
    CRule *r = rs->by_op[i];
    if (r->has_req) {
      if (!have_ok) {
        for (uint32_t k = 0; k < u->nsrc; k++) opset_add(&have, uop_op(u->src[k]));
        have_ok = true;
      }
      if ((r->req.w[0] & ~have.w[0]) | (r->req.w[1] & ~have.w[1])) continue;
    }
    uint64_t t0 = track ? now_ns() : 0;
    m.rule = r;
    m.result = NULL;
    m.len = 0;
    m.ntrail = 0;
    int32_t g = push_goal(&m, r->proot, u, -1);
    bool done = solve_branch(&m, g);
    if (done) /* a callback answered: clear the bindings for the next rule */
      while (m.ntrail) m.caps[m.trail[--m.ntrail]] = NULL;
    bool ok = done && m.result != u;
    if (track) {
      RuleStats *s = rule_stats(r);
      uint64_t dt = now_ns() - t0;
      s->attempts++;
      s->ns_total += dt;
      if (ok) s->matches++, s->ns_match += dt;
    }
    if (ok) {
      res = m.result;
      if (fired) *fired = r;
      break;
    }
  }
  if (m.g != m.local) tg_free(m.g);
  return res;
}

UOp *pm_rewrite(const RuleSet *pm, UOp *u, void *ctx) {
  RwCtx rw = {ctx, pm};
  return rs_apply(pm, u, &rw, track_level() > 0, NULL);
}

bool pm_rule_stats(const RuleSet *pm, size_t i, uint64_t *matches, uint64_t *attempts) {
  if (i >= pm->n) return false;
  const RuleStats *s = pm->rules[i]->stats;
  *matches = s ? s->matches : 0;
  *attempts = s ? s->attempts : 0;
  return true;
}

static int cmp_stats_time(const void *a, const void *b) {
  const RuleStats *x = *(RuleStats *const *)a, *y = *(RuleStats *const *)b;
  return x->ns_total < y->ns_total ? -1 : x->ns_total > y->ns_total;
}

void pm_print_stats(void) {
  size_t n = g_stats.len;
  RuleStats **sorted = tg_malloc((n ? n : 1) * sizeof(RuleStats *));
  memcpy(sorted, g_stats.data, n * sizeof(RuleStats *));
  qsort(sorted, n, sizeof(RuleStats *), cmp_stats_time);
  uint64_t tm = 0, ta = 0, tnm = 0, tnt = 0;
  size_t matched = 0;
  for (size_t i = 0; i < n; i++) {
    const RuleStats *s = sorted[i];
    if (s->attempts)
      printf("%6llu / %7llu -- %9.2f / %9.2f ms -- %s\n", (unsigned long long)s->matches,
             (unsigned long long)s->attempts, (double)s->ns_match * 1e-6, (double)s->ns_total * 1e-6, s->name);
    tm += s->matches, ta += s->attempts, tnm += s->ns_match, tnt += s->ns_total;
    matched += s->matches > 0;
  }
  printf("%6llu / %7llu -- %9.2f / %9.2f ms -- TOTAL\n", (unsigned long long)tm, (unsigned long long)ta,
         (double)tnm * 1e-6, (double)tnt * 1e-6);
  printf("%zu rules, %zu matched once\n", n, matched);
  fflush(stdout);
  tg_free(sorted);
}

static void print_stats_at_exit(void) {
  if (g_stats.len) pm_print_stats();
  for (size_t i = 0; i < g_stats.len; i++) {
    tg_free(g_stats.data[i]->name);
    tg_free(g_stats.data[i]);
  }
  tg_vec_free(&g_stats);
  g_track = 0; /* rules used after this point (other atexit handlers) no longer record */
}

/* ================================================================================================================
 * pm_graph_rewrite
 * ================================================================================================================ */

/* Per-node state of one rewrite, in an open-addressing table keyed by pointer (empty slot: key NULL). */
enum { NI_ON_STACK = 1, NI_BPM = 2 };
typedef struct NInfo {
  const UOp *key;
  UOp *repl;      /* the final replacement; NULL while pending */
  UOp *link;      /* stage 2: this node's result is the result of `link` */
  UOp *bpm_res;   /* cached bpm result (with NI_BPM) */
  int32_t wait;   /* head of the list of stack entries waiting for this node, -1 none */
  uint32_t flags;
} NInfo;

typedef struct NMap { NInfo *t; uint32_t bits; size_t len; } NMap;

/* Idle cleared tables up to 2^16 entries, one per size, for the next rewrite (a nested rewrite finds the slot
 * empty and allocates its own). Bigger tables are mapped fresh with transparent huge pages: a fresh 4 KiB page
 * costs ~12 us to touch here, a 2 MiB one ~30x less per byte. */
#define NMAP_POOL_BITS 16
#define NMAP_HUGE_BYTES ((size_t)2 << 20)
static NInfo *g_pool[NMAP_POOL_BITS + 1];

static NInfo *nmap_alloc(uint32_t bits) {
  size_t bytes = ((size_t)1 << bits) * sizeof(NInfo);
  if (bytes < NMAP_HUGE_BYTES) return tg_calloc((size_t)1 << bits, sizeof(NInfo));
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) TG_PANIC("out of memory mapping a %zu-byte rewrite table", bytes);
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}
static void nmap_release(NInfo *t, uint32_t bits) {
  size_t bytes = ((size_t)1 << bits) * sizeof(NInfo);
  if (bytes < NMAP_HUGE_BYTES) tg_free(t);
  else munmap(t, bytes);
}
static void nmap_take(NMap *m, uint32_t bits) {
  m->bits = bits;
  m->len = 0;
  if (bits <= NMAP_POOL_BITS && g_pool[bits]) m->t = g_pool[bits], g_pool[bits] = NULL;
  else m->t = nmap_alloc(bits);
}
static void nmap_give(NMap *m) {
  if (m->bits <= NMAP_POOL_BITS && !g_pool[m->bits]) {
    memset(m->t, 0, ((size_t)1 << m->bits) * sizeof(NInfo));
    g_pool[m->bits] = m->t;
  } else {
    nmap_release(m->t, m->bits);
  }
  m->t = NULL;
}
static inline size_t nmap_home(const NMap *m, const UOp *k) {
  return (size_t)(((uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15ULL) >> (64 - m->bits));
}
static inline NInfo *nmap_get(const NMap *m, const UOp *k) {
  size_t mask = ((size_t)1 << m->bits) - 1;
  for (size_t i = nmap_home(m, k);; i = (i + 1) & mask) {
    NInfo *e = &m->t[i];
    if (e->key == k) return e;
    if (!e->key) return NULL;
  }
}
static void nmap_grow(NMap *m) {
  NMap n;
  nmap_take(&n, m->bits + 1);
  size_t mask = ((size_t)1 << n.bits) - 1;
  for (size_t i = 0; i < ((size_t)1 << m->bits); i++) {
    if (!m->t[i].key) continue;
    size_t j = nmap_home(&n, m->t[i].key);
    while (n.t[j].key) j = (j + 1) & mask;
    n.t[j] = m->t[i];
  }
  n.len = m->len;
  nmap_give(m);
  *m = n;
}
/* The entry of k, created when missing. Pointers into the table stay valid until the next nmap_add. */
static inline NInfo *nmap_add(NMap *m, const UOp *k) {
  if ((m->len + 1) * 2 > ((size_t)1 << m->bits)) nmap_grow(m);
  size_t mask = ((size_t)1 << m->bits) - 1;
  for (size_t i = nmap_home(m, k);; i = (i + 1) & mask) {
    NInfo *e = &m->t[i];
    if (e->key == k) return e;
    if (!e->key) {
      e->key = k;
      e->wait = -1;
      m->len++;
      return e;
    }
  }
}
static inline UOp *nmap_repl(const NMap *m, const UOp *k) {
  NInfo *e = nmap_get(m, k);
  return e ? e->repl : NULL;
}

typedef struct Entry { UOp *n, *nn; const CRule *why; int32_t stage; } Entry;
typedef struct Waiter { Entry e; int32_t next; } Waiter;

typedef struct Rewriter {
  const RuleSet *pm, *bpm;
  const UOpMap *subst;   /* uop_substitute: a lookup map in place of bpm */
  RwCtx rw;
  bool track, enter_calls;
  const char *name;
  size_t limit;
  NMap map;
  TG_VEC(Entry) stack;
  TG_VEC(Waiter) waits;
  TG_VEC(UOp *) scratch;
  TG_VEC(UOp *) seen;    /* the current bpm fixed-point chain */
  bool failed;
  const CRule *deadlock_why;
  UOp *deadlock_node;
} Rewriter;

static size_t stack_limit(void) {
  static int64_t lim = -1;
  if (lim < 0) lim = tg_getenv_int("REWRITE_STACK_LIMIT", 250000);
  return (size_t)lim;
}

static void rw_fail(Rewriter *w, const CRule *why, const UOp *at, const char *what) {
  if (w->failed) return;
  w->failed = true;
  if (why)
    tg_set_error(TG_ERR_RUNTIME, "graph_rewrite %s: %s: rule '%s' (pattern \"%s\") fired last on %s", w->name, what,
                 why->display, why->rule->pattern, at ? uop_op_name(uop_op(at)) : "?");
  else
    tg_set_error(TG_ERR_RUNTIME, "graph_rewrite %s: %s (at %s)", w->name, what, at ? uop_op_name(uop_op(at)) : "?");
}

/* bpm with its per-node cache (each node is tried once per rewrite) */
static UOp *rw_bpm(Rewriter *w, UOp *x, const CRule **why) {
  if (w->subst) {
    void **v = uopmap_get(w->subst, x);
    return v ? (UOp *)*v : NULL;
  }
  NInfo *e = nmap_add(&w->map, x); /* stays valid: rs_apply's callbacks cannot reach this rewrite's table */
  if (!(e->flags & NI_BPM)) {
    RwCtx rw = {w->rw.ctx, w->bpm};
    e->bpm_res = rs_apply(w->bpm, x, &rw, w->track, why);
    e->flags |= NI_BPM;
  }
  return e->bpm_res;
}

/* Stage 0 with a bpm: rewrite n repeatedly until nothing matches; *out is the last node. A node seen twice in
 * the chain is a loop. */
static bool bpm_fixed_point(Rewriter *w, UOp *n, UOp **out) {
  const CRule *why = NULL;
  w->seen.len = 0;
  for (UOp *test = n; test; test = rw_bpm(w, test, &why)) {
    for (size_t i = 0; i < w->seen.len; i++)
      if (w->seen.data[i] == test) {
        rw_fail(w, why, test, "infinite loop in the bottom-up fixed point");
        return false;
      }
    tg_vec_push(&w->seen, test);
    *out = test;
  }
  return true;
}

static void finish_node(Rewriter *w, UOp *n, UOp *r);

/* The body maps to itself (as tinygrad, even when it was rewritten elsewhere); anything waiting on it resumes. */
static void skip_body(Rewriter *w, UOp *body) {
  NInfo *e = nmap_add(&w->map, body);
  if (e->repl) e->repl = body;
  else finish_node(w, body, body);
}

/* CALL/FUNCTION bodies are not rewritten unless asked: the body (src[0]) maps to itself */
static void skip_call_body(Rewriter *w, UOp *nn) {
  TgOp op = uop_op(nn);
  if (w->enter_calls || (op != TG_OP_CALL && op != TG_OP_FUNCTION) || nn->nsrc == 0) return;
  TgOp body = uop_op(nn->src[0]);
  if (op == TG_OP_FUNCTION ||
      (op == TG_OP_CALL && (body == TG_OP_SINK || body == TG_OP_PROGRAM || body == TG_OP_LINEAR ||
                            body == TG_OP_COPY || body == TG_OP_CUSTOM_FUNCTION)))
    skip_body(w, nn->src[0]);
}

static inline void push_entry(Rewriter *w, UOp *n, int stage, UOp *nn, const CRule *why) {
  Entry e = {n, nn, why, stage};
  tg_vec_push(&w->stack, e);
}

static void wait_on(Rewriter *w, UOp *x, Entry e) {
  NInfo *xi = nmap_add(&w->map, x);
  Waiter wt = {e, xi->wait};
  xi->wait = (int32_t)w->waits.len;
  tg_vec_push(&w->waits, wt);
}

/* n is finished: record its replacement and release what waited on it (in the order it waited) */
static void finish_node(Rewriter *w, UOp *n, UOp *r) {
  NInfo *e = nmap_add(&w->map, n);
  e->repl = r;
  int32_t head = e->wait;
  if (head < 0) return;
  e->wait = -1;
  size_t k = 0;
  for (int32_t i = head; i >= 0; i = w->waits.data[i].next) k++;
  tg_vec_reserve(&w->stack, w->stack.len + k);
  size_t pos = w->stack.len + k;
  for (int32_t i = head; i >= 0; i = w->waits.data[i].next) w->stack.data[--pos] = w->waits.data[i].e;
  w->stack.len += k;
}

/* Does the pending chain of links starting at `start` come back to n? (n would wait on itself: a rewrite loop) */
static bool loops_back(Rewriter *w, UOp *start, const UOp *n) {
  for (UOp *cur = start; cur;) {
    if (cur == n) return true;
    NInfo *e = nmap_get(&w->map, cur);
    if (!e || e->repl) return false;
    cur = e->link;
  }
  return false;
}

static UOp *unified_rewrite(Rewriter *w, UOp *root) {
  nmap_add(&w->map, root)->flags |= NI_ON_STACK;
  push_entry(w, root, 0, root, NULL);
  while (w->stack.len && !w->failed) {
    if (w->stack.len > w->limit) {
      rw_fail(w, w->stack.data[w->stack.len - 1].why, w->stack.data[w->stack.len - 1].n,
              "infinite loop (stack exceeds REWRITE_STACK_LIMIT)");
      break;
    }
    Entry en = w->stack.data[--w->stack.len];
    UOp *n = en.n, *nn = en.nn;
    NInfo *ni = nmap_get(&w->map, n);
    if (ni && ni->repl) continue;
    if (en.stage == 0) {
      if ((w->bpm || w->subst) && !bpm_fixed_point(w, n, &nn)) break;
      push_entry(w, n, 1, nn, NULL);
      skip_call_body(w, nn);
      for (uint32_t i = nn->nsrc; i-- > 0;) {
        UOp *x = nn->src[i];
        NInfo *xi = nmap_add(&w->map, x);
        if (xi->flags & NI_ON_STACK) continue;
        xi->flags |= NI_ON_STACK;
        push_entry(w, x, 0, x, NULL);
      }
    } else if (en.stage == 1) {
      w->scratch.len = 0;
      tg_vec_reserve(&w->scratch, nn->nsrc);
      bool changed = false, ready = true;
      for (uint32_t i = 0; i < nn->nsrc; i++) {
        UOp *rx = nmap_repl(&w->map, nn->src[i]);
        if (!rx) {
          wait_on(w, nn->src[i], en);
          ready = false;
          break;
        }
        w->scratch.data[i] = rx;
        changed |= rx != nn->src[i];
      }
      if (!ready) continue;
      UOp *next;
      const CRule *why = NULL;
      if (!changed) {
        if (!w->pm || !(next = rs_apply(w->pm, nn, &w->rw, w->track, &why))) {
          finish_node(w, n, nn);
          continue;
        }
        if (loops_back(w, next, n)) {
          rw_fail(w, why, nn, "rewrite loop (a node rewrites back into its own pending chain)");
          break;
        }
      } else {
        next = uop_replace_src(nn, w->scratch.data, nn->nsrc);
      }
      nmap_add(&w->map, n)->link = next;
      push_entry(w, n, 2, next, why);
      push_entry(w, next, 0, next, why);
    } else {
      UOp *r = nmap_repl(&w->map, nn);
      if (r) {
        finish_node(w, n, r);
      } else {
        w->deadlock_why = en.why;
        w->deadlock_node = n;
        wait_on(w, nn, en);
      }
    }
  }
  if (w->failed) return NULL;
  UOp *res = nmap_repl(&w->map, root);
  if (!res) rw_fail(w, w->deadlock_why, w->deadlock_node, "rewrite cycle (a node was rewritten into a graph containing itself)");
  return res;
}

/* MLIR-style walk: one pass, replacements are not rewritten again */
static UOp *walk_rewrite(Rewriter *w, UOp *root) {
  push_entry(w, root, 0, root, NULL);
  while (w->stack.len) {
    if (w->stack.len > w->limit) {
      rw_fail(w, NULL, root, "stack exceeds REWRITE_STACK_LIMIT");
      return NULL;
    }
    Entry en = w->stack.data[--w->stack.len];
    UOp *n = en.n;
    if (nmap_repl(&w->map, n)) continue;
    if (en.stage == 0) {
      if (w->bpm || w->subst) {
        UOp *r = rw_bpm(w, n, NULL);
        if (r) {
          nmap_add(&w->map, n)->repl = r;
          continue;
        }
      }
      push_entry(w, n, 1, n, NULL);
      skip_call_body(w, n);
      for (uint32_t i = n->nsrc; i-- > 0;)
        if (!nmap_repl(&w->map, n->src[i])) push_entry(w, n->src[i], 0, n->src[i], NULL);
    } else {
      w->scratch.len = 0;
      tg_vec_reserve(&w->scratch, n->nsrc);
      bool changed = false;
      for (uint32_t i = 0; i < n->nsrc; i++) {
        UOp *rx = nmap_repl(&w->map, n->src[i]);
        w->scratch.data[i] = rx ? rx : n->src[i];
        changed |= w->scratch.data[i] != n->src[i];
      }
      UOp *nn = changed ? uop_replace_src(n, w->scratch.data, n->nsrc) : n;
      UOp *r = w->pm ? rs_apply(w->pm, nn, &w->rw, w->track, NULL) : NULL;
      nmap_add(&w->map, n)->repl = r ? r : nn;
    }
  }
  return nmap_repl(&w->map, root);
}

static UOp *run_rewrite(UOp *root, const RuleSet *pm, const RuleSet *bpm, const UOpMap *subst, void *ctx, int flags,
                        const char *name) {
  Rewriter w;
  memset(&w, 0, sizeof w);
  w.pm = pm;
  w.bpm = bpm;
  w.subst = subst;
  w.rw.ctx = ctx;
  w.rw.pm = pm;
  w.track = track_level() > 0;
  w.enter_calls = (flags & RW_ENTER_CALLS) != 0;
  w.name = name ? name : (pm ? pm->name : bpm ? bpm->name : "substitute");
  w.limit = stack_limit();
  nmap_take(&w.map, 8);
  UOpScope scope = uop_scope_begin();
  UOp *res = (flags & RW_WALK) ? walk_rewrite(&w, root) : unified_rewrite(&w, root);
  if (res) uop_scope_end_keep(scope, res);
  else uop_scope_end(scope);
  nmap_give(&w.map);
  tg_vec_free(&w.stack);
  tg_vec_free(&w.waits);
  tg_vec_free(&w.scratch);
  tg_vec_free(&w.seen);
  return res;
}

UOp *pm_graph_rewrite(UOp *root, const RuleSet *pm, void *ctx, int flags, const RuleSet *bpm, const char *name) {
  if (flags & RW_BOTTOM_UP) return run_rewrite(root, NULL, pm, NULL, ctx, flags, name);
  return run_rewrite(root, pm, bpm, NULL, ctx, flags, name);
}

UOp *uop_substitute(UOp *root, UOp *const *from, UOp *const *to, size_t n) {
  UOpMap map;
  uopmap_init(&map);
  for (size_t i = 0; i < n; i++)
    if (from[i] != to[i]) uopmap_put(&map, from[i], to[i]);
  UOp *res = map.len ? run_rewrite(root, NULL, NULL, &map, NULL, RW_WALK, "substitute") : root;
  uopmap_free(&map);
  return res;
}
