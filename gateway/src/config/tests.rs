//! Config tests: every validation rule names its field; TOML, `mcpServers` JSON and the demo config load.

use std::path::Path;

use super::mcp_json::from_mcp_json_str;
use super::*;
use std::collections::BTreeMap;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, Path::new("test.toml"))
}

#[test]
fn a_full_config_loads() {
    let c = parse(
        r#"
        [server]
        listen = "127.0.0.1:9000"
        page_size = 20
        unknown_tool_code = "invalid-params"

        [[backend]]
        name = "time"
        command = ["uvx", "mcp-server-time"]
        env = { TZ = "UTC" }

        [[backend]]
        name = "remote"
        url = "http://127.0.0.1:8000/mcp"
        prefix = ""
        timeout_ms = 500
        roots = ["file:///srv/data", "file:///"]
    "#,
    )
    .unwrap();
    assert_eq!(c.server.listen.port(), 9000);
    assert_eq!(c.server.unknown_tool_code, UnknownToolCode::InvalidParams);
    assert_eq!(c.backends.len(), 2);
    assert_eq!(c.backends[0].prefix(), "time");
    assert_eq!(c.backends[1].prefix(), "");
    assert!(matches!(
        c.backends[0].transport(),
        BackendTransport::Stdio { .. }
    ));
    assert_eq!(c.backends[1].timeout(&c.server).as_millis(), 500);
    assert_eq!(c.backends[0].timeout(&c.server).as_millis(), 30_000);
    assert!(c.backends[0].roots.is_empty());
    assert_eq!(c.backends[1].roots, ["file:///srv/data", "file:///"]);
}

