//! A stack allocator with a 32-bit counter (spec §2.5, Celeritas `StackAllocator`): many
//! workers claim slots with one atomic add; a claim past the capacity fails, and the first
//! failing claim puts the counter back to the true number of allocated slots. Clearing and
//! reading the size happen between iterations, never during allocation.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct StackAllocator<T> {
    /// Slot i is written only by the claim that received index i (the atomic counter hands
    /// each index out once between two `drain`s), and read only by `drain`, which takes
    /// `&mut self`, i.e. runs after all claims of the iteration have finished.
    slots: Box<[UnsafeCell<T>]>,
    size: AtomicU32,
}

// SAFETY: concurrent `push`es write disjoint slots (unique indices from the atomic counter);
// reads happen in `drain` under exclusive access. T itself moves between threads, hence Send.
unsafe impl<T: Send> Sync for StackAllocator<T> {}

impl<T: Copy + Default> StackAllocator<T> {
    #[must_use]
    pub fn new(capacity: u32) -> Self {
        Self {
            slots: (0..capacity).map(|_| UnsafeCell::new(T::default())).collect(),
            size: AtomicU32::new(0),
        }
    }

    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Store `value` in a new slot; `None` when the stack is full (the caller retries later).
    pub fn push(&self, value: T) -> Option<u32> {
        let cap = self.capacity();
        let start = self.size.fetch_add(1, Ordering::Relaxed);
        if start >= cap {
            if start == cap {
                // The first overflowing claim restores the true size (later ones see it ≥ cap).
                self.size.store(cap, Ordering::Relaxed);
            }
            return None;
        }
        // SAFETY: `start` was handed out to this call alone (see the field comment).
        unsafe { *self.slots[start as usize].get() = value };
        Some(start)
    }

    /// Allocated slots (call between iterations).
    #[must_use]
    pub fn len(&self) -> u32 {
        self.size.load(Ordering::Relaxed).min(self.capacity())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored values, in slot order (between iterations: needs exclusive access).
    pub fn drain(&mut self) -> Vec<T> {
        let n = self.len() as usize;
        let out = self.slots[..n].iter_mut().map(|c| *c.get_mut()).collect();
        self.size.store(0, Ordering::Relaxed);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn overflow_fails_cleanly_and_keeps_the_true_size() {
        let mut s = StackAllocator::new(100);
        let ok: usize = (0..250u32).into_par_iter().map(|i| usize::from(s.push(i).is_some())).sum();
        assert_eq!(ok, 100);
        assert_eq!(s.len(), 100);
        let mut v = s.drain();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 100);
        assert!(s.is_empty());
    }
}
