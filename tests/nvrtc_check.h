/* nvrtc_check.h — compile-only checks of rendered CUDA with NVRTC, loaded at run time (dlopen), as tinygrad's
 * DEV=NULL:CUDA jobs do: the test machines have NVRTC but no GPU, CI has neither (then the check says why it
 * skipped). Options as the CUDA runtime uses them: --gpu-architecture=sm_90a, no include paths. */
#ifndef TG_TEST_NVRTC_CHECK_H
#define TG_TEST_NVRTC_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct NvrtcApi {
  void *lib;
  int (*create)(void **prog, const char *src, const char *name, int nheaders, const char *const *headers,
                const char *const *include_names);
  int (*compile)(void *prog, int nopts, const char *const *opts);
  int (*log_size)(void *prog, size_t *n);
  int (*log)(void *prog, char *log);
  int (*destroy)(void **prog);
} NvrtcApi;

/* NULL (with *why set) when no NVRTC can be loaded; the handle stays open for the process */
static inline const NvrtcApi *nvrtc_api(const char **why) {
  static NvrtcApi api;
  static int state; /* 0 untried, 1 loaded, -1 absent */
  static char reason[256];
  if (state == 0) {
    static const char *const names[] = {"libnvrtc.so.13", "/usr/local/cuda-13.0/lib64/libnvrtc.so.13",
                                        "/usr/local/cuda/lib64/libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !api.lib; i++) api.lib = dlopen(names[i], RTLD_NOW);
    if (api.lib) {
      void **slots[5] = {(void **)&api.create, (void **)&api.compile, (void **)&api.log_size, (void **)&api.log,
                         (void **)&api.destroy};
      static const char *const syms[5] = {"nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                                          "nvrtcGetProgramLog", "nvrtcDestroyProgram"};
      state = 1;
      for (int i = 0; i < 5; i++) {
        void *f = dlsym(api.lib, syms[i]);
        if (!f) state = -1, snprintf(reason, sizeof reason, "libnvrtc has no %s", syms[i]);
        memcpy(slots[i], &f, sizeof f);
      }
    } else {
      state = -1;
      snprintf(reason, sizeof reason, "no libnvrtc to load (%s)", dlerror());
    }
  }
  if (state < 0 && why) *why = reason;
  return state > 0 ? &api : NULL;
}

/* Compile src for sm_90a. true on success; on failure *log (heap, caller frees) holds NVRTC's log. */
static inline bool nvrtc_compiles(const NvrtcApi *api, const char *src, char **log) {
  void *prog = NULL;
  *log = NULL;
  if (api->create(&prog, src, "kernel.cu", 0, NULL, NULL) != 0) return false;
  static const char *const opts[] = {"--gpu-architecture=sm_90a"};
  int rc = api->compile(prog, 1, opts);
  if (rc != 0) {
    size_t n = 0;
    api->log_size(prog, &n);
    *log = malloc(n + 1);
    if (*log) {
      (*log)[0] = 0;
      api->log(prog, *log);
    }
  }
  api->destroy(&prog);
  return rc == 0;
}

#endif
