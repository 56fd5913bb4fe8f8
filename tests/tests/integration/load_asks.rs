//! `mcpgw load` with `ask` in its mix (issue 14 §3: sessions that answer a backend's question), through the
//! gateway, against the Python SDK backend whose tools ask the client (`tests/fixtures/interop/py_asking_server.py`,
//! 2026-07-28): a legacy session gets the backend's elicitation as a request on its call's SSE stream (the
//! gateway turns the backend's `input_required` into it) and answers it with a POST; a 2026-07-28 client gets
//! the `input_required` result and retries with `inputResponses` and the `requestState`. Both counted in the
//! JSON report's `operations.ask`. The builtin mock's `echo` takes the plain `tools/call`s of the mix.
//!
//! Needs the interop peers (`tests/fixtures/interop/setup.sh`); skipped with `MCPGW_SKIP_INTEROP=1`. The
//! run is bounded in requests and time, and every process is killed on drop.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::interop::peers::{Proc, deps, run_bounded, wait_for_tools};
use crate::support::*;

/// Calls of the run: half of them asks.
const REQUESTS: u64 = 40;

#[test]
fn load_answers_a_backends_questions_in_both_eras() {
    let Some(deps) = deps("load_answers_a_backends_questions_in_both_eras") else {
        return;
    };
    let mut py = Command::new(&deps.python);
    py.arg(deps.dir.join("py_asking_server.py"))
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "600"])
        .env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    let py = Proc::start(py, "py_asking_server listening on ");
    let dir = TempDir::new("load-asks");
    let config = format!(
        "[[backend]]\nname = \"asker\"\nprefix = \"ask\"\nurl = {}\n\n\
         [[backend]]\nname = \"mock\"\nprefix = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        serde_json::to_string(&py.url).unwrap()
    );
    let gw = gateway(&config, &dir);
    wait_for_tools(&gw, &["ask__py_ask_name", "m__echo"]);

    let mut load = Command::new(mcpgw());
    load.args([
        "load",
        "--url",
        &gw.url,
        "--era",
        "mixed",
        "--sessions",
        "4",
    ])
    .args([
        "--mix",
        "tools/call=1,ask=1",
        "--ask-tool",
        "ask__py_ask_name",
    ])
    .args(["--ask-args", r#"{"greeting":"hi"}"#])
    .args(["--requests", &REQUESTS.to_string(), "--duration", "60s"])
    .args([
        "--timeout",
        "10s",
        "--threads",
        "2",
        "--no-progress",
        "--json",
        "-",
    ]);
    let (_, stdout, stderr) = run_bounded(load, Duration::from_secs(120));
    let logs = || {
        let gateway: Vec<String> = gw.log.try_iter().collect();
        format!(
            "--- mcpgw load ---\n{stderr}\n--- mcpgw ---\n{}\n--- py_asking_server ---\n{}",
            gateway.join("\n"),
            py.drain_log().join("\n")
        )
    };
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stdout}\n{}", logs()));
    println!("{stderr}"); // the table

    assert_eq!(report["requests"], REQUESTS, "{}", logs());
    assert_eq!(report["errors"], 0, "{report:#}\n{}", logs());
    assert_eq!(report["ask_tool"], "ask__py_ask_name");
    assert_eq!(report["tool"], "m__echo");
    let ask = &report["operations"]["ask"];
    assert_eq!(ask["requests"], REQUESTS / 2, "{ask:#}");
    assert_eq!(ask["outcomes"]["ok"], REQUESTS / 2, "{ask:#}");
    assert_eq!(ask["answers_refused"], 0, "{ask:#}");
    assert_eq!(ask["questions_answered"], REQUESTS / 2, "{ask:#}");
    assert_eq!(
        report["operations"]["tools/call"]["outcomes"]["ok"],
        REQUESTS / 2
    );
    let era = |name: &str, key: &str| ask["by_era"][name][key].as_u64().unwrap_or_default();
    let (legacy, modern) = (era("legacy", "requests"), era("modern", "requests"));
    assert!(legacy > 0 && modern > 0, "asks in both eras: {ask:#}");
    assert_eq!(legacy + modern, REQUESTS / 2, "{ask:#}");
    // Every ask ended in its result, after exactly one question answered: a legacy session's on its stream
    // (no input_required reached it), a 2026-07-28 client's through one input_required round.
    for (name, asks, rounds) in [("legacy", legacy, 0), ("modern", modern, modern)] {
        assert_eq!(era(name, "ok"), asks, "{name}: {ask:#}");
        assert_eq!(era(name, "questions_answered"), asks, "{name}: {ask:#}");
        assert_eq!(
            era(name, "input_required_rounds"),
            rounds,
            "{name}: {ask:#}"
        );
    }
}
