//! What a cluster-balanced pick needs from the machine so that it reads sets instead of walking
//! idle CPUs: the short ladder of busy shares its clusters can reach, and each cluster's CPUs as
//! whole words, so [`CpuState`](crate::CpuState) can keep one set per rung and move a cluster
//! between rungs in as many steps as the words it spans.
//!
//! On a typical hybrid part (SMT pairs of P-cores, E-core clusters of 4) the ladder has 5 rungs:
//! 0, 1/4, 1/2, 3/4, 1.

use crate::cpu_set::{CpuId, MAX_CPUS};

/// Most rungs a ladder may have. Machines whose cluster sizes give more distinct busy shares
/// (clusters of 16 or more CPUs, or many different sizes) get no ladder: their balanced pick
/// compares clusters one idle CPU at a time, as [`Policy`](crate::Policy) documents.
pub const MAX_LOAD_LEVELS: usize = 16;

/// The distinct busy shares `busy / size` the machine's clusters can take, ascending.
#[derive(Clone, Debug)]
pub(crate) struct LoadLadder {
    /// `(busy, size)` per rung, smallest share first; no two equal as fractions.
    rungs: [(u16, u16); MAX_LOAD_LEVELS],
    /// Rungs in use; 0 when the machine has too many shares for a ladder.
    len: u8,
    /// `rung_of[size][busy]`: the rung of that share, looked up on every occupy and release.
    /// With a ladder no cluster has [`MAX_LOAD_LEVELS`] CPUs or more (it would have more
    /// shares than rungs), so every size fits.
    rung_of: [[u8; MAX_LOAD_LEVELS]; MAX_LOAD_LEVELS],
}

impl LoadLadder {
    pub(crate) const NONE: Self = Self {
        rungs: [(0, 1); MAX_LOAD_LEVELS],
        len: 0,
        rung_of: [[0; MAX_LOAD_LEVELS]; MAX_LOAD_LEVELS],
    };

    /// The ladder for clusters of the given sizes (repeats allowed), or [`LoadLadder::NONE`]
    /// when it would need more than [`MAX_LOAD_LEVELS`] rungs.
    pub(crate) fn new(sizes: impl Iterator<Item = u16>) -> Self {
        let mut ladder = Self::NONE;
        for size in sizes {
            for busy in 0..=size {
                let n = usize::from(ladder.len);
                let Err(pos) = ladder.rungs[..n].binary_search_by(|r| cmp(*r, (busy, size))) else {
                    continue;
                };
                if n == MAX_LOAD_LEVELS {
                    return Self::NONE;
                }
                ladder.rungs.copy_within(pos..n, pos + 1);
                ladder.rungs[pos] = (busy, size);
                ladder.len += 1;
            }
        }
        for size in 1..MAX_LOAD_LEVELS as u16 {
            for busy in 0..=size {
                let found =
                    ladder.rungs[..ladder.len()].binary_search_by(|r| cmp(*r, (busy, size)));
                if let Ok(rung) = found {
                    ladder.rung_of[usize::from(size)][usize::from(busy)] = rung as u8;
                }
            }
        }
        ladder
    }

    /// Rungs in use (0: no ladder).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// The rung of a cluster of `size` CPUs with `busy` of them busy. Only called with a ladder
    /// built from that size, where the share is always found.
    #[inline]
    pub(crate) fn rung(&self, busy: u16, size: u16) -> usize {
        self.rung_of
            .get(usize::from(size))
            .and_then(|row| row.get(usize::from(busy)))
            .map_or(0, |r| usize::from(*r))
    }
}

/// Orders shares `a.0 / a.1` and `b.0 / b.1` without division.
#[inline]
fn cmp(a: (u16, u16), b: (u16, u16)) -> core::cmp::Ordering {
    (u32::from(a.0) * u32::from(b.1)).cmp(&(u32::from(b.0) * u32::from(a.1)))
}

/// Each cluster's CPUs as `(word, bits)` runs: all of its CPUs in one 64-bit word of a set form
/// one run. A CPU belongs to exactly one run, so the table never holds more than
/// [`MAX_CPUS`] runs, whatever the machine.
#[derive(Clone)]
pub(crate) struct ClusterRuns {
    word: [u8; MAX_CPUS],
    bits: [u64; MAX_CPUS],
    /// Cluster `c`'s runs are `start[c]..start[c + 1]`.
    start: [u16; MAX_CPUS + 1],
}

impl ClusterRuns {
    pub(crate) const EMPTY: Self = Self {
        word: [0; MAX_CPUS],
        bits: [0; MAX_CPUS],
        start: [0; MAX_CPUS + 1],
    };

    /// Builds the runs from each cluster's CPUs, given in ascending order per cluster.
    pub(crate) fn new<'a>(clusters: impl Iterator<Item = &'a [CpuId]>) -> Self {
        let mut runs = Self::EMPTY;
        let mut n = 0usize;
        let mut c = 0usize;
        for cpus in clusters {
            runs.start[c] = n as u16;
            let mut open: Option<usize> = None;
            for cpu in cpus {
                let (w, b) = (cpu.index() / 64, 1u64 << (cpu.index() % 64));
                match open {
                    // Ascending ids: a run only ever continues in the same word.
                    Some(r) if usize::from(runs.word[r]) == w => runs.bits[r] |= b,
                    _ => {
                        // Ids are below MAX_CPUS, so the word fits a u8 and n < MAX_CPUS.
                        runs.word[n] = w as u8;
                        runs.bits[n] = b;
                        open = Some(n);
                        n += 1;
                    }
                }
            }
            c += 1;
        }
        // Every later cluster index (there are none) ends where the last one ends.
        for s in &mut runs.start[c..] {
            *s = n as u16;
        }
        runs
    }

    /// The `(word, bits)` runs of cluster `cluster`.
    #[inline]
    pub(crate) fn of(&self, cluster: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (lo, hi) = (
            usize::from(self.start[cluster]),
            usize::from(self.start[cluster + 1]),
        );
        (lo..hi).map(|r| (usize::from(self.word[r]), self.bits[r]))
    }
}

#[cfg(test)]
mod test {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn hybrid_part_has_five_rungs() {
        let l = LoadLadder::new([2, 2, 2, 4, 4, 1].into_iter());
        let shares: Vec<_> = l.rungs[..l.len()].to_vec();
        assert_eq!(shares, [(0, 2), (1, 4), (1, 2), (3, 4), (2, 2)].to_vec());
        assert_eq!(l.rung(2, 4), 2);
        assert_eq!(l.rung(1, 2), 2);
        assert_eq!(l.rung(4, 4), 4);
        assert_eq!(l.rung(0, 1), 0);
    }

    #[test]
    fn too_many_shares_gives_no_ladder() {
        assert_eq!(LoadLadder::new([15].into_iter()).len(), 16);
        assert_eq!(LoadLadder::new([16].into_iter()).len(), 0);
        assert_eq!(LoadLadder::new([6, 8].into_iter()).len(), 13);
        assert_eq!(LoadLadder::new([5, 6, 7].into_iter()).len(), 0);
    }

    #[test]
    fn runs_split_at_word_edges() {
        let a = [CpuId(0), CpuId(2), CpuId(63), CpuId(64), CpuId(700)];
        let b = [CpuId(1)];
        let runs = ClusterRuns::new([&a[..], &b[..]].into_iter());
        let got: Vec<_> = runs.of(0).collect();
        assert_eq!(got, [(0, 1 | 4 | 1 << 63), (1, 1), (10, 1 << 60)].to_vec());
        assert_eq!(runs.of(1).collect::<Vec<_>>(), [(0, 2)].to_vec());
    }
}
