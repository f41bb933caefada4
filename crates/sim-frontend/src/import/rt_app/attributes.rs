//! A task's scheduling attributes (`cpus`, `priority`, `policy`, `util_min`, `util_max`):
//! the ones it runs its whole life with, its policy and nice as the trace's weight, and a
//! phase that changes one, noted.

use super::super::json_tree::Node;
use super::importer::{Importer, show};
use super::tasks::PhaseIn;
use super::{RtAppError, Treatment};
use crate::trace::TaskSpec;

/// The kernel's `sched_prio_to_weight`, nice -20 to 19.
const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The scheduling attributes a phase may change.
pub(super) const ATTRIBUTES: [&str; 5] = ["cpus", "priority", "policy", "util_min", "util_max"];

impl Importer {
    /// The scheduling attributes the whole task runs with: the task's own, or one every phase
    /// gives alike; a phase that changes one is noted (a trace task keeps its attributes).
    pub(super) fn attributes(
        &mut self,
        task: &str,
        node: &Node,
        phases: &[PhaseIn<'_>],
    ) -> Result<Attributes, RtAppError> {
        let base = format!("tasks.{task}");
        let mut chosen: [Option<(&Node, String)>; ATTRIBUTES.len()] = Default::default();
        for (i, key) in ATTRIBUTES.iter().enumerate() {
            let own = node.get(key).map(|v| (v, format!("{base}.{key}")));
            let in_phases: Vec<(&PhaseIn<'_>, &Node)> = phases
                .iter()
                .filter(|p| p.name.is_some())
                .filter_map(|p| p.node.get(key).map(|v| (p, v)))
                .collect();
            let all_alike = !in_phases.is_empty()
                && in_phases.len() == phases.len()
                && in_phases.iter().all(|(_, v)| *v == in_phases[0].1);
            chosen[i] = match own {
                Some(o) => Some(o),
                None if all_alike => {
                    let (p, v) = in_phases[0];
                    let name = p.name.clone().unwrap_or_default();
                    Some((v, format!("{base}.phases.{name}.{key}")))
                }
                None => None,
            };
            let effective = chosen[i].as_ref().map(|(v, _)| *v);
            for (p, v) in &in_phases {
                if Some(*v) != effective {
                    let kept = effective.map_or_else(|| "the default".to_owned(), show);
                    self.note(
                        task,
                        p.name.as_deref(),
                        key,
                        Treatment::Dropped(format!(
                            "a trace task keeps one {key} for its whole life; it keeps {kept}"
                        )),
                    );
                }
            }
        }
        let [cpus, priority, policy, util_min, util_max] = chosen;
        let cpus = match cpus {
            None => None,
            Some((v, path)) => Some(self.cpu_list(v, &path)?),
        };
        let policy_name = match &policy {
            None => self.default_policy.clone(),
            Some((Node::Str(p), _)) => p.clone(),
            Some((v, path)) => {
                return Err(self.invalid(path, format!("must be a string, got {}", v.kind())));
            }
        };
        let weight = match policy_name.as_str() {
            "SCHED_OTHER" | "SCHED_BATCH" => {
                if policy_name == "SCHED_BATCH" {
                    self.note(
                        task,
                        None,
                        "policy",
                        Treatment::Approximated(
                            "SCHED_BATCH as SCHED_OTHER of its nice: the model has no batch \
                             class (no wake-up preemption, longer slices)"
                                .into(),
                        ),
                    );
                }
                match priority {
                    None => 100,
                    Some((v, path)) => {
                        let nice = self.int_in(v, &path, -20, 19)?;
                        nice_to_cpu_weight(nice as i32)
                    }
                }
            }
            "SCHED_IDLE" => {
                self.note(
                    task,
                    None,
                    "policy",
                    Treatment::Approximated("SCHED_IDLE as the lowest weight, 1".into()),
                );
                1
            }
            "SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE" => {
                self.note(
                    task,
                    None,
                    "policy",
                    Treatment::Approximated(format!(
                        "{policy_name} as a normal task of weight 100: the simulator has no \
                         real-time or deadline class"
                    )),
                );
                100
            }
            other => {
                let path = policy.map_or_else(|| "global.default_policy".to_owned(), |(_, p)| p);
                return Err(self.invalid(
                    &path,
                    format!(
                        "\"{other}\" is not a policy (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, \
                         SCHED_RR, SCHED_DEADLINE)"
                    ),
                ));
            }
        };
        let util_min = match util_min {
            None => None,
            Some((v, path)) => Some(self.int_in(v, &path, 0, 1024)? as u16),
        };
        let util_max = match util_max {
            None => None,
            Some((v, path)) => Some(self.int_in(v, &path, 0, 1024)? as u16),
        };
        if let (Some(lo), Some(hi)) = (util_min, util_max)
            && lo > hi
        {
            return Err(self.invalid(
                &format!("{base}.util_min"),
                format!("{lo} is above util_max {hi}"),
            ));
        }
        Ok(Attributes {
            cpus,
            weight,
            util_min,
            util_max,
        })
    }

    fn cpu_list(&self, v: &Node, path: &str) -> Result<String, RtAppError> {
        let Node::Arr(items) = v else {
            return Err(self.invalid(
                path,
                format!("must be an array of CPU numbers, got {}", v.kind()),
            ));
        };
        if items.is_empty() {
            return Err(self.invalid(path, "is empty: a thread needs at least one CPU".into()));
        }
        let mut ids = Vec::new();
        for (i, item) in items.iter().enumerate() {
            ids.push(self.int_in(item, &format!("{path}[{i}]"), 0, 65_535)?);
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids
            .iter()
            .map(i128::to_string)
            .collect::<Vec<_>>()
            .join(","))
    }
}

pub(super) struct Attributes {
    pub(super) cpus: Option<String>,
    pub(super) weight: u32,
    pub(super) util_min: Option<u16>,
    pub(super) util_max: Option<u16>,
}

impl Attributes {
    /// The trace's entry for task `name` with these attributes: `copies` copies from
    /// `start_ns`, no phases or frames yet.
    pub(super) fn task_spec(&self, name: &str, copies: u32, start_ns: u64) -> TaskSpec {
        TaskSpec {
            name: name.to_owned(),
            copies,
            start_ns,
            weight: self.weight,
            allowed_cpus: self.cpus.clone(),
            util: None,
            cache_sensitivity_pct: 0,
            phases: Vec::new(),
            frames: None,
        }
    }
}

/// The kernel's weight for `nice`, on the cgroup `cpu.weight` scale the trace uses
/// (`sched_weight_to_cgroup`: nice 0's 1024 is 100).
fn nice_to_cpu_weight(nice: i32) -> u32 {
    let w = NICE_TO_WEIGHT[(nice + 20) as usize];
    ((w * 100 + 512) / 1024).clamp(1, 10_000)
}
