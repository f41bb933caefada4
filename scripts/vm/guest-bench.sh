#!/bin/sh
# guest-bench.sh: runs inside the VM that scripts/vm-bench.sh boots (busybox sh, as root).
#
# The same loads under each scheduler of $BENCH_SCHEDS, one after the other: `default` (the
# kernel's own, no sched_ext), `fifo` (`scx_hybridland --fifo`: no policy), `hybridland` (the
# policy), `hybridland-fixed` (the policy with `--fixed-slice`: --fifo's slice rule),
# `hybridland-balance` (the policy with `--cluster-balance on`: the default `auto` stops
# balancing at 75% of CPUs busy, which the ecluster load reaches; ecluster only), other
# scx_hybridland builds from $BENCH_EXTRA (words name=label:mode: $HL/scx_hybridland-label with
# $HL/topology-label.toml in mode policy, fifo or fixed, given the loads of this build's
# scheduler in that mode) and the peers (scx_bpfland, scx_cosmos, ... from bench.env), which
# detect the machine through scx_utils from the fake sysfs tree $HL/fakesys
# (SCX_SYSFS_PREFIX): the same hybrid view that scx_hybridland reads from topology.toml. Everything was copied into a tmpfs first. Each
# figure is printed as `VMBENCH: <sched> <metric> <value...>`; the host makes the table
# (scripts/vm/bench-table.sh). A load during which the scheduler was ejected (sched_ext no
# longer enabled, or enabled again by a later load: /sys/kernel/sched_ext/enable_seq moved, or
# the scheduler's process gone) is void: `VMBENCH: <sched> void <metric> <why>` for each metric
# it prints (run_phase in guest-lib.sh), and the table shows `void` there. Of the
# loads below, only those named in $BENCH_LOADS run (hybridland-fixed: throughput and cost only;
# hybridland-balance: ecluster only; cost: every sched_ext scheduler).
#
# The machine (topology-2p-smt-4e.toml): E-cores 0-3 in L2 clusters {0,2} and {1,3}, P-cores
# 4-5 and 6-7 (SMT pairs); the guest kernel sees 4 equal cores x 2 threads (0-1 ... 6-7).
#
#   lone       one spinning task on an idle machine: % of 20 samples (every 0.1 s) on a P-core
#   spin4      four spinners: tasks on P-cores, on E-cores per cluster; the policy puts one
#              on each P-core and one in each E cluster
#   spin6      six spinners: tasks on P-cores, P SMT pairs with both threads busy (the policy
#              fills the E-cores before a second P thread: 0)
#   ecluster   which schedulers balance E clusters: $BENCH_ECLUSTER_ROUNDS rounds, each with a
#              hog pinned on every P CPU and one on E-core h (h = 0, 1, 2, 3 in turn), then
#              one unpinned spinner: in how many rounds does it sit in the other, emptier E
#              cluster? A cluster-aware scheduler: every round. Without cluster balance: a pick
#              uniform over the three idle E-cores is right 2/3 of the time (19 or more of 20
#              by chance: 0.3%); "lowest idle CPU" is wrong whenever h = 2 (15 of 20); "a fully
#              idle kernel core first" (the kernel's cores are 0-1 and 2-3, which cut across
#              the clusters) is right half the time
#   frame      a 30 fps render loop ($BENCH_FRAME_MS ms of work a frame at the speed a CPU
#              gives it beside the hogs under the default scheduler, frame-task.c) beside
#              $BENCH_FRAME_HOGS CPU hogs for $BENCH_FRAME_SECS s: fps, stdev of the frame
#              interval, missed deadlines, % of its work samples on P-cores
#   hackbench  $BENCH_HACKBENCH, $BENCH_REPS times: seconds (the host takes the median)
#   switch     stress-ng --switch 4 (pipe ping-pong), $BENCH_SWITCH_SECS s, $BENCH_REPS times:
#              context switches per second (bogo ops/s, real time)
#   cyclictest two SCHED_OTHER threads waking every 1 ms for $BENCH_CYCLIC_SECS s beside 4 and
#              beside 8 CPU hogs (stress-ng --cpu N, running from before the measurement to
#              after it), then alone: wake-up latency p50 / p99 / max in us, from cyclictest's
#              histogram (1 us buckets up to 100 ms), and the guest's idle share meanwhile
#   cost       (every sched_ext scheduler) one more hackbench run, measured from outside: the
#              scheduler's CPU time (/proc/PID/stat), its tasks dispatched (the framework's
#              `fw user` counter in its stats lines) and its system calls by number (a
#              kernel histogram trigger on raw_syscalls:sys_enter); batches = sched_yield
#              calls, one at the end of each batch (scx_rustland_core's notify_complete); for
#              scx_hybridland builds with the stats `loop` section also the loop's own figures
#              over the run (`loop`: batches, its thread's CPU us, snapshots, us in them and in
#              the core). scx_hybridland runs without --stats in every load (as a user runs it);
#              for this one, and through the throughput and latency loads for the wake-up fast
#              path's coverage (`coverage` lines), a `--monitor 1` process of the same build
#              reads its figures (one request a second)
#   profile    (every sched_ext scheduler; only when named in $BENCH_LOADS) `stress-ng --switch
#              4` for $BENCH_SWITCH_SECS s with the kernel's BPF run-time statistics on, under
#              `perf record -a -e cpu-clock`: `VMPROF:` lines with each BPF program's calls and
#              ns a call (bpftool), the whole guest's samples by command, then by command,
#              object and symbol outside the idle task, and counts over the same window
#              (`count` lines: wake-ups, migrations, context switches, rescheduling and
#              function-call IPIs from perf stat; the scheduler's CPU ms). Samples land where interrupts
#              come back on, so code that runs with them off (the BPF callbacks under the run
#              queue lock) shows as finish_task_switch and _raw_spin_unlock_irqrestore: read
#              the BPF lines for that

