//! Runs one benchmarked decision many times, for instruction counts under callgrind:
//!
//! ```sh
//! cargo build --release -p hybridland-benches --example profile
//! valgrind --tool=callgrind --toggle-collect='*decide_many*' \
//!     target/release/examples/profile half-busy 20 10000
//! ```
//! Cases: `nearly-idle`, `half-busy`, `nearly-full`, `primary` (P-cores primary, half busy)
//! and `balance` (step-2 placement with cluster balance on). Divide the collected
//! instructions by the count for instructions per decision.
//!
//! `profile core-wakeup CPUS COUNT` runs `core/wakeup`'s loop (collect `*core_many*`).
//!
//! `profile replay ENTRIES LOOPS` replays the simulator benchmark's workload with
//! `ENTRIES` x 100 tasks of `LOOPS` run/sleep rounds once and prints its size, for peak-memory
//! measurements (`/usr/bin/time -v`): memory should follow the number of tasks, not events.

use core::hint::black_box;
use hybridland_benches::{
    Case, CoreWakeups, Load, SIM_PRESET, balance_step2, large_trace_json, wakeup,
};

#[inline(never)]
fn decide_many(case: &Case, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        let p = black_box(case).decide();
        sum += u64::from(p.cpu.map_or(0, |c| c.0));
    }
    sum
}

/// `core/wakeup`'s loop ([`CoreWakeups`]) `n` times.
#[inline(never)]
fn core_many(case: &Case, n: u64) -> u64 {
    let mut wakeups = CoreWakeups::new(case);
    (0..n)
        .filter_map(|_| wakeups.step())
        .map(|d| d.target.cpu().map_or(0, |c| u64::from(c.0)))
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: profile nearly-idle|half-busy|nearly-full|primary|balance CPUS COUNT";
    let (Some(kind), Some(cpus), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    if kind == "core-wakeup" {
        let cpus: usize = cpus.parse().expect("CPUS is a number");
        let n: u64 = n.parse().expect("COUNT is a number");
        println!(
            "checksum {}",
            core_many(&wakeup(cpus, Load::Half, false), n)
        );
        return;
    }
    if kind == "replay" {
        let entries: usize = cpus.parse().expect("ENTRIES is a number");
        let loops: u32 = n.parse().expect("LOOPS is a number");
        replay(entries, loops);
        return;
    }
    let cpus: usize = cpus.parse().expect("CPUS is a number");
    let n: u64 = n.parse().expect("COUNT is a number");
    let case = match kind.as_str() {
        "nearly-idle" => wakeup(cpus, Load::NearlyIdle, false),
        "half-busy" => wakeup(cpus, Load::Half, false),
        "nearly-full" => wakeup(cpus, Load::NearlyFull, false),
        "primary" => wakeup(cpus, Load::Half, true),
        "balance" => balance_step2(cpus),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    println!("{:?} (checksum {})", case.decide(), decide_many(&case, n));
}

fn replay(entries: usize, loops: u32) {
    let text = large_trace_json(entries, 100, loops);
    let trace = hybridland_sim::Trace::from_json_str(&text, "large.json").expect("parses");
    drop(text);
    let machine = hybridland_sim::presets::lookup(SIM_PRESET).expect("preset exists");
    let knobs = hybridland_sim::Knobs::new();
    let report = hybridland_sim::replay(&machine, &trace, "hybridland", &knobs).expect("replays");
    println!(
        "{} tasks, {} events",
        report.summary.tasks, report.summary.events
    );
}
