//! The report at the end of a replay: closes the books on whatever still runs and turns the
//! counters into [`Report`] figures.

use super::Simulation;
use crate::report::{ClusterStats, CpuStats, KindStats, Report, StepCount, Summary, TaskReport};
use hybridland_policy::{CoreKind, CpuId, CpuSet, Step};

impl<'a> Simulation<'a> {
    pub(super) fn finish(mut self) -> Report {
        let end = self.now;
        // Close the books on whatever still runs (a horizon cut it short).
        for i in 0..self.cpus.len() {
            if self.cpus[i].running.is_some() {
                self.stop(CpuId(i as u16));
            }
        }
        for core in 0..self.cores.len() {
            self.meter(core, 0);
        }
        let makespan = end;
        let secs = makespan as f64 / 1e9;
        let package_pj = u128::from(self.model.package_mw) * u128::from(makespan);
        let cores_pj: u128 = self.cores.iter().map(|c| c.energy_pj).sum();
        let energy_j = (package_pj + cores_pj) as f64 / 1e12;

        let mut kinds = Vec::new();
        for kind in CoreKind::ALL {
            let mask = self.topo.kind_mask(kind);
            if mask.is_empty() {
                continue;
            }
            let busy: u64 = mask.iter().map(|c| self.cpus[c.index()].busy_ns).sum();
            let pj: u128 = self
                .cores
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| c.energy_pj)
                .sum();
            kinds.push(KindStats {
                kind: kind.name().to_owned(),
                cpus: mask.count(),
                busy_ns: busy,
                utilisation_pct: ratio(busy as f64 * 100.0, mask.count() as f64 * makespan as f64),
                energy_j: pj as f64 / 1e12,
            });
        }
        let clusters = (0..self.topo.nr_clusters())
            .map(|cl| {
                let members = self.topo.cluster_cpus(cl);
                let busy: u64 = members.iter().map(|c| self.cpus[c.index()].busy_ns).sum();
                let set: CpuSet = members.iter().copied().collect();
                ClusterStats {
                    index: cl,
                    kind: members
                        .first()
                        .map_or(CoreKind::Performance, |c| self.cpus[c.index()].kind)
                        .name()
                        .to_owned(),
                    cpus: set.to_string(),
                    busy_ns: busy,
                    avg_running: ratio(busy as f64, makespan as f64),
                }
            })
            .collect();
        let cpus = self
            .cpu_ids
            .iter()
            .map(|c| {
                let cpu = &self.cpus[c.index()];
                CpuStats {
                    cpu: c.0,
                    kind: cpu.kind.name().to_owned(),
                    core: cpu.core,
                    cluster: cpu.cluster,
                    busy_ns: cpu.busy_ns,
                    utilisation_pct: ratio(100.0 * cpu.busy_ns as f64, makespan as f64),
                }
            })
            .collect();
        let steps = match self.policy.step_counts() {
            Some(counts) => Step::ALL
                .iter()
                .zip(counts)
                .map(|(s, [count, overflow])| StepCount {
                    step: s.name().to_owned(),
                    count,
                    overflow,
                })
                .collect(),
            None => Vec::new(),
        };

        let mut finished = 0usize;
        let mut turnaround_sum = 0u128;
        let mut turnaround_max = 0u64;
        let tasks: Vec<TaskReport> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let turnaround = t.finish_ns.map(|f| f - t.start_ns);
                if let Some(d) = turnaround {
                    finished += 1;
                    turnaround_sum += u128::from(d);
                    turnaround_max = turnaround_max.max(d);
                }
                TaskReport {
                    name: t.name.clone(),
                    start_ns: t.start_ns,
                    finish_ns: t.finish_ns,
                    turnaround_ns: turnaround,
                    ran_performance_ns: t.ran_by_kind[0],
                    ran_efficiency_ns: t.ran_by_kind[1],
                    ran_low_power_ns: t.ran_by_kind[2],
                    migrations: t.migrations,
                    wakeups: t.wakeups,
                    // The driver's estimate: as the task ended, or as it stands.
                    util: self.policy.final_util(i),
                    frames: t.frames.as_ref().map(|f| f.stats(&t.name)),
                }
            })
            .collect();
        let fps = tasks.iter().find_map(|t| t.frames.clone());
        Report {
            policy: self.policy.name().to_owned(),
            policy_config: self.policy.describe(),
            machine: self.machine_name.clone(),
            trace: self.trace_name.clone(),
            seed: self.seed,
            summary: Summary {
                makespan_ns: makespan,
                tasks: self.tasks.len(),
                tasks_finished: finished,
                throughput_per_s: ratio(finished as f64, secs),
                mean_turnaround_ns: if finished == 0 {
                    0
                } else {
                    (turnaround_sum / finished as u128) as u64
                },
                max_turnaround_ns: turnaround_max,
                migrations: self.migrations,
                energy_j,
                avg_power_w: ratio(energy_j, secs),
                events: self.nr_events,
                peak_queued_events: self.events.peak_stored() as u64,
                rate_refreshes: self.rate_refreshes,
            },
            wake_latency: self.latency.stats(),
            fps,
            kinds,
            clusters,
            cpus,
            steps,
            tasks,
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}
