//! ringlimit-tower over real HTTP on loopback (an axum server on an ephemeral port, a hyper
//! client): each module pins one behaviour of the layer: client keys (`keys`), the answers
//! and headers (`headers`), bytes that are not plain ASCII (`encoding`), one limit for every
//! clone (`shared`), a rules file reloaded (`rules`), the inner service's contract
//! (`inner_service`), and the Redis backend (`redis`, feature `redis`, against a real
//! `redis-server`).

mod common;

mod encoding;
mod headers;
mod inner_service;
mod keys;
mod redis;
mod rules;
mod shared;
