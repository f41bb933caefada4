#!/bin/sh
# guest-checks.sh: runs inside the VM that scripts/vm-check.sh boots (busybox sh, as root).
#
# Everything it uses (scx_hybridland, its libraries, the topology file, hackbench) was copied
# into a tmpfs before this starts; nothing is read from a shared filesystem while a user-space
# scheduler is loaded. Each check prints one line `VMCHECK: PASS|FAIL <name>: <detail>`; the
# host counts them. Placements are printed as `placement: ...` lines.
#
# The machine (see topology-2p-smt-4e.toml): P-cores 0-1 and 2-3 (SMT pairs), E-cores 4-7 in
# clusters 4-5 and 6-7.

HL=${HL:-/run/hl}
SCX="$HL/scx_hybridland"
TOPO="$HL/topology.toml"
CTL=/run/scx_hybridland/cluster_balance
LOG=/run/sched.log
SCHED_PID=""
SPIN=""

say() { echo "$*"; }
pass() { echo "VMCHECK: PASS $1: $2"; }
fail() { echo "VMCHECK: FAIL $1: $2"; }
state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo missing; }
ops() { cat /sys/kernel/sched_ext/root/ops 2>/dev/null || echo none; }
is_p() { [ "$1" -ge 0 ] && [ "$1" -le 3 ]; }
is_e() { [ "$1" -ge 4 ] && [ "$1" -le 7 ]; }
core_of() { echo $(( $1 / 2 )); }          # valid for 0-3 (SMT pairs)
cluster_of() { if [ "$1" -le 5 ]; then echo A; else echo B; fi; }   # E clusters 4-5 / 6-7

# CPU a task last ran on: /proc/PID/stat field 39 (comm has no spaces here).
cpu_of() {
  read -r line < "/proc/$1/stat" 2>/dev/null || { echo -1; return; }
  set -- $line
  echo "${39}"
}

wait_state() {  # wait_state WANT SECONDS
  i=0
  while [ "$(state)" != "$1" ] && [ $i -lt $(( $2 * 10 )) ]; do
    # A scheduler that already exited will not get there.
    if [ "$1" = enabled ] && [ -n "$SCHED_PID" ] && ! kill -0 "$SCHED_PID" 2>/dev/null; then break; fi
    sleep 0.1; i=$((i + 1))
  done
  [ "$(state)" = "$1" ]
}

start_sched() {
  : > "$LOG"
  "$SCX" --topology "$TOPO" --stats 1 "$@" >> "$LOG" 2>&1 &
  SCHED_PID=$!
  if wait_state enabled 60; then return 0; fi
  say "scheduler did not reach enabled; log:"; cat "$LOG"
  return 1
}

alive() {  # alive PID: running and not a zombie
  read -r line < "/proc/$1/stat" 2>/dev/null || return 1
  set -- $line
  [ "$3" != Z ]
}

stop_sched() {  # stop_sched SIGNAL -> sets SCHED_RC (SIGKILL after 30 s if ignored)
  kill "-$1" "$SCHED_PID" 2>/dev/null
  i=0
  while alive "$SCHED_PID" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if alive "$SCHED_PID"; then say "scheduler still running 30s after SIG$1: killing it"; kill -9 "$SCHED_PID"; fi
  wait "$SCHED_PID"; SCHED_RC=$?
  SCHED_PID=""
  cat "$LOG" >> /run/sched-all.log
}

spin_start() {  # spin_start N [GAP]: N CPU-bound shells allowed on every CPU, PIDs in $SPIN
  SPIN=""
  n=0
  while [ $n -lt "$1" ]; do
    taskset 0xff sh -c 'while :; do :; done' &
    SPIN="$SPIN $!"
    n=$((n + 1))
    sleep "${2:-0.3}"
  done
}

spin_stop() {
  for p in $SPIN; do kill -9 "$p" 2>/dev/null; done
  for p in $SPIN; do wait "$p" 2>/dev/null; done
  SPIN=""
}

