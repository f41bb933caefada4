#!/usr/bin/env bash
# scripts/vm/bench-table.sh OUT: the tables of scripts/vm-bench.sh, made from the guest's
# output OUT (the `VMBENCH: <sched> <metric> <value...>` lines of scripts/vm/guest-bench.sh).
#
# Environment (vm-bench.sh sets them):
#   BENCH_SCHEDS        the schedulers, in column order (required)
#   BENCH_ITEM5_PAIRS   policy:fifo pairs for the throughput-over-fifo lines (default
#                       "hybridland:fifo hybridland-fixed:fifo")
#   BENCH_EXTRA_PAIRS   this:extra pairs for the same-boot comparison table (default: none)
#
# A figure the guest marked void (`VMBENCH: <sched> void <metric> <why>`: the scheduler was
# ejected during that load) is left out everywhere: its cell reads `void`, no median, ratio or
# cost line uses it, and a list after the tables says which phases were void and why.
# scripts/tests/bench-table.sh checks this.
set -euo pipefail
OUT=${1:?usage: bench-table.sh OUT}
: "${BENCH_SCHEDS:?BENCH_SCHEDS: the schedulers, in column order}"
ITEM5_PAIRS=${BENCH_ITEM5_PAIRS-hybridland:fifo hybridland-fixed:fifo}
EXTRA_PAIRS=${BENCH_EXTRA_PAIRS:-}

# Shared by every awk program below: the median of a space-separated list (bench-median.awk),
# the value of key=... in a stored line, lines without the guest console's CR, and which
# (scheduler, metric) pairs are void (VOID[s, metric]; every program reads OUT once and decides
# at its END).
AWK_LIB="$(cat "$(dirname "$0")/bench-median.awk")"'
  function kv(field, key,   n, i, p, q) {
    n = split(field, p, " ")
    for (i = 1; i <= n; i++) { split(p[i], q, "="); if (q[1] == key) return q[2] }
    return ""
  }
  { sub(/\r$/, "") }
  $1 == "VMBENCH:" && $3 == "void" { VOID[$2, $4] = 1; next }
