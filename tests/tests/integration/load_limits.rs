//! The load generator's own limits (docs/src/load-testing.md, "The generator's own limits"), bounded for
//! CI: 20,000 legacy sessions open at once from one generator process against the mock backend, every one
//! set up and used, and what they cost the generator by its own report — so that 100,000 stay under 1 GiB
//! (the docs measure 100,000 with the release build).

use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// Sessions here; the goal is about 100,000.
const SESSIONS: u64 = 20_000;
const GOAL_SESSIONS: f64 = 100_000.0;

#[test]
fn twenty_thousand_legacy_sessions_cost_what_keeps_a_hundred_thousand_under_a_gibibyte() {
    let mock = http_mock(&[]);
    let dir = TempDir::new("load-limits");
    let report = dir.0.join("report.json");
    let out = Command::new(mcpgw())
        .args(["load", "--url", &mock.url, "--era", "legacy"])
        .args([
            "--sessions",
            &SESSIONS.to_string(),
            "--rate",
            "500/s",
            "--duration",
            "2s",
        ])
        .args(["--no-progress", "--json"])
        .arg(&report)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    // Every session was set up (an initialize each) and the load ran without an error.
    assert_eq!(
        r["operations"]["initialize"]["requests"].as_u64(),
        Some(SESSIONS),
        "{stdout}"
    );
    assert_eq!(
        r["operations"]["initialize"]["errors"].as_u64(),
        Some(0),
        "{stdout}"
    );
    assert_eq!(r["errors"].as_u64(), Some(0), "{stdout}");
    assert!(r["requests"].as_u64().unwrap() > 0, "{stdout}");
    // What the sessions cost, extrapolated to the goal, is under a GiB; the whole process is too.
    let m = &r["memory"];
    let per_session_kib = m["per_session_kib"]
        .as_f64()
        .expect("the report has its memory");
    assert!(
        per_session_kib * GOAL_SESSIONS / 1024.0 < 1024.0,
        "{per_session_kib} KiB per session: {stdout}"
    );
    assert!(m["peak_mib"].as_f64().unwrap() < 1024.0, "{stdout}");
    assert!(stdout.contains("KiB per session"), "{stdout}");
}
