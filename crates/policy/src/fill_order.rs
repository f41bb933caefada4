//! Fill orders: where a policy places new tasks one after another on an idle machine, asked
//! as the scheduler core asks it; frontends print it to show what a policy (and hybridland's
//! knobs) mean on a machine.

use crate::cpu_state::CpuState;
use crate::idle_order::{Placement, Policy};
use crate::placement_policy::{PlacementPolicy, View};
use crate::task_state::NICE_0_WEIGHT;
use crate::topology::Topology;

impl Policy {
    /// The order in which this policy would fill an idle machine: tasks with no history and
    /// every CPU allowed, placed one after another until nothing is idle. Writes up to
    /// `out.len()` placements and returns how many it wrote; frontends print it to show users
    /// what the knobs mean on their machine. [`fill_order_of`] for hybridland's rules: the
    /// same questions, asked without a `&mut`.
    pub fn fill_order(&self, topo: &Topology, util: u16, out: &mut [Placement]) -> usize {
        fill(topo, util, out, |view| {
            self.select_cpu(view.topo, view.state, &view.hints())
        })
    }
}

/// The order in which `policy` would fill an idle machine, found by asking it what the
/// scheduler core asks at a wake-up: tasks with no history (no previous CPU, no waker, nice
/// 0's weight, utilisation `util`, every CPU allowed) woken one after another at time 0, each
/// answer's CPU busy from then on, as the core marks it. Writes up to `out.len()` answers and
/// returns how many it wrote: it stops early at the first answer that is not an idle CPU the
/// task may use (no CPU, which queues the task; a CPU the core would refuse; a busy CPU), so a
/// count below the machine's CPUs says the policy leaves CPUs idle while tasks are placed.
///
/// A policy that draws at random draws here as it would in a core; build a fresh one to show
/// its order without moving the generator of the one that runs. No allocation; the state is
/// one [`CpuState`] on the stack. For hybridland's [`Policy`] this is [`Policy::fill_order`].
pub fn fill_order_of<P: PlacementPolicy + ?Sized>(
    policy: &mut P,
    topo: &Topology,
    util: u16,
    out: &mut [Placement],
) -> usize {
    fill(topo, util, out, |view| policy.wakeup(view))
}

/// Fills an idle `topo` with tasks of utilisation `util` and no history, `ask` answering for
/// each; see [`fill_order_of`].
fn fill(
    topo: &Topology,
    util: u16,
    out: &mut [Placement],
    mut ask: impl FnMut(&View<'_>) -> Placement,
) -> usize {
    let mut state = CpuState::all_idle(topo);
    let allowed = *topo.cpus();
    // New tasks with nothing kept for them.
    let memo = core::cell::Cell::new(0);
    for (n, slot) in out.iter_mut().enumerate() {
        memo.set(0);
        let view = View {
            topo,
            state: &state,
            allowed: &allowed,
            prev_cpu: None,
            util,
            weight: NICE_0_WEIGHT,
            waker_cpu: None,
            sync_waker: None,
            now_ns: 0,
            contended: false,
            task: crate::TaskKey::default(),
            memo: &memo,
        };
        let p = ask(&view);
        // `occupy` refuses what is not an idle CPU of the machine; every CPU is allowed.
        if !p.cpu.is_some_and(|c| state.occupy(topo, c)) {
            return n;
        }
        *slot = p;
    }
    out.len()
}
