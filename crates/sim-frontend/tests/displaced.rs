//! A task stopped for a task already given its CPU (here, per-CPU kernel work taking the one
//! CPU it may use) is told that nobody waits for the CPU, as the live framework's snapshot
//! tells the core: the work runs first anyway, and the stopped task stays unless a strictly
//! better CPU is idle. Told that its CPU was wanted, every CPU-bound task preempted by a
//! 20 us worker moved to whatever CPU idled, the hogs drifted onto the P-cores' free SMT
//! siblings, and the frame task, which fits an E-core, went to the E-cores they left (a
//! quarter of its work on P-cores and 1,478 migrations in an 8 s replay; none without the
//! workers).

use hybridland_policy::CoreKind;
use hybridland_sim::{
    DecisionRecord, Destination, Knobs, Reason, SimOptions, Trace, load_topology_file,
    replay_observed,
};

/// A 30 fps frame task (10 ms of work a frame), 6 CPU hogs, and on each CPU a kernel worker
/// pinned there that runs 20 us every 50 ms.
fn frame_beside_hogs_and_workers() -> String {
    let hogs = r#"{"name": "hog", "copies": 6, "phases": [{"run_ns": 4000000000}]}"#;
    let workers: Vec<String> = (0..8)
        .map(|cpu| {
            format!(
                r#"{{"name": "kworker/{cpu}", "allowed_cpus": "{cpu}", "phases": [
                    {{"sleep_ns": {}}},
                    {{"loop": {{"times": 80, "phases": [{{"run_ns": 20000}}, {{"sleep_ns": 50000000}}]}}}}]}}"#,
                (cpu + 1) * 3_000_000
            )
        })
        .collect();
    format!(
        r#"{{"version": 1, "name": "frame-workers", "duration_ns": 4000000000, "tasks": [
            {{"name": "frame", "frames": {{"period_ns": 33333333, "work_ns": 10000000, "count": 120}}}},
            {hogs}, {}]}}"#,
        workers.join(", ")
    )
}

#[test]
fn per_cpu_work_moves_no_task_and_the_frame_stays_on_p_cores() {
    // The project's VM: E-cores 0-3 in two clusters, P-cores 4-5 and 6-7 with SMT.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let machine = load_topology_file(&root.join("scripts/vm/topology-2p-smt-4e.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let trace = Trace::from_json_str(&frame_beside_hogs_and_workers(), "frame.json").unwrap();
    let (mut on_p, mut on_e, mut displaced) = (0, 0, 0);
    let mut observer = |r: &DecisionRecord<'_>| {
        if r.reason == Reason::Displaced {
            displaced += 1;
        }
        if r.task_name != "frame" {
            return;
        }
        if let Destination::Run(cpu) | Destination::QueueOn(cpu) = r.decision.target {
            match r.topo.info(cpu).map(|i| i.kind) {
                Some(CoreKind::Performance) => on_p += 1,
                _ => on_e += 1,
            }
        }
    };
    let report = replay_observed(
        &machine,
        &trace,
        "hybridland",
        &Knobs::new(),
        &SimOptions::default(),
        &mut observer,
    )
    .unwrap();
    assert!(
        displaced > 50,
        "the workers stopped the hogs {displaced} times"
    );
    assert_eq!(
        on_e, 0,
        "frame placements: {on_p} on P-cores, {on_e} elsewhere"
    );
    assert!(on_p >= 100, "{on_p} frame placements");
    assert!(
        report.summary.migrations <= 6,
        "{} migrations",
        report.summary.migrations
    );
}
