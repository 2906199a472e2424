//! Prints the bytes one instance of each limiter occupies: `cargo run --example footprint`.

use std::time::Duration;

use ringlimit::{
    ApproxSlidingWindow, Compact, ConcurrencyLimiter, FixedWindow, LeakyBucket, Rate, SlidingLog,
    SlidingWindow, TokenBucket, WarmUp,
};

fn main() -> Result<(), ringlimit::ConfigError> {
    let rate = Rate::per_second(100)?;
    let second = Duration::from_secs(1);
    println!("| limiter | layout | bytes |");
    println!("|---|---|---|");
    for buckets in [1, 10, 60] {
        let padded = SlidingWindow::new(100, second, buckets)?;
        let compact = SlidingWindow::builder(100, second)
            .buckets(buckets)
            .compact()
            .build()?;
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
        FixedWindow::new(100, second)?.footprint()
    );
    let compact = FixedWindow::builder(100, second).compact().build()?;
    println!("| FixedWindow | compact | {} |", compact.footprint());
    println!(
        "| SlidingLog, limit 100 | - | {} |",
        SlidingLog::new(100, second)?.footprint()
    );
    println!(
        "| ApproxSlidingWindow | padded | {} |",
        ApproxSlidingWindow::new(100, second)?.footprint()
    );
    println!(
        "| TokenBucket | padded | {} |",
        TokenBucket::new(rate, 10)?.footprint()
    );
    let compact = TokenBucket::builder(rate, 10).compact().build()?;
    println!("| TokenBucket | compact | {} |", compact.footprint());
    println!(
        "| LeakyBucket (meter or shaper) | padded | {} |",
        LeakyBucket::meter(10, rate)?.footprint()
    );
    println!(
        "| WarmUp | padded | {} |",
        WarmUp::new(rate, second)?.footprint()
    );
    println!(
        "| ConcurrencyLimiter | padded | {} |",
        ConcurrencyLimiter::new(10)?.footprint()
    );
    let compact = ConcurrencyLimiter::<Compact>::with_layout(10)?;
    println!("| ConcurrencyLimiter | compact | {} |", compact.footprint());
    Ok(())
}
