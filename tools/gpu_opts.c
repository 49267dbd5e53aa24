/* gpu_opts.c — the CUDA heuristic's choices without a GPU: every kernel of beautiful_mnist's CNN train step (forward,
 * backward, Adam; batch 512 as bench_train) scheduled here, optimized with renderer_cuda()'s hand_coded_optimizations
 * and lowered, one line each: the kernel name, its shape before opts (axis sizes, r = reduce), and the opts chosen.
 * Matches the names DEBUG=2 prints on the GPU, so a profile taken there can be read and the heuristic changed here.
 * Usage: gpu_opts [batch] (default 512); gpu_opts llm [T]: the 1B llama's projections instead (T tokens, default 1,
 * float32 activations, float16 weights: RMSNorm into Q and gate/up, silu(gate) * up into down); gpu_opts conv [bw]:
 * bench_gpu's conv2d (64x32x28x28, 64 3x3 filters, padding 1), or its input and weight gradients.
 * On a machine with a CUDA device, GPU_OPTS_BEAM=n (a beam width) also runs BEAM search on each kernel of at least
 * GPU_OPTS_BEAM_MITERS (default 100) million iterations (the product of its axes), once per name, and prints what it
 * found after the heuristic's line ("  beam: <opts>"; BEAM_DEBUG=1 adds the winner's and the heuristic's times): what
 * BEAM=2 picks for the big kernels without running the whole step under BEAM. GPU_OPTS_TRY=file times hand-picked opt
 * lists: each line of the file is "<shape as printed, without brackets> <opts: UPCAST:0:4,LOCAL:1:8,...;
 * TC:axis:select:opt:use>"; a kernel of that shape (its first one) is timed with the heuristic's opts and with every
 * list of its shape, one line each ("  try <us> us <opts>"). GPU_OPTS_SRC=text prints the CUDA source of the kernels
 * whose name holds text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h" /* first: render.h renames its own ShapeCache after it */
#include "codegen/beam.h"
#include "codegen/codegen.h"
#include "codegen/linearize.h"
#include "codegen/opt.h"
#include "nn/optim.h"
#include "render/render.h"
#include "schedule/schedule.h"
#include "tinygrad.h"

/* *t replaced by an unrealized tensor of its shape and dtype on CUDA (the layer's reference moves to it) */
static void on_cuda(tg_tensor **t, bool trainable) {
  tg_tensor *c = tg_retain(tg_empty_on(tg_shape(*t), (size_t)tg_ndim(*t), tg_get_dtype(*t), "CUDA"));
  if (c && trainable) tg_requires_grad(c, true);
  tg_release(*t);
  *t = c;
}

/* GPU_OPTS_TRY: the lists for kernels of this shape, timed with the heuristic's (once per shape) */
static void try_lists(UOp *ast, const Renderer *ren, const char *shape, const OptScheduler *base,
                      const OptScheduler *heur) {
  static char done[64][256];
  static int ndone;
  const char *path = getenv("GPU_OPTS_TRY");
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  for (int i = 0; i < ndone; i++)
    if (!strcmp(done[i], shape)) {
      fclose(f);
      return;
    }
  enum { MAXL = 48 };
  Opt lists[MAXL][OPT_LIST_MAX];
  int ns[MAXL], n = 1;
  char line[1024];
  memcpy(lists[0], heur->applied, (size_t)heur->napplied * sizeof(Opt));
  ns[0] = heur->napplied;
  while (n < MAXL && fgets(line, sizeof line, f)) {
    char *sp = strchr(line, ' ');
    if (line[0] == '#' || !sp) continue;
    *sp = 0;
    if (strcmp(line, shape) != 0) continue;
    ns[n] = opt_parse_list(sp + 1, lists[n], OPT_LIST_MAX);
    n++;
  }
  fclose(f);
  if (n == 1) return;
  if (ndone < 64) snprintf(done[ndone++], sizeof done[0], "%s", shape);
  const Opt *ptrs[MAXL];
  double secs[MAXL];
  for (int i = 0; i < n; i++) ptrs[i] = lists[i];
  if (beam_time_opts(ast, ren, ptrs, ns, (size_t)n, secs) != TG_OK) {
    /* no device: which lists apply at all (-1 us: refused) */
    printf("  try: not timed: %s\n", tg_last_error());
    tg_clear_error();
    for (int i = 0; i < n; i++) {
      OptScheduler t;
      opt_sched_copy(&t, base);
      bool ok = true;
      for (int k = 0; k < ns[i] && ok; k++) ok = opt_apply(&t, lists[i][k]) == TG_OK;
      if (!ok) printf("  refused at %d: %s\n", t.napplied, tg_last_error());
      const char *src_of = getenv("GPU_OPTS_SRC"); /* each list's kernel, rendered */
      UOp *low = ok && src_of ? cg_lower(opt_ast_with_opts(ast, t.applied, t.napplied), ren) : NULL;
      UOp *lin = low ? cg_linearize(low) : NULL;
      char *src = lin ? ren->render(ren, lin) : NULL;
      if (src) printf("  list %d: %s\n%s\n", i, render_kernel_name(lin), src);
      free(src);
      tg_clear_error();
      opt_sched_free(&t);
      secs[i] = ok ? 0 : -1e-6;
    }
  }
  for (int i = 0; i < n; i++) {
    printf("  try %9.1f us %s", secs[i] * 1e6, i ? "" : "(heuristic) ");
    for (int k = 0; k < ns[i]; k++)
      printf("%s%s:%d:%d", k ? "," : "", opt_op_name((OptOp)lists[i][k].op), (int)lists[i][k].axis, (int)lists[i][k].arg);
    printf("\n");
  }
  fflush(stdout);
}

