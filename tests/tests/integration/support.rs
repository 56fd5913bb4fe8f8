//! Starting and talking to real processes: the `mcpgw` binary (built once on demand), its mock backend, and a
//! small MCP client over HTTP for both eras.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The `mcpgw` binary of this workspace, built once per test run.
pub fn mcpgw() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // A prebuilt binary instead (a long run beside ongoing work on the tree).
        if let Some(bin) = std::env::var_os("MCPGW_BIN") {
            return PathBuf::from(bin);
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "gateway", "--bin", "mcpgw"])
            .current_dir(&root)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building mcpgw failed");
        debug_dir(&root).join("mcpgw")
    })
    .clone()
}

/// The workspace's `target/debug` (or `$CARGO_TARGET_DIR`'s).
fn debug_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("debug")
}

/// An example of the `gateway` package (`gateway/examples/NAME.rs`, a binary built with the mcpgw library).
///
/// `cargo test --workspace` (the README's command, `.ci/run`) builds the examples with everything else before
/// any test runs, so the binary is used as it is. Building them here instead (with `cargo build -p gateway
/// --examples`, whose feature set differs from the test build's) recompiled the dev-dependencies and linked
/// three 400 MB binaries while the suite ran: minutes, and a failed link on a smaller machine. Only a binary
/// missing or older than a source it is built from (a partial run, `cargo test -p tests`, after an edit) is
/// built here, once per run.
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin = debug_dir(&root).join("examples").join(name);
    if is_older_than_its_sources(&bin, &root) {
        BUILT.get_or_init(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "--quiet", "-p", "gateway", "--examples"])
                .current_dir(&root)
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building the examples failed");
        });
    }
    bin
}

/// Whether `bin` is missing or older than a file of the crates an example is built from.
fn is_older_than_its_sources(bin: &Path, root: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        return true;
    };
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut pending: Vec<PathBuf> = [
        "Cargo.lock",
        "protocol/src",
        "handlers/src",
        "gateway/Cargo.toml",
        "gateway/src",
        "gateway/examples",
        "gateway/mock/src",
        "gateway/load/src",
        "gateway/openapi/src",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    while let Some(path) = pending.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.flatten().map(|e| e.path()));
            }
        } else if let Ok(modified) = meta.modified() {
            newest = newest.max(modified);
        }
    }
    built < newest
}

/// A loopback port free at this moment (for a process that must listen on a port known beforehand).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A directory for one test's files, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("mcpgw-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running process that is killed on drop; `addr` is what it printed as its listen address.
pub struct Running {
    child: Child,
    pub url: String,
    /// The lines printed before the one with the URL (start-up).
    pub early: Vec<String>,
    pub log: mpsc::Receiver<String>,
}

impl Running {
    /// The process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (`TERM`, `INT`, …) to the process, with `kill`.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} {}", self.pid());
    }

    /// Waits (bounded) for the process to exit; its status, or `None` if it still runs after `within`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The log lines printed so far (the rest stay to be read).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// Every log line left, up to the end of the process's standard error (waiting at most `within`).
    pub fn log_to_end(&self, within: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + within;
        let mut lines = Vec::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => break,
            }
        }
        lines
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a process and waits (bounded) for a stderr line containing `marker` followed by a URL.
pub fn start(mut cmd: Command, marker: &str) -> Running {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("process starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Bytes, not `lines()`: a line that is not UTF-8 must not end the reading (and hide the rest).
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&line)
                .trim_end_matches(['\n', '\r'])
                .to_owned();
            line.clear();
            if tx.send(text).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut early = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(pos) = line.find(marker) {
                    let rest = &line[pos + marker.len()..];
                    let url = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .trim_end_matches(['"', ','])
                        .to_owned();
                    // The marker's own line is kept with the others before it.
                    early.push(line);
                    return Running {
                        child,
                        url,
                        early,
                        log: rx,
                    };
                }
                early.push(line);
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("process did not print {marker:?} within 60 s");
            }
        }
    }
}

/// Starts `mcpgw serve` on a free loopback port with a TOML config.
pub fn gateway(config_toml: &str, dir: &TempDir) -> Running {
    gateway_with(config_toml, dir, |_| {})
}

/// Starts `mcpgw serve` like [`gateway`], with `adjust` applied to its command first.
pub fn gateway_with(
    config_toml: &str,
    dir: &TempDir,
    adjust: impl FnOnce(&mut Command),
) -> Running {
    let path = dir.file("mcpgw.toml", config_toml);
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", "127.0.0.1:0"]);
    cmd.env("RUST_LOG", "info");
    adjust(&mut cmd);
    start(cmd, "mcpgw listening on ")
}

