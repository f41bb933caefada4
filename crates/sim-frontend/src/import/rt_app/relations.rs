//! The wake-ups between threads settled once every thread and fork is known: whom a
//! `resume`, `signal`, `broad` or `sem_post` wakes and whom a `suspend`, `wait`, `sync` or
//! `sem_wait` waits for, with what the model has no counterpart for noted.

use super::importer::Importer;
use super::steps::{self, Relation};
use super::tasks::TaskModel;
use super::{RtAppError, Treatment, Unmodelled};
use crate::trace::{MAX_WAKERS, Phase, TaskSpec};

impl Importer {
    /// The tasks' phases with their wake-ups settled: who a `resume`, `signal` or `sem_post`
    /// wakes and who a `suspend`, `wait` or `sem_wait` waits for, now that every thread (and
    /// fork) is known. A task's own copies wake each other; a single thread never wakes itself.
    pub(super) fn relate(
        &mut self,
        models: &[TaskModel],
        placed: Vec<(TaskSpec, usize)>,
    ) -> Result<Vec<TaskSpec>, RtAppError> {
        // Per task of the trace: its name, its thread's name and what its thread does.
        let tasks: Vec<(String, &str, u32, Vec<&Relation>)> = placed
            .iter()
            .map(|(spec, m)| {
                (
                    spec.name.clone(),
                    models[*m].spec.name.as_str(),
                    spec.copies,
                    steps::relations(&models[*m].layout),
                )
            })
            .collect();
        // The tasks (other than `me`, unless it has copies) whose thread does what `pick` picks.
        let whose = |me: usize, pick: &dyn Fn(&Relation) -> bool| -> Vec<String> {
            tasks
                .iter()
                .enumerate()
                .filter(|(k, t)| (*k != me || t.2 > 1) && t.3.iter().any(|r| pick(r)))
                .map(|(_, t)| t.0.clone())
                .collect()
        };
        let threads_of = |names: &[String]| -> u64 {
            tasks
                .iter()
                .filter(|t| names.contains(&t.0))
                .map(|t| u64::from(t.2))
                .sum()
        };
        let mut out = Vec::with_capacity(placed.len());
        for (k, (mut spec, m)) in placed.into_iter().enumerate() {
            let model = &models[m];
            if model.layout.is_empty() {
                out.push(spec);
                continue;
            }
            let thread = model.spec.name.as_str();
            let mut notes: Vec<(&'static str, Treatment)> = Vec::new();
            let mut too_many: Option<usize> = None;
            let mut wait_for = |names: Vec<String>| {
                if names.len() > MAX_WAKERS {
                    too_many = Some(names.len());
                    Vec::new()
                } else {
                    vec![Phase::WaitFor(names)]
                }
            };
            let mut resolve = |r: &Relation| -> Vec<Phase> {
                match r {
                    Relation::Resume(target) => {
                        let suspends_as = |t: &(String, &str, u32, Vec<&Relation>)| {
                            t.1 == target
                                || t.3
                                    .iter()
                                    .any(|r| matches!(r, Relation::Suspend(Some(s)) if s == target))
                        };
                        let woken: Vec<Phase> = tasks
                            .iter()
                            .enumerate()
                            .filter(|(j, t)| suspends_as(t) && (*j != k || t.2 > 1))
                            .map(|(_, t)| Phase::WakeIfWaiting(t.0.clone()))
                            .collect();
                        if woken.is_empty() {
                            notes.push((
                                "resume",
                                Treatment::Dropped(format!(
                                    "wakes no one: no other thread is named \"{target}\" or \
                                     suspends under that name"
                                )),
                            ));
                        }
                        woken
                    }
                    Relation::Suspend(named) => {
                        let named = named.as_deref().filter(|n| *n != thread);
                        let wakers = whose(k, &|r| {
                            matches!(r, Relation::Resume(t)
                                if t == thread || Some(t.as_str()) == named)
                        });
                        if let Some(n) = named {
                            let by_name = whose(k, &|r| matches!(r, Relation::Resume(t) if t == n));
                            if !by_name.is_empty() {
                                notes.push((
                                    "suspend",
                                    Treatment::Approximated(format!(
                                        "waits for the threads resuming \"{n}\" too, as rt-app \
                                         before 2025 read the name (today's rt-app suspends \
                                         under the thread's own)"
                                    )),
                                ));
                            }
                        }
                        let name = named.unwrap_or(thread);
                        blocked_on(
                            ("suspend", "resumes", name),
                            wakers,
                            &mut notes,
                            &mut wait_for,
                        )
                    }
                    Relation::Signal { cond, one } => {
                        let waiters = whose(k, &|r| matches!(r, Relation::Wait(c) if c == cond));
                        if waiters.is_empty() {
                            notes.push((
                                if *one { "signal" } else { "broad" },
                                Treatment::Dropped(format!(
                                    "wakes no one: no other thread waits on \"{cond}\""
                                )),
                            ));
                        } else if *one && threads_of(&waiters) > 1 {
                            notes.push((
                                "signal",
                                Treatment::Approximated(format!(
                                    "wakes every thread waiting on \"{cond}\", where \
                                     pthread_cond_signal wakes one"
                                )),
                            ));
                        }
                        waiters.into_iter().map(Phase::WakeIfWaiting).collect()
                    }
                    Relation::Wait(cond) => {
                        let wakers = whose(
                            k,
                            &|r| matches!(r, Relation::Signal { cond: c, .. } if c == cond),
                        );
                        blocked_on(("wait", "signals", cond), wakers, &mut notes, &mut wait_for)
                    }
                    Relation::SemPost(sem) => {
                        let waiters = whose(k, &|r| matches!(r, Relation::SemWait(s) if s == sem));
                        if threads_of(&waiters) > 1 {
                            notes.push((
                                "sem_post",
                                Treatment::Approximated(format!(
                                    "a post to \"{sem}\" is a token for every waiting thread, \
                                     where the semaphore has one for one of them"
                                )),
                            ));
                        }
                        if waiters.is_empty() {
                            notes.push((
                                "sem_post",
                                Treatment::Dropped(format!(
                                    "wakes no one: no other thread waits on \"{sem}\""
                                )),
                            ));
                        }
                        waiters.into_iter().map(Phase::Wake).collect()
                    }
                    Relation::SemWait(sem) => {
                        let posters = whose(k, &|r| matches!(r, Relation::SemPost(s) if s == sem));
                        blocked_on(
                            ("sem_wait", "posts", sem),
                            posters,
                            &mut notes,
                            &mut wait_for,
                        )
                    }
                }
            };
            spec.phases = steps::to_phases(&model.layout, &mut resolve);
            if let Some(n) = too_many {
                model.source.clone_into(&mut self.source);
                return Err(self.invalid(
                    &format!("tasks.{thread}"),
                    format!(
                        "waits for {n} threads at one event, more than the trace's {MAX_WAKERS}"
                    ),
                ));
            }
            for (key, treatment) in notes {
                let note = Unmodelled {
                    source: model.source.clone(),
                    task: thread.to_owned(),
                    phase: None,
                    key: key.into(),
                    feature: key.into(),
                    treatment,
                };
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
            }
            out.push(spec);
        }
        Ok(out)
    }
}

/// A thread blocks in `event` until one of `wakers` wakes it; with none (no other thread
/// `verb` `name`), rt-app would block for good, and the replay goes on with a note instead.
fn blocked_on(
    (event, verb, name): (&'static str, &str, &str),
    wakers: Vec<String>,
    notes: &mut Vec<(&'static str, Treatment)>,
    wait_for: &mut impl FnMut(Vec<String>) -> Vec<Phase>,
) -> Vec<Phase> {
    if wakers.is_empty() {
        notes.push((
            event,
            Treatment::Approximated(format!(
                "no other thread {verb} \"{name}\": rt-app would block here for good, the \
                 replay goes on"
            )),
        ));
        return Vec::new();
    }
    wait_for(wakers)
}
