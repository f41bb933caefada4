//! Every command follows docs/cli.md's exit-status table: 0 ok, 1 a replay failed for a reason
//! that is not the input's, 2 bad input or usage, 3 an output that could not be written
//! (standard output to /dev/full, `-o`, `--timeline`, `--plot`, `--live`, a closed pipe).
//! Status 1 needs a policy that breaks the engine's rules, which no bundled policy does; the
//! engine's own tests reach it.

mod common;

use common::{hybrid_sim, hybrid_sim_to_full, text};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const TRACE: &str = "examples/traces/seed000-lone.json";
const RT_APP: &str = "examples/rt-app/laptop-mix.json";
const RECORDING: &str = "examples/recordings/vm-busybox.trace";
const VM: &str = "scripts/vm/topology-2p-smt-4e.toml";
const FIDELITY: &str = "crates/cli/tests/fixtures/fidelity";

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exit-status");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Checks the status, and that a failure says something on stderr naming `says`.
fn expect(o: &Output, code: i32, says: &str, what: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    if code != 0 {
        assert!(
            err.contains("hybrid-sim: error: "),
            "{what}: no message: {err}"
        );
        assert!(
            err.contains(says),
            "{what}: message without `{says}`: {err}"
        );
    }
}

/// Standard output on /dev/full: status 3 and a message naming standard output.
fn stdout_full(args: &[&str]) {
    expect(
        &hybrid_sim_to_full(args),
        3,
        "standard output: cannot write",
        &format!("{args:?} > /dev/full"),
    );
}

#[test]
fn replay() {
    expect(&hybrid_sim(&["replay", TRACE]), 0, "", "replay");
    expect(
        &hybrid_sim(&["replay", "examples/traces/invalid/no-such.json"]),
        2,
        "cannot read",
        "a missing trace",
    );
    expect(
        &hybrid_sim(&["replay", TRACE, "--policy", "nonesuch"]),
        2,
        "nonesuch",
        "an unknown policy",
    );
    stdout_full(&["replay", TRACE]);
    stdout_full(&["replay", TRACE, "--json"]);
    expect(
        &hybrid_sim(&["replay", TRACE, "--timeline", "/dev/full"]),
        3,
        "/dev/full: cannot write",
        "--timeline /dev/full",
    );
    // --plot under a regular file: the directory cannot be made, before any replay runs.
    let file = scratch("plain-file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("charts");
    expect(
        &hybrid_sim(&["replay", TRACE, "--plot", under.to_str().unwrap()]),
        3,
        "charts: cannot create",
        "--plot under a file",
    );
}

#[test]
fn a_closed_pipe_exits_3_without_a_message() {
    // The reader is gone before the replay starts (closing it after the spawn would race a
    // replay fast enough to fill the pipe's buffer first): its output has nowhere to go.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(["replay", TRACE, "--json"])
        .current_dir(common::root())
        .env_remove("RUST_LOG")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}

#[test]
fn validate() {
    expect(&hybrid_sim(&["validate", TRACE]), 0, "", "validate");
    expect(
        &hybrid_sim(&["validate", TRACE, "--topology", "nonesuch"]),
        2,
        "unknown topology",
        "an unknown topology",
    );
    stdout_full(&["validate", TRACE]);
}

#[test]
fn policies_and_topology() {
    expect(&hybrid_sim(&["policies"]), 0, "", "policies");
    stdout_full(&["policies"]);
    expect(&hybrid_sim(&["topology", "list"]), 0, "", "topology list");
    stdout_full(&["topology", "list", "--json"]);
    expect(
        &hybrid_sim(&["topology", "show", "tc2"]),
        0,
        "",
        "topology show",
    );
    expect(
        &hybrid_sim(&["topology", "show", "nonesuch"]),
        2,
        "unknown topology",
        "topology show nonesuch",
    );
    stdout_full(&["topology", "show", "tc2"]);
}

#[test]
fn sweep() {
    let grid = ["sweep", TRACE, "--set", "cluster_balance=off,on"];
    expect(&hybrid_sim(&grid), 0, "", "sweep");
    expect(
        &hybrid_sim(&["sweep", TRACE, "--set", "cluster_balance=sideways"]),
        2,
        "sideways",
        "a bad value",
    );
    let mut csv = grid.to_vec();
    csv.push("--csv");
    stdout_full(&csv);
    let mut json = grid.to_vec();
    json.push("--json");
    stdout_full(&json);
}

#[test]
fn import_rt_app() {
    let out = scratch("laptop-mix.trace.json");
    let o = hybrid_sim(&["import", "rt-app", RT_APP, "-o", out.to_str().unwrap()]);
    expect(&o, 0, "", "import rt-app -o");
    expect(
        &hybrid_sim(&["import", "rt-app", TRACE]),
        2,
        TRACE,
        "a trace is not an rt-app file",
    );
    stdout_full(&["import", "rt-app", RT_APP]);
    expect(
        &hybrid_sim(&["import", "rt-app", RT_APP, "-o", "/dev/full"]),
        3,
        "/dev/full: cannot write",
        "import rt-app -o /dev/full",
    );
    expect(
        &hybrid_sim(&["import", "rt-app", RT_APP, "-o", "/nonexistent-dir/t.json"]),
        3,
        "/nonexistent-dir/t.json: cannot write",
        "import rt-app -o into a missing directory",
    );
}

#[test]
fn import_ftrace() {
    let out = scratch("busybox.trace.json");
    let base = ["import", "ftrace", RECORDING, "--topology", VM];
    let mut ok = base.to_vec();
    ok.extend(["-o", out.to_str().unwrap()]);
    expect(&hybrid_sim(&ok), 0, "", "import ftrace -o");
    stdout_full(&base);
    let mut full = base.to_vec();
    full.extend(["-o", "/dev/full"]);
    expect(
        &hybrid_sim(&full),
        3,
        "/dev/full: cannot write",
        "-o /dev/full",
    );
    let mut live = ok.clone();
    live.extend(["--live", "/dev/full"]);
    expect(
        &hybrid_sim(&live),
        3,
        "/dev/full: cannot write",
        "--live /dev/full",
    );
}

#[test]
fn compare() {
    let trace = format!("{FIDELITY}/lone-frame-hybridland.trace.json");
    let live = format!("{FIDELITY}/lone-frame-hybridland.live.json");
    let machine = format!("{FIDELITY}/emitted-topology.toml");
    let args = ["compare", &trace, &live, "--topology", &machine];
    expect(&hybrid_sim(&args), 0, "", "compare");
    stdout_full(&args);
    let mut json = args.to_vec();
    json.push("--json");
    stdout_full(&json);
    // The laptop has none of the VM's clusters: refused, not a table of zeros.
    expect(
        &hybrid_sim(&["compare", &trace, &live, "--topology", "i7-13800h"]),
        2,
        "was not made on i7-13800h",
        "compare on the wrong machine",
    );
}

#[test]
fn usage() {
    let o = hybrid_sim(&["replay"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = hybrid_sim(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = hybrid_sim(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
}
