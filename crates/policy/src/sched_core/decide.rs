//! Deciding one batch: the per-task sequence (state, vtime, slice, placement) in order.

use super::slots::Record;
use super::{
    Allowed, Arrival, BATCH_MAX, Dispatch, Outgoing, Pending, PlacedTask, SchedCore, SliceMode,
    Slot, Target, TaskKey, UtilSource, WakePreempt, Why,
};
use crate::cpu_set::{CpuId, CpuSet};
use crate::fast_wake::pinned_cpu;
use crate::idle_order::{Placement, Step};
use crate::migration::SliceEnd;
use crate::placement_policy::{PlacementPolicy, View};
use crate::task_state::{Run, slice_ns};

impl<S: AsRef<[Slot]> + AsMut<[Slot]>, P: PlacementPolicy> SchedCore<S, P> {
    /// Decides every pending task: slice ends first, then wake-ups, each in arrival order.
    pub(super) fn decide_pending(&mut self) {
        let n = self.pending.len();
        if n == 0 {
            return;
        }
        let base = self.config.slice_ns;
        let slice = match self.config.slice {
            SliceMode::Fixed => base,
            SliceMode::Scaled => slice_ns(base, self.backlog.saturating_add(n as u64)),
        };
        let mut taken = CpuSet::EMPTY;
        let mut waiters = self.waiters_without_idle();
        let all = *self.topo.cpus();
        for slice_ends in [true, false] {
            for i in 0..n {
                let Some(p) = self.pending.get(i) else {
                    continue;
                };
                if matches!(p.arrival, Arrival::SliceEnd { .. }) != slice_ends {
                    continue;
                }
                let batch = (&mut taken, &mut waiters);
                match p.allowed {
                    Allowed::All => self.decide(&p, Some((&all, false)), slice, batch),
                    Allowed::Restricted(at) => {
                        let set = self.pending_allowed[at];
                        self.decide(&p, Some((&set, true)), slice, batch);
                    }
                    Allowed::Unknown => self.decide(&p, None, slice, batch),
                }
                self.keep_memo();
            }
        }
        while self.pending.pop().is_some() {}
    }

    /// The wake-ups of this batch that find no idle CPU they may use (a CPU whose task's slice
    /// end is in the batch is not idle: it is that task's until the task is decided), one bit
    /// per place in the batch. Slice ends are decided first, and each of these wake-ups makes
    /// one slice end on a CPU it may use contended ([`Self::claim_waiter`]), as a task already
    /// waiting in the shared queue does: otherwise that CPU's task is kept for another slice,
    /// and the wake-up, sent to the shared queue right after, waits behind it (a CPU runs its
    /// own queue first).
    fn waiters_without_idle(&self) -> u64 {
        const _: () = assert!(BATCH_MAX <= 64, "one bit per task of a batch");
        let mut idle = *self.state.idle();
        for i in 0..self.pending.len() {
            if let Some(Pending {
                arrival: Arrival::SliceEnd { .. },
                cpu: Some(own),
                ..
            }) = self.pending.get(i)
            {
                idle.remove(own);
            }
        }
        let idle = &idle;
        let mut bits = 0;
        for i in 0..self.pending.len() {
            let Some(p) = self.pending.get(i) else {
                continue;
            };
            let waits = matches!(p.arrival, Arrival::Wakeup { .. })
                && Some(p.task) != self.helper
                && self.allowed_of(&p).is_some_and(|a| !a.intersects(idle));
            bits |= u64::from(waits) << i;
        }
        bits
    }

