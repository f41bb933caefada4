use super::machines::{CoreGroup, Numbering, machine};
use crate::{
    ClusterBalance, CoreKind, CpuId, CpuSet, CpuState, Policy, PolicyConfig, PrimaryDomain,
    TaskHints, Topology, WakeQuestion,
};
use proptest::prelude::*;
use std::vec::Vec;

fn ranks() -> impl Strategy<Value = Vec<u16>> {
    prop_oneof![3 => Just(Vec::new()), 1 => proptest::collection::vec(0u16..4, 1..4)]
}

fn numbering() -> impl Strategy<Value = Numbering> {
    prop_oneof![Just(Numbering::Consecutive), Just(Numbering::Split)]
}

/// Hybrid x86: P-cores with or without SMT, E-core clusters, optionally low-power E-cores.
fn hybrid() -> impl Strategy<Value = Vec<CoreGroup>> {
    (
        1usize..=8,
        1usize..=2,
        ranks(),
        0usize..=4,
        1usize..=4,
        400u16..=800,
        0usize..=2,
    )
        .prop_map(|(p, smt, ranks, e_clusters, e_size, e_cap, lp)| {
            let mut g = CoreGroup::new(CoreKind::Performance, 1024, p, smt, 1);
            g.ranks = ranks;
            let mut groups = std::vec![g];
            if e_clusters > 0 {
                groups.push(CoreGroup::new(
                    CoreKind::Efficiency,
                    e_cap,
                    e_clusters * e_size,
                    1,
                    e_size,
                ));
            }
            if lp > 0 {
                groups.push(CoreGroup::new(
                    CoreKind::LowPowerEfficiency,
                    e_cap / 2,
                    lp,
                    1,
                    lp,
                ));
            }
            groups
        })
}

/// Arm big.LITTLE: one cluster of fast cores, one of slow ones.
fn big_little() -> impl Strategy<Value = Vec<CoreGroup>> {
    (1usize..=4, 1usize..=4, 200u16..=700).prop_map(|(big, little, cap)| {
        std::vec![
            CoreGroup::new(CoreKind::Performance, 1024, big, 1, big),
            CoreGroup::new(CoreKind::Efficiency, cap, little, 1, little),
        ]
    })
}

/// Every core alike, clustered or not.
fn symmetric(max_cores: usize) -> impl Strategy<Value = Vec<CoreGroup>> {
    (1usize..=max_cores, 1usize..=2, 0usize..=4, ranks()).prop_map(|(cores, smt, per, ranks)| {
        let mut g = CoreGroup::new(CoreKind::Performance, 1024, cores, smt, per);
        g.ranks = ranks;
        std::vec![g]
    })
}

/// An all-E-core server like the 24-core Atom of seed 002.
fn atom_server() -> impl Strategy<Value = Vec<CoreGroup>> {
    (1usize..=8, 1usize..=4).prop_map(|(clusters, size)| {
        std::vec![CoreGroup::new(
            CoreKind::Efficiency,
            600,
            clusters * size,
            1,
            size
        )]
    })
}

/// Big machines up to the 1024-CPU limit: hybrid or symmetric.
fn large() -> impl Strategy<Value = Vec<CoreGroup>> {
    (64usize..=256, 1usize..=2, 0usize..=64).prop_map(|(p, smt, e_clusters)| {
        let mut groups = std::vec![CoreGroup::new(CoreKind::Performance, 1024, p, smt, 1)];
        let room = (1024 - p * smt) / 4;
        let e_clusters = e_clusters.min(room);
        if e_clusters > 0 {
            groups.push(CoreGroup::new(
                CoreKind::Efficiency,
                512,
                e_clusters * 4,
                1,
                4,
            ));
        }
        groups
    })
}

/// Valid topologies of every shape the policy meets: hybrid with SMT P-cores and E-clusters,
/// big.LITTLE, symmetric, three kinds, Atom servers, and large machines up to 1024 CPUs.
pub fn arb_topology() -> impl Strategy<Value = Topology> {
    arb_topology_sized(true)
}

/// Like [`arb_topology`]; `large` = false leaves out machines beyond 64 CPUs for expensive
/// properties.
pub fn arb_topology_sized(large_machines: bool) -> BoxedStrategy<Topology> {
    let shapes = if large_machines {
        prop_oneof![
            4 => hybrid(),
            2 => big_little(),
            2 => symmetric(16),
            2 => atom_server(),
            1 => large(),
            1 => Just(std::vec![CoreGroup::new(CoreKind::Performance, 1024, 512, 2, 0)]),
        ]
        .boxed()
    } else {
        prop_oneof![4 => hybrid(), 2 => big_little(), 2 => symmetric(16), 2 => atom_server()]
            .boxed()
    };
    (shapes, numbering())
        .prop_map(|(groups, n)| machine(&groups, n))
        .boxed()
}

