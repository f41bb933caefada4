//! Rate limits of the loop's error paths: log lines about repeated failures, and runs of
//! snapshot failures.

/// Rate limit for a repeated log line: the first occurrence, then at most one per gap, each
/// saying how many were left out.
#[derive(Debug)]
pub(crate) struct LogLimit {
    gap_ns: u64,
    last_ns: Option<u64>,
    suppressed: u64,
}

impl LogLimit {
    pub(crate) const fn new(gap_ns: u64) -> Self {
        Self {
            gap_ns,
            last_ns: None,
            suppressed: 0,
        }
    }

    /// Whether to log an occurrence at `now`; if so, how many were suppressed before it.
    pub(crate) fn allow(&mut self, now: u64) -> Option<u64> {
        if self
            .last_ns
            .is_some_and(|at| now.saturating_sub(at) < self.gap_ns)
        {
            self.suppressed += 1;
            return None;
        }
        self.last_ns = Some(now);
        Some(core::mem::take(&mut self.suppressed))
    }
}

/// Consecutive snapshot failures.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct FailureRun {
    pub(super) count: u64,
    pub(super) since_ns: u64,
}
