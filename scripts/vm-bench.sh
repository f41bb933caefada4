#!/usr/bin/env bash
# scripts/vm-bench.sh: scx_hybridland beside the real scx schedulers, in one VM run.
#
# Installs what is missing (scripts/install-scx-deps.sh, plus Debian's stress-ng and a C
# compiler for the frame task), builds scx_hybridland --release, installs pinned releases of
# the peers (below) with `cargo install --locked` into .vm-cache/peers (a second run reuses
# them), boots the vm-check guest once (Debian sid's cloud kernel, 8 vCPUs as 4 cores x 2
# threads, single-threaded TCG; scripts/vm/lib.sh) and runs the same loads
# (scripts/vm/guest-bench.sh) under each scheduler: the kernel's default (no sched_ext),
# `scx_hybridland --fifo` (no policy), `scx_hybridland`, `scx_hybridland --fixed-slice` (the
# policy with --fifo's slice rule; throughput and cost only), `scx_hybridland --cluster-balance
# on` (the E-cluster load only), other scx_hybridland builds if asked (HYBRIDLAND_BENCH_EXTRA)
# and each peer. scx_hybridland reads the machine from
# scripts/vm/topology-2p-smt-4e.toml (or $HYBRIDLAND_BENCH_TOPOLOGY); the peers read the same
# machine from a fake sysfs tree built here (make_fakesys) through SCX_SYSFS_PREFIX, as
# scx_utils 1.1.4 reads it. Prints one table, each figure with its ratio to the default
# scheduler, and a cost table for the user-space loop of every sched_ext scheduler (the tables
# are scripts/vm/bench-table.sh's). A load during which a scheduler was ejected (the kernel's
# watchdog, a sysrq-S) is void: its cells read `void` and a list says why. Emulated CPUs: read
# the ratios, not the absolute figures. Results are in BENCHMARKS.md.
#
# Usage: scripts/vm-bench.sh [path/to/scx_hybridland]   (a path skips the build)
# Environment:
#   HYBRIDLAND_BENCH_PEERS      peers as name@version (default: scx_bpfland@1.1.4
#                               scx_cosmos@1.1.7 scx_lavd@1.1.4 scx_rlfifo@1.1.4; "" for none).
#                               One that does not build is reported and left out. Each
#                               runs with its defaults; HYBRIDLAND_BENCH_ARGS_<name> (e.g.
#                               HYBRIDLAND_BENCH_ARGS_scx_bpfland="-P") adds arguments, as
#                               it does for `hybridland` and each extra's label (every mode
#                               of that binary), e.g. "--exit-dump-len 65536" to see the
#                               kernel's state when it ejects the scheduler.
#   HYBRIDLAND_BENCH_EXTRA      other scx_hybridland binaries to run in the same VM boot, each
#                               as its own columns, as space-separated label=path (e.g.
#                               "before=/work/before/target/release/scx_hybridland" to compare
#                               an older commit's build; label: letters, digits, _). Each runs
#                               with the same --topology file and loads as this build: `label`
#                               in the policy mode, and when its --help lists them `label-fifo`
#                               (--fifo) and `label-fixed` (--fixed-slice, throughput and cost
#                               only), after hybridland-fixed and before the peers. An extra
#                               table gives this build's figure over the extra's in the same
#                               mode. Unset or "": none.
#   HYBRIDLAND_BENCH_TOPOLOGY   the machine file scx_hybridland reads (default
#                               scripts/vm/topology-2p-smt-4e.toml), e.g. a commit's copy when
#                               the working tree's is in a newer format than the binary reads;
#                               checked on the host with `--dry-run --topology` before the boot
#   HYBRIDLAND_BENCH_TOPOLOGY_<label>
#                               the same for that extra binary (default: the one this build
#                               reads), for an older build that does not read the current format
#   HYBRIDLAND_BENCH_ORDER      the schedulers to run, in this order (names as in the table:
#                               default fifo hybridland hybridland-fixed hybridland-balance,
#                               the extras' and the peers' names; default: all, in that
#                               order), e.g. to run two builds' same mode back to back on a
#                               host whose load drifts
#   HYBRIDLAND_BENCH_LOADS      the loads to run (default: all of placement ecluster frame
#                               throughput latency cost; scripts/vm/guest-bench.sh says what each
#                               is), e.g. "placement ecluster" for the placement table alone;
#                               `profile` (never a default: it needs perf and bpftool,
#                               packages linux-perf and bpftool) adds a profile of each
#                               sched_ext scheduler under the switch test (its BPF programs'
#                               run-time statistics and a perf profile), printed after the
#                               tables
#   HYBRIDLAND_BENCH_ECLUSTER_ROUNDS
#                               rounds of the E-cluster check (default 20, a multiple of 4)
#   HYBRIDLAND_BENCH_HACKBENCH  hackbench arguments (default "-g 4 -l 200")
#   HYBRIDLAND_BENCH_REPS       repetitions of hackbench and the switch test (default 3)
#   HYBRIDLAND_BENCH_SWITCH_SECS / HYBRIDLAND_BENCH_CYCLIC_SECS  (default 3 / 5)
#   HYBRIDLAND_BENCH_FRAME_SECS / HYBRIDLAND_BENCH_FRAME_HOGS / HYBRIDLAND_BENCH_FRAME_MS
#                               the frame task's run time, CPU hogs beside it, and work a
#                               frame in ms at the speed a CPU gives it beside those hogs
#                               (default 8 / 6 / 10)
#   HYBRIDLAND_VM_TIMEOUT       seconds before the VM is killed (default 2400)
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
missing=()
command -v stress-ng >/dev/null || missing+=(stress-ng)
command -v gcc >/dev/null && [[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || missing+=(gcc libc6-dev)
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  if [[ $(id -u) == 0 ]]; then SUDO=; else SUDO=sudo; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -y -q --no-install-recommends install "${missing[@]}"
fi
ALL_LOADS="placement ecluster frame throughput latency cost"
LOADS=$(echo ${HYBRIDLAND_BENCH_LOADS-$ALL_LOADS})
if [[ " $LOADS " == *" profile "* ]] && ! { command -v perf && command -v bpftool; } >/dev/null; then
  log "installing linux-perf and bpftool (the profile load)"
  if [[ $(id -u) == 0 ]]; then SUDO=; else SUDO=sudo; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -y -q --no-install-recommends install linux-perf bpftool
fi
for tool in hackbench cyclictest stress-ng gcc; do
  command -v "$tool" >/dev/null || die "missing $tool (packages rt-tests, stress-ng, gcc)"
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
TOPO_FILE=${HYBRIDLAND_BENCH_TOPOLOGY:-$REPO/scripts/vm/topology-2p-smt-4e.toml}
# Checked here, not found out in the guest after the boot.
if ! out=$("$BIN" --dry-run --topology "$TOPO_FILE" 2>&1); then
  printf '%s\n' "$out" | tail -n 5 >&2
  die "$BIN does not read $TOPO_FILE (above); set HYBRIDLAND_BENCH_TOPOLOGY to a machine file in the form it reads"
fi

# --- extra scx_hybridland binaries (HYBRIDLAND_BENCH_EXTRA) --------------------------------------
# Each label=path becomes guest schedulers `label` (policy), `label-fifo` and `label-fixed` (when
# its --help lists --fifo / --fixed-slice). bench.env tells the guest each one's binary and mode
# as name=label:mode words; the binary goes into the initramfs as scx_hybridland-label.
EXTRA_LABELS=() EXTRA_PATHS=() EXTRA_TOPOS=() EXTRA_SCHEDS=() EXTRA_GUEST=() EXTRA_PAIRS=()
for lp in ${HYBRIDLAND_BENCH_EXTRA:-}; do
  label=${lp%%=*} path=${lp#*=}
  [[ $lp == *=* && $label =~ ^[A-Za-z0-9_]+$ && -n $path ]] ||
    die "HYBRIDLAND_BENCH_EXTRA: '$lp' is not label=path (label: letters, digits, _)"
  case $label in default | fifo | hybridland) die "HYBRIDLAND_BENCH_EXTRA: label '$label' is taken" ;; esac
  for l in "${EXTRA_LABELS[@]}"; do [[ $l != "$label" ]] || die "HYBRIDLAND_BENCH_EXTRA: label '$label' twice"; done
  [[ -x $path ]] || die "HYBRIDLAND_BENCH_EXTRA: no executable at $path ($label)"
  var=HYBRIDLAND_BENCH_TOPOLOGY_$label
  topo=${!var:-$TOPO_FILE}
  if ! out=$("$path" --dry-run --topology "$topo" 2>&1); then
    printf '%s\n' "$out" | tail -n 5 >&2
    die "$label: $path does not read $topo (above); set $var to a machine file in the form it reads"
  fi
  help=$("$path" --help 2>&1) || true
  EXTRA_LABELS+=("$label") EXTRA_PATHS+=("$path") EXTRA_TOPOS+=("$topo")
  EXTRA_SCHEDS+=("$label") EXTRA_GUEST+=("$label=$label:policy") EXTRA_PAIRS+=("hybridland:$label")
  if [[ $help == *--fifo* ]]; then
    EXTRA_SCHEDS+=("$label-fifo") EXTRA_GUEST+=("$label-fifo=$label:fifo") EXTRA_PAIRS+=("fifo:$label-fifo")
  fi
  if [[ $help == *--fixed-slice* ]]; then
    EXTRA_SCHEDS+=("$label-fixed") EXTRA_GUEST+=("$label-fixed=$label:fixed")
    EXTRA_PAIRS+=("hybridland-fixed:$label-fixed")
  fi
  log "extra: $label = $path ($("$path" --version 2>/dev/null || echo "no --version")), runs as ${EXTRA_SCHEDS[*]}"
done
[[ -n $LOADS ]] || die "HYBRIDLAND_BENCH_LOADS is empty; name some of: $ALL_LOADS profile"
for l in $LOADS; do
  [[ " $ALL_LOADS profile " == *" $l "* ]] || die "HYBRIDLAND_BENCH_LOADS: '$l' is none of: $ALL_LOADS profile"
done
ECLUSTER_ROUNDS=${HYBRIDLAND_BENCH_ECLUSTER_ROUNDS:-20}
[[ $ECLUSTER_ROUNDS =~ ^[1-9][0-9]*$ ]] && ((ECLUSTER_ROUNDS % 4 == 0)) ||
  die "HYBRIDLAND_BENCH_ECLUSTER_ROUNDS: '$ECLUSTER_ROUNDS' is not a positive multiple of 4 (one round per E-core in turn)"
TIMEOUT=${HYBRIDLAND_VM_TIMEOUT:-2400}
CONSOLE=${HYBRIDLAND_VM_CONSOLE:-$CACHE/bench-console.log}

# --- peers ---------------------------------------------------------------------------------------
# Each pinned release into its own root under .vm-cache/peers, sharing one target directory so
# the scx_utils/libbpf build is reused between them; built with the clang the installer chose
# (scripts/env.sh: BPF_CLANG, LIBCLANG_PATH). One that fails is named in the table and skipped.
PEERS=${HYBRIDLAND_BENCH_PEERS-scx_bpfland@1.1.4 scx_cosmos@1.1.7 scx_lavd@1.1.4 scx_rlfifo@1.1.4}
PEER_DIR=$CACHE/peers
mkdir -p "$PEER_DIR/logs"
PEER_BINS=() PEER_NAMES=() PEER_FAILED=()
for nv in $PEERS; do
  name=${nv%@*} ver=${nv#*@}
  bin=$PEER_DIR/$name-$ver/bin/$name
  if [[ ! -x "$bin" ]]; then
    log "building $name $ver (cargo install --locked; log $PEER_DIR/logs/$name-$ver.log)"
    # shellcheck source=scripts/env.sh
    . "$REPO/scripts/env.sh"
    if ! CARGO_TARGET_DIR=$PEER_DIR/target cargo install --locked --version "$ver" \
        --root "$PEER_DIR/$name-$ver" "$name" > "$PEER_DIR/logs/$name-$ver.log" 2>&1; then
      log "$name $ver did not build: $(grep -m1 '^error' "$PEER_DIR/logs/$name-$ver.log" || tail -n 1 "$PEER_DIR/logs/$name-$ver.log")"
      PEER_FAILED+=("$name")
      continue
    fi
  fi
  PEER_BINS+=("$bin") PEER_NAMES+=("$name")
done

# make_fakesys DIR: the machine of topology-2p-smt-4e.toml as scx_utils 1.1.4 reads sysfs
# (topology.rs: cpu/online, cpuN/topology/{core_id,physical_package_id,cluster_id},
# cpuN/cache/index{2,3}/{shared_cpu_list,id,size}, the capacity source, cpuN/cpufreq, smt/active;
# no node/ directory, so one node). Capacity comes from cpuN/cpu_capacity (the first source in
# its list that exists and differs between CPUs): 640 for E-cores 0-3, 1024 for P-cores 4-7,
# which scx_utils turns into CoreType::Little / Big. E-cores 0-3 are one-thread cores in L2
# clusters {0,2} and {1,3}; 4-5 and 6-7 are two-thread P-cores, each its own L2; one L3.
# Only user space reads this: the peers' BPF code still gets the kernel's own SMT idle mask, in
# which 0-1 and 2-3 are SMT pairs too.
make_fakesys() {
  local root=$1/sys/devices/system/cpu cpu core cluster l2 l2id sib cap kind freq
  mkdir -p "$root/smt"
  echo 0-7 > "$root/online"; echo 0-7 > "$root/possible"; echo 0-7 > "$root/present"
  echo 1 > "$root/smt/active"; echo on > "$root/smt/control"
  for cpu in 0 1 2 3 4 5 6 7; do
    if ((cpu < 4)); then
      kind=E cap=640 freq=2400000 core=$cpu sib=$cpu
      cluster=$((cpu % 2)); l2=$([[ $cluster == 0 ]] && echo 0,2 || echo 1,3); l2id=$cluster
    else
      kind=P cap=1024 freq=3800000 core=$((cpu / 2 * 2)); sib=$core-$((core + 1))
      cluster=$((cpu / 2)); l2=$sib; l2id=$cluster
    fi
    local d=$root/cpu$cpu
    mkdir -p "$d/topology" "$d/cpufreq" "$d/cache/index2" "$d/cache/index3"
    echo "$core" > "$d/topology/core_id"
    echo 0 > "$d/topology/physical_package_id"
    echo 0 > "$d/topology/die_id"
    echo "$cluster" > "$d/topology/cluster_id"
    echo "$sib" > "$d/topology/thread_siblings_list"
    echo "$sib" > "$d/topology/core_cpus_list"
    echo "$l2" > "$d/topology/cluster_cpus_list"
    echo 0-7 > "$d/topology/package_cpus_list"
    echo "$cap" > "$d/cpu_capacity"
    echo "$freq" > "$d/cpufreq/cpuinfo_max_freq"
    echo "$freq" > "$d/cpufreq/scaling_max_freq"
    echo 800000 > "$d/cpufreq/scaling_min_freq"
    printf '2\nUnified\n%s\n%s\n%s\n' "$l2" "$l2id" "$([[ $kind == E ]] && echo 2048K || echo 1280K)" |
      { read -r a; echo "$a" > "$d/cache/index2/level"; read -r a; echo "$a" > "$d/cache/index2/type"
        read -r a; echo "$a" > "$d/cache/index2/shared_cpu_list"; read -r a; echo "$a" > "$d/cache/index2/id"
        read -r a; echo "$a" > "$d/cache/index2/size"; }
    echo 3 > "$d/cache/index3/level"; echo Unified > "$d/cache/index3/type"
    echo 0-7 > "$d/cache/index3/shared_cpu_list"; echo 0 > "$d/cache/index3/id"
    echo 12288K > "$d/cache/index3/size"
  done
}

# shellcheck source=scripts/vm/lib.sh
. "$REPO/scripts/vm/lib.sh"
vm_prepare
VM_GUEST_SCRIPT=guest-bench.sh
vm_initramfs_begin
# The build under test is /hl/scx_hybridland whatever its file is called (a path argument may
# be a kept copy such as scx_hybridland-<commit>).
if [[ $(basename "$BIN") != scx_hybridland ]]; then
  cp "$BIN" "$WORK/scx_hybridland"
  BIN=$WORK/scx_hybridland
fi
for f in "$BIN" "$(command -v hackbench)" "$(command -v cyclictest)" "$(command -v stress-ng)" "${PEER_BINS[@]}"; do
  copy_with_libs "$f"
done
if [[ " $LOADS " == *" profile "* ]]; then
  for tool in perf bpftool; do
    copy_with_libs "$(command -v $tool)" || die "could not copy $tool into the guest"
  done
fi
gcc -O2 -static -o "$IR/hl/frame-task" "$REPO/scripts/vm/frame-task.c" -lm || die "could not build the frame task"
make_fakesys "$IR/hl/fakesys"
cp "$TOPO_FILE" "$IR/hl/topology.toml"
for i in "${!EXTRA_LABELS[@]}"; do
  # Under its own name, so that it does not replace this build's /hl/scx_hybridland.
  cp "${EXTRA_PATHS[i]}" "$WORK/scx_hybridland-${EXTRA_LABELS[i]}"
  copy_with_libs "$WORK/scx_hybridland-${EXTRA_LABELS[i]}"
  cp "${EXTRA_TOPOS[i]}" "$IR/hl/topology-${EXTRA_LABELS[i]}.toml"
done
cp "$REPO/scripts/vm/guest-bench.sh" "$IR/hl/guest-bench.sh"
SCHEDS="default fifo hybridland hybridland-fixed hybridland-balance ${EXTRA_SCHEDS[*]} ${PEER_NAMES[*]}"
SCHEDS=$(echo $SCHEDS)  # one space between names
if [[ -n "${HYBRIDLAND_BENCH_ORDER:-}" ]]; then
  order=""
  for s in $HYBRIDLAND_BENCH_ORDER; do
    [[ " $SCHEDS " == *" $s "* ]] || die "HYBRIDLAND_BENCH_ORDER: '$s' is none of: $SCHEDS"
    [[ " $order " != *" $s "* ]] || die "HYBRIDLAND_BENCH_ORDER: '$s' twice"
    order+=" $s"
  done
  SCHEDS=$(echo $order)
  log "schedulers in this order: $SCHEDS"
fi
cat > "$IR/hl/bench.env" <<EOF
BENCH_SCHEDS="$SCHEDS"
BENCH_EXTRA="${EXTRA_GUEST[*]}"
BENCH_LOADS="$LOADS"
BENCH_ECLUSTER_ROUNDS=$ECLUSTER_ROUNDS
BENCH_HACKBENCH="${HYBRIDLAND_BENCH_HACKBENCH:--g 4 -l 200}"
BENCH_REPS=${HYBRIDLAND_BENCH_REPS:-3}
BENCH_SWITCH_SECS=${HYBRIDLAND_BENCH_SWITCH_SECS:-3}
BENCH_CYCLIC_SECS=${HYBRIDLAND_BENCH_CYCLIC_SECS:-5}
BENCH_FRAME_SECS=${HYBRIDLAND_BENCH_FRAME_SECS:-8}
BENCH_FRAME_HOGS=${HYBRIDLAND_BENCH_FRAME_HOGS:-6}
BENCH_FRAME_MS=${HYBRIDLAND_BENCH_FRAME_MS:-10}
EOF
for name in hybridland "${EXTRA_LABELS[@]}" "${PEER_NAMES[@]}"; do
  var=HYBRIDLAND_BENCH_ARGS_$name
  echo "PEER_ARGS_$name=\"${!var:-}\"" >> "$IR/hl/bench.env"
done

OUT=$WORK/out.log
vm_boot "$TIMEOUT" "$CONSOLE" "$OUT"
[[ -n "$VM_RC" ]] || { tail -n 30 "$CONSOLE"; die "the guest did not finish (timeout or crash)"; }
cp "$OUT" "$CACHE/bench-out.log"

# --- tables --------------------------------------------------------------------------------------
echo
for p in "${PEER_FAILED[@]}"; do echo "$p: did not build (log in $PEER_DIR/logs)"; done
grep '^VMBENCH: .* error' "$OUT" && log "errors above: some figures are missing or suspect"
# Item 5's pairs: the policy's throughput over --fifo's, with its own slice rule and with
# --fixed-slice (fifo's rule); likewise each extra binary over its own --fifo.
ITEM5_PAIRS="hybridland:fifo hybridland-fixed:fifo"
for l in "${EXTRA_LABELS[@]}"; do
  for m in "$l" "$l-fixed"; do
    if [[ " $SCHEDS " == *" $l-fifo "* && " $SCHEDS " == *" $m "* ]]; then ITEM5_PAIRS+=" $m:$l-fifo"; fi
  done
done
BENCH_SCHEDS=$SCHEDS BENCH_ITEM5_PAIRS=$ITEM5_PAIRS BENCH_EXTRA_PAIRS="${EXTRA_PAIRS[*]}" \
  "$REPO/scripts/vm/bench-table.sh" "$OUT"
if grep '^VMPROF:' "$OUT" >/dev/null; then
  echo
  echo "==== profiles under stress-ng --switch 4 (VMPROF: sched bpf|comm|sym ...; scripts/vm/guest-bench.sh) ===="
  grep '^VMPROF:' "$OUT"
fi
[[ "$VM_RC" == 0 ]] || die "guest bench exited with status $VM_RC"
