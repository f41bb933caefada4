//! What each [`Input`](super::Input) does to the core: the handlers behind
//! [`SchedCore::handle`].

use super::{
    Affinity, Allowed, Arrival, BATCH_MAX, CLASS_HOLD_NS, Classed, CoreConfig, Dispatch,
    InputError, LastRun, Life, Nudging, Pending, Queued, SchedCore, Slot, Snapshot, Target, TaskId,
    Why,
};
use crate::cpu_set::{CpuId, CpuSet};
use crate::fast_wake::TaskClass;
use crate::placement_policy::PlacementPolicy;
use crate::task_state::Run;

impl<S: AsRef<[Slot]> + AsMut<[Slot]>, P: PlacementPolicy> SchedCore<S, P> {
    pub(super) fn handle_queued(&mut self, now_ns: u64, q: &Queued<'_>) -> Result<(), InputError> {
        if self.pending.len() == BATCH_MAX {
            return Err(InputError::BatchFull);
        }
        self.renew(q.task, q.life);
        let allowed = match q.affinity {
            Affinity::Cpus(set) if set == self.topo.cpus() => Allowed::All,
            Affinity::Cpus(set) => {
                let at = self.pending.tail();
                self.pending_allowed[at] = *set;
                Allowed::Restricted(at)
            }
            Affinity::Unknown => Allowed::Unknown,
        };
        let p = self.pending_of(q, allowed, now_ns);
        self.pending.push(p).map_err(|_| InputError::BatchFull)
    }

    pub(super) fn handle_snapshot(&mut self, now_ns: u64, snap: &Snapshot<'_>) {
        self.blind = false;
        self.queued_cpus = match snap.queued {
            Some(q) => *q,
            None => self
                .topo
                .cpus()
                .iter()
                .filter(|c| {
                    self.last_sent[c.index()]
                        .is_some_and(|at| now_ns.saturating_sub(at) < self.config.claim_ns)
                })
                .collect(),
        };
        self.caller_cpu = snap.caller_cpu.filter(|c| self.topo.info(*c).is_some());
        let mut free = snap.idle.and_not(&self.queued_cpus);
        // The caller's CPU runs only the caller, which yields it right after the batch: it is
        // often the one a woken task last ran on. Not when a task of the batch was preempted
        // there: that task gets it back, and a woken one would push it off its core.
        if let Some(c) = self.caller_cpu
            && !self.queued_cpus.contains(c)
            && !self
                .pending
                .iter()
                .any(|p| matches!(p.arrival, Arrival::SliceEnd { .. }) && p.cpu == Some(c))
        {
            free.insert(c);
        }
        self.state.reset_idle(&self.topo, &free);
        self.decide_pending();
    }

    pub(super) fn handle_snapshot_failed(&mut self) {
        self.blind = true;
        self.decide_pending();
        self.blind = false;
    }

    /// A dispatch to a CPU no longer free (busy, or with tasks in its own queue) goes to the
    /// shared queue, where the first CPU to free up takes it, rather than waiting behind
    /// whatever runs there now.
    pub(super) fn handle_recheck(&mut self, snap: &Snapshot<'_>) {
        let free = match snap.queued {
            Some(q) => snap.idle.and_not(q),
            None => *snap.idle,
        };
        let mut stale = CpuSet::EMPTY;
        for o in self.outgoing.iter_mut() {
            if let Some(cpu) = o.check.take()
                && !free.contains(cpu)
            {
                o.dispatch.target = Target::Shared;
                o.dispatch.why = Why::Stale(cpu);
                stale.insert(cpu);
            }
        }
        for cpu in stale.iter() {
            self.clear_placed(cpu);
        }
    }

    /// The next decided task, deciding the pending batch first if no snapshot did.
    pub(super) fn poll_dispatch(&mut self) -> Option<Dispatch> {
        if self.outgoing.len() == 0 && self.pending.len() > 0 {
            self.decide_pending();
        }
        self.outgoing.pop().map(|o| o.dispatch)
    }

    pub(super) fn handle_tick(&mut self, now_ns: u64) {
        if now_ns >= self.next_prune_ns {
            self.next_prune_ns = now_ns.saturating_add(CoreConfig::PRUNE_EVERY_NS);
            self.prune(now_ns);
        }
        if let Nudging::Scan { every_ns, gap_ns } = self.config.nudging
            && now_ns >= self.next_scan_ns
        {
            self.next_scan_ns = now_ns.saturating_add(every_ns);
            self.scan(now_ns, gap_ns);
        }
    }

    pub(super) fn handle_exit(&mut self, task: TaskId, life: Life) {
        self.stats.exits += 1;
        if self.slots.get(task).is_some_and(|r| r.life.differs(life)) {
            self.stats.stale_exits += 1;
            return;
        }
        if self.end(task) {
            self.stats.exits_tracked += 1;
        }
    }

    /// Ends `task`'s record, with its home; whether there was one.
    fn end(&mut self, task: TaskId) -> bool {
        let Some(rec) = self.slots.remove(task) else {
            return false;
        };
        if let Some(home) = rec.home {
            self.state.leave_home(&self.topo, home);
        }
        true
    }

