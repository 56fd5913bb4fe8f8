//! Templated values of a scenario's steps: a JSON value whose strings may hold placeholders, compiled once
//! when the file is read and filled for each request. `{n}` is the session's request counter (1, 2, … over
//! its templated requests), `{session}` the session's index in its group, `{random:A..B}` an integer drawn
//! uniformly from A to B (both included), `{choice:a|b|c}` one of the words drawn uniformly; `{{` and `}}`
//! are literal braces. A string that is exactly one numeric placeholder becomes a JSON number.
//!
//! It must not do I/O nor keep state: the counter and the random generator are the session's.

use serde_json::{Map, Value};

use super::think::Rng;

/// What fills the placeholders of one request.
#[derive(Debug)]
pub(crate) struct Fill<'a> {
    /// The session's request counter (from 1).
    pub(crate) n: u64,
    /// The session's index in its group.
    pub(crate) session: usize,
    pub(crate) rng: &'a mut Rng,
}

/// One piece of a templated string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Counter,
    Session,
    Random(i64, i64),
    Choice(Vec<String>),
}

/// A JSON value with templated strings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Templated {
    /// A value without placeholders.
    Fixed(Value),
    /// A string with placeholders.
    Text(Vec<Piece>),
    Array(Vec<Templated>),
    Object(Vec<(String, Templated)>),
}

impl Templated {
    /// Compiles `value`; an unknown or malformed placeholder is an error (lower-case, with the string).
    pub(crate) fn compile(value: &Value) -> Result<Templated, String> {
        Ok(match value {
            Value::String(s) => match pieces(s)? {
                p if p.iter().all(|x| matches!(x, Piece::Text(_))) => {
                    Templated::Fixed(Value::String(text_of(&p)))
                }
                p => Templated::Text(p),
            },
            Value::Array(items) => {
                let items = items
                    .iter()
                    .map(Templated::compile)
                    .collect::<Result<Vec<_>, _>>()?;
                if items.iter().all(|t| matches!(t, Templated::Fixed(_))) {
                    Templated::Fixed(value.clone())
                } else {
                    Templated::Array(items)
                }
            }
            Value::Object(map) => {
                let fields = map
                    .iter()
                    .map(|(k, v)| Templated::compile(v).map(|t| (k.clone(), t)))
                    .collect::<Result<Vec<_>, _>>()?;
                if fields.iter().all(|(_, t)| matches!(t, Templated::Fixed(_))) {
                    Templated::Fixed(value.clone())
                } else {
                    Templated::Object(fields)
                }
            }
            other => Templated::Fixed(other.clone()),
        })
    }

    /// The value for one request.
    pub(crate) fn fill(&self, f: &mut Fill<'_>) -> Value {
        match self {
            Templated::Fixed(v) => v.clone(),
            Templated::Text(pieces) => {
                if let [one] = pieces.as_slice()
                    && let Some(n) = number(one, f)
                {
                    return Value::from(n);
                }
                let mut s = String::new();
                for p in pieces {
                    match p {
                        Piece::Text(t) => s.push_str(t),
                        Piece::Choice(words) => {
                            let i = f.rng.below(words.len() as u64) as usize;
                            s.push_str(&words[i]);
                        }
                        other => {
                            if let Some(n) = number(other, f) {
                                s.push_str(&n.to_string());
                            }
                        }
                    }
                }
                Value::String(s)
            }
            Templated::Array(items) => Value::Array(items.iter().map(|t| t.fill(f)).collect()),
            Templated::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, t)| (k.clone(), t.fill(f)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

fn number(p: &Piece, f: &mut Fill<'_>) -> Option<i64> {
    match p {
        Piece::Counter => Some(i64::try_from(f.n).unwrap_or(i64::MAX)),
        Piece::Session => Some(i64::try_from(f.session).unwrap_or(i64::MAX)),
        Piece::Random(lo, hi) => {
            let span = (*hi as i128 - *lo as i128 + 1) as u128;
            let r = u128::from(f.rng.next_u64()) % span;
            Some((*lo as i128 + r as i128) as i64)
        }
        _ => None,
    }
}

fn text_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.as_str(),
            _ => "",
        })
        .collect()
}

