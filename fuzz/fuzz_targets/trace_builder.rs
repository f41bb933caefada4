//! The recorder's path from scheduling events to a trace (`TimelineBuilder`, what
//! `scx_hybridland --record` and `hybrid-sim import ftrace` feed) under arbitrary event
//! sequences: switch-ins on any CPU (known to the machine or not), switch-outs, wake-ups (by
//! another task or not), exits, restrictions, at times in any order, for up to past a trace's
//! phase limit per task. Every wake-up relation kept is one `wait_for` and one `wake`.
//! The builder gives a valid trace or a typed error; in a trace every task starts within the
//! span, and its runs and sleeps (reference work: never more than the wall time) fit in the
//! span after its start; the busy time and moves it reports are what the events gave.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_policy::testkit::{CoreGroup, Numbering, machine};
use hybridland_policy::{CoreKind, Topology};
use hybridland_sim::Trace;
use hybridland_sim::trace::Phase;
use hybridland_trace::builder::{TimelineBuilder, TimelineError};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Events taken from one input: enough for a task to pass the trace's 1,024 phases and be
/// folded.
const MAX_EVENTS: usize = 8_192;

#[derive(Debug, Arbitrary)]
enum Ev {
    In {
        pid: u8,
        cpu: u8,
        dt: u16,
    },
    Out {
        pid: u8,
        dt: u16,
        runnable: bool,
    },
    Wake {
        pid: u8,
        dt: u16,
    },
    Exit {
        pid: u8,
        dt: u16,
    },
    /// A report from the past (a late event), `back` ns before the clock.
    Late {
        pid: u8,
        back: u32,
        kind: u8,
        cpu: u8,
    },
    Restrict {
        pid: u8,
        lo: u8,
        len: u8,
    },
    Mark {
        dt: u32,
    },
    /// A long burst: the task runs and sleeps `n` times (so one task reaches the phase limit
    /// without thousands of input bytes).
    Burst {
        pid: u8,
        cpu: u8,
        n: u16,
        run: u16,
        sleep: u16,
    },
    /// A time far out, near `u64::MAX`.
    Far {
        pid: u8,
        cpu: u8,
    },
    /// A wake-up by another task (or the same one, or one not running).
    WakeBy {
        pid: u8,
        waker: u8,
        dt: u16,
    },
}

#[derive(Debug, Arbitrary)]
struct Input {
    start: u64,
    pin: bool,
    comm: u8,
    events: Vec<Ev>,
}

/// Two P-cores with SMT and a cluster of four E-cores at capacity 512: 8 CPUs, ids 0-7.
fn topo() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| {
        machine(
            &[
                CoreGroup::new(CoreKind::Performance, 1024, 2, 2, 1),
                CoreGroup::new(CoreKind::Efficiency, 512, 4, 1, 4),
            ],
            Numbering::Consecutive,
        )
    })
}

fn comm(sel: u8, pid: u8) -> String {
    match sel % 4 {
        0 => format!("task{pid}"),
        1 => "kworker/0:1 x".to_owned(),
        2 => String::new(),
        _ => "\u{1F980}\t\"q\"".to_owned(),
    }
}

/// Run and sleep totals of phases, loops multiplied out.
fn totals(phases: &[Phase]) -> (u128, u128) {
    phases.iter().fold((0, 0), |(r, s), p| match p {
        Phase::RunNs(n) => (r + u128::from(*n), s),
        Phase::SleepNs(n) => (r, s + u128::from(*n)),
        Phase::Loop(l) => {
            let (lr, ls) = totals(&l.phases);
            (r + lr * u128::from(l.times), s + ls * u128::from(l.times))
        }
        Phase::Pool(_) | Phase::Wake(_) | Phase::WakeIfWaiting(_) | Phase::WaitFor(_) => (r, s),
    })
}

