#!/usr/bin/env bash
# scripts/vm-check.sh: load scx_hybridland into a real sched_ext kernel and check it works.
#
# Boots Debian unstable's cloud kernel (CONFIG_SCHED_CLASS_EXT=y, resolved at run time and
# cached in .vm-cache/) under qemu software emulation with SMT (-smp 8,sockets=1,cores=4,
# threads=2), and inside it runs scx_hybridland with scripts/vm/topology-2p-smt-4e.toml (two
# P-cores with SMT, four E-cores in two clusters that straddle the guest kernel's cores; numbered
# little-first) through
# scripts/vm/guest-checks.sh. Four placement checks (a lone task stuck on an E-core goes back
# to a P-core when the P-cores free up; so do workers, two threads of one process or two
# processes, that woke lightly while the P-cores were busy (their wake-ups placed by the fast
# path) and then spin, and the classes the core gives the threads reach the kernel
# (thread-classes); --primary-domain powersave keeps four tasks on E-cores;
# with cluster balance switched on at run time a task leaves the loaded E cluster, and with it off it stays) run under the policy, under `scx_hybridland --fifo`
# and under the kernel's default scheduler in the same VM: each must pass with the policy and
# fail with both controls (`<check>-discriminates`). A task pinned to a busy CPU is put first
# there in the kernel by the pinned rule, and by nothing under --fifo (pinned-busy). Then:
# `scx_hybridland --monitor 1` beside the scheduler prints live figures (and none with no
# scheduler loaded); a thread of ours that holds a lock the loop waits for is run by the kernel,
# not left in the loop's queue (own-rescue); SIGINT unloads; a kernel ejection
# (sysrq-S) is reported with exit status 2; a hackbench + short-task stress; SIGKILL mid-load
# (workers shown running at the kill) leaves a working system. Prints the placements, a check x
# scheduler table and stats, and exits non-zero if any check fails or does not report.
#
# The guest needs no shared filesystem: the binary, its libraries, hackbench, the topology file
# and the checks go into the initramfs and are copied to a tmpfs (a user-space scheduler must
# never page-fault on a FUSE/virtiofs page: the guest would hang).
#
# Other policies: spread and capacity-blind (--policy) and the example crate's scx_my_policy
# (examples/my-policy, --policy little-first) load and dispatch (policies-load); little-first
# moves a light frame task off an idle P-core to an E-core in at least 28 of 32 one-sample
# trials, which --fifo and the default scheduler do in at most 23 (little-first-light,
# -discriminates). up-at (the example's second policy, with `--set heavy_util=600`) moves a
# lone spinner from an E-core up to a P-core in at least 6 of 8 trials, its up_migration asked
# by the core's scan, which the core's timer runs on a quiet machine; with move_up=off, after
# heavy_util is set to 1024 through its control file live, under --fifo and the default it
# moves in at most 2 (up-at-moves, -discriminates). graduate (the third) counts each task's
# placements in the task's own value: a probe that sleeps and wakes goes from E-cores to
# P-cores after 8, and a new task given the old one's pid starts over (task-value,
# -discriminates); in 150 rounds of a graduated task reaped and its pid given at once to a new
# one (often before the old one's exit reaches the loop), at least 100 such rounds and no new
# task that read the old one's count (pid-reuse, -discriminates). A loaded run recorded
# with --record replays its decision log through the same core, every dispatch identical
# (decision-replay), for hybridland and for little-first.
#
# Usage: scripts/vm-check.sh [path/to/scx_hybridland]
# Environment:
#   HYBRIDLAND_BIN         the binary (default: $CARGO_TARGET_DIR or target/, release build)
#   HYBRIDLAND_MY_BIN      the example's scx_my_policy (default: beside the binary)
#   HYBRIDLAND_KERNEL      use this vmlinuz instead of fetching the sid cloud kernel
#   HYBRIDLAND_VM_TIMEOUT  seconds before the VM is killed (default 1800: the three schedulers'
#                          placement runs take 5 minutes of emulation on an idle 2-core host)
#   HYBRIDLAND_VM_CONSOLE  file for the guest's serial console (default .vm-cache/console.log)
# Needs: qemu-system-x86, busybox-static, cpio, and apt (for the kernel); run
# scripts/install-scx-deps.sh first on a fresh machine. Root is not needed for qemu itself, but
# fetching the kernel through apt is done as root.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-check: $*" >&2; }
die() { log "$*"; exit 1; }

