//! One 2026-07-28 `tools/call` of `m__echo` through the gateway's pipeline in-process
//! (`serve::in_process::InProcessGateway`: the routing actor's validation → the `[[middleware]]` chain →
//! the dispatch to the builtin mock, `builtin = ["mock-backend"]`, zero latency → the response's
//! shaping), with no socket, against two baselines measured in the same run: `baseline_mock_alone`, the
//! in-process mock answering the same request without the gateway — handed, by value, the bytes the
//! gateway hands it for this request (recorded once from the gateway; each iteration gets its own copy, as
//! the gateway writes a fresh `Vec` per call; see `mock_alone`) — the baseline of issue 34 (goal ≤ 5×);
//! and `baseline_from_slice`, `serde_json::from_slice` into a `Value` of the request bytes (the older
//! baseline, which leaves out the mock's own work). Two pipelines: with no middleware, and with the two
//! built-ins (`access_log`, then `allow_methods` allowing `tools/call`), so the chain's cost shows. Prints
//! the ratios at the end. Run: `cargo bench -p gateway --bench pipeline`.
//!
//! The rate limiter (`[[rate_limit]]`): its per-request check on the warm path (the request's bucket keys
//! built, a token taken from the worker's lease — `limit::WorkerLimits::check`), and the pipeline with a
//! limit per principal and tool that never refuses against the one with one middleware that only lets the
//! request pass (`allow_methods`: the chain's own cost with one entry), in the same run.
//!
//! The metrics (`GET /metrics`): what one forwarded call records (`metrics_recording_one_forwarded_call`:
//! the clocks, both outcomes classified, the backend call and the request counted, the bytes), against the
//! forwarded call itself (`pipeline_no_middleware`, which records the same), in the same run.
//!
//! `access_log` runs with logging not initialised (no tracing subscriber is installed), so its
//! `tracing::info!` line is built as far as the disabled-callsite check and dropped: the middleware's own
//! work (the summary, the timer, the future around the rest of the chain) is measured, not a log writer.
//!
//! One actix `System` is created once, and each gateway is started on it (its actors on the system's
//! arbiter, as on one HTTP worker). Each sample runs its iterations inside one `block_on`
//! (`iter_custom`): a request awaits the routing actor and the backend's worker actor in turn (shaping is
//! a function call), all on this thread, and the mock alone is awaited the same way; entering the runtime
//! per request, which production never does (its workers' runtimes are already running), is left out. The
//! global allocator is the `mcpgw` binary's (mimalloc), for the baselines too, behind atomic counters: after
//! the benches, allocations per call are counted and held to a budget (see `allocations`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use criterion::{Criterion, criterion_group};
use handlers::InProcessServer;
use mcpgw::config::Config;
use mcpgw::serve::in_process::{InProcessGateway, header_map};
use serde_json::Value;

#[path = "pipeline/mock_alone.rs"]
mod mock_alone;

#[path = "pipeline/allocations.rs"]
mod allocations;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":"call-tool-example-41","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}},"name":"m__echo","arguments":{"text":"Current weather in New York: temperature 22°C, partly cloudy, humidity 65%, wind 10 km/h NW."}}}"#;

const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
/// One middleware that lets the request pass after a set lookup: the chain's own cost with one entry, the
/// baseline the limiter is measured against.
const ONE_MIDDLEWARE: &str =
    "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"tools/call\"]\n";
const TWO_MIDDLEWARES: &str = "[[middleware]]\nkind = \"access_log\"\n\n[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"tools/call\"]\n";

const GROUP: &str = "inproc_tools_call";
/// A limit per principal (here: the client's address) and tool that never refuses: its lease is a
/// tenth of a second's worth of a billion tokens a second, capped at the burst.
const NEVER_REFUSING_LIMIT: &str =
    "[[rate_limit]]\nper = [\"principal\", \"tool\"]\nrate = 1e9\nburst = 1000000\n";

