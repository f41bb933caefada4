//! `-vv`: one log line per placement decision (task, CPU, step); `-vvv` adds the idle CPUs
//! the policy saw. Built only when the log level lets such lines through, so a plain replay
//! pays nothing for it. For `replay` and for `decisions` (a decision log's dispatches as the
//! core decides them again).

use hybridland_policy::{Target, Why};
use hybridland_sim::decision_replay::ReplayedDispatch;
use hybridland_sim::{DecisionRecord, Destination, Reason};

/// Logs each decision at debug level (and the idle CPUs at trace level).
pub(crate) fn log_decision(r: &DecisionRecord<'_>) {
    let reason = match r.reason {
        Reason::Wakeup => "wake-up",
        Reason::SliceEnd => "slice end",
        Reason::Preempted => "preempted",
        Reason::Displaced => "displaced",
    };
    let target = match r.decision.target {
        Destination::Run(cpu) => format!("run on cpu {}", cpu.0),
        Destination::QueueOn(cpu) => format!("queue on cpu {}", cpu.0),
        Destination::QueueShared => "queue shared".to_owned(),
        Destination::Preempt(cpu) => format!("preempt cpu {}", cpu.0),
    };
    let step = r.decision.placement.map_or("-", |p| p.step.name());
    let prev = r
        .prev_cpu
        .map_or_else(|| "-".to_owned(), |c| c.0.to_string());
    tracing::debug!(
        "t={} ns task {} (#{}) {reason}: prev cpu {prev}, util {} -> {target} (step {step})",
        r.now_ns,
        r.task_name,
        r.task,
        r.util,
    );
    if tracing::enabled!(tracing::Level::TRACE) {
        let idle: Vec<String> = r.state.idle().iter().map(|c| c.0.to_string()).collect();
        tracing::trace!("t={} ns idle cpus: {}", r.now_ns, idle.join(" "));
    }
}

/// Logs one dispatch of a decision replay at debug level (and the idle CPUs of the snapshot
/// behind it at trace level).
pub(crate) fn log_replayed(r: &ReplayedDispatch<'_>) {
    let d = r.dispatch;
    let (reason, step) = match d.why {
        Why::Placed(p) => ("wake-up", Some(p.step)),
        Why::Moved(p) => ("slice end, moved", Some(p.step)),
        Why::Kept => ("slice end, kept", None),
        Why::Yielded => ("slice end, queued behind others", None),
        Why::Blind => ("no idle snapshot", None),
        Why::AffinityUnknown => ("affinity unknown", None),
        Why::Stale(_) => ("its pick was taken meanwhile", None),
        Why::Helper => ("the nudge helper", None),
    };
    let target = match d.target {
        Target::Cpu(cpu) => format!("cpu {}", cpu.0),
        Target::Preempt(cpu) => format!("preempt cpu {}", cpu.0),
        Target::Shared => "shared queue".to_owned(),
    };
    let step = step.map_or("-", |s| s.name());
    let now = r.now_ns.map_or_else(|| "-".to_owned(), |t| t.to_string());
    tracing::debug!(
        "t={now} ns task {} {reason}: util {} -> {target} (step {step}), slice {} ns",
        d.task,
        d.util,
        d.slice_ns,
    );
    if tracing::enabled!(tracing::Level::TRACE) {
        let idle: Vec<String> = r
            .idle
            .map(|s| s.iter().map(|c| c.0.to_string()).collect())
            .unwrap_or_default();
        tracing::trace!("t={now} ns idle cpus: {}", idle.join(" "));
    }
}
