#!/usr/bin/env bash
# check-no-skip.sh: runs GPU test programs where the outcome is known, and
# checks that they end that way (tests/gpu/meson.build, no-skip-*):
#
#   check-no-skip.sh fail MESSAGE -- COMMAND [ARGS] -- COMMAND [ARGS] ...
#       every command fails: an exit status other than 0 and 77 (77 is
#       meson's "skipped"), with MESSAGE in its output (stdout and stderr);
#   check-no-skip.sh skip MESSAGE -- COMMAND [ARGS] ...
#       every command exits 77 with MESSAGE in its output.
#
# The environment (meson's env:) says what the machine looks like: the
# tests' driver probe (gpu-probe.c) asks the stand-in driver named by
# WHISPER_GPU_TEST_DRIVER, and WHISPER_CUDA_MODULE names the module.
set -u

usage() { echo "usage: $0 fail|skip MESSAGE -- COMMAND [ARGS] [-- COMMAND [ARGS]]..." >&2; exit 2; }
[ $# -ge 4 ] || usage
mode=$1 message=$2
shift 2
[ "$mode" = fail ] || [ "$mode" = skip ] || usage
[ "$1" = -- ] || usage
shift

out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad=0 n=0

run_one() {
  [ $# -ge 1 ] || usage
  n=$((n + 1))
  "$@" >"$out" 2>&1 </dev/null
  local rc=$?
  local what="$(basename "$1")${2:+ $2}"
  local ok=1 why=""
  if [ "$mode" = fail ]; then
    if [ $rc = 0 ]; then ok=0 why="passed (exit 0)"
    elif [ $rc = 77 ]; then ok=0 why="skipped (exit 77)"
    fi
  elif [ $rc != 77 ]; then
    ok=0 why="exit $rc"
  fi
  if [ $ok = 1 ] && ! grep -qF -- "$message" "$out"; then
    ok=0 why="exit $rc, but its output does not say \"$message\""
  fi
  if [ $ok = 1 ]; then
    echo "ok: $what: exit $rc, says: $(grep -F -m1 -- "$message" "$out" | cut -c1-400)"
  else
    echo "NOT OK: $what should $mode with \"$message\" but $why; its output:"
    tail -n 15 "$out" | sed 's/^/    /'
    bad=$((bad + 1))
  fi
}

cmd=()
for arg in "$@"; do
  if [ "$arg" = -- ]; then
    run_one "${cmd[@]}"
    cmd=()
  else
    cmd+=("$arg")
  fi
done
run_one "${cmd[@]}"

[ "$mode" = fail ] && ended=failed || ended=skipped
echo "$((n - bad)) of $n commands $ended as expected"
[ $bad = 0 ]
