//! Three mcpgw replicas behind nginx (the shipped config: round robin, no stickiness), sharing Redis and a
//! key ring, under `mcpgw load --era mixed` through nginx, while faults happen: a replica killed with
//! `kill -9` and brought back, a rolling restart of all three with drain (each taken out of nginx's upstream
//! first, as a Kubernetes endpoint controller would), Redis killed and restarted. Every assertion is on what
//! `mcpgw load` counted. Bounded: each load run has a duration, the whole test a few minutes.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cluster::{Nginx, Redis, Replica, have};
use crate::interop::peers::{Proc, deps, wait_for_tools};
use crate::support::{TempDir, mcpgw};

/// Concurrent sessions of every load run (half legacy, half 2026-07-28).
const SESSIONS: usize = 12;

/// A three-replica deployment.
pub struct Deployment {
    /// The Python SDK backend whose tool asks the client (elicitation), when the interop peers are here.
    pub asker: Option<Proc>,
    pub dir: TempDir,
    /// The key ring's file.
    pub keys: PathBuf,
    pub redis: Redis,
    pub replicas: Vec<Replica>,
    pub nginx: Nginx,
}

/// The replicas' config: the mock backend, the asking backend (when there is one: one process, shared by
/// the replicas), a short drain, Redis, the key ring in a file (re-read on SIGHUP).
fn config(redis: &Redis, keys: &std::path::Path, asker: Option<&str>) -> String {
    let asker = asker.map_or(String::new(), |url| {
        format!(
            "[[backend]]\nname = \"asker\"\nprefix = \"ask\"\nurl = {}\n",
            serde_json::to_string(url).unwrap()
        )
    });
    asker + &base_config(redis, keys)
}

fn base_config(redis: &Redis, keys: &std::path::Path) -> String {
    format!(
        "[server]\n\
         drain_grace_secs = 1\n\
         drain_timeout_secs = 10\n\
         [cluster]\n\
         redis = {:?}\n\
         keys_file = {:?}\n\
         [[backend]]\n\
         name = \"m\"\n\
         builtin = [\"mock-backend\"]\n\
         max_in_flight = 256\n\
         max_in_flight_per_caller = 256\n",
        redis.url(),
        keys.display().to_string(),
    )
}

impl Deployment {
    pub fn start(name: &str) -> Deployment {
        let dir = TempDir::new(name);
        let redis = Redis::start(&dir);
        let keys = dir.file("keys", &format!("{}\n", new_key()));
        let asker = deps("replicas::three").map(|deps| {
            let mut py = Command::new(&deps.python);
            py.arg(deps.dir.join("py_asking_server.py"))
                .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "900"])
                .env("PYTHONUNBUFFERED", "1");
            Proc::start(py, "py_asking_server listening on ")
        });
        let config = dir.file(
            "mcpgw.toml",
            &config(&redis, &keys, asker.as_ref().map(|p| p.url.as_str())),
        );
        let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::new(&config, None)).collect();
        for r in &mut replicas {
            r.start();
        }
        let nginx = Nginx::start(&dir, &ports(&replicas));
        if asker.is_some() {
            for r in &replicas {
                wait_for_tools(
                    r.process.as_ref().unwrap(),
                    &["ask__py_ask_name", "m__echo"],
                );
            }
        }
        Deployment {
            asker,
            dir,
            keys,
            redis,
            replicas,
            nginx,
        }
    }
}

fn ports(replicas: &[Replica]) -> Vec<u16> {
    replicas.iter().map(|r| r.port).collect()
}

