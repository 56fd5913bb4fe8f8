//! Process limits set at the start of `mcpgw serve`: the soft open-files limit (`RLIMIT_NOFILE`) raised to
//! the hard one, as nginx (`worker_rlimit_nofile`) and Go's runtime do. The usual soft default, 1024, is
//! reached by about a thousand idle connections, after which the gateway cannot accept another one ("Too
//! many open files") nor open a socket to a backend; the hard limit is what the system lets it use.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The open-files limits of the process: the soft limit before and after, and the hard limit. `None` is
/// unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit the process started with.
    pub before: Option<u64>,
    /// The soft limit now.
    pub after: Option<u64>,
    /// The hard limit (unchanged).
    pub hard: Option<u64>,
}

/// The soft open-files limit could not be raised.
#[derive(Debug, thiserror::Error)]
#[error("cannot raise the open-files limit from {from} to {to}: {error}")]
pub struct RaiseError {
    /// The soft limit, unchanged.
    pub from: u64,
    /// The hard limit it was to be raised to.
    pub to: u64,
    /// Why.
    pub error: std::io::Error,
}

/// Raises the soft open-files limit to the hard limit (nothing to do when it is there already, or when the
/// hard limit is unlimited: no soft limit is set to "unlimited" for files).
pub fn raise_open_files() -> Result<OpenFiles, RaiseError> {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let unchanged = OpenFiles {
        before: current,
        after: current,
        hard: maximum,
    };
    let (Some(from), Some(to)) = (current, maximum) else {
        return Ok(unchanged);
    };
    if from >= to {
        return Ok(unchanged);
    }
    let raised = Rlimit {
        current: Some(to),
        maximum: Some(to),
    };
    setrlimit(Resource::Nofile, raised).map_err(|e| RaiseError {
        from,
        to,
        error: e.into(),
    })?;
    Ok(OpenFiles {
        after: Some(to),
        ..unchanged
    })
}

/// File descriptors one client connection holds: its socket, and the duplicate its guard keeps so that a
/// shutdown can close it when idle (`connections::Connection`).
pub const FILES_PER_CONNECTION: u64 = 2;

/// [`raise_open_files`] with its one log line (from → to), and a warning when `max_connections` cannot all
/// be open at once under the limit ([`FILES_PER_CONNECTION`] each).
pub fn raise_open_files_logged(max_connections: usize) {
    match raise_open_files() {
        Ok(files) => {
            let shown =
                |n: Option<u64>| n.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
            // Said at info only when it changed something.
            if files.before == files.after {
                tracing::debug!(limit = %shown(files.after), "open-files limit");
            } else {
                tracing::info!(
                    from = %shown(files.before),
                    to = %shown(files.after),
                    hard = %shown(files.hard),
                    "open-files limit raised"
                );
            }
            // Worth a warning when the operator chose `max_connections`; the default meeting a small limit
            // is said at debug (the limit, not the setting, bounds the connections then).
            if let Some(after) = files.after
                && u64::try_from(max_connections)
                    .is_ok_and(|max| max.saturating_mul(FILES_PER_CONNECTION) >= after)
            {
                if max_connections == crate::config::ServerConfig::DEFAULT_MAX_CONNECTIONS {
                    tracing::debug!(
                        max_connections,
                        open_files = after,
                        "the default max_connections is above what the open-files limit allows"
                    );
                    return;
                }
                tracing::warn!(
                    max_connections,
                    open_files = after,
                    "server.max_connections (two open files each) is not below the open-files limit: connections beyond it are not accepted until others close"
                );
            }
        }
        Err(e) => tracing::warn!("{e}"),
    }
}
