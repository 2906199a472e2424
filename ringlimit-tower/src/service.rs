//! [`RateLimitService`]: the layer's service, what every clone of it shares (the backend,
//! the keys, each policy's headers), what a verdict means for a request, and its
//! [`ResponseFuture`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll, Waker};

use http::{Request, Response};
use pin_project_lite::pin_project;
use tower_service::Service;

use crate::answer::{is_grpc, Answer};
use crate::backend::{Backend, Decided, Verdict};
use crate::body::ResponseBody;
use crate::client::ClientRequest;
use crate::headers::{HeaderCache, PolicyHeaders, RateHeaders};
use crate::keys::ClientKeys;
use crate::quota::Quota;

/// The service of a [`RateLimitLayer`](crate::RateLimitLayer): every clone shares the
/// layer's backend, so a limit is one limit however many clones serve.
///
/// ```
/// use std::convert::Infallible;
/// use std::future::{ready, Ready};
/// use std::sync::Arc;
/// use std::task::{Context, Poll};
/// use http::{Request, Response, StatusCode};
/// use ringlimit::policy::Policy;
/// use ringlimit::{FixedWindow, WindowQuota};
/// use ringlimit_tower::{Client, RateLimitLayer};
/// use tower_layer::Layer;
/// use tower_service::Service;
/// #[derive(Clone)]
/// struct Hello;
/// impl Service<Request<String>> for Hello {
///     type Response = Response<String>;
///     type Error = Infallible;
///     type Future = Ready<Result<Response<String>, Infallible>>;
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: Request<String>) -> Self::Future {
///         ready(Ok(Response::new("hello".into())))
///     }
/// }
/// use ringlimit_tower::ClientKeys;
/// let policy = Policy::<Client>::builder()
///     .shared("global", Arc::new(FixedWindow::new(WindowQuota::per_minute(1)?)))
///     .build();
/// // No peer address in these requests: nothing here is keyed by it.
/// let keys = ClientKeys::new().allow_missing_peer();
/// let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
/// let mut service = layer.layer(Hello);
/// let mut clone = service.clone();
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let first = runtime.block_on(service.call(Request::new(String::new())))?;
/// let second = runtime.block_on(clone.call(Request::new(String::new())))?; // one limit
/// assert_eq!(first.status(), StatusCode::OK);
/// assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RateLimitService<S, B> {
    inner: S,
    shared: Arc<ServiceShared<S, B>>,
}

/// What every clone of one [`RateLimitService`] shares: the layer's part, and a clone of the
/// inner service that is never polled nor called, cloned to replace a clone whose
/// `poll_ready` failed (tower: a service whose `poll_ready` failed is not to be used again).
struct ServiceShared<S, B> {
    layer: Arc<Shared<B>>,
    /// Locked only to be cloned, after a failure (a `Mutex`, so that the service is `Send`
    /// whenever `S` is, `Sync` or not).
    spare: Mutex<S>,
}

/// What the layer and every service and clone share.
pub(crate) struct Shared<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) keys: ClientKeys,
    pub(crate) quotas: HashMap<String, Quota, foldhash::fast::RandomState>,
    /// Each policy's headers and refusal, built once.
    pub(crate) headers: HeaderCache,
}

/// What to do with a request once decided.
pub(crate) enum Outcome {
    /// Call the service, then add these headers.
    Call(RateHeaders),
    /// Answer without it, with these headers.
    Answer(Answer, RateHeaders),
}

impl<B> Shared<B> {
    pub(crate) fn new(
        backend: Arc<B>,
        keys: ClientKeys,
        quotas: HashMap<String, Quota>,
        legacy: bool,
    ) -> Self {
        Self {
            backend,
            keys,
            quotas: quotas.into_iter().collect(),
            headers: HeaderCache::new(legacy),
        }
    }

    /// What policy `name`'s headers say of it alone, under the quota the verdict names
    /// (the one its request was decided under), unless the builder was given the policy's.
    fn policy_headers(&self, name: &str, quota: Option<Quota>) -> Arc<PolicyHeaders> {
        let quota = self.quotas.get(name).copied().or(quota);
        self.headers.get(name, quota)
    }

