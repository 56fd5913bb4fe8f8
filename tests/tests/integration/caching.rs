//! The gateway's own 2026-07-28 list results carry truthful `ttlMs` / `cacheScope`: as fresh as the least fresh
//! backend behind them (a backend that says nothing counts as `ttlMs: 0`), counting down from when the gateway
//! listed, and renewed by listing the backends again once they go stale.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

fn tools_list(url: &str) -> Value {
    let reply = modern_request(url, "tools/list", json!({}), &[]);
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json()["result"].clone()
}

fn ttl_of(result: &Value) -> u64 {
    result["ttlMs"]
        .as_u64()
        .expect("ttlMs on a 2026-07-28 tools/list result")
}

#[test]
fn lists_say_how_long_their_backends_said_they_stay_fresh() {
    let dir = TempDir::new("caching-fresh");
    let fresh = http_mock(&["--name", "fresh", "--ttl-ms", "60000"]);
    let config = format!(
        "[[backend]]\nname = \"fresh\"\nprefix = \"f\"\nurl = \"{}\"\n",
        fresh.url
    );
    let gw = gateway(&config, &dir);
    let result = tools_list(&gw.url);
    let ttl = ttl_of(&result);
    assert!(ttl > 50_000 && ttl <= 60_000, "ttlMs {ttl}");
    assert_eq!(result["cacheScope"], "public");
    // Legacy sessions never see the 2026-07-28 cache fields.
    let mut legacy = LegacyClient::connect(&gw.url, "2025-11-25");
    let listed = legacy.request("tools/list", json!({})).json();
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    assert!(listed["result"].get("ttlMs").is_none(), "{listed}");
    assert!(listed["result"].get("cacheScope").is_none(), "{listed}");
}

#[test]
fn a_backend_that_says_nothing_makes_the_list_not_reusable() {
    let dir = TempDir::new("caching-mixed");
    let fresh = http_mock(&["--name", "fresh", "--ttl-ms", "60000"]);
    let config = format!(
        "[[backend]]\nname = \"fresh\"\nprefix = \"f\"\nurl = \"{}\"\n{}",
        fresh.url,
        one_stdio_mock(&["--era", "legacy"])
    );
    let gw = gateway(&config, &dir);
    let result = tools_list(&gw.url);
    assert_eq!(ttl_of(&result), 0, "{result}");
    assert!(result["tools"].as_array().unwrap().len() > 3, "{result}");
}

#[test]
fn a_stale_catalog_is_listed_again_and_its_ttl_renewed() {
    let dir = TempDir::new("caching-renew");
    let fresh = http_mock(&["--name", "fresh", "--ttl-ms", "1500"]);
    let config = format!(
        "[[backend]]\nname = \"fresh\"\nprefix = \"f\"\nurl = \"{}\"\n",
        fresh.url
    );
    let gw = gateway(&config, &dir);
    let first = ttl_of(&tools_list(&gw.url));
    assert!(first > 0 && first <= 1_500, "ttlMs {first}");
    // Without a new listing the ttl would have run out long before this: each answer counts down, and
    // once it reaches 0 the gateway lists the backend again (at most once a second).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut renewed = 0;
    std::thread::sleep(Duration::from_millis(first + 200));
    while Instant::now() < deadline && renewed < 2 {
        let ttl = ttl_of(&tools_list(&gw.url));
        assert!(ttl <= 1_500, "ttlMs {ttl}");
        if ttl > 0 {
            renewed += 1;
            std::thread::sleep(Duration::from_millis(ttl + 200));
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(
        renewed, 2,
        "the catalog was not listed again after going stale"
    );
}

/// The `ttlMs` and `cacheScope` of a 2026-07-28 `resources/read` through the gateway, with credentials.
fn read(url: &str, uri: &str, authorization: Option<&str>) -> (u64, String) {
    let headers: Vec<(&str, &str)> = authorization
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    let reply = modern_request(url, "resources/read", json!({"uri": uri}), &headers);
    assert_eq!(reply.status, 200, "{}", reply.text);
    let result = reply.json()["result"].clone();
    assert!(result["contents"].is_array(), "{result}");
    (
        result["ttlMs"].as_u64().expect("ttlMs"),
        result["cacheScope"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn private_reads_are_reused_for_the_same_credentials_only_and_public_ones_for_all() {
    let dir = TempDir::new("caching-scopes");
    let private = http_mock(&[
        "--name",
        "p",
        "--ttl-ms",
        "60000",
        "--cache-scope",
        "private",
    ]);
    let public = http_mock(&["--name", "q", "--ttl-ms", "60000"]);
    let config = format!(
        "[[backend]]\nname = \"p\"\nurl = \"{}\"\n[[backend]]\nname = \"q\"\nurl = \"{}\"\n",
        private.url, public.url
    );
    let gw = gateway(&config, &dir);
    let (alice, bob) = (Some("Bearer alice"), Some("Bearer bob"));

    // a fresh read carries the backend's own 60000; a reused one the time left
    let (ttl, scope) = read(&gw.url, "mock://p/readme", alice);
    assert_eq!((ttl, scope.as_str()), (60_000, "private"));
    std::thread::sleep(Duration::from_millis(30));
    let (ttl, _) = read(&gw.url, "mock://p/readme", alice);
    assert!(
        ttl < 60_000 && ttl > 50_000,
        "alice reuses her own entry: {ttl}"
    );
    assert_eq!(
        read(&gw.url, "mock://p/readme", bob).0,
        60_000,
        "bob does not"
    );
    assert_eq!(
        read(&gw.url, "mock://p/readme", None).0,
        60_000,
        "nor an anonymous client"
    );

    let (ttl, scope) = read(&gw.url, "mock://q/readme", alice);
    assert_eq!((ttl, scope.as_str()), (60_000, "public"));
    std::thread::sleep(Duration::from_millis(30));
    for who in [bob, None] {
        let (ttl, _) = read(&gw.url, "mock://q/readme", who);
        assert!(
            ttl < 60_000 && ttl > 50_000,
            "a public entry is shared: {ttl}"
        );
    }
}

#[test]
fn a_resource_larger_than_the_cache_bound_is_served_and_not_cached() {
    let dir = TempDir::new("caching-bytes");
    let mock = http_mock(&["--name", "q", "--ttl-ms", "60000"]);
    let config = format!(
        "[server]\ncache_max_bytes = 2048\n[[backend]]\nname = \"q\"\nurl = \"{}\"\n",
        mock.url
    );
    let gw = gateway(&config, &dir);
    let big_id = "b".repeat(4096);
    // (uri, the text it holds, whether its result fits in 2048 bytes)
    let table = [
        ("mock://q/items/1".to_owned(), "item 1".to_owned(), true),
        (
            format!("mock://q/items/{big_id}"),
            format!("item {big_id}"),
            false,
        ),
    ];
    for (uri, text, fits) in table {
        for round in 0..2 {
            let reply = modern_request(&gw.url, "resources/read", json!({"uri": uri}), &[]);
            assert_eq!(reply.status, 200, "{}", reply.text);
            let result = reply.json()["result"].clone();
            assert_eq!(
                result["contents"][0]["text"],
                text.as_str(),
                "round {round}"
            );
            let ttl = result["ttlMs"].as_u64().expect("ttlMs");
            // a fresh read carries the backend's own 60000, a reused one the time left
            let reused = ttl < 60_000;
            assert_eq!(
                reused,
                fits && round == 1,
                "{uri:.40} round {round}: ttlMs {ttl}"
            );
            if round == 0 {
                std::thread::sleep(Duration::from_millis(30));
            }
        }
    }
}
