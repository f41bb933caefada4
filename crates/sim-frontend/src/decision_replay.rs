//! `hybrid-sim decisions`: a live run's decision log fed through the same scheduler core
//! again, each dispatch it polls out compared with the one the loop sent. No model is
//! involved: every input is the one the loop handed over, so a difference means the core (or a
//! knob changed with `--set`) decides differently, never that the machine was mispredicted.

use crate::knobs::{KnobError, Knobs};
use crate::machine_file::Machine;
use crate::registry::custom_policies;
use hybridland_machine::MachineError;
use hybridland_policy::Classed;
use hybridland_policy::{
    Builtin, CoreConfig, CpuSet, CustomPolicy, Dispatch, KnobValues, Output, OwnedInput,
    PlacementPolicy, SchedCore, Slot, Target, TimeNs, knob_index,
};
use hybridland_trace::decisions::{DecisionLog, Entry, Nudged, Sent};
use std::collections::{BTreeMap, VecDeque};

/// How many inputs before a difference the report shows.
const CONTEXT: usize = 12;

/// What a decision replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionReport {
    /// The policy replayed.
    pub policy: String,
    /// Entries read.
    pub entries: usize,
    /// Dispatches the loop sent.
    pub sent: u64,
    /// Of those, how many the replayed core polled out identically (task, target, slice,
    /// vtime) before the first difference (the replay stops there).
    pub agreed: u64,
    /// Nudges the loop carried out, and how many the core gave again.
    pub nudges: u64,
    /// See [`nudges`](Self::nudges).
    pub nudges_agreed: u64,
    /// Task classes the loop wrote for the kernel's fast path, and how many the core gave
    /// again.
    pub classed: u64,
    /// See [`classed`](Self::classed).
    pub classed_agreed: u64,
    /// The log was cut at its bound.
    pub truncated: bool,
    /// The first difference, if any.
    pub difference: Option<Difference>,
}

/// The first place the replayed core and the log part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The entry's line in the file (1-based, the header is line 1).
    pub line: usize,
    /// The latest time the log carried before it.
    pub now_ns: Option<u64>,
    /// The task.
    pub task: Option<u32>,
    /// What the loop did.
    pub logged: String,
    /// What the replayed core did.
    pub replayed: String,
    /// The inputs just before it, oldest first, as the log has them.
    pub inputs: Vec<String>,
}

/// A decision log that cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum DecisionReplayError {
    /// The machine in the header does not read.
    #[error("the log's machine: {0}")]
    Machine(#[from] MachineError),
    /// A `--set` knob is wrong.
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// The policy is unknown here, or does not fit the machine.
    #[error("policy `{policy}`: {reason}")]
    Policy {
        /// The header's policy.
        policy: String,
        /// Why.
        reason: String,
    },
}

fn dispatch_text(d: &Sent) -> String {
    let target = match d.target() {
        Target::Cpu(c) => format!("cpu {c}"),
        Target::Preempt(c) => format!("cpu {c}, preempting"),
        Target::Shared => "the shared queue".to_owned(),
    };
    format!(
        "task {} to {target}, slice {} ns, vtime {}",
        d.task, d.slice_ns, d.vtime
    )
}

