#!/usr/bin/env bash
# scripts/vm-fidelity.sh: how close the simulator comes to the live scheduler.
#
# Boots the vm-check guest (Debian sid's cloud kernel, 8 vCPUs as 4 cores x 2 threads,
# single-threaded TCG; scripts/vm/lib.sh) and runs three workloads (scripts/vm/guest-fidelity.sh):
# a lone spinner beside a 30 fps frame task, 3 spinners and 3 sleepers, a hackbench burst. Each
# runs once under `scx_hybridland --record` (machine from scripts/vm/topology-2p-smt-4e.toml) and
# once under the kernel's default scheduler with the sched tracepoints recorded. On the host,
# each scx_hybridland recording is replayed under hybridland on the machine scx_hybridland
# emitted (`--dry-run --emit-topology`, else the topology file) and compared with its own
# figures (`hybrid-sim compare`); each default-scheduler recording is read and replayed under
# kernel-default on the machine the guest kernel sees (scripts/vm/topology-guest-kernel.toml:
# 4 equal cores x 2 threads) and compared with the figures its tracepoints give
# (`hybrid-sim import ftrace --live`). Prints one table
# per run and a summary; the files stay in the output directory. docs/FIDELITY.md holds one run.
# Not part of CI.
#
# Usage: scripts/vm-fidelity.sh [--from DIR] [path/to/scx_hybridland]
#   --from DIR   skip the VM: compare the files an earlier run left in DIR
# Environment:
#   HYBRIDLAND_FIDELITY_DIR       where the files go (default .vm-cache/fidelity/<UTC time>)
#   HYBRIDLAND_FIDELITY_SECS      seconds each of lone-frame and mixed6 is recorded (default 6)
#   HYBRIDLAND_FIDELITY_HACKBENCH hackbench arguments (default "-g 2 -l 50")
#   HYBRIDLAND_FIDELITY_WORKLOADS (default "lone-frame mixed6 hackbench")
#   HYBRIDLAND_FIDELITY_SCX_ARGS  more scx_hybridland arguments (e.g. `--policy spread`: the
#                                 replay then runs spread too, from the live file; or -v: a log line per
#                                 decision, kept in DIR/WORKLOAD-hybridland.log)
#   HYBRIDLAND_FIDELITY_TRACE_LIVE=1  also record the sched tracepoints while scx_hybridland
#                                 runs, and set what --record saw beside what they show
#   HYBRIDLAND_VM_TIMEOUT         seconds before the VM is killed (default 1800)
#   HYBRIDLAND_VM_CONSOLE         the guest's serial console (default .vm-cache/fidelity-console.log)
#   HYBRIDLAND_KERNEL             as for vm-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=$REPO/.vm-cache
mkdir -p "$CACHE"
log() { echo "vm-fidelity: $*" >&2; }
die() { log "$*"; exit 1; }

FROM=""
BIN=""
while (($#)); do
  case "$1" in
    --from) FROM=${2:?--from needs a directory}; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) BIN=$1; shift ;;
  esac
done
WORKLOADS=${HYBRIDLAND_FIDELITY_WORKLOADS:-lone-frame mixed6 hackbench}
TOPO_FILE=$REPO/scripts/vm/topology-2p-smt-4e.toml
GUEST_TOPO=$REPO/scripts/vm/topology-guest-kernel.toml

# shellcheck source=scripts/env.sh
. "$REPO/scripts/env.sh"

