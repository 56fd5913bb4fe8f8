//! The request sent to a backend: the call's target resolved to the backend that owns it, the name
//! de-prefixed, the client's declared capabilities, the backend's own `Mcp-Param-*` headers, and whether the
//! call goes through the replay of server-to-client requests.

use handlers::{BackendRequest, TransportKind};
use protocol::headers::{argument_at, value_for};
use protocol::meta::{LOG_LEVEL, RequestMeta};
use protocol::raw::RawObject;
use protocol::validate::{Call, Target};
use protocol::{Error, ErrorCode, Method};
use serde_json::{Map, Value, json};

use super::state::FromState;
use crate::session::Session;
use super::{Dispatch, stale_route};

impl Dispatch<'_> {
    /// The backend that owns the call's target and the request to send it.
    pub(super) fn backend_request(&self, call: &Call) -> Result<(String, BackendRequest, FromState), Error> {
        let params = call.request().params.as_deref();
        let mut obj = RawObject::parse_or_empty(params).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidParams,
                "invalid params: params must be an object",
            )
        })?;
        let capabilities = self.client_capabilities(call.meta());
        if let (Some(level), Some(_)) = (self.session.and_then(Session::log_level), &self.related) {
            // A legacy client chose its level with logging/setLevel; a 2026-07-28 backend learns it per request.
            let mut meta = obj
                .get("_meta")
                .and_then(RawObject::parse)
                .unwrap_or_default();
            meta.set_value(LOG_LEVEL, &level);
            let meta = meta.to_raw();
            obj.set("_meta", meta);
        }
        let mut timeout = None;
        let (backend, name, param_headers) = match (call.target(), call.method()) {
            (Some(Target::Tool { route, .. }), _) => {
                let entry = self.snapshot.tool_at(*route).ok_or_else(stale_route)?;
                obj.set_value("name", &entry.original_name);
                let headers = if entry.backend_headers.is_empty() {
                    Vec::new()
                } else {
                    let args: Option<Map<String, Value>> = obj
                        .get("arguments")
                        .and_then(|a| serde_json::from_str(a.get()).ok());
                    entry
                        .backend_headers
                        .iter()
                        .filter_map(|h| {
                            let v = argument_at(args.as_ref(), &h.path)?;
                            Some((h.header.clone(), value_for(h.kind, v)?))
                        })
                        .collect()
                };
                timeout = self
                    .gw
                    .live()
                    .tool_timeouts
                    .get(&entry.backend)
                    .and_then(|tools| tools.get(&entry.original_name))
                    .copied();
                (
                    entry.backend.clone(),
                    Some(entry.original_name.clone()),
                    headers,
                )
            }
            (Some(Target::Prompt { route, .. }), _) => {
                let entry = self.snapshot.prompt_at(*route).ok_or_else(stale_route)?;
                obj.set_value("name", &entry.original_name);
                (
                    entry.backend.clone(),
                    Some(entry.original_name.clone()),
                    Vec::new(),
                )
            }
            (Some(Target::Resource { uri, route }), _) => {
                let route = self.snapshot.resource_at(*route).ok_or_else(stale_route)?;
                (route.backend.to_owned(), Some(uri.clone()), Vec::new())
            }
            (None, Method::CompletionComplete) => {
                let reference: Value = obj
                    .get("ref")
                    .and_then(|r| serde_json::from_str(r.get()).ok())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::InvalidParams,
                            "invalid params: completion/complete needs \"ref\"",
                        )
                    })?;
                let (backend, rewritten) = self
                    .snapshot
                    .completion_backend(&reference)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::InvalidParams,
                            "invalid params: no backend completes this reference",
                        )
                        .with_data(json!({ "ref": reference }))
                    })?;
                let backend = backend.to_owned();
                obj.set_value("ref", &rewritten);
                (backend, None, Vec::new())
            }
            _ => {
                return Err(Error::new(
                    ErrorCode::InternalError,
                    "internal error: call without a target",
                ));
            }
        };
        self.routed_to(&backend);
        let replay = if self.generation.is_modern() {
            self.open_state(call, &backend, &mut obj)?
        } else {
            FromState::default()
        };
        let request = BackendRequest {
            method: call.method(),
            params: Some(obj.to_raw()),
            client_capabilities: Some(capabilities),
            name,
            param_headers,
            related: self.related.clone(),
            timeout,
            caller: self.caller,
            credential: None,
            trace: None,
            extension: None,
        };
        Ok((backend, request, replay))
    }

    /// Whether the call goes through the replay: a 2026-07-28 client's request that may need input, to a
    /// backend that may ask with server-to-client requests — any but one built into the gateway: legacy
    /// backends do, and so do 2026-07-28 SDK servers in their stateless mode, on the response stream.
    pub(super) fn replays(&self, call: &Call, backend: &str) -> bool {
        self.generation.is_modern()
            && call.method().may_require_input()
            && self
                .gw
                .live()
                .backend(backend)
                .and_then(|h| h.description())
                .is_some_and(|d| d.transport != TransportKind::InProcess)
    }

    /// The capabilities the client declared: per request on 2026-07-28, at `initialize` before.
    pub(super) fn client_capabilities(&self, meta: &RequestMeta) -> Value {
        self.declared(meta).cloned().unwrap_or_else(|| json!({}))
    }

    /// What the client declared, borrowed: per request on 2026-07-28, at `initialize` before.
    pub(crate) fn declared<'m>(&'m self, meta: &'m RequestMeta) -> Option<&'m Value> {
        match (self.generation.is_modern(), self.session) {
            (true, _) => meta.client_capabilities.as_ref(),
            (false, Some(s)) => Some(&s.client_capabilities),
            (false, None) => None,
        }
    }
}
