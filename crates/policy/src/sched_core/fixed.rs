//! A fixed-capacity queue: the core's batch and outgoing dispatches, without allocation.

/// A fixed-capacity queue (no allocation).
#[derive(Clone, Debug)]
pub(super) struct Fixed<T: Copy, const N: usize> {
    items: [Option<T>; N],
    head: usize,
    pub(super) len: usize,
}

impl<T: Copy, const N: usize> Fixed<T, N> {
    /// How many items it holds.
    pub(super) const fn len(&self) -> usize {
        self.len
    }

    /// The `i`-th item from the front.
    pub(super) fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        self.items[(self.head + i) % N]
    }

    /// Where the next push goes.
    pub(super) const fn tail(&self) -> usize {
        (self.head + self.len) % N
    }

    pub(super) const fn new() -> Self {
        Self {
            items: [None; N],
            head: 0,
            len: 0,
        }
    }

    pub(super) fn push(&mut self, item: T) -> Result<(), T> {
        if self.len == N {
            return Err(item);
        }
        self.items[(self.head + self.len) % N] = Some(item);
        self.len += 1;
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let item = self.items[self.head].take();
        self.head = (self.head + 1) % N;
        self.len -= 1;
        item
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        let (head, len) = (self.head, self.len);
        self.items
            .iter()
            .enumerate()
            .filter(move |(i, _)| (i + N - head) % N < len)
            .filter_map(|(_, item)| item.as_ref())
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let (head, len) = (self.head, self.len);
        self.items
            .iter_mut()
            .enumerate()
            .filter(move |(i, _)| (i + N - head) % N < len)
            .filter_map(|(_, item)| item.as_mut())
    }
}
