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
//!
//! What a gathered GCRA decision costs, in instructions (callgrind, Redis 7.0.15, fresh
//! keys): on the server about 60 000 per call (`EVALSHA` itself, `TIME`, defining the
//! algorithm) and 27 000 per decision, half of it the `GET` and the `SET` (their own work
//! and the marshalling of `redis.call`): 28 000 a decision in a batch of 64, 31 000 in one
//! of 16. On the client about 8 000 (a third of it redis-rs parsing the reply). Hence the
//! wire format: the command written into one buffer, a limiter's numbers once per run of
//! its requests, an `n` of 1 not parsed by the script, three values per request in the
//! reply, and a script holding only the batch's algorithm when it has one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use redis::aio::MultiplexedConnection;
use redis::{Cmd, ErrorKind, RedisResult, RedisWrite, Script, ServerErrorKind, ToRedisArgs, Value};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::algorithm::Params;
use crate::error::Error;
use crate::health::{down_until_after, Health};
use crate::link::{self, Server};
use crate::reply::{batch_item, classify, Failure};
use crate::script;
use crate::verdict::Verdict;

/// The most requests decided in one call.
pub(crate) const MAX_BATCH: usize = 64;

/// The most permits asked by one batch (beyond its first request): a sliding log writes one
/// member per permit, and one script call must stay well inside the timeout.
pub(crate) const MAX_BATCH_PERMITS: u64 = 4096;

/// The most batches on the wire at once.
pub(crate) const MAX_IN_FLIGHT: usize = 8;

/// One request: the base of its keys (`key::base`), its limiter's parameters and the
/// permits it asks; the answer goes back as its verdict.
pub(crate) struct Pending {
    /// The request's keys are this followed by each of `params.suffixes`.
    pub(crate) base: Vec<u8>,
    pub(crate) params: Params,
    pub(crate) n: u64,
    /// When its caller stops waiting (its connection's timeout).
    pub(crate) deadline: Instant,
    pub(crate) reply: oneshot::Sender<Result<Verdict, Failure>>,
}

/// Starts the gathering task for `server`; requests go to the returned sender. The task
/// ends when every sender is dropped.
pub(crate) fn start(server: Arc<Server>, health: Arc<Health>) -> mpsc::UnboundedSender<Pending> {
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
                    permits += pending.n;
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
            let (server, health) = (Arc::clone(&server), Arc::clone(&health));
            tokio::spawn(async move {
                decide(&server, &health, batch).await;
                drop(permit);
            });
        }
    });
    sender
}

async fn decide(server: &Arc<Server>, health: &Health, batch: Vec<Pending>) {
    // The batch waits as long as its most patient caller.
    let deadline = batch
        .iter()
        .map(|pending| pending.deadline)
        .max()
        .unwrap_or_else(Instant::now);
    let timeout = deadline.saturating_duration_since(Instant::now());
    // The script holding only the batch's algorithm, when it has one.
    let code = batch.first().map(|pending| pending.params.code);
    let script =
        script::batch(code.filter(|&code| batch.iter().all(|pending| pending.params.code == code)));
    // The call's tag, echoed last in the reply: a reply that is not this call's (the stream
    // out of step after a reply was lost) is never read as its verdicts.
    let tag = link::next_tag();
    let mut command = command(script, &batch);
    command.arg(tag.as_str());
    let mut leased = None;
    let call = async {
        let lease = server.get().await.map_err(|_| None)?;
        let mut connection = lease.connection.clone();
        leased = Some(lease);
        evalsha(&mut connection, script, &command)
            .await
            .map_err(Some)
    };
    let (trusted, outcome) = match tokio::time::timeout(timeout, call).await {
        Err(_) | Ok(Err(None)) => (false, Err(Failure::Unavailable)),
        Ok(Err(Some(error))) => (link::trusted_after(&error), Err(classify(error))),
        // A reply of the wrong shape is another call's: the stream is out of step.
        Ok(Ok(value)) => (
            matches!(&value, Value::Array(items) if items.len() == 2 + 3 * batch.len()
                && matches!(items.last(), Some(Value::BulkString(got)) if *got == tag.as_bytes())),
            Ok(value),
        ),
    };
    if let Some(lease) = &leased {
        server.report(lease, trusted);
    }
    // Another call's reply: this call's never came (the failure policy decides).
    let outcome = match outcome {
        Ok(_) if !trusted => Err(Failure::Unavailable),
        outcome => outcome,
    };
    // Relaxed: see `Connection::presumed_down`.
    health
        .down_until
        .store(down_until_after(&outcome, false), Ordering::Relaxed);
    match outcome {
        Ok(Value::Array(items)) if trusted => {
            let now = &items[0];
            for (pending, item) in batch.into_iter().zip(items[1..].chunks_exact(3)) {
                let decided = batch_item(now, item);
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

/// The `EVALSHA` of `batch.lua` deciding `batch`, written straight into one command
/// buffer (no argument of its own allocated).
fn command(script: &Script, batch: &[Pending]) -> Cmd {
    let keys: usize = batch.iter().map(|p| p.params.suffixes.len()).sum();
    // Each key with its suffix; each request's n (a few digits); per run five numbers.
    let bytes: usize = batch
        .iter()
        .map(|p| (p.base.len() + 4) * p.params.suffixes.len() + 2 + 5 * 20)
        .sum();
    let mut command = Cmd::with_capacity(4 + keys + 6 * batch.len(), 64 + bytes);
    command.arg("EVALSHA").arg(script.get_hash()).arg(keys);
    for pending in batch {
        for suffix in pending.params.suffixes {
            command.arg(Suffixed(&pending.base, suffix));
        }
    }
    command.arg(batch.len());
    // Consecutive requests of one limiter share a run: its numbers are sent and parsed once.
    for run in batch.chunk_by(|a, b| a.params == b.params) {
        let params = &run[0].params;
        let [p1, p2, p3] = params.args;
        command
            .arg(params.code as u8)
            .arg(p1)
            .arg(p2)
            .arg(p3)
            .arg(run.len());
        for pending in run {
            command.arg(pending.n);
        }
    }
    command
}

/// `command`, loading `script` again when the server answers `NOSCRIPT` (after a restart,
/// `SCRIPT FLUSH` or a failover), as redis-rs's `ScriptInvocation` does.
async fn evalsha(
    connection: &mut MultiplexedConnection,
    script: &Script,
    command: &Cmd,
) -> RedisResult<Value> {
    match command.query_async(connection).await {
        Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            script.load_async(connection).await?;
            command.query_async(connection).await
        }
        outcome => outcome,
    }
}

/// A key written as its base and suffix, in place.
struct Suffixed<'a>(&'a [u8], &'a str);

impl ToRedisArgs for Suffixed<'_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        use std::io::Write;
        let mut arg = out.writer_for_next_arg();
        // Writing to the command's own buffer cannot fail.
        let _ = arg.write_all(self.0);
        let _ = arg.write_all(self.1.as_bytes());
    }
}
