#!/bin/sh
# guest-checks.sh: runs inside the VM that scripts/vm-check.sh boots (busybox sh, as root).
#
# Everything it uses (scx_hybridland, its libraries, the topology file, hackbench) was copied
# into a tmpfs before this starts; nothing is read from a shared filesystem while a user-space
# scheduler is loaded. Each check prints one line `VMCHECK: PASS|FAIL <name>: <detail>`; the
# host counts them. Placements are printed as `placement: ...` lines.
#
# The machine (see topology-2p-smt-4e.toml), numbered little-first as Arm parts are: E-cores
# 0-3 in clusters {0,2} and {1,3}, P-cores 4-5 and 6-7 (SMT pairs). The guest kernel sees 4
# cores x 2 threads of equal capacity, so to it 0-1 and 2-3 are SMT pairs too, and its default
# scheduler prefers low-numbered CPUs for new tasks: a scheduler that knows only the kernel's
# view (the default, or --fifo) places differently from the policy.
#
# Every placement check runs three times: under scx_hybridland (the policy), under
# `scx_hybridland --fifo` (the same framework with no policy) and under the kernel's default
# scheduler (no sched_ext scheduler loaded). A check counts only if it passes with the policy
# and fails with both controls; one a control also passes is reported as not discriminating,
# and fails the run. Each check decides from many samples in one go, with no retries.

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
. "$HL/guest-lib.sh"  # the machine (is_e, is_p, core_of, cluster_of), state, ops, cpu_of, runs_of, wait_state, spin_start, spin_stop, sample_majority, stat_sum

start_sched() {  # start_sched ARGS...; runs the scheduler on the CPUs of $SCHED_MASK (default all)
  : > "$LOG"
  taskset "${SCHED_MASK:-0xff}" "$SCX" --topology "$TOPO" --stats 1 "$@" >> "$LOG" 2>&1 &
  SCHED_PID=$!
  if wait_state enabled 60; then return 0; fi
  say "scheduler did not reach enabled; log:"; cat "$LOG"
  return 1
}

alive() {  # alive PID: running and not a zombie
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
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

# sample_placement SAMPLES [INTERVAL]: sample_majority (guest-lib.sh), then a `placement:` line
# per task with the CPU it was seen on most often and how often it was seen on each.
sample_placement() {
  sample_majority "$@"
  set -- $MAJ
  for p in $SPIN; do
    say "placement: task $p on cpu $1 ($(sort /run/samples.$p | uniq -c | awk '{printf "%s:%s ", $2, $1}'))"
    shift
  done
}

# classify $MAJ: counts of tasks on P-cores, distinct P-cores, E cluster A/B, SMT pairs doubled;
# the E-cores used ($ECPUS) and how many of the guest kernel's cores hold two E tasks ($ESHARED).
classify() {
  NP=0; NE=0; EA=0; EB=0; PCORES=""; DOUBLE=0; ECPUS=""; EKCORES=""; ESHARED=0
  for c in $MAJ; do
    if is_p "$c"; then
      NP=$((NP + 1))
      k=$(core_of "$c")
      case " $PCORES " in *" $k "*) DOUBLE=$((DOUBLE + 1)) ;; esac
      PCORES="$PCORES $k"
    elif is_e "$c"; then
      NE=$((NE + 1))
      ECPUS="$ECPUS $c"
      k=$(core_of "$c")
      case " $EKCORES " in *" $k "*) ESHARED=$((ESHARED + 1)) ;; esac
      EKCORES="$EKCORES $k"
      if [ "$(cluster_of "$c")" = A ]; then EA=$((EA + 1)); else EB=$((EB + 1)); fi
    fi
  done
  say "placement: P-core tasks=$NP (cores:$PCORES) E tasks=$NE (cpus:$ECPUS; cluster {0,2}: $EA, cluster {1,3}: $EB; kernel cores shared: $ESHARED) P SMT pairs with both busy=$DOUBLE"
}

say "guest kernel $(uname -r), $(nproc) CPUs, SMT siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
if [ "$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)" != "0-1" ] ||
   [ "$(cat /sys/devices/system/cpu/cpu6/topology/thread_siblings_list)" != "6-7" ]; then
  fail smt-layout "the guest's SMT pairs are not (0,1) (2,3) ... as the topology file assumes"
fi
say "sched_ext state before loading: $(state)"

