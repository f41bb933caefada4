//! The same trace, machine, policy and seed give byte-identical reports.

mod util;

use hybridland_sim::{
    DecisionObserver, DecisionRecord, Knobs, PolicyKind, SimOptions, Simulation, replay_observed,
};
use util::{load_trace, machine_of, replay};

/// The traces the tests below replay under every policy.
const TRACES: [&str; 4] = [
    "seed004-webgl.json",
    "mixed-laptop.json",
    "seed003-openmp.json",
    "wake-chain.json",
];

#[test]
fn replays_are_byte_identical() {
    for name in TRACES {
        let trace = load_trace(name);
        for kind in PolicyKind::ALL {
            let a = replay(&trace, kind.name(), &[], None).to_json_pretty();
            let b = replay(&trace, kind.name(), &[], None).to_json_pretty();
            assert!(
                a == b,
                "{name} under {} differs between two runs",
                kind.name()
            );
        }
    }
}

#[test]
fn the_seed_drives_the_random_choices() {
    let trace = load_trace("seed004-webgl.json");
    let a = replay(&trace, "spread", &[], Some(1)).to_json_pretty();
    let b = replay(&trace, "spread", &[], Some(2)).to_json_pretty();
    assert_ne!(a, b, "spread draws CPUs from the seed");
}

/// A replay nobody watches gives the report of one whose every decision is checked: for a
/// core-driven policy the engine then keeps no copy of the core's state, and the copy it hands
/// the checkers changes nothing.
#[test]
fn watching_the_decisions_changes_nothing() {
    let knobs = Knobs::parse::<&str>(&[]).unwrap();
    for name in TRACES {
        let trace = load_trace(name);
        let machine = machine_of(&trace);
        for kind in PolicyKind::ALL {
            let watched = replay(&trace, kind.name(), &[], None).to_json_pretty();
            let unwatched = hybridland_sim::replay(&machine, &trace, kind.name(), &knobs)
                .unwrap()
                .to_json_pretty();
            assert!(
                watched == unwatched,
                "{name} under {}: watching the decisions changed the report",
                kind.name()
            );
        }
    }
}

/// Counts what it is shown; wants decisions only when told to.
struct Counting {
    wants: bool,
    decisions: u64,
}

impl DecisionObserver for Counting {
    fn on_decision(&mut self, _record: &DecisionRecord<'_>) {
        self.decisions += 1;
    }

    fn wants_decisions(&self) -> bool {
        self.wants
    }
}

#[test]
fn an_observer_that_wants_no_decisions_is_shown_none() {
    let trace = load_trace("seed004-webgl.json");
    let machine = machine_of(&trace);
    let knobs = Knobs::parse::<&str>(&[]).unwrap();
    for kind in [PolicyKind::Hybridland, PolicyKind::KernelDefault] {
        let mut shown = [0; 2];
        for (i, wants) in [true, false].into_iter().enumerate() {
            let mut observer = Counting {
                wants,
                decisions: 0,
            };
            replay_observed(
                &machine,
                &trace,
                kind.name(),
                &knobs,
                &SimOptions::default(),
                &mut observer,
            )
            .unwrap();
            shown[i] = observer.decisions;
        }
        assert!(shown[0] > 100, "{}: {shown:?}", kind.name());
        assert_eq!(shown[1], 0, "{}", kind.name());
    }
    // A closure wants them all.
    let mut n = 0u64;
    let policy = hybridland_sim::policy_by_name("hybridland", &knobs).unwrap();
    Simulation::new(
        &machine.topology,
        &machine.model,
        &trace,
        policy,
        SimOptions::default(),
    )
    .unwrap()
    .run_observed(&mut |_: &DecisionRecord<'_>| n += 1)
    .unwrap();
    assert!(n > 100, "{n}");
}
