//! `-vv`: one log line per placement decision (task, CPU, step); `-vvv` adds the idle CPUs
//! the policy saw. Built only when the log level lets such lines through, so a plain replay
//! pays nothing for it.

use hybridland_sim::{DecisionRecord, Reason, Target};

/// Logs each decision at debug level (and the idle CPUs at trace level).
pub(crate) fn log_decision(r: &DecisionRecord<'_>) {
    let reason = match r.reason {
        Reason::Wakeup => "wake-up",
        Reason::SliceEnd => "slice end",
        Reason::Preempted => "preempted",
    };
    let target = match r.decision.target {
        Target::Run(cpu) => format!("run on cpu {}", cpu.0),
        Target::QueueOn(cpu) => format!("queue on cpu {}", cpu.0),
        Target::QueueShared => "queue shared".to_owned(),
        Target::Preempt(cpu) => format!("preempt cpu {}", cpu.0),
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
