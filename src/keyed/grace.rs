//! [`Grace`]: the keyed table's grace periods. A reader of the table is *pinned* from before
//! it loads a slot's tag until it is done with the slot's cell; a sweep that marked slots
//! retiring waits, with [`Grace::synchronize`], until every reader that could have loaded
//! their old tags is done, so that no reader still holds one of them when it frees them
//! ([the guide](crate::guide::keyed_table#grace-periods)).
//!
//! The counters are in two sides, as in userspace RCU's counter flavour: readers count
//! themselves on the side the epoch names; `synchronize` flips the epoch and waits until the
//! side it left counts nobody. A reader confirms the epoch after counting itself, so a
//! reader counted on the side a flip left is one the flip's wait sees.

use crossbeam_utils::CachePadded;

use crate::sync::{seq_cst_gap, spin_hint, thread_slot, AtomicU64, Ordering, READER_SLOTS};

/// Readers in the two sides of the epoch, each spread over [`READER_SLOTS`] counters.
pub(super) struct Grace {
    /// Flips (`synchronize` calls) so far; the side readers count themselves on is
    /// `epoch % 2`.
    epoch: AtomicU64,
    /// `counts[side][slot]`: readers pinned on `side` whose thread slot is `slot` (modulo
    /// [`READER_SLOTS`]), each counter on a cache line of its own.
    counts: [Box<[CachePadded<AtomicU64>]>; 2],
}

/// A pinned reader; unpins when dropped.
pub(super) struct Pin<'a> {
    count: &'a AtomicU64,
}

impl Grace {
    pub(super) fn new() -> Self {
        let side = || {
            (0..READER_SLOTS)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect()
        };
        Self {
            epoch: AtomicU64::new(0),
            counts: [side(), side()],
        }
    }

    /// Pins the calling reader until the returned guard drops.
    #[inline]
    pub(super) fn pin(&self) -> Pin<'_> {
        let slot = thread_slot() % READER_SLOTS;
        loop {
            // SeqCst (the loads and RMWs on `epoch` and the counters): the store-buffering
            // pattern between this reader (count itself, then load the epoch and the tags)
            // and `synchronize` (mark tags, flip the epoch, then load the counts) needs the
            // single total order: either the flip's wait sees this count, or this reader's
            // loads after it see the flip and the tags marked before it.
            let epoch = self.epoch.load(Ordering::SeqCst);
            let count = &self.counts[(epoch % 2) as usize][slot];
            count.fetch_add(1, Ordering::SeqCst);
            seq_cst_gap();
            // SeqCst: as above. A flip between the load and the count: this reader may be
            // counted on a side a wait already found empty, so it counts itself again on
            // the new side.
            if self.epoch.load(Ordering::SeqCst) == epoch {
                return Pin { count };
            }
            // SeqCst: as above.
            count.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Waits until every reader pinned before this call has unpinned (readers pinned after
    /// it see everything sequenced before it). One caller at a time: the table's sweep lock.
    pub(super) fn synchronize(&self) {
        // SeqCst: see `pin`.
        let left = self.epoch.fetch_add(1, Ordering::SeqCst) % 2;
        seq_cst_gap();
        for count in self.counts[left as usize].iter() {
            // SeqCst: see `pin`; the zero read also synchronizes with the unpin that wrote
            // it (every write to a count is an RMW, so a later value carries the earlier
            // ones' releases), so what a reader did to a cell before unpinning is seen by
            // the sweep after this.
            while count.load(Ordering::SeqCst) != 0 {
                spin_hint();
                #[cfg(not(loom))]
                std::thread::yield_now();
            }
        }
    }
}

impl Drop for Pin<'_> {
    #[inline]
    fn drop(&mut self) {
        // SeqCst: see `Grace::pin`; Release at least, so that the cell operations of this
        // reader happen before a `synchronize` that reads the count it leaves.
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}