/// Starts `mcpgw mock-backend --listen` on a free loopback port.
pub fn http_mock(args: &[&str]) -> Running {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["mock-backend", "--listen", "127.0.0.1:0"])
        .args(args);
    start(cmd, "mock-backend listening on ")
}

/// The TOML `command` array that runs the stdio mock backend with `args`.
pub fn stdio_mock_command(args: &[&str]) -> String {
    let mut parts = vec![
        mcpgw().to_string_lossy().into_owned(),
        "mock-backend".into(),
        "--stdio".into(),
    ];
    parts.extend(args.iter().map(|a| a.to_string()));
    serde_json::to_string(&parts).unwrap()
}

/// An HTTP response as the tests look at it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    /// The JSON body (a JSON body, or the first SSE `data:` line).
    pub fn json(&self) -> Value {
        let text = if self.text.starts_with("event:") || self.text.starts_with("data:") {
            self.text
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or_default()
                .to_owned()
        } else {
            self.text.clone()
        };
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// Installs ring as this process's rustls provider (once), as mcpgw does: every reqwest client needs one.
pub fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A blocking HTTP client with a bounded timeout.
pub fn client() -> reqwest::blocking::Client {
    tls_provider();
    // plain http: a configuration with no roots, so that no client reads the system's store
    let plain = rustls::ClientConfig::builder()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::blocking::Client::builder()
        .tls_backend_preconfigured(plain)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// POSTs raw bytes with the given headers.
pub fn post_raw(
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::blocking::Body>,
) -> Reply {
    let mut req = client().post(url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    into_reply(req.send().expect("request sent"))
}

pub fn into_reply(resp: reqwest::blocking::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().unwrap_or_default();
    Reply {
        status,
        headers,
        text,
    }
}

pub const JSON_HEADERS: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// A legacy client: initialize, initialized, then requests carrying the session id.
pub struct LegacyClient {
    pub url: String,
    pub version: String,
    pub session: String,
    next_id: i64,
}

impl LegacyClient {
    pub fn connect(url: &str, version: &str) -> LegacyClient {
        LegacyClient::connect_with(url, version, json!({}))
    }

    /// Connects declaring `capabilities`.
    pub fn connect_with(url: &str, version: &str, capabilities: Value) -> LegacyClient {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "it", "version": "1"}}});
        let reply = post_raw(url, &JSON_HEADERS, body.to_string());
        assert_eq!(reply.status, 200, "initialize: {reply:?}");
        let session = reply.header("mcp-session-id").expect("session id");
        assert_eq!(reply.json()["result"]["protocolVersion"], version);
        let mut c = LegacyClient {
            url: url.to_owned(),
            version: version.to_owned(),
            session,
            next_id: 1,
        };
        let r = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(r.status, 202, "initialized: {r:?}");
        c
    }

    pub fn post(&mut self, body: &Value) -> Reply {
        let mut headers = JSON_HEADERS.to_vec();
        headers.push(("Mcp-Session-Id", &self.session));
        if self.version.as_str() >= "2025-06-18" {
            headers.push(("MCP-Protocol-Version", &self.version));
        }
        post_raw(&self.url, &headers, body.to_string())
    }

    /// POSTs a message and returns the response unread (for SSE answers read as they come).
    pub fn post_streaming(&mut self, body: &Value) -> reqwest::blocking::Response {
        let mut req = client().post(&self.url).body(body.to_string());
        for (k, v) in JSON_HEADERS {
            req = req.header(k, v);
        }
        req = req.header("Mcp-Session-Id", &self.session);
        if self.version.as_str() >= "2025-06-18" {
            req = req.header("MCP-Protocol-Version", &self.version);
        }
        req.send().expect("request sent")
    }

    pub fn request(&mut self, method: &str, params: Value) -> Reply {
        self.next_id += 1;
        self.post(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
        )
    }
}

/// A 2026-07-28 `tools/call` of `tool` with `params` declaring `capabilities` ([`modern_request`]).
pub fn modern_tools_call(
    url: &str,
    tool: &str,
    capabilities: Value,
    mut params: Value,
    extra_headers: &[(&str, &str)],
) -> Reply {
    params["name"] = Value::String(tool.to_owned());
    params["_meta"] = json!({ "io.modelcontextprotocol/clientCapabilities": capabilities });
    modern_request(url, "tools/call", params, extra_headers)
}

