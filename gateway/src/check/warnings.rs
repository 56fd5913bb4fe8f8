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
    trusted_proxies_without_forwarded_header,
    unqualified_names_an_api_key_and_a_token_share,
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

    fn config(toml: &str) -> Config {
        Config::from_toml_str(toml, std::path::Path::new("test.toml")).expect("valid config")
    }

    #[test]
    fn each_rule_warns_exactly_on_the_configs_it_names() {
        // (config, the settings warned about)
        let key = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        let keys_and_jwt = format!(
            "[[auth.api_key]]\nprincipal = \"ops-bot\"\ndigest = \"{key}\"\ngroups = [\"ops\"]\n\
             [auth.jwt]\njwks_url = \"https://idp.example/jwks\"\nissuer = \"https://idp.example/\"\naudience = \"mcpgw\"\n"
        );
        let cases: Vec<(String, Vec<&str>)> = vec![
            ("[server]\nlisten = \"127.0.0.1:7800\"\n".into(), vec![]),
            ("[server]\nlisten = \"[::1]:7800\"\n".into(), vec![]),
            (
                "[server]\nlisten = \"0.0.0.0:7800\"\n".into(),
                vec!["[server] listen"],
            ),
            (
                format!(
                    "[server]\nlisten = \"0.0.0.0:7800\"\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\n"
                ),
                vec![],
            ),
            (
                "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\n".into(),
                vec!["[server] forwarded_header"],
            ),
            (
                "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nforwarded_header = \"x-forwarded-for\"\n".into(),
                vec![],
            ),
            (
                "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nforwarded_header = \"forwarded\"\n".into(),
                vec![],
            ),
            (
                "[server]\nforwarded_header = \"x-real-ip\"\n".into(),
                vec![],
            ),
            (
                format!("{keys_and_jwt}[[policy]]\nprincipal = \"ops-bot\"\nallow = [\"*\"]\n"),
                vec!["[[policy]] principal"],
            ),
            (
                format!("{keys_and_jwt}[[policy]]\ngroup = \"o*\"\nallow = [\"*\"]\n"),
                vec!["[[policy]] group"],
            ),
            (
                format!("{keys_and_jwt}[admin]\nlisten = \"127.0.0.1:7801\"\ngroups = [\"ops\"]\n"),
                vec!["[admin] groups"],
            ),
            (
                format!(
                    "{keys_and_jwt}[[policy]]\nprincipal = \"api_key:ops-bot\"\nallow = [\"*\"]\n\
                     [[policy]]\nprincipal = \"jwt:ops-bot\"\nallow = [\"*\"]\n\
                     [[policy]]\nprincipal = \"*\"\nallow = [\"x\"]\n\
                     [[policy]]\nprincipal = \"alice\"\nallow = [\"*\"]\n\
                     [admin]\nlisten = \"127.0.0.1:7801\"\ngroups = [\"api_key:ops\", \"sre\"]\n"
                ),
                vec![],
            ),
            (
                format!(
                    "[[auth.api_key]]\nprincipal = \"ops-bot\"\ndigest = \"{key}\"\n\
                     [[policy]]\nprincipal = \"ops-bot\"\nallow = [\"*\"]\n"
                ),
                vec![],
            ),
        ];
        for (toml, expected) in cases {
            let got: Vec<&str> = warnings(&config(&toml)).iter().map(|w| w.setting).collect();
            assert_eq!(got, expected, "config:\n{toml}");
        }
    }
}
