/* compile.c — C source to callable kernels: one compiler process per batch, dlopen, dlsym, interning, disk cache.
 *
 * tinygrad's ClangCompiler flags (-O2 -fPIC -ffreestanding -fno-math-errno -nostdlib -march=native; no fast-math, so
 * numerics match tinygrad's) plus -shared. All kernels of a batch go into ONE translation unit and one compiler
 * invocation that links one shared object; each kernel's section renames its kernel (and entry) symbol with a
 * per-section prefix, so different kernels may share a name, and ends with a fixed-ABI entry when the caller gives
 * none:
 *     void tg_e<i>(void *const *bufs, const long long *vals) { <name>(bufs[0], (const int)vals[1], ...); }
 * If that unit fails (a broken kernel, or kernels whose file-scope helpers clash), the same invocation is repeated
 * with one file per kernel, which tells the two apart. `#line` names every section "kernel<i>_<name>.c", so the
 * compiler's messages point at the kernel and its line. Loaded programs are interned by their key text; the disk
 * cache (diskcache.c) stores each shared object and maps kernel keys to it, so a warm process spawns nothing. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

extern char **environ;

#define RT_ABI "rt1"

static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the compiler command ---- */
typedef TG_VEC(char *) WordVec;
static WordVec cc_words;     /* CC split on spaces, then the flags (without -o and files) */
static char *cc_command;     /* the words joined: part of every key */
static RtCompilerFamily cc_family;

/* The file a program name runs (heap string), looked up on PATH unless it holds a '/'; NULL when there is none. */
static char *find_program(const char *prog) {
  if (strchr(prog, '/')) return access(prog, X_OK) == 0 ? tg_strdup(prog) : NULL;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  for (const char *p = path;;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%.*s/%s", (int)n, n ? p : ".", prog);
    if (access(b.s, X_OK) == 0) return sb_take(&b);
    sb_free(&b);
    if (!end) return NULL;
    p = end + 1;
  }
}

static bool on_path(const char *prog) {
  char *found = find_program(prog);
  bool ok = found != NULL;
  tg_free(found);
  return ok;
}

/* The family a program name says: "clang", "/usr/bin/clang-14" -> clang; "gcc-12", "x86_64-linux-gnu-gcc" -> gcc. */
static RtCompilerFamily family_of_name(const char *path) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (strstr(base, "clang")) return RT_COMPILER_CLANG;
  if (strstr(base, "gcc")) return RT_COMPILER_GCC;
  return RT_COMPILER_OTHER;
}

/* The compiler's family from its words ("ccache gcc" is gcc): a word's own name, else the file it resolves to
 * through PATH and symlinks (Debian's cc -> /etc/alternatives/cc -> x86_64-linux-gnu-gcc-12). A wrapper script or
 * an unknown name is OTHER: the renderer then writes tinygrad's clang text, as for the default compiler. */
static RtCompilerFamily family_of_words(const WordVec *words) {
  for (size_t i = 0; i < words->len; i++) {
    const char *w = words->data[i];
    RtCompilerFamily f = family_of_name(w);
    if (f != RT_COMPILER_OTHER) return f;
    char *found = find_program(w);
    char *real = found ? realpath(found, NULL) : NULL;
    f = real ? family_of_name(real) : RT_COMPILER_OTHER;
    free(real);
    tg_free(found);
    if (f != RT_COMPILER_OTHER) return f;
  }
  return RT_COMPILER_OTHER;
}

