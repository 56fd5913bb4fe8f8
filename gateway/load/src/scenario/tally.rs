//! What each step of each group recorded: outcomes and an HDR latency histogram (as an operation's), and
//! what its calls' questions came to (as the `ask` operation's). Sharded like the run's statistics (a
//! `std::sync::Mutex` per shard, held for an increment, never across an `.await`).
//!
//! It must not name anything: the runner turns the records into the report's `steps` by group and name.

use std::sync::Mutex;
use std::time::Duration;

use crate::ask::{AskEras, Tally};
use crate::stats::{OpStats, Outcome, Outcomes, new_histogram};

/// One step's records.
#[derive(Debug, Clone)]
pub(crate) struct StepStats {
    pub(crate) op: OpStats,
    pub(crate) asks: AskEras,
    /// Whether any of its calls was asked a question (or refused, or went another round).
    pub(crate) asked: bool,
}

impl Default for StepStats {
    fn default() -> StepStats {
        StepStats {
            op: OpStats {
                latency: None,
                outcomes: Outcomes::default(),
            },
            asks: AskEras::default(),
            asked: false,
        }
    }
}

impl StepStats {
    pub(crate) fn merge(&mut self, o: &StepStats) {
        self.op.outcomes.merge(&o.op.outcomes);
        self.asks.merge(&o.asks);
        self.asked |= o.asked;
        if let Some(h) = &o.op.latency {
            let into = self.op.latency.get_or_insert_with(new_histogram);
            // Same bounds on both sides: adding cannot fail.
            let _ = into.add(h);
        }
    }
}

/// One record: which step, how it ended, and its questions when it was a call.
#[derive(Debug)]
pub(crate) struct Record<'a> {
    pub(crate) status: Option<u16>,
    pub(crate) outcome: &'a Outcome,
    pub(crate) latency: Option<Duration>,
    /// A `tools/call`: the session's era and what its questions came to.
    pub(crate) call: Option<(bool, Tally)>,
}

/// The records of every step (`steps` of them, numbered across groups), in shards.
#[derive(Debug)]
pub(crate) struct StepShards {
    steps: usize,
    shards: Vec<Mutex<Vec<StepStats>>>,
}

impl StepShards {
    pub(crate) fn new(steps: usize, shards: usize) -> StepShards {
        StepShards {
            steps,
            shards: (0..shards.max(1))
                .map(|_| Mutex::new(vec![StepStats::default(); steps]))
                .collect(),
        }
    }

    /// Records step `step` of session `key`.
    pub(crate) fn record(&self, key: usize, step: usize, r: Record<'_>) {
        let shard = &self.shards[key % self.shards.len()];
        let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut s[step];
        s.op.outcomes.add(r.status, r.outcome);
        if let Some(d) = r.latency {
            let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            s.op.latency
                .get_or_insert_with(new_histogram)
                .saturating_record(us);
        }
        if let Some((modern, tally)) = r.call {
            s.asks.add(modern, &tally, *r.outcome == Outcome::Ok);
            s.asked |= tally != Tally::default();
        }
    }

    /// Every step's records, the shards added up.
    pub(crate) fn merged(&self) -> Vec<StepStats> {
        let mut all = vec![StepStats::default(); self.steps];
        for shard in &self.shards {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            for (a, b) in all.iter_mut().zip(s.iter()) {
                a.merge(b);
            }
        }
        all
    }
}
