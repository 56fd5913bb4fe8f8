//! The stdio transport: newline-delimited JSON-RPC over any `AsyncRead`/`AsyncWrite` pair (stdin/stdout in
//! production, in-memory pipes in tests). Dual-era per the spec: `initialize` puts the process in legacy
//! semantics; a request whose `_meta` names a protocol version is served statelessly as 2026-07-28.
//!
//! Lifecycle decisions are taken in order as lines arrive; `tools/call` runs as its own task (so a slow tool
//! does not hold up the others, and `notifications/cancelled` can abort it), everything else is answered
//! inline. One writer owns the output and counts answers for `--crash-after`. Garbage lines get a -32700
//! response with `id: null` and serving goes on.

use std::io;
use std::sync::Arc;

use bytes::BytesMut;
use dashmap::DashMap;
use futures_util::StreamExt;
use futures_util::future::{AbortHandle, Abortable, join_all};
use protocol::message::{MessageError, Parsed};
use protocol::meta::{CLIENT_CAPABILITIES, PROTOCOL_VERSION};
use protocol::payload::InitializeRequestParams;
use protocol::shape::response_bytes;
use protocol::{Era, Error, ErrorCode, Generation, Message, Notification, Request, RequestId};
use protocol::{Response, message};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{Decoder, FramedRead};

use super::EraMode;
use super::dispatch::Mock;
use super::faults::{CrashCounter, Verdict};
use super::lifecycle::negotiate;

/// The longest input line accepted; longer lines are answered with a parse error and skipped.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// `tools/call` tasks (and batches) running at once; reading pauses while all are busy.
const MAX_IN_FLIGHT: usize = 1024;
/// Responses waiting for the writer.
const OUTBOX: usize = 256;
/// Errors without a readable request id are written in JSON-RPC 2.0's form, `"id": null` (2025-11-25 and
/// later would leave the id out; every client reads the null form).
const NULL_ID_STYLE: Generation = Generation::V2025_06_18;
const MODERN: Generation = Generation::V2026_07_28;

/// Why serving ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The input closed and every answer was written.
    InputClosed,
    /// `--crash-after` was reached: the last answer is written and flushed; the process must exit.
    Crashed,
}

/// Serves `input`/`output` until the input closes (after writing every pending answer) or the crash
/// point is reached.
pub(crate) async fn serve<R, W>(mock: Arc<Mock>, input: R, output: W) -> io::Result<End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::channel(OUTBOX);
    let writer = write_loop(output, rx, &mock.crash);
    tokio::pin!(writer);
    let mut conn = Connection {
        mock: mock.clone(),
        tx,
        legacy: None,
        in_flight: Arc::new(DashMap::new()),
        seq: 0,
        permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
    };
    tokio::select! {
        end = &mut writer => return end,
        read = conn.read_loop(input) => read?,
    }
    // The input closed: let running calls finish (they hold senders), then the writer drains.
    drop(conn);
    writer.await
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut out: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    crash: &CrashCounter,
) -> io::Result<End> {
    while let Some(mut msg) = rx.recv().await {
        let verdict = crash.record();
        if verdict == Verdict::Withhold {
            continue;
        }
        msg.push(b'\n');
        out.write_all(&msg).await?;
        if verdict == Verdict::AnswerThenCrash {
            out.flush().await?;
            return Ok(End::Crashed);
        }
        if rx.is_empty() {
            out.flush().await?;
        }
    }
    out.flush().await?;
    Ok(End::InputClosed)
}

/// One line of input, or a line that was too long (and was skipped).
#[derive(Debug)]
enum Frame {
    Line(BytesMut),
    TooLong,
}

/// Splits input at `\n` (dropping a trailing `\r`); never fails on content. A line longer than `max`
/// is skipped and reported once as [`Frame::TooLong`].
#[derive(Debug)]
struct Lines {
    max: usize,
    scanned: usize,
    discarding: bool,
}

impl Lines {
    fn new(max: usize) -> Lines {
        Lines {
            max,
            scanned: 0,
            discarding: false,
        }
    }
}

impl Decoder for Lines {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        match buf[self.scanned..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                let end = self.scanned + i;
                let mut line = buf.split_to(end + 1);
                self.scanned = 0;
                if std::mem::take(&mut self.discarding) {
                    return Ok(Some(Frame::TooLong));
                }
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                Ok(Some(Frame::Line(line)))
            }
            None if buf.len() > self.max => {
                buf.clear();
                self.scanned = 0;
                self.discarding = true;
                Ok(None)
            }
            None => {
                self.scanned = buf.len();
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        self.scanned = 0;
        if std::mem::take(&mut self.discarding) {
            buf.clear();
            return Ok(Some(Frame::TooLong));
        }
        Ok((!buf.is_empty()).then(|| Frame::Line(buf.split())))
    }
}

/// What a request's `_meta` claims about its protocol version.
#[derive(Debug)]
enum Claim {
    /// No `io.modelcontextprotocol/protocolVersion`.
    Absent,
    /// A version, and whether client capabilities are declared.
    Version { version: String, capabilities: bool },
    /// `_meta` or its version is of the wrong type.
    Malformed(Error),
}

