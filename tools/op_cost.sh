#!/bin/bash
# Instructions per lazy op in the C library (tools/op_cost.c under valgrind's callgrind, counting only the op and its
# release): repeatable where wall time on a shared machine is not. Arguments: cases (default all); N ops each (5000).
cd "$(dirname "$0")/.."
make -s -j2 build/libtinygrad.so || exit 1
mkdir -p build/tools
cc -O2 -g -std=c11 -Wall -Wextra -Werror -Iinclude tools/op_cost.c -o build/tools/op_cost -Lbuild -ltinygrad -Wl,-rpath,"$PWD/build" || exit 1
N=${N:-5000}
for c in ${@:-add adds exp sum reshape getitem}; do
  ir=$(REPS=1 NOREAL=1 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=op_step --toggle-collect=op_drop \
       --callgrind-out-file=/dev/null build/tools/op_cost "$c" "$N" 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
  [ -n "$ir" ] || { echo "op_cost $c: callgrind failed"; exit 1; }
  echo "op_cost $c $((ir / N)) instructions/op"
done
