//! The playground (`POST /admin/call`) in-process: a call goes through the operator's own view (a tool
//! their policy does not allow is unknown to them, as at `/mcp`), and the guard stands in front of it like
//! every admin route — no call without the admin header, from another site, or by a principal outside
//! `[admin] groups`.

use std::path::Path;
use std::sync::Arc;

use actix_web::test;
use serde_json::json;
use tokio::sync::mpsc;

use super::*;

/// A gateway with `[auth]` (olga in `ops`, dave in `dev`), `[admin] groups = ["ops"]`, a policy letting olga
/// call `m__echo` only, and the builtin mock as backend `m`, its first catalog built.
async fn guarded() -> Arc<Gateway> {
    let text = format!(
        "[admin]\nlisten = \"{HOST}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"olga\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"dave\"\ndigest = \"{}\"\ngroups = [\"dev\"]\n\
         [[policy]]\nprincipal = \"olga\"\nallow = [\"m__echo\"]\n\
         [[policy]]\nprincipal = \"dave\"\nallow = [\"*\"]\n\
         [[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        digest_text(OPS_KEY),
        digest_text(DEV_KEY)
    );
    let config = Config::from_toml_str(&text, Path::new("t.toml")).unwrap();
    let auth = crate::auth::Authenticator::from_config(&config.auth, &Default::default()).unwrap();
    let (events, _rx) = mpsc::channel(64);
    let mock = mock::InProcessMock::from_words(&[]).unwrap();
    let transport = handlers::Transport::InProcess(handlers::InProcess(Arc::new(mock)));
    let m = handlers::BackendHandle::start(handlers::BackendConfig::new("m", transport), events);
    let keys = Arc::new(crate::cluster::ClusterKeys::random());
    let gw = Arc::new(Gateway::new(config, [("m".to_owned(), m)].into(), keys).with_auth(auth));
    let first = crate::notify::listing::first_catalog(&gw).await.unwrap();
    gw.catalog.replace(Arc::new(first));
    gw
}

fn call(name: &str, key: &str) -> test::TestRequest {
    post("/admin/call")
        .insert_header(("X-Mcpgw-Admin", "1"))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .set_json(json!({"name": name, "arguments": {"text": "from the page"}}))
}

#[actix_rt::test]
async fn a_playground_call_goes_through_the_operators_view() {
    let gw = guarded().await;
    let app = app!(admin(gw.clone()));
    let res = test::call_service(&app, call("m__echo", OPS_KEY).to_request()).await;
    assert_eq!(res.status(), 200);
    let body = json_of(res).await;
    assert_eq!(
        body["response"]["result"]["content"][0]["text"], "from the page",
        "{body}"
    );
    // Not in olga's view: unknown to her here too, though the catalog has it.
    let res = test::call_service(&app, call("m__add", OPS_KEY).to_request()).await;
    let body = json_of(res).await;
    assert_eq!(body["response"]["error"]["code"], -32601, "{body}");
    // The catalog view gives the page each tool's schema to make its form from.
    let res = test::call_service(
        &app,
        get("/admin/catalog")
            .insert_header(("Authorization", format!("Bearer {OPS_KEY}")))
            .to_request(),
    )
    .await;
    let catalog = json_of(res).await;
    let echo = catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "m__echo")
        .unwrap();
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    shutdown(&gw);
}

#[actix_rt::test]
async fn the_guard_stands_before_every_playground_call() {
    let gw = guarded().await;
    let app = app!(admin(gw.clone()));
    // (request, status)
    let cases = [
        // dave is no operator (not in [admin] groups), though his policy allows every tool
        (call("m__echo", DEV_KEY), 403),
        // no credential
        (
            post("/admin/call")
                .insert_header(("X-Mcpgw-Admin", "1"))
                .set_json(json!({"name": "m__echo"})),
            401,
        ),
        // a form another site posts cannot add the header
        (
            post("/admin/call")
                .insert_header(("Authorization", format!("Bearer {OPS_KEY}")))
                .set_json(json!({"name": "m__echo"})),
            403,
        ),
        // another site's page
        (
            call("m__echo", OPS_KEY).insert_header(("Origin", "https://evil.example")),
            403,
        ),
        (
            call("m__echo", OPS_KEY).insert_header(("Sec-Fetch-Site", "cross-site")),
            403,
        ),
        // not a call the page makes
        (
            post("/admin/call")
                .insert_header(("X-Mcpgw-Admin", "1"))
                .insert_header(("Authorization", format!("Bearer {OPS_KEY}")))
                .set_json(json!({"name": "m__echo", "extra": 1})),
            400,
        ),
    ];
    for (i, (req, status)) in cases.into_iter().enumerate() {
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(res.status(), status, "case {i}");
    }
    shutdown(&gw);
}
