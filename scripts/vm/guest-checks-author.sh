# shellcheck shell=sh
# guest-checks-author.sh: a policy author's own rules, live, with the example crate's policies
# (examples/my-policy, `scx_my_policy`). Sourced by guest-checks.sh, whose helpers (say, pass,
# fail, start_sched, stop_sched, ...) and guest-lib.sh it uses; $MY is the example's binary.

# up-at-moves: a policy author's rule sees the core's estimate at the moment it is asked, and
# a policy's own knob changes live. The example's second policy (examples/my-policy/src/up_at.rs,
# `scx_my_policy --policy up-at --set heavy_util=600`) puts a new lone spinner on an E-core
# (no history: light) and moves it up to a P-core once the core's estimate reaches 600 (about
# 130 ms of running on an E-core of capacity 640). A spinner never wakes, so only its
# up_migration, asked by the core's scan every 20 ms, can see that; on a quiet machine it is
# the core's timer that wakes the loop for the scan. 8 trials, each a new spinner that notes
# its own CPU as it starts (a look from outside after a fixed sleep lands after the move in a
# slow guest), then is seen every 0.3 s to 1.2 s: E, then P at each of the four later looks
# (E->P) in at least 6. The controls, where no rule reads the estimate
# and moves the task, do that in at most 2 of 8 (under --fifo a spinner wanders, and was on a
# P-core at two looks 0.5 s apart in 3 of 8): the same policy with `--set move_up=off`, after heavy_util goes to 1024 through
# its control file while the scheduler runs (the estimate cannot reach it on an E-core), and
# --fifo and the default scheduler.
UPAT_RESULTS=/run/upat-results
UPAT_FIRST=/run/upat-first
: > "$UPAT_RESULTS"
upat_side() { if [ "${1:--1}" -lt 0 ]; then echo "?"; elif is_p "$1"; then echo P; else echo E; fi; }
upat_trials() {  # upat_trials LABEL: 8 trials, appended to $UPAT_RESULTS as LABEL|E->P|detail
  moved=0; trials=""; t=0
  while [ $t -lt 8 ]; do
    rm -f "$UPAT_FIRST"
    # shellcheck disable=SC2016 # the spinner's own shell expands these
    taskset 0xff sh -c '. "$1/guest-lib.sh"; cpu_of $$ > "$0"; while :; do :; done' \
      "$UPAT_FIRST" "$HL" &
    SPIN=$!
    w=0
    while [ ! -s "$UPAT_FIRST" ] && [ $w -lt 40 ]; do sleep 0.05; w=$((w + 1)); done
    seen=$(upat_side "$(cat "$UPAT_FIRST" 2>/dev/null)")
    for _ in 1 2 3 4; do sleep 0.3; seen="$seen$(upat_side "$(cpu_of "$SPIN")")"; done
    spin_stop
    trials="$trials $seen"
    if [ "$seen" = EPPPP ]; then moved=$((moved + 1)); fi
    t=$((t + 1))
    sleep 0.1
  done
  detail="E->P in $moved of 8 ($trials )"
  echo "$1|$moved|$detail" >> "$UPAT_RESULTS"
  say "placement: [$1] up-at: $detail"
}
upat_n() { v=$(grep "^$1|" "$UPAT_RESULTS" | cut -d'|' -f2); echo "${v:--1}"; }
upat_detail() { grep "^$1|" "$UPAT_RESULTS" | cut -d'|' -f3; }
# The shell runs anywhere: a spinner forked from a shell pinned to one CPU is first placed
# there (its affinity is the shell's until taskset widens it), and a spinner never wakes to be
# placed again.
pin_shell 0xff
keep=$SCX; SCX=$MY
if start_sched --policy up-at --set heavy_util=600; then
  sleep 1
  upat_trials up-at
  if echo 1024 > /run/scx_hybridland/heavy_util; then
    sleep 1.5
    upat_trials up-at-1024
  fi
  timer=$(stat_sum timer-wakes)
  stop_sched INT
  wait_state disabled 20
fi
if start_sched --policy up-at --set heavy_util=600 --set move_up=off; then
  sleep 1
  upat_trials up-at-stays
  stop_sched INT
  wait_state disabled 20