# sample_majority SAMPLES [INTERVAL]: for each task in $SPIN, the CPU it was seen on most often, into
# $MAJ (space-separated, in $SPIN order); also $SAMPLES_P / $SAMPLES_TOTAL over all tasks.
sample_majority() {
  SAMPLES_P=0; SAMPLES_TOTAL=0
  rm -f /run/samples.*
  s=0
  while [ $s -lt "$1" ]; do
    for p in $SPIN; do
      c=$(cpu_of "$p")
      echo "$c" >> "/run/samples.$p"
      SAMPLES_TOTAL=$((SAMPLES_TOTAL + 1))
      if is_p "$c"; then SAMPLES_P=$((SAMPLES_P + 1)); fi
    done
    sleep "${2:-0.1}"
    s=$((s + 1))
  done
  MAJ=""
  for p in $SPIN; do
    m=$(sort "/run/samples.$p" | uniq -c | sort -rn | head -n1 | awk '{print $2}')
    MAJ="$MAJ $m"
    say "placement: task $p on cpu $m ($(sort /run/samples.$p | uniq -c | awk '{printf "%s:%s ", $2, $1}'))"
  done
}

# classify $MAJ: counts of tasks on P-cores, distinct P-cores, E cluster A/B, SMT pairs doubled.
classify() {
  NP=0; NE=0; EA=0; EB=0; PCORES=""; DOUBLE=0
  for c in $MAJ; do
    if is_p "$c"; then
      NP=$((NP + 1))
      k=$(core_of "$c")
      case " $PCORES " in *" $k "*) DOUBLE=$((DOUBLE + 1)) ;; esac
      PCORES="$PCORES $k"
    elif is_e "$c"; then
      NE=$((NE + 1))
      if [ "$(cluster_of "$c")" = A ]; then EA=$((EA + 1)); else EB=$((EB + 1)); fi
    fi
  done
  say "placement: P-core tasks=$NP (cores:$PCORES) E tasks=$NE (cluster 4-5: $EA, cluster 6-7: $EB) SMT pairs with both busy=$DOUBLE"
}

say "guest kernel $(uname -r), $(nproc) CPUs, SMT siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
if [ "$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)" != "0-1" ] ||
   [ "$(cat /sys/devices/system/cpu/cpu6/topology/thread_siblings_list)" != "6-7" ]; then
  fail smt-layout "the guest's SMT pairs are not (0,1) (2,3) ... as the topology file assumes"
fi
say "sched_ext state before loading: $(state)"

# 1. Load with cluster balance on.
if start_sched --cluster-balance on; then
  o=$(ops)
  case "$o" in
    hybridland*) pass loaded "state=$(state) ops=$o" ;;
    *) fail loaded "state=$(state) but ops=$o" ;;
  esac
else
  fail loaded "state=$(state)"
  say "--- scheduler log ---"; cat "$LOG"
  exit 1
fi
sleep 1

# 2. A lone CPU-bound task runs on a P-core.
spin_start 1
sleep 1
sample_majority 30
if [ $((SAMPLES_P * 100)) -ge $((SAMPLES_TOTAL * 90)) ]; then
  pass lone-task-on-p-core "$SAMPLES_P of $SAMPLES_TOTAL samples on P-cores 0-3"
else
  fail lone-task-on-p-core "only $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores 0-3"
fi
spin_stop
sleep 0.5

# 2b. A lone task that started while hogs held every P-core CPU (so it began on an E-core) is
# back on a P-core within 1 s of the hogs ending: slice ends and nudges re-place it by the
# policy's up-migration rule. (The kernel's default balancer does not move a lone task off an
# otherwise idle CPU of this guest, which it sees as symmetric.)
hogs=""
n=0
while [ $n -lt 4 ]; do taskset 0xf sh -c 'while :; do :; done' & hogs="$hogs $!"; n=$((n + 1)); done
sleep 0.5
spin_start 1 0
sleep 1
start_cpu=$(cpu_of $SPIN)
for p in $hogs; do kill -9 "$p" 2>/dev/null; done
for p in $hogs; do wait "$p" 2>/dev/null; done
# Poll every 50 ms for 1 s, then sample 2 s more: it must get there and stay.
t=0; back=""
while [ $t -lt 20 ]; do
  if is_p "$(cpu_of $SPIN)"; then back=$((t * 50)); break; fi
  sleep 0.05; t=$((t + 1))
