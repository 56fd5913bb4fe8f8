//! `deploy/`: the command lines of the image and of the Kubernetes Deployment, run against the built binary.
//! There is no Docker engine and no cluster here, so what they would run is run directly: deploy/Dockerfile's
//! ENTRYPOINT + CMD (no config mounted: the embedded demo config) and its HEALTHCHECK, the Deployment's args
//! on the ConfigMap's config with a key ring from `mcpgw cluster new-key`, its probes' paths, its preStop and
//! its termination grace against the config's drain; compose's replicas, their stop grace and nginx's upstream.
//! The image's `/usr/local/bin/mcpgw` is the built binary, its port 7800 a free port chosen at run time; the
//! listen addresses keep their 0.0.0.0 (every interface, as a container needs), and are reached on loopback.
//! deploy/check.sh checks the rest (schemas, linters, `nginx -t`, `mcpgw check`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod compose;
mod image;
mod kubernetes;
mod secure;
mod yaml;

use image::{Image, docker_duration};

use crate::support::{client, into_reply, modern_request};

/// Where the image puts the binary (deploy/Dockerfile's COPY; checked against it).
const IMAGE_BIN: &str = "/usr/local/bin/mcpgw";
/// The runtime image's PATH (distroless's default; it sets nothing else the gateway reads).
const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// After `drain_timeout_secs`, what a stopping gateway may still take before it exits: the answers of the
/// requests cut off (2 s, `serve::stop`'s CUT_OFF_WRITE) and the wait for their connections to close (2 s more).
const AFTER_DRAIN_TIMEOUT_SECS: u64 = 4;

fn deploy_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(name)
}

fn deploy_file(name: &str) -> String {
    std::fs::read_to_string(deploy_path(name)).unwrap_or_else(|e| panic!("deploy/{name}: {e}"))
}

/// A port free now on every interface (the listen addresses stay 0.0.0.0).
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `arg` with the port `from` (`:7800`, ending the argument or followed by `/`) replaced by `to`.
fn with_port(arg: &str, from: u16, to: u16) -> String {
    let needle = format!(":{from}");
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find(&needle) {
        let after = &rest[at + needle.len()..];
        let whole = after.is_empty() || after.starts_with('/');
        out.push_str(&rest[..at]);
        out.push_str(&if whole {
            format!(":{to}")
        } else {
            needle.clone()
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The port of a `host:port` or `scheme://host:port/path`.
fn try_port(addr: &str) -> Option<u16> {
    let authority = addr
        .split_once("://")
        .map_or(addr, |(_, rest)| rest.split('/').next().unwrap_or_default());
    authority.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

fn port_of(addr: &str) -> u16 {
    try_port(addr).unwrap_or_else(|| panic!("no port in {addr:?}"))
}

/// A command as the image runs it: its environment only the image's PATH and `env`.
fn image_command(argv: &[String], env: &[(String, String)], cwd: &Path) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", IMAGE_PATH);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `cmd` to its end, at most `within` (then it is killed): its status (`None`: still running then,
/// or it ended only after `within`) and its standard error.
fn run_bounded(mut cmd: Command, within: Duration) -> (Option<ExitStatus>, String) {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait().ok();
        let _ = tx.send((status, Instant::now()));
    });
    let status = match rx.recv_timeout(within) {
        Ok((status, ended)) if ended.duration_since(started) <= within => status,
        Ok(_) => None,
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            None
        }
    };
    let _ = waiter.join();
    (status, reader.join().unwrap_or_default())
}

/// A GET's status (0 when no connection could be made).
fn get_status(url: &str) -> u16 {
    client().get(url).send().map_or(0, |r| into_reply(r).status)
}

/// Polls `url` until it answers `want` (bounded); the status it last answered.
fn wait_status(url: &str, want: u16, within: Duration) -> u16 {
    let deadline = Instant::now() + within;
    loop {
        let status = get_status(url);
        if status == want || Instant::now() >= deadline {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn echo(base: &str, text: &str) -> Value {
    echo_as(base, text, &[])
}

/// The demo's echo with these headers (a key): what it answered.
fn echo_as(base: &str, text: &str, headers: &[(&str, &str)]) -> Value {
    let r = modern_request(
        &format!("{base}/mcp"),
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"text": text}}),
        headers,
    );
    r.json()["result"]["content"][0]["text"].clone()
}

// ---- deploy/mcpgw.toml and the ConfigMap ---------------------------------------------------------------------

/// A value of `[section] key` in the config's TOML (strings unquoted; comments dropped).
fn toml_value(text: &str, section: &str, key: &str) -> Option<String> {
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            current = t.trim_matches(['[', ']']).to_owned();
            continue;
        }
        if current != section {
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            continue;
        };
        if k.trim() != key {
            continue;
        }
        let v = v.trim();
        return Some(match v.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or_default().to_owned(),
            None => v.split('#').next().unwrap_or_default().trim().to_owned(),
        });
    }
    None
}

