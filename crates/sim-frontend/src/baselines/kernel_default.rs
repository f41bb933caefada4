//! What the kernel's default scheduler (the fair class, CFS/EEVDF) does when a task wakes, as
//! `select_task_rq_fair` and `select_idle_sibling` in `kernel/sched/fair.c` (Linux 6.x) are
//! written, so a comparison against "the kernel" is against its documented wake-up path rather
//! than a worst case such as `spread` (a random idle CPU) or packing by lowest id.
//!
//! Modelled, in the kernel's order, for a wake-up of a task that ran before:
//!
//! 1. **wake-affine**: the waker's CPU becomes the target instead of the previous CPU when it
//!    is idle and shares the previous CPU's LLC (and the previous CPU is not idle), as
//!    `wake_affine_idle` decides; otherwise the target is the previous CPU;
//! 2. **the target**, if idle (and, with asymmetric capacity, the task fits it). The kernel
//!    next tries the previous CPU when the target is the waker's; with only `wake_affine_idle`
//!    deciding, the waker's CPU is the target only while the previous CPU is busy, so that
//!    step never applies here;
//! 3. **the recently used CPU** (the previous CPU of the wake-up before), if idle, allowed and
//!    cache-affine with the target;
//! 4. with **asymmetric capacity** (`select_idle_capacity`): the first idle allowed CPU, from
//!    the target on, that the task fits (utilisation below 80% of its capacity), else the idle
//!    CPU of most capacity; SMT plays no part there, as in the kernel;
//! 5. otherwise, within the target's LLC: when no whole core is idle, **an idle SMT sibling
//!    of the previous CPU** (`select_idle_smt`); then from the CPU after the target on,
//!    **the first whole idle core** when one exists (`select_idle_core`), else **the first idle
//!    CPU** (`select_idle_cpu`);
//! 6. nothing idle: the task queues on the target.
//!
//! A task's first wake-up has no previous CPU and takes the fork path
//! (`sched_balance_find_dst_cpu`): the core with the most idle allowed CPUs, the parent's core
//! on a tie, else the lowest id after it, and its lowest idle CPU. The parent (the launcher)
//! runs on a CPU drawn once per replay from the trace's seed, as `capacity-blind` draws its
//! start. At a slice end the task stays on its CPU (the kernel does not re-place a running
//! task), except for two moves the load balancer makes: with asymmetric capacity a task that
//! no longer fits its CPU moves to an idle CPU of more capacity (misfit migration), and a task
//! sharing its core with another busy thread moves to a whole idle core (lowest id first; with
//! asymmetric capacity not to a less capable one).
//!
//! Left out, and why: the energy-aware path (`find_energy_efficient_cpu`, only with an energy
//! model; the model has no performance domains); `wake_wide` and `WA_WEIGHT`'s load comparison
//! (no waker-wakee statistics, no load averages); `SIS_UTIL`'s limit on the LLC scan (the
//! scan here always finds an idle CPU that exists); cluster scheduling's cluster-first scan;
//! the per-CPU-kthread and sync shortcuts; idle-state depth and recency tie-breaks in the fork
//! path; and the load balancer other than the misfit move and an idle CPU pulling a waiting
//! task (x86 ITMT asym packing, which pulls running tasks from E- to P-cores on hybrid Intel
//! parts, is not modelled). A wake-up by another task (a trace's `wake` relation: rt-app's
//! `resume`/`signal`, a recording's waker) has the waker's CPU as the wake-affine candidate;
//! every other wake-up is a timer or a frame release, which fires on the CPU that armed it,
//! the one the task slept on, so the previous CPU stands for the waker and step 1 keeps the
//! task there.
//!
//! Asymmetric capacity follows the kernel's `sched_asym_cpucap_active()`: on when CPUs of
//! different capacities exist (arm64 with firmware capacities; x86 hybrid parts once
//! intel_pstate reports per-CPU capacities), unless `kernel_asym_capacity=off` asks for the
//! symmetric path that x86 hybrid kernels took before that, with capacity unknown at wake-up.

use super::{policy_rng, pull_from_busiest};
use crate::asym_capacity::AsymCapacity;
use crate::sim_policy::{
    Decision, Destination, MachineView, Move, PolicyError, QueuedTask, Reason, SimPolicy, TaskView,
};
use hybridland_policy::{CpuId, CpuSet, CpuState, Topology};

