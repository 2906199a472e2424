//! [`ResponseBody`]: the service's own body, or the layer's answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// The body of a response through the layer: the inner service's, or the layer's own
    /// answer (a problem+json document, or nothing for a gRPC trailers-only answer).
    ///
    /// ```
    /// use http_body::Body;
    /// use ringlimit_tower::ResponseBody;
    /// let body = ResponseBody::<String>::full("{}");
    /// assert_eq!(body.size_hint().exact(), Some(2));
    /// ```
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Full { data: Option<Bytes> },
    }
}

impl<B> ResponseBody<B> {
    /// The inner service's body.
    ///
    /// ```
    /// use ringlimit_tower::ResponseBody;
    /// let _body = ResponseBody::inner(String::from("hello"));
    /// ```
    pub fn inner(body: B) -> Self {
        Self {
            kind: Kind::Inner { body },
        }
    }

    /// A body of `data` (none if empty).
    ///
    /// ```
    /// use http_body::Body;
    /// use ringlimit_tower::ResponseBody;
    /// assert!(ResponseBody::<String>::full("").is_end_stream());
    /// ```
    pub fn full(data: impl Into<Bytes>) -> Self {
        let data: Bytes = data.into();
        Self {
            kind: Kind::Full {
                data: (!data.is_empty()).then_some(data),
            },
        }
    }
}

impl<B: Body<Data = Bytes>> Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Full { data } => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Full { data } => data.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Full { data } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
        }
    }
}
