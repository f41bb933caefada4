//! A task of the `tasks` object read into a model: its phases (or the events written straight
//! in it), each phase's loop count and events, and the keys rt-app ignores or the model has
//! no counterpart for, noted.

use super::super::json_tree::Node;
use super::attributes::ATTRIBUTES;
use super::importer::{Importer, show};
use super::steps::{self, Event, Relation, Step};
use super::{MAX_FORKS, MEM_BYTES_PER_NS, MEM_CHASE_NS_PER_STEP, RtAppError, Treatment};
use crate::trace::TaskSpec;

/// rt-app's events by the prefix of their key, in the order its parser tries them
/// (`rt-app_parse_config.c`: `runtime` before `run`, `memrun` before `mem`).
const EVENT_PREFIXES: [&str; 20] = [
    "sleep", "runtime", "run", "memrun", "mem", "iorun", "lock", "unlock", "signal", "broad",
    "wait", "sync", "barrier", "timer", "resume", "suspend", "yield", "fork", "sem_post",
    "sem_wait",
];

/// Properties rt-app reads that change how the kernel treats a thread in ways the model does
/// not have.
const UNMODELLED_PROPERTIES: [&str; 5] = [
    "taskgroup",
    "nodes_membind",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
];

/// rt-app's event for a key, by its prefix.
pub(super) fn event_of(key: &str) -> Option<&'static str> {
    EVENT_PREFIXES.iter().copied().find(|e| key.starts_with(e))
}

/// A phase as read: its name (none for events written straight in the task), loop count
/// (`None` = forever) and modelled events.
pub(super) struct PhaseIn<'n> {
    pub(super) name: Option<String>,
    pub(super) node: &'n Node,
    pub(super) times: Option<u64>,
    pub(super) events: Vec<Event>,
}

/// Where an event is: its task, phase and path in the file.
#[derive(Copy, Clone)]
struct Place<'a> {
    task: &'a str,
    phase: Option<&'a str>,
    at: &'a str,
}

/// A task as built, before forks are placed: its spec (copies = `instance`) and, for
/// phases, the layout where its forks are.
pub(super) struct TaskModel {
    pub(super) spec: TaskSpec,
    /// `instance` of the file; 0 leaves the task to forks.
    pub(super) instance: u32,
    /// Forks by target, with reference ns from the thread's start.
    pub(super) forks: Vec<(String, u64)>,
    /// The phases as laid out, with the wake-ups still by resource (empty for a frame loop).
    pub(super) layout: Vec<Step>,
    /// The file the task came from.
    pub(super) source: String,
}

impl Importer {
    pub(super) fn task(&mut self, name: &str, task: &Node) -> Result<TaskModel, RtAppError> {
        let base = format!("tasks.{name}");
        let Node::Obj(members) = task else {
            return Err(self.invalid(&base, format!("must be an object, got {}", task.kind())));
        };
        let instance = match task.get("instance") {
            None => 1,
            Some(v) => self.int_in(v, &format!("{base}.instance"), 0, i128::from(u32::MAX))? as u32,
        };
        let start_ns = match task.get("delay") {
            None => 0,
            Some(v) => self.micros(v, &format!("{base}.delay"))?,
        };
        let has_phases = task.get("phases").is_some();
        if !has_phases && task.get("exec").is_some() {
            return self.legacy_task(name, task, instance, start_ns);
        }
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
        // Task-level keys beside `phases`: rt-app reads only its properties there.
        for (key, _) in members {
            let k = key.as_str();
            if UNMODELLED_PROPERTIES.contains(&k) {
                self.note(name, None, k, Treatment::Dropped(property_why(k)));
            } else if has_phases
                && !ATTRIBUTES.contains(&k)
                && !["instance", "delay", "loop", "phases"].contains(&k)
            {
                let why = if event_of(k).is_some() {
                    "rt-app runs only the events of `phases` when a task has them"
                } else {
                    "not a task property: rt-app ignores keys it does not know"
                };
                self.note(name, None, k, Treatment::Dropped(why.into()));
            }
        }
        let attrs = self.attributes(name, task, &phases)?;
        let mut spec = attrs.task_spec(name, instance.max(1), start_ns);
        let mut forks = Vec::new();
        let mut laid_out = Vec::new();
        if let Some((frames, offset)) = self.frames(name, &phases, task_loop, &base)? {
            spec.frames = Some(frames);
            spec.start_ns = spec.start_ns.saturating_add(offset);
        } else {
            let layout = self.layout(name, &phases, task_loop, &base)?;
            let horizon = self.duration_ns.map(|d| d.saturating_sub(start_ns));
            forks = steps::fork_times(&layout, horizon, MAX_FORKS)
                .map_err(|t| self.too_many_forks(&base, &t))?;
            // The wake-ups are settled once every thread is read; without them for now.
            spec.phases = steps::to_phases(&layout, &mut |_| Vec::new());
            laid_out = layout;
            if spec.phases.is_empty() {
                return Err(self.invalid(
                    &base,
                    "has no run, runtime, sleep or timer event above 0: nothing to simulate".into(),
                ));
            }
        }
        if attrs.util_min.is_some() || attrs.util_max.is_some() {
            let hint = spec.util_hint();
            let lo = attrs.util_min.unwrap_or(0);
            let hi = attrs.util_max.unwrap_or(1024);
            spec.util = Some(hint.clamp(lo, hi.max(lo)));
        }
        Ok(TaskModel {
            spec,
            instance,
            forks,
            layout: laid_out,
            source: self.source.clone(),
        })
    }

