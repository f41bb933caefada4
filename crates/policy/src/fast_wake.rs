//! The idle order as tables an in-kernel fast path walks.
//!
//! A live scheduler in user space pays a round trip per wake-up. Whenever an allowed CPU is
//! idle, the idle order's answer depends only on what the kernel can see at that moment (which
//! CPUs are free, the task's allowed CPUs and previous CPU) and on three things the core knows:
//! the task's [`TaskClass`] (which capacities its utilisation fits), the CPUs whose core is
//! some task's home, and the knobs. [`WakeTable`] lays the machine and the knobs out as plain
//! per-CPU facts and one ranked CPU array, and [`WakeTable::decide`] takes the idle order's
//! passes over them as operations on set words (the facts gathered into sets when the table is
//! built), so a wake-up's cost follows the machine's 64-bit words rather than its CPUs.
//! `scx_hybridland`'s `src/bpf/fast_wake_walk.h` takes the same passes in C one CPU at a
//! time over the per-CPU facts; that crate's tests build it for the host and hold it to
//! `decide`. The
//! table holds no rule of its own: the property test below holds `decide` to the idle order on
//! every scenario, and the live audit holds the kernel's walk to [`Policy::check_fast_wake`].
//!
//! What the walk cannot decide (nothing allowed is free) goes to the core as before.

use crate::cluster_balance;
use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use crate::cpu_state::CpuState;
use crate::idle_order::{Placement, Policy, Reach, Step, TaskHints};
use crate::topology::{CoreKind, Topology};
use sets::WalkSets;

mod sets;

/// Which capacities a task's utilisation fits, as the fast path knows a task: class `c` fits
/// the CPUs of capacity level `c` and above ([`Topology::capacity_levels`], ascending), and
/// class `nr_levels` fits none (the idle order then takes any idle CPU). A task the core has
/// never classed is class 0, the class of a task with no history (utilisation 0).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct TaskClass(pub u8);

/// The busy-CPU counts at which cluster balance is active: `from..until` (empty when never).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BalanceRange {
    /// The least busy count at which it is active.
    pub from: u32,
    /// The least busy count above `from` at which it is inactive again.
    pub until: u32,
}

impl BalanceRange {
    /// Whether balance is active with `busy` CPUs busy.
    #[inline]
    pub fn contains(&self, busy: u32) -> bool {
        busy >= self.from && busy < self.until
    }
}

/// One CPU as the walk reads it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeCpu {
    /// Whether the CPU belongs to the machine.
    pub present: bool,
    /// Its capacity level (index into [`Topology::capacity_levels`]).
    pub level: u8,
    /// A performance core's CPU.
    pub p_core: bool,
    /// In the primary domain.
    pub primary: bool,
    /// Its core (dense index).
    pub core: u16,
    /// Its cluster (dense index).
    pub cluster: u16,
}

/// The idle order for one policy on one machine, as per-CPU facts and a ranked CPU array.
#[derive(Clone, Debug)]
pub struct WakeTable {
    /// Per CPU id up to the machine's highest.
    pub cpus: [WakeCpu; MAX_CPUS],
    /// `cpus`' length that matters: the machine's highest CPU id plus one.
    pub nr_ids: u16,
    /// The machine's CPUs by capacity (highest first), then rank (highest first), then id.
    pub ranked: [CpuId; MAX_CPUS],
    /// The machine's CPU count.
    pub nr_cpus: u16,
    /// CPUs per cluster.
    pub cluster_size: [u16; MAX_CPUS],
    /// The machine's capacity levels: class `nr_levels` fits none.
    pub nr_levels: u8,
    /// When cluster balance is active.
    pub balance: BalanceRange,
    /// Whether the wake-affine rule is on ([`PolicyConfig::wake_affine`](crate::PolicyConfig::wake_affine)).
    pub wake_affine: bool,
    /// The same facts as sets, for the walk.
    sets: WalkSets,
}

/// A wake-up as the fast path sees it.
#[derive(Copy, Clone, Debug)]
pub struct WakeQuestion<'a> {
    /// The machine's free CPUs: idle, with nothing in their own queue.
    pub free: &'a CpuSet,
    /// The task's allowed CPUs.
    pub allowed: &'a CpuSet,
    /// The CPU it last ran on.
    pub prev: Option<CpuId>,
    /// Its class.
    pub class: TaskClass,
    /// CPUs whose core is some task's home ([`CpuState::homes`]).
    pub homes: &'a CpuSet,
    /// For a synchronous wake-up whose waker's CPU has nothing else waiting: that CPU
    /// ([`TaskHints::sync_waker`]).
    pub sync_waker: Option<CpuId>,
}

impl WakeTable {
    /// Whether `cpu` fits class `class`.
    #[inline]
    fn fits(&self, cpu: &WakeCpu, class: TaskClass) -> bool {
        class.0 < self.nr_levels && cpu.level >= class.0
    }

