//! `hybrid-sim sweep`: seed 002's four rows in one command, agreeing with the replays it
//! stands for; CSV and JSON forms; the seed in every report; inputs checked before any replay.

use serde_json::Value;

mod common;
use common::{hybrid_sim, root};

fn ok(args: &[&str]) -> String {
    let o = hybrid_sim(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stderr.is_empty(), "no progress bar off a terminal");
    String::from_utf8(o.stdout).unwrap()
}

const SEED002: [&str; 8] = [
    "sweep",
    "examples/traces/seed002-mcf-1.json",
    "--set",
    "cluster_balance=off,on,auto",
    "--copies",
    "1,6,12,24",
    "--csv",
    "--jobs",
];

fn makespan(trace: &str, balance: &str) -> u64 {
    let text = ok(&[
        "replay",
        trace,
        "--set",
        &format!("cluster_balance={balance}"),
        "--json",
    ]);
    let v: Value = serde_json::from_str(&text).unwrap();
    v[0]["summary"]["makespan_ns"].as_u64().unwrap()
}

#[test]
fn seed_002_in_one_command_matches_the_separate_replays() {
    let mut args = SEED002.to_vec();
    args.push("2");
    let csv = ok(&args);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..4],
        ["copies", "cluster_balance", "policy", "seed"]
    );
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 12);
    for (i, copies) in [1, 6, 12, 24].iter().enumerate() {
        let trace = format!("examples/traces/seed002-mcf-{copies}.json");
        let off = makespan(&trace, "off");
        let on = makespan(&trace, "on");
        for (j, (balance, want)) in [("off", off), ("on", on), ("auto", on)].iter().enumerate() {
            let row = &rows[i * 3 + j];
            assert_eq!(row[0], copies.to_string());
            assert_eq!(row[1], *balance);
            assert_eq!(row[col("seed")], "2");
            assert_eq!(
                row[col("makespan_ns")],
                want.to_string(),
                "{copies} copies {balance}"
            );
            let gain: f64 = row[col("gain_pct")].parse().unwrap();
            let expected = (off as f64 / *want as f64 - 1.0) * 100.0;
            assert!((gain - expected).abs() < 1e-3, "{gain} vs {expected}");
        }
    }
    // The seed's shape: a gain at 6 and 12 copies, none at 1 and 24.
    let gain = |i: usize| -> f64 { rows[i][col("gain_pct")].parse().unwrap() };
    assert!(gain(4) > 10.0 && gain(7) > 5.0, "{csv}");
    assert!(gain(1).abs() < 0.5 && gain(10).abs() < 0.5, "{csv}");
}

#[test]
fn worker_count_changes_nothing_but_the_header() {
    let mut one = SEED002.to_vec();
    one.push("1");
    let mut three = SEED002.to_vec();
    three.push("3");
    assert_eq!(ok(&one), ok(&three));
}

#[test]
fn the_cli_doc_shows_the_sweep_as_it_prints() {
    // Seed 002's sweep as a table: its arguments up to --csv.
    let table = ok(&SEED002[..6]);
    let doc = std::fs::read_to_string(root().join("docs/cli.md")).unwrap();
    assert!(
        doc.contains(&table),
        "docs/cli.md must show the sweep's output as it prints now:\n{table}"
    );
}

#[test]
fn seed_is_printed_in_every_report_and_json_is_an_array() {
    let args = [
        "sweep",
        "examples/traces/seed003-lone.json",
        "--policy",
        "hybridland,capacity-blind",
        "--seed",
        "41",
        "--json",
    ];
    let text = ok(&args);
    let v: Value = serde_json::from_str(&text).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 2);
    for o in all {
        assert_eq!(o["seed"], 41);
        assert_eq!(o["report"]["seed"], 41);
    }
    assert_eq!(all[0]["gain_pct"], 0.0);
    // The same sweep as a table.
    let table = ok(&args[..6]);
    assert!(
        table.starts_with("sweep seed003-lone on tc2 (seed 41): 2 replay(s)"),
        "{table}"
    );
    assert!(table.contains("gain vs hybridland"), "{table}");
    let replay = ok(&[
        "replay",
        "examples/traces/seed003-lone.json",
        "--seed",
        "41",
    ]);
    assert!(
        replay.starts_with("trace seed003-lone on tc2 (seed 41)"),
        "{replay}"
    );
}

