# Runs inside the VM (see scripts/vm-storm.sh): an unprivileged thread storm beside the
# scheduler, with kernel.pid_max 4194304 (what systemd sets on current distributions, so
# thread ids do not come back soon). Twice: plain, and with --record. Each prints
# `VMCHECK: PASS|FAIL <name>: <detail>`: the scheduler is still loaded at the end with no
# ejection, its task table's high-water mark (the stats' tasks-max) stayed within --max-tasks,
# and with --record the recording was written.
HL=${HL:-/run/hl}
SCX="$HL/scx_hybridland"
LOG=/run/storm-sched.log
SECS=${STORM_SECS:-90}
MAX_TASKS=32768
. "$HL/guest-lib.sh"  # state, ops, wait_state
pass() { echo "VMCHECK: PASS $1: $2"; }
fail() { echo "VMCHECK: FAIL $1: $2"; }

echo 4194304 > /proc/sys/kernel/pid_max
echo "pid_max $(cat /proc/sys/kernel/pid_max), guest kernel $(uname -r)"

storm() {  # storm NAME ARGS...: one run under scx_hybridland ARGS
  name=$1; shift
  : > "$LOG"
  cap=""
  # A build from before --max-tasks (the "before" run) takes the same storm without it.
  if "$SCX" --help 2>&1 | grep -- --max-tasks > /dev/null; then cap="--max-tasks $MAX_TASKS"; fi
  "$SCX" --topology "$HL/topology.toml" --stats 5 $cap "$@" >> "$LOG" 2>&1 &
  pid=$!
  if ! wait_state enabled 60; then
    fail "$name" "scheduler did not load: $(tail -n 3 "$LOG" | tr '\n' ' ')"
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    return
  fi
  out=$("$HL/thread-storm" "$SECS" 2>&1)
  st=$(state); o=$(ops)
  # How long the nudge helper waited to run, in all (its schedstat: ran, waited, runs).
  helper="none"
  for t in /proc/$pid/task/*; do
    if [ "$(cat "$t/comm" 2>/dev/null)" = hl-nudge ]; then
      helper=$(awk '{printf "waited %.1f ms over %d runs", $2 / 1e6, $3}' "$t/schedstat")
    fi
  done
  kill -INT $pid 2>/dev/null
  i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 $pid 2>/dev/null
  wait $pid; rc=$?
  hw=$(sed -n 's/.* tasks-max=\([0-9]*\).*/\1/p' "$LOG" | sort -n | tail -n 1)
  exits=$(sed -n 's/.* exit=\([0-9]*\).*/\1/p' "$LOG" | awk '{s += $1} END {print s + 0}')
  dropped=$(sed -n 's/.* events-dropped=\([0-9]*\).*/\1/p' "$LOG" | tail -n 1)
  untracked=$(sed -n 's/.* untracked=\([0-9]*\).*/\1/p' "$LOG" | awk '{s += $1} END {print s + 0}')
  # The kernel's reason when it ejects the scheduler, or the allocator's abort; a clean stop
  # logs "EXIT: unregistered from user space", which is not one.
  ejected=$(grep -v "unregistered from user space" "$LOG" | grep -c "EXIT:\|stall\|memory allocation")
  echo "--- $name: scheduler log (last lines) ---"; tail -n 4 "$LOG"
  detail="$out; state at the end $st ($o), exit status $rc, tasks-max ${hw:-none} of $MAX_TASKS, exits seen $exits, events dropped ${dropped:-0}, untracked $untracked, helper $helper"
  ok=1
  case "$o" in hybridland*) ;; *) ok=0 ;; esac
  [ "$st" = enabled ] && [ "$rc" = 0 ] && [ "$ejected" = 0 ] || ok=0
  [ -n "$hw" ] && [ "$hw" -le $MAX_TASKS ] || ok=0
  if [ "$name" = storm-record ]; then
    if [ -s /run/storm.json ] && [ -s /run/storm.json.live.json ]; then
      detail="$detail, recording $(wc -c < /run/storm.json) bytes"
    else
      ok=0; detail="$detail, no recording written"
    fi
  fi
  if [ $ok = 1 ]; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
  wait_state disabled 20
}

storm storm
storm storm-record --record /run/storm.json