HL=${HL:-/run/hl}
. "$HL/bench.env"
SCX="$HL/scx_hybridland"
TOPO="$HL/topology.toml"
FAKESYS="$HL/fakesys"
LOG=/run/sched.log
SCHED_PID=""
SCHED_SEQ=""
SPIN=""
HIST_US=100000
TRACE=/sys/kernel/tracing

say() { echo "$*"; }
. "$HL/guest-lib.sh"  # the machine (is_e, is_p, core_of, cluster_of), state, ops, cpu_of, wait_state, spin_start, spin_stop, hogs_start, hogs_stop, hogs_held, cpu_jiffies, sample_majority, stat_sum, bpf_progs, bpf_deltas
classify() {  # counts over $MAJ
  NP=0; NE=0; EA=0; EB=0; PCORES=""; DOUBLE=0
  for c in $MAJ; do
    if is_p "$c"; then
      NP=$((NP + 1)); k=$(core_of "$c")
      case " $PCORES " in *" $k "*) DOUBLE=$((DOUBLE + 1)) ;; esac
      PCORES="$PCORES $k"
    elif is_e "$c"; then
      NE=$((NE + 1))
      if [ "$(cluster_of "$c")" = A ]; then EA=$((EA + 1)); else EB=$((EB + 1)); fi
    fi
  done
}

placement() {  # placement SCHED
  spin_start 1 0
  sleep 1
  sample_majority 20 0.1
  say "VMBENCH: $1 lone p_pct=$((SAMPLES_P * 100 / SAMPLES_TOTAL)) cpus=$(echo $MAJ)"
  spin_stop; sleep 0.5

  spin_start 4
  sleep 1
  sample_majority 10 0.2; classify
  say "VMBENCH: $1 spin4 on_p=$NP e02=$EA e13=$EB cpus=$(echo $MAJ | tr ' ' ,)"
  spin_stop; sleep 0.5

  spin_start 6
  sleep 1
  sample_majority 10 0.2; classify
  say "VMBENCH: $1 spin6 on_p=$NP p_pairs_full=$DOUBLE on_e=$NE cpus=$(echo $MAJ | tr ' ' ,)"
  spin_stop; sleep 0.5
}

