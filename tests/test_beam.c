/* test_beam.c — BEAM search (src/codegen/beam.c) wired into the engine: a matmul realized with BEAM=2 through the
 * public API gives the unoptimized result, its opts are valid and cached in the compile cache's database, a second
 * search is a cache hit (no compiler, no timing), IGNORE_BEAM_CACHE=1 and CACHELEVEL=0 search again, and a corrupt
 * or stale cache entry is searched over and replaced, a candidate the compiler rejects is dropped. Runs on its own
 * CACHEDB in a temporary directory. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/tensor.h" /* first: render.h renames ShapeCache for the headers after it */

#include "codegen/beam.h"
#include "codegen/codegen.h"
#include "render/render.h"
#include "runtime/runtime.h"
#include "schedule/schedule.h"
#include "test.h"
#include "uop/parse.h"
#include "tinygrad.h"

/* An env knob set for a while and put back afterwards. */
typedef struct SavedEnv { const char *name; char *value; } SavedEnv;
static SavedEnv env_save(const char *name) {
  const char *v = getenv(name);
  SavedEnv s = {name, v ? tg_strdup(v) : NULL};
  return s;
}
static void env_restore(SavedEnv *s) {
  if (s->value) test_setenv(s->name, s->value);
  else test_unsetenv(s->name);
  tg_free(s->value);
  s->value = NULL;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
}

/* The single kernel AST of `t`'s (unrealized) graph, kept: the caller drops it. */
static UOp *kernel_ast_of(tg_tensor *t) {
  UOpScope sc = uop_scope_begin();
  UOp *root = t->uop;
  UOp *linear = sched_kernels(uop_sink(&root, 1));
  UOp *ast = linear && linear->nsrc >= 1 ? uop_keep(linear->src[linear->nsrc - 1]->src[0]) : NULL;
  uop_scope_end(sc);
  return ast;
}

/* The opts lower (each applies: cg_lower fails on an invalid one) and the lowered kernel says it applied them all. */
static bool opts_valid(UOp *ast, const Opt *opts, int n) {
  UOpScope sc = uop_scope_begin();
  UOp *lowered = cg_lower(opt_ast_with_opts(ast, opts, n), renderer_clang());
  bool ok = lowered && lowered->arg.kind == ARG_KERNEL && lowered->arg.kernel->applied_opts == n;
  if (ok)
    for (int i = 0; i < n && i < KERNEL_OPTS_MAX; i++) {
      const KernelOpt *a = &lowered->arg.kernel->applied[i];
      ok &= a->op == opts[i].op && a->axis == opts[i].axis && a->arg == opts[i].arg;
    }
  uop_scope_end(sc);
  return ok;
}

#define M 32
#define K 48
#define N 40

