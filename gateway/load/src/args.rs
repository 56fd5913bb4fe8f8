//! The command line of `mcpgw load` ([`LoadArgs`]) and what it becomes once checked ([`Plan`]): the value
//! parsers of durations (`10s`, `250ms`, `2m`), rates (`500/s`), the scenario mix and the tool arguments.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use protocol::Generation;
use serde_json::{Map, Value};

use super::LoadError;
use super::stats::Op;

/// With `--requests` and no `--duration`, a run still stops after this long.
pub(crate) const REQUESTS_CAP: Duration = Duration::from_secs(600);
/// The default length of a run (no `--duration`, no `--requests`).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Most sessions one run drives.
const MAX_SESSIONS: usize = 100_000;
/// Largest sum of `--mix` weights (the mix is a cycle of that length).
const MAX_MIX_TOTAL: u32 = 10_000;

/// Which protocol era the sessions speak.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// `initialize` + `notifications/initialized`, the calls with `Mcp-Session-Id`, `DELETE` at the end.
    Legacy,
    /// 2026-07-28: `server/discover`, then stateless calls with `_meta` and the routing headers.
    Modern,
    /// Even-numbered sessions legacy, odd-numbered modern.
    Mixed,
}

impl Era {
    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
            Era::Mixed => "mixed",
        }
    }

    /// Whether session `index` speaks the modern era.
    pub(crate) fn session_is_modern(self, index: usize) -> bool {
        match self {
            Era::Legacy => false,
            Era::Modern => true,
            Era::Mixed => index % 2 == 1,
        }
    }

    pub(crate) fn uses_modern(self) -> bool {
        self != Era::Legacy
    }

    pub(crate) fn uses_legacy(self) -> bool {
        self != Era::Modern
    }
}

/// The most `--start-at`/`--start-in` may wait.
const MAX_START_WAIT: Duration = Duration::from_secs(3600);

