//! The importer's own tests: states, wake-ups and their wakers, headers, missed switches and
//! perf's call chains, each on a few hand-written lines.

use super::*;
use crate::trace::Phase;

/// Each task's name and phases, in the trace's order.
fn phases_by_task(imp: &FtraceImport) -> Vec<(&str, &[Phase])> {
    imp.trace
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.phases.as_slice()))
        .collect()
}

#[test]
fn numeric_states_follow_task_report() {
    // Running, preempted on 4.14+ (TASK_REPORT_MAX), and before (TASK_STATE_MAX).
    for s in ["0", "256", "4096", "2048", "R", "R+"] {
        assert_eq!(state_is_runnable(s), Some(true), "{s}");
    }
    for s in [
        "1", "2", "128", "4097", "0x402", "S", "D", "I", "D|K", "X", "Z",
    ] {
        assert_eq!(state_is_runnable(s), Some(false), "{s}");
    }
    for s in ["", "sleeping", "-1", "0xzz"] {
        assert_eq!(state_is_runnable(s), None, "{s}");
    }
}

#[test]
fn wakeups_in_both_forms() {
    assert_eq!(
        parse_wakeup("comm=a b pid=12 prio=120 target_cpu=003"),
        Some(("a b".into(), 12))
    );
    assert_eq!(
        parse_wakeup("kworker/2:1:83 [120] success=1 CPU:002"),
        Some(("kworker/2:1".into(), 83))
    );
    assert_eq!(
        parse_wakeup("sh:160 [120] CPU:007"),
        Some(("sh".into(), 160))
    );
    assert_eq!(parse_wakeup("sh [120] CPU:007"), None);
    assert_eq!(parse_wakeup(":5 [120]"), None);
}

#[test]
fn the_reporting_task_and_interrupt_flags() {
    let l = parse_line(
        "sh-159     (    159) [002] d.s4.     5.254213: sched_waking: comm=kworker/2:1 pid=83",
    )
    .unwrap();
    assert_eq!((l.current, l.in_interrupt), (Some(159), true));
    let l = parse_line("kworker/2:1-83      (     83) [002] d..3.     5.261784: sched_waking: comm=rcu_preempt pid=15").unwrap();
    assert_eq!((l.current, l.in_interrupt), (Some(83), false));
    let l = parse_line(
        "<idle>-0       (-------) [004] dNh2.     5.262544: sched_wakeup: comm=rcu_preempt pid=15",
    )
    .unwrap();
    assert_eq!((l.current, l.in_interrupt), (Some(0), true));
    let l = parse_line("Web Content-1234 [001] 7.000001: sched_waking: comm=a pid=5").unwrap();
    assert_eq!((l.current, l.in_interrupt), (Some(1234), false));
    let l = parse_line(
        "              sh    159 [002] 5.254213:            sched:sched_waking: comm=a pid=83",
    )
    .unwrap();
    assert_eq!((l.current, l.in_interrupt), (Some(159), false));
}

/// A task whose comm starts like a header is an event line like any other: trace-cmd's
/// own threads are in every `trace-cmd record`, QEMU names its vCPU threads `CPU 0/KVM`.
/// The headers themselves are skipped only in their exact shapes.
#[test]
fn tasks_named_like_headers_are_events() {
    let rec = "\
cpus=2
version = 6
CPU 1 is empty
CPU:0 [LOST 12 EVENTS]
CPU:0 [EVENTS DROPPED]
       trace-cmd-815   [000]   648.000000: sched_switch:         trace-cmd:815 [120] R ==> CPU 0/KVM:900 [120]
       CPU 0/KVM-900   [000]   648.001000: sched_switch:         CPU 0/KVM:900 [120] S ==> trace-cmd:815 [120]
       trace-cmd-815   [000]   648.003000: sched_switch:         trace-cmd:815 [120] S ==> version:7 [120]
       version-7       [000]   648.004000: sched_switch:         version:7 [120] S ==> swapper/0:0 [120]
";
    let machine = crate::presets::lookup("symmetric").unwrap();
    let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.lost_marks, 2);
    assert!(
        imp.note_lines()
            .iter()
            .any(|l| l.starts_with("2 lost-events mark(s)")),
        "{:?}",
        imp.note_lines()
    );
    let runs = phases_by_task(&imp);
    assert_eq!(
        runs,
        [
            ("version-7", &[Phase::RunNs(1_000_000)][..]),
            ("trace-cmd-815", &[Phase::RunNs(2_000_000)][..]),
            ("CPU_0/KVM-900", &[Phase::RunNs(1_000_000)][..]),
        ]
    );
    for (header, ok) in [
        ("cpus=2", true),
        ("version = 6", true),
        ("CPU 3 is empty", true),
        ("CPU:3 [LOST 7 EVENTS]", true),
        ("trace-cmd: No such file or directory", true),
        ("cpus=two", false),
        ("versions of it", false),
        ("CPU 0/KVM is here", false),
        ("CPU:3 something", false),
    ] {
        assert_eq!(is_header(header), ok, "{header}");
    }
    let e = import(
        "cpus=2\nCPU 0/KVM is here\n",
        "r",
        "r",
        &machine.topology,
        false,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("r:2: not an event line"), "{e}");
}