ecluster() {  # ecluster SCHED (see the header)
  ok=0; seen=""; r=0
  while [ $r -lt "$BENCH_ECLUSTER_ROUNDS" ]; do
    h=$((r % 4))
    hogs=""
    for m in 0x10 0x20 0x40 0x80 0x$((1 << h)); do
      taskset "$m" sh -c 'while :; do :; done' & hogs="$hogs $!"
    done
    sleep 0.5
    spin_start 1 0
    sleep 1
    sample_majority 6 0.2
    c=$(echo $MAJ)
    if is_e "$c" && [ "$(cluster_of "$c")" != "$(cluster_of "$h")" ]; then ok=$((ok + 1)); fi
    seen="$seen$h:$c,"
    spin_stop
    for p in $hogs; do kill -9 "$p" 2>/dev/null; done
    for p in $hogs; do wait "$p" 2>/dev/null; done
    sleep 0.3
    r=$((r + 1))
  done
  say "VMBENCH: $1 ecluster emptier=$ok rounds=$BENCH_ECLUSTER_ROUNDS hog:cpu=${seen%,}"
}

frame() {  # frame SCHED
  hogs_start "$BENCH_FRAME_HOGS"
  r=$("$HL/frame-task" 30 "$FRAME_ITERS" "$BENCH_FRAME_SECS" f0 2>&1)
  hogs_held "$1" frame "$BENCH_FRAME_HOGS" && say "VMBENCH: $1 frame $r"
  hogs_stop
}

# cyclic_run SCHED LABEL [NHOGS]: the histogram's p50, p99, max and sample count, and the share
# of the guest's CPU time that was idle meanwhile (idle_pct: near 0 beside 8 hogs). With NHOGS,
# the figure is void unless all NHOGS hogs still run when cyclictest ends.
cyclic_run() {
  j0=$(cpu_jiffies)
  "$HL/cyclictest" -q -m -t 2 -i 1000 -D "$BENCH_CYCLIC_SECS" -h "$HIST_US" > /run/cyclic.out 2>&1
  idle=$(echo $j0 $(cpu_jiffies) | awk '{ d = $3 - $1; print (d > 0 ? int(100 * ($4 - $2) / d + 0.5) : 0) }')
  [ -z "$3" ] || hogs_held "$1" "$2" "$3" || return 0
  awk -v mode="$1" -v label="$2" -v hmax="$HIST_US" -v idle="$idle" '
    /^[0-9]+[ \t]/ { for (t = 2; t <= NF; t++) if ($t > 0) { n[$1 + 0] += $t; total += $t } }
    /^# Max Latencies:/ { for (t = 4; t <= NF; t++) if ($t + 0 > max) max = $t + 0 }
    /^# Histogram Overflows:/ { for (t = 4; t <= NF; t++) over += $t; total += over }
    END {
      if (total == 0) { print "VMBENCH: " mode " " label " none"; exit }
      printf "VMBENCH: %s %s p50=%s p99=%s max=%d samples=%d idle_pct=%d\n", mode, label, pct(0.50), pct(0.99), max, total, idle
    }
    function pct(q,   need, acc, us) {
      need = q * total; acc = 0
      for (us = 0; us < hmax; us++) { acc += n[us]; if (acc >= need) return us }
      return ">" hmax
    }' /run/cyclic.out
}

# switch_rate: the switch test's bogo ops/s (real time) from stress-ng's --metrics-brief output.
switch_rate() { awk '/metrc:.* switch / { print $9; exit }'; }

# The fast path's coverage (scx_hybridland builds; a `--monitor 1` of the same build runs
# through the throughput and latency loads for it, one request a second): fast_mark notes the
# counts in its stats lines so far, fast_report SCHED LABEL prints those since, as
# `VMBENCH: SCHED coverage LABEL placed=N asked=N no_free=N shared_queue=N race=N class_writes=N
# pinned=N` (placed of asked - no_free: the wake-ups that found an allowed CPU free; pinned of
# no_free: taken in the kernel by the pinned rule).
FAST_KEYS="fast fast-asked fast-no-free fast-shared-queue fast-race class-writes fast-pinned"
fast_counts() { for k in $FAST_KEYS; do printf '%s ' "$(stat_sum "$k")"; done; }
fast_mark() { FAST_MARK=$(fast_counts); }
fast_report() {  # fast_report SCHED LABEL
  [ -n "$MON_PID" ] || return 0
  sleep 1.1   # the interval's stats line
  since=$(echo $FAST_MARK $(fast_counts) | awk '{
    n = split("placed asked no_free shared_queue race class_writes pinned", k, " ")
    for (i = 1; i <= n; i++) printf "%s%s=%d", (i > 1 ? " " : ""), k[i], $(i + n) - $i }')
  say "VMBENCH: $1 coverage $2 $since"
}