fn headers() -> HeaderMap {
    header_map(&[
        ("host", "127.0.0.1:7800"),
        ("user-agent", "bench/1"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("content-length", &REQUEST.len().to_string()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "m__echo"),
    ])
    .unwrap()
}

fn start(system: &actix_rt::SystemRunner, middlewares: &str) -> InProcessGateway {
    let config =
        Config::from_toml_str(&format!("{middlewares}\n{MOCK}"), Path::new("bench.toml")).unwrap();
    let gw = system.block_on(InProcessGateway::start(config)).unwrap();
    // The answer is the echo, complete: the bench measures a request that succeeds.
    let answer = system.block_on(gw.post(headers(), Bytes::from_static(REQUEST.as_bytes())));
    let v: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert!(v["result"]["content"][0]["text"].is_string(), "{v}");
    gw
}

/// `iters` requests through `gw`, inside one `block_on`.
fn run(
    system: &actix_rt::SystemRunner,
    gw: &InProcessGateway,
    headers: &HeaderMap,
    iters: u64,
) -> Duration {
    system.block_on(async {
        let started = Instant::now();
        for _ in 0..iters {
            // The HTTP front clones the request's headers into `Origin::Http` too.
            let answer = gw
                .post(
                    headers.clone(),
                    Bytes::from_static(black_box(REQUEST.as_bytes())),
                )
                .await;
            black_box(answer);
        }
        started.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let system = actix_rt::System::new();
    let bare = start(&system, "");
    let chained = start(&system, TWO_MIDDLEWARES);
    let limited = start(&system, NEVER_REFUSING_LIMIT);
    let one = start(&system, ONE_MIDDLEWARE);
    let headers = headers();

    let mut g = c.benchmark_group(GROUP);
    g.bench_function("baseline_from_slice", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(REQUEST.as_bytes())).unwrap())
    });
    // The mock alone, handed the bytes the gateway hands it for this request (recorded once, here).
    let handed = mock_alone::bytes_the_gateway_hands_the_mock(
        &system,
        Config::from_toml_str(MOCK, Path::new("bench.toml")).unwrap(),
        headers.clone(),
        REQUEST.as_bytes(),
    );
    println!(
        "the gateway hands the mock {} bytes for the client's {}: {}",
        handed.len(),
        REQUEST.len(),
        String::from_utf8_lossy(&handed)
    );
    let mock = mock_alone::the_builtin_mock();
    mock_alone::assert_it_answers(&system, &mock, &handed);
    g.bench_function("baseline_mock_alone", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    // `handle` takes the bytes by value, as the gateway hands them over.
                    let answer = mock.handle(black_box(&handed).clone()).await;
                    black_box(answer);
                }
                started.elapsed()
            })
        })
    });
    g.bench_function("mock_alone_clone_of_the_bytes", |b| {
        // The baseline's own copy of the bytes per iteration, to subtract.
        b.iter(|| black_box(black_box(&handed).clone()))
    });
    let floor = system.block_on(async { floor::Floor::start() });
    g.bench_function("floor_three_empty_actor_turns", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    let request = Bytes::from_static(black_box(REQUEST.as_bytes()));
                    black_box(floor.call(request).await);
                }
                started.elapsed()
            })
        })
    });
    g.bench_function("pipeline_no_middleware", |b| {
        b.iter_custom(|iters| run(&system, &bare, &headers, iters))
    });
    g.bench_function("pipeline_two_middlewares", |b| {
        b.iter_custom(|iters| run(&system, &chained, &headers, iters))
    });
    g.bench_function("pipeline_one_passing_middleware", |b| {
        b.iter_custom(|iters| run(&system, &one, &headers, iters))
    });
    g.bench_function("pipeline_rate_limit_never_refusing", |b| {
        b.iter_custom(|iters| run(&system, &limited, &headers, iters))
    });
    g.bench_function("limiter_check_warm", |b| {
        let config = Config::from_toml_str(NEVER_REFUSING_LIMIT, Path::new("bench.toml")).unwrap();
        let limits = mcpgw::limit::Limits::new(&config.rate_limits, None).unwrap();
        let worker = mcpgw::limit::WorkerLimits::new(limits.clone());
        let facts = mcpgw::limit::Facts {
            method: protocol::Method::ToolsCall,
            subject: mcpgw::limit::Subject::Address(std::net::IpAddr::V4(
                std::net::Ipv4Addr::LOCALHOST,
            )),
            backend: Some("m"),
            tool: Some("m__echo"),
        };
        b.iter(|| {
            let keys = limits.keys(black_box(&facts));
            match worker.check(&keys, limits.now()) {
                mcpgw::limit::Step::Admit => {}
                mcpgw::limit::Step::Ask(at) => {
                    // Once per lease (every million requests here): the process's bucket.
                    let mut keys = keys;
                    limits.name(&mut keys, &facts);
                    system.block_on(worker.admit(&keys, at)).unwrap();
                }
                mcpgw::limit::Step::Refuse(r) => panic!("refused: {r:?}"),
            }
        })
    });
    g.bench_function("metrics_recording_one_forwarded_call", |b| {
        // What one forwarded tools/call records, on the gateway's own metrics: its acceptance time, the
        // backend call's clock, both outcomes classified from the backend's result, the backend call and
        // the request counted (counters and histograms), the body bytes read and written.
        let metrics = bare.gateway().metrics.clone();
        let result = serde_json::value::RawValue::from_string(
            r#"{"content":[{"type":"text","text":"Current weather in New York: temperature 22°C, partly cloudy, humidity 65%, wind 10 km/h NW."}]}"#.to_owned(),
        )
        .unwrap();
        let method = protocol::Method::ToolsCall;
        b.iter(|| {
            let accepted = Instant::now();
            let began = Instant::now();
            let answer: Result<Box<serde_json::value::RawValue>, protocol::shape::Failure> =
                Ok(black_box(result.clone()));
            let took = began.elapsed();
            let backend = mcpgw::pipeline::response::backend_outcome(method, &answer);
            metrics.backend_call(black_box("m"), None, backend, took);
            let Ok(raw) = answer else {
                unreachable!("the answer is a result")
            };
            let outcome = mcpgw::pipeline::response::Outcome::Result(raw);
            let counted = outcome.metric(method);
            metrics.answered(mcpgw::metrics::Answered {
                method: method.into(),
                generation: Some(protocol::Generation::V2026_07_28),
                transport: mcpgw::metrics::Transport::StreamableHttp,
                outcome: counted,
                took: Some(accepted.elapsed()),
                in_backends: took,
            });
            metrics.received(mcpgw::metrics::Transport::StreamableHttp, REQUEST.len());
            metrics.sent(mcpgw::metrics::Transport::StreamableHttp, 300);
            black_box(outcome);
        })
    });
    g.bench_function("metrics_clone_of_the_result_alone", |b| {
        // The recording bench's own setup (the result cloned per iteration), to subtract.
        let result = serde_json::value::RawValue::from_string(
            r#"{"content":[{"type":"text","text":"Current weather in New York: temperature 22°C, partly cloudy, humidity 65%, wind 10 km/h NW."}]}"#.to_owned(),
        )
        .unwrap();
        b.iter(|| black_box(black_box(&result).clone()))
    });
    g.finish();
    bare.shutdown();
    chained.shutdown();
    limited.shutdown();
    one.shutdown();
}

