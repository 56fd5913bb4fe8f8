//! The normalized form of a resource URI, which views decide on (RFC 3986 §6.2.2, syntax-based): the scheme
//! and the host lower-cased; `%XX` escapes of unreserved characters (`A`–`Z`, `a`–`z`, `0`–`9`, `-`, `.`,
//! `_`, `~`) decoded everywhere, every other escape kept with its hex digits upper-cased (`%2f` is `%2F`, and
//! stays encoded: `/` is reserved); dot segments of a path that starts with `/` removed (§5.2.4, `..` above
//! the root going nowhere). A `%` not followed by two hex digits is encoded (`%25`); the userinfo, the port,
//! the query and the fragment are not changed but for their escapes; a URI without a valid scheme is
//! normalized as a path.
//!
//! Pure and allocation-free when nothing changes. Normalizing more could only refuse more, never let more
//! through: a view keeps a URI only when it keeps both its raw and its normalized form (`view`).

use std::borrow::Cow;

/// The normalized form of `uri` (borrowed when it is already normalized).
pub(crate) fn normalize(uri: &str) -> Cow<'_, str> {
    let (scheme, rest) = match uri.split_once(':') {
        Some((scheme, rest)) if is_scheme(scheme) => (Some(scheme), rest),
        _ => (None, uri),
    };
    let mut out = String::with_capacity(uri.len());
    if let Some(scheme) = scheme {
        out.push_str(&scheme.to_ascii_lowercase());
        out.push(':');
    }
    let rest = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find(['/', '?', '#']).unwrap_or(after.len());
            let (authority, rest) = after.split_at(end);
            out.push_str("//");
            push_authority(&mut out, authority);
            rest
        }
        None => rest,
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (path, tail) = rest.split_at(end);
    let mut decoded = String::with_capacity(path.len());
    push_decoded(&mut decoded, path, false);
    if decoded.starts_with('/') {
        remove_dot_segments(&mut out, &decoded);
    } else {
        out.push_str(&decoded);
    }
    push_decoded(&mut out, tail, false);
    if out == uri {
        Cow::Borrowed(uri)
    } else {
        Cow::Owned(out)
    }
}

/// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// `[userinfo@]host[:port]` with the host lower-cased.
fn push_authority(out: &mut String, authority: &str) {
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    if let Some(userinfo) = userinfo {
        push_decoded(out, userinfo, false);
        out.push('@');
    }
    // The port follows the last `:` outside an IP literal's brackets.
    let literal_end = host_port.rfind(']').map_or(0, |i| i + 1);
    let port_at = host_port
        .get(literal_end..)
        .and_then(|after| after.find(':'))
        .map_or(host_port.len(), |i| literal_end + i);
    let (host, port) = host_port.split_at(port_at);
    push_decoded(out, host, true);
    out.push_str(port);
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// `text` with unreserved escapes decoded and the others' hex digits upper-cased; with `lower`, every letter
/// that is not an escape's hex digit lower-cased.
fn push_decoded(out: &mut String, text: &str, lower: bool) {
    let push = |out: &mut String, s: &str| {
        if lower {
            out.push_str(&s.to_ascii_lowercase());
        } else {
            out.push_str(s);
        }
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Up to the next `%` (an ASCII byte, so a character boundary).
        let next = text
            .get(i..)
            .and_then(|s| s.find('%'))
            .map_or(text.len(), |j| i + j);
        push(out, text.get(i..next).unwrap_or_default());
        i = next;
        if i >= bytes.len() {
            break;
        }
        let escape = bytes
            .get(i + 1)
            .copied()
            .and_then(hex)
            .zip(bytes.get(i + 2).copied().and_then(hex));
        match escape {
            Some((high, low)) => {
                let b = high * 16 + low;
                if is_unreserved(b) {
                    push(out, char::from(b).encode_utf8(&mut [0; 4]));
                } else {
                    out.push('%');
                    out.push_str(&format!("{b:02X}"));
                }
                i += 3;
            }
            None => {
                out.push_str("%25");
                i += 1;
            }
        }
    }
}

/// RFC 3986 §5.2.4 on an absolute path, appended to `out`.
fn remove_dot_segments(out: &mut String, path: &str) {
    let start = out.len();
    let mut input = path;
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../") {
            input = rest;
        } else if let Some(rest) = input.strip_prefix("./") {
            input = rest;
        } else if input.starts_with("/./") {
            input = input.get(2..).unwrap_or_default();
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") {
            input = input.get(3..).unwrap_or_default();
            pop_segment(out, start);
        } else if input == "/.." {
            input = "/";
            pop_segment(out, start);
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let from = usize::from(input.starts_with('/'));
            let end = input
                .get(from..)
                .and_then(|s| s.find('/'))
                .map_or(input.len(), |j| from + j);
            let (segment, rest) = input.split_at(end);
            out.push_str(segment);
            input = rest;
        }
    }
}

