/* peer_loops.h — hand-written 2-thread C loops, the peers of bench_tensor. */
#ifndef TG_PEER_LOOPS_H
#define TG_PEER_LOOPS_H
#include <stddef.h>
void peer_relu_fma(const float *a, const float *b, const float *c, float *out, size_t n);
double peer_sum(const float *a, size_t n);
void peer_softmax(const float *x, float *y, int rows, int cols);
void peer_sum_axis0(const float *a, float *out, int rows, int cols); /* out[c] = sum over rows of a[r][c] */
#endif
