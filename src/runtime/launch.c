/* launch.c — running a compiled kernel: a direct call, or its core_id pieces in parallel on a persistent pool.
 *
 * tinygrad's CPU device runs a THREAD-split kernel's pieces one after another; here NUM_CPU_THREADS-1 worker threads
 * (started on first use) and the caller take core ids from a shared counter until all ran, then the caller waits for
 * every worker to be done with the job. A worker polls briefly after a job before sleeping on a condition variable,
 * so back-to-back launches do not pay a wake-up each. Launches are serialized. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

/* How long an idle worker polls for the next job before sleeping: catches back-to-back launches of a schedule
 * (a wake-up through the condition variable costs ~4 us here). It yields while polling, so on a machine whose
 * cores are all busy the poll gives way instead of competing with the thread that would launch the next job.
 * 1 ms, not 10 us: between two threaded matvecs of an LLM decode step run a few one-thread kernels (norm, int8
 * quantization, rope, attention) for more than 10 us, so the worker slept and came late; the caller, taking core
 * ids from the shared counter, then ran both halves alone. 1B llama Q4_0 decode (`bench_llm FILE 2 16 32`, 2708
 * threaded launches, 2 cores, a machine shared with one other agent): launches the caller ran whole 126-454 -> 4-22,
 * decode 29.0-31.2 -> 31.3-37.9 tok/s (four runs each, alternating). */
#define SPIN_NS 1000000

typedef struct Job {
  RtEntryFn fn;
  void *const *bufs;
  const long long *vals;
  int nargs, core_param, ncores;
} Job;

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static pthread_t *workers;
static int nworkers = -1;       /* -1: not started */
static int sleepers;            /* workers waiting on work_cv (under pool_lock) */
static bool stopping;
static Job job;
static _Atomic uint64_t generation;
static atomic_int next_core, workers_done;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Take core ids until none is left; each runs the kernel with its own copy of the values. */
static void run_pieces(const Job *j) {
  long long vals[RT_MAX_PARAMS];
  memcpy(vals, j->vals, (size_t)j->nargs * sizeof *vals); /* nargs >= 1: core_param is one of them */
  for (;;) {
    int core = atomic_fetch_add_explicit(&next_core, 1, memory_order_relaxed);
    if (core >= j->ncores) break;
    vals[j->core_param] = core;
    j->fn(j->bufs, vals);
  }
}

static void *worker_main(void *arg) {
  TG_UNUSED(arg);
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = atomic_load_explicit(&generation, memory_order_acquire);
    if (g == seen) {
      double until = now_seconds() + SPIN_NS * 1e-9;
      while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen && now_seconds() < until)
        sched_yield();
    }
    if (g == seen) {
      pthread_mutex_lock(&pool_lock);
      sleepers++;
      while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen && !stopping)
        pthread_cond_wait(&work_cv, &pool_lock);
      sleepers--;
      bool stop = stopping;
      pthread_mutex_unlock(&pool_lock);
      if (stop) return NULL;
    }
    seen = g;
    Job j = job;
    run_pieces(&j);
    if (atomic_fetch_add_explicit(&workers_done, 1, memory_order_acq_rel) + 1 == nworkers) {
      pthread_mutex_lock(&pool_lock);
      pthread_cond_signal(&done_cv);
      pthread_mutex_unlock(&pool_lock);
    }
  }
}

int rt_num_threads(void) {
  int64_t n = tg_getenv_int("NUM_CPU_THREADS", 0);
  if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return (int)TG_MIN(n, 1024);
}

/* fork(): the child has none of the workers; it starts a fresh pool on its first threaded launch. Holding both
 * locks across the fork keeps the child from inheriting them mid-launch. */
static void atfork_prepare(void) {
  pthread_mutex_lock(&launch_lock);
  pthread_mutex_lock(&pool_lock);
}
static void atfork_parent(void) {
  pthread_mutex_unlock(&pool_lock);
  pthread_mutex_unlock(&launch_lock);
}
static void atfork_child(void) {
  tg_free(workers);
  workers = NULL;
  nworkers = -1;
  sleepers = 0;
  stopping = false;
  atomic_store(&generation, 0);
  pthread_mutex_unlock(&pool_lock);
  pthread_mutex_unlock(&launch_lock);
}

/* Start the workers (under launch_lock). A thread that cannot be created only makes the pool smaller. */
static void pool_start(void) {
  static bool atfork_registered;
  if (!atfork_registered) atfork_registered = pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
  int want = rt_num_threads() - 1;
  workers = tg_calloc((size_t)(want > 0 ? want : 1), sizeof *workers);
  stopping = false;
  nworkers = 0;
  for (int i = 0; i < want; i++) {
    if (pthread_create(&workers[nworkers], NULL, worker_main, NULL) != 0) break;
    nworkers++;
  }
}

void rt_pool_shutdown(void) {
  pthread_mutex_lock(&launch_lock);
  if (nworkers >= 0) {
    pthread_mutex_lock(&pool_lock);
    stopping = true;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&pool_lock);
    for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
    tg_free(workers);
    workers = NULL;
    nworkers = -1;
    /* a restarted pool's workers begin with seen = 0 */
    atomic_store(&generation, 0);
  }
  pthread_mutex_unlock(&launch_lock);
}

tg_status rt_launch(const RtProgram *p, void *const *bufs, const long long *vals, int nargs, int core_param,
                    int ncores, double *seconds) {
  double t0 = now_seconds();
  if (!p) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: NULL program");
  if (nargs != p->nparams)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: %s takes %d arguments, got %d", p->name, p->nparams, nargs);
  if (core_param < -1 || core_param >= nargs || (core_param >= 0 && p->params[core_param].is_pointer))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: %s: argument %d is not a scalar for core_id", p->name,
                        core_param);
  if (ncores < 1 || (core_param < 0 && ncores != 1))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: %s: %d cores needs a core_id argument", p->name, ncores);
  for (int i = 0; i < nargs; i++) {
    if (p->params[i].is_pointer && (!bufs || !bufs[i]))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: %s: buffer argument %d is NULL", p->name, i);
    if (!p->params[i].is_pointer && !vals)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_launch: %s: argument %d is a value but vals is NULL", p->name, i);
  }
  Job j = {p->entry, bufs, vals, nargs, core_param, ncores};
  if (core_param < 0) {
    p->entry(bufs, vals);
  } else {
    pthread_mutex_lock(&launch_lock);
    if (nworkers < 0) pool_start();
    atomic_store_explicit(&next_core, 0, memory_order_relaxed);
    if (ncores == 1 || nworkers == 0) {
      run_pieces(&j);
    } else {
      job = j;
      atomic_store_explicit(&workers_done, 0, memory_order_relaxed);
      atomic_fetch_add_explicit(&generation, 1, memory_order_release);
      pthread_mutex_lock(&pool_lock);
      if (sleepers) pthread_cond_broadcast(&work_cv);
      pthread_mutex_unlock(&pool_lock);
      run_pieces(&j);
      if (atomic_load_explicit(&workers_done, memory_order_acquire) != nworkers) {
        pthread_mutex_lock(&pool_lock);
        while (atomic_load_explicit(&workers_done, memory_order_acquire) != nworkers)
          pthread_cond_wait(&done_cv, &pool_lock);
        pthread_mutex_unlock(&pool_lock);
      }
    }
    pthread_mutex_unlock(&launch_lock);
  }
  if (seconds) *seconds = now_seconds() - t0;
  return TG_OK;
}
