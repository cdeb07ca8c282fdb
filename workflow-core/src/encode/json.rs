//! JSON text from outside (a model's reply, a person's edit, a stored
//! record) parsed strictly: never deeper than [`MAX_PAYLOAD_DEPTH`] (checked
//! before anything recurses), and never with a key twice in one object
//! (serde_json keeps the last one silently).

use std::cell::RefCell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::spec::{MAX_PAYLOAD_DEPTH, PayloadError};

/// `text` as a JSON value: refused when it nests deeper than
/// [`MAX_PAYLOAD_DEPTH`], repeats a key in one object, or is not JSON.
pub(crate) fn parse_json(text: &str) -> Result<Value, PayloadError> {
    check_depth(text)?;
    let refused = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict(&refused)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    value.map_err(|e| {
        refused
            .into_inner()
            .unwrap_or_else(|| PayloadError::Invalid(e.to_string()))
    })
}

/// `text` as a `T`, parsed by [`parse_json`] first.
pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, PayloadError> {
    serde_json::from_value(parse_json(text)?).map_err(|e| PayloadError::Invalid(e.to_string()))
}

/// Refuses a value built in code that nests deeper than the limit,
/// without recursing.
pub(crate) fn check_value_depth(value: &Value) -> Result<(), PayloadError> {
    let mut stack = vec![(value, 0u32)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let depth = depth + 1;
        if depth > MAX_PAYLOAD_DEPTH {
            return Err(PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH,
            });
        }
        stack.extend(children.map(|child| (child, depth)));
    }
    Ok(())
}

/// Refuses JSON text whose arrays and objects nest deeper than the limit,
/// without recursing (brackets inside strings do not count; text that is
/// not JSON is left to the parser to name).
fn check_depth(text: &str) -> Result<(), PayloadError> {
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_PAYLOAD_DEPTH {
                    return Err(PayloadError::TooDeep {
                        limit: MAX_PAYLOAD_DEPTH,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Builds a [`Value`] as serde_json does, refusing a repeated key (the
/// refusal is kept aside: serde_json's error only carries a message).
#[derive(Clone, Copy)]
struct Strict<'a>(&'a RefCell<Option<PayloadError>>);

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a non-finite number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                let error = de::Error::custom(format!("duplicate key `{key}`"));
                *self.0.borrow_mut() = Some(PayloadError::DuplicateKey { key });
                return Err(error);
            }
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
