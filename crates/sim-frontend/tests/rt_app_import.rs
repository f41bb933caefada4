//! rt-app import: hand-written rt-app files, one field at a time, and the bundled example.

mod util;

use hybridland_sim::import::rt_app::{
    MAX_RT_APP_BYTES, RtAppError, RtAppOptions, RtAppSource, Treatment, Unmodelled, import,
    import_files, is_rt_app, summary_lines,
};
use hybridland_sim::trace::{FrameSpec, LoopSpec, Phase};
use hybridland_sim::{Trace, presets};
use std::path::PathBuf;

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

#[test]
fn every_unmodelled_event_is_listed_with_task_and_phase() {
    let (t, notes) = ok(r#"{"tasks": {
        "a": {"loop": 1, "taskgroup": "/tg", "phases": {
            "p1": {"run": 10, "lock": "m", "signal": "c", "unlock": "m", "lock": "m", "unlock": "m"},
            "p2": {"barrier": "b", "sleep": 10, "mem": 4096, "iorun": 10, "yield": ""}}},
        "b": {"loop": 1, "run": 10, "suspend": "b", "resume": "a", "wait": {"ref": "c", "mutex": "m"},
              "sync": {"ref": "c", "mutex": "m"}, "broad": "c", "sem_post": "s", "sem_wait": "s",
              "memrun": {"type": "chase", "size": 4096, "count": 100}, "nodes_membind": [0]}}}"#);
    // mem and iorun as work at 10 bytes per reference ns; memrun's chase at 5 ns a step.
    // a's signal wakes b, which waits on the condition; b's resume wakes a (whose thread
    // never suspends, so it is lost at run time, as rt-app loses it) and its wait and sync
    // wait for a, the one other thread signalling "c".
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("b".into()),
            Phase::SleepNs(10_000),
            Phase::RunNs(409),
            Phase::RunNs(1)
        ]
    );
    assert_eq!(
        t.tasks[1].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("a".into()),
            Phase::WaitFor(vec!["a".into()]),
            Phase::WaitFor(vec!["a".into()]),
            Phase::RunNs(500)
        ]
    );
    let listed: Vec<String> = notes
        .iter()
        .map(|n| {
            let kind = match n.treatment {
                Treatment::Dropped(_) => "dropped",
                Treatment::Approximated(_) => "approximated",
            };
            format!(
                "{}/{}/{}/{}",
                n.task,
                n.phase.as_deref().unwrap_or("-"),
                n.feature,
                kind
            )
        })
        .collect();
    // What is left is what the relation cannot carry: b suspends but nobody resumes "b",
    // its sync's and broadcast's signals and its sem_post reach no other waiting thread, and
    // no other thread posts the semaphore it waits on.
    assert_eq!(
        listed,
        [
            "a/p1/lock/approximated",
            "a/p1/unlock/approximated",
            "a/p1/lock/approximated",
            "a/p1/unlock/approximated",
            "a/p2/barrier/approximated",
            "a/p2/mem/approximated",
            "a/p2/iorun/approximated",
            "a/p2/yield/dropped",
            "a/-/taskgroup/dropped",
            "b/-/memrun/approximated",
            "b/-/nodes_membind/dropped",
            "b/-/suspend/approximated",
            "b/-/signal/dropped",
            "b/-/broad/dropped",
            "b/-/sem_post/dropped",
            "b/-/sem_wait/approximated",
        ]
    );
    assert_eq!(notes[0].source, "t.json");
    assert!(
        notes[11]
            .to_string()
            .starts_with("task \"b\": suspend approximated (no other thread resumes \"b\""),
        "{}",
        notes[11]
    );
    // One summary line per task, each feature once, with its phases.
    let lines = summary_lines(&notes);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("t.json: task \"a\": lock approximated (never contended"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[0].matches("(never contended").count(),
        2,
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("[phases p1]"), "{}", lines[0]);
}

