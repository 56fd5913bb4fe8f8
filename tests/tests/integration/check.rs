//! `mcpgw check`, the real binary: a good config is reported and exits 0; a bad field, a backend that does not
//! start, an unreachable URL and a collision each exit non-zero with one line on standard error naming the
//! field or the backends, and every check ends within its backends' deadlines.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// What one `mcpgw check` run printed, how it exited and how long it took.
struct Checked {
    ok: bool,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Checked {
    fn problems(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !l.is_empty()).collect()
    }
}

/// Runs `mcpgw check ARGS`, killed if it runs longer than `limit`.
fn check(args: &[&str], limit: Duration) -> Checked {
    let started = Instant::now();
    let mut child = Command::new(mcpgw())
        .arg("check")
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpgw check starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcpgw check {args:?} ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Checked {
        ok: status.success(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        took: started.elapsed(),
    }
}

fn check_toml(dir: &TempDir, toml: &str, limit: Duration) -> Checked {
    let path = dir.file("mcpgw.toml", toml);
    check(&["--config", path.to_str().unwrap()], limit)
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_good_config_is_reported_with_era_transport_and_names_and_exits_0() {
    let dir = TempDir::new("check-good");
    let c = check_toml(&dir, &one_stdio_mock(&["--tools", "2"]), LIMIT);
    assert!(c.ok, "{}\n{}", c.stdout, c.stderr);
    assert!(c.stderr.is_empty(), "{}", c.stderr);
    for want in [
        "backend mock (command ",
        "2026-07-28 (modern) over stdio, server mock-backend",
        "m__echo",
        "m__tool_1",
        "prompts (1): m__greet",
        "mock://mock-backend/readme",
        "resource templates (1): mock://mock-backend/items/{id}",
        "ok: every backend started and listed, no collisions",
    ] {
        assert!(c.stdout.contains(want), "{want:?} not in:\n{}", c.stdout);
    }
}

/// Issue 35 §2: a legacy stdio backend lacking `resources/templates/list` is listed whole; one whose
/// `prompts/list` fails is listed but for its prompts, and the check names the list and exits non-zero.
#[test]
fn a_legacy_backend_without_a_list_method_is_listed_and_a_failing_list_is_named() {
    let dir = TempDir::new("check-lists");
    let lacking = one_stdio_mock(&[
        "--era",
        "legacy",
        "--unimplemented",
        "resources/templates/list",
    ]);
    let c = check_toml(&dir, &lacking, LIMIT);
    assert!(c.ok, "{}\n{}", c.stdout, c.stderr);
    for want in [
        "m__echo",
        "mock://mock-backend/readme",
        "ok: every backend started and listed",
    ] {
        assert!(c.stdout.contains(want), "{want:?} not in:\n{}", c.stdout);
    }
    let failing = one_stdio_mock(&["--era", "legacy", "--failing", "prompts/list"]);
    let c = check_toml(&dir, &failing, LIMIT);
    assert!(!c.ok, "{}\n{}", c.stdout, c.stderr);
    assert!(c.stdout.contains("m__echo"), "{}", c.stdout);
    assert!(
        c.stdout.contains("cannot list prompts/list: "),
        "{}",
        c.stdout
    );
    assert_eq!(c.problems().len(), 1, "{}", c.stderr);
    assert!(
        c.problems()[0].ends_with("backend mock: cannot list prompts/list: backend mock failed: prompts/list failed (--failing)"),
        "{}",
        c.stderr
    );
}

/// Issue 35 §2: `[[backend]] era` pins the generation spoken to a backend. A dual-era server is spoken to
/// in 2025-11-25 under `legacy` (2026-07-28 by default); a legacy-only one pinned to `modern` is down,
/// saying why, and never initialized; an in-process backend cannot be pinned to legacy.
#[test]
fn era_pins_the_generation_spoken_to_a_backend() {
    let dir = TempDir::new("check-era");
    // (mock flags, era line, what the report says)
    let table: [(&[&str], &str, &str); 4] = [
        (&[], "", "2026-07-28 (modern) over stdio"),
        (&[], "era = \"legacy\"\n", "2025-11-25 (legacy) over stdio"),
        (
            &["--era", "legacy"],
            "era = \"auto\"\n",
            "2025-11-25 (legacy) over stdio",
        ),
        (
            &["--era", "modern"],
            "era = \"modern\"\n",
            "2026-07-28 (modern) over stdio",
        ),
    ];
    for (flags, era, want) in table {
        let c = check_toml(&dir, &format!("{}{era}", one_stdio_mock(flags)), LIMIT);
        assert!(c.ok, "{era}{flags:?}: {}\n{}", c.stdout, c.stderr);
        assert!(
            c.stdout.contains(want),
            "{era}{flags:?}: {want:?} not in:\n{}",
            c.stdout
        );
    }
    let c = check_toml(
        &dir,
        &format!("{}era = \"modern\"\n", one_stdio_mock(&["--era", "legacy"])),
        LIMIT,
    );
    assert!(!c.ok, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stderr.contains("backend mock") && c.stderr.contains("era = \"modern\" is set, but"),
        "{}",
        c.stderr
    );
    let c = check_toml(
        &dir,
        "[[backend]]\nname = \"b\"\nbuiltin = [\"mock-backend\"]\nera = \"legacy\"\n",
        LIMIT,
    );
    assert!(!c.ok);
    assert!(c.stderr.contains("backend[0].era"), "{}", c.stderr);
    let c = check_toml(
        &dir,
        &format!("{}era = \"old\"\n", one_stdio_mock(&[])),
        LIMIT,
    );
    assert!(!c.ok);
    assert!(
        c.stderr.contains("auto") && c.stderr.contains("legacy"),
        "{}",
        c.stderr
    );
}

#[test]
fn the_demo_config_and_an_mcp_servers_file_check_too() {
    let c = check(&[], LIMIT);
    assert!(c.ok, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains("the built-in demo config") && c.stdout.contains("backend demo"),
        "{}",
        c.stdout
    );
    let dir = TempDir::new("check-mcp-json");
    let json = serde_json::json!({"mcpServers": {"mock": {
        "command": mcpgw().to_string_lossy(), "args": ["mock-backend", "--stdio"]}}});
    let path = dir.file("mcp.json", &json.to_string());
    let c = check(&["--mcp-json", path.to_str().unwrap()], LIMIT);
    assert!(c.ok, "{}\n{}", c.stdout, c.stderr);
    assert!(c.stdout.contains("mock__echo"), "{}", c.stdout);
}

#[test]
fn a_bad_field_is_one_line_naming_the_field_and_exits_non_zero() {
    let dir = TempDir::new("check-bad-field");
    // (config, what the one line must name)
    let table = [
        (
            format!("[server]\npage_size = 0\n\n{}", one_stdio_mock(&[])),
            "server.page_size",
        ),
        (
            format!(
                "[server]\ncors_allowed_origins = [\"*\"]\n\n{}",
                one_stdio_mock(&[])
            ),
            "server.cors_allowed_origins[0]",
        ),
        (format!("{}surprise = 1\n", one_stdio_mock(&[])), "surprise"),
        // A near miss is answered with the key meant.
        (
            format!("[server]\nlisen = \"7800\"\n\n{}", one_stdio_mock(&[])),
            "unknown field `lisen` (did you mean `listen`?)",
        ),
        (
            "[[backend]]\nname = \"x\"\nurl = \"ftp://x\"\n".to_owned(),
            "backend[0].url",
        ),
        // Before: every tool hidden from every client, and the check said ok.
        (
            format!(
                "{}\n[[policy]]\ngroup = \"ops\"\nallow = [\"*\"]\n",
                one_stdio_mock(&[])
            ),
            "policy[0].group: names group \"ops\", but without [auth] no request has a principal",
        ),
    ];
    for (toml, field) in table {
        let c = check_toml(&dir, &toml, LIMIT);
        assert!(!c.ok, "{toml}: exit 0");
        let problems = c.problems();
        assert_eq!(problems.len(), 1, "{toml}: {problems:?}");
        assert!(problems[0].contains(field), "{toml}: {problems:?}");
        assert!(c.stdout.is_empty(), "no backend is checked: {}", c.stdout);
    }
}

/// A valid config that deserves warnings (`check::warnings`) passes the check, each warning one line on
/// standard error: listening beyond loopback with neither `[auth]` nor `allowed_origins`.
#[test]
fn a_listener_beyond_loopback_is_warned_about_and_the_check_still_passes() {
    let dir = TempDir::new("check-warnings");
    let toml = format!(
        "[server]\nlisten = \"0.0.0.0:7800\"\n\n{}",
        one_stdio_mock(&[])
    );
    let c = check_toml(&dir, &toml, LIMIT);
    assert!(c.ok, "{}\n{}", c.stdout, c.stderr);
    let problems = c.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    let prefix = "mcpgw check: warning: [server] listen: listening on 0.0.0.0:7800 (beyond loopback) with no [auth]";
    assert!(problems[0].starts_with(prefix), "{problems:?}");
    assert!(problems[0].contains("strict = true"), "{problems:?}");
    let origins = "mcpgw check: warning: [server] allowed_origins: listening on 0.0.0.0:7800";
    assert!(problems[1].starts_with(origins), "{problems:?}");
    let admin =
        "mcpgw check: warning: [admin] listen: /metrics and the backends' detail of /readyz";
    assert!(problems[2].starts_with(admin), "{problems:?}");
    assert!(
        c.stdout
            .contains("ok: every backend started and listed, no collisions"),
        "{}",
        c.stdout
    );
}

#[test]
fn a_backend_whose_command_does_not_exist_is_named_and_the_others_still_checked() {
    let dir = TempDir::new("check-no-command");
    let toml = format!(
        "{}\n[[backend]]\nname = \"gone\"\ncommand = [\"/nonexistent/mcp-server\", \"--stdio\"]\n",
        one_stdio_mock(&[])
    );
    let c = check_toml(&dir, &toml, LIMIT);
    assert!(!c.ok, "{}", c.stdout);
    let problems = c.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("mcpgw check: backend gone: did not start: "),
        "{problems:?}"
    );
    assert!(c.stdout.contains("m__echo"), "{}", c.stdout);
    assert!(c.took < Duration::from_secs(15), "took {:?}", c.took);
}

#[test]
fn two_backends_exposing_the_same_name_are_a_collision_naming_both() {
    let dir = TempDir::new("check-collision");
    let cmd = stdio_mock_command(&[]);
    let toml = format!(
        "[[backend]]\nname = \"left\"\nprefix = \"\"\ncommand = {cmd}\n\n[[backend]]\nname = \"right\"\nprefix = \"\"\ncommand = {cmd}\n"
    );
    let c = check_toml(&dir, &toml, LIMIT);
    assert!(!c.ok, "{}", c.stdout);
    let problems = c.problems();
    assert!(!problems.is_empty());
    for p in &problems {
        assert!(p.starts_with("mcpgw check: catalog: "), "{p}");
        assert!(p.contains("backends left and right"), "{p}");
    }
    assert!(
        problems
            .iter()
            .any(|p| p.contains("tool name echo collides: backends left and right both expose it")),
        "{problems:?}"
    );
}

#[test]
fn an_unreachable_url_fails_the_check_within_its_connect_deadline() {
    let dir = TempDir::new("check-unreachable");
    // A port nothing listens on: refused at once.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    // A listener that accepts connections and never answers: only the connect deadline ends it.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let toml = format!(
        "[[backend]]\nname = \"refused\"\nurl = \"http://127.0.0.1:{closed_port}/mcp\"\n\n\
         [[backend]]\nname = \"silent\"\nurl = \"http://127.0.0.1:{silent_port}/mcp\"\n"
    );
    let c = check_toml(&dir, &toml, LIMIT);
    drop(silent);
    assert!(!c.ok, "{}", c.stdout);
    let problems = c.problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("mcpgw check: backend refused: did not start: "),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("mcpgw check: backend silent: did not start: "),
        "{problems:?}"
    );
    // The connect deadline (10 s) and the check's settling slack (1 s) bound it.
    assert!(c.took < Duration::from_secs(20), "took {:?}", c.took);
}
