//! Placements per step of the idle order, as a replay reports them and a live run records them.

use serde::{Deserialize, Serialize};

/// How often one step of the idle order chose.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCount {
    /// Step name (`idle-p-core`...).
    pub step: String,
    /// Decisions.
    pub count: u64,
    /// Of those, outside the primary domain.
    pub overflow: u64,
}
