//! The live nodes of a fleet, from expiring heartbeats on Redis: what a node's share of a
//! quota is divided by when it decides locally.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::connection::Connection;
use crate::script;

/// This process's membership in a fleet of nodes sharing limits.
///
/// Every `every`, the node stores its id on Redis with an expiry of three beats
/// (`<group>:nodes`, a sorted set scored by expiry, server time) and reads how many nodes are
/// live. A node's local share of a quota is the quota divided by that count, so the shares
/// of all nodes add up to the quota while they agree on the count; it follows nodes joining
/// at once, leaving (`leave`) within a beat, and vanishing within four beats (an entry
/// expires three beats after its last one, seen at the next beat). While Redis is
/// unreachable the last count is kept. The
/// beat also probes Redis, so limiters return to it as soon as it answers.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit_redis::{Connection, Fleet};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let fleet = Fleet::join(&connection, "checkout", Duration::from_secs(1), 4).await;
/// assert!(fleet.live_nodes() >= 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    connection: Connection,
    key: Vec<u8>,
    id: String,
    ttl: Duration,
    live: AtomicU64,
    stop: AtomicBool,
}

impl Fleet {
    /// Joins the fleet `group`, beating every `every`; until the first beat answers, the
    /// fleet is presumed to have `assumed_nodes` nodes (give the deployment's size: a node
    /// that never reached Redis then takes its share, not the whole quota). Spawns the beat
    /// on the current tokio runtime; it ends when the last clone is dropped or on
    /// [`leave`](Self::leave).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{Connection, Fleet};
    /// let down = Connection::open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// let fleet = Fleet::join(&down, "checkout", Duration::from_secs(1), 4).await;
    /// assert_eq!(fleet.live_nodes(), 4); // no beat answered yet: the assumed size
    /// # Ok(()) }
    /// ```
    pub async fn join(
        connection: &Connection,
        group: &str,
        every: Duration,
        assumed_nodes: u64,
    ) -> Fleet {
        let inner = Arc::new(Inner {
            connection: connection.clone(),
            key: crate::key::base("ringlimit", "nodes", group.as_bytes()),
            id: node_id(),
            ttl: every * 3,
            live: AtomicU64::new(assumed_nodes.max(1)),
            stop: AtomicBool::new(false),
        });
        inner.beat(false).await;
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                // Relaxed: a flag read once a beat.
                if inner.stop.load(Ordering::Relaxed) {
                    return;
                }
                inner.beat(false).await;
            }
        });
        Fleet { inner }
    }

    /// The live nodes, as the last beat that answered counted them (at least 1).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{Connection, Fleet};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// let fleet = Fleet::join(&connection, "checkout", Duration::from_secs(1), 4).await;
    /// println!("{} nodes live, this one among them", fleet.live_nodes());
    /// # Ok(()) }
    /// ```
    pub fn live_nodes(&self) -> u64 {
        // Relaxed: an advisory count; shares follow it within a beat anyway.
        self.inner.live.load(Ordering::Relaxed)
    }

    /// This node's id in the fleet.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Fleet;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let fleet = Fleet::join(&down, "checkout", Duration::from_secs(1), 4).await;
    /// assert!(!fleet.node_id().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn node_id(&self) -> &str {
        &self.inner.id
    }

    /// Beats once now (the timer does it every `every`): for tests and for a node that
    /// wants its count fresh.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Fleet;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let fleet = Fleet::join(&down, "checkout", Duration::from_secs(1), 3).await;
    /// fleet.beat().await;
    /// assert_eq!(fleet.live_nodes(), 3); // Redis down: the last count is kept
    /// # Ok(()) }
    /// ```
    pub async fn beat(&self) {
        self.inner.beat(false).await;
    }

    /// Leaves the fleet at once (the others' shares grow at their next beat) and stops
    /// beating.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Fleet;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let fleet = Fleet::join(&down, "checkout", Duration::from_secs(1), 3).await;
    /// // shutting down: the other nodes' shares grow at their next beat
    /// fleet.leave().await;
    /// # Ok(()) }
    /// ```
    pub async fn leave(&self) {
        // Relaxed: read by the beat task at its next tick.
        self.inner.stop.store(true, Ordering::Relaxed);
        self.inner.beat(true).await;
    }
}

impl Inner {
    async fn beat(&self, leave: bool) {
        let ttl = u64::try_from(self.ttl.as_micros()).unwrap_or(u64::MAX);
        let mut args = vec![self.id.clone().into_bytes(), ttl.to_string().into_bytes()];
        if leave {
            args.push(b"leave".to_vec());
        }
        let reply = self
            .connection
            .probe(script::heartbeat(), std::slice::from_ref(&self.key), &args)
            .await;
        // Unanswered: the last count stands.
        if let Ok([live, _now]) = reply.as_deref() {
            // Relaxed: see `live_nodes`.
            self.live
                .store(u64::try_from(*live).unwrap_or(1).max(1), Ordering::Relaxed);
        }
    }
}

/// A node id unique in practice: host name, process id and a random number.
fn node_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new().hash_one(std::time::SystemTime::now());
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into());
    format!("{host}:{}:{random:016x}", std::process::id())
}
