#!/usr/bin/env bash
# run_all.sh — `make test`: every suite in the optimized build, then under ASan+UBSan, then the closing total line.
# Exits non-zero on any failure (a suite with zero checks is a failure, see tests/main.c).
set -u
B=${1:-build}
pass=0; fail=0; rc=0
run() {
  local out
  out=$("$@" 2>&1); local r=$?
  echo "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed$'
  local last; last=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$last" ]; then echo "  FAIL: $1 did not finish (exit $r)"; fail=$((fail+1)); rc=1; return; fi
  pass=$((pass + $(echo "$last" | cut -d' ' -f1))); fail=$((fail + $(echo "$last" | cut -d' ' -f3)))
  [ $r -ne 0 ] && rc=1
}
run "$B/run_tests"
TG_TEST_TAG="asan+ubsan" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run "$B/run_tests_san"
# the symbolic fuzzer (tools/fuzz_symbolic.c): its summary is one more suite line, counted as one check
fz=$("$B/fuzz_symbolic" 20000 1 2>&1); fzr=$?; echo "$fz"
if [ $fzr -eq 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); rc=1; fi
echo "$pass passed, $fail failed"
[ $rc -eq 0 ] && [ $fail -eq 0 ]
