#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time and fails if any of them crashes.
#
#   scripts/fuzz.sh [SECONDS]      # seconds per target, default 30
#   FUZZ_TARGETS="cpu_list placement" scripts/fuzz.sh 300   # only some targets, longer
#   FUZZ_SANITIZER=address scripts/fuzz.sh 600                # with AddressSanitizer
#
# The sanitizer defaults to none: the crates the targets exercise (the policy and the
# simulator) are #![forbid(unsafe_code)], so AddressSanitizer would only watch dependencies,
# while it doubles the build time and cuts executions per second three- to fivefold. Memory
# growth is caught either way by -rss_limit_mb.
#
# Needs the nightly toolchain (cargo-fuzz builds with -Z flags); installs cargo-fuzz with `cargo install` when it
# is missing. Each target starts from its committed seeds (fuzz/corpus/<target>/seed-*) plus
# whatever earlier local runs left in that directory. A crashing input is saved under
# fuzz/artifacts/<target>/ and its path printed; reproduce it with
#   cargo +nightly fuzz run -s none <target> fuzz/artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds == 0 )); then
  echo "usage: $0 [SECONDS]  (a positive whole number of seconds per target)" >&2
  exit 2
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

echo "==> building fuzz targets (sanitizer: $sanitizer)"
cargo +nightly fuzz build -s "$sanitizer"

failed=()
summary=()
for t in $targets; do
  echo "==> fuzzing $t for ${seconds}s"
  mkdir -p "corpus/$t"
  # -timeout: an input running over 10 s counts as a crash (a hang);
  # -rss_limit_mb: so does growing past 2 GiB. replay's limits workload (a 1024-CPU cluster,
  # 250,000 events of tiny runs) peaks at tens of MiB when healthy, so 512 MiB there: memory
  # that grows with events or work that grows with the cluster is a crash (issue 13).
  rss=2048
  if [[ $t == replay ]]; then rss=512; fi
  if cargo +nightly fuzz run -s "$sanitizer" "$t" -- -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb="$rss" -print_final_stats=1 >"$logs/$t.log" 2>&1; then
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | tail -1)"
    cov="$(grep -o 'cov: [0-9]*' "$logs/$t.log" | tail -1)"
    summary+=("$(printf '%-18s ok     %10s runs  %7s exec/s  %s' "$t" "${runs:-?}" "${rate:-?}" "$cov")")
  else
    tail -n 60 "$logs/$t.log"
    failed+=("$t")
    summary+=("$(printf '%-18s FAILED (see above; input under fuzz/artifacts/%s/)' "$t" "$t")")
  fi
done

echo
echo "==> fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if (( ${#failed[@]} > 0 )); then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
