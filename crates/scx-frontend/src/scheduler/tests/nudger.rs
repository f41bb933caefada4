//! The nudge helper and the core's timer.

use super::*;
use core::time::Duration;
use hybridland_policy::Nudging;
use std::time::Instant;

/// A scheduler over the test machine with `helper` as its nudge helper, in `mode`, with the
/// up-migration scan on or off (`--no-up-scan`).
fn with_helper_scan(
    ring_cap: usize,
    mode: Mode,
    helper: Nudger,
    up_scan: bool,
) -> Scheduler<FakeOps> {
    let topo = machine();
    Scheduler::new(
        FakeOps::new(&topo, ring_cap),
        topo.clone(),
        hybridland(&topo),
        LoopConfig {
            up_scan,
            ..config(mode, SliceMode::Scaled)
        },
        None,
        Some(helper),
    )
    .unwrap()
}

/// A scheduler over the test machine with `helper` as its nudge helper, in `mode`.
fn with_helper(ring_cap: usize, mode: Mode, helper: Nudger) -> Scheduler<FakeOps> {
    with_helper_scan(ring_cap, mode, helper, true)
}

/// A task placed on an E-core while the P-cores were busy, then the P-cores idle and the
/// core's timer falls due: the scheduler after that tick, with the task's E-core.
fn left_on_an_e_core(up_scan: bool) -> (Scheduler<FakeOps>, i32) {
    let topo = machine();
    let mut s = with_helper_scan(64, Mode::Policy, Nudger::spawn().unwrap(), up_scan);
    let e_cores: CpuSet = (0..4).map(CpuId).collect();
    s.ops.snapshots.push_back(Ok(e_cores));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    let on = s.ops.ring[0].cpu;
    assert!((0..4).contains(&on), "on an E-core: {on}");
    // The P-cores idle; the task still runs on its E-core.
    let mut idle = *topo.cpus();
    idle.remove(CpuId(u16::try_from(on).unwrap()));
    s.ops.snapshots.push_back(Ok(idle));
    let now = now_ns();
    if up_scan {
        assert!(s.core.poll_timeout().is_some_and(|at| at.ns() <= now));
    }
    s.tick(now).unwrap();
    (s, on)
}

/// A task left on an E-core while the P-cores were busy: once a P-core idles, the core's
/// timer gives a nudge, the loop wakes the helper, and the core sends the helper to that
/// E-core with the helper's short slice.
#[test]
fn a_nudge_wakes_the_helper_and_the_core_sends_it_to_the_cpu() {
    let (mut s, on) = left_on_an_e_core(true);
    assert_eq!(s.counters().nudges, 1);
    let tid = s.nudger.as_ref().unwrap().tid;
    s.ops.incoming.push_back(Ok(wakeup(tid)));
    s.schedule_batch().unwrap();
    let sent = s.ops.ring.last().unwrap();
    assert_eq!((sent.pid, sent.cpu), (tid, on));
    assert_eq!(sent.slice_ns, CoreConfig::DEFAULT.helper_slice_ns);
    s.nudger.take().unwrap().close_and_join();
}

/// `--no-up-scan`: the same task stays on its E-core, and the helper is never sent.
#[test]
fn without_the_scan_the_task_left_on_an_e_core_is_not_nudged() {
    let (mut s, _) = left_on_an_e_core(false);
    assert_eq!(s.core.config().nudging, Nudging::Off);
    assert_eq!(s.counters().nudges, 0);
    let sent = s.ops.ring.len();
    s.schedule_batch().unwrap();
    assert_eq!(s.ops.ring.len(), sent, "nothing sent");
    s.nudger.take().unwrap().close_and_join();
}

