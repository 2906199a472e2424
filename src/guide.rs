//! Design notes: how the lock-free limiters work and why they are exact.
//!
//! (Filled in below.)
