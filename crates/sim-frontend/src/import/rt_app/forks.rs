//! Forked threads placed: for every `fork`, a task of the forked thread starting where the
//! forking thread reaches it, forked threads that fork followed a bounded number of
//! generations deep.

use super::importer::Importer;
use super::tasks::TaskModel;
use super::{MAX_FORKS, RtAppError, Treatment, Unmodelled};
use crate::trace::TaskSpec;

/// Fork generations followed (a forked thread that forks...).
const MAX_FORK_DEPTH: usize = 16;

impl Importer {
    pub(super) fn too_many_forks(&self, base: &str, target: &str) -> RtAppError {
        self.invalid(
            base,
            format!(
                "forks \"{target}\" more than {MAX_FORKS} times before the run ends (rt-app \
                 stops at its fork limit too): give the loop a count"
            ),
        )
    }

    /// The tasks that start with the run (instance above 0) and, for every fork, a task of
    /// the forked thread starting at the fork's moment plus its own delay; forked threads
    /// that fork are followed [`MAX_FORK_DEPTH`] generations deep.
    /// Each with the index of its model (the thread it is a task of).
    pub(super) fn with_forks(
        &mut self,
        models: &[TaskModel],
    ) -> Result<Vec<(TaskSpec, usize)>, RtAppError> {
        let mut specs: Vec<(TaskSpec, usize)> = models
            .iter()
            .enumerate()
            .filter(|(_, m)| m.instance > 0)
            .map(|(i, m)| (m.spec.clone(), i))
            .collect();
        // (model index, start, generation) of each thread whose forks are still to place.
        let mut queue: Vec<(usize, u64, usize)> = Vec::new();
        for (i, m) in models
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.forks.is_empty())
        {
            // Copies start together and fork alike: past MAX_FORKS of them the limit is hit,
            // or none forks before the horizon.
            for _ in 0..m.instance.min(MAX_FORKS as u32 + 1) {
                queue.push((i, m.spec.start_ns, 0));
            }
        }
        let mut forked: Vec<(usize, u64)> = Vec::new();
        let mut next = 0;
        while next < queue.len() {
            let (i, start, generation) = queue[next];
            next += 1;
            let m = &models[i];
            for (target, offset) in &m.forks {
                let Some(t) = models.iter().position(|c| c.spec.name == *target) else {
                    m.source.clone_into(&mut self.source);
                    return Err(self.invalid(
                        &format!("tasks.{}", m.spec.name),
                        format!("forks \"{target}\", which is not a task of the workload"),
                    ));
                };
                let at = start
                    .saturating_add(*offset)
                    .saturating_add(models[t].spec.start_ns);
                if self.duration_ns.is_some_and(|d| at >= d) {
                    continue;
                }
                if forked.len() >= MAX_FORKS || generation >= MAX_FORK_DEPTH {
                    m.source.clone_into(&mut self.source);
                    return Err(self.too_many_forks(&format!("tasks.{}", m.spec.name), target));
                }
                forked.push((t, at));
                queue.push((t, at, generation + 1));
            }
        }
        // One task per forked target and start, copies for forks at the same moment.
        let mut groups: Vec<(usize, u64, u32)> = Vec::new();
        for (t, at) in forked {
            match groups.iter_mut().find(|(g, a, _)| *g == t && *a == at) {
                Some(g) => g.2 += 1,
                None => groups.push((t, at, 1)),
            }
        }
        let mut per_target: Vec<(usize, u32)> = Vec::new();
        for (t, at, copies) in groups {
            let k = match per_target.iter_mut().find(|(g, _)| *g == t) {
                Some(e) => {
                    e.1 += 1;
                    e.1
                }
                None => {
                    per_target.push((t, 1));
                    1
                }
            };
            let m = &models[t];
            let mut spec = m.spec.clone();
            spec.name = format!("{}-forked{k}", m.spec.name);
            spec.copies = copies;
            spec.start_ns = at;
            specs.push((spec, t));
        }
        for (t, _) in &per_target {
            let m = &models[*t];
            self.notes.push(Unmodelled {
                source: m.source.clone(),
                task: m.spec.name.clone(),
                phase: None,
                key: "fork".into(),
                feature: "fork".into(),
                treatment: Treatment::Approximated(
                    "starts where the forking thread reaches the fork at reference speed".into(),
                ),
            });
        }
        Ok(specs)
    }
}
