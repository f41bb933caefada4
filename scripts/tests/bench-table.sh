#!/usr/bin/env bash
# Checks that a vm-bench phase during which the scheduler was ejected is void: the guest side
# (run_phase and in_charge in scripts/vm/guest-lib.sh, over a fake /sys/kernel/sched_ext)
# marks each metric of that load void when the state leaves `enabled` mid-load (what a sysrq-S
# or the kernel's watchdog does) or enable_seq moves (ejected and loaded again), and skips a load
# that would begin without its scheduler; the table (scripts/vm/bench-table.sh) then shows
# `void` in those cells, keeps every other figure, leaves the void figures out of the medians
# and ratios, and says why. Also the profile load's reading of BPF run-time statistics
# (bpf_progs, bpf_deltas in guest-lib.sh) from a fake bpftool, and the fast path's coverage
# rows. No VM is booted.
#
#   scripts/tests/bench-table.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
WORK=$(mktemp -d)
SLEEPER=""
cleanup() {
  if [[ -n $SLEEPER ]]; then kill "$SLEEPER" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
fail() { echo "bench-table test: FAIL: $*" >&2; failures=$((failures + 1)); }
# expect_line FILE REGEX WHAT / expect_no_line FILE REGEX WHAT
expect_line() { grep -E -- "$2" "$1" >/dev/null || { fail "$3 (no line matching '$2' in:)"; cat "$1" >&2; }; }
expect_no_line() { if grep -E -- "$2" "$1" >/dev/null; then fail "$3 (a line matches '$2')"; fi; }

# --- the guest side, in a POSIX sh as busybox runs it ----------------------------------------
SCX=$WORK/sched_ext
mkdir -p "$SCX/root"
echo enabled > "$SCX/state"
echo 7 > "$SCX/enable_seq"
sleep 300 &
SLEEPER=$!
cat > "$WORK/phases.sh" <<'EOF'
. "$REPO/scripts/vm/guest-lib.sh"
SCHED_PID=$SLEEPER
SCHED_SEQ=$(enable_seq)
# Loads as guest-bench.sh has them: they print their figures; two of them eject the scheduler
# on the way, as `echo S > /proc/sysrq-trigger` would (sched_ext goes to disabled).
throughput() {
  echo "VMBENCH: $1 hackbench 3.5"; echo "VMBENCH: $1 switch 5000"
  echo "VMBENCH: $1 hackbench 3.7"; echo "VMBENCH: $1 switch 5100"
  echo "VMBENCH: $1 hackbench 3.6"; echo "VMBENCH: $1 switch 4900"
}
latency() {
  echo "VMBENCH: $1 cyclic-4hogs p50=7000 p99=40000 max=60000 samples=800"
  echo disabled > "$SCX_DIR/state"
  echo "VMBENCH: $1 cyclic-8hogs p50=19000 p99=83000 max=99000 samples=300"
}
cost() { echo "VMBENCH: $1 cost dispatched=900 cpu_ms=400 wall_s=5.0 syscalls: sys_sched_yield=1000 sys_bpf=10"; }
frame() { echo "VMBENCH: $1 frame fps=19.0 stdev_ms=17.0 missed=150 p_share=100"; }
run_phase hybridland throughput && echo "PHASE-OK throughput"
run_phase hybridland latency || echo "PHASE-VOID latency"
run_phase hybridland cost || echo "PHASE-VOID cost"
run_phase hybridland frame || echo "PHASE-VOID frame"
# The default scheduler's phases always count.
run_phase default frame && echo "PHASE-OK default-frame"
EOF
cat > "$WORK/restart.sh" <<'EOF'
echo 8 > "$SCX_DIR/enable_seq"
EOF
REPO=$REPO SCX_DIR=$SCX SLEEPER=$SLEEPER sh -c '
  . "$0"' "$WORK/phases.sh" > "$WORK/phases.out" 2>&1 || fail "the phases script failed"
G=$WORK/phases.out
expect_line "$G" '^PHASE-OK throughput$' "a load that ran through counts"
expect_no_line "$G" '^VMBENCH: hybridland void (hackbench|switch)' "no void for the load that ran through"
expect_line "$G" '^VMBENCH: hybridland void cyclic-4hogs sched_ext state disabled' "ejection mid-load voids its first metric"
expect_line "$G" '^VMBENCH: hybridland void cyclic-8hogs sched_ext state disabled' "ejection mid-load voids its second metric"
expect_line "$G" '^PHASE-VOID latency$' "run_phase fails for a void load"
expect_line "$G" '^VMBENCH: hybridland void cost not in charge when the load began' "a load after the ejection is void"
expect_no_line "$G" '^VMBENCH: hybridland cost ' "a load after the ejection does not run"
expect_line "$G" '^VMBENCH: default frame ' "the default's load runs"
expect_line "$G" '^PHASE-OK default-frame$' "the default's phase counts"
# enable_seq moved while enabled: a scheduler loaded again.
echo enabled > "$SCX/state"
REPO=$REPO SCX_DIR=$SCX SLEEPER=$SLEEPER sh -c '
  . "$REPO/scripts/vm/guest-lib.sh"
  SCHED_PID=$SLEEPER; SCHED_SEQ=$(enable_seq)
  frame() { echo "VMBENCH: $1 frame fps=19.0"; . "$0"; }
  run_phase hybridland frame || echo PHASE-VOID' "$WORK/restart.sh" > "$WORK/restart.out" 2>&1 ||
  fail "the restart script failed"
expect_line "$WORK/restart.out" '^VMBENCH: hybridland void frame sched_ext enable_seq 7 -> 8' "a reload mid-load voids it"
# The scheduler's process gone, sched_ext still enabled (e.g. before the kernel noticed).
REPO=$REPO SCX_DIR=$SCX sh -c '
  . "$REPO/scripts/vm/guest-lib.sh"
  SCHED_PID=999999999; SCHED_SEQ=$(enable_seq)
  frame() { echo "VMBENCH: $1 frame fps=19.0"; }
  run_phase fifo frame || echo PHASE-VOID' > "$WORK/gone.out" 2>&1 || fail "the gone script failed"
expect_line "$WORK/gone.out" "^VMBENCH: fifo void frame not in charge when the load began: the scheduler's process is gone" "a dead scheduler's load is void"

# --- the profile load's BPF statistics (bpftool's output as 7.1 prints it) ---------------------
mkdir -p "$WORK/hl"
cat > "$WORK/hl/bpftool" <<'EOF'
#!/bin/sh
if [ "$(cat "$(dirname "$0")/reading")" = 0 ]; then
  echo "41: struct_ops  name rustland_select_cpu  tag 1a2b3c4d5e6f7081  gpl run_time_ns 1000000 run_cnt 100"
  printf '\tloaded_at 2026-11-25T03:43:01+0000  uid 0\n'
  echo "42: struct_ops  name rustland_enqueue  tag 0102030405060708  gpl run_time_ns 500 run_cnt 5"
  echo "43: syscall  name rs_select_cpu  tag 1112131415161718  gpl"
else
  echo "41: struct_ops  name rustland_select_cpu  tag 1a2b3c4d5e6f7081  gpl run_time_ns 3000000 run_cnt 300"
  printf '\tloaded_at 2026-11-25T03:43:01+0000  uid 0\n'
  echo "42: struct_ops  name rustland_enqueue  tag 0102030405060708  gpl run_time_ns 500 run_cnt 5"
  echo "43: syscall  name rs_select_cpu  tag 1112131415161718  gpl"
  echo "44: tracing  name hl_task_exit  tag 2122232425262728  gpl run_time_ns 45000 run_cnt 3"
fi
EOF
chmod +x "$WORK/hl/bpftool"
REPO=$REPO HL=$WORK/hl sh -c '
  . "$REPO/scripts/vm/guest-lib.sh"
  echo 0 > "$HL/reading"; bpf_progs > "$HL/bpf.0"
  echo 1 > "$HL/reading"; bpf_progs > "$HL/bpf.1"
  cat "$HL/bpf.0"; bpf_deltas "$HL/bpf.0" "$HL/bpf.1"' > "$WORK/bpf.out" 2>&1 ||
  fail "the BPF statistics script failed"
B=$WORK/bpf.out
expect_line "$B" '^41: rustland_select_cpu 1000000 100$' "a program's id, name and counts are read"
expect_line "$B" '^43: rs_select_cpu 0 0$' "a program without statistics counts zero"
expect_line "$B" '^hl_task_exit calls=3 ns_per_call=15000 total_ms=0\.0$' "a program loaded in between counts from zero"
expect_line "$B" '^rustland_select_cpu calls=200 ns_per_call=10000 total_ms=2\.0$' "calls and ns a call between the readings"
expect_no_line "$B" 'rustland_enqueue calls|rs_select_cpu calls' "a program that did not run is left out"
expect_no_line "$B" 'loaded_at' "bpftool's detail lines are not programs"

# --- the hogs a latency load is measured beside (hogs_start, hogs_held, hogs_stop) ------------
# A stand-in for stress-ng --cpu N: N sleeping children; SIGUSR1 ends one.
cat > "$WORK/hl/stress-ng" <<'EOF'
#!/bin/sh
[ "$1" = --cpu ] || exit 2
trap 'kill $kids 2>/dev/null; exit 0' TERM
trap 'set -- $kids; kill "$1"' USR1
kids=""
i=0
while [ $i -lt "$2" ]; do sleep 300 & kids="$kids $!"; i=$((i + 1)); done
while :; do wait; done
EOF
chmod +x "$WORK/hl/stress-ng"
REPO=$REPO HL=$WORK/hl sh -c '
  . "$REPO/scripts/vm/guest-lib.sh"
  hogs_start 3; echo "up=$(hogs_up)"
  hogs_held hybridland cyclic-3hogs 3 && echo HELD
  pid=$HOGS; kill -USR1 "$HOGS"; sleep 0.5
  hogs_held hybridland cyclic-3hogs 3 || echo NOT-HELD
  hogs_stop; kill -0 "$pid" 2>/dev/null || echo STOPPED' > "$WORK/hogs.out" 2>&1 ||
  fail "the hogs script failed"
H=$WORK/hogs.out
expect_line "$H" '^up=3$' "hogs_start returns with every hog running"
expect_line "$H" '^HELD$' "all hogs still running: the figure counts"
expect_line "$H" '^VMBENCH: hybridland void cyclic-3hogs only 2 of 3 hogs ran to its end$' "a hog that ended voids the figure"
expect_line "$H" '^NOT-HELD$' "hogs_held fails when a hog ended"
expect_line "$H" '^STOPPED$' "hogs_stop ends stress-ng"

# --- the table ---------------------------------------------------------------------------------
OUT=$WORK/out.log
{
  # The guest console's CR line ends, as the host reads them.
  for s in default fifo; do
    printf 'VMBENCH: %s hackbench 5.0\r\nVMBENCH: %s switch 30000\r\n' "$s" "$s"
    printf 'VMBENCH: %s cyclic-4hogs p50=4000 p99=16000 max=20000 samples=900\r\n' "$s"
    printf 'VMBENCH: %s cyclic-8hogs p50=20000 p99=80000 max=90000 samples=300 idle_pct=%d\r\n' "$s" ${#s}
    printf 'VMBENCH: %s frame fps=20.0 stdev_ms=17.0 missed=150 p_share=100\r\n' "$s"
  done
  printf 'VMBENCH: fifo loop batches=800 cpu_us=200000 snapshots=0 snapshot_us=0 decide_us=0\r\n'
  printf 'VMBENCH: fifo cost dispatched=800 cpu_ms=390 wall_s=5.4 syscalls: sys_sched_yield=886 sys_read=32\r\n'
  # The fast path's counts of two switch runs: summed per load.
  printf 'VMBENCH: hybridland coverage switch placed=90 asked=120 no_free=20 shared_queue=6 race=4 class_writes=3\r\n'
  printf 'VMBENCH: hybridland coverage switch placed=10 asked=10 no_free=0 shared_queue=0 race=0 class_writes=1 pinned=0\r\n'
  printf 'VMBENCH: hybridland coverage cyclic-alone placed=0 asked=5 no_free=5 shared_queue=0 race=0 class_writes=0 pinned=3\r\n'
  cat "$G"
  # A void switch figure of one more scheduler voids its throughput-over-fifo line.
  printf 'VMBENCH: hybridland-fixed hackbench 3.6\r\nVMBENCH: hybridland-fixed switch 90000\r\n'
  printf 'VMBENCH: hybridland-fixed void switch sched_ext state disabled (ejected)\r\n'
} > "$OUT"
BENCH_SCHEDS="default fifo hybridland hybridland-fixed" "$REPO/scripts/vm/bench-table.sh" "$OUT" > "$WORK/table.txt" 2>&1 ||
  fail "bench-table.sh failed"
T=$WORK/table.txt
# Rows: the ejected phases read void; the rest keep their figures and ratios.
expect_line "$T" '^lat 4 hogs p99 us +16000 \(1\.00\) +16000 \(1\.00\) +void +- *$' "the latency phase is void in its row"
expect_line "$T" '^lat 8 hogs p50 us +20000 \(1\.00\) +20000 \(1\.00\) +void' "both latency rows are void"
expect_line "$T" '^lat 8 hogs idle % +7 +4 +void' "the idle share beside hogs, as measured, no ratio"
expect_no_line "$T" '^lat alone idle' "no idle row for the latency alone"
expect_line "$T" '^hackbench s +5\.0 \(1\.00\) +5\.0 \(1\.00\) +3\.6 \(0\.72\) +3\.6 \(0\.72\)' "figures of phases that ran through stay, medians included"
expect_line "$T" '^switch ops/s +30000 \(1\.00\) +30000 \(1\.00\) +5000 \(0\.17\) +void' "a void switch figure is void, not its median"
expect_line "$T" '^frame: fps +19\.0 \(1\.00\) +20\.0 \(1\.05\) +void' "the load after the ejection is void"
expect_line "$T" '^hybridland +void$' "the cost line is void"
expect_line "$T" '^fifo +dispatched +800 ' "fifo's cost line stays"
expect_line "$T" '^ +loop thread \(its --stats\): cpu 0\.250 ms/batch, snapshots 0\.00/batch' "the loop's own cost per batch"
expect_line "$G" '^VMBENCH: hybridland void loop not in charge' "a void cost load voids the loop's figures too"
expect_line "$T" '^hybridland +throughput / fifo: hackbench 1\.39 .*switch 0\.17' "the policy's throughput line uses its figures"
expect_line "$T" '^hybridland-fixed +throughput / fifo: void' "a void throughput load voids its line"
expect_line "$T" '^hybridland +cyclic-4hogs cyclic-8hogs cyclic-alone: sched_ext state disabled \(ejected\)$' "the void list says which and why"
expect_line "$T" '^hybridland +cost loop frame: not in charge when the load began' "later loads are listed with their own reason"
expect_no_line "$T" '83000|40000' "no void latency figure reaches the table"
# The share placed in BPF: of the wake-ups that found an allowed CPU free, summed over runs.
expect_line "$T" '^hybridland +switch +130 +110 +100 +90\.9% +6 +4 +4 +0$' "the coverage row sums a load's runs"
expect_line "$T" '^hybridland +cyclic-alone +5 +0 +0 +- +0 +0 +0 +3$' "no free CPU: no share; the pinned rule's placements summed"

if ((failures)); then
  echo "bench-table test: $failures failure(s)" >&2
  exit 1
fi
echo "bench-table test: all passed"
