//! Prints the bytes one instance of each limiter occupies, then those of each clockless cell
//! and of the configuration its cells share: `cargo run --example footprint`.

use std::time::Duration;

use ringlimit::cell::{
    ApproxWindowCell, BucketCell, BucketConfig, ConcurrencyCell, ConcurrencyConfig,
    FixedWindowCell, LogConfig, SlidingConfig, SlidingLogCell, SlidingWindowCell, WarmUpCell,
    WarmUpConfig, WindowConfig,
};
use ringlimit::cell::{Compact, Padded};
use ringlimit::clock::ManualClock;
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimiter, ConcurrencyQuota, FixedWindow,
    LeakyBucket, Rate, SlidingLog, SlidingWindow, TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

fn main() -> Result<(), ringlimit::ConfigError> {
    let rate = Rate::per_second(100)?;
    let second = Duration::from_secs(1);
    println!("| limiter | layout | bytes |");
    println!("|---|---|---|");
    for buckets in [1, 10, 60] {
        let padded = SlidingWindow::new(WindowQuota::per(100, second)?.buckets(buckets)?);
        let compact = SlidingWindow::builder(WindowQuota::per(100, second)?.buckets(buckets)?)
            .compact()
            .build();
        println!(
            "| SlidingWindow, {buckets} buckets | padded | {} |",
            padded.footprint()
        );
        println!(
            "| SlidingWindow, {buckets} buckets | compact | {} |",
            compact.footprint()
        );
    }
    println!(
        "| FixedWindow | padded | {} |",
        FixedWindow::new(WindowQuota::per(100, second)?).footprint()
    );
    let compact = FixedWindow::builder(WindowQuota::per(100, second)?)
        .compact()
        .build();
    println!("| FixedWindow | compact | {} |", compact.footprint());
    println!(
        "| SlidingLog, limit 100 | - | {} |",
        SlidingLog::new(WindowQuota::per(100, second)?)?.footprint()
    );
    println!(
        "| ApproxSlidingWindow | padded | {} |",
        ApproxSlidingWindow::new(WindowQuota::per(100, second)?)?.footprint()
    );
    println!(
        "| TokenBucket | padded | {} |",
        TokenBucket::new(BucketQuota::new(rate, 10)?).footprint()
    );
    let compact = TokenBucket::builder(BucketQuota::new(rate, 10)?)
        .compact()
        .build();
    println!("| TokenBucket | compact | {} |", compact.footprint());
    println!(
        "| LeakyBucket (meter or shaper) | padded | {} |",
        LeakyBucket::meter(BucketQuota::new(rate, 10)?).footprint()
    );
    println!(
        "| WarmUp | padded | {} |",
        WarmUp::new(WarmUpQuota::new(rate, second)?).footprint()
    );
    println!(
        "| ConcurrencyLimiter | padded | {} |",
        ConcurrencyLimiter::new(ConcurrencyQuota::new(10)?).footprint()
    );
    let compact = ConcurrencyLimiter::<Compact>::with_layout(ConcurrencyQuota::new(10)?);
    println!("| ConcurrencyLimiter | compact | {} |", compact.footprint());

    // Cells: the per-key state a keyed limiter holds, one configuration shared by all keys.
    let clock = ManualClock::new();
    let token = BucketConfig::token(BucketQuota::new(rate, 10)?, &clock);
    let shaper = BucketConfig::shaper(ringlimit::ShaperQuota::new(rate, second)?, &clock);
    println!();
    println!("| cell | layout | bytes |");
    println!("|---|---|---|");
    for (name, config) in [
        ("TokenBucket cell", &token),
        ("LeakyBucket cell (meter)", &token),
        ("LeakyBucket cell (shaper)", &shaper),
    ] {
        let compact = BucketCell::<Compact>::new(config);
        let padded = BucketCell::<Padded>::new(config);
        println!("| {name} | compact | {} |", compact.footprint());
        println!("| {name} | padded | {} |", padded.footprint());
    }
    println!(
        "| FixedWindow cell | compact | {} |",
        FixedWindowCell::<Compact>::new().footprint()
    );
    println!(
        "| FixedWindow cell | padded | {} |",
        FixedWindowCell::<Padded>::new().footprint()
    );
    println!(
        "| SlidingWindow cell, 10 buckets | compact | {} |",
        SlidingWindowCell::<10, Compact>::new().footprint()
    );
    println!(
        "| SlidingWindow cell, 10 buckets | padded | {} |",
        SlidingWindowCell::<10, Padded>::new().footprint()
    );
    println!(
        "| SlidingWindow cell, 4 buckets | compact | {} |",
        SlidingWindowCell::<4, Compact>::new().footprint()
    );
    println!(
        "| ApproxSlidingWindow cell | compact | {} |",
        ApproxWindowCell::<Compact>::new().footprint()
    );
    println!(
        "| ApproxSlidingWindow cell | padded | {} |",
        ApproxWindowCell::<Padded>::new().footprint()
    );
    let log = LogConfig::new(WindowQuota::per(100, second)?)?;
    println!(
        "| SlidingLog cell, limit 100 (ring of 128 included) | compact | {} |",
        SlidingLogCell::<Compact>::new(&log).footprint()
    );
    println!(
        "| SlidingLog cell, limit 100 (ring of 128 included) | padded | {} |",
        SlidingLogCell::<Padded>::new(&log).footprint()
    );
    let in_flight = ConcurrencyConfig::new(ConcurrencyQuota::new(10)?);
    println!(
        "| Concurrency cell | compact | {} |",
        ConcurrencyCell::<Compact>::with_layout(&in_flight).footprint()
    );
    println!(
        "| Concurrency cell | padded | {} |",
        ConcurrencyCell::<Padded>::with_layout(&in_flight).footprint()
    );
    let warm_up = WarmUpConfig::new(WarmUpQuota::new(rate, second)?, &clock);
    println!(
        "| WarmUp cell | compact | {} |",
        WarmUpCell::<Compact>::new(&warm_up).footprint()
    );
    println!(
        "| WarmUp cell | padded | {} |",
        WarmUpCell::<Padded>::new(&warm_up).footprint()
    );
    println!();
    println!("| shared configuration | bytes |");
    println!("|---|---|");
    println!(
        "| BucketConfig (token bucket, leaky meter or shaper) | {} |",
        token.footprint()
    );
    let window = WindowConfig::new(WindowQuota::per(100, second)?)?;
    println!(
        "| WindowConfig (fixed or approximate window) | {} |",
        window.footprint()
    );
    let sliding = SlidingConfig::<10>::new(WindowQuota::per(100, second)?)?;
    println!(
        "| SlidingConfig (sliding window of 10 buckets) | {} |",
        sliding.footprint()
    );
    println!("| LogConfig (sliding log) | {} |", log.footprint());
    println!(
        "| ConcurrencyConfig | {} |",
        std::mem::size_of_val(&in_flight)
    );
    println!("| WarmUpConfig | {} |", warm_up.footprint());
    Ok(())
}
