//! How rt-app's threads keep time and reach each other: the synchronisation events and what
//! is left unmodelled of them, timers across phases, forks, rounds folded past the trace's
//! loop limit, and `suspend`/`resume`.

use super::{err, keys, looped, ok, util};
use hybridland_sim::import::rt_app::{Treatment, summary_lines};
use hybridland_sim::presets;
use hybridland_sim::trace::{FrameSpec, LoopSpec, Phase};

#[test]
fn every_unmodelled_event_is_listed_with_task_and_phase() {
    let (t, notes) = ok(r#"{"tasks": {
        "a": {"loop": 1, "taskgroup": "/tg", "phases": {
            "p1": {"run": 10, "lock": "m", "signal": "c", "unlock": "m", "lock": "m", "unlock": "m"},
            "p2": {"barrier": "b", "sleep": 10, "mem": 4096, "iorun": 10, "yield": ""}}},
        "b": {"loop": 1, "run": 10, "suspend": "b", "resume": "a", "wait": {"ref": "c", "mutex": "m"},
              "sync": {"ref": "c", "mutex": "m"}, "broad": "c", "sem_post": "s", "sem_wait": "s",
              "memrun": {"type": "chase", "size": 4096, "count": 100}, "nodes_membind": [0]}}}"#);
    // mem and iorun as work at 10 bytes per reference ns; memrun's chase at 5 ns a step.
    // a's signal wakes b, which waits on the condition; b's resume wakes a (whose thread
    // never suspends, so it is lost at run time, as rt-app loses it) and its wait and sync
    // wait for a, the one other thread signalling "c".
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("b".into()),
            Phase::SleepNs(10_000),
            Phase::RunNs(409),
            Phase::RunNs(1)
        ]
    );
    assert_eq!(
        t.tasks[1].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("a".into()),
            Phase::WaitFor(vec!["a".into()]),
            Phase::WaitFor(vec!["a".into()]),
            Phase::RunNs(500)
        ]
    );
    let listed: Vec<String> = notes
        .iter()
        .map(|n| {
            let kind = match n.treatment {
                Treatment::Dropped(_) => "dropped",
                Treatment::Approximated(_) => "approximated",
            };
            format!(
                "{}/{}/{}/{}",
                n.task,
                n.phase.as_deref().unwrap_or("-"),
                n.feature,
                kind
            )
        })
        .collect();
    // What is left is what the relation cannot carry: b suspends but nobody resumes "b",
    // its sync's and broadcast's signals and its sem_post reach no other waiting thread, and
    // no other thread posts the semaphore it waits on.
    assert_eq!(
        listed,
        [
            "a/p1/lock/approximated",
            "a/p1/unlock/approximated",
            "a/p1/lock/approximated",
            "a/p1/unlock/approximated",
            "a/p2/barrier/approximated",
            "a/p2/mem/approximated",
            "a/p2/iorun/approximated",
            "a/p2/yield/dropped",
            "a/-/taskgroup/dropped",
            "b/-/memrun/approximated",
            "b/-/nodes_membind/dropped",
            "b/-/suspend/approximated",
            "b/-/signal/dropped",
            "b/-/broad/dropped",
            "b/-/sem_post/dropped",
            "b/-/sem_wait/approximated",
        ]
    );
    assert_eq!(notes[0].source, "t.json");
    assert!(
        notes[11]
            .to_string()
            .starts_with("task \"b\": suspend approximated (no other thread resumes \"b\""),
        "{}",
        notes[11]
    );
    // One summary line per task, each feature once, with its phases.
    let lines = summary_lines(&notes);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("t.json: task \"a\": lock approximated (never contended"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[0].matches("(never contended").count(),
        2,
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("[phases p1]"), "{}", lines[0]);
}

