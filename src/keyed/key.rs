//! [`ToKey`]: how a key passed by reference becomes the key a new entry holds.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How the key a [`Keyed`](super::Keyed) call is given by reference (`&'k Self`) becomes
/// the key `K` a new entry holds. Lookups never need it: they compare the borrowed form
/// (`K: Borrow<Self>`), so a key already held costs no allocation; only a new key is made.
///
/// Implemented for every `Clone` key passed as itself (`&u64` for `u64` keys), and for the
/// borrowed forms of the std keys: `str` for `String`, `Box<str>`, `Arc<str>` and `&'k str`
/// keys; `[T]` for `Vec<T>`, `Box<[T]>`, `Arc<[T]>` and `&'k [T]`; `Path`, `OsStr` and
/// `CStr` for their owned forms. So a `Keyed<String, _>` and a `Keyed<&str, _>` both take
/// `try_acquire("alice")`.
///
/// ```
/// use std::sync::Arc;
/// use ringlimit::keyed::{Buckets, Keyed};
/// use ringlimit::BucketQuota;
/// let quota = BucketQuota::per_second(1)?;
/// let by_name: Keyed<&str, Buckets> = Keyed::new(quota);
/// assert!(by_name.try_acquire("alice") && !by_name.try_acquire("alice"));
/// let owned: Keyed<String, Buckets> = Keyed::new(quota);
/// assert!(owned.try_acquire("alice") && !owned.try_acquire(&String::from("alice")));
/// let shared: Keyed<Arc<str>, Buckets> = Keyed::new(quota);
/// assert!(shared.try_acquire("alice") && !shared.try_acquire("alice"));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait ToKey<'k, K> {
    /// The key a new entry holds for `self`.
    ///
    /// ```
    /// use ringlimit::keyed::ToKey;
    /// let key: String = "alice".to_key();
    /// let borrowed: &str = "alice".to_key();
    /// assert_eq!(key, borrowed);
    /// ```
    fn to_key(&'k self) -> K;
}

impl<K: Clone> ToKey<'_, K> for K {
    fn to_key(&self) -> K {
        self.clone()
    }
}

/// `ToKey` impls of a borrowed form `$from` for the owned forms `$to` made by `.into()`.
macro_rules! into_key {
    (<$t:ident> $from:ty => $($to:ty),+) => {
        $(impl<$t: Clone> ToKey<'_, $to> for $from {
            fn to_key(&self) -> $to {
                self.into()
            }
        })+
    };
    ($from:ty => $($to:ty),+) => {
        $(impl ToKey<'_, $to> for $from {
            fn to_key(&self) -> $to {
                self.into()
            }
        })+
    };
}

into_key!(str => String, Box<str>, Arc<str>);
into_key!(<T> [T] => Vec<T>, Box<[T]>, Arc<[T]>);
into_key!(Path => PathBuf);
into_key!(OsStr => OsString);
into_key!(CStr => CString);

impl<'k> ToKey<'k, &'k str> for str {
    fn to_key(&'k self) -> &'k str {
        self
    }
}

impl<'k, T> ToKey<'k, &'k [T]> for [T] {
    fn to_key(&'k self) -> &'k [T] {
        self
    }
}
