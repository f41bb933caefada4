//! A policy written outside the crate plugs into the engine through `SimPolicy`, and the
//! engine refuses answers that break its contract.

mod util;

use hybridland_policy::CpuId;
use hybridland_sim::{Destination, SimError, Trace};
use util::plain_policy::{lowest_idle, plain_policy, replay_plain};

fn two_tasks() -> Trace {
    Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "w", "copies": 7, "phases": [{"run_ns": 20000000}]}]}"#,
        "two.json",
    )
    .unwrap()
}

#[test]
fn an_outside_policy_runs_a_replay() {
    let policy = plain_policy("lowest-idle", lowest_idle);
    let report = replay_plain("tc2", &two_tasks(), policy).unwrap();
    assert_eq!(report.policy, "lowest-idle");
    assert_eq!(report.summary.tasks_finished, 7);
    // 7 tasks on 5 CPUs: two waited in the shared queue.
    assert!(report.wake_latency.max_ns > 0);
}

#[test]
fn a_busy_cpu_answer_is_an_error_not_a_corrupt_replay() {
    // Always CPU 0, busy or not.
    let policy = plain_policy("always-zero", |_, _| Destination::Run(CpuId(0)));
    let e = replay_plain("tc2", &two_tasks(), policy).unwrap_err();
    assert!(
        matches!(
            e,
            SimError::InvalidDecision {
                task: 1,
                reason: "CPU is busy",
                ..
            }
        ),
        "{e:?}"
    );
}