/// The floor under the pipeline: the design card's three actor turns a forwarded call takes on one worker
/// (the routing actor's validation, the backend's handler actor, the response actor's shaping), each behind
/// a handle as the gateway's are — a permit taken without waiting, `send`, a deadline on the answer — with
/// no work in them at all: the request's bytes go in and a few bytes come out. What the actors cost before
/// any JSON is read.
mod floor {
    use std::sync::Arc;
    use std::time::Duration;

    use actix::prelude::*;
    use bytes::Bytes;
    use tokio::sync::Semaphore;

    #[derive(Message)]
    #[rtype(result = "Bytes")]
    pub struct Turn(pub Bytes);

    /// The routing and response actors: answered synchronously, as theirs are.
    pub struct Sync;
    impl Actor for Sync {
        type Context = Context<Self>;
    }
    impl Handler<Turn> for Sync {
        type Result = MessageResult<Turn>;
        fn handle(&mut self, msg: Turn, _: &mut Context<Self>) -> Self::Result {
            MessageResult(msg.0)
        }
    }

    /// The backend's handler actor: a `ResponseFuture`, as the worker actor's is.
    pub struct Detached;
    impl Actor for Detached {
        type Context = Context<Self>;
    }
    impl Handler<Turn> for Detached {
        type Result = ResponseFuture<Bytes>;
        fn handle(&mut self, msg: Turn, _: &mut Context<Self>) -> Self::Result {
            Box::pin(async move { msg.0 })
        }
    }

