//! The sequential specification of the bucketed sliding window.

use std::collections::VecDeque;
use std::time::Duration;

use crate::config::{self, epoch_of, epochs_to_wait, until_epoch};
use crate::error::{AcquireError, ConfigError};
use crate::limiter::Decision;
use crate::spec::{trivial, Spec};
use crate::window::word::{MAX_BUCKETS, MAX_LIMIT};

/// Bucketed sliding window: admit `n` at epoch `e = t / w` iff the admitted counts of
/// epochs `e-B+1 ..= e` plus `n` stay within the limit (`w = window / B`).
///
/// Time: the epoch is `max(t / w, newest epoch seen)`; `retry_after` is measured from `t`.
#[derive(Debug, Clone)]
pub struct SlidingWindowSpec {
    limit: u64,
    width: u64,
    epoch: u64,
    /// Admitted counts of epochs `epoch-B+1 ..= epoch`, oldest first.
    counts: VecDeque<u64>,
}

impl SlidingWindowSpec {
    /// `limit` permits per `window`, counted in `buckets` buckets of `window / buckets`.
    pub fn new(limit: u64, window: Duration, buckets: u64) -> Result<Self, ConfigError> {
        let width = config::bucket_nanos(window, buckets, MAX_BUCKETS)?;
        Ok(Self {
            limit: config::limit(limit, MAX_LIMIT)?,
            width,
            epoch: 0,
            counts: std::iter::repeat_n(0, buckets as usize).collect(),
        })
    }

    /// The counts of the window ending at `now`'s epoch, oldest first, and that epoch.
    fn window_at(&self, now: u64) -> (u64, VecDeque<u64>) {
        let epoch = epoch_of(now, self.width).max(self.epoch);
        let shift = (epoch - self.epoch).min(self.counts.len() as u64) as usize;
        let mut counts = self.counts.clone();
        counts.drain(..shift);
        counts.extend(std::iter::repeat_n(0, shift));
        (epoch, counts)
    }
}

impl Spec for SlidingWindowSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, AcquireError> {
        if let Some(done) = trivial(n, self.limit, || self.available(now))? {
            return Ok(done);
        }
        let (epoch, counts) = self.window_at(now);
        self.epoch = epoch;
        self.counts = counts;
        let used: u64 = self.counts.iter().sum();
        if used + n <= self.limit {
            *self.counts.back_mut().expect("at least one bucket") += n;
            return Ok(Decision::Admitted {
                remaining: self.limit - used - n,
            });
        }
        let wait = epochs_to_wait(self.counts.make_contiguous(), self.limit, n);
        Ok(Decision::Refused {
            available: self.limit.saturating_sub(used),
            retry_after: until_epoch(epoch + wait, self.width, now),
        })
    }

    fn available(&self, now: u64) -> u64 {
        let (_, counts) = self.window_at(now);
        self.limit.saturating_sub(counts.iter().sum())
    }

    fn set_limit(&mut self, limit: u64) -> Result<(), ConfigError> {
        self.limit = config::limit(limit, MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.limit
    }
}
