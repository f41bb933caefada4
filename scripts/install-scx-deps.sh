#!/usr/bin/env bash
# scripts/install-scx-deps.sh: install what building scx_hybridland and running
# scripts/vm-check.sh need, when it is missing. Idempotent: installs nothing when everything is
# there (it then does not even need root).
#
#   build: clang-19 llvm-19 (scx_cargo refuses clang < 18), libelf-dev zlib1g-dev pkg-config
#          make libseccomp-dev
#   VM:    qemu-system-x86 busybox-static cpio file rt-tests (hackbench)
#
# If the configured suites have no clang-19, one suite that has it (bookworm-backports, then
# sid) is added by copying the machine's own Debian entry in /etc/apt/sources.list.d/ and
# changing only the suite, pinned at priority 50 so nothing else is upgraded from it; only the
# clang/llvm packages are pulled from there (apt -t). No mirror name is written by this script.
# The environment the BPF build then needs (BPF_CLANG, LIBCLANG_PATH) is in scripts/env.sh,
# which scripts/test.sh sources.
set -euo pipefail
log() { echo "install-scx-deps: $*" >&2; }

BUILD_PKGS=(clang-19 llvm-19 libelf-dev zlib1g-dev pkg-config make libseccomp-dev)
VM_PKGS=(qemu-system-x86 busybox-static cpio file rt-tests)

missing=()
for p in "${BUILD_PKGS[@]}" "${VM_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  log "everything is installed"
  exit 0
fi
log "missing: ${missing[*]}"
if [[ $(id -u) != 0 ]]; then
  SUDO=sudo
  command -v sudo >/dev/null || { log "not root and no sudo: install ${missing[*]} yourself"; exit 1; }
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
APT=($SUDO apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends)
$SUDO apt-get update -q

# clang-19 from the configured suites, or from a suite added for it.
suite_opt=()
if [[ " ${missing[*]} " == *" clang-19 "* ]] && ! apt-cache policy clang-19 | grep -q 'Candidate: [0-9]'; then
  src=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] && grep -qi '^Suites:.*\b\(bookworm\|trixie\)\b' "$f" && { src=$f; break; }
  done
  [[ -n "$src" ]] || { log "no deb822 Debian entry in /etc/apt/sources.list.d/ to copy a suite from"; exit 1; }
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  for extra in "$codename-backports" sid; do
    stanza=$(awk -v RS= '/Suites:/ && !/-security/ {print; exit}' "$src" |
      sed "s/^Suites:.*/Suites: $extra/")
    printf '%s\n' "$stanza" | $SUDO tee /etc/apt/sources.list.d/hybridland-$extra.sources >/dev/null
    printf 'Package: *\nPin: release n=%s\nPin-Priority: 50\n' "$extra" |
      $SUDO tee /etc/apt/preferences.d/hybridland-$extra >/dev/null
    $SUDO apt-get update -q
    if apt-cache policy clang-19 | grep -q 'Candidate: [0-9]'; then
      suite_opt=(-t "$extra")
      log "clang-19 comes from $extra (pinned at 50)"
      break
    fi
    $SUDO rm -f /etc/apt/sources.list.d/hybridland-$extra.sources /etc/apt/preferences.d/hybridland-$extra
  done
  ((${#suite_opt[@]})) || { log "no suite offers clang-19"; exit 1; }
fi

llvm=() rest=()
for p in "${missing[@]}"; do
  case "$p" in clang-19|llvm-19) llvm+=("$p") ;; *) rest+=("$p") ;; esac
done
((${#llvm[@]})) && "${APT[@]}" "${suite_opt[@]}" install "${llvm[@]}"
((${#rest[@]})) && "${APT[@]}" install "${rest[@]}"
log "installed: ${missing[*]}"
