//! A listing shaped by its backend's [`Shaping`] as it becomes entries: selection by the backend's own
//! names (and resource URIs, templates by `uriTemplate`), renames under the prefix, descriptions, and a
//! renamed name colliding across backends.

use std::sync::Arc;

use serde_json::json;

use super::*;

fn shaping(tools: Selection, rename: &[(&str, &str)], describe: &[(&str, &str)]) -> Arc<Shaping> {
    let pairs = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    Arc::new(Shaping {
        tools,
        rename: pairs(rename),
        describe: pairs(describe),
        ..Shaping::default()
    })
}

fn globs(g: &[&str]) -> Vec<String> {
    g.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn tools_are_selected_renamed_under_the_prefix_and_described() {
    type Row<'a> = (
        &'a str,
        Selection,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str, &'a str)],
    );
    // (prefix, tools selection, rename, describe, [(exposed, original, description)])
    let table: [Row; 5] = [
        (
            "m",
            Selection::default(),
            &[],
            &[],
            &[
                ("m__add", "add", "the add tool"),
                ("m__echo", "echo", "the echo tool"),
                ("m__fail", "fail", "the fail tool"),
            ],
        ),
        (
            "m",
            Selection {
                allow: None,
                deny: globs(&["f*"]),
            },
            &[],
            &[],
            &[
                ("m__add", "add", "the add tool"),
                ("m__echo", "echo", "the echo tool"),
            ],
        ),
        (
            "m",
            Selection {
                allow: Some(globs(&["add", "echo"])),
                deny: globs(&["echo"]),
            },
            &[],
            &[],
            &[("m__add", "add", "the add tool")],
        ),
        (
            "m",
            Selection {
                allow: Some(globs(&["add"])),
                deny: Vec::new(),
            },
            &[("add", "plus")],
            &[("add", "sums")],
            &[("m__plus", "add", "sums")],
        ),
        (
            "",
            Selection {
                allow: Some(globs(&["a??"])),
                deny: Vec::new(),
            },
            &[("add", "plus")],
            &[],
            &[("plus", "add", "the add tool")],
        ),
    ];
    for (prefix, tools, rename, describe, want) in table {
        let mut l = listing("m", prefix);
        l.tools = vec![tool("echo"), tool("add"), tool("fail")];
        l.shaping = shaping(tools.clone(), rename, describe);
        let snap = build(vec![l]).unwrap();
        let got: Vec<(&str, &str, &str)> = snap
            .tools()
            .iter()
            .map(|t| {
                (
                    t.exposed_name.as_str(),
                    t.original_name.as_str(),
                    t.tool["description"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{prefix:?} {tools:?} {rename:?}");
        for t in snap.tools() {
            assert_eq!(t.tool["name"], t.exposed_name.as_str());
        }
    }
}

#[test]
fn prompts_resources_and_templates_are_selected_by_their_own_names_and_uris() {
    let mut l = listing("m", "m");
    l.prompts = vec![json!({"name": "greet"}), json!({"name": "bye"})];
    l.resources = vec![
        json!({"uri": "mock://m/readme"}),
        json!({"uri": "mock://m/secret"}),
    ];
    l.resource_templates = vec![
        json!({"uriTemplate": "mock://m/items/{id}"}),
        json!({"uriTemplate": "mock://m/secret/{id}"}),
    ];
    l.shaping = Arc::new(Shaping {
        prompts: Selection {
            allow: Some(globs(&["greet"])),
            deny: Vec::new(),
        },
        resources: Selection {
            allow: None,
            deny: globs(&["*/secret*"]),
        },
        rename: [("greet".to_owned(), "hello".to_owned())].into(),
        ..Shaping::default()
    });
    let snap = build(vec![l]).unwrap();
    let prompts: Vec<(&str, &str)> = snap
        .prompts()
        .iter()
        .map(|p| (p.exposed_name.as_str(), p.original_name.as_str()))
        .collect();
    assert_eq!(prompts, [("m__hello", "greet")]);
    let all = all_items(&snap, ListKind::Resources, 100).concat();
    assert_eq!(all, [json!({"uri": "mock://m/readme"})]);
    let templates = all_items(&snap, ListKind::ResourceTemplates, 100).concat();
    assert_eq!(templates, [json!({"uriTemplate": "mock://m/items/{id}"})]);
}

#[test]
fn a_renamed_name_colliding_across_backends_names_both() {
    let mut a = listing("a", "");
    a.tools = vec![tool("add")];
    a.shaping = shaping(Selection::default(), &[("add", "echo")], &[]);
    let mut b = listing("b", "");
    b.tools = vec![tool("echo")];
    let err = build(vec![b, a]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool name echo collides: backends a and b both expose it"
    );
}
