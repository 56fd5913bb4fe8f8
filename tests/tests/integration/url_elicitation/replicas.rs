//! The 2026-07-28 retry of a URL elicitation answered by another replica: two mcpgw replicas behind nginx
//! (the shipped config: round robin, no stickiness) sharing a key ring and Redis. The SDK client's first
//! `tools/call` gets the `input_required` result from one replica, its accepting retry goes to the other,
//! which opens the sealed state, claims its single use in Redis and sends the call to the backend again.

use serde_json::Value;

use super::{config, exchange_endpoint, token_of};
use crate::interop::peers::{self, ScriptClient};
use crate::replicas::cluster::{Nginx, Redis, Replica, have};
use crate::replicas::three::new_key;
use crate::support::TempDir;

/// The `tools/call` requests of principal `sub` a replica's access log shows among `lines`.
fn calls(lines: &[String], sub: &str) -> usize {
    let principal = format!("principal=\"{sub}\"");
    lines
        .iter()
        .filter(|l| l.contains(" access method=tools/call") && l.contains(&principal))
        .count()
}

#[test]
fn a_2026_07_28_retry_is_answered_by_another_replica_behind_nginx() {
    let Some(deps) = peers::deps("url_elicitation::replicas") else {
        return;
    };
    assert!(
        have("redis-server") && have("nginx"),
        "redis-server and nginx are needed (Debian's packages; .ci/run installs them)"
    );
    let server = peers::python_fixture(&deps, "url_server.py", &[], "url_server listening on ");
    let dir = TempDir::new("url-replicas");
    let redis = Redis::start(&dir);
    let keys = dir.file("keys", &format!("{}\n", new_key()));
    let (token_url, _exchanged) = exchange_endpoint();
    let cluster = format!(
        "[cluster]\nredis = {:?}\nkeys_file = {:?}\n\n[[middleware]]\nkind = \"access_log\"\n\n",
        redis.url(),
        keys.display().to_string()
    );
    let file = dir.file(
        "mcpgw.toml",
        &config(&dir, &server.url, &token_url, &cluster),
    );
    let mut replicas = [Replica::new(&file, None), Replica::new(&file, None)];
    for r in &mut replicas {
        r.start();
    }
    let nginx = Nginx::start(&dir, &[replicas[0].port, replicas[1].port]);
    for r in &replicas {
        super::wait_for_tools(r.process.as_ref().unwrap(), &["lu__url_required"]);
    }

    for (client, sub) in [
        (ScriptClient::Python, "py-replicas"),
        (ScriptClient::TypeScript, "ts-replicas"),
    ] {
        for r in &replicas {
            let _ = r.process.as_ref().unwrap().log_lines();
        }
        let args: Vec<String> = [
            "--url-elicit".to_owned(),
            "--header".to_owned(),
            format!("Authorization: Bearer {}", token_of(sub)),
            "--call".to_owned(),
            "lu__url_required".to_owned(),
            "{}".to_owned(),
        ]
        .into();
        let report: Value = peers::script_client(&deps, client, &nginx.url(), "2026-07-28", &args)
            .unwrap_or_else(|e| panic!("{client:?}: {e}"));
        let call = &report["calls"][0];
        assert_eq!(
            call["text"],
            format!("consented as {sub}"),
            "{client:?}: {report}"
        );
        assert_eq!(
            report["urlElicitations"][0]["via"], "input_required",
            "{client:?}: {report}"
        );
        // The call and its retry, one on each replica.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let served: Vec<usize> = replicas
            .iter()
            .map(|r| calls(&r.process.as_ref().unwrap().log_lines(), sub))
            .collect();
        assert_eq!(
            served,
            vec![1, 1],
            "{client:?}: tools/call per replica: {served:?}"
        );
    }
}
