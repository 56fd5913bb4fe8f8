//! The JSON-RPC messages mcpgw itself writes towards a backend, as bytes: its requests (with its own integer
//! ids), notifications, `notifications/cancelled`, and answers to the backend's own requests.

use protocol::{Error, RequestId, Response};
use serde_json::value::RawValue;

/// A request with a gateway-minted id.
pub(crate) fn request(id: i64, method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let params_len = params.map_or(0, |p| p.get().len());
    let mut out = request_head(id, method, 64 + params_len);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
    out
}

/// A request with a gateway-minted id whose params `write_params` writes (`params`, the text it starts
/// from, only sizes the buffer).
pub(crate) fn request_with<E>(
    id: i64,
    method: &str,
    params: Option<&RawValue>,
    write_params: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Vec<u8>, E> {
    let params_len = params.map_or(0, |p| p.get().len());
    let mut out = request_head(id, method, 320 + params_len);
    out.extend_from_slice(b",\"params\":");
    write_params(&mut out)?;
    out.push(b'}');
    Ok(out)
}

/// `{"jsonrpc":"2.0","id":ID,"method":"METHOD"`, in a buffer with room for `more` bytes after it.
fn request_head(id: i64, method: &str, more: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + method.len() + more);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    push_string(&mut out, method);
    out
}

/// A notification.
pub(crate) fn notification(method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + method.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    push_string(&mut out, method);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
    out
}

/// `notifications/cancelled` for a request mcpgw sent.
pub(crate) fn cancelled(request_id: i64, reason: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + reason.len());
    out.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":",
    );
    out.extend_from_slice(request_id.to_string().as_bytes());
    out.extend_from_slice(b",\"reason\":");
    push_string(&mut out, reason);
    out.extend_from_slice(b"}}");
    out
}

/// The answer to a request the backend sent the gateway: its own id, byte for byte, with the result or the
/// error.
pub(crate) fn answer(id: &RequestId, reply: Result<Box<RawValue>, Error>) -> Vec<u8> {
    let response = match reply {
        Ok(result) => Response::result(id, result),
        Err(error) => Response::error(id, error),
    };
    serde_json::to_vec(&response).unwrap_or_default()
}

/// The answer to the backend's `ping`: `{}`.
pub(crate) fn pong(id: &RequestId) -> Vec<u8> {
    let empty = RawValue::from_string("{}".to_owned())
        .unwrap_or_else(|_| unreachable!("{{}} is valid JSON"));
    answer(id, Ok(empty))
}

fn push_string(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn a_request_with_written_params_is_one_json_rpc_request() {
        let body = request_with::<()>(7, "tools/call", None, |out| {
            out.extend_from_slice(br#"{"name":"t"}"#);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            parse(&body),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t"}})
        );
        let refused = request_with(1, "tools/call", None, |_| Err("no"));
        assert_eq!(refused, Err("no"));
    }

    #[test]
    fn messages() {
        let p = RawValue::from_string(r#"{"a":1.50}"#.into()).unwrap();
        let r = request(7, "tools/call", Some(&p));
        assert_eq!(
            String::from_utf8(r).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":1.50}}"#
        );
        assert_eq!(
            parse(&notification("notifications/initialized", None)),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        );
        assert_eq!(
            parse(&cancelled(3, "request timed out")),
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"request timed out"}})
        );
    }

    #[test]
    fn server_requests_are_answered_with_their_own_id() {
        let id: RequestId = serde_json::from_str("123456789012345678901234567890").unwrap();
        assert_eq!(
            String::from_utf8(pong(&id)).unwrap(),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#
        );
        let error = Error::new(protocol::ErrorCode::MethodNotFound, "no");
        let v = parse(&answer(&RequestId::string("s1"), Err(error)));
        assert_eq!(v["id"], "s1");
        assert_eq!(v["error"]["code"], -32601);
        assert_eq!(v["error"]["message"], "no");
        let result = RawValue::from_string(r#"{"n":1.50}"#.into()).unwrap();
        assert_eq!(
            String::from_utf8(answer(&RequestId::string("s2"), Ok(result))).unwrap(),
            r#"{"jsonrpc":"2.0","id":"s2","result":{"n":1.50}}"#
        );
    }
}
