//! The JWK set behind `[auth.jwt] jwks_url` changing under a running gateway: a key added with a new `kid`
//! is fetched for by the first request naming it once the gateway may fetch again (an unknown `kid`
//! fetches at most once every 30 s, counting the fetch at start), and not on every request before that; a
//! key removed keeps verifying until the set is fetched again (`refresh_secs`), then its tokens are
//! refused. The endpoint down at start: tokens refused at once, the probes answer, and once it is up
//! (retried every 10 s) tokens pass; down after the keys were fetched: the cached keys keep working.
//!
//! The waits here are the gateway's own periods (30 s, 10 s); each is bounded with room to spare.

use std::time::{Duration, Instant};

use serde_json::json;

use super::issuer::{Availability, Jwks, SigningKey, claims};
use super::{Gw, assert_401, assert_echoed, bearer, jwt_config};
use crate::support::{Reply, client, into_reply, modern_request};

/// Longer than one refresh or retry period of the gateway (30 s), with room.
const PERIOD_BOUND: Duration = Duration::from_secs(50);

/// A 2026-07-28 `tools/call` of `m__echo` saying `text` with `token`.
fn call(gw: &Gw, token: &str, text: &str) -> Reply {
    let (k, v) = bearer(token);
    modern_request(
        &gw.url(),
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": text}}),
        &[(k.as_str(), v.as_str())],
    )
}

fn token(key: &SigningKey) -> String {
    key.sign(&claims("alice", "mcp:tools"))
}

fn gateway(name: &str, jwks: &Jwks, refresh_secs: u64) -> Gw {
    Gw::start(name, |port| jwt_config(&jwks.url(), port, refresh_secs, ""))
}

#[test]
fn a_token_of_a_key_added_to_the_jwks_is_accepted_by_the_request_that_fetches_for_its_kid() {
    let old = SigningKey::es256("old");
    let new = SigningKey::eddsa("new");
    let jwks = Jwks::start(&[&old], Availability::Up);
    // No background refresh within the test: every fetch after the first is for an unknown kid.
    let gw = gateway("rotation-add", &jwks, 3600);
    assert!(jwks.wait_until(Jwks::served, 1, Duration::from_secs(15)));
    // Fetched is not yet held: the gateway says when it verifies with the set (a request for an unknown kid
    // does not wait for a fetch it did not start).
    assert!(
        gw.wait_log("JWK set fetched", Duration::from_secs(15)),
        "{}",
        gw.log()
    );
    assert_echoed(&call(&gw, &token(&old), "old"), "old");
    jwks.set_keys(&[&old, &new]);
    // The first request naming the new kid makes the gateway fetch the set, and is verified with it: a
    // rotation is seen at once, whatever fetched the set shortly before.
    assert_echoed(&call(&gw, &token(&new), "new"), "new");
    assert_eq!(
        jwks.served(),
        2,
        "one fetch at start, one for the unknown kid\n{}",
        gw.log()
    );
    // Another unknown kid within 30 s of that fetch: refused without a fetch (at most one per 30 s).
    let stranger = SigningKey::es256("stranger");
    let r = call(&gw, &token(&stranger), "stranger");
    assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
    assert_eq!(jwks.served(), 2, "no second fetch within 30 s");
    // Both keys verify now, and the next request needs no fetch.
    assert_echoed(&call(&gw, &token(&new), "again"), "again");
    assert_echoed(&call(&gw, &token(&old), "old-too"), "old-too");
    assert_eq!(jwks.served(), 2);
}

