//! Policies written in a test: a name and a placement function, nothing to describe or
//! prepare, plugged into the engine through `SimPolicy` as an outside crate would.

use hybridland_policy::Topology;
use hybridland_sim::{
    Decision, Destination, Machine, MachineView, PolicyError, Report, SimError, SimOptions,
    SimPolicy, Simulation, TaskView, Trace, presets,
};

/// A policy named `name` that places each task where `place` says.
pub struct PlainPolicy<F> {
    name: &'static str,
    place: F,
}

/// A [`PlainPolicy`], boxed for the engine.
pub fn plain_policy<F>(name: &'static str, place: F) -> Box<PlainPolicy<F>>
where
    F: FnMut(&MachineView<'_>, &TaskView<'_>) -> Destination,
{
    Box::new(PlainPolicy { name, place })
}

impl<F: FnMut(&MachineView<'_>, &TaskView<'_>) -> Destination> SimPolicy for PlainPolicy<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn describe(&self) -> String {
        String::new()
    }
    fn prepare(&mut self, _topo: &Topology, _seed: u64) -> Result<(), PolicyError> {
        Ok(())
    }
    fn place(&mut self, m: &MachineView<'_>, t: &TaskView<'_>) -> Decision {
        Decision::plain((self.place)(m, t))
    }
}

/// Lowest idle allowed CPU, else the shared queue.
pub fn lowest_idle(m: &MachineView<'_>, t: &TaskView<'_>) -> Destination {
    t.allowed
        .and(m.state.idle())
        .first()
        .map_or(Destination::QueueShared, Destination::Run)
}

/// The engine set up to replay `trace` under `policy` on `machine`, with the default options.
pub fn simulation<'a>(
    machine: &'a Machine,
    trace: &'a Trace,
    policy: Box<dyn SimPolicy>,
) -> Result<Simulation<'a>, SimError> {
    Simulation::new(
        &machine.topology,
        &machine.model,
        trace,
        policy,
        SimOptions::default(),
    )
}

/// Replays `trace` under `policy` on the preset `machine`, with the default options (a
/// replay the engine refuses to set up fails the test).
pub fn replay_plain(
    machine: &str,
    trace: &Trace,
    policy: Box<dyn SimPolicy>,
) -> Result<Report, SimError> {
    let machine = presets::lookup(machine).unwrap();
    simulation(&machine, trace, policy).unwrap().run()
}
