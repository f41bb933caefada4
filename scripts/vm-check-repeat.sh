#!/usr/bin/env bash
# scripts/vm-check-repeat.sh: scripts/vm-check.sh N times back to back, optionally beside a CPU
# hog on the host, each run's output kept in a directory: the "5 of 5 under host load" target of
# BENCHMARKS.md, and a way to see whether a check is flaky before CI finds out.
#
# Usage: scripts/vm-check-repeat.sh [-n RUNS] [--hog] [-o DIR] [path/to/scx_hybridland]
#   -n RUNS   how many runs (default 5)
#   --hog     run `yes > /dev/null` on the host for the whole series (stopped at the end, and
#             on Ctrl-C, by its process id)
#   -o DIR    where the logs go (default target/vm-check-repeat): run-N.log per run and
#             summary.txt (one line per run: its verdict, the checks that failed, the host's
#             load averages at its start and end, the time it took)
# Exits non-zero when any run failed. Uses the binaries vm-check.sh uses (it builds nothing).
# HYBRIDLAND_REPEAT_CHECK names another script to repeat (scripts/tests/vm-check-repeat.sh
# gives it a stub).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=5
HOG=0
OUT=target/vm-check-repeat
BIN=()
while (($#)); do
  case $1 in
    -n) RUNS=${2:?-n needs a number}; shift 2 ;;
    --hog) HOG=1; shift ;;
    -o) OUT=${2:?-o needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "vm-check-repeat: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) BIN=("$1"); shift ;;
  esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "vm-check-repeat: -n wants a positive number, not $RUNS" >&2; exit 2; }
mkdir -p "$OUT"
HOG_PID=""
stop_hog() { if [[ -n $HOG_PID ]]; then kill "$HOG_PID" 2>/dev/null || true; wait "$HOG_PID" 2>/dev/null || true; HOG_PID=""; fi; }
trap stop_hog EXIT
trap 'stop_hog; exit 130' INT
trap 'stop_hog; exit 143' TERM
if ((HOG)); then
  yes > /dev/null &
  HOG_PID=$!
fi
SUMMARY=$OUT/summary.txt
{
  echo "vm-check-repeat: $RUNS runs of scripts/vm-check.sh, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), host hog: $([[ $HOG = 1 ]] && echo 'yes > /dev/null' || echo none), $(nproc) host CPUs"
} > "$SUMMARY"
failed=0
for ((i = 1; i <= RUNS; i++)); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s)
  log=$OUT/run-$i.log
  if bash "${HYBRIDLAND_REPEAT_CHECK:-scripts/vm-check.sh}" "${BIN[@]}" > "$log" 2>&1; then verdict=PASS; else verdict=FAIL; failed=$((failed + 1)); fi
  took=$(($(date +%s) - start))
  bad=$(grep -a '^FAIL ' "$log" | cut -d: -f1 | sed 's/^FAIL //' | tr '\n' ' ' || true)
  passed=$(grep -ac '^PASS ' "$log" || true)
  line="run $i: $verdict ($passed checks passed${bad:+; failed: $bad}) load average at start $load, at end $(cut -d' ' -f1-3 /proc/loadavg), ${took}s, ended $(date -u +%FT%TZ)"
  echo "$line" | tee -a "$SUMMARY"
done
echo "vm-check-repeat: $((RUNS - failed)) of $RUNS runs passed" | tee -a "$SUMMARY"
((failed == 0))
