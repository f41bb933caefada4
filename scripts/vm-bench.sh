#!/usr/bin/env bash
# scripts/vm-bench.sh: live overhead of scx_hybridland, measured in one VM run.
#
# Installs what is missing (scripts/install-scx-deps.sh, plus Debian's stress-ng), builds
# scx_hybridland --release, boots the vm-check guest once (Debian sid's cloud kernel, 8 vCPUs
# as 4 cores x 2 threads, single-threaded TCG; scripts/vm/lib.sh) and runs the same loads
# (scripts/vm/guest-bench.sh) under the kernel's default scheduler, `scx_hybridland --fifo`
# (no policy: the framework's own cost) and `scx_hybridland`, both with
# scripts/vm/topology-2p-smt-4e.toml. Prints a table: medians of the repeated loads, the
# wake-up latency percentiles, and the ratios hybridland/fifo and hybridland/default.
# Emulated CPUs: read the ratios, not the absolute figures. Results are in BENCHMARKS.md.
#
# Usage: scripts/vm-bench.sh [path/to/scx_hybridland]   (a path skips the build)
# Environment:
#   HYBRIDLAND_BENCH_HACKBENCH  hackbench arguments (default "-g 4 -l 200")
#   HYBRIDLAND_BENCH_REPS       repetitions of hackbench and the switch test (default 3)
#   HYBRIDLAND_BENCH_SWITCH_SECS / HYBRIDLAND_BENCH_CYCLIC_SECS  (default 3 / 5)
#   HYBRIDLAND_VM_TIMEOUT       seconds before the VM is killed (default 900)
#   HYBRIDLAND_VM_CONSOLE       the guest's serial console (default .vm-cache/bench-console.log)
#   HYBRIDLAND_KERNEL           as for vm-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-bench: $*" >&2; }
die() { log "$*"; exit 1; }

"$REPO/scripts/install-scx-deps.sh"
if ! command -v stress-ng >/dev/null; then
  log "installing stress-ng"
  if [[ $(id -u) == 0 ]]; then SUDO=; else SUDO=sudo; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -y -q --no-install-recommends install stress-ng
fi
for tool in hackbench cyclictest stress-ng; do
  command -v "$tool" >/dev/null || die "missing $tool (packages rt-tests, stress-ng)"
done

if [[ -n "${1:-}" ]]; then
  BIN=$1
else
  # shellcheck source=scripts/env.sh
  . "$REPO/scripts/env.sh"
  cargo build --release -p scx_hybridland >&2
  BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/scx_hybridland
fi
[[ -x "$BIN" ]] || die "no scx_hybridland at $BIN"
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-900}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/bench-console.log}

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare
VM_GUEST_SCRIPT=guest-bench.sh
vm_initramfs_begin
for f in "$BIN" "$(command -v hackbench)" "$(command -v cyclictest)" "$(command -v stress-ng)"; do
  copy_with_libs "$f"
done
cp "$REPO/scripts/vm/topology-2p-smt-4e.toml" "$IR/hl/topology.toml"
cp "$REPO/scripts/vm/guest-bench.sh" "$IR/hl/guest-bench.sh"
cat > "$IR/hl/bench.env" <<EOF
BENCH_HACKBENCH="${HYBRIDLAND_BENCH_HACKBENCH:--g 4 -l 200}"
BENCH_REPS=${HYBRIDLAND_BENCH_REPS:-3}
BENCH_SWITCH_SECS=${HYBRIDLAND_BENCH_SWITCH_SECS:-3}
BENCH_CYCLIC_SECS=${HYBRIDLAND_BENCH_CYCLIC_SECS:-5}
EOF

OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"
[[ -n "$VM_RC" ]] || { tail -n 30 "$CONSOLE"; die "the guest did not finish (timeout or crash)"; }

# --- table ---------------------------------------------------------------------------------------
echo
echo "==== vm-bench summary (8 vCPUs as 4 cores x 2 threads, TCG: compare ratios only) ===="
grep '^VMBENCH: .* error' "$OUT" && log "errors above: some figures are missing or suspect"
awk '
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    if (k == 0) return ""
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  function ratio(a, b) { return (a != "" && b != "" && b + 0 > 0 && a !~ />/ && b !~ />/) ? sprintf("%.2f", a / b) : "-" }
  $1 == "VMBENCH:" && $4 != "error" {
    mode = $2; what = $3
    if (what == "hackbench" || what == "switch") { if ($4 != "failed") v[what, mode] = v[what, mode] " " $4; next }
    for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "samples") v[what " " kv[1], mode] = kv[2] }
  }
  END {
    printf "%-22s %12s %12s %12s %10s %10s\n", "load", "default", "fifo", "hybridland", "hl/fifo", "hl/default"
    row("hackbench s (median)", "hackbench", 1)
    row("switch ops/s (median)", "switch", 1)
    n = split("cyclic-idle cyclic-4hogs cyclic-8hogs", c, " ")
    for (i = 1; i <= n; i++) {
      split("p50 p99 max", p, " ")
      for (j = 1; j <= 3; j++) row(c[i] " " p[j] " us", c[i] " " p[j], 0)
    }
  }
  function row(label, key, med,   d, f, h) {
    d = med ? median(v[key, "default"]) : v[key, "default"]
    f = med ? median(v[key, "fifo"]) : v[key, "fifo"]
    h = med ? median(v[key, "hybridland"]) : v[key, "hybridland"]
    printf "%-22s %12s %12s %12s %10s %10s\n", label, d, f, h, ratio(h, f), ratio(h, d)
  }' "$OUT"
echo "(hackbench and latency: lower is better; switch ops/s: higher is better)"
[[ "$VM_RC" == 0 ]] || die "guest bench exited with status $VM_RC"
