//! What a rule sees is what the core knows at that moment: a policy that moves a task up once
//! [`View::util`] crosses a quarter of a P-core moves seed 000's lone CPU-bound thread, which
//! never wakes after its start (the framework refills its slices silently), off the E-core it
//! started on.

mod util;

use hybridland_policy::{
    CoreKind, CpuId, CustomPolicy, KnobValues, Placement, PlacementPolicy, Topology, View,
};
use hybridland_sim::core_policy::CoreDriven;
use util::load_trace;
use util::plain_policy::replay_plain;

/// A task is heavy from a quarter of a P-core's capacity on.
const HEAVY: u16 = 256;

/// Light tasks to idle E-cores first, heavy ones to idle P-cores first; a light task that
/// turns heavy on an E-core moves up when a P-core is idle.
struct HeavyUp;

fn kind(view: &View<'_>, cpu: CpuId) -> Option<CoreKind> {
    view.topology().info(cpu).map(|i| i.kind)
}

fn first_idle(view: &View<'_>, performance: bool) -> Option<CpuId> {
    view.idle_allowed()
        .iter()
        .find(|c| (kind(view, *c) == Some(CoreKind::Performance)) == performance)
}

impl PlacementPolicy for HeavyUp {
    fn name(&self) -> &str {
        "heavy-up"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let heavy = view.util() >= HEAVY;
        let cpu = first_idle(view, heavy).or_else(|| first_idle(view, !heavy));
        view.place_on(cpu)
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        let on_e = kind(view, view.prev_cpu()?) != Some(CoreKind::Performance);
        if !on_e || view.util() < HEAVY {
            return None;
        }
        Some(view.place_on(Some(first_idle(view, true)?)))
    }
}

fn build(
    _topo: &Topology,
    _seed: u64,
    _: &KnobValues,
) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(HeavyUp))
}

const POLICY: CustomPolicy = CustomPolicy {
    name: "heavy-up",
    description: "light tasks to E-cores, heavy ones to P-cores, moved up when they turn heavy",
    knobs: &[],
    build,
};

#[test]
fn a_task_that_turns_heavy_on_an_e_core_is_moved_up_within_100_ms() {
    let trace = load_trace("seed000-lone.json");
    let report = replay_plain("i7-13800h", &trace, Box::new(CoreDriven::custom(POLICY))).unwrap();
    let t = report.task("single-thread").unwrap();
    let total = t.ran_performance_ns + t.ran_efficiency_ns + t.ran_low_power_ns;
    eprintln!(
        "on P {} ns, on E {} ns, migrations {}, turnaround {:?}",
        t.ran_performance_ns, t.ran_efficiency_ns, t.migrations, t.turnaround_ns
    );
    // It starts light, on an E-core: the rule, not the start, puts it on a P-core.
    assert!(t.ran_efficiency_ns > 0, "it started on a P-core");
    assert_eq!(t.migrations, 1, "one move, E-core to P-core");
    // Alone and CPU-bound, it runs from its start: its time on the E-core is how long the
    // move took.
    assert!(
        t.ran_efficiency_ns <= 100_000_000,
        "moved after {} ns",
        t.ran_efficiency_ns
    );
    assert!(
        t.ran_performance_ns * 10 >= total * 9,
        "{} of {total} ns on a P-core",
        t.ran_performance_ns
    );
}
