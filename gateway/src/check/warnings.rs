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
    beyond_loopback_without_allowed_origins,
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
                vec!["[server] listen", "[server] allowed_origins"],
            ),
            (
                format!(
                    "[server]\nlisten = \"0.0.0.0:7800\"\nallowed_origins = [\"https://app.example\"]\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\n"
                ),
                vec![],
            ),
            (
                format!(
                    "[server]\nlisten = \"0.0.0.0:7800\"\n[[auth.api_key]]\nprincipal = \"ci\"\ndigest = \"{key}\"\n"
                ),
                vec!["[server] allowed_origins"],
            ),
            (
                "[server]\nlisten = \"0.0.0.0:7800\"\nallowed_origins = []\n".into(),
                vec!["[server] listen"],
            ),
            (
                "[server]\nlisten = \"[::]:7800\"\nallowed_origins = [\"*\"]\n".into(),
                vec!["[server] listen"],
            ),
            (
                "[server]\nlisten = \"127.0.0.1:7800\"\ncors_allowed_origins = [\"https://app.example\"]\n".into(),
                vec![],
            ),
        ];
        for (toml, expected) in cases {
            let got: Vec<&str> = warnings(&config(&toml)).iter().map(|w| w.setting).collect();
            assert_eq!(got, expected, "config:\n{toml}");
        }
    }
}
