//! The files of an rt-app import: their size bound, errors naming the file and the place,
//! the reader's leniency (comments, trailing commas, repeated keys), `--duration`, workloads
//! split over several files, the older grammar, and the bundled example replayed.

use super::{keys, looped, ok, refused, util};
use hybridland_sim::import::rt_app::{
    MAX_RT_APP_BYTES, RtAppError, RtAppOptions, RtAppSource, Unmodelled, import, import_files,
    is_rt_app,
};
use hybridland_sim::trace::{FrameSpec, Phase};
use hybridland_sim::{Trace, presets};
use std::path::PathBuf;

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
