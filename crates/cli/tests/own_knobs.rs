//! A policy's own knobs through every command: `--set` and `sweep --set` take them by name,
//! `policies` lists them, an unknown key is called unknown with the nearest name, and a
//! decision log with a knob change replays identically.
//!
//! The policy is registered the way a user's program does it (`hybrid_sim::main_with`), so
//! this test is its own `hybrid-sim`: started with `HYBRID_SIM_AS_MAIN` set, the binary runs
//! the command line; started plainly (by `cargo test`), it runs the checks below, each
//! against itself.

mod common;
use common::{random_round, root, scratch, text};

use hybridland_policy::rng::Pcg32;
use hybridland_policy::{
    Affinity, CoreKind, CpuId, CustomPolicy, Input, KnobSpec, KnobValues, Placement,
    PlacementPolicy, PolicyConfig, SchedCore, Slot, TimeNs, Topology, View,
};
use hybridland_sim::machine_file::Machine;
use hybridland_trace::decisions::{CoreSettings, DecisionLog, Entry, FORMAT, Header, VERSION};
use std::process::{Command, ExitCode, Output};

/// Light tasks to idle E-cores first, heavy ones (from `heavy_util` on) to idle P-cores
/// first; with `move_up`, a task that turns heavy on an E-core moves up.
struct UpAt {
    heavy_util: u16,
    move_up: bool,
}

const KNOBS: &[KnobSpec] = &[
    KnobSpec::int(
        "heavy_util",
        0,
        1024,
        256,
        "utilisation from which a task counts as heavy",
    ),
    KnobSpec::on_off(
        "move_up",
        true,
        "move a task that turns heavy up to a P-core",
    ),
];

fn first_idle(view: &View<'_>, performance: bool) -> Option<CpuId> {
    let topo = view.topology();
    view.idle_allowed().iter().find(|c| {
        topo.info(*c)
            .is_some_and(|i| (i.kind == CoreKind::Performance) == performance)
    })
}

impl PlacementPolicy for UpAt {
    fn name(&self) -> &str {
        "up-at"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let heavy = view.util() >= self.heavy_util;
        view.place_on(first_idle(view, heavy).or_else(|| first_idle(view, !heavy)))
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        let on_p = view
            .topology()
            .info(view.prev_cpu()?)
            .is_some_and(|i| i.kind == CoreKind::Performance);
        if !self.move_up || on_p || view.util() < self.heavy_util {
            return None;
        }
        Some(view.place_on(Some(first_idle(view, true)?)))
    }

    fn knobs(&self) -> &'static [KnobSpec] {
        KNOBS
    }

    fn set_knob(&mut self, index: usize, value: i64) {
        match index {
            0 => self.heavy_util = value as u16,
            _ => self.move_up = value != 0,
        }
    }
}

fn up_at(values: &KnobValues) -> UpAt {
    UpAt {
        heavy_util: values.get(0).unwrap_or(256) as u16,
        move_up: values.get(1) != Some(0),
    }
}

fn build(
    _: &Topology,
    _: u64,
    values: &KnobValues,
) -> Result<Box<dyn PlacementPolicy + Send>, String> {
    Ok(Box::new(up_at(values)))
}

const POLICY: CustomPolicy = CustomPolicy {
    name: "up-at",
    description: "light tasks to E-cores, heavy ones to P-cores, moved up when they turn heavy",
    knobs: KNOBS,
    build,
};

