/* bench_train.c — training steps per second, the figures bench/run.sh sets against PyTorch
 * (bench/peer_torch_train.py: the same models, batch, loss and optimizer on 2 threads).
 *
 *   train_cnn  beautiful_mnist's CNN (examples/beautiful_mnist.c) at batch 512
 *   train_mlp  a 784-128-10 MLP (Linear, relu, Linear) at batch 512
 *   train_mlp_jit  the same MLP step through the JIT (tg_jit_call; two warm-up steps: run and capture), and
 *              train_mlp_jit_overhead: the replay's host time per step (tg_jit_call's wall minus its launches' own time,
 *              from a separate instrumented pass; batch loading and upload are outside it)
 *   train_cnn_jit  the CNN step through the JIT (as train_mlp_jit), with train_cnn_jit_overhead
 *   jit_replay_1 / jit_replay_50: one replay of a 1-kernel step (us) and of a chain of 50 one-element kernels (us per
 *              kernel), next to eager_chain_1 / eager_chain_50, the same steps realized eagerly (the replay's peer);
 *              the device is synchronized before the clock starts and before it stops (a GPU replay is asynchronous:
 *              the figure is the throughput of queued replays; on CUDA with graphs unless JIT=2)
 * All training: random 28x28 images of 0..255 values as float, random labels, sparse categorical cross-entropy,
 * Adam(1e-3); one warm-up step (compiles the kernels), then the timed steps. Prints "<name> <value> <unit>".
 * Usage: bench_train [cnn_steps [mlp_steps [replays]]] (defaults 2, 20 and 20000; 0 leaves that part out);
 * BENCH_TRAIN_BS=n (1..512) trains at batch n instead of 512 (where the host's share of an eager step shows).
 * bench_train first: the first-call latency of the JIT'd MLP step in this process (parameters realized first; the
 *   call runs the step eagerly: schedule, codegen, compile unless the kernel cache has it, launch; the loss read
 *   back), then the second call (the capture); prints train_mlp_jit_first_call and train_mlp_jit_capture in ms.
 *   bench/run.sh runs it with a fresh CACHEDB file (cold) and again with that file (warm). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

enum { MAX_BS = 512, PIXELS = 28 * 28, POOL = 4096 };
static int BS = MAX_BS; /* BENCH_TRAIN_BS (1..512): a smaller batch, where the host's share of a step shows */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

typedef struct Net {
  tg_conv2d_layer *conv[4];
  tg_batchnorm_layer *bn[2];
  tg_linear_layer *fc[2];
  bool is_cnn;
} Net;

static tg_tensor *forward(Net *n, const tg_tensor *x) {
  if (!n->is_cnn) return tg_linear_forward(n->fc[1], tg_relu(tg_linear_forward(n->fc[0], tg_flatten(x, 1, -1))));
  const int64_t k2[2] = {2, 2};
  tg_tensor *h = tg_relu(tg_conv2d_forward(n->conv[0], x));
  h = tg_relu(tg_conv2d_forward(n->conv[1], h));
  h = tg_max_pool2d(tg_batchnorm_forward(n->bn[0], h), k2, NULL, NULL, NULL);
  h = tg_relu(tg_conv2d_forward(n->conv[2], h));
  h = tg_relu(tg_conv2d_forward(n->conv[3], h));
  h = tg_max_pool2d(tg_batchnorm_forward(n->bn[1], h), k2, NULL, NULL, NULL);
  return tg_linear_forward(n->fc[0], tg_flatten(h, 1, -1));
}

static void net_free(Net *n) {
  for (int i = 0; i < 4; i++) tg_conv2d_free(n->conv[i]);
  for (int i = 0; i < 2; i++) tg_batchnorm_free(n->bn[i]);
  for (int i = 0; i < 2; i++) tg_linear_free(n->fc[i]);
}