static bool compiler_init(void) {
  if (cc_command) return true;
  const char *cc = getenv("CC");
  char *chosen = NULL;
  if (cc && *cc) chosen = tg_strdup(cc);
  else if (on_path("clang")) chosen = tg_strdup("clang");
  else if (on_path("gcc")) chosen = tg_strdup("gcc");
  else if (on_path("cc")) chosen = tg_strdup("cc");
  if (!chosen) {
    tg_set_error(TG_ERR_RUNTIME, "rt_compile: no C compiler found (clang, gcc or cc on PATH); set CC");
    return false;
  }
  for (char *tok = strtok(chosen, " \t"); tok; tok = strtok(NULL, " \t")) tg_vec_push(&cc_words, tg_strdup(tok));
  tg_free(chosen);
  if (cc_words.len == 0) {
    tg_set_error(TG_ERR_RUNTIME, "rt_compile: CC is blank");
    return false;
  }
  cc_family = family_of_words(&cc_words);
  bool is_clang = cc_family == RT_COMPILER_CLANG;
  static const char *const flags[] = {"-O2", "-fPIC", "-ffreestanding", "-fno-math-errno", "-nostdlib",
#if defined(__aarch64__)
                                      "-mcpu=native",
#else
                                      "-march=native",
#endif
                                      "-shared"};
  for (size_t i = 0; i < TG_ARRAY_LEN(flags); i++) tg_vec_push(&cc_words, tg_strdup(flags[i]));
#if defined(__x86_64__)
  /* -march=native on an AVX-512 core still prefers 256-bit vectors; the codegen tiles kernels to the full register
   * (render: vector_bytes), and measured here the SLP vectorizer then keeps 512-bit FMAs only with this flag */
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) tg_vec_push(&cc_words, tg_strdup("-mprefer-vector-width=512"));
#endif
  /* gcc contracts a*b+c into fma across statements by default; clang (tinygrad's compiler) only within one
   * expression. Without contraction gcc's results are the IEEE ones. */
  if (!is_clang) tg_vec_push(&cc_words, tg_strdup("-ffp-contract=off"));
  /* gcc 12's loop vectorizer miscompiles if-converted loops of gated loads (masked loads at negative offsets: the
   * weight gradient of a padded conv2d, r_2_2_3_3_4_4 of grad_parity's conv2d_f64, came out 0 instead of -10.875
   * with -O2 -march=native, right with -O1, -O0 or clang). Without if-conversion gcc keeps the branches. */
  if (cc_family == RT_COMPILER_GCC) tg_vec_push(&cc_words, tg_strdup("-fno-tree-loop-if-convert"));
  /* clang-14 and gcc-12 reject __bf16 on x86. After the renderer's extra rules a bfloat16 is only loaded, stored and
   * bit-cast (its math is float32 bit manipulation), so its 16 bits as an unsigned short are exact. */
  tg_vec_push(&cc_words, tg_strdup("-D__bf16=unsigned short"));
  StrBuf b;
  sb_init(&b);
  for (size_t i = 0; i < cc_words.len; i++) sb_printf(&b, "%s%s", i ? " " : "", cc_words.data[i]);
  cc_command = sb_take(&b);
  return true;
}

const char *rt_compiler_command(void) {
  pthread_mutex_lock(&compile_lock);
  bool ok = compiler_init();
  pthread_mutex_unlock(&compile_lock);
  return ok ? cc_command : "";
}

RtCompilerFamily rt_compiler_family(void) {
  pthread_mutex_lock(&compile_lock);
  RtCompilerFamily f = compiler_init() ? cc_family : RT_COMPILER_OTHER;
  pthread_mutex_unlock(&compile_lock);
  return f;
}

/* ---- interned programs, loaded libraries, stats ---- */
static RtProgram **prog_table;
static size_t prog_cap, prog_count;
typedef struct LoadedLib {
  int64_t cache_id;   /* its id in the disk cache, -1 when not stored */
  void *handle;
  int fd;             /* the memfd it was loaded from when kept open (its /proc path must stay unique), or -1 */
} LoadedLib;
static TG_VEC(LoadedLib) libs;
/* Forgotten by rt_shutdown but still valid: the programs may be cached by callers, so nothing is unloaded. */
static TG_VEC(RtProgram *) retired_progs;
static TG_VEC(LoadedLib) retired_libs;
static RtStats stats;
static char *last_log;

static uint64_t key_hash(const char *key) { return tg_hash_bytes(key, strlen(key), 0x7a11c0de); }

static RtProgram *prog_find(const char *key) {
  if (!prog_cap) return NULL;
  for (size_t j = key_hash(key) & (prog_cap - 1);; j = (j + 1) & (prog_cap - 1)) {
    if (!prog_table[j]) return NULL;
    if (strcmp(prog_table[j]->key, key) == 0) return prog_table[j];
  }
}

