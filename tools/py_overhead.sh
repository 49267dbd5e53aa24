#!/bin/bash
# Per-op Python overhead, ours against tinygrad's, on the same script (tools/py_overhead.py): our package through
# python/compat, then tinygrad from $TINYGRAD_PATH (default /work/tgref), alternating for $ROUNDS rounds (default 3;
# the machine is shared and noisy) and keeping each side's best per case. Prints both sets of lines and the ratios.
cd "$(dirname "$0")/.."
TG=${TINYGRAD_PATH:-/work/tgref}
make -s -j2 build/libtinygrad.so
ours="" theirs=""
for _ in $(seq "${ROUNDS:-3}"); do
  o=$(PYTHONPATH=python/compat:python /usr/bin/python3 tools/py_overhead.py) || exit 1
  t=$(cd /tmp && PYTHONPATH="$TG" /usr/bin/python3 "$OLDPWD/tools/py_overhead.py") || exit 1
  ours+="$o"$'\n' theirs+="$t"$'\n'
done
best() { awk 'NF { k = $2 " " $3; if (!(k in b) || $4 < b[k]) b[k] = $4 } END { for (k in b) printf "overhead %s %.2f us/op\n", k, b[k] }' | sort; }
ours=$(echo "$ours" | best) theirs=$(echo "$theirs" | best)
echo "$ours"; echo "$theirs"
join <(echo "$ours" | awk '{print $3, $4}' | sort) <(echo "$theirs" | awk '{print $3, $4}' | sort) |
  awk '{ printf "overhead ratio %s: tinygrad %.2f us / ours %.2f us = %.1fx\n", $1, $3, $2, $3 / $2; s += log($3 / $2); n++ }
       END { printf "overhead ratio geomean: %.1fx\n", exp(s / n) }'
