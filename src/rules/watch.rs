//! [`Watcher`]: reloads a rule set when its file changes (the `watch` feature).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

use crate::clock::Clock;

use super::error::RulesError;
use super::reload::ReloadReport;
use super::set::RuleSet;

/// Reloads a [`RuleSet`] from its file whenever the file changes, on a thread of its own,
/// until dropped. Changes are debounced: a burst of writes within `debounce` is one reload.
/// Each reload's outcome goes to a callback: the [`ReloadReport`], or the [`RulesError`]
/// of a file that did not load (the rules in force stay) or of the watch itself.
///
/// It watches the file's directory, not the file: editors and deployments replace a file
/// by renaming another over it, which a watch on the file itself would not follow. Write
/// rules files whole (a temporary file renamed over the old one): a reload that catches a
/// file half written may find it broken (and keep the old rules), or worse, valid but short
/// of the rules not yet written. Load the file once before watching it
/// ([`RuleSet::from_path`]), so that a broken file stops the start rather than running
/// without limits.
///
/// ```
/// use std::sync::{mpsc, Arc};
/// use std::time::Duration;
/// use ringlimit::rules::{RuleSet, Watcher};
/// let dir = std::env::temp_dir().join(format!("ringlimit-doc-watch-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("rules.yaml");
/// let rule = |rate: &str| format!("rules:\n  - {{name: g, key: global, algorithm: fixed_window, rate: {rate}}}\n");
/// std::fs::write(&path, rule("10/s"))?;
/// let rules = Arc::new(RuleSet::from_path(&path)?);
/// let (reloads, reloaded) = mpsc::channel();
/// let watcher = Watcher::new(rules.clone(), &path, Duration::from_millis(50), move |outcome| {
///     let _ = reloads.send(outcome.map(|report| report.to_string()));
/// })?;
/// std::fs::write(&path, rule("20/s"))?;
/// let outcome = reloaded.recv_timeout(Duration::from_secs(10))?;
/// assert_eq!(outcome?, "reconfigured g");
/// drop(watcher); // stops watching
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

impl Watcher {
    /// Watches the file at `path` (its format from its extension), reloading `rules` from
    /// it once changes have been quiet for `debounce`, and calling `on_reload` with each
    /// outcome. A `path` that is a symbolic link (a Kubernetes ConfigMap's file) is reloaded
    /// on every change in its directory, and reported only when the reload changed
    /// something or failed. Errors: the path names no file, or the watch cannot start.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ringlimit::rules::{RuleSet, Watcher};
    /// let rules = Arc::new(RuleSet::new());
    /// let watching = Watcher::new(rules, "/nonexistent/dir/rules.toml", Duration::from_millis(100), |_| {});
    /// assert!(watching.is_err());
    /// ```
    pub fn new<C, F>(
        rules: Arc<RuleSet<C>>,
        path: impl AsRef<Path>,
        debounce: Duration,
        mut on_reload: F,
    ) -> Result<Self, RulesError>
    where
        C: Clock + Clone + Send + Sync + 'static,
        F: FnMut(Result<ReloadReport, RulesError>) + Send + 'static,
    {
        let path = path.as_ref().to_owned();
        let watch_error = |error: &dyn std::fmt::Display| {
            RulesError::new(format!("cannot watch the rules file: {error}")).in_file(&path)
        };
        let Some(name) = path.file_name().map(ToOwned::to_owned) else {
            return Err(watch_error(&"the path names no file"));
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => Path::new(".").to_owned(),
        };
        // A symlinked file (a Kubernetes ConfigMap mounts `rules.yaml -> ..data/rules.yaml`
        // and updates it by swapping the `..data` link) changes without an event naming it:
        // then every change in the directory reloads, and only a reload that changed
        // something (or failed) is reported.
        let linked =
            std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink());
        let file = path.clone();
        let mut debouncer = new_debouncer(debounce, None, move |events: DebounceEventResult| {
            match events {
                Ok(events) => {
                    // Writes, creations, renames and removals of the file; not reads, which
                    // the watch also sees (each reload's own read would start another).
                    let changed = events.iter().any(|event| {
                        matches!(
                            event.kind,
                            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
                        ) && (linked
                            || event
                                .paths
                                .iter()
                                .any(|path| path.file_name() == Some(&name)))
                    });
                    if changed {
                        match rules.reload_path(&file) {
                            Ok(report) if linked && report.is_unchanged() => {}
                            outcome => on_reload(outcome),
                        }
                    }
                }
                Err(errors) => {
                    for error in errors {
                        on_reload(Err(RulesError::new(format!(
                            "watching the rules file: {error}"
                        ))
                        .in_file(&file)));
                    }
                }
            }
        })
        .map_err(|error| watch_error(&error))?;
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|error| watch_error(&error))?;
        Ok(Self {
            _debouncer: debouncer,
        })
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}
