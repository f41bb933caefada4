# Helpers the guest scripts share (busybox sh; sourced from $HL, where vm_initramfs_begin in
# scripts/vm/lib.sh puts this file beside the guest script).

# The VM's machine (topology-2p-smt-4e.toml) as the checks and benches read CPU ids: E-cores
# 0-3 in L2 clusters {0,2} (A) and {1,3} (B), P-cores 4-7; the guest kernel's own cores are the
# SMT pairs 0-1 ... 6-7.
is_e() { [ "$1" -ge 0 ] && [ "$1" -le 3 ]; }
is_p() { [ "$1" -ge 4 ] && [ "$1" -le 7 ]; }
core_of() { echo $(( $1 / 2 )); }
cluster_of() { if [ $(( $1 % 2 )) -eq 0 ]; then echo A; else echo B; fi; }

# The kernel's sched_ext directory (a test points it at a fake one).
SCX_DIR=${SCX_DIR:-/sys/kernel/sched_ext}
state() { cat "$SCX_DIR/state" 2>/dev/null || echo missing; }
ops() { cat "$SCX_DIR/root/ops" 2>/dev/null || echo none; }
# How many times a BPF scheduler has been loaded since boot ("none" on kernels without it):
# a scheduler ejected and loaded again (a restart) is not the one a phase began with.
enable_seq() { cat "$SCX_DIR/enable_seq" 2>/dev/null || echo none; }

in_charge() {  # in_charge PID SEQ: whether scheduler PID, loaded as enable_seq SEQ, still is; else why in $WHY
  WHY=""
  s_now=$(state)
  if [ "$s_now" != enabled ]; then WHY="sched_ext state $s_now (ejected)"
  elif [ "$(enable_seq)" != "$2" ]; then WHY="sched_ext enable_seq $2 -> $(enable_seq) (ejected and loaded again)"
  elif ! kill -0 "$1" 2>/dev/null; then WHY="the scheduler's process is gone"
  fi
  [ -z "$WHY" ]
}

cpu_of() {  # cpu_of PID: the CPU it last ran on (/proc/PID/stat field 39; comm has no spaces here), -1 if gone
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || { echo -1; return; }
  set -- $line
  echo "${39}"
}

runs_of() {  # runs_of PID: how many times it got a CPU (/proc/PID/schedstat field 3), -1 if unknown
  read -r _ _ n < "/proc/$1/schedstat" 2>/dev/null || { echo -1; return; }
  echo "${n:--1}"
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
spin_stop() { kill_all $SPIN; SPIN=""; }
# hogs_start N: N CPU hogs (stress-ng --cpu N) that run until hogs_stop, started before it
# returns (all N workers there, and one second more). A load measured beside them ends them
# itself; their 600 s timeout only guards a load that never does (a timeout sized to the load
# left the end of a measurement in this slow guest without them). hogs_up: how many are
# running (children of stress-ng, not exited).
hogs_start() {
  "$HL/stress-ng" --cpu "$1" -t 600 > /dev/null 2>&1 &
  HOGS=$!
  i=0
  while [ "$(hogs_up)" -lt "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 1
}
hogs_up() {
  n=0
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    set -- ${line##*) }  # after the command name, which may hold spaces: state, parent, ...
    [ "$2" = "$HOGS" ] && [ "$1" != Z ] && n=$((n + 1))
  done
  echo $n
}
hogs_stop() { kill -TERM "$HOGS" 2>/dev/null; wait "$HOGS" 2>/dev/null; HOGS=""; }
# hogs_held SCHED LABEL N: whether all N hogs still run; if not, the figure LABEL is void
# (`VMBENCH: SCHED void LABEL ...`, as run_phase prints it).
hogs_held() {
  up=$(hogs_up)
  [ "$up" -ge "$3" ] && return 0
  echo "VMBENCH: $1 void $2 only $up of $3 hogs ran to its end"
  return 1
}

# cpu_jiffies: the whole guest's CPU time and its idle part so far (the first line of /proc/stat).
cpu_jiffies() {
  read -r _ u n s i w q sq st _ < /proc/stat
  echo "$((u + n + s + i + w + q + sq + st)) $((i + w))"
}

kill_all() {  # kill_all PID...: SIGKILL each, then reap each
  for p in "$@"; do kill -9 "$p" 2>/dev/null; done
  for p in "$@"; do wait "$p" 2>/dev/null; done
}

# sample_majority SAMPLES [INTERVAL]: for each task in $SPIN, the CPU it was seen on most often, into
# $MAJ (space-separated, in $SPIN order); also $SAMPLES_P / $SAMPLES_TOTAL over all tasks. Task
# PID's samples stay in /run/samples.PID until the next call.
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
    MAJ="$MAJ $(sort "/run/samples.$p" | uniq -c | sort -rn | head -n1 | awk '{print $2}')"
  done
}

# guest-bench.sh's phases: each load under a sched_ext scheduler counts only if the scheduler
# it began with is still in charge at its end (the kernel's watchdog or a sysrq-S may eject
# it mid-load, after which the figures are the default scheduler's). The metrics a load prints:
bench_metrics() {
  case "$1" in
    placement) echo lone spin4 spin6 ;;
    throughput) echo hackbench switch ;;
    latency) echo cyclic-4hogs cyclic-8hogs cyclic-alone ;;
    cost) echo cost loop ;;
    *) echo "$1" ;;
  esac
}
run_phase() {  # run_phase SCHED LOAD: runs `LOAD SCHED`; prints `VMBENCH: SCHED void METRIC why` for each of its metrics when it does not count
  if [ "$1" = default ]; then "$2" "$1"; return 0; fi
  if in_charge "$SCHED_PID" "$SCHED_SEQ"; then
    "$2" "$1"
    in_charge "$SCHED_PID" "$SCHED_SEQ" && return 0
  else
    WHY="not in charge when the load began: $WHY"
  fi
  for m in $(bench_metrics "$2"); do echo "VMBENCH: $1 void $m $WHY"; done
  return 1
}

# stat_sum KEY: the sum of KEY=N over the scheduler's stats lines in $LOG (scx_hybridland's
# --stats 1).
stat_sum() { awk -v k="$1=" '/stats:/ { for (i = 1; i <= NF; i++) if (index($i, k) == 1) { sub(k, "", $i); s += $i } } END { print s + 0 }' "$LOG"; }

# bpf_progs: every loaded BPF program as `id name run_time_ns run_cnt`, from `bpftool prog show`
# (the two counts are there while kernel.bpf_stats_enabled is 1; 0 otherwise).
bpf_progs() {
  "$HL/bpftool" prog show 2>/dev/null | awk '/^[0-9]+: / {
    id = $1; name = "?"; t = 0; c = 0
    for (i = 2; i < NF; i++) { if ($i == "name") name = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
    print id, name, t, c }'
}
# bpf_deltas BEFORE AFTER: per program that ran between two bpf_progs readings, sorted by name,
# `name calls=N ns_per_call=N total_ms=N.N` (a program loaded in between counts from zero).
bpf_deltas() {
  awk 'NR == FNR { t0[$1] = $3; c0[$1] = $4; next }
    { c = $4 - c0[$1]; if (c > 0) printf "%s calls=%d ns_per_call=%d total_ms=%.1f\n", $2, c, ($3 - t0[$1]) / c, ($3 - t0[$1]) / 1e6 }' \
    "$1" "$2" | sort
}
