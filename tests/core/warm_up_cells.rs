//! Warm-up cells sharing one configuration (`ringlimit::cell::WarmUpCell`) against a
//! sequential model written here from Guava's definitions: the state `(next_free, cooled)`
//! under a mutex, the curve recomputed at every reconfiguration and applied to each cell at
//! its next access (the cooling means the same under every rate, so applying it lazily is
//! applying it at once). Also: Guava's examples against `WarmUp` with no reconfiguration, a
//! Unix-epoch origin, a cell untouched across 1000 rate changes, and a multi-threaded
//! stress on a frozen clock.

use std::sync::{Barrier, Mutex};
use std::time::Duration;

use ringlimit::cell::{Compact, Padded};
use ringlimit::cell::{WarmUpCell, WarmUpConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::{ExceedsLimit, Rate, Wait, WarmUp, WarmUpQuota};

use crate::common;

use common::cells::Rng;

const MS: u64 = 1_000_000;
/// Longest span (warm-up or cold interval): 2^58 ns.
const MAX_SPAN: u64 = 1 << 58;
/// Readings saturate here, ns after the origin.
const MAX_NOW: u64 = 1 << 60;
/// The last schedulable time, ns after the origin.
const MAX_NEXT_FREE: u64 = (1 << 61) - 1;

/// Guava's curve from its definitions, in the crate's order of `f64` operations.
#[derive(Debug, Clone, Copy)]
struct Curve {
    period: u64,
    threshold: f64,
    max: f64,
    slope: f64,
    cool_down: f64,
    limit: u64,
}

impl Curve {
    fn new(period: u64, warm_up: u64, factor: f64, requested: u64) -> Self {
        let stable = period as f64;
        let cold = stable * factor;
        let warm = warm_up as f64;
        let threshold = 0.5 * warm / stable;
        let max = threshold + 2.0 * warm / (stable + cold);
        Self {
            period,
            threshold,
            max,
            slope: (cold - stable) / (max - threshold),
            cool_down: warm / max,
            limit: requested.min(max_limit(period, factor)),
        }
    }

    /// The interval at `permits` above the threshold.
    fn interval(&self, permits: f64) -> f64 {
        self.period as f64 + permits * self.slope
    }

    /// What taking `take` of `stored` permits costs, each part truncated to ns as Guava does.
    fn stored_wait(&self, stored: f64, take: f64) -> u64 {
        let above = stored - self.threshold;
        let (mut take, mut wait) = (take, 0u64);
        if above > 0.0 {
            let above_take = above.min(take);
            let length = self.interval(above) + self.interval(above - above_take);
            wait = (above_take * length / 2.0) as u64;
            take -= above_take;
        }
        wait.saturating_add((self.period as f64 * take) as u64)
    }
}

fn max_limit(period: u64, factor: f64) -> u64 {
    ((MAX_SPAN as f64 / (period as f64 * factor)) as u64).max(1)
}

/// The sequential model of one cell: `(next_free, cooled)` in ns since the origin, decided
/// under the curve in force, which the shared configuration changes.
struct Model {
    state: Mutex<(u64, u64)>,
}

/// The model's configuration, shared by every model cell.
#[derive(Debug, Clone, Copy)]
struct Shared {
    warm_up: u64,
    factor: f64,
    requested: u64,
    origin: u64,
    curve: Curve,
}

impl Shared {
    fn new(period: u64, warm_up: u64, factor: f64, origin: u64) -> Self {
        Self {
            warm_up,
            factor,
            requested: u64::MAX,
            origin,
            curve: Curve::new(period, warm_up, factor, u64::MAX),
        }
    }

    fn set_rate(&mut self, period: u64) {
        self.curve = Curve::new(period, self.warm_up, self.factor, self.requested);
    }

    fn set_limit(&mut self, limit: u64) {
        assert!(limit >= 1 && limit <= max_limit(self.curve.period, self.factor));
        self.requested = limit;
        self.curve.limit = limit;
    }

    fn now(&self, reading: u64) -> u64 {
        reading.saturating_sub(self.origin).min(MAX_NOW)
    }

    fn end(&self) -> u64 {
        MAX_NEXT_FREE.min(u64::MAX - self.origin)
    }

    /// Stored permits worth `cooled` ns of cooling.
    fn stored(&self, cooled: u64) -> f64 {
        if cooled >= self.warm_up {
            self.curve.max
        } else {
            (cooled as f64 / self.curve.cool_down).min(self.curve.max)
        }
    }
}

impl Model {
    fn new(shared: &Shared) -> Self {
        Self {
            state: Mutex::new((0, shared.warm_up)),
        }
    }

    fn resynced(shared: &Shared, (next_free, cooled): (u64, u64), now: u64) -> (u64, u64) {
        if now > next_free {
            (now, (cooled + (now - next_free)).min(shared.warm_up))
        } else {
            (next_free, cooled)
        }
    }

    fn decide(&self, shared: &Shared, reading: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        let curve = &shared.curve;
        let now = shared.now(reading);
        let mut state = self.state.lock().unwrap();
        let free = |next_free: u64| if next_free <= now { curve.limit } else { 0 };
        if n > curve.limit {
            return Err(ExceedsLimit {
                requested: n,
                limit: curve.limit,
            });
        }
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: free(state.0),
            });
        }
        let (next_free, cooled) = Self::resynced(shared, *state, now);
        if next_free > now {
            // Readings stand still at `MAX_NOW`: busy past it is busy for ever.
            let retry_after = if next_free > MAX_NOW {
                Duration::MAX
            } else {
                Duration::from_nanos(next_free - now)
            };
            return Ok(Decision::Refused {
                available: 0,
                retry_after,
            });
        }
        let stored = shared.stored(cooled);
        let spend = (n as f64).min(stored);
        let fresh = n as f64 - spend;
        let wait = curve
            .stored_wait(stored, spend)
            .saturating_add((fresh * curve.period as f64) as u64);
        match next_free.checked_add(wait).filter(|&t| t <= shared.end()) {
            None => Ok(Decision::Refused {
                available: 0,
                retry_after: Duration::MAX,
            }),
            Some(next) => {
                let left = stored - spend;
                let cooled = if left >= curve.max {
                    shared.warm_up
                } else {
                    ((left * curve.cool_down).ceil() as u64).min(shared.warm_up)
                };
                *state = (next, cooled);
                Ok(Decision::Admitted {
                    remaining: free(next),
                })
            }
        }
    }

    fn available(&self, shared: &Shared, reading: u64) -> u64 {
        let state = self.state.lock().unwrap();
        if state.0 <= shared.now(reading) {
            shared.curve.limit
        } else {
            0
        }
    }

    fn stored_permits(&self, shared: &Shared, reading: u64) -> f64 {
        let state = *self.state.lock().unwrap();
        shared.stored(Self::resynced(shared, state, shared.now(reading)).1)
    }
}

fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

fn quota(period: u64, warm_up: u64, factor: f64) -> WarmUpQuota {
    WarmUpQuota::new(every(period), Duration::from_nanos(warm_up))
        .unwrap()
        .cold_factor(factor)
        .unwrap()
}

/// One cell's call and the model's, asserted equal.
fn same(
    cell: &WarmUpCell<Compact>,
    config: &WarmUpConfig,
    model: &Model,
    shared: &Shared,
    clock: &ManualClock,
    n: u64,
    at: &str,
) {
    let now = clock.now_nanos();
    let (got, want) = (
        cell.try_acquire_n(config, clock, n),
        model.decide(shared, now, n),
    );
    assert_eq!(got, want, "{at}: n = {n}");
}

/// `steps` random steps on three cells of one configuration against their models: clock
/// moves (forward a little or a lot, backward, to the saturated end), rate changes, limit
/// changes, and calls on a random cell (cell 2 only rarely, so it misses many changes).
fn differential(seed: u64, origin: u64, steps: usize) {
    let mut rng = Rng(seed);
    let period = 1 + rng.below(50 * MS);
    let factor = [1.0, 1.5, 3.0, 7.25][rng.below(4) as usize];
    let warm_up = 1 + rng.below(20 * period);
    let clock = ManualClock::starting_at(origin);
    let config = WarmUpConfig::new(quota(period, warm_up, factor), &clock);
    let mut shared = Shared::new(period, warm_up, factor, origin);
    let cells: Vec<WarmUpCell<Compact>> = (0..3).map(|_| WarmUpCell::new(&config)).collect();
    let models: Vec<Model> = (0..3).map(|_| Model::new(&shared)).collect();
    for step in 0..steps {
        match rng.below(30) {
            0 => clock.set_nanos(clock.now_nanos().saturating_sub(rng.below(2 * period))),
            1 => clock.advance_nanos(warm_up << rng.below(4)),
            2 if rng.below(10) == 0 => clock.set_nanos(u64::MAX - rng.below(period)),
            3..=12 => clock.advance_nanos(rng.below(2 * period)),
            _ => {}
        }
        let now = clock.now_nanos();
        let at = format!("seed {seed}, step {step} at {now} (T {period}, W {warm_up}, c {factor})");
        match rng.below(12) {
            0 => {
                let period = 1 + rng.below(50 * MS);
                config.set_rate(every(period)).unwrap();
                shared.set_rate(period);
                continue;
            }
            1 => {
                let limit = 1 + rng.below(5);
                config.set_limit(limit).unwrap();
                shared.set_limit(limit);
                continue;
            }
            _ => {}
        }
        let i = match rng.below(20) {
            0 => 2,
            r => (r % 2) as usize,
        };
        let (cell, model) = (&cells[i], &models[i]);
        let limit = config.limit();
        assert_eq!(limit, shared.curve.limit, "{at}: limit");
        match rng.below(6) {
            0 => assert_eq!(
                cell.available(&config, &clock),
                model.available(&shared, now),
                "{at}: available of cell {i}"
            ),
            1 => assert_eq!(
                cell.stored_permits(&config, &clock).to_bits(),
                model.stored_permits(&shared, now).to_bits(),
                "{at}: stored permits of cell {i}"
            ),
            2 => assert_eq!(
                cell.try_acquire(&config, &clock),
                model.decide(&shared, now, 1).unwrap().is_admitted(),
                "{at}: try_acquire on cell {i}"
            ),
            _ => {
                let n = [0, 1, 2, 3, limit, limit + 1, u64::MAX][rng.below(7) as usize];
                same(
                    cell,
                    &config,
                    model,
                    &shared,
                    &clock,
                    n,
                    &format!("{at}, cell {i}"),
                );
            }
        }
    }
}

