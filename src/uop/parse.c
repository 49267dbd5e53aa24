/* parse.c — the reader of parse.h's s-expression graph format (tinygrad graphs dumped by tools/ scripts, test
 * inputs written by hand). Recursive descent; nesting is bounded by the text, which tests and tools control. */
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>


static const DType *dtype_named(const char *name) { return dt_by_name(name); }

static int axis_type_named(const char *name) {
  for (int t = 0; t <= AXIS_LOOP; t++)
    if (strcmp(uop_axis_type_name((AxisType)t), name) == 0) return t;
  return -1;
}

static void skip_space(const char **p) {
  while (**p == ' ') (*p)++;
}

/* Builds the node of the arg text `at` (NULL: no arg) for op/dtype; NULL on a syntax error. */
static UOp *make_node(TgOp op, const DType *dt, const char *at, UOp **src, size_t n) {
  Arg arg = arg_none();
  RangeArg r;
  ParamArg p;
  KernelInfo kinfo; /* lives until uop_new copies it */
  int64_t ints[16];
  char buf[128];
  if (!at) return uop_new(op, dt, src, n, arg);
  snprintf(buf, sizeof buf, "%s", at);
  if (strncmp(buf, "i:", 2) == 0) {
    char *end;
    long long v = strtoll(buf + 2, &end, 10);
    if (buf[2] != '-' && (unsigned long long)v != strtoull(buf + 2, NULL, 10)) /* above INT64_MAX: a uint64 */
      v = (long long)strtoull(buf + 2, NULL, 10);
    arg = arg_const(const_int((int64_t)v));
  } else if (strncmp(buf, "f:", 2) == 0) {
    arg = arg_const(const_float(strtod(buf + 2, NULL)));
  } else if (strncmp(buf, "b:", 2) == 0) {
    arg = arg_const(const_bool(buf[2] == '1'));
  } else if (strcmp(buf, "inv") == 0) {
    arg = arg_const(const_invalid());
  } else if (strncmp(buf, "var:", 4) == 0) {
    char *name = buf + 4, *lo = strchr(name, ':');
    if (!lo) return NULL;
    *lo++ = 0;
    char *hi = strchr(lo, ':');
    if (!hi) return NULL;
    *hi++ = 0;
    return uop_variable(name, atoll(lo), atoll(hi), dt);
  } else if (strncmp(buf, "param:", 6) == 0) {
    memset(&p, 0, sizeof p);
    char *slot = buf + 6, *name = strchr(slot, ':');
    if (!name) return NULL;
    *name++ = 0;
    char *as = strchr(name, ':');
    if (!as) return NULL;
    *as++ = 0;
    p.slot = atoll(slot);
    p.multiple_of = 1;
    p.axis = -1;
    p.dtype = dt;
    p.addrspace = atoi(as);
    char *device = strchr(as, ':'); /* optional 4th field: the device */
    if (device) snprintf(p.device, sizeof p.device, "%s", device + 1);
    char *range = strchr(p.device, ':'); /* optional 5th and 6th fields: a Variable's value range lo:hi */
    if (range) {
      *range++ = 0;
      char *hi = strchr(range, ':');
      if (!hi) return NULL;
      p.vmin = atoll(range);
      p.vmax = atoll(hi + 1);
    }
    if (strcmp(name, "-") != 0) snprintf(p.name, sizeof p.name, "%s", name);
    arg = arg_param(&p);
  } else if (strncmp(buf, "rng:", 4) == 0) {
    memset(&r, 0, sizeof r);
    char *ids = buf + 4, *type = strchr(ids, ':');
    if (!type) return NULL;
    *type++ = 0;
    int k = 0;
    for (char *tok = strtok(ids, "_"); tok; tok = strtok(NULL, "_"), k++) {
      if (k == 0) r.axis_id = atoll(tok);
      else if (k <= 4) r.sub[k - 1] = atoll(tok);
    }
    r.nsub = k - 1;
    r.axis_type = axis_type_named(type);
    if (r.axis_type < 0) return NULL;
    arg = arg_range(&r);
  } else if (strncmp(buf, "kern:", 5) == 0) {
    memset(&kinfo, 0, sizeof kinfo);
    snprintf(kinfo.name, sizeof kinfo.name, "%.*s", (int)sizeof kinfo.name - 1, buf + 5);
    arg = arg_kernel(&kinfo);
  } else if (strncmp(buf, "s:", 2) == 0) {
    arg = arg_str(at + 2);
  } else if (strncmp(buf, "red:", 4) == 0) {
    char *opn = buf + 4, *cnt = strchr(opn, ':');
    if (!cnt) return NULL;
    *cnt++ = 0;
    if (uop_op_by_name(opn) < 0) return NULL;
    arg = arg_reduce((TgOp)uop_op_by_name(opn), atoi(cnt));
  } else if (strncmp(buf, "wmma:", 5) == 0) { /* a contracted WMMA: "wmma:N,M,K,dtype_in,dtype_out,threads" */
    char *tok[6];
    size_t k = 0;
    for (char *t = strtok(buf + 5, ","); t && k < 6; t = strtok(NULL, ",")) tok[k++] = t;
    const DType *din = k == 6 ? dtype_named(tok[3]) : NULL, *dout = k == 6 ? dtype_named(tok[4]) : NULL;
    if (!din || !dout) return NULL;
    int64_t w[9] = {atoll(tok[0]), atoll(tok[1]), atoll(tok[2]), din->id, dout->id, atoll(tok[5]), 0, 0, 0};
    memcpy(ints, w, sizeof w); /* the arg points at ints, which lives until uop_new copies it */
    arg = arg_ints(ARG_WMMA, ints, 9);
  } else if (strncmp(buf, "perm:", 5) == 0 || strncmp(buf, "flip:", 5) == 0) {
    size_t k = 0;
    for (char *tok = strtok(buf + 5, ","); tok && k < 16; tok = strtok(NULL, ",")) ints[k++] = atoll(tok);
    arg = arg_ints(buf[0] == 'p' ? ARG_PERM : ARG_FLIP, ints, k);
  } else {
    return NULL;
  }
  return uop_new(op, dt, src, n, arg);
}

