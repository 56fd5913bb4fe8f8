//! The readiness detail the front door no longer serves: on the admin listener, behind its guard.

use super::*;

#[actix_rt::test]
async fn the_readiness_detail_is_the_admin_listeners_behind_its_guard() {
    let (gw, _events) = mocked().await;
    let app = app!(admin(gw.clone()));
    let res = test::call_service(&app, get("/readyz").to_request()).await;
    assert_eq!(res.status(), 200);
    let body = json_of(res).await;
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["backends"][0]["name"], "m", "{body}");
    assert_eq!(body["backends"][0]["state"], "up", "{body}");
    assert!(body["sessions"].is_u64(), "{body}");
    // A DNS-rebound page (without `[auth]`) and another site are refused, as for every admin view.
    for req in [
        test::TestRequest::get()
            .uri("/readyz")
            .insert_header(("Host", "attacker.example:7801")),
        get("/readyz").insert_header(("Origin", "http://attacker.example")),
    ] {
        assert_eq!(
            test::call_service(&app, req.to_request()).await.status(),
            403
        );
    }
    shutdown(&gw);
}

#[actix_rt::test]
async fn with_auth_the_readiness_detail_and_the_metrics_need_an_admin_principal() {
    let gw = authenticated();
    let app = app!(admin(gw.clone()));
    for path in ["/readyz", "/metrics"] {
        let anonymous = test::call_service(&app, get(path).to_request()).await;
        assert_eq!(anonymous.status(), 401, "{path}");
        let developer = get(path).insert_header(("Authorization", format!("Bearer {DEV_KEY}")));
        let res = test::call_service(&app, developer.to_request()).await;
        assert_eq!(res.status(), 403, "{path}");
        let operator = get(path).insert_header(("Authorization", format!("Bearer {OPS_KEY}")));
        let res = test::call_service(&app, operator.to_request()).await;
        // No catalog yet: the detail says "starting" with the front door's 503; the metrics answer 200.
        let want = if path == "/readyz" { 503 } else { 200 };
        assert_eq!(res.status(), want, "{path}");
    }
}