    /// The three handles.
    pub struct Floor {
        routing: Addr<Sync>,
        backend: Addr<Detached>,
        response: Addr<Sync>,
        in_flight: Arc<Semaphore>,
        backend_permits: Arc<Semaphore>,
    }

    impl Floor {
        pub fn start() -> Floor {
            Floor {
                routing: Sync.start(),
                backend: Detached.start(),
                response: Sync.start(),
                in_flight: Arc::new(Semaphore::new(1024)),
                backend_permits: Arc::new(Semaphore::new(64)),
            }
        }

        pub async fn call(&self, request: Bytes) -> Bytes {
            let deadline = Duration::from_secs(5);
            let _in_flight = self.in_flight.try_acquire().expect("a permit");
            let routed = tokio::time::timeout(deadline, self.routing.send(Turn(request)))
                .await
                .expect("in time")
                .expect("answered");
            let _permit = self.backend_permits.try_acquire().expect("a permit");
            let result = tokio::time::timeout(deadline, self.backend.send(Turn(routed)))
                .await
                .expect("in time")
                .expect("answered");
            tokio::time::timeout(deadline, self.response.send(Turn(result)))
                .await
                .expect("in time")
                .expect("answered")
        }
    }
}

criterion_group!(benches, bench);

/// Reads criterion's point estimate (mean, ns) for one benchmark of this run.
fn mean_ns(name: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = dir
        .join("criterion")
        .join(GROUP)
        .join(name)
        .join("new/estimates.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

/// The limiter's cost on the whole pipeline, paired so that the host's drift cancels: blocks of 64 requests
/// alternate between the gateway with one passing middleware and the one with a never-refusing limit (same
/// system, same thread), 400 blocks each after a warm-up; each pair of neighbouring blocks gives one
/// difference, and the median of the differences per request is the limiter's cost. Returns (median added ns,
/// median ns per request with one passing middleware).
fn paired_limiter_cost() -> (f64, f64) {
    const BLOCK: u64 = 64;
    const PAIRS: usize = 400;
    let system = actix_rt::System::new();
    let one = start(&system, ONE_MIDDLEWARE);
    let limited = start(&system, NEVER_REFUSING_LIMIT);
    let headers = headers();
    for _ in 0..20 {
        run(&system, &one, &headers, BLOCK);
        run(&system, &limited, &headers, BLOCK);
    }
    let mut added = Vec::with_capacity(PAIRS);
    let mut base = Vec::with_capacity(PAIRS);
    for i in 0..PAIRS {
        // Alternate which goes first, so that neither always follows the other.
        let (a, b) = if i % 2 == 0 {
            let a = run(&system, &one, &headers, BLOCK);
            (a, run(&system, &limited, &headers, BLOCK))
        } else {
            let b = run(&system, &limited, &headers, BLOCK);
            (run(&system, &one, &headers, BLOCK), b)
        };
        let per = |d: Duration| d.as_nanos() as f64 / BLOCK as f64;
        added.push(per(b) - per(a));
        base.push(per(a));
    }
    one.shutdown();
    limited.shutdown();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut added), median(&mut base))
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    allocations::report();
    let (Some(base), Some(floor), Some(bare), Some(chained)) = (
        mean_ns("baseline_from_slice"),
        mean_ns("floor_three_empty_actor_turns"),
        mean_ns("pipeline_no_middleware"),
        mean_ns("pipeline_two_middlewares"),
    ) else {
        return;
    };
    println!();
    println!(
        "baseline serde_json::from_slice (the request into Value): {:.2} µs",
        base / 1000.0
    );
    println!(
        "the floor (three empty actor turns behind handles, no JSON): {:.2} µs, {:.2}x the bare parse",
        floor / 1000.0,
        floor / base
    );
    for (what, ns) in [
        ("no middleware", bare),
        ("access_log + allow_methods", chained),
    ] {
        let ratio = ns / base;
        println!(
            "tools/call in-process, {what}: {:.2} µs per request, {ratio:.2}x the bare parse (goal <= 3x: {})",
            ns / 1000.0,
            if ratio <= 3.0 { "met" } else { "MISSED" }
        );
    }
    println!(
        "the chain of two: {:.2} µs per request",
        (chained - bare) / 1000.0
    );
    if let Some(alone) = mean_ns("baseline_mock_alone") {
        let clone = mean_ns("mock_alone_clone_of_the_bytes").unwrap_or(f64::NAN);
        println!(
            "baseline the in-process mock alone (handed the bytes the gateway hands it, answering): {:.2} µs ({clone:.0} ns of it the bench's copy of the bytes)",
            alone / 1000.0
        );
        for (what, ns) in [
            ("pipeline_no_middleware", bare),
            ("pipeline_two_middlewares", chained),
        ] {
            let ratio = ns / alone;
            println!(
                "{what} / baseline_mock_alone: {ratio:.2}x (goal <= 5x: {})",
                if ratio <= 5.0 { "met" } else { "MISSED" }
            );
        }
    }
    if let (Some(recording), Some(clone)) = (
        mean_ns("metrics_recording_one_forwarded_call"),
        mean_ns("metrics_clone_of_the_result_alone"),
    ) {
        let own = recording - clone;
        println!(
            "metrics recorded for one forwarded call: {own:.0} ns ({recording:.0} ns less the bench's clone of the result, {clone:.0} ns), {:.2}% of the in-process forwarded call ({:.2} µs; goal < 1%: {})",
            100.0 * own / bare,
            bare / 1000.0,
            if own < bare / 100.0 { "met" } else { "MISSED" }
        );
    }
    if let (Some(check), Some(limited), Some(one)) = (
        mean_ns("limiter_check_warm"),
        mean_ns("pipeline_rate_limit_never_refusing"),
        mean_ns("pipeline_one_passing_middleware"),
    ) {
        println!(
            "the rate limiter's check (warm lease): {check:.0} ns per request (goal < 1 µs: {})",
            if check < 1000.0 { "met" } else { "MISSED" }
        );
        println!(
            "tools/call in-process with a never-refusing rate limit: {:.2} µs, {:.3}x the pipeline with one passing middleware ({:+.2} µs; the limiter's goal: < 1 µs added: {})",
            limited / 1000.0,
            limited / one,
            (limited - one) / 1000.0,
            if limited - one < 1000.0 {
                "met"
            } else {
                "MISSED"
            }
        );
        let (added, base) = paired_limiter_cost();
        println!(
            "the limiter on the whole pipeline, paired (median of 400 neighbouring 64-request blocks): {:+.2} µs per request on {:.2} µs, {:.3}x (goal < 1 µs added: {})",
            added / 1000.0,
            base / 1000.0,
            (base + added) / base,
            if added < 1000.0 { "met" } else { "MISSED" }
        );
    }
}
