#!/usr/bin/env bash
# Runs every test of the project, in the order a failure is cheapest to see:
#   0. the scripts' own checks: the installer's decisions against a stubbed apt, no
#      early-exit reader behind a pipe under pipefail, and the VM scripts stopping their VM
#      (a stub qemu) on SIGINT, SIGTERM and Ctrl-C, the systemd unit's exposure score, and
#      every relative link in the Markdown docs resolving (scripts/tests/);
#   1. the style: rustfmt, clippy and rustdoc with every warning an error, for the workspace
#      and for the fuzz workspace (fuzz/);
#   2. the workspace's unit, property, seed and integration tests (cargo test --workspace),
#      and a crate of one's own made by `hybrid-sim new-policy` as the README does it, built
#      and tested with no clang (scripts/tests/new-policy.sh);
#   3. the proof that the policy crate is no_std (ci/nostd-check);
#   4. the live scheduler loaded into a real sched_ext kernel under qemu (scripts/vm-check.sh),
#      started by systemd with the shipped unit (scripts/vm-systemd.sh), and beside a thread
#      storm (scripts/vm-storm.sh);
#   5. every fuzz target for a short bounded time (scripts/fuzz.sh).
# Before all of them, build dependencies (a clang >= 18, libbpf's, qemu, cpio, the guest kernel)
# are installed when missing by scripts/install-scx-deps.sh, which needs root and apt. Skip phases with
# HYBRIDLAND_SKIP="vm fuzz" (space-separated names: scripts style workspace nostd vm fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { [[ " ${HYBRIDLAND_SKIP:-} " == *" $1 "* ]]; }
phase() { printf '\n==> %s\n' "$*"; }

# First, so that every later phase finds its tools: the VM scripts' interrupt test starts the
# real scripts (with a stub qemu), which build an initrd with cpio before they boot.
if [[ -x scripts/install-scx-deps.sh ]] && ! { skip scripts && skip style && skip workspace && skip vm; }; then
  phase "installing build dependencies that are missing"
  scripts/install-scx-deps.sh
fi
if [[ -f scripts/env.sh ]]; then
  # Environment for building the BPF side (clang path, libclang) set by the installer.
  source scripts/env.sh
fi

if ! skip scripts; then
  phase "scripts: installer decisions (stubbed apt), pipefail lint, VM scripts interrupted, repeated vm-checks, void bench phases, medians of boots, unit score, documentation links"
  scripts/tests/installer.sh
  scripts/tests/pipefail-lint.sh
  scripts/tests/vm-interrupt.sh
  scripts/tests/vm-check-repeat.sh
  scripts/tests/bench-table.sh
  scripts/tests/bench-boots.sh
  scripts/tests/unit-security.sh
  scripts/tests/doc-links.sh
fi

if ! skip style; then
  phase "style: cargo fmt, clippy and doc with warnings denied (workspace, then fuzz/)"
  # Clippy and rustdoc build scx_hybridland, whose build script needs the installer's clang.
  # The generated BPF bindings are the one place warnings are allowed
  # (crates/scx-frontend/src/bindings.rs). The example's live binary is behind its `live`
  # feature, so the feature is named wherever the whole workspace is built.
  cargo fmt --all --check
  cargo clippy --workspace --all-targets --features my-policy/live --locked -- -D warnings
  RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --features my-policy/live --no-deps --locked
  # The fuzz workspace: stable is enough here (clippy and rustdoc do not instrument; only
  # `cargo fuzz build` needs nightly, scripts/fuzz.sh).
  (
    cd fuzz
    cargo fmt --check
    cargo clippy --all-targets --locked -- -D warnings
    RUSTDOCFLAGS=-Dwarnings cargo doc --no-deps --locked
  )
fi

if ! skip workspace; then
  phase "cargo test --workspace"
  # No backtraces: scx_hybridland's test binary runs on the framework's fixed 64 MiB heap
  # arena, where symbolizing a panic's backtrace (megabytes of debug info) fails its
  # allocation and the failing test hangs instead of reporting.
  export RUST_BACKTRACE=0
  cargo test --workspace --features my-policy/live --locked
  # The largest recording needs the framework's 64 MiB heap arena to itself, so it runs
  # alone, outside the parallel run above (where it is ignored). A renamed test would run
  # nothing and pass, hence the count.
  largest=$(cargo test --locked -p scx_hybridland --lib -- --ignored --exact \
    record::tests::the_largest_recording_of_relations_is_written_within_the_arena 2>&1) ||
    { echo "$largest"; exit 1; }
  echo "$largest" | tail -n 3
  grep -F "test result: ok. 1 passed" <<< "$largest" > /dev/null ||
    { echo "test.sh: the largest-recording test did not run" >&2; exit 1; }
  # After the workspace's build, whose target directory and downloads it shares.
  scripts/tests/new-policy.sh
fi

if ! skip nostd; then
  phase "no_std check: a #![no_std] staticlib with its own panic handler links the policy"
  (cd ci/nostd-check && cargo build --quiet)
fi

if ! skip vm && [[ -x scripts/vm-check.sh ]]; then
  phase "live scheduler in a sched_ext VM"
  cargo build --release --locked -p scx_hybridland -p my-policy --features my-policy/live
  # One VM run decides: each placement check samples enough to tell the policy from its
  # controls in that run (scripts/vm/guest-checks.sh), so nothing is repeated.
  scripts/vm-check.sh
  # The hardened unit under systemd as PID 1: systemctl start, loaded, stop.
  scripts/vm-systemd.sh
  # An unprivileged thread storm with pid_max 4194304, with and without --record: still loaded,
  # task table within --max-tasks, recording written.
  scripts/vm-storm.sh
fi

if ! skip fuzz && [[ -x scripts/fuzz.sh ]]; then
  phase "fuzz targets, short bounded runs"
  scripts/fuzz.sh "${HYBRIDLAND_FUZZ_SECONDS:-30}"
fi

phase "all tests passed"
