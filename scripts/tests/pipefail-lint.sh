#!/usr/bin/env bash
# Fails when a script that sets pipefail pipes into a reader that may stop early (`grep -q`,
# `grep -m`, `head`): the writer then dies of SIGPIPE, pipefail reports 141, and the pipeline
# fails exactly when the match was found. Capture the output first, or use a here-string.
set -euo pipefail
cd "$(dirname "$0")/../.."
bad=0
for f in .ci/run ci/* scripts/*.sh scripts/lib/*.sh scripts/vm/*.sh scripts/tests/*.sh; do
  [[ -f $f ]] || continue
  # Sourced files (lib.sh, lib/*, env.sh) run under their caller's pipefail.
  case $f in */lib.sh | scripts/lib/* | scripts/env.sh) ;; *) grep -q 'pipefail' "$f" || continue ;; esac
  # A pipe, optional spaces, then grep with a q or m flag, or head.
  if hits=$(grep -nE '\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head([[:space:]]|$))' "$f" |
    grep -vE '^[0-9]+:[[:space:]]*#'); then
    printf '%s\n' "$hits" | sed "s|^|$f:|" >&2
    bad=1
  fi
done
if ((bad)); then
  echo "pipefail-lint: the lines above can fail with SIGPIPE under pipefail" >&2
  exit 1
fi
echo "pipefail-lint: no early-exit reader behind a pipe in a pipefail script"
