#!/usr/bin/env bash
# gpu_session.sh — everything one session does on the GPU machine, in one command: build (gcc; where sqlite3.h is
# missing, as on the lent H200 image, a header carried in .devdeps/ is used with the system's libsqlite3.so.0), the
# GPU suites (make test-gpu), the op fixtures and gradient parity suites on DEV=CUDA, then make bench-gpu.
# then beautiful_mnist trained on DEV=CUDA (the full Fashion-MNIST from FASHION_MNIST_DIR, default
# /usr/share/datasets/fashion-mnist, else .devdeps/fashion-mnist). Logs go to $OUT (or build/gpu_out).
# Steps: GPU_STEPS="build test fixtures demo conv hostprof bench" (default all but conv, the conv2d A/B of GPU_CONV_BLOCK,
# GPU_CONV_BCAST, CONTIG_HINTS and WINO, and hostprof, perf over the eager conv's host side).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu_out}; mkdir -p "$out"
steps=${GPU_STEPS:-build test fixtures demo bench}
mk=(make -j"$(nproc)" CC=gcc)
if [ ! -f /usr/include/sqlite3.h ] && [ -f .devdeps/sqlite3.h ]; then
  mkdir -p .devdeps/lib && ln -sf /lib/x86_64-linux-gnu/libsqlite3.so.0 .devdeps/lib/libsqlite3.so
  mk+=(CFLAGS=-I"$PWD/.devdeps" LDLIBS="-L$PWD/.devdeps/lib -lm -lpthread -ldl -lsqlite3 -lz")
fi
export CACHEDB=${CACHEDB:-$PWD/build/cache.db}
t0=$(date +%s)
# the device tool sends the checkout the session started in, never a helper's git worktree: a worktree's changes
# travel only when copied into a folder of that checkout that .git/info/exclude ignores and named in `carry`
# (e.g. .gpuwt/), with the command run from there (/work/.library/device/README.md)
echo "== source tree: $PWD (a helper's worktree is not here unless copied into an excluded folder and carried)"
stamp() { echo "== $1 ($(( $(date +%s) - t0 )) s)"; }
# what the steps run (not `make all`: tg-llm needs libmicrohttpd and cJSON headers, which the GPU image lacks)
targets=(lib build/run_tests build/run_tests_gpu build/bench_gpu build/bench_train build/beautiful_mnist build/gemm_probe build/gpu_opts
  build/bench_llm build/tg-mkmodel)
case " $steps " in *" build "*) stamp build; "${mk[@]}" "${targets[@]}" >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; } ;; esac
case " $steps " in *" test "*) stamp test-gpu; build/run_tests_gpu 2>&1 | tee "$out/test_gpu.log" | tail -40 ;; esac
case " $steps " in *" fixtures "*)
  stamp "fixtures on CUDA"
  DEV=CUDA timeout 300 build/run_tests ${GPU_CPU_SUITES:-fixtures grad_parity ops e2e variables} 2>&1 | tee "$out/fixtures_cuda.log" | tail -40 ;;
esac
case " $steps " in *" demo "*)
  stamp "beautiful_mnist on CUDA"
  mnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}; [ -d "$mnist" ] || mnist=$PWD/.devdeps/fashion-mnist
  DEV=CUDA FASHION_MNIST_DIR=$mnist STEPS=900 BS=512 EVAL_EVERY=100 LR_DECAY_STEP=600 timeout 300 build/beautiful_mnist \
    2>&1 | tee "$out/demo_cuda.log" | tail -15 ;;
