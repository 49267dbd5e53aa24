/* beautiful_mnist.c — tinygrad's examples/beautiful_mnist.py in C with the public API: a CNN trained on
 * Fashion-MNIST with Adam, a progress bar (step, loss, throughput), then the test accuracy and the wall time.
 *
 * Model (tinygrad's): Conv2d(1,32,5) relu, Conv2d(32,32,5) relu, BatchNorm(32), max_pool2d, Conv2d(32,64,3) relu,
 * Conv2d(64,64,3) relu, BatchNorm(64), max_pool2d, flatten, Linear(576,10). Loss: sparse categorical cross-entropy.
 * Optimizer: Adam(lr 0.001). Each step trains on BS images drawn at random with replacement (tinygrad's
 * Tensor.randint(BS, high=N)); images go in as their raw 0..255 values cast to float, as in tinygrad.
 *
 * Data: --data DIR, else $FASHION_MNIST_DIR, else Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist),
 * else the subset shipped in data/fashion-mnist (found from the working directory or next to the executable).
 * Knobs (environment, tinygrad's names where it has them): STEPS (default 70), BS (512), EVAL_EVERY (evaluate on
 * the test set every N steps; default 0: at the end only), EVAL_LIMIT (evaluate on the first N test images; default
 * all), TARGET_EVAL_ACC_PCT (exit 1 when the final accuracy is below it), SEED (0), LR_DECAY_STEP (after this
 * step Adam's lr drops to a tenth; default 0: never, as in tinygrad), JIT (default 1: the train step is TinyJit'd as
 * in tinygrad, tg_jit_call: captured on its 2nd call, replayed after; JIT=0 runs it eagerly every step). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tinygrad.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}

static int fail(const char *what) {
  fprintf(stderr, "\nbeautiful_mnist: %s: %s\n", what, tg_last_error());
  return 1;
}

/* ---------------------------------------------------------------------------------------------------- data */

/* The dataset directory: the first of the candidates that holds all four files. */
static bool find_data_dir(const char *arg, char *out, size_t cap) {
  char exe_rel[4200] = "";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(exe_rel, sizeof exe_rel, "%s/../data/fashion-mnist", exe); /* build dir is one below the repo */
    }
  }
  const char *candidates[] = {arg, getenv("FASHION_MNIST_DIR"), "/usr/share/datasets/fashion-mnist",
                              "data/fashion-mnist", exe_rel[0] ? exe_rel : NULL};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    if (!candidates[i] || !*candidates[i]) continue;
    if (tg_mnist_dir_complete(candidates[i])) {
      snprintf(out, cap, "%s", candidates[i]);
      return true;
    }
    if (i < 2) { /* asked for explicitly: say so rather than fall back silently */
      fprintf(stderr, "beautiful_mnist: %s does not hold the four Fashion-MNIST files\n", candidates[i]);
      return false;
    }
  }
  fprintf(stderr, "beautiful_mnist: no Fashion-MNIST found (apt-get install dataset-fashion-mnist, or run from the "
                  "repository root for data/fashion-mnist)\n");
  return false;
}

/* splitmix64: the host-side sampler of batch indices */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Images [first, first+count) of a split, or the rows picked by `rows`, as a float (count, 1, H, W) tensor. */
static tg_tensor *images_tensor(const tg_idx *images, const int64_t *rows, int64_t first, int64_t count,
                                float *scratch) {
  int64_t h = images->shape[1], w = images->shape[2], px = h * w;
  const uint8_t *src = images->data;
  for (int64_t i = 0; i < count; i++) {
    const uint8_t *img = src + (rows ? rows[i] : first + i) * px;
    for (int64_t p = 0; p < px; p++) scratch[i * px + p] = (float)img[p];
  }
  int64_t shape[4] = {count, 1, h, w};
  return tg_from_floats(scratch, shape, 4);
}

static tg_tensor *labels_tensor(const tg_idx *labels, const int64_t *rows, int64_t first, int64_t count,
                                int32_t *scratch) {
  const uint8_t *src = labels->data;
  for (int64_t i = 0; i < count; i++) scratch[i] = src[rows ? rows[i] : first + i];
  int64_t shape[1] = {count};
  return tg_from_data(scratch, TG_INT32, shape, 1);
}

/* ---------------------------------------------------------------------------------------------------- model */

