//! Protocol generations: the five published MCP versions, their era, and every per-generation question a
//! caller asks, so that no caller ever compares version strings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One published MCP protocol version. Ordered by publication date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    /// 2024-11-05: the base protocol; HTTP+SSE transport.
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, JSON-RPC batching, audio content.
    V2025_03_26,
    /// 2025-06-18: `MCP-Protocol-Version` header, structured output, elicitation; batching removed.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, tasks (experimental).
    V2025_11_25,
    /// 2026-07-28: the modern era: stateless, per-request `_meta`, routing headers, `resultType`.
    V2026_07_28,
}

/// The era of a generation (the spec's term, `basic/versioning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2025-11-25 and earlier: `initialize` handshake and sessions.
    Legacy,
    /// 2026-07-28 and later: no handshake, every request self-describing.
    Modern,
}

/// A version string that names no generation this crate knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownGeneration(pub String);

impl Generation {
    /// Every generation, oldest first.
    pub const ALL: [Generation; 5] = [
        Generation::V2024_11_05,
        Generation::V2025_03_26,
        Generation::V2025_06_18,
        Generation::V2025_11_25,
        Generation::V2026_07_28,
    ];
    /// The newest generation.
    pub const LATEST: Generation = Generation::V2026_07_28;
    /// The newest legacy generation, offered when a legacy client asks for a version we do not serve.
    pub const LATEST_LEGACY: Generation = Generation::V2025_11_25;
    /// What a legacy HTTP request without `MCP-Protocol-Version` is assumed to speak (spec, 2025-06-18+).
    pub const ASSUMED_WITHOUT_HEADER: Generation = Generation::V2025_03_26;