/* GPU_OPTS_BEAM: each kernel name searched once */
static bool beam_seen(const char *name) {
  static char seen[64][64];
  static int n;
  for (int i = 0; i < n; i++)
    if (!strcmp(seen[i], name)) return true;
  if (n < 64) snprintf(seen[n++], sizeof seen[0], "%s", name);
  return false;
}

static void print_kernel(UOp *ast, const Renderer *ren) {
  UOpScope sc = uop_scope_begin();
  UOp *pre = cg_optimize(opt_ast_with_opts(ast, NULL, 0), ren);
  if (!pre) {
    printf("(not optimizable: %s)\n", tg_last_error());
    uop_scope_end(sc);
    return;
  }
  OptScheduler s;
  opt_sched_init(&s, pre, ren);
  char shape[256] = "";
  int n = opt_sched_len(&s);
  double iters = 1;
  if (n <= 64) {
    int64_t sz[64];
    AxisType ty[64];
    opt_sched_shape(&s, sz, ty);
    for (int i = 0; i < n; i++) iters *= (double)sz[i];
    size_t at = 0;
    for (int i = 0; i < n && at + 24 < sizeof shape; i++)
      at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%s%lld", i ? "," : "",
                             ty[i] == AXIS_REDUCE ? "r" : "", (long long)sz[i]);
  }
  OptScheduler base;
  opt_sched_copy(&base, &s);
  opt_hand_coded(&s);
  char opts[1024] = "";
  size_t at = 0;
  for (int i = 0; i < s.napplied && at + 40 < sizeof opts; i++) {
    char o[64];
    opt_format(s.applied[i], o, sizeof o);
    at += (size_t)snprintf(opts + at, sizeof opts - at, "%s%s", i ? " " : "", o);
  }
  UOp *low = cg_lower(opt_ast_with_opts(ast, s.applied, s.napplied), ren);
  UOp *lin = low ? cg_linearize(low) : NULL;
  const char *name = lin ? render_kernel_name(lin) : "(lowering failed)";
  printf("%-34s [%s] %s\n", name, shape, opts);
  const char *src_of = getenv("GPU_OPTS_SRC"); /* the CUDA source of the kernels whose name holds this text */
  if (src_of && lin && strstr(name, src_of)) {
    char *src = ren->render(ren, lin);
    if (src) printf("%s\n", src);
    free(src);
  }
  fflush(stdout);
  try_lists(ast, ren, shape, &base, &s);
  opt_sched_free(&base);
  int64_t beam = tg_getenv_int("GPU_OPTS_BEAM", 0);
  if (beam > 0 && lin && iters >= 1e6 * (double)tg_getenv_int("GPU_OPTS_BEAM_MITERS", 100) && !beam_seen(name)) {
    Opt bo[OPT_LIST_MAX];
    int nb = 0;
    if (beam_search(ast, ren, (int)beam, bo, &nb) != TG_OK) {
      printf("  beam: failed: %s\n", tg_last_error());
    } else {
      printf("  beam (%.0f M iterations):", iters / 1e6);
      for (int i = 0; i < nb; i++) {
        char o[64];
        opt_format(bo[i], o, sizeof o);
        printf(" %s", o);
      }
      printf("\n");
    }
    fflush(stdout);
  }
  opt_sched_free(&s);
  uop_scope_end(sc);
}

