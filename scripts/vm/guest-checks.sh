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
# (free and allowed CPUs, previous CPU, class, homes). Passes with at least 20 placed, every
# one checked, none disagreeing; the controls place none: --no-fast-wake (the counter counts
# the fast path and nothing else) and --fifo (no table).
fast_run() {  # fast_run ARGS...: the frame task for 3 s under the scheduler; sets FAST, AUDIT
  FAST=-1; AUDIT=""
  if start_sched "$@"; then
    "$HL/frame-task" 30 "$LIGHT_ITERS" 3 f0 > /dev/null 2>&1
    sleep 1.2  # the last interval's stats line
    stop_sched INT
    wait_state disabled 20
    FAST=$(stat_sum fast)
    AUDIT=$(sed -n 's/.*fast-path audit: //p' "$LOG" | tail -n 1)
  fi
}
# A light frame task: 2 ms of work a frame (calibrated here, with no scheduler loaded).
LIGHT_ITERS=$(( $("$HL/frame-task" calibrate) * 2 ))
fast_run --audit-fast-wake; hl_fast=$FAST; hl_audit=$AUDIT
say "fast-wake: policy placed $hl_fast; audit: ${hl_audit:-none}"
grep "fast-path audit:" "$LOG" | head -n 6
fast_run --no-fast-wake; off_fast=$FAST
fast_run --fifo; fifo_fast=$FAST
checked=$(echo "$hl_audit" | awk '{print $1}')
disagreed=$(echo "$hl_audit" | sed -n 's/.*, \([0-9]*\) disagreed.*/\1/p')
detail="placed $hl_fast (audit: ${hl_audit:-none}); --no-fast-wake placed $off_fast, --fifo $fifo_fast"
if [ "$hl_fast" -ge 20 ] && [ "${checked:-0}" -ge "$hl_fast" ] && [ "$disagreed" = 0 ] &&
   [ "$off_fast" = 0 ] && [ "$fifo_fast" = 0 ]; then
  pass fast-wake "$detail"
else
  fail fast-wake "$detail"
fi

# --- placement checks ------------------------------------------------------------------------
# Each check function runs one workload under whatever scheduler is loaded and ends with
# `verdict CHECK PASS|FAIL DETAIL`; its comment says what the controls do and why the policy
# differs. The controls were measured in this VM, not assumed: the table at the end shows them.
#
# A user-space scheduler's own thread is busy on some CPU whenever it decides, so the policy
# sees that CPU busy; where a check's expected answer depends on which CPUs are idle, the
# scheduler is pinned ($SCHED_MASK) where it cannot change that answer.
#
# Not checked here, because the controls were measured to pass them too or the scheduler's own
# thread makes them flaky on 8 vCPUs (the simulator's seed tests cover them):
# - a lone task started on an idle machine lands on a P-core: the default scheduler's fork and
#   idle balancing put it there in every run (40 of 40 samples, also when it started confined
#   to E-cores and was then allowed everywhere); stuck-lone-task is the form that tells them
#   apart;
# - four busy tasks "one per P-core, then one per E cluster": also what placing one task per
#   kernel core gives, which the default does;
# - six busy tasks "SMT siblings last": with the scheduler's thread as a seventh busy task on
#   eight CPUs, the policy's placement passed 3, 2 and 0 of 3 rounds in three runs.
RESULTS=/run/results
: > "$RESULTS"
UNDER=hybridland
verdict() {  # verdict CHECK PASS|FAIL|NOLOAD DETAIL (NOLOAD: the scheduler did not load, which
             # neither passes a check nor makes one discriminate)
  echo "$UNDER|$1|$2|$3" >> "$RESULTS"
  say "placement: [$UNDER] $1: $2 ($3)"
}
load_under() {  # load_under ARGS...: the scheduler $UNDER with the check's knobs
  case "$UNDER" in
    hybridland) start_sched "$@" ;;
    fifo) start_sched --fifo "$@" ;;
    default) return 0 ;;
  esac
}
unload_under() {
  [ "$UNDER" = default ] && return 0
  stop_sched INT
  wait_state disabled 20
}
pin_shell() { taskset -p "$1" $$ > /dev/null; }
# after_runs PID N: returns once task PID has got a CPU N more times (N wake-ups of a frame task,
# N x 33 ms at 30 fps), however long a loaded host stretches them (at most 2 s); after 0.2 s
# where the kernel keeps no run count.
after_runs() {
  r0=$(runs_of "$1"); i=0
  if [ "$r0" -lt 0 ]; then sleep 0.2; return; fi
  while [ "$(runs_of "$1")" -lt $((r0 + $2)) ] && [ $i -lt 40 ]; do
    sleep 0.05; i=$((i + 1))
  done
}

