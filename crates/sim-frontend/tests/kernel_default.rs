//! `kernel-default`, step by step on hand-built machines: each step of the kernel's wake-up
//! path (`select_task_rq_fair`, `select_idle_sibling`), the fork path and the two slice-end
//! moves, each in a state where it and only it decides; then the policy in replays.

mod util;

use hybridland_policy::{CoreKind, CpuId, CpuSet, CpuState, Topology, TopologyBuilder};
use hybridland_sim::baselines::{
    KernelStep, Wakeup, fits, misfit_target, select_fork, select_wakeup, smt_balance_target,
    wake_affine,
};
use hybridland_sim::{Trace, policy_by_name};
use util::replay_on;

fn cpus(ids: &[u16]) -> Vec<CpuId> {
    ids.iter().map(|c| CpuId(*c)).collect()
}

/// CPUs 0-3: two P-cores with SMT ({0,1}, {2,3}), capacity 1024; CPUs 4-7: four E-cores in
/// one cluster, capacity 512; one LLC.
fn hybrid() -> Topology {
    let mut b = TopologyBuilder::new();
    for c in 0..8u16 {
        let (kind, cap) = if c < 4 {
            (CoreKind::Performance, 1024)
        } else {
            (CoreKind::Efficiency, 512)
        };
        b.add_cpu(CpuId(c), kind, cap, 0).unwrap();
    }
    b.add_core(&cpus(&[0, 1])).unwrap();
    b.add_core(&cpus(&[2, 3])).unwrap();
    b.add_cluster(&cpus(&[4, 5, 6, 7])).unwrap();
    b.build().unwrap()
}

/// CPUs 0-3 in LLC 0, 4-7 in LLC 1, no SMT, all capacity 1024.
fn two_llcs() -> Topology {
    let mut b = TopologyBuilder::new();
    for c in 0..8u16 {
        b.add_cpu(CpuId(c), CoreKind::Performance, 1024, 0).unwrap();
    }
    b.add_llc(&cpus(&[0, 1, 2, 3])).unwrap();
    b.add_llc(&cpus(&[4, 5, 6, 7])).unwrap();
    b.build().unwrap()
}

/// Every CPU idle except `busy`.
fn state(topo: &Topology, busy: &[u16]) -> CpuState {
    let mut s = CpuState::all_idle(topo);
    for c in busy {
        s.occupy(topo, CpuId(*c));
    }
    s
}

fn wake(topo: &Topology, busy: &[u16], w: Wakeup<'_>) -> (CpuId, KernelStep) {
    select_wakeup(topo, &state(topo, busy), &w)
}

fn wakeup(allowed: &CpuSet, prev: u16) -> Wakeup<'_> {
    Wakeup {
        allowed,
        prev: CpuId(prev),
        waker: None,
        recent: None,
        util: 100,
        asym: false,
    }
}

#[test]
fn an_idle_previous_cpu_is_taken_first() {
    let t = hybrid();
    let all = *t.cpus();
    // Whole idle cores elsewhere do not matter: the previous CPU is idle.
    assert_eq!(
        wake(&t, &[1], wakeup(&all, 0)),
        (CpuId(0), KernelStep::PrevCpu)
    );
    // Not allowed any more: the path goes on.
    let mut not0 = all;
    not0.remove(CpuId(0));
    assert_ne!(wake(&t, &[1], wakeup(&not0, 0)).0, CpuId(0));
}

#[test]
fn wake_affine_takes_an_idle_waker_cpu_in_the_same_llc() {
    let t = two_llcs();
    let all = *t.cpus();
    // Previous CPU busy, waker idle and cache-affine: the waker's CPU.
    let w = Wakeup {
        waker: Some(CpuId(2)),
        ..wakeup(&all, 0)
    };
    assert_eq!(wake(&t, &[0], w), (CpuId(2), KernelStep::WakerCpu));
    assert_eq!(
        wake_affine(&t, &state(&t, &[0]), CpuId(2), CpuId(0)),
        CpuId(2)
    );
    // Previous CPU idle too: it stays the target.
    assert_eq!(
        wake_affine(&t, &state(&t, &[]), CpuId(2), CpuId(0)),
        CpuId(0)
    );
    // WokenBy in the other LLC: no affine move; the scan stays in the previous CPU's LLC.
    let w = Wakeup {
        waker: Some(CpuId(5)),
        ..wakeup(&all, 0)
    };
    assert_eq!(
        wake_affine(&t, &state(&t, &[0]), CpuId(5), CpuId(0)),
        CpuId(0)
    );
    assert_eq!(wake(&t, &[0], w), (CpuId(1), KernelStep::IdleCpu));
    // WokenBy busy: the previous CPU's LLC again.
    let w = Wakeup {
        waker: Some(CpuId(2)),
        ..wakeup(&all, 0)
    };
    assert_eq!(wake(&t, &[0, 2], w), (CpuId(1), KernelStep::IdleCpu));
    // A waker the task may not run on is ignored.
    let mut not2 = all;
    not2.remove(CpuId(2));
    let w = Wakeup {
        waker: Some(CpuId(2)),
        ..wakeup(&not2, 0)
    };
    assert_eq!(wake(&t, &[0], w), (CpuId(1), KernelStep::IdleCpu));
}

