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
const RULES: &[Rule] = &[beyond_loopback_without_auth, sealing_for_replicas];

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
                "[cluster]\nkeys_file = \"/keys\"\n".into(),
                vec!["[cluster] seal_cipher"],
            ),
            (
                "[cluster]\nredis = \"redis://127.0.0.1:6379\"\n".into(),
                vec!["[cluster] seal_cipher"],
            ),
            (
                "[cluster]\nkeys_file = \"/keys\"\nseal_cipher = \"xchacha20-poly1305\"\n".into(),
                vec![],
            ),
            (
                "[cluster]\nseal_cipher = \"chacha20-poly1305\"\n".into(),
                vec!["[cluster] seal_cipher"],
            ),
        ];
        for (toml, expected) in cases {
            let got: Vec<&str> = warnings(&config(&toml)).iter().map(|w| w.setting).collect();
            assert_eq!(got, expected, "config:\n{toml}");
        }
    }
}
