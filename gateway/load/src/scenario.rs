//! `mcpgw load --scenario FILE.toml`: sessions that run a script, as real agents do, instead of the
//! `--mix` cycle. A file holds groups (`[[group]]`: a name, a session count, an era, how many times the
//! script runs, in sequence or drawn by weight), each with its steps (`[[group.step]]`): the handshake
//! again (`initialize`/`discover`), `tools/list`, `tools/call` with templated arguments (the server's
//! questions, elicitation and sampling, answered as the `ask` operation answers them), `resources/read`,
//! `prompts/get`, `completion/complete` and `subscriptions/listen` held open (legacy: the session's GET
//! stream; 2026-07-28: the listen request's stream, acknowledged), each followed by a think time drawn
//! from a distribution. Every step is checked as every request is (`wire::classify`) and counted by its
//! group and its own name: the report's `steps` (group → step name → the same figures as an operation).
//!
//! It must not outlive the run: every request has the request deadline, think times and held streams end
//! when the duration does, and the run's hard deadline still stands. It must not answer more than the
//! `ask` module answers (it reuses it), nor change how `--mix` runs.
//!
//! Files: `parse` (the file, checked, errors with their line), `template` (placeholders in arguments),
//! `think` (think-time distributions, the sessions' random generator), `run` (probe, sessions, scripts,
//! report), `steps` (one step on the wire), `tally` (per-step statistics).

mod parse;
mod run;
mod steps;
mod tally;
mod template;
mod think;

#[cfg(test)]
mod tests;

use std::time::Duration;

pub(crate) use parse::load;
pub(crate) use run::drive;

use super::args::Era;
use template::Templated;
use think::Think;

/// A scenario file that cannot be used: said with its line, in lower case.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file cannot be read.
    #[error("cannot read scenario {path}: {error}")]
    Read { path: String, error: std::io::Error },
    /// Not TOML, or a field unknown or of the wrong type.
    #[error("scenario {file}, line {line}, column {column}: {why}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        why: String,
    },
    /// A value that cannot be used.
    #[error("scenario {file}, line {line}: {why}")]
    Invalid {
        file: String,
        line: usize,
        why: String,
    },
}

/// A checked scenario.
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    /// The file it came from.
    pub(crate) source: String,
    pub(crate) groups: Vec<Group>,
}

impl Scenario {
    /// Sessions of all groups.
    pub(crate) fn sessions(&self) -> usize {
        self.groups.iter().map(|g| g.sessions).sum()
    }

    /// The era of all sessions: the groups' own when they agree, else mixed.
    pub(crate) fn era(&self) -> Era {
        let first = self.groups.first().map_or(Era::Modern, |g| g.era);
        if self.groups.iter().all(|g| g.era == first) {
            first
        } else {
            Era::Mixed
        }
    }

    /// `FILE: name N×era, …`, for the report's `mix`.
    pub(crate) fn describe(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| format!("{} {}×{}", g.name, g.sessions, g.era.as_str()))
            .collect();
        format!("scenario {}: {}", self.source, groups.join(", "))
    }
}

/// Sessions running one script.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) name: String,
    pub(crate) sessions: usize,
    pub(crate) era: Era,
    /// Times the script runs (a weighted group: turns); `None`, until the run ends.
    pub(crate) loops: Option<u64>,
    pub(crate) order: Order,
    pub(crate) steps: Vec<Step>,
}

/// How a group's script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Every step in order, each `repeat` times.
    Sequence,
    /// One step per turn, drawn by weight; the weights' sum.
    Weighted(u64),
}

/// One step of a script.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// What the report counts it as (default: its action's name).
    pub(crate) name: String,
    pub(crate) action: Action,
    /// Times in a row (sequence).
    pub(crate) repeat: u32,
    /// Weight (weighted order).
    pub(crate) weight: u32,
    /// Pause after it.
    pub(crate) think: Option<Think>,
}

/// What a step sends.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Legacy: a new session replacing the current one (deleted); 2026-07-28: `server/discover` again.
    Handshake,
    ToolsList,
    ToolsCall {
        tool: String,
        arguments: Templated,
    },
    ResourcesRead {
        uri: Templated,
    },
    PromptsGet {
        prompt: String,
        arguments: Templated,
    },
    Complete {
        reference: Reference,
        argument: String,
        value: Templated,
    },
    /// Held until `hold` has passed or the run's duration ends.
    Listen {
        hold: Option<Duration>,
    },
}

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reference {
    Prompt(String),
    Resource(String),
}