    /// The idle order's answer to `q`, in the passes the kernel's walk makes: nothing allowed
    /// free gives [`Placement::NO_IDLE`]. Each pass is a few operations on the machine's set
    /// words; what walks CPUs is the rank order when ranks differ (over the candidates left,
    /// as the idle order does), and whole cores or cluster loads on a machine whose SMT
    /// siblings or cluster mates lie at more than a few id distances.
    pub fn decide(&self, q: &WakeQuestion<'_>) -> Placement {
        let s = &self.sets;
        let cpus = &self.cpus[..usize::from(self.nr_ids)];
        // Pass 1: busy CPUs, and which pools hold a candidate.
        let busy = s.present.and_not(q.free);
        let candidates = s.present.and(q.free).and(q.allowed);
        if candidates.is_empty() {
            return Placement::NO_IDLE;
        }
        // Wake-affine: the synchronous waker's CPU, when it may take the task.
        if let Some(w) = q.sync_waker.filter(|_| self.wake_affine)
            && let Some(c) = cpus.get(w.index()).filter(|c| c.present)
            && q.allowed.contains(w)
            && c.primary
            && (self.fits(c, q.class)
                || (q.class.0 >= self.nr_levels && c.level + 1 == self.nr_levels))
        {
            return Placement {
                cpu: Some(w),
                step: Step::WakerCpu,
                reach: Reach::Primary,
            };
        }
        let in_primary = candidates.and(&s.primary);
        let (candidates, reach) = if in_primary.is_empty() {
            (candidates, Reach::Overflow)
        } else {
            (in_primary, Reach::Primary)
        };
        // Pass 2: the candidates that fit, if any; then the step.
        let fitting = candidates.and(s.fitting(q.class.0));
        let pool = if fitting.is_empty() {
            candidates
        } else {
            fitting
        };
        let whole = s.whole_cores(&pool, &busy, cpus);
        let p_whole = whole.and(&s.p_core);
        let (set, step) = if !p_whole.is_empty() {
            (p_whole, Step::IdlePCore)
        } else if !whole.is_empty() {
            (whole, Step::IdleECore)
        } else {
            (pool, Step::BusySibling)
        };
        let placed = |cpu: CpuId| Placement {
            cpu: Some(cpu),
            step,
            reach,
        };
        // A previous CPU the machine lacks is no CPU's sibling.
        let prev = q.prev.filter(|p| s.present.contains(*p));
        if step == Step::IdlePCore
            && let Some(p) = prev
        {
            if set.contains(p) {
                return placed(p);
            }
            if let Some(sibling) = s.sibling_in(p, &set, cpus) {
                return placed(sibling);
            }
        }
        // Pass 3: the highest capacity in the set, and the least cluster load at it.
        let Some((_, top)) = s.top_of(&set) else {
            return Placement::NO_IDLE;
        };
        let equal = if self.balance.contains(busy.count() as u32) {
            s.least_loaded(&top, &busy, cpus, &self.cluster_size)
        } else {
            top
        };
        // Pass 4: the previous CPU, then the first in rank order whose core is no home, then
        // the first.
        if let Some(p) = prev
            && equal.contains(p)
        {
            return placed(p);
        }
        match s
            .first_ranked(&equal.and_not(q.homes))
            .or_else(|| s.first_ranked(&equal))
        {
            Some(cpu) => placed(cpu),
            None => Placement::NO_IDLE,
        }
    }

    /// The pinned rule for a wake-up [`Self::decide`] finds nothing free for: the one CPU of
    /// the machine the task may use, when it is not free ([`pinned_cpu`]).
    pub fn pinned(&self, q: &WakeQuestion<'_>) -> Option<CpuId> {
        pinned_cpu(q.allowed)
            .filter(|&c| !q.free.contains(c) && self.cpus.get(c.index()).is_some_and(|w| w.present))
    }
}

/// The pinned rule: the CPU a woken task allowed on that CPU only takes when it finds it busy.
/// The task can run nowhere else, so it goes first in that CPU's queue and the task running
/// there ends its slice now ([`Target::Preempt`](crate::Target::Preempt)), as the kernel's own
/// scheduler lets a woken task that is owed time preempt one that has run. Left in the shared
/// queue, it waited for that task's slice to end, and beside CPU hogs that wait was the tail
/// of every pinned wake-up (cyclictest's threads are pinned). The core decides such a wake-up
/// so, and the live fast path decides it in the kernel ([`WakeTable::pinned`]).
pub fn pinned_cpu(allowed: &CpuSet) -> Option<CpuId> {
    if allowed.count() == 1 {
        allowed.first()
    } else {
        None
    }
}

impl Policy {
    /// The class of a task of utilisation `util` (0..=1024) on `topo`.
    pub fn class_of(&self, topo: &Topology, util: u16) -> TaskClass {
        let need = u32::from(util) * 100;
        let margin = u32::from(self.config().fit_margin_pct);
        let levels = topo.capacity_levels();
        let l = levels
            .iter()
            .position(|&l| u32::from(l) * margin >= need)
            .unwrap_or(levels.len());
        TaskClass(l as u8)
    }