/// A registered policy's knob values for a replay of its log: its defaults, the log's
/// values over them, then the `--set` items over those. A logged knob the policy does not
/// declare, or a value outside its range, is an error: the replay would not be the run.
fn logged_knobs(
    policy: &CustomPolicy,
    logged: &BTreeMap<String, i64>,
    knobs: &Knobs,
) -> Result<KnobValues, String> {
    let mut values = policy.default_knobs().map_err(|e| e.to_string())?;
    for (name, value) in logged {
        let i = knob_index(policy.knobs, name)
            .ok_or_else(|| format!("the log's knob `{name}` is not one of the policy's"))?;
        values
            .set(policy.knobs, i, *value)
            .map_err(|e| format!("the log's {e}"))?;
    }
    let given = knobs.custom_values(policy).map_err(|e| e.to_string())?;
    for (i, spec) in policy.knobs.iter().enumerate() {
        if knobs.get(spec.name).is_some() {
            values
                .set(policy.knobs, i, given.get(i).unwrap_or(spec.default))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(values)
}

/// Replays `log`, with `knobs` (the `--set` items) over the header's hybridland knobs.
pub fn replay_decisions(
    log: &DecisionLog,
    knobs: &Knobs,
) -> Result<DecisionReport, DecisionReplayError> {
    replay_decisions_observed(log, knobs, &mut |_| {})
}

/// One dispatch the replayed core polled out, handed to the observer of
/// [`replay_decisions_observed`] before it is compared with the log.
#[derive(Copy, Clone, Debug)]
pub struct ReplayedDispatch<'a> {
    /// The latest time the log carried.
    pub now_ns: Option<u64>,
    /// What the core decided.
    pub dispatch: &'a Dispatch,
    /// The idle CPUs of the snapshot the core decided against (`None` after a failed one).
    pub idle: Option<&'a CpuSet>,
}

/// [`replay_decisions`], showing `observe` each dispatch the core polls out (`hybrid-sim
/// decisions -vv` logs them).
pub fn replay_decisions_observed(
    log: &DecisionLog,
    knobs: &Knobs,
    observe: &mut dyn FnMut(&ReplayedDispatch<'_>),
) -> Result<DecisionReport, DecisionReplayError> {
    let h = log.header();
    let machine = Machine::from_toml_str(&h.machine, "the decision log's machine")?;
    let topo = *machine.topology;
    let config = knobs.policy_config_over(h.knobs)?;
    let err = |reason: String| DecisionReplayError::Policy {
        policy: h.policy.clone(),
        reason,
    };
    let policy: Box<dyn PlacementPolicy> = match Builtin::from_name(&h.policy) {
        Some(b) => Box::new(
            b.build(&topo, &config, h.seed)
                .map_err(|e| err(e.to_string()))?,
        ),
        None => {
            let custom = custom_policies()
                .iter()
                .find(|c| c.name == h.policy)
                .ok_or_else(|| err("not a policy this program knows".into()))?;
            let values = logged_knobs(custom, &h.policy_knobs, knobs).map_err(err)?;
            (custom.build)(&topo, h.seed, &values).map_err(err)?
        }
    };
    let storage = vec![Slot::EMPTY; Slot::count_for(h.max_tasks)];
    let mut core = SchedCore::with_policy(topo, policy, CoreConfig::from(&h.core), storage)
        .map_err(|e| err(e.to_string()))?;
    core.set_helper(h.helper);

    // The totals, counted in one pass: the replay stops at the first difference.
    let (sent, nudges, classed) = log.iter().fold((0, 0, 0), |(s, n, c), e| match e {
        Entry::Sent(_) => (s + 1, n, c),
        Entry::Nudged(_) => (s, n + 1, c),
        Entry::Classed(_) => (s, n, c + 1),
        Entry::Input { .. } => (s, n, c),
    });
    let mut report = DecisionReport {
        policy: h.policy.clone(),
        entries: log.len(),
        sent,
        agreed: 0,
        nudges,
        nudges_agreed: 0,
        classed,
        classed_agreed: 0,
        truncated: h.truncated,
        difference: None,
    };
    let mut now = None;
    let mut idle_seen: Option<CpuSet> = None;
    // The last entries before the current one, for the report of a difference.
    let mut recent: VecDeque<Entry> = VecDeque::with_capacity(CONTEXT + 1);
    for (i, entry) in log.iter().enumerate() {
        now = entry.now().map(TimeNs::ns).or(now);
        // What the loop did and what the core does now, when they differ.
        let differs = match &entry {
            Entry::Input { now, input } => {
                match input {
                    OwnedInput::Snapshot(s) => idle_seen = Some(s.idle),
                    OwnedInput::SnapshotFailed => idle_seen = None,
                    _ => {}
                }
                // An input the live core took is taken here too (a batch the loop could hand
                // over fits); one it refused is refused again, with no effect either time.
                let _ = core.handle(*now, input.as_input());
                None
            }
            Entry::Sent(sent) => match core.poll() {
                Some(Output::Dispatch(d)) => {
                    observe(&ReplayedDispatch {
                        now_ns: now,
                        dispatch: &d,
                        idle: idle_seen.as_ref(),
                    });
                    if sent.matches(&d) {
                        report.agreed += 1;
                        None
                    } else {
                        Some((sent.task, dispatch_text(&Sent::of(&d))))
                    }
                }
                other => Some((sent.task, output_text(other))),
            }
            .map(|(task, replayed)| (task, dispatch_text(sent), replayed)),
            Entry::Nudged(n) => match core.poll() {
                Some(Output::Nudge(got)) if Nudged::of(&got) == *n => {
                    report.nudges_agreed += 1;
                    None
                }
                other => Some((n.task, nudge_text(n), output_text(other))),
            },
            Entry::Classed(c) => match core.poll() {
                Some(Output::Class(got)) if got == *c => {
                    report.classed_agreed += 1;
                    None
                }
                other => Some((c.task, class_text(c), output_text(other))),
            },
        };
        if let Some((task, logged, replayed)) = differs {
            report.difference = Some(Difference {
                line: i + 2,
                now_ns: now,
                task: Some(task.0),
                logged,
                replayed,
                inputs: recent
                    .iter()
                    .map(|e| serde_json::to_string(e).unwrap_or_default())
                    .collect(),
            });
            break;
        }
        if recent.len() == CONTEXT {
            let _oldest = recent.pop_front();
        }
        recent.push_back(entry);
    }
    Ok(report)
}

fn nudge_text(n: &Nudged) -> String {
    format!("nudged cpu {} (task {})", n.cpu, n.task)
}

fn class_text(c: &Classed) -> String {
    format!("classed task {} as {}", c.task, c.class.0)
}

fn output_text(out: Option<Output>) -> String {
    match out {
        None => "nothing".to_owned(),
        Some(Output::Dispatch(d)) => dispatch_text(&Sent::of(&d)),
        Some(Output::Nudge(n)) => nudge_text(&Nudged::of(&n)),
        Some(Output::Class(c)) => class_text(&c),
    }
}

impl DecisionReport {
    /// Every dispatch and nudge the loop carried out came out of the replayed core again.
    pub fn all_agree(&self) -> bool {
        self.difference.is_none()
    }

    /// The report as a person reads it.
    pub fn render(&self) -> String {
        use core::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "decision replay of policy {}: {} entries{}",
            self.policy,
            self.entries,
            if self.truncated {
                " (the log reached its bound: later decisions were not logged)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "dispatches sent: {}, replayed identically: {}",
            self.sent, self.agreed
        );
        let _ = writeln!(
            s,
            "nudges carried out: {}, replayed identically: {}",
            self.nudges, self.nudges_agreed
        );
        let _ = writeln!(
            s,
            "task classes written: {}, replayed identically: {}",
            self.classed, self.classed_agreed
        );
        match &self.difference {
            None => {
                let _ = writeln!(s, "every dispatch and nudge agrees");
            }
            Some(d) => {
                let _ = writeln!(
                    s,
                    "first difference at line {} (time {} ns, task {}):",
                    d.line,
                    d.now_ns.map_or_else(|| "unknown".into(), |t| t.to_string()),
                    d.task.map_or_else(|| "-".into(), |t| t.to_string()),
                );
                let _ = writeln!(s, "  the loop sent:       {}", d.logged);
                let _ = writeln!(s, "  the replayed core:   {}", d.replayed);
                let _ = writeln!(s, "  the inputs before it (oldest first):");
                for line in &d.inputs {
                    let _ = writeln!(s, "    {line}");
                }
            }
        }
        s
    }
}
