//! The shared checkers refuse wrong answers: a placement that breaks the idle order, or the
//! cluster-balance tie-break, is a violation naming that rule. (The property tests only show
//! that the policy's own answers pass.)

use hybridland_policy::testkit::{
    CoreGroup, Numbering, check_deterministic, check_placement, machine,
};
use hybridland_policy::*;

/// CPUs 0-3: two P-cores of two threads (0-1, 2-3), each its own cluster; CPUs 4-7: four
/// one-thread E-cores, two to a cluster (4-5, 6-7).
fn two_p_four_e() -> Topology {
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, 2, 2, 1),
            CoreGroup::new(CoreKind::Efficiency, 512, 4, 1, 2),
        ],
        Numbering::Consecutive,
    )
}

fn busy(topo: &Topology, cpus: &[u16]) -> CpuState {
    let mut state = CpuState::all_idle(topo);
    for &c in cpus {
        assert!(state.occupy(topo, CpuId(c)));
    }
    state
}

fn placed(cpu: u16, step: Step) -> Placement {
    Placement {
        cpu: Some(CpuId(cpu)),
        step,
        reach: Reach::Primary,
    }
}

#[test]
fn a_busy_sibling_while_a_whole_p_core_is_idle_breaks_the_idle_order() {
    let topo = two_p_four_e();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let state = busy(&topo, &[0]);
    let allowed = *topo.cpus();
    let task = TaskHints::new(&allowed);
    let right = check_deterministic(&topo, &policy, &state, &task).unwrap();
    assert_eq!(right.cpu.map(|c| c.0), Some(2), "{right:?}");
    check_placement(&topo, &policy, &state, &task, &right).unwrap();
    let v =
        check_placement(&topo, &policy, &state, &task, &placed(1, Step::BusySibling)).unwrap_err();
    assert_eq!(v.rule, "idle-order", "{v}");
    // Labelled as an idle P-core, the sibling's step is wrong first.
    let v =
        check_placement(&topo, &policy, &state, &task, &placed(1, Step::IdlePCore)).unwrap_err();
    assert_eq!(v.rule, "step-label", "{v}");
}

#[test]
fn the_busier_e_cluster_while_balance_is_on_breaks_the_tie_break() {
    let topo = two_p_four_e();
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();
    // Every P CPU busy, and one CPU of the E cluster 4-5.
    let state = busy(&topo, &[0, 1, 2, 3, 4]);
    let allowed = *topo.cpus();
    let task = TaskHints::new(&allowed);
    let right = check_deterministic(&topo, &policy, &state, &task).unwrap();
    assert_eq!(right.cpu.map(|c| c.0), Some(6), "{right:?}");
    check_placement(&topo, &policy, &state, &task, &right).unwrap();
    let v =
        check_placement(&topo, &policy, &state, &task, &placed(5, Step::IdleECore)).unwrap_err();
    assert_eq!(v.rule, "tie-break", "{v}");
    assert!(v.detail.contains("cluster load (1, 2)"), "{v}");
}
