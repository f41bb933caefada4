//! A small arbitrary trace, written as the JSON a file would hold, for the targets that replay
//! one (`replay`, `timeline`, `compare`).

use arbitrary::Arbitrary;
use hybridland_sim::trace::{MAX_PHASES, MAX_POOLS};
use hybridland_sim::{Machine, Trace, presets};
use serde_json::{Value, json};

/// Task entries taken from one input.
pub const MAX_TRACE_TASKS: usize = 64;

/// Top-level phases taken per task: past the format's [`MAX_PHASES`], so its refusal is
/// reached.
pub const MAX_TASK_PHASES: usize = MAX_PHASES + 1;

#[derive(Debug, Arbitrary)]
pub enum PhaseIn {
    Run(u16),
    Sleep(u16),
    Pool(u8),
    Loop(u32, Vec<PhaseIn>),
}

#[derive(Debug, Arbitrary)]
pub struct FramesIn {
    period_us: u16,
    work_us: u16,
    deadline_us: Option<u16>,
    count: u8,
}

#[derive(Debug, Arbitrary)]
pub struct TaskIn {
    copies: u8,
    start_us: u16,
    weight: u16,
    allowed: Option<(u8, u8)>,
    util: Option<u16>,
    cache_pct: u8,
    phases: Vec<PhaseIn>,
    frames: Option<FramesIn>,
}

/// A trace of up to [`MAX_TRACE_TASKS`] task entries (one of them may ask for the format's
/// `MAX_TASKS` copies) and [`MAX_POOLS`] pools.
#[derive(Debug, Arbitrary)]
pub struct SmallTrace {
    /// 255: the first task asks for the most copies the target allows (one input in 256: such
    /// a replay takes a second where the others take milliseconds; `replay` sets it from a
    /// hash of the input instead, see `one_in`).
    pub huge: u8,
    pub seed: u64,
    pub duration_us: Option<u32>,
    pub pools: Vec<(u8, u16)>,
    pub tasks: Vec<TaskIn>,
}

fn phase(p: &PhaseIn, pools: usize, depth: usize) -> Value {
    match p {
        PhaseIn::Run(us) => json!({ "run_ns": u64::from(*us) * 1000 }),
        PhaseIn::Sleep(us) => json!({ "sleep_ns": u64::from(*us) * 1000 }),
        PhaseIn::Pool(i) => json!({ "pool": format!("pool{}", usize::from(*i) % pools.max(1)) }),
        PhaseIn::Loop(times, body) if depth < 5 => json!({ "loop": {
            // Mostly short loops; with the top bit set, up to the format's limit of a million
            // (the replay's event bound has to stop those).
            "times": if times & 0x8000_0000 != 0 { times % 1_000_001 } else { times % 8 },
            "phases": body.iter().take(4).map(|b| phase(b, pools, depth + 1)).collect::<Vec<_>>(),
        }}),
        PhaseIn::Loop(..) => json!({ "run_ns": 1000 }),
    }
}

/// The trace as the JSON a file would hold (built as text, so the target reads the format,
/// not the crate's structs).
/// `max_copies` caps the copies one task entry may ask for (`MAX_TASKS` lets the format's
/// limit be reached; the targets that replay only to look at the output take fewer).
pub fn trace_json(input: &SmallTrace, cpus: usize, max_copies: usize) -> String {
    let pools: Vec<Value> = input
        .pools
        .iter()
        .take(MAX_POOLS + 1)
        .enumerate()
        .map(|(i, (chunks, us))| {
            json!({ "name": format!("pool{i}"), "chunks": chunks % 32, "chunk_ns": u64::from(*us) * 1000 })
        })
        .collect();
    let tasks: Vec<Value> = input
        .tasks
        .iter()
        .take(MAX_TRACE_TASKS)
        .enumerate()
        .map(|(i, t)| {
            // Mostly a few copies; `huge` asks for `max_copies` (the format's limit in the
            // replay target, and one past it with the other tasks' copies).
            let copies = if i == 0 && input.huge == u8::MAX {
                max_copies
            } else {
                usize::from(t.copies % 5)
            };
            let mut task = json!({
                "name": format!("t{i}"),
                "copies": copies,
                "start_ns": u64::from(t.start_us) * 1000,
                "weight": t.weight % 10_050,
                "cache_sensitivity_pct": t.cache_pct % 110,
                "phases": t.phases.iter().take(MAX_TASK_PHASES).map(|p| phase(p, pools.len(), 0)).collect::<Vec<_>>(),
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

/// The bundled preset `preset` picks (modulo the list).
pub fn preset_machine(preset: u8) -> Machine {
    let list = presets::list();
    let name = list[usize::from(preset) % list.len()].name;
    presets::lookup(name).expect("every listed preset builds")
}

/// `input` written for `machine`'s CPUs (as [`trace_json`]) and read back as `fuzz.json`; `None`
/// when the format refuses it.
pub fn read_trace(input: &SmallTrace, machine: &Machine, max_copies: usize) -> Option<Trace> {
    let text = trace_json(input, machine.topology.nr_cpus(), max_copies);
    Trace::from_json_str(&text, "fuzz.json").ok()
}
