#!/bin/bash
# The Python package's tests (python/tests), as one suite line for tests/run_all.sh:
# "python: N passed, N failed (T s)" then "N passed, N failed". Needs build/libtinygrad.so and Debian's python3
# (/usr/bin/python3, or $PYTHON); without a python3 it says SKIPPED; without numpy the numpy tests are skipped.
B=${1:-build}
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
if ! [ -x "$PY" ]; then echo "python: SKIPPED ($PY not found: the Python package is not tested)"; echo "0 passed, 0 failed"; exit 0; fi
export TINYGRAD_C_LIB="$PWD/$B/libtinygrad.so"
t0=$(date +%s.%N)
out=$("$PY" -m unittest discover -s python/tests -p 'test_*.py' 2>&1); rc=$?
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "$out" | grep -E "^(FAIL|ERROR):|Error|skipped '" | head -40
ran=$(echo "$out" | sed -n 's/^Ran \([0-9]*\) tests.*/\1/p')
bad=$(echo "$out" | sed -n 's/^FAILED (\(.*\))/\1/p' | tr ',' '\n' | sed -n 's/.*\(failures\|errors\)=\([0-9]*\).*/\2/p' | awk '{s+=$1} END {print s+0}')
skip=$(echo "$out" | grep -o "skipped=[0-9]*" | head -1 | cut -d= -f2)
[ -z "$ran" ] && { echo "$out" | tail -20; ran=0; bad=1; }
echo "python: $((ran - bad - ${skip:-0})) passed, $bad failed ($t s)${skip:+, $skip skipped}"
echo "$((ran - bad - ${skip:-0})) passed, $bad failed"
[ $rc -eq 0 ]
