//! The first check of every request, on every route (`/healthz` and `/readyz` too), before CORS and any
//! handler: a request whose framing or whose host is ambiguous is refused with 400 before anything reads it.
//!
//! - **Framing** (RFC 9112 §6.1): `Transfer-Encoding` together with `Content-Length` (either order), a
//!   `Transfer-Encoding` whose final coding is not `chunked` (`identity` included), or any
//!   `Transfer-Encoding` on HTTP/1.0. A hop in front of the gateway may have framed such a body differently
//!   from actix (which reads `chunked` and ignores `Content-Length`, and takes `identity` for no body): what is
//!   left of it would be read as the next request (request smuggling). The answer closes the connection, and
//!   the connection is marked ([`FramingRefused`]): actix has already decoded, and will dispatch, the requests
//!   that arrived pipelined behind it in the same read, so each of those is refused too, never served. actix's
//!   h1 codec already refuses (400, closed) several `Content-Length` or several `Transfer-Encoding` headers, a
//!   `+` or non-numeric length and codings other than `chunked` and `identity`; HTTP/2 has no
//!   `Transfer-Encoding` (the h2 codec resets such a stream), so this only ever fires on HTTP/1.x.
//! - **HTTP/2 streams**: a request on an HTTP/2 connection that already has
//!   `[server] h2_max_concurrent_streams` requests in progress is answered 503 with `Retry-After`
//!   (`connections`: actix-web does not let its h2 server advertise a limit).
//! - **Host and Origin** ([`super::origin::single_host_and_origin`]): several `Host` or `Origin` headers, or a
//!   `Host` header naming another host than the request's authority (HTTP/2's `:authority`, an absolute-form
//!   HTTP/1.1 target): DNS rebinding would pass on whichever value a check happened to read.
//!
//! Cost per request: three header-map lookups (`transfer-encoding`, `host`, `origin`; each the hash of a short
//! static name), a fourth (`content-length`) only when `Transfer-Encoding` is present, one lookup by type in
//! the connection's data (the mark) and a `Cell` read, and, when a `Host` header and an authority are both
//! present, one case-insensitive comparison of two short strings. No allocation on the path of a valid
//! request.

use std::any::Any;
use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, EitherBody, MessageBody};
use actix_web::dev::Extensions;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{CONTENT_LENGTH, HeaderMap, TRANSFER_ENCODING};
use actix_web::http::{ConnectionType, Version};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use bytes::Bytes;
use protocol::validate::Rejection;

use super::connections::{Active, Connection};
use super::origin::single_host_and_origin;
use super::rejection_response;

/// The mark of a connection on which a request was refused for its framing (the connection's data, set up by
/// [`on_connect`]): every later request on it is refused as well.
#[derive(Debug, Default)]
pub struct FramingRefused(Cell<bool>);

/// Gives each new connection its [`FramingRefused`] mark (`HttpServer::on_connect`).
pub fn on_connect(_: &dyn Any, data: &mut Extensions) {
    data.insert(FramingRefused::default());
}

/// Refuses what [the module](self) describes; passes everything else on untouched.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + Unpin + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let mark = req.conn_data::<FramingRefused>();
    let refused = match framing(req.headers(), req.version()) {
        Err(r) => Some(r),
        Ok(()) if mark.is_some_and(|m| m.0.get()) => Some(bad_request(
            "a request before this one on the connection was framed two ways",
        )),
        Ok(()) => None,
    };
    if let Some(r) = refused {
        if let Some(mark) = mark {
            mark.0.set(true);
        }
        let mut resp = rejection_response(&r);
        resp.head_mut().set_connection_type(ConnectionType::Close);
        return Ok(req.into_response(resp).map_into_right_body());
    }
    let authority = req.uri().authority().map(|a| a.as_str());
    if let Err(r) = single_host_and_origin(req.headers(), authority) {
        let resp: HttpResponse = rejection_response(&r);
        return Ok(req.into_response(resp).map_into_right_body());
    }
    // Counted on its connection until the response's body has been sent: a shutdown shuts only idle
    // connections.
    let connection = req.conn_data::<Arc<Connection>>();
    let active = connection.map(Connection::begin);
    if let Some(conn) = connection.filter(|c| req.version() == Version::HTTP_2 && c.over_streams())
    {
        let why = format!(
            "more than {} requests at once on one HTTP/2 connection (server.h2_max_concurrent_streams)",
            conn.max_streams()
        );
        drop(active);
        let resp: HttpResponse = rejection_response(&Rejection::overloaded(&why, None));
        return Ok(req.into_response(resp).map_into_right_body());
    }
    let worker = req.app_data::<web::Data<super::Worker>>().cloned();
    let mut res = next.call(req).await?;
    // Asked when the answer is ready, not when the request came: one that was in flight when the drain
    // began closes its connection too.
    if worker.is_some_and(|w| w.gw.drain.is_draining()) {
        // A shutdown has begun: the connection closes after this response.
        res.response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    Ok(res
        .map_body(|_, body| Tracked {
            body,
            _active: active,
        })
        .map_into_left_body())
}

/// A response's body, counted on its connection until it is sent (or dropped).
struct Tracked<B> {
    body: B,
    _active: Option<Active>,
}

impl<B: MessageBody + Unpin> MessageBody for Tracked<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

/// Whether the body's length is unambiguous (RFC 9112 §6.1, §6.3).
pub(super) fn framing(headers: &HeaderMap, version: Version) -> Result<(), Rejection> {
    let Some(te) = headers.get(TRANSFER_ENCODING) else {
        return Ok(());
    };
    let why = if headers.contains_key(CONTENT_LENGTH) {
        "both transfer-encoding and content-length"
    } else if version < Version::HTTP_11 {
        "transfer-encoding on http/1.0"
    } else if !ends_in_chunked(te.as_bytes()) {
        "transfer-encoding whose final coding is not chunked"
    } else {
        return Ok(());
    };
    Err(bad_request(why))
}

fn bad_request(why: &str) -> Rejection {
    Rejection::bad_framing(why)
}

/// Whether a `Transfer-Encoding` value's last coding is `chunked`.
fn ends_in_chunked(value: &[u8]) -> bool {
    let last = value.rsplit(|b| *b == b',').next().unwrap_or_default();
    last.trim_ascii().eq_ignore_ascii_case(b"chunked")
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn a_body_framed_two_ways_is_refused() {
        let v11 = Version::HTTP_11;
        // (headers, version, refused)
        type Case<'a> = (&'a [(&'a str, &'a str)], Version, bool);
        let table: [Case; 10] = [
            (&[("content-length", "5")], v11, false),
            (&[("transfer-encoding", "chunked")], v11, false),
            (&[("transfer-encoding", " Chunked ")], v11, false),
            (&[], v11, false),
            (
                &[("content-length", "5"), ("transfer-encoding", "chunked")],
                v11,
                true,
            ),
            (
                &[("transfer-encoding", "chunked"), ("content-length", "5")],
                v11,
                true,
            ),
            (
                &[("transfer-encoding", "identity"), ("content-length", "5")],
                v11,
                true,
            ),
            (&[("transfer-encoding", "identity")], v11, true),
            (&[("transfer-encoding", "chunked, gzip")], v11, true),
            (&[("transfer-encoding", "chunked")], Version::HTTP_10, true),
        ];
        for (pairs, version, refused) in table {
            let got = framing(&headers(pairs), version);
            assert_eq!(got.is_err(), refused, "{pairs:?} {version:?}");
            if let Err(r) = got {
                assert_eq!(r.status, 400);
            }
        }
    }
}
