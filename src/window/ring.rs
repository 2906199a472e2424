//! The guarded write of a ring slot (of either width, [`Words`]), shared by the window
//! engine's rollover and the sliding-window cell's: a slot is written only while the rollover
//! it belongs to is still the one in progress.

use crate::sync::{AtomicWord, Ordering};

use super::word::Words;

/// Writes `(epoch, count)` into `slot` unless `done(the count it holds for epoch)`; gives up
/// (returning `false`) once `still()` says the rollover has moved on, when the write is
/// someone else's, done, or no longer needed. `still` must load the word that moves on (with
/// Acquire) after this loads the slot: a value loaded while the rollover stood is then the
/// only one the CAS can replace.
pub(crate) fn write<W: Words>(
    slot: &W::Atomic,
    epoch: u64,
    count: u64,
    done: impl Fn(Option<u64>) -> bool,
    still: impl Fn() -> bool,
) -> bool {
    loop {
        // Acquire: if this reads a bucket written for a later rollover, it also sees that
        // rollover's start (written before it), so `still` below gives up instead of
        // overwriting a newer bucket.
        let seen = slot.load(Ordering::Acquire);
        if !still() {
            return false;
        }
        if done(W::slot_count(seen, epoch)) {
            return true;
        }
        // Release: pairs with the Acquire slot loads (here and in readers, which the install's
        // Release CAS orders after it). A failed CAS reloads.
        if slot
            .compare_exchange(
                seen,
                W::pack_slot(epoch, count),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            return true;
        }
    }
}
