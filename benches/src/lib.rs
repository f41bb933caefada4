//! Fixtures for the benchmarks: hybrid machines of 8 to 1024 CPUs, load levels, and the
//! placement questions asked of them. Everything is deterministic (a fixed SplitMix64 stream
//! picks which CPUs are busy), so every run measures the same decisions.

use hybridland_policy::testkit::rules;
use hybridland_policy::testkit::{CoreGroup, Numbering, machine};
use hybridland_policy::{
    Affinity, Arrival, ClusterBalance, CoreConfig, CoreKind, CpuId, CpuSet, CpuState, Dispatch,
    Input, LastRun, Life, Occupancy, Output, Policy, PolicyConfig, PrimaryDomain, Queued,
    SchedCore, Slot, Target, TaskHints, TaskId, TimeNs, Topology, UtilSource,
};

/// The machine sizes the benchmarks cover.
pub const SIZES: [usize; 5] = [8, 20, 64, 256, 1024];

/// A hybrid machine of `cpus` logical CPUs (one of [`SIZES`]): a quarter of the CPUs' worth of
/// P-cores with 2-way SMT (capacity 1024) and half the CPUs as E-cores (capacity 600) in
/// clusters of 4, numbered P first, siblings consecutive. 20 CPUs is the seeds' 6P+8E part.
///
/// # Panics
/// If `cpus` is not a multiple of 4 of at least 8 and at most 1024.
pub fn hybrid(cpus: usize) -> Topology {
    assert!(
        cpus.is_multiple_of(4) && (8..=1024).contains(&cpus),
        "no hybrid fixture of {cpus} CPUs"
    );
    let (p_cores, e_cores) = if cpus == 20 {
        (6, 8)
    } else {
        (cpus / 4, cpus / 2)
    };
    machine(
        &[
            CoreGroup::new(CoreKind::Performance, 1024, p_cores, 2, 1),
            CoreGroup::new(CoreKind::Efficiency, 600, e_cores, 1, 4),
        ],
        Numbering::Consecutive,
    )
}

/// How busy the machine is when a task wakes up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Load {
    /// About an eighth of the CPUs busy.
    NearlyIdle,
    /// Half the CPUs busy.
    Half,
    /// All but a sixteenth of the CPUs busy (at least one idle).
    NearlyFull,
}

impl Load {
    /// Every load, lightest first.
    pub const ALL: [Self; 3] = [Self::NearlyIdle, Self::Half, Self::NearlyFull];

    /// Name used in benchmark ids.
    pub const fn name(self) -> &'static str {
        match self {
            Self::NearlyIdle => "nearly-idle",
            Self::Half => "half-busy",
            Self::NearlyFull => "nearly-full",
        }
    }

    /// Busy CPUs out of `cpus`.
    pub fn busy(self, cpus: usize) -> usize {
        match self {
            Self::NearlyIdle => (cpus / 8).max(1),
            Self::Half => cpus / 2,
            Self::NearlyFull => cpus - (cpus / 16).max(1),
        }
    }
}

/// The SplitMix64 generator, so the busy CPUs are spread but the same on every run.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `count` CPUs of `from`, picked at random by a seeded shuffle.
pub fn pick(from: &CpuSet, count: usize, rng: &mut SplitMix) -> CpuSet {
    let mut cpus: Vec<CpuId> = from.iter().collect();
    for i in (1..cpus.len()).rev() {
        cpus.swap(i, rng.below(i + 1));
    }
    cpus.into_iter().take(count).collect()
}

/// One placement question, ready to ask.
#[derive(Clone, Debug)]
pub struct Case {
    /// The machine.
    pub topo: Topology,
    /// The policy with the case's knobs.
    pub policy: Policy,
    /// Which CPUs are busy.
    pub state: CpuState,
    /// The task's allowed CPUs (all of them).
    pub allowed: CpuSet,
    /// The task's previous CPU.
    pub prev_cpu: Option<CpuId>,
    /// The task's utilisation.
    pub util: u16,
}

