//! deploy/ as shipped is safe to expose: authentication on with keys whose digests come from a Secret (a
//! compose secret), the names clients use in `allowed_hosts`, Redis behind a password both sides read from
//! the same secret, nginx dropping a client's own `Forwarded` header, the probes on the paths that answer any
//! Host with the status alone, and Prometheus scraping the admin listener with a key of its own. The static
//! checks read the files; [`served_as_shipped`] asks the gateway the Deployment runs (deploy.rs).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{Image, deploy_file, manifest, manifest_named, mounted, port_of, strings, yaml};
use crate::support::{TempDir, client, into_reply, mcpgw, modern_request};

/// Where the config reads its secret files (the Secret mcpgw-auth; compose's secrets).
const AUTH_DIR: &str = "/run/secrets/mcpgw-auth/";

/// deploy/mcpgw.toml as the gateway reads it (TOML), as JSON.
fn config() -> Value {
    let table: toml::Table =
        toml::from_str(&deploy_file("mcpgw.toml")).expect("deploy/mcpgw.toml parses");
    serde_json::to_value(table).unwrap()
}

/// Every file under [`AUTH_DIR`] the config names: (the setting, the path).
fn secret_files(config: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, key) in config["auth"]["api_key"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(file) = key["digest_file"].as_str() {
            out.push((format!("auth.api_key[{i}].digest_file"), file.to_owned()));
        }
    }
    if let Some(file) = config["cluster"]["redis_password_file"].as_str() {
        out.push(("cluster.redis_password_file".to_owned(), file.to_owned()));
    }
    out
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The key of a principal in one of `[admin] groups` (`admin`) or in none (a client).
/// Whether `key`'s principal may scrape the admin listener (one of `[admin] groups` or `scrape_groups`).
fn is_admin(config: &Value, key: &Value) -> bool {
    let mut groups = strings(&config["admin"]["groups"]);
    if config["admin"]["scrape_groups"].is_array() {
        groups.extend(strings(&config["admin"]["scrape_groups"]));
    }
    key["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|g| groups.iter().any(|a| g == a))
}

#[test]
fn deploy_ships_auth_on_allowed_hosts_a_redis_password_and_probes_on_the_status_paths() {
    let config = config();

    // Authentication on, every key's digest from a secret file, none inline.
    let keys = config["auth"]["api_key"]
        .as_array()
        .expect("[[auth.api_key]]");
    assert!(!keys.is_empty());
    for key in keys {
        assert!(key.get("digest").is_none(), "an inline digest: {key}");
        let file = key["digest_file"].as_str().expect("digest_file");
        assert!(file.starts_with(AUTH_DIR), "{file}");
    }
    assert!(
        keys.iter().any(|k| !is_admin(&config, k)),
        "a client's key, of no admin group"
    );
    assert!(
        keys.iter().any(|k| is_admin(&config, k)),
        "a scraper's key, of an admin or scrape group"
    );
    // Allowed hosts: a list of names, not everything.
    let hosts = strings(&config["server"]["allowed_hosts"]);
    assert!(
        !hosts.is_empty() && !hosts.iter().any(|h| h == "*"),
        "{hosts:?}"
    );
    // Redis's password from a secret file, none in the URL.
    let redis = config["cluster"]["redis"]
        .as_str()
        .expect("[cluster] redis");
    assert!(!redis.contains('@'), "credentials in the URL: {redis}");
    let password_file = config["cluster"]["redis_password_file"]
        .as_str()
        .expect("[cluster] redis_password_file");
    assert!(password_file.starts_with(AUTH_DIR));
    let admin_port = port_of(config["admin"]["listen"].as_str().expect("[admin] listen"));

    // Kubernetes: the probes on /readyz (status alone) and /healthz; the secret files from one Secret.
    let deployment = manifest("kubernetes/deployment.yaml", "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    let admin = c["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "admin"))
        .expect("a container port named admin");
    assert_eq!(admin["containerPort"], u64::from(admin_port));
    let mut auth_secret = None;
    for (setting, file) in secret_files(&config) {
        let (volume, key) = mounted(pod, c, &file);
        let name = volume["secret"]["secretName"]
            .as_str()
            .unwrap_or_else(|| panic!("{setting}: {file} is not a Secret's"))
            .to_owned();
        let secret = manifest_named("kubernetes/secret.yaml", "Secret", &name);
        assert!(
            secret["stringData"][&key].is_string(),
            "{setting}: {name} has no {key}"
        );
        auth_secret.get_or_insert(name);
    }
    let auth_secret = auth_secret.expect("secret files");
    // Redis asks for the same password.
    let redis_pod = &manifest("kubernetes/redis.yaml", "Deployment")["spec"]["template"]["spec"];
    let rc = &redis_pod["containers"][0];
    let args = strings(&rc["args"]);
    let at = args
        .iter()
        .position(|a| a == "--requirepass")
        .unwrap_or_else(|| panic!("redis runs without --requirepass: {args:?}"));
    let variable = args[at + 1]
        .strip_prefix("$(")
        .and_then(|v| v.strip_suffix(')'))
        .unwrap_or_else(|| panic!("--requirepass {}: not from a variable", args[at + 1]));
    let env = |name: &str| -> Value {
        rc["env"]
            .as_array()
            .and_then(|vs| vs.iter().find(|v| v["name"] == name))
            .unwrap_or_else(|| panic!("redis has no variable {name}"))["valueFrom"]["secretKeyRef"]
            .clone()
    };
    let from = json!({"name": auth_secret, "key": file_name(password_file)});
    assert_eq!(env(variable), from, "redis's password is the gateway's");
    assert_eq!(
        env("REDISCLI_AUTH"),
        from,
        "the readiness probe's redis-cli authenticates"
    );

    // Compose: the same files from secret files; Redis's password from the same one.
    let compose = yaml::documents("compose.yaml", &deploy_file("compose.yaml"))
        .pop()
        .unwrap();
    let services = compose["services"].as_object().unwrap();
    let mut password_source = None;
    for (name, s) in services.iter().filter(|(k, _)| k.starts_with("mcpgw")) {
        for (setting, file) in secret_files(&config) {
            let secret = s["secrets"]
                .as_array()
                .and_then(|ss| ss.iter().find(|x| x["target"] == file.as_str()))
                .unwrap_or_else(|| panic!("{name}: no secret at {file} ({setting})"));
            let source = secret["source"].as_str().unwrap();
            assert!(
                compose["secrets"][source]["file"].is_string(),
                "{name}: {source}"
            );
            if file == password_file {
                password_source = Some(source.to_owned());
            }
        }
        assert!(
            s.get("healthcheck").is_none(),
            "{name}: the image's HEALTHCHECK applies"
        );
    }
    let password_source = password_source.unwrap();
    let redis = &services["redis"];
    assert!(
        strings(&redis["secrets"]).contains(&password_source),
        "redis's secrets"
    );
    let command = strings(&redis["command"]).join(" ");
    assert!(
        command.contains("--requirepass")
            && command.contains(&format!("/run/secrets/{password_source}")),
        "redis's command: {command}"
    );
    let health = strings(&redis["healthcheck"]["test"]).join(" ");
    assert!(
        health.contains("REDISCLI_AUTH"),
        "redis's healthcheck: {health}"
    );

    // The image's HEALTHCHECK probes /healthz.
    let image = Image::read();
    let url = image.healthcheck.last().unwrap();
    assert!(url.ends_with("/healthz"), "HEALTHCHECK {url}");

    // nginx drops a client's own Forwarded header.
    let nginx = deploy_file("nginx/mcpgw.conf");
    assert!(
        nginx
            .lines()
            .any(|l| l.split('#').next().unwrap_or_default().trim()
                == "proxy_set_header Forwarded \"\";"),
        "deploy/nginx/mcpgw.conf passes a client's Forwarded header on"
    );

    // Prometheus scrapes the admin port with a key of its own.
    let prometheus = yaml::documents(
        "prometheus/prometheus.yml",
        &deploy_file("prometheus/prometheus.yml"),
    )
    .pop()
    .unwrap();
    for job in prometheus["scrape_configs"].as_array().unwrap() {
        assert_eq!(job["metrics_path"], "/metrics", "{job}");
        assert!(
            job["authorization"]["credentials_file"].is_string(),
            "{job}"
        );
        let keeps_admin = job["relabel_configs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| {
                r["source_labels"] == json!(["__meta_kubernetes_pod_container_port_name"])
                    && r["regex"] == "admin"
            });
        let targets: Vec<String> = job["static_configs"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| strings(&t["targets"]))
            .collect();
        assert!(
            keeps_admin
                || (!targets.is_empty() && targets.iter().all(|t| port_of(t) == admin_port)),
            "{job}: not the admin listener"
        );
    }
}

