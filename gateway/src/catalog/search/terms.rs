//! The words of the tool search (module `search`): how a tool's texts and a query become terms, the same
//! way for both.
//!
//! Lower-cased; split on every character that is not alphanumeric and, inside a word, on camelCase
//! boundaries (`createIssue`, `HTTPServer`), so `github__createIssue` gives `github`, `create`, `issue`
//! (before folding); a few common English words dropped; then a light suffix folding ([`fold`]: plurals,
//! `-ing`, `-ed`, a final `e`, each only while the stem keeps three characters), so that `issues`,
//! `listing` and `created` meet `issue`, `list` and `create`. It must not allocate: each term is built in a
//! fixed buffer and lent to the caller.

/// Bytes of one term; a longer word is cut at a character boundary (the same way in tools and queries).
pub(super) const MAX_TERM_BYTES: usize = 48;

/// Dropped before folding: they say nothing about a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// Calls `each` with every term of `text`, in order, until it returns `false`.
pub(super) fn terms(text: &str, mut each: impl FnMut(&str) -> bool) {
    let mut word = Word {
        buf: [0; MAX_TERM_BYTES],
        len: 0,
    };
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            if !word.emit(&mut each) {
                return;
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            // `aB`, `2B`, and the last capital of an acronym before a lower-case letter (`HTTPServer`).
            let boundary = c.is_uppercase()
                && (p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && chars.peek().is_some_and(|n| n.is_lowercase())));
            if boundary && !word.emit(&mut each) {
                return;
            }
        }
        word.push(c);
        prev = Some(c);
    }
    word.emit(&mut each);
}

/// The word being read, lower-cased.
struct Word {
    buf: [u8; MAX_TERM_BYTES],
    len: usize,
}

impl Word {
    fn push(&mut self, c: char) {
        for l in c.to_lowercase() {
            let end = self.len + l.len_utf8();
            let Some(room) = self.buf.get_mut(self.len..end) else {
                return; // cut: the rest of the word is dropped
            };
            l.encode_utf8(room);
            self.len = end;
        }
    }

    /// Hands the word (folded) to `each` unless it is empty or a stop word, and starts a new one.
    fn emit(&mut self, each: &mut impl FnMut(&str) -> bool) -> bool {
        let len = std::mem::take(&mut self.len);
        let Some(word) = self.buf.get_mut(..len) else {
            return true;
        };
        if word.is_empty() || STOP_WORDS.iter().any(|s| s.as_bytes() == &*word) {
            return true;
        }
        let folded = fold(word);
        // Only ASCII suffixes are removed or rewritten, so the bytes stay UTF-8.
        match word.get(..folded).map(std::str::from_utf8) {
            Some(Ok(term)) => each(term),
            _ => true,
        }
    }
}

/// Folds a lower-cased word's suffixes in place and returns its new length: `ies` → `y`; `es` after `s`,
/// `x`, `z`, `ch`, `sh`; `s` (not `ss`, `us`, `is`); then `ing` or `ed` (and a doubled final consonant,
/// `running` → `run`); then a final `e` (so `create`, `creates`, `created` and `creating` all give `creat`).
/// Each step only applies when the stem left has at least three characters.
pub(super) fn fold(w: &mut [u8]) -> usize {
    let mut n = w.len();
    if ends(w, n, b"ies") && stem_ok(w, n - 3) {
        if let Some(b) = w.get_mut(n - 3) {
            *b = b'y';
        }
        n -= 2;
    } else if ends(w, n, b"es")
        && [&b"s"[..], b"x", b"z", b"ch", b"sh"]
            .iter()
            .any(|s| ends(w, n - 2, s))
        && stem_ok(w, n - 2)
    {
        n -= 2;
    } else if ends(w, n, b"s")
        && ![&b"ss"[..], b"us", b"is"].iter().any(|s| ends(w, n, s))
        && stem_ok(w, n - 1)
    {
        n -= 1;
    }
    if ends(w, n, b"ing") && stem_ok(w, n - 3) {
        n = undouble(w, n - 3);
    } else if ends(w, n, b"ed") && stem_ok(w, n - 2) {
        n = undouble(w, n - 2);
    }
    if ends(w, n, b"e") && stem_ok(w, n - 1) {
        n -= 1;
    }
    n
}

fn ends(w: &[u8], n: usize, suffix: &[u8]) -> bool {
    w.get(..n).is_some_and(|w| w.ends_with(suffix))
}

/// Whether `w[..n]` has at least three characters.
fn stem_ok(w: &[u8], n: usize) -> bool {
    w.get(..n)
        .is_some_and(|s| s.iter().filter(|&&b| b & 0xC0 != 0x80).count() >= 3)
}

/// `runn` → `run`, `sett` → `set`; not `l`, `s` or `z` (`call`, `pass`), nor below three characters (`add`).
fn undouble(w: &[u8], n: usize) -> usize {
    match w.get(..n) {
        Some([.., a, b])
            if a == b && a.is_ascii_lowercase() && !b"aeioulsz".contains(a) && n > 3 =>
        {
            n - 1
        }
        _ => n,
    }
}
