//! The event loop: pops events in `(time, seq)` order and hands each to its handler (arrival
//! and wake-up, work done, slice end, balance tick).

use super::program::{Action, Program};
use super::{
    DecisionObserver, Event, Pending, RunRecord, SimError, Simulation, Status, Unobserved,
};
use crate::machine::WORK_SCALE;
use crate::report::Report;
use crate::sim_policy::{EngineView, Move, QueuedTask, Reason};
use hybridland_policy::CpuId;

/// Events between two reads of the wall clock for [`SimOptions::max_wall`](crate::SimOptions).
const WALL_CHECK_EVERY: u64 = 4_096;

impl<'a> Simulation<'a> {
    /// Runs the replay to the end.
    pub fn run(self) -> Result<Report, SimError> {
        self.run_observed(&mut Unobserved)
    }

    /// Runs the replay, showing every decision to `observer`.
    pub fn run_observed(mut self, observer: &mut dyn DecisionObserver) -> Result<Report, SimError> {
        let horizon = self.trace.duration_ns;
        let started = std::time::Instant::now();
        self.record_runs = observer.wants_runs();
        self.record_decisions = observer.wants_decisions();
        self.policy.watch_decisions(self.record_decisions);
        while let Some((time, event)) = self.events.pop() {
            if horizon.is_some_and(|h| time > h) {
                self.now = horizon.unwrap_or(time);
                break;
            }
            if self.alive == 0 {
                break;
            }
            self.now = time;
            self.nr_events += 1;
            if self.nr_events > self.options.max_events || time > self.options.max_time_ns {
                return Err(self.runaway());
            }
            // A clock read every event would cost more than a small event; every 4,096 events
            // overshoots the limit by well under a second even at a slow 10^4 events/s.
            if self.nr_events.is_multiple_of(WALL_CHECK_EVERY)
                && let Some(limit) = self.options.max_wall
                && started.elapsed() > limit
            {
                return Err(SimError::WallTimeExceeded {
                    trace: self.trace_name.clone(),
                    limit_secs: limit.as_secs_f64(),
                    events: self.nr_events,
                    now_ns: self.now,
                });
            }
            match event {
                Event::Arrive(t) | Event::Wake(t) => self.wake(t, observer)?,
                Event::Woken(t, waker, waker_cpu) => {
                    self.tasks[t].waker_cpu = waker_cpu;
                    self.tasks[t].sync_waker = self.sync_waker(waker, waker_cpu);
                    let placed = self.wake(t, observer);
                    self.tasks[t].waker_cpu = None;
                    self.tasks[t].sync_waker = None;
                    placed?;
                }
                Event::WorkDone(cpu) => self.work_done(cpu)?,
                Event::SliceEnd(cpu) => self.slice_end(cpu, false, observer)?,
                Event::BalanceTick => self.balance_tick()?,
                Event::DriverTick => self.driver_tick(),
            }
            self.arm_driver_tick();
            if !self.pending.is_empty() {
                self.hand_over(observer);
            }
        }
        if self.alive > 0
            && let Some(h) = horizon
        {
            // Every task left is blocked: the replay still runs to its horizon.
            self.now = self.now.max(h);
        }
        if horizon.is_none() && self.alive > 0 {
            if let Some(blocked) = self.blocked() {
                return Err(blocked);
            }
            return Err(SimError::Stalled {
                now_ns: self.now,
                waiting: self.alive,
            });
        }
        if self.record_runs {
            // What still runs at the end ends there: `finish` would stop it the same way,
            // but with nobody to show the runs to.
            for i in 0..self.cpus.len() {
                if self.cpus[i].running.is_some() {
                    self.stop(CpuId(i as u16));
                }
            }
            self.hand_over(observer);
        }
        Ok(self.finish())
    }

    /// Shows the current event's runs and occupancy changes to the observer.
    fn hand_over(&mut self, observer: &mut dyn DecisionObserver) {
        let mut pending = core::mem::take(&mut self.pending);
        for p in pending.drain(..) {
            match p {
                Pending::Run {
                    start_ns,
                    cpu,
                    task,
                    step,
                    util,
                    queued,
                    latency_ns,
                    frame_done,
                    woken_by,
                } => {
                    observer.on_run(&RunRecord {
                        start_ns,
                        end_ns: self.now,
                        cpu,
                        task,
                        task_name: &self.tasks[task].name,
                        step,
                        util,
                        queued,
                        latency_ns,
                        frame_done,
                        woken_by,
                    });
                }
                Pending::Occupancy(o) => observer.on_occupancy(&o),
            }
        }
        // The buffer keeps its capacity: no allocation per event.
        self.pending = pending;
    }

