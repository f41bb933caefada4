//! The ids the simulator hands the scheduler core for its tasks, reused as the kernel reuses
//! pids: a task takes an id at its first hand-over, and gives it back when it ends (the core
//! is told with `Input::Exit`), so a later task may get the same id. The core tells the two
//! apart by its record's generation (`hybridland_policy::TaskKey`), as it must live.
//!
//! The kernel hands out pids cyclically and reuses one only after wrapping; the model takes the
//! lowest free id, so a replay exercises reuse on any trace where a task ends before another
//! starts. Ids never decide anything: the core's storage is keyed by them, nothing else.

use hybridland_policy::TaskId;
use std::collections::BTreeSet;

/// Task index to core id, and back.
#[derive(Clone, Debug, Default)]
pub(super) struct Pids {
    /// Per task index: its id while it lives.
    of_task: Vec<Option<u32>>,
    /// Per id: the task index holding it.
    owner: Vec<Option<usize>>,
    /// Ids given back, lowest first.
    free: BTreeSet<u32>,
}

impl Pids {
    /// Room for `nr_tasks` tasks.
    pub(super) fn new(nr_tasks: usize) -> Self {
        Self {
            of_task: vec![None; nr_tasks],
            owner: Vec::new(),
            free: BTreeSet::new(),
        }
    }

    /// The id of `task`, taking the lowest free one at its first call.
    /// [`TaskId::UNTRACKABLE`] for an index outside the room.
    pub(super) fn id(&mut self, task: usize) -> TaskId {
        let Some(slot) = self.of_task.get_mut(task) else {
            return TaskId::UNTRACKABLE;
        };
        if let Some(id) = *slot {
            return TaskId(id);
        }
        let id = match self.free.pop_first() {
            Some(id) => id,
            None => {
                // Below the trace's task limit, far from u32::MAX.
                let id = u32::try_from(self.owner.len()).unwrap_or(u32::MAX - 1);
                self.owner.push(None);
                id
            }
        };
        *slot = Some(id);
        if let Some(o) = self.owner.get_mut(id as usize) {
            *o = Some(task);
        }
        TaskId(id)
    }

    /// The id `task` holds, if it holds one.
    pub(super) fn held(&self, task: usize) -> Option<TaskId> {
        self.of_task.get(task).copied().flatten().map(TaskId)
    }

    /// The task holding `id`.
    pub(super) fn task_of(&self, id: TaskId) -> Option<usize> {
        self.owner.get(id.0 as usize).copied().flatten()
    }

    /// `task` ended: its id is free again. Returns the id it held.
    pub(super) fn release(&mut self, task: usize) -> Option<TaskId> {
        let id = self.of_task.get_mut(task)?.take()?;
        if let Some(o) = self.owner.get_mut(id as usize) {
            *o = None;
        }
        self.free.insert(id);
        Some(TaskId(id))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn an_ended_tasks_id_goes_to_the_next_new_task() {
        let mut p = Pids::new(4);
        assert_eq!(
            (p.id(2), p.id(0), p.id(2)),
            (TaskId(0), TaskId(1), TaskId(0))
        );
        assert_eq!(p.task_of(TaskId(1)), Some(0));
        assert_eq!(p.release(2), Some(TaskId(0)));
        assert_eq!(p.held(2), None);
        assert_eq!(p.task_of(TaskId(0)), None);
        assert_eq!(p.id(3), TaskId(0), "reused");
        assert_eq!(p.task_of(TaskId(0)), Some(3));
        assert_eq!(p.id(1), TaskId(2));
        assert_eq!(p.id(9), TaskId::UNTRACKABLE);
    }
}
