/* bench_train.c — training steps per second, the figures bench/run.sh sets against PyTorch
 * (bench/peer_torch_train.py: the same models, batch, loss and optimizer on 2 threads).
 *
 *   train_cnn  beautiful_mnist's CNN (examples/beautiful_mnist.c) at batch 512
 *   train_mlp  a 784-128-10 MLP (Linear, relu, Linear) at batch 512
 * Both: random 28x28 images of 0..255 values as float, random labels, sparse categorical cross-entropy, Adam(1e-3);
 * one warm-up step (compiles the kernels), then the timed steps. Prints "<name> <steps/s> steps/s".
 * Usage: bench_train [cnn_steps [mlp_steps]] (defaults 2 and 20; 0 leaves that model out). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tinygrad.h"

enum { BS = 512, PIXELS = 28 * 28, POOL = 4096 };

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
  static float x[BS * PIXELS];
  static int32_t y[BS];
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

int main(int argc, char **argv) {
  int cnn_steps = argc > 1 ? atoi(argv[1]) : 2, mlp_steps = argc > 2 ? atoi(argv[2]) : 20;
  uint8_t *pool_x = malloc((size_t)POOL * PIXELS), *pool_y = malloc(POOL);
  if (!pool_x || !pool_y) return 1;
  uint32_t s = 1;
  for (size_t i = 0; i < (size_t)POOL * PIXELS; i++) pool_x[i] = (uint8_t)lcg(&s);
  for (int i = 0; i < POOL; i++) pool_y[i] = (uint8_t)(lcg(&s) % 10);
  tg_manual_seed(0);
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
    double r = bench(&cnn, t, sizeof t / sizeof t[0], cnn_steps, pool_x, pool_y);
    if (r > 0) printf("train_cnn %.4g steps/s\n", r);
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
    double r = bench(&mlp, t, 4, mlp_steps, pool_x, pool_y);
    if (r > 0) printf("train_mlp %.4g steps/s\n", r);
    else rc = 1;
  } else {
    fprintf(stderr, "bench_train: building the MLP: %s\n", tg_last_error());
    rc = 1;
  }
  net_free(&mlp);
  free(pool_x);
  free(pool_y);
  return rc;
}
