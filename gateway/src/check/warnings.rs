//! Warnings on a config that is valid: a setting a changed default affects (CHANGELOG, "Changed defaults"),
//! or a choice an operator should make on purpose. `mcpgw check` prints them on standard error and still
//! exits 0; `serve` logs each at `warn` when it starts. Pure: a config in, lines out.

use crate::config::Config;

/// One warning: the setting it is about (`[section] key`) and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The setting, as the docs name it (`[server] listen`).
    pub setting: &'static str,
    /// What the config does and what the operator may want instead (lower case, one sentence or two).
    pub text: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.setting, self.text)
    }
}

/// A rule: `Some` when the config deserves the warning.
type Rule = fn(&Config) -> Option<Warning>;

/// Every rule, in the order their warnings are told.
const RULES: &[Rule] = &[
    beyond_loopback_without_auth,
    metrics_without_admin_listener,
    admin_beyond_loopback_in_clear,
    h2_streams_bounded,
    admin_host_names_checked,
];

/// Every warning `config` deserves (none for a config that makes every choice on purpose).
pub fn warnings(config: &Config) -> Vec<Warning> {
    RULES.iter().filter_map(|rule| rule(config)).collect()
}

/// Listening beyond loopback with no `[auth]`: anyone who reaches the address calls every tool.
fn beyond_loopback_without_auth(config: &Config) -> Option<Warning> {
    let listen = config.server.listen;
    (!listen.ip().is_loopback() && !config.auth.enabled()).then(|| Warning {
        setting: "[server] listen",
        text: format!(
            "listening on {listen} (beyond loopback) with no [auth]: every client that reaches it may call every tool; configure [[auth.api_key]] or [auth.jwt], or set [server] strict = true to refuse this"
        ),
    })
}

/// No `[admin] listen` on a gateway that is scraped or deployed: `/metrics` and `/readyz`'s detail were the
/// front door's and are now served by the admin listener only (CHANGELOG, "Changed defaults").
fn metrics_without_admin_listener(config: &Config) -> Option<Warning> {
    let deployed = !config.server.listen.ip().is_loopback();
    let scraped = config.telemetry.per_tool_metrics;
    (config.admin.listen.is_none() && (deployed || scraped)).then(|| Warning {
        setting: "[admin] listen",
        text: "/metrics and the backends' detail of /readyz are served by the admin listener only, and there is none: set [admin] listen (e.g. \"127.0.0.1:7801\"; beyond loopback with [auth] and [admin] groups) and scrape it there; the front door's /readyz says ready or not, nothing more".to_owned(),
    })
}

/// An admin listener beyond loopback with no TLS on the front door to lend it: the credentials of `[admin]
/// groups`, the sessions and the config it shows cross the network in clear.
fn admin_beyond_loopback_in_clear(config: &Config) -> Option<Warning> {
    let listen = config.admin.listen?;
    let tls = crate::config::server_files(&config.server).is_some();
    (!listen.ip().is_loopback() && !tls).then(|| Warning {
        setting: "[admin] listen",
        text: format!(
            "the admin view listens on {listen} (beyond loopback) in plain HTTP: its credentials and what it shows cross the network in clear; set [server] tls_cert_file and tls_key_file (the admin listener serves the front door's certificate beyond loopback), or keep it on loopback behind a TLS proxy or a mesh"
        ),
    })
}

/// TLS on the front door (HTTP/2 by ALPN) without `h2_max_concurrent_streams`: a connection's requests in
/// progress at once are now bounded by the default (CHANGELOG, "Changed defaults").
fn h2_streams_bounded(config: &Config) -> Option<Warning> {
    let server = &config.server;
    (crate::config::server_files(server).is_some() && server.h2_max_concurrent_streams.is_none())
        .then(|| Warning {
            setting: "[server] h2_max_concurrent_streams",
            text: format!(
                "an HTTP/2 client may now have at most {} requests in progress at once on one connection (it had no bound): one more is answered 503; set h2_max_concurrent_streams to choose",
                crate::config::DEFAULT_H2_MAX_CONCURRENT_STREAMS
            ),
        })
}

/// `[auth]`, an admin listener and `allowed_hosts`: the admin view now answers only the names listed (and
/// addresses, loopback names) (CHANGELOG, "Changed defaults").
fn admin_host_names_checked(config: &Config) -> Option<Warning> {
    let hosts = config.server.allowed_hosts.as_ref()?;
    (config.admin.listen.is_some() && config.auth.enabled() && !hosts.iter().any(|h| h == "*")).then(|| {
        Warning {
            setting: "[admin] listen",
            text: "the admin view now refuses a Host name not in [server] allowed_hosts (IP addresses and loopback names pass): list the name operators and scrapers use for it there".to_owned(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml: &str) -> Config {
        Config::from_toml_str(toml, std::path::Path::new("test.toml")).expect("valid config")
    }

    #[test]
    fn each_rule_warns_exactly_on_the_configs_it_names() {
        // (config, the settings warned about)
        let key = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        let mut cases: Vec<(String, Vec<&str>)> = vec![
            ("[server]\nlisten = \"127.0.0.1:7800\"\n".into(), vec![]),
            ("[server]\nlisten = \"[::1]:7800\"\n".into(), vec![]),
            (
                "[server]\nlisten = \"0.0.0.0:7800\"\n".into(),
                vec!["[server] listen", "[admin] listen"],
            ),
            (
                format!(
                    "[server]\nlisten = \"0.0.0.0:7800\"\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\n"
                ),
                vec!["[admin] listen"],
            ),
            (
                format!(
                    "[server]\nlisten = \"0.0.0.0:7800\"\n[admin]\nlisten = \"0.0.0.0:7801\"\ngroups = [\"ops\"]\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\ngroups = [\"ops\"]\n"
                ),
                vec!["[admin] listen"],
            ),
            // Scraped on loopback: the metrics moved too.
            (
                "[telemetry]\nper_tool_metrics = true\n".into(),
                vec!["[admin] listen"],
            ),
            (
                "[telemetry]\nper_tool_metrics = true\n[admin]\nlisten = \"127.0.0.1:7801\"\n"
                    .into(),
                vec![],
            ),
        ];
        // Serving TLS: the admin listener beyond loopback gets it, and HTTP/2's streams are bounded.
        let pki = crate::tls::test_pki::server("warnings", "mcp.example.com");
        let tls = format!(
            "[server]\nlisten = \"0.0.0.0:7800\"\ntls_cert_file = {:?}\ntls_key_file = {:?}\n",
            pki.cert.display().to_string(),
            pki.key.display().to_string()
        );
        let admin = format!(
            "[admin]\nlisten = \"0.0.0.0:7801\"\ngroups = [\"ops\"]\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\ngroups = [\"ops\"]\n"
        );
        cases.push((
            format!("{tls}{admin}"),
            vec!["[server] h2_max_concurrent_streams"],
        ));
        cases.push((
            format!("{tls}h2_max_concurrent_streams = 100\n{admin}"),
            vec![],
        ));
        cases.push((
            format!("{tls}h2_max_concurrent_streams = 100\nallowed_hosts = [\"mcp.example.com\"]\n{admin}"),
            vec!["[admin] listen"],
        ));
        cases.push((
            format!("{tls}h2_max_concurrent_streams = 100\nallowed_hosts = [\"*\"]\n{admin}"),
            vec![],
        ));
        for (toml, expected) in cases {
            let got: Vec<&str> = warnings(&config(&toml)).iter().map(|w| w.setting).collect();
            assert_eq!(got, expected, "config:\n{toml}");
        }
    }
}
