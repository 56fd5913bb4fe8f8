//! The admin page: plain HTML, JS and CSS embedded in the binary (`assets/`, `include_str!`: no build step,
//! no external asset), served with a `Content-Security-Policy` that allows only the listener itself. The
//! page polls the JSON views every second and shows the summary, the backends and the sessions; its reload
//! button posts `/admin/reload` with `X-Mcpgw-Admin`. With `[auth]` it asks for a token once and keeps it
//! in the tab's `sessionStorage`.
//!
//! It must not load anything from elsewhere, nor use inline script or style (the policy forbids both).

use actix_web::HttpResponse;
use actix_web::http::header;

const HTML: &str = include_str!("assets/admin.html");
const SCRIPT: &str = include_str!("assets/admin.js");
const STYLE: &str = include_str!("assets/admin.css");
const ICON: &str = include_str!("assets/favicon.svg");

/// Only the listener itself: no inline script or style, no frame, no form posted elsewhere.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn file(content_type: &'static str, body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .body(body)
}

/// `GET /admin/`.
pub(super) async fn html() -> HttpResponse {
    file("text/html; charset=utf-8", HTML)
}

/// `GET /admin/admin.js`.
pub(super) async fn script() -> HttpResponse {
    file("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /admin/admin.css`.
pub(super) async fn style() -> HttpResponse {
    file("text/css; charset=utf-8", STYLE)
}

/// `GET /admin/favicon.svg` (and `/favicon.ico`, which browsers ask for by themselves).
pub(super) async fn icon() -> HttpResponse {
    file("image/svg+xml", ICON)
}

/// `GET /` and `GET /admin`: to the page.
pub(super) async fn to_page() -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, "/admin/"))
        .finish()
}
