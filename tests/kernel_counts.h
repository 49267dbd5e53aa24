/* kernel_counts.h — the forward kernel-count table of reference section 6.5: tinygrad expressions, built through the
 * public API from pre-realized inputs, with the number of kernels tinygrad schedules for them (DEV=CPU). The
 * scheduler's tests realize each case's outputs together and compare the kernel count. Defined in test_ops.c. */
#ifndef TG_TEST_KERNEL_COUNTS_H
#define TG_TEST_KERNEL_COUNTS_H

#include <stddef.h>

#include "tinygrad.h"

typedef struct kc_case {
  const char *expr; /* the tinygrad expression */
  int kernels;      /* kernels tinygrad schedules to realize the outputs */
  /* builds the outputs into out[0..3] (inside the caller's scope); returns how many, 0 on error (tg_last_error) */
  int (*build)(tg_tensor **out);
  int fused;        /* ours with the row rule (FUSE_ROWS, schedule/rangeify.c) on the CPU; 0: the same as tinygrad */
} kc_case;

const kc_case *kernel_count_cases(size_t *n);

#endif
