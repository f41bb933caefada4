//! Recording import: hand-written tracefs, trace-cmd and perf sched script text (here), and
//! the committed recordings of the project's VM and of real tools (`recordings`).

mod recordings;

use hybridland_sim::import::ftrace::{FtraceError, import};
use hybridland_sim::presets;
use hybridland_sim::trace::{LoopSpec, Phase};

fn tc2() -> hybridland_sim::Machine {
    presets::lookup("tc2").unwrap()
}

/// tracefs `trace` with the `(tgid)` column: a task runs 10 ms on an A15, sleeps 20 ms, runs
/// 5 ms on an A7 (preempted), then 4 ms on the A15, and exits.
const TRACEFS: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 9/9   #P:5
#
#           TASK-PID     TGID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |         |   |||||     |         |
            bash-90      (     90) [000] d..2.   100.000000: sched_wakeup_new: comm=worker pid=100 prio=120 target_cpu=000
          <idle>-0       (-------) [000] d..2.   100.000100: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker pid next_pid=100 next_prio=120
          worker-100     (    100) [000] d..2.   100.010100: sched_switch: prev_comm=worker pid prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       (-------) [002] dNh2.   100.030100: sched_waking: comm=worker pid pid=100 prio=120 target_cpu=002
          <idle>-0       (-------) [002] d..2.   100.030200: sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker pid next_pid=100 next_prio=120
          worker-100     (    100) [002] d..2.   100.035200: sched_switch: prev_comm=worker pid prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=kworker/2:1 next_pid=7 next_prio=120
          worker-100     (    100) [002] d..2.   100.035300: sched_migrate_task: comm=worker pid pid=100 prio=120 orig_cpu=2 dest_cpu=0
          <idle>-0       (-------) [000] d..2.   100.036200: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker pid next_pid=100 next_prio=120
          worker-100     (    100) [000] ....1   100.040200: sched_process_exit: comm=worker pid pid=100 prio=120
";

#[test]
fn tracefs_with_tgid_runs_scaled_by_capacity_and_sleeps() {
    let imp =
        import(TRACEFS, "rec.txt", "rec", &tc2().topology, false).unwrap_or_else(|e| panic!("{e}"));
    let t = &imp.trace;
    assert_eq!(t.duration_ns, Some(40_200_000));
    let names: Vec<&str> = t.tasks.iter().map(|t| t.name.as_str()).collect();
    // kworker/2:1 was switched to but never seen running to a switch-out: 4.9 ms to the end
    // of the recording on an A7 of capacity 494.
    assert_eq!(names, ["kworker/2:1-7", "worker_pid-100"]);
    let w = &t.tasks[1];
    assert_eq!(w.start_ns, 0);
    assert_eq!(
        w.phases,
        [
            Phase::RunNs(10_000_000),
            Phase::SleepNs(20_000_000),
            // 5 ms x 494 / 1024 + 4 ms, the preemption between them no sleep.
            Phase::RunNs(6_412_109),
        ]
    );
    assert_eq!(w.allowed_cpus, None);
    assert_eq!(imp.observed_cpus["worker_pid-100"], "0,2");
    assert!(imp.skipped.is_empty());
    let pinned = import(TRACEFS, "rec.txt", "rec", &tc2().topology, true).unwrap();
    assert_eq!(pinned.trace.tasks[1].allowed_cpus.as_deref(), Some("0,2"));
}

/// trace-cmd report: no tgid column, `success=1`, events it does not use, a missed wake-up.
const TRACE_CMD: &str = "\
cpus=5
          <idle>-0     [001]  5.000000: sched_wakeup:         comm=a pid=7 prio=120 success=1 target_cpu=001
          <idle>-0     [001]  5.000010: sched_switch:         prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=7 next_prio=120
               a-7     [001]  5.001010: sched_stat_runtime:   comm=a pid=7 runtime=1000000 [ns] vruntime=1 [ns]
               a-7     [001]  5.002010: sched_switch:         prev_comm=a prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0     [001]  5.002500: irq_handler_entry:    irq=5 name=eth0
          <idle>-0     [004]  5.012010: sched_switch:         prev_comm=swapper/4 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=7 next_prio=120
               a-7     [004]  5.014010: sched_switch:         prev_comm=a prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/4 next_pid=0 next_prio=120
";

