/* device.c — the device registry (tinygrad Device): names are canonicalized, each device is opened once by its
 * backend's ops table, and every device call goes through that table. Also the default device: DEV (tinygrad's
 * knob; its device part, "CUDA" of "CUDA:PTX"), else CPU, or what tg_set_default_device chose. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_internal.h"

#define MAX_DEVICES 64

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static RtDevice *devices[MAX_DEVICES];
static int ndevices;

static const RtDeviceOps *const backends[] = {&rt_cpu_ops, &rt_cuda_ops};

/* "cuda:1" -> "CUDA:1", "CUDA:0" -> "CUDA" (tinygrad _canonicalize), and the backend and index of the name. */
static const RtDeviceOps *parse_name(const char *name, char *out, size_t n, int *index) {
  if (!name || !*name) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "device: empty device name");
    return NULL;
  }
  char kind[32];
  size_t k = 0;
  for (; name[k] && name[k] != ':' && k + 1 < sizeof kind; k++) kind[k] = (char)toupper((unsigned char)name[k]);
  kind[k] = 0;
  const char *rest = name[k] == ':' ? name + k + 1 : NULL;
  const RtDeviceOps *ops = NULL;
  for (size_t i = 0; i < TG_ARRAY_LEN(backends) && !ops; i++)
    if (strcmp(kind, backends[i]->kind) == 0) ops = backends[i];
  if (!ops || (name[k] && name[k] != ':')) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: device '%s' not supported yet (CPU, CPU:n, CUDA, CUDA:n)", name);
    return NULL;
  }
  long idx = 0;
  if (rest) {
    char *end;
    idx = strtol(rest, &end, 10);
    if (!*rest || *end || idx < 0 || idx > 1023) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "device: '%s': expected %s or %s:<index>", name, kind, kind);
      return NULL;
    }
  }
  if (idx) snprintf(out, n, "%s:%ld", kind, idx);
  else snprintf(out, n, "%s", kind);
  *index = (int)idx;
  return ops;
}

bool rt_device_canonical(const char *name, char *out, size_t n) {
  int idx;
  return parse_name(name, out, n, &idx) != NULL;
}

tg_status rt_device_open(const char *name, RtDevice **out) {
  *out = NULL;
  char canon[32];
  int idx;
  const RtDeviceOps *ops = parse_name(name, canon, sizeof canon, &idx);
  if (!ops) return tg_last_status();
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < ndevices; i++)
    if (strcmp(devices[i]->name, canon) == 0) {
      *out = devices[i];
      pthread_mutex_unlock(&registry_lock);
      return TG_OK;
    }
  tg_status st = TG_OK;
  if (ndevices == MAX_DEVICES) {
    st = tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: more than %d devices not supported yet", MAX_DEVICES);
  } else {
    RtDevice *d = tg_calloc(1, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", canon);
    d->index = idx;
    d->ops = ops;
    st = ops->open(d);
    if (st == TG_OK) {
      devices[ndevices++] = d;
      *out = d;
      if (tg_debug_level() >= 1) printf("opened device %s\n", d->name);
    } else {
      tg_free(d); /* a failed open is tried again next time (its error each time) */
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return st;
}

void rt_device_each(void (*fn)(RtDevice *d, void *ctx), void *ctx) {
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < ndevices; i++) fn(devices[i], ctx);
  pthread_mutex_unlock(&registry_lock);
}

const char *rt_device_name(const RtDevice *d) { return d->name; }
bool rt_device_is_host(const RtDevice *d) { return d->ops->host_memory; }
const char *rt_device_arch(const RtDevice *d) { return d->arch; }

static long programs_requested;
long rt_device_programs_requested(void) {
  pthread_mutex_lock(&registry_lock);
  long n = programs_requested;
  pthread_mutex_unlock(&registry_lock);
  return n;
}

tg_status rt_device_compile_many(RtDevice *d, const RtKernelSource *kernels, size_t n, RtProgram **out) {
  if (!d) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_compile_many: NULL device");
  pthread_mutex_lock(&registry_lock);
  programs_requested += (long)n;
  pthread_mutex_unlock(&registry_lock);
  return d->ops->compile_many(d, kernels, n, out);
}

/* Kernel launches on every device (rt_stats().launches): counted here, where every launch passes, so a count means
 * the same on the CPU (a core_id kernel's pieces are one launch) and on CUDA (a graph replay counts its nodes). */
static atomic_long launch_count;
long rt_device_launch_count(void) { return atomic_load(&launch_count); }

tg_status rt_device_launch(RtDevice *d, const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                           const int64_t grid[3], const int64_t block[3], double *seconds) {
  if (!d || !p) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: NULL device or program");
  if (p->ops != d->ops || (p->device && p->device != d))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s was compiled for %s, not %s", p->name,
                        p->device ? p->device->name : p->ops->kind, d->name);
  tg_status st = d->ops->launch(d, p, bufs, vals, nargs, grid, block, seconds);
  if (st == TG_OK) atomic_fetch_add_explicit(&launch_count, 1, memory_order_relaxed);
  return st;
}

