//! A scenario file read and checked: TOML into [`Scenario`], every mistake said once with its line (a
//! syntax error or an unknown field by the TOML parser's position; a wrong value by the line of its step's
//! `do` or its group's `name`), in lower case.
//!
//! It must not do I/O beyond reading the file, nor know the target: whether a tool exists is the
//! runner's probe's business.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;

use super::template::Templated;
use super::think::Think;
use super::{Action, Group, Order, Reference, Scenario, ScenarioError, Step};
use crate::args::{Era, parse_duration};

/// Most sessions of all groups together (as `--sessions`).
const MAX_SESSIONS: usize = 100_000;
/// Most times one step runs in a row.
const MAX_REPEAT: u32 = 1_000_000;
/// Largest sum of a weighted group's weights.
const MAX_WEIGHTS: u64 = 1_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    group: Vec<RawGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Spanned<String>,
    sessions: usize,
    era: Option<String>,
    loops: Option<u64>,
    order: Option<String>,
    #[serde(default)]
    step: Vec<RawStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(rename = "do")]
    action: Spanned<String>,
    name: Option<String>,
    tool: Option<String>,
    arguments: Option<Map<String, Value>>,
    uri: Option<String>,
    prompt: Option<String>,
    argument: Option<String>,
    value: Option<String>,
    hold: Option<String>,
    repeat: Option<u32>,
    weight: Option<u32>,
    think: Option<toml::Value>,
}

/// Reads and checks the scenario file at `path`.
pub(crate) fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Read {
        path: path.display().to_string(),
        error,
    })?;
    parse(&text, &path.display().to_string())
}

/// Checks the scenario `text` (`source` names it in errors).
pub(crate) fn parse(text: &str, source: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((0, 0), |s| position(text, s.start));
        ScenarioError::Syntax {
            file: source.to_owned(),
            line,
            column,
            why: first_lower(e.message().trim()),
        }
    })?;
    let invalid = |span: Range<usize>, why: String| ScenarioError::Invalid {
        file: source.to_owned(),
        line: position(text, span.start).0,
        why,
    };
    if raw.group.is_empty() {
        return Err(ScenarioError::Invalid {
            file: source.to_owned(),
            line: 1,
            why: "no [[group]]: a scenario needs at least one group of sessions".into(),
        });
    }
    let mut names = HashSet::new();
    let mut total = 0usize;
    let mut groups = Vec::new();
    for g in raw.group {
        let span = g.name.span();
        let name = g.name.into_inner();
        let at = |why: String| invalid(span.clone(), format!("group {name:?}: {why}"));
        if name.trim().is_empty() {
            return Err(invalid(span, "a group's name must not be empty".into()));
        }
        if !names.insert(name.clone()) {
            return Err(at("the name is used by another group".into()));
        }
        if g.sessions == 0 {
            return Err(at("sessions must be at least 1".into()));
        }
        total = total.saturating_add(g.sessions);
        if total > MAX_SESSIONS {
            return Err(at(format!(
                "the groups' sessions add up to more than {MAX_SESSIONS}"
            )));
        }
        let era = match g.era.as_deref().unwrap_or("modern") {
            "legacy" => Era::Legacy,
            "modern" => Era::Modern,
            "mixed" => Era::Mixed,
            other => return Err(at(format!("era {other:?} is not legacy, modern or mixed"))),
        };
        if g.loops == Some(0) {
            return Err(at(
                "loops must be at least 1 (leave it out to loop until the run ends)".into(),
            ));
        }
        let weighted = match g.order.as_deref().unwrap_or("sequence") {
            "sequence" => false,
            "weighted" => true,
            other => return Err(at(format!("order {other:?} is not sequence or weighted"))),
        };
        if g.step.is_empty() {
            return Err(at(
                "no [[group.step]]: a group needs at least one step".into()
            ));
        }
        let mut steps = Vec::new();
        for (i, s) in g.step.into_iter().enumerate() {
            let span = s.action.span();
            let what = format!("group {name:?}, step {} ({})", i + 1, s.action.get_ref());
            let step = step(s, weighted).map_err(|why| invalid(span, format!("{what}: {why}")))?;
            steps.push(step);
        }
        let order = if weighted {
            let sum: u64 = steps.iter().map(|s| u64::from(s.weight)).sum();
            if sum == 0 || sum > MAX_WEIGHTS {
                return Err(at(format!(
                    "the steps' weights add up to {sum}: it must be between 1 and {MAX_WEIGHTS}"
                )));
            }
            Order::Weighted(sum)
        } else {
            Order::Sequence
        };
        groups.push(Group {
            name,
            sessions: g.sessions,
            era,
            loops: g.loops,
            order,
            steps,
        });
    }
    Ok(Scenario {
        source: source.to_owned(),
        groups,
    })
}

