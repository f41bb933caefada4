# scripts/vm/lib.sh: the VM machinery shared by scripts/vm-check.sh and scripts/vm-bench.sh
# (sourced, not run). The caller sets REPO, CACHE and defines log/die first.
#
#   vm_prepare           checks the host tools, finds a static busybox, sets KERNEL (the sid
#                        cloud kernel from scripts/vm/fetch-kernel.sh, cached in $CACHE)
#   vm_initramfs_begin   makes $WORK (removed on exit, with the VM killed) and $IR, an initramfs
#                        tree with busybox and /init; /init copies /hl to the tmpfs /run/hl and
#                        runs /hl/$VM_GUEST_SCRIPT there, output to the host's stdout
#   copy_with_libs FILE  puts FILE into /hl and its shared libraries at their own paths
#   vm_boot TIMEOUT CONSOLE OUT
#                        packs $IR and boots it (8 vCPUs as 4 cores x 2 threads, 2 GiB,
#                        single-threaded TCG); the guest's output goes to stdout and OUT, its
#                        exit status into $VM_RC (empty if it never finished)
#   vm_verdicts OUT NAME...
#                        prints each named check's last `VMCHECK: PASS|FAIL` line from OUT
#                        (MISSING when the guest never reported it); fails unless all passed
#   vm_guest_ok CONSOLE LINES
#                        fails, saying why, unless the guest finished with status 0 (on a
#                        timeout or crash it prints the console's last LINES lines)
#
# SIGINT, SIGTERM and SIGHUP (a Ctrl-C at a terminal included) stop the VM and exit with
# 128 + the signal's number: `timeout` puts itself and qemu in a process group of their own,
# which a terminal's Ctrl-C does not reach, so vm_stop signals that group by its id (timeout's
# pid) and waits for it. tests/vm-interrupt.sh checks this with a stub qemu.

vm_verdicts() {
  local out=$1 name line bad=0
  shift
  for name in "$@"; do
    line=$(grep -E "^VMCHECK: (PASS|FAIL) $name:" "$out" | tail -n 1 || true)
    if [[ -z "$line" ]]; then
      echo "MISSING $name (the guest never reported it)"; bad=1
    else
      echo "${line#VMCHECK: }"
      [[ "$line" == "VMCHECK: PASS"* ]] || bad=1
    fi
  done
  return $bad
}

vm_guest_ok() {
  if [[ -z "${VM_RC:-}" ]]; then
    echo "the guest did not finish (timeout or crash); console tail:"; tail -n "$2" "$1"
    return 1
  elif [[ "$VM_RC" != 0 ]]; then
    echo "guest checks exited with status $VM_RC"
    return 1
  fi
}

vm_prepare() {
  for tool in qemu-system-x86_64 cpio gzip ldd; do
    command -v "$tool" >/dev/null || die "missing $tool: run scripts/install-scx-deps.sh"
  done
  BUSYBOX=$(command -v busybox || true)
  [[ -n "$BUSYBOX" ]] && [[ $(file -L "$BUSYBOX" 2>/dev/null) == *"statically linked"* ]] ||
    die "need a static busybox (package busybox-static): run scripts/install-scx-deps.sh"
  KERNEL=$("$REPO/scripts/vm/fetch-kernel.sh" "$CACHE") || die "could not get the sid cloud kernel"
  log "kernel: $KERNEL"
}

vm_initramfs_begin() {
  WORK=$(mktemp -d /tmp/hybridland-vm.XXXXXX)
  QEMU_PID=""
  trap vm_cleanup EXIT
  trap 'vm_interrupted INT 130' INT
  trap 'vm_interrupted TERM 143' TERM
  trap 'vm_interrupted HUP 129' HUP
  IR=$WORK/ir
  mkdir -p "$IR"/{bin,dev,proc,sys,run,tmp,hl}
  cp "$BUSYBOX" "$IR/bin/busybox"
  cp "$REPO/scripts/vm/guest-lib.sh" "$IR/hl/guest-lib.sh"
  cat > "$IR/init" <<EOF
#!/bin/busybox sh
# PID 1 of the VM: mount the kernel filesystems, put the payload on a tmpfs, run the guest
# script with its output on /dev/hvc0 (the host's stdout) and the status on /dev/hvc1.
/bin/busybox --install -s /bin
export PATH=/bin HOME=/ TERM=dumb
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=755 tmpfs /run
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /run/hl /lib64
cp -a /hl/. /run/hl/
stty -F /dev/hvc0 raw -echo 2>/dev/null
ulimit -l unlimited
HL=/run/hl sh /run/hl/$VM_GUEST_SCRIPT > /dev/hvc0 2>&1 < /dev/null
echo \$? > /dev/hvc1
sync
poweroff -f
EOF
  chmod +x "$IR/init"
}

vm_interrupted() {  # vm_interrupted SIGNAME STATUS
  log "SIG$1: stopping the VM"
  vm_stop
  exit "$2"  # runs vm_cleanup (the EXIT trap)
}

# Stops a running VM: SIGTERM to timeout's process group (timeout and qemu; qemu exits on it),
# up to 5 s for timeout to end, then SIGKILL to whatever of the group is left.
vm_stop() {
  local pid=${QEMU_PID:-} state i
  [[ -n "$pid" ]] || return 0
  QEMU_PID=""
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    # Our child: a zombie until reaped, so look at its state, not just whether it exists.
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    [[ -z "$state" || "$state" == Z ]] && break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

vm_cleanup() {
  vm_stop
  [[ -n "${WORK:-}" ]] && rm -rf "$WORK"
}

copy_with_libs() {
  cp "$1" "$IR/hl/"
  ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [[ -e "$lib" ]] || continue
    mkdir -p "$IR$(dirname "$lib")"
    cp -L "$lib" "$IR$lib"
  done
}

vm_boot() {  # vm_boot TIMEOUT CONSOLE OUT
  local timeout=$1 console=$2 out=$3 start
  (cd "$IR" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initrd.gz"
  log "initramfs: $(du -h "$WORK/initrd.gz" | cut -f1)"
  # Software emulation, one host thread: /dev/kvm here cannot boot a stock kernel, and
  # multi-threaded TCG once oopsed while sched_ext patched kernel text.
  : > "$WORK/rc"
  log "booting (timeout ${timeout}s, console log $console)"
  start=$(date +%s)
  # timeout is started directly in the background, its output going through tee on a file
  # descriptor, so $! is its pid, which is also its process group's id.
  local tee_fd tee_pid
  exec {tee_fd}> >(tee "$out")
  tee_pid=$!
  timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
    -accel tcg,thread=single -cpu max -machine q35 \
    -m 2G -smp 8,sockets=1,cores=4,threads=2 \
    -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
    -append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init" \
    -display none -monitor none -no-reboot -nodefaults \
    -serial file:"$console" \
    -device virtio-serial-pci \
    -chardev stdio,id=out,signal=off -device virtconsole,chardev=out \
    -chardev file,id=rcf,path="$WORK/rc" -device virtconsole,chardev=rcf \
    < /dev/null >&"$tee_fd" &
  QEMU_PID=$!
  exec {tee_fd}>&-
  # A trapped signal ends this wait at once and runs vm_interrupted.
  wait "$QEMU_PID" || true
  QEMU_PID=""
  # tee ends at the end of its input: let it write the last of OUT before anyone reads it.
  wait "$tee_pid" 2>/dev/null || true
  log "VM ran $(( $(date +%s) - start ))s"
  VM_RC=$(tr -dc '0-9' < "$WORK/rc")
}
