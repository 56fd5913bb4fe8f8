//! The mock's resources, under `mock://{name}/` (its `--name`, so that several mocks behind one gateway do not
//! collide): `readme` (text/plain), `config.json` (application/json, the mock's own settings) and the template
//! `items/{id}`. An unknown URI is resource-not-found with `data.uri`
//! (`ErrorCode::RESOURCE_NOT_FOUND`: -32002 before 2026-07-28, -32602 on it, decided when shaped).

use protocol::Error;
use protocol::payload::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, TextResourceContents,
};

use super::pagination;

const README: &str = "mcpgw mock-backend: a synthetic MCP server for tests, demos and load tests.\n\
Tools: echo, add, sleep, fail, jsonrpc_error, big, regional and tool_0..tool_{N-1}.\n\
Resources: mock://NAME/readme, mock://NAME/config.json and mock://NAME/items/{id}. Prompt: greet.\n";

/// Every resource and template of the mock.
#[derive(Debug)]
pub(crate) struct ResourceSet {
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    config_json: String,
    readme_uri: String,
    config_uri: String,
    items_prefix: String,
}

impl ResourceSet {
    /// The resources of the mock named `name`; `config_json` is the text of `mock://{name}/config.json`.
    pub(crate) fn new(config_json: String, name: &str) -> ResourceSet {
        let readme_uri = format!("mock://{name}/readme");
        let config_uri = format!("mock://{name}/config.json");
        let items_prefix = format!("mock://{name}/items/");
        let resource = |uri: &str, name: &str, description: &str, mime: &str| Resource {
            uri: uri.to_owned(),
            name: name.to_owned(),
            description: Some(description.to_owned()),
            mime_type: Some(mime.to_owned()),
            ..Resource::default()
        };
        ResourceSet {
            resources: vec![
                resource(
                    &readme_uri,
                    "readme",
                    "What the mock backend offers.",
                    "text/plain",
                ),
                resource(
                    &config_uri,
                    "config.json",
                    "The mock backend's settings.",
                    "application/json",
                ),
            ],
            templates: vec![ResourceTemplate {
                uri_template: format!("{items_prefix}{{id}}"),
                name: "items".to_owned(),
                description: Some("Item {id}: the text \"item <id>\".".to_owned()),
                mime_type: Some("text/plain".to_owned()),
                ..ResourceTemplate::default()
            }],
            config_json,
            readme_uri,
            config_uri,
            items_prefix,
        }
    }

    /// One page of `resources/list`.
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<ListResourcesResult, Error> {
        let (page, next_cursor) = pagination::page("resources/list", &self.resources, cursor)?;
        Ok(ListResourcesResult {
            resources: page.to_vec(),
            next_cursor,
            ..ListResourcesResult::default()
        })
    }

    /// One page of `resources/templates/list`.
    pub(crate) fn templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let (page, next_cursor) =
            pagination::page("resources/templates/list", &self.templates, cursor)?;
        Ok(ListResourceTemplatesResult {
            resource_templates: page.to_vec(),
            next_cursor,
            ..ListResourceTemplatesResult::default()
        })
    }

    /// Whether `uri` names a resource, directly or through the template.
    pub(crate) fn has(&self, uri: &str) -> bool {
        uri == self.readme_uri || uri == self.config_uri || self.item_id(uri).is_some()
    }

    /// `resources/read`.
    pub(crate) fn read(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let (mime, text) = match uri {
            u if u == self.readme_uri => ("text/plain", README.to_owned()),
            u if u == self.config_uri => ("application/json", self.config_json.clone()),
            _ => match self.item_id(uri) {
                Some(id) => ("text/plain", format!("item {id}")),
                None => return Err(Error::resource_not_found(uri)),
            },
        };
        Ok(ReadResourceResult {
            contents: vec![ResourceContents::Text(TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.to_owned()),
                text,
                ..TextResourceContents::default()
            })],
            ..ReadResourceResult::default()
        })
    }
}

impl ResourceSet {
    /// The `{id}` of `mock://{name}/items/{id}`: one non-empty path segment.
    fn item_id<'u>(&self, uri: &'u str) -> Option<&'u str> {
        let id = uri.strip_prefix(self.items_prefix.as_str())?;
        (!id.is_empty() && !id.contains(['/', '?', '#'])).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{ErrorCode, Generation};

    #[test]
    fn reads_and_misses() {
        let set = ResourceSet::new("{\"tools\":3}".to_owned(), "m");
        // (uri, expected text, expected mime type); None = resource not found
        let table = [
            ("mock://m/readme", Some(README), "text/plain"),
            (
                "mock://m/config.json",
                Some("{\"tools\":3}"),
                "application/json",
            ),
            ("mock://m/items/42", Some("item 42"), "text/plain"),
            ("mock://m/items/a%20b", Some("item a%20b"), "text/plain"),
            ("mock://m/items/", None, ""),
            ("mock://m/items/a/b", None, ""),
            ("mock://m/nothing", None, ""),
            ("file:///etc/passwd", None, ""),
        ];
        for (uri, text, mime) in table {
            assert_eq!(set.has(uri), text.is_some(), "{uri}");
            match (set.read(uri), text) {
                (Ok(r), Some(text)) => {
                    let ResourceContents::Text(c) = &r.contents[0] else {
                        panic!("{uri}: not text");
                    };
                    assert_eq!((c.uri.as_str(), c.text.as_str()), (uri, text));
                    assert_eq!(c.mime_type.as_deref(), Some(mime));
                }
                (Err(e), None) => {
                    assert_eq!(e.code(), ErrorCode::RESOURCE_NOT_FOUND, "{uri}");
                    assert_eq!(e.code().wire_code(Generation::V2025_06_18), -32002);
                    assert_eq!(e.code().wire_code(Generation::V2026_07_28), -32602);
                    assert_eq!(e.data().unwrap()["uri"], uri);
                }
                (got, want) => panic!("{uri}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn lists() {
        let set = ResourceSet::new(String::new(), "m");
        let list = set.list(None).unwrap();
        assert_eq!(list.resources.len(), 2);
        assert!(list.next_cursor.is_none());
        let t = set.templates(None).unwrap();
        assert_eq!(t.resource_templates[0].uri_template, "mock://m/items/{id}");
        assert!(set.list(Some("bogus")).is_err());
    }
}
