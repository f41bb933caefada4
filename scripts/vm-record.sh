#!/usr/bin/env bash
# Records a small workload's scheduler events with the kernel's tracefs in the project's VM
# (the machine of scripts/vm-check.sh: 8 vCPUs as 4 cores x 2 threads, Debian's sid cloud
# kernel under qemu) and writes the trace text, as /sys/kernel/tracing/trace prints it, to
# OUT (default examples/recordings/vm-busybox.trace). `hybrid-sim import ftrace OUT
# --topology scripts/vm/topology-2p-smt-4e.toml` turns it into a trace.
#
#   scripts/vm-record.sh [OUT]
#
# HYBRIDLAND_KERNEL=/path/to/vmlinuz uses a kernel you already have (else it is fetched as
# for vm-check.sh); HYBRIDLAND_VM_CONSOLE sets the console log path.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-record: $*" >&2; }
die() { log "$*"; exit 1; }

DEST=${1:-$REPO/examples/recordings/vm-busybox.trace}
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-900}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/record-console.log}

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare

VM_GUEST_SCRIPT=guest-record.sh
vm_initramfs_begin
cp "$REPO/scripts/vm/guest-record.sh" "$IR/hl/guest-record.sh"
OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"
[[ "$VM_RC" == 0 ]] || die "the guest failed (status '${VM_RC}'); console log: $CONSOLE"
mkdir -p "$(dirname "$DEST")"
tr -d '\r' < "$OUT" | sed -n '/^=== record: trace begins ===$/,/^=== record: trace ends ===$/p' |
  sed '1d;$d' > "$DEST"
[[ -s "$DEST" ]] || die "no trace between the markers; guest output: $OUT"
log "wrote $DEST ($(wc -l < "$DEST") lines)"
