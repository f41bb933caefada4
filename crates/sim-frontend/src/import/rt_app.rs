//! rt-app workloads (the JSON files of rt-app and its `workgen`, as its `doc/tutorial.txt`
//! describes them) turned into a [`Trace`].
//!
//! Read as rt-app reads them: comments, trailing commas, a key written twice (kept in order,
//! as `workgen` numbers them), the bare `"suspend",` shorthand, event keys known by their
//! prefix (`run0`, `sleep_long`), and keys rt-app does not know ignored (and noted). Several
//! files merge as rt-app's `merge.py` merges them ([`import_files`]). The older grammar of
//! rt-app's first releases (`exec`, `period`, `deadline`, `lock_order`, as the files of its
//! `doc/examples/merge/` use) reads too.
//!
//! | rt-app | trace |
//! |---|---|
//! | `global.duration` (s, -1 = none) | `duration_ns` ([`RtAppOptions::duration_ns`] replaces it) |
//! | task key | task `name`; `instance` → `copies` (0: no thread at the start, only forks) |
//! | `delay` (µs) | `start_ns` |
//! | `cpus: [0, 2]` | `allowed_cpus: "0,2"` |
//! | `priority` under `SCHED_OTHER`/`SCHED_BATCH` (nice -20..=19) | `weight`: the kernel's nice weight on the cgroup `cpu.weight` scale (nice 0 = 100) |
//! | `util_min` / `util_max` (uclamp) | `util`: the estimated utilisation clamped to them |
//! | `run` (µs of calibrated loops: fixed work) | `run_ns` (reference work, so it scales with capacity) |
//! | `runtime` (µs of wall time) | `run_ns`, *approximated*: exact on a capacity-1024 CPU |
//! | `mem`, `iorun`, `memrun` | `run_ns` at the documented memory speeds, *approximated* |
//! | `sleep` (µs) | `sleep_ns` |
//! | a task whose every round is runs and one timer, first or last | a frame loop: `period_ns` = the timer's period, `work_ns` = the runs |
//! | `timer` anywhere else | a sleep to its next firing, its clock kept across phases and rounds as rt-app keeps it; *approximated*: the runs before it take their reference time |
//! | `fork` | a task of the forked thread starting where the forking one reaches the fork at reference speed |
//! | `suspend` | `wait_for` the threads that `resume` this one (today's rt-app suspends a thread under its own name, whatever the string says), and those that resume the name written, when one is (rt-app before 2025 read it, and its examples are written so; noted) |
//! | `resume: "T"` | `wake_if_waiting` every task of thread `T` and of threads suspending under the name `T` (a broadcast, lost when none is suspended, as rt-app's condition variable loses it) |
//! | `wait: {"ref": "C"}` | `wait_for` the threads that `signal`, `broad` or `sync` on `C` |
//! | `signal` / `broad: "C"` | `wake_if_waiting` every thread that waits on `C` |
//! | `sync: {"ref": "C"}` | a `signal` then a `wait` on `C` |
//! | `sem_post` / `sem_wait: "S"` | `wake` (remembered, counted) / `wait_for` between the threads that post and wait on `S` |
//! | phase `loop` / task `loop` (-1 = until `global.duration`) | `loop` phases |
//! | legacy `exec` / `period` / `deadline` | a frame loop |
//!
//! What the model has no counterpart for yet (`lock`/`unlock` contention, `barrier` waits,
//! `signal` waking one waiter of several, a semaphore's one token shared between several
//! waiting threads, a `suspend` no thread resumes; `taskgroup`, `nodes_membind`, real-time
//! policies, a per-phase change of affinity...) is returned in [`RtAppImport::unmodelled`]
//! with its file, task and phase, never silently dropped.

mod attributes;
mod forks;
mod importer;
mod legacy;
mod merge;
mod probe;
mod relations;
mod steps;
mod tasks;
mod timers;

use super::json_tree::{Node, lenient};
use crate::trace::{TRACE_VERSION, Trace, TraceError};
use core::fmt;
use hybridland_trace::json_error::strip_position;
use importer::Importer;
pub use probe::is_rt_app;
use serde::Serialize;

/// Bytes per reference ns that `mem` (memset), `iorun` (write to the I/O device) and
/// `memrun` `read`/`write` move: 10 GB/s, a core streaming through its caches. A documented
/// guess, not a calibration.
pub const MEM_BYTES_PER_NS: u64 = 10;

/// Reference ns per step of a `memrun` `chase` (a dependent load that misses the L1): a
/// documented guess, not a calibration.
pub const MEM_CHASE_NS_PER_STEP: u64 = 5;

