//! `hybrid-sim` under a real address-space limit. `replay`: a valid trace
//! of many tiny runs used to abort out of memory because superseded slice ends stayed in the
//! event heap; its memory now depends on tasks and CPUs only. Every input at its documented
//! maximum is read in 1 GiB: a trace of 200,000 tasks (`validate`,
//! `replay`), a recording (`import ftrace`), an rt-app file (`import rt-app`) and a decision
//! log (`decisions`), each generated just under its size limit in a directory removed after.
#![cfg(unix)]

mod common;
use common::random_round;
use hybridland_policy::rng::Pcg32;
use hybridland_policy::{
    Affinity, ClusterBalance, CoreConfig, CpuId, CpuSet, PolicyConfig, SchedCore, Slot, TaskId,
};
use hybridland_sim::import::ftrace::MAX_FTRACE_BYTES;
use hybridland_sim::import::rt_app::MAX_RT_APP_BYTES;
use hybridland_sim::machine_file::Machine;
use hybridland_trace::decisions::{CoreSettings, FORMAT, Header, MAX_FILE_BYTES, VERSION};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// 128 MiB of address space. Before the fix the trace below needed about 200 MB of event
/// heap and aborted (exit 134) at this limit; the replay now runs in under 10 MB.
const LIMIT_KIB: u32 = 128 * 1024;

/// 60 tasks, each 100,000 x {run 1 ns, sleep 1 ns}: 12 million events.
const TRACE: &str = r#"{"version": 1, "name": "tiny-runs", "tasks": [{"name": "t", "copies": 60,
    "phases": [{"loop": {"times": 100000, "phases": [{"run_ns": 1}, {"sleep_ns": 1}]}}]}]}"#;

/// 64 equal cores, no SMT, no shared L2: nothing slows the tasks down, so they all end before
/// the first 5 ms slice would.
const TOPOLOGY: &str = r#"name = "plain-64"
description = "64 equal cores"
[[groups]]
kind = "performance"
capacity = 1024
cores = 64
cores_per_cluster = 1
"#;

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("memory-limit");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn tiny_runs_replay_within_a_memory_limit() {
    let trace = scratch("tiny-runs.json", TRACE);
    let topology = scratch("plain-64.toml", TOPOLOGY);
    // `ulimit -v` in the shell, then exec: the limit applies to hybrid-sim alone.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
        .arg("replay")
        .arg(&trace)
        .arg("--topology")
        .arg(&topology)
        .arg("--json")
        .output()
        .expect("run hybrid-sim under sh");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "hybrid-sim under a {LIMIT_KIB} KiB limit: {:?}\n{stderr}",
        o.status
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    // --json is an array of reports, one per policy.
    let summary = &report[0]["summary"];
    assert_eq!(summary["tasks_finished"], 60, "{summary}");
    assert!(summary["events"].as_u64() >= Some(12_000_000), "{summary}");
    // 60 tasks and 64 CPUs: a few hundred entries, not one per superseded slice.
    assert!(
        summary["peak_queued_events"].as_u64() <= Some(500),
        "{summary}"
    );
}

/// 1 GiB of address space: the documented maxima must be read within it.
const ONE_GIB_KIB: u32 = 1024 * 1024;

