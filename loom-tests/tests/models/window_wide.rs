//! Loom models of the window engine in the 128-bit words (limits up to 2^40 − 1; the fast path one `cmpxchg16b`): the models of `window_model`.

/// Which words the models' windows count in.
const WIDE: bool = true;

#[path = "window_model/mod.rs"]
mod window_model;