/// Forked threads one import may create, as rt-app's own `FORKS_LIMIT` per fork.
pub const MAX_FORKS: usize = 1024;

/// Most rt-app text one import reads, the files of a split workload together: a quarter of a
/// trace's limit, because an rt-app file is held as a tree of values (its key order and
/// repeated keys matter) that takes 17 to 27 times the text. A 16 MiB file of 44,000 tasks
/// imports in 360 MB; one of 64 MiB took 1.36 GB. Real rt-app files are a few KiB.
pub const MAX_RT_APP_BYTES: usize = 16 << 20;

/// One rt-app file to import.
#[derive(Copy, Clone, Debug)]
pub struct RtAppSource<'a> {
    /// File name, for errors and notes.
    pub name: &'a str,
    /// Its text.
    pub text: &'a str,
}

/// What the command line adds to the files.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RtAppOptions {
    /// The run's length, replacing `global.duration`: what rt-app's `loop: -1` runs until
    /// when the file gives no duration (rt-app itself runs until stopped).
    pub duration_ns: Option<u64>,
}

/// An imported workload and what of it the trace cannot say.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppImport {
    /// The trace (valid: it passed [`Trace::validate`]).
    pub trace: Trace,
    /// Every event and property that was dropped or only approximated, in file order.
    pub unmodelled: Vec<Unmodelled>,
}

/// One rt-app event or property the trace could not express exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unmodelled {
    /// The file it is in.
    pub source: String,
    /// The rt-app task (thread object) name.
    pub task: String,
    /// The phase, when the key sits in one (a task without `phases` has none).
    pub phase: Option<String>,
    /// The key as written (`lock0`, `taskgroup`).
    pub key: String,
    /// The rt-app feature: the event the key is (`lock` for `lock0`) or the key itself.
    pub feature: String,
    /// What became of it.
    pub treatment: Treatment,
}

/// What became of an [`Unmodelled`] key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Treatment {
    /// Left out of the trace.
    Dropped(String),
    /// In the trace, as the stated approximation.
    Approximated(String),
}

impl Treatment {
    fn text(&self) -> (&'static str, &str) {
        match self {
            Self::Dropped(why) => ("dropped", why),
            Self::Approximated(how) => ("approximated", how),
        }
    }
}

impl fmt::Display for Unmodelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task \"{}\"", self.task)?;
        if let Some(p) = &self.phase {
            write!(f, " phase \"{p}\"")?;
        }
        let (what, why) = self.treatment.text();
        write!(f, ": {} {what} ({why})", self.key)
    }
}

/// The notes as one line per task: `FILE: task "T": FEATURE dropped|approximated (WHY) [in
/// phases ...]; ...`, tasks and features in file order, each feature and reason once.
pub fn summary_lines(notes: &[Unmodelled]) -> Vec<String> {
    let mut tasks: Vec<(&str, &str)> = Vec::new();
    for n in notes {
        if !tasks.contains(&(n.source.as_str(), n.task.as_str())) {
            tasks.push((n.source.as_str(), n.task.as_str()));
        }
    }
    tasks
        .iter()
        .map(|&(source, task)| {
            let mut items: Vec<(&str, &Treatment, Vec<&str>)> = Vec::new();
            for n in notes
                .iter()
                .filter(|n| n.source == source && n.task == task)
            {
                let phase = n.phase.as_deref();
                match items
                    .iter_mut()
                    .find(|(f, t, _)| *f == n.feature && **t == n.treatment)
                {
                    Some((_, _, phases)) => {
                        if let Some(p) = phase
                            && !phases.contains(&p)
                        {
                            phases.push(p);
                        }
                    }
                    None => items.push((&n.feature, &n.treatment, phase.into_iter().collect())),
                }
            }
            let parts: Vec<String> = items
                .iter()
                .map(|(feature, t, phases)| {
                    let (what, why) = t.text();
                    let at = if phases.is_empty() {
                        String::new()
                    } else {
                        format!(" [phases {}]", phases.join(", "))
                    };
                    format!("{feature} {what} ({why}){at}")
                })
                .collect();
            format!("{source}: task \"{task}\": {}", parts.join("; "))
        })
        .collect()
}

