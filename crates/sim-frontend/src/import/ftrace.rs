//! Scheduler recordings turned into a [`Trace`]: the text that `/sys/kernel/tracing/trace`
//! prints (with or without the `(tgid)` column), `trace-cmd report` in its current form (the
//! sched plugin's `COMM:PID [PRIO] S ==> COMM:PID [PRIO]` and `COMM:PID [PRIO] success=1
//! CPU:003`), its older form and `-N` (`prev_comm=.. prev_state=S ==> next_comm=..`,
//! `comm=.. pid=.. success=1 target_cpu=..`), `-R` (raw fields, numeric `prev_state`), and
//! `perf script` / `perf sched script` in either switch form, with or without call chains
//! (address lines indented under an event are skipped).
//!
//! `prev_state` is read as the kernel prints it: `R` or `R+` (and a number with none of the
//! TASK_REPORT bits, such as 0, 256 or 4096) is a preemption, the task stays runnable; every
//! other state is a sleep.
//!
//! The waker of a wake-up is the task the line was reported from (the `COMM-PID` before the
//! CPU: `sched_waking` runs in the waker's context) unless that is the idle task or the
//! line's flags (tracefs's `d.s4.` column, where present) say it ran in an interrupt (`h`,
//! `H`, `s`, `z`, `Z` third): then the wake-up has no task waker. Formats without the flags
//! column (`trace-cmd report` without `-l`, `perf script`) cannot tell an interrupt from the
//! task it interrupted, so there a wake-up from an interrupt names the interrupted task. A
//! wake-up with a waker becomes the trace's wake-up relation (the builder's
//! [`wakeup_by`](TimelineBuilder::wakeup_by)).
//!
//! Per task (every pid but 0, the idle task): each stretch from being switched in to being
//! switched out is a run burst, turned into reference work by the capacity of the CPU it ran
//! on (a burst of 10 ms on a capacity-512 CPU is 5 ms of reference work); a switch-out in any
//! state but `R` (runnable: preempted) starts a sleep, which ends at the task's next wake-up
//! (`sched_wakeup`, `sched_waking` or, failing those, its next switch-in). Consecutive bursts
//! with only preemptions between them are one run. The task starts at its first event and
//! ends at `sched_process_exit` or the end of the recording; the trace's horizon is the
//! recording's length. The CPUs each task ran on are kept ([`FtraceImport::observed_cpus`])
//! and become its `allowed_cpus` only when asked, since a recording cannot tell a pinned task
//! from one that never moved.
//!
//! A recording may lack a switch (real trace-cmd and perf recordings of a 6.18 kernel do, with
//! no lost-events mark and no overrun counted): a `sched_switch` on a CPU whose `prev` is not
//! the task last switched in there. The task switched in there left at some time between the
//! last line that showed it running there and this switch, and `prev` came in then; both are
//! taken at that last line, which gives the leaving task only the time it was seen running
//! and the CPU no gap it did not show, and the leaving task sleeps until its next wake-up (or
//! switch-in). They are counted ([`FtraceImport::missed_switches`]).
//!
//! Lines: `#` comments and the tools' headers are skipped; an event line with an event this
//! importer does not use is skipped and counted ([`FtraceImport::skipped`]); a line of neither
//! shape, or one of the used events whose fields do not parse, is an error naming its line.

mod lines;
#[cfg(test)]
mod tests;

use super::timeline::{TimelineBuilder, TimelineError};
use crate::trace::{Trace, TraceError};
use hybridland_policy::{CpuId, Topology};
use lines::{
    fields, is_comment, is_header, is_stack_frame, parse_line, parse_switch, parse_wakeup,
    state_is_runnable,
};
use std::collections::BTreeMap;

/// Largest recording text accepted, checked before reading: about three million event lines,
/// which the importer holds in well under the simulator's 1 GiB budget.
pub const MAX_FTRACE_BYTES: usize = 256 << 20;

