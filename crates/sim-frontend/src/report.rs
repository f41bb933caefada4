//! What a replay produces: every metric, serialisable to JSON with a stable field order.
//!
//! Times are integer nanoseconds; derived figures (rates, percentages, joules, watts, fps) are
//! `f64` computed from integers in a fixed order, so the same replay gives the same bytes.

pub use hybridland_trace::StepCount;
use serde::{Deserialize, Serialize};

/// The whole result of one replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Policy name.
    pub policy: String,
    /// The policy's knobs in force.
    pub policy_config: String,
    /// Machine name.
    pub machine: String,
    /// Trace name.
    pub trace: String,
    /// Seed used.
    pub seed: u64,
    /// Headline figures.
    pub summary: Summary,
    /// Wake-up latency: from becoming runnable to running.
    pub wake_latency: LatencyStats,
    /// The first frame task's figures (trace order), if the trace has frame tasks; every frame
    /// task's are in [`TaskReport::frames`].
    pub fps: Option<FrameStats>,
    /// Per core kind present on the machine, fastest first.
    pub kinds: Vec<KindStats>,
    /// Per L2 cluster, by cluster index.
    pub clusters: Vec<ClusterStats>,
    /// Per logical CPU, by CPU id.
    #[serde(default)]
    pub cpus: Vec<CpuStats>,
    /// Placement decisions by the policy crate's step (hybridland only), in step order.
    pub steps: Vec<StepCount>,
    /// Per task, in trace order with copies expanded.
    pub tasks: Vec<TaskReport>,
}

/// Headline figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Time until the last task finished (or the trace's horizon), ns.
    pub makespan_ns: u64,
    /// Tasks in the trace.
    pub tasks: usize,
    /// Tasks that finished.
    pub tasks_finished: usize,
    /// Finished tasks per second of makespan.
    pub throughput_per_s: f64,
    /// Mean turnaround (finish minus start) of finished tasks, ns; 0 when none finished (see
    /// `tasks_finished`).
    pub mean_turnaround_ns: u64,
    /// Longest turnaround, ns.
    pub max_turnaround_ns: u64,
    /// Task moves between CPUs.
    pub migrations: u64,
    /// Energy over the makespan, joules.
    pub energy_j: f64,
    /// Energy over makespan, watts.
    pub avg_power_w: f64,
    /// Events processed (superseded completion and slice-end timers are not events).
    pub events: u64,
    /// The most entries the event queue held at once: what the replay's memory depends on.
    /// At most twice the live events (one arrival or wake-up per task, a completion and a
    /// slice end per CPU, one balance tick) plus a small constant, however long the replay.
    #[serde(default)]
    pub peak_queued_events: u64,
    /// Times a running task's speed was recomputed (and its completion re-timed when it
    /// changed). Per event this is the SMT width plus the cache-sensitive tasks running in
    /// the cluster of a cache-sensitive task that started or stopped, never the cluster's
    /// size: the figure that shows per-event work (see docs/machine-model.md).
    #[serde(default)]
    pub rate_refreshes: u64,
}

/// Latency percentiles (nearest-rank over every sample).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Samples.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// Mean, ns.
    pub mean_ns: u64,
}

/// A frame task's rate, per fps window (1 s by default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameStats {
    /// Task name.
    pub task: String,
    /// Frames completed.
    pub frames: u64,
    /// Frames completed after their deadline.
    pub missed_deadlines: u64,
    /// Full windows measured.
    pub windows: usize,
    /// Mean frames per second over the windows.
    pub fps_mean: f64,
    /// Population standard deviation of the windows' fps.
    pub fps_stdev: f64,
    /// Slowest window.
    pub fps_min: f64,
    /// Fastest window.
    pub fps_max: f64,
    /// Mean time from a frame's release to its completion, ns.
    pub mean_frame_ns: u64,
}

/// One core kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindStats {
    /// `performance`, `efficiency` or `low-power-efficiency`.
    pub kind: String,
    /// Logical CPUs of the kind.
    pub cpus: usize,
    /// Summed busy time of those CPUs, ns.
    pub busy_ns: u64,
    /// Busy time over (CPUs × makespan), percent.
    pub utilisation_pct: f64,
    /// Energy drawn by those cores (package share not included), joules.
    pub energy_j: f64,
}

/// One L2 cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterStats {
    /// Dense cluster index.
    pub index: usize,
    /// Kind of its first CPU.
    pub kind: String,
    /// Its CPUs as a list (`12-15`).
    pub cpus: String,
    /// Summed busy time of its CPUs, ns.
    pub busy_ns: u64,
    /// Busy time over makespan: the average number of tasks running there.
    pub avg_running: f64,
}

/// One logical CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuStats {
    /// CPU id.
    pub cpu: u16,
    /// Its kind.
    pub kind: String,
    /// Its core's index.
    pub core: usize,
    /// Its L2 cluster's index (as in [`Report::clusters`]).
    pub cluster: usize,
    /// Time it ran a task, ns.
    pub busy_ns: u64,
    /// Busy time over makespan, percent.
    pub utilisation_pct: f64,
}

/// One task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// Name (copies suffixed `.N`).
    pub name: String,
    /// First wake-up, ns.
    pub start_ns: u64,
    /// Completion, ns; `None` if it did not finish before the horizon.
    pub finish_ns: Option<u64>,
    /// `finish_ns - start_ns`.
    pub turnaround_ns: Option<u64>,
    /// Time running on performance cores, ns.
    pub ran_performance_ns: u64,
    /// Time running on efficiency cores, ns.
    pub ran_efficiency_ns: u64,
    /// Time running on low-power efficiency cores, ns.
    pub ran_low_power_ns: u64,
    /// CPU-to-CPU moves.
    pub migrations: u64,
    /// Wake-ups (start, ends of sleeps, frame releases).
    pub wakeups: u64,
    /// The utilisation estimate at the end (0..=1024, the policy crate's estimator).
    pub util: u16,
    /// Frame figures for a frame task.
    pub frames: Option<FrameStats>,
}

impl Report {
    /// Pretty JSON. Field order is the declaration order; maps are not used, so the bytes
    /// depend only on the values.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The task named `name`.
    pub fn task(&self, name: &str) -> Option<&TaskReport> {
        self.tasks.iter().find(|t| t.name == name)
    }
}