if [[ -z "$FROM" ]]; then
  DIR=${HYBRIDLAND_FIDELITY_DIR:-$CACHE/fidelity/$(date -u +%Y%m%dT%H%M%SZ)}
  mkdir -p "$DIR"
  "$REPO/scripts/install-scx-deps.sh"
  command -v gcc >/dev/null && [[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] ||
    die "the frame task needs gcc and a static libc (packages gcc libc6-dev)"
  command -v hackbench >/dev/null || die "missing hackbench (package rt-tests)"
  if [[ -z "$BIN" ]]; then
    cargo build --release -p scx_hybridland >&2
    BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/scx_hybridland
  fi
  [[ -x "$BIN" ]] || die "no scx_hybridland at $BIN"
  TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-1800}
  CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/fidelity-console.log}

  # shellcheck source=scripts/vm/lib.sh
  . "$REPO/scripts/vm/lib.sh"
  vm_prepare
  VM_GUEST_SCRIPT=guest-fidelity.sh
  vm_initramfs_begin
  copy_with_libs "$BIN"
  # The guest runs it under its usual name, whatever the file given is called.
  [[ $(basename "$BIN") == scx_hybridland ]] || mv "$IR/hl/$(basename "$BIN")" "$IR/hl/scx_hybridland"
  copy_with_libs "$(command -v hackbench)"
  gcc -O2 -static -o "$IR/hl/frame-task" "$REPO/scripts/vm/frame-task.c" -lm ||
    die "could not build the frame task"
  cp "$TOPO_FILE" "$IR/hl/topology.toml"
  cp "$REPO/scripts/vm/guest-fidelity.sh" "$IR/hl/guest-fidelity.sh"
  cat > "$IR/hl/fidelity.env" <<EOF
FID_SECS=${HYBRIDLAND_FIDELITY_SECS:-6}
FID_HACKBENCH="${HYBRIDLAND_FIDELITY_HACKBENCH:--g 2 -l 50}"
FID_WORKLOADS="$WORKLOADS"
FID_FRAME_MS=10
FID_SCX_ARGS="${HYBRIDLAND_FIDELITY_SCX_ARGS:-}"
FID_TRACE_LIVE=${HYBRIDLAND_FIDELITY_TRACE_LIVE:-0}
FID_TRACE_KB=16384
EOF
  OUT=$WORK/out.log
  vm_boot "$TIMEOUT" "$CONSOLE" "$OUT" > /dev/null
  [[ "$VM_RC" == 0 ]] || die "the guest failed (status '${VM_RC}'); console log: $CONSOLE, output: $OUT"
  tr -d '\r' < "$OUT" | awk -v dir="$DIR" '
    /^=== fidelity file .* ===$/ { f = dir "/" $4; printf "" > f; next }
    /^=== fidelity end ===$/ { close(f); f = ""; next }
    f != "" { print > f; next }
    /^fidelity:/ { print > "/dev/stderr" }'
  date -u +%Y-%m-%dT%H:%MZ > "$DIR/date"
  log "files in $DIR"
else
  DIR=$FROM
  [[ -d "$DIR" ]] || die "no directory $DIR"
fi

cargo build --release -p hybrid-sim >&2
SIM=${CARGO_TARGET_DIR:-$REPO/target}/release/hybrid-sim
TOPO=$TOPO_FILE
if [[ -s "$DIR/emitted-topology.toml" ]]; then
  TOPO=$DIR/emitted-topology.toml
  log "replaying on the machine scx_hybridland emitted ($TOPO)"
else
  log "no emitted machine: replaying on $TOPO"
fi

summary=()
for w in $WORKLOADS; do
  live=$DIR/$w-hybridland
  if [[ -s "$live.trace.json" && -s "$live.live.json" ]]; then
    echo "== $w: scx_hybridland (live) vs its policy (sim) =="
    "$SIM" compare "$live.trace.json" "$live.live.json" --topology "$TOPO" | tee "$live.compare.txt"
    "$SIM" compare "$live.trace.json" "$live.live.json" --topology "$TOPO" --json > "$live.compare.json"
    summary+=("$w hybridland $live.compare.json")
  else
    log "$w: no recording from scx_hybridland (see $DIR/$w-hybridland.log)"
  fi
  if [[ -s "$live.tracepoints.txt" && -s "$live.live.json" ]]; then
    # The recorder against the kernel's own tracepoints over (nearly) the same window.
    "$SIM" import ftrace "$live.tracepoints.txt" --topology "$TOPO" -o "$live.tracepoints.json" \
      --live "$live.tracepoints.live.json" >&2
    echo "== $w: what --record saw against the tracepoints of the same run =="
    python3 - "$live.live.json" "$live.tracepoints.live.json" "$live.tracepoints.json" <<'EOF'
