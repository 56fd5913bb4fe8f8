//! Endpoints: who an `[endpoint.access]` admits (table), session bindings per endpoint, what a selection
//! keeps, and the `[[endpoint]]` tables' validation (table).

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::json;

use super::*;

fn config(extra: &str) -> Result<Config, crate::config::ConfigError> {
    let text = format!(
        r#"
[[backend]]
name = "git"
builtin = ["mock-backend"]

[[backend]]
name = "time"
builtin = ["mock-backend"]

[[auth.api_key]]
principal = "ada"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
{extra}"#
    );
    Config::from_toml_str(&text, Path::new("endpoints.toml"))
}

fn endpoints(extra: &str) -> Endpoints {
    let gateway = Implementation {
        name: "mcpgw".into(),
        version: "1.0.0".into(),
        ..Implementation::default()
    };
    Endpoints::new(&config(extra).unwrap(), &gateway)
}

fn principal(name: &str, groups: &[&str], scopes: &[&str]) -> Principal {
    Principal {
        name: name.to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        token: None,
    }
}

#[test]
fn access_admits_a_named_principal_or_group_member_holding_every_scope() {
    let e = endpoints(
        r#"
[[endpoint]]
path = "/ops"
name = "ops"
[endpoint.access]
principals = ["svc-*"]
groups = ["ops", "sre-*"]
scopes = ["mcp:ops", "mcp:read"]
"#,
    );
    let ops = &e.all()[1];
    let both = ["mcp:ops", "mcp:read"];
    let cases: &[(Principal, bool, &str)] = &[
        (principal("svc-deploy", &[], &both), true, "name glob"),
        (principal("ada", &["ops"], &both), true, "group"),
        (
            principal("ada", &["x", "sre-eu"], &both),
            true,
            "group glob",
        ),
        (principal("ada", &["dev"], &both), false, "neither"),
        (
            principal("ada", &["ops"], &["mcp:ops"]),
            false,
            "a scope short",
        ),
        (principal("svc-x", &[], &[]), false, "no scope"),
    ];
    for (p, admitted, why) in cases {
        assert_eq!(ops.admits(Some(p)).is_ok(), *admitted, "{why}");
    }
    assert_eq!(
        ops.admits(Some(&principal("ada", &["ops"], &["mcp:ops"]))),
        Err(Refused::InsufficientScope {
            path: "/ops".into(),
            missing: vec!["mcp:read".into()]
        })
    );
    assert!(matches!(ops.admits(None), Err(Refused::NotAdmitted { .. })));
    // No access table: whoever may use `/mcp`; `/mcp` itself has none.
    let open = endpoints("[[endpoint]]\npath = \"/open\"\nname = \"open\"\n");
    assert!(open.all()[1].admits(None).is_ok());
    assert!(open.default_endpoint().admits(None).is_ok());
    // Only scopes: any principal holding them.
    let scoped = endpoints(
        "[[endpoint]]\npath = \"/s\"\nname = \"s\"\n[endpoint.access]\nscopes = [\"a\"]\n",
    );
    assert!(
        scoped.all()[1]
            .admits(Some(&principal("z", &[], &["a"])))
            .is_ok()
    );
}

#[test]
fn a_session_binding_is_the_principals_at_mcp_and_distinct_per_endpoint() {
    let e = endpoints(
        "[[endpoint]]\npath = \"/a\"\nname = \"a\"\n[[endpoint]]\npath = \"/b\"\nname = \"b\"\n",
    );
    let [mcp, a, b] = [&e.all()[0], &e.all()[1], &e.all()[2]];
    let bob = Some([7u8; 16]);
    assert_eq!(mcp.bind(bob), bob);
    assert_eq!(mcp.bind(None), None);
    let bound = [a.bind(None), a.bind(bob), b.bind(None), b.bind(bob)];
    for (i, x) in bound.iter().enumerate() {
        assert!(x.is_some());
        assert_ne!(*x, bob);
        for y in &bound[i + 1..] {
            assert_ne!(x, y);
        }
    }
    // Stable: the same on every replica.
    assert_eq!(
        a.bind(bob),
        endpoints("[[endpoint]]\npath = \"/a\"\nname = \"z\"\n").all()[1].bind(bob)
    );
}

