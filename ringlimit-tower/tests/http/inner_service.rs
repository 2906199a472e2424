//! The inner service behind the layer, as tower's contract wants it: `poll_ready` is
//! called only for requests the layer admitted (a refusal reserves nothing), and a service
//! whose `poll_ready` failed is never used again.

use std::sync::Arc;

use ringlimit::policy::Policy;
use ringlimit::{FixedWindow, WindowQuota};
use ringlimit_tower::{Client, ClientKeys, RateLimitLayer};

/// An inner service that reserves capacity in `poll_ready` (as `ConcurrencyLimit` and
/// `Buffer` do) and releases it in `call`.
struct Reserving {
    reserved: Arc<std::sync::atomic::AtomicUsize>,
    holding: bool,
}

impl Clone for Reserving {
    fn clone(&self) -> Self {
        Self {
            reserved: self.reserved.clone(),
            holding: false,
        }
    }
}

impl tower_service::Service<http::Request<String>> for Reserving {
    type Response = http::Response<String>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        if !self.holding {
            self.holding = true;
            self.reserved
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        assert!(self.holding, "called without poll_ready");
        self.holding = false;
        self.reserved
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        std::future::ready(Ok(http::Response::new("ok".into())))
    }
}

/// A refused request reserves nothing in the inner service: its `poll_ready` is called only
/// for admitted requests, so no reservation is pinned under a driver that keeps one service
/// (a `Buffer` worker, `call_all`, a connection loop).
#[tokio::test]
async fn a_refused_request_reserves_nothing_in_the_inner_service() {
    use tower_layer::Layer;
    use tower_service::Service;
    let policy = Policy::<Client>::builder()
        .shared(
            "global",
            Arc::new(FixedWindow::new(WindowQuota::per_minute(1).unwrap())),
        )
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .keys(ClientKeys::new().allow_missing_peer())
        .build();
    let reserved = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut service = layer.layer(Reserving {
        reserved: reserved.clone(),
        holding: false,
    });
    let count = || reserved.load(std::sync::atomic::Ordering::SeqCst);
    // One service driven as a driver drives it: ready, call; ready, call.
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let admitted = service
        .call(http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(admitted.status(), 200);
    assert_eq!(count(), 0);
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let refused = service
        .call(http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(
        count(),
        0,
        "the refusal left a reservation in the inner service"
    );
}

/// An inner service whose `poll_ready` fails the first time any of its clones is polled;
/// the clone that failed stays failed (its clones too), and says so if called.
#[derive(Clone)]
struct FailsOnce {
    failed: Arc<std::sync::atomic::AtomicBool>,
    broken: bool,
}

impl tower_service::Service<http::Request<String>> for FailsOnce {
    type Response = http::Response<String>;
    type Error = &'static str;
    type Future = std::future::Ready<Result<http::Response<String>, &'static str>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), &'static str>> {
        if self.broken || !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.broken = true;
            return std::task::Poll::Ready(Err("not ready"));
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        std::future::ready(match self.broken {
            true => Err("called after its poll_ready failed"),
            false => Ok(http::Response::new("ok".into())),
        })
    }
}

/// An inner service whose `poll_ready` failed is not used again (tower's contract): that
/// request gets the error, later requests go to a fresh clone.
#[tokio::test]
async fn a_failed_inner_service_is_not_used_again() {
    use tower_layer::Layer;
    use tower_service::Service;
    let policy = Policy::<Client>::builder()
        .shared(
            "global",
            Arc::new(FixedWindow::new(WindowQuota::per_minute(100).unwrap())),
        )
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .keys(ClientKeys::new().allow_missing_peer())
        .build();
    let mut service = layer.layer(FailsOnce {
        failed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        broken: false,
    });
    // One service driven as a connection loop drives it: ready, call; ready, call.
    let mut results = Vec::new();
    for _ in 0..3 {
        std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .unwrap();
        let response = service.call(http::Request::new(String::new())).await;
        results.push(response.map(|response| response.status()));
    }
    assert_eq!(
        results,
        [
            Err("not ready"),
            Ok(http::StatusCode::OK),
            Ok(http::StatusCode::OK)
        ]
    );
    // Its clones too.
    let mut clone = service.clone();
    let response = clone.call(http::Request::new(String::new())).await.unwrap();
    assert_eq!(response.status(), 200);
}
