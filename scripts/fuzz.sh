#!/usr/bin/env bash
# Runs cargo-fuzz targets in fuzz/, one at a time, and fails if any of them crashes.
#
#   scripts/fuzz.sh [SECONDS]      # seconds per target, default 30
#   FUZZ_TARGETS="cpu_list placement" scripts/fuzz.sh 300   # only some targets, longer
#   FUZZ_SANITIZER=address scripts/fuzz.sh 600                # with AddressSanitizer
#
# A long campaign: an executions goal per target, SECONDS as each target's cap, and a wall
# clock after which no target starts and a running one is stopped (its figures still count):
#
#   FUZZ_RUNS=10000000 FUZZ_REPLAY_RUNS=1000000 FUZZ_UNTIL="2026-11-24 00:55 UTC" \
#     nice -n 19 scripts/fuzz.sh 3600
#
# FUZZ_RUNS is the goal of the parser and builder targets, FUZZ_REPLAY_RUNS (default
# FUZZ_RUNS / 10) that of the targets that run the policy or replay a trace (placement, replay,
# compare, timeline). A target stops at its goal, at SECONDS, or at FUZZ_UNTIL, whichever
# comes first; one that has not started by FUZZ_UNTIL is listed as not run. The summary
# gives per target its executions, executions per second, coverage and crashes, and whether
# the goal was reached; FUZZ_SUMMARY=FILE also writes it there.
#
# Inputs may grow to each target's -max_len (below), large enough for the limits it guards:
# 1,024 CPUs as a list, a machine file of 1,024 single-CPU runs, a trace past 1,024 phases
# per task or 256 pools, 8,192 recorder events.
#
# The sanitizer defaults to none: the crates the targets exercise (the policy and the
# simulator) are #![forbid(unsafe_code)], so AddressSanitizer would only watch dependencies,
# while it doubles the build time and cuts executions per second three- to fivefold. Memory
# growth is caught either way by -rss_limit_mb.
#
# Needs the nightly toolchain (cargo-fuzz builds with -Z flags); installs cargo-fuzz with
# `cargo install` when it is missing. Each target starts from its committed seeds
# (fuzz/corpus/<target>/seed-*) plus whatever earlier local runs left in that directory. That
# grows and slows a target down; `cargo +nightly fuzz cmin -s none <target>` shrinks it but
# replaces the directory, seeds included (`git checkout -- fuzz/corpus/<target>` puts them
# back). A crashing input is saved under fuzz/artifacts/<target>/ and its path printed;
# reproduce it with
#   cargo +nightly fuzz run -s none <target> fuzz/artifacts/<target>/<file>
set -euo pipefail
# FUZZ_SUMMARY is named from where the script was started, not from fuzz/.
if [[ -n "${FUZZ_SUMMARY:-}" && "$FUZZ_SUMMARY" != /* ]]; then FUZZ_SUMMARY="$PWD/$FUZZ_SUMMARY"; fi
cd "$(dirname "$0")/../fuzz"

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds == 0 )); then
  echo "usage: $0 [SECONDS]  (a positive whole number of seconds per target)" >&2
  exit 2
fi
runs="${FUZZ_RUNS:-0}"
replay_runs="${FUZZ_REPLAY_RUNS:-$((runs / 10))}"
for n in "$runs" "$replay_runs"; do
  if ! [[ "$n" =~ ^[0-9]+$ ]]; then
    echo "fuzz.sh: FUZZ_RUNS and FUZZ_REPLAY_RUNS are whole numbers of executions" >&2
    exit 2
  fi
done
until_epoch=0
if [[ -n "${FUZZ_UNTIL:-}" ]]; then
  if ! until_epoch="$(date -d "$FUZZ_UNTIL" +%s 2>/dev/null)"; then
    echo "fuzz.sh: FUZZ_UNTIL is not a date: $FUZZ_UNTIL" >&2
    exit 2
  fi
fi

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz.sh: the nightly toolchain is required (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

sanitizer="${FUZZ_SANITIZER:-none}"
targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# The largest input each target may be given: room for the limits it guards.
max_len() {
  case "$1" in
    cpu_list) echo 16384 ;;              # 1,024 CPUs one by one: about 4 KiB
    knobs) echo 65536 ;;                 # thousands of --set items
    machine_file | topology_builder) echo 131072 ;;  # 1,024 single-CPU runs
    trace_parse | rt_app | ftrace | live_parse) echo 131072 ;;  # > 1,024 phases, 256 pools
    trace_builder) echo 65536 ;;         # 8,192 recorder events
    *) echo 65536 ;;
  esac
}

is_replay() { [[ $1 == replay || $1 == compare || $1 == timeline || $1 == placement ]]; }

echo "==> building fuzz targets (sanitizer: $sanitizer)"
cargo +nightly fuzz build -s "$sanitizer"

failed=()
summary=()
for t in $targets; do
  budget="$seconds"
  if (( until_epoch > 0 )); then
    left=$(( until_epoch - $(date +%s) ))
    if (( left <= 0 )); then
      summary+=("$(printf '%-18s not run (FUZZ_UNTIL passed)' "$t")")
      continue
    fi
    (( left < budget )) && budget="$left"
  fi
  goal=0
  if (( runs > 0 )); then
    goal="$runs"
    if is_replay "$t"; then goal="$replay_runs"; fi
  fi
  echo "==> fuzzing $t for up to ${budget}s$( (( goal > 0 )) && echo " or $goal executions")"
  mkdir -p "corpus/$t"
  # -timeout: an input running over 10 s counts as a crash (a hang);
  # -rss_limit_mb: so does growing past 2 GiB. replay's limits workload (a 1024-CPU cluster,
  # 250,000 events of tiny runs) peaks at tens of MiB when healthy, so 512 MiB there: memory
  # that grows with events or work that grows with the cluster is a crash. Its
  # largest trace (200,000 tasks, the format's limit) stays within that too.
  rss=2048
  if [[ $t == replay ]]; then rss=512; fi
  extra=()
  if (( goal > 0 )); then extra+=(-runs="$goal"); fi
  if cargo +nightly fuzz run -s "$sanitizer" "$t" -- -max_total_time="$budget" -timeout=10 \
       -rss_limit_mb="$rss" -max_len="$(max_len "$t")" -print_final_stats=1 "${extra[@]}" \
       >"$logs/$t.log" 2>&1; then
    status=ok
    crashes=0
  elif grep -q 'libFuzzer: run interrupted' "$logs/$t.log"; then
    # Stopped from outside (a SIGINT to the fuzzer): no crash; its figures count as they are.
    status=STOPPED
    crashes=0
  else
    tail -n 60 "$logs/$t.log"
    failed+=("$t")
    status=FAILED
    crashes=1
  fi
  n="$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$logs/$t.log" | tail -1 || true)"
  reached=""
  if (( goal > 0 )); then
    if [[ $status == ok && "${n:-0}" -ge $goal ]]; then reached="goal $goal reached"; else reached="goal $goal NOT reached"; fi
  fi
  line="$(printf '%-16s %-6s %11s runs %8s exec/s %-9s crashes %d  %s' "$t" "$status" \
    "${n:-?}" "${rate:-?}" "${cov:-cov: ?}" "$crashes" "$reached")"
  if [[ $status == FAILED ]]; then line+="  (input under fuzz/artifacts/$t/)"; fi
  summary+=("$line")
  echo "$line"
done

echo
echo "==> fuzz summary (up to ${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if [[ -n "${FUZZ_SUMMARY:-}" ]]; then printf '%s\n' "${summary[@]}" >"$FUZZ_SUMMARY"; fi
if (( ${#failed[@]} > 0 )); then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