/// A switch the recording lacks (b back to a, between 1.003 and 1.010): b ran until the
/// last line that showed it running (1.003), a from then; b sleeps until it is woken.
#[test]
fn a_missed_switch_is_taken_at_the_last_line_that_showed_the_task() {
    let rec = "\
 a-1 [000] 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] 1.002000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] 1.003000: sched_waking: comm=c pid=3 prio=120 target_cpu=001
 a-1 [000] 1.010000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 <idle>-0 [001] 1.020000: sched_waking: comm=b pid=2 prio=120 target_cpu=000
 <idle>-0 [000] 1.020000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] 1.021000: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
    let machine = crate::presets::lookup("symmetric").unwrap();
    let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.missed_switches, 1);
    let phases = |name: &str| {
        imp.trace
            .task_named(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .phases
            .clone()
    };
    assert_eq!(phases("a-1"), [Phase::RunNs(2_000_000 + 7_000_000)]);
    assert_eq!(
        phases("b-2"),
        [
            Phase::RunNs(1_000_000),
            Phase::SleepNs(17_000_000),
            Phase::RunNs(1_000_000)
        ]
    );
    assert_eq!(imp.busy_ns[&0], 11_000_000, "no CPU time counted twice");
}

/// Two switches missing on two CPUs: x moved from CPU 0 to CPU 1 unseen (in place of y)
/// and z came in on CPU 0 unseen. When CPU 0's gap shows (1.010), x is running on CPU 1
/// again, so it is not switched out there: its preemption stays a preemption and its run
/// goes on to 1.020.
#[test]
fn a_missed_switch_leaves_a_task_that_moved_on_alone() {
    let rec = "\
 <idle>-0 [000] 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=1 next_prio=120
 <idle>-0 [001] 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=y next_pid=2 next_prio=120
 x-1 [001] 1.004000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] 1.006000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=1 next_prio=120
 z-3 [000] 1.010000: sched_switch: prev_comm=z prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 x-1 [001] 1.020000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let machine = crate::presets::lookup("symmetric").unwrap();
    let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.missed_switches, 2);
    let runs = phases_by_task(&imp);
    assert_eq!(
        runs,
        [
            ("x-1", &[Phase::RunNs(18_000_000)][..]),
            ("z-3", &[Phase::RunNs(10_000_000)][..]),
        ]
    );
    assert_eq!(
        imp.busy_ns,
        BTreeMap::from([(0, 10_000_000), (1, 18_000_000)])
    );
}

/// `perf script --header` opens with `#` comments (what was recorded, on what); the sched
/// plugin's `W` (the kernel's `I`) is a sleep.
#[test]
fn perf_header_comments_and_plugin_letters() {
    let rec = "\
# ========
# captured on    : Tue Nov 24 21:40:00 2026
# cmdline : /usr/bin/perf record -a -g -e sched:sched_switch
# ========
#
           perf  2889 [000]   608.000000:       sched:sched_switch: kworker/0:1:9 [120] R ==> perf:2889 [120]
           perf  2889 [000]   608.001000:       sched:sched_switch: perf:2889 [120] W ==> kworker/0:1:9 [120]
";
    let machine = crate::presets::lookup("symmetric").unwrap();
    let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
    let perf = imp.trace.task_named("perf-2889").unwrap();
    assert_eq!(perf.phases, [Phase::RunNs(1_000_000)]);
    assert_eq!(state_is_runnable("W"), Some(false));
    assert!(imp.note_lines().is_empty(), "{:?}", imp.note_lines());
}

#[test]
fn stack_frames_are_hex_then_symbol() {
    assert!(is_stack_frame(
        "ffffffff8108a3c5 __schedule+0x2b5 ([kernel.kallsyms])"
    ));
    assert!(is_stack_frame(
        "7f2a3c4b5d6e [unknown] (/usr/lib/libc.so.6)"
    ));
    assert!(!is_stack_frame("sh 159 [002] 5.2: sched:sched_switch: a"));
}
