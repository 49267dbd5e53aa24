/* test_interp.c — the kernel interpreter on hand-written lowered kernels with known answers: loops and register
 * accumulators, gated stores (IF/ENDIF from the linearizer) and gated loads, Variables as loop bounds, C casts and
 * bit casts at every width, half/bf16 rounding, vector loads and lanes, and the errors it must report instead of
 * crashing (division by zero, out-of-bounds access, unbound slots, ops it does not know). */
#include <stdlib.h>

#include "codegen/interp.h"
#include "codegen/linearize.h"
#include "render/render.h"
#include "test.h"
#include "uop/parse.h"
#include "uop/uop.h"

/* sizes and constants in the lowered form: CAST(int, CONST weakint) */
#define I(n) "(CAST.int (CONST.weakint=i:" #n "))"
#define F(x) "(CAST.float (CONST.weakfloat=f:" #x "))"
#define GBUF(slot, dt, n) "(PARAM." dt "=param:" #slot ":-:1 " I(n) ")"

static UOp *lin_of(const char *text) {
  UOp *sink = uop_parse(text);
  CHECK_MSG(sink != NULL, "parse: %s", tg_last_error());
  UOp *lin = sink ? cg_linearize(sink) : NULL;
  CHECK_MSG(!sink || lin != NULL, "linearize: %s", tg_last_error());
  return lin;
}

static tg_status run1(const char *text, void *b0, void *b1, int64_t v) {
  UOp *lin = lin_of(text);
  if (!lin) return TG_ERR_INVALID_ARGUMENT;
  void *bufs[3] = {b0, b1, NULL};
  int64_t vals[3] = {v, v, v};
  return interp_run(lin, bufs, vals, 3);
}

/* out[i] = in[i] * 2 for i < 5 only: the gated STORE becomes IF/STORE/ENDIF */
static const char *gated_store =
    "(SINK.void=kern:gated (END.void (STORE.void (INDEX.float " GBUF(0, "float", 8) " (@0 RANGE.int=rng:0:LOOP " I(8)
    ")) (MUL.float (LOAD.float (INDEX.float " GBUF(1, "float", 8) " @0)) " F(2.0) ") (CMPLT.bool @0 " I(5) ")) @0))";

static void check_gated_store(void) {
  UOpScope sc = uop_scope_begin();
  UOp *lin = lin_of(gated_store);
  if (lin) {
    int ifs = 0, endifs = 0, gated = 0;
    for (uint32_t i = 0; i < lin->nsrc; i++) {
      ifs += uop_is(lin->src[i], TG_OP_IF);
      endifs += uop_is(lin->src[i], TG_OP_ENDIF);
      gated += uop_is(lin->src[i], TG_OP_STORE) && lin->src[i]->nsrc == 3;
    }
    CHECK(ifs == 1 && endifs == 1 && gated == 0);
    char *src = render_c(renderer_clang(), lin);
    CHECK_MSG(src && strstr(src, "    float val0 = (*(data1_8+Lidx0));\n    if ((Lidx0<5)) {\n      *(data0_8+Lidx0) = "
                              "(val0*2.0f);\n    }\n"),
              "gated store rendered as\n%s", src ? src : tg_last_error());
    tg_free(src);
  }
  float in[8], out[8];
  for (int i = 0; i < 8; i++) { in[i] = (float)i + 0.5f; out[i] = -1.0f; }
  CHECK(run1(gated_store, out, in, 0) == TG_OK);
  for (int i = 0; i < 8; i++) CHECK_NEAR(out[i], i < 5 ? 2.0f * in[i] : -1.0f, 0);
  uop_scope_end(sc);
}

/* out[i] = i >= 2 ? in[i-2] : 7 (gated LOAD with an alternative) */
static const char *gated_load =
    "(SINK.void (END.void (STORE.void (INDEX.int " GBUF(0, "int", 6) " (@0 RANGE.int=rng:0:LOOP " I(6)
    ")) (LOAD.int (INDEX.int " GBUF(1, "int", 4) " (ADD.int @0 " I(-2) ")) (CAST.int (CONST.weakint=i:7)) "
    "(CMPLT.bool " I(1) " @0))) @0))";

