//! What the `hybrid-sim` end-to-end tests share: the binary, run from the repository root so
//! the bundled examples' relative paths work as the docs write them, and a scratch directory
//! per test for the files they write.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `hybrid-sim ARGS` from the repository root. The caller's `RUST_LOG` is dropped so that the
/// `-v` flags alone decide what is logged.
pub(crate) fn hybrid_sim(args: &[&str]) -> Output {
    hybrid_sim_env(args, &[])
}

/// [`hybrid_sim`] with extra environment variables.
pub(crate) fn hybrid_sim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run hybrid-sim")
}

/// `hybrid-sim ARGS` with its standard output going to `/dev/full`, where every write fails
/// (ENOSPC).
pub(crate) fn hybrid_sim_to_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full");
    Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdout(full)
        .output()
        .expect("run hybrid-sim")
}

/// Writes the trace `text` to `trace`, then [`replay_json`] of it.
pub(crate) fn write_and_replay_json(trace: &Path, text: &str) -> serde_json::Value {
    std::fs::write(trace, text).unwrap();
    replay_json(trace)
}

/// `hybrid-sim replay TRACE --json`, which must succeed: its reports.
pub(crate) fn replay_json(trace: &Path) -> serde_json::Value {
    let o = hybrid_sim(&["replay", trace.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A fresh empty directory `hl-test-*` of a test's own under Cargo's directory for
/// integration tests' files, removed when dropped (a failed assertion unwinding drops it too):
/// the test holds it for as long as its files are used.
pub(crate) fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("hl-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Output bytes as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One round of the live loop against `core`, drawn from `rng` for the decision-log tests,
/// each call into the core first handed to `log` as the decision log has it: the backlog,
/// one to three queued tasks (numbered from 100, one per slot of `last_cpu`, which keeps where
/// each last went: a slice end one time in three when it has run, else a wake-up, by a task on
/// one of the CPUs of `all` half the time; the affinity `affinity` gives its number), an idle
/// snapshot of `all` with a recheck when the core asks, the dispatches, the core's timer when
/// due, and an exit one round in forty. Returns how many dispatches were sent.
pub(crate) fn random_round<
    'a,
    S: AsRef<[hybridland_policy::Slot]> + AsMut<[hybridland_policy::Slot]>,
    P: hybridland_policy::PlacementPolicy,
>(
    core: &mut hybridland_policy::SchedCore<S, P>,
    rng: &mut hybridland_policy::rng::Pcg32,
    now: u64,
    last_cpu: &mut [Option<hybridland_policy::CpuId>],
    all: &hybridland_policy::CpuSet,
    affinity: impl Fn(u32) -> hybridland_policy::Affinity<'a>,
    log: &mut dyn FnMut(&hybridland_trace::decisions::Entry),
) -> usize {
    use hybridland_policy::{
        Arrival, CpuId, CpuSet, Input, LastRun, Life, Output, Queued, Snapshot, TaskId, TimeNs,
        UtilSource, Waiting, Waker,
    };
    use hybridland_trace::decisions::Entry;
    let at = TimeNs(now);
    // Every input is logged as it is handed over, every output as it is carried out.
    let feed = |core: &mut hybridland_policy::SchedCore<S, P>,
                log: &mut dyn FnMut(&Entry),
                input: Input<'_>| {
        log(&Entry::input(at, &input));
        core.handle(at, input)
    };
    let nr_cpus = all.count() as u32;
    let waiting = u64::from(rng.below(4));
    feed(core, log, Input::Backlog { waiting }).unwrap();
    for _ in 0..1 + rng.below(3) {
        let task = 100 + rng.below(last_cpu.len() as u32);
        let i = (task - 100) as usize;
        let slice_end = last_cpu[i].is_some() && rng.below(3) == 0;
        let q = Queued {
            task: TaskId(task),
            life: Life(u64::from(task)),
            token: 0,
            arrival: if slice_end {
                Arrival::SliceEnd {
                    waiting: if rng.below(2) == 0 {
                        Waiting::Nobody
                    } else {
                        Waiting::OwnQueue
                    },
                }
            } else {
                Arrival::Wakeup {
                    waker: (rng.below(2) == 0).then_some(Waker {
                        task: None,
                        cpu: CpuId(rng.below(nr_cpus) as u16),
                        sync: rng.below(2) == 0,
                    }),
                }
            },
            cpu: last_cpu[i],
            last_run: last_cpu[i].map(|_| LastRun {
                start_ns: now - 900_000,
                stop_ns: now - 100_000 * u64::from(1 + rng.below(5)),
            }),
            weight: 100,
            affinity: affinity(task),
            util: UtilSource::Estimate,
        };
        feed(core, log, Input::Queued(q)).unwrap();
    }
    let idle: CpuSet = all.iter().filter(|_| rng.below(3) != 0).collect();
    let queued: CpuSet = all.iter().filter(|_| rng.below(8) == 0).collect();
    let snap = Snapshot {
        idle: &idle,
        queued: Some(&queued),
        caller_cpu: Some(CpuId(rng.below(nr_cpus) as u16)),
    };
    feed(core, log, Input::Snapshot(snap)).unwrap();
    if core.wants_recheck() {
        let again: CpuSet = idle.iter().filter(|_| rng.below(4) != 0).collect();
        let snap = Snapshot {
            idle: &again,
            queued: Some(&queued),
            caller_cpu: None,
        };
        feed(core, log, Input::Recheck(snap)).unwrap();
    }
    let mut sent = 0;
    while let Some(out) = core.poll() {
        log(&Entry::output(&out));
        let Output::Dispatch(d) = out else {
            continue;
        };
        sent += 1;
        if let (Some(c), Some(slot)) = (
            d.target.cpu(),
            last_cpu.get_mut(d.task.0.wrapping_sub(100) as usize),
        ) {
            *slot = Some(c);
        }
    }
    if core.poll_timeout().is_some_and(|due| at >= due) {
        feed(core, log, Input::Tick).unwrap();
        if let Some(out) = core.poll() {
            log(&Entry::output(&out));
        }
    }
    if rng.below(40) == 0 {
        let task = 100 + rng.below(last_cpu.len() as u32);
        let life = Life(u64::from(task));
        feed(
            core,
            log,
            Input::Exit {
                task: TaskId(task),
                life,
            },
        )
        .unwrap();
        last_cpu[(task - 100) as usize] = None;
    }
    sent
}
