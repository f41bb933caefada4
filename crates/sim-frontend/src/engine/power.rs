//! Energy: each core's power integrated over time by its number of busy threads.

use super::Simulation;
use hybridland_policy::CoreKind;

/// Energy integration per core.
#[derive(Clone, Debug)]
pub(super) struct CoreMeter {
    pub(super) kind: CoreKind,
    pub(super) busy_threads: u32,
    pub(super) since_ns: u64,
    pub(super) energy_pj: u128,
}

impl<'a> Simulation<'a> {
    /// Integrates a core's power up to now and changes its busy-thread count.
    pub(super) fn meter(&mut self, core: usize, delta: i32) {
        let now = self.now;
        let model = self.model;
        let m = &mut self.cores[core];
        let mw = model.core_power_mw(m.kind, m.busy_threads);
        m.energy_pj += u128::from(mw) * u128::from(now - m.since_ns);
        m.since_ns = now;
        m.busy_threads = m.busy_threads.saturating_add_signed(delta);
    }
}