static void prog_insert(RtProgram *p) {
  if ((prog_count + 1) * 2 > prog_cap) {
    RtProgram **old = prog_table;
    size_t old_cap = prog_cap;
    prog_cap = prog_cap ? prog_cap * 2 : 64;
    prog_table = tg_calloc(prog_cap, sizeof *prog_table);
    for (size_t i = 0; i < old_cap; i++) {
      if (!old[i]) continue;
      size_t j = key_hash(old[i]->key) & (prog_cap - 1);
      while (prog_table[j]) j = (j + 1) & (prog_cap - 1);
      prog_table[j] = old[i];
    }
    tg_free(old);
  }
  size_t j = key_hash(p->key) & (prog_cap - 1);
  while (prog_table[j]) j = (j + 1) & (prog_cap - 1);
  prog_table[j] = p;
  prog_count++;
}

static void prog_free(RtProgram *p) {
  tg_free(p->key);
  tg_free(p->name);
  tg_free(p->params);
  tg_free(p);
}

/* ---- the kernel's signature ---- */
typedef RtParsedParam ParsedParam;
typedef RtParsedParams ParsedParams;

static bool is_ident_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool rt_is_identifier(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!is_ident_char(*s)) return false;
  return true;
}

static char *trimmed_copy(const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  char *out = tg_malloc(n + 1);
  memcpy(out, s, n);
  out[n] = 0;
  return out;
}

void rt_parsed_free(ParsedParams *ps) {
  for (size_t i = 0; i < ps->len; i++) tg_free(ps->data[i].type), tg_free(ps->data[i].name);
  tg_vec_free(ps);
}

/* Find the definition `name(...)` (the first whole-word `name` followed by '(') and split its parameters. */
tg_status rt_parse_signature(const char *name, const char *src, ParsedParams *out) {
  size_t nl = strlen(name);
  const char *open = NULL;
  for (const char *p = strstr(src, name); p; p = strstr(p + 1, name)) {
    if (p > src && is_ident_char(p[-1])) continue;
    if (is_ident_char(p[nl])) continue;
    const char *q = p + nl;
    while (*q == ' ' || *q == '\t' || *q == '\n') q++;
    if (*q == '(') {
      open = q;
      break;
    }
  }
  if (!open)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': no function '%s(' in its source", name, name);
  int depth = 0;
  const char *start = open + 1, *p = open + 1;
  for (;; p++) {
    if (!*p) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': unterminated parameter list", name);
    if (*p == '(' || *p == '[') depth++;
    else if ((*p == ')' || *p == ']') && depth > 0) depth--;
    else if ((*p == ',' || *p == ')') && depth == 0) {
      char *text = trimmed_copy(start, (size_t)(p - start));
      bool empty = !*text || strcmp(text, "void") == 0;
      if (empty && (*p == ',' || out->len)) {
        tg_free(text);
        rt_parsed_free(out);
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': empty parameter", name);
      }
      if (!empty) {
        size_t n = strlen(text), k = n;
        while (k && is_ident_char(text[k - 1])) k--;
        if (k == 0 || k == n || (text[k] >= '0' && text[k] <= '9')) {
          tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': cannot read parameter '%s'", name, text);
          tg_free(text);
          rt_parsed_free(out);
          return TG_ERR_INVALID_ARGUMENT;
        }
        ParsedParam pp = {strchr(text, '*') != NULL, trimmed_copy(text, k), tg_strdup(text + k)};
        tg_vec_push(out, pp);
        if (out->len > RT_MAX_PARAMS) {
          tg_free(text);
          rt_parsed_free(out);
          return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': more than %d parameters", name,
                              RT_MAX_PARAMS);
        }
      }
      tg_free(text);
      if (*p == ')') break;
      start = p + 1;
    }
  }
  return TG_OK;
}

/* The width of a scalar parameter's C type, by its words: what the renderers write ("const int", "unsigned int",
 * "long long", "unsigned char", "_Bool", "half", "float"). */
