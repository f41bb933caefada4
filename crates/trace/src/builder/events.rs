//! The reports a recording makes, task by task: switch-ins, switch-outs, wake-ups (with their
//! waker when known), exits and affinities.

use super::{Built, State, TimelineBuilder, close_run, entry};
use hybridland_policy::Topology;
use std::collections::BTreeMap;

impl<'t> TimelineBuilder<'t> {
    /// An empty timeline on `topo`, whose capacities turn run time into reference work.
    pub fn new(topo: &'t Topology) -> Self {
        Self {
            topo,
            tasks: BTreeMap::new(),
            first_ns: None,
            last_ns: 0,
            busy_ns: BTreeMap::new(),
            migrations: 0,
            relations: 0,
        }
    }

    /// Extends the recording's span to `now` without touching any task: the trace runs from
    /// the earliest time given to any method to the latest, and tasks still running at the
    /// end are closed there.
    pub fn mark(&mut self, now: u64) {
        self.first_ns = Some(self.first_ns.map_or(now, |f| f.min(now)));
        self.last_ns = self.last_ns.max(now);
    }

    /// `pid` starts running on `cpu` at `now`. A sleep not ended by a wake-up ends here.
    pub fn switch_in(&mut self, pid: u32, comm: &str, now: u64, cpu: u16) {
        self.mark(now);
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if t.state == State::Done {
            return;
        }
        // Two switch-ins in a row: the first stretch ends where the second begins.
        close_run(self.topo, &mut self.busy_ns, t, now);
        t.sleep_until(now, None);
        t.comm.clear();
        t.comm.push_str(comm);
        if t.last_cpu.is_some_and(|c| c != cpu) {
            self.migrations += 1;
        }
        t.last_cpu = Some(cpu);
        t.state = State::Running { since_ns: now, cpu };
        if !t.cpus.contains(&cpu) {
            t.cpus.push(cpu);
        }
    }

    /// `pid` leaves its CPU at `now`: preempted when `runnable`, else it starts to sleep.
    pub fn switch_out(&mut self, pid: u32, comm: &str, now: u64, runnable: bool) {
        self.mark(now);
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if t.state == State::Done {
            return;
        }
        close_run(self.topo, &mut self.busy_ns, t, now);
        if runnable {
            t.state = State::Runnable;
        } else {
            t.flush_run();
            // Already asleep (a second report of the same sleep): it began at the first.
            if !matches!(t.state, State::Sleeping { .. }) {
                t.state = State::Sleeping { since_ns: now };
            }
        }
    }

    /// `pid` is woken at `now` (a new task's first wake-up starts it).
    pub fn wakeup(&mut self, pid: u32, comm: &str, now: u64) {
        self.wakeup_by(pid, comm, now, None);
    }

    /// `pid` is woken at `now` by the task `waker` when known (the task that was running where
    /// the wake-up was reported, not in an interrupt). The sleep it ends becomes a wait for the
    /// waker, and the waker's run is split there by a wake, when the waker is another task
    /// and is running at `now`; otherwise as [`wakeup`](Self::wakeup).
    pub fn wakeup_by(&mut self, pid: u32, comm: &str, now: u64, waker: Option<u32>) {
        self.mark(now);
        let asleep = self
            .tasks
            .get(&pid)
            .is_some_and(|t| matches!(t.state, State::Sleeping { .. }));
        let waker = waker.filter(|w| {
            *w != pid
                && asleep
                && self
                    .tasks
                    .get(w)
                    .is_some_and(|t| matches!(t.state, State::Running { .. }))
        });
        let by = waker.map(|w| {
            self.relations += 1;
            (w, self.relations)
        });
        if let Some((w, seq)) = by
            && let Some(t) = self.tasks.get_mut(&w)
        {
            let at = now.max(t.last_ns);
            t.last_ns = at;
            if let State::Running { cpu, .. } = t.state {
                close_run(self.topo, &mut self.busy_ns, t, at);
                t.flush_run();
                t.phases.push(Built::Wake { target: pid, seq });
                t.state = State::Running { since_ns: at, cpu };
            }
        }
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if matches!(t.state, State::Sleeping { .. }) {
            t.sleep_until(now, by);
            t.state = State::Runnable;
        }
    }

    /// `pid` ends at `now`; later reports of it are ignored.
    pub fn exit(&mut self, pid: u32, now: u64) {
        self.mark(now);
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        let now = now.max(t.last_ns);
        t.last_ns = now;
        close_run(self.topo, &mut self.busy_ns, t, now);
        t.flush_run();
        t.state = State::Done;
    }

    /// The CPUs `pid` may use, as a kernel CPU list (its trace task's `allowed_cpus`).
    pub fn restrict(&mut self, pid: u32, cpus: String) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.allowed = Some(cpus);
        }
    }

    /// Whether `pid` has been reported.
    pub fn knows(&self, pid: u32) -> bool {
        self.tasks.contains_key(&pid)
    }
}
