//! The parameters of an operation (the path item's and its own, merged): each the tool argument of its
//! name, with where it goes (path, query or header), how an array is written (the parameter's `style` and
//! `explode`) and the JSON type it must have. It must not let an argument set a header the gateway owns or
//! a cookie: such a parameter refuses the operation (`Accept`, `Content-Type` and `Authorization` are
//! ignored, as OpenAPI says).

use super::Site;
use crate::refs::{self, Refusal};
use crate::schema::{self, Inliner};
use http::HeaderName;
use serde_json::{Map, Value, json};

/// Header parameters OpenAPI itself says to ignore (the gateway sets them: the body's type, the answer's,
/// the backend's `auth`): left out of the tool.
const IGNORED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];
/// Header parameters the tool never takes: the operation is refused.
const FORBIDDEN_HEADERS: [&str; 10] = [
    "host",
    "cookie",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "upgrade",
    "keep-alive",
    "trailer",
    "proxy-authorization",
];

/// Where an argument goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Path,
    Query,
    Header,
}

impl Location {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
        }
    }
}

/// How an array argument is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Join {
    /// `name=a&name=b` (query, `form`, `explode: true`).
    Repeat,
    /// The items joined by this (already encoded) delimiter.
    With(&'static str),
}

/// The JSON type a scalar argument must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Primitive {
    String,
    Integer,
    Number,
    Boolean,
}

/// A parameter: the argument of the same name.
#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) location: Location,
    pub(crate) required: bool,
    /// `Some` for an array.
    pub(crate) array: Option<Join>,
    /// The type of the value, or of the array's items; `None`: any scalar.
    pub(crate) primitive: Option<Primitive>,
    /// A header parameter's header.
    pub(crate) header: Option<HeaderName>,
}

/// Where a parameter is, and its name.
type Key = (String, String);

/// The path item's parameters, then the operation's, which replace those of the same name and location.
pub(super) fn declared<'d>(
    site: &Site<'d>,
    op: &'d Map<String, Value>,
) -> Result<Vec<&'d Map<String, Value>>, Refusal> {
    // Each parameter under its location and name (a header's lower-cased).
    let mut merged: Vec<(Key, &'d Map<String, Value>)> = Vec::new();
    for list in [site.item.get("parameters"), op.get("parameters")] {
        let Some(list) = list else { continue };
        let Value::Array(list) = list else {
            return Err("`parameters` is not a list".into());
        };
        for declared in list {
            let declared = refs::component(site.root, declared)
                .map_err(|why| format!("a parameter: {why}"))?;
            let Value::Object(declared) = declared else {
                return Err("a parameter is not an object".into());
            };
            let field = |key: &str| declared.get(key).and_then(Value::as_str);
            let (Some(name), Some(location)) = (field("name"), field("in")) else {
                return Err("a parameter has no `name` or no `in`".into());
            };
            let key = if location == "header" {
                (location.to_owned(), name.to_ascii_lowercase())
            } else {
                (location.to_owned(), name.to_owned())
            };
            match merged.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = declared,
                None => merged.push((key, declared)),
            }
        }
    }
    Ok(merged.into_iter().map(|(_, declared)| declared).collect())
}