/// The pieces of `s`.
fn pieces(s: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['{', '}']) {
        text.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if rest[i..].starts_with("{{") {
            text.push('{');
            rest = &rest[i + 2..];
            continue;
        }
        if rest[i..].starts_with("}}") {
            text.push('}');
            rest = &rest[i + 2..];
            continue;
        }
        if rest[i..].starts_with('}') {
            return Err(format!("a lone }} in {s:?} (write }}}} for a brace)"));
        }
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed {{ in {s:?} (write {{{{ for a brace)"))?;
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(placeholder(&after[..end]).map_err(|why| format!("{why} in {s:?}"))?);
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

fn placeholder(p: &str) -> Result<Piece, String> {
    let (name, arg) = match p.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a)),
        None => (p.trim(), None),
    };
    match (name, arg) {
        ("n", None) => Ok(Piece::Counter),
        ("session", None) => Ok(Piece::Session),
        ("random", Some(range)) => {
            let bad = || format!("{{random:{range}}} is not a range A..B of integers");
            let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
            let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
            let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi {
                return Err(format!("{{random:{range}}}: {lo} is above {hi}"));
            }
            Ok(Piece::Random(lo, hi))
        }
        ("choice", Some(words)) => {
            let words: Vec<String> = words.split('|').map(str::to_owned).collect();
            if words.iter().any(String::is_empty) {
                return Err(format!(
                    "{{choice:{}}} has an empty choice",
                    words.join("|")
                ));
            }
            Ok(Piece::Choice(words))
        }
        _ => Err(format!(
            "unknown placeholder {{{p}}} (known: {{n}}, {{session}}, {{random:A..B}}, {{choice:a|b}})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filled(v: Value, n: u64, session: usize) -> Value {
        let mut rng = Rng::with_seed(7);
        let t = Templated::compile(&v).unwrap();
        t.fill(&mut Fill {
            n,
            session,
            rng: &mut rng,
        })
    }

    #[test]
    fn placeholders_fill_as_documented() {
        let cases = [
            (json!("plain"), json!("plain")),
            (json!("{n}"), json!(5)),
            (json!("{session}"), json!(2)),
            (json!("note {n} of {session}"), json!("note 5 of 2")),
            (json!("{{n}} is {n}"), json!("{n} is 5")),
            (json!("{random:3..3}"), json!(3)),
            (json!("x{random:-1..-1}"), json!("x-1")),
            (json!("{choice:only}"), json!("only")),
            (
                json!({"a": ["{n}", 1, true], "b": {"c": "{session}"}}),
                json!({"a": [5, 1, true], "b": {"c": 2}}),
            ),
            (json!(42), json!(42)),
        ];
        for (input, want) in cases {
            assert_eq!(filled(input.clone(), 5, 2), want, "{input}");
        }
    }

    #[test]
    fn random_and_choice_stay_in_their_range_and_reach_every_value() {
        let t = Templated::compile(&json!(["{random:1..3}", "{choice:a|b}"])).unwrap();
        let mut rng = Rng::with_seed(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let v = t.fill(&mut Fill {
                n: 1,
                session: 0,
                rng: &mut rng,
            });
            seen.insert(v.to_string());
            let (a, b) = (v[0].as_i64().unwrap(), v[1].as_str().unwrap());
            assert!((1..=3).contains(&a) && (b == "a" || b == "b"), "{v}");
        }
        assert_eq!(seen.len(), 6, "{seen:?}");
    }

    #[test]
    fn bad_placeholders_are_refused_clearly() {
        let cases = [
            ("{count}", "unknown placeholder {count}"),
            ("{random:5..1}", "{random:5..1}: 5 is above 1"),
            ("{random:a..b}", "is not a range A..B of integers"),
            ("{choice:a||b}", "has an empty choice"),
            ("open {n", "an unclosed {"),
            ("close }", "a lone }"),
        ];
        for (input, want) in cases {
            let err = Templated::compile(&json!(input)).unwrap_err();
            assert!(err.contains(want), "{input}: {err}");
        }
    }
}
