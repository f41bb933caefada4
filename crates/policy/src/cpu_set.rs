//! Fixed-capacity CPU bit sets.
//!
//! A [`CpuSet`] is a plain `[u64; WORDS]` so a placement decision copies and combines sets
//! without touching an allocator; every operation walks words, never individual CPUs, except
//! iteration which visits set bits only.

use core::fmt;

/// Largest number of logical CPUs (ids `0..MAX_CPUS`) the policy can describe.
pub const MAX_CPUS: usize = 1024;

const WORDS: usize = MAX_CPUS / 64;

/// A logical CPU number as the kernel counts them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct CpuId(pub u16);

impl CpuId {
    /// The id as an index into per-CPU arrays.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A set of CPU ids below [`MAX_CPUS`].
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct CpuSet {
    words: [u64; WORDS],
}

impl Default for CpuSet {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl CpuSet {
    /// The set with no CPUs.
    pub const EMPTY: Self = Self { words: [0; WORDS] };

    /// Number of 64-bit words backing a set.
    pub const WORDS: usize = WORDS;

    /// The set of CPUs `0..n` (clamped to [`MAX_CPUS`]).
    pub fn first_n(n: usize) -> Self {
        let n = n.min(MAX_CPUS);
        let mut set = Self::EMPTY;
        for (i, w) in set.words.iter_mut().enumerate() {
            let lo = i * 64;
            if n >= lo + 64 {
                *w = u64::MAX;
            } else if n > lo {
                *w = (1u64 << (n - lo)) - 1;
            }
        }
        set
    }

    /// Builds a set from raw words, bit `i` of word `w` being CPU `64 * w + i`.
    pub const fn from_words(words: [u64; WORDS]) -> Self {
        Self { words }
    }

    /// The raw words, bit `i` of word `w` being CPU `64 * w + i`.
    pub const fn words(&self) -> &[u64; WORDS] {
        &self.words
    }

    /// Adds `cpu`; returns whether it was absent.
    ///
    /// # Panics
    /// If `cpu` is not below [`MAX_CPUS`]; use [`CpuSet::try_insert`] for untrusted ids.
    #[inline]
    pub fn insert(&mut self, cpu: CpuId) -> bool {
        let (w, b) = split(cpu);
        let fresh = self.words[w] & b == 0;
        self.words[w] |= b;
        fresh
    }

    /// Adds `cpu` if it is below [`MAX_CPUS`]; returns `false` (and leaves the set alone)
    /// otherwise.
    pub fn try_insert(&mut self, cpu: CpuId) -> bool {
        if cpu.index() < MAX_CPUS {
            self.insert(cpu);
            true
        } else {
            false
        }
    }

    /// Removes `cpu`; returns whether it was present. Ids beyond the capacity are ignored.
    #[inline]
    pub fn remove(&mut self, cpu: CpuId) -> bool {
        if cpu.index() >= MAX_CPUS {
            return false;
        }
        let (w, b) = split(cpu);
        let present = self.words[w] & b != 0;
        self.words[w] &= !b;
        present
    }

    /// Whether `cpu` is in the set. Ids beyond the capacity are never in it.
    #[inline]
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu.index() < MAX_CPUS && {
            let (w, b) = split(cpu);
            self.words[w] & b != 0
        }
    }

    /// Number of CPUs in the set.
    #[inline]
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no CPUs.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Lowest CPU in the set.
    #[inline]
    pub fn first(&self) -> Option<CpuId> {
        self.words
            .iter()
            .position(|&w| w != 0)
            .map(|i| cpu_at(i, self.words[i].trailing_zeros() as usize))
    }

    /// Lowest CPU in the set strictly above `after`.
    #[inline]
    pub fn next(&self, after: CpuId) -> Option<CpuId> {
        let start = after.index() + 1;
        if start >= MAX_CPUS {
            return None;
        }
        let mut w = start / 64;
        let mut bits = self.words[w] & (u64::MAX << (start % 64));
        loop {
            if bits != 0 {
                return Some(cpu_at(w, bits.trailing_zeros() as usize));
            }
            w += 1;
            if w == WORDS {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// Iterates the CPUs in ascending order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            set: self,
            word: 0,
            bits: self.words[0],
        }
    }

    /// CPUs in both sets.
    #[inline]
    #[must_use]
    pub fn and(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a & b)
    }

    /// CPUs in either set.
    #[inline]
    #[must_use]
    pub fn or(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a | b)
    }

