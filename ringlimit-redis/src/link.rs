//! The connection to one Redis server: one multiplexed connection, replaced when it stops
//! being trustworthy.
//!
//! A multiplexed connection matches replies to requests by their order. A call cancelled at
//! its timeout leaves its request on the wire, and a reply lost on the way (a faulty
//! middlebox) shifts every later reply onto the wrong caller; a connection that goes silent
//! answers nothing while a new one would. So the connection is dropped after any call on it
//! that timed out or failed without a server error reply (I/O, a reply that does not parse
//! or does not fit its request), and a probe `PING`s it after a second without replies. The
//! next call connects again, in a task of its own so that callers' timeouts do not cancel
//! it; connection attempts that fail back off from 10 ms to [`MAX_BACKOFF`].
//!
//! Every call on one server carries a tag ([`next_tag`]) its reply echoes: a gathered call
//! (`batch.rs`) as the script's last value, any other call as an `ECHO` pipelined after its
//! script (`connection.rs`). So another call's reply is never read as a call's own; the
//! first call to get a reply of the wrong shape or tag, or to time out, ends the connection.
//! A Cluster's calls carry no tag yet (an `ECHO` has no key to route it with its script):
//! there a reply lost on a node's connection can be read by that node's next call until the
//! probe (`cluster.rs`) replaces the connection.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::io::tcp::{socket2, TcpSettings};
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo, RedisError};
use tokio::sync::watch;

/// How long one connection attempt may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// The longest wait between connection attempts that fail.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// A connection without replies for this long is probed with a `PING`.
pub(crate) const PROBE_QUIET: Duration = Duration::from_secs(1);

/// How long the probe's `PING` may take before the connection is dropped.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// A tag no other call of this process carries: a call sends it and its reply must echo it.
pub(crate) fn next_tag() -> String {
    static TAGS: AtomicU64 = AtomicU64::new(0);
    // Relaxed: only uniqueness matters, which the read-modify-write gives in any order.
    TAGS.fetch_add(1, Ordering::Relaxed).to_string()
}

/// TCP_NODELAY (a request is not held back waiting for the previous one's acknowledgement)
/// and keepalive (a peer gone without a word is noticed by the kernel) on every connection.
pub(crate) fn tcp_settings() -> TcpSettings {
    TcpSettings::default()
        .set_nodelay(true)
        .set_keepalive(socket2::TcpKeepalive::new().with_time(Duration::from_secs(10)))
}

/// One server's connection, shared by every clone of a `Connection`.
pub(crate) struct Server {
    client: Client,
    state: Mutex<State>,
    /// Generations count connections made; a call reports its outcome with the generation
    /// it ran on, so a late report never drops a newer connection.
    generations: AtomicU64,
}

enum State {
    /// No connection: the next call at or after `retry_at` connects.
    Idle {
        retry_at: Instant,
        failures: u32,
    },
    /// A connection attempt is under way; its end drops the sender.
    Connecting(watch::Receiver<()>, u32),
    Ready(Live),
}

#[derive(Clone)]
struct Live {
    generation: u64,
    connection: MultiplexedConnection,
    /// Whether a reply came on this connection (its attempt counts as a success).
    answered: Arc<AtomicBool>,
    /// Milliseconds since `Server::epoch` of the last reply.
    last_reply: Arc<AtomicU64>,
    /// Failed attempts before this connection.
    failures: u32,
}

/// A connection to run one call on, and what its outcome must be reported with.
pub(crate) struct Lease {
    pub(crate) connection: MultiplexedConnection,
    generation: u64,
}

/// Why no connection could be had.
#[derive(Debug)]
pub(crate) struct NoConnection;

