//! The importer's state through one import (the file being read, the notes so far, the
//! run's length, the default policy, the `resources` object) and what every part of it
//! shares: its errors and notes, the `global` object, and the readers of counts, loop
//! counts, microseconds and bounded integers.

use super::super::json_tree::Node;
use super::tasks::event_of;
use super::{RtAppError, Treatment, Unmodelled};

/// `global` keys that only steer rt-app itself (logs, calibration, memory locking): nothing to
/// model, nothing lost.
const GLOBAL_KEYS: [&str; 14] = [
    "duration",
    "calibration",
    "default_policy",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
    "frag",
];

pub(super) struct Importer {
    pub(super) source: String,
    pub(super) notes: Vec<Unmodelled>,
    pub(super) duration_ns: Option<u64>,
    pub(super) default_policy: String,
    /// The `resources` object (name, type), which the older grammar's `lock_order` refers
    /// to.
    pub(super) resources: Vec<(String, String)>,
    /// Timers whose ref does not start with "unique" (the timer's name in `feature`): rt-app
    /// shares one clock between every thread naming it.
    pub(super) shared_timers: Vec<Unmodelled>,
}

impl Importer {
    pub(super) fn invalid(&self, path: &str, message: String) -> RtAppError {
        RtAppError::Invalid {
            source_name: self.source.clone(),
            path: path.to_owned(),
            message,
        }
    }

    pub(super) fn note(
        &mut self,
        task: &str,
        phase: Option<&str>,
        key: &str,
        treatment: Treatment,
    ) {
        let feature = event_of(key).unwrap_or(key).to_owned();
        self.notes.push(Unmodelled {
            source: self.source.clone(),
            task: task.to_owned(),
            phase: phase.map(str::to_owned),
            key: key.to_owned(),
            feature,
            treatment,
        });
    }

    pub(super) fn global(&mut self, key: &str, value: &Node) -> Result<(), RtAppError> {
        let path = format!("global.{key}");
        match key {
            "duration" => {
                self.duration_ns = match value {
                    Node::Int(-1) => None,
                    Node::Int(s) if *s > 0 && *s <= 100_000 => Some(*s as u64 * 1_000_000_000),
                    _ => {
                        return Err(self.invalid(
                            &path,
                            format!("must be -1 or 1..=100000 seconds, got {}", show(value)),
                        ));
                    }
                };
            }
            "default_policy" => match value {
                Node::Str(p) => p.clone_into(&mut self.default_policy),
                _ => {
                    return Err(
                        self.invalid(&path, format!("must be a string, got {}", value.kind()))
                    );
                }
            },
            k if GLOBAL_KEYS.contains(&k) => {}
            _ => {
                return Err(self.invalid(&path, "is not an rt-app global key".into()));
            }
        }
        Ok(())
    }

    pub(super) fn forever(&self, base: &str) -> RtAppError {
        self.invalid(
            base,
            "loops forever (loop -1, the default for a task) and global.duration is -1 or \
             missing: rt-app runs it until stopped; give the run's length with `import rt-app \
             --duration`, the task a loop count or the file a duration"
                .into(),
        )
    }

    pub(super) fn count(&self, v: &Node, path: &str) -> Result<u64, RtAppError> {
        match v {
            Node::Int(n) if *n >= 0 && *n <= i128::from(u64::MAX) => Ok(*n as u64),
            _ => Err(self.invalid(
                path,
                format!("must be a non-negative integer, got {}", show(v)),
            )),
        }
    }

    pub(super) fn loop_count(&self, v: &Node, path: &str) -> Result<Option<u64>, RtAppError> {
        match v {
            Node::Int(-1) => Ok(None),
            Node::Int(n) if *n >= 1 && *n <= i128::from(u64::MAX) => Ok(Some(*n as u64)),
            _ => Err(self.invalid(
                path,
                format!("must be -1 (forever) or a count from 1, got {}", show(v)),
            )),
        }
    }

    pub(super) fn micros(&self, v: &Node, path: &str) -> Result<u64, RtAppError> {
        match v {
            Node::Int(us) if *us >= 0 => u64::try_from(*us * 1000)
                .map_err(|_| self.invalid(path, format!("{us} us is out of range"))),
            _ => Err(self.invalid(
                path,
                format!(
                    "must be a non-negative integer of microseconds, got {}",
                    show(v)
                ),
            )),
        }
    }

    pub(super) fn int_in(
        &self,
        v: &Node,
        path: &str,
        lo: i128,
        hi: i128,
    ) -> Result<i128, RtAppError> {
        match v {
            Node::Int(n) if (lo..=hi).contains(n) => Ok(*n),
            _ => Err(self.invalid(
                path,
                format!("must be an integer in {lo}..={hi}, got {}", show(v)),
            )),
        }
    }
}

pub(super) fn show(v: &Node) -> String {
    match v {
        Node::Int(n) => n.to_string(),
        Node::Float(f) => f.to_string(),
        Node::Str(s) => format!("\"{s}\""),
        Node::Bool(b) => b.to_string(),
        Node::Null => "null".into(),
        Node::Arr(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Node::Obj(_) => "an object".into(),
    }
}