/// One step checked.
fn step(s: RawStep, weighted: bool) -> Result<Step, String> {
    let kind = s.action.into_inner();
    let compile =
        |v: Value, field: &str| Templated::compile(&v).map_err(|e| format!("{field}: {e}"));
    // Which optional fields each action takes.
    let allowed: &[&str] = match kind.as_str() {
        "initialize" | "discover" | "tools/list" => &[],
        "tools/call" => &["tool", "arguments"],
        "resources/read" => &["uri"],
        "prompts/get" => &["prompt", "arguments"],
        "completion/complete" => &["prompt", "uri", "argument", "value"],
        "subscriptions/listen" => &["hold"],
        other => {
            return Err(format!(
                "unknown step {other:?} (known: initialize, discover, tools/list, tools/call, resources/read, prompts/get, completion/complete, subscriptions/listen)"
            ));
        }
    };
    let given = [
        ("tool", s.tool.is_some()),
        ("arguments", s.arguments.is_some()),
        ("uri", s.uri.is_some()),
        ("prompt", s.prompt.is_some()),
        ("argument", s.argument.is_some()),
        ("value", s.value.is_some()),
        ("hold", s.hold.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(f, g)| *g && !allowed.contains(f)) {
        return Err(format!("{field} is not a field of {kind}"));
    }
    let need = |v: Option<String>, field: &str| v.ok_or_else(|| format!("{kind} needs {field}"));
    let arguments =
        |a: Option<Map<String, Value>>| compile(Value::Object(a.unwrap_or_default()), "arguments");
    let action = match kind.as_str() {
        "initialize" | "discover" => Action::Handshake,
        "tools/list" => Action::ToolsList,
        "tools/call" => Action::ToolsCall {
            tool: need(s.tool, "tool")?,
            arguments: arguments(s.arguments)?,
        },
        "resources/read" => Action::ResourcesRead {
            uri: compile(Value::from(need(s.uri, "uri")?), "uri")?,
        },
        "prompts/get" => Action::PromptsGet {
            prompt: need(s.prompt, "prompt")?,
            arguments: arguments(s.arguments)?,
        },
        "completion/complete" => Action::Complete {
            reference: match (s.prompt, s.uri) {
                (Some(p), None) => Reference::Prompt(p),
                (None, Some(u)) => Reference::Resource(u),
                _ => return Err("completion/complete needs either prompt or uri".into()),
            },
            argument: need(s.argument, "argument")?,
            value: compile(Value::from(s.value.unwrap_or_default()), "value")?,
        },
        _ => Action::Listen {
            hold: s.hold.map(|h| duration(&h, "hold")).transpose()?,
        },
    };
    if s.weight.is_some() && !weighted {
        return Err("weight needs order = \"weighted\" in its group".into());
    }
    if s.repeat.is_some() && weighted {
        return Err("repeat is for order = \"sequence\" (a weighted group draws each turn)".into());
    }
    let repeat = s.repeat.unwrap_or(1);
    if repeat == 0 || repeat > MAX_REPEAT {
        return Err(format!("repeat must be between 1 and {MAX_REPEAT}"));
    }
    let think = s.think.as_ref().map(think).transpose()?;
    Ok(Step {
        name: s.name.unwrap_or_else(|| kind.clone()),
        action,
        repeat,
        weight: s.weight.unwrap_or(1),
        think,
    })
}

/// `think = "50ms"`, `think = { uniform = ["10ms", "90ms"] }` or `think = { exponential = "50ms" }`.
fn think(v: &toml::Value) -> Result<Think, String> {
    const FORMS: &str =
        "think is \"50ms\", { uniform = [\"10ms\", \"90ms\"] } or { exponential = \"50ms\" }";
    match v {
        toml::Value::String(s) => Ok(Think::Fixed(duration(s, "think")?)),
        toml::Value::Table(t) if t.len() == 1 => {
            let (kind, value) = t.iter().next().ok_or(FORMS)?;
            match (kind.as_str(), value) {
                ("fixed", toml::Value::String(s)) => Ok(Think::Fixed(duration(s, "think")?)),
                ("exponential", toml::Value::String(s)) => {
                    Ok(Think::Exponential(duration(s, "think")?))
                }
                ("uniform", toml::Value::Array(a)) => match a.as_slice() {
                    [toml::Value::String(lo), toml::Value::String(hi)] => {
                        let (lo, hi) = (duration(lo, "think")?, duration(hi, "think")?);
                        if lo > hi {
                            return Err(format!(
                                "think: uniform from {lo:?} to {hi:?}: the first is the larger"
                            ));
                        }
                        Ok(Think::Uniform(lo, hi))
                    }
                    _ => Err(FORMS.into()),
                },
                _ => Err(FORMS.into()),
            }
        }
        _ => Err(FORMS.into()),
    }
}

fn duration(s: &str, field: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| format!("{field}: {e}"))
}

/// Line and column (from 1) of byte `offset` of `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn first_lower(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
