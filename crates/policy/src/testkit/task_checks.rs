//! Invariants of the per-task rules: up-migration, slice ends, vtime credit, slice sizing and
//! the utilisation estimator. Like the placement checks they recompute what they need with
//! plain loops over CPUs instead of calling the code under test.

use super::checks::{
    Recount, Violation, balance_active, cap, check_placement, fail, idle_candidates,
};
use crate::{
    CoreKind, CpuId, CpuState, MIN_SLICE_DIVISOR, Placement, Policy, SliceEnd, Step, TaskHints,
    TaskState, Topology, UtilEstimate,
};
use std::{format, vec::Vec};

/// 0 whole idle P-core, 1 whole idle other core, 2 a sibling busy; `cpu` itself does not count.
fn class_ignoring_self(topo: &Topology, state: &CpuState, cpu: CpuId) -> usize {
    let core = topo.info(cpu).map(|i| i.core);
    let siblings_idle = topo
        .cpus()
        .iter()
        .filter(|c| *c != cpu && topo.info(*c).map(|i| i.core) == core)
        .all(|c| state.is_idle(c));
    match (siblings_idle, topo.info(cpu).map(|i| i.kind)) {
        (false, _) => 2,
        (true, Some(CoreKind::Performance)) => 0,
        (true, _) => 1,
    }
}

/// A step's place among the idle classes above (a move follows no waker: never the waker's
/// CPU).
fn step_rank(step: Step) -> usize {
    match step {
        Step::IdlePCore => 0,
        Step::IdleECore => 1,
        Step::BusySibling => 2,
        Step::WakerCpu | Step::NoIdle => 3,
    }
}

/// Checks an up-migration answer for the task running on `cpu` (busy in `state`):
/// - a move is the idle order's own answer for the task, to a CPU other than `cpu`, and
///   strictly better: a strictly earlier step of the idle order than `cpu`'s own with at least
///   `cpu`'s capacity (any capacity when `cpu` is a busy core's sibling) and never out of a
///   primary domain `cpu` is in; or back into the primary
///   domain from outside it; or, with cluster balance active, the same step and capacity on
///   the same side of the primary domain in a cluster whose busy share with the task added is
///   below that of `cpu`'s cluster;
/// - no move is wrong when the task's pool holds such a CPU: a better class of at least
///   `cpu`'s capacity, or of any capacity for a task on a busy sibling (the stuck-task
///   cases), or the primary domain for a task outside it.
pub fn check_up_migration(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    cpu: CpuId,
    task: &TaskHints<'_>,
    answer: Option<Placement>,
) -> Result<(), Violation> {
    let own_class = class_ignoring_self(topo, state, cpu);
    let hints = TaskHints {
        prev_cpu: Some(cpu),
        sync_waker: None,
        ..*task
    };
    if let Some(p) = answer {
        check_placement(topo, policy, state, &hints, &p)?;
        let Some(to) = p.cpu else {
            return fail("up-migration", format!("a move without a CPU: {p:?}"));
        };
        let in_primary = policy.primary().contains(cpu);
        let to_primary = policy.primary().contains(to);
        // Class 2 is a busy core's sibling: any earlier class beats it, whatever the capacity.
        let up = step_rank(p.step) < own_class
            && (own_class == 2 || cap(topo, to) >= cap(topo, cpu))
            && (to_primary || !in_primary);
        let back_to_primary = !in_primary && to_primary;
        let recount = Recount::new(topo, state);
        let rebalance = step_rank(p.step) == own_class
            && cap(topo, to) == cap(topo, cpu)
            && in_primary == to_primary
            && balance_active(topo, policy, state)
            && {
                let (fb, fs) = recount.cluster_load(topo, cpu);
                let (tb, ts) = recount.cluster_load(topo, to);
                (tb + 1) * fs < fb * ts
            };
        if to == cpu || !(up || back_to_primary || rebalance) {
            return fail(
                "up-migration",
                format!(
                    "moved from cpu {cpu} (class {own_class}, capacity {}, cluster load {:?}) to cpu {to} ({}, capacity {}, cluster load {:?}): not strictly better",
                    cap(topo, cpu),
                    recount.cluster_load(topo, cpu),
                    p.step,
                    cap(topo, to),
                    recount.cluster_load(topo, to),
                ),
            );
        }
        return Ok(());
    }
    if topo.info(cpu).is_none() {
        return Ok(());
    }
    // The pool the idle order would choose from, as check_placement computes it.
    let (candidates, primary) = idle_candidates(topo, policy, state, task);
    let overflow = primary.is_empty();
    if overflow && policy.primary().contains(cpu) {
        return Ok(());
    }
    let pass = if overflow { candidates } else { primary };
    let margin = u32::from(policy.config().fit_margin_pct);
    let fitting: Vec<CpuId> = pass
        .iter()
        .copied()
        .filter(|c| u32::from(task.util) * 100 <= u32::from(cap(topo, *c)) * margin)
        .collect();
    let pool = if fitting.is_empty() { pass } else { fitting };
    let class = |c: &CpuId| {
        let core = topo.info(*c).map(|i| i.core);
        let whole = topo
            .cpus()
            .iter()
            .filter(|x| topo.info(*x).map(|i| i.core) == core)
            .all(|x| state.is_idle(x));
        match (whole, topo.info(*c).map(|i| i.kind)) {
            (false, _) => 2,
            (true, Some(CoreKind::Performance)) => 0,
            (true, _) => 1,
        }
    };
    let Some(best) = pool.iter().map(class).min() else {
        return Ok(());
    };
    let best_cap = pool
        .iter()
        .filter(|c| class(c) == best)
        .map(|c| cap(topo, *c))
        .max()
        .unwrap_or(0);
    if !policy.primary().contains(cpu) && !overflow {
        return fail(
            "up-migration",
            format!(
                "task left on cpu {cpu} outside the primary domain while a CPU of it is idle and allowed"
            ),
        );
    }
    if best < own_class && (own_class == 2 || best_cap >= cap(topo, cpu)) {
        return fail(
            "up-migration",
            format!(
                "task left on cpu {cpu} (class {own_class}, capacity {}) while an idle class-{best} CPU of capacity {best_cap} is allowed",
                cap(topo, cpu)
            ),
        );
    }
    Ok(())
}

