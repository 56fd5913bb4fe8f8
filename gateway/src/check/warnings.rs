//! Warnings on a config that is valid: a setting a changed default affects (CHANGELOG, "Changed defaults"),
//! or a choice an operator should make on purpose. `mcpgw check` prints them on standard error and still
//! exits 0; `serve` logs each at `warn` when it starts. Pure: a config in, lines out.

use crate::config::{Config, SealCipher};

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
    beyond_loopback_without_allowed_origins,
    metrics_without_admin_listener,
    admin_beyond_loopback_in_clear,
    h2_streams_bounded,
    trusted_proxies_without_forwarded_header,
    unqualified_names_an_api_key_and_a_token_share,
    sealing_for_replicas,
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

/// New ids are sealed with XChaCha20-Poly1305, which replicas of earlier versions cannot open: a config that
/// shares its ring (a key file, Redis) and has not chosen, or one that still seals the earlier way.
fn sealing_for_replicas(config: &Config) -> Option<Warning> {
    let cluster = &config.cluster;
    let shared = cluster.keys_file.is_some() || cluster.redis.is_some();
    let text = match cluster.seal_cipher {
        Some(SealCipher::ChaCha20Poly1305) => {
            "new session ids and request states are sealed with chacha20-poly1305's random 96-bit nonces, meant for a rolling upgrade only: once every replica runs this version, remove the setting (xchacha20-poly1305 seals)"
        }
        None if shared => {
            "new session ids and request states are sealed with xchacha20-poly1305, which replicas of earlier versions cannot open: during a rolling upgrade from one, set seal_cipher = \"chacha20-poly1305\" until every replica runs this version; set \"xchacha20-poly1305\" to choose it on purpose"
        }
        Some(SealCipher::XChaCha20Poly1305) | None => return None,
    };
    Some(Warning {
        setting: "[cluster] seal_cipher",
        text: text.to_owned(),
    })
}