/// Any valid set of knobs for `topo` (a primary domain that names no CPU falls back to all).
pub fn arb_config(topo: &Topology) -> impl Strategy<Value = PolicyConfig> + use<> {
    let cpus: Vec<CpuId> = topo.cpus().iter().collect();
    let n = cpus.len();
    let topo_for_resolve = topo.clone();
    let domain = prop_oneof![
        3 => Just(PrimaryDomain::All),
        1 => Just(PrimaryDomain::Performance),
        1 => Just(PrimaryDomain::Powersave),
        1 => proptest::collection::vec(any::<bool>(), n).prop_map(move |bits| {
            PrimaryDomain::Cpus(cpus.iter().zip(bits).filter(|(_, b)| *b).map(|(c, _)| *c).collect())
        }),
    ];
    let balance = prop_oneof![
        Just(ClusterBalance::Off),
        Just(ClusterBalance::On),
        Just(ClusterBalance::Auto)
    ];
    (
        domain,
        balance,
        0u8..=50,
        50u8..=100,
        50u8..=100,
        any::<bool>(),
    )
        .prop_map(move |(d, cb, lo, hi, fit, affine)| {
            let primary_domain = if d.resolve(&topo_for_resolve).is_ok() {
                d
            } else {
                PrimaryDomain::All
            };
            PolicyConfig {
                primary_domain,
                cluster_balance: cb,
                auto_low_busy_pct: lo,
                auto_high_busy_pct: hi,
                fit_margin_pct: fit,
                wake_affine: affine,
            }
        })
}

/// One placement question: a machine, its idle CPUs, a task and the knobs.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The machine.
    pub topology: Topology,
    /// Its idle CPUs.
    pub idle: CpuSet,
    /// The task's allowed CPUs (may miss every idle CPU, or be empty).
    pub allowed: CpuSet,
    /// The task's previous CPU.
    pub prev_cpu: Option<CpuId>,
    /// The task's utilisation.
    pub util: u16,
    /// The knobs (valid for the machine).
    pub config: PolicyConfig,
    /// CPUs that are other tasks' homes.
    pub homes: CpuSet,
    /// The CPU of a synchronous waker with nothing else waiting there, if any.
    pub sync_waker: Option<CpuId>,
}

impl Scenario {
    /// The CPU state the scenario describes.
    pub fn state(&self) -> CpuState {
        let mut state = CpuState::from_idle(&self.topology, &self.idle);
        for cpu in self.homes.iter() {
            state.move_home(&self.topology, None, cpu);
        }
        state
    }

    /// The policy for the scenario's knobs.
    ///
    /// # Panics
    /// Never for scenarios from [`arb_scenario`], whose knobs are valid by construction.
    pub fn policy(&self) -> Policy {
        Policy::new(&self.topology, &self.config).expect("arb_config gives valid knobs")
    }

    /// The wake-up as the fast path's walk is asked it, in `state` (the scenario's
    /// [`state`](Self::state)), with the class `policy` gives the task.
    pub fn wake_question<'a>(&'a self, policy: &Policy, state: &'a CpuState) -> WakeQuestion<'a> {
        WakeQuestion {
            free: state.idle(),
            allowed: &self.allowed,
            prev: self.prev_cpu,
            class: policy.class_of(&self.topology, self.util),
            homes: state.homes(),
            sync_waker: self.sync_waker,
        }
    }

    /// The task's hints.
    pub fn task(&self) -> TaskHints<'_> {
        TaskHints {
            allowed: &self.allowed,
            prev_cpu: self.prev_cpu,
            util: self.util,
            sync_waker: self.sync_waker,
        }
    }
}

fn subset(cpus: Vec<CpuId>, density: impl Strategy<Value = u8>) -> impl Strategy<Value = CpuSet> {
    let n = cpus.len();
    (density, proptest::collection::vec(any::<u8>(), n)).prop_map(move |(d, rolls)| {
        cpus.iter()
            .zip(rolls)
            .filter(|(_, r)| *r < d)
            .map(|(c, _)| *c)
            .collect()
    })
}

/// A placement question on any topology from [`arb_topology`]: idle states from nearly full
/// to nearly idle, affinities from everything to a few CPUs (sometimes none idle), any
/// previous CPU, any utilisation, any knobs.
pub fn arb_scenario() -> impl Strategy<Value = Scenario> {
    arb_topology().prop_flat_map(|topo| {
        let cpus: Vec<CpuId> = topo.cpus().iter().collect();
        let all = *topo.cpus();
        let idle = subset(cpus.clone(), any::<u8>());
        let allowed = prop_oneof![
            2 => Just(all),
            1 => subset(cpus.clone(), 1u8..=255),
        ];
        let homes = prop_oneof![
            1 => Just(CpuSet::EMPTY),
            2 => subset(cpus.clone(), any::<u8>()),
        ];
        let prev = proptest::option::of(proptest::sample::select(cpus.clone()));
        let sync_waker = proptest::option::of(proptest::sample::select(cpus));
        let util = prop_oneof![Just(0u16), 0u16..=1024, Just(1024u16)];
        let config = arb_config(&topo);
        (
            Just(topo),
            idle,
            allowed,
            prev,
            util,
            config,
            homes,
            sync_waker,
        )
            .prop_map(
                |(topology, idle, allowed, prev_cpu, util, config, homes, sync_waker)| Scenario {
                    topology,
                    idle,
                    allowed,
                    prev_cpu,
                    util,
                    config,
                    homes,
                    sync_waker,
                },
            )
    })
}
