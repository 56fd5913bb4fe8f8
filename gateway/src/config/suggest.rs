//! "Did you mean": a config key serde does not know is answered with the nearest one it expected, when one is
//! near (`lisen` → `listen`). serde's own message (`unknown field `lisen`, expected one of `listen`, …`) is
//! kept whole; the suggestion goes after the unknown key.

/// `message` with a suggestion added after its unknown field or variant, when one expected name is within
/// a small edit distance of it; otherwise `message` as it is.
pub(super) fn did_you_mean(message: &str) -> String {
    for lead in ["unknown field `", "unknown variant `"] {
        let Some(start) = message.find(lead).map(|i| i + lead.len()) else {
            continue;
        };
        let Some(len) = message[start..].find('`') else {
            continue;
        };
        let unknown = &message[start..start + len];
        let rest = &message[start + len + 1..];
        let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
        let Some(nearest) = nearest(unknown, &expected) else {
            continue;
        };
        let at = start + len + 1;
        return format!(
            "{} (did you mean `{nearest}`?){}",
            &message[..at],
            &message[at..]
        );
    }
    message.to_owned()
}

/// The expected name nearest `unknown`, if it is close: at most 2 edits, and fewer than a third of the
/// longer name's letters (so `tls` is not offered for `url`).
fn nearest<'a>(unknown: &str, expected: &[&'a str]) -> Option<&'a str> {
    expected
        .iter()
        .map(|e| {
            (
                distance(&unknown.to_ascii_lowercase(), &e.to_ascii_lowercase()),
                *e,
            )
        })
        .filter(|(d, e)| *d <= 2 && *d * 3 < unknown.len().max(e.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, e)| e)
}

/// Levenshtein distance, with a transposition counted as one edit (`lsiten` → `listen`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_key_is_suggested_and_a_far_one_is_not() {
        let expected = "expected one of `listen`, `max_body_bytes`, `log_level`, `url`";
        let cases = [
            ("lisen", Some("listen")),
            ("lsiten", Some("listen")),
            ("Listen", Some("listen")),
            ("max_body_byte", Some("max_body_bytes")),
            ("loglevel", Some("log_level")),
            ("uri", None),
            ("color", None),
            ("listening_on", None),
        ];
        for (unknown, want) in cases {
            let message = format!(
                "TOML parse error at line 2, column 1: unknown field `{unknown}`, {expected}"
            );
            let got = did_you_mean(&message);
            match want {
                Some(w) => assert_eq!(
                    got,
                    format!(
                        "TOML parse error at line 2, column 1: unknown field `{unknown}` (did you mean `{w}`?), {expected}"
                    ),
                    "{unknown}"
                ),
                None => assert_eq!(got, message, "{unknown}"),
            }
        }
        let variant = "unknown variant `jsn`, expected `text` or `json`";
        assert_eq!(
            did_you_mean(variant),
            "unknown variant `jsn` (did you mean `json`?), expected `text` or `json`"
        );
        assert_eq!(
            did_you_mean("invalid type: integer"),
            "invalid type: integer"
        );
    }
}
