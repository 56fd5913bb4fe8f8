//! Stdio backends: one child process per backend serves every client request, with request ids rewritten
//! to backend-unique integers; the era is found once per process start by the spec's stdio probe.
//!
//! Era detection (MCP 2026-07-28 `basic/transports/stdio`, backward compatibility): `server/discover` is
//! sent first with the full 2026 `_meta`. A `DiscoverResult` listing 2026-07-28 means modern; a recognised
//! modern error means modern (and no fallback); any other error or no answer within
//! min(connect_timeout, 5 s) means legacy: `initialize` then `notifications/initialized` on the same process.
//! A child that dies during the probe (legacy servers may exit on any message before `initialize`) is
//! restarted once and initialised straight away. The verdict is remembered by the actor: a restart goes
//! straight to the remembered handshake, and probes again only if that fails.

mod lines;
mod process;

pub use process::{STOP_BOUND, processes_ended};

use std::sync::Arc;

use protocol::Generation;
use protocol::payload::InitializeResult;
use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::time::Instant;
use tracing::{debug, info};

use crate::config::{EraPin, Transport};
use crate::description::{ServerDescription, TransportKind};
use crate::handshake::{self, Probe};
use crate::link::context::{
    ConnectFailure, Connected, LinkContext, Unanswered, Verdict, VerdictUpdate,
};
use crate::listen::Tap;
use crate::request::BackendRequest;
use process::StdioProcess;

/// A live stdio connection: the process and the generation its handshake settled.
#[derive(Debug, Clone)]
pub(crate) struct StdioLink {
    process: Arc<StdioProcess>,
    generation: Generation,
}

impl StdioLink {
    /// One request, answered by `deadline`; a timed-out or abandoned request is cancelled.
    pub(crate) async fn call(
        &self,
        mut request: BackendRequest,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &self.process.ctx;
        let params = ctx.params_for(self.generation, &mut request)?;
        let reply = self
            .process
            .request(request.wire_name(), params.as_deref(), deadline, true)
            .await;
        match reply {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ctx.backend_error(self.generation, request.method, error)),
            Err(u) => Err(ctx.unanswered(u)),
        }
    }

    /// A `subscriptions/listen` kept in flight until the backend ends it (its final answer is returned) or
    /// the future is dropped (which sends `notifications/cancelled`); its notifications go to `tap`.
    pub(crate) async fn listen(
        &self,
        mut request: BackendRequest,
        tap: Arc<Tap>,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &self.process.ctx;
        let params = ctx.params_for(self.generation, &mut request)?;
        let routes = &self.process.subscriptions;
        let reply = self
            .process
            .long_request(request.wire_name(), params.as_deref(), |id| {
                routes.insert(id, tap)
            })
            .await;
        match reply {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ctx.backend_error(self.generation, request.method, error)),
            Err(u) => Err(ctx.unanswered(u)),
        }
    }

    /// Stops the process on purpose.
    pub(crate) fn close(&self) {
        self.process.close("the backend was shut down");
    }
}

/// Starts the process and runs the handshake of the remembered era, or probes.
pub(crate) async fn connect(
    ctx: Arc<LinkContext>,
    remembered: Option<Verdict>,
) -> Result<Connected<StdioLink>, ConnectFailure> {
    let Transport::Stdio { command, env, cwd } = &ctx.config.transport else {
        return Err(ConnectFailure::outage("not a stdio backend"));
    };
    let spawn = || {
        StdioProcess::spawn(&ctx, command, env, cwd.as_deref())
            .map_err(|e| ConnectFailure::outage(e.to_string()))
    };
    let mut process = spawn()?;
    let mut respawned = false;
    let legacy_assumed = remembered == Some(Verdict::Legacy);
    if !legacy_assumed {
        match probe(&ctx, &process).await {
            Probed::Judged(Probe::Modern(d)) => {
                let description = ServerDescription::from_discover(d, TransportKind::Stdio);
                return Ok(connected(process, description, Verdict::Modern));
            }
            Probed::Judged(Probe::ModernRefused(reason)) => {
                return Err(ConnectFailure::new(
                    reason,
                    VerdictUpdate::Learned(Verdict::Modern),
                ));
            }
            Probed::Judged(Probe::Legacy(why)) if ctx.config.era == EraPin::Modern => {
                return Err(ConnectFailure::pinned(EraPin::Modern, &why));
            }
            Probed::Judged(Probe::Legacy(why)) => {
                debug!(backend = %ctx.name(), %why, "legacy backend: initializing");
            }
            Probed::Died(why) => {
                info!(backend = %ctx.name(), %why, "backend exited on the era probe: restarting it for initialize");
                process = spawn()?;
                respawned = true;
            }
        }
    }
    loop {
        match initialize(&ctx, &process).await {
            Ok((generation, init)) => {
                let description =
                    ServerDescription::from_initialize(init, generation, TransportKind::Stdio);
                return Ok(connected(process, description, Verdict::Legacy));
            }
            Err(Initialize::Died(_)) if !respawned => {
                process = spawn()?;
                respawned = true;
            }
            Err(Initialize::Refused(why)) if ctx.config.era == EraPin::Legacy => {
                return Err(ConnectFailure::pinned(EraPin::Legacy, &why));
            }
            Err(Initialize::Refused(why)) if legacy_assumed => {
                // The remembered era failed on a live process: probe it again now.
                return match probe(&ctx, &process).await {
                    Probed::Judged(Probe::Modern(d)) => {
                        let description = ServerDescription::from_discover(d, TransportKind::Stdio);
                        Ok(connected(process, description, Verdict::Modern))
                    }
                    _ => Err(ConnectFailure::new(why, VerdictUpdate::Forget)),
                };
            }
            Err(e) => {
                return Err(ConnectFailure::new(
                    e.reason(),
                    VerdictUpdate::Learned(Verdict::Legacy),
                ));
            }
        }
    }
}