/* Shared nodes written once: "(@k OP...)" defines reference k, a later "@k" stands for that node. */
typedef TG_VEC(UOp *) ParseRefs;

static bool read_ref_number(const char **p, size_t *k) {
  if (**p != '@') return false;
  char *end;
  unsigned long long v = strtoull(*p + 1, &end, 10);
  if (end == *p + 1) return false;
  *k = (size_t)v;
  *p = end;
  return true;
}

static UOp *parse_node(const char **p, ParseRefs *refs) {
  skip_space(p);
  size_t ref = 0;
  if (**p == '@') { /* a reference to a node defined earlier */
    if (!read_ref_number(p, &ref) || ref >= refs->len || !refs->data[ref]) return NULL;
    return refs->data[ref];
  }
  if (**p != '(') return NULL;
  (*p)++;
  bool defines = read_ref_number(p, &ref);
  if (defines) skip_space(p);
  char head[160];
  size_t hn = 0;
  while (**p && **p != ' ' && **p != ')' && hn < sizeof head - 1) head[hn++] = *(*p)++;
  head[hn] = 0;
  char *eq = strchr(head, '=');
  if (eq) *eq = 0;
  char *dot = strchr(head, '.');
  if (!dot) return NULL;
  *dot = 0;
  int op = uop_op_by_name(head);
  const DType *dt = dtype_named(dot + 1);
  if (op < 0 || !dt) return NULL;
  ParseRefs src = {0}; /* any number of sources */
  for (;;) {
    skip_space(p);
    if (**p == ')') { (*p)++; break; }
    UOp *s = parse_node(p, refs);
    if (!s) { tg_vec_free(&src); return NULL; }
    tg_vec_push(&src, s);
  }
  UOp *u = make_node((TgOp)op, dt, eq ? eq + 1 : NULL, src.data, src.len);
  tg_vec_free(&src);
  if (u && defines) {
    while (refs->len <= ref) tg_vec_push(refs, NULL);
    refs->data[ref] = u;
  }
  return u;
}

UOp *uop_parse(const char *text) {
  const char *p = text;
  ParseRefs refs = {0};
  UOp *u = parse_node(&p, &refs);
  tg_vec_free(&refs);
  skip_space(&p);
  if (u && *p == 0) return u;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "uop_parse: syntax error at offset %zu of \"%.60s\"", (size_t)(p - text), text);
  return NULL;
}