int rt_scalar_type_bytes(const char *type) {
  int longs = 0, bytes = 0;
  char word[64];
  for (const char *p = type; *p;) {
    while (*p && !is_ident_char(*p)) p++;
    size_t n = 0;
    while (is_ident_char(*p)) {
      if (n + 1 < sizeof word) word[n++] = *p;
      p++;
    }
    word[n] = 0;
    if (!n || !strcmp(word, "const") || !strcmp(word, "volatile") || !strcmp(word, "unsigned") ||
        !strcmp(word, "signed") || !strcmp(word, "restrict") || !strcmp(word, "__restrict__"))
      continue;
    if (!strcmp(word, "long")) longs++;
    else if (!strcmp(word, "char") || !strcmp(word, "bool") || !strcmp(word, "_Bool")) bytes = 1;
    else if (!strcmp(word, "short") || !strcmp(word, "half") || !strcmp(word, "__fp16")) bytes = 2;
    else if (!strcmp(word, "int") || !strcmp(word, "uint") || !strcmp(word, "float")) bytes = bytes ? bytes : 4;
    else if (!strcmp(word, "double") || !strcmp(word, "size_t")) bytes = 8;
    else return 0;
  }
  if (longs) return 8;
  if (!bytes && strstr(type, "unsigned")) return 4; /* plain "unsigned" */
  return bytes;
}

/* ---- loading ----
 * A library is loaded from its bytes. glibc's dlopen recognizes an already-loaded object by its path, so a path
 * reused for a second library would hand back the first one. Every load uses a new name: the bytes go into an
 * in-memory file (memfd, executable even where /tmp is mounted noexec) opened through a symlink named by pid and a
 * counter that never repeats (removed right after dlopen, the descriptor closed); when no symlink can be made, as
 * /proc/self/fd/<n> with the descriptor kept open so <n> is never reused; without memfd, from a temporary file named
 * like the symlink. Libraries are never unloaded, so programs stay valid. */
static bool write_all(int fd, const unsigned char *bytes, size_t len, StrBuf *err) {
  for (size_t done = 0; done < len;) {
    ssize_t w = write(fd, bytes + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      sb_printf(err, "writing a kernel library: %s", strerror(errno));
      return false;
    }
    done += (size_t)w;
  }
  return true;
}

static bool lib_open_bytes(const unsigned char *bytes, size_t len, int64_t cache_id, StrBuf *err) {
  static unsigned long temp_counter;
  char path[4096];
  LoadedLib l = {cache_id, NULL, memfd_create("tinygrad-kernels", MFD_CLOEXEC)};
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  if (l.fd >= 0) {
    char fd_path[64];
    snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", l.fd);
    /* preferably through a uniquely named symlink, so the descriptor can be closed afterwards */
    snprintf(path, sizeof path, "%s/tinygrad-c-%ld-%lu.so", tmp, (long)getpid(), ++temp_counter);
    bool linked = symlink(fd_path, path) == 0;
    if (write_all(l.fd, bytes, len, err) && !(l.handle = dlopen(linked ? path : fd_path, RTLD_NOW | RTLD_LOCAL)))
      sb_printf(err, "dlopen: %s", dlerror());
    if (linked) unlink(path);
    if (!l.handle || linked) {
      close(l.fd);
      l.fd = -1;
    }
  } else {
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 1000; tries++) {
      snprintf(path, sizeof path, "%s/tinygrad-c-%ld-%lu.so", tmp, (long)getpid(), ++temp_counter);
      fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      sb_printf(err, "cannot create a file for a kernel library: %s", strerror(errno));
      return false;
    }
    bool written = write_all(fd, bytes, len, err);
    close(fd);
    if (written && !(l.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) sb_printf(err, "dlopen: %s", dlerror());
    unlink(path);
  }
  if (!l.handle) return false;
  tg_vec_push(&libs, l);
  return true;
}

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = tg_malloc(1);
  size_t used = 0, cap = 1, n;
  char chunk[65536];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (used + n + 1 > cap) {
      while (used + n + 1 > cap) cap *= 2;
      buf = tg_realloc(buf, cap);
    }
    memcpy(buf + used, chunk, n);
    used += n;
  }
  fclose(f);
  buf[used] = 0;
  *len = used;
  return buf;
}

