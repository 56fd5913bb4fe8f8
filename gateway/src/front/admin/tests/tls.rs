//! The admin listener beyond loopback speaks TLS with the front door's certificate: a real handshake on
//! loopback (the listener bound to every interface, reached at 127.0.0.1), with a throw-away PKI made here.

use super::*;
use crate::front::admin::{server, tls_for};
use crate::tls::test_pki;

/// The name the certificate is for; the client reaches it at 127.0.0.1.
const NAME: &str = "admin.mcpgw.test";

/// An HTTPS client trusting only `ca`, sending [`NAME`] to 127.0.0.1:`port`.
fn client(ca: &str, port: u16) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_backend_preconfigured(test_pki::client(ca, &[b"http/1.1"]))
        .resolve(NAME, std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .build()
        .unwrap()
}

#[actix_rt::test]
async fn an_admin_listener_beyond_loopback_speaks_tls_with_the_front_doors_certificate() {
    let test_pki::Issued { ca, tls: front, .. } = test_pki::server("admin-beyond-loopback", NAME);
    // On loopback the admin view stays plain HTTP; beyond it, the front door's TLS.
    assert!(tls_for("127.0.0.1:7801".parse().unwrap(), Some(&front)).is_none());
    assert!(tls_for("[::1]:7801".parse().unwrap(), Some(&front)).is_none());
    assert!(tls_for("0.0.0.0:7801".parse().unwrap(), None).is_none());
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let port = addr.port();
    let mut admin = admin(authenticated());
    admin.addr = addr;
    admin.tls = tls_for(addr, Some(&front));
    assert!(admin.tls.is_some(), "{addr} is beyond loopback");
    assert_eq!(admin.scheme(), "https");
    let server = server(admin, listener).unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);

    let https = client(&ca, port);
    let bearer = format!("Bearer {OPS_KEY}");
    let res = https
        .get(format!("https://{NAME}:{port}/metrics"))
        .header("Authorization", &bearer)
        .send()
        .await
        .expect("a TLS handshake with the front door's certificate");
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("mcpgw_build_info"));
    // The page's own origin is the https one: a POST from it passes the cross-site check.
    let res = https
        .post(format!("https://{NAME}:{port}/admin/reload"))
        .header("Authorization", &bearer)
        .header("Origin", format!("https://{NAME}:{port}"))
        .header("X-Mcpgw-Admin", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // Nothing is served in clear on it.
    let plain = reqwest::Client::builder()
        .tls_backend_preconfigured(handlers::plain_tls_config())
        .build()
        .unwrap();
    let clear = plain
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .header("Authorization", &bearer)
        .send()
        .await;
    assert!(
        clear.is_err() || clear.as_ref().is_ok_and(|r| r.status() == 400),
        "plain HTTP on the TLS admin listener: {clear:?}"
    );
    handle.stop(false).await;
}