tg_status rt_device_synchronize(RtDevice *d) {
  if (!d) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_synchronize: NULL device");
  return d->ops->synchronize(d);
}

/* ---- graphs (runtime.h): the dependencies are worked out here, the backend builds and launches ---- */
struct RtGraph {
  RtDevice *dev;
  void *impl;
  size_t n;
  RtGraphNode *nodes; /* program and dims per node (bufs/vals/access are not kept) */
};

bool rt_device_has_graph(RtDevice *d) { return d && d->ops->graph_available && d->ops->graph_available(d); }

static bool ranges_overlap(const RtGraphAccess *a, const RtGraphAccess *b) {
  if (a->any || b->any) return true;
  return a->addr < b->addr + b->nbytes && b->addr < a->addr + a->nbytes;
}

/* a covers b: every byte b touches, a touches (a write there orders everything before it after b's view) */
static bool range_covers(const RtGraphAccess *a, const RtGraphAccess *b) {
  return !a->any && !b->any && a->addr <= b->addr && b->addr + b->nbytes <= a->addr + a->nbytes;
}

/* For each access of node j, walk back over the earlier nodes: a conflicting one (overlap, one side a write) is a
 * dependency; the walk stops at a write that covers the access (what came before it is ordered before it). */
void rt_graph_deps(const RtGraphNode *nodes, size_t n, uint32_t **start_out, uint32_t **deps_out) {
  uint32_t *start = tg_calloc(n + 1, sizeof *start);
  TG_VEC(uint32_t) deps = {0};
  for (size_t j = 0; j < n; j++) {
    start[j] = (uint32_t)deps.len;
    for (int a = 0; a < nodes[j].naccess; a++) {
      const RtGraphAccess *x = &nodes[j].access[a];
      bool covered = false;
      for (size_t i = j; i-- > 0 && !covered;) {
        for (int b = 0; b < nodes[i].naccess && !covered; b++) {
          const RtGraphAccess *y = &nodes[i].access[b];
          if (!(x->write || y->write) || !ranges_overlap(x, y)) continue;
          bool have = false;
          for (size_t k = start[j]; k < deps.len && !have; k++) have = deps.data[k] == i;
          if (!have) tg_vec_push(&deps, (uint32_t)i);
          covered = y->write && range_covers(y, x);
        }
      }
    }
  }
  start[n] = (uint32_t)deps.len;
  *start_out = start;
  *deps_out = deps.len ? deps.data : tg_calloc(1, sizeof(uint32_t));
}

tg_status rt_graph_new(RtDevice *d, const RtGraphNode *nodes, size_t n, RtGraph **out) {
  *out = NULL;
  if (!d || !n || !nodes) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_graph_new: NULL device or no nodes");
  if (!rt_device_has_graph(d)) return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: graphs on %s not supported", d->name);
  for (size_t i = 0; i < n; i++) {
    const RtProgram *p = nodes[i].prog;
    if (!p || p->ops != d->ops || (p->device && p->device != d))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_graph_new: node %zu: %s is not a program of %s", i,
                          p ? p->name : "(null)", d->name);
  }
  uint32_t *start, *deps;
  rt_graph_deps(nodes, n, &start, &deps);
  void *impl = NULL;
  tg_status st = d->ops->graph_new(d, nodes, n, start, deps, &impl);
  tg_free(start);
  tg_free(deps);
  if (st != TG_OK) return st;
  RtGraph *g = tg_calloc(1, sizeof *g);
  g->dev = d, g->impl = impl, g->n = n;
  g->nodes = tg_calloc(n, sizeof *g->nodes);
  for (size_t i = 0; i < n; i++) {
    g->nodes[i] = nodes[i];
    g->nodes[i].bufs = NULL, g->nodes[i].vals = NULL, g->nodes[i].access = NULL, g->nodes[i].naccess = 0;
  }
  *out = g;
  return TG_OK;
}

