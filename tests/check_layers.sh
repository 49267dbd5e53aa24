#!/usr/bin/env bash
# check_layers.sh — `make test`: the stages of src/ include each other in one direction only (issue 19: the scheduler
# once included src/tensor, a cycle tensor -> engine -> schedule -> tensor). Each folder has a rank; a file may include
# a header of its own folder or of a folder with a lower rank, never one of its rank or above. Prints every offending
# #include with file and line and fails when there is one. Usage: check_layers.sh [SRC_DIR]   (default: src)
set -u
src=${1:-src}
[ -d "$src" ] || { echo "check_layers: $src not found"; exit 1; }
# lowest first. schedule and codegen share a rank: neither may include the other. grad sits above tensor because
# autograd (tg_backward) walks tensor handles; its rules build with the UOp-level builders of uop/mixin.h.
declare -A rank=([base]=0 [uop]=1 [runtime]=2 [render]=3 [schedule]=4 [codegen]=4 [engine]=5 [tensor]=6 [grad]=7
                 [nn]=8)
bad=0
checked=0
for dir in "$src"/*/; do
  d=$(basename "$dir")
  [ -n "${rank[$d]+x}" ] || { echo "check_layers: folder src/$d has no rank (add it to tests/check_layers.sh)"; bad=$((bad + 1)); continue; }
  for f in "$dir"*.c "$dir"*.h "$dir"*.def; do
    [ -f "$f" ] || continue
    checked=$((checked + 1))
    while IFS=: read -r line inc; do
      to=${inc%%/*}
      [ "$to" = "$d" ] && continue
      if [ -z "${rank[$to]+x}" ]; then
        echo "  $f:$line includes \"$inc\": folder $to has no rank"; bad=$((bad + 1))
      elif [ "${rank[$to]}" -ge "${rank[$d]}" ]; then
        echo "  $f:$line: $d (rank ${rank[$d]}) includes \"$inc\" of $to (rank ${rank[$to]})"; bad=$((bad + 1))
      fi
    done < <(grep -n -oE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"(\.\./)?[a-z_]+/[^"]+"' "$f" | sed -E 's#^([0-9]+):.*"(\.\./)?([^"]+)"#\1:\3#')
  done
done
if [ "$bad" -gt 0 ]; then
  echo "check_layers: $bad includes against the stage order (base < uop < runtime < render < schedule, codegen < engine < tensor < grad < nn)"
  exit 1
fi
echo "check_layers: $checked files, every include goes to a lower stage"