static void check_gated_load(void) {
  UOpScope sc = uop_scope_begin();
  int32_t in[4] = {10, 11, 12, 13}, out[6] = {0};
  CHECK(run1(gated_load, out, in, 0) == TG_OK);
  int32_t want[6] = {7, 7, 10, 11, 12, 13};
  for (int i = 0; i < 6; i++) CHECK_EQ_INT(out[i], want[i]);
  uop_scope_end(sc);
}

/* out[0] = sum of in[0 .. n) with n a Variable PARAM, accumulated in a register buffer */
static const char *var_sum =
    "(SINK.void (STORE.void (INDEX.float " GBUF(0, "float", 1) " " I(0) ") (LOAD.float (INDEX.float (AFTER.float "
    "(@0 BUFFER.float=param:0:-:3 " I(1) ") (END.void (STORE.void (@1 INDEX.float (AFTER.float @0 (STORE.void "
    "(INDEX.float @0 " I(0) ") " F(0.0) ") (@2 RANGE.int=rng:0:REDUCE (PARAM.int=param:2:n:4::1:16))) " I(0) ") "
    "(ADD.float (LOAD.float @1) (LOAD.float (INDEX.float " GBUF(1, "float", 16) " @2)))) @2)) " I(0) "))))";

static void check_variable_bound(void) {
  UOpScope sc = uop_scope_begin();
  float in[16], out[1] = {0};
  for (int i = 0; i < 16; i++) in[i] = (float)(i + 1);
  UOp *lin = lin_of(var_sum);
  if (lin) {
    void *bufs[3] = {out, in, NULL};
    int64_t vals[3] = {0, 0, 5};
    CHECK(interp_run(lin, bufs, vals, 3) == TG_OK);
    CHECK_NEAR(out[0], 15.0, 0);
    vals[2] = 16;
    CHECK(interp_run(lin, bufs, vals, 3) == TG_OK);
    CHECK_NEAR(out[0], 136.0, 0);
    CHECK(interp_run(lin, bufs, vals, 2) != TG_OK); /* the Variable's slot is missing */
    CHECK(interp_run(lin, bufs, NULL, 3) != TG_OK);
    CHECK(interp_run(lin, NULL, vals, 3) != TG_OK);
    RenderParamVec ps = {0};
    render_params(lin, &ps);
    CHECK(ps.len == 3 && ps.data[2].is_value && ps.data[2].vmin == 1 && ps.data[2].vmax == 16);
    CHECK(ps.len == 3 && strcmp(ps.data[2].var_name, "n") == 0 && strcmp(ps.data[2].name, "data2_") == 0);
    CHECK(ps.len == 3 && strcmp(ps.data[0].name, "data0_1") == 0 && ps.data[0].numel == 1 && ps.data[1].numel == 16);
    CHECK(ps.len == 3 && ps.data[0].is_written && !ps.data[1].is_written);
    tg_vec_free(&ps);
  }
  uop_scope_end(sc);
}

/* One value through a kernel: out[0] = EXPR(in[0]). */
static tg_status unary(const char *in_dt, const char *out_dt, const char *expr_head, const char *expr_tail, void *out,
                       void *in) {
  char text[1024];
  snprintf(text, sizeof text,
           "(SINK.void (STORE.void (INDEX.%s (PARAM.%s=param:0:-:1 " I(1) ") " I(0) ") %s(LOAD.%s (INDEX.%s "
           "(PARAM.%s=param:1:-:1 " I(1) ") " I(0) "))%s))",
           out_dt, out_dt, expr_head, in_dt, in_dt, in_dt, expr_tail);
  return run1(text, out, in, 0);
}

