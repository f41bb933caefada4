//! A short replay of an arbitrary small trace on a preset machine under any policy: the trace
//! goes through the JSON parser and validator first (as a file would); an accepted trace
//! replays without a panic, within a bounded number of events, and twice gives the same bytes.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_sim::{Knobs, Machine};
use hybridland_sim::{PolicyKind, SimOptions, Simulation, Trace, policy_by_name, presets};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Events one replay may take; a trace needing more ends with an error, which is fine.
const MAX_EVENTS: u64 = 20_000;

#[derive(Debug, Arbitrary)]
enum PhaseIn {
    Run(u16),
    Sleep(u16),
    Pool(u8),
    Loop(u32, Vec<PhaseIn>),
}

#[derive(Debug, Arbitrary)]
struct FramesIn {
    period_us: u16,
    work_us: u16,
    deadline_us: Option<u16>,
    count: u8,
}

#[derive(Debug, Arbitrary)]
struct TaskIn {
    copies: u8,
    start_us: u16,
    weight: u16,
    allowed: Option<(u8, u8)>,
    util: Option<u16>,
    cache_pct: u8,
    phases: Vec<PhaseIn>,
    frames: Option<FramesIn>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    preset: u8,
    policy: u8,
    balance: u8,
    seed: u64,
    duration_us: Option<u32>,
    pools: Vec<(u8, u16)>,
    tasks: Vec<TaskIn>,
}

fn phase(p: &PhaseIn, depth: usize) -> Value {
    match p {
        PhaseIn::Run(us) => json!({ "run_ns": u64::from(*us) * 1000 }),
        PhaseIn::Sleep(us) => json!({ "sleep_ns": u64::from(*us) * 1000 }),
        PhaseIn::Pool(i) => json!({ "pool": format!("pool{}", i % 3) }),
        PhaseIn::Loop(times, body) if depth < 5 => json!({ "loop": {
            // Mostly short loops; with the top bit set, up to the format's limit of a million
            // (the replay's event bound has to stop those).
            "times": if times & 0x8000_0000 != 0 { times % 1_000_001 } else { times % 8 },
            "phases": body.iter().take(4).map(|b| phase(b, depth + 1)).collect::<Vec<_>>(),
        }}),
        PhaseIn::Loop(..) => json!({ "run_ns": 1000 }),
    }
}

/// The trace as the JSON a file would hold (built as text, so the target reads the format,
/// not the crate's structs).
fn trace_json(input: &Input, cpus: usize) -> String {
    let pools: Vec<Value> = input
        .pools
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, (chunks, us))| {
            json!({ "name": format!("pool{i}"), "chunks": chunks % 32, "chunk_ns": u64::from(*us) * 1000 })
        })
        .collect();
    let tasks: Vec<Value> = input
        .tasks
        .iter()
        .take(8)
        .enumerate()
        .map(|(i, t)| {
            let mut task = json!({
                "name": format!("t{i}"),
                "copies": t.copies % 5,
                "start_ns": u64::from(t.start_us) * 1000,
                "weight": t.weight % 10_050,
                "cache_sensitivity_pct": t.cache_pct % 110,
                "phases": t.phases.iter().take(6).map(|p| phase(p, 0)).collect::<Vec<_>>(),
            });
            if let Some((a, b)) = t.allowed {
                let lo = usize::from(a) % (cpus + 2);
                task["allowed_cpus"] = json!(format!("{lo}-{}", lo + usize::from(b % 8)));
            }
            if let Some(u) = t.util {
                task["util"] = json!(u % 1100);
            }
            if let Some(f) = &t.frames {
                let mut frames = json!({
                    "period_ns": u64::from(f.period_us) * 1000,
                    "work_ns": u64::from(f.work_us) * 1000,
                    "count": f.count % 16,
                });
                if let Some(d) = f.deadline_us {
                    frames["deadline_ns"] = json!(u64::from(d) * 1000);
                }
                task["frames"] = frames;
            }
            task
        })
        .collect();
    let mut trace =
        json!({ "version": 1, "name": "fuzz", "seed": input.seed, "pools": pools, "tasks": tasks });
    if let Some(d) = input.duration_us {
        trace["duration_ns"] = json!(u64::from(d) * 1000);
    }
    trace.to_string()
}

fn replay(machine: &Machine, trace: &Trace, policy: &str, knobs: &Knobs) -> String {
    let Ok(policy) = policy_by_name(policy, knobs) else {
        return "policy refused".into();
    };
    let options = SimOptions {
        max_events: MAX_EVENTS,
        ..SimOptions::default()
    };
    let sim = match Simulation::new(&machine.topology, &machine.model, trace, policy, options) {
        Ok(sim) => sim,
        Err(e) => return format!("refused: {e}"),
    };
    match sim.run() {
        Ok(report) => report.to_json_pretty(),
        Err(e) => format!("failed: {e}"),
    }
}

fuzz_target!(|input: Input| {
    let list = presets::list();
    let name = list[usize::from(input.preset) % list.len()].name;
    let machine = presets::lookup(name).expect("every listed preset builds");
    let text = trace_json(&input, machine.topology.nr_cpus());
    let Ok(t) = Trace::from_json_str(&text, "fuzz.json") else {
        return;
    };
    let policy = PolicyKind::ALL[usize::from(input.policy) % PolicyKind::ALL.len()].name();
    let mut knobs = Knobs::new();
    let balance = ["off", "on", "auto"][usize::from(input.balance % 3)];
    knobs.set("cluster_balance", balance).expect("a known knob");
    let first = replay(&machine, &t, policy, &knobs);
    let second = replay(&machine, &t, policy, &knobs);
    assert!(
        first == second,
        "two replays differ:\n{first}\n---\n{second}"
    );
});