static RtProgram *program_from(void *handle, const char *symbol, const char *key, const RtKernelSource *ks,
                               const ParsedParams *ps) {
  const char *name = ks->name, *core_name = ks->core_param ? ks->core_param : "core_id";
  void *sym = dlsym(handle, symbol);
  if (!sym) return NULL;
  RtProgram *p = tg_calloc(1, sizeof *p);
  memcpy(&p->entry, &sym, sizeof p->entry); /* POSIX: a dlsym'ed function pointer round-trips through void * */
  p->key = tg_strdup(key);
  p->name = tg_strdup(name);
  p->ops = &rt_cpu_ops;
  p->nparams = (int)ps->len;
  p->params = tg_calloc(ps->len ? ps->len : 1, sizeof *p->params);
  p->core_id_param = -1;
  for (size_t i = 0; i < ps->len; i++) {
    p->params[i].is_pointer = ps->data[i].is_pointer;
    p->params[i].value_bytes = ps->data[i].is_pointer ? 8 : rt_scalar_type_bytes(ps->data[i].type);
    snprintf(p->params[i].name, sizeof p->params[i].name, "%s", ps->data[i].name);
    if (!ps->data[i].is_pointer && strcmp(ps->data[i].name, core_name) == 0) p->core_id_param = (int)i;
  }
  return p;
}

static void *cached_lib(int64_t id) {
  for (size_t i = 0; i < libs.len; i++)
    if (libs.data[i].cache_id == id) return libs.data[i].handle;
  size_t len = 0;
  unsigned char *bytes = rt_diskcache_load_lib(id, &len);
  if (!bytes) return NULL;
  StrBuf err;
  sb_init(&err);
  bool ok = lib_open_bytes(bytes, len, id, &err);
  tg_free(bytes);
  if (!ok && tg_debug_level() >= 1) fprintf(stderr, "tinygrad.c: cached kernel library unusable (%s)\n", err.s);
  sb_free(&err);
  return ok ? libs.data[libs.len - 1].handle : NULL;
}

/* ---- one compiler invocation ---- */
typedef struct Request {
  const RtKernelSource *ks;
  ParsedParams params;
  char *key;
  RtProgram *prog;
  int miss_index;   /* index among the kernels compiled now, or -1 */
} Request;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void write_kernel_file(FILE *f, const Request *r, int idx) {
  const RtKernelSource *ks = r->ks;
  fprintf(f, "#define %s tg_k%d_%s\n", ks->name, idx, ks->name);
  if (ks->entry) fprintf(f, "#define %s tg_e%d\n", ks->entry, idx);
  fprintf(f, "#line 1 \"kernel%d_%s.c\"\n%s\n", idx, ks->name, ks->src);
  if (ks->entry) return;
  fprintf(f, "\nvoid tg_e%d(void *const *bufs, const long long *vals);\n", idx);
  fprintf(f, "void tg_e%d(void *const *bufs, const long long *vals) {\n  (void)bufs; (void)vals;\n  %s(", idx, ks->name);
  for (size_t i = 0; i < r->params.len; i++) {
    const ParsedParam *pp = &r->params.data[i];
    if (pp->is_pointer) fprintf(f, "%s(%s)bufs[%zu]", i ? ", " : "", pp->type, i);
    else fprintf(f, "%s(%s)vals[%zu]", i ? ", " : "", pp->type, i);
  }
  fprintf(f, ");\n}\n");
}

/* One kernel's section of a batch source: its symbols renamed for the section, then released again. */
static void write_kernel_section(FILE *f, const Request *r, int idx) {
  write_kernel_file(f, r, idx);
  fprintf(f, "#undef %s\n", r->ks->name);
  if (r->ks->entry) fprintf(f, "#undef %s\n", r->ks->entry);
}

