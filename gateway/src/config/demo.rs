//! The embedded demo config: `mcpgw serve` with no config serves the built-in mock backend (this same binary,
//! `mcpgw mock-backend --stdio`) so a new user sees the gateway work with one command.

use std::path::Path;

use super::{Config, ConfigError};

const DEMO: &str = r#"
[server]
listen = "127.0.0.1:7800"

[[backend]]
name = "demo"
command = ["{self}", "mock-backend", "--stdio", "--name", "mcpgw-demo"]
"#;

/// The demo config, with `{self}` replaced by the path of the running executable.
pub fn demo_config(self_exe: &Path) -> Result<Config, ConfigError> {
    let text = DEMO.replace("{self}", &self_exe.to_string_lossy().replace('\\', "\\\\"));
    Config::from_toml_str(&text, Path::new("<embedded demo config>"))
}
