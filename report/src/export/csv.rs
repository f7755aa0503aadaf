//! `arbor export --csv FILE`: one flat row per request, every field of its
//! record ([`Record::fields`]) under a header row.
//!
//! RFC 4180, rows ending in `\n`: comma-separated, a cell quoted when it
//! holds a comma, a quote, a line break or leading/trailing spaces, quotes
//! doubled inside. An absent value is an empty cell; numbers are written as
//! in `records.jsonl`. A text cell that a spreadsheet would read as a
//! formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return:
//! OWASP's rule for CSV injection) is written with a `'` before it, so an
//! error message a server chose is shown as text, never run.

use std::io::{self, Write};

use serde_json::Value;

use super::records::Record;

/// Writes the header row: the names of the fields.
pub fn write_header(out: &mut dyn Write) -> io::Result<()> {
    // The names are the same for every record.
    let names = Record::default().fields();
    write_cells(out, names.into_iter().map(|(n, _)| n.to_string()))
}

/// Writes the row of one record.
pub fn write_row(out: &mut dyn Write, record: &Record) -> io::Result<()> {
    write_cells(out, record.fields().into_iter().map(|(_, v)| cell(v)))
}

fn cell(value: Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => inert(s),
        other => other.to_string(),
    }
}

fn write_cells(out: &mut dyn Write, cells: impl Iterator<Item = String>) -> io::Result<()> {
    for (i, c) in cells.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(quoted(&c).as_bytes())?;
    }
    out.write_all(b"\n")
}

/// A text cell a spreadsheet will not read as a formula: one starting with
/// `=`, `+`, `-`, `@`, a tab or a carriage return gets a `'` before it.
/// Numbers are not text cells (a negative number stays a number).
fn inert(text: String) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text
    }
}

/// A cell as CSV: quoted when it must be.
fn quoted(cell: &str) -> String {
    let needs =
        cell.contains([',', '"', '\n', '\r']) || cell.starts_with(' ') || cell.ends_with(' ');
    if needs {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_by_hand() {
        assert_eq!(quoted("plain"), "plain");
        assert_eq!(quoted(""), "");
        assert_eq!(quoted("a,b"), "\"a,b\"");
        assert_eq!(quoted("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quoted("two\nlines"), "\"two\nlines\"");
        assert_eq!(quoted(" padded"), "\" padded\"");
    }

    #[test]
    fn a_text_a_spreadsheet_would_run_is_written_as_text() {
        let link = r#"=HYPERLINK("http://evil.example","click")"#;
        assert_eq!(cell(Value::String(link.into())), format!("'{link}"));
        for text in ["+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            assert!(cell(Value::String(text.into())).starts_with('\''), "{text}");
        }
        assert_eq!(cell(Value::String("HTTP 500: x=1".into())), "HTTP 500: x=1");
        // A negative number is a number, not a formula.
        assert_eq!(cell(serde_json::json!(-0.5)), "-0.5");
        // And the quoting still applies to the escaped cell.
        let mut out = Vec::new();
        write_cells(&mut out, [cell(Value::String("=a,b".into()))].into_iter()).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "\"'=a,b\"\n");
    }

    #[test]
    fn the_header_names_every_field() {
        let mut out = Vec::new();
        write_header(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("request,tree,tree_index,agent,turn,"));
        assert!(text.contains(",itl_count,itl_mean_s,itl_p99_s,"));
    }
}
