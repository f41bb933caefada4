//! One placement decision and the cluster-balance decision on hybrid machines of 8 to 1024
//! CPUs. See BENCHMARKS.md for how to run them and what they measured.
#![allow(missing_docs)] // criterion_main! generates an undocumented `main`.

use core::hint::black_box;
use core::time::Duration;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hybridland_benches::{Load, SIZES, balance_step2, wakeup};

fn placement(c: &mut Criterion) {
    for (load, primary) in Load::ALL
        .iter()
        .map(|l| (*l, false))
        .chain(core::iter::once((Load::Half, true)))
    {
        let name = if primary {
            "placement/primary-performance-half-busy".to_string()
        } else {
            format!("placement/{}", load.name())
        };
        let mut group = c.benchmark_group(name);
        for cpus in SIZES {
            let case = wakeup(cpus, load, primary);
            group.bench_with_input(BenchmarkId::from_parameter(cpus), &case, |b, case| {
                b.iter(|| {
                    black_box(case.policy.select_cpu(
                        black_box(&case.topo),
                        black_box(&case.state),
                        black_box(&case.task()),
                    ))
                })
            });
        }
        group.finish();
    }
}

fn cluster_balance(c: &mut Criterion) {
    let mut group = c.benchmark_group("cluster-balance/balance_active");
    for cpus in SIZES {
        let case = balance_step2(cpus);
        group.bench_with_input(BenchmarkId::from_parameter(cpus), &case, |b, case| {
            b.iter(|| {
                black_box(
                    case.policy
                        .balance_active(black_box(&case.topo), black_box(&case.state)),
                )
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("cluster-balance/step2-placement");
    for cpus in SIZES {
        let case = balance_step2(cpus);
        group.bench_with_input(BenchmarkId::from_parameter(cpus), &case, |b, case| {
            b.iter(|| {
                black_box(case.policy.select_cpu(
                    black_box(&case.topo),
                    black_box(&case.state),
                    black_box(&case.task()),
                ))
            })
        });
    }
    group.finish();
}

/// Short runs: the whole suite has to finish in a few minutes on a 2-core machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .sample_size(30)
}

criterion_group! {
    name = policy;
    config = config();
    targets = placement, cluster_balance
}
criterion_main!(policy);