/// Listening beyond loopback with no `allowed_origins` (a changed default): a request carrying an `Origin`
/// used to pass there whatever it said; now it passes only when `cors_allowed_origins` lists it or it is
/// same-origin under an `allowed_hosts` name.
fn beyond_loopback_without_allowed_origins(config: &Config) -> Option<Warning> {
    let server = &config.server;
    let listen = server.listen;
    (!listen.ip().is_loopback() && server.allowed_origins.is_none()).then(|| Warning {
        setting: "[server] allowed_origins",
        text: format!(
            "listening on {listen} (beyond loopback) with no allowed_origins: a request carrying an Origin (a browser's) is refused with 403 unless cors_allowed_origins lists it or it is the gateway's own origin under an allowed_hosts name (before, any origin passed); list the web origins that may call the gateway ([] for none, which silences this), or [\"*\"] for the old behaviour"
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

/// `trusted_proxies` without `forwarded_header`: only `X-Forwarded-For` is believed now (a client's own
/// `Forwarded` used to win); a proxy that writes only `Forwarded` makes every client the proxy.
fn trusted_proxies_without_forwarded_header(config: &Config) -> Option<Warning> {
    let server = &config.server;
    (!server.trusted_proxies.is_empty() && server.forwarded_header.is_none()).then(|| Warning {
        setting: "[server] forwarded_header",
        text: "not set, so behind trusted_proxies only x-forwarded-for is believed (forwarded and x-real-ip are ignored, and forwarded no longer wins); if your proxies write forwarded or x-real-ip instead, set it, or every client counts as the proxy's address".to_owned(),
    })
}

/// An unqualified name that picks principals or groups, where it can pick an API key's principal (or group)
/// and, with `[auth.jwt]` on, a token's too: API keys and tokens are namespaced apart now, and the config
/// names both. `api_key:NAME` or `jwt:NAME` says which.
fn unqualified_names_an_api_key_and_a_token_share(config: &Config) -> Option<Warning> {
    use crate::config::qualified;
    use crate::glob::glob_match;
    let auth = &config.auth;
    if auth.jwt.is_none() || auth.api_keys.is_empty() {
        return None;
    }
    let key_names: Vec<&str> = auth.api_keys.iter().map(|k| k.principal.as_str()).collect();
    let key_groups: Vec<&str> = auth
        .api_keys
        .iter()
        .flat_map(|k| k.groups.iter().map(String::as_str))
        .collect();
    // (setting, pattern, whether it names groups)
    let mut named: Vec<(&'static str, &str, bool)> = Vec::new();
    for rule in &config.policies {
        named.extend(
            rule.principal
                .as_deref()
                .map(|p| ("[[policy]] principal", p, false)),
        );
        named.extend(rule.group.as_deref().map(|g| ("[[policy]] group", g, true)));
    }
    for access in config.endpoints.iter().filter_map(|e| e.access.as_ref()) {
        named.extend(
            access
                .principals
                .iter()
                .map(|p| ("[endpoint.access] principals", p.as_str(), false)),
        );
        named.extend(
            access
                .groups
                .iter()
                .map(|g| ("[endpoint.access] groups", g.as_str(), true)),
        );
    }
    named.extend(
        config
            .catalog
            .principals
            .iter()
            .map(|p| ("[catalog] principals", p.as_str(), false)),
    );
    named.extend(
        config
            .catalog
            .groups
            .iter()
            .map(|g| ("[catalog] groups", g.as_str(), true)),
    );
    // `[admin] groups` are exact names, not globs.
    let admin: Vec<(&'static str, &str)> = config
        .admin
        .groups
        .iter()
        .map(|g| ("[admin] groups", g.as_str()))
        .collect();
    let ambiguous: Vec<(&'static str, &str)> = named
        .into_iter()
        .filter(|(_, pattern, groups)| {
            let known = if *groups { &key_groups } else { &key_names };
            *pattern != "*"
                && qualified::split(pattern).0.is_none()
                && known.iter().any(|k| glob_match(pattern, k))
        })
        .map(|(setting, pattern, _)| (setting, pattern))
        .chain(
            admin
                .into_iter()
                .filter(|(_, g)| qualified::split(g).0.is_none() && key_groups.contains(g)),
        )
        .collect();
    let (setting, _) = *ambiguous.first()?;
    let names: Vec<String> = ambiguous
        .iter()
        .map(|(setting, pattern)| format!("{setting} {pattern:?}"))
        .collect();
    Some(Warning {
        setting,
        text: format!(
            "{} name{} an API key's principal or group but, unqualified, also match{} a token's (API keys and tokens are separate principals now); write api_key:NAME or jwt:NAME to say which",
            names.join(", "),
            if names.len() == 1 { "s" } else { "" },
            if names.len() == 1 { "es" } else { "" },
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    fn config(toml: &str) -> Config {
        Config::from_toml_str(toml, std::path::Path::new("test.toml")).expect("valid config")
    }

    fn api_key(groups: &str) -> String {
        format!("[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{KEY}\"\ngroups = [{groups}]\n")
    }

    /// Each rule on its own: (the rule, its setting, a config, whether it warns). A rule added to `RULES`
    /// gets its rows here, a config it warns on and one it does not.
    #[test]
    fn each_rule_warns_exactly_on_the_configs_it_names() {
        let pki = crate::tls::test_pki::server("warnings", "mcp.example.com");
        let tls = format!(
            "[server]\nlisten = \"0.0.0.0:7800\"\ntls_cert_file = {:?}\ntls_key_file = {:?}\n",
            pki.cert.display().to_string(),
            pki.key.display().to_string()
        );
        let wide_admin = format!(
            "[admin]\nlisten = \"0.0.0.0:7801\"\ngroups = [\"ops\"]\n{}",
            api_key("\"ops\"")
        );
        let wide = "[server]\nlisten = \"0.0.0.0:7800\"\n";
        let keys_and_jwt = format!(
            "[[auth.api_key]]\nprincipal = \"ops-bot\"\ndigest = \"{KEY}\"\ngroups = [\"ops\"]\n\
             [auth.jwt]\njwks_url = \"https://idp.example/jwks\"\nissuer = \"https://idp.example/\"\naudience = \"mcpgw\"\n"
        );
        let cases: Vec<(Rule, &str, String, bool)> = vec![
            (beyond_loopback_without_auth, "[server] listen", "[server]\nlisten = \"127.0.0.1:7800\"\n".into(), false),
            (beyond_loopback_without_auth, "[server] listen", "[server]\nlisten = \"[::1]:7800\"\n".into(), false),
            (beyond_loopback_without_auth, "[server] listen", wide.into(), true),
            (beyond_loopback_without_auth, "[server] listen", "[server]\nlisten = \"[::]:7800\"\nallowed_origins = [\"*\"]\n".into(), true),
            (beyond_loopback_without_auth, "[server] listen", format!("{wide}{}", api_key("")), false),
            (beyond_loopback_without_allowed_origins, "[server] allowed_origins", wide.into(), true),
            (beyond_loopback_without_allowed_origins, "[server] allowed_origins", format!("{wide}{}", api_key("")), true),
            (beyond_loopback_without_allowed_origins, "[server] allowed_origins", format!("{wide}allowed_origins = [\"https://app.example\"]\n"), false),
            (beyond_loopback_without_allowed_origins, "[server] allowed_origins", "[server]\nlisten = \"127.0.0.1:7800\"\ncors_allowed_origins = [\"https://app.example\"]\n".into(), false),
            (metrics_without_admin_listener, "[admin] listen", wide.into(), true),
            (metrics_without_admin_listener, "[admin] listen", "[telemetry]\nper_tool_metrics = true\n".into(), true),
            (metrics_without_admin_listener, "[admin] listen", "[telemetry]\nper_tool_metrics = true\n[admin]\nlisten = \"127.0.0.1:7801\"\n".into(), false),
            (metrics_without_admin_listener, "[admin] listen", "[server]\nlisten = \"127.0.0.1:7800\"\n".into(), false),
            (admin_beyond_loopback_in_clear, "[admin] listen", format!("{wide}{wide_admin}"), true),
            (admin_beyond_loopback_in_clear, "[admin] listen", format!("{tls}{wide_admin}"), false),
            (admin_beyond_loopback_in_clear, "[admin] listen", "[admin]\nlisten = \"127.0.0.1:7801\"\n".into(), false),
            (h2_streams_bounded, "[server] h2_max_concurrent_streams", format!("{tls}{wide_admin}"), true),
            (h2_streams_bounded, "[server] h2_max_concurrent_streams", format!("{tls}h2_max_concurrent_streams = 100\n{wide_admin}"), false),
            (h2_streams_bounded, "[server] h2_max_concurrent_streams", wide.into(), false),
            (trusted_proxies_without_forwarded_header, "[server] forwarded_header", "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\n".into(), true),
            (trusted_proxies_without_forwarded_header, "[server] forwarded_header", "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nforwarded_header = \"x-forwarded-for\"\n".into(), false),
            (trusted_proxies_without_forwarded_header, "[server] forwarded_header", "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nforwarded_header = \"forwarded\"\n".into(), false),
            (trusted_proxies_without_forwarded_header, "[server] forwarded_header", "[server]\nforwarded_header = \"x-real-ip\"\n".into(), false),
            (unqualified_names_an_api_key_and_a_token_share, "[[policy]] principal", format!("{keys_and_jwt}[[policy]]\nprincipal = \"ops-bot\"\nallow = [\"*\"]\n"), true),
            (unqualified_names_an_api_key_and_a_token_share, "[[policy]] group", format!("{keys_and_jwt}[[policy]]\ngroup = \"o*\"\nallow = [\"*\"]\n"), true),
            (unqualified_names_an_api_key_and_a_token_share, "[admin] groups", format!("{keys_and_jwt}[admin]\nlisten = \"127.0.0.1:7801\"\ngroups = [\"ops\"]\n"), true),
            (
                unqualified_names_an_api_key_and_a_token_share,
                "",
                format!(
                    "{keys_and_jwt}[[policy]]\nprincipal = \"api_key:ops-bot\"\nallow = [\"*\"]\n\
                     [[policy]]\nprincipal = \"jwt:ops-bot\"\nallow = [\"*\"]\n\
                     [[policy]]\nprincipal = \"*\"\nallow = [\"x\"]\n\
                     [[policy]]\nprincipal = \"alice\"\nallow = [\"*\"]\n\
                     [admin]\nlisten = \"127.0.0.1:7801\"\ngroups = [\"api_key:ops\", \"sre\"]\n"
                ),
                false,
            ),
            (
                unqualified_names_an_api_key_and_a_token_share,
                "",
                format!("{}[[policy]]\nprincipal = \"ops-bot\"\nallow = [\"*\"]\n", api_key("")).replace("\"ci\"", "\"ops-bot\""),
                false,
            ),
            (sealing_for_replicas, "[cluster] seal_cipher", "[cluster]\nkeys_file = \"/keys\"\n".into(), true),
            (sealing_for_replicas, "[cluster] seal_cipher", "[cluster]\nredis = \"redis://127.0.0.1:6379\"\n".into(), true),
            (sealing_for_replicas, "[cluster] seal_cipher", "[cluster]\nkeys_file = \"/keys\"\nseal_cipher = \"xchacha20-poly1305\"\n".into(), false),
            (sealing_for_replicas, "[cluster] seal_cipher", "[cluster]\nseal_cipher = \"chacha20-poly1305\"\n".into(), true),
            (sealing_for_replicas, "[cluster] seal_cipher", "[server]\nlisten = \"127.0.0.1:7800\"\n".into(), false),
        ];
        for (rule, setting, toml, warns) in cases {
            let got = rule(&config(&toml));
            assert_eq!(got.is_some(), warns, "{setting} on config:\n{toml}");
            if let Some(w) = got {
                assert_eq!(w.setting, setting);
            }
        }
    }

    #[test]
    fn a_config_that_chooses_everything_on_purpose_gets_no_warning_and_others_get_them_in_order() {
        assert_eq!(
            warnings(&config("[server]\nlisten = \"127.0.0.1:7800\"\n")),
            vec![]
        );
        let got: Vec<&str> = warnings(&config("[server]\nlisten = \"0.0.0.0:7800\"\n"))
            .iter()
            .map(|w| w.setting)
            .collect();
        assert_eq!(
            got,
            [
                "[server] listen",
                "[server] allowed_origins",
                "[admin] listen"
            ]
        );
    }
}
