//! The admin app in-process (actix-web's test service, no socket): the JSON views of a gateway with the
//! builtin mock and a legacy session, the page and its policy, and each refusal of the guard — a foreign
//! `Host`, a cross-site `Origin` or `Sec-Fetch-Site`, a `POST` without `X-Mcpgw-Admin`, and with `[auth]`
//! a missing or wrong credential (401 with the challenge) and a principal in none of `[admin] groups`
//! (403).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use actix_web::dev::ServiceResponse;
use actix_web::{App, test};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Admin, configure};
use crate::auth::api_key::digest_text;
use crate::config::Config;
use crate::front::fixtures::mocked as mocked_with;
use crate::reload::{Reload, Reloader};
use crate::state::Gateway;

const HOST: &str = "127.0.0.1:7801";
const OPS_KEY: &str = "key-of-olga-the-operator-0123456789";
const DEV_KEY: &str = "key-of-dave-the-developer-0123456789";

#[derive(Debug)]
struct Part(Result<(), String>);

impl Reload for Part {
    fn part(&self) -> &'static str {
        if self.0.is_ok() {
            "fine part"
        } else {
            "failing part"
        }
    }
    fn reload(&self) -> Result<(), String> {
        self.0.clone()
    }
}

fn admin(gw: Arc<Gateway>) -> Admin {
    let parts: Vec<Arc<dyn Reload>> = vec![
        Arc::new(Part(Ok(()))),
        Arc::new(Part(Err("no such file".into()))),
    ];
    Admin {
        gw,
        reload: Reloader::new(None, parts),
        addr: HOST.parse().unwrap(),
        tls: None,
        added: Default::default(),
    }
}

/// The admin app as a test service.
macro_rules! app {
    ($admin:expr) => {{
        let admin = $admin;
        test::init_service(App::new().configure(move |cfg| configure(cfg, admin))).await
    }};
}

/// A gateway with no backend, with `[auth]` (two API keys: `olga` in `ops`, `dave` in `dev`) and
/// `[admin] groups = ["ops"]`.
fn authenticated() -> Arc<Gateway> {
    let text = format!(
        "[admin]\nlisten = \"{HOST}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"olga\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"dave\"\ndigest = \"{}\"\ngroups = [\"dev\"]\n",
        digest_text(OPS_KEY),
        digest_text(DEV_KEY)
    );
    authenticated_by(&text)
}

/// A gateway (no backend) of this config, with the `[auth]` it configures.
fn authenticated_by(text: &str) -> Arc<Gateway> {
    let config = Config::from_toml_str(text, Path::new("t.toml")).unwrap();
    let auth = crate::auth::Authenticator::from_config(&config.auth, &Default::default()).unwrap();
    let keys = Arc::new(crate::cluster::ClusterKeys::random());
    Arc::new(Gateway::new(config, Default::default(), keys).with_auth(auth))
}

fn shutdown(gw: &Gateway) {
    for b in gw.live().backends.values() {
        b.shutdown();
    }
}

/// A legacy session, as an accepted `initialize` starts it; its id.
fn initialize(gw: &Gateway, bound_to: Option<[u8; 16]>) -> String {
    let params = serde_json::from_value(json!({
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "admin-test-client", "version": "4.5.6"}}))
    .unwrap();
    let session = gw
        .sessions
        .create(
            None,
            protocol::Generation::V2025_06_18,
            &params,
            crate::session::Transport::StreamableHttp,
            std::time::Duration::from_secs(60),
            bound_to,
        )
        .unwrap();
    session.id.to_string()
}

fn get(path: &str) -> test::TestRequest {
    test::TestRequest::get()
        .uri(path)
        .insert_header(("Host", HOST))
}

fn post(path: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri(path)
        .insert_header(("Host", HOST))
}

async fn json_of(res: ServiceResponse) -> Value {
    serde_json::from_slice(&test::read_body(res).await).unwrap()
}

