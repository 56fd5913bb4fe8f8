//! How one JSON-RPC message is framed on every SSE stream the gateway writes (a session's GET stream, an
//! HTTP+SSE stream, a request answered as a stream).

use bytes::Bytes;

/// The JSON-RPC message of an event [`sse_event`] framed (for a transport that writes messages, not
/// events: `serve --stdio`).
pub fn sse_data(event: &[u8]) -> Option<&[u8]> {
    event
        .strip_prefix(b"event: message\ndata: ")?
        .strip_suffix(b"\n\n")
}

/// One SSE `message` event carrying a JSON-RPC message.
pub fn sse_event(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_gives_back_its_message() {
        let json = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
        assert_eq!(sse_data(&sse_event(json)), Some(&json[..]));
        assert_eq!(sse_data(b": keep-alive\n\n"), None);
    }
}
