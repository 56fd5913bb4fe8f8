//! `mcpgw check`: starts every backend of a (validated) config once, exactly as `mcpgw serve` does, lists what
//! each offers within the config's list deadline, finds the names two backends would both expose, and shuts
//! every backend down. Each backend gets its connect deadline and its list deadline, all of them at once, so
//! a check ends within the slowest backend's two deadlines. The outcome is a [`Report`]; the binary prints it
//! and exits non-zero when it holds a problem.

mod report;
#[cfg(test)]
mod tests;
mod warnings;

pub use report::{BackendReport, Outcome, Report, Server, one_line};
#[cfg(any(test, feature = "internals"))]
pub use report::collisions;
pub use warnings::{warnings};
#[cfg(any(test, feature = "internals"))]
pub use warnings::Warning;

use std::time::Duration;

use futures_util::future::join_all;
use handlers::{BackendConfig, BackendHandle};
use tokio::sync::mpsc;

use crate::config::{BackendEntry, BackendTransport, Config};
use crate::notify::listing::{Naming, list_backend};
use crate::state::Builtins;
use crate::state::start::start_backends;

/// Beyond the connect deadline, how long the check waits for a backend's first attempt to settle.
const SETTLE_SLACK: Duration = Duration::from_secs(1);
/// How long stopping backends get to close their connections before the check returns (stdio children left
/// after it are killed when the runtime drops them).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);
/// Backend events held while checking: nobody reads them; beyond this they are dropped by the backends.
const EVENTS: usize = 64;

/// Checks every backend of `config`; `source` names the config in the report.
pub fn run(config: &Config, source: String, builtins: &Builtins) -> Report {
    actix_rt::System::new().block_on(check(config, source, builtins))
}

async fn check(config: &Config, source: String, builtins: &Builtins) -> Report {
    let (events, _held) = mpsc::channel(EVENTS);
    // The backends' credentials as serving would have them (a secret that cannot be read fails each
    // backend that needs one at its start, reported like any other start-up failure).
    let credentials = match crate::auth::backend::prepare(config).await {
        Ok(c) => c,
        Err(why) => {
            tracing::warn!(%why, "backend credentials are not ready");
            Default::default()
        }
    };
    let handles = start_backends(config, events, &credentials, builtins);
    let list_deadline = Duration::from_millis(config.server.list_timeout_ms);
    let checks = config.backends.iter().map(|entry| {
        let handle = handles.get(&entry.name).cloned();
        async move {
            let outcome = match handle {
                Some(h) => check_one(&h, &Naming::of(entry), list_deadline).await,
                None => Outcome::NotStarted {
                    reason: "was not started".to_owned(),
                },
            };
            BackendReport {
                name: entry.name.clone(),
                reached_by: reached_by(entry),
                outcome,
            }
        }
    });
    let backends = join_all(checks).await;
    for h in handles.values() {
        h.shutdown();
    }
    tokio::time::sleep(SHUTDOWN_GRACE).await;
    Report::new(source, backends).reserving(&crate::catalog::reserved(config.catalog.search))
}

async fn check_one(handle: &BackendHandle, naming: &Naming, list_deadline: Duration) -> Outcome {
    let connect = BackendConfig::DEFAULT_CONNECT_TIMEOUT;
    let Some(description) = handle.wait_settled(connect + SETTLE_SLACK).await else {
        let reason = handle
            .down_reason()
            .unwrap_or_else(|| format!("did not connect within {} ms", connect.as_millis()));
        if naming.per_user && (reason.contains("HTTP 401") || reason.contains("HTTP 403")) {
            return Outcome::AwaitsConsent { reason };
        }
        return Outcome::NotStarted { reason };
    };
    let server = Server {
        generation: description.generation,
        transport: description.transport,
        info: description
            .server_info
            .as_ref()
            .map(|i| format!("{} {}", i.name, i.version)),
    };
    match tokio::time::timeout(list_deadline, list_backend(handle, naming)).await {
        Ok(Ok((listing, failed))) => Outcome::Listed {
            server,
            listing,
            failed,
        },
        Ok(Err(reason)) => Outcome::NotListed { server, reason },
        Err(_) => Outcome::NotListed {
            server,
            reason: format!("did not list within {} ms", list_deadline.as_millis()),
        },
    }
}

/// How the config says the backend is reached, for the report.
fn reached_by(entry: &BackendEntry) -> String {
    match entry.transport() {
        BackendTransport::Stdio { command, .. } => format!("command {}", command.join(" ")),
        BackendTransport::Http { url } => format!("url {}", handlers::shown_url_text(&url)),
        BackendTransport::Builtin { words } => format!("builtin {}", words.join(" ")),
        BackendTransport::OpenApi { document, .. } => format!("openapi {document}"),
    }
}
