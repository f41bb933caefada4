//! The older grammar of rt-app's first releases (`exec`, `period`, `deadline`, `lock_order`,
//! as its `doc/examples/merge/` writes them): each task of it a frame loop.

use super::super::json_tree::Node;
use super::importer::Importer;
use super::tasks::TaskModel;
use super::{RtAppError, Treatment, Unmodelled};
use crate::trace::{FrameSpec, MAX_FRAMES, TaskSpec};

impl Importer {
    /// The older grammar (rt-app before its phases, as `doc/examples/merge/` writes it): each
    /// period, `exec` µs of work, part of it holding the resources of `lock_order`.
    pub(super) fn legacy_task(
        &mut self,
        name: &str,
        task: &Node,
        instance: u32,
        start_ns: u64,
    ) -> Result<TaskModel, RtAppError> {
        let base = format!("tasks.{name}");
        let exec_ns = self.micros(
            task.get("exec").unwrap_or(&Node::Null),
            &format!("{base}.exec"),
        )?;
        let period_ns = match task.get("period") {
            Some(v) => self.micros(v, &format!("{base}.period"))?,
            None => exec_ns,
        };
        if period_ns == 0 {
            return Err(self.invalid(&format!("{base}.period"), "must be above 0".into()));
        }
        if exec_ns > period_ns {
            return Err(self.invalid(
                &format!("{base}.exec"),
                "is longer than the period (rt-app refuses it too)".into(),
            ));
        }
        let deadline_ns = match task.get("deadline") {
            Some(v) => Some(self.micros(v, &format!("{base}.deadline"))?),
            None => None,
        };
        let count = match task.get("loop") {
            Some(v) => self.loop_count(v, &format!("{base}.loop"))?,
            None => None,
        };
        let count = match (count, self.duration_ns) {
            (Some(n), _) => n,
            (None, Some(d)) => d.div_ceil(period_ns),
            (None, None) => return Err(self.forever(&base)),
        };
        if count > MAX_FRAMES {
            return Err(self.invalid(&base, format!("runs more than {MAX_FRAMES} periods")));
        }
        if let Some(Node::Arr(order)) = task.get("lock_order") {
            for (i, r) in order.iter().enumerate() {
                let Node::Str(r) = r else {
                    return Err(self.invalid(
                        &format!("{base}.lock_order[{i}]"),
                        "must be a resource name".into(),
                    ));
                };
                let kind = self
                    .resources
                    .iter()
                    .find(|(n, _)| n == r)
                    .map(|(_, k)| k.clone())
                    .unwrap_or_default();
                let key = format!("lock_order {r}");
                let treatment = match kind.as_str() {
                    "mutex" => Treatment::Approximated(
                        "held as part of the period's work, never contended".into(),
                    ),
                    "wait" | "signal" | "broadcast" => Treatment::Dropped(
                        "paced by its own period: the older grammar does not say which thread \
                         signals it"
                            .into(),
                    ),
                    _ => Treatment::Dropped(format!(
                        "\"{r}\" is not in the resources object (rt-app's older grammar needs it \
                         there)"
                    )),
                };
                self.notes.push(Unmodelled {
                    source: self.source.clone(),
                    task: name.to_owned(),
                    phase: None,
                    key,
                    feature: format!("lock_order ({})", if kind.is_empty() { "?" } else { &kind }),
                    treatment,
                });
            }
        }
        for (key, _) in match task {
            Node::Obj(m) => m.as_slice(),
            _ => &[],
        } {
            let k = key.as_str();
            if ![
                "exec",
                "period",
                "deadline",
                "loop",
                "lock_order",
                "resources",
                "instance",
                "delay",
                "cpus",
                "priority",
                "policy",
                "sleep",
            ]
            .contains(&k)
            {
                self.note(
                    name,
                    None,
                    k,
                    Treatment::Dropped("not a key of rt-app's older grammar: ignored".into()),
                );
            }
        }
        let attrs = self.attributes(name, task, &[])?;
        Ok(TaskModel {
            spec: TaskSpec {
                frames: Some(FrameSpec {
                    period_ns,
                    work_ns: exec_ns,
                    deadline_ns,
                    count,
                }),
                ..attrs.task_spec(name, instance.max(1), start_ns)
            },
            instance,
            forks: Vec::new(),
            layout: Vec::new(),
            source: self.source.clone(),
        })
    }
}