/* the decode step's matrix-vector kernels of one llama-1B layer (llm.c's formulation), printed as the CNN's */
/* the kernels of roots' schedule, each with the heuristic's opts; 1 on error */
static int print_schedule(UOp **roots, size_t n, const Renderer *ren) {
  UOpScope sc = uop_scope_begin();
  UOp *lin = sched_kernels(uop_sink(roots, n));
  if (!lin) return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  printf("%u kernels\n", lin->nsrc);
  for (uint32_t i = 0; i < lin->nsrc; i++)
    if (lin->src[i]->src[0]->op == TG_OP_SINK) print_kernel(lin->src[i]->src[0], ren);
  uop_scope_end(sc);
  return 0;
}

static int llm_kernels(const Renderer *ren, int64_t T) {
  tg_tensor *x = tg_empty_on(TG_SHAPE(T, 2048), TG_FLOAT32, "CUDA"), *wn = tg_empty_on(TG_SHAPE(2048), TG_FLOAT32, "CUDA");
  tg_tensor *wq = tg_empty_on(TG_SHAPE(2048, 2048), TG_FLOAT16, "CUDA"), *wk = tg_empty_on(TG_SHAPE(512, 2048), TG_FLOAT16, "CUDA");
  tg_tensor *wg = tg_empty_on(TG_SHAPE(8192, 2048), TG_FLOAT16, "CUDA"), *wu = tg_empty_on(TG_SHAPE(8192, 2048), TG_FLOAT16, "CUDA");
  tg_tensor *wd = tg_empty_on(TG_SHAPE(2048, 8192), TG_FLOAT16, "CUDA"), *wo = tg_empty_on(TG_SHAPE(2048, 2048), TG_FLOAT16, "CUDA");
  tg_tensor *h = tg_mul(tg_rms_norm(x, 1e-5), wn);
  tg_tensor *q = tg_matmul(h, tg_transpose(wq, 0, 1)), *k = tg_matmul(h, tg_transpose(wk, 0, 1));
  tg_tensor *o = tg_add(x, tg_matmul(tg_contiguous(q), tg_transpose(wo, 0, 1)));
  tg_tensor *f = tg_mul(tg_contiguous(tg_silu(tg_matmul(h, tg_transpose(wg, 0, 1)))), tg_matmul(h, tg_transpose(wu, 0, 1)));
  tg_tensor *d = tg_add(o, tg_matmul(f, tg_transpose(wd, 0, 1)));
  if (!d || !k) return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  UOp *roots[2] = {d->uop, k->uop};
  return print_schedule(roots, 2, ren);
}

/* bench_gpu's conv2d figure (64x32x28x28, 64 3x3 filters, padding 1): forward, and with `bw` its two gradients */
static int conv_kernels(const Renderer *ren, bool bw) {
  tg_tensor *x = tg_empty_on(TG_SHAPE(64, 32, 28, 28), TG_FLOAT32, "CUDA");
  tg_tensor *w = tg_empty_on(TG_SHAPE(64, 32, 3, 3), TG_FLOAT32, "CUDA");
  tg_requires_grad(x, true);
  tg_requires_grad(w, true);
  const int64_t one[2] = {1, 1};
  tg_tensor *y = tg_conv2d(x, w, NULL, 1, one, one, one), *g[2] = {NULL, NULL}, *wrt[2] = {x, w};
  tg_tensor *r = tg_empty_on(TG_SHAPE(64, 64, 28, 28), TG_FLOAT32, "CUDA");
  if (!y || (bw && tg_gradient(tg_sum(tg_mul(y, r), NULL, 0, false), (const tg_tensor *const *)wrt, 2, g) != TG_OK))
    return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  UOp *roots[2] = {bw ? g[0]->uop : y->uop, bw ? g[1]->uop : NULL};
  return print_schedule(roots, bw ? 2 : 1, ren);
}

