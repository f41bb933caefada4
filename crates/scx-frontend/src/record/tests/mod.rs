//! The recorder's tests: what the loop's calls make of a recording (here: runs, the caps and
//! the clock, and any sequence of calls), the wake-ups kept as relations (`wakeups`), and the
//! files: the raw recording read back and the files refused (`files`).

mod files;
mod wakeups;

use super::*;
use hybridland_policy::CpuId;
use hybridland_trace::format::Phase;
use hybridland_trace::recording::{MAX_RELATIONS, clock_offset};
use tempfile::TempDir;

const MS: u64 = 1_000_000;
/// The kernel clock runs this far behind the loop's in these tests.
const SKEW: u64 = 7 * MS;

fn machine() -> Topology {
    crate::test_machines::vm()
}

/// A recording of at most `max_events` events into a scratch directory of its own, which the
/// caller holds for as long as the files are used.
fn config(max_events: usize) -> (TempDir, RecordConfig) {
    let dir = crate::safe_file::testing::scratch();
    let trace = dir.path().join("rec.json");
    let cfg = RecordConfig {
        live: RecordConfig::live_path(&trace, None),
        trace,
        max_events,
        max_tasks: 16,
        policy: "hybridland".into(),
        policy_seed: 0,
        settings: vec!["cluster_balance=auto".into()],
        machine_source: "test".into(),
    };
    (dir, cfg)
}

/// A dequeue at loop time `at` (ms) of a task whose last run was `run` (kernel ms).
fn ev(pid: i32, at: u64, cpu: i16, wakeup: bool, run: (u64, u64), exec: u64) -> Event {
    let k = |ms: u64| if ms == 0 { 0 } else { ms * MS - SKEW };
    Event {
        at_ns: at * MS,
        start_ts: k(run.0),
        stop_ts: k(run.1),
        exec_runtime: exec * MS,
        pid,
        cpu,
        wakeup,
    }
}

fn nothing_running(_: i32) -> Option<(char, i32)> {
    Some(('S', 0))
}

/// A task woken at 10 ms that runs 10 ms on E-core 1, is preempted, runs 8 ms on P-core
/// 4 and sleeps until 40 ms; then runs 5 ms on P-core 4 and sleeps again.
fn periodic(r: &mut Recorder) {
    r.observe(ev(50, 10, -1, true, (0, 0), 0), b"worker");
    r.observe(ev(50, 20, 1, false, (10, 20), 10), b"worker");
    r.observe(ev(50, 40, 4, true, (21, 29), 0), b"worker");
    r.observe(ev(50, 60, 4, true, (41, 46), 0), b"worker");
}

/// A producer on P-core 4 (28 to 48 ms) wakes a consumer on E-core 1 twice (33 and 43 ms,
/// the event source's waker); an interrupt wakes it a third time (no waker reported).
fn producer_and_consumer(r: &mut Recorder) {
    r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons");
    r.observe(ev(10, 28, -1, true, (0, 0), 0), b"prod");
    assert!(!r.woken(33 * MS, 20, 10));
    r.observe(ev(20, 34, 1, true, (20, 24), 0), b"cons");
    assert!(!r.woken(43 * MS, 20, 10));
    r.observe(ev(20, 44, 1, true, (34, 36), 0), b"cons");
    // Back at a slice end right where its run stopped: the clock offset is the skew.
    r.observe(ev(10, 48, 4, false, (28, 48), 20), b"prod");
    r.observe(ev(20, 50, 1, true, (44, 45), 0), b"cons");
    r.observe(ev(20, 55, 1, true, (50, 51), 0), b"cons");
}

