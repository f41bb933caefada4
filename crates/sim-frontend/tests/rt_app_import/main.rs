//! rt-app import: hand-written rt-app files, one field at a time (here), the files of an
//! import and the bundled example (`files`), and how the threads keep time and wake each
//! other (`threads`).

#[path = "../util/mod.rs"]
mod util;

mod files;
mod threads;

use hybridland_sim::Trace;
use hybridland_sim::import::rt_app::{Treatment, Unmodelled, import, is_rt_app};
use hybridland_sim::trace::{FrameSpec, LoopSpec, Phase};

fn ok(text: &str) -> (Trace, Vec<Unmodelled>) {
    let imported = import(text, "t.json", "t").unwrap_or_else(|e| panic!("{e}"));
    (imported.trace, imported.unmodelled)
}

fn err(text: &str) -> String {
    import(text, "t.json", "t").unwrap_err().to_string()
}

/// Asserts that importing `text` fails with an error that says `expected`.
fn refused(text: &str, expected: &str) {
    let e = err(text);
    assert!(e.contains(expected), "{e}");
}

/// A task's whole program: `times` rounds of `phases`.
fn looped(times: u64, phases: Vec<Phase>) -> [Phase; 1] {
    [Phase::Loop(LoopSpec { times, phases })]
}

fn keys(notes: &[Unmodelled]) -> Vec<String> {
    notes
        .iter()
        .map(|n| format!("{}/{}/{}", n.task, n.phase.as_deref().unwrap_or("-"), n.key))
        .collect()
}