/// Which step of the kernel's path chose the CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelStep {
    /// First wake-up: the fork path's idlest core.
    Fork,
    /// The wake-affine target (the waker's CPU) was idle.
    WakerCpu,
    /// The previous CPU, the target, was idle.
    PrevCpu,
    /// The recently used CPU was idle.
    RecentCpu,
    /// Asymmetric capacity: an idle CPU the task fits, or the idle CPU of most capacity.
    IdleCapacity,
    /// An idle SMT sibling of the previous CPU, no whole core being idle.
    IdleSmtSibling,
    /// A whole idle core in the LLC.
    IdleCore,
    /// An idle CPU in the LLC.
    IdleCpu,
    /// Nothing idle found: the task queues on the target.
    Busy,
    /// Slice end: stays on its CPU.
    Stay,
    /// Slice end: a misfit task moves to an idle CPU of more capacity.
    Misfit,
    /// Slice end: a task sharing its core with another busy thread moves to a whole idle core.
    SmtBalance,
}

/// A wake-up as the kernel's path sees it.
#[derive(Copy, Clone, Debug)]
pub struct Wakeup<'a> {
    /// CPUs the task may run on.
    pub allowed: &'a CpuSet,
    /// The CPU it last ran on.
    pub prev: CpuId,
    /// The CPU the wake-up comes from, if known and not `prev`.
    pub waker: Option<CpuId>,
    /// The previous CPU of the wake-up before this one.
    pub recent: Option<CpuId>,
    /// Utilisation, 0..=1024.
    pub util: u16,
    /// Whether the asymmetric-capacity path is active.
    pub asym: bool,
}

/// The kernel's `fits_capacity`: utilisation below 80% of the capacity.
pub fn fits(util: u16, capacity: u16) -> bool {
    u32::from(util) * 1280 < u32::from(capacity) * 1024
}

fn capacity(topo: &Topology, cpu: CpuId) -> u16 {
    topo.info(cpu).map_or(0, |i| i.capacity)
}

fn same_llc(topo: &Topology, a: CpuId, b: CpuId) -> bool {
    match (topo.info(a), topo.info(b)) {
        (Some(x), Some(y)) => x.llc == y.llc,
        _ => false,
    }
}

fn llc_mask(topo: &Topology, of: CpuId) -> CpuSet {
    let mut m = CpuSet::EMPTY;
    for c in topo.cpus().iter().filter(|c| same_llc(topo, *c, of)) {
        m.insert(c);
    }
    m
}

/// `set`'s CPUs in id order from `start` on, wrapping: `for_each_cpu_wrap`.
fn wrap_from(set: &CpuSet, start: u32) -> impl Iterator<Item = CpuId> + '_ {
    let after = set.iter().filter(move |c| u32::from(c.0) >= start);
    let before = set.iter().filter(move |c| u32::from(c.0) < start);
    after.chain(before)
}

fn core_idle(topo: &Topology, state: &CpuState, cpu: CpuId) -> bool {
    topo.siblings(cpu).iter().all(|s| state.is_idle(*s))
}

/// `wake_affine_idle`: the waker's CPU when it is idle and shares the previous CPU's cache
/// (unless the previous CPU is idle too), else the previous CPU.
pub fn wake_affine(topo: &Topology, state: &CpuState, waker: CpuId, prev: CpuId) -> CpuId {
    if state.is_idle(waker) && same_llc(topo, waker, prev) && !state.is_idle(prev) {
        waker
    } else {
        prev
    }
}