    /// The headers of policy `name` (`None`: none applied), its numbers still unknown.
    fn headers(&self, policy: Option<&str>, quota: Option<Quota>) -> RateHeaders {
        RateHeaders {
            policy: policy.map(|name| self.policy_headers(name, quota)),
            ..RateHeaders::default()
        }
    }

    /// What the verdict means for the request.
    pub(crate) fn outcome(&self, verdict: &Verdict) -> Outcome {
        match verdict {
            Verdict::Admitted {
                policy,
                remaining,
                reset_after,
                quota,
            } => Outcome::Call(RateHeaders {
                remaining: *remaining,
                reset: *reset_after,
                ..self.headers(policy.as_deref(), *quota)
            }),
            Verdict::Refused {
                policy,
                available,
                retry_after,
                quota,
            } => {
                let policy = self.policy_headers(policy, *quota);
                Outcome::Answer(
                    Answer::refused(policy.refusal.clone()),
                    RateHeaders {
                        policy: Some(policy),
                        remaining: *available,
                        // Retry-After is not before the end of the effective window (draft §6).
                        reset: Some(*retry_after),
                        retry_after: Some(*retry_after),
                    },
                )
            }
            Verdict::Unavailable {
                policy,
                reason,
                retry_after,
                quota,
            } => Outcome::Answer(
                Answer::unavailable(reason.clone()),
                RateHeaders {
                    retry_after: Some(*retry_after),
                    ..self.headers(policy.as_deref(), *quota)
                },
            ),
        }
    }
}

impl<S: Clone, B> RateLimitService<S, B> {
    pub(crate) fn new(inner: S, layer: Arc<Shared<B>>) -> Self {
        let spare = Mutex::new(inner.clone());
        Self {
            inner,
            shared: Arc::new(ServiceShared { layer, spare }),
        }
    }

    /// Replaces the inner service, whose `poll_ready` failed, by a clone of the spare.
    #[cold]
    #[inline(never)]
    fn replace_failed(&mut self) {
        // Poisoned only by a panic in `S::clone`, which changed nothing in the spare.
        let spare = self
            .shared
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.inner = spare.clone();
    }
}

impl<S: Clone, B> Clone for RateLimitService<S, B> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug, B> fmt::Debug for RateLimitService<S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The future of a response through the layer, boxed only while a backend decides over the
/// network, or while an admitted request waits for an inner service that was not ready.
type Boxed<ResBody, E> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody<ResBody>>, E>> + Send>>;

pin_project! {
    /// The response future of [`RateLimitService`].
    #[project = ResponseFutureProj]
    pub struct ResponseFuture<F, ResBody, E> {
        #[pin]
        state: State<F, ResBody, E>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, ResBody, E> {
        /// Answered by the layer, or failed (the inner service not ready with an error).
        Answered { result: Option<Result<Response<ResponseBody<ResBody>>, E>> },
        /// Admitted, the inner service called: its response gets the headers.
        Called {
            #[pin]
            future: F,
            headers: Option<RateHeaders>,
        },
        /// Deciding over the network, or admitted by a service not ready at once: the inner
        /// service polled ready, called.
        Deciding { future: Boxed<ResBody, E> },
    }
}

impl<F, ResBody, E> Future for ResponseFuture<F, ResBody, E>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
{
    type Output = Result<Response<ResponseBody<ResBody>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Answered { result } => match result.take() {
                Some(result) => Poll::Ready(result),
                None => panic!("ResponseFuture polled after completion"),
            },
            StateProj::Called { future, headers } => {
                let mut response = ready!(future.poll(cx))?;
                if let Some(headers) = headers.take() {
                    headers.write(response.headers_mut());
                }
                Poll::Ready(Ok(response.map(ResponseBody::inner)))
            }
            StateProj::Deciding { future } => future.as_mut().poll(cx),
        }
    }
}

impl<F, ResBody, E> ResponseFuture<F, ResBody, E> {
    fn answered(response: Response<ResponseBody<ResBody>>) -> Self {
        Self::state(State::Answered {
            result: Some(Ok(response)),
        })
    }

