#!/usr/bin/env bash
# Scores dist/scx_hybridland.service with `systemd-analyze security --offline=true` (no running
# systemd needed) and fails above 3.5 ("OK" is below 4.0; the unit without sandboxing scored
# 9.6 "UNSAFE") or when systemd warns about a line of the unit it does not understand (a
# misspelt option is silently ignored otherwise). systemd-analyze comes with the systemd
# package, which scripts/install-scx-deps.sh installs when it is missing.
#
#   scripts/tests/unit-security.sh [UNIT]   (default: dist/scx_hybridland.service)
set -euo pipefail
cd "$(dirname "$0")/../.."
UNIT=${1:-dist/scx_hybridland.service}
LIMIT=3.5
if ! command -v systemd-analyze >/dev/null; then
  scripts/install-scx-deps.sh
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The unit's own name, whatever the file is called, so the score line names it.
cp "$UNIT" "$WORK/scx_hybridland.service"
rc=0
systemd-analyze security --offline=true --no-pager "$WORK/scx_hybridland.service" \
  >"$WORK/out" 2>"$WORK/err" || rc=$?
if grep -E "Unknown (key|section)|Failed to parse|Invalid|ignoring" "$WORK/err" >/dev/null; then
  echo "unit-security: FAIL: systemd does not understand parts of $UNIT:" >&2
  sed 's/^/    /' "$WORK/err" >&2
  exit 1
fi
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$WORK/out")
if [[ -z "$score" ]]; then
  echo "unit-security: FAIL: no score from systemd-analyze (status $rc):" >&2
  cat "$WORK/err" >&2
  exit 1
fi
if awk -v s="$score" -v l="$LIMIT" 'BEGIN { exit !(s > l) }'; then
  echo "unit-security: FAIL: $UNIT scores $score, above $LIMIT:" >&2
  grep '✗' "$WORK/out" >&2 || true
  exit 1
fi
echo "unit-security: $UNIT scores $score (limit $LIMIT)"
