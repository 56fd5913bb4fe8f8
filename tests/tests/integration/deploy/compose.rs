//! deploy/compose.yaml and nginx: three replicas behind nginx's upstream, their stop grace against the drain.

use std::time::Duration;

use super::*;

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
