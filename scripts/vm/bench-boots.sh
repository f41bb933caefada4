#!/usr/bin/env bash
# scripts/vm/bench-boots.sh LOG...: the issue-23 figures of several scripts/vm-bench.sh boots,
# as medians of the boots. Each LOG is one boot's output (its `VMBENCH:` lines). A figure's value
# in one boot is the median of that boot's runs (hackbench and switch run three times), and the
# table gives the median of those per-boot values, then each boot's value, then the ratio of the
# median to the default scheduler's. A latency beyond the histogram (`>100000`) counts as larger
# than any measured value, so a median can be `>100000`. A figure marked void in a boot (the
# scheduler was ejected during that load) is left out of that boot; the cell says how many boots
# are left. A share (of frame work on P-cores, of the guest idle beside hogs) has no ratio.
# Schedulers are the columns, in the order of the first LOG that names them.
#
#   scripts/vm/bench-boots.sh boot1.log boot2.log boot3.log
set -euo pipefail
(($#)) || { echo "usage: bench-boots.sh LOG..." >&2; exit 2; }
for f in "$@"; do [[ -r $f ]] || { echo "bench-boots: cannot read $f" >&2; exit 2; }; done
awk "$(cat "$(dirname "$0")/bench-median.awk")"'
  function kv(key,   i, q) {
    for (i = 3; i <= NF; i++) { split($i, q, "="); if (q[1] == key) return q[2] }
    return ""
  }
  function add(s, m, v) {
    if (v == "") return
    if (v ~ /^>/) v = 1e12   # beyond the histogram: larger than anything measured
    RUNS[FILENAME, s, m] = RUNS[FILENAME, s, m] " " v
    if (!((s) in SEEN)) { SEEN[s] = 1; ORDER[++NS] = s }
  }
  FNR == 1 { BOOT[++NB] = FILENAME }
  { sub(/\r$/, "") }
  $1 != "VMBENCH:" { next }
  $3 == "void" { VOID[FILENAME, $2, $4] = 1; next }
  $3 == "frame" { add($2, "fps", kv("fps")); add($2, "p_share", kv("p_share")) }
  $3 == "hackbench" { add($2, "hackbench", $4) }
  $3 == "switch" { add($2, "switch", $4) }
  $3 == "cyclic-4hogs" { add($2, "lat4_p50", kv("p50")); add($2, "lat4_p99", kv("p99")); add($2, "lat4_idle", kv("idle_pct")) }
  $3 == "cyclic-8hogs" { add($2, "lat8_p50", kv("p50")); add($2, "lat8_p99", kv("p99")); add($2, "lat8_idle", kv("idle_pct")) }
  $3 == "cyclic-alone" { add($2, "lat0_p50", kv("p50")); add($2, "lat0_p99", kv("p99")) }
  function show(v) {
    if (v == "") return "-"
    if (v + 0 >= 1e12) return ">100000"
    return (v >= 100 || v == int(v)) ? sprintf("%d", v + 0.5) : sprintf("%.3g", v)
  }
  END {
    NM = split("fps p_share hackbench switch lat4_p50 lat4_p99 lat4_idle lat8_p50 lat8_p99 lat8_idle lat0_p50 lat0_p99", M, " ")
    split("frame fps|frame work on P (%)|hackbench (s)|switch (ops/s)|latency beside 4 hogs, p50 (us)|latency beside 4 hogs, p99 (us)|beside 4 hogs, guest idle (%)|latency beside 8 hogs, p50 (us)|latency beside 8 hogs, p99 (us)|beside 8 hogs, guest idle (%)|latency alone, p50 (us)|latency alone, p99 (us)", L, "|")
    hdr = "| figure: median of " NB " boots (each boot) [ratio to default] |"
    sep = "|---|"
    for (i = 1; i <= NS; i++) { hdr = hdr " " ORDER[i] " |"; sep = sep "---|" }
    print hdr; print sep
    for (m = 1; m <= NM; m++) {
      row = "| " L[m] " |"
      for (i = 1; i <= NS; i++) {
        s = ORDER[i]; per = ""; shown = ""; n = 0
        for (b = 1; b <= NB; b++) {
          f = BOOT[b]
          if (VOID[f, s, M[m]] || RUNS[f, s, M[m]] == "") { shown = shown (shown == "" ? "" : " ") "-"; continue }
          v = median(RUNS[f, s, M[m]]); per = per " " v; n++
          shown = shown (shown == "" ? "" : " ") show(v)
        }
        med = median(per); MED[s, m] = med
        cell = show(med) " (" shown ")"
        if (n < NB && n > 0) cell = cell " [" n " of " NB " boots]"
        if (s != "default" && MED["default", m] != "" && med != "" && med + 0 < 1e12 && MED["default", m] + 0 < 1e12 && MED["default", m] + 0 > 0 && M[m] != "p_share" && M[m] !~ /idle/)
          cell = cell sprintf(" [%.2f]", med / MED["default", m])
        row = row " " cell " |"
      }
      print row
    }
  }
' "$@"