throughput() {  # throughput SCHED
  monitor_start "$1"
  r=0
  while [ $r -lt "$BENCH_REPS" ]; do
    fast_mark
    t=$("$HL/hackbench" $BENCH_HACKBENCH 2>&1 | awk '/^Time:/ { print $2 }')
    say "VMBENCH: $1 hackbench ${t:-failed}"
    fast_report "$1" hackbench
    fast_mark
    s=$("$HL/stress-ng" --switch 4 -t "$BENCH_SWITCH_SECS" --metrics-brief < /dev/null 2>&1 | switch_rate)
    say "VMBENCH: $1 switch ${s:-failed}"
    fast_report "$1" switch
    r=$((r + 1))
  done
  monitor_stop
}

latency() {  # latency SCHED
  monitor_start "$1"
  for nhogs in 4 8; do
    hogs_start "$nhogs"
    fast_mark
    cyclic_run "$1" "cyclic-${nhogs}hogs" "$nhogs"
    fast_report "$1" "cyclic-${nhogs}hogs"
    hogs_stop
  done
  # Alone: every wake-up finds CPUs idle (where scx_hybridland's fast path applies).
  sleep 1
  fast_mark
  cyclic_run "$1" cyclic-alone
  fast_report "$1" cyclic-alone
  monitor_stop
}

fw_user_sum() { awk '/stats:/ { for (i = 1; i <= NF; i++) if ($i ~ /^user=/) { sub("user=", "", $i); s += $i } } END { print s + 0 }' "$LOG"; }
cpu_ticks() {  # utime + stime of the whole process, in clock ticks
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || { echo 0; return; }
  set -- $line
  echo $(( ${14} + ${15} ))
}
# monitor_start SCHED: for an scx_hybridland build, a `--monitor 1` process of the same build
# appending its figures to $LOG (the lines stat_sum and fw_user_sum read), once its first line
# is there. The schedulers run without `--stats`, as a user runs them: its client thread's CPU
# would count against them in every other load. monitor_stop ends it.
MON_PID=""
monitor_start() {
  case "$1" in
    fifo | hybridland | hybridland-fixed | hybridland-balance) bin=$SCX ;;
    *) extra_of "$1" || return 0; bin=$EXTRA_BIN ;;
  esac
  "$bin" --monitor 1 >> "$LOG" 2>&1 &
  MON_PID=$!
  i=0
  while ! grep -q "stats:" "$LOG" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}
monitor_stop() {
  [ -n "$MON_PID" ] || return 0
  kill -INT "$MON_PID" 2>/dev/null
  wait "$MON_PID" 2>/dev/null
  MON_PID=""
}
# cost SCHED: one hackbench run, measured from outside the scheduler (see the header).
cost() {
  [ -n "$SCHED_PID" ] || return 0
  monitor_start "$1"
  hist=$TRACE/events/raw_syscalls/sys_enter/trigger
  filter=""
  for t in /proc/$SCHED_PID/task/*; do
    filter="${filter:+$filter || }common_pid == ${t##*/}"
  done
  trig="hist:keys=id.syscall:vals=hitcount:size=256 if $filter"
  traced=no
  if echo "$trig" > "$hist" 2>/dev/null; then traced=yes; fi
  u0=$(fw_user_sum); c0=$(cpu_ticks "$SCHED_PID"); read -r t0 _ < /proc/uptime
  lb0=$(stat_sum batches); lc0=$(stat_sum cpu-us); ls0=$(stat_sum snapshots); lt0=$(stat_sum snapshot-us); ld0=$(stat_sum decide-us)
  "$HL/hackbench" $BENCH_HACKBENCH > /dev/null 2>&1
  sleep 1.2   # one more stats line, so every dispatch of the run is counted
  u1=$(fw_user_sum); c1=$(cpu_ticks "$SCHED_PID"); read -r t1 _ < /proc/uptime
  lb1=$(stat_sum batches); lc1=$(stat_sum cpu-us); ls1=$(stat_sum snapshots); lt1=$(stat_sum snapshot-us); ld1=$(stat_sum decide-us)
  calls=""
  if [ $traced = yes ]; then
    calls=$(awk '/^\{ id:/ { gsub(/[{}:,]/, " "); name = $2; for (i = 1; i <= NF; i++) if ($i == "hitcount") print name "=" $(i + 1) }' "$TRACE/events/raw_syscalls/sys_enter/hist" | sort -t= -k2 -rn | head -n 8 | tr '\n' ' ')
    echo "!$trig" > "$hist" 2>/dev/null
  fi
  # The loop's own view (its stats' `loop` section; builds without it print nothing here).
  if [ $((lb1 - lb0)) -gt 0 ]; then
    say "VMBENCH: $1 loop batches=$((lb1 - lb0)) cpu_us=$((lc1 - lc0)) snapshots=$((ls1 - ls0)) snapshot_us=$((lt1 - lt0)) decide_us=$((ld1 - ld0))"
  fi
  monitor_stop
  say "VMBENCH: $1 cost dispatched=$((u1 - u0)) cpu_ms=$(( (c1 - c0) * 10 )) wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') syscalls: ${calls:-none (no histogram trigger)}"
}

