#!/usr/bin/env bash
# Checks scripts/vm/bench-boots.sh on three made-up boots: a figure is the median of the boots'
# values, each boot's value the median of its runs, a latency beyond the histogram stays
# `>100000` in a median it decides, a void phase leaves its boot out, and ratios are to the
# default scheduler's median.
#
#   scripts/tests/bench-boots.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "bench-boots test: FAIL: $*" >&2; failures=$((failures + 1)); }
boot() {  # boot N DEFAULT_HACKBENCH... ; then lines for hybridland from stdin
  local f=$WORK/boot$1.log; shift
  for h in "$@"; do echo "VMBENCH: default hackbench $h"; done > "$f"
  cat >> "$f"
}
boot 1 10 12 11 <<'L'
VMBENCH: default cyclic-4hogs p50=100 p99=1000 max=2000 samples=10 idle_pct=50
VMBENCH: hybridland hackbench 6
VMBENCH: hybridland hackbench 5
VMBENCH: hybridland hackbench 7
VMBENCH: hybridland cyclic-4hogs p50=200 p99=>100000 max=300000 samples=10 idle_pct=30
L
boot 2 9 9 9 <<'L'
VMBENCH: default cyclic-4hogs p50=100 p99=3000 max=4000 samples=10
VMBENCH: hybridland void hackbench ejected: watchdog
VMBENCH: hybridland cyclic-4hogs p50=300 p99=>100000 max=300000 samples=10 idle_pct=20
L
boot 3 13 13 13 <<'L'
VMBENCH: default cyclic-4hogs p50=100 p99=2000 max=4000 samples=10
VMBENCH: hybridland hackbench 4
VMBENCH: hybridland hackbench 4
VMBENCH: hybridland hackbench 4
VMBENCH: hybridland cyclic-4hogs p50=100 p99=1500 max=300000 samples=10 idle_pct=25
L
out=$(scripts/vm/bench-boots.sh "$WORK"/boot{1,2,3}.log)
row() { grep "^| $1 |" <<< "$out" || true; }
want() {  # want ROW_LABEL TEXT: the row holds TEXT
  grep -F -- "$2" <<< "$(row "$1")" > /dev/null || fail "row '$1' lacks '$2': $(row "$1")"
}
grep "^| figure: median of 3 boots" <<< "$out" > /dev/null || fail "header: $out"
want "hackbench (s)" "| 11 (11 9 13) |"
want "hackbench (s)" "| 5 (6 - 4) [2 of 3 boots] [0.45] |"
want "latency beside 4 hogs, p99 (us)" "| 2000 (1000 3000 2000) |"
want "latency beside 4 hogs, p99 (us)" "| >100000 (>100000 >100000 1500) |"
want "latency beside 4 hogs, p50 (us)" "| 200 (200 300 100) [2.00] |"
# The idle share: a median, without a ratio; a boot that did not measure it reads `-`.
want "beside 4 hogs, guest idle (%)" "| 50 (50 - -) [1 of 3 boots] |"
want "beside 4 hogs, guest idle (%)" "| 25 (30 20 25) |"
# Two boots, one beyond the histogram: no average with a stand-in.
out=$(scripts/vm/bench-boots.sh "$WORK"/boot{1,3}.log)
want "latency beside 4 hogs, p99 (us)" "| >100000 (>100000 1500) |"
want "latency beside 4 hogs, p99 (us)" "| 1500 (1000 2000) |"
rc=0; scripts/vm/bench-boots.sh "$WORK/missing.log" 2> /dev/null || rc=$?
[[ $rc == 2 ]] || fail "a missing log: exit status $rc, expected 2"
if ((failures)); then echo "$out" >&2; echo "bench-boots test: $failures failure(s)" >&2; exit 1; fi
echo "bench-boots test: ok"