done
sample_majority 20 0.1
if ! is_e "$start_cpu"; then
  fail stuck-lone-task "set-up: the lone task started on cpu $start_cpu, not on an E-core, while the hogs ran"
elif [ -n "$back" ] && [ $((SAMPLES_P * 100)) -ge $((SAMPLES_TOTAL * 90)) ]; then
  pass stuck-lone-task "started on E-core $start_cpu; on a P-core ${back} ms after the hogs ended; then $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
else
  fail stuck-lone-task "started on E-core $start_cpu; ${back:-not} on a P-core within 1 s; then $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
fi
spin_stop
sleep 0.5

# 3. Four busy tasks: one per P-core, then one per E cluster; no SMT sibling shared.
# Placements under emulation are noisy (the sampling shell itself runs on these CPUs), so a
# miss is sampled once more before it counts.
spread4_ok() { [ $NP -eq 2 ] && [ $DOUBLE -eq 0 ] && [ $EA -eq 1 ] && [ $EB -eq 1 ]; }
spin_start 4
sleep 1
sample_majority 6 0.8; classify
if ! spread4_ok; then say "(sampling again)"; sample_majority 6 0.8; classify; fi
if ! spread4_ok; then
  say "(starting the tasks again)"; spin_stop; sleep 1; spin_start 4; sleep 1; sample_majority 6 0.8; classify
fi
if spread4_ok; then
  pass spread-4 "2 tasks on distinct P-cores, 1 per E cluster"
else
  fail spread-4 "P=$NP (SMT doubled $DOUBLE), E clusters $EA/$EB; want 2 (0), 1/1"
fi
spin_stop
sleep 0.5

# 4. Six busy tasks: both P-cores, then all four E-cores, before any SMT sibling.
spread6_ok() { [ $NP -eq 2 ] && [ $DOUBLE -eq 0 ] && [ $NE -eq 4 ]; }
spin_start 6
sleep 1
sample_majority 6 0.8; classify
if ! spread6_ok; then say "(sampling again)"; sample_majority 6 0.8; classify; fi
if ! spread6_ok; then
  say "(starting the tasks again)"; spin_stop; sleep 1; spin_start 6; sleep 1; sample_majority 6 0.8; classify
fi
if spread6_ok; then
  pass spread-6-smt-last "2 on distinct P-cores, 4 on E-cores, no SMT sibling used"
else
  fail spread-6-smt-last "P=$NP (SMT doubled $DOUBLE), E=$NE; want 2 (0), 4"
fi
spin_stop
say "--- stats while loaded (last lines) ---"
grep "stats:" "$LOG" | tail -n 3

# 5. SIGINT unloads it cleanly.
stop_sched INT
if wait_state disabled 20 && [ "$SCHED_RC" -eq 0 ]; then
  pass sigint-disables "state=$(state), exit status $SCHED_RC"
else
  fail sigint-disables "state=$(state), exit status $SCHED_RC"
  tail -n 20 "$LOG"
fi
if [ -e "$CTL" ]; then fail control-file-removed "$CTL still there"; else pass control-file-removed "$CTL gone"; fi

