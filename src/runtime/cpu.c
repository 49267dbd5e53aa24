/* cpu.c — the CPU behind the device interface: raw blocks from mmap (2 MiB aligned, MADV_HUGEPAGE) or
 * aligned_alloc, copies with memcpy, kernels compiled by the C compiler (compile.c) and run on the thread pool
 * (launch.c). "CPU" and "CPU:n" are all this device; each has its own memory pool. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

#define HUGE_PAGE ((size_t)1 << 21)
#define SMALL_ALIGN ((size_t)64)

static tg_status cpu_open(RtDevice *d) {
  TG_UNUSED(d);
  return TG_OK;
}

/* Large blocks: mmap'ed over one extra huge page, both ends trimmed so the block starts on a 2 MiB boundary, and
 * marked for huge pages (first touch of a 4 KiB page costs 11-14 us here). *extra is the mapped length (0 for an
 * aligned_alloc block). */
static bool cpu_raw_alloc(RtDevice *d, size_t size, uint64_t *addr, size_t *extra) {
  TG_UNUSED(d);
  if (size >= RT_HUGE_THRESHOLD) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (size + page - 1) / page * page;
    if (len < size) return false; /* overflow */
    size_t span = len + HUGE_PAGE;
    if (span < len) return false;
    unsigned char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return false;
    uintptr_t start = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    size_t head = start - (uintptr_t)raw, tail = span - head - len;
    if (head) munmap(raw, head);
    if (tail) munmap((unsigned char *)start + len, tail);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, len, MADV_HUGEPAGE); /* advisory: without THP the block still works */
#endif
    *addr = (uint64_t)start;
    *extra = len;
    return true;
  }
  size_t len = (size + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN; /* aligned_alloc wants a multiple */
  if (len < size) return false;
  void *p = aligned_alloc(SMALL_ALIGN, len);
  if (!p) return false;
  *addr = (uint64_t)(uintptr_t)p;
  *extra = 0;
  return true;
}

static void cpu_raw_free(RtDevice *d, uint64_t addr, size_t size, size_t extra) {
  TG_UNUSED(d);
  TG_UNUSED(size);
  if (extra) munmap((void *)(uintptr_t)addr, extra);
  else free((void *)(uintptr_t)addr);
}

static tg_status cpu_copyin(RtDevice *d, uint64_t dst, const void *src, size_t nbytes) {
  TG_UNUSED(d);
  memcpy((void *)(uintptr_t)dst, src, nbytes);
  return TG_OK;
}

static tg_status cpu_copyout(RtDevice *d, void *dst, uint64_t src, size_t nbytes) {
  TG_UNUSED(d);
  memcpy(dst, (const void *)(uintptr_t)src, nbytes);
  return TG_OK;
}

static tg_status cpu_transfer(RtDevice *d, uint64_t dst, RtDevice *src_dev, uint64_t src, size_t nbytes) {
  TG_UNUSED(d);
  TG_UNUSED(src_dev);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, nbytes);
  return TG_OK;
}

static tg_status cpu_compile_many(RtDevice *d, const RtKernelSource *ks, size_t n, RtProgram **out) {
  TG_UNUSED(d);
  return rt_compile_many(ks, n, out);
}

/* tinygrad's CPU program: grid[0] pieces of a core_id kernel (ops_cpu.py uses global_size[0] the same way). */
static tg_status cpu_launch(RtDevice *d, const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                            const int64_t grid[3], const int64_t block[3], double *seconds) {
  TG_UNUSED(d);
  if (block[0] != 1 || block[1] != 1 || block[2] != 1 || grid[1] != 1 || grid[2] != 1 || grid[0] < 1 ||
      grid[0] > 1 << 20)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT,
                        "rt_device_launch: %s on the CPU takes grid {cores,1,1} and block {1,1,1}, got {%lld,%lld,%lld} "
                        "{%lld,%lld,%lld}", p->name, (long long)grid[0], (long long)grid[1], (long long)grid[2],
                        (long long)block[0], (long long)block[1], (long long)block[2]);
  if (nargs < 0 || nargs > RT_MAX_PARAMS)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s: %d arguments", p->name, nargs);
  void *ptrs[RT_MAX_PARAMS];
  for (int i = 0; i < nargs; i++) ptrs[i] = bufs ? (void *)(uintptr_t)bufs[i] : NULL;
  int cores = (int)grid[0];
  return rt_launch(p, ptrs, vals, nargs, p->core_id_param, cores, seconds);
}

static tg_status cpu_synchronize(RtDevice *d) {
  TG_UNUSED(d);
  return TG_OK; /* launches and copies return when done */
}

const RtDeviceOps rt_cpu_ops = {
    .kind = "CPU",
    .host_memory = true,
    .open = cpu_open,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copyin = cpu_copyin,
    .copyout = cpu_copyout,
    .transfer = cpu_transfer,
    .compile_many = cpu_compile_many,
    .launch = cpu_launch,
    .synchronize = cpu_synchronize,
};