/// Checks that following an up-migration does not invite the way back: after the task moves
/// from `cpu` to the answer's CPU (in a copy of `state`), up-migration from there never
/// names `cpu`.
pub fn check_no_ping_pong(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    cpu: CpuId,
    task: &TaskHints<'_>,
) -> Result<(), Violation> {
    let Some(to) = policy
        .up_migration(topo, state, cpu, task)
        .and_then(|p| p.cpu)
    else {
        return Ok(());
    };
    let mut after = state.clone();
    after.release(topo, cpu);
    after.occupy(topo, to);
    if let Some(back) = policy.up_migration(topo, &after, to, task)
        && back.cpu == Some(cpu)
    {
        return fail(
            "ping-pong",
            format!("cpu {cpu} -> cpu {to} -> cpu {cpu} with nothing else changed"),
        );
    }
    Ok(())
}

/// Checks a slice-end answer for the task running on `task.prev_cpu` (busy in `state`):
/// - uncontended on an allowed CPU: keep or an up-migration ([`check_up_migration`]);
/// - contended, or its CPU no longer allowed: the idle order's placement on `state`, or
///   yield only when no allowed CPU is idle.
pub fn check_slice_end(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    task: &TaskHints<'_>,
    contended: bool,
    answer: SliceEnd,
) -> Result<(), Violation> {
    // A slice end follows no waker.
    let task = &TaskHints {
        sync_waker: None,
        ..*task
    };
    let own = task
        .prev_cpu
        .filter(|c| topo.info(*c).is_some() && task.allowed.contains(*c));
    match (own, contended) {
        (Some(own), false) => match answer {
            SliceEnd::Keep => check_up_migration(topo, policy, state, own, task, None),
            SliceEnd::Move(p) => check_up_migration(topo, policy, state, own, task, Some(p)),
            SliceEnd::Yield => fail(
                "slice-end",
                format!("yielded cpu {own} although nobody waits for it"),
            ),
        },
        _ => match answer {
            SliceEnd::Keep => fail(
                "slice-end",
                format!(
                    "kept {:?} although it is contended or not allowed",
                    task.prev_cpu
                ),
            ),
            SliceEnd::Move(p) => check_placement(topo, policy, state, task, &p),
            SliceEnd::Yield => {
                match topo
                    .cpus()
                    .iter()
                    .find(|c| state.is_idle(*c) && task.allowed.contains(*c))
                {
                    Some(idle) => fail(
                        "slice-end",
                        format!("yielded while allowed cpu {idle} is idle"),
                    ),
                    None => Ok(()),
                }
            }
        },
    }
}