/* Random rows of the pool as floats, as a data loader would (the peer: x_all[idx].float()). restrict: without it
 * gcc -O2 converts the bytes one by one (a uint8_t pointer may alias the floats), 0.3 ms of a 3.5 ms MLP step. */
static void load_batch(float *restrict x, int32_t *restrict y, const uint8_t *restrict pool_x,
                       const uint8_t *restrict pool_y, uint32_t *s) {
  for (int b = 0; b < BS; b++) {
    uint32_t row = lcg(s) % POOL;
    const uint8_t *src = pool_x + (size_t)row * PIXELS;
    float *dst = x + (size_t)b * PIXELS;
    for (int p = 0; p < PIXELS; p++) dst[p] = (float)src[p];
    y[b] = pool_y[row];
  }
}

/* Steps per second of `steps` timed training steps after one warm-up; -1 on error. */
static double bench(Net *n, tg_tensor **tensors, size_t ntensors, int steps, const uint8_t *pool_x,
                    const uint8_t *pool_y) {
  tg_optim *opt = tg_optim_adam(tensors, ntensors, 0.001, 0.9, 0.999, 1e-8);
  if (!opt) return -1;
  static float x[MAX_BS * PIXELS];
  static int32_t y[MAX_BS];
  uint32_t s = 7;
  bool was = tg_set_training(true);
  double t0 = 0, rate = -1;
  for (int step = 0; step <= steps; step++) {
    if (step == 1) t0 = now_s();
    load_batch(x, y, pool_x, pool_y, &s);
    tg_scope sc = tg_scope_begin();
    tg_tensor *l = tg_sparse_categorical_crossentropy(forward(n, tg_from_floats(x, TG_SHAPE(BS, 1, 28, 28))),
                                                      tg_from_data(y, TG_INT32, TG_SHAPE(BS)), -1, 0.0,
                                                      TG_REDUCTION_MEAN);
    double loss = 0;
    tg_optim_zero_grad(opt);
    bool ok = l && tg_backward(l) == TG_OK && tg_optim_step_with(opt, &l, 1) == TG_OK &&
              tg_item_double(l, &loss) == TG_OK;
    tg_scope_end(sc);
    if (!ok) {
      fprintf(stderr, "bench_train: %s\n", tg_last_error());
      steps = -1;
      break;
    }
  }
  if (steps > 0) rate = steps / (now_s() - t0);
  tg_set_training(was);
  tg_optim_free(opt);
  return rate;
}

/* ---- the JIT'd MLP step ---- */

typedef struct JitStep { Net *net; tg_optim *opt; } JitStep;

static tg_status jit_train_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                                tg_tensor **out, size_t nout) {
  (void)nin, (void)vars, (void)nvars, (void)nout;
  JitStep *js = user;
  tg_tensor *l = tg_sparse_categorical_crossentropy(forward(js->net, in[0]), in[1], -1, 0.0, TG_REDUCTION_MEAN);
  tg_optim_zero_grad(js->opt);
  if (!l) return tg_last_status();
  tg_status st = tg_backward(l);
  if (st == TG_OK) st = tg_optim_step_with(js->opt, &l, 1);
  out[0] = l;
  return st;
}

/* Steps per second of the JIT'd step (as bench: batch loaded and uploaded per step, the loss read back), and the
 * replay's host overhead per step in *overhead_ms; -1 on error. */
