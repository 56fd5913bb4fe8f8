//! Per-tool series (`[telemetry] per_tool_metrics = true`): calls and durations by backend and tool. The
//! tools are those of the catalog (the caller passes the name the catalog routed to), and at most
//! [`MAX_TOOL_SERIES`] of them get series of their own; the rest count as `tool="other"`.
//!
//! A tool's series is found through a per-thread cache: a thread's first call of a tool takes the shared
//! map's lock once, its later calls none. It must not hold the lock while recording.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::histogram::Histogram;
use super::labels::{BACKEND_OUTCOMES, BackendOutcome};

/// How many (backend, tool) series at most; tools past it count as `other`.
pub const MAX_TOOL_SERIES: usize = 10_000;

/// One tool's calls.
#[derive(Debug, Default)]
pub(super) struct ToolStats {
    pub(super) requests: [AtomicU64; BACKEND_OUTCOMES],
    pub(super) duration: Histogram,
}

impl ToolStats {
    fn record(&self, outcome: BackendOutcome, took: Duration) {
        self.requests[outcome.index()].fetch_add(1, Ordering::Relaxed);
        self.duration.observe(took);
    }
}

type ByTool = HashMap<Box<str>, Arc<ToolStats>>;

/// Every tool's series of one gateway.
#[derive(Debug)]
pub(super) struct ToolSeries {
    /// Which gateway's series a thread's cache entry belongs to (tests run several in one thread).
    id: u64,
    /// Per backend (by index): its tools' series.
    known: Mutex<Vec<ByTool>>,
    /// Per backend: the tools past [`MAX_TOOL_SERIES`].
    other: Box<[Arc<ToolStats>]>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's handles: (series id, backend index) → tool → its stats.
    static CACHE: RefCell<HashMap<(u64, usize), ByTool>> = RefCell::new(HashMap::new());
}

impl ToolSeries {
    pub(super) fn new(backends: usize) -> ToolSeries {
        ToolSeries {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            known: Mutex::new((0..backends).map(|_| ByTool::new()).collect()),
            other: (0..backends).map(|_| Arc::default()).collect(),
        }
    }

    pub(super) fn record(
        &self,
        backend: usize,
        tool: &str,
        outcome: BackendOutcome,
        took: Duration,
    ) {
        let cached = CACHE.with(|c| {
            c.borrow()
                .get(&(self.id, backend))
                .and_then(|t| t.get(tool).cloned())
        });
        let stats = match cached {
            Some(stats) => stats,
            None => {
                let stats = self.find(backend, tool);
                CACHE.with(|c| {
                    c.borrow_mut()
                        .entry((self.id, backend))
                        .or_default()
                        .insert(tool.into(), Arc::clone(&stats));
                });
                stats
            }
        };
        stats.record(outcome, took);
    }

    /// The shared series of a tool (made on its first call anywhere), or `other` past the bound.
    fn find(&self, backend: usize, tool: &str) -> Arc<ToolStats> {
        let Ok(mut known) = self.known.lock() else {
            return Arc::clone(&self.other[backend]);
        };
        if let Some(stats) = known[backend].get(tool) {
            return Arc::clone(stats);
        }
        let total: usize = known.iter().map(HashMap::len).sum();
        if total >= MAX_TOOL_SERIES {
            return Arc::clone(&self.other[backend]);
        }
        let stats = Arc::<ToolStats>::default();
        known[backend].insert(tool.into(), Arc::clone(&stats));
        stats
    }

    /// Every series, by backend index and tool (`other` last), for the scrape.
    pub(super) fn snapshot(&self) -> Vec<(usize, String, Arc<ToolStats>)> {
        let mut out = Vec::new();
        if let Ok(known) = self.known.lock() {
            for (backend, tools) in known.iter().enumerate() {
                let mut names: Vec<_> = tools.iter().collect();
                names.sort_by(|a, b| a.0.cmp(b.0));
                out.extend(
                    names
                        .into_iter()
                        .map(|(t, s)| (backend, t.to_string(), Arc::clone(s))),
                );
            }
        }
        for (backend, stats) in self.other.iter().enumerate() {
            if !stats.duration.is_empty() {
                out.push((backend, "other".to_owned(), Arc::clone(stats)));
            }
        }
        out
    }
}
