//! Traces `import` writes pass docs/trace.schema.json, as do the bundled example traces: the
//! schema is what other tools are told to check a trace with.

mod common;

use common::{hybrid_sim, root, text};
use serde_json::Value;

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("docs/trace.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("docs/trace.schema.json is a valid schema")
}

fn assert_valid(validator: &jsonschema::Validator, what: &str, trace: &str) {
    let doc: Value = serde_json::from_str(trace).unwrap_or_else(|e| panic!("{what}: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} fails the schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn imported_traces_pass_the_schema() {
    let validator = schema();
    let o = hybrid_sim(&["import", "rt-app", "examples/rt-app/laptop-mix.json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_valid(&validator, "import rt-app", &text(&o.stdout));
    // Wake-up relations (version 2): rt-app's resume chains and a recording's wakers.
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        "crates/cli/tests/fixtures/rt-app-examples/mp3-short.json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("\"wake_if_waiting\""));
    assert_valid(&validator, "import rt-app mp3-short.json", &text(&o.stdout));
    let o = hybrid_sim(&[
        "import",
        "ftrace",
        "examples/recordings/vm-busybox.trace",
        "--topology",
        "scripts/vm/topology-2p-smt-4e.toml",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("\"wait_for\""));
    assert_valid(&validator, "import ftrace", &text(&o.stdout));
}

#[test]
fn example_traces_pass_the_schema() {
    let validator = schema();
    let dir = root().join("examples/traces");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let trace = std::fs::read_to_string(&path).unwrap();
            assert_valid(&validator, &path.display().to_string(), &trace);
            n += 1;
        }
    }
    assert!(n >= 5);
}
