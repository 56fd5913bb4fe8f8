//! The installed peers, the backend processes, the gateway in front of them, and the checks that every client's
//! answers go through.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, Running, TempDir};

/// How long a process may take to announce its address, and the gateway to list every backend's tools.
const STARTUP: Duration = Duration::from_secs(60);

/// Paths of the peers that `tests/fixtures/interop/setup.sh` installs.
#[derive(Debug)]
pub struct Deps {
    pub dir: PathBuf,
    pub python: PathBuf,
    pub time_server: PathBuf,
    pub node: PathBuf,
    pub everything: PathBuf,
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
    let deps = Deps {
        python: dir.join(".venv/bin/python"),
        time_server: dir.join(".venv/bin/mcp-server-time"),
        node: dir.join(".bin/node"),
        everything: dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        dir,
    };
    // The stamps are written last by setup.sh, so an interrupted install counts as missing.
    let required = [
        deps.python.clone(),
        deps.dir.join(".venv/.requirements.sha256"),
        deps.time_server.clone(),
        deps.node.clone(),
        deps.dir.join("node_modules/.mcpgw-lock.sha256"),
        deps.everything.clone(),
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

/// The Python SDK's Streamable HTTP server (`py_server.py`) on a free loopback port.
pub fn py_server(deps: &Deps) -> Proc {
    let mut cmd = Command::new(&deps.python);
    cmd.arg(deps.dir.join("py_server.py")).args([
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--max-seconds",
        "600",
    ]);
    cmd.env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    Proc::start(cmd, "py_server listening on ")
}

/// The three backends behind one gateway, and the gateway.
pub struct Stack {
    pub gateway: Running,
    pub py: Proc,
    _dir: TempDir,
}

impl Stack {
    /// Starts the Python HTTP backend and `mcpgw` with all three backends, then waits (bounded) until the
    /// gateway lists a tool of each.
    pub fn start(deps: &Deps, name: &str) -> Stack {
        let py = py_server(deps);
        let dir = TempDir::new(&format!("interop-{name}"));
        let time_cmd = [
            deps.time_server.display().to_string(),
            "--local-timezone".into(),
            "UTC".into(),
        ];
        let everything_cmd = [
            deps.node.display().to_string(),
            deps.everything.display().to_string(),
            "stdio".into(),
        ];
        let config = format!(
            "[[backend]]\nname = \"py\"\nurl = {py_url}\n\n\
             [[backend]]\nname = \"time\"\ncommand = {time}\n\n\
             [[backend]]\nname = \"everything\"\nprefix = \"ev\"\ncommand = {everything}\n",
            py_url = serde_json::to_string(&py.url).unwrap(),
            time = serde_json::to_string(&time_cmd).unwrap(),
            everything = serde_json::to_string(&everything_cmd).unwrap(),
        );
        let gateway = support::gateway(&config, &dir);
        let stack = Stack {
            gateway,
            py,
            _dir: dir,
        };
        stack.wait_for_catalog();
        stack
    }

    pub fn url(&self) -> &str {
        &self.gateway.url
    }

    /// Waits until a 2026-07-28 `tools/list` names one tool of each backend (backends start asynchronously).
    fn wait_for_catalog(&self) {
        let deadline = Instant::now() + STARTUP;
        let mut last = String::new();
        while Instant::now() < deadline {
            let reply = support::modern_request(self.url(), "tools/list", json!({}), &[]);
            if reply.status == 200 {
                let names = tool_names(&reply.json()["result"]);
                if ["py__py_add", "time__convert_time", "ev__get-sum"]
                    .iter()
                    .all(|t| names.iter().any(|n| n == t))
                {
                    return;
                }
                last = format!("tools: {names:?}");
            } else {
                last = format!("HTTP {}: {}", reply.status, reply.text);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the gateway did not list every backend's tools within {STARTUP:?}; last answer: {last}\n{}",
            self.logs()
        );
    }

    /// The gateway's and the Python backend's stderr so far, for a failure message.
    pub fn logs(&self) -> String {
        let gateway: Vec<String> = self.gateway.log.try_iter().collect();
        let py = self.py.drain_log();
        let tail = |lines: &[String]| lines[lines.len().saturating_sub(40)..].join("\n");
        format!(
            "--- mcpgw stderr (last 40 lines) ---\n{}\n--- py_server stderr ---\n{}",
            tail(&gateway),
            tail(&py)
        )
    }
}

fn tool_names(list_result: &Value) -> Vec<String> {
    list_result["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One call each client makes: (tool, arguments).
pub fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("py__py_add", json!({"a": 2, "b": 40})),
        (
            "time__convert_time",
            json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ),
        ("ev__get-sum", json!({"a": 20, "b": 22})),
        ("ev__echo", json!({"message": "interop ✓ \"quoted\""})),
    ]
}

/// A `tools/call` outcome as every client reports it.
#[derive(Debug)]
pub struct CallOutcome {
    pub name: String,
    pub is_error: bool,
    pub text: String,
    pub structured: Option<Value>,
}

impl CallOutcome {
    /// From a `CallToolResult` in its wire shape.
    pub fn from_wire(name: &str, result: &Value) -> CallOutcome {
        let text = result["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        CallOutcome {
            name: name.to_owned(),
            is_error: result["isError"].as_bool().unwrap_or(false),
            text,
            structured: result
                .get("structuredContent")
                .filter(|v| !v.is_null())
                .cloned(),
        }
    }
}

/// Checks a client's view of the aggregated tools; returns what is wrong.
pub fn check_tools(names: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for expected in [
        "py__py_add",
        "time__get_current_time",
        "time__convert_time",
        "ev__echo",
        "ev__get-sum",
    ] {
        if !names.iter().any(|n| n == expected) {
            problems.push(format!("tools/list lacks {expected}"));
        }
    }
    for n in names {
        if !["py__", "time__", "ev__"].iter().any(|p| n.starts_with(p)) {
            problems.push(format!(
                "tools/list has {n:?}, which no backend prefix explains"
            ));
        }
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != names.len() {
        problems.push(format!("tools/list repeats a name: {names:?}"));
    }
    problems
}

/// Checks the answers to `calls()` (in order); returns what is wrong.
pub fn check_calls(outcomes: &[Result<CallOutcome, String>]) -> Vec<String> {
    let mut problems = Vec::new();
    let expected = calls();
    if outcomes.len() != expected.len() {
        problems.push(format!(
            "{} calls answered, {} made",
            outcomes.len(),
            expected.len()
        ));
    }
    for ((name, _), outcome) in expected.iter().zip(outcomes) {
        let o = match outcome {
            Ok(o) => o,
            Err(e) => {
                problems.push(format!("{name}: the call failed: {e}"));
                continue;
            }
        };
        if o.name != *name {
            problems.push(format!("{name}: answered as {:?}", o.name));
            continue;
        }
        if o.is_error {
            problems.push(format!("{name}: isError result: {:?}", o.text));
            continue;
        }
        let ok = match *name {
            "py__py_add" => o.text.trim() == "42" && o.structured == Some(json!({"result": 42})),
            "time__convert_time" => {
                let s = o.structured.clone().unwrap_or_default();
                o.text.contains("+9.0h")
                    && s["time_difference"] == "+9.0h"
                    && s["source"]["timezone"] == "UTC"
                    && s["target"]["timezone"] == "Asia/Tokyo"
                    && s["target"]["datetime"]
                        .as_str()
                        .is_some_and(|d| d.ends_with("T21:00:00+09:00"))
            }
            "ev__get-sum" => o.text == "The sum of 20 and 22 is 42.",
            "ev__echo" => o.text == "Echo: interop ✓ \"quoted\"",
            _ => false,
        };
        if !ok {
            problems.push(format!(
                "{name}: unexpected answer: text {:?}, structuredContent {:?}",
                o.text, o.structured
            ));
        }
    }
    problems
}

/// Runs a command to completion within `limit` (killed after it), returning (exit success, stdout, stderr).
/// Runs `py_client.py` (see its docstring) against `url` in `mode` with `extra` arguments and the `--call`s;
/// its parsed JSON report, or what went wrong.
pub fn py_client(
    deps: &Deps,
    url: &str,
    mode: &str,
    extra: &[String],
    calls: &[(&str, Value)],
) -> Result<Value, String> {
    let mut cmd = Command::new(&deps.python);
    cmd.arg(deps.dir.join("py_client.py"))
        .args(["--url", url, "--mode", mode, "--timeout", "60"])
        .args(extra);
    for (name, args) in calls {
        cmd.arg("--call").arg(name).arg(args.to_string());
    }
    cmd.env("PYTHONUNBUFFERED", "1")
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
            "the Python client failed: {report}\nstderr:\n{stderr}"
        ));
    }
    Ok(report)
}

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
