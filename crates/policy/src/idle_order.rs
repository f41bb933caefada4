//! The wake-up placement decision: which idle CPU a task should run on.

use crate::cluster_balance::ClusterLoad;
use crate::config::{ConfigError, PolicyConfig};
use crate::cpu_set::{BitSet, CpuId, CpuSet};
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
    /// For a synchronous wake-up (the waker sleeps right after it) whose waker's CPU has
    /// nothing else waiting: that CPU. The caller vouches for both; the policy's wake-affine
    /// rule ([`PolicyConfig::wake_affine`]) may take it.
    pub sync_waker: Option<CpuId>,
}

impl<'a> TaskHints<'a> {
    /// A task with no history: no previous CPU, utilisation 0.
    pub fn new(allowed: &'a CpuSet) -> Self {
        Self {
            allowed,
            prev_cpu: None,
            util: 0,
            sync_waker: None,
        }
    }
}

/// Which rule of the idle order chose the CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// The CPU of a waker that sleeps right after the wake-up ([`PolicyConfig::wake_affine`]):
    /// busy at the question, free once the waker sleeps.
    WakerCpu,
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
    pub const ALL: [Self; 5] = [
        Self::WakerCpu,
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
            Self::WakerCpu => "waker-cpu",
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
    /// Where the CPU lies against the primary domain.
    pub reach: Reach,
}

/// Where a placement's CPU lies against the primary domain.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Inside the primary domain, or no CPU was chosen.
    Primary,
    /// Outside it: none of the primary domain's allowed CPUs was idle (an *overflow*).
    Overflow,
}

impl Placement {
    /// The CPU lies outside the primary domain.
    pub fn is_overflow(&self) -> bool {
        self.reach == Reach::Overflow
    }
}

impl Placement {
    /// Nothing allowed is idle.
    pub const NO_IDLE: Self = Self {
        cpu: None,
        step: Step::NoIdle,
        reach: Reach::Primary,
    };
}

/// The placement policy: the knobs, resolved against one topology.
///
/// The policy holds no per-task or per-CPU state; callers pass a [`CpuState`] snapshot and
/// update it themselves, so the same `Policy` serves a simulator stepping through virtual time
/// and a live loop reading the kernel's idle masks.
///
/// Decision order, restricted at every step to the task's allowed CPUs:
/// 0. wake-affine ([`PolicyConfig::wake_affine`]): a synchronous wake-up's waker's CPU
///    ([`TaskHints::sync_waker`]) when it is in the primary domain, fits the task (or the
///    task fits no CPU and it has the machine's top capacity) and some allowed CPU is idle;
/// 1. the primary domain's idle CPUs, or when none is idle the rest (an *overflow*);
/// 2. among those, the ones the task's utilisation fits, if any;
/// 3. then by [`Step`]: a fully idle P-core (the previous CPU's core first), an idle E-core,
///    an idle SMT sibling of a busy core;
/// 4. within a step: highest capacity, then (when cluster balance is active) the least busy
///    cluster by share of busy CPUs, then the previous CPU, then a CPU whose core is no task's
///    home ([`CpuState::move_home`]: tasks keep cores of their own rather than take each
///    other's),
///    then the highest rank, then the lowest id.
///
/// A decision costs a few passes over the set words that can hold the machine's CPUs (one
/// word up to 64 CPUs, sixteen at 1024); a cluster-balanced one adds a pass per rung of the
/// topology's load ladder (at most [`MAX_LOAD_LEVELS`](crate::MAX_LOAD_LEVELS); 5 on a
/// typical hybrid part) until one holds a candidate. Two cases also walk CPUs: when ranks
/// differ, the candidates left after those passes; and on a machine with no ladder (clusters
/// of 16 CPUs or more, or many different sizes), the idle CPUs of the winning capacity, one
/// cluster-load lookup per cluster met.
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
    /// Only the scheduler core asks it (tests: [`testkit::rules`](crate::testkit)).
    #[inline]
    pub(crate) fn select_cpu(
        &self,
        topo: &Topology,
        state: &CpuState,
        task: &TaskHints<'_>,
    ) -> Placement {
        // Idle CPUs are CPUs of `topo`, so every set the decision combines is empty past the
        // words that can hold them: work on just those words (one up to 64 CPUs), in a
        // fixed-size array the compiler keeps in registers.
        match topo.words() {
            0 | 1 => self.select::<1>(topo, state, task),
            2 => self.select::<2>(topo, state, task),
            3 | 4 => self.select::<4>(topo, state, task),
            5..=8 => self.select::<8>(topo, state, task),
            _ => self.select::<{ CpuSet::WORDS }>(topo, state, task),
        }
    }

    /// [`select_cpu`](Self::select_cpu) on the first `N` words of every set.
    #[inline]
    fn select<const N: usize>(
        &self,
        topo: &Topology,
        state: &CpuState,
        task: &TaskHints<'_>,
    ) -> Placement {
        let candidates = task.allowed.head::<N>().and(&state.idle().head());
        if candidates.is_empty() {
            return Placement::NO_IDLE;
        }
        if let Some(cpu) = self.waker_target(topo, task) {
            return Placement {
                cpu: Some(cpu),
                step: Step::WakerCpu,
                reach: Reach::Primary,
            };
        }
        let in_primary = candidates.and(&self.primary.head());
        let (pool, reach) = if in_primary.is_empty() {
            (candidates, Reach::Overflow)
        } else {
            (in_primary, Reach::Primary)
        };
        let fits = topo.fitting(task.util, self.config.fit_margin_pct);
        let fitting = pool.and(&fits.head());
        let pool = if fitting.is_empty() { pool } else { fitting };

        let whole_core = pool.and(&state.idle_cores().head());
        let p_cores = whole_core.and(&topo.kind_mask(CoreKind::Performance).head());
        let (set, step) = if !p_cores.is_empty() {
            (p_cores, Step::IdlePCore)
        } else if !whole_core.is_empty() {
            (whole_core, Step::IdleECore)
        } else {
            (pool, Step::BusySibling)
        };
        let balance = self.balance_active(topo, state);
        let cpu = pick(topo, state, &set, step, task.prev_cpu, balance);
        Placement {
            cpu: Some(cpu),
            step,
            reach,
        }
    }
}

