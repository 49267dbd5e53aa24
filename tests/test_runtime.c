/* test_runtime.c — the CPU runtime: LRU allocator and accounting, huge buffers, batch compilation in one compiler
 * process, the disk cache across two processes, compiler error reporting, the thread pool (each core_id once, truly
 * in parallel), and launch overhead (printed). Kernel sources are hand-written in the shape tinygrad renders. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "test.h"

extern char **environ;

static char test_dir[256];     /* scratch directory: the cache database, the counting compiler wrapper */
static char cache_db[300];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------------- allocator */
static void test_allocator(void) {
  rt_free_cache();
  size_t used0 = rt_mem_used();
  RtBuffer *a = NULL, *b = NULL, *c = NULL;
  CHECK(rt_buffer_new("CPU", 1000, &a) == TG_OK);
  CHECK(rt_buffer_new(NULL, 2000, &b) == TG_OK);
  CHECK_EQ_INT(rt_mem_used() - used0, 3000);
  CHECK_EQ_INT(rt_buffer_nbytes(a), 1000);
  CHECK(((uintptr_t)rt_buffer_ptr(a) & 63) == 0);
  void *pa = rt_buffer_ptr(a);
  rt_buffer_free(a);
  CHECK_EQ_INT(rt_mem_used() - used0, 2000);
  CHECK_EQ_INT(rt_mem_cached(), 1000);
  CHECK_EQ_INT(rt_mem_cached_blocks(), 1);
  /* same size: the pooled block comes back; another size: a fresh one */
  CHECK(rt_buffer_new("CPU", 1000, &c) == TG_OK);
  CHECK(rt_buffer_ptr(c) == pa);
  CHECK_EQ_INT(rt_mem_cached(), 0);
  RtBuffer *d = NULL;
  CHECK(rt_buffer_new("CPU", 999, &d) == TG_OK);
  CHECK(rt_buffer_ptr(d) != pa);
  CHECK_EQ_INT(rt_mem_used() - used0, 3999);

  /* copyin/copyout and their bounds */
  float host[250], back[250];
  for (int i = 0; i < 250; i++) host[i] = (float)i * 0.5f;
  CHECK(rt_copyin(c, 0, host, sizeof host) == TG_OK);
  CHECK(rt_copyout(c, 0, back, sizeof back) == TG_OK);
  CHECK(memcmp(host, back, sizeof host) == 0);
  CHECK(rt_copyin(c, 8, host, sizeof host) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "exceed") != NULL);
  CHECK(rt_copyout(c, 1001, back, 0) == TG_ERR_INVALID_ARGUMENT);
  CHECK(rt_copyout(c, 996, back, 4) == TG_OK);
  CHECK(back[0] == host[249]);

  /* views share memory, keep the base alive, and do not count as memory in use */
  RtBuffer *v = NULL, *vv = NULL;
  CHECK(rt_buffer_view(c, 400, 200, &v) == TG_OK);
  CHECK(rt_buffer_view(v, 100, 100, &vv) == TG_OK);
  CHECK((char *)rt_buffer_ptr(vv) == (char *)rt_buffer_ptr(c) + 500);
  RtBuffer *over = (RtBuffer *)&over;
  CHECK(rt_buffer_view(c, 900, 200, &over) == TG_ERR_INVALID_ARGUMENT && over == NULL);
  CHECK_EQ_INT(rt_mem_used() - used0, 3999);
  rt_buffer_free(c); /* the owner goes first: the views keep the block */
  CHECK_EQ_INT(rt_mem_used() - used0, 3999);
  CHECK_EQ_INT(rt_mem_cached(), 0);
  float f;
  CHECK(rt_copyout(vv, 0, &f, 4) == TG_OK);
  CHECK(f == host[125]);
  rt_buffer_free(vv);
  rt_buffer_free(v);
  CHECK_EQ_INT(rt_mem_used() - used0, 2999);
  CHECK_EQ_INT(rt_mem_cached(), 1000);

  /* zero bytes is a valid buffer; an unknown device is an error */
  RtBuffer *z = NULL, *bad = NULL;
  CHECK(rt_buffer_new("CPU", 0, &z) == TG_OK && z && rt_buffer_nbytes(z) == 0);
  CHECK(rt_copyin(z, 0, NULL, 0) == TG_OK);
  rt_buffer_free(z);
  CHECK(rt_buffer_new("METAL", 16, &bad) == TG_ERR_UNSUPPORTED && bad == NULL);
  CHECK(strstr(tg_last_error(), "METAL") != NULL);

  /* allocation failure: the pool is flushed and the request retried (LRUAllocator.alloc) */
  rt_free_cache();
  RtBuffer *p1 = NULL, *p2 = NULL, *p3 = NULL;
  CHECK(rt_buffer_new("CPU", 4096, &p1) == TG_OK);
  rt_buffer_free(p1); /* pooled: 4096 */
  rt_set_mem_limit(rt_mem_used() + 4096 + 4096);
  CHECK(rt_buffer_new("CPU", 8192, &p2) == TG_OK); /* needs the pooled 4096 released */
  CHECK_EQ_INT(rt_mem_cached(), 0);
  CHECK(rt_buffer_new("CPU", 64, &p3) == TG_ERR_OUT_OF_MEMORY && p3 == NULL);
  CHECK(strstr(tg_last_error(), "64 bytes") != NULL);
  rt_set_mem_limit(0);
  RtBuffer *huge = NULL; /* more than any machine has: an error, not a crash */
  CHECK(rt_buffer_new("CPU", (size_t)1 << 62, &huge) == TG_ERR_OUT_OF_MEMORY && huge == NULL);
  rt_buffer_free(p2);
  rt_buffer_free(b);
  rt_buffer_free(d);
  CHECK_EQ_INT(rt_mem_used(), used0);
  rt_free_cache();
  CHECK_EQ_INT(rt_mem_cached(), 0);
  rt_buffer_free(NULL);

  /* LRU=0: freed blocks go straight back to the OS */
  test_setenv("LRU", "0");
  rt_shutdown();
  RtBuffer *n1 = NULL;
  CHECK(rt_buffer_new("CPU", 1000, &n1) == TG_OK);
  rt_buffer_free(n1);
  CHECK_EQ_INT(rt_mem_cached(), 0);
  CHECK_EQ_INT(rt_mem_used(), used0);
  test_unsetenv("LRU");
  rt_shutdown();
}

