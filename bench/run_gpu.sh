#!/usr/bin/env bash
# run_gpu.sh — `make bench-gpu`: the GPU issue's figures, ours (build/bench_gpu and build/bench_train on DEV=CUDA) and
# PyTorch on CUDA (bench/peer_torch_gpu.py, the GPU machine's python3) side by side in one run. One line per figure:
#   bench <name> ours=<v> <unit> <peer>=<v> ratio=<r>, r > 1: we are r times faster (throughput ours/peer, time peer/ours)
# The memory-bound figures are also given against the device-to-device copy (torch's copy_, the roofline):
# relu(a*b+c) and sum over 2^28 float32 (target >= 0.92x copy). Matmuls run with the heuristic and with BEAM=2
# (`_beam2` lines; BENCH_BEAM=0 skips them, BENCH_BEAM_FIGURES picks the figures, BENCH_BEAM_TIMEOUT caps the run).
# The JIT on CUDA: train_cnn_jit (the CNN step replayed), jit_replay_{1,50}_graph (CUDA graphs vs JIT=2's direct
# launches, per kernel) and _vs_eager (times: ratio = peer/ours). Both sides time a call alike: the device's time
# between two events queued before and after it (torch.cuda.Event; ours tg_mark_record), the median of the runs.
# Needs a CUDA device: without one it says so and exits 1.
set -u
B=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
py=${TORCH_PYTHON:-python3}
export DEV=CUDA
value() { echo "$2" | awk -v k="$1" '$1 == k { print $2; exit }'; }
line() { # name ours peer unit peer_name
  if [ -n "$2" ] && [ -n "$3" ]; then
    echo "bench $1 ours=$2 $4 $5=$3 ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", a / b }')"
  else
    echo "bench $1 ours=${2:-n/a} $4 $5=${3:-n/a} ratio=n/a"
  fi
}
line_time() { # the same for a time (lower is better): ratio = peer/ours
  if [ -n "$2" ] && [ -n "$3" ]; then
    echo "bench $1 ours=$2 $4 $5=$3 ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", b / a }')"
  else
    echo "bench $1 ours=${2:-n/a} $4 $5=${3:-n/a} ratio=n/a"
  fi
}
ours=$("$B/bench_gpu" 2>&1); rc=$?
echo "$ours" | grep -E "failed|error" | sed 's/^/bench: ours: /'
[ $rc -ne 0 ] && { echo "bench: $B/bench_gpu exited $rc"; echo "$ours" | tail -3; }
peer=$("$py" "$ROOT/bench/peer_torch_gpu.py" 2>&1) || { echo "bench: torch peer failed:"; echo "$peer" | tail -5; }
copy=$(value "copy_d2d_2^28" "$peer")
line "copy_kernel_2^28" "$(value "copy_kernel_2^28" "$ours")" "$copy" GB/s torch_copy
for f in relu_fma_2^28 sum_2^28; do
  line "$f" "$(value "$f" "$ours")" "$copy" GB/s torch_copy
  line "${f}_vs_torch" "$(value "$f" "$ours")" "$(value "$f" "$peer")" GB/s torch
done
line softmax_4096x4096 "$(value softmax_4096x4096 "$ours")" "$(value softmax_4096x4096 "$peer")" GB/s torch
mm="matmul_fp16_4096 matmul_fp16_8192 matmul_bf16_4096 matmul_bf16_8192 matmul_fp32_4096"
for f in $mm; do line "$f" "$(value "$f" "$ours")" "$(value "$f" "$peer")" TFLOPS cublas; done
# conv2d: torch's default runs cuDNN on TF32 tensor cores; ours is IEEE fp32 unless ALLOW_TF32=1 (tinygrad's knob).
# Both precisions are printed, each against the peer in the same precision (_fp32: cudnn.allow_tf32 off).
conv=conv2d_64x32x28x28_k3
ours_tf32=$(ALLOW_TF32=1 "$B/bench_gpu" $conv 2>&1)
line $conv "$(value $conv "$ours")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
line ${conv}_fp32 "$(value $conv "$ours")" "$(value ${conv}_fp32 "$peer")" GFLOPS cudnn_fp32
line ${conv}_tf32 "$(value $conv "$ours_tf32")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
# the whole eager call (the graph's build inside the timed region, as torch's dispatch is in its) and the conv
# replayed by the JIT (tinygrad's speed_v_torch: TinyJit against torch eager), both timed by device events
line ${conv}_call "$(value ${conv}_call "$ours")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
line ${conv}_call_fp32 "$(value ${conv}_call "$ours")" "$(value ${conv}_fp32 "$peer")" GFLOPS cudnn_fp32
line ${conv}_jit "$(value ${conv}_jit "$ours")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
line ${conv}_jit_fp32 "$(value ${conv}_jit "$ours")" "$(value ${conv}_fp32 "$peer")" GFLOPS cudnn_fp32
line ${conv}_jit_tf32 "$(value ${conv}_jit "$ours_tf32")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
# tinygrad's WINO=1 (Winograd F(4x4,3x3) in fp32 arithmetic) against both of cuDNN's
ours_wino=$(WINO=1 "$B/bench_gpu" $conv 2>&1)
line ${conv}_wino "$(value $conv "$ours_wino")" "$(value $conv "$peer")" GFLOPS cudnn_tf32
line ${conv}_wino_fp32 "$(value $conv "$ours_wino")" "$(value ${conv}_fp32 "$peer")" GFLOPS cudnn_fp32
# the eager call's fixed cost and the conv's call, each with its host part (tg_realize's return) and its wall until
# the sync returns (the figures above are the device's time between events, as torch's)
echo "$ours" | grep -E "^(realize_1_kernel|${conv}_us) " | sed 's/^/bench: ours: /'
if [ "${BENCH_BEAM:-1}" != 0 ]; then
  # the BEAM search's first call (fresh cache: the search itself), then the figure from the cache
  cache=$(mktemp -d)
  for f in matmul_fp16_4096; do
    t0=$(date +%s.%N)
    CACHEDB=$cache/beam.db BEAM=2 BENCH_SECONDS=0 "$B/bench_gpu" "$f" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "bench beam_first_call_$f ours=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s target=10 ratio=n/a"
  done
  beam_figs=${BENCH_BEAM_FIGURES:-$mm}
  beam=$(CACHEDB=$cache/beam.db BEAM=2 timeout "${BENCH_BEAM_TIMEOUT:-600}" "$B/bench_gpu" $beam_figs 2>&1)
  for f in $beam_figs; do line "${f}_beam2" "$(value "$f" "$beam")" "$(value "$f" "$peer")" TFLOPS cublas; done
  rm -rf "$cache"
