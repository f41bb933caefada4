//! A policy keeps a value per task in the scheduler core's record of it, read and written
//! through the `View`: kept across wake-ups, and from 0 again for a task that gets an ended
//! task's id (the simulator reuses ids as the kernel reuses pids).

mod util;

use hybridland_policy::{
    CustomPolicy, KnobValues, Placement, PlacementPolicy, TaskKey, Topology, View,
};
use hybridland_sim::Trace;
use hybridland_sim::core_policy::CoreDriven;
use std::sync::Mutex;
use util::plain_policy::replay_plain;

/// What each wake-up saw: the task and its value.
static SEEN: Mutex<Vec<(TaskKey, u64)>> = Mutex::new(Vec::new());

/// Counts each task's wake-ups in its value; places on the lowest idle CPU.
struct CountWakeups;

impl PlacementPolicy for CountWakeups {
    fn name(&self) -> &str {
        "count-wakeups"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        SEEN.lock().unwrap().push((view.task(), view.task_value()));
        view.set_task_value(view.task_value() + 1);
        view.place_on(view.idle_allowed().first())
    }
}

fn build(_: &Topology, _: u64, _: &KnobValues) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(CountWakeups))
}

const POLICY: CustomPolicy = CustomPolicy {
    name: "count-wakeups",
    description: "counts each task's wake-ups in its own value",
    knobs: &[],
    build,
};

#[test]
fn a_value_is_kept_across_wake_ups_and_a_reused_id_starts_from_zero() {
    // `first` wakes five times and ends by 30 ms; `second` starts at 50 ms and takes its id.
    let trace = Trace::from_json_str(
        r#"{"version": 1, "tasks": [
            {"name": "first", "phases": [{"loop": {"times": 5, "phases": [{"run_ns": 1000000}, {"sleep_ns": 4000000}]}}]},
            {"name": "second", "start_ns": 50000000, "phases": [{"loop": {"times": 3, "phases": [{"run_ns": 1000000}, {"sleep_ns": 4000000}]}}]}
        ]}"#,
        "reuse.json",
    )
    .unwrap();
    // The engine wakes a task for its start and after each sleep but its last (it ends
    // there): five wake-ups of the first, three of the second.
    let report = replay_plain("tc2", &trace, Box::new(CoreDriven::custom(POLICY))).unwrap();
    assert_eq!(report.summary.tasks_finished, 2);
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen.len(), 8, "{seen:?}");
    let first: Vec<u64> = seen[..5].iter().map(|s| s.1).collect();
    assert_eq!(first, [0, 1, 2, 3, 4], "{seen:?}");
    let (key_a, key_b) = (seen[0].0, seen[5].0);
    assert_eq!(
        key_a.id, key_b.id,
        "the second task got the first one's id: {seen:?}"
    );
    assert_ne!(key_a.generation, key_b.generation, "a new task");
    let second: Vec<u64> = seen[5..].iter().map(|s| s.1).collect();
    assert_eq!(second, [0, 1, 2], "{seen:?}");
    assert!(seen[..5].iter().all(|s| s.0 == key_a) && seen[5..].iter().all(|s| s.0 == key_b));
}
