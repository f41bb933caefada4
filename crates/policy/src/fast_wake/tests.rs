use super::*;
use crate::config::{ClusterBalance, PolicyConfig};
use crate::testkit::arb_scenario;
use proptest::prelude::*;
use std::vec::Vec;

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The table's walk is the idle order: the same CPU, step and reach on every machine,
    /// idle state, affinity, previous CPU, utilisation, set of homes and knobs.
    #[test]
    fn the_walk_is_the_idle_order(s in arb_scenario()) {
        let policy = s.policy();
        let table = policy.wake_table(&s.topology);
        let state = s.state();
        let q = s.wake_question(&policy, &state);
        let walked = table.decide(&q);
        let ordered = policy.select_cpu(&s.topology, &state, &s.task());
        prop_assert_eq!(walked, ordered);
        // Whole cores found one busy CPU at a time, as on a machine whose siblings lie at
        // too many distances, give the same answer.
        let mut by_cpu = table.clone();
        by_cpu.sets.without_offsets();
        prop_assert_eq!(by_cpu.decide(&q), ordered);
        if let Some(cpu) = walked.cpu {
            prop_assert!(policy.check_fast_wake(&s.topology, &q, cpu).is_ok());
        }
    }

    /// A class's highest utilisation is of that class, so the audit asks the idle order about
    /// the class the kernel walked with.
    #[test]
    fn a_class_util_is_of_its_class(s in arb_scenario()) {
        let policy = s.policy();
        let class = policy.class_of(&s.topology, s.util);
        let util = policy.class_util(&s.topology, class);
        prop_assert_eq!(policy.class_of(&s.topology, util), class);
    }

    /// The busy range is the balance rule's own verdict at every busy count.
    #[test]
    fn the_balance_range_is_the_rules_verdict(s in arb_scenario()) {
        let policy = s.policy();
        let range = policy.balance_range(&s.topology);
        let state = s.state();
        let busy = state.nr_busy() as u32;
        prop_assert_eq!(range.contains(busy), policy.balance_active(&s.topology, &state));
    }
}

/// scripts/vm/topology-2p-smt-4e.toml: E-cores 0-3 in clusters {0,2} and {1,3}, P-cores
/// 4-5 and 6-7.
fn vm_machine() -> Topology {
    let mut b = crate::TopologyBuilder::new();
    for c in 0..8u16 {
        let (k, cap) = if c < 4 {
            (CoreKind::Efficiency, 640)
        } else {
            (CoreKind::Performance, 1024)
        };
        b.add_cpu(CpuId(c), k, cap, 0).unwrap();
    }
    b.add_core(&[CpuId(4), CpuId(5)]).unwrap();
    b.add_core(&[CpuId(6), CpuId(7)]).unwrap();
    b.add_cluster(&[CpuId(0), CpuId(2)]).unwrap();
    b.add_cluster(&[CpuId(1), CpuId(3)]).unwrap();
    b.build().unwrap()
}

fn cpus(ids: &[u16]) -> CpuSet {
    ids.iter().map(|&c| CpuId(c)).collect()
}

