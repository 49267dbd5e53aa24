/* demo_tensor.c — the Tensor stage of `make demo`: an MLP forward pass (784 -> 128 -> relu -> 10 -> softmax) on a
 * batch of 64 random inputs, built lazily with the public API, scheduled into fused kernels, compiled and run on the
 * CPU; DEBUG=2 lines show each kernel. The result is checked against the same computation in plain C. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tinygrad.h"

static float *random_floats(size_t n, unsigned seed, float scale) {
  float *x = malloc(n * sizeof(float));
  if (!x) exit(1);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = ((float)(seed >> 9) / (float)(1u << 23) * 2.0f - 1.0f) * scale;
  }
  return x;
}

int main(void) {
  enum { B = 64, IN = 784, HID = 128, OUT = 10 };
  setenv("DEBUG", "2", 0);
  printf("tinygrad.c tensor demo: MLP forward (64x784 -> 128 -> relu -> 10 -> softmax) on the CPU\n\n");
  float *x = random_floats(B * IN, 1, 1.0f), *w1 = random_floats(IN * HID, 2, 0.05f), *w2 = random_floats(HID * OUT, 3, 0.2f);
  int64_t sx[2] = {B, IN}, s1[2] = {IN, HID}, s2[2] = {HID, OUT};
  tg_scope sc = tg_scope_begin();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tg_tensor *h = tg_relu(tg_matmul(tg_from_floats(x, sx, 2), tg_from_floats(w1, s1, 2)));
  tg_tensor *p = tg_softmax(tg_matmul(h, tg_from_floats(w2, s2, 2)), -1);
  static float got[B * OUT];
  if (tg_to_host(p, got, sizeof got) != TG_OK) {
    fprintf(stderr, "demo: %s\n", tg_last_error());
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  /* the same in plain C */
  double max_err = 0;
  for (int b = 0; b < B; b++) {
    float hid[HID], logits[OUT], m = -INFINITY, s = 0;
    for (int j = 0; j < HID; j++) {
      float acc = 0;
      for (int k = 0; k < IN; k++) acc += x[b * IN + k] * w1[k * HID + j];
      hid[j] = acc > 0 ? acc : 0;
    }
    for (int j = 0; j < OUT; j++) {
      float acc = 0;
      for (int k = 0; k < HID; k++) acc += hid[k] * w2[k * OUT + j];
      logits[j] = acc;
      m = fmaxf(m, acc);
    }
    for (int j = 0; j < OUT; j++) s += expf(logits[j] - m);
    for (int j = 0; j < OUT; j++) max_err = fmax(max_err, fabs(expf(logits[j] - m) / s - got[b * OUT + j]));
  }
  printf("\n  first row: ");
  for (int j = 0; j < OUT; j++) printf("%.4f ", got[j]);
  printf("\n  max |ours - plain C| = %.3g over %d probabilities; %.1f ms including compilation\n", max_err, B * OUT, ms);
  tg_scope_end(sc);
  free(x), free(w1), free(w2);
  return max_err < 1e-4 ? 0 : 1;
}