/// [`modern_tools_call`] as the holder of `bearer`; its JSON answer, which must come with 200.
pub fn modern_call_as(
    bearer: &str,
    url: &str,
    tool: &str,
    capabilities: Value,
    params: Value,
) -> Value {
    let authorization = format!("Bearer {bearer}");
    let reply = modern_tools_call(
        url,
        tool,
        capabilities,
        params,
        &[("Authorization", authorization.as_str())],
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, its answer's JSON.
pub fn call_tool(url: &str, tool: &str, arguments: Value) -> Value {
    modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        &[],
    )
    .json()
}

pub fn modern_request(
    url: &str,
    method: &str,
    mut params: Value,
    extra_headers: &[(&str, &str)],
) -> Reply {
    // The era's `_meta`, with any keys the params already carry (declared capabilities) kept.
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    if let (Some(meta), Some(Value::Object(given))) = (meta.as_object_mut(), params.get("_meta")) {
        meta.extend(given.clone());
    }
    params["_meta"] = meta;
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers: Vec<(&str, &str)> = JSON_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", "2026-07-28"));
    headers.push(("Mcp-Method", method));
    let encoded = name
        .as_deref()
        .map(|n| protocol::headers::encode_value(n).into_owned());
    if let Some(n) = &encoded {
        if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            headers.push(("Mcp-Name", n));
        }
    }
    headers.extend_from_slice(extra_headers);
    post_raw(url, &headers, body.to_string())
}

/// A standard config with the stdio mock backend named `mock` (prefix `m`).
pub fn one_stdio_mock(args: &[&str]) -> String {
    format!(
        "[[backend]]\nname = \"mock\"\nprefix = \"m\"\ncommand = {}\n",
        stdio_mock_command(args)
    )
}

/// Flushes a child's stdin line.
pub fn write_line(w: &mut impl Write, v: &Value) {
    w.write_all(v.to_string().as_bytes()).unwrap();
    w.write_all(b"\n").unwrap();
    w.flush().unwrap();
}