static void remove_tree(const char *dir, int nfiles) {
  char path[4096];
  for (int i = 0; i < nfiles; i++) {
    snprintf(path, sizeof path, "%s/k%d.c", dir, i);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/batch.c", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/lib.so", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/cc.log", dir);
  unlink(path);
  rmdir(dir);
}

/* The failure message: the compiler's output, then the source of each kernel it names (all when it names none). */
static tg_status compile_failed(Request **miss, int nmiss, const char *what, const char *log) {
  StrBuf m;
  sb_init(&m);
  bool any_named = false;
  char tag[300];
  for (int i = 0; i < nmiss; i++) {
    snprintf(tag, sizeof tag, "kernel%d_%s.c", i, miss[i]->ks->name);
    any_named |= log && strstr(log, tag) != NULL;
  }
  sb_printf(&m, "rt_compile: %s (%s) on ", what, cc_command);
  for (int i = 0, first = 1; i < nmiss; i++) {
    snprintf(tag, sizeof tag, "kernel%d_%s.c", i, miss[i]->ks->name);
    if (any_named && !strstr(log, tag)) continue;
    sb_printf(&m, "%s%s", first ? "" : ", ", miss[i]->ks->name);
    first = 0;
  }
  sb_printf(&m, ":\n%s", log && *log ? log : "(no compiler output)\n");
  for (int i = 0; i < nmiss; i++) {
    snprintf(tag, sizeof tag, "kernel%d_%s.c", i, miss[i]->ks->name);
    if (any_named && !strstr(log, tag)) continue;
    sb_printf(&m, "--- source of %s (%s) ---\n%s\n", miss[i]->ks->name, tag, miss[i]->ks->src);
  }
  tg_free(last_log);
  last_log = sb_take(&m);
  return tg_set_error(TG_ERR_RUNTIME, "%s", last_log);
}

/* Run the compiler once on the batch: one translation unit (batch.c) with every kernel, or one file per kernel
 * (isolated: a kernel's file-scope definitions cannot meet another's). Returns TG_OK with lib.so in dir. */
static tg_status run_compiler(Request **miss, int nmiss, const char *dir, bool isolated) {
  char path[4200], so_path[4200], log_path[4200];
  snprintf(so_path, sizeof so_path, "%s/lib.so", dir);
  snprintf(log_path, sizeof log_path, "%s/cc.log", dir);
  WordVec argv = {0};
  for (size_t i = 0; i < cc_words.len; i++) tg_vec_push(&argv, cc_words.data[i]);
  int nfiles = isolated ? nmiss : 1;
  char **owned = tg_calloc((size_t)nfiles, sizeof *owned);
  tg_status st = TG_OK;
  for (int i = 0; i < nfiles && st == TG_OK; i++) {
    if (isolated) snprintf(path, sizeof path, "%s/k%d.c", dir, i);
    else snprintf(path, sizeof path, "%s/batch.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
      st = tg_set_error(TG_ERR_RUNTIME, "rt_compile: cannot write %s: %s", path, strerror(errno));
      break;
    }
    if (isolated) write_kernel_file(f, miss[i], i);
    else
      for (int k = 0; k < nmiss; k++) write_kernel_section(f, miss[k], k);
    bool write_ok = !ferror(f);
    if (fclose(f) != 0 || !write_ok) st = tg_set_error(TG_ERR_RUNTIME, "rt_compile: cannot write %s", path);
    owned[i] = tg_strdup(path);
    tg_vec_push(&argv, owned[i]);
  }
  char dash_o[] = "-o", dash_lgcc[] = "-lgcc"; /* libgcc: helper routines (128-bit division, half conversions) */
  tg_vec_push(&argv, dash_o);
  tg_vec_push(&argv, so_path);
  tg_vec_push(&argv, dash_lgcc);
  tg_vec_push(&argv, NULL);

  int rc = 0, status = 0;
  if (st == TG_OK) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    double t0 = now_seconds();
    pid_t pid;
    rc = posix_spawnp(&pid, argv.data[0], &fa, NULL, argv.data, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == 0) {
      stats.compiler_processes++;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    }
    stats.compile_seconds += now_seconds() - t0;
  }
  for (int i = 0; i < nfiles; i++) tg_free(owned[i]);
  tg_free(owned);
  tg_vec_free(&argv);
  if (st != TG_OK) return st;

  size_t log_len = 0;
  char *log = (char *)read_file(log_path, &log_len);
  if (rc != 0) {
    char what[256];
    snprintf(what, sizeof what, "cannot start the compiler '%s': %s", cc_words.data[0], strerror(rc));
    st = compile_failed(miss, nmiss, what, log);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char what[64];
    if (WIFEXITED(status)) snprintf(what, sizeof what, "compiler failed with exit code %d", WEXITSTATUS(status));
    else snprintf(what, sizeof what, "compiler killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    st = compile_failed(miss, nmiss, what, log);
  }
  tg_free(log);
  return st;
}

static tg_status compile_batch(Request **miss, int nmiss) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096], so_path[4200];
  snprintf(dir, sizeof dir, "%s/tinygrad-c-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return tg_set_error(TG_ERR_RUNTIME, "rt_compile: cannot create a temporary directory: %s", strerror(errno));
  snprintf(so_path, sizeof so_path, "%s/lib.so", dir);
  /* One translation unit is 10x faster than one file per kernel (clang: 60 ms vs 900 ms for 24 small kernels), but
   * kernels with clashing file-scope definitions (or one broken kernel) fail it: then the isolated build decides. */
  tg_status st = run_compiler(miss, nmiss, dir, false);
  if (st == TG_ERR_RUNTIME && nmiss > 1) st = run_compiler(miss, nmiss, dir, true);
  if (st != TG_OK) {
    remove_tree(dir, nmiss);
    return st;
  }

  size_t so_len = 0;
  unsigned char *so_bytes = read_file(so_path, &so_len);
  remove_tree(dir, nmiss);
  StrBuf err;
  sb_init(&err);
  if (!so_bytes || !lib_open_bytes(so_bytes, so_len, -1, &err)) {
    st = tg_set_error(TG_ERR_RUNTIME, "rt_compile: loading the compiled kernels failed: %s",
                      so_bytes ? err.s : "the compiler wrote no library");
    sb_free(&err);
    tg_free(so_bytes);
    return st;
  }
  sb_free(&err);
  void *h = libs.data[libs.len - 1].handle;
  stats.kernels_compiled += nmiss;

  const char **keys = tg_calloc((size_t)nmiss, sizeof *keys), **syms = tg_calloc((size_t)nmiss, sizeof *syms);
  char (*sym_names)[32] = tg_calloc((size_t)nmiss, sizeof *sym_names);
  for (int i = 0; i < nmiss && st == TG_OK; i++) {
    snprintf(sym_names[i], sizeof sym_names[i], "tg_e%d", i);
    keys[i] = miss[i]->key;
    syms[i] = sym_names[i];
    miss[i]->prog = program_from(h, sym_names[i], miss[i]->key, miss[i]->ks, &miss[i]->params);
    if (!miss[i]->prog)
      st = tg_set_error(TG_ERR_RUNTIME, "rt_compile: kernel '%s': entry '%s' missing from the compiled library",
                        miss[i]->ks->name, miss[i]->ks->entry ? miss[i]->ks->entry : sym_names[i]);
  }
  if (st == TG_OK) {
    for (int i = 0; i < nmiss; i++) prog_insert(miss[i]->prog);
    if (so_bytes) rt_diskcache_store(so_bytes, so_len, keys, syms, (size_t)nmiss);
  } else {
    for (int i = 0; i < nmiss; i++)
      if (miss[i]->prog) prog_free(miss[i]->prog), miss[i]->prog = NULL;
  }
  tg_free(keys);
  tg_free(syms);
  tg_free(sym_names);
  tg_free(so_bytes);
  return st;
}

