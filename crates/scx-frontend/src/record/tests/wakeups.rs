//! Wake-ups in a recording: which become the trace's relations (a wait and a wake) and which
//! stay sleeps, the slack around a waker's run, and the wake-up buffer's cap.

use super::*;

/// The wake-ups by the producer become the trace's relation: the consumer's sleeps wait for
/// it (whatever their recorded length), and its run holds a `wake` where each happened;
/// the interrupt's wake-up stays a sleep of its recorded length.
#[test]
fn a_wakeup_by_a_running_task_is_a_wait_and_a_wake_in_the_trace() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    producer_and_consumer(&mut r);
    r.stop_and_read(60 * MS, &Counters::default(), &nothing_running);
    let cfg = r.cfg.clone();
    r.clone().write(&topo).unwrap();
    let text = std::fs::read_to_string(&cfg.trace).unwrap();
    let trace = Trace::from_json_str(&text, "rec.json").unwrap();
    trace.validate_for(&topo, "rec.json").unwrap();
    assert_eq!(trace.version, 2);
    let task = |name: &str| &trace.tasks.iter().find(|t| t.name == name).unwrap().phases;
    assert_eq!(
        *task("prod-10"),
        [
            Phase::RunNs(5 * MS),
            Phase::Wake("cons-20".into()),
            Phase::RunNs(10 * MS),
            Phase::Wake("cons-20".into()),
            Phase::RunNs(5 * MS),
        ]
    );
    // On the 640 E-core: 4 ms is 2.5 ms of work, 2 ms 1.25 ms, 1 ms 0.625 ms.
    let waits = || Phase::WaitFor(vec!["prod-10".into()]);
    assert_eq!(
        *task("cons-20"),
        [
            Phase::RunNs(2_500_000),
            waits(),
            Phase::RunNs(1_250_000),
            waits(),
            Phase::RunNs(625_000),
            Phase::SleepNs(5 * MS),
            Phase::RunNs(625_000),
        ]
    );
    let (_, _, relations) = r.built(&topo).unwrap();
    assert_eq!(relations, 2);
}

