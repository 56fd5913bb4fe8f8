//! Session ids in logs. An `Mcp-Session-Id` (or a 2024-11-05 `sessionId`) is a bearer credential: whoever
//! holds it speaks as that session. Logs name a session by [`ShortId`], a short prefix that lets a reader
//! follow one session's lines (and find it from the full id they hold) without the log holding the id.

use std::fmt;

/// The longest prefix shown, in characters.
const SHOWN: usize = 8;

/// A session id as logs show it: its first 8 characters and `…`, never more than a quarter of the id (the
/// gateway's ids are 64 hex digits: 32 of their 256 bits shown; a short id a backend chose shows less).
/// `Debug` shows the same, so `?` in a log line does not leak the id either.
#[derive(Clone, Copy)]
pub struct ShortId<'a>(pub &'a str);

impl fmt::Debug for ShortId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ShortId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chars = self.0.chars().count();
        let shown = SHOWN.min(chars / 4);
        let end = self
            .0
            .char_indices()
            .nth(shown)
            .map_or(self.0.len(), |(i, _)| i);
        write!(f, "{}…", self.0.get(..end).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::ShortId;

    #[test]
    fn a_session_id_is_shown_as_a_short_prefix() {
        let full = "3f9a1c2e".to_owned() + &"0".repeat(56);
        // (id, shown)
        let table = [
            (full.as_str(), "3f9a1c2e…"),
            ("0123456789abcdef", "0123…"),
            ("abc", "…"),
            ("", "…"),
            ("éééééééé", "éé…"),
        ];
        for (id, shown) in table {
            assert_eq!(ShortId(id).to_string(), shown, "{id:?}");
            assert_eq!(format!("{:?}", ShortId(id)), shown, "{id:?}");
        }
    }
}
