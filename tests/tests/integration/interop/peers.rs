//! The installed peers, the backend processes, the gateway in front of them, and the checks that every client's
//! answers go through.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, Running};

/// How long a process may take to announce its address, and the gateway to list every backend's tools.
const STARTUP: Duration = Duration::from_secs(60);

/// Paths of the peers that `tests/fixtures/interop/setup.sh` installs.
#[derive(Debug)]
pub struct Deps {
    pub dir: PathBuf,
    pub python: PathBuf,
    pub time_server: PathBuf,
    pub git_server: PathBuf,
    pub node: PathBuf,
    pub everything: PathBuf,
    pub memory: PathBuf,
    pub filesystem: PathBuf,
    /// The TypeScript SDK client's driver (`ts_client.mjs`, on `@modelcontextprotocol/client`).
    pub ts_client: PathBuf,
}

/// The installed peers; `None` (after saying so) when `MCPGW_SKIP_INTEROP=1`. Panics, naming the setup
/// script, when they are not installed.
pub fn deps(test: &str) -> Option<Deps> {
    if std::env::var("MCPGW_SKIP_INTEROP").is_ok_and(|v| v == "1") {
        println!("interop::{test}: skipped (MCPGW_SKIP_INTEROP=1)");
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("interop");
    let package = |name: &str, entry: &str| {
        dir.join("node_modules/@modelcontextprotocol")
            .join(name)
            .join(entry)
    };
    let deps = Deps {
        python: dir.join(".venv/bin/python"),
        time_server: dir.join(".venv/bin/mcp-server-time"),
        git_server: dir.join(".venv/bin/mcp-server-git"),
        node: dir.join(".bin/node"),
        everything: package("server-everything", "dist/index.js"),
        memory: package("server-memory", "dist/index.js"),
        filesystem: package("server-filesystem", "dist/index.js"),
        ts_client: dir.join("ts_client.mjs"),
        dir: dir.clone(),
    };
    // The stamps are written last by setup.sh, so an interrupted install counts as missing.
    let required = [
        deps.python.clone(),
        deps.dir.join(".venv/.requirements.sha256"),
        deps.time_server.clone(),
        deps.git_server.clone(),
        deps.node.clone(),
        deps.dir.join("node_modules/.mcpgw-lock.sha256"),
        deps.everything.clone(),
        deps.memory.clone(),
        deps.filesystem.clone(),
        package("client", "dist/index.mjs"),
        package("inspector", "package.json"),
    ];
    let missing: Vec<String> = required
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "the interop peers are not installed (missing: {}).\nRun tests/fixtures/interop/setup.sh first \
         (or set MCPGW_SKIP_INTEROP=1 to skip the interop tests).",
        missing.join(", ")
    );
    Some(deps)
}

/// A child process that printed `MARKER URL` on stderr; its stdin stays open (the Python fixtures exit when it
/// closes, so they never outlive the test process) and it is killed on drop.
pub struct Proc {
    child: Child,
    _stdin: Option<ChildStdin>,
    pub url: String,
    log: mpsc::Receiver<String>,
}

