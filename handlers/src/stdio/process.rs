//! One backend child process and the tasks around it: a writer owning stdin (fed by a bounded queue), a
//! reader routing stdout lines, a logger for stderr lines, and a supervisor owning the child that notices
//! its exit (answering every in-flight request at once) and stops it on request: stdin closed, then SIGTERM
//! after a grace period, then SIGKILL.
//!
//! The tasks run detached on the arbiter, so a stop that began still completes after the actor is gone;
//! the child is spawned with `kill_on_drop`, so even a dropped runtime leaves no process behind.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::lines::{Line, next_line};
use crate::inbound::Inbound;
use crate::link::context::{Lifeline, LinkContext, Unanswered, not_sent};
use crate::listen::{ListenRoute, SubscriptionRoutes};
use crate::outbox::{CancelGuard, Outbox};
use crate::pending::{Lost, Pending, Reply};
use crate::wire;

/// Messages that may wait to be written to stdin; one more is `Overloaded`.
const WRITE_QUEUE: usize = 1024;
/// The longest stdout line (one JSON-RPC message) read; longer ones are skipped.
/// The longest stderr line logged whole.
const MAX_LOG_LINE: usize = 16 * 1024;
/// How long the reader may go on after the child exited, to pass on what it wrote last.
const DRAIN: Duration = Duration::from_millis(200);
/// How long a stopping child gets after stdin is closed, and again after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The supervisors of every child process (one each, until its child is gone): what
/// [`processes_ended`] waits for.
static SUPERVISORS: std::sync::LazyLock<tokio_util::task::TaskTracker> =
    std::sync::LazyLock::new(tokio_util::task::TaskTracker::new);

/// Waits until every stdio backend's child process has ended — after [`crate::BackendHandle::shutdown`], each
/// gets stdin closed, then SIGTERM, then SIGKILL, [`SHUTDOWN_GRACE`] apart — or `within` passes; `true`
/// when none is left. A process that exits without it (`kill_on_drop`) would skip those grace periods.
pub async fn processes_ended(within: Duration) -> bool {
    let supervisors = &*SUPERVISORS;
    supervisors.close();
    let ended = tokio::time::timeout(within, supervisors.wait())
        .await
        .is_ok();
    supervisors.reopen();
    ended
}

/// How long [`processes_ended`] needs at most for a child that ignores both stdin's end and SIGTERM.
pub const STOP_BOUND: Duration = Duration::from_secs(SHUTDOWN_GRACE.as_secs() * 2 + 1);

/// Why a child could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error("the stdio command is empty")]
    EmptyCommand,
    #[error("cannot start {program}: {error}")]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    #[error("the child process has no {0} pipe")]
    NoPipe(&'static str),
}

/// The child's stdin queue. Messages are framed here: one line each.
#[derive(Debug)]
pub(crate) struct StdinQueue {
    tx: mpsc::Sender<Vec<u8>>,
}

impl StdinQueue {
    fn send(&self, message: Vec<u8>) -> Result<(), TrySendError<Vec<u8>>> {
        self.tx.try_send(frame(message))
    }
}

impl Outbox for StdinQueue {
    fn deliver(&self, message: Vec<u8>) -> bool {
        self.send(message).is_ok()
    }
}

/// One line per message. A raw CR or LF byte can only be insignificant whitespace in valid JSON (inside
/// strings they are escaped), so turning them into spaces keeps every value byte-exact.
fn frame(mut message: Vec<u8>) -> Vec<u8> {
    for b in &mut message {
        if matches!(*b, b'\n' | b'\r') {
            *b = b' ';
        }
    }
    message.push(b'\n');
    message
}

/// A running child process serving one backend. Dropping it stops the child.
#[derive(Debug)]
pub(crate) struct StdioProcess {
    pub(crate) ctx: Arc<LinkContext>,
    stdin: Arc<StdinQueue>,
    pending: Arc<Pending>,
    /// The `subscriptions/listen` requests in flight, whose notifications stdout routes by id.
    pub(crate) subscriptions: Arc<SubscriptionRoutes>,
    lifeline: Lifeline,
    stop: CancellationToken,
}