fi
train=$("$B/bench_train" 5 0 0 2>&1)
echo "$train" | grep -E "bench_train:" | sed 's/^/bench: ours: /'
line train_cnn "$(value train_cnn "$train")" "$(value train_cnn "$peer")" steps/s torch
line train_cnn_jit "$(value train_cnn_jit "$train")" "$(value train_cnn "$peer")" steps/s torch
line train_cnn_jit_fp32 "$(value train_cnn_jit "$train")" "$(value train_cnn_fp32 "$peer")" steps/s torch_fp32
train_tf32=$(ALLOW_TF32=1 "$B/bench_train" 5 0 0 2>&1)
line train_cnn_jit_tf32 "$(value train_cnn_jit "$train_tf32")" "$(value train_cnn "$peer")" steps/s torch
line train_cnn_jit_vs_eager "$(value train_cnn_jit "$train")" "$(value train_cnn "$train")" steps/s eager
echo "bench train_cnn_jit_overhead ours=$(value train_cnn_jit_overhead "$train") ms/step"
# the JIT's replay on CUDA: CUDA graphs (JIT=1) against one launch per kernel (JIT=2), per kernel (a time: the ratio
# is direct time / graph time), and the graph replay against the eager realize of the same chain
graph=$("$B/bench_train" 0 0 20000 2>&1)
direct=$(JIT=2 "$B/bench_train" 0 0 20000 2>&1)
echo "$graph$direct" | grep -E "bench_train:" | sed 's/^/bench: ours: /'
for k in 1 50; do
  unit=us; [ $k -gt 1 ] && unit=us/kernel
  line_time "jit_replay_${k}_graph" "$(value jit_replay_$k "$graph")" "$(value jit_replay_$k "$direct")" "$unit" direct
  line_time "jit_replay_${k}_vs_eager" "$(value jit_replay_$k "$graph")" "$(value eager_chain_$k "$graph")" "$unit" eager
done
# the LLM on the GPU (issue 18): a 1B llama-shaped random model in F16 (tg-mkmodel --preset 1b --type f16, cached under
# $B/llm), DEV=CUDA build/bench_llm: decode (BENCH_LLM_NTOK, 32, one-token steps) and prefill (a 32-token prompt),
# against bench/peer_torch_llm.py on the same file (torch float16, eager, on CUDA); llm_1b_f16_first_token compares
# both greedy tokens after the prompt (the same weights give the same token, up to float16 rounding). BENCH_LLM=0 skips.
if [ "${BENCH_LLM:-1}" != 0 ]; then
  llm_ntok=${BENCH_LLM_NTOK:-32}
  f="$B/llm/llama1b_f16.gguf"
  mkdir -p "$B/llm"
  if [ ! -f "$f" ] && [ -x "$B/tg-mkmodel" ]; then
    "$B/tg-mkmodel" -o "$f.tmp" --preset 1b --type f16 >/dev/null 2>&1 && mv "$f.tmp" "$f" || rm -f "$f.tmp"
  fi
  if [ -f "$f" ] && [ -x "$B/bench_llm" ]; then
    o=$(timeout "${BENCH_LLM_TIMEOUT:-300}" "$B/bench_llm" "$f" 1 "$llm_ntok" 32 2>&1) || echo "bench: bench_llm on CUDA failed: $(echo "$o" | tail -2)"
    p=$("$py" "$ROOT/bench/peer_torch_llm.py" "$f" "$llm_ntok" 32 2>&1) || echo "bench: torch LLM peer failed: $(echo "$p" | tail -2)"
    line llm_1b_f16_decode_cuda "$(value decode_tok_s "$o")" "$(value decode_tok_s "$p")" tok/s torch
    line llm_1b_f16_prefill_cuda "$(value prefill_tok_s "$o")" "$(value prefill_tok_s "$p")" tok/s torch
    echo "bench llm_1b_f16_first_token ours=$(value first_token "$o") torch=$(value first_token "$p")" \
      "(decode: $(value decode_kernels "$o") kernels, $(value bytes_per_token "$o") B/token)"
  else
    echo "bench: LLM figures not run: no $f (tg-mkmodel) or $B/bench_llm"
  fi
fi