/// The Secret mcpgw-auth's files, written where a test's config reads them.
pub(super) struct AuthSecret {
    dir: PathBuf,
    /// A client's key (its principal in no admin group).
    pub client_key: String,
    /// Prometheus's key (its principal in an admin group).
    pub metrics_key: String,
}

impl AuthSecret {
    /// As deploy/README.md makes them: a key per `[[auth.api_key]]`, its digest by `mcpgw auth hash-key`; a
    /// Redis password. Each file is one the Deployment mounts from a Secret that has it.
    pub(super) fn make(dir: &TempDir, pod: &Value, c: &Value, config_text: &str) -> AuthSecret {
        let config: Value =
            serde_json::to_value(toml::from_str::<toml::Table>(config_text).unwrap()).unwrap();
        let auth = AuthSecret::dir(dir, "auth");
        let (mut client_key, mut metrics_key) = (String::new(), String::new());
        for (i, key) in config["auth"]["api_key"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let file = key["digest_file"].as_str().unwrap();
            mounted(pod, c, file);
            let principal = key["principal"].as_str().unwrap();
            let secret = format!(
                "a-key-of-{principal}-{i}-in-a-deploy-test-{}",
                std::process::id()
            );
            std::fs::write(auth.join(file_name(file)), hash_key(&secret)).unwrap();
            if is_admin(&config, key) {
                metrics_key = secret;
            } else {
                client_key = secret;
            }
        }
        let password = config["cluster"]["redis_password_file"].as_str().unwrap();
        mounted(pod, c, password);
        std::fs::write(auth.join(file_name(password)), "a-redis-password\n").unwrap();
        AuthSecret {
            dir: auth,
            client_key,
            metrics_key,
        }
    }

