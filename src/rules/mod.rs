//! Rules from a file: TOML or YAML, in humane units (`100/min`, `window = "1m"`, `-1` for
//! no limit), checked all or nothing and reloaded atomically, counts kept
//! ([`RuleSet`]). With the `watch` feature, a [`Watcher`] reloads a file
//! when it changes.
//!
//! ```
//! use std::net::IpAddr;
//! use ringlimit::rules::{Format, RequestInfo, RuleSet};
//! struct Request { user: String, ip: IpAddr }
//! impl RequestInfo for Request {
//!     fn header(&self, name: &str) -> Option<&str> {
//!         name.eq_ignore_ascii_case("x-user-id").then_some(self.user.as_str())
//!     }
//!     fn client_ip(&self) -> Option<IpAddr> { Some(self.ip) }
//! }
//! let rules = RuleSet::new();
//! rules.reload_str(Format::Yaml, r#"
//! rules:
//!   - name: global
//!     key: global
//!     algorithm: token_bucket
//!     rate: 50000/s
//!   - name: per-ip
//!     key: client_ip
//!     algorithm: sliding_window
//!     rate: 1000/min
//!   - name: per-user
//!     key: header:X-User-Id
//!     algorithm: sliding_window
//!     rate: 100/min
//! "#)?;
//! let request = Request { user: "42".into(), ip: [198, 51, 100, 7].into() };
//! let decision = rules.check(&request)?;
//! assert!(decision.is_admitted());
//! assert_eq!(decision.rule(), Some("per-user")); // the tightest: 99 left
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod drain;
mod error;
mod file;
mod live;
mod reload;
mod request;
mod rule;
mod set;
mod units;
#[cfg(feature = "watch")]
mod watch;

pub use error::RulesError;
pub use file::Format;
pub use reload::ReloadReport;
pub use request::RequestInfo;
pub use rule::RuleQuota;
pub use set::{RuleDecision, RuleSet};
#[cfg(feature = "watch")]
pub use watch::Watcher;