/// `select_task_rq_fair` + `select_idle_sibling` for a wake-up: the CPU and the step, or
/// `None` with [`KernelStep::Busy`] and the target to queue on.
pub fn select_wakeup(topo: &Topology, state: &CpuState, w: &Wakeup<'_>) -> (CpuId, KernelStep) {
    let idle = |c: CpuId| state.is_idle(c) && w.allowed.contains(c);
    let fits_cpu = |c: CpuId| !w.asym || fits(w.util, capacity(topo, c));
    let target = match w.waker.filter(|c| w.allowed.contains(*c) && *c != w.prev) {
        Some(waker) => wake_affine(topo, state, waker, w.prev),
        None => w.prev,
    };
    if idle(target) && fits_cpu(target) {
        let step = if target == w.prev {
            KernelStep::PrevCpu
        } else {
            KernelStep::WakerCpu
        };
        return (target, step);
    }
    if let Some(recent) = w.recent.filter(|r| {
        *r != w.prev && *r != target && same_llc(topo, *r, target) && idle(*r) && fits_cpu(*r)
    }) {
        return (recent, KernelStep::RecentCpu);
    }
    if w.asym {
        // The asymmetric domain spans every CPU; the first idle CPU the task fits from the
        // target on, else the idle CPU of most capacity (the first such on a tie).
        let mut best: Option<CpuId> = None;
        for c in wrap_from(w.allowed, u32::from(target.0)) {
            if !state.is_idle(c) {
                continue;
            }
            if fits(w.util, capacity(topo, c)) {
                return (c, KernelStep::IdleCapacity);
            }
            if best.is_none_or(|b| capacity(topo, c) > capacity(topo, b)) {
                best = Some(c);
            }
        }
        return match best {
            Some(c) => (c, KernelStep::IdleCapacity),
            None => (target, KernelStep::Busy),
        };
    }
    let llc_all = llc_mask(topo, target);
    let llc = llc_all.and(w.allowed);
    // `test_idle_cores`: any whole idle core in the LLC, allowed or not.
    let has_idle_core = topo.has_smt()
        && llc_all
            .iter()
            .any(|c| state.is_idle(c) && core_idle(topo, state, c));
    if topo.has_smt()
        && !has_idle_core
        && same_llc(topo, w.prev, target)
        && let Some(s) = topo
            .siblings(w.prev)
            .iter()
            .copied()
            .find(|s| *s != w.prev && llc.contains(*s) && state.is_idle(*s))
    {
        return (s, KernelStep::IdleSmtSibling);
    }
    let start = u32::from(target.0) + 1;
    if has_idle_core {
        let mut first_idle: Option<CpuId> = None;
        let mut seen = CpuSet::EMPTY;
        for c in wrap_from(&llc, start) {
            if seen.contains(c) {
                continue;
            }
            for s in topo.siblings(c) {
                seen.insert(*s);
            }
            if core_idle(topo, state, c) {
                return (c, KernelStep::IdleCore);
            }
            if first_idle.is_none() {
                first_idle = topo
                    .siblings(c)
                    .iter()
                    .copied()
                    .find(|s| llc.contains(*s) && state.is_idle(*s));
            }
        }
        if let Some(c) = first_idle {
            return (c, KernelStep::IdleCpu);
        }
    } else if let Some(c) = wrap_from(&llc, start).find(|c| state.is_idle(*c)) {
        return (c, KernelStep::IdleCpu);
    }
    (target, KernelStep::Busy)
}

/// The fork path for a task's first wake-up: the core with the most idle allowed CPUs (the
/// parent's core on a tie with it, else the first from the parent's on), and its lowest idle
/// allowed CPU. The parent's CPU is busy forking, so it counts as busy and is taken only when
/// it is the one idle allowed CPU left; `None` when no allowed CPU is idle.
pub fn select_fork(
    topo: &Topology,
    state: &CpuState,
    allowed: &CpuSet,
    parent: CpuId,
) -> Option<CpuId> {
    let free = |c: CpuId| c != parent && allowed.contains(c) && state.is_idle(c);
    let idle_in = |c: CpuId| topo.siblings(c).iter().filter(|s| free(**s)).count();
    let local = topo.siblings(parent).first().copied();
    let mut best: Option<(usize, CpuId)> =
        local.filter(|l| idle_in(*l) > 0).map(|l| (idle_in(l), l));
    let mut seen = CpuSet::EMPTY;
    for c in wrap_from(topo.cpus(), u32::from(parent.0)) {
        if seen.contains(c) {
            continue;
        }
        for s in topo.siblings(c) {
            seen.insert(*s);
        }
        let n = idle_in(c);
        if n > 0 && best.is_none_or(|(bn, _)| n > bn) {
            best = Some((n, c));
        }
    }
    match best {
        Some((_, core)) => topo.siblings(core).iter().copied().find(|s| free(*s)),
        None => Some(parent).filter(|p| allowed.contains(*p) && state.is_idle(*p)),
    }
}

/// At a slice end with asymmetric capacity: an idle allowed CPU of more capacity than `cpu`
/// for a task that no longer fits `cpu`, the one of most capacity (lowest id on a tie).
pub fn misfit_target(
    topo: &Topology,
    state: &CpuState,
    allowed: &CpuSet,
    cpu: CpuId,
    util: u16,
) -> Option<CpuId> {
    let own = capacity(topo, cpu);
    if fits(util, own) {
        return None;
    }
    let mut best: Option<CpuId> = None;
    for c in allowed.and(state.idle()).iter() {
        if c != cpu
            && capacity(topo, c) > own
            && best.is_none_or(|b| capacity(topo, c) > capacity(topo, b))
        {
            best = Some(c);
        }
    }
    best
}

/// At a slice end: a whole idle allowed core for a task whose core has another busy thread,
/// the lowest id first, as the load balancer spreads tasks off busy SMT cores (the nohz idle
/// balance runs from the first idle CPU). With asymmetric capacity only to a core of at least
/// the task's capacity: the balancer does not move a task that has a CPU to itself to a less
/// capable one (`update_sd_pick_busiest`).
pub fn smt_balance_target(
    topo: &Topology,
    state: &CpuState,
    allowed: &CpuSet,
    cpu: CpuId,
    asym: bool,
) -> Option<CpuId> {
    let shared = topo
        .siblings(cpu)
        .iter()
        .any(|s| *s != cpu && !state.is_idle(*s));
    if !shared {
        return None;
    }
    let own = capacity(topo, cpu);
    allowed.and(state.idle()).iter().find(|c| {
        !topo.siblings(cpu).contains(c)
            && core_idle(topo, state, *c)
            && (!asym || capacity(topo, *c) >= own)
    })
}

