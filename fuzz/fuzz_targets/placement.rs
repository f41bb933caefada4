//! Placement decisions on arbitrary valid machines, idle states, affinities, previous CPUs,
//! utilisations and knobs, followed by a short run of wake-ups and departures: every decision
//! is checked against the shared invariants (`testkit::check_placement`, which recomputes the
//! single right answer), every state against `testkit::check_state`, and every wake-up the
//! live fast path would keep (`Policy::fast_wake`) against the idle order's answer.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_fuzz::{CpuInput, KnobsInput, SetInput, TopologyInput, balance_mode};
use hybridland_policy::testkit::{check_deterministic, check_placement, check_state};
use hybridland_policy::{ConfigError, CpuState, Policy, Step, TaskHints, Topology, WakeQuestion};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Task {
    allowed: SetInput,
    prev: Option<CpuInput>,
    util: u16,
    /// A synchronous waker's CPU, if the wake-up is one.
    sync_waker: Option<CpuInput>,
}

#[derive(Debug, Arbitrary)]
enum Event {
    /// A wake-up; `occupy` marks the chosen CPU busy afterwards.
    Wake { task: Task, occupy: bool },
    /// A CPU goes idle.
    Release(CpuInput),
    /// A CPU becomes busy (a task the policy did not place, e.g. a kernel thread).
    Occupy(CpuInput),
    /// The runtime cluster-balance knob changes.
    SetBalance(u8),
}

#[derive(Debug, Arbitrary)]
struct Input {
    topology: TopologyInput,
    idle: SetInput,
    knobs: KnobsInput,
    first: Task,
    events: Vec<Event>,
}

fuzz_target!(|input: Input| {
    let Some(topo) = input.topology.topology() else {
        return;
    };
    let config = input.knobs.config(&topo);
    let mut policy = match Policy::new(&topo, &config) {
        Ok(p) => p,
        Err(e) => {
            // Refused only for a reason the knobs show.
            let bad_numbers = config.validate().is_err();
            let bad_domain = config.primary_domain.resolve(&topo).is_err();
            assert!(bad_numbers || bad_domain, "{e} for {config:?}");
            assert!(
                !matches!(
                    e,
                    ConfigError::AutoThresholds { .. } | ConfigError::FitMargin { .. }
                ) || bad_numbers
            );
            return;
        }
    };
    let mut state = CpuState::from_idle(&topo, &input.idle.set(&topo));
    check(&topo, &state);
    wake(&topo, &policy, &mut state, &input.first, false);
    for event in input.events.iter().take(24) {
        match event {
            Event::Wake { task, occupy } => wake(&topo, &policy, &mut state, task, *occupy),
            Event::Release(c) => {
                let cpu = c.cpu(&topo);
                let should = topo.info(cpu).is_some() && !state.is_idle(cpu);
                assert_eq!(state.release(&topo, cpu), should, "release {cpu}");
                check(&topo, &state);
            }
            Event::Occupy(c) => {
                let cpu = c.cpu(&topo);
                let should = topo.info(cpu).is_some() && state.is_idle(cpu);
                assert_eq!(state.occupy(&topo, cpu), should, "occupy {cpu}");
                check(&topo, &state);
            }
            Event::SetBalance(mode) => policy.set_cluster_balance(balance_mode(*mode)),
        }
    }
});

fn check(topo: &Topology, state: &CpuState) {
    if let Err(v) = check_state(topo, state) {
        panic!("{v}\n{topo:?}\n{state:?}");
    }
}

fn wake(topo: &Topology, policy: &Policy, state: &mut CpuState, task: &Task, occupy: bool) {
    let allowed = task.allowed.set(topo);
    let hints = TaskHints {
        allowed: &allowed,
        prev_cpu: task.prev.map(|p| p.cpu(topo)),
        util: task.util,
        sync_waker: task.sync_waker.map(|c| c.cpu(topo)),
    };
    let placement = match check_deterministic(topo, policy, state, &hints) {
        Ok(p) => p,
        Err(v) => panic!("{v}\n{topo:?}\n{state:?}"),
    };
    if let Err(v) = check_placement(topo, policy, state, &hints, &placement) {
        panic!(
            "{v}\n{topo:?}\n{state:?}\n{hints:?}\n{:?}\n{placement:?}",
            policy.config()
        );
    }
    // The live fast path's walk of the policy's tables is the idle order.
    let walked = policy.wake_table(topo).decide(&WakeQuestion {
        free: state.idle(),
        allowed: &allowed,
        prev: hints.prev_cpu,
        class: policy.class_of(topo, hints.util),
        homes: state.homes(),
        sync_waker: hints.sync_waker,
    });
    assert_eq!(
        walked, placement,
        "the fast path's walk\n{topo:?}\n{state:?}\n{hints:?}"
    );
    // The waker's CPU may be busy (its waker runs there until it sleeps).
    if occupy
        && let Some(cpu) = placement.cpu
        && placement.step != Step::WakerCpu
    {
        assert!(state.occupy(topo, cpu), "chosen cpu {cpu} was not idle");
        check(topo, state);
    }
}