    fn state(state: State<F, ResBody, E>) -> Self {
        Self { state }
    }
}

impl<S, B, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimitService<S, B>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Backend,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody, S::Error>;

    /// Always ready: the inner service is polled ready only for a request the backend
    /// admitted (the pattern of axum's `oneshot`). Forwarding `poll_ready` would reserve
    /// capacity in the inner service (a `ConcurrencyLimit` permit, a `Buffer` slot) that a
    /// refused request never uses, pinned until the next call under a driver that keeps one
    /// service.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let shared = &self.shared.layer;
        let client = match shared.keys.client(request.headers(), request.extensions()) {
            Ok(client) => client,
            Err(error) => {
                let grpc = is_grpc(request.headers());
                return ResponseFuture::answered(Answer::key_error(&error).response(grpc));
            }
        };
        let view = ClientRequest::new(&client, request.headers())
            .with_id_header(shared.keys.id_header_name())
            .with_api_key_header(shared.keys.api_key_header_name());
        match B::decide(&shared.backend, &view) {
            Decided::Now(verdict) => match shared.outcome(&verdict) {
                Outcome::Call(headers) => self.admitted(request, headers),
                // Whether the request is gRPC matters only to the layer's own answers.
                Outcome::Answer(answer, headers) => {
                    ResponseFuture::answered(answered(answer, &headers, is_grpc(request.headers())))
                }
            },
            Decided::Later(deciding) => {
                let grpc = is_grpc(request.headers());
                // A clone is polled ready and called once admitted (see `poll_ready`).
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let shared = self.shared.layer.clone();
                ResponseFuture::state(State::Deciding {
                    future: Box::pin(async move {
                        let verdict = deciding.await;
                        let headers = match shared.outcome(&verdict) {
                            Outcome::Call(headers) => headers,
                            Outcome::Answer(answer, headers) => {
                                return Ok(answered(answer, &headers, grpc))
                            }
                        };
                        std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
                        let mut response = inner.call(request).await?;
                        headers.write(response.headers_mut());
                        Ok(response.map(ResponseBody::inner))
                    }),
                })
            }
        }
    }
}

impl<S: Clone, B> RateLimitService<S, B> {
    /// The future of a request admitted at once: the inner service called now if it is
    /// ready now (most are: axum's routers, `service_fn`s), with no allocation; else polled
    /// ready in the response future, boxed. A service whose `poll_ready` fails is replaced
    /// (see [`ServiceShared`]): the error is this request's answer, the next request goes to
    /// a fresh clone.
    fn admitted<ReqBody, ResBody>(
        &mut self,
        request: Request<ReqBody>,
        headers: RateHeaders,
    ) -> ResponseFuture<S::Future, ResBody, S::Error>
    where
        S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Send + 'static,
        ReqBody: Send + 'static,
        ResBody: Send + 'static,
    {
        // Polled with a waker that wakes nothing: a service not ready registers it, and is
        // polled again below, in the response future, with the task's own waker, which it
        // registers then (a service must wake the waker of its latest `Pending`).
        match self
            .inner
            .poll_ready(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(Ok(())) => ResponseFuture::state(State::Called {
                future: self.inner.call(request),
                headers: Some(headers),
            }),
            Poll::Ready(Err(error)) => {
                // Never used again: later requests go to a clone of the spare.
                self.replace_failed();
                ResponseFuture::state(State::Answered {
                    result: Some(Err(error)),
                })
            }
            Poll::Pending => {
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                ResponseFuture::state(State::Deciding {
                    future: Box::pin(async move {
                        std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
                        let mut response = inner.call(request).await?;
                        headers.write(response.headers_mut());
                        Ok(response.map(ResponseBody::inner))
                    }),
                })
            }
        }
    }
}

/// The layer's own answer with its rate-limit headers.
fn answered<B>(
    answer: Answer,
    headers: &RateHeaders,
    grpc: Option<http::HeaderValue>,
) -> Response<ResponseBody<B>> {
    let mut response = answer.response(grpc);
    headers.write(response.headers_mut());
    response
}
