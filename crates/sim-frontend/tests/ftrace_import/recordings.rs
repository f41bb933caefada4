//! The committed recordings: the one made in the project's VM, rewritten in every format the
//! importer reads, and real trace-cmd and perf output of one workload; each format of one
//! recording imports to the same trace.

use hybridland_sim::import::ftrace::import;
use hybridland_sim::presets;
use hybridland_sim::trace::Phase;

/// The recording scripts/vm-record.sh made in the project's VM with the kernel's tracefs.
#[test]
fn the_vm_recording_imports_every_task_it_ran() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/recordings/vm-busybox.trace")).unwrap();
    // The one file scx_hybridland read in the VM.
    let machine =
        hybridland_sim::load_topology_file(&root.join("scripts/vm/topology-2p-smt-4e.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
    let imp = import(
        &text,
        "vm-busybox.trace",
        "vm-busybox",
        &machine.topology,
        false,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Read the file independently: its first and last timestamps, and the usleep processes
    // that exited (the periodic task's 30 and the 50 ms pause between the workers).
    let stamps: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            l.split_whitespace()
                .find(|t| t.ends_with(':') && t[..t.len() - 1].parse::<f64>().is_ok())
                .map(|t| t[..t.len() - 1].parse().unwrap())
        })
        .collect();
    let span_ns = ((stamps[stamps.len() - 1] - stamps[0]) * 1e9).round() as u64;
    assert_eq!(imp.trace.duration_ns, Some(span_ns));
    let usleeps = text
        .lines()
        .filter(|l| l.contains("sched_process_exit: comm=usleep"))
        .count();
    let imported_usleeps = imp
        .trace
        .tasks
        .iter()
        .filter(|t| t.name.starts_with("usleep-"))
        .count();
    assert_eq!((usleeps, imported_usleeps), (31, 31));
    // Reference work never exceeds what the machine could do in the recording's time.
    let capacity: u64 = machine
        .topology
        .cpus()
        .iter()
        .map(|c| u64::from(machine.topology.info(c).unwrap().capacity))
        .sum();
    let work: u64 = imp
        .trace
        .tasks
        .iter()
        .flat_map(|t| t.phases.iter())
        .map(|p| match p {
            Phase::RunNs(n) => *n,
            _ => 0,
        })
        .sum();
    assert!(work > 0 && u128::from(work) * 1024 <= u128::from(span_ns) * u128::from(capacity));
    // The two CPU-bound workers are the longest runners.
    let mut runs: Vec<(u64, &str)> = imp
        .trace
        .tasks
        .iter()
        .map(|t| {
            let r = t
                .phases
                .iter()
                .map(|p| if let Phase::RunNs(n) = p { *n } else { 0 })
                .sum();
            (r, t.name.as_str())
        })
        .collect();
    runs.sort_unstable();
    assert!(runs[runs.len() - 1].1.starts_with("sh-") && runs[runs.len() - 2].1.starts_with("sh-"));
}

