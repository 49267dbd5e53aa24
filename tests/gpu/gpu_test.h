/* gpu_test.h — the GPU runner's harness: test.h's CHECK macros, plus the CUDA check every GPU suite starts with. */
#ifndef TG_GPU_TEST_H
#define TG_GPU_TEST_H

#include <stdbool.h>

#include "../test.h"

/* true when CUDA can be used; otherwise false, and the runner reports the suite SKIPPED with the reason. */
bool gpu_require_cuda(void);

#define GPU_SUITE(name) void gpu_suite_##name(void);
#include "../gpu_suites.def"
#undef GPU_SUITE

#endif
