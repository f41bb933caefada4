//! Inputs the fuzz targets (`fuzz/`) stopped on, kept as plain tests. The raw inputs are also
//! in the fuzz corpora (`fuzz/corpus/<target>/seed-regress-*`), so every fuzz run replays them.

use hybridland_policy::testkit::rules;
use hybridland_policy::testkit::{check_fill, check_lone_task, check_placement};
use hybridland_policy::*;

/// `topology_builder`, `seed-regress-slow-p-core`: a machine whose only P-core (CPU 0,
/// capacity 300) is slower than its low-power E-cores (CPUs 3-19, capacity 1024). The builder
/// accepts it: kind and capacity are independent inputs. The idle order puts a lone task on the
/// idle P-core before any E-core, and only then compares capacity, so the decision follows
/// every rule `check_placement` states. `check_lone_task` first demanded the highest capacity
/// of the whole primary domain, which cannot hold here; it now asks for the fastest P-core.
#[test]
fn p_core_slower_than_e_cores_fills_by_the_idle_order() {
    let mut b = TopologyBuilder::new();
    b.add_cpu(CpuId(0), CoreKind::Performance, 300, 0).unwrap();
    for id in 3..20 {
        b.add_cpu(CpuId(id), CoreKind::LowPowerEfficiency, 1024, 0)
            .unwrap();
    }
    let topo = b.build().unwrap();
    assert_eq!(topo.capacity_levels(), [300, 1024]);
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::Off,
        auto_low_busy_pct: 0,
        auto_high_busy_pct: 0,
        fit_margin_pct: 1,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();

    let state = CpuState::all_idle(&topo);
    let allowed = *topo.cpus();
    let task = TaskHints::new(&allowed);
    let lone = rules::select_cpu(&policy, &topo, &state, &task);
    check_placement(&topo, &policy, &state, &task, &lone).unwrap();
    assert_eq!((lone.cpu, lone.step), (Some(CpuId(0)), Step::IdlePCore));
    assert_eq!(check_lone_task(&topo, &policy).unwrap(), lone);

    let order = check_fill(&topo, &policy).unwrap();
    assert_eq!(order.len(), 18);
    assert_eq!(order[1].cpu, Some(CpuId(3)), "then the E-cores, by id");
}