#[test]
fn a_selection_keeps_its_backends_and_the_names_its_globs_select() {
    let e = endpoints(
        r#"
[[endpoint]]
path = "/git"
name = "git"
backends = ["git"]
tools = { allow = ["git__*"], deny = ["git__push*"] }
resources = { deny = ["secret://*"] }
"#,
    );
    let s = e.all()[1].selection.clone().unwrap();
    let tool = json!({});
    let t = |name, backend| {
        s.keeps(Item::Tool {
            name,
            backend,
            tool: &tool,
        })
    };
    assert!(t("git__log", "git"));
    assert!(!t("git__push_force", "git"));
    assert!(!t("time__now", "time"));
    assert!(!t("git__log", "time"));
    assert!(s.keeps(Item::Prompt {
        name: "git__p",
        backend: "git"
    }));
    assert!(!s.keeps(Item::Resource {
        uri: "secret://k",
        backend: "git"
    }));
    assert!(s.keeps(Item::Backend("git")));
    assert!(!s.keeps(Item::Backend("time")));
    // The endpoint's view is the same for every client; a principal's view of it is private.
    let full = Arc::new(CatalogSnapshot::empty());
    let view = e.all()[1].view(&full);
    assert!(!view.is_private());
    assert!(view.restricted(s).is_private());
    assert!(Arc::ptr_eq(&e.default_endpoint().view(&full), &full));
}

#[test]
fn endpoint_tables_are_validated_naming_the_field() {
    let cases = [
        ("path = \"ops\"\nname = \"a\"", "endpoint[0].path"),
        ("path = \"/ops/\"\nname = \"a\"", "endpoint[0].path"),
        ("path = \"/mcp\"\nname = \"a\"", "endpoint[0].path"),
        ("path = \"/admin/x\"\nname = \"a\"", "endpoint[0].path"),
        ("path = \"/a b\"\nname = \"a\"", "endpoint[0].path"),
        ("path = \"/ops\"\nname = \" \"", "endpoint[0].name"),
        (
            "path = \"/ops\"\nname = \"a\"\nbackends = [\"nope*\"]",
            "endpoint[0].backends[0]",
        ),
        (
            "path = \"/ops\"\nname = \"a\"\ntools = { deny = [\"\"] }",
            "endpoint[0].tools",
        ),
    ];
    for (table, field) in cases {
        let err = config(&format!("[[endpoint]]\n{table}\n")).unwrap_err();
        assert!(err.to_string().contains(field), "{table}: {err}");
    }
    let twice =
        "[[endpoint]]\npath = \"/a\"\nname = \"a\"\n[[endpoint]]\npath = \"/a\"\nname = \"b\"\n";
    assert!(
        config(twice)
            .unwrap_err()
            .to_string()
            .contains("endpoint[1].path")
    );
    let named =
        "[[endpoint]]\npath = \"/a\"\nname = \"a\"\n[[endpoint]]\npath = \"/b\"\nname = \"a\"\n";
    assert!(
        config(named)
            .unwrap_err()
            .to_string()
            .contains("endpoint[1].name")
    );
    // Access rules need authentication.
    let no_auth = Config::from_toml_str(
        "[[endpoint]]\npath = \"/a\"\nname = \"a\"\n[endpoint.access]\ngroups = [\"x\"]\n",
        Path::new("t.toml"),
    )
    .unwrap_err();
    assert!(
        no_auth.to_string().contains("endpoint[0].access"),
        "{no_auth}"
    );
    let many: String = (0..=crate::config::endpoint::MAX_ENDPOINTS)
        .map(|i| format!("[[endpoint]]\npath = \"/e{i}\"\nname = \"e{i}\"\n"))
        .collect();
    assert!(config(&many).unwrap_err().to_string().contains("at most"));
    assert!(
        config("[[endpoint]]\npath = \"/mcp/ops\"\nname = \"ops\"\nbackends = [\"g*\"]\n").is_ok()
    );
}
