//! A second example, "up at": light tasks to idle E-cores first, heavy ones (from the
//! `heavy_util` knob on) to idle P-cores first, and a task that turns heavy on an E-core moves
//! up to an idle P-core (`up_migration`, which sees the core's estimate at the moment it is
//! asked). Its two knobs are its own: `--set heavy_util=600`, `sweep --set
//! heavy_util=100,256,600`, and live a control file each.

use hybridland_policy::{
    CoreKind, CpuId, CustomPolicy, KnobSpec, KnobValues, Placement, PlacementPolicy, Topology, View,
};

/// The policy, with its knobs' values.
#[derive(Copy, Clone, Debug)]
pub struct UpAt {
    heavy_util: u16,
    move_up: bool,
}

const KNOBS: &[KnobSpec] = &[
    KnobSpec::int(
        "heavy_util",
        0,
        1024,
        256,
        "utilisation from which a task counts as heavy (1024: never on a CPU below 1024)",
    ),
    KnobSpec::on_off(
        "move_up",
        true,
        "move a task that turns heavy up to a P-core",
    ),
];

/// The first idle allowed CPU of a P-core (`performance`) or of an E-core.
pub(crate) fn first_idle(view: &View<'_>, performance: bool) -> Option<CpuId> {
    let topo = view.topology();
    view.idle_allowed().iter().find(|c| {
        topo.info(*c)
            .is_some_and(|i| (i.kind == CoreKind::Performance) == performance)
    })
}

impl PlacementPolicy for UpAt {
    fn name(&self) -> &str {
        "up-at"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let heavy = view.util() >= self.heavy_util;
        view.place_on(first_idle(view, heavy).or_else(|| first_idle(view, !heavy)))
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        let on_p = view
            .topology()
            .info(view.prev_cpu()?)
            .is_some_and(|i| i.kind == CoreKind::Performance);
        if !self.move_up || on_p || view.util() < self.heavy_util {
            return None;
        }
        Some(view.place_on(Some(first_idle(view, true)?)))
    }

    fn knobs(&self) -> &'static [KnobSpec] {
        KNOBS
    }

    fn set_knob(&mut self, index: usize, value: i64) {
        match index {
            0 => self.heavy_util = u16::try_from(value).unwrap_or(1024),
            _ => self.move_up = value != 0,
        }
    }
}

fn build(
    _topo: &Topology,
    _seed: u64,
    values: &KnobValues,
) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(UpAt {
        heavy_util: values
            .get(0)
            .and_then(|v| u16::try_from(v).ok())
            .unwrap_or(256),
        move_up: values.get(1) != Some(0),
    }))
}

/// `--policy up-at`.
pub const UP_AT: CustomPolicy = CustomPolicy {
    name: "up-at",
    description: "light tasks to idle E-cores, heavy ones to idle P-cores; a task that turns heavy on an E-core moves up",
    knobs: KNOBS,
    build,
};
