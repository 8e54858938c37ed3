//! Span and event fields as text: `name=value` pairs for region messages and
//! error messages, and a compact JSON object for `data_json`.

use std::fmt::{self, Write as _};

use tracing_core::field::{Field, Visit};

/// A span's fields as `name=value` pairs separated by spaces (`Debug` values
/// as `{:?}`, strings as they are), in the order they were recorded.
#[derive(Debug, Default)]
pub(crate) struct SpanFields(pub String);

impl Visit for SpanFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.pair(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.pair(field, format_args!("{value:?}"));
    }
}

impl SpanFields {
    fn pair(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() != "message" {
            let _ = write!(self.0, "{}=", field.name());
        }
        let _ = self.0.write_fmt(value);
    }
}

/// An event's `message` and its other fields, both as `name=value` text and
/// as a JSON object.
#[derive(Debug, Default)]
pub(crate) struct EventFields {
    pub message: Option<String>,
    /// The other fields as `name=value` pairs separated by spaces.
    pub pairs: String,
    /// The other fields as the members of a JSON object, without the braces.
    pub json: String,
    /// How many fields besides `message`.
    pub count: usize,
    /// The only field's name and value as text, while there is one.
    pub single: Option<(&'static str, String)>,
}

impl EventFields {
    fn field(&mut self, field: &Field, text: &str, json: JsonValue<'_>) {
        if field.name() == "message" {
            self.message = Some(text.to_owned());
            return;
        }
        if !self.pairs.is_empty() {
            self.pairs.push(' ');
            self.json.push(',');
        }
        let _ = write!(self.pairs, "{}={}", field.name(), text);
        json_string(&mut self.json, field.name());
        self.json.push(':');
        match json {
            JsonValue::Literal(l) => self.json.push_str(l),
            JsonValue::String(s) => json_string(&mut self.json, s),
        }
        self.count += 1;
        self.single = (self.count == 1).then(|| (field.name(), text.to_owned()));
    }

    /// The fields as one JSON object.
    pub(crate) fn json_object(&self) -> String {
        format!("{{{}}}", self.json)
    }
}

/// Counts an event's fields besides `message`, formatting nothing: an event
/// with any is a `data` event (see the layer's `on_event`).
#[derive(Debug, Default)]
pub(crate) struct OtherFields(pub usize);

impl Visit for OtherFields {
    fn record_debug(&mut self, field: &Field, _value: &dyn fmt::Debug) {
        if field.name() != "message" {
            self.0 += 1;
        }
    }
}

enum JsonValue<'a> {
    /// A number or a boolean, written as it is.
    Literal(&'a str),
    String(&'a str),
}

impl Visit for EventFields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let text = value.to_string();
        if value.is_finite() {
            self.field(field, &text, JsonValue::Literal(&text));
        } else {
            self.field(field, &text, JsonValue::String(&text));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        let text = value.to_string();
        self.field(field, &text, JsonValue::Literal(&text));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let text = value.to_string();
        self.field(field, &text, JsonValue::Literal(&text));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        let text = if value { "true" } else { "false" };
        self.field(field, text, JsonValue::Literal(text));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(field, value, JsonValue::String(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        self.field(field, &text, JsonValue::String(&text));
    }
}

/// Appends `s` as a JSON string (quotes, backslashes and control characters
/// escaped).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_escape_what_json_requires() {
        let mut out = String::new();
        json_string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001é""#);
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed, "a\"b\\c\nd\u{1}é");
    }
}
