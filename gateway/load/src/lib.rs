//! The load generator behind `mcpgw load --url URL`: it drives real MCP sessions, legacy (`initialize`,
//! `notifications/initialized`, the calls, `DELETE`) and modern (2026-07-28: `server/discover`, then
//! stateless calls with `_meta` and the mirrored headers), closed loop or open loop without coordinated
//! omission, checks every answer, counts outcomes by HTTP status, JSON-RPC code and `isError`, and reports
//! latency percentiles from HDR histograms as a table and as JSON.
//!
//! It must not depend on the gateway: it loads any MCP server over HTTP, the gateway being one target among
//! others, and reaches it only through the wire (`reqwest`, with the rustls set-up `handlers` gives every
//! client of the process). It must not load another machine unless `--allow-remote` says so, and a run
//! must not go on unbounded.
//!
//! A run: the target is checked (loopback only unless `--allow-remote`), probed once (`probe`: does it
//! answer, which tool, which resource), the sessions are set up (`session`), the load runs (`scheduler`)
//! on a tokio multi-thread runtime of `--threads` workers with a progress line (`progress`), the sessions
//! are ended, and the statistics (`stats`) become the [`Report`] (`report`). Every phase has its own
//! deadline and the whole run a hard one (set-up + duration + grace + tear-down), so it always ends.
//! `--self-test` (`selftest`) loads an in-process mock backend (the `mock` crate) to show the generator's
//! own ceiling.
//!
//! Files: `args` (command line, plan), `target` (loopback rule), `request` (request templates), `wire`
//! (HTTP and answer checks), `session` (era drivers), `ask` (a call whose server asks the client, each
//! question answered), `probe`, `scheduler` (closed/open loop), `stats` (histograms, outcomes), `report`
//! (table, JSON), `progress` (progress line, CPU, memory), `selftest`, `hdr` (histograms as text, `--hdr`),
//! `merge` (`mcpgw load merge`: several reports, exactly one), `source` (`--source-addrs`), `timeline` (a
//! point a second, `--stream`), `watch` (`--watch-pid`, the leak check), `html` (`--html`: the report as a
//! page of inline SVG charts), `headers` (`--header`, `--bearer-file`), `scenario` (`--scenario FILE.toml`: groups of sessions running scripts, steps
//! counted by name).

mod args;
mod ask;
#[cfg(test)]
#[path = "../../src/docs_blocks.rs"]
mod docs_blocks;
mod hdr;
mod headers;
pub mod html;
mod merge;
mod probe;
mod progress;
mod report;
mod request;
mod scenario;
mod scheduler;
mod selftest;
mod session;
mod source;
mod stats;
mod target;
mod timeline;
mod watch;
mod wire;

#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

pub use args::{Era, LoadArgs, LoadCommand, MergeArgs, Mix};
pub use ask::{AskEras, AskReport, EraAsks};
pub use report::{CpuUse, Merged, OpReport, Report, Window};
pub use scenario::ScenarioError;
pub use source::SourceAddrs;
pub use stats::{Latency, Outcomes};
pub use timeline::{Classes, Point, Timeline};
pub use watch::{ProcReport, ProcSample, WatchReport};

use args::{Mode, Plan};
use progress::{Cpu, Live, THREAD_NAME};
use scheduler::Schedule;
use session::{Ctx, Session};
use stats::{Op, Shards};

