//! `replay --timeline`: the file is Chrome trace-event JSON (the JSON Object Format of the
//! Trace Event Format document that chrome://tracing and Perfetto read), its slices never
//! overlap on a track (a CPU's or a task's), they add up to the report's busy time, every
//! track is named, every wake-up arrow is bound to a slice at both ends (and one of a wake-up
//! relation starts in its waker's slice), no counter has two samples at one timestamp, a slice
//! says `queued` only when its task waited in a queue, and writing it changes nothing in the
//! replay.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Task tracks' thread ids start here (`hybridland_sim::timeline::TASK_TID_BASE`).
const TASK_TID_BASE: u64 = 1 << 20;

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
            assert!(args["placed"].is_string(), "{e}");
            assert_eq!(obj["cat"], args["placed"], "{e}");
            if obj["tid"].as_u64().unwrap() < TASK_TID_BASE {
                assert!(args["util"].is_u64() && args["task"].is_u64(), "{e}");
            } else {
                assert!(args["cpu"].is_u64(), "{e}");
            }
        }
        "s" | "f" => {
            ns(&obj["ts"]);
            assert!(obj["id"].is_u64(), "{e}");
            assert_eq!(obj["cat"], "wake-up", "{e}");
            if ph == "f" {
                assert_eq!(obj["bp"], "e", "{e}");
            }
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
    // Task tracks beside the CPU tracks: the trace's frame task and its other tasks.
    let task_tracks: Vec<&String> = threads
        .iter()
        .filter(|(k, _)| k.0 == 1 && k.1 >= TASK_TID_BASE)
        .map(|(_, v)| v)
        .collect();
    assert!(!task_tracks.is_empty());
    assert!(
        task_tracks.iter().all(|n| n.starts_with("task ")),
        "{task_tracks:?}"
    );

    let mut tracks: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut named_by_task = 0;
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(threads.contains_key(&key), "slice on an unnamed track: {e}");
        // A CPU's slices are named by the task that ran, a task's by the CPU it ran on.
        if key.1 < TASK_TID_BASE {
            assert_eq!(
                threads[&(key.0, TASK_TID_BASE + e["args"]["task"].as_u64().unwrap())],
                format!("task {}", e["name"].as_str().unwrap())
            );
            named_by_task += 1;
        } else {
            assert!(e["name"].as_str().unwrap().starts_with("cpu "), "{e}");
        }
        tracks
            .entry(key)
            .or_default()
            .push((ns(&e["ts"]), ns(&e["dur"])));
    }
    assert!(named_by_task > 0);
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
    check_flows(events, &tracks);
    check_counters(events);
    // The P-cores of hybridland's replay carry slices placed by the idle order's first step.
    assert!(text.contains("\"placed\":\"idle-p-core\""));
    assert!(text.contains("\"name\":\"power (W)\""));
    assert!(text.contains("\"name\":\"busy cpus: cluster 6 (efficiency)\""));
}

/// Every flow id has one start and one end, in time order, with the same name and category (a
/// viewer matches the ends by all three), and each end lies strictly inside a slice of its
/// own track: that slice is the one a viewer binds it to (the end says `"bp":"e"`, the
/// enclosing slice).
fn check_flows(events: &[Value], tracks: &BTreeMap<(u64, u64), Vec<(u64, u64)>>) {
    let mut flows: BTreeMap<u64, Vec<(String, u64)>> = BTreeMap::new();
    let mut names: BTreeMap<u64, (Value, Value)> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = ns(&e["ts"]);
        let inside = tracks
            .get(&key)
            .is_some_and(|slices| slices.iter().any(|(s, d)| *s < ts && ts < s + d));
        assert!(inside, "flow event bound to no slice: {e}");
        let id = e["id"].as_u64().unwrap();
        let name = (e["name"].clone(), e["cat"].clone());
        assert_eq!(
            names.entry(id).or_insert_with(|| name.clone()),
            &name,
            "flow {id}: its ends differ in name or category"
        );
        flows
            .entry(e["id"].as_u64().unwrap())
            .or_default()
            .push((e["ph"].as_str().unwrap().to_owned(), ts));
    }
    assert!(!flows.is_empty(), "no wake-up arrows");
    for (id, ends) in &flows {
        assert_eq!(ends.len(), 2, "flow {id}: {ends:?}");
        assert_eq!(
            (ends[0].0.as_str(), ends[1].0.as_str()),
            ("s", "f"),
            "flow {id}"
        );
        assert!(
            ends[0].1 < ends[1].1,
            "flow {id} goes back in time: {ends:?}"
        );
    }
}

