//! `hybrid-sim decisions` of a decision log just under the reader's 256 MiB limit, in 1 GiB:
//! the log is written as `scx_hybridland --record` writes it, from a core driven here.

use super::common::random_round;
use super::{Counted, MARGIN, assert_ran, scratch, within_one_gib};
use hybridland_policy::rng::Pcg32;
use hybridland_policy::{
    Affinity, ClusterBalance, CoreConfig, CpuId, CpuSet, PolicyConfig, SchedCore, Slot, TaskId,
};
use hybridland_sim::machine_file::Machine;
use hybridland_trace::decisions::{CoreSettings, FORMAT, Header, MAX_FILE_BYTES, VERSION};
use std::io::Write;
use std::path::Path;

/// The machine of the decision log: the i9-13900K's 32 CPUs, so idle snapshots are long
/// CPU lists.
const LOG_MACHINE: &str = include_str!("../../../sim-frontend/presets/rpl-desktop.toml");
/// Tasks the logged loop sees (pids from 100) and the core's storage.
const LOG_TASKS: u32 = 256;
const LOG_MAX_TASKS: usize = 1024;
/// The nudge helper's pid.
const LOG_HELPER: TaskId = TaskId(99_999);

fn log_line(out: &mut Counted, entry: &impl serde::Serialize) {
    serde_json::to_writer(&mut *out, entry).unwrap();
    out.write_all(b"\n").unwrap();
}

/// A decision log up to `max` bytes, written as `scx_hybridland --record` writes it: each
/// call the loop makes to the core (backlogs, wake-ups and slice ends of 256 tasks, idle
/// snapshots and rechecks, ticks, exits), then the dispatches and nudges the core gives,
/// under hybridland with cluster balance on; so `hybrid-sim decisions` must agree with every
/// line. Returns the dispatches sent.
fn write_max_decision_log(path: &Path, max: u64) -> usize {
    let topo = *Machine::from_toml_str(LOG_MACHINE, "rpl-desktop")
        .unwrap()
        .topology;
    let knobs = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    let config = CoreConfig::DEFAULT;
    let mut out = Counted::create(path);
    log_line(
        &mut out,
        &Header {
            format: FORMAT.into(),
            version: VERSION,
            machine: LOG_MACHINE.into(),
            policy: "hybridland".into(),
            seed: 0,
            knobs,
            policy_knobs: Default::default(),
            core: CoreSettings::from(&config),
            max_tasks: LOG_MAX_TASKS,
            helper: Some(LOG_HELPER),
            max_bytes: usize::try_from(max).unwrap(),
            truncated: false,
        },
    );
    let storage = vec![Slot::EMPTY; Slot::count_for(LOG_MAX_TASKS)];
    let mut core = SchedCore::new(topo.clone(), &knobs, config, storage).unwrap();
    core.set_helper(Some(LOG_HELPER));
    let all = *topo.cpus();
    let e_cores: CpuSet = all.iter().filter(|c| c.0 >= 16).collect();
    let mut rng = Pcg32::new(24, 31);
    let mut now = 1_000_000u64;
    let mut last_cpu = vec![None::<CpuId>; LOG_TASKS as usize];
    let mut sent = 0;
    while out.bytes + MARGIN < max {
        now += 200_000 + u64::from(rng.below(800_000));
        let affinity = |task: u32| match task % 8 {
            0 => Affinity::Cpus(&e_cores),
            1 => Affinity::Unknown,
            _ => Affinity::Cpus(&all),
        };
        sent += random_round(
            &mut core,
            &mut rng,
            now,
            &mut last_cpu,
            &all,
            affinity,
            &mut |e| log_line(&mut out, e),
        );
    }
    out.finish();
    sent
}

/// `hybrid-sim decisions` of a log just under the reader's 256 MiB limit (3.1 million
/// entries), in 1 GiB: every dispatch replays identically. It peaks at 333 MB resident (debug
/// build): the text and its entries packed.
#[test]
fn a_decision_log_at_the_size_limit_replays_within_one_gib() {
    let dir = scratch();
    let log = dir.path().join("max.decisions.jsonl");
    let sent = write_max_decision_log(&log, MAX_FILE_BYTES);
    let bytes = std::fs::metadata(&log).unwrap().len();
    assert!(
        bytes <= MAX_FILE_BYTES && bytes + 2 * MARGIN > MAX_FILE_BYTES,
        "{bytes}"
    );
    let o = within_one_gib(&["decisions".as_ref(), log.as_os_str()]);
    assert_ran(&o, "decisions");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "dispatches sent: {sent}, replayed identically: {sent}"
        )) && stdout.contains("every dispatch and nudge agrees"),
        "{stdout}"
    );
}