impl Drop for StdioProcess {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl StdioProcess {
    /// Starts the configured command and its tasks on the current arbiter.
    pub(crate) fn spawn(
        ctx: &Arc<LinkContext>,
        command: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<StdioProcess, SpawnError> {
        let (program, args) = command.split_first().ok_or(SpawnError::EmptyCommand)?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own process group: a Ctrl-C in the gateway's terminal (SIGINT to the foreground group)
            // reaches the gateway only, which drains and then stops its backends in order.
            .process_group(0);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn().map_err(|error| SpawnError::Spawn {
            program: program.clone(),
            error,
        })?;
        let stdin = child.stdin.take().ok_or(SpawnError::NoPipe("stdin"))?;
        let stdout = child.stdout.take().ok_or(SpawnError::NoPipe("stdout"))?;
        let stderr = child.stderr.take().ok_or(SpawnError::NoPipe("stderr"))?;
        let backend: Arc<str> = Arc::from(ctx.name());
        info!(%backend, pid = %shown_pid(child.id()), %program, "backend process started");

        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let stdin_queue = Arc::new(StdinQueue { tx });
        let pending = Pending::new();
        let lifeline = Lifeline::default();
        let stop = CancellationToken::new();
        let stdout_closed = CancellationToken::new();
        let subscriptions = Arc::new(SubscriptionRoutes::default());
        let inbound = Inbound::new(
            ctx.notifier.clone(),
            Some(Arc::clone(&pending)),
            Some(Arc::clone(&stdin_queue) as Arc<dyn Outbox>),
        )
        .with_listen(ListenRoute::Table(Arc::clone(&subscriptions)));
        actix_rt::spawn(write_stdin(
            stdin,
            rx,
            stop.clone(),
            lifeline.token().clone(),
        ));
        actix_rt::spawn(read_stdout(
            stdout,
            inbound,
            stdout_closed.clone(),
            ctx.config.max_message_bytes,
        ));
        actix_rt::spawn(log_stderr(stderr, Arc::clone(&backend)));
        actix_rt::spawn(SUPERVISORS.track_future(supervise(Supervised {
            child,
            backend,
            stop: stop.clone(),
            stdout_closed,
            pending: Arc::clone(&pending),
            lifeline: lifeline.clone(),
        })));
        Ok(StdioProcess {
            ctx: Arc::clone(ctx),
            stdin: stdin_queue,
            pending,
            subscriptions,
            lifeline,
            stop,
        })
    }

    /// Sends a request under a fresh id and waits for its answer until `deadline`. When `cancellable`, a
    /// request that times out or is abandoned is cancelled with `notifications/cancelled`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        deadline: Instant,
        cancellable: bool,
    ) -> Result<Reply, Unanswered> {
        let mut waiter = self.pending.register().map_err(not_sent)?;
        let id = waiter.id();
        match self.stdin.send(wire::request(id, method, params)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(Unanswered::Overloaded),
            Err(TrySendError::Closed(_)) => return Err(not_sent(self.stdin_closed())),
        }
        let mut guard = CancelGuard::new(&*self.stdin, id, cancellable);
        match tokio::time::timeout_at(deadline, waiter.answer()).await {
            Ok(answer) => {
                guard.disarm();
                answer.map_err(Unanswered::from)
            }
            Err(_) => {
                guard.timed_out();
                Err(Unanswered::Timeout)
            }
        }
    }

    /// Sends a long-lived request (`subscriptions/listen`) under a fresh id and waits, without deadline, for
    /// its final answer. `before_send` gets the id before the request goes out (to route what arrives for
    /// it) and what it returns is kept until the request ends. Dropping the future cancels the request with
    /// `notifications/cancelled`.
    pub(crate) async fn long_request<G>(
        &self,
        method: &str,
        params: Option<&RawValue>,
        before_send: impl FnOnce(i64) -> G,
    ) -> Result<Reply, Unanswered> {
        let mut waiter = self.pending.register().map_err(not_sent)?;
        let id = waiter.id();
        let _kept = before_send(id);
        match self.stdin.send(wire::request(id, method, params)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(Unanswered::Overloaded),
            Err(TrySendError::Closed(_)) => return Err(not_sent(self.stdin_closed())),
        }
        let mut guard = CancelGuard::new(&*self.stdin, id, true);
        let answer = waiter.answer().await;
        guard.disarm();
        answer.map_err(Unanswered::from)
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<&RawValue>) -> Result<(), Unanswered> {
        match self.stdin.send(wire::notification(method, params)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(Unanswered::Overloaded),
            Err(TrySendError::Closed(_)) => Err(Unanswered::Lost(self.stdin_closed())),
        }
    }

