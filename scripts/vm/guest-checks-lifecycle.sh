# shellcheck shell=sh
# guest-checks-lifecycle.sh: the scheduler's life: its figures, its task events, signals, ejection, stress. Sourced by guest-checks.sh, whose helpers (say, pass, fail,
# start_sched, stop_sched, ...) and guest-lib.sh it uses.

# `--monitor 1`, a second process, reads the running scheduler's figures from the scx_stats
# socket and prints a line a second; the scheduler's own `--stats 1` lines come the same way.
# The control, run first: with no scheduler loaded (the socket of an earlier run may still be
# there) it prints no figures. Live means the framework dispatched from user space in that
# second (each wake-up goes through user space, and two spinners and the monitor itself wake).
monitor_run() {  # monitor_run SECS -> $MON_LIVE (lines with live figures), $MON_ALL (all figure lines)
  timeout "$1" "$SCX" --monitor 1 > /run/monitor.out 2> /run/monitor.err
  MON_ALL=$(grep -c "^stats: placed " /run/monitor.out)
  MON_LIVE=$(grep -c "^stats: placed .* | fw user=[1-9]" /run/monitor.out)
}
monitor_run 3
none_all=$MON_ALL
none_said=$(head -n 1 /run/monitor.err | sed 's/^.*INFO //')
if start_sched; then
  spin_start 2 0.1
  monitor_run 5
  spin_stop
  logged=$(grep -c "stats: placed " "$LOG")
  say "--- scx_hybridland --monitor 1 beside the scheduler ---"
  cat /run/monitor.out
  stop_sched INT
  if [ "$none_all" -eq 0 ] && [ "$MON_LIVE" -ge 3 ] && [ "$logged" -ge 3 ]; then
    pass monitor "$MON_LIVE of $MON_ALL lines in 5 s with live figures, $logged --stats lines logged; with no scheduler: $none_all lines ($none_said)"
  else
    fail monitor "$MON_LIVE of $MON_ALL lines in 5 s with live figures (want >= 3), $logged --stats lines logged (want >= 3); with no scheduler: $none_all lines (want 0); stderr: $(head -n 3 /run/monitor.err | tr '\n' ' ')"
  fi
else
  fail monitor "scheduler did not load"
fi

# task-events: the scheduler's own BPF event source (src/bpf/task_events.bpf.c) reports what
# scx_rustland_core does not. 300 short-lived processes: each exit is reported and takes the task
# out of the loop's table at once (the table's `| tasks=` gauge ends where it began, where the age-based
# prune alone would hold them for 30 s); a lone spinner, which nobody else wants the CPU from,
# has its slice refilled by the framework, reported where the kernel lets the fentry probe
# attach (the log says which). With the wake-up fast path on, wakers are not reported (no
# probe on every wake-up: `waking` stays 0); a second run with --no-fast-wake, where every
# wake-up reaches user space, has hackbench's pipes give task-to-task wake-ups with their
# waker, and those reach the scheduler core with their waker's CPU (`to-core`: the wake-up
# event is read before the woken task is handed over). The figures come from the `--stats 1`
# lines, summed over each run. An exit is reported when the kernel frees the task, after an RCU
# grace period, which a kernel with lazy RCU callbacks (CONFIG_RCU_LAZY) holds back up to
# 10 s on a quiet machine: the gauge is read once it is back, or after 15 s.
ev_sum() {  # ev_sum FIELD: the sum of FIELD=N over the --stats lines in $LOG
  grep "stats: placed " "$LOG" | sed -n "s/.* $1=\([0-9]*\).*/\1/p" | awk '{s += $1} END {print s + 0}'
}
ev_gauge() {  # ev_gauge: the loop's task table (`| tasks=N`, not the loop's `tasks=` decided) in the last --stats line
  grep "stats: placed " "$LOG" | sed -n 's/.*| tasks=\([0-9]*\) .*/\1/p' | tail -n 1
}
wakers_run() {  # wakers_run: hackbench under --no-fast-wake; sets by_task, to_core
  by_task=-1; to_core=-1
  if start_sched --no-fast-wake; then
    sleep 1
    "$HL/hackbench" -g 2 -l 50 > /dev/null 2>&1
    sleep 1.2
    by_task=$(ev_sum by-task); to_core=$(ev_sum to-core)
    stop_sched INT
  fi
}
if start_sched; then
  sleep 2
  tasks_before=$(ev_gauge)
  i=0
  while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done
  "$HL/hackbench" -g 2 -l 50 > /dev/null 2>&1
  spin_start 1 0.1
  sleep 2
  spin_stop
  sleep 2
  w=0
  while [ $w -lt 13 ] && [ "$(ev_gauge)" -gt $((tasks_before + 30)) ]; do sleep 1; w=$((w + 1)); done
  tasks_after=$(ev_gauge)
  exits=$(ev_sum exit); tracked=$(ev_sum exit-tracked); wakings=$(ev_sum waking); refills=$(ev_sum refill)
  refill_seen=1
  grep "slice refills unseen" "$LOG" > /dev/null && refill_seen=0
  stop_sched INT
  wakers_run
  detail="exits $exits (of tracked tasks $tracked), tasks gauge $tasks_before -> $tasks_after, wakings $wakings; --no-fast-wake: $by_task by a task, $to_core to the core with their waker; refills $refills"
  ok=1
  [ "$exits" -ge 300 ] || ok=0
  [ "$tracked" -ge 250 ] || ok=0
  [ -n "$tasks_before" ] && [ -n "$tasks_after" ] && [ "$tasks_after" -le $((tasks_before + 30)) ] || ok=0
  [ "$wakings" = 0 ] || ok=0
  [ "$by_task" -ge 100 ] || ok=0
  [ "$to_core" -ge 50 ] || ok=0
  if [ "$refill_seen" = 1 ]; then
    [ "$refills" -ge 10 ] || ok=0
  else
    detail="$detail (refills unseen on this kernel)"
  fi
  if [ "$ok" = 1 ]; then pass task-events "$detail"; else fail task-events "$detail; want exits >= 300, tracked >= 250, gauge back within 30, no wakings with the fast path on, >= 100 by a task and >= 50 to the core with their waker under --no-fast-wake, >= 10 refills where seen"; fi
