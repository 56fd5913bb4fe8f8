//! The consent pages of per-user authorization (`oauth`), open to any browser (the link and the flow's
//! sealed state are the credentials; with `link_proof = "sign_in"` the browser also signs in):
//! `GET /oauth/connect/{link}` (a consent link: on to the sign-in or the backend's authorization server),
//! `GET /oauth/callback` (the authorization server's answer: the token stored, the client told), and
//! `GET /oauth/client` (the gateway's Client ID Metadata Document). Pages are plain, scriptless and never
//! cached; they name no token, code or link, and repeat nothing of the request.

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use super::Worker;
use crate::oauth::{Callback, Failed};

/// `/oauth/connect/{link}`.
pub(super) async fn connect(worker: web::Data<Worker>, link: web::Path<String>) -> HttpResponse {
    let Some(oauth) = worker.gw.oauth.clone() else {
        return page(
            404,
            "Not found",
            "This gateway asks no user for authorization.",
        );
    };
    match oauth.open_link(&link).await {
        Ok(next) => redirect(&next),
        Err(e) => refused(&e),
    }
}

/// The authorization server's answer (RFC 6749 §4.1.2, RFC 9207's `iss`).
#[derive(Deserialize)]
pub(super) struct Answer {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
}

/// `/oauth/callback`.
pub(super) async fn callback(
    worker: web::Data<Worker>,
    answer: web::Query<Answer>,
) -> HttpResponse {
    let gw = &worker.gw;
    let Some(oauth) = gw.oauth.clone() else {
        return page(
            404,
            "Not found",
            "This gateway asks no user for authorization.",
        );
    };
    if let Some(error) = &answer.error {
        let error: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        return page(
            400,
            "Not authorized",
            &format!(
                "The authorization server did not authorize mcpgw ({error}). Nothing was stored."
            ),
        );
    }
    let (Some(code), Some(state)) = (&answer.code, &answer.state) else {
        return page(
            400,
            "Not authorized",
            "The answer carries no code or no state.",
        );
    };
    match oauth.callback(state, code, answer.iss.as_deref()).await {
        Ok(Callback::Continue(next)) => redirect(&next),
        Ok(Callback::Connected {
            backend,
            elicitation_id,
            listing,
        }) => {
            crate::notify::completion::consented(gw, &backend, &elicitation_id);
            if listing && let Some(handle) = gw.live().backend(&backend) {
                handle.connect_now();
            }
            page(
                200,
                "Connected",
                &format!(
                    "mcpgw may now use {backend} on your behalf. You can close this page and go back to your client."
                ),
            )
        }
        Err(e) => refused(&e),
    }
}

/// `/oauth/client`: the gateway's Client ID Metadata Document.
pub(super) async fn client(worker: web::Data<Worker>) -> HttpResponse {
    match &worker.gw.oauth {
        Some(oauth) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "max-age=300"))
            .json(oauth.client_metadata()),
        None => page(
            404,
            "Not found",
            "This gateway asks no user for authorization.",
        ),
    }
}

fn redirect(to: &str) -> HttpResponse {
    HttpResponse::Found()
        .insert_header(("Location", to))
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .finish()
}

fn refused(e: &Failed) -> HttpResponse {
    let status = match e {
        Failed::Link(_) | Failed::Refused(_) => 400,
        Failed::Unreachable(_) => 502,
        Failed::Store => 503,
        Failed::Internal(_) => 500,
    };
    page(
        status,
        "Not authorized",
        &format!("{e}. Nothing was stored; ask your client for a new link."),
    )
}

fn page(status: u16, title: &str, text: &str) -> HttpResponse {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} — mcpgw</title></head>\
         <body><h1>{t}</h1><p>{x}</p></body></html>\n",
        t = escape(title),
        x = escape(text)
    );
    HttpResponse::build(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR),
    )
    .content_type("text/html; charset=utf-8")
    .insert_header(("Cache-Control", "no-store"))
    .insert_header(("Referrer-Policy", "no-referrer"))
    .insert_header(("Content-Security-Policy", "default-src 'none'"))
    .insert_header(("X-Frame-Options", "DENY"))
    .body(body)
}