    /// A hand-over of `task` in `life`: a record of another life is of a task that ended
    /// (its exit is still on its way), and ends now; a record of no known life takes this one.
    fn renew(&mut self, task: TaskId, life: Life) {
        match self.slots.get_mut(task) {
            Some(rec) if rec.life.differs(life) => {
                self.stats.renewed += 1;
                let _ = self.end(task);
            }
            Some(rec) if rec.life.is_unknown() => rec.life = life,
            _ => {}
        }
    }

    pub(super) fn handle_started(&mut self, task: TaskId, cpu: CpuId) {
        self.state.occupy(&self.topo, cpu);
        if let Some(rec) = self.slots.get_mut(task)
            && rec.home != Some(cpu)
        {
            self.state.move_home(&self.topo, rec.home, cpu);
            rec.home = Some(cpu);
        }
    }

    pub(super) fn handle_stopped(&mut self, task: TaskId, cpu: CpuId, run: LastRun, weight: u32) {
        self.state.release(&self.topo, cpu);
        self.count_run(task, cpu, run, weight);
    }

    /// A wake-up the caller placed on `cpu` at `woke_ns`, learned of at `now_ns`: the class
    /// squared with the caller's first, then counted as a wake-up the core decided
    /// ([`Self::observe`]) and noted on `cpu` as a dispatch there is. A task of unknown
    /// affinity is not noted: the scan could move it where it may not run.
    pub(super) fn handle_placed(
        &mut self,
        now_ns: u64,
        q: &Queued<'_>,
        cpu: CpuId,
        class: TaskClass,
        woke_ns: u64,
    ) {
        if self.topo.info(cpu).is_none() {
            self.stats.refused += 1;
            return;
        }
        self.stats.placed += 1;
        self.renew(q.task, q.life);
        let woke_ns = woke_ns.min(now_ns);
        if self.classing
            && let Some(rec) = self.slots.entry(q.task)
            && rec.class != class
            && (rec.class_ns == 0 || woke_ns.saturating_sub(rec.class_ns) >= CLASS_HOLD_NS)
        {
            rec.class = class;
            rec.class_ns = 0;
            self.stats.class_drift += 1;
        }
        let p = self.pending_of(q, Allowed::Unknown, woke_ns);
        let (util, vtime, _, _) = self.observe(&p, now_ns);
        self.state.occupy(&self.topo, cpu);
        let restricted = match q.affinity {
            Affinity::Cpus(set) if set == self.topo.cpus() => None,
            Affinity::Cpus(set) => Some(set),
            Affinity::Unknown => return,
        };
        self.mark_sent(cpu, &p, util, vtime, restricted);
    }

    /// `q` as the core holds a task to decide, handed over at `now_ns` (a previous CPU the
    /// machine lacks is none).
    fn pending_of(&self, q: &Queued<'_>, allowed: Allowed, now_ns: u64) -> Pending {
        Pending {
            task: q.task,
            life: q.life,
            token: q.token,
            arrival: q.arrival,
            cpu: q.cpu.filter(|c| self.topo.info(*c).is_some()),
            last_run: q.last_run,
            weight: q.weight,
            allowed,
            util: q.util,
            now_ns,
        }
    }

    /// Counts a run of `task` on `cpu` in its record (started if it has none): the estimate,
    /// vtime and weight (the home moved at the start), then a class change.
    fn count_run(&mut self, task: TaskId, cpu: CpuId, run: LastRun, weight: u32) {
        let capacity = self.topo.info(cpu).map_or(0, |i| i.capacity);
        let Self {
            slots,
            topo,
            policy,
            classes,
            classing,
            generation,
            ..
        } = self;
        let Some(rec) = slots.entry(task) else {
            return;
        };
        Self::stamp(generation, rec);
        rec.seen_ns = rec.seen_ns.max(run.stop_ns);
        rec.weight = weight;
        let _counted = rec.state.on_run(&Run {
            cpu,
            capacity,
            start_ns: run.start_ns,
            stop_ns: run.stop_ns,
            weight,
        });
        if *classing {
            let util = rec.state.util();
            reclass(policy, topo, classes, task, rec, util, run.stop_ns);
        }
    }
}

/// Gives out `task`'s class for `util` at `now_ns` if it moved and the last one is at least
/// [`CLASS_HOLD_NS`] old (with no room left, it is given at a later observation).
pub(super) fn reclass<P: PlacementPolicy>(
    policy: &P,
    topo: &crate::Topology,
    classes: &mut super::Fixed<Classed, BATCH_MAX>,
    task: TaskId,
    rec: &mut super::Record,
    util: u16,
    now_ns: u64,
) {
    let class = policy.class_of(topo, util);
    let held = rec.class_ns != 0 && now_ns.saturating_sub(rec.class_ns) < CLASS_HOLD_NS;
    if class == rec.class || held {
        return;
    }
    if classes.push(Classed { task, class }).is_ok() {
        rec.class = class;
        rec.class_ns = now_ns.max(1);
    }
}