static double bench_jit(Net *n, tg_tensor **tensors, size_t ntensors, int steps, const uint8_t *pool_x,
                        const uint8_t *pool_y, double *overhead_ms) {
  JitStep js = {n, tg_optim_adam(tensors, ntensors, 0.001, 0.9, 0.999, 1e-8)};
  tg_jit *j = js.opt ? tg_jit_new(jit_train_step, &js, 1, NULL) : NULL;
  if (!j) {
    tg_optim_free(js.opt);
    return -1;
  }
  static float x[MAX_BS * PIXELS];
  static int32_t y[MAX_BS];
  uint32_t s = 7;
  bool was = tg_set_training(true);
  double t0 = 0, rate = -1, host_sum = 0;
  int timed_steps = steps < 50 ? steps : 50, total = steps + timed_steps;
  for (int step = -1; step <= total; step++) {
    if (step == 1) t0 = now_s();
    if (step == steps + 1) {
      rate = steps / (now_s() - t0);
      tg_jit_set_timing(j, true); /* the instrumented pass */
    }
    load_batch(x, y, pool_x, pool_y, &s);
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[2] = {tg_from_floats(x, TG_SHAPE(BS, 1, 28, 28)), tg_from_data(y, TG_INT32, TG_SHAPE(BS))};
    bool ok = in[0] && in[1] && tg_realize_many(in, 2) == TG_OK;
    tg_tensor *l = NULL;
    double c0 = now_s();
    ok = ok && tg_jit_call(j, in, 2, NULL, 0, &l) == TG_OK;
    if (step > steps) host_sum += now_s() - c0 - tg_jit_last_kernel_seconds(j);
    double loss = 0;
    ok = ok && tg_item_double(l, &loss) == TG_OK;
    tg_scope_end(sc);
    if (!ok) {
      fprintf(stderr, "bench_train: jit step %d: %s\n", step, tg_last_error());
      rate = -1;
      break;
    }
  }
  if (rate > 0) *overhead_ms = host_sum / timed_steps * 1e3;
  tg_set_training(was);
  tg_jit_free(j);
  tg_optim_free(js.opt);
  return rate;
}

/* ---- replay microbenchmarks: chains of k one-element adds, each its own kernel ---- */

static tg_status chain_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                            tg_tensor **out, size_t nout) {
  (void)nin, (void)vars, (void)nvars, (void)nout;
  int k = *(const int *)user;
  tg_tensor *t = in[0];
  for (int i = 0; i < k; i++) {
    t = tg_add(t, tg_const_float(1.0));
    if (i + 1 < k) t = tg_contiguous(t);
  }
  out[0] = t;
  return t ? TG_OK : tg_last_status();
}

/* Seconds per call of the k-kernel chain, replayed (jit) or realized eagerly; -1 on error. */
static double bench_chain(int k, int calls, bool jit) {
  float one = 1;
  tg_scope outer = tg_scope_begin();
  tg_tensor *a = tg_from_floats(&one, TG_SHAPE(1));
  tg_jit *j = tg_jit_new(chain_step, &k, 1, NULL);
  double t0 = 0, r = -1;
  int i = 0;
  for (; i < calls + 3; i++) {
    if (i == 3 && tg_synchronize(tg_device(a)) == TG_OK) t0 = now_s();
    tg_scope sc = tg_scope_begin();
    tg_tensor *out = NULL;
    tg_status st = jit ? tg_jit_call(j, &a, 1, NULL, 0, &out) : chain_step(&k, &a, 1, NULL, 0, &out, 1);
    if (st == TG_OK && !jit) st = tg_realize(out);
    tg_scope_end(sc);
    if (st != TG_OK) {
      fprintf(stderr, "bench_train: chain of %d: %s\n", k, tg_last_error());
      break;
    }
  }
  if (i == calls + 3 && tg_synchronize(tg_device(a)) == TG_OK) r = (now_s() - t0) / calls;
  if (jit && r > 0 && tg_jit_kernel_count(j) != (size_t)k) {
    fprintf(stderr, "bench_train: the chain of %d captured %zu kernels\n", k, tg_jit_kernel_count(j));
    r = -1;
  }
  tg_jit_free(j);
  tg_scope_end(outer);
  return r;
}

