//! `[telemetry]`: what the gateway tells operators about itself beyond logs. For now one switch of the
//! metrics (`GET /metrics`): whether the backend metrics carry a `tool` label.
//!
//! It must not hold anything that changes a request's answer.

use serde::{Deserialize, Serialize};

/// `[telemetry]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Per-tool series (`mcpgw_tool_calls_total`, `mcpgw_tool_call_duration_seconds`, labelled by backend
    /// and tool): off by default, as a catalog of thousands of tools makes as many series. Only tools of
    /// the catalog are named, never a name a client sent.
    pub per_tool_metrics: bool,
}