# stuck-lone-task: a lone task started while hogs held every P-core CPU (so it began on an
# E-core) is on a P-core within 250 ms of the hogs ending and stays (>= 90% of 10 samples), in at
# least 5 of 6 rounds.
# - The policy's up-migration rule moves it at a slice end or by a nudge (measured: 0-100 ms).
# - The default scheduler sees no imbalance in one task on one idle CPU and leaves it there.
# - Under --fifo the CPU that frees first takes it from the shared queue, usually its own CPU,
#   so it reaches a P-core only by chance. Measured: 2 of 12 rounds with the sampling shell on an
#   E-core beside it, which is why the shell sits on P-core CPU 7 here. At 1 in 6 per round,
#   5 of 6 rounds by chance is 0.07%.
# One late round is allowed. In a CI run one round got there only after 250 ms on the emulated
# guest (then 10/10 samples on P), and on a starved host one round had 8/10 samples.
stuck_round() {  # -> ROUND_OK (yes/no), ROUND_SAID
  hogs=""
  n=0
  while [ $n -lt 4 ]; do taskset 0xf0 sh -c 'while :; do :; done' & hogs="$hogs $!"; n=$((n + 1)); done
  sleep 0.5
  spin_start 1 0
  sleep 1
  start_cpu=$(cpu_of $SPIN)
  for p in $hogs; do kill -9 "$p" 2>/dev/null; done
  for p in $hogs; do wait "$p" 2>/dev/null; done
  # Poll every 50 ms for 250 ms, then sample 1 s more: it must get there and stay.
  t=0; back=""
  while [ $t -lt 5 ]; do
    if is_p "$(cpu_of $SPIN)"; then back=$((t * 50)); break; fi
    sleep 0.05; t=$((t + 1))
  done
  sample_placement 10 0.1
  ROUND_OK=no
  if ! is_e "$start_cpu"; then
    ROUND_SAID="set-up: started on cpu $start_cpu, not an E-core"
  else
    ROUND_SAID="from E-core $start_cpu: ${back:-not} ms, then $SAMPLES_P/$SAMPLES_TOTAL on P"
    if [ -n "$back" ] && [ $((SAMPLES_P * 100)) -ge $((SAMPLES_TOTAL * 90)) ]; then ROUND_OK=yes; fi
  fi
  spin_stop
  sleep 0.5
}
check_stuck() {
  pin_shell 0x80
  ok=0; r=0; said=""
  while [ $r -lt 6 ]; do
    stuck_round
    [ $ROUND_OK = yes ] && ok=$((ok + 1))
    said="$said [$ROUND_SAID]"
    r=$((r + 1))
  done
  pin_shell 0xff
  if [ $ok -ge 5 ]; then
    verdict stuck-lone-task PASS "$ok of 6 rounds on a P-core within 250 ms of the hogs ending:$said"
  else
    verdict stuck-lone-task FAIL "$ok of 6 rounds (5 needed):$said"
  fi
}

# powersave-on-e (--primary-domain powersave, the scheduler on the P-cores): four busy tasks
# fill the four E-cores and stay off the P-cores (<= 10% of samples) while the P-cores idle.
# The default scheduler spreads four tasks over the four kernel cores, two of which are
# P-cores; --fifo ignores domains.
check_powersave() {
  pin_shell 0x40
  spin_start 4
  sleep 1
  sample_placement 10 0.5; classify
  pin_shell 0xff
  if [ $NE -eq 4 ] && [ $((SAMPLES_P * 10)) -le $SAMPLES_TOTAL ]; then
    verdict powersave-on-e PASS "E-cores:$ECPUS; $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
  else
    verdict powersave-on-e FAIL "E tasks=$NE (E-cores:$ECPUS), $SAMPLES_P of $SAMPLES_TOTAL samples on P-cores"
  fi
  spin_stop
  sleep 0.5
}