#[test]
fn runs_become_reference_work_by_capacity_and_the_files_read_back() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), vec![99]);
    periodic(&mut r);
    // The scheduler's own thread is not recorded.
    r.observe(ev(99, 30, 6, true, (25, 29), 0), b"hl-nudge");
    r.decision(50, Some(Step::IdleECore), false, false);
    r.decision(50, Some(Step::IdlePCore), false, false);
    r.decision(50, Some(Step::IdlePCore), true, false);
    r.decision(99, Some(Step::IdlePCore), false, false);
    // The kernel's fast path kept 5 wake-ups on idle P-cores and 2 on E-cores meanwhile.
    let at_stop = Counters {
        fast: [0, 5, 2, 0, 0],
        ..Counters::default()
    };
    r.stop_and_read(70 * MS, &at_stop, &nothing_running);
    let cfg = r.cfg.clone();
    r.clone().write(&topo).unwrap();
    let text = std::fs::read_to_string(&cfg.trace).unwrap();
    let trace = Trace::from_json_str(&text, "rec.json").unwrap();
    trace.validate_for(&topo, "rec.json").unwrap();
    assert_eq!(trace.tasks.len(), 1);
    let t = &trace.tasks[0];
    assert_eq!(t.name, "worker-50");
    assert_eq!(t.start_ns, 10 * MS);
    // 10 ms on a 640 E-core is 6.25 ms of reference work, plus 8 ms on the P-core; the
    // sleeps run from each run's stop to the dequeue of the wake-up.
    assert_eq!(
        t.phases,
        [
            Phase::RunNs(6_250_000 + 8 * MS),
            Phase::SleepNs(11 * MS),
            Phase::RunNs(5 * MS),
        ]
    );
    assert_eq!(trace.duration_ns, Some(70 * MS));
    let live =
        LiveStats::from_json_str(&std::fs::read_to_string(&cfg.live).unwrap(), "live").unwrap();
    assert_eq!(live.window_ns, 70 * MS);
    assert_eq!(live.tasks, 1);
    assert_eq!(live.events, 4);
    assert!(!live.capped);
    let busy: Vec<(&str, u64)> = live
        .kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.busy_ns))
        .collect();
    assert_eq!(busy, [("performance", 13 * MS), ("efficiency", 10 * MS)]);
    let cluster = live.clusters.iter().find(|c| c.cpus == "1,3").unwrap();
    assert_eq!(
        (cluster.kind.as_str(), cluster.busy_ns),
        ("efficiency", 10 * MS)
    );
    assert_eq!(live.migrations, 1);
    let steps: Vec<(u64, u64)> = live.steps.iter().map(|s| (s.count, s.overflow)).collect();
    assert_eq!(steps, [(0, 0), (7, 1), (3, 0), (0, 0), (0, 0)]);
    assert_eq!(live.settings, ["cluster_balance=auto"]);
}

#[test]
fn the_cap_stops_recording_and_the_window_ends_there() {
    let topo = machine();
    let (_dir, cfg) = config(3);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    assert!(!r.observe(ev(50, 10, -1, true, (0, 0), 0), b"worker"));
    assert!(!r.observe(ev(50, 20, 1, false, (10, 20), 10), b"worker"));
    assert!(r.observe(ev(50, 40, 4, true, (21, 29), 0), b"worker"));
    r.stop_and_read(41 * MS, &Counters::default(), &nothing_running);
    assert!(!r.recording());
    // Later events and decisions are not recorded.
    assert!(!r.observe(ev(50, 60, 4, true, (41, 46), 0), b"worker"));
    r.decision(50, Some(Step::IdlePCore), false, false);
    let (trace, live) = r.build(&topo).unwrap();
    assert_eq!(r.events.len(), 3);
    assert!(live.capped);
    assert_eq!(live.events, 3);
    assert_eq!(live.window_ns, 41 * MS);
    assert_eq!(trace.duration_ns, Some(41 * MS));
    assert_eq!(live.steps.iter().map(|s| s.count).sum::<u64>(), 0);
    Trace::from_json_str(&trace.to_json_string(), "capped").unwrap();
}

#[test]
fn the_task_cap_stops_recording_and_known_tasks_fill_no_room() {
    let (_dir, mut cfg) = config(100);
    cfg.max_tasks = 2;
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    assert!(!r.observe(ev(1, 10, -1, true, (0, 0), 0), b"a"));
    assert!(!r.observe(ev(2, 11, -1, true, (0, 0), 0), b"b"));
    // Tasks it holds are still recorded; a third is not, and says the recording is full.
    assert!(!r.observe(ev(1, 20, 1, false, (10, 20), 10), b"a"));
    assert!(r.observe(ev(3, 21, -1, true, (0, 0), 0), b"c"));
    r.stop_and_read(22 * MS, &Counters::default(), &nothing_running);
    let (_, live) = r.build(&machine()).unwrap();
    assert_eq!((r.events.len(), r.tasks.len()), (3, 2));
    assert!(live.capped);
}

#[test]
fn an_exited_task_is_no_tail_and_ends_where_it_exited() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    assert!(!r.observe(ev(7, 10, -1, true, (0, 0), 0), b"short"));
    assert!(!r.observe(ev(7, 20, 1, false, (10, 20), 10), b"short"));
    r.exited(7, 25 * MS);
    // /proc says running: its pid is another task's by now, so no tail is added.
    r.stop_and_read(40 * MS, &Counters::default(), &|_| Some(('R', 1)));
    let (trace, _) = r.build(&topo).unwrap();
    assert_eq!(trace.tasks.len(), 1);
    let stopped = r.stopped.as_ref().unwrap();
    assert!(stopped.tails.is_empty());
}