#[test]
fn every_rule_names_its_field() {
    // (config text, the field the error must name)
    let table = [
        ("[server]\nlisten = \"nowhere\"", "listen"),
        ("[server]\nport = 1", "port"),
        ("[server]\npage_size = 0", "server.page_size"),
        ("[server]\nmax_body_bytes = 10", "server.max_body_bytes"),
        (
            "[server]\nbody_idle_timeout_ms = 0",
            "server.body_idle_timeout_ms",
        ),
        ("[server]\nbody_timeout_ms = 0", "server.body_timeout_ms"),
        ("[server]\nworkers = 0", "server.workers"),
        ("[server]\nlog_level = \"info,mcpgw=[\"", "server.log_level"),
        ("[server]\nlog_format = \"xml\"", "log_format"),
        ("[server]\ncache_max_bytes = 0", "server.cache_max_bytes"),
        ("[server]\nmax_connections = 0", "server.max_connections"),
        (
            "[server]\ncors_allowed_origins = [\"https://ok.example\", \"*\"]",
            "server.cors_allowed_origins[1]",
        ),
        (
            "[server]\ncors_allowed_origins = [\"https://app.example/mcp\"]",
            "server.cors_allowed_origins[0]",
        ),
        (
            "[server]\nunknown_tool_code = \"nope\"",
            "unknown_tool_code",
        ),
        (
            "[[backend]]\nname = \"a b\"\nurl = \"http://x\"",
            "backend[0].name",
        ),
        (
            "[[backend]]\nname = \"\"\nurl = \"http://x\"",
            "backend[0].name",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\n[[backend]]\nname = \"a\"\nurl = \"http://y\"",
            "backend[1].name",
        ),
        ("[[backend]]\nname = \"a\"", "backend[0].command"),
        (
            "[[backend]]\nname = \"a\"\ncommand = []",
            "backend[0].command",
        ),
        (
            "[[backend]]\nname = \"a\"\ncommand = [\"x\"]\nurl = \"http://x\"",
            "backend[0].command",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"ftp://x\"",
            "backend[0].url",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nprefix = \"a/b\"",
            "backend[0].prefix",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\ntimeout_ms = 0",
            "backend[0].timeout_ms",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nenv = { A = \"1\" }",
            "backend[0].env",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nmax_in_flight = 0",
            "backend[0].max_in_flight",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nmax_in_flight = 8\nmax_in_flight_per_caller = 9",
            "backend[0].max_in_flight_per_caller",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nmax_in_flight_per_caller = 0",
            "backend[0].max_in_flight_per_caller",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nmax_in_flight_per_session = 0",
            "backend[0].max_in_flight_per_session",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\n[backend.circuit]\nratio = 0.0",
            "backend[0].circuit.ratio",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\n[backend.circuit]\nwindow = 65",
            "backend[0].circuit.window",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\n[backend.circuit]\nopen_ms = 0",
            "backend[0].circuit.open_ms",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\n[backend.circuit]\nthreshold = 3",
            "threshold",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nsurprise = 1",
            "surprise",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\ntls_ca_file = \"/ca.pem\"",
            "backend[0].tls_ca_file",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"https://x\"\ntls_client_cert_file = \"/c.pem\"",
            "backend[0].tls_client_key_file",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"https://x\"\ntls_ca_file = \"/nonexistent/ca.pem\"",
            "backend[0].tls_ca_file",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"https://x\"\ntls_server_name = \"no spaces\"",
            "backend[0].tls_server_name",
        ),
        (
            "[server]\nstrict = true\n[[backend]]\nname = \"a\"\nurl = \"https://x\"\ntls_insecure_skip_verify = true",
            "backend[0].tls_insecure_skip_verify",
        ),
        (
            "[server]\ntls_cert_file = \"/c.pem\"",
            "server.tls_key_file",
        ),
        (
            "[server]\ntls_client_ca_file = \"/ca.pem\"",
            "server.tls_client_ca_file",
        ),
        (
            "[server]\ntls_cert_file = \"/nonexistent/c.pem\"\ntls_key_file = \"/nonexistent/k.pem\"",
            "server.tls_cert_file",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nroots = [\"file:///ok\", \"/srv/data\"]",
            "backend[0].roots[1]",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x\"\nroots = [\"file://\"]",
            "backend[0].roots[0]",
        ),
        (
            "[[backend]]\nname = \"a\"\nbuiltin = [\"mock-backend\"]\nroots = [\"file:///srv\"]",
            "backend[0].roots",
        ),
    ];
    for (text, field) in table {
        let err = parse(text).expect_err(text).to_string();
        assert!(
            err.contains(field),
            "{text:?}: {err:?} does not name {field}"
        );
    }
}

#[test]
fn mcp_servers_json_loads() {
    let c = from_mcp_json_str(
        r#"{"mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "remote": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
            "off": {"command": "x", "disabled": true}
        }}"#,
        Path::new("mcp.json"),
    )
    .unwrap();
    assert_eq!(c.backends.len(), 2);
    let time = c.backends.iter().find(|b| b.name == "time").unwrap();
    assert_eq!(
        time.command.as_deref(),
        Some(&["uvx".to_owned(), "mcp-server-time".to_owned()][..])
    );
    let bad = from_mcp_json_str(r#"{"mcpServers": {"x": {}}}"#, Path::new("mcp.json")).unwrap_err();
    assert!(bad.to_string().contains("mcpServers.x.command"), "{bad}");
    assert!(from_mcp_json_str("{", Path::new("mcp.json")).is_err());
}

#[test]
fn the_share_setting_keeps_its_old_name_but_not_both_names() {
    let entry = |keys: &str| format!("[[backend]]\nname = \"a\"\nurl = \"http://x\"\n{keys}");
    let old = parse(&entry("max_in_flight_per_session = 3")).unwrap();
    assert_eq!(old.backends[0].per_caller(), Some(3));
    let new = parse(&entry("max_in_flight_per_caller = 5")).unwrap();
    assert_eq!(new.backends[0].per_caller(), Some(5));
    assert_eq!(parse(&entry("")).unwrap().backends[0].per_caller(), None);
    let both = parse(&entry(
        "max_in_flight_per_caller = 5\nmax_in_flight_per_session = 3",
    ))
    .unwrap_err()
    .to_string();
    assert!(
        both.contains("max_in_flight_per_caller") && both.contains("max_in_flight_per_session"),
        "{both}"
    );
}

#[test]
fn demo_config_runs_this_binary_as_its_backend() {
    let c = demo_config(Path::new("/opt/mcpgw/bin/mcpgw")).unwrap();
    assert_eq!(c.backends.len(), 1);
    let BackendTransport::Stdio { command, .. } = c.backends[0].transport() else {
        panic!("demo backend is stdio")
    };
    assert_eq!(command[0], "/opt/mcpgw/bin/mcpgw");
    assert_eq!(&command[1..3], ["mock-backend", "--stdio"]);
}

/// The keys a table of the config accepts, as serde lists them when it refuses an unknown one.
fn accepted_keys(table_header: &str) -> Vec<String> {
    // A sub-table of an array of tables needs the array's table first.
    let header = match table_header {
        "[endpoint.access]" => "[[endpoint]]\n[endpoint.access]",
        other => other,
    };
    let text = format!("{header}\nname = \"x\"\nzz_not_a_key = 1\n");
    let err = parse(&text)
        .expect_err("an unknown key is refused")
        .to_string();
    // "expected one of `a`, `b`, …" (or "expected `a` or `b`" for two keys)
    let expected = err
        .split("expected ")
        .nth(1)
        .unwrap_or_else(|| panic!("serde lists the keys: {err}"));
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The tables the configuration reference (docs/src/configuration.md) documents, each key by key.
const TABLES: [&str; 19] = [
    "[server]",
    "[admin]",
    "[catalog]",
    "[[endpoint]]",
    "[endpoint.access]",
    "[telemetry]",
    "[traces]",
    "[[backend]]",
    "[[middleware]]",
    "[cluster]",
    "[auth]",
    "[[auth.api_key]]",
    "[auth.jwt]",
    "[auth.oauth]",
    "[[auth.scope]]",
    "[egress]",
    "[[interceptor]]",
    "[redaction]",
    "[[redaction.pattern]]",
];

/// The keys the configuration reference names, by table: each table's keys are the backquoted words of the
/// first column of the table under its heading ``## `[server]` `` (up to the next heading).
fn documented_keys() -> BTreeMap<&'static str, Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/configuration.md");
    let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut keys: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut current: Option<&'static str> = None;
    for line in page.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            current = TABLES
                .into_iter()
                .find(|t| heading.trim() == format!("`{t}`"));
            if let Some(t) = current {
                assert!(
                    !keys.contains_key(t),
                    "configuration.md has two headings for {t}"
                );
                keys.insert(t, Vec::new());
            }
            continue;
        }
        let (Some(table), true) = (current, line.starts_with("| `")) else {
            continue;
        };
        let first = line.split('|').nth(1).unwrap_or_default();
        let row = keys.entry(table).or_default();
        row.extend(first.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    keys
}

#[test]
fn the_configuration_reference_names_every_key_and_only_keys() {
    let mut documented = documented_keys();
    for table in TABLES {
        let mut accepted = accepted_keys(table);
        let mut documented = documented
            .remove(table)
            .unwrap_or_else(|| panic!("docs/src/configuration.md has no heading ## `{table}`"));
        accepted.sort();
        documented.sort();
        assert!(!accepted.is_empty(), "{table}: serde listed no key");
        assert_eq!(
            documented, accepted,
            "docs/src/configuration.md's table under ## `{table}` and the keys {table} accepts disagree"
        );
    }
    assert!(
        documented.is_empty(),
        "headings of no known table: {:?}",
        documented.keys()
    );
}

/// Config blocks of the docs (markers `config-…`) that must be there, and what each holds is checked below;
/// any other `config-` block is parsed and validated too.
const CONFIG_BLOCKS: [&str; 6] = [
    "config-quick-start",
    "config-tls",
    "config-cors",
    "config-middleware",
    "config-traces",
    "config-admin",
];

/// Every config block of the docs (README.md and docs/src: a marker whose name starts with `config-`) parses
/// with `Config::from_toml_str` and validates, as the page shows it, with two additions only: a config serves
/// at least one backend, so a block without a `[[backend]]` table (a fragment showing one table) gets one
/// appended, a built-in mock (`[[backend]] name = "m"`, `builtin = ["mock-backend"]`); and the TLS files a
/// block names under `/etc/mcpgw/tls/` (validation reads them) are real ones made now in a temporary
/// directory, the path replaced by it. [`CONFIG_BLOCKS`] must be among them.
#[test]
fn every_config_block_of_the_docs_parses_and_validates() {
    let mut configs = BTreeMap::new();
    for b in crate::docs_blocks::blocks() {
        if !b.name.starts_with("config-") {
            continue;
        }
        assert_eq!(
            b.language, "toml",
            "{} ({}) is a toml block",
            b.name, b.page
        );
        let mut text = b.text.clone();
        if !text.lines().any(|l| l.trim() == "[[backend]]") {
            text.push_str("\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n");
        }
        if text.contains("/etc/mcpgw/tls/") {
            let pki = crate::tls::test_pki::server("docs-config", "tools.internal");
            let dir = pki.cert.parent().unwrap().to_owned();
            for (name, from) in [
                ("cert.pem", &pki.cert),
                ("key.pem", &pki.key),
                ("client.pem", &pki.cert),
                ("client.key", &pki.key),
            ] {
                std::fs::copy(from, dir.join(name)).unwrap();
            }
            std::fs::write(dir.join("internal-ca.pem"), &pki.ca).unwrap();
            text = text.replace("/etc/mcpgw/tls/", &format!("{}/", dir.display()));
        }
        let config = Config::from_toml_str(&text, Path::new(&b.page))
            .unwrap_or_else(|e| panic!("{} ({}): {e}\n{text}", b.name, b.page));
        assert!(configs.insert(b.name, config).is_none());
    }
    for name in CONFIG_BLOCKS {
        assert!(
            configs.contains_key(name),
            "no config block {name} in the docs"
        );
    }
    // What each shows is what is read.
    let quick = &configs["config-quick-start"];
    let names: Vec<&str> = quick.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["time", "everything"]);
    assert_eq!(quick.backends[1].prefix(), "ev");
    let tls = &configs["config-tls"];
    assert!(tls.server.tls_cert_file.is_some() && tls.backends[0].tls_client_cert_file.is_some());
    assert_eq!(configs["config-cors"].server.cors_allowed_origins.len(), 2);
    assert_eq!(configs["config-middleware"].middlewares.len(), 2);
    assert_eq!(
        configs["config-traces"]
            .traces
            .as_ref()
            .map(|t| t.sample_ratio),
        Some(0.25)
    );
    assert!(configs["config-admin"].admin.listen.is_some());
}

