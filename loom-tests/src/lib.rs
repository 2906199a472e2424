//! Loom models for ringlimit live in `tests/`; run them with `RUSTFLAGS="--cfg loom"`.