#[actix_rt::test]
async fn the_views_show_the_backend_its_catalog_and_a_session_by_its_prefix_only() {
    let (gw, _events) = mocked().await;
    let id = initialize(&gw, None);
    let app = app!(admin(gw.clone()));

    let res = test::call_service(&app, get("/admin/sessions").to_request()).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers().get("cache-control").unwrap(), "no-store");
    assert!(res.headers().get("access-control-allow-origin").is_none());
    let body = json_of(res).await;
    assert_eq!(body["total"], 1, "{body}");
    let session = &body["sessions"][0];
    assert_eq!(
        session["client"],
        json!({"name": "admin-test-client", "version": "4.5.6"})
    );
    assert_eq!(session["generation"], "2025-06-18");
    assert_eq!(session["transport"], "streamable_http");
    assert_eq!(session["principal"], Value::Null);
    assert_eq!(session["stream_open"], false);
    let shown = session["id"].as_str().unwrap();
    let prefix = shown.trim_end_matches('…');
    assert!(
        id.starts_with(prefix) && prefix.len() <= id.len() / 4,
        "{shown} of {id}"
    );
    assert!(
        !body.to_string().contains(&id),
        "the whole id is never shown"
    );

    let body =
        json_of(test::call_service(&app, get("/admin/sessions?limit=0").to_request()).await).await;
    assert_eq!(
        (body["total"].as_u64(), body["shown"].as_u64()),
        (Some(1), Some(0))
    );
    let res = test::call_service(&app, get("/admin/sessions?limit=lots").to_request()).await;
    assert_eq!(res.status(), 400);
    let res = test::call_service(&app, get("/admin/sessions?limit=1001").to_request()).await;
    assert_eq!(res.status(), 400);

    let body = json_of(test::call_service(&app, get("/admin/backends").to_request()).await).await;
    let m = &body["backends"][0];
    assert_eq!(
        (m["name"].as_str(), m["state"].as_str()),
        (Some("m"), Some("ready")),
        "{body}"
    );
    assert_eq!(m["transport"], "in_process");
    assert_eq!(m["circuit"], "closed");
    assert_eq!(m["standing"], "up");
    assert!(m["tools"].as_u64().unwrap() > 0, "{body}");

    let body = json_of(test::call_service(&app, get("/admin/catalog").to_request()).await).await;
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len() as u64, m["tools"].as_u64().unwrap());
    assert!(
        tools
            .iter()
            .all(|t| t["backend"] == "m" && t["name"].as_str().unwrap().starts_with("m__"))
    );

    let body = json_of(test::call_service(&app, get("/admin/summary").to_request()).await).await;
    assert_eq!(body["sessions"], 1);
    assert_eq!(body["status"], "ready");
    assert_eq!(body["server"]["name"], "mcpgw");

    let body = json_of(test::call_service(&app, get("/admin/config").to_request()).await).await;
    assert_eq!(body["admin"]["listen"], HOST);
    assert_eq!(body["backend"][0]["name"], "m");
    shutdown(&gw);
}

#[actix_rt::test]
async fn reload_reloads_every_part_and_says_which_failed() {
    let (gw, _events) = mocked().await;
    let app = app!(admin(gw.clone()));
    let res = test::call_service(
        &app,
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .insert_header(("Origin", "http://127.0.0.1:7801"))
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 200);
    let body = json_of(res).await;
    assert_eq!(
        body,
        json!({"config": null, "reloaded": ["fine part"], "failed": [{"part": "failing part", "why": "no such file"}]})
    );
    shutdown(&gw);
}