#[test]
fn a_busy_waker_leaves_the_previous_cpu_the_target() {
    let t = two_llcs();
    let all = *t.cpus();
    let w = Wakeup {
        waker: Some(CpuId(2)),
        ..wakeup(&all, 1)
    };
    assert_eq!(wake(&t, &[2], w), (CpuId(1), KernelStep::PrevCpu));
}

#[test]
fn the_recently_used_cpu_comes_before_the_scan() {
    let t = two_llcs();
    let all = *t.cpus();
    let w = Wakeup {
        recent: Some(CpuId(3)),
        ..wakeup(&all, 0)
    };
    // CPUs 1 and 3 idle: the scan from 1 would give 1; the recent CPU 3 wins.
    assert_eq!(wake(&t, &[0, 2], w), (CpuId(3), KernelStep::RecentCpu));
    // A recent CPU in another LLC is not cache-affine: the scan.
    let w = Wakeup {
        recent: Some(CpuId(6)),
        ..wakeup(&all, 0)
    };
    assert_eq!(wake(&t, &[0, 2], w), (CpuId(1), KernelStep::IdleCpu));
}

#[test]
fn a_whole_idle_core_beats_an_idle_sibling() {
    let t = hybrid();
    let all = *t.cpus();
    // Prev 0 busy, its sibling 1 idle, core {2,3} idle: the scan from 1 finds core 2.
    assert_eq!(
        wake(&t, &[0, 4, 5, 6, 7], wakeup(&all, 0)),
        (CpuId(2), KernelStep::IdleCore)
    );
    // E-cores are whole cores too: with both P-cores half busy, E-core 4 (the first from 1).
    assert_eq!(
        wake(&t, &[0, 2], wakeup(&all, 0)),
        (CpuId(4), KernelStep::IdleCore)
    );
    // The scan starts after the target and wraps: from 6 on, 6 is busy, 7 is idle.
    assert_eq!(
        wake(&t, &[5, 6], wakeup(&all, 5)),
        (CpuId(7), KernelStep::IdleCore)
    );
}

#[test]
fn with_no_idle_core_the_previous_cpus_sibling_comes_first() {
    let t = hybrid();
    let all = *t.cpus();
    // No whole core idle (0 and 3 busy, E-cores busy); prev 3's sibling 2 is idle, and so is
    // 1, which the scan from 4 would reach first.
    assert_eq!(
        wake(&t, &[0, 3, 4, 5, 6, 7], wakeup(&all, 3)),
        (CpuId(2), KernelStep::IdleSmtSibling)
    );
    // The sibling busy too: the scan's first idle CPU.
    assert_eq!(
        wake(&t, &[0, 2, 3, 4, 5, 6, 7], wakeup(&all, 3)),
        (CpuId(1), KernelStep::IdleCpu)
    );
}

#[test]
fn the_scan_stays_in_the_llc_and_otherwise_queues_on_the_target() {
    let t = two_llcs();
    let all = *t.cpus();
    // LLC 0 full, LLC 1 idle: nothing found in the previous CPU's LLC.
    assert_eq!(
        wake(&t, &[0, 1, 2, 3], wakeup(&all, 2)),
        (CpuId(2), KernelStep::Busy)
    );
}

#[test]
fn asymmetric_capacity_takes_the_first_idle_cpu_the_task_fits() {
    let t = hybrid();
    let all = *t.cpus();
    let big = |prev| Wakeup {
        util: 600,
        asym: true,
        ..wakeup(&all, prev)
    };
    assert!(!fits(600, 512) && fits(600, 1024) && fits(400, 512));
    // Prev 4 is idle but too small: from 4 on, the first idle CPU it fits is 0.
    assert_eq!(wake(&t, &[], big(4)), (CpuId(0), KernelStep::IdleCapacity));
    // SMT plays no part: 1 (sibling of busy 0) before the whole idle core 2.
    assert_eq!(wake(&t, &[0], big(0)), (CpuId(1), KernelStep::IdleCapacity));
    // No CPU it fits is idle: the idle CPU of most capacity.
    let huge = Wakeup {
        util: 1000,
        asym: true,
        ..wakeup(&all, 4)
    };
    assert_eq!(
        wake(&t, &[0, 1, 2, 3, 4], huge),
        (CpuId(5), KernelStep::IdleCapacity)
    );
    // A small task fits the E-core it ran on.
    let small = Wakeup {
        util: 100,
        asym: true,
        ..wakeup(&all, 4)
    };
    assert_eq!(wake(&t, &[], small), (CpuId(4), KernelStep::PrevCpu));
    // Nothing idle at all: busy.
    assert_eq!(
        wake(&t, &[0, 1, 2, 3, 4, 5, 6, 7], big(4)).1,
        KernelStep::Busy
    );
    // The symmetric path puts the big task back on its idle E-core.
    assert_eq!(
        wake(&t, &[], wakeup(&all, 4)),
        (CpuId(4), KernelStep::PrevCpu)
    );
}