# profile SCHED: where the time goes under the switch test (see the header).
PROF_EVENTS=sched:sched_wakeup,sched:sched_migrate_task,sched:sched_switch,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry
profile() {
  [ -n "$SCHED_PID" ] || return 0
  bstats=/proc/sys/kernel/bpf_stats_enabled
  if [ -x "$HL/bpftool" ]; then echo 1 > "$bstats"; fi
  bpf_progs > /run/bpf.0
  "$HL/stress-ng" --switch 4 -t $((BENCH_SWITCH_SECS + 2)) --metrics-brief < /dev/null > /run/switch.out 2>&1 &
  load=$!
  sleep 1
  c0=$(cpu_ticks "$SCHED_PID")
  if [ -x "$HL/perf" ]; then
    # Counts beside the samples: how many wake-ups, migrations and IPIs a switch costs.
    "$HL/perf" stat -a -x, -o /run/perf.counts -e "$PROF_EVENTS" -- sleep "$BENCH_SWITCH_SECS" > /dev/null 2>&1 &
    counts=$!
    "$HL/perf" record -N -a -e cpu-clock -F 999 -o /run/perf.data -- sleep "$BENCH_SWITCH_SECS" > /run/perf.log 2>&1
    wait "$counts"
  else
    sleep "$BENCH_SWITCH_SECS"
  fi
  c1=$(cpu_ticks "$SCHED_PID")
  wait "$load"
  bpf_progs > /run/bpf.1
  if [ -x "$HL/bpftool" ]; then echo 0 > "$bstats"; fi
  ops=$(switch_rate < /run/switch.out)
  say "VMBENCH: $1 profile switch=${ops:-failed} $(sed -n 's/.*(\([0-9]*\) samples).*/samples=\1/p' /run/perf.log 2>/dev/null | head -n 1)"
  # The BPF programs over the whole switch run (its $BENCH_SWITCH_SECS + 2 s).
  bpf_deltas /run/bpf.0 /run/bpf.1 | sed "s/^/VMPROF: $1 bpf /"
  # perf stat -x, lines: count,unit,event,...; the scheduler's own CPU time over the same window.
  [ -s /run/perf.counts ] && awk -F, -v s="$1" -v ms=$(( (c1 - c0) * 10 )) '
    $3 != "" && $1 ~ /^[0-9]+$/ { printf "VMPROF: %s count %s=%s\n", s, $3, $1 }
    END { printf "VMPROF: %s count sched_cpu_ms=%d\n", s, ms }' /run/perf.counts
  rm -f /run/perf.counts
  [ -s /run/perf.data ] || return 0
  # By command first (idle vCPUs show as swapper), then every symbol outside the idle task.
  "$HL/perf" report -i /run/perf.data --stdio --sort comm --percent-limit 0.5 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -n 12 | sed "s/^/VMPROF: $1 comm /"
  "$HL/perf" report -i /run/perf.data --stdio --sort comm,dso,sym --percent-limit 0.2 2>/dev/null |
    grep -v '^#' | grep -v '^$' | grep -v ' swapper ' | head -n 60 | sed "s/^/VMPROF: $1 sym /"
  rm -f /run/perf.data
}