#[actix_rt::test]
async fn the_page_is_served_with_a_policy_allowing_only_itself() {
    let app = app!(admin(authenticated()));
    for (path, kind) in [
        ("/admin/", "text/html"),
        ("/admin/admin.js", "text/javascript"),
        ("/admin/admin.css", "text/css"),
    ] {
        // With [auth] too: the page's files hold no data, and a browser cannot navigate with a token.
        let res = test::call_service(&app, get(path).to_request()).await;
        assert_eq!(res.status(), 200, "{path}");
        let csp = res
            .headers()
            .get("content-security-policy")
            .unwrap()
            .to_str()
            .unwrap();
        assert!(
            csp.starts_with("default-src 'none'")
                && !csp.contains("unsafe")
                && !csp.contains("http"),
            "{csp}"
        );
        assert!(
            res.headers()
                .get("content-type")
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        assert_eq!(res.headers().get("x-frame-options").unwrap(), "DENY");
    }
    let html = test::read_body(test::call_service(&app, get("/admin/").to_request()).await).await;
    let html = String::from_utf8_lossy(&html);
    assert!(
        !html.contains("<script>") && !html.contains("style=") && !html.contains("://"),
        "no inline code, nothing from elsewhere"
    );
    let res = test::call_service(&app, get("/").to_request()).await;
    assert_eq!(
        (
            res.status().as_u16(),
            res.headers().get("location").unwrap().to_str().unwrap()
        ),
        (302, "/admin/")
    );
}

#[actix_rt::test]
async fn without_auth_a_foreign_host_or_a_cross_site_request_is_refused() {
    let (gw, _events) = mocked().await;
    let app = app!(admin(gw.clone()));
    let refused = [
        // DNS rebinding: a page's own name resolved to 127.0.0.1.
        test::TestRequest::get()
            .uri("/admin/sessions")
            .insert_header(("Host", "evil.example:7801")),
        test::TestRequest::get()
            .uri("/admin/sessions")
            .insert_header(("Host", "127.0.0.1:7800")),
        test::TestRequest::get().uri("/admin/sessions"),
        get("/admin/sessions").insert_header(("Origin", "http://evil.example")),
        get("/admin/config").insert_header(("Sec-Fetch-Site", "cross-site")),
        get("/admin/config").insert_header(("Sec-Fetch-Site", "same-site")),
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .insert_header(("Origin", "http://evil.example")),
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .insert_header(("Origin", "null")),
    ];
    for (i, req) in refused.into_iter().enumerate() {
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), 403, "case {i}");
        assert_eq!(res.headers().get("cache-control").unwrap(), "no-store");
        let body = json_of(res).await;
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "case {i}: {body}"
        );
    }
    // The controls: the same requests from the admin page's own origin pass.
    for req in [
        get("/admin/sessions").insert_header(("Origin", "http://127.0.0.1:7801")),
        get("/admin/config").insert_header(("Sec-Fetch-Site", "same-origin")),
        get("/admin/config").insert_header(("Sec-Fetch-Site", "none")),
        test::TestRequest::get()
            .uri("/admin/sessions")
            .insert_header(("Host", "localhost:7801")),
    ] {
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), 200);
    }
    shutdown(&gw);
}

#[actix_rt::test]
async fn a_post_without_the_admin_header_is_refused_naming_it() {
    let (gw, _events) = mocked().await;
    let app = app!(admin(gw.clone()));
    // A form post from a page (a simple request: no preflight) cannot add the header.
    let res = test::call_service(
        &app,
        post("/admin/reload")
            .insert_header(("Content-Type", "application/x-www-form-urlencoded"))
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 403);
    let body = json_of(res).await;
    assert!(
        body["error"].as_str().unwrap().contains("X-Mcpgw-Admin"),
        "{body}"
    );
    // The control: with it, the reload runs.
    let res = test::call_service(
        &app,
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 200);
    shutdown(&gw);
}

