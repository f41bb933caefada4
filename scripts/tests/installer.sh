#!/usr/bin/env bash
# Checks scripts/install-scx-deps.sh's decisions against a stubbed apt, whatever this machine
# has installed: PATH holds only stubs (dpkg-query, apt-cache, apt-get, update-alternatives,
# id, clang-N) and links to a few plain tools, and HYBRIDLAND_APT_ETC points at a private
# directory. The stub apt-cache pauses after its Candidate line, as a real one can between
# writes, so `apt-cache policy X | grep -q` under pipefail fails here every time instead of
# now and then.
#
#   scripts/tests/installer.sh [INSTALLER]   (default: scripts/install-scx-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
INSTALLER=$(realpath "${1:-scripts/install-scx-deps.sh}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "installer test: FAIL: $*" >&2; failures=$((failures + 1)); }

# One scenario's world. $1: packages installed ("pkg ..."); $2: clang versions installed as
# clang-N; $3: "suite:pkg ..." offered (suite "main" = the configured suites).
setup() {
  rm -rf "$WORK/s" && mkdir -p "$WORK/s/bin" "$WORK/s/etc/sources.list.d" "$WORK/s/etc/preferences.d"
  local t
  for t in awk sed grep cat rm mkdir tee dirname mktemp env bash sleep realpath tr sort chmod ln; do
    ln -s "$(command -v "$t")" "$WORK/s/bin/$t"
  done
  printf '%s\n' $1 >"$WORK/s/installed"
  printf '%s\n' $3 >"$WORK/s/offered"
  cat >"$WORK/s/etc/sources.list.d/debian.sources" <<'SRC'
Types: deb
URIs: http://mirror.example.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.invalid/debian-security
Suites: bookworm-security
Components: main
SRC
  local v
  for v in $2; do make_clang "clang-$v" "$v"; done
  stub id 'echo 0'
  stub dpkg-query 'grep -qx "${@: -1}" "$S/installed" || exit 1; printf "install ok installed"'
  stub apt-cache '
[ "$1" = policy ] || exit 0
pkg=$2 ok=
while read -r entry; do
  suite=${entry%%:*}
  [ "${entry#*:}" = "$pkg" ] || continue
  if [ "$suite" = main ] || [ -e "$S/etc/sources.list.d/hybridland-$suite.sources" ]; then ok=1; fi
done <"$S/offered"
echo "$pkg:"
echo "  Installed: (none)"
if [ -n "$ok" ]; then echo "  Candidate: 1:19.1.7-1"; else echo "  Candidate: (none)"; fi
sleep 0.2
echo "  Version table:"
echo "     1:19.1.7-1 500"'
  stub apt-get '
echo "apt-get $*" >>"$S/apt-get.log"
for a in "$@"; do
  case $a in
    clang-*) n=${a#clang-}; printf "#!/bin/sh\necho \"Debian clang version %s.1.0\"\n" "$n" >"$S/bin/$a"; chmod +x "$S/bin/$a" ;;
  esac
done
exit 0'
  stub update-alternatives 'echo "update-alternatives $*" >>"$S/alternatives.log"; ln -sf "$5" "$S/bin/clang"'
}
stub() { printf '#!/bin/bash\nS=%q\n%s\n' "$WORK/s" "$2" >"$WORK/s/bin/$1"; chmod +x "$WORK/s/bin/$1"; }
make_clang() { stub "$1" "echo 'Debian clang version $2.1.7 (3~deb12u1)'"; }

run() {
  set +e
  PATH="$WORK/s/bin" HYBRIDLAND_APT_ETC="$WORK/s/etc" bash "$INSTALLER" >"$WORK/out" 2>&1
  rc=$?
  set -e
}
log_has() { grep -q -- "$2" "$WORK/s/$1" 2>/dev/null || fail "$scenario: $1 lacks '$2'"; }
log_lacks() { if grep -q -- "$2" "$WORK/s/$1" 2>/dev/null; then fail "$scenario: $1 has '$2'"; fi; }
ok_exit() { ((rc == 0)) || fail "$scenario: exit $rc: $(cat "$WORK/out")"; }

ALL="libelf-dev zlib1g-dev pkg-config make libseccomp-dev qemu-system-x86 busybox-static cpio file rt-tests gcc libc6-dev systemd"

scenario="fresh machine, the configured suites offer clang-18 and clang-19"
setup "" "" "main:clang-18 main:clang-19"
run; ok_exit
log_has apt-get.log "install clang-19 llvm-19"
log_lacks apt-get.log " -t "
log_has apt-get.log "install libelf-dev"
log_has alternatives.log "clang-19"
[[ -z $(ls "$WORK/s/etc/sources.list.d" | grep -v '^debian.sources$' || true) ]] ||
  fail "$scenario: added a suite although one was configured"

scenario="fresh machine, only sid offers clang (19 and 21)"
setup "" "" "sid:clang-19 sid:clang-21"
run; ok_exit
log_has apt-get.log "-t sid install clang-21 llvm-21"
[[ -e $WORK/s/etc/sources.list.d/hybridland-sid.sources ]] || fail "$scenario: no sid entry"
[[ ! -e $WORK/s/etc/sources.list.d/hybridland-bookworm-backports.sources ]] ||
  fail "$scenario: the backports entry that offered nothing was left behind"
grep -qx 'Pin-Priority: 50' "$WORK/s/etc/preferences.d/hybridland-sid" 2>/dev/null ||
  fail "$scenario: sid is not pinned at 50"
# Every address in what was written is one the machine already had: no mirror name of our own.
written=$(cat "$WORK"/s/etc/sources.list.d/hybridland-* "$WORK"/s/etc/preferences.d/hybridland-* 2>/dev/null)
while read -r uri; do
  [[ -z $uri ]] || [[ $uri == http://mirror.example.invalid/debian ]] || fail "$scenario: wrote address $uri"
done < <(grep -o '[a-z]*://[^ ]*' <<<"$written" || true)
grep -q '^Suites: sid$' <<<"$written" || fail "$scenario: the sid entry does not name the suite"

scenario="no suite offers any clang >= 18"
setup "$ALL" "" "main:clang-14 sid:clang-16"
run
((rc != 0)) || fail "$scenario: exit 0"
grep -q 'install clang-19' "$WORK/out" || fail "$scenario: message does not say what to install: $(cat "$WORK/out")"
log_lacks apt-get.log " install "
[[ ! -e $WORK/s/etc/sources.list.d/hybridland-sid.sources ]] || fail "$scenario: left the sid entry"

scenario="everything installed, clang-18 only"
setup "$ALL libclang1-18" "18" ""
run; ok_exit
[[ ! -e $WORK/s/apt-get.log ]] || fail "$scenario: ran apt-get: $(cat "$WORK/s/apt-get.log")"
log_has alternatives.log "clang-18"
grep -q 'using clang-18' "$WORK/out" || fail "$scenario: $(cat "$WORK/out")"

scenario="an old plain clang (14) beside clang-20"
setup "$ALL libclang1-20" "20" ""
make_clang clang 14
run; ok_exit
grep -q 'using clang-20' "$WORK/out" || fail "$scenario: $(cat "$WORK/out")"
grep -q 'warning: .*clang 14' "$WORK/out" || fail "$scenario: no warning about the old clang"
[[ ! -e $WORK/s/alternatives.log ]] || fail "$scenario: replaced an existing clang"

# The project's scripts name no mirror: every address in them is a project or documentation link.
if grep -n 'deb\.debian\|debian\.org/debian\|mirror\.' scripts/*.sh scripts/lib/*.sh scripts/vm/*.sh 2>/dev/null |
  grep -v 'mirror\.example\.invalid' >"$WORK/mirrors"; then
  fail "a script names a mirror: $(cat "$WORK/mirrors")"
fi

if ((failures)); then
  echo "installer test: $failures failure(s)" >&2
  exit 1
fi
echo "installer test: 5 scenarios pass"