pub fn new_key() -> String {
    let out = Command::new(mcpgw())
        .args(["cluster", "new-key"])
        .output()
        .expect("mcpgw cluster new-key runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A `mcpgw load` run in the background.
pub struct Load {
    /// Redis's commands when the run started.
    redis_commands: u64,
    child: std::process::Child,
    json: PathBuf,
    started: Instant,
}

/// The load's mix: calls of the mock's echo and, with the asking backend, one ask in nine (legacy sessions
/// answer the elicitation with a POST that round robin sends to any replica; 2026-07-28 clients retry with
/// the sealed `requestState`, on any replica).
fn mix(d: &Deployment) -> Vec<&'static str> {
    if d.asker.is_some() {
        vec![
            "--mix",
            "tools/call=8,ask=1",
            "--ask-tool",
            "ask__py_ask_name",
            "--ask-args",
            r#"{"greeting":"hi"}"#,
        ]
    } else {
        vec!["--tool", "m__echo"]
    }
}

impl Load {
    pub fn start(d: &Deployment, name: &str, duration: Duration) -> Load {
        let (url, dir, extra) = (d.nginx.url(), &d.dir, mix(d));
        let json = dir.0.join(format!("{name}.json"));
        let child = Command::new(mcpgw())
            .args(["load", "--url", &url, "--era", "mixed", "--no-progress"])
            .args(["--sessions", &SESSIONS.to_string()])
            .args(["--duration", &format!("{}ms", duration.as_millis())])
            .args(["--timeout", "15s", "--threads", "2"])
            .arg("--json")
            .arg(&json)
            .args(&extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("mcpgw load starts");
        Load {
            redis_commands: d.redis.commands(),
            child,
            json,
            started: Instant::now(),
        }
    }

    /// Sleeps until `at` after the run's start.
    pub fn at(&self, at: Duration) {
        if let Some(left) = at.checked_sub(self.started.elapsed()) {
            std::thread::sleep(left);
        }
    }

    /// Waits for the run (bounded) and reads its JSON report.
    pub fn report(mut self, d: &Deployment) -> Report {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "mcpgw load still runs after 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut stderr = String::new();
        use std::io::Read;
        let _ = self
            .child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr);
        let text = std::fs::read_to_string(&self.json)
            .unwrap_or_else(|e| panic!("no report ({e}), load exited {status}: {stderr}"));
        let mut report: Value = serde_json::from_str(&text).unwrap();
        // Redis's own count of what the replicas sent it during the run (none when it was restarted).
        report["redis_commands"] = d
            .redis
            .commands()
            .checked_sub(self.redis_commands)
            .map_or(Value::Null, Value::from);
        Report(report)
    }
}

/// `mcpgw load`'s JSON report.
pub struct Report(pub Value);

impl Report {
    pub fn requests(&self) -> u64 {
        self.0["requests"].as_u64().unwrap()
    }
    pub fn status_count(&self, status: u16) -> u64 {
        self.0["outcomes"]["by_http_status"][status.to_string()]
            .as_u64()
            .unwrap_or(0)
    }
    pub fn outcome(&self, kind: &str) -> u64 {
        self.0["outcomes"][kind].as_u64().unwrap_or(0)
    }
    /// Errors of one operation (set-up and tear-down ones included).
    pub fn op_errors(&self, op: &str) -> u64 {
        self.0["operations"][op]["errors"].as_u64().unwrap_or(0)
    }
    /// Requests the generator sent again because nginx closed their keep-alive connection first.
    pub fn resent(&self) -> u64 {
        self.0["resent"].as_u64().unwrap_or(0)
    }
    /// One line for the test's output (and bench/RESULTS.md).
    pub fn line(&self, phase: &str) -> String {
        let l = &self.0["latency_ms"];
        let ask = &self.0["operations"]["ask"];
        format!(
            "{phase}: {} requests ({} asks, {} answered), {} errors (tools/call {}, ask {}), JSON-RPC codes {}, \
             p50 {} ms, p99 {} ms, statuses {}, resent {}, redis commands {}, failures {}",
            self.requests(),
            ask["requests"].as_u64().unwrap_or(0),
            ask["questions_answered"].as_u64().unwrap_or(0),
            self.all_errors(),
            self.op_errors("tools/call"),
            self.op_errors("ask"),
            self.0["outcomes"]["by_jsonrpc_code"],
            l["p50"],
            l["p99"],
            self.0["outcomes"]["by_http_status"],
            self.resent(),
            self.0["redis_commands"],
            self.failures(),
        )
    }
    /// The measured requests that did not succeed, by outcome and reason (what a failing assertion needs to
    /// say which kind of failure it saw).
    pub fn failures(&self) -> String {
        let o = &self.0["outcomes"];
        let mut out: Vec<String> = [
            "tool_error",
            "http_error",
            "incomplete",
            "invalid_response",
            "timeout",
        ]
        .iter()
        .filter_map(|k| {
            o[*k]
                .as_u64()
                .filter(|n| *n > 0)
                .map(|n| format!("{k} {n}"))
        })
        .collect();
        for key in ["transport_reasons", "invalid_reasons"] {
            if let Some(map) = o[key].as_object() {
                out.extend(map.iter().map(|(k, v)| format!("{k}: {v}")));
            }
        }
        if out.is_empty() {
            "none".into()
        } else {
            out.join(", ")
        }
    }
    /// Every error of the run, set-up and tear-down included, as a readable list.
    pub fn all_errors(&self) -> u64 {
        let ops = self.0["operations"].as_object().unwrap();
        ops.values()
            .map(|o| o["errors"].as_u64().unwrap_or(0))
            .sum()
    }
}

#[test]
fn three_replicas_behind_nginx_lose_no_session_to_a_kill_a_rolling_restart_or_redis() {
    if !have("redis-server") || !have("nginx") {
        panic!("redis-server and nginx are needed (Debian's packages; .ci/run installs them)");
    }
    let mut d = Deployment::start("three");
    let url = d.nginx.url();

    // Before: every replica takes traffic, nothing fails.
    let before = Load::start(&d, "before", Duration::from_secs(4)).report(&d);
    println!("{}", before.line("before"));
    assert_eq!(before.all_errors(), 0, "{}", before.0);
    if d.asker.is_some() {
        // Questions answered in both eras: a legacy session's answer goes by round robin to any replica (two
        // times in three another than the one waiting for it, which Redis then reaches); a 2026-07-28 retry
        // too (its requestState opened there, its single use claimed in Redis).
        for era in ["legacy", "modern"] {
            let by_era = &before.0["operations"]["ask"]["by_era"][era];
            assert!(
                by_era["ok"].as_u64().unwrap_or(0) > 0,
                "{era} asks: {}",
                before.0
            );
            assert_eq!(
                by_era["ok"], by_era["questions_answered"],
                "{era}: {}",
                before.0
            );
        }
    }
    for r in &d.replicas {
        assert!(
            d.nginx.served_by(r.port) > 0,
            "replica {} served nothing",
            r.port
        );
    }

    // A key rotation under load: the new key added everywhere (second: it opens), moved first (it seals),
    // each step a SIGHUP to every replica; then the old key dropped, once the run's sessions are over.
    let old_key = std::fs::read_to_string(&d.keys).unwrap().trim().to_owned();
    let new = new_key();
    let sealed_with_old = crate::support::LegacyClient::connect(&url, "2025-11-25");
    let run = Load::start(&d, "rotation", Duration::from_secs(8));
    run.at(Duration::from_secs(2));
    std::fs::write(&d.keys, format!("{old_key}\n{new}\n")).unwrap();
    d.replicas.iter().for_each(Replica::reload_keys);
    run.at(Duration::from_secs(5));
    std::fs::write(&d.keys, format!("{new}\n{old_key}\n")).unwrap();
    d.replicas.iter().for_each(Replica::reload_keys);
    let rotation = run.report(&d);
    println!("{}", rotation.line("key rotation"));
    assert_eq!(rotation.all_errors(), 0, "{}", rotation.0);
    std::fs::write(&d.keys, format!("{new}\n")).unwrap();
    d.replicas.iter().for_each(Replica::reload_keys);
    let mut sealed_after = crate::support::LegacyClient::connect(&url, "2025-11-25");
    for _ in 0..3 {
        // Every replica in turn (round robin) opens it.
        assert_eq!(
            sealed_after.request("ping", serde_json::json!({})).status,
            200
        );
    }
    let mut dropped = sealed_with_old;
    for _ in 0..3 {
        assert_eq!(
            dropped.request("ping", serde_json::json!({})).status,
            404,
            "a session sealed with a dropped key is unknown everywhere"
        );
    }

    // kill -9 one replica mid-run, bring it back.
    // nginx leaves a server that failed alone for its fail_timeout (10 s by default) before it tries again.
    let run = Load::start(&d, "kill", Duration::from_secs(16));
    run.at(Duration::from_secs(2));
    d.replicas[0].kill();
    run.at(Duration::from_secs(4));
    d.replicas[0].start();
    let back_at = d.nginx.served_by(d.replicas[0].port);
    let kill = run.report(&d);
    println!("{}", kill.line("kill -9 one replica"));
    assert_eq!(
        kill.status_count(404),
        0,
        "no legacy session is lost: {}",
        kill.0
    );
    assert_eq!(kill.outcome("timeout"), 0, "nothing hangs: {}", kill.0);
    // What was in flight on the killed replica failed visibly, at most one request per session: nginx's
    // 502, a stream cut (an ask's SSE answer), or an answer to the killed replica's question refused at
    // once (503: the replica that asked is gone).
    let failed = kill.all_errors();
    assert!(
        failed <= SESSIONS as u64,
        "only requests in flight on the killed replica fail: {}",
        kill.0
    );
    assert_eq!(
        failed,
        kill.status_count(502)
            + kill.status_count(503)
            + kill.outcome("transport_error")
            + kill.outcome("incomplete"),
        "every failure is one of the killed replica's: {}",
        kill.0
    );
    assert!(
        d.nginx.served_by(d.replicas[0].port) > back_at,
        "the replica brought back takes traffic again"
    );

    // A rolling restart with drain, one replica at a time: out of nginx's upstream, SIGTERM, started
    // again, back in.
    let run = Load::start(&d, "rolling", Duration::from_secs(24));
    run.at(Duration::from_secs(2));
    for i in 0..d.replicas.len() {
        let others: Vec<u16> = d
            .replicas
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| r.port)
            .collect();
        d.nginx.set_upstreams(&others);
        let status = d.replicas[i].stop(Duration::from_secs(20));
        assert!(status.success(), "replica {i} drained and exited: {status}");
        d.replicas[i].start();
        d.nginx.set_upstreams(&ports(&d.replicas));
        std::thread::sleep(Duration::from_millis(500));
    }
    let rolling = run.report(&d);
    println!("{}", rolling.line("rolling restart"));
    assert_eq!(rolling.all_errors(), 0, "{}", rolling.0);
    // nginx -s reload closes idle client keep-alive connections, also one whose next request has just
    // arrived unread; the generator sends such a request again (as browsers do) and counts it. Six
    // reloads: at most one per session each.
    assert!(rolling.resent() <= 6 * SESSIONS as u64, "{}", rolling.0);

    // Redis killed and restarted mid-run: established sessions' calls keep working.
    let run = Load::start(&d, "redis", Duration::from_secs(10));
    run.at(Duration::from_secs(3));
    d.redis.kill();
    run.at(Duration::from_secs(6));
    d.redis.restart();
    let redis = run.report(&d);
    println!("{}", redis.line("redis killed and restarted"));
    assert_eq!(redis.op_errors("tools/call"), 0, "{}", redis.0);
    assert_eq!(redis.status_count(404), 0, "{}", redis.0);
    assert_eq!(redis.outcome("timeout"), 0, "nothing hangs: {}", redis.0);
    if d.asker.is_some() {
        // Asks need Redis when their answer (legacy) or their retry (2026-07-28) crosses replicas: while
        // it is down they fail at once, with a clear error (a 503 for a legacy answer, -32603 for a retry
        // whose single use cannot be checked).
        let ask = redis.op_errors("ask");
        assert!(
            ask > 0,
            "asks that need redis failed while it was down: {}",
            redis.0
        );
    }

    // After: everything recovered by itself.
    std::thread::sleep(Duration::from_secs(2));
    let after = Load::start(&d, "after", Duration::from_secs(4)).report(&d);
    println!("{}", after.line("after"));
    assert_eq!(after.all_errors(), 0, "{}", after.0);
}
