//! `[[backend]] openapi`: a REST API described by an OpenAPI document, whose operations are the backend's
//! tools (served in-process by the `openapi` domain). This module only checks the fields that go with it.

use super::{BackendEntry, ConfigError, invalid};

/// Checks an `openapi` backend's fields: a document (a path or an http(s) URL), a `base_url` that is an
/// http(s) URL with a host, `operations` globs that are not empty, and none of what applies to other kinds
/// (`base_url` and `operations` without `openapi`, `env`, `cwd`, `roots`).
pub(super) fn validate(
    b: &BackendEntry,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let Some(document) = &b.openapi else {
        for (name, given) in [
            ("base_url", b.base_url.is_some()),
            ("operations", b.operations.is_some()),
        ] {
            if given {
                return Err(invalid(field(name), "applies to openapi backends only"));
            }
        }
        return Ok(());
    };
    if document.trim().is_empty() {
        return Err(invalid(
            field("openapi"),
            "must be a file path or an http(s) URL of an OpenAPI document",
        ));
    }
    if document.contains("://")
        && !(document.starts_with("http://") || document.starts_with("https://"))
    {
        return Err(invalid(
            field("openapi"),
            format!("{document:?}: a URL must start with http:// or https://"),
        ));
    }
    let Some(base) = &b.base_url else {
        return Err(invalid(
            field("base_url"),
            "an openapi backend needs base_url: where the REST API is",
        ));
    };
    match reqwest::Url::parse(base) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            return Err(invalid(
                field("base_url"),
                format!("{base:?} must be an http:// or https:// URL with a host"),
            ));
        }
    }
    if let Some(ops) = &b.operations
        && ops
            .allow
            .iter()
            .flatten()
            .chain(&ops.deny)
            .any(String::is_empty)
    {
        return Err(invalid(field("operations"), "globs must not be empty"));
    }
    if !b.roots.is_empty() {
        return Err(invalid(
            field("roots"),
            "an openapi backend never asks for roots",
        ));
    }
    Ok(())
}
