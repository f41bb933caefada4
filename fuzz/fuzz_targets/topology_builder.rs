//! Arbitrary sequences of builder calls, contradictory ones included: each call either takes
//! effect or returns the typed error a plain model predicts and leaves no trace; `build` either
//! refuses or returns a consistent machine on which the policy fills every CPU by the rules.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_fuzz::{BuilderOp, Call, KnobsInput, MAX_OPS, apply};
use hybridland_policy::testkit::{check_fill, check_lone_task};
use hybridland_policy::{
    CoreKind, CpuId, CpuSet, MAX_CAPACITY, MAX_CAPACITY_LEVELS, MAX_CPUS, Policy, Topology,
    TopologyBuilder, TopologyError,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    ops: Vec<BuilderOp>,
    knobs: KnobsInput,
}

/// What the builder has accepted so far, kept independently of it.
#[derive(Default)]
struct Model {
    described: CpuSet,
    grouped: [CpuSet; 4],
    capacities: Vec<u16>,
}

impl Model {
    /// Whether the builder must accept `call`.
    fn accepts(&self, call: &Call) -> bool {
        match call {
            Call::Cpu(cpu, _, cap, _) => {
                cpu.index() < MAX_CPUS
                    && !self.described.contains(*cpu)
                    && (1..=MAX_CAPACITY).contains(cap)
            }
            Call::Group(level, cpus) => {
                let mut seen = CpuSet::EMPTY;
                !cpus.is_empty()
                    && cpus.iter().all(|c| {
                        c.index() < MAX_CPUS
                            && self.described.contains(*c)
                            && !self.grouped[level.index()].contains(*c)
                            && seen.insert(*c)
                    })
            }
        }
    }

    fn record(&mut self, call: &Call) {
        match call {
            Call::Cpu(cpu, _, cap, _) => {
                self.described.insert(*cpu);
                if !self.capacities.contains(cap) {
                    self.capacities.push(*cap);
                }
            }
            Call::Group(level, cpus) => {
                for c in cpus {
                    self.grouped[level.index()].insert(*c);
                }
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let mut b = TopologyBuilder::new();
    let mut model = Model::default();
    let calls = input
        .ops
        .iter()
        .take(MAX_OPS)
        .flat_map(BuilderOp::calls)
        .take(4096);
    // Comparing whole builds is costly: check that refusals leave no trace for the first few.
    let mut trace_checks = 8;
    for call in calls {
        let expect_ok = model.accepts(&call);
        // Only keep a copy when the call should fail: a refused call must change nothing.
        let before = (!expect_ok && trace_checks > 0).then(|| {
            trace_checks -= 1;
            b.clone()
        });
        let got = apply(&mut b, &call);
        match (&got, expect_ok) {
            (Ok(()), true) => model.record(&call),
            (Err(e), false) => {
                assert!(!e.to_string().is_empty());
                if let Call::Cpu(cpu, ..) = call
                    && cpu.index() >= MAX_CPUS
                {
                    assert_eq!(
                        *e,
                        TopologyError::CpuOutOfRange {
                            cpu: u32::from(cpu.0)
                        }
                    );
                }
                if let Some(before) = before {
                    assert_eq!(
                        before.build(),
                        b.build(),
                        "refused {call:?} changed the builder"
                    );
                }
            }
            _ => panic!("{call:?}: model says ok={expect_ok}, builder said {got:?}"),
        }
    }
    let topo = match b.build() {
        Ok(topo) => topo,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            if model.described.is_empty() {
                assert_eq!(e, TopologyError::NoCpus);
            }
            return;
        }
    };
    assert!(!model.described.is_empty());
    assert!(model.capacities.len() <= MAX_CAPACITY_LEVELS);
    check_consistent(&topo, &model.described);

    let config = input.knobs.config(&topo);
    let Ok(policy) = Policy::new(&topo, &config) else {
        return;
    };
    // One checked decision costs O(CPUs^2) in the checkers and filling O(CPUs^4): keep them to
    // machines a fuzzer explores quickly (the placement target covers large ones).
    if topo.nr_cpus() <= 128
        && let Err(v) = check_lone_task(&topo, &policy)
    {
        panic!("{v}\n{topo:?}\n{config:?}");
    }
    if topo.nr_cpus() <= 32
        && let Err(v) = check_fill(&topo, &policy)
    {
        panic!("{v}\n{topo:?}\n{config:?}");
    }
});

/// The accepted machine agrees with what was described, and its groups nest.
fn check_consistent(topo: &Topology, described: &CpuSet) {
    assert_eq!(topo.cpus(), described);
    assert_eq!(topo.nr_cpus(), described.count());
    let kinds = CoreKind::ALL.map(|k| *topo.kind_mask(k));
    assert_eq!(kinds[0].or(&kinds[1]).or(&kinds[2]), *described);
    assert!(!kinds[0].intersects(&kinds[1]) && !kinds[1].intersects(&kinds[2]));
    assert!(!kinds[0].intersects(&kinds[2]));

    let mut in_core = CpuSet::EMPTY;
    for core in 0..topo.nr_cores() {
        let cpus = topo.core_cpus(core);
        assert!(!cpus.is_empty(), "core {core} is empty");
        let first = topo.info(cpus[0]).expect("core member is present");
        for &c in cpus {
            let info = topo.info(c).expect("core member is present");
            assert_eq!(usize::from(info.core), core);
            assert_eq!(info.kind, first.kind, "siblings of two kinds");
            assert_eq!(info.cluster, first.cluster, "core split across clusters");
            assert!(in_core.insert(c), "cpu {c} in two cores");
            assert_eq!(topo.siblings(c), cpus);
        }
    }
    assert_eq!(in_core, *described);
    let mut in_cluster = CpuSet::EMPTY;
    for cluster in 0..topo.nr_clusters() {
        let cpus = topo.cluster_cpus(cluster);
        assert!(!cpus.is_empty(), "cluster {cluster} is empty");
        let llc = topo.info(cpus[0]).map(|i| i.llc);
        for &c in cpus {
            let info = topo.info(c).expect("cluster member is present");
            assert_eq!(usize::from(info.cluster), cluster);
            assert_eq!(Some(info.llc), llc, "cluster split across LLCs");
            assert!(in_cluster.insert(c), "cpu {c} in two clusters");
        }
        assert_eq!(topo.cluster_mask(cluster).count(), cpus.len());
    }
    assert_eq!(in_cluster, *described);
    for c in described.iter() {
        let info = topo.info(c).expect("described CPU is present");
        assert!((1..=MAX_CAPACITY).contains(&info.capacity));
        assert!(usize::from(info.llc) < topo.nr_llcs());
        assert!(usize::from(info.node) < topo.nr_nodes());
        assert!(topo.kind_mask(info.kind).contains(c));
    }
    let levels = topo.capacity_levels();
    assert!(!levels.is_empty() && levels.len() <= MAX_CAPACITY_LEVELS);
    assert!(levels.windows(2).all(|w| w[0] < w[1]));
    for &l in levels {
        let expect: CpuSet = described
            .iter()
            .filter(|c| topo.info(*c).is_some_and(|i| i.capacity >= l))
            .collect();
        assert_eq!(topo.at_least_capacity(l), expect);
    }
    assert!(topo.info(CpuId(u16::MAX)).is_none());
}