BIN=${1:-${HYBRIDLAND_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/scx_hybridland}}
[[ -x "$BIN" ]] || die "no scx_hybridland at $BIN (cargo build --release -p scx_hybridland)"
# The example crate's live binary (examples/my-policy), its policy beside the built-in ones.
MY_BIN=${HYBRIDLAND_MY_BIN:-$(dirname "$BIN")/scx_my_policy}
[[ -x "$MY_BIN" ]] || die "no scx_my_policy at $MY_BIN (cargo build --release -p my-policy --features live)"
# Its hybrid-sim, which replays decision logs in the guest (it knows little-first too).
MY_SIM=${HYBRIDLAND_MY_SIM:-$(dirname "$MY_BIN")/my-policy-sim}
[[ -x "$MY_SIM" ]] || die "no my-policy-sim at $MY_SIM (cargo build --release -p my-policy --features live)"
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-1800}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/console.log}

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare

# --- initramfs: busybox, /init, and the payload with every shared library it needs ----------
VM_GUEST_SCRIPT=guest-checks.sh
vm_initramfs_begin
copy_with_libs "$BIN"
copy_with_libs "$MY_BIN"
copy_with_libs "$MY_SIM"
gcc -O2 -static -o "$IR/hl/frame-task" "$REPO/scripts/vm/frame-task.c" -lm || die "could not build the frame task"
gcc -O2 -static -o "$IR/hl/wake-probe" "$REPO/scripts/vm/wake-probe.c" || die "could not build the wake probe"
gcc -O2 -static -o "$IR/hl/pipe-pair" "$REPO/scripts/vm/pipe-pair.c" || die "could not build the pipe pair"
gcc -O2 -static -o "$IR/hl/turns-busy" "$REPO/scripts/vm/turns-busy.c" -lpthread || die "could not build the turns-busy workers"
gcc -O2 -static -o "$IR/hl/pid-reuse" "$REPO/scripts/vm/pid-reuse.c" || die "could not build the pid-reuse probe"
HACKBENCH=$(command -v hackbench || true)
[[ -n "$HACKBENCH" ]] || die "hackbench not installed (package rt-tests; scripts/install-scx-deps.sh installs it)"
copy_with_libs "$HACKBENCH"
cp "$REPO/scripts/vm/topology-2p-smt-4e.toml" "$IR/hl/topology.toml"
for f in guest-checks guest-checks-placement guest-checks-policies guest-checks-author guest-checks-lifecycle; do
  cp "$REPO/scripts/vm/$f.sh" "$IR/hl/$f.sh"
done
chmod +x "$IR/hl/guest-checks.sh"

# --- boot ------------------------------------------------------------------------------------
OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"

# --- verdict -----------------------------------------------------------------------------------
PLACEMENT=(stuck-lone-task turns-busy powersave-on-e knob-runtime)
EXPECTED=(loaded watchdog-timeout fast-wake pinned-busy thread-classes)
for c in "${PLACEMENT[@]}"; do EXPECTED+=("$c" "$c-discriminates"); done
EXPECTED+=(policies-load little-first-light little-first-light-discriminates decision-replay)
EXPECTED+=(up-at-moves up-at-moves-discriminates task-value task-value-discriminates pid-reuse pid-reuse-discriminates)
EXPECTED+=(monitor task-events own-rescue sigint-disables control-file-removed ejection-reported record-at-ejection record-wakes stress sigkill-recovers no-ejection)
failed=0
echo
echo "==== vm-check summary ===="
grep '^placement:' "$OUT" | sed 's/^/  /' || true
awk '/--- placement checks: scheduler x check ---/ {on = 1} on && /^(check|stuck|turns|powersave|knob)/ {print "  " $0} /^knob-runtime / {on = 0}' "$OUT" || true
vm_verdicts "$OUT" "${EXPECTED[@]}" || failed=1
if grep -q '^VMCHECK: FAIL' "$OUT"; then failed=1; fi
vm_guest_ok "$CONSOLE" 30 || failed=1
if (( failed )); then echo "vm-check: FAILED"; exit 1; fi
echo "vm-check: all ${#EXPECTED[@]} checks passed"
