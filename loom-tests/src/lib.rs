//! Loom models for ringlimit live in `tests/`; run them with `RUSTFLAGS="--cfg loom"`.
//!
//! What every model may use lives here; what the models of one family share lives beside
//! them in `tests/<family>_model/mod.rs`, included with `mod <family>_model;`.

use loom::sync::Arc;
use loom::thread::{self, JoinHandle};

/// Runs `f` on a new model thread with its own handle on `shared`.
pub fn spawn_with<T, R>(shared: &Arc<T>, f: impl FnOnce(&T) -> R + Send + 'static) -> JoinHandle<R>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
{
    let shared = shared.clone();
    thread::spawn(move || f(&shared))
}
