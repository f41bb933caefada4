//! rt-app workloads (the JSON files of rt-app and its `workgen`, as its `doc/tutorial.txt`
//! describes them) turned into a [`Trace`].
//!
//! | rt-app | trace |
//! |---|---|
//! | `global.duration` (s, -1 = none) | `duration_ns` |
//! | task key | task `name`; `instance` → `copies` (0: no thread, the task is left out) |
//! | `delay` (µs) | `start_ns` |
//! | `cpus: [0, 2]` | `allowed_cpus: "0,2"` |
//! | `priority` under `SCHED_OTHER` (nice -20..=19) | `weight`: the kernel's nice weight on the cgroup `cpu.weight` scale (nice 0 = 100) |
//! | `util_min` / `util_max` (uclamp) | `util`: the estimated utilisation clamped to them |
//! | `run` (µs of calibrated loops: fixed work) | `run_ns` (reference work, so it scales with capacity) |
//! | `runtime` (µs of wall time) | `run_ns`, *approximated*: exact on a capacity-1024 CPU |
//! | `sleep` (µs) | `sleep_ns` |
//! | one phase of runs ending in a `timer` | a frame loop: `period_ns` = the timer's period, `work_ns` = the runs |
//! | `timer` anywhere else | a sleep of the period minus the work and sleeps before it, *approximated* |
//! | phase `loop` / task `loop` (-1 = until `global.duration`) | `loop` phases |
//!
//! Event keys may carry a number (`run0`, `sleep1`) and may repeat, as `workgen` allows; they
//! run in the order written. Every event or property the model has no counterpart for (`lock`,
//! `barrier`, `fork`, `taskgroup`, real-time policies, a per-phase change of affinity...) is
//! returned in [`RtAppImport::unmodelled`] with its task and phase, never silently dropped.

use super::json_tree::{Node, strip_comments};
use crate::trace::{
    FrameSpec, LoopSpec, MAX_FRAMES, MAX_LOOP_TIMES, Phase, TRACE_VERSION, TaskSpec, Trace,
    TraceError,
};
use core::fmt;
use hybridland_trace::json_error::strip_position;
use serde::Serialize;

/// The kernel's `sched_prio_to_weight`, nice -20 to 19.
const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// rt-app events the simulator has no counterpart for: they synchronise threads or touch
/// memory and devices, which the model does not have.
const UNMODELLED_EVENTS: [&str; 13] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "barrier", "suspend", "resume", "mem",
    "iorun", "yield", "fork",
];

/// Properties that change how the kernel treats a thread in ways the model does not have.
const UNMODELLED_PROPERTIES: [&str; 8] = [
    "taskgroup",
    "hold_ns",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "period",
    "deadline",
    "nice",
];

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

/// The scheduling attributes a phase may change.
const ATTRIBUTES: [&str; 5] = ["cpus", "priority", "policy", "util_min", "util_max"];

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
    /// The rt-app task (thread object) name.
    pub task: String,
    /// The phase, when the key sits in one (a task without `phases` has none).
    pub phase: Option<String>,
    /// The key as written (`lock0`, `taskgroup`).
    pub key: String,
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

impl fmt::Display for Unmodelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task \"{}\"", self.task)?;
        if let Some(p) = &self.phase {
            write!(f, " phase \"{p}\"")?;
        }
        match &self.treatment {
            Treatment::Dropped(why) => write!(f, ": {} dropped ({why})", self.key),
            Treatment::Approximated(how) => write!(f, ": {} approximated ({how})", self.key),
        }
    }
}

/// Why an rt-app file cannot be imported. Every variant names the file and the place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RtAppError {
    /// Not JSON (after comments are removed), or truncated.
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
    /// The trace built from it breaks a trace limit.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Whether `text` reads as an rt-app file rather than a trace: a top-level `tasks` object
/// (a trace's `tasks` is an array), or a `global` object and no `version`.
pub fn is_rt_app(text: &str) -> bool {
    let Ok(Node::Obj(top)) = serde_json::from_str::<Node>(&strip_comments(text)) else {
        return false;
    };
    let has = |key: &str| top.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    matches!(has("tasks"), Some(Node::Obj(_)))
        || (matches!(has("global"), Some(Node::Obj(_))) && has("version").is_none())
}

