//! The connection to a Redis Cluster: redis-rs's cluster connection (one multiplexed
//! connection per node, slots followed through failovers), replaced when a node's
//! connection goes silent while a new one would work.
//!
//! redis-rs retries a request that timed out on the same node connection, and a call
//! cancelled at its own timeout never lets the connection's response timeout elapse: a
//! connection that stays open and carries nothing is never dropped. So a probe `PING`s
//! every master each [`PROBE_QUIET`]; when one does not answer within [`PROBE_TIMEOUT`], it
//! makes a new cluster connection and `PING`s the masters on it. If they answer there, the
//! new connection replaces the old one (calls under way finish on the old one); if not, a
//! node is down or stalled, which the failure policy and the Cluster's failover handle,
//! and the old connection stays.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::RedisResult;

use crate::link::{PROBE_QUIET, PROBE_TIMEOUT};

/// How long making a new cluster connection may take: it reads the slots and connects to
/// every master.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A Cluster's connection, shared by every clone of a `Connection`.
pub(crate) struct Cluster {
    client: ClusterClient,
    connection: Mutex<ClusterConnection>,
}

impl Cluster {
    /// Connects to the Cluster `client` names, and starts the probe on the current runtime
    /// (it ends with the last clone of the returned `Arc`).
    pub(crate) async fn open(client: ClusterClient) -> RedisResult<Arc<Self>> {
        let connection = client.get_async_connection().await?;
        let cluster = Arc::new(Self {
            client,
            connection: Mutex::new(connection),
        });
        tokio::spawn(probe(Arc::downgrade(&cluster)));
        Ok(cluster)
    }

    /// The connection to run a call on.
    pub(crate) fn connection(&self) -> ClusterConnection {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClusterConnection> {
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// While `cluster` lives: replaces its connection when a master does not answer on it but
/// answers on a new one (see the module's docs).
async fn probe(cluster: Weak<Cluster>) {
    loop {
        tokio::time::sleep(PROBE_QUIET).await;
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        if masters_answer(&mut cluster.connection()).await {
            continue;
        }
        let fresh = tokio::time::timeout(CONNECT_TIMEOUT, cluster.client.get_async_connection());
        let Ok(Ok(mut fresh)) = fresh.await else {
            continue;
        };
        if masters_answer(&mut fresh).await {
            *cluster.lock() = fresh;
        }
    }
}

/// Whether every master answers `PING` on `connection` within [`PROBE_TIMEOUT`], with a
/// `PONG`: any other reply is an earlier call's, read out of turn.
async fn masters_answer(connection: &mut ClusterConnection) -> bool {
    let routing = RoutingInfo::MultiNode((
        MultipleNodeRoutingInfo::AllMasters,
        Some(ResponsePolicy::AllSucceeded),
    ));
    let ping = connection.route_command(redis::cmd("PING"), routing);
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, ping).await,
        Ok(Ok(redis::Value::SimpleString(pong))) if pong == "PONG"
    )
}
