//! Review: WarmUpCell against WarmUpSpec (the f64 sequential spec), not against a model of
//! the cell's own arithmetic.

use std::time::Duration;

use ringlimit::cell::{WarmUpCell, WarmUpConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{Spec, WarmUpSpec};
use ringlimit::{Compact, Decision, Rate, WarmUpQuota};

mod common;
use common::cells::Rng;

fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

#[derive(Default, Debug)]
struct Stats {
    decisions: u64,
    mismatches: u64,
    over: u64,
    under: u64,
    max_over_ns: u64,
    max_drift_neg: i128,
    max_drift_pos: i128,
    first_over: Option<String>,
}

fn retry(d: &Decision) -> u64 {
    match d {
        Decision::Refused { retry_after, .. } => retry_after.as_nanos() as u64,
        _ => 0,
    }
}

fn run(seed: u64, origin: u64, steps: usize, reconfigure: bool, pick: &dyn Fn(&mut Rng) -> (u64, u64, f64), stats: &mut Stats) {
    let mut rng = Rng(seed);
    let (period, warm_up, factor) = pick(&mut rng);
    let Ok(q) = WarmUpQuota::new(every(period), Duration::from_nanos(warm_up)).and_then(|q| q.cold_factor(factor)) else { return };
    let clock = ManualClock::starting_at(origin);
    let config = WarmUpConfig::new(q, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let mut spec = WarmUpSpec::new(every(period), Duration::from_nanos(warm_up), factor).unwrap().starting_at(origin);
    let mut cell_nf_hint: u64 = 0; // cell retry seen last
    let mut spec_nf_hint: u64 = 0;
    for step in 0..steps {
        if reconfigure && rng.below(40) == 0 {
            let p = (period / 4).max(1) + rng.below(period * 2);
            if config.set_rate(every(p)).is_ok() {
                spec.set_rate(clock.now_nanos(), every(p)).unwrap();
            }
        }
        // choose the reading
        match rng.below(6) {
            0 => clock.set_nanos(cell_nf_hint),
            1 => clock.set_nanos(spec_nf_hint),
            2 => clock.advance_nanos(rng.below(3 * period)),
            3 => clock.advance_nanos(rng.below(warm_up / 2 + 1)),
            4 => clock.set_nanos(cell_nf_hint.min(spec_nf_hint)),
            _ => {}
        }
        let now = clock.now_nanos();
        let limit = config.limit();
        let n = 1 + rng.below(limit.min(6));
        let got = cell.try_acquire_n(&config, &clock, n).unwrap();
        let want = spec.decide(now, n).unwrap();
        stats.decisions += 1;
        if got.is_admitted() != want.is_admitted() {
            stats.mismatches += 1;
            if got.is_admitted() {
                stats.over += 1;
                let by = retry(&want);
                stats.max_over_ns = stats.max_over_ns.max(by);
                if stats.first_over.is_none() {
                    stats.first_over = Some(format!("seed {seed} step {step} T {period} W {warm_up} c {factor} n {n}: cell admits, spec refuses by {by} ns"));
                }
            } else {
                stats.under += 1;
                if stats.first_over.is_none() {
                    stats.first_over = Some(format!("UNDER seed {seed} step {step} T {period} W {warm_up} c {factor} n {n}: cell refuses by {} ns, spec admits", retry(&got)));
                }
            }
            return;
        }
        // probe next_free of both at this reading
        let c = cell.try_acquire_n(&config, &clock, 0).unwrap();
        let _ = c;
        let cr = if cell.available(&config, &clock) == 0 {
            retry(&cell.try_acquire_n(&config, &clock, 1).unwrap())
        } else {
            0
        };
        let sr = if spec.available(now) == 0 { retry(&spec.clone().decide(now, 1).unwrap()) } else { 0 };
        if cr > 0 && sr > 0 {
            let d = cr as i128 - sr as i128;
            stats.max_drift_neg = stats.max_drift_neg.min(d);
            stats.max_drift_pos = stats.max_drift_pos.max(d);
        }
        cell_nf_hint = now + cr;
        spec_nf_hint = now + sr;
    }
}

fn report(name: &str, pick: &dyn Fn(&mut Rng) -> (u64, u64, f64), origin: u64, reconfigure: bool) -> Stats {
    let mut stats = Stats::default();
    for seed in 1..=300 {
        run(seed, origin, 2000, reconfigure, pick, &mut stats);
    }
    eprintln!("{name}: {stats:#?}");
    stats
}

const MS: u64 = 1_000_000;

fn ordinary(rng: &mut Rng) -> (u64, u64, f64) {
    let period = 1 + rng.below(50 * MS);
    let factor = [1.0, 1.5, 3.0, 7.25, 2.9][rng.below(5) as usize];
    (period, 1 + rng.below(20 * period), factor)
}

fn tiny(rng: &mut Rng) -> (u64, u64, f64) {
    let period = 1 + rng.below(20);
    let factor = [1.0, 1.5, 3.0, 7.25, 10.3][rng.below(5) as usize];
    (period, 1 + rng.below(200 * period), factor)
}

fn huge_w(rng: &mut Rng) -> (u64, u64, f64) {
    let period = 1 + rng.below(1 << 40);
    let factor = [1.0, 1.5, 3.0, 7.25][rng.below(4) as usize];
    ((period), (1u64 << 58) - rng.below(1 << 50), factor)
}

#[test]
fn review_cell_vs_spec_no_reconfig() {
    let a = report("ordinary", &ordinary, 0, false);
    let b = report("tiny", &tiny, 0, false);
    let c = report("huge_w", &huge_w, 0, false);
    let d = report("ordinary unix", &ordinary, 1_760_000_000_000_000_000, false);
    assert!(a.over + b.over + c.over + d.over == 0, "over-admission vs spec");
}

#[test]
fn review_cell_vs_spec_with_set_rate() {
    let a = report("ordinary", &ordinary, 0, true);
    let b = report("tiny", &tiny, 0, true);
    let c = report("huge_w", &huge_w, 0, true);
    assert!(a.over + b.over + c.over == 0, "over-admission vs spec");
}

/// Both driven through the *same* admitted history (every call at a reading where both are
/// free), measuring how far the cell's next free time falls below the spec's.
fn drift(seed: u64, steps: usize, pick: &dyn Fn(&mut Rng) -> (u64, u64, f64), reconfigure: bool) -> (i128, String) {
    let mut rng = Rng(seed);
    let (period, warm_up, factor) = pick(&mut rng);
    let Ok(q) = WarmUpQuota::new(every(period), Duration::from_nanos(warm_up)).and_then(|q| q.cold_factor(factor)) else { return (0, String::new()) };
    let clock = ManualClock::new();
    let config = WarmUpConfig::new(q, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let mut spec = WarmUpSpec::new(every(period), Duration::from_nanos(warm_up), factor).unwrap();
    let mut worst = 0i128;
    let mut at = String::new();
    let mut p = period;
    for step in 0..steps {
        if reconfigure && rng.below(10) == 0 {
            let np = (period / 4).max(1) + rng.below(period * 2);
            if config.set_rate(every(np)).is_ok() {
                spec.set_rate(clock.now_nanos(), every(np)).unwrap();
                p = np;
            }
        }
        let now = clock.now_nanos();
        let cr = if cell.available(&config, &clock) == 0 { retry(&cell.try_acquire_n(&config, &clock, 1).unwrap()) } else { 0 };
        let sr = if spec.available(now) == 0 { retry(&spec.clone().decide(now, 1).unwrap()) } else { 0 };
        let d = cr as i128 - sr as i128;
        if d < worst {
            worst = d;
            at = format!("seed {seed} step {step} T {period} W {warm_up} c {factor}: cell next_free {d} ns vs spec");
        }
        clock.advance_nanos(cr.max(sr));
        if rng.below(4) == 0 {
            clock.advance_nanos(rng.below(2 * p));
        }
        let limit = config.limit();
        let n = 1 + rng.below(limit.min(5));
        let now = clock.now_nanos();
        assert!(cell.try_acquire_n(&config, &clock, n).unwrap().is_admitted());
        assert!(spec.decide(now, n).unwrap().is_admitted());
    }
    (worst, at)
}

#[test]
fn review_drift_same_history() {
    for (name, pick, re) in [("ordinary", &ordinary as &dyn Fn(&mut Rng) -> _, false), ("tiny", &tiny, false), ("ordinary+set_rate", &ordinary, true), ("tiny+set_rate", &tiny, true)] {
        let mut worst = (0i128, String::new());
        for seed in 1..=400 {
            let w = drift(seed, 3000, pick, re);
            if w.0 < worst.0 { worst = w; }
        }
        eprintln!("{name}: worst {worst:?}");
    }
}

#[test]
fn review_trace_seed_355() {
    let mut rng = Rng(355);
    let (period, warm_up, factor) = tiny(&mut rng);
    let q = WarmUpQuota::new(every(period), Duration::from_nanos(warm_up)).unwrap().cold_factor(factor).unwrap();
    let clock = ManualClock::new();
    let config = WarmUpConfig::new(q, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let mut spec = WarmUpSpec::new(every(period), Duration::from_nanos(warm_up), factor).unwrap();
    for step in 0..4 {
        let now = clock.now_nanos();
        let cr = if cell.available(&config, &clock) == 0 { retry(&cell.try_acquire_n(&config, &clock, 1).unwrap()) } else { 0 };
        let sr = if spec.available(now) == 0 { retry(&spec.clone().decide(now, 1).unwrap()) } else { 0 };
        eprintln!("step {step} now {now}: cell nf {} spec nf {}, stored cell {} spec {}", now + cr, now + sr, cell.stored_permits(&config, &clock), spec.stored_permits(now));
        clock.advance_nanos(cr.max(sr));
        if rng.below(4) == 0 {
            let a = rng.below(2 * period);
            eprintln!("  idle {a}");
            clock.advance_nanos(a);
        }
        let n = 1 + rng.below(config.limit().min(5));
        let now = clock.now_nanos();
        eprintln!("  take {n} at {now}: stored cell {} spec {}", cell.stored_permits(&config, &clock), spec.stored_permits(now));
        assert!(cell.try_acquire_n(&config, &clock, n).unwrap().is_admitted());
        assert!(spec.decide(now, n).unwrap().is_admitted());
    }
    eprintln!("T {period} W {warm_up} c {factor}");
}

fn cold(rng: &mut Rng) -> (u64, u64, f64) {
    let period = 1 + rng.below(1000);
    let factor = [5.0, 10.3, 20.0, 50.0, 100.0][rng.below(5) as usize];
    (period, 1 + rng.below(40 * period), factor)
}

fn drift2(seed: u64, steps: usize, pick: &dyn Fn(&mut Rng) -> (u64, u64, f64)) -> (i128, String) {
    let mut rng = Rng(seed);
    let (period, warm_up, factor) = pick(&mut rng);
    let Ok(q) = WarmUpQuota::new(every(period), Duration::from_nanos(warm_up)).and_then(|q| q.cold_factor(factor)) else { return (0, String::new()) };
    let clock = ManualClock::new();
    let config = WarmUpConfig::new(q, &clock);
    let cell = WarmUpCell::<Compact>::new(&config);
    let mut spec = WarmUpSpec::new(every(period), Duration::from_nanos(warm_up), factor).unwrap();
    let mut worst = 0i128;
    let mut at = String::new();
    let maxp = spec.stored_permits(0);
    for step in 0..steps {
        let now = clock.now_nanos();
        let cr = if cell.available(&config, &clock) == 0 { retry(&cell.try_acquire_n(&config, &clock, 1).unwrap()) } else { 0 };
        let sr = if spec.available(now) == 0 { retry(&spec.clone().decide(now, 1).unwrap()) } else { 0 };
        let d = cr as i128 - sr as i128;
        if d < worst {
            worst = d;
            at = format!("seed {seed} step {step} T {period} W {warm_up} c {factor}: cell next_free {d} ns vs spec (cell admits up to {} ns before spec)", -d);
        }
        clock.advance_nanos(cr.max(sr));
        clock.advance_nanos(rng.below(warm_up / 2 + 1));
        let n = 1 + rng.below((maxp as u64).max(1));
        let n = n.min(config.limit());
        let now = clock.now_nanos();
        assert!(cell.try_acquire_n(&config, &clock, n).unwrap().is_admitted());
        assert!(spec.decide(now, n).unwrap().is_admitted());
    }
    (worst, at)
}

#[test]
fn review_drift_cold_factors() {
    let mut worst = (0i128, String::new());
    for seed in 1..=2000 {
        let w = drift2(seed, 500, &cold);
        if w.0 < worst.0 { worst = w; }
    }
    eprintln!("cold: worst {worst:?}");
}

fn realistic(rng: &mut Rng) -> (u64, u64, f64) {
    let period = [1_000_000u64, 10_000_000, 100_000][rng.below(3) as usize];
    let factor = [3.0, 4.0, 5.0, 10.0, 20.0][rng.below(5) as usize];
    let warm_up = [1_000_000_000u64, 5_000_000_000, 60_000_000_000][rng.below(3) as usize];
    (period, warm_up, factor)
}

#[test]
fn review_drift_realistic() {
    let mut per_factor = std::collections::BTreeMap::new();
    for seed in 1..=1500 {
        let mut r = Rng(seed);
        let (_, _, f) = realistic(&mut r);
        let w = drift2(seed, 400, &realistic);
        let e = per_factor.entry(f.to_string()).or_insert((0i128, String::new()));
        if w.0 < e.0 { *e = w; }
    }
    for (f, w) in per_factor { eprintln!("c {f}: {w:?}"); }
}

fn very_cold(rng: &mut Rng) -> (u64, u64, f64) {
    let period = [1_000_000u64, 10_000_000, 100_000][rng.below(3) as usize];
    let factor = [50.0, 100.0, 1000.0][rng.below(3) as usize];
    let warm_up = period * (1 + rng.below(200));
    (period, warm_up, factor)
}

#[test]
fn review_drift_very_cold() {
    let mut worst = (0i128, String::new());
    for seed in 1..=3000 {
        let w = drift2(seed, 1000, &very_cold);
        if w.0 < worst.0 { worst = w; }
    }
    eprintln!("very cold: {worst:?}");
}

#[test]
fn review_drift_long() {
    for steps in [1000, 5000, 20000] {
        let mut worst = (0i128, String::new());
        for seed in [872u64, 1705, 440] {
            let w = drift2(seed, steps, &very_cold);
            if w.0 < worst.0 { worst = w; }
        }
        eprintln!("{steps}: {worst:?}");
    }
}