    /// The runaway error, naming the trace and the task that woke up most often.
    fn runaway(&self) -> SimError {
        let busiest = self.tasks.iter().max_by_key(|t| t.wakeups);
        SimError::TooManyEvents {
            trace: self.trace_name.clone(),
            events: self.nr_events,
            limit: self.options.max_events,
            now_ns: self.now,
            max_time_ns: self.options.max_time_ns,
            task: busiest.map_or_else(String::new, |t| t.name.clone()),
            wakeups: busiest.map_or(0, |t| t.wakeups),
        }
    }

    /// The error for a replay whose tasks left are blocked in `wait_for`s, if any is.
    fn blocked(&self) -> Option<SimError> {
        let mut waiting = self
            .tasks
            .iter()
            .filter_map(|t| t.waiting_for.map(|w| (t, w)));
        let (first, wakers) = waiting.next()?;
        Some(SimError::Blocked {
            trace: self.trace_name.clone(),
            now_ns: self.now,
            blocked: 1 + waiting.count(),
            task: first.name.clone(),
            waits_for: wakers.join(", "),
        })
    }

    pub(super) fn ensure_tick(&mut self) {
        if !self.tick_pending {
            self.tick_pending = true;
            self.events.push(
                self.now.saturating_add(self.options.balance_interval_ns),
                Event::BalanceTick,
            );
        }
    }

    /// Task `t` wakes (first arrival, end of sleep, frame release).
    pub(super) fn wake(
        &mut self,
        t: usize,
        observer: &mut dyn DecisionObserver,
    ) -> Result<(), SimError> {
        let action = self.next_action(t);
        if !matches!(action, Action::Run(_)) {
            // Its waker did not make it run: the run after its next wake-up is not the waker's.
            self.tasks[t].woken_by = None;
        }
        match action {
            Action::Run(ns) => {
                let task = &mut self.tasks[t];
                task.remaining = u128::from(ns) * u128::from(WORK_SCALE);
                task.wakeups += 1;
                self.policy.woke(self.now, t);
                task.runnable_since = Some(self.now);
                task.status = Status::Queued;
                if let Program::Frames { release_ns, .. } = &mut task.program {
                    *release_ns = self.now;
                }
                self.place(t, Reason::Wakeup, None, observer)
            }
            Action::Sleep(ns) => {
                self.tasks[t].status = Status::Sleeping;
                self.events
                    .push(self.now.saturating_add(ns), Event::Wake(t));
                Ok(())
            }
            Action::Block => {
                self.tasks[t].status = Status::Sleeping;
                Ok(())
            }
            Action::Done => {
                self.retire(t);
                Ok(())
            }
        }
    }

    pub(super) fn retire(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        task.status = Status::Done;
        task.finish_ns = Some(self.now);
        self.alive -= 1;
        self.policy.exited(self.now, t);
    }

    /// Schedules the policy driver's timer for the time it asks, unless one is pending.
    fn arm_driver_tick(&mut self) {
        if self.driver_tick_at.is_some() {
            return;
        }
        let Some(at) = self.policy.timeout() else {
            return;
        };
        let at = at.max(self.now);
        self.driver_tick_at = Some(at);
        self.events.push(at, Event::DriverTick);
    }

    /// The policy driver's timer: a nudge it gives makes the nudged CPU's next slice end
    /// contended, as the live helper thread queued there does.
    fn driver_tick(&mut self) {
        self.driver_tick_at = None;
        if let Some(nudge) = self.policy.tick(self.now)
            && let Some(c) = self.cpus.get_mut(nudge.cpu.index())
            && c.running == usize::try_from(nudge.task.0).ok()
        {
            c.nudged = true;
        }
    }

