//! The chain in-process: order, short-circuit, a panicking middleware, the principal slot.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use protocol::validate::{Catalog, Config, RouteKey, ToolRoute, ValidKind, validate_stdio};
use protocol::{Error, ErrorCode, Method, RequestId};
use serde_json::value::RawValue;

use super::*;
use crate::pipeline::response::Outcome;
use protocol::shape::Refusal;
use crate::pipeline::context::RequestContext;

/// A catalog with one tool, `t`.
struct OneTool;

impl Catalog for OneTool {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        (name == "t").then(ToolRoute::default)
    }
    fn resource(&self, _: &str) -> Option<RouteKey> {
        None
    }
    fn prompt(&self, _: &str) -> Option<RouteKey> {
        None
    }
}

/// The context of a 2026-07-28 request of `method` (a call of tool `t`), validated as the routing actor
/// validates one.
fn ctx(method: Method) -> MwContext {
    let mut params = serde_json::json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    if method == Method::ToolsCall {
        params["name"] = "t".into();
        params["arguments"] = serde_json::json!({});
    }
    let line =
        serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": method.as_str(), "params": params});
    let valid = validate_stdio(
        line.to_string().as_bytes(),
        &Config::default(),
        &OneTool,
        None,
    )
    .expect("a valid request");
    let generation = valid.generation();
    let ValidKind::Call(call) = valid.into_kind() else {
        panic!("a call")
    };
    MwContext::new(call, &Rc::new(RequestContext::for_tests(generation)))
}

fn ok() -> Response {
    let raw = RawValue::from_string("{}".into()).expect("JSON");
    Response::dispatched(Outcome::Result(raw), Some("b".into()))
}

/// A middleware that notes its name going down and coming back up.
struct Note {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl Middleware for Note {
    fn name(&self) -> &str {
        self.name
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        let (name, log) = (self.name, self.log.clone());
        Box::pin(async move {
            log.lock().expect("log").push(format!("{name} down"));
            let r = next(ctx).await;
            log.lock().expect("log").push(format!("{name} up"));
            r
        })
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn middlewares_run_in_configured_order_around_the_dispatch() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let chain = Chain::new(vec![
        Arc::new(Note {
            name: "first",
            log: log.clone(),
        }),
        Arc::new(Note {
            name: "second",
            log: log.clone(),
        }),
    ]);
    let dispatched = log.clone();
    let r = block_on(chain.run(ctx(Method::ToolsList), move |c| async move {
        dispatched
            .lock()
            .expect("log")
            .push(format!("dispatch {}", c.method()));
        ok()
    }));
    assert_eq!(r.summary(), Summary::Ok);
    assert_eq!(r.backend(), Some("b"));
    assert_eq!(
        *log.lock().expect("log"),
        [
            "first down",
            "second down",
            "dispatch tools/list",
            "second up",
            "first up"
        ]
    );
}

async fn refuse_all(ctx: MwContext, _next: Next) -> Response {
    Response::error(
        ctx.id(),
        Error::new(ErrorCode::InvalidParams, "Unauthorized"),
    )
}

#[test]
fn a_short_circuit_answers_without_the_rest_of_the_chain_or_the_dispatch() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let chain = Chain::new(vec![
        Arc::new(refuse_all),
        Arc::new(Note {
            name: "after",
            log: log.clone(),
        }),
    ]);
    let reached = Rc::new(RefCell::new(false));
    let flag = reached.clone();
    let r = block_on(chain.run(ctx(Method::ToolsCall), move |_| async move {
        *flag.borrow_mut() = true;
        ok()
    }));
    assert_eq!(r.summary(), Summary::Error(-32602));
    assert!(!*reached.borrow(), "the dispatch ran");
    assert!(
        log.lock().expect("log").is_empty(),
        "a later middleware ran"
    );
}

async fn panics_while_running(ctx: MwContext, next: Next) -> Response {
    if ctx.method() == Method::ToolsCall {
        panic!("boom");
    }
    next(ctx).await
}

struct PanicsBuilding;

impl Middleware for PanicsBuilding {
    fn name(&self) -> &str {
        "panics_building"
    }