    /// The version string on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Generation::V2024_11_05 => "2024-11-05",
            Generation::V2025_03_26 => "2025-03-26",
            Generation::V2025_06_18 => "2025-06-18",
            Generation::V2025_11_25 => "2025-11-25",
            Generation::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses an exact version string (byte for byte; versions are case-sensitive ISO dates).
    pub fn parse(s: &str) -> Result<Generation, UnknownGeneration> {
        Generation::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| UnknownGeneration(s.to_owned()))
    }

    /// Legacy or modern.
    pub const fn era(self) -> Era {
        match self {
            Generation::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// True for 2026-07-28 and later.
    pub const fn is_modern(self) -> bool {
        matches!(self.era(), Era::Modern)
    }

    /// JSON-RPC batches (arrays) are accepted only by 2025-03-26.
    pub const fn allows_batching(self) -> bool {
        matches!(self, Generation::V2025_03_26)
    }

    /// Sessions via the `initialize` handshake (and `Mcp-Session-Id` on Streamable HTTP).
    pub const fn has_sessions(self) -> bool {
        !self.is_modern()
    }

    /// Clients send `MCP-Protocol-Version` on HTTP requests (2025-06-18 and later).
    pub const fn has_protocol_version_header(self) -> bool {
        matches!(
            self,
            Generation::V2025_06_18 | Generation::V2025_11_25 | Generation::V2026_07_28
        )
    }

    /// Mirrored routing headers `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` (2026-07-28).
    pub const fn has_routing_headers(self) -> bool {
        self.is_modern()
    }

    /// Every result carries `resultType`; server info goes into result `_meta`.
    pub const fn has_result_type(self) -> bool {
        self.is_modern()
    }

    /// Cacheable results carry `ttlMs` and `cacheScope`.
    pub const fn has_cache_fields(self) -> bool {
        self.is_modern()
    }

    /// Every request carries `_meta` with protocol version and client capabilities.
    pub const fn requires_request_meta(self) -> bool {
        self.is_modern()
    }

    /// Server-to-client JSON-RPC requests exist (sampling, elicitation, roots); modern uses `input_required`.
    pub const fn has_server_requests(self) -> bool {
        !self.is_modern()
    }

    /// The standalone GET stream and DELETE of a session exist.
    pub const fn has_get_stream(self) -> bool {
        !self.is_modern()
    }

    /// The 2024-11-05 HTTP+SSE transport (two endpoints).
    pub const fn uses_http_sse_transport(self) -> bool {
        matches!(self, Generation::V2024_11_05)
    }

    /// Audio content blocks exist (2025-03-26 and later).
    pub const fn has_audio_content(self) -> bool {
        !matches!(self, Generation::V2024_11_05)
    }

    /// `resource_link` content blocks and `structuredContent` exist (2025-06-18 and later).
    pub const fn has_structured_output(self) -> bool {
        matches!(
            self,
            Generation::V2025_06_18 | Generation::V2025_11_25 | Generation::V2026_07_28
        )
    }

    /// `structuredContent` may be any JSON value, not only an object (2026-07-28).
    pub const fn allows_any_structured_content(self) -> bool {
        self.is_modern()
    }

    /// An error response whose request id could not be read leaves `id` out (2025-11-25 and later) instead
    /// of sending `null` (JSON-RPC 2.0, and the schemas before).
    pub const fn omits_unknown_error_id(self) -> bool {
        matches!(self, Generation::V2025_11_25 | Generation::V2026_07_28)
    }

    /// The JSON-RPC code that means "resource not found" on this generation.
    pub const fn resource_not_found_code(self) -> i64 {
        if self.is_modern() { -32602 } else { -32002 }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Generation {
    type Err = UnknownGeneration;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Generation::parse(s)
    }
}

impl Serialize for Generation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Generation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Generation::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The set of generations a deployment serves. Small and `Copy`: a bit per generation.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct GenerationSet(u8);

impl GenerationSet {
    /// All five generations.
    pub const ALL: GenerationSet = GenerationSet(0b1_1111);
    /// No generation.
    pub const EMPTY: GenerationSet = GenerationSet(0);

    const fn bit(g: Generation) -> u8 {
        1 << (g as u8)
    }

    /// A set of the given generations.
    pub fn of(generations: &[Generation]) -> GenerationSet {
        generations
            .iter()
            .fold(GenerationSet::EMPTY, |s, g| s.with(*g))
    }

    /// This set plus `g`.
    pub const fn with(self, g: Generation) -> GenerationSet {
        GenerationSet(self.0 | Self::bit(g))
    }

    /// Whether `g` is served.
    pub const fn contains(self, g: Generation) -> bool {
        self.0 & Self::bit(g) != 0
    }

    /// The served generations, oldest first.
    pub fn iter(self) -> impl Iterator<Item = Generation> + Clone {
        Generation::ALL
            .into_iter()
            .filter(move |g| self.contains(*g))
    }

    /// The newest served generation of an era.
    pub fn latest_of(self, era: Era) -> Option<Generation> {
        self.iter().filter(|g| g.era() == era).last()
    }

    /// The served version strings, newest first (the order `supportedVersions` uses).
    pub fn version_strings(self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.iter().map(Generation::as_str).collect();
        v.reverse();
        v
    }

    /// True when nothing is served.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl Default for GenerationSet {
    fn default() -> Self {
        GenerationSet::ALL
    }
}

impl fmt::Debug for GenerationSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Generation::as_str))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_generation_and_rejects_near_misses() {
        for g in Generation::ALL {
            assert_eq!(Generation::parse(g.as_str()), Ok(g));
            assert_eq!(g.to_string(), g.as_str());
        }
        for bad in [
            "",
            "2024-10-07",
            "2026-07-28 ",
            "2026-7-28",
            "2027-01-01",
            "1.0.0",
        ] {
            assert!(Generation::parse(bad).is_err(), "{bad:?} must not parse");
        }
    }

    #[test]
    fn ordering_follows_publication() {
        let mut sorted = Generation::ALL;
        sorted.sort();
        assert_eq!(sorted, Generation::ALL);
        assert!(Generation::V2025_11_25 < Generation::V2026_07_28);
    }

    #[test]
    fn questions_per_generation() {
        use Generation::*;
        // (generation, modern, batching, version header, routing headers, resource-not-found code)
        let table = [
            (V2024_11_05, false, false, false, false, -32002),
            (V2025_03_26, false, true, false, false, -32002),
            (V2025_06_18, false, false, true, false, -32002),
            (V2025_11_25, false, false, true, false, -32002),
            (V2026_07_28, true, false, true, true, -32602),
        ];
        for (g, modern, batch, header, routing, rnf) in table {
            assert_eq!(g.is_modern(), modern, "{g}");
            assert_eq!(g.era() == Era::Modern, modern, "{g}");
            assert_eq!(g.has_sessions(), !modern, "{g}");
            assert_eq!(g.has_result_type(), modern, "{g}");
            assert_eq!(g.allows_batching(), batch, "{g}");
            assert_eq!(g.has_protocol_version_header(), header, "{g}");
            assert_eq!(g.has_routing_headers(), routing, "{g}");
            assert_eq!(g.resource_not_found_code(), rnf, "{g}");
        }
    }

    #[test]
    fn generation_set_behaves_as_a_set() {
        let s = GenerationSet::of(&[Generation::V2025_06_18, Generation::V2026_07_28]);
        assert!(s.contains(Generation::V2026_07_28));
        assert!(!s.contains(Generation::V2024_11_05));
        assert_eq!(s.version_strings(), vec!["2026-07-28", "2025-06-18"]);
        assert_eq!(s.latest_of(Era::Legacy), Some(Generation::V2025_06_18));
        assert_eq!(GenerationSet::ALL.iter().count(), 5);
        assert!(GenerationSet::EMPTY.is_empty());
    }

    #[test]
    fn serde_round_trip() {
        let g: Generation = serde_json::from_str("\"2025-03-26\"").unwrap();
        assert_eq!(g, Generation::V2025_03_26);
        assert_eq!(serde_json::to_string(&g).unwrap(), "\"2025-03-26\"");
        assert!(serde_json::from_str::<Generation>("\"2099-01-01\"").is_err());
    }
}
