//! The admin view (`[admin] listen`): a second actix-web server, one worker, beside the front door, for
//! operators — JSON endpoints (`/admin/summary`, `/admin/sessions`, `/admin/backends`, `/admin/catalog`,
//! `/admin/config`), the readiness with its detail (`GET /readyz`: each backend's standing and why) and the
//! metrics (`GET /metrics`), `POST /admin/reload` (the SIGHUP reload path, `crate::reload`), and a small page at
//! `/admin/` that shows them live (`page`: HTML, JS and CSS embedded in the binary). Every request passes
//! `guard` first: loopback `Host` names without `[auth]` (DNS rebinding), the same authenticator as the MCP
//! endpoints and `[admin] groups` with it, no cross-site reads, and for `POST` an `Origin` that is the
//! listener's own and the non-simple `X-Mcpgw-Admin` header (CSRF).
//!
//! It must not change what it shows (no session is marked used, no backend is asked anything), hold a map
//! guard across an `.await`, or keep the process alive: `serve` stops it with the front door, and its
//! connections are not the drain's.

mod authorizations;
mod guard;
mod page;
mod playground;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};

use crate::reload::Reloader;
use crate::state::Gateway;
use crate::tls::ServerTls;

/// The header every `POST` must carry (any value): a browser sends it cross-origin only after a CORS
/// preflight, which the admin listener never grants.
pub const ADMIN_HEADER: &str = "x-mcpgw-admin";

/// Connections the admin listener holds at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 64;

/// What the admin app reads: the gateway, the reloadable parts, its own address and its TLS.
#[derive(Debug, Clone)]
pub struct Admin {
    /// The running gateway.
    pub gw: Arc<Gateway>,
    /// The reload `POST /admin/reload` takes (the same as SIGHUP's).
    pub reload: Reloader,
    /// The admin listener's address (its port is what `Host` and `Origin` must name).
    pub addr: SocketAddr,
    /// The TLS it serves with ([`tls_for`]); `None`: plain HTTP.
    pub tls: Option<ServerTls>,
    /// The middlewares a library user added: the playground's calls meet them as a client's do.
    pub added: crate::pipeline::Added,
}

impl Admin {
    /// The scheme of the listener's own origin: `https` with TLS.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

/// The TLS of an admin listener on `addr`: the front door's (`[server] tls_cert_file`, `tls_key_file`, and
/// its client CA; the same certificate, reloaded with it) when it listens beyond loopback, where the
/// credentials of `[admin] groups` and what the views show cross a network. On loopback it stays plain HTTP.
/// Beyond loopback with no TLS on the front door it is plain HTTP too, which `mcpgw check` warns about.
pub fn tls_for(addr: SocketAddr, front: Option<&ServerTls>) -> Option<ServerTls> {
    if addr.ip().is_loopback() {
        return None;
    }
    front.cloned()
}

/// Registers the admin routes, behind the guard. Call inside an `HttpServer::new` factory (or a test's
/// `App`).
pub fn configure(cfg: &mut web::ServiceConfig, admin: Admin) {
    // The playground's calls go through a routing actor of this worker, as the front door's do.
    let worker = crate::front::http::Worker::start(admin.gw.clone(), admin.added.clone());
    cfg.app_data(web::Data::new(admin))
        .app_data(web::Data::new(worker))
        .app_data(web::JsonConfig::default().limit(playground::MAX_BODY))
        .service(
            web::scope("")
                .wrap(from_fn(guard::middleware))
                .route("/", web::get().to(page::to_page))
                .route("/admin", web::get().to(page::to_page))
                .route("/admin/", web::get().to(page::html))
                .route("/admin/admin.js", web::get().to(page::script))
                .route("/admin/admin.css", web::get().to(page::style))
                .route("/admin/favicon.svg", web::get().to(page::icon))
                .route("/favicon.ico", web::get().to(page::icon))
                .route("/admin/summary", web::get().to(views::summary))
                .route("/admin/sessions", web::get().to(views::sessions))
                .route("/admin/backends", web::get().to(views::backends))
                .route("/admin/catalog", web::get().to(views::catalog))
                .route("/admin/config", web::get().to(views::config))
                // `GET /metrics` and the readiness detail are served here only (the front door's `/readyz` says
                // the status alone), behind the same guard: with `[auth]` on, a scraper presents a credential
                // of a principal in `[admin] groups`.
                .route("/metrics", web::get().to(metrics))
                .route("/readyz", web::get().to(readyz))
                .route("/admin/reload", web::post().to(views::reload))
                .route("/admin/authorizations", web::get().to(authorizations::list))
                .route(
                    "/admin/authorizations/revoke",
                    web::post().to(authorizations::revoke),
                )
                .route("/admin/call", web::post().to(playground::call)),
        );
}

/// `GET /metrics` on the admin listener.
async fn metrics(req: actix_web::HttpRequest, admin: web::Data<Admin>) -> actix_web::HttpResponse {
    crate::front::http::metrics::respond(&req, &admin.gw)
}

/// `GET /readyz` on the admin listener: the front door's status and code, with the detail.
async fn readyz(admin: web::Data<Admin>) -> actix_web::HttpResponse {
    crate::front::http::health::detail(&admin.gw)
}

/// The admin server on `listener` (bound at start by `serve`): one worker, its own signal handling off
/// (`serve` stops it with the front door), a short graceful stop; over TLS when `admin.tls` says so.
pub fn server(
    admin: Admin,
    listener: std::net::TcpListener,
) -> std::io::Result<actix_web::dev::Server> {
    let tls = admin.tls.as_ref().map(ServerTls::server_config);
    let server = HttpServer::new(move || {
        let admin = admin.clone();
        App::new().configure(move |cfg| configure(cfg, admin))
    })
    .workers(1)
    .max_connections(MAX_CONNECTIONS)
    .disable_signals()
    .shutdown_timeout(1);
    let server = match tls {
        Some(config) => server.listen_rustls_0_23(listener, config)?,
        None => server.listen(listener)?,
    };
    Ok(server.run())
}

#[cfg(test)]
mod tests;
