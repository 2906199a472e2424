//! A tour of the API: which limiter to use, the traits, quotas, grants, keyed limiters,
//! waits, clocks, policies, rules, metrics and the integrations, each with an example.
//!
//! ## Which one should I use?
//!
//! * **A bursty public API** ("1000 requests per minute per key, bursts welcome"): `TokenBucket`
//!   (rate plus burst, one word, cheap refusals), or `SlidingWindow` when the quota must read
//!   as "N per window". Use `SlidingLog` where the quota is contractual and must hold in every
//!   interval exactly; `FixedWindow` where 2N across a boundary is acceptable and the cheapest
//!   check wins; `ApproxSlidingWindow` for O(1) memory per key when traffic is smooth.
//! * **Smoothing writes to a database** (or any downstream that wants a steady pace):
//!   `LeakyBucket::shaper(ShaperQuota::per_second(n)?.max_wait(max_wait)?)`. Each caller is
//!   given its slot at a constant output rate and sleeps until it (`acquire()`, or `until_ready().await`); callers that
//!   would queue longer than `max_wait` are refused at once, so a backlog never grows without
//!   bound. A call may take at most `max(1, max_wait / T)` permits at once, so no call delays
//!   the next by more than `max(T, max_wait)`. `LeakyBucket::meter` is the no-queue form
//!   (refuse when full).
//! * **Cold caches, fresh JIT, a connection pool that must warm up**: `WarmUp`. After idleness
//!   it starts at a third of the rate and ramps to the full rate over the warm-up period, the
//!   schedule Guava's `RateLimiter.create(rate, warmup)` uses.
//! * **Millions of calls per second from many threads on one limit**: build the sliding or
//!   fixed window, the token bucket or the leaky meter with `.sharded()`. Each core leases small
//!   batches of permits into a core-local shard; it still never over-admits, and it
//!   under-admits at most `min(shards × (batch − 1), cap / 2)` per window bucket, or
//!   `shards × (batch − 1)` permits held at any instant for a bucket (the batch shrinks as the
//!   window fills or the bucket empties; near empty every call decides on the shared word).
//! * **Protecting a thread pool or a downstream with limited parallelism**:
//!   `ConcurrencyLimiter`. It bounds work in flight, not work per second: `try_acquire()`
//!   returns a permit that gives the slot back when dropped, and waiters are woken by releases.
//!
//! All of them except `ConcurrencyLimiter` (whose permits are RAII guards) implement one trait,
//! `RateLimiter`:
//!
//! | method | what it does |
//! |---|---|
//! | `try_acquire()` | one permit if available now; the hot path |
//! | `try_acquire_n(n)` | `n` permits, all or none: `Admitted { remaining }` or `Refused { available, retry_after }`; `n` above the limit (burst, capacity) is `ExceedsLimit` (never a silent forever-`false`) |
//! | `available()` | permits that could be taken now, taking none |
//! | `set_limit(n)` / `limit()` | change the limit at runtime, linearizable with admissions; admitted permits stay counted |
//! | `acquire()` / `acquire_n(n)` | block until granted; returns the time waited (Guava's `acquire`) |
//! | `try_acquire_for(n, timeout)` | wait at most `timeout`; returns `WaitError::Timeout` at once when the permits cannot be had in time (no sleeping the timeout first); permits that free exactly at the deadline are waited for, in every family |
//! | `until_ready()` / `until_n_ready(n)` | async waits on tokio's timer (feature `tokio`); cancel-safe: dropping the future gives back any reservation |
//!
//! The bucket family (`TokenBucket`, `LeakyBucket`, `WarmUp`) also implements `Reserve`:
//! `reserve(n)` takes permits now for use at a scheduled time (`delay()`, `wait()`), and
//! `cancel()` gives them back as golang's `x/time/rate` does. Each caller's time is fixed when
//! it reserves, so waiters are served in order. `ConcurrencyLimiter` has the same waits with
//! permits: `acquire()`, `try_acquire_for(n, timeout)`, `until_ready().await`, owned permits
//! for tasks.
//!
//! Bad configuration (zero limit, window, buckets, rate or burst; buckets narrower than 1 ns; a
//! rate above one permit per ns; spans that overflow the time arithmetic; a cold factor below 1;
//! a limit that overflows the packed counters) is a `ConfigError` with a message that says what
//! to change.
//!
//! **Wide windows.** Up to 2^20 − 1 per window the bucketed windows count in 64-bit words
//! (admitting is one 64-bit CAS); above it in 128-bit words (a `cmpxchg16b`; about 127
//! instructions per admission against 65), chosen when the window is built
//! (`.wide()` asks for them at any limit, so that `set_limit` may later pass 2^20 − 1;
//! `max_limit()` says which). Which limiters hold how many is in the next paragraph:
//!
//! ```rust
//! use ringlimit::{ConfigError, RateLimiter, SlidingLog, SlidingWindow, WindowQuota};
//! let hourly = WindowQuota::per_hour(10_000_000)?;
//! let window = SlidingWindow::new(hourly);
//! assert!(window.try_acquire_n(10_000_000)?.is_admitted());
//! assert!(!window.try_acquire());
//! assert_eq!(
//!     SlidingLog::new(hourly).err(),
//!     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: SlidingLog::MAX_LIMIT })
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Window limits: a `WindowQuota` holds up to 2^40 − 1 permits per window
//! (`WindowQuota::MAX_LIMIT`, "10 000 000 per hour" included), the bound of the bucketed
//! windows (`SlidingWindow`, `FixedWindow`, `ShardedWindow`). The limiters whose state grows
//! with the limit hold less, 2^20 − 1 each: `SlidingLog::MAX_LIMIT` (one slot per permit),
//! `ApproxSlidingWindow::MAX_LIMIT` (two counters in one word) and the keyed window cells'
//! `WindowConfig::MAX_LIMIT` and `SlidingConfig::MAX_LIMIT`; building one of them from a larger
//! quota returns `ConfigError::LimitTooLarge` naming its bound.
//!
//! ```rust
//! use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
//! use ringlimit::outcome::Decision;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let limiter = SlidingWindow::new(WindowQuota::per_second(100)?.buckets(10)?);
//!     if limiter.try_acquire() {
//!         // serve the request
//!     }
//!     match limiter.try_acquire_n(5)? {
//!         Decision::Admitted { remaining } => println!("5 taken, {remaining} left"),
//!         Decision::Refused { retry_after, .. } => println!("try again in {retry_after:?}"),
//!     }
//!     Ok(())
//! }
//! ```
//!
//! The bucket family and the concurrency limiter:
//!
//! ```rust
//! use std::time::Duration;
//! use ringlimit::{BucketQuota, ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, LeakyBucket, Rate, RateLimiter, Reserve, ShaperQuota, TokenBucket, Wait, WarmUp, WarmUpQuota};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // 100 per second, bursts of up to 20.
//!     let api = TokenBucket::new(BucketQuota::per_second(100)?.burst(20)?);
//!     assert!(api.try_acquire());
//!     let reservation = api.reserve(5)?; // fair: later callers queue behind it
//!     let _waited = reservation.wait();
//!
//!     // At most 50 writes per second to the database; nobody queues longer than 200 ms.
//!     let writes = LeakyBucket::shaper(ShaperQuota::per_second(50)?.max_wait(Duration::from_millis(200))?);
//!     let _slept = writes.acquire();
//!
//!     // 1000 per second once warm; from cold, ramp up over 10 s.
//!     let cache = WarmUp::new(WarmUpQuota::new(Rate::per_second(1000)?, Duration::from_secs(10))?);
//!     cache.acquire();
//!
//!     // At most 8 requests in flight.
//!     let pool = ConcurrencyLimiter::new(ConcurrencyQuota::new(8)?);
//!     if let Some(_permit) = pool.try_acquire() {
//!         // ... the permit is released when it drops
//!     }
//!     Ok(())
//! }
//! ```
//!
//! **Quotas.** A limit is a validated `Copy` value, made once: `WindowQuota::per_second(100)?`,
//! `.per_minute(n)`, `.per(n, window)`, `.buckets(10)?`, `.window(d)?`; `BucketQuota::per_second(100)?
//! .burst(20)?` (token bucket and leaky meter alike, rate first), `.start_empty()`;
//! `ShaperQuota::per_second(50)?.max_wait(d)?`; `WarmUpQuota::new(rate, warm_up)?.cold_factor(c)?`;
//! `ConcurrencyQuota::new(8)?`. Making a quota is where a `ConfigError` arises, so building a
//! limiter from one cannot fail (a map of limiters needs no `expect`), except where a window
//! quota's limit is above what a log, an approximate window or a keyed window cell holds
//! (2^20 − 1; a quota holds 2^40 − 1): their constructors return `ConfigError::LimitTooLarge`.
//! `WindowQuota::unlimited()` and `BucketQuota::unlimited()` admit every call (what a rules file's
//! `-1` maps to; free on the admission path); `WindowQuota::budget(n)` is `n` permits that never
//! refill.
//!
//! **Grants and refunds** (for all-or-nothing limits across several limiters): `try_grant(n)`
//! returns an `Admission`; a `Grant` can be given back with `refund(grant)`, one CAS while its
//! bucket (windows) or schedule (buckets) is current, nothing after that (which can only
//! under-admit). A `Grant` is neither `Copy` nor `Clone`, so it cannot be refunded twice, and a
//! `Reservation`'s `cancel` is the same refund. What each limiter restores is in
//! `ringlimit::guide::refunds`.
//!
//! ```rust
//! use ringlimit::{BucketQuota, RateLimiter, SlidingWindow, TokenBucket, WindowQuota};
//! use ringlimit::outcome::Admission;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let per_user = SlidingWindow::new(WindowQuota::per_minute(100)?);
//!     let global = TokenBucket::new(BucketQuota::per_second(1)?.burst(1)?);
//!     assert!(global.try_acquire()); // the global budget is spent for now
//!     // Take from the user's quota, then the global one; give the first back if the second refuses.
//!     if let Admission::Granted(user_grant) = per_user.try_grant(1)? {
//!         if !global.try_grant(1)?.is_granted() {
//!             assert_eq!(per_user.refund(user_grant), 1); // the user is not charged
//!         }
//!     }
//!     assert_eq!(per_user.available(), 100);
//!     Ok(())
//! }
//! ```
//!
//! A limit per user, IP or API key (`ringlimit::keyed`, default feature `keyed`), from
//! `cargo add ringlimit`:
//!
//! ```rust
//! use ringlimit::{keyed::{Buckets, Keyed}, BucketQuota};
//! fn main() -> Result<(), ringlimit::ConfigError> {
//!     let per_user: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(10)?.burst(20)?);
//!     assert!(per_user.try_acquire(&42)); // user 42: 20 at once, then 10 a second
//!     Ok(())
//! }
//! ```
//!
//! A keyed limiter is a map of clockless cells sharing one quota and one clock, bounded by
//! `max_keys`. **A key is dropped only while its cell is indistinguishable from a fresh one
//! (under every later reconfiguration too), so eviction never changes a decision; when the
//! limiter is full of keys that are not idle, new keys are refused (`KeyedError::Full`), never
//! admitted without a limit.** Families: `Buckets` (token bucket or leaky meter, 8 bytes per
//! key), `Shapers` (16), `FixedWindows` (16), `SlidingWindows<B>` (16 + 8·B) and `SlidingLogs`
//! (24 + 8·C, `C` the power of two above the limit: 1 KiB for 100 per window), and `InFlight`
//! (8, concurrency: `try_acquire_permit` returns a permit that gives itself back). The
//! bucket, shaper and in-flight families are built from their quota (`Keyed::new(quota)`); the
//! window families from a configuration (`Keyed::with_config(WindowConfig::new(quota)?, clock)`,
//! `SlidingConfig`, `LogConfig`), which refuses a limit above what a cell holds (2^20 − 1 per
//! window). Per key: `try_acquire`, `try_acquire_n`, `available` (creates nothing), `try_grant`
//! and `refund` (for all-or-nothing limits across several limiters), and quota overrides
//! (`tier(quota)` or `tier_of(config)`, then `assign(key, &tier)`: a paying plan). `IpKey` groups IPv6 addresses by /64.
//! Bounded with `max_keys(n)` (up to 2^27 keys), the cells live in a table of our own: a fixed
//! array of `n + n/5` slots, each a 62-bit keyed fingerprint of the key beside the family's
//! cell, inline (16 bytes a slot for the token bucket, four to a cache line), allocated in up
//! to 256 segments as keys first need them. A call hashes its key (std's SipHash, randomly keyed,
//! so that clients cannot choose keys that collide), reads its home line, and decides with the
//! cell's CAS: no lock, no write to a line other threads share but the cell's; a sweep frees an
//! idle cell only after a grace period, so a call stalled across the free can never charge the
//! key that reuses the slot (the guide's `keyed_table` page has the protocol, the proof and the
//! collision bound). Unbounded limiters, and `SlidingLogs` (whose cells hold a ring on the
//! heap), keep a growing `dashmap::DashMap`. For keys the service chooses itself,
//! `Keyed::with_hasher(config, clock, foldhash::fast::RandomState::default())` takes a faster
//! hasher. Figures: `docs/BENCHMARKS.md` in the repository.
//!
//! ```rust
//! use ringlimit::cell::WindowConfig;
//! use ringlimit::clock::TscClock;
//! use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
//! use ringlimit::WindowQuota;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let config = WindowConfig::new(WindowQuota::per_minute(100)?)?;
//!     let per_ip: Keyed<IpKey, FixedWindows> =
//!         Keyed::with_config(config, TscClock::new()).max_keys(1_000_000);
//!     assert!(per_ip.try_acquire(&IpKey::new("2001:db8::1".parse()?))); // grouped by /64
//!     Ok(())
//! }
//! ```
//!
//! Waiting is the `Wait` extension trait, implemented for every `RateLimiter` (in
//! `ringlimit::prelude`, with the limiters, quotas and clocks): `acquire`,
//! `acquire_n`, `try_acquire_for(n, timeout)` (a zero timeout is one attempt; a wait that cannot
//! succeed in time returns at once), and with the `tokio` feature `until_ready` /
//! `until_n_ready`. The mutex versions of every limiter (the spec behind `std` or `parking_lot`
//! mutexes, the baselines of the comparison) are in `ringlimit::baseline`, with the feature
//! `oracles` (for tests and the comparison tool).
//!
//! Clocks (`ringlimit::clock`): `TscClock` (the TSC through quanta, the default), `RecentClock`
//! (quanta's upkeep thread; the thread is started and stopped for you), `StdClock`
//! (`Instant`), and `ManualClock` for tests. Choose one with `.clock(...)` on the builder;
//! policies default to the TSC clock too.
//! Layouts: the default `Padded` keeps each hot word on its own cache line; `.compact()` packs
//! them for keyed limiters with many instances.
//!
//! `cargo run --release --example quickstart` runs eight threads against one limiter.
//!
//! Blocking waits sleep on the limiter's clock (`Clock::sleep`); a `ManualClock` moves itself
//! forward instead, so waits in tests are instant and exact. Async waits sleep on tokio's
//! timer; `clock::TokioClock` (feature `tokio`) lets tokio's paused test clock drive the limiter.
//!
//! ## Several dimensions at once: policies
//!
//! A request is usually limited per user, per IP, per API and globally at once. A
//! `ringlimit::policy::Policy` checks its dimensions in order, each taking a refundable grant,
//! and refunds the grants already taken when one refuses, so no quota is charged for a request
//! another dimension refused. **No dimension ever admits more than its own limit; a request may
//! be refused because a concurrent check held a permit for the span of one policy check before
//! refunding it (never across a wait), which `tests/rules/policy.rs` measures.** A limiter that
//! cannot give a grant back (the sliding log, the concurrency limiter) belongs last; a refusal's
//! `retry_after` is the refusing dimension's (later ones are not asked).
//!
//! ```rust
//! use std::net::IpAddr;
//! use std::sync::Arc;
//! use ringlimit::cell::WindowConfig;
//! use ringlimit::clock::TscClock;
//! use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
//! use ringlimit::policy::{Policy, PolicyDecision};
//! use ringlimit::{BucketQuota, SlidingWindow, TokenBucket, WindowQuota};
//!
//! struct Request { user: u64, ip: IpAddr }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let per_minute = |limit| WindowConfig::new(WindowQuota::per_minute(limit)?);
//!     let per_ip = Keyed::<IpKey, FixedWindows>::with_config(per_minute(1_000)?, TscClock::new());
//!     let per_user = Keyed::<u64, FixedWindows>::with_config(per_minute(100)?, TscClock::new());
//!     let policy = Policy::builder()
//!         .shared("global", Arc::new(TokenBucket::new(BucketQuota::per_second(50_000)?)))
//!         .shared("api", Arc::new(SlidingWindow::new(WindowQuota::per_second(10_000)?)))
//!         .per_key("ip", Arc::new(per_ip), |r: &Request| Some(IpKey::new(r.ip)))
//!         .per_key("user", Arc::new(per_user), |r: &Request| Some(r.user))
//!         .build();
//!     let request = Request { user: 42, ip: "203.0.113.9".parse()? };
//!     match policy.check(&request)? {
//!         PolicyDecision::Admitted { remaining, tightest, .. } => assert_eq!((remaining, tightest), (99, "user")),
//!         PolicyDecision::Refused { dimension, retry_after, .. } => panic!("{dimension}: {retry_after:?}"),
//!     }
//!     Ok(())
//! }
//! ```
//!
//! `check_within(ctx, n, timeout)` waits (holding nothing between attempts) and, with the
//! `tokio` feature, `until_checked` is its async form.
//!
//! ## Rules from a file, reloaded live
//!
//! Rules from a file (`ringlimit::rules`, feature `rules`; a file watcher with `watch`): TOML
//! or YAML in humane units, one rule per dimension (user, IP, API, global, a resource), checked
//! all or nothing, reloaded atomically. **A reload keeps the permits already counted: a rule
//! whose limit changed is reconfigured in place, never swapped for a fresh limiter that would
//! let a burst through**; a file that does not load keeps the rules in force, and its error
//! names the rule, the field and the line. Examples: `docs/rules/service.toml` and `.yaml`.
//!
//! ```toml
//! [[rules]]
//! name = "per-user"
//! key = "header:X-User-Id"   # or global, client_ip, client_ip/48, route, api_key, user
//! algorithm = "sliding_window"  # fixed_window, sliding_log, token_bucket (rate + burst)
//! rate = "100/min"           # or limit = 100 and window = "1m"; -1 or "unlimited": no limit
//! ```
//!
//! ## Metrics and the alert
//!
//! Metrics (feature `metrics`, through the `metrics` facade: the application installs the
//! exporter): a `policy::Policy` records each check per dimension,
//! `ringlimit_requests_total{rule, result="allowed"|"rejected"}`, `ringlimit_window_count{rule}`
//! and `ringlimit_utilization{rule}` (count / limit), labelled by dimension name, never by key.
//! `policy::metrics` says what each value is; `cargo run --example metrics --features metrics
//! -- 9000` serves them in Prometheus' text format on 127.0.0.1:9000, and `docs/alerts.yml`
//! holds the `HighWindowUtilization` alert (utilization > 0.9 for 1m while the rule has traffic). Its test needs
//! `promtool` (Debian package `prometheus`, which `.ci/run` installs); without it the test
//! prints `SKIPPED` and passes, except under `CI`.
//!
//! ```yaml
//! # docs/alerts.yml
//! groups:
//!   - name: ringlimit
//!     rules:
//!       - alert: HighWindowUtilization
//!         expr: ringlimit_utilization > 0.9 and on(rule, instance) rate(ringlimit_requests_total[1m]) > 0
//!         for: 1m
//!         labels:
//!           severity: warning
//! ```
//!
//! ## HTTP: the tower middleware (`ringlimit-tower`)
//!
//! The workspace member `ringlimit-tower` applies a policy or a rule set to every request
//! through a tower `Layer` shared by every clone of its service (axum clones per request, so
//! `tower::limit::RateLimit` does not limit there, axum #2634): client keys through trusted
//! proxies walked from the right (never the left-most, client-written `X-Forwarded-For`
//! entry), IPv6 grouped by /64, an id header with a rule for when it is missing, the matched
//! route; 429 with `Retry-After` and a problem+json body, gRPC `RESOURCE_EXHAUSTED`; and the
//! IETF draft's headers on every limited response:
//!
//! ```text
//! RateLimit-Policy: "per-ip";q=100;w=60
//! RateLimit: "per-ip";r=50;t=30
//! ```
//!
//! Its README (`ringlimit-tower/README.md`) has the axum app in eight lines, the trusted-proxy
//! rule, a curl session against the gateway example (`cargo run --release -p ringlimit-tower
//! --example gateway -- --rules ringlimit-tower/examples/rules.yaml`: proxy or demo handler,
//! rules reloaded, `/metrics`) and the overhead measured.
//!
//! ## Many machines: Redis (`ringlimit-redis`)
//!
//! An in-process limit of 1000/s on each of twenty machines is not a global 1000/s. The
//! workspace crate `ringlimit-redis` keeps the limit on Redis or Redis Cluster, with the same
//! decisions (`ringlimit::outcome::Decision`, `ringlimit::policy::PolicyDecision`), async (tokio) or
//! blocking (`Blocking`).
//!
//! The two lines of setup:
//!
//! ```rust,ignore
//! let connection = Connection::open("redis://127.0.0.1:6379/")?;   // or Connection::cluster([...]).await?
//! let per_user = RedisLimiter::builder(&connection, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
//! if per_user.try_acquire("user:42").await? { /* serve */ }
//! ```
