//! The wake-up placement decision: which idle CPU a task should run on.

use crate::cluster_balance::ClusterLoad;
use crate::config::{ConfigError, PolicyConfig};
use crate::cpu_set::{CpuId, CpuSet};
use crate::cpu_state::CpuState;
use crate::topology::{CoreKind, Topology};
use core::fmt;

/// What the policy needs to know about the task being placed.
#[derive(Copy, Clone, Debug)]
pub struct TaskHints<'a> {
    /// CPUs the task may run on (its affinity).
    pub allowed: &'a CpuSet,
    /// The CPU it last ran on, if any; its core is preferred while it qualifies (warm caches).
    pub prev_cpu: Option<CpuId>,
    /// Recent utilisation on the kernel's 0..=1024 scale (1024 = always running on the
    /// biggest CPU).
    pub util: u16,
}

impl<'a> TaskHints<'a> {
    /// A task with no history: no previous CPU, utilisation 0.
    pub fn new(allowed: &'a CpuSet) -> Self {
        Self {
            allowed,
            prev_cpu: None,
            util: 0,
        }
    }
}

/// Which rule of the idle order chose the CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A CPU of a fully idle performance core.
    IdlePCore,
    /// An idle efficiency (or low-power efficiency) core.
    IdleECore,
    /// An idle CPU whose SMT sibling is busy.
    BusySibling,
    /// No allowed CPU is idle: the caller queues the task.
    NoIdle,
}

impl Step {
    /// Every step, in the order the policy tries them.
    pub const ALL: [Self; 4] = [
        Self::IdlePCore,
        Self::IdleECore,
        Self::BusySibling,
        Self::NoIdle,
    ];

    /// Position in [`Step::ALL`], for per-step counters.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short name for stats and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::IdlePCore => "idle-p-core",
            Self::IdleECore => "idle-e-core",
            Self::BusySibling => "busy-sibling",
            Self::NoIdle => "no-idle",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The answer to one placement question.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Placement {
    /// The chosen idle CPU, or `None` when nothing allowed is idle.
    pub cpu: Option<CpuId>,
    /// The rule that chose it.
    pub step: Step,
    /// Whether the CPU lies outside the primary domain (none of the domain was idle).
    pub overflow: bool,
}

impl Placement {
    /// Nothing allowed is idle.
    pub const NO_IDLE: Self = Self {
        cpu: None,
        step: Step::NoIdle,
        overflow: false,
    };
}

/// The placement policy: the knobs, resolved against one topology.
///
/// The policy holds no per-task or per-CPU state; callers pass a [`CpuState`] snapshot and
/// update it themselves, so the same `Policy` serves a simulator stepping through virtual time
/// and a live loop reading the kernel's idle masks.
///
/// Decision order, restricted at every step to the task's allowed CPUs:
/// 1. the primary domain's idle CPUs, or when none is idle the rest (an *overflow*);
/// 2. among those, the ones the task's utilisation fits, if any;
/// 3. then by [`Step`]: a fully idle P-core (the previous CPU's core first), an idle E-core,
///    an idle SMT sibling of a busy core;
/// 4. within a step: highest capacity, then (when cluster balance is active) the least busy
///    cluster by share of busy CPUs, then the previous CPU, then the highest rank, then the
///    lowest id.
///
/// A decision costs a few passes over the set words that can hold the machine's CPUs (one
/// word up to 64 CPUs, sixteen at 1024) plus, when ranks differ or clusters are balanced, one
/// pass over the idle CPUs of the winning capacity (one cluster-load lookup per cluster met).
#[derive(Clone, Debug)]
pub struct Policy {
    config: PolicyConfig,
    primary: CpuSet,
}

impl Policy {
    /// Resolves `config` against `topo`.
    pub fn new(topo: &Topology, config: &PolicyConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let primary = config.primary_domain.resolve(topo)?;
        Ok(Self {
            config: *config,
            primary,
        })
    }

    /// The knobs in force.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The primary domain's CPUs.
    pub fn primary(&self) -> &CpuSet {
        &self.primary
    }

    /// Changes the cluster-balance mode (a runtime knob; no other state depends on it).
    pub fn set_cluster_balance(&mut self, mode: crate::ClusterBalance) {
        self.config.cluster_balance = mode;
    }

    /// Whether cluster balance applies in `state`.
    #[inline]
    pub fn balance_active(&self, topo: &Topology, state: &CpuState) -> bool {
        crate::cluster_balance::active(&self.config, topo, state)
    }

