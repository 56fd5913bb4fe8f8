//! Names in the config that pick principals or groups (`[[policy]] principal`/`group`, `[endpoint.access]`,
//! `[catalog]`'s principals and groups, `[admin] groups`). API keys and JWTs name their principals in
//! namespaces of their own: `api_key:NAME` picks an `[[auth.api_key]]`'s principal (or a group it is
//! configured in) only, `jwt:NAME` a token's principal claim (or a group its groups claim names) only, and an
//! unqualified `NAME` either — `mcpgw check` warns when that is ambiguous (an API key's name or group with
//! `[auth.jwt]` on too).

/// The source of an API key's principal, as a qualifier writes it.
pub const API_KEY: &str = "api_key";
/// The source of a JWT's principal, as a qualifier writes it.
pub const JWT: &str = "jwt";

/// The source a pattern is qualified with and the rest (`None`: unqualified, either source).
pub fn split(pattern: &str) -> (Option<&'static str>, &str) {
    for source in [API_KEY, JWT] {
        if let Some(rest) = pattern
            .strip_prefix(source)
            .and_then(|r| r.strip_prefix(':'))
        {
            return (Some(source), rest);
        }
    }
    (None, pattern)
}

/// Whether `pattern` (a glob when `glob`, else an exact name) picks `name` of a principal from `source`.
pub fn matches(pattern: &str, source: &str, name: &str, glob: bool) -> bool {
    let (wanted, rest) = split(pattern);
    if wanted.is_some_and(|w| w != source) {
        return false;
    }
    if glob {
        crate::glob::glob_match(rest, name)
    } else {
        rest == name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qualified_name_picks_its_source_only_and_an_unqualified_one_either() {
        for (pattern, source, name, glob, want) in [
            ("ops-bot", API_KEY, "ops-bot", false, true),
            ("ops-bot", JWT, "ops-bot", false, true),
            ("api_key:ops-bot", API_KEY, "ops-bot", false, true),
            ("api_key:ops-bot", JWT, "ops-bot", false, false),
            ("jwt:ops-bot", JWT, "ops-bot", false, true),
            ("jwt:ops-bot", API_KEY, "ops-bot", false, false),
            ("jwt:ops-*", JWT, "ops-bot", true, true),
            ("jwt:ops-*", JWT, "ops-bot", false, false),
            ("api_key:*", JWT, "ops-bot", true, false),
            ("*", JWT, "ops-bot", true, true),
            ("other:ops-bot", JWT, "ops-bot", false, false),
        ] {
            assert_eq!(
                matches(pattern, source, name, glob),
                want,
                "{pattern} {source} {name} {glob}"
            );
        }
    }
}
