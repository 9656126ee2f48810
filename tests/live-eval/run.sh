#!/usr/bin/env bash
# run.sh: the live evaluation set (make-set.py) through live-commit
# --paced --programme, one run per half.
#
#   bash tests/live-eval/run.sh [--half dev|held-out|both] [--lang en|de|fr|es]
#       [--latency MS] [--net] [--realtime] [live-commit options: --model PATH, --set P=V, ...]
#
# --realtime: the live pass in real time (live-commit without --paced: the
# programme plays at its own pace and the calls' real duration counts for
# the deadline, so the text and the delays depend on the machine's speed and
# load; run it on a quiet machine and give the load with the figures).
#
# Defaults: both halves, en, latency 3000, the element's default model
# (tiny.en); another language runs the multilingual base model
# ($MODELS/base) with language-code=LANG unless --model is given. --net
# runs the RTP/Opus variant of the English halves. For each half it prints
# live-commit's table and RESULT line (live WER vs offline WER, p95 delay,
# repeated words, text in pauses, warnings; the WERs also with the numbers
# read, wer_*_num, English only: --language LANG) and edges.py's errors of the
# words after and before the pauses, then one summary line per half. The
# whole output of each run (--verbose: every item, every imperfect clip)
# goes to build/live-eval/logs/. Both passes run with word-timestamps=true
# (live input always has them): offline word buffers are otherwise spread
# evenly over their segment and edges.py would put them in the wrong clip.
# make-set.py makes the set first when it is missing or out of date
# (a few seconds; --net: the English halves' length in real time).
# Tune on dev only: held-out is for reporting.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build}
half=both lang=en latency=3000 net= model_given= pace=--paced rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --half) half=$2; shift 2 ;;
    --lang) lang=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --net) net=-net; shift ;;
    --realtime) pace=; shift ;;
    --model|-m) model_given=1; rest+=("$1" "$2"); shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
case $half in dev) halves=(dev) ;; held-out) halves=(held-out) ;; both) halves=(dev held-out) ;;
  *) echo "run.sh: --half dev, held-out or both, not '$half'" >&2; exit 2 ;; esac
case $lang in en|de|fr|es) ;; *) echo "run.sh: --lang en, de, fr or es, not '$lang'" >&2; exit 2 ;; esac
if [ -n "$net" ] && [ "$lang" != en ]; then
  echo "run.sh: --net: English only" >&2; exit 2
fi
if [ ! -x "$build/tests/element/live-commit" ]; then
  echo "run.sh: no $build/tests/element/live-commit: build first (meson setup build && ninja -C build), or set BUILD_DIR" >&2
  exit 2
fi
if [ "$lang" != en ] && [ -z "$model_given" ]; then
  models=${MODELS:-$HOME/.local/share/gst-whisper/models}
  rest+=(--model "$models/base" --set "language-code=$lang")
fi
out=$build/live-eval
python3 "$here/make-set.py" --out "$out" ${net:+--net}
mkdir -p "$out/logs"
export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/live-commit.registry"
summary=()
for h in "${halves[@]}"; do
  log=$out/logs/$h-$lang$net-$latency.log
  [ -z "$pace" ] && log=$out/logs/$h-$lang$net-$latency-realtime.log
  echo "# $h-$lang$net, latency $latency: $log"
  "$build/tests/element/live-commit" ${pace:+"$pace"} --verbose --latency "$latency" \
    --set word-timestamps=true --language "$lang" \
    ${rest[@]+"${rest[@]}"} --programme "$out/$h-$lang$net.wav" > "$log" 2>&1 \
    || echo "run.sh: live-commit failed on $h-$lang$net (see $log)" >&2
  sed -n '/^# live-commit:/,$p' "$log"
  python3 "$here/edges.py" "$log" "$out/$h-$lang$net.tsv" | tee -a "$log"
  summary+=("$h-$lang$net $(grep '^RESULT' "$log" || echo 'no RESULT line')")
done
printf '%s\n' "${summary[@]}"
