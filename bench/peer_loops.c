/* peer_loops.c — the hand-written peers of bench_tensor: plain C loops over 2 threads, compiled -O3 -march=native
 * (the Makefile builds this file with those flags). They stand for "the machine's bandwidth" in make bench. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>

#include "peer_loops.h"

typedef struct Part {
  const float *a, *b, *c;
  float *out;
  size_t lo, hi;
  double acc;
  int rows, cols;
} Part;

static void *relu_fma_part(void *arg) {
  Part *p = arg;
  for (size_t i = p->lo; i < p->hi; i++) {
    float v = p->a[i] * p->b[i] + p->c[i];
    p->out[i] = v > 0.0f ? v : 0.0f;
  }
  return NULL;
}

static void *sum_part(void *arg) {
  Part *p = arg;
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  size_t i = p->lo;
  for (; i + 8 <= p->hi; i += 8) {
    s0 += p->a[i], s1 += p->a[i + 1], s2 += p->a[i + 2], s3 += p->a[i + 3];
    s4 += p->a[i + 4], s5 += p->a[i + 5], s6 += p->a[i + 6], s7 += p->a[i + 7];
  }
  for (; i < p->hi; i++) s0 += p->a[i];
  p->acc = (double)(s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7);
  return NULL;
}

/* columns [lo, hi) of a rows x cols matrix summed over its rows: out[c] += a[r][c], row by row */
static void *colsum_part(void *arg) {
  Part *p = arg;
  for (size_t c = p->lo; c < p->hi; c++) p->out[c] = 0.0f;
  for (int r = 0; r < p->rows; r++) {
    const float *x = p->a + (size_t)r * (size_t)p->cols;
    for (size_t c = p->lo; c < p->hi; c++) p->out[c] += x[c];
  }
  return NULL;
}

static void *softmax_part(void *arg) {
  Part *p = arg;
  for (size_t r = p->lo; r < p->hi; r++) {
    const float *x = p->a + r * (size_t)p->cols;
    float *y = p->out + r * (size_t)p->cols;
    float m = -INFINITY, s = 0;
    for (int j = 0; j < p->cols; j++) m = x[j] > m ? x[j] : m;
    for (int j = 0; j < p->cols; j++) s += (y[j] = expf(x[j] - m));
    float inv = 1.0f / s;
    for (int j = 0; j < p->cols; j++) y[j] *= inv;
  }
  return NULL;
}

static double run2(void *(*fn)(void *), Part *parts) {
  pthread_t t;
  pthread_create(&t, NULL, fn, &parts[1]);
  fn(&parts[0]);
  pthread_join(t, NULL);
  return parts[0].acc + parts[1].acc;
}

void peer_relu_fma(const float *a, const float *b, const float *c, float *out, size_t n) {
  Part p[2] = {{a, b, c, out, 0, n / 2, 0, 0, 0}, {a, b, c, out, n / 2, n, 0, 0, 0}};
  run2(relu_fma_part, p);
}

double peer_sum(const float *a, size_t n) {
  Part p[2] = {{a, NULL, NULL, NULL, 0, n / 2, 0, 0, 0}, {a, NULL, NULL, NULL, n / 2, n, 0, 0, 0}};
  return run2(sum_part, p);
}

void peer_softmax(const float *x, float *y, int rows, int cols) {
  Part p[2] = {{x, NULL, NULL, y, 0, (size_t)rows / 2, 0, rows, cols}, {x, NULL, NULL, y, (size_t)rows / 2, (size_t)rows, 0, rows, cols}};
  run2(softmax_part, p);
}

void peer_sum_axis0(const float *a, float *out, int rows, int cols) {
  size_t half = (size_t)cols / 2 / 16 * 16;
  Part p[2] = {{a, NULL, NULL, out, 0, half, 0, rows, cols}, {a, NULL, NULL, out, half, (size_t)cols, 0, rows, cols}};
  run2(colsum_part, p);
}
