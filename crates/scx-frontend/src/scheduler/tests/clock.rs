//! The loop's clock: every time handed to the core is on the framework's clock, the clock of
//! the task timestamps it reports.

use super::*;

/// A scheduler (room for 256 tasks) whose framework's clock runs `ahead_ns` ahead of
/// `CLOCK_MONOTONIC` (`None`: unreadable, so the loop keeps `CLOCK_MONOTONIC`), read when the
/// scheduler starts.
fn on_clock(ahead_ns: Option<i64>, helper: Option<Nudger>) -> Scheduler<FakeOps> {
    let topo = machine();
    let mut ops = FakeOps::new(&topo, 64);
    ops.clock_ahead_ns = ahead_ns;
    let cfg = LoopConfig {
        max_tasks: 256,
        ..config(Mode::Policy, SliceMode::Scaled)
    };
    Scheduler::new(ops, topo.clone(), hybridland(&topo), cfg, None, helper).unwrap()
}

/// The core's estimate of a task woken right after a 10 ms run on P-CPU 4, stamped by the
/// framework's clock, which runs `ahead_ns` ahead of `CLOCK_MONOTONIC` (`None`: the fake's
/// timestamps are on `CLOCK_MONOTONIC`).
fn util_after_wakeup(ahead_ns: Option<i64>) -> u16 {
    let mut s = on_clock(ahead_ns, None);
    let kernel_now = s
        .ops
        .kernel_clock()
        .unwrap_or_else(|| now_ns().saturating_add_signed(ahead_ns.unwrap_or(0)));
    let mut woken = wakeup(1);
    woken.cpu = 4;
    woken.start_ts = kernel_now - 10_000_000;
    woken.stop_ts = kernel_now;
    woken.exec_runtime = 10_000_000;
    s.ops.incoming.push_back(Ok(woken));
    s.schedule_batch().unwrap();
    assert_eq!(s.ops.ring.len(), 1, "placed");
    s.core.task(TaskId(1)).unwrap().util()
}

/// 10 ms of 32 ms half-life at capacity 1024 is about 200, and the wake-up comes microseconds
/// later. On `CLOCK_MONOTONIC` a second ahead of the framework's clock, the wake-up would
/// decay the estimate over a second, to 0 (and no later run would count: each would seem to
/// end before the estimate's time); a second behind, it would decay nothing.
#[test]
fn the_core_sees_the_frameworks_clock() {
    for ahead_ns in [None, Some(0), Some(-1_000_000_000), Some(1_000_000_000)] {
        let util = util_after_wakeup(ahead_ns);
        assert!(
            (190..=205).contains(&util),
            "ahead {ahead_ns:?}: util {util}"
        );
    }
}

/// The helper's timer runs on `CLOCK_MONOTONIC`: the loop arms it at the core's next time
/// translated back, so with the framework's clock a second ahead it fires then, not a second
/// late.
#[test]
fn the_timer_is_armed_on_the_monotonic_clock() {
    let mut s = on_clock(Some(1_000_000_000), Some(Nudger::spawn().unwrap()));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    // The first scan is due at once; its tick sets the next time, which the next round arms.
    let now = s.now();
    s.tick(now).unwrap();
    s.schedule_batch().unwrap();
    let at = s.core.poll_timeout().map(TimeNs::ns).unwrap();
    assert!(at > now, "the next scan {at} after {now}");
    let armed = s.nudger.as_ref().unwrap().armed().unwrap();
    let off = at.abs_diff(armed);
    assert!(
        off.abs_diff(1_000_000_000) < 1_000_000,
        "{at} armed at {armed}"
    );
    s.nudger.take().unwrap().close_and_join();
}