/// Sessions set up (or torn down) at once.
pub(crate) const SETUP_CONCURRENCY: usize = 256;

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A flag's value is out of range.
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    /// `--url` cannot be used.
    #[error("invalid --url {url:?}: {why}")]
    InvalidUrl { url: String, why: String },
    /// The target is not this machine and `--allow-remote` was not given.
    #[error(
        "refusing to load {url}: {host} is {addr}, not a loopback address; pass --allow-remote to load another machine"
    )]
    RemoteTarget {
        url: String,
        host: String,
        addr: IpAddr,
    },
    /// The target's host name does not resolve.
    #[error("cannot resolve {host}: {why}")]
    Resolve { host: String, why: String },
    /// The runtime could not start.
    #[error("cannot start the load generator's runtime: {0}")]
    Runtime(std::io::Error),
    /// The HTTP client could not be built.
    #[error("cannot build the http client: {0}")]
    Client(String),
    /// The target gave no answer at all to the probe (nothing listens, the connection broke, or the
    /// deadline passed): said as it is, since nothing can be told about its era.
    #[error("no answer from {url}: {why}")]
    NoAnswer { url: String, why: String },
    /// The target did not answer the probe as an MCP server of the chosen era.
    #[error("the target failed the probe: {0}")]
    Probe(String),
    /// `--self-test` could not start its mock backend.
    #[error("cannot start the in-process mock backend: {0}")]
    SelfTest(String),
    /// The run's task failed (a panic: a bug).
    #[error("the run failed: {0}")]
    Failed(String),
    /// The run outlived its hard deadline (a bug: every phase has its own).
    #[error("the run did not end within its hard deadline of {0:?}")]
    Deadline(Duration),
    /// `merge`: a report cannot be merged.
    #[error("cannot merge {report}: {why}")]
    Merge { report: String, why: String },
    /// `--fail-on-leak`: the leak check did not say ok.
    #[error("leak check failed: {0}")]
    Leak(String),
    /// `--scenario FILE` cannot be used.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// `--json FILE` could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Runs `mcpgw load`: the load, the table on standard output (standard error with `--json -`), and the
/// JSON report with `--json FILE`.
pub fn run(args: LoadArgs) -> Result<Report, LoadError> {
    if let Some(LoadCommand::Merge(merging)) = &args.command {
        return merge::run(merging);
    }
    let (url, self_test) = if args.self_test {
        (selftest::start_mock(selftest::mock_args())?, true)
    } else {
        let url = args
            .url
            .clone()
            .ok_or_else(|| LoadError::InvalidArgs("--url is required".into()))?;
        (url, false)
    };
    let report = execute(&args, &url, self_test)?;
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    match (args.quiet, json_to_stdout) {
        (true, _) => {}
        (false, true) => eprint!("{}", report.table()),
        (false, false) => print!("{}", report.table()),
    }
    if let Some(path) = &args.json {
        report.write_json(path)?;
    }
    if let Some(path) = &args.html {
        html::write(&report, path)?;
    }
    if args.fail_on_leak
        && let Some(why) = report.watch.as_ref().and_then(WatchReport::failure)
    {
        return Err(LoadError::Leak(why));
    }
    Ok(report)
}

/// The run itself, against `url`.
pub(crate) fn execute(args: &LoadArgs, url: &str, self_test: bool) -> Result<Report, LoadError> {
    let mut plan = Plan::from_args(args)?;
    let scenario = match &args.scenario {
        Some(path) => {
            let s = scenario::load(path)?;
            plan.sessions = s.sessions();
            Some(Arc::new(s))
        }
        None => None,
    };
    let target = target::check(url, args.allow_remote)?;
    if !args.allow_remote
        && let Some(ip) = plan
            .source_addrs
            .iter()
            .find(|ip| !target::is_loopback(**ip))
    {
        return Err(LoadError::InvalidArgs(format!(
            "--source-addrs {ip} is not a loopback address: a target on this machine is loaded from loopback addresses"
        )));
    }
    let rule = watch::Rule {
        slope_bytes_per_min: args.leak_slope,
        warm_up: args.warm_up,
    };
    let mut soak = timeline::Soak::open(
        watch::Watch::new(&args.watch_pid, rule)?,
        args.stream.as_deref(),
    )?;
    soak.head = timeline::head(url, &plan, &soak.watch.pids());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.threads)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)?;
    let wire = {
        let _in_runtime = runtime.enter();
        wire::Wire::new(
            &target,
            plan.sessions,
            plan.timeout,
            &plan.source_addrs,
            &plan.headers,
        )?
    };
    let limits = Limits::of(&plan);
    let url = url.to_owned();
    let handle = match scenario {
        Some(s) => runtime.spawn(scenario::drive(s, plan, wire, limits, url, self_test, soak)),
        None => runtime.spawn(drive(plan, wire, limits, url, self_test, soak)),
    };
    let result = runtime.block_on(async { tokio::time::timeout(limits.hard, handle).await });
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(Ok(report)) => report,
        Ok(Err(join)) => Err(LoadError::Failed(join.to_string())),
        Err(_) => Err(LoadError::Deadline(limits.hard)),
    }
}

