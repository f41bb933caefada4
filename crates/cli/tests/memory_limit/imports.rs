//! The imports at their size limits in 1 GiB: a `trace-cmd report` recording just under
//! 256 MiB (`import ftrace`) and an rt-app workload just under 16 MiB (`import rt-app`).

use super::{Counted, MARGIN, assert_ran, scratch, within_one_gib};
use hybridland_policy::rng::Pcg32;
use hybridland_sim::import::ftrace::MAX_FTRACE_BYTES;
use hybridland_sim::import::rt_app::MAX_RT_APP_BYTES;
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;

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
    let dir = scratch();
    let recording = dir.path().join("max.trace");
    let max = MAX_FTRACE_BYTES as u64;
    let bytes = write_max_recording(&recording, max);
    assert!(bytes <= max && bytes + 2 * MARGIN > max, "{bytes}");
    let out = dir.path().join("max.json");
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
    let dir = scratch();
    let file = dir.path().join("max.json");
    let max = MAX_RT_APP_BYTES as u64;
    let tasks = write_max_rt_app(&file, max);
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes <= max && bytes + 2 * MARGIN > max, "{bytes}");
    let out = dir.path().join("max.trace.json");
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