/// This binary as `hybrid-sim`, with `up-at` registered, from the repository root.
fn own_sim(args: &[&str]) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args(args)
        .current_dir(root())
        .env("HYBRID_SIM_AS_MAIN", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn a_knob_is_swept_by_name_and_listed() {
    let out = own_sim(&[
        "sweep",
        "examples/traces/seed000-lone.json",
        "--policy",
        "up-at",
        "--set",
        "heavy_util=100,256,1024",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let on_p: Vec<(String, u64)> = points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["set"]["heavy_util"].as_str().unwrap().to_owned(),
                p["report"]["tasks"][0]["ran_performance_ns"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect();
    // The lone thread starts light on an E-core; it moves up once it is "heavy", which an
    // E-core's capacity never reaches at 1024.
    assert_eq!(on_p.len(), 3, "{on_p:?}");
    assert!(
        on_p[0].1 > 900_000_000 && on_p[1].1 > 900_000_000,
        "{on_p:?}"
    );
    assert_eq!(on_p[2], ("1024".to_owned(), 0), "{on_p:?}");

    let out = own_sim(&["policies"]);
    let listed = text(&out.stdout);
    assert!(out.status.success());
    let line = listed
        .lines()
        .find(|l| l.contains("heavy_util"))
        .unwrap_or_else(|| panic!("{listed}"));
    for want in ["up-at", "0..=1024", "256", "heavy"] {
        assert!(line.contains(want), "{want} in {line}");
    }
    assert!(
        listed
            .lines()
            .any(|l| l.contains("move_up") && l.contains("on, off")),
        "{listed}"
    );
}

fn an_unknown_key_is_named_with_the_nearest() {
    let sweep = own_sim(&[
        "sweep",
        "examples/traces/seed000-lone.json",
        "--policy",
        "up-at",
        "--set",
        "heavy_utl=1,2",
    ]);
    let replay = own_sim(&[
        "replay",
        "examples/traces/seed000-lone.json",
        "--policy",
        "up-at",
        "--set",
        "heavy_utl=1",
    ]);
    for out in [sweep, replay] {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("unknown setting `heavy_utl`; did you mean `heavy_util`?"),
            "{err}"
        );
    }
    let bad = own_sim(&[
        "replay",
        "examples/traces/seed000-lone.json",
        "--policy",
        "up-at",
        "--set",
        "heavy_util=2000",
    ]);
    let err = text(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("heavy_util") && err.contains("0..=1024"),
        "{err}"
    );
}

/// A live-like run of `up-at` on the VM's machine, logged as `scx_hybridland --record` logs
/// it, built with `heavy_util` at 100 and set to 0 halfway.
fn live_like_log() -> DecisionLog {
    let machine_text =
        std::fs::read_to_string(root().join("scripts/vm/topology-2p-smt-4e.toml")).unwrap();
    let topo = *Machine::from_toml_str(&machine_text, "vm")
        .unwrap()
        .topology;
    let config = hybridland_policy::CoreConfig::DEFAULT;
    let mut log = DecisionLog::new(Header {
        format: FORMAT.into(),
        version: VERSION,
        machine: machine_text,
        policy: "up-at".into(),
        seed: 0,
        knobs: PolicyConfig::default(),
        policy_knobs: [("heavy_util".to_owned(), 100)].into_iter().collect(),
        core: CoreSettings::from(&config),
        max_tasks: 64,
        helper: None,
        max_bytes: 1 << 20,
        truncated: false,
    });
    let mut values = POLICY.default_knobs().unwrap();
    values.set(KNOBS, 0, 100).unwrap();
    let storage = vec![Slot::EMPTY; Slot::count_for(64)];
    let mut core = SchedCore::with_policy(topo.clone(), up_at(&values), config, storage).unwrap();
    let all = *topo.cpus();
    let mut rng = Pcg32::new(7, 0);
    let mut now = 1_000_000u64;
    let mut last_cpu = [None::<CpuId>; 10];
    for round in 0..400 {
        now += 1_000_000 + u64::from(rng.below(3_000_000));
        if round == 200 {
            let input = Input::Knob { index: 0, value: 0 };
            log.push(Entry::input(TimeNs(now), &input));
            core.handle(TimeNs(now), input).unwrap();
        }
        random_round(
            &mut core,
            &mut rng,
            now,
            &mut last_cpu,
            &all,
            |_| Affinity::Cpus(&all),
            &mut |e| log.push(e.clone()),
        );
    }
    log
}

/// `log` written as `name` in `dir`.
fn write(log: &DecisionLog, dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    log.write_to(std::fs::File::create(&path).unwrap()).unwrap();
    path
}

fn a_knob_change_in_a_decision_log_replays_identically() {
    let dir = scratch();
    let changed = write(&live_like_log(), dir.path(), "changed.decisions.jsonl");
    let changed = changed.to_str().unwrap();
    let out = own_sim(&["decisions", changed]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}{}", text(&out.stderr));
    assert!(
        report.contains("every dispatch and nudge agrees"),
        "{report}"
    );

    // The header's value is read: replayed at the default instead, the core parts from it.
    let out = own_sim(&["decisions", changed, "--set", "heavy_util=256"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));

    // The change matters: the run without it decides otherwise after it.
    let is_knob = |e: &Entry| {
        matches!(
            e,
            Entry::Input {
                input: hybridland_policy::OwnedInput::Knob { .. },
                ..
            }
        )
    };
    let logged = live_like_log();
    assert_eq!(logged.iter().filter(is_knob).count(), 1);
    let mut dropped = DecisionLog::new(logged.header().clone());
    for e in logged.iter().filter(|e| !is_knob(e)) {
        dropped.push(e);
    }
    let dropped = write(&dropped, dir.path(), "dropped.decisions.jsonl");
    let out = own_sim(&["decisions", dropped.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("first difference at line "), "{report}");
}

fn main() -> ExitCode {
    if std::env::var_os("HYBRID_SIM_AS_MAIN").is_some() {
        return hybrid_sim::main_with(&[POLICY]);
    }
    let checks: [(&str, fn()); 3] = [
        (
            "a_knob_is_swept_by_name_and_listed",
            a_knob_is_swept_by_name_and_listed,
        ),
        (
            "an_unknown_key_is_named_with_the_nearest",
            an_unknown_key_is_named_with_the_nearest,
        ),
        (
            "a_knob_change_in_a_decision_log_replays_identically",
            a_knob_change_in_a_decision_log_replays_identically,
        ),
    ];
    // `cargo test -- NAME` runs the checks whose name holds NAME.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, check) in checks {
        if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
            check();
            println!("test {name} ... ok");
        }
    }
    ExitCode::SUCCESS
}
