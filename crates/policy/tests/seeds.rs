//! The seed documents' placement examples, on a static state, one task after another.

use hybridland_policy::testkit::rules;
use hybridland_policy::testkit::{CoreGroup, Numbering, check_fill, check_placement, machine};
use hybridland_policy::*;

/// i7-13800H (seeds 000 and 004): 6 P-cores with SMT = CPUs 0-11, 8 E-cores = 12-19 in two
/// clusters of 4.
fn i7_13800h() -> Topology {
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, 6, 2, 1),
            CoreGroup::new(CoreKind::Efficiency, 600, 8, 1, 4),
        ],
        Numbering::Consecutive,
    )
}

/// Arm TC2 (seed 003): 2 fast A15s, 3 slow A7s (606/1441 of the fast ones).
fn tc2() -> Topology {
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, 2, 1, 2),
            CoreGroup::new(CoreKind::Efficiency, 430, 3, 1, 3),
        ],
        Numbering::Consecutive,
    )
}

/// The 24-core Atom server of seed 002: 6 clusters of 4 sharing an L2.
fn atom24() -> Topology {
    machine(
        &[CoreGroup::new(CoreKind::Efficiency, 600, 24, 1, 4)],
        Numbering::Consecutive,
    )
}

/// Places `n` fresh tasks one after another, checking each decision; returns the CPUs.
fn place(topo: &Topology, config: &PolicyConfig, n: usize) -> (Vec<Placement>, CpuState) {
    let policy = Policy::new(topo, config).unwrap();
    let mut state = CpuState::all_idle(topo);
    let allowed = *topo.cpus();
    let mut out = Vec::new();
    for _ in 0..n {
        let task = TaskHints {
            allowed: &allowed,
            prev_cpu: None,
            util: 1024,
            sync_waker: None,
        };
        let p = rules::select_cpu(&policy, topo, &state, &task);
        check_placement(topo, &policy, &state, &task, &p).unwrap();
        if let Some(cpu) = p.cpu {
            state.occupy(topo, cpu);
        }
        out.push(p);
    }
    (out, state)
}

fn count_in(placements: &[Placement], set: &CpuSet) -> usize {
    placements
        .iter()
        .filter(|p| p.cpu.is_some_and(|c| set.contains(c)))
        .count()
}

fn balanced() -> PolicyConfig {
    PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    }
}

#[test]
fn lone_task_on_idle_hybrid_gets_a_p_core() {
    let topo = i7_13800h();
    for config in [PolicyConfig::default(), balanced()] {
        let (p, _) = place(&topo, &config, 1);
        assert_eq!(p[0].step, Step::IdlePCore);
        assert_eq!(
            topo.info(p[0].cpu.unwrap()).unwrap().kind,
            CoreKind::Performance
        );
    }
}

#[test]
fn ten_threads_split_six_p_two_two() {
    let topo = i7_13800h();
    for config in [PolicyConfig::default(), balanced()] {
        let (p, state) = place(&topo, &config, 10);
        let p_cores = topo.kind_mask(CoreKind::Performance);
        assert_eq!(count_in(&p, p_cores), 6);
        // One task per P-core: no SMT sibling used.
        assert!(p[..6].iter().all(|x| x.step == Step::IdlePCore));
        let clusters: Vec<u16> = (0..topo.nr_clusters())
            .filter(|&c| topo.info(topo.cluster_cpus(c)[0]).unwrap().kind == CoreKind::Efficiency)
            .map(|c| state.cluster_busy(c))
            .collect();
        assert_eq!(clusters, [2, 2]);
    }
}

#[test]
fn fourteen_fill_cores_and_the_fifteenth_takes_a_sibling() {
    let topo = i7_13800h();
    let (p, state) = place(&topo, &balanced(), 15);
    assert_eq!(count_in(&p[..14], topo.kind_mask(CoreKind::Performance)), 6);
    let e: Vec<u16> = (6..topo.nr_clusters())
        .map(|c| state.cluster_busy(c))
        .collect();
    assert_eq!(e, [4, 4]);
    assert_eq!(p[14].step, Step::BusySibling);
    assert_eq!(
        topo.info(p[14].cpu.unwrap()).unwrap().kind,
        CoreKind::Performance
    );
}

#[test]
fn big_little_lone_task_gets_a_fast_cpu_and_five_get_one_each() {
    let topo = tc2();
    let (p, _) = place(&topo, &PolicyConfig::default(), 1);
    assert_eq!(topo.info(p[0].cpu.unwrap()).unwrap().capacity, 1024);
    let (p, state) = place(&topo, &PolicyConfig::default(), 5);
    assert!(p.iter().all(|x| x.cpu.is_some()));
    assert!(state.idle().is_empty(), "five tasks, five CPUs, one each");
    // The sixth has nowhere idle to go and is queued by the frontend.
    let (p, _) = place(&topo, &PolicyConfig::default(), 6);
    assert_eq!(p[5], Placement::NO_IDLE);
}