# extra_of SCHED: when SCHED is one of $BENCH_EXTRA, 0 and EXTRA_LABEL, EXTRA_BIN, EXTRA_TOPO,
# EXTRA_MODE (policy, fifo, fixed) and EXTRA_KIND (this build's scheduler of that mode) set.
extra_of() {
  for e in ${BENCH_EXTRA:-}; do
    [ "${e%%=*}" = "$1" ] || continue
    e=${e#*=}
    EXTRA_LABEL=${e%%:*} EXTRA_MODE=${e#*:}
    EXTRA_BIN="$HL/scx_hybridland-$EXTRA_LABEL" EXTRA_TOPO="$HL/topology-$EXTRA_LABEL.toml"
    case "$EXTRA_MODE" in fifo) EXTRA_KIND=fifo ;; fixed) EXTRA_KIND=hybridland-fixed ;; *) EXTRA_KIND=hybridland ;; esac
    return 0
  done
  return 1
}

kind_flag() {  # kind_flag KIND: the flag that runs this build's scheduler as KIND (none for hybridland)
  case "$1" in
    fifo) echo --fifo ;;
    hybridland-fixed) echo --fixed-slice ;;
    hybridland-balance) echo "--cluster-balance on" ;;
  esac
}

start_sched() {  # start_sched SCHED -> 0 when it is in charge (or it is the default)
  : > "$LOG"
  SCHED_PID=""
  case "$1" in
    default) return 0 ;;
    fifo | hybridland | hybridland-fixed | hybridland-balance)
      # shellcheck disable=SC2046,SC2086
      "$SCX" --topology "$TOPO" $(kind_flag "$1") $PEER_ARGS_hybridland >> "$LOG" 2>&1 &
      ;;
    *)
      if extra_of "$1"; then
        eval "args=\${PEER_ARGS_$EXTRA_LABEL}"
        # shellcheck disable=SC2046,SC2086
        "$EXTRA_BIN" --topology "$EXTRA_TOPO" $(kind_flag "$EXTRA_KIND") $args >> "$LOG" 2>&1 &
      else
        [ -x "$HL/$1" ] || { say "VMBENCH: $1 error not built (see the host's build log)"; return 1; }
        eval "args=\${PEER_ARGS_$1}"
        # shellcheck disable=SC2086
        SCX_SYSFS_PREFIX="$FAKESYS" "$HL/$1" $args >> "$LOG" 2>&1 &
      fi
      ;;
  esac
  SCHED_PID=$!
  if wait_state enabled 90; then
    SCHED_SEQ=$(enable_seq)
    sleep 1
    say "--- $1: ops $(ops); its startup log:"
    head -n "${BENCH_STARTUP_LINES:-25}" "$LOG" | grep -v "stats:" | sed 's/^/    /'
    return 0
  fi
  say "VMBENCH: $1 error did not load: $(tail -n 5 "$LOG" | tr '\n' ' ')"
  kill -9 "$SCHED_PID" 2>/dev/null; wait "$SCHED_PID" 2>/dev/null; SCHED_PID=""
  return 1
}

stop_sched() {  # stop_sched SCHED
  [ -n "$SCHED_PID" ] || return 0
  if [ "$(state)" != enabled ]; then
    say "VMBENCH: $1 error no longer loaded (state $(state)): $(grep -i "error\|eject\|stall" "$LOG" | head -n 3 | tr '\n' ' ')"
    ejected=1
  else
    ejected=0
  fi
  kill -INT "$SCHED_PID" 2>/dev/null
  i=0
  while kill -0 "$SCHED_PID" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$SCHED_PID" 2>/dev/null
  wait "$SCHED_PID"
  SCHED_PID=""
  # The kernel's dump of its state at the ejection (with --exit-dump-len), as the scheduler
  # printed it on its way out.
  if [ "$ejected" = 1 ] && grep -q "^DEBUG DUMP" "$LOG"; then
    say "--- $1: the kernel's dump at the ejection:"
    sed -n '/^DEBUG DUMP/,$p' "$LOG" | head -n 400 | sed 's/^/    /'
  fi
  wait_state disabled 20 || say "VMBENCH: $1 error sched_ext state $(state) after stopping it"
}