impl Case {
    /// The question on `topo` with the `busy` CPUs busy, under `config`'s policy, for a task
    /// that may run anywhere, last ran on `prev_cpu` and uses 20% of a big core.
    fn new(topo: Topology, busy: &CpuSet, config: &PolicyConfig, prev_cpu: Option<CpuId>) -> Self {
        let state = CpuState::from_idle(&topo, &topo.cpus().and_not(busy));
        let policy = Policy::new(&topo, config).expect("valid knobs for a hybrid machine");
        Self {
            allowed: *topo.cpus(),
            topo,
            policy,
            state,
            prev_cpu,
            util: 200,
        }
    }

    /// The task.
    pub fn task(&self) -> TaskHints<'_> {
        TaskHints {
            allowed: &self.allowed,
            prev_cpu: self.prev_cpu,
            util: self.util,
            sync_waker: None,
        }
    }

    /// Asks the question once.
    pub fn decide(&self) -> hybridland_policy::Placement {
        rules::select_cpu(&self.policy, &self.topo, &self.state, &self.task())
    }
}

/// `core/wakeup`'s workload: the scheduler core on a [`Case`]'s machine with the case's busy
/// CPUs busy, and 1,000 tasks taking turns, so the storage lookups are not all one slot.
pub struct CoreWakeups {
    core: SchedCore<Vec<Slot>>,
    allowed: CpuSet,
    prev_cpu: Option<CpuId>,
    at: u64,
    task: u32,
}

impl CoreWakeups {
    /// The core for `case`, default knobs.
    pub fn new(case: &Case) -> Self {
        let mut core = SchedCore::new(
            case.topo.clone(),
            &PolicyConfig::default(),
            CoreConfig {
                occupancy: Occupancy::Tracked,
                ..CoreConfig::DEFAULT
            },
            vec![Slot::EMPTY; Slot::count_for(1_000)],
        )
        .expect("the benchmark machines fit the default knobs");
        for cpu in case.topo.cpus().iter().filter(|c| !case.state.is_idle(*c)) {
            let busy = Input::Started {
                task: TaskId(u32::MAX - 1),
                cpu,
            };
            core.handle(TimeNs(0), busy)
                .expect("a tracked core takes starts");
        }
        Self {
            core,
            allowed: case.allowed,
            prev_cpu: case.prev_cpu,
            at: 1_000_000,
            task: 0,
        }
    }

    /// One wake-up, as the simulator drives the core: the next task handed over
    /// ([`Input::Queued`]), its dispatch polled out (the estimator, the vtime credit, the slice
    /// and the idle order), and its run reported ([`Input::Stopped`], which frees its CPU
    /// again). Returns the dispatch.
    #[inline]
    pub fn step(&mut self) -> Option<Dispatch> {
        self.at += 10_000;
        self.task = (self.task + 1) % 1_000;
        let q = Queued {
            task: TaskId(self.task),
            life: Life::UNKNOWN,
            token: 0,
            arrival: Arrival::Wakeup { waker: None },
            cpu: self.prev_cpu,
            last_run: None,
            weight: 100,
            affinity: Affinity::Cpus(&self.allowed),
            util: UtilSource::Estimate,
        };
        let at = TimeNs(self.at);
        let _ = self
            .core
            .handle(at, Input::Queued(core::hint::black_box(q)));
        let d = match core::hint::black_box(self.core.poll()) {
            Some(Output::Dispatch(d)) => Some(d),
            _ => None,
        };
        if let Some(Dispatch {
            target: Target::Cpu(cpu),
            ..
        }) = d
        {
            let ran = LastRun {
                start_ns: self.at,
                stop_ns: self.at + 5_000,
            };
            let stopped = Input::Stopped {
                task: TaskId(self.task),
                cpu,
                run: ran,
                weight: 100,
            };
            let _ = self.core.handle(at, stopped);
        }
        d
    }
}

