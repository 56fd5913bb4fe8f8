//! Resource rules decide on the normalized URI, through the pipeline. Backend `files` is the mock with a
//! `file:///{+path}` template in front (it reads any URI under `file:///` and records what it was sent). A
//! `[[policy]]` denies `carol` `file:///secret/*`, and the endpoint `/mcp/files` leaves it out for everyone:
//! a percent-encoded or dot-segment form of a denied URI is answered exactly as a URI nobody serves and never
//! reaches the backend, while a URI whose forms are judged alike goes to the backend as the client wrote it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use handlers::{BackendConfig, BackendHandle, InProcess, InProcessAnswer, InProcessServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::fixtures::{json_of, modern_request, principal};
use super::{Exchange, InProcessGateway};
use crate::config::Config;

const FILES: &str = r#"
# The rules name principals: they apply only with [auth] (the tests give each request its principal).
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "files"
builtin = ["mock-backend"]

[[policy]]
principal = "carol"
allow = ["*"]
deny = ["resource:file:///secret/*"]

[[policy]]
principal = "dan"
allow = ["*"]

[[endpoint]]
path = "/mcp/files"
name = "files"
resources = { deny = ["file:///secret/*"] }
"#;

/// The mock, with a `file:///{+path}` template whose reads answer the URI they were sent (and record it).
struct Files {
    mock: mock::InProcessMock,
    read: Arc<Mutex<Vec<String>>>,
}

impl InProcessServer for Files {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let request: Value = serde_json::from_slice(&message).unwrap_or_default();
        let result = match request["method"].as_str() {
            Some("resources/templates/list") => json!({"resourceTemplates": [
                {"uriTemplate": "file:///{+path}", "name": "files"}]}),
            Some("resources/read") => {
                let uri = request["params"]["uri"].as_str().unwrap_or_default();
                self.read.lock().unwrap().push(uri.to_owned());
                json!({"contents": [{"uri": uri, "text": uri}]})
            }
            _ => return self.mock.handle(message),
        };
        let mut result = result;
        result["resultType"] = json!("complete");
        let response = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        Box::pin(async move { Some(response.to_string().into_bytes()) })
    }
}

async fn gateway() -> (InProcessGateway, Arc<Mutex<Vec<String>>>) {
    let read = Arc::new(Mutex::new(Vec::new()));
    let server = Files {
        mock: mock::InProcessMock::from_words(&[]).unwrap(),
        read: read.clone(),
    };
    let mut bc = BackendConfig::new(
        "files",
        handlers::Transport::InProcess(InProcess(Arc::new(server))),
    );
    bc.client_info = crate::state::server_info();
    let (tx, rx) = mpsc::channel(16);
    let backends = BTreeMap::from([("files".to_owned(), BackendHandle::start(bc, tx))]);
    let config = Config::from_toml_str(FILES, Path::new("files.toml")).unwrap();
    let gw = InProcessGateway::start_with_backends(config, backends, rx)
        .await
        .unwrap();
    (gw, read)
}

async fn read(gw: &InProcessGateway, path: &str, who: &str, uri: &str) -> Exchange {
    let (headers, body) = modern_request("resources/read", json!({"uri": uri}), &[]);
    gw.post_at(path, principal(who, &[], &[]), headers, body)
        .await
}

/// `refused` is exactly `unregistered` with the unregistered URI read as the refused one.
fn assert_same_answer(refused: &Exchange, unregistered: &Exchange, uri: &str, nobody: &str) {
    assert_eq!(refused.status, unregistered.status, "{uri}: {refused:?}");
    assert_eq!(refused.headers, unregistered.headers, "{uri}");
    let expected = String::from_utf8_lossy(&unregistered.body).replace(nobody, uri);
    assert_eq!(String::from_utf8_lossy(&refused.body), expected, "{uri}");
}

#[actix_rt::test]
async fn a_percent_encoded_or_dot_segment_form_of_a_denied_uri_is_not_found() {
    let (gw, backend_read) = gateway().await;
    const NOBODY: &str = "nothing://nobody";
    let forms = [
        "file:///secret/key",
        "file:///%73ecret/key",
        "file:///%73%65%63%72%65%74/key",
        "file:///public/../secret/key",
        "file:///public/%2e%2E/secret/key",
        "file:///./secret/key",
        "file:///../../secret/key",
        "file:///secret/./key",
        "file:///public/.%2E/secret/key",
    ];
    // (endpoint, principal): carol's policy denies it at /mcp, the endpoint's selection for anyone.
    for (path, who) in [("/mcp", "carol"), ("/mcp/files", "dan")] {
        let unregistered = read(&gw, path, who, NOBODY).await;
        assert_eq!(
            json_of(&unregistered)["error"]["data"]["uri"],
            NOBODY,
            "{unregistered:?}"
        );
        for uri in forms {
            let refused = read(&gw, path, who, uri).await;
            assert_same_answer(&refused, &unregistered, uri, NOBODY);
        }
    }
    assert_eq!(*backend_read.lock().unwrap(), Vec::<String>::new());
    // dan at /mcp may read it in any form: the backend gets each as it was sent.
    for uri in forms {
        let allowed = read(&gw, "/mcp", "dan", uri).await;
        assert_eq!(json_of(&allowed)["result"]["contents"][0]["text"], uri);
    }
    // A URI whose forms carol's rules judge alike reaches the backend as she wrote it, not normalized.
    for uri in [
        "file:///public/%6bey",
        "file:///public/./key",
        "file:///public/a%2Fb",
    ] {
        let allowed = read(&gw, "/mcp", "carol", uri).await;
        assert_eq!(
            json_of(&allowed)["result"]["contents"][0]["text"],
            uri,
            "{allowed:?}"
        );
    }
    let sent = backend_read.lock().unwrap().clone();
    let mut expected: Vec<&str> = forms.to_vec();
    expected.extend([
        "file:///public/%6bey",
        "file:///public/./key",
        "file:///public/a%2Fb",
    ]);
    assert_eq!(sent, expected);
}
