//! A replay's memory grows with its tasks and CPUs, never with its events: re-armed slice-end and completion timers replace their pending event instead of
//! piling up in the event queue until their due time.

mod util;

use hybridland_sim::event_queue::COMPACT_MIN;
use hybridland_sim::{Knobs, Report, Trace, replay};
use util::machine_of;

/// What the event queue may hold: per task one arrival or wake-up, per CPU one completion and
/// one slice end, one balance tick; dead entries at most as many again, plus the slack below
/// which the queue is not worth compacting.
fn queue_bound(tasks: usize, cpus: usize) -> u64 {
    (2 * (tasks + 2 * cpus + 1) + COMPACT_MIN) as u64
}

fn check_bounded(report: &Report, cpus: usize) {
    let tasks = report.summary.tasks;
    assert_eq!(report.summary.tasks_finished, tasks);
    let bound = queue_bound(tasks, cpus);
    assert!(
        report.summary.peak_queued_events <= bound,
        "the event queue held {} entries over {} events; tasks and CPUs allow {bound}",
        report.summary.peak_queued_events,
        report.summary.events
    );
}

#[test]
fn superseded_slice_ends_do_not_pile_up() {
    // Every 1 ns run starts a 5 ms slice that the 1 ns sleep cuts short: 320,000 slice ends
    // armed and superseded, none of them due before the replay ends.
    let trace = Trace::from_json_str(
        r#"{"version": 1, "machine": "rpl-desktop", "tasks": [{"name": "t", "copies": 16,
            "phases": [{"loop": {"times": 20000, "phases": [{"run_ns": 1}, {"sleep_ns": 1}]}}]}]}"#,
        "tiny-runs.json",
    )
    .unwrap();
    let machine = machine_of(&trace);
    let cpus = machine.topology.cpus().count();
    for policy in ["hybridland", "spread"] {
        let report = replay(&machine, &trace, policy, &Knobs::new()).unwrap();
        assert!(
            report.summary.events >= 640_000,
            "{}",
            report.summary.events
        );
        check_bounded(&report, cpus);
    }
}

#[test]
fn re_rated_completions_do_not_pile_up() {
    // Cache-sensitive neighbours that start and stop every microsecond change the speed of the
    // long runs in their L2 clusters: the long runs' completions are re-issued about half a
    // million times in all, each due up to 0.2 s ahead.
    let trace = Trace::from_json_str(
        r#"{"version": 1, "machine": "atom24", "tasks": [
            {"name": "long", "copies": 18, "cache_sensitivity_pct": 100,
             "phases": [{"run_ns": 200000000}]},
            {"name": "flip", "copies": 6, "cache_sensitivity_pct": 100,
             "phases": [{"loop": {"times": 20000,
                 "phases": [{"run_ns": 1000}, {"sleep_ns": 1000}]}}]}]}"#,
        "re-rated.json",
    )
    .unwrap();
    let machine = machine_of(&trace);
    let cpus = machine.topology.cpus().count();
    let report = replay(&machine, &trace, "hybridland", &Knobs::new()).unwrap();
    assert!(
        report.summary.events >= 200_000,
        "{}",
        report.summary.events
    );
    check_bounded(&report, cpus);
}
