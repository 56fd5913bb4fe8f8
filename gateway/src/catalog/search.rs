//! The tool search for huge catalogs (`[catalog] search`): instead of the whole catalog, a client is listed
//! the gateway's own two tools, [`FIND_TOOLS`] and [`CALL_TOOL`] ([`gateway_tools`]); `find_tools` ranks
//! the tools of the client's catalog view against a query with a [`ToolIndex`] and answers their full
//! definitions ([`found`]).
//!
//! The ranking is BM25 (k1 = 1.2, b = 0.75) over each tool's exposed name (weight 2), `title` and
//! `description` (1) and the property names of its `inputSchema` (½), with the terms of module `terms`.
//! It is written here: a catalog holds thousands of short documents, which a few hundred lines index and
//! rank in microseconds, where `tantivy` would bring a whole search engine (segments, a query parser,
//! dozens of crates) for no better ranking.
//!
//! Pure: no I/O, no async, no lock; the index is immutable once built and answers from shared references.
//! It must not route or authorize anything: the caller builds it over the view the principal may use, and
//! `call_tool` goes through the ordinary `tools/call` path.

mod terms;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use serde_json::{Value, json};

use super::ToolEntry;

/// The gateway's tool that searches the catalog.
pub const FIND_TOOLS: &str = "find_tools";
/// The gateway's tool that calls a tool found by [`FIND_TOOLS`].
pub const CALL_TOOL: &str = "call_tool";

/// Bytes of a query that are read; the rest is ignored (cut at a character boundary).
pub const MAX_QUERY_BYTES: usize = 1024;
/// Terms of a query that are looked up; the rest are ignored.
pub const MAX_QUERY_TERMS: usize = 64;
/// The most tools one `find_tools` answers (its `limit`'s maximum in its inputSchema).
pub const MAX_LIMIT: usize = 50;
/// How many tools `find_tools` answers without a `limit`.
pub const DEFAULT_LIMIT: usize = 10;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Field weights, in half occurrences (a term frequency is stored as a count of halves).
const NAME_WEIGHT: u16 = 4;
const TEXT_WEIGHT: u16 = 2;
const PROPERTY_WEIGHT: u16 = 1;
const HALVES: f32 = 2.0;

/// While building: one term's (tool, weighted frequency), tools ascending.
type Postings = Vec<(u32, u16)>;

/// The index over one catalog view's tools (positions into the slice it was built from).
pub struct ToolIndex {
    /// Sorted, without duplicates; a term's id is its place here.
    terms: Vec<Box<str>>,
    /// Term `t`'s postings are `docs[starts[t]..starts[t + 1]]` (ascending) with `tfs` in the same places.
    starts: Vec<u32>,
    docs: Vec<u32>,
    /// Weighted term frequencies, in halves.
    tfs: Vec<u16>,
    /// Per term.
    idf: Vec<f32>,
    /// Per tool: its weighted length in halves, and its backend (a place in `backends`).
    lengths: Vec<u32>,
    backend_of: Vec<u32>,
    avg_length: f32,
    /// Sorted, without duplicates.
    backends: Vec<Box<str>>,
}

/// One tool found: its position in the slice the index was built from, and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Its place in the tools the index was built from.
    pub position: usize,
    /// Its BM25 score (greater is better; only comparable within one query).
    pub score: f32,
}

impl fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.lengths.len())
            .field("backends", &self.backends.len())
            .field("terms", &self.terms.len())
            .field("postings", &self.docs.len())
            .finish()
    }
}