'
echo "==== vm-bench summary (8 vCPUs as 4 cores x 2 threads, TCG: compare ratios only) ===="
awk -v scheds="$BENCH_SCHEDS" "$AWK_LIB"'
  $1 == "VMBENCH:" && $4 != "error" {
    s = $2; what = $3
    if (what == "hackbench" || what == "switch") { if ($4 != "failed") v[what, s] = v[what, s] " " $4; next }
    line = ""; for (i = 4; i <= NF; i++) line = line " " $i
    L[what, s] = line
  }
  END {
    n = split(scheds, S, " ")
    short["default"] = "default"; short["fifo"] = "fifo"; short["hybridland"] = "hybridland"
    short["hybridland-fixed"] = "hl-fixed"; short["hybridland-balance"] = "hl-balance"
    printf "%-24s", "figure (ratio to default)"
    for (i = 1; i <= n; i++) { h = S[i]; sub(/^scx_/, "", h); if (h in short) h = short[h]; printf " %15s", h }
    printf "\n"
    text("lone task: % on P", "lone", "p_pct", 1)
    place("4 spin: P / E{0,2}+{1,3}", "spin4")
    place6("6 spin: P / P pairs full", "spin6")
    eclu("E cluster: emptier", "ecluster")
    nk = split("fps stdev_ms missed p_share", keys, " "); split("fps|stdev ms|missed|% on P", labels, "|")
    for (j = 1; j <= nk; j++) text("frame: " labels[j], "frame", keys[j], 1)
    med("hackbench s", "hackbench")
    med("switch ops/s", "switch")
    # Each latency load, its median then its 99th percentile; beside hogs, the guest idle meanwhile.
    nk = split("4hogs 8hogs alone", keys, " "); split("4 hogs|8 hogs|alone", labels, "|")
    for (j = 1; j <= nk; j++) {
      for (pct = 50; pct <= 99; pct += 49) text("lat " labels[j] " p" pct " us", "cyclic-" keys[j], "p" pct, 1)
      if (keys[j] ~ /hogs/) text("lat " labels[j] " idle %", "cyclic-" keys[j], "idle_pct", 0)
    }
  }
  function cell(x, d,   r) {
    if (x == "") return "-"
    if (d == "" || d + 0 == 0 || x ~ />/ || d ~ />/) return x
    return sprintf("%s (%.2f)", x, x / d)
  }
  # A row is printed only when some scheduler has its figure (HYBRIDLAND_BENCH_LOADS may skip loads).
  function put(x) { row = row sprintf(" %15s", x); if (x != "-") seen = 1 }
  function flush(label) { if (seen) printf "%-24s%s\n", label, row; row = ""; seen = 0 }
  # The stored line of a metric, "" when void.
  function got(what, s) { return ((s, what) in VOID) ? "" : L[what, s] }
  function text(label, what, key, ratio,   i, d, x) {
    d = kv(got(what, "default"), key)
    for (i = 1; i <= n; i++) {
      if ((S[i], what) in VOID) { put("void"); continue }
      x = kv(L[what, S[i]], key); put(ratio ? cell(x, d) : (x == "" ? "-" : x))
    }
    flush(label)
  }
  function place(label, what,   i, l) {
    for (i = 1; i <= n; i++) {
      if ((S[i], what) in VOID) { put("void"); continue }
      l = L[what, S[i]]; put(l == "" ? "-" : kv(l, "on_p") " / " kv(l, "e02") "+" kv(l, "e13"))
    }
    flush(label)
  }
  function place6(label, what,   i, l) {
    for (i = 1; i <= n; i++) {
      if ((S[i], what) in VOID) { put("void"); continue }
      l = L[what, S[i]]; put(l == "" ? "-" : kv(l, "on_p") " / " kv(l, "p_pairs_full"))
    }
    flush(label)
  }
  function eclu(label, what,   i, l) {
    for (i = 1; i <= n; i++) {
      if ((S[i], what) in VOID) { put("void"); continue }
      l = L[what, S[i]]; put(l == "" ? "-" : kv(l, "emptier") "/" kv(l, "rounds"))
    }
    flush(label)
  }
  function med(label, what,   i, d) {
    d = (("default", what) in VOID) ? "" : median(v[what, "default"])
    for (i = 1; i <= n; i++) {
      if ((S[i], what) in VOID) { put("void"); continue }
      put(cell(median(v[what, S[i]]), d))
    }
    flush(label)
  }' "$OUT"
echo "(hackbench, frame stdev, missed and latency: lower is better; fps, switch ops/s: higher is better)"
if grep '^VMBENCH: .* ecluster ' "$OUT" >/dev/null; then
  echo
  echo "---- E cluster rounds: the hogged E-core:the spinner's CPU (E clusters {0,2} and {1,3}) ----"
  awk "$AWK_LIB"'$1 == "VMBENCH:" && $3 == "ecluster" { E[$2] = sprintf("%-19s %s/%s  %s", $2, kv($0, "emptier"), kv($0, "rounds"), kv($0, "hog:cpu")); O[++k] = $2 }
    END { for (i = 1; i <= k; i++) if (!((O[i], "ecluster") in VOID)) print E[O[i]] }' "$OUT"
fi
echo
echo "---- the user-space loop during one hackbench run (cost; batches = sched_yield calls) ----"
awk "$AWK_LIB"'
  $1 == "VMBENCH:" && $3 == "loop" {
    b = kv($0, "batches")
    if (b + 0) Lp[$2] = sprintf("%-17s   loop thread (its --stats): cpu %.3f ms/batch, snapshots %.2f/batch (%.3f ms/batch in them), core %.3f ms/batch, over %d batches",
      "", kv($0, "cpu_us") / b / 1000, kv($0, "snapshots") / b, kv($0, "snapshot_us") / b / 1000, kv($0, "decide_us") / b / 1000, b)
    next
  }
  $1 == "VMBENCH:" && $3 == "cost" {
    d = $4; sub("dispatched=", "", d); c = $5; sub("cpu_ms=", "", c); w = $6; sub("wall_s=", "", w)
    bpf = 0; yield_ = 0; rest = ""
    for (i = 8; i <= NF; i++) {
      split($i, q, "="); if (q[1] == "sys_bpf") bpf = q[2]; else if (q[1] == "sys_sched_yield") yield_ = q[2]
      rest = rest " " $i
    }
    O[++k] = $2
    A[$2] = sprintf("%-17s dispatched %7d  cpu %6d ms in %5s s  %6.1f us/dispatch  batches %7d  dispatches/batch %5.2f  cpu %.3f ms/batch  bpf() %7d (%.2f/batch)",
      $2, d, c, w, d + 0 ? c * 1000 / d : 0, yield_, yield_ + 0 ? d / yield_ : 0, yield_ + 0 ? c / yield_ : 0, bpf, yield_ + 0 ? bpf / yield_ : 0)
    B[$2] = sprintf("%-17s   syscalls:%s", "", rest)
  }
  END {
    for (i = 1; i <= k; i++) {
      s = O[i]
      if ((s, "cost") in VOID) { printf "%-17s void\n", s; continue }
      print A[s]; print B[s]
      if ((s in Lp) && !((s, "loop") in VOID)) print Lp[s]
    }
    # Void before it measured anything (the load did not begin).
    for (key in VOID) { split(key, q, SUBSEP); if (q[2] == "cost" && !(q[1] in A)) printf "%-17s void\n", q[1] }
  }' "$OUT"
