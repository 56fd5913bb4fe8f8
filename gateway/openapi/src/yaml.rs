//! A YAML document read straight into JSON values, bounded: an alias is a copy of its anchor's node, so a
//! few kilobytes of nested aliases ("billion laughs") would expand to more values than memory holds and
//! abort the process. Every value produced, aliases' copies included, spends one unit of a budget of
//! [`MAX_ALIAS_NODES`] beyond one per byte of the text (a document without aliases holds fewer values
//! than bytes, so only what aliases add is bounded); the document is refused once the budget is spent,
//! before it is built. Keys that YAML reads as numbers, booleans or null (`200:`) become their text, and a
//! tag (`!custom value`) is dropped for its value.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess,
};
use serde_json::{Map, Number, Value};

/// How many values aliases may add to a YAML document beyond one per byte of its text.
pub const MAX_ALIAS_NODES: usize = 1_000_000;

/// Why a YAML document could not be read.
#[derive(Debug)]
pub(crate) enum YamlError {
    /// It expands to more values than its budget.
    TooLarge(usize),
    /// Anything else the parser says.
    Invalid(String),
}

/// The document as JSON, or why not.
pub(crate) fn parse(text: &str) -> Result<Value, YamlError> {
    let budget = text.len().saturating_add(MAX_ALIAS_NODES);
    let left = Cell::new(budget);
    let exhausted = Cell::new(false);
    let seed = Node {
        left: &left,
        exhausted: &exhausted,
    };
    match seed.deserialize(serde_norway::Deserializer::from_str(text)) {
        Ok(value) => Ok(value),
        Err(_) if exhausted.get() => Err(YamlError::TooLarge(budget)),
        Err(e) => Err(YamlError::Invalid(e.to_string())),
    }
}

/// One node, as a JSON value, paid for from the document's budget.
#[derive(Clone, Copy)]
struct Node<'b> {
    left: &'b Cell<usize>,
    exhausted: &'b Cell<bool>,
}

impl Node<'_> {
    fn spend<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.exhausted.set(true);
                Err(E::custom("the document expands to too many values"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::from(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::from(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        self.spend()?;
        Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("the number {n} has no JSON form")))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut list = Vec::new();
        while let Some(value) = seq.next_element_seed(self)? {
            list.push(value);
        }
        Ok(Value::Array(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(self)? {
            let key = match key {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_owned(),
                Value::Array(_) | Value::Object(_) => {
                    return Err(de::Error::custom("a mapping key is not a scalar"));
                }
            };
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        // A tagged node (`!tag value`): the tag is dropped, the value kept.
        let (_tag, variant): (String, _) = data.variant()?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_becomes_json_with_scalar_keys_as_text_and_tags_dropped() {
        let text = "a: 1\n200: {x: [true, null, 1.5, -2]}\ntrue: !custom tagged\n~: s\nbase: &b [1, 2]\ncopy: *b\n";
        let value = parse(text).unwrap();
        assert_eq!(
            value,
            json!({"a": 1, "200": {"x": [true, null, 1.5, -2]}, "true": "tagged", "null": "s",
                   "base": [1, 2], "copy": [1, 2]})
        );
        assert!(matches!(parse("[a, b"), Err(YamlError::Invalid(_))));
        assert!(
            matches!(parse("? [a]\n: b\n"), Err(YamlError::Invalid(e)) if e.contains("not a scalar"))
        );
        assert!(
            matches!(parse("x: .nan\n"), Err(YamlError::Invalid(e)) if e.contains("no JSON form"))
        );
    }
}