    fn stdin_closed(&self) -> Lost {
        Lost::Crashed("the process's stdin is closed".to_owned())
    }

    /// Cut when the process is gone.
    pub(crate) fn lifeline(&self) -> &Lifeline {
        &self.lifeline
    }

    /// Stops the process on purpose: in-flight requests are answered `reason` now.
    pub(crate) fn close(&self, reason: &str) {
        self.pending.close(Lost::Closed(reason.to_owned()));
        self.stop.cancel();
    }
}

/// Writes queued messages to stdin until stopped or the process is gone; then closes stdin.
async fn write_stdin(
    stdin: ChildStdin,
    mut rx: mpsc::Receiver<Vec<u8>>,
    stop: CancellationToken,
    gone: CancellationToken,
) {
    let mut stdin = BufWriter::new(stdin);
    loop {
        let message = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = gone.cancelled() => break,
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
        };
        let written = tokio::select! {
            r = stdin.write_all(&message) => r,
            () = stop.cancelled() => break,
        };
        // Flush once the queue is empty, so that a burst goes out in few writes.
        let flushed = match written {
            Ok(()) if rx.is_empty() => stdin.flush().await,
            other => other,
        };
        if let Err(e) = flushed {
            debug!(error = %e, "backend stdin closed");
            break;
        }
    }
    // Dropping the writer closes stdin: the child sees the end of its input.
}

/// Routes stdout lines; cancels `closed` at end of output.
async fn read_stdout(stdout: ChildStdout, inbound: Inbound, closed: CancellationToken, max: usize) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        match next_line(&mut reader, &mut line, max).await {
            Ok(Line::Complete) => inbound.text(&line),
            Ok(Line::TooLong(n)) => {
                // The line's start is kept: the request it answers (its id, when the line names it
                // early) fails now instead of waiting out its deadline.
                let failed = reply_id(&line).is_some_and(|id| inbound.too_large(id, max));
                warn!(
                    ?inbound,
                    bytes = n,
                    failed,
                    "skipping an over-long line on stdout"
                );
            }
            Ok(Line::Eof) => break,
            Err(e) => {
                warn!(?inbound, error = %e, "reading stdout failed");
                break;
            }
        }
    }
    closed.cancel();
}

/// The id of the response an over-long line holds (`next_line` kept its start and end, a newline between),
/// when it names it where no other `"id"` can be: among its first bytes before `"result"`, `"error"` and
/// `"method"` (the Python SDK's order), or as the last member of the top-level object (`,"id":N}` closing
/// the line: the TypeScript SDK's). The gateway's own ids are integers.
fn reply_id(bytes: &[u8]) -> Option<i64> {
    let text = String::from_utf8_lossy(bytes);
    let (head, tail) = text.split_once('\n').unwrap_or((&text, ""));
    let digits = |rest: &str| -> Option<i64> {
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        n.parse().ok()
    };
    if let Some(at) = head.find("\"id\"")
        && !["\"result\"", "\"error\"", "\"method\""]
            .iter()
            .any(|k| head[..at].contains(k))
        && let Some(id) = digits(&head[at + 4..])
    {
        return Some(id);
    }
    // `…,"id":N}` at the very end: one closing brace, so it is the top-level object's member.
    let end = tail.trim_end();
    let body = end.strip_suffix('}')?.trim_end();
    let at = body.rfind("\"id\"")?;
    let id = digits(&body[at + 4..])?;
    let after = body[at + 4..].trim_start().strip_prefix(':')?.trim();
    (after == id.to_string() && !end[..end.len() - 1].trim_end().ends_with('}')).then_some(id)
}

