//! deploy/Dockerfile: its runtime stage read, and its ENTRYPOINT + CMD and HEALTHCHECK run as Docker would.

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::support::{TempDir, mcpgw, start, wait_ready};

/// What the runtime stage of deploy/Dockerfile says.
pub(super) struct Image {
    pub(super) entrypoint: Vec<String>,
    pub(super) cmd: Vec<String>,
    pub(super) healthcheck: Vec<String>,
    pub(super) healthcheck_timeout: Duration,
    pub(super) stop_signal: String,
    pub(super) exposed: u16,
}

/// The instructions of a Dockerfile, continued lines joined and comments dropped: (INSTRUCTION, the rest).
pub(super) fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        if let Some(continued) = trimmed.strip_suffix('\\') {
            current.push_str(continued);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        let (word, rest) = current
            .split_once(char::is_whitespace)
            .unwrap_or((current.as_str(), ""));
        out.push((word.to_ascii_uppercase(), rest.trim().to_owned()));
        current.clear();
    }
    assert!(
        current.is_empty(),
        "deploy/Dockerfile ends in a continued line"
    );
    out
}

/// An exec-form (JSON array) instruction: the runtime image has no shell to run a shell form.
pub(super) fn exec_form(what: &str, rest: &str) -> Vec<String> {
    serde_json::from_str(rest).unwrap_or_else(|e| {
        panic!(
            "deploy/Dockerfile's {what} is not a JSON array ({e}): {rest:?} (no shell in the image)"
        )
    })
}

/// A Docker duration (`5s`, `500ms`, `1m`).
pub(super) fn docker_duration(text: &str) -> Duration {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .unwrap_or_else(|_| panic!("duration {text:?}"));
    match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        _ => panic!("duration {text:?}: only ms, s and m are read here"),
    }
}

impl Image {
    pub(super) fn read() -> Image {
        let all = instructions(&deploy_file("Dockerfile"));
        let last_from = all
            .iter()
            .rposition(|(i, _)| i == "FROM")
            .expect("deploy/Dockerfile has a FROM");
        let stage = &all[last_from..];
        let last = |name: &str| {
            stage
                .iter()
                .rev()
                .find(|(i, _)| i == name)
                .map(|(_, rest)| rest.clone())
        };
        // distroless: no shell, so nothing may be RUN in the runtime stage.
        assert!(
            !stage.iter().any(|(i, _)| i == "RUN"),
            "the runtime stage RUNs something: {stage:?}"
        );
        let copies_binary = stage
            .iter()
            .any(|(i, rest)| i == "COPY" && rest.split_whitespace().last() == Some(IMAGE_BIN));
        assert!(
            copies_binary,
            "the runtime stage copies no binary to {IMAGE_BIN}"
        );
        let user = last("USER").expect("a USER");
        let uid: u32 = user.split(':').next().unwrap().parse().unwrap_or_else(|_| {
            panic!("USER {user:?} is not numeric (runAsNonRoot cannot verify a name)")
        });
        assert_ne!(uid, 0, "the image runs as root");
        let health = last("HEALTHCHECK").expect("a HEALTHCHECK");
        let (options, command) = health
            .split_once("CMD")
            .unwrap_or_else(|| panic!("HEALTHCHECK {health:?} has no CMD"));
        let mut timeout = Duration::from_secs(30);
        for option in options.split_whitespace() {
            if let Some(t) = option.strip_prefix("--timeout=") {
                timeout = docker_duration(t);
            }
        }
        let exposed = last("EXPOSE").expect("an EXPOSE");
        Image {
            entrypoint: exec_form("ENTRYPOINT", &last("ENTRYPOINT").expect("an ENTRYPOINT")),
            cmd: exec_form("CMD", &last("CMD").expect("a CMD")),
            healthcheck: exec_form("HEALTHCHECK", command.trim()),
            healthcheck_timeout: timeout,
            stop_signal: last("STOPSIGNAL").unwrap_or_else(|| "SIGTERM".to_owned()),
            exposed: exposed
                .trim_end_matches("/tcp")
                .parse()
                .unwrap_or_else(|_| panic!("EXPOSE {exposed:?}")),
        }
    }

    /// An argument vector of the image, run here: its binary the built one, its port `port`.
    pub(super) fn here(&self, argv: &[String], port: u16) -> Vec<String> {
        argv.iter()
            .map(|a| {
                if a == IMAGE_BIN {
                    mcpgw().display().to_string()
                } else {
                    with_port(a, self.exposed, port)
                }
            })
            .collect()
    }

