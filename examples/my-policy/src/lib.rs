//! An example placement policy, "little first": a waking task goes to the smallest idle CPU
//! that fits it, so light work stays on E-cores and only work that needs a big core gets one.
//! A power-saving idea in about fifty lines, run by the same scheduler core as hybridland, in
//! `hybrid-sim` (`my-policy-sim`) and live (`scx_my_policy`). See the README's "Try your own
//! placement idea". A second one, [`UP_AT`], moves a task that turns heavy up, with knobs of
//! its own; a third, [`GRADUATE`], keeps a count for each task in the task's own value.

mod graduate;
mod up_at;
pub use graduate::{GRADUATE, Graduate};
pub use up_at::{UP_AT, UpAt};

use hybridland_policy::{
    CpuId, CustomPolicy, KnobValues, Placement, PlacementPolicy, Topology, View,
};

/// The smallest idle CPU that fits the task, else the biggest idle one.
#[derive(Copy, Clone, Debug, Default)]
pub struct LittleFirst;

/// A task fits a CPU when its utilisation is at most 80% of the CPU's capacity.
fn fits(util: u16, capacity: u16) -> bool {
    u32::from(util) * 5 <= u32::from(capacity) * 4
}

impl PlacementPolicy for LittleFirst {
    fn name(&self) -> &str {
        "little-first"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let topo = view.topology();
        let capacity = |cpu: CpuId| topo.info(cpu).map_or(0, |i| i.capacity);
        let idle = view.idle_allowed();
        let util = view.util();
        let smallest_fit = idle
            .iter()
            .filter(|c| fits(util, capacity(*c)))
            .min_by_key(|c| (capacity(*c), c.0));
        let Some(fit) = smallest_fit else {
            let biggest = idle.iter().max_by_key(|c| (capacity(*c), u16::MAX - c.0));
            return view.place_on(biggest);
        };
        // Its previous CPU if it is idle and as small: warm caches, at no cost in power.
        let prev = view
            .prev_cpu()
            .filter(|p| idle.contains(*p) && capacity(*p) == capacity(fit));
        view.place_on(prev.or(Some(fit)))
    }
}

fn build(
    _topo: &Topology,
    _seed: u64,
    _knobs: &KnobValues,
) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(LittleFirst))
}

/// The policy as both programs take it: `--policy little-first`.
pub const POLICY: CustomPolicy = CustomPolicy {
    name: "little-first",
    description: "the smallest idle CPU that fits the task (80% of its capacity), else the biggest idle one",
    knobs: &[],
    build,
};

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{
        Affinity, Arrival, CoreConfig, CoreKind, CpuSet, Input, Life, Output, Queued, SchedCore,
        Slot, Snapshot, Target, TaskId, TimeNs, TopologyBuilder, UtilSource,
    };

    /// One P-core with SMT (CPUs 0-1, capacity 1024) and two E-cores (2-3, capacity 600).
    fn machine() -> Topology {
        let mut b = TopologyBuilder::new();
        for cpu in 0..4u16 {
            let (kind, cap) = if cpu < 2 {
                (CoreKind::Performance, 1024)
            } else {
                (CoreKind::Efficiency, 600)
            };
            b.add_cpu(CpuId(cpu), kind, cap, 0).unwrap();
        }
        b.add_core(&[CpuId(0), CpuId(1)]).unwrap();
        b.add_cluster(&[CpuId(2), CpuId(3)]).unwrap();
        b.build().unwrap()
    }

    /// Where the core, running the policy, sends a task of utilisation `util` woken on an
    /// idle machine, having last run on `prev`.
    fn placed_from(util: u16, prev: Option<u16>) -> Target {
        let topo = machine();
        let all = *topo.cpus();
        let storage = vec![Slot::EMPTY; Slot::count_for(16)];
        let mut core =
            SchedCore::with_policy(topo, LittleFirst, CoreConfig::DEFAULT, storage).unwrap();
        let task = Queued {
            task: TaskId(1),
            life: Life::UNKNOWN,
            token: 0,
            arrival: Arrival::Wakeup { waker: None },
            cpu: prev.map(CpuId),
            last_run: None,
            weight: 100,
            affinity: Affinity::Cpus(&all),
            util: UtilSource::Hint(util),
        };
        core.handle(TimeNs(0), Input::Queued(task)).unwrap();
        let snap = Snapshot {
            idle: &all,
            queued: Some(&CpuSet::EMPTY),
            caller_cpu: None,
        };
        core.handle(TimeNs(0), Input::Snapshot(snap)).unwrap();
        match core.poll() {
            Some(Output::Dispatch(d)) => d.target,
            other => panic!("one dispatch, not {other:?}"),
        }
    }

    fn placed(util: u16) -> Target {
        placed_from(util, None)
    }

    #[test]
    fn light_work_goes_little_and_heavy_work_big() {
        // Off an idle P-core too: its previous CPU wins only among the smallest that fit.
        assert_eq!(placed_from(100, Some(1)), Target::Cpu(CpuId(2)));
        assert_eq!(placed_from(100, Some(3)), Target::Cpu(CpuId(3)));
        assert_eq!(placed(100), Target::Cpu(CpuId(2)));
        // 600 * 0.8 = 480 fits an E-core, 481 does not.
        assert_eq!(placed(480), Target::Cpu(CpuId(2)));
        assert_eq!(placed(481), Target::Cpu(CpuId(0)));
    }
}