static void test_matmul_search_and_cache(void) {
  const Renderer *ren = renderer_clang();
  float a[M * K], b[K * N], got[M * N], want[M * N];
  fill(a, M * K, 11);
  fill(b, K * N, 12);
  for (int i = 0; i < M; i++) /* the unoptimized kernel's order: one float accumulator over k */
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int k = 0; k < K; k++) acc += a[i * K + k] * b[k * N + j];
      want[i * N + j] = acc;
    }
  int64_t sa[2] = {M, K}, sb[2] = {K, N};

  /* 1. realize with BEAM=2: one search, the unoptimized result */
  tg_scope sc = tg_scope_begin();
  BeamStats s0 = beam_stats();
  tg_status st = tg_to_host(tg_matmul(tg_from_floats(a, sa, 2), tg_from_floats(b, sb, 2)), got, sizeof got);
  CHECK_MSG(st == TG_OK, "BEAM=2 matmul: %s", tg_last_error());
  BeamStats s1 = beam_stats();
  CHECK(s1.searches >= s0.searches + 1);
  CHECK(s1.candidates_timed > s0.candidates_timed);
  int bad = 0;
  for (int i = 0; i < M * N; i++) bad += !(fabsf(got[i] - want[i]) <= 1e-5f + 1e-5f * fabsf(want[i]));
  CHECK_EQ_INT(bad, 0);

  /* the same kernel's AST: the engine stored its result under this AST's key */
  tg_tensor *lazy = tg_matmul(tg_from_floats(a, sa, 2), tg_from_floats(b, sb, 2));
  UOp *ast = kernel_ast_of(lazy);
  CHECK(ast != NULL);
  tg_scope_end(sc);
  if (!ast) return;
  char *key = beam_cache_key(ast, ren, 2);
  char *stored = rt_cache_get(BEAM_CACHE_TABLE, key);
  CHECK_MSG(stored && *stored, "no BEAM result cached under %s", key);
  /* the key holds the heuristic's opts: a renderer whose heuristic tiles differently (8-byte vectors: 2 lanes, same
   * device) gets another key, so a winner searched against one heuristic is not reused against another */
  CHECK_MSG(strstr(key, "|hc=UPCAST,") != NULL, "key without the heuristic's opts: %s", key);
  Renderer narrow = *ren;
  narrow.vector_bytes = 8;
  char *narrow_key = beam_cache_key(ast, &narrow, 2);
  CHECK_MSG(strcmp(key, narrow_key) != 0, "same key for two heuristics: %s", key);
  tg_free(narrow_key);

  /* 2. a second search: a cache hit, with no compiler process and no timing, giving valid opts */
  Opt opts[OPT_LIST_MAX];
  int nopts = -1;
  RtStats r0 = rt_stats();
  BeamStats s2 = beam_stats();
  CHECK(beam_search(ast, ren, 2, opts, &nopts) == TG_OK);
  BeamStats s3 = beam_stats();
  CHECK_EQ_INT(s3.cache_hits - s2.cache_hits, 1);
  CHECK_EQ_INT(s3.searches - s2.searches, 0);
  CHECK_EQ_INT(s3.candidates_timed - s2.candidates_timed, 0);
  CHECK_EQ_INT(rt_stats().compiler_processes - r0.compiler_processes, 0);
  CHECK(nopts >= 1);
  CHECK(opts_valid(ast, opts, nopts));

  /* 3. IGNORE_BEAM_CACHE=1: searches again (every candidate source is compiled already: no compiler process), and
   *    the fresh result is valid */
  test_setenv("IGNORE_BEAM_CACHE", "1");
  Opt again[OPT_LIST_MAX];
  int nagain = -1;
  CHECK(beam_search(ast, ren, 2, again, &nagain) == TG_OK);
  test_unsetenv("IGNORE_BEAM_CACHE");
  BeamStats s4 = beam_stats();
  CHECK_EQ_INT(s4.searches - s3.searches, 1);
  CHECK(s4.candidates_timed > s3.candidates_timed);
  CHECK(nagain >= 1 && opts_valid(ast, again, nagain));

  /* 4. corrupt entries are ignored: searched again, then replaced by a good one (a hit next time) */
  static const char *const corrupt[] = {"UPCAST,banana", "NOSUCHOP,0,4", "UPCAST,0", "UPCAST,0,4;", "\x01\x02"};
  for (size_t i = 0; i < TG_ARRAY_LEN(corrupt); i++) {
    CHECK(rt_cache_put(BEAM_CACHE_TABLE, key, corrupt[i]));
    BeamStats c0 = beam_stats();
    int n = -1;
    CHECK(beam_search(ast, ren, 2, opts, &n) == TG_OK);
    BeamStats c1 = beam_stats();
    CHECK_MSG(c1.searches - c0.searches == 1 && c1.cache_hits == c0.cache_hits, "entry \"%s\" was used", corrupt[i]);
    CHECK(n >= 1 && opts_valid(ast, opts, n));
    if (i) continue;
    CHECK(beam_search(ast, ren, 2, opts, &n) == TG_OK); /* the entry was rewritten */
    CHECK_EQ_INT(beam_stats().cache_hits - c1.cache_hits, 1);
  }
  /* a stale entry (well formed, but the kernel has no axis 9) is searched over too */
  CHECK(rt_cache_put(BEAM_CACHE_TABLE, key, "UPCAST,9,4"));
  BeamStats t0 = beam_stats();
  CHECK(beam_search(ast, ren, 2, opts, &nopts) == TG_OK);
  CHECK_EQ_INT(beam_stats().searches - t0.searches, 1);
  /* a valid entry is used as it is, even one the search would not pick */
  CHECK(rt_cache_put(BEAM_CACHE_TABLE, key, "UPCAST,0,2"));
  CHECK(beam_search(ast, ren, 2, opts, &nopts) == TG_OK);
  CHECK(nopts == 1 && opts[0].op == OPT_UPCAST && opts[0].axis == 0 && opts[0].arg == 2);

  /* 5. CACHELEVEL=0: the cache is neither read nor written */
  test_setenv("CACHELEVEL", "0");
  BeamStats l0 = beam_stats();
  CHECK(beam_search(ast, ren, 2, opts, &nopts) == TG_OK);
  CHECK_EQ_INT(beam_stats().searches - l0.searches, 1);
  test_unsetenv("CACHELEVEL");
  char *after = rt_cache_get(BEAM_CACHE_TABLE, key);
  CHECK(after && strcmp(after, "UPCAST,0,2") == 0);

  /* 6. the heuristic's kernel is a candidate whatever its uop count: with BEAM_UOPS_MAX=1 every other candidate is
   *    dropped, and the search ends at the heuristic's opts (never at the naive kernel); BEAM_VERIFY=0 leaves out
   *    the final side-by-side timing, which would also prefer the heuristic's kernel to the naive one */
  test_setenv("BEAM_UOPS_MAX", "1");
  test_setenv("BEAM_VERIFY", "0");
  test_setenv("IGNORE_BEAM_CACHE", "1");
  CHECK(beam_search(ast, ren, 2, opts, &nopts) == TG_OK);
  test_unsetenv("IGNORE_BEAM_CACHE");
  test_unsetenv("BEAM_VERIFY");
  test_unsetenv("BEAM_UOPS_MAX");
  {
    UOpScope hs = uop_scope_begin();
    OptScheduler hc;
    opt_sched_init(&hc, cg_optimize(opt_ast_with_opts(ast, NULL, 0), ren), ren);
    opt_hand_coded(&hc);
    CHECK_MSG(hc.napplied >= 1 && nopts == hc.napplied && memcmp(opts, hc.applied, (size_t)nopts * sizeof(Opt)) == 0,
              "BEAM with BEAM_UOPS_MAX=1: %d opts, the heuristic's %d", nopts, hc.napplied);
    opt_sched_free(&hc);
    uop_scope_end(hs);
  }

  /* bad requests */
  CHECK(beam_search(ast, ren, 0, opts, &nopts) == TG_ERR_INVALID_ARGUMENT);
  CHECK(beam_search(NULL, ren, 2, opts, &nopts) == TG_ERR_INVALID_ARGUMENT);

  tg_free(after);
  tg_free(stored);
  tg_free(key);
  uop_drop(ast);
}

