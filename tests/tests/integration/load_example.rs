//! `mcpgw load` as a user meets it: the docs' load-testing example (docs/src/load-testing.md, the fenced
//! block after `<!-- test: load-example`) run with bash as pasted — only its ports (free loopback ports
//! chosen now), its binary (the one under test), its durations and its rate (short, for a debug build)
//! substituted — and the real binary against a port nobody listens on. Every run is bounded; the example's processes are
//! killed with their process group whatever happens.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// The whole example, processes started and stopped: well above its 3 s of load plus start-up.
const LIMIT: Duration = Duration::from_secs(120);

/// `text` with `from` replaced by `to`; `from` must be there (the docs and this test agree).
pub(crate) fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "the example no longer has {from:?}:\n{text}"
    );
    text.replace(from, to)
}

/// Every `flag VALUE` in `text` with VALUE replaced by `value`.
pub(crate) fn set_flag(text: &str, flag: &str, value: &str) -> String {
    let mut out = Vec::new();
    let mut words = text.split(' ').peekable();
    let mut found = false;
    while let Some(w) = words.next() {
        out.push(w.to_owned());
        if w == flag && words.peek().is_some() {
            words.next();
            out.push(value.to_owned());
            found = true;
        }
    }
    assert!(found, "the example has no {flag}");
    out.join(" ")
}

/// Waits for `child` within `limit`, then kills its whole process group (it leads one) either way.
pub(crate) fn wait_bounded(
    mut child: Child,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait().unwrap() {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    // Whatever is left of the group (the example's background servers when it failed half-way).
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
    (status, out.join().unwrap(), err.join().unwrap())
}

/// `script` run by bash in `dir`, in a process group of its own, within `limit` (see [`wait_bounded`]).
pub(crate) fn run_bash(
    script: &str,
    dir: &Path,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    // `mcpgw` is the built binary, first on the PATH, as an installed one would be.
    let path = format!(
        "{}:{}",
        mcpgw().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    wait_bounded(child, limit)
}

#[test]
fn the_docs_load_example_runs_as_pasted() {
    let (mock, gateway) = (free_port(), free_port());
    let mut script = doc_block("load-example", "sh");
    assert!(
        script.contains("\nmcpgw "),
        "the example runs mcpgw from the PATH"
    );
    script = substitute(&script, "127.0.0.1:7900", &format!("127.0.0.1:{mock}"));
    script = substitute(&script, "127.0.0.1:7820", &format!("127.0.0.1:{gateway}"));
    script = set_flag(&script, "--duration", "1s");
    script = set_flag(&script, "--rate", "200/s");
    let dir = TempDir::new("load-example");
    let (status, out, err) = run_bash(&script, &dir.0, LIMIT);
    let log = std::fs::read_to_string(dir.0.join("load-demo.log")).unwrap_or_default();
    let context = format!("script:\n{script}\nstdout:\n{out}\nstderr:\n{err}\ngateway log:\n{log}");
    let status =
        status.unwrap_or_else(|| panic!("the example did not end within {LIMIT:?}\n{context}"));
    assert!(status.success(), "{status}\n{context}");
    // Three reports: the gateway twice, the mock alone once; every request answered well.
    let headlines: Vec<&str> = out.lines().filter(|l| l.starts_with("requests ")).collect();
    assert_eq!(headlines.len(), 3, "{context}");
    for line in &headlines {
        assert!(line.contains("; errors 0 (0.00%);"), "{line}\n{context}");
        assert!(!line.starts_with("requests    0 "), "{line}\n{context}");
    }
    for url in [
        format!("127.0.0.1:{gateway}/mcp"),
        format!("127.0.0.1:{mock}/mcp"),
    ] {
        assert!(
            out.contains(&format!("mcpgw load: http://{url}")),
            "{url}\n{context}"
        );
    }
    // The mixed run's JSON report: both eras, every call ok.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["era"], "mixed", "{report}");
    let ok = report["outcomes"]["ok"].as_u64().unwrap_or_default();
    assert!(
        ok > 0 && Some(ok) == report["requests"].as_u64(),
        "{report}"
    );
    // The open-loop run went through every operation of its mix.
    for op in ["tools/list", "tools/call", "resources/read"] {
        assert!(out.contains(&format!("\n  {op} ")), "{op}\n{context}");
    }
}

#[test]
fn load_against_a_closed_port_says_connection_refused() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let bin = mcpgw();
    for era in ["modern", "legacy"] {
        let started = Instant::now();
        let child = Command::new(&bin)
            .args(["load", "--url", &url, "--era", era, "--no-progress"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let (status, _, err) = wait_bounded(child, Duration::from_secs(30));
        let status = status.expect("load ends at once against a closed port");
        assert!(!status.success(), "{err}");
        assert!(
            err.contains(&format!("no answer from {url}: ")) && err.contains("connection refused"),
            "{era}: {err}"
        );
        assert!(
            !err.contains("--era"),
            "{era}: no hint at eras when nothing answered: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{era}");
    }
}