fn connected(
    process: StdioProcess,
    description: ServerDescription,
    verdict: Verdict,
) -> Connected<StdioLink> {
    let lifeline = process.lifeline().clone();
    let link = StdioLink {
        process: Arc::new(process),
        generation: description.generation,
    };
    Connected {
        link,
        description: Arc::new(description),
        verdict,
        lifeline,
    }
}

enum Probed {
    Judged(Probe),
    Died(String),
}

async fn probe(ctx: &LinkContext, process: &StdioProcess) -> Probed {
    let limit = ctx.stdio_probe_timeout();
    let params = ctx.discover_params();
    // Never cancelled: a legacy server may take any message before `initialize` as fatal.
    let reply = process
        .request(
            "server/discover",
            Some(&params),
            Instant::now() + limit,
            false,
        )
        .await;
    match reply {
        Ok(reply) => Probed::Judged(handshake::judge_discover(reply)),
        Err(Unanswered::Lost(lost)) => Probed::Died(lost.reason().to_owned()),
        Err(Unanswered::Timeout) => Probed::Judged(Probe::Legacy(format!(
            "no answer to server/discover within {} ms",
            limit.as_millis()
        ))),
        Err(Unanswered::Overloaded | Unanswered::Failed(_)) => Probed::Judged(Probe::Legacy(
            "server/discover could not be sent".to_owned(),
        )),
        // An answer over `max_message_bytes`: judged as a failed probe, `initialize` may still fit.
        Err(Unanswered::Refused(failure)) => {
            Probed::Judged(Probe::Legacy(format!("server/discover failed: {failure}")))
        }
    }
}

enum Initialize {
    Died(String),
    Refused(String),
    Timeout(String),
}

impl Initialize {
    fn reason(self) -> String {
        match self {
            Initialize::Died(r) | Initialize::Refused(r) | Initialize::Timeout(r) => r,
        }
    }
}

async fn initialize(
    ctx: &LinkContext,
    process: &StdioProcess,
) -> Result<(Generation, InitializeResult), Initialize> {
    let params = ctx.initialize_params();
    let deadline = Instant::now() + ctx.config.connect_timeout;
    // `initialize` must not be cancelled (MCP lifecycle).
    let reply = process
        .request("initialize", Some(&params), deadline, false)
        .await
        .map_err(|u| match u {
            Unanswered::Lost(lost) => Initialize::Died(lost.reason().to_owned()),
            Unanswered::Timeout => Initialize::Timeout(format!(
                "no answer to initialize within {} ms",
                ctx.config.connect_timeout.as_millis()
            )),
            Unanswered::Overloaded | Unanswered::Failed(_) => {
                Initialize::Died("initialize could not be sent".to_owned())
            }
            Unanswered::Refused(failure) => Initialize::Refused(failure.to_string()),
        })?;
    let (generation, init) = handshake::judge_initialize(reply).map_err(Initialize::Refused)?;
    process
        .notify("notifications/initialized", None)
        .map_err(|_| Initialize::Died("notifications/initialized could not be sent".to_owned()))?;
    Ok((generation, init))
}