# Item 5's goal: the policy's throughput over --fifo's, >= 0.9 (1 = as fast as fifo).
awk -v pairs="$ITEM5_PAIRS" "$AWK_LIB"'
  $1 == "VMBENCH:" && ($3 == "hackbench" || $3 == "switch") && $4 != "failed" && $4 != "error" { v[$3, $2] = v[$3, $2] " " $4 }
  END {
    np = split(pairs, P, " ")
    for (i = 1; i <= np; i++) {
      split(P[i], q, ":"); m = q[1]; f = q[2]
      if ((m, "hackbench") in VOID || (m, "switch") in VOID || (f, "hackbench") in VOID || (f, "switch") in VOID) {
        printf "%-17s throughput / %s: void (an ejection during the throughput load)\n", m, f
        continue
      }
      fh = median(v["hackbench", f]); fs = median(v["switch", f])
      h = median(v["hackbench", m]); w = median(v["switch", m])
      if (fh == "" || fs == "" || h == "" || w == "") continue
      printf "%-17s throughput / %s: hackbench %.2f (%s %s s / %s s), switch %.2f (%s / %s per s); goal >= 0.9\n",
        m, f, fh / h, f, fh, h, w / fs, w, fs
    }
  }' "$OUT"
# This build's figures over each extra binary's in the same mode, from this one boot.
if [[ -n $EXTRA_PAIRS ]]; then
  echo
  echo "---- this build / each extra binary, same mode, same boot (ratio: this / extra) ----"
  awk -v pairs="$EXTRA_PAIRS" "$AWK_LIB"'
    $1 == "VMBENCH:" && $4 == "error" { next }
    $1 == "VMBENCH:" && ($3 == "hackbench" || $3 == "switch") { if ($4 != "failed") v[$3, $2] = v[$3, $2] " " $4; next }
    $1 == "VMBENCH:" && $3 == "cost" {
      d = $4; sub("dispatched=", "", d); c = $5; sub("cpu_ms=", "", c); b = 0; bpf = 0
      for (i = 8; i <= NF; i++) { split($i, q, "="); if (q[1] == "sys_sched_yield") b = q[2]; else if (q[1] == "sys_bpf") bpf = q[2] }
      C["batches", $2] = b
      if (b + 0) { C["ms/batch", $2] = sprintf("%.3f", c / b); C["bpf/batch", $2] = sprintf("%.2f", bpf / b); C["disp/batch", $2] = sprintf("%.2f", d / b) }
      next
    }
    $1 == "VMBENCH:" { line = ""; for (i = 4; i <= NF; i++) line = line " " $i; L[$3, $2] = line }
    END {
      np = split(pairs, P, " ")
      printf "%-22s", "figure"
      for (i = 1; i <= np; i++) { split(P[i], q, ":"); printf " %28s", q[1] " / " q[2] }
      printf "\n"
      row("frame: fps", "L", "frame", "fps"); row("frame: stdev ms", "L", "frame", "stdev_ms")
      row("frame: missed", "L", "frame", "missed"); row("frame: % on P", "L", "frame", "p_share")
      row("lone task: % on P", "L", "lone", "p_pct")
      row("hackbench s", "M", "hackbench", ""); row("switch ops/s", "M", "switch", "")
      row("lat 4 hogs p50 us", "L", "cyclic-4hogs", "p50"); row("lat 4 hogs p99 us", "L", "cyclic-4hogs", "p99")
      row("lat 8 hogs p50 us", "L", "cyclic-8hogs", "p50"); row("lat 8 hogs p99 us", "L", "cyclic-8hogs", "p99")
      row("lat alone p50 us", "L", "cyclic-alone", "p50"); row("lat alone p99 us", "L", "cyclic-alone", "p99")
      row("cost: cpu ms/batch", "C", "ms/batch", ""); row("cost: batches", "C", "batches", "")
      row("cost: bpf()/batch", "C", "bpf/batch", ""); row("cost: dispatches/batch", "C", "disp/batch", "")
    }
    function get(kind, what, key, s) {
      if (((s, (kind == "C" ? "cost" : what)) in VOID)) return "void"
      if (kind == "M") return median(v[what, s])
      if (kind == "C") return C[what, s]
      return kv(L[what, s], key)
    }
    function row(label, kind, what, key,   i, a, b, c) {
      printf "%-22s", label
      for (i = 1; i <= np; i++) {
        split(P[i], q, ":"); a = get(kind, what, key, q[1]); b = get(kind, what, key, q[2])
        if (a == "" && b == "") c = "-"
        else if (a == "" || b == "" || a == "void" || b == "void" || a ~ />/ || b ~ />/ || b + 0 == 0) c = (a == "" ? "-" : a) " / " (b == "" ? "-" : b)
        else c = sprintf("%s / %s (%.2f)", a, b, a / b)
        printf " %28s", c
      }
      printf "\n"
    }' "$OUT"
