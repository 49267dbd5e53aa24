#!/usr/bin/env bash
# check_symbols.sh — `make test`: every symbol libtinygrad.a exports carries tg_ (the public API) or the prefix of the
# module that defines it, so a program linking the static library cannot collide with a generic name (t_add, wi,
# graph_rewrite). Prints the offenders with their object file and fails when there are any. Usage: check_symbols.sh LIB
set -u
lib=${1:-build/libtinygrad.a}
# base: tg_, sb_ (StrBuf); uop: uop_, uopmap_ (UOpMap), dt_ (dtypes and their constants), pm_ (pattern matcher), sym_
# (symbolic rules), spec_, eval_ (the UOp evaluator); schedule: sched_; codegen: cg_, opt_, beam_, interp_; render:
# render_, renderer_, shape_; runtime: rt_; engine: engine_, jit_; tensor: tensor_; grad: grad_; nn: nn_, optim_;
# and in uop also mix_ (the graph builders, tinygrad's mixin methods: uop/mixin.h)
allowed='tg|sb|uop|mix|uopmap|dt|pm|sym|spec|eval|sched|cg|opt|beam|interp|render|renderer|shape|rt|engine|jit|tensor|grad|nn|optim'
[ -f "$lib" ] || { echo "check_symbols: $lib not found"; exit 1; }
bad=$(nm -A -g --defined-only "$lib" | awk 'NF == 3 { n = split($1, f, ":"); print $3 "  (" f[n - 1] ")" }' |
      grep -v -E "^($allowed)_" | sort)
if [ -n "$bad" ]; then
  echo "check_symbols: $(echo "$bad" | wc -l) exported symbols of $lib lack a module prefix (make them static or prefix them):"
  echo "$bad" | sed 's/^/  /'
  exit 1
fi
echo "check_symbols: $(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l) exported symbols, all prefixed"