/// Why an rt-app file cannot be imported. Every variant names the file and the place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RtAppError {
    /// Not JSON even as rt-app reads it (comments, trailing commas, bare members), or
    /// truncated.
    #[error("{source_name}:{line}:{column}: {message}")]
    Syntax {
        /// File name.
        source_name: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Well-formed JSON, but not an rt-app workload the simulator can run.
    #[error("{source_name}: {path}: {message}")]
    Invalid {
        /// File name.
        source_name: String,
        /// Where, e.g. `tasks.render.phases.p1.run0`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// More text than [`MAX_RT_APP_BYTES`]; nothing was parsed.
    #[error("{source_name}: {bytes} bytes of rt-app text, more than the {max} accepted")]
    TooLarge {
        /// The file names, joined with ` + ` when several.
        source_name: String,
        /// The text's length, the files together.
        bytes: usize,
        /// [`MAX_RT_APP_BYTES`].
        max: usize,
    },
    /// The trace built from it breaks a trace limit.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Imports one rt-app file. `source_name` goes into errors, `trace_name` becomes the trace's
/// `name`.
pub fn import(text: &str, source_name: &str, trace_name: &str) -> Result<RtAppImport, RtAppError> {
    import_files(
        &[RtAppSource {
            name: source_name,
            text,
        }],
        trace_name,
        RtAppOptions::default(),
    )
}

/// Imports rt-app files merged into one workload, as rt-app's `merge.py` merges them.
pub fn import_files(
    sources: &[RtAppSource<'_>],
    trace_name: &str,
    options: RtAppOptions,
) -> Result<RtAppImport, RtAppError> {
    // The files are merged as trees, so they are bounded together.
    let bytes = sources
        .iter()
        .fold(0usize, |sum, s| sum.saturating_add(s.text.len()));
    if bytes > MAX_RT_APP_BYTES {
        let names: Vec<&str> = sources.iter().map(|s| s.name).collect();
        return Err(RtAppError::TooLarge {
            source_name: names.join(" + "),
            bytes,
            max: MAX_RT_APP_BYTES,
        });
    }
    let mut merged = merge::Merged::default();
    for src in sources {
        let root: Node =
            serde_json::from_str(&lenient(src.text)).map_err(|e| RtAppError::Syntax {
                source_name: src.name.to_owned(),
                line: e.line(),
                column: e.column(),
                message: strip_position(&e.to_string()),
            })?;
        let kind = root.kind();
        let Node::Obj(top) = root else {
            return Err(RtAppError::Invalid {
                source_name: src.name.to_owned(),
                path: "(top)".into(),
                message: format!("must be an object, got {kind}"),
            });
        };
        merge::add(&mut merged, top, src.name).map_err(|(path, message)| RtAppError::Invalid {
            source_name: src.name.to_owned(),
            path,
            message,
        })?;
    }
    let names: Vec<&str> = sources.iter().map(|s| s.name).collect();
    let all_names = names.join(" + ");
    let mut cx = Importer {
        source: sources
            .first()
            .map_or_else(String::new, |s| s.name.to_owned()),
        notes: Vec::new(),
        duration_ns: None,
        default_policy: "SCHED_OTHER".to_owned(),
        resources: Vec::new(),
        shared_timers: Vec::new(),
    };
    for m in &merged.global {
        m.file.clone_into(&mut cx.source);
        cx.global(&m.name, &m.value)?;
    }
    if options.duration_ns.is_some() {
        cx.duration_ns = options.duration_ns;
    }
    for m in &merged.resources {
        let kind = match m.value.get("type") {
            Some(Node::Str(t)) => t.clone(),
            _ => String::new(),
        };
        cx.resources.push((m.name.clone(), kind));
    }
    if !merged.has_tasks {
        all_names.clone_into(&mut cx.source);
        return Err(cx.invalid(
            "tasks",
            "is missing: an rt-app workload needs a tasks object (give every file of a split \
             workload to one import)"
                .into(),
        ));
    }
    let mut models = Vec::new();
    // Each task's part of the tree goes once it is read, so the tree and the models built
    // from it are not both whole in memory at once.
    for m in core::mem::take(&mut merged.tasks) {
        m.file.clone_into(&mut cx.source);
        models.push(cx.task(&m.name, &m.value)?);
    }
    cx.note_shared_timers(&models);
    let placed = cx.with_forks(&models)?;
    let specs = cx.relate(&models, placed)?;
    if specs.is_empty() {
        all_names.clone_into(&mut cx.source);
        return Err(cx.invalid(
            "tasks",
            "creates no thread (every instance is 0 or none given)".into(),
        ));
    }
    let trace = Trace {
        version: TRACE_VERSION,
        name: Some(trace_name.to_owned()),
        description: Some(format!(
            "imported from the rt-app file(s) {}",
            names.join(", ")
        )),
        machine: None,
        seed: 0,
        duration_ns: cx.duration_ns,
        pools: Vec::new(),
        tasks: specs,
    };
    trace.validate(&all_names)?;
    Ok(RtAppImport {
        trace,
        unmodelled: cx.notes,
    })
}
