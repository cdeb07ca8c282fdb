//! The published schemas use only the formats JSON Schema draft 2020-12
//! defines. schemars marks Rust's number types with formats of its own
//! (`uint32`, `int64`, `double`, ...) which strict consumers refuse: Ajv in
//! its default strict mode does not compile a schema with an unknown
//! format. Those formats are dropped here, and the range an integer format
//! stood for is kept as `minimum` / `maximum` (standard keywords every
//! validator checks) where it fits a JSON number exactly.

use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;

/// The formats draft 2020-12 defines (its "Vocabularies for Semantic
/// Content With format"): the only ones a published schema carries.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Whether `format` is one draft 2020-12 defines.
pub fn is_standard_format(format: &str) -> bool {
    STANDARD_FORMATS.contains(&format)
}

/// The inclusive range of a schemars integer format, when it is exactly a
/// JSON number (64- and 128-bit bounds are not: beyond 2^53 a JSON reader
/// may round them, so those keep only their sign bound, `minimum: 0`).
fn integer_range(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// The schemars transform that drops non-standard formats (recursively),
/// keeping an integer format's range as `minimum` / `maximum`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(fields) = schema.as_object_mut()
            && let Some(Value::String(format)) = fields.get("format")
            && !is_standard_format(format)
        {
            let range = integer_range(format);
            fields.remove("format");
            if let Some((min, max)) = range {
                // A narrower bound the type already declares is kept.
                fields.entry("minimum").or_insert(min.into());
                fields.entry("maximum").or_insert(max.into());
            }
        }
        transform_subschemas(self, schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)] // only its schema is used
    #[derive(schemars::JsonSchema)]
    struct Numbers {
        small: u8,
        count: u32,
        delta: i16,
        big: u64,
        size: usize,
        ratio: f64,
        maybe: Option<u32>,
        list: Vec<i32>,
        when: String,
    }

    #[test]
    fn non_standard_formats_are_dropped_and_their_ranges_kept() {
        let schema = crate::spec::root_schema::<Numbers>();
        let text = schema.to_string();
        assert!(!text.contains("\"format\""), "{text}");
        let p = &schema["properties"];
        assert_eq!(p["small"]["minimum"], 0);
        assert_eq!(p["small"]["maximum"], 255);
        assert_eq!(p["count"]["maximum"], u32::MAX);
        assert_eq!(p["delta"]["minimum"], i16::MIN);
        assert_eq!(p["big"]["minimum"], 0);
        assert!(
            p["big"].get("maximum").is_none(),
            "not exact as a JSON number"
        );
        assert_eq!(p["size"]["minimum"], 0);
        assert_eq!(p["maybe"]["maximum"], u32::MAX);
        assert_eq!(p["list"]["items"]["maximum"], i32::MAX);
    }

    #[test]
    fn standard_formats_are_kept() {
        let mut schema = schemars::json_schema!({
            "type": "object",
            "properties": {
                "at": { "type": "string", "format": "date-time" },
                "n": { "type": "integer", "format": "uint64" }
            }
        });
        StandardFormats.transform(&mut schema);
        assert_eq!(schema.as_value()["properties"]["at"]["format"], "date-time");
        assert!(schema.as_value()["properties"]["n"].get("format").is_none());
    }
}
