#!/usr/bin/env bash
# scripts/vm-systemd.sh: load scx_hybridland with `systemctl start` under the hardened unit
# (dist/scx_hybridland.service, unchanged) in the project's VM, booted with systemd as init.
#
# The initramfs carries this machine's systemd (PID 1 and systemctl, with their libraries), the
# unit, /etc/default/scx_hybridland naming the VM's topology file, and a oneshot check service
# (scripts/vm/guest-systemd.sh) that starts the scheduler with systemctl, checks it is loaded
# and stays loaded through a short load, that its control file and stats socket are where the
# unit lets it write them (socket mode 0600), stops it with systemctl and checks it unloaded.
# A busybox /init copies the tree to a tmpfs and switch_roots into systemd there.
#
# Usage: scripts/vm-systemd.sh [path/to/scx_hybridland]   (default: the release build)
# Environment: HYBRIDLAND_KERNEL, HYBRIDLAND_VM_TIMEOUT (default 900), HYBRIDLAND_VM_CONSOLE
# (default .vm-cache/systemd-console.log), as for vm-check.sh. Needs systemd installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-systemd: $*" >&2; }
die() { log "$*"; exit 1; }

BIN=${1:-${HYBRIDLAND_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/scx_hybridland}}
[[ -x "$BIN" ]] || die "no scx_hybridland at $BIN (cargo build --release -p scx_hybridland)"
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-900}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/systemd-console.log}
SYSTEMD=$(ls /lib/systemd/systemd /usr/lib/systemd/systemd 2>/dev/null | sed -n 1p || true)
[[ -n "$SYSTEMD" ]] || die "no systemd here (package systemd)"
SYSTEMCTL=$(command -v systemctl) || die "no systemctl here (package systemd)"

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare

VM_GUEST_SCRIPT=guest-systemd.sh
vm_initramfs_begin
# A file and its shared libraries at their own paths in the guest.
put() {
  local dest=$IR$2
  mkdir -p "$(dirname "$dest")"
  cp -L "$1" "$dest"
  ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [[ -e "$lib" ]] || continue
    mkdir -p "$IR$(dirname "$lib")"
    cp -L "$lib" "$IR$lib"
  done
}
put "$SYSTEMD" /usr/lib/systemd/systemd
put "$SYSTEMCTL" /usr/bin/systemctl
put "$BIN" /usr/local/bin/scx_hybridland
mkdir -p "$IR"/etc/systemd/system "$IR"/etc/default "$IR"/etc/scx_hybridland \
  "$IR"/var/lib "$IR"/var/tmp "$IR"/home "$IR"/root "$IR"/usr/bin "$IR"/usr/sbin
ln -s /run "$IR/var/run"
cp "$REPO/dist/scx_hybridland.service" "$IR/etc/systemd/system/"
# The VM runs no journald: the scheduler's own messages go to /run/hl-scx.log instead, which
# the checks print (a drop-in that changes nothing else; systemd opens it before the sandbox).
mkdir -p "$IR/etc/systemd/system/scx_hybridland.service.d"
printf '[Service]\nStandardOutput=append:/run/hl-scx.log\nStandardError=append:/run/hl-scx.log\n' \
  > "$IR/etc/systemd/system/scx_hybridland.service.d/console.conf"
cp "$REPO/scripts/vm/topology-2p-smt-4e.toml" "$IR/etc/scx_hybridland/topology.toml"
echo 'SCX_HYBRIDLAND_FLAGS="--topology /etc/scx_hybridland/topology.toml"' \
  > "$IR/etc/default/scx_hybridland"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$IR/etc/passwd"
printf 'root:x:0:\n' > "$IR/etc/group"
printf 'ID=debian\nNAME=hybridland-vm\n' > "$IR/etc/os-release"
: > "$IR/etc/machine-id"
cat > "$IR/etc/systemd/system/hl-check.service" <<'EOF'
[Unit]
Description=hybridland: the unit's checks
[Service]
Type=oneshot
Environment=HL=/hl PATH=/bin:/usr/bin:/usr/sbin
ExecStart=/bin/sh /hl/guest-systemd.sh
StandardOutput=file:/dev/hvc0
StandardError=file:/dev/hvc0
EOF
cat > "$IR/etc/systemd/system/hl.target" <<'EOF'
[Unit]
Description=hybridland check target
Wants=hl-check.service
EOF
ln -s hl.target "$IR/etc/systemd/system/default.target"
# The targets every service's default dependencies name (empty: there is nothing else to boot).
for t in sysinit basic shutdown sockets paths timers local-fs multi-user; do
  printf '[Unit]\nDescription=%s\n' "$t" > "$IR/etc/systemd/system/$t.target"
done
cp "$REPO/scripts/vm/guest-systemd.sh" "$IR/hl/guest-systemd.sh"
# PID 1 is busybox until the tree is on a tmpfs, then systemd.
cat > "$IR/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /mnt && mount -t tmpfs -o mode=755 tmpfs /mnt
cp -a /bin /etc /hl /home /lib /lib64 /root /usr /var /mnt/ 2>/dev/null
mkdir -p /mnt/proc /mnt/sys /mnt/dev /mnt/run /mnt/tmp /mnt/mnt /mnt/var/tmp /mnt/var/lib
chmod 1777 /mnt/tmp /mnt/var/tmp
exec switch_root /mnt /hl/systemd-init
EOF
# switch_root takes no options for the new init: a wrapper passes systemd its own (still PID 1).
printf '#!/bin/sh\nexec /usr/lib/systemd/systemd --log-target=console --show-status=no\n' \
  > "$IR/hl/systemd-init"
chmod +x "$IR/hl/systemd-init"
chmod +x "$IR/init"

OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"
EXPECTED=(unit-started loaded control-file stats-socket stays-loaded unit-stopped vm-tunable)
failed=0
echo
echo "==== vm-systemd summary ===="
vm_verdicts "$OUT" "${EXPECTED[@]}" || failed=1
vm_guest_ok "$CONSOLE" 40 || failed=1
if ((failed)); then echo "vm-systemd: FAILED"; exit 1; fi
echo "vm-systemd: all ${#EXPECTED[@]} checks passed"
