//! Deterministic ordering, the content version, and downstream pagination with cursors.

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;

use super::{all_items, build, listing, sample, tool};
use crate::catalog::{CatalogSnapshot, CursorError, ListKind};

#[test]
fn order_and_version_do_not_depend_on_add_order() {
    let base = sample();
    let orders = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [2, 0, 1]];
    let snaps: Vec<CatalogSnapshot> = orders
        .iter()
        .map(|o| build(o.iter().map(|&i| base[i].clone()).collect()).expect("builds"))
        .collect();
    let lists = [
        ListKind::Tools,
        ListKind::Prompts,
        ListKind::Resources,
        ListKind::ResourceTemplates,
    ];
    for snap in &snaps[1..] {
        assert_eq!(snap.version(), snaps[0].version());
        for list in lists {
            for size in [1, 2, 100] {
                assert_eq!(
                    all_items(snap, list, size),
                    all_items(&snaps[0], list, size),
                    "{list:?}"
                );
            }
        }
    }
    // Sorted by exposed name, uri, uriTemplate.
    let tools = all_items(&snaps[0], ListKind::Tools, 100).concat();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read_file", "weather__forecast", "weather__get"]);
    let templates = all_items(&snaps[0], ListKind::ResourceTemplates, 100).concat();
    let keys: Vec<&str> = templates
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        keys,
        ["file:///logs/{name}", "file:///{+path}", "weather://{city}"]
    );

    // Different content, different version; the empty snapshot is the empty build.
    let mut changed = sample();
    changed[0].tools[0]["description"] = json!("changed");
    assert_ne!(
        build(changed).expect("builds").version(),
        snaps[0].version()
    );
    let mut moved = sample();
    moved[1].backend = "fs2".into();
    assert_ne!(build(moved).expect("builds").version(), snaps[0].version());
    assert_eq!(
        CatalogSnapshot::empty().version(),
        build(vec![]).expect("builds").version()
    );
}

#[test]
fn pagination_walks_every_item_once() {
    let mut a = listing("a", "p");
    a.tools = (0..120).rev().map(|i| tool(&format!("t{i:03}"))).collect();
    let snap = build(vec![a]).expect("builds");
    let pages = all_items(&snap, ListKind::Tools, 50);
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [50, 50, 20]);
    let names: Vec<String> = pages
        .concat()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let want: Vec<String> = (0..120).map(|i| format!("p__t{i:03}")).collect();
    assert_eq!(names, want);
    assert_eq!(names.iter().collect::<HashSet<_>>().len(), 120);

    // Exactly one full page: no next cursor.
    let one = snap.page(ListKind::Tools, None, 120).expect("page");
    assert_eq!((one.items.len(), one.next_cursor), (120, None));
    // page_size 0 is taken as 1.
    assert_eq!(
        snap.page(ListKind::Tools, None, 0)
            .expect("page")
            .items
            .len(),
        1
    );
    // An empty list has one empty page.
    let empty = snap.page(ListKind::Prompts, None, 10).expect("page");
    assert_eq!((empty.items.len(), empty.next_cursor), (0, None));

    let second = snap
        .page(ListKind::Tools, None, 50)
        .expect("page")
        .next_cursor
        .expect("more");
    let version = snap.version();
    // (cursor, list) that must be refused
    let bad = [
        ("".to_owned(), ListKind::Tools),
        ("garbage".to_owned(), ListKind::Tools),
        ("%%%".to_owned(), ListKind::Tools),
        (second.clone(), ListKind::Prompts),
        (
            URL_SAFE_NO_PAD.encode(format!("v{version}:tools:120")),
            ListKind::Tools,
        ),
        (
            URL_SAFE_NO_PAD.encode(format!("v{version}:tools:99999999999999999999999")),
            ListKind::Tools,
        ),
        (
            URL_SAFE_NO_PAD.encode(format!("v{}:tools:50", version.wrapping_add(1))),
            ListKind::Tools,
        ),
        (
            URL_SAFE_NO_PAD.encode(format!("v{version}:prompts:0")),
            ListKind::Prompts,
        ),
    ];
    for (cursor, list) in bad {
        let err = snap.page(list, Some(&cursor), 50).expect_err(&cursor);
        assert_eq!(err.to_string(), "invalid cursor");
    }

    // A cursor from an older snapshot is refused by the new one.
    let mut b = listing("a", "p");
    b.tools = (0..121).map(|i| tool(&format!("t{i:03}"))).collect();
    let newer = build(vec![b]).expect("builds");
    assert_ne!(newer.version(), version);
    assert_eq!(
        newer.page(ListKind::Tools, Some(&second), 50),
        Err(CursorError::Stale)
    );
    assert!(snap.page(ListKind::Tools, Some(&second), 50).is_ok());
}