/// The command line of `mcpgw load` (or `mcpgw load merge …`).
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct LoadArgs {
    /// `merge`: several reports made one.
    #[command(subcommand)]
    pub command: Option<LoadCommand>,
    /// The MCP endpoint to load, e.g. http://127.0.0.1:7800/mcp (loopback only without --allow-remote).
    #[arg(long, required_unless_present = "self_test")]
    pub url: Option<String>,
    /// Protocol era of the sessions.
    #[arg(long, value_enum, default_value = "modern")]
    pub era: Era,
    /// Concurrent sessions (clients).
    #[arg(long, default_value_t = 16)]
    pub sessions: usize,
    /// How long to send requests: 10s, 500ms, 2m (default 10s; with --requests: at most 10m).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after exactly N requests (or when --duration ends, if first).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Open loop: send R requests per second on a fixed schedule (500, 500/s or 3000/m), latency measured
    /// from each request's scheduled time. Without it: closed loop (each session sends when answered).
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Open loop: most requests in flight at once; a request due beyond it is not sent and counts as
    /// `overflow` (default: 4 × sessions, at least 256).
    #[arg(long, requires = "rate")]
    pub max_in_flight: Option<usize>,
    /// Scenario mix as weights: tools/list=1,tools/call=8,resources/read=1,churn=0,ask=0.
    #[arg(long, default_value = "tools/call=1", value_parser = Mix::parse)]
    pub mix: Mix,
    /// Tool for tools/call (default: `echo` or `*__echo` if listed, else the first tool listed).
    #[arg(long)]
    pub tool: Option<String>,
    /// Arguments of tools/call, a JSON object (default {"text":"mcpgw load"}).
    #[arg(long, value_parser = parse_args_json)]
    pub args: Option<Map<String, Value>>,
    /// Tool for ask: a tools/call whose server asks the client (elicitation, sampling, roots) while it runs,
    /// each question answered (required when --mix has ask).
    #[arg(long, value_name = "NAME")]
    pub ask_tool: Option<String>,
    /// Arguments of the ask tool's call, a JSON object (default {}).
    #[arg(long, value_name = "JSON", value_parser = parse_args_json)]
    pub ask_args: Option<Map<String, Value>>,
    /// Resource for resources/read (default: the first one resources/list names).
    #[arg(long)]
    pub uri: Option<String>,
    /// Also write the report as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Put the latency histograms (HDR's V2 serialization, base64) in the JSON report, for `merge`.
    #[arg(long)]
    pub hdr: bool,
    /// Start the load at this time, in milliseconds since the Unix epoch (the sessions are set up before):
    /// generators on several hosts load the target over the same window.
    #[arg(long, value_name = "UNIX_MS", conflicts_with = "start_in")]
    pub start_at: Option<u64>,
    /// Start the load this long after the command starts (`10s`), the sessions set up before.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub start_in: Option<Duration>,
    /// Worker threads of the generator (default: the number of CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Deadline of one request.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Protocol version of legacy sessions.
    #[arg(long, default_value = "2025-11-25", value_parser = parse_legacy_version)]
    pub legacy_version: Generation,
    /// Allow a target that is not on this machine (127.0.0.0/8, ::1, localhost).
    #[arg(long)]
    pub allow_remote: bool,
    /// Measure the generator's own ceiling: load an in-process mock backend (zero latency) instead of --url.
    #[arg(long, conflicts_with = "url")]
    pub self_test: bool,
    /// No progress line on standard error (there is none anyway when it is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Connect from these local addresses, round robin (`127.0.0.1-127.0.0.32`, `127.0.1.0/24`, a list
    /// with commas): each has ~28,000 ephemeral ports towards one target, and sessions holding a stream need
    /// a connection each.
    #[arg(long, value_name = "ADDRS", value_parser = crate::source::parse)]
    pub source_addrs: Option<crate::source::SourceAddrs>,
    /// A header every request carries, `'NAME: VALUE'` (repeatable): a target's credential, a tenant.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = crate::headers::parse)]
    pub headers: Vec<crate::headers::ExtraHeader>,
    /// Send `Authorization: Bearer` and this file's first line (a key mounted from a secret).
    #[arg(long, value_name = "FILE")]
    pub bearer_file: Option<PathBuf>,
    /// No table and no progress line: with `--json -`, standard output is the JSON report and nothing else.
    #[arg(long)]
    pub quiet: bool,
    /// Soak: read this process's RSS, CPU, open files and threads every second (repeatable; Linux /proc).
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pid: Vec<u32>,
    /// Leak check: the most a watched process's RSS may grow after the warm-up (least-squares slope).
    #[arg(long, value_name = "SIZE/PERIOD", default_value = "1MiB/min", value_parser = crate::watch::parse_slope)]
    pub leak_slope: f64,
    /// Leak check: samples of the load's first DURATION are not judged.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub warm_up: Duration,
    /// Exit non-zero unless the leak check says ok (a leak, or too few samples after the warm-up).
    #[arg(long, requires = "watch_pid")]
    pub fail_on_leak: bool,
    /// Write each second (requests, outcomes, percentiles, watched processes) to FILE as JSON lines, as it goes.
    #[arg(long, value_name = "FILE")]
    pub stream: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (charts as inline SVG) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Run the scripts of a scenario file (groups of sessions, each with its era and steps) instead of
    /// --mix; --duration bounds it.
    #[arg(long, value_name = "FILE.toml", conflicts_with_all = [
        "sessions", "era", "requests", "rate", "mix", "tool", "args", "ask_tool", "ask_args", "uri",
    ])]
    pub scenario: Option<PathBuf>,
}

/// A scenario mix: weights of the measured operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    weights: Vec<(Op, u32)>,
}