typedef struct Model {
  tg_conv2d_layer *conv[4];
  tg_batchnorm_layer *bn[2];
  tg_linear_layer *fc;
  tg_state_dict *state;
} Model;

static void model_free(Model *m) {
  for (int i = 0; i < 4; i++) tg_conv2d_free(m->conv[i]);
  for (int i = 0; i < 2; i++) tg_batchnorm_free(m->bn[i]);
  tg_linear_free(m->fc);
  tg_state_dict_free(m->state);
  memset(m, 0, sizeof *m);
}

static bool model_init(Model *m) {
  memset(m, 0, sizeof *m);
  const int64_t k5[2] = {5, 5}, k3[2] = {3, 3};
  m->conv[0] = tg_conv2d_new(1, 32, k5, NULL);
  m->conv[1] = tg_conv2d_new(32, 32, k5, NULL);
  m->conv[2] = tg_conv2d_new(32, 64, k3, NULL);
  m->conv[3] = tg_conv2d_new(64, 64, k3, NULL);
  m->bn[0] = tg_batchnorm_new(32, 1e-5, 0.1, true, true);
  m->bn[1] = tg_batchnorm_new(64, 1e-5, 0.1, true, true);
  m->fc = tg_linear_new(576, 10, true);
  m->state = tg_state_dict_new();
  bool ok = m->conv[0] && m->conv[1] && m->conv[2] && m->conv[3] && m->bn[0] && m->bn[1] && m->fc && m->state;
  static const char *const names[] = {"layers.0", "layers.2", "layers.6", "layers.8"}; /* tinygrad's list indices */
  for (int i = 0; i < 4 && ok; i++) ok = tg_conv2d_state(m->conv[i], names[i], m->state) == TG_OK;
  ok = ok && tg_batchnorm_state(m->bn[0], "layers.4", m->state) == TG_OK;
  ok = ok && tg_batchnorm_state(m->bn[1], "layers.10", m->state) == TG_OK;
  ok = ok && tg_linear_state(m->fc, "layers.13", m->state) == TG_OK;
  return ok;
}

/* x (N, 1, 28, 28) float -> logits (N, 10); BatchNorm follows tg_is_training() */
static tg_tensor *model_forward(Model *m, const tg_tensor *x) {
  tg_tensor *h = tg_relu(tg_conv2d_forward(m->conv[0], x));
  h = tg_relu(tg_conv2d_forward(m->conv[1], h));
  h = tg_max_pool2d(tg_batchnorm_forward(m->bn[0], h), (const int64_t[2]){2, 2}, NULL, NULL, NULL);
  h = tg_relu(tg_conv2d_forward(m->conv[2], h));
  h = tg_relu(tg_conv2d_forward(m->conv[3], h));
  h = tg_max_pool2d(tg_batchnorm_forward(m->bn[1], h), (const int64_t[2]){2, 2}, NULL, NULL, NULL);
  return tg_linear_forward(m->fc, tg_flatten(h, 1, -1));
}

/* Test accuracy in percent over the first `limit` test images, in chunks; -1 on error. */
/* The train step (tinygrad's @TinyJit train_step): forward, loss, backward, Adam; returns the loss. */
typedef struct TrainStep { Model *model; tg_optim *opt; } TrainStep;

static tg_status train_step(void *user, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                            tg_tensor **out, size_t nout) {
  (void)nin, (void)vars, (void)nvars, (void)nout;
  TrainStep *ts = user;
  tg_tensor *l = tg_sparse_categorical_crossentropy(model_forward(ts->model, in[0]), in[1], -1, 0.0, TG_REDUCTION_MEAN);
  tg_optim_zero_grad(ts->opt);
  if (!l) return tg_last_status();
  tg_status st = tg_backward(l);
  if (st == TG_OK) st = tg_optim_step_with(ts->opt, &l, 1);
  out[0] = l;
  return st;
}