# 6. Primary domain powersave: a light load (2 busy tasks) stays on the E-cores, one per
# cluster with cluster balance on; 7. after `echo off` to the control file, two new tasks pack
# into one cluster.
# This shell (which forks the tasks and samples them) keeps off the E-cores meanwhile, so it
# does not sit on the CPU the next task would get: pinned to P-core CPU 3, which powersave only
# uses by overflow.
taskset -p 0x8 $$ > /dev/null
if start_sched --primary-domain powersave --cluster-balance on; then
  spin_start 2
  sleep 1
  sample_majority 6 0.8; classify
  if [ $NE -eq 2 ] && [ $SAMPLES_P -le $((SAMPLES_TOTAL / 10)) ]; then
    pass powersave-on-e "both tasks on E-cores; $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
  else
    fail powersave-on-e "E tasks=$NE, $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
  fi
  before="$EA/$EB"
  spin_stop
  sleep 0.5
  if [ -w "$CTL" ]; then
    echo off > "$CTL"
    i=0
    while ! grep -q "cluster balance: on -> off" "$LOG" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    if grep -q "cluster balance: on -> off" "$LOG"; then
      packed() { [ "$after" = 2/0 ] || [ "$after" = 0/2 ]; }
      sleep 1
      spin_start 2 0
      sleep 1
      sample_majority 6 0.8; classify
      after="$EA/$EB"
      if ! packed; then
        # Something else (often this loop's own scheduler thread) may have held the lowest
        # E-core at that moment: start the pair once more.
        say "(starting the tasks again)"; spin_stop; sleep 1; spin_start 2 0; sleep 1
        sample_majority 6 0.8; classify; after="$EA/$EB"
      fi
      if [ "$before" = 1/1 ] && packed; then
        pass knob-runtime "2 E tasks per cluster with balance on: $before; after 'echo off > $CTL': $after"
      else
        fail knob-runtime "E tasks per cluster with balance on: $before (want 1/1); after 'echo off': $after (want 2/0 or 0/2)"
      fi
      spin_stop
    else
      fail knob-runtime "the scheduler did not log the change"
    fi
  else
    fail knob-runtime "no control file $CTL"
  fi
  say "--- stats (powersave, then balance off) ---"
  grep "stats:" "$LOG" | tail -n 2
  stop_sched INT
  wait_state disabled 20
else
  fail powersave-on-e "scheduler did not load with --primary-domain powersave"
  fail knob-runtime "scheduler did not load"
fi
taskset -p 0xff $$ > /dev/null

# 8. When the kernel ejects the scheduler (here: sysrq-S), it says why and exits non-zero.
if start_sched; then
  echo S > /proc/sysrq-trigger
  i=0
  while alive "$SCHED_PID" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if alive "$SCHED_PID"; then kill -9 "$SCHED_PID"; fi
  wait "$SCHED_PID"; rc=$?
  SCHED_PID=""
  why=$(grep -o "EXIT: .*\|ejected.*" "$LOG" | head -n 2 | tr '\n' ' ')
  if [ $rc -eq 2 ] && grep -q "ejected" "$LOG" && wait_state disabled 20; then
    pass ejection-reported "exit status $rc; $why"
  else
    fail ejection-reported "exit status $rc (want 2), state=$(state); log: $(tail -n 3 "$LOG" | tr '\n' ' ')"
  fi
else
  fail ejection-reported "scheduler did not load"
fi

# 9. Stress: hackbench and a storm of short-lived tasks for several seconds.
if start_sched; then
  t0=$(date +%s)
  if [ -x "$HL/hackbench" ]; then
    if timeout 120 "$HL/hackbench" -g 2 -f 10 -l 60 > /run/hackbench.log 2>&1; then
      say "hackbench: $(tail -n 1 /run/hackbench.log)"
      hb=ok
    else
      hb="failed ($(tail -n 2 /run/hackbench.log | tr '\n' ' '))"
    fi
  else
    hb="not available"
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
  hb_ok=no
  case "$hb" in ok|"not available") hb_ok=yes ;; esac
  if [ "$(state)" = enabled ] && kill -0 "$SCHED_PID" 2>/dev/null && [ $hb_ok = yes ]; then
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
    ( i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; echo done >> /run/work.done ) &
    workers="$workers $!"
    w=$((w + 1))
  done
  sleep 1
  stop_sched KILL
  i=0
  while [ "$(wc -l < /run/work.done)" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  for p in $workers; do kill -9 "$p" 2>/dev/null; done
  wait $workers 2>/dev/null
  finished=$(wc -l < /run/work.done)
  if wait_state disabled 20 && [ "$finished" -eq 4 ]; then
    pass sigkill-recovers "state=$(state) after SIGKILL; $finished of 4 workers finished; kernel: $(dmesg | grep sched_ext | tail -n +$((dmesg_before + 1)) | sed 's/^\[[^]]*\] //' | tr '\n' ' ')"
  else
    fail sigkill-recovers "state=$(state); $finished of 4 workers finished"
  fi
else
  fail stress "scheduler did not load"
  fail no-ejection "scheduler did not load"
  fail sigkill-recovers "scheduler did not load"
fi

say "--- kernel messages about sched_ext ---"
dmesg | grep -i sched_ext | tail -n 10
exit 0