/// A trace at the documented task limit (200,000 tasks, about 60 MB of compact JSON): each
/// task eight runs and sleeps of a few microseconds, so the text is dense in small values,
/// the shape that costs most when a document is held as a tree.
fn max_tasks_trace() -> String {
    use core::fmt::Write as _;
    let mut text = String::from(r#"{"version":1,"tasks":["#);
    for i in 0..200_000u64 {
        if i > 0 {
            text.push(',');
        }
        write!(text, r#"{{"name":"w{i}","phases":["#).unwrap();
        for j in 0..8 {
            if j > 0 {
                text.push(',');
            }
            write!(
                text,
                r#"{{"run_ns":{}}},{{"sleep_ns":{}}}"#,
                1000 + (i + j) % 97,
                2000 + (i * j) % 89
            )
            .unwrap();
        }
        text.push_str("]}");
    }
    text.push_str("]}");
    text
}

/// `validate` and `replay` of a trace at the task limit under 1 GiB of address space. Before
/// the trace was told from an rt-app file without building a tree of the whole document,
/// both peaked at 1.26 GB resident (debug build) and aborted under this limit; now 217 MB and
/// 322 MB.
#[test]
fn a_trace_at_the_task_limit_validates_and_replays_within_one_gib() {
    let trace = scratch("max-tasks.json", &max_tasks_trace());
    assert!(std::fs::metadata(&trace).unwrap().len() > 55_000_000);
    for args in [&["validate"][..], &["replay", "--json"][..]] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {ONE_GIB_KIB} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
            .args(&args[..1])
            .arg(&trace)
            .args(&args[1..])
            .output()
            .expect("run hybrid-sim under sh");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success(),
            "hybrid-sim {args:?} under a 1 GiB limit: {:?}\n{stderr}",
            o.status
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        if args[0] == "validate" {
            assert!(
                stdout.contains("ok: trace version 1, 200000 task(s)"),
                "{stdout}"
            );
        } else {
            let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
            assert_eq!(
                report[0]["summary"]["tasks_finished"], 200_000,
                "{stdout:.400}"
            );
        }
    }
}

/// A directory of its own per test, removed when the test ends however it ends: these inputs
/// are hundreds of MB.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(test: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("memory-limit")
            .join(test);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A buffered file that counts what was written to it, so a generator can stop just under a
/// limit without holding the text.
struct Counted {
    file: std::io::BufWriter<std::fs::File>,
    bytes: u64,
}

impl Counted {
    fn create(path: &Path) -> Self {
        Self {
            file: std::io::BufWriter::new(std::fs::File::create(path).unwrap()),
            bytes: 0,
        }
    }

    fn finish(mut self) -> u64 {
        self.file.flush().unwrap();
        self.bytes
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// `hybrid-sim ARGS` with 1 GiB of address space for it alone (`ulimit -v` in the shell, then
/// exec), its output captured.
fn within_one_gib(args: &[&OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ONE_GIB_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run hybrid-sim under sh")
}

fn assert_ran(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} under a 1 GiB limit: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Bytes a generator leaves free below a limit: it stops between two rounds, never in one.
const MARGIN: u64 = 64 << 10;

/// A `trace-cmd report` (its current sched plugin form, as
/// examples/recordings/formats/trace-cmd-report.txt) of 5,000 tasks on the 20 CPUs of the
/// i7-13800h, up to `max` bytes: on each CPU in turn the running task wakes a sleeping one
/// (`sched_waking` and `sched_wakeup` from its own context, so the import keeps a wake-up
/// relation) and then blocks (`S`) or is preempted (`R+`), and the next runnable task comes in;
/// an idle CPU with nothing runnable is woken from the idle task (an interrupt). About three
/// million lines at the limit; each task keeps about 600 phases, under the trace's 1,024, so
/// nothing is folded and every relation stays.
fn write_max_recording(path: &Path, max: u64) -> u64 {
    const CPUS: u16 = 20;
    const TASKS: u32 = 5_000;
    let mut out = Counted::create(path);
    writeln!(out, "version = 7\ncpus={CPUS}").unwrap();
    let mut rng = Pcg32::new(24, 7);
    let comm = |pid: u32| format!("w{}", pid % 97);
    let mut running = [0u32; CPUS as usize];
    let mut sleeping: Vec<u32> = (1000..1000 + TASKS).collect();
    let mut runnable: VecDeque<u32> = VecDeque::new();
    let mut now_us = 5_000_000u64;
    let mut cpu = 0u16;
    while out.bytes + MARGIN < max {
        cpu = (cpu + 1) % CPUS;
        now_us += 1 + u64::from(rng.below(9));
        let at = format!(
            "[{cpu:03}] {}.{:06}:",
            now_us / 1_000_000,
            now_us % 1_000_000
        );
        let cur = running[usize::from(cpu)];
        let who = if cur == 0 {
            "<idle>-0".to_owned()
        } else {
            format!("{}-{cur}", comm(cur))
        };
        let mut wake = |out: &mut Counted, sleeping: &mut Vec<u32>, from_task: bool| {
            let k = rng.below(sleeping.len() as u32) as usize;
            let pid = sleeping.swap_remove(k);
            let c = comm(pid);
            if from_task {
                writeln!(
                    out,
                    "{who:>16} {at} sched_waking:        comm={c} pid={pid} prio=120 \
                     target_cpu={cpu:03}"
                )
                .unwrap();
            }
            writeln!(
                out,
                "{who:>16} {at} sched_wakeup:        {c}:{pid} [120] success=1 CPU:{cpu:03}"
            )
            .unwrap();
            pid
        };
        if cur != 0 && !sleeping.is_empty() {
            let pid = wake(&mut out, &mut sleeping, true);
            runnable.push_back(pid);
        } else if cur == 0 && runnable.is_empty() && !sleeping.is_empty() {
            let pid = wake(&mut out, &mut sleeping, false);
            runnable.push_back(pid);
        }
        let next = runnable.pop_front().unwrap_or(0);
        if cur == 0 && next == 0 {
            continue;
        }
        let prev = if cur == 0 {
            format!("swapper/{cpu}:0 [120] R")
        } else if rng.below(5) == 0 {
            runnable.push_back(cur);
            format!("{}:{cur} [120] R+", comm(cur))
        } else {
            sleeping.push(cur);
            format!("{}:{cur} [120] S", comm(cur))
        };
        let next_side = if next == 0 {
            format!("swapper/{cpu}:0 [120]")
        } else {
            format!("{}:{next} [120]", comm(next))
        };
        writeln!(
            out,
            "{who:>16} {at} sched_switch:        {prev} ==> {next_side}"
        )
        .unwrap();
        running[usize::from(cpu)] = next;
    }
    out.finish()
}

/// `import ftrace` of a recording just under its 256 MiB limit, in 1 GiB. It peaks at 630 MB
/// resident (debug build): the text, the builder's per-task phases and the trace it writes
/// (170 MB of JSON).
#[test]
fn a_recording_at_the_size_limit_imports_within_one_gib() {
    let dir = ScratchDir::new("ftrace");
    let recording = dir.join("max.trace");
    let max = MAX_FTRACE_BYTES as u64;
    let bytes = write_max_recording(&recording, max);
    assert!(bytes <= max && bytes + 2 * MARGIN > max, "{bytes}");
    let out = dir.join("max.json");
    let o = within_one_gib(&[
        "import".as_ref(),
        "ftrace".as_ref(),
        recording.as_os_str(),
        "--topology".as_ref(),
        "i7-13800h".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_ran(&o, "import ftrace");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("5000 task(s) from recording") && stdout.contains("events skipped: none"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("folded"), "{stderr}");
}

/// An rt-app workload as `workgen` writes one, without the whitespace, up to `max` bytes:
/// tasks of eight phases, each a loop of a run and a sleep, with a nice value, running for
/// the file's duration. Returns the tasks written.
fn write_max_rt_app(path: &Path, max: u64) -> usize {
    use core::fmt::Write as _;
    let mut out = Counted::create(path);
    write!(
        out,
        r#"{{"global":{{"duration":10,"default_policy":"SCHED_OTHER","calibration":"CPU0"}},"tasks":{{"#
    )
    .unwrap();
    let mut task = String::new();
    let mut tasks = 0usize;
    loop {
        task.clear();
        let i = tasks;
        if i > 0 {
            task.push(',');
        }
        write!(
            task,
            r#""t{i}":{{"instance":1,"priority":{},"loop":-1,"phases":{{"#,
            (i % 40) as i64 - 20,
        )
        .unwrap();
        for j in 0..8 {
            if j > 0 {
                task.push(',');
            }
            write!(
                task,
                r#""p{j}":{{"loop":{},"run{j}":{},"sleep{j}":{}}}"#,
                1 + (i + j) % 5,
                100 + (i * 7 + j) % 900,
                200 + (i * 3 + j) % 800
            )
            .unwrap();
        }
        task.push_str("}}");
        if out.bytes + task.len() as u64 + 2 > max {
            break;
        }
        out.write_all(task.as_bytes()).unwrap();
        tasks += 1;
    }
    out.write_all(b"}}").unwrap();
    out.finish();
    tasks
}

/// `import rt-app` of a workload just under the rt-app limit (16 MiB, 44,000 tasks), in
/// 1 GiB. It peaks at 360 MB resident (debug build); the file is held as a tree of values,
/// 17 times the text, and at the former 64 MiB limit the import took 1.36 GB.
#[test]
fn an_rt_app_file_at_the_size_limit_imports_within_one_gib() {
    let dir = ScratchDir::new("rt-app");
    let file = dir.join("max.json");
    let max = MAX_RT_APP_BYTES as u64;
    let tasks = write_max_rt_app(&file, max);
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes <= max && bytes + 2 * MARGIN > max, "{bytes}");
    let out = dir.join("max.trace.json");
    let o = within_one_gib(&[
        "import".as_ref(),
        "rt-app".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_ran(&o, "import rt-app");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!("{tasks} task(s) from rt-app file(s)")),
        "{stdout}"
    );
}

/// The machine of the decision log: the i9-13900K's 32 CPUs, so idle snapshots are long
/// CPU lists.
const LOG_MACHINE: &str = include_str!("../../sim-frontend/presets/rpl-desktop.toml");
/// Tasks the logged loop sees (pids from 100) and the core's storage.
const LOG_TASKS: u32 = 256;
const LOG_MAX_TASKS: usize = 1024;
/// The nudge helper's pid.
const LOG_HELPER: TaskId = TaskId(99_999);

fn log_line(out: &mut Counted, entry: &impl serde::Serialize) {
    serde_json::to_writer(&mut *out, entry).unwrap();
    out.write_all(b"\n").unwrap();
}

/// A decision log up to `max` bytes, written as `scx_hybridland --record` writes it: each
/// call the loop makes to the core (backlogs, wake-ups and slice ends of 256 tasks, idle
/// snapshots and rechecks, ticks, exits), then the dispatches and nudges the core gives,
/// under hybridland with cluster balance on; so `hybrid-sim decisions` must agree with every
/// line. Returns the dispatches sent.
fn write_max_decision_log(path: &Path, max: u64) -> usize {
    let topo = *Machine::from_toml_str(LOG_MACHINE, "rpl-desktop")
        .unwrap()
        .topology;
    let knobs = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    let config = CoreConfig::DEFAULT;
    let mut out = Counted::create(path);
    log_line(
        &mut out,
        &Header {
            format: FORMAT.into(),
            version: VERSION,
            machine: LOG_MACHINE.into(),
            policy: "hybridland".into(),
            seed: 0,
            knobs,
            policy_knobs: Default::default(),
            core: CoreSettings::from(&config),
            max_tasks: LOG_MAX_TASKS,
            helper: Some(LOG_HELPER),
            max_bytes: usize::try_from(max).unwrap(),
            truncated: false,
        },
    );
    let storage = vec![Slot::EMPTY; Slot::count_for(LOG_MAX_TASKS)];
    let mut core = SchedCore::new(topo.clone(), &knobs, config, storage).unwrap();
    core.set_helper(Some(LOG_HELPER));
    let all = *topo.cpus();
    let e_cores: CpuSet = all.iter().filter(|c| c.0 >= 16).collect();
    let mut rng = Pcg32::new(24, 31);
    let mut now = 1_000_000u64;
    let mut last_cpu = vec![None::<CpuId>; LOG_TASKS as usize];
    let mut sent = 0;
    while out.bytes + MARGIN < max {
        now += 200_000 + u64::from(rng.below(800_000));
        let affinity = |task: u32| match task % 8 {
            0 => Affinity::Cpus(&e_cores),
            1 => Affinity::Unknown,
            _ => Affinity::Cpus(&all),
        };
        sent += random_round(
            &mut core,
            &mut rng,
            now,
            &mut last_cpu,
            &all,
            affinity,
            &mut |e| log_line(&mut out, e),
        );
    }
    out.finish();
    sent
}

/// `hybrid-sim decisions` of a log just under the reader's 256 MiB limit (3.1 million
/// entries), in 1 GiB: every dispatch replays identically. It peaks at 333 MB resident (debug
/// build): the text and its entries packed.
#[test]
fn a_decision_log_at_the_size_limit_replays_within_one_gib() {
    let dir = ScratchDir::new("decisions");
    let log = dir.join("max.decisions.jsonl");
    let sent = write_max_decision_log(&log, MAX_FILE_BYTES);
    let bytes = std::fs::metadata(&log).unwrap().len();
    assert!(
        bytes <= MAX_FILE_BYTES && bytes + 2 * MARGIN > MAX_FILE_BYTES,
        "{bytes}"
    );
    let o = within_one_gib(&["decisions".as_ref(), log.as_os_str()]);
    assert_ran(&o, "decisions");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "dispatches sent: {sent}, replayed identically: {sent}"
        )) && stdout.contains("every dispatch and nudge agrees"),
        "{stdout}"
    );
}
