//! Principal B never rides on A's consent: the backend sees each principal's own exchanged token (and, as a
//! legacy backend, each principal's own backend session), so what alice consented to stays hers — bob is
//! asked for his own consent, through his own link, and alice's `requestState` does not open for him.

use serde_json::{Value, json};

use super::{setup, the_call, token_of};
use crate::interop::peers::ScriptClient;
use crate::support::modern_call_as;

/// A 2026-07-28 `tools/call` of `tool` by `sub`, declaring `elicitation.url`, with `extra` params.
fn modern_call(url: &str, sub: &str, tool: &str, extra: Value) -> Value {
    let mut params = json!({"arguments": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let caps = json!({"elicitation": {"url": {}}});
    modern_call_as(&token_of(sub), url, tool, caps, params)
}

#[test]
fn principal_b_never_rides_on_principal_a_s_consent() {
    let Some(s) = setup("url-principals") else {
        return;
    };
    for tool in ["lu__url_required", "mu__url_required"] {
        // alice consents through the Python client.
        let report = s.run(
            ScriptClient::Python,
            "2026-07-28",
            "alice",
            &["--url-elicit"],
            tool,
        );
        assert_eq!(
            the_call(&report)["text"],
            "consented as alice",
            "{tool}: {report}"
        );

        // bob is asked for his own consent, at a link of his own.
        let bob = modern_call(&s.gw.url, "bob", tool, json!({}));
        let result = &bob["result"];
        assert_eq!(
            result["resultType"], "input_required",
            "{tool}: bob was not asked: {bob}"
        );
        let bobs_link = result["inputRequests"]
            .as_object()
            .and_then(|r| r.values().next())
            .and_then(|r| r["params"]["url"].as_str())
            .unwrap_or_else(|| panic!("{tool}: {bob}"))
            .to_owned();
        let alices_links: Vec<String> = report["urlElicitations"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["url"].as_str().map(str::to_owned))
            .collect();
        assert!(
            !alices_links.contains(&bobs_link),
            "{tool}: bob got alice's link"
        );

        // bob retrying with alice's accepted state: refused, it is not his.
        let answered = json!({"requestState": result["requestState"],
            "inputResponses": {"u0": {"action": "accept"}, "consent": {"action": "accept"}}});
        let alice_state = modern_call(&s.gw.url, "alice", tool, json!({}));
        assert_eq!(
            alice_state["result"]["content"][0]["text"], "consented as alice",
            "{tool}: alice is consented: {alice_state}"
        );
        let theirs = json!({"requestState": bob["result"]["requestState"], "inputResponses": answered["inputResponses"]});
        let carol = modern_call(&s.gw.url, "carol", tool, theirs);
        assert_eq!(
            carol["error"]["code"], -32602,
            "{tool}: bob's state opened for carol: {carol}"
        );

        // bob accepting without opening his link is still not consented.
        let retried = modern_call(&s.gw.url, "bob", tool, answered);
        assert_eq!(
            retried["result"]["resultType"], "input_required",
            "{tool}: bob rode on someone's consent: {retried}"
        );
    }
    let consents = s.consents();
    assert!(
        consents.iter().any(|(who, done)| who == "alice" && *done),
        "{consents:?}"
    );
    assert!(
        !consents.iter().any(|(who, done)| who == "bob" && *done),
        "{consents:?}"
    );
    let exchanged = s.exchanged.lock().unwrap().clone();
    assert!(
        exchanged.iter().any(|(sub, _)| sub == "bob"),
        "bob's own token: {exchanged:?}"
    );
}