impl ToolIndex {
    /// Indexes `tools` (a snapshot's or a view's list).
    pub fn build(tools: &[ToolEntry]) -> ToolIndex {
        let mut backends: Vec<Box<str>> = tools.iter().map(|t| t.backend.as_str().into()).collect();
        backends.sort_unstable();
        backends.dedup();
        // term → (tool, weighted frequency), tools ascending.
        let mut postings: HashMap<Box<str>, Postings> = HashMap::new();
        let mut lengths = Vec::with_capacity(tools.len());
        let mut backend_of = Vec::with_capacity(tools.len());
        for (doc, entry) in tools.iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let mut length = 0u32;
            let mut add = |text: &str, weight: u16| {
                terms::terms(text, |term| {
                    length = length.saturating_add(u32::from(weight));
                    let list = match postings.get_mut(term) {
                        Some(list) => list,
                        None => postings.entry(term.into()).or_default(),
                    };
                    match list.last_mut() {
                        Some((d, tf)) if *d == doc => *tf = tf.saturating_add(weight),
                        _ => list.push((doc, weight)),
                    }
                    true
                });
            };
            add(&entry.exposed_name, NAME_WEIGHT);
            let tool = &entry.tool;
            let title = tool
                .get("title")
                .or_else(|| tool.pointer("/annotations/title"));
            if let Some(title) = title.and_then(Value::as_str) {
                add(title, TEXT_WEIGHT);
            }
            if let Some(description) = tool.get("description").and_then(Value::as_str) {
                add(description, TEXT_WEIGHT);
            }
            if let Some(properties) = tool
                .pointer("/inputSchema/properties")
                .and_then(Value::as_object)
            {
                for name in properties.keys() {
                    add(name, PROPERTY_WEIGHT);
                }
            }
            lengths.push(length);
            let backend = backends.binary_search_by(|b| (**b).cmp(entry.backend.as_str()));
            backend_of.push(backend.map_or(u32::MAX, |b| u32::try_from(b).unwrap_or(u32::MAX)));
        }

