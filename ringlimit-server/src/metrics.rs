//! Counters for `/metrics`, in Prometheus' text format: per rule (the domain and the
//! configured keys and values that lead to it, never a request's value), and per answer.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;

/// One rule's counters.
#[derive(Debug, Default)]
pub struct RuleCounters {
    hits: AtomicU64,
    over_limit: AtomicU64,
    shadow_over_limit: AtomicU64,
}

/// Every counter of the server.
///
/// ```
/// let metrics = ringlimit_server::metrics::Metrics::default();
/// metrics.rule("d.user").hit(1, false, false);
/// assert!(metrics.render().contains(r#"ringlimit_server_hits_total{rule="d.user"} 1"#));
/// ```
#[derive(Debug, Default)]
pub struct Metrics {
    rules: DashMap<String, Arc<RuleCounters>>,
    ok: AtomicU64,
    over_limit: AtomicU64,
    invalid: AtomicU64,
    backend_errors: AtomicU64,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `OK`.
    Ok,
    /// `OVER_LIMIT`.
    OverLimit,
    /// Rejected as malformed.
    Invalid,
    /// The backend failed.
    BackendError,
}

impl RuleCounters {
    /// Counts `hits` decided, refused (`over`), or refused but let through (`shadow`).
    pub fn hit(&self, hits: u64, over: bool, shadow: bool) {
        // Relaxed: independent counters, read only by scrapes.
        self.hits.fetch_add(hits, Ordering::Relaxed);
        if over && shadow {
            // Relaxed: as above.
            self.shadow_over_limit.fetch_add(hits, Ordering::Relaxed);
        } else if over {
            // Relaxed: as above.
            self.over_limit.fetch_add(hits, Ordering::Relaxed);
        }
    }
}

impl Metrics {
    /// The counters of the rule `id`.
    pub fn rule(&self, id: &str) -> Arc<RuleCounters> {
        if let Some(counters) = self.rules.get(id) {
            return counters.clone();
        }
        self.rules.entry(id.to_owned()).or_default().clone()
    }

    /// Counts one call's answer.
    ///
    /// ```
    /// use ringlimit_server::metrics::{Answer, Metrics};
    /// let metrics = Metrics::default();
    /// metrics.answer(Answer::OverLimit);
    /// assert!(metrics.render().contains(r#"ringlimit_server_calls_total{answer="over_limit"} 1"#));
    /// ```
    pub fn answer(&self, answer: Answer) {
        let counter = match answer {
            Answer::Ok => &self.ok,
            Answer::OverLimit => &self.over_limit,
            Answer::Invalid => &self.invalid,
            Answer::BackendError => &self.backend_errors,
        };
        // Relaxed: an independent counter, read only by scrapes.
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Everything, in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Relaxed (every load below): each counter is read on its own; a scrape is not a
        // snapshot.
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        out.push_str("# HELP ringlimit_server_calls_total ShouldRateLimit calls by answer.\n");
        out.push_str("# TYPE ringlimit_server_calls_total counter\n");
        for (answer, counter) in [
            ("ok", &self.ok),
            ("over_limit", &self.over_limit),
            ("invalid", &self.invalid),
            ("backend_error", &self.backend_errors),
        ] {
            let _ = writeln!(
                out,
                "ringlimit_server_calls_total{{answer=\"{answer}\"}} {}",
                load(counter)
            );
        }
        let mut rules: Vec<(String, Arc<RuleCounters>)> = self
            .rules
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        rules.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, help, read) in [
            (
                "hits",
                "Hits decided per rule.",
                (|c: &RuleCounters| &c.hits) as fn(&RuleCounters) -> &AtomicU64,
            ),
            ("over_limit", "Hits refused per rule.", |c| &c.over_limit),
            (
                "shadow_over_limit",
                "Hits over the limit let through by shadow mode.",
                |c| &c.shadow_over_limit,
            ),
        ] {
            let _ = writeln!(out, "# HELP ringlimit_server_{name}_total {help}");
            let _ = writeln!(out, "# TYPE ringlimit_server_{name}_total counter");
            for (rule, counters) in &rules {
                let _ = writeln!(
                    out,
                    "ringlimit_server_{name}_total{{rule=\"{}\"}} {}",
                    escape(rule),
                    load(read(counters))
                );
            }
        }
        out
    }
}

/// A label value escaped as the text format wants.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves `GET /metrics` (and `GET /healthz`) on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let line = request.split(|&b| b == b'\r').next().unwrap_or(&[]);
            let (status, body) = if line.starts_with(b"GET /metrics ") {
                ("200 OK", metrics.render())
            } else if line.starts_with(b"GET /healthz ") {
                ("200 OK", "ok\n".to_owned())
            } else {
                ("404 Not Found", "not found\n".to_owned())
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        });
    }
}