/* ---- the entry point ---- */
static tg_status compile_many_locked(const RtKernelSource *kernels, size_t n, RtProgram **out) {
  for (size_t i = 0; i < n; i++) {
    const RtKernelSource *k = &kernels[i];
    if (!rt_is_identifier(k->name) || !k->src || (k->entry && !rt_is_identifier(k->entry)))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT,
                          "rt_compile: kernel %zu: a name and entry must be C identifiers and the source non-NULL "
                          "(name '%s')", i, k->name ? k->name : "(null)");
    if (k->entry && strcmp(k->entry, k->name) == 0)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel '%s': the entry must differ from the kernel",
                          k->name);
  }
  if (!compiler_init()) return TG_ERR_RUNTIME;
  Request *reqs = tg_calloc(n ? n : 1, sizeof *reqs);
  Request **miss = tg_calloc(n ? n : 1, sizeof *miss);
  int nmiss = 0;
  tg_status st = TG_OK;
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    Request *r = &reqs[i];
    r->ks = &kernels[i];
    r->miss_index = -1;
    st = rt_parse_signature(r->ks->name, r->ks->src, &r->params);
    if (st != TG_OK) break;
    StrBuf kb;
    sb_init(&kb);
    sb_printf(&kb, RT_ABI "\n%s\n%s\n%s\n%s", cc_command, r->ks->name, r->ks->entry ? r->ks->entry : "", r->ks->src);
    if (r->ks->core_param) sb_printf(&kb, "\ncore_param %s", r->ks->core_param);
    r->key = sb_take(&kb);
    if ((r->prog = prog_find(r->key))) {
      stats.memory_hits++;
      continue;
    }
    for (size_t j = 0; j < i; j++) /* the same kernel twice in one batch: compile once */
      if (reqs[j].miss_index >= 0 && strcmp(reqs[j].key, r->key) == 0) r->miss_index = reqs[j].miss_index;
    if (r->miss_index >= 0) continue;
    int64_t lib_id;
    char *symbol = NULL;
    if (rt_diskcache_lookup(r->key, &lib_id, &symbol)) {
      void *h = cached_lib(lib_id);
      if (h && (r->prog = program_from(h, symbol, r->key, r->ks, &r->params))) {
        prog_insert(r->prog);
        stats.disk_hits++;
      }
      tg_free(symbol);
      if (r->prog) continue;
    }
    r->miss_index = nmiss;
    miss[nmiss++] = r;
  }
  if (st == TG_OK && nmiss) st = compile_batch(miss, nmiss);
  if (st == TG_OK)
    for (size_t i = 0; i < n; i++) out[i] = reqs[i].prog ? reqs[i].prog : miss[reqs[i].miss_index]->prog;
  for (size_t i = 0; i < n; i++) {
    rt_parsed_free(&reqs[i].params);
    tg_free(reqs[i].key);
  }
  tg_free(reqs);
  tg_free(miss);
  return st;
}