    /// Runs the HEALTHCHECK's command against `port` as Docker would, within its --timeout.
    pub(super) fn healthcheck(&self, port: u16, cwd: &Path) -> (Option<ExitStatus>, String) {
        let argv = self.here(&self.healthcheck, port);
        run_bounded(image_command(&argv, &[], cwd), self.healthcheck_timeout)
    }
}

#[test]
pub(super) fn the_image_serves_the_demo_with_its_cmd_and_its_healthcheck_follows_it() {
    let image = Image::read();
    assert_eq!(
        image.entrypoint.first().map(String::as_str),
        Some(IMAGE_BIN),
        "ENTRYPOINT"
    );
    assert_eq!(
        image.healthcheck.first().map(String::as_str),
        Some(IMAGE_BIN),
        "the HEALTHCHECK runs the image's own binary (no curl in distroless)"
    );
    let port = free_port();
    let argv = image.here(
        &[image.entrypoint.clone(), image.cmd.clone()].concat(),
        port,
    );
    assert!(
        argv.iter().any(|a| a == &format!("0.0.0.0:{port}")),
        "the CMD listens on every interface on the EXPOSEd port {}: {:?}",
        image.exposed,
        image.cmd
    );
    assert!(
        image
            .healthcheck
            .iter()
            .any(|a| try_port(a) == Some(image.exposed)),
        "the HEALTHCHECK probes the EXPOSEd port {}: {:?}",
        image.exposed,
        image.healthcheck
    );
    // The probe gives up before Docker does: a hung gateway is reported by the probe, not killed with it.
    let probe_ms: u64 = match image.healthcheck.iter().position(|a| a == "--timeout-ms") {
        Some(i) => image.healthcheck[i + 1].parse().unwrap(),
        None => {
            let help = Command::new(mcpgw())
                .args(["probe", "--help"])
                .output()
                .unwrap();
            let help = String::from_utf8_lossy(&help.stdout).into_owned();
            help.split("[default: ")
                .nth(1)
                .and_then(|d| d.split(']').next())
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| {
                    panic!("no default --timeout-ms in `mcpgw probe --help`: {help}")
                })
        }
    };
    assert!(
        Duration::from_millis(probe_ms) < image.healthcheck_timeout,
        "the probe's deadline ({probe_ms} ms) is not below the HEALTHCHECK's --timeout {:?}",
        image.healthcheck_timeout
    );
    let dir = TempDir::new("deploy-image");

    // No config, no mounts: the embedded demo config.
    let mut gw = start(image_command(&argv, &[], &dir.0), "mcpgw listening on ");
    assert_eq!(
        gw.url,
        format!("http://0.0.0.0:{port}/mcp"),
        "a container's published port reaches only an address on every interface"
    );
    let base = format!("http://127.0.0.1:{port}");
    // The probe's answer is the status alone: no backend is named to whoever asks.
    let ready = wait_ready(&base);
    assert_eq!(ready, json!({"ready": true, "status": "ready"}));
    assert_eq!(
        echo(&base, "the demo config"),
        "the demo config",
        "the demo config's backend"
    );
    let (status, stderr) = image.healthcheck(port, &dir.0);
    assert!(
        status.is_some_and(|s| s.success()),
        "HEALTHCHECK on a serving gateway: {status:?} {stderr}"
    );
    assert_eq!(
        echo(&base, "through the image's CMD"),
        "through the image's CMD"
    );

    // `docker stop`: STOPSIGNAL, the drain (the demo config's: 5 s of grace), the exit.
    let signal = image.stop_signal.trim_start_matches("SIG").to_owned();
    gw.signal(&signal);
    let (status, stderr) = image.healthcheck(port, &dir.0);
    assert!(
        status.is_some_and(|s| s.success()),
        "HEALTHCHECK while draining (a draining container is not unhealthy): {status:?} {stderr}"
    );
    let exit = gw
        .wait_exit(Duration::from_secs(40))
        .expect("the gateway exits after its drain");
    assert!(exit.success(), "exit after SIG{signal}: {exit:?}");
    let started = Instant::now();
    let (status, stderr) = image.healthcheck(port, &dir.0);
    assert!(
        status.is_some_and(|s| !s.success()),
        "HEALTHCHECK once the gateway is gone: {status:?} after {:?} (its --timeout is {:?})",
        started.elapsed(),
        image.healthcheck_timeout
    );
    assert!(stderr.contains("mcpgw probe"), "{stderr}");
}
