//! How one JSON-RPC message is framed on every SSE stream the gateway writes (a session's GET stream, an
//! HTTP+SSE stream, a request answered as a stream).

use bytes::Bytes;

/// One SSE `message` event carrying a JSON-RPC message.
pub fn sse_event(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}
