//! What crosses the outbound edge, and what comes back across it: redirects are refused (no MCP transport
//! needs one, and following one replays the request, its arguments and the gateway's credential to wherever
//! the backend points), and a URL is shown without its userinfo or query (hosted servers put keys there)
//! wherever it could reach a client, `/readyz` or a log above debug.

use reqwest::Url;

/// `url` as it may be shown: `scheme://host[:port]/path`, never its userinfo, query or fragment.
pub fn shown_url(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
    }
}

/// [`shown_url`] of a URL given as text; one that does not parse is not shown at all.
pub fn shown_url_text(url: &str) -> String {
    Url::parse(url).map_or_else(|_| "(an unparseable url)".to_owned(), |u| shown_url(&u))
}

/// `text` with every form of `url` reqwest may have said replaced by [`shown_url`].
pub(super) fn redact(text: String, url: &Url) -> String {
    let shown = shown_url(url);
    let full = url.as_str();
    if shown == full || !text.contains(full) {
        return text;
    }
    text.replace(full, &shown)
}

/// Why a redirect answer (to a request for `url`) is refused, naming the target's host only (its path and query can carry what
/// the backend wants to reach or leak); `None` for any other answer.
pub(crate) fn redirect_refusal(
    status: reqwest::StatusCode,
    headers: &reqwest::header::HeaderMap,
    url: &Url,
) -> Option<String> {
    if !status.is_redirection() {
        return None;
    }
    let target = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|location| url.join(location).ok());
    let host = match target
        .as_ref()
        .and_then(|t| Some((t.host_str()?, t.port())))
    {
        Some((host, Some(port))) => format!("{host}:{port}"),
        Some((host, None)) => host.to_owned(),
        None => "an unnamed place".to_owned(),
    };
    Some(format!(
        "backend answered a redirect ({}) to {host}; redirects are not followed",
        status.as_u16()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_userinfo_query_or_fragment() {
        let cases = [
            (
                "https://user:pass@api.example.com/mcp?key=SECRET#frag",
                "https://api.example.com/mcp",
            ),
            (
                "http://127.0.0.1:8080/v1/mcp?k=1",
                "http://127.0.0.1:8080/v1/mcp",
            ),
            ("http://[::1]:9/x", "http://[::1]:9/x"),
            ("https://example.com", "https://example.com/"),
        ];
        for (url, want) in cases {
            assert_eq!(shown_url_text(url), want, "{url}");
        }
        assert_eq!(
            shown_url_text("not a url ?key=SECRET"),
            "(an unparseable url)"
        );
        let url = Url::parse("http://u:p@h/p?key=SECRET").unwrap();
        let said = redact(format!("error sending request for url ({url})"), &url);
        assert_eq!(said, "error sending request for url (http://h/p)");
    }
}
