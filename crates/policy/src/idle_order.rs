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
        let candidates = and(&head::<N>(task.allowed), &head(state.idle()));
        if is_empty(&candidates) {
            return Placement::NO_IDLE;
        }
        let in_primary = and(&candidates, &head(&self.primary));
        let (pool, overflow) = if is_empty(&in_primary) {
            (candidates, true)
        } else {
            (in_primary, false)
        };
        let fits = topo.fitting(task.util, self.config.fit_margin_pct);
        let fitting = and(&pool, &head(&fits));
        let pool = if is_empty(&fitting) { pool } else { fitting };

        let whole_core = and(&pool, &head(state.idle_cores()));
        let p_cores = and(&whole_core, &head(topo.kind_mask(CoreKind::Performance)));
        let (set, step) = if !is_empty(&p_cores) {
            (p_cores, Step::IdlePCore)
        } else if !is_empty(&whole_core) {
            (whole_core, Step::IdleECore)
        } else {
            (pool, Step::BusySibling)
        };
        let balance = self.balance_active(topo, state);
        let cpu = pick(topo, state, &set, step, task.prev_cpu, balance);
        Placement {
            cpu: Some(cpu),
            step,
            overflow,
        }
    }
}

/// The first `N` words of a CPU set (bit `i` of word `w` is CPU `64 * w + i`).
type Words<const N: usize> = [u64; N];

#[inline]
fn head<const N: usize>(set: &CpuSet) -> Words<N> {
    let mut w = [0; N];
    w.copy_from_slice(&set.words()[..N]);
    w
}

#[inline]
fn and<const N: usize>(a: &Words<N>, b: &Words<N>) -> Words<N> {
    core::array::from_fn(|i| a[i] & b[i])
}

#[inline]
fn is_empty<const N: usize>(a: &Words<N>) -> bool {
    a.iter().all(|&w| w == 0)
}

#[inline]
fn contains<const N: usize>(a: &Words<N>, cpu: CpuId) -> bool {
    let i = cpu.index();
    i < N * 64 && (a[i / 64] >> (i % 64)) & 1 != 0
}

#[inline]
fn first<const N: usize>(a: &Words<N>) -> Option<CpuId> {
    Members::new(a).next()
}

/// Ascending iterator over the CPUs of a [`Words`].
struct Members<'a, const N: usize> {
    words: &'a Words<N>,
    word: usize,
    bits: u64,
}

impl<'a, const N: usize> Members<'a, N> {
    #[inline]
    fn new(words: &'a Words<N>) -> Self {
        Self {
            words,
            word: 0,
            bits: words[0],
        }
    }
}

impl<const N: usize> Iterator for Members<'_, N> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        while self.bits == 0 {
            if self.word + 1 >= N {
                return None;
            }
            self.word += 1;
            self.bits = self.words[self.word];
        }
        let bit = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        // word < N <= 16 and bit < 64: below MAX_CPUS, fits a u16.
        Some(CpuId((self.word * 64 + bit) as u16))
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

/// The best CPU of a non-empty `set` whose members all qualify for `step`.
#[inline]
fn pick<const N: usize>(
    topo: &Topology,
    state: &CpuState,
    set: &Words<N>,
    step: Step,
    prev: Option<CpuId>,
    balance: bool,
) -> CpuId {
    if step == Step::IdlePCore {
        if let Some(prev) = prev {
            if contains(set, prev) {
                return prev;
            }
            if let Some(&s) = topo.siblings(prev).iter().find(|s| contains(set, **s)) {
                return s;
            }
        }
    }
    // The members of the highest capacity among them.
    let top = topo
        .at_least_levels()
        .iter()
        .rev()
        .map(|level| and(set, &head(level)))
        .find(|m| !is_empty(m))
        .unwrap_or([0; N]);
    let prev_in_top = prev.filter(|p| contains(&top, *p));
    if !balance && topo.uniform_rank() {
        // Nothing left to compare but "previous CPU" and the id.
        return prev_in_top.or(first(&top)).unwrap_or(CpuId(0));
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
        for cpu in Members::new(&top) {
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
    let mut cpus = Members::new(&top);
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
