//! Starting the configured backends, one actor each (each begins connecting at once): at start (`serve`,
//! `mcpgw check`) and for the backends a config reload adds or changes. It must not wait for them: callers
//! wait as they need (`wait_settled`) with their own deadline.

use std::collections::BTreeMap;
use std::sync::Arc;

use handlers::{BackendConfig, BackendEvent, BackendHandle, InProcess, Transport};
use tokio::sync::mpsc;

use crate::config::{BackendTransport, Config};
use crate::openapi::{OpenApiBackend, OpenApiServer};
use crate::state::server_info;
use crate::state::builtins::Builtins;

/// Starts one actor per configured backend (each begins connecting at once); `mcpgw check` starts them the
/// same way.
pub fn start_backends(
    config: &Config,
    events: mpsc::Sender<BackendEvent>,
    credentials: &BTreeMap<String, handlers::Credential>,
    builtins: &Builtins,
) -> BTreeMap<String, BackendHandle> {
    let client_info = server_info();
    let egress = Arc::new(crate::egress::Egress::from_config(&config.egress));
    config
        .backends
        .iter()
        .map(|entry| {
            let transport = match entry.transport() {
                BackendTransport::Stdio { command, env, cwd } => {
                    Transport::Stdio { command, env, cwd }
                }
                BackendTransport::Http { url } => Transport::Http { url },
                BackendTransport::Builtin { words } => builtin(builtins, &entry.name, &words),
                BackendTransport::OpenApi { document, base_url } => {
                    Transport::InProcess(InProcess(Arc::new(OpenApiServer::new(OpenApiBackend {
                        name: entry.name.clone(),
                        document,
                        base_url,
                        operations: entry.operations.clone(),
                        tls: entry.tls(),
                        credential: credentials.get(&entry.name).cloned().unwrap_or_default(),
                        connect_timeout: BackendConfig::DEFAULT_CONNECT_TIMEOUT,
                        egress: egress.clone(),
                    }))))
                }
            };
            let mut bc = BackendConfig::new(entry.name.clone(), transport);
            bc.request_timeout = entry.timeout(&config.server);
            bc.max_in_flight = entry.max_in_flight.unwrap_or(bc.max_in_flight);
            bc.max_message_bytes = entry.max_message_bytes.unwrap_or(bc.max_message_bytes);
            bc.max_stream_bytes = entry.max_stream_bytes;
            bc.max_in_flight_per_caller = entry.per_caller();
            bc.circuit = entry.circuit.to_config();
            bc.client_info = client_info.clone();
            bc.roots.clone_from(&entry.roots);
            bc.tls = entry.tls();
            bc.http2 = entry.http2;
            bc.era = entry.era.into();
            if let Some(c) = credentials.get(&entry.name) {
                bc.credential = c.clone();
            }
            if bc.tls.insecure_skip_verify {
                tracing::warn!(backend = %entry.name,
                    "tls_insecure_skip_verify: the backend's certificate is not verified; anyone on the path can impersonate it");
            }
            (entry.name.clone(), BackendHandle::start(bc, events.clone()))
        })
        .collect()
}

/// The in-process transport of a `builtin` backend (`serve` checked its name at start, a reload before it
/// starts anything).
fn builtin(builtins: &Builtins, backend: &str, words: &[String]) -> Transport {
    match builtins.transport(backend, words) {
        Ok(transport) => transport,
        // An HTTP transport without a URL never connects, and the backend is down saying so.
        Err(why) => {
            tracing::error!(%why, "builtin backend refused");
            Transport::Http { url: String::new() }
        }
    }
}