# 1. It loads.
if start_sched --cluster-balance on; then
  o=$(ops)
  case "$o" in
    hybridland*) pass loaded "state=$(state) ops=$o" ;;
    *) fail loaded "state=$(state) but ops=$o" ;;
  esac
  # The watchdog timeout put in the struct_ops (build.rs's line in the connector), as logged.
  w=$(sed -n 's/.*running: .*, watchdog \([0-9]*\) ms.*/\1/p' "$LOG" | head -n 1)
  if [ "$w" = 15000 ]; then pass watchdog-timeout "$w ms (the framework's own: 5000)"; else fail watchdog-timeout "logged: '${w:-nothing}', want 15000"; fi
  events=$(grep -o "task events: [^(]*\|no task events.*" "$LOG" | head -n 1)
  say "task events: ${events:-not logged}"
else
  fail loaded "state=$(state)"
  say "--- scheduler log ---"; cat "$LOG"
  exit 1
fi
stop_sched INT
wait_state disabled 20

# fast-wake: the wake-up fast path (src/bpf/fast_wake.bpf.h) places wake-ups in the kernel,
# and every placement is the policy's own answer. A light frame task (30 fps) on an otherwise
# idle machine wakes with CPUs free, which the policy's tables cover. --audit-fast-wake holds
# each placement against Policy::check_fast_wake on the inputs the kernel side walked with
# (free and allowed CPUs, previous CPU, class, homes). Then the same frame task pinned to CPU
# 5 (taskset -c 5): the kernel asks no select_cpu about a task allowed on one CPU, and the
# framework's enqueue asks the fast path instead; at least 20 of the placements the audit
# checks must be of a task allowed on one CPU (the frame task wakes 90 times). Then a task
# whose class moves (the wake probe, whose second half spins 40 ms after each 10 ms sleep: the
# core's estimate takes it across a class boundary and the loop writes the new class into the
# kernel's class table): its placements must be checked at two classes or more, so the kernel's walk
# followed the class as the policy's answer (which the simulator's model is) did. Then a pipe
# pair (pipe-pair.c: two processes handing a byte back and forth, each write a synchronous
# wake-up of a reader on an idle machine): at least 200 of its 1,000 wake-ups checked as
# placed on the writer's CPU (the wake-affine rule; a burst this fast may outrun the audit's
# ring, so not every one need be checked), none disagreeing, and none on the writer's CPU with
# --no-wake-affine. The other runs pass with at least 20 placed, every one checked, none
# disagreeing, and the frame task's and the class-moving probe's runs between them with at
# least 10 placements on another CPU than the task's previous one (the walk's choice among
# free CPUs held to the policy's, not only its previous CPU kept); the controls place none: --no-fast-wake (the counter counts the fast path and
# nothing else) and --fifo (no table).
fast_run() {  # fast_run ARGS...: the frame task for 3 s under the scheduler (on the CPUs in
  # $FAST_CPUS, beside a spinner pinned to CPU $FAST_HOG if set; the wake probe instead with
  # FAST_PROBE=1, 500 pipe round trips with FAST_PIPE=1); sets FAST, PINNED, AUDIT
  FAST=-1; PINNED=-1; AUDIT=""
  if start_sched "$@"; then
    hog=""
    if [ -n "${FAST_HOG:-}" ]; then taskset -c "$FAST_HOG" sh -c 'while :; do :; done' & hog=$!; fi
    if [ -n "${FAST_PROBE:-}" ]; then
      "$HL/wake-probe" 60 10000 f0 40000 > /dev/null
    elif [ -n "${FAST_PIPE:-}" ]; then
      "$HL/pipe-pair" 500 > /dev/null
    else
      taskset -c "${FAST_CPUS:-0-7}" "$HL/frame-task" 30 "$LIGHT_ITERS" 3 f0 > /dev/null 2>&1
    fi
    [ -z "$hog" ] || { kill "$hog"; wait "$hog" 2>/dev/null; }
    sleep 1.2  # the last interval's stats line
    stop_sched INT
    wait_state disabled 20
    FAST=$(stat_sum fast); PINNED=$(stat_sum fast-pinned)
    AUDIT=$(sed -n 's/.*fast-path audit: //p' "$LOG" | tail -n 1)
  fi
}
# A light frame task: 2 ms of work a frame (calibrated here, with no scheduler loaded).
LIGHT_ITERS=$(( $("$HL/frame-task" calibrate) * 2 ))
fast_run --audit-fast-wake; hl_fast=$FAST; hl_audit=$AUDIT
say "fast-wake: policy placed $hl_fast; audit: ${hl_audit:-none}"
grep "fast-path audit:" "$LOG" | head -n 6
FAST_CPUS=5 fast_run --audit-fast-wake; pin_fast=$FAST; pin_audit=$AUDIT
say "fast-wake: pinned to CPU 5, policy placed $pin_fast; audit: ${pin_audit:-none}"
FAST_PROBE=1 fast_run --audit-fast-wake; cls_fast=$FAST; cls_audit=$AUDIT
say "fast-wake: class moving, policy placed $cls_fast; audit: ${cls_audit:-none}"
classes=$(echo "$cls_audit" | sed -n 's/.* at classes \([0-9,]*\).*/\1/p')
pinned=$(echo "$pin_audit" | sed -n 's/.*, \([0-9]*\) of tasks allowed on one CPU.*/\1/p')
FAST_PIPE=1 fast_run --audit-fast-wake; pipe_fast=$FAST; pipe_audit=$AUDIT
say "fast-wake: pipe pair, policy placed $pipe_fast; audit: ${pipe_audit:-none}"
FAST_PIPE=1 fast_run --audit-fast-wake --no-wake-affine; unaff_audit=$AUDIT
affine_of() { echo "$1" | sed -n "s/.*, \([0-9]*\) on a synchronous waker's CPU.*/\1/p"; }
moved_of() { v=$(echo "$1" | sed -n 's/.*(\([0-9]*\) on another CPU than the previous one.*/\1/p'); echo "${v:-0}"; }
moved=$(( $(moved_of "$hl_audit") + $(moved_of "$cls_audit") ))
affine=$(affine_of "$pipe_audit"); unaffine=$(affine_of "$unaff_audit")
fast_run --no-fast-wake; off_fast=$FAST
fast_run --fifo; fifo_fast=$FAST
audit_ok() {  # audit_ok PLACED AUDIT: every placement checked, none disagreeing
  checked=$(echo "$2" | awk '{print $1}')
  disagreed=$(echo "$2" | sed -n 's/.*, \([0-9]*\) disagreed.*/\1/p')
  [ "$1" -ge 20 ] && [ "${checked:-0}" -ge "$1" ] && [ "$disagreed" = 0 ]
}
detail="placed $hl_fast (audit: ${hl_audit:-none}), $moved on another CPU than the previous one, pinned $pin_fast (audit: ${pin_audit:-none}), class moving $cls_fast (audit: ${cls_audit:-none}), pipe pair $pipe_fast (audit: ${pipe_audit:-none}; --no-wake-affine: ${unaff_audit:-none}); --no-fast-wake placed $off_fast, --fifo $fifo_fast"
if audit_ok "$hl_fast" "$hl_audit" && audit_ok "$pin_fast" "$pin_audit" && [ "${pinned:-0}" -ge 20 ] &&
   audit_ok "$cls_fast" "$cls_audit" && [ "${classes#*,}" != "$classes" ] && [ "$moved" -ge 10 ] &&
   [ "$(echo "$pipe_audit" | sed -n 's/.*, \([0-9]*\) disagreed.*/\1/p')" = 0 ] &&
   [ "${affine:-0}" -ge 200 ] && [ "${unaffine:--1}" = 0 ] &&
   [ "$off_fast" = 0 ] && [ "$fifo_fast" = 0 ]; then
  pass fast-wake "$detail"
