#!/usr/bin/env bash
# check-layers.sh MODULE: the CUDA module's host files (kernels/host/) call
# each other one way only. From the symbols each of their object files
# (meson keeps them in MODULE.p/) defines and needs (nm), every "file A
# calls file B" edge; fails when the edges contain a loop (tsort), two files
# calling each other included.
set -euo pipefail

shopt -s nullglob dotglob
objects=("${1:?usage: check-layers.sh MODULE}".p/*host_backend-cuda*.c.o)
if [ "${#objects[@]}" -lt 2 ]; then
  echo "check-layers.sh: no host object files in $1.p/ (is $1 built?)" >&2
  exit 1
fi
set -- "${objects[@]}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

name() { basename "$1" .c.o | sed 's/.*host_//'; }

for o in "$@"; do
  nm -g --defined-only "$o" | awk -v n="$(name "$o")" 'NF == 3 {print $3, n}'
done | sort > "$tmp/defs"

for o in "$@"; do
  n=$(name "$o")
  nm -u "$o" | awk '{print $NF}' | sort | join - "$tmp/defs" | awk -v n="$n" '$2 != n {print n, $2}'
done | sort -u > "$tmp/edges"

echo "calls between the module's host files:"
sed 's/ / -> /; s/^/  /' "$tmp/edges"
if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loop"; then
  echo "FAIL: these files call each other in a loop:" >&2
  cat "$tmp/loop" >&2
  exit 1
fi
echo "no loop"
