//! `mcpgw serve --stdio`: the gateway as a stdio MCP server for local hosts, in both eras (an `initialize`
//! makes the process a legacy session; requests with 2026-07-28 `_meta` are served statelessly). Lines are
//! validated in order; requests are answered concurrently (bounded), responses written one per line.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use protocol::Rejection;
use protocol::shape::Shaped;
use protocol::validate::Accepts;
use tokio::io::AsyncWriteExt;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::auth_context::AuthContext;
use crate::front::http::Worker;
use crate::pipeline::answer::pump;
use crate::pipeline::context::Accepted;
use crate::pipeline::deliver::Output;
use crate::pipeline::deliver::settle;
use crate::pipeline::routing::Origin;
use crate::session::{Ending, Session, Transport, sse_data};
use crate::pipeline::Added;
use crate::state::Gateway;

/// Requests answered at once; the next line waits for a slot (stdin is read no faster than answered).
const IN_FLIGHT: usize = 256;
/// Responses waiting to be written.
const OUT_BUFFER: usize = 1024;

/// Serves standard input and output until standard input ends.
pub async fn run(gw: Arc<Gateway>, added: Added) -> std::io::Result<()> {
    run_on(gw, added, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves one stdio connection over any reader and writer (tests drive it through pipes).
pub async fn run_on<R, W>(
    gw: Arc<Gateway>,
    added: Added,
    input: R,
    mut output: W,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + 'static,
{
    let worker = Worker::start(gw.clone(), added);
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(OUT_BUFFER);
    let metrics = gw.metrics.clone();
    let writer = actix_rt::spawn(async move {
        while let Some(mut line) = out_rx.recv().await {
            line.push(b'\n');
            metrics.sent(crate::metrics::Transport::Stdio, line.len());
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut lines = FramedRead::new(
        input,
        LinesCodec::new_with_max_length(gw.config.server.max_body_bytes),
    );
    let mut session: Option<Arc<Session>> = None;
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(l) if l.trim().is_empty() => continue,
            Ok(l) => l,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                let body =
                    protocol::Rejection::line_too_long(gw.config.server.max_body_bytes).body();
                let _ = out_tx.send(body).await;
                continue;
            }
            Err(LinesCodecError::Io(e)) => return Err(e),
        };
        gw.metrics
            .received(crate::metrics::Transport::Stdio, line.len() + 1);
        let body = Bytes::from(line);
        let accepted = Arc::new(Accepted {
            session: session.clone(),
            auth: AuthContext::ANONYMOUS,
            principal: None,
            client: None,
            transport: Transport::Stdio,
            endpoint: gw.endpoints.default_endpoint().clone(),
            headers: Vec::new(),
        });
        let routed = match worker
            .routing
            .route(Origin::Stdio, body.clone(), Arc::clone(&accepted))
            .await
        {
            Ok(r) => r,
            Err(rejection) => {
                crate::pipeline::deliver::count_refused(&gw, Transport::Stdio, &rejection, &body);
                let _ = out_tx.send(rejection.body()).await;
                continue;
            }
        };
        if let protocol::validate::ValidKind::Initialize { .. } = routed.valid.kind() {
            // Answered in order: later lines must see the session it creates.
            let mut out = StdioOutput {
                out_tx: &out_tx,
                session: Some(&mut session),
                gw: &gw,
            };
            settle(&worker.routing, accepted, routed, &mut out).await;
            continue;
        }
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        let (gw, worker, out_tx) = (gw.clone(), worker.clone(), out_tx.clone());
        actix_rt::spawn(async move {
            let mut out = StdioOutput {
                out_tx: &out_tx,
                session: None,
                gw: &gw,
            };
            settle(&worker.routing, accepted, routed, &mut out).await;
            drop(slot);
        });
    }
    // Standard input ended: let requests in flight finish (bounded by their own timeouts), then stop.
    let _ = slots.acquire_many(IN_FLIGHT as u32).await;
    // Ending the session closes its stream, whose forwarder holds a sender of the output: then the writer
    // ends once everything is written.
    if let Some(s) = session {
        gw.sessions.end(&s.id, Ending::StdioClosed);
    }
    drop(out_tx);
    let _ = writer.await;
    Ok(())
}

/// Stdio's output: one line per message, in the order they are ready.
struct StdioOutput<'a> {
    out_tx: &'a mpsc::Sender<Vec<u8>>,
    /// The connection's session, replaced by an `initialize` answered in order (`None`: this request
    /// cannot start one).
    session: Option<&'a mut Option<Arc<Session>>>,
    gw: &'a Gateway,
}

impl Output for StdioOutput<'_> {
    type Reply = ();

    fn can_stream(&self, _: Accepts) -> bool {
        true
    }

    async fn message(&mut self, shaped: Shaped, _: Accepts) {
        let _ = self.out_tx.send(shaped.body).await;
    }

    async fn stream(&mut self, rx: mpsc::Receiver<Vec<u8>>) {
        let out_tx = self.out_tx;
        pump(rx, async |message| out_tx.send(message).await.is_ok()).await;
    }

    async fn accepted(&mut self) {}

    fn new_session(&self) -> Result<Option<String>, Rejection> {
        match self.session {
            Some(_) => Ok(None),
            None => Err(Rejection::already_initialized()),
        }
    }

    async fn started(&mut self, session: Arc<Session>, shaped: Shaped, _: Accepts) {
        // What the session hears outside any request (list changes, log messages, a URL elicitation's
        // completion) goes out on standard output too, one message a line, after the `initialize` answer.
        let (events, mut heard) = mpsc::channel::<Bytes>(OUT_BUFFER);
        let attached = session.handle.attach_stream(events).is_ok();
        if let Some(slot) = self.session.as_mut() {
            if let Some(old) = slot.replace(session) {
                self.gw.sessions.end(&old.id, Ending::StdioClosed);
            }
        }
        let _ = self.out_tx.send(shaped.body).await;
        if attached {
            let out_tx = self.out_tx.clone();
            actix_rt::spawn(async move {
                while let Some(event) = heard.recv().await {
                    let Some(message) = sse_data(&event) else {
                        continue;
                    };
                    if out_tx.send(message.to_vec()).await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    /// Stdio has no GET or DELETE: validation never yields them here.
    async fn open_stream(&mut self, _: &Arc<Session>) {}

    async fn ended(&mut self) {}
}
