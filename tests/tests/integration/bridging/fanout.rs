//! 1,000 concurrent sessions, each hearing only its own progress and one list change; and the regression
//! test for progress sent just before a response.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::interop::peers::wait_for_tools;
use crate::support::*;

/// How long one wait may take.
use super::sessions::*;

/// The gateway with the progress backend, its catalog listed.
fn gateway_with_progress_backend(dir: &TempDir) -> Running {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/progress_server.py");
    let config = format!(
        "[[backend]]\nname = \"progress\"\nprefix = \"\"\nmax_in_flight = 1024\ncommand = [\"python3\", {:?}]\n",
        script.to_string_lossy()
    );
    let gw = gateway(&config, dir);
    wait_for_tools(&gw, &["work", "grow"]);
    gw
}

#[test]
fn a_thousand_sessions_each_hear_only_their_own_progress_and_one_list_change() {
    let started = Instant::now();
    let dir = TempDir::new("bridging-fanout");
    let gw = gateway_with_progress_backend(&dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tls_provider();
    let fan = Arc::new(Fanout {
        url: gw.url.clone(),
        http: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
        workers: Arc::new(tokio::sync::Semaphore::new(WORKERS)),
    });
    let fanout = async {
        // every session and listen stream open at once
        let mut legacy_set = tokio::task::JoinSet::new();
        for i in 0..LEGACY {
            let fan = fan.clone();
            legacy_set.spawn(async move { fan.open_legacy(i).await.map(|s| (s, i)) });
        }
        let mut modern_set = tokio::task::JoinSet::new();
        for i in 0..MODERN {
            let fan = fan.clone();
            modern_set.spawn(async move { fan.open_modern(i).await.map(|c| (c, i)) });
        }
        let mut legacy: Vec<Option<Arc<LegacySession>>> = (0..LEGACY).map(|_| None).collect();
        let mut modern: Vec<Option<ModernClient>> = (0..MODERN).map(|_| None).collect();
        let mut problems = Vec::new();
        while let Some(r) = legacy_set.join_next().await {
            match r.expect("task") {
                Ok((s, i)) => legacy[i] = Some(Arc::new(s)),
                Err(e) => problems.push(e),
            }
        }
        while let Some(r) = modern_set.join_next().await {
            match r.expect("task") {
                Ok((c, i)) => modern[i] = Some(c),
                Err(e) => problems.push(e),
            }
        }
        assert!(
            problems.is_empty(),
            "opening the sessions: {}",
            summary(&problems)
        );
        let legacy: Vec<Arc<LegacySession>> = legacy.into_iter().map(Option::unwrap).collect();
        let modern: Vec<ModernClient> = modern.into_iter().map(Option::unwrap).collect();
        eprintln!(
            "fanout: {} legacy sessions and {} listen streams open after {:?}",
            legacy.len(),
            modern.len(),
            started.elapsed()
        );

        // 1,000 calls, interleaved across eras, WORKERS at a time, each with its own progress token
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..LEGACY.max(MODERN) {
            if let Some(s) = legacy.get(i) {
                let fan = fan.clone();
                let s = s.clone();
                calls.spawn(async move { fan.legacy_call(s, i).await.map(|()| true) });
            }
            if i < MODERN {
                calls.spawn(fan.clone().modern_call(i));
            }
        }
        let (mut answered, mut short) = (0, 0);
        while let Some(r) = calls.join_next().await {
            match r.expect("task") {
                Ok(complete) => {
                    answered += 1;
                    short += usize::from(!complete);
                }
                Err(e) => problems.push(e),
            }
        }
        assert!(problems.is_empty(), "the calls: {}", summary(&problems));
        assert_eq!(answered, LEGACY + MODERN);
        eprintln!(
            "fanout: {answered} calls answered after {:?}; {short} 2026-07-28 call(s) missed some of their own progress",
            started.elapsed()
        );

        // one list change
        let grow = json!({"jsonrpc": "2.0", "id": "grow", "method": "tools/call", "params": {"name": "grow", "arguments": {}}});
        let text = fan
            .legacy_post(&legacy[0], &grow)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .expect("grow")
            .text()
            .await
            .expect("grow's answer");
        assert!(text.contains("grown"), "{text}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let missing = legacy
                .iter()
                .filter(|s| list_changes(&s.get).is_empty())
                .count()
                + modern
                    .iter()
                    .filter(|c| list_changes(&c.listen).is_empty())
                    .count();
            if missing == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{missing} of {} streams never heard the list change",
                LEGACY + MODERN
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "fanout: every stream heard the list change after {:?}",
            started.elapsed()
        );
        // a late duplicate would arrive within this
        tokio::time::sleep(Duration::from_millis(1500)).await;

        for (i, s) in legacy.iter().enumerate() {
            let heard = s.get.lock().unwrap().clone();
            let changes = list_changes(&s.get);
            if changes.len() != 1 {
                problems.push(format!(
                    "legacy session {i}: {} list changes on its GET stream",
                    changes.len()
                ));
            }
            // nothing else belongs on a GET stream here: the progress went on each call's own stream
            if let Some(other) = heard
                .iter()
                .find(|m| m["method"] != "notifications/tools/list_changed")
            {
                problems.push(format!(
                    "legacy session {i}: its GET stream carried {other}"
                ));
            }
        }
        for (i, c) in modern.iter().enumerate() {
            let changes = list_changes(&c.listen);
            if changes.len() != 1 {
                problems.push(format!("listen stream {i}: {} list changes", changes.len()));
            }
            for m in &changes {
                if m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] != *c.listen_id {
                    problems.push(format!(
                        "listen stream {i}: a list change not tagged {}: {m}",
                        c.listen_id
                    ));
                }
            }
            let heard = c.listen.lock().unwrap().clone();
            if let Some(other) = heard.iter().find(|m| {
                m["method"] != "notifications/tools/list_changed"
                    && m["method"] != "notifications/subscriptions/acknowledged"
            }) {
                problems.push(format!("listen stream {i} carried {other}"));
            }
        }
        assert!(
            problems.is_empty(),
            "the list change: {}",
            summary(&problems)
        );

        // the catalog was refreshed before the notification went out
        let list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}});
        let tools = fan
            .legacy_post(&legacy[1], &list)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .expect("tools/list")
            .text()
            .await
            .expect("tools/list's answer");
        assert!(tools.contains("\"grown_0\""), "{tools}");
    };
    let outcome =
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(150), fanout).await });
    drop(rt);
    assert!(outcome.is_ok(), "the fan-out did not finish within 150 s");
    eprintln!("fanout: done in {:?}", started.elapsed());
}

/// Regression, found by the fan-out test: when a legacy backend sent a call's last `notifications/progress`
/// immediately before the response (one stdout write apart), a 2026-07-28 client often did not get it:
/// `replay::forward` returned on the answer without passing on the notifications still queued.
#[test]
fn a_2026_client_hears_the_progress_sent_just_before_its_response() {
    let dir = TempDir::new("bridging-last-progress");
    let gw = gateway_with_progress_backend(&dir);
    let mut lost = Vec::new();
    for i in 0..100 {
        let (token, tag, id) = (json!(format!("p-{i}")), format!("T{i}"), json!(i));
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "progressToken": token},
            "name": "work", "arguments": {"tag": tag, "steps": STEPS, "settle_ms": 0}}});
        let reply = post_raw(
            &gw.url,
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "work"),
            ],
            body.to_string(),
        );
        let messages = sse_data(&reply.text);
        if let Err(e) = check_call(&format!("call {i}"), &token, &tag, &id, &messages, false) {
            lost.push(e);
        }
    }
    assert!(lost.is_empty(), "{}", summary(&lost));
}
