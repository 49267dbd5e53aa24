/* test_train_memory.c — a training loop must not grow: a small MLP (16 -> 32 -> relu -> 4) trained with Adam on a
 * fixed batch for 2,000 steps keeps its resident memory (RSS after step 2,000 within 5% of RSS after step 100) and its
 * count of live tensor handles (the same after every step once warm). Also checks that it learns (the loss falls).
 * Under ASan+UBSan, where RSS means nothing and steps are slow, it runs 60 steps and checks the handle count and the
 * loss only. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "tinygrad.h"

/* Resident set size in bytes (the current one, from /proc/self/statm), or 0 when unknown. */
static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return n == 2 ? resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

void suite_train_memory(void) {
  enum { BATCH = 32, IN = 16, HID = 32, OUT = 4 };
  int steps = tg_test_light() ? 60 : 2000, warm = tg_test_light() ? 10 : 100;
  tg_manual_seed(1);
  tg_linear_layer *l1 = tg_linear_new(IN, HID, true), *l2 = tg_linear_new(HID, OUT, true);
  CHECK(l1 && l2);
  if (!l1 || !l2) {
    tg_linear_free(l1);
    tg_linear_free(l2);
    return;
  }
  tg_tensor *params[4] = {l1->weight, l1->bias, l2->weight, l2->bias};
  tg_optim *opt = tg_optim_adam(params, 4, 0.01, 0.9, 0.999, 1e-8);
  CHECK(opt != NULL);
  /* a fixed, learnable batch: the class is the index of the largest of the first 4 inputs */
  static float x[BATCH * IN];
  static int32_t y[BATCH];
  uint32_t s = 12345;
  for (int i = 0; i < BATCH * IN; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
  for (int b = 0; b < BATCH; b++) {
    int best = 0;
    for (int j = 1; j < OUT; j++) best = x[b * IN + j] > x[b * IN + best] ? j : best;
    y[b] = best;
  }
  bool was_training = tg_set_training(true);
  size_t rss_warm = 0, live_warm = 0;
  double first_loss = -1, loss = -1;
  int bad_steps = 0, live_changes = 0;
  for (int step = 1; step <= steps && opt; step++) {
    tg_scope sc = tg_scope_begin();
    tg_tensor *xt = tg_from_floats(x, TG_SHAPE(BATCH, IN));
    tg_tensor *yt = tg_from_data(y, TG_INT32, TG_SHAPE(BATCH));
    tg_tensor *logits = tg_linear_forward(l2, tg_relu(tg_linear_forward(l1, xt)));
    tg_tensor *l = tg_sparse_categorical_crossentropy(logits, yt, -1, 0.0, TG_REDUCTION_MEAN);
    tg_optim_zero_grad(opt);
    if (!l || tg_backward(l) != TG_OK || tg_optim_step_with(opt, &l, 1) != TG_OK || tg_item_double(l, &loss) != TG_OK)
      bad_steps++;
    tg_scope_end(sc);
    if (step == 1) first_loss = loss;
    if (step == warm) {
      rss_warm = rss_bytes();
      live_warm = tg_live_tensors();
    } else if (step > warm && tg_live_tensors() != live_warm) {
      live_changes++;
    }
    if (bad_steps) break;
  }
  CHECK_MSG(bad_steps == 0, "training step failed: %s", tg_last_error());
  CHECK_MSG(live_changes == 0, "live tensor handles changed after warm-up in %d steps (%zu at step %d, %zu at end)",
            live_changes, live_warm, warm, tg_live_tensors());
  CHECK_MSG(loss >= 0 && loss < 0.5 * first_loss, "loss %.4f after %d steps, %.4f at the start", loss, steps,
            first_loss);
  if (!tg_test_light()) {
    size_t rss_end = rss_bytes();
    CHECK(rss_warm > 0 && rss_end > 0);
    double growth = rss_warm ? ((double)rss_end - (double)rss_warm) / (double)rss_warm : 1;
    CHECK_MSG(growth <= 0.05, "RSS grew %.1f%%: %zu KiB after step %d, %zu KiB after step %d", growth * 100,
              rss_warm / 1024, warm, rss_end / 1024, steps);
    if (getenv("TG_TRAIN_MEMORY_VERBOSE"))
      fprintf(stderr, "train_memory: RSS %zu KiB after step %d, %zu KiB after step %d (%+.2f%%); loss %.4f -> %.4f\n",
              rss_warm / 1024, warm, rss_end / 1024, steps, growth * 100, first_loss, loss);
  }
  tg_set_training(was_training);
  tg_optim_free(opt);
  tg_linear_free(l1);
  tg_linear_free(l2);
}