/// The VM recording rewritten as current `trace-cmd report` (sched plugin), older trace-cmd
/// (`prev_comm=`, `success=1`), `trace-cmd report -R` (numeric `prev_state`) and `perf script`
/// with call chains (examples/recordings/formats/): each imports to the same trace as the
/// tracefs original read without its flags column, which none of them prints, so every format
/// reads its preemptions as preemptions and its wakers alike. The flags are what tell a
/// wake-up from an interrupt (no task waker) from one by the task running: with them the
/// original keeps 5 wake-ups as relations, without them 43 (the interrupted task taken as the
/// waker), and the work of every task is the same either way.
#[test]
fn every_format_of_the_vm_recording_imports_alike() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let machine =
        hybridland_sim::load_topology_file(&root.join("scripts/vm/topology-2p-smt-4e.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let original = read("examples/recordings/vm-busybox.trace");
    let with_flags = import(
        &original,
        "vm-busybox.trace",
        "vm",
        &machine.topology,
        false,
    )
    .unwrap();
    // The flags column (`d.s4.`) blanked to `.....`: no line says it came from an interrupt.
    let blanked: String = original
        .lines()
        .map(|l| {
            let Some(i) = l.find("] ") else {
                return format!("{l}\n");
            };
            let rest = &l[i + 2..];
            let tok = rest.split_whitespace().next().unwrap_or("");
            if tok.len() == 5 && !tok.ends_with(':') && !l.starts_with('#') {
                let at = i + 2 + (rest.len() - rest.trim_start().len());
                format!("{}.....{}\n", &l[..at], &l[at + 5..])
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let base = import(&blanked, "vm-busybox.trace", "vm", &machine.topology, false).unwrap();
    assert_eq!(base.trace.tasks.len(), 56);
    assert_eq!((with_flags.relations, base.relations), (5, 43));
    let work = |tasks: &[hybridland_sim::trace::TaskSpec]| -> Vec<(String, u64)> {
        tasks
            .iter()
            .map(|t| {
                let run = t
                    .phases
                    .iter()
                    .map(|p| match p {
                        Phase::RunNs(n) => *n,
                        _ => 0,
                    })
                    .sum();
                (t.name.clone(), run)
            })
            .collect()
    };
    assert_eq!(work(&with_flags.trace.tasks), work(&base.trace.tasks));
    for f in [
        "trace-cmd-report.txt",
        "trace-cmd-report-old.txt",
        "trace-cmd-report-raw.txt",
        "perf-script-callchain.txt",
    ] {
        let text = read(&format!("examples/recordings/formats/{f}"));
        let imp =
            import(&text, f, "vm", &machine.topology, false).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(imp.trace.tasks, base.trace.tasks, "{f}");
        assert_eq!(imp.trace.duration_ns, base.trace.duration_ns, "{f}");
        assert_eq!(imp.busy_ns, base.busy_ns, "{f}");
        assert_eq!(imp.relations, base.relations, "{f}");
        assert!(imp.skipped.is_empty(), "{f}: {:?}", imp.skipped);
    }
}

/// A fixture of examples/recordings/formats/real/ (real trace-cmd and perf output of one
/// recorded workload, see its README), imported on a machine whose CPUs 0 and 1 have
/// capacity 1024, so a task's run is its wall time on the CPU.
fn import_real(f: &str) -> hybridland_sim::import::ftrace::FtraceImport {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/recordings/formats/real").join(f))
        .unwrap_or_else(|e| panic!("{f}: {e}"));
    let machine = presets::lookup("symmetric").unwrap();
    import(&text, f, "real", &machine.topology, false).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// Run totals per task, loops multiplied out.
fn run_ns(phases: &[Phase]) -> u64 {
    phases
        .iter()
        .map(|p| match p {
            Phase::RunNs(n) => *n,
            Phase::Loop(l) => run_ns(&l.phases) * l.times,
            _ => 0,
        })
        .sum()
}

/// What every import of a real recording must hold: tasks and relations, no CPU busier than
/// the recording is long (a switch the recording lacks must not run two tasks on one CPU at
/// once), and the tasks' work is the CPUs' busy time (capacity 1024: nothing scaled).
fn check_real(f: &str, imp: &hybridland_sim::import::ftrace::FtraceImport) {
    let t = &imp.trace;
    assert!(t.tasks.len() > 10, "{f}: {} tasks", t.tasks.len());
    assert!(imp.relations > 10, "{f}: {} relations", imp.relations);
    let duration = t.duration_ns.unwrap();
    assert_eq!(
        imp.busy_ns.keys().copied().collect::<Vec<_>>(),
        [0, 1],
        "{f}"
    );
    for (cpu, busy) in &imp.busy_ns {
        assert!(
            *busy <= duration,
            "{f}: cpu {cpu} busy {busy} of {duration} ns"
        );
    }
    let work: u64 = t.tasks.iter().map(|t| run_ns(&t.phases)).sum();
    assert_eq!(work, imp.busy_ns.values().sum::<u64>(), "{f}");
    // The workload's own tasks, named as the kernel named them (spaces become `_`).
    for prefix in ["cpu_burner-", "ping_ping-", "pong-", "hackbench-"] {
        assert!(
            t.tasks.iter().any(|t| t.name.starts_with(prefix)),
            "{f}: no {prefix}"
        );
    }
}

/// The three `trace-cmd report` forms of one trace.dat (default: the sched plugin's
/// `COMM:PID [PRIO] S ==> ...`; `-N`: the kernel's `prev_comm=.. prev_state=S ==> ..`; `-R`:
/// raw fields, `prev_state` a number) give the same trace, busy time and wake relations.
/// Nothing is lost in any of them for this importer: the plugin prints `R` where the kernel
/// says `R+` and its own letters for the other states (`W` for the kernel's `I`, `X` and `Z`
/// swapped: libtraceevent's table predates the kernel's TASK_REPORT order), and `-R` prints
/// the number (256 preempted, 128 I, ...), but each is a preemption or a sleep alike.
#[test]
fn the_real_trace_cmd_report_forms_of_one_recording_import_alike() {
    let base = import_real("trace-cmd-report.txt");
    check_real("trace-cmd-report.txt", &base);
    assert_eq!(base.trace.tasks.len(), 34);
    assert_eq!(base.relations, 221);
    assert_eq!(base.missed_switches, 4);
    assert_eq!(
        base.skipped,
        std::collections::BTreeMap::from([("sched_process_fork".to_owned(), 13)])
    );
    // trace-cmd's own recorder threads are tasks like any other (not a header line): each
    // ran 7 us and 6 us, then slept to the end.
    let task = |name: &str| {
        base.trace
            .task_named(name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(task("trace-cmd-815").phases, [Phase::RunNs(7_000)]);
    assert_eq!(task("trace-cmd-816").phases, [Phase::RunNs(6_000)]);
    for f in ["trace-cmd-report-N.txt", "trace-cmd-report-R.txt"] {
        let imp = import_real(f);
        check_real(f, &imp);
        assert_eq!(imp.trace.tasks, base.trace.tasks, "{f}");
        assert_eq!(imp.trace.duration_ns, base.trace.duration_ns, "{f}");
        assert_eq!(imp.busy_ns, base.busy_ns, "{f}");
        assert_eq!(imp.relations, base.relations, "{f}");
        assert_eq!(imp.migrations, base.migrations, "{f}");
        assert_eq!(imp.missed_switches, base.missed_switches, "{f}");
        assert_eq!(imp.skipped, base.skipped, "{f}");
    }
}

/// `perf script` of one `perf record -g`, with its call chains (indented frame lines, a
/// blank line after each event) and without (`-G`), gives the same trace.
#[test]
fn the_real_perf_script_with_and_without_call_chains_import_alike() {
    let base = import_real("perf-script.txt");
    check_real("perf-script.txt", &base);
    assert_eq!(base.trace.tasks.len(), 48);
    assert_eq!(base.relations, 161);
    assert_eq!(base.missed_switches, 1);
    assert!(base.skipped.is_empty(), "{:?}", base.skipped);
    let chains = import_real("perf-script-callchain.txt");
    check_real("perf-script-callchain.txt", &chains);
    assert_eq!(chains.trace.tasks, base.trace.tasks);
    assert_eq!(chains.trace.duration_ns, base.trace.duration_ns);
    assert_eq!(chains.busy_ns, base.busy_ns);
    assert_eq!(chains.relations, base.relations);
    assert_eq!(chains.migrations, base.migrations);
    assert_eq!(chains.missed_switches, base.missed_switches);
}