impl Server {
    /// The server at `url` (nothing connects yet).
    pub(crate) fn open(url: &str) -> Result<Arc<Self>, RedisError> {
        let info = url.into_connection_info()?.set_tcp_settings(tcp_settings());
        Ok(Arc::new(Self {
            client: Client::open(info)?,
            state: Mutex::new(State::Idle {
                retry_at: Instant::now(),
                failures: 0,
            }),
            generations: AtomicU64::new(0),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The live connection, connecting first when there is none (waiting for the attempt,
    /// which goes on if this caller stops waiting). `NoConnection` while attempts back off.
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Lease, NoConnection> {
        loop {
            let mut done = {
                let mut state = self.lock();
                let failures = match &*state {
                    State::Ready(live) => {
                        return Ok(Lease {
                            connection: live.connection.clone(),
                            generation: live.generation,
                        })
                    }
                    // Under way (its sender still held).
                    State::Connecting(done, _) if done.has_changed().is_ok() => None,
                    // Abandoned: the runtime that ran the attempt is gone.
                    State::Connecting(_, failures) => Some(*failures),
                    State::Idle { retry_at, failures } => {
                        if Instant::now() < *retry_at {
                            return Err(NoConnection);
                        }
                        Some(*failures)
                    }
                };
                match (failures, &*state) {
                    (None, State::Connecting(done, _)) => done.clone(),
                    (failures, _) => {
                        let failures = failures.unwrap_or_default();
                        let (sender, done) = watch::channel(());
                        *state = State::Connecting(done.clone(), failures);
                        tokio::spawn(Arc::clone(self).connect(sender, failures));
                        done
                    }
                }
            };
            // Err once the attempt ended (its sender dropped): look at the state again.
            let _ = done.changed().await;
            if let State::Idle { .. } = &*self.lock() {
                return Err(NoConnection);
            }
        }
    }

    async fn connect(self: Arc<Self>, sender: watch::Sender<()>, failures: u32) {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            // Each call's own timeout bounds it.
            .set_response_timeout(None);
        let attempt = tokio::time::timeout(
            CONNECT_TIMEOUT,
            self.client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await;
        let mut state = self.lock();
        match attempt {
            Ok(Ok(connection)) => {
                // Relaxed: a counter read only under the state's lock.
                let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
                let live = Live {
                    generation,
                    connection,
                    answered: Arc::default(),
                    last_reply: Arc::new(AtomicU64::new(epoch_millis())),
                    failures,
                };
                tokio::spawn(probe(Arc::downgrade(&self), live.clone()));
                *state = State::Ready(live);
            }
            _ => *state = backoff(failures + 1),
        }
        drop(state);
        drop(sender);
    }

    /// Reports how a call on `lease` ended: `trusted` unless it timed out or failed without
    /// a server error reply, in which case its connection is dropped.
    pub(crate) fn report(&self, lease: &Lease, trusted: bool) {
        let mut state = self.lock();
        let State::Ready(live) = &*state else {
            return;
        };
        if live.generation != lease.generation {
            return;
        }
        if trusted {
            // Relaxed: hints for the probe and the backoff, read under no ordering.
            live.answered.store(true, Ordering::Relaxed);
            live.last_reply.store(epoch_millis(), Ordering::Relaxed);
            return;
        }
        // Relaxed: see above.
        let failures = if live.answered.load(Ordering::Relaxed) {
            0
        } else {
            live.failures + 1
        };
        *state = backoff(failures);
    }
}

/// The state after `failures` failed attempts in a row: the next one at once after none,
/// else after 10 ms doubled per failure, at most `MAX_BACKOFF`.
fn backoff(failures: u32) -> State {
    let wait = if failures == 0 {
        Duration::ZERO
    } else {
        Duration::from_millis(10)
            .saturating_mul(1 << failures.min(16))
            .min(MAX_BACKOFF)
    };
    State::Idle {
        retry_at: Instant::now() + wait,
        failures,
    }
}

/// While `live` is the server's connection: `PING`s it after `PROBE_QUIET` without replies,
/// and drops it when the `PING` gets no answer within `PROBE_TIMEOUT`.
async fn probe(server: Weak<Server>, live: Live) {
    loop {
        tokio::time::sleep(PROBE_QUIET / 2).await;
        let Some(server) = server.upgrade() else {
            return;
        };
        match &*server.lock() {
            State::Ready(now) if now.generation == live.generation => {}
            _ => return,
        }
        // Relaxed: see `Server::report`.
        let quiet = epoch_millis().saturating_sub(live.last_reply.load(Ordering::Relaxed));
        if quiet < PROBE_QUIET.as_millis() as u64 {
            continue;
        }
        let lease = Lease {
            connection: live.connection.clone(),
            generation: live.generation,
        };
        let mut connection = lease.connection.clone();
        let ping = redis::cmd("PING");
        let ping = ping.query_async::<String>(&mut connection);
        let answered = matches!(tokio::time::timeout(PROBE_TIMEOUT, ping).await, Ok(Ok(pong)) if pong == "PONG");
        server.report(&lease, answered);
    }
}

/// Whether a call that ended with `error` leaves its connection trustworthy: only when the
/// server itself answered with an error reply (the stream is still in step).
pub(crate) fn trusted_after(error: &RedisError) -> bool {
    error.code().is_some() && !error.is_io_error() && !error.is_connection_dropped()
}

fn epoch_millis() -> u64 {
    static EPOCH: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}