tg_status rt_compile_many(const RtKernelSource *kernels, size_t n, RtProgram **out) {
  if (n && (!kernels || !out)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile_many: NULL kernels or out");
  pthread_mutex_lock(&compile_lock);
  tg_status st = compile_many_locked(kernels, n, out);
  pthread_mutex_unlock(&compile_lock);
  return st;
}

tg_status rt_compile(const RtKernelSource *kernel, RtProgram **out) { return rt_compile_many(kernel, 1, out); }

const char *rt_compile_log(void) { return last_log ? last_log : ""; }

void rt_set_compile_log(char *log) {
  pthread_mutex_lock(&compile_lock);
  tg_free(last_log);
  last_log = log;
  pthread_mutex_unlock(&compile_lock);
}

const char *rt_program_name(const RtProgram *p) { return p->name; }
int rt_program_nparams(const RtProgram *p) { return p->nparams; }
const RtParam *rt_program_param(const RtProgram *p, int i) {
  return i >= 0 && i < p->nparams ? &p->params[i] : NULL;
}
int rt_program_core_id_param(const RtProgram *p) { return p->core_id_param; }

RtStats rt_stats(void) {
  pthread_mutex_lock(&compile_lock);
  RtStats s = stats;
  pthread_mutex_unlock(&compile_lock);
  s.launches = rt_device_launch_count();
  s.programs_requested = rt_device_programs_requested();
  return s;
}

static _Atomic uint64_t shutdown_count;
uint64_t rt_generation(void) { return atomic_load(&shutdown_count); }

void rt_shutdown(void) {
  rt_pool_shutdown();
  pthread_mutex_lock(&compile_lock);
  atomic_fetch_add(&shutdown_count, 1);
  /* programs handed out stay valid (callers cache them): they and their libraries move to the retired lists */
  for (size_t i = 0; i < prog_cap; i++)
    if (prog_table[i]) tg_vec_push(&retired_progs, prog_table[i]);
  tg_free(prog_table);
  prog_table = NULL;
  prog_cap = prog_count = 0;
  for (size_t i = 0; i < libs.len; i++) tg_vec_push(&retired_libs, libs.data[i]);
  tg_vec_free(&libs);
  for (size_t i = 0; i < cc_words.len; i++) tg_free(cc_words.data[i]);
  tg_vec_free(&cc_words);
  tg_free(cc_command);
  cc_command = NULL;
  tg_free(last_log);
  last_log = NULL;
  rt_diskcache_close();
  pthread_mutex_unlock(&compile_lock);
  rt_free_cache();
  rt_alloc_reread_knobs();
}
