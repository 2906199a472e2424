//! Loom models for ringlimit live in one test crate, `tests/models/` (one module per family
//! or mechanism); run them with `bash loom-tests/run` (all) or `bash loom-tests/run
//! <module>::` (one module), which builds under `RUSTFLAGS="--cfg loom"`.
//!
//! What every model may use lives here; what the models of several modules share lives
//! beside them in `tests/models/<family>_model/mod.rs`.

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