fi
# The fast path's coverage per load (`VMBENCH: <sched> coverage <load> placed=.. asked=..
# no_free=.. shared_queue=.. race=.. class_writes=.. pinned=..`, scx_hybridland builds only),
# summed over the load's runs: the wake-ups that found an allowed CPU free (asked - no_free), the
# share of them placed in BPF, the declines by reason, the class writes, and the wake-ups with
# nothing free that the pinned rule placed in BPF (0 in logs from before it).
if grep '^VMBENCH: [^ ]* coverage ' "$OUT" >/dev/null; then
  echo
  echo "---- wake-ups placed in BPF: of those with an allowed CPU free when select_cpu ran ----"
  printf "%-17s %-14s %9s %9s %8s %7s %8s %6s %7s %7s\n" scheduler load asked free placed share shared-q race classes pinned
  awk "$AWK_LIB"'
    $1 == "VMBENCH:" && $3 == "coverage" {
      key = $2 SUBSEP $4
      if (!(key in A)) { O[++n] = key }
      line = ""; for (i = 5; i <= NF; i++) line = line " " $i
      A[key] += kv(line, "asked"); F[key] += kv(line, "asked") - kv(line, "no_free")
      P[key] += kv(line, "placed"); Q[key] += kv(line, "shared_queue")
      R[key] += kv(line, "race"); C[key] += kv(line, "class_writes"); N[key] += kv(line, "pinned")
    }
    END {
      for (i = 1; i <= n; i++) {
        k = O[i]; split(k, q, SUBSEP)
        share = F[k] > 0 ? sprintf("%.1f%%", 100 * P[k] / F[k]) : "-"
        printf "%-17s %-14s %9d %9d %8d %7s %8d %6d %7d %7d\n", q[1], q[2], A[k], F[k], P[k], share, Q[k], R[k], C[k], N[k]
      }
    }' "$OUT"
fi
# Which phases were void, and why (the guest's reason, once per scheduler and reason).
if grep '^VMBENCH: [^ ]* void ' "$OUT" >/dev/null; then
  echo
  echo "---- void: the scheduler was ejected during these loads; their figures are left out ----"
  awk '{ sub(/\r$/, "") } $1 == "VMBENCH:" && $3 == "void" {
      why = ""; for (i = 5; i <= NF; i++) why = why (i > 5 ? " " : "") $i
      key = $2 SUBSEP why
      if (!(key in M)) { O[++k] = key; S[key] = $2; W[key] = why }
      M[key] = M[key] " " $4
    }
    END { for (i = 1; i <= k; i++) printf "%-17s%s: %s\n", S[O[i]], M[O[i]], W[O[i]] }' "$OUT"
fi
