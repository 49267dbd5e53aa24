#!/bin/bash
# Per-op Python overhead, ours against tinygrad's, on the same script (tools/py_overhead.py): our package through
# python/compat, then tinygrad from $TINYGRAD_PATH (default /work/tgref). Prints both sets of lines and the ratios.
cd "$(dirname "$0")/.."
TG=${TINYGRAD_PATH:-/work/tgref}
make -s -j2 build/libtinygrad.so
ours=$(PYTHONPATH=python/compat:python /usr/bin/python3 tools/py_overhead.py) || exit 1
theirs=$(cd /tmp && PYTHONPATH="$TG" /usr/bin/python3 "$OLDPWD/tools/py_overhead.py") || exit 1
echo "$ours"; echo "$theirs"
join <(echo "$ours" | awk '{print $3, $4}' | sort) <(echo "$theirs" | awk '{print $3, $4}' | sort) |
  awk '{ printf "overhead ratio %s: tinygrad %.2f us / ours %.2f us = %.1fx\n", $1, $3, $2, $3 / $2; s += log($3 / $2); n++ }
       END { printf "overhead ratio geomean: %.1fx\n", exp(s / n) }'
