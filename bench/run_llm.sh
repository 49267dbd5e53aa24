#!/usr/bin/env bash
# run_llm.sh — the LLM issue's CPU figures (issue 18), run by `make bench` (bench/run.sh) and alone as
# `bash bench/run_llm.sh build`: decode and prefill tokens/s of a ~1B-parameter llama-shaped random model
# (tg-mkmodel --preset 1b: Llama-3.2-1B's shape, tied embeddings) in F16, Q8_0 and Q4_0 (files cached under $B/llm), on
# BENCH_LLM_THREADS (2) threads, decode over BENCH_LLM_NTOK (16) tokens after a 32-token prompt, against llama.cpp's
# llama-bench on the same file (-p 32 -n NTOK -r 1, same threads) when LLAMA_BENCH points to one; plus bytes/token and
# the fraction of the measured read bandwidth the decode reaches.
# Rounds: BENCH_LLM_ROUNDS (default BENCH_ROUNDS, else 3) rounds, each ours then llama.cpp on every file, alternating,
# so a burst of someone else's load slows one round, not one side; each side keeps its best round (as the matmul
# figures of run.sh do), and the line also gives every round's pair and the median of the per-round ratios (the two
# sides of a round run back to back: this machine's memory bandwidth was seen to move 35-63 GB/s within minutes).
set -u
B=${1:-build}
value() { echo "$2" | awk -v n="$1" '$1 == n { print $2; exit }'; }
llm_threads=${BENCH_LLM_THREADS:-2}; llm_ntok=${BENCH_LLM_NTOK:-16}
rounds=${BENCH_LLM_ROUNDS:-${BENCH_ROUNDS:-3}}
lb=${LLAMA_BENCH:-}
lb_why=""
if [ -z "$lb" ]; then lb_why="LLAMA_BENCH not set"; elif [ ! -x "$lb" ]; then lb_why="LLAMA_BENCH=$lb is not an executable"; lb=""; fi
# avg_ts of the llama-bench CSV row whose column $2 (n_prompt or n_gen) is non-zero
lb_ts() { echo "$1" | awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); h[$i] = i }; next }
  { gsub(/"/, ""); if ((col in h) && $h[col] + 0 > 0) { print $h["avg_ts"]; exit } }'; }
max() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 >= b + 0) print a; else print b }'; }
if [ ! -x "$B/tg-mkmodel" ] || [ ! -x "$B/bench_llm" ]; then
  echo "bench: LLM figures not run: $B/tg-mkmodel or $B/bench_llm missing"
  exit 0
fi
mkdir -p "$B/llm"
types=${BENCH_LLM_TYPES:-f16 q8_0 q4_0}
declare -A best hist out_last
for ty in $types; do
  f="$B/llm/llama1b_$ty.gguf"
  if [ ! -f "$f" ]; then
    "$B/tg-mkmodel" -o "$f.tmp" --preset 1b --type "$ty" >/dev/null 2>&1 && mv "$f.tmp" "$f" ||
      { echo "bench: tg-mkmodel --preset 1b --type $ty failed"; rm -f "$f.tmp"; }
  fi
done
for ((round = 1; round <= rounds; round++)); do
  for ty in $types; do
    f="$B/llm/llama1b_$ty.gguf"
    [ -f "$f" ] || continue
    out=$("$B/bench_llm" "$f" "$llm_threads" "$llm_ntok" 32 2>&1) ||
      { echo "bench: bench_llm $ty failed: $(echo "$out" | tail -1)"; continue; }
    out_last[$ty]=$out
    o_dec=$(value decode_tok_s "$out"); o_pre=$(value prefill_tok_s "$out")
    p_dec=""; p_pre=""
    if [ -n "$lb" ]; then
      csv=$(LD_LIBRARY_PATH="$(dirname "$lb"):${LD_LIBRARY_PATH:-}" "$lb" -m "$f" -t "$llm_threads" -p 32 -n "$llm_ntok" \
        -r 1 -o csv 2>/dev/null)
      p_dec=$(lb_ts "$csv" n_gen); p_pre=$(lb_ts "$csv" n_prompt)
    fi
    for k in decode:$o_dec:$p_dec prefill:$o_pre:$p_pre; do
      IFS=: read -r kind o p <<<"$k"
      best[$ty.$kind.o]=$(max "${best[$ty.$kind.o]:-}" "$o")
      best[$ty.$kind.p]=$(max "${best[$ty.$kind.p]:-}" "$p")
      hist[$ty.$kind]="${hist[$ty.$kind]:-}${hist[$ty.$kind]:+ }${o:-n/a}/${p:-n/a}"
    done
  done
done
for ty in $types; do
  [ -n "${out_last[$ty]:-}" ] || continue
  for kind in decode prefill; do
    o=${best[$ty.$kind.o]:-}; p=${best[$ty.$kind.p]:-}
    if [ -n "$p" ] && [ -n "$o" ]; then
      med=$(echo "${hist[$ty.$kind]}" | tr ' ' '\n' | awk -F/ '$1 + 0 > 0 && $2 + 0 > 0 { print $1 / $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      echo "bench llm_1b_${ty}_$kind ours=$o tok/s llama.cpp=$p ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", a / b }')" \
        "(best of $rounds rounds; ours/llama.cpp per round: ${hist[$ty.$kind]}; median per-round ratio ${med:-n/a})"
    else
      why=$lb_why; [ -z "$why" ] && why="llama-bench gave no figures for $B/llm/llama1b_$ty.gguf"
      echo "bench llm_1b_${ty}_$kind ours=${o:-n/a} tok/s llama.cpp=n/a ratio=n/a ($why)"
    fi
  done
  out=${out_last[$ty]}
  echo "bench llm_1b_${ty}_bw_fraction ours=$(value bw_fraction "$out") of bandwidth peer=none" \
    "($(value bytes_per_token "$out") B/token x decode tok/s = $(value decode_gb_s "$out") GB/s;" \
    "measured read bandwidth $(value bandwidth_gb_s "$out") GB/s on $llm_threads threads; last round)"
done
exit 0