# knob-runtime (--primary-domain powersave, the scheduler on the P-cores, cluster balance changed
# through the control file while loaded): beside a hog pinned to E-core 1 (cluster {1,3}), a
# light frame task (30 fps, 2 ms of work a frame) started pinned to E-core 3 and then allowed
# every CPU wakes on the other cluster (CPU 0 or 2) with balance on and stays on CPU 3 with it
# off: at each wake-up the idle order's cluster step picks the least busy cluster when balance
# is on, and keeps the idle previous CPU when it is off. Two wake-ups after the release, five
# samples. There are twelve rounds of each mode, alternating, and at least 20 of the 24 must be
# right. The default scheduler and --fifo have no control file, so the mode cannot change what
# they do: each round is then right with probabilities b (on) and z (off), b + z <= 1, and 20 of
# 24 happens at most 12951/2^24 = 0.08% of the time (at b = z = 1/2).
# Why 4 wrong rounds are allowed: an off round goes wrong when its CPU is busy at one of its
# wake-ups: the task then wakes on the lowest idle E-core and stays there. What is left on the
# E-cores to make it busy are per-CPU kernel threads, which cannot be moved (the wrong rounds'
# decision logs were not kept, so which thread is not known). Measured in five runs (four
# beside a host `yes` loop or fuzzing, one in CI): 3 of 46 off rounds wrong, 0 of 46 on rounds.
# At 1 off round in 15 to 1 in 8, more than 2 wrong of 16 happens in 1-7% of runs, more than 4
# wrong of 24 in 0.1-1.1%.
# Why a task that starts on CPU 3 and not a new task placed from scratch: "off" has no rule that
# prefers one idle E-core over another, only the lowest-id tie-break; staying on an idle previous
# CPU is the rule "off" does have.
# Why a task that sleeps, not a spinner: a spinner alone on its CPU keeps it (the framework
# refills its slice without asking user space, and a change of affinity does not re-queue a
# running task), so it moved only when something else happened to queue there and force a slice
# end. CI runs failed with 3 of 16 rounds wrong that way. A frame task is placed by the policy at
# every wake-up, 30 times a second.
# Why background tasks are moved to the P-cores first (and back after): the decision log of a
# failing run showed the frame task sharing 235 of its 272 batches with other tasks, mostly two
# unbound kernel threads living on the E-cores; they took the on cluster's two CPUs, or the off
# task's CPU, at its wake-up. Per-CPU kernel threads refuse to move and stay.
# Why CPU 3 and the hog on CPU 1, not CPU 0 beside a hog on CPU 2: with balance off the
# lowest-id idle E-core takes every task without a previous CPU, so CPU 0 is where anything left
# lands, and one task there at a wake-up moved the frame task for good (off has no preference
# that brings it back).
knob_round() {  # knob_round on|off -> CPU of the frame task beside the hog, in $KNOB_CPU
  if [ -w "$CTL" ]; then
    # A change is logged; writing the mode in force is not (then this waits 2 s for nothing).
    before=$(grep -c "cluster balance:" "$LOG")
    echo "$1" > "$CTL"
    i=0
    while [ "$(grep -c "cluster balance:" "$LOG")" = "$before" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
  fi
  taskset 0x8 "$HL/frame-task" 30 "$LIGHT_ITERS" 30 f0 > /dev/null 2>&1 &
  SPIN=$!
  sleep 0.3
  taskset -p 0xff $SPIN > /dev/null
  after_runs "$SPIN" 2
  sample_placement 5 0.05
  KNOB_CPU=$(echo $MAJ)
  KNOB_CPU=${KNOB_CPU:--1}
  spin_stop
  sleep 0.2
}
# quiet_e_cores: every task allowed on all CPUs (the scheduler and this shell are not) moves to
# the P-cores; their ids in $QUIET for loud_e_cores to give them every CPU back.
quiet_e_cores() {
  QUIET=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$(taskset -p "$p" 2>/dev/null)" in
      *": ff") taskset -p 0xf0 "$p" > /dev/null 2>&1 && QUIET="$QUIET $p" ;;
    esac
  done
}
loud_e_cores() { for p in $QUIET; do taskset -p 0xff "$p" > /dev/null 2>&1; done; QUIET=""; }
check_knob() {
  pin_shell 0x40
  quiet_e_cores
  say "placement: knob-runtime: $(echo $QUIET | wc -w) tasks moved to the P-cores for the check"
  taskset 0x2 sh -c 'while :; do :; done' &
  hog=$!
  sleep 0.5
  got=""; ok=0; rounds=0
  while [ $rounds -lt 24 ]; do
    if [ $((rounds % 2)) -eq 0 ]; then mode=on; else mode=off; fi
    rounds=$((rounds + 1))
    knob_round $mode
    got="$got $mode:$KNOB_CPU"
    case "$mode:$(cluster_of "$KNOB_CPU")" in
      on:A) is_e "$KNOB_CPU" && ok=$((ok + 1)) ;;
      off:*) [ "$KNOB_CPU" = 3 ] && ok=$((ok + 1)) ;;
    esac
  done
  kill -9 $hog 2>/dev/null; wait $hog 2>/dev/null
  loud_e_cores
  pin_shell 0xff
  if [ ! -w "$CTL" ]; then
    verdict knob-runtime FAIL "no control file $CTL; beside a hog on cpu 1:$got"
  elif [ $ok -ge 20 ]; then
    verdict knob-runtime PASS "beside a hog on cpu 1, from cpu 3:$got (on: cluster {0,2}; off: stays on 3; $ok of $rounds right)"
  else
    verdict knob-runtime FAIL "beside a hog on cpu 1, from cpu 3:$got; want on: 0 or 2, off: 3, in 20 of 24 rounds ($ok of $rounds)"
  fi
}

