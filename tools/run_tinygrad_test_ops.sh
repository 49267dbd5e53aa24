#!/bin/bash
# tinygrad's test/backend/test_ops.py (pinned checkout at $TINYGRAD_PATH, default /work/tgref) against the Python
# package: builds build/libtinygrad.so, then runs the tests with Debian's python3 (numpy + python3-torch) and prints
# one line per test and the totals. Arguments: test name filters. The kernel cache is build/cache.db unless CACHEDB.
set -e
cd "$(dirname "$0")/.."
make -s -j2 build/libtinygrad.so
export CACHEDB="${CACHEDB:-$PWD/build/cache.db}"
exec /usr/bin/python3 tools/run_tinygrad_test_ops.py "$@"