#[test]
fn detects_rt_app_by_shape() {
    assert!(is_rt_app(r#"{"tasks": {"a": {"run": 10}}}"#));
    assert!(is_rt_app(r#"{"global": {"duration": 1}}"#));
    assert!(is_rt_app("/* comment */ {\"tasks\": {}}"));
    assert!(!is_rt_app(
        r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": 1}]}]}"#
    ));
    assert!(!is_rt_app(r#"{"version": 1, "global": {}}"#));
    assert!(!is_rt_app("not json"));
}

#[test]
fn run_and_sleep_in_microseconds_with_numbered_keys_in_order() {
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "run0": 10, "sleep0": 20, "run1": 30}}}"#);
    assert!(notes.is_empty(), "{notes:?}");
    let a = &t.tasks[0];
    assert_eq!(a.name, "a");
    assert_eq!(
        a.phases,
        [
            Phase::RunNs(10_000),
            Phase::SleepNs(20_000),
            Phase::RunNs(30_000)
        ]
    );
    assert_eq!((a.copies, a.start_ns, a.weight), (1, 0, 100));
    assert_eq!(t.duration_ns, None);
}

#[test]
fn repeated_keys_run_in_the_order_written() {
    // workgen numbers repeated keys itself; a file written with them repeated means the same.
    let (t, _) = ok(r#"{"tasks": {"a": {"loop": 1, "run": 1, "sleep": 2, "run": 3}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(1_000),
            Phase::SleepNs(2_000),
            Phase::RunNs(3_000)
        ]
    );
}

#[test]
fn global_duration_bounds_a_forever_loop() {
    let (t, _) = ok(r#"{"global": {"duration": 3}, "tasks": {"a": {"run": 1000, "sleep": 1000}}}"#);
    assert_eq!(t.duration_ns, Some(3_000_000_000));
    // loop -1 (the default) repeats until the duration: 3 s / 2 ms of reference time.
    assert_eq!(
        t.tasks[0].phases,
        looped(
            1500,
            vec![Phase::RunNs(1_000_000), Phase::SleepNs(1_000_000)]
        )
    );
    refused(r#"{"tasks": {"a": {"run": 10}}}"#, "loops forever");
    refused(
        r#"{"global": {"duration": -1}, "tasks": {"a": {"run": 10}}}"#,
        "tasks.a: loops forever",
    );
}

#[test]
fn instance_delay_and_task_loop() {
    let (t, _) = ok(
        r#"{"tasks": {"w": {"instance": 3, "delay": 250, "loop": 5, "run": 7},
                      "ghost": {"instance": 0, "loop": 1, "run": 1}}}"#,
    );
    assert_eq!(t.tasks.len(), 1, "instance 0 creates no thread");
    let w = &t.tasks[0];
    assert_eq!((w.copies, w.start_ns), (3, 250_000));
    assert_eq!(w.phases, looped(5, vec![Phase::RunNs(7_000)]));
    refused(r#"{"tasks": {"w": {"loop": 0, "run": 7}}}"#, "tasks.w.loop");
}

#[test]
fn cpus_become_an_affinity_list() {
    let (t, _) = ok(r#"{"tasks": {"a": {"cpus": [3, 1, 2, 1], "loop": 1, "run": 1}}}"#);
    assert_eq!(t.tasks[0].allowed_cpus.as_deref(), Some("1,2,3"));
    refused(
        r#"{"tasks": {"a": {"cpus": [], "loop": 1, "run": 1}}}"#,
        "tasks.a.cpus",
    );
    refused(
        r#"{"tasks": {"a": {"cpus": [-1], "loop": 1, "run": 1}}}"#,
        "tasks.a.cpus[0]",
    );
}

#[test]
fn priority_is_nice_under_sched_other() {
    let weight = |prio: i32| {
        let (t, _) = ok(&format!(
            r#"{{"tasks": {{"a": {{"priority": {prio}, "loop": 1, "run": 1}}}}}}"#
        ));
        t.tasks[0].weight
    };
    // The kernel's nice weights on the cgroup scale: 1024 -> 100, 88761 -> 8668, 15 -> 1.
    assert_eq!(weight(0), 100);
    assert_eq!(weight(-20), 8668);
    assert_eq!(weight(10), 11);
    assert_eq!(weight(19), 1);
    refused(
        r#"{"tasks": {"a": {"priority": 20, "loop": 1, "run": 1}}}"#,
        "tasks.a.priority: must be an integer in -20..=19, got 20",
    );
}

#[test]
fn real_time_policies_are_approximated_and_said_so() {
    let (t, notes) = ok(
        r#"{"global": {"default_policy": "SCHED_FIFO"}, "tasks": {"a": {"priority": 50, "loop": 1, "run": 1},
           "b": {"policy": "SCHED_IDLE", "loop": 1, "run": 1}}}"#,
    );
    assert_eq!((t.tasks[0].weight, t.tasks[1].weight), (100, 1));
    assert_eq!(keys(&notes), ["a/-/policy", "b/-/policy"]);
    assert!(matches!(&notes[0].treatment, Treatment::Approximated(s) if s.contains("SCHED_FIFO")));
    refused(
        r#"{"tasks": {"a": {"policy": "SCHED_BATCH2", "loop": 1, "run": 1}}}"#,
        "tasks.a.policy",
    );
}

#[test]
fn util_clamps_bound_the_estimate() {
    let util = |extra: &str| {
        let (t, _) = ok(&format!(
            r#"{{"tasks": {{"a": {{{extra} "loop": 1, "run": 1000, "sleep": 3000}}}}}}"#
        ));
        t.tasks[0].util
    };
    // The estimate is 1/4 of the time: 256.
    assert_eq!(util(""), None);
    assert_eq!(util(r#""util_min": 600,"#), Some(600));
    assert_eq!(util(r#""util_max": 100,"#), Some(100));
    assert_eq!(util(r#""util_min": 100, "util_max": 900,"#), Some(256));
    refused(
        r#"{"tasks": {"a": {"util_min": 900, "util_max": 100, "loop": 1, "run": 1}}}"#,
        "above util_max",
    );
    refused(
        r#"{"tasks": {"a": {"util_max": 2000, "loop": 1, "run": 1}}}"#,
        "tasks.a.util_max",
    );
}

#[test]
fn phases_run_in_order_with_their_loops() {
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 2, "phases": {
            "z_first": {"loop": 3, "run": 10, "sleep": 10},
            "a_second": {"run": 50}}}}}"#);
    assert!(notes.is_empty());
    assert_eq!(
        t.tasks[0].phases,
        looped(
            2,
            vec![
                Phase::Loop(LoopSpec {
                    times: 3,
                    phases: vec![Phase::RunNs(10_000), Phase::SleepNs(10_000)]
                }),
                Phase::RunNs(50_000),
            ]
        )
    );
}

#[test]
fn phase_attributes_alike_are_the_tasks_and_a_change_is_noted() {
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "phases": {
            "p1": {"cpus": [0, 1], "run": 10},
            "p2": {"cpus": [0, 1], "run": 10}}},
        "b": {"cpus": [4], "loop": 1, "phases": {
            "p1": {"run": 10},
            "p2": {"cpus": [2], "util_min": 10, "run": 10}}}}}"#);
    assert_eq!(t.tasks[0].allowed_cpus.as_deref(), Some("0,1"));
    assert_eq!(t.tasks[1].allowed_cpus.as_deref(), Some("4"));
    assert_eq!(keys(&notes), ["b/p2/cpus", "b/p2/util_min"]);
}

#[test]
fn runs_then_a_timer_become_a_frame_loop() {
    let (t, notes) = ok(
        r#"{"global": {"duration": 1}, "tasks": {"r": {"run0": 4000, "run1": 2000,
            "timer0": {"ref": "unique", "period": 16000}}}}"#,
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        t.tasks[0].frames,
        Some(FrameSpec {
            period_ns: 16_000_000,
            work_ns: 6_000_000,
            deadline_ns: None,
            count: 63
        })
    );
    // A counted loop gives the count; absolute mode is noted (a shared timer only when
    // another thread shares it).
    let (t, notes) = ok(
        r#"{"tasks": {"r": {"loop": 10, "phases": {"p": {"loop": 3, "run": 1000,
            "timer": {"ref": "tick", "period": 5000, "mode": "absolute"}}}}}}"#,
    );
    assert_eq!(t.tasks[0].frames.as_ref().map(|f| f.count), Some(30));
    assert_eq!(keys(&notes), ["r/p/timer"]);
}

#[test]
fn a_timer_elsewhere_is_a_sleep_to_the_end_of_its_period() {
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "phases": {
            "p": {"run": 3000, "sleep": 1000, "timer": {"ref": "unique", "period": 10000}},
            "q": {"run": 1}}}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(3_000_000),
            Phase::SleepNs(1_000_000),
            Phase::SleepNs(6_000_000),
            Phase::RunNs(1_000)
        ]
    );
    assert_eq!(keys(&notes), ["a/-/timer"]);
}

#[test]
fn runtime_is_approximated_as_reference_work() {
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "runtime0": 500, "sleep0": 10}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [Phase::RunNs(500_000), Phase::SleepNs(10_000)]
    );
    assert_eq!(keys(&notes), ["a/-/runtime0"]);
    assert!(matches!(&notes[0].treatment, Treatment::Approximated(_)));
}
