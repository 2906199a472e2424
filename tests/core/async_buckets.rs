//! Async waits on the bucket family, under tokio's paused clock (`TokioClock` lets tokio's
//! virtual time drive the limiter): order, exact waits, and cancel-safety.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::clock::TokioClock;
use ringlimit::{BucketQuota, ShaperQuota, Wait, WarmUpQuota};
use ringlimit::{ExceedsLimit, LeakyBucket, Rate, RateLimiter, Reserve, TokenBucket, WarmUp};
use tokio::time::{timeout, Instant};

const MS: Duration = Duration::from_millis(1);

fn bucket() -> TokenBucket<TokioClock> {
    TokenBucket::builder(BucketQuota::new(Rate::per_second(10).unwrap(), 1).unwrap())
        .clock(TokioClock::new())
        .build()
}

#[tokio::test(start_paused = true)]
async fn until_ready_waits_exactly_the_schedule() {
    let bucket = bucket();
    let start = Instant::now();
    assert_eq!(bucket.until_ready().await, Duration::ZERO);
    assert_eq!(bucket.until_ready().await, MS * 100);
    assert_eq!(bucket.until_n_ready(1).await, Ok(MS * 100));
    assert_eq!(start.elapsed(), MS * 200);
    assert_eq!(
        bucket.until_n_ready(2).await,
        Err(ExceedsLimit {
            requested: 2,
            limit: 1
        }
        .into())
    );
    assert_eq!(
        start.elapsed(),
        MS * 200,
        "an impossible request does not wait"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_wait_gives_its_reservation_back() {
    let bucket = bucket();
    assert!(bucket.try_acquire());
    // This wait reserves the token due at 100 ms, then is dropped at 30 ms.
    assert!(timeout(MS * 30, bucket.until_ready()).await.is_err());
    // Its reservation was cancelled: the next caller gets the 100 ms token, not the 200 ms one.
    let next = bucket.reserve(1).unwrap();
    assert_eq!(next.delay(), MS * 70);
    next.cancel();
    assert_eq!(bucket.until_ready().await, MS * 70);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_wait_with_later_reservations_behind_it_gives_back_nothing() {
    let bucket = Arc::new(bucket());
    assert!(bucket.try_acquire());
    let first = bucket.reserve(1).unwrap(); // due at 100 ms
    let waiter = {
        let bucket = Arc::clone(&bucket);
        tokio::spawn(async move { bucket.until_ready().await })
    };
    tokio::task::yield_now().await; // the waiter reserves the 200 ms slot and sleeps
    let second = bucket.reserve(1).unwrap(); // due at 300 ms, scheduled behind the waiter
    tokio::time::advance(MS * 10).await;
    waiter.abort(); // drops the waiting future
    assert!(waiter.await.unwrap_err().is_cancelled());
    // `second` was scheduled behind the dropped reservation: giving its slot back would
    // let a newcomer share a slot with `second` (golang's rule), so nothing comes back.
    assert_eq!(first.delay(), MS * 100);
    assert_eq!(second.delay(), MS * 300);
    assert_eq!(bucket.reserve(1).unwrap().delay(), MS * 390);
}

#[tokio::test(start_paused = true)]
async fn waiters_are_served_in_arrival_order() {
    let bucket = Arc::new(bucket());
    let start = Instant::now();
    let tasks: Vec<_> = (0..5)
        .map(|i| {
            let bucket = Arc::clone(&bucket);
            tokio::spawn(async move {
                bucket.until_ready().await;
                (i, start.elapsed())
            })
        })
        .collect();
    let mut done = Vec::new();
    for task in tasks {
        done.push(task.await.unwrap());
    }
    // The current-thread runtime first polls tasks in spawn order, so each reserves in
    // that order and is woken at its own slot, 100 ms apart.
    for (i, at) in done {
        assert_eq!(at, MS * 100 * i as u32, "task {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn shaper_spaces_async_callers_and_cancels_on_drop() {
    let shaper = LeakyBucket::shaper_builder(
        ShaperQuota::new(Rate::per_second(100).unwrap(), MS * 50).unwrap(),
    )
    .clock(TokioClock::new())
    .build();
    let start = Instant::now();
    for i in 0..4u32 {
        shaper.until_ready().await;
        assert_eq!(start.elapsed(), MS * 10 * i);
    }
    // Next slot at 40 ms; a wait dropped before it gives the slot back.
    assert!(timeout(MS * 5, shaper.until_ready()).await.is_err());
    assert_eq!(shaper.reserve(1).unwrap().delay(), MS * 5);
}

#[tokio::test(start_paused = true)]
async fn warm_up_waits_follow_the_cold_schedule_and_cancel_on_drop() {
    // Guava's testWarmUp configuration: 2 per second, 4 s warm-up, cold factor 3.
    let limiter = WarmUp::builder(
        WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap(),
    )
    .clock(TokioClock::new())
    .build();
    let expected_ms = [0, 1375, 1125, 875, 625, 500, 500, 500];
    for (i, ms) in expected_ms.into_iter().enumerate() {
        assert_eq!(limiter.until_ready().await, MS * ms, "acquisition {i}");
    }
    // The next permit is due 500 ms from now; drop a wait for it half-way.
    let stored = limiter.stored_permits();
    assert!(timeout(MS * 250, limiter.until_ready()).await.is_err());
    assert_eq!(limiter.stored_permits(), stored);
    assert_eq!(limiter.reserve(1).unwrap().delay(), MS * 250);
}
