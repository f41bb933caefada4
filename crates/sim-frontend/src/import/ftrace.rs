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

#[cfg(test)]
mod test {
    use super::*;
    use crate::trace::Phase;

    /// Each task's name and phases, in the trace's order.
    fn phases_by_task(imp: &FtraceImport) -> Vec<(&str, &[Phase])> {
        imp.trace
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.phases.as_slice()))
            .collect()
    }

    #[test]
    fn numeric_states_follow_task_report() {
        // Running, preempted on 4.14+ (TASK_REPORT_MAX), and before (TASK_STATE_MAX).
        for s in ["0", "256", "4096", "2048", "R", "R+"] {
            assert_eq!(state_is_runnable(s), Some(true), "{s}");
        }
        for s in [
            "1", "2", "128", "4097", "0x402", "S", "D", "I", "D|K", "X", "Z",
        ] {
            assert_eq!(state_is_runnable(s), Some(false), "{s}");
        }
        for s in ["", "sleeping", "-1", "0xzz"] {
            assert_eq!(state_is_runnable(s), None, "{s}");
        }
    }

    #[test]
    fn wakeups_in_both_forms() {
        assert_eq!(
            parse_wakeup("comm=a b pid=12 prio=120 target_cpu=003"),
            Some(("a b".into(), 12))
        );
        assert_eq!(
            parse_wakeup("kworker/2:1:83 [120] success=1 CPU:002"),
            Some(("kworker/2:1".into(), 83))
        );
        assert_eq!(
            parse_wakeup("sh:160 [120] CPU:007"),
            Some(("sh".into(), 160))
        );
        assert_eq!(parse_wakeup("sh [120] CPU:007"), None);
        assert_eq!(parse_wakeup(":5 [120]"), None);
    }

    #[test]
    fn the_reporting_task_and_interrupt_flags() {
        let l = parse_line(
            "sh-159     (    159) [002] d.s4.     5.254213: sched_waking: comm=kworker/2:1 pid=83",
        )
        .unwrap();
        assert_eq!((l.current, l.in_interrupt), (Some(159), true));
        let l = parse_line("kworker/2:1-83      (     83) [002] d..3.     5.261784: sched_waking: comm=rcu_preempt pid=15").unwrap();
        assert_eq!((l.current, l.in_interrupt), (Some(83), false));
        let l = parse_line("<idle>-0       (-------) [004] dNh2.     5.262544: sched_wakeup: comm=rcu_preempt pid=15").unwrap();
        assert_eq!((l.current, l.in_interrupt), (Some(0), true));
        let l = parse_line("Web Content-1234 [001] 7.000001: sched_waking: comm=a pid=5").unwrap();
        assert_eq!((l.current, l.in_interrupt), (Some(1234), false));
        let l = parse_line(
            "              sh    159 [002] 5.254213:            sched:sched_waking: comm=a pid=83",
        )
        .unwrap();
        assert_eq!((l.current, l.in_interrupt), (Some(159), false));
    }

    /// A task whose comm starts like a header is an event line like any other: trace-cmd's
    /// own threads are in every `trace-cmd record`, QEMU names its vCPU threads `CPU 0/KVM`.
    /// The headers themselves are skipped only in their exact shapes.
    #[test]
    fn tasks_named_like_headers_are_events() {
        let rec = "\
cpus=2
version = 6
CPU 1 is empty
CPU:0 [LOST 12 EVENTS]
CPU:0 [EVENTS DROPPED]
       trace-cmd-815   [000]   648.000000: sched_switch:         trace-cmd:815 [120] R ==> CPU 0/KVM:900 [120]
       CPU 0/KVM-900   [000]   648.001000: sched_switch:         CPU 0/KVM:900 [120] S ==> trace-cmd:815 [120]
       trace-cmd-815   [000]   648.003000: sched_switch:         trace-cmd:815 [120] S ==> version:7 [120]
       version-7       [000]   648.004000: sched_switch:         version:7 [120] S ==> swapper/0:0 [120]
";
        let machine = crate::presets::lookup("symmetric").unwrap();
        let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(imp.lost_marks, 2);
        assert!(
            imp.note_lines()
                .iter()
                .any(|l| l.starts_with("2 lost-events mark(s)")),
            "{:?}",
            imp.note_lines()
        );
        let runs = phases_by_task(&imp);
        assert_eq!(
            runs,
            [
                ("version-7", &[Phase::RunNs(1_000_000)][..]),
                ("trace-cmd-815", &[Phase::RunNs(2_000_000)][..]),
                ("CPU_0/KVM-900", &[Phase::RunNs(1_000_000)][..]),
            ]
        );
        for (header, ok) in [
            ("cpus=2", true),
            ("version = 6", true),
            ("CPU 3 is empty", true),
            ("CPU:3 [LOST 7 EVENTS]", true),
            ("trace-cmd: No such file or directory", true),
            ("cpus=two", false),
            ("versions of it", false),
            ("CPU 0/KVM is here", false),
            ("CPU:3 something", false),
        ] {
            assert_eq!(is_header(header), ok, "{header}");
        }
        let e = import(
            "cpus=2\nCPU 0/KVM is here\n",
            "r",
            "r",
            &machine.topology,
            false,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("r:2: not an event line"), "{e}");
    }

    /// A switch the recording lacks (b back to a, between 1.003 and 1.010): b ran until the
    /// last line that showed it running (1.003), a from then; b sleeps until it is woken.
    #[test]
    fn a_missed_switch_is_taken_at_the_last_line_that_showed_the_task() {
        let rec = "\
 a-1 [000] 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] 1.002000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] 1.003000: sched_waking: comm=c pid=3 prio=120 target_cpu=001
 a-1 [000] 1.010000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 <idle>-0 [001] 1.020000: sched_waking: comm=b pid=2 prio=120 target_cpu=000
 <idle>-0 [000] 1.020000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] 1.021000: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let machine = crate::presets::lookup("symmetric").unwrap();
        let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(imp.missed_switches, 1);
        let phases = |name: &str| {
            imp.trace
                .task_named(name)
                .unwrap_or_else(|| panic!("no {name}"))
                .phases
                .clone()
        };
        assert_eq!(phases("a-1"), [Phase::RunNs(2_000_000 + 7_000_000)]);
        assert_eq!(
            phases("b-2"),
            [
                Phase::RunNs(1_000_000),
                Phase::SleepNs(17_000_000),
                Phase::RunNs(1_000_000)
            ]
        );
        assert_eq!(imp.busy_ns[&0], 11_000_000, "no CPU time counted twice");
    }

    /// Two switches missing on two CPUs: x moved from CPU 0 to CPU 1 unseen (in place of y)
    /// and z came in on CPU 0 unseen. When CPU 0's gap shows (1.010), x is running on CPU 1
    /// again, so it is not switched out there: its preemption stays a preemption and its run
    /// goes on to 1.020.
    #[test]
    fn a_missed_switch_leaves_a_task_that_moved_on_alone() {
        let rec = "\
 <idle>-0 [000] 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=1 next_prio=120
 <idle>-0 [001] 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=y next_pid=2 next_prio=120
 x-1 [001] 1.004000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] 1.006000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=1 next_prio=120
 z-3 [000] 1.010000: sched_switch: prev_comm=z prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 x-1 [001] 1.020000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let machine = crate::presets::lookup("symmetric").unwrap();
        let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(imp.missed_switches, 2);
        let runs = phases_by_task(&imp);
        assert_eq!(
            runs,
            [
                ("x-1", &[Phase::RunNs(18_000_000)][..]),
                ("z-3", &[Phase::RunNs(10_000_000)][..]),
            ]
        );
        assert_eq!(
            imp.busy_ns,
            BTreeMap::from([(0, 10_000_000), (1, 18_000_000)])
        );
    }

    /// `perf script --header` opens with `#` comments (what was recorded, on what); the sched
    /// plugin's `W` (the kernel's `I`) is a sleep.
    #[test]
    fn perf_header_comments_and_plugin_letters() {
        let rec = "\
# ========
# captured on    : Tue Nov 24 21:40:00 2026
# cmdline : /usr/bin/perf record -a -g -e sched:sched_switch
# ========
#
           perf  2889 [000]   608.000000:       sched:sched_switch: kworker/0:1:9 [120] R ==> perf:2889 [120]
           perf  2889 [000]   608.001000:       sched:sched_switch: perf:2889 [120] W ==> kworker/0:1:9 [120]
";
        let machine = crate::presets::lookup("symmetric").unwrap();
        let imp = import(rec, "r", "r", &machine.topology, false).unwrap_or_else(|e| panic!("{e}"));
        let perf = imp.trace.task_named("perf-2889").unwrap();
        assert_eq!(perf.phases, [Phase::RunNs(1_000_000)]);
        assert_eq!(state_is_runnable("W"), Some(false));
        assert!(imp.note_lines().is_empty(), "{:?}", imp.note_lines());
    }

    #[test]
    fn stack_frames_are_hex_then_symbol() {
        assert!(is_stack_frame(
            "ffffffff8108a3c5 __schedule+0x2b5 ([kernel.kallsyms])"
        ));
        assert!(is_stack_frame(
            "7f2a3c4b5d6e [unknown] (/usr/lib/libc.so.6)"
        ));
        assert!(!is_stack_frame("sh 159 [002] 5.2: sched:sched_switch: a"));
    }
}