import json, sys
rec, tp = (json.load(open(f)) for f in sys.argv[1:3])
own = sum(p.get("run_ns", 0) for t in json.load(open(sys.argv[3]))["tasks"]
          if t["name"].startswith(("scx_hybridland-", "hl-nudge-", "hl-restart-", "stats-"))
          for p in t.get("phases", []))
print("%-28s %12s %12s" % ("", "--record", "tracepoints"))
tot = {n: sum(k["busy_ns"] for k in x["kinds"]) or 1 for n, x in (("r", rec), ("t", tp))}
for k in rec["kinds"]:
    t = next((x for x in tp["kinds"] if x["kind"] == k["kind"]), {"busy_ns": 0})
    print("%-28s %12.1f %12.1f" % ("CPU time %s (%%)" % k["kind"], k["busy_ns"] * 100 / tot["r"],
          t["busy_ns"] * 100 / tot["t"]))
print("%-28s %12.2f %12.2f" % ("CPUs busy (average)", tot["r"] / rec["window_ns"], tot["t"] / tp["window_ns"]))
print("%-28s %12.3f %12.3f" % ("window (s)", rec["window_ns"] / 1e9, tp["window_ns"] / 1e9))
print("%-28s %12d %12d" % ("tasks", rec["tasks"], tp["tasks"]))
print("%-28s %12.1f %12.1f" % ("migrations per s", rec["migrations"] * 1e9 / rec["window_ns"],
      tp["migrations"] * 1e9 / tp["window_ns"]))
print("(the tracepoints include the scheduler's own threads: %.3f s of reference work)" % (own / 1e9))
EOF
  fi
  def=$DIR/$w-default
  if [[ -s "$def.trace.txt" ]]; then
    "$SIM" import ftrace "$def.trace.txt" --topology "$GUEST_TOPO" -o "$def.trace.json" \
      --live "$def.live.json" >&2
    echo "== $w: default scheduler (live) vs kernel-default (sim) =="
    "$SIM" compare "$def.trace.json" "$def.live.json" --topology "$GUEST_TOPO" \
      --policy kernel-default | tee "$def.compare.txt"
    "$SIM" compare "$def.trace.json" "$def.live.json" --topology "$GUEST_TOPO" \
      --policy kernel-default --json > "$def.compare.json"
    summary+=("$w kernel-default $def.compare.json")
  else
    log "$w: no tracepoint recording of the default scheduler"
  fi
done

echo "== summary: sim - live in percentage points (CPU time per kind, placements per step); migrations sim / live =="
printf '%-11s %-15s %7s %7s %7s %7s %8s %8s %8s\n' workload policy P-time E-time idle-P idle-E sibling no-idle migr
for s in "${summary[@]}"; do
  read -r w p f <<<"$s"
  python3 - "$w" "$p" "$f" <<'EOF'
import json, sys
w, p, f = sys.argv[1:4]
c = json.load(open(f))
rows = {(r["group"], r["name"]): r for r in c["rows"]}
def d(g, n):
    r = rows.get((g, n))
    return "-" if r is None else "%+.1f" % r["diff"]
m = rows.get(("migrations", "per-second"))
ratio = "-" if m is None or m["ratio"] is None else "x%.2f" % m["ratio"]
# The policy replayed is the compare's (the live file's `--policy`), whatever the label.
p = c.get("policy", p)
print("%-11s %-15s %7s %7s %7s %7s %8s %8s %8s" % (w, p, d("cpu-time", "performance"), d("cpu-time", "efficiency"),
      d("placements", "idle-p-core"), d("placements", "idle-e-core"), d("placements", "busy-sibling"),
      d("placements", "no-idle"), ratio))
EOF
done