/// A wake-up is a relation only where the events show the waker running and the woken
/// task asleep: one by a task that never ran in the recording, or by one whose run had
/// ended, or one before the sleep began (it woke an earlier sleep, or none), leaves the
/// sleep as recorded; the scheduler's own threads and interrupts are not kept at all.
#[test]
fn a_wakeup_the_events_do_not_place_leaves_the_sleep_as_recorded() {
    let topo = machine();
    let (_dir, cfg) = config(100);
    let mut r = Recorder::new(cfg, 0, Counters::default(), vec![99]);
    r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons");
    r.observe(ev(10, 28, -1, true, (0, 0), 0), b"prod");
    // The producer runs 28 to 30 ms only.
    r.observe(ev(10, 30, 4, false, (28, 30), 2), b"prod");
    // Woken at 33 ms by the producer (3 ms after its run), at 40 ms by pid 77 (never ran)
    // and at 44 ms by the scheduler's own thread; and at 22 ms by the producer, before the
    // consumer's sleep began at 24 ms.
    assert!(!r.woken(33 * MS, 20, 10));
    assert!(!r.woken(22 * MS, 20, 10));
    r.observe(ev(20, 34, 1, true, (20, 24), 0), b"cons");
    assert!(!r.woken(40 * MS, 20, 77));
    r.observe(ev(20, 41, 1, true, (34, 36), 0), b"cons");
    assert!(!r.woken(44 * MS, 20, 99));
    assert!(!r.woken(45 * MS, 20, 20));
    r.observe(ev(20, 46, 1, true, (41, 42), 0), b"cons");
    r.observe(ev(20, 50, 1, true, (46, 47), 0), b"cons");
    assert_eq!(
        r.wakes.len(),
        3,
        "the own thread's and the self wake-up are not kept"
    );
    r.stop_and_read(60 * MS, &Counters::default(), &nothing_running);
    let (trace, _, relations) = r.built(&topo).unwrap();
    assert_eq!(relations, 0);
    let cons = &trace.tasks.iter().find(|t| t.name == "cons-20").unwrap();
    assert!(
        cons.phases
            .iter()
            .all(|p| matches!(p, Phase::RunNs(_) | Phase::SleepNs(_))),
        "{:?}",
        cons.phases
    );
    // The sleeps end where the loop saw the task: 24 to 34, 36 to 41, 42 to 46 ms.
    let sleeps: Vec<u64> = cons
        .phases
        .iter()
        .filter_map(|p| match p {
            Phase::SleepNs(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(sleeps, [10 * MS, 5 * MS, 4 * MS]);
}

/// Kernel times are converted with the smallest stop-to-dequeue gap, which holds the
/// loop's latency (40 us here): a waker's run starts that much late in the loop's clock.
/// A wake-up 10 us into the run is moved to just inside it; one 200 us before the run,
/// beyond [`WAKE_SLACK_NS`], is no relation.
#[test]
fn a_wakeup_within_the_slack_of_the_wakers_run_is_moved_into_it() {
    const US: u64 = 1_000;
    const LATENCY: u64 = 40 * US;
    let topo = machine();
    for (woken_at, related) in [(28 * MS + 10 * US, true), (28 * MS - 200 * US, false)] {
        let (_dir, cfg) = config(100);
        let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
        // Kernel time of a loop-clock moment: behind by the skew.
        let k = |ns: u64| ns - SKEW;
        let event = |pid, at, cpu, wakeup, run: (u64, u64), exec| Event {
            at_ns: at,
            start_ts: if run.0 == 0 { 0 } else { k(run.0) },
            stop_ts: if run.1 == 0 { 0 } else { k(run.1) },
            exec_runtime: exec,
            pid,
            cpu,
            wakeup,
        };
        r.observe(event(20, 20 * MS, -1, true, (0, 0), 0), b"cons");
        r.observe(event(10, 27 * MS, -1, true, (0, 0), 0), b"prod");
        // The consumer slept at 24 ms; its wake-up is seen 5 ms after the waking.
        r.woken(woken_at, 20, 10);
        r.observe(
            event(20, woken_at + 5 * MS, 1, true, (20 * MS, 24 * MS), 0),
            b"cons",
        );
        // The producer ran 28 to 38 ms; the loop saw it LATENCY after.
        r.observe(
            event(10, 38 * MS + LATENCY, 4, false, (28 * MS, 38 * MS), 10 * MS),
            b"prod",
        );
        r.observe(event(20, 45 * MS, 1, true, (40 * MS, 41 * MS), 0), b"cons");
        assert_eq!(clock_offset(&r.events), i128::from(SKEW + LATENCY));
        r.stop_and_read(50 * MS, &Counters::default(), &nothing_running);
        let (trace, _, relations) = r.built(&topo).unwrap();
        assert_eq!(relations, u64::from(related), "woken at {woken_at}");
        let prod = &trace.tasks.iter().find(|t| t.name == "prod-10").unwrap();
        if related {
            // At the run's start as converted, plus the nanosecond that puts it inside.
            assert_eq!(prod.phases[0], Phase::RunNs(1));
            assert_eq!(prod.phases[1], Phase::Wake("cons-20".into()));
        } else {
            assert_eq!(prod.phases, [Phase::RunNs(10 * MS)]);
        }
    }
}

/// Wake-ups have a buffer of their own, as large as the events': when it is full the
/// recording stops as at a full event buffer.
#[test]
fn a_full_wakeup_buffer_stops_the_recording() {
    let (_dir, cfg) = config(2);
    let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
    assert!(!r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons"));
    assert!(!r.woken(21 * MS, 20, 10));
    assert!(r.woken(22 * MS, 20, 10));
    // An event for a new task finds the recording full too.
    assert!(r.observe(ev(21, 23, -1, true, (0, 0), 0), b"other"));
    r.stop_and_read(24 * MS, &Counters::default(), &nothing_running);
    assert!(!r.woken(23 * MS, 20, 10));
    assert_eq!(r.wakes.len(), 2);
    assert!(r.stopped.as_ref().unwrap().capped);
}
