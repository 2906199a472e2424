//! [`Store`]: where a keyed limiter's cells live: the fixed [`Table`] once `max_keys` bounds
//! the keys (up to [`MAX_TABLE_KEYS`]), else a growing concurrent map.

use std::hash::{BuildHasher, Hash};

use crate::sync::{key_hash, KeyMap};

use super::key::ToKey;
use super::table::{Missing, Table, MAX_TABLE_KEYS};

/// A keyed limiter's cells, by key.
pub(super) enum Store<K, V, S: BuildHasher> {
    /// No bound small enough for a table: the map grows with the keys (dashmap).
    Map(KeyMap<K, V, S>),
    /// Bounded: a fixed table of fingerprints and cells, keyed by the limiter's hasher.
    Table(Table<V>),
}

impl<K: Eq + Hash, V, S: BuildHasher> Store<K, V, S> {
    /// An empty store that grows with its keys.
    pub(super) fn map(hasher: S) -> Self {
        Self::Map(KeyMap::with_hasher(hasher))
    }

    /// Becomes a table for `max_keys` if the family's cells are `inline` (they hold nothing
    /// on the heap: a sliding log's ring is, and a table would allocate one for each slot of
    /// a segment), the bound is one a table is built for and the store holds nothing yet
    /// (keys held stay where they are).
    pub(super) fn bound(&mut self, max_keys: usize, inline: bool, make: impl Fn() -> V) {
        // A later call on an empty table builds one for the new bound.
        let empty = match self {
            Self::Map(map) => map.len() == 0,
            Self::Table(table) => table.len() == 0,
        };
        if inline && empty && max_keys <= MAX_TABLE_KEYS {
            *self = Self::Table(Table::new(max_keys, make));
        }
    }

    /// `f` of `key`'s cell; `None` if absent.
    #[inline]
    pub(super) fn read<Q, R>(&self, key: &Q, hasher: &S, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self {
            Self::Map(map) => map.read(key, f),
            Self::Table(table) => table.read(key_hash(hasher, key), f),
        }
    }

    /// `f(cell, inserted)` of `key`'s cell, inserting `make()` first if absent and
    /// `reserve()` agrees.
    pub(super) fn upsert<'k, Q, R>(
        &self,
        key: &'k Q,
        hasher: &S,
        reserve: impl FnOnce() -> bool,
        make: impl Fn() -> V,
        f: impl FnOnce(&V, bool) -> R,
    ) -> Result<R, Missing>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        match self {
            Self::Map(map) => map
                .upsert(key.to_key(), || reserve().then(make), f)
                .ok_or(Missing::Refused),
            Self::Table(table) => table.upsert(key_hash(hasher, key), reserve, make, f),
        }
    }

    /// Drops every cell `judge` finds idle (`None`; else the reading it will be idle by,
    /// which `kept` receives) and returns how many; a table `renew`s the cells it keeps in
    /// freed slots for the keys that take them next.
    pub(super) fn evict(
        &self,
        mut judge: impl FnMut(&V) -> Option<u64>,
        mut kept: impl FnMut(u64),
        renew: impl Fn(&V),
    ) -> usize {
        match self {
            Self::Map(map) => {
                let mut dropped = 0;
                map.retain(|cell| match judge(cell) {
                    None => {
                        dropped += 1;
                        false
                    }
                    Some(idle_at) => {
                        kept(idle_at);
                        true
                    }
                });
                dropped
            }
            Self::Table(table) => table.evict(judge, kept, renew),
        }
    }

    /// Whether the store has room for `max_keys` keys: a table for the bound it was built
    /// for, the map for any.
    #[cfg(feature = "rules")]
    pub(super) fn holds_keys(&self, max_keys: usize) -> bool {
        match self {
            Self::Map(_) => true,
            Self::Table(table) => max_keys <= table.built_for(),
        }
    }

    /// Keys held.
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Map(map) => map.len(),
            Self::Table(table) => table.len(),
        }
    }
}
