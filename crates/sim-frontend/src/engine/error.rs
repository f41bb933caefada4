//! Why a replay could not start or finish.

use crate::sim_policy::PolicyError;
use crate::trace::TraceError;
use hybridland_policy::CpuId;

/// Why a replay could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The trace does not fit the machine.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The policy cannot run on this machine.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policy answered with a CPU that is busy, not allowed or not on the machine.
    #[error("policy `{policy}` placed task {task} on cpu {cpu} at {now_ns} ns: {reason}")]
    InvalidDecision {
        /// Policy name.
        policy: String,
        /// Task index.
        task: usize,
        /// The CPU.
        cpu: CpuId,
        /// Simulated time.
        now_ns: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A runaway trace: the replay passed
    /// [`SimOptions::max_events`](crate::SimOptions::max_events) events or
    /// [`SimOptions::max_time_ns`](crate::SimOptions::max_time_ns) of simulated time.
    #[error(
        "runaway replay of `{trace}` stopped after {events} events at {now_ns} ns (limits: {limit} events, {max_time_ns} ns of simulated time); busiest task: `{task}` ({wakeups} wake-ups)"
    )]
    TooManyEvents {
        /// The trace's name.
        trace: String,
        /// Events processed.
        events: u64,
        /// The event limit.
        limit: u64,
        /// Simulated time.
        now_ns: u64,
        /// The simulated-time limit.
        max_time_ns: u64,
        /// The task with the most wake-ups so far: usually the loop that runs away.
        task: String,
        /// Its wake-ups.
        wakeups: u64,
    },
    /// The replay ran longer in wall-clock time than
    /// [`SimOptions::max_wall`](crate::SimOptions::max_wall).
    #[error(
        "replay of `{trace}` stopped by the wall-time limit of {limit_secs} s after {events} events at {now_ns} ns of simulated time"
    )]
    WallTimeExceeded {
        /// The trace's name.
        trace: String,
        /// The limit, seconds.
        limit_secs: f64,
        /// Events processed.
        events: u64,
        /// Simulated time.
        now_ns: u64,
    },
    /// Every task left waits for a wake-up (`wait_for`) that no task can send any more: the
    /// trace's chain is broken (its wakers ended, or each waits for the other).
    #[error(
        "replay of `{trace}` blocked at {now_ns} ns: {blocked} task(s) wait for a wake-up no task can send; `{task}` waits for {waits_for}"
    )]
    Blocked {
        /// The trace's name.
        trace: String,
        /// Simulated time.
        now_ns: u64,
        /// Tasks blocked.
        blocked: usize,
        /// The first of them.
        task: String,
        /// The tasks it waits for, as the trace names them.
        waits_for: String,
    },
    /// Tasks wait while no event can ever run them (a policy left them queued).
    #[error("replay stalled at {now_ns} ns with {waiting} tasks unable to run")]
    Stalled {
        /// Simulated time.
        now_ns: u64,
        /// Tasks left.
        waiting: usize,
    },
}