    /// The shipped Secret's placeholder values as the files.
    pub(super) fn placeholders(
        dir: &TempDir,
        pod: &Value,
        c: &Value,
        config_text: &str,
    ) -> AuthSecret {
        let config: Value =
            serde_json::to_value(toml::from_str::<toml::Table>(config_text).unwrap()).unwrap();
        let auth = AuthSecret::dir(dir, "placeholder-auth");
        for (_, file) in secret_files(&config) {
            let (volume, key) = mounted(pod, c, &file);
            let secret = manifest_named(
                "kubernetes/secret.yaml",
                "Secret",
                volume["secret"]["secretName"].as_str().unwrap(),
            );
            let value = secret["stringData"][&key].as_str().unwrap();
            std::fs::write(auth.join(key), value).unwrap();
        }
        AuthSecret {
            dir: auth,
            client_key: String::new(),
            metrics_key: String::new(),
        }
    }

    fn dir(dir: &TempDir, name: &str) -> PathBuf {
        let path = dir.0.join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// `config` reading the secret files from here.
    pub(super) fn here(&self, config: &str) -> String {
        config.replace(AUTH_DIR, &format!("{}/", self.dir.display()))
    }
}

/// `mcpgw auth hash-key` of `key`, as it prints it.
fn hash_key(key: &str) -> String {
    let mut child = Command::new(mcpgw())
        .args(["auth", "hash-key"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), key.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "mcpgw auth hash-key: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// What the gateway the Deployment runs answers: a call without a key 401, a foreign `Host` 403, the
/// readiness probe any Host with the status alone, the admin listener's metrics to Prometheus's key only.
pub(super) fn served_as_shipped(base: &str, admin_port: u16, auth: &AuthSecret, readiness: &str) {
    let call = |headers: &[(&str, &str)]| {
        modern_request(
            &format!("{base}/mcp"),
            "tools/call",
            json!({"name": "demo__echo", "arguments": {"text": "x"}}),
            headers,
        )
        .status
    };
    assert_eq!(call(&[]), 401, "a call without a key");
    let bearer = format!("Bearer {}", auth.client_key);
    assert_eq!(call(&[("Authorization", bearer.as_str())]), 200);
    assert_eq!(
        call(&[
            ("Authorization", bearer.as_str()),
            ("Host", "attacker.example")
        ]),
        403,
        "a Host not in allowed_hosts (DNS rebinding)"
    );
    let probe = into_reply(
        client()
            .get(readiness)
            .header("Host", "10.1.2.3:7800")
            .send()
            .unwrap(),
    );
    assert_eq!(
        probe.status, 200,
        "the kubelet names the pod's address: {probe:?}"
    );
    assert_eq!(probe.json(), json!({"ready": true, "status": "ready"}));
    let metrics = |key: Option<&str>| {
        let mut req = client().get(format!("http://127.0.0.1:{admin_port}/metrics"));
        if let Some(key) = key {
            req = req.header("Authorization", format!("Bearer {key}"));
        }
        into_reply(req.send().unwrap())
    };
    assert_eq!(metrics(None).status, 401);
    assert_eq!(
        metrics(Some(&auth.client_key)).status,
        403,
        "a client is no scraper"
    );
    let scraped = metrics(Some(&auth.metrics_key));
    assert_eq!(scraped.status, 200, "{scraped:?}");
    // Prometheus's key scrapes and does nothing else (a scrape group, not an operator's).
    let view = into_reply(
        client()
            .get(format!("http://127.0.0.1:{admin_port}/admin/config"))
            .header("Authorization", format!("Bearer {}", auth.metrics_key))
            .send()
            .unwrap(),
    );
    assert_eq!(view.status, 403, "the scraper read the config: {view:?}");
}
