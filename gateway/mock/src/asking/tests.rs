//! The `asks` tool's questions, result text and signed 2026-07-28 state.

use serde_json::{Value, json};

use super::*;

fn params(v: Value) -> CallToolRequestParams {
    serde_json::from_value(v).unwrap()
}

fn call(signer: &Signer, v: Value) -> Result<Value, Error> {
    let raw = modern(signer, &params(v))?;
    Ok(serde_json::from_str(raw.get()).unwrap())
}

fn caps(c: Value) -> Value {
    json!({"name": "asks", "_meta": {CLIENT_CAPABILITIES: c}})
}

#[test]
fn only_declared_questions_are_asked() {
    let both = json!({"elicitation": {}, "sampling": {}});
    assert_eq!(
        questions(Generation::V2025_11_25, Some(&both)),
        vec![Question::Elicitation, Question::Sampling]
    );
    // Elicitation came in 2025-06-18.
    assert_eq!(
        questions(Generation::V2025_03_26, Some(&both)),
        vec![Question::Sampling]
    );
    assert_eq!(
        questions(Generation::V2026_07_28, Some(&json!({"roots": {}}))),
        vec![]
    );
    assert_eq!(questions(Generation::V2026_07_28, None), vec![]);
}

#[test]
fn a_modern_call_asks_then_answers_with_the_answers() {
    let signer = Signer::new();
    let first = call(&signer, caps(json!({"elicitation": {}, "sampling": {}}))).unwrap();
    assert_eq!(first["resultType"], "input_required");
    let requests = first["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests["elicitation"]["method"], "elicitation/create");
    assert_eq!(requests["sampling"]["method"], "sampling/createMessage");
    let state = first["requestState"].as_str().unwrap();
    let mut retry = caps(json!({"elicitation": {}, "sampling": {}}));
    retry["requestState"] = json!(state);
    retry["inputResponses"] = json!({
        "elicitation": {"action": "accept", "content": {"name": "n"}},
        "sampling": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
    });
    let done = call(&signer, retry.clone()).unwrap();
    let text = done["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "elicitation: {\"action\":\"accept\",\"content\":{\"name\":\"n\"}}\nsampling: {\"content\":{\"text\":\"hi\",\"type\":\"text\"},\"model\":\"m\",\"role\":\"assistant\"}"
    );
    // A missing answer is refused.
    retry["inputResponses"] = json!({"elicitation": {"action": "decline"}});
    let err = call(&signer, retry).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidParams);
    assert!(
        err.message().contains("lacks the answer to \"sampling\""),
        "{}",
        err.message()
    );
}

#[test]
fn a_client_that_declared_nothing_is_told_so() {
    let done = call(&Signer::new(), json!({"name": "asks"})).unwrap();
    assert_eq!(
        done["content"][0]["text"],
        "nothing asked: the client declared neither elicitation nor sampling"
    );
    assert!(done.get("isError").is_none());
}

#[test]
fn forged_garbled_expired_or_missing_states_are_refused() {
    let signer = Signer::new();
    let good = signer.sign(&[Question::Sampling], now_ms() + 60_000);
    assert_eq!(
        signer.verify(&good, now_ms()).unwrap(),
        vec![Question::Sampling]
    );
    let other = Signer::new().sign(&[Question::Sampling], now_ms() + 60_000);
    let widened = good.replacen('s', "es", 1);
    let expired = signer.sign(&[Question::Sampling], 5);
    for (state, why) in [
        (other.as_str(), "forged"),
        (widened.as_str(), "forged"),
        ("garbage", "forged"),
        ("s.1.!!", "forged"),
        (expired.as_str(), "expired"),
    ] {
        let mut p = caps(json!({"sampling": {}}));
        p["requestState"] = json!(state);
        p["inputResponses"] = json!({"sampling": {}});
        let err = call(&signer, p).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidParams, "{state}");
        assert!(err.message().contains(why), "{state}: {}", err.message());
    }
    let mut p = caps(json!({"sampling": {}}));
    p["inputResponses"] = json!({"sampling": {}});
    let err = call(&signer, p).unwrap_err();
    assert!(
        err.message().contains("without the requestState"),
        "{}",
        err.message()
    );
}