fuzz_target!(|input: Input| {
    let topo = topo();
    let mut b = TimelineBuilder::new(topo);
    let mut now = input.start % (1 << 62);
    b.mark(now);
    let (mut earliest, mut latest) = (now, now);
    let mut steps = 0usize;
    for ev in &input.events {
        if steps >= MAX_EVENTS {
            break;
        }
        steps += 1;
        let c = |pid: u8| comm(input.comm, pid);
        match *ev {
            Ev::In { pid, cpu, dt } => {
                now = now.saturating_add(u64::from(dt));
                b.switch_in(u32::from(pid % 16), &c(pid), now, u16::from(cpu % 10));
            }
            Ev::Out { pid, dt, runnable } => {
                now = now.saturating_add(u64::from(dt));
                b.switch_out(u32::from(pid % 16), &c(pid), now, runnable);
            }
            Ev::Wake { pid, dt } => {
                now = now.saturating_add(u64::from(dt));
                b.wakeup(u32::from(pid % 16), &c(pid), now);
            }
            Ev::Exit { pid, dt } => {
                now = now.saturating_add(u64::from(dt));
                b.exit(u32::from(pid % 16), now);
            }
            Ev::Late {
                pid,
                back,
                kind,
                cpu,
            } => {
                let at = now.saturating_sub(u64::from(back));
                let pid32 = u32::from(pid % 16);
                match kind % 3 {
                    0 => b.switch_in(pid32, &c(pid), at, u16::from(cpu % 10)),
                    1 => b.switch_out(pid32, &c(pid), at, kind & 4 != 0),
                    _ => b.wakeup(pid32, &c(pid), at),
                }
                earliest = earliest.min(at);
            }
            Ev::Restrict { pid, lo, len } => {
                let lo = u16::from(lo % 12);
                b.restrict(
                    u32::from(pid % 16),
                    format!("{lo}-{}", lo + u16::from(len % 4)),
                );
            }
            Ev::Mark { dt } => {
                now = now.saturating_add(u64::from(dt));
                b.mark(now);
            }
            Ev::Burst {
                pid,
                cpu,
                n,
                run,
                sleep,
            } => {
                let pid32 = u32::from(pid % 16);
                for _ in 0..(n % 1_200) {
                    steps += 2;
                    b.switch_in(pid32, &c(pid), now, u16::from(cpu % 10));
                    now = now.saturating_add(1 + u64::from(run));
                    b.switch_out(pid32, &c(pid), now, false);
                    now = now.saturating_add(u64::from(sleep));
                    b.wakeup(pid32, &c(pid), now);
                }
            }
            Ev::Far { pid, cpu } => {
                now = now.max(u64::MAX - (1 << 20));
                b.switch_in(u32::from(pid % 16), &c(pid), now, u16::from(cpu % 10));
            }
            Ev::WakeBy { pid, waker, dt } => {
                now = now.saturating_add(u64::from(dt));
                b.wakeup_by(
                    u32::from(pid % 16),
                    &c(pid),
                    now,
                    Some(u32::from(waker % 16)),
                );
            }
        }
        latest = latest.max(now);
    }
    let builder = b.clone();
    match b.finish("fuzz-recording", "fuzz", input.pin) {
        Err(TimelineError::Empty) => {}
        Err(TimelineError::Trace(e)) => assert!(!e.to_string().is_empty()),
        Ok(t) => {
            let again = builder.finish("fuzz-recording", "fuzz", input.pin);
            assert_eq!(again.as_ref(), Ok(&t), "finishing is deterministic");
            let span = t.trace.duration_ns.expect("a recording has a duration");
            assert_eq!(span, (latest - earliest).max(1), "span of the events");
            let count = |f: fn(&Phase) -> bool| -> u64 {
                t.trace
                    .tasks
                    .iter()
                    .flat_map(|task| task.phases.iter())
                    .filter(|p| f(p))
                    .count() as u64
            };
            assert_eq!(count(|p| matches!(p, Phase::WaitFor(_))), t.relations);
            assert_eq!(count(|p| matches!(p, Phase::Wake(_))), t.relations);
            for task in &t.trace.tasks {
                let (run, sleep) = totals(&task.phases);
                assert!(run > 0, "{}: a task in the trace ran", task.name);
                assert!(
                    u128::from(task.start_ns) + run + sleep <= u128::from(span),
                    "{}: starts at {} and runs {run} and sleeps {sleep} in a span of {span}",
                    task.name,
                    task.start_ns
                );
                assert!(t.observed_cpus.contains_key(&task.name));
            }
            let printed = t.trace.to_json_string();
            let back = Trace::from_json_str(&printed, "printed.json")
                .unwrap_or_else(|e| panic!("the recorded trace reads back: {e}\n{printed}"));
            assert_eq!(back, t.trace);
            back.validate_for(topo, "printed.json")
                .expect("the recorded trace fits its machine");
            assert!(t.busy_ns.keys().all(|cpu| *cpu < 10));
        }
    }
});