/// Imports an rt-app file. `source_name` goes into errors, `trace_name` becomes the trace's
/// `name`.
pub fn import(text: &str, source_name: &str, trace_name: &str) -> Result<RtAppImport, RtAppError> {
    let clean = strip_comments(text);
    let root: Node = serde_json::from_str(&clean).map_err(|e| RtAppError::Syntax {
        source_name: source_name.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    let mut cx = Importer {
        source: source_name,
        notes: Vec::new(),
        duration_ns: None,
        default_policy: "SCHED_OTHER".to_owned(),
    };
    let Node::Obj(top) = &root else {
        return Err(cx.invalid("(top)", format!("must be an object, got {}", root.kind())));
    };
    for (key, value) in top {
        match key.as_str() {
            "global" => cx.global(value)?,
            "tasks" | "resources" => {}
            other => {
                return Err(cx.invalid(
                    other,
                    "is not an rt-app top-level object (tasks, global, resources)".into(),
                ));
            }
        }
    }
    let Some(tasks) = root.get("tasks") else {
        return Err(cx.invalid(
            "tasks",
            "is missing: an rt-app file needs a tasks object".into(),
        ));
    };
    let Node::Obj(tasks) = tasks else {
        return Err(cx.invalid("tasks", format!("must be an object, got {}", tasks.kind())));
    };
    let mut specs = Vec::new();
    for (name, task) in tasks {
        if let Some(spec) = cx.task(name, task)? {
            specs.push(spec);
        }
    }
    if specs.is_empty() {
        return Err(cx.invalid(
            "tasks",
            "creates no thread (every instance is 0 or none given)".into(),
        ));
    }
    let trace = Trace {
        version: TRACE_VERSION,
        name: Some(trace_name.to_owned()),
        description: Some(format!("imported from the rt-app file {source_name}")),
        machine: None,
        seed: 0,
        duration_ns: cx.duration_ns,
        pools: Vec::new(),
        tasks: specs,
    };
    trace.validate(source_name)?;
    Ok(RtAppImport {
        trace,
        unmodelled: cx.notes,
    })
}

/// One event of a phase, in the order written.
enum Event {
    Run {
        ns: u64,
        wall: bool,
        key: String,
    },
    Sleep {
        ns: u64,
    },
    Timer {
        period_ns: u64,
        absolute: bool,
        shared: bool,
        key: String,
    },
}

/// A phase as read: its name (none for events written straight in the task), loop count
/// (`None` = forever) and modelled events.
struct PhaseIn<'n> {
    name: Option<String>,
    node: &'n Node,
    times: Option<u64>,
    events: Vec<Event>,
}

struct Importer<'s> {
    source: &'s str,
    notes: Vec<Unmodelled>,
    duration_ns: Option<u64>,
    default_policy: String,
}

