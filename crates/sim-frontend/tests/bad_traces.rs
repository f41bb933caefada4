//! Malformed traces get typed errors that name the file and the place, before anything runs.
//! The inputs are `examples/traces/invalid/`.

mod util;

use hybridland_sim::trace::{JsonSyntax, MAX_TASKS, MAX_TRACE_BYTES};
use hybridland_sim::{Knobs, PolicyError, SimError, Trace, TraceError, policy_by_name, presets};
use util::plain_policy::simulation;
use util::traces_dir;

fn parse(name: &str) -> Result<Trace, TraceError> {
    let path = traces_dir().join("invalid").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    Trace::from_json_str(&text, name)
}

/// The syntax error a trace must fail with.
fn syntax(e: &TraceError) -> &JsonSyntax {
    let TraceError::Syntax(syntax) = e else {
        panic!("{e:?}")
    };
    syntax
}

#[test]
fn wrong_type_names_line_column_and_field() {
    let e = parse("wrong-type.json").unwrap_err();
    let s = syntax(&e);
    assert_eq!(s.line, 5);
    assert!(s.column > 0);
    assert_eq!(s.path, "tasks[0].phases[0].run_ns");
    assert!(s.message.contains("invalid type"), "{s:?}");
    assert!(e.to_string().starts_with("wrong-type.json:5:"), "{e}");
}

#[test]
fn unknown_field_is_refused() {
    let e = parse("unknown-field.json").unwrap_err();
    let s = syntax(&e);
    assert!(s.message.contains("unknown field `priority`"), "{s:?}");
    assert_eq!(s.path, "tasks[0].priority");
}

#[test]
fn negative_duration_is_refused() {
    let e = parse("negative-duration.json").unwrap_err();
    let s = syntax(&e);
    assert_eq!(s.line, 5);
    assert_eq!(s.path, "tasks[0].phases[1].sleep_ns");
    assert!(s.message.contains("-500"), "{s:?}");
}

#[test]
fn truncated_file_is_refused() {
    let e = parse("truncated.json").unwrap_err();
    let s = syntax(&e);
    assert_eq!(s.line, 5);
    assert!(s.message.contains("EOF"), "{s:?}");
}

