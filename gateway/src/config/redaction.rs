//! `[redaction]`: secrets and configured patterns found in what backends answer (tool results, resource
//! contents, prompts), redacted, refused or only reported. Read here; compiled and applied by the
//! `redaction` domain. Without the table nothing is scanned.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// At most this many `[[redaction.pattern]]` tables.
pub const MAX_PATTERNS: usize = 64;
/// The compiled size one pattern may take (the `regex` crate's `size_limit`), in bytes.
pub const PATTERN_SIZE_LIMIT: usize = 1024 * 1024;

/// `[redaction]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// What a match does: `redact` (replaced by `[redacted: NAME]`), `refuse` (the answer withheld, a tool
    /// error or a JSON-RPC error in its place), `audit` (passed on, logged and counted).
    #[serde(default)]
    pub mode: RedactionMode,
    /// The built-in secret patterns (private keys, cloud and VCS tokens, JWTs, …).
    #[serde(default = "yes")]
    pub secrets: bool,
    /// The backends whose answers are scanned (`*`/`?` patterns; default all).
    #[serde(default = "every_backend")]
    pub backends: Vec<String>,
    /// Patterns of one's own.
    #[serde(default, rename = "pattern")]
    pub patterns: Vec<PatternEntry>,
}

/// `[[redaction.pattern]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PatternEntry {
    /// Its name in the redacted text, logs and metrics (`custom` in the metric's label).
    pub name: String,
    /// A regular expression (the `regex` crate's syntax: linear time, no look-around or back-references).
    pub regex: String,
}

/// What a match does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedactionMode {
    /// Each match replaced by `[redacted: NAME]`.
    #[default]
    Redact,
    /// The whole answer withheld.
    Refuse,
    /// Passed on as it is; logged (never the match) and counted.
    Audit,
}

impl RedactionMode {
    /// Its name in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RedactionMode::Redact => "redact",
            RedactionMode::Refuse => "refuse",
            RedactionMode::Audit => "audit",
        }
    }
}

fn yes() -> bool {
    true
}

fn every_backend() -> Vec<String> {
    vec!["*".to_owned()]
}

impl RedactionConfig {
    /// Something to look for, names a metric can carry, patterns that compile within their bound.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.secrets && self.patterns.is_empty() {
            return Err(invalid(
                "redaction.pattern",
                "with secrets = false, give at least one pattern",
            ));
        }
        if self.patterns.len() > MAX_PATTERNS {
            return Err(invalid(
                "redaction.pattern",
                format!("at most {MAX_PATTERNS} patterns"),
            ));
        }
        for (i, p) in self.patterns.iter().enumerate() {
            if !super::is_server_name(&p.name) {
                return Err(invalid(
                    format!("redaction.pattern[{i}].name"),
                    "1 to 64 ASCII letters, digits, '_' and '-'",
                ));
            }
            if let Err(e) = regex::RegexBuilder::new(&p.regex)
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
            {
                let first = e.to_string();
                let first = first.lines().last().unwrap_or_default().trim().to_owned();
                return Err(invalid(format!("redaction.pattern[{i}].regex"), first));
            }
        }
        if self.backends.is_empty() {
            return Err(invalid("redaction.backends", "name at least one (or \"*\")"));
        }
        Ok(())
    }
}