    /// Reads a phase's loop count and events; notes what cannot be modelled exactly.
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
            let Some(event) = event_of(k) else {
                self.note(
                    task,
                    phase,
                    k,
                    Treatment::Dropped(
                        "not an rt-app event or property: rt-app ignores keys it does not know"
                            .into(),
                    ),
                );
                continue;
            };
            let place = Place {
                task,
                phase,
                at: &at,
            };
            self.event(place, event, key, value, &mut events)?;
        }
        Ok(PhaseIn {
            name: phase.map(str::to_owned),
            node,
            times,
            events,
        })
    }

    fn event(
        &mut self,
        place: Place<'_>,
        event: &str,
        key: &str,
        value: &Node,
        events: &mut Vec<Event>,
    ) -> Result<(), RtAppError> {
        let Place { task, phase, at } = place;
        let string_ref = |cx: &Self| match value {
            Node::Str(s) => Ok(s.clone()),
            other => Err(cx.invalid(
                at,
                format!("must be a string naming its resource, got {}", other.kind()),
            )),
        };
        match event {
            "run" => events.push(Event::Run(self.micros(value, at)?)),
            "runtime" => {
                events.push(Event::Run(self.micros(value, at)?));
                self.note(
                    task,
                    phase,
                    key,
                    Treatment::Approximated(
                        "wall time as reference work: longer on a CPU below capacity 1024".into(),
                    ),
                );
            }
            "sleep" => events.push(Event::Sleep(self.micros(value, at)?)),
            "timer" => events.push(self.timer(task, phase, value, at, key)?),
            "mem" | "iorun" => {
                let bytes = self.count(value, at)?;
                events.push(Event::Run(bytes / MEM_BYTES_PER_NS));
                let how = if event == "mem" {
                    format!(
                        "a memset of the bytes as work at {MEM_BYTES_PER_NS} bytes per reference ns"
                    )
                } else {
                    format!(
                        "a write to the I/O device as work at {MEM_BYTES_PER_NS} bytes per \
                         reference ns; a device that blocks is not modelled"
                    )
                };
                self.note(task, phase, key, Treatment::Approximated(how));
            }
            "memrun" => {
                let kind = match value.get("type") {
                    Some(Node::Str(t)) => t.clone(),
                    _ => {
                        return Err(self.invalid(
                            &format!("{at}.type"),
                            "must be \"chase\", \"read\" or \"write\"".into(),
                        ));
                    }
                };
                let count = match value.get("count") {
                    Some(v) => self.count(v, &format!("{at}.count"))?,
                    None => 0,
                };
                let (ns, how) = match kind.as_str() {
                    "chase" => (
                        count.saturating_mul(MEM_CHASE_NS_PER_STEP),
                        format!(
                            "a pointer chase as work at {MEM_CHASE_NS_PER_STEP} reference ns a step"
                        ),
                    ),
                    "read" | "write" => (
                        count / MEM_BYTES_PER_NS,
                        format!(
                            "a {kind} of the bytes as work at {MEM_BYTES_PER_NS} bytes per reference ns"
                        ),
                    ),
                    other => {
                        return Err(self.invalid(
                            &format!("{at}.type"),
                            format!("must be \"chase\", \"read\" or \"write\", got \"{other}\""),
                        ));
                    }
                };
                events.push(Event::Run(ns));
                self.note(task, phase, key, Treatment::Approximated(how));
            }
            "fork" => events.push(Event::Fork(string_ref(self)?)),
            "lock" | "unlock" => {
                string_ref(self)?;
                self.note(
                    task,
                    phase,
                    key,
                    Treatment::Approximated("never contended: the model has no locks".into()),
                );
            }
            "barrier" => {
                string_ref(self)?;
                self.note(
                    task,
                    phase,
                    key,
                    Treatment::Approximated(
                        "no wait: threads meet there only if their work before it takes equal time"
                            .into(),
                    ),
                );
            }
            "yield" => self.note(
                task,
                phase,
                key,
                Treatment::Dropped("the model has no sched_yield".into()),
            ),
            "suspend" => events.push(Event::Rel(Relation::Suspend(match value {
                Node::Str(s) if !s.is_empty() => Some(s.clone()),
                _ => None,
            }))),
            "resume" => events.push(Event::Rel(Relation::Resume(string_ref(self)?))),
            "signal" | "broad" => events.push(Event::Rel(Relation::Signal {
                cond: string_ref(self)?,
                one: event == "signal",
            })),
            "sem_post" => events.push(Event::Rel(Relation::SemPost(string_ref(self)?))),
            "sem_wait" => events.push(Event::Rel(Relation::SemWait(string_ref(self)?))),
            _ => {
                // wait and sync: `{"ref": COND, "mutex": MUTEX}` (a bare name reads too).
                let cond = match value {
                    Node::Str(s) => s.clone(),
                    _ => match value.get("ref") {
                        Some(Node::Str(s)) => s.clone(),
                        _ => {
                            return Err(self.invalid(
                                at,
                                format!(
                                    "must be {{\"ref\": CONDITION, \"mutex\": MUTEX}}, got {}",
                                    show(value)
                                ),
                            ));
                        }
                    },
                };
                if event == "sync" {
                    events.push(Event::Rel(Relation::Signal {
                        cond: cond.clone(),
                        one: true,
                    }));
                }
                events.push(Event::Rel(Relation::Wait(cond)));
            }
        }
        Ok(())
    }
}

fn property_why(key: &str) -> String {
    match key {
        "taskgroup" => "the simulator has no cgroups".into(),
        "nodes_membind" => "the model has no NUMA memory placement".into(),
        _ => "the simulator has no deadline class".into(),
    }
}
