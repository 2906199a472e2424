//! What the rules tests share: a request, a rule set on a manual clock, a temporary
//! directory.

#![allow(dead_code)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ringlimit::clock::ManualClock;
use ringlimit::rules::{RequestInfo, RuleSet};

/// A request with whatever the rules may read.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub headers: Vec<(String, String)>,
    pub ip: Option<IpAddr>,
    pub route: Option<String>,
    pub api_key: Option<String>,
    pub user: Option<String>,
}

impl Request {
    pub fn user(user: &str) -> Self {
        Self {
            user: Some(user.into()),
            ..Self::default()
        }
    }

    pub fn ip(ip: &str) -> Self {
        Self {
            ip: Some(ip.parse().expect("an IP address")),
            ..Self::default()
        }
    }

    pub fn route(route: &str) -> Self {
        Self {
            route: Some(route.into()),
            ..Self::default()
        }
    }

    pub fn header(name: &str, value: &str) -> Self {
        Self {
            headers: vec![(name.into(), value.into())],
            ..Self::default()
        }
    }
}

impl RequestInfo for Request {
    fn header(&self, name: &str) -> Option<&str> {
        let (_, value) = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        Some(value)
    }
    fn client_ip(&self) -> Option<IpAddr> {
        self.ip
    }
    fn route(&self) -> Option<&str> {
        self.route.as_deref()
    }
    fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }
    fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }
}

/// An empty rule set on a manual clock at 0, and the clock.
pub fn manual() -> (ManualClock, RuleSet<ManualClock>) {
    let clock = ManualClock::new();
    (clock.clone(), RuleSet::with_clock(clock))
}

/// How many of `attempts` checks of `request` are admitted.
pub fn admitted(rules: &RuleSet<ManualClock>, request: &Request, attempts: u64) -> u64 {
    (0..attempts)
        .filter(|_| rules.check(request).expect("within limits").is_admitted())
        .count() as u64
}

/// A directory of its own under the system's temporary one, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ringlimit-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `name` in this directory, whole: to a temporary file renamed over
    /// it, as an editor or a deployment should.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        let partial = self.0.join(format!(".{name}.partial"));
        std::fs::write(&partial, text).expect("writable");
        std::fs::rename(&partial, &path).expect("renamable");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One rule of `algorithm`, keyed by `key`, with the parameters `params` (YAML flow-mapping
/// entries such as `rate: 5/min`).
pub fn yaml_rule(name: &str, key: &str, algorithm: &str, params: &str) -> String {
    format!("  - {{name: {name}, key: \"{key}\", algorithm: {algorithm}, {params}}}\n")
}
