//! Local references (`$ref: "#/components/..."`): a JSON pointer into the document, `~0`/`~1` and
//! percent-escapes undone. It must not follow anything outside the document: an external reference (another
//! file, a URL) or an anchor is refused with the reference named.

use percent_encoding::percent_decode_str;
use serde_json::Value;

/// Why one operation cannot be translated: said in [`crate::Refused::why`].
pub(crate) type Refusal = String;

/// The value a local reference points at.
pub(crate) fn target<'d>(root: &'d Value, reference: &str) -> Result<&'d Value, Refusal> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(format!(
            "external reference `{reference}` (only local `#/...` references are resolved)"
        ));
    };
    let pointer = percent_decode_str(fragment)
        .decode_utf8()
        .map_err(|_| format!("reference `{reference}` is not UTF-8"))?;
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(format!(
            "reference `{reference}` is not a JSON pointer (anchors are not resolved)"
        ));
    }
    root.pointer(&pointer)
        .ok_or_else(|| format!("reference `{reference}` points at nothing in the document"))
}

/// A parameter, request body, response or path item, its `$ref`s followed (a reference to a reference too).
pub(crate) fn component<'d>(root: &'d Value, value: &'d Value) -> Result<&'d Value, Refusal> {
    let mut chain: Vec<&str> = Vec::new();
    let mut current = value;
    while let Some(reference) = current.get("$ref").and_then(Value::as_str) {
        if chain.contains(&reference) {
            chain.push(reference);
            return Err(format!("reference cycle {}", chain.join(" -> ")));
        }
        chain.push(reference);
        current = target(root, reference)?;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_resolve_locally_or_are_refused() {
        let root = json!({
            "components": {"schemas": {"a/b": {"type": "string"}, "m~n": {"type": "integer"}, "sp ace": {}},
                           "parameters": {"p": {"$ref": "#/components/parameters/q"}, "q": {"name": "q"},
                                          "loop": {"$ref": "#/components/parameters/loop"}}}
        });
        let cases = [
            ("#/components/schemas/a~1b", Ok(json!({"type": "string"}))),
            ("#/components/schemas/m~0n", Ok(json!({"type": "integer"}))),
            ("#/components/schemas/sp%20ace", Ok(json!({}))),
            ("#/components/schemas/none", Err("points at nothing")),
            (
                "other.yaml#/components/schemas/a",
                Err("external reference"),
            ),
            ("https://example.com/x.json", Err("external reference")),
            ("#anchor", Err("not a JSON pointer")),
        ];
        for (reference, expected) in cases {
            match (target(&root, reference), expected) {
                (Ok(found), Ok(want)) => assert_eq!(found, &want, "{reference}"),
                (Err(why), Err(want)) => assert!(why.contains(want), "{reference}: {why}"),
                (got, want) => panic!("{reference}: {got:?} vs {want:?}"),
            }
        }
        let p = json!({"$ref": "#/components/parameters/p"});
        assert_eq!(component(&root, &p), Ok(&json!({"name": "q"})));
        let looping = json!({"$ref": "#/components/parameters/loop"});
        assert_eq!(
            component(&root, &looping),
            Err(
                "reference cycle #/components/parameters/loop -> #/components/parameters/loop"
                    .into()
            )
        );
    }
}