    /// Whether one of `waiters` may run on `cpu`; if so it is taken off `waiters`.
    fn claim_waiter(&self, cpu: CpuId, waiters: &mut u64) -> bool {
        let mut rest = *waiters;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let allows = self
                .pending
                .get(i)
                .is_some_and(|p| self.allowed_of(&p).is_some_and(|a| a.contains(cpu)));
            if allows {
                *waiters &= !(1 << i);
                return true;
            }
        }
        false
    }

    /// The CPUs pending task `p` may use, if known.
    fn allowed_of(&self, p: &Pending) -> Option<&CpuSet> {
        match p.allowed {
            Allowed::All => Some(self.topo.cpus()),
            Allowed::Restricted(at) => self.pending_allowed.get(at),
            Allowed::Unknown => None,
        }
    }

    /// Decides `p`, allowed on `allowed` (with whether that is fewer than every CPU), or of
    /// unknown affinity; `taken`: the CPUs given to earlier tasks of the batch; `waiters`: the
    /// batch's wake-ups that find nothing idle and have not yet made a slice end contended.
    fn decide(
        &mut self,
        p: &Pending,
        allowed: Option<(&CpuSet, bool)>,
        slice_ns: u64,
        (taken, waiters): (&mut CpuSet, &mut u64),
    ) {
        if Some(p.task) == self.helper {
            // First in whichever queue it joins. At the clock it would queue behind every
            // sleeper (those are raised to one slice behind it), and a stream of new short
            // tasks, which never moves the clock, kept it waiting until the kernel's
            // watchdog ejected the scheduler. It runs for at most its short slice.
            let target = self
                .helper_target
                .take()
                .map_or(Target::Shared, Target::Cpu);
            self.send(
                Dispatch {
                    task: p.task,
                    token: p.token,
                    target,
                    slice_ns: self.config.helper_slice_ns,
                    vtime: 0,
                    util: 0,
                    why: Why::Helper,
                },
                None,
            );
            return;
        }
        let (util, vtime, key, value) = self.observe(p, p.now_ns);
        self.ask_about(key, value);
        let mut d = Dispatch {
            task: p.task,
            token: p.token,
            target: Target::Shared,
            slice_ns,
            vtime,
            util,
            why: Why::Blind,
        };
        if self.blind {
            return self.send(d, None);
        }
        let Some((allowed, restricted)) = allowed else {
            d.why = Why::AffinityUnknown;
            return self.send(d, None);
        };
        let own = p
            .cpu
            .filter(|_| matches!(p.arrival, Arrival::SliceEnd { .. }));
        let waker = match p.arrival {
            Arrival::Wakeup { waker } => waker,
            Arrival::SliceEnd { .. } => None,
        };
        let waker_cpu = waker.map(|w| w.cpu);
        // A synchronous waker's CPU, when nothing else waits there: nothing in its queue and
        // not given to an earlier task of this batch.
        let sync_waker = waker
            .filter(|w| w.sync)
            .map(|w| w.cpu)
            .filter(|&c| !taken.contains(c) && !self.queued_cpus.contains(c));
        let view = |state, contended| View {
            topo: &self.topo,
            state,
            allowed,
            prev_cpu: p.cpu,
            util,
            weight: p.weight,
            waker_cpu,
            sync_waker,
            now_ns: p.now_ns,
            contended,
            task: key,
            memo: &self.memo,
        };
        #[cfg(feature = "testkit")]
        let hints = || crate::idle_order::TaskHints {
            allowed,
            prev_cpu: p.cpu,
            util,
            sync_waker,
        };
        let (Arrival::SliceEnd { waiting }, Some(own)) = (p.arrival, own) else {
            let placement = self.policy.wakeup(&view(&self.state, false));
            #[cfg(feature = "testkit")]
            self.audit_wakeup(p.task, &hints(), &placement);
            let placement = self.checked(placement, allowed);
            d.why = Why::Placed(placement);
            if placement.cpu.is_none()
                && let Some(cpu) = self
                    .pinned_victim(allowed, taken)
                    .or_else(|| self.preempt_victim(p, vtime, allowed, taken))
            {
                self.stats.preempts += 1;
                taken.insert(cpu);
                d.target = Target::Preempt(cpu);
                self.mark_sent(cpu, p, d.util, d.vtime, restricted.then_some(allowed));
                return self.send(d, None);
            }
            return self.take(d, placement, restricted.then_some(allowed), p, taken);
        };
        // The task was running on `own` until now: the policy is asked about the machine with
        // it still there. A CPU an earlier task of this batch was given is contended, and so
        // is one a wake-up of this batch that finds nothing idle may run on.
        let contended =
            waiting.contended() || taken.contains(own) || self.claim_waiter(own, waiters);
        let vacated = self.state.occupy(&self.topo, own);
        let answer = self.policy.slice_end(&view(&self.state, contended));
        #[cfg(feature = "testkit")]
        self.audit_slice_end(p.task, &hints(), contended, answer);
        let answer = match answer {
            SliceEnd::Move(placement) => match self.checked(placement, allowed).cpu {
                Some(cpu) if cpu != own => SliceEnd::Move(placement),
                // Moving nowhere, or to where it is: the task stays in line for its CPU.
                _ if contended => SliceEnd::Yield,
                _ => SliceEnd::Keep,
            },
            answer => answer,
        };
        if vacated && answer != SliceEnd::Keep {
            self.state.release(&self.topo, own);
        }
        match answer {
            SliceEnd::Keep => {
                taken.insert(own);
                d.target = Target::Cpu(own);
                d.why = Why::Kept;
                self.mark_sent(own, p, d.util, d.vtime, restricted.then_some(allowed));
                self.send(d, None);
            }
            SliceEnd::Move(placement) => {
                d.why = Why::Moved(placement);
                self.take(d, placement, restricted.then_some(allowed), p, taken);
            }
            SliceEnd::Yield => {
                d.why = Why::Yielded;
                self.send(d, None);
            }
        }
    }

    /// The policy's placement if it names a CPU of the machine the task may use; else (counted)
    /// no CPU, so the task waits in the shared queue.
    fn checked(&mut self, placement: Placement, allowed: &CpuSet) -> Placement {
        match placement.cpu {
            Some(cpu) if !allowed.contains(cpu) || self.topo.info(cpu).is_none() => {
                self.stats.refused += 1;
                Placement::NO_IDLE
            }
            _ => placement,
        }
    }

    /// Sends `d` to the placement's CPU (busy from now on for the batch), or to the shared
    /// queue when nothing was idle.
    fn take(
        &mut self,
        mut d: Dispatch,
        placement: Placement,
        restricted: Option<&CpuSet>,
        p: &Pending,
        taken: &mut CpuSet,
    ) {
        let Some(cpu) = placement.cpu else {
            return self.send(d, None);
        };
        self.state.occupy(&self.topo, cpu);
        taken.insert(cpu);
        d.target = Target::Cpu(cpu);
        self.mark_sent(cpu, p, d.util, d.vtime, restricted);
        // A waker's CPU is busy when asked and frees up as the waker sleeps: no second look.
        let check =
            (Some(cpu) != self.caller_cpu && placement.step != Step::WakerCpu).then_some(cpu);
        self.send(d, check);
    }

    /// The busy CPU a woken task allowed on it alone takes ([`pinned_cpu`]), unless an
    /// earlier task of this batch was given it or it is the caller's own (it frees that one
    /// right after the batch).
    fn pinned_victim(&self, allowed: &CpuSet, taken: &CpuSet) -> Option<CpuId> {
        pinned_cpu(allowed).filter(|&cpu| {
            !taken.contains(cpu) && self.caller_cpu != Some(cpu) && self.topo.info(cpu).is_some()
        })
    }

    /// The busy CPU a woken task with `vtime` that found nothing idle takes, if
    /// [`WakePreempt`] allows one: an allowed CPU the core sent a task to that is a base slice
    /// ahead by its estimate, not given to another task of this batch, with nothing queued,
    /// and not the caller's own (it frees that one right after the batch). Its previous CPU if
    /// that qualifies, else the one furthest ahead (the lowest id on a tie).
    fn preempt_victim(
        &self,
        p: &Pending,
        vtime: u64,
        allowed: &CpuSet,
        taken: &CpuSet,
    ) -> Option<CpuId> {
        if self.config.wake_preempt == WakePreempt::Off {
            return None;
        }
        let need = vtime.saturating_add(self.config.slice_ns);
        let ahead = |cpu: CpuId| -> Option<u64> {
            if taken.contains(cpu)
                || self.queued_cpus.contains(cpu)
                || self.caller_cpu == Some(cpu)
                || self.state.is_idle(cpu)
                || !allowed.contains(cpu)
            {
                return None;
            }
            let placed = self.placed[cpu.index()]?;
            let since = p
                .now_ns
                .saturating_sub(self.last_sent[cpu.index()].unwrap_or(p.now_ns));
            let now = placed.vtime.saturating_add(since);
            (now >= need).then_some(now)
        };
        if let Some(prev) = p.cpu
            && ahead(prev).is_some()
        {
            return Some(prev);
        }
        let mut best: Option<(u64, CpuId)> = None;
        for cpu in self.placed_cpus.iter() {
            if let Some(v) = ahead(cpu)
                && best.is_none_or(|(b, _)| v > b)
            {
                best = Some((v, cpu));
            }
        }
        best.map(|(_, cpu)| cpu)
    }

    /// Notes that task `p` was sent (or, [`Input::Placed`](super::InputOf::Placed), placed)
    /// on `cpu` with `util` and `vtime`, for the claim window, the up-migration scan and
    /// wake-up preemption; `restricted` is its allowed set when that is fewer than every CPU.
    pub(super) fn mark_sent(
        &mut self,
        cpu: CpuId,
        p: &Pending,
        util: u16,
        vtime: u64,
        restricted: Option<&CpuSet>,
    ) {
        self.last_sent[cpu.index()] = Some(p.now_ns);
        if let Some(set) = restricted {
            self.placed_allowed[cpu.index()] = *set;
        }
        self.set_placed(
            cpu,
            PlacedTask {
                task: p.task,
                util,
                hinted: !p.util.is_estimate(),
                vtime,
                sent_ns: p.now_ns,
                restricted: restricted.is_some(),
            },
        );
    }

    fn send(&mut self, dispatch: Dispatch, check: Option<CpuId>) {
        // Cannot fail: a batch holds at most BATCH_MAX tasks, and the outgoing queue is
        // drained before the next batch is decided.
        let _ = self.outgoing.push(Outgoing { dispatch, check });
    }

    /// Hands the task's report to its state (its last run, then the wake-up) and returns the
    /// utilisation the decision reads, the vtime it is dispatched with (the clock follows
    /// it: the task is about to run), its key and the policy's value for it. A class change
    /// is given out as of `class_ns` (when the caller can write it).
    pub(super) fn observe(&mut self, p: &Pending, class_ns: u64) -> (u16, u64, TaskKey, u64) {
        let Self {
            slots,
            scratch,
            state,
            topo,
            clock,
            stats,
            config,
            policy,
            classes,
            classing,
            generation,
            ..
        } = self;
        let (rec, tracked): (&mut Record, bool) = match slots.entry(p.task) {
            Some(rec) => {
                Self::stamp(generation, rec);
                if rec.life.is_unknown() {
                    rec.life = p.life;
                }
                (rec, true)
            }
            None => {
                stats.untracked += 1;
                *scratch = Record::default();
                (scratch, false)
            }
        };
        let run = p.last_run;
        rec.weight = p.weight;
        rec.seen_ns = rec
            .seen_ns
            .max(p.now_ns)
            .max(run.map_or(0, |r| r.stop_ns.max(r.start_ns)));
        if let (Some(cpu), Some(run)) = (p.cpu, run) {
            // An untracked task has no home: nothing would ever take it back.
            if tracked && rec.home != Some(cpu) {
                state.move_home(topo, rec.home, cpu);
                rec.home = Some(cpu);
            }
            let capacity = topo.info(cpu).map_or(0, |i| i.capacity);
            let _counted = rec.state.on_run(&Run {
                cpu,
                capacity,
                start_ns: run.start_ns,
                stop_ns: run.stop_ns,
                weight: p.weight,
            });
        }
        if matches!(p.arrival, Arrival::Wakeup { .. }) {
            rec.state.on_wakeup(p.now_ns);
        }
        let util = match p.util {
            UtilSource::Estimate => rec.state.util(),
            UtilSource::Hint(h) => h,
        };
        if *classing && tracked {
            super::handlers::reclass(policy, topo, classes, p.task, rec, util, class_ns);
        }
        let vtime = clock.queue(&mut rec.state, config.slice_ns);
        clock.on_start(vtime);
        let key = TaskKey {
            id: p.task,
            generation: rec.generation,
        };
        (util, vtime, key, rec.value)
    }
}
