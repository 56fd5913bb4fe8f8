//! The rules of SEP-2624 as the gateway applies them, table by table.

use serde_json::json;

use super::*;

fn chosen(kind: Kind, mode: InterceptorMode, fail_open: bool) -> Chosen {
    Chosen {
        host: 0,
        name: "g".into(),
        kind,
        mode,
        fail_open,
        priority: 0,
    }
}

#[test]
fn descriptors_are_read_and_what_cannot_be_selected_is_skipped() {
    let d = Descriptor::parse(&json!({"name": "g", "type": "mutation", "mode": "enforce",
        "hooks": [{"events": ["tools/call"], "phase": "request"}, {"events": ["tools/*"], "phase": "response"}],
        "priorityHint": {"request": -5}, "failOpen": true, "extra": 1}))
    .expect("a descriptor");
    assert_eq!(d.kind, Kind::Mutation);
    assert_eq!(d.mode, Some(InterceptorMode::Enforce));
    assert_eq!(d.priority, [-5, 0]);
    assert_eq!(d.fail_open, Some(true));
    let hooks = [
        ("tools/call", Phase::Request, true),
        ("tools/call", Phase::Response, true),
        ("resources/read", Phase::Request, false),
        ("toolsx/call", Phase::Response, false),
    ];
    for (event, phase, expected) in hooks {
        assert_eq!(d.hooks(event, phase), expected, "{event} {phase:?}");
    }
    let wildcard = Descriptor::parse(
        &json!({"name": "a", "type": "validation", "hooks": [{"events": ["*"], "phase": "request"}]}),
    )
    .expect("a descriptor");
    assert!(wildcard.hooks("prompts/get", Phase::Request));
    for skipped in [
        json!({"name": "x", "type": "sink", "hooks": []}),
        json!({"name": "x", "type": "validation", "mode": "loud", "hooks": []}),
        json!({"type": "validation", "hooks": []}),
    ] {
        assert_eq!(Descriptor::parse(&skipped), None, "{skipped}");
    }
}

#[test]
fn mutators_run_by_priority_then_name_then_server_and_validators_apart() {
    let c = |host, name: &str, kind, priority| Chosen {
        host,
        name: name.into(),
        kind,
        mode: InterceptorMode::Enforce,
        fail_open: false,
        priority,
    };
    let (validators, mutators) = order(vec![
        c(0, "z", Kind::Mutation, 0),
        c(1, "a", Kind::Mutation, 0),
        c(0, "v", Kind::Validation, -9),
        c(0, "m", Kind::Mutation, -1),
        c(0, "a", Kind::Mutation, 0),
    ]);
    assert_eq!(validators.len(), 1);
    let names: Vec<(usize, &str)> = mutators.iter().map(|m| (m.host, m.name.as_str())).collect();
    assert_eq!(names, [(0, "m"), (0, "a"), (1, "a"), (0, "z")]);
}

#[test]
fn answers_refuse_only_under_enforce_and_failures_only_when_failing_closed() {
    let enforce = chosen(Kind::Validation, InterceptorMode::Enforce, false);
    let result = |valid: bool, severity: Option<&str>| {
        let mut r = json!({"interceptor": "g", "type": "validation", "phase": "request", "valid": valid});
        if let Some(s) = severity {
            r["severity"] = s.into();
        }
        r
    };
    let cases = [
        (result(true, None), false),
        (result(true, Some("error")), false),
        (result(false, None), true),
        (result(false, Some("error")), true),
        (result(false, Some("warn")), false),
        (result(false, Some("info")), false),
        (result(false, Some("bogus")), true),
        // Malformed: does not echo its interceptor → a failure, closed → refuses.
        (json!({"interceptor": "other", "type": "validation", "phase": "request", "valid": true}), true),
        (json!({"interceptor": "g", "type": "validation", "phase": "response", "valid": true}), true),
    ];
    for (r, expected) in cases {
        let a = answer(&enforce, Phase::Request, &r);
        assert_eq!(refuses(&enforce, &a), expected, "{r}");
    }
    let failed = Answer::Failed("timed out".into());
    let table = [
        (InterceptorMode::Enforce, false, true),
        (InterceptorMode::Enforce, true, false),
        (InterceptorMode::Audit, false, false),
        (InterceptorMode::Audit, true, false),
    ];
    for (mode, fail_open, expected) in table {
        let c = chosen(Kind::Validation, mode, fail_open);
        assert_eq!(refuses(&c, &failed), expected, "{mode:?} fail_open={fail_open}");
        let no = answer(&c, Phase::Request, &result(false, None));
        assert_eq!(refuses(&c, &no), mode == InterceptorMode::Enforce);
    }
}

#[test]
fn a_mutation_answer_is_its_payload_only_when_modified() {
    let m = chosen(Kind::Mutation, InterceptorMode::Enforce, false);
    let base = json!({"interceptor": "g", "type": "mutation", "phase": "response"});
    let with = |extra: serde_json::Value| {
        let mut r = base.clone();
        r.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        r
    };
    assert_eq!(
        answer(&m, Phase::Response, &with(json!({"modified": true, "payload": {"a": 1}}))),
        Answer::Rewrite(Some(json!({"a": 1})))
    );
    assert_eq!(
        answer(&m, Phase::Response, &with(json!({"modified": false, "payload": {}}))),
        Answer::Rewrite(None)
    );
    assert!(matches!(answer(&m, Phase::Response, &with(json!({"modified": true}))), Answer::Failed(_)));
    assert!(matches!(
        answer(&m, Phase::Response, &with(json!({"type": "validation", "valid": true}))),
        Answer::Failed(_)
    ));
}

#[test]
fn the_request_payload_and_invocation_carry_what_the_extension_names() {
    let payload = request_payload(
        "tools/call",
        Some(&json!({"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 1}})),
    );
    assert_eq!(payload, json!({"method": "tools/call", "params": {"name": "t", "arguments": {"a": 1}}}));
    let c = chosen(Kind::Validation, InterceptorMode::Enforce, false);
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_655_845);
    let params = invoke_params(&c, "tools/call", Phase::Request, &payload, 1500, Some("alice"), at);
    assert_eq!(params["name"], "g");
    assert_eq!(params["phase"], "request");
    assert_eq!(params["timeoutMs"], 1500);
    assert_eq!(params["context"]["principal"], json!({"type": "user", "id": "alice"}));
    assert_eq!(params["context"]["timestamp"], "2026-12-07T15:04:05Z");
    let times = [(0, "1970-01-01T00:00:00Z"), (951_782_400, "2000-02-29T00:00:00Z")];
    for (secs, text) in times {
        assert_eq!(rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)), text);
    }
}