#[test]
fn a_task_running_when_recording_stops_ran_from_its_last_dispatch() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    // A spinner woken at 5 ms, never back: the framework kept refilling its slice.
    r.observe(ev(60, 5, -1, true, (0, 0), 0), b"spin");
    periodic(&mut r);
    let running = |pid: i32| (pid == 60).then_some(('R', 6));
    r.stop_and_read(105 * MS, &Counters::default(), &running);
    let (trace, live) = r.build(&topo).unwrap();
    let spin = trace.tasks.iter().find(|t| t.name == "spin-60").unwrap();
    assert_eq!(spin.phases, [Phase::RunNs(100 * MS)]);
    assert_eq!(spin.start_ns, 5 * MS);
    assert_eq!(live.kinds[0].busy_ns, 113 * MS);
}

#[test]
fn a_restricted_task_keeps_its_cpus_and_an_unrestricted_one_none() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    periodic(&mut r);
    let pinned: CpuSet = [CpuId(1), CpuId(4)].into_iter().collect();
    r.allowed(50, &pinned, true);
    let (trace, _) = r.build(&topo).unwrap();
    assert_eq!(trace.tasks[0].allowed_cpus.as_deref(), Some("1,4"));
    r.allowed(50, topo.cpus(), false);
    let (trace, _) = r.build(&topo).unwrap();
    assert_eq!(trace.tasks[0].allowed_cpus, None);
}

#[test]
fn the_clock_offset_is_the_smallest_stop_to_dequeue_gap() {
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    periodic(&mut r);
    // The slice end dequeued at 20 ms right after its run stopped at 20 ms: the gap is the
    // skew alone; every wake-up's gap also holds a sleep.
    assert_eq!(clock_offset(&r.events), i128::from(SKEW));
}

/// `--max-tasks` above what a recording keeps (the default among them) records
/// [`MAX_TASKS`] tasks; below it, as many as the loop keeps.
#[test]
fn a_recording_keeps_at_most_max_tasks_tasks() {
    let default = crate::scheduler::DEFAULT_MAX_TASKS;
    assert_eq!(RecordConfig::tasks_for(default), MAX_TASKS);
    assert_eq!(RecordConfig::tasks_for(1_048_576), MAX_TASKS);
    assert_eq!(RecordConfig::tasks_for(64), 64);
}

/// The process's heap is scx_rustland_core's 64 MiB arena (its allocator is this
/// binary's, tests included): the largest recording, every event a wake-up by a task that
/// fits a relation, among as many tasks as a recording keeps, each with a name of the
/// kernel's longest, builds and writes within it beside 2 MiB held elsewhere (the live
/// process still holds its logging, the stats server and the topology), keeping
/// [`MAX_RELATIONS`] relations (keeping them all, it ran out). It needs the arena to
/// itself: tests running beside it take their share, so scripts/test.sh runs it alone.
#[test]
#[ignore = "needs the arena to itself: scripts/test.sh runs it alone"]
fn the_largest_recording_of_relations_is_written_within_the_arena() {
    const US: u64 = 1_000;
    const LARGEST: usize = MAX_MAX_EVENTS;
    // The ring and the first task fill the recording's task table.
    const RING: u64 = MAX_TASKS as u64 - 1;
    let elsewhere = vec![1u8; 2 << 20];
    let topo = machine();
    let (_dir, mut cfg) = config(LARGEST);
    cfg.max_tasks = MAX_TASKS;
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    // RING tasks in a ring, 10 us apart: each runs 5 us, sleeps, and is woken by the
    // next one, in that one's run. One slice end seen as it ended sets the clock offset.
    r.observe(ev(99, 9, 0, false, (8, 9), 1), b"first");
    for i in 0..LARGEST as u64 - 1 {
        let pid = 100 + (i % RING) as i32;
        let at = 10 * MS + i * 10 * US;
        r.observe(
            Event {
                at_ns: at,
                start_ts: at - 30 * US - SKEW,
                stop_ts: at - 25 * US - SKEW,
                exec_runtime: 5 * US,
                pid,
                cpu: (i % 8) as i16,
                wakeup: true,
            },
            b"fifteen-chars-x",
        );
        r.woken(at - 18 * US, pid, 100 + ((i + 1) % RING) as i32);
    }
    assert_eq!(r.events.len(), LARGEST);
    r.stop_and_read(3 * 1_000 * MS, &Counters::default(), &nothing_running);
    let cfg = r.cfg.clone();
    r.write(&topo).unwrap();
    let text = std::fs::read_to_string(&cfg.trace).unwrap();
    let trace = Trace::from_json_str(&text, "largest").unwrap();
    let waits = trace
        .tasks
        .iter()
        .flat_map(|t| &t.phases)
        .filter(|p| matches!(p, Phase::WaitFor(_)))
        .count();
    assert_eq!(waits, MAX_RELATIONS);
    assert_eq!(elsewhere.len(), 2 << 20);
}

