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

use crate::support::{
    Running, TempDir, client, into_reply, mcpgw, modern_request, start, wait_ready,
};

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

// ---- deploy/Dockerfile -------------------------------------------------------------------------------------

/// What the runtime stage of deploy/Dockerfile says.
struct Image {
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    healthcheck: Vec<String>,
    healthcheck_timeout: Duration,
    stop_signal: String,
    exposed: u16,
}

/// The instructions of a Dockerfile, continued lines joined and comments dropped: (INSTRUCTION, the rest).
fn instructions(text: &str) -> Vec<(String, String)> {
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
fn exec_form(what: &str, rest: &str) -> Vec<String> {
    serde_json::from_str(rest).unwrap_or_else(|e| {
        panic!(
            "deploy/Dockerfile's {what} is not a JSON array ({e}): {rest:?} (no shell in the image)"
        )
    })
}

/// A Docker duration (`5s`, `500ms`, `1m`).
fn docker_duration(text: &str) -> Duration {
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
    fn read() -> Image {
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
    fn here(&self, argv: &[String], port: u16) -> Vec<String> {
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
    fn healthcheck(&self, port: u16, cwd: &Path) -> (Option<ExitStatus>, String) {
        let argv = self.here(&self.healthcheck, port);
        run_bounded(image_command(&argv, &[], cwd), self.healthcheck_timeout)
    }
}

#[test]
fn the_image_serves_the_demo_with_its_cmd_and_its_healthcheck_follows_it() {
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

#[test]
fn the_kubernetes_deployment_runs_with_the_configmap_its_probes_answer_and_its_grace_outlasts_the_drain()
 {
    let deployment = manifest("kubernetes/deployment.yaml", "Deployment");
    // The ConfigMap is generated by the base from deploy/kubernetes/mcpgw.toml (deploy/mcpgw.toml links
    // to it): built as `kubectl apply -k deploy/overlays/replicas` would, its name hashed.
    let built = kustomized("overlays/replicas");
    let configmap = built
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("the overlay has the generated ConfigMap")
        .clone();
    let built_deployment = built
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "mcpgw")
        .expect("the overlay has the gateway's Deployment");
    let generated = configmap["metadata"]["name"].as_str().unwrap();
    assert!(generated.starts_with("mcpgw-config-"), "{generated}");
    assert!(
        built_deployment["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["configMap"]["name"] == generated),
        "the built Deployment mounts the generated ConfigMap by its hashed name"
    );
    let image = Image::read();
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one container: {containers:?}");
    let c = &containers[0];

    // What runs: the image's ENTRYPOINT (unless `command` replaces it) with the args.
    let entry = match c.get("command") {
        Some(command) => strings(command),
        None => image.entrypoint.clone(),
    };
    let args = strings(&c["args"]);
    assert_eq!(entry, [IMAGE_BIN], "the container runs the image's binary");
    let config_at = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
        .unwrap_or_else(|| panic!("the args name no --config: {args:?}"))
        .clone();

    // The config is the ConfigMap's, mounted where the args say; it is deploy/mcpgw.toml.
    let (volume, key) = mounted(pod, c, &config_at);
    assert_eq!(volume["configMap"]["name"], "mcpgw-config");
    let config = configmap["data"][&key]
        .as_str()
        .unwrap_or_else(|| panic!("the ConfigMap has no {key}"))
        .to_owned();
    assert_eq!(
        config,
        deploy_file("mcpgw.toml"),
        "the ConfigMap holds deploy/mcpgw.toml"
    );

    // The key ring is the Secret's, mounted where the config's keys_file says.
    let keys_file = toml_value(&config, "cluster", "keys_file").expect("[cluster] keys_file");
    let (volume, key) = mounted(pod, c, &keys_file);
    let secret = manifest_named(
        "kubernetes/secret.yaml",
        "Secret",
        volume["secret"]["secretName"].as_str().expect("a Secret"),
    );
    let placeholder = secret["stringData"][&key]
        .as_str()
        .unwrap_or_else(|| panic!("the Secret has no {key}"))
        .to_owned();

    // Redis is the example's Service (redis.yaml), on its port.
    let redis_url = toml_value(&config, "cluster", "redis").expect("[cluster] redis");
    let redis_host = redis_url
        .strip_prefix("redis://")
        .and_then(|r| r.split(['/', ':']).next())
        .unwrap_or_default()
        .to_owned();
    let redis_service = manifest("kubernetes/redis.yaml", "Service");
    assert_eq!(redis_service["metadata"]["name"], redis_host.as_str());
    assert_eq!(
        redis_service["spec"]["ports"][0]["port"],
        u64::from(port_of(&redis_url))
    );

    // The listen port is the container's port the probes name, and the image's HEALTHCHECK port.
    let listen = toml_value(&config, "server", "listen").expect("[server] listen");
    assert!(
        listen.starts_with("0.0.0.0:"),
        "listens on every interface: {listen}"
    );
    let listen_port = port_of(&listen);
    assert_eq!(
        listen_port, image.exposed,
        "the config listens on the EXPOSEd port"
    );
    let probe_port = |probe: &str| -> u16 {
        let port = &c[probe]["httpGet"]["port"];
        let number = match port.as_str() {
            Some(name) => c["ports"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .unwrap_or_else(|| panic!("{probe}: no container port named {name}"))["containerPort"]
                .clone(),
            None => port.clone(),
        };
        u16::try_from(
            number
                .as_u64()
                .unwrap_or_else(|| panic!("{probe} port {port}")),
        )
        .unwrap()
    };
    assert_eq!(probe_port("readinessProbe"), listen_port);
    assert_eq!(probe_port("livenessProbe"), listen_port);
    for probe in ["readinessProbe", "livenessProbe"] {
        let scheme = c[probe]["httpGet"]["scheme"].as_str().unwrap_or("HTTP");
        assert_eq!(scheme, "HTTP", "{probe}: the config serves plain HTTP");
    }

    // Nothing the kubelet execs in the container may need a shell or a tool the image lacks.
    let mut execs = Vec::new();
    collect_execs(c, &mut execs);
    for command in &execs {
        assert_eq!(
            command.first().map(String::as_str),
            Some(IMAGE_BIN),
            "an exec in a distroless container: {command:?}"
        );
    }

    // preStop, then SIGTERM and the drain: all of it within the termination grace.
    let pre_stop = &c["lifecycle"]["preStop"];
    let pre_stop_secs = if let Some(secs) = pre_stop["sleep"]["seconds"].as_u64() {
        secs
    } else if pre_stop.is_null() {
        0
    } else {
        assert!(
            pre_stop.get("exec").is_some(),
            "a preStop the test does not know: {pre_stop}"
        );
        0
    };
    let grace = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    let drain_grace = toml_secs(&config, "drain_grace_secs");
    let drain_timeout = toml_secs(&config, "drain_timeout_secs");
    assert!(
        grace > drain_timeout + drain_grace,
        "terminationGracePeriodSeconds {grace} is not longer than drain_timeout_secs {drain_timeout} + \
         drain_grace_secs {drain_grace}"
    );
    assert!(
        grace > pre_stop_secs + drain_timeout + AFTER_DRAIN_TIMEOUT_SECS,
        "terminationGracePeriodSeconds {grace}: the preStop ({pre_stop_secs} s), the drain ({drain_timeout} s) \
         and its last answers ({AFTER_DRAIN_TIMEOUT_SECS} s) do not fit in it"
    );

    let dir = TempDir::new("deploy-kubernetes");
    let port = free_port();
    let here = |argv: &[String], config_path: &Path| -> Vec<String> {
        argv.iter()
            .map(|a| {
                if a == IMAGE_BIN {
                    mcpgw().display().to_string()
                } else if *a == config_at {
                    config_path.display().to_string()
                } else {
                    a.clone()
                }
            })
            .collect()
    };
    let env: Vec<(String, String)> = c["env"]
        .as_array()
        .map(|vars| {
            vars.iter()
                .map(|v| {
                    (
                        v["name"].as_str().unwrap().to_owned(),
                        v["value"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let argv = [entry.clone(), args.clone()].concat();
    let binary = config.replace(IMAGE_BIN, &mcpgw().display().to_string());
    assert_ne!(
        binary, config,
        "the config's demo backend runs the image's binary"
    );
    let closed_redis = format!("\"redis://127.0.0.1:{}\"", free_port());
    let local = set_toml_in(
        &binary,
        Some("server"),
        "listen",
        &format!("\"0.0.0.0:{port}\""),
    );
    let admin_port = free_port();
    let local = set_toml_in(
        &local,
        Some("admin"),
        "listen",
        &format!("\"0.0.0.0:{admin_port}\""),
    );
    // The Redis link is lazy (nothing is sent before a session needs it): a closed port is enough to start.
    let local = set_toml(&local, "redis", &closed_redis);
    // The Secret mcpgw-auth, as deploy/README.md makes it: keys' digests, Redis's password.
    let auth = secure::AuthSecret::make(&dir, pod, c, &config);
    let shipped_auth = local.clone();
    let local = auth.here(&local);

    // The Secret as shipped holds no key: the gateway refuses it rather than serve with a placeholder.
    let ring = dir.file("placeholder-keys", &placeholder);
    let refused = set_toml(
        &local,
        "keys_file",
        &format!("{:?}", ring.display().to_string()),
    );
    let path = dir.file("placeholder.toml", &refused);
    let (status, stderr) = run_bounded(
        image_command(&here(&argv, &path), &env, &dir.0),
        Duration::from_secs(20),
    );
    assert!(
        status.is_some_and(|s| !s.success()) && stderr.contains("holds no key"),
        "serving with the Secret's placeholder: {status:?} {stderr}"
    );

    // The Secret mcpgw-auth as shipped holds placeholders: refused too, naming the setting.
    let placeholders = secure::AuthSecret::placeholders(&dir, pod, c, &config);
    let path = dir.file("placeholder-auth.toml", &placeholders.here(&shipped_auth));
    let (status, stderr) = run_bounded(
        image_command(&here(&argv, &path), &env, &dir.0),
        Duration::from_secs(20),
    );
    assert!(
        status.is_some_and(|s| !s.success()) && stderr.contains("digest_file"),
        "serving with mcpgw-auth's placeholders: {status:?} {stderr}"
    );

    // A key ring line from `mcpgw cluster new-key`, as deploy/README.md makes the Secret.
    let new_key = Command::new(mcpgw())
        .args(["cluster", "new-key"])
        .output()
        .expect("mcpgw cluster new-key runs");
    assert!(new_key.status.success());
    let line = String::from_utf8(new_key.stdout).unwrap();
    let (id, secret_b64) = line.trim().split_once(':').expect("ID:BASE64");
    assert!(!id.is_empty() && secret_b64.len() == 44, "{line:?}");
    let ring = dir.file("session-keys", &line);
    let served = set_toml(
        &local,
        "keys_file",
        &format!("{:?}", ring.display().to_string()),
    );
    let path = dir.file("mcpgw.toml", &served);
    let mut gw: Running = start(
        image_command(&here(&argv, &path), &env, &dir.0),
        "mcpgw listening on ",
    );
    assert_eq!(gw.url, format!("http://0.0.0.0:{port}/mcp"));
    let base = format!("http://127.0.0.1:{port}");
    let readiness = format!("{base}{}", path_of(&c["readinessProbe"]));
    let liveness = format!("{base}{}", path_of(&c["livenessProbe"]));
    assert_eq!(
        wait_status(&readiness, 200, Duration::from_secs(30)),
        200,
        "readiness {} on a started gateway",
        path_of(&c["readinessProbe"])
    );
    assert_eq!(
        get_status(&liveness),
        200,
        "liveness {}",
        path_of(&c["livenessProbe"])
    );
    let bearer = format!("Bearer {}", auth.client_key);
    assert_eq!(
        echo_as(
            &base,
            "through the Deployment",
            &[("Authorization", bearer.as_str())]
        ),
        "through the Deployment"
    );
    secure::served_as_shipped(&base, admin_port, &auth, &readiness);
    for command in &execs {
        let (status, stderr) = run_bounded(
            image_command(
                &with_port_all(&here(command, &path), listen_port, port),
                &env,
                &dir.0,
            ),
            Duration::from_secs(10),
        );
        assert!(
            status.is_some_and(|s| s.success()),
            "{command:?}: {status:?} {stderr}"
        );
    }

    // After the preStop the kubelet sends SIGTERM: not ready at once (the Service stops sending), still
    // alive through the drain (the pod is not restarted while it drains), then a clean exit.
    gw.signal("TERM");
    let signalled = Instant::now();
    assert_eq!(
        wait_status(&readiness, 503, Duration::from_secs(3)),
        503,
        "readiness {} once draining",
        path_of(&c["readinessProbe"])
    );
    assert_eq!(
        get_status(&liveness),
        200,
        "liveness {} while draining",
        path_of(&c["livenessProbe"])
    );
    assert!(
        signalled.elapsed() < Duration::from_secs(drain_grace),
        "the checks while draining took longer than the grace: they proved nothing"
    );
    let exit = gw
        .wait_exit(Duration::from_secs(
            drain_timeout + AFTER_DRAIN_TIMEOUT_SECS + 10,
        ))
        .expect("the gateway exits after its drain");
    assert!(exit.success(), "exit after SIGTERM: {exit:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(grace.saturating_sub(pre_stop_secs)),
        "the drain took {:?}, beyond the termination grace",
        signalled.elapsed()
    );
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

mod secure;

// ---- deploy/compose.yaml and nginx ---------------------------------------------------------------------------

#[test]
fn compose_runs_three_replicas_behind_nginx_and_outwaits_their_drain() {
    let compose = yaml::documents("compose.yaml", &deploy_file("compose.yaml"))
        .pop()
        .expect("a document");
    let config = deploy_file("mcpgw.toml");
    let image = Image::read();
    let services = compose["services"].as_object().expect("services");
    let replicas: Vec<&String> = services.keys().filter(|k| k.starts_with("mcpgw")).collect();
    assert_eq!(replicas.len(), 3, "three replicas: {replicas:?}");
    let drain_grace = toml_secs(&config, "drain_grace_secs");
    let drain_timeout = toml_secs(&config, "drain_timeout_secs");
    let keys_file = toml_value(&config, "cluster", "keys_file").expect("[cluster] keys_file");
    let listen_port = port_of(&toml_value(&config, "server", "listen").expect("listen"));
    assert_eq!(
        listen_port, image.exposed,
        "the image's HEALTHCHECK probes the port the config listens on"
    );
    for name in &replicas {
        let s = &services[name.as_str()];
        // `docker compose stop`: SIGTERM, then SIGKILL after stop_grace_period (no preStop here).
        let stop = docker_duration(s["stop_grace_period"].as_str().expect("stop_grace_period"));
        assert!(
            stop > Duration::from_secs(drain_timeout + drain_grace)
                && stop > Duration::from_secs(drain_timeout + AFTER_DRAIN_TIMEOUT_SECS),
            "{name}: stop_grace_period {stop:?} is not longer than the drain ({drain_timeout} s)"
        );
        let command = strings(&s["command"]);
        let config_at = command
            .iter()
            .position(|a| a == "--config")
            .and_then(|i| command.get(i + 1))
            .unwrap_or_else(|| panic!("{name}: no --config"));
        let mounted = strings(&s["volumes"])
            .iter()
            .find_map(|v| {
                let mut parts = v.split(':');
                let source = parts.next()?;
                (parts.next()? == config_at).then(|| source.to_owned())
            })
            .unwrap_or_else(|| panic!("{name}: nothing mounted at {config_at}"));
        assert_eq!(
            deploy_path(&mounted).canonicalize().unwrap(),
            deploy_path("mcpgw.toml").canonicalize().unwrap()
        );
        let secret = &s["secrets"][0];
        assert_eq!(secret["target"], keys_file.as_str(), "{name}: the key ring");
        assert!(
            compose["secrets"][secret["source"].as_str().unwrap()]["file"].is_string(),
            "{name}: its key ring comes from a secret file"
        );
        assert_eq!(s["depends_on"]["redis"]["condition"], "service_healthy");
    }
    let redis_url = toml_value(&config, "cluster", "redis").expect("[cluster] redis");
    assert_eq!(
        redis_url, "redis://redis:6379",
        "the compose file's redis service"
    );
    assert!(services.contains_key("redis"));

    // nginx's upstream is the replicas, on the port they listen on.
    let upstream = deploy_file("nginx/upstream.conf");
    let mut servers: Vec<String> = upstream
        .lines()
        .filter_map(|l| l.trim().strip_prefix("server "))
        .map(|s| s.trim_end_matches(';').trim().to_owned())
        .collect();
    servers.sort();
    let mut expected: Vec<String> = replicas
        .iter()
        .map(|r| format!("{r}:{listen_port}"))
        .collect();
    expected.sort();
    assert_eq!(servers, expected, "deploy/nginx/upstream.conf");
    let nginx = &services["nginx"];
    let mounts = strings(&nginx["volumes"]);
    assert!(
        mounts
            .iter()
            .any(|m| m.starts_with("./nginx/upstream.conf:"))
            && mounts.iter().any(|m| m.starts_with("./nginx/mcpgw.conf:")),
        "{mounts:?}"
    );
}

/// The YAML of `deploy/`, read without a YAML library (the tests crate has none): block mappings and
/// sequences, `|` block scalars, flow sequences and mappings in JSON syntax, quoted and plain scalars,
/// comments, `---`, anchors with aliases and `<<` merges. Anything else panics naming its line: a file this
/// cannot read fails the test, it is never read wrong.
mod yaml {
    use std::collections::{HashMap, HashSet};

    use serde_json::{Map, Value};

    pub fn documents(name: &str, text: &str) -> Vec<Value> {
        let mut p = Parser {
            name,
            lines: text.lines().map(str::to_owned).collect(),
            pos: 0,
            anchors: HashMap::new(),
        };
        let mut docs = Vec::new();
        loop {
            p.skip_blank();
            let Some(line) = p.lines.get(p.pos) else {
                break;
            };
            if line.trim_end() == "---" {
                p.pos += 1;
                continue;
            }
            match p.peek() {
                Some((0, _)) => docs.push(p.node(0)),
                _ => p.fail("a document starts indented"),
            }
        }
        docs
    }

    struct Parser<'a> {
        name: &'a str,
        lines: Vec<String>,
        pos: usize,
        anchors: HashMap<String, Value>,
    }

    fn is_item(content: &str) -> bool {
        content == "-" || content.starts_with("- ")
    }

    /// The text before a comment (`#` at the start or after a space, outside quotes).
    fn strip_comment(s: &str) -> &str {
        let (mut single, mut double, mut escaped) = (false, false, false);
        let mut previous = ' ';
        for (i, c) in s.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if double => escaped = true,
                '"' if !single => double = !double,
                '\'' if !double => single = !single,
                '#' if !single && !double && previous.is_whitespace() => return &s[..i],
                _ => {}
            }
            previous = c;
        }
        s
    }

    /// `key: rest` (the colon outside quotes, followed by a space or the end).
    fn split_key(content: &str) -> Option<(String, &str)> {
        if content.starts_with(['[', '{']) {
            return None;
        }
        let (mut single, mut double) = (false, false);
        let bytes = content.as_bytes();
        for (i, c) in content.char_indices() {
            match c {
                '"' if !single => double = !double,
                '\'' if !double => single = !single,
                ':' if !single && !double && (i + 1 == bytes.len() || bytes[i + 1] == b' ') => {
                    let key = content[..i].trim();
                    let key = match scalar(key) {
                        Ok(Value::String(k)) => k,
                        _ => key.to_owned(),
                    };
                    return (!key.is_empty()).then_some((key, &content[i + 1..]));
                }
                _ => {}
            }
        }
        None
    }

    /// An inline scalar or flow collection.
    fn scalar(text: &str) -> Result<Value, String> {
        let t = text.trim();
        if t.starts_with('"') {
            return serde_json::from_str::<String>(t)
                .map(Value::String)
                .map_err(|e| format!("{t}: {e}"));
        }
        if let Some(inner) = t.strip_prefix('\'') {
            let inner = inner
                .strip_suffix('\'')
                .ok_or(format!("unclosed quote: {t}"))?;
            return Ok(Value::String(inner.replace("''", "'")));
        }
        if t.starts_with(['[', '{']) {
            return serde_json::from_str(t)
                .map_err(|e| format!("a flow collection not in JSON syntax: {t}: {e}"));
        }
        if t.starts_with(['&', '*', '!', '%', '@', '`', '|', '>']) {
            return Err(format!("not read here: {t}"));
        }
        Ok(match t {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" | "~" => Value::Null,
            _ if !t.is_empty()
                && t.bytes().all(|b| b.is_ascii_digit())
                && (t == "0" || !t.starts_with('0')) =>
            {
                Value::from(t.parse::<u64>().map_err(|e| e.to_string())?)
            }
            _ => Value::String(t.to_owned()),
        })
    }

    impl Parser<'_> {
        fn fail(&self, why: &str) -> ! {
            panic!("deploy/{}: line {}: {why}", self.name, self.pos + 1)
        }

        fn skip_blank(&mut self) {
            while let Some(line) = self.lines.get(self.pos) {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }

        /// The next significant line of the document: its indentation and its content (no comment).
        fn peek(&mut self) -> Option<(usize, String)> {
            self.skip_blank();
            let line = self.lines.get(self.pos)?;
            if line.trim_end() == "---" {
                return None;
            }
            let indent = line.len() - line.trim_start_matches(' ').len();
            if line[indent..].starts_with('\t') {
                self.fail("a tab in the indentation");
            }
            Some((indent, strip_comment(&line[indent..]).trim_end().to_owned()))
        }

        /// The block node whose first line is indented `min` or more (null when there is none).
        fn node(&mut self, min: usize) -> Value {
            match self.peek() {
                Some((indent, content)) if indent >= min => {
                    if is_item(&content) {
                        self.sequence(indent)
                    } else {
                        self.mapping(indent)
                    }
                }
                _ => Value::Null,
            }
        }

        fn mapping(&mut self, indent: usize) -> Value {
            let mut map = Map::new();
            let mut explicit = HashSet::new();
            while let Some((i, content)) = self.peek() {
                if i < indent {
                    break;
                }
                if i > indent || is_item(&content) {
                    self.fail("unexpected indentation or list item in a mapping");
                }
                let Some((key, rest)) = split_key(&content) else {
                    self.fail("expected `key: value`");
                };
                let rest = rest.to_owned();
                self.pos += 1;
                let value = self.value(&rest, indent);
                if key == "<<" {
                    let Value::Object(merged) = value else {
                        self.fail("`<<` merges a mapping");
                    };
                    for (k, v) in merged {
                        if !explicit.contains(&k) {
                            map.insert(k, v);
                        }
                    }
                } else {
                    if !explicit.insert(key.clone()) {
                        self.fail(&format!("the key {key} twice"));
                    }
                    map.insert(key, value);
                }
            }
            Value::Object(map)
        }

        fn sequence(&mut self, indent: usize) -> Value {
            let mut items = Vec::new();
            while let Some((i, content)) = self.peek() {
                if i < indent || (i == indent && !is_item(&content)) {
                    break;
                }
                if i > indent {
                    self.fail("unexpected indentation in a list");
                }
                let after = content[1..].trim_start();
                let column = indent + content.len() - after.len();
                if after.is_empty() {
                    self.pos += 1;
                    items.push(self.node(indent + 1));
                } else if split_key(after).is_some() || is_item(after) {
                    // A mapping (or a list) starting on the item's line: read from the item text's column.
                    let raw = self.lines[self.pos].clone();
                    self.lines[self.pos] = format!("{}{}", " ".repeat(column), &raw[column..]);
                    items.push(self.node(column));
                } else {
                    let after = after.to_owned();
                    self.pos += 1;
                    items.push(self.inline(&after));
                }
            }
            Value::Array(items)
        }

        /// An alias or an inline scalar.
        fn inline(&self, text: &str) -> Value {
            if let Some(alias) = text.trim().strip_prefix('*') {
                return match self.anchors.get(alias) {
                    Some(v) => v.clone(),
                    None => self.fail(&format!("unknown alias *{alias}")),
                };
            }
            scalar(text).unwrap_or_else(|why| self.fail(&why))
        }

        /// The value of a `key:` at `indent`; `rest` follows the colon on its line.
        fn value(&mut self, rest: &str, indent: usize) -> Value {
            let rest = rest.trim();
            if let Some(anchored) = rest.strip_prefix('&') {
                let (name, after) = anchored.split_once(' ').unwrap_or((anchored, ""));
                let v = self.value(after, indent);
                self.anchors.insert(name.to_owned(), v.clone());
                return v;
            }
            if rest.is_empty() {
                return match self.peek() {
                    Some((i, _)) if i > indent => self.node(i),
                    Some((i, c)) if i == indent && is_item(&c) => self.sequence(i),
                    _ => Value::Null,
                };
            }
            if rest.starts_with('|') {
                return self.block_scalar(rest, indent);
            }
            self.inline(rest)
        }

        /// A `|` block scalar (clip, `-` strip or `+` keep) below a key at `indent`.
        fn block_scalar(&mut self, header: &str, indent: usize) -> Value {
            let chomp = match header {
                "|" => ' ',
                "|-" => '-',
                "|+" => '+',
                _ => self.fail(&format!("block scalar header {header:?} not read here")),
            };
            let mut block_indent = None;
            let mut text = String::new();
            while let Some(raw) = self.lines.get(self.pos) {
                if raw.trim().is_empty() {
                    text.push('\n');
                    self.pos += 1;
                    continue;
                }
                let i = raw.len() - raw.trim_start_matches(' ').len();
                let at = *block_indent.get_or_insert(i);
                if i <= indent || i < at {
                    break;
                }
                text.push_str(&raw[at..]);
                text.push('\n');
                self.pos += 1;
            }
            let body = text.trim_end_matches('\n');
            Value::String(match chomp {
                '-' => body.to_owned(),
                '+' => text,
                _ if body.is_empty() => String::new(),
                _ => format!("{body}\n"),
            })
        }
    }

    #[test]
    fn reads_what_deploy_uses_and_nothing_wrong() {
        let text = "# a comment\n\
                    base: &base\n  a: 1\n  list: [\"p\", \"q\"]\n\
                    merged:\n  <<: *base\n  a: 2 # explicit wins\n\
                    seq:\n- name: n\n  v: \"quoted: yes # no comment\"\n- plain:colon\n- 'it''s'\n\
                    nested:\n  items:\n    - x: 1\n      y: [1, 2]\n    - 0440\n\
                    block: |\n  line one\n    indented # kept\n\n  last\n\
                    empty: {}\n\
                    ---\n\
                    second: true\n";
        let docs = documents("test.yaml", text);
        assert_eq!(docs.len(), 2);
        let d = &docs[0];
        assert_eq!(d["base"], serde_json::json!({"a": 1, "list": ["p", "q"]}));
        assert_eq!(d["merged"], serde_json::json!({"a": 2, "list": ["p", "q"]}));
        assert_eq!(
            d["seq"],
            serde_json::json!([{"name": "n", "v": "quoted: yes # no comment"}, "plain:colon", "it's"])
        );
        assert_eq!(
            d["nested"]["items"],
            serde_json::json!([{"x": 1, "y": [1, 2]}, "0440"])
        );
        assert_eq!(d["block"], "line one\n  indented # kept\n\nlast\n");
        assert_eq!(d["empty"], serde_json::json!({}));
        assert_eq!(docs[1]["second"], true);
        for bad in [
            "a: >\n  folded\n",
            "a: 1\na: 2\n",
            "a:\n  - 1\n  b: 2\n",
            "a: *nowhere\n",
        ] {
            assert!(
                std::panic::catch_unwind(|| documents("bad.yaml", bad)).is_err(),
                "{bad:?} must not be read"
            );
        }
    }
}