    /// CPUs in `self` but not in `other`.
    #[inline]
    #[must_use]
    pub fn and_not(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a & !b)
    }

    /// Whether the two sets share a CPU, without building the intersection.
    #[inline]
    pub fn intersects(&self, other: &Self) -> bool {
        self.words
            .iter()
            .zip(other.words.iter())
            .any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other`.
    #[inline]
    pub fn is_subset(&self, other: &Self) -> bool {
        self.words
            .iter()
            .zip(other.words.iter())
            .all(|(a, b)| a & !b == 0)
    }

    /// One past the highest CPU in the set (0 when empty).
    pub fn span(&self) -> usize {
        match self.words.iter().rposition(|&w| w != 0) {
            Some(i) => i * 64 + 64 - self.words[i].leading_zeros() as usize,
            None => 0,
        }
    }

    #[inline]
    fn zip(&self, other: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        let mut out = Self::EMPTY;
        for ((o, a), b) in out.words.iter_mut().zip(&self.words).zip(&other.words) {
            *o = f(*a, *b);
        }
        out
    }
}

#[inline]
fn split(cpu: CpuId) -> (usize, u64) {
    (cpu.index() / 64, 1u64 << (cpu.index() % 64))
}

#[inline]
fn cpu_at(word: usize, bit: usize) -> CpuId {
    // word < WORDS and bit < 64, so the id is below MAX_CPUS and fits a u16.
    CpuId((word * 64 + bit) as u16)
}

impl FromIterator<CpuId> for CpuSet {
    /// Collects ids; ids at or beyond [`MAX_CPUS`] are dropped.
    fn from_iter<I: IntoIterator<Item = CpuId>>(iter: I) -> Self {
        let mut set = Self::EMPTY;
        for cpu in iter {
            set.try_insert(cpu);
        }
        set
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = CpuId;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Ascending iterator over a [`CpuSet`]'s members.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    set: &'a CpuSet,
    word: usize,
    bits: u64,
}

impl Iterator for Iter<'_> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        while self.bits == 0 {
            // Stays at the last word once done, so calling `next` again stays harmless.
            if self.word + 1 >= WORDS {
                return None;
            }
            self.word += 1;
            self.bits = self.set.words[self.word];
        }
        let bit = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(cpu_at(self.word, bit))
    }
}

/// Formats as a kernel-style CPU list, e.g. `0-5,12`; the empty set prints as `(none)`.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(none)");
        }
        let mut iter = self.iter().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while let Some(&n) = iter.peek() {
                if n.0 != end.0 + 1 {
                    break;
                }
                end = n;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod test {
    extern crate std;
    use super::*;
    use std::{string::ToString, vec::Vec};

    fn set(ids: &[u16]) -> CpuSet {
        ids.iter().map(|&i| CpuId(i)).collect()
    }

    #[test]
    fn word_edges() {
        let s = set(&[0, 63, 64, 127, 1023]);
        assert_eq!(s.count(), 5);
        assert_eq!(s.first(), Some(CpuId(0)));
        assert_eq!(s.next(CpuId(0)), Some(CpuId(63)));
        assert_eq!(s.next(CpuId(63)), Some(CpuId(64)));
        assert_eq!(s.next(CpuId(127)), Some(CpuId(1023)));
        assert_eq!(s.next(CpuId(1023)), None);
        assert_eq!(
            s.iter().map(|c| c.0).collect::<Vec<_>>(),
            [0, 63, 64, 127, 1023]
        );
        assert_eq!(s.span(), 1024);
        assert!(!s.contains(CpuId(5000)));
    }

    #[test]
    fn iterating_past_the_end_stays_empty() {
        let s = set(&[3, 700]);
        let mut it = s.iter();
        assert_eq!(it.next(), Some(CpuId(3)));
        assert_eq!(it.next(), Some(CpuId(700)));
        assert_eq!(it.next(), None);
        assert_eq!(it.next(), None);
    }

    #[test]
    fn algebra() {
        let a = set(&[1, 2, 3, 70]);
        let b = set(&[2, 3, 4, 70, 900]);
        assert_eq!(a.and(&b), set(&[2, 3, 70]));
        assert_eq!(a.or(&b), set(&[1, 2, 3, 4, 70, 900]));
        assert_eq!(a.and_not(&b), set(&[1]));
        assert!(a.intersects(&b));
        assert!(set(&[2, 70]).is_subset(&a));
        assert!(!b.is_subset(&a));
    }

    #[test]
    fn first_n_and_display() {
        assert_eq!(CpuSet::first_n(0), CpuSet::EMPTY);
        assert_eq!(CpuSet::first_n(65).count(), 65);
        assert_eq!(CpuSet::first_n(5000).count(), MAX_CPUS);
        assert_eq!(set(&[0, 1, 2, 3, 4, 5, 12]).to_string(), "0-5,12");
        assert_eq!(set(&[3, 7, 8]).to_string(), "3,7-8");
        assert_eq!(CpuSet::EMPTY.to_string(), "(none)");
    }

    proptest::proptest! {
        #[test]
        fn iteration_matches_membership(ids in proptest::collection::vec(0u16..1024, 0..64)) {
            let s = set(&ids);
            let mut sorted: Vec<u16> = ids.clone();
            sorted.sort_unstable();
            sorted.dedup();
            proptest::prop_assert_eq!(s.iter().map(|c| c.0).collect::<Vec<_>>(), sorted.clone());
            proptest::prop_assert_eq!(s.count(), sorted.len());
            proptest::prop_assert_eq!(s.first().map(|c| c.0), sorted.first().copied());
        }
    }
}