placement_checks() {  # under $UNDER
  SCHED_MASK=0xff
  if load_under --cluster-balance on; then
    check_stuck
    if [ "$UNDER" = hybridland ]; then
      say "--- stats while loaded (last lines) ---"
      grep "stats:" "$LOG" | tail -n 3
    fi
    unload_under
  else
    verdict stuck-lone-task NOLOAD "did not load"
  fi
  # On the P-cores, which powersave leaves alone, the scheduler's own thread cannot change the
  # E-core answers. (Not on one CPU: a task spinning there would starve it.)
  SCHED_MASK=0xf0
  if load_under --primary-domain powersave --cluster-balance on; then
    check_powersave; check_knob
    unload_under
  else
    for c in powersave-on-e knob-runtime; do verdict $c NOLOAD "did not load"; done
  fi
  SCHED_MASK=0xff
}

UNDER=hybridland; placement_checks
UNDER=fifo; placement_checks
UNDER=default; placement_checks

say "--- placement checks: scheduler x check ---"
say "$(printf '%-22s %-10s %-10s %-10s' check hybridland fifo default)"
for c in stuck-lone-task powersave-on-e knob-runtime; do
  h=$(grep "^hybridland|$c|" "$RESULTS" | cut -d'|' -f3)
  f=$(grep "^fifo|$c|" "$RESULTS" | cut -d'|' -f3)
  d=$(grep "^default|$c|" "$RESULTS" | cut -d'|' -f3)
  say "$(printf '%-22s %-10s %-10s %-10s' "$c" "${h:-none}" "${f:-none}" "${d:-none}")"
  detail=$(grep "^hybridland|$c|" "$RESULTS" | cut -d'|' -f4)
  if [ "$h" = PASS ]; then pass "$c" "$detail"; else fail "$c" "$detail"; fi
  if [ "$f" = FAIL ] && [ "$d" = FAIL ]; then
    pass "$c-discriminates" "fails under --fifo and the default scheduler"
  else
    fail "$c-discriminates" "not discriminating: fifo $f ($(grep "^fifo|$c|" "$RESULTS" | cut -d'|' -f4)); default $d ($(grep "^default|$c|" "$RESULTS" | cut -d'|' -f4))"
  fi