/// A phase loop whose time passes u128, then a fork: an error naming the task (its loops,
/// folded past the trace's repetition limit, nest too deep), not an overflow while the fork is
/// timed (a panic in a debug build).
#[test]
fn a_fork_after_a_loop_beyond_any_clock_is_an_error_not_a_panic() {
    let e = err(r#"{"tasks": {
        "a": {"loop": 2, "phases": {
            "p1": {"loop": 18446744073709551615, "run": 18446744073709551,
                   "sleep": 18446744073709551},
            "p2": {"run": 1, "fork": "b"}}},
        "b": {"instance": 0, "loop": 1, "run": 10}}}"#);
    assert!(e.starts_with("t.json: tasks[0] \"a\": "), "{e}");
}

/// rt-app's `cpufreq_governor_efficiency/dvfs.json`: a timer phase then a run phase, ten
/// rounds. rt-app's timer keeps one clock across phases: it fires at 1.2 s, 2.4 s, ... and
/// the thread ends after the tenth run, at 12.9 s (the importer gave 21.0 s when each phase
/// restarted the timer).
#[test]
fn a_timer_keeps_its_clock_across_phases() {
    let (t, notes) = ok(r#"{"tasks": {"thread": {"loop": 10, "phases": {
        "sleeping": {"loop": 1, "timer": {"ref": "tick", "period": 1200000}},
        "running": {"loop": 1, "run": 900000}}}}}"#);
    let task = &t.tasks[0];
    assert_eq!(
        task.frames,
        Some(FrameSpec {
            period_ns: 1_200_000_000,
            work_ns: 900_000_000,
            deadline_ns: None,
            count: 10
        })
    );
    // The first frame starts when the timer first fires.
    assert_eq!(task.start_ns, 1_200_000_000);
    assert!(notes.is_empty(), "{notes:?}");
    let machine = presets::lookup("i7-13800h").unwrap();
    let report = util::replay_on(&machine, &t, "hybridland", &[], None);
    // The last frame wakes the idle P-core: 2 us of interrupt and 10 us of idle exit.
    assert_eq!(report.summary.makespan_ns, 12_900_000_000 + 12_000);
    // A timer between runs is a sleep to its next firing, counted from its last one across
    // the phases: 2 ms run, timer (10 ms), 5 ms run: 8 ms sleep the first round, 3 ms after.
    let (t, _) = ok(r#"{"tasks": {"a": {"loop": 4, "phases": {
        "p": {"run": 2000, "timer": {"ref": "unique", "period": 10000}},
        "q": {"run": 5000}}}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(2_000_000),
            Phase::SleepNs(8_000_000),
            Phase::RunNs(5_000_000),
            Phase::Loop(LoopSpec {
                times: 3,
                phases: vec![
                    Phase::RunNs(2_000_000),
                    Phase::SleepNs(3_000_000),
                    Phase::RunNs(5_000_000)
                ]
            })
        ]
    );
}

