//! The trace's wake-up relation in a replay: a `wait_for` blocks until its waker's program
//! reaches the matching `wake`, so a chain stays a chain; the woken task's placement sees the
//! waker's CPU; `wake` is kept for a later wait, `wake_if_waiting` is lost; a chain that can
//! never go on is an error naming the task.

mod util;

use core::cell::RefCell;
use hybridland_policy::CpuId;
use hybridland_sim::{Reason, SimError, Trace};
use std::rc::Rc;
use util::plain_policy::{lowest_idle, plain_policy, replay_plain};

/// Each wake-up's task and the waker CPU its placement was given.
type Seen = Vec<(usize, Option<CpuId>)>;

fn replay(text: &str) -> (Result<hybridland_sim::Report, SimError>, Seen) {
    let trace = Trace::from_json_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"));
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = Rc::clone(&seen);
    // Lowest idle allowed CPU; remembers each wake-up's task and waker CPU.
    let policy = plain_policy("recording", move |m, t| {
        if t.reason == Reason::Wakeup {
            log.borrow_mut().push((t.id, t.waker_cpu));
        }
        lowest_idle(m, t)
    });
    let report = replay_plain("tc2", &trace, policy);
    let seen = seen.borrow().clone();
    (report, seen)
}

/// p (CPU 0) runs 1 ms, wakes c, sleeps 10 ms, three times; c (CPU 1) waits for p and runs
/// 2 ms each time. c runs only after each of p's wake-ups, each wake-up onto an idle A15
/// 12 us later (2 us interrupt, 10 us idle exit): p's runs end at 1, 12.012 and 23.024 ms,
/// so c ends at 23.024 + 0.012 + 2 = 25.036 ms. Every placement of c is a wake-up by p, and
/// sees p's CPU.
#[test]
fn a_wait_blocks_until_the_waker_gets_there_and_placement_sees_its_cpu() {
    let (report, seen) = replay(
        r#"{"version": 2, "tasks": [
        {"name": "p", "allowed_cpus": "0", "phases": [{"loop": {"times": 3, "phases": [
            {"run_ns": 1000000}, {"wake": "c"}, {"sleep_ns": 10000000}]}}]},
        {"name": "c", "allowed_cpus": "1", "phases": [{"loop": {"times": 3, "phases": [
            {"wait_for": ["p"]}, {"run_ns": 2000000}]}}]}]}"#,
    );
    let report = report.unwrap();
    let c = report.task("c").unwrap();
    assert_eq!(c.finish_ns, Some(25_036_000));
    assert_eq!(c.ran_performance_ns, 6_000_000);
    assert_eq!(report.task("p").unwrap().finish_ns, Some(33_024_000));
    let c_wakeups: Vec<Option<CpuId>> = seen
        .iter()
        .filter(|(t, _)| *t == 1)
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(c_wakeups, [Some(CpuId(0)); 3]);
    // p's own wake-ups (its arrival and the ends of its sleeps) have no waker.
    assert!(
        seen.iter()
            .filter(|(t, _)| *t == 0)
            .all(|(_, w)| w.is_none())
    );
}

/// A `wake` sent before the wait is kept: b's wait takes it and b runs on. The same wake-up as
/// `wake_if_waiting` is lost (rt-app's condition variable): b waits for good, an error that
/// names it and whom it waits for.
#[test]
fn a_kept_wake_answers_a_later_wait_and_a_lost_one_blocks() {
    let trace = |wake: &str| {
        format!(
            r#"{{"version": 2, "tasks": [
            {{"name": "a", "phases": [{{"{wake}": "b"}}, {{"run_ns": 1000000}}]}},
            {{"name": "b", "phases": [{{"run_ns": 2000000}}, {{"wait_for": ["a"]}}, {{"run_ns": 1000000}}]}}]}}"#
        )
    };
    let (report, _) = replay(&trace("wake"));
    assert_eq!(
        report.unwrap().task("b").unwrap().finish_ns,
        Some(3_000_000)
    );
    let (report, _) = replay(&trace("wake_if_waiting"));
    let e = report.unwrap_err();
    assert!(
        matches!(&e, SimError::Blocked { task, waits_for, blocked: 1, now_ns: 2_000_000, .. }
            if task == "b" && waits_for == "a"),
        "{e:?}"
    );
    assert!(e.to_string().contains("`b` waits for a"), "{e}");
}

/// With a horizon, tasks blocked at the end are reported unfinished and the replay runs to
/// the horizon.
#[test]
fn blocked_tasks_run_out_the_horizon() {
    let (report, _) = replay(
        r#"{"version": 2, "duration_ns": 50000000, "tasks": [
        {"name": "a", "phases": [{"run_ns": 1000000}]},
        {"name": "b", "phases": [{"wait_for": ["a"]}, {"run_ns": 1000000}]}]}"#,
    );
    let report = report.unwrap();
    assert_eq!(report.summary.makespan_ns, 50_000_000);
    assert_eq!(report.task("b").unwrap().finish_ns, None);
}