else
  fail fast-wake "$detail"
fi

# pinned-busy: the pinned rule (hybridland_policy::pinned_cpu). The frame task pinned to CPU 5
# beside a spinner pinned there too: each wake-up finds the one CPU it may use busy, and the
# fast path puts it first in that CPU's queue, the spinner ending its slice, instead of
# leaving it to wait for that slice in the loop's queue. At least 20 such placements counted
# (`fast-pinned`), as many checked by the audit as the rule's, none disagreeing; the control
# --fifo (no table: the loop decides) counts none.
FAST_CPUS=5 FAST_HOG=5 fast_run --audit-fast-wake; pb_fast=$PINNED; pb_audit=$AUDIT
FAST_CPUS=5 FAST_HOG=5 fast_run --fifo; pb_fifo=$PINNED
pb_rule=$(echo "$pb_audit" | sed -n 's/.*, \([0-9]*\) on a busy CPU by the pinned rule.*/\1/p')
pb_dis=$(echo "$pb_audit" | sed -n 's/.*, \([0-9]*\) disagreed.*/\1/p')
detail="fast-pinned $pb_fast (audit: ${pb_audit:-none}); --fifo $pb_fifo"
if [ "$pb_fast" -ge 20 ] && [ "${pb_rule:-0}" -ge 20 ] && [ "$pb_dis" = 0 ] && [ "$pb_fifo" = 0 ]; then
  pass pinned-busy "$detail"
else
  fail pinned-busy "$detail"
fi

. "$HL/guest-checks-placement.sh"
. "$HL/guest-checks-policies.sh"
. "$HL/guest-checks-author.sh"
. "$HL/guest-checks-lifecycle.sh"

say "--- kernel messages about sched_ext ---"
dmesg | grep -i sched_ext | tail -n 10
exit 0
