/* diskcache.c — compiled kernels on disk, so a second process compiles nothing (tinygrad's cache.db).
 *
 * sqlite file at CACHEDB (default $XDG_CACHE_HOME or ~/.cache, then tinygrad.c/cache.db); CACHELEVEL=0 turns it off.
 * Table rt_lib_<V> holds each compiler invocation's shared object; rt_kernel_<V> maps a kernel's full key text
 * (compiler command, name, entry, source) to the shared object and its entry symbol there. WAL mode and a busy
 * timeout let several processes share the file. A failing database is never fatal: the cache turns itself off.
 * Table kv_<V> holds small text values by (table, key) for other parts (rt_cache_get/put: BEAM results). Every entry
 * point takes one lock (compile.c calls in under its own lock, never the other way round). */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "runtime/rt_internal.h"

#define CACHE_VERSION "1"
#define LIB_TABLE "rt_lib_" CACHE_VERSION
#define KERNEL_TABLE "rt_kernel_" CACHE_VERSION
#define KV_TABLE "kv_" CACHE_VERSION

static sqlite3 *db;
static int db_state; /* 0: not opened yet, 1: open, -1: off (disabled or failed) */
static pthread_mutex_t db_lock = PTHREAD_MUTEX_INITIALIZER;

static void cache_warn(const char *what) {
  if (tg_debug_level() >= 1)
    fprintf(stderr, "tinygrad.c: compile cache disabled (%s: %s)\n", what, db ? sqlite3_errmsg(db) : "cannot open");
}

static void cache_fail(const char *what) {
  cache_warn(what);
  if (db) sqlite3_close(db);
  db = NULL;
  db_state = -1;
}

/* mkdir -p of the directory part of path. */
static void make_parent_dirs(const char *path) {
  char *dir = tg_strdup(path);
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) break;
    *p = '/';
  }
  tg_free(dir);
}

static char *cache_path(void) {
  const char *env = tg_getenv_str("CACHEDB");
  if (env && *env) return tg_strdup(env);
  StrBuf b;
  sb_init(&b);
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg) sb_printf(&b, "%s/tinygrad.c/cache.db", xdg);
  else sb_printf(&b, "%s/.cache/tinygrad.c/cache.db", home && *home ? home : "/tmp");
  return sb_take(&b);
}

static bool cache_exec(const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK; }

static bool cache_open(void) {
  if (db_state) return db_state > 0;
  if (tg_getenv_int("CACHELEVEL", 2) < 1) {
    db_state = -1;
    return false;
  }
  char *path = cache_path();
  make_parent_dirs(path);
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  tg_free(path);
  if (rc != SQLITE_OK) {
    cache_fail("open");
    return false;
  }
  sqlite3_busy_timeout(db, 60000);
  cache_exec("PRAGMA journal_mode=WAL"); /* another connection may hold it already: not an error */
  cache_exec("PRAGMA synchronous=NORMAL");
  if (!cache_exec("CREATE TABLE IF NOT EXISTS " LIB_TABLE " (id INTEGER PRIMARY KEY, lib BLOB NOT NULL)") ||
      !cache_exec("CREATE TABLE IF NOT EXISTS " KERNEL_TABLE
                  " (key TEXT PRIMARY KEY, lib INTEGER NOT NULL, symbol TEXT NOT NULL)") ||
      !cache_exec("CREATE TABLE IF NOT EXISTS " KV_TABLE
                  " (tbl TEXT NOT NULL, key TEXT NOT NULL, val TEXT NOT NULL, PRIMARY KEY (tbl, key))")) {
    cache_fail("create tables");
    return false;
  }
  db_state = 1;
  return true;
}

static bool enabled_locked(void) { return cache_open(); }

static bool lookup_locked(const char *key, int64_t *lib_id, char **symbol) {
  if (!cache_open()) return false;
  sqlite3_stmt *st = NULL;
  bool found = false;
  if (sqlite3_prepare_v2(db, "SELECT lib, symbol FROM " KERNEL_TABLE " WHERE key = ?", -1, &st, NULL) != SQLITE_OK) {
    cache_fail("lookup");
    return false;
  }
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *sym = sqlite3_column_text(st, 1);
    if (sym) {
      *lib_id = sqlite3_column_int64(st, 0);
      *symbol = tg_strdup((const char *)sym);
      found = true;
    }
  }
  sqlite3_finalize(st);
  return found;
}

