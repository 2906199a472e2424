//! Prints the bytes one instance of each limiter occupies: `cargo run --example footprint`.

use std::time::Duration;

use ringlimit::{ApproxSlidingWindow, FixedWindow, SlidingLog, SlidingWindow};

fn main() -> Result<(), ringlimit::ConfigError> {
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
    Ok(())
}
