//! `fill_order_of`: any policy's fill order is where the scheduler core itself sends new tasks
//! woken one after another on an idle machine, and hybridland's `Policy::fill_order` is the
//! same order.

use hybridland_policy::testkit::{CoreGroup, Numbering, machine};
use hybridland_policy::*;

/// i7-13800H: 6 P-cores with SMT (0-11), 8 E-cores in two clusters of 4 (12-19).
fn i7_13800h() -> Topology {
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, 6, 2, 1),
            CoreGroup::new(CoreKind::Efficiency, 600, 8, 1, 4),
        ],
        Numbering::Consecutive,
    )
}

/// Arm TC2: 2 fast A15s in one cluster, 3 slow A7s in another.
fn tc2() -> Topology {
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, 2, 1, 2),
            CoreGroup::new(CoreKind::Efficiency, 430, 3, 1, 3),
        ],
        Numbering::Consecutive,
    )
}

/// A server numbering SMT siblings apart (0 and 8 share a core).
fn split_server() -> Topology {
    machine(
        &[CoreGroup::new(CoreKind::Performance, 1024, 8, 2, 4)],
        Numbering::Split,
    )
}

fn machines() -> [Topology; 3] {
    [i7_13800h(), tc2(), split_server()]
}

/// Where a core running `policy` sends `n` new tasks, each queued alone and decided on a
/// snapshot in which the CPUs given to the earlier ones are busy.
fn core_places<P: PlacementPolicy>(topo: &Topology, policy: P, n: usize) -> Vec<(CpuId, Step)> {
    let all = *topo.cpus();
    let storage = vec![Slot::EMPTY; Slot::count_for(64)];
    let mut core =
        SchedCore::with_policy(topo.clone(), policy, CoreConfig::DEFAULT, storage).expect("a core");
    let mut idle = all;
    let mut placed = Vec::new();
    for i in 0..n {
        let now = TimeNs(1_000 + i as u64);
        let task = Queued {
            task: TaskId(100 + i as u32),
            life: Life::UNKNOWN,
            token: i as u32,
            arrival: Arrival::Wakeup { waker: None },
            cpu: None,
            last_run: None,
            weight: NICE_0_WEIGHT,
            affinity: Affinity::Cpus(&all),
            util: UtilSource::Estimate,
        };
        core.handle(now, Input::Queued(task)).unwrap();
        let snap = Snapshot {
            idle: &idle,
            queued: Some(&CpuSet::EMPTY),
            caller_cpu: None,
        };
        core.handle(now, Input::Snapshot(snap)).unwrap();
        let mut dispatch = None;
        while let Some(out) = core.poll() {
            if let Output::Dispatch(d) = out {
                dispatch = Some(d);
            }
        }
        let d = dispatch.expect("a dispatch for each task");
        let Target::Cpu(cpu) = d.target else {
            panic!("task {i} was not sent to a CPU: {d:?}");
        };
        idle.remove(cpu);
        placed.push((cpu, d.why.step().expect("a placement")));
    }
    placed
}

fn order_of<P: PlacementPolicy>(topo: &Topology, mut policy: P) -> Vec<(CpuId, Step)> {
    let mut out = vec![Placement::NO_IDLE; topo.nr_cpus()];
    let n = fill_order_of(&mut policy, topo, 0, &mut out);
    out[..n].iter().map(|p| (p.cpu.unwrap(), p.step)).collect()
}

#[test]
fn every_builtin_policys_fill_order_is_where_the_core_sends_new_tasks() {
    for topo in machines() {
        for b in Builtin::ALL {
            for seed in [0, 7] {
                let build = || b.build(&topo, &PolicyConfig::default(), seed).unwrap();
                let order = order_of(&topo, build());
                assert_eq!(
                    order.len(),
                    topo.nr_cpus(),
                    "{} fills the machine",
                    b.name()
                );
                assert_eq!(
                    order,
                    core_places(&topo, build(), topo.nr_cpus()),
                    "{} (seed {seed}) on {} CPUs",
                    b.name(),
                    topo.nr_cpus()
                );
            }
        }
    }
}

#[test]
fn hybridlands_own_fill_order_is_the_generic_one() {
    for topo in machines() {
        for balance in [
            ClusterBalance::Off,
            ClusterBalance::On,
            ClusterBalance::Auto,
        ] {
            let config = PolicyConfig {
                cluster_balance: balance,
                primary_domain: PrimaryDomain::Powersave,
                ..PolicyConfig::default()
            };
            let Ok(policy) = Policy::new(&topo, &config) else {
                continue;
            };
            for util in [0, 600, 1024] {
                let mut own = vec![Placement::NO_IDLE; topo.nr_cpus()];
                let mut generic = own.clone();
                let n = policy.fill_order(&topo, util, &mut own);
                let m = fill_order_of(&mut policy.clone(), &topo, util, &mut generic);
                assert_eq!((n, &own[..n]), (m, &generic[..m]), "{balance} util {util}");
                assert_eq!(n, topo.nr_cpus());
            }
        }
    }
}

/// The highest idle CPU first, labelled by `place_on`; or one fixed answer.
enum Toy {
    HighestFirst,
    Always(Option<CpuId>),
}

impl PlacementPolicy for Toy {
    fn name(&self) -> &str {
        "toy"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        match self {
            Self::HighestFirst => view.place_on(view.idle_allowed().iter().last()),
            Self::Always(cpu) => view.place_on(*cpu),
        }
    }
}

#[test]
fn a_policy_of_ones_own_gets_its_order_and_stops_where_it_leaves_cpus_idle() {
    let topo = tc2();
    let order = order_of(&topo, Toy::HighestFirst);
    let cpus: Vec<u16> = order.iter().map(|(c, _)| c.0).collect();
    assert_eq!(cpus, [4, 3, 2, 1, 0]);
    assert_eq!(order[0].1, Step::IdleECore);
    assert_eq!(order[3].1, Step::IdlePCore);
    assert_eq!(order, core_places(&topo, Toy::HighestFirst, 5));
    // A task placed nowhere, on a CPU the machine lacks, or on a busy CPU ends the order.
    assert!(order_of(&topo, Toy::Always(None)).is_empty());
    assert!(order_of(&topo, Toy::Always(Some(CpuId(9)))).is_empty());
    assert_eq!(order_of(&topo, Toy::Always(Some(CpuId(1)))).len(), 1);
    // Only as many as `out` holds.
    let mut two = [Placement::NO_IDLE; 2];
    assert_eq!(fill_order_of(&mut Toy::HighestFirst, &topo, 0, &mut two), 2);
    assert_eq!(two[1].cpu, Some(CpuId(3)));
}
