//! A policy's own knob, written through its control file.

use super::*;

/// A policy with one knob of its own, which it only stores.
struct OwnKnob(i64);

const OWN_KNOBS: &[hybridland_policy::KnobSpec] = &[hybridland_policy::KnobSpec::int(
    "heavy_util",
    0,
    1024,
    256,
    "",
)];

impl PlacementPolicy for OwnKnob {
    fn name(&self) -> &str {
        "own-knob"
    }

    fn wakeup(&mut self, view: &hybridland_policy::View<'_>) -> hybridland_policy::Placement {
        view.place_on(view.idle_allowed().first())
    }

    fn knobs(&self) -> &'static [hybridland_policy::KnobSpec] {
        OWN_KNOBS
    }

    fn set_knob(&mut self, _index: usize, value: i64) {
        self.0 = value;
    }
}

/// A value written to a policy's own knob file reaches the core as `Input::Knob` (so the
/// decision log keeps it); one out of range does not.
#[test]
fn a_written_own_knob_reaches_the_core_and_the_decision_log() {
    use crate::control_file::{KnobFile, Watcher, ensure_dir};
    // The control directory is the watcher's to make and remove, inside the test's own.
    let tmp = crate::safe_file::testing::scratch();
    let dir = tmp.path().join("run");
    let made = ensure_dir(&dir).unwrap().then(|| dir.clone());
    let file = KnobFile::create(&dir, OWN_KNOBS[0], 0, 256).unwrap();
    let watcher = Watcher::spawn_all(None, vec![file], &[256], made).unwrap();
    let topo = machine();
    let ops = FakeOps::new(&topo, 64);
    let cfg = LoopConfig {
        max_tasks: 256,
        ..config(Mode::Policy, SliceMode::Scaled)
    };
    let s = Scheduler::new(ops, topo, Box::new(OwnKnob(256)), cfg, Some(watcher), None).unwrap();
    let mut s = s.with_decision_log(
        dir.join("unused.decisions.jsonl"),
        String::new(),
        0,
        (&PolicyConfig::default(), Default::default()),
        1 << 20,
    );
    let knob_entries = |s: &Scheduler<FakeOps>| -> Vec<(u16, i64)> {
        s.decisions
            .as_ref()
            .unwrap()
            .1
            .iter()
            .filter_map(|e| match e {
                Entry::Input {
                    input: hybridland_policy::OwnedInput::Knob { index, value },
                    ..
                } => Some((index, value)),
                _ => None,
            })
            .collect()
    };
    let path = dir.join("heavy_util");
    let written =
        |text: &str, s: &mut Scheduler<FakeOps>, done: &dyn Fn(&Scheduler<FakeOps>) -> bool| {
            std::thread::sleep(core::time::Duration::from_millis(20));
            std::fs::write(&path, text).unwrap();
            // Liveness only: generous for a loaded machine, never a speed claim.
            for _ in 0..1000 {
                s.poll_knob();
                if done(s) {
                    return;
                }
                std::thread::sleep(core::time::Duration::from_millis(10));
            }
            panic!("{text:?}: nothing happened in 10 s");
        };
    // Out of range: the file is rewritten with the value in force, the core told nothing.
    let rewritten =
        |_: &Scheduler<FakeOps>| std::fs::read_to_string(&path).is_ok_and(|t| t == "256\n");
    written("5000\n", &mut s, &rewritten);
    s.poll_knob();
    assert_eq!(knob_entries(&s), vec![], "out of range");
    written("300\n", &mut s, &|s| !knob_entries(s).is_empty());
    assert_eq!(knob_entries(&s), vec![(0, 300)]);
    drop(s);
    assert!(!dir.exists());
}
