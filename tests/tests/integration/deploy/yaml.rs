//! The YAML of `deploy/`, read without a YAML library (the tests crate has none): block mappings and
//! sequences, `|` block scalars, flow sequences and mappings in JSON syntax, quoted and plain scalars,
//! comments, `---`, anchors with aliases and `<<` merges. Anything else panics naming its line: a file this
//! cannot read fails the test, it is never read wrong.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

pub fn documents(name: &str, text: &str) -> Vec<Value> {
    let mut p = Parser {
        name,
        lines: text.lines().map(str::to_owned).collect(),
        pos: 0,
        anchors: HashMap::new(),
    };
    let mut docs = Vec::new();
    loop {
        p.skip_blank();
        let Some(line) = p.lines.get(p.pos) else {
            break;
        };
        if line.trim_end() == "---" {
            p.pos += 1;
            continue;
        }
        match p.peek() {
            Some((0, _)) => docs.push(p.node(0)),
            _ => p.fail("a document starts indented"),
        }
    }
    docs
}

struct Parser<'a> {
    name: &'a str,
    lines: Vec<String>,
    pos: usize,
    anchors: HashMap<String, Value>,
}

fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// The text before a comment (`#` at the start or after a space, outside quotes).
fn strip_comment(s: &str) -> &str {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if double => escaped = true,
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            '#' if !single && !double && previous.is_whitespace() => return &s[..i],
            _ => {}
        }
        previous = c;
    }
    s
}

/// `key: rest` (the colon outside quotes, followed by a space or the end).
fn split_key(content: &str) -> Option<(String, &str)> {
    if content.starts_with(['[', '{']) {
        return None;
    }
    let (mut single, mut double) = (false, false);
    let bytes = content.as_bytes();
    for (i, c) in content.char_indices() {
        match c {
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            ':' if !single && !double && (i + 1 == bytes.len() || bytes[i + 1] == b' ') => {
                let key = content[..i].trim();
                let key = match scalar(key) {
                    Ok(Value::String(k)) => k,
                    _ => key.to_owned(),
                };
                return (!key.is_empty()).then_some((key, &content[i + 1..]));
            }
            _ => {}
        }
    }
    None
}

/// An inline scalar or flow collection.
fn scalar(text: &str) -> Result<Value, String> {
    let t = text.trim();
    if t.starts_with('"') {
        return serde_json::from_str::<String>(t)
            .map(Value::String)
            .map_err(|e| format!("{t}: {e}"));
    }
    if let Some(inner) = t.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or(format!("unclosed quote: {t}"))?;
        return Ok(Value::String(inner.replace("''", "'")));
    }
    if t.starts_with(['[', '{']) {
        return serde_json::from_str(t)
            .map_err(|e| format!("a flow collection not in JSON syntax: {t}: {e}"));
    }
    if t.starts_with(['&', '*', '!', '%', '@', '`', '|', '>']) {
        return Err(format!("not read here: {t}"));
    }
    Ok(match t {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "~" => Value::Null,
        _ if !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_digit())
            && (t == "0" || !t.starts_with('0')) =>
        {
            Value::from(t.parse::<u64>().map_err(|e| e.to_string())?)
        }
        _ => Value::String(t.to_owned()),
    })
}