/// The files of one import are held as one tree, so their limit is on the text together: two
/// files each under it are refused when they pass it together, before anything is parsed.
#[test]
fn the_files_of_one_import_are_bounded_together() {
    let workload = r#"{"global": {"duration": 1}, "tasks": {"a": {"loop": 1, "run": 10}}}"#;
    let padded = |len: usize| workload.to_owned() + &" ".repeat(len - workload.len());
    let at_limit = padded(MAX_RT_APP_BYTES);
    let one = [RtAppSource {
        name: "big.json",
        text: &at_limit,
    }];
    import_files(&one, "t", RtAppOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let half = padded(MAX_RT_APP_BYTES / 2 + 1);
    let two = [
        RtAppSource {
            name: "a.json",
            text: &half,
        },
        RtAppSource {
            name: "b.json",
            text: &half,
        },
    ];
    let e = import_files(&two, "t", RtAppOptions::default()).unwrap_err();
    assert_eq!(
        e,
        RtAppError::TooLarge {
            source_name: "a.json + b.json".into(),
            bytes: MAX_RT_APP_BYTES + 2,
            max: MAX_RT_APP_BYTES,
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "a.json + b.json: {} bytes of rt-app text, more than the {MAX_RT_APP_BYTES} accepted",
            MAX_RT_APP_BYTES + 2
        )
    );
}

/// A phase loop whose time passes u128, then a fork: an error naming the task (its loops,
/// folded past the trace's repetition limit, nest too deep), not an overflow while the fork is
/// timed (a panic in a debug build).
#[test]
fn a_fork_after_a_loop_beyond_any_clock_is_an_error_not_a_panic() {
    let e = err(r#"{"tasks": {
        "a": {"loop": 2, "phases": {
            "p1": {"loop": 18446744073709551615, "run": 18446744073709551,
                   "sleep": 18446744073709551},
            "p2": {"run": 1, "fork": "b"}}},
        "b": {"instance": 0, "loop": 1, "run": 10}}}"#);
    assert!(e.starts_with("t.json: tasks[0] \"a\": "), "{e}");
}

#[test]
fn errors_name_the_file_and_the_place() {
    let e = import(
        "{\"tasks\": {\"a\": {\"run\": 10 \"sleep\": 1}}}",
        "bad.json",
        "bad",
    )
    .unwrap_err();
    assert!(matches!(e, RtAppError::Syntax { line: 1, .. }), "{e:?}");
    assert!(e.to_string().starts_with("bad.json:1:"), "{e}");
    refused(
        r#"{"tasks": {"a": {"loop": 1, "run": -5}}}"#,
        "t.json: tasks.a.run: must be a non-negative integer of microseconds, got -5",
    );
    refused(
        r#"{"tasks": {"a": {"loop": 1, "run": 1.5}}}"#,
        "tasks.a.run",
    );
    // A key rt-app does not know is ignored, as rt-app ignores it, and noted.
    let (_, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "run": 1, "jump": 1}}}"#);
    assert_eq!(keys(&notes), ["a/-/jump"]);
    refused(
        r#"{"tasks": {"a": {"loop": 1, "lock": "m"}}}"#,
        "nothing to simulate",
    );
    // Events beside `phases` are not run, by rt-app either.
    let (t, notes) = ok(r#"{"tasks": {"a": {"loop": 1, "phases": {"p": {"run": 1}}, "run": 3}}}"#);
    assert_eq!(t.tasks[0].phases, [Phase::RunNs(1_000)]);
    assert_eq!(keys(&notes), ["a/-/run"]);
    refused(
        r#"{"tasks": {"a": {"run": 1}}}"#,
        "give the run's length with `import rt-app --duration`",
    );
    refused(
        r#"{"tasks": {"a": {"loop": 1, "run": 1, "timer": {"period": 0}}}}"#,
        "tasks.a.timer.period",
    );
    refused(r#"{"tasks": [], "global": {}}"#, "tasks: must be an object");
    refused(
        r#"{"global": {"duration": 1, "speed": 2}, "tasks": {}}"#,
        "global.speed",
    );
}

#[test]
fn the_bundled_example_imports_and_replays() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app/laptop-mix.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(is_rt_app(&text));
    let imported = import(&text, "laptop-mix.json", "laptop-mix").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        keys(&imported.unmodelled),
        ["worker/idle/lock", "worker/idle/unlock"]
    );
    let trace = imported.trace;
    assert_eq!(trace.nr_tasks(), 6);
    let back = Trace::from_json_str(&trace.to_json_string(), "again").unwrap();
    assert_eq!(back, trace);
    let machine = presets::lookup("i7-13800h").unwrap();
    let report = util::replay_on(&machine, &trace, "hybridland", &[], None);
    assert!(report.fps.is_some());
    // The render thread's 9 ms of work fits its 16.667 ms period on a P-core: 60 fps.
    let fps = report.fps.unwrap();
    assert!(fps.fps_mean > 59.0 && fps.missed_deadlines == 0, "{fps:?}");
}