static double evaluate(Model *m, const tg_mnist *data, int64_t limit, float *img_scratch, int64_t chunk) {
  bool was = tg_set_training(false);
  int64_t n = data->test_images.shape[0], correct = 0;
  if (limit > 0 && limit < n) n = limit;
  const uint8_t *labels = data->test_labels.data;
  int32_t *pred = malloc((size_t)chunk * sizeof *pred);
  double acc = pred ? 0 : -1;
  for (int64_t first = 0; first < n && acc == 0; first += chunk) {
    int64_t count = n - first < chunk ? n - first : chunk;
    tg_scope s = tg_scope_begin();
    tg_tensor *x = images_tensor(&data->test_images, NULL, first, count, img_scratch);
    tg_tensor *p = tg_argmax(model_forward(m, x), 1, false);
    if (tg_to_host(p, pred, (size_t)count * sizeof *pred) != TG_OK) acc = -1;
    for (int64_t i = 0; i < count && acc == 0; i++) correct += pred[i] == labels[first + i];
    tg_scope_end(s);
  }
  free(pred);
  tg_set_training(was);
  return acc < 0 ? -1 : 100.0 * (double)correct / (double)n;
}

/* ---------------------------------------------------------------------------------------------------- progress */

/* One progress line: a bar, step/total, loss, steps/s and images/s, the latest test accuracy. On a terminal it is
 * redrawn in place; otherwise printed every `every` steps. */