else
  fail task-events "scheduler did not load"
fi

# own-rescue: the scheduler's other threads wait in the loop's queue like any task, and share
# locks with the loop (the framework's allocator is one mutex for the process). With
# --test-own-lock a thread of ours holds a lock the loop takes each round, 10 ms out of every 30;
# beside 8 hogs it is preempted at slice ends while it holds the lock, waits in the loop's
# queue, and the loop blocks on it. The kernel then hands the thread over itself
# (src/bpf/own_threads.bpf.h, `own-rescued` in the --stats lines): the scheduler is still
# loaded after 10 s. Without that, every task (this script too) waits on the blocked loop
# until the kernel's watchdog ejects the scheduler.
if start_sched --test-own-lock --exit-dump-len 65536; then
  spin_start 8 0.05
  sleep 10
  spin_stop
  sleep 1.2
  rescued=$(ev_sum own-rescued); untracked=$(ev_sum own-untracked); st=$(state)
  detail="state=$st after 10 s beside 8 hogs, $rescued own threads handed over by the kernel, $untracked not noted, $(grep -c "stats: placed " "$LOG") --stats lines"
  if [ "$st" = enabled ] && alive "$SCHED_PID" && [ "$rescued" -ge 1 ] && [ "$untracked" -eq 0 ]; then
    pass own-rescue "$detail"
  else
    fail own-rescue "$detail; want enabled, >= 1 handed over, 0 not noted; log: $(grep "EXIT\|ejected" "$LOG" | head -n 2 | tr '\n' ' ')"
    sed -n '/DEBUG DUMP/,$p' "$LOG" | head -n 80
  fi
  stop_sched INT
else
  fail own-rescue "scheduler did not load"
fi

# SIGINT unloads it cleanly, and the control file goes with it.
if start_sched --cluster-balance on; then
  sleep 1
  stop_sched INT
  if wait_state disabled 20 && [ "$SCHED_RC" -eq 0 ]; then
    pass sigint-disables "state=$(state), exit status $SCHED_RC"
  else
    fail sigint-disables "state=$(state), exit status $SCHED_RC"
    tail -n 20 "$LOG"
  fi
  if [ -e "$CTL" ]; then fail control-file-removed "$CTL still there"; else pass control-file-removed "$CTL gone"; fi
else
  fail sigint-disables "scheduler did not load"
  fail control-file-removed "scheduler did not load"
fi

# 8. When the kernel ejects the scheduler (here: sysrq-S), it says why and exits non-zero; with
# --record it still writes the trace and the live figures (hackbench, then a second of a
# spinner, so tasks have run). hackbench's senders wake its receivers through sockets: the
# trace keeps those wake-ups as relations (record-wakes), a `wait_for` in the receiver's
# phases for each `wake` in the sender's.
rm -f /run/eject.json /run/eject.json.live.json
if start_sched --record /run/eject.json; then
  "$HL/hackbench" -g 2 -l 50 > /dev/null 2>&1
  sh -c 'while :; do :; done' &
  EJECT_SPIN=$!
  sleep 1
  echo S > /proc/sysrq-trigger
  i=0
  while alive "$SCHED_PID" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if alive "$SCHED_PID"; then kill -9 "$SCHED_PID"; fi
  wait "$SCHED_PID"; rc=$?
  SCHED_PID=""
  why=$(grep -o "EXIT: .*\|ejected.*" "$LOG" | head -n 2 | tr '\n' ' ')
  kill -9 "$EJECT_SPIN" 2>/dev/null; wait "$EJECT_SPIN" 2>/dev/null
  if [ $rc -eq 2 ] && grep -q "ejected" "$LOG" && wait_state disabled 20; then
    pass ejection-reported "exit status $rc; $why"
  else
    fail ejection-reported "exit status $rc (want 2), state=$(state); log: $(tail -n 3 "$LOG" | tr '\n' ' ')"
  fi
  if grep -E '"version": [0-9]+' /run/eject.json > /dev/null 2>&1 && grep '"run_ns"' /run/eject.json > /dev/null &&
    grep '"window_ns"' /run/eject.json.live.json > /dev/null 2>&1; then
    pass record-at-ejection "$(grep -o 'record: wrote .*' "$LOG" | head -n 1)"
  else
    fail record-at-ejection "no trace or live figures after the ejection; log: $(grep 'record' "$LOG" | tail -n 2 | tr '\n' ' ')"
  fi
  waits=$(grep -c '"wait_for"' /run/eject.json 2>/dev/null)
  wakes=$(grep -c '"wake": "' /run/eject.json 2>/dev/null)
  kept=$(grep -o '[0-9]* of [0-9]* wake-ups by a task kept as relations' "$LOG" | head -n 1)
  if grep '"version": 2' /run/eject.json > /dev/null 2>&1 && [ "${waits:-0}" -ge 20 ] &&
    [ "$waits" = "$wakes" ]; then
    pass record-wakes "$waits wait_for and $wakes wake phases; $kept"
  else
    fail record-wakes "${waits:-0} wait_for and ${wakes:-0} wake phases (want >= 20, as many of each); $kept"
  fi
