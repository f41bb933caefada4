//! Each core kind's busy share over an interval, from `/proc/stat`.

use hybridland_policy::{CoreKind, Topology};

/// Busy and total jiffies of each CPU, from `/proc/stat`.
fn cpu_times(text: &str) -> Vec<(u16, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu: u16 = it.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal (guest time is inside user).
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            let total: u64 = v.iter().take(8).sum();
            Some((cpu, total - idle.min(total), total))
        })
        .collect()
}

/// Each CPU's core kind: all the busy shares need of the topology, which is a large fixed-size
/// value (megabytes at 1024 CPUs; scx_rustland_core's allocator cannot box one).
#[derive(Clone, Debug, Default)]
pub(crate) struct Kinds {
    of_cpu: Vec<Option<CoreKind>>,
    present: Vec<CoreKind>,
}

impl Kinds {
    pub(crate) fn new(topo: &Topology) -> Self {
        let of_cpu = topo
            .cpus()
            .iter()
            .fold(Vec::new(), |mut v: Vec<Option<CoreKind>>, c| {
                let i = usize::from(c.0);
                if v.len() <= i {
                    v.resize(i + 1, None);
                }
                v[i] = topo.info(c).map(|info| info.kind);
                v
            });
        let present = CoreKind::ALL
            .iter()
            .copied()
            .filter(|k| !topo.kind_mask(*k).is_empty())
            .collect();
        Self { of_cpu, present }
    }

    fn of(&self, cpu: u16) -> Option<CoreKind> {
        self.of_cpu.get(usize::from(cpu)).copied().flatten()
    }
}

/// Per-kind busy share over an interval.
pub(crate) struct KindBusy {
    last: Vec<(u16, u64, u64)>,
}

impl KindBusy {
    pub(crate) fn new() -> Self {
        Self {
            last: cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default()),
        }
    }

    /// Busy percentage of each kind present since the last call.
    pub(crate) fn sample(&mut self, kinds: &Kinds) -> Vec<(CoreKind, u64)> {
        let now = cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
        let out = busy_share(kinds, &self.last, &now);
        self.last = now;
        out
    }
}

fn busy_share(
    kinds: &Kinds,
    before: &[(u16, u64, u64)],
    after: &[(u16, u64, u64)],
) -> Vec<(CoreKind, u64)> {
    let mut acc = [(0u64, 0u64); 3];
    for &(cpu, busy, total) in after {
        let Some(kind) = kinds.of(cpu) else {
            continue;
        };
        let (b0, t0) = before
            .iter()
            .find(|x| x.0 == cpu)
            .map_or((0, 0), |x| (x.1, x.2));
        let a = &mut acc[kind.index()];
        a.0 += busy.saturating_sub(b0);
        a.1 += total.saturating_sub(t0);
    }
    kinds
        .present
        .iter()
        .map(|k| {
            let (b, t) = acc[k.index()];
            (*k, (b * 100).checked_div(t).unwrap_or(0))
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{CpuId, TopologyBuilder};

    #[test]
    fn busy_share_is_per_kind() {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).unwrap();
        let topo = b.build().unwrap();
        let before =
            cpu_times("cpu  9 9 9 9\ncpu0 10 0 0 90 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n");
        let after = cpu_times("cpu0 60 0 10 120 0 0 0 0 0 0\ncpu1 10 0 0 190 0 0 0 0 0 0\n");
        // cpu0: busy 60 of 90 more jiffies; cpu1: 10 of 100.
        assert_eq!(
            busy_share(&Kinds::new(&topo), &before, &after),
            vec![(CoreKind::Performance, 66), (CoreKind::Efficiency, 10)]
        );
    }
}
