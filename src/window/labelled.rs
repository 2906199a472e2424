//! The call loop of the cells labelled with a [`WindowConfig`] epoch
//! ([`FixedWindowCell`](crate::cell::FixedWindowCell) and
//! [`ApproxWindowCell`](crate::cell::ApproxWindowCell)): one 128-bit word, relabelled (and
//! moved to the reading's window) in its own CAS before any decision. The argument:
//! [the guide](crate::guide::window#cells-and-a-shared-configuration).

use crate::sync::{AtomicU128, Ordering};

use super::cell::WindowConfig;

/// A cell's unpacked word.
pub(crate) trait Packed: Copy + Eq {
    fn pack(self) -> u128;
    fn unpack(word: u128) -> Self;
}

/// Loads a cell's word.
#[inline]
pub(crate) fn load(word: &AtomicU128) -> u128 {
    // Acquire: pairs with the Release CAS that wrote it; the configuration is loaded after
    // this (the guide's argument needs the order).
    word.load(Ordering::Acquire)
}

/// Moves the word from `from` to `to`; `Err(observed)` if it was not `from`.
#[inline]
fn swap<S: Packed>(word: &AtomicU128, from: u128, to: S) -> Result<u128, u128> {
    let to = to.pack();
    // Release on success: publishes this decision to the next call that loads the word.
    // Acquire on failure: as `load`.
    word.compare_exchange(from, to, Ordering::Release, Ordering::Acquire)
        .map(|_| to)
}

/// One call on a cell's `word`. For each state read, `settle(state, epoch, limit)` (the
/// configuration's, loaded after the word) returns the state relabelled with `epoch` and,
/// for a request that moves time, moved to the reading's window, with whatever the decision
/// needs (`X`). A settled state that differs is written first, in its own CAS: every call
/// that sees a new epoch (or window) writes it before deciding, so a call still deciding
/// under the old one fails its CAS and decides again. Then `decide` returns `Ok(next)` to
/// write (one CAS, retried from the observed word, then `done(next, x)`) or `Err(result)`,
/// returned once the word is confirmed unchanged.
#[inline]
pub(crate) fn run<S: Packed, X, R>(
    word: &AtomicU128,
    config: &WindowConfig,
    mut settle: impl FnMut(S, u64, u64) -> (S, X),
    mut decide: impl FnMut(S, &X) -> Result<S, R>,
    done: impl Fn(S, &X) -> R,
) -> R {
    let mut current = load(word);
    loop {
        let state = S::unpack(current);
        let (epoch, limit) = config.epoch_and_limit();
        let (settled, x) = settle(state, epoch, limit);
        if settled != state {
            match swap(word, current, settled) {
                Ok(next) | Err(next) => current = next,
            }
            continue;
        }
        match decide(state, &x) {
            Ok(next) => match swap(word, current, next) {
                Ok(_) => return done(next, &x),
                Err(observed) => current = observed,
            },
            Err(result) => {
                let again = load(word);
                if again == current {
                    return result;
                }
                current = again;
            }
        }
    }
}