static void test_huge_buffers(void) {
  size_t n = (size_t)64 << 20;
  RtBuffer *a = NULL;
  double t0 = now_s();
  CHECK(rt_buffer_new("CPU", n, &a) == TG_OK);
  if (!a) return;
  unsigned char *p = rt_buffer_ptr(a);
  CHECK(((uintptr_t)p & (RT_HUGE_THRESHOLD - 1)) == 0); /* 2 MiB aligned, so huge pages can back it */
  for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(i >> 12);
  double first = now_s() - t0;
  rt_buffer_free(a);
  RtBuffer *b = NULL;
  t0 = now_s();
  CHECK(rt_buffer_new("CPU", n, &b) == TG_OK);
  if (!b) return;
  CHECK(rt_buffer_ptr(b) == p); /* reused from the pool: no new page faults */
  unsigned char *q = rt_buffer_ptr(b);
  for (size_t i = 0; i < n; i += 4096) q[i] = (unsigned char)(q[i] + 1);
  double again = now_s() - t0;
  CHECK(q[4096 * 3] == 4 && q[n - 4096] == (unsigned char)(((n - 4096) >> 12) + 1));
  if (!tg_test_sanitized)
    printf("  runtime: 64 MiB buffer: first use %.2f ms (mmap+MADV_HUGEPAGE), reused %.2f ms\n", first * 1e3, again * 1e3);
  rt_buffer_free(b);
  rt_free_cache();
}

/* ---------------------------------------------------------------------------------------------- compiler */
static const char *SRC_SCALE =
    "void E_4(float* restrict data0_4, float* restrict data1_4, const float data2_) {\n"
    "  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {\n"
    "    *(data0_4+Lidx0) = (*(data1_4+Lidx0))*data2_;\n"
    "  }\n"
    "}\n";