impl Parser<'_> {
    fn fail(&self, why: &str) -> ! {
        panic!("deploy/{}: line {}: {why}", self.name, self.pos + 1)
    }

    fn skip_blank(&mut self) {
        while let Some(line) = self.lines.get(self.pos) {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// The next significant line of the document: its indentation and its content (no comment).
    fn peek(&mut self) -> Option<(usize, String)> {
        self.skip_blank();
        let line = self.lines.get(self.pos)?;
        if line.trim_end() == "---" {
            return None;
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        if line[indent..].starts_with('\t') {
            self.fail("a tab in the indentation");
        }
        Some((indent, strip_comment(&line[indent..]).trim_end().to_owned()))
    }

    /// The block node whose first line is indented `min` or more (null when there is none).
    fn node(&mut self, min: usize) -> Value {
        match self.peek() {
            Some((indent, content)) if indent >= min => {
                if is_item(&content) {
                    self.sequence(indent)
                } else {
                    self.mapping(indent)
                }
            }
            _ => Value::Null,
        }
    }

    fn mapping(&mut self, indent: usize) -> Value {
        let mut map = Map::new();
        let mut explicit = HashSet::new();
        while let Some((i, content)) = self.peek() {
            if i < indent {
                break;
            }
            if i > indent || is_item(&content) {
                self.fail("unexpected indentation or list item in a mapping");
            }
            let Some((key, rest)) = split_key(&content) else {
                self.fail("expected `key: value`");
            };
            let rest = rest.to_owned();
            self.pos += 1;
            let value = self.value(&rest, indent);
            if key == "<<" {
                let Value::Object(merged) = value else {
                    self.fail("`<<` merges a mapping");
                };
                for (k, v) in merged {
                    if !explicit.contains(&k) {
                        map.insert(k, v);
                    }
                }
            } else {
                if !explicit.insert(key.clone()) {
                    self.fail(&format!("the key {key} twice"));
                }
                map.insert(key, value);
            }
        }
        Value::Object(map)
    }

    fn sequence(&mut self, indent: usize) -> Value {
        let mut items = Vec::new();
        while let Some((i, content)) = self.peek() {
            if i < indent || (i == indent && !is_item(&content)) {
                break;
            }
            if i > indent {
                self.fail("unexpected indentation in a list");
            }
            let after = content[1..].trim_start();
            let column = indent + content.len() - after.len();
            if after.is_empty() {
                self.pos += 1;
                items.push(self.node(indent + 1));
            } else if split_key(after).is_some() || is_item(after) {
                // A mapping (or a list) starting on the item's line: read from the item text's column.
                let raw = self.lines[self.pos].clone();
                self.lines[self.pos] = format!("{}{}", " ".repeat(column), &raw[column..]);
                items.push(self.node(column));
            } else {
                let after = after.to_owned();
                self.pos += 1;
                items.push(self.inline(&after));
            }
        }
        Value::Array(items)
    }

    /// An alias or an inline scalar.
    fn inline(&self, text: &str) -> Value {
        if let Some(alias) = text.trim().strip_prefix('*') {
            return match self.anchors.get(alias) {
                Some(v) => v.clone(),
                None => self.fail(&format!("unknown alias *{alias}")),
            };
        }
        scalar(text).unwrap_or_else(|why| self.fail(&why))
    }

    /// The value of a `key:` at `indent`; `rest` follows the colon on its line.
    fn value(&mut self, rest: &str, indent: usize) -> Value {
        let rest = rest.trim();
        if let Some(anchored) = rest.strip_prefix('&') {
            let (name, after) = anchored.split_once(' ').unwrap_or((anchored, ""));
            let v = self.value(after, indent);
            self.anchors.insert(name.to_owned(), v.clone());
            return v;
        }
        if rest.is_empty() {
            return match self.peek() {
                Some((i, _)) if i > indent => self.node(i),
                Some((i, c)) if i == indent && is_item(&c) => self.sequence(i),
                _ => Value::Null,
            };
        }
        if rest.starts_with('|') {
            return self.block_scalar(rest, indent);
        }
        self.inline(rest)
    }

    /// A `|` block scalar (clip, `-` strip or `+` keep) below a key at `indent`.
    fn block_scalar(&mut self, header: &str, indent: usize) -> Value {
        let chomp = match header {
            "|" => ' ',
            "|-" => '-',
            "|+" => '+',
            _ => self.fail(&format!("block scalar header {header:?} not read here")),
        };
        let mut block_indent = None;
        let mut text = String::new();
        while let Some(raw) = self.lines.get(self.pos) {
            if raw.trim().is_empty() {
                text.push('\n');
                self.pos += 1;
                continue;
            }
            let i = raw.len() - raw.trim_start_matches(' ').len();
            let at = *block_indent.get_or_insert(i);
            if i <= indent || i < at {
                break;
            }
            text.push_str(&raw[at..]);
            text.push('\n');
            self.pos += 1;
        }
        let body = text.trim_end_matches('\n');
        Value::String(match chomp {
            '-' => body.to_owned(),
            '+' => text,
            _ if body.is_empty() => String::new(),
            _ => format!("{body}\n"),
        })
    }
}

#[test]
fn reads_what_deploy_uses_and_nothing_wrong() {
    let text = "# a comment\n\
                base: &base\n  a: 1\n  list: [\"p\", \"q\"]\n\
                merged:\n  <<: *base\n  a: 2 # explicit wins\n\
                seq:\n- name: n\n  v: \"quoted: yes # no comment\"\n- plain:colon\n- 'it''s'\n\
                nested:\n  items:\n    - x: 1\n      y: [1, 2]\n    - 0440\n\
                block: |\n  line one\n    indented # kept\n\n  last\n\
                empty: {}\n\
                ---\n\
                second: true\n";
    let docs = documents("test.yaml", text);
    assert_eq!(docs.len(), 2);
    let d = &docs[0];
    assert_eq!(d["base"], serde_json::json!({"a": 1, "list": ["p", "q"]}));
    assert_eq!(d["merged"], serde_json::json!({"a": 2, "list": ["p", "q"]}));
    assert_eq!(
        d["seq"],
        serde_json::json!([{"name": "n", "v": "quoted: yes # no comment"}, "plain:colon", "it's"])
    );
    assert_eq!(
        d["nested"]["items"],
        serde_json::json!([{"x": 1, "y": [1, 2]}, "0440"])
    );
    assert_eq!(d["block"], "line one\n  indented # kept\n\nlast\n");
    assert_eq!(d["empty"], serde_json::json!({}));
    assert_eq!(docs[1]["second"], true);
    for bad in [
        "a: >\n  folded\n",
        "a: 1\na: 2\n",
        "a:\n  - 1\n  b: 2\n",
        "a: *nowhere\n",
    ] {
        assert!(
            std::panic::catch_unwind(|| documents("bad.yaml", bad)).is_err(),
            "{bad:?} must not be read"
        );
    }
}