/* A kernel that already carries opts is lowered with them: BEAM does not search it. An elementwise kernel searched
 * with BEAM=1 computes the same values. */
static void test_carried_opts_and_elementwise(void) {
  const Renderer *ren = renderer_clang();
  float x[24 * 20], got[24 * 20];
  fill(x, 24 * 20, 5);
  int64_t sh[2] = {24, 20};
  tg_scope sc = tg_scope_begin();
  tg_tensor *t = tg_mul(tg_add(tg_from_floats(x, sh, 2), tg_from_floats(x, sh, 2)), tg_from_floats(x, sh, 2));
  UOp *ast = kernel_ast_of(t);
  CHECK(ast != NULL);
  if (ast) {
    UOpScope usc = uop_scope_begin();
    Opt up = {OPT_UPCAST, 0, 4};
    UOp *carried = opt_ast_with_opts(ast, &up, 1);
    BeamStats b0 = beam_stats();
    CHECK(beam_kernel_ast(carried, ren) == carried);
    CHECK_EQ_INT(beam_stats().searches - b0.searches, 0);
    uop_scope_end(usc);
  }
  test_setenv("BEAM", "1");
  BeamStats b1 = beam_stats();
  CHECK(tg_to_host(t, got, sizeof got) == TG_OK);
  CHECK(beam_stats().searches + beam_stats().cache_hits > b1.searches + b1.cache_hits);
  int bad = 0;
  for (int i = 0; i < 24 * 20; i++) bad += got[i] != (x[i] + x[i]) * x[i];
  CHECK_EQ_INT(bad, 0);
  test_setenv("BEAM", "2");
  uop_drop(ast);
  tg_scope_end(sc);
}

/* A candidate the compiler rejects costs the search only that candidate: a compiler wrapper fails every kernel whose
 * name ends in "_4" (an upcast of 4 last), naming its file as a compiler would; the search still succeeds and picks
 * a kernel that compiled. */
