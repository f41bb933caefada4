//! The interpreter of a task's behaviour: walks its phases, unrolls loops, takes pool chunks
//! and releases frames, one action at a time, so a million-iteration loop costs no memory.
//!
//! The wake-up relation is carried out here too: a `wake` wakes the copies of the named task
//! blocked in a `wait_for` this task (or, when none is, keeps the wake-up for their next such
//! wait, counted; `wake_if_waiting` loses it instead), and a `wait_for` takes a kept wake-up
//! or blocks the task until one comes. Neither takes simulated time.

use super::{Event, Simulation, Status, WokenBy};
use crate::trace::{FrameSpec, Phase};
use hybridland_policy::CpuId;

/// Where a task's behaviour stands.
#[derive(Clone, Debug)]
pub(super) enum Program<'t> {
    Phases {
        /// Loop cursors, innermost last: (phases, next index, repetitions left).
        stack: Vec<(&'t [Phase], usize, u64)>,
        /// Pool being drained.
        pool: Option<usize>,
    },
    Frames {
        spec: &'t FrameSpec,
        next: u64,
        release_ns: u64,
    },
}

pub(super) enum Action {
    Run(u64),
    Sleep(u64),
    /// Blocked in a `wait_for` until a waker comes.
    Block,
    Done,
}

/// One step of a program, relations included.
enum Step<'t> {
    Act(Action),
    Wake { task: &'t str, kept: bool },
    Wait(&'t [String]),
}

impl<'a> Simulation<'a> {
    /// The next thing task `t` does that takes time (or ends or blocks it), carrying out the
    /// wake-ups it sends and the waits a kept wake-up already answers on the way.
    pub(super) fn next_action(&mut self, t: usize) -> Action {
        loop {
            match self.next_step(t) {
                Step::Act(a) => return a,
                Step::Wake { task, kept } => self.send_wake(t, task, kept),
                Step::Wait(wakers) => {
                    if !self.take_kept(t, wakers) {
                        self.tasks[t].waiting_for = Some(wakers);
                        return Action::Block;
                    }
                }
            }
        }
    }

    /// Task `t` wakes the copies of the task named `target` (not itself): those blocked
    /// waiting for `t`'s task are woken now; the others keep the wake-up when `kept`.
    fn send_wake(&mut self, t: usize, target: &str, kept: bool) {
        let Some(&spec) = self.spec_by_name.get(target) else {
            return;
        };
        let waker_spec = self.tasks[t].spec;
        let waker_name = self.trace.tasks[waker_spec].name.as_str();
        // Where the waker is: on its CPU when running, else where it last ran.
        let waker_cpu = self.tasks[t].last_cpu;
        let running = match (&self.tasks[t].run, waker_cpu) {
            (Some(run), Some(cpu)) if self.tasks[t].status == Status::Running => Some(WokenBy {
                task: t,
                cpu,
                run_start_ns: run.since_ns.min(self.now),
                at_ns: self.now,
            }),
            _ => None,
        };
        let first = self.spec_first[spec];
        let copies = self.trace.tasks[spec].copies as usize;
        for i in first..first + copies {
            if i == t {
                continue;
            }
            let task = &mut self.tasks[i];
            if task.status == Status::Done {
                continue;
            }
            let waiting = task
                .waiting_for
                .is_some_and(|w| w.iter().any(|n| n == waker_name));
            if waiting {
                task.waiting_for = None;
                task.woken_by = running;
                self.events.push(self.now, Event::Woken(i, t, waker_cpu));
            } else if kept {
                match task.pending.iter_mut().find(|(s, _)| *s == waker_spec) {
                    Some((_, n)) => *n = n.saturating_add(1),
                    None => task.pending.push((waker_spec, 1)),
                }
            }
        }
    }

    /// The waker's CPU when the wake-up of a task by task `waker` (on `cpu`) is synchronous:
    /// the waker slept, blocked or ended right after its wake step (a wake-up is placed after
    /// the waker's program has gone on to its next action), leaving the CPU idle with nothing
    /// queued. Live, the kernel's sync flag says the same before the waker sleeps.
    pub(super) fn sync_waker(&self, waker: usize, cpu: Option<CpuId>) -> Option<CpuId> {
        let cpu = cpu?;
        let left = matches!(self.tasks[waker].status, Status::Sleeping | Status::Done);
        (left && self.idle.contains(cpu) && self.cpus[cpu.index()].local.is_empty()).then_some(cpu)
    }

    /// Takes one kept wake-up from any of `wakers` for task `t`, if it has one.
    fn take_kept(&mut self, t: usize, wakers: &[String]) -> bool {
        let tasks = &self.trace.tasks;
        let pending = &mut self.tasks[t].pending;
        let found = pending
            .iter_mut()
            .find(|(s, n)| *n > 0 && wakers.iter().any(|w| *w == tasks[*s].name));
        match found {
            Some((_, n)) => {
                *n -= 1;
                true
            }
            None => false,
        }
    }

    /// The next step of task `t`'s program, taking pool chunks and unrolling loops.
    fn next_step(&mut self, t: usize) -> Step<'a> {
        let pools = &self.trace.pools;
        let pools_left = &mut self.pools_left;
        let task = &mut self.tasks[t];
        match &mut task.program {
            Program::Frames { spec, next, .. } => {
                if *next >= spec.count {
                    Step::Act(Action::Done)
                } else {
                    Step::Act(Action::Run(spec.work_ns))
                }
            }
            Program::Phases { stack, pool } => loop {
                if let Some(p) = *pool {
                    if pools_left[p] > 0 {
                        pools_left[p] -= 1;
                        return Step::Act(Action::Run(pools[p].chunk_ns));
                    }
                    *pool = None;
                }
                let Some(top) = stack.last_mut() else {
                    return Step::Act(Action::Done);
                };
                if top.1 == top.0.len() {
                    if top.2 > 1 {
                        top.2 -= 1;
                        top.1 = 0;
                    } else {
                        stack.pop();
                    }
                    continue;
                }
                let body: &'a [Phase] = top.0;
                let phase = &body[top.1];
                top.1 += 1;
                match phase {
                    Phase::RunNs(0) | Phase::SleepNs(0) => {}
                    Phase::RunNs(ns) => return Step::Act(Action::Run(*ns)),
                    Phase::SleepNs(ns) => return Step::Act(Action::Sleep(*ns)),
                    Phase::Wake(task) => return Step::Wake { task, kept: true },
                    Phase::WakeIfWaiting(task) => return Step::Wake { task, kept: false },
                    Phase::WaitFor(wakers) => return Step::Wait(wakers),
                    Phase::Pool(name) => *pool = pools.iter().position(|p| &p.name == name),
                    Phase::Loop(l) => stack.push((l.phases.as_slice(), 0, l.times)),
                }
            },
        }
    }
}
