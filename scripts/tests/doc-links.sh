#!/usr/bin/env bash
# Checks that every relative link in the project's Markdown resolves: README.md, BENCHMARKS.md,
# CHANGELOG.md, docs/ and the READMEs under crates/ and examples/. A link's file or directory
# must exist (relative to the file that links it), and a `#anchor` must be the GitHub slug of a
# heading in the target Markdown file (or in the linking file for a bare `#anchor`). Links to
# other sites (http:, https:, mailto:) are not fetched. Links inside fenced code blocks and
# inline code spans are not links and are skipped.
#
# Usage: scripts/tests/doc-links.sh [FILE.md...]   (default: the files above)
set -euo pipefail
cd "$(dirname "$0")/../.."

if (($#)); then
  files=("$@")
else
  files=(README.md BENCHMARKS.md CHANGELOG.md)
  while IFS= read -r f; do files+=("$f"); done < <(
    find docs crates examples -name '*.md' -not -path '*/target/*' | sort
  )
fi

# The link targets of a Markdown file, one per line: fenced blocks and inline code skipped,
# the target's optional title dropped.
links() {
  LC_ALL=C awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^)]*\)/)) {
        t = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ \t]*</, "", t); sub(/>[ \t]*$/, "", t)
        sub(/[ \t].*$/, "", t)
        if (t != "") print t
      }
    }' "$1"
}

# The GitHub anchors of a Markdown file's headings, one per line (duplicates numbered -1, -2).
anchors() {
  LC_ALL=C awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[ \t]/ {
      h = $0
      sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#+[ \t]*$/, "", h)
      # a link in a heading counts by its text
      while (match(h, /\[[^]]*\]\([^)]*\)/)) {
        txt = substr(h, RSTART + 1, RLENGTH - 1); sub(/\]\(.*$/, "", txt)
        h = substr(h, 1, RSTART - 1) txt substr(h, RSTART + RLENGTH)
      }
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      n = seen[h]++
      print (n ? h "-" n : h)
    }' "$1"
}

checked=0
broken=0
for f in "${files[@]}"; do
  [[ -f $f ]] || { echo "doc-links: no such file: $f" >&2; broken=$((broken + 1)); continue; }
  dir=$(dirname "$f")
  while IFS= read -r target; do
    case $target in
      http://* | https://* | mailto:*) continue ;;
    esac
    checked=$((checked + 1))
    path=${target%%#*}
    anchor=
    [[ $target == *'#'* ]] && anchor=${target#*#}
    if [[ -z $path ]]; then
      resolved=$f
    else
      resolved=$dir/$path
      if [[ ! -e $resolved ]]; then
        echo "doc-links: $f: $target: no such file or directory ($resolved)" >&2
        broken=$((broken + 1))
        continue
      fi
    fi
    if [[ -n $anchor && $resolved == *.md && -f $resolved ]]; then
      if ! anchors "$resolved" | grep -Fx -- "$anchor" > /dev/null; then
        echo "doc-links: $f: $target: no heading with anchor #$anchor in $resolved" >&2
        broken=$((broken + 1))
      fi
    fi
  done < <(links "$f")
done

if ((broken)); then
  echo "doc-links: $broken broken link(s) of $checked checked" >&2
  exit 1
fi
echo "doc-links: ok ($checked relative links in ${#files[@]} files)"