#[derive(Deserialize)]
struct ParamsMeta<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MetaKeys<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    capabilities: Option<&'a RawValue>,
}

fn claim(params: Option<&RawValue>) -> Claim {
    let malformed = |what: String| Claim::Malformed(Error::new(ErrorCode::InvalidParams, what));
    let Some(params) = params.filter(|p| p.get().starts_with('{')) else {
        return Claim::Absent;
    };
    let Ok(ParamsMeta { meta: Some(meta) }) = serde_json::from_str(params.get()) else {
        return Claim::Absent;
    };
    if !meta.get().starts_with('{') {
        return malformed("invalid params: _meta must be an object".to_owned());
    }
    let Ok(keys) = serde_json::from_str::<MetaKeys<'_>>(meta.get()) else {
        return malformed("invalid params: _meta cannot be read".to_owned());
    };
    let Some(version) = keys.version else {
        return Claim::Absent;
    };
    match serde_json::from_str::<String>(version.get()) {
        Ok(version) => Claim::Version {
            version,
            capabilities: keys.capabilities.is_some_and(|c| c.get().starts_with('{')),
        },
        Err(_) => malformed(format!(
            "invalid params: _meta {PROTOCOL_VERSION} must be a string"
        )),
    }
}

fn invalid_params(msg: String) -> Error {
    Error::new(ErrorCode::InvalidParams, msg)
}

#[derive(Deserialize)]
struct Cancelled<'a> {
    #[serde(rename = "requestId", borrow)]
    request_id: &'a RawValue,
}

/// The reading side: lifecycle state and the running `tools/call` tasks.
struct Connection {
    mock: Arc<Mock>,
    tx: mpsc::Sender<Vec<u8>>,
    /// The generation negotiated by `initialize`, once it happened.
    legacy: Option<Generation>,
    /// Running calls by raw request id, each with a sequence number so that a task only removes its own.
    in_flight: Arc<DashMap<String, (u64, AbortHandle)>>,
    seq: u64,
    permits: Arc<Semaphore>,
}

impl Connection {
    async fn read_loop<R: AsyncRead + Unpin>(&mut self, input: R) -> io::Result<()> {
        let mut frames = FramedRead::new(input, Lines::new(MAX_LINE));
        while let Some(frame) = frames.next().await {
            match frame? {
                Frame::TooLong => {
                    let err = Error::new(
                        ErrorCode::ParseError,
                        format!("parse error: line longer than {MAX_LINE} bytes"),
                    );
                    self.send(error_bytes(None, err, NULL_ID_STYLE)).await;
                }
                Frame::Line(line) if line.trim_ascii().is_empty() => {}
                Frame::Line(line) => self.on_line(&line).await,
            }
        }
        Ok(())
    }

    async fn send(&self, body: Vec<u8>) {
        // Fails only once the writer stopped (crash point reached): nothing left to do with the answer.
        let _ = self.tx.send(body).await;
    }

    async fn on_line(&mut self, line: &[u8]) {
        match message::parse(line) {
            Err(MessageError { id, error }) => {
                let g = if id.is_some() {
                    self.error_generation()
                } else {
                    NULL_ID_STYLE
                };
                self.send(error_bytes(id.as_ref(), error, g)).await;
            }
            Ok(Parsed::Single(Message::Request(r))) => self.on_request(r).await,
            Ok(Parsed::Single(Message::Notification(n))) => self.on_notification(&n),
            // The mock never sends requests, so responses from the client answer nothing.
            Ok(Parsed::Single(Message::Response(_))) => {}
            Ok(Parsed::Batch(entries)) => self.on_batch(entries).await,
        }
    }

    /// The generation errors are shaped for when the request's own era is not known.
    fn error_generation(&self) -> Generation {
        self.legacy.unwrap_or(Generation::LATEST_LEGACY)
    }

    async fn on_request(&mut self, request: Request) {
        let g = match self.route(&request) {
            Ok(g) => g,
            Err((g, err)) => {
                return self.send(error_bytes(Some(&request.id), err, g)).await;
            }
        };
        if request.method == "tools/call" {
            self.spawn_call(g, request).await;
        } else {
            let reply = self.mock.answer(g, &request).await;
            self.send(reply.body).await;
        }
    }

