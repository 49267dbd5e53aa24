#!/usr/bin/env bash
# demo.sh — `make demo`. The main part: tinygrad's beautiful_mnist CNN trained on Fashion-MNIST in C
# (examples/beautiful_mnist.c: autograd, nn layers, Adam, all through generated, fused kernels on the CPU) with
# tinygrad's settings (batch 512, Adam lr 1e-3), on Debian's dataset-fashion-mnist when installed, else on the subset
# shipped in data/. With the full dataset it trains 900 steps (Adam's lr drops to a tenth after step 600: without it
# the accuracy hovers around 90%, 90.45% and 89.96% at step 900 in two runs) and evaluates on all 10,000 test images
# every 100 steps. Measured on this 2-core machine: 91.01% test accuracy after 900 steps, 0.24 s/step (make demo 4 min
# 2 s wall; 0.28 s/step before the pool view and the weight-gradient loop orders, 0.65 s/step before the vector
# accumulators and the split weight gradients; 91.15% at 0.32 s/step with the weight gradients' output gradient not yet
# channel-inner: the sums run in another order).
# With the subset it trains 200 steps.
# DEMO_STEPS / DEMO_BS / DEMO_EVAL (test images) override; e.g. DEMO_STEPS=30 for a quick look.
# Then the earlier stages: an MLP forward pass checked against plain C, the symbolic simplifier, a symbolic fuzz run.
set -e
B=${1:-build}
echo "== training: beautiful_mnist on Fashion-MNIST"
have_dataset() {
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -f "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/$f" ] || return 1
  done
}
# the set-up on a fresh machine: Debian's dataset-fashion-mnist (30 MB) installed with apt-get when it is missing
# (DEMO_INSTALL=0: never; without root or sudo, or offline, the subset in data/ is used and a line says so)
if ! have_dataset && [ -z "${FASHION_MNIST_DIR:-}" ] && [ "${DEMO_INSTALL:-1}" != 0 ] && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
  echo "installing Debian's dataset-fashion-mnist with apt-get"
  { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
      dataset-fashion-mnist; } >/dev/null 2>&1 || echo "could not install dataset-fashion-mnist: training on the subset in data/"
fi
missing=0
have_dataset || missing=1
if [ $missing -eq 0 ]; then steps=900; every=100; decay=600; else steps=200; every=0; decay=0; fi
STEPS=${DEMO_STEPS:-${STEPS:-$steps}} BS=${DEMO_BS:-${BS:-512}} EVAL_LIMIT=${DEMO_EVAL:-${EVAL_LIMIT:-0}} \
  EVAL_EVERY=${EVAL_EVERY:-$every} LR_DECAY_STEP=${LR_DECAY_STEP:-$decay} "$B/beautiful_mnist"
echo
echo "== the tensor pipeline"
"$B/demo_tensor"
echo
"$B/demo_symbolic"
echo
"$B/fuzz_symbolic" 20000 1
