//! Concurrent one-dimension decisions on one server, gathered into one script call.
//!
//! Tasks sharing a [`Connection`](crate::Connection) each await their own decision; a
//! background task takes every request queued meanwhile (up to [`MAX_BATCH`]) and decides
//! them in one `EVALSHA` (`lua/batch.lua`), in order, at one server time: exactly as the
//! same requests one script call each, back to back, in that order. With one request in
//! flight nothing waits for company: the batch is that one request. Up to
//! [`MAX_IN_FLIGHT`] batches are on the wire at once (a multiplexed connection pipelines
//! them); while they are, new requests gather into the next.
//!
//! On a Cluster, requests are not gathered: keys of one script must share a slot.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use redis::aio::ConnectionManager;
use redis::Value;
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::connection::{classify, down_until_after, unavailable_code, Failure, Health};
use crate::error::Error;
use crate::script;

/// The most requests decided in one call.
pub(crate) const MAX_BATCH: usize = 64;

/// The most permits asked by one batch (beyond its first request): a sliding log writes one
/// member per permit, and one script call must stay well inside the timeout.
pub(crate) const MAX_BATCH_PERMITS: u64 = 4096;

/// The most batches on the wire at once.
pub(crate) const MAX_IN_FLIGHT: usize = 2;

/// One request: its keys and its five arguments (code, n, p1, p2, p3); the answer goes back
/// as the one-pass script's reply.
pub(crate) struct Pending {
    pub(crate) keys: Vec<Vec<u8>>,
    pub(crate) args: [Vec<u8>; 5],
    /// When its caller stops waiting (its connection's timeout).
    pub(crate) deadline: Instant,
    pub(crate) reply: oneshot::Sender<Result<Vec<i64>, Failure>>,
}

/// Starts the gathering task for `manager`; requests go to the returned sender. The task
/// ends when every sender is dropped.
pub(crate) fn start(
    manager: ConnectionManager,
    health: Arc<Health>,
) -> mpsc::UnboundedSender<Pending> {
    let (sender, mut requests) = mpsc::unbounded_channel::<Pending>();
    tokio::spawn(async move {
        let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        while let Some(first) = requests.recv().await {
            let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                return;
            };
            // Requests whose callers stopped waiting are not sent: their permits would be
            // taken for nobody.
            let mut batch: Vec<Pending> = Vec::new();
            let mut permits = 0;
            let mut next = Some(first);
            while let Some(pending) = next.take() {
                if !pending.reply.is_closed() && pending.deadline > Instant::now() {
                    permits += pending.permits();
                    batch.push(pending);
                }
                if batch.len() < MAX_BATCH && permits < MAX_BATCH_PERMITS {
                    next = requests.try_recv().ok();
                }
            }
            if batch.is_empty() {
                continue;
            }
            // A batch that just failed marked Redis down: the requests queued behind it are
            // answered as a call of their own would be, without waiting out a timeout each.
            if health.presumed_down() {
                for pending in batch {
                    let _ = pending.reply.send(Err(Failure::Unavailable));
                }
                continue;
            }
            let (manager, health) = (manager.clone(), Arc::clone(&health));
            tokio::spawn(async move {
                decide(manager, &health, batch).await;
                drop(permit);
            });
        }
    });
    sender
}

async fn decide(mut manager: ConnectionManager, health: &Health, batch: Vec<Pending>) {
    // The batch waits as long as its most patient caller.
    let deadline = batch
        .iter()
        .map(|pending| pending.deadline)
        .max()
        .unwrap_or_else(Instant::now);
    let timeout = deadline.saturating_duration_since(Instant::now());
    let mut invocation = script::batch().prepare_invoke();
    invocation.arg(batch.len());
    for pending in &batch {
        for key in &pending.keys {
            invocation.key(key.as_slice());
        }
        for arg in &pending.args {
            invocation.arg(arg.as_slice());
        }
    }
    let outcome =
        match tokio::time::timeout(timeout, invocation.invoke_async::<Value>(&mut manager)).await {
            Err(_) => Err(Failure::Unavailable),
            Ok(Err(error)) => Err(classify(error)),
            Ok(Ok(value)) => Ok(value),
        };
    // Relaxed: see `Connection::presumed_down`.
    health
        .down_until
        .store(down_until_after(&outcome, false), Ordering::Relaxed);
    match outcome {
        Ok(Value::Array(items)) if items.len() == 1 + 6 * batch.len() => {
            let now = &items[0];
            for (pending, item) in batch.into_iter().zip(items[1..].chunks_exact(6)) {
                let decided = one(now, item);
                if matches!(decided, Err(Failure::Unavailable)) {
                    // A server that cannot decide (read-only, loading, out of memory): skip
                    // it for a while, as after a call of its own.
                    // Relaxed: see `Connection::presumed_down`.
                    health
                        .down_until
                        .store(down_until_after(&decided, false), Ordering::Relaxed);
                }
                let _ = pending.reply.send(decided);
            }
        }
        Ok(other) => {
            let reply = format!("{other:?}");
            for pending in batch {
                let _ = pending
                    .reply
                    .send(Err(Failure::Error(Error::UnexpectedReply {
                        reply: reply.clone(),
                    })));
            }
        }
        Err(failure) => {
            for pending in batch {
                let _ = pending.reply.send(Err(failure.clone()));
            }
        }
    }
}

/// One request's part of the reply, as the one-pass script's reply `{ok, refused, now, ok,
/// left, retry_us, reset_us, token}`.
fn one(now: &Value, item: &[Value]) -> Result<Vec<i64>, Failure> {
    let unexpected = || {
        Failure::Error(Error::UnexpectedReply {
            reply: format!("{now:?} {item:?}"),
        })
    };
    let int = |value: &Value| match value {
        Value::Int(i) => Ok(*i),
        _ => Err(unexpected()),
    };
    if int(&item[0])? == 1 {
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
    let ok = int(&item[1])?;
    Ok(vec![
        ok,
        1 - ok,
        int(now)?,
        ok,
        int(&item[2])?,
        int(&item[3])?,
        int(&item[4])?,
        int(&item[5])?,
    ])
}

impl Pending {
    /// The permits the request asks for (its second argument).
    fn permits(&self) -> u64 {
        std::str::from_utf8(&self.args[1])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}
