//! `docs/trace.schema.json` names exactly the fields the parser accepts, so the written schema
//! cannot drift from the code.

use hybridland_sim::Trace;
use hybridland_sim::trace::{FrameSpec, LoopSpec, Phase, PoolSpec, TRACE_VERSION, TaskSpec};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn schema() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/trace.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// A trace with every optional field set, so serialising it shows every field name.
fn everything() -> Trace {
    Trace {
        version: TRACE_VERSION,
        name: Some("n".into()),
        description: Some("d".into()),
        machine: Some("tc2".into()),
        seed: 1,
        duration_ns: Some(1),
        pools: vec![PoolSpec {
            name: "p".into(),
            chunks: 1,
            chunk_ns: 1,
        }],
        tasks: vec![TaskSpec {
            name: "t".into(),
            copies: 1,
            start_ns: 0,
            weight: 100,
            allowed_cpus: Some("0".into()),
            util: Some(1),
            cache_sensitivity_pct: 1,
            phases: vec![
                Phase::RunNs(1),
                Phase::SleepNs(1),
                Phase::Pool("p".into()),
                Phase::Loop(LoopSpec {
                    times: 1,
                    phases: vec![Phase::RunNs(1)],
                }),
                Phase::Wake("t".into()),
                Phase::WakeIfWaiting("t".into()),
                Phase::WaitFor(vec!["t".into()]),
            ],
            frames: Some(FrameSpec {
                period_ns: 1,
                work_ns: 1,
                deadline_ns: Some(1),
                count: 1,
            }),
        }],
    }
}

#[test]
fn schema_and_parser_agree_on_every_field() {
    let s = schema();
    let defs = &s["$defs"];
    let t = serde_json::to_value(everything()).unwrap();
    assert_eq!(keys(&s["properties"]), keys(&t), "top level");
    assert_eq!(
        keys(&defs["task"]["properties"]),
        keys(&t["tasks"][0]),
        "task"
    );
    assert_eq!(
        keys(&defs["pool"]["properties"]),
        keys(&t["pools"][0]),
        "pool"
    );
    assert_eq!(
        keys(&defs["frames"]["properties"]),
        keys(&t["tasks"][0]["frames"]),
        "frames"
    );
    let phase_keys: BTreeSet<String> = t["tasks"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(keys)
        .collect();
    assert_eq!(keys(&defs["phase"]["properties"]), phase_keys, "phases");
    assert_eq!(
        keys(&defs["phase"]["properties"]["loop"]["properties"]),
        keys(&t["tasks"][0]["phases"][3]["loop"]),
        "loop"
    );
    assert_eq!(
        s["properties"]["version"]["enum"],
        serde_json::json!([1, TRACE_VERSION])
    );
}
