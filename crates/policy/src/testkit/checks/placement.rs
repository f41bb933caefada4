//! The checks of single decisions: one placement against every rule of the idle order, a lone
//! task on an idle machine, and the same question asked twice.

use super::{Recount, Violation, balance_active, cap, fail, idle_candidates};
use crate::{CoreKind, CpuId, CpuState, Placement, Policy, Step, TaskHints, Topology};
use std::{format, string::String, vec::Vec};

/// The wake-affine rule's verdict on a placement that named a CPU, when it decides: the
/// synchronous waker's CPU is the only right answer when the rule is on, some allowed CPU is
/// idle, and that CPU is allowed, in the primary domain and fits the task (or the task fits no
/// CPU and it has the top capacity); otherwise no placement may claim the waker's step.
fn check_wake_affine(
    topo: &Topology,
    policy: &Policy,
    task: &TaskHints<'_>,
    placement: &Placement,
    any_idle: bool,
) -> Option<Result<(), Violation>> {
    let margin = u32::from(policy.config().fit_margin_pct);
    let fits = |capacity: u16| u32::from(task.util) * 100 <= u32::from(capacity) * margin;
    let top = topo.cpus().iter().map(|c| cap(topo, c)).max().unwrap_or(0);
    let due = task.sync_waker.filter(|w| {
        policy.config().wake_affine
            && any_idle
            && topo.info(*w).is_some()
            && task.allowed.contains(*w)
            && policy.primary().contains(*w)
            && (fits(cap(topo, *w)) || (!fits(top) && cap(topo, *w) == top))
    });
    match due {
        Some(w)
            if placement.cpu == Some(w)
                && placement.step == Step::WakerCpu
                && !placement.is_overflow() =>
        {
            Some(Ok(()))
        }
        Some(w) => Some(fail(
            "wake-affine",
            format!("the synchronous waker's cpu {w} qualifies but got {placement:?}"),
        )),
        None if placement.step == Step::WakerCpu => Some(fail(
            "wake-affine",
            format!(
                "labelled {} with waker {:?}, which does not qualify",
                placement.step, task.sync_waker
            ),
        )),
        None => None,
    }
}

