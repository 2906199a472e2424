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
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::Value;
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::connection::{classify, down_until_after, Failure, Health};
use crate::error::Error;
use crate::script;

/// The most requests decided in one call.
pub(crate) const MAX_BATCH: usize = 64;

/// The most batches on the wire at once.
pub(crate) const MAX_IN_FLIGHT: usize = 2;

/// One request: its keys and its five arguments (code, n, p1, p2, p3); the answer goes back
/// as the one-pass script's reply.
pub(crate) struct Pending {
    pub(crate) keys: Vec<Vec<u8>>,
    pub(crate) args: [Vec<u8>; 5],
    pub(crate) reply: oneshot::Sender<Result<Vec<i64>, Failure>>,
}

/// Starts the gathering task for `manager`; requests go to the returned sender. The task
/// ends when every sender is dropped.
pub(crate) fn start(
    manager: ConnectionManager,
    health: Arc<Health>,
    timeout: Duration,
) -> mpsc::UnboundedSender<Pending> {
    let (sender, mut requests) = mpsc::unbounded_channel::<Pending>();
    tokio::spawn(async move {
        let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        while let Some(first) = requests.recv().await {
            let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match requests.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (manager, health) = (manager.clone(), Arc::clone(&health));
            tokio::spawn(async move {
                decide(manager, &health, timeout, batch).await;
                drop(permit);
            });
        }
    });
    sender
}

async fn decide(
    mut manager: ConnectionManager,
    health: &Health,
    timeout: Duration,
    batch: Vec<Pending>,
) {
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
                let _ = pending.reply.send(one(now, item));
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
        return Err(Failure::Error(if message.starts_with("WRONGTYPE") {
            Error::WrongType { message }
        } else {
            Error::Server { message }
        }));
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