impl Mix {
    /// Parses `op=weight,…` (ops: tools/list, tools/call, resources/read, churn, ask); a bare op weighs 1.
    pub fn parse(s: &str) -> Result<Mix, String> {
        let mut weights: Vec<(Op, u32)> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = match part.split_once('=') {
                Some((n, w)) => {
                    let w = w
                        .trim()
                        .parse::<u32>()
                        .map_err(|_| format!("weight of {:?} is not a whole number", n.trim()))?;
                    (n.trim(), w)
                }
                None => (part, 1),
            };
            let op = Op::ALL
                .into_iter()
                .filter(|op| op.measured() && *op != Op::Step)
                .find(|op| op.name() == name)
                .ok_or_else(|| {
                    format!(
                        "unknown operation {name:?} (known: tools/list, tools/call, resources/read, churn, ask)"
                    )
                })?;
            if weights.iter().any(|(o, _)| *o == op) {
                return Err(format!("{name} is given twice"));
            }
            weights.push((op, weight));
        }
        let total: u64 = weights.iter().map(|(_, w)| u64::from(*w)).sum();
        if total == 0 {
            return Err("the mix needs at least one operation with a weight above 0".into());
        }
        if total > u64::from(MAX_MIX_TOTAL) {
            return Err(format!(
                "the weights add up to {total}; at most {MAX_MIX_TOTAL}"
            ));
        }
        weights.retain(|(_, w)| *w > 0);
        Ok(Mix { weights })
    }

    /// Whether `op` is part of the mix.
    pub(crate) fn has(&self, op: Op) -> bool {
        self.weights.iter().any(|(o, _)| *o == op)
    }

    /// The mix as a cycle of operations, spread evenly (smooth weighted round-robin): request `n` does
    /// `cycle[n % len]`, so any window of the cycle's length holds each op exactly its weight times.
    pub(crate) fn cycle(&self) -> Vec<Op> {
        let total: i64 = self.weights.iter().map(|(_, w)| i64::from(*w)).sum();
        let mut current = vec![0i64; self.weights.len()];
        let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for _ in 0..total {
            for (c, (_, w)) in current.iter_mut().zip(&self.weights) {
                *c += i64::from(*w);
            }
            let best = (0..current.len())
                .max_by_key(|&i| (current[i], std::cmp::Reverse(i)))
                .unwrap_or(0);
            current[best] -= total;
            out.push(self.weights[best].0);
        }
        out
    }

    /// `op=weight,…` as given (zero weights dropped).
    pub(crate) fn describe(&self) -> String {
        let parts: Vec<String> = self
            .weights
            .iter()
            .map(|(op, w)| format!("{}={w}", op.name()))
            .collect();
        parts.join(",")
    }
}

/// `10s`, `250ms`, `1.5s`, `2m`, `1h`, `500us`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?} (use us, ms, s, m or h)"
            ));
        }
    };
    if !seconds.is_finite() || seconds > 7.0 * 86_400.0 {
        return Err(format!("{s:?} is too long"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `500`, `500/s`, `3000/m`: requests per second.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (number, per) = match s.split_once('/') {
        Some((n, p)) => (n.trim(), p.trim()),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a rate (e.g. 500/s)"))?;
    let rate = match per {
        "s" | "sec" => value,
        "m" | "min" => value / 60.0,
        other => return Err(format!("unknown period {other:?} in {s:?} (use /s or /m)")),
    };
    if !(rate.is_finite() && rate > 0.0 && rate <= 10_000_000.0) {
        return Err(format!(
            "{s:?}: the rate must be above 0 and at most 10000000/s"
        ));
    }
    Ok(rate)
}

fn parse_args_json(s: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

fn parse_legacy_version(s: &str) -> Result<Generation, String> {
    match Generation::parse(s) {
        Ok(g) if !g.is_modern() => Ok(g),
        Ok(g) => Err(format!("{} is not a legacy version", g.as_str())),
        Err(_) => Err(format!(
            "unknown version {s:?} (2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25)"
        )),
    }
}

/// What `mcpgw load` does besides a run.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum LoadCommand {
    /// Merge the JSON reports of several runs made with --hdr (generators on several hosts, say) into one:
    /// histograms added, counts summed, throughput over the union of their windows.
    Merge(MergeArgs),
}

/// The command line of `mcpgw load merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The reports (`mcpgw load --hdr --json FILE`), one per generator.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Write the merged report as JSON to FILE (`-`: standard output, the table then on standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the merged report as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// When new requests stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limit {
    /// Sending stops after this long.
    pub(crate) duration: Duration,
    /// … or after this many requests.
    pub(crate) requests: Option<u64>,
}

/// Closed or open loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    /// Each session sends its next request when the previous one is answered.
    Closed,
    /// Requests on a fixed schedule, `rate` per second, at most `max_in_flight` at once.
    Open { rate: f64, max_in_flight: usize },
}

/// The checked command line.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) era: Era,
    pub(crate) sessions: usize,
    pub(crate) limit: Limit,
    pub(crate) mode: Mode,
    pub(crate) mix: Mix,
    pub(crate) tool: Option<String>,
    pub(crate) args: Map<String, Value>,
    /// The tool of `ask` (given whenever the mix has it).
    pub(crate) ask_tool: Option<String>,
    pub(crate) ask_args: Map<String, Value>,
    pub(crate) uri: Option<String>,
    pub(crate) threads: usize,
    pub(crate) timeout: Duration,
    pub(crate) legacy_version: Generation,
    pub(crate) progress: bool,
    /// `--start-at`/`--start-in`: when the load starts (its sessions set up before).
    pub(crate) start_at: Option<SystemTime>,
    /// `--hdr`.
    pub(crate) hdr: bool,
    /// `--source-addrs` (empty: the system's choice).
    pub(crate) source_addrs: Vec<std::net::IpAddr>,
    /// `--header`, `--bearer-file`.
    pub(crate) headers: reqwest::header::HeaderMap,
}