#[test]
fn middleware_tables_are_checked_at_start() {
    // (config, the field the error names, or None when it is valid)
    let table = [
        ("[[middleware]]\nkind = \"access_log\"\n", None),
        (
            "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"tools/call\", \"tools/list\"]\n",
            None,
        ),
        (
            "[[middleware]]\nkind = \"allow_methods\"\n",
            Some("middleware[0].methods"),
        ),
        (
            "[[middleware]]\nkind = \"access_log\"\nmethods = []\n",
            Some("middleware[0].methods"),
        ),
        (
            "[[middleware]]\nkind = \"access_log\"\n[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"tools/call\", \"tools/cal\"]\n",
            Some("middleware[1].methods[1]"),
        ),
        (
            "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"notifications/initialized\"]\n",
            Some("middleware[0].methods[0]"),
        ),
        ("[[middleware]]\nkind = \"rate_limit\"\n", Some("kind")),
        ("[[middleware]]\nkind = \"library\"\nname = \"auth_check\"\n", None),
        ("[[middleware]]\nkind = \"library\"\n", Some("middleware[0].name")),
        (
            "[[middleware]]\nkind = \"library\"\nname = \"has space\"\n",
            Some("middleware[0].name"),
        ),
        (
            "[[middleware]]\nkind = \"library\"\nname = \"a\"\nmethods = [\"tools/call\"]\n",
            Some("middleware[0].methods"),
        ),
        (
            "[[middleware]]\nkind = \"access_log\"\nname = \"a\"\n",
            Some("middleware[0].name"),
        ),
    ];
    for (text, field) in table {
        match (parse(text), field) {
            (Ok(c), None) => assert!(!c.middlewares.is_empty()),
            (Err(e), Some(field)) => assert!(e.to_string().contains(field), "{text}: {e}"),
            (Ok(_), Some(field)) => panic!("{text}: accepted, expected an error naming {field}"),
            (Err(e), None) => panic!("{text}: {e}"),
        }
    }
}