    /// Settles the generation a request is answered in, or the error (and its generation) to answer.
    fn route(&mut self, request: &Request) -> Result<Generation, (Generation, Error)> {
        let era = self.mock.era();
        if request.method == "initialize" {
            let refuse = |e| (Generation::LATEST_LEGACY, e);
            let params: InitializeRequestParams = request.params_as().map_err(refuse)?;
            let g = negotiate(self.mock.served(), &params.protocol_version).map_err(refuse)?;
            self.legacy = Some(g);
            return Ok(g);
        }
        let claim = match era {
            EraMode::Legacy => Claim::Absent,
            _ => claim(request.params.as_deref()),
        };
        let modern = match (era, &claim) {
            (EraMode::Legacy, _) => false,
            (EraMode::Modern, _) => true,
            (EraMode::Dual, _) if request.method == "server/discover" => true,
            (EraMode::Dual, Claim::Absent) => false,
            (EraMode::Dual, Claim::Malformed(_)) => true,
            // A legacy version in _meta keeps an initialized process's request legacy.
            (EraMode::Dual, Claim::Version { version, .. }) => {
                !(self.legacy.is_some() && Generation::parse(version).is_ok_and(|g| !g.is_modern()))
            }
        };
        if modern {
            return self.modern(claim);
        }
        match self.legacy {
            Some(g) => Ok(g),
            None => {
                let g = self
                    .mock
                    .served()
                    .latest_of(Era::Legacy)
                    .unwrap_or(Generation::LATEST_LEGACY);
                match request.method.as_str() {
                    "ping" => Ok(g),
                    "server/discover" => Err((
                        g,
                        Error::new(
                            ErrorCode::MethodNotFound,
                            "method not found: server/discover",
                        ),
                    )),
                    _ => Err((
                        g,
                        Error::new(
                            ErrorCode::InvalidRequest,
                            "invalid request: the server is not initialized; send initialize first",
                        ),
                    )),
                }
            }
        }
    }

    /// The 2026-07-28 checks stdio can make: the version is served, the required `_meta` keys are there.
    fn modern(&self, claim: Claim) -> Result<Generation, (Generation, Error)> {
        let served = self.mock.served();
        let (version, capabilities) = match claim {
            Claim::Version {
                version,
                capabilities,
            } => (version, capabilities),
            Claim::Absent => {
                return Err((
                    MODERN,
                    invalid_params(format!(
                        "invalid params: _meta is missing required key {PROTOCOL_VERSION}"
                    )),
                ));
            }
            Claim::Malformed(e) => return Err((MODERN, e)),
        };
        match Generation::parse(&version) {
            Ok(g) if g.is_modern() && served.contains(g) => {}
            _ => {
                let err = Error::unsupported_version(&served.version_strings(), &version);
                return Err((MODERN, err));
            }
        }
        if !capabilities {
            return Err((
                MODERN,
                invalid_params(format!(
                    "invalid params: _meta is missing required key {CLIENT_CAPABILITIES}"
                )),
            ));
        }
        Ok(MODERN)
    }

    fn on_notification(&mut self, n: &Notification) {
        if n.method != "notifications/cancelled" {
            // notifications/initialized and the rest need nothing from the mock.
            return;
        }
        let Some(params) = n.params.as_deref() else {
            return;
        };
        if let Ok(c) = serde_json::from_str::<Cancelled<'_>>(params.get())
            && let Some((_, (_, handle))) = self.in_flight.remove(c.request_id.get())
        {
            handle.abort();
        }
    }

    async fn spawn_call(&mut self, g: Generation, request: Request) {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let (handle, registration) = AbortHandle::new_pair();
        let key = request.id.raw().to_owned();
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.in_flight.insert(key.clone(), (seq, handle));
        let (mock, tx, in_flight) = (self.mock.clone(), self.tx.clone(), self.in_flight.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let reply = Abortable::new(mock.answer(g, &request), registration).await;
            in_flight.remove_if(&key, |_, (s, _)| *s == seq);
            // A cancelled call is not answered (the spec's SHOULD).
            if let Ok(reply) = reply {
                let _ = tx.send(reply.body).await;
            }
        });
    }

    /// A batch (2025-03-26 sessions only): entries answered concurrently, written as one array.
    async fn on_batch(&mut self, entries: Vec<Result<Message, MessageError>>) {
        let g = match self.legacy {
            Some(g) if g.allows_batching() => g,
            _ => {
                let err = Error::new(
                    ErrorCode::InvalidRequest,
                    "invalid request: JSON-RPC batches are only accepted after initialize with 2025-03-26",
                );
                return self.send(error_bytes(None, err, NULL_ID_STYLE)).await;
            }
        };
        let mut requests = Vec::new();
        let mut done = Vec::new();
        for entry in entries {
            match entry {
                Err(e) => done.push(error_bytes(e.id.as_ref(), e.error, g)),
                Ok(Message::Request(r)) if r.method == "initialize" => {
                    let err = Error::new(
                        ErrorCode::InvalidRequest,
                        "invalid request: initialize must not be part of a batch",
                    );
                    done.push(error_bytes(Some(&r.id), err, g));
                }
                Ok(Message::Request(r)) => requests.push(r),
                Ok(Message::Notification(n)) => self.on_notification(&n),
                Ok(Message::Response(_)) => {}
            }
        }
        if requests.is_empty() && done.is_empty() {
            return;
        }
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let (mock, tx) = (self.mock.clone(), self.tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let replies = join_all(requests.iter().map(|r| mock.answer(g, r))).await;
            let parts: Vec<Vec<u8>> = replies.into_iter().map(|r| r.body).chain(done).collect();
            let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2);
            out.push(b'[');
            out.extend_from_slice(&parts.join(&b','));
            out.push(b']');
            let _ = tx.send(out).await;
        });
    }
}

fn error_bytes(id: Option<&RequestId>, err: Error, g: Generation) -> Vec<u8> {
    response_bytes(&Response::error(id.cloned(), err), g)
}

#[cfg(test)]
mod tests;
