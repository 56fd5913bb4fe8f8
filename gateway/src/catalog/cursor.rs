//! Downstream pagination of the aggregated lists (MCP-DIGEST §5.2): opaque cursors bound to one snapshot
//! version and one list.
//!
//! A cursor is base64url (no padding) of `v{version}:{list}:{offset}` (decimal version and offset, `list` one
//! of `tools`, `prompts`, `resources`, `templates`). A cursor is accepted only when it is exactly what this
//! module would have issued for this snapshot and this list, and its offset lies inside the list: anything else
//! (garbage, a cursor of an older snapshot or of another list, an offset out of range) is a [`CursorError`],
//! which the caller answers with `-32602`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::snapshot::CatalogSnapshot;

/// Which aggregated list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`
    Tools,
    /// `prompts/list`
    Prompts,
    /// `resources/list`
    Resources,
    /// `resources/templates/list`
    ResourceTemplates,
}

impl ListKind {
    /// The method that reads the list.
    pub fn list_method(self) -> protocol::Method {
        match self {
            ListKind::Tools => protocol::Method::ToolsList,
            ListKind::Prompts => protocol::Method::PromptsList,
            ListKind::Resources => protocol::Method::ResourcesList,
            ListKind::ResourceTemplates => protocol::Method::ResourcesTemplatesList,
        }
    }

    /// Its method's name (`tools/list`, …).
    pub fn method(self) -> &'static str {
        self.list_method().as_str()
    }

    /// The field of a result page that holds the items.
    pub fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
        }
    }

    fn label(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "templates",
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The page's items, as the client sees them (tool and prompt names exposed).
    pub items: Vec<Value>,
    /// The cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Why a cursor is refused (the caller answers `-32602`). The message is the same for every reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// Not a cursor this gateway issues.
    #[error("invalid cursor")]
    Malformed,
    /// Issued for another snapshot version (the catalog changed since) or another list.
    #[error("invalid cursor")]
    Stale,
    /// The offset lies outside the list.
    #[error("invalid cursor")]
    OutOfRange,
}

/// Longer cursors are refused before decoding.
const MAX_CURSOR_LEN: usize = 96;

fn encode(kind: ListKind, version: u64, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("v{version}:{}:{offset}", kind.label()))
}

/// The offset a cursor names, if it is one this snapshot issued for this list.
fn decode(cursor: &str, kind: ListKind, version: u64) -> Result<usize, CursorError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError::Malformed);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CursorError::Malformed)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| CursorError::Malformed)?;
    let mut fields = text.splitn(3, ':');
    let (Some(v), Some(list), Some(offset)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(CursorError::Malformed);
    };
    let issued_version = v
        .strip_prefix('v')
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or(CursorError::Malformed)?;
    let offset = offset
        .parse::<usize>()
        .map_err(|_| CursorError::Malformed)?;
    if !matches!(list, "tools" | "prompts" | "resources" | "templates") {
        return Err(CursorError::Malformed);
    }
    if issued_version != version || list != kind.label() {
        return Err(CursorError::Stale);
    }
    // Only the exact bytes this module issues (no "+7", "007", padding or other spellings).
    if encode(kind, version, offset) != cursor {
        return Err(CursorError::Malformed);
    }
    Ok(offset)
}

impl CatalogSnapshot {
    /// One page of a list: the first page without a cursor, else the page the cursor names. `page_size` is at
    /// least 1 (0 is taken as 1).
    pub fn page(
        &self,
        list: ListKind,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<Page, CursorError> {
        let len = self.list_len(list);
        let start = match cursor {
            None => 0,
            Some(c) => {
                let offset = decode(c, list, self.version)?;
                if offset >= len {
                    return Err(CursorError::OutOfRange);
                }
                offset
            }
        };
        let end = start.saturating_add(page_size.max(1)).min(len);
        Ok(Page {
            items: self.list_values(list, start..end),
            next_cursor: (end < len).then(|| encode(list, self.version, end)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip_and_rejections() {
        let good = encode(ListKind::Tools, 42, 50);
        assert_eq!(decode(&good, ListKind::Tools, 42), Ok(50));
        // (cursor, error)
        let table = [
            (good.clone(), ListKind::Tools, 43, CursorError::Stale),
            (good.clone(), ListKind::Prompts, 42, CursorError::Stale),
            (String::new(), ListKind::Tools, 42, CursorError::Malformed),
            (
                "!!!".to_owned(),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                format!("{good}="),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                "x".repeat(1000),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode("v42:tools:+7"),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode("v42:tools:07"),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode("v42:tools:-1"),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode("v42:tools"),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode("v42:nope:1"),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
            (
                URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
                ListKind::Tools,
                42,
                CursorError::Malformed,
            ),
        ];
        for (cursor, kind, version, want) in table {
            assert_eq!(decode(&cursor, kind, version), Err(want), "{cursor:?}");
            assert_eq!(want.to_string(), "invalid cursor");
        }
    }
}
