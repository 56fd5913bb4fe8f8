//! Start-up as a new user meets it (issue 10 §4): the listen address is bound before any backend starts,
//! a backend that is down at start is named on a start-up line, and every start-up error is said once, with
//! its context (the file, the address, both backends of a collision).

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// Runs `mcpgw serve` with `args` until it exits (bounded); its stderr.
fn serve_fails(args: &[&str]) -> String {
    let mut cmd = Command::new(mcpgw());
    cmd.arg("serve").args(args).env("RUST_LOG", "info");
    let (ok, _, stderr) = run_bounded(cmd, Duration::from_secs(30));
    assert!(!ok, "mcpgw serve {args:?} should fail:\n{stderr}");
    stderr
}

fn error_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("mcpgw: error: "))
        .collect()
}

#[test]
fn start_up_errors_are_said_once_with_their_context() {
    let dir = TempDir::new("startup-errors");
    // a missing file: its path, and the reason once
    let stderr = serve_fails(&["--config", "/nonexistent/mcpgw.toml"]);
    let lines = error_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("/nonexistent/mcpgw.toml"), "{stderr}");
    assert_eq!(
        lines[0].matches("No such file or directory").count(),
        1,
        "{stderr}"
    );

    // a collision: both backends, once
    let collide = dir.file(
        "collide.toml",
        "[[backend]]\nname = \"a\"\nbuiltin = [\"mock-backend\"]\nprefix = \"\"\n\n\
         [[backend]]\nname = \"b\"\nbuiltin = [\"mock-backend\"]\nprefix = \"\"\n",
    );
    let stderr = serve_fails(&[
        "--config",
        collide.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let lines = error_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("backends a and b"), "{stderr}");
    assert_eq!(lines[0].matches("collides").count(), 1, "{stderr}");
}

#[test]
fn the_listen_address_is_bound_before_any_backend_starts() {
    let dir = TempDir::new("startup-bind");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let config = dir.file(
        "mcpgw.toml",
        &format!(
            "[[backend]]\nname = \"m\"\ncommand = {}\n",
            stdio_mock_command(&[])
        ),
    );
    let stderr = serve_fails(&["--config", config.to_str().unwrap(), "--listen", &addr]);
    let lines = error_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
    assert_eq!(
        lines[0].matches("Address already in use").count(),
        1,
        "{stderr}"
    );
    assert!(
        !stderr.contains("backend process started"),
        "a backend started first:\n{stderr}"
    );
}

#[test]
fn a_backend_down_at_start_is_named_on_a_start_up_line() {
    let dir = TempDir::new("startup-down");
    let config = format!(
        "[[backend]]\nname = \"up\"\nbuiltin = [\"mock-backend\"]\n\n\
         [[backend]]\nname = \"gone\"\ncommand = [\"{}\"]\n",
        dir.0.join("no-such-server").display()
    );
    let path = dir.file("mcpgw.toml", &config);
    let mut child = Command::new(mcpgw())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // everything said up to the line that names the backend (the gateway listens first)
    let mut before = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Ok(line) =
        rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        let done = line.starts_with("mcpgw: backend gone is down at start");
        before.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        before.iter().any(|l| l.starts_with("mcpgw listening on ")),
        "{before:#?}"
    );
    let line = before
        .iter()
        .find(|l| l.starts_with("mcpgw: backend gone is down at start"))
        .unwrap_or_else(|| panic!("no start-up line names the backend:\n{}", before.join("\n")));
    assert!(line.contains("no-such-server"), "{line}");
    assert!(
        !before.iter().any(|l| l.starts_with("mcpgw: backend up ")),
        "{before:#?}"
    );
}

/// What broke: a backend that never answered delayed `listening` by 10 s (the era probe's connect timeout).
/// Now the gateway listens at once, the first catalog holds the backends that answered within
/// `list_timeout_ms`, and the silent one is down (named in the admin listener's `/readyz`) until it answers.
#[test]
fn a_backend_that_never_answers_does_not_delay_listening() {
    let dir = TempDir::new("startup-silent");
    // Accepts connections (the kernel's backlog does) and never answers a byte.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let config = format!(
        "[server]\nlist_timeout_ms = 1000\n\n{}\n[[backend]]\nname = \"silent\"\nurl = \"{silent_url}\"\n{ADMIN}",
        one_stdio_mock(&[])
    );
    let started = std::time::Instant::now();
    let gw = gateway(&config, &dir);
    let listening_after = started.elapsed();
    // Each backend's standing is the admin listener's `/readyz`.
    let base = admin_base(&gw);
    let ready = wait_ready(&base);
    let ready_after = started.elapsed();
    // Far below the probe's 10 s: the gateway did not wait for the silent backend to time out.
    assert!(
        listening_after < Duration::from_secs(6) && ready_after < Duration::from_secs(8),
        "listening after {listening_after:?}, ready after {ready_after:?}"
    );
    let backends = ready["backends"].as_array().unwrap();
    let state = |name: &str| {
        backends
            .iter()
            .find(|b| b["name"] == name)
            .map(|b| b["state"].clone())
    };
    assert_eq!(state("mock"), Some("up".into()), "{ready}");
    assert_eq!(state("silent"), Some("down".into()), "{ready}");
    // the backend that answered serves; the lists say who is missing
    let (names, list) = listed_tools(&gw.url);
    assert!(names.iter().any(|n| n == "m__echo"), "{list}");
    assert_eq!(
        list["result"]["_meta"]["io.mcpgw/degraded"],
        serde_json::json!({"missing": ["silent"], "stale": []}),
        "{list}"
    );
    drop(silent);
}

/// Before: `[[policy]]` rules naming principals, with no `[auth]` (or over stdio, where no request carries a
/// credential), started fine and hid every tool from every client. Now `serve` refuses to start, once,
/// naming the rule and why no request can have a principal.
#[test]
fn a_policy_no_rule_of_which_can_apply_stops_serve_naming_the_rule() {
    let dir = TempDir::new("startup-policy");
    let policy = "[[policy]]\nprincipal = \"alice\"\nallow = [\"*\"]\n";
    let key = format!(
        "[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"sha256:{}\"\n",
        "0".repeat(64)
    );
    let backend = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
    let no_auth = dir.file("no-auth.toml", &format!("{backend}{policy}"));
    let with_key = dir.file("with-key.toml", &format!("{backend}{policy}{key}"));
    // (args, what the one error line says)
    let cases = [
        (
            vec![
                "--config",
                no_auth.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ],
            "policy[0].principal: names principal \"alice\", but without [auth] no request has a principal",
        ),
        (
            vec!["--stdio", "--config", with_key.to_str().unwrap()],
            "policy[0].principal: names principal \"alice\", but over stdio no request has a principal",
        ),
    ];
    for (args, says) in cases {
        let stderr = serve_fails(&args);
        let lines = error_lines(&stderr);
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(lines[0].contains(says), "{args:?}: {stderr}");
    }
}