fn ok_with(files: &[(&str, &str)], duration_s: Option<u64>) -> (Trace, Vec<Unmodelled>) {
    let sources: Vec<RtAppSource<'_>> = files
        .iter()
        .map(|(name, text)| RtAppSource { name, text })
        .collect();
    let options = RtAppOptions {
        duration_ns: duration_s.map(|s| s * 1_000_000_000),
    };
    let imported = import_files(&sources, "t", options).unwrap_or_else(|e| panic!("{e}"));
    (imported.trace, imported.unmodelled)
}

#[test]
fn read_as_rt_app_reads_trailing_commas_comments_repeats_and_the_suspend_shorthand() {
    let (t, notes) = ok(r#"{
        // a comment
        "tasks": {
            "a": {
                "loop": 2, /* block */
                "suspend",
                "run": 10,
                "sleep": 20,
                "run": 30,
            },
        },
    }"#);
    assert_eq!(
        t.tasks[0].phases,
        looped(
            2,
            vec![
                Phase::RunNs(10_000),
                Phase::SleepNs(20_000),
                Phase::RunNs(30_000)
            ]
        )
    );
    assert_eq!(keys(&notes), ["a/-/suspend"]);
    // Event keys by prefix, as rt-app's parser matches them.
    let (t, _) = ok(r#"{"tasks": {"a": {"loop": 1, "run_first": 5, "sleep_then": 6}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [Phase::RunNs(5_000), Phase::SleepNs(6_000)]
    );
}

#[test]
fn duration_option_bounds_loop_forever_and_replaces_the_files() {
    let text = r#"{"tasks": {"a": {"run": 1000, "sleep": 1000}}}"#;
    refused(text, "--duration");
    let (t, _) = ok_with(&[("a.json", text)], Some(2));
    assert_eq!(t.duration_ns, Some(2_000_000_000));
    assert_eq!(
        t.tasks[0].phases,
        looped(
            1000,
            vec![Phase::RunNs(1_000_000), Phase::SleepNs(1_000_000)]
        )
    );
    let with_own = r#"{"global": {"duration": 9}, "tasks": {"a": {"run": 1000, "sleep": 1000}}}"#;
    assert_eq!(
        ok_with(&[("a.json", with_own)], Some(2)).0.duration_ns,
        Some(2_000_000_000)
    );
}