#[test]
fn fork_takes_the_core_with_most_idle_cpus_beside_the_busy_parent() {
    let t = hybrid();
    let all = *t.cpus();
    // Parent on E-core 5: E-cores have one idle CPU each, P-cores two: P-core {0,1}.
    assert_eq!(
        select_fork(&t, &state(&t, &[]), &all, CpuId(5)),
        Some(CpuId(0))
    );
    // Parent on 0: its core has one idle CPU left (1), core {2,3} has two: 2.
    assert_eq!(
        select_fork(&t, &state(&t, &[]), &all, CpuId(0)),
        Some(CpuId(2))
    );
    // Every core at one idle CPU: the parent's core wins the tie.
    assert_eq!(
        select_fork(&t, &state(&t, &[2]), &all, CpuId(0)),
        Some(CpuId(1))
    );
    // Parent on E-core 6, P-cores half busy: ties from the parent on, 7 first.
    assert_eq!(
        select_fork(&t, &state(&t, &[0, 2]), &all, CpuId(6)),
        Some(CpuId(7))
    );
    // Only the parent's CPU is idle and allowed: it.
    let only6: CpuSet = [CpuId(6)].into_iter().collect();
    assert_eq!(
        select_fork(&t, &state(&t, &[]), &only6, CpuId(6)),
        Some(CpuId(6))
    );
    assert_eq!(select_fork(&t, &state(&t, &[6]), &only6, CpuId(6)), None);
}

#[test]
fn misfit_and_smt_balance_at_a_slice_end() {
    let t = hybrid();
    let all = *t.cpus();
    // 450 does not fit 512 (80% is 409): to the idle P-CPU of most capacity, lowest id.
    assert_eq!(
        misfit_target(&t, &state(&t, &[4]), &all, CpuId(4), 450),
        Some(CpuId(0))
    );
    assert_eq!(
        misfit_target(&t, &state(&t, &[4]), &all, CpuId(4), 300),
        None
    );
    assert_eq!(
        misfit_target(&t, &state(&t, &[0, 1, 2, 3, 4]), &all, CpuId(4), 450),
        None
    );
    // Sharing core {0,1}: to the first whole idle core, an E-core if symmetric.
    let s = state(&t, &[0, 1, 2]);
    assert_eq!(
        smt_balance_target(&t, &s, &all, CpuId(0), false),
        Some(CpuId(4))
    );
    // With asymmetric capacity not to a smaller core.
    assert_eq!(smt_balance_target(&t, &s, &all, CpuId(0), true), None);
    assert_eq!(
        smt_balance_target(&t, &state(&t, &[0, 1]), &all, CpuId(0), true),
        Some(CpuId(2))
    );
    // Alone on its core: stays.
    assert_eq!(
        smt_balance_target(&t, &state(&t, &[0]), &all, CpuId(0), false),
        None
    );
}

#[test]
fn replays_place_on_idle_cpus_and_answer_to_the_asym_knob() {
    let machine = hybridland_sim::presets::lookup("tc2").unwrap();
    let lone = Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "lone", "phases": [{"run_ns": 2090000000}]}]}"#,
        "lone.json",
    )
    .unwrap();
    let (mut fast_off, mut moved_on) = (0, 0);
    for seed in 0..20 {
        // Symmetric: the CPU the fork gave it, for its whole life.
        let off = replay_on(
            &machine,
            &lone,
            "kernel-default",
            &["kernel_asym_capacity=off"],
            Some(seed),
        );
        assert_eq!(off.summary.migrations, 0, "seed {seed}");
        if off.tasks[0].ran_efficiency_ns == 0 {
            fast_off += 1;
        }
        // Asymmetric: a start on an A7 is undone by the misfit move within a few slices.
        let on = replay_on(&machine, &lone, "kernel-default", &[], Some(seed));
        assert!(on.summary.makespan_ns < 2_200_000_000, "seed {seed}");
        if on.summary.migrations > 0 {
            moved_on += 1;
        }
    }
    assert!(fast_off > 0 && fast_off < 20, "{fast_off} of 20 fast");
    assert_eq!(moved_on, 20 - fast_off, "every slow start moved");
    assert!(
        policy_by_name(
            "kernel-default:kernel_asym_capacity=maybe",
            &Default::default()
        )
        .is_err()
    );
}
