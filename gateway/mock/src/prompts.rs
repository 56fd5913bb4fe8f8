//! The mock's prompt `greet` (required argument `name` → one user message "Hello, <name>!") and argument
//! completion (`completion/complete`): names for `greet`'s `name`, filtered by prefix.

use protocol::payload::ContentBlock;
use protocol::payload::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, GetPromptRequestParams,
    GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage, Role,
};
use protocol::{Error, ErrorCode};
use serde_json::{Map, Value, json};

use super::pagination;

const GREET: &str = "greet";
const NAMES: [&str; 3] = ["Alice", "Bob", "Carol"];

/// The mock's prompts.
#[derive(Debug)]
pub(crate) struct PromptSet {
    prompts: Vec<Prompt>,
}

impl Default for PromptSet {
    fn default() -> Self {
        PromptSet {
            prompts: vec![Prompt {
                name: GREET.to_owned(),
                description: Some("Greets someone by name.".to_owned()),
                arguments: Some(vec![PromptArgument {
                    name: "name".to_owned(),
                    description: Some("Who to greet.".to_owned()),
                    required: Some(true),
                    ..PromptArgument::default()
                }]),
                ..Prompt::default()
            }],
        }
    }
}

impl PromptSet {
    /// Whether a prompt of that name exists.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.prompts.iter().any(|p| p.name == name)
    }

    /// One page of `prompts/list`.
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<ListPromptsResult, Error> {
        let (page, next_cursor) = pagination::page("prompts/list", &self.prompts, cursor)?;
        Ok(ListPromptsResult {
            prompts: page.to_vec(),
            next_cursor,
            ..ListPromptsResult::default()
        })
    }

    /// `prompts/get`: unknown prompts and missing or non-string arguments are invalid params.
    pub(crate) fn get(&self, params: &GetPromptRequestParams) -> Result<GetPromptResult, Error> {
        if !self.has(&params.name) {
            return Err(invalid(format!("unknown prompt: {}", params.name))
                .with_data(json!({ "name": params.name })));
        }
        let name = match argument(params.arguments.as_ref(), "name") {
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err(invalid(
                    "invalid params: argument \"name\" must be a string",
                ));
            }
            None => {
                return Err(invalid(
                    "invalid params: prompt greet needs the argument \"name\"",
                ));
            }
        };
        Ok(GetPromptResult {
            description: Some("A greeting.".to_owned()),
            messages: vec![PromptMessage {
                role: Role::User,
                content: ContentBlock::text(format!("Hello, {name}!")),
                extra: Map::new(),
            }],
            ..GetPromptResult::default()
        })
    }

    /// `completion/complete`: `greet`'s `name` completes to the names that start with the value (ignoring
    /// ASCII case); other arguments of known references complete to nothing; unknown references are
    /// invalid params.
    pub(crate) fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult, Error> {
        let values: Vec<String> = match &params.reference {
            CompletionReference::Prompt(p) if self.has(&p.name) => {
                if p.name == GREET && params.argument.name == "name" {
                    let prefix = params.argument.value.to_ascii_lowercase();
                    NAMES
                        .iter()
                        .filter(|n| n.to_ascii_lowercase().starts_with(&prefix))
                        .map(|n| (*n).to_owned())
                        .collect()
                } else {
                    Vec::new()
                }
            }
            CompletionReference::Prompt(p) => {
                return Err(invalid(format!("unknown prompt: {}", p.name))
                    .with_data(json!({ "name": p.name })));
            }
            CompletionReference::Resource(r) if r.uri.ends_with("/items/{id}") => Vec::new(),
            CompletionReference::Resource(r) => {
                return Err(invalid(format!("unknown resource template: {}", r.uri))
                    .with_data(json!({ "uri": r.uri })));
            }
            CompletionReference::Unknown(_) => {
                return Err(invalid(format!(
                    "invalid params: unknown completion reference type {:?}",
                    params.reference.kind()
                )));
            }
        };
        Ok(CompleteResult {
            completion: Completion {
                total: Some(values.len().into()),
                has_more: Some(false),
                values,
                ..Completion::default()
            },
            ..CompleteResult::default()
        })
    }
}

fn argument<'a>(args: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a Value> {
    args?.get(key).filter(|v| !v.is_null())
}

fn invalid(msg: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorCode::InvalidParams, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greet_answers_or_refuses() {
        let set = PromptSet::default();
        // (params, expected text; None = invalid params)
        let table = [
            (
                json!({"name": "greet", "arguments": {"name": "Ada"}}),
                Some("Hello, Ada!"),
            ),
            (json!({"name": "greet", "arguments": {}}), None),
            (json!({"name": "greet"}), None),
            (json!({"name": "greet", "arguments": {"name": 3}}), None),
            (json!({"name": "nope", "arguments": {"name": "x"}}), None),
        ];
        for (params, want) in table {
            let p: GetPromptRequestParams = serde_json::from_value(params.clone()).unwrap();
            match (set.get(&p), want) {
                (Ok(r), Some(text)) => assert_eq!(r.messages[0].content.as_text(), Some(text)),
                (Err(e), None) => assert_eq!(e.code(), ErrorCode::InvalidParams, "{params}"),
                (got, want) => panic!("{params}: got {got:?}, want {want:?}"),
            }
        }
        assert_eq!(set.list(None).unwrap().prompts.len(), 1);
    }

    #[test]
    fn completion_filters_by_prefix() {
        let set = PromptSet::default();
        // (reference, argument name, value, expected values; None = invalid params)
        let table: [(Value, &str, &str, Option<&[&str]>); 7] = [
            (
                json!({"type": "ref/prompt", "name": "greet"}),
                "name",
                "",
                Some(&["Alice", "Bob", "Carol"]),
            ),
            (
                json!({"type": "ref/prompt", "name": "greet"}),
                "name",
                "a",
                Some(&["Alice"]),
            ),
            (
                json!({"type": "ref/prompt", "name": "greet"}),
                "name",
                "Car",
                Some(&["Carol"]),
            ),
            (
                json!({"type": "ref/prompt", "name": "greet"}),
                "name",
                "z",
                Some(&[]),
            ),
            (
                json!({"type": "ref/resource", "uri": "mock://items/{id}"}),
                "id",
                "1",
                Some(&[]),
            ),
            (
                json!({"type": "ref/prompt", "name": "nope"}),
                "name",
                "",
                None,
            ),
            (
                json!({"type": "ref/resource", "uri": "mock://x/{y}"}),
                "y",
                "",
                None,
            ),
        ];
        for (reference, arg, value, want) in table {
            let p: CompleteRequestParams = serde_json::from_value(
                json!({"ref": reference, "argument": {"name": arg, "value": value}}),
            )
            .unwrap();
            match (set.complete(&p), want) {
                (Ok(r), Some(want)) => {
                    assert_eq!(r.completion.values, want, "{reference} {value}");
                    assert_eq!(r.completion.has_more, Some(false));
                }
                (Err(e), None) => assert_eq!(e.code(), ErrorCode::InvalidParams),
                (got, want) => panic!("{reference}: got {got:?}, want {want:?}"),
            }
        }
    }
}