/// A recording turned into a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct FtraceImport {
    /// The trace (valid: it passed [`Trace::validate_for`] on the topology given).
    pub trace: Trace,
    /// Event lines skipped because this importer does not use their event, by event name.
    pub skipped: BTreeMap<String, u64>,
    /// Per task (by its name in the trace): the CPUs it was seen running on, as a CPU list.
    pub observed_cpus: BTreeMap<String, String>,
    /// Tasks whose phases were more than a trace task holds, folded into a loop of their
    /// average run and sleep with the same run and sleep totals.
    pub folded: Vec<String>,
    /// Per CPU that ran anything: the wall time it ran the recorded tasks, ns.
    pub busy_ns: BTreeMap<u16, u64>,
    /// Switch-ins on a CPU other than the task's previous one.
    pub migrations: u64,
    /// Wake-ups by another task kept as wake-up relations in the trace.
    pub relations: u64,
    /// Switches the recording lacks: a `sched_switch` on a CPU whose `prev` is not the task
    /// last switched in there (see the module documentation for how each is taken).
    pub missed_switches: u64,
    /// The tracer's lost-events marks (`CPU:1 [LOST 12 EVENTS]` in tracefs,
    /// `CPU:1 [12 EVENTS DROPPED]` in trace-cmd): the events it dropped there are missing.
    pub lost_marks: u64,
}

impl FtraceImport {
    /// What the trace does not carry exactly as recorded, one line per item: each folded task,
    /// and the switches the recording lacks. Empty when the trace is the recording as it is.
    pub fn note_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .folded
            .iter()
            .map(|task| {
                format!(
                    "task \"{task}\": more bursts than a trace task holds ({} phases), folded \
                     into a loop of its average run and sleep (the same totals)",
                    crate::trace::MAX_PHASES
                )
            })
            .collect();
        if self.missed_switches > 0 {
            lines.push(format!(
                "{} sched_switch(es) missing from the recording (a sched_switch whose prev is \
                 not the task last switched in on that CPU): each taken at the last line that \
                 showed the task leaving running there",
                self.missed_switches
            ));
        }
        if self.lost_marks > 0 {
            lines.push(format!(
                "{} lost-events mark(s) (`CPU:N [LOST ...]`, `CPU:N [... DROPPED]`): the events \
                 the tracer dropped there are missing",
                self.lost_marks
            ));
        }
        lines
    }
}

/// Why a recording cannot be imported.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FtraceError {
    /// A line that is not a header, a comment or an event line, or a used event whose fields
    /// do not parse.
    #[error("{source_name}:{line}: {message}")]
    Line {
        /// File name.
        source_name: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// No task ran in the recording.
    #[error("{source_name}: no task ran in the recording (no sched_switch to a pid other than 0)")]
    Empty {
        /// File name.
        source_name: String,
    },
    /// The trace it became breaks a trace rule.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// The events this importer reads.
const USED: [&str; 6] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_waking",
    "sched_migrate_task",
    "sched_process_exit",
];

/// The task last switched in on a CPU, and the last time a line showed it running there.
struct OnCpu {
    pid: u32,
    comm: String,
    seen_ns: u64,
}

