//! Loaders: from files to trees.
//!
//! Owns format detection (by content; `--format` overrides) and reading,
//! both loops over one table, [`FORMATS`]: one row per format with its
//! detector and its reader. Every reader reads through the one JSON reader
//! (`json.rs`), so bad input is reported as an [`InputError`] naming the
//! file, the place (line, JSON path) and what was expected, in the same
//! words for every format; none may panic on any input. Readers also say
//! which conventions they detected and what they had to estimate or adjust
//! (`Loaded::conventions`, `Loaded::problems`, counted with `tally.rs`),
//! for `arbor inspect`.
//!
//! Shared by every reader: `source.rs` (an input opened once: a regular
//! file by path, or stdin `-`, a pipe or a FIFO read once; the input and
//! line caps), `json.rs` (line reader, parser, error wording, the caps
//! enforced), `fields.rs` (field types: counts, times, hash ids, messages;
//! the token estimate), `sniff.rs` (the file prefix detectors see, key
//! checks, zstd and gzip) and `tally.rs` (problem counts). A reader uses only those, its own
//! sibling (agentic Mooncake uses Mooncake's row checks) and
//! [`crate::input`]; only this module knows every reader, so no module
//! here uses one that uses it. What readers produce ([`Loaded`],
//! [`Problem`], [`Format`]) lives in [`crate::input`], so that consumers
//! such as `inspect` need not depend on `load`.
//!
//! # Adding a format
//!
//! 1. Name it: a variant of [`Format`] with its `--format` name
//!    (`crate::input`).
//! 2. Write `load/<format>.rs` with `looks_like(text_prefix: &str) -> bool`
//!    and `load(input: impl Into<Source>) -> Result<Loaded, InputError>`
//!    (a `&Path` is a `Source`): a serde struct
//!    of the record built from `fields.rs` types, read with
//!    [`json::Lines`] (or [`json::parse`] for a whole-file form), problems
//!    counted with `tally.rs`.
//! 3. Add its row to [`FORMATS`], where detection should try it.
//! 4. Add a bad-input corpus under `testdata/bad/<format>/` (the CLI sweep
//!    and the same-fault-same-words test read it) and a page under
//!    `docs/formats/`.

pub mod abench;
pub mod agentic_mooncake;
pub mod aiperf_graph;
pub mod arbor;
#[cfg(test)]
mod bad_corpus;
pub mod dynamo;
mod fields;
mod json;
pub mod lmcache;
pub mod mooncake;
pub mod openai_log;
pub mod otel_genai;
pub mod sample;
pub mod sniff;
mod source;
mod tally;
#[cfg(test)]
mod test_support;
mod tools;
pub mod tracelab;
pub mod weka;

use std::path::{Path, PathBuf};

use arbor_engine::error::InputError;
use arbor_engine::model::Workload;

pub use crate::files::{directory_files, trace_files};
pub use crate::input::{Format, Loaded, Problem};
pub use fields::estimate_tokens;
pub use sniff::{Codec, Prefix, GZIP_MAGIC, SNIFF_BYTES, ZSTD_MAGIC};
pub use source::{show_bytes, Source, MAX_INPUT_BYTES, MAX_LINE_BYTES, STDIN};

/// One format: how it is recognised and read.
pub struct Reader {
    pub format: Format,
    /// Does this file start look like the format?
    pub looks_like: fn(&Prefix) -> bool,
    /// Reads one input (a directory is read file by file).
    pub read: fn(Source) -> Result<Loaded, InputError>,
}

