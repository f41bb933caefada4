//! The simulator: events per second over a large replay, and trace parsing in bytes per
//! second. See BENCHMARKS.md.
#![allow(missing_docs)] // criterion_main! generates an undocumented `main`.

use core::hint::black_box;
use core::time::Duration;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hybridland_benches::{
    SIM_PRESET, busy_cluster_trace_json, large_trace_json, single_cluster_machine,
};
use hybridland_sim::{Knobs, Machine, Trace, presets, replay};

/// 20,000 tasks (200 entries x 100 copies), 4 run/sleep rounds each, on 32 CPUs.
fn replay_rate(c: &mut Criterion) {
    let machine = presets::lookup(SIM_PRESET).expect("the preset exists");
    let text = large_trace_json(200, 100, 4);
    bench_replay(c, "replay-20k-tasks", &text, &machine, 8);
}

/// 1024 CPUs in one L2 cluster, 900 of them kept busy by insensitive tasks, beside 64 looping
/// tasks (16 entries x 4 copies, cache sensitivities 0 to 96%) of 100 run/sleep rounds each:
/// per-event work must not grow with the cluster (the full-cluster walk
/// ran this at about 1,000 events/s). Compare its events/s with `replay-20k-tasks`.
fn replay_rate_one_cluster(c: &mut Criterion) {
    let text = busy_cluster_trace_json(900, 16, 4, 100);
    bench_replay(
        c,
        "replay-one-cluster-1024",
        &text,
        &single_cluster_machine(1024),
        4,
    );
}

/// A replay of the trace `text` on `machine` under hybridland with default knobs, as
/// `sim/NAME/N-events` (its throughput the replay's events), ten samples over `secs` seconds.
fn bench_replay(c: &mut Criterion, name: &str, text: &str, machine: &Machine, secs: u64) {
    let trace = Trace::from_json_str(text, "bench.json").expect("the fixture parses");
    let knobs = Knobs::new();
    let events = replay(machine, &trace, "hybridland", &knobs)
        .expect("replays")
        .summary
        .events;
    let mut group = c.benchmark_group("sim");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(secs));
    group.throughput(Throughput::Elements(events));
    group.bench_function(format!("{name}/{events}-events"), |b| {
        b.iter(|| black_box(replay(machine, black_box(&trace), "hybridland", &knobs)))
    });
    group.finish();
}

/// A 2,000-entry trace of a few hundred kilobytes, parsed and validated.
fn parse_rate(c: &mut Criterion) {
    let text = large_trace_json(2000, 10, 4);
    let mut group = c.benchmark_group("trace");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(format!("parse/{}-bytes", text.len()), |b| {
        b.iter(|| black_box(Trace::from_json_str(black_box(&text), "large.json")))
    });
    group.finish();
}

criterion_group! {
    name = sim;
    config = Criterion::default().warm_up_time(Duration::from_millis(500));
    targets = replay_rate, replay_rate_one_cluster, parse_rate
}
criterion_main!(sim);
