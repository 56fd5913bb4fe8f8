//! What the tests share: configurations for the fixtures, an event reader with deadlines, temporary log
//! files, and request builders.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use handlers::{
    BackendConfig, BackendEvent, BackendHandle, BackendRequest, ServerDescription, Transport,
};
use protocol::method::Method;
use protocol::{Notification, shape::Failure};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// The longest any test waits for one event.
pub const WAIT: Duration = Duration::from_secs(10);

/// The stdio fixture.
pub fn fixture() -> String {
    format!(
        "{}/tests/fixtures/fake_mcp_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A stdio backend running the fixture with `args`, logging what it receives to `log`.
pub fn stdio_config(name: &str, args: &[&str], log: Option<&TempLog>) -> BackendConfig {
    let mut command = vec!["python3".to_owned(), "-u".to_owned(), fixture()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let mut env = std::collections::BTreeMap::new();
    if let Some(log) = log {
        env.insert("FIXTURE_LOG".to_owned(), log.path.display().to_string());
    }
    let mut config = BackendConfig::new(
        name,
        Transport::Stdio {
            command,
            env,
            cwd: Some(std::env::temp_dir()),
        },
    );
    config.connect_timeout = Duration::from_secs(5);
    config.request_timeout = Duration::from_secs(5);
    config
}

/// An HTTP backend at `url`.
pub fn http_config(name: &str, url: &str) -> BackendConfig {
    let mut config = BackendConfig::new(name, Transport::http(url));
    config.connect_timeout = Duration::from_secs(5);
    config.request_timeout = Duration::from_secs(5);
    config
}

/// Starts a backend; its events.
pub fn start(config: BackendConfig) -> (BackendHandle, Events) {
    let (tx, rx) = mpsc::channel(256);
    (BackendHandle::start(config, tx), Events { rx })
}

/// The events of one backend, read with deadlines.
pub struct Events {
    rx: mpsc::Receiver<BackendEvent>,
}

impl Events {
    async fn next_matching<T>(&mut self, mut f: impl FnMut(BackendEvent) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let event = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .expect("timed out waiting for an event")
                .expect("event channel closed");
            if let Some(t) = f(event) {
                return t;
            }
        }
    }

    /// The next `Ready` (skipping other events).
    pub async fn ready(&mut self) -> Arc<ServerDescription> {
        self.next_matching(|e| match e {
            BackendEvent::Ready { description, .. } => Some(description),
            _ => None,
        })
        .await
    }

    /// The next `Down` (skipping other events).
    pub async fn down(&mut self) -> String {
        self.next_matching(|e| match e {
            BackendEvent::Down { reason, .. } => Some(reason),
            _ => None,
        })
        .await
    }

    /// The notifications up to and including the next one named `method` (skipping other events).
    pub async fn notifications_until(&mut self, method: &str) -> Vec<Notification> {
        let mut seen = Vec::new();
        self.next_matching(|e| match e {
            BackendEvent::Notification { notification, .. } => {
                let found = notification.method == method;
                seen.push(notification);
                found.then_some(())
            }
            _ => None,
        })
        .await;
        seen
    }

    /// The next notification named `method` (skipping other events).
    pub async fn notification(&mut self, method: &str) -> Notification {
        self.next_matching(|e| match e {
            BackendEvent::Notification { notification, .. } if notification.method == method => {
                Some(notification)
            }
            _ => None,
        })
        .await
    }
}

/// Waits until `f` holds (polling), failing the test after [`WAIT`].
pub async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Raw JSON.
pub fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("valid JSON")
}

/// `tools/call` of `name` with params given as JSON text.
pub fn tool_call(name: &str, params: &str) -> BackendRequest {
    let mut r = BackendRequest::new(Method::ToolsCall, Some(raw(params)));
    r.name = Some(name.to_owned());
    r
}

/// `tools/call` of `name` with `arguments` (JSON text).
pub fn call(name: &str, arguments: &str) -> BackendRequest {
    tool_call(
        name,
        &format!(
            r#"{{"name":{},"arguments":{arguments}}}"#,
            Value::from(name)
        ),
    )
}

/// The text of the first content block of a tool result.
pub fn text_of(result: &RawValue) -> String {
    let v: Value = serde_json::from_str(result.get()).expect("result is JSON");
    v["content"][0]["text"]
        .as_str()
        .expect("text content")
        .to_owned()
}

/// A failure's kind, for compact assertions.
pub fn kind(result: &Result<Box<RawValue>, Failure>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(f) => f.kind(),
    }
}

/// A fresh file path in the temporary directory, removed on drop.
pub struct TempLog {
    pub path: PathBuf,
}

impl TempLog {
    pub fn new(label: &str) -> TempLog {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "mcpgw-handlers-{label}-{}-{n}.log",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        TempLog { path }
    }

    /// The lines logged so far.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until a logged line satisfies `f`; that line.
    pub async fn wait_for(&self, f: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| f(l)) {
                return line;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting in {:?}: {:#?}",
                self.path,
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The logged lines that are JSON, parsed.
    pub fn messages(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for TempLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
