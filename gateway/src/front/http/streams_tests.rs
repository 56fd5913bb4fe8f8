//! The bound on an HTTP/2 connection's streams, over a real TLS handshake on loopback (h2 by ALPN): the
//! front door's guard and connection hook as `serve` installs them, a route that holds its requests until
//! the test lets them go, and one client connection.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpResponse, HttpServer, web};
use tokio::sync::Semaphore;

use super::connections::ConnectionLimit;
use crate::tls::test_pki;

const NAME: &str = "front.mcpgw.test";
const MAX_STREAMS: usize = 2;

/// What the held route shares with the test: how many requests entered it, and the permits that let them go.
#[derive(Clone)]
struct Hold {
    entered: Arc<AtomicUsize>,
    release: Arc<Semaphore>,
}

async fn held(hold: web::Data<Hold>) -> HttpResponse {
    hold.entered.fetch_add(1, Ordering::AcqRel);
    let permit = hold.release.acquire().await.expect("open");
    permit.forget();
    HttpResponse::Ok().body("released")
}

/// Polls `cond` every 10 ms, at most 10 s (a bound against a hang, not a measure of speed).
async fn until(cond: impl Fn() -> bool) -> bool {
    for _ in 0..1000 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

#[actix_rt::test]
async fn an_http2_connection_beyond_its_stream_bound_is_refused_not_served() {
    let test_pki::Issued { ca, tls, .. } = test_pki::server("h2-streams", NAME);
    let hold = Hold {
        entered: Arc::new(AtomicUsize::new(0)),
        release: Arc::new(Semaphore::new(0)),
    };
    let limit = ConnectionLimit::new(16).with_max_streams(MAX_STREAMS);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let app_hold = hold.clone();
    let server = HttpServer::new(move || {
        App::new()
            .wrap(from_fn(super::guard::middleware))
            .app_data(web::Data::new(app_hold.clone()))
            .route("/hold", web::get().to(held))
            .route("/quick", web::get().to(HttpResponse::Ok))
    })
    .workers(1)
    .on_connect({
        let admit = limit.hook();
        move |io: &dyn std::any::Any, data: &mut actix_web::dev::Extensions| {
            admit(io, data);
            super::guard::on_connect(io, data);
        }
    })
    .disable_signals()
    .shutdown_timeout(1)
    .listen_rustls_0_23(listener, tls.server_config())
    .unwrap()
    .run();
    let handle = server.handle();
    actix_rt::spawn(server);

    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(test_pki::client(&ca, &[b"h2"]))
        .http2_prior_knowledge()
        .resolve(NAME, std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .build()
        .unwrap();
    let url = |path: &str| format!("https://{NAME}:{port}{path}");
    // The connection, made once: every request below is a stream of it.
    let first = client.get(url("/quick")).send().await.unwrap();
    assert_eq!(first.version(), reqwest::Version::HTTP_2);
    assert_eq!(first.status(), 200);

    // MAX_STREAMS requests held on the one connection...
    let holding: Vec<_> = (0..MAX_STREAMS)
        .map(|_| {
            let req = client.get(url("/hold"));
            actix_rt::spawn(async move { req.send().await })
        })
        .collect();
    assert!(
        until(|| hold.entered.load(Ordering::Acquire) == MAX_STREAMS).await,
        "the held requests did not arrive"
    );
    assert_eq!(limit.open(), 1, "one connection");
    // ...and one more is answered at once, never served.
    let over = client.get(url("/hold")).send();
    let served = until(|| hold.entered.load(Ordering::Acquire) > MAX_STREAMS);
    let over = tokio::select! {
        over = over => over.unwrap(),
        served = served => panic!(
            "a stream beyond the bound of {MAX_STREAMS}: {}",
            if served { "served" } else { "neither answered nor served in 10 s" }
        ),
    };
    assert_eq!(over.status(), 503);
    assert!(over.headers().contains_key("retry-after"));
    let body = over.text().await.unwrap();
    assert!(body.contains("h2_max_concurrent_streams"), "{body}");
    assert_eq!(hold.entered.load(Ordering::Acquire), MAX_STREAMS);

    // Once the held ones are answered, the connection takes requests again.
    hold.release.add_permits(MAX_STREAMS);
    for h in holding {
        assert_eq!(h.await.unwrap().unwrap().status(), 200);
    }
    let again = client.get(url("/quick")).send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(limit.open(), 1, "still the one connection");
    handle.stop(false).await;
}