/* The first two calls of the JIT'd MLP step in a fresh process (see the usage above); 1 on error. */
static int first_call(const uint8_t *pool_x, const uint8_t *pool_y) {
  Net mlp = {.is_cnn = false};
  mlp.fc[0] = tg_linear_new(784, 128, true);
  mlp.fc[1] = tg_linear_new(128, 10, true);
  tg_tensor *t[] = {mlp.fc[0] ? mlp.fc[0]->weight : NULL, mlp.fc[0] ? mlp.fc[0]->bias : NULL,
                    mlp.fc[1] ? mlp.fc[1]->weight : NULL, mlp.fc[1] ? mlp.fc[1]->bias : NULL};
  JitStep js = {&mlp, NULL};
  tg_jit *j = NULL;
  int rc = 1;
  bool was = tg_set_training(true);
  if (!t[0] || !t[2] || tg_realize_many(t, 4) != TG_OK) goto done;
  js.opt = tg_optim_adam(t, 4, 0.001, 0.9, 0.999, 1e-8);
  j = js.opt ? tg_jit_new(jit_train_step, &js, 1, NULL) : NULL;
  if (!j) goto done;
  static float x[MAX_BS * PIXELS];
  static int32_t y[MAX_BS];
  uint32_t s = 7;
  double ms[2];
  for (int call = 0; call < 2; call++) {
    load_batch(x, y, pool_x, pool_y, &s);
    tg_scope sc = tg_scope_begin();
    tg_tensor *in[2] = {tg_from_floats(x, TG_SHAPE(BS, 1, 28, 28)), tg_from_data(y, TG_INT32, TG_SHAPE(BS))};
    bool ok = in[0] && in[1] && tg_realize_many(in, 2) == TG_OK;
    tg_tensor *l = NULL;
    double loss = 0, t0 = now_s();
    ok = ok && tg_jit_call(j, in, 2, NULL, 0, &l) == TG_OK && tg_item_double(l, &loss) == TG_OK;
    ms[call] = (now_s() - t0) * 1e3;
    tg_scope_end(sc);
    if (!ok) goto done;
  }
  printf("train_mlp_jit_first_call %.4g ms\ntrain_mlp_jit_capture %.4g ms\n", ms[0], ms[1]);
  rc = 0;
done:
  if (rc) fprintf(stderr, "bench_train first: %s\n", tg_last_error());
  tg_set_training(was);
  tg_jit_free(j);
  tg_optim_free(js.opt);
  net_free(&mlp);
  return rc;
}