    /// The highest utilisation of class `class` on `topo` (every utilisation of a class gets
    /// the same answers), for checking an answer made for a class.
    pub fn class_util(&self, topo: &Topology, class: TaskClass) -> u16 {
        let margin = u32::from(self.config().fit_margin_pct);
        match topo.capacity_levels().get(usize::from(class.0)) {
            Some(&l) => (u32::from(l) * margin / 100).min(1024) as u16,
            None => 1024,
        }
    }

    /// The table the fast path walks for this policy on `topo`.
    pub fn wake_table(&self, topo: &Topology) -> WakeTable {
        // Insertion into rank order: capacity, then rank, highest first; ids ascend on a tie.
        let mut ranked = [CpuId(0); MAX_CPUS];
        let key = |c: CpuId| {
            let i = topo.info_of(c);
            (u32::from(i.capacity) << 16) | u32::from(i.rank)
        };
        for (n, cpu) in topo.cpus().iter().enumerate() {
            let mut at = n;
            while at > 0 && key(ranked[at - 1]) < key(cpu) {
                ranked[at] = ranked[at - 1];
                at -= 1;
            }
            ranked[at] = cpu;
        }
        let nr_cpus = topo.nr_cpus();
        let mut t = WakeTable {
            cpus: [WakeCpu::default(); MAX_CPUS],
            nr_ids: topo.cpus().span() as u16,
            ranked,
            nr_cpus: nr_cpus as u16,
            cluster_size: [0; MAX_CPUS],
            nr_levels: topo.capacity_levels().len() as u8,
            balance: self.balance_range(topo),
            wake_affine: self.config().wake_affine,
            sets: WalkSets::new(topo, self.primary(), &ranked[..nr_cpus]),
        };
        let levels = topo.capacity_levels();
        for cpu in topo.cpus().iter() {
            let info = topo.info_of(cpu);
            t.cpus[cpu.index()] = WakeCpu {
                present: true,
                level: levels.iter().position(|&l| l == info.capacity).unwrap_or(0) as u8,
                p_core: info.kind == CoreKind::Performance,
                primary: self.primary().contains(cpu),
                core: info.core,
                cluster: info.cluster,
            };
        }
        for (c, size) in t.cluster_size[..topo.nr_clusters()].iter_mut().enumerate() {
            *size = topo.cluster_cpus(c).len() as u16;
        }
        t
    }

    /// Checks a wake-up a fast path placed on `cpu` against the idle order, as the core would
    /// decide it on the same inputs, and, when nothing allowed is free, against the pinned rule
    /// ([`pinned_cpu`]). `Err` holds the idle order's answer when it differs. For a live audit
    /// of the kernel side (`scx_hybridland --audit-fast-wake`).
    pub fn check_fast_wake(
        &self,
        topo: &Topology,
        q: &WakeQuestion<'_>,
        cpu: CpuId,
    ) -> Result<(), Placement> {
        let mut state = CpuState::from_idle(topo, q.free);
        for core in 0..topo.nr_cores() {
            if let Some(&first) = topo.core_cpus(core).first()
                && q.homes.contains(first)
            {
                state.move_home(topo, None, first);
            }
        }
        let task = TaskHints {
            allowed: q.allowed,
            prev_cpu: q.prev,
            util: self.class_util(topo, q.class),
            sync_waker: q.sync_waker,
        };
        let answer = self.select_cpu(topo, &state, &task);
        let pinned = || pinned_cpu(q.allowed) == Some(cpu) && !q.free.contains(cpu);
        if answer.cpu == Some(cpu) || (answer.cpu.is_none() && pinned()) {
            Ok(())
        } else {
            Err(answer)
        }
    }

    /// The busy counts at which cluster balance is active on `topo`, as the kernel side tests
    /// them.
    pub fn balance_range(&self, topo: &Topology) -> BalanceRange {
        // The rule's verdict at each busy count, occupying one CPU more each time.
        let mut state = CpuState::all_idle(topo);
        let mut cpus = topo.cpus().iter();
        let mut from = None;
        for busy in 0..=topo.nr_cpus() as u32 {
            if busy > 0
                && let Some(cpu) = cpus.next()
            {
                state.occupy(topo, cpu);
            }
            let active = cluster_balance::active(self.config(), topo, &state);
            match (from, active) {
                (None, true) => from = Some(busy),
                (Some(from), false) => return BalanceRange { from, until: busy },
                _ => {}
            }
        }
        match from {
            Some(from) => BalanceRange {
                from,
                until: topo.nr_cpus() as u32 + 1,
            },
            None => BalanceRange::default(),
        }
    }
}

#[cfg(test)]
mod tests;
