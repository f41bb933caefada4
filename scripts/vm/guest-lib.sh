# Helpers the guest scripts share (busybox sh; sourced from $HL, where vm_initramfs_begin in
# scripts/vm/lib.sh puts this file beside the guest script).

# The VM's machine (topology-2p-smt-4e.toml) as the checks and benches read CPU ids: E-cores
# 0-3 in L2 clusters {0,2} (A) and {1,3} (B), P-cores 4-7; the guest kernel's own cores are the
# SMT pairs 0-1 ... 6-7.
is_e() { [ "$1" -ge 0 ] && [ "$1" -le 3 ]; }
is_p() { [ "$1" -ge 4 ] && [ "$1" -le 7 ]; }
core_of() { echo $(( $1 / 2 )); }
cluster_of() { if [ $(( $1 % 2 )) -eq 0 ]; then echo A; else echo B; fi; }

state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo missing; }
ops() { cat /sys/kernel/sched_ext/root/ops 2>/dev/null || echo none; }

cpu_of() {  # cpu_of PID: the CPU it last ran on (/proc/PID/stat field 39; comm has no spaces here), -1 if gone
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
