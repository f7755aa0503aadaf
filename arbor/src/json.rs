//! JSON as the front ends read and write it: a value written pretty (what
//! every `--json` prints), and a JSON object parsed from text (what
//! `--extra-body` takes). `Serialize`, `Map` and `Value` are serde's,
//! re-exported so a front end names the types the options hold.

use std::io::{self, Write};

pub use serde::Serialize;
pub use serde_json::{Map, Value};

/// `value` as pretty JSON and a newline.
pub fn write_pretty<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::from)?;
    writeln!(out)
}

/// A JSON object from text; what else the text held is said.
pub fn object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "expected a JSON object ({{...}}), got {}",
            kind_of(&other)
        )),
        Err(e) => Err(format!("expected a JSON object, got invalid JSON: {e}")),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
