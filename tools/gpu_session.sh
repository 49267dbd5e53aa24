#!/usr/bin/env bash
# gpu_session.sh — everything one session does on the GPU machine, in one command: build (gcc; where sqlite3.h is
# missing, as on the lent H200 image, a header carried in .devdeps/ is used with the system's libsqlite3.so.0), the
# GPU suites (make test-gpu), the op fixtures and gradient parity suites on DEV=CUDA, then make bench-gpu.
# then beautiful_mnist trained on DEV=CUDA (the full Fashion-MNIST from FASHION_MNIST_DIR, default
# /usr/share/datasets/fashion-mnist, else .devdeps/fashion-mnist). Logs go to $OUT (or build/gpu_out).
# Steps: GPU_STEPS="build test fixtures demo bench" (default all).
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
case " $steps " in *" bench "*) stamp bench-gpu; timeout 400 bash bench/run_gpu.sh build 2>&1 | tee "$out/bench_gpu.log" ;; esac
stamp done
