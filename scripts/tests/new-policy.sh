#!/usr/bin/env bash
# A crate of your own, as the README makes it: runs the README's fenced `sh` block that calls
# `hybrid-sim new-policy`, line by line as written, with HOME a temporary directory (the block
# writes ~/my-idea) and no clang anywhere: a PATH with every other program but none named
# clang*, and BPF_CLANG and LIBCLANG_PATH unset. The crate's simulator binary must build and its
# test must run and pass there.
#
# Cheap beside the workspace's tests: the target directory is the workspace's
# ($CARGO_TARGET_DIR or target/), and cargo runs offline (the crate's Cargo.lock is the
# workspace's, whose crates the workspace's build downloaded), so only the project's own crates
# build again (different features), not their dependencies.
#
# Usage: scripts/tests/new-policy.sh   (scripts/test.sh runs it after `cargo test --workspace`)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
log() { echo "new-policy: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The README block that makes the crate: fenced `sh` blocks, the one calling new-policy.
awk '
  /^```/ { if (inblock) { if (block ~ /new-policy/) { printf "%s", block; exit } inblock = 0; next }
           if ($0 == "```sh") { inblock = 1; block = "" } ; next }
  inblock { block = block $0 "\n" }
' README.md > "$WORK/block.sh"
[[ -s "$WORK/block.sh" ]] || fail "no sh block calling new-policy in README.md"
grep -q '^cargo test' "$WORK/block.sh" || fail "the README block runs no cargo test"

# A PATH with every program of the current one except clang (first of each name wins, as in
# PATH lookup).
NOCLANG=$WORK/bin
mkdir -p "$NOCLANG"
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [[ -d "$d" ]] || continue
  for f in "$d"/*; do
    n=${f##*/}
    [[ "$n" == clang* || "$n" == *-clang* ]] && continue
    [[ -f "$f" && -x "$f" && ! -e "$NOCLANG/$n" ]] && ln -s "$f" "$NOCLANG/$n"
  done
done

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
export CARGO_NET_OFFLINE=true CARGO_TERM_COLOR=never NO_COLOR=1
mkdir -p "$WORK/home"
run_noclang() {
  env -u BPF_CLANG -u LIBCLANG_PATH HOME="$WORK/home" PATH="$NOCLANG" "$@"
}
run_noclang bash -c '! command -v clang' > /dev/null || fail "clang is still on the test's PATH"

log "running the README block with HOME=$WORK/home and no clang:"
sed 's/^/    /' "$WORK/block.sh" >&2
rc=0
run_noclang bash -euo pipefail "$WORK/block.sh" > "$WORK/out" 2>&1 || rc=$?
if ((rc)); then
  tail -n 40 "$WORK/out" >&2
  fail "the README block failed (status $rc)"
fi
CRATE=$WORK/home/my-idea
[[ -f "$CRATE/Cargo.toml" && -f "$CRATE/Cargo.lock" ]] || fail "no crate at $CRATE"
grep -q "^test the_policy_replays_beside_hybridland ... ok" "$WORK/out" ||
  { tail -n 40 "$WORK/out" >&2; fail "the crate's test did not run and pass"; }
[[ -x "$CARGO_TARGET_DIR/debug/my-idea-sim" ]] || fail "no my-idea-sim built"
log "the crate's simulator binary built without clang and its test passed"
