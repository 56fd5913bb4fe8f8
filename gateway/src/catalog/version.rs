//! The snapshot version: a 64-bit FNV-1a hash over a canonical encoding of the sorted content.
//!
//! What is hashed, in this order: for each list (tools, prompts, resources, templates) a tag and its length,
//! then for each entry in list order its backend, its key (exposed name, `uri` or `uriTemplate`), the original
//! name for tools and prompts, and the JSON object as listed. JSON values are encoded canonically (type tags,
//! length-prefixed strings, object keys sorted), so the hash depends neither on the order backends were added
//! in nor on the key order of a backend's objects, nor on serde_json's `preserve_order` feature. FNV-1a has no
//! per-process seed, so the version is stable within a process and across processes and replicas. Backends
//! marked missing are not hashed: the version describes what is listed and routed.

use serde_json::Value;

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a 64 hasher over a canonical encoding.
#[derive(Debug, Clone, Copy)]
pub(super) struct ContentHasher(u64);

impl ContentHasher {
    pub(super) fn new() -> Self {
        ContentHasher(OFFSET_BASIS)
    }

    pub(super) fn finish(self) -> u64 {
        self.0
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }

    /// A tag byte (separates kinds of things so encodings cannot run into each other).
    pub(super) fn tag(&mut self, tag: u8) {
        self.bytes(&[tag]);
    }

    /// A length or count.
    pub(super) fn count(&mut self, n: usize) {
        self.bytes(&(n as u64).to_le_bytes());
    }

    /// A length-prefixed string.
    pub(super) fn str(&mut self, s: &str) {
        self.count(s.len());
        self.bytes(s.as_bytes());
    }

    /// A JSON value, canonically. Iterative, so any nesting depth is fine.
    pub(super) fn json(&mut self, value: &Value) {
        let mut stack: Vec<Step<'_>> = vec![Step::Value(value)];
        while let Some(step) = stack.pop() {
            let value = match step {
                Step::Key(k) => {
                    self.str(k);
                    continue;
                }
                Step::Value(v) => v,
            };
            match value {
                Value::Null => self.tag(b'n'),
                Value::Bool(b) => self.tag(if *b { b't' } else { b'f' }),
                Value::Number(n) => {
                    self.tag(b'#');
                    self.str(&n.to_string());
                }
                Value::String(s) => {
                    self.tag(b's');
                    self.str(s);
                }
                Value::Array(items) => {
                    self.tag(b'[');
                    self.count(items.len());
                    stack.extend(items.iter().rev().map(Step::Value));
                }
                Value::Object(map) => {
                    self.tag(b'{');
                    self.count(map.len());
                    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    for (k, v) in entries.into_iter().rev() {
                        stack.push(Step::Value(v));
                        stack.push(Step::Key(k));
                    }
                }
            }
        }
    }
}

enum Step<'a> {
    Key(&'a str),
    Value(&'a Value),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hash(v: &Value) -> u64 {
        let mut h = ContentHasher::new();
        h.json(v);
        h.finish()
    }

    #[test]
    fn fnv1a_reference_value() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c.
        let mut h = ContentHasher::new();
        h.bytes(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn canonical_json_table() {
        // (a, b, equal hashes)
        let table = [
            (
                json!({"a": 1, "b": [true, null]}),
                json!({"b": [true, null], "a": 1}),
                true,
            ),
            (json!({"a": 1}), json!({"a": 2}), false),
            (json!(["ab", "c"]), json!(["a", "bc"]), false),
            (json!([[1], 2]), json!([[1, 2]]), false),
            (
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1}, "c": null}),
                false,
            ),
            (json!("1"), json!(1), false),
            (json!(null), json!(false), false),
        ];
        for (a, b, equal) in table {
            assert_eq!(hash(&a) == hash(&b), equal, "{a} vs {b}");
        }
    }
}
