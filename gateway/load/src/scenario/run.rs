//! A scenario run: the probe (each era's handshake; the tools called must be listed, their
//! `x-mcp-header` annotations kept), the sessions of every group set up, one task per session running its
//! group's script until its loops are done or the duration ends, the sessions ended, and the report: the
//! set-up and tear-down operations as in any run, the steps by group and name, and the headline numbers
//! over every step.
//!
//! It must not wait past the run's bounds: the duration cuts think times and held streams, the grace and
//! then the hard deadline abort what is still running.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Map;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::steps::{self, Annotations};
use super::tally::{Record, StepShards, StepStats};
use super::template::Fill;
use super::think::Rng;
use super::{Action, Group, Order, Scenario};
use crate::args::Plan;
use crate::ask::AskReport;
use crate::probe::{Lister, list, pick_tool};
use crate::progress::{Cpu, Live};
use crate::report::{self, CpuUse, OpReport, Report};
use crate::request::{Template, answering_capabilities, initialize_params, page_params};
use crate::session::{Ctx, EraCalls, Session, discover, legacy_handshake};
use crate::stats::{Latency, Op, Outcomes, Shards, new_histogram};
use crate::wire::Wire;
use crate::{Limits, LoadError, SETUP_CONCURRENCY};

/// Runs `scenario` against `url` (the plan gives the duration, the threads and the request deadline).
pub(crate) async fn drive(
    scenario: Arc<Scenario>,
    plan: Plan,
    wire: Wire,
    limits: Limits,
    url: String,
    self_test: bool,
    soak: crate::timeline::Soak,
) -> Result<Report, LoadError> {
    let uses_modern = scenario.groups.iter().any(|g| g.era.uses_modern());
    let uses_legacy = scenario.groups.iter().any(|g| g.era.uses_legacy());
    // Scenario sessions answer questions as a host does, so they say so.
    let initialize = Template::legacy(
        "initialize",
        initialize_params(plan.legacy_version, answering_capabilities()),
    );
    let discovery = Template::modern("server/discover", Map::new(), None, &[]);
    let annotations = tokio::time::timeout(
        limits.probe,
        probe(
            &wire,
            &scenario,
            &initialize,
            &discovery,
            uses_modern,
            uses_legacy,
        ),
    )
    .await
    .map_err(|_| LoadError::Probe(format!("no answer within {:?}", limits.probe)))??;
    let calls = |handshake: &Template, modern: bool| EraCalls {
        tools_list: if modern {
            Template::modern("tools/list", page_params(None), None, &[])
        } else {
            Template::legacy("tools/list", page_params(None))
        },
        tools_call: None,
        resources_read: None,
        ask: None,
        handshake: handshake.clone(),
    };
    let ctx = Arc::new(Ctx {
        wire,
        legacy: uses_legacy.then(|| calls(&initialize, false)),
        modern: uses_modern.then(|| calls(&discovery, true)),
        stats: Shards::new((plan.threads * 4).min(plan.sessions)),
        live: Live::default(),
    });
    // Sessions, numbered across groups; steps too.
    let before_setup = crate::progress::resident();
    let mut sessions = Vec::new();
    let mut first_step = Vec::new();
    let mut steps_total = 0;
    for (g, group) in scenario.groups.iter().enumerate() {
        first_step.push(steps_total);
        steps_total += group.steps.len();
        for i in 0..group.sessions {
            let s = Arc::new(Session::new(sessions.len(), group.era.session_is_modern(i)));
            sessions.push((g, i, s));
        }
    }
    let tally = Arc::new(StepShards::new(
        steps_total,
        (plan.threads * 4).min(plan.sessions),
    ));

    let setup_start = Instant::now();
    let opening = futures_util::stream::iter(sessions.iter()).for_each_concurrent(
        SETUP_CONCURRENCY,
        |(_, _, s)| {
            let ctx = ctx.clone();
            async move {
                s.open(&ctx).await;
            }
        },
    );
    let _ = tokio::time::timeout(limits.setup, opening).await;
    let setup_s = setup_start.elapsed().as_secs_f64();
    let after_setup = crate::progress::resident();
    let late_ms = crate::wait_for_start(&plan).await;

    let stop = CancellationToken::new();
    let start = Instant::now();
    let start_wall = std::time::SystemTime::now();
    let sampled = CancellationToken::new();
    let sampling = tokio::spawn(crate::timeline::run(
        ctx.clone(),
        soak,
        start,
        sampled.clone(),
    ));
    let cpu_before = Cpu::now();
    let annotations = Arc::new(annotations);
    let mut set = JoinSet::new();
    for (g, i, s) in &sessions {
        let script = Script {
            ctx: ctx.clone(),
            scenario: scenario.clone(),
            group: *g,
            index: *i,
            first_step: first_step[*g],
            tally: tally.clone(),
            annotations: annotations.clone(),
            stop: stop.clone(),
        };
        let s = s.clone();
        set.spawn(async move { script.run(&s).await });
    }
    let stopper = {
        let stop = stop.clone();
        let duration = plan.limit.duration;
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            stop.cancel();
        })
    };
    let all_done = async { while set.join_next().await.is_some() {} };
    let deadline = plan.limit.duration + limits.grace;
    let ended_by_deadline = tokio::time::timeout(deadline, all_done).await.is_err();
    let abandoned = set.len() as u64;
    set.abort_all();
    stopper.abort();
    let duration_s = start.elapsed().as_secs_f64();
    let cpu = match (cpu_before, Cpu::now()) {
        (Some(a), Some(b)) => Some(b.since(a)),
        _ => None,
    };
    sampled.cancel();
    let sampled = sampling.await.ok();

    let closing = futures_util::stream::iter(sessions.iter()).for_each_concurrent(
        SETUP_CONCURRENCY,
        |(_, _, s)| {
            let ctx = ctx.clone();
            async move {
                s.close(&ctx).await;
            }
        },
    );
    let _ = tokio::time::timeout(limits.teardown, closing).await;

    let context = report::Context {
        url,
        self_test,
        era: scenario.era(),
        rate: None,
        sessions: plan.sessions,
        mix: scenario.describe(),
        tool: None,
        uri: None,
        ask_tool: None,
        setup_s,
        duration_s,
        cpu: CpuUse::measured(cpu, duration_s, plan.threads),
        stopped: if ended_by_deadline {
            "deadline"
        } else if stop.is_cancelled() {
            "duration"
        } else {
            "loops"
        },
        abandoned: if ended_by_deadline { abandoned } else { 0 },
        resent: ctx.wire.resent(),
        window: report::Window::of(start_wall, duration_s, late_ms),
        memory: crate::memory_use(before_setup, after_setup, plan.sessions),
        hdr: plan.hdr,
    };
    let mut report = Report::new(context, &ctx.stats.merged());
    add_steps(
        &mut report,
        &scenario,
        &tally.merged(),
        &first_step,
        plan.hdr,
    );
    if let Some(s) = sampled {
        report.timeline = Some(s.timeline);
        report.watch = s.watch;
    }
    Ok(report)
}

