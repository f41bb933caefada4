//! The recording's files: the raw recording read back into the same trace, the VM's recording
//! with its wake chains, and links and FIFOs planted where root writes.

use super::*;

/// A recording read back from what [`Recorder::write_raw`] wrote, stopped where it was, with
/// the scratch directory its configuration points into.
fn from_raw(text: &str) -> (TempDir, Recorder) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    let events = v["events"].as_array().unwrap();
    let wakes = v["wakes"].as_array().unwrap();
    let (dir, mut cfg) = config(events.len().max(wakes.len()) + 1);
    cfg.max_tasks = v["tasks"].as_array().unwrap().len() + 1;
    let mut r = Recorder::new(cfg, n(&v["start_ns"]), Counters::default(), Vec::new());
    let names: HashMap<i64, String> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_i64().unwrap(), t[1].as_str().unwrap().to_owned()))
        .collect();
    for e in events {
        let pid = e[4].as_i64().unwrap();
        let ev = Event {
            at_ns: n(&e[0]),
            start_ts: n(&e[1]),
            stop_ts: n(&e[2]),
            exec_runtime: n(&e[3]),
            pid: pid as i32,
            cpu: e[5].as_i64().unwrap() as i16,
            wakeup: e[6].as_bool().unwrap(),
        };
        r.observe(ev, names[&pid].as_bytes());
    }
    for w in wakes {
        let pid = |i: usize| w[i].as_i64().unwrap() as i32;
        r.woken(n(&w[0]), pid(1), pid(2));
    }
    for t in v["tasks"].as_array().unwrap() {
        if let Some(at) = t[2].as_u64() {
            r.exited(t[0].as_i64().unwrap() as i32, at);
        }
    }
    r.stop(n(&v["stop_ns"]), &Counters::default());
    let tails = v["tails"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| Tail {
            pid: t[0].as_i64().unwrap() as i32,
            cpu: t[1].as_u64().unwrap() as u16,
            from_ns: n(&t[2]),
        })
        .collect();
    r.set_tails(tails);
    (dir, r)
}

/// The raw recording reads back into the same trace.
#[test]
fn the_raw_recording_reads_back_into_the_same_trace() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    producer_and_consumer(&mut r);
    r.exited(10, 58 * MS);
    let running = |pid: i32| (pid == 20).then_some(('R', 1));
    r.stop_and_read(60 * MS, &Counters::default(), &running);
    let mut raw = Vec::new();
    r.write_raw(&mut raw).unwrap();
    let (_again_dir, again) = from_raw(core::str::from_utf8(&raw).unwrap());
    let (trace, _) = r.build(&topo).unwrap();
    let (read, _) = again.build(&topo).unwrap();
    assert_eq!(read.tasks, trace.tasks);
    assert_eq!(read.duration_ns, trace.duration_ns);
}

/// A recording made in the project's VM (`src/testdata/README.md`: hackbench's senders
/// waking its receivers through sockets): the trace keeps the 467 relations the scheduler
/// wrote there, each `wait_for` answered by a `wake` of the task it names, and the
/// hackbench tasks' waits by other hackbench tasks.
#[test]
fn the_vm_recording_keeps_its_wake_chains() {
    let topo = machine();
    let (_dir, r) = from_raw(include_str!("../../testdata/vm-hackbench.raw.json"));
    assert_eq!((r.events.len(), r.wakes.len()), (983, 732));
    let (trace, _, relations) = r.clone().built(&topo).unwrap();
    trace.validate_for(&topo, "vm").unwrap();
    assert_eq!(relations, 467);
    // Per (waker, woken): as many wakes as waits.
    let mut links: HashMap<(String, String), (u32, u32)> = HashMap::new();
    for t in &trace.tasks {
        for p in &t.phases {
            match p {
                Phase::WaitFor(w) => {
                    links.entry((w[0].clone(), t.name.clone())).or_default().1 += 1
                }
                Phase::Wake(w) => links.entry((t.name.clone(), w.clone())).or_default().0 += 1,
                _ => {}
            }
        }
    }
    assert_eq!(links.values().map(|l| u64::from(l.1)).sum::<u64>(), 467);
    assert!(
        links.values().all(|(wakes, waits)| wakes == waits),
        "{links:?}"
    );
    let hackbench = links
        .iter()
        .filter(|((w, t), _)| w.starts_with("hackbench-") && t.starts_with("hackbench-"))
        .map(|(_, l)| l.1)
        .sum::<u32>();
    assert!(
        hackbench > 400,
        "{hackbench} of the relations between hackbench tasks"
    );
}

/// Root writes both files: a link or FIFO planted at either is refused, left as it is, and
/// never written through.
#[test]
fn planted_links_and_fifos_at_the_trace_or_live_file_are_refused() {
    use crate::safe_file::testing::*;
    let topo = machine();
    let recording = || {
        let (dir, cfg) = config(100);
        let mut r = Recorder::new(cfg, 0, Counters::default(), vec![]);
        periodic(&mut r);
        r.stop_and_read(70 * MS, &Counters::default(), &nothing_running);
        (dir, r)
    };
    for which in ["trace", "live"] {
        let (_link_dir, r) = recording();
        let target = if which == "trace" {
            &r.cfg.trace
        } else {
            &r.cfg.live
        };
        let victim = target.with_file_name("victim");
        plant_link(target, &victim);
        let e = format!("{:#}", r.clone().write(&topo).unwrap_err());
        assert!(e.contains("it is a symbolic link"), "{which}: {e}");
        assert_link_untouched(target, &victim);

        let (_fifo_dir, r) = recording();
        let target = if which == "trace" {
            &r.cfg.trace
        } else {
            &r.cfg.live
        };
        plant_fifo(target);
        let e = format!("{:#}", r.clone().write(&topo).unwrap_err());
        assert!(e.contains("it is a FIFO"), "{which}: {e}");
        assert_fifo_untouched(target);
    }
}

/// The decision log is root's too: the same refusal, with the link's target and the FIFO
/// left as they were.
#[test]
fn planted_links_and_fifos_at_the_decision_log_are_refused() {
    use crate::safe_file::testing::*;
    use hybridland_trace::decisions::{self, CoreSettings, DecisionLog, Header};
    let log = DecisionLog::new(Header {
        format: decisions::FORMAT.to_owned(),
        version: decisions::VERSION,
        machine: String::new(),
        policy: "hybridland".to_owned(),
        seed: 0,
        knobs: hybridland_policy::PolicyConfig::default(),
        policy_knobs: Default::default(),
        core: CoreSettings::from(&hybridland_policy::CoreConfig::DEFAULT),
        max_tasks: 64,
        helper: None,
        max_bytes: 1 << 10,
        truncated: false,
    });
    let dir = scratch();
    let target = dir.path().join("run.decisions.jsonl");
    let victim = dir.path().join("victim");
    plant_link(&target, &victim);
    let e = format!("{:#}", write_decisions(&target, &log).unwrap_err());
    assert!(e.contains("it is a symbolic link"), "{e}");
    assert_link_untouched(&target, &victim);
    std::fs::remove_file(&target).unwrap();
    plant_fifo(&target);
    let e = format!("{:#}", write_decisions(&target, &log).unwrap_err());
    assert!(e.contains("it is a FIFO"), "{e}");
    assert_fifo_untouched(&target);
    // And a plain file there is replaced by the log.
    std::fs::remove_file(&target).unwrap();
    std::fs::write(&target, "old\n").unwrap();
    write_decisions(&target, &log).unwrap();
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains(decisions::FORMAT)
    );
}