static void test_compiler_rejects_some(const char *dir) {
  const Renderer *ren = renderer_clang();
  char real_cc[256], wrapper[160];
  snprintf(real_cc, sizeof real_cc, "%s", rt_compiler_command());
  char *space = strchr(real_cc, ' ');
  if (space) *space = 0;
  /* named after the real compiler, so the renderer writes its dialect (runtime rt_compiler_family reads the name) */
  const char *real_base = strrchr(real_cc, '/') ? strrchr(real_cc, '/') + 1 : real_cc;
  snprintf(wrapper, sizeof wrapper, "%s/poison-%.60s", dir, real_base);
  FILE *f = fopen(wrapper, "w");
  CHECK(f != NULL && real_cc[0]);
  if (!f || !real_cc[0]) {
    if (f) fclose(f);
    return;
  }
  fprintf(f, "#!/bin/sh\n"
             "bad=\"\"\n"
             "for a in \"$@\"; do\n"
             "  case \"$a\" in *.c) bad=\"$bad $(sed -n 's/^#line 1 \"\\(kernel[0-9]*_[A-Za-z0-9_]*_4\\.c\\)\"$/\\1/p' "
             "\"$a\")\";; esac\n"
             "done\n"
             "if [ -n \"$(echo $bad)\" ]; then\n"
             "  for n in $bad; do echo \"$n:1:1: error: rejected by the test's compiler\"; done\n"
             "  exit 1\n"
             "fi\n"
             "exec %s \"$@\"\n",
          real_cc);
  fclose(f);
  chmod(wrapper, 0700);
  SavedEnv cc = env_save("CC");
  test_setenv("CC", wrapper);
  test_setenv("IGNORE_BEAM_CACHE", "1");
  rt_shutdown(); /* CC is read again */

  float x[16 * 12];
  fill(x, 16 * 12, 9);
  tg_scope sc = tg_scope_begin();
  tg_tensor *t = tg_exp2(tg_from_floats(x, TG_SHAPE(16, 12)));
  UOp *ast = kernel_ast_of(t);
  tg_scope_end(sc);
  CHECK(ast != NULL);
  if (ast) {
    Opt opts[OPT_LIST_MAX];
    int n = -1;
    RtStats r0 = rt_stats();
    tg_status st = beam_search(ast, ren, 2, opts, &n);
    CHECK_MSG(st == TG_OK, "search with a rejecting compiler: %s", tg_last_error());
    CHECK(rt_stats().compiler_processes - r0.compiler_processes >= 3); /* batch, one file per kernel, the rest */
    if (st == TG_OK) {
      CHECK(n >= 1 && opts_valid(ast, opts, n));
      UOpScope usc = uop_scope_begin();
      UOp *lowered = cg_lower(opt_ast_with_opts(ast, opts, n), ren);
      const char *name = lowered && lowered->arg.kind == ARG_KERNEL ? lowered->arg.kernel->name : "";
      size_t len = strlen(name);
      CHECK_MSG(len > 2 && strcmp(name + len - 2, "_4") != 0, "picked %s, which the compiler rejected", name);
      uop_scope_end(usc);
    }
    uop_drop(ast);
  }
  test_unsetenv("IGNORE_BEAM_CACHE");
  env_restore(&cc);
  rt_shutdown();
  unlink(wrapper);
}

/* BEAM for CUDA times its candidates on the GPU (tests/gpu/beam_gpu.c); without one the search fails with the
 * device's error, never a CPU-timed answer */
static void check_cuda_needs_gpu(void) {
  const char *why;
  if (rt_cuda_available(&why)) return;
  UOpScope sc = uop_scope_begin();
  UOp *ast = uop_parse("(SINK.void (END.void (STORE.void (INDEX.float (PARAM.float=param:0:-:1 (@0 CAST.int "
                       "(CONST.weakint=i:64))) (@1 RANGE.int=rng:0:WEAK @0)) (CAST.float (CONST.weakfloat=f:1.0))) @1))");
  CHECK(ast != NULL);
  Opt opts[OPT_LIST_MAX];
  int n = -1;
  tg_status st = ast ? beam_search(ast, renderer_cuda(), 2, opts, &n) : TG_OK;
  CHECK_MSG(st != TG_OK && n == 0 && strstr(tg_last_error(), "CUDA"), "BEAM on CUDA without a GPU: %d %s", (int)st,
            tg_last_error());
  tg_clear_error();
  uop_scope_end(sc);
}

void suite_beam(void) {
  check_cuda_needs_gpu();
  SavedEnv saved[] = {env_save("CACHEDB"), env_save("BEAM"), env_save("IGNORE_BEAM_CACHE"), env_save("CACHELEVEL")};
  char dir[] = "/tmp/tinygrad-beam-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK_MSG(false, "mkdtemp failed");
    return;
  }
  char db[128];
  snprintf(db, sizeof db, "%s/cache.db", dir);
  test_setenv("CACHEDB", db);
  test_unsetenv("IGNORE_BEAM_CACHE");
  test_unsetenv("CACHELEVEL");
  test_setenv("BEAM", "2");
  rt_shutdown(); /* the runtime opens the new database on next use */

  test_matmul_search_and_cache();
  if (!tg_test_quick) { /* the quick tier: the search and its cache only (every search here compiles, ~25 s in all) */
    test_carried_opts_and_elementwise();
    test_compiler_rejects_some(dir);
  }

  for (size_t i = 0; i < TG_ARRAY_LEN(saved); i++) env_restore(&saved[i]);
  rt_shutdown();
  static const char *const files[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
  for (size_t i = 0; i < TG_ARRAY_LEN(files); i++) {
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}
