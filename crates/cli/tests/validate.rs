//! `hybrid-sim validate`: says which kind of file it read (trace, rt-app file, machine file),
//! checks a trace against the machine a replay would use, and a machine whose kinds and
//! capacities contradict each other is warned about wherever it is loaded.

mod common;

use common::{hybrid_sim, text};
use std::path::PathBuf;

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("validate");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn ok(args: &[&str]) -> (String, String) {
    let o = hybrid_sim(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    (text(&o.stdout), text(&o.stderr))
}

#[test]
fn it_says_what_it_read() {
    let (out, _) = ok(&["validate", "examples/traces/seed000-lone.json"]);
    assert_eq!(
        out,
        "examples/traces/seed000-lone.json: ok: trace version 1, 1 task(s); fits i7-13800h \
         (20 CPUs, the trace's machine)\n"
    );
    let (out, _) = ok(&["validate", "examples/rt-app/laptop-mix.json"]);
    assert!(
        out.contains(": ok: rt-app file, 6 task(s) once imported"),
        "{out}"
    );
    assert!(out.contains("(20 CPUs, the default machine)"), "{out}");
    let (out, _) = ok(&["validate", "examples/topologies/tc2.toml"]);
    assert_eq!(
        out,
        "examples/topologies/tc2.toml: ok: machine file, tc2: 5 CPUs in 5 cores and 2 \
         clusters; 2 performance (capacity 1024), 3 efficiency (capacity 494)\n"
    );
    // A recording is none of these: the message says which command reads it.
    let o = hybrid_sim(&["validate", "examples/recordings/vm-busybox.trace"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("hybrid-sim import ftrace"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_trace_is_checked_against_its_own_machine() {
    let trace = scratch(
        "on-tc2.json",
        r#"{"version": 1, "machine": "tc2", "tasks": [{"name": "a", "allowed_cpus": "0-9",
            "phases": [{"run_ns": 1000}]}]}"#,
    );
    let o = hybrid_sim(&["validate", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("names cpu 5, which the machine does not have"),
        "{}",
        text(&o.stderr)
    );
    // On a machine that has the CPUs it passes, and says which machine that was.
    let (out, _) = ok(&["validate", trace.to_str().unwrap(), "-t", "i7-13800h"]);
    assert!(
        out.ends_with("fits i7-13800h (20 CPUs, --topology)\n"),
        "{out}"
    );
}

#[test]
fn performance_cpus_slower_than_efficiency_ones_warn() {
    let machine = scratch(
        "backwards.toml",
        "name = \"backwards\"\n\n[[cpus]]\nlist = \"0-1\"\nkind = \"performance\"\n\
         capacity = 400\n\n[[cpus]]\nlist = \"2-5\"\nkind = \"efficiency\"\ncapacity = 800\n",
    );
    let m = machine.to_str().unwrap();
    let warning = "performance CPU 0 has capacity 400, less than efficiency CPU 5's 800";
    let (_, err) = ok(&["validate", m]);
    assert!(err.contains(warning), "{err}");
    // Whatever the log level: it is not a log line.
    let o = common::hybrid_sim_env(
        &["replay", "examples/traces/seed000-lone.json", "-t", m],
        &[("RUST_LOG", "error")],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(warning), "{}", text(&o.stderr));
    // A sound machine says nothing.
    let (_, err) = ok(&["validate", "examples/topologies/tc2.toml"]);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn cpus_left_out_of_the_cluster_lists_warn_with_what_was_assumed() {
    // Two clusters of four E-cores, the second forgotten.
    let machine = scratch(
        "forgotten-cluster.toml",
        "clusters = [\"0-3\"]\n\n[[cpus]]\nlist = \"0-7\"\nkind = \"efficiency\"\n\
         capacity = 600\n",
    );
    let m = machine.to_str().unwrap();
    let warning = format!(
        "hybrid-sim: warning: {m}: `clusters` leaves out CPUs 4-7, efficiency CPUs of capacity \
         600 as in clusters[0] (0-3), so each of their cores was taken as an L2 cluster of its \
         own (4 clusters: 4, 5, 6, 7); list them in `clusters`, each with the CPUs it shares an \
         L2 with (alone in its list to keep it apart)\n"
    );
    let (out, err) = ok(&["validate", m]);
    assert_eq!(err, warning);
    assert!(out.contains("8 CPUs in 8 cores and 5 clusters"), "{out}");
    // Wherever the file is read, whatever the log level.
    let o = common::hybrid_sim_env(
        &["replay", "examples/traces/seed000-lone.json", "-t", m],
        &[("RUST_LOG", "error")],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(&warning), "{}", text(&o.stderr));
    // Listed, they say nothing.
    let listed = scratch(
        "listed-clusters.toml",
        "clusters = [\"0-3\", \"4-7\"]\n\n[[cpus]]\nlist = \"0-7\"\nkind = \"efficiency\"\n\
         capacity = 600\n",
    );
    let (out, err) = ok(&["validate", listed.to_str().unwrap()]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("8 CPUs in 8 cores and 2 clusters"), "{out}");
}

#[test]
fn a_misspelt_machine_in_a_trace_is_named_as_the_traces_field() {
    let trace = |name: &str, machine: &str| {
        scratch(
            name,
            &format!(
                r#"{{"version": 1, "machine": "{machine}", "tasks": [{{"name": "a",
                    "phases": [{{"run_ns": 1000}}]}}]}}"#
            ),
        )
    };
    let near = trace("misspelt-machine.json", "i7-13700h");
    let presets = "presets: i7-13800h, adl-desktop, rpl-desktop, mtl-laptop, atom24, tc2, \
                   symmetric";
    for cmd in ["validate", "replay"] {
        let o = hybrid_sim(&[cmd, near.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", text(&o.stdout));
        let want = format!(
            "{}: `machine` \"i7-13700h\": no preset has this name (did you mean `i7-13800h`?) \
             ({presets}; a machine file's name has an extension or a `/`); a trace names a \
             preset or a machine file beside it (give another machine with --topology)",
            near.display()
        );
        assert!(
            text(&o.stderr).contains(&want),
            "{cmd}: {}",
            text(&o.stderr)
        );
    }
    // Nothing near: no guess.
    let far = trace("far-machine.json", "pentium-pro");
    let o = hybrid_sim(&["validate", far.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("`machine` \"pentium-pro\": no preset has this name (presets:")
            && !err.contains("did you mean"),
        "{err}"
    );
    // --topology's own name gets the same guess.
    let o = hybrid_sim(&["validate", far.to_str().unwrap(), "-t", "symetric"]);
    assert!(
        text(&o.stderr).contains("unknown topology `symetric` (did you mean `symmetric`?)"),
        "{}",
        text(&o.stderr)
    );
}