else
  fail ejection-reported "scheduler did not load"
  fail record-at-ejection "scheduler did not load"
  fail record-wakes "scheduler did not load"
fi

# 9. Stress: hackbench and a storm of short-lived tasks for several seconds.
if start_sched; then
  t0=$(date +%s)
  if timeout 120 "$HL/hackbench" -g 2 -f 10 -l 60 > /run/hackbench.log 2>&1; then
    say "hackbench: $(tail -n 1 /run/hackbench.log)"
    hb=ok
  else
    hb="failed ($(tail -n 2 /run/hackbench.log | tr '\n' ' '))"
  fi
  forks=0
  while [ $(( $(date +%s) - t0 )) -lt 8 ] || [ $forks -lt 300 ]; do
    n=0; kids=""
    while [ $n -lt 20 ]; do /bin/true & kids="$kids $!"; n=$((n + 1)); done
    wait $kids   # not a bare `wait`: that would wait for the scheduler too
    forks=$((forks + 20))
    [ $forks -ge 3000 ] && break
  done
  secs=$(( $(date +%s) - t0 ))
  if [ "$(state)" = enabled ] && kill -0 "$SCHED_PID" 2>/dev/null && [ "$hb" = ok ]; then
    pass stress "hackbench $hb, $forks short tasks, ${secs}s, scheduler still loaded (ops=$(ops))"
  else
    fail stress "hackbench $hb, $forks short tasks, ${secs}s, state=$(state)"
    tail -n 20 "$LOG"
  fi
  say "--- stats (stress) ---"
  grep "stats:" "$LOG" | tail -n 3

  # Nothing so far may have made the kernel eject the scheduler.
  cat "$LOG" >> /run/sched-all.log
if grep -q "ejected\|ended scx_hybridland" /run/sched-all.log || dmesg | grep -qi "sched_ext.*\(errored\|stall\)"; then
    fail no-ejection "$(grep "ejected\|ended scx" /run/sched-all.log | head -n 3) $(dmesg | grep -i "sched_ext.*\(errored\|stall\)" | head -n 3)"
  else
    pass no-ejection "no ejection in the scheduler's logs or the kernel log"
  fi

  # 10. SIGKILL mid-load: the kernel falls back to its default scheduler, the work finishes.
  # (A killed user-space scheduler leaves queued tasks undispatched until the kernel notices:
  # either the struct_ops link closes with the process or the watchdog ejects it; both are
  # the designed fallback, so the kernel's message is only reported here.)
  dmesg_before=$(dmesg | grep -c "sched_ext")
  : > /run/work.done
  w=0; workers=""
  while [ $w -lt 4 ]; do
    ( i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done; echo done >> /run/work.done ) &
    workers="$workers $!"
    w=$((w + 1))
  done
  sleep 1
  # Proof that the kill lands mid-work: every worker alive and none finished yet.
  running=0
  for p in $workers; do alive "$p" && running=$((running + 1)); done
  done_at_kill=$(wc -l < /run/work.done)
  stop_sched KILL
  i=0
  while [ "$(wc -l < /run/work.done)" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  for p in $workers; do kill -9 "$p" 2>/dev/null; done
  wait $workers 2>/dev/null
  finished=$(wc -l < /run/work.done)
  if [ $running -ne 4 ] || [ "$done_at_kill" -ne 0 ]; then
    fail sigkill-recovers "set-up: at the kill $running of 4 workers were running and $done_at_kill had finished"
  elif wait_state disabled 20 && [ "$finished" -eq 4 ]; then
    pass sigkill-recovers "state=$(state) after SIGKILL; 4 of 4 workers running at the kill, $finished of 4 finished; kernel: $(dmesg | grep sched_ext | tail -n +$((dmesg_before + 1)) | sed 's/^\[[^]]*\] //' | tr '\n' ' ')"
  else
    fail sigkill-recovers "state=$(state); $finished of 4 workers finished"
  fi
else
  fail stress "scheduler did not load"
  fail no-ejection "scheduler did not load"
  fail sigkill-recovers "scheduler did not load"
fi
