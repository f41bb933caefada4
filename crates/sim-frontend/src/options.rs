//! Replay options that are not part of the trace: what the engine reads besides the trace,
//! the machine and the policy. Nothing here knows about the engine, so knob parsing can build
//! options without depending on it.

/// Replay options that are not part of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// Time slice, ns. Default 5 ms.
    pub slice_ns: u64,
    /// Period of balance ticks, ns. Default 4 ms.
    pub balance_interval_ns: u64,
    /// Window over which frames per second are counted, ns. Default 1 s.
    pub fps_window_ns: u64,
    /// Replaces the trace's seed when set.
    pub seed: Option<u64>,
    /// The seed of the policy's own draws, when it differs from the engine's: a comparison
    /// with a live run gives the policy the live `--seed`, while the engine's draws keep the
    /// trace's. Default none: the policy draws from the same seed as the engine.
    pub policy_seed: Option<u64>,
    /// The replay stops with an error after this many events. Default 200 million.
    pub max_events: u64,
    /// The replay stops with an error when simulated time passes this. Default 10^15 ns
    /// (about 11.6 days), far beyond any trace's horizon and far below overflow.
    pub max_time_ns: u64,
    /// The replay stops with [`SimError::WallTimeExceeded`](crate::SimError) once it has run
    /// this long in wall-clock time (checked every 4,096 events). Default none: the library's
    /// results never depend on the host's speed; `hybrid-sim` sets 600 s (`--max-wall-secs`).
    pub max_wall: Option<core::time::Duration>,
    /// Where the utilisation the policy sees comes from. Default: the policy crate's
    /// estimator over what each task actually ran, as the live scheduler does.
    pub util_source: ReplayUtil,
}

/// Where a task's utilisation comes from in a replay.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ReplayUtil {
    /// The policy crate's estimator ([`hybridland_policy::UtilEstimate`]) over the runs the
    /// replay gives the task: what the live scheduler sees.
    #[default]
    Estimator,
    /// The trace's static hint (`util`, or the duty cycle of its phases): an oracle, kept so
    /// figures from before the estimator can be compared.
    Hint,
}

impl ReplayUtil {
    /// The name `--set util_source=` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Estimator => "estimator",
            Self::Hint => "hint",
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            slice_ns: hybridland_policy::CoreConfig::DEFAULT.slice_ns,
            balance_interval_ns: 4_000_000,
            fps_window_ns: 1_000_000_000,
            seed: None,
            policy_seed: None,
            max_events: 200_000_000,
            max_time_ns: 1_000_000_000_000_000,
            max_wall: None,
            util_source: ReplayUtil::Estimator,
        }
    }
}