#[actix_rt::test]
async fn with_auth_a_credential_is_needed_and_its_principal_must_be_in_an_admin_group() {
    let app = app!(admin(authenticated()));
    let bearer = |key: &str| ("Authorization", format!("Bearer {key}"));
    // No credential, or a wrong one: 401 with the gateway's challenge.
    for req in [
        get("/admin/sessions"),
        get("/admin/config").insert_header(bearer("not-a-key-0123456789abcdef")),
        post("/admin/reload").insert_header(("X-Mcpgw-Admin", "1")),
    ] {
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), 401);
        let challenge = res
            .headers()
            .get("www-authenticate")
            .unwrap()
            .to_str()
            .unwrap();
        assert!(
            challenge.starts_with("Bearer realm=\"mcpgw\""),
            "{challenge}"
        );
    }
    // Dave is authenticated but in `dev` only: 403.
    for req in [
        get("/admin/sessions").insert_header(bearer(DEV_KEY)),
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .insert_header(bearer(DEV_KEY)),
    ] {
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), 403);
        assert!(
            json_of(res).await["error"]
                .as_str()
                .unwrap()
                .contains("[admin] groups")
        );
    }
    // Olga is in `ops`: every view, from any host name (the listener may be beyond loopback with [auth]).
    for path in [
        "/admin/sessions",
        "/admin/backends",
        "/admin/catalog",
        "/admin/config",
        "/admin/summary",
    ] {
        let req = test::TestRequest::get()
            .uri(path)
            .insert_header(("Host", "admin.example:7801"))
            .insert_header(bearer(OPS_KEY));
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), 200, "{path}");
    }
    let res = test::call_service(
        &app,
        post("/admin/reload")
            .insert_header(("X-Mcpgw-Admin", "1"))
            .insert_header(bearer(OPS_KEY))
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 200);
    // The config shown names the principals and hides their keys' digests.
    let res = test::call_service(
        &app,
        get("/admin/config")
            .insert_header(bearer(OPS_KEY))
            .to_request(),
    )
    .await;
    let text = String::from_utf8_lossy(&test::read_body(res).await).into_owned();
    assert!(
        text.contains("olga") && !text.contains(&digest_text(OPS_KEY)[7..20]),
        "{text}"
    );
}

#[actix_rt::test]
async fn a_session_bound_to_an_api_keys_principal_shows_its_name() {
    let text = format!(
        "[admin]\nlisten = \"{HOST}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"olga\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n",
        digest_text(OPS_KEY)
    );
    let gw = authenticated_by(&text);
    let binding =
        crate::auth_context::AuthContext::of_principal(&crate::auth::Principal::api_key_id("olga"))
            .binding();
    initialize(&gw, Some(binding));
    initialize(&gw, Some([7; 16]));
    let body = super::views::sessions_json(&gw, 10);
    let mut principals: Vec<Value> = body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["principal"].clone())
        .collect();
    principals.sort_by_key(|p| p.to_string());
    // A token's principal is not known by name here: bound, no name.
    assert_eq!(principals, [json!("olga"), Value::Null]);
}

#[actix_rt::test]
async fn the_admin_listener_serves_the_metrics_behind_its_guard() {
    let (gw, _events) = mocked().await;
    let app = app!(admin(gw.clone()));
    let res = test::call_service(&app, get("/metrics").to_request()).await;
    assert_eq!(res.status(), 200);
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    assert!(body.contains("# TYPE mcpgw_build_info gauge"), "{body}");
    // The guard applies: a foreign Host (DNS rebinding) is refused here too.
    let foreign = test::TestRequest::get()
        .uri("/metrics")
        .insert_header(("Host", "attacker.example:7801"))
        .to_request();
    assert_eq!(test::call_service(&app, foreign).await.status(), 403);
    shutdown(&gw);
}

mod detail;
mod playground;
mod tls;

/// A gateway with an admin listener and the builtin mock as backend `m` (its events kept, unread).
async fn mocked() -> (Arc<Gateway>, mpsc::Receiver<handlers::BackendEvent>) {
    mocked_with(&format!("[admin]\nlisten = \"{HOST}\"")).await
}