/// Puts the steps into `report`: `steps` by group and name, and the headline numbers over them all.
fn add_steps(
    report: &mut Report,
    scenario: &Scenario,
    stats: &[StepStats],
    first_step: &[usize],
    hdr: bool,
) {
    let mut all = StepStats::default();
    for (g, group) in scenario.groups.iter().enumerate() {
        let mut by_name: BTreeMap<String, StepStats> = BTreeMap::new();
        for (i, step) in group.steps.iter().enumerate() {
            by_name
                .entry(step.name.clone())
                .or_default()
                .merge(&stats[first_step[g] + i]);
        }
        let mut steps = BTreeMap::new();
        for (name, s) in by_name {
            all.merge(&s);
            let asks = s.asked.then(|| AskReport::of(&s.asks));
            steps.insert(name, OpReport::of(&s.op, true, asks, hdr));
        }
        report.steps.insert(group.name.clone(), steps);
    }
    let outcomes: Outcomes = all.op.outcomes;
    let hist = all.op.latency.unwrap_or_else(new_histogram);
    report.requests = outcomes.total();
    report.errors = outcomes.errors();
    let throughput = outcomes.total() as f64 / report.duration_s.max(1e-9);
    report.throughput_rps = (throughput * 10.0).round() / 10.0;
    report.latency_ms = Latency::of(&hist);
    report.hdr = hdr.then(|| crate::hdr::encode(&hist));
    report.outcomes = outcomes;
}

/// What a session's task needs.
struct Script {
    ctx: Arc<Ctx>,
    scenario: Arc<Scenario>,
    group: usize,
    /// The session's index in its group.
    index: usize,
    /// The number of the group's first step across groups.
    first_step: usize,
    tally: Arc<StepShards>,
    annotations: Arc<Annotations>,
    stop: CancellationToken,
}

