//! Fixed-capacity CPU bit sets.
//!
//! [`BitSet<W>`] is a plain `[u64; W]`, so a placement decision copies and combines sets without
//! touching an allocator; every operation walks words, never individual CPUs, except iteration
//! which visits set bits only. [`CpuSet`] is its 1024-CPU form, the one the API passes around;
//! the decision path narrows sets to the few words a machine's CPUs can occupy
//! ([`BitSet::head`]) so a 20-CPU machine combines one word per step, in registers.

use core::fmt;

/// Largest number of logical CPUs (ids `0..MAX_CPUS`) the policy can describe.
pub const MAX_CPUS: usize = 1024;

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

/// A set of CPU ids below `64 * W`: bit `i` of word `w` is CPU `64 * w + i`.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct BitSet<const W: usize> {
    words: [u64; W],
}

/// A set of CPU ids below [`MAX_CPUS`].
pub type CpuSet = BitSet<{ MAX_CPUS / 64 }>;

impl<const W: usize> Default for BitSet<W> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const W: usize> BitSet<W> {
    /// The set with no CPUs.
    pub const EMPTY: Self = Self { words: [0; W] };

    /// Number of 64-bit words backing a set.
    pub const WORDS: usize = W;

    /// One past the largest id the set can hold.
    pub const CAPACITY: usize = W * 64;