/// A wake-up on the `cpus`-CPU machine at `load`, default knobs (cluster balance `auto`) or the
/// P-cores as primary domain. The task may run anywhere, last ran on a random CPU (often busy
/// by now) and uses 20% of a big core, which fits every CPU.
pub fn wakeup(cpus: usize, load: Load, primary_p: bool) -> Case {
    let topo = hybrid(cpus);
    let mut rng = SplitMix(cpus as u64 * 31 + load as u64);
    let busy = pick(topo.cpus(), load.busy(cpus), &mut rng);
    let config = PolicyConfig {
        primary_domain: if primary_p {
            PrimaryDomain::Performance
        } else {
            PrimaryDomain::All
        },
        ..PolicyConfig::default()
    };
    let prev_cpu = topo.cpus().iter().nth(rng.below(cpus));
    Case::new(topo, &busy, &config, prev_cpu)
}

/// The cluster-balance question on the `cpus`-CPU machine: every P-core busy, every E-cluster
/// partly busy (1 to 3 of its 4 CPUs, so no cluster is empty and loads differ), cluster balance
/// `on`: the decision is step 2 and compares cluster loads across the idle E-cores.
pub fn balance_step2(cpus: usize) -> Case {
    let topo = hybrid(cpus);
    let mut rng = SplitMix(cpus as u64 * 131 + 7);
    let mut busy = *topo.kind_mask(CoreKind::Performance);
    for cluster in 0..topo.nr_clusters() {
        let members = topo.cluster_mask(cluster);
        if members.is_subset(topo.kind_mask(CoreKind::Efficiency)) {
            busy = busy.or(&pick(
                &members,
                1 + rng.below(members.count() - 1),
                &mut rng,
            ));
        }
    }
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    Case::new(topo, &busy, &config, Some(CpuId(0)))
}

/// A large workload as trace JSON: `specs` task entries of `copies` copies each, started
/// 10 ms apart, every task looping `loops` times over a short run and a short sleep (lengths
/// vary by entry), so a replay is dominated by wake-ups, completions and placements.
pub fn large_trace_json(specs: usize, copies: u32, loops: u32) -> String {
    let mut tasks = Vec::with_capacity(specs);
    for i in 0..specs {
        let run_ns = 100_000 + (i % 7) * 50_000;
        let sleep_ns = 500_000 + (i % 5) * 250_000;
        tasks.push(format!(
            r#"    {{"name": "t{i}", "copies": {copies}, "start_ns": {start}, "cache_sensitivity_pct": {cache},
      "phases": [{{"loop": {{"times": {loops}, "phases": [{{"run_ns": {run_ns}}}, {{"sleep_ns": {sleep_ns}}}]}}}}]}}"#,
            start = i * 10_000_000,
            cache = (i * 13) % 101,
        ));
    }
    format!(
        "{{\n  \"version\": 1,\n  \"name\": \"large\",\n  \"seed\": 42,\n  \"tasks\": [\n{}\n  ]\n}}\n",
        tasks.join(",\n")
    )
}

/// A trace for one big cluster: `background` insensitive tasks that each compute for 400 ms
/// (keeping that many CPUs of the cluster busy) beside [`large_trace_json`]'s `specs` x
/// `copies` run/sleep loopers of mixed cache sensitivity. Every looper event used to re-rate
/// every busy CPU of the cluster, each re-rating summing the whole cluster.
pub fn busy_cluster_trace_json(background: u32, specs: usize, copies: u32, loops: u32) -> String {
    let loopers = large_trace_json(specs, copies, loops);
    let background = format!(
        r#"    {{"name": "background", "copies": {background}, "phases": [{{"run_ns": 400000000}}]}},
"#
    );
    loopers.replacen(
        "  \"tasks\": [\n",
        &format!("  \"tasks\": [\n{background}"),
        1,
    )
}

/// The machine the simulator benchmarks run on: the 32-CPU Raptor Lake desktop preset.
pub const SIM_PRESET: &str = "rpl-desktop";