#[test]
fn bad_grids_exit_2_before_any_replay() {
    for (args, says) in [
        (vec!["--set", "cluster_balance=off,sideways"], "sideways"),
        (
            vec![
                "--set",
                "cluster_balance=off",
                "--set",
                "cluster_balance=on",
            ],
            "given twice",
        ),
        (vec!["--set", "cluster_balance=off,"], "no empty value"),
        (vec!["--copies", "0"], "--copies 0"),
        (vec!["--policy", "hybridland,nosuch"], "nosuch"),
    ] {
        let mut all = vec!["sweep", "examples/traces/seed002-mcf-1.json"];
        all.extend(args.iter());
        let o = hybrid_sim(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{all:?}: {err}");
    }
}

#[test]
fn a_policy_without_the_swept_knob_runs_once() {
    let csv = ok(&[
        "sweep",
        "examples/traces/seed000-10-threads.json",
        "--policy",
        "hybridland,spread,kernel-default",
        "--set",
        "cluster_balance=off,on,auto",
        "--csv",
    ]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (key, policy, gain) = (
        header.iter().position(|h| *h == "cluster_balance").unwrap(),
        header.iter().position(|h| *h == "policy").unwrap(),
        header.iter().position(|h| *h == "gain_pct").unwrap(),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let of =
        |name: &str| -> Vec<&Vec<&str>> { rows.iter().filter(|r| r[policy] == name).collect() };
    // hybridland once per value; each baseline once, with no value and no gain.
    assert_eq!(rows.len(), 5, "{csv}");
    let values: Vec<&str> = of("hybridland").iter().map(|r| r[key]).collect();
    assert_eq!(values, ["off", "on", "auto"]);
    for baseline in ["spread", "kernel-default"] {
        let r = of(baseline);
        assert_eq!(r.len(), 1, "{baseline}: {csv}");
        assert_eq!((r[0][key], r[0][gain]), ("", ""), "{baseline}");
    }

    // JSON leaves the key out of a baseline's `set`.
    let json: Value = serde_json::from_str(&ok(&[
        "sweep",
        "examples/traces/seed000-10-threads.json",
        "--policy",
        "hybridland,spread",
        "--set",
        "cluster_balance=off,on",
        "--json",
    ]))
    .unwrap();
    let spread: Vec<&Value> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["policy"] == "spread")
        .collect();
    assert_eq!(spread.len(), 1);
    assert_eq!(spread[0]["set"], serde_json::json!({}));

    // A key no swept policy reads is a mistake, said before anything runs.
    let o = hybrid_sim(&[
        "sweep",
        "examples/traces/seed000-10-threads.json",
        "--policy",
        "spread",
        "--set",
        "cluster_balance=off,on",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("none of the policies swept (spread)"));
}

#[test]
fn the_gain_moves_on_a_trace_that_runs_to_its_horizon() {
    // Seed 004's WebGL trace ends at its 20 s horizon under every policy: a makespan gain
    // would be +0.0% everywhere. The gain is in on-time frames, named in the header.
    let args = [
        "sweep",
        "examples/traces/seed004-webgl.json",
        "--policy",
        "hybridland,spread,kernel-default",
    ];
    let json: Value = serde_json::from_str(&ok(&[&args[..], &["--json"]].concat())).unwrap();
    let all = json.as_array().unwrap();
    let on_time = |o: &Value| -> u64 {
        o["report"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["frames"].as_object())
            .map(|f| f["frames"].as_u64().unwrap() - f["missed_deadlines"].as_u64().unwrap())
            .sum()
    };
    let makespans: Vec<&Value> = all
        .iter()
        .map(|o| &o["report"]["summary"]["makespan_ns"])
        .collect();
    assert!(
        makespans.iter().all(|m| *m == makespans[0]),
        "{makespans:?}"
    );
    let gain = |i: usize| all[i]["gain_pct"].as_f64().unwrap();
    for (i, o) in all.iter().enumerate() {
        assert_eq!(o["gain_figure"], "on-time-frames");
        let expected = (on_time(o) as f64 / on_time(&all[0]) as f64 - 1.0) * 100.0;
        assert!(
            (gain(i) - expected).abs() < 1e-9,
            "{} vs {expected}",
            gain(i)
        );
    }
    // spread misses 262 render frames: its gain is below hybridland's, which kernel-default
    // matches on this trace.
    assert_eq!(gain(0), 0.0);
    assert!(gain(1) < -5.0, "{}", gain(1));
    assert_eq!(gain(2), 0.0);

    let table = ok(&args);
    let header = table.lines().find(|l| l.starts_with("policy")).unwrap();
    assert!(
        header.ends_with("on-time frames  gain vs hybridland (on-time frames)"),
        "{header}"
    );
    assert!(header.contains("render fps  render missed"), "{header}");
    let spread = table.lines().find(|l| l.starts_with("spread")).unwrap();
    assert!(spread.ends_with(&format!("{:+.1}%", gain(1))), "{spread}");

    let csv = ok(&[&args[..], &["--csv"]].concat());
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header.last(), Some(&"gain_figure"));
    assert!(
        csv.lines().skip(1).all(|l| l.ends_with(",on-time-frames")),
        "{csv}"
    );
}

#[test]
fn a_horizon_bound_trace_without_frames_gains_on_wake_up_latency() {
    // An rt-app workload: loops that run to the horizon, no frame task.
    let args = [
        "sweep",
        "crates/cli/tests/fixtures/rt-app-examples/mp3-short.json",
        "--policy",
        "hybridland,spread",
    ];
    let o = hybrid_sim(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let all = json.as_array().unwrap();
    let mean = |i: usize| {
        all[i]["report"]["wake_latency"]["mean_ns"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(all[1]["gain_figure"], "wake-latency");
    let expected = (mean(0) / mean(1) - 1.0) * 100.0;
    let gain = all[1]["gain_pct"].as_f64().unwrap();
    assert!(
        (gain - expected).abs() < 1e-9 && gain != 0.0,
        "{gain} vs {expected}"
    );
    let o = hybrid_sim(&args);
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.contains("wake mean (us)  gain vs hybridland (1/mean wake-up latency)"),
        "{table}"
    );
}

#[test]
fn no_finished_task_leaves_the_mean_turnaround_empty() {
    let csv = ok(&[
        "sweep",
        "examples/traces/seed000-10-threads.json",
        "--policy",
        "hybridland,spread",
        "--csv",
    ]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in lines {
        let row: Vec<&str> = line.split(',').collect();
        assert_eq!(row[col("tasks_finished")], "0");
        assert_eq!(row[col("mean_turnaround_ns")], "", "{line}");
    }
}
