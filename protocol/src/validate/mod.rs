//! Request validation: one pure function, [`validate`], from an HTTP request's parts (method, headers, body
//! bytes), the generations the gateway serves, the catalog's routing facts and the caller's legacy session
//! (if any) to either a [`ValidRequest`] — constructible only here — or a [`Rejection`] carrying the
//! infrastructure error, the request id when readable, and the HTTP status.
//!
//! The order of checks for one POST (each step's error outranks the later ones):
//! 1. body size (413), `Content-Type` (415), `Accept` (406);
//! 2. JSON and the JSON-RPC envelope (-32700, -32600);
//! 3. the era, decided from the body: `initialize` is legacy; a `_meta` protocol version names the era; without
//!    one, a session id means legacy and a 2026-07-28 `MCP-Protocol-Version` header means modern;
//! 4. modern: `MCP-Protocol-Version` against `_meta` (-32020, which outranks) and then support (-32022),
//!    required `_meta` keys (-32602), `Mcp-Method` (-32020), the method itself (-32601, 404), `Mcp-Name`
//!    (-32020), then routing: unknown tool (-32601 or -32602), `Mcp-Param-*` both ways (-32020), missing
//!    client capabilities (-32021), unmatched resource (-32602), unknown prompt (-32602);
//! 5. legacy: the session (404 when unknown), `MCP-Protocol-Version` against the session, the method for the
//!    session's generation, then the same routing checks with legacy codes.

mod http;
mod input;
mod legacy;
mod modern;
mod outcome;
mod routing;

pub use http::{Accepts, Headers, HttpMethod};
pub use input::{Catalog, Config, HttpRequest, RouteKey, Session, ToolRoute, UnknownToolCode};
pub use outcome::{Call, Rejection, Target, ValidKind, ValidRequest};

use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::message::{self, Message, Parsed, Request};
use crate::meta::{ParamsView, RequestMeta, string_of};
use http::{One, Scanned, is_json_content_type};

/// Validates one HTTP request. See the module documentation for the order of checks.
pub fn validate(
    req: &HttpRequest<'_>,
    config: &Config,
    catalog: &dyn Catalog,
    session: Option<&Session<'_>>,
) -> Result<ValidRequest, Rejection> {
    let headers = Scanned::scan(req.headers);
    validate_scanned(req, &headers, config, catalog, session).map_err(|mut r| {
        // A rejection before the era was known is shaped for the generation the client's headers name.
        if r.generation.is_none() {
            r.generation =
                session
                    .map(|s| s.generation)
                    .or_else(|| match headers.protocol_version {
                        One::Present(v) => std::str::from_utf8(v)
                            .ok()
                            .and_then(|v| Generation::parse(v).ok()),
                        _ => None,
                    });
        }
        r
    })
}

fn validate_scanned(
    req: &HttpRequest<'_>,
    headers: &Scanned<'_>,
    config: &Config,
    catalog: &dyn Catalog,
    session: Option<&Session<'_>>,
) -> Result<ValidRequest, Rejection> {
    let accepts = Accepts::read(&headers.accept);
    let ctx = Ctx {
        config,
        catalog,
        headers,
        session,
        stdio: false,
    };
    match req.method {
        HttpMethod::Post => {}
        HttpMethod::Get | HttpMethod::Delete if headers.session_id.is_present() => {
            let s = ctx.require_session(None)?;
            if req.method == HttpMethod::Get && !accepts.sse {
                return Err(Rejection::new(
                    406,
                    None,
                    Error::new(
                        ErrorCode::InvalidRequest,
                        "not acceptable: the session stream is text/event-stream",
                    ),
                )
                .for_generation(s.generation));
            }
            let kind = if req.method == HttpMethod::Get {
                ValidKind::OpenStream
            } else {
                ValidKind::EndSession
            };
            return Ok(ValidRequest {
                generation: s.generation,
                accepts,
                kind,
            });
        }
        _ => {
            let mut r = Rejection::new(
                405,
                None,
                Error::new(
                    ErrorCode::InvalidRequest,
                    "method not allowed: POST a JSON-RPC message (GET and DELETE need a legacy session)",
                ),
            );
            r.allow = Some("POST");
            return Err(r);
        }
    }
    if req.body.len() > config.max_body_bytes {
        return Err(Rejection::new(
            413,
            None,
            Error::new(
                ErrorCode::InvalidRequest,
                format!(
                    "request body of {} bytes exceeds the limit of {} bytes",
                    req.body.len(),
                    config.max_body_bytes
                ),
            ),
        ));
    }
    match headers.content_type {
        One::Present(v) if !is_json_content_type(v) => {
            return Err(Rejection::new(
                415,
                None,
                Error::new(
                    ErrorCode::InvalidRequest,
                    "unsupported media type: Content-Type must be application/json",
                ),
            ));
        }
        One::Repeated => {
            return Err(Rejection::new(
                415,
                None,
                Error::new(ErrorCode::InvalidRequest, "Content-Type is given twice"),
            ));
        }
        _ => {}
    }
    if accepts.none() {
        return Err(Rejection::new(
            406,
            None,
            Error::new(
                ErrorCode::InvalidRequest,
                "not acceptable: Accept must allow application/json or text/event-stream",
            ),
        ));
    }
    judge(&ctx, message::parse(req.body)?, accepts)
}

