//! What Redis answered, read: a server error classified as unavailability (the failure
//! policy decides) or an error of its own ([`Failure`]), a script's integers, and the
//! decide and batch scripts' replies as verdicts. The transport (`connection.rs`,
//! `batch.rs`) and the limiters both read replies here; this module knows neither.

use std::time::Duration;

use redis::{ErrorKind, RedisError, ServerErrorKind, Value};
use ringlimit::outcome::Decision;

use crate::error::Error;
use crate::verdict::{Source, Verdict};

/// Why a call got no answer the limiter can use.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// Redis is unreachable, slow, loading, or its cluster is down: the failure policy decides.
    Unavailable,
    /// An answer that no failure policy should hide.
    Error(Error),
}

/// Whether a server error code means the server cannot decide now, whatever the request:
/// busy with a script, loading, failing over, a replica, out of memory, unable to persist or
/// to reach its replicas. The failure policy decides then.
pub(crate) fn unavailable_code(code: &str) -> bool {
    matches!(
        code,
        "BUSY"
            | "LOADING"
            | "CLUSTERDOWN"
            | "MASTERDOWN"
            | "READONLY"
            | "TRYAGAIN"
            | "OOM"
            | "MISCONF"
            | "NOREPLICAS"
    )
}

/// Unreachable, slow, loading, failing over: unavailable. Anything else the server said is
/// an error of its own.
pub(crate) fn classify(error: RedisError) -> Failure {
    let unavailable = error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || matches!(
            error.kind(),
            ErrorKind::Io
                | ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                )
        )
        || error.code().is_some_and(unavailable_code);
    if unavailable {
        return Failure::Unavailable;
    }
    if error.code() == Some("WRONGTYPE") {
        return Failure::Error(Error::WrongType {
            message: error.to_string(),
        });
    }
    Failure::Error(Error::Server {
        message: error.to_string(),
    })
}

/// A script's reply as integers (one, or an array of them).
pub(crate) fn integers(value: Value) -> Result<Vec<i64>, Failure> {
    let unexpected = |value: &Value| {
        Failure::Error(Error::UnexpectedReply {
            reply: format!("{value:?}"),
        })
    };
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Int(i) => Ok(*i),
                other => Err(unexpected(other)),
            })
            .collect(),
        Value::Int(i) => Ok(vec![i]),
        other => Err(unexpected(&other)),
    }
}

/// The decide script's reply: `{all ok, first refusal, now, per dimension: ok, left,
/// retry_us, reset_us, token}`.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The index (from 0) of the first dimension that refused.
    pub(crate) first_refusal: Option<usize>,
    pub(crate) now_us: u64,
    pub(crate) dims: Vec<DimReply>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct DimReply {
    pub(crate) ok: bool,
    pub(crate) left: u64,
    /// `None`: never (more than the limit).
    pub(crate) retry_us: Option<u64>,
    pub(crate) reset_us: u64,
    pub(crate) token: i64,
}

impl Reply {
    pub(crate) fn parse(reply: &[i64], dims: usize) -> Result<Self, Error> {
        let bad = || Error::UnexpectedReply {
            reply: format!("{reply:?}"),
        };
        if reply.len() != 3 + 5 * dims || reply[2] < 0 {
            return Err(bad());
        }
        let first = usize::try_from(reply[1]).map_err(|_| bad())?;
        let dims = reply[3..]
            .chunks_exact(5)
            .map(|d| DimReply::from_ints(d[0], d[1], d[2], d[3], d[4]))
            .collect();
        Ok(Reply {
            first_refusal: first.checked_sub(1),
            now_us: reply[2] as u64,
            dims,
        })
    }

    /// The verdict of dimension `d`.
    pub(crate) fn verdict(&self, d: usize) -> Verdict {
        self.dims[d].verdict(self.now_us)
    }
}

impl DimReply {
    /// A dimension's part of a script's reply: `ok` (1 or 0), `left`, `retry_us` (below zero:
    /// never), `reset_us`, `token`.
    pub(crate) fn from_ints(ok: i64, left: i64, retry_us: i64, reset_us: i64, token: i64) -> Self {
        DimReply {
            ok: ok == 1,
            left: u64::try_from(left).unwrap_or(0),
            retry_us: u64::try_from(retry_us).ok(),
            reset_us: u64::try_from(reset_us).unwrap_or(0),
            token,
        }
    }

    /// The verdict Redis gave at `now_us`.
    pub(crate) fn verdict(&self, now_us: u64) -> Verdict {
        let decision = if self.ok {
            Decision::Admitted {
                remaining: self.left,
            }
        } else {
            Decision::Refused {
                available: self.left,
                retry_after: self.retry_us.map_or(Duration::MAX, Duration::from_micros),
            }
        };
        Verdict {
            decision,
            reset_after: Duration::from_micros(self.reset_us),
            source: Source::Redis,
            server_time: Some(Duration::from_micros(now_us)),
        }
    }
}

/// In a request's first value of `batch.lua`'s reply: admitted (else refused, and the value
/// is its `retry_us`).
const ADMITTED: i64 = -2;
/// In a request's first value of `batch.lua`'s reply: its own error, whose message follows.
const FAILED: i64 = -3;

/// One request's part of `batch.lua`'s reply (`{retry_us or ADMITTED, left, reset_us}`, or `{FAILED,
/// message, 0}`) as its verdict, decided at `now`.
pub(crate) fn batch_item(now: &Value, item: &[Value]) -> Result<Verdict, Failure> {
    let unexpected = || {
        Failure::Error(Error::UnexpectedReply {
            reply: format!("{now:?} {item:?}"),
        })
    };
    let int = |value: &Value| match value {
        Value::Int(i) => Ok(*i),
        _ => Err(unexpected()),
    };
    let first = int(&item[0])?;
    if first == FAILED {
        let message = match &item[1] {
            Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            other => format!("{other:?}"),
        };
        // The error's code, as the server gave it (the first word), decides as for a call
        // of its own.
        let code = message.split_whitespace().next().unwrap_or_default();
        return Err(if unavailable_code(code) {
            Failure::Unavailable
        } else if code == "WRONGTYPE" {
            Failure::Error(Error::WrongType { message })
        } else {
            Failure::Error(Error::Server { message })
        });
    }
    let now_us = u64::try_from(int(now)?).map_err(|_| unexpected())?;
    let (ok, retry_us) = if first == ADMITTED {
        (1, 0)
    } else {
        (0, first)
    };
    // A batched check is never refunded: it needs no token.
    let dim = DimReply::from_ints(ok, int(&item[1])?, retry_us, int(&item[2])?, 0);
    Ok(dim.verdict(now_us))
}
