//! Seed 000, the x86 hybrid cluster-scheduling series: idle CPUs are used in the order
//! "1) SMT CPU on an idle P-core, 2) idle E-core, 3) unused SMT CPU with a busy sibling"; a
//! single-threaded task belongs on a P-core (Linux 5.16's count-based cluster balance put it
//! on an E-core); 10 threads on 6P+8E split 6 on P-cores and 2 on each E-cluster.

mod util;

use util::{load_trace, replay};

#[test]
fn lone_task_runs_on_a_p_core_for_its_whole_life() {
    let trace = load_trace("seed000-lone.json");
    let report = replay(&trace, "hybridland", &[], None);
    let task = &report.tasks[0];
    assert!(task.finish_ns.is_some());
    assert!(task.ran_performance_ns > 0);
    assert_eq!(task.ran_efficiency_ns, 0);
    assert_eq!(task.ran_low_power_ns, 0);
    assert_eq!(task.migrations, 0);
    let p_core_steps: u64 = report
        .steps
        .iter()
        .filter(|s| s.step == "idle-p-core")
        .map(|s| s.count)
        .sum();
    let all_steps: u64 = report.steps.iter().map(|s| s.count).sum();
    assert_eq!(p_core_steps, all_steps, "{:?}", report.steps);
}

#[test]
fn count_based_cluster_balance_puts_it_on_e_cores() {
    let trace = load_trace("seed000-lone.json");
    let hybrid = replay(&trace, "hybridland", &[], None);
    let count = replay(&trace, "count-cluster", &[], None);
    let t = &count.tasks[0];
    let total = t.ran_performance_ns + t.ran_efficiency_ns + t.ran_low_power_ns;
    println!(
        "seed 000: lone task under count-cluster: {:.0}% of its time on E-cores, {} ns vs {} ns under hybridland",
        t.ran_efficiency_ns as f64 * 100.0 / total as f64,
        count.summary.makespan_ns,
        hybrid.summary.makespan_ns
    );
    assert!(t.ran_efficiency_ns * 10 > total * 9, "mostly on E-cores");
    assert!(count.summary.makespan_ns > hybrid.summary.makespan_ns);
}

#[test]
fn ten_threads_split_six_on_p_two_and_two_on_e_clusters() {
    let trace = load_trace("seed000-10-threads.json");
    let report = replay(&trace, "hybridland", &[], None);
    let running: Vec<(String, f64)> = report
        .clusters
        .iter()
        .map(|c| (c.kind.clone(), c.avg_running))
        .collect();
    println!("seed 000: 10 threads, average running per cluster: {running:?}");
    let p: f64 = running
        .iter()
        .filter(|(k, _)| k == "performance")
        .map(|(_, r)| r)
        .sum();
    let e: Vec<f64> = running
        .iter()
        .filter(|(k, _)| k == "efficiency")
        .map(|(_, r)| *r)
        .collect();
    assert!((p - 6.0).abs() < 0.05, "P-cores hold {p}");
    assert!(
        running
            .iter()
            .filter(|(k, _)| k == "performance")
            .all(|(_, r)| (r - 1.0).abs() < 0.05),
        "one thread per P-core"
    );
    assert_eq!(e.len(), 2);
    assert!(
        e.iter().all(|r| (r - 2.0).abs() < 0.05),
        "E-clusters hold {e:?}"
    );

    // Without cluster balance the E-cores pack: 4 + 0, the vanilla kernel of the seed.
    let packed = replay(&trace, "hybridland", &["cluster_balance=off"], None);
    let e_off: Vec<f64> = packed
        .clusters
        .iter()
        .filter(|c| c.kind == "efficiency")
        .map(|c| c.avg_running)
        .collect();
    assert!(
        (e_off[0] - 4.0).abs() < 0.05 && e_off[1].abs() < 0.05,
        "{e_off:?}"
    );
}
