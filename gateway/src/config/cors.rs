//! The syntax of `[server] cors_allowed_origins`: each entry is a web origin, `scheme://host[:port]`, with no
//! path, query, fragment or user info. Entries are compared in one normal form (scheme and host lower-case,
//! the scheme's default port dropped), which is also how a browser's `Origin` header is read. `*` and `null`
//! are refused: every site allowed to call the gateway from a browser is named (the gateway sends no
//! `Access-Control-Allow-Credentials`, and a wildcard would let any web page drive the backends' tools).

/// An origin in its normal form, or why the text is not an origin.
pub fn normalize_origin(text: &str) -> Result<String, String> {
    const SHAPE: &str = "must be scheme://host[:port] with no path (e.g. https://app.example)";
    if text == "*" {
        return Err(
            "\"*\" is not accepted: name each origin allowed (e.g. https://app.example)".to_owned(),
        );
    }
    if text.eq_ignore_ascii_case("null") {
        return Err("\"null\" is not accepted: it is the origin of any sandboxed page".to_owned());
    }
    let Some((scheme, authority)) = text.split_once("://") else {
        return Err(format!("{text:?} {SHAPE}"));
    };
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return Err(format!("{text:?} {SHAPE}: the scheme is not valid"));
    }
    if authority
        .bytes()
        .any(|b| matches!(b, b'/' | b'?' | b'#' | b'@' | b'\\') || !b.is_ascii_graphic())
    {
        return Err(format!("{text:?} {SHAPE}"));
    }
    let (host, port) = split_port(authority).ok_or_else(|| format!("{text:?} {SHAPE}"))?;
    if host.is_empty() {
        return Err(format!("{text:?} {SHAPE}: the host is empty"));
    }
    let scheme = scheme.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    Ok(match port {
        Some(p) if Some(p) != default_port => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// `host[:port]` (an IPv6 host in brackets): the host and the port, if any; `None` if the port is not one.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, rest) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        (&authority[..=end], &authority[end + 1..])
    } else {
        match authority.find(':') {
            Some(colon) => (&authority[..colon], &authority[colon..]),
            None => (authority, ""),
        }
    };
    match rest.strip_prefix(':') {
        None if rest.is_empty() => Some((host, None)),
        None => None,
        Some(digits) => {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let port: u16 = digits.parse().ok().filter(|p| *p != 0)?;
            Some((host, Some(port)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized_or_refused_with_the_reason() {
        // (entry, normal form, or a fragment of the reason it is refused)
        let table: [(&str, Result<&str, &str>); 18] = [
            ("https://app.example", Ok("https://app.example")),
            ("HTTPS://App.Example", Ok("https://app.example")),
            ("https://app.example:443", Ok("https://app.example")),
            ("http://app.example:80", Ok("http://app.example")),
            ("http://localhost:5173", Ok("http://localhost:5173")),
            ("https://app.example:80", Ok("https://app.example:80")),
            ("http://[::1]:6274", Ok("http://[::1]:6274")),
            ("http://127.0.0.1:6274", Ok("http://127.0.0.1:6274")),
            ("chrome-extension://abcdef", Ok("chrome-extension://abcdef")),
            ("*", Err("name each origin")),
            ("null", Err("sandboxed")),
            ("https://app.example/", Err("no path")),
            ("https://app.example/mcp", Err("no path")),
            ("app.example", Err("scheme://host")),
            ("https://", Err("host is empty")),
            ("https://app.example:0", Err("no path")),
            ("https://user@app.example", Err("no path")),
            ("https://app.example:99999", Err("no path")),
        ];
        for (entry, want) in table {
            match (normalize_origin(entry), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{entry}"),
                (Err(why), Err(fragment)) => {
                    assert!(why.contains(fragment), "{entry}: {why}");
                }
                (got, want) => panic!("{entry}: got {got:?}, want {want:?}"),
            }
        }
    }
}
