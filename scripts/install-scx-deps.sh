#!/usr/bin/env bash
# scripts/install-scx-deps.sh: install what building scx_hybridland and running
# scripts/vm-check.sh need, when it is missing. Idempotent: installs nothing when everything is
# there (it then does not even need root).
#
#   build: a clang of version 18 or newer (scx_cargo refuses older ones) with its libclang,
#          libelf-dev zlib1g-dev pkg-config make libseccomp-dev
#   VM:    qemu-system-x86 busybox-static cpio file rt-tests (hackbench) gcc libc6-dev (the static thread storm)
#   checks: systemd (systemd-analyze, which scores the unit: scripts/tests/unit-security.sh)
#
# clang: an installed `clang`, `clang-21` ... `clang-18` is used as it is. Otherwise the newest
# `clang-N` (21 down to 18) that the configured suites offer is installed with `llvm-N`; if none
# offers one, one suite that does (<codename>-backports, then sid) is added by copying the
# machine's own Debian entry in /etc/apt/sources.list.d/ and changing only the suite, pinned at
# priority 50 so nothing else is upgraded from it. No mirror name is written by this script.
# When no `clang` is on PATH afterwards, the versioned one is registered as `clang` with
# update-alternatives, because scx_utils' build script runs plain `clang`: a plain
# `cargo build --workspace` then works without sourcing scripts/env.sh.
#
# HYBRIDLAND_APT_ETC (default /etc/apt) is where suites are added; scripts/tests/installer.sh
# points it, and PATH, at a stubbed apt to check these decisions.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib/clang.sh
source "$here/lib/clang.sh"
log() { echo "install-scx-deps: $*" >&2; }
APT_ETC=${HYBRIDLAND_APT_ETC:-/etc/apt}

BUILD_PKGS=(libelf-dev zlib1g-dev pkg-config make libseccomp-dev)
VM_PKGS=(qemu-system-x86 busybox-static cpio file rt-tests gcc libc6-dev)
CHECK_PKGS=(systemd)

# Command output is captured before it is matched: `cmd | grep -q` under pipefail fails with
# SIGPIPE (141) whenever grep matches before cmd has written everything.
installed() {
  local st
  st=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ $st == "install ok installed" ]]
}
offered() {
  local out
  out=$(apt-cache policy "$1" 2>/dev/null) || return 1
  [[ $out =~ Candidate:\ [0-9] ]]
}
newest_offered_clang() {
  local n
  for ((n = HL_CLANG_MAX; n >= HL_CLANG_MIN; n--)); do
    if offered "clang-$n"; then
      echo "$n"
      return 0
    fi
  done
  return 1
}
as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }

# Registers clang-N as plain `clang` when no `clang` is on PATH (see the header).
alias_clang() {
  local ver=$1 have
  if have=$(command -v clang 2>/dev/null); then
    local v
    v=$(hl_clang_major clang || echo "?")
    if [[ $v == "?" ]] || ((v < HL_CLANG_MIN)); then
      log "warning: $have is clang $v; scx_utils' build runs plain clang: 'source scripts/env.sh' before cargo"
    fi
    return 0
  fi
  local target
  target=$(command -v "clang-$ver") || return 0
  as_root update-alternatives --install /usr/bin/clang clang "$target" 100 >/dev/null
  log "registered $target as clang (update-alternatives)"
}

missing=()
for p in "${BUILD_PKGS[@]}" "${VM_PKGS[@]}" "${CHECK_PKGS[@]}"; do
  installed "$p" || missing+=("$p")
done
clang_ver=""
if found=$(hl_find_clang); then
  read -r clang_cmd clang_ver <<<"$found"
  log "using $clang_cmd (clang $clang_ver)"
  if ! hl_libclang_dir "$clang_ver" >/dev/null && ! installed "libclang1-$clang_ver"; then
    missing+=("libclang1-$clang_ver")
  fi
fi

if ((${#missing[@]} == 0)) && [[ -n $clang_ver ]]; then
  log "everything is installed"
  alias_clang "$clang_ver"
  exit 0
fi
want=("${missing[@]}")
[[ -n $clang_ver ]] || want+=("clang-$HL_CLANG_MIN or newer")
if [[ $(id -u) != 0 ]] && ! command -v sudo >/dev/null; then
  log "not root and no sudo: install ${want[*]} yourself"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends)
log "missing: ${want[*]}"
as_root apt-get update -q

suite_opt=()
if [[ -z $clang_ver ]]; then
  if ! clang_ver=$(newest_offered_clang); then
    src=""
    for f in "$APT_ETC"/sources.list.d/*.sources; do
      [[ -r $f ]] || continue
      if grep -qi '^Suites:.*\b\(bookworm\|trixie\)\b' "$f"; then src=$f; break; fi
    done
    if [[ -z $src ]]; then
      log "no clang >= $HL_CLANG_MIN offered and no deb822 Debian entry in $APT_ETC/sources.list.d/ to add a suite from: install clang-19 yourself"
      exit 1
    fi
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    for extra in "$codename-backports" sid; do
      stanza=$(awk -v RS= '/Suites:/ && !/-security/ {print; exit}' "$src" |
        sed "s/^Suites:.*/Suites: $extra/")
      printf '%s\n' "$stanza" | as_root tee "$APT_ETC/sources.list.d/hybridland-$extra.sources" >/dev/null
      printf 'Package: *\nPin: release n=%s\nPin-Priority: 50\n' "$extra" |
        as_root tee "$APT_ETC/preferences.d/hybridland-$extra" >/dev/null
      as_root apt-get update -q
      if clang_ver=$(newest_offered_clang); then
        suite_opt=(-t "$extra")
        log "clang-$clang_ver comes from $extra (pinned at 50)"
        break
      fi
      as_root rm -f "$APT_ETC/sources.list.d/hybridland-$extra.sources" "$APT_ETC/preferences.d/hybridland-$extra"
    done
    if ((${#suite_opt[@]} == 0)); then
      log "no suite offers clang-$HL_CLANG_MIN..$HL_CLANG_MAX: install clang-19 (or any clang >= $HL_CLANG_MIN as clang) yourself"
      exit 1
    fi
  fi
  as_root "${APT[@]}" "${suite_opt[@]}" install "clang-$clang_ver" "llvm-$clang_ver"
fi
if ((${#missing[@]})); then
  as_root "${APT[@]}" install "${missing[@]}"
fi
alias_clang "$clang_ver"
log "installed what was missing; clang is clang-$clang_ver"