static void test_compile_and_run(void) {
  RtKernelSource k = {"E_4", SRC_SCALE, NULL, NULL};
  RtProgram *p = NULL;
  CHECK(rt_compile(&k, &p) == TG_OK);
  if (!p) {
    fprintf(stderr, "  %s\n", tg_last_error());
    return;
  }
  CHECK_EQ_STR(rt_program_name(p), "E_4");
  CHECK_EQ_INT(rt_program_nparams(p), 3);
  CHECK(rt_program_param(p, 0)->is_pointer && !rt_program_param(p, 2)->is_pointer);
  CHECK_EQ_STR(rt_program_param(p, 2)->name, "data2_");
  CHECK_EQ_INT(rt_program_core_id_param(p), -1);
  float in[4] = {1, 2, 3, -4}, out[4] = {0};
  void *bufs[3] = {out, in, NULL};
  long long vals[3] = {0, 0, 3};
  double secs = -1;
  CHECK(rt_launch(p, bufs, vals, 3, -1, 1, &secs) == TG_OK);
  CHECK(secs >= 0);
  /* the float parameter received (float)3 */
  CHECK(out[0] == 3.0f && out[3] == -12.0f);
  /* interning: the same source is the same program, found without compiling */
  uint64_t gen = rt_generation();
  RtStats s0 = rt_stats();
  RtProgram *p2 = NULL;
  CHECK(rt_compile(&k, &p2) == TG_OK && p2 == p);
  CHECK_EQ_INT(rt_stats().memory_hits - s0.memory_hits, 1);
  CHECK_EQ_INT(rt_stats().compiler_processes, s0.compiler_processes);
  CHECK(rt_generation() == gen);
  /* bad launches are errors */
  CHECK(rt_launch(p, bufs, vals, 2, -1, 1, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(rt_launch(p, bufs, vals, 3, 0, 2, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(rt_launch(p, bufs, vals, 3, -1, 2, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(rt_launch(p, bufs, NULL, 3, -1, 1, NULL) == TG_ERR_INVALID_ARGUMENT);
  void *nullbufs[3] = {out, NULL, NULL};
  CHECK(rt_launch(p, nullbufs, vals, 3, -1, 1, NULL) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "NULL") != NULL);

  /* a source that brings its own fixed-ABI entry (render_c_entry's form), with typedefs and mixed scalar types */
  const char *src_entry =
      "typedef float float4 __attribute__((aligned(16),vector_size(16)));\n"
      "void k_mixed(double* restrict data0_2, const unsigned char* restrict data1_2, const long long data2_, "
      "const double data3_) {\n"
      "  for (int i = 0; i < 2; i++) data0_2[i] = (double)data1_2[i] * (double)data2_ + data3_;\n"
      "}\n"
      "void k_mixed_entry(void *const *bufs, const long long *vals);\n"
      "void k_mixed_entry(void *const *bufs, const long long *vals) {\n"
      "  k_mixed((double*)bufs[0], (const unsigned char*)bufs[1], (long long)vals[2], (double)vals[3]);\n"
      "}\n";
  RtKernelSource ke = {"k_mixed", src_entry, "k_mixed_entry", NULL};
  RtProgram *pe = NULL;
  CHECK(rt_compile(&ke, &pe) == TG_OK);
  if (pe) {
    double o[2] = {0};
    unsigned char u[2] = {200, 7};
    void *b2[4] = {o, u, NULL, NULL};
    long long v2[4] = {0, 0, 5000000000LL, -2};
    CHECK(rt_launch(pe, b2, v2, 4, -1, 1, NULL) == TG_OK);
    CHECK(o[0] == 200.0 * 5e9 - 2 && o[1] == 7.0 * 5e9 - 2);
  }
}

/* Kernels that need the compiler's helper routines (128-bit division; double -> half through float) load and run:
 * the shared object links libgcc statically, since kernels are built with -nostdlib. */
static void test_helper_routines(void) {
  RtKernelSource k = {"E_div128",
                      "void E_div128(unsigned long long* restrict d, const long long a) {\n"
                      "  unsigned __int128 x = ((unsigned __int128)(unsigned long long)a << 64) | 12345u;\n"
                      "  d[0] = (unsigned long long)(x / 1000000007u); d[1] = (unsigned long long)(x % 1000000007u);\n"
                      "}\n",
                      NULL, NULL};
  RtProgram *p = NULL;
  CHECK(rt_compile(&k, &p) == TG_OK);
  if (!p) {
    fprintf(stderr, "  %s\n", tg_last_error());
    return;
  }
  unsigned long long d[2] = {0, 0};
  void *bufs[2] = {d, NULL};
  long long vals[2] = {0, 77};
  CHECK(rt_launch(p, bufs, vals, 2, -1, 1, NULL) == TG_OK);
  u128 x = ((u128)77u << 64) | 12345u;
  CHECK(d[0] == (unsigned long long)(x / 1000000007u) && d[1] == (unsigned long long)(x % 1000000007u));
}

/* A kernel with the same name as another but a different body, both in one batch; N distinct kernels in one
 * compiler invocation, counted by a wrapper around the compiler. */
static void test_batch_one_process(void) {
  enum { N = 24 };
  char *srcs[N];
  char names[N][32];
  RtKernelSource ks[N + 1];
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "E_%d", i % 12); /* names repeat: E_0..E_11 twice */
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "void %s(int* restrict data0_1) { *data0_1 = %d; }\n", names[i], 1000 + i);
    srcs[i] = sb_take(&b);
    ks[i] = (RtKernelSource){names[i], srcs[i], NULL, NULL};
  }
  ks[N] = ks[3]; /* a duplicate request */

  /* CC = a script that logs each start, then runs the real compiler */
  char wrapper[400], log[400];
  snprintf(wrapper, sizeof wrapper, "%s/cc-count.sh", test_dir);
  snprintf(log, sizeof log, "%s/cc-count.log", test_dir);
  const char *real = getenv("CC");
  char *saved_cc = real ? tg_strdup(real) : NULL;
  FILE *f = fopen(wrapper, "w");
  CHECK(f != NULL);
  if (!f) return;
  rt_shutdown(); /* the compiler is chosen on first use: start over with the wrapper */
  const char *inner = rt_compiler_command(); /* the default choice, e.g. "clang -O2 ..." */
  char real_cc[64];
  snprintf(real_cc, sizeof real_cc, "%.*s", (int)strcspn(inner, " "), inner);
  fprintf(f, "#!/bin/sh\necho run >> '%s'\nexec %s \"$@\"\n", log, real_cc);
  fclose(f);
  chmod(wrapper, 0755);
  unlink(log);
  rt_shutdown();
  test_setenv("CC", wrapper);
  test_setenv("CACHELEVEL", "0"); /* everything must really compile */

  RtProgram *progs[N + 1] = {0};
  RtStats s0 = rt_stats();
  double t0 = now_s();
  tg_status st = rt_compile_many(ks, N + 1, progs);
  double batch_s = now_s() - t0;
  CHECK(st == TG_OK);
  if (st != TG_OK) fprintf(stderr, "  %s\n", tg_last_error());
  RtStats s1 = rt_stats();
  CHECK_EQ_INT(s1.compiler_processes - s0.compiler_processes, 1);
  CHECK_EQ_INT(s1.kernels_compiled - s0.kernels_compiled, N);
  int lines = 0;
  FILE *lf = fopen(log, "r");
  if (lf) {
    char line[64];
    while (fgets(line, sizeof line, lf)) lines++;
    fclose(lf);
  }
  CHECK_EQ_INT(lines, 1); /* counted outside: one compiler process for the whole batch */
  CHECK(progs[N] == progs[3]);
  for (int i = 0; i < N && st == TG_OK; i++) {
    int out = -1;
    void *bufs[1] = {&out};
    CHECK(rt_launch(progs[i], bufs, NULL, 1, -1, 1, NULL) == TG_OK);
    CHECK_EQ_INT(out, 1000 + i);
  }
  /* one kernel alone, for the per-invocation cost */
  char *one = tg_strdup("void E_one(int* restrict data0_1) { *data0_1 = 1; }\n");
  RtKernelSource k1 = {"E_one", one, NULL, NULL};
  RtProgram *p1 = NULL;
  t0 = now_s();
  CHECK(rt_compile(&k1, &p1) == TG_OK);
  double one_s = now_s() - t0;
  if (!tg_test_sanitized)
    printf("  runtime: compile %d kernels in one process %.1f ms; 1 kernel %.1f ms (%s)\n", N, batch_s * 1e3,
           one_s * 1e3, real_cc);
  tg_free(one);
  for (int i = 0; i < N; i++) tg_free(srcs[i]);
  rt_shutdown();
  if (saved_cc) test_setenv("CC", saved_cc);
  else test_unsetenv("CC");
  tg_free(saved_cc);
  test_unsetenv("CACHELEVEL");
  unlink(wrapper);
  unlink(log);
}

/* Kernels whose file-scope definitions clash (same helper name, different bodies; same kernel name) and kernels
 * that repeat the same vector typedef: the batch still builds, each kernel with its own definitions. */
static void test_batch_clashes(void) {
  RtKernelSource ks[3] = {
      {"E_clash", "static int helper(void) { return 11; }\nvoid E_clash(int* restrict d) { *d = helper(); }\n", NULL, NULL},
      {"E_clash", "static int helper(void) { return 22; }\nvoid E_clash(int* restrict d) { *d = helper(); }\n", NULL, NULL},
      {"E_vec", "typedef float float4 __attribute__((aligned(16),vector_size(16)));\n"
                "typedef float float4 __attribute__((aligned(16),vector_size(16)));\n"
                "void E_vec(float* restrict d) { float4 v = {1.0f, 2.0f, 3.0f, 4.0f}; *((float4*)d) = v + v; }\n", NULL, NULL},
  };
  RtProgram *out[3] = {0};
  RtStats s0 = rt_stats();
  CHECK(rt_compile_many(ks, 3, out) == TG_OK);
  RtStats s1 = rt_stats();
  CHECK(s1.compiler_processes - s0.compiler_processes <= 2); /* one TU fails on the clash; the isolated build works */
  if (!out[0] || !out[1] || !out[2]) return;
  CHECK(out[0] != out[1]);
  int a = 0, b = 0;
  void *ba[1] = {&a}, *bb[1] = {&b};
  CHECK(rt_launch(out[0], ba, NULL, 1, -1, 1, NULL) == TG_OK);
  CHECK(rt_launch(out[1], bb, NULL, 1, -1, 1, NULL) == TG_OK);
  CHECK(a == 11 && b == 22);
  _Alignas(16) float v[4] = {0};
  void *bv[1] = {v};
  CHECK(rt_launch(out[2], bv, NULL, 1, -1, 1, NULL) == TG_OK);
  CHECK(v[0] == 2.0f && v[3] == 8.0f);
}

static void test_compile_errors(void) {
  /* a syntax error: an error (not a crash) with the compiler's message, the kernel's name and its source */
  RtKernelSource ks[2] = {
      {"E_good", "void E_good(int* restrict data0_1) { *data0_1 = 5; }\n", NULL, NULL},
      {"E_bad", "void E_bad(int* restrict data0_1) {\n  *data0_1 = undefined_thing + ;\n}\n", NULL, NULL},
  };
  RtProgram *out[2] = {NULL, NULL};
  tg_status st = rt_compile_many(ks, 2, out);
  CHECK(st == TG_ERR_RUNTIME);
  CHECK(out[0] == NULL && out[1] == NULL);
  const char *msg = tg_last_error();
  CHECK(strstr(msg, "E_bad") != NULL);
  CHECK(strstr(msg, "error") != NULL);
  CHECK(strstr(rt_compile_log(), "undefined_thing + ;") != NULL); /* the source */
  CHECK(strstr(rt_compile_log(), "kernel1_E_bad.c:2") != NULL);   /* the compiler's message, at its line */
  CHECK(strstr(rt_compile_log(), "--- source of E_good") == NULL); /* the good kernel is not blamed */
  /* the good kernel alone still compiles */
  CHECK(rt_compile(&ks[0], &out[0]) == TG_OK);
  /* requests the runtime can reject before compiling */
  RtKernelSource nofn = {"E_missing", "void something_else(void) {}\n", NULL, NULL};
  CHECK(rt_compile(&nofn, &out[1]) == TG_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tg_last_error(), "E_missing") != NULL);
  RtKernelSource badname = {"1abc", "void x(void) {}\n", NULL, NULL};
  CHECK(rt_compile(&badname, &out[1]) == TG_ERR_INVALID_ARGUMENT);
  RtKernelSource nosrc = {"E_x", NULL, NULL, NULL};
  CHECK(rt_compile(&nosrc, &out[1]) == TG_ERR_INVALID_ARGUMENT);
  RtKernelSource noentry = {"E_y", "void E_y(void) {}\n", "E_y_entry", NULL}; /* names an entry it lacks */
  CHECK(rt_compile(&noentry, &out[1]) == TG_ERR_RUNTIME);
  CHECK(strstr(tg_last_error(), "E_y_entry") != NULL);
  /* a compiler that does not exist */
  const char *real = getenv("CC");
  char *saved = real ? tg_strdup(real) : NULL;
  rt_shutdown();
  test_setenv("CC", "/nonexistent/tinygrad-cc");
  test_setenv("CACHELEVEL", "0"); /* knobs are cached: test_setenv re-reads them */
  RtKernelSource k = {"E_z", "void E_z(int* restrict d) { *d = 1; }\n", NULL, NULL};
  CHECK(rt_compile(&k, &out[1]) == TG_ERR_RUNTIME);
  CHECK(strstr(tg_last_error(), "/nonexistent/tinygrad-cc") != NULL);
  rt_shutdown();
  if (saved) test_setenv("CC", saved);
  else test_unsetenv("CC");
  tg_free(saved);
  test_unsetenv("CACHELEVEL");
}

/* ---------------------------------------------------------------------------------------------- disk cache */
static const char *CACHE_SRCS[3] = {
    "void E_c0(int* restrict data0_1) { *data0_1 = 70; }\n",
    "void E_c1(int* restrict data0_1) { *data0_1 = 71; }\n",
    "void E_c2(int* restrict data0_1, const int core_id) { data0_1[core_id] = 72; }\n",
};
static const char *CACHE_NAMES[3] = {"E_c0", "E_c1", "E_c2"};

/* Compile the three cache kernels, run them; returns the number of failures. */
static int cache_kernels_run(RtProgram **progs) {
  RtKernelSource ks[3];
  for (int i = 0; i < 3; i++) ks[i] = (RtKernelSource){CACHE_NAMES[i], CACHE_SRCS[i], NULL, NULL};
  if (rt_compile_many(ks, 3, progs) != TG_OK) return 1;
  int fails = 0;
  for (int i = 0; i < 3; i++) {
    int out[4] = {0};
    void *bufs[2] = {out, NULL};
    long long vals[2] = {0, 0};
    bool threaded = i == 2;
    if (rt_launch(progs[i], bufs, vals, threaded ? 2 : 1, threaded ? 1 : -1, threaded ? 4 : 1, NULL) != TG_OK) fails++;
    if (out[0] != 70 + i || (threaded && out[3] != 72)) fails++;
  }
  return fails;
}

/* The second process: loads everything from the disk cache, starts no compiler. Exit status: failures. */
static void cache_child(void) {
  RtProgram *progs[3];
  int fails = cache_kernels_run(progs);
  RtStats s = rt_stats();
  fails += s.compiler_processes != 0;
  fails += s.disk_hits != 3;
  CHECK_EQ_INT(fails, 0);
  CHECK_EQ_INT(s.compiler_processes, 0);
  CHECK_EQ_INT(s.disk_hits, 3);
  rt_shutdown();
}

static void test_disk_cache(void) {
  rt_shutdown();
  unlink(cache_db);
  RtStats s0 = rt_stats();
  RtProgram *progs[3];
  CHECK_EQ_INT(cache_kernels_run(progs), 0);
  RtStats s1 = rt_stats();
  CHECK_EQ_INT(s1.compiler_processes - s0.compiler_processes, 1);
  CHECK_EQ_INT(s1.disk_hits - s0.disk_hits, 0);
  struct stat sb;
  CHECK(stat(cache_db, &sb) == 0);

  /* a second process (this binary, suite "runtime", in child mode) compiles nothing */
  char exe[4096], out_path[400];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  CHECK(n > 0);
  if (n <= 0) return;
  exe[n] = 0;
  snprintf(out_path, sizeof out_path, "%s/child.out", test_dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[] = {exe, (char *)"runtime", NULL};
  test_setenv("TG_RUNTIME_CACHE_CHILD", "1");
  pid_t pid;
  int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
  test_unsetenv("TG_RUNTIME_CACHE_CHILD");
  posix_spawn_file_actions_destroy(&fa);
  CHECK(rc == 0);
  int status = -1;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  bool ok = rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  CHECK_MSG(ok, "the second process did not load every kernel from the cache (see %s)", out_path);
  if (ok) unlink(out_path);

  /* and within this process after a restart: hits, no compiler */
  uint64_t gen = rt_generation();
  rt_shutdown();
  CHECK(rt_generation() == gen + 1);
  { /* programs from before the restart still run */
    int out[4] = {0};
    void *bufs[2] = {out, NULL};
    CHECK(rt_launch(progs[0], bufs, NULL, 1, -1, 1, NULL) == TG_OK);
    CHECK_EQ_INT(out[0], 70);
  }
  RtStats s2 = rt_stats();
  CHECK_EQ_INT(cache_kernels_run(progs), 0);
  RtStats s3 = rt_stats();
  CHECK_EQ_INT(s3.compiler_processes - s2.compiler_processes, 0);
  CHECK_EQ_INT(s3.disk_hits - s2.disk_hits, 3);

  /* kernels from two different cached libraries in one call: each library is loaded as its own object (they share
   * symbol names, tg_e0, so any mix-up shows in the results) */
  rt_shutdown();
  RtKernelSource ka = {"E_la", "void E_la(int* restrict d) { *d = 501; }\n", NULL, NULL};
  RtKernelSource kb = {"E_lb", "void E_lb(int* restrict d) { *d = 502; }\n", NULL, NULL};
  RtProgram *pa = NULL, *pb = NULL;
  CHECK(rt_compile(&ka, &pa) == TG_OK && rt_compile(&kb, &pb) == TG_OK);
  rt_shutdown();
  RtKernelSource kab[2] = {ka, kb};
  RtProgram *pab[2] = {NULL, NULL};
  RtStats s5 = rt_stats();
  CHECK(rt_compile_many(kab, 2, pab) == TG_OK);
  CHECK_EQ_INT(rt_stats().disk_hits - s5.disk_hits, 2);
  if (pab[0] && pab[1]) {
    int ra = 0, rb = 0;
    void *ba[1] = {&ra}, *bb[1] = {&rb};
    CHECK(rt_launch(pab[0], ba, NULL, 1, -1, 1, NULL) == TG_OK && rt_launch(pab[1], bb, NULL, 1, -1, 1, NULL) == TG_OK);
    CHECK_EQ_INT(ra, 501);
    CHECK_EQ_INT(rb, 502);
  }
  s3 = rt_stats();

  /* CACHELEVEL=0: compiles again and leaves the database alone */
  rt_shutdown();
  test_setenv("CACHELEVEL", "0");
  CHECK_EQ_INT(cache_kernels_run(progs), 0);
  RtStats s4 = rt_stats();
  CHECK_EQ_INT(s4.compiler_processes - s3.compiler_processes, 1);
  CHECK_EQ_INT(s4.disk_hits - s3.disk_hits, 0);
  test_unsetenv("CACHELEVEL");

  /* a cache file that cannot be opened: compiling still works, without the cache */
  rt_shutdown();
  test_setenv("CACHEDB", "/proc/tinygrad-no-such-dir/cache.db");
  CHECK_EQ_INT(cache_kernels_run(progs), 0);
  RtStats s6 = rt_stats();
  CHECK_EQ_INT(s6.compiler_processes - s4.compiler_processes, 1);
  test_setenv("CACHEDB", cache_db);
  rt_shutdown();
}

/* ---------------------------------------------------------------------------------------------- thread pool */
static void test_thread_pool(void) {
  /* every core id runs exactly once, for more pieces than threads */
  RtKernelSource k = {"E_cores", "void E_cores(int* restrict data0, const int core_id) { data0[core_id] += 1; }\n", NULL, NULL};
  RtProgram *p = NULL;
  CHECK(rt_compile(&k, &p) == TG_OK);
  if (!p) return;
  CHECK_EQ_INT(rt_program_core_id_param(p), 1);
  int counts[37] = {0};
  void *bufs[2] = {counts, NULL};
  long long vals[2] = {0, -1};
  for (int rep = 0; rep < 50; rep++) CHECK(rt_launch(p, bufs, vals, 2, 1, 37, NULL) == TG_OK);
  int wrong = 0;
  for (int i = 0; i < 37; i++) wrong += counts[i] != 50;
  CHECK_EQ_INT(wrong, 0);
  CHECK(vals[1] == -1); /* the caller's array is not written */

  /* the pieces really run at the same time: each piece waits (bounded) until all have started */
  int threads = rt_num_threads();
  CHECK(threads >= 1);
  const char *rendezvous =
      "void E_meet(int* restrict data0, int* restrict data1, const int n, const int core_id) {\n"
      "  __atomic_fetch_add(&data0[0], 1, __ATOMIC_SEQ_CST);\n"
      "  long spins = 0;\n"
      "  while (__atomic_load_n(&data0[0], __ATOMIC_SEQ_CST) < n && spins < 2000000000L) spins++;\n"
      "  data1[core_id] = __atomic_load_n(&data0[0], __ATOMIC_SEQ_CST) >= n;\n"
      "}\n";
  RtKernelSource km = {"E_meet", rendezvous, NULL, NULL};
  RtProgram *pm = NULL;
  CHECK(rt_compile(&km, &pm) == TG_OK);
  if (pm && threads >= 2) {
    int arrived = 0, met[2] = {0, 0};
    void *b2[4] = {&arrived, met, NULL, NULL};
    long long v2[4] = {0, 0, 2, 0};
    CHECK(rt_launch(pm, b2, v2, 4, 3, 2, NULL) == TG_OK);
    CHECK(met[0] == 1 && met[1] == 1);
  }

  /* speedup on a compute-bound kernel (printed; the machine is shared, so not a pass/fail figure) */
  const char *heavy =
      "void r_heavy(float* restrict data0, const int pieces, const int core_id) {\n"
      "  float acc = 0.0f; int n = 80000000 / pieces;\n"
      "  for (int i = 0; i < n; i++) acc = acc * 0.999999f + 1.0f;\n"
      "  data0[core_id] = acc;\n"
      "}\n";
  RtKernelSource kh = {"r_heavy", heavy, NULL, NULL};
  RtProgram *ph = NULL;
  CHECK(rt_compile(&kh, &ph) == TG_OK);
  if (ph && !tg_test_sanitized && threads >= 2) {
    float outs[64];
    void *b3[3] = {outs, NULL, NULL};
    long long v1[3] = {0, 1, 0}, vn[3] = {0, threads, 0};
    double t1 = 0, tn = 0;
    CHECK(rt_launch(ph, b3, v1, 3, 2, 1, &t1) == TG_OK);
    CHECK(rt_launch(ph, b3, vn, 3, 2, threads, &tn) == TG_OK);
    printf("  runtime: compute kernel on 1 core %.1f ms, split over %d cores %.1f ms (speedup %.2fx)\n", t1 * 1e3,
           threads, tn * 1e3, t1 / tn);
  }

  /* launch overhead of a cached 1-element kernel: a direct call, and through the pool */
  RtKernelSource k1 = {"E_1", "void E_1(float* restrict data0_1, float* restrict data1_1) { *data0_1 = *data1_1 + 1.0f; }\n",
                       NULL, NULL};
  RtProgram *p1 = NULL;
  CHECK(rt_compile(&k1, &p1) == TG_OK);
  if (p1) {
    float a = 1, b = 0;
    void *b1[2] = {&b, &a};
    int iters = tg_test_sanitized ? 2000 : 200000;
    double t0 = now_s(), inside = 0, s;
    for (int i = 0; i < iters; i++) {
      rt_launch(p1, b1, NULL, 2, -1, 1, &s);
      inside += s;
    }
    double per = (now_s() - t0) / iters;
    CHECK(b == 2.0f);
    CHECK(per < 20e-6);
    int pool_iters = tg_test_sanitized ? 200 : 20000;
    t0 = now_s();
    for (int i = 0; i < pool_iters; i++) rt_launch(p, bufs, vals, 2, 1, threads, NULL);
    double per_pool = (now_s() - t0) / pool_iters;
    if (!tg_test_sanitized)
      printf("  runtime: launch overhead, cached 1-element kernel: %.3f us (timed inside %.3f us); "
             "split over %d cores: %.2f us\n", per * 1e6, inside / iters * 1e6, threads, per_pool * 1e6);
  }
}

void suite_runtime(void) {
  const char *tmp = getenv("TMPDIR");
  if (getenv("TG_RUNTIME_CACHE_CHILD")) { /* the second process of test_disk_cache; CACHEDB is inherited */
    cache_child();
    return;
  }
  snprintf(test_dir, sizeof test_dir, "%s/tg-rt-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK(mkdtemp(test_dir) != NULL);
  snprintf(cache_db, sizeof cache_db, "%s/cache.db", test_dir);
  /* the user's knobs must not change what the tests expect: saved, cleared, restored at the end */
  static const char *const knobs[] = {"CACHEDB", "CACHELEVEL", "LRU"};
  char *saved[TG_ARRAY_LEN(knobs)];
  for (size_t i = 0; i < TG_ARRAY_LEN(knobs); i++) {
    const char *v = getenv(knobs[i]);
    saved[i] = v ? tg_strdup(v) : NULL;
    test_unsetenv(knobs[i]);
  }
  test_setenv("CACHEDB", cache_db);
  rt_shutdown();

  test_allocator();
  test_huge_buffers();
  test_compile_and_run();
  test_batch_one_process();
  test_batch_clashes();
  test_helper_routines();
  test_compile_errors();
  test_disk_cache();
  test_thread_pool();

  rt_shutdown();
  for (size_t i = 0; i < TG_ARRAY_LEN(knobs); i++) {
    if (saved[i]) test_setenv(knobs[i], saved[i]);
    else test_unsetenv(knobs[i]);
    tg_free(saved[i]);
  }
  char p[400];
  const char *leftovers[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
  for (size_t i = 0; i < TG_ARRAY_LEN(leftovers); i++) {
    snprintf(p, sizeof p, "%s/%s", test_dir, leftovers[i]);
    unlink(p);
  }
  rmdir(test_dir);
}
