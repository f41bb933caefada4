#!/usr/bin/env bash
# fetch-kernel.sh CACHE_DIR
#
# Puts a Debian unstable ("sid") cloud kernel built with CONFIG_SCHED_CLASS_EXT=y into
# CACHE_DIR/kernel/ and prints the path of its vmlinuz on stdout. The version is resolved at
# run time (linux-image-cloud-amd64 -> linux-image-<ver>-cloud-amd64 -> linux-binary-<ver>-...),
# so this keeps working as sid moves on; a kernel already in the cache is reused.
#
# The system's apt configuration is not touched: a private apt state under CACHE_DIR/apt lists
# the sid suite, derived from the machine's own Debian entry in /etc/apt/sources.list.d/ (or
# /etc/apt/sources.list) with only the suite changed, so no mirror name is written anywhere.
# Set HYBRIDLAND_KERNEL=/path/to/vmlinuz to skip all of this and use a kernel you already have.
set -euo pipefail

CACHE=${1:?usage: fetch-kernel.sh CACHE_DIR}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
log() { echo "fetch-kernel: $*" >&2; }

if [[ -n "${HYBRIDLAND_KERNEL:-}" ]]; then
  [[ -r "$HYBRIDLAND_KERNEL" ]] || { log "HYBRIDLAND_KERNEL=$HYBRIDLAND_KERNEL is not readable"; exit 1; }
  echo "$HYBRIDLAND_KERNEL"; exit 0
fi

# A kernel fetched less than a week ago is reused without asking apt (CI caches, offline runs).
existing=$(ls -1t "$CACHE"/kernel/*/vmlinuz 2>/dev/null | sed -n 1p || true)
if [[ -n "$existing" && -z "${HYBRIDLAND_KERNEL_REFRESH:-}" ]] &&
   [[ -n $(find "$existing" -mtime -7 2>/dev/null) ]]; then
  echo "$existing"; exit 0
fi

APT=$CACHE/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/parts" "$APT/prefs"

# The machine's Debian mirror and keyring: first deb822 stanza (or one-line entry) whose suite
# is a plain release (no -security), with only the suite replaced by sid.
uri="" keyring=""
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -r "$f" ]] || continue
  stanza=$(awk -v RS= '/(^|\n)Suites:[^\n]*(bookworm|trixie|stable|sid|unstable)([ \n]|$)/ && !/Suites:[^\n]*-security/ {print; exit}' "$f")
  [[ -n "$stanza" ]] || continue
  grep -qi '^Types:.*\bdeb\b' <<<"$stanza" || continue
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' <<<"$stanza" | sed -n 1p)
  keyring=$(sed -n 's/^Signed-By:[[:space:]]*\(.*\)$/\1/p' <<<"$stanza" | sed -n 1p)
  [[ -n "$uri" ]] && break
done
if [[ -z "$uri" && -r /etc/apt/sources.list ]]; then
  uri=$(awk '$1=="deb" && $3 !~ /-security/ {for(i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
[[ -n "$uri" ]] || { log "no Debian entry found in /etc/apt/sources.list.d/ or /etc/apt/sources.list"; exit 1; }
{
  echo "Types: deb"
  echo "URIs: $uri"
  echo "Suites: sid"
  echo "Components: main"
  [[ -n "$keyring" ]] && echo "Signed-By: $keyring"
} > "$APT/parts/sid.sources"
: > "$APT/sources.list"

apt_opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/parts"
          -o "Dir::Etc::PreferencesParts=$APT/prefs" -o "Dir::State::Lists=$APT/lists"
          -o "Dir::Cache=$APT/cache" -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1"
          -o "Acquire::Languages=none")
log "updating the private sid package list"
apt-get "${apt_opts[@]}" -qq update >&2

depends_on() {  # first dependency of package $1 matching regex $2
  apt-cache "${apt_opts[@]}" depends "$1" 2>/dev/null |
    sed -n 's/^[[:space:]]*|\{0,1\}Depends:[[:space:]]*//p' | grep -E "$2" | sed -n 1p
}
image=$(depends_on linux-image-cloud-amd64 '^linux-image-[0-9].*-cloud-amd64(-unsigned)?$')
[[ -n "$image" ]] || { log "cannot resolve linux-image-cloud-amd64 in sid"; exit 1; }
ver=${image#linux-image-}; ver=${ver%-unsigned}
binary=$(depends_on "$image" '^linux-binary-' || true)
[[ -n "$binary" ]] || binary=$image   # older layouts ship vmlinuz in the image package itself
log "sid cloud kernel: $ver (package $binary)"

dest=$CACHE/kernel/$ver
if [[ ! -r "$dest/vmlinuz" ]]; then
  tmp=$(mktemp -d "$CACHE/dl.XXXXXX"); chmod 755 "$tmp"
  (cd "$tmp" && apt-get "${apt_opts[@]}" -qq download "$binary" >&2)
  deb=$(ls "$tmp"/*.deb)
  mkdir -p "$tmp/x"
  dpkg-deb -x "$deb" "$tmp/x"
  vmlinuz=$(find "$tmp/x" -path '*/vmlinuz*' -type f | sed -n 1p)
  [[ -n "$vmlinuz" ]] || vmlinuz=$(find "$tmp/x/boot" -name 'vmlinuz-*' -type f | sed -n 1p)
  [[ -n "$vmlinuz" ]] || { log "no vmlinuz inside $binary"; exit 1; }
  config=$(find "$tmp/x" \( -name config -o -name 'config-*' \) -type f | sed -n 1p)
  if [[ -n "$config" ]] && ! grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$config"; then
    log "$binary is built without CONFIG_SCHED_CLASS_EXT=y"; exit 1
  fi
  mkdir -p "$dest"
  cp "$vmlinuz" "$dest/vmlinuz"
  [[ -n "$config" ]] && cp "$config" "$dest/config"
  rm -rf "$tmp"
fi
touch "$dest/vmlinuz"
echo "$dest/vmlinuz"