static void check_casts(void) {
  UOpScope sc = uop_scope_begin();
  float f = -2.75f;
  int32_t i = 0;
  CHECK(unary("float", "int", "(CAST.int ", ")", &i, &f) == TG_OK);
  CHECK_EQ_INT(i, -2); /* C truncation */
  f = 3e9f;
  CHECK(unary("float", "int", "(CAST.int ", ")", &i, &f) == TG_OK);
  CHECK_EQ_INT(i, INT32_MIN); /* undefined in C: x86's integer indefinite */
  int64_t big = (int64_t)1 << 62 | 1;
  float g = 0;
  CHECK(unary("long", "float", "(CAST.float ", ")", &g, &big) == TG_OK);
  CHECK(g == (float)big);
  uint8_t u8 = 0;
  int32_t neg = -3;
  CHECK(unary("int", "uchar", "(CAST.uchar ", ")", &u8, &neg) == TG_OK);
  CHECK_EQ_INT(u8, 253);
  f = 1.0f + 1.0f / 4096; /* between two halfs: rounds to even */
  uint16_t h = 0;
  CHECK(unary("float", "half", "(CAST.half ", ")", &h, &f) == TG_OK);
  CHECK_EQ_INT(h, 0x3c00);
  f = 1.00390625f; /* 1 + 2^-8: bf16 rounds to even */
  CHECK(unary("float", "bfloat16", "(CAST.bfloat16 ", ")", &h, &f) == TG_OK);
  CHECK_EQ_INT(h, 0x3f80);
  f = 0.3f; /* fp8 e4m3: 0.3 lies between 0.28125 and 0.3125, nearer 0.3125 = 1.25 * 2^-2 (0 0101 010) */
  uint8_t f8 = 0;
  CHECK(unary("float", "fp8e4m3", "(CAST.fp8e4m3 ", ")", &f8, &f) == TG_OK);
  CHECK_EQ_INT(f8, 0x2a);
  f = -0.0f;
  i = 0;
  CHECK(unary("float", "int", "(BITCAST.int ", ")", &i, &f) == TG_OK);
  CHECK_EQ_INT((uint32_t)i, 0x80000000u);
  uint8_t b = 7;
  f = 0.5f;
  CHECK(unary("float", "bool", "(CAST.bool ", ")", &b, &f) == TG_OK);
  CHECK_EQ_INT(b, 1);
  /* int32 wraps, float32 rounds per op */
  int32_t mx = INT32_MAX;
  CHECK(unary("int", "int", "(ADD.int ", " " I(1) ")", &i, &mx) == TG_OK);
  CHECK_EQ_INT(i, INT32_MIN);
  f = 16777216.0f;
  CHECK(unary("float", "float", "(ADD.float ", " " F(1.0) ")", &g, &f) == TG_OK);
  CHECK(g == 16777216.0f);
  /* C division truncates toward zero */
  int32_t m7 = -7;
  CHECK(unary("int", "int", "(CDIV.int ", " " I(2) ")", &i, &m7) == TG_OK);
  CHECK_EQ_INT(i, -3);
  CHECK(unary("int", "int", "(CMOD.int ", " " I(2) ")", &i, &m7) == TG_OK);
  CHECK_EQ_INT(i, -1);
  uop_scope_end(sc);
}

