//! The interpreter of a task's behaviour: walks its phases, unrolls loops, takes pool chunks
//! and releases frames, one action at a time, so a million-iteration loop costs no memory.

use super::Simulation;
use crate::trace::{FrameSpec, Phase};

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
    Done,
}

impl<'a> Simulation<'a> {
    /// The next thing task `t` does, taking pool chunks and unrolling loops.
    pub(super) fn next_action(&mut self, t: usize) -> Action {
        let pools = &self.trace.pools;
        let pools_left = &mut self.pools_left;
        let task = &mut self.tasks[t];
        match &mut task.program {
            Program::Frames { spec, next, .. } => {
                if *next >= spec.count {
                    Action::Done
                } else {
                    Action::Run(spec.work_ns)
                }
            }
            Program::Phases { stack, pool } => loop {
                if let Some(p) = *pool {
                    if pools_left[p] > 0 {
                        pools_left[p] -= 1;
                        return Action::Run(pools[p].chunk_ns);
                    }
                    *pool = None;
                }
                let Some(top) = stack.last_mut() else {
                    return Action::Done;
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
                let phase = &top.0[top.1];
                top.1 += 1;
                match phase {
                    Phase::RunNs(0) | Phase::SleepNs(0) => {}
                    Phase::RunNs(ns) => return Action::Run(*ns),
                    Phase::SleepNs(ns) => return Action::Sleep(*ns),
                    Phase::Pool(name) => *pool = pools.iter().position(|p| &p.name == name),
                    Phase::Loop(l) => stack.push((l.phases.as_slice(), 0, l.times)),
                }
            },
        }
    }
}
