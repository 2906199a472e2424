//! [`Slot`]: one warm-up configuration ([`Config`]) in atomics, field by field, for the
//! shared configuration's epoch ring.

use crate::sync::{atomic, AtomicU64, Ordering};

use super::curve::Config;
use super::word::State;

/// One [`Config`], field by field (`f64`s as bits). Its `epoch` is loaded first and stored
/// last, so a reader can use it as a seqlock stamp (the shared configuration does).
pub(crate) struct Slot {
    /// The reconfiguration count of the configuration held.
    epoch: AtomicU64,
    period: AtomicU64,
    threshold: AtomicU64,
    max: AtomicU64,
    slope: AtomicU64,
    cool_down: AtomicU64,
    warm_up: AtomicU64,
    limit: AtomicU64,
    /// `full_one`'s wait (its `next_free`) and cooling left.
    full_wait: AtomicU64,
    full_cooled: AtomicU64,
}

impl Slot {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            epoch: atomic(config.epoch),
            period: atomic(config.period),
            threshold: atomic(config.threshold.to_bits()),
            max: atomic(config.max.to_bits()),
            slope: atomic(config.slope.to_bits()),
            cool_down: atomic(config.cool_down.to_bits()),
            warm_up: atomic(config.warm_up),
            limit: atomic(config.limit),
            full_wait: atomic(config.full_one.next_free),
            full_cooled: atomic(config.full_one.cooled),
        }
    }

    /// The epoch field alone, loaded with `order` (the caller's reason).
    #[inline]
    pub(crate) fn epoch(&self, order: Ordering) -> u64 {
        self.epoch.load(order)
    }

    /// Stores `epoch` alone with `order` (the caller's reason): a stamp that no reader
    /// waits for marks the slot as being rewritten.
    pub(crate) fn set_epoch(&self, epoch: u64, order: Ordering) {
        self.epoch.store(epoch, order);
    }

    /// Reads the configuration, every field with `order` (the caller's reason), the epoch
    /// first.
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> Config {
        Config {
            epoch: self.epoch.load(order),
            period: self.period.load(order),
            threshold: f64::from_bits(self.threshold.load(order)),
            max: f64::from_bits(self.max.load(order)),
            slope: f64::from_bits(self.slope.load(order)),
            cool_down: f64::from_bits(self.cool_down.load(order)),
            warm_up: self.warm_up.load(order),
            limit: self.limit.load(order),
            full_one: State {
                next_free: self.full_wait.load(order),
                cooled: self.full_cooled.load(order),
            },
        }
    }

    /// Writes the configuration, every field with `order` (the caller's reason), the epoch
    /// last.
    pub(crate) fn store(&self, config: &Config, order: Ordering) {
        self.period.store(config.period, order);
        self.threshold.store(config.threshold.to_bits(), order);
        self.max.store(config.max.to_bits(), order);
        self.slope.store(config.slope.to_bits(), order);
        self.cool_down.store(config.cool_down.to_bits(), order);
        self.warm_up.store(config.warm_up, order);
        self.limit.store(config.limit, order);
        self.full_wait.store(config.full_one.next_free, order);
        self.full_cooled.store(config.full_one.cooled, order);
        self.epoch.store(config.epoch, order);
    }
}
