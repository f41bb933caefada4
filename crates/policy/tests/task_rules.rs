//! The per-task rules under the shared invariants: up-migration, slice ends, vtime credit,
//! slice sizing and the utilisation estimator, on generated machines, states and tasks.

use hybridland_policy::testkit::rules;
use hybridland_policy::testkit::{self, arb_scenario};
use hybridland_policy::{
    CoreKind, CpuId, CpuSet, CpuState, Policy, PolicyConfig, Run, SliceEnd, Step, TaskHints,
    TaskState, UtilEstimate, VtimeClock, slice_ns,
};
use proptest::prelude::*;

const CASES: u32 = 1000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// A running task (on the scenario's previous CPU, made busy) moves only to a strictly
    /// better CPU, is never left behind one, and the move invites no way back.
    #[test]
    fn up_migration(s in arb_scenario()) {
        let topo = &s.topology;
        let policy = s.policy();
        let Some(cpu) = s.prev_cpu else { return Ok(()) };
        let mut state = s.state();
        state.occupy(topo, cpu);
        let task = s.task();
        let answer = rules::up_migration(&policy, topo, &state, cpu, &task);
        testkit::check_up_migration(topo, &policy, &state, cpu, &task, answer)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
        testkit::check_no_ping_pong(topo, &policy, &state, cpu, &task)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    /// Slice ends, contended and not (both on each case: a second strategy beside a
    /// 31 KB scenario overflows a debug test thread's stack).
    #[test]
    fn slice_end(s in arb_scenario()) {
        let topo = &s.topology;
        let policy = s.policy();
        let mut state = s.state();
        if let Some(cpu) = s.prev_cpu {
            state.occupy(topo, cpu);
        }
        let task = s.task();
        for contended in [false, true] {
            let answer = rules::slice_end(&policy, topo, &state, &task, contended);
            testkit::check_slice_end(topo, &policy, &state, &task, contended, answer)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
        }
    }

    /// Queueing keeps at most one slice of credit, whatever the history.
    #[test]
    fn vtime_credit(runs in proptest::collection::vec((0u64..20_000_000, 1u32..10_000), 0..8),
                    clock in 0u64..200_000_000, slice in 1u64..20_000_000) {
        let mut task = TaskState::new();
        let mut at = 0;
        for (len, weight) in runs {
            let _ = task.on_run(&Run { cpu: CpuId(0), capacity: 1024, start_ns: at, stop_ns: at + len, weight });
            at += len + 1;
        }
        let mut c = VtimeClock::new();
        c.on_start(clock);
        let before = task;
        let key = c.queue(&mut task, slice);
        testkit::check_vtime_queue(c.now(), slice, &before, key, &task)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    /// Slices stay within their limits.
    #[test]
    fn slices(base in 0u64..100_000_000, waiting in 0u64..10_000) {
        testkit::check_slice(base, waiting, slice_ns(base, waiting))
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    /// The estimator settles on duty cycle x capacity, from an idle or a busy history.
    #[test]
    fn util_converges(run in 20_000u64..4_000_000, sleep_frac in 0u64..=100, capacity in 1u16..=1024,
                      busy in any::<bool>()) {
        let period = UtilEstimate::HALF_LIFE_NS / 8;
        let run = run.min(period);
        let sleep = (period - run) * sleep_frac / 100;
        testkit::check_util_converges(run, sleep, capacity, busy)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }
}

/// The stuck lone task: it started on an E-core while every P-core was busy; when a P-core
/// idles, its next slice end moves it there, and from there it stays.
#[test]
fn a_lone_task_stuck_on_an_e_core_goes_back_to_a_p_core() {
    let topo = testkit::machine(
        &[
            testkit::CoreGroup::new(CoreKind::Performance, 1024, 2, 2, 1),
            testkit::CoreGroup::new(CoreKind::Efficiency, 600, 4, 1, 4),
        ],
        testkit::Numbering::Consecutive,
    );
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let all = *topo.cpus();
    let e = topo.kind_mask(CoreKind::Efficiency).first().unwrap();
    // Every P-core CPU busy with hogs, the task on an E-core.
    let p_cpus: CpuSet = *topo.kind_mask(CoreKind::Performance);
    let mut state = CpuState::from_idle(&topo, &all.and_not(&p_cpus));
    state.occupy(&topo, e);
    let task = TaskHints {
        allowed: &all,
        prev_cpu: Some(e),
        util: 600,
        sync_waker: None,
    };
    assert_eq!(
        rules::slice_end(&policy, &topo, &state, &task, false),
        SliceEnd::Keep
    );
    // The hogs leave.
    for c in p_cpus.iter() {
        state.release(&topo, c);
    }
    let SliceEnd::Move(p) = rules::slice_end(&policy, &topo, &state, &task, false) else {
        panic!("still on the E-core")
    };
    assert_eq!(p.step, Step::IdlePCore);
    let to = p.cpu.unwrap();
    state.release(&topo, e);
    state.occupy(&topo, to);
    let there = TaskHints {
        prev_cpu: Some(to),
        ..task
    };
    assert_eq!(
        rules::slice_end(&policy, &topo, &state, &there, false),
        SliceEnd::Keep
    );
}