#[test]
fn unsupported_and_missing_versions_are_refused() {
    let e = parse("unsupported-version.json").unwrap_err();
    assert!(
        matches!(&e, TraceError::UnsupportedVersion { version, supported: 2, .. } if version == "3"),
        "{e:?}"
    );
    let e = Trace::from_json_str(r#"{"tasks": []}"#, "nov.json").unwrap_err();
    assert!(
        matches!(&e, TraceError::Invalid { field, .. } if field == "version"),
        "{e:?}"
    );
    let e = Trace::from_json_str(r#"{"version": "1", "tasks": []}"#, "s.json").unwrap_err();
    assert!(matches!(e, TraceError::UnsupportedVersion { .. }), "{e:?}");
}

#[test]
fn hostile_sizes_are_refused_before_expanding() {
    let e = parse("too-many-tasks.json").unwrap_err();
    assert!(
        matches!(&e, TraceError::Invalid { field, message, .. }
            if field == "tasks" && message.contains(&MAX_TASKS.to_string())),
        "{e:?}"
    );
    let e = parse("empty-loop.json").unwrap_err();
    assert!(
        matches!(&e, TraceError::Invalid { place, .. } if place.contains("spin")),
        "{e:?}"
    );
    let huge = " ".repeat(MAX_TRACE_BYTES + 1);
    assert!(matches!(
        Trace::from_json_str(&huge, "huge.json"),
        Err(TraceError::TooLarge { .. })
    ));
}

#[test]
fn invalid_values_name_the_task_and_field() {
    let cases = [
        (
            r#"{"name": "a", "weight": 0, "phases": [{"run_ns": 1}]}"#,
            "weight",
        ),
        (
            r#"{"name": "a", "util": 2000, "phases": [{"run_ns": 1}]}"#,
            "util",
        ),
        (
            r#"{"name": "a", "cache_sensitivity_pct": 101, "phases": [{"run_ns": 1}]}"#,
            "cache_sensitivity_pct",
        ),
        (
            r#"{"name": "a", "allowed_cpus": "3-1", "phases": [{"run_ns": 1}]}"#,
            "allowed_cpus",
        ),
        (r#"{"name": "a", "phases": []}"#, "phases"),
        (
            r#"{"name": "a", "phases": [{"pool": "nope"}]}"#,
            "phases[0]",
        ),
        (
            r#"{"name": "a", "frames": {"period_ns": 0, "work_ns": 1, "count": 1}}"#,
            "frames.period_ns",
        ),
        (
            r#"{"name": "a", "phases": [{"loop": {"times": 0, "phases": [{"run_ns": 1}]}}]}"#,
            "phases[0].loop.times",
        ),
    ];
    for (task, field) in cases {
        let text = format!(
            r#"{{"version": 1, "tasks": [{{"name": "ok", "phases": [{{"run_ns": 1}}]}}, {task}]}}"#
        );
        let e = Trace::from_json_str(&text, "case.json").unwrap_err();
        match &e {
            TraceError::Invalid {
                place, field: f, ..
            } => {
                assert_eq!(place, "tasks[1] \"a\"", "{e}");
                assert_eq!(f, field, "{e}");
            }
            other => panic!("{task}: {other:?}"),
        }
        assert!(e.to_string().starts_with("case.json: tasks[1]"), "{e}");
    }
}

/// Why the engine refuses to set up a replay of `trace` on the preset `machine` under
/// hybridland with `knobs`; `None` when it does not.
fn refusal(trace: &Trace, machine: &str, knobs: &Knobs) -> Option<SimError> {
    let machine = presets::lookup(machine).unwrap();
    let policy = policy_by_name("hybridland", knobs).unwrap();
    simulation(&machine, trace, policy).err()
}

#[test]
fn cpu_outside_the_topology_is_refused_before_running() {
    let trace = parse("cpu-outside-topology.json").expect("well-formed on its own");
    let e = refusal(&trace, "i7-13800h", &Knobs::new()).expect("cpu 20-23 do not exist");
    let SimError::Trace(TraceError::Invalid {
        place,
        field,
        message,
        ..
    }) = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(place, "tasks[1] \"pinned\"");
    assert_eq!(field, "allowed_cpus");
    assert!(message.contains("cpu 20"), "{message}");
}

#[test]
fn policy_that_cannot_fit_the_machine_is_refused() {
    let trace = util::load_trace("seed000-lone.json");
    let knobs = Knobs::parse(&["primary_domain=powersave"]).unwrap();
    let e = refusal(&trace, "symmetric", &knobs).expect("a symmetric machine has no E-cores");
    assert!(
        matches!(e, SimError::Policy(PolicyError::Config { .. })),
        "{e:?}"
    );
    assert!(matches!(
        policy_by_name("eevdf", &Knobs::new()),
        Err(PolicyError::UnknownPolicy { .. })
    ));
}

fn duplicate_name(tasks: &str) -> (usize, String, usize, String) {
    let text = format!(r#"{{"version": 1, "tasks": [{tasks}]}}"#);
    let e = Trace::from_json_str(&text, "dup.json").unwrap_err();
    let TraceError::DuplicateTaskName {
        index,
        name,
        first_index,
        ..
    } = &e
    else {
        panic!("{tasks}: {e:?}")
    };
    (*index, name.clone(), *first_index, e.to_string())
}

#[test]
fn duplicate_task_names_are_refused_with_both_positions() {
    let (index, name, first, text) = duplicate_name(
        r#"{"name": "a", "phases": [{"run_ns": 1}]},
           {"name": "b", "phases": [{"run_ns": 1}]},
           {"name": "a", "phases": [{"run_ns": 2}]}"#,
    );
    assert_eq!((index, name.as_str(), first), (2, "a", 0));
    assert!(
        text.starts_with("dup.json: tasks[2]: task name \"a\" is already used by tasks[0]"),
        "{text}"
    );
}

#[test]
fn copies_may_not_collide_with_a_written_name() {
    // `a` with two copies gives `a.0` and `a.1`; a task written as `a.0` would be a second
    // `a.0` in the report, whichever comes first.
    let copies_first = duplicate_name(
        r#"{"name": "a", "copies": 2, "phases": [{"run_ns": 1}]},
           {"name": "a.0", "phases": [{"run_ns": 1}]}"#,
    );
    assert_eq!(
        (copies_first.0, copies_first.1.as_str(), copies_first.2),
        (1, "a.0", 0)
    );
    let written_first = duplicate_name(
        r#"{"name": "a.1", "phases": [{"run_ns": 1}]},
           {"name": "a", "copies": 3, "phases": [{"run_ns": 1}]}"#,
    );
    assert_eq!(
        (written_first.0, written_first.1.as_str(), written_first.2),
        (1, "a.1", 0)
    );
    // Two copied tasks of one name collide at their first copy.
    let both_copied = duplicate_name(
        r#"{"name": "w", "copies": 2, "phases": [{"run_ns": 1}]},
           {"name": "w", "copies": 2, "phases": [{"run_ns": 1}]}"#,
    );
    assert_eq!(
        (both_copied.0, both_copied.1.as_str(), both_copied.2),
        (1, "w.0", 0)
    );
}

#[test]
fn names_that_only_look_alike_are_accepted() {
    // Uniqueness is of the names reports show: a single `a`, two copies of `a` (`a.0`, `a.1`),
    // `a.2` past the copies' range and `a.0.0` are five different names.
    let text = r#"{"version": 1, "tasks": [
        {"name": "a", "phases": [{"run_ns": 1}]},
        {"name": "a", "copies": 2, "start_ns": 5, "phases": [{"run_ns": 1}]},
        {"name": "a.2", "phases": [{"run_ns": 1}]},
        {"name": "a.0.0", "phases": [{"run_ns": 1}]}]}"#;
    let trace = Trace::from_json_str(text, "alike.json").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.nr_tasks(), 5);
}

fn syntax_error(text: &str) -> (usize, usize, String, String) {
    let e = Trace::from_json_str(text, "arr.json").unwrap_err();
    let s = syntax(&e).clone();
    (s.line, s.column, s.path, s.message)
}

#[test]
fn a_json_array_is_not_a_trace() {
    // serde's positional form of the trace struct: every field in declaration order.
    let positional =
        r#"[1, null, null, null, 0, null, [], [{"name": "a", "phases": [{"run_ns": 1}]}]]"#;
    let (line, column, path, message) = syntax_error(positional);
    assert_eq!(
        (line, column, path.as_str()),
        (1, 1, "."),
        "the document itself"
    );
    assert!(
        message.contains("expected a trace: a JSON object"),
        "{message}"
    );
    // A hundred thousand brackets are refused at the first, not after nesting.
    let (line, column, _, message) = syntax_error(&"[".repeat(100_000));
    assert_eq!((line, column), (1, 1));
    assert!(message.contains("a JSON object"), "{message}");
}

#[test]
fn nested_structs_are_objects_too() {
    let cases = [
        (
            r#"{"version": 1, "tasks": [["a", 1, 0, 100, null, null, 0, [{"run_ns": 1}], null]]}"#,
            "tasks[0]",
            "a task",
        ),
        (
            r#"{"version": 1, "tasks": [{"name": "a", "frames": [10, 5, null, 3]}]}"#,
            "tasks[0].frames",
            "a frame loop",
        ),
        (
            r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"loop": [2, [{"run_ns": 1}]]}]}]}"#,
            "tasks[0].phases[0].loop",
            "a loop",
        ),
        (
            r#"{"version": 1, "pools": [["p", 1, 1]], "tasks": [{"name": "a", "phases": [{"pool": "p"}]}]}"#,
            "pools[0]",
            "a pool",
        ),
    ];
    for (text, at, what) in cases {
        let (_, _, path, message) = syntax_error(text);
        assert_eq!(path, at, "{text}");
        assert!(
            message.contains(&format!("expected {what}: a JSON object")),
            "{text}: {message}"
        );
    }
}