/// The default scheduler's wake-up path.
#[derive(Clone, Debug)]
pub struct KernelDefault {
    asym_mode: AsymCapacity,
    asym: bool,
    parent: CpuId,
    /// Per task: the previous CPU of its last wake-up (`p->recent_used_cpu`).
    recent: Vec<Option<CpuId>>,
    /// Per step, how often it chose (for the tests and `describe`).
    steps: Vec<(KernelStep, u64)>,
}

impl KernelDefault {
    /// The path with asymmetric capacity `asym`.
    pub fn new(asym: AsymCapacity) -> Self {
        Self {
            asym_mode: asym,
            asym: false,
            parent: CpuId(0),
            recent: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// How often each step chose, in first-use order.
    pub fn step_counts(&self) -> &[(KernelStep, u64)] {
        &self.steps
    }

    fn count(&mut self, step: KernelStep) {
        match self.steps.iter_mut().find(|(s, _)| *s == step) {
            Some((_, n)) => *n += 1,
            None => self.steps.push((step, 1)),
        }
    }

    fn wakeup(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Destination {
        let topo = machine.topo;
        let state = machine.state;
        let any_idle = !task.allowed.and(state.idle()).is_empty();
        let Some(prev) = task.prev_cpu else {
            let cpu = select_fork(topo, state, task.allowed, self.parent);
            self.count(if cpu.is_some() {
                KernelStep::Fork
            } else {
                KernelStep::Busy
            });
            return cpu.map_or(Destination::QueueShared, Destination::Run);
        };
        if self.recent.len() <= task.id {
            self.recent.resize(task.id + 1, None);
        }
        let recent = self.recent[task.id].replace(prev);
        let w = Wakeup {
            allowed: task.allowed,
            prev,
            // A timer or frame release fires on the CPU the task slept on.
            waker: Some(task.waker_cpu.unwrap_or(prev)),
            recent,
            util: task.util,
            asym: self.asym,
        };
        let (cpu, step) = select_wakeup(topo, state, &w);
        self.count(step);
        if step != KernelStep::Busy {
            Destination::Run(cpu)
        } else if any_idle {
            // An idle allowed CPU the path did not look at (another LLC): wait on the target
            // until the balancer pulls the task.
            Destination::QueueOn(cpu)
        } else {
            // Nothing allowed is idle: the first CPU to go idle pulls it (newidle balance).
            Destination::QueueShared
        }
    }
}

impl Default for KernelDefault {
    fn default() -> Self {
        Self::new(AsymCapacity::Auto)
    }
}

impl SimPolicy for KernelDefault {
    fn name(&self) -> &str {
        "kernel-default"
    }

    fn describe(&self) -> String {
        format!(
            "kernel_asym_capacity={} ({}), parent on cpu {}",
            self.asym_mode.name(),
            if self.asym { "active" } else { "inactive" },
            self.parent
        )
    }

    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        let mut rng = policy_rng(seed);
        let nth = rng.below(topo.nr_cpus() as u32) as usize;
        self.parent = topo.cpus().iter().nth(nth).unwrap_or(CpuId(0));
        self.asym = self.asym_mode.active(topo);
        self.recent.clear();
        self.steps.clear();
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        if task.reason == Reason::Wakeup {
            return Decision::plain(self.wakeup(machine, task));
        }
        // A slice end: the kernel leaves a running task where it is (a preempted one goes
        // back to its own queue), unless the misfit balance moves it.
        let Some(prev) = task.prev_cpu else {
            return Decision::plain(Destination::QueueShared);
        };
        if self.asym
            && let Some(to) =
                misfit_target(machine.topo, machine.state, task.allowed, prev, task.util)
        {
            self.count(KernelStep::Misfit);
            return Decision::plain(Destination::Run(to));
        }
        if let Some(to) =
            smt_balance_target(machine.topo, machine.state, task.allowed, prev, self.asym)
        {
            self.count(KernelStep::SmtBalance);
            return Decision::plain(Destination::Run(to));
        }
        self.count(KernelStep::Stay);
        Decision::plain(Destination::Run(prev))
    }

    fn balance(&mut self, machine: &MachineView<'_>, queued: &[QueuedTask<'_>]) -> Vec<Move> {
        // An idle CPU pulls a task waiting on the busiest queue it may take one from.
        pull_from_busiest(machine, queued, |_, _| true)
    }
}