/// Every format, in the order detection tries them: the first whose
/// detector accepts the file's prefix is used. Weka accepts anything, last:
/// its reader gives the precise error when a file is not Weka either.
pub const FORMATS: [Reader; 11] = [
    Reader {
        format: Format::Arbor,
        looks_like: |p| arbor::looks_like_arbor(&p.text),
        read: arbor::load,
    },
    Reader {
        format: Format::Dynamo,
        looks_like: |p| dynamo::looks_like(&p.text),
        read: dynamo::load,
    },
    Reader {
        format: Format::AgenticMooncake,
        looks_like: |p| agentic_mooncake::looks_like(&p.text),
        read: agentic_mooncake::load,
    },
    Reader {
        format: Format::Mooncake,
        looks_like: |p| mooncake::looks_like(&p.text),
        read: mooncake::load,
    },
    Reader {
        format: Format::Abench,
        // A compressed start that does not decode: abench's reader names
        // the corruption (abench was the one compressed format).
        looks_like: |p| {
            (p.compressed.is_some() && p.text.trim().is_empty()) || abench::looks_like(&p.text)
        },
        read: abench::load,
    },
    Reader {
        format: Format::OpenaiLog,
        looks_like: |p| openai_log::looks_like(&p.text),
        read: openai_log::load,
    },
    Reader {
        format: Format::Lmcache,
        looks_like: |p| lmcache::looks_like(&p.text),
        read: lmcache::load,
    },
    Reader {
        format: Format::Tracelab,
        looks_like: |p| tracelab::looks_like(&p.text),
        read: tracelab::load,
    },
    Reader {
        format: Format::OtelGenai,
        looks_like: |p| otel_genai::looks_like(&p.text),
        read: otel_genai::load,
    },
    Reader {
        format: Format::AiperfGraph,
        looks_like: |p| aiperf_graph::looks_like(&p.text),
        read: aiperf_graph::load,
    },
    Reader {
        format: Format::Weka,
        looks_like: |_| true,
        read: weka::load,
    },
];

/// The row of `format`.
fn reader(format: Format) -> &'static Reader {
    let mut rows = FORMATS.iter();
    // Every format has a row (tested); Weka's is the last resort.
    rows.find(|r| r.format == format)
        .unwrap_or(&FORMATS[FORMATS.len() - 1])
}

/// Whether `path` names a directory (never stdin's `-`).
fn is_directory(path: &Path) -> bool {
    path != Path::new(STDIN) && std::fs::metadata(path).is_ok_and(|m| m.is_dir())
}

/// Recognises a file's format by its content; a directory by its first
/// trace file. A stream (stdin, a FIFO) is consumed: use [`load_path`] to
/// read one.
pub fn detect(path: &Path) -> Result<Format, InputError> {
    if is_directory(path) {
        let files = directory_files(path)?;
        return match files.first() {
            Some(first) => detect(first),
            None => Err(InputError::whole(
                path.display().to_string(),
                "no trace files in this directory",
            )),
        };
    }
    detect_source(&Source::open(path)?)
}

/// Recognises an opened input's format by its first bytes.
pub fn detect_source(source: &Source) -> Result<Format, InputError> {
    let prefix = source.prefix()?;
    if prefix.compressed.is_none() && prefix.text.trim().is_empty() {
        // Nothing to recognise: name every format rather than guess one.
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        return Err(InputError::whole(
            source.name(),
            format!(
                "empty file: expected a trace in one of the formats arbor reads ({}; see docs/formats.md)",
                names.join(", ")
            ),
        ));
    }
    Ok(detect_prefix(&prefix))
}

/// The first format in [`FORMATS`] whose detector accepts `prefix`.
pub fn detect_prefix(prefix: &Prefix) -> Format {
    let row = FORMATS.iter().find(|r| (r.looks_like)(prefix));
    row.map_or(Format::Weka, |r| r.format)
}

/// Reads one file or directory (every trace file in it, in name order), in
/// `format` or the detected one. `-` is stdin; stdin, a pipe or a FIFO is
/// read once (its start detected from the same stream).
pub fn load_path(path: &Path, format: Option<Format>) -> Result<Loaded, InputError> {
    let (format, mut loaded) = if is_directory(path) {
        let format = match format {
            Some(f) => f,
            None => detect(path)?,
        };
        let read = reader(format).read;
        let mut all = Loaded::default();
        for file in directory_files(path)? {
            let one = read(Source::open(&file)?)?;
            all.trees.extend(one.trees);
            for c in one.conventions {
                if !all.conventions.contains(&c) {
                    all.conventions.push(c);
                }
            }
            all.problems.extend(one.problems);
        }
        (format, all)
    } else {
        let source = Source::open(path)?;
        let format = match format {
            Some(f) => f,
            None => detect_source(&source)?,
        };
        let name = source.name().to_string();
        let mut one = (reader(format).read)(source)?;
        one.path = name;
        (format, one)
    };
    if loaded.path.is_empty() {
        loaded.path = path.display().to_string();
    }
    loaded.format = Some(format);
    Ok(loaded)
}