/// The walk decides what the old keep-on-previous-CPU test declined: another CPU than the
/// previous one, an E-core under active cluster balance, and a class that changes the answer.
#[test]
fn the_vm_machine_walks_to_what_the_core_would_choose() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let table = policy.wake_table(&topo);
    assert_eq!(table.balance, BalanceRange { from: 0, until: 6 });
    assert_eq!(
        table.ranked[..8].iter().map(|c| c.0).collect::<Vec<_>>(),
        [4, 5, 6, 7, 0, 1, 2, 3]
    );
    let (light, heavy) = (policy.class_of(&topo, 100), policy.class_of(&topo, 600));
    assert_eq!((light, heavy), (TaskClass(0), TaskClass(1)));
    let ask = |free: &CpuSet, prev: u16, class, homes: &CpuSet| {
        table
            .decide(&WakeQuestion {
                free,
                allowed: &all,
                prev: Some(CpuId(prev)),
                class,
                homes,
                sync_waker: None,
            })
            .cpu
            .map(|c| c.0)
    };
    let none = CpuSet::EMPTY;
    // Woken on a busy E-core with a whole P-core idle: the P-core, not the previous CPU.
    assert_eq!(ask(&cpus(&[1, 6, 7]), 0, light, &none), Some(6));
    // The previous CPU's core is busy but its sibling is free, and another P-core is whole:
    // the whole one.
    assert_eq!(ask(&cpus(&[5, 6, 7]), 4, light, &none), Some(6));
    // Only E-cores free, balance active (2 of 8 busy): the least busy cluster, not the
    // previous CPU: CPU 0's cluster {0,2} has 0 busy, CPU 1's {1,3} has 1.
    assert_eq!(
        ask(&cpus(&[0, 1, 2]), 1, light, &none),
        Some(0),
        "cluster balance"
    );
    // The class decides between a P-sibling and a whole E-core.
    let free = cpus(&[0, 2, 5]);
    assert_eq!(ask(&free, 5, light, &none), Some(0));
    assert_eq!(ask(&free, 5, heavy, &none), Some(5));
    // Homes break a tie: E-CPUs 0 and 2 tie (their cluster idle); 0's core is a home.
    assert_eq!(ask(&cpus(&[0, 2]), 7, light, &cpus(&[0])), Some(2));
    // Nothing allowed free: the core decides.
    assert_eq!(ask(&none, 4, light, &none), None);
    // The audit is not vacuous: CPU 2 is not the answer where CPU 0 is.
    let q = WakeQuestion {
        free: &cpus(&[0, 2, 5]),
        allowed: &all,
        prev: Some(CpuId(5)),
        class: light,
        homes: &none,
        sync_waker: None,
    };
    assert!(policy.check_fast_wake(&topo, &q, CpuId(0)).is_ok());
    assert_eq!(
        policy.check_fast_wake(&topo, &q, CpuId(2)).unwrap_err().cpu,
        Some(CpuId(0))
    );
    // A task allowed on CPU 5 alone: free, the idle order places it there; busy, so does the
    // pinned rule, and no other busy CPU is right.
    let only_5 = cpus(&[5]);
    let pinned = WakeQuestion {
        allowed: &only_5,
        ..q
    };
    assert!(policy.check_fast_wake(&topo, &pinned, CpuId(5)).is_ok());
    let busy = WakeQuestion {
        free: &none,
        ..pinned
    };
    assert!(policy.check_fast_wake(&topo, &busy, CpuId(5)).is_ok());
    assert!(policy.check_fast_wake(&topo, &busy, CpuId(4)).is_err());
}

/// A previous CPU the machine lacks (a fuzz target's find: its table entry is the default, of
/// core 0) is nobody's sibling. Here core 0 is a P-core of lower capacity than core 1, so
/// taking CPU 5 for a sibling of core 0 would choose CPU 0 over the faster CPU 2.
#[test]
fn a_previous_cpu_outside_the_machine_is_no_ones_sibling() {
    let mut b = crate::TopologyBuilder::new();
    // CPUs 0-3 and 8-9: CPU 5 is inside the ids' span but not on the machine.
    for c in [0u16, 1, 2, 3, 8, 9] {
        let (k, cap) = match c {
            0 | 1 => (CoreKind::Performance, 700),
            2 | 3 => (CoreKind::Performance, 1024),
            _ => (CoreKind::Efficiency, 400),
        };
        b.add_cpu(CpuId(c), k, cap, 0).unwrap();
    }
    b.add_core(&[CpuId(0), CpuId(1)]).unwrap();
    b.add_core(&[CpuId(2), CpuId(3)]).unwrap();
    let topo = b.build().unwrap();
    let all = *topo.cpus();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let q = WakeQuestion {
        free: &all,
        allowed: &all,
        prev: Some(CpuId(5)),
        class: TaskClass(0),
        homes: &CpuSet::EMPTY,
        sync_waker: None,
    };
    let state = CpuState::from_idle(&topo, &all);
    let task = TaskHints {
        allowed: &all,
        prev_cpu: Some(CpuId(5)),
        util: 0,
        sync_waker: None,
    };
    let walked = policy.wake_table(&topo).decide(&q);
    assert_eq!(walked, policy.select_cpu(&topo, &state, &task));
    assert_eq!(walked.cpu, Some(CpuId(2)));
}

/// Balance off: among equal E-CPUs the previous one wins; outside the primary domain only
/// when nothing inside is free.
#[test]
fn balance_off_and_the_primary_domain() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::Off,
        primary_domain: "performance".parse().unwrap(),
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();
    let table = policy.wake_table(&topo);
    let ask = |free: &[u16], prev: u16| {
        table.decide(&WakeQuestion {
            free: &cpus(free),
            allowed: &all,
            prev: Some(CpuId(prev)),
            class: TaskClass(0),
            homes: &CpuSet::EMPTY,
            sync_waker: None,
        })
    };
    let p = ask(&[0, 3, 5], 3);
    assert_eq!((p.cpu, p.reach), (Some(CpuId(5)), Reach::Primary));
    let e = ask(&[0, 3], 3);
    assert_eq!((e.cpu, e.reach), (Some(CpuId(3)), Reach::Overflow));
}
