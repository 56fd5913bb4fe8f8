//! The front door's probes and what it no longer serves, in-process (actix-web's test service, no socket):
//! `/readyz` and `/healthz` answer any `Host` with the status alone — no backend's name, state or reason —
//! and `/metrics` is not the front door's, with or without an admin listener.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use actix_web::{App, test};
use handlers::BackendHandle;
use serde_json::{Value, json};

use crate::config::Config;
use crate::state::Gateway;

/// A backend name a `[[policy]]` could hide from clients: it must not reach them through a probe.
const BACKEND: &str = "payroll-internal";

/// The front door with the builtin mock as backend [`BACKEND`], listening beyond loopback; with its first
/// catalog when `built`.
async fn gateway(built: bool) -> Arc<Gateway> {
    let text = format!(
        "[server]\nlisten = \"0.0.0.0:7800\"\n[[backend]]\nname = \"{BACKEND}\"\nbuiltin = [\"mock-backend\"]\n"
    );
    let config = Config::from_toml_str(&text, Path::new("t.toml")).unwrap();
    let (events, _rx) = tokio::sync::mpsc::channel(64);
    let mock = mock::InProcessMock::from_words(&[]).unwrap();
    let transport = handlers::Transport::InProcess(handlers::InProcess(Arc::new(mock)));
    let backend = BackendHandle::start(handlers::BackendConfig::new(BACKEND, transport), events);
    let keys = Arc::new(crate::cluster::ClusterKeys::random());
    let gw = Arc::new(Gateway::new(
        config,
        [(BACKEND.to_owned(), backend)].into(),
        keys,
    ));
    if built {
        let first = crate::notify::listing::first_catalog(&gw).await.unwrap();
        gw.catalog.replace(Arc::new(first));
    }
    gw
}

fn shutdown(gw: &Gateway) {
    for b in gw.live().backends.values() {
        b.shutdown();
    }
}

macro_rules! front_door {
    ($gw:expr) => {{
        let gw = $gw.clone();
        test::init_service(App::new().configure(move |cfg| super::configure(cfg, gw, Default::default()))).await
    }};
}

#[actix_rt::test]
async fn readyz_on_the_front_door_names_no_backend() {
    for (built, status, word) in [(false, 503, "starting"), (true, 200, "ready")] {
        let gw = gateway(built).await;
        let app = front_door!(gw);
        // A kubelet probe names the pod's address; a DNS-rebound page names its own host: both get the
        // status, neither the detail.
        for host in ["10.1.2.3:7800", "127.0.0.1:7800", "attacker.example"] {
            let req = test::TestRequest::get()
                .uri("/readyz")
                .insert_header(("Host", host))
                .to_request();
            let res = test::call_service(&app, req).await;
            assert_eq!(res.status(), status, "host {host}, built {built}");
            let body = test::read_body(res).await;
            let text = String::from_utf8_lossy(&body);
            assert!(!text.contains(BACKEND), "host {host}: {text}");
            let body: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body, json!({"ready": built, "status": word}), "host {host}");
        }
        let req = test::TestRequest::get()
            .uri("/healthz")
            .insert_header(("Host", "10.1.2.3:7800"))
            .to_request();
        assert_eq!(test::call_service(&app, req).await.status(), 200);
        shutdown(&gw);
    }
}

#[actix_rt::test]
async fn metrics_on_the_front_door_is_not_served_to_anyone() {
    // No `[admin] listen`: the front door used to serve the metrics then, to any Host.
    let gw = gateway(true).await;
    assert!(gw.config.admin.listen.is_none());
    let app = front_door!(gw);
    for host in ["127.0.0.1:7800", "10.1.2.3:7800"] {
        let req = test::TestRequest::get()
            .uri("/metrics")
            .insert_header(("Host", host))
            .to_request();
        let res = test::call_service(&app, req).await;
        assert_eq!(res.status(), 404, "host {host}");
        let body = test::read_body(res).await;
        let text = String::from_utf8_lossy(&body);
        assert!(
            !text.contains("mcpgw_") && !text.contains(BACKEND),
            "host {host}: {text}"
        );
    }
    shutdown(&gw);
}

/// Issue 35 §1: `GET /` tells a person where the MCP endpoint is, names no backend and echoes nothing of
/// the request; another method or path is still 404/405 as before.
#[actix_rt::test]
async fn get_root_says_where_the_mcp_endpoint_is() {
    let gw = gateway(true).await;
    let app = front_door!(gw);
    let req = test::TestRequest::get()
        .uri("/")
        .insert_header(("Host", "attacker.example"))
        .to_request();
    let res = test::call_service(&app, req).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers().get("content-type").unwrap(),
        "text/plain; charset=utf-8"
    );
    let body = test::read_body(res).await;
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("The MCP endpoint is /mcp"), "{text}");
    assert!(text.contains("mcpgw tools --url"), "{text}");
    assert!(
        !text.contains(BACKEND) && !text.contains("attacker"),
        "{text}"
    );
    let req = test::TestRequest::post().uri("/").to_request();
    assert_ne!(test::call_service(&app, req).await.status(), 200);
    let req = test::TestRequest::get().uri("/elsewhere").to_request();
    assert_eq!(test::call_service(&app, req).await.status(), 404);
    shutdown(&gw);
}