    /// The running task on `cpu` finished its current piece of work.
    pub(super) fn work_done(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let Some(t) = self.cpus[cpu.index()].running else {
            return Ok(());
        };
        self.settle(t);
        self.tasks[t].remaining = 0;
        let now = self.now;
        if let Program::Frames {
            spec,
            next,
            release_ns,
        } = &mut self.tasks[t].program
        {
            let deadline = spec.deadline_ns.unwrap_or(spec.period_ns);
            let missed = now > release_ns.saturating_add(deadline);
            let released = *release_ns;
            *next += 1;
            let next_release = released.saturating_add(spec.period_ns).max(now);
            let more = *next < spec.count;
            if let Some(f) = &mut self.tasks[t].frames {
                f.complete(released, now, missed);
            }
            self.tasks[t].frame_done = true;
            // A render loop blocks once per frame (on the GPU fence or the frame clock) even
            // when it is late, so every frame is a fresh wake-up and placement.
            self.stop(cpu);
            if more {
                self.tasks[t].status = Status::Sleeping;
                self.events.push(next_release, Event::Wake(t));
            } else {
                self.retire(t);
            }
            return self.dispatch(cpu);
        }
        match self.next_action(t) {
            Action::Run(ns) => {
                self.tasks[t].remaining = u128::from(ns) * u128::from(WORK_SCALE);
                if let Some(run) = &mut self.tasks[t].run {
                    run.rate = 0;
                }
                self.refresh(cpu);
                Ok(())
            }
            Action::Sleep(ns) => {
                self.stop(cpu);
                self.tasks[t].status = Status::Sleeping;
                self.events.push(now.saturating_add(ns), Event::Wake(t));
                self.dispatch(cpu)
            }
            Action::Block => {
                self.stop(cpu);
                self.tasks[t].status = Status::Sleeping;
                self.dispatch(cpu)
            }
            Action::Done => {
                self.stop(cpu);
                self.retire(t);
                self.dispatch(cpu)
            }
        }
    }

    /// The running task on `cpu` used up its slice, or (`preempted`) a task was just put first
    /// in the CPU's own queue to stop it: re-place it with its CPU released.
    pub(super) fn slice_end(
        &mut self,
        cpu: CpuId,
        preempted: bool,
        observer: &mut dyn DecisionObserver,
    ) -> Result<(), SimError> {
        let Some(t) = self.cpus[cpu.index()].running else {
            return Ok(());
        };
        let nudged = self.cpus[cpu.index()].nudged;
        let shared_waits = self
            .shared
            .iter()
            .any(|(_, _, w)| self.allowed[self.tasks[*w].spec].contains(cpu));
        // Tasks in the CPU's own queue other than the one that stops it now wait for the CPU;
        // that one (or the nudge) was given it first, and runs first whatever is decided.
        let queued_behind = self.cpus[cpu.index()].local.len() > usize::from(preempted);
        let given_away = nudged || preempted;
        let waiting = shared_waits || queued_behind || given_away;
        if !waiting && self.policy.refills_uncontended_slices() {
            // The live framework refills the slice of a task nothing else wants without
            // asking user space: the core never sees this slice end, live or here.
            self.events.push_keyed(
                super::slice_end_key(cpu),
                self.now.saturating_add(self.options.slice_ns),
                Event::SliceEnd(cpu),
            );
            return Ok(());
        }
        self.stop(cpu);
        self.tasks[t].status = Status::Queued;
        let reason = if shared_waits || queued_behind {
            Reason::Preempted
        } else if given_away {
            Reason::Displaced
        } else {
            Reason::SliceEnd
        };
        self.place(t, reason, Some(cpu), observer)
    }

    pub(super) fn balance_tick(&mut self) -> Result<(), SimError> {
        self.tick_pending = false;
        if self.alive == 0 {
            return Ok(());
        }
        let mut queued = Vec::new();
        for &cpu in &self.cpu_ids {
            for &t in &self.cpus[cpu.index()].local {
                queued.push(QueuedTask {
                    id: t,
                    cpu,
                    allowed: &self.allowed[self.tasks[t].spec],
                });
            }
        }
        let moves = if queued.is_empty() {
            Vec::new()
        } else {
            let view = EngineView {
                topo: self.topo,
                idle: &self.idle,
                load: &self.load,
                waiting: (self.shared.len() + self.nr_local) as u64,
                now_ns: self.now,
            };
            self.policy.balance(&view, &queued)
        };
        drop(queued);
        for Move { task, to } in moves {
            self.apply_move(task, to)?;
        }
        // Nothing runs and nothing is due: the waiting tasks can never start (a policy left
        // them in a queue no CPU will look at). Say so instead of ticking forever.
        if self.events.is_empty() && self.cpus.iter().all(|c| c.running.is_none()) {
            let waiting = self
                .tasks
                .iter()
                .filter(|t| t.status == Status::Queued)
                .count();
            return Err(SimError::Stalled {
                now_ns: self.now,
                waiting,
            });
        }
        if self.cpus.iter().any(|c| !c.local.is_empty()) {
            self.ensure_tick();
        }
        Ok(())
    }
}