tg_status rt_graph_set(RtGraph *g, size_t i, const uint64_t *bufs, const long long *vals, const int64_t *grid) {
  if (!g || i >= g->n) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_graph_set: no node %zu", i);
  if (grid) {
    for (int d = 0; d < 3; d++)
      if (grid[d] < 1) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_graph_set: node %zu: a grid of %lld", i, (long long)grid[d]);
    memcpy(g->nodes[i].grid, grid, sizeof g->nodes[i].grid);
  }
  RtGraphNode node = g->nodes[i];
  node.bufs = bufs, node.vals = vals;
  return g->dev->ops->graph_set(g->dev, g->impl, i, &node);
}

tg_status rt_graph_launch(RtGraph *g, double *seconds) {
  if (!g) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_graph_launch: NULL graph");
  tg_status st = g->dev->ops->graph_launch(g->dev, g->impl, seconds);
  if (st == TG_OK) atomic_fetch_add_explicit(&launch_count, (long)g->n, memory_order_relaxed);
  return st;
}

void rt_graph_free(RtGraph *g) {
  if (!g) return;
  g->dev->ops->graph_free(g->dev, g->impl);
  tg_free(g->nodes);
  tg_free(g);
}

/* ---- the default device ----
 * Names handed out stay valid and unchanged for the process (a caller may keep the old default across a change). */
static const char *default_device;

static const char *name_intern(const char *canonical) {
  static char names[MAX_DEVICES][32];
  static int nnames;
  for (int i = 0; i < nnames; i++)
    if (strcmp(names[i], canonical) == 0) return names[i];
  if (nnames == MAX_DEVICES) return NULL;
  snprintf(names[nnames], sizeof names[nnames], "%s", canonical);
  return names[nnames++];
}

const char *tg_default_device(void) {
  pthread_mutex_lock(&registry_lock);
  if (!default_device) {
    const char *dev = getenv("DEV");
    char part[32] = "CPU";
    if (dev && *dev) {
      const char *plus = strrchr(dev, '+'); /* [IFACE+]DEVICE[:RENDERER[:ARCH]]: the DEVICE */
      const char *s = plus ? plus + 1 : dev;
      size_t k = 0;
      for (; s[k] && s[k] != ':' && k + 1 < sizeof part; k++) part[k] = (char)toupper((unsigned char)s[k]);
      part[k] = 0;
    }
    default_device = name_intern(part);
  }
  const char *r = default_device ? default_device : "CPU";
  pthread_mutex_unlock(&registry_lock);
  return r;
}

tg_status tg_set_default_device(const char *device) {
  char canon[32];
  if (!rt_device_canonical(device, canon, sizeof canon)) return tg_last_status();
  pthread_mutex_lock(&registry_lock);
  const char *n = name_intern(canon);
  if (n) default_device = n;
  pthread_mutex_unlock(&registry_lock);
  return n ? TG_OK : tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: more than %d device names not supported yet", MAX_DEVICES);
}

bool tg_cuda_available(const char **why) { return rt_cuda_available(why); }

tg_status tg_synchronize(const char *device) {
  RtDevice *d = NULL;
  tg_status st = rt_device_open(device ? device : tg_default_device(), &d);
  return st == TG_OK ? rt_device_synchronize(d) : st;
}

/* ---- timing marks (tinygrad.h tg_mark_record) ---- */
struct tg_mark {
  RtDevice *dev;
  void *impl;   /* the device's marker; NULL where host marks it */
  double host;  /* the host clock at the mark (devices without mark_new: their work is done when calls return) */
};

tg_mark *tg_mark_record(const char *device) {
  RtDevice *d = NULL;
  if (rt_device_open(device ? device : tg_default_device(), &d) != TG_OK) return NULL;
  tg_mark *m = tg_calloc(1, sizeof *m);
  m->dev = d;
  tg_status st = d->ops->mark_new ? d->ops->mark_new(d, &m->impl) : d->ops->synchronize(d);
  if (st != TG_OK) {
    tg_free(m);
    return NULL;
  }
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  m->host = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
  return m;
}

tg_status tg_mark_elapsed(const tg_mark *start, const tg_mark *end, double *seconds) {
  if (!start || !end || !seconds) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_mark_elapsed: NULL argument");
  if (start->dev != end->dev)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_mark_elapsed: marks on different devices (%s, %s)",
                        start->dev->name, end->dev->name);
  if (!start->dev->ops->mark_elapsed) {
    *seconds = end->host - start->host;
    return TG_OK;
  }
  return start->dev->ops->mark_elapsed(start->dev, start->impl, end->impl, seconds);
}

void tg_mark_free(tg_mark *m) {
  if (!m) return;
  if (m->impl && m->dev->ops->mark_free) m->dev->ops->mark_free(m->dev, m->impl);
  tg_free(m);
}