#[test]
fn files_merge_as_rt_apps_merge_py_merges_them() {
    let (t, notes) = ok_with(
        &[
            ("g.json", r#"{"global": {"duration": 1}}"#),
            (
                "a.json",
                r#"{"tasks": {"a": {"run": 10, "lock": "m", "unlock": "m"}}}"#,
            ),
            ("b.json", r#"{"tasks": {"b": {"loop": 1, "run": 20}}}"#),
        ],
        None,
    );
    let names: Vec<&str> = t.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(t.duration_ns, Some(1_000_000_000));
    assert_eq!(notes[0].source, "a.json");
    // Alone, a file without tasks says what to do.
    let e = import(r#"{"global": {"duration": 1}}"#, "g.json", "g")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("give every file of a split workload to one import"),
        "{e}"
    );
}

/// rt-app's `cpufreq_governor_efficiency/dvfs.json`: a timer phase then a run phase, ten
/// rounds. rt-app's timer keeps one clock across phases: it fires at 1.2 s, 2.4 s, ... and
/// the thread ends after the tenth run, at 12.9 s (the importer gave 21.0 s when each phase
/// restarted the timer).
#[test]
fn a_timer_keeps_its_clock_across_phases() {
    let (t, notes) = ok(r#"{"tasks": {"thread": {"loop": 10, "phases": {
        "sleeping": {"loop": 1, "timer": {"ref": "tick", "period": 1200000}},
        "running": {"loop": 1, "run": 900000}}}}}"#);
    let task = &t.tasks[0];
    assert_eq!(
        task.frames,
        Some(FrameSpec {
            period_ns: 1_200_000_000,
            work_ns: 900_000_000,
            deadline_ns: None,
            count: 10
        })
    );
    // The first frame starts when the timer first fires.
    assert_eq!(task.start_ns, 1_200_000_000);
    assert!(notes.is_empty(), "{notes:?}");
    let machine = presets::lookup("i7-13800h").unwrap();
    let report = util::replay_on(&machine, &t, "hybridland", &[], None);
    // The last frame wakes the idle P-core: 2 us of interrupt and 10 us of idle exit.
    assert_eq!(report.summary.makespan_ns, 12_900_000_000 + 12_000);
    // A timer between runs is a sleep to its next firing, counted from its last one across
    // the phases: 2 ms run, timer (10 ms), 5 ms run: 8 ms sleep the first round, 3 ms after.
    let (t, _) = ok(r#"{"tasks": {"a": {"loop": 4, "phases": {
        "p": {"run": 2000, "timer": {"ref": "unique", "period": 10000}},
        "q": {"run": 5000}}}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(2_000_000),
            Phase::SleepNs(8_000_000),
            Phase::RunNs(5_000_000),
            Phase::Loop(LoopSpec {
                times: 3,
                phases: vec![
                    Phase::RunNs(2_000_000),
                    Phase::SleepNs(3_000_000),
                    Phase::RunNs(5_000_000)
                ]
            })
        ]
    );
}