#[test]
fn trace_cmd_report_counts_skipped_events_and_ends_sleeps_at_a_missed_wakeup() {
    let imp =
        import(TRACE_CMD, "tc.txt", "tc", &tc2().topology, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.skipped["sched_stat_runtime"], 1);
    assert_eq!(imp.skipped["irq_handler_entry"], 1);
    let a = &imp.trace.tasks[0];
    assert_eq!(a.name, "a-7");
    assert_eq!(
        a.phases,
        [
            Phase::RunNs(2_000_000),
            // No wake-up recorded: the sleep ends at the switch-in.
            Phase::SleepNs(10_000_000),
            // 2 ms on an A7; the trailing sleep is the recording ending.
            Phase::RunNs(964_843),
        ]
    );
}

/// perf sched script, raw fields and its own switch form.
const PERF: &str = "\
            perf  4242 [000]  77.500000:       sched:sched_wakeup: comm=b pid=9 prio=120 target_cpu=000
         swapper     0 [000]  77.500001:       sched:sched_switch: swapper/0:0 [120] R ==> b:9 [120]
               b     9 [000]  77.503001:       sched:sched_switch: b:9 [120] S ==> swapper/0:0 [120]
            perf  4242 [001]  77.504001:       sched:sched_waking: comm=b pid=9 prio=120 target_cpu=001
         swapper     0 [001]  77.504002:       sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=9 next_prio=120
               b     9 [001]  77.505002:       sched:sched_switch: prev_comm=b prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

#[test]
fn perf_sched_script_both_switch_forms() {
    let imp =
        import(PERF, "perf.txt", "perf", &tc2().topology, false).unwrap_or_else(|e| panic!("{e}"));
    let b = &imp.trace.tasks[0];
    assert_eq!(b.name, "b-9");
    assert_eq!(
        b.phases,
        [
            Phase::RunNs(3_000_000),
            Phase::SleepNs(1_000_000),
            Phase::RunNs(1_000_000)
        ]
    );
}

#[test]
fn bad_lines_are_named_by_number() {
    let bad = |text: &str| import(text, "bad.txt", "bad", &tc2().topology, false).unwrap_err();
    let e = bad("# header\nthis is not a trace line\n");
    assert!(matches!(e, FtraceError::Line { line: 2, .. }), "{e:?}");
    assert!(
        e.to_string().starts_with("bad.txt:2: not an event line"),
        "{e}"
    );
    let e = bad(
        "  x-1 [000] 1.000000: sched_switch: prev_comm=x prev_pid=one ==> next_comm=y next_pid=2\n",
    );
    assert!(
        e.to_string()
            .starts_with("bad.txt:1: sched_switch fields do not parse"),
        "{e}"
    );
    let e = bad("  x-1 [009] 1.000000: sched_wakeup: comm=x pid=1 prio=120\n");
    assert!(
        e.to_string().contains("cpu 9 is not in the topology"),
        "{e}"
    );
    let e = bad(
        "  x-1 [000] 2.000000: sched_wakeup: comm=x pid=1\n  x-1 [000] 1.000000: sched_wakeup: comm=x pid=1\n",
    );
    assert!(
        e.to_string()
            .starts_with("bad.txt:2: timestamps go backwards"),
        "{e}"
    );
    let e = bad("  x-1 [000] 1.000000: sched_wakeup: prio=120\n");
    assert!(
        e.to_string()
            .contains("sched_wakeup fields do not parse: expected `comm=NAME pid=PID ...`"),
        "{e}"
    );
    // A call-chain line only belongs under an event.
    let e = bad("\tffffffff8108a3c5 __schedule+0x2b5 ([kernel.kallsyms])\n");
    assert!(
        e.to_string().starts_with("bad.txt:1: not an event line"),
        "{e}"
    );
    let e = bad("# only comments\n");
    assert!(matches!(e, FtraceError::Empty { .. }), "{e:?}");
}

#[test]
fn a_long_recording_folds_into_a_loop_with_the_same_totals() {
    let mut text = String::new();
    let mut t = 1_000_000u64; // microseconds
    let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    for _ in 0..2000 {
        text += &format!(
            "  <idle>-0 [000] {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=5 next_prio=120\n",
            ts(t)
        );
        t += 100;
        text += &format!(
            "  p-5 [000] {}: sched_switch: prev_comm=p prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
            ts(t)
        );
        t += 300;
    }
    let imp =
        import(&text, "long.txt", "long", &tc2().topology, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.folded, ["p-5"]);
    assert_eq!(
        imp.trace.tasks[0].phases,
        [Phase::Loop(LoopSpec {
            times: 2000,
            phases: vec![Phase::RunNs(100_000), Phase::SleepNs(299_850)]
        })]
    );
}

