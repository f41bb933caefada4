use crate::{
    ClusterBalance, CoreKind, CpuId, CpuSet, CpuState, Placement, Policy, Step, TaskHints, Topology,
};
use std::collections::{BTreeMap, BTreeSet};
use std::{format, string::String, vec::Vec};

/// A broken rule: which one, and the facts that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Short name of the rule.
    pub rule: &'static str,
    /// What was seen.
    pub detail: String,
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}

impl core::error::Error for Violation {}

fn fail<T>(rule: &'static str, detail: String) -> Result<T, Violation> {
    Err(Violation { rule, detail })
}

fn cap(topo: &Topology, cpu: CpuId) -> u16 {
    topo.info(cpu).map_or(0, |i| i.capacity)
}

/// What the checks recount from the idle set alone, in one pass over the machine: each
/// cluster's busy and total CPUs and the cores with a busy CPU. Asked per CPU, each count
/// would be a pass of its own: on a 1,024-CPU machine a check took seconds under the fuzzers'
/// instrumentation.
pub(super) struct Recount {
    /// Busy and total CPUs by cluster id.
    clusters: BTreeMap<u16, (u32, u32)>,
    /// Cores with at least one busy CPU.
    busy_cores: BTreeSet<u16>,
}

impl Recount {
    pub(super) fn new(topo: &Topology, state: &CpuState) -> Self {
        let mut clusters = BTreeMap::new();
        let mut busy_cores = BTreeSet::new();
        for c in topo.cpus().iter() {
            let Some(info) = topo.info(c) else { continue };
            let busy = !state.is_idle(c);
            let load = clusters.entry(info.cluster).or_insert((0, 0));
            load.0 += u32::from(busy);
            load.1 += 1;
            if busy {
                busy_cores.insert(info.core);
            }
        }
        Self {
            clusters,
            busy_cores,
        }
    }

    /// Whether every SMT sibling of `cpu` is idle.
    fn whole_core_idle(&self, topo: &Topology, cpu: CpuId) -> bool {
        topo.info(cpu)
            .is_none_or(|i| !self.busy_cores.contains(&i.core))
    }

    /// Busy and total CPUs of `cpu`'s cluster.
    pub(super) fn cluster_load(&self, topo: &Topology, cpu: CpuId) -> (u32, u32) {
        topo.info(cpu)
            .and_then(|i| self.clusters.get(&i.cluster))
            .copied()
            .unwrap_or((0, 0))
    }

    /// Rank of a CPU in the idle order: 0 fully idle P-core, 1 idle E-core, 2 busy-sibling.
    fn class(&self, topo: &Topology, cpu: CpuId) -> usize {
        let kind = topo.info(cpu).map(|i| i.kind);
        match (self.whole_core_idle(topo, cpu), kind) {
            (true, Some(CoreKind::Performance)) => 0,
            (true, _) => 1,
            (false, _) => 2,
        }
    }
}

pub(super) fn balance_active(topo: &Topology, policy: &Policy, state: &CpuState) -> bool {
    let c = policy.config();
    match c.cluster_balance {
        ClusterBalance::Off => false,
        ClusterBalance::On => true,
        ClusterBalance::Auto => {
            let busy = topo.cpus().iter().filter(|x| !state.is_idle(*x)).count();
            let pct = busy * 100 / topo.nr_cpus();
            pct >= usize::from(c.auto_low_busy_pct) && pct < usize::from(c.auto_high_busy_pct)
        }
    }
}

/// Checks that the state's derived fields (whole-idle cores, cluster busy counts) agree with
/// its idle set.
pub fn check_state(topo: &Topology, state: &CpuState) -> Result<(), Violation> {
    if !state.idle().is_subset(topo.cpus()) {
        return fail(
            "state",
            format!("idle set {} has CPUs outside the machine", state.idle()),
        );
    }
    let recount = Recount::new(topo, state);
    let whole: CpuSet = state
        .idle()
        .iter()
        .filter(|c| recount.whole_core_idle(topo, *c))
        .collect();
    if whole != *state.idle_cores() {
        return fail(
            "state",
            format!("idle cores {} but expected {whole}", state.idle_cores()),
        );
    }
    for cluster in 0..topo.nr_clusters() {
        let lead = topo.cluster_cpus(cluster)[0];
        let (busy, _) = recount.cluster_load(topo, lead);
        if u32::from(state.cluster_busy(cluster)) != busy {
            return fail(
                "state",
                format!(
                    "cluster {cluster} counts {} busy, has {busy}",
                    state.cluster_busy(cluster)
                ),
            );
        }
    }
    let busy = topo.nr_cpus() - state.idle().count();
    if state.nr_busy() != busy {
        return fail(
            "state",
            format!("{} busy counted, {busy} busy", state.nr_busy()),
        );
    }
    let homes: CpuSet = topo
        .cpus()
        .iter()
        .filter(|c| state.home_count(topo, *c) > 0)
        .collect();
    if homes != *state.homes() {
        return fail(
            "state",
            format!("homes {} but counted {homes}", state.homes()),
        );
    }
    check_by_load(topo, state, &recount)
}

