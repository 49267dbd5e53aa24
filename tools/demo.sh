#!/usr/bin/env bash
# demo.sh — `make demo`. Until the Tensor and training issues land, the demo shows the foundation: the symbolic
# simplifier on a convolution's index math (proved by exhaustive evaluation), then a short symbolic fuzz run.
set -e
B=${1:-build}
"$B/demo_symbolic"
echo
"$B/fuzz_symbolic" 20000 1
