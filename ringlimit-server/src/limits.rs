//! The limits in force: the matcher of the loaded files and each rule's limiter, swapped
//! whole on reload; a rule whose id and limit are unchanged keeps its limiter, so its
//! counts carry over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::{Backend, Handle};
use crate::config::{self, DomainConfig};
use crate::matcher::{Limit, Matcher};

/// One loaded configuration.
///
/// ```
/// use ringlimit_server::backend::Backend;
/// use ringlimit_server::config::DomainConfig;
/// use ringlimit_server::limits::Limits;
/// let domain = DomainConfig::parse("d.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5}\n")?;
/// let limits = Limits::build(&[domain], &Backend::local(), None)?;
/// assert_eq!(limits.rule_count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct Limits {
    /// The descriptor trees.
    pub matcher: Matcher,
    handles: HashMap<String, (Limit, Handle)>,
}

/// A configuration that does not load.
#[derive(Debug)]
pub enum LoadError {
    /// A file is wrong.
    Config(config::ConfigError),
    /// A limit the backend cannot hold.
    Backend(crate::backend::BackendError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Backend(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LoadError {}

impl Limits {
    /// The limits of `domains` on `backend`, keeping the limiters of `previous` whose rule
    /// is unchanged.
    pub fn build(
        domains: &[DomainConfig],
        backend: &Backend,
        previous: Option<&Limits>,
    ) -> Result<Self, LoadError> {
        let matcher = Matcher::new(domains);
        let mut handles = HashMap::new();
        for rule in matcher.rules() {
            let kept = previous
                .and_then(|p| p.handles.get(&rule.key))
                .filter(|(limit, _)| *limit == rule.limit)
                .map(|(_, handle)| handle.clone());
            let handle = match kept {
                Some(handle) => handle,
                None => backend.handle(&rule).map_err(LoadError::Backend)?,
            };
            handles.insert(rule.key.clone(), (rule.limit, handle));
        }
        Ok(Self { matcher, handles })
    }

    /// Loads the files of `dir`.
    pub fn load(
        dir: &Path,
        backend: &Backend,
        previous: Option<&Limits>,
    ) -> Result<Self, LoadError> {
        let domains = config::load_dir(dir).map_err(LoadError::Config)?;
        Self::build(&domains, backend, previous)
    }

    /// The limiter of the rule whose [`key`](crate::matcher::Rule::key) is `key`.
    pub fn handle(&self, key: &str) -> Option<&Handle> {
        self.handles.get(key).map(|(_, handle)| handle)
    }

    /// How many limits are configured.
    pub fn rule_count(&self) -> usize {
        self.handles.len()
    }
}

/// Reloads `dir` into `live` whenever a file in it changes (debounced), until the returned
/// watcher is dropped; a configuration that does not load is logged and the one in force
/// kept.
pub fn watch(
    dir: PathBuf,
    backend: Backend,
    live: Arc<arc_swap::ArcSwap<Limits>>,
) -> Result<impl Drop, notify_debouncer_full::notify::Error> {
    use notify_debouncer_full::notify::RecursiveMode;
    let watched = dir.clone();
    let mut debouncer = notify_debouncer_full::new_debouncer(
        std::time::Duration::from_millis(200),
        None,
        move |events: notify_debouncer_full::DebounceEventResult| {
            if events.is_err() {
                return;
            }
            let current = live.load();
            match Limits::load(&dir, &backend, Some(&current)) {
                Ok(limits) => {
                    tracing::info!(dir = %dir.display(), rules = limits.rule_count(), "configuration reloaded");
                    live.store(Arc::new(limits));
                }
                Err(error) => {
                    tracing::error!(%error, "configuration not reloaded, the previous one stays")
                }
            }
        },
    )?;
    debouncer.watch(&watched, RecursiveMode::NonRecursive)?;
    Ok(debouncer)
}