/// The per-share sets: when the topology has a ladder, every CPU sits in exactly one rung,
/// CPUs of one rung share one cluster busy share, and rungs ascend by share.
fn check_by_load(topo: &Topology, state: &CpuState, recount: &Recount) -> Result<(), Violation> {
    let rungs = state.by_load(topo);
    if rungs.is_empty() {
        return Ok(());
    }
    let mut seen = CpuSet::EMPTY;
    let mut last: Option<(u32, u32)> = None;
    for (r, rung) in rungs.iter().enumerate() {
        if rung.intersects(&seen) {
            return fail(
                "state",
                format!("rung {r} repeats CPUs of a lower rung: {rung}"),
            );
        }
        seen = seen.or(rung);
        let Some(first) = rung.first() else { continue };
        let share = recount.cluster_load(topo, first);
        if let Some(c) = rung.iter().find(|c| {
            let (b, n) = recount.cluster_load(topo, *c);
            b * share.1 != share.0 * n
        }) {
            return fail(
                "state",
                format!(
                    "rung {r} holds cpu {first} (cluster load {share:?}) and cpu {c} (cluster load {:?})",
                    recount.cluster_load(topo, c)
                ),
            );
        }
        if let Some(l) = last.filter(|l| l.0 * share.1 >= share.0 * l.1) {
            return fail(
                "state",
                format!("rung {r} (share {share:?}) is not above the rung before it ({l:?})"),
            );
        }
        last = Some(share);
    }
    if seen != *topo.cpus() {
        return fail(
            "state",
            format!("the rungs hold {seen}, the machine is {}", topo.cpus()),
        );
    }
    Ok(())
}

/// Checks one decision against every rule of the idle order, recomputing the single right
/// answer from first principles:
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
    let candidates: Vec<CpuId> = topo
        .cpus()
        .iter()
        .filter(|c| state.is_idle(*c) && task.allowed.contains(*c))
        .collect();
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
    if !task.allowed.contains(cpu) {
        return fail(
            "allowed",
            format!("cpu {cpu} is not in the allowed set {}", task.allowed),
        );
    }
    if !state.is_idle(cpu) {
        return fail("idle", format!("cpu {cpu} is busy"));
    }

    let primary: Vec<CpuId> = candidates
        .iter()
        .copied()
        .filter(|c| policy.primary().contains(*c))
        .collect();
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

/// Places tasks one after another on an idle machine (all CPUs allowed, no history) until no
/// CPU is idle, checking each decision and the state after it. Also checks: every CPU gets
/// exactly one task; with every CPU primary, steps never go backwards; with cluster balance
/// `on`, clusters alike in kind, capacity and size never differ by more than one busy CPU.
/// Returns the CPUs in the order they were chosen.
pub fn check_fill(topo: &Topology, policy: &Policy) -> Result<Vec<Placement>, Violation> {
    let mut state = CpuState::all_idle(topo);
    let allowed = *topo.cpus();
    let everything_primary = policy.primary() == topo.cpus();
    let balanced = everything_primary && policy.config().cluster_balance == ClusterBalance::On;
    let alike = if balanced {
        alike_clusters(topo)
    } else {
        Vec::new()
    };
    let mut order = Vec::new();
    loop {
        let task = TaskHints::new(&allowed);
        let p = policy.select_cpu(topo, &state, &task);
        check_placement(topo, policy, &state, &task, &p)?;
        let Some(cpu) = p.cpu else { break };
        if everything_primary
            && order
                .last()
                .is_some_and(|last: &Placement| last.step > p.step)
        {
            return fail(
                "fill-order",
                format!("step {} after {:?}", p.step, order.last()),
            );
        }
        if !state.occupy(topo, cpu) {
            return fail("fill", format!("cpu {cpu} chosen twice"));
        }
        check_state(topo, &state)?;
        order.push(p);
        if balanced {
            check_clusters_even(&alike, &state)?;
        }
    }
    if order.len() != topo.nr_cpus() {
        return fail(
            "fill",
            format!("{} tasks placed on {} CPUs", order.len(), topo.nr_cpus()),
        );
    }
    Ok(order)
}

/// The pairs of clusters that are alike: as many CPUs of each kind, capacity and core size. A
/// cluster's first CPU does not say it: a cluster of 7 P-CPUs and 4 E-CPUs, beside one of 11
/// P-CPUs, fills to 7 and 9 busy, rightly, since capacity comes before cluster balance (found
/// by the `topology_builder` fuzz target).
fn alike_clusters(topo: &Topology) -> Vec<(usize, usize)> {
    let key = |cl: usize| {
        let mut members: Vec<_> = topo
            .cluster_cpus(cl)
            .iter()
            .map(|&c| {
                let info = topo.info(c).copied();
                (
                    info.map(|i| i.kind),
                    info.map(|i| i.capacity),
                    topo.siblings(c).len(),
                )
            })
            .collect();
        members.sort_unstable();
        members
    };
    let keys: Vec<_> = (0..topo.nr_clusters()).map(key).collect();
    let mut pairs = Vec::new();
    for a in 0..keys.len() {
        for b in a + 1..keys.len() {
            if keys[a] == keys[b] {
                pairs.push((a, b));
            }
        }
    }
    pairs
}

/// Alike clusters never differ by more than one busy CPU.
fn check_clusters_even(alike: &[(usize, usize)], state: &CpuState) -> Result<(), Violation> {
    for &(a, b) in alike {
        let (x, y) = (state.cluster_busy(a), state.cluster_busy(b));
        if x.abs_diff(y) > 1 {
            return fail(
                "cluster-balance",
                format!("equal clusters {a} and {b} hold {x} and {y} busy CPUs"),
            );
        }
    }
    Ok(())
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
