//! Decisions about a task that is already running: what happens at the end of its slice, and
//! whether an idle CPU has become strictly better for it (up-migration).
//!
//! The rule, written once for both frontends:
//! - **Up-migration.** A task running on CPU `c` moves to the CPU the idle order would pick
//!   for it now (allowed, idle) only if that CPU is *strictly better*, which is one of:
//!   1. chosen at an earlier step of the idle order than `c` would be (a whole idle P-core
//!      beats an E-core; either beats an SMT sibling of a busy core), of at least `c`'s
//!      capacity unless `c` is such a sibling (its capacity is shared with the sibling's
//!      task), and not an overflow out of the primary domain `c` is in. A task stuck on an
//!      E-core because every P-core was busy goes to the first P-core that idles; a task
//!      doubled up on a P-core's sibling goes to an idle E-core;
//!   2. back inside the primary domain when `c` is outside it (the task overflowed while the
//!      domain was full, and a CPU of it has idled since);
//!   3. with cluster balance active, a CPU of the same step and capacity in another cluster
//!      whose busy share *with the task added* stays below the share of `c`'s cluster *with*
//!      it: a move that lowers the busiest of the two. Balance thus corrects itself at slice
//!      ends, not only at wake-ups (a CPU-bound task never wakes).
//!
//!   Nothing moves sideways otherwise, so equal CPUs never trade tasks.
//! - **Slice end.** Nobody waits for the task's CPU: keep it, unless up-migration says move.
//!   Somebody waits for it (its own queue, the shared queue, or another task of the same batch
//!   was given it): move to another idle allowed CPU if the idle order finds one, else yield
//!   (back of the queue).
//!
//! Strictness rules out ping-pong: going back from `b` to `a` would need the reverse of the
//! reason that brought the task to `b` (a lower step, the primary domain, a strictly lower
//! cluster share), which only a change of the machine's state (another task arriving or
//! leaving) can give.

use crate::cluster_balance::ClusterLoad;
use crate::cpu_set::CpuId;
use crate::cpu_state::CpuState;
use crate::idle_order::{Placement, Policy, Step, TaskHints};
use crate::topology::{CoreKind, Topology};

/// What a running task does at the end of its slice.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum SliceEnd {
    /// Run on where it is, with a fresh slice.
    Keep,
    /// Others wait for its CPU and no other allowed CPU is idle: to the back of the queue.
    Yield,
    /// Move to the placement's CPU, which is idle and allowed.
    Move(Placement),
}

/// Whether a task leaving cluster `from` (busy, counting it) for cluster `to` leaves `to`'s
/// busy share, with the task, below `from`'s share now.
fn lowers_share(topo: &Topology, state: &CpuState, from: u16, to: u16) -> bool {
    let share = |c: u16, extra: u16| {
        let c = usize::from(c);
        let size = topo.cluster_cpus(c).len() as u16;
        ClusterLoad {
            busy: state.cluster_busy(c) + extra,
            size,
        }
    };
    share(to, 1) < share(from, 0)
}

/// The step of the idle order at which `cpu` would be chosen if it were idle, given the
/// state of its SMT siblings.
pub(crate) fn step_of(topo: &Topology, state: &CpuState, cpu: CpuId) -> Step {
    let siblings_idle = topo
        .siblings(cpu)
        .iter()
        .all(|s| *s == cpu || state.is_idle(*s));
    match (siblings_idle, topo.info(cpu).map(|i| i.kind)) {
        (false, _) => Step::BusySibling,
        (true, Some(CoreKind::Performance)) => Step::IdlePCore,
        (true, _) => Step::IdleECore,
    }
}

impl Policy {
    /// Whether the task running on `cpu` (busy in `state`) should move to an idle CPU that is
    /// strictly better for it (see the [module](self) docs); `task.prev_cpu` is ignored, `cpu`
    /// is its previous CPU. Costs one [`select_cpu`](Self::select_cpu) plus a look at `cpu`'s
    /// siblings.
    #[must_use]
    pub(crate) fn up_migration(
        &self,
        topo: &Topology,
        state: &CpuState,
        cpu: CpuId,
        task: &TaskHints<'_>,
    ) -> Option<Placement> {
        let own = topo.info(cpu)?;
        let own_step = step_of(topo, state, cpu);
        let in_primary = self.primary().contains(cpu);
        if own_step == Step::IdlePCore && in_primary && !self.balance_active(topo, state) {
            return None;
        }
        // A move follows no waker.
        let hints = TaskHints {
            prev_cpu: Some(cpu),
            sync_waker: None,
            ..*task
        };
        let p = self.select_cpu(topo, state, &hints);
        let to = p.cpu.filter(|to| *to != cpu)?;
        let to_info = topo.info_of(to);
        // A busy sibling shares its core, so its capacity overstates what the task gets there:
        // the idle order's own ranking decides alone.
        let faster_or_equal = own_step == Step::BusySibling || to_info.capacity >= own.capacity;
        let up = p.step < own_step && faster_or_equal && !(p.is_overflow() && in_primary);
        // Not an overflow: the idle order found `to` inside the primary domain.
        let to_primary = !p.is_overflow();
        let back_to_primary = !in_primary && to_primary;
        let rebalance = p.step == own_step
            && to_info.capacity == own.capacity
            && to_primary == in_primary
            && to_info.cluster != own.cluster
            && self.balance_active(topo, state)
            && lowers_share(topo, state, own.cluster, to_info.cluster);
        (up || back_to_primary || rebalance).then_some(p)
    }

    /// The end of the slice of the task running on `task.prev_cpu` (busy in `state`);
    /// `contended` says whether another task waits for that CPU. See the [module](self) docs.
    pub(crate) fn slice_end(
        &self,
        topo: &Topology,
        state: &CpuState,
        task: &TaskHints<'_>,
        contended: bool,
    ) -> SliceEnd {
        // A slice end follows no waker.
        let task = &TaskHints {
            sync_waker: None,
            ..*task
        };
        let own = task
            .prev_cpu
            .filter(|c| topo.info(*c).is_some() && task.allowed.contains(*c));
        match own {
            Some(own) if !contended => match self.up_migration(topo, state, own, task) {
                Some(p) => SliceEnd::Move(p),
                None => SliceEnd::Keep,
            },
            _ => {
                let p = self.select_cpu(topo, state, task);
                if p.cpu.is_some() {
                    SliceEnd::Move(p)
                } else {
                    SliceEnd::Yield
                }
            }
        }
    }
}