    /// The set of CPUs `0..n` (clamped to the capacity).
    pub fn first_n(n: usize) -> Self {
        let n = n.min(Self::CAPACITY);
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

    /// Builds a set from raw words.
    pub const fn from_words(words: [u64; W]) -> Self {
        Self { words }
    }

    /// The raw words.
    pub const fn words(&self) -> &[u64; W] {
        &self.words
    }

    /// The first `N` words of the set: the CPUs below `64 * N` (`N <= W`).
    ///
    /// # Panics
    /// If `N > W` (a caller's constant, never input).
    #[inline]
    pub fn head<const N: usize>(&self) -> BitSet<N> {
        let mut words = [0; N];
        words.copy_from_slice(&self.words[..N]);
        BitSet { words }
    }

    /// Adds `cpu`; returns whether it was absent.
    ///
    /// # Panics
    /// If `cpu` is not below the capacity; use [`BitSet::try_insert`] for untrusted ids.
    #[inline]
    pub fn insert(&mut self, cpu: CpuId) -> bool {
        let (w, b) = split(cpu);
        let fresh = self.words[w] & b == 0;
        self.words[w] |= b;
        fresh
    }

    /// Adds `cpu` if it is below the capacity; returns `false` (and leaves the set alone)
    /// otherwise.
    pub fn try_insert(&mut self, cpu: CpuId) -> bool {
        if cpu.index() < Self::CAPACITY {
            self.insert(cpu);
            true
        } else {
            false
        }
    }

    /// Removes `cpu`; returns whether it was present. Ids beyond the capacity are ignored.
    #[inline]
    pub fn remove(&mut self, cpu: CpuId) -> bool {
        if cpu.index() >= Self::CAPACITY {
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
        cpu.index() < Self::CAPACITY && {
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
        if start >= Self::CAPACITY {
            return None;
        }
        let mut w = start / 64;
        let mut bits = self.words[w] & (u64::MAX << (start % 64));
        loop {
            if bits != 0 {
                return Some(cpu_at(w, bits.trailing_zeros() as usize));
            }
            w += 1;
            if w == W {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// Iterates the CPUs in ascending order.
    #[inline]
    pub fn iter(&self) -> Iter<'_, W> {
        Iter {
            set: self,
            word: 0,
            bits: self.words.first().copied().unwrap_or(0),
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

    /// CPUs in exactly one of the sets.
    #[inline]
    #[must_use]
    pub fn xor(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a ^ b)
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

    /// The set moved by `delta` ids: `c + delta` for each member `c`, members that would leave
    /// `0..CAPACITY` dropped. A word-wide shift, for relations between CPUs a fixed distance
    /// apart (SMT siblings numbered in a regular pattern).
    #[must_use]
    pub(crate) fn offset(&self, delta: isize) -> Self {
        let mut out = Self::EMPTY;
        let (words, bits) = (
            delta.unsigned_abs() / 64,
            (delta.unsigned_abs() % 64) as u32,
        );
        if words >= W {
            return out;
        }
        for (i, o) in out.words.iter_mut().enumerate() {
            // Output word i takes bits from input words i - words (up) or i + words (down) and
            // their neighbour.
            let at = |j: Option<usize>| j.and_then(|j| self.words.get(j)).copied().unwrap_or(0);
            *o = if delta >= 0 {
                let hi = at(i.checked_sub(words));
                let lo = at(i.checked_sub(words + 1));
                if bits == 0 {
                    hi
                } else {
                    (hi << bits) | (lo >> (64 - bits))
                }
            } else {
                let lo = at(i.checked_add(words));
                let hi = at(i.checked_add(words + 1));
                if bits == 0 {
                    lo
                } else {
                    (lo >> bits) | (hi << (64 - bits))
                }
            };
        }
        out
    }

    /// ORs `bits` into word `word` (`word < W`): a whole run of a cluster's CPUs at once.
    #[inline]
    pub(crate) fn or_word(&mut self, word: usize, bits: u64) {
        self.words[word] |= bits;
    }

    /// Clears `bits` from word `word` (`word < W`).
    #[inline]
    pub(crate) fn clear_word(&mut self, word: usize, bits: u64) {
        self.words[word] &= !bits;
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
    // Sets hold at most MAX_CPUS ids (the largest W in use is CpuSet's), so the id fits a u16.
    CpuId((word * 64 + bit) as u16)
}

impl<const W: usize> FromIterator<CpuId> for BitSet<W> {
    /// Collects ids; ids at or beyond the capacity are dropped.
    fn from_iter<I: IntoIterator<Item = CpuId>>(iter: I) -> Self {
        let mut set = Self::EMPTY;
        for cpu in iter {
            set.try_insert(cpu);
        }
        set
    }
}

impl<'a, const W: usize> IntoIterator for &'a BitSet<W> {
    type Item = CpuId;
    type IntoIter = Iter<'a, W>;
    fn into_iter(self) -> Iter<'a, W> {
        self.iter()
    }
}

/// Ascending iterator over a [`BitSet`]'s members.
#[derive(Clone, Debug)]
pub struct Iter<'a, const W: usize> {
    set: &'a BitSet<W>,
    word: usize,
    bits: u64,
}

impl<const W: usize> Iterator for Iter<'_, W> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        while self.bits == 0 {
            // Stays at the last word once done, so calling `next` again stays harmless.
            if self.word + 1 >= W {
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
impl<const W: usize> fmt::Display for BitSet<W> {
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

impl<const W: usize> fmt::Debug for BitSet<W> {
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

    #[test]
    fn narrow_sets_and_heads() {
        let s = set(&[1, 64, 130, 700]);
        let h: BitSet<3> = s.head();
        assert_eq!(h.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 64, 130]);
        assert_eq!(BitSet::<1>::CAPACITY, 64);
        assert!(!BitSet::<1>::first_n(64).contains(CpuId(64)));
        let mut one = BitSet::<1>::EMPTY;
        assert!(!one.try_insert(CpuId(64)));
        assert!(one.try_insert(CpuId(63)));
        assert_eq!(one.next(CpuId(63)), None);
        assert_eq!(one.to_string(), "63");
        let mut runs = CpuSet::EMPTY;
        runs.or_word(1, 0b1010);
        assert_eq!(runs.to_string(), "65,67");
        runs.clear_word(1, 0b10);
        assert_eq!(runs.to_string(), "67");
    }

    proptest::proptest! {
        /// A narrow set and the head of a wide one agree on every operation.
        #[test]
        fn narrow_matches_wide(a in proptest::collection::vec(0u16..256, 0..40),
                               b in proptest::collection::vec(0u16..256, 0..40)) {
            let (wa, wb) = (set(&a), set(&b));
            let (na, nb): (BitSet<4>, BitSet<4>) = (wa.head(), wb.head());
            let wide = |s: BitSet<4>| s.iter().map(|c| c.0).collect::<Vec<_>>();
            proptest::prop_assert_eq!(wide(na.and(&nb)), wa.and(&wb).iter().map(|c| c.0).collect::<Vec<_>>());
            proptest::prop_assert_eq!(wide(na.and_not(&nb)), wa.and_not(&wb).iter().map(|c| c.0).collect::<Vec<_>>());
            proptest::prop_assert_eq!(na.first(), wa.first());
            proptest::prop_assert_eq!(na.is_empty(), wa.is_empty());
            proptest::prop_assert_eq!(na.intersects(&nb), wa.intersects(&wb));
            proptest::prop_assert_eq!(na.span(), wa.span());
        }

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

        /// An offset set holds exactly the members moved by the offset that stay in range.
        #[test]
        fn offset_moves_every_member(ids in proptest::collection::vec(0u16..1024, 0..64),
                                     delta in -1100isize..1100) {
            let moved: Vec<u16> = set(&ids)
                .iter()
                .filter_map(|c| u16::try_from(c.index() as isize + delta).ok())
                .filter(|&c| usize::from(c) < MAX_CPUS)
                .collect();
            proptest::prop_assert_eq!(set(&ids).offset(delta), set(&moved));
        }
    }
}
