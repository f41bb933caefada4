#!/usr/bin/env bash
# scripts/vm-storm.sh: an unprivileged thread storm beside scx_hybridland in the project's VM
# (the machine of scripts/vm-check.sh), with kernel.pid_max 4194304: 90 s of threads created
# and joined as fast as one process can (scripts/vm/thread-storm.c, run as nobody), once plain
# and once with --record. Passes when the scheduler is still loaded at the end, was not
# ejected, kept its task table within --max-tasks, and wrote the recording
# (scripts/vm/guest-storm.sh).
#
# Usage: scripts/vm-storm.sh [path/to/scx_hybridland]
# Environment: HYBRIDLAND_KERNEL, HYBRIDLAND_VM_TIMEOUT (default 900), HYBRIDLAND_VM_CONSOLE,
# STORM_SECS (default 90) as for vm-check.sh. Needs gcc and a static libc (libc6-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-storm: $*" >&2; }
die() { log "$*"; exit 1; }

BIN=${1:-${HYBRIDLAND_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/scx_hybridland}}
[[ -x "$BIN" ]] || die "no scx_hybridland at $BIN (cargo build --release -p scx_hybridland)"
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-900}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/storm-console.log}

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare

VM_GUEST_SCRIPT=guest-storm.sh
vm_initramfs_begin
copy_with_libs "$BIN"
cp "$REPO/scripts/vm/topology-2p-smt-4e.toml" "$IR/hl/topology.toml"
cp "$REPO/scripts/vm/guest-storm.sh" "$IR/hl/guest-storm.sh"
if [[ -n "${STORM_SECS:-}" ]]; then sed -i "s/^SECS=.*/SECS=$STORM_SECS/" "$IR/hl/guest-storm.sh"; fi
gcc -O2 -static -pthread -o "$IR/hl/thread-storm" "$REPO/scripts/vm/thread-storm.c" ||
  die "could not build the thread storm (gcc and libc6-dev needed)"
OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"

failed=0
echo
echo "==== vm-storm summary ===="
vm_verdicts "$OUT" storm storm-record || failed=1
vm_guest_ok "$CONSOLE" 30 || failed=1
if (( failed )); then echo "vm-storm: FAILED"; exit 1; fi
echo "vm-storm: passed"
