//! The request → response logic both transports share: [`Mock`] answers one request for a generation the
//! transport has already settled (legacy session or modern `_meta`), runs fault injection before every
//! `tools/call`, and shapes every result through `protocol::shape::shape` and every error through
//! `protocol::shape::response_bytes`, so the mock emits exactly what the gateway would. It is also the
//! `validate::Catalog` the HTTP transport validates against.

use protocol::method::Method;
use protocol::payload::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, GetPromptRequestParams,
    Implementation, PaginatedRequestParams, ReadResourceRequestParams, SetLevelRequestParams,
};
use protocol::shape::{CachePolicy, CacheScope, Stamp, response_bytes, shape};
use protocol::validate::{Catalog, RouteKey, ToolRoute};
use protocol::{Error, ErrorCode, Generation, GenerationSet, Request, RequestId, Response};
use serde_json::json;
use serde_json::value::RawValue;

use super::asking::{self, Signer};
use super::faults::{CrashCounter, Faults, Injected, Rng};
use super::lifecycle::{discover_result, initialize_result};
use super::prompts::PromptSet;
use super::resources::ResourceSet;
use super::tools::{ToolSet, to_raw};
use super::{EraMode, MockArgs, Scope};

/// A response ready for the wire: the HTTP status (for the HTTP transport) and the JSON-RPC message bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

/// The mock server: its catalog, faults, crash counter and identity.
#[derive(Debug)]
pub(crate) struct Mock {
    tools: ToolSet,
    resources: ResourceSet,
    prompts: PromptSet,
    faults: Faults,
    /// Counts answers for `--crash-after`; each transport records its own answers.
    pub(crate) crash: CrashCounter,
    stamp: Stamp,
    server_info: Implementation,
    served: GenerationSet,
    era: EraMode,
    /// Signs the `asks` tool's 2026-07-28 `requestState`.
    signer: Signer,
    /// Methods answered -32601 (`--unimplemented`) and -32603 (`--failing`).
    unimplemented: Vec<Method>,
    failing: Vec<Method>,
}

fn value_name<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_owned())
        .unwrap_or_default()
}

/// What `--ttl-ms` makes the mock say about reusing its cacheable results.
fn cache_policy(ttl_ms: u64, scope: Scope) -> CachePolicy {
    if ttl_ms == 0 {
        return CachePolicy::NONE;
    }
    CachePolicy {
        ttl_ms,
        scope: match scope {
            Scope::Public => CacheScope::Public,
            Scope::Private => CacheScope::Private,
        },
    }
}

impl Mock {
    /// The mock described by `args`, its fault injection seeded from the operating system.
    pub(crate) fn new(args: &MockArgs) -> Mock {
        Mock::with_rng(args, Rng::from_entropy())
    }

    /// The mock described by `args` with a given random generator.
    pub(crate) fn with_rng(args: &MockArgs, rng: Rng) -> Mock {
        let server_info = Implementation {
            name: args.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            ..Implementation::default()
        };
        let config = json!({
            "name": args.name,
            "era": value_name(&args.era),
            "tools": args.tools,
            "payloadBytes": args.payload_bytes,
            "latencyMs": args.latency_ms,
            "latencyDist": value_name(&args.latency_dist),
            "errorRate": args.error_rate,
            "crashAfter": args.crash_after,
        });
        let (unimplemented, failing) = args.refused();
        Mock {
            unimplemented,
            failing,
            tools: ToolSet::new(args.tools, args.payload_bytes),
            resources: ResourceSet::new(config.to_string(), &args.name),
            prompts: PromptSet::default(),
            faults: Faults::new(args.latency_ms, args.latency_dist, args.error_rate, rng),
            crash: CrashCounter::new(args.crash_after),
            stamp: Stamp::new(&server_info, cache_policy(args.ttl_ms, args.cache_scope)),
            server_info,
            served: args.era.served(),
            era: args.era,
            signer: Signer::new(),
        }
    }

    /// The generations served.
    pub(crate) fn served(&self) -> GenerationSet {
        self.served
    }

    /// Which eras are served.
    pub(crate) fn era(&self) -> EraMode {
        self.era
    }

    /// Answers `request` for a client of generation `g` (`initialize` gets the result for negotiated `g`).
    /// A method that `g` does not define, or that the mock does not implement, is method-not-found.
    pub(crate) async fn answer(&self, g: Generation, request: &Request) -> Reply {
        match Method::parse(&request.method).filter(|m| m.is_client_request() && m.exists_in(g)) {
            Some(method) => self.answer_method(g, method, request).await,
            None => self.error(Some(&request.id), g, method_not_found(&request.method)),
        }
    }

    /// Answers `request`, whose method is already known to be `method`.
    pub(crate) async fn answer_method(
        &self,
        g: Generation,
        method: Method,
        request: &Request,
    ) -> Reply {
        let outcome = self.outcome(g, method, request).await;
        self.reply(g, method, &request.id, outcome)
    }

    /// The response to request `id` of `method` with `outcome`, shaped for generation `g`.
    pub(crate) fn reply(
        &self,
        g: Generation,
        method: Method,
        id: &RequestId,
        outcome: Result<Box<RawValue>, Error>,
    ) -> Reply {
        match outcome {
            Ok(result) => {
                let shaped = shape(id, method, g, Ok(&result), &self.stamp);
                Reply {
                    status: shaped.status,
                    body: shaped.body,
                }
            }
            Err(err) => self.error(Some(id), g, err),
        }
    }

