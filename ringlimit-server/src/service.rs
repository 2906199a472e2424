//! `RateLimitService/ShouldRateLimit`: checks the request's bounds, matches each
//! descriptor to its limit, has the backend decide them all or nothing, and answers with
//! per-descriptor statuses and the IETF RateLimit headers of the tightest limit.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tonic::{Request, Response, Status};

use crate::backend::{Backend, Item, Verdict};
use crate::config::Unit;
use crate::limits::Limits;
use crate::matcher::{Found, Limit};
use crate::metrics::{Answer, Metrics};
use crate::proto::envoy::config::core::v3::HeaderValue;
use crate::proto::rls::rate_limit_response::{rate_limit, Code, DescriptorStatus, RateLimit};
use crate::proto::rls::rate_limit_service_server::RateLimitService;
use crate::proto::rls::{RateLimitRequest, RateLimitResponse};

/// What one request may carry; more is answered `INVALID_ARGUMENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Descriptors per request.
    pub max_descriptors: usize,
    /// Entries per descriptor.
    pub max_entries: usize,
    /// Bytes of a domain, key or value.
    pub max_string: usize,
}

impl Default for Bounds {
    /// 64 descriptors of 16 entries, strings up to 1 KiB.
    fn default() -> Self {
        Self {
            max_descriptors: 64,
            max_entries: 16,
            max_string: 1024,
        }
    }
}

/// The service.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use ringlimit_server::{backend::Backend, config::DomainConfig, limits::Limits, service::RateLimiter};
/// use ringlimit_server::proto::envoy::extensions::common::ratelimit::v3::{rate_limit_descriptor::Entry, RateLimitDescriptor};
/// use ringlimit_server::proto::rls::RateLimitRequest;
/// let backend = Backend::local();
/// let domain = DomainConfig::parse("d.yaml", "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1}\n")?;
/// let limits = Arc::new(arc_swap::ArcSwap::from_pointee(Limits::build(&[domain], &backend, None)?));
/// let service = RateLimiter::new(backend, limits, Default::default());
/// let entry = Entry { key: "user".into(), value: "alice".into() };
/// let request = RateLimitRequest {
///     domain: "d".into(),
///     descriptors: vec![RateLimitDescriptor { entries: vec![entry], ..Default::default() }],
///     hits_addend: 0,
/// };
/// assert_eq!(service.decide(&request).await?.overall_code, 1); // OK
/// assert_eq!(service.decide(&request).await?.overall_code, 2); // OVER_LIMIT
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    backend: Backend,
    limits: Arc<ArcSwap<Limits>>,
    metrics: Arc<Metrics>,
    bounds: Bounds,
}

impl RateLimiter {
    /// The service deciding on `backend` with the limits in `limits` (which a reload
    /// swaps), counting into `metrics`.
    pub fn new(backend: Backend, limits: Arc<ArcSwap<Limits>>, metrics: Arc<Metrics>) -> Self {
        Self {
            backend,
            limits,
            metrics,
            bounds: Bounds::default(),
        }
    }

    /// With other bounds on a request.
    pub fn bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// The request's problem, if it breaks a bound.
    fn check(&self, request: &RateLimitRequest) -> Result<(), Status> {
        let b = &self.bounds;
        if request.domain.is_empty() {
            return Err(Status::invalid_argument("the domain is empty"));
        }
        if request.descriptors.is_empty() {
            return Err(Status::invalid_argument("the request has no descriptor"));
        }
        if request.descriptors.len() > b.max_descriptors {
            return Err(Status::invalid_argument(format!(
                "{} descriptors, more than the {} allowed",
                request.descriptors.len(),
                b.max_descriptors
            )));
        }
        if request.domain.len() > b.max_string {
            return Err(Status::invalid_argument(format!(
                "the domain is longer than {} bytes",
                b.max_string
            )));
        }
        for (at, descriptor) in request.descriptors.iter().enumerate() {
            if descriptor.entries.is_empty() {
                return Err(Status::invalid_argument(format!(
                    "descriptor {at} has no entry"
                )));
            }
            if descriptor.entries.len() > b.max_entries {
                return Err(Status::invalid_argument(format!(
                    "descriptor {at} has {} entries, more than the {} allowed",
                    descriptor.entries.len(),
                    b.max_entries
                )));
            }
            for entry in &descriptor.entries {
                if entry.key.len() > b.max_string || entry.value.len() > b.max_string {
                    return Err(Status::invalid_argument(format!(
                        "descriptor {at} has a key or value longer than {} bytes",
                        b.max_string
                    )));
                }
            }
        }
        Ok(())
    }