/// rt-app's `tutorial/example9.json`: thread3 forks thread1 in its first phase and thread2
/// (instance 0: only ever forked) in its second, once (loop 1).
#[test]
fn a_fork_starts_the_forked_thread_where_the_fork_is() {
    let (t, notes) = ok(r#"{"global": {"duration": 2}, "tasks": {
        "thread1": {"phases": {"phase1": {"run": 10000, "sleep": 10000}}},
        "thread2": {"instance": 0, "phases": {"phase1": {"run": 20000, "sleep": 20000}}},
        "thread3": {"loop": 1, "phases": {
            "phase1": {"fork": "thread1", "run": 10000, "sleep": 10000},
            "phase2": {"fork": "thread2", "run": 20000, "sleep": 20000}}}}}"#);
    let starts: Vec<(&str, u32, u64)> = t
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.copies, t.start_ns))
        .collect();
    assert_eq!(
        starts,
        [
            ("thread1", 1, 0),
            ("thread3", 1, 0),
            ("thread1-forked1", 1, 0),
            ("thread2-forked1", 1, 20_000_000)
        ]
    );
    // thread3 runs its whole count: both phases once.
    assert_eq!(
        t.tasks[1].phases,
        [
            Phase::RunNs(10_000_000),
            Phase::SleepNs(10_000_000),
            Phase::RunNs(20_000_000),
            Phase::SleepNs(20_000_000)
        ]
    );
    // The forked thread runs: it replays with its own run time.
    let machine = presets::lookup("i7-13800h").unwrap();
    let report = util::replay_on(&machine, &t, "hybridland", &[], None);
    let forked = report
        .tasks
        .iter()
        .find(|r| r.name.starts_with("thread2-forked1"))
        .unwrap_or_else(|| panic!("{:?}", report.tasks));
    assert!(
        forked.ran_performance_ns + forked.ran_efficiency_ns > 0,
        "{forked:?}"
    );
    assert!(notes.iter().all(|n| n.feature == "fork"), "{notes:?}");
    let e = err(r#"{"tasks": {"a": {"loop": 1, "run": 1, "fork": "nobody"}}}"#);
    assert!(e.contains("forks \"nobody\", which is not a task"), "{e}");
    let e = err(r#"{"global": {"duration": 100}, "tasks": {"a": {"run": 1, "fork": "a"}}}"#);
    assert!(e.contains("more than 1024 times"), "{e}");
}

/// rt-app's `mp3-long.json` runs a 300 us thread for 600 s: two million rounds, more than a
/// trace loop holds, folded into a loop of loops.
#[test]
fn rounds_past_the_loop_limit_fold() {
    let (t, _) = ok(r#"{"global": {"duration": 600}, "tasks": {"a": {"run": 300}}}"#);
    let Phase::Loop(outer) = &t.tasks[0].phases[0] else {
        panic!("{:?}", t.tasks[0].phases)
    };
    assert_eq!(outer.times, 2);
    assert_eq!(outer.phases, looped(1_000_000, vec![Phase::RunNs(300_000)]));
}

/// rt-app's template.json: a run, a `"sleep": 0` and a timer, which is still a frame loop.
#[test]
fn a_zero_sleep_beside_a_timer_keeps_the_frame_loop() {
    let (t, notes) = ok(
        r#"{"global": {"duration": 6}, "tasks": {"thread0": {"loop": -1,
        "run": 10000, "sleep": 0, "timer": {"ref": "unique", "period": 100000}}}}"#,
    );
    assert_eq!(
        t.tasks[0].frames,
        Some(FrameSpec {
            period_ns: 100_000_000,
            work_ns: 10_000_000,
            deadline_ns: None,
            count: 60
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

/// A `suspend` waits under the thread's own name (today's rt-app) and under the name it
/// writes (rt-app before 2025, as browser-short.json expects): a `resume` of either wakes it,
/// and the second is noted. The bare shorthand waits under the thread's name alone.
#[test]
fn a_suspend_waits_for_resumes_of_its_own_and_its_written_name() {
    let (t, notes) = ok(r#"{"tasks": {
        "a": {"loop": 1, "run": 10, "resume": "grp", "resume": "c"},
        "b": {"loop": 1, "suspend": "grp", "run": 10},
        "c": {"loop": 1, "suspend", "run": 10}}}"#);
    assert_eq!(
        t.tasks[0].phases,
        [
            Phase::RunNs(10_000),
            Phase::WakeIfWaiting("b".into()),
            Phase::WakeIfWaiting("c".into())
        ]
    );
    assert_eq!(
        t.tasks[1].phases,
        [Phase::WaitFor(vec!["a".into()]), Phase::RunNs(10_000)]
    );
    assert_eq!(
        t.tasks[2].phases,
        [Phase::WaitFor(vec!["a".into()]), Phase::RunNs(10_000)]
    );
    assert_eq!(keys(&notes), ["b/-/suspend"]);
    assert!(
        notes[0].to_string().contains("resuming \"grp\" too"),
        "{}",
        notes[0]
    );
}