/// The deadline of each phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) probe: Duration,
    pub(crate) setup: Duration,
    /// After the duration: time for the requests in flight (a legacy call may set its session up first).
    pub(crate) grace: Duration,
    pub(crate) teardown: Duration,
    pub(crate) hard: Duration,
}

impl Limits {
    fn of(plan: &Plan) -> Limits {
        let t = plan.timeout;
        let probe = t * 4 + Duration::from_secs(5);
        let setup = t * 2 + Duration::from_secs(5) + Duration::from_millis(plan.sessions as u64);
        let grace = t * 2 + Duration::from_secs(1);
        let teardown = t * 2 + Duration::from_secs(5);
        // `--start-at`: the wait for the start, set-up included.
        let wait = plan
            .start_at
            .and_then(|at| at.duration_since(SystemTime::now()).ok())
            .unwrap_or_default();
        let hard =
            probe + setup + wait + plan.limit.duration + grace + teardown + Duration::from_secs(5);
        Limits {
            probe,
            setup,
            grace,
            teardown,
            hard,
        }
    }
}

async fn drive(
    plan: Plan,
    wire: wire::Wire,
    limits: Limits,
    url: String,
    self_test: bool,
    soak: timeline::Soak,
) -> Result<Report, LoadError> {
    let prepared = tokio::time::timeout(limits.probe, probe::prepare(&wire, &plan))
        .await
        .map_err(|_| LoadError::Probe(format!("no answer within {:?}", limits.probe)))??;
    let ctx = Arc::new(Ctx {
        wire,
        legacy: prepared.legacy,
        modern: prepared.modern,
        stats: Shards::new((plan.threads * 4).min(plan.sessions)),
        live: Live::default(),
    });
    // Before the sessions exist: what each costs includes itself.
    let before_setup = progress::resident();
    let sessions: Vec<Arc<Session>> = (0..plan.sessions)
        .map(|i| Arc::new(Session::new(i, plan.era.session_is_modern(i))))
        .collect();

    // Set-up: sessions that are not ready by the deadline are set up by their first request.
    let setup_start = Instant::now();
    let opening =
        futures_util::stream::iter(sessions.iter()).for_each_concurrent(SETUP_CONCURRENCY, |s| {
            let ctx = ctx.clone();
            async move {
                s.open(&ctx).await;
            }
        });
    let _ = tokio::time::timeout(limits.setup, opening).await;
    let setup_s = setup_start.elapsed().as_secs_f64();
    let after_setup = progress::resident();

    let late_ms = wait_for_start(&plan).await;

    // The load, cut off at the hard deadline.
    let hard = CancellationToken::new();
    let cutoff = {
        let hard = hard.clone();
        let after = plan.limit.duration + limits.grace;
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            hard.cancel();
        })
    };
    let done = CancellationToken::new();
    let start = Instant::now();
    let start_wall = SystemTime::now();
    let sampling = tokio::spawn(timeline::run(ctx.clone(), soak, start, done.clone()));
    let shown = (plan.progress && progress::wanted()).then(|| {
        let (ctx, done, limit) = (ctx.clone(), done.clone(), plan.limit);
        tokio::spawn(async move {
            progress::show(&ctx.live, start, limit.duration, limit.requests, done).await;
        })
    });
    let cpu_before = Cpu::now();
    let cycle: Arc<[Op]> = plan.mix.cycle().into();
    let ended = match plan.mode {
        Mode::Closed => {
            scheduler::closed(ctx.clone(), &sessions, cycle, plan.limit, hard.clone()).await
        }
        Mode::Open {
            rate,
            max_in_flight,
        } => {
            let schedule = Schedule {
                rate,
                limit: plan.limit,
                max_in_flight,
            };
            scheduler::open(ctx.clone(), &sessions, cycle, schedule, hard.clone()).await
        }
    };
    let duration_s = start.elapsed().as_secs_f64();
    let cpu = match (cpu_before, Cpu::now()) {
        (Some(a), Some(b)) => Some(b.since(a)),
        _ => None,
    };
    cutoff.abort();
    done.cancel();
    if let Some(p) = shown {
        let _ = p.await;
    }
    let sampled = sampling.await.ok();

    // Tear-down: legacy sessions end with DELETE.
    let closing =
        futures_util::stream::iter(sessions.iter()).for_each_concurrent(SETUP_CONCURRENCY, |s| {
            let ctx = ctx.clone();
            async move {
                s.close(&ctx).await;
            }
        });
    let _ = tokio::time::timeout(limits.teardown, closing).await;

    let stats = ctx.stats.merged();
    let measured = stats.measured().1.total();
    let stopped = if ended.deadline {
        "deadline"
    } else if plan.limit.requests.is_some_and(|n| measured >= n) {
        "requests"
    } else {
        "duration"
    };
    let context = report::Context {
        url,
        self_test,
        era: plan.era,
        rate: match plan.mode {
            Mode::Open { rate, .. } => Some(rate),
            Mode::Closed => None,
        },
        sessions: plan.sessions,
        mix: plan.mix.describe(),
        tool: prepared.tool,
        uri: prepared.uri,
        ask_tool: prepared.ask_tool,
        setup_s,
        duration_s,
        cpu: CpuUse::measured(cpu, duration_s, plan.threads),
        stopped,
        abandoned: ended.abandoned,
        resent: ctx.wire.resent(),
        window: Window::of(start_wall, duration_s, late_ms),
        memory: memory_use(before_setup, after_setup, plan.sessions),
        hdr: plan.hdr,
    };
    let mut report = Report::new(context, &stats);
    if let Some(s) = sampled {
        report.timeline = Some(s.timeline);
        report.watch = s.watch;
    }
    Ok(report)
}