impl Proc {
    pub fn start(mut cmd: Command, marker: &str) -> Proc {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
        let stdin = child.stdin.take();
        let rx = read_lines(child.stderr.take().unwrap());
        let deadline = Instant::now() + STARTUP;
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Some(pos) = line.find(marker) {
                        let url = line[pos + marker.len()..]
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_owned();
                        return Proc {
                            child,
                            _stdin: stdin,
                            url,
                            log: rx,
                        };
                    }
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{cmd:?} did not print {marker:?} within {STARTUP:?}; stderr:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// What the process printed on stderr since it announced itself (without waiting).
    pub fn drain_log(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The Python SDK's Streamable HTTP server (`py_server.py`, with `extra` arguments) on a free loopback port.
pub fn py_server(deps: &Deps, extra: &[&str]) -> Proc {
    python_fixture(deps, "py_server.py", extra, "py_server listening on ")
}

/// A Python fixture of `tests/fixtures/interop` serving HTTP on a free loopback port, announcing itself with
/// `marker` and its URL on stderr.
pub fn python_fixture(deps: &Deps, script: &str, extra: &[&str], marker: &str) -> Proc {
    let mut cmd = Command::new(&deps.python);
    cmd.arg(deps.dir.join(script))
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "600"])
        .args(extra);
    cmd.env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    Proc::start(cmd, marker)
}

/// The tool names of a 2026-07-28 `tools/list` through the gateway (the first page is the whole catalog here).
pub fn modern_tool_names(url: &str) -> Result<Vec<String>, String> {
    let reply = support::modern_request(url, "tools/list", json!({}), &[]);
    if reply.status != 200 {
        return Err(format!("HTTP {}: {}", reply.status, reply.text));
    }
    Ok(reply.json()["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect())
}

/// Waits (bounded by [`STARTUP`]) until the gateway lists every one of `tools` (backends start
/// asynchronously).
pub fn wait_for_tools(gw: &Running, tools: &[&str]) {
    let deadline = Instant::now() + STARTUP;
    let mut last = String::new();
    while Instant::now() < deadline {
        match modern_tool_names(&gw.url) {
            Ok(names) if tools.iter().all(|t| names.iter().any(|n| n == t)) => return,
            Ok(names) => last = format!("tools: {names:?}"),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let log: Vec<String> = gw.log.try_iter().collect();
    panic!(
        "the gateway did not list {tools:?} within {STARTUP:?}; last answer: {last}\n{}",
        log.join("\n")
    );
}

/// Runs `py_client.py` (see its docstring) against `url` in `mode` with `extra` arguments and the `--call`s;
/// its parsed JSON report, or what went wrong.
pub fn py_client(
    deps: &Deps,
    url: &str,
    mode: &str,
    extra: &[String],
    calls: &[(&str, Value)],
) -> Result<Value, String> {
    let mut args = extra.to_vec();
    for (name, arguments) in calls {
        args.extend([
            "--call".to_owned(),
            (*name).to_owned(),
            arguments.to_string(),
        ]);
    }
    script_client(deps, ScriptClient::Python, url, mode, &args)
}

/// The SDK clients driven through a script of `tests/fixtures/interop`, which share one command line and
/// one JSON report (`py_client.py`'s docstring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptClient {
    /// `py_client.py`, on the Python SDK `mcp`.
    Python,
    /// `ts_client.mjs`, on the TypeScript SDK `@modelcontextprotocol/client`.
    TypeScript,
}

/// Each SDK client in each era: the Python and TypeScript SDKs, legacy and 2026-07-28.
pub const CLIENTS_AND_ERAS: [(ScriptClient, &str); 4] = [
    (ScriptClient::Python, "legacy"),
    (ScriptClient::Python, "2026-07-28"),
    (ScriptClient::TypeScript, "legacy"),
    (ScriptClient::TypeScript, "2026-07-28"),
];

/// A script client's `--call NAME ARGS_JSON` arguments for these calls.
pub fn call_args(calls: &[(&str, serde_json::Value)]) -> Vec<String> {
    calls
        .iter()
        .flat_map(|(n, a)| ["--call".to_owned(), (*n).to_owned(), a.to_string()])
        .collect()
}

/// Runs a script client against `url` in `mode` with `args` (bounded: 60 s of its own, killed after 90 s);
/// its parsed JSON report, or what went wrong.
pub fn script_client(
    deps: &Deps,
    client: ScriptClient,
    url: &str,
    mode: &str,
    args: &[String],
) -> Result<Value, String> {
    let mut cmd = match client {
        ScriptClient::Python => {
            let mut cmd = Command::new(&deps.python);
            cmd.arg(deps.dir.join("py_client.py"))
                .env("PYTHONUNBUFFERED", "1");
            cmd
        }
        ScriptClient::TypeScript => {
            let mut cmd = Command::new(&deps.node);
            cmd.arg(&deps.ts_client);
            cmd
        }
    };
    cmd.args(["--url", url, "--mode", mode, "--timeout", "60"])
        .args(args)
        .env("NO_PROXY", "127.0.0.1,localhost");
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(90));
    let report: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!("no JSON report (exit ok: {ok}); stdout: {stdout:?}; stderr:\n{stderr}")
        })?;
    if !ok || report.get("fatal").is_some() {
        return Err(format!(
            "the {client:?} client failed: {report}\nstderr:\n{stderr}"
        ));
    }
    Ok(report)
}

/// Runs a command to completion within `limit` (killed after it), returning (exit success, stdout, stderr).
pub fn run_bounded(mut cmd: Command, limit: Duration) -> (bool, String, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    let mut stderr = err.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {limit:?})"));
    }
    (status.is_some_and(|s| s.success()), stdout, stderr)
}

fn collect(mut r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}