done

# --- other policies (--policy) ------------------------------------------------------------------
# policies-load: the built-in baselines spread and capacity-blind run live under --policy, and
# so does the example crate's own policy (examples/my-policy, `scx_my_policy --policy
# little-first`): each loads, logs that it runs that policy, and dispatches from user space.
MY="$HL/scx_my_policy"
policy_loads() {  # policy_loads BIN NAME -> appends to $LOADED / $NOT_LOADED
  keep=$SCX; SCX=$1
  if start_sched --policy "$2"; then
    spin_start 2 0.1
    sleep 2
    spin_stop
    user=$(grep "stats: placed " "$LOG" | tail -n 1 | sed -n 's/.* fw user=\([0-9]*\).*/\1/p')
    if grep "running policy $2 " "$LOG" > /dev/null && [ "${user:-0}" -gt 0 ]; then
      LOADED="$LOADED $2(user-space dispatches $user/s)"
    else
      NOT_LOADED="$NOT_LOADED $2(log: $(grep -c "running policy $2 " "$LOG") lines, fw user=${user:-none})"
    fi
    stop_sched INT
    wait_state disabled 20
  else
    NOT_LOADED="$NOT_LOADED $2(did not load)"
  fi
  SCX=$keep
}
LOADED=""; NOT_LOADED=""
policy_loads "$SCX" spread
policy_loads "$SCX" capacity-blind
policy_loads "$MY" little-first
if [ -z "$NOT_LOADED" ]; then
  pass policies-load "loaded and dispatched:$LOADED"
else
  fail policies-load "loaded:$LOADED; not:$NOT_LOADED"
fi

