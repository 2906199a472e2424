//! Keyed limiters: one limit per user, IP or API key, as a map of clockless cells sharing
//! one configuration and one clock, with a bound on the keys held
//! ([`Keyed`]; IP addresses grouped by prefix with [`IpKey`]).

mod assign;
mod error;
mod family;
mod grace;
mod in_flight;
mod ip;
mod key;
mod limiter;
mod store;
mod table;
mod tier;
mod wait;

pub use error::KeyedError;
pub use family::{
    Buckets, Family, FixedWindows, FromQuota, InFlight, RateFamily, Shapers, SlidingLogs,
    SlidingWindows, TryFromQuota,
};
pub use in_flight::KeyedPermit;
pub use ip::IpKey;
pub use key::ToKey;
pub use limiter::Keyed;
pub use tier::Tier;