int main(int argc, char **argv) {
  const Renderer *ren = renderer_cuda();
  if (argc > 1 && !strcmp(argv[1], "llm")) return llm_kernels(ren, argc > 2 ? atoll(argv[2]) : 1);
  if (argc > 1 && !strcmp(argv[1], "conv")) return conv_kernels(ren, argc > 2 && !strcmp(argv[2], "bw"));
  int64_t bs = argc > 1 ? atoll(argv[1]) : 512;
  tg_manual_seed(0);
  const int64_t k5[2] = {5, 5}, k3[2] = {3, 3}, k2[2] = {2, 2};
  tg_conv2d_layer *conv[4] = {tg_conv2d_new(1, 32, k5, NULL), tg_conv2d_new(32, 32, k5, NULL),
                              tg_conv2d_new(32, 64, k3, NULL), tg_conv2d_new(64, 64, k3, NULL)};
  tg_batchnorm_layer *bn[2] = {tg_batchnorm_new(32, 1e-5, 0.1, true, true), tg_batchnorm_new(64, 1e-5, 0.1, true, true)};
  tg_linear_layer *fc = tg_linear_new(576, 10, true);
  tg_tensor *params[] = {conv[0]->weight, conv[0]->bias, conv[1]->weight, conv[1]->bias, conv[2]->weight,
                         conv[2]->bias,   conv[3]->weight, conv[3]->bias, bn[0]->weight, bn[0]->bias,
                         bn[1]->weight,   bn[1]->bias,   fc->weight,    fc->bias};
  size_t np = sizeof params / sizeof params[0];
  for (size_t i = 0; i < np; i++)
    if (!params[i]) return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  /* every parameter and buffer lives on CUDA (the schedule splits some reduces per device): unrealized, so no GPU is
   * needed */
  for (int i = 0; i < 4; i++) on_cuda(&conv[i]->weight, true), on_cuda(&conv[i]->bias, true);
  for (int i = 0; i < 2; i++)
    on_cuda(&bn[i]->weight, true), on_cuda(&bn[i]->bias, true), on_cuda(&bn[i]->running_mean, false),
        on_cuda(&bn[i]->running_var, false), on_cuda(&bn[i]->num_batches_tracked, false);
  on_cuda(&fc->weight, true), on_cuda(&fc->bias, true);
  tg_tensor *cparams[] = {conv[0]->weight, conv[0]->bias, conv[1]->weight, conv[1]->bias, conv[2]->weight,
                          conv[2]->bias,   conv[3]->weight, conv[3]->bias, bn[0]->weight, bn[0]->bias,
                          bn[1]->weight,   bn[1]->bias,   fc->weight,    fc->bias};
  memcpy(params, cparams, sizeof params);
  tg_optim *opt = tg_optim_adam(params, np, 0.001, 0.9, 0.999, 1e-8);
  bool was = tg_set_training(true);
  tg_tensor *x = tg_empty_on(TG_SHAPE(bs, 1, 28, 28), TG_FLOAT32, "CUDA"), *y = tg_empty_on(TG_SHAPE(bs), TG_INT32, "CUDA");
  tg_tensor *h = tg_relu(tg_conv2d_forward(conv[0], x));
  h = tg_relu(tg_conv2d_forward(conv[1], h));
  h = tg_max_pool2d(tg_batchnorm_forward(bn[0], h), k2, NULL, NULL, NULL);
  h = tg_relu(tg_conv2d_forward(conv[2], h));
  h = tg_relu(tg_conv2d_forward(conv[3], h));
  h = tg_max_pool2d(tg_batchnorm_forward(bn[1], h), k2, NULL, NULL, NULL);
  tg_tensor *loss = tg_sparse_categorical_crossentropy(tg_linear_forward(fc, tg_flatten(h, 1, -1)), y, -1, 0.0,
                                                       TG_REDUCTION_MEAN);
  tg_tensor **list = NULL;
  size_t n = 0;
  if (!loss || !opt || tg_backward(loss) != TG_OK || optim_schedule_step(opt, &loss, 1, &list, &n) != TG_OK)
    return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  UOpScope sc = uop_scope_begin();
  UOp **roots = tg_calloc(n, sizeof *roots);
  for (size_t i = 0; i < n; i++) roots[i] = list[i]->uop;
  UOp *lin = sched_kernels(uop_sink(roots, n));
  if (!lin) return fprintf(stderr, "gpu_opts: %s\n", tg_last_error()), 1;
  printf("%u kernels\n", lin->nsrc);
  for (uint32_t i = 0; i < lin->nsrc; i++) {
    UOp *ast = lin->src[i]->src[0];
    if (ast->op == TG_OP_SINK) print_kernel(ast, ren);
    else printf("(%s)\n", uop_op_name(ast->op));
  }
  uop_scope_end(sc);
  tg_free(roots);
  tg_free(list);
  tg_set_training(was);
  tg_optim_free(opt);
  for (int i = 0; i < 4; i++) tg_conv2d_free(conv[i]);
  for (int i = 0; i < 2; i++) tg_batchnorm_free(bn[i]);
  tg_linear_free(fc);
  return 0;
}