/// One call the loop makes into the recorder, as the property below draws them.
#[derive(Clone, Debug)]
enum Call {
    Observe(Event),
    Woken { at_ns: u64, pid: i32, waker: i32 },
    Exited { pid: i32, at_ns: u64 },
    Allowed { pid: i32, lo: u8, len: u8 },
}

fn arb_call() -> impl proptest::strategy::Strategy<Value = Call> {
    use proptest::prelude::*;
    // Few pids and CPUs past the machine's 8, times near each other or anywhere: the loop's
    // clock and the kernel's disagree, events arrive late, runs are reported twice.
    let pid = 1i32..12;
    let time = prop_oneof![0u64..200 * MS, any::<u64>()];
    prop_oneof![
        6 => (time.clone(), time.clone(), time.clone(), 0u64..300 * MS, pid.clone(), -1i16..10, any::<bool>())
            .prop_map(|(at_ns, start_ts, stop_ts, exec_runtime, pid, cpu, wakeup)| {
                Call::Observe(Event { at_ns, start_ts, stop_ts, exec_runtime, pid, cpu, wakeup })
            }),
        2 => (time.clone(), pid.clone(), pid.clone())
            .prop_map(|(at_ns, pid, waker)| Call::Woken { at_ns, pid, waker }),
        1 => (pid.clone(), time).prop_map(|(pid, at_ns)| Call::Exited { pid, at_ns }),
        1 => (pid, any::<u8>(), any::<u8>()).prop_map(|(pid, lo, len)| Call::Allowed { pid, lo, len }),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// The recorder's path from what the loop saw to a trace, on any sequence of calls:
    /// a trace the simulator accepts for this machine, of tasks that were observed, or a
    /// typed error; never a panic.
    #[test]
    fn any_sequence_of_loop_calls_gives_a_valid_trace_or_an_error(
        calls in proptest::collection::vec(arb_call(), 0..120),
        stop_at in 0u64..400 * MS,
        max_events in 1usize..80,
    ) {
        let topo = machine();
        let (_dir, cfg) = config(max_events);
        let mut r = Recorder::new(cfg, 0, Counters::default(), vec![11]);
        let mut observed = std::collections::BTreeSet::new();
        for call in calls {
            match call {
                Call::Observe(ev) => {
                    if r.observe(ev, b"t") {
                        r.stop_and_read(ev.at_ns, &Counters::default(), &nothing_running);
                    }
                    observed.insert(ev.pid);
                }
                Call::Woken { at_ns, pid, waker } => {
                    let _ = r.woken(at_ns, pid, waker);
                }
                Call::Exited { pid, at_ns } => r.exited(pid, at_ns),
                Call::Allowed { pid, lo, len } => {
                    let cpus: CpuSet = (lo..lo.saturating_add(len % 9))
                        .map(|c| CpuId(u16::from(c)))
                        .collect();
                    r.allowed(pid, &cpus, len % 9 < 8);
                }
            }
        }
        r.stop_and_read(stop_at, &Counters::default(), &|pid| Some((if pid % 2 == 0 { 'R' } else { 'S' }, pid % 10)));
        if let Ok((trace, live)) = r.build(&topo) {
            let text = serde_json::to_string(&trace).unwrap();
            let back = Trace::from_json_str(&text, "prop.json").unwrap();
            back.validate_for(&topo, "prop.json").unwrap();
            for t in &trace.tasks {
                let pid: i32 = t.name.rsplit('-').next().unwrap().parse().unwrap();
                proptest::prop_assert!(observed.contains(&pid) && pid != 11, "{}", t.name);
            }
            proptest::prop_assert_eq!(live.tasks, trace.tasks.len() as u64);
        }
    }
}