#[test]
fn cells_match_the_model_under_random_operations() {
    for seed in 1..=40 {
        differential(seed, 0, 3000);
    }
}

#[test]
fn cells_match_the_model_at_a_unix_epoch_origin() {
    for seed in 41..=60 {
        differential(seed, 1_760_000_000_000_000_000, 3000);
    }
}

/// Guava's `RateLimiterTest.testWarmUp` on a cell: `acquire()` is a refusal's `retry_after`
/// slept on the manual clock, then the admission.
fn guava_acquire(cell: &WarmUpCell<Compact>, config: &WarmUpConfig, clock: &ManualClock) -> u64 {
    let decision = cell.try_acquire_n(config, clock, 1).unwrap();
    if decision.is_admitted() {
        return 0;
    }
    clock.sleep(decision.retry_after());
    assert!(cell.try_acquire(config, clock));
    decision.retry_after().as_nanos() as u64
}

/// Without reconfiguration a cell decides exactly as `WarmUp` on Guava's examples, whose
/// values are all exact in `f64`: the cell's rounding to whole ns of cooling changes nothing.
fn guava_test_warm_up(origin: u64) {
    let cold = [0, 1375, 1125, 875, 625, 500, 500, 500].map(|ms| ms * MS);
    let clock = ManualClock::starting_at(origin);
    let quota = WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap();
    let config = WarmUpConfig::new(quota, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let limiter_clock = ManualClock::starting_at(origin);
    let limiter = WarmUp::builder(quota).clock(limiter_clock.clone()).build();
    let mut rounds = Vec::new();
    let mut both = |sleep_ms: u64| {
        clock.sleep(Duration::from_millis(sleep_ms));
        limiter_clock.sleep(Duration::from_millis(sleep_ms));
        let cell_waits: Vec<u64> = (0..8)
            .map(|_| guava_acquire(&cell, &config, &clock))
            .collect();
        let limiter_waits: Vec<u64> = (0..8)
            .map(|_| limiter.acquire().as_nanos() as u64)
            .collect();
        assert_eq!(cell_waits, limiter_waits, "round {}", rounds.len());
        assert_eq!(
            cell.stored_permits(&config, &clock).to_bits(),
            limiter.stored_permits().to_bits()
        );
        rounds.push(cell_waits);
    };
    both(0);
    both(4500); // repay the last acquire, then cold again
    both(2500); // repay, then 2 s: not cold
    assert_eq!(rounds[0], cold);
    assert_eq!(rounds[1], cold);
    let mut half_warm = [500 * MS; 8];
    half_warm[0] = 0;
    assert_eq!(rounds[2], half_warm);
}

#[test]
fn without_reconfiguration_a_cell_is_warm_up_on_guavas_examples() {
    guava_test_warm_up(0);
}

#[test]
fn guavas_examples_hold_at_a_unix_epoch_origin() {
    guava_test_warm_up(1_760_000_000_000_000_000);
}

#[test]
fn the_doc_example_waits_and_guavas_set_rate() {
    let clock = ManualClock::new();
    let quota = WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap();
    let config = WarmUpConfig::new(quota, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let waits: Vec<u64> = (0..6)
        .map(|_| guava_acquire(&cell, &config, &clock) / MS)
        .collect();
    assert_eq!(waits, [0, 1375, 1125, 875, 625, 500]);
    // WarmUp's `set_rate_scales_stored_permits_like_guava`, on a fresh cell of the same
    // configuration: 6 permits, 5 s, 2 stored; a rate of 4/s doubles max and them.
    let cell = WarmUpCell::<Compact>::new(&config);
    let start = clock.now_nanos();
    assert!(cell
        .try_acquire_n(&config, &clock, 6)
        .unwrap()
        .is_admitted());
    clock.set_nanos(start + 5_000 * MS);
    assert_eq!(cell.stored_permits(&config, &clock), 2.0);
    config.set_rate(Rate::per_second(4).unwrap()).unwrap();
    assert_eq!(cell.stored_permits(&config, &clock), 4.0);
    assert_eq!(cell.available(&config, &clock), config.limit());
    assert!(cell
        .try_acquire_n(&config, &clock, 5)
        .unwrap()
        .is_admitted());
    assert_eq!(
        cell.try_acquire_n(&config, &clock, 1)
            .unwrap()
            .retry_after(),
        Duration::from_millis(1250)
    );
}

/// Many cells share one configuration; `set_rate` runs 1000 times (and `set_limit` now and
/// then) while cell 0 sits untouched and the others keep deciding; then cell 0 decides
/// exactly as its model, whose curve is simply the last one (the 8-bit label has wrapped
/// three times meanwhile).
#[test]
fn a_cell_untouched_across_1000_set_rates_decides_as_the_model() {
    let mut rng = Rng(7);
    let (period, warm_up, factor) = (10 * MS, 3_000 * MS, 3.0);
    let clock = ManualClock::starting_at(12_345);
    let config = WarmUpConfig::new(quota(period, warm_up, factor), &clock);
    let mut shared = Shared::new(period, warm_up, factor, 12_345);
    let cells: Vec<WarmUpCell<Compact>> = (0..8).map(|_| WarmUpCell::new(&config)).collect();
    let models: Vec<Model> = (0..8).map(|_| Model::new(&shared)).collect();
    // Cell 0 half spent, so its cooling is neither 0 nor W.
    same(&cells[0], &config, &models[0], &shared, &clock, 70, "setup");
    clock.advance_nanos(900 * MS);
    for round in 0..1000 {
        let period = 1 + rng.below(20 * MS);
        config.set_rate(every(period)).unwrap();
        shared.set_rate(period);
        if round % 97 == 0 {
            let limit = 1 + rng.below(50);
            config.set_limit(limit).unwrap();
            shared.set_limit(limit);
        }
        clock.advance_nanos(rng.below(period));
        let i = 1 + rng.below(7) as usize;
        same(
            &cells[i],
            &config,
            &models[i],
            &shared,
            &clock,
            1 + rng.below(3),
            "others",
        );
    }
    let now = clock.now_nanos();
    assert_eq!(
        cells[0].stored_permits(&config, &clock).to_bits(),
        models[0].stored_permits(&shared, now).to_bits()
    );
    for step in 0..200 {
        let n = 1 + rng.below(config.limit());
        same(
            &cells[0],
            &config,
            &models[0],
            &shared,
            &clock,
            n,
            &format!("cell 0, {step}"),
        );
        clock.advance_nanos(rng.below(3 * shared.curve.period));
    }
}

/// A padded cell decides as a compact one.
#[test]
fn layouts_decide_alike() {
    let clock = ManualClock::new();
    let config = WarmUpConfig::new(quota(MS, 50 * MS, 3.0), &clock);
    let (padded, compact) = (
        WarmUpCell::<Padded>::new(&config),
        WarmUpCell::<Compact>::new(&config),
    );
    for step in 0..500u64 {
        clock.advance_nanos(step * 37_000 % (3 * MS));
        let n = 1 + step % 4;
        assert_eq!(
            padded.try_acquire_n(&config, &clock, n),
            compact.try_acquire_n(&config, &clock, n)
        );
    }
}

/// Threads hammer a few cells on a frozen clock while another changes the rate. At each
/// frozen reading a free cell admits exactly one call (the model's first caller moves
/// `next_free` past the reading; nobody else can go), a busy one none; and afterwards the
/// cell is in the state the model reaches by admitting that call under the rate in force
/// before or after the change: never a mix.
#[test]
fn threads_never_admit_more_than_the_model_on_a_frozen_clock() {
    const CELLS: usize = 3;
    const THREADS: usize = 3;
    let (period, warm_up, factor) = (2 * MS, 40 * MS, 3.0);
    let clock = ManualClock::new();
    let config = WarmUpConfig::new(quota(period, warm_up, factor), &clock);
    let mut shared = Shared::new(period, warm_up, factor, 0);
    let cells: Vec<WarmUpCell<Compact>> = (0..CELLS).map(|_| WarmUpCell::new(&config)).collect();
    let models: Vec<Model> = (0..CELLS).map(|_| Model::new(&shared)).collect();
    let mut rng = Rng(99);
    for phase in 0..2000u64 {
        clock.advance_nanos(rng.below(3 * period));
        let now = clock.now_nanos();
        let before = shared;
        let new_period = MS / 2 + rng.below(4 * MS);
        let start = Barrier::new(THREADS + 1);
        let admitted: Vec<Vec<Vec<u64>>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (cells, config, clock, start) = (&cells, &config, &clock, &start);
                    s.spawn(move || {
                        let mut won = vec![Vec::new(); CELLS];
                        start.wait();
                        for k in 0..40u64 {
                            // All threads on the same cell at first, then spread.
                            let i = ((k + t as u64 * (k / 8)) % CELLS as u64) as usize;
                            let n = 1 + (k + phase) % 3;
                            if cells[i]
                                .try_acquire_n(config, clock, n)
                                .is_ok_and(|d| d.is_admitted())
                            {
                                won[i].push(n);
                            }
                        }
                        won
                    })
                })
                .collect();
            start.wait();
            if phase % 2 == 0 {
                config.set_rate(every(new_period)).unwrap();
            }
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        if phase % 2 == 0 {
            shared.set_rate(new_period);
        }
        for i in 0..CELLS {
            let won: Vec<u64> = admitted.iter().flat_map(|w| w[i].clone()).collect();
            let free = models[i].available(&before, now) > 0;
            assert_eq!(
                won.len(),
                usize::from(free),
                "phase {phase}, cell {i}: {won:?}"
            );
            let Some(&n) = won.first() else { continue };
            // The model admits `n` under the old curve or the new one; the cell must be in
            // one of the two states.
            let start = *models[i].state.lock().unwrap();
            let outcomes: Vec<(u64, u64)> = [before, shared]
                .iter()
                .map(|curve| {
                    let model = Model {
                        state: Mutex::new(start),
                    };
                    assert!(model.decide(curve, now, n).unwrap().is_admitted());
                    model.state.into_inner().unwrap()
                })
                .collect();
            let seen = (
                cells[i]
                    .try_acquire_n(&config, &clock, 1)
                    .unwrap()
                    .retry_after(),
                cells[i].stored_permits(&config, &clock).to_bits(),
            );
            let matching: Vec<&(u64, u64)> = outcomes
                .iter()
                .filter(|&&(next_free, cooled)| {
                    let probe = Model {
                        state: Mutex::new((next_free, cooled)),
                    };
                    let retry = probe.decide(&shared, now, 1).unwrap().retry_after();
                    (retry, probe.stored_permits(&shared, now).to_bits()) == seen
                })
                .collect();
            assert!(
                !matching.is_empty(),
                "phase {phase}, cell {i}: {seen:?} is neither of {outcomes:?}"
            );
            *models[i].state.lock().unwrap() = *matching[0];
        }
    }
}