    fn handle(&self, _ctx: MwContext, _next: Next) -> LocalBoxFuture<'static, Response> {
        panic!("before any future");
    }
}

#[test]
fn a_panicking_middleware_is_answered_with_an_internal_error() {
    for chain in [
        Chain::new(vec![Arc::new(panics_while_running)]),
        Chain::new(vec![Arc::new(PanicsBuilding)]),
    ] {
        let r = block_on(chain.run(ctx(Method::ToolsCall), |_| async { ok() }));
        assert_eq!(r.summary(), Summary::Error(-32603), "{chain:?}");
        let Outcome::Error(e) = &r.outcome else {
            panic!("not an error: {:?}", r.outcome)
        };
        assert!(e.message().contains("middleware"), "{}", e.message());
    }
    // The same middleware lets other methods through.
    let chain = Chain::new(vec![Arc::new(panics_while_running)]);
    let r = block_on(chain.run(ctx(Method::ToolsList), |_| async { ok() }));
    assert_eq!(r.summary(), Summary::Ok);
}

async fn sets_alice(mut ctx: MwContext, next: Next) -> Response {
    ctx.set_principal(Principal {
        name: "alice".into(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: vec!["ops".into()],
        scopes: vec![],
        token: None,
    });
    next(ctx).await
}

async fn needs_a_principal(ctx: MwContext, next: Next) -> Response {
    if ctx.principal().is_none() {
        return Response::refuse(
            ctx.id(),
            401,
            Error::new(ErrorCode::InvalidRequest, "unauthorized"),
        )
        .with_header("www-authenticate", "Bearer");
    }
    next(ctx).await
}

#[test]
fn a_principal_set_by_one_middleware_is_seen_by_the_next() {
    let with = Chain::new(vec![Arc::new(sets_alice), Arc::new(needs_a_principal)]);
    let r = block_on(with.run(ctx(Method::ToolsCall), |c| async move {
        assert_eq!(c.principal().map(|p| p.name.as_str()), Some("alice"));
        ok()
    }));
    assert_eq!(r.summary(), Summary::Ok);
    let without = Chain::new(vec![Arc::new(needs_a_principal)]);
    let r = block_on(without.run(ctx(Method::ToolsCall), |_| async { ok() }));
    assert_eq!(r.summary(), Summary::Refused(401, -32600));
    let Outcome::Refused(Refusal::Status { headers, .. }) = &r.outcome else {
        panic!("not a refusal")
    };
    assert_eq!(headers, &[("www-authenticate", "Bearer".to_owned())]);
}

#[test]
fn a_tool_error_response_is_summarised_as_one() {
    let r = Response::tool_error(&RequestId::number(1), "rate limited: retry after 1 s", None);
    assert_eq!(r.summary(), Summary::ToolError);
    let backend_said =
        RawValue::from_string(r#"{"content":[],"isError":true}"#.into()).expect("JSON");
    let r = Response::dispatched(Outcome::Result(backend_said), None);
    assert_eq!(r.summary(), Summary::ToolError);
}

#[test]
fn response_error_answers_with_the_id_it_is_given() {
    let id = RequestId::number(9);
    let r = Response::error(&id, Error::new(ErrorCode::InvalidParams, "no"));
    assert_eq!(r.id(), Some(&id));
    assert_eq!(r.summary(), Summary::Error(-32602));
    // The dispatch's own answer names no id: the request's is used.
    assert_eq!(ok().id(), None);
}

#[test]
fn a_middleware_answering_another_requests_id_is_answered_internal_error_for_its_own() {
    async fn wrong_id(_: MwContext, _: Next) -> Response {
        Response::error(
            &RequestId::number(10),
            Error::new(ErrorCode::InvalidParams, "for someone else"),
        )
    }
    let chain = Chain::new(vec![Arc::new(wrong_id)]);
    let r = block_on(chain.run(ctx(Method::ToolsList), |_| async { ok() }));
    assert_eq!(r.id(), Some(&RequestId::number(9)));
    let Outcome::Error(e) = &r.outcome else {
        panic!("{r:?}")
    };
    assert_eq!(e.code(), ErrorCode::InternalError);
    assert!(e.message().contains("wrong_id answered another request"), "{e:?}");
}

#[test]
fn a_middleware_answers_a_result_an_object_only() {
    async fn cached(ctx: MwContext, _: Next) -> Response {
        Response::result(
            ctx.id(),
            serde_json::json!({"content": [{"type": "text", "text": "cached"}]}),
        )
    }
    let chain = Chain::new(vec![Arc::new(cached)]);
    let r = block_on(chain.run(ctx(Method::ToolsCall), |_| async {
        panic!("the dispatch is not reached")
    }));
    assert_eq!(r.summary(), Summary::Ok);
    let Outcome::Result(raw) = &r.outcome else {
        panic!("{r:?}")
    };
    assert!(raw.get().contains("cached"));
    let not_an_object = Response::result(&RequestId::number(9), serde_json::json!([1]));
    assert_eq!(not_an_object.summary(), Summary::Error(-32603));
}

#[test]
fn a_middleware_rewrites_the_arguments_the_dispatch_gets_and_not_the_tool() {
    async fn rewrite(mut ctx: MwContext, next: Next) -> Response {
        let mut args = ctx.arguments().unwrap_or_default();
        args.insert("added".into(), serde_json::json!(true));
        if let Err(e) = ctx.set_arguments(args) {
            return Response::error(ctx.id(), e);
        }
        next(ctx).await
    }
    let seen = Rc::new(RefCell::new(None));
    let seen_by_dispatch = seen.clone();
    let chain = Chain::new(vec![Arc::new(rewrite)]);
    let r = block_on(chain.run(ctx(Method::ToolsCall), move |c| async move {
        *seen_by_dispatch.borrow_mut() = Some((c.name().map(str::to_owned), c.arguments()));
        ok()
    }));
    assert_eq!(r.summary(), Summary::Ok);
    let (name, args) = seen.borrow_mut().take().expect("dispatched");
    assert_eq!(name.as_deref(), Some("t"));
    assert_eq!(
        serde_json::Value::Object(args.expect("arguments")),
        serde_json::json!({"added": true})
    );
    // A method without arguments says so.
    let mut list = ctx(Method::ToolsList);
    assert!(list.set_arguments(serde_json::Map::new()).is_err());
}

#[test]
fn a_middlewares_default_name_is_its_own_without_the_module_path() {
    async fn auth_check(ctx: MwContext, next: Next) -> Response {
        next(ctx).await
    }
    let cases = [
        ("mcpgw::pipeline::auth_check", "auth_check"),
        ("auth_check", "auth_check"),
        ("a::RateLimit<b::C>", "RateLimit"),
        ("a::main::{{closure}}", "{{closure}}"),
    ];
    for (full, short) in cases {
        assert_eq!(short_name(full), short, "{full}");
    }
    assert_eq!(Middleware::name(&auth_check), "auth_check");
}

#[test]
fn headers_a_middleware_may_read_are_only_those_kept_at_acceptance() {
    let mut request = RequestContext::for_tests(protocol::Generation::V2026_07_28);
    request.keep_headers_for_tests(vec![("x-tenant".into(), "acme".into())]);
    let c = MwContext::new(
        ctx(Method::ToolsList).into_call().expect("a call"),
        &Rc::new(request),
    );
    assert_eq!(c.header("x-tenant"), Some("acme"));
    assert_eq!(c.header("X-Tenant"), Some("acme"));
    assert_eq!(c.header("authorization"), None);
}
