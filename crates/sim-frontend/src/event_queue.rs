//! The ordered event queue: a min-heap on `(time_ns, seq)`, with timers that supersede
//! themselves.
//!
//! `seq` is a counter stamped at insertion, so events due at the same nanosecond come out in
//! the order they were scheduled, on every run and every machine. Nothing else (no address, no
//! hash) takes part in the order.
//!
//! A *keyed* event is a timer: scheduling one under a key replaces the key's pending event,
//! and [`EventQueue::cancel`] drops it. A replaced entry is not searched for in the heap; it
//! stays there, marked dead by its key's current `seq`, until it reaches the top or until dead
//! entries outnumber live ones, when the heap is rebuilt without them. So the heap never holds
//! more than twice the live events (plus [`COMPACT_MIN`]), however often timers are re-armed,
//! and the order of the live events is exactly what it would be had the dead ones never been
//! scheduled.

use core::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Below this many stored entries the heap is never rebuilt: a rebuild would cost more than
/// the dead entries it frees.
pub const COMPACT_MIN: usize = 64;

/// One scheduled event and its key.
#[derive(Clone, Debug)]
struct Entry<E> {
    time_ns: u64,
    seq: u64,
    /// The timer this entry arms, if it is one.
    key: Option<usize>,
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
    /// Per timer key: the `seq` of its pending entry. Indexed by key, so keys should be small
    /// and dense (the engine uses two per CPU).
    armed: Vec<Option<u64>>,
    /// Entries in `heap` that were superseded or cancelled.
    dead: usize,
    /// The most entries `heap` ever held, dead ones included: what the queue cost in memory.
    peak_stored: usize,
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
            armed: Vec::new(),
            dead: 0,
            peak_stored: 0,
        }
    }

    /// Schedules `event` at `time_ns`. O(log n).
    pub fn push(&mut self, time_ns: u64, event: E) {
        self.insert(time_ns, None, event);
    }

    /// Arms timer `key` to fire `event` at `time_ns`, replacing the event it had pending, if
    /// any. Amortised O(log n). The table of keys grows to the largest key used.
    pub fn push_keyed(&mut self, key: usize, time_ns: u64, event: E) {
        if key >= self.armed.len() {
            self.armed.resize(key + 1, None);
        }
        if self.armed[key].is_some() {
            self.dead += 1;
        }
        self.armed[key] = Some(self.next_seq);
        self.insert(time_ns, Some(key), event);
        self.tidy();
    }

    /// Disarms timer `key`: its pending event, if any, will not come out. Amortised O(1).
    pub fn cancel(&mut self, key: usize) {
        if let Some(slot) = self.armed.get_mut(key)
            && slot.take().is_some()
        {
            self.dead += 1;
            self.tidy();
        }
    }

    /// Removes and returns the earliest live event. O(log n).
    #[must_use]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let Reverse(e) = self.heap.pop()?;
        if let Some(key) = e.key {
            self.armed[key] = None;
        }
        self.tidy();
        Some((e.time_ns, e.event))
    }

    /// Due time of the earliest live event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.time_ns)
    }

    /// Number of live pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - self.dead
    }

    /// Whether no live event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most entries the heap ever held at once, superseded ones not yet dropped included.
    pub fn peak_stored(&self) -> usize {
        self.peak_stored
    }

    fn insert(&mut self, time_ns: u64, key: Option<usize>, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry {
            time_ns,
            seq,
            key,
            event,
        }));
        self.peak_stored = self.peak_stored.max(self.heap.len());
    }

    fn is_live(armed: &[Option<u64>], e: &Entry<E>) -> bool {
        e.key.is_none_or(|k| armed[k] == Some(e.seq))
    }

    /// Keeps the top live (so `pop` and `peek_time` never see a dead entry) and rebuilds the
    /// heap once dead entries outnumber live ones.
    fn tidy(&mut self) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if Self::is_live(&self.armed, top) {
                break;
            }
            self.heap.pop();
            self.dead -= 1;
        }
        if self.dead > self.heap.len() / 2 && self.heap.len() >= COMPACT_MIN {
            let armed = &self.armed;
            self.heap.retain(|Reverse(e)| Self::is_live(armed, e));
            self.dead = 0;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn drain<E>(q: &mut EventQueue<E>) -> Vec<(u64, E)> {
        core::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn earliest_first_and_ties_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(10, "c");
        q.push(5, "a");
        q.push(10, "d");
        q.push(5, "b");
        q.push(0, "first");
        assert_eq!(
            drain(&mut q),
            vec![(0, "first"), (5, "a"), (5, "b"), (10, "c"), (10, "d")]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn a_timer_fires_once_with_its_last_arming() {
        let mut q = EventQueue::new();
        q.push_keyed(0, 5, "early, superseded");
        q.push(7, "plain");
        q.push_keyed(0, 9, "re-armed");
        q.push_keyed(1, 3, "cancelled");
        q.cancel(1);
        q.cancel(1);
        assert_eq!(q.len(), 2);
        assert_eq!(q.peek_time(), Some(7));
        assert_eq!(drain(&mut q), vec![(7, "plain"), (9, "re-armed")]);
        // Firing disarms: cancelling afterwards is a no-op, not a second dead entry.
        q.cancel(0);
        assert!(q.is_empty());
    }

    #[test]
    fn re_arming_keeps_the_order_of_fresh_scheduling() {
        // A timer re-armed to a time shared with a plain event comes out after it, as an
        // event scheduled at that moment would.
        let mut q = EventQueue::new();
        q.push_keyed(0, 10, 'x');
        q.push(10, 'a');
        q.push_keyed(0, 10, 'b');
        q.push(10, 'c');
        assert_eq!(drain(&mut q), vec![(10, 'a'), (10, 'b'), (10, 'c')]);
    }

    #[test]
    fn storage_stays_bounded_by_live_timers() {
        // A million re-armings of 8 timers, always later than the last: without dropping dead
        // entries the heap would hold a million.
        let mut q = EventQueue::new();
        for i in 0..1_000_000u64 {
            q.push_keyed((i % 8) as usize, 1_000 + i, i);
        }
        assert_eq!(q.len(), 8);
        assert!(
            q.peak_stored() <= 2 * 8 + COMPACT_MIN,
            "{}",
            q.peak_stored()
        );
        let fired: Vec<u64> = drain(&mut q).into_iter().map(|(_, e)| e).collect();
        assert_eq!(fired, (999_992..1_000_000).collect::<Vec<_>>());
    }
}
