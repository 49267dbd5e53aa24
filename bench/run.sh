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
best_value() {  # the largest value of name $1 in the output $2 (over its rounds); $3: the unit its lines must have
  echo "$2" | awk -v n="$1" -v u="${3:-}" '$1 == n && (u == "" || $3 == u) && (b == "" || $2 + 0 > b + 0) { b = $2 }
    END { if (b != "") print b }'
}
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
for name in elementwise_relu_fma_16M sum_16M sum_axis0_4096x4096; do
  line=$(echo "$tensor" | awk -v n="$name" '$1 == n')
  [ -z "$line" ] && continue
  set -- $line
  echo "bench $name ours=$2 $3 c_loop=$5 ratio=$(awk -v a="$2" -v b="$5" 'BEGIN { printf "%.2f", a / b }')"
done
for name in softmax_4096x1024 softmax_4096x4096; do
  line=$(echo "$tensor" | awk -v n="$name" '$1 == n')
  [ -z "$line" ] && continue
  set -- $line
  echo "bench $name ours=$2 $3 c_loop=$5 ratio=$(awk -v a="$2" -v b="$5" 'BEGIN { printf "%.2f", b / a }')"
done
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

# the host time of a cache-hit realize (tools/realize_host.c: a small conv2d and a softmax realized over and over,
# their kernels ~0.1 us of work): the per-call work of schedule lookup, buffers and launches; target 10 us (issue 16)
rh=$("$B/realize_host" all 2000) || { echo "bench: $B/realize_host failed"; rh=""; }
for name in conv softmax; do
  o=$(echo "$rh" | awk -v n="realize_host_$name" '$1 == n { print $2 }')
  [ -n "$o" ] && echo "bench realize_host_$name ours=$o us target=10"
done

# the training issue's figures: steps/s of the demo CNN and of a 784-128-10 MLP (batch 512, Adam) against PyTorch
# (Debian's python3-torch on 2 threads, same models, batch, loss, optimizer; bench/peer_torch_train.py). The peer is
# installed with apt-get when missing. BENCH_TRAIN_CNN_STEPS / BENCH_TRAIN_MLP_STEPS set the timed steps (2 / 200;
# 20 MLP steps took 0.1 s, too short on a shared machine: torch's rate over 25-step windows swung from 68 to 310).
# The peer runs with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed from its environment, like the matmul peers.
cnn_steps=${BENCH_TRAIN_CNN_STEPS:-2}; mlp_steps=${BENCH_TRAIN_MLP_STEPS:-200}
torch_py=/usr/bin/python3
if ! "$torch_py" -c 'import torch' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "bench: python3-torch missing: installing it with apt-get"
  { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
      python3-torch; } >/dev/null 2>&1 || echo "bench: could not install python3-torch; the PyTorch peer is not run"
fi
# BENCH_ROUNDS rounds (default 3), ours then the peer in each; each side keeps its best round (see the matmul
# figures below for why); a round of ours that fails fails the figures
train=""; train_failed=""; torch_out=""; torch_ok=""
"$torch_py" -c 'import torch' 2>/dev/null && torch_ok=1
for ((round = 1; round <= ${BENCH_ROUNDS:-3}; round++)); do
  out=$("$B/bench_train" "$cnn_steps" "$mlp_steps") || train_failed=1
  train="$train
$out"
  [ -z "$torch_ok" ] && continue
  out=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$torch_py" "$ROOT/bench/peer_torch_train.py" 5 "$mlp_steps" \
    2>&1) || { echo "bench: PyTorch peer failed:"; echo "$out" | tail -5 | sed 's/^/  /'; torch_ok=""; torch_out=""; }
  [ -n "$torch_ok" ] && torch_out="$torch_out
$out"
done
[ -n "$train_failed" ] && { echo "bench: $B/bench_train failed"; train=""; }
for name in train_cnn train_mlp; do
  o=$(best_value "$name" "$train"); [ -z "$o" ] && continue
  p=$(best_value "$name" "$torch_out")
  if [ -n "$p" ]; then
    echo "bench $name ours=$o steps/s torch=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.3f", a / b }')"
  else
    echo "bench $name ours=$o steps/s torch=n/a ratio=n/a"
  fi
