//! `replay --timeline`: the file is Chrome trace-event JSON (the JSON Object Format of the
//! Trace Event Format document that chrome://tracing and Perfetto read), its slices never
//! overlap on a CPU's track, they add up to the report's busy time, and writing it changes
//! nothing in the replay.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

mod common;
use common::hybrid_sim;

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("timeline");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Microseconds as written (three decimals) back to integer nanoseconds.
fn ns(v: &Value) -> u64 {
    let f = v.as_f64().expect("a number");
    assert!(f >= 0.0, "negative time {f}");
    (f * 1000.0).round() as u64
}

fn check_event(e: &Value) {
    let obj = e.as_object().expect("every event is an object");
    let ph = obj["ph"].as_str().expect("ph is a string");
    assert!(obj["name"].is_string(), "{e}");
    assert!(obj["pid"].is_u64() && obj["tid"].is_u64(), "{e}");
    match ph {
        "M" => {
            let name = obj["name"].as_str().unwrap();
            assert!(
                [
                    "process_name",
                    "process_sort_index",
                    "thread_name",
                    "thread_sort_index"
                ]
                .contains(&name),
                "{e}"
            );
            assert!(obj["args"].is_object(), "{e}");
        }
        "X" => {
            ns(&obj["ts"]);
            ns(&obj["dur"]);
            let args = obj["args"].as_object().expect("slice args");
            assert!(args["step"].is_string() && args["util"].is_u64(), "{e}");
        }
        "C" => {
            ns(&obj["ts"]);
            let args = obj["args"].as_object().expect("counter args");
            assert!(
                !args.is_empty() && args.values().all(Value::is_number),
                "{e}"
            );
        }
        other => panic!("unexpected phase {other}: {e}"),
    }
}

#[test]
fn timeline_is_trace_event_json_with_disjoint_slices_matching_the_report() {
    let path = scratch("webgl.json");
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed004-webgl.json",
        "--policy",
        "hybridland,spread",
        "--timeline",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reports: Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: Value = serde_json::from_str(&text).expect("the timeline is one JSON document");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    assert_eq!(doc["displayTimeUnit"], "ms");
    for e in events {
        check_event(e);
    }

    // Process per policy, named; a named track for every CPU a slice is on.
    let mut processes = BTreeMap::new();
    let mut threads = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match e["name"].as_str().unwrap() {
            "process_name" => {
                processes.insert(key.0, e["args"]["name"].as_str().unwrap().to_owned());
            }
            "thread_name" => {
                threads.insert(key, e["args"]["name"].as_str().unwrap().to_owned());
            }
            _ => {}
        }
    }
    assert_eq!(
        processes.values().cloned().collect::<Vec<_>>(),
        ["hybridland", "spread"]
    );
    assert_eq!(threads[&(1, 12)], "cpu 12 efficiency cluster 6");

    let mut tracks: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(threads.contains_key(&key), "slice on an unnamed track: {e}");
        tracks
            .entry(key)
            .or_default()
            .push((ns(&e["ts"]), ns(&e["dur"])));
    }
    assert!(tracks.keys().any(|k| k.0 == 1) && tracks.keys().any(|k| k.0 == 2));
    for (key, slices) in &mut tracks {
        slices.sort_unstable();
        for pair in slices.windows(2) {
            assert!(
                pair[0].0 + pair[0].1 <= pair[1].0,
                "track {key:?}: slice at {} ns for {} ns overlaps the one at {} ns",
                pair[0].0,
                pair[0].1,
                pair[1].0
            );
        }
    }
    // The slices are the report's busy time, CPU by CPU (to the rounding of ns to 3 decimals).
    for (p, report) in reports.as_array().unwrap().iter().enumerate() {
        for cpu in report["cpus"].as_array().unwrap() {
            let id = cpu["cpu"].as_u64().unwrap();
            let busy: u64 = tracks
                .get(&(p as u64 + 1, id))
                .map_or(0, |s| s.iter().map(|x| x.1).sum());
            assert_eq!(
                busy,
                cpu["busy_ns"].as_u64().unwrap(),
                "policy {p} cpu {id}"
            );
        }
    }
    // The P-cores of hybridland's replay carry slices placed by the idle order's first step.
    assert!(text.contains("\"step\":\"idle-p-core\""));
    assert!(text.contains("\"name\":\"power (W)\""));
    assert!(text.contains("\"name\":\"busy cpus: cluster 6 (efficiency)\""));
}

#[test]
fn writing_a_timeline_changes_nothing_in_the_replay() {
    let trace = "examples/traces/seed003-openmp.json";
    let plain = hybrid_sim(&["replay", trace, "--policy", "hybridland,spread", "--json"]);
    let path = scratch("openmp.json");
    let with = hybrid_sim(&[
        "replay",
        trace,
        "--policy",
        "hybridland,spread",
        "--json",
        "--timeline",
        path.to_str().unwrap(),
    ]);
    assert!(with.status.success());
    assert_eq!(plain.stdout, with.stdout);
}

#[test]
fn an_unwritable_timeline_is_an_input_error_naming_the_file() {
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed000-lone.json",
        "--timeline",
        "/nonexistent-dir/t.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/t.json: cannot create"));
}
