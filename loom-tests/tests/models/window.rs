//! Loom models of the window engine in the 64-bit words (limits up to 2^20 − 1; the fast path one 64-bit CAS): the models of `window_model`.

/// Which words the models' windows count in.
const WIDE: bool = false;

#[path = "window_model/mod.rs"]
mod window_model;
