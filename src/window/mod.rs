//! The window engine shared by the sliding and fixed windows.

pub(crate) mod engine;
pub(crate) mod word;