done
# the JIT (issue 17): the MLP step replayed (peer: our eager step), its host overhead per step (step wall minus the
# launches' own time), and one replay of a 1-kernel / 50-kernel step (peer: the same step realized eagerly). Lower is
# better for the time figures; ratio = peer / ours.
o=$(best_value train_mlp_jit "$train"); p=$(best_value train_mlp "$train")
[ -n "$o" ] && echo "bench train_mlp_jit ours=$o steps/s eager=${p:-n/a} ratio=$(awk -v a="$o" -v b="${p:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
o=$(echo "$train" | awk '$1 == "train_mlp_jit_overhead" { print $2 }' | sort -g | head -1)
[ -n "$o" ] && echo "bench train_mlp_jit_overhead ours=$o ms/step target=0.1"
# the beautiful_mnist CNN step through the JIT (peer: our eager step), and the JIT'd MLP step's first call in a fresh
# process (bench_train first): cold with an empty kernel cache (a new CACHEDB file: every kernel compiled), warm with
# that file filled by the cold run (nothing compiled); the best of BENCH_ROUNDS each, with the second call (the
# capture) beside it; no peer (like the overhead line)
o=$(best_value train_cnn_jit "$train"); p=$(best_value train_cnn "$train")
[ -n "$o" ] && echo "bench train_cnn_jit ours=$o steps/s eager=${p:-n/a} ratio=$(awk -v a="$o" -v b="${p:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
first_dir=$(mktemp -d); cold=""; warm=""
for ((round = 1; round <= ${BENCH_ROUNDS:-3}; round++)); do
  rm -f "$first_dir/cache.db"
  cold="$cold
$(CACHEDB="$first_dir/cache.db" "$B/bench_train" first)"
  warm="$warm
$(CACHEDB="$first_dir/cache.db" "$B/bench_train" first)"
done
rm -rf "$first_dir"
for kind in cold warm; do
  [ "$kind" = cold ] && out=$cold || out=$warm
  o=$(echo "$out" | awk '$1 == "train_mlp_jit_first_call" { print $2 }' | sort -g | head -1)
  p=$(echo "$out" | awk '$1 == "train_mlp_jit_capture" { print $2 }' | sort -g | head -1)
  [ -n "$o" ] && echo "bench train_mlp_jit_first_call_$kind ours=$o ms capture_ms=${p:-n/a}"
done
for k in 1 50; do
  o=$(echo "$train" | awk -v n="jit_replay_$k" '$1 == n { print $2 }' | sort -g | head -1)
  p=$(echo "$train" | awk -v n="eager_chain_$k" '$1 == n { print $2 }' | sort -g | head -1)
  u=$([ "$k" = 1 ] && echo us || echo us/kernel)
  [ -n "$o" ] && echo "bench jit_replay_$k ours=$o $u eager=${p:-n/a} ratio=$(awk -v a="$o" -v b="${p:-0}" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')"
done

# both sides must have rewritten the same graph to the same size, or the comparison is not like for like
if [ -n "$peer" ]; then
  for k in rewrite_sym_nodes_in rewrite_sym_nodes_out; do
    a=$(value "$k" "$ours"); b=$(value "$k" "$peer")
    [ "$a" != "$b" ] && echo "bench: note: $k differs: ours=$a tinygrad=$b"
  done
fi

# issue 5's kernel figures (bench/bench_matmul.c): float32 matmul N = 256..2048 and 16 x 256x256 batched, GFLOPS,
# against OpenBLAS through numpy and PyTorch; conv2d forward (64x32x28x28, 64 3x3 filters, padding 1) against PyTorch.
# Peers run on 2 threads (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / torch.set_num_threads) with OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE removed from their environment only (they pin a ~1.8x slower OpenBLAS kernel); numpy on a reference
# BLAS is not compared. Ours runs as the library chooses (the heuristic), then with BEAM=2 (`_beam2` lines).
# BENCH_SECONDS: timed seconds per figure (default 2; at least one run after the compiling one); BENCH_BEAM_TIMEOUT:
# cap in seconds on each BEAM=2 process, one per figure (default 300); BENCH_BEAM=0 skips the BEAM=2 runs;
# BENCH_BEAM_FIGURES: the figures run with BEAM=2 (default: the matmuls).
mm_secs=${BENCH_SECONDS:-2}
beam_cap=${BENCH_BEAM_TIMEOUT:-300}
beam_figs=${BENCH_BEAM_FIGURES:-matmul_256 matmul_512 matmul_1024 matmul_2048 matmul_b16_256}
mm_figs="matmul_256 matmul_512 matmul_1024 matmul_2048 matmul_b16_256"
conv_fig=conv2d_64x32x28x28_k3
mm_need=()
"$torch_py" -c 'import numpy' 2>/dev/null || mm_need+=(python3-numpy)
"$torch_py" -c 'import torch' 2>/dev/null || mm_need+=(python3-torch)
ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0' || mm_need+=(libopenblas0)
if [ ${#mm_need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "bench: matmul peers: installing ${mm_need[*]} with apt-get"
  { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
      "${mm_need[@]}"; } >/dev/null 2>&1 || echo "bench: could not install ${mm_need[*]}; those peers may not run"
fi
run_mm_peers() {
  local out
  out=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
    "$torch_py" "$ROOT/bench/peer_matmul.py" "$mm_secs" 2>&1) || {
    echo "bench: matmul peers failed:" >&2; echo "$out" | tail -5 | sed 's/^/  /' >&2; }
  echo "$out"
}
# figure values: "<name> <GFLOPS> GFLOPS ..." (ours), "<name> <peer> <GFLOPS> GFLOPS" (peers); an error line has none
mm_value() { best_value "$1" "$2" GFLOPS; }  # the best of our rounds in the output $2 (error lines have no unit)
mm_peer_value() {  # the best of the peer's rounds
  echo "$mm_peer" | awk -v n="$1" -v p="$2" '$1 == n && $2 == p && $4 == "GFLOPS" && (b == "" || $3 + 0 > b + 0) { b = $3 }
    END { if (b != "") print b }'
}
mm_error() { echo "$2" | awk -v n="$1" '$1 == n && $2 == "error" { $1 = $2 = ""; sub(/^ +/, ""); print; exit }'; }
# one bench line per (figure, peer); $1 figure, $2 the line's name, $3 our output, $4 why ours is missing (or "")
mm_lines() {
  local fig=$1 name=$2 out=$3 missing=$4 peers=openblas o p why
  [ "$fig" = "$conv_fig" ] && peers=torch || peers="openblas torch"
  o=$(mm_value "$fig" "$out")
  why=$missing
  [ -n "$(mm_error "$fig" "$out")" ] && o=""  # a round that failed fails the figure, whatever the other round read
  [ -z "$o" ] && [ -z "$why" ] && why="ours failed: $(mm_error "$fig" "$out")"
  [ "$why" = "ours failed: " ] && why="ours did not finish"
  for peer in $peers; do
    p=$(mm_peer_value "$fig" "$peer")
    if [ -n "$o" ] && [ -n "$p" ]; then
      echo "bench $name ours=$o GFLOPS $peer=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.4f", a / b }')"
    else
      local note=$why
      [ -z "$p" ] && note="${note:+$note; }peer $peer did not run"
      echo "bench $name ours=${o:-n/a} GFLOPS $peer=${p:-n/a} ratio=n/a ($note)"
    fi
  done
}
mm_field() {  # the value of key $2 ("first_s") in figure $1's line of the output $3
  echo "$3" | awk -v n="$1" -v k="$2=" '$1 == n { for (i = 4; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }'
}
kernels_in() {  # kernels compiled into the sqlite cache $1 (rows of its rt_kernel tables)
  "$torch_py" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
tables = [t for (t,) in c.execute("select name from sqlite_master where type = ?", ("table",))]
names = [t for t in tables if t.startswith("rt_kernel")]
print(sum(c.execute("select count(*) from \"%s\"" % t).fetchone()[0] for t in names))' "$1" 2>/dev/null || echo 0
}

# BEAM=2: first the search of matmul_1024 in a fresh cache (IGNORE_BEAM_CACHE=1 too), then the same in a new process
# (a cache hit: no search, no compile). A search shows as tinygrad's BEAM_DEBUG "BEAM_SEARCH" line or as more than
# the one matmul kernel compiled into the fresh cache; without either, BEAM did not run.
beam_dir=$(mktemp -d)
beam_why=""; kernels_compiled=0
if [ "${BENCH_BEAM:-1}" = 0 ]; then
  beam_why="BEAM=2 runs skipped (BENCH_BEAM=0)"
else
  beam_out=$(CACHEDB="$beam_dir/cache.db" BEAM=2 IGNORE_BEAM_CACHE=1 BEAM_DEBUG=1 timeout "$beam_cap" \
    "$B/bench_matmul" -t 0 matmul_1024 2>&1); beam_rc=$?
  kernels_compiled=$(kernels_in "$beam_dir/cache.db")
  if [ $beam_rc -eq 124 ]; then
    beam_why="BEAM could not run: the search of matmul_1024 passed the ${beam_cap} s cap (BENCH_BEAM_TIMEOUT)"
  elif [ -n "$(mm_error matmul_1024 "$beam_out")" ]; then
    beam_why="BEAM could not run: $(mm_error matmul_1024 "$beam_out")"
  elif [ -z "$(mm_value matmul_1024 "$beam_out")" ]; then
    beam_why="BEAM could not run: bench_matmul exited $beam_rc: $(echo "$beam_out" | tail -1)"
  elif ! echo "$beam_out" | grep -q BEAM_SEARCH && [ "$kernels_compiled" -le 1 ]; then
    beam_why="BEAM could not run: the library ignored BEAM=2 (no BEAM_SEARCH line under BEAM_DEBUG=1,"
    beam_why="$beam_why $kernels_compiled kernel compiled: no search was made)"
  fi
fi
if [ -z "$beam_why" ]; then
  cached_out=$(CACHEDB="$beam_dir/cache.db" BEAM=2 BEAM_DEBUG=1 timeout "$beam_cap" \
    "$B/bench_matmul" -t 0 matmul_1024 2>&1)
  kernels_after=$(kernels_in "$beam_dir/cache.db")
fi
rm -rf "$beam_dir"

# The figures: BENCH_ROUNDS rounds (default 3), each the peers, then ours with the heuristic, then ours with BEAM=2
# (each BEAM figure in its own capped process, on the user's cache: a later round or make bench finds the searches
# done), every round BENCH_SECONDS per figure on each side. This 2-core machine is shared: a side slowed by someone
# else's load in one round is not slowed in the others, so each side keeps its best round; the same number of rounds
# each, interleaved in time.
rounds=${BENCH_ROUNDS:-3}
mm_peer=""; mm_ours=""
declare -A beam_out_of beam_capped
for ((round = 1; round <= rounds; round++)); do
  mm_peer="$mm_peer
$(run_mm_peers)"
  mm_ours="$mm_ours
$("$B/bench_matmul" -t "$mm_secs" $mm_figs $conv_fig)"
  [ -n "$beam_why" ] && continue
  for fig in $beam_figs; do
    [ -n "${beam_capped[$fig]:-}" ] && continue
    fig_out=$(BEAM=2 timeout "$beam_cap" "$B/bench_matmul" -t "$mm_secs" "$fig" 2>&1); beam_rc=$?
    [ $beam_rc -eq 124 ] && beam_capped[$fig]="BEAM=2 stopped by the ${beam_cap} s cap (BENCH_BEAM_TIMEOUT)"
    beam_out_of[$fig]="${beam_out_of[$fig]:-}
$fig_out"
  done
done
echo "$mm_peer" | awk '$1 == "info" && !seen[$0]++ {
  $1 = ""; print "bench: peer" $0 " (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE unset)" }'
echo "$mm_peer" | awk '$1 == "skip" && !seen[$0]++ { $1 = ""; print "bench: peer not run:" $0 }'
for fig in $mm_figs $conv_fig; do mm_lines "$fig" "$fig" "$mm_ours" ""; done

# peak float32 FLOP/s of this machine: physical cores x clock x floats per vector x FMA units per core x 2 flops
cores=$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l); [ "$cores" -gt 0 ] || cores=$(nproc)
# clock: measured with every core busy (bench_matmul --clock: dependent multiply chains, x86-64 latencies), since a
# VM's /proc/cpuinfo shows the nominal clock, not the turbo clock the cores run at; /proc/cpuinfo or lscpu otherwise
nominal=$(awk -F: '/^cpu MHz/ { s += $2; n++ } END { if (n) printf "%.0f", s / n }' /proc/cpuinfo)
[ -z "$nominal" ] && nominal=$(lscpu | awk -F: '/CPU max MHz/ { printf "%.0f", $2 }')
mhz=""; [ "$(uname -m)" = x86_64 ] && mhz=$("$B/bench_matmul" --clock 2>/dev/null | awk '$1 == "clock_mhz" { print $2 }')
if [ -n "$mhz" ]; then mhz_from="measured on all cores at once; /proc/cpuinfo says ${nominal:-?} MHz"
else mhz=${nominal:-0}; mhz_from="/proc/cpuinfo or lscpu: nominal, could not be measured"; fi
flags=$(grep -m1 '^flags' /proc/cpuinfo); model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
vendor=$(grep -m1 '^vendor_id' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
has() { echo " $flags " | grep -q " $1 "; }
# FMA units: Intel's Xeon server cores with AVX-512 (Skylake-SP Gold/Platinum and later; Sapphire Rapids shows amx_tile)
# have two 512-bit FMA units; client AVX-512 cores and AMD Zen 4 do one 512-bit FMA per cycle; AVX2+FMA cores two
# 256-bit ones. Heavy AVX-512 code may run below the measured clock; the OpenBLAS fraction printed with the line
# shows how close a tuned kernel comes (above 1 would mean the assumptions are wrong).
if has avx512f; then
  width=16; isa=avx512f
  if [ "$vendor" = GenuineIntel ] && { echo "$model" | grep -q Xeon || has amx_tile; }; then
    fma=2; fma_why="Intel Xeon server core with AVX-512: two 512-bit FMA units, ports 0 and 5"
  else
    fma=1; fma_why="AVX-512 on a client core or AMD Zen 4: one 512-bit FMA per cycle"
  fi
elif has avx2 && has fma; then width=8; isa=avx2; fma=2; fma_why="AVX2 with FMA: two 256-bit FMA units"
elif has avx; then width=8; isa=avx; fma=1; fma_why="AVX without FMA: one multiply and one add per cycle"
else width=4; isa=sse; fma=1; fma_why="SSE only: one multiply and one add per cycle"
fi
peak=$(awk -v c="$cores" -v m="$mhz" -v w="$width" -v f="$fma" 'BEGIN { printf "%.1f", c * m / 1000 * w * f * 2 }')
how="$cores cores x $mhz MHz ($mhz_from) x $width floats ($isa) x $fma FMA units ($fma_why) x 2"
square_figs="matmul_256 matmul_512 matmul_1024 matmul_2048"
mm_best() {  # "<GFLOPS> <figure>": the best square matmul in the output $1
  for f in $square_figs; do v=$(mm_value "$f" "$1"); [ -n "$v" ] && echo "$v $f"; done | sort -g | tail -1
}
peer_best=$(for f in $square_figs; do mm_peer_value "$f" openblas; done | sort -g | tail -1)
peer_frac=""
[ -n "$peer_best" ] && peer_frac=$(awk -v a="$peer_best" -v p="$peak" 'BEGIN { printf "; OpenBLAS reaches %.2f", a / p }')
mm_peak_line() {  # $1 the line's name, $2 our output
  local best frac; best=$(mm_best "$2")
  if [ -z "$best" ]; then echo "bench $1 ours=n/a of peak=$peak GFLOPS (no matmul figure ran; how: $how)"; return; fi
  set -- "$1" $best
  frac=$(awk -v a="$2" -v p="$peak" 'BEGIN { printf "%.4f", a / p }')
  echo "bench $1 ours=$frac of peak=$peak GFLOPS (best: $3 at $2 GFLOPS; how: $how$peer_frac)"
}
mm_peak_line matmul_peak_fraction "$mm_ours"

if [ -n "$beam_why" ]; then
  echo "bench beam_search_matmul_1024 ours=n/a s peer=none ($beam_why)"
  echo "bench beam_cached_matmul_1024 ours=n/a s peer=none ($beam_why)"
  for fig in $beam_figs; do mm_lines "$fig" "${fig}_beam2" "" "$beam_why"; done
  echo "bench matmul_peak_fraction_beam2 ours=n/a of peak=$peak GFLOPS ($beam_why)"
else
  first=$(mm_field matmul_1024 first_s "$beam_out"); run_ms=$(mm_field matmul_1024 best_ms "$beam_out")
  echo "bench beam_search_matmul_1024 ours=$first s peer=none (first realize with BEAM=2, fresh CACHEDB," \
    "IGNORE_BEAM_CACHE=1: search + compile + one run of ${run_ms} ms; $kernels_compiled kernels compiled)"
  cached=$(mm_field matmul_1024 first_s "$cached_out")
  note="first realize in a new process on that cache, one run of the kernel included"
  echo "$cached_out" | grep -q BEAM_SEARCH && note="$note; NOTE: it searched again"
  [ "$kernels_after" != "$kernels_compiled" ] &&
    note="$note; NOTE: it compiled $((kernels_after - kernels_compiled)) new kernels"
  if [ -n "$cached" ]; then echo "bench beam_cached_matmul_1024 ours=$cached s peer=none ($note)"
  else echo "bench beam_cached_matmul_1024 ours=n/a s peer=none (failed: $(mm_error matmul_1024 "$cached_out"))"; fi
  beam_figs_out=""
  for fig in $beam_figs; do
    mm_lines "$fig" "${fig}_beam2" "${beam_out_of[$fig]}" "${beam_capped[$fig]:-}"
    beam_figs_out="$beam_figs_out
${beam_out_of[$fig]}"
  done
  mm_peak_line matmul_peak_fraction_beam2 "$beam_figs_out"
fi

# the tokenizer (issue 18; bench/bench_tokenizer.c): encode MB/s of a fixed 4 MB pseudo-text per GGUF vocabulary.
# Peers (bench/peer_tokenizer.py, Debian's python3 + python3-regex): tinygrad's own tokenizer (tinygrad/llm/cli.py,
# llama-3 presets only) on the llama-3 vocabulary, and the Python reference of tools/gen_tokenizer_fixtures.py on
# gpt-2 (none is installable for SentencePiece here). The full llama-3 / o200k vocabularies are not in the repository:
# TG_VOCAB_DIR names a folder that tools/gen_tokenizer_fixtures.py --full wrote.
# Both sides must produce the same number of tokens (a note says when not).
# Without TG_VOCAB_DIR they are written into $B/tok-vocab once, from the npm packages the generator names (npm
# install into $B/tok-npm); without node/npm those two lines are skipped.
if ! /usr/bin/python3 -c 'import regex' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "bench: python3-regex missing (the tokenizer peers need it): installing it with apt-get"
  { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
      python3-regex; } >/dev/null 2>&1 || echo "bench: could not install python3-regex; the tokenizer peers may not run"
fi
tok_corpus=$(mktemp)
tok_args=(gpt-2="$ROOT/tests/data/vocab/ggml-vocab-gpt-2.gguf" llama-spm="$ROOT/tests/data/vocab/ggml-vocab-llama-spm.gguf")
tok_dir=${TG_VOCAB_DIR:-$B/tok-vocab}
if [ ! -f "$tok_dir/o200k-full.gguf" ] && [ -z "${TG_VOCAB_DIR:-}" ] && command -v npm >/dev/null && command -v node >/dev/null; then
  mkdir -p "$tok_dir" "$B/tok-npm"
  { npm install --prefix "$B/tok-npm" --no-audit --no-fund js-tiktoken@1.0.21 llama3-tokenizer-js@1.2.0 &&
    /usr/bin/python3 "$ROOT/tools/gen_tokenizer_fixtures.py" "$B/tok-npm/node_modules" --full "$tok_dir"; } >/dev/null 2>&1 ||
    echo "bench: could not write the full llama-3 / o200k vocabularies into $tok_dir"
fi
for v in llama3 o200k; do
  if [ -f "$tok_dir/$v-full.gguf" ]; then tok_args+=("$v=$tok_dir/$v-full.gguf")
  else echo "bench: tokenize_$v not run: no $tok_dir/$v-full.gguf"; fi
done
tok_out=$("$B/bench_tokenizer" --corpus "$tok_corpus" "${tok_args[@]}") || echo "bench: $B/bench_tokenizer failed"
for arg in "${tok_args[@]}"; do
  name=${arg%%=*}; file=${arg#*=}
  line=$(echo "$tok_out" | awk -v n="$name" '$1 == "tokenize" && $2 == n'); [ -z "$line" ] && continue
  set -- $line; o=$3; ot=${5#tokens=}
  case $name in llama3) peer=tinygrad ;; gpt-2|o200k) peer=pyref ;; *) peer="" ;; esac
  pline=""
  if [ -n "$peer" ]; then
    pline=$(PYTHONPATH="${tg:-}" /usr/bin/python3 "$ROOT/bench/peer_tokenizer.py" "$peer" "$name" "$file" "$tok_corpus" \
      2>/dev/null | awk '$1 == "peer"')
  fi
  if [ -n "$pline" ]; then
    set -- $pline; p=$4; pt=${6#tokens=}
    note=""; [ "$pt" != "$ot" ] && note=" (NOTE: $peer made $pt tokens, ours $ot)"
    echo "bench tokenize_$name ours=$o MB/s $peer=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", a / b }')$note"
  else
    echo "bench tokenize_$name ours=$o MB/s peer=${peer:-none} ratio=n/a"
  fi
