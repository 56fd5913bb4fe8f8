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
