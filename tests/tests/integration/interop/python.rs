//! The Python SDK client (`py_client.py`) straight to the Python SDK server, no gateway: tells a broken peer
//! or fixture apart from a gateway bug when the matrix fails.

use super::peers::{self, ScriptClient};

#[test]
fn python_sdk_client_reaches_the_python_backend_directly() {
    let Some(deps) = peers::deps("python_sdk_client_reaches_the_python_backend_directly") else {
        return;
    };
    let py = peers::py_server(&deps, &[]);
    let mut failures = Vec::new();
    for (mode, version) in super::matrix::SCRIPT_MODES {
        let args = ["--call", "py_add", r#"{"a": 2, "b": 40}"#].map(str::to_owned);
        match peers::script_client(&deps, ScriptClient::Python, &py.url, mode, &args) {
            Ok(report)
                if report["protocolVersion"] == version && report["calls"][0]["text"] == "42" => {}
            Ok(report) => failures.push(format!("mode={mode} (expected {version}): {report}")),
            Err(e) => failures.push(format!("mode={mode}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "Python SDK client, no gateway:\n  {}\n{:?}",
        failures.join("\n  "),
        py.drain_log()
    );
}
