//! A short replay of an arbitrary small trace on a preset machine under any policy: the trace
//! goes through the JSON parser and validator first (as a file would); an accepted trace
//! replays without a panic, within a bounded number of events, and twice gives the same bytes.
//!
//! One input in eight instead drives the engine towards its documented limits (issue 13,
//! defect 6): up to 1,024 CPUs in one L2 cluster, up to 1,024 long-running tasks (up to 128 of
//! them cache-sensitive) beside up to 64 tasks looping up to 10^9 times over runs and sleeps of
//! a few nanoseconds, replayed for up to 250,000 events. Healthy, such a replay takes under a
//! second (a few with coverage instrumentation) and tens of megabytes; under libFuzzer's
//! `-timeout` and `-rss_limit_mb` (scripts/fuzz.sh), work that grows with the cluster
//! (defect 2) or memory that grows with events (defect 1) is a crash.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_sim::{Knobs, Machine};
use hybridland_sim::{PolicyKind, SimOptions, Simulation, Trace, policy_by_name, presets};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Events one replay may take; a trace needing more ends with an error, which is fine.
const MAX_EVENTS: u64 = 20_000;

/// Events a replay near the limits may take: enough for per-event work that grows with the
/// cluster to pass `-timeout`, or memory that grows with events to pass `-rss_limit_mb`.
const LIMITS_MAX_EVENTS: u64 = 250_000;

/// A workload at the engine's limits on a machine that is one big L2 cluster.
#[derive(Debug, Arbitrary)]
struct LimitsIn {
    /// CPUs in the one cluster: 1..=1024, mostly large.
    cpus: u16,
    /// SMT threads per core: 1 or 2.
    smt: bool,
    /// Long-running tasks that keep CPUs of the cluster busy: 0..=1024 (cache-sensitive only up
    /// to 128 of them).
    background: u16,
    background_pct: u8,
    /// Tasks looping over tiny runs and sleeps: 1..=64.
    loopers: u8,
    looper_pct: u8,
    /// Outer and inner repetitions: up to 10^6 x 10^3.
    times: u32,
    inner: u16,
    run_ns: u8,
    sleep_ns: u8,
    slice_us: Option<u8>,
}

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
    /// 0-223: a small trace on a preset; 224-255: the limits workload (one input in eight:
    /// it takes up to a second or two, the small ones milliseconds).
    shape: u8,
    limits: LimitsIn,
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

/// One L2 cluster of `l.cpus` CPUs (as a topology file would describe it).
fn one_cluster(l: &LimitsIn) -> Option<Machine> {
    let smt: u16 = if l.smt { 2 } else { 1 };
    let cpus = 1 + l.cpus % 1024;
    let cores = (cpus / smt).max(1);
    let toml = format!(
        "[[groups]]\nkind = \"efficiency\"\ncapacity = 1024\ncores = {cores}\nsmt = {smt}\ncores_per_cluster = {cores}\n"
    );
    Machine::from_toml_str(&toml, "one-cluster.toml").ok()
}

fn limits_json(l: &LimitsIn) -> String {
    let mut tasks = vec![json!({
        "name": "loop",
        "copies": 1 + l.loopers % 64,
        "cache_sensitivity_pct": l.looper_pct % 101,
        "phases": [{ "loop": { "times": 1 + l.times % 1_000_000, "phases": [{ "loop": {
            "times": 1 + l.inner % 1_000,
            "phases": [
                { "run_ns": 1 + u64::from(l.run_ns) },
                { "sleep_ns": 1 + u64::from(l.sleep_ns) },
            ],
        }}]}}],
    })];
    let background = l.background % 1025;
    if background > 0 {
        tasks.push(json!({
            "name": "background",
            "copies": background,
            // Insensitive beyond 128 copies: each event of a sensitive task re-rates every
            // sensitive task running in its cluster, which the model needs (their completion
            // times all move); 1,024 of them over a million events would be minutes of
            // legitimate work, not a defect.
            "cache_sensitivity_pct": if background <= 128 { l.background_pct % 101 } else { 0 },
            "phases": [{ "run_ns": 10_000_000_000u64 }],
        }));
    }
    // A horizon (the format's longest) so the static limit check, which a horizon excuses,
    // lets the loops run into the event limit at run time.
    json!({ "version": 1, "name": "limits", "duration_ns": 100_000_000_000_000u64, "tasks": tasks })
        .to_string()
}

/// The limits workload: one replay (it is the slow part of this target), which must stay
/// within the memory bound the report documents.
fn replay_limits(l: &LimitsIn) {
    let Some(machine) = one_cluster(l) else {
        return;
    };
    let Ok(trace) = Trace::from_json_str(&limits_json(l), "limits.json") else {
        return;
    };
    let mut knobs = Knobs::new();
    if let Some(us) = l.slice_us {
        knobs
            .set("slice_us", &(1 + u32::from(us)).to_string())
            .expect("a known knob");
    }
    let Ok(options) = knobs.sim_options(&SimOptions {
        max_events: LIMITS_MAX_EVENTS,
        ..SimOptions::default()
    }) else {
        return;
    };
    let policy = policy_by_name("hybridland", &knobs).expect("hybridland builds");
    let sim = Simulation::new(&machine.topology, &machine.model, &trace, policy, options)
        .expect("the limits workload fits its machine");
    if let Ok(report) = sim.run() {
        // docs/machine-model.md: twice the live events (a wake-up per task, two timers per
        // CPU, one tick) plus 64.
        let cpus = machine.topology.nr_cpus() as u64;
        let bound = 2 * (report.summary.tasks as u64 + 2 * cpus + 1) + 64;
        assert!(
            report.summary.peak_queued_events <= bound,
            "event queue held {} entries, more than {bound}",
            report.summary.peak_queued_events
        );
    }
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
    if input.shape >= 224 {
        replay_limits(&input.limits);
        return;
    }
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