/// The waker of a wake-up in task context is recorded: the sleeper waits for it, and the
/// waker's run holds the wake where it woke it. One from an interrupt (`s` in the flags) and
/// one reported from the idle task are plain sleeps.
#[test]
fn the_waker_of_a_task_context_wakeup_is_recorded() {
    let rec = "\
# tracer: nop
 prod-1 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=prod next_pid=1 next_prio=120
 cons-2 [001] d..2. 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cons next_pid=2 next_prio=120
 cons-2 [001] d..2. 1.001000: sched_switch: prev_comm=cons prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 prod-1 [000] d..3. 1.004000: sched_waking: comm=cons pid=2 prio=120 target_cpu=001
 <idle>-0 [001] d..2. 1.004100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cons next_pid=2 next_prio=120
 cons-2 [001] d..2. 1.005100: sched_switch: prev_comm=cons prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 prod-1 [000] d.s3. 1.006000: sched_waking: comm=cons pid=2 prio=120 target_cpu=001
 <idle>-0 [001] d..2. 1.006000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cons next_pid=2 next_prio=120
 cons-2 [001] d..2. 1.007000: sched_switch: prev_comm=cons prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] dNh2. 1.008000: sched_wakeup: comm=cons pid=2 prio=120 target_cpu=001
 <idle>-0 [001] d..2. 1.008000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cons next_pid=2 next_prio=120
 prod-1 [000] d..2. 1.010000: sched_switch: prev_comm=prod prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 cons-2 [001] d..2. 1.010000: sched_switch: prev_comm=cons prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let machine = presets::lookup("symmetric").unwrap();
    let imp = import(rec, "rec", "rec", &machine.topology, false).unwrap();
    assert_eq!(imp.relations, 1);
    let task = |name: &str| {
        imp.trace
            .task_named(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .phases
            .clone()
    };
    assert_eq!(
        task("prod-1"),
        [
            Phase::RunNs(4_000_000),
            Phase::Wake("cons-2".into()),
            Phase::RunNs(6_000_000)
        ]
    );
    assert_eq!(
        task("cons-2"),
        [
            Phase::RunNs(1_000_000),
            Phase::WaitFor(vec!["prod-1".into()]),
            Phase::RunNs(1_000_000),
            Phase::SleepNs(900_000),
            Phase::RunNs(1_000_000),
            Phase::SleepNs(1_000_000),
            Phase::RunNs(2_000_000),
        ]
    );
}

/// A numeric `prev_state` of 0 (running when switched out: preempted) keeps the task
/// runnable, 1 (S) makes it sleep, 4096 (a 4.x kernel's preemption flag) is runnable too.
#[test]
fn numeric_prev_state_zero_is_a_preemption_not_a_sleep() {
    let rec = |state: &str| {
        format!(
            "cpus=5
 w-100 [000] 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=0 next_comm=w next_pid=100 next_prio=120
 w-100 [000] 1.010000: sched_switch: prev_comm=w prev_pid=100 prev_prio=120 prev_state={state} next_comm=k next_pid=7 next_prio=120
 k-7 [000] 1.015000: sched_switch: prev_comm=k prev_pid=7 prev_prio=120 prev_state=1 next_comm=w next_pid=100 next_prio=120
 w-100 [000] 1.020000: sched_process_exit: comm=w pid=100 prio=120
"
        )
    };
    let phases = |state: &str| {
        let imp = import(&rec(state), "r.txt", "r", &tc2().topology, false)
            .unwrap_or_else(|e| panic!("{e}"));
        imp.trace.task_named("w-100").unwrap().phases.clone()
    };
    // CPU 0 of tc2 is an A15 (capacity 1024): 10 ms + 5 ms of work, one run.
    assert_eq!(phases("0"), [Phase::RunNs(15_000_000)]);
    assert_eq!(phases("4096"), [Phase::RunNs(15_000_000)]);
    assert_eq!(
        phases("1"),
        [
            Phase::RunNs(10_000_000),
            Phase::SleepNs(5_000_000),
            Phase::RunNs(5_000_000)
        ]
    );
    let bad = import(&rec("bogus"), "r.txt", "r", &tc2().topology, false).unwrap_err();
    assert!(
        bad.to_string()
            .starts_with("r.txt:3: sched_switch prev_state `bogus`"),
        "{bad}"
    );
}
