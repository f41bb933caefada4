//! A third example, "graduate": what a policy keeps for each task. The core keeps a `u64` of
//! the policy's in its record of each task ([`View::task_value`]); here it counts the task's
//! wake-ups. A task's first `after` placements go to idle E-cores, every later one to an idle
//! P-core. A task that exits starts over, and so does a new task that gets an old task's id
//! (the core's [`TaskKey`](hybridland_policy::TaskKey) has a generation): both are new to the
//! core, with the value 0.

use crate::up_at::first_idle;
use hybridland_policy::{
    CustomPolicy, KnobSpec, KnobValues, Placement, PlacementPolicy, Topology, View,
};

/// The policy, with its knob's value.
#[derive(Copy, Clone, Debug)]
pub struct Graduate {
    after: u64,
}

const KNOBS: &[KnobSpec] = &[KnobSpec::int(
    "after",
    0,
    1_000_000,
    8,
    "placements a task spends on E-cores before it goes to P-cores",
)];

impl PlacementPolicy for Graduate {
    fn name(&self) -> &str {
        "graduate"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let placed = view.task_value();
        view.set_task_value(placed.saturating_add(1));
        let senior = placed >= self.after;
        view.place_on(first_idle(view, senior).or_else(|| first_idle(view, !senior)))
    }

    fn knobs(&self) -> &'static [KnobSpec] {
        KNOBS
    }

    fn set_knob(&mut self, _index: usize, value: i64) {
        self.after = u64::try_from(value).unwrap_or(0);
    }
}

fn build(
    _topo: &Topology,
    _seed: u64,
    values: &KnobValues,
) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(Graduate {
        after: values
            .get(0)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(8),
    }))
}

/// `--policy graduate`.
pub const GRADUATE: CustomPolicy = CustomPolicy {
    name: "graduate",
    description: "a task's first placements (knob `after`) to idle E-cores, later ones to idle P-cores: a count kept in the task's own value",
    knobs: KNOBS,
    build,
};