impl Policy {
    /// The wake-affine rule's CPU for `task`, once some allowed CPU is known idle: its
    /// synchronous waker's CPU when the rule is on and that CPU is allowed, in the primary
    /// domain and fits the task (or the task fits no CPU and it has the top capacity).
    #[inline]
    fn waker_target(&self, topo: &Topology, task: &TaskHints<'_>) -> Option<CpuId> {
        let cpu = task.sync_waker.filter(|_| self.config.wake_affine)?;
        let info = topo.info(cpu)?;
        if !task.allowed.contains(cpu) || !self.primary.contains(cpu) {
            return None;
        }
        let margin = u32::from(self.config.fit_margin_pct);
        let fits = |cap: u16| u32::from(task.util) * 100 <= u32::from(cap) * margin;
        let top = topo.capacity_levels().last().copied().unwrap_or(0);
        (fits(info.capacity) || (!fits(top) && info.capacity == top)).then_some(cpu)
    }
}

/// The best CPU of a non-empty `set` whose members all qualify for `step`.
#[inline]
fn pick<const N: usize>(
    topo: &Topology,
    state: &CpuState,
    set: &BitSet<N>,
    step: Step,
    prev: Option<CpuId>,
    balance: bool,
) -> CpuId {
    if step == Step::IdlePCore
        && let Some(prev) = prev
    {
        if set.contains(prev) {
            return prev;
        }
        if let Some(&s) = topo.siblings(prev).iter().find(|s| set.contains(**s)) {
            return s;
        }
    }
    // The members of the highest capacity among them.
    let top = topo
        .at_least_levels()
        .iter()
        .rev()
        .map(|level| set.and(&level.head()))
        .find(|m| !m.is_empty())
        .unwrap_or(BitSet::EMPTY);
    if !balance {
        return best_of_equals(topo, state, &top, prev);
    }
    let by_load = state.by_load(topo);
    if !by_load.is_empty() {
        // The members in the least busy clusters: the first rung of the ladder that holds
        // any. They tie on load, so only the previous CPU, rank and id remain.
        let least = by_load
            .iter()
            .map(|rung| top.and(&rung.head()))
            .find(|m| !m.is_empty())
            .unwrap_or(top);
        return best_of_equals(topo, state, &least, prev);
    }
    // No ladder on this machine: find the least cluster load one idle CPU at a time, then
    // keep the CPUs at it (CPUs of one cluster usually come together, so loads are cached).
    let mut loads = ClusterLoads::new(topo, state);
    let mut least: Option<ClusterLoad> = None;
    for cpu in top.iter() {
        let load = loads.of(cpu);
        if least.is_none_or(|l| load < l) {
            least = Some(load);
            if load.is_empty() {
                break;
            }
        }
    }
    let mut equals = BitSet::<N>::EMPTY;
    for cpu in top.iter() {
        if Some(loads.of(cpu)) == least {
            equals.insert(cpu);
        }
    }
    best_of_equals(topo, state, &equals, prev)
}

/// The best of CPUs that tie on capacity, step and (when balancing) cluster load: the previous
/// CPU, then one whose core is no task's home, then the highest rank, then the lowest id.
#[inline]
fn best_of_equals<const N: usize>(
    topo: &Topology,
    state: &CpuState,
    top: &BitSet<N>,
    prev: Option<CpuId>,
) -> CpuId {
    if let Some(p) = prev.filter(|p| top.contains(*p)) {
        return p;
    }
    let free = top.and_not(&state.homes().head());
    let top = if free.is_empty() { top } else { &free };
    if topo.uniform_rank() {
        return top.first().unwrap_or(CpuId(0));
    }
    let mut cpus = top.iter();
    let Some(mut best) = cpus.next() else {
        return CpuId(0);
    };
    for cpu in cpus {
        if better(topo, cpu, best) {
            best = cpu;
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

    /// The load of the cluster holding `cpu`, a CPU of the machine.
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

/// Whether `a` beats `b` among CPUs that tie on everything but rank (`b` has the lower id).
#[inline]
fn better(topo: &Topology, a: CpuId, b: CpuId) -> bool {
    topo.info_of(a).rank > topo.info_of(b).rank
}