int main(int argc, char **argv) {
  int cnn_steps = argc > 1 ? atoi(argv[1]) : 2, mlp_steps = argc > 2 ? atoi(argv[2]) : 20;
  int replays = argc > 3 ? atoi(argv[3]) : 20000;
  const char *bs = getenv("BENCH_TRAIN_BS");
  if (bs && (atoi(bs) < 1 || atoi(bs) > MAX_BS)) {
    fprintf(stderr, "bench_train: BENCH_TRAIN_BS=%s: want 1..%d\n", bs, MAX_BS);
    return 1;
  }
  if (bs) BS = atoi(bs);
  uint8_t *pool_x = malloc((size_t)POOL * PIXELS), *pool_y = malloc(POOL);
  if (!pool_x || !pool_y) return 1;
  uint32_t s = 1;
  for (size_t i = 0; i < (size_t)POOL * PIXELS; i++) pool_x[i] = (uint8_t)lcg(&s);
  for (int i = 0; i < POOL; i++) pool_y[i] = (uint8_t)(lcg(&s) % 10);
  tg_manual_seed(0);
  if (argc > 1 && strcmp(argv[1], "first") == 0) {
    int frc = first_call(pool_x, pool_y);
    free(pool_x);
    free(pool_y);
    return frc;
  }
  int rc = 0;

  Net cnn = {.is_cnn = true};
  const int64_t k5[2] = {5, 5}, k3[2] = {3, 3};
  cnn.conv[0] = tg_conv2d_new(1, 32, k5, NULL);
  cnn.conv[1] = tg_conv2d_new(32, 32, k5, NULL);
  cnn.conv[2] = tg_conv2d_new(32, 64, k3, NULL);
  cnn.conv[3] = tg_conv2d_new(64, 64, k3, NULL);
  cnn.bn[0] = tg_batchnorm_new(32, 1e-5, 0.1, true, true);
  cnn.bn[1] = tg_batchnorm_new(64, 1e-5, 0.1, true, true);
  cnn.fc[0] = tg_linear_new(576, 10, true);
  if (cnn_steps <= 0) {
    /* 0 steps: the CNN is not timed (bench_train 0 N times the MLP only) */
  } else if (cnn.conv[0] && cnn.conv[1] && cnn.conv[2] && cnn.conv[3] && cnn.bn[0] && cnn.bn[1] && cnn.fc[0]) {
    tg_tensor *t[] = {cnn.conv[0]->weight, cnn.conv[0]->bias, cnn.conv[1]->weight, cnn.conv[1]->bias,
                      cnn.conv[2]->weight, cnn.conv[2]->bias, cnn.conv[3]->weight, cnn.conv[3]->bias,
                      cnn.bn[0]->weight, cnn.bn[0]->bias, cnn.bn[0]->running_mean, cnn.bn[0]->running_var,
                      cnn.bn[0]->num_batches_tracked, cnn.bn[1]->weight, cnn.bn[1]->bias, cnn.bn[1]->running_mean,
                      cnn.bn[1]->running_var, cnn.bn[1]->num_batches_tracked, cnn.fc[0]->weight, cnn.fc[0]->bias};
    double r = bench(&cnn, t, sizeof t / sizeof t[0], cnn_steps, pool_x, pool_y), overhead = 0;
    if (r > 0) printf("train_cnn %.4g steps/s\n", r);
    else rc = 1;
    r = bench_jit(&cnn, t, sizeof t / sizeof t[0], cnn_steps, pool_x, pool_y, &overhead);
    if (r > 0) printf("train_cnn_jit %.4g steps/s\ntrain_cnn_jit_overhead %.4g ms\n", r, overhead);
    else rc = 1;
  } else {
    fprintf(stderr, "bench_train: building the CNN: %s\n", tg_last_error());
    rc = 1;
  }
  net_free(&cnn);

  Net mlp = {.is_cnn = false};
  mlp.fc[0] = tg_linear_new(784, 128, true);
  mlp.fc[1] = tg_linear_new(128, 10, true);
  if (mlp_steps <= 0) {
    /* 0 steps: the MLP is not timed */
  } else if (mlp.fc[0] && mlp.fc[1]) {
    tg_tensor *t[] = {mlp.fc[0]->weight, mlp.fc[0]->bias, mlp.fc[1]->weight, mlp.fc[1]->bias};
    double r = bench(&mlp, t, 4, mlp_steps, pool_x, pool_y), overhead = 0;
    if (r > 0) printf("train_mlp %.4g steps/s\n", r);
    else rc = 1;
    r = bench_jit(&mlp, t, 4, mlp_steps, pool_x, pool_y, &overhead);
    if (r > 0) printf("train_mlp_jit %.4g steps/s\ntrain_mlp_jit_overhead %.4g ms\n", r, overhead);
    else rc = 1;
  } else {
    fprintf(stderr, "bench_train: building the MLP: %s\n", tg_last_error());
    rc = 1;
  }
  net_free(&mlp);
  for (int k = 1; replays > 0 && k <= 50; k += 49) {
    double rj = bench_chain(k, replays / k, true), re = bench_chain(k, replays / k / 4 + 1, false);
    if (rj > 0 && re > 0)
      printf("jit_replay_%d %.4g us%s\neager_chain_%d %.4g us%s\n", k, rj * 1e6 / k, k > 1 ? "/kernel" : "", k,
             re * 1e6 / k, k > 1 ? "/kernel" : "");
    else rc = 1;
  }
  free(pool_x);
  free(pool_y);
  return rc;
}
