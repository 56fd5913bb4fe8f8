//! `[server] forwarded_header`: which header the trusted proxies write the client's address in.

use serde::{Deserialize, Serialize};

/// The header trusted proxies write the client's address in (`[server] forwarded_header`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, …` (nginx's `$proxy_add_x_forwarded_for`).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client;proto=https, for=…`.
    Forwarded,
    /// `X-Real-IP: client`: one address, set (not appended) by the proxy.
    XRealIp,
}

impl ForwardedHeader {
    /// The header's name, lower case.
    pub fn name(self) -> &'static str {
        match self {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
            ForwardedHeader::XRealIp => "x-real-ip",
        }
    }
}
