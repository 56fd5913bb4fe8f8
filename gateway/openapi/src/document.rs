//! An OpenAPI document: parsed from JSON or YAML (told apart by content), its version checked (3.0.x and
//! 3.1.x only), and walked operation by operation into tools. It must not read files or fetch anything: the
//! caller hands it the text.

use crate::operation::{self, METHODS, Operation};
use crate::{OpenApiError, refs, schema, yaml};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// A parsed OpenAPI 3.0 or 3.1 document.
#[derive(Debug, Clone)]
pub struct Document {
    root: Value,
    v30: bool,
    title: String,
    version: String,
}

/// What [`Document::tools`] made of the selected operations.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The operations offered as tools, in path then method order.
    pub operations: Vec<Operation>,
    /// The selected operations left out, and why.
    pub refused: Vec<Refused>,
}

/// One operation left out of the tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Its tool name and where it is: `getItem (GET /items/{id})`.
    pub operation: String,
    /// Why, lower-case.
    pub why: String,
}

impl Document {
    /// Parses JSON or YAML (a text whose first non-blank character is `{` is JSON, anything else YAML); an
    /// OpenAPI 3.0.x or 3.1.x document only (Swagger 2.0 and others refused with a clear error).
    pub fn parse(text: &str) -> Result<Document, OpenApiError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| OpenApiError::Json(e.to_string()))?
        } else {
            yaml::parse(text).map_err(|e| match e {
                yaml::YamlError::TooLarge(n) => OpenApiError::YamlTooLarge(n),
                yaml::YamlError::Invalid(why) => OpenApiError::Yaml(why),
            })?
        };
        let Value::Object(top) = &root else {
            return Err(OpenApiError::NotAnObject);
        };
        let version = match top.get("openapi") {
            Some(Value::String(v)) => v.clone(),
            Some(other) => return Err(OpenApiError::Version(other.to_string())),
            None => {
                return Err(match top.get("swagger") {
                    Some(Value::String(v)) => OpenApiError::Swagger(v.clone()),
                    Some(other) => OpenApiError::Swagger(other.to_string()),
                    None => OpenApiError::NoVersion,
                });
            }
        };
        let v30 = match version_of(&version) {
            Some((3, 0)) => true,
            Some((3, 1)) => false,
            _ => return Err(OpenApiError::Version(version)),
        };
        let info = |field: &'static str| {
            top.get("info")
                .and_then(|info| info.get(field))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(OpenApiError::Info(field))
        };
        let (title, version) = (info("title")?, info("version")?);
        Ok(Document {
            v30,
            title,
            version,
            root,
        })
    }

    /// The document's own title (`info.title`), for `serverInfo`.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The document's own version (`info.version`), for `serverInfo`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Every operation as a tool, paths in the order of their templates, each path's methods in the order
    /// get, put, post, delete, options, head, patch, trace; `selected(tool_name)` decides which are kept. An
    /// operation that cannot be translated is left out and reported in [`Translation::refused`]; only a
    /// document-level problem (`paths` not an object, a path item's reference unresolvable) is an error.
    pub fn tools(&self, selected: &dyn Fn(&str) -> bool) -> Result<Translation, OpenApiError> {
        let empty = Map::new();
        let paths = match self.root.get("paths") {
            None => &empty,
            Some(Value::Object(paths)) => paths,
            Some(_) => return Err(OpenApiError::Paths),
        };
        let mut translation = Translation {
            operations: Vec::new(),
            refused: Vec::new(),
        };
        // A tool name and the operation that took it first.
        let mut taken: HashMap<String, String> = HashMap::new();
        let budget = schema::DocumentBudget::new();
        for (path, item) in paths {
            if path.starts_with("x-") {
                continue;
            }
            let item = refs::component(&self.root, item).map_err(|why| OpenApiError::PathItem {
                path: path.clone(),
                why,
            })?;
            let Value::Object(item) = item else {
                return Err(OpenApiError::PathItem {
                    path: path.clone(),
                    why: "the path item is not an object".into(),
                });
            };
            for (key, method) in METHODS {
                let Some(op) = item.get(key) else {
                    continue;
                };
                let name = operation::tool_name(op, key, path);
                if !selected(name.as_str()) {
                    continue;
                }
                let label = format!("{name} ({method} {path})");
                if let Some(first) = taken.get(&name) {
                    translation.refused.push(Refused {
                        operation: label,
                        why: format!("the tool name `{name}` is taken by {first}"),
                    });
                    continue;
                }
                taken.insert(name.clone(), format!("{method} {path}"));
                let site = operation::Site {
                    root: &self.root,
                    v30: self.v30,
                    path,
                    item,
                    budget: &budget,
                };
                let translated = operation::translate(&site, method, op, name);
                if budget.exhausted() {
                    return Err(OpenApiError::TooManyInlined);
                }
                match translated {
                    Ok(operation) => translation.operations.push(operation),
                    Err(why) => translation.refused.push(Refused {
                        operation: label,
                        why,
                    }),
                }
            }
        }
        Ok(translation)
    }
}

/// The major and minor numbers of `3.0.3`, `3.1.0`, `3.1`, `3.1.1-rc1`.
fn version_of(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    if let Some(patch) = parts.next() {
        let patch = patch.split_once('-').map_or(patch, |(number, _)| number);
        patch.parse::<u32>().ok()?;
    }
    parts.next().is_none().then_some((major, minor))
}

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod tests;
