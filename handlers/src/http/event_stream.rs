//! Reading `text/event-stream` bodies (the WHATWG server-sent events format): a pure, bounded decoder and
//! an adapter over a backend's response body (`response`).

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; empty when absent.
    pub(crate) event: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
    /// The `id:` field, when present.
    pub(crate) id: Option<String>,
}

impl SseEvent {
    /// A `message` event (the default type), which carries a JSON-RPC message in MCP.
    pub(crate) fn is_message(&self) -> bool {
        self.event.is_empty() || self.event == "message"
    }
}

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StreamError {
    #[error("an event exceeds {0} bytes")]
    TooLarge(usize),
    #[error("reading the event stream failed: {0}")]
    Io(String),
}

/// Splits bytes into events. Lines end with CRLF, LF or CR; `:` lines are comments; an event is
/// dispatched at a blank line when it has data. Neither a line nor an event may exceed the limit.
#[derive(Debug)]
pub(crate) struct Decoder {
    max: usize,
    buf: Vec<u8>,
    event: String,
    data: String,
    id: Option<String>,
    retry: Option<u64>,
    has_data: bool,
    started: bool,
}

impl Decoder {
    /// A decoder refusing lines and events over `max` bytes.
    pub(crate) fn new(max: usize) -> Decoder {
        Decoder {
            max,
            buf: Vec::new(),
            event: String::new(),
            data: String::new(),
            id: None,
            retry: None,
            has_data: false,
            started: false,
        }
    }

    /// The last `id:` seen, whether or not its event carried data (the WHATWG "last event ID"): where a
    /// reconnection resumes the stream from.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.id.as_deref().filter(|id| !id.is_empty())
    }

    /// The last valid `retry:` field: how long to wait before reconnecting, in milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut VecDeque<SseEvent>,
    ) -> Result<(), StreamError> {
        self.buf.extend_from_slice(chunk);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
            }
        }
        let mut start = 0;
        while let Some(offset) = self.buf[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            let next = match self.buf[end] {
                // A CR at the end of the buffer may be the first half of a CRLF: wait for more.
                b'\r' if end + 1 == self.buf.len() => break,
                b'\r' if self.buf[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            self.line(&line, out)?;
            start = next;
        }
        self.buf.drain(..start);
        if self.buf.len() > self.max {
            return Err(StreamError::TooLarge(self.max));
        }
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut VecDeque<SseEvent>) -> Result<(), StreamError> {
        if line.is_empty() {
            if self.has_data {
                out.push_back(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                    id: self.id.clone(),
                });
            } else {
                self.event.clear();
                self.data.clear();
            }
            self.has_data = false;
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > self.max {
                    return Err(StreamError::TooLarge(self.max));
                }
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        Ok(())
    }
}

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// The events of a response body.
pub(crate) struct EventStream {
    body: Body,
    decoder: Decoder,
    ready: VecDeque<SseEvent>,
}

impl EventStream {
    /// Reads `response`'s body as events of at most `max` bytes.
    pub(crate) fn new(
        response: impl Into<super::response::BackendResponse>,
        max: usize,
    ) -> EventStream {
        EventStream {
            body: Box::pin(response.into().into_stream()),
            decoder: Decoder::new(max),
            ready: VecDeque::new(),
        }
    }

    /// Where a reconnection would resume this stream, and after how long (see [`Decoder::last_event_id`]).
    pub(crate) fn resume_point(&self) -> Option<(String, Option<u64>)> {
        let id = self.decoder.last_event_id()?;
        Some((id.to_owned(), self.decoder.retry_ms()))
    }

    /// The next event; `None` at the end of the body.
    pub(crate) async fn next(&mut self) -> Option<Result<SseEvent, StreamError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            match self.body.next().await? {
                Ok(chunk) => {
                    if let Err(e) = self.decoder.feed(&chunk, &mut self.ready) {
                        return Some(Err(e));
                    }
                }
                Err(e) => return Some(Err(StreamError::Io(e))),
            }
        }
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("decoder", &self.decoder)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = Decoder::new(1024);
        let mut out = VecDeque::new();
        for c in chunks {
            d.feed(c, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    #[test]
    fn events_across_chunks_and_line_endings() {
        let got = decode(&[
            b"\xEF\xBB\xBFevent: endpoint\r",
            b"\ndata: /messages?s=1\r\n\r\n",
            b": keep-alive\n\nid: 7\ndata: {\"a\":1}\ndata:second\r\r",
            b"id:\ndata: x\n",
            b"\n",
        ]);
        assert_eq!(
            got,
            vec![
                ev("endpoint", "/messages?s=1", None),
                ev("", "{\"a\":1}\nsecond", Some("7")),
                ev("", "x", Some("")),
            ]
        );
        assert!(got[1].is_message());
        assert!(!got[0].is_message());
    }

    #[test]
    fn priming_events_without_data_are_not_dispatched() {
        assert_eq!(
            decode(&[b"id: 1\ndata\n\n", b"id: 2\nretry: 10\n\n"]),
            vec![ev("", "", Some("1"))]
        );
        assert!(decode(&[b"event: x\n\n"]).is_empty());
    }

    #[test]
    fn the_resume_point_follows_ids_and_retry_even_without_data() {
        let mut d = Decoder::new(1024);
        let mut out = VecDeque::new();
        assert_eq!(d.last_event_id(), None);
        d.feed(b"id: event-1\nretry: 500\ndata: \n\n", &mut out)
            .unwrap();
        assert_eq!(
            (d.last_event_id(), d.retry_ms()),
            (Some("event-1"), Some(500))
        );
        d.feed(b"id: event-2\nretry: 5x\n\n", &mut out).unwrap();
        assert_eq!(
            (d.last_event_id(), d.retry_ms()),
            (Some("event-2"), Some(500))
        );
        d.feed(b"id:\nretry: 20\n\n", &mut out).unwrap();
        assert_eq!((d.last_event_id(), d.retry_ms()), (None, Some(20)));
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = Decoder::new(8);
        let mut out = VecDeque::new();
        assert_eq!(
            d.feed(b"data: 0123456789\n", &mut out),
            Err(StreamError::TooLarge(8))
        );
        let mut d = Decoder::new(8);
        assert!(d.feed(b"data: 0123456789", &mut out).is_err());
    }
}