impl Importer<'_> {
    fn invalid(&self, path: &str, message: String) -> RtAppError {
        RtAppError::Invalid {
            source_name: self.source.to_owned(),
            path: path.to_owned(),
            message,
        }
    }

    fn note(&mut self, task: &str, phase: Option<&str>, key: &str, treatment: Treatment) {
        self.notes.push(Unmodelled {
            task: task.to_owned(),
            phase: phase.map(str::to_owned),
            key: key.to_owned(),
            treatment,
        });
    }

    fn global(&mut self, g: &Node) -> Result<(), RtAppError> {
        let Node::Obj(members) = g else {
            return Err(self.invalid("global", format!("must be an object, got {}", g.kind())));
        };
        for (key, value) in members {
            let path = format!("global.{key}");
            match key.as_str() {
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
        }
        Ok(())
    }

    fn task(&mut self, name: &str, task: &Node) -> Result<Option<TaskSpec>, RtAppError> {
        let base = format!("tasks.{name}");
        let Node::Obj(members) = task else {
            return Err(self.invalid(&base, format!("must be an object, got {}", task.kind())));
        };
        let instance = match task.get("instance") {
            None => 1,
            Some(v) => self.int_in(v, &format!("{base}.instance"), 0, i128::from(u32::MAX))? as u32,
        };
        if instance == 0 {
            // rt-app's own rule: the structures exist, no thread runs.
            return Ok(None);
        }
        let start_ns = match task.get("delay") {
            None => 0,
            Some(v) => self.micros(v, &format!("{base}.delay"))?,
        };
        let task_loop = match task.get("loop") {
            None => None,
            Some(v) => self.loop_count(v, &format!("{base}.loop"))?,
        };
        let mut phases = Vec::new();
        match task.get("phases") {
            Some(Node::Obj(list)) => {
                for (pname, pnode) in list {
                    let path = format!("{base}.phases.{pname}");
                    phases.push(self.phase(name, Some(pname), pnode, &path)?);
                }
                if list.is_empty() {
                    return Err(self.invalid(&format!("{base}.phases"), "has no phase".into()));
                }
            }
            Some(other) => {
                return Err(self.invalid(
                    &format!("{base}.phases"),
                    format!("must be an object of phases, got {}", other.kind()),
                ));
            }
            None => phases.push(self.phase(name, None, task, &base)?),
        }
        // Task-level keys that are neither events (read by `phase` above for a task without
        // `phases`) nor attributes.
        for (key, _) in members {
            let k = key.as_str();
            if UNMODELLED_PROPERTIES.contains(&k) {
                self.note(name, None, k, Treatment::Dropped(property_why(k)));
            } else if task.get("phases").is_some()
                && !ATTRIBUTES.contains(&k)
                && !["instance", "delay", "loop", "phases"].contains(&k)
            {
                return Err(self.invalid(
                    &format!("{base}.{k}"),
                    "is not a task property; with `phases`, events belong inside a phase".into(),
                ));
            }
        }
        let attrs = self.attributes(name, task, &phases)?;
        let copies = instance;
        let mut spec = TaskSpec {
            name: name.to_owned(),
            copies,
            start_ns,
            weight: attrs.weight,
            allowed_cpus: attrs.cpus,
            util: None,
            cache_sensitivity_pct: 0,
            phases: Vec::new(),
            frames: None,
        };
        if let Some(frames) = self.frames(name, &phases, task_loop, &base)? {
            spec.frames = Some(frames);
        } else {
            spec.phases = self.phase_list(name, &phases, task_loop, &base)?;
        }
        if attrs.util_min.is_some() || attrs.util_max.is_some() {
            let hint = spec.util_hint();
            let lo = attrs.util_min.unwrap_or(0);
            let hi = attrs.util_max.unwrap_or(1024);
            spec.util = Some(hint.clamp(lo, hi.max(lo)));
        }
        Ok(Some(spec))
    }

    /// Reads a phase's loop count and events; notes and skips what cannot be modelled.
    fn phase<'n>(
        &mut self,
        task: &str,
        phase: Option<&str>,
        node: &'n Node,
        path: &str,
    ) -> Result<PhaseIn<'n>, RtAppError> {
        let Node::Obj(members) = node else {
            return Err(self.invalid(path, format!("must be an object, got {}", node.kind())));
        };
        let in_task = phase.is_none();
        let mut times = Some(1);
        let mut events = Vec::new();
        for (key, value) in members {
            let at = format!("{path}.{key}");
            let k = key.as_str();
            if ATTRIBUTES.contains(&k) {
                continue;
            }
            if in_task && ["instance", "delay", "loop"].contains(&k) {
                continue;
            }
            if k == "loop" {
                times = self.loop_count(value, &at)?;
                continue;
            }
            if UNMODELLED_PROPERTIES.contains(&k) {
                if !in_task {
                    self.note(task, phase, k, Treatment::Dropped(property_why(k)));
                }
                continue;
            }
            match event_name(k) {
                "run" => events.push(Event::Run {
                    ns: self.micros(value, &at)?,
                    wall: false,
                    key: key.clone(),
                }),
                "runtime" => events.push(Event::Run {
                    ns: self.micros(value, &at)?,
                    wall: true,
                    key: key.clone(),
                }),
                "sleep" => events.push(Event::Sleep {
                    ns: self.micros(value, &at)?,
                }),
                "timer" => events.push(self.timer(value, &at, key)?),
                e if UNMODELLED_EVENTS.contains(&e) => self.note(
                    task,
                    phase,
                    k,
                    Treatment::Dropped(format!(
                        "the simulator has no {}",
                        match e {
                            "lock" | "unlock" | "wait" | "signal" | "broad" | "sync" =>
                                "mutexes or condition variables",
                            "barrier" => "barriers",
                            "suspend" | "resume" => "cross-thread suspend and resume",
                            "mem" | "iorun" => "memory or I/O model",
                            "yield" => "yield",
                            _ => "fork: every thread starts at its delay",
                        }
                    )),
                ),
                _ => {
                    return Err(self.invalid(
                        &at,
                        "is not an rt-app event or property (run, runtime, sleep, timer, lock, ...)"
                            .into(),
                    ));
                }
            }
        }
        Ok(PhaseIn {
            name: phase.map(str::to_owned),
            node,
            times,
            events,
        })
    }

    fn timer(&self, value: &Node, at: &str, key: &str) -> Result<Event, RtAppError> {
        let Node::Obj(_) = value else {
            return Err(self.invalid(
                at,
                format!(
                    "must be an object {{\"ref\": NAME, \"period\": USEC}}, got {}",
                    value.kind()
                ),
            ));
        };
        let period = value
            .get("period")
            .ok_or_else(|| self.invalid(at, "has no `period`".into()))?;
        let period_ns = self.micros(period, &format!("{at}.period"))?;
        if period_ns == 0 {
            return Err(self.invalid(&format!("{at}.period"), "must be at least 1 us".into()));
        }
        let absolute = match value.get("mode") {
            None => false,
            Some(Node::Str(m)) if m == "relative" => false,
            Some(Node::Str(m)) if m == "absolute" => true,
            Some(other) => {
                return Err(self.invalid(
                    &format!("{at}.mode"),
                    format!("must be \"relative\" or \"absolute\", got {}", show(other)),
                ));
            }
        };
        let shared = match value.get("ref") {
            Some(Node::Str(r)) => !r.starts_with("unique"),
            _ => false,
        };
        Ok(Event::Timer {
            period_ns,
            absolute,
            shared,
            key: key.to_owned(),
        })
    }

    /// A task whose one phase is runs then a timer is a frame loop: the timer paces it and a
    /// late frame starts the next at once, which is what relative mode does.
    fn frames(
        &mut self,
        task: &str,
        phases: &[PhaseIn<'_>],
        task_loop: Option<u64>,
        base: &str,
    ) -> Result<Option<FrameSpec>, RtAppError> {
        let [phase] = phases else {
            return Ok(None);
        };
        let Some((
            Event::Timer {
                period_ns,
                absolute,
                shared,
                key,
            },
            runs,
        )) = phase.events.split_last()
        else {
            return Ok(None);
        };
        if runs.is_empty() || !runs.iter().all(|e| matches!(e, Event::Run { .. })) {
            return Ok(None);
        }
        let mut work_ns = 0u64;
        for e in runs {
            if let Event::Run { ns, wall, key } = e {
                work_ns = work_ns.saturating_add(*ns);
                if *wall {
                    self.note_runtime(task, phase.name.as_deref(), key);
                }
            }
        }
        if work_ns == 0 {
            return Ok(None);
        }
        let count = match (task_loop, phase.times) {
            (Some(a), Some(b)) => a.saturating_mul(b),
            _ => {
                let Some(d) = self.duration_ns else {
                    return Err(self.forever(base));
                };
                let n = d.div_ceil(*period_ns);
                if n > MAX_FRAMES {
                    self.note(
                        task,
                        phase.name.as_deref(),
                        "loop",
                        Treatment::Approximated(format!(
                            "{n} frames to fill global.duration, capped at {MAX_FRAMES}"
                        )),
                    );
                }
                n.min(MAX_FRAMES)
            }
        };
        if *absolute {
            self.note(
                task,
                phase.name.as_deref(),
                key,
                Treatment::Approximated(
                    "absolute mode as relative: a late frame moves the later releases".into(),
                ),
            );
        }
        if *shared && phases.len() == 1 {
            self.note_shared_timer(task, phase.name.as_deref(), key);
        }
        Ok(Some(FrameSpec {
            period_ns: *period_ns,
            work_ns,
            deadline_ns: None,
            count,
        }))
    }

    fn phase_list(
        &mut self,
        task: &str,
        phases: &[PhaseIn<'_>],
        task_loop: Option<u64>,
        base: &str,
    ) -> Result<Vec<Phase>, RtAppError> {
        let mut all = Vec::new();
        for p in phases {
            let pname = p.name.as_deref();
            let mut body = Vec::new();
            // Reference time since the last timer fired (or the phase began): what a timer
            // waits out the rest of its period after.
            let mut since = 0u64;
            for e in &p.events {
                match e {
                    Event::Run { ns, wall, key } => {
                        if *wall {
                            self.note_runtime(task, pname, key);
                        }
                        since = since.saturating_add(*ns);
                        if *ns > 0 {
                            body.push(Phase::RunNs(*ns));
                        }
                    }
                    Event::Sleep { ns } => {
                        since = since.saturating_add(*ns);
                        if *ns > 0 {
                            body.push(Phase::SleepNs(*ns));
                        }
                    }
                    Event::Timer {
                        period_ns,
                        shared,
                        key,
                        ..
                    } => {
                        self.note(
                            task,
                            pname,
                            key,
                            Treatment::Approximated(
                                "a sleep of the period less the run and sleep before it: exact while \
                                 the runs take their reference time (a capacity-1024 CPU, no \
                                 queueing), longer periods otherwise"
                                    .into(),
                            ),
                        );
                        if *shared {
                            self.note_shared_timer(task, pname, key);
                        }
                        let rest = period_ns.saturating_sub(since);
                        if rest > 0 {
                            body.push(Phase::SleepNs(rest));
                        }
                        since = 0;
                    }
                }
            }
            if body.is_empty() {
                // Only unmodelled events (already noted) or zero lengths: nothing to run.
                continue;
            }
            let times = match p.times {
                Some(t) => t,
                None => self.times_to_fill(&body, base)?,
            };
            push_repeated(&mut all, body, times);
        }
        if all.is_empty() {
            return Err(self.invalid(
                base,
                "has no run, runtime, sleep or timer event above 0: nothing to simulate".into(),
            ));
        }
        let times = match task_loop {
            Some(t) => t,
            None => self.times_to_fill(&all, base)?,
        };
        let mut out = Vec::new();
        push_repeated(&mut out, all, times);
        Ok(out)
    }

    /// Repetitions of `body` that cover `global.duration` at the least: each takes at least
    /// its reference time, so this many run past the horizon, where the replay stops.
    fn times_to_fill(&mut self, body: &[Phase], base: &str) -> Result<u64, RtAppError> {
        let Some(d) = self.duration_ns else {
            return Err(self.forever(base));
        };
        let once = reference_ns(body).max(1);
        let n = u64::try_from(u128::from(d).div_ceil(once)).unwrap_or(u64::MAX);
        if n > MAX_LOOP_TIMES {
            return Err(self.invalid(
                base,
                format!(
                    "loops until global.duration, which needs {n} rounds of {once} ns, more than the \
                     trace's {MAX_LOOP_TIMES} repetitions: give a loop count or a shorter duration"
                ),
            ));
        }
        Ok(n.max(1))
    }

    fn forever(&self, base: &str) -> RtAppError {
        self.invalid(
            base,
            "loops forever (loop -1, the default for a task) and global.duration is -1 or \
             missing: give the task a loop count or the file a duration"
                .into(),
        )
    }

    fn note_runtime(&mut self, task: &str, phase: Option<&str>, key: &str) {
        self.note(
            task,
            phase,
            key,
            Treatment::Approximated(
                "wall-time run as reference work: exact on a capacity-1024 CPU, longer on a slower one".into(),
            ),
        );
    }

    fn note_shared_timer(&mut self, task: &str, phase: Option<&str>, key: &str) {
        self.note(
            task,
            phase,
            key,
            Treatment::Approximated(
                "a timer whose ref does not start with \"unique\" is shared by rt-app's instances; \
                 each copy here has its own"
                    .into(),
            ),
        );
    }

    /// The scheduling attributes the whole task runs with: the task's own, or one every phase
    /// gives alike; a phase that changes one is noted (a trace task keeps its attributes).
    fn attributes(
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
            "SCHED_OTHER" => match priority {
                None => 100,
                Some((v, path)) => {
                    let nice = self.int_in(v, &path, -20, 19)?;
                    nice_to_cpu_weight(nice as i32)
                }
            },
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
                        "\"{other}\" is not a policy (SCHED_OTHER, SCHED_IDLE, SCHED_FIFO, SCHED_RR, \
                         SCHED_DEADLINE)"
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
        if let (Some(lo), Some(hi)) = (util_min, util_max) {
            if lo > hi {
                return Err(self.invalid(
                    &format!("{base}.util_min"),
                    format!("{lo} is above util_max {hi}"),
                ));
            }
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

    fn loop_count(&self, v: &Node, path: &str) -> Result<Option<u64>, RtAppError> {
        match v {
            Node::Int(-1) => Ok(None),
            Node::Int(n) if *n >= 1 && *n <= i128::from(u64::MAX) => Ok(Some(*n as u64)),
            _ => Err(self.invalid(
                path,
                format!("must be -1 (forever) or a count from 1, got {}", show(v)),
            )),
        }
    }

    fn micros(&self, v: &Node, path: &str) -> Result<u64, RtAppError> {
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

    fn int_in(&self, v: &Node, path: &str, lo: i128, hi: i128) -> Result<i128, RtAppError> {
        match v {
            Node::Int(n) if (lo..=hi).contains(n) => Ok(*n),
            _ => Err(self.invalid(
                path,
                format!("must be an integer in {lo}..={hi}, got {}", show(v)),
            )),
        }
    }
}

struct Attributes {
    cpus: Option<String>,
    weight: u32,
    util_min: Option<u16>,
    util_max: Option<u16>,
}

/// `run0` → `run`, `runtime12` → `runtime`: rt-app and `workgen` number repeated events.
fn event_name(key: &str) -> &str {
    key.trim_end_matches(|c: char| c.is_ascii_digit())
}

fn property_why(key: &str) -> String {
    match key {
        "taskgroup" => "the simulator has no cgroups".into(),
        "hold_ns" => "the simulator has no frequency selection for a uclamp hold".into(),
        "nice" => "rt-app sets nice through `priority`".into(),
        _ => "the simulator has no deadline class".into(),
    }
}

/// The kernel's weight for `nice`, on the cgroup `cpu.weight` scale the trace uses
/// (`sched_weight_to_cgroup`: nice 0's 1024 is 100).
fn nice_to_cpu_weight(nice: i32) -> u32 {
    let w = NICE_TO_WEIGHT[(nice + 20) as usize];
    ((w * 100 + 512) / 1024).clamp(1, 10_000)
}

fn push_repeated(out: &mut Vec<Phase>, body: Vec<Phase>, times: u64) {
    if times == 1 {
        out.extend(body);
    } else {
        out.push(Phase::Loop(LoopSpec {
            times,
            phases: body,
        }));
    }
}

fn reference_ns(phases: &[Phase]) -> u128 {
    phases
        .iter()
        .map(|p| match p {
            Phase::RunNs(n) | Phase::SleepNs(n) => u128::from(*n),
            Phase::Loop(l) => reference_ns(&l.phases).saturating_mul(u128::from(l.times)),
            Phase::Pool(_) => 0,
        })
        .fold(0, u128::saturating_add)
}

fn show(v: &Node) -> String {
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