/// Validates one message read from a stdio transport (newline-delimited JSON-RPC). There is no header
/// layer: the 2026-07-28 header rules do not apply, and the legacy session is the process (`session` is the
/// one `initialize` established, if any). Statuses in rejections are meaningless here.
pub fn validate_stdio(
    line: &[u8],
    config: &Config,
    catalog: &dyn Catalog,
    session: Option<&Session<'_>>,
) -> Result<ValidRequest, Rejection> {
    let headers = Scanned::default();
    let ctx = Ctx {
        config,
        catalog,
        headers: &headers,
        session,
        stdio: true,
    };
    let accepts = Accepts {
        json: true,
        sse: false,
    };
    let parsed = message::parse(line).map_err(|e| {
        let mut r = Rejection::from(e);
        r.generation = session.map(|s| s.generation);
        r
    })?;
    judge(&ctx, parsed, accepts)
}

/// A parsed body judged: a batch inside a 2025-03-26 session, entry by entry, or one message by its era.
fn judge(ctx: &Ctx<'_>, parsed: Parsed, accepts: Accepts) -> Result<ValidRequest, Rejection> {
    let m = match parsed {
        Parsed::Batch(entries) => {
            let s = ctx.require_session(None)?;
            let refused = |why: String| {
                Rejection::new(
                    200,
                    None,
                    Error::new(ErrorCode::InvalidRequest, format!("invalid request: {why}")),
                )
                .for_generation(s.generation)
            };
            if !s.generation.allows_batching() {
                return Err(refused(format!(
                    "JSON-RPC batches are not part of {}",
                    s.generation
                )));
            }
            if entries.len() > ctx.config.max_batch {
                return Err(refused(format!(
                    "a batch of {} entries is over this gateway's limit of {} (server.max_batch)",
                    entries.len(),
                    ctx.config.max_batch
                )));
            }
            let items = entries
                .into_iter()
                .map(|entry| batch_entry(ctx, s, entry))
                .collect();
            return Ok(ValidRequest {
                generation: s.generation,
                accepts,
                kind: ValidKind::Batch(items),
            });
        }
        Parsed::Single(m) => m,
    };
    let (generation, kind) = route_single(ctx, m)?;
    Ok(ValidRequest {
        generation,
        accepts,
        kind,
    })
}

/// Everything the era-specific checks share.
pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub catalog: &'a dyn Catalog,
    pub headers: &'a Scanned<'a>,
    pub session: Option<&'a Session<'a>>,
    /// No header layer (stdio): header rules are skipped and the session is the process.
    pub stdio: bool,
}

impl<'a> Ctx<'a> {
    /// Whether the request claims a legacy session: the session header on HTTP, an initialized process on stdio.
    pub fn claims_session(&self) -> bool {
        if self.stdio {
            self.session.is_some()
        } else {
            self.headers.session_id.is_present()
        }
    }

    /// The caller's session: 400 without a session id, 404 when the id names no live session.
    pub fn require_session(&self, id: Option<&RequestId>) -> Result<&'a Session<'a>, Rejection> {
        if self.stdio {
            return self.session.ok_or_else(|| {
                Rejection::new(
                    400,
                    id.cloned(),
                    Error::new(
                        ErrorCode::InvalidRequest,
                        "invalid request: send initialize first, or _meta with io.modelcontextprotocol/protocolVersion",
                    ),
                )
            });
        }
        match (self.headers.session_id, self.session) {
            (One::Present(_), Some(s)) => Ok(s),
            (One::Present(_), None) => Err(Rejection::new(
                404,
                id.cloned(),
                Error::new(
                    ErrorCode::InvalidRequest,
                    "session not found: it expired or never existed; send initialize to start a new one",
                ),
            )),
            (One::Repeated, _) => Err(Rejection::new(
                400,
                id.cloned(),
                Error::new(ErrorCode::InvalidRequest, "Mcp-Session-Id is given twice"),
            )),
            (One::Absent, _) => Err(Rejection::new(
                400,
                id.cloned(),
                Error::new(
                    ErrorCode::InvalidRequest,
                    "bad request: no Mcp-Session-Id; legacy clients send initialize first, 2026-07-28 clients send _meta with io.modelcontextprotocol/protocolVersion",
                ),
            )),
        }
    }
}