/// Checks one decision against every rule of the idle order, recomputing the single right
/// answer from first principles:
/// - wake-affine: the synchronous waker's CPU when it qualifies (`check_wake_affine`);
/// - the CPU is allowed and idle; none is returned only when no allowed CPU is idle;
/// - no overflow while an allowed primary CPU is idle, and the overflow flag is truthful;
/// - a CPU the task's utilisation does not fit only while no fitting CPU is idle;
/// - steps are never skipped and the step label matches the CPU;
/// - within the step: the previous CPU's core (P-cores), then highest capacity, then the least
///   busy cluster when balance is active, then the previous CPU, then a CPU whose core is no
///   task's home, then rank, then lowest id.
pub fn check_placement(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    task: &TaskHints<'_>,
    placement: &Placement,
) -> Result<(), Violation> {
    let (candidates, primary) = idle_candidates(topo, policy, state, task);
    let Some(cpu) = placement.cpu else {
        if let Some(idle) = candidates.first() {
            return fail(
                "no-idle",
                format!("no CPU returned while allowed cpu {idle} is idle"),
            );
        }
        if placement.step != Step::NoIdle || placement.is_overflow() {
            return fail("no-idle", format!("no CPU but labelled {placement:?}"));
        }
        return Ok(());
    };
    if let Some(v) = check_wake_affine(topo, policy, task, placement, !candidates.is_empty()) {
        return v;
    }
    if !task.allowed.contains(cpu) {
        return fail(
            "allowed",
            format!("cpu {cpu} is not in the allowed set {}", task.allowed),
        );
    }
    if !state.is_idle(cpu) {
        return fail("idle", format!("cpu {cpu} is busy"));
    }

    let overflow = primary.is_empty();
    if placement.is_overflow() != overflow {
        return fail(
            "primary-domain",
            format!(
                "overflow flag {} but idle primary CPUs are {primary:?}",
                placement.is_overflow()
            ),
        );
    }
    let pass = if overflow { candidates } else { primary };
    if !pass.contains(&cpu) {
        return fail(
            "primary-domain",
            format!("cpu {cpu} overflowed while {pass:?} are idle"),
        );
    }

    let recount = Recount::new(topo, state);
    let margin = u32::from(policy.config().fit_margin_pct);
    let fits = |c: &CpuId| u32::from(task.util) * 100 <= u32::from(cap(topo, *c)) * margin;
    let fitting: Vec<CpuId> = pass.iter().copied().filter(fits).collect();
    let tier = if fitting.is_empty() { pass } else { fitting };
    if !tier.contains(&cpu) {
        return fail(
            "capacity-fit",
            format!(
                "util {} placed on cpu {cpu} (capacity {}) while {tier:?} fit",
                task.util,
                cap(topo, cpu)
            ),
        );
    }

    let best = tier
        .iter()
        .map(|c| recount.class(topo, *c))
        .min()
        .unwrap_or(2);
    let mine = recount.class(topo, cpu);
    let label = [Step::IdlePCore, Step::IdleECore, Step::BusySibling][mine];
    if placement.step != label {
        return fail(
            "step-label",
            format!("cpu {cpu} is a {label} but labelled {}", placement.step),
        );
    }
    let mut same: Vec<CpuId> = tier
        .iter()
        .copied()
        .filter(|c| recount.class(topo, *c) == best)
        .collect();
    if mine != best {
        return fail(
            "idle-order",
            format!("took a {label} (cpu {cpu}) while {same:?} rank higher"),
        );
    }

    let expected = if let Some(prev_core) = task
        .prev_cpu
        .and_then(|p| topo.info(p).map(|i| i.core))
        .filter(|core| {
            best == 0
                && same
                    .iter()
                    .any(|c| topo.info(*c).map(|i| i.core) == Some(*core))
        }) {
        let prev = task.prev_cpu.filter(|p| same.contains(p));
        prev.unwrap_or_else(|| {
            same.iter()
                .copied()
                .find(|c| topo.info(*c).map(|i| i.core) == Some(prev_core))
                .unwrap_or(cpu)
        })
    } else {
        let max_cap = same.iter().map(|c| cap(topo, *c)).max().unwrap_or(0);
        same.retain(|c| cap(topo, *c) == max_cap);
        if balance_active(topo, policy, state) {
            let share = |c: &CpuId| recount.cluster_load(topo, *c);
            let least = same
                .iter()
                .map(share)
                .min_by(|a, b| {
                    (u64::from(a.0) * u64::from(b.1)).cmp(&(u64::from(b.0) * u64::from(a.1)))
                })
                .unwrap_or((0, 1));
            same.retain(|c| {
                let s = share(c);
                u64::from(s.0) * u64::from(least.1) == u64::from(least.0) * u64::from(s.1)
            });
        }
        match task.prev_cpu.filter(|p| same.contains(p)) {
            Some(prev) => prev,
            None => {
                let free: Vec<CpuId> = same
                    .iter()
                    .copied()
                    .filter(|c| state.home_count(topo, *c) == 0)
                    .collect();
                if !free.is_empty() {
                    same = free;
                }
                let rank = |c: &CpuId| topo.info(*c).map_or(0, |i| i.rank);
                let max_rank = same.iter().map(rank).max().unwrap_or(0);
                same.iter()
                    .copied()
                    .find(|c| rank(c) == max_rank)
                    .unwrap_or(cpu)
            }
        }
    };
    if cpu != expected {
        return fail(
            "tie-break",
            format!(
                "chose cpu {cpu} (capacity {}, cluster load {:?}); the order gives cpu {expected} (capacity {}, cluster load {:?})",
                cap(topo, cpu),
                recount.cluster_load(topo, cpu),
                cap(topo, expected),
                recount.cluster_load(topo, expected)
            ),
        );
    }
    Ok(())
}

/// A lone task on an idle machine gets a fully idle P-core whenever the primary domain has one,
/// the fastest of them; on a domain without P-cores, the fastest CPU of the domain.
pub fn check_lone_task(topo: &Topology, policy: &Policy) -> Result<Placement, Violation> {
    let state = CpuState::all_idle(topo);
    let allowed = *topo.cpus();
    let task = TaskHints::new(&allowed);
    let p = policy.select_cpu(topo, &state, &task);
    check_placement(topo, policy, &state, &task, &p)?;
    let Some(cpu) = p.cpu else {
        return fail("lone-task", String::from("no CPU on an idle machine"));
    };
    let primary_p = policy.primary().and(topo.kind_mask(CoreKind::Performance));
    if !primary_p.is_empty() && p.step != Step::IdlePCore {
        return fail(
            "lone-task",
            format!("got {} (cpu {cpu}) while P-cores {primary_p} idle", p.step),
        );
    }
    // The idle order ranks kinds before capacities, so the best CPU is the fastest P-core when
    // the domain has one (even should firmware call a slower core "performance").
    let field = if primary_p.is_empty() {
        *policy.primary()
    } else {
        primary_p
    };
    let best = field.iter().map(|c| cap(topo, c)).max().unwrap_or(0);
    if cap(topo, cpu) != best {
        return fail(
            "lone-task",
            format!("cpu {cpu} has capacity {} < {best}", cap(topo, cpu)),
        );
    }
    Ok(p)
}

/// The same question asked twice, and of a copy of the policy and state, gets the same answer.
pub fn check_deterministic(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    task: &TaskHints<'_>,
) -> Result<Placement, Violation> {
    let a = policy.select_cpu(topo, state, task);
    let b = policy.select_cpu(topo, state, task);
    let c = policy
        .clone()
        .select_cpu(&topo.clone(), &state.clone(), task);
    if a != b || a != c {
        return fail("determinism", format!("{a:?}, then {b:?}, then {c:?}"));
    }
    Ok(a)
}
