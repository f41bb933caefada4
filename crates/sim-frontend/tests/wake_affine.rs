//! Wake-affine in a replay: a wake-up whose waker blocks, sleeps or ends right after its wake
//! step is synchronous, and hybridland puts the woken task on the waker's CPU (the idle order's
//! `waker-cpu` step), so a ping-pong pair takes turns on one CPU instead of waking an idle one
//! each time; `wake_affine=off` and a waker that runs on after the wake-up do not.

mod util;

use hybridland_sim::{Report, Trace};

/// `pairs` ping-pong pairs on the i7-13800H, each hand-over after 20 us of work, 500 round
/// trips; the waker runs `after_ns` more after its wake step before it waits (0: none).
fn ping_pong(pairs: usize, after_ns: u64) -> String {
    let after = if after_ns > 0 {
        format!(r#", {{"run_ns": {after_ns}}}"#)
    } else {
        String::new()
    };
    let tasks: Vec<String> = (0..pairs)
        .flat_map(|i| {
            [
                format!(
                    r#"{{"name": "a{i}", "phases": [{{"loop": {{"times": 500, "phases": [
                        {{"run_ns": 20000}}, {{"wake": "b{i}"}}{after}, {{"wait_for": ["b{i}"]}}]}}}}]}}"#
                ),
                format!(
                    r#"{{"name": "b{i}", "phases": [{{"loop": {{"times": 500, "phases": [
                        {{"wait_for": ["a{i}"]}}, {{"run_ns": 20000}}, {{"wake": "a{i}"}}{after}]}}}}]}}"#
                ),
            ]
        })
        .collect();
    format!(
        r#"{{"version": 2, "name": "ping-pong", "machine": "i7-13800h", "tasks": [{}]}}"#,
        tasks.join(",")
    )
}

/// `trace` replayed under hybridland with `knobs`, every decision checked by the testkit (the
/// wake-affine rule's among them).
fn replay(trace: &str, knobs: &[&str]) -> Report {
    let trace = Trace::from_json_str(trace, "ping-pong.json").unwrap();
    util::replay(&trace, "hybridland", knobs, None)
}

fn step(report: &Report, name: &str) -> u64 {
    report
        .steps
        .iter()
        .find(|s| s.step == name)
        .map_or(0, |s| s.count)
}

/// Four pairs: every hand-over but each pair's first goes to the waker's CPU, and no task
/// migrates; without the rule, the idle order sends each woken task to an idle P-core and
/// tasks move.
#[test]
fn a_ping_pong_pair_takes_turns_on_the_wakers_cpu() {
    let trace = ping_pong(4, 0);
    let on = replay(&trace, &[]);
    // 4 pairs x 500 round trips x 2 hand-overs, less each pair's first placement of b.
    assert!(step(&on, "waker-cpu") >= 3_990, "{:?}", on.steps);
    assert_eq!(on.summary.migrations, 0, "{:?}", on.steps);
    let off = replay(&trace, &["wake_affine=off"]);
    assert_eq!(step(&off, "waker-cpu"), 0, "{:?}", off.steps);
    assert!(off.summary.migrations > 0, "{:?}", off.steps);
}

/// A waker that works on for 1 ms after its wake step is still on its CPU when the woken task
/// is placed: not a synchronous wake-up, and the rule does not apply.
#[test]
fn a_waker_that_runs_on_is_not_followed() {
    let report = replay(&ping_pong(1, 1_000_000), &[]);
    assert_eq!(step(&report, "waker-cpu"), 0, "{:?}", report.steps);
}