/// A wake-up relation's arrow starts in the waker's slice: in `wake-chain.json` the decoder
/// wakes the renderer at the end of its run, the renderer the compositor. Every arrow into the
/// renderer starts in a decoder slice, into the compositor in a renderer slice; the tick
/// sends its wake-up before it runs, so the decoder's arrows start in its own runs.
#[test]
fn a_wake_up_relation_arrow_starts_in_the_wakers_slice() {
    let path = scratch("wake-chain.json");
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/wake-chain.json",
        "--policy",
        "hybridland,kernel-default",
        "--timeline",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    for e in events {
        check_event(e);
    }
    // CPU tracks' slices (start, length, task index); task names by index.
    type Slices = Vec<(u64, u64, u64)>;
    let mut slices: BTreeMap<(u64, u64), Slices> = BTreeMap::new();
    let mut tracks: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
        tracks.entry(key).or_default().push((ts, dur));
        if key.1 < TASK_TID_BASE {
            let task = e["args"]["task"].as_u64().unwrap();
            names.insert((key.0, task), e["name"].as_str().unwrap().to_owned());
            slices.entry(key).or_default().push((ts, dur, task));
        }
    }
    check_flows(events, &tracks);
    let task_at = |key: (u64, u64), ts: u64| {
        slices[&key]
            .iter()
            .find(|(s, d, _)| *s < ts && ts < s + d)
            .map(|(_, _, t)| names[&(key.0, *t)].clone())
            .unwrap()
    };
    let mut starts = BTreeMap::new();
    let mut arrows: BTreeMap<(u64, String, String), usize> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let task = task_at(key, ns(&e["ts"]));
        let id = e["id"].as_u64().unwrap();
        if e["ph"] == "s" {
            starts.insert(id, task);
            continue;
        }
        let from = starts.remove(&id).unwrap();
        // The end names the waker by index when the arrow starts at it.
        if let Some(w) = e["args"]["waker"].as_u64() {
            assert_eq!(names[&(key.0, w)], from, "{e}");
        }
        *arrows.entry((key.0, from, task)).or_default() += 1;
    }
    for policy in [1, 2] {
        let into = |to: &str| {
            arrows
                .iter()
                .filter(|((p, _, t), _)| *p == policy && t == to)
                .map(|((_, f, _), n)| (f.as_str(), *n))
                .collect::<Vec<_>>()
        };
        let renderer = into("renderer");
        assert!(
            renderer.len() == 1 && renderer[0].0 == "decoder" && renderer[0].1 > 300,
            "policy {policy}: arrows into the renderer from {renderer:?}"
        );
        let compositor = into("compositor");
        assert!(
            compositor.len() == 1 && compositor[0].0 == "renderer" && compositor[0].1 > 300,
            "policy {policy}: arrows into the compositor from {compositor:?}"
        );
        assert!(
            into("decoder").iter().all(|(f, _)| *f == "decoder"),
            "policy {policy}: {:?}",
            into("decoder")
        );
    }
}

/// No counter track (process and name) has two samples at one timestamp.
fn check_counters(events: &[Value]) {
    let mut seen = std::collections::BTreeSet::new();
    let mut samples = 0;
    for e in events.iter().filter(|e| e["ph"] == "C") {
        let key = (
            e["pid"].as_u64().unwrap(),
            e["name"].as_str().unwrap().to_owned(),
            ns(&e["ts"]),
        );
        assert!(
            seen.insert(key.clone()),
            "two samples of one counter at once: {key:?}"
        );
        samples += 1;
    }
    assert!(samples > 0);
}

/// The `placed` of every slice on the CPU tracks of a replay of `trace` under `policy`.
fn placements(name: &str, trace: &str, topology: &str, policy: &str) -> Vec<String> {
    let path = scratch(name);
    let o = hybrid_sim(&[
        "replay",
        trace,
        "--topology",
        topology,
        "--policy",
        policy,
        "--timeline",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"].as_u64().unwrap() < TASK_TID_BASE)
        .map(|e| e["args"]["placed"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_slice_says_queued_only_when_its_task_waited_in_a_queue() {
    // One task on an idle laptop never queues, under a policy with steps or without.
    for policy in ["hybridland", "spread", "kernel-default"] {
        let placed = placements(
            &format!("lone-{policy}.json"),
            "examples/traces/seed000-lone.json",
            "i7-13800h",
            policy,
        );
        assert!(!placed.is_empty());
        assert!(
            !placed.iter().any(|p| p == "queued"),
            "{policy}: {placed:?}"
        );
    }
    // 24 copies of mcf on 5 CPUs: most runs come off a queue.
    let placed = placements(
        "mcf24-spread.json",
        "examples/traces/seed002-mcf-24.json",
        "tc2",
        "spread",
    );
    let queued = placed.iter().filter(|p| *p == "queued").count();
    assert!(queued * 2 > placed.len(), "{queued} of {}", placed.len());
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
fn an_unwritable_timeline_is_an_output_error_naming_the_file() {
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed000-lone.json",
        "--timeline",
        "/nonexistent-dir/t.json",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/t.json: cannot create"));
    // A file that opens but cannot take the data: the error comes at the end, still status 3.
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed000-lone.json",
        "--timeline",
        "/dev/full",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/dev/full: cannot write"));
}