static unsigned char *load_lib_locked(int64_t lib_id, size_t *len) {
  if (!cache_open()) return NULL;
  sqlite3_stmt *st = NULL;
  unsigned char *out = NULL;
  if (sqlite3_prepare_v2(db, "SELECT lib FROM " LIB_TABLE " WHERE id = ?", -1, &st, NULL) != SQLITE_OK) {
    cache_fail("load");
    return NULL;
  }
  sqlite3_bind_int64(st, 1, lib_id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const void *blob = sqlite3_column_blob(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    if (blob && n > 0) {
      out = tg_malloc((size_t)n);
      memcpy(out, blob, (size_t)n);
      *len = (size_t)n;
    }
  }
  sqlite3_finalize(st);
  return out;
}

static bool store_locked(const unsigned char *lib, size_t len, const char *const *keys, const char *const *symbols,
                         size_t n) {
  if (!cache_open() || len > (size_t)0x7fffffff) return false;
  sqlite3_stmt *st = NULL;
  if (!cache_exec("BEGIN IMMEDIATE")) {
    cache_warn("begin");
    return false;
  }
  bool ok = sqlite3_prepare_v2(db, "INSERT INTO " LIB_TABLE " (lib) VALUES (?)", -1, &st, NULL) == SQLITE_OK;
  if (ok) {
    sqlite3_bind_blob(st, 1, lib, (int)len, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
  }
  sqlite3_finalize(st);
  int64_t id = sqlite3_last_insert_rowid(db);
  st = NULL;
  if (ok) ok = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO " KERNEL_TABLE " (key, lib, symbol) VALUES (?, ?, ?)", -1,
                                  &st, NULL) == SQLITE_OK;
  for (size_t i = 0; ok && i < n; i++) {
    sqlite3_bind_text(st, 1, keys[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_text(st, 3, symbols[i], -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if (!ok) {
    cache_warn("store");
    cache_exec("ROLLBACK");
    return false;
  }
  if (!cache_exec("COMMIT")) {
    cache_warn("commit");
    cache_exec("ROLLBACK");
    return false;
  }
  return true;
}

static void close_locked(void) {
  if (db) sqlite3_close(db);
  db = NULL;
  db_state = 0;
}

/* ---- key/value values (rt_cache_get / rt_cache_put) ---- */
static char *cache_get_locked(const char *table, const char *key) {
  if (!cache_open()) return NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT val FROM " KV_TABLE " WHERE tbl = ? AND key = ?", -1, &st, NULL) != SQLITE_OK) {
    cache_fail("kv lookup");
    return NULL;
  }
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  char *out = NULL;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(st, 0);
    if (v) out = tg_strdup((const char *)v);
  }
  sqlite3_finalize(st);
  return out;
}

static bool cache_put_locked(const char *table, const char *key, const char *value) {
  if (!cache_open()) return false;
  sqlite3_stmt *st = NULL;
  bool ok = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO " KV_TABLE " (tbl, key, val) VALUES (?, ?, ?)", -1, &st,
                               NULL) == SQLITE_OK;
  if (ok) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
  }
  sqlite3_finalize(st);
  if (!ok) cache_warn("kv store");
  return ok;
}

/* ---- the locked entry points ---- */
bool rt_diskcache_enabled(void) {
  pthread_mutex_lock(&db_lock);
  bool r = enabled_locked();
  pthread_mutex_unlock(&db_lock);
  return r;
}

bool rt_diskcache_lookup(const char *key, int64_t *lib_id, char **symbol) {
  pthread_mutex_lock(&db_lock);
  bool r = lookup_locked(key, lib_id, symbol);
  pthread_mutex_unlock(&db_lock);
  return r;
}

unsigned char *rt_diskcache_load_lib(int64_t lib_id, size_t *len) {
  pthread_mutex_lock(&db_lock);
  unsigned char *r = load_lib_locked(lib_id, len);
  pthread_mutex_unlock(&db_lock);
  return r;
}

bool rt_diskcache_store(const unsigned char *lib, size_t len, const char *const *keys, const char *const *symbols,
                        size_t n) {
  pthread_mutex_lock(&db_lock);
  bool r = store_locked(lib, len, keys, symbols, n);
  pthread_mutex_unlock(&db_lock);
  return r;
}

void rt_diskcache_close(void) {
  pthread_mutex_lock(&db_lock);
  close_locked();
  pthread_mutex_unlock(&db_lock);
}

char *rt_cache_get(const char *table, const char *key) {
  if (!table || !key) return NULL;
  pthread_mutex_lock(&db_lock);
  char *r = cache_get_locked(table, key);
  pthread_mutex_unlock(&db_lock);
  return r;
}

bool rt_cache_put(const char *table, const char *key, const char *value) {
  if (!table || !key || !value) return false;
  pthread_mutex_lock(&db_lock);
  bool r = cache_put_locked(table, key, value);
  pthread_mutex_unlock(&db_lock);
  return r;
}