/// Imports a recording. `topo` gives each CPU's capacity; `pin_observed` makes the CPUs a
/// task ran on its `allowed_cpus`.
pub fn import(
    text: &str,
    source_name: &str,
    trace_name: &str,
    topo: &Topology,
    pin_observed: bool,
) -> Result<FtraceImport, FtraceError> {
    let err = |line: usize, message: String| FtraceError::Line {
        source_name: source_name.to_owned(),
        line,
        message,
    };
    let mut timeline = TimelineBuilder::new(topo);
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_ns = 0u64;
    let mut on_cpu: BTreeMap<u16, OnCpu> = BTreeMap::new();
    // Per task: the CPU it was switched in on and not switched out of since.
    let mut cpu_of: BTreeMap<u32, u16> = BTreeMap::new();
    let mut missed_switches = 0u64;
    let mut lost_marks = 0u64;
    // Whether the line before was an event: only then may an indented line be a call chain.
    let mut after_event = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if is_comment(line) {
            continue;
        }
        // An event line is tried first: a comm may look like a header (trace-cmd's own
        // threads, `trace-cmd-815`, QEMU's `CPU 0/KVM`) or be all hex digits (`dd`).
        let Some(ev) = parse_line(line) else {
            if is_header(line) {
                lost_marks += u64::from(line.starts_with("CPU:"));
                continue;
            }
            if after_event && raw.starts_with(char::is_whitespace) && is_stack_frame(line) {
                continue;
            }
            return Err(err(
                n,
                "not an event line: expected `COMM-PID [CPU] ... SECONDS: EVENT: FIELDS` (tracefs, \
                 trace-cmd) or perf script's `COMM PID [CPU] SECONDS: EVENT: FIELDS`, a call-chain line \
                 indented under an event (`ADDRESS SYMBOL (DSO)`), a `#` comment or a header"
                    .into(),
            ));
        };
        after_event = true;
        if !USED.contains(&ev.event) {
            *skipped.entry(ev.event.to_owned()).or_default() += 1;
            continue;
        }
        if topo.info(CpuId(ev.cpu)).is_none() {
            return Err(err(
                n,
                format!(
                    "cpu {} is not in the topology ({} CPUs): give the recorded machine with --topology",
                    ev.cpu,
                    topo.nr_cpus()
                ),
            ));
        }
        if ev.ts_ns < last_ns {
            return Err(err(
                n,
                "timestamps go backwards: sort the events by time (trace-cmd report does)".into(),
            ));
        }
        let now = ev.ts_ns;
        timeline.mark(now);
        last_ns = now;
        if let Some(o) = on_cpu.get_mut(&ev.cpu)
            && ev.current == Some(o.pid)
        {
            o.seen_ns = now;
        }
        match ev.event {
            "sched_switch" => {
                let (prev, next) = parse_switch(ev.fields).ok_or_else(|| {
                    err(
                        n,
                        format!("sched_switch fields do not parse: `{}`", ev.fields),
                    )
                })?;
                let runnable = state_is_runnable(&prev.state).ok_or_else(|| {
                    err(
                        n,
                        format!(
                            "sched_switch prev_state `{}` is neither the kernel's state letters \
                             (R, R+, S, D, T, t, X, Z, P, I) nor a number",
                            prev.state
                        ),
                    )
                })?;
                // A switch the recording lacks: the task last switched in here left unseen,
                // and `prev` came in unseen. Both are taken at the last line that showed the
                // task leaving running here, the one left asleep until its next wake-up.
                if let Some(o) = on_cpu.get(&ev.cpu).filter(|o| o.pid != prev.pid) {
                    missed_switches += 1;
                    // Unless it has been switched in elsewhere since (that switch-in ended
                    // its stretch here).
                    if o.pid != 0 && cpu_of.get(&o.pid) == Some(&ev.cpu) {
                        timeline.switch_out(o.pid, &o.comm, o.seen_ns, false);
                        cpu_of.remove(&o.pid);
                    }
                    if prev.pid != 0 {
                        timeline.switch_in(prev.pid, &prev.comm, o.seen_ns, ev.cpu);
                    }
                }
                if prev.pid != 0 {
                    timeline.switch_out(prev.pid, &prev.comm, now, runnable);
                    cpu_of.remove(&prev.pid);
                }
                if next.pid != 0 {
                    timeline.switch_in(next.pid, &next.comm, now, ev.cpu);
                    cpu_of.insert(next.pid, ev.cpu);
                }
                on_cpu.insert(
                    ev.cpu,
                    OnCpu {
                        pid: next.pid,
                        comm: next.comm,
                        seen_ns: now,
                    },
                );
            }
            "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => {
                let Some((comm, pid)) = parse_wakeup(ev.fields) else {
                    return Err(err(
                        n,
                        format!(
                            "{} fields do not parse: expected `comm=NAME pid=PID ...` or \
                             `NAME:PID [PRIO] ...`, got `{}`",
                            ev.event, ev.fields
                        ),
                    ));
                };
                if pid != 0 {
                    let waker = ev.current.filter(|w| *w != 0 && !ev.in_interrupt);
                    timeline.wakeup_by(pid, &comm, now, waker);
                }
            }
            "sched_migrate_task" => {
                let f = fields(ev.fields);
                if f.get("pid").and_then(|p| p.parse::<u32>().ok()).is_none() {
                    return Err(err(
                        n,
                        format!("sched_migrate_task needs pid=: `{}`", ev.fields),
                    ));
                }
                // Where it runs shows in its switches; a migration changes nothing else.
            }
            _ => {
                // sched_process_exit
                let f = fields(ev.fields);
                let Some(pid) = f.get("pid").and_then(|p| p.parse::<u32>().ok()) else {
                    return Err(err(
                        n,
                        format!("sched_process_exit needs pid=: `{}`", ev.fields),
                    ));
                };
                timeline.exit(pid, now);
            }
        }
    }
    let built = timeline
        .finish(source_name, trace_name, pin_observed)
        .map_err(|e| match e {
            TimelineError::Empty => FtraceError::Empty {
                source_name: source_name.to_owned(),
            },
            TimelineError::Trace(e) => FtraceError::Trace(e),
        })?;
    let mut trace = built.trace;
    trace.description = Some(format!(
        "imported from the scheduler recording {source_name}"
    ));
    Ok(FtraceImport {
        trace,
        skipped,
        observed_cpus: built.observed_cpus,
        folded: built.folded,
        busy_ns: built.busy_ns,
        migrations: built.migrations,
        relations: built.relations,
        missed_switches,
        lost_marks,
    })
}
