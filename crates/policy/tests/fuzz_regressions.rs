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

/// `topology_builder`, `seed-regress-mixed-cluster`: two clusters of 11 CPUs, one all P-CPUs
/// (14-24), one of 7 P-CPUs and 4 E-CPUs (25-31, 32-35), with cluster balance on. Filling the
/// machine puts tasks on every P-CPU before any E-CPU (capacity comes before cluster balance),
/// so the mixed cluster holds 7 while the other reaches 9: right. `check_fill` took the two
/// clusters for alike from their first CPUs and called it unbalanced; it now compares what
/// every member is.
#[test]
fn a_mixed_cluster_is_not_alike_an_all_p_cluster_of_its_size() {
    let mut b = TopologyBuilder::new();
    for id in 11..=31 {
        b.add_cpu(CpuId(id), CoreKind::Performance, 1024, 0)
            .unwrap();
    }
    for id in (6..=10).chain(32..=35) {
        b.add_cpu(CpuId(id), CoreKind::Efficiency, 300, 0).unwrap();
    }
    let all_p: Vec<CpuId> = (14..=24).map(CpuId).collect();
    let mixed: Vec<CpuId> = (25..=35).map(CpuId).collect();
    b.add_cluster(&all_p).unwrap();
    b.add_cluster(&mixed).unwrap();
    let topo = b.build().unwrap();
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        auto_low_busy_pct: 0,
        auto_high_busy_pct: 59,
        fit_margin_pct: 1,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();
    let order = check_fill(&topo, &policy).unwrap();
    let first_e = order
        .iter()
        .position(|p| {
            p.cpu
                .is_some_and(|c| topo.kind_mask(CoreKind::Efficiency).contains(c))
        })
        .unwrap();
    assert_eq!(first_e, 21, "every P-CPU before the first E-CPU");
}
