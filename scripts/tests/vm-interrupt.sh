#!/usr/bin/env bash
# Checks that a VM script stops its VM when interrupted: each case starts scripts/vm-check.sh,
# scripts/vm-record.sh or scripts/vm-systemd.sh with a stub qemu-system-x86_64 first on PATH
# (it notes its pid, its parent's (the `timeout` around it) and its initrd, then sleeps),
# waits until the stub runs, sends the signal, and requires that the script exits with 128 + the signal's number, that
# neither the stub nor the timeout is left, and that the script's work directory is gone.
# No kernel is booted: HYBRIDLAND_KERNEL names an empty file, and the guest binaries are stubs.
#
# Cases: SIGINT to the script, SIGTERM to the script, a Ctrl-C at a terminal (SIGINT to the
# script's whole process group, which does not include timeout's group), and SIGTERM with a
# qemu that ignores SIGTERM (killed after the grace period).
#
#   scripts/tests/vm-interrupt.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
WORK=$(mktemp -d)
failures=0
fail() { echo "vm-interrupt test: FAIL: $*" >&2; failures=$((failures + 1)); }
# Anything a failed case left behind: ended by the pids the stub wrote.
leftovers=()
cleanup() {
  local p
  for p in "${leftovers[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/bin"
cat >"$WORK/bin/qemu-system-x86_64" <<'EOF'
#!/usr/bin/env bash
# Stub qemu: note who we are, then sleep far longer than any case waits.
initrd=""
while (($#)); do [[ "$1" == -initrd ]] && initrd=$2; shift; done
[[ -n "${STUB_IGNORE_TERM:-}" ]] && trap '' TERM
echo "$$ $PPID $initrd" >"$STUB_STATE.tmp" && mv "$STUB_STATE.tmp" "$STUB_STATE"
exec sleep 1000
EOF
# vm_prepare wants a static busybox (it asks `file`), vm-check.sh a hackbench.
cat >"$WORK/bin/file" <<'EOF'
#!/bin/sh
echo "$2: ELF 64-bit LSB executable, x86-64, statically linked"
EOF
# Real executables (ldd must read them), which do nothing.
printf '#!/bin/sh\nexit 0\n' >"$WORK/bin/busybox"
cp "$(type -P true)" "$WORK/bin/hackbench"
# vm-check.sh also takes the example policy's two binaries from beside the scheduler.
for b in scx_hybridland scx_my_policy my-policy-sim; do cp "$(type -P true)" "$WORK/$b"; done
chmod +x "$WORK/bin/"* "$WORK/scx_hybridland" "$WORK/scx_my_policy" "$WORK/my-policy-sim"
: >"$WORK/vmlinuz"

alive() {  # alive PID: exists and is not a zombie
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
  [[ -n "$state" && "$state" != Z ]]
}

# run_case NAME SCRIPT SIGNAL TARGET [ignore-term]; TARGET: "script" or "group" (Ctrl-C).
run_case() {
  local name=$1 script=$2 sig=$3 target=$4 ignore=${5:-} state=$WORK/$1.state
  local log=$WORK/$1.log pid i rc=0 before=$failures stub tmo initrd want arg=$WORK/scx_hybridland
  # vm-record.sh's argument is where the trace would go.
  [[ $script == *vm-record.sh ]] && arg=$WORK/$name.trace
  rm -f "$state"
  # setsid: the script leads a process group of its own, as a terminal's foreground job does.
  # env --default-signal: a job started with & here has SIGINT ignored, which a shell cannot
  # trap; a script run from a terminal has it at its default, as here.
  STUB_STATE=$state STUB_IGNORE_TERM=$ignore PATH="$WORK/bin:$PATH" \
    HYBRIDLAND_KERNEL=$WORK/vmlinuz HYBRIDLAND_VM_TIMEOUT=1000 \
    HYBRIDLAND_VM_CONSOLE=$WORK/$name.console \
    setsid env --default-signal=INT "$script" "$arg" >"$log" 2>&1 </dev/null &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    [[ -s "$state" ]] && break
    alive "$pid" || break
    sleep 0.1
  done
  if [[ ! -s "$state" ]]; then
    fail "$name: the stub qemu never started; log:"; sed 's/^/    /' "$log" >&2
    kill -KILL -- "-$pid" 2>/dev/null || true
    return
  fi
  read -r stub tmo initrd <"$state"
  leftovers+=("$stub" "$tmo")
  if [[ $target == group ]]; then kill -"$sig" -- "-$pid"; else kill -"$sig" "$pid"; fi
  # A bound for a hang (the stub would sleep 1000 s), not a speed figure.
  for ((i = 0; i < 300; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    fail "$name: the script still runs 30 s after SIG$sig"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  wait "$pid" || rc=$?
  want=$((128 + $(kill -l "$sig")))
  [[ $rc == "$want" ]] || fail "$name: exit status $rc, expected $want"
  for ((i = 0; i < 50; i++)); do
    alive "$stub" || alive "$tmo" || break
    sleep 0.1
  done
  alive "$stub" && fail "$name: the stub qemu (pid $stub) is still running"
  alive "$tmo" && fail "$name: the timeout around it (pid $tmo) is still running"
  [[ -e "$(dirname "$initrd")" ]] && fail "$name: work directory $(dirname "$initrd") left"
  grep -E "SIG$sig: stopping the VM" "$log" >/dev/null || fail "$name: no 'stopping the VM' line"
  ((failures > before)) || echo "vm-interrupt test: $name: exit $rc, stub and timeout gone" >&2
}

run_case check-int scripts/vm-check.sh INT script
run_case check-term scripts/vm-check.sh TERM script
run_case check-ctrl-c scripts/vm-check.sh INT group
run_case check-term-stubborn-qemu scripts/vm-check.sh TERM script ignore
run_case record-term scripts/vm-record.sh TERM script
run_case systemd-int scripts/vm-systemd.sh INT script

if ((failures)); then
  echo "vm-interrupt test: $failures failure(s)" >&2
  exit 1
fi
echo "vm-interrupt test: all cases passed"