fi
SCX=$keep
if start_sched --fifo; then
  sleep 1
  upat_trials fifo
  stop_sched INT
  wait_state disabled 20
fi
upat_trials default
if [ "$(upat_n up-at)" -ge 6 ]; then
  pass up-at-moves "heavy_util=600: $(upat_detail up-at); the core's timer woke the loop ${timer:-?} times"
else
  fail up-at-moves "heavy_util=600: $(upat_detail up-at); the core's timer woke the loop ${timer:-?} times"
fi
detail="heavy_util 1024 written live: $(upat_detail up-at-1024); move_up=off: $(upat_detail up-at-stays); --fifo: $(upat_detail fifo); default: $(upat_detail default)"
ok=yes
for l in up-at-1024 up-at-stays fifo default; do
  n=$(upat_n "$l")
  if [ "$n" -lt 0 ] || [ "$n" -gt 2 ]; then ok=no; fi
done
if [ "$ok" = yes ]; then
  pass up-at-moves-discriminates "$detail"
else
  fail up-at-moves-discriminates "not discriminating: $detail"
fi

# task-value: a policy keeps a value for each task in the core's record of it, live. The
# example's third policy (examples/my-policy/src/graduate.rs, `--policy graduate`) counts a
# task's placements in its value: its first 8 go to idle E-cores, the later ones to idle
# P-cores. A probe (scripts/vm/wake-probe.c) sleeps 20 ms 30 times and notes where each
# wake-up ran: E first and P for its last 10 wake-ups, in at least 2 of 3 trials. Then a new
# probe is given the last one's pid (through /proc/sys/kernel/ns_last_pid): a new task to the
# core, its count starts from 0 and its first wake-up runs on an E-core (a count kept from the
# old task would put it on a P-core at once). Controls (task-value-discriminates): --fifo and
# the default scheduler run the probe that way in at most 1 of 3.
PROBE="$HL/wake-probe"
TV_RESULTS=/run/tv-results
: > "$TV_RESULTS"
probe_graduates() {  # probe_graduates SEQ: E first, the last 10 on P-cores
  case "$1" in E*PPPPPPPPPP) return 0 ;; *) return 1 ;; esac
}
tv_trials() {  # tv_trials LABEL: 3 probes, appended to $TV_RESULTS as LABEL|graduated|detail; sets TV_PID
  ok=0; seqs=""; t=0
  while [ $t -lt 3 ]; do
    taskset 0xff "$PROBE" 30 20000 f0 > /run/probe.out
    line=$(cat /run/probe.out)
    seq=${line##*seq=}; TV_PID=${line%% *}; TV_PID=${TV_PID#pid=}
    seqs="$seqs $seq"
    if probe_graduates "$seq"; then ok=$((ok + 1)); fi
    t=$((t + 1))
  done
  echo "$1|$ok|graduated in $ok of 3 ($seqs )" >> "$TV_RESULTS"
  say "placement: [$1] task-value: graduated in $ok of 3 ($seqs )"
}
tv_n() { v=$(grep "^$1|" "$TV_RESULTS" | cut -d'|' -f2); echo "${v:--1}"; }
tv_detail() { grep "^$1|" "$TV_RESULTS" | cut -d'|' -f3; }
# pid-reuse: a pid the kernel hands to a new task as soon as the old one is reaped, before the
# old one's exit reaches the loop (after an RCU grace period), is a new task to the core: the
# thread's start time is its life (hybridland_policy::Life). scripts/vm/pid-reuse.c forks A,
# which wakes 12 times (graduate puts its last wake-ups on P-cores), reaps it, asks for its pid
# again (ns_last_pid) and forks B, which wakes once. A round counts when B got A's pid and A
# graduated; B's wake-up on a P-core read A's count: a stale record. PASS: at least 100 such
# rounds and none stale. The controls place B by chance (pid-reuse-discriminates).
REUSE_RESULTS=/run/reuse-results
: > "$REUSE_RESULTS"
reuse_rounds() {  # reuse_rounds LABEL: 150 rounds, appended to $REUSE_RESULTS as LABEL|valid|stale|detail
  "$HL/pid-reuse" 150 12 2000 > /run/reuse.out 2>/run/reuse.err
  valid=0; stale=0; missed=0
  while read -r a acpu b bcpu; do
    if [ "$a" != "$b" ] || ! is_p "$acpu"; then missed=$((missed + 1)); continue; fi
    valid=$((valid + 1))
    if is_p "$bcpu"; then stale=$((stale + 1)); fi
  done < /run/reuse.out
  echo "$1|$valid|$stale|$valid rounds with the pid reused after a graduated task, $stale of the new tasks on a P-core at their first wake-up ($missed rounds not counted)" >> "$REUSE_RESULTS"
  say "placement: [$1] pid-reuse: $(grep "^$1|" "$REUSE_RESULTS" | cut -d'|' -f4)"
}
reuse_n() { v=$(grep "^$1|" "$REUSE_RESULTS" | cut -d'|' -f"$2"); echo "${v:--1}"; }
reused=""
reuse_core="not run"
keep=$SCX; SCX=$MY
if start_sched --policy graduate; then
  sleep 0.5
  r0=$(stat_sum renewed); s0=$(stat_sum stale-exit)
  reuse_rounds graduate
  sleep 1.2
  reuse_core="renewed=$(( $(stat_sum renewed) - r0 )) stale-exit=$(( $(stat_sum stale-exit) - s0 ))"
  tv_trials graduate
  # The same pid again: the next pid handed out follows ns_last_pid, unless another task took
  # it first; a few tries.
  try=0
  while [ $try -lt 5 ] && [ -z "$reused" ]; do
    if [ -w /proc/sys/kernel/ns_last_pid ]; then
      echo $((TV_PID - 1)) > /proc/sys/kernel/ns_last_pid
      taskset 0xff "$PROBE" 30 20000 f0 > /run/probe2.out
      line=$(cat /run/probe2.out)
      pid=${line%% *}; pid=${pid#pid=}
      if [ "$pid" = "$TV_PID" ]; then reused=${line##*seq=}; fi
    fi
    try=$((try + 1))
  done
  stop_sched INT
  wait_state disabled 20
fi
SCX=$keep
detail="$(tv_detail graduate); pid $TV_PID again: ${reused:-not given out (ns_last_pid)}"
case "$reused" in
  E*) reuse_ok=yes ;;
  *) reuse_ok=no ;;
esac
if [ "$(tv_n graduate)" -ge 2 ] && [ "$reuse_ok" = yes ]; then
  pass task-value "$detail"
else
  fail task-value "$detail"
fi
if [ "$(reuse_n graduate 2)" -ge 100 ] && [ "$(reuse_n graduate 3)" -eq 0 ]; then
  pass pid-reuse "$(reuse_n graduate 4); the core: $reuse_core"
else
  fail pid-reuse "$(reuse_n graduate 4); the core: $reuse_core"
fi
if start_sched --fifo; then
  sleep 0.5
  tv_trials fifo
  reuse_rounds fifo
  stop_sched INT
  wait_state disabled 20
fi
tv_trials default
reuse_rounds default
rf_ok=no
for c in fifo default; do
  if [ "$(reuse_n $c 2)" -ge 100 ] && [ "$(reuse_n $c 3)" -eq 0 ]; then rf_ok=yes; fi
done
if [ "$rf_ok" = no ] && [ "$(reuse_n fifo 2)" -ge 0 ] && [ "$(reuse_n default 2)" -ge 0 ]; then
  pass pid-reuse-discriminates "--fifo: $(reuse_n fifo 4); default: $(reuse_n default 4)"
else
  fail pid-reuse-discriminates "not discriminating: --fifo: $(reuse_n fifo 4); default: $(reuse_n default 4)"
fi
f=$(tv_n fifo); d=$(tv_n default)
if [ "$f" -ge 0 ] && [ "$f" -le 1 ] && [ "$d" -ge 0 ] && [ "$d" -le 1 ]; then
  pass task-value-discriminates "--fifo: $(tv_detail fifo); default: $(tv_detail default)"
else
  fail task-value-discriminates "not discriminating: --fifo: $(tv_detail fifo); default: $(tv_detail default)"
fi
