//! A backend's HTTP answer as the readers (`reply`, `event_stream`, `edge`) take it, whichever client got it:
//! the data path's own exchange (`exchange`, hyper directly; its connection goes back to this thread's pool
//! once the body has been read to its end) or reqwest (the handshakes, the GET streams, best-effort posts).

use bytes::Bytes;
use futures_util::Stream;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, HeaderMap};

use super::connections::Checkin;

/// One answer: its status and headers, and a body read once.
#[derive(Debug)]
pub(crate) struct BackendResponse {
    status: StatusCode,
    headers: HeaderMap,
    body: Body,
}

#[derive(Debug)]
enum Body {
    Reqwest(reqwest::Response),
    Hyper {
        incoming: Incoming,
        /// The connection, returned to the pool when the body ends (dropped with the answer otherwise:
        /// a connection whose answer was not read to its end is not reused).
        checkin: Option<Checkin>,
    },
    Done,
}

impl BackendResponse {
    pub(super) fn from_hyper(
        response: hyper::Response<Incoming>,
        checkin: Option<Checkin>,
    ) -> Self {
        let (parts, incoming) = response.into_parts();
        BackendResponse {
            status: parts.status,
            headers: parts.headers,
            body: Body::Hyper { incoming, checkin },
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The `Content-Length` the backend declared, if any.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
    }

    /// The next piece of the body; `None` at its end. Errors say what failed, never what the body held.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        loop {
            match &mut self.body {
                Body::Reqwest(r) => return r.chunk().await.map_err(|e| super::chain(&e)),
                Body::Done => return Ok(None),
                Body::Hyper { incoming, checkin } => match incoming.frame().await {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) if data.is_empty() => {}
                        Ok(data) => return Ok(Some(data)),
                        // Trailers: nothing the readers use.
                        Err(_) => {}
                    },
                    Some(Err(e)) => {
                        self.body = Body::Done;
                        return Err(super::chain(&e));
                    }
                    None => {
                        if let Some(checkin) = checkin.take() {
                            checkin.done();
                        }
                        self.body = Body::Done;
                        return Ok(None);
                    }
                },
            }
        }
    }

    /// The body as a stream of pieces, ending after the first error.
    pub(crate) fn into_stream(self) -> impl Stream<Item = Result<Bytes, String>> + Send {
        futures_util::stream::unfold(Some(self), |state| async move {
            let mut response = state?;
            match response.chunk().await {
                Ok(Some(bytes)) => Some((Ok(bytes), Some(response))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        })
    }
}

impl From<reqwest::Response> for BackendResponse {
    fn from(response: reqwest::Response) -> Self {
        BackendResponse {
            status: response.status(),
            headers: response.headers().clone(),
            body: Body::Reqwest(response),
        }
    }
}
