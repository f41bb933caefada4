#!/usr/bin/env bash
# Checks scripts/vm-check-repeat.sh with a stub in vm-check.sh's place (it passes, except on
# its second run, where one check fails) and a stub `yes` (it notes its pid, then sleeps):
# three runs must give a summary of 2 of 3 with the failed check named, exit status 1, a log
# per run, and the hog ended. No VM is booted.
#
#   scripts/tests/vm-check-repeat.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
hog=""
cleanup() { [[ -n $hog ]] && kill -KILL "$hog" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
failures=0
fail() { echo "vm-check-repeat test: FAIL: $*" >&2; failures=$((failures + 1)); }

mkdir -p "$WORK/bin"
cat > "$WORK/bin/yes" <<'STUB'
#!/usr/bin/env bash
echo $$ > "$STUB_DIR/yes.pid"
exec sleep 1000
STUB
cat > "$WORK/check.sh" <<'STUB'
#!/usr/bin/env bash
n=$(($(cat "$STUB_DIR/count" 2>/dev/null || echo 0) + 1))
echo "$n" > "$STUB_DIR/count"
echo "PASS loaded: state=enabled"
if [[ $n == 2 ]]; then echo "FAIL little-first-light: 4 of 4 trials on P-cores"; echo "vm-check: FAILED"; exit 1; fi
echo "PASS no-ejection: none"
echo "vm-check: all 2 checks passed"
STUB
chmod +x "$WORK/bin/yes" "$WORK/check.sh"

rc=0
STUB_DIR=$WORK PATH="$WORK/bin:$PATH" HYBRIDLAND_REPEAT_CHECK=$WORK/check.sh \
  scripts/vm-check-repeat.sh -n 3 --hog -o "$WORK/logs" > "$WORK/out" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "exit status $rc, expected 1 (a run failed): $(cat "$WORK/out")"
summary=$WORK/logs/summary.txt
grep 'host hog: yes > /dev/null' "$summary" > /dev/null || fail "the summary does not say the hog ran: $(cat "$summary")"
grep '^run 2: FAIL (1 checks passed; failed: little-first-light )' "$summary" > /dev/null || fail "run 2 not reported as failed with its check: $(cat "$summary")"
[[ $(grep -c '^run [13]: PASS (2 checks passed)' "$summary") == 2 ]] || fail "runs 1 and 3 not reported as passed: $(cat "$summary")"
grep '^vm-check-repeat: 2 of 3 runs passed' "$summary" > /dev/null || fail "no total: $(cat "$summary")"
for i in 1 2 3; do [[ -s $WORK/logs/run-$i.log ]] || fail "no log of run $i"; done
hog=$(cat "$WORK/yes.pid" 2>/dev/null || true)
if [[ -z $hog ]]; then fail "the hog never started"
elif kill -0 "$hog" 2>/dev/null; then fail "the hog (pid $hog) is still running"
else hog=""; fi

rc=0
scripts/vm-check-repeat.sh -n 0 > "$WORK/out" 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "-n 0: exit status $rc, expected 2"

if ((failures)); then echo "vm-check-repeat test: $failures failure(s)" >&2; exit 1; fi
echo "vm-check-repeat test: ok"