    /// Decides `request`.
    pub async fn decide(&self, request: &RateLimitRequest) -> Result<RateLimitResponse, Status> {
        if let Err(status) = self.check(request) {
            self.metrics.answer(Answer::Invalid);
            return Err(status);
        }
        let limits = self.limits.load();
        // Envoy: a `hits_addend` of 0 (unset) adds 1.
        let hits = u64::from(request.hits_addend.max(1));
        let mut found: Vec<Option<Found>> = request
            .descriptors
            .iter()
            .map(|descriptor| {
                let entries: Vec<(&str, &str)> = descriptor
                    .entries
                    .iter()
                    .map(|e| (e.key.as_str(), e.value.as_str()))
                    .collect();
                limits.matcher.find(&request.domain, &entries)
            })
            .collect();
        // A limit that another matched limit replaces is not applied.
        let replaced: HashSet<&str> = found
            .iter()
            .flatten()
            .flat_map(|f| f.rule.replaces.iter().map(String::as_str))
            .collect();
        if !replaced.is_empty() {
            let replaced: HashSet<String> = replaced.into_iter().map(str::to_owned).collect();
            for slot in &mut found {
                if slot
                    .as_ref()
                    .is_some_and(|f| f.rule.name.as_ref().is_some_and(|n| replaced.contains(n)))
                {
                    *slot = None;
                }
            }
        }
        let mut items = Vec::new();
        let mut positions = Vec::new();
        for (at, (slot, descriptor)) in found.iter().zip(&request.descriptors).enumerate() {
            let Some(f) = slot else { continue };
            let Some(handle) = limits.handle(&f.rule.key) else {
                continue;
            };
            let hits = descriptor.hits_addend.filter(|&h| h > 0).unwrap_or(hits);
            items.push(Item {
                rule: &f.rule,
                handle,
                counter: &f.counter,
                hits,
            });
            positions.push(at);
        }
        let verdicts = match self.backend.decide(&items).await {
            Ok(verdicts) => verdicts,
            Err(error) => {
                self.metrics.answer(Answer::BackendError);
                tracing::error!(%error, "the backend did not decide");
                return Err(Status::unavailable(format!(
                    "the backend did not decide: {error}"
                )));
            }
        };
        let mut statuses = all_ok(request);
        let mut over = false;
        let mut tightest: Option<(usize, &Verdict)> = None;
        for ((item, verdict), &at) in items.iter().zip(&verdicts).zip(&positions) {
            let refuses = verdict.over && !item.rule.shadow;
            over |= refuses;
            self.metrics
                .rule(&item.rule.id)
                .hit(item.hits, verdict.over, item.rule.shadow);
            statuses[at] = status(item, verdict, refuses);
            // A shadow-mode limit never changes the answer, its headers included.
            if matches!(item.rule.limit, Limit::Counted { .. })
                && !item.rule.shadow
                && tightest.is_none_or(|(_, t)| verdict.remaining < t.remaining)
            {
                tightest = Some((at, verdict));
            }
        }
        self.metrics
            .answer(if over { Answer::OverLimit } else { Answer::Ok });
        if over {
            tracing::debug!(domain = %request.domain, "over limit");
        }
        let headers = tightest
            .and_then(|(at, verdict)| headers(statuses[at].current_limit.as_ref()?, verdict))
            .unwrap_or_default();
        Ok(RateLimitResponse {
            overall_code: if over { Code::OverLimit } else { Code::Ok } as i32,
            statuses,
            response_headers_to_add: headers,
            ..Default::default()
        })
    }
}