    /// Whether `request` is a `tools/call` of the `asks` tool (which the HTTP transport runs itself for a
    /// legacy session).
    pub(crate) fn is_asking(&self, request: &Request) -> bool {
        request
            .params_as::<CallToolRequestParams>()
            .ok()
            .and_then(|p| self.tools.get(&p.name).map(|e| e.asks()))
            .unwrap_or(false)
    }

    /// An error response for a client of generation `g`. On 2026-07-28 the HTTP status follows the spec:
    /// 400 for -32020/-32021/-32022, 404 for method-not-found, 200 otherwise.
    pub(crate) fn error(&self, id: Option<&RequestId>, g: Generation, err: Error) -> Reply {
        let status = match err.code() {
            _ if !g.is_modern() => 200,
            c if c.is_modern_http_400() => 400,
            ErrorCode::MethodNotFound => 404,
            _ => 200,
        };
        Reply {
            status,
            body: response_bytes(&Response::error(id.cloned(), err), g),
        }
    }

    async fn outcome(
        &self,
        g: Generation,
        method: Method,
        request: &Request,
    ) -> Result<Box<RawValue>, Error> {
        if self.unimplemented.contains(&method) {
            return Err(method_not_found(method.as_str()));
        }
        if self.failing.contains(&method) {
            return Err(Error::new(
                ErrorCode::InternalError,
                format!("{method} failed (--failing)"),
            ));
        }
        match method {
            Method::Initialize => to_raw(&initialize_result(g, &self.server_info)),
            Method::Ping => to_raw(&json!({})),
            Method::LoggingSetLevel => {
                request.params_as::<SetLevelRequestParams>()?;
                to_raw(&json!({}))
            }
            Method::ServerDiscover => to_raw(&discover_result(self.served)),
            Method::ToolsList => {
                let p: PaginatedRequestParams = request.params_as()?;
                to_raw(&self.tools.list(g, p.cursor.as_deref())?)
            }
            Method::ToolsCall => self.call_tool(g, request).await,
            Method::ResourcesList => {
                let p: PaginatedRequestParams = request.params_as()?;
                to_raw(&self.resources.list(p.cursor.as_deref())?)
            }
            Method::ResourcesTemplatesList => {
                let p: PaginatedRequestParams = request.params_as()?;
                to_raw(&self.resources.templates(p.cursor.as_deref())?)
            }
            Method::ResourcesRead => {
                let p: ReadResourceRequestParams = request.params_as()?;
                to_raw(&self.resources.read(&p.uri)?)
            }
            Method::PromptsList => {
                let p: PaginatedRequestParams = request.params_as()?;
                to_raw(&self.prompts.list(p.cursor.as_deref())?)
            }
            Method::PromptsGet => {
                let p: GetPromptRequestParams = request.params_as()?;
                to_raw(&self.prompts.get(&p)?)
            }
            Method::CompletionComplete => {
                let p: CompleteRequestParams = request.params_as()?;
                to_raw(&self.prompts.complete(&p)?)
            }
            // resources/subscribe (capability not declared), subscriptions/listen, tasks/*: not implemented.
            other => Err(method_not_found(other.as_str())),
        }
    }

    /// `tools/call`: the tool must exist (else -32602); then latency, then error injection, then the tool.
    async fn call_tool(&self, g: Generation, request: &Request) -> Result<Box<RawValue>, Error> {
        let params: CallToolRequestParams = request.params_as()?;
        let Some(entry) = self.tools.get(&params.name) else {
            return Err(Error::new(
                ErrorCode::InvalidParams,
                format!("unknown tool: {}", params.name),
            )
            .with_data(json!({ "name": params.name })));
        };
        if let Some(injected) = self.faults_before(&params.name).await {
            return injected;
        }
        if entry.asks() && g.is_modern() {
            return asking::modern(&self.signer, &params);
        }
        self.tools.call(entry, &params).await
    }

    /// What fault injection does before tool `name` runs: the latency, then an injected failure if one is
    /// drawn (`None`: run the tool).
    pub(crate) async fn faults_before(&self, name: &str) -> Option<Result<Box<RawValue>, Error>> {
        let delay = self.faults.latency();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match self.faults.injected() {
            Injected::Nothing => None,
            Injected::ToolError => Some(to_raw(&CallToolResponse::error(format!(
                "injected failure of tool {name} (--error-rate)"
            )))),
            Injected::RpcError => Some(Err(Error::new(
                ErrorCode::InternalError,
                format!("internal error: injected failure of tool {name} (--error-rate)"),
            ))),
        }
    }
}

fn method_not_found(method: &str) -> Error {
    Error::new(
        ErrorCode::MethodNotFound,
        format!("method not found: {method}"),
    )
}

impl Catalog for Mock {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        self.tools.get(name).map(|e| ToolRoute {
            key: RouteKey(0),
            header_params: e.headers(),
            required_capabilities: None,
        })
    }

    fn resource(&self, uri: &str) -> Option<RouteKey> {
        (self.resources.has(uri)).then_some(RouteKey(0))
    }

    fn prompt(&self, name: &str) -> Option<RouteKey> {
        (self.prompts.has(name)).then_some(RouteKey(0))
    }
}

#[cfg(test)]
mod tests;
