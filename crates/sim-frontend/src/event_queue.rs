//! The ordered event queue: a min-heap on `(time_ns, seq)`.
//!
//! `seq` is a counter stamped at insertion, so events due at the same nanosecond come out in
//! the order they were scheduled, on every run and every machine. Nothing else (no address, no
//! hash) takes part in the order.

use core::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds since the start of the replay.
pub type TimeNs = u64;

/// One scheduled event and its key.
#[derive(Clone, Debug)]
struct Entry<E> {
    time_ns: TimeNs,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time_ns, self.seq) == (other.time_ns, other.seq)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Orders by key only: `seq` is unique, so the payload never decides.
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time_ns, self.seq).cmp(&(other.time_ns, other.seq))
    }
}

/// Events of type `E` ordered by due time, then by insertion.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time_ns`. O(log n).
    pub fn push(&mut self, time_ns: TimeNs, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry {
            time_ns,
            seq,
            event,
        }));
    }

    /// Removes and returns the earliest event. O(log n).
    #[must_use]
    pub fn pop(&mut self) -> Option<(TimeNs, E)> {
        self.heap.pop().map(|Reverse(e)| (e.time_ns, e.event))
    }

    /// Due time of the earliest event.
    pub fn peek_time(&self) -> Option<TimeNs> {
        self.heap.peek().map(|Reverse(e)| e.time_ns)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(10, "c");
        q.push(5, "a");
        q.push(10, "d");
        q.push(5, "b");
        q.push(0, "first");
        let order: Vec<_> = core::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(0, "first"), (5, "a"), (5, "b"), (10, "c"), (10, "d")]
        );
        assert!(q.is_empty());
    }
}