/// The parts of a message's params that every check reads, taken out once.
#[derive(Debug)]
pub(crate) struct Facts {
    /// `_meta`, read (or why it cannot be).
    pub meta: Result<RequestMeta, Error>,
    /// `params.name`, when a string.
    pub name: Option<String>,
    /// `params.uri`, when a string.
    pub uri: Option<String>,
}

impl Facts {
    /// Reads the facts of a message; params that are not an object of the right shape are `InvalidParams`.
    pub fn of(m: &Message) -> Result<Facts, Error> {
        let params = match m {
            Message::Request(r) => r.params.as_deref(),
            Message::Notification(n) => n.params.as_deref(),
            Message::Response(_) => None,
        };
        let view = ParamsView::read(params)?;
        Ok(Facts {
            meta: RequestMeta::read(view.meta),
            name: string_of(view.name),
            uri: string_of(view.uri),
        })
    }
}

/// Which era a single message belongs to, decided from the body first.
fn route_single(ctx: &Ctx<'_>, m: Message) -> Result<(Generation, ValidKind), Rejection> {
    let m = match m {
        // `initialize` starts a legacy session, unless the request claims the modern era (2026-07-28 removed
        // the method: such a request gets the modern "method not found" below).
        Message::Request(r) if r.method == "initialize" && !claims_modern(ctx, &r) => {
            return legacy::initialize(ctx, r);
        }
        m => m,
    };
    let id = match &m {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    };
    let facts = Facts::of(&m).map_err(|e| {
        let status = if ctx.headers.protocol_version.is_present() {
            400
        } else {
            200
        };
        Rejection::new(status, id.clone(), e)
    })?;
    let meta_generation = match &facts.meta {
        Ok(meta) => meta.protocol_version.as_deref().map(Generation::parse),
        Err(_) => None,
    };
    let session_header = ctx.claims_session();
    let modern = match meta_generation {
        // A legacy version in _meta keeps a legacy session's request legacy; anything else is modern.
        Some(Ok(g)) if !g.is_modern() => !session_header,
        Some(_) => true,
        None if session_header => false,
        None => match ctx.headers.protocol_version {
            One::Present(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|v| Generation::parse(v).ok())
                .is_none_or(Generation::is_modern),
            One::Repeated => true,
            One::Absent => facts.meta.is_err(),
        },
    };
    if modern {
        modern::message(ctx, m, facts)
    } else {
        let s = ctx.require_session(id.as_ref())?;
        legacy::message(ctx, s, m, facts).map(|k| (s.generation, k))
    }
}

#[cfg(test)]
mod tests;

/// Whether a request says it is 2026-07-28: a modern version in `_meta` or in `MCP-Protocol-Version`.
fn claims_modern(ctx: &Ctx<'_>, r: &Request) -> bool {
    let modern = |v: &str| Generation::parse(v).is_ok_and(Generation::is_modern);
    let header = match ctx.headers.protocol_version {
        One::Present(v) => std::str::from_utf8(v).is_ok_and(modern),
        _ => false,
    };
    header
        || ParamsView::read(r.params.as_deref())
            .ok()
            .and_then(|view| RequestMeta::read(view.meta).ok())
            .and_then(|meta| meta.protocol_version)
            .is_some_and(|v| modern(&v))
}

/// One entry of a 2025-03-26 batch, judged inside the session.
fn batch_entry(
    ctx: &Ctx<'_>,
    s: &Session<'_>,
    entry: Result<Message, message::MessageError>,
) -> Result<ValidKind, Rejection> {
    match entry {
        Ok(Message::Request(r)) if r.method == "initialize" => Err(Rejection::new(
            200,
            Some(r.id),
            Error::new(
                ErrorCode::InvalidRequest,
                "invalid request: initialize must not be part of a batch",
            ),
        )
        .for_generation(s.generation)),
        Ok(m) => match Facts::of(&m) {
            Ok(facts) => legacy::message(ctx, s, m, facts),
            Err(e) => Err(Rejection::new(200, id_of(&m), e).for_generation(s.generation)),
        },
        Err(e) => Err(Rejection::from(e).for_generation(s.generation)),
    }
}

fn id_of(m: &Message) -> Option<RequestId> {
    match m {
        Message::Request(r) => Some(r.id.clone()),
        Message::Response(r) => r.id.clone(),
        Message::Notification(_) => None,
    }
}
