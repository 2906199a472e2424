//! Shared by the cell tests: a deterministic generator, and the differential that drives
//! window-family cells sharing one configuration against one spec per cell.

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::Spec;
use ringlimit::ExceedsLimit;

/// A small deterministic generator (xorshift64*), so failures replay.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A window-family cell bound to its shared configuration.
pub trait WindowCell {
    fn try_acquire(&self, clock: &ManualClock) -> bool;
    fn try_acquire_n(&self, clock: &ManualClock, n: u64) -> Result<Decision, ExceedsLimit>;
    fn available(&self, clock: &ManualClock) -> u64;
    /// Changes the shared configuration's limit.
    fn set_limit(&self, limit: u64);
    /// The shared configuration's limit.
    fn limit(&self) -> u64;
}

/// `steps` random steps on `cells` (one shared configuration) against `specs` (one per
/// cell), asserting every outcome matches. The clock goes backwards a little, jumps 2^32 or
/// 2^44 windows, lands just below `u64::MAX`, moves whole buckets of `width` (up to two
/// windows), or moves less than one bucket; 1 step in 10 changes the limit (for every spec at
/// once); the others call `available`, `try_acquire` or `try_acquire_n` for `n` in
/// `{0, 1, 2, 3, limit, limit + 1, u64::MAX}` on a random cell.
pub fn differential(
    rng: &mut Rng,
    window: u64,
    width: u64,
    cells: &[&dyn WindowCell],
    specs: &mut [&mut dyn Spec],
    steps: usize,
    context: &str,
) {
    let clock = ManualClock::new();
    clock.set_nanos(rng.below(2) << 61);
    for step in 0..steps {
        match rng.below(40) {
            0 | 1 => clock.set_nanos(clock.now_nanos().saturating_sub(rng.below(2 * window))),
            2 | 3 => clock.advance_nanos(window << (32 + 12 * rng.below(2))),
            4 => clock.set_nanos(u64::MAX - rng.below(3 * window)),
            5..=12 => clock.advance_nanos(width * rng.below(2 * window / width + 2)),
            _ => clock.advance_nanos(rng.below(width.max(2))),
        }
        let now = clock.now_nanos();
        let at = format!("{context} step {step} at {now}");
        if rng.below(10) == 0 {
            let limit = 1 + rng.below(6);
            cells[0].set_limit(limit);
            specs
                .iter_mut()
                .for_each(|s| s.set_limit(now, limit).unwrap());
            continue;
        }
        let i = rng.below(cells.len() as u64) as usize;
        let (cell, spec) = (cells[i], &mut specs[i]);
        let limit = cell.limit();
        let n = [0, 1, 2, 3, limit, limit + 1, u64::MAX][rng.below(7) as usize];
        if rng.below(5) == 0 {
            let (got, want) = (cell.available(&clock), spec.available(now));
            assert_eq!(got, want, "{at}: available of cell {i}");
        } else if n == 1 && rng.below(2) == 0 {
            let (got, want) = (cell.try_acquire(&clock), spec.decide(now, 1).unwrap());
            assert_eq!(got, want.is_admitted(), "{at}: try_acquire on cell {i}");
        } else {
            let (got, want) = (cell.try_acquire_n(&clock, n), spec.decide(now, n));
            assert_eq!(got, want, "{at}: n = {n} on cell {i}");
        }
    }
}

/// [`differential`] over `cells`, all sharing `config`, against `specs` (one per cell), from
/// the generator seeded with `seed`.
#[allow(clippy::too_many_arguments)]
pub fn against_specs<C, K, S: Spec>(
    seed: u64,
    window: u64,
    width: u64,
    config: &C,
    cells: &[K],
    specs: &mut [S],
    steps: usize,
    context: &str,
) where
    for<'a> Bound<'a, C, &'a K>: WindowCell,
{
    let bound: Vec<Bound<'_, C, &K>> = cells.iter().map(|cell| Bound { config, cell }).collect();
    differential(
        &mut Rng(seed),
        window,
        width,
        &bound
            .iter()
            .map(|b| b as &dyn WindowCell)
            .collect::<Vec<_>>(),
        &mut specs
            .iter_mut()
            .map(|s| s as &mut dyn Spec)
            .collect::<Vec<_>>(),
        steps,
        &format!("{context}, seed {seed}"),
    );
}

/// A cell paired with the configuration it shares, for [`differential`].
pub struct Bound<'a, C, K> {
    pub config: &'a C,
    pub cell: K,
}

/// Binds each window-family cell type to its configuration type (the methods are the same).
macro_rules! bind {
    ($(impl[$($generics:tt)*] $config:ty => $cell:ty;)*) => {$(
        impl<$($generics)*> WindowCell for Bound<'_, $config, $cell> {
            fn try_acquire(&self, clock: &ManualClock) -> bool {
                self.cell.try_acquire(self.config, clock)
            }
            fn try_acquire_n(&self, clock: &ManualClock, n: u64) -> Result<Decision, ExceedsLimit> {
                self.cell.try_acquire_n(self.config, clock, n)
            }
            fn available(&self, clock: &ManualClock) -> u64 {
                self.cell.available(self.config, clock)
            }
            fn set_limit(&self, limit: u64) {
                self.config.set_limit(limit).unwrap();
            }
            fn limit(&self) -> u64 {
                self.config.limit()
            }
        }
    )*};
}

use ringlimit::cell::Compact;
use ringlimit::cell::{
    ApproxWindowCell, FixedWindowCell, LogConfig, SlidingConfig, SlidingLogCell, SlidingWindowCell,
    WindowConfig,
};

bind! {
    impl[] WindowConfig => &FixedWindowCell<Compact>;
    impl[] WindowConfig => &ApproxWindowCell<Compact>;
    impl[const B: usize] SlidingConfig<B> => &SlidingWindowCell<B, Compact>;
    impl[] LogConfig => &SlidingLogCell<Compact>;
}
