# Helpers the guest scripts share (busybox sh; sourced from $HL, where vm_initramfs_begin in
# scripts/vm/lib.sh puts this file beside the guest script).

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