    /// Chooses an idle CPU for a task. Pure: the same inputs always give the same answer.
    #[inline]
    pub fn select_cpu(&self, topo: &Topology, state: &CpuState, task: &TaskHints<'_>) -> Placement {
        // Idle CPUs are CPUs of `topo`, so every set below is empty past the words that can
        // hold them: a 20-CPU machine combines one word per step, not sixteen.
        let words = topo.words();
        let candidates = task.allowed.and_upto(state.idle(), words);
        if candidates.is_empty_upto(words) {
            return Placement::NO_IDLE;
        }
        let in_primary = candidates.and_upto(&self.primary, words);
        let (pool, overflow) = if in_primary.is_empty_upto(words) {
            (candidates, true)
        } else {
            (in_primary, false)
        };
        let fitting = pool.and_upto(&topo.fitting(task.util, self.config.fit_margin_pct), words);
        let pool = if fitting.is_empty_upto(words) {
            pool
        } else {
            fitting
        };

        let whole_core = pool.and_upto(state.idle_cores(), words);
        let p_cores = whole_core.and_upto(topo.kind_mask(CoreKind::Performance), words);
        let (set, step) = if !p_cores.is_empty_upto(words) {
            (p_cores, Step::IdlePCore)
        } else if !whole_core.is_empty_upto(words) {
            (whole_core, Step::IdleECore)
        } else {
            (pool, Step::BusySibling)
        };
        let balance = self.balance_active(topo, state);
        let cpu = pick(topo, state, &set, words, step, task.prev_cpu, balance);
        Placement {
            cpu: Some(cpu),
            step,
            overflow,
        }
    }
}

impl Policy {
    /// The order in which this policy would fill an idle machine: tasks with no history and
    /// every CPU allowed, placed one after another until nothing is idle. Writes up to
    /// `out.len()` placements and returns how many it wrote; frontends print it to show users
    /// what the knobs mean on their machine.
    pub fn fill_order(&self, topo: &Topology, util: u16, out: &mut [Placement]) -> usize {
        let mut state = CpuState::all_idle(topo);
        let allowed = *topo.cpus();
        let task = TaskHints {
            allowed: &allowed,
            prev_cpu: None,
            util,
        };
        for (n, slot) in out.iter_mut().enumerate() {
            let p = self.select_cpu(topo, &state, &task);
            let Some(cpu) = p.cpu else { return n };
            state.occupy(topo, cpu);
            *slot = p;
        }
        out.len()
    }
}

/// The best CPU of a non-empty `set` (empty past `words`) whose members all qualify for
/// `step`.
#[inline]
fn pick(
    topo: &Topology,
    state: &CpuState,
    set: &CpuSet,
    words: usize,
    step: Step,
    prev: Option<CpuId>,
    balance: bool,
) -> CpuId {
    if step == Step::IdlePCore {
        if let Some(prev) = prev {
            if set.contains(prev) {
                return prev;
            }
            if let Some(&s) = topo.siblings(prev).iter().find(|s| set.contains(**s)) {
                return s;
            }
        }
    }
    let top = topo.top_capacity(set, words);
    let prev_in_top = prev.filter(|p| top.contains(*p));
    if !balance && topo.uniform_rank() {
        // Nothing left to compare but "previous CPU" and the id.
        return prev_in_top.or(top.first()).unwrap_or(CpuId(0));
    }
    let mut loads = ClusterLoads::new(topo, state);
    if balance && topo.uniform_rank() {
        // Rank never breaks a tie: the least busy cluster wins, the previous CPU among equals,
        // then the lowest id. An empty cluster cannot be beaten, so its first CPU (or the
        // previous CPU, when that is in one) ends the search.
        if let Some(p) = prev_in_top.filter(|p| loads.of(*p).is_empty()) {
            return p;
        }
        let mut best: Option<(CpuId, ClusterLoad)> = None;
        for cpu in top.iter_upto(words) {
            let load = loads.of(cpu);
            if load.is_empty() {
                return cpu;
            }
            match best {
                Some((_, b)) if load > b || (load == b && prev != Some(cpu)) => {}
                _ => best = Some((cpu, load)),
            }
        }
        return best.map_or(CpuId(0), |(cpu, _)| cpu);
    }
    let mut cpus = top.iter_upto(words);
    let Some(mut best) = cpus.next() else {
        return CpuId(0);
    };
    let mut best_load = balance.then(|| loads.of(best));
    for cpu in cpus {
        let load = balance.then(|| loads.of(cpu));
        if better(topo, cpu, best, prev, load.zip(best_load)) {
            best = cpu;
            best_load = load;
        }
    }
    best
}

/// Cluster loads for a pass over CPUs in id order: CPUs of one cluster usually come together,
/// so the last cluster's load is kept rather than looked up again.
struct ClusterLoads<'a> {
    topo: &'a Topology,
    state: &'a CpuState,
    cluster: u16,
    load: ClusterLoad,
}

impl<'a> ClusterLoads<'a> {
    fn new(topo: &'a Topology, state: &'a CpuState) -> Self {
        // No machine has u16::MAX clusters (at most one per CPU), so nothing is cached yet.
        Self {
            topo,
            state,
            cluster: u16::MAX,
            load: ClusterLoad { busy: 0, size: 0 },
        }
    }

    /// [`ClusterLoad::of`] for a CPU of the machine.
    #[inline]
    fn of(&mut self, cpu: CpuId) -> ClusterLoad {
        let cluster = self.topo.info_of(cpu).cluster;
        if cluster != self.cluster {
            let c = usize::from(cluster);
            self.cluster = cluster;
            self.load = ClusterLoad {
                busy: self.state.cluster_busy(c),
                size: self.topo.cluster_cpus(c).len() as u16,
            };
        }
        self.load
    }
}

/// Whether `a` beats `b` among CPUs of equal capacity and step (`b` has the lower id), given
/// their cluster loads when cluster balance is active.
#[inline]
fn better(
    topo: &Topology,
    a: CpuId,
    b: CpuId,
    prev: Option<CpuId>,
    loads: Option<(ClusterLoad, ClusterLoad)>,
) -> bool {
    if let Some((load_a, load_b)) = loads {
        match load_a.cmp(&load_b) {
            core::cmp::Ordering::Less => return true,
            core::cmp::Ordering::Greater => return false,
            core::cmp::Ordering::Equal => {}
        }
    }
    if prev == Some(a) {
        return true;
    }
    if prev == Some(b) {
        return false;
    }
    topo.info_of(a).rank > topo.info_of(b).rank
}
