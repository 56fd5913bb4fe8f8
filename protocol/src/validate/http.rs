//! The HTTP side of a request as validation sees it: the header source trait, one pass over the headers that
//! picks out what MCP cares about, and the `Accept` and `Content-Type` rules.

use crate::headers::names;

/// The HTTP method of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// POST: every JSON-RPC message.
    Post,
    /// GET: the legacy standalone stream.
    Get,
    /// DELETE: ends a legacy session.
    Delete,
    /// Anything else.
    Other,
}

/// A source of request headers. Implemented by the gateway over its HTTP library's header map, and here for
/// plain slices of name/value pairs.
pub trait Headers {
    /// Calls `f` once per header line, with the name as received (any case) and the raw value bytes.
    fn for_each<'a>(&'a self, f: &mut dyn FnMut(&'a str, &'a [u8]));
}

impl<N: AsRef<str>, V: AsRef<[u8]>> Headers for [(N, V)] {
    fn for_each<'a>(&'a self, f: &mut dyn FnMut(&'a str, &'a [u8])) {
        for (n, v) in self {
            f(n.as_ref(), v.as_ref());
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> Headers for Vec<(N, V)> {
    fn for_each<'a>(&'a self, f: &mut dyn FnMut(&'a str, &'a [u8])) {
        self.as_slice().for_each(f)
    }
}

/// One header as validation sees it: absent, present once, or repeated (which mirrored headers must not be).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum One<'a> {
    #[default]
    Absent,
    Present(&'a [u8]),
    Repeated,
}

impl<'a> One<'a> {
    fn push(&mut self, v: &'a [u8]) {
        *self = match self {
            One::Absent => One::Present(v),
            _ => One::Repeated,
        }
    }

    pub fn is_present(&self) -> bool {
        !matches!(self, One::Absent)
    }
}

/// The headers MCP cares about, picked out in one pass.
#[derive(Debug, Default)]
pub(crate) struct Scanned<'a> {
    pub protocol_version: One<'a>,
    pub method: One<'a>,
    pub name: One<'a>,
    pub session_id: One<'a>,
    pub content_type: One<'a>,
    /// `Accept` may be split over several lines; each line is kept.
    pub accept: Vec<&'a [u8]>,
    /// `Mcp-Param-*` headers: (the `*` part as received, value).
    pub params: Vec<(&'a str, &'a [u8])>,
}

impl<'a> Scanned<'a> {
    pub fn scan(headers: &'a dyn Headers) -> Scanned<'a> {
        let mut s = Scanned::default();
        headers.for_each(&mut |name, value| {
            if name.eq_ignore_ascii_case(names::PROTOCOL_VERSION) {
                s.protocol_version.push(value);
            } else if name.eq_ignore_ascii_case(names::METHOD) {
                s.method.push(value);
            } else if name.eq_ignore_ascii_case(names::NAME) {
                s.name.push(value);
            } else if name.eq_ignore_ascii_case(names::SESSION_ID) {
                s.session_id.push(value);
            } else if name.eq_ignore_ascii_case(names::CONTENT_TYPE) {
                s.content_type.push(value);
            } else if name.eq_ignore_ascii_case(names::ACCEPT) {
                s.accept.push(value);
            } else if name.len() > names::PARAM_PREFIX.len()
                && name.is_char_boundary(names::PARAM_PREFIX.len())
                && name[..names::PARAM_PREFIX.len()].eq_ignore_ascii_case(names::PARAM_PREFIX)
            {
                s.params.push((&name[names::PARAM_PREFIX.len()..], value));
            }
        });
        s
    }
}

/// Which response bodies the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    /// `application/json`.
    pub json: bool,
    /// `text/event-stream`.
    pub sse: bool,
}

impl Accepts {
    /// A plain JSON body (what a refusal before validation is answered with).
    pub const JSON: Accepts = Accepts {
        json: true,
        sse: false,
    };

    /// Reads `Accept` lines. No `Accept` header accepts anything (RFC 9110).
    pub(crate) fn read(lines: &[&[u8]]) -> Accepts {
        if lines.is_empty() {
            return Accepts {
                json: true,
                sse: true,
            };
        }
        let mut a = Accepts {
            json: false,
            sse: false,
        };
        for line in lines {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            for range in line.split(',') {
                let mut parts = range.split(';');
                let media = parts.next().unwrap_or_default().trim();
                let refused = parts.any(|p| {
                    let p = p.trim();
                    p.len() >= 2
                        && p[..2].eq_ignore_ascii_case("q=")
                        && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
                });
                if refused {
                    continue;
                }
                let is = |m: &str| media.eq_ignore_ascii_case(m);
                if is("*/*") || is("application/*") || is("application/json") {
                    a.json = true;
                }
                if is("*/*") || is("text/*") || is("text/event-stream") {
                    a.sse = true;
                }
            }
        }
        a
    }

    /// Neither JSON nor SSE.
    pub fn none(&self) -> bool {
        !self.json && !self.sse
    }
}

/// Whether a `Content-Type` value is JSON (`application/json`, any parameters, any case).
pub(crate) fn is_json_content_type(value: &[u8]) -> bool {
    let Ok(v) = std::str::from_utf8(value) else {
        return false;
    };
    let media = v.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_table() {
        // (Accept lines, json, sse)
        let table: &[(&[&str], bool, bool)] = &[
            (&[], true, true),
            (&["application/json, text/event-stream"], true, true),
            (&["application/json"], true, false),
            (&["text/event-stream"], false, true),
            (&["*/*"], true, true),
            (&["text/html"], false, false),
            (&["application/json;q=0, text/event-stream"], false, true),
            (&["APPLICATION/JSON"], true, false),
            (&["application/json", "text/event-stream"], true, true),
            (&["text/*;q=0.5"], false, true),
        ];
        for (lines, json, sse) in table {
            let bytes: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
            assert_eq!(
                Accepts::read(&bytes),
                Accepts {
                    json: *json,
                    sse: *sse
                },
                "{lines:?}"
            );
        }
    }

    #[test]
    fn content_type_table() {
        for (v, ok) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("application/jsonx", false),
        ] {
            assert_eq!(is_json_content_type(v.as_bytes()), ok, "{v}");
        }
    }

    #[test]
    fn scan_picks_out_mcp_headers() {
        let h = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("Mcp-Param-Region", "us"),
            ("mcp-param-", "ignored: empty suffix"),
            ("X-Other", "1"),
            ("Mcp-Name", "a"),
            ("MCP-NAME", "b"),
        ];
        let s = Scanned::scan(&h);
        assert_eq!(s.protocol_version, One::Present(b"2026-07-28"));
        assert_eq!(s.name, One::Repeated);
        assert_eq!(s.params, vec![("Region", &b"us"[..])]);
        assert!(!s.session_id.is_present());
    }
}
