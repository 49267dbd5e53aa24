#!/usr/bin/env bash
# demo.sh — `make demo`. Until the training issue lands, the demo shows what exists: an MLP forward pass through the
# whole pipeline (lazy tensors -> fused kernels -> C -> CPU, checked against plain C), the symbolic simplifier on a
# convolution's index math (proved by exhaustive evaluation), and a short symbolic fuzz run.
set -e
B=${1:-build}
"$B/demo_tensor"
echo
"$B/demo_symbolic"
echo
"$B/fuzz_symbolic" 20000 1