        let count = tools.len() as f32;
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let avg_length = if tools.is_empty() {
            1.0
        } else {
            (total as f32 / count).max(1.0)
        };
        let mut index = ToolIndex {
            terms: Vec::with_capacity(postings.len()),
            starts: Vec::with_capacity(postings.len() + 1),
            docs: Vec::new(),
            tfs: Vec::new(),
            idf: Vec::with_capacity(postings.len()),
            lengths,
            backend_of,
            avg_length,
            backends,
        };
        let postings_len: usize = postings.values().map(Vec::len).sum();
        index.docs.reserve_exact(postings_len);
        index.tfs.reserve_exact(postings_len);
        let mut postings: Vec<(Box<str>, Postings)> = postings.into_iter().collect();
        postings.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (term, list) in postings {
            index
                .starts
                .push(u32::try_from(index.docs.len()).unwrap_or(u32::MAX));
            let n = list.len() as f32;
            index.idf.push((1.0 + (count - n + 0.5) / (n + 0.5)).ln());
            index.terms.push(term);
            for (doc, tf) in list {
                index.docs.push(doc);
                index.tfs.push(tf);
            }
        }
        index
            .starts
            .push(u32::try_from(index.docs.len()).unwrap_or(u32::MAX));
        index
    }

    /// Best matches first (ties by position), at most `limit`; only tools of `backend` when given; empty
    /// query or no match -> empty. Reads the first [`MAX_QUERY_BYTES`] of `query` and its first
    /// [`MAX_QUERY_TERMS`] terms; allocates only the scores and the answer.
    pub fn find(&self, query: &str, backend: Option<&str>, limit: usize) -> Vec<Hit> {
        if limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let only = match backend {
            None => None,
            Some(b) => match self.backends.binary_search_by(|x| (**x).cmp(b)) {
                Ok(place) => Some(u32::try_from(place).unwrap_or(u32::MAX)),
                Err(_) => return Vec::new(),
            },
        };
        let mut ids = [0usize; MAX_QUERY_TERMS];
        let mut known = 0;
        let mut read = 0;
        terms::terms(truncated(query, MAX_QUERY_BYTES), |term| {
            read += 1;
            if let Ok(id) = self.terms.binary_search_by(|t| (**t).cmp(term)) {
                if !ids[..known].contains(&id) {
                    ids[known] = id;
                    known += 1;
                }
            }
            read < MAX_QUERY_TERMS
        });
        if known == 0 {
            return Vec::new();
        }

        let mut scores = vec![0f32; self.lengths.len()];
        for &term in &ids[..known] {
            let (Some(&start), Some(&end), Some(&idf)) = (
                self.starts.get(term),
                self.starts.get(term + 1),
                self.idf.get(term),
            ) else {
                continue;
            };
            let range = start as usize..end as usize;
            let (Some(docs), Some(tfs)) = (self.docs.get(range.clone()), self.tfs.get(range))
            else {
                continue;
            };
            for (&doc, &tf) in docs.iter().zip(tfs) {
                let doc = doc as usize;
                if only.is_some_and(|b| self.backend_of.get(doc) != Some(&b)) {
                    continue;
                }
                let (Some(score), Some(&length)) = (scores.get_mut(doc), self.lengths.get(doc))
                else {
                    continue;
                };
                let tf = f32::from(tf) / HALVES;
                let norm = K1 * (1.0 - B + B * length as f32 / self.avg_length);
                *score += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }

        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(position, &score)| Hit { position, score })
            .collect();
        let order = |a: &Hit, b: &Hit| {
            b.score
                .total_cmp(&a.score)
                .then(a.position.cmp(&b.position))
        };
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits
    }

    /// How many tools it indexes.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether it indexes no tool.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The bytes it holds on the heap (its vectors' capacities and the terms' text), for the record.
    #[cfg(any(test, feature = "internals"))]
    pub fn heap_bytes(&self) -> usize {
        fn text(v: &[Box<str>]) -> usize {
            v.iter().map(|t| t.len()).sum()
        }
        use std::mem::size_of;
        self.terms.capacity() * size_of::<Box<str>>()
            + text(&self.terms)
            + self.backends.capacity() * size_of::<Box<str>>()
            + text(&self.backends)
            + (self.starts.capacity()
                + self.docs.capacity()
                + self.lengths.capacity()
                + self.backend_of.capacity())
                * size_of::<u32>()
            + self.idf.capacity() * size_of::<f32>()
            + self.tfs.capacity() * size_of::<u16>()
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn truncated(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// The two Tool objects the gateway lists instead of the catalog: `find_tools` (read-only, with an
/// `outputSchema` matching [`found`]) and `call_tool`.
pub fn gateway_tools() -> [Value; 2] {
    [
        json!({
            "name": FIND_TOOLS,
            "title": "Find tools",
            "description": "Searches the tools available through this gateway (too many to list) by words of \
                their names and descriptions, best match first, and returns each match's full definition \
                (name, description, inputSchema). Then call one with call_tool, passing its exact name.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What the tool should do, in a few words (e.g. \"create issue\")."
                    },
                    "backend": {
                        "type": "string",
                        "description": "Only tools of this backend server (its configured name)."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "default": DEFAULT_LIMIT,
                        "description": "The most tools to return."
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "tools": {
                        "type": "array",
                        "description": "The matching tools, best first, as tools/list would list them.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "inputSchema": {"type": "object"}
                            },
                            "required": ["name", "inputSchema"]
                        }
                    }
                },
                "required": ["tools"]
            },
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            }
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": "Calls one of the tools available through this gateway. Call find_tools first and \
                pass the exact name it returned, with arguments matching that tool's inputSchema; the \
                result is that tool's result.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The tool's exact name, as find_tools returned it."
                    },
                    "arguments": {
                        "type": "object",
                        "description": "The tool's arguments, matching its inputSchema."
                    }
                },
                "required": ["name"],
                "additionalProperties": false
            }
        }),
    ]
}

/// The `find_tools` result: the found tools' full Tool objects as listed, in rank order, as
/// `structuredContent.tools` and, for clients that read only `content`, as compact JSON text.
pub fn found(tools: &[ToolEntry], hits: &[Hit]) -> Value {
    let list: Vec<Value> = hits
        .iter()
        .filter_map(|h| tools.get(h.position))
        .map(|e| e.tool.clone())
        .collect();
    let list = Value::Array(list);
    let text = list.to_string();
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"tools": list}
    })
}