static void check_errors(void) {
  UOpScope sc = uop_scope_begin();
  int32_t x = 5, out = 0;
  CHECK(unary("int", "int", "(CDIV.int " I(1) " ", ")", &out, &(int32_t){0}) != TG_OK); /* 1 / 0 */
  CHECK(strstr(tg_last_error(), "no defined value") != NULL);
  /* out of bounds: index 3 into a 1-element buffer */
  const char *oob = "(SINK.void (STORE.void (INDEX.int " GBUF(0, "int", 1) " " I(3) ") " I(1) "))";
  CHECK(run1(oob, &out, &x, 0) != TG_OK);
  CHECK(strstr(tg_last_error(), "out of bounds") != NULL);
  /* a buffer slot given as NULL */
  CHECK(run1(oob, NULL, NULL, 0) != TG_OK);
  /* an op the interpreter does not know */
  const char *custom = "(SINK.void (STORE.void (INDEX.int " GBUF(0, "int", 1) " " I(0) ") (CUSTOM.int=s:foo)))";
  CHECK(run1(custom, &out, NULL, 0) != TG_OK);
  CHECK(strstr(tg_last_error(), "not supported") != NULL);
  /* the linearizer refuses a root that is not a SINK, and an IF already in the graph */
  UOp *notsink = uop_parse(I(3));
  CHECK(notsink && cg_linearize(notsink) == NULL);
  UOp *withif = uop_parse("(SINK.void (IF.void (CONST.bool=b:1) " I(0) "))");
  CHECK(withif && cg_linearize(withif) == NULL);
  CHECK(interp_run(notsink, NULL, NULL, 0) != TG_OK); /* not a LINEAR */
  uop_scope_end(sc);
}

/* EXP2 has no C spelling on the CPU (the codegen decomposes it): render refuses, the interpreter computes it. */
static void check_unrendered_ops(void) {
  UOpScope sc = uop_scope_begin();
  const char *k = "(SINK.void (STORE.void (INDEX.float " GBUF(0, "float", 1) " " I(0) ") (EXP2.float (LOAD.float "
                  "(INDEX.float " GBUF(1, "float", 1) " " I(0) ")))))";
  UOp *lin = lin_of(k);
  if (lin) {
    char *src = render_c(renderer_clang(), lin);
    CHECK(src == NULL && strstr(tg_last_error(), "EXP2") != NULL);
    tg_free(src);
    float in = 3.0f, out = 0;
    void *bufs[2] = {&out, &in};
    CHECK(interp_run(lin, bufs, NULL, 2) == TG_OK);
    CHECK_NEAR(out, 8.0, 0);
  }
  CHECK(!renderer_has_op(renderer_clang(), TG_OP_EXP2) && renderer_has_op(renderer_clang(), TG_OP_FDIV));
  CHECK(renderer_supports_dtype(renderer_clang(), DT_BFLOAT16) && !renderer_supports_dtype(renderer_clang(), DT_OF(FP8E4M3)));
  CHECK(renderer_clang()->extra_matcher && renderer_clang()->extra_matcher() != NULL);
  uop_scope_end(sc);
}

/* a 2-wide vector load, its lanes, and a STACK stored back as a vector */
static void check_vectors(void) {
  UOpScope sc = uop_scope_begin();
  const char *k = "(SINK.void (STORE.void (SHRINK.uint " GBUF(0, "uint", 2) " " I(0) " " I(2) ") (STACK.uint "
                  "(ADD.uint (INDEX.uint (@0 LOAD.uint (SHRINK.uint " GBUF(1, "uint", 2) " " I(0) " " I(2) ")) " I(1)
                  ") (CAST.uint (CONST.weakint=i:100))) (INDEX.uint @0 " I(0) "))))";
  uint32_t in[2] = {5, 9}, out[2] = {0, 0};
  CHECK(run1(k, out, in, 0) == TG_OK);
  CHECK_EQ_INT(out[0], 109);
  CHECK_EQ_INT(out[1], 5);
  UOp *lin = lin_of(k);
  char *src = lin ? render_c(renderer_clang(), lin) : NULL;
  CHECK_MSG(src && strstr(src, "typedef unsigned int unsigned_int2 __attribute__((aligned(8),ext_vector_type(2)));") &&
                strstr(src, "*((unsigned_int2*)((data0_2+0))) = (unsigned_int2){(val0[1]+100u),val0[0]};"),
            "vector kernel rendered as\n%s", src ? src : tg_last_error());
  tg_free(src);
  uop_scope_end(sc);
}

void suite_interp(void) {
  check_gated_store();
  check_gated_load();
  check_variable_bound();
  check_casts();
  check_errors();
  check_unrendered_ops();
  check_vectors();
}
