//! Before the load: one client checks that the target answers (a modern `server/discover` and/or a legacy
//! handshake, per `--era`), lists the tools (to find the tool, and `--ask-tool`, with their `x-mcp-header`
//! annotations) and, when needed, the resources, and the requests of the run are built from what it learnt.
//! With `ask` in the mix, the sessions declare that they answer questions (elicitation, sampling, roots). A
//! target that fails here stops the run with the reason, before any session starts.

use protocol::headers::{ParamHeader, param_headers};
use serde_json::{Map, Value, json};

use super::LoadError;
use super::args::Plan;
use super::ask::AskCall;
use super::request::{
    LegacyHeaders, Template, answering_capabilities, call_params, initialize_params, page_params,
    read_params,
};
use super::session::{EraCalls, HandshakeError, discover, legacy_handshake};
use super::stats::{Op, Outcome};
use super::wire::{Expect, Wire, result_of};

/// Most pages of `tools/list` read.
const MAX_PAGES: usize = 100;

/// What the probe found, ready for the sessions.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) legacy: Option<EraCalls>,
    pub(crate) modern: Option<EraCalls>,
    /// The tool of `tools/call`, when the mix calls one.
    pub(crate) tool: Option<String>,
    /// The resource of `resources/read`, when the mix reads one.
    pub(crate) uri: Option<String>,
    /// The tool of `ask`, when the mix has it.
    pub(crate) ask_tool: Option<String>,
}

/// Who lists: a modern client, or the probe's legacy session.
pub(crate) enum Lister {
    Modern,
    Legacy(LegacyHeaders),
}

/// Probes the target and builds the requests of the run.
pub(crate) async fn prepare(wire: &Wire, plan: &Plan) -> Result<Prepared, LoadError> {
    let fail = |why: String| LoadError::Probe(why);
    // Sessions that may be asked say they can answer (the gateway relays a question only to a client that can).
    let capabilities = if plan.mix.has(Op::Ask) {
        answering_capabilities()
    } else {
        json!({})
    };
    let initialize = Template::legacy(
        "initialize",
        initialize_params(plan.legacy_version, capabilities),
    );
    let discovery = Template::modern("server/discover", Map::new(), None, &[]);
    let mut next_id = 0u64;
    let mut id = || {
        next_id += 1;
        next_id
    };
    // An answer that is not what the era expects gets a hint at the other era; no answer at all, the plain
    // reason (connection refused, the deadline), with the URL.
    let judged = |(status, outcome, why): HandshakeError, hint: &str| {
        if status.is_none() && matches!(outcome, Outcome::Transport(_) | Outcome::Timeout) {
            LoadError::NoAnswer {
                url: wire.url().to_string(),
                why,
            }
        } else {
            fail(format!("{why} ({hint})"))
        }
    };
    if plan.era.uses_modern() {
        discover(wire, &discovery, id())
            .await
            .map_err(|e| judged(e, "is it a 2026-07-28 server? try --era legacy"))?;
    }
    let legacy = if plan.era.uses_legacy() {
        let h = legacy_handshake(wire, &initialize, id())
            .await
            .map_err(|e| {
                judged(
                    e,
                    "does it speak initialize-based versions? try --era modern",
                )
            })?;
        Some(h.0)
    } else {
        None
    };
    let lister = match (&legacy, plan.era.uses_modern()) {
        (_, true) => Lister::Modern,
        (Some(h), false) => Lister::Legacy(h.clone()),
        (None, false) => return Err(fail("no era to probe".into())),
    };
    let tools = if plan.mix.has(Op::ToolsCall) || plan.mix.has(Op::Ask) {
        let tools = list(wire, &lister, "tools/list", "tools", &mut id).await;
        Some(tools.map_err(fail)?)
    } else {
        None
    };
    let uri = match (&plan.uri, plan.mix.has(Op::ResourcesRead)) {
        (Some(u), true) => Some(u.clone()),
        (None, true) => {
            let resources = list(wire, &lister, "resources/list", "resources", &mut id)
                .await
                .map_err(fail)?;
            let first = resources
                .iter()
                .find_map(|r| r.get("uri").and_then(Value::as_str));
            Some(first.map(str::to_owned).ok_or_else(|| {
                fail("the server lists no resources: give --uri or leave resources/read out of --mix".into())
            })?)
        }
        (_, false) => None,
    };
    if let Some(h) = legacy.as_ref().filter(|h| h.has_session()) {
        let mut headers = initialize.headers(None);
        h.apply(&mut headers);
        let _ = wire.delete(headers).await;
    }
    let tool = match &tools {
        Some(list) if plan.mix.has(Op::ToolsCall) => {
            Some(pick_tool(list, plan.tool.as_deref()).map_err(fail)?)
        }
        _ => None,
    };
    let asker = match (&tools, &plan.ask_tool) {
        (Some(list), Some(wanted)) if plan.mix.has(Op::Ask) => {
            Some(pick_tool(list, Some(wanted)).map_err(fail)?)
        }
        _ => None,
    };
    let calls = |modern: bool| {
        let template = |method: &'static str,
                        params: Map<String, Value>,
                        name: Option<&str>,
                        hdrs: &[ParamHeader]| {
            if modern {
                Template::modern(method, params, name, hdrs)
            } else {
                Template::legacy(method, params)
            }
        };
        EraCalls {
            tools_list: template("tools/list", page_params(None), None, &[]),
            tools_call: tool.as_ref().map(|(name, hdrs)| {
                template(
                    "tools/call",
                    call_params(name, &plan.args),
                    Some(name),
                    hdrs,
                )
            }),
            resources_read: uri
                .as_deref()
                .map(|u| template("resources/read", read_params(u), Some(u), &[])),
            ask: asker.as_ref().map(|(name, hdrs)| {
                if modern {
                    AskCall::modern(name, &plan.ask_args, hdrs)
                } else {
                    AskCall::legacy(name, &plan.ask_args)
                }
            }),
            handshake: if modern {
                discovery.clone()
            } else {
                initialize.clone()
            },
        }
    };
    Ok(Prepared {
        legacy: plan.era.uses_legacy().then(|| calls(false)),
        modern: plan.era.uses_modern().then(|| calls(true)),
        tool: tool.as_ref().map(|(n, _)| n.clone()),
        uri: uri.clone(),
        ask_tool: asker.map(|(n, _)| n),
    })
}