/// Reads every input path, in order. Stdin (`-`) may be given once.
pub fn load_all(paths: &[PathBuf], format: Option<Format>) -> Result<Vec<Loaded>, InputError> {
    let stdin = paths.iter().filter(|p| *p == Path::new(STDIN)).count();
    if stdin > 1 {
        return Err(InputError::whole(
            STDIN,
            format!("given {stdin} times: expected stdin (`-`) at most once among the inputs"),
        ));
    }
    paths.iter().map(|p| load_path(p, format)).collect()
}

/// Reads every input path into one workload, trees in the order of the
/// paths given, then the order within each path.
pub fn load_paths(paths: &[PathBuf]) -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for loaded in load_all(paths, None)? {
        workload.trees.extend(loaded.trees);
    }
    Ok(workload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_row() {
        for format in Format::ALL {
            let rows = FORMATS.iter().filter(|r| r.format == format).count();
            assert_eq!(rows, 1, "{format}");
            assert_eq!(reader(format).format, format);
        }
        assert_eq!(FORMATS.len(), Format::ALL.len());
    }

    #[test]
    fn each_format_is_detected_by_its_first_line() {
        let cases = [
            (
                Format::Weka,
                r#"{"id": "t", "block_size": 64, "requests": [{"t": 0, "in": 5, "out": 1}]}"#,
            ),
            (
                Format::Mooncake,
                r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            ),
            (
                Format::AgenticMooncake,
                r#"{"request_id": "r1", "session_id": "s", "timestamp": 0, "input_length": 5, "output_length": 1}"#,
            ),
            (
                Format::Abench,
                r#"{"session_id": "s", "system_prompt": "x", "turns": []}"#,
            ),
            (
                Format::Lmcache,
                r#"{"timestamp": 1760587801647311, "input": "x", "output": "", "session_id": "22ff"}"#,
            ),
            (
                Format::OpenaiLog,
                r#"{"start": 1.5, "session_id": "s", "request": {"messages": []}}"#,
            ),
            (Format::Arbor, r#"{"arbor": 1, "id": "t1", "agents": []}"#),
            (
                Format::Tracelab,
                r#"{"provider": "claude", "project": "p", "session_id": "claude:s", "round_index": 0, "input_tokens_total": 5, "prefix_tokens": 0, "newly_append_tokens": 5, "output_tokens": 1, "timing_events": [{"event_type": "user_message", "timestamp": "2026-06-01T05:40:20.151Z"}]}"#,
            ),
            (
                Format::OtelGenai,
                r#"{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "attributes": [{"key": "input_length", "value": {"intValue": "5"}}]}]}]}]}"#,
            ),
            (
                Format::AiperfGraph,
                r#"{"session_id": "s", "turns": [{"messages": [{"role": "user", "content": "x"}]}]}"#,
            ),
        ];
        for (format, line) in cases {
            let prefix = Prefix::of(line.as_bytes());
            assert_eq!(detect_prefix(&prefix), format, "{line}");
            // No other format (but the Weka fallback) claims it.
            let claimed: Vec<Format> = FORMATS
                .iter()
                .filter(|r| r.format != Format::Weka && (r.looks_like)(&prefix))
                .map(|r| r.format)
                .collect();
            assert!(claimed.len() <= 1, "{line}: {claimed:?}");
        }
        let zstd = Prefix::of(&[0x28, 0xB5, 0x2F, 0xFD, 0, 1]);
        assert_eq!(detect_prefix(&zstd), Format::Abench);
    }
}