# little-first-light: the example policy's idea, seen live. A light frame task (30 fps, 2 ms of
# work a frame, frame-task.c) starts confined to P-core CPU 6, whose SMT sibling is idle; the
# scheduler's thread and the shell sit on P-core CPU 4. Then it may run anywhere, and after it
# has run four more times (about 4 wake-ups, 0.13 s) one sample says where it is. little-first
# puts it on an E-core at its first wake-up (the E-cores, capacity 640, fit it) although the
# P-cores idle; --fifo (the framework's idle selection) and the kernel's default keep a woken
# task on its idle previous CPU. 32 trials per scheduler, each with a new task: little-first
# must find it on an E-core in at least 28, --fifo and the default in at most 23.
# Why so many short trials: on a loaded host the guest's CPUs stall, and one wake-up while CPU
# 6 or its sibling runs something else sends the task away under any scheduler (the framework's
# idle selection wants a whole idle core; a wake-up it bounces to user space may go to any CPU).
# A CI run on a loaded host sampled 4 trials 1.5 s after the release and saw --fifo move the
# task in 3 of them; with two CPU hogs on the host, 8 trials sampled 0.2 s after the release
# still saw it move in 3 and in 4 (two runs). The rule acts at the first wake-up, luck over all
# of them, so a short wait and many independent trials separate the two: a coin comes up
# E-core in 24 or more of 32 with probability 0.35%. The wait counts runs, not time: with two
# fuzzers on the host, 0.2 s was sometimes too short for the first wake-up after the release to
# reach little-first's loop and the task to run where it was sent (27 of 32). The loop and the
# shell sit on a P-core, so neither makes an E-core the first CPU to take a task from the
# shared queue.
# hybridland's row is shown, not judged: its rules keep this task on a P-core while they idle,
# or not, depending on the load. Earlier forms were not discriminating: four unconfined tasks
# (where a fork lands is no scheduler's choice), and tasks on CPU 4, which --fifo and
# hybridland left for an E-core when CPU 5 was busy.
FIT_RESULTS=/run/fit-results
: > "$FIT_RESULTS"
fit_check() {  # fit_check LABEL [BIN ARGS...]: 32 trials under that scheduler (none: the default); -1 if it did not load
  label=$1; shift
  if [ $# -gt 0 ]; then
    keep=$SCX; SCX=$1; shift
    SCHED_MASK=0x10
    start_sched "$@" || { SCX=$keep; SCHED_MASK=0xff; echo "$label|-1|did not load" >> "$FIT_RESULTS"; return; }
    SCX=$keep; SCHED_MASK=0xff
  fi
  sleep 1
  pin_shell 0x10
  moved=0; trials=""; t=0
  while [ $t -lt 32 ]; do
    taskset 0x40 "$HL/frame-task" 30 "$LIGHT_ITERS" 30 f0 > /dev/null 2>&1 &
    SPIN=$!
    sleep 0.3
    taskset -p 0xff "$SPIN" > /dev/null
    after_runs "$SPIN" 2
    c=$(cpu_of "$SPIN")
    spin_stop
    # A task gone before the sample (cpu -1) counts for nobody.
    if [ "$c" -lt 0 ]; then trials="${trials}?"
    elif is_p "$c"; then trials="${trials}P"
    else moved=$((moved + 1)); trials="${trials}E"; fi
    t=$((t + 1))
  done
  pin_shell 0xff
  detail="on an E-core in $moved of 32 trials ($trials)"
  echo "$label|$moved|$detail" >> "$FIT_RESULTS"
  say "placement: [$label] little-first-light: $detail"
  if [ "$SCHED_PID" != "" ]; then stop_sched INT; wait_state disabled 20; fi
}
fit_check little-first "$MY" --policy little-first
fit_check hybridland "$SCX"
fit_check fifo "$SCX" --fifo
fit_check default
say "--- little-first-light: scheduler x trials on an E-core ---"
cat "$FIT_RESULTS"
fit_moved() { grep "^$1|" "$FIT_RESULTS" | cut -d'|' -f2; }
fit_detail() { grep "^$1|" "$FIT_RESULTS" | cut -d'|' -f3; }
if [ "$(fit_moved little-first)" -ge 28 ]; then
  pass little-first-light "$(fit_detail little-first)"
else
  fail little-first-light "$(fit_detail little-first)"
fi
f=$(fit_moved fifo); d=$(fit_moved default)
if [ "$f" -ge 0 ] && [ "$f" -le 23 ] && [ "$d" -ge 0 ] && [ "$d" -le 23 ]; then
  pass little-first-light-discriminates "--fifo: $(fit_detail fifo); default: $(fit_detail default); hybridland (not judged): $(fit_detail hybridland)"
else
  fail little-first-light-discriminates "not discriminating: --fifo: $(fit_detail fifo); default: $(fit_detail default)"
fi

# decision-replay: a loaded run recorded with --record keeps a decision log (the core's inputs
# and what the loop sent); `hybrid-sim decisions` (here the example's my-policy-sim, which also
# knows little-first) feeds it through the same core again, and every dispatch and nudge must
# come out the same. For hybridland (with its nudge helper and the cluster-balance knob changed
# at run time through the control file), for the example's little-first, and for hybridland
# with --wake-preempt, which must have sent preempting dispatches (hackbench beside three
# spinners leaves no CPU idle at times) that the replay gives the same.
replay_run() {  # replay_run LABEL BIN ARGS... -> appends to $REPLAYED / $NOT_REPLAYED
  label=$1; keep=$SCX; SCX=$2; shift 2
  rm -f /run/dec.json*
  if start_sched --record /run/dec.json "$@"; then
    spin_start 3 0.1
    [ -w "$CTL" ] && echo off > "$CTL"
    "$HL/hackbench" -g 2 -l 40 > /dev/null 2>&1
    [ -w "$CTL" ] && echo on > "$CTL"
    sleep 2
    spin_stop
    stop_sched INT
    wait_state disabled 20
    "$HL/my-policy-sim" decisions /run/dec.json.decisions.jsonl > /run/replay.out 2>&1
    rc=$?
    sent=$(sed -n 's/^dispatches sent: \([0-9]*\), replayed identically: \([0-9]*\)$/\1 \2/p' /run/replay.out)
    set -- $sent
    preempts=$(grep -c '"preempt":true' /run/dec.json.decisions.jsonl 2>/dev/null)
    if [ $rc -eq 0 ] && [ "${1:-0}" -ge 100 ] && [ "$1" = "$2" ] &&
      { [ "$label" != wake-preempt ] || [ "${preempts:-0}" -ge 1 ]; }; then
      REPLAYED="$REPLAYED $label($2 of $1 dispatches, ${preempts:-0} preempting, $(sed -n 's/^nudges carried out: \(.*\)$/nudges \1/p' /run/replay.out))"
    else
      NOT_REPLAYED="$NOT_REPLAYED $label(exit $rc, ${preempts:-0} preempting: $(head -n 8 /run/replay.out | tr '\n' ' '))"
    fi
  else
    NOT_REPLAYED="$NOT_REPLAYED $label(did not load)"
  fi
  SCX=$keep
}
REPLAYED=""; NOT_REPLAYED=""
replay_run hybridland "$SCX" --cluster-balance on
replay_run little-first "$MY" --policy little-first
replay_run wake-preempt "$SCX" --wake-preempt
if [ -z "$NOT_REPLAYED" ]; then
  pass decision-replay "every dispatch replayed identically:$REPLAYED"
else
  fail decision-replay "replayed:$REPLAYED; not:$NOT_REPLAYED"
fi

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
# out of the loop's table at once (the `tasks=` gauge ends where it began, where the age-based
# prune alone would hold them for 30 s); hackbench's pipes give task-to-task wake-ups with their
# waker, and those reach the scheduler core with their waker's CPU (`to-core`: the wake-up event
# is read before the woken task is handed over); a lone spinner, which nobody else wants the
# CPU from, has its slice refilled by the
# framework, reported where the kernel lets the fentry probe attach (the log says which). The
# figures come from the `--stats 1` lines, summed over the run.
ev_sum() {  # ev_sum FIELD: the sum of FIELD=N over the --stats lines in $LOG
  grep "stats: placed " "$LOG" | sed -n "s/.* $1=\([0-9]*\).*/\1/p" | awk '{s += $1} END {print s + 0}'
}
ev_last() {  # ev_last FIELD: FIELD=N of the last --stats line
  grep "stats: placed " "$LOG" | sed -n "s/.* $1=\([0-9]*\).*/\1/p" | tail -n 1
}
if start_sched; then
  sleep 2
  tasks_before=$(ev_last tasks)
  i=0
  while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done
  "$HL/hackbench" -g 2 -l 50 > /dev/null 2>&1
  spin_start 1 0.1
  sleep 2
  spin_stop
  sleep 2
  tasks_after=$(ev_last tasks)
  exits=$(ev_sum exit); tracked=$(ev_sum exit-tracked); wakings=$(ev_sum waking)
  by_task=$(ev_sum by-task); to_core=$(ev_sum to-core); refills=$(ev_sum refill)
  refill_seen=1
  grep "slice refills unseen" "$LOG" > /dev/null && refill_seen=0
  stop_sched INT
  detail="exits $exits (of tracked tasks $tracked), tasks gauge $tasks_before -> $tasks_after, wakings $wakings ($by_task by a task, $to_core to the core with their waker), refills $refills"
  ok=1
  [ "$exits" -ge 300 ] || ok=0
  [ "$tracked" -ge 250 ] || ok=0
  [ -n "$tasks_before" ] && [ -n "$tasks_after" ] && [ "$tasks_after" -le $((tasks_before + 30)) ] || ok=0
  [ "$by_task" -ge 100 ] || ok=0
  [ "$to_core" -ge 50 ] || ok=0
  if [ "$refill_seen" = 1 ]; then
    [ "$refills" -ge 10 ] || ok=0
  else
    detail="$detail (refills unseen on this kernel)"
  fi
  if [ "$ok" = 1 ]; then pass task-events "$detail"; else fail task-events "$detail; want exits >= 300, tracked >= 250, gauge back within 30, >= 100 by a task, >= 50 to the core with their waker, >= 10 refills where seen"; fi
else
  fail task-events "scheduler did not load"
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

say "--- kernel messages about sched_ext ---"
dmesg | grep -i sched_ext | tail -n 10
exit 0
