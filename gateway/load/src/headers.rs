//! What every request of a run carries besides MCP's own headers, for a target behind authentication:
//! `--header 'NAME: VALUE'` (repeatable) and `--bearer-file FILE` (`Authorization: Bearer` and the file's
//! first line, so that a key mounted from a secret is never on the command line). Values are marked
//! sensitive and never printed: errors name the header or the file, not what they hold.

use std::path::Path;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

/// The headers the generator writes itself: a `--header` may not replace them.
const OWN: &[&str] = &[
    "host",
    "content-type",
    "content-length",
    "accept",
    "transfer-encoding",
    "connection",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

/// One `--header 'NAME: VALUE'`.
#[derive(Clone)]
pub struct ExtraHeader(HeaderName, HeaderValue);

impl std::fmt::Debug for ExtraHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: (hidden)", self.0)
    }
}

/// Parses `NAME: VALUE` (clap's value parser for `--header`).
pub fn parse(text: &str) -> Result<ExtraHeader, String> {
    let Some((name, value)) = text.split_once(':') else {
        return Err("a header is written NAME: VALUE".to_owned());
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a header name", name.trim()))?;
    if OWN.contains(&name.as_str()) || name.as_str().starts_with("mcp-param-") {
        return Err(format!(
            "{name} is written by the generator itself (MCP's and HTTP's own headers cannot be set)"
        ));
    }
    let value = sensitive(value.trim())
        .ok_or_else(|| format!("the value of {name} is empty or holds a control character"))?;
    Ok(ExtraHeader(name, value))
}

/// The headers of `--header` and `--bearer-file` together; the bearer file's wins over an `Authorization`
/// given twice is refused.
pub(crate) fn of(extra: &[ExtraHeader], bearer_file: Option<&Path>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for ExtraHeader(name, value) in extra {
        headers.append(name.clone(), value.clone());
    }
    if let Some(path) = bearer_file {
        if headers.contains_key(AUTHORIZATION) {
            return Err("--bearer-file and --header 'Authorization: …' both set it".to_owned());
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--bearer-file {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim();
        let value = sensitive(&format!("Bearer {token}"))
            .filter(|_| !token.is_empty())
            .ok_or_else(|| {
                format!(
                    "--bearer-file {}: its first line is empty or not a token",
                    path.display()
                )
            })?;
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

fn sensitive(text: &str) -> Option<HeaderValue> {
    if text.is_empty() {
        return None;
    }
    let mut value = HeaderValue::from_str(text).ok()?;
    value.set_sensitive(true);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_parsed_or_refused_with_its_reason() {
        // (text, Ok(name) or Err(part of the reason))
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("Authorization: Bearer abc", Ok("authorization")),
            ("X-Api-Key:k-123", Ok("x-api-key")),
            ("  X-Tenant :  blue ", Ok("x-tenant")),
            ("Authorization Bearer abc", Err("NAME: VALUE")),
            ("Bad Name: v", Err("not a header name")),
            ("X-Empty:", Err("empty")),
            ("X-Ctl: a\u{1}b", Err("control character")),
            ("Mcp-Session-Id: 1", Err("written by the generator")),
            ("content-type: text/plain", Err("written by the generator")),
            ("Mcp-Param-Region: eu", Err("written by the generator")),
        ];
        for (text, want) in cases {
            match (parse(text), want) {
                (Ok(h), Ok(name)) => assert_eq!(h.0.as_str(), *name, "{text}"),
                (Err(why), Err(part)) => assert!(why.contains(part), "{text}: {why}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_value_never_shows_in_debug_or_errors() {
        let h = parse("X-Api-Key: SECRET-VALUE").unwrap();
        assert!(!format!("{h:?}").contains("SECRET"));
        let map = of(&[h], None).unwrap();
        assert!(map["x-api-key"].is_sensitive());
        let why = parse("X-Api-Key: SECRET\u{1}").unwrap_err();
        assert!(!why.contains("SECRET"), "{why}");
    }

    #[test]
    fn the_bearer_file_gives_authorization_from_its_first_line() {
        let dir = std::env::temp_dir().join(format!("mcpgw-load-bearer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("key");
        std::fs::write(&file, "k-123456\nignored\n").unwrap();
        let map = of(&[], Some(&file)).unwrap();
        assert_eq!(map[AUTHORIZATION], "Bearer k-123456");
        assert!(map[AUTHORIZATION].is_sensitive());
        let twice = of(&[parse("Authorization: Bearer x").unwrap()], Some(&file));
        assert!(twice.unwrap_err().contains("both"));
        std::fs::write(&file, "\n").unwrap();
        assert!(of(&[], Some(&file)).unwrap_err().contains("empty"));
        let missing = of(&[], Some(&dir.join("absent"))).unwrap_err();
        assert!(missing.contains("--bearer-file"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
