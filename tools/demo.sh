#!/usr/bin/env bash
# demo.sh — `make demo`. The main part: tinygrad's beautiful_mnist CNN trained on Fashion-MNIST in C
# (examples/beautiful_mnist.c: autograd, nn layers, Adam, all through generated, fused kernels on the CPU), on Debian's
# dataset-fashion-mnist when installed, else on the subset shipped in data/. The CPU kernels are not optimized yet,
# so the demo trains a short run by default (DEMO_STEPS steps of DEMO_BS images, accuracy on DEMO_EVAL test images);
# tinygrad's full settings are `STEPS=70 BS=512 build/beautiful_mnist` (about a minute per step on 2 cores today).
# Then the earlier stages: an MLP forward pass checked against plain C, the symbolic simplifier, a symbolic fuzz run.
set -e
B=${1:-build}
echo "== training: beautiful_mnist on Fashion-MNIST"
STEPS=${DEMO_STEPS:-${STEPS:-30}} BS=${DEMO_BS:-${BS:-64}} EVAL_LIMIT=${DEMO_EVAL:-${EVAL_LIMIT:-1000}} \
  "$B/beautiful_mnist"
echo
echo "== the tensor pipeline"
"$B/demo_tensor"
echo
"$B/demo_symbolic"
echo
"$B/fuzz_symbolic" 20000 1
