//! Keyed limiters (feature `keyed`): one cell per key, tiers and grants, sweeps and eviction.
#![cfg(feature = "keyed")]

#[path = "../common/mod.rs"]
mod common;

mod eviction;
mod keyed;
mod keyed_narrow;
mod sweep_triggers;
mod tier_grants;
