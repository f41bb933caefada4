//! Seed 000's figures: a lone thread's idle order, and where a batch of threads runs.

use super::util::{load_trace, replay};
use super::{Figure, Status, fig, secs};
use hybridland_sim::{Report, presets};

/// "P-core for its whole life" or where the task spent its time, from the report.
fn where_it_ran(report: &Report) -> String {
    let t = &report.tasks[0];
    let total = t.ran_performance_ns + t.ran_efficiency_ns + t.ran_low_power_ns;
    if t.ran_efficiency_ns == 0 && t.ran_low_power_ns == 0 {
        "P-core for its whole life".into()
    } else if t.ran_efficiency_ns == total {
        "E-core".into()
    } else {
        format!(
            "{:.0}% on E-cores",
            t.ran_efficiency_ns as f64 * 100.0 / total as f64
        )
    }
}

/// Average running tasks on the P-cores together, then on each E-cluster: "6 / 2 / 2".
fn split(report: &Report) -> String {
    let p: f64 = report
        .clusters
        .iter()
        .filter(|c| c.kind == "performance")
        .map(|c| c.avg_running)
        .sum();
    let mut parts = vec![format!("{p:.0}")];
    parts.extend(
        report
            .clusters
            .iter()
            .filter(|c| c.kind == "efficiency")
            .map(|c| format!("{:.0}", c.avg_running)),
    );
    parts.join(" / ")
}

pub(super) fn seed_000() -> Vec<Figure> {
    let e_cap = presets::lookup("i7-13800h")
        .unwrap()
        .topology
        .capacity_levels()[0];
    let lone = load_trace("seed000-lone.json");
    let hybrid = replay(&lone, "hybridland", &[], None);
    let count = replay(&lone, "count-cluster", &[], None);
    let ten = load_trace("seed000-10-threads.json");
    let on = split(&replay(&ten, "hybridland", &["cluster_balance=on"], None));
    let auto = split(&replay(&ten, "hybridland", &["cluster_balance=auto"], None));
    let off = split(&replay(&ten, "hybridland", &["cluster_balance=off"], None));
    let kernel_then = split(&replay(
        &ten,
        "kernel-default",
        &["kernel_asym_capacity=off"],
        None,
    ));
    let kernel_now = replay(&ten, "kernel-default", &[], None);
    let doubled = kernel_now
        .clusters
        .iter()
        .filter(|c| c.kind == "performance" && c.avg_running > 1.5)
        .count();
    let balanced = if on == auto {
        format!("{on} with `cluster_balance` on or auto")
    } else {
        format!("{on} with `cluster_balance=on`, {auto} with auto")
    };
    vec![
        fig(
            "000",
            "a lone thread must land on a P-core",
            format!(
                "hybridland: {}, {}",
                where_it_ran(&hybrid),
                secs(hybrid.summary.makespan_ns)
            ),
            Status::ByConstruction,
            "the idle order's first step; 1.00 s is the trace's work on a capacity-1024 CPU",
        ),
        fig(
            "000",
            "Linux 5.16's count-based cluster spreading put it on an E-core",
            format!(
                "`count-cluster`: {}, {}",
                where_it_ran(&count),
                secs(count.summary.makespan_ns)
            ),
            Status::ByConstruction,
            format!(
                "the baseline's rule; the time is 1.00 s x 1024 / {e_cap}, the E-core capacity chosen on seed 004 (seed 000 measured no time)"
            ),
        ),
        fig(
            "000",
            "10 threads on 6P+8E: 6 on P-cores, 2 + 2 on the E-clusters",
            balanced,
            Status::ByConstruction,
            "the policy's cluster balance, written from this seed",
        ),
        fig(
            "000",
            "the vanilla kernel: 6 on P-cores, 4 + 0",
            format!("`kernel-default:kernel_asym_capacity=off`: {kernel_then}"),
            Status::Predicted,
            "the kernel's wake-up and SMT balance without cluster scheduling, capacity unknown (x86 hybrid before per-CPU capacities); the 4 + 0 comes from its balance moving threads off shared P-cores to the lowest-id idle core",
        ),
        fig(
            "000",
            "(not measured: today's kernel with per-CPU capacities)",
            format!(
                "`kernel-default`: {}, {doubled} P-cores running both threads",
                split(&kernel_now)
            ),
            Status::Predicted,
            "the asymmetric-capacity wake-up picks the first idle CPU the task fits, SMT sibling or not, and the balancer does not move a task to a less capable core",
        ),
        fig(
            "000",
            "(the policy's own knob)",
            format!("{off} with `cluster_balance=off`"),
            Status::ByConstruction,
            "the policy without cluster balance fills E-cores by lowest id",
        ),
    ]
}