/// Drops the last segment (and its `/`) written after `start`.
fn pop_segment(out: &mut String, start: usize) {
    let cut = out
        .get(start..)
        .and_then(|written| written.rfind('/'))
        .map_or(start, |j| start + j);
    out.truncate(cut);
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn resource_uris_normalize_as_rfc_3986_says() {
        // (raw, normalized)
        let table = [
            // already normalized: unchanged
            ("mock://m/items/7", "mock://m/items/7"),
            ("file:///etc/hosts", "file:///etc/hosts"),
            ("urn:isbn:0451450523", "urn:isbn:0451450523"),
            ("", ""),
            // unreserved escapes decoded, either case of hex
            ("mem://x/%61", "mem://x/a"),
            ("mock://m/items/%73%65cret", "mock://m/items/secret"),
            ("mock://m/%7e%7E%2d%2E%5f", "mock://m/~~-._"),
            // reserved and non-ASCII escapes kept, hex upper-cased
            ("mock://m/a%2fb", "mock://m/a%2Fb"),
            ("mock://m/a%2Fb", "mock://m/a%2Fb"),
            ("mock://m/%2e%2e%2fsecret", "mock://m/..%2Fsecret"),
            ("mock://m/caf%c3%a9", "mock://m/caf%C3%A9"),
            ("mock://m/a%20b?q=%3d", "mock://m/a%20b?q=%3D"),
            // a `%` that starts no escape is itself encoded
            ("mock://m/100%", "mock://m/100%25"),
            ("mock://m/%4", "mock://m/%254"),
            ("mock://m/%zz%4g", "mock://m/%25zz%254g"),
            ("mock://m/%%41", "mock://m/%25A"),
            ("mock://m/%%34%31", "mock://m/%2541"),
            // scheme and host lower-cased; userinfo, port, path case kept
            ("MOCK://M.Example/Items", "mock://m.example/Items"),
            ("Mock://User:PW@HOST:8080/A", "mock://User:PW@host:8080/A"),
            ("http://[FE80::1]:80/x", "http://[fe80::1]:80/x"),
            ("http://h%41st/x", "http://hast/x"),
            // dot segments, decoded ones too; `..` above the root goes nowhere
            ("file:///a/../b", "file:///b"),
            ("mock://m/items/../secret", "mock://m/secret"),
            ("mock://m/items/%2E%2E/secret", "mock://m/secret"),
            ("mock://m/a/./b/.", "mock://m/a/b/"),
            ("mock://m/a/b/..", "mock://m/a/"),
            ("mock://m/../../x", "mock://m/x"),
            ("mock://m/..", "mock://m/"),
            ("file:/a/b/../../../c", "file:/c"),
            ("mock://m/a/..b/c", "mock://m/a/..b/c"),
            // not in the query or fragment, nor in a path without a leading `/`
            ("mock://m/x?p=/a/../b#/../c", "mock://m/x?p=/a/../b#/../c"),
            ("urn:a/../b", "urn:a/../b"),
            // no scheme: a path
            ("/a/%62/../c", "/a/c"),
            ("1x:/a/../b", "1x:/a/../b"),
        ];
        for (raw, want) in table {
            assert_eq!(normalize(raw), want, "{raw}");
        }
    }

    #[test]
    fn normalizing_twice_changes_nothing_more() {
        for raw in [
            "mock://m/%2e%2e%2fsecret",
            "mock://m/%252e",
            "MEM://X/a/%2E/../%7e",
            "mock://m/%%2e%2e/x",
            "mock://m/%%34%31",
            "mock://m/100%",
        ] {
            let once = normalize(raw).into_owned();
            assert_eq!(normalize(&once), once, "{raw}");
        }
    }
}
