//! Exposed names (DESIGN §4): a backend's tool or prompt `t` is exposed as `{prefix}__t`, or as `t` when the
//! backend's prefix is empty. Resources and resource templates are never renamed.

/// The separator between a backend's prefix and the backend's own name.
pub const SEPARATOR: &str = "__";

/// The name a client sees for a backend's tool or prompt `original`.
pub fn exposed_name(prefix: &str, original: &str) -> String {
    if prefix.is_empty() {
        original.to_owned()
    } else {
        let mut out = String::with_capacity(prefix.len() + SEPARATOR.len() + original.len());
        out.push_str(prefix);
        out.push_str(SEPARATOR);
        out.push_str(original);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_name_table() {
        // (prefix, original, exposed)
        let table = [
            ("weather", "get", "weather__get"),
            ("", "get", "get"),
            ("a", "b__c", "a__b__c"),
            ("fs", "read.file", "fs__read.file"),
            ("x", "", "x__"),
        ];
        for (prefix, original, exposed) in table {
            assert_eq!(
                exposed_name(prefix, original),
                exposed,
                "{prefix:?} {original:?}"
            );
        }
    }
}
