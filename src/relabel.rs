//! Relabel, then decide: the call loop of the cells labelled with a configuration epoch
//! ([`FixedWindowCell`](crate::cell::FixedWindowCell) and
//! [`ApproxWindowCell`](crate::cell::ApproxWindowCell) with a [`WindowConfig`],
//! [`WarmUpCell`](crate::cell::WarmUpCell) with its own): one 128-bit word, relabelled (and
//! moved to the reading's window) in its own CAS before any decision. The argument:
//! [the guide](crate::guide::window#cells-and-a-shared-configuration).

use crate::sync::{AtomicU128, Backoff, Ordering, RETRY_STEP};

use crate::window::WindowConfig;

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
pub(crate) fn swap<S: Packed>(word: &AtomicU128, from: u128, to: S) -> Result<u128, u128> {
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
    run_with(
        word,
        || config.epoch_and_limit(),
        |state, (epoch, limit)| settle(state, epoch, limit),
        |state, x| decide(state, x).map(|next| (next, done(next, x))),
    )
}

/// [`run`] for any configuration: `current()` loads the configuration in force (after the
/// word, each time round), `settle(state, current)` relabels the state for it (and returns
/// what the decision needs), and `decide` returns `Ok((next, result))` to write `next` in
/// one CAS and then return `result`, or `Err(result)` to return once the word is confirmed
/// unchanged. The warm-up cell's loop too.
#[inline]
pub(crate) fn run_with<S: Packed, K, X, R>(
    word: &AtomicU128,
    current: impl FnMut() -> K,
    settle: impl FnMut(S, K) -> (S, X),
    decide: impl FnMut(S, &X) -> Result<(S, R), R>,
) -> R {
    run_from(word, load(word), current, settle, decide)
}

/// [`run_with`] from a word the caller has already loaded (with [`load`]).
#[inline]
pub(crate) fn run_from<S: Packed, K, X, R>(
    word: &AtomicU128,
    loaded: u128,
    mut current: impl FnMut() -> K,
    mut settle: impl FnMut(S, K) -> (S, X),
    mut decide: impl FnMut(S, &X) -> Result<(S, R), R>,
) -> R {
    let mut current_word = loaded;
    let mut backoff: Option<Backoff> = None;
    loop {
        let state = S::unpack(current_word);
        let (settled, x) = settle(state, current());
        if settled != state {
            match swap(word, current_word, settled) {
                Ok(next) | Err(next) => current_word = next,
            }
            continue;
        }
        match decide(state, &x) {
            Ok((next, result)) => match swap(word, current_word, next) {
                Ok(_) => return result,
                Err(_) => {
                    // A lost CAS: back off before the retry (`sync::Backoff`, from
                    // `RETRY_STEP`; built only now, so the uncontended first try pays
                    // nothing), then decide from a fresh load (what the failed CAS observed
                    // is old by then). Retrying at once keeps warm-up below a mutex at 2 to 8
                    // threads; `RETRY_STEP` puts it above (`cargo run --release --example
                    // compare -- --only warm_up,allow`; figures: docs/BENCHMARKS.md, Backoff
                    // and retry tuning). Measured on warm-up only: the keyed fixed and
                    // approximate cells take it unmeasured (the bucket cell retries at once,
                    // see `bucket::cell`).
                    backoff
                        .get_or_insert_with(|| Backoff::starting_at(RETRY_STEP))
                        .spin();
                    current_word = load(word);
                }
            },
            Err(result) => {
                let again = load(word);
                if again == current_word {
                    return result;
                }
                current_word = again;
            }
        }
    }
}