/// `--start-at`: waits until then; how late the load starts (0 unless the set-up took longer).
pub(crate) async fn wait_for_start(plan: &Plan) -> u64 {
    match plan.start_at.map(|at| at.duration_since(SystemTime::now())) {
        Some(Ok(wait)) => {
            tokio::time::sleep(wait).await;
            0
        }
        Some(Err(late)) => u64::try_from(late.duration().as_millis()).unwrap_or(u64::MAX),
        None => 0,
    }
}

/// The generator's memory from its resident size before and after the set-up of `sessions`, and its peak
/// now.
pub(crate) fn memory_use(
    before_setup: Option<(u64, u64)>,
    after_setup: Option<(u64, u64)>,
    sessions: usize,
) -> Option<report::MemoryUse> {
    let ((before, _), (after, _), (_, peak)) = (before_setup?, after_setup?, progress::resident()?);
    let mib = |b: u64| report::round(b as f64 / f64::from(1 << 20), 1);
    Some(report::MemoryUse {
        before_setup_mib: mib(before),
        after_setup_mib: mib(after),
        peak_mib: mib(peak),
        per_session_kib: report::round(
            after.saturating_sub(before) as f64 / 1024.0 / sessions.max(1) as f64,
            2,
        ),
    })
}

/// `t` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
