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

#[actix_rt::test]
async fn with_auth_a_rebound_host_name_is_refused_even_with_a_credential() {
    let text = format!(
        "[server]\nallowed_hosts = [\"mcp.example.com\"]\n[admin]\nlisten = \"{HOST}\"\ngroups = [\"ops\"]\n\
         [[auth.api_key]]\nprincipal = \"olga\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n",
        digest_text(OPS_KEY)
    );
    let gw = authenticated_by(&text);
    let app = app!(admin(gw));
    let bearer = ("Authorization", format!("Bearer {OPS_KEY}"));
    let at = |host: &str| {
        test::TestRequest::get()
            .uri("/metrics")
            .insert_header(("Host", host.to_owned()))
            .insert_header(bearer.clone())
            .to_request()
    };
    // A page whose name was pointed at the listener, with a credential the browser holds for it.
    let res = test::call_service(&app, at("attacker.example:7801")).await;
    assert_eq!(res.status(), 403);
    // A scraper naming the pod's address, an operator on loopback or by the gateway's name.
    for host in ["10.1.2.3:7801", "localhost:7801", "mcp.example.com:7801"] {
        assert_eq!(
            test::call_service(&app, at(host)).await.status(),
            200,
            "{host}"
        );
    }
}

/// A scraper's credential (`[admin] scrape_groups`) reads `GET /metrics` and `GET /readyz` and nothing else:
/// no view, no config, no reload.
#[actix_rt::test]
async fn a_scrape_group_reads_the_metrics_and_readiness_and_nothing_else() {
    let text = format!(
        "[admin]\nlisten = \"{HOST}\"\ngroups = [\"ops\"]\nscrape_groups = [\"metrics\"]\n\
         [[auth.api_key]]\nprincipal = \"prometheus\"\ndigest = \"{}\"\ngroups = [\"metrics\"]\n\
         [[auth.api_key]]\nprincipal = \"olga\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n",
        digest_text(DEV_KEY),
        digest_text(OPS_KEY)
    );
    let gw = authenticated_by(&text);
    let app = app!(admin(gw));
    let scraper = ("Authorization", format!("Bearer {DEV_KEY}"));
    let operator = ("Authorization", format!("Bearer {OPS_KEY}"));
    // No catalog yet: the detail says "starting" (503); the metrics answer 200.
    for (path, want) in [("/metrics", 200), ("/readyz", 503)] {
        let res = test::call_service(&app, get(path).insert_header(scraper.clone()).to_request());
        assert_eq!(res.await.status(), want, "{path}");
    }
    for path in [
        "/admin/summary",
        "/admin/sessions",
        "/admin/backends",
        "/admin/catalog",
        "/admin/config",
    ] {
        let res = test::call_service(&app, get(path).insert_header(scraper.clone()).to_request());
        assert_eq!(res.await.status(), 403, "{path}");
        let res = test::call_service(&app, get(path).insert_header(operator.clone()).to_request());
        assert_eq!(res.await.status(), 200, "{path}");
    }
    let reload = test::TestRequest::post()
        .uri("/admin/reload")
        .insert_header(("Host", HOST))
        .insert_header(("X-Mcpgw-Admin", "1"))
        .insert_header(scraper);
    assert_eq!(
        test::call_service(&app, reload.to_request()).await.status(),
        403
    );
}