/// One parameter and its argument's schema; `None` for a header OpenAPI says to ignore.
pub(super) fn parameter(
    inliner: &mut Inliner<'_>,
    declared: &Map<String, Value>,
) -> Result<Option<(Param, Value)>, Refusal> {
    let field = |key: &str| declared.get(key).and_then(Value::as_str);
    let (name, location) = (field("name").unwrap_or(""), field("in").unwrap_or(""));
    let mut header = None;
    let location = match location {
        "path" => Location::Path,
        "query" => Location::Query,
        "header" => {
            let lower = name.to_ascii_lowercase();
            if IGNORED_HEADERS.contains(&lower.as_str()) {
                return Ok(None);
            }
            if FORBIDDEN_HEADERS.contains(&lower.as_str())
                || lower.starts_with("proxy-")
                || lower.starts_with("mcp-")
            {
                return Err(format!(
                    "header parameter `{name}` is a header the tool never sets (Host, Cookie, hop-by-hop, Proxy-* and Mcp-* headers)"
                ));
            }
            header =
                Some(HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    format!("header parameter `{name}` is not a valid header name")
                })?);
            Location::Header
        }
        "cookie" => {
            return Err(format!(
                "parameter `{name}` is a cookie (the tool never sets cookies)"
            ));
        }
        other => {
            return Err(format!(
                "parameter `{name}` is in `{other}` (not path, query, header or cookie)"
            ));
        }
    };
    if !declared.contains_key("schema") && declared.contains_key("content") {
        return Err(format!(
            "parameter `{name}` is described by `content` (a serialized media type), not by a schema"
        ));
    }
    let any = json!({});
    let mut schema = inliner
        .schema(declared.get("schema").unwrap_or(&any))
        .map_err(|why| format!("parameter `{name}`: {why}"))?;
    let style = field("style");
    let explode = declared.get("explode").and_then(Value::as_bool);
    let unsupported = |style: &str| {
        format!(
            "parameter `{name}` has style `{style}`, which is not supported in a {} parameter",
            location.as_str()
        )
    };
    let kind = schema::single_type(&schema);
    if kind == Some("object") {
        return Err(format!(
            "parameter `{name}` is an object (objects in a path, query or header are not supported)"
        ));
    }
    let (array, primitive) = if kind == Some("array") {
        let items = schema.get("items").unwrap_or(&Value::Null);
        let item_kind = schema::single_type(items);
        if let Some(nested @ ("object" | "array")) = item_kind {
            return Err(format!(
                "parameter `{name}` is an array of {nested}s (only arrays of strings, numbers or booleans are supported)"
            ));
        }
        let join = match (location, style) {
            (Location::Query, None | Some("form")) if explode.unwrap_or(true) => Join::Repeat,
            (Location::Query, None | Some("form")) => Join::With(","),
            (Location::Query, Some("spaceDelimited")) => Join::With("%20"),
            (Location::Query, Some("pipeDelimited")) => Join::With("|"),
            (Location::Path | Location::Header, None | Some("simple")) => Join::With(","),
            (_, Some(style)) => return Err(unsupported(style)),
        };
        (Some(join), primitive_of(item_kind))
    } else {
        match (location, style) {
            (Location::Path, Some(style @ ("label" | "matrix")))
            | (_, Some(style @ "deepObject")) => {
                return Err(unsupported(style));
            }
            _ => (None, primitive_of(kind)),
        }
    };
    if let Value::Object(annotated) = &mut schema {
        if let Some(description) = declared.get("description").filter(|d| d.is_string()) {
            annotated.insert("description".into(), description.clone());
        }
        if declared.get("deprecated") == Some(&Value::Bool(true)) {
            annotated.insert("deprecated".into(), Value::Bool(true));
        }
    }
    let required =
        location == Location::Path || declared.get("required") == Some(&Value::Bool(true));
    let param = Param {
        name: name.to_owned(),
        location,
        required,
        array,
        primitive,
        header,
    };
    Ok(Some((param, schema)))
}

fn primitive_of(kind: Option<&str>) -> Option<Primitive> {
    match kind? {
        "string" => Some(Primitive::String),
        "integer" => Some(Primitive::Integer),
        "number" => Some(Primitive::Number),
        "boolean" => Some(Primitive::Boolean),
        _ => None,
    }
}

/// The `{name}`s of a path template, in order.
pub(crate) fn template_names(path: &str) -> Result<Vec<&str>, Refusal> {
    let malformed = || format!("its path template `{path}` is malformed");
    let mut names = Vec::new();
    let mut rest = path;
    loop {
        match rest.find(['{', '}']) {
            None => return Ok(names),
            Some(at) if rest.as_bytes()[at] == b'}' => return Err(malformed()),
            Some(at) => {
                let after = &rest[at + 1..];
                let close = after
                    .find(['{', '}'])
                    .filter(|&c| c > 0 && after.as_bytes()[c] == b'}')
                    .ok_or_else(malformed)?;
                names.push(&after[..close]);
                rest = &after[close + 1..];
            }
        }
    }
}

/// Every `{name}` of the template is a path parameter, and every path parameter is in the template.
pub(super) fn check_template(path: &str, params: &[Param]) -> Result<(), Refusal> {
    let names = template_names(path)?;
    let is_path = |p: &&Param| p.location == Location::Path;
    if let Some(name) = names
        .iter()
        .find(|n| !params.iter().filter(is_path).any(|p| p.name == **n))
    {
        return Err(format!(
            "its path names `{{{name}}}` but no path parameter declares it"
        ));
    }
    if let Some(p) = params
        .iter()
        .filter(is_path)
        .find(|p| !names.contains(&p.name.as_str()))
    {
        return Err(format!(
            "path parameter `{}` is not in the path template",
            p.name
        ));
    }
    Ok(())
}