/// An `OK` status without a limit for each descriptor of `request`.
fn all_ok(request: &RateLimitRequest) -> Vec<DescriptorStatus> {
    let ok = DescriptorStatus {
        code: Code::Ok as i32,
        ..Default::default()
    };
    vec![ok; request.descriptors.len()]
}

/// A descriptor's status.
fn status(item: &Item<'_>, verdict: &Verdict, refuses: bool) -> DescriptorStatus {
    let Limit::Counted { requests, unit, .. } = item.rule.limit else {
        // envoyproxy/ratelimit: an unlimited descriptor reports u32::MAX remaining.
        return DescriptorStatus {
            code: Code::Ok as i32,
            limit_remaining: u32::MAX,
            ..Default::default()
        };
    };
    DescriptorStatus {
        code: if refuses { Code::OverLimit } else { Code::Ok } as i32,
        current_limit: Some(RateLimit {
            name: item.rule.name.clone().unwrap_or_default(),
            requests_per_unit: u32::try_from(requests).unwrap_or(u32::MAX),
            unit: unit_of(unit) as i32,
        }),
        limit_remaining: u32::try_from(verdict.remaining).unwrap_or(u32::MAX),
        // A refusal no wait lifts (a limit of 0, more hits than the limit): the unit.
        duration_until_reset: Some(duration(if verdict.reset == Duration::MAX {
            unit.duration()
        } else {
            verdict.reset
        })),
        quota: None,
    }
}

fn unit_of(unit: Unit) -> rate_limit::Unit {
    match unit {
        Unit::Second => rate_limit::Unit::Second,
        Unit::Minute => rate_limit::Unit::Minute,
        Unit::Hour => rate_limit::Unit::Hour,
        Unit::Day => rate_limit::Unit::Day,
        Unit::Week => rate_limit::Unit::Week,
        Unit::Month => rate_limit::Unit::Month,
        Unit::Year => rate_limit::Unit::Year,
    }
}

/// A protobuf duration, capped at a year (a refusal that no wait lifts says so).
fn duration(d: Duration) -> prost_types::Duration {
    let d = d.min(Unit::Year.duration());
    prost_types::Duration {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

/// The IETF `RateLimit-Policy` and `RateLimit` headers of the tightest limit.
fn headers(limit: &RateLimit, verdict: &Verdict) -> Option<Vec<HeaderValue>> {
    let window = match rate_limit::Unit::try_from(limit.unit).ok()? {
        rate_limit::Unit::Second => 1,
        rate_limit::Unit::Minute => 60,
        rate_limit::Unit::Hour => 3_600,
        rate_limit::Unit::Day => 86_400,
        rate_limit::Unit::Week => 604_800,
        rate_limit::Unit::Month => 2_592_000,
        rate_limit::Unit::Year => 31_536_000,
        rate_limit::Unit::Unknown => return None,
    };
    let name = if limit.name.is_empty() {
        "default"
    } else {
        &limit.name
    };
    let reset = if verdict.reset == Duration::MAX {
        window
    } else {
        verdict
            .reset
            .min(Unit::Year.duration())
            .as_secs_f64()
            .ceil() as u64
    };
    let remaining = verdict.remaining.min(u64::from(limit.requests_per_unit));
    Some(vec![
        HeaderValue {
            key: "RateLimit-Policy".into(),
            value: format!("\"{name}\";q={};w={window}", limit.requests_per_unit),
            ..Default::default()
        },
        HeaderValue {
            key: "RateLimit".into(),
            value: format!("\"{name}\";r={remaining};t={reset}"),
            ..Default::default()
        },
    ])
}

#[tonic::async_trait]
impl RateLimitService for RateLimiter {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        self.decide(request.get_ref()).await.map(Response::new)
    }
}

/// A service that admits everything without looking: the benchmark's baseline for what
/// gRPC itself costs.
///
/// ```
/// let _ = ringlimit_server::service::Noop;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Noop;

#[tonic::async_trait]
impl RateLimitService for Noop {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let statuses = all_ok(request.get_ref());
        Ok(Response::new(RateLimitResponse {
            overall_code: Code::Ok as i32,
            statuses,
            ..Default::default()
        }))
    }
}
