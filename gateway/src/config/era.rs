//! `[[backend]] era`: which generation the gateway speaks to a backend, found by the era probe (`auto`) or
//! pinned (`legacy`, `modern`) for a dual-era server whose newer path lacks what its older one has.

use serde::{Deserialize, Serialize};

use super::{BackendEntry, ConfigError, invalid};

/// `[[backend]] era` (and `mcpgw tools` / `mcpgw call --era`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendEra {
    /// Probe with `server/discover`, fall back to `initialize`, remember what was found.
    #[default]
    Auto,
    /// Always `initialize` (2024-11-05 … 2025-11-25), never the probe.
    Legacy,
    /// Always 2026-07-28; a backend that does not answer `server/discover` is down.
    Modern,
}

impl From<BackendEra> for handlers::EraPin {
    fn from(era: BackendEra) -> handlers::EraPin {
        match era {
            BackendEra::Auto => handlers::EraPin::Auto,
            BackendEra::Legacy => handlers::EraPin::Legacy,
            BackendEra::Modern => handlers::EraPin::Modern,
        }
    }
}

/// A server served in-process (`builtin`, `openapi`) speaks 2026-07-28 only: `legacy` cannot be pinned.
pub(super) fn validate(
    b: &BackendEntry,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    if b.era == BackendEra::Legacy && (b.builtin.is_some() || b.openapi.is_some()) {
        return Err(invalid(
            field("era"),
            "a builtin or openapi backend is served in-process in 2026-07-28 only: use \"auto\" or \"modern\"",
        ));
    }
    Ok(())
}