/// Checks one queueing with bounded credit: the key is the task's new vtime, vtime never
/// goes back, and it ends no more than `slice_ns` behind the clock (`clock_now`), raised no
/// further than that.
pub fn check_vtime_queue(
    clock_now: u64,
    slice_ns: u64,
    before: &TaskState,
    key: u64,
    after: &TaskState,
) -> Result<(), Violation> {
    let floor = clock_now.saturating_sub(slice_ns);
    let want = before.vtime().max(floor);
    if key != after.vtime() || after.vtime() != want {
        return fail(
            "vtime-credit",
            format!(
                "vtime {} queued with key {key} became {} (clock {clock_now}, slice {slice_ns}): expected {want}",
                before.vtime(),
                after.vtime()
            ),
        );
    }
    Ok(())
}

/// Checks a slice against its limits: the base when at most one task waits, never above the
/// base, never below `base / MIN_SLICE_DIVISOR`, and no longer than the base's share per
/// waiting task above that floor, so all waiting tasks get a turn within about one base slice.
pub fn check_slice(base_ns: u64, nr_waiting: u64, slice_ns: u64) -> Result<(), Violation> {
    let floor = base_ns / MIN_SLICE_DIVISOR;
    let share = (base_ns / nr_waiting.max(1)).max(floor);
    if slice_ns > share || slice_ns < floor || (nr_waiting <= 1 && slice_ns != base_ns) {
        return fail(
            "slice",
            format!(
                "slice {slice_ns} ns with base {base_ns} ns and {nr_waiting} waiting (limits {floor}..={share})"
            ),
        );
    }
    Ok(())
}

/// Largest distance, on the 0..=1024 scale, the estimator may stay from a steady pattern's
/// duty cycle times capacity: 5%.
pub const UTIL_TOLERANCE: u16 = 51;

/// Checks an estimate against the truth: a task that ran `run_ns` of every `run_ns + sleep_ns`
/// on a CPU of `capacity` for at least [`UtilEstimate::SETTLE_HALF_LIVES`] half-lives must
/// read within [`UTIL_TOLERANCE`] of `capacity * run / period`.
pub fn check_util_near(
    util: u16,
    run_ns: u64,
    sleep_ns: u64,
    capacity: u16,
) -> Result<(), Violation> {
    let period = (run_ns + sleep_ns).max(1);
    let truth = (u64::from(capacity) * run_ns / period) as u16;
    if util.abs_diff(truth) > UTIL_TOLERANCE {
        return fail(
            "util-estimate",
            format!(
                "estimate {util} for {run_ns} ns run / {sleep_ns} ns sleep on capacity {capacity}: truth {truth}"
            ),
        );
    }
    Ok(())
}

/// Drives a fresh [`TaskState`] (starting from `start_util`'s pattern: 0 = idle history,
/// otherwise that many half-lives of running flat out first) through a periodic pattern for
/// [`UtilEstimate::SETTLE_HALF_LIVES`] half-lives and checks every estimate after that, for one
/// more half-life, with [`check_util_near`]. Patterns must have a period of at most
/// `HALF_LIFE_NS / 8`.
pub fn check_util_converges(
    run_ns: u64,
    sleep_ns: u64,
    capacity: u16,
    busy_history: bool,
) -> Result<(), Violation> {
    let mut task = TaskState::new();
    let mut now = 1_000u64;
    task.on_wakeup(now);
    if busy_history {
        let end = now + 4 * UtilEstimate::HALF_LIFE_NS;
        let _ = task.on_run(&crate::Run {
            cpu: CpuId(0),
            capacity: 1024,
            start_ns: now,
            stop_ns: end,
            weight: 100,
        });
        now = end;
    }
    let settle = now + UtilEstimate::SETTLE_HALF_LIVES * UtilEstimate::HALF_LIFE_NS;
    let stop = settle + UtilEstimate::HALF_LIFE_NS;
    while now < stop {
        let _ = task.on_run(&crate::Run {
            cpu: CpuId(0),
            capacity,
            start_ns: now,
            stop_ns: now + run_ns,
            weight: 100,
        });
        if now >= settle {
            check_util_near(task.util(), run_ns, sleep_ns, capacity)?;
        }
        now += run_ns + sleep_ns;
        task.on_wakeup(now);
        if now >= settle {
            check_util_near(task.util(), run_ns, sleep_ns, capacity)?;
        }
    }
    Ok(())
}
