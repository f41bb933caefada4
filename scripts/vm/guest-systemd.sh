#!/bin/sh
# Runs in the VM of scripts/vm-systemd.sh as a oneshot service under systemd (PID 1): starts
# scx_hybridland.service (the hardened unit, as shipped) with systemctl and checks it.
# Reports `VMCHECK: PASS|FAIL name: detail` lines; the exit status goes to /dev/hvc1.
. "$HL/guest-lib.sh"
rc=0
pass() { echo "VMCHECK: PASS $1: $2"; }
fail() { echo "VMCHECK: FAIL $1: $2"; rc=1; }
show() { systemctl show scx_hybridland -p ActiveState -p SubState -p NRestarts -p ExecMainStatus --value | tr '\n' ' '; }
finish() {
  echo "--- systemctl status ---"
  systemctl status --no-pager -l scx_hybridland 2>&1 | tail -n 20
  echo "--- the scheduler's log (last 30 lines) ---"
  tail -n 30 /run/hl-scx.log 2>/dev/null
  echo "$rc" > /dev/hvc1
  sync
  systemctl poweroff --force --force
}

echo "guest: systemd $(systemctl --version | sed -n 1p), state $(state)"
cua=/proc/sys/vm/compact_unevictable_allowed
# A Debian system has /boot/config-$(uname -r), where libbpf reads the `__kconfig` externs of
# the scheduler's BPF objects (without it they refuse to load); the cloud kernel's package
# carries none, so, as guest-bench.sh does, the values are read off the running kernel. Under
# the unit /boot is read-only and readable.
mkdir -p /boot
{
  grep -qs rcu_preempt /proc/[0-9]*/comm && echo CONFIG_PREEMPT_RCU=y
  echo "CONFIG_NR_CPUS=$(( $(cat /sys/devices/system/cpu/kernel_max) + 1 ))"
  [ -e /sys/kernel/realtime ] && echo CONFIG_PREEMPT_RT=y
  [ "$(uname -m)" = x86_64 ] && echo CONFIG_X86_64=y
} > "/boot/config-$(uname -r)"
cua_before=$(cat $cua)
if systemctl start scx_hybridland; then
  pass unit-started "systemctl start returned 0 ($(show))"
else
  fail unit-started "systemctl start failed ($(show))"
fi
SCHED_PID=$(systemctl show -p MainPID --value scx_hybridland)
if wait_state enabled 60 && ops | grep '^hybridland' >/dev/null; then
  pass loaded "state $(state), ops $(ops), pid $SCHED_PID"
else
  fail loaded "state $(state), ops $(ops) ($(show))"
  finish
fi
sleep 2
# scx_rustland_core sets it to 0 while it runs: the one /proc/sys file the unit leaves writable.
cua_running=$(cat $cua)
if [ -f /run/scx_hybridland/cluster_balance ]; then
  pass control-file "/run/scx_hybridland/cluster_balance holds $(cat /run/scx_hybridland/cluster_balance)"
else
  fail control-file "no /run/scx_hybridland/cluster_balance"
fi
mode=$(ls -l /run/scx/root/stats 2>/dev/null | cut -c1-10)
if [ "$mode" = "srw-------" ]; then
  pass stats-socket "/run/scx/root/stats is $mode"
else
  fail stats-socket "/run/scx/root/stats is '${mode:-missing}'"
fi
# A short load: eight spinners and a burst of short-lived processes.
pids=""
for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & pids="$pids $!"; done
i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i + 1)); done
sleep 5
kill $pids 2>/dev/null
if [ "$(state)" = enabled ] && [ "$(systemctl show -p NRestarts --value scx_hybridland)" = 0 ]; then
  pass stays-loaded "state $(state) after the load, no restart ($(show))"
else
  fail stays-loaded "state $(state) ($(show))"
fi
systemctl stop scx_hybridland
if wait_state disabled 30; then
  pass unit-stopped "systemctl stop: state $(state) ($(show))"
else
  fail unit-stopped "state $(state) after systemctl stop ($(show))"
fi
cua_after=$(cat $cua)
if [ "$cua_before" = 1 ] && [ "$cua_running" = 0 ] && [ "$cua_after" = 1 ]; then
  pass vm-tunable "compact_unevictable_allowed 1 -> 0 while loaded -> 1 after"
else
  fail vm-tunable "compact_unevictable_allowed $cua_before -> $cua_running -> $cua_after (want 1 -> 0 -> 1)"
fi
finish