#[test]
fn a_key_removed_from_the_jwks_verifies_until_the_set_is_fetched_again_then_its_tokens_get_401() {
    let old = SigningKey::es256("old");
    let new = SigningKey::eddsa("new");
    let jwks = Jwks::start(&[&old, &new], Availability::Up);
    let gw = gateway("rotation-remove", &jwks, 30);
    assert!(jwks.wait_until(Jwks::served, 1, Duration::from_secs(15)));
    // Fetched is not yet held: the gateway says when it verifies with the set (a request for an unknown kid
    // does not wait for a fetch it did not start).
    assert!(
        gw.wait_log("JWK set fetched", Duration::from_secs(15)),
        "{}",
        gw.log()
    );
    let still_valid = token(&old);
    assert_echoed(&call(&gw, &still_valid, "before"), "before");
    jwks.set_keys(&[&new]);
    let deadline = Instant::now() + PERIOD_BOUND;
    loop {
        let r = call(&gw, &still_valid, "cached");
        if jwks.attempts() == 1 {
            // Not asked again yet (counted before the answer is written, so the gateway cannot hold a newer
            // set): the key the gateway holds still verifies.
            assert_echoed(&r, "cached");
        } else if r.status == 401 {
            assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the removed key still verifies {PERIOD_BOUND:?} later (fetched {} times)\n{}",
            jwks.served(),
            gw.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(jwks.served() >= 2);
    assert_echoed(&call(&gw, &token(&new), "new"), "new");
}

/// The JWKS endpoint `down` when the gateway starts: tokens refused, probes answered, then accepted once
/// it is up.
fn down_at_start(name: &str, down: Availability) {
    let key = SigningKey::es256("k1");
    let jwks = Jwks::start(&[&key], down);
    let gw = gateway(name, &jwks, 300);
    assert!(
        jwks.wait_until(Jwks::attempts, 1, Duration::from_secs(15)),
        "the gateway never asked for the set"
    );
    assert_eq!(jwks.served(), 0);
    let r = call(&gw, &token(&key), "down");
    assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
    for probe in ["healthz", "readyz"] {
        let r = into_reply(
            client()
                .get(format!("{}/{probe}", gw.base()))
                .send()
                .unwrap(),
        );
        assert_eq!(r.status, 200, "/{probe} while the JWKS is down: {r:?}");
    }
    jwks.set(Availability::Up);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = call(&gw, &token(&key), "up");
        if r.status == 200 {
            assert_echoed(&r, "up");
            break;
        }
        assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
        assert!(
            Instant::now() < deadline,
            "tokens still refused 30 s after the JWKS came up (asked {} times, served {})\n{}",
            jwks.attempts(),
            jwks.served(),
            gw.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(jwks.served() >= 1);
}

#[test]
fn with_the_jwks_answering_503_at_start_tokens_get_401_until_it_is_up_and_the_probes_answer() {
    down_at_start("down-503", Availability::Unavailable);
}

#[test]
fn with_the_jwks_closing_connections_at_start_tokens_get_401_until_it_is_up_and_the_probes_answer()
{
    down_at_start("down-closing", Availability::Closing);
}

#[test]
fn once_keys_were_fetched_the_jwks_going_down_keeps_them_verifying() {
    let key = SigningKey::rs256("r1");
    let jwks = Jwks::start(&[&key], Availability::Up);
    let gw = gateway("down-later", &jwks, 30);
    assert!(jwks.wait_until(Jwks::served, 1, Duration::from_secs(15)));
    // Fetched is not yet held: the gateway says when it verifies with the set (a request for an unknown kid
    // does not wait for a fetch it did not start).
    assert!(
        gw.wait_log("JWK set fetched", Duration::from_secs(15)),
        "{}",
        gw.log()
    );
    assert_echoed(&call(&gw, &token(&key), "up"), "up");
    // 503 at the next refresh (30 s), then connections closed at the retry after it (10 s).
    for (n, down) in [(2, Availability::Unavailable), (3, Availability::Closing)] {
        jwks.set(down);
        assert!(
            jwks.wait_until(Jwks::attempts, n, PERIOD_BOUND),
            "the gateway did not ask for the set again ({down:?})\n{}",
            gw.log()
        );
        assert_eq!(jwks.served(), 1);
        let text = format!("{down:?}");
        assert_echoed(&call(&gw, &token(&key), &text), &text);
    }
    // A token of a key the gateway never had is still refused, and promptly answered.
    let stranger = SigningKey::es256("stranger");
    let r = call(&gw, &token(&stranger), "x");
    assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
}