/// Every item of a paginated list (at most [`MAX_PAGES`] pages).
pub(crate) async fn list(
    wire: &Wire,
    lister: &Lister,
    method: &'static str,
    key: &str,
    id: &mut impl FnMut() -> u64,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = page_params(cursor.as_deref());
        let (t, session) = match lister {
            Lister::Modern => (Template::modern(method, params, None, &[]), None),
            Lister::Legacy(h) => (Template::legacy(method, params), Some(h)),
        };
        let n = id();
        let expect = Expect {
            id: n,
            modern: matches!(lister, Lister::Modern),
        };
        let answer = wire
            .post(t.headers(session), t.body(n))
            .await
            .map_err(|f| format!("{method}: {f}"))?;
        let result = result_of(&answer, expect).map_err(|e| format!("{method}: {e}"))?;
        if let Some(page) = result.get(key).and_then(Value::as_array) {
            items.extend(page.iter().cloned());
        }
        cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            return Ok(items);
        }
    }
    Ok(items)
}

/// The tool to call and its `x-mcp-header` annotations: `wanted` if listed; else `echo` (or a prefixed
/// `*__echo`, as through mcpgw); else the first tool listed.
pub(crate) fn pick_tool(
    tools: &[Value],
    wanted: Option<&str>,
) -> Result<(String, Vec<ParamHeader>), String> {
    let name_of = |t: &Value| t.get("name").and_then(Value::as_str).map(str::to_owned);
    let found = match wanted {
        Some(w) => tools.iter().find(|t| name_of(t).as_deref() == Some(w)),
        None => tools
            .iter()
            .find(|t| name_of(t).is_some_and(|n| n == "echo" || n.ends_with("__echo")))
            .or_else(|| tools.iter().find(|t| name_of(t).is_some())),
    };
    let Some(tool) = found else {
        let names: Vec<String> = tools.iter().filter_map(name_of).take(10).collect();
        return Err(match wanted {
            Some(w) => format!(
                "tool {w:?} is not in the server's tools/list ({} tools: {}{})",
                tools.len(),
                names.join(", "),
                if tools.len() > names.len() {
                    ", …"
                } else {
                    ""
                }
            ),
            None => {
                "the server lists no tools: give --tool or leave tools/call out of --mix".into()
            }
        });
    };
    let name = name_of(tool).unwrap_or_default();
    let headers = tool
        .get("inputSchema")
        .map(|s| param_headers(s).unwrap_or_default())
        .unwrap_or_default();
    Ok((name, headers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_choice() {
        let tools = vec![
            json!({"name": "m__add", "inputSchema": {"type": "object"}}),
            json!({"name": "m__echo", "inputSchema": {"type": "object"}}),
            json!({"name": "m__regional", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}}),
        ];
        assert_eq!(pick_tool(&tools, None).unwrap().0, "m__echo");
        let (name, headers) = pick_tool(&tools, Some("m__regional")).unwrap();
        assert_eq!(name, "m__regional");
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].header, "Region");
        let err = pick_tool(&tools, Some("nope")).unwrap_err();
        assert!(err.contains("\"nope\"") && err.contains("m__add"), "{err}");
        assert_eq!(pick_tool(&tools[..1], None).unwrap().0, "m__add");
        assert!(pick_tool(&[], None).unwrap_err().contains("no tools"));
    }
}