/// A valid machine of `cpus` identical E-cores (capacity 1024, no SMT) that all share one L2
/// cluster: the shape where per-event work would grow with the square of the cluster size if
/// every occupancy change re-rated the whole cluster.
///
/// # Panics
/// If the topology builder refuses it (`cpus` of 0 or beyond the policy crate's CPU limit).
pub fn single_cluster_machine(cpus: u16) -> hybridland_sim::Machine {
    let toml = format!(
        "name = \"one-cluster-{cpus}\"\n[[groups]]\nkind = \"efficiency\"\ncapacity = 1024\ncores = {cpus}\ncores_per_cluster = {cpus}\n"
    );
    hybridland_sim::Machine::from_toml_str(&toml, "one-cluster")
        .expect("one cluster of identical cores is a valid machine")
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::Step;
    use hybridland_policy::testkit::{check_placement, check_state};

    fn checked(case: &Case) -> hybridland_policy::Placement {
        check_state(&case.topo, &case.state).unwrap();
        let p = case.decide();
        check_placement(&case.topo, &case.policy, &case.state, &case.task(), &p).unwrap();
        p
    }

    #[test]
    fn large_trace_parses_with_the_tasks_asked_for() {
        let text = large_trace_json(10, 3, 2);
        let trace = hybridland_sim::Trace::from_json_str(&text, "large.json").unwrap();
        assert_eq!(trace.nr_tasks(), 30);
        let machine = hybridland_sim::presets::lookup(SIM_PRESET).unwrap();
        let knobs = hybridland_sim::Knobs::new();
        let report = hybridland_sim::replay(&machine, &trace, "hybridland", &knobs).unwrap();
        assert_eq!(report.summary.tasks_finished, 30);
        assert!(
            report.summary.events >= 30 * 2 * 2,
            "{} events",
            report.summary.events
        );
    }

    #[test]
    fn busy_cluster_trace_has_the_background_and_the_loopers() {
        let text = busy_cluster_trace_json(900, 16, 4, 2);
        let trace = hybridland_sim::Trace::from_json_str(&text, "busy.json").unwrap();
        assert_eq!(trace.nr_tasks(), 900 + 64);
        assert_eq!(trace.tasks[0].name, "background");
    }

    #[test]
    fn single_cluster_machine_is_one_cluster_of_every_cpu() {
        let m = single_cluster_machine(1024);
        assert_eq!(m.topology.nr_cpus(), 1024);
        assert_eq!(m.topology.nr_clusters(), 1);
        assert_eq!(m.topology.cluster_cpus(0).len(), 1024);
    }

    #[test]
    fn machines_have_the_sizes_they_are_named_for() {
        for cpus in SIZES {
            let topo = hybrid(cpus);
            assert_eq!(topo.nr_cpus(), cpus);
            let p = topo.kind_mask(CoreKind::Performance).count();
            let e = topo.kind_mask(CoreKind::Efficiency).count();
            assert_eq!(p + e, cpus);
            assert!(topo.has_smt() && topo.is_hybrid());
        }
        let seed_part = hybrid(20);
        assert_eq!(seed_part.kind_mask(CoreKind::Performance).count(), 12);
        assert_eq!(seed_part.nr_clusters(), 6 + 2);
    }

    #[test]
    fn loads_are_what_they_say_and_decisions_follow_the_rules() {
        for cpus in SIZES {
            for load in Load::ALL {
                for primary in [false, true] {
                    let case = wakeup(cpus, load, primary);
                    assert_eq!(case.state.nr_busy(), load.busy(cpus));
                    let p = checked(&case);
                    assert!(p.cpu.is_some(), "{cpus} {load:?}: some CPU is idle");
                }
            }
        }
    }

    #[test]
    fn balance_case_is_a_step_two_decision_across_busy_clusters() {
        for cpus in SIZES {
            let case = balance_step2(cpus);
            assert!(case.policy.balance_active(&case.topo, &case.state));
            for cluster in 0..case.topo.nr_clusters() {
                let size = case.topo.cluster_cpus(cluster).len();
                if size == 4 {
                    let busy = usize::from(case.state.cluster_busy(cluster));
                    assert!((1..4).contains(&busy), "cluster {cluster} has {busy} busy");
                }
            }
            assert_eq!(checked(&case).step, Step::IdleECore);
        }
    }
}