esac
case " $steps " in *" conv "*)
  # the conv2d figure's open questions (README, issue 16): the block's size and shape (gpu_opts GPU_OPTS_TRY, each list
  # timed as BEAM does), then bench_gpu's conv and the CNN step under each variant, two alternating rounds, and torch's
  stamp "conv A/B"
  GPU_OPTS_TRY=tools/gpu_conv_try_inner.txt build/gpu_opts conv 2>&1 | grep -E "^r_|try" | tee "$out/conv_try.log"
  CONTIG_HINTS=2 GPU_OPTS_TRY=tools/gpu_conv_try_bcast.txt build/gpu_opts conv 2>&1 | grep -E "^r_|try" | tee -a "$out/conv_try.log"
  CONTIG_HINTS=0 GPU_OPTS_TRY=tools/gpu_conv_try_bcast.txt build/gpu_opts conv 2>&1 | grep -E "^r_|try" | tee -a "$out/conv_try.log"
  WINO=1 GPU_OPTS_TRY=tools/gpu_wino_try.txt build/gpu_opts conv 2>&1 | grep -E "^r_|try" | tee -a "$out/conv_try.log"
  variants=("" "GPU_CONV_BLOCK=128" "CONTIG_HINTS=2 GPU_CONV_BCAST=8" "CONTIG_HINTS=2 GPU_CONV_BCAST=4" "CONTIG_HINTS=0 GPU_CONV_BCAST=8"
            "CONTIG_HINTS=2 GPU_CONV_BCAST=8 GPU_CONV_BLOCK=128" "WINO=1")
  # WINO=1 (Winograd F(4x4,3x3)): its four kernels, each timed alone (DEBUG=2), for the default and the 128-thread block
  # (WINO_GEMM=0: tinygrad's layouts), and under BEAM=2 (a fresh cache: the search, then the figure)
  for v in "" "WINO_GEMM=0" "GPU_CONV_BLOCK=128"; do
    echo "== WINO=1 $v kernels"; env $v WINO=1 DEV=CUDA DEBUG=2 BENCH_SECONDS=0 build/bench_gpu conv2d_64x32x28x28_k3 2>&1 |
      sed 's/\x1b\[[0-9;]*m//g' | grep '^\*\*\*' | tail -5
  done 2>&1 | tee "$out/conv_wino.log"
  wcache=$(mktemp -d)
  for r in 1 2; do
    echo "[WINO=1 BEAM=2 call $r] $(CACHEDB=$wcache/b.db WINO=1 BEAM=2 DEV=CUDA timeout 200 build/bench_gpu conv2d_64x32x28x28_k3 | tr '\n' ' ')"
  done 2>&1 | tee -a "$out/conv_wino.log"
  CACHEDB=$wcache/b.db WINO=1 BEAM=2 DEV=CUDA DEBUG=2 BENCH_SECONDS=0 build/bench_gpu conv2d_64x32x28x28_k3 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g' | grep '^\*\*\*' | tail -4 | tee -a "$out/conv_wino.log"
  rm -rf "$wcache"
  python3 bench/peer_torch_gpu.py conv2d_64x32x28x28_k3 2>&1 | tee "$out/conv_peer.log" # torch before and after: its spread
  for round in 1 2; do
    for v in "${variants[@]}"; do
      echo "[$v] $(env $v DEV=CUDA build/bench_gpu realize_1_kernel conv2d_64x32x28x28_k3 | tr '\n' ' ')"
    done
  done 2>&1 | tee "$out/conv_ab.log"
  for v in "${variants[@]}"; do echo "[$v] $(env $v DEV=CUDA build/bench_train 5 0 0 2>&1 | grep -E '^train_cnn' | tr '\n' ' ')"; done \
    2>&1 | tee -a "$out/conv_ab.log"
  python3 bench/peer_torch_gpu.py conv2d_64x32x28x28_k3 2>&1 | tee -a "$out/conv_ab.log" "$out/conv_peer.log" >/dev/null
  cat "$out/conv_peer.log"
  # Nsight Compute on the conv kernel of each variant (at ncu's locked clocks): waves, occupancy, issue, stalls
  if command -v ncu >/dev/null; then
    for v in "" "GPU_CONV_BLOCK=128" "CONTIG_HINTS=2 GPU_CONV_BCAST=8"; do
      echo "== ncu [$v]"
      env $v DEV=CUDA timeout 120 ncu --kernel-name regex:'^r_64' --launch-count 1 --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
        build/bench_gpu conv2d_64x32x28x28_k3 2>&1 | grep -E "^  r_|Duration|Registers Per|Waves Per|Achieved Occ|SM Active|Elapsed Cyc|Issue Slots|Eligible Warps|Warp Cycles Per Issued"
    done 2>&1 | tee "$out/conv_ncu.log"
  fi ;;
esac
case " $steps " in *" hostprof "*)
  # where the eager conv's host time goes on the GPU machine (its realize returns after ~35 us there, ~7 us here)
  stamp "host profile"
  if command -v perf >/dev/null; then
    DEV=CUDA BENCH_RUNS=50000 BENCH_SECONDS=4 perf record -q -g -o "$out/perf.data" build/bench_gpu conv2d_64x32x28x28_k3 \
      >/dev/null 2>&1
    perf report -q -i "$out/perf.data" --no-children --sort dso,symbol 2>/dev/null | grep -v "^$" | head -40 | tee "$out/hostprof.log"
  else
    echo "no perf on this machine"
  fi ;;
esac
case " $steps " in *" bench "*) stamp bench-gpu; timeout 400 bash bench/run_gpu.sh build 2>&1 | tee "$out/bench_gpu.log" ;; esac
stamp done
