//! A short replay of an arbitrary small trace on a preset machine under any policy: the trace
//! goes through the JSON parser and validator first (as a file would); an accepted trace
//! replays without a panic, within a bounded number of events, and twice gives the same bytes.
//!
//! The small traces (`hybridland_fuzz::small_trace`) hold up to 64 task entries, each with up
//! to past the format's 1,024 phases; one input in [`HUGE_ONE_IN`] asks for the format's
//! 200,000 tasks (and one past it with the other entries' copies), which must be refused or
//! replayed within the event bound and `-rss_limit_mb`.
//!
//! One input in [`LIMITS_ONE_IN`] instead drives the engine towards its documented limits
//!: up to 1,024 CPUs in one L2 cluster, up to 1,024 long-running tasks
//! (with the loopers, up to 128 of them cache-sensitive) beside up to 64 tasks looping up to
//! 10^9 times over runs and sleeps of a few nanoseconds, replayed for up to 250,000 events.
//! Healthy, such a replay takes under a second (a few with coverage instrumentation) and tens
//! of megabytes; under libFuzzer's `-timeout` and `-rss_limit_mb` (scripts/fuzz.sh), work that
//! grows with the cluster (defect 2) or memory that grows with events (defect 1) is a crash.
//! It runs with the fast path off (`fast_wake=off`): it looks for the engine's own per-event
//! work, and the fast path's walk has its own cost figures (BENCHMARKS.md, "Simulator").
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use hybridland_fuzz::one_in;
use hybridland_fuzz::small_trace::{SmallTrace, preset_machine, read_trace};
use hybridland_sim::trace::MAX_TASKS;
use hybridland_sim::{Knobs, Machine};
use hybridland_sim::{PolicyKind, SimOptions, Simulation, Trace, policy_by_name};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// How often an input is the limits workload, and how often a small trace asks for the
/// format's task limit: each takes about a second with coverage instrumentation, the other
/// inputs milliseconds. Chosen by a hash of the input (`one_in`), so the corpus cannot fill
/// with them: with one input in 32 chosen by a byte, the target ran about one input a second.
/// Over a campaign of 10^6 inputs, one in 1,024 is still about a thousand limits replays.
const LIMITS_ONE_IN: u64 = 1024;
const HUGE_ONE_IN: u64 = 1024;

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
struct Input {
    limits: LimitsIn,
    preset: u8,
    policy: u8,
    balance: u8,
    trace: SmallTrace,
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
    let loopers = 1 + u16::from(l.loopers % 64);
    let mut tasks = vec![json!({
        "name": "loop",
        "copies": loopers,
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
            // The loopers count towards the 128: 82 sensitive background tasks beside 64
            // sensitive loopers on 658 CPUs took 9 s on a loaded machine (past -timeout).
            "cache_sensitivity_pct": if background + loopers <= 128 { l.background_pct % 101 } else { 0 },
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
    // Every wake-up to the core: this workload looks for the engine's own per-event work;
    // a 1,024-CPU cluster with siblings at many distances would measure the walk's fallbacks.
    knobs.set("fast_wake", "off").expect("a known knob");
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

fuzz_target!(|data: &[u8]| {
    let Ok(mut input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if one_in(data, LIMITS_ONE_IN, 1) {
        replay_limits(&input.limits);
        return;
    }
    input.trace.huge = if one_in(data, HUGE_ONE_IN, 2) {
        u8::MAX
    } else {
        0
    };
    let machine = preset_machine(input.preset);
    let Some(t) = read_trace(&input.trace, &machine, MAX_TASKS) else {
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
