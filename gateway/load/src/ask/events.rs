//! A response stream read as it comes: [`Events`] turns the pieces of a `text/event-stream` body into the data
//! of each complete SSE event (lines ended by LF, CRLF or CR; `data:` lines joined by LF; comments and other
//! fields skipped; an event without data, such as a priming event, dropped), and [`incoming`] says what an
//! event's message is to the request that opened the stream: its response, a request of the server, or
//! something to skip (a notification, a response to another request).

use std::collections::VecDeque;

use protocol::message::{Message, Request};

use crate::wire::answers;

/// An incremental SSE parser: bytes in, the data of each complete event out.
#[derive(Debug, Default)]
pub(crate) struct Events {
    /// The line being read.
    line: Vec<u8>,
    /// The data lines of the event being read, joined.
    data: Option<String>,
    /// The last byte fed was a CR: a LF right after it ends no second line.
    after_cr: bool,
    /// Events complete and not yet taken.
    ready: VecDeque<String>,
}

impl Events {
    /// Reads `bytes`, the next piece of the stream.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line();
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
    }

    /// The end of the stream: a last line or event not yet ended counts (as the whole-body reader does).
    pub(crate) fn finish(&mut self) {
        if !self.line.is_empty() {
            self.end_line();
        }
        self.end_line();
    }

    /// The data of the next complete event.
    pub(crate) fn next_event(&mut self) -> Option<String> {
        self.ready.pop_front()
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if let Some(data) = self.data.take().filter(|d| !d.is_empty()) {
                self.ready.push_back(data);
            }
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*text, ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
    }
}

/// What an event's message is to the request `id` that opened the stream.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// Its response (or an error without an id).
    Response,
    /// A request of the server, to be answered.
    Request(Request),
    /// A notification, a response to something else, or no JSON-RPC message: skipped.
    Other,
}

/// What the event data `data` is to request `id`.
pub(crate) fn incoming(data: &str, id: u64) -> Incoming {
    if answers(data, id) {
        return Incoming::Response;
    }
    match Message::parse(data.as_bytes()) {
        Ok(Message::Request(r)) => Incoming::Request(r),
        _ => Incoming::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<String> {
        let mut e = Events::default();
        let mut out = Vec::new();
        for p in pieces {
            e.feed(p);
            out.extend(std::iter::from_fn(|| e.next_event()));
        }
        e.finish();
        out.extend(std::iter::from_fn(|| e.next_event()));
        out
    }

    #[test]
    fn events_are_cut_wherever_the_pieces_end() {
        let one = r#"{"a":1}"#;
        for (pieces, want) in [
            (vec![&b"data: {\"a\":1}\n\n"[..]], vec![one]),
            (vec![b"data: {\"a\":1}\r\n\r\n"], vec![one]),
            (vec![b"data: {\"a\":1}\r\r"], vec![one]),
            (vec![b"data: {\"a\"", b":1}\r", b"\n", b"\r\n"], vec![one]),
            (vec![b"data:{\"a\":1}\n\n"], vec![one]),
            // several data lines are joined by LF
            (vec![b"data: {\"a\":\ndata: 1}\n\n"], vec!["{\"a\":\n1}"]),
            // comments, event names, ids and retry are not data; a priming event (id, empty data) is dropped
            (
                vec![b": keep-alive\n\nid: 1\ndata:\n\nevent: message\nid: 2\nretry: 10\ndata: {\"a\":1}\n\n"],
                vec![one],
            ),
            // the last event may lack its blank line, even its line end
            (vec![b"data: {\"a\":1}\n"], vec![one]),
            (vec![b"data: {\"a\":1}"], vec![one]),
            (vec![b"data: x\n\ndata: y\n\n"], vec!["x", "y"]),
            (vec![b"", b"\n\n\n"], vec![]),
        ] {
            assert_eq!(events(&pieces), want, "{pieces:?}");
        }
    }

    #[test]
    fn requests_responses_and_the_rest() {
        for (data, want) in [
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "response"),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}"#,
                "response",
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
                "response",
            ),
            (r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, "other"),
            (
                r#"{"jsonrpc":"2.0","id":"mcpgw-ask-1","method":"elicitation/create","params":{"message":"?"}}"#,
                "request elicitation/create \"mcpgw-ask-1\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#,
                "request roots/list 7",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
                "other",
            ),
            (r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, "other"),
            ("not json", "other"),
        ] {
            let got = match incoming(data, 7) {
                Incoming::Response => "response".to_owned(),
                Incoming::Request(r) => format!("request {} {}", r.method, r.id.raw()),
                Incoming::Other => "other".to_owned(),
            };
            assert_eq!(got, want, "{data}");
        }
    }
}