impl Script {
    async fn run(&self, session: &Session) {
        let group: &Group = &self.scenario.groups[self.group];
        let key = session_key(self.first_step, self.index);
        let mut rng = Rng::from_entropy(key as u64);
        let mut n = 0u64;
        let mut turn = 0u64;
        while !self.stop.is_cancelled() && group.loops.is_none_or(|l| turn < l) {
            turn += 1;
            match group.order {
                Order::Sequence => {
                    for (i, step) in group.steps.iter().enumerate() {
                        for _ in 0..step.repeat {
                            if self.stop.is_cancelled() {
                                return;
                            }
                            n += 1;
                            self.step(session, i, &mut rng, n).await;
                        }
                    }
                }
                Order::Weighted(sum) => {
                    let mut draw = rng.below(sum);
                    let i = group
                        .steps
                        .iter()
                        .position(|s| {
                            let hit = draw < u64::from(s.weight);
                            draw = draw.saturating_sub(u64::from(s.weight));
                            hit
                        })
                        .unwrap_or(0);
                    n += 1;
                    self.step(session, i, &mut rng, n).await;
                }
            }
        }
    }

    /// Step `i` of the group, recorded, then its think time (cut short by the run's end).
    async fn step(&self, session: &Session, i: usize, rng: &mut Rng, n: u64) {
        let step = &self.scenario.groups[self.group].steps[i];
        let mut fill = Fill {
            n,
            session: self.index,
            rng,
        };
        let live = &self.ctx.live;
        live.in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let done = steps::perform(
            &self.ctx,
            session,
            &step.action,
            &mut fill,
            &self.annotations,
            &self.stop,
        )
        .await;
        live.in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        live.completed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (status, outcome) = done.ended;
        if outcome.is_error() {
            live.errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // Also as the run's `scenario` operation: what the timeline samples, a second at a time.
        self.ctx.stats.record(
            session_key(self.first_step, self.index),
            Op::Step,
            status,
            &outcome,
            Some(done.latency),
        );
        self.tally.record(
            session_key(self.first_step, self.index),
            self.first_step + i,
            Record {
                status,
                outcome: &outcome,
                latency: Some(done.latency),
                call: done.tally.map(|t| (session.is_modern(), t)),
            },
        );
        if let Some(think) = step.think {
            let pause = think.draw(rng);
            tokio::select! {
                () = self.stop.cancelled() => {}
                () = tokio::time::sleep(pause) => {}
            }
        }
    }
}

/// The shard key of a session (spreads the groups' sessions over the shards).
fn session_key(first_step: usize, index: usize) -> usize {
    first_step.wrapping_mul(7919).wrapping_add(index)
}

/// Checks each era's handshake and that every tool called is listed; the annotations of those tools.
async fn probe(
    wire: &Wire,
    scenario: &Scenario,
    initialize: &Template,
    discovery: &Template,
    uses_modern: bool,
    uses_legacy: bool,
) -> Result<Annotations, LoadError> {
    let mut next = 0u64;
    let mut id = || {
        next += 1;
        next
    };
    let judged = |(status, _outcome, why): crate::session::HandshakeError| match status {
        None => LoadError::NoAnswer {
            url: wire.url().to_string(),
            why,
        },
        Some(_) => LoadError::Probe(why),
    };
    if uses_modern {
        discover(wire, discovery, id()).await.map_err(judged)?;
    }
    let legacy = if uses_legacy {
        Some(
            legacy_handshake(wire, initialize, id())
                .await
                .map_err(judged)?
                .0,
        )
    } else {
        None
    };
    let tools: Vec<&str> = scenario
        .groups
        .iter()
        .flat_map(|g| &g.steps)
        .filter_map(|s| match &s.action {
            Action::ToolsCall { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect();
    let mut annotations = HashMap::new();
    if !tools.is_empty() {
        let lister = match &legacy {
            Some(h) if !uses_modern => Lister::Legacy(h.clone()),
            _ => Lister::Modern,
        };
        let listed = list(wire, &lister, "tools/list", "tools", &mut id)
            .await
            .map_err(LoadError::Probe)?;
        for tool in tools {
            let (name, headers) = pick_tool(&listed, Some(tool))
                .map_err(|e| LoadError::Probe(format!("{}: {e}", scenario.source)))?;
            annotations.insert(name, headers);
        }
    }
    if let Some(h) = legacy.filter(|h| h.has_session()) {
        let mut headers = initialize.headers(None);
        h.apply(&mut headers);
        let _ = wire.delete(headers).await;
    }
    Ok(annotations)
}