impl Plan {
    /// Checks the numbers of `args` (the target is checked apart, see `target`).
    pub(crate) fn from_args(args: &LoadArgs) -> Result<Plan, LoadError> {
        let bad = |msg: String| Err(LoadError::InvalidArgs(msg));
        if args.sessions == 0 || args.sessions > MAX_SESSIONS {
            return bad(format!("--sessions must be between 1 and {MAX_SESSIONS}"));
        }
        if args.requests == Some(0) {
            return bad("--requests must be at least 1".into());
        }
        if args.duration.is_some_and(|d| d.is_zero()) {
            return bad("--duration must be above 0".into());
        }
        if args.timeout.is_zero() || args.timeout > Duration::from_secs(600) {
            return bad("--timeout must be above 0 and at most 10m".into());
        }
        let threads = match args.threads {
            Some(0) => return bad("--threads must be at least 1".into()),
            Some(n) if n > 1024 => return bad("--threads must be at most 1024".into()),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(2, |n| n.get()),
        };
        let duration = match (args.duration, args.requests) {
            (Some(d), _) => d,
            (None, Some(_)) => REQUESTS_CAP,
            (None, None) => DEFAULT_DURATION,
        };
        let mode = match args.rate {
            None => Mode::Closed,
            Some(rate) => {
                let max_in_flight = args
                    .max_in_flight
                    .unwrap_or_else(|| (args.sessions.saturating_mul(4)).max(256));
                if max_in_flight == 0 {
                    return bad("--max-in-flight must be at least 1".into());
                }
                Mode::Open {
                    rate,
                    max_in_flight,
                }
            }
        };
        if args.mix.has(Op::Ask) && args.ask_tool.is_none() {
            return bad("--mix has ask: give --ask-tool NAME, a tool that asks the client".into());
        }
        let start_at = match (args.start_at, args.start_in) {
            (Some(ms), _) => Some(UNIX_EPOCH + Duration::from_millis(ms)),
            (None, Some(d)) => Some(SystemTime::now() + d),
            (None, None) => None,
        };
        if let Some(at) = start_at
            && at
                .duration_since(SystemTime::now())
                .is_ok_and(|wait| wait > MAX_START_WAIT)
        {
            return bad("--start-at/--start-in must be at most an hour away".into());
        }
        let headers = crate::headers::of(&args.headers, args.bearer_file.as_deref())
            .map_err(LoadError::InvalidArgs)?;
        let mut tool_args = args.args.clone().unwrap_or_default();
        if args.args.is_none() {
            tool_args.insert("text".into(), Value::from("mcpgw load"));
        }
        Ok(Plan {
            era: args.era,
            sessions: args.sessions,
            limit: Limit {
                duration,
                requests: args.requests,
            },
            mode,
            mix: args.mix.clone(),
            tool: args.tool.clone(),
            args: tool_args,
            ask_tool: args.ask_tool.clone(),
            ask_args: args.ask_args.clone().unwrap_or_default(),
            uri: args.uri.clone(),
            threads,
            timeout: args.timeout,
            legacy_version: args.legacy_version,
            progress: !args.no_progress && !args.quiet,
            start_at,
            hdr: args.hdr,
            source_addrs: args.source_addrs.clone().map(|s| s.0).unwrap_or_default(),
            headers,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