/// Logs every stderr line at info level, target `backend`.
async fn log_stderr(stderr: ChildStderr, backend: Arc<str>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        match next_line(&mut reader, &mut line, MAX_LOG_LINE).await {
            Ok(Line::Complete) => {
                let text = String::from_utf8_lossy(line.trim_ascii_end());
                info!(target: "backend", backend = %backend, "{text}");
            }
            Ok(Line::TooLong(n)) => {
                info!(target: "backend", backend = %backend, "(a stderr line of {n} bytes was not logged)");
            }
            Ok(Line::Eof) | Err(_) => break,
        }
    }
}

struct Supervised {
    child: Child,
    backend: Arc<str>,
    stop: CancellationToken,
    stdout_closed: CancellationToken,
    pending: Arc<Pending>,
    lifeline: Lifeline,
}

/// Owns the child until it is gone, then answers every in-flight request and cuts the lifeline.
async fn supervise(mut s: Supervised) {
    let pid = s.child.id();
    let reason = tokio::select! {
        status = s.child.wait() => {
            // Let the reader pass on what the process wrote before it exited.
            let _ = tokio::time::timeout(DRAIN, s.stdout_closed.cancelled()).await;
            exited(status)
        }
        () = s.stdout_closed.cancelled() => {
            // Usually the process has just exited. One that closed its output but lives on cannot
            // answer any more: stop it.
            match tokio::time::timeout(DRAIN, s.child.wait()).await {
                Ok(status) => exited(status),
                Err(_) => {
                    s.stop.cancel();
                    terminate(&mut s.child, pid, &s.backend).await;
                    "the process closed its stdout".to_owned()
                }
            }
        }
        () = s.stop.cancelled() => {
            terminate(&mut s.child, pid, &s.backend).await;
            "the process was stopped".to_owned()
        }
    };
    info!(backend = %s.backend, pid = %shown_pid(pid), %reason, "backend process ended");
    s.pending.close(Lost::Crashed(reason.clone()));
    s.lifeline.cut(reason);
}

fn exited(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(status) => format!("the process exited ({status})"),
        Err(e) => format!("waiting for the process failed: {e}"),
    }
}

/// Stops a child: stdin is already being closed (the writer stops on `stop`); then SIGTERM, then SIGKILL.
async fn terminate(child: &mut Child, pid: Option<u32>, backend: &str) {
    if tokio::time::timeout(SHUTDOWN_GRACE, child.wait())
        .await
        .is_ok()
    {
        return;
    }
    if let Some(pid) = pid {
        debug!(%backend, pid, "backend process ignored the end of stdin: sending SIGTERM");
        sigterm(pid).await;
        if tokio::time::timeout(SHUTDOWN_GRACE, child.wait())
            .await
            .is_ok()
        {
            return;
        }
    }
    warn!(%backend, ?pid, "backend process ignored SIGTERM: killing it");
    if let Err(e) = child.kill().await {
        warn!(%backend, error = %e, "killing the backend process failed");
    }
}

/// Sends SIGTERM (through rustix's safe `kill`). The child has not been reaped yet (its `wait` did not
/// return), so the pid is still its own.
async fn sigterm(pid: u32) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if let Err(e) = rustix::process::kill_process(pid, rustix::process::Signal::TERM) {
        debug!(pid = pid.as_raw_nonzero().get(), error = %e, "could not send SIGTERM");
    }
}

/// A child's process id as a log field: the number, or `exited` when the child is already gone.
fn shown_pid(pid: Option<u32>) -> String {
    pid.map_or_else(|| "exited".to_owned(), |p| p.to_string())
}

#[cfg(test)]
mod size_tests {
    use super::reply_id;

    #[test]
    fn an_over_long_lines_request_is_named_by_its_id_only_when_the_line_starts_with_it() {
        let cases: &[(&str, Option<i64>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":42,"result":{"content":"xxxx"#,
                Some(42),
            ),
            (r#"{"id": 7, "jsonrpc":"2.0","result":{"#, Some(7)),
            (r#"{"jsonrpc":"2.0","result":{"id":3,"content":"xx"#, None),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":"s-1","result":"#, None),
            (r#"{"jsonrpc":"2.0","result":{"content":"xxxxxxxx"#, None),
        ];
        for (line, id) in cases {
            assert_eq!(reply_id(line.as_bytes()), *id, "{line}");
        }
    }
}