#[test]
fn six_tasks_on_24_atoms_spread_with_balance_and_pack_without() {
    let topo = atom24();
    let (_, on) = place(&topo, &balanced(), 6);
    assert!(
        (0..6).all(|c| on.cluster_busy(c) == 1),
        "one per cluster with balance on"
    );
    let off = PolicyConfig {
        cluster_balance: ClusterBalance::Off,
        ..PolicyConfig::default()
    };
    let (_, packed) = place(&topo, &off, 6);
    let busy: Vec<u16> = (0..6).map(|c| packed.cluster_busy(c)).collect();
    assert_eq!(busy, [4, 2, 0, 0, 0, 0]);
}

#[test]
fn auto_balance_spreads_at_moderate_load_and_stops_near_full() {
    let topo = atom24();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let (_, state) = place(&topo, &PolicyConfig::default(), 12);
    assert!((0..6).all(|c| state.cluster_busy(c) == 2));
    assert!(policy.balance_active(&topo, &state));
    let (_, full) = place(&topo, &PolicyConfig::default(), 18);
    assert!(
        !policy.balance_active(&topo, &full),
        "18 of 24 busy is the 75% default"
    );
}

#[test]
fn primary_domain_keeps_tasks_until_it_is_busy() {
    let topo = i7_13800h();
    let config = PolicyConfig {
        primary_domain: PrimaryDomain::Performance,
        ..balanced()
    };
    let (p, _) = place(&topo, &config, 14);
    // All 12 P CPUs (siblings included) before any E-core, then overflow.
    assert!(
        p[..12]
            .iter()
            .all(|x| !x.is_overflow() && x.cpu.unwrap().0 < 12)
    );
    assert!(
        p[12..]
            .iter()
            .all(|x| x.is_overflow() && x.cpu.unwrap().0 >= 12)
    );
    let powersave = PolicyConfig {
        primary_domain: PrimaryDomain::Powersave,
        ..balanced()
    };
    let (p, _) = place(&topo, &powersave, 3);
    assert!(
        p.iter()
            .all(|x| x.cpu.unwrap().0 >= 12 && x.step == Step::IdleECore)
    );
}

#[test]
fn primary_domain_from_the_seed_masks() {
    let topo = i7_13800h();
    let p: PrimaryDomain = "0x00fff".parse().unwrap();
    assert_eq!(
        p.resolve(&topo).unwrap(),
        *topo.kind_mask(CoreKind::Performance)
    );
    let e: PrimaryDomain = "0xff000".parse().unwrap();
    assert_eq!(
        e.resolve(&topo).unwrap(),
        *topo.kind_mask(CoreKind::Efficiency)
    );
}

#[test]
fn whole_machine_fill_follows_the_order() {
    for topo in [i7_13800h(), tc2(), atom24()] {
        let policy = Policy::new(&topo, &balanced()).unwrap();
        let checked = check_fill(&topo, &policy).unwrap();
        let mut order = [Placement::NO_IDLE; 32];
        let n = policy.fill_order(&topo, 0, &mut order);
        assert_eq!(&order[..n], &checked[..]);
    }
    // The order printed for the i7-13800H: P-cores, E-cores alternating clusters, siblings.
    let topo = i7_13800h();
    let policy = Policy::new(&topo, &balanced()).unwrap();
    let mut order = [Placement::NO_IDLE; 20];
    assert_eq!(policy.fill_order(&topo, 0, &mut order), 20);
    let cpus: Vec<u16> = order.iter().map(|p| p.cpu.unwrap().0).collect();
    assert_eq!(
        cpus,
        [
            0, 2, 4, 6, 8, 10, 12, 16, 13, 17, 14, 18, 15, 19, 1, 3, 5, 7, 9, 11
        ]
    );
}

#[test]
fn previous_core_is_preferred_while_it_is_idle() {
    let topo = i7_13800h();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let state = CpuState::all_idle(&topo);
    let allowed = *topo.cpus();
    let task = TaskHints {
        allowed: &allowed,
        prev_cpu: Some(CpuId(7)),
        util: 300,
        sync_waker: None,
    };
    assert_eq!(
        rules::select_cpu(&policy, &topo, &state, &task).cpu,
        Some(CpuId(7))
    );
    // A task that last ran on an E-core still moves to an idle P-core.
    let task = TaskHints {
        allowed: &allowed,
        prev_cpu: Some(CpuId(13)),
        util: 300,
        sync_waker: None,
    };
    assert_eq!(
        rules::select_cpu(&policy, &topo, &state, &task).step,
        Step::IdlePCore
    );
}
