//! `hybrid-sim import rt-app` and `hybrid-sim replay` of an rt-app file.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::text;

/// Without colour, whatever the terminal.
fn hybrid_sim(args: &[&str]) -> Output {
    common::hybrid_sim_env(args, &[("NO_COLOR", "1")])
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rt-app-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const EXAMPLE: &str = "examples/rt-app/laptop-mix.json";

/// rt-app's own doc/examples (see the README there).
const FIXTURES: &str = "crates/cli/tests/fixtures/rt-app-examples";

#[test]
fn replay_reads_an_rt_app_file_and_prints_the_summary_whatever_the_log_level() {
    for log in ["info", "error", "off"] {
        let o = common::hybrid_sim_env(
            &["replay", EXAMPLE],
            &[("NO_COLOR", "1"), ("RUST_LOG", log)],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(
            out.starts_with("trace laptop-mix on i7-13800h (seed 0)"),
            "{out}"
        );
        assert!(out.contains("fps mean"), "{out}");
        let err = text(&o.stderr);
        // One line per task: the worker's lock and unlock together.
        assert_eq!(
            err.lines().filter(|l| l.contains("task \"")).count(),
            1,
            "{log}: {err}"
        );
        assert!(
            err.contains(
                "examples/rt-app/laptop-mix.json: task \"worker\": lock approximated (never \
                 contended: the model has no locks) [phases idle]; unlock approximated"
            ),
            "{log}: {err}"
        );
    }
}

#[test]
fn strict_refuses_naming_the_file_the_task_and_the_feature() {
    let o = hybrid_sim(&["replay", EXAMPLE, "--strict"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "examples/rt-app/laptop-mix.json: task \"worker\": lock is not modelled exactly"
        ) && err.contains("--strict refuses it"),
        "{err}"
    );
    let out = scratch("strict.json");
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        EXAMPLE,
        "-o",
        out.to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // A file with nothing approximated passes --strict.
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        &format!("{FIXTURES}/tutorial/example1.json"),
        "--strict",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "");
}

#[test]
fn import_writes_a_trace_that_replays_like_the_rt_app_file() {
    let out = scratch("laptop-mix.trace.json");
    let o = hybrid_sim(&["import", "rt-app", EXAMPLE, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("6 task(s) from rt-app file(s) examples/rt-app/laptop-mix.json"),
        "{}",
        text(&o.stdout)
    );
    let direct = hybrid_sim(&["replay", EXAMPLE, "--json"]);
    let via_trace = hybrid_sim(&["replay", out.to_str().unwrap(), "--json"]);
    assert!(via_trace.status.success(), "{}", text(&via_trace.stderr));
    assert_eq!(text(&direct.stdout), text(&via_trace.stdout));
    // Without -o the trace goes to standard output.
    let o = hybrid_sim(&["import", "rt-app", EXAMPLE]);
    assert!(text(&o.stdout).starts_with("{\n  \"version\": 2,"));
}

#[test]
fn a_bad_rt_app_file_names_the_place() {
    let bad = scratch("bad-rt-app.json");
    std::fs::write(&bad, "{\"tasks\": {\"a\": {\"loop\": 1, \"run\": -3}}}").unwrap();
    let o = hybrid_sim(&["replay", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("bad-rt-app.json: tasks.a.run: must be a non-negative integer"),
        "{}",
        text(&o.stderr)
    );
}

/// Every file of rt-app's doc/examples that imports as it is, the merge/ set as one
/// workload.
const IMPORT_AS_THEY_ARE: [&str; 21] = [
    "browser-long.json",
    "browser-short.json",
    "cpufreq_governor_efficiency/calibration.json",
    "cpufreq_governor_efficiency/dvfs.json",
    "custom-slice.json",
    "mp3-long.json",
    "mp3-short.json",
    "spreading-tasks.json",
    "template.json",
    "tutorial/example1.json",
    "tutorial/example10.json",
    "tutorial/example11.json",
    "tutorial/example2.json",
    "tutorial/example3.json",
    "tutorial/example5.json",
    "tutorial/example6.json",
    "tutorial/example7.json",
    "tutorial/example8.json",
    "tutorial/example9.json",
    "video-long.json",
    "video-short.json",
];

const MERGE_SET: [&str; 6] = [
    "merge/global.json",
    "merge/resources.json",
    "merge/thread0.json",
    "merge/thread1.json",
    "merge/thread2.json",
    "merge/thread3.json",
];

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// 27 of the 28 import as they are; tutorial/example4.json (`loop: -1`, no duration: rt-app
/// runs it until stopped) is refused naming the task and --duration, and imports with it.
/// Every trace replays (each within 2 s of simulated time, to keep the test short).
#[test]
fn rt_apps_own_examples_import_and_replay() {
    let mut all: Vec<String> = std::fs::read_dir(common::root().join(FIXTURES))
        .unwrap()
        .flat_map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                std::fs::read_dir(&p)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect()
            } else {
                vec![p]
            }
        })
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            p.strip_prefix(common::root().join(FIXTURES))
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    all.sort();
    assert_eq!(all.len(), 28, "{all:?}");
    let mut pinned: Vec<String> = IMPORT_AS_THEY_ARE
        .iter()
        .chain(MERGE_SET.iter())
        .chain(["tutorial/example4.json"].iter())
        .map(|s| (*s).to_owned())
        .collect();
    pinned.sort();
    assert_eq!(all, pinned);

    let mut jobs: Vec<Vec<String>> = IMPORT_AS_THEY_ARE
        .iter()
        .map(|f| vec![fixture(f)])
        .collect();
    jobs.push(MERGE_SET.iter().map(|f| fixture(f)).collect());
    for (i, files) in jobs.iter().enumerate() {
        let mut args = vec!["import", "rt-app"];
        args.extend(files.iter().map(String::as_str));
        let o = hybrid_sim(&args);
        assert!(o.status.success(), "{files:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stdout).starts_with("{\n  \"version\": 2,"),
            "{files:?}"
        );
        let out = scratch(&format!("example-{i}.json"));
        args.extend(["--duration", "2", "-o", out.to_str().unwrap()]);
        let o = hybrid_sim(&args);
        assert!(o.status.success(), "{files:?}: {}", text(&o.stderr));
        let o = hybrid_sim(&["replay", out.to_str().unwrap(), "--json"]);
        assert!(o.status.success(), "{files:?}: {}", text(&o.stderr));
        let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let cpu_ns: u64 = reports[0]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["ran_performance_ns"].as_u64().unwrap() + t["ran_efficiency_ns"].as_u64().unwrap()
            })
            .sum();
        assert!(cpu_ns > 0, "{files:?}: nothing ran");
    }
    // The merge set is one workload of four threads from five seconds of global.json.
    let mut args = vec!["import", "rt-app"];
    let merge: Vec<String> = MERGE_SET.iter().map(|f| fixture(f)).collect();
    args.extend(merge.iter().map(String::as_str));
    let o = hybrid_sim(&args);
    let trace: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(trace["duration_ns"], 5_000_000_000u64);
    assert_eq!(trace["tasks"].as_array().unwrap().len(), 4);

    let e4 = fixture("tutorial/example4.json");
    let o = hybrid_sim(&["import", "rt-app", &e4]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("tutorial/example4.json: tasks.thread0: loops forever")
            && text(&o.stderr).contains("--duration"),
        "{}",
        text(&o.stderr)
    );
    let o = hybrid_sim(&["import", "rt-app", &e4, "--duration", "2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// mp3-long.json: 600 s of a 300 us thread, two million rounds folded into loops, replays
/// whole.
#[test]
fn mp3_long_replays_its_ten_minutes() {
    let out = scratch("mp3-long.json");
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        &fixture("mp3-long.json"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = hybrid_sim(&["replay", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(reports[0]["summary"]["makespan_ns"], 600_000_000_000u64);
}

/// mp3-short.json: the resume chain AudioTick -> AudioOut -> AudioTrack -> mp3.decoder and
/// the decoder's signal/wait with OMXCall stay a chain: each thread waits for its waker (the
/// trace names it) and blocks between wake-ups instead of running for the whole 6 s.
#[test]
fn mp3_shorts_resume_chain_blocks() {
    let out = scratch("mp3-short.json");
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        &fixture("mp3-short.json"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        !err.contains("suspend") && !err.contains("resume") && !err.contains("signal"),
        "{err}"
    );
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let phases = |name: &str| {
        let t = trace["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        t["phases"][0]["loop"]["phases"].clone()
    };
    // The waker is recorded on both sides of each link.
    let waits = |name: &str, waker: &str| {
        phases(name)
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["wait_for"] == serde_json::json!([waker]))
    };
    let wakes = |name: &str, woken: &str| {
        phases(name)
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["wake_if_waiting"] == woken)
    };
    for (waker, woken) in [
        ("AudioTick", "AudioOut"),
        ("AudioOut", "AudioTrack"),
        ("AudioTrack", "mp3.decoder"),
        ("mp3.decoder", "OMXCall"),
        ("OMXCall", "mp3.decoder"),
    ] {
        assert!(waits(woken, waker), "{woken} waits for {waker}");
        assert!(wakes(waker, woken), "{waker} wakes {woken}");
    }
    let o = hybrid_sim(&["replay", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ran = |name: &str| {
        let t = reports[0]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        t["ran_performance_ns"].as_u64().unwrap() + t["ran_efficiency_ns"].as_u64().unwrap()
    };
    // AudioTick resumes AudioOut every 30 ms (one resume, then four 6 ms timers); AudioOut
    // runs 5 ms a round: about 1 s of its 6 s, where a thread that never blocked ran 6 s.
    // (rt-app loses the resume at 0 s: AudioOut is still running then.)
    let out_ns = ran("AudioOut");
    assert!(
        (900_000_000..=1_100_000_000).contains(&out_ns),
        "AudioOut ran {out_ns} ns"
    );
    // Each link down the chain runs once per wake-up of its waker: 300 us per AudioOut round.
    let track_ns = ran("AudioTrack");
    assert!(
        (50_000_000..=70_000_000).contains(&track_ns),
        "AudioTrack ran {track_ns} ns"
    );
    assert!(
        ran("OMXCall") < 100_000_000,
        "OMXCall ran {}",
        ran("OMXCall")
    );
}

/// tutorial/example9.json: the forked thread runs, the forking one runs its count.
#[test]
fn example9s_forked_thread_runs() {
    let o = hybrid_sim(&["replay", &fixture("tutorial/example9.json"), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tasks = reports[0]["tasks"].as_array().unwrap();
    let ran = |name: &str| {
        let t = tasks
            .iter()
            .find(|t| t["name"].as_str().unwrap().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {tasks:?}"));
        (
            t["ran_performance_ns"].as_u64().unwrap() + t["ran_efficiency_ns"].as_u64().unwrap(),
            t["start_ns"].as_u64().unwrap(),
            t["finish_ns"].as_u64(),
        )
    };
    // thread2 (instance 0) only exists forked, 20 ms in, and runs.
    let (cpu, start, _) = ran("thread2-forked1");
    assert!(cpu > 0 && start == 20_000_000, "{cpu} {start}");
    // thread1 runs twice: its own instance and the forked one.
    assert!(ran("thread1-forked1").0 > 0);
    assert!(ran("thread1").0 > 0);
    // thread3 (loop 1) runs both phases once: 30 ms of work, 60 ms with its sleeps.
    let (cpu, _, finish) = ran("thread3");
    assert_eq!(cpu, 30_000_000);
    assert!(finish.is_some_and(|f| f >= 60_000_000), "{finish:?}");
    let err = text(&o.stderr);
    assert!(err.contains("task \"thread2\": fork approximated"), "{err}");
}
