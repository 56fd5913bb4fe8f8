//! `link_proof = "sign_in"`: the link is for its principal only.

use serde_json::{Value, json};

use super::*;

/// With OAuth at the gateway (`[auth.oauth]`), a consent link signs the browser in at the gateway's own
/// identity provider (a second `oauth_server.py`, issuing the gateway's JWTs) and goes on only for the
/// principal the link was made for: alice's link opened by a browser signed in as bob stores nothing.
#[test]
fn a_consent_link_opened_by_another_user_than_its_principal_stores_nothing() {
    let Some(deps) = peers::deps("user-authorization-sign-in") else {
        return;
    };
    let dir = TempDir::new("user-authorization-sign-in");
    let addr = format!("127.0.0.1:{}", free_port());
    let public = format!("http://{addr}");
    let resource = format!("{public}/mcp");
    let secret = dir.file("hs256.secret", crate::token_exchange::SECRET);
    let backend =
        peers::python_fixture(&deps, "oauth_server.py", &[], "oauth_server listening on ");
    let callback = format!("{public}/oauth/callback");
    let secret_arg = secret.display().to_string();
    let idp = peers::python_fixture(
        &deps,
        "oauth_server.py",
        &[
            "--jwt-secret-file",
            &secret_arg,
            "--jwt-audience",
            &resource,
            "--client-id",
            "mcpgw-consent",
            "--redirect-uri",
            &callback,
        ],
        "oauth_server listening on ",
    );
    let issuer = format!("{}/as", idp.url.trim_end_matches("/mcp"));
    let toml = format!(
        "[auth.jwt]\nissuer = \"{issuer}\"\naudience = \"{resource}\"\nalgorithms = [\"HS256\"]\n\
         hs256_secret_file = {:?}\n\n\
         [auth.oauth]\nresource = \"{resource}\"\nauthorization_servers = [\"{issuer}\"]\n\n\
         [authorization]\npublic_url = \"{public}\"\nsign_in_client_id = \"mcpgw-consent\"\n\n\
         [egress]\nallow_networks = [\"127.0.0.0/8\"]\n\n\
         [[backend]]\nname = \"mn\"\nurl = \"{}\"\nera = \"modern\"\n[backend.auth]\ngrant = \"authorization_code\"\n",
        secret.display(),
        backend.url
    );
    let path = dir.file("mcpgw.toml", &toml);
    let gw = serve_at(&path, &addr);
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let alice = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"iss": issuer, "aud": resource, "sub": "alice", "exp": exp}),
        &jsonwebtoken::EncodingKey::from_secret(crate::token_exchange::SECRET.as_bytes()),
    )
    .unwrap();
    let connect = |browser: &str| {
        let args: Vec<String> = vec![
            "--url-elicit".into(),
            "--browser-as".into(),
            browser.into(),
            "--header".into(),
            format!("Authorization: Bearer {alice}"),
            "--call".into(),
            "mn__mcpgw_connect".into(),
            "{}".into(),
        ];
        peers::script_client(&deps, ScriptClient::Python, &gw.url, "legacy", &args).unwrap()
    };
    // Opened by bob: the sign-in says bob, the link is alice's: 400, nothing stored, the call still asks.
    let report = connect("bob");
    assert_eq!(report["urlElicitations"][0]["status"], 400, "{report}");
    assert_ne!(report["calls"][0]["ok"], true, "{report}");
    let authorized = |log: &[Value], user: &str| {
        log.iter()
            .any(|e| e["kind"] == "authorize" && e["user"] == user)
    };
    let backend_log = fixture_log(&backend);
    assert!(
        !authorized(&backend_log, "bob"),
        "bob never reached the backend's consent: {backend_log:?}"
    );
    // Opened by alice: signed in as alice, on to the backend's consent, stored.
    let report = connect("alice");
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    let idp_log = fixture_log(&idp);
    assert!(
        authorized(&idp_log, "bob") && authorized(&idp_log, "alice"),
        "{idp_log:?}"
    );
    let sign_ins: Vec<&Value> = idp_log
        .iter()
        .filter(|e| e["kind"] == "authorize")
        .collect();
    assert!(
        sign_ins.iter().all(|e| e["resource"] == resource.as_str()),
        "{sign_ins:?}"
    );
    let backend_log = fixture_log(&backend);
    assert!(authorized(&backend_log, "alice"), "{backend_log:?}");
}
