//! ringlimit-redis under faults, against real servers: the server killed, flushed or
//! stalled (`server`), slower than a call's timeout (`call_timeout`), the network between
//! client and server delaying, silencing or losing bytes through a proxy (`network`,
//! `late_leases`, `local_share`), and a local Redis Cluster losing a master (`cluster`).
//! Each test starts its own servers (`tests/support`) and bounds its waits; each prints
//! what it measured (`cargo test -p ringlimit-redis --test faults -- --nocapture`).

#[path = "../support/mod.rs"]
mod support;

mod checks;

mod call_timeout;
mod cluster;
mod late_leases;
mod local_share;
mod network;
mod server;
