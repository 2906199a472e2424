//! The window kinds: [`Sliding`] (the quota's buckets) and [`Fixed`] (one bucket), the
//! markers [`Window`](crate::Window) and its builder are generic over.

/// Marker: the builder makes a [`SlidingWindow`](crate::SlidingWindow).
///
/// ```
/// use ringlimit::builder::{Sliding, WindowBuilder};
/// use ringlimit::{SlidingWindow, WindowQuota};
/// let builder: WindowBuilder<Sliding> = SlidingWindow::builder(WindowQuota::per_second(10)?);
/// let limiter: SlidingWindow = builder.build();
/// assert_eq!(limiter.buckets(), 10);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Sliding;
/// Marker: the builder makes a [`FixedWindow`](crate::FixedWindow).
///
/// ```
/// use ringlimit::builder::{Fixed, WindowBuilder};
/// use ringlimit::{FixedWindow, WindowQuota};
/// let builder: WindowBuilder<Fixed> = FixedWindow::builder(WindowQuota::per_second(10)?);
/// // A fixed window counts in one bucket, whatever the quota's buckets.
/// assert_eq!(builder.build().buckets(), 1);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Fixed;

pub(crate) mod sealed {
    use crate::window::quota::WindowQuota;

    /// What a window kind does, for the crate's windows only.
    pub trait Sealed {
        /// The type's name, for `Debug`.
        const NAME: &'static str;
        /// The buckets the engine splits the quota's window into.
        fn buckets(quota: &WindowQuota) -> u64;
    }

    impl Sealed for super::Sliding {
        const NAME: &'static str = "SlidingWindow";
        fn buckets(quota: &WindowQuota) -> u64 {
            quota.bucket_count()
        }
    }

    impl Sealed for super::Fixed {
        const NAME: &'static str = "FixedWindow";
        fn buckets(_: &WindowQuota) -> u64 {
            1
        }
    }
}

/// Which window a [`Window`](crate::Window) is: [`Sliding`] (the quota's buckets) or [`Fixed`] (one
/// bucket). Sealed.
///
/// ```
/// use ringlimit::builder::{Fixed, Kind, Sliding};
/// use ringlimit::{FixedWindow, RateLimiter, SlidingWindow, Window, WindowQuota};
/// fn available<K: Kind>(limiter: &Window<K>) -> u64 {
///     limiter.available()
/// }
/// assert_eq!(available::<Fixed>(&FixedWindow::new(WindowQuota::per_second(3)?)), 3);
/// assert_eq!(available::<Sliding>(&SlidingWindow::new(WindowQuota::per_second(2)?)), 2);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait Kind: sealed::Sealed + Send + Sync + 'static {}

impl Kind for Sliding {}

impl Kind for Fixed {}