say "guest kernel $(uname -r), $(nproc) CPUs, SMT siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
say "schedulers: $BENCH_SCHEDS"
say "loads: $BENCH_LOADS"
# libbpf resolves the peers' `__kconfig` externs (CONFIG_PREEMPT_RCU; scx_lavd also
# CONFIG_NO_HZ_IDLE, CONFIG_NR_CPUS, CONFIG_PREEMPT_RT, CONFIG_X86_64) from /boot/config-$(uname
# -r) or /proc/config.gz; without either they refuse to load (EINVAL). The cloud kernel's deb
# that fetch-kernel.sh unpacks carries no config, so the values are read off the running kernel:
# an rcu_preempt kthread means PREEMPT_RCU, kernel_max is NR_CPUS - 1, /sys/kernel/realtime
# exists only on PREEMPT_RT; NO_HZ_IDLE is Debian's setting for this kernel.
mkdir -p /boot
{
  grep -qs rcu_preempt /proc/[0-9]*/comm && echo CONFIG_PREEMPT_RCU=y
  echo "CONFIG_NR_CPUS=$(( $(cat /sys/devices/system/cpu/kernel_max) + 1 ))"
  [ -e /sys/kernel/realtime ] && echo CONFIG_PREEMPT_RT=y
  echo CONFIG_NO_HZ_IDLE=y
  [ "$(uname -m)" = x86_64 ] && echo CONFIG_X86_64=y
} > "/boot/config-$(uname -r)"
say "kernel config for libbpf: $(tr '\n' ' ' < "/boot/config-$(uname -r)")"
# Device interrupts to the P-cores, as guest-checks.sh does: an interrupt burst on CPU 0 would
# move the placement loads' tasks for every scheduler alike.
for f in /proc/irq/*/smp_affinity; do echo f0 > "$f" 2>/dev/null; done
# The frame task's work is sized at the speed a CPU gives it beside the load's hogs (the
# default scheduler, one second): the guest's vCPUs take turns on the host's cores, and
# sized on an idle CPU a frame took two to three periods beside 6 hogs, so the task never
# slept and was one more hog under every scheduler.
case " $BENCH_LOADS " in *" frame "*)
  idle_rate=$("$HL/frame-task" calibrate)
  hogs_start "$BENCH_FRAME_HOGS"
  busy_rate=$("$HL/frame-task" calibrate 1000)
  hogs_stop
  FRAME_ITERS=$(( busy_rate * BENCH_FRAME_MS ))
  say "frame task: $BENCH_FRAME_MS ms of work a frame beside $BENCH_FRAME_HOGS hogs ($FRAME_ITERS iterations; $busy_rate a ms there, $idle_rate on an idle CPU)"
  ;;
esac
[ "$(state)" = disabled ] || say "VMBENCH: default error sched_ext state is $(state), not disabled"
# The functions share the shell's globals (s, r, t0 ...): the loop's own names are not reused.
bench_t0=$(date +%s)
for sched_name in $BENCH_SCHEDS; do
  sched_t0=$(date +%s)
  kind=$sched_name
  if extra_of "$sched_name"; then kind=$EXTRA_KIND; fi
  if start_sched "$sched_name"; then
    case "$kind" in
      hybridland-fixed) loads="throughput cost profile" ;;
      hybridland-balance) loads="ecluster" ;;
      *) loads="placement ecluster frame throughput latency cost profile" ;;
    esac
    for load in $loads; do
      case " $BENCH_LOADS " in *" $load "*) run_phase "$sched_name" "$load" ;; esac
    done
    stop_sched "$sched_name"
  fi
  say "--- $sched_name took $(( $(date +%s) - sched_t0 ))s"
done
say "guest bench took $(( $(date +%s) - bench_t0 ))s"
dmesg | grep -i "sched_ext" | tail -n 12
exit 0
