//! Reading a ring of numbered slots the kernel side writes in the scheduler's `.bss.hl_fast`
//! (`src/bpf/fast_wake.bpf.h`): the framework forbids new memory mappings once it is loaded,
//! so a BPF ring buffer cannot be mapped, but its data sections are. The writer takes number
//! `n` from the ring's head, sets the slot's `seq` to 0, writes it and sets `seq` to `n + 1`;
//! a slot whose `seq` is not the one expected was overwritten before it was read (lost) or is
//! being written (read next time).

#![forbid(unsafe_code)]

use core::sync::atomic::{Ordering, fence};

/// A record with its number.
pub(crate) trait Numbered: Copy {
    /// 0 while written, `n + 1` for the `n`-th record after.
    fn seq(&self) -> u64;
}

/// Where a reader has read up to.
#[derive(Debug, Default)]
pub(crate) struct SlotReader {
    /// The number of the next record to read.
    next: u64,
}

impl SlotReader {
    /// Hands the records written before `head` and not read yet to `each` (`None` for one
    /// lost); returns how many were lost.
    pub(crate) fn drain<T: Numbered>(
        &mut self,
        head: u64,
        slots: &[T],
        each: &mut dyn FnMut(Option<T>),
    ) -> u64 {
        let n = slots.len() as u64;
        let mut lost = 0;
        if head.saturating_sub(self.next) > n {
            lost = head - self.next - n;
            for _ in 0..lost.min(n) {
                each(None);
            }
            self.next = head - n;
        }
        while self.next < head {
            let slot = &slots[(self.next % n) as usize];
            let seq = slot.seq();
            if seq == 0 {
                // Being written: next time.
                break;
            }
            fence(Ordering::Acquire);
            let copy = *slot;
            fence(Ordering::Acquire);
            if seq == self.next + 1 && slot.seq() == seq {
                each(Some(copy));
            } else {
                lost += 1;
                each(None);
            }
            self.next += 1;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Copy, Clone, Debug, PartialEq)]
    struct Rec(u64, u32);

    impl Numbered for Rec {
        fn seq(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn records_are_read_once_in_order_and_overwritten_ones_are_lost() {
        let mut slots = [Rec(0, 0); 4];
        let mut r = SlotReader::default();
        let mut got = Vec::new();
        for n in 0..3u64 {
            slots[n as usize] = Rec(n + 1, n as u32 * 10);
        }
        assert_eq!(r.drain(3, &slots, &mut |x| got.push(x)), 0);
        assert_eq!(got, [Some(Rec(1, 0)), Some(Rec(2, 10)), Some(Rec(3, 20))]);
        got.clear();
        // Six more written into four slots: two lost; one still being written stops the read.
        for n in 3..9u64 {
            slots[(n % 4) as usize] = Rec(n + 1, n as u32 * 10);
        }
        slots[0] = Rec(0, 0);
        assert_eq!(r.drain(9, &slots, &mut |x| got.push(x)), 2);
        assert_eq!(
            got,
            [
                None,
                None,
                Some(Rec(6, 50)),
                Some(Rec(7, 60)),
                Some(Rec(8, 70))
            ]
        );
        got.clear();
        slots[0] = Rec(9, 80);
        assert_eq!(r.drain(9, &slots, &mut |x| got.push(x)), 0);
        assert_eq!(got, [Some(Rec(9, 80))]);
    }
}
