#!/usr/bin/env bash
# run.sh — `make bench`: runs our benchmarks and tinygrad on the same graphs on this machine, and prints one line per
# benchmark:  bench <name> ours=<value> <unit> tinygrad=<value> ratio=<ours/tinygrad>   (ratio > 1: we are faster).
# tinygrad is found through $TINYGRAD_PATH, else ../tgref or ../../tgref next to this checkout; without it the peer
# columns read n/a and a line says why. BENCH_PEER_RUNS sets tinygrad's rewrite repetitions (default 2).
set -u
B=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

ours=$("$B/bench_rewrite") || { echo "bench: $B/bench_rewrite failed"; exit 1; }

tg=""
for d in "${TINYGRAD_PATH:-}" "$ROOT/../tgref" "$ROOT/../../tgref"; do
  if [ -n "$d" ] && [ -f "$d/tinygrad/__init__.py" ]; then tg=$(cd "$d" && pwd); break; fi
done
peer=""
if [ -z "$tg" ]; then
  echo "bench: tinygrad peer not run: no tinygrad checkout found (set TINYGRAD_PATH to one)"
else
  py=python3
  peer=$(cd "$tg" && PYTHONPATH="$tg" "$py" "$ROOT/bench/peer_tinygrad.py" 2>&1) || {
    echo "bench: tinygrad peer failed in $tg:"; echo "$peer" | tail -5 | sed 's/^/  /'; peer=""; }
fi

value() { echo "$2" | awk -v n="$1" '$1 == n { print $2; exit }'; }
unit() { echo "$2" | awk -v n="$1" '$1 == n { print $3; exit }'; }

for name in rewrite_sym intern_fresh intern_hit; do
  o=$(value "$name" "$ours"); u=$(unit "$name" "$ours")
  p=$(value "$name" "$peer")
  if [ -n "$p" ]; then
    r=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", a / b }')
    echo "bench $name ours=$o $u tinygrad=$p ratio=$r"
  else
    echo "bench $name ours=$o $u tinygrad=n/a ratio=n/a"
  fi
done

# the Tensor issue's figures: fused elementwise, sum, softmax against hand-written 2-thread C loops (-O3), and
# realizing a cached 1-element kernel against tinygrad doing the same
tensor=$("$B/bench_tensor") || { echo "bench: $B/bench_tensor failed"; tensor=""; }
for name in elementwise_relu_fma_16M sum_16M; do
  line=$(echo "$tensor" | awk -v n="$name" '$1 == n')
  [ -z "$line" ] && continue
  set -- $line
  echo "bench $name ours=$2 $3 c_loop=$5 ratio=$(awk -v a="$2" -v b="$5" 'BEGIN { printf "%.2f", a / b }')"
done
line=$(echo "$tensor" | awk '$1 == "softmax_4096x1024"')
if [ -n "$line" ]; then
  set -- $line
  echo "bench softmax_4096x1024 ours=$2 $3 c_loop=$5 ratio=$(awk -v a="$2" -v b="$5" 'BEGIN { printf "%.2f", b / a }')"
fi
line=$(echo "$tensor" | awk '$1 == "launch_1elem"')
if [ -n "$line" ]; then
  set -- $line
  o=$2
  p=""
  [ -n "$tg" ] && p=$(cd "$tg" && PYTHONPATH="$tg" DEV=CPU python3 "$ROOT/bench/peer_tinygrad_launch.py" 2>/dev/null | awk '$1 == "launch_1elem" { print $2 }')
  if [ -n "$p" ]; then
    echo "bench launch_1elem ours=$o us tinygrad=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", b / a }')"
  else
    echo "bench launch_1elem ours=$o us tinygrad=n/a ratio=n/a"
  fi
fi

# the training issue's figures: steps/s of the demo CNN and of a 784-128-10 MLP (batch 512, Adam) against PyTorch
# (Debian's python3-torch on 2 threads, same models, batch, loss, optimizer; bench/peer_torch_train.py). The peer is
# installed with apt-get when missing. BENCH_TRAIN_CNN_STEPS / BENCH_TRAIN_MLP_STEPS set the timed steps (2 / 20).
cnn_steps=${BENCH_TRAIN_CNN_STEPS:-2}; mlp_steps=${BENCH_TRAIN_MLP_STEPS:-20}
train=$("$B/bench_train" "$cnn_steps" "$mlp_steps") || { echo "bench: $B/bench_train failed"; train=""; }
torch_py=/usr/bin/python3
if ! "$torch_py" -c 'import torch' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "bench: python3-torch missing: installing it with apt-get"
  { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
      python3-torch; } >/dev/null 2>&1 || echo "bench: could not install python3-torch; the PyTorch peer is not run"
fi
torch_out=""
if "$torch_py" -c 'import torch' 2>/dev/null; then
  torch_out=$("$torch_py" "$ROOT/bench/peer_torch_train.py" 5 "$mlp_steps" 2>&1) || {
    echo "bench: PyTorch peer failed:"; echo "$torch_out" | tail -5 | sed 's/^/  /'; torch_out=""; }
fi
for name in train_cnn train_mlp; do
  o=$(value "$name" "$train"); [ -z "$o" ] && continue
  p=$(value "$name" "$torch_out")
  if [ -n "$p" ]; then
    echo "bench $name ours=$o steps/s torch=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.3f", a / b }')"
  else
    echo "bench $name ours=$o steps/s torch=n/a ratio=n/a"
  fi
done

# both sides must have rewritten the same graph to the same size, or the comparison is not like for like
if [ -n "$peer" ]; then
  for k in rewrite_sym_nodes_in rewrite_sym_nodes_out; do
    a=$(value "$k" "$ours"); b=$(value "$k" "$peer")
    [ "$a" != "$b" ] && echo "bench: note: $k differs: ours=$a tinygrad=$b"
  done
fi
exit 0
