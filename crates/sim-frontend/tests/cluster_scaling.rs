//! Per-event work does not grow with the L2 cluster. Counted, not timed:
//! `summary.rate_refreshes` counts every running task whose speed the engine recomputed, which
//! the old full-cluster walk made about (running tasks in the cluster) per event.

use core::time::Duration;
use hybridland_sim::{Knobs, Machine, SimError, SimOptions, Simulation, Trace};
use hybridland_sim::{policy_by_name, replay};

fn one_cluster(cpus: u16) -> Machine {
    let toml = format!(
        "[[groups]]\nkind = \"efficiency\"\ncapacity = 1024\ncores = {cpus}\ncores_per_cluster = {cpus}\n"
    );
    Machine::from_toml_str(&toml, "one-cluster.toml").unwrap()
}

/// 200 insensitive tasks that keep 200 CPUs of the cluster busy, and 8 cache-sensitive tasks
/// that wake, run and sleep 200 times each beside them.
const BUSY_CLUSTER: &str = r#"{"version": 1, "name": "busy-cluster", "tasks": [
    {"name": "bg", "copies": 200, "phases": [{"run_ns": 50000000}]},
    {"name": "loop", "copies": 8, "start_ns": 1000, "cache_sensitivity_pct": 60,
     "phases": [{"loop": {"times": 200, "phases": [{"run_ns": 20000}, {"sleep_ns": 20000}]}}]}
]}"#;

#[test]
fn re_rating_per_event_is_bounded_by_sensitive_co_runners_not_cluster_size() {
    let trace = Trace::from_json_str(BUSY_CLUSTER, "busy-cluster.json").unwrap();
    let mut per_size = Vec::new();
    for cpus in [256, 1024] {
        let r = replay(&one_cluster(cpus), &trace, "hybridland", &Knobs::new()).unwrap();
        let s = &r.summary;
        assert_eq!(s.tasks_finished, 208);
        // An event re-rates its own CPU and at most the 8 sensitive loopers; the full walk
        // re-rated all ~200 running tasks.
        assert!(
            s.rate_refreshes <= 10 * s.events,
            "{cpus} CPUs: {} re-ratings for {} events",
            s.rate_refreshes,
            s.events
        );
        per_size.push((s.events, s.rate_refreshes));
    }
    assert_eq!(per_size[0], per_size[1], "same work on a 4x larger cluster");
}

#[test]
fn insensitive_arrivals_re_rate_only_themselves() {
    let trace = Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "bg", "copies": 100, "phases": [{"run_ns": 1000000}]}]}"#,
        "insensitive.json",
    )
    .unwrap();
    let r = replay(&one_cluster(128), &trace, "hybridland", &Knobs::new()).unwrap();
    // One re-rating as each task starts; stopping re-rates nobody (no sibling, no contention).
    assert_eq!(r.summary.rate_refreshes, 100);
}

#[test]
fn wall_time_limit_stops_a_replay_with_an_error_naming_it() {
    let machine = one_cluster(64);
    let trace = Trace::from_json_str(BUSY_CLUSTER, "busy-cluster.json").unwrap();
    let options = SimOptions {
        max_wall: Some(Duration::ZERO),
        ..SimOptions::default()
    };
    let policy = policy_by_name("hybridland", &Knobs::new()).unwrap();
    let sim = Simulation::new(&machine.topology, &machine.model, &trace, policy, options).unwrap();
    let err = sim.run().unwrap_err();
    assert!(
        matches!(err, SimError::WallTimeExceeded { events: 4_096, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("busy-cluster") && text.contains("wall-time limit of 0 s"),
        "{text}"
    );
}
