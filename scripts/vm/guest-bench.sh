#!/bin/sh
# guest-bench.sh: runs inside the VM that scripts/vm-bench.sh boots (busybox sh, as root).
#
# The same loads three times: under the kernel's default scheduler (no sched_ext), under
# `scx_hybridland --fifo` (no policy) and under `scx_hybridland` (the policy), both with the
# topology file vm-check uses. Everything was copied into a tmpfs first. Each figure is printed
# as `VMBENCH: <mode> <metric> <value>`; the host makes the table.
#
#   hackbench  $BENCH_HACKBENCH, $BENCH_REPS times: seconds (the host takes the median)
#   switch     stress-ng --switch 4 (pipe ping-pong), $BENCH_SWITCH_SECS s, $BENCH_REPS times:
#              context switches per second (bogo ops/s, real time)
#   cyclictest two SCHED_OTHER threads waking every 1 ms for $BENCH_CYCLIC_SECS s, on the
#              otherwise idle guest, then with 4 and with 8 CPU hogs (stress-ng --cpu N):
#              wake-up latency p50 / p99 / max in us, from cyclictest's histogram (1 us
#              buckets up to 100 ms; beyond that a percentile reads ">100000")

HL=${HL:-/run/hl}
. "$HL/bench.env"
SCX="$HL/scx_hybridland"
TOPO="$HL/topology.toml"
LOG=/run/sched.log
SCHED_PID=""
HIST_US=100000

say() { echo "$*"; }
state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo missing; }
ops() { cat /sys/kernel/sched_ext/root/ops 2>/dev/null || echo none; }
wait_state() {  # wait_state WANT SECONDS
  i=0
  while [ "$(state)" != "$1" ] && [ $i -lt $(( $2 * 10 )) ]; do sleep 0.1; i=$((i + 1)); done
  [ "$(state)" = "$1" ]
}

# cyclic_run MODE LABEL: cyclictest, then p50/p99/max over both threads from the histogram.
cyclic_run() {
  "$HL/cyclictest" -q -m -t 2 -i 1000 -D "$BENCH_CYCLIC_SECS" -h "$HIST_US" > /run/cyclic.out 2>&1
  awk -v mode="$1" -v label="$2" -v hmax="$HIST_US" '
    /^[0-9]+[ \t]/ { for (t = 2; t <= NF; t++) if ($t > 0) { n[$1 + 0] += $t; total += $t } }
    /^# Max Latencies:/ { for (t = 4; t <= NF; t++) if ($t + 0 > max) max = $t + 0 }
    /^# Histogram Overflows:/ { for (t = 4; t <= NF; t++) over += $t; total += over }
    END {
      if (total == 0) { print "VMBENCH: " mode " " label " none"; exit }
      p50 = pct(0.50); p99 = pct(0.99)
      printf "VMBENCH: %s %s p50=%s p99=%s max=%d samples=%d\n", mode, label, p50, p99, max, total
    }
    function pct(q,   need, acc, us) {
      need = q * total; acc = 0
      for (us = 0; us < hmax; us++) { acc += n[us]; if (acc >= need) return us }
      return ">" hmax
    }' /run/cyclic.out
}

bench_mode() {  # bench_mode MODE: the loads, under whatever scheduler is in charge now
  say "--- $1: sched_ext state $(state), ops $(ops)"
  r=0
  while [ $r -lt "$BENCH_REPS" ]; do
    t=$("$HL/hackbench" $BENCH_HACKBENCH 2>&1 | awk '/^Time:/ { print $2 }')
    say "VMBENCH: $1 hackbench ${t:-failed}"
    s=$("$HL/stress-ng" --switch 4 -t "$BENCH_SWITCH_SECS" --metrics-brief < /dev/null 2>&1 |
      awk '/metrc:.* switch / { print $9 }')
    say "VMBENCH: $1 switch ${s:-failed}"
    r=$((r + 1))
  done
  cyclic_run "$1" cyclic-idle
  for nhogs in 4 8; do
    "$HL/stress-ng" --cpu "$nhogs" -t $((BENCH_CYCLIC_SECS + 3)) > /dev/null 2>&1 &
    hogs=$!
    sleep 2
    cyclic_run "$1" "cyclic-${nhogs}hogs"
    wait "$hogs"
  done
  if [ -n "$SCHED_PID" ] && [ "$(state)" != enabled ]; then
    say "VMBENCH: $1 error scheduler no longer loaded (state $(state))"
  fi
}

start_sched() {  # start_sched MODE [ARGS]
  : > "$LOG"
  mode=$1; shift
  "$SCX" --topology "$TOPO" "$@" >> "$LOG" 2>&1 &
  SCHED_PID=$!
  if wait_state enabled 60; then return 0; fi
  say "VMBENCH: $mode error scheduler did not load; log: $(tail -n 5 "$LOG" | tr '\n' ' ')"
  kill -9 "$SCHED_PID" 2>/dev/null; wait "$SCHED_PID" 2>/dev/null; SCHED_PID=""
  return 1
}

stop_sched() {  # stop_sched MODE
  kill -INT "$SCHED_PID" 2>/dev/null
  wait "$SCHED_PID"; rc=$?
  SCHED_PID=""
  wait_state disabled 20
  if [ $rc -ne 0 ] || grep -q "ejected\|ended scx_hybridland" "$LOG"; then
    say "VMBENCH: $1 error exit status $rc: $(grep -i "error\|eject" "$LOG" | head -n 3 | tr '\n' ' ')"
  fi
}

say "guest kernel $(uname -r), $(nproc) CPUs, SMT siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
say "loads: hackbench $BENCH_HACKBENCH x$BENCH_REPS; stress-ng --switch 4 ${BENCH_SWITCH_SECS}s x$BENCH_REPS; cyclictest -t 2 -i 1000 ${BENCH_CYCLIC_SECS}s idle, with 4 and with 8 hogs"
t0=$(date +%s)
[ "$(state)" = disabled ] || say "VMBENCH: default error sched_ext state is $(state), not disabled"
bench_mode default
if start_sched fifo --fifo; then bench_mode fifo; stop_sched fifo; fi
if start_sched hybridland; then bench_mode hybridland; stop_sched hybridland; fi
say "guest bench took $(( $(date +%s) - t0 ))s"
dmesg | grep -i "sched_ext" | tail -n 6
exit 0