#[test]
fn no_nudge_helper_in_fifo_mode_and_its_pipe_closes() {
    let mut n = Nudger::spawn().unwrap();
    n.wake();
    let s = with_helper(8, Mode::Fifo, n);
    assert!(s.nudger.is_none());
    assert_eq!(s.core.config().nudging, Nudging::Off, "no helper, no scan");
    let s = with_helper(8, Mode::Policy, Nudger::spawn().unwrap());
    assert_ne!(s.core.config().nudging, Nudging::Off);
    // Closing the pipe ends the helper thread (join returns).
    let mut s = s;
    s.nudger.take().unwrap().close_and_join();
}

/// The core's timer wakes the helper at the time it is armed at, once; a disarmed timer (or
/// one moved later) does not wake it.
#[test]
fn the_timer_wakes_the_helper_once_at_its_time_and_not_once_disarmed() {
    let mut n = Nudger::spawn().unwrap();
    n.arm(Some(now_ns() + 5_000_000)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while n.timer_wakes() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(n.timer_wakes(), 1);
    // Moved later, then disarmed before that: no second wake.
    n.arm(Some(now_ns() + 30_000_000)).unwrap();
    n.arm(None).unwrap();
    assert_eq!(n.armed(), None);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(n.timer_wakes(), 1);
    // A time already past fires at once.
    n.arm(Some(1)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while n.timer_wakes() == 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(n.timer_wakes(), 2);
    n.close_and_join();
}

/// The loop arms the helper's timer at the core's next time before it sleeps at the end of a
/// round: none before anything is placed, the scan's time once a task is, a new time after
/// the tick.
#[test]
fn each_round_arms_the_timer_at_the_cores_next_time() {
    let mut s = with_helper(64, Mode::Policy, Nudger::spawn().unwrap());
    s.schedule_batch().unwrap();
    assert_eq!(s.nudger.as_ref().unwrap().armed(), None);
    s.ops.snapshots.push_back(Ok(s.ops.all));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    let first = s.core.poll_timeout().map(TimeNs::ns);
    assert!(first.is_some());
    assert_eq!(s.nudger.as_ref().unwrap().armed(), first);
    // The task still runs where it was placed: the tick's snapshot shows its CPU busy.
    let mut idle = s.ops.all;
    idle.remove(CpuId(u16::try_from(s.ops.ring[0].cpu).unwrap()));
    s.ops.snapshots.push_back(Ok(idle));
    s.tick(first.unwrap()).unwrap();
    s.schedule_batch().unwrap();
    let next = s.core.poll_timeout().map(TimeNs::ns);
    assert!(next > first, "{next:?} after {first:?}");
    assert_eq!(s.nudger.as_ref().unwrap().armed(), next);
    s.nudger.take().unwrap().close_and_join();
}

/// A task placed on the loop's own CPU that has gone to sleep by the tick leaves no scan
/// behind: at the tick the loop runs there, so that CPU shows busy in the snapshot, but only
/// the loop runs on it. Read as the task still running, the scan stayed due every 20 ms and
/// the timer woke the loop 50 times a second on an idle machine (the helper woke on that CPU,
/// the loop ran there and placed the helper there again).
#[test]
fn a_task_gone_from_the_loops_cpu_leaves_no_scan_behind() {
    let mut s = with_helper(64, Mode::Policy, Nudger::spawn().unwrap());
    let own = CpuId(5);
    s.ops.own = Some(own);
    // Nothing else is free: the task takes the loop's CPU, which the loop yields after.
    s.ops.snapshots.push_back(Ok(CpuSet::EMPTY));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    assert_eq!(s.ops.ring[0].cpu, i32::from(own.0));
    let scan = s.core.poll_timeout().map(TimeNs::ns).unwrap();
    // By the tick the task sleeps; the machine idles but for the loop, on its CPU.
    let mut idle = s.ops.all;
    idle.remove(own);
    s.ops.snapshots.push_back(Ok(idle));
    s.tick(scan).unwrap();
    let next = s.core.poll_timeout().map(TimeNs::ns).unwrap();
    assert!(
        next >= scan + 1_000_000_000,
        "the scan is due again {} ms after the tick",
        (next - scan) / 1_000_000
    );
    s.nudger.take().unwrap().close_and_join();
}
