#!/usr/bin/env bash
# run_all.sh — the test tiers, each spread over two processes side by side (the machine has 2 cores; the suites are
# single-threaded but for kernel compiles and launches).
#
#   run_all.sh BUILD        make test, the full tier (CI): the exported-symbol check; every suite in the optimized
#                           build; every suite under ASan+UBSan; the symbolic fuzzer; the Python package's tests
#                           (python/run_tests.sh). Lane 1 runs the sanitizer pass's heaviest suites (SAN_LANE), lane
#                           2 the optimized pass, the fuzzer, the Python tests and the other sanitizer suites.
#   run_all.sh BUILD fast   make test-fast: the optimized build with TG_TEST_QUICK=1 (suites run their quick subset):
#                           FAST_LANE in one process, the other suites in the other.
#
# Each process writes its own log under BUILD/test_logs; once all have ended, each pass is printed in suites.def order
# (its lines gathered from its logs), then the times and one closing line "N passed, N failed" (CI reads it). Exits
# non-zero on any failure (a suite with zero checks is a failure, see tests/main.c). The kernel compile cache is
# BUILD/cache.db unless CACHEDB is set, so the times do not depend on ~/.cache (the library's own default, for users,
# stays ~/.cache/tinygrad.c/cache.db); a cold cache costs the first run many minutes of clang.
set -u
B=${1:-build}
tier=${2:-full}
T=$(cd "$(dirname "$0")" && pwd)
# measured (warm cache, 2 loaded cores): under ASan+UBSan beam (its searches compile into a fresh cache), opts, grad,
# grad_parity and optim take about as long as the optimized pass, the fuzzer and the other sanitizer suites together
# (make test prints both lanes' times); in the quick tier grad, opts and beam about as long as the rest
SAN_LANE="grad optim grad_parity opts beam"
FAST_LANE="grad opts beam"
mkdir -p "$B/test_logs"
export CACHEDB=${CACHEDB:-$(cd "$B" && pwd)/cache.db}
logs=$B/test_logs
rm -f "$logs"/*
pass=0; fail=0; rc=0
all_suites=$(sed -n 's/^SUITE(\([a-z0-9_]*\))$/\1/p' "$T/suites.def")
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
others() { local s out=""; for s in $all_suites; do case " $1 " in *" $s "*) ;; *) out+="$s ";; esac; done; echo "$out"; }

# job LOG CMD...: one process into LOG; its exit status goes to LOG.rc, its wall time to LOG.time
job() {
  local log=$1; shift
  local t0; t0=$(now)
  "$@" >"$log" 2>&1
  echo $? >"$log.rc"
  secs "$t0" "$(now)" >"$log.time"
}
# show_pass NAME LOG...: the pass's lines in suites.def order (a suite's lines end with its "<suite>...: N passed"
# line), then its totals added to ours. A log without its closing total line is a crash: its lines come last.
show_pass() {
  local name=$1; shift
  local order; order=$(echo $all_suites)
  awk -v order="$order" '
    BEGIN { n = split(order, o, " ") }
    /^[0-9]+ passed, [0-9]+ failed$/ || /^[0-9]+ suites.* in [0-9.]+ s$/ { next }
    { buf = buf $0 "\n" }
    match($0, /^[a-z0-9_]+( \[[^]]*\])?: [0-9]+ passed, [0-9]+ failed \(/) {
      split($0, w, /[ :]/); block[w[1]] = block[w[1]] buf; buf = "" }
    END { for (i = 1; i <= n; i++) printf "%s", block[o[i]]; printf "%s", buf }' "$@"
  local log last
  for log in "$@"; do
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
    if [ -z "$last" ]; then
      echo "  FAIL: $name ($log) did not finish (exit $(cat "$log.rc"))"; fail=$((fail+1)); rc=1; continue
    fi
    pass=$((pass + ${last%% *})); fail=$((fail + $(echo "$last" | cut -d' ' -f3)))
    [ "$(cat "$log.rc")" -ne 0 ] && rc=1
  done
}

t_all=$(now)
if [ "$tier" = fast ]; then
  # the stage order of the includes (tests/check_layers.sh): instant, so the quick tier runs it too
  if bash "$T/check_layers.sh" "$T/../src"; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
  job "$logs/fast1.log" env TG_TEST_QUICK=1 "$B/run_tests" $FAST_LANE &
  job "$logs/fast2.log" env TG_TEST_QUICK=1 "$B/run_tests" $(others "$FAST_LANE") &
  wait
  show_pass "quick tier" "$logs/fast1.log" "$logs/fast2.log"
  echo "test-fast: $(secs "$t_all" "$(now)") s wall ($FAST_LANE: $(cat "$logs/fast1.log.time") s; the others:" \
       "$(cat "$logs/fast2.log.time") s; side by side; kernel cache $CACHEDB)"
else
  # the symbol check first: it takes a moment and its failure is worth seeing at the top
  if bash "$T/check_symbols.sh" "$B/libtinygrad.a"; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
  if bash "$T/check_layers.sh" "$T/../src"; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
  san=(env TG_TEST_TAG="asan+ubsan" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$B/run_tests_san")
  job "$logs/san1.log" "${san[@]}" $SAN_LANE &
  {
    job "$logs/opt.log" "$B/run_tests"
    job "$logs/fuzz.log" "$B/fuzz_symbolic" 20000 1
    job "$logs/python.log" bash "$T/../python/run_tests.sh" "$B"
    job "$logs/fuzz_gguf.log" env ASAN_OPTIONS=detect_leaks=1 "$B/fuzz_gguf_san" -n 3000
    job "$logs/serve.log" env ASAN_OPTIONS=detect_leaks=1 "$B/test_llm_serve"
    job "$logs/tg_llm.log" /usr/bin/python3 "$T/llm/test_tg_llm.py" "$B"
    job "$logs/san2.log" "${san[@]}" $(others "$SAN_LANE")
  } &
  wait
  show_pass "optimized pass" "$logs/opt.log"
  show_pass "asan+ubsan pass" "$logs/san1.log" "$logs/san2.log"
  show_pass "python package" "$logs/python.log"
  # the symbolic fuzzer (tools/fuzz_symbolic.c): its summary is one more suite line, counted as one check
  cat "$logs/fuzz.log"
  if [ "$(cat "$logs/fuzz.log.rc")" -eq 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
  # the GGUF fuzzer's fixed-seed pass under ASan+UBSan (tools/fuzz_gguf.c): one more check
  tail -3 "$logs/fuzz_gguf.log"
  if [ "$(cat "$logs/fuzz_gguf.log.rc")" -eq 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
  # tg-llm's HTTP server over loopback (tests/llm/test_serve.c, ASan+UBSan): its checks join the totals
  grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/serve.log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/serve.log" | tail -1)
  if [ -n "$last" ]; then pass=$((pass + ${last%% *})); fail=$((fail + $(echo "$last" | cut -d' ' -f3))); fi
  if [ -z "$last" ] || [ "$(cat "$logs/serve.log.rc")" -ne 0 ]; then
    echo "  FAIL: the server test ($logs/serve.log) did not pass"; fail=$((fail+1)); rc=1; fi
  # tg-llm end to end: a tg-mkmodel model through the CLI and through --serve over HTTP (tests/llm/test_tg_llm.py)
  grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/tg_llm.log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/tg_llm.log" | tail -1)
  if [ -n "$last" ]; then pass=$((pass + ${last%% *})); fail=$((fail + $(echo "$last" | cut -d' ' -f3))); fi
  if [ -z "$last" ] || [ "$(cat "$logs/tg_llm.log.rc")" -ne 0 ]; then
    echo "  FAIL: the tg-llm end-to-end test ($logs/tg_llm.log) did not pass"; fail=$((fail+1)); rc=1; fi
  echo "make test: $(secs "$t_all" "$(now)") s wall; lane 1: asan+ubsan $SAN_LANE $(cat "$logs/san1.log.time") s;" \
       "lane 2: optimized $(cat "$logs/opt.log.time") s, fuzzer $(cat "$logs/fuzz.log.time") s, python" \
       "$(cat "$logs/python.log.time") s, asan+ubsan (the" \
       "others) $(cat "$logs/san2.log.time") s (logs in $logs, kernel cache $CACHEDB)"
fi
echo "$pass passed, $fail failed"
[ $rc -eq 0 ] && [ $fail -eq 0 ]