/// The JSON-RPC messages of an SSE response (its `data:` lines), as they arrive, read on a thread of their
/// own until the stream ends or the receiver is dropped.
pub fn sse_messages(resp: reqwest::blocking::Response) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(resp).lines().map_while(Result::ok) {
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            if let Ok(v) = serde_json::from_str(data.trim()) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// Polls `{base}/readyz` until it answers 200 (bounded: 30 s); its body. It answers 503 only while the
/// gateway is starting (no catalog yet).
pub fn wait_ready(base: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = into_reply(client().get(format!("{base}/readyz")).send().unwrap());
        if r.status == 200 {
            return r.json();
        }
        assert_eq!(r.status, 503, "{r:?}");
        assert_eq!(r.json()["status"], "starting", "{r:?}");
        assert!(
            std::time::Instant::now() < deadline,
            "/readyz still 503 after 30 s: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `[admin] listen` on a loopback port chosen at start, to append to a config: the readiness detail (each
/// backend's standing, sessions, drops, Redis) and `/metrics` are the admin listener's, not the front door's.
pub const ADMIN: &str = "\n[admin]\nlisten = \"127.0.0.1:0\"\n";

/// The admin listener's base URL (`http://127.0.0.1:PORT`), as the gateway printed it at start
/// (`mcpgw admin view on URL/admin/`); its `/readyz` answers as the front door's with the detail.
pub fn admin_base(gw: &Running) -> String {
    let line = gw
        .early
        .iter()
        .find_map(|l| l.split("mcpgw admin view on ").nth(1))
        .unwrap_or_else(|| {
            panic!(
                "no admin listener (add support::ADMIN to the config): {:?}",
                gw.early
            )
        });
    line.trim().trim_end_matches("/admin/").to_owned()
}

/// The exposed names a 2026-07-28 `tools/list` of the gateway at `url` lists, and the whole reply.
pub fn listed_tools(url: &str) -> (Vec<String>, Value) {
    let list = modern_request(url, "tools/list", json!({}), &[]).json();
    let names = list["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (names, list)
}

/// `mcpgw serve --stdio --config FILE`: one JSON-RPC line in, the next line out (each wait bounded);
/// killed on drop.
pub struct StdioGateway {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl StdioGateway {
    pub fn start(config: &Path) -> StdioGateway {
        StdioGateway::start_bin(&mcpgw(), config)
    }

    /// As [`StdioGateway::start`], with another binary built with the mcpgw library.
    pub fn start_bin(bin: &Path, config: &Path) -> StdioGateway {
        let mut child = Command::new(bin)
            .args(["serve", "--stdio", "--config"])
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioGateway {
            child,
            stdin,
            lines,
        }
    }

    /// Writes `v` as one line and reads the next line of output as JSON (within 30 s).
    pub fn ask(&mut self, v: &Value) -> Value {
        write_line(self.stdin.as_mut().expect("stdin is open"), v);
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer in time");
        serde_json::from_str(&line).unwrap()
    }

    /// Writes `v` as one line, expecting no answer.
    pub fn tell(&mut self, v: &Value) {
        write_line(self.stdin.as_mut().expect("stdin is open"), v);
    }

    /// The next line of output as JSON, if one comes within `within`.
    pub fn next(&mut self, within: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(within).ok()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Closes standard input and waits (bounded) for the process to exit: its status, if it did.
    pub fn close_and_wait(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    crate::docs_blocks::root()
}

/// The documentation's pages, relative to the root: README.md and every `.md` under docs/src, sorted.
pub fn doc_pages() -> Vec<String> {
    crate::docs_blocks::pages()
}

/// A fenced block of a page.
#[derive(Debug)]
pub struct Fence {
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// The first word of its info string (empty for none).
    pub language: String,
    /// Its lines, each ending with a newline, as a file holding them would.
    pub text: String,
    /// The NAME of the `<!-- test: NAME ... -->` line right before it (blank lines allowed), if any.
    pub marker: Option<String>,
}

/// The fenced blocks of a page's text (``` fences, indented ones too).
pub fn fences(page: &str) -> Vec<Fence> {
    let lines: Vec<&str> = page.lines().collect();
    let mut out = Vec::new();
    let mut marker: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(rest) = line.strip_prefix("<!-- test: ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            marker = Some(name.trim_end_matches("-->").to_owned());
            i += 1;
            continue;
        }
        if !line.starts_with("```") {
            if !line.is_empty() {
                marker = None;
            }
            i += 1;
            continue;
        }
        let indent = lines[i].len() - lines[i].trim_start().len();
        let language = line
            .trim_start_matches('`')
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let start = i + 1;
        let mut text = String::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let spaces = lines[i].len() - lines[i].trim_start_matches(' ').len();
            text.push_str(&lines[i][spaces.min(indent)..]);
            text.push('\n');
            i += 1;
        }
        out.push(Fence {
            line: start,
            language,
            text,
            marker: marker.take(),
        });
        i += 1;
    }
    out
}

/// The text of the `language` block marked `<!-- test: NAME` in README.md or docs/src (exactly one).
pub fn doc_block(name: &str, language: &str) -> String {
    let mut found = Vec::new();
    for page in doc_pages() {
        let text = std::fs::read_to_string(repo_root().join(&page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        for fence in fences(&text) {
            if fence.marker.as_deref() == Some(name) {
                found.push((page.clone(), fence));
            }
        }
    }
    match found.len() {
        0 => panic!(
            "no fenced block is marked `<!-- test: {name}` in README.md or docs/src/*.md (or the marker \
             is not right before its block)"
        ),
        1 => {}
        _ => panic!("the marker `<!-- test: {name}` is on several blocks"),
    }
    let (page, fence) = found.remove(0);
    assert_eq!(
        fence.language, language,
        "the block marked `<!-- test: {name}` ({page}:{}) is not a {language} block",
        fence.line
    );
    fence.text
}

/// The output a page shows for the block marked `<!-- test: NAME`: the fenced block after it on its page,
/// which has no language or is `text`.
pub fn doc_output(name: &str) -> String {
    for page in doc_pages() {
        let text = std::fs::read_to_string(repo_root().join(&page)).unwrap();
        let fences = fences(&text);
        if let Some(i) = fences
            .iter()
            .position(|f| f.marker.as_deref() == Some(name))
        {
            let out = fences
                .get(i + 1)
                .unwrap_or_else(|| panic!("{page}: no output shown after the block {name}"));
            assert!(
                matches!(out.language.as_str(), "" | "text"),
                "{page}:{}: the block after {name} is not an output block (no language, or text)",
                out.line
            );
            return out.text.clone();
        }
    }
    panic!("no block is marked `<!-- test: {name}` in README.md or docs/src/*.md")
}
