//! # ringlimit-redis
//!
//! ringlimit's limits shared by many machines (work in progress).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
