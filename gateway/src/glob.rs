//! The `*`/`?` glob matching of names and URIs that the configuration, the catalog's shaping, the scope
//! checks, the policy and the rate limits share. A leaf: it imports nothing of the crate, allocates nothing,
//! and must stay that way (every request calls it).

/// A `*`/`?` glob match (whole string; `?` is one character). Allocates nothing: the scope check, the rate
/// limits and the policy call it per request.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    // The length of the character starting at byte `i` of the text (always a boundary here: literals
    // match whole characters byte by byte, and `?` and a backtrack step over whole characters).
    let step = |i: usize| {
        text.get(i..)
            .and_then(|s| s.chars().next())
            .map_or(1, char::len_utf8)
    };
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        match p.get(pi) {
            Some(b'?') => {
                pi += 1;
                ti += step(ti);
            }
            Some(b'*') => {
                star = Some(pi);
                mark = ti;
                pi += 1;
            }
            Some(c) if t.get(ti) == Some(c) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some(s) => {
                    pi = s + 1;
                    mark += step(mark);
                    ti = mark;
                }
                None => return false,
            },
        }
    }
    p.get(pi..).unwrap_or_default().iter().all(|c| *c == b'*')
}