done
rm -f "$tok_corpus"
# issue 18's attention and MoE figures (bench/bench_attention.c): a decode step (1 query, 4096 keys) and a 512-token
# causal prefill with 32 query / 8 kv heads of dim 64, the same with a sliding window of 128 (decode, 2048-token
# prefill), tg_flash_attention and tg_attention (the plain form), and a
# 32-expert top-4 MoE decode step (tg_moe_ffn), float32; peer: PyTorch, the faster of 2 and 1 threads
# (bench/peer_torch_attention.py says why; torch 1.13 has no scaled_dot_product_attention, so matmul + softmax).
# ms, lower is better; ratio = torch / ours.
# BENCH_ROUNDS rounds (default 3), ours then torch in each; each side keeps its best.
attn_ours=""; attn_peer=""
for ((round = 1; round <= ${BENCH_ROUNDS:-3}; round++)); do
  attn_ours="$attn_ours
$("$B/bench_attention" -t "${BENCH_SECONDS:-2}" 2>&1)"
  "$torch_py" -c 'import torch' 2>/dev/null && attn_peer="$attn_peer
$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$torch_py" "$ROOT/bench/peer_torch_attention.py" \
    "${BENCH_SECONDS:-2}" 2>&1)"
done
attn_best() {  # the smallest ms of figure $1, form $2 in the output $3
  echo "$3" | awk -v n="$1" -v f="$2" '$1 == n && $2 == f && $4 == "ms" && (b == "" || $3 + 0 < b + 0) { b = $3 }
    END { if (b != "") print b }'
}
for fig in attn_decode_s4096 attn_prefill_t512 attn_decode_s4096_w128 attn_prefill_t2048_w128 moe_decode_e32; do
  p=$(attn_best "$fig" torch "$attn_peer")
  forms="flash plain"; [ "$fig" = moe_decode_e32 ] && forms=ours
  for form in $forms; do
    o=$(attn_best "$fig" "$form" "$attn_ours")
    name=$fig; [ "$form" != ours ] && name="${fig}_$form"
    if [ -z "$o" ]; then
      why=$(echo "$attn_ours" | awk -v n="$fig" '$1 == n && $2 == "error" { $1 = $2 = ""; print; exit }')
      echo "bench $name ours=n/a ms torch=${p:-n/a} ratio=n/a (ours failed:${why:- did not run})"
    elif [ -n "$p" ]; then
      echo "bench $name ours=$o ms torch=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", b / a }')"
    else
      echo "bench $name ours=$o ms torch=n/a ratio=n/a (the PyTorch peer did not run)"
    fi
  done
done

# the LLM issue's figures (issue 18): bench/run_llm.sh (llama.cpp's llama-bench as the peer when LLAMA_BENCH is set)
bash "$ROOT/bench/run_llm.sh" "$B"

exit 0