/// rt-app's `tutorial/example9.json`: thread3 forks thread1 in its first phase and thread2
/// (instance 0: only ever forked) in its second, once (loop 1).
#[test]
fn a_fork_starts_the_forked_thread_where_the_fork_is() {
    let (t, notes) = ok(r#"{"global": {"duration": 2}, "tasks": {
        "thread1": {"phases": {"phase1": {"run": 10000, "sleep": 10000}}},
        "thread2": {"instance": 0, "phases": {"phase1": {"run": 20000, "sleep": 20000}}},
        "thread3": {"loop": 1, "phases": {
            "phase1": {"fork": "thread1", "run": 10000, "sleep": 10000},
            "phase2": {"fork": "thread2", "run": 20000, "sleep": 20000}}}}}"#);
    let starts: Vec<(&str, u32, u64)> = t
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.copies, t.start_ns))
        .collect();
    assert_eq!(
        starts,
        [
            ("thread1", 1, 0),
            ("thread3", 1, 0),
            ("thread1-forked1", 1, 0),
            ("thread2-forked1", 1, 20_000_000)
        ]
    );
    // thread3 runs its whole count: both phases once.
    assert_eq!(
        t.tasks[1].phases,
        [
            Phase::RunNs(10_000_000),
            Phase::SleepNs(10_000_000),
            Phase::RunNs(20_000_000),
            Phase::SleepNs(20_000_000)
        ]
    );
    // The forked thread runs: it replays with its own run time.
    let machine = presets::lookup("i7-13800h").unwrap();
    let report = util::replay_on(&machine, &t, "hybridland", &[], None);
    let forked = report
        .tasks
        .iter()
        .find(|r| r.name.starts_with("thread2-forked1"))
        .unwrap_or_else(|| panic!("{:?}", report.tasks));
    assert!(
        forked.ran_performance_ns + forked.ran_efficiency_ns > 0,
        "{forked:?}"
    );
    assert!(notes.iter().all(|n| n.feature == "fork"), "{notes:?}");
    let e = err(r#"{"tasks": {"a": {"loop": 1, "run": 1, "fork": "nobody"}}}"#);
    assert!(e.contains("forks \"nobody\", which is not a task"), "{e}");
    let e = err(r#"{"global": {"duration": 100}, "tasks": {"a": {"run": 1, "fork": "a"}}}"#);
    assert!(e.contains("more than 1024 times"), "{e}");
}

/// rt-app's `mp3-long.json` runs a 300 us thread for 600 s: two million rounds, more than a
/// trace loop holds, folded into a loop of loops.
#[test]
fn rounds_past_the_loop_limit_fold() {
    let (t, _) = ok(r#"{"global": {"duration": 600}, "tasks": {"a": {"run": 300}}}"#);
    let Phase::Loop(outer) = &t.tasks[0].phases[0] else {
        panic!("{:?}", t.tasks[0].phases)
    };
    assert_eq!(outer.times, 2);
    assert_eq!(outer.phases, looped(1_000_000, vec![Phase::RunNs(300_000)]));
}

#[test]
fn batch_policy_and_the_older_grammar() {
    let (t, notes) =
        ok(r#"{"tasks": {"a": {"loop": 1, "run": 1, "policy": "SCHED_BATCH", "priority": 5}}}"#);
    assert_eq!(t.tasks[0].weight, 33);
    assert_eq!(keys(&notes), ["a/-/policy"]);
    // rt-app's first grammar, as doc/examples/merge/ writes it: exec per period.
    let (t, notes) = ok(r#"{"global": {"duration": 1},
        "resources": {"m0": {"type": "mutex"}, "w": {"type": "wait"}},
        "tasks": {"t": {"exec": 1000, "period": 5000, "deadline": 4000,
            "lock_order": ["w", "m0"], "resources": {"m0": {"duration": 500}}}}}"#);
    assert_eq!(
        t.tasks[0].frames,
        Some(FrameSpec {
            period_ns: 5_000_000,
            work_ns: 1_000_000,
            deadline_ns: Some(4_000_000),
            count: 200
        })
    );
    let features: Vec<&str> = notes.iter().map(|n| n.feature.as_str()).collect();
    assert_eq!(features, ["lock_order (wait)", "lock_order (mutex)"]);
    refused(
        r#"{"tasks": {"t": {"loop": 1, "exec": 10, "period": 5}}}"#,
        "longer than the period",
    );
}

/// rt-app's template.json: a run, a `"sleep": 0` and a timer, which is still a frame loop.
#[test]
fn a_zero_sleep_beside_a_timer_keeps_the_frame_loop() {
    let (t, notes) = ok(
        r#"{"global": {"duration": 6}, "tasks": {"thread0": {"loop": -1,
        "run": 10000, "sleep": 0, "timer": {"ref": "unique", "period": 100000}}}}"#,
    );
    assert_eq!(
        t.tasks[0].frames,
        Some(FrameSpec {
            period_ns: 100_000_000,
            work_ns: 10_000_000,
            deadline_ns: None,
            count: 60
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

/// A `suspend` waits under the thread's own name (today's rt-app) and under the name it
/// writes (rt-app before 2025, as browser-short.json expects): a `resume` of either wakes it,
/// and the second is noted. The bare shorthand waits under the thread's name alone.
#[test]
fn a_suspend_waits_for_resumes_of_its_own_and_its_written_name() {
    let (t, notes) = ok(r#"{"tasks": {
        "a": {"loop": 1, "run": 10, "resume": "grp", "resume": "c"},
        "b": {"loop": 1, "suspend": "grp", "run": 10},
        "c": {"loop": 1, "suspend", "run": 10}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("b".into()),
            Phase::WakeIfWaiting("c".into())
        ]
    );
    assert_eq!(
        t.tasks[1].phases,
        [Phase::WaitFor(vec!["a".into()]), Phase::RunNs(10_000)]
    );
    assert_eq!(
        t.tasks[2].phases,
        [Phase::WaitFor(vec!["a".into()]), Phase::RunNs(10_000)]
    );
    assert_eq!(keys(&notes), ["b/-/suspend"]);
    assert!(
        notes[0].to_string().contains("resuming \"grp\" too"),
        "{}",
        notes[0]
    );
}