static void progress(int step, int total, double loss, double elapsed, int64_t bs, double acc, bool tty, int every) {
  if (!tty && step != total && step % every != 0) return;
  enum { WIDTH = 24 };
  char bar[WIDTH * 3 + 1];
  size_t o = 0;
  int filled = total ? (int)((double)step / total * WIDTH) : WIDTH;
  for (int i = 0; i < WIDTH; i++) {
    const char *c = i < filled ? "\xe2\x96\x88" : " "; /* U+2588 full block */
    size_t l = strlen(c);
    memcpy(bar + o, c, l);
    o += l;
  }
  bar[o] = '\0';
  double sps = elapsed > 0 ? step / elapsed : 0;
  char accs[32] = "  n/a";
  if (!isnan(acc)) snprintf(accs, sizeof accs, "%5.2f%%", acc);
  printf("%s%3d%%|%s| %d/%d [%5.0fs] loss: %6.3f  %.3f steps/s  %.0f img/s  test_accuracy: %s%s", tty ? "\r" : "",
         total ? step * 100 / total : 100, bar, step, total, elapsed, loss, sps, sps * (double)bs, accs,
         tty ? "" : "\n");
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *data_arg = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) data_arg = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--data DIR]   (knobs: STEPS BS EVAL_EVERY EVAL_LIMIT TARGET_EVAL_ACC_PCT SEED)\n",
              argv[0]);
      return 2;
    }
  }
  int steps = (int)env_long("STEPS", 70), every = (int)env_long("EVAL_EVERY", 0);
  int decay_step = (int)env_long("LR_DECAY_STEP", 0);
  int64_t bs = env_long("BS", 512), eval_limit = env_long("EVAL_LIMIT", 0), eval_chunk = 500;
  double target = getenv("TARGET_EVAL_ACC_PCT") ? atof(getenv("TARGET_EVAL_ACC_PCT")) : 0;
  uint64_t seed = (uint64_t)env_long("SEED", 0);
  if (steps < 0 || bs < 1 || bs > 65536) {
    fprintf(stderr, "beautiful_mnist: STEPS must be >= 0 and BS in 1..65536\n");
    return 2;
  }
  double t_start = now_s();
  char dir[4096];
  if (!find_data_dir(data_arg, dir, sizeof dir)) return 1;
  tg_mnist data;
  if (tg_mnist_load(dir, &data) != TG_OK) return fail("loading the dataset");
  int64_t n_train = data.train_images.shape[0];
  printf("beautiful_mnist: Fashion-MNIST from %s: %lld training, %lld test images%s\n", dir, (long long)n_train,
         (long long)data.test_images.shape[0],
         n_train < 60000 ? " (the shipped subset; apt-get install dataset-fashion-mnist for the full set)" : "");

  tg_manual_seed(seed);
  Model model;
  if (!model_init(&model)) {
    int r = fail("building the model");
    model_free(&model);
    tg_mnist_free(&data);
    return r;
  }
  size_t n_state = tg_state_dict_len(model.state);
  tg_tensor **all = malloc(n_state * sizeof *all);
  int64_t n_params = 0;
  for (size_t i = 0; i < n_state; i++) {
    all[i] = tg_state_dict_tensor(model.state, i);
    if (tg_state_dict_is_param(model.state, i)) n_params += tg_numel(all[i]);
  }
  tg_optim *opt = tg_optim_adam(all, n_state, 0.001, 0.9, 0.999, 1e-8); /* BatchNorm's buffers ride along */
  free(all);
  if (!opt) {
    int r = fail("creating Adam");
    model_free(&model);
    tg_mnist_free(&data);
    return r;
  }
  printf("model: conv5x32, conv5x32, BatchNorm, maxpool, conv3x64, conv3x64, BatchNorm, maxpool, Linear 576->10 "
         "(%lld parameters); Adam lr 0.001", (long long)n_params);
  if (decay_step > 0) printf(" (0.0001 after step %d)", decay_step);
  printf("; batch %lld; %d steps\n", (long long)bs, steps);

  int64_t img_px = data.train_images.shape[1] * data.train_images.shape[2];
  int64_t scratch_rows = bs > eval_chunk ? bs : eval_chunk;
  float *img_scratch = malloc((size_t)(scratch_rows * img_px) * sizeof(float));
  int32_t *lab_scratch = malloc((size_t)bs * sizeof(int32_t));
  int64_t *rows = malloc((size_t)bs * sizeof(int64_t));
  int rc = 0;
  if (!img_scratch || !lab_scratch || !rows) {
    fprintf(stderr, "beautiful_mnist: out of memory\n");
    rc = 1;
  }
  bool tty = isatty(STDOUT_FILENO);
  int print_every = steps >= 20 ? steps / 10 : 1;
  double loss = NAN, acc = NAN, t_train = now_s(), t_eval = 0;
  uint64_t rng = seed ^ 0x5eedULL;
  tg_set_training(true);
  TrainStep ts = {&model, opt};
  tg_jit *jit = tg_jit_new(train_step, &ts, 1, NULL);
  if (!jit) rc = fail("creating the JIT");
  for (int step = 1; step <= steps && rc == 0; step++) {
    if (decay_step > 0 && step == decay_step + 1 && tg_optim_set_lr(opt, 0.0001) != TG_OK) rc = fail("lr decay");
    tg_scope s = tg_scope_begin();
    for (int64_t i = 0; i < bs; i++) rows[i] = (int64_t)(next_random(&rng) % (uint64_t)n_train);
    tg_tensor *x = images_tensor(&data.train_images, rows, 0, bs, img_scratch);
    tg_tensor *y = labels_tensor(&data.train_labels, rows, 0, bs, lab_scratch);
    tg_tensor *in[2] = {x, y}, *l = NULL;
    if (!x || !y || tg_jit_call(jit, in, 2, NULL, 0, &l) != TG_OK || tg_item_double(l, &loss) != TG_OK)
      rc = fail("training step");
    tg_scope_end(s);
    if (rc == 0 && every > 0 && step % every == 0 && step != steps) {
      double t0 = now_s();
      acc = evaluate(&model, &data, eval_limit, img_scratch, eval_chunk);
      t_eval += now_s() - t0;
      if (acc < 0) rc = fail("evaluating");
    }
    if (rc == 0) progress(step, steps, loss, now_s() - t_train - t_eval, bs, acc, tty, print_every);
  }
  double train_s = now_s() - t_train - t_eval;
  tg_jit_free(jit);
  if (tty && steps > 0) printf("\n");
  if (rc == 0) {
    double t0 = now_s();
    acc = evaluate(&model, &data, eval_limit, img_scratch, eval_chunk);
    t_eval += now_s() - t0;
    if (acc < 0) rc = fail("evaluating");
  }
  if (rc == 0) {
    int64_t n_test = data.test_images.shape[0];
    if (eval_limit > 0 && eval_limit < n_test) n_test = eval_limit;
    printf("test accuracy: %.2f%% on %lld test images after %d steps (%lld training images seen)\n", acc,
           (long long)n_test, steps, (long long)steps * (long long)bs);
    printf("wall time: %.1f s (training %.1f s = %.2f s/step, evaluation %.1f s)\n", now_s() - t_start, train_s,
           steps ? train_s / steps : 0.0, t_eval);
    if (target > 0) {
      if (acc >= target) printf("test accuracy %.2f%% >= target %.2f%%\n", acc, target);
      else {
        printf("test accuracy %.2f%% < target %.2f%%\n", acc, target);
        rc = 1;
      }
    }
  }
  free(img_scratch);
  free(lab_scratch);
  free(rows);
  tg_optim_free(opt);
  model_free(&model);
  tg_mnist_free(&data);
  return rc;
}