fn toml_secs(text: &str, key: &str) -> u64 {
    toml_value(text, "server", key)
        .unwrap_or_else(|| panic!("the config sets no [server] {key}"))
        .parse()
        .unwrap_or_else(|_| panic!("[server] {key}"))
}

/// `text` with the one line `key = …` of the config given `value` instead (TOML text).
fn set_toml(text: &str, key: &str, value: &str) -> String {
    set_toml_in(text, None, key, value)
}

/// [`set_toml`], of the key in `[section]` only when one is given.
fn set_toml_in(text: &str, section: Option<&str>, key: &str, value: &str) -> String {
    let mut found = 0;
    let mut current = String::new();
    let out: Vec<String> = text
        .lines()
        .map(|line| {
            let t = line.trim_start();
            if t.starts_with('[') {
                current = t.trim_matches(['[', ']']).to_owned();
            }
            let in_section = section.is_none_or(|s| s == current);
            match t.split_once('=') {
                Some((k, _)) if in_section && k.trim() == key && !t.starts_with('#') => {
                    found += 1;
                    format!("{key} = {value}")
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    assert_eq!(found, 1, "the config has one `{key} = …` line");
    out.join("\n") + "\n"
}

/// The document of a manifest file whose kind is `kind` and whose name is `name`.
pub(crate) fn manifest_named(file: &str, kind: &str, name: &str) -> Value {
    yaml::documents(file, &deploy_file(file))
        .into_iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("deploy/{file} holds no {kind} {name}"))
}

/// The documents `kubectl kustomize deploy/DIR` builds (offline; kubectl is Debian's `kubectl`, which
/// deploy/check.sh needs too).
fn kustomized(dir: &str) -> Vec<Value> {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(deploy_path(dir))
        .output()
        .unwrap_or_else(|e| panic!("kubectl kustomize (install kubectl): {e}"));
    assert!(
        out.status.success(),
        "kubectl kustomize deploy/{dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    yaml::documents(dir, &String::from_utf8_lossy(&out.stdout))
}

/// The one document of a manifest file whose kind is `kind`.
pub(crate) fn manifest(file: &str, kind: &str) -> Value {
    let docs = yaml::documents(file, &deploy_file(file));
    let mut of_kind = docs.into_iter().filter(|d| d["kind"] == kind);
    let doc = of_kind
        .next()
        .unwrap_or_else(|| panic!("deploy/{file} holds no {kind}"));
    assert!(of_kind.next().is_none(), "deploy/{file}: several {kind}s");
    doc
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("not a string: {s}"))
                .to_owned()
        })
        .collect()
}

/// The volume of `pod` mounted by `container` at the directory holding `path`: (the volume, the file's name).
fn mounted<'a>(pod: &'a Value, container: &Value, path: &str) -> (&'a Value, String) {
    let (dir, file) = path
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("{path} is not absolute"));
    let mount = container["volumeMounts"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["mountPath"] == dir))
        .unwrap_or_else(|| panic!("nothing is mounted at {dir} (for {path})"));
    assert!(
        mount.get("subPath").is_none(),
        "a subPath mount is not re-read"
    );
    let volume = pod["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == mount["name"]))
        .unwrap_or_else(|| panic!("no volume {}", mount["name"]));
    assert!(
        volume.pointer("/configMap/items").is_none() && volume.pointer("/secret/items").is_none(),
        "items rename the files: not read here"
    );
    (volume, file.to_owned())
}

fn path_of(probe: &Value) -> String {
    probe["httpGet"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("not an httpGet probe: {probe}"))
        .to_owned()
}

fn with_port_all(argv: &[String], from: u16, to: u16) -> Vec<String> {
    argv.iter().map(|a| with_port(a, from, to)).collect()
}

/// Every `exec.command` under `v` (probes, lifecycle handlers).
fn collect_execs(v: &Value, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == "exec" {
                    out.push(strings(&child["command"]));
                } else {
                    collect_execs(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_execs(i, out)),
        _ => {}
    }
}
