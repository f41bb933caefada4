#!/bin/sh
# guest-fidelity.sh: runs inside the VM that scripts/vm-fidelity.sh boots (busybox sh, as root).
#
# Three workloads, each twice: under `scx_hybridland --record` (the trace and live figures it
# writes at exit) and under the kernel's default scheduler with the sched tracepoints recorded
# in tracefs (the host turns that text into a trace and live figures with
# `hybrid-sim import ftrace --live`). Each recording ends while the workload still runs, so a
# task that never came back to the scheduler is seen running at the end.
#
#   lone-frame  a lone spinner beside a 30 fps frame task (frame-task.c, $FID_FRAME_MS ms of
#               work a frame on an idle CPU)
#   mixed6      three spinners and three sleepers (a short burst, then 10 ms asleep)
#   hackbench   a hackbench burst ($FID_HACKBENCH), recorded to its end and half a second after
#
# With FID_TRACE_LIVE=1 the tracepoints are recorded during the scx_hybridland runs too
# (WORKLOAD-hybridland.tracepoints.txt), as a check of what --record saw.
#
# Every file is printed between `=== fidelity file NAME ===` and `=== fidelity end ===` for the
# host; progress lines start with `fidelity:`.

HL=${HL:-/run/hl}
. "$HL/fidelity.env"
SCX="$HL/scx_hybridland"
TOPO="$HL/topology.toml"
OUT=/run/out
T=/sys/kernel/tracing
SCHED_PID=""
LOAD=""
mkdir -p "$OUT"

say() { echo "fidelity: $*"; }
. "$HL/guest-lib.sh"  # state, wait_state, kill_all

spinner() { sh -c 'while :; do :; done' & LOAD="$LOAD $!"; }
sleeper() {
  sh -c 'while :; do j=0; while [ $j -lt 300 ]; do j=$((j + 1)); done; usleep 10000; done' &
  LOAD="$LOAD $!"
}
load_stop() { kill_all $LOAD; LOAD=""; }

# start_workload NAME: starts it in the background (its processes in $LOAD).
start_workload() {
  case "$1" in
    lone-frame)
      spinner
      "$HL/frame-task" 30 "$FRAME_ITERS" "$((FID_SECS + 3))" f0 > "$OUT/$2.frame.txt" 2>&1 &
      LOAD="$LOAD $!"
      ;;
    mixed6)
      spinner; spinner; spinner; sleeper; sleeper; sleeper
      ;;
    hackbench)
      "$HL/hackbench" $FID_HACKBENCH > "$OUT/$2.hackbench.txt" 2>&1 &
      LOAD="$LOAD $!"
      ;;
  esac
}

# settle NAME: how long the workload runs before the recording stops.
settle() {
  if [ "$1" = hackbench ]; then
    # To the burst's end (at most a minute), then half a second of quiet.
    i=0
    for p in $LOAD; do
      while kill -0 "$p" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    done
    sleep 0.5
  else
    sleep "$FID_SECS"
  fi
}

run_hybridland() {  # run_hybridland WORKLOAD
  name="$1-hybridland"
  # shellcheck disable=SC2086 # FID_SCX_ARGS is a list of words
  "$SCX" --topology "$TOPO" --record "$OUT/$name.trace.json" --record-live "$OUT/$name.live.json" \
    $FID_SCX_ARGS > "$OUT/$name.log" 2>&1 &
  SCHED_PID=$!
  if ! wait_state enabled 60; then
    say "$name: scx_hybridland did not load"; cat "$OUT/$name.log"
    kill -9 "$SCHED_PID" 2>/dev/null; SCHED_PID=""; return
  fi
  sleep 0.5
  if [ "$FID_TRACE_LIVE" = 1 ]; then trace_start; fi
  start_workload "$1" "$name"
  settle "$1"
  if [ "$FID_TRACE_LIVE" = 1 ]; then trace_stop "$OUT/$name.tracepoints.txt"; fi
  kill -INT "$SCHED_PID"
  wait "$SCHED_PID"; rc=$?
  SCHED_PID=""
  load_stop
  wait_state disabled 10
  say "$name: scx_hybridland exited $rc"
  grep -E 'record:|EXIT|ejected|error' "$OUT/$name.log" | sed 's/^/fidelity:   /'
}

trace_start() {  # the sched tracepoints into tracefs
  echo 0 > $T/tracing_on
  echo > $T/trace
  echo "$FID_TRACE_KB" > $T/buffer_size_kb
  for e in sched_switch sched_wakeup sched_wakeup_new sched_waking sched_migrate_task sched_process_exit; do
    echo 1 > $T/events/sched/$e/enable
  done
  echo 1 > $T/tracing_on
}
trace_stop() {  # trace_stop FILE
  echo 0 > $T/tracing_on
  cat $T/trace > "$1"
  echo > $T/trace
  say "$(basename "$1"): $(wc -l < "$1") trace lines, $(grep -c 'LOST' "$1") lost-event markers"
}

run_default() {  # run_default WORKLOAD: the kernel's own scheduler, recorded in tracefs
  name="$1-default"
  if [ ! -d $T/events/sched ]; then say "$name: no tracefs sched events"; return; fi
  trace_start
  sleep 0.5
  start_workload "$1" "$name"
  settle "$1"
  trace_stop "$OUT/$name.trace.txt"
  load_stop
}

say "state $(state), $(nproc) CPUs, kernel $(uname -r)"
FRAME_ITERS=$(( $("$HL/frame-task" calibrate) * FID_FRAME_MS ))
say "frame task: $FID_FRAME_MS ms of work a frame on an idle CPU ($FRAME_ITERS iterations)"
if "$SCX" --help 2>&1 | grep -e '--emit-topology' > /dev/null; then
  "$SCX" --dry-run --topology "$TOPO" --emit-topology "$OUT/emitted-topology.toml" > /dev/null 2>&1 &&
    say "machine emitted by scx_hybridland --dry-run --emit-topology"
fi
for w in $FID_WORKLOADS; do
  run_hybridland "$w"
  run_default "$w"
done
for f in "$OUT"/*; do
  echo "=== fidelity file $(basename "$f") ==="
  cat "$f"
  echo "=== fidelity end ==="
done
exit 0
